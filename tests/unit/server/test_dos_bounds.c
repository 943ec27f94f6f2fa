/* Abuse bounds that need no socket: max_connections under the descriptor
 * limit, the activation deadline of sessions and the per-channel quota of
 * unactivated sessions (driven in memory, the clock is the test's; the
 * per-address quota needs a peer address: tests/integration/test_dos.c). */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/resource.h>

#include "dispatch.h"

Test(connection_limit, stays_below_the_descriptor_limit)
{
    /* 4 per loop and 64 for the server itself are kept aside. */
    cr_assert_eq(uas_server_connection_limit(10000, 1024, 2), 1024 - 8 - 64);
    cr_assert_eq(uas_server_connection_limit(10000, 1024, 16), 1024 - 64 - 64);
    cr_assert_eq(uas_server_connection_limit(10000, 1u << 20, 4), 10000);
    cr_assert_eq(uas_server_connection_limit(500, 1024, 1), 500);
    cr_assert_eq(uas_server_connection_limit(10000, 50, 1), 1, "never 0");
    cr_assert_eq(uas_server_connection_limit(10000, 0, 1), 1);
}

#ifndef UAS_SINGLE_LOOP /* two loops */
Test(connection_limit, server_derives_it_from_rlimit_nofile)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = 300;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0); /* this test's process only */
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 2;
    cfg.log_level = UAS_LOG_ERROR;
    uas_status st;
    uas_server *s = uas_server_new(&cfg, &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    cr_assert_eq(s->cfg.max_connections, 300 - 8 - 64);
    uas_server_delete(s);
}
#endif

static uas_server *srv;
static uint8_t mem[65536];
static uas_arena arena;

static void setup(void)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1;
    cfg.min_session_timeout_ms = 10000;
    cfg.max_session_timeout_ms = 3600000;
    cfg.session_activation_timeout_ms = 15000;
    cfg.max_unactivated_per_channel = 3;
    cfg.log_level = UAS_LOG_ERROR;
#ifdef UAS_MINIMAL
    cfg.max_sessions = 10000; /* the general default, not the profile's 8 */
#endif
    uas_status st;
    srv = uas_server_new(&cfg, &st);
    cr_assert_not_null(srv, "server: %s", uas_status_name(st));
    uas_arena_init(&arena, mem, sizeof(mem), 0);
}

static void teardown(void)
{
    uas_arena_free(&arena);
    uas_server_delete(srv);
}

static uas_request_ctx ctx_on(uint32_t channel, int64_t now_ms)
{
    uas_request_ctx c;
    memset(&c, 0, sizeof(c));
    c.server = srv;
    c.arena = &arena;
    c.channel_id = channel;
    c.now_ms = now_ms;
    c.now = uas_datetime_now();
    return c;
}

static uas_create_session_response create(uint32_t channel, int64_t now)
{
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.requested_session_timeout = 3600000;
    uas_create_session_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(channel, now);
    uas_svc_create_session(&c, &req, &resp);
    return resp;
}

static uas_status activate(const uas_nodeid *token, uint32_t channel, int64_t now)
{
    uas_session *se = uas_sessions_find(srv->sessions, token);
    if (!se)
        return UAS_BAD_SESSION_ID_INVALID;
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    uas_activate_session_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(channel, now);
    c.session = se;
    uas_svc_activate_session(&c, &req, &resp);
    /* What dispatch does after every request of a session. */
    if (se->activated)
        uas_sessions_activated(srv->sessions, se);
    uas_session_unref(srv, se);
    return resp.response_header.service_result;
}

static bool exists(const uas_nodeid *token)
{
    uas_session *se = uas_sessions_find(srv->sessions, token);
    if (se)
        uas_session_unref(srv, se);
    return se != NULL;
}

TestSuite(dos_sessions, .init = setup, .fini = teardown);

Test(dos_sessions, unactivated_session_ends_at_the_activation_deadline)
{
    uas_create_session_response idle = create(1, 1000);
    uas_create_session_response used = create(2, 1000);
    cr_assert_eq(idle.response_header.service_result, UAS_GOOD);
    cr_assert_eq(activate(&used.authentication_token, 2, 2000), UAS_GOOD);
    uas_sessions_expire(srv->sessions, srv, 1000 + 15000);
    cr_assert(exists(&idle.authentication_token), "not before the deadline");
    uas_sessions_expire(srv->sessions, srv, 1000 + 15001);
    cr_assert_not(exists(&idle.authentication_token), "an hour was asked, 15 s apply");
    cr_assert(exists(&used.authentication_token), "an activated session keeps its timeout");
    cr_assert_eq(srv->counters.session_timeouts, 1);
}

Test(dos_sessions, channel_quota_counts_unactivated_sessions_only)
{
    uas_create_session_response r[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq((r[i] = create(7, 0)).response_header.service_result, UAS_GOOD);
    cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, 7), 3);
    cr_assert_eq(create(7, 0).response_header.service_result, UAS_BAD_TOO_MANY_SESSIONS);
    cr_assert_eq(srv->counters.rejected_sessions, 1);
    cr_assert_eq(create(8, 0).response_header.service_result, UAS_GOOD, "another channel");
    /* Activation, closing and expiry give the places back. */
    cr_assert_eq(activate(&r[0].authentication_token, 7, 0), UAS_GOOD);
    cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, 7), 2);
    uas_session *se = uas_sessions_find(srv->sessions, &r[1].authentication_token);
    uas_sessions_remove(srv->sessions, se);
    uas_session_unref(srv, se);
    cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, 7), 1);
    cr_assert_eq(create(7, 0).response_header.service_result, UAS_GOOD);
    cr_assert_eq(create(7, 0).response_header.service_result, UAS_GOOD);
    cr_assert_eq(create(7, 0).response_header.service_result, UAS_BAD_TOO_MANY_SESSIONS);
    uas_sessions_expire(srv->sessions, srv, 15001);
    cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, 7), 0);
    cr_assert_eq(uas_sessions_count(srv->sessions), 1, "the activated one");
    cr_assert_eq(create(7, 15001).response_header.service_result, UAS_GOOD);
}

Test(dos_sessions, quota_map_survives_many_channels)
{
    /* Sessions of many channels come and go: the counts stay exact
     * through the map's deletions. */
    for (uint32_t round = 0; round < 3; round++) {
        for (uint32_t ch = 1; ch <= 60; ch++)
            cr_assert_eq(create(ch * 977u, round * 20000).response_header.service_result, UAS_GOOD);
        for (uint32_t ch = 1; ch <= 60; ch++)
            cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, ch * 977u), 1);
        uas_sessions_expire(srv->sessions, srv, round * 20000 + 15001);
        for (uint32_t ch = 1; ch <= 60; ch++)
            cr_assert_eq(uas_sessions_unactivated_on_channel(srv->sessions, ch * 977u), 0);
    }
}
