#define _GNU_SOURCE
/* libuaclient with security against an in-process libuaserver over real
 * sockets on 127.0.0.1: endpoint selection, every RSA policy in Sign and
 * SignAndEncrypt with a session (CreateSession/ActivateSession signatures)
 * and a Read, the client's own certificate made in its PKI store, the
 * server certificate judged by a callback or the store's trust list, and
 * the configurations that must be refused. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/pki.h>

#include "helper_env.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"

typedef struct senv {
    env e;
    char dir[64]; /* temporary folder: server-pki/, client-pki/ */
    char server_pki[128];
    char client_pki[128];
    uas_bytestring server_cert; /* from the Basic256Sha256 endpoint */
} senv;

static void senv_start(senv *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/uas-csec-XXXXXX");
    cr_assert(mkdtemp(s->dir));
    snprintf(s->server_pki, sizeof(s->server_pki), "%s/server-pki", s->dir);
    snprintf(s->client_pki, sizeof(s->client_pki), "%s/client-pki", s->dir);
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.bind_address = "127.0.0.1";
    cfg.hostname = "127.0.0.1";
    cfg.port = 0;
    cfg.threads = 1;
    cfg.log_level = UAS_LOG_ERROR;
    cfg.security = UAS_SECURITY_ALL;
    cfg.pki_dir = s->server_pki;
    cfg.auto_accept = true; /* the client's self-made certificate */
    uas_status st = UAS_GOOD;
    s->e.server = uas_server_new(&cfg, &st);
    cr_assert(s->e.server, "uas_server_new: %s", uas_status_name(st));
    cr_assert_eq(uas_server_add_namespace(s->e.server, "urn:uastack:server"), 1);
    /* One contract variable, ns=1;i=1001 = 0. */
    uas_nodeid id = uas_nodeid_numeric(1, 1001);
    uas_nodeid parent = uas_nodeid_numeric(0, 85);
    uas_nodeid organizes = uas_nodeid_numeric(0, 35);
    uas_qualifiedname bn = {1, uas_string_from("SecureValue")};
    uas_nodeid type = uas_nodeid_numeric(0, 63);
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    int32_t v = 4711;
    uas_variant_set_scalar(&a.value, &v, UAS_TYPE(INT32));
    a.data_type = uas_nodeid_numeric(0, 6);
    a.value_rank = -1;
    a.access_level = a.user_access_level = 0x03;
    a.display_name.text = uas_string_from("SecureValue");
    st = uas_server_add_variable(s->e.server, &id, &parent, &organizes, &bn, &type, &a);
    cr_assert_eq(st, UAS_GOOD, "%s", uas_status_name(st));
    st = uas_server_start(s->e.server);
    cr_assert_eq(st, UAS_GOOD, "uas_server_start: %s", uas_status_name(st));
    s->e.port = uas_server_port(s->e.server);
    snprintf(s->e.url, sizeof(s->e.url), "opc.tcp://127.0.0.1:%u", s->e.port);
    s->e.loop = uas_loop_new(16u << 20);
    cr_assert(s->e.loop);
    uint8_t level = 0;
    st = uas_client_select_endpoint(s->e.loop, s->e.url, POLICY "Basic256Sha256",
                                    UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, ENV_WAIT_MS,
                                    &s->server_cert, &level);
    cr_assert_eq(st, UAS_GOOD, "select_endpoint: %s", uas_status_name(st));
    cr_assert_gt(s->server_cert.length, 0);
}

static void senv_stop(senv *s)
{
    uas_clear(&s->server_cert, UAS_TYPE(BYTE_STRING));
    uas_server_stop(s->e.server);
    uas_server_delete(s->e.server);
    for (int i = 0; i < 8; i++)
        uas_loop_run_once(s->e.loop, false);
    uas_loop_delete(s->e.loop);
    cr_expect(env_rmtree(s->dir));
}

/* Accepts exactly the certificate of the endpoint (pinning). */
static uas_status pin(void *ud, const uint8_t *der, size_t len)
{
    const uas_bytestring *want = ud;
    return len == want->length && memcmp(der, want->data, len) == 0 ? UAS_GOOD
                                                                    : UAS_BAD_CERTIFICATE_UNTRUSTED;
}

static uas_status refuse(void *ud, const uint8_t *der, size_t len)
{
    (void)ud, (void)der, (void)len;
    return UAS_BAD_CERTIFICATE_UNTRUSTED;
}

static void secure_config(senv *s, uas_client_config *cfg, const char *policy, int32_t mode)
{
    uas_client_config_default(cfg);
    cfg->endpoint_url = s->e.url;
    cfg->request_timeout_ms = ENV_WAIT_MS;
    cfg->security.policy_uri = policy;
    cfg->security.mode = mode;
    cfg->security.pki_dir = s->client_pki;
    cfg->security.server_cert = s->server_cert.data;
    cfg->security.server_cert_len = s->server_cert.length;
    cfg->security.validate_server = pin;
    cfg->security.validate_ud = &s->server_cert;
}

static uas_client *connect_ok(senv *s, const uas_client_config *cfg)
{
    uas_client *c = uas_client_new(s->e.loop, cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "connect %s/%d: %s", cfg->security.policy_uri, cfg->security.mode,
                 uas_status_name(st));
    return c;
}

Test(client_secure, every_policy_and_mode_reads_with_a_session, .timeout = 60)
{
    senv s;
    senv_start(&s);
    static const char *const policies[] = {POLICY "Basic256Sha256", POLICY "Aes128_Sha256_RsaOaep",
                                           POLICY "Aes256_Sha256_RsaPss"};
    static const int32_t modes[] = {UAS_MESSAGE_SECURITY_MODE_SIGN,
                                    UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT};
    for (size_t p = 0; p < 3; p++) {
        for (size_t m = 0; m < 2; m++) {
            uas_client_config cfg;
            secure_config(&s, &cfg, policies[p], modes[m]);
            uas_client *c = connect_ok(&s, &cfg);
            cr_expect_eq(env_read_i32(c, 1001), 4711);
            env_client_close(c);
        }
    }
    /* The client made its own certificate once and kept it. */
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(s.client_pki, NULL, &store), UAS_GOOD);
    uas_pki_cert_info *items = NULL;
    size_t n = 0;
    cr_assert_eq(uas_pki_list(store, UAS_PKI_OWN, &items, &n), UAS_GOOD);
    cr_expect_eq(n, 1);
    if (n)
        cr_expect_str_eq(items[0].application_uri, "urn:uastack:client");
    uas_pki_list_free(items, n);
    uas_pki_store_close(store);
    senv_stop(&s);
}

Test(client_secure, trust_list_of_the_client_store, .timeout = 60)
{
    senv s;
    senv_start(&s);
    uas_client_config cfg;
    secure_config(&s, &cfg, POLICY "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
    cfg.security.validate_server = NULL; /* the store judges */
    cfg.security.validate_ud = NULL;
    /* Not trusted yet: refused before anything is sent, and rejected. */
    uas_client *c = uas_client_new(s.e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    cr_expect_eq(st, UAS_BAD_CERTIFICATE_UNTRUSTED, "%s", uas_status_name(st));
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_CLOSED);
    uas_client_delete(c);
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(s.client_pki, NULL, &store), UAS_GOOD);
    uas_pki_cert_info *items = NULL;
    size_t n = 0;
    cr_assert_eq(uas_pki_list(store, UAS_PKI_REJECTED, &items, &n), UAS_GOOD);
    cr_expect_eq(n, 1);
    uas_pki_list_free(items, n);
    /* Trusted: connects. */
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, s.server_cert.data, s.server_cert.length),
                 UAS_GOOD);
    uas_pki_store_close(store);
    c = connect_ok(&s, &cfg);
    cr_expect_eq(env_read_i32(c, 1001), 4711);
    env_client_close(c);
    senv_stop(&s);
}

Test(client_secure, refused_and_invalid_configurations, .timeout = 60)
{
    senv s;
    senv_start(&s);
    uas_client_config cfg;
    /* The validator says no: nothing is sent, the client is closed. */
    secure_config(&s, &cfg, POLICY "Aes256_Sha256_RsaPss", UAS_MESSAGE_SECURITY_MODE_SIGN);
    cfg.security.validate_server = refuse;
    uas_client *c = uas_client_new(s.e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_expect_eq(uas_client_connect(c), UAS_BAD_CERTIFICATE_UNTRUSTED);
    cr_expect_eq(uas_client_get_reason(c), UAS_BAD_CERTIFICATE_UNTRUSTED);
    uas_client_delete(c);
    /* No way to judge the server: invalid unless accepted explicitly. */
    secure_config(&s, &cfg, POLICY "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN);
    cfg.security.validate_server = NULL;
    cfg.security.pki_dir = NULL;
    cr_expect_null(uas_client_new(s.e.loop, &cfg, NULL, NULL));
    /* Secured without the server's certificate, or with an unknown
     * policy or mode: invalid. */
    secure_config(&s, &cfg, POLICY "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN);
    cfg.security.server_cert = NULL;
    cr_expect_null(uas_client_new(s.e.loop, &cfg, NULL, NULL));
    secure_config(&s, &cfg, POLICY "Basic512", UAS_MESSAGE_SECURITY_MODE_SIGN);
    cr_expect_null(uas_client_new(s.e.loop, &cfg, NULL, NULL));
    secure_config(&s, &cfg, POLICY "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_NONE);
    cr_expect_null(uas_client_new(s.e.loop, &cfg, NULL, NULL));
    /* A policy the server does not offer. */
    uas_bytestring none = {0, NULL};
    cr_expect_eq(uas_client_select_endpoint(s.e.loop, s.e.url, POLICY "Basic256",
                                            UAS_MESSAGE_SECURITY_MODE_SIGN, ENV_WAIT_MS, &none,
                                            NULL),
                 UAS_BAD_SECURITY_POLICY_REJECTED);
    cr_expect_null(none.data);
    /* Accept-any (lab): connects. */
    secure_config(&s, &cfg, POLICY "Aes128_Sha256_RsaOaep",
                  UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
    cfg.security.validate_server = NULL;
    cfg.security.pki_dir = NULL;
    cfg.security.accept_any_server_cert = true;
    /* ... with credentials given as buffers: the store's pair. */
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(s.client_pki, NULL, &store), UAS_GOOD);
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = "urn:uastack:client";
    p.file_name = "buffers";
    uas_bytestring bc = {0, NULL}, bk = {0, NULL};
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &bc, &bk), UAS_GOOD);
    uas_pki_store_close(store);
    cfg.security.cert = bc.data;
    cfg.security.cert_len = bc.length;
    cfg.security.key = bk.data;
    cfg.security.key_len = bk.length;
    c = connect_ok(&s, &cfg);
    uas_pki_bytes_free(&bc);
    uas_pki_bytes_free(&bk);
    cr_expect_eq(env_read_i32(c, 1001), 4711);
    env_client_close(c);
    senv_stop(&s);
}
