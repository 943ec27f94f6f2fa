#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
