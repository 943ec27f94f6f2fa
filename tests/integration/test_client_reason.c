#define _GNU_SOURCE
/* Whose verdict closed a secured connection: the server refusing our
 * certificate (its ERR) or our own check of the server's certificate.
 * uacli's hint depends on it: the fix is in the other side's store or in
 * ours. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helper_env.h"

#define B256 "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"

typedef struct world {
    env e;
    char dir[64];
    char server_pki[128];
    char client_pki[128];
} world;

static void configure(uas_server_config *cfg, void *ud)
{
    world *w = ud;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = w->server_pki;
    cfg->auto_accept = false; /* the client's certificate is not trusted */
}

static uas_status refuse(void *ud, const uint8_t *der, size_t len)
{
    (void)ud, (void)der, (void)len;
    return UAS_BAD_CERTIFICATE_UNTRUSTED;
}

static uas_client *secured_client(world *w, uas_bytestring *server_cert, bool judge_ourselves)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = w->e.url;
    cfg.create_session = true;
    cfg.security.policy_uri = B256;
    cfg.security.mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    cfg.security.pki_dir = w->client_pki;
    cfg.security.server_cert = server_cert->data;
    cfg.security.server_cert_len = server_cert->length;
    if (judge_ourselves)
        cfg.security.validate_server = refuse;
    else
        cfg.security.accept_any_server_cert = true;
    uas_client *c = uas_client_new(w->e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    return c;
}

static uas_status run(uas_client *c)
{
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    return st != UAS_GOOD ? st : uas_client_get_reason(c);
}

Test(client_reason, server_refusing_our_certificate_is_the_servers_verdict)
{
    world w;
    memset(&w, 0, sizeof(w));
    snprintf(w.dir, sizeof(w.dir), "/tmp/uas-creason-XXXXXX");
    cr_assert(mkdtemp(w.dir));
    snprintf(w.server_pki, sizeof(w.server_pki), "%s/server-pki", w.dir);
    snprintf(w.client_pki, sizeof(w.client_pki), "%s/client-pki", w.dir);
    env_options o = {.configure = configure, .configure_ud = &w};
    env_start(&w.e, &o);
    uas_bytestring server_cert = {0, NULL};
    cr_assert_eq(uas_client_select_endpoint(w.e.loop, w.e.url, B256,
                                            UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, ENV_WAIT_MS,
                                            &server_cert, NULL),
                 UAS_GOOD);

    uas_client *c = secured_client(&w, &server_cert, false);
    uas_status st = run(c);
    cr_expect(uas_is_bad(st), "%s", uas_status_name(st));
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_CLOSED);
    cr_expect(uas_client_reason_from_server(c), "the server's ERR closed it (%s)",
              uas_status_name(st));
    uas_client_delete(c);

    c = secured_client(&w, &server_cert, true);
    st = run(c);
    cr_expect_eq(st, UAS_BAD_CERTIFICATE_UNTRUSTED, "%s", uas_status_name(st));
    cr_expect_not(uas_client_reason_from_server(c), "our own check refused the server");
    uas_client_delete(c);

    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    env_stop(&w.e);
    cr_expect(env_rmtree(w.dir));
}
