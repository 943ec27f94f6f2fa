#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>
#include <ua/pki.h>
#include <ua/security.h>

#include "helper_sec.h"

/* Secured sessions need the PKI: nothing here without encryption (the
 * suites that use it are not built then). */
#ifdef UAS_ENABLE_ENCRYPTION

#define B256 "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"

static void configure(uas_server_config *cfg, void *ud)
{
    env_sec *s = ud;
    cfg->security = "None, Basic256Sha256:Sign, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = s->server_pki;
    cfg->users_file = s->users;
    cfg->auto_accept = true;       /* the client's self-made certificate */
    cfg->log_level = UAS_LOG_INFO; /* refusals are logged at info */
    if (s->configure)
        s->configure(cfg, s);
}

void env_sec_start(env_sec *s, const char *tag, env_sec_configure_fn fn, void *ud)
{
    memset(s, 0, sizeof(*s));
    s->configure = fn;
    s->ud = ud;
    snprintf(s->dir, sizeof(s->dir), "/tmp/uas-%s-XXXXXX", tag);
    cr_assert(mkdtemp(s->dir));
    snprintf(s->server_pki, sizeof(s->server_pki), "%s/server-pki", s->dir);
    snprintf(s->client_pki, sizeof(s->client_pki), "%s/client-pki", s->dir);
    snprintf(s->users, sizeof(s->users), "%s/users", s->dir);
    bool added = false;
    cr_assert_eq(uas_user_add(s->users, "alice", ENV_PASSWORD, strlen(ENV_PASSWORD), NULL, &added),
                 UAS_GOOD);
    env_log_capture();
    env_options o = {.configure = configure, .configure_ud = s};
    env_start(&s->e, &o);
    uas_status st = uas_client_select_endpoint(s->e.loop, s->e.url, B256,
                                               UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                                               ENV_WAIT_MS, &s->server_cert, NULL);
    cr_assert_eq(st, UAS_GOOD, "select_endpoint: %s", uas_status_name(st));
    env_make_cert(s->client_pki, "client", ENV_CLIENT_URI, &s->cert, &s->key);
    uas_arena_init(&s->arena, NULL, 0, 0);
}

void env_sec_stop(env_sec *s)
{
    env_stop(&s->e);
    uas_clear(&s->server_cert, UAS_TYPE(BYTE_STRING));
    uas_pki_bytes_free(&s->cert);
    uas_pki_bytes_free(&s->key);
    uas_arena_free(&s->arena);
    cr_expect(env_rmtree(s->dir), "%s not removed", s->dir);
    env_log_release();
}

void env_pki_dirs(env_pki *s, const char *tag)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/uas-%s-XXXXXX", tag);
    cr_assert(mkdtemp(s->dir));
    snprintf(s->server_pki, sizeof(s->server_pki), "%s/server-pki", s->dir);
    snprintf(s->client_pki, sizeof(s->client_pki), "%s/client-pki", s->dir);
    snprintf(s->users, sizeof(s->users), "%s/users", s->dir);
}

void env_pki_serve(env_pki *s, uas_server_config *cfg)
{
    cfg->bind_address = "127.0.0.1";
    cfg->hostname = "127.0.0.1";
    cfg->port = 0;
    cfg->threads = 1;
    cfg->pki_dir = s->server_pki;
    uas_status st = UAS_GOOD;
    s->e.server = uas_server_new(cfg, &st);
    cr_assert(s->e.server, "uas_server_new: %s", uas_status_name(st));
    st = uas_server_start(s->e.server);
    cr_assert_eq(st, UAS_GOOD, "uas_server_start: %s", uas_status_name(st));
    s->e.port = uas_server_port(s->e.server);
    snprintf(s->e.url, sizeof(s->e.url), "opc.tcp://127.0.0.1:%u", s->e.port);
    s->e.loop = uas_loop_new(16u << 20);
    cr_assert(s->e.loop);
}

void env_pki_stop(env_pki *s)
{
    uas_server_stop(s->e.server);
    uas_server_delete(s->e.server);
    for (int i = 0; i < 8; i++)
        uas_loop_run_once(s->e.loop, false);
    uas_loop_delete(s->e.loop);
    cr_expect(env_rmtree(s->dir), "%s not removed", s->dir);
}

static uas_status pin(void *ud, const uint8_t *der, size_t len)
{
    const uas_bytestring *want = ud;
    return len == want->length && memcmp(der, want->data, len) == 0 ? UAS_GOOD
                                                                    : UAS_BAD_CERTIFICATE_UNTRUSTED;
}

uas_status env_conn_login(env_pki *s, env_conn *k, const char *policy, int32_t mode,
                          const uas_client_user *user)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->uri, sizeof(k->uri), "http://opcfoundation.org/UA/SecurityPolicy#%s", policy);
    uint8_t level = 0;
    cr_assert_eq(uas_client_select_endpoint(s->e.loop, s->e.url, k->uri, mode, ENV_WAIT_MS,
                                            &k->cert, &level),
                 UAS_GOOD, "select_endpoint %s", policy);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = s->e.url;
    cfg.request_timeout_ms = ENV_WAIT_MS;
    cfg.security.policy_uri = k->uri;
    cfg.security.mode = mode;
    cfg.security.pki_dir = s->client_pki;
    cfg.security.server_cert = k->cert.data;
    cfg.security.server_cert_len = k->cert.length;
    cfg.security.validate_server = pin;
    cfg.security.validate_ud = &k->cert;
    if (user)
        cfg.user = *user;
    k->c = uas_client_new(s->e.loop, &cfg, NULL, NULL);
    cr_assert(k->c, "client for %s", policy);
    uas_status st = uas_client_connect(k->c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(k->c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    return st;
}

void env_conn_close(env_conn *k)
{
    if (k->c)
        env_client_close(k->c);
    uas_clear(&k->cert, UAS_TYPE(BYTE_STRING));
}

void env_expect_running(uas_client *c)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid state = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    uas_datavalue dv;
    uas_status st = env_read(c, &state, 13, &dv, &a);
    cr_expect_eq(st, UAS_GOOD, "read: %s", uas_status_name(st));
    cr_expect(dv.has_value && dv.value.data &&
              *(int32_t *)dv.value.data == UAS_SERVER_STATE_RUNNING);
    uas_arena_free(&a);
}

#endif
