/* What net.c (libev glue, the epoll path) and net_uring.c (the io_uring
 * backend) share: the loop and connection records and the few steps each
 * side calls in the other. Never installed. */
#ifndef UAS_NET_INTERNAL_H
#define UAS_NET_INTERNAL_H

#include <ua/net.h>

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

typedef struct uas_uring uas_uring;

struct uas_loop {
    struct ev_loop *ev;
    uas_bufpool *pool;
    /* Connections with output queued in this iteration, written by
     * flush_pending just before the loop sleeps. */
    ev_prepare flush_w;
    uas_conn *pending;
    bool foreign;  /* the application's libev loop: not ours to destroy */
    uas_uring *ur; /* NULL: sockets are read and written through epoll */
};

/* iovecs of one io_uring send: a queue longer than this goes out in
 * several sends, one after the other. */
enum { UAS_URING_IOV = 16 };

struct uas_conn {
    uas_loop *loop;
    int fd;
    ev_io rio, wio;
    ev_timer timer;
    uas_channel *ch;
    uas_conn_handler h;
    void *ud;
    size_t max_output;
    uas_buf *out_head, *out_tail;
    size_t out_bytes;
    size_t out_mem;  /* capacity of the queued buffers: what the queue holds */
    int busy;        /* nesting of callbacks into the owner: defer the free */
    bool corked;     /* inside a read: coalesce writes until it ends */
    bool closing;    /* flush what is queued, then close */
    bool connecting; /* client: waiting for connect() to finish */
    bool drop;       /* output was refused: close without flushing */
    bool dead;
    int64_t close_by;       /* closing: shut down by then even if output is left */
    bool pending;           /* on loop->pending: holds one busy reference */
    uas_conn *pending_next; /* the loop's list of connections to flush */
    uas_status reason;
    /* io_uring only. Every request in flight holds one busy reference, so
     * the record, its queue and its iovecs outlive the kernel's use. */
    bool ur_reading;     /* want a multishot receive armed */
    bool ur_recv_armed;  /* a multishot receive is in flight */
    bool ur_recv_cancel; /* its cancellation is queued or in flight */
    bool ur_send_armed;  /* a send is in flight (at most one) */
    bool ur_send_cancel; /* its cancellation is queued or in flight */
    int ur_fd;           /* shut down, closed when the last completion is back */
    uas_buf *stash_head; /* received while the channel took no input */
    uas_buf *stash_tail;
    struct msghdr ur_msg; /* of the send in flight */
    struct iovec ur_iov[UAS_URING_IOV];
};

/* net.c, for the io_uring side */
void uas__conn_release(uas_conn *c);
void uas__conn_shutdown(uas_conn *c, uas_status reason);
/* Received bytes (the channel may decrypt them in place): to the
 * channel, or stashed while it takes none. */
void uas__conn_input(uas_conn *c, uint8_t *data, size_t len);
/* The peer closed (n == 0) or a receive failed (-errno). */
void uas__conn_read_failed(uas_conn *c, int err);
/* n bytes of the queue were sent: give their buffers back. */
void uas__conn_consume(uas_conn *c, size_t n);
/* After a send completed: the rest of the queue, or the close. */
void uas__conn_flush(uas_conn *c);

#ifdef UAS_HAVE_IO_URING
/* net_uring.c. NULL with errno-style *err (a negative errno) when the
 * kernel refuses a ring. */
uas_uring *uas__uring_new(uas_loop *l, int *err);
void uas__uring_delete(uas_loop *l);
int uas__uring_fd(const uas_loop *l);
/* The ev_prepare step, after the pending connections queued their sends:
 * submit everything queued with one io_uring_enter and (reap_after) reap
 * what completed meanwhile. False when nothing was queued. */
bool uas__uring_submit(uas_loop *l, bool reap_after);
void uas__uring_read_start(uas_conn *c);
void uas__uring_read_stop(uas_conn *c);
/* Queue one send of the head of c's queue unless one is in flight. */
void uas__uring_send(uas_conn *c);
/* c is shut down: cancel what it has in flight. */
void uas__uring_cancel(uas_conn *c);
/* Multishot accept on a listening socket (uas_loop_accept_start). */
int uas__uring_accept_start(uas_loop *l, int fd, uas_accept_cb cb, void *ud);
void uas__uring_accept_stop(uas_loop *l);
#endif

#endif
