/* From a received message to its response: decode the request into the
 * loop's arena (strings point into the receive buffer), find the service by
 * encoding id, resolve the session through the connection's cache, run the
 * handler, encode the response straight into chunk buffers. Errors that
 * concern the request become ServiceFaults; only transport errors close the
 * connection. */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <ua/membudget.h>

#include "lockdef.h"
#include "dispatch.h"
#include "lock_stats.h"
#include "svc_subscription.h"
#include "workpool.h"

enum { CACHE = 8 };

typedef struct parked parked;

/* Server-side state of one connection. */
struct uas_sconn {
    uas_sloop *loop;
    uas_conn *conn;
    uas_sconn *prev, *next; /* the loop's connections */
    uint32_t channel_id;
    uas_session *cache[CACHE]; /* sessions bound to this channel, one ref each */
    size_t ncache;
    int64_t last_message_ms; /* loop time of the last request (or of the accept) */
    uint64_t address_key;    /* its count in conn_limits; 0: none */
    parked *parked;          /* its work on the pool; at most one: the channel is held */
};

static void cache_drop(uas_sconn *sc, size_t i)
{
    uas_session_unref(sc->loop->server, sc->cache[i]);
    sc->cache[i] = sc->cache[--sc->ncache];
}

void uas_sconn_cache_add(uas_sconn *sc, uas_session *se)
{
    for (size_t i = 0; i < sc->ncache; i++)
        if (sc->cache[i] == se)
            return;
    if (sc->ncache == CACHE)
        cache_drop(sc, 0); /* rare: more sessions on one channel than cached */
    uas_session_ref(se);
    sc->cache[sc->ncache++] = se;
}

/* The session for a token as seen from this connection, with a reference. */
static uas_session *session_lookup(uas_sconn *sc, const uas_nodeid *token)
{
    for (size_t i = 0; i < sc->ncache; i++) {
        uas_session *se = sc->cache[i];
        if (uas_session_token_eq(&se->auth_token, token)) {
            if (atomic_load(&se->closed)) {
                cache_drop(sc, i);
                return NULL;
            }
            uas_session_ref(se);
            return se;
        }
    }
    return uas_sessions_find(sc->loop->server->sessions, token);
}

static void fault(uas_server *s, uas_conn *c, uint32_t request_id, uint32_t handle,
                  uas_status result)
{
    uas_service_fault f;
    memset(&f, 0, sizeof(f));
    f.response_header.timestamp = uas_datetime_now();
    f.response_header.request_handle = handle;
    f.response_header.service_result = result;
    atomic_fetch_add_explicit(&s->counters.rejected_requests, 1, memory_order_relaxed);
    (void)uas_conn_send(c, request_id, &f, UAS_TYPE(SERVICE_FAULT));
}

static void send_fault(uas_sconn *sc, uint32_t request_id, uint32_t handle, uas_status result)
{
    fault(sc->loop->server, sc->conn, request_id, handle, result);
}

void uas_dispatch_respond(uas_server *s, uas_conn *c, uint32_t request_id, const void *resp,
                          const uas_type *t)
{
    const uas_response_header *rh = resp; /* the first member of every response */
    if (uas_is_bad(rh->service_result)) {
        fault(s, c, request_id, rh->request_handle, rh->service_result);
        return;
    }
    uas_status st = uas_conn_send(c, request_id, resp, t);
    /* A response that failed before any chunk left is answered with a
     * ServiceFault; one cut short by an abort chunk is already answered. */
    if ((st == UAS_BAD_RESPONSE_TOO_LARGE || st == UAS_BAD_ENCODING_LIMITS_EXCEEDED ||
         st == UAS_BAD_ENCODING_ERROR) &&
        !uas_channel_last_send_aborted(uas_conn_channel(c)))
        fault(s, c, request_id, rh->request_handle,
              st == UAS_BAD_ENCODING_ERROR ? st : UAS_BAD_RESPONSE_TOO_LARGE);
}

/* A None channel on a server that offers no None endpoint exists for the
 * discovery services only (Part 4, 5.4 and Part 6, 6.1: GetEndpoints and
 * FindServers work without security, so a client can learn the
 * certificate it needs); every other service on it is refused. */
static bool discovery_only(uas_sconn *sc, const uas_service *svc)
{
    return !sc->loop->server->none_offered && svc->fn != uas_svc_get_endpoints &&
           svc->fn != uas_svc_find_servers &&
           !uas_security_policy_signature_uri(uas_channel_policy(uas_conn_channel(sc->conn)));
}

/* One request: decode, find the service and session, run the handler,
 * respond. work_done: the request runs again after its parked work. */
static void handle(uas_conn *c, uint32_t request_id, const uint8_t *body, size_t len,
                   void *work_done)
{
    uas_sconn *sc = uas_conn_ud(c);
    uas_sloop *l = sc->loop;
    uas_server *s = l->server;
    sc->last_message_ms = uas_loop_now_ms(l->loop);
    uas_arena_reset(&l->arena);
    uas_decoder d;
    uas_decoder_init(&d, body, len, &l->arena, &s->cfg.decode_limits);
    d.zero_copy = true;

    uas_nodeid type_id;
    uas_status st = uas_decode(&d, &type_id, &uas_types[UAS_TYPES_NODE_ID]);
    if (st != UAS_GOOD) {
        (void)send_fault(sc, request_id, 0, UAS_BAD_DECODING_ERROR);
        return;
    }
    const uas_service *svc = type_id.ns == 0 && type_id.kind == UAS_NODEID_NUMERIC
                                 ? uas_service_find(type_id.id.numeric)
                                 : NULL;
    if (svc && discovery_only(sc, svc)) {
        uas_request_header hdr;
        uint32_t handle = 0;
        if (uas_decode(&d, &hdr, UAS_TYPE(REQUEST_HEADER)) == UAS_GOOD)
            handle = hdr.request_handle;
        UAS_LOG_LIMITED(UAS_LOG_INFO, "channel",
                        "channel %u: %s refused, None is for discovery only on this server",
                        sc->channel_id, svc->request->name);
        atomic_fetch_add(&s->counters.security_rejected_requests, 1);
        if (svc->fn == uas_svc_create_session) /* RejectedSessionCount, Part 5 */
            atomic_fetch_add(&s->counters.rejected_sessions, 1);
        (void)send_fault(sc, request_id, handle, UAS_BAD_SECURITY_POLICY_REJECTED);
        return;
    }
    if (!svc) {
        /* Every request starts with a RequestHeader: answer with its handle. */
        uas_request_header hdr;
        uint32_t handle = 0;
        if (uas_decode(&d, &hdr, UAS_TYPE(REQUEST_HEADER)) == UAS_GOOD)
            handle = hdr.request_handle;
        (void)send_fault(sc, request_id, handle, UAS_BAD_SERVICE_UNSUPPORTED);
        return;
    }
    void *req = uas_arena_alloc(&l->arena, svc->request->size);
    void *resp = uas_arena_calloc(&l->arena, 1, svc->response->size);
    if (!req || !resp) {
        (void)send_fault(sc, request_id, 0, UAS_BAD_OUT_OF_MEMORY);
        return;
    }
    st = uas_decode(&d, req, svc->request);
    if (st != UAS_GOOD) {
        /* Too-large arrays/strings keep their status; anything else is a
         * malformed request. */
        (void)send_fault(sc, request_id, 0,
                         st == UAS_BAD_ENCODING_LIMITS_EXCEEDED || st == UAS_BAD_OUT_OF_MEMORY
                             ? st
                             : UAS_BAD_DECODING_ERROR);
        return;
    }
    const uas_request_header *hdr = req; /* the first member of every request */
    uas_request_ctx ctx = {
        .server = s,
        .loop = l,
        .conn = c,
        .sconn = sc,
        .channel_id = sc->channel_id,
        .arena = &l->arena,
        .request_id = request_id,
        .now_ms = uas_monotonic_ms(),
        .now = uas_datetime_now(),
        .body = body,
        .body_len = len,
        .work_done = work_done,
    };
    uas_session *se = NULL;
    if (svc->session != SVC_NO_SESSION) {
        se = session_lookup(sc, &hdr->authentication_token);
        if (!se)
            st = UAS_BAD_SESSION_ID_INVALID;
        else if (svc->session == SVC_SESSION_ACTIVE && se->channel_id != sc->channel_id)
            st = UAS_BAD_SECURE_CHANNEL_ID_INVALID;
        else if (svc->session == SVC_SESSION_ACTIVE && !se->activated)
            st = UAS_BAD_SESSION_NOT_ACTIVATED;
        if (st != UAS_GOOD) {
            if (se)
                uas_session_unref(s, se);
            (void)send_fault(sc, request_id, hdr->request_handle, st);
            return;
        }
        UAS_LOCK(&se->lock, UAS_LOCK_SESSION);
        if (atomic_load(&se->closed)) {
            UAS_UNLOCK(&se->lock);
            uas_session_unref(s, se);
            (void)send_fault(sc, request_id, hdr->request_handle, UAS_BAD_SESSION_CLOSED);
            return;
        }
        atomic_store_explicit(&se->last_activity_ms, ctx.now_ms, memory_order_relaxed);
        ctx.session = se;
    }
    uas__current_session = se;
    svc->fn(&ctx, req, resp);
    uas__current_session = NULL;
    if (se) {
        if (se->channel_id == sc->channel_id && !atomic_load(&se->closed))
            uas_sconn_cache_add(sc, se);
        if (atomic_load_explicit(&se->quota_held, memory_order_relaxed) && se->activated)
            uas_sessions_activated(s->sessions, se);
        UAS_UNLOCK(&se->lock);
        uas_session_unref(s, se);
    }
    if (ctx.no_response)
        return;                     /* answered later, by the service itself (Publish) */
    uas_response_header *rh = resp; /* the first member of every response */
    rh->timestamp = ctx.now;
    rh->request_handle = hdr->request_handle;
    uas_dispatch_respond(s, c, request_id, resp, svc->response);
}

static void on_message(uas_conn *c, uint32_t request_id, const uint8_t *body, size_t len)
{
    handle(c, request_id, body, len, NULL);
}

/* ---- parked requests: work on the pool, resumed on the loop ---- */

struct parked {
    uas_work work; /* first: the pool's item */
    uas_sloop *loop;
    uas_sconn *sc;         /* NULL once the connection closed (loop thread only) */
    atomic_bool cancelled; /* the connection closed: skip the work if not begun */
    uas_channel_job *cjob; /* an OPN's asymmetric work, or a service's: */
    void *job;
    void (*run)(void *job);
    void (*free)(void *job);
    uint32_t request_id;
    size_t body_len;
    uint8_t *body; /* the request, decoded again on resumption */
};

static void parked_free(parked *p)
{
    if (p->cjob)
        uas_channel_job_free(p->cjob);
    if (p->job)
        p->free(p->job);
    if (p->body)
        uas_free(p->body, p->body_len ? p->body_len : 1);
    uas_free(p, sizeof(*p));
}

static void parked_run(uas_work *w)
{
    parked *p = (parked *)w;
    if (atomic_load_explicit(&p->cancelled, memory_order_acquire))
        return;
    if (p->cjob)
        uas_channel_job_run(p->cjob);
    else
        p->run(p->job);
}

static void parked_complete(uas_work *w)
{
    parked *p = (parked *)w;
    uas_work_inbox_post(p->loop->inbox, w);
}

static void parked_discard(uas_work *w)
{
    parked_free((parked *)w);
}

static void replay(uas_conn *c, void *arg)
{
    parked *p = arg;
    handle(c, p->request_id, p->body, p->body_len, p->job);
}

/* A parked item came back to its loop. */
void uas_dispatch_work_done(uas_work *w)
{
    parked *p = (parked *)w;
    uas_sconn *sc = p->sc;
    if (!sc) {
        parked_free(p); /* the client left: nothing to answer */
        return;
    }
    sc->parked = NULL;
    p->sc = NULL;
    uas_conn *c = sc->conn; /* sc may go during the calls below; c stays until they return */
    if (p->cjob) {
        uas_channel_job *job = p->cjob;
        p->cjob = NULL;
        parked_free(p);
        uas_conn_job_done(c, job);
        return;
    }
    uas_conn_resume(c, replay, p);
    parked_free(p);
}

static parked *parked_new(uas_sconn *sc)
{
    parked *p = uas_calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->work.run = parked_run;
    p->work.complete = parked_complete;
    p->work.discard = parked_discard;
    p->loop = sc->loop;
    p->sc = sc;
    atomic_init(&p->cancelled, false);
    return p;
}

/* The channel's offload hook: an OPN's asymmetric work goes to the pool. */
static uas_status offload_opn(void *ud, uas_channel_job *job)
{
    uas_sconn *sc = ud;
    parked *p = parked_new(sc);
    if (!p)
        return UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
    p->cjob = job;
    if (uas_workpool_submit(sc->loop->server->pool, &p->work) != UAS_GOOD) {
        p->cjob = NULL; /* the channel frees its job */
        parked_free(p);
        return UAS_BAD_TCP_SERVER_TOO_BUSY;
    }
    sc->parked = p;
    return UAS_GOOD;
}

uas_status uas_request_park(uas_request_ctx *ctx, void *job, void (*run)(void *job),
                            void (*free)(void *job))
{
    uas_sconn *sc = ctx->sconn;
    if (!sc || !ctx->conn || !ctx->server->pool || !ctx->body)
        return UAS_BAD_NOT_SUPPORTED;
    parked *p = parked_new(sc);
    uint8_t *body = p ? uas_malloc(ctx->body_len ? ctx->body_len : 1) : NULL;
    if (!body) {
        if (p)
            uas_free(p, sizeof(*p));
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    memcpy(body, ctx->body, ctx->body_len);
    p->body = body;
    p->body_len = ctx->body_len;
    p->request_id = ctx->request_id;
    p->job = job;
    p->run = run;
    p->free = free;
    uas_status st = uas_workpool_submit(ctx->server->pool, &p->work);
    if (st != UAS_GOOD) {
        p->job = NULL; /* stays the caller's */
        parked_free(p);
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    sc->parked = p;
    ctx->no_response = true;
    uas_conn_hold(ctx->conn);
    return UAS_GOOD;
}

static void on_message_error(uas_conn *c, uint32_t request_id, uas_status status)
{
    uas_sconn *sc = uas_conn_ud(c);
    (void)send_fault(sc, request_id, 0, status);
}

/* A channel closed by a failed security check (signature, AEAD tag,
 * sequence number, ephemeral key, certificate) is worth a warning: it is an
 * attack or a misconfigured peer. Rate-limited, since a stranger can make
 * as many as it likes. */
static bool security_failure(uas_status reason)
{
    switch (reason) {
    case UAS_BAD_SECURITY_CHECKS_FAILED:
    case UAS_BAD_NONCE_INVALID:
    case UAS_BAD_SECURITY_POLICY_REJECTED:
    case UAS_BAD_SECURITY_MODE_REJECTED:
    case UAS_BAD_CERTIFICATE_INVALID:
    case UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED:
    case UAS_BAD_CERTIFICATE_UNTRUSTED:
    case UAS_BAD_CERTIFICATE_TIME_INVALID:
    case UAS_BAD_CERTIFICATE_REVOKED:
        return true;
    default:
        return false;
    }
}

static void on_state(uas_conn *c, uas_channel_state state, uas_status reason)
{
    uas_sconn *sc = uas_conn_ud(c);
    if (state == UAS_CHANNEL_CLOSED && security_failure(reason))
        UAS_LOG_LIMITED(UAS_LOG_WARN, "channel", "channel %u closed: %s",
                        uas_channel_get_id(uas_conn_channel(c)), uas_status_name(reason));
    else if (state == UAS_CHANNEL_CLOSED && uas_is_bad(reason) &&
             reason != UAS_BAD_CONNECTION_CLOSED)
        uas_log(UAS_LOG_INFO, "channel", "channel %u closed: %s",
                uas_channel_get_id(uas_conn_channel(c)), uas_status_name(reason));
    (void)sc;
}

static void on_close(uas_conn *c, uas_status reason)
{
    (void)reason;
    uas_sconn *sc = uas_conn_ud(c);
    if (sc->parked) {
        /* The work finishes (or is skipped) on its own; its result is
         * dropped when it comes back. */
        atomic_store_explicit(&sc->parked->cancelled, true, memory_order_release);
        sc->parked->sc = NULL;
        sc->parked = NULL;
    }
    uas_subs_conn_closed(sc->loop, sc->channel_id, c);
    /* Sessions outlive their channel (a client may reactivate them on a new
     * one); they end by CloseSession or their timeout. */
    while (sc->ncache)
        cache_drop(sc, sc->ncache - 1);
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        sc->loop->conns = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    sc->loop->connections--;
    atomic_fetch_sub(&sc->loop->server->counters.current_connections, 1);
    uas_conn_limits_release(sc->loop->server->conn_limits, sc->address_key);
    uas_free(sc, sizeof(*sc));
}

static const uas_conn_handler handler = {on_message, on_message_error, on_state, on_close};

void uas_dispatch_accept(uas_sloop *l, int fd, const void *peer)
{
    uas_server *s = l->server;
    unsigned cur = atomic_fetch_add(&s->counters.current_connections, 1);
    if (cur >= s->cfg.max_connections) {
        atomic_fetch_sub(&s->counters.current_connections, 1);
        UAS_LOG_LIMITED(UAS_LOG_WARN, "server", "connection refused: %u connections open", cur);
        uas_socket_refuse(fd, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "too many connections");
        return;
    }
    char group[80] = "";
    uint64_t akey = 0;
    if (peer && uas_address_group(peer, group, sizeof(group))) {
        uint32_t n = 0;
        akey =
            uas_conn_limits_acquire(s->conn_limits, group, s->cfg.max_connections_per_address, &n);
        if (!akey) {
            atomic_fetch_sub(&s->counters.current_connections, 1);
            atomic_fetch_add(&s->counters.refused_per_address, 1);
            UAS_LOG_LIMITED(UAS_LOG_WARN, "server",
                            "connection refused: client %s has %u connections "
                            "(max_connections_per_address)",
                            group, n);
            uas_socket_refuse(fd, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES,
                              "too many connections from this address");
            return;
        }
    }
    uas_sconn *sc = uas_calloc(1, sizeof(*sc));
    if (!sc) {
        atomic_fetch_sub(&s->counters.current_connections, 1);
        uas_conn_limits_release(s->conn_limits, akey);
        close(fd);
        return;
    }
    sc->address_key = akey;
    sc->loop = l;
    uas_conn_config cc;
    uas_channel_config_default(&cc.channel, UAS_CHANNEL_SERVER);
    cc.channel.channel_id = atomic_fetch_add(&s->next_channel_id, 1);
    cc.channel.recv_buffer_size = s->cfg.buffer_size;
    cc.channel.send_buffer_size = s->cfg.buffer_size;
    cc.channel.max_message_size = s->cfg.max_message_size;
    cc.channel.max_chunk_count = s->cfg.max_chunk_count;
    cc.channel.min_lifetime_ms = s->cfg.min_token_lifetime_ms;
    cc.channel.max_lifetime_ms = s->cfg.max_token_lifetime_ms;
    cc.channel.hello_timeout_ms = s->cfg.hello_timeout_ms;
    cc.channel.decode_limits = &s->cfg.decode_limits;
    cc.channel.cred = s->cred;
    cc.channel.more_creds = s->ecc_creds;
    cc.channel.more_cred_count = s->ecc_cred_count;
    cc.channel.offers = s->offers;
    cc.channel.offer_count = s->channel_offer_count;
    cc.channel.validate_peer = uas_server_validate_client;
    cc.channel.validate_ud = s;
    if (s->pool) {
        cc.channel.offload = offload_opn;
        cc.channel.offload_ud = sc;
    }
    cc.max_output_bytes = s->cfg.max_output_bytes;
    l->connections++;
    sc->conn = uas_conn_accept(l->loop, fd, &cc, &handler, sc);
    if (!sc->conn) {
        l->connections--;
        atomic_fetch_sub(&s->counters.current_connections, 1);
        uas_conn_limits_release(s->conn_limits, akey);
        uas_free(sc, sizeof(*sc));
        return;
    }
    uas_subs_conn_opened(l, cc.channel.channel_id, sc->conn);
    sc->channel_id = cc.channel.channel_id;
    sc->last_message_ms = uas_loop_now_ms(l->loop);
    sc->next = l->conns;
    if (sc->next)
        sc->next->prev = sc;
    l->conns = sc;
}

double uas_dispatch_timer_remaining(uas_sloop *l)
{
    double min = -1;
    for (uas_sconn *sc = l->conns; sc; sc = sc->next) {
        double t = uas_conn_timer_remaining(sc->conn);
        if (t >= 0 && (min < 0 || t < min))
            min = t;
    }
    return min;
}

size_t uas_dispatch_pollfds(uas_sloop *l, struct pollfd *fds, size_t cap)
{
    size_t n = 0;
    for (uas_sconn *sc = l->conns; sc; sc = sc->next) {
        int fd;
        short ev = uas_conn_poll_events(sc->conn, &fd);
        if (!ev)
            continue;
        if (n < cap)
            fds[n] = (struct pollfd){.fd = fd, .events = ev};
        n++;
    }
    return n;
}

void uas_dispatch_abort_all(uas_sloop *l)
{
    while (l->conns)
        uas_conn_abort(l->conns->conn, UAS_BAD_SHUTDOWN);
}

/* Whether a live session is bound to this connection's channel. Another
 * loop may be moving a session (under its lock): one whose lock is taken
 * is in use, which counts as bound, and the sweep never waits for it. */
static bool has_session(uas_sconn *sc)
{
    for (size_t i = 0; i < sc->ncache; i++) {
        uas_session *se = sc->cache[i];
        if (atomic_load(&se->closed))
            continue;
        if (UAS_TRYLOCK(&se->lock) != 0)
            return true;
        bool bound = se->channel_id == sc->channel_id;
        UAS_UNLOCK(&se->lock);
        if (bound)
            return true;
    }
    return false;
}

void uas_dispatch_close_idle(uas_sloop *l, int64_t now_ms)
{
    uas_server *s = l->server;
    int64_t timeout = s->cfg.channel_idle_timeout_ms;
    if (!timeout)
        return;
    for (uas_sconn *sc = l->conns, *next; sc; sc = next) {
        next = sc->next; /* closing may free sc, never another connection */
        if (now_ms - sc->last_message_ms < timeout || has_session(sc))
            continue;
        UAS_LOG_LIMITED(UAS_LOG_INFO, "channel",
                        "channel %u closed: no session and idle for %lld ms", sc->channel_id,
                        (long long)(now_ms - sc->last_message_ms));
        atomic_fetch_add(&s->counters.idle_channels_closed, 1);
        sc->last_message_ms = now_ms; /* once: the close may wait for queued output */
        uas_conn_close(sc->conn, UAS_BAD_TIMEOUT);
    }
}

/* Connections holding less are never dropped for the budget: a reader
 * has a response or two in flight, a chunk being assembled. */
#define RELIEVE_MIN_HELD (256u << 10)

void uas_dispatch_relieve(uas_sloop *l)
{
    uas_server *s = l->server;
    uas_sconn *big = NULL;
    size_t most = 0;
    for (uas_sconn *sc = l->conns; sc; sc = sc->next) {
        size_t held = uas_conn_held_bytes(sc->conn);
        if (held > most) {
            most = held;
            big = sc;
        }
    }
    atomic_store(&l->largest_held, most);
    /* The largest consumer of the process goes, as far as the loops'
     * last looks tell: each loop publishes its own before comparing. */
    bool largest = big && most >= RELIEVE_MIN_HELD;
    for (unsigned i = 0; largest && i < s->nloops; i++) {
        size_t other = atomic_load(&s->loops[i].largest_held);
        if (i != l->index && (other > most || (other == most && i < l->index)))
            largest = false;
    }
    if (largest) {
        uas_budget_stats bs;
        uas_budget_get_stats(&bs);
        char peer[80];
        uas_conn_peer_group(big->conn, peer, sizeof(peer));
        UAS_LOG_LIMITED(UAS_LOG_WARN, "server",
                        "memory budget exhausted (%zu of %zu bytes in use): dropping channel %u "
                        "(client %s), the largest consumer with %zu bytes (%zu of them queued "
                        "output)",
                        bs.used, bs.limit, big->channel_id, peer, most,
                        uas_conn_output_bytes(big->conn));
        atomic_fetch_add(&s->counters.budget_drops, 1);
        uas_budget_count_drop();
        atomic_store(&l->largest_held, 0);
        uas_conn_abort(big->conn, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
    }
    if (atomic_fetch_sub(&s->relieve_pending, 1) == 1)
        uas_budget_pressure_done();
}
