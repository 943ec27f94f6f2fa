/* The client object: configuration, the connection it owns, and its state
 * machine DISCONNECTED -> CONNECTING -> CHANNEL_OPEN [-> SESSION_CREATING
 * -> SESSION_ACTIVE] -> CLOSED. The connection layer (net.c) reports the
 * channel opening and the socket closing; everything else is requests.
 *
 * Callbacks into the application may delete the client, so every frame
 * that calls out holds c->busy and the memory goes when the last one ends
 * (the scheme net.c uses for connections). */
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>

#include "client_internal.h"

void uas_client_config_default(uas_client_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->create_session = true;
    cfg->session_name = "uastack client";
    cfg->session_timeout_ms = 60000;
    cfg->request_timeout_ms = 10000;
    cfg->max_inflight = 1024;
    uas_channel_config_default(&cfg->conn.channel, UAS_CHANNEL_CLIENT);
}

bool uas__nodeid_is_null(const uas_nodeid *id)
{
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        return id->ns == 0 && id->id.numeric == 0;
    case UAS_NODEID_STRING:
    case UAS_NODEID_BYTESTRING:
        return id->ns == 0 && id->id.string.length == 0;
    case UAS_NODEID_GUID: {
        static const uas_guid zero;
        return id->ns == 0 && memcmp(&id->id.guid, &zero, sizeof(zero)) == 0;
    }
    default:
        return false;
    }
}

static char *dup_cstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = uas_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void free_cstr(const char *s)
{
    if (s)
        uas_free((void *)(uintptr_t)s, strlen(s) + 1);
}

static void client_free(uas_client *c)
{
    ev_timer_stop(uas_loop_ev(c->loop), &c->timer);
    uas__session_forget(c);
    uas_clear(&c->takeover_token, UAS_TYPE(NODE_ID));
    uas__requests_free(c);
    uas__security_free(c);
    uas_arena_free(&c->arena);
    free_cstr(c->cfg.endpoint_url);
    free_cstr(c->cfg.session_name);
    uas_free(c, sizeof(*c));
}

void uas__client_release(uas_client *c)
{
    if (--c->busy == 0 && c->deleted)
        client_free(c);
}

void uas__client_set_state(uas_client *c, uas_client_state s, uas_status reason)
{
    if (c->state == s && s != UAS_CLIENT_CLOSED)
        return;
    c->state = s;
    if (s == UAS_CLIENT_CLOSED)
        c->reason = reason;
    if (s != UAS_CLIENT_CONNECTING)
        c->connect_deadline_ms = INT64_MAX;
    if (c->on_state && !c->deleted) {
        c->busy++;
        c->on_state(c, c->ud, s, reason);
        uas__client_release(c);
    }
}

void uas__client_fail(uas_client *c, uas_status st)
{
    uas_log(UAS_LOG_DEBUG, "client", "%s: closing: %s", c->cfg.endpoint_url, uas_status_name(st));
    if (c->conn)
        uas_conn_close(c->conn, st);
}

/* ---- connection events ---- */

static void on_conn_state(uas_conn *conn, uas_channel_state state, uas_status reason)
{
    (void)reason;
    uas_client *c = uas_conn_ud(conn);
    if (!c || state != UAS_CHANNEL_OPEN || c->state != UAS_CLIENT_CONNECTING)
        return;
    c->busy++;
    uas__client_set_state(c, UAS_CLIENT_CHANNEL_OPEN, UAS_GOOD);
    if (c->cfg.create_session && c->conn && !c->closing && !c->deleted)
        uas__session_start(c);
    uas__client_arm_timer(c);
    uas__client_release(c);
}

static void on_conn_close(uas_conn *conn, uas_status reason)
{
    uas_client *c = uas_conn_ud(conn);
    if (!c)
        return;
    c->busy++;
    c->reason_from_server = uas_channel_closed_by_peer(uas_conn_channel(conn));
    c->conn = NULL;
    if (reason == UAS_GOOD && !c->closing)
        reason = UAS_BAD_CONNECTION_CLOSED;
    uas__client_fail_all(c, UAS_BAD_CONNECTION_CLOSED);
    uas__client_set_state(c, UAS_CLIENT_CLOSED, reason);
    uas__client_arm_timer(c);
    uas__client_release(c);
}

static const uas_conn_handler conn_handler = {
    uas__client_on_message,
    uas__client_on_message_error,
    on_conn_state,
    on_conn_close,
};

/* ---- public API ---- */

uas_client *uas_client_new(uas_loop *loop, const uas_client_config *cfg,
                           uas_client_state_fn on_state, void *ud)
{
    if (!loop || !cfg || !cfg->endpoint_url || cfg->max_inflight == 0)
        return NULL;
    uas_client *c = uas_calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->loop = loop;
    c->cfg = *cfg;
    c->cfg.conn.channel.role = UAS_CHANNEL_CLIENT;
    if (c->cfg.max_inflight > UAS_CLIENT_MAX_INFLIGHT)
        c->cfg.max_inflight = UAS_CLIENT_MAX_INFLIGHT;
    if (c->cfg.request_timeout_ms == 0)
        c->cfg.request_timeout_ms = 10000;
    c->cfg.endpoint_url = dup_cstr(cfg->endpoint_url);
    c->cfg.session_name = dup_cstr(cfg->session_name ? cfg->session_name : "uastack client");
    c->on_state = on_state;
    c->ud = ud;
    c->state = UAS_CLIENT_DISCONNECTED;
    c->connect_deadline_ms = INT64_MAX;
    /* The arena cap follows the message size: decoded values take a few
     * times the bytes of their encoding. */
    size_t max_msg =
        c->cfg.conn.channel.max_message_size ? c->cfg.conn.channel.max_message_size : (16u << 20);
    uas_arena_init(&c->arena, c->arena_first, sizeof(c->arena_first), max_msg * 16);
    if (!c->cfg.endpoint_url || !c->cfg.session_name || uas__requests_init(c) != UAS_GOOD ||
        uas__security_init(c, cfg) != UAS_GOOD) {
        client_free(c);
        return NULL;
    }
    return c;
}

void uas_client_delete(uas_client *c)
{
    if (!c || c->deleted)
        return;
    c->deleted = true;
    c->busy++;
    uas__client_fail_all(c, UAS_BAD_CONNECTION_CLOSED);
    /* CLO goes out if the socket takes it at once (on_close then runs,
     * with no state callback since the client is deleted); a connection
     * that cannot flush now is dropped, so nothing outlives the client. */
    if (c->conn)
        uas_conn_close(c->conn, UAS_GOOD);
    if (c->conn) {
        uas_conn *conn = c->conn;
        c->conn = NULL;
        uas_conn_set_ud(conn, NULL);
        uas_conn_abort(conn, UAS_GOOD);
    }
    uas__client_release(c);
}

int64_t uas__client_now_ms(uas_client *c)
{
    struct ev_loop *ev = uas_loop_ev(c->loop);
    if (ev_depth(ev) == 0)
        ev_now_update(ev);
    return uas_loop_now_ms(c->loop);
}

uas_status uas_client_connect(uas_client *c)
{
    if (c->deleted || (c->state != UAS_CLIENT_DISCONNECTED && c->state != UAS_CLIENT_CLOSED))
        return UAS_BAD_INVALID_STATE;
    c->closing = false;
    c->reason = UAS_GOOD;
    c->reason_from_server = false;
    uas__session_forget(c);
    uas_status st = UAS_GOOD;
    c->busy++;
    uas__client_set_state(c, UAS_CLIENT_CONNECTING, UAS_GOOD);
    if (c->deleted || c->state != UAS_CLIENT_CONNECTING) {
        uas__client_release(c); /* the state callback changed its mind */
        return UAS_BAD_INVALID_STATE;
    }
    /* The server's certificate is judged before anything is sent. */
    st = uas__security_check_server(c);
    if (st != UAS_GOOD) {
        uas__client_set_state(c, UAS_CLIENT_CLOSED, st);
        uas__client_release(c);
        return st;
    }
    uas_conn *conn =
        uas_conn_connect(c->loop, c->cfg.endpoint_url, &c->cfg.conn, &conn_handler, c, &st);
    if (!conn) {
        uas__client_set_state(c, UAS_CLIENT_CLOSED, st);
        uas__client_release(c);
        return st;
    }
    c->conn = conn;
    /* TCP, HEL and OPN together get one request timeout. */
    c->connect_deadline_ms = uas__client_now_ms(c) + c->cfg.request_timeout_ms;
    uas__client_arm_timer(c);
    uas__client_release(c);
    return UAS_GOOD;
}

void uas_client_disconnect(uas_client *c)
{
    if (c->deleted || c->closing || !c->conn)
        return;
    c->closing = true;
    c->busy++;
    if (c->state == UAS_CLIENT_SESSION_ACTIVE)
        uas__session_close(c); /* closes the connection once answered */
    else
        uas_conn_close(c->conn, UAS_GOOD);
    uas__client_release(c);
}

uas_client_state uas_client_get_state(const uas_client *c)
{
    return c->state;
}

bool uas_client_reason_from_server(const uas_client *c)
{
    return c->reason_from_server;
}

uas_status uas_client_get_reason(const uas_client *c)
{
    return c->reason;
}

const uas_nodeid *uas_client_auth_token(const uas_client *c)
{
    return &c->auth_token;
}
