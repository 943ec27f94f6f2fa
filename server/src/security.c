/* The server's security set-up: the offered (policy, mode) pairs, the
 * application certificate and key, the trust lists (applications in
 * <pki_dir>, X509 user tokens in <pki_dir>/user) and the users file; and the
 * check of client certificates on OpenSecureChannel. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <sodium.h>
#endif

#include "secpol.h"
#include "server_internal.h"

#define POLICY_PREFIX "http://opcfoundation.org/UA/SecurityPolicy#"

const char *uas_server_policy_name(const uas_secpol *p)
{
    const char *uri = p ? uas_security_policy_uri(p) : NULL;
    const char *hash = uri ? strrchr(uri, '#') : NULL;
    return hash ? hash + 1 : "None";
}

/* A token of the list: "Policy[:Mode]", with the policy as short name or
 * URI. *policy and *mode on success; else err says why. */
static bool parse_offer(const char *tok, size_t len, bool allow_deprecated, uas_channel_offer *o,
                        char *err, size_t errlen)
{
    char buf[256];
    if (len == 0 || len >= sizeof(buf)) {
        snprintf(err, errlen, "empty or overlong entry");
        return false;
    }
    memcpy(buf, tok, len);
    buf[len] = 0;
    /* The mode follows the last ':' that is not part of "http://". */
    char *mode = strrchr(buf, ':');
    if (mode && (mode[1] == '/' || mode == buf))
        mode = NULL;
    if (mode)
        *mode++ = 0;
    char uri[320];
    if (strchr(buf, '#') || strncmp(buf, "http", 4) == 0)
        snprintf(uri, sizeof(uri), "%s", buf);
    else
        snprintf(uri, sizeof(uri), POLICY_PREFIX "%s", buf);
    const uas_secpol *p = uas_security_policy(uri, allow_deprecated);
    if (!p) {
#ifndef UAS_ENABLE_ENCRYPTION
        if (strcmp(buf, "None") != 0) {
            snprintf(err, errlen,
                     "policy '%.64s' is not available: this build has no encryption "
                     "(UA_ENABLE_ENCRYPTION=OFF), only None",
                     buf);
            return false;
        }
#endif
        if (uas_security_policy(uri, true))
            snprintf(err, errlen, "policy '%.64s' is deprecated: set allow_deprecated to offer it",
                     buf);
        else
            snprintf(err, errlen,
                     "unknown security policy '%.64s' (None, Basic256Sha256, "
                     "Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss, Basic256, ECC_*)",
                     buf);
        return false;
    }
    bool none = uas_security_policy_signature_uri(p) == NULL;
    int32_t m;
    if (!mode)
        m = none ? UAS_MESSAGE_SECURITY_MODE_NONE : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    else if (!strcmp(mode, "None") && none)
        m = UAS_MESSAGE_SECURITY_MODE_NONE;
    else if (!strcmp(mode, "Sign") && !none)
        m = UAS_MESSAGE_SECURITY_MODE_SIGN;
    else if (!strcmp(mode, "SignAndEncrypt") && !none)
        m = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    else {
        snprintf(err, errlen, "mode '%.32s' is not valid with policy %.64s (Sign, SignAndEncrypt)",
                 mode, buf);
        return false;
    }
    o->policy = p;
    o->mode = m;
    return true;
}

/* The next entry of a comma-separated list: *tok and *len (spaces
 * trimmed; 0 for an empty entry); returns where the rest begins, or NULL
 * at the end. */
static const char *next_entry(const char *p, const char **tok, size_t *len)
{
    while (*p == ' ' || *p == ',')
        p++;
    if (!*p)
        return NULL;
    const char *end = p;
    while (*end && *end != ',')
        end++;
    size_t n = (size_t)(end - p);
    while (n && p[n - 1] == ' ')
        n--;
    *tok = p;
    *len = n;
    return end;
}

/* The index of an offered endpoint (not the discovery-only None), or
 * offer_count. */
static size_t find_offer(const uas_server *s, const uas_secpol *p, int32_t mode)
{
    size_t i = 0;
    while (i < s->offer_count && !(s->offers[i].policy == p && s->offers[i].mode == mode))
        i++;
    return i;
}

static uas_status parse_offers(uas_server *s, const char *list)
{
    if (!list || !*list)
        list = "None";
    size_t cap = 2; /* one more for the discovery-only None */
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    s->offers = uas_calloc(cap, sizeof(*s->offers));
    s->offers_cap = cap;
    if (!s->offers)
        return UAS_BAD_OUT_OF_MEMORY;
    const char *tok;
    size_t len;
    for (const char *p = list; (p = next_entry(p, &tok, &len));) {
        uas_channel_offer o;
        char err[200];
        if (!parse_offer(tok, len, s->cfg.allow_deprecated, &o, err, sizeof(err))) {
            uas_log(UAS_LOG_ERROR, "security", "security: %s", err);
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        if (find_offer(s, o.policy, o.mode) == s->offer_count)
            s->offers[s->offer_count++] = o;
    }
    if (s->offer_count == 0) {
        uas_log(UAS_LOG_ERROR, "security", "security: no endpoint in '%s'", list);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    /* Clients discover the endpoints (GetEndpoints, FindServers) over a
     * None channel even when no None endpoint is offered; such a channel
     * carries discovery only (dispatch.c, discovery_only). */
    s->channel_offer_count = s->offer_count;
    s->none_offered = false;
    for (size_t i = 0; i < s->offer_count; i++)
        s->none_offered =
            s->none_offered || !uas_security_policy_signature_uri(s->offers[i].policy);
    if (!s->none_offered)
        s->offers[s->channel_offer_count++] = (uas_channel_offer){
            uas_security_policy(POLICY_PREFIX "None", false), UAS_MESSAGE_SECURITY_MODE_NONE};
    return UAS_GOOD;
}

/* Which endpoints accept anonymous sessions. The list names endpoints as
 * the security list does, so "Basic256Sha256" is its SignAndEncrypt
 * endpoint in both; naming one that is not offered is refused, since a
 * typo there would silently change who may connect. */
static uas_status parse_anonymous(uas_server *s, const char *list)
{
    s->offer_anonymous = uas_calloc(s->offers_cap, sizeof(bool));
    if (!s->offer_anonymous)
        return UAS_BAD_OUT_OF_MEMORY;
    if (!list) {
        for (size_t i = 0; i < s->offer_count; i++)
            s->offer_anonymous[i] = s->cfg.allow_anonymous;
        return UAS_GOOD;
    }
    const char *tok;
    size_t len;
    for (const char *p = list; (p = next_entry(p, &tok, &len));) {
        uas_channel_offer o;
        char err[200];
        if (!parse_offer(tok, len, true, &o, err, sizeof(err))) {
            uas_log(UAS_LOG_ERROR, "security", "anonymous_endpoints: %s", err);
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        size_t i = find_offer(s, o.policy, o.mode);
        if (i == s->offer_count) {
            uas_log(UAS_LOG_ERROR, "security",
                    "anonymous_endpoints: '%.*s' is not an endpoint of the security list",
                    (int)(len < 128 ? len : 128), tok);
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        s->offer_anonymous[i] = s->cfg.allow_anonymous;
    }
    return UAS_GOOD;
}

bool uas_server_anonymous_allowed(const uas_server *s, const uas_secpol *p, int32_t mode)
{
    size_t i = find_offer(s, p, mode);
    return s->offer_anonymous && i < s->offer_count && s->offer_anonymous[i];
}

#ifdef UAS_ENABLE_ENCRYPTION
static uas_status read_file(const char *path, uas_bytestring *out)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "rb");
    if (!f) {
        uas_log(UAS_LOG_ERROR, "security", "cannot open %s", path);
        return UAS_BAD_NOT_FOUND;
    }
    uint8_t buf[65536];
    size_t n = fread(buf, 1, sizeof(buf), f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    uas_status st = UAS_GOOD;
    if (n == 0 || more) {
        uas_log(UAS_LOG_ERROR, "security", "%s: empty or larger than 64 KiB", path);
        st = UAS_BAD_CONFIGURATION_ERROR;
    } else if (!(out->data = uas_malloc(n))) {
        st = UAS_BAD_OUT_OF_MEMORY;
    } else {
        memcpy(out->data, buf, n);
        out->length = n;
    }
    sodium_memzero(buf, sizeof(buf));
    return st;
}

#endif /* UAS_ENABLE_ENCRYPTION */

static bool any_secure(const uas_server *s)
{
    for (size_t i = 0; i < s->offer_count; i++)
        if (uas_security_policy_signature_uri(s->offers[i].policy))
            return true;
    return false;
}

#ifdef UAS_ENABLE_ENCRYPTION
static uas_status load_credentials(uas_server *s)
{
    uas_bytestring cert = {0, NULL}, key = {0, NULL};
    uas_status st;
    if (s->cfg.certificate || s->cfg.private_key) {
        if (!s->cfg.certificate || !s->cfg.private_key) {
            uas_log(UAS_LOG_ERROR, "security",
                    "certificate and private_key must be given together");
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        st = uas_pki_read_cert_file(s->cfg.certificate, &cert);
        if (st != UAS_GOOD) {
            uas_log(UAS_LOG_ERROR, "security", "cannot read the certificate %s: %s",
                    s->cfg.certificate, uas_status_name(st));
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        st = read_file(s->cfg.private_key, &key);
    } else {
        const char *dns[1] = {s->hostname};
        const char *ips[1] = {"127.0.0.1"};
        uas_pki_create_params p;
        memset(&p, 0, sizeof(p));
        p.application_uri = s->cfg.application_uri;
        p.application_name =
            s->cfg.application_name && *s->cfg.application_name ? s->cfg.application_name : NULL;
        p.dns_names = dns;
        p.dns_count = 1;
        p.ip_addresses = ips;
        p.ip_count = 1;
        p.key_bits = s->cfg.key_bits;
        st = uas_pki_ensure_own(s->pki, &p, uas_datetime_now(), &cert, &key);
        if (st != UAS_GOOD)
            uas_log(UAS_LOG_ERROR, "security",
                    "cannot create or load the own certificate in %s: %s",
                    uas_pki_store_dir(s->pki), uas_status_name(st));
    }
    if (st == UAS_GOOD) {
        st = uas_secpol_cred_new(cert.data, cert.length, key.data, key.length, &s->cred);
        if (st != UAS_GOOD)
            uas_log(UAS_LOG_ERROR, "security", "unusable certificate or private key: %s",
                    uas_status_name(st));
    }
    if (st == UAS_GOOD) {
        uas_pki_cert_info info;
        if (uas_pki_cert_info_get(cert.data, cert.length, &info) == UAS_GOOD) {
            uas_log(UAS_LOG_INFO, "security", "certificate %s (%s, %u bits)", info.thumbprint,
                    info.subject, info.key_bits);
            if (strcmp(info.application_uri, s->cfg.application_uri) != 0)
                uas_log(UAS_LOG_WARN, "security",
                        "the certificate's application URI '%s' is not application_uri '%s': "
                        "clients will refuse it",
                        info.application_uri, s->cfg.application_uri);
        }
    }
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    return st;
}

/* One application instance certificate per ECC certificate type an
 * endpoint needs: own/certs/<application name>_<type>.der, created on
 * first start like the RSA one. */
static uas_status load_ecc_credentials(uas_server *s)
{
    for (size_t i = 0; i < s->offer_count; i++) {
        const uas_secpol *pol = s->offers[i].policy;
        if (!pol->ecc || uas_secpol_cred_fits(pol, uas_server_cred_for(s, pol)))
            continue;
        if (s->ecc_cred_count == sizeof(s->ecc_creds) / sizeof(s->ecc_creds[0]))
            return UAS_BAD_CONFIGURATION_ERROR;
        const char *type = uas_secpol_cert_type(pol);
        const char *app = s->cfg.application_name && *s->cfg.application_name
                              ? s->cfg.application_name
                              : "uastack";
        char file[96];
        size_t k = 0;
        for (const char *c = app; *c && k < 48; c++, k++)
            file[k] = (isalnum((unsigned char)*c) || *c == '.' || *c == '-') ? *c : '_';
        snprintf(file + k, sizeof(file) - k, "_%s", type);
        const char *dns[1] = {s->hostname};
        const char *ips[1] = {"127.0.0.1"};
        uas_pki_create_params p;
        memset(&p, 0, sizeof(p));
        p.application_uri = s->cfg.application_uri;
        p.application_name = app;
        p.dns_names = dns;
        p.dns_count = 1;
        p.ip_addresses = ips;
        p.ip_count = 1;
        p.key_type = type;
        p.file_name = file;
        uas_bytestring cert = {0, NULL}, key = {0, NULL};
        uas_status st = uas_pki_ensure_own(s->pki, &p, uas_datetime_now(), &cert, &key);
        if (st == UAS_GOOD)
            st = uas_secpol_cred_new(cert.data, cert.length, key.data, key.length,
                                     &s->ecc_creds[s->ecc_cred_count]);
        uas_pki_bytes_free(&cert);
        uas_pki_bytes_free(&key);
        if (st != UAS_GOOD) {
            uas_log(UAS_LOG_ERROR, "security", "cannot create or load the %s certificate %s: %s",
                    type, file, uas_status_name(st));
            return st;
        }
        uas_log(UAS_LOG_INFO, "security", "%s certificate %s loaded for %s", type, file, pol->uri);
        s->ecc_cred_count++;
    }
    return UAS_GOOD;
}
#endif /* UAS_ENABLE_ENCRYPTION */

uas_secpol_cred *uas_server_cred_for(const uas_server *s, const uas_secpol *pol)
{
    for (size_t i = 0; i < s->ecc_cred_count; i++)
        if (uas_secpol_cred_fits(pol, s->ecc_creds[i]))
            return s->ecc_creds[i];
    return s->cred;
}

uas_status uas_server_security_init(uas_server *s)
{
    uas_status st = parse_offers(s, s->cfg.security);
    if (st == UAS_GOOD)
        st = parse_anonymous(s, s->cfg.anonymous_endpoints);
    if (st != UAS_GOOD || !any_secure(s))
        return st;
#ifndef UAS_ENABLE_ENCRYPTION
    return UAS_BAD_CONFIGURATION_ERROR; /* unreachable: only policy None is compiled */
#else
    const char *dir = s->cfg.pki_dir && *s->cfg.pki_dir ? s->cfg.pki_dir : "uastack-pki";
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.auto_accept = s->cfg.auto_accept;
    /* 0 keeps the PKI's default (uas_pki_store_open). */
    o.max_signature_checks = s->cfg.pki_max_signature_checks;
    if (s->cfg.pki_max_ca_key_bits)
        o.max_ca_key_bits = s->cfg.pki_max_ca_key_bits;
    if (s->cfg.pki_max_rejected)
        o.max_rejected = s->cfg.pki_max_rejected;
    if (s->cfg.pki_rejected_max_cert_size)
        o.rejected_max_cert_size = s->cfg.pki_rejected_max_cert_size;
    if (s->cfg.pki_rejected_writes_per_minute)
        o.rejected_writes_per_minute = s->cfg.pki_rejected_writes_per_minute;
    st = uas_pki_store_open(dir, &o, &s->pki);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_ERROR, "security", "cannot open the certificate store %s: %s", dir,
                uas_status_name(st));
        return st;
    }
    if (s->cfg.auto_accept)
        uas_log(UAS_LOG_WARN, "security",
                "auto_accept is ON: every client certificate that fails only the trust list is "
                "ACCEPTED. Lab use only; never on a network you do not own");
    if (s->cfg.trust_certificate) {
        uas_bytestring der;
        st = uas_pki_read_cert_file(s->cfg.trust_certificate, &der);
        if (st == UAS_GOOD) {
            st = uas_pki_add(s->pki, UAS_PKI_TRUSTED, der.data, der.length);
            uas_pki_bytes_free(&der);
        }
        if (st != UAS_GOOD) {
            uas_log(UAS_LOG_ERROR, "security", "cannot trust %s: %s", s->cfg.trust_certificate,
                    uas_status_name(st));
            return UAS_BAD_CONFIGURATION_ERROR;
        }
    }
    st = load_credentials(s);
    if (st == UAS_GOOD)
        st = load_ecc_credentials(s);
    if (st != UAS_GOOD)
        return st == UAS_BAD_OUT_OF_MEMORY ? st : UAS_BAD_CONFIGURATION_ERROR;
    /* X509 user tokens: a trust list of their own, never auto-accepted. */
    char path[1024];
    snprintf(path, sizeof(path), "%s/user", dir);
    st = uas_pki_store_open(path, NULL, &s->user_pki);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_ERROR, "security", "cannot open the user certificate store %s: %s", path,
                uas_status_name(st));
        return st;
    }
    if (s->cfg.users_file)
        snprintf(path, sizeof(path), "%s", s->cfg.users_file);
    else
        snprintf(path, sizeof(path), "%s/users", dir);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    const uas_server_config *c = &s->cfg;
    t.max_failures = c->login_max_failures ? c->login_max_failures : t.max_failures;
    t.window_ms = c->login_window_ms ? c->login_window_ms : t.window_ms;
    t.backoff_ms = c->login_backoff_ms ? c->login_backoff_ms : t.backoff_ms;
    t.max_backoff_ms = c->login_max_backoff_ms ? c->login_max_backoff_ms : t.max_backoff_ms;
    t.global_max_failures =
        c->login_global_max_failures ? c->login_global_max_failures : t.global_max_failures;
    /* Watched: a users file made after start (the first `uapki user add`)
     * is read then, and user name logins are offered from that moment. */
    st = uas_user_store_watch(path, &t, &s->users);
    if (st == UAS_GOOD && !uas_user_store_present(s->users))
        uas_log(UAS_LOG_INFO, "security",
                "no users file %s yet: user name logins are offered once it exists", path);
    else if (st != UAS_GOOD)
        uas_log(UAS_LOG_WARN, "security", "cannot read the users file %s: %s", path,
                uas_status_name(st));
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < s->offer_count && used < sizeof(list); i++) {
        int32_t m = s->offers[i].mode;
        int n = snprintf(list + used, sizeof(list) - used, "%s%s%s%s", i ? ", " : "",
                         uas_server_policy_name(s->offers[i].policy),
                         m == UAS_MESSAGE_SECURITY_MODE_SIGN               ? ":Sign"
                         : m == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT ? ":SignAndEncrypt"
                                                                           : "",
                         s->offer_anonymous[i] ? " (anonymous)" : "");
        used += n > 0 ? (size_t)n : 0;
    }
    uas_log(UAS_LOG_INFO, "security", "endpoints %s; store %s", list, dir);
    return UAS_GOOD;
#endif /* UAS_ENABLE_ENCRYPTION */
}

void uas_server_security_free(uas_server *s)
{
    if (s->offers)
        uas_free(s->offers, s->offers_cap * sizeof(*s->offers));
    s->offers = NULL;
    if (s->offer_anonymous)
        uas_free(s->offer_anonymous, s->offers_cap * sizeof(bool));
    s->offer_anonymous = NULL;
    uas_secpol_cred_unref(s->cred);
    s->cred = NULL;
    for (size_t i = 0; i < s->ecc_cred_count; i++)
        uas_secpol_cred_unref(s->ecc_creds[i]);
    s->ecc_cred_count = 0;
#ifdef UAS_ENABLE_ENCRYPTION
    uas_user_store_close(s->users);
    s->users = NULL;
    if (s->user_pki)
        uas_pki_store_close(s->user_pki);
    s->user_pki = NULL;
    if (s->pki)
        uas_pki_store_close(s->pki);
    s->pki = NULL;
#endif
}

#ifdef UAS_ENABLE_ENCRYPTION
/* The client key sizes any offered policy allows: the PKI refuses a key
 * outside them before it builds a chain. The exact bounds of the policy
 * the OPN names are the channel's (asym_unprotect, still before any
 * private-key operation). */
static void offered_key_bounds(const uas_server *s, uint32_t *min_bits, uint32_t *max_bits)
{
    *min_bits = 0;
    *max_bits = 0;
    for (size_t i = 0; i < s->offer_count; i++) {
        const uas_secpol *p = s->offers[i].policy;
        if (!p->min_key_bits)
            continue; /* None */
        if (!*min_bits || p->min_key_bits < *min_bits)
            *min_bits = p->min_key_bits;
        if (p->max_key_bits > *max_bits)
            *max_bits = p->max_key_bits;
    }
}
#endif

uas_status uas_server_validate_client(void *ud, const uint8_t *der, size_t len)
{
    uas_server *s = ud;
    if (!s->pki)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
#ifndef UAS_ENABLE_ENCRYPTION
    (void)der, (void)len;
    return UAS_BAD_SECURITY_CHECKS_FAILED;
#else
    uint32_t min_bits, max_bits;
    offered_key_bounds(s, &min_bits, &max_bits);
    uas_pki_verdict v;
    uas_status st = uas_pki_validate(s->pki, der, len, NULL, UAS_PKI_USAGE_CLIENT, min_bits,
                                     max_bits, uas_datetime_now(), &v);
    if (st != UAS_GOOD) {
        atomic_fetch_add(&s->counters.security_rejected_requests, 1);
        uas_log(UAS_LOG_WARN, "security", "client certificate %s refused: %s (%s)", v.thumbprint,
                uas_status_name(st), v.reason);
    }
    return st;
#endif
}

const uas_secpol *uas_server_user_token_policy(uas_server *s, const uas_secpol *p)
{
    if (!s->cred)
        return NULL;
    if (!p || !uas_security_policy_signature_uri(p))
        return uas_security_policy(POLICY_PREFIX "Basic256Sha256", false);
    /* The ECC policies protect a password with an EccEncryptedSecret
     * (Part 4, 7.41.2.3) under the channel's own policy. */
    return p;
}

const uas_secpol *uas_server_token_policy(uas_server *s, const uas_string *id, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (!s->cred || !id->data || id->length <= plen || id->length > plen + 64 ||
        memcmp(id->data, prefix, plen) != 0)
        return NULL;
    char name[80];
    memcpy(name, id->data + plen, id->length - plen);
    name[id->length - plen] = 0;
    for (size_t i = 0; i < s->offer_count; i++) {
        const uas_secpol *p = uas_server_user_token_policy(s, s->offers[i].policy);
        if (p && !strcmp(uas_server_policy_name(p), name))
            return p;
    }
    return NULL;
}

uas_status uas_server_security_check(const uas_server_config *cfg)
{
    uas_server *s = uas_calloc(1, sizeof(*s));
    if (!s)
        return UAS_BAD_OUT_OF_MEMORY;
    s->cfg = *cfg;
    uas_status st = parse_offers(s, cfg->security);
    if (st == UAS_GOOD)
        st = parse_anonymous(s, cfg->anonymous_endpoints);
    if (s->offers)
        uas_free(s->offers, s->offers_cap * sizeof(*s->offers));
    if (s->offer_anonymous)
        uas_free(s->offer_anonymous, s->offers_cap * sizeof(bool));
    uas_free(s, sizeof(*s));
    return st;
}
