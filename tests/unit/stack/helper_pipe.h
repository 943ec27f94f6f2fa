/* An in-memory wire between a client and a server uas_channel, the way
 * quicly and nghttp2 test their I/O-free cores: each side's send callback
 * appends finished chunks to its output queue, and pipe_transmit moves the
 * queued bytes into the other side's uas_channel_recv, whole or cut into
 * 1-byte or random-size pieces. The clock is the pipe's (now_ms, utc), set
 * by the test. Every callback is recorded so a test can assert what the
 * application would have seen.
 *
 * pipe_fini deletes both channels, returns every queued chunk to the pool
 * and asserts that the pool has no buffer left outstanding. */
#ifndef UAS_TEST_HELPER_PIPE_H
#define UAS_TEST_HELPER_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

enum { PIPE_MAX_EVENTS = 64 };

/* How pipe_transmit cuts the bytes it delivers. */
typedef enum pipe_split {
    PIPE_WHOLE = 0, /* everything queued in one uas_channel_recv call */
    PIPE_CHUNKS,    /* one call per chunk */
    PIPE_BYTES,     /* one call per byte */
    PIPE_RANDOM,    /* random pieces of 1..PIPE_RANDOM_MAX bytes, across chunk boundaries */
} pipe_split;

enum { PIPE_RANDOM_MAX = 3000 };

typedef struct pipe_msg {
    uint32_t request_id;
    uint8_t *body; /* malloc'd copy of what on_message was given */
    size_t len;
} pipe_msg;

typedef struct pipe_err {
    uint32_t request_id;
    uas_status status;
} pipe_err;

struct pipe;

typedef struct pipe_end {
    struct pipe *pipe;
    uas_channel *ch;
    const char *name;
    /* Chunks this side has sent and the peer has not received yet, linked
     * through uas_buf.next in send order. */
    uas_buf *out_head, *out_tail;
    size_t out_count;
    uint64_t chunks_sent;   /* every chunk ever passed to the send callback */
    uas_status send_status; /* what the send callback returns (Good) */
    /* Called from inside on_message after it is recorded (e.g. to answer at
     * once, as a simple server would). */
    void (*on_message_hook)(struct pipe_end *e, uint32_t request_id, const uint8_t *body,
                            size_t len);
    /* What the application saw. */
    pipe_msg msgs[PIPE_MAX_EVENTS];
    size_t nmsgs;
    pipe_err errs[PIPE_MAX_EVENTS];
    size_t nerrs;
    uas_channel_state states[PIPE_MAX_EVENTS];
    uas_status reasons[PIPE_MAX_EVENTS];
    size_t nstates;
    uas_status last_recv; /* status of the last uas_channel_recv call */
} pipe_end;

typedef struct pipe {
    uas_bufpool *pool;
    int64_t now_ms;
    uas_datetime utc;
    pipe_split split;
    uint64_t rng;
    pipe_end client, server;
} pipe;

/* uas_channel_config_default, with channel id 7 on the server side. */
void pipe_config(uas_channel_config *cfg, uas_channel_role role);

/* Creates the pool and both channels (NULL configs: pipe_config). */
void pipe_init(pipe *p, const uas_channel_config *client_cfg, const uas_channel_config *server_cfg);
void pipe_fini(pipe *p);

pipe_end *pipe_peer(pipe *p, pipe_end *e);

/* Moves everything `from` has queued into the peer's uas_channel_recv
 * (cut by p->split) and returns the first Bad status of those calls, after
 * which the rest is dropped as a real owner would close the socket. */
uas_status pipe_transmit(pipe *p, pipe_end *from);
/* Transmits in both directions until nothing is queued. */
void pipe_pump(pipe *p);
/* Client connects to "opc.tcp://pipe:4840"; pumps; asserts both OPEN. */
void pipe_open(pipe *p);

/* Feeds raw bytes (copied first, recv may modify them) into e's channel,
 * cut by p->split. Returns the first Bad status. */
uas_status pipe_feed(pipe *p, pipe_end *e, const uint8_t *data, size_t len);

/* Removes and returns the oldest queued chunk of e (NULL if none); give it
 * back with uas_buf_put(p->pool, b). */
uas_buf *pipe_take(pipe_end *e);
/* The i-th queued chunk of e, or NULL. */
uas_buf *pipe_peek(pipe_end *e, size_t i);
/* Drops everything e has queued. */
void pipe_discard(pipe *p, pipe_end *e);

/* Little-endian field access in raw chunks. */
uint32_t pipe_get_u32(const uint8_t *p);
void pipe_set_u32(uint8_t *p, uint32_t v);

/* A chunk as seen on the wire. For symmetric chunks (MSG, CLO) token_id is
 * set; for OPN the policy URI; for HEL/ACK/ERR only the header and body. */
typedef struct pipe_chunk {
    char type[4]; /* "MSG", NUL-terminated */
    uint8_t chunk_type;
    uint32_t size;
    uint32_t channel_id;
    uint32_t token_id;
    const uint8_t *policy_uri;
    size_t policy_uri_len;
    size_t seq_offset; /* offset of the sequence header (0 for HEL/ACK/ERR) */
    uint32_t seq;
    uint32_t request_id;
    const uint8_t *body; /* after the sequence header (after the header for HEL/ACK/ERR) */
    size_t body_len;
} pipe_chunk;

/* Parses one chunk; asserts that it is well formed. */
void pipe_parse(const uint8_t *data, size_t len, pipe_chunk *out);

/* The Error code of a queued ERR chunk of e (the first one), asserting there
 * is one. */
uas_status pipe_err_code(pipe_end *e);

/* Builders for crafted input: each writes a whole chunk into out (cap bytes)
 * and returns its length. */
size_t pipe_build_hel(uint8_t *out, size_t cap, uint32_t recv_size, uint32_t send_size,
                      uint32_t max_msg, uint32_t max_chunks, const char *url, size_t url_len);
/* An OPN chunk: asymmetric header with the policy URI (null certificate and
 * thumbprint), sequence header, then NodeId + the encoded request. */
size_t pipe_build_opn(uint8_t *out, size_t cap, uint32_t channel_id, const char *policy_uri,
                      uint32_t seq, uint32_t request_id, const void *msg, const uas_type *type);

#endif
