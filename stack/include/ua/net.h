/* The libev glue: an event loop with its buffer pool, and connections that
 * move bytes between a non-blocking socket and a uas_channel. Everything
 * protocol-related happens in the channel; this layer only reads, writes
 * (writev of queued chunks, bounded output queue) and fires timers.
 *
 * Threading: a uas_loop and every connection on it are used from one thread
 * only. Several loops run on several threads with nothing shared but what
 * the owner shares explicitly. */
#ifndef UA_NET_H
#define UA_NET_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;
typedef struct uas_loop uas_loop;
typedef struct uas_conn uas_conn;

/* NULL on failure. max_pool_bytes bounds the idle buffers kept. */
uas_loop *uas_loop_new(size_t max_pool_bytes);
void uas_loop_delete(uas_loop *l);
struct ev_loop *uas_loop_ev(uas_loop *l);
uas_bufpool *uas_loop_pool(uas_loop *l);
/* Monotonic ms of the loop's current iteration. */
int64_t uas_loop_now_ms(uas_loop *l);
/* Run until uas_loop_stop (callable from the loop's thread) or until no
 * watcher is active. */
void uas_loop_run(uas_loop *l);
void uas_loop_stop(uas_loop *l);
/* Run one iteration without blocking more than needed (embedding). */
void uas_loop_run_once(uas_loop *l, bool block);

/* An application's libev loop (not destroyed by uas_loop_delete). */
uas_loop *uas_loop_new_on(struct ev_loop *ev, size_t max_pool_bytes);
bool uas_loop_is_foreign(const uas_loop *l);
void uas_loop_now_update(uas_loop *l);
/* Seconds until t fires, -1 when it is not active. */
struct ev_timer;
double uas_loop_timer_remaining(uas_loop *l, const struct ev_timer *t);

/* How a loop's connections move bytes (docs/Architecture.md, "I/O
 * backends"): epoll readiness with read/writev, or io_uring (multishot
 * receives into provided buffers, one send per connection per iteration,
 * one io_uring_enter per iteration). Timers and the rest stay on libev in
 * both. */
typedef enum uas_io_backend {
    UAS_IO_AUTO = 0, /* io_uring when built in and the kernel allows it, else epoll */
    UAS_IO_EPOLL = 1,
    UAS_IO_URING = 2,
} uas_io_backend;
/* "auto", "epoll", "io_uring"; false when unknown. */
bool uas_io_backend_parse(const char *name, uas_io_backend *out);
const char *uas_io_backend_name(uas_io_backend b);
/* Whether this build has the io_uring backend (liburing at build time). */
bool uas_io_uring_built(void);
/* A loop (on the application's libev loop ev, or a new one when NULL)
 * whose connections use the backend asked for. UAS_IO_AUTO falls back to
 * epoll, with one INFO line per process saying why, when the build has no
 * liburing or the kernel refuses a ring (EPERM, ENOSYS,
 * kernel.io_uring_disabled); UAS_IO_URING then fails: NULL with *status
 * BadNotSupported and an ERR line. BadOutOfMemory otherwise. */
uas_loop *uas_loop_new_io(struct ev_loop *ev, size_t max_pool_bytes, uas_io_backend want,
                          uas_status *status);
/* UAS_IO_EPOLL or UAS_IO_URING: what the loop uses. */
uas_io_backend uas_loop_io_backend(const uas_loop *l);
/* For an application's own poll loop: the descriptor of the loop's ring,
 * readable when completions wait (then run the loop); -1 with epoll.
 * Call it on the loop's thread before each wait: it also hands the
 * kernel what was queued since the last turn. */
int uas_loop_poll_fd(const uas_loop *l);
/* Multishot accept on a listening socket, io_uring loops only (else
 * BadNotSupported): cb gets each new socket (non-blocking, close-on-exec)
 * with its peer address (NULL when unknown), or fd -1 and an errno when
 * accepting failed; accepting goes on until uas_loop_accept_stop. */
struct sockaddr;
typedef void (*uas_accept_cb)(void *ud, int fd, int err, const struct sockaddr *peer);
uas_status uas_loop_accept_start(uas_loop *l, int listen_fd, uas_accept_cb cb, void *ud);
void uas_loop_accept_stop(uas_loop *l);

typedef struct uas_conn_handler {
    /* A complete message; body valid only during the call. */
    void (*on_message)(uas_conn *c, uint32_t request_id, const uint8_t *body, size_t len);
    void (*on_message_error)(uas_conn *c, uint32_t request_id, uas_status status);
    /* OPEN / CLOSED of the channel. */
    void (*on_state)(uas_conn *c, uas_channel_state state, uas_status reason);
    /* The socket is closed; the connection is freed right after this
     * returns. reason Good for an orderly close. */
    void (*on_close)(uas_conn *c, uas_status reason);
} uas_conn_handler;

typedef struct uas_conn_config {
    uas_channel_config channel;
    size_t max_output_bytes; /* queued bytes beyond which a slow reader is dropped */
    /* Client: numeric local address to bind() before connect, e.g. "127.0.0.2"
     * to spread many connections over several loopback sources (each source
     * address has its own ephemeral ports); NULL or "": the kernel chooses.
     * Read during uas_conn_connect only. */
    const char *source_address;
} uas_conn_config;

/* Takes ownership of a connected socket (server side). NULL on out of
 * memory: the socket is then closed and on_close is not called. */
uas_conn *uas_conn_accept(uas_loop *l, int fd, const uas_conn_config *cfg,
                          const uas_conn_handler *h, void *ud);
/* Client: non-blocking connect to opc.tcp://host:port[/path], then HEL/OPN.
 * NULL with *status set when the URL is invalid or the socket fails at once
 * (BadTcpEndpointUrlInvalid also for an invalid source_address,
 * BadNotConnected when it cannot be bound); later failures arrive through
 * on_close. */
uas_conn *uas_conn_connect(uas_loop *l, const char *url, const uas_conn_config *cfg,
                           const uas_conn_handler *h, void *ud, uas_status *status);
uas_status uas_conn_send(uas_conn *c, uint32_t request_id, const void *msg, const uas_type *t);
/* Close (after flushing what is queued, with an ERR/CLO per the channel). */
void uas_conn_close(uas_conn *c, uas_status reason);
/* Close the socket now, without flushing (shutdown of the owner): on_close
 * runs and the connection is freed before this returns, unless called from
 * one of its own callbacks (then right after that callback). */
void uas_conn_abort(uas_conn *c, uas_status reason);
/* Seconds until the connection's timer fires, -1 when none is armed. */
double uas_conn_timer_remaining(const uas_conn *c);
/* The socket (*fd) and the poll() events its watchers wait for (POLLIN,
 * POLLOUT; 0 once closed), for an application's own poll loop. */
short uas_conn_poll_events(const uas_conn *c, int *fd);
/* Parking (channel.h): complete a channel job that ran elsewhere (frees
 * it; a job of a closed connection is just freed), hold the channel while
 * the owner parks a request, release it. Reading pauses while the channel
 * is held and resumes after, with what waited processed in order. */
void uas_conn_job_done(uas_conn *c, uas_channel_job *job);
void uas_conn_hold(uas_conn *c);
/* Ends the hold: calls fn(c, arg) first (the parked request's answer; the
 * connection stays valid during the call), then processes what waited.
 * Nothing is called on a connection already closed. */
void uas_conn_resume(uas_conn *c, void (*fn)(uas_conn *c, void *arg), void *arg);
void *uas_conn_ud(const uas_conn *c);
void uas_conn_set_ud(uas_conn *c, void *ud);
uas_channel *uas_conn_channel(uas_conn *c);
uas_loop *uas_conn_loop(uas_conn *c);
size_t uas_conn_output_bytes(const uas_conn *c);
/* The peer's numeric address (no port), e.g. for failed-login throttling;
 * false (and "") when the socket has none. */
bool uas_conn_peer_address(const uas_conn *c, char *buf, size_t cap);

/* What the connection holds for its peer: queued output plus the
 * channel's partial chunk and message assembly (the memory budget's view,
 * used to find the largest consumer). */
size_t uas_conn_held_bytes(const uas_conn *c);
/* The source a peer is counted under by per-address limits: an IPv4
 * address (also an IPv4-mapped IPv6 one) as it is, an IPv6 address as its
 * /64 ("2001:db8:1:2::/64"), because one subscriber gets a whole /64.
 * sockaddr is a struct sockaddr of family AF_INET or AF_INET6; false (and
 * "") for another family. */
bool uas_address_group(const void *sockaddr, char *buf, size_t cap);
/* The same from a numeric address string ("::1", "10.0.0.1"). */
bool uas_address_group_str(const char *address, char *buf, size_t cap);
/* uas_address_group of the connection's peer. */
bool uas_conn_peer_group(const uas_conn *c, char *buf, size_t cap);

/* Refuses an accepted socket before it gets a connection: writes ERR with
 * code and reason (best effort, never blocking) and closes fd. */
void uas_socket_refuse(int fd, uas_status code, const char *reason);

/* Split opc.tcp://host:port/path into host (bracketless for IPv6) and port
 * (default 4840). BadTcpEndpointUrlInvalid when malformed. */
uas_status uas_parse_endpoint_url(const char *url, char *host, size_t host_len, uint16_t *port);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
