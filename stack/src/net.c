/* libev glue: loops and connections. Reads land in a pooled buffer that is
 * handed to the channel (which may verify/decrypt in place); chunks the
 * channel produces are queued and written with writev once per loop
 * iteration (see flush_pending). A peer that stops reading is dropped once
 * its queue passes the limit, so it never stalls the loop or grows memory
 * without bound. With the io_uring backend (net_uring.c) the same
 * connection logic runs, only the reads and writes go through the ring. */
#define _GNU_SOURCE
#include "net_internal.h"

#include <ua/log.h>
#include <ua/membudget.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static void flush_pending(struct ev_loop *ev, ev_prepare *w, int revents);
static void flush_list(uas_loop *l);
static void drop_pending(uas_loop *l);

uas_loop *uas_loop_new(size_t max_pool_bytes)
{
    return uas_loop_new_on(NULL, max_pool_bytes);
}

uas_loop *uas_loop_new_on(struct ev_loop *ev, size_t max_pool_bytes)
{
    uas_status st;
    return uas_loop_new_io(ev, max_pool_bytes, UAS_IO_EPOLL, &st);
}

bool uas_io_backend_parse(const char *name, uas_io_backend *out)
{
    static const char *const names[] = {"auto", "epoll", "io_uring"};
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (uas_io_backend)i;
            return true;
        }
    return false;
}

const char *uas_io_backend_name(uas_io_backend b)
{
    return b == UAS_IO_URING ? "io_uring" : b == UAS_IO_EPOLL ? "epoll" : "auto";
}

bool uas_io_uring_built(void)
{
#ifdef UAS_HAVE_IO_URING
    return true;
#else
    return false;
#endif
}

/* Gives the loop a ring when asked; false (with why) when there is none. */
static bool attach_uring(uas_loop *l, const char **why, bool *oom)
{
#ifdef UAS_HAVE_IO_URING
    int err = 0;
    l->ur = uas__uring_new(l, &err);
    if (l->ur)
        return true;
    *oom = err == -ENOMEM;
    *why = err == -EPERM     ? "not permitted (kernel.io_uring_disabled, or a seccomp filter)"
           : err == -ENOSYS  ? "the kernel has no io_uring, or one too old"
           : err == -ENOBUFS ? "the kernel refused the ring's memory (RLIMIT_MEMLOCK)"
                             : strerror(-err);
    return false;
#else
    (void)l;
    (void)oom;
    *why = "this build has no liburing (UA_ENABLE_IO_URING)";
    return false;
#endif
}

uas_loop *uas_loop_new_io(struct ev_loop *ev, size_t max_pool_bytes, uas_io_backend want,
                          uas_status *status)
{
    static atomic_bool fallback_logged;
    *status = UAS_BAD_OUT_OF_MEMORY;
    uas_loop *l = uas_calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->foreign = ev != NULL;
    l->ev = ev ? ev : ev_loop_new(EVFLAG_AUTO);
    l->pool = uas_bufpool_new(max_pool_bytes);
    if (!l->ev || !l->pool) {
        uas_loop_delete(l);
        return NULL;
    }
    const char *why = NULL;
    bool oom = false;
    if (want != UAS_IO_EPOLL && !attach_uring(l, &why, &oom)) {
        if (oom) {
            uas_loop_delete(l);
            return NULL;
        }
        if (want == UAS_IO_URING) {
            uas_log(UAS_LOG_ERROR, "net", "io_backend io_uring: %s", why);
            uas_loop_delete(l);
            *status = UAS_BAD_NOT_SUPPORTED;
            return NULL;
        }
        if (!atomic_exchange(&fallback_logged, true))
            uas_log(UAS_LOG_INFO, "net",
                    "io_backend auto: io_uring not available (%s); using epoll", why);
    }
    ev_prepare_init(&l->flush_w, flush_pending);
    l->flush_w.data = l;
    ev_prepare_start(l->ev, &l->flush_w);
    ev_unref(l->ev); /* the flush alone does not keep ev_run going */
    *status = UAS_GOOD;
    return l;
}

uas_io_backend uas_loop_io_backend(const uas_loop *l)
{
    return l->ur ? UAS_IO_URING : UAS_IO_EPOLL;
}

int uas_loop_poll_fd(const uas_loop *l)
{
#ifdef UAS_HAVE_IO_URING
    if (l->ur)
        return uas__uring_fd(l);
#endif
    (void)l;
    return -1;
}

uas_status uas_loop_accept_start(uas_loop *l, int listen_fd, uas_accept_cb cb, void *ud)
{
#ifdef UAS_HAVE_IO_URING
    if (l->ur)
        return uas__uring_accept_start(l, listen_fd, cb, ud) == 0 ? UAS_GOOD
                                                                  : UAS_BAD_INVALID_STATE;
#endif
    (void)l;
    (void)listen_fd;
    (void)cb;
    (void)ud;
    return UAS_BAD_NOT_SUPPORTED;
}

void uas_loop_accept_stop(uas_loop *l)
{
#ifdef UAS_HAVE_IO_URING
    if (l->ur)
        uas__uring_accept_stop(l);
#endif
    (void)l;
}

void uas_loop_delete(uas_loop *l)
{
    if (!l)
        return;
    if (l->ev && ev_is_active(&l->flush_w)) {
        ev_ref(l->ev);
        ev_prepare_stop(l->ev, &l->flush_w);
    }
    drop_pending(l);
#ifdef UAS_HAVE_IO_URING
    /* Waits for the completions of connections shut down before, which
     * frees them: before the pool their buffers go back to. */
    uas__uring_delete(l);
#endif
    if (l->ev && !l->foreign)
        ev_loop_destroy(l->ev);
    uas_bufpool_delete(l->pool);
    uas_free(l, sizeof(*l));
}

struct ev_loop *uas_loop_ev(uas_loop *l)
{
    return l->ev;
}

uas_bufpool *uas_loop_pool(uas_loop *l)
{
    return l->pool;
}

int64_t uas_loop_now_ms(uas_loop *l)
{
    return (int64_t)(ev_now(l->ev) * 1000.0);
}

void uas_loop_run(uas_loop *l)
{
    ev_run(l->ev, 0);
}

void uas_loop_stop(uas_loop *l)
{
    ev_break(l->ev, EVBREAK_ALL);
}

void uas_loop_run_once(uas_loop *l, bool block)
{
    ev_run(l->ev, block ? EVRUN_ONCE : EVRUN_NOWAIT);
    /* The flush watcher runs before the loop next sleeps, which for a
     * caller driving one turn at a time (uas_server_process) is only its
     * next call: what this turn queued goes out now. */
    flush_pending(l->ev, &l->flush_w, 0);
}

bool uas_loop_is_foreign(const uas_loop *l)
{
    return l->foreign;
}

void uas_loop_now_update(uas_loop *l)
{
    ev_now_update(l->ev);
}

double uas_loop_timer_remaining(uas_loop *l, const struct ev_timer *t)
{
    return ev_is_active(t) ? ev_timer_remaining(l->ev, (struct ev_timer *)t) : -1.0;
}

/* ---- connections ---- */

/* Queued output up to this much is counted in the memory budget but never
 * refused: a reader has a response or two in flight, and refusing those
 * would close good clients while a non-reader holds the budget. Beyond it
 * the budget decides. */
#define OUTPUT_ALWAYS_ALLOWED (256u << 10)

static void conn_free(uas_conn *c);

enum { READ_SIZE = 65536 }; /* bytes one read takes */

static void conn_release(uas_conn *c)
{
    if (--c->busy == 0 && c->dead)
        conn_free(c);
}

void uas__conn_release(uas_conn *c)
{
    conn_release(c);
}

/* Reading on or off: the read watcher, or the ring's multishot receive. */
static void conn_read_start(uas_conn *c)
{
#ifdef UAS_HAVE_IO_URING
    if (c->loop->ur) {
        uas__uring_read_start(c);
        return;
    }
#endif
    ev_io_start(c->loop->ev, &c->rio);
}

static void conn_read_stop(uas_conn *c)
{
#ifdef UAS_HAVE_IO_URING
    if (c->loop->ur) {
        uas__uring_read_stop(c);
        return;
    }
#endif
    ev_io_stop(c->loop->ev, &c->rio);
}

/* Close the socket now and tell the owner; the memory goes when no callback
 * frame still uses it. */
static void conn_shutdown(uas_conn *c, uas_status reason)
{
    if (c->dead)
        return;
    c->dead = true;
    ev_io_stop(c->loop->ev, &c->rio);
    ev_io_stop(c->loop->ev, &c->wio);
    ev_timer_stop(c->loop->ev, &c->timer);
#ifdef UAS_HAVE_IO_URING
    if (c->loop->ur && c->fd >= 0) {
        /* The peer sees the close now; the descriptor stays ours until
         * the requests that name it have completed (conn_free). */
        uas__uring_cancel(c);
        shutdown(c->fd, SHUT_RDWR);
        c->ur_fd = c->fd;
        c->fd = -1;
    }
#endif
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->busy++;
    if (c->h.on_close)
        c->h.on_close(c, reason);
    conn_release(c);
}

void uas__conn_shutdown(uas_conn *c, uas_status reason)
{
    conn_shutdown(c, reason);
}

static void put_list(uas_bufpool *pool, uas_buf *b)
{
    while (b) {
        uas_buf *next = b->next;
        uas_buf_put(pool, b);
        b = next;
    }
}

static void conn_free(uas_conn *c)
{
    put_list(c->loop->pool, c->out_head);
    put_list(c->loop->pool, c->stash_head);
    if (c->ur_fd >= 0)
        close(c->ur_fd);
    uas_channel_delete(c->ch);
    uas_free(c, sizeof(*c));
}

/* How long a closing connection may take to flush its last output (an
 * ERR, a CLO) to a peer that does not read, holding its buffers. */
#define CLOSE_LINGER_MS 2000

static void set_closing(uas_conn *c, uas_status reason)
{
    if (c->closing)
        return;
    c->closing = true;
    c->reason = reason;
    c->close_by = uas_loop_now_ms(c->loop) + CLOSE_LINGER_MS;
    /* The deadline may come before any the channel has; arm_timer keeps
     * the earlier of the two from now on. */
    ev_timer_stop(c->loop->ev, &c->timer);
    ev_timer_set(&c->timer, CLOSE_LINGER_MS / 1000.0, 0.0);
    ev_timer_start(c->loop->ev, &c->timer);
}

static void conn_flush(uas_conn *c);
static void conn_write(uas_conn *c);

enum { UAS_NET_FLUSH_NOW_BYTES = 64 * 1024 };

/* The write waits for the end of the loop iteration: every response that
 * the reads of this iteration produce for c goes out in one writev, and
 * the loop makes one pass over the written connections instead of a write
 * per message. The busy reference keeps c's memory until the pass. */
static void conn_flush_later(uas_conn *c)
{
    /* A queue this long is written at once, as before the batching: a
     * caller queueing many requests outside the loop would otherwise hit
     * max_output before the iteration ends. */
    if (c->out_bytes >= UAS_NET_FLUSH_NOW_BYTES) {
        /* With io_uring as well: the queue must shrink while a long
         * answer is encoded, and a submission here could not be reaped
         * (the request's handler is still running). A send in flight
         * carries on when it completes. */
        if (!c->loop->ur) {
            conn_flush(c);
            return;
        }
        if (!c->ur_send_armed && !c->dead && !c->connecting) {
            conn_write(c);
            return;
        }
    }
    if (c->pending || c->dead)
        return;
    c->pending = true;
    c->busy++;
    c->pending_next = c->loop->pending;
    c->loop->pending = c;
}

/* Upper bound of submit-and-reap rounds in one pass; what the last round
 * queues is submitted without reaping. */
enum { URING_PASSES = 8 };

static void flush_pending(struct ev_loop *ev, ev_prepare *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_loop *l = w->data;
    for (int pass = 0;; pass++) {
        flush_list(l);
#ifdef UAS_HAVE_IO_URING
        /* One io_uring_enter for every receive, send and cancellation
         * this iteration queued; the completions reaped right after may
         * queue more output, which the next round sends. */
        if (l->ur && uas__uring_submit(l, pass + 1 < URING_PASSES) && pass + 1 < URING_PASSES)
            continue;
#endif
        return;
    }
}

static void flush_list(uas_loop *l)
{
    /* A flush may close a connection, whose owner may queue output on
     * others: take the list, then loop until no new entries appear. */
    while (l->pending) {
        uas_conn *c = l->pending;
        l->pending = NULL;
        while (c) {
            uas_conn *next = c->pending_next;
            c->pending = false;
            c->pending_next = NULL;
            if (!c->dead && !c->connecting)
                conn_flush(c);
            conn_release(c);
            c = next;
        }
    }
}

/* At loop deletion: connections closed since the last pass still hold
 * the pass's reference; giving it back frees them. */
static void drop_pending(uas_loop *l)
{
    while (l->pending) {
        uas_conn *c = l->pending;
        l->pending = c->pending_next;
        c->pending = false;
        c->pending_next = NULL;
        conn_release(c);
    }
}

/* Write as much of the queue as the socket takes (io_uring: queue its
 * send; the completion goes on from there). */
static void conn_flush(uas_conn *c)
{
    if (c->drop && !c->dead) {
        /* Its queue hit a bound: what is queued will not be read either. */
        conn_shutdown(c, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        return;
    }
#ifdef UAS_HAVE_IO_URING
    if (c->loop->ur && !c->connecting) {
        if (c->out_head)
            uas__uring_send(c);
        else if (c->closing && !c->dead)
            conn_shutdown(c, c->reason);
        return;
    }
#endif
    conn_write(c);
}

void uas__conn_flush(uas_conn *c)
{
    conn_flush(c);
}

/* n bytes of the queue's head went out. */
void uas__conn_consume(uas_conn *c, size_t n)
{
    c->out_bytes -= n;
    while (n > 0) {
        uas_buf *b = c->out_head;
        size_t left = b->len - b->off;
        if (n < left) {
            b->off += (uint32_t)n;
            break;
        }
        n -= left;
        c->out_head = b->next;
        if (!c->out_head)
            c->out_tail = NULL;
        c->out_mem -= b->cap;
        uas_buf_put(c->loop->pool, b);
    }
}

/* writev until the queue is empty or the socket is full. */
static void conn_write(uas_conn *c)
{
    while (c->out_head && !c->dead) {
        struct iovec iov[64];
        int n = 0;
        for (uas_buf *b = c->out_head; b && n < 64; b = b->next, n++) {
            iov[n].iov_base = b->data + b->off;
            iov[n].iov_len = b->len - b->off;
        }
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
#ifdef UAS_HAVE_IO_URING
                if (c->loop->ur && !c->connecting) {
                    uas__uring_send(c); /* completes when the peer reads */
                    return;
                }
#endif
                ev_io_start(c->loop->ev, &c->wio);
                return;
            }
            conn_shutdown(c, UAS_BAD_CONNECTION_CLOSED);
            return;
        }
        uas__conn_consume(c, (size_t)w);
    }
    if (!c->out_head) {
        ev_io_stop(c->loop->ev, &c->wio);
        if (c->closing)
            conn_shutdown(c, c->reason);
    }
}

static uas_status ch_send(void *ud, uas_buf *chunk)
{
    uas_conn *c = ud;
    if (c->dead) {
        uas_buf_put(c->loop->pool, chunk);
        return UAS_BAD_CONNECTION_CLOSED;
    }
    /* A small chunk behind others goes into the free end of the last
     * buffer: a peer that reads slowly and asks for small answers would
     * otherwise hold a whole send buffer (64 KiB) per answer. */
    uas_buf *t = c->out_tail;
    if (t && t->cap - t->len >= chunk->len) {
        memcpy(t->data + t->len, chunk->data, chunk->len);
        t->len += chunk->len;
        c->out_bytes += chunk->len;
        uas_buf_put(c->loop->pool, chunk);
        return UAS_GOOD;
    }
    /* The queue's memory, not its bytes, is what the peer makes us hold. */
    if (c->out_mem + chunk->cap > c->max_output) {
        uas_buf_put(c->loop->pool, chunk);
        UAS_LOG_LIMITED(UAS_LOG_WARN, "net",
                        "peer does not read: %zu bytes queued in %zu bytes of buffers "
                        "(max_output_bytes %zu); dropping the connection",
                        c->out_bytes, c->out_mem, c->max_output);
        c->drop = true;
        return UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
    }
    if (!uas_buf_charge(chunk, c->out_mem < OUTPUT_ALWAYS_ALLOWED)) {
        uas_buf_put(c->loop->pool, chunk);
        UAS_LOG_LIMITED(UAS_LOG_WARN, "net",
                        "memory budget exhausted: output refused with %zu bytes queued; "
                        "dropping the connection",
                        c->out_bytes);
        c->drop = true;
        return UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
    }
    chunk->next = NULL;
    if (c->out_tail)
        c->out_tail->next = chunk;
    else
        c->out_head = chunk;
    c->out_tail = chunk;
    c->out_bytes += chunk->len;
    c->out_mem += chunk->cap;
    if (!c->corked && !c->connecting)
        conn_flush_later(c);
    return UAS_GOOD;
}

static void ch_on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    uas_conn *c = ud;
    if (c->h.on_message && !c->dead)
        c->h.on_message(c, request_id, body, len);
}

static void ch_on_message_error(void *ud, uint32_t request_id, uas_status st)
{
    uas_conn *c = ud;
    if (c->h.on_message_error && !c->dead)
        c->h.on_message_error(c, request_id, st);
}

static void ch_on_state(void *ud, uas_channel_state state, uas_status reason)
{
    uas_conn *c = ud;
    if (state == UAS_CHANNEL_CLOSED) {
        /* Let queued output (an ERR, a CLO) drain, then close the socket. */
        set_closing(c, reason);
    }
    if (c->h.on_state && !c->dead)
        c->h.on_state(c, state, reason);
}

static void arm_timer(uas_conn *c)
{
    int64_t now = uas_loop_now_ms(c->loop);
    int64_t next = uas_channel_tick(c->ch, now);
    if (c->closing && !c->dead) {
        if (now >= c->close_by) {
            UAS_LOG_LIMITED(UAS_LOG_INFO, "net",
                            "closing connection: %zu bytes of output not taken in %d ms; "
                            "dropped",
                            c->out_bytes, CLOSE_LINGER_MS);
            conn_shutdown(c, c->reason);
            return;
        }
        if (c->close_by < next)
            next = c->close_by;
    }
    ev_timer_stop(c->loop->ev, &c->timer);
    if (next != INT64_MAX && !c->dead) {
        double after = (double)(next - now) / 1000.0;
        ev_timer_set(&c->timer, after > 0 ? after : 0.001, 0.0);
        ev_timer_start(c->loop->ev, &c->timer);
    }
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_conn *c = w->data;
    c->busy++;
    c->corked = true;
    arm_timer(c);
    c->corked = false;
    conn_flush_later(c);
    conn_release(c);
}

/* After the channel processed input (read, a job's completion, the end of
 * a hold): close on a fatal status. While a request is parked the socket
 * is still read (a peer that leaves is noticed at once and its queued work
 * cancelled) until the channel's backlog is full; then the rest stays in
 * the socket. */
static bool drain_stash(uas_conn *c);

static void after_channel(uas_conn *c, uas_status st)
{
    if (st != UAS_GOOD) {
        set_closing(c, st);
        conn_read_stop(c);
    } else if (!c->dead && !c->closing && !c->connecting && drain_stash(c)) {
        if (!c->stash_head && uas_channel_wants_input(c->ch, READ_SIZE))
            conn_read_start(c);
        else
            conn_read_stop(c);
    }
    conn_flush_later(c);
    if (!c->dead)
        arm_timer(c);
}

/* io_uring: data that arrived while the channel took no input (its
 * receive is cancelled then, but completions already under way still
 * come) waits here, in order, and goes to the channel when it takes
 * input again. False when the channel failed on it. */
static bool drain_stash(uas_conn *c)
{
    while (c->stash_head && !c->dead && !c->closing &&
           uas_channel_wants_input(c->ch, c->stash_head->len)) {
        uas_buf *b = c->stash_head;
        c->stash_head = b->next;
        if (!c->stash_head)
            c->stash_tail = NULL;
        c->corked = true;
        uas_status st = uas_channel_recv(c->ch, b->data, b->len, uas_loop_now_ms(c->loop));
        c->corked = false;
        uas_buf_put(c->loop->pool, b);
        if (st != UAS_GOOD) {
            set_closing(c, st);
            conn_read_stop(c);
            return false;
        }
    }
    return !c->dead && !c->closing;
}

void uas__conn_input(uas_conn *c, uint8_t *data, size_t len)
{
    c->busy++;
    if (c->stash_head || !uas_channel_wants_input(c->ch, len)) {
        uas_buf *b = uas_buf_get(c->loop->pool, len);
        if (!b) {
            conn_shutdown(c, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        } else {
            memcpy(b->data, data, len);
            b->len = (uint32_t)len;
            b->next = NULL;
            if (c->stash_tail)
                c->stash_tail->next = b;
            else
                c->stash_head = b;
            c->stash_tail = b;
            conn_read_stop(c);
        }
    } else {
        c->corked = true;
        uas_status st = uas_channel_recv(c->ch, data, len, uas_loop_now_ms(c->loop));
        c->corked = false;
        after_channel(c, st);
    }
    conn_release(c);
}

/* EOF and a reset are the peer closing (as on the write side); other
 * errors are communication failures. */
void uas__conn_read_failed(uas_conn *c, int err)
{
    conn_shutdown(c, err == 0 || err == -ECONNRESET ? UAS_BAD_CONNECTION_CLOSED
                                                    : UAS_BAD_COMMUNICATION_ERROR);
}

static void on_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_conn *c = w->data;
    uas_buf *b = uas_buf_get(c->loop->pool, READ_SIZE);
    if (!b) {
        conn_shutdown(c, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        return;
    }
    c->busy++;
    ssize_t n = read(c->fd, b->data, b->cap);
    if (n > 0) {
        c->corked = true;
        uas_status st = uas_channel_recv(c->ch, b->data, (size_t)n, uas_loop_now_ms(c->loop));
        c->corked = false;
        uas_buf_put(c->loop->pool, b);
        after_channel(c, st);
    } else {
        uas_buf_put(c->loop->pool, b);
        /* EOF and a reset are the peer closing (as on the write side);
         * other errors are communication failures. */
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            conn_shutdown(c, n == 0 || errno == ECONNRESET ? UAS_BAD_CONNECTION_CLOSED
                                                           : UAS_BAD_COMMUNICATION_ERROR);
    }
    conn_release(c);
}

/* Why a connect() failed, as a status a user can tell apart: nobody
 * listening (refused), no answer (timeout), no route, or anything else. */
static uas_status connect_error_status(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return UAS_BAD_CONNECTION_REJECTED;
    case ETIMEDOUT:
        return UAS_BAD_TIMEOUT;
    default: /* unreachable network or host, no local address, ... */
        return UAS_BAD_NOT_CONNECTED;
    }
}

static void on_writable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_conn *c = w->data;
    c->busy++;
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            conn_shutdown(c, connect_error_status(err));
            conn_release(c);
            return;
        }
        c->connecting = false;
        if (c->loop->ur)
            ev_io_stop(c->loop->ev, &c->wio); /* the ring writes from now on */
        conn_read_start(c);
    }
    conn_flush(c);
    conn_release(c);
}

static uas_conn *conn_new(uas_loop *l, int fd, const uas_conn_config *cfg,
                          const uas_conn_handler *h, void *ud)
{
    uas_conn *c = uas_calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->loop = l;
    c->fd = fd;
    c->ur_fd = -1;
    c->h = *h;
    c->ud = ud;
    c->max_output = cfg->max_output_bytes ? cfg->max_output_bytes : 4u << 20;
    uas_channel_callbacks cb = {ch_send, ch_on_message, ch_on_message_error, ch_on_state, NULL};
    c->ch = uas_channel_new(&cfg->channel, &cb, c, l->pool, uas_loop_now_ms(l));
    if (!c->ch) {
        uas_free(c, sizeof(*c));
        return NULL;
    }
    ev_io_init(&c->rio, on_readable, fd, EV_READ);
    ev_io_init(&c->wio, on_writable, fd, EV_WRITE);
    ev_timer_init(&c->timer, on_timer, 0.0, 0.0);
    c->rio.data = c->wio.data = c->timer.data = c;
    return c;
}

static void tune_socket(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int fl = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

uas_conn *uas_conn_accept(uas_loop *l, int fd, const uas_conn_config *cfg,
                          const uas_conn_handler *h, void *ud)
{
    tune_socket(fd);
    uas_conn *c = conn_new(l, fd, cfg, h, ud);
    if (!c) {
        close(fd);
        return NULL;
    }
    conn_read_start(c);
    /* The first deadline (HEL timeout) lies ahead: this cannot close c. */
    arm_timer(c);
    return c;
}

uas_status uas_parse_endpoint_url(const char *url, char *host, size_t host_len, uint16_t *port)
{
    static const char prefix[] = "opc.tcp://";
    if (!url || strncmp(url, prefix, sizeof(prefix) - 1) != 0)
        return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
    const char *p = url + sizeof(prefix) - 1;
    const char *hs, *he;
    if (*p == '[') {
        hs = p + 1;
        he = strchr(hs, ']');
        if (!he)
            return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
        p = he + 1;
    } else {
        hs = p;
        while (*p && *p != ':' && *p != '/')
            p++;
        he = p;
    }
    size_t n = (size_t)(he - hs);
    if (n == 0 || n >= host_len)
        return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
    memcpy(host, hs, n);
    host[n] = 0;
    *port = 4840;
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v <= 0 || v > 65535 || (*end && *end != '/'))
            return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
        *port = (uint16_t)v;
    } else if (*p && *p != '/') {
        return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
    }
    return UAS_GOOD;
}

/* The local address of a client socket. The port stays 0 and, with
 * IP_BIND_ADDRESS_NO_PORT, is chosen at connect() for the whole 4-tuple, so
 * a source address does not use up ports of its own. */
static uas_status bind_source(int fd, int family, const char *addr)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    if (getaddrinfo(addr, NULL, &hints, &res) != 0 || !res)
        return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
#ifdef IP_BIND_ADDRESS_NO_PORT
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
#endif
    int rc = bind(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return rc == 0 ? UAS_GOOD : UAS_BAD_NOT_CONNECTED;
}

uas_conn *uas_conn_connect(uas_loop *l, const char *url, const uas_conn_config *cfg,
                           const uas_conn_handler *h, void *ud, uas_status *status)
{
    char host[256];
    uint16_t port;
    uas_status st = uas_parse_endpoint_url(url, host, sizeof(host), &port);
    if (st != UAS_GOOD) {
        *status = st;
        return NULL;
    }
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0 || !res) {
        /* The URL was well formed: the host name is what failed. */
        *status = gai == EAI_MEMORY  ? UAS_BAD_OUT_OF_MEMORY
                  : gai == EAI_AGAIN ? UAS_BAD_TIMEOUT
                                     : UAS_BAD_NOT_FOUND;
        return NULL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        *status = UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
        return NULL;
    }
    tune_socket(fd);
    if (cfg->source_address && *cfg->source_address) {
        st = bind_source(fd, res->ai_family, cfg->source_address);
        if (st != UAS_GOOD) {
            freeaddrinfo(res);
            close(fd);
            *status = st;
            return NULL;
        }
    }
    int rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        *status = connect_error_status(errno);
        close(fd);
        return NULL;
    }
    uas_conn *c = conn_new(l, fd, cfg, h, ud);
    if (!c) {
        close(fd);
        *status = UAS_BAD_OUT_OF_MEMORY;
        return NULL;
    }
    /* HEL is queued now and written once the connection is up. */
    c->connecting = true;
    st = uas_channel_connect(c->ch, url, uas_loop_now_ms(l));
    if (st != UAS_GOOD) {
        close(fd);
        c->fd = -1;
        conn_free(c);
        *status = st;
        return NULL;
    }
    ev_io_start(l->ev, &c->wio);
    *status = UAS_GOOD;
    return c;
}

uas_status uas_conn_send(uas_conn *c, uint32_t request_id, const void *msg, const uas_type *t)
{
    if (c->dead || c->closing)
        return UAS_BAD_CONNECTION_CLOSED;
    c->busy++;
    bool was_corked = c->corked;
    c->corked = true;
    uas_status st = uas_channel_send(c->ch, request_id, msg, t);
    c->corked = was_corked;
    if (!was_corked && !c->connecting)
        conn_flush_later(c);
    conn_release(c);
    return st;
}

void uas_conn_close(uas_conn *c, uas_status reason)
{
    if (c->dead || c->closing)
        return;
    c->busy++;
    c->corked = true;
    uas_channel_close(c->ch, reason);
    c->corked = false;
    set_closing(c, reason);
    conn_read_stop(c);
    if (c->connecting)
        conn_shutdown(c, reason);
    else
        conn_flush(c);
    conn_release(c);
}

void uas_conn_job_done(uas_conn *c, uas_channel_job *job)
{
    if (c->dead) {
        uas_channel_job_free(job);
        return;
    }
    c->busy++;
    c->corked = true;
    uas_status st = uas_channel_job_done(c->ch, job, uas_loop_now_ms(c->loop));
    c->corked = false;
    after_channel(c, st);
    conn_release(c);
}

void uas_conn_hold(uas_conn *c)
{
    uas_channel_hold(c->ch);
}

void uas_conn_resume(uas_conn *c, void (*fn)(uas_conn *c, void *arg), void *arg)
{
    if (c->dead)
        return;
    c->busy++;
    c->corked = true;
    if (fn)
        fn(c, arg);
    uas_status st = c->dead || c->closing ? UAS_BAD_CONNECTION_CLOSED
                                          : uas_channel_release(c->ch, uas_loop_now_ms(c->loop));
    c->corked = false;
    if (!c->dead && !c->closing)
        after_channel(c, st);
    else
        conn_flush(c);
    conn_release(c);
}

void uas_conn_abort(uas_conn *c, uas_status reason)
{
    conn_shutdown(c, reason);
}

double uas_conn_timer_remaining(const uas_conn *c)
{
    return c->dead ? -1.0 : uas_loop_timer_remaining(c->loop, &c->timer);
}

short uas_conn_poll_events(const uas_conn *c, int *fd)
{
    *fd = c->fd;
    if (c->dead)
        return 0;
    /* io_uring: the loop's ring (uas_loop_poll_fd) stands for the socket. */
    return (short)((ev_is_active(&c->rio) ? POLLIN : 0) | (ev_is_active(&c->wio) ? POLLOUT : 0));
}

void *uas_conn_ud(const uas_conn *c)
{
    return c->ud;
}

void uas_conn_set_ud(uas_conn *c, void *ud)
{
    c->ud = ud;
}

uas_channel *uas_conn_channel(uas_conn *c)
{
    return c->ch;
}

uas_loop *uas_conn_loop(uas_conn *c)
{
    return c->loop;
}

size_t uas_conn_output_bytes(const uas_conn *c)
{
    return c->out_bytes;
}

bool uas_conn_peer_address(const uas_conn *c, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (cap)
        buf[0] = 0;
    if (c->fd < 0 || getpeername(c->fd, (struct sockaddr *)&ss, &sl) != 0)
        return false;
    return getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)cap, NULL, 0, NI_NUMERICHOST) ==
           0;
}

size_t uas_conn_held_bytes(const uas_conn *c)
{
    return c->out_mem + uas_channel_held_bytes(c->ch);
}

bool uas_address_group(const void *sockaddr, char *buf, size_t cap)
{
    const struct sockaddr *sa = sockaddr;
    if (cap)
        buf[0] = 0;
    if (sa->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf,
                         (socklen_t)cap) != NULL;
    if (sa->sa_family != AF_INET6)
        return false;
    struct in6_addr a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a))
        return inet_ntop(AF_INET, &a.s6_addr[12], buf, (socklen_t)cap) != NULL;
    memset(&a.s6_addr[8], 0, 8);
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, &a, text, sizeof(text)))
        return false;
    int n = snprintf(buf, cap, "%s/64", text);
    return n > 0 && (size_t)n < cap;
}

bool uas_address_group_str(const char *address, char *buf, size_t cap)
{
    struct sockaddr_in a4 = {0};
    struct sockaddr_in6 a6 = {0};
    if (inet_pton(AF_INET, address, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        return uas_address_group(&a4, buf, cap);
    }
    if (inet_pton(AF_INET6, address, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        return uas_address_group(&a6, buf, cap);
    }
    if (cap)
        buf[0] = 0;
    return false;
}

bool uas_conn_peer_group(const uas_conn *c, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (cap)
        buf[0] = 0;
    if (c->fd < 0 || getpeername(c->fd, (struct sockaddr *)&ss, &sl) != 0)
        return false;
    return uas_address_group(&ss, buf, cap);
}

void uas_socket_refuse(int fd, uas_status code, const char *reason)
{
    /* ERR (Part 6, 7.1.2.5): header, Error, Reason as a String. */
    uint8_t msg[8 + 4 + 4 + 256];
    size_t rlen = reason ? strlen(reason) : 0;
    if (rlen > 256)
        rlen = 256;
    size_t n = 16 + rlen;
    uint32_t v[3] = {(uint32_t)n, code, (uint32_t)rlen};
    memcpy(msg, "ERRF", 4);
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++)
            msg[4 + 4 * i + b] = (uint8_t)(v[i] >> (8 * b));
    if (rlen)
        memcpy(msg + 16, reason, rlen);
    /* A fresh socket's send buffer is empty: this either goes at once or
     * not at all, and the peer learns why either way if it reads. */
    ssize_t w = send(fd, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w;
    close(fd);
}
