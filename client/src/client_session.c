/* Session services of the client: CreateSession + ActivateSession
 * (with the session signatures of a secured channel and the configured
 * user identity) once the channel is open, CloseSession on disconnect, and the
 * take-over of an existing session on a new channel (Part 4, 5.6). */
#include <stdio.h>
#include <string.h>

#include <ua/log.h>

#include "client_internal.h"
#include "secpol.h"

void uas__session_forget(uas_client *c)
{
    uas_clear(&c->auth_token, UAS_TYPE(NODE_ID));
    uas_clear(&c->session_id, UAS_TYPE(NODE_ID));
    c->policy_id[0] = 0;
}

static uas_user_token_type wanted_token_type(const uas_client *c)
{
    switch (c->cfg.user.kind) {
    case UAS_CLIENT_USER_NAME:
        return UAS_USER_TOKEN_TYPE_USER_NAME;
    case UAS_CLIENT_USER_X509:
        return UAS_USER_TOKEN_TYPE_CERTIFICATE;
    default:
        return UAS_USER_TOKEN_TYPE_ANONYMOUS;
    }
}

/* The UserTokenPolicy of our identity's type on the server's endpoint
 * with the channel's policy and mode: its policy id and securityPolicyUri.
 * Without one the defaults stay ("anonymous"/"username"/"certificate",
 * the channel's policy). */
static uas_status adopt_endpoint_cert(uas_client *c, const uas_create_session_response *r,
                                      const uas_endpoint_description *e);

static uas_status pick_policy(uas_client *c, const uas_create_session_response *r)
{
    uas_user_token_type want = wanted_token_type(c);
    const char *policy_uri = uas_security_policy_uri(c->policy);
    int32_t mode = uas__security_on(c) ? c->cfg.conn.channel.mode : UAS_MESSAGE_SECURITY_MODE_NONE;
    snprintf(c->policy_id, sizeof(c->policy_id), "%s",
             want == UAS_USER_TOKEN_TYPE_USER_NAME     ? "username"
             : want == UAS_USER_TOKEN_TYPE_CERTIFICATE ? "certificate"
                                                       : "anonymous");
    c->token_policy_uri[0] = 0;
    /* An X.509 user takes the certificate token policy its key fits (an
     * RSA endpoint may offer one per ECC curve too), else the first. */
    uas_secpol_cred *user = NULL;
    if (want == UAS_USER_TOKEN_TYPE_CERTIFICATE &&
        uas_secpol_cred_new(c->user_cert.data, c->user_cert.length, c->user_key.data,
                            c->user_key.length, &user) != UAS_GOOD)
        user = NULL;
    bool first = true;
    for (size_t i = 0; i < r->server_endpoints_count; i++) {
        const uas_endpoint_description *e = &r->server_endpoints[i];
        if (e->security_mode != mode || !uas_string_eq_cstr(&e->security_policy_uri, policy_uri))
            continue;
        for (size_t k = 0; k < e->user_identity_tokens_count; k++) {
            const uas_user_token_policy *p = &e->user_identity_tokens[k];
            if (p->token_type != want || !p->policy_id.data ||
                p->policy_id.length >= sizeof(c->policy_id) ||
                p->security_policy_uri.length >= sizeof(c->token_policy_uri))
                continue;
            bool fits = true;
            if (user) {
                char uri[sizeof(c->token_policy_uri)];
                memcpy(uri,
                       p->security_policy_uri.data ? (const char *)p->security_policy_uri.data : "",
                       p->security_policy_uri.length);
                uri[p->security_policy_uri.length] = 0;
                const uas_secpol *tp = uri[0] ? uas_security_policy(uri, false) : c->policy;
                fits = uas_secpol_cred_fits(tp, user);
            }
            if (!fits && !first)
                continue;
            memcpy(c->policy_id, p->policy_id.data, p->policy_id.length);
            c->policy_id[p->policy_id.length] = 0;
            if (p->security_policy_uri.length)
                memcpy(c->token_policy_uri, p->security_policy_uri.data,
                       p->security_policy_uri.length);
            c->token_policy_uri[p->security_policy_uri.length] = 0;
            first = false;
            if (!fits)
                continue; /* kept as the fallback; look for one that fits */
            uas_secpol_cred_unref(user);
            return want == UAS_USER_TOKEN_TYPE_USER_NAME ? adopt_endpoint_cert(c, r, e) : UAS_GOOD;
        }
    }
    uas_secpol_cred_unref(user);
    return UAS_GOOD;
}

/* A password for a token policy with its own security policy is encrypted
 * for the server's certificate. On a secured channel that is the channel's;
 * on a None channel, unless the application gave one, it is the one the
 * server sent with its endpoint (Part 4 7.41.2.3). Nothing authenticates
 * that certificate on a None channel, so a warning says so: only a secured
 * channel protects the password from an active attacker. */
static uas_status adopt_endpoint_cert(uas_client *c, const uas_create_session_response *r,
                                      const uas_endpoint_description *e)
{
    if (uas__security_on(c) || c->server_cert.length || !c->token_policy_uri[0] ||
        !strcmp(c->token_policy_uri, "http://opcfoundation.org/UA/SecurityPolicy#None"))
        return UAS_GOOD;
    const uas_bytestring *cert =
        e->server_certificate.length ? &e->server_certificate : &r->server_certificate;
    if (!cert->length)
        return UAS_GOOD; /* uas__user_secret says what is missing */
    uas_status st = uas_copy(cert, &c->server_cert, UAS_TYPE(BYTE_STRING));
    if (st == UAS_GOOD)
        uas_log(UAS_LOG_WARN, "client",
                "%s: the password is encrypted for the certificate the server sent over an "
                "unsecured channel; only a secured channel authenticates it",
                c->cfg.endpoint_url);
    return st;
}

/* The channel-bound data of the ECC policies with SecureChannelEnhancements
 * (Part 4, 5.6.2 / 5.6.3 of 1.05.07):
 *   CreateSession:   TP | clientNonce | H(serverCert) | H(clientCert) | serverNonce
 *   ActivateSession: TP | serverNonce | H(serverCert) | H(serverCert) | H(clientCert) |
 *                    clientNonce */
static uas_status bound_data(uas_client *c, bool activate, const uint8_t *server_nonce,
                             size_t server_nonce_len, uint8_t **out, size_t *n)
{
    uas_channel *ch = uas_conn_channel(c->conn);
    size_t cl = 0;
    const uint8_t *client = uas_channel_local_cert(ch, &cl);
    const uint8_t *certs[3] = {c->server_cert.data, c->server_cert.data, client};
    size_t lens[3] = {c->server_cert.length, c->server_cert.length, cl};
    if (activate)
        return uas_channel_bound_data(ch, server_nonce, server_nonce_len, certs, lens, 3,
                                      c->client_nonce, sizeof(c->client_nonce), out, n);
    return uas_channel_bound_data(ch, c->client_nonce, sizeof(c->client_nonce), certs + 1, lens + 1,
                                  2, server_nonce, server_nonce_len, out, n);
}

/* An X.509 user token's channel-bound data (Part 4, 6.1.8 of 1.05.07):
 *   TP | serverNonce | H(serverCert) | H(serverCert) | H(clientCert) | H(clientCert) |
 *   clientNonce
 * (our application and channel certificate are one). */
uas_status uas__user_bound_data(uas_client *c, uint8_t **out, size_t *n)
{
    uas_channel *ch = uas_conn_channel(c->conn);
    size_t cl = 0;
    const uint8_t *client = uas_channel_local_cert(ch, &cl);
    const uint8_t *certs[4] = {c->server_cert.data, c->server_cert.data, client, client};
    size_t lens[4] = {c->server_cert.length, c->server_cert.length, cl, cl};
    return uas_channel_bound_data(ch, c->server_nonce, c->server_nonce_len, certs, lens, 4,
                                  c->client_nonce, sizeof(c->client_nonce), out, n);
}

/* Part 4 5.6.3: clientSignature over serverCertificate + serverNonce. */
static uas_status sign_client(uas_client *c, uas_signature_data *sd, uint8_t *sig, size_t cap)
{
    memset(sd, 0, sizeof(*sd));
    if (!uas__security_on(c) || !c->conn)
        return UAS_GOOD;
    size_t n = c->server_cert.length + c->server_nonce_len;
    uint8_t *data = NULL;
    if (uas_channel_enhanced(uas_conn_channel(c->conn))) {
        uas_status bst = bound_data(c, true, c->server_nonce, c->server_nonce_len, &data, &n);
        if (bst != UAS_GOOD)
            return bst;
    } else {
        data = uas_malloc(n ? n : 1);
        if (!data)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(data, c->server_cert.data, c->server_cert.length);
        if (c->server_nonce_len)
            memcpy(data + c->server_cert.length, c->server_nonce, c->server_nonce_len);
    }
    size_t sig_len = 0;
    uas_status st = uas_channel_sign(uas_conn_channel(c->conn), data, n, sig, cap, &sig_len);
    uas_free(data, n ? n : 1);
    if (st != UAS_GOOD)
        return st;
    sd->algorithm = uas_string_from(uas_security_policy_signature_uri(c->policy));
    sd->signature.data = sig;
    sd->signature.length = sig_len;
    return UAS_GOOD;
}

static uas_status send_activate(uas_client *c, const uas_nodeid *token, uas_client_response_fn cb)
{
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = *token;
    uas_additional_parameters_type ap;
    uas_key_value_pair kv;
    uas_string uri;
    uas__ecdh_request(c, &req.request_header.additional_header, &ap, &kv, &uri);
    uint8_t sig[UAS_CLIENT_SIG_MAX];
    uas_status st = sign_client(c, &req.client_signature, sig, sizeof(sig));
    if (st != UAS_GOOD)
        return st;
    const char *pid = c->policy_id[0] ? c->policy_id : "anonymous";
    uas_anonymous_identity_token anon;
    uas_user_name_identity_token user;
    uas_x509_identity_token x509;
    req.user_identity_token.encoding = UAS_EXTOBJ_DECODED;
    switch (c->cfg.user.kind) {
    case UAS_CLIENT_USER_NAME:
        memset(&user, 0, sizeof(user));
        user.policy_id = uas_string_from(pid);
        user.user_name = uas_string_from(c->user_name);
        st = uas__user_secret(c, &user);
        if (st != UAS_GOOD)
            return st;
        req.user_identity_token.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
        req.user_identity_token.content.decoded.data = &user;
        break;
    case UAS_CLIENT_USER_X509:
        memset(&x509, 0, sizeof(x509));
        x509.policy_id = uas_string_from(pid);
        x509.certificate_data = c->user_cert;
        req.user_identity_token.content.decoded.type = UAS_TYPE(X509_IDENTITY_TOKEN);
        req.user_identity_token.content.decoded.data = &x509;
        break;
    default:
        anon.policy_id = uas_string_from(pid);
        req.user_identity_token.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
        req.user_identity_token.content.decoded.data = &anon;
        break;
    }
    uint8_t user_sig[UAS_CLIENT_SIG_MAX];
    if (c->cfg.user.kind == UAS_CLIENT_USER_X509)
        st = uas__user_sign(c, &req.user_token_signature, user_sig, sizeof(user_sig));
    if (st == UAS_GOOD)
        st = uas__client_send(c, &req, UAS_TYPE(ACTIVATE_SESSION_REQUEST), cb, NULL, NULL);
    if (c->cfg.user.kind == UAS_CLIENT_USER_NAME)
        uas__user_secret_free(c, &user);
    return st;
}

/* The server nonce of a CreateSession/ActivateSession answer, for the next
 * signature and password encryption. */
static uas_status keep_server_nonce(uas_client *c, const uas_bytestring *n)
{
    if (n->length > sizeof(c->server_nonce))
        return UAS_BAD_NONCE_INVALID;
    if (n->length)
        memcpy(c->server_nonce, n->data, n->length);
    c->server_nonce_len = n->length;
    if (uas__security_on(c) && n->length < 32)
        return UAS_BAD_NONCE_INVALID;
    return UAS_GOOD;
}

/* Part 4 5.6.2: the server proves its key by signing our certificate and
 * nonce; its certificate must be the one the channel is secured with. */
static uas_status check_server(uas_client *c, const uas_create_session_response *r)
{
    if (!uas__security_on(c) || !c->conn)
        return UAS_GOOD;
    uas_channel *ch = uas_conn_channel(c->conn);
    if (!uas_channel_peer_is(ch, r->server_certificate.data, r->server_certificate.length)) {
        uas_log(UAS_LOG_WARN, "client",
                "%s: CreateSession: serverCertificate is not the channel's certificate",
                c->cfg.endpoint_url);
        return UAS_BAD_CERTIFICATE_INVALID;
    }
    size_t cert_len = 0;
    const uint8_t *cert = uas_channel_local_cert(ch, &cert_len);
    size_t n = cert_len + sizeof(c->client_nonce);
    uint8_t *data = NULL;
    if (uas_channel_enhanced(ch)) {
        uas_status bst = bound_data(c, false, r->server_nonce.data,
                                    r->server_nonce.data ? r->server_nonce.length : 0, &data, &n);
        if (bst != UAS_GOOD)
            return bst;
    } else {
        data = uas_malloc(n);
        if (!data)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(data, cert, cert_len);
        memcpy(data + cert_len, c->client_nonce, sizeof(c->client_nonce));
    }
    uas_status st = uas_channel_verify(ch, data, n, r->server_signature.signature.data,
                                       r->server_signature.signature.length);
    uas_free(data, n);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "client", "%s: CreateSession: serverSignature invalid (%s)",
                c->cfg.endpoint_url, uas_status_name(st));
        return UAS_BAD_APPLICATION_SIGNATURE_INVALID;
    }
    return UAS_GOOD;
}

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)ud;
    if (c->state != UAS_CLIENT_SESSION_CREATING)
        return; /* closed meanwhile */
    if (st == UAS_GOOD && t == UAS_TYPE(ACTIVATE_SESSION_RESPONSE))
        st = keep_server_nonce(c, &((const uas_activate_session_response *)resp)->server_nonce);
    if (st == UAS_GOOD && t == UAS_TYPE(ACTIVATE_SESSION_RESPONSE))
        st = uas__ecdh_take(
            c, &((const uas_activate_session_response *)resp)->response_header.additional_header);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "client", "%s: ActivateSession failed: %s", c->cfg.endpoint_url,
                uas_status_name(st));
        uas__client_fail(c, st);
        return;
    }
    uas__client_set_state(c, UAS_CLIENT_SESSION_ACTIVE, UAS_GOOD);
}

static void on_created(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)ud;
    if (c->state != UAS_CLIENT_SESSION_CREATING)
        return;
    if (st == UAS_GOOD && t != UAS_TYPE(CREATE_SESSION_RESPONSE))
        st = UAS_BAD_UNKNOWN_RESPONSE;
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "client", "%s: CreateSession failed: %s", c->cfg.endpoint_url,
                uas_status_name(st));
        uas__client_fail(c, st);
        return;
    }
    const uas_create_session_response *r = resp;
    uas__session_forget(c);
    st = uas_copy(&r->authentication_token, &c->auth_token, UAS_TYPE(NODE_ID));
    if (st == UAS_GOOD)
        st = uas_copy(&r->session_id, &c->session_id, UAS_TYPE(NODE_ID));
    if (st == UAS_GOOD && uas__nodeid_is_null(&c->auth_token))
        st = UAS_BAD_SESSION_ID_INVALID;
    if (st == UAS_GOOD)
        st = check_server(c, r);
    if (st == UAS_GOOD)
        st = keep_server_nonce(c, &r->server_nonce);
    if (st == UAS_GOOD)
        st = uas__ecdh_take(c, &r->response_header.additional_header);
    if (st == UAS_GOOD)
        st = pick_policy(c, r);
    if (st == UAS_GOOD)
        st = send_activate(c, &c->auth_token, on_activated);
    if (st != UAS_GOOD && st != UAS_BAD_OUT_OF_MEMORY)
        uas_log(UAS_LOG_WARN, "client", "%s: session set-up failed: %s", c->cfg.endpoint_url,
                uas_status_name(st));
    if (st != UAS_GOOD)
        uas__client_fail(c, st);
}

void uas__session_start(uas_client *c)
{
    uas_random_bytes(c->client_nonce, sizeof(c->client_nonce));
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    uas_application_description *d = &req.client_description;
    d->application_uri = uas_string_from("urn:uastack:client");
    d->product_uri = uas_string_from("urn:uastack");
    d->application_name.locale = uas_string_from("en");
    d->application_name.text = uas_string_from("uastack client");
    d->application_type = UAS_APPLICATION_TYPE_CLIENT;
    req.endpoint_url = uas_string_from(c->cfg.endpoint_url);
    req.session_name = uas_string_from(c->cfg.session_name);
    req.client_nonce.length = sizeof(c->client_nonce);
    req.client_nonce.data = c->client_nonce;
    if (uas__security_on(c) && c->conn) {
        size_t n = 0;
        const uint8_t *cert = uas_channel_local_cert(uas_conn_channel(c->conn), &n);
        req.client_certificate.data = (uint8_t *)(uintptr_t)cert;
        req.client_certificate.length = n;
    }
    req.requested_session_timeout = c->cfg.session_timeout_ms;
    req.max_response_message_size = 0;
    uas_additional_parameters_type ap;
    uas_key_value_pair kv;
    uas_string uri;
    uas__ecdh_request(c, &req.request_header.additional_header, &ap, &kv, &uri);
    uas__client_set_state(c, UAS_CLIENT_SESSION_CREATING, UAS_GOOD);
    if (c->state != UAS_CLIENT_SESSION_CREATING || !c->conn)
        return;
    uas_status st =
        uas__client_send(c, &req, UAS_TYPE(CREATE_SESSION_REQUEST), on_created, NULL, NULL);
    if (st != UAS_GOOD)
        uas__client_fail(c, st);
}

static void on_session_closed(uas_client *c, void *ud, uas_status st, const void *resp,
                              const uas_type *t)
{
    (void)ud;
    (void)resp;
    (void)t;
    if (st != UAS_GOOD)
        uas_log(UAS_LOG_DEBUG, "client", "%s: CloseSession: %s", c->cfg.endpoint_url,
                uas_status_name(st));
    uas__session_forget(c);
    if (c->conn)
        uas_conn_close(c->conn, UAS_GOOD);
}

void uas__session_close(uas_client *c)
{
    uas_close_session_request req;
    memset(&req, 0, sizeof(req));
    req.delete_subscriptions = true;
    if (uas__client_send(c, &req, UAS_TYPE(CLOSE_SESSION_REQUEST), on_session_closed, NULL, NULL) !=
            UAS_GOOD &&
        c->conn)
        uas_conn_close(c->conn, UAS_GOOD);
}

/* ---- take-over ---- */

static void on_taken_over(uas_client *c, void *ud, uas_status st, const void *resp,
                          const uas_type *t)
{
    (void)ud;
    uas_client_response_fn cb = c->takeover_cb;
    void *cb_ud = c->takeover_ud;
    if (!c->takeover)
        return;
    c->takeover = false;
    /* The answer's nonce and ECDHKey serve the next activation, as after a
     * first one. */
    if (st == UAS_GOOD && t == UAS_TYPE(ACTIVATE_SESSION_RESPONSE)) {
        const uas_activate_session_response *r = resp;
        st = keep_server_nonce(c, &r->server_nonce);
        if (st == UAS_GOOD)
            st = uas__ecdh_take(c, &r->response_header.additional_header);
    }
    if (st == UAS_GOOD && c->conn) {
        /* The token policy stays the one the activation used. */
        char policy_id[sizeof(c->policy_id)];
        memcpy(policy_id, c->policy_id, sizeof(policy_id));
        uas__session_forget(c);
        memcpy(c->policy_id, policy_id, sizeof(policy_id));
        c->auth_token = c->takeover_token; /* moves the heap copy */
        memset(&c->takeover_token, 0, sizeof(c->takeover_token));
        uas__client_set_state(c, UAS_CLIENT_SESSION_ACTIVE, UAS_GOOD);
    } else {
        uas_clear(&c->takeover_token, UAS_TYPE(NODE_ID));
    }
    if (cb)
        cb(c, cb_ud, st, resp, t);
}

uas_status uas_client_activate_session(uas_client *c, const uas_nodeid *auth_token,
                                       uas_client_response_fn cb, void *ud)
{
    if (!auth_token || uas__nodeid_is_null(auth_token))
        return UAS_BAD_INVALID_ARGUMENT;
    if (c->deleted || c->closing || c->takeover || !c->conn ||
        (c->state != UAS_CLIENT_CHANNEL_OPEN && c->state != UAS_CLIENT_SESSION_ACTIVE))
        return UAS_BAD_INVALID_STATE;
    uas_status st = uas_copy(auth_token, &c->takeover_token, UAS_TYPE(NODE_ID));
    if (st != UAS_GOOD)
        return st;
    c->takeover = true;
    c->takeover_cb = cb;
    c->takeover_ud = ud;
    st = send_activate(c, &c->takeover_token, on_taken_over);
    if (st != UAS_GOOD && c->takeover) {
        c->takeover = false;
        uas_clear(&c->takeover_token, UAS_TYPE(NODE_ID));
    }
    return st;
}
