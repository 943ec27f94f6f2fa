#define _GNU_SOURCE
/* Issue 12's evidence "sessions that are never activated", as a flood over
 * real sockets: 40 connections of one address ask for 8 sessions each and
 * never activate one. The address gets max_unactivated_per_address of
 * them, the rest BadTooManySessions; memory stays bounded; a second,
 * normal client keeps being served (and makes a session of its own) while
 * the flood holds its places; the abandoned sessions end at the
 * activation deadline. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <ua/membudget.h>

#include "helper_env.h"
#include "server_internal.h"

enum { CONNECTIONS = 40, PER_CONNECTION = 8, PER_ADDRESS = 64, DEADLINE_MS = 2000 };

static void flood_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_unactivated_per_channel = PER_CONNECTION;
    cfg->max_unactivated_per_address = PER_ADDRESS;
    cfg->session_activation_timeout_ms = DEADLINE_MS;
    cfg->log_level = UAS_LOG_ERROR;
}

static uas_client *client_from(env *e, const char *source, bool session)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = session;
    cfg.conn.source_address = source;
    uas_client *c = uas_client_new(e->loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    uas_status st = uas_client_wait_state(
        c, session ? UAS_CLIENT_SESSION_ACTIVE : UAS_CLIENT_CHANNEL_OPEN, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "connect from %s: %s", source, uas_status_name(st));
    return c;
}

/* A hand-made CreateSession on c's channel, never activated. */
static uas_status create_session(uas_client *c)
{
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.client_description.application_uri = uas_string_from("urn:uastack:test:flood");
    req.client_description.application_type = UAS_APPLICATION_TYPE_CLIENT;
    req.session_name = uas_string_from("never activated");
    req.requested_session_timeout = 3600000;
    req.request_header.authentication_token = uas_nodeid_numeric(0, 1);
    uas_create_session_response resp;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_SESSION_REQUEST), &resp,
                                         UAS_TYPE(CREATE_SESSION_RESPONSE), &a, ENV_WAIT_MS);
    uas_arena_free(&a);
    return st;
}

Test(unactivated, a_flood_of_sessions_never_activated_stays_bounded, .timeout = 90)
{
    env e;
    env_options o = {.threads = 2, .configure = flood_config};
    env_start(&e, &o);
    uas_client *normal = client_from(&e, "127.0.0.2", true);
    size_t rss0 = uas_process_rss();

    uas_client *flood[CONNECTIONS];
    unsigned created = 0, refused = 0;
    for (int i = 0; i < CONNECTIONS; i++) {
        flood[i] = client_from(&e, "127.0.0.1", false);
        for (int k = 0; k < PER_CONNECTION; k++) {
            uas_status st = create_session(flood[i]);
            if (st == UAS_GOOD)
                created++;
            else if (st == UAS_BAD_TOO_MANY_SESSIONS)
                refused++;
            else
                cr_assert_fail("CreateSession: %s", uas_status_name(st));
        }
        if (i % 10 == 0)
            cr_expect_eq(env_read_i32(normal, 1001), 0, "the normal client is served");
    }
    cr_expect_eq(created, PER_ADDRESS, "sessions created: %u", created);
    cr_expect_eq(refused, CONNECTIONS * PER_CONNECTION - PER_ADDRESS);
    cr_expect_eq(uas_sessions_unactivated_from(e.server->sessions, "127.0.0.1"), PER_ADDRESS);
    size_t rss1 = uas_process_rss();
    cr_expect_lt(rss1 - rss0, 16u << 20, "RSS grew from %zu to %zu MiB", rss0 >> 20, rss1 >> 20);

    /* Another client makes and activates a session of its own meanwhile. */
    uas_client *second = client_from(&e, "127.0.0.3", true);
    cr_expect_eq(env_read_i32(second, 1001), 0);
    env_client_close(second);

    /* The abandoned sessions end at their deadline, the channels stay. */
    bool never = false;
    for (int i = 0; i < 100 && uas_sessions_unactivated_from(e.server->sessions, "127.0.0.1"); i++)
        env_run_until(&e, &never, 50);
    cr_expect_eq(uas_sessions_unactivated_from(e.server->sessions, "127.0.0.1"), 0);
    cr_expect_eq(uas_sessions_count(e.server->sessions), 1, "the normal client's session only");
    cr_expect_eq(create_session(flood[0]), UAS_GOOD, "the address has room again");
    cr_expect_eq(env_read_i32(normal, 1001), 0);
    for (int i = 0; i < CONNECTIONS; i++)
        uas_client_delete(flood[i]);
    env_client_close(normal);
    env_stop(&e);
}
