/* The io_uring backend of the libev glue (docs/Architecture.md, "I/O
 * backends"). libev still runs the loop, its timers and async watchers;
 * the sockets of connections are read and written through one io_uring
 * per loop instead of epoll readiness plus read/writev:
 * - every connection has one multishot receive armed, whose data lands in
 *   a ring of provided buffers taken from the loop's pool (one buffer
 *   group per loop), so a wakeup costs no read() per connection;
 * - output is sent with one sendmsg SQE per connection per loop
 *   iteration, queued in the ev_prepare pass that used to writev;
 * - everything queued is submitted with one io_uring_enter in that pass,
 *   and completions are reaped there and from an ev_io on the ring's fd
 *   (readable when completions wait), so the loop sleeps in epoll_wait as
 *   before, on the ring fd, the listeners it still polls and its timers.
 * Lifetime: each request in flight holds a busy reference on its
 * connection; a connection shut down has its requests cancelled and its
 * socket shut down at once, but its descriptor is closed only when the
 * last completion came back, so the number cannot be reused by a new
 * socket while an SQE still names it. */
#define _GNU_SOURCE
#include "net_internal.h"

#include <ua/log.h>
#include <ua/mem.h>

#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The operation sits in the low bits of user_data, the connection (or
 * the ring, for accept) above them: records are at least 8-byte aligned. */
enum { OP_RECV = 1, OP_SEND = 2, OP_ACCEPT = 3, OP_CANCEL = 4, OP_MASK = 7 };

enum {
    SQ_ENTRIES = 512,
    CQ_ENTRIES = 8192,
    /* Provided receive buffers: one is taken per receive completion and
     * given back once the channel has processed it, before the loop next
     * sleeps, so the ring needs about as many as there are connections
     * with data per wakeup. Running out only ends a multishot receive with
     * ENOBUFS, which is armed again. 256 x 16 KiB = 4 MiB per loop. */
    RBUF_COUNT = 256,
    RBUF_SIZE = 16384,
    RBUF_GROUP = 0,
};

struct uas_uring {
    struct io_uring ring;
    ev_io ring_w;
    ev_check reap_w;
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    uas_buf *rbufs[RBUF_COUNT];
    unsigned inflight; /* requests of connections whose last completion is due */
    bool reaping;
    /* multishot accept (uas_loop_accept_start) */
    int accept_fd;
    bool accept_armed;
    uas_accept_cb accept_cb;
    void *accept_ud;
};

static void on_ring(struct ev_loop *ev, ev_io *w, int revents);
static void on_check(struct ev_loop *ev, ev_check *w, int revents);

static struct io_uring_sqe *get_sqe(uas_uring *ur)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ur->ring);
    if (!sqe) {
        /* The submission queue is full: hand it to the kernel now. */
        io_uring_submit(&ur->ring);
        sqe = io_uring_get_sqe(&ur->ring);
    }
    return sqe;
}

static void rbuf_give(uas_uring *ur, unsigned bid)
{
    io_uring_buf_ring_add(ur->br, ur->rbufs[bid]->data, RBUF_SIZE, (unsigned short)bid,
                          io_uring_buf_ring_mask(RBUF_COUNT), 0);
    io_uring_buf_ring_advance(ur->br, 1);
}

uas_uring *uas__uring_new(uas_loop *l, int *err)
{
    uas_uring *ur = uas_calloc(1, sizeof(*ur));
    if (!ur) {
        *err = -ENOMEM;
        return NULL;
    }
    ur->accept_fd = -1;
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
    p.cq_entries = CQ_ENTRIES;
    int rc = io_uring_queue_init_params(SQ_ENTRIES, &ur->ring, &p);
    if (rc < 0) {
        uas_free(ur, sizeof(*ur));
        /* -ENOMEM here is the kernel refusing the ring's memory (locked
         * memory limits of older kernels): no ring, not out of memory. */
        *err = rc == -ENOMEM ? -ENOBUFS : rc;
        return NULL;
    }
    /* Multishot receive with provided buffers needs 6.0; probe it here so
     * that `auto` falls back at start, not at the first connection. */
    if (!(p.features & IORING_FEAT_NODROP) || !(p.features & IORING_FEAT_FAST_POLL)) {
        io_uring_queue_exit(&ur->ring);
        uas_free(ur, sizeof(*ur));
        *err = -ENOSYS;
        return NULL;
    }
    ur->br_bytes = RBUF_COUNT * sizeof(struct io_uring_buf);
    void *mem =
        mmap(NULL, ur->br_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) {
        io_uring_queue_exit(&ur->ring);
        uas_free(ur, sizeof(*ur));
        *err = -ENOMEM;
        return NULL;
    }
    ur->br = mem;
    io_uring_buf_ring_init(ur->br);
    struct io_uring_buf_reg reg = {
        .ring_addr = (unsigned long)mem, .ring_entries = RBUF_COUNT, .bgid = RBUF_GROUP};
    rc = io_uring_register_buf_ring(&ur->ring, &reg, 0);
    if (rc < 0) {
        munmap(mem, ur->br_bytes);
        io_uring_queue_exit(&ur->ring);
        uas_free(ur, sizeof(*ur));
        *err = rc;
        return NULL;
    }
    for (unsigned i = 0; i < RBUF_COUNT; i++) {
        ur->rbufs[i] = uas_buf_get(l->pool, RBUF_SIZE);
        if (!ur->rbufs[i]) {
            l->ur = ur;
            uas__uring_delete(l);
            *err = -ENOMEM;
            return NULL;
        }
        io_uring_buf_ring_add(ur->br, ur->rbufs[i]->data, RBUF_SIZE, (unsigned short)i,
                              io_uring_buf_ring_mask(RBUF_COUNT), (int)i);
    }
    io_uring_buf_ring_advance(ur->br, RBUF_COUNT);
    ev_io_init(&ur->ring_w, on_ring, ur->ring.ring_fd, EV_READ);
    ur->ring_w.data = l;
    ev_io_start(l->ev, &ur->ring_w);
    ev_unref(l->ev); /* the ring alone does not keep ev_run going */
    ev_check_init(&ur->reap_w, on_check);
    ur->reap_w.data = l;
    ev_check_start(l->ev, &ur->reap_w);
    ev_unref(l->ev);
    return ur;
}

int uas__uring_fd(const uas_loop *l)
{
    /* What was queued outside the loop's turns (uas_server_listen's
     * accept) must be in the kernel before the caller waits on the ring. */
    if (io_uring_sq_ready(&l->ur->ring))
        io_uring_submit(&l->ur->ring);
    return l->ur->ring.ring_fd;
}

/* ---- completions ---- */

static void on_recv(uas_uring *ur, uas_conn *c, int res, unsigned flags)
{
    bool more = flags & IORING_CQE_F_MORE;
    if (!more) {
        c->ur_recv_armed = false;
        c->ur_recv_cancel = false;
    }
    if (flags & IORING_CQE_F_BUFFER) {
        unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
        if (res > 0 && !c->dead && !c->closing)
            uas__conn_input(c, ur->rbufs[bid]->data, (size_t)res);
        rbuf_give(ur, bid);
    } else if (!c->dead) {
        if (res == 0)
            uas__conn_read_failed(c, 0);
        else if (res < 0 && res != -ENOBUFS && res != -ECANCELED && res != -EINTR && res != -EAGAIN)
            uas__conn_read_failed(c, res);
    }
    /* Ended (out of buffers, or the kernel stopped it) while still
     * wanted: arm it again; ENOBUFS passes once the buffers handed out
     * above are back, before this is submitted. */
    if (!more && !c->dead && !c->closing && c->ur_reading && !c->ur_recv_armed)
        uas__uring_read_start(c);
    if (!more) {
        ur->inflight--;
        uas__conn_release(c);
    }
}

static void on_send(uas_uring *ur, uas_conn *c, int res)
{
    c->ur_send_armed = false;
    c->ur_send_cancel = false;
    if (!c->dead) {
        if (res > 0) {
            uas__conn_consume(c, (size_t)res);
            uas__conn_flush(c);
        } else if (res == -EINTR || res == -EAGAIN) {
            uas__conn_flush(c);
        } else {
            /* A reset or a broken pipe is the peer closing, as with
             * writev; a zero-byte send of a non-empty queue cannot
             * progress either. */
            uas__conn_shutdown(c, UAS_BAD_CONNECTION_CLOSED);
        }
    }
    ur->inflight--;
    uas__conn_release(c);
}

static void accept_arm(uas_uring *ur);

static void on_accept(uas_uring *ur, int res, unsigned flags)
{
    if (!(flags & IORING_CQE_F_MORE))
        ur->accept_armed = false;
    if (res >= 0) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        if (getpeername(res, (struct sockaddr *)&peer, &plen) != 0)
            plen = 0;
        if (ur->accept_cb)
            ur->accept_cb(ur->accept_ud, res, 0, plen ? (struct sockaddr *)&peer : NULL);
        else
            close(res);
    } else if (res != -ECANCELED && ur->accept_cb) {
        /* The owner decides: a shortage of descriptors pauses it
         * (uas_loop_accept_stop), anything else is retried. */
        ur->accept_cb(ur->accept_ud, -1, -res, NULL);
    }
    if (!ur->accept_armed && ur->accept_fd >= 0 && ur->accept_cb)
        accept_arm(ur);
}

static void reap(uas_loop *l)
{
    uas_uring *ur = l->ur;
    if (ur->reaping)
        return;
    ur->reaping = true;
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&ur->ring, &cqe) == 0) {
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        unsigned flags = cqe->flags;
        io_uring_cqe_seen(&ur->ring, cqe);
        void *obj = (void *)(uintptr_t)(ud & ~(uint64_t)OP_MASK);
        switch (ud & OP_MASK) {
        case OP_RECV:
            on_recv(ur, obj, res, flags);
            break;
        case OP_SEND:
            on_send(ur, obj, res);
            break;
        case OP_ACCEPT:
            on_accept(ur, res, flags);
            break;
        default: /* a cancellation's own completion */
            break;
        }
    }
    ur->reaping = false;
}

static void on_ring(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    reap(w->data);
}

/* Right after every wait. A completion that arrives while the loop sleeps
 * interrupts epoll_wait (the kernel's completion work is signalled to the
 * thread), and the completion is posted as the wait returns, empty-handed:
 * reaping here serves it in this iteration instead of after a second
 * epoll_wait that would only report the ring readable. Reading the
 * completion queue costs no system call. */
static void on_check(struct ev_loop *ev, ev_check *w, int revents)
{
    (void)ev;
    (void)revents;
    reap(w->data);
}

bool uas__uring_submit(uas_loop *l, bool reap_after)
{
    uas_uring *ur = l->ur;
    if (io_uring_sq_ready(&ur->ring) == 0)
        return false;
    int rc;
    do
        rc = io_uring_submit(&ur->ring);
    while (rc == -EINTR);
    if (rc < 0)
        UAS_LOG_LIMITED(UAS_LOG_ERROR, "net", "io_uring_submit: %s", strerror(-rc));
    /* Sends usually complete inside the submission: give their buffers
     * back now rather than waking up again for them. */
    if (reap_after)
        reap(l);
    return true;
}

/* ---- requests ---- */

void uas__uring_read_start(uas_conn *c)
{
    uas_uring *ur = c->loop->ur;
    c->ur_reading = true;
    if (c->ur_recv_armed || c->dead)
        return; /* a cancelled one re-arms itself when it ends */
    struct io_uring_sqe *sqe = get_sqe(ur);
    if (!sqe) {
        uas__conn_shutdown(c, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        return;
    }
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = RBUF_GROUP;
    io_uring_sqe_set_data64(sqe, (uintptr_t)c | OP_RECV);
    c->ur_recv_armed = true;
    c->busy++;
    ur->inflight++;
}

static void cancel(uas_uring *ur, uas_conn *c, unsigned op)
{
    struct io_uring_sqe *sqe = get_sqe(ur);
    if (!sqe)
        return; /* the shut-down socket ends it as well */
    io_uring_prep_cancel64(sqe, (uintptr_t)c | op, 0);
    io_uring_sqe_set_data64(sqe, OP_CANCEL);
}

void uas__uring_read_stop(uas_conn *c)
{
    c->ur_reading = false;
    if (c->ur_recv_armed && !c->ur_recv_cancel) {
        c->ur_recv_cancel = true;
        cancel(c->loop->ur, c, OP_RECV);
    }
}

void uas__uring_send(uas_conn *c)
{
    uas_uring *ur = c->loop->ur;
    if (c->ur_send_armed || c->dead || !c->out_head)
        return;
    struct io_uring_sqe *sqe = get_sqe(ur);
    if (!sqe) {
        uas__conn_shutdown(c, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        return;
    }
    int n = 0;
    for (uas_buf *b = c->out_head; b && n < UAS_URING_IOV; b = b->next, n++) {
        c->ur_iov[n].iov_base = b->data + b->off;
        c->ur_iov[n].iov_len = b->len - b->off;
    }
    memset(&c->ur_msg, 0, sizeof(c->ur_msg));
    c->ur_msg.msg_iov = c->ur_iov;
    c->ur_msg.msg_iovlen = (size_t)n;
    io_uring_prep_sendmsg(sqe, c->fd, &c->ur_msg, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, (uintptr_t)c | OP_SEND);
    c->ur_send_armed = true;
    c->busy++;
    ur->inflight++;
}

void uas__uring_cancel(uas_conn *c)
{
    uas_uring *ur = c->loop->ur;
    c->ur_reading = false;
    if (c->ur_recv_armed && !c->ur_recv_cancel) {
        c->ur_recv_cancel = true;
        cancel(ur, c, OP_RECV);
    }
    if (c->ur_send_armed && !c->ur_send_cancel) {
        c->ur_send_cancel = true;
        cancel(ur, c, OP_SEND);
    }
}

static void accept_arm(uas_uring *ur)
{
    struct io_uring_sqe *sqe = get_sqe(ur);
    if (!sqe)
        return;
    io_uring_prep_multishot_accept(sqe, ur->accept_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, (uintptr_t)ur | OP_ACCEPT);
    ur->accept_armed = true;
}

int uas__uring_accept_start(uas_loop *l, int fd, uas_accept_cb cb, void *ud)
{
    uas_uring *ur = l->ur;
    if (ur->accept_fd >= 0 && ur->accept_fd != fd)
        return -EBUSY;
    ur->accept_fd = fd;
    ur->accept_cb = cb;
    ur->accept_ud = ud;
    /* Submitted by the loop's thread (its next flush pass, or
     * uas_loop_poll_fd before an application's poll): the kernel runs a
     * request's completion work on the thread that submitted it, and the
     * thread that starts a server is not the one that runs each loop. */
    if (!ur->accept_armed)
        accept_arm(ur);
    return 0;
}

void uas__uring_accept_stop(uas_loop *l)
{
    uas_uring *ur = l->ur;
    ur->accept_cb = NULL;
    if (ur->accept_armed) {
        struct io_uring_sqe *sqe = get_sqe(ur);
        if (sqe) {
            io_uring_prep_cancel64(sqe, (uintptr_t)ur | OP_ACCEPT, 0);
            io_uring_sqe_set_data64(sqe, OP_CANCEL);
        }
    }
}

/* The connections were shut down (their requests cancelled) before the
 * loop goes: wait for the last completions, which free them and give
 * their buffers back, then the ring and its receive buffers. */
void uas__uring_delete(uas_loop *l)
{
    uas_uring *ur = l->ur;
    if (!ur)
        return;
    if (ur->accept_armed)
        uas__uring_accept_stop(l);
    for (int i = 0; i < 200 && (ur->inflight || ur->accept_armed); i++) {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
        io_uring_submit_and_wait_timeout(&ur->ring, &cqe, 1, &ts, NULL);
        reap(l);
    }
    if (ur->inflight)
        uas_log(UAS_LOG_WARN, "net", "io_uring: %u requests still in flight at loop deletion",
                ur->inflight);
    if (ev_is_active(&ur->ring_w)) {
        ev_ref(l->ev);
        ev_io_stop(l->ev, &ur->ring_w);
    }
    if (ev_is_active(&ur->reap_w)) {
        ev_ref(l->ev);
        ev_check_stop(l->ev, &ur->reap_w);
    }
    io_uring_queue_exit(&ur->ring);
    for (unsigned i = 0; i < RBUF_COUNT; i++)
        if (ur->rbufs[i])
            uas_buf_put(l->pool, ur->rbufs[i]);
    munmap(ur->br, ur->br_bytes);
    uas_free(ur, sizeof(*ur));
    l->ur = NULL;
}
