/* Security of the load generator's sessions (--security sign|encrypt,
 * --policy): one client certificate made per run in a temporary store and
 * shared by every session, handed to the child as a trusted certificate so
 * no lab-only auto-accept is needed; the server certificate is taken once
 * from GetEndpoints and every session accepts exactly that certificate. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ua/pki.h>
#include <ua/security.h>

#include "loadgen_internal.h"

#define POLICY_PREFIX "http://opcfoundation.org/UA/SecurityPolicy#"

const char *lg_security_name(int level)
{
    return level == LG_SEC_SIGN ? "sign" : level == LG_SEC_ENCRYPT ? "encrypt" : "none";
}

int lg_security_parse(const char *text, int *level)
{
    if (!strcmp(text, "none"))
        *level = LG_SEC_NONE;
    else if (!strcmp(text, "sign"))
        *level = LG_SEC_SIGN;
    else if (!strcmp(text, "encrypt"))
        *level = LG_SEC_ENCRYPT;
    else
        return -1;
    return 0;
}

int lg_policy_check(const char *name)
{
    char uri[160];
    snprintf(uri, sizeof(uri), POLICY_PREFIX "%s", name);
    return strcmp(name, "None") != 0 && uas_security_policy(uri, true) ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

int lg_sec_open(lg_sec *s, const lg_opts *o, int level)
{
    memset(s, 0, sizeof(*s));
    s->level = level;
    if (level == LG_SEC_NONE)
        return 0;
    snprintf(s->policy_uri, sizeof(s->policy_uri), POLICY_PREFIX "%s", o->policy);
    snprintf(s->dir, sizeof(s->dir), "/tmp/uas-selfload-pki-XXXXXX");
    if (!mkdtemp(s->dir)) {
        s->dir[0] = 0;
        fprintf(stderr, "self-load: cannot create a temporary certificate store\n");
        return -1;
    }
#ifdef UAS_ENABLE_ENCRYPTION
    uas_pki_store *store = NULL;
    uas_status st = uas_pki_store_open(s->dir, NULL, &store);
    if (st == UAS_GOOD) {
        /* The client library announces this ApplicationUri in
         * CreateSession, and the server checks the certificate's. */
        uas_pki_create_params p;
        memset(&p, 0, sizeof(p));
        p.application_uri = "urn:uastack:client";
        p.application_name = "uastack self-load";
        p.file_name = "selfload";
        /* An ECC policy needs a certificate of its curve. */
        p.key_type = uas_secpol_cert_type(uas_security_policy(s->policy_uri, true));
        static const char *const dns[] = {"localhost"};
        p.dns_names = dns;
        p.dns_count = 1;
        st = uas_pki_ensure_own(store, &p, uas_datetime_now(), &s->cert, &s->key);
        uas_pki_store_close(store);
    }
#else
    uas_status st = UAS_BAD_NOT_SUPPORTED; /* no certificates without encryption */
#endif
    if (st != UAS_GOOD) {
        fprintf(stderr, "self-load: cannot make the client certificate in %s: %s\n", s->dir,
                uas_status_name(st));
        return -1;
    }
    snprintf(s->cert_path, sizeof(s->cert_path), "%s/own/certs/selfload.der", s->dir);
    snprintf(s->child_security, sizeof(s->child_security), "%s:%s", o->policy,
             level == LG_SEC_SIGN ? "Sign" : "SignAndEncrypt");
    return 0;
}

int lg_sec_child_args(const lg_sec *s, const char **extra, int n)
{
    if (s->level == LG_SEC_NONE)
        return n;
    extra[n++] = "--security";
    extra[n++] = s->child_security;
    extra[n++] = "--trust-certificate";
    extra[n++] = s->cert_path;
    return n;
}

int lg_sec_discover(lg_sec *s, uas_loop *loop, const char *url)
{
    if (s->level == LG_SEC_NONE)
        return 0;
    int32_t mode = s->level == LG_SEC_SIGN ? UAS_MESSAGE_SECURITY_MODE_SIGN
                                           : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    uas_status st =
        uas_client_select_endpoint(loop, url, s->policy_uri, mode, 10000, &s->server_cert, NULL);
    if (st != UAS_GOOD) {
        fprintf(stderr, "self-load: %s offers no %s endpoint (%s): %s\n", url, s->child_security,
                s->policy_uri, uas_status_name(st));
        return -1;
    }
    return 0;
}

/* Exactly the certificate GetEndpoints announced: the load generator
 * measures the server, it does not manage trust. */
static uas_status same_server_cert(void *ud, const uint8_t *der, size_t len)
{
    const lg_sec *s = ud;
    return len == s->server_cert.length && !memcmp(der, s->server_cert.data, len)
               ? UAS_GOOD
               : UAS_BAD_CERTIFICATE_UNTRUSTED;
}

void lg_sec_apply(const lg_sec *s, uas_client_config *cc)
{
    if (s->level == LG_SEC_NONE)
        return;
    cc->security.policy_uri = s->policy_uri;
    cc->security.mode = s->level == LG_SEC_SIGN ? UAS_MESSAGE_SECURITY_MODE_SIGN
                                                : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    cc->security.cert = s->cert.data;
    cc->security.cert_len = s->cert.length;
    cc->security.key = s->key.data;
    cc->security.key_len = s->key.length;
    cc->security.server_cert = s->server_cert.data;
    cc->security.server_cert_len = s->server_cert.length;
    cc->security.validate_server = same_server_cert;
    cc->security.validate_ud = (void *)(uintptr_t)s;
}

void lg_sec_close(lg_sec *s)
{
#ifdef UAS_ENABLE_ENCRYPTION
    uas_pki_bytes_free(&s->cert);
    uas_pki_bytes_free(&s->key);
#endif
    uas_clear(&s->server_cert, UAS_TYPE(BYTE_STRING));
    if (s->dir[0])
        nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    memset(s, 0, sizeof(*s));
}
