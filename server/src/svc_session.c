/* Session services (Part 4, 5.6) and the discovery services (5.4), with
 * the session-level security of a secured channel: CreateSession checks
 * the client nonce and certificate and proves our key (serverSignature),
 * ActivateSession checks the client's proof (clientSignature) and the user
 * identity token (anonymous, user name with an encrypted password, X.509
 * certificate with its signature). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <sodium.h>
#endif

#include "aspace.h"
#include "authz.h"
#ifdef UAS_ENABLE_ENCRYPTION
#include "crypto_util.h"
#else
enum { UAS_RSA_MAX_BYTES = 1024 }; /* crypto_util.h's; sign_client never runs */
#endif
#include "dispatch.h"
#include "secpol.h"
#ifdef UAS_ENABLE_ENCRYPTION
#include "secpol_ecc_secret.h"
#endif
#include "secpol_user.h"

#define TCP_PROFILE "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"
#define NONE_URI    "http://opcfoundation.org/UA/SecurityPolicy#None"

static uint32_t channel_of(uas_request_ctx *ctx)
{
    return ctx->channel_id;
}

static void set_result(void *resp, uas_status st)
{
    ((uas_response_header *)resp)->service_result = st;
}

/* The URL the client asked with, when it names an opc.tcp endpoint: clients
 * connect back to what they receive, so echoing their host keeps NAT and
 * loopback set-ups working. */
static const uas_string *requested_url(const uas_string *url)
{
    static const char prefix[] = "opc.tcp://";
    if (!url->data || url->length <= sizeof(prefix) - 1 ||
        memcmp(url->data, prefix, sizeof(prefix) - 1) != 0)
        return NULL;
    return url;
}

static uas_status endpoints_for(uas_request_ctx *ctx, const uas_string *url, size_t *count,
                                uas_endpoint_description **out)
{
    uas_status st = uas_server_endpoints(ctx->server, ctx->arena, count, out);
    if (st == UAS_GOOD && url) {
        for (size_t i = 0; i < *count; i++) {
            (*out)[i].endpoint_url = *url;
            if ((*out)[i].server.discovery_urls_count == 1)
                (*out)[i].server.discovery_urls[0] = *url;
        }
    }
    return st;
}

void uas_svc_get_endpoints(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_get_endpoints_request *req = vreq;
    uas_get_endpoints_response *resp = vresp;
    /* A profile filter that does not name our transport selects nothing. */
    bool match = req->profile_uris_count == 0;
    for (size_t i = 0; i < req->profile_uris_count; i++)
        if (uas_string_eq_cstr(&req->profile_uris[i], TCP_PROFILE))
            match = true;
    if (!match) {
        resp->endpoints = UAS_EMPTY_ARRAY;
        return;
    }
    uas_status st = endpoints_for(ctx, requested_url(&req->endpoint_url), &resp->endpoints_count,
                                  &resp->endpoints);
    if (st != UAS_GOOD)
        set_result(resp, st);
}

void uas_svc_find_servers(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_find_servers_request *req = vreq;
    uas_find_servers_response *resp = vresp;
    uas_application_description d;
    uas_server_app_description(ctx->server, &d);
    bool match = req->server_uris_count == 0;
    for (size_t i = 0; i < req->server_uris_count; i++)
        if (uas_string_eq_cstr(&req->server_uris[i], ctx->server->cfg.application_uri))
            match = true;
    if (!match) {
        resp->servers = UAS_EMPTY_ARRAY;
        return;
    }
    const uas_string *url = requested_url(&req->endpoint_url);
    if (url) {
        d.discovery_urls_count = 1;
        d.discovery_urls = uas_arena_alloc(ctx->arena, sizeof(uas_string));
        if (!d.discovery_urls) {
            set_result(resp, UAS_BAD_OUT_OF_MEMORY);
            return;
        }
        d.discovery_urls[0] = *url;
    }
    resp->servers = uas_arena_alloc(ctx->arena, sizeof(d));
    if (!resp->servers) {
        set_result(resp, UAS_BAD_OUT_OF_MEMORY);
        return;
    }
    resp->servers[0] = d;
    resp->servers_count = 1;
}

/* ---- session-level security ---- */

static uas_channel *channel_obj(uas_request_ctx *ctx)
{
    return ctx->conn ? uas_conn_channel(ctx->conn) : NULL;
}

static bool channel_secure(uas_channel *ch)
{
    return ch && uas_security_policy_signature_uri(uas_channel_policy(ch)) != NULL;
}

/* Length of the first certificate of a ByteString that may hold a chain:
 * its outer DER header only. Every caller then compares those bytes with
 * the channel's certificate, which was parsed and validated at OPN; a full
 * parse here cost a third of the server's CPU per ECC set-up (decoding the
 * public key through OpenSSL's provider decoders), twice per session. */
static size_t first_cert_len(const uas_bytestring *b)
{
#ifdef UAS_ENABLE_ENCRYPTION
    size_t n = 0;
    if (!b->data || uas_crypto_cert_len(b->data, b->length, &n) != UAS_GOOD)
        return 0;
    return n;
#else
    (void)b;
    return 0; /* no certificates without encryption */
#endif
}

#ifdef UAS_ENABLE_ENCRYPTION
/* A NUL-terminated copy of a String, cut at cap - 1 bytes. */
static void cstr_of(const uas_string *s, char *buf, size_t cap)
{
    size_t n = s->data ? s->length : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(buf, s->data, n);
    buf[n] = 0;
}
#endif

#ifdef UAS_ENABLE_ENCRYPTION
/* ---- ECDHKey: the server's half of an EccEncryptedSecret ----
 * A client that will send a secret over an ECC policy asks for our
 * ephemeral key with an "ECDHPolicyUri" entry in the AdditionalHeader
 * (AdditionalParametersType) of CreateSession or ActivateSession; the
 * answer's AdditionalHeader carries "ECDHPolicyUri" and "ECDHKey" (an
 * EphemeralKeyType: the public key, signed with our application key).
 * The key is kept by the session and used by the next activation only
 * (Part 6, 6.8.3; as open62541 1.5.7 does). Key generation and the
 * signature run on the worker with the other proofs. */
#define ECDH_POLICY "ECDHPolicyUri"
#define ECDH_KEY    "ECDHKey"

typedef struct ecdh_key {
    uas_ecc_rkey *rkey;
    uint8_t sig[128]; /* ECDSA r|s or EdDSA, at most 114 bytes */
    size_t sig_len;
} ecdh_key;

/* Whether the request's AdditionalHeader asks for an ECDHKey of pol. */
static bool wants_ecdh_key(const uas_extensionobject *ah, const uas_secpol *pol)
{
    if (!pol || !pol->ecc || ah->encoding != UAS_EXTOBJ_DECODED ||
        ah->content.decoded.type != UAS_TYPE(ADDITIONAL_PARAMETERS_TYPE))
        return false;
    const uas_additional_parameters_type *ap = ah->content.decoded.data;
    for (size_t i = 0; i < ap->parameters_count; i++) {
        const uas_key_value_pair *kv = &ap->parameters[i];
        if (kv->key.ns == 0 && uas_string_eq_cstr(&kv->key.name, ECDH_POLICY) &&
            kv->value.type == UAS_TYPE(STRING) && !kv->value.is_array && kv->value.data &&
            uas_string_eq_cstr(kv->value.data, pol->uri))
            return true;
    }
    return false;
}

/* A fresh key and its signature by our key (on a worker). */
static uas_status ecdh_make(const uas_secpol_keys *keys, const uas_secpol *pol, ecdh_key *out)
{
    uas_status st = uas_ecc_rkey_new(pol, &out->rkey);
    size_t n = 0;
    const uint8_t *pub = st == UAS_GOOD ? uas_ecc_rkey_pub(out->rkey, &n) : NULL;
    if (st == UAS_GOOD)
        st = uas_secpol_keys_sign(keys, pub, n, out->sig, sizeof(out->sig), &out->sig_len);
    if (st != UAS_GOOD) {
        uas_ecc_rkey_free(out->rkey);
        out->rkey = NULL;
    }
    return st;
}

/* The response's AdditionalHeader with k (copied into the arena). */
static uas_status ecdh_header(uas_arena *a, const ecdh_key *k, uas_extensionobject *ah)
{
    size_t n = 0;
    const uint8_t *pub = uas_ecc_rkey_pub(k->rkey, &n);
    const uas_secpol *pol = uas_ecc_rkey_policy(k->rkey);
    uas_additional_parameters_type *ap = uas_arena_calloc(a, 1, sizeof(*ap));
    uas_key_value_pair *kv = uas_arena_calloc(a, 2, sizeof(*kv));
    uas_string *uri = uas_arena_alloc(a, sizeof(*uri));
    uas_ephemeral_key_type *ek = uas_arena_calloc(a, 1, sizeof(*ek));
    uint8_t *pc = uas_arena_alloc(a, n), *sc = uas_arena_alloc(a, k->sig_len);
    if (!ap || !kv || !uri || !ek || !pc || !sc)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(pc, pub, n);
    memcpy(sc, k->sig, k->sig_len);
    *uri = uas_string_from(pol->uri);
    ek->public_key.data = pc;
    ek->public_key.length = n;
    ek->signature.data = sc;
    ek->signature.length = k->sig_len;
    kv[0].key.name = uas_string_from(ECDH_POLICY);
    kv[0].value.type = UAS_TYPE(STRING);
    kv[0].value.data = uri;
    kv[1].key.name = uas_string_from(ECDH_KEY);
    kv[1].value.type = UAS_TYPE(EPHEMERAL_KEY_TYPE);
    kv[1].value.data = ek;
    ap->parameters = kv;
    ap->parameters_count = 2;
    ah->encoding = UAS_EXTOBJ_DECODED;
    ah->content.decoded.type = UAS_TYPE(ADDITIONAL_PARAMETERS_TYPE);
    ah->content.decoded.data = ap;
    return UAS_GOOD;
}
#else
typedef struct ecdh_key {
    void *rkey;
} ecdh_key;
#endif

/* CreateSession on a secured channel (Part 4, 5.6.2): a client nonce of
 * 32..128 bytes (checked on the loop), then, as a job for a worker
 * (create_job_run), the certificate the channel was opened with, that
 * certificate valid for the applicationUri the client claims (the PKI:
 * parsing, chain, revocation, file I/O), and serverSignature =
 * Sign(clientCertificate + clientNonce) with our key. The job owns copies
 * of everything it reads; the channel's peer comes as a key object of its
 * own (uas_channel_clone_keys). */
typedef struct create_job {
    uas_server *server;
    uas_secpol_keys *keys; /* the channel's peer and our credentials */
    uint8_t *data;         /* clientCertificate + clientNonce */
    size_t cert_len, data_len;
    char uri[512];
    uas_datetime now;
    uas_status st;
    uint8_t server_nonce[32]; /* the session's, when bound is signed */
    uint8_t *bound;           /* enhanced ECC policies: what is signed instead */
    size_t bound_len;
    size_t sig_len;
    uint8_t sig[UAS_RSA_MAX_BYTES];
    const uas_secpol *ecdh_pol; /* asked for an ECDHKey of the channel's policy */
    ecdh_key ecdh;
} create_job;

static void create_job_free(void *vjob)
{
    create_job *j = vjob;
    uas_secpol_keys_free(j->keys);
    if (j->data)
        uas_free(j->data, j->data_len ? j->data_len : 1);
    if (j->bound)
        uas_free(j->bound, j->bound_len ? j->bound_len : 1);
#ifdef UAS_ENABLE_ENCRYPTION
    uas_ecc_rkey_free(j->ecdh.rkey);
#endif
    uas_free(j, sizeof(*j));
}

static void create_job_run(void *vjob)
{
    create_job *j = vjob;
#ifndef UAS_ENABLE_ENCRYPTION
    j->st = UAS_BAD_SECURITY_CHECKS_FAILED; /* unreachable: no secured channel */
#else
    uas_bytestring cert = {.length = j->cert_len, .data = j->data};
    size_t n = first_cert_len(&cert);
    if (n == 0 || !uas_secpol_keys_peer_is(j->keys, j->data, n)) {
        uas_log(UAS_LOG_INFO, "session",
                "CreateSession refused: the client certificate is not the channel's");
        j->st = UAS_BAD_SECURITY_CHECKS_FAILED;
        return;
    }
    uas_pki_verdict v;
    j->st = uas_pki_validate(j->server->pki, j->data, j->cert_len, j->uri, UAS_PKI_USAGE_CLIENT, 0,
                             0, j->now, &v);
    if (j->st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "session", "CreateSession refused: client certificate %s: %s (%s)",
                v.thumbprint, uas_status_name(j->st), v.reason);
        return;
    }
    j->st = j->bound ? uas_secpol_keys_sign(j->keys, j->bound, j->bound_len, j->sig, sizeof(j->sig),
                                            &j->sig_len)
                     : uas_secpol_keys_sign(j->keys, j->data, j->data_len, j->sig, sizeof(j->sig),
                                            &j->sig_len);
    if (j->st == UAS_GOOD && j->ecdh_pol)
        j->st = ecdh_make(j->keys, j->ecdh_pol, &j->ecdh);
#endif
}

/* The cheap checks, then the job with its copies. */
static uas_status create_job_new(uas_request_ctx *ctx, const uas_create_session_request *req,
                                 uas_channel *ch, create_job **out)
{
    *out = NULL;
    if (!req->client_nonce.data || req->client_nonce.length < 32 ||
        req->client_nonce.length > 128) {
        uas_log(UAS_LOG_INFO, "session", "CreateSession refused: client nonce of %zu bytes",
                req->client_nonce.data ? req->client_nonce.length : 0);
        return UAS_BAD_NONCE_INVALID;
    }
    if (!req->client_certificate.data || req->client_certificate.length == 0) {
        uas_log(UAS_LOG_INFO, "session",
                "CreateSession refused: the client certificate is not the channel's");
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    create_job *j = uas_calloc(1, sizeof(*j));
    if (!j)
        return UAS_BAD_OUT_OF_MEMORY;
    j->server = ctx->server;
    j->cert_len = req->client_certificate.length;
    j->data_len = j->cert_len + req->client_nonce.length;
    j->data = uas_malloc(j->data_len);
    if (!j->data || uas_channel_clone_keys(ch, &j->keys) != UAS_GOOD || !j->keys) {
        create_job_free(j);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    memcpy(j->data, req->client_certificate.data, j->cert_len);
    memcpy(j->data + j->cert_len, req->client_nonce.data, req->client_nonce.length);
#ifdef UAS_ENABLE_ENCRYPTION
    cstr_of(&req->client_description.application_uri, j->uri, sizeof(j->uri));
#endif
    j->now = uas_datetime_now();
#ifdef UAS_ENABLE_ENCRYPTION
    if (wants_ecdh_key(&req->request_header.additional_header, uas_channel_policy(ch)))
        j->ecdh_pol = uas_channel_policy(ch);
#endif
    if (uas_channel_enhanced(ch)) {
        /* The enhanced ECC policies sign channel-bound data (Part 4, 5.6.2
         * of 1.05.07): TP | clientNonce | H(serverCert) | H(clientCert) |
         * serverNonce. The session's server nonce is chosen here, so that
         * the job can sign it; create_session gives it to the session. */
        size_t sl = 0;
        const uint8_t *server = uas_channel_local_cert(ch, &sl);
        const uint8_t *certs[2] = {server, req->client_certificate.data};
        size_t lens[2] = {sl, req->client_certificate.length};
        uas_random_bytes(j->server_nonce, sizeof(j->server_nonce));
        if (uas_channel_bound_data(ch, req->client_nonce.data, req->client_nonce.length, certs,
                                   lens, 2, j->server_nonce, sizeof(j->server_nonce), &j->bound,
                                   &j->bound_len) != UAS_GOOD) {
            create_job_free(j);
            return UAS_BAD_OUT_OF_MEMORY;
        }
    }
    *out = j;
    return UAS_GOOD;
}

/* serverSignature, worked out by the job. */
static uas_status sign_client(uas_request_ctx *ctx, const create_job *j, uas_channel *ch,
                              uas_create_session_response *resp)
{
    uint8_t *sig = uas_arena_alloc(ctx->arena, j->sig_len ? j->sig_len : 1);
    if (!sig)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(sig, j->sig, j->sig_len);
    resp->server_signature.algorithm =
        uas_string_from(uas_security_policy_signature_uri(uas_channel_policy(ch)));
    resp->server_signature.signature.data = sig;
    resp->server_signature.signature.length = j->sig_len;
    return UAS_GOOD;
}

static void create_session(uas_request_ctx *ctx, const uas_create_session_request *req,
                           uas_create_session_response *resp, uas_status st, create_job *job);

void uas_svc_create_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_create_session_request *req = vreq;
    uas_create_session_response *resp = vresp;
    uas_channel *ch = channel_obj(ctx);
    create_job *job = ctx->work_done, *own = NULL;
    uas_status st = UAS_GOOD;
    /* A None channel of a server without a None endpoint never gets here:
     * the dispatcher keeps it to discovery (dispatch.c, discovery_only). */
    if (channel_secure(ch) && !job) {
        st = create_job_new(ctx, req, ch, &own);
        if (st == UAS_GOOD) {
            uas_status pst = uas_request_park(ctx, own, create_job_run, create_job_free);
            if (pst == UAS_GOOD)
                return; /* answered when the job is back (ctx->work_done) */
            if (pst == UAS_BAD_NOT_SUPPORTED) {
                create_job_run(own);
                job = own;
            } else {
                create_job_free(own);
                own = NULL;
                UAS_LOG_LIMITED(UAS_LOG_WARN, "session",
                                "CreateSession refused: BadTooManySessions: the worker queue is "
                                "full (worker_queue = %u)",
                                ctx->server->cfg.worker_queue);
                atomic_fetch_add(&ctx->server->counters.rejected_sessions, 1);
                set_result(resp, UAS_BAD_TOO_MANY_SESSIONS);
                return;
            }
        }
    }
    create_session(ctx, req, resp, st, job);
    if (own)
        create_job_free(own);
}

/* The rest of CreateSession, on the loop: st is the cheap checks' verdict,
 * job the worker's (NULL on a None channel). */
static void create_session(uas_request_ctx *ctx, const uas_create_session_request *req,
                           uas_create_session_response *resp, uas_status st, create_job *job)
{
    const uas_server_config *cfg = &ctx->server->cfg;
    double timeout = req->requested_session_timeout;
    if (!(timeout >= cfg->min_session_timeout_ms)) /* also catches NaN */
        timeout = cfg->min_session_timeout_ms;
    if (timeout > cfg->max_session_timeout_ms)
        timeout = cfg->max_session_timeout_ms;
    uas_channel *ch = channel_obj(ctx);
    bool secure = channel_secure(ch);
    if (st == UAS_GOOD && secure)
        st = job ? job->st : UAS_BAD_INTERNAL_ERROR;
    if (st != UAS_GOOD) {
        atomic_fetch_add(&ctx->server->counters.security_rejected_requests, 1);
        atomic_fetch_add(&ctx->server->counters.rejected_sessions, 1);
        set_result(resp, st);
        return;
    }
    uas_session *se = NULL;
    st = uas_sessions_create(ctx->server->sessions, ctx->server, ctx, (int64_t)timeout, &se);
    if (st != UAS_GOOD) {
        UAS_LOG_LIMITED(UAS_LOG_WARN, "session", "CreateSession refused: %s", uas_status_name(st));
        set_result(resp, st);
        return;
    }
    if (req->session_name.data && req->session_name.length > 0) {
        size_t n = req->session_name.length > 256 ? 256 : req->session_name.length;
        se->name.data = uas_malloc(n);
        if (se->name.data) {
            memcpy(se->name.data, req->session_name.data, n);
            se->name.length = n;
        }
    }
    se->max_response_size = req->max_response_message_size;
    if (secure) {
        if (req->client_nonce.length <= sizeof(se->client_nonce)) {
            memcpy(se->client_nonce, req->client_nonce.data, req->client_nonce.length);
            se->client_nonce_len = (uint8_t)req->client_nonce.length;
        }
        if (job && job->bound)
            memcpy(se->server_nonce, job->server_nonce, sizeof(se->server_nonce));
        st = sign_client(ctx, job, ch, resp);
        if (st == UAS_GOOD) {
            se->client_cert.data = uas_malloc(req->client_certificate.length);
            if (!se->client_cert.data) {
                st = UAS_BAD_OUT_OF_MEMORY;
            } else {
                memcpy(se->client_cert.data, req->client_certificate.data,
                       req->client_certificate.length);
                se->client_cert.length = req->client_certificate.length;
            }
        }
        if (st != UAS_GOOD) {
            uas_sessions_remove(ctx->server->sessions, se);
            uas_session_unref(ctx->server, se);
            set_result(resp, st);
            return;
        }
    }
#ifdef UAS_ENABLE_ENCRYPTION
    if (job && job->ecdh.rkey) {
        st = ecdh_header(ctx->arena, &job->ecdh, &resp->response_header.additional_header);
        if (st != UAS_GOOD) {
            uas_sessions_remove(ctx->server->sessions, se);
            uas_session_unref(ctx->server, se);
            set_result(resp, st);
            return;
        }
        se->user_eph = job->ecdh.rkey;
        job->ecdh.rkey = NULL;
    }
#endif
    if (ctx->server->cred) {
        /* The certificate of the channel's type (RSA or an ECC curve). */
        size_t n;
        const uint8_t *cert = uas_channel_local_cert(ch, &n);
        if (!cert)
            cert = uas_secpol_cred_cert(ctx->server->cred, &n);
        resp->server_certificate.data = (uint8_t *)cert;
        resp->server_certificate.length = n;
    }
    resp->session_id = se->session_id;
    resp->authentication_token = se->auth_token;
    resp->revised_session_timeout = timeout;
    resp->server_nonce.length = sizeof(se->server_nonce);
    resp->server_nonce.data = uas_arena_alloc(ctx->arena, sizeof(se->server_nonce));
    if (resp->server_nonce.data)
        memcpy(resp->server_nonce.data, se->server_nonce, sizeof(se->server_nonce));
    else
        resp->server_nonce.length = 0;
    resp->max_request_message_size = cfg->max_message_size;
    resp->server_software_certificates = UAS_EMPTY_ARRAY;
    st = endpoints_for(ctx, requested_url(&req->endpoint_url), &resp->server_endpoints_count,
                       &resp->server_endpoints);
    if (ctx->sconn)
        uas_sconn_cache_add(ctx->sconn, se);
    uas_session_unref(ctx->server, se);
    if (st != UAS_GOOD) {
        uas_sessions_remove(ctx->server->sessions, se);
        set_result(resp, st);
        return;
    }
    uas_log(UAS_LOG_DEBUG, "session", "session created on channel %u, timeout %.0f ms",
            channel_of(ctx), timeout);
    uas_server_system_event(ctx->server, 100, "Session created");
}

#ifdef UAS_ENABLE_ENCRYPTION
/* Attacker text for a log line: at most 64 bytes of it, escaped the way
 * uas_log escapes every message, so a NUL or an over-long field cannot cut
 * or flood the line either. */
static void escaped(const uas_string *s, char *buf, size_t cap)
{
    size_t n = s->data ? s->length : 0;
    size_t o = uas_log_escape(buf, cap > 4 ? cap - 3 : cap, (const char *)s->data, n < 64 ? n : 64);
    if (n > 64 && o + 4 <= cap)
        memcpy(buf + o, "...", 4);
}

#endif

/* Why an activation was refused, for its log line (never a secret). */
typedef struct refusal {
    char why[640];
} refusal;

/* Notes why in r and returns st. */
__attribute__((format(printf, 3, 4))) static uas_status refuse(refusal *r, uas_status st,
                                                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    return st;
}

/* The proofs of an ActivateSession (client signature, user identity
 * token) are checked by a worker (act_run) against this snapshot, taken on
 * the loop: copies of the session's nonce and client certificate, the
 * channel's policy, mode and peer as key objects of the job's own, and the
 * request itself, decoded again from a copy. The user and PKI stores lock
 * for themselves; the server's configuration does not change while it
 * runs. */
typedef struct act_env {
    uas_server *server;
    bool has_channel;
    bool secure;              /* the channel signs (not None) */
    const uas_secpol *policy; /* the channel's */
    int32_t mode;
    uas_secpol_keys *keys;      /* the channel's peer and our credentials; NULL on None */
    uint8_t nonce[32];          /* the session's server nonce when parked */
    const uint8_t *server_cert; /* the channel's (its type's), immutable */
    size_t server_cert_len;
    uint8_t *bound; /* enhanced ECC policies: the channel-bound data signed */
    size_t bound_len;
    uint8_t *user_bound; /* and what an X.509 user token's signature covers */
    size_t user_bound_len;
    uas_bytestring client_cert;
    char address[64]; /* the peer's, for throttling without a certificate */
    uint8_t *body;    /* the request message */
    size_t body_len;
    uas_arena arena;
    uint8_t arena_first[4096];
    /* ECC: the session's ECDHKey taken for this activation (one use), and
     * the next one when the request asks for it (made on success). */
    struct uas_ecc_rkey *rkey;
    const uas_secpol *ecdh_pol;
    ecdh_key next;
    /* The verdict. */
    uas_status st;
    refusal r;
    char user[72];
} act_env;

/* serverCertificate + serverNonce: what the client and X509 user token
 * signatures of ActivateSession cover. */
static uint8_t *activation_data(act_env *e, size_t *len)
{
    size_t n = e->server_cert ? e->server_cert_len : 0;
    const uint8_t *cert = e->server_cert ? e->server_cert : (const uint8_t *)"";
    size_t nonce = sizeof(e->nonce);
    uint8_t *data = uas_arena_alloc(&e->arena, n + nonce);
    if (data) {
        memcpy(data, cert, n);
        memcpy(data + n, e->nonce, nonce);
    }
    *len = n + nonce;
    return data;
}

#ifdef UAS_ENABLE_ENCRYPTION
/* The UserTokenPolicy a token names (Part 4, 7.41), among those of the
 * endpoint the activation comes through: the policy of the channel, or
 * Basic256Sha256 on a None one (uas_server_endpoints advertises the same).
 * A policy id another endpoint offers is refused here too, so a token
 * cannot be encrypted with a weaker policy than the endpoint names. */
static const uas_secpol *endpoint_token_policy(act_env *e, const uas_string *id, const char *prefix,
                                               refusal *r)
{
    uas_server *s = e->server;
    char text[264];
    const uas_secpol *named = uas_server_token_policy(s, id, prefix);
    if (!named) {
        escaped(id, text, sizeof(text));
        refuse(r, 0, "unknown policy id '%s'", text);
        return NULL;
    }
    const uas_secpol *own = uas_server_user_token_policy(
        s, e->has_channel ? e->policy : uas_security_policy(NONE_URI, false));
    if (named != own) {
        escaped(id, text, sizeof(text));
        refuse(r, 0, "policy id '%s' is not offered on this endpoint", text);
        return NULL;
    }
    return named;
}

/* The throttling key of a login: the client certificate's thumbprint, or
 * the peer's address on a channel without one. */
static void client_key(act_env *e, char *buf, size_t cap)
{
    if (e->client_cert.data && cap >= UAS_PKI_THUMBPRINT_HEX) {
        size_t n = first_cert_len(&e->client_cert);
        uas_pki_thumbprint(e->client_cert.data, n ? n : e->client_cert.length, buf);
    } else {
        snprintf(buf, cap, "%s", e->address);
    }
}

/* The login throttle of the client (user names and X.509 user tokens
 * alike): Good, or the refusal noted in r. key gets the client key. */
static uas_status throttled(act_env *e, char *key, size_t cap, refusal *r)
{
    client_key(e, key, cap);
    uas_status st = e->server->users ? uas_user_throttle_check(e->server->users, key) : UAS_GOOD;
    if (st != UAS_GOOD)
        return refuse(r, st, "%s (client %s)",
                      st == UAS_BAD_TOO_MANY_OPERATIONS ? "server-wide login failure budget spent"
                                                        : "client throttled",
                      key);
    return UAS_GOOD;
}

#endif

#ifdef UAS_ENABLE_ENCRYPTION
/* The password check proper, once the secret is decrypted. */
static uas_status user_login(act_env *e, const uas_user_name_identity_token *t, const char *key,
                             const uint8_t *pw, size_t pw_len, refusal *r)
{
    char name[UAS_USER_NAME_MAX + 2];
    cstr_of(&t->user_name, name, sizeof(name));
    uas_status st = uas_user_check(e->server->users, key, name, (const char *)pw, pw_len);
    if (st == UAS_GOOD) {
        snprintf(e->user, sizeof(e->user), "%s", name);
        return UAS_GOOD;
    }
    refuse(r, 0, "user name login refused (client %s)", key);
    return UAS_BAD_USER_ACCESS_DENIED;
}

/* A password in an EccEncryptedSecret (secpol_ecc_secret.h) on an ECC
 * endpoint. The order bounds the work a stranger causes: the layout checks
 * (no cryptography), the throttle, then one signature verification with
 * the channel's client certificate, then one key agreement with the
 * ECDHKey we handed out for this nonce. The encryptionAlgorithm field is
 * ignored: the secret names its policy itself (open62541 sends none). A
 * secret that fails any check counts as a failed login. */
static uas_status check_user_name_ecc(act_env *e, const uas_user_name_identity_token *t,
                                      const uas_secpol *pol, refusal *r)
{
    char key[64];
    uas_status st = throttled(e, key, sizeof(key), r);
    if (st != UAS_GOOD)
        return st;
    const uint8_t *in = t->password.data;
    size_t len = in ? t->password.length : 0;
    const char *why = "";
    uas_ecc_secret_view v;
    st = uas_ecc_secret_parse(pol, in, len, &v, &why);
    if (st == UAS_GOOD && !e->rkey) {
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
        why = "no ECDHKey of ours is outstanding for this nonce";
    }
    if (st == UAS_GOOD &&
        (!e->keys || (v.cert && !uas_secpol_keys_peer_is(
                                    e->keys, v.cert,
                                    first_cert_len(&(uas_bytestring){
                                        .length = v.cert_len, .data = (uint8_t *)v.cert}))))) {
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
        why = "SigningCertificate is not the channel's";
    }
    if (st == UAS_GOOD && uas_secpol_keys_verify(e->keys, in, v.signed_len, in + v.signed_len,
                                                 v.sig_len) != UAS_GOOD) {
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
        why = "signature does not verify";
    }
    uint8_t pw[UAS_ECC_SECRET_MAX_SECRET];
    size_t pw_len = 0;
    if (st == UAS_GOOD)
        st = uas_ecc_secret_open(e->rkey, in, &v, e->nonce, sizeof(e->nonce), pw, sizeof(pw),
                                 &pw_len, &why);
    if (st == UAS_GOOD) {
        st = user_login(e, t, key, pw, pw_len, r);
    } else if (st != UAS_BAD_OUT_OF_MEMORY) {
        uas_user_throttle_fail(e->server->users, key);
        refuse(r, 0, "user name token (EccEncryptedSecret): %s (client %s)", why, key);
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    sodium_memzero(pw, sizeof(pw));
    return st;
}
#endif

/* A UserNameIdentityToken (Part 4, 7.41.4) with its password in the legacy
 * encrypted layout (secpol_user.h). The order bounds what a stranger can
 * make us do: cheap checks first, then the throttle, then exactly one RSA
 * block (the secret of any real password fits in one), and a token that
 * does not decrypt counts as a failed login like a wrong password. */
static uas_status check_user_name(act_env *e, const uas_user_name_identity_token *t, refusal *r)
{
    uas_server *s = e->server;
    if (!s->users || !s->cred)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "user names are not offered");
#ifndef UAS_ENABLE_ENCRYPTION
    (void)t; /* unreachable: a build without encryption has no users file */
    return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "this build has no encryption");
#else
    const uas_secpol *pol = endpoint_token_policy(e, &t->policy_id, "username_", r);
    if (!pol)
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    if (pol->ecc)
        return check_user_name_ecc(e, t, pol, r);
    char text[264];
    /* Passwords travel encrypted only (no plaintext policy is offered). */
    if (!uas_string_eq_cstr(&t->encryption_algorithm, pol->asym_encryption_uri)) {
        escaped(&t->encryption_algorithm, text, sizeof(text));
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_INVALID, "wrong algorithm URI '%s' (%s wanted)",
                      text, pol->asym_encryption_uri);
    }
    char key[64];
    uas_status st = throttled(e, key, sizeof(key), r);
    if (st != UAS_GOOD)
        return st;
    size_t block = uas_secpol_user_block_len(s->cred);
    size_t len = t->password.data ? t->password.length : 0;
    if (len != block)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_INVALID,
                      "bad length: %zu encrypted bytes, one block of %zu wanted", len, block);
    uint8_t pw[UAS_RSA_MAX_BYTES];
    size_t pw_len = 0;
    const char *why = "";
    st = uas_secpol_user_decrypt(s->cred, pol, t->password.data, len, e->nonce, sizeof(e->nonce),
                                 pw, sizeof(pw), &pw_len, &why);
    if (st == UAS_GOOD) {
        st = user_login(e, t, key, pw, pw_len, r);
    } else if (st != UAS_BAD_OUT_OF_MEMORY) {
        uas_user_throttle_fail(s->users, key);
        refuse(r, 0, "user name token: %s (client %s)", why, key);
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    sodium_memzero(pw, sizeof(pw));
    return st;
#endif
}

#ifdef UAS_ENABLE_ENCRYPTION
/* The X.509 token policy a token names: the endpoint's own, or on an RSA or
 * None endpoint one of the ECC policies offered there for ECC user keys
 * (uas_server_endpoints advertises one per curve). */
static const uas_secpol *x509_token_policy(act_env *e, const uas_string *id, refusal *r)
{
    const uas_secpol *own = uas_server_user_token_policy(
        e->server, e->has_channel ? e->policy : uas_security_policy(NONE_URI, false));
    const uas_secpol *named = uas_server_token_policy(e->server, id, "x509_");
    if (own && !own->ecc && named && named->ecc)
        return named;
    return endpoint_token_policy(e, id, "x509_", r);
}
#endif

static uas_status check_x509_user(act_env *e, const uas_x509_identity_token *t,
                                  const uas_signature_data *sig, refusal *r)
{
    uas_server *s = e->server;
    if (!s->user_pki || !s->cred)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "user certificates are not offered");
#ifndef UAS_ENABLE_ENCRYPTION
    (void)t, (void)sig;
    return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "this build has no encryption");
#else
    const uas_secpol *pol = x509_token_policy(e, &t->policy_id, r);
    if (!pol)
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    if (!t->certificate_data.data || t->certificate_data.length == 0)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_INVALID, "no user certificate");
    /* Throttled like user names (the same client key and budget): failed
     * signatures and untrusted certificates count, and a throttled client
     * costs no signature check nor chain building. */
    char key[64];
    uas_status st = throttled(e, key, sizeof(key), r);
    if (st != UAS_GOOD)
        return st;
    /* The ECC policies have no signature algorithm URI: the field is not
     * judged there (clients send nothing or the policy's URI). */
    if ((!pol->ecc && !uas_string_eq_cstr(&sig->algorithm, pol->asym_signature_uri)) ||
        !sig->signature.data) {
        char text[264];
        escaped(&sig->algorithm, text, sizeof(text));
        return refuse(r, UAS_BAD_USER_SIGNATURE_INVALID,
                      "user token signature: algorithm '%s' (%s wanted) or none", text,
                      pol->asym_signature_uri);
    }
    /* On an enhanced ECC channel the signature is channel-bound (the token
     * policy is the channel's there); elsewhere serverCertificate +
     * serverNonce, as for RSA. */
    bool bound = e->user_bound && pol == e->policy;
    size_t len = bound ? e->user_bound_len : 0;
    uint8_t *data = bound ? e->user_bound : activation_data(e, &len);
    if (!data)
        return UAS_BAD_OUT_OF_MEMORY;
    st = uas_secpol_user_verify(pol, t->certificate_data.data, t->certificate_data.length, data,
                                len, sig->signature.data, sig->signature.length);
    if (st != UAS_GOOD && s->users)
        uas_user_throttle_fail(s->users, key);
    if (st == UAS_BAD_SECURITY_CHECKS_FAILED)
        return refuse(r, UAS_BAD_USER_SIGNATURE_INVALID, "user token signature does not verify");
    if (st != UAS_GOOD)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "user certificate unusable: %s",
                      uas_status_name(st));
    uas_pki_verdict v;
    st = uas_pki_validate(s->user_pki, t->certificate_data.data, t->certificate_data.length, NULL,
                          UAS_PKI_USAGE_CLIENT, 0, 0, uas_datetime_now(), &v);
    if (st != UAS_GOOD) {
        if (s->users)
            uas_user_throttle_fail(s->users, key);
        uas_log(UAS_LOG_WARN, "session", "user certificate %s refused: %s (%s)", v.thumbprint,
                uas_status_name(st), v.reason);
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "user certificate not trusted");
    }
    snprintf(e->user, sizeof(e->user), "x509:%s", v.thumbprint);
    return UAS_GOOD;
#endif
}

/* Anonymous is judged by the endpoint the activation comes through: the
 * channel's policy and mode (None for a request without a connection). */
static bool anonymous_allowed(act_env *e)
{
    if (!e->has_channel)
        return uas_server_anonymous_allowed(e->server, uas_security_policy(NONE_URI, false),
                                            UAS_MESSAGE_SECURITY_MODE_NONE);
    return uas_server_anonymous_allowed(e->server, e->policy, e->mode);
}

/* The user identity token (Part 4, 7.41): anonymous when allowed, a user
 * name with its password encrypted under one of our UserTokenPolicies, or
 * an X.509 certificate the user trust list accepts with its signature. */
static uas_status check_identity(act_env *e, const uas_activate_session_request *req, refusal *r)
{
    const uas_extensionobject *tok = &req->user_identity_token;
    bool anonymous = anonymous_allowed(e);
    if (tok->encoding == UAS_EXTOBJ_EMPTY)
        return anonymous ? UAS_GOOD
                         : refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "anonymous not offered here");
    if (tok->encoding != UAS_EXTOBJ_DECODED)
        return refuse(r, UAS_BAD_IDENTITY_TOKEN_INVALID, "undecodable identity token");
    const uas_type *type = tok->content.decoded.type;
    if (type == UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN)) {
        const uas_anonymous_identity_token *a = tok->content.decoded.data;
        if (a->policy_id.data && a->policy_id.length > 0 &&
            !uas_string_eq_cstr(&a->policy_id, "anonymous"))
            return refuse(r, UAS_BAD_IDENTITY_TOKEN_INVALID, "unknown anonymous policy id");
        return anonymous ? UAS_GOOD
                         : refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "anonymous not offered here");
    }
    if (type == UAS_TYPE(USER_NAME_IDENTITY_TOKEN))
        return check_user_name(e, tok->content.decoded.data, r);
    if (type == UAS_TYPE(X509_IDENTITY_TOKEN))
        return check_x509_user(e, tok->content.decoded.data, &req->user_token_signature, r);
    return refuse(r, UAS_BAD_IDENTITY_TOKEN_REJECTED, "unsupported identity token type");
}

/* ActivateSession on a secured channel (Part 4, 5.6.3): the channel is
 * secured with the certificate the session was created with, and
 * clientSignature = Sign(serverCertificate + serverNonce) by its key. A
 * session created on a secured channel is never activated on a None one. */
static uas_status check_client_signature(act_env *e, const uas_activate_session_request *req,
                                         refusal *r)
{
    if (!e->secure)
        return e->client_cert.data ? refuse(r, UAS_BAD_SECURITY_CHECKS_FAILED,
                                            "a secured session on a None channel")
                                   : UAS_GOOD;
    size_t n = first_cert_len(&e->client_cert);
    if (!e->client_cert.data || n == 0 || !uas_secpol_keys_peer_is(e->keys, e->client_cert.data, n))
        return refuse(r, UAS_BAD_SECURITY_CHECKS_FAILED,
                      "the channel's certificate is not the session's");
    const char *alg = uas_security_policy_signature_uri(e->policy);
    /* The ECC policies have no algorithm URI: the field is null or empty
     * and ignored (Part 4, 7.37 of 1.05.07). */
    if ((*alg && !uas_string_eq_cstr(&req->client_signature.algorithm, alg)) ||
        !req->client_signature.signature.data)
        return refuse(r, UAS_BAD_APPLICATION_SIGNATURE_INVALID,
                      "client signature missing or of another algorithm");
    size_t len = e->bound_len;
    uint8_t *data = e->bound ? e->bound : activation_data(e, &len);
    if (!data)
        return UAS_BAD_OUT_OF_MEMORY;
    if (uas_secpol_keys_verify(e->keys, data, len, req->client_signature.signature.data,
                               req->client_signature.signature.length) != UAS_GOOD)
        return refuse(r, UAS_BAD_APPLICATION_SIGNATURE_INVALID, "client signature does not verify");
    return UAS_GOOD;
}

/* A session that moves to another channel keeps its identity, proven again
 * (Part 4, 5.6.3.1): the same user name with its password, or the same user
 * certificate with a signature over the current nonce; on a secured channel
 * the client certificate and clientSignature prove the application too.
 * Without either, a stranger who saw the authenticationToken (readable on a
 * None channel) could take the session over, so an anonymous session made
 * on a None channel never moves. Called after check_identity succeeded:
 * se->user is the identity just proven, previous the session's. */
static uas_status check_move(const uas_session *se, const char *previous, refusal *r)
{
    if (strcmp(se->user, previous) != 0)
        return refuse(r, UAS_BAD_IDENTITY_CHANGE_NOT_SUPPORTED,
                      "a session moves to another channel with its own user only");
    if (!previous[0] && !se->client_cert.data)
        return refuse(r, UAS_BAD_USER_ACCESS_DENIED,
                      "an anonymous session of a None channel cannot move to another channel");
    return UAS_GOOD;
}

static void act_free(void *vjob)
{
    act_env *e = vjob;
    uas_secpol_keys_free(e->keys);
    if (e->client_cert.data)
        uas_free(e->client_cert.data, e->client_cert.length ? e->client_cert.length : 1);
    if (e->body)
        uas_free(e->body, e->body_len ? e->body_len : 1);
    if (e->bound)
        uas_free(e->bound, e->bound_len ? e->bound_len : 1);
    if (e->user_bound)
        uas_free(e->user_bound, e->user_bound_len ? e->user_bound_len : 1);
#ifdef UAS_ENABLE_ENCRYPTION
    uas_ecc_rkey_free(e->rkey);
    uas_ecc_rkey_free(e->next.rkey);
#endif
    uas_arena_free(&e->arena);
    uas_wipe(e, sizeof(*e));
    uas_free(e, sizeof(*e));
}

static void act_check(act_env *e, const uas_activate_session_request *req)
{
    e->st = check_client_signature(e, req, &e->r);
    if (e->st == UAS_GOOD)
        e->st = check_identity(e, req, &e->r);
#ifdef UAS_ENABLE_ENCRYPTION
    /* The secret's key is spent either way; the next one only after a
     * success (a refused client starts a new session, as for RSA). */
    uas_ecc_rkey_free(e->rkey);
    e->rkey = NULL;
    if (e->st == UAS_GOOD && e->ecdh_pol && e->keys &&
        ecdh_make(e->keys, e->ecdh_pol, &e->next) != UAS_GOOD)
        e->st = refuse(&e->r, UAS_BAD_INTERNAL_ERROR, "no ECDHKey could be made");
#endif
}

/* On a worker: the request again from the job's copy, then the proofs. */
static void act_run(void *vjob)
{
    act_env *e = vjob;
    uas_decoder d;
    uas_decoder_init(&d, e->body, e->body_len, &e->arena, &e->server->cfg.decode_limits);
    d.zero_copy = true; /* into the job's copy */
    uas_nodeid id;
    uas_activate_session_request *req = uas_arena_alloc(&e->arena, sizeof(*req));
    if (!req || uas_decode(&d, &id, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD ||
        uas_decode(&d, req, UAS_TYPE(ACTIVATE_SESSION_REQUEST)) != UAS_GOOD) {
        e->st = refuse(&e->r, UAS_BAD_OUT_OF_MEMORY, "the request could not be decoded again");
        return;
    }
    act_check(e, req);
}

/* The snapshot an activation's proofs are checked against (act_env). */
static uas_status act_new(uas_request_ctx *ctx, act_env **out)
{
    *out = NULL;
    uas_session *se = ctx->session;
    act_env *e = uas_calloc(1, sizeof(*e));
    if (!e)
        return UAS_BAD_OUT_OF_MEMORY;
    e->server = ctx->server;
    uas_arena_init(&e->arena, e->arena_first, sizeof(e->arena_first),
                   (size_t)ctx->server->cfg.max_message_size * 4);
    uas_channel *ch = channel_obj(ctx);
    uas_status st = UAS_GOOD;
    if (ch) {
        e->has_channel = true;
        e->policy = uas_channel_policy(ch);
        e->mode = uas_channel_security_mode(ch);
        e->secure = channel_secure(ch);
        if (e->secure)
            st = uas_channel_clone_keys(ch, &e->keys);
        /* The certificate of the channel's type (RSA or an ECC curve). */
        e->server_cert = uas_channel_local_cert(ch, &e->server_cert_len);
    }
    if (!e->server_cert && ctx->server->cred)
        e->server_cert = uas_secpol_cred_cert(ctx->server->cred, &e->server_cert_len);
    memcpy(e->nonce, se->server_nonce, sizeof(e->nonce));
    if (st == UAS_GOOD && ch && e->secure && uas_channel_enhanced(ch)) {
        /* Enhanced ECC policies (Part 4, 5.6.3 of 1.05.07): TP | serverNonce |
         * H(serverCert) | H(serverCert) | H(clientCert) | clientNonce (our
         * application and channel certificate are the same one). */
        const uint8_t *certs[3] = {e->server_cert, e->server_cert, se->client_cert.data};
        size_t lens[3] = {e->server_cert_len, e->server_cert_len, se->client_cert.length};
        st = uas_channel_bound_data(ch, se->server_nonce, sizeof(se->server_nonce), certs, lens, 3,
                                    se->client_nonce, se->client_nonce_len, &e->bound,
                                    &e->bound_len);
        /* An X.509 user token's signature (Part 4, 6.1.8 of 1.05.07): the
         * same with H(clientCert) twice, the client's application and
         * channel certificate. Only where user certificates are offered. */
        const uint8_t *ucerts[4] = {e->server_cert, e->server_cert, se->client_cert.data,
                                    se->client_cert.data};
        size_t ulens[4] = {e->server_cert_len, e->server_cert_len, se->client_cert.length,
                           se->client_cert.length};
        if (st == UAS_GOOD && ctx->server->user_pki)
            st = uas_channel_bound_data(ch, se->server_nonce, sizeof(se->server_nonce), ucerts,
                                        ulens, 4, se->client_nonce, se->client_nonce_len,
                                        &e->user_bound, &e->user_bound_len);
    }
    if (st == UAS_GOOD && se->client_cert.data) {
        e->client_cert.data = uas_malloc(se->client_cert.length ? se->client_cert.length : 1);
        if (e->client_cert.data) {
            memcpy(e->client_cert.data, se->client_cert.data, se->client_cert.length);
            e->client_cert.length = se->client_cert.length;
        } else {
            st = UAS_BAD_OUT_OF_MEMORY;
        }
    }
    if (!ctx->conn || !uas_conn_peer_address(ctx->conn, e->address, sizeof(e->address)))
        snprintf(e->address, sizeof(e->address), "?");
    if (st == UAS_GOOD && ctx->body) {
        e->body = uas_malloc(ctx->body_len ? ctx->body_len : 1);
        if (e->body) {
            memcpy(e->body, ctx->body, ctx->body_len);
            e->body_len = ctx->body_len;
        } else {
            st = UAS_BAD_OUT_OF_MEMORY;
        }
    }
    if (st != UAS_GOOD) {
        act_free(e);
        return st;
    }
    *out = e;
    return UAS_GOOD;
}

static void activate(uas_request_ctx *ctx, const uas_activate_session_request *req,
                     uas_activate_session_response *resp, act_env *e, bool moving);

void uas_svc_activate_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_activate_session_request *req = vreq;
    uas_activate_session_response *resp = vresp;
    uas_session *se = ctx->session;
    uint32_t channel = channel_of(ctx);
    /* The first activation must come over the channel that created the
     * session; later ones may move it to a new channel. */
    if (!se->activated && se->channel_id != channel) {
        uas_log(UAS_LOG_INFO, "session",
                "ActivateSession refused: BadSecureChannelIdInvalid: first activation from "
                "another channel");
        set_result(resp, UAS_BAD_SECURE_CHANNEL_ID_INVALID);
        return;
    }
    bool moving = se->activated && se->channel_id != channel;
    /* The proofs (RSA, argon2id, the PKI) are checked off the loop: the
     * request is parked and this handler runs again with the verdict. */
    act_env *e = ctx->work_done, *own = NULL;
    if (!e) {
        uas_status st = act_new(ctx, &own);
        if (st != UAS_GOOD) {
            set_result(resp, st);
            return;
        }
#ifdef UAS_ENABLE_ENCRYPTION
        /* The session's ECDHKey serves this activation only. */
        own->rkey = se->user_eph;
        se->user_eph = NULL;
        if (own->secure && wants_ecdh_key(&req->request_header.additional_header, own->policy))
            own->ecdh_pol = own->policy;
#endif
        /* Anonymous on a None channel proves nothing: no need to wait. */
        const uas_extensionobject *tok = &req->user_identity_token;
        bool proofs =
            own->secure || (tok->encoding == UAS_EXTOBJ_DECODED &&
                            (tok->content.decoded.type == UAS_TYPE(USER_NAME_IDENTITY_TOKEN) ||
                             tok->content.decoded.type == UAS_TYPE(X509_IDENTITY_TOKEN)));
        st = proofs ? uas_request_park(ctx, own, act_run, act_free) : UAS_BAD_NOT_SUPPORTED;
        if (st == UAS_GOOD)
            return;
        if (st != UAS_BAD_NOT_SUPPORTED) {
            act_free(own);
            UAS_LOG_LIMITED(UAS_LOG_WARN, "session",
                            "ActivateSession refused: BadServerTooBusy: the worker queue is full "
                            "(worker_queue = %u)",
                            ctx->server->cfg.worker_queue);
            atomic_fetch_add(&ctx->server->counters.rejected_requests, 1);
            set_result(resp, UAS_BAD_SERVER_TOO_BUSY);
            return;
        }
        act_check(own, req);
        e = own;
    } else if (memcmp(e->nonce, se->server_nonce, sizeof(e->nonce)) != 0) {
        /* Another activation renewed the nonce while this one's proofs were
         * checked: they are over a nonce that is no longer the session's. */
        e->st = refuse(&e->r, UAS_BAD_NONCE_INVALID,
                       "the session nonce changed while the proofs were checked");
    }
    activate(ctx, req, resp, e, moving);
    if (own)
        act_free(own);
}

/* The rest of ActivateSession, on the loop, with the proofs' verdict. */
static void activate(uas_request_ctx *ctx, const uas_activate_session_request *req,
                     uas_activate_session_response *resp, act_env *e, bool moving)
{
    uas_session *se = ctx->session;
    uint32_t channel = channel_of(ctx);
    /* The identity is the one of this activation: an anonymous activation
     * after a user's leaves none (TransferSubscriptions compares it); a
     * refused one leaves the previous activation's. */
    char previous_user[sizeof(se->user)];
    memcpy(previous_user, se->user, sizeof(previous_user));
    refusal r = e->r;
    uas_status st = e->st;
    if (st == UAS_GOOD)
        memcpy(se->user, e->user, sizeof(se->user));
    if (st == UAS_GOOD && moving)
        st = check_move(se, previous_user, &r);
    if (st != UAS_GOOD) {
        memcpy(se->user, previous_user, sizeof(previous_user));
        /* A new nonce after every failed proof: each guess meets a nonce
         * of its own, and a refused secret or signature is never accepted
         * later. A ServiceFault carries no nonce (for RSA policies Part 4
         * has no place for it), so the client starts a new session. */
        uas_random_bytes(se->server_nonce, sizeof(se->server_nonce));
        atomic_fetch_add(&ctx->server->counters.security_rejected_requests, 1);
        uas_log(UAS_LOG_INFO, "session", "ActivateSession refused: %s%s%s", uas_status_name(st),
                r.why[0] ? ": " : "", r.why);
        set_result(resp, st);
        return;
    }

    if (moving)
        uas_log(UAS_LOG_INFO, "session", "session moved from channel %u to channel %u",
                se->channel_id, channel);
    se->channel_id = channel;
    se->activated = true;
#ifdef UAS_ENABLE_ENCRYPTION
    if (e->next.rkey &&
        ecdh_header(ctx->arena, &e->next, &resp->response_header.additional_header) == UAS_GOOD) {
        uas_ecc_rkey_free(se->user_eph);
        se->user_eph = e->next.rkey;
        e->next.rkey = NULL;
    }
#endif
    uas_authz_session_roles(ctx->server, se, &req->user_identity_token);
    uas_random_bytes(se->server_nonce, sizeof(se->server_nonce));
    resp->server_nonce.length = sizeof(se->server_nonce);
    resp->server_nonce.data = uas_arena_alloc(ctx->arena, sizeof(se->server_nonce));
    if (resp->server_nonce.data)
        memcpy(resp->server_nonce.data, se->server_nonce, sizeof(se->server_nonce));
    else
        resp->server_nonce.length = 0;
    size_t n = req->client_software_certificates_count;
    resp->results_count = n;
    resp->results = n ? uas_arena_calloc(ctx->arena, n, sizeof(uas_status)) : UAS_EMPTY_ARRAY;
    if (!resp->results) {
        resp->results_count = 0;
        resp->results = UAS_EMPTY_ARRAY;
    }
    resp->diagnostic_infos = UAS_EMPTY_ARRAY;
}

void uas_svc_close_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_close_session_request *req = vreq;
    uas_close_session_response *resp = vresp;
    if (ctx->session->channel_id != channel_of(ctx)) {
        set_result(resp, UAS_BAD_SECURE_CHANNEL_ID_INVALID);
        return;
    }
    /* Kept subscriptions live on, transferable, until their lifetime ends. */
    ctx->session->delete_subscriptions = req->delete_subscriptions;
    uas_sessions_remove(ctx->server->sessions, ctx->session);
    uas_server_system_event(ctx->server, 100, "Session closed");
}

void uas_svc_cancel(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    (void)ctx;
    (void)vreq;
    /* Every service completes before the next request of the channel is
     * read, so nothing is ever outstanding to cancel. */
    ((uas_cancel_response *)vresp)->cancel_count = 0;
}
