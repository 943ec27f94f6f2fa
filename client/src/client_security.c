/* Security settings of the client: its credentials (given, or from a PKI
 * store, made on first use), the server's certificate and how it is
 * judged, the user identity; and the blocking endpoint selection of
 * uas_client_select_endpoint (Part 4, 5.4.4 and 5.5). */
#include <stdio.h>
#include <string.h>

#include <ua/log.h>
#include <ua/mem.h>

#include "client_internal.h"

#define POLICY_NONE    "http://opcfoundation.org/UA/SecurityPolicy#None"
#define CLIENT_APP_URI "urn:uastack:client"

static uas_status copy_bytes(const uint8_t *src, size_t len, uas_bytestring *dst)
{
    memset(dst, 0, sizeof(*dst));
    if (!src || !len)
        return UAS_GOOD;
    uas_bytestring tmp = {len, (uint8_t *)(uintptr_t)src};
    return uas_copy(&tmp, dst, UAS_TYPE(BYTE_STRING));
}

bool uas__security_on(const uas_client *c)
{
    return c->policy && c->cred && uas_security_policy_uri(c->policy) &&
           strcmp(uas_security_policy_uri(c->policy), POLICY_NONE) != 0;
}

/* The validator of a PKI store: Part 4 6.1.3 for a server certificate. */
static uas_status validate_with_pki(void *ud, const uint8_t *der, size_t len)
{
    uas_client *c = ud;
#ifndef UAS_ENABLE_ENCRYPTION
    (void)c, (void)der, (void)len;
    return UAS_BAD_NOT_SUPPORTED; /* no certificates without encryption */
#else
    uas_pki_verdict v;
    uas_status st = uas_pki_validate(c->pki, der, len, NULL, UAS_PKI_USAGE_SERVER, 0, 0,
                                     uas_datetime_now(), &v);
    if (st != UAS_GOOD)
        uas_log(UAS_LOG_WARN, "client", "%s: server certificate %s refused: %s (%s)",
                c->cfg.endpoint_url, v.thumbprint, uas_status_name(st), v.reason);
    return st;
#endif
}

static uas_status load_pki_cred(uas_client *c, const char *dir)
{
#ifndef UAS_ENABLE_ENCRYPTION
    (void)c;
    uas_log(UAS_LOG_ERROR, "client", "PKI store %s: this build has no encryption", dir);
    return UAS_BAD_NOT_SUPPORTED;
#else
    uas_status st = uas_pki_store_open(dir, NULL, &c->pki);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_ERROR, "client", "PKI store %s: %s", dir, uas_status_name(st));
        return st;
    }
    if (c->cfg.security.cert)
        return UAS_GOOD; /* the store is only for the trust list */
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = CLIENT_APP_URI;
    p.application_name = "uastack client";
    p.file_name = "uastack_client";
    /* An ECC policy needs a certificate of its curve: one more own pair
     * per type, uastack_client_<type>. */
    const char *type = uas_secpol_cert_type(c->policy);
    char file[64];
    if (type && strcmp(type, "rsa") != 0) {
        snprintf(file, sizeof(file), "uastack_client_%s", type);
        p.file_name = file;
        p.key_type = type;
    }
    static const char *const dns[] = {"localhost"};
    p.dns_names = dns;
    p.dns_count = 1;
    uas_bytestring cert = {0, NULL}, key = {0, NULL};
    st = uas_pki_ensure_own(c->pki, &p, uas_datetime_now(), &cert, &key);
    if (st == UAS_GOOD)
        st = uas_secpol_cred_new(cert.data, cert.length, key.data, key.length, &c->cred);
    if (st != UAS_GOOD)
        uas_log(UAS_LOG_ERROR, "client", "own certificate in %s: %s", dir, uas_status_name(st));
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    return st;
#endif
}

static uas_status init_user(uas_client *c, const uas_client_user *u)
{
    c->cfg.user.name = NULL;
    c->cfg.user.password = NULL;
    c->cfg.user.cert = c->cfg.user.key = NULL;
    switch (u->kind) {
    case UAS_CLIENT_USER_ANONYMOUS:
        return UAS_GOOD;
    case UAS_CLIENT_USER_NAME: {
        if (!u->name || !u->name[0]) {
            uas_log(UAS_LOG_ERROR, "client", "user name missing");
            return UAS_BAD_INVALID_ARGUMENT;
        }
        size_t n = strlen(u->name) + 1;
        c->user_name = uas_malloc(n);
        c->password = uas_malloc(u->password_len + 1);
        if (!c->user_name || !c->password)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(c->user_name, u->name, n);
        if (u->password_len)
            memcpy(c->password, u->password, u->password_len);
        c->password_len = u->password_len;
        return UAS_GOOD;
    }
    case UAS_CLIENT_USER_X509: {
        if (!u->cert || !u->key) {
            uas_log(UAS_LOG_ERROR, "client", "X509 user needs a certificate and a key");
            return UAS_BAD_INVALID_ARGUMENT;
        }
        uas_status st = copy_bytes(u->cert, u->cert_len, &c->user_cert);
        if (st == UAS_GOOD)
            st = copy_bytes(u->key, u->key_len, &c->user_key);
        return st;
    }
    default:
        return UAS_BAD_INVALID_ARGUMENT;
    }
}

uas_status uas__security_init(uas_client *c, const uas_client_config *cfg)
{
    const uas_client_security *s = &cfg->security;
    uas_channel_config *ch = &c->cfg.conn.channel;
    /* Nothing of the caller's is kept: the copies follow. */
    memset(&c->cfg.security, 0, sizeof(c->cfg.security));
    c->cfg.security.validate_server = s->validate_server;
    c->cfg.security.validate_ud = s->validate_ud;
    c->cfg.security.accept_any_server_cert = s->accept_any_server_cert;
    c->cfg.security.mode = s->mode ? s->mode : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    c->cfg.security.cert = s->cert; /* only as a flag for load_pki_cred */
    uas_status st = init_user(c, &cfg->user);
    if (st != UAS_GOOD)
        return st;
    c->policy = uas_security_policy(s->policy_uri ? s->policy_uri : POLICY_NONE, false);
    if (!c->policy) {
        uas_log(UAS_LOG_ERROR, "client", "unknown security policy %s", s->policy_uri);
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    ch->cred = NULL;
    ch->policy = c->policy;
    ch->mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    ch->server_cert = NULL;
    ch->server_cert_len = 0;
    ch->validate_peer = NULL;
    ch->validate_ud = NULL;
    if (strcmp(uas_security_policy_uri(c->policy), POLICY_NONE) == 0) {
        c->cfg.security.cert = NULL;
        return UAS_GOOD;
    }
    int32_t mode = c->cfg.security.mode;
    if (mode != UAS_MESSAGE_SECURITY_MODE_SIGN &&
        mode != UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT) {
        uas_log(UAS_LOG_ERROR, "client", "security mode must be Sign or SignAndEncrypt");
        return UAS_BAD_SECURITY_MODE_REJECTED;
    }
    if (!s->server_cert || !s->server_cert_len) {
        uas_log(UAS_LOG_ERROR, "client", "a secured connection needs the server's certificate");
        return UAS_BAD_CERTIFICATE_INVALID;
    }
    if (!s->validate_server && !s->pki_dir && !s->accept_any_server_cert) {
        uas_log(UAS_LOG_ERROR, "client",
                "a secured connection needs a way to judge the server's certificate "
                "(validate_server, pki_dir, or accept_any_server_cert for a lab)");
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    if (s->cert) {
        st = uas_secpol_cred_new(s->cert, s->cert_len, s->key, s->key_len, &c->cred);
        if (st != UAS_GOOD) {
            uas_log(UAS_LOG_ERROR, "client", "client certificate/key: %s", uas_status_name(st));
            return st;
        }
    }
    if (s->pki_dir && (st = load_pki_cred(c, s->pki_dir)) != UAS_GOOD)
        return st;
    c->cfg.security.cert = NULL;
    if (!c->cred) {
        uas_log(UAS_LOG_ERROR, "client", "a secured connection needs a client certificate");
        return UAS_BAD_CERTIFICATE_INVALID;
    }
    st = copy_bytes(s->server_cert, s->server_cert_len, &c->server_cert);
    if (st != UAS_GOOD)
        return st;
    ch->cred = c->cred;
    ch->mode = mode;
    ch->server_cert = c->server_cert.data;
    ch->server_cert_len = c->server_cert.length;
    if (s->validate_server) {
        ch->validate_peer = s->validate_server;
        ch->validate_ud = s->validate_ud;
    } else if (c->pki && !s->accept_any_server_cert) {
        ch->validate_peer = validate_with_pki;
        ch->validate_ud = c;
    }
    return UAS_GOOD;
}

void uas__security_free(uas_client *c)
{
    if (c->cred)
        uas_secpol_cred_unref(c->cred);
    c->cred = NULL;
#ifdef UAS_ENABLE_ENCRYPTION
    if (c->pki)
        uas_pki_store_close(c->pki);
#endif
    c->pki = NULL;
    uas_clear(&c->server_cert, UAS_TYPE(BYTE_STRING));
    uas_clear(&c->user_cert, UAS_TYPE(BYTE_STRING));
    if (c->user_key.data)
        uas_wipe(c->user_key.data, c->user_key.length);
    uas_clear(&c->user_key, UAS_TYPE(BYTE_STRING));
    if (c->user_name)
        uas_free(c->user_name, strlen(c->user_name) + 1);
    c->user_name = NULL;
    if (c->password) {
        uas_wipe(c->password, c->password_len + 1);
        uas_free(c->password, c->password_len + 1);
    }
    c->password = NULL;
    c->password_len = 0;
}

uas_status uas__security_check_server(uas_client *c)
{
    if (!uas__security_on(c))
        return UAS_GOOD;
    const uas_channel_config *ch = &c->cfg.conn.channel;
    if (!ch->validate_peer) {
        uas_log(UAS_LOG_WARN, "client",
                "%s: accepting the server certificate without validation (lab only)",
                c->cfg.endpoint_url);
        return UAS_GOOD;
    }
    return ch->validate_peer(ch->validate_ud, c->server_cert.data, c->server_cert.length);
}

/* ---- endpoint selection ---- */

uas_status uas_client_select_endpoint(uas_loop *loop, const char *url, const char *policy_uri,
                                      int32_t mode, uint32_t timeout_ms,
                                      uas_bytestring *server_cert, uint8_t *security_level)
{
    memset(server_cert, 0, sizeof(*server_cert));
    if (!loop || !url || !policy_uri)
        return UAS_BAD_INVALID_ARGUMENT;
    if (!mode)
        mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = url;
    cfg.create_session = false;
    cfg.request_timeout_ms = timeout_ms;
    cfg.max_inflight = 2;
    uas_client *c = uas_client_new(loop, &cfg, NULL, NULL);
    if (!c)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, timeout_ms);
    uas_get_endpoints_response resp;
    memset(&resp, 0, sizeof(resp));
    if (st == UAS_GOOD) {
        uas_get_endpoints_request req;
        memset(&req, 0, sizeof(req));
        req.endpoint_url = uas_string_from(url);
        st = uas_client_call_sync(c, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), &resp,
                                  UAS_TYPE(GET_ENDPOINTS_RESPONSE), &arena, timeout_ms + 1000);
    }
    if (st == UAS_GOOD) {
        const uas_endpoint_description *best = NULL;
        for (size_t i = 0; i < resp.endpoints_count; i++) {
            const uas_endpoint_description *e = &resp.endpoints[i];
            if (e->security_mode != mode ||
                !uas_string_eq_cstr(&e->security_policy_uri, policy_uri))
                continue;
            if (!best || e->security_level > best->security_level)
                best = e;
        }
        if (!best)
            st = UAS_BAD_SECURITY_POLICY_REJECTED;
        else if (best->server_certificate.length == 0)
            st = UAS_BAD_CERTIFICATE_INVALID;
        else {
            st = uas_copy(&best->server_certificate, server_cert, UAS_TYPE(BYTE_STRING));
            if (security_level)
                *security_level = best->security_level;
        }
    }
    uas_client_disconnect(c);
    (void)uas_client_wait_state(c, UAS_CLIENT_CLOSED, timeout_ms);
    uas_client_delete(c);
    for (int i = 0; i < 4; i++)
        uas_loop_run_once(loop, false);
    uas_arena_free(&arena);
    return st;
}
