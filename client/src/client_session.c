/* Session services of the client: CreateSession + ActivateSession
 * (anonymous) once the channel is open, CloseSession on disconnect, and the
 * take-over of an existing session on a new channel (Part 4, 5.6). */
#include <stdio.h>
#include <string.h>

#include <ua/log.h>

#include "client_internal.h"

#define POLICY_NONE "http://opcfoundation.org/UA/SecurityPolicy#None"

void uas__session_forget(uas_client *c)
{
    uas_clear(&c->auth_token, UAS_TYPE(NODE_ID));
    uas_clear(&c->session_id, UAS_TYPE(NODE_ID));
    c->policy_id[0] = 0;
}

/* The policy id of the anonymous UserTokenPolicy of a None endpoint (the
 * only security this client speaks yet), or "anonymous". */
static void pick_policy(uas_client *c, const uas_create_session_response *r)
{
    snprintf(c->policy_id, sizeof(c->policy_id), "anonymous");
    for (size_t i = 0; i < r->server_endpoints_count; i++) {
        const uas_endpoint_description *e = &r->server_endpoints[i];
        if (e->security_mode != UAS_MESSAGE_SECURITY_MODE_NONE ||
            !uas_string_eq_cstr(&e->security_policy_uri, POLICY_NONE))
            continue;
        for (size_t k = 0; k < e->user_identity_tokens_count; k++) {
            const uas_user_token_policy *p = &e->user_identity_tokens[k];
            if (p->token_type != UAS_USER_TOKEN_TYPE_ANONYMOUS || !p->policy_id.data ||
                p->policy_id.length >= sizeof(c->policy_id))
                continue;
            memcpy(c->policy_id, p->policy_id.data, p->policy_id.length);
            c->policy_id[p->policy_id.length] = 0;
            return;
        }
    }
}

static uas_status send_activate(uas_client *c, const uas_nodeid *token, uas_client_response_fn cb)
{
    uas_anonymous_identity_token anon;
    anon.policy_id = uas_string_from(c->policy_id[0] ? c->policy_id : "anonymous");
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = *token;
    req.user_identity_token.encoding = UAS_EXTOBJ_DECODED;
    req.user_identity_token.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
    req.user_identity_token.content.decoded.data = &anon;
    return uas__client_send(c, &req, UAS_TYPE(ACTIVATE_SESSION_REQUEST), cb, NULL, NULL);
}

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)ud;
    (void)resp;
    (void)t;
    if (c->state != UAS_CLIENT_SESSION_CREATING)
        return; /* closed meanwhile */
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
    if (st == UAS_GOOD) {
        pick_policy(c, r);
        st = send_activate(c, &c->auth_token, on_activated);
    }
    if (st != UAS_GOOD)
        uas__client_fail(c, st);
}

void uas__session_start(uas_client *c)
{
    uint8_t nonce[32];
    uas_random_bytes(nonce, sizeof(nonce));
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
    req.client_nonce.length = sizeof(nonce);
    req.client_nonce.data = nonce;
    req.requested_session_timeout = c->cfg.session_timeout_ms;
    req.max_response_message_size = 0;
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
    if (st == UAS_GOOD && c->conn) {
        uas__session_forget(c);
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
