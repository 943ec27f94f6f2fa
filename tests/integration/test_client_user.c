#define _GNU_SOURCE
/* A UserName login over a None channel from the client library: the
 * password is encrypted for the certificate the server sends with its
 * endpoint, with no certificate configured by the application (uacli
 * --user without --security). The warning says that nothing authenticates
 * that certificate on a None channel. */
#include <criterion/criterion.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "helper_env.h"

#define PASSWORD "pw1-for-bob"

typedef struct world {
    env e;
    char dir[64];
    char pki[128];
    char users[128];
} world;

static void configure(uas_server_config *cfg, void *ud)
{
    world *w = ud;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = w->pki;
    cfg->users_file = w->users;
    cfg->log_level = UAS_LOG_INFO;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void world_start_with(world *w, bool users)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "/tmp/uas-cuser-XXXXXX");
    cr_assert(mkdtemp(w->dir));
    snprintf(w->pki, sizeof(w->pki), "%s/pki", w->dir);
    snprintf(w->users, sizeof(w->users), "%s/users", w->dir);
    bool added = false;
    if (users)
        cr_assert_eq(uas_user_add(w->users, "bob", PASSWORD, strlen(PASSWORD), NULL, &added),
                     UAS_GOOD);
    env_log_capture();
    env_options o = {.configure = configure, .configure_ud = w};
    env_start(&w->e, &o);
}

static void world_start(world *w)
{
    world_start_with(w, true);
}

static void world_stop(world *w)
{
    env_stop(&w->e);
    cr_expect_eq(nftw(w->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
    env_log_release();
}

/* A None-channel client logging in as bob; returns the state it reached. */
static uas_status login(world *w, const char *password, uas_client **out)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = w->e.url;
    cfg.create_session = true;
    cfg.user.kind = UAS_CLIENT_USER_NAME;
    cfg.user.name = "bob";
    cfg.user.password = password;
    cfg.user.password_len = strlen(password);
    uas_client *c = uas_client_new(w->e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    *out = c;
    return uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
}

Test(client_user, password_over_none_uses_the_endpoint_certificate)
{
    world w;
    world_start(&w);
    uas_client *c;
    uas_status st = login(&w, PASSWORD, &c);
    cr_expect_eq(st, UAS_GOOD, "login: %s", uas_status_name(st));
    cr_expect(env_log_has("encrypted for the certificate the server sent over an unsecured"));
    cr_expect_not(env_log_has(PASSWORD));
    if (st == UAS_GOOD) {
        uas_arena arena;
        uas_arena_init(&arena, NULL, 0, 0);
        uas_nodeid id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
        uas_datavalue dv;
        cr_expect_eq(env_read(c, &id, 13, &dv, &arena), UAS_GOOD);
        uas_arena_free(&arena);
        env_client_close(c);
    } else {
        uas_client_delete(c);
    }
    world_stop(&w);
}

Test(client_user, wrong_password_over_none_is_refused)
{
    world w;
    world_start(&w);
    uas_client *c;
    uas_status st = login(&w, "not-the-password", &c);
    cr_expect_eq(st, UAS_BAD_USER_ACCESS_DENIED, "login: %s", uas_status_name(st));
    cr_expect_not(env_log_has("not-the-password"));
    uas_client_delete(c);
    world_stop(&w);
}

/* Whether any endpoint advertises a user name token policy now. */
static bool offers_user_name(world *w)
{
    uas_client *c = env_client(&w->e, false, 0);
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(w->e.url);
    uas_get_endpoints_response resp;
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), &resp,
                                         UAS_TYPE(GET_ENDPOINTS_RESPONSE), &arena, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "GetEndpoints: %s", uas_status_name(st));
    bool found = false;
    for (size_t i = 0; i < resp.endpoints_count; i++)
        for (size_t k = 0; k < resp.endpoints[i].user_identity_tokens_count; k++)
            found = found || resp.endpoints[i].user_identity_tokens[k].token_type ==
                                 UAS_USER_TOKEN_TYPE_USER_NAME;
    uas_arena_free(&arena);
    env_client_close(c);
    return found;
}

/* The first `uapki user add` after start: the server reads the new file,
 * advertises user names and accepts the login (it needed a restart). */
Test(client_user, users_file_made_after_start_is_read)
{
    world w;
    world_start_with(&w, false);
    cr_expect_not(offers_user_name(&w));
    bool added = false;
    cr_assert_eq(uas_user_add(w.users, "bob", PASSWORD, strlen(PASSWORD), NULL, &added), UAS_GOOD);
    cr_expect(offers_user_name(&w));
    uas_client *c;
    uas_status st = login(&w, PASSWORD, &c);
    cr_expect_eq(st, UAS_GOOD, "login: %s", uas_status_name(st));
    if (st == UAS_GOOD)
        env_client_close(c);
    else
        uas_client_delete(c);
    world_stop(&w);
}
