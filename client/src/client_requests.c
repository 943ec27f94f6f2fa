/* Requests in flight: a slot table preallocated up to max_inflight (grown
 * by doubling, never shrunk, so the steady state does not allocate), one
 * deadline list and one ev_timer per client, and the dispatch of answers.
 *
 * The request id on the wire is (generation << shift) | slot, so an answer
 * finds its slot with a mask and proves it is the current use of the slot
 * by the whole id: a late answer to a request that timed out is dropped.
 * Every request of a client has the same timeout, so deadlines are in send
 * order and the list is a FIFO: insert at the tail, expire from the head,
 * unlink from anywhere in O(1). */
#include <string.h>

#include <ua/codec.h>
#include <ua/log.h>

#include "client_internal.h"

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents);

uas_status uas__requests_init(uas_client *c)
{
    uint32_t cap = 1;
    c->shift = 0;
    while (cap < c->cfg.max_inflight) {
        cap <<= 1;
        c->shift++;
    }
    c->nslots = cap < UAS_CLIENT_FIRST_SLOTS ? cap : UAS_CLIENT_FIRST_SLOTS;
    c->slots = uas_calloc(c->nslots, sizeof(uas_pending));
    if (!c->slots)
        return UAS_BAD_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < c->nslots; i++)
        c->slots[i].next = i + 1 < c->nslots ? (int32_t)i + 1 : UAS_CLIENT_NONE;
    c->free_head = 0;
    c->head = c->tail = UAS_CLIENT_NONE;
    ev_timer_init(&c->timer, on_timer, 0.0, 0.0);
    c->timer.data = c;
    return UAS_GOOD;
}

void uas__requests_free(uas_client *c)
{
    if (c->slots)
        uas_free(c->slots, c->nslots * sizeof(uas_pending));
    c->slots = NULL;
}

/* Doubles the table (up to 1 << shift slots). */
static bool grow(uas_client *c)
{
    uint32_t max = 1u << c->shift;
    if (c->nslots >= max)
        return false;
    uint32_t n = c->nslots * 2 < max ? c->nslots * 2 : max;
    uas_pending *s =
        uas_realloc(c->slots, c->nslots * sizeof(uas_pending), n * sizeof(uas_pending));
    if (!s)
        return false;
    memset(s + c->nslots, 0, (n - c->nslots) * sizeof(uas_pending));
    for (uint32_t i = c->nslots; i < n; i++)
        s[i].next = i + 1 < n ? (int32_t)i + 1 : c->free_head;
    c->free_head = (int32_t)c->nslots;
    c->slots = s;
    c->nslots = n;
    return true;
}

static int32_t slot_alloc(uas_client *c)
{
    if (c->inflight >= c->cfg.max_inflight)
        return UAS_CLIENT_NONE;
    if (c->free_head == UAS_CLIENT_NONE && !grow(c))
        return UAS_CLIENT_NONE;
    int32_t i = c->free_head;
    uas_pending *p = &c->slots[i];
    c->free_head = p->next;
    uint32_t gen_mask = c->shift == 0 ? UINT32_MAX : (UINT32_MAX >> c->shift);
    p->gen = (p->gen + 1) & gen_mask;
    if (p->gen == 0)
        p->gen = 1; /* id 0 is never used */
    p->id = (p->gen << c->shift) | (uint32_t)i;
    p->prev = p->next = UAS_CLIENT_NONE;
    c->inflight++;
    return i;
}

static void slot_free(uas_client *c, int32_t i)
{
    uas_pending *p = &c->slots[i];
    p->id = 0;
    p->cb = NULL;
    p->ud = NULL;
    p->next = c->free_head;
    c->free_head = i;
    c->inflight--;
}

static void list_append(uas_client *c, int32_t i)
{
    uas_pending *p = &c->slots[i];
    p->prev = c->tail;
    p->next = UAS_CLIENT_NONE;
    if (c->tail != UAS_CLIENT_NONE)
        c->slots[c->tail].next = i;
    else
        c->head = i;
    c->tail = i;
}

static void list_unlink(uas_client *c, int32_t i)
{
    uas_pending *p = &c->slots[i];
    if (p->prev != UAS_CLIENT_NONE)
        c->slots[p->prev].next = p->next;
    else
        c->head = p->next;
    if (p->next != UAS_CLIENT_NONE)
        c->slots[p->next].prev = p->prev;
    else
        c->tail = p->prev;
}

/* The slot of an in-flight request id, or NONE. */
static int32_t slot_find(uas_client *c, uint32_t id)
{
    uint32_t i = c->shift == 0 ? 0 : id & ((1u << c->shift) - 1);
    if (id == 0 || i >= c->nslots || c->slots[i].id != id)
        return UAS_CLIENT_NONE;
    return (int32_t)i;
}

/* Unlinks and frees slot i; what is needed to answer it goes to *out. */
static void take(uas_client *c, int32_t i, uas_pending *out)
{
    *out = c->slots[i];
    list_unlink(c, i);
    slot_free(c, i);
}

static void answer(uas_client *c, const uas_pending *p, uas_status st, const void *resp,
                   const uas_type *t)
{
    c->busy++;
    p->cb(c, p->ud, st, resp, t);
    uas__client_release(c);
}

/* ---- timer ---- */

void uas__client_arm_timer(uas_client *c)
{
    struct ev_loop *ev = uas_loop_ev(c->loop);
    int64_t next = c->connect_deadline_ms;
    if (c->head != UAS_CLIENT_NONE && c->slots[c->head].deadline_ms < next)
        next = c->slots[c->head].deadline_ms;
    if (next == INT64_MAX || c->deleted) {
        ev_timer_stop(ev, &c->timer);
        return;
    }
    /* Lazy: an earlier armed time is simply re-checked when it fires. */
    if (ev_is_active(&c->timer))
        return;
    double after = (double)(next - uas_loop_now_ms(c->loop)) / 1000.0;
    ev_timer_set(&c->timer, after > 0.001 ? after : 0.001, 0.0);
    ev_timer_start(ev, &c->timer);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_client *c = w->data;
    int64_t now = uas_loop_now_ms(c->loop);
    c->busy++;
    if (c->state == UAS_CLIENT_CONNECTING && now >= c->connect_deadline_ms) {
        c->connect_deadline_ms = INT64_MAX;
        uas__client_fail(c, UAS_BAD_TIMEOUT);
    }
    while (!c->deleted && c->head != UAS_CLIENT_NONE && c->slots[c->head].deadline_ms <= now) {
        uas_pending p;
        take(c, c->head, &p);
        answer(c, &p, UAS_BAD_TIMEOUT, NULL, NULL);
    }
    if (!c->deleted)
        uas__client_arm_timer(c);
    uas__client_release(c);
}

/* ---- sending ---- */

static bool is_discovery(const uas_type *t)
{
#ifdef UAS_MINIMAL /* the profile carries no descriptors of the other three */
    return t == UAS_TYPE(GET_ENDPOINTS_REQUEST) || t == UAS_TYPE(FIND_SERVERS_REQUEST);
#else
    return t == UAS_TYPE(GET_ENDPOINTS_REQUEST) || t == UAS_TYPE(FIND_SERVERS_REQUEST) ||
           t == UAS_TYPE(FIND_SERVERS_ON_NETWORK_REQUEST) ||
           t == UAS_TYPE(REGISTER_SERVER_REQUEST) || t == UAS_TYPE(REGISTER_SERVER2_REQUEST);
#endif
}

uas_status uas__client_send(uas_client *c, void *req, const uas_type *req_type,
                            uas_client_response_fn cb, void *ud, uint32_t *id)
{
    if (!c->conn)
        return UAS_BAD_CONNECTION_CLOSED;
    int32_t i = slot_alloc(c);
    if (i == UAS_CLIENT_NONE)
        return UAS_BAD_TOO_MANY_OPERATIONS;
    uas_pending *p = &c->slots[i];
    uint32_t rid = p->id;
    p->req_type = req_type;
    p->cb = cb;
    p->ud = ud;
    /* The header is ours for the encoding only; the caller's comes back. */
    uas_request_header *h = req; /* the first member of every request */
    uas_request_header saved = *h;
    if (uas__nodeid_is_null(&h->authentication_token))
        h->authentication_token = c->auth_token;
    h->timestamp = uas_datetime_now();
    h->request_handle = ++c->next_handle;
    h->timeout_hint = c->cfg.request_timeout_ms;
    /* The send may close the connection and answer the other requests
     * (whose callbacks may send, grow the table or delete the client):
     * this one is not in the deadline list yet, so it is left alone. */
    c->busy++;
    uas_status st = uas_conn_send(c->conn, rid, req, req_type);
    *h = saved;
    if (st == UAS_GOOD && (!c->conn || c->deleted))
        st = UAS_BAD_CONNECTION_CLOSED;
    if (st != UAS_GOOD) {
        slot_free(c, i);
        uas__client_release(c);
        return st;
    }
    c->slots[i].deadline_ms = uas__client_now_ms(c) + c->cfg.request_timeout_ms;
    list_append(c, i);
    uas__client_arm_timer(c);
    if (id)
        *id = rid;
    uas__client_release(c);
    return UAS_GOOD;
}

uas_status uas__client_request_id(uas_client *c, void *req, const uas_type *req_type,
                                  uas_client_response_fn cb, void *ud, uint32_t *id)
{
    if (!c || !req || !req_type || !cb || req_type->kind != UAS_KIND_STRUCT ||
        req_type->member_count == 0 ||
        uas_member_type(&req_type->members[0]) != UAS_TYPE(REQUEST_HEADER))
        return UAS_BAD_INVALID_ARGUMENT;
    if (c->deleted || c->closing)
        return UAS_BAD_INVALID_STATE;
    switch (c->state) {
    case UAS_CLIENT_CHANNEL_OPEN:
    case UAS_CLIENT_SESSION_CREATING:
    case UAS_CLIENT_SESSION_ACTIVE:
        break;
    case UAS_CLIENT_CLOSED:
        return UAS_BAD_CONNECTION_CLOSED;
    default:
        return UAS_BAD_INVALID_STATE;
    }
    const uas_request_header *h = req;
    if (c->state != UAS_CLIENT_SESSION_ACTIVE && !is_discovery(req_type) &&
        uas__nodeid_is_null(&h->authentication_token))
        return UAS_BAD_INVALID_STATE;
    return uas__client_send(c, req, req_type, cb, ud, id);
}

uas_status uas_client_request(uas_client *c, void *req, const uas_type *req_type,
                              uas_client_response_fn cb, void *ud)
{
    return uas__client_request_id(c, req, req_type, cb, ud, NULL);
}

void uas__client_cancel(uas_client *c, uint32_t id)
{
    int32_t i = slot_find(c, id);
    if (i == UAS_CLIENT_NONE)
        return;
    uas_pending p;
    take(c, i, &p);
    uas__client_arm_timer(c);
}

void uas__client_fail_all(uas_client *c, uas_status status)
{
    while (c->head != UAS_CLIENT_NONE) {
        uas_pending p;
        take(c, c->head, &p);
        answer(c, &p, status, NULL, NULL);
    }
    uas__client_arm_timer(c);
}

/* ---- answers ---- */

/* "XxxResponse" answers "XxxRequest". */
static bool answers(const uas_type *req, const uas_type *resp)
{
    size_t n = strlen(req->name);
    if (n < 7 || strcmp(req->name + n - 7, "Request") != 0)
        return false;
    return strncmp(req->name, resp->name, n - 7) == 0 &&
           strcmp(resp->name + n - 7, "Response") == 0;
}

void uas__client_on_message(uas_conn *conn, uint32_t request_id, const uint8_t *body, size_t len)
{
    uas_client *c = uas_conn_ud(conn);
    if (!c)
        return;
    int32_t i = slot_find(c, request_id);
    if (i == UAS_CLIENT_NONE) {
        uas_log(UAS_LOG_DEBUG, "client", "answer to unknown request %u dropped", request_id);
        return;
    }
    uas_pending p;
    take(c, i, &p);
    uas_arena_reset(&c->arena);
    uas_decoder d;
    uas_decoder_init(&d, body, len, &c->arena,
                     c->cfg.conn.channel.decode_limits ? c->cfg.conn.channel.decode_limits
                                                       : &uas_limits_default);
    /* Strings stay in the receive buffer: the callback runs right now. */
    d.zero_copy = true;
    uas_nodeid type_id;
    const uas_type *t = NULL;
    uas_status st = uas_decode(&d, &type_id, &uas_types[UAS_TYPES_NODE_ID]);
    if (st == UAS_GOOD) {
        if (type_id.ns == 0 && type_id.kind == UAS_NODEID_NUMERIC)
            t = uas_type_by_encoding_id(type_id.id.numeric);
        if (!t || (t != UAS_TYPE(SERVICE_FAULT) && !answers(p.req_type, t)))
            st = UAS_BAD_UNKNOWN_RESPONSE;
    }
    void *resp = NULL;
    if (st == UAS_GOOD) {
        resp = uas_arena_alloc(&c->arena, t->size);
        st = resp ? uas_decode(&d, resp, t) : UAS_BAD_OUT_OF_MEMORY;
        if (st != UAS_GOOD && st != UAS_BAD_OUT_OF_MEMORY)
            st = st == UAS_BAD_ENCODING_LIMITS_EXCEEDED ? st : UAS_BAD_DECODING_ERROR;
    }
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "client", "%s: undecodable answer to a %s: %s", c->cfg.endpoint_url,
                p.req_type->name, uas_status_name(st));
        answer(c, &p, st, NULL, NULL);
        return;
    }
    st = ((const uas_response_header *)resp)->service_result;
    if (t == UAS_TYPE(SERVICE_FAULT) && !uas_is_bad(st))
        st = UAS_BAD_UNEXPECTED_ERROR; /* a fault must carry a Bad result */
    answer(c, &p, st, resp, t);
}

void uas__client_on_message_error(uas_conn *conn, uint32_t request_id, uas_status status)
{
    uas_client *c = uas_conn_ud(conn);
    if (!c)
        return;
    int32_t i = slot_find(c, request_id);
    if (i == UAS_CLIENT_NONE)
        return;
    uas_pending p;
    take(c, i, &p);
    answer(c, &p, status, NULL, NULL);
}
