/* Internal state of uas_channel, shared by the receive side (channel.c) and
 * the send side (channel_send.c). */
#ifndef UAS_CHANNEL_INTERNAL_H
#define UAS_CHANNEL_INTERNAL_H

#include <ua/channel.h>

#include "secpol.h"

enum {
    UAS_HEADER_LEN = 8,    /* MessageType(3) ChunkType(1) MessageSize(4) */
    UAS_MIN_BUFFER = 8192, /* smallest buffer size Part 6 allows */
    UAS_MAX_URL = 4096,    /* longest EndpointUrl in HEL */
};

/* Message types as bits, for the per-state legality grid. */
enum { MT_HEL = 1, MT_ACK = 2, MT_ERR = 4, MT_OPN = 8, MT_MSG = 16, MT_CLO = 32 };

static inline uint8_t uas__message_type(const uint8_t *h)
{
    if (h[0] == 'M' && h[1] == 'S' && h[2] == 'G')
        return MT_MSG;
    if (h[0] == 'O' && h[1] == 'P' && h[2] == 'N')
        return MT_OPN;
    if (h[0] == 'C' && h[1] == 'L' && h[2] == 'O')
        return MT_CLO;
    if (h[0] == 'H' && h[1] == 'E' && h[2] == 'L')
        return MT_HEL;
    if (h[0] == 'A' && h[1] == 'C' && h[2] == 'K')
        return MT_ACK;
    if (h[0] == 'E' && h[1] == 'R' && h[2] == 'R')
        return MT_ERR;
    return 0;
}

struct uas_channel {
    uas_channel_config cfg;
    uas_channel_callbacks cb;
    void *ud;
    uas_bufpool *pool;
    uas_channel_state state;
    uas_status close_reason;

    /* Negotiated in HEL/ACK. */
    uint32_t send_buffer;      /* largest chunk we send */
    uint32_t recv_buffer;      /* largest chunk we accept */
    uint32_t peer_max_message; /* body bytes the peer accepts (0: any) */
    uint32_t peer_max_chunks;
    char *endpoint_url;

    /* Security. */
    const uas_secpol *policy;
    uas_secpol_keys *keys; /* NULL for policy None */
    uint32_t channel_id;
    uint32_t token_id;      /* newest token */
    uint32_t prev_token_id; /* still accepted until the peer uses the new one */
    uint32_t send_token_id; /* the token outgoing chunks carry */
    int64_t prev_expires_at;
    int64_t expires_at;      /* server: newest token's end plus grace */
    int64_t renew_at;        /* client: 75 % of the lifetime */
    int64_t token_end;       /* client: newest token's end plus 25 % grace */
    uint32_t opn_request_id; /* client: the pending OPN */

    /* Sequence numbers and request ids. */
    uint32_t send_seq;
    uint32_t recv_seq;
    bool recv_seq_known;
    uint32_t next_request_id;
    bool last_send_aborted; /* the last uas_channel_send ended with an abort chunk */
    bool closed_by_peer;    /* client: the server's ERR closed the channel */
    int32_t mode;           /* uas_message_security_mode once OPEN */
    uint8_t local_nonce[UAS_SECPOL_NONCE_MAX];
    size_t local_nonce_len;

    /* Receiving. */
    uas_buf *partial;  /* an incomplete chunk */
    uas_buf *assembly; /* bodies of a multi-chunk message */
    uint32_t asm_request_id;
    uint32_t asm_chunks;
    bool asm_active;
    bool asm_discard;
    uas_status asm_error;
    int64_t hello_deadline;

    /* Parking (channel_job.c): while held, received bytes wait in backlog;
     * job_out: a job is with the owner (offload); opn_out: the OPN
     * response the writer handed to a job instead of securing it (when
     * defer_opn). */
    bool held;
    bool job_out;
    bool defer_opn;
    uas_buf *backlog;
    struct uas_channel_job *opn_out;
};

void uas__channel_set_state(uas_channel *ch, uas_channel_state to, uas_status reason);
uas_status uas__channel_fail(uas_channel *ch, uas_status reason, const char *why);

/* channel_send.c */
uas_status uas__channel_send_ack(uas_channel *ch);
uas_status uas__channel_send_err(uas_channel *ch, uas_status code, const char *reason);
uas_status uas__channel_send_clo(uas_channel *ch);
uas_status uas__channel_send_opn_request(uas_channel *ch, int32_t request_type);
uas_status uas__channel_on_opn_request(uas_channel *ch, uint32_t request_id, const uint8_t *body,
                                       size_t len, int64_t now_ms);
uas_status uas__channel_on_opn_response(uas_channel *ch, uint32_t request_id, uint32_t channel_id,
                                        const uint8_t *body, size_t len, int64_t now_ms);

/* channel_job.c */
/* The asymmetric part of a server's OPN, as a job: a copy of the chunk
 * ([0, len), security header in [12, header_len), the sender certificate
 * at cert_off), checked by validate_peer and asym_unprotect. */
uas_status uas__channel_opn_job(uas_channel *ch, const uas_secpol *policy, const uint8_t *chunk,
                                size_t len, size_t header_len, size_t cert_off, size_t cert_len,
                                int64_t now_ms);
/* The OPN response chunk [0, len) with its sequence header written, to be
 * secured (asym_protect) by a job: NULL on out of memory. */
struct uas_channel_job *uas__channel_opn_out_job(uas_channel *ch, const uint8_t *chunk,
                                                 size_t header_len, size_t len, size_t cap);
/* Hands a job to the owner (offload) or runs and completes it inline. */
uas_status uas__channel_park(uas_channel *ch, struct uas_channel_job *job, int64_t now_ms);
/* Keeps bytes received while held. */
uas_status uas__channel_keep(uas_channel *ch, const uint8_t *data, size_t len);
/* channel.c: the end of an OPN once its chunk is verified and decrypted
 * ([header_len, end) is the sequence header and body). */
uas_status uas__channel_open_finish(uas_channel *ch, const uas_secpol *policy, const uint8_t *chunk,
                                    size_t header_len, size_t end, int64_t now_ms);
/* The ERR status of an asym_unprotect failure. */
uas_status uas__channel_open_failed(uas_channel *ch, uas_status st);

/* Server: the credentials of the certificate type policy needs (RSA, or
 * the ECC curve's). */
uas_secpol_cred *uas__channel_cred_for(const uas_channel *ch, const uas_secpol *p);

#endif
