/* One opc.tcp connection and its secure channel, with no I/O.
 *
 * The owner feeds received bytes in (uas_channel_recv) and gets finished,
 * secured chunks out through the send callback; timers are driven by
 * uas_channel_tick with the owner's monotonic clock. The same machine runs
 * the server side (HEL -> ACK, OPN, MSG, CLO) and the client side (HEL,
 * OPN, MSG, token renewal), so a client and a server can be joined in
 * memory and a whole conversation tested without sockets. */
#ifndef UA_CHANNEL_H
#define UA_CHANNEL_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/bufpool.h>
#include <ua/codec.h>
#include <ua/security.h>
#include <ua/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum uas_channel_role {
    UAS_CHANNEL_SERVER = 0,
    UAS_CHANNEL_CLIENT = 1,
} uas_channel_role;

typedef enum uas_channel_state {
    UAS_CHANNEL_FRESH = 0, /* server: waiting for HEL; client: not connected */
    UAS_CHANNEL_HEL_SENT,  /* client */
    UAS_CHANNEL_ACKED,     /* server: HEL answered, waiting for OPN */
    UAS_CHANNEL_OPN_SENT,  /* client */
    UAS_CHANNEL_OPEN,
    UAS_CHANNEL_CLOSED,
} uas_channel_state;

typedef struct uas_channel_offer {
    const uas_secpol *policy;
    int32_t mode; /* Sign (2) or SignAndEncrypt (3); None (1) with policy None */
} uas_channel_offer;

/* Expensive work of a channel, run by its owner (see offload below). */
typedef struct uas_channel_job uas_channel_job;

typedef struct uas_channel_config {
    uas_channel_role role;
    uint32_t channel_id;            /* server: the id this channel gets (unique per server) */
    uint32_t recv_buffer_size;      /* largest chunk accepted (>= 8192) */
    uint32_t send_buffer_size;      /* largest chunk sent (>= 8192) */
    uint32_t max_message_size;      /* largest message body accepted (0: no limit) */
    uint32_t max_chunk_count;       /* chunks per received message (0: no limit) */
    uint32_t requested_lifetime_ms; /* client: token lifetime asked for */
    uint32_t min_lifetime_ms;       /* server: revised lifetime bounds */
    uint32_t max_lifetime_ms;
    uint32_t hello_timeout_ms;       /* server: close if no HEL/OPN in time */
    const uas_limits *decode_limits; /* for the OPN bodies (NULL: defaults) */

    /* Security. Without cred only policy None is possible. */
    uas_secpol_cred *cred;
    /* Server: more credentials, one per further certificate type (the ECC
     * curves); an OPN's policy uses the first of cred and these whose key
     * it takes. */
    uas_secpol_cred *const *more_creds;
    size_t more_cred_count;
    /* Server: the (policy, mode) pairs an OPN may ask for; none listed:
     * policy None only. mode is a uas_message_security_mode. */
    const uas_channel_offer *offers;
    size_t offer_count;
    /* Server and client: validate the peer's certificate (PKI) before any
     * private-key work; Good accepts. NULL: accept any that the policy's
     * key limits allow (tests only). */
    uas_status (*validate_peer)(void *ud, const uint8_t *der, size_t len);
    void *validate_ud;
    /* Server: where the expensive steps of an OPN go (validate_peer, the
     * asymmetric decrypt and verify, the signature of the response), so
     * that the owner can run them on another thread. The callee owns the
     * job: it calls uas_channel_job_run(job) on any thread and then
     * uas_channel_job_done(ch, job) back on the channel's thread, or
     * uas_channel_job_free(job) when the channel is gone. Until then the
     * channel is held (uas_channel_held). A Bad return (queue full) ends
     * the channel with an ERR of that status. NULL: the steps run inline. */
    uas_status (*offload)(void *ud, uas_channel_job *job);
    void *offload_ud;
    /* Client: the policy and mode to open, and the server's certificate
     * (from its endpoint description). */
    const uas_secpol *policy;
    int32_t mode;
    const uint8_t *server_cert;
    size_t server_cert_len;
} uas_channel_config;

/* 64 KiB chunks, 16 MiB messages, 4096 chunks, tokens 10 min..1 h, HEL 10 s. */
void uas_channel_config_default(uas_channel_config *cfg, uas_channel_role role);

typedef struct uas_channel_callbacks {
    /* A finished chunk for the wire; ownership passes to the callee, who
     * returns it to the pool once written. A Bad status (e.g. the output
     * queue is over its limit) closes the channel. Required. */
    uas_status (*send)(void *ud, uas_buf *chunk);
    /* A complete MSG body: the encoding NodeId followed by the message.
     * Valid only during the call. Required. */
    void (*on_message)(void *ud, uint32_t request_id, const uint8_t *body, size_t len);
    /* A message that could not be received whole. Server: a request over
     * the size/chunk limits (answer it with a ServiceFault). Client: a
     * response over the limits, or one the server aborted (the status is
     * the abort chunk's). A request the client aborts is simply dropped.
     * Optional. */
    void (*on_message_error)(void *ud, uint32_t request_id, uas_status status);
    /* OPEN (channel usable), CLOSED (reason Good for an orderly close).
     * Optional. */
    void (*on_state)(void *ud, uas_channel_state state, uas_status reason);
    /* Current UTC time for token timestamps. Optional (system clock). */
    uas_datetime (*utc_now)(void *ud);
} uas_channel_callbacks;

typedef struct uas_channel uas_channel;

/* NULL on out of memory. The pool must outlive the channel. */
uas_channel *uas_channel_new(const uas_channel_config *cfg, const uas_channel_callbacks *cb,
                             void *ud, uas_bufpool *pool, int64_t now_ms);
void uas_channel_delete(uas_channel *ch);

/* Feed received bytes. The buffer is the owner's read buffer and may be
 * modified (chunks are verified and decrypted in place). Good, or the Bad
 * status that closed the channel: an ERR message (server) has then already
 * been passed to send, and the owner should flush its output and close the
 * socket. */
uas_status uas_channel_recv(uas_channel *ch, uint8_t *data, size_t len, int64_t now_ms);

/* ---- parking: expensive work off the channel's thread ----
 * A held channel processes no more received bytes: uas_channel_recv keeps
 * them (the owner should stop reading the socket meanwhile) and they are
 * processed, in order, by uas_channel_release or uas_channel_job_done. So a
 * request parked by the owner, or an OPN whose asymmetric work is out on a
 * worker, is answered before anything that came after it on the channel. */
bool uas_channel_held(const uas_channel *ch);
/* Whether the owner should read more now: always unless held; while held,
 * as long as the backlog has room for another read of read_size bytes
 * (reading on lets the owner notice a peer that leaves). */
bool uas_channel_wants_input(const uas_channel *ch, size_t read_size);
/* Hold the channel (callable from on_message: the bytes after the current
 * message wait). */
void uas_channel_hold(uas_channel *ch);
/* End a hold taken with uas_channel_hold and process what waited. Returns
 * like uas_channel_recv. */
uas_status uas_channel_release(uas_channel *ch, int64_t now_ms);
/* The expensive part of a job. Touches only the job's own data (copied
 * chunk, its own key object, the shared read-only credentials and the
 * validate_peer callback, which must be thread-safe): any thread. */
void uas_channel_job_run(uas_channel_job *job);
/* Completes a job that ran, on the channel's thread, and frees it; then
 * processes what waited unless the channel is held again. Returns like
 * uas_channel_recv. */
uas_status uas_channel_job_done(uas_channel *ch, uas_channel_job *job, int64_t now_ms);
/* Frees a job without completing it (its channel is gone). Any thread. */
void uas_channel_job_free(uas_channel_job *job);

/* Client: send HEL (then OPN once acknowledged) for this endpoint URL. */
uas_status uas_channel_connect(uas_channel *ch, const char *endpoint_url, int64_t now_ms);

/* Encode a message (its binary encoding NodeId, then the body) into MSG
 * chunks for request_id. Returns Good; BadResponseTooLarge /
 * BadRequestTooLarge when it exceeds the peer's limits (if chunks were
 * already out, an abort chunk followed them); BadEncodingError; or a Bad
 * status of the send callback. Before OPEN: BadSecureChannelClosed. */
uas_status uas_channel_send(uas_channel *ch, uint32_t request_id, const void *msg,
                            const uas_type *type);

/* Whether the last failed uas_channel_send already answered the request
 * with an abort chunk (then no ServiceFault must follow). */
bool uas_channel_last_send_aborted(const uas_channel *ch);

/* Client: a fresh request id. */
uint32_t uas_channel_next_request_id(uas_channel *ch);

/* Timers (HEL timeout, token expiry, client token renewal). Returns the
 * next deadline in ms, INT64_MAX for none, and closes the channel if a
 * deadline passed (the state callback says why). */
int64_t uas_channel_tick(uas_channel *ch, int64_t now_ms);

/* Orderly close. Client: sends CLO. Server: sends ERR with the reason if it
 * is Bad. Idempotent. */
void uas_channel_close(uas_channel *ch, uas_status reason);

uas_channel_state uas_channel_get_state(const uas_channel *ch);
/* Client: whether the channel was closed by the server's ERR message (its
 * reason is then the server's verdict, e.g. on our certificate). */
bool uas_channel_closed_by_peer(const uas_channel *ch);
/* Bytes of receive buffers the channel holds between reads: the partial
 * chunk and the message being assembled. */
size_t uas_channel_held_bytes(const uas_channel *ch);
uint32_t uas_channel_get_id(const uas_channel *ch);
uint32_t uas_channel_get_token_id(const uas_channel *ch);
/* What the peer accepts (after HEL/ACK): its receive buffer, message size
 * and chunk count limits. */
uint32_t uas_channel_peer_max_message_size(const uas_channel *ch);
/* The channel's policy and mode (None before OPN). */
const uas_secpol *uas_channel_policy(const uas_channel *ch);
int32_t uas_channel_security_mode(const uas_channel *ch);
/* Whether der is the certificate the peer secured the channel with. */
bool uas_channel_peer_is(const uas_channel *ch, const uint8_t *der, size_t len);
/* Our certificate (NULL for None). */
const uint8_t *uas_channel_local_cert(const uas_channel *ch, size_t *len);
/* Session-level signatures with this channel's keys: sign with our
 * private key, verify with the peer's certificate (Part 4, 5.6.2/5.6.3).
 * BadSecurityChecksFailed on a bad signature; BadInvalidState for None. */
uas_status uas_channel_sign(const uas_channel *ch, const uint8_t *data, size_t len, uint8_t *sig,
                            size_t cap, size_t *sig_len);
/* The ECC policies with the SecureChannelEnhancements of 1.05.07
 * (ECC_nistP256_AesGcm ...) bind the session signatures to the channel:
 * they cover ChannelThumbprint | nonce_a | H(cert_0) .. H(cert_n-1) |
 * nonce_b (Part 4, 5.6.2 / 5.6.3) instead of certificate | nonce.
 * uas_channel_bound_data builds that (*out from uas_malloc, *out_len
 * bytes); BadInvalidState on other policies. */
bool uas_channel_enhanced(const uas_channel *ch);
uas_status uas_channel_bound_data(const uas_channel *ch, const uint8_t *nonce_a, size_t nonce_a_len,
                                  const uint8_t *const *certs, const size_t *cert_lens,
                                  size_t n_certs, const uint8_t *nonce_b, size_t nonce_b_len,
                                  uint8_t **out, size_t *out_len);
uas_status uas_channel_verify(const uas_channel *ch, const uint8_t *data, size_t len,
                              const uint8_t *sig, size_t sig_len);

/* Server: the endpoint URL the client sent in HEL (empty before). */
const char *uas_channel_endpoint_url(const uas_channel *ch);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
