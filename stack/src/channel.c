/* opc.tcp connection + secure channel state machine (Part 6, 6.7 and 7.1),
 * without I/O. Receiving: chunk framing with partial reads, the legal
 * message per state, security header and token checks, sequence numbers,
 * chunk assembly under the negotiated limits. Sending lives in
 * channel_send.c. */
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>
#include <ua/mem.h>
#include <ua/membudget.h>

#include "channel_internal.h"

/* Which message types each role accepts in each state. */
static const uint8_t legal[2][UAS_CHANNEL_CLOSED + 1] = {
    [UAS_CHANNEL_SERVER] =
        {
            [UAS_CHANNEL_FRESH] = MT_HEL,
            [UAS_CHANNEL_ACKED] = MT_OPN,
            [UAS_CHANNEL_OPEN] = MT_OPN | MT_MSG | MT_CLO,
        },
    [UAS_CHANNEL_CLIENT] =
        {
            [UAS_CHANNEL_HEL_SENT] = MT_ACK | MT_ERR,
            [UAS_CHANNEL_OPN_SENT] = MT_OPN | MT_ERR,
            [UAS_CHANNEL_OPEN] = MT_OPN | MT_MSG | MT_ERR,
        },
};

/* Legal transitions: the previous states each state may be entered from. */
static const uint8_t entered_from[UAS_CHANNEL_CLOSED + 1] = {
    [UAS_CHANNEL_HEL_SENT] = 1u << UAS_CHANNEL_FRESH,
    [UAS_CHANNEL_ACKED] = 1u << UAS_CHANNEL_FRESH,
    [UAS_CHANNEL_OPN_SENT] = 1u << UAS_CHANNEL_HEL_SENT,
    [UAS_CHANNEL_OPEN] = (1u << UAS_CHANNEL_ACKED) | (1u << UAS_CHANNEL_OPN_SENT),
    [UAS_CHANNEL_CLOSED] = 0x1F,
};

void uas__channel_set_state(uas_channel *ch, uas_channel_state to, uas_status reason)
{
    if (!(entered_from[to] & (1u << ch->state)))
        abort(); /* a logic error in this file, never reachable from the wire */
    ch->state = to;
    if (to == UAS_CHANNEL_CLOSED)
        ch->close_reason = reason;
    if (ch->cb.on_state)
        ch->cb.on_state(ch->ud, to, reason);
}

void uas_channel_config_default(uas_channel_config *cfg, uas_channel_role role)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->role = role;
    cfg->recv_buffer_size = 65536;
    cfg->send_buffer_size = 65536;
    cfg->max_message_size = 16u << 20;
    cfg->max_chunk_count = 4096;
    cfg->requested_lifetime_ms = 3600000;
    cfg->min_lifetime_ms = 600000;
    cfg->max_lifetime_ms = 3600000;
    cfg->hello_timeout_ms = 10000;
}

static uas_datetime system_utc(void *ud)
{
    (void)ud;
    return uas_datetime_now();
}

uas_channel *uas_channel_new(const uas_channel_config *cfg, const uas_channel_callbacks *cb,
                             void *ud, uas_bufpool *pool, int64_t now_ms)
{
    if (!cfg || !cb || !cb->send || !cb->on_message || !pool ||
        cfg->recv_buffer_size < UAS_MIN_BUFFER || cfg->send_buffer_size < UAS_MIN_BUFFER)
        return NULL;
    uas_channel *ch = uas_calloc(1, sizeof(*ch));
    if (!ch)
        return NULL;
    ch->cfg = *cfg;
    if (!ch->cfg.decode_limits)
        ch->cfg.decode_limits = &uas_limits_default;
    ch->cb = *cb;
    if (!ch->cb.utc_now)
        ch->cb.utc_now = system_utc;
    ch->ud = ud;
    ch->pool = pool;
    ch->policy = &uas_secpol_none;
    ch->mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    if (cfg->role == UAS_CHANNEL_CLIENT && cfg->policy && cfg->policy != &uas_secpol_none) {
        /* The client knows its policy, mode and the server's certificate
         * before it connects. */
        ch->policy = cfg->policy;
        ch->mode = cfg->mode;
        if (uas_secpol_keys_new(cfg->policy, cfg->cred, &ch->keys) != UAS_GOOD ||
            uas_secpol_keys_set_mode(ch->keys, cfg->mode) != UAS_GOOD ||
            uas_secpol_keys_set_peer(ch->keys, cfg->server_cert, cfg->server_cert_len) !=
                UAS_GOOD) {
            uas_secpol_keys_free(ch->keys);
            uas_free(ch, sizeof(*ch));
            return NULL;
        }
    }
    ch->state = UAS_CHANNEL_FRESH;
    ch->channel_id = cfg->role == UAS_CHANNEL_SERVER ? cfg->channel_id : 0;
    ch->send_buffer = cfg->send_buffer_size;
    ch->recv_buffer = cfg->recv_buffer_size;
    /* Sequence numbers start at 1, at 0 for the ECC policies (Part 6,
     * 6.7.2.4); a server learns its policy from the first OPN. */
    ch->send_seq = cfg->role == UAS_CHANNEL_CLIENT && cfg->policy && cfg->policy->ecc ? 0 : 1;
    ch->next_request_id = 1;
    ch->hello_deadline = cfg->role == UAS_CHANNEL_SERVER && cfg->hello_timeout_ms
                             ? now_ms + cfg->hello_timeout_ms
                             : INT64_MAX;
    ch->renew_at = INT64_MAX;
    ch->expires_at = INT64_MAX;
    return ch;
}

void uas_channel_delete(uas_channel *ch)
{
    if (!ch)
        return;
    uas_buf_put(ch->pool, ch->partial);
    uas_buf_put(ch->pool, ch->assembly);
    uas_buf_put(ch->pool, ch->backlog);
    uas_channel_job_free(ch->opn_out);
    if (ch->keys)
        uas_secpol_keys_free(ch->keys);
    uas_wipe(ch->local_nonce, sizeof(ch->local_nonce));
    if (ch->endpoint_url)
        uas_free(ch->endpoint_url, strlen(ch->endpoint_url) + 1);
    uas_free(ch, sizeof(*ch));
}

uas_channel_state uas_channel_get_state(const uas_channel *ch)
{
    return ch->state;
}

uint32_t uas_channel_get_id(const uas_channel *ch)
{
    return ch->channel_id;
}

uint32_t uas_channel_get_token_id(const uas_channel *ch)
{
    return ch->token_id;
}

size_t uas_channel_held_bytes(const uas_channel *ch)
{
    return (ch->partial ? ch->partial->cap : 0) + (ch->assembly ? ch->assembly->cap : 0);
}

uint32_t uas_channel_peer_max_message_size(const uas_channel *ch)
{
    return ch->peer_max_message;
}

const uas_secpol *uas_channel_policy(const uas_channel *ch)
{
    return ch->policy;
}

int32_t uas_channel_security_mode(const uas_channel *ch)
{
    return ch->mode;
}

bool uas_channel_peer_is(const uas_channel *ch, const uint8_t *der, size_t len)
{
    return ch->keys && uas_secpol_keys_peer_is(ch->keys, der, len);
}

const uint8_t *uas_channel_local_cert(const uas_channel *ch, size_t *len)
{
    *len = 0;
    return ch->keys ? uas_secpol_keys_local_cert(ch->keys, len) : NULL;
}

uas_status uas_channel_sign(const uas_channel *ch, const uint8_t *data, size_t len, uint8_t *sig,
                            size_t cap, size_t *sig_len)
{
    if (!ch->keys)
        return UAS_BAD_INVALID_STATE;
    return uas_secpol_keys_sign(ch->keys, data, len, sig, cap, sig_len);
}

bool uas_channel_enhanced(const uas_channel *ch)
{
    return ch->keys && uas_secpol_keys_enhanced(ch->keys);
}

uas_status uas_channel_bound_data(const uas_channel *ch, const uint8_t *nonce_a, size_t nonce_a_len,
                                  const uint8_t *const *certs, const size_t *cert_lens,
                                  size_t n_certs, const uint8_t *nonce_b, size_t nonce_b_len,
                                  uint8_t **out, size_t *out_len)
{
    return uas_secpol_keys_bound_data(ch->keys, nonce_a, nonce_a_len, certs, cert_lens, n_certs,
                                      nonce_b, nonce_b_len, out, out_len);
}

uas_status uas_channel_verify(const uas_channel *ch, const uint8_t *data, size_t len,
                              const uint8_t *sig, size_t sig_len)
{
    if (!ch->keys)
        return UAS_BAD_INVALID_STATE;
    return uas_secpol_keys_verify(ch->keys, data, len, sig, sig_len);
}

uas_status uas_channel_clone_keys(const uas_channel *ch, uas_secpol_keys **out)
{
    *out = NULL;
    return ch->keys ? uas_secpol_keys_clone_peer(ch->keys, out) : UAS_GOOD;
}

const char *uas_channel_endpoint_url(const uas_channel *ch)
{
    return ch->endpoint_url ? ch->endpoint_url : "";
}

uint32_t uas_channel_next_request_id(uas_channel *ch)
{
    uint32_t id = ch->next_request_id++;
    if (ch->next_request_id == 0)
        ch->next_request_id = 1;
    return id;
}

/* Fatal error: the server tells the peer why (ERR), then the channel is
 * closed. Returns the reason so callers can `return fail(...)`. */
uas_status uas__channel_fail(uas_channel *ch, uas_status reason, const char *why)
{
    if (ch->state == UAS_CHANNEL_CLOSED)
        return ch->close_reason;
    if (ch->cfg.role == UAS_CHANNEL_SERVER)
        (void)uas__channel_send_err(ch, reason, why);
    uas__channel_set_state(ch, UAS_CHANNEL_CLOSED, reason);
    return reason;
}

/* Part 6 6.7.7: a verified chunk with a wrong sequence number is logged as
 * Bad_SequenceNumberInvalid and answered like any failed security check,
 * with the same words, so the answer tells nothing of which check failed. */
static uas_status bad_sequence(uas_channel *ch, uint32_t seq)
{
    uas_log(UAS_LOG_WARN, "channel", "channel %u: BadSequenceNumberInvalid (%u after %u)",
            ch->channel_id, seq, ch->recv_seq);
    return uas__channel_fail(ch, UAS_BAD_SECURITY_CHECKS_FAILED, "chunk failed verification");
}

/* ---- little readers over one chunk ---- */

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static bool rd_u32(rd *r, uint32_t *v)
{
    if (r->end - r->p < 4)
        return false;
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
         (uint32_t)r->p[3] << 24;
    r->p += 4;
    return true;
}

/* A ByteString/String field: -1 is null; the bytes stay in the chunk. */
static bool rd_bytes(rd *r, const uint8_t **data, int32_t *len, uint32_t max)
{
    uint32_t n;
    if (!rd_u32(r, &n))
        return false;
    *len = (int32_t)n;
    *data = r->p;
    if (*len == -1)
        return true;
    if (*len < 0 || (uint32_t)*len > max || (size_t)(r->end - r->p) < (size_t)*len)
        return false;
    r->p += *len;
    return true;
}

/* ---- HEL / ACK / ERR ---- */

static uas_status on_hello(uas_channel *ch, rd *r)
{
    uint32_t version, recv_size, send_size, max_msg, max_chunks;
    const uint8_t *url;
    int32_t url_len;
    if (!rd_u32(r, &version) || !rd_u32(r, &recv_size) || !rd_u32(r, &send_size) ||
        !rd_u32(r, &max_msg) || !rd_u32(r, &max_chunks))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "truncated HEL");
    if (!rd_bytes(r, &url, &url_len, UAS_MAX_URL) || url_len <= 0)
        return uas__channel_fail(ch, UAS_BAD_TCP_ENDPOINT_URL_INVALID,
                                 "endpoint URL missing or longer than 4096 bytes");
    if (recv_size < UAS_MIN_BUFFER || send_size < UAS_MIN_BUFFER)
        return uas__channel_fail(ch, UAS_BAD_TCP_INTERNAL_ERROR, "buffer sizes below 8192 bytes");
    ch->endpoint_url = uas_malloc((size_t)url_len + 1);
    if (!ch->endpoint_url)
        return uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "out of memory");
    memcpy(ch->endpoint_url, url, (size_t)url_len);
    ch->endpoint_url[url_len] = 0;
    /* Negotiate: never send chunks larger than the client receives, never
     * accept larger than it sends. */
    if (ch->send_buffer > recv_size)
        ch->send_buffer = recv_size;
    if (ch->recv_buffer > send_size)
        ch->recv_buffer = send_size;
    ch->peer_max_message = max_msg;
    ch->peer_max_chunks = max_chunks;
    uas_status st = uas__channel_send_ack(ch);
    if (st != UAS_GOOD)
        return uas__channel_fail(ch, st, "cannot send ACK");
    uas__channel_set_state(ch, UAS_CHANNEL_ACKED, UAS_GOOD);
    return UAS_GOOD;
}

static uas_status on_ack(uas_channel *ch, rd *r)
{
    uint32_t version, recv_size, send_size, max_msg, max_chunks;
    if (!rd_u32(r, &version) || !rd_u32(r, &recv_size) || !rd_u32(r, &send_size) ||
        !rd_u32(r, &max_msg) || !rd_u32(r, &max_chunks))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "truncated ACK");
    if (recv_size < UAS_MIN_BUFFER || send_size < UAS_MIN_BUFFER ||
        send_size > ch->cfg.recv_buffer_size)
        return uas__channel_fail(ch, UAS_BAD_TCP_INTERNAL_ERROR, "invalid ACK buffer sizes");
    if (ch->send_buffer > recv_size)
        ch->send_buffer = recv_size;
    ch->recv_buffer = ch->cfg.recv_buffer_size;
    ch->peer_max_message = max_msg;
    ch->peer_max_chunks = max_chunks;
    uas__channel_set_state(ch, UAS_CHANNEL_OPN_SENT, UAS_GOOD);
    uas_status st = uas__channel_send_opn_request(ch, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE);
    if (st != UAS_GOOD)
        return uas__channel_fail(ch, st, "cannot send OPN");
    return UAS_GOOD;
}

static uas_status on_err(uas_channel *ch, rd *r)
{
    uint32_t code = UAS_BAD_TCP_INTERNAL_ERROR;
    if (!rd_u32(r, &code) || !uas_is_bad(code))
        code = UAS_BAD_TCP_INTERNAL_ERROR;
    ch->closed_by_peer = true;
    uas__channel_set_state(ch, UAS_CHANNEL_CLOSED, code);
    return code;
}

/* ---- secure conversation headers ---- */

/* Sequence numbers rise by one per chunk; after UINT32_MAX - 1024 they may
 * wrap to a value below 1024 (Part 6, 6.7.2.4). */
static bool seq_ok(uas_channel *ch, uint32_t seq)
{
    if (!ch->recv_seq_known) {
        ch->recv_seq_known = true;
        ch->recv_seq = seq;
        return true;
    }
    uint32_t expect = ch->recv_seq + 1;
    bool ok = seq == expect || (ch->recv_seq > UINT32_MAX - 1024 && seq < 1024);
    if (ok)
        ch->recv_seq = seq;
    return ok;
}

/* Checks the token of a symmetric chunk. A server keeps the previous token
 * alive until the client uses the new one; a client accepts both while the
 * server may still answer with the old one. */
static uas_status check_token(uas_channel *ch, uint32_t token, int64_t now_ms)
{
    if (token == ch->token_id) {
        if (ch->cfg.role == UAS_CHANNEL_SERVER && ch->prev_token_id) {
            ch->prev_token_id = 0; /* the client switched: the old token is gone */
            ch->send_token_id = ch->token_id;
            if (ch->keys)
                uas_secpol_keys_drop_prev(ch->keys);
        }
        return UAS_GOOD;
    }
    if (token == ch->prev_token_id && ch->prev_token_id && now_ms < ch->prev_expires_at)
        return UAS_GOOD;
    return UAS_BAD_SECURE_CHANNEL_TOKEN_UNKNOWN;
}

#define ASSEMBLY_NO_MEMORY "no memory to assemble the message (memory budget or heap)"

static void assembly_reset(uas_channel *ch)
{
    if (ch->assembly)
        ch->assembly->len = 0;
    ch->asm_active = false;
    ch->asm_discard = false;
    ch->asm_chunks = 0;
}

/* Adds a chunk body to the message being assembled, within the limits. */
static uas_status assembly_add(uas_channel *ch, const uint8_t *body, size_t len)
{
    ch->asm_chunks++;
    size_t have = ch->assembly ? ch->assembly->len : 0;
    if ((ch->cfg.max_chunk_count && ch->asm_chunks > ch->cfg.max_chunk_count) ||
        (ch->cfg.max_message_size && have + len > ch->cfg.max_message_size))
        return ch->cfg.role == UAS_CHANNEL_SERVER ? UAS_BAD_REQUEST_TOO_LARGE
                                                  : UAS_BAD_RESPONSE_TOO_LARGE;
    if (!ch->assembly || ch->assembly->cap < have + len) {
        size_t want = have + len;
        /* Grow geometrically within the message size limit. */
        size_t cap = ch->assembly ? (size_t)ch->assembly->cap * 2 : ch->recv_buffer;
        if (cap < want)
            cap = want;
        uas_buf *nb = uas_buf_get(ch->pool, cap);
        /* Held across reads for as long as the peer takes to send the
         * rest: the memory budget says whether it may. Without room for
         * the geometric growth, the exact size may still fit. */
        if (nb && nb->cap > want && !uas_buf_charge(nb, false)) {
            uas_buf_put(ch->pool, nb);
            nb = NULL;
        }
        if (!nb)
            nb = uas_buf_get(ch->pool, want);
        if (nb && !uas_buf_charge(nb, false)) {
            uas_buf_put(ch->pool, nb);
            nb = NULL;
        }
        if (!nb)
            return UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
        if (ch->assembly) {
            memcpy(nb->data, ch->assembly->data, have);
            uas_buf_put(ch->pool, ch->assembly);
        }
        nb->len = (uint32_t)have;
        ch->assembly = nb;
    }
    memcpy(ch->assembly->data + have, body, len);
    ch->assembly->len = (uint32_t)(have + len);
    return UAS_GOOD;
}

static uas_status on_symmetric(uas_channel *ch, uint8_t *chunk, size_t len, uint8_t mt,
                               uint8_t chunk_type, int64_t now_ms)
{
    rd r = {chunk + UAS_HEADER_LEN, chunk + len};
    uint32_t channel_id, token;
    if (!rd_u32(&r, &channel_id) || !rd_u32(&r, &token))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "truncated header");
    if (channel_id != ch->channel_id)
        return uas__channel_fail(ch, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN, "unknown channel id");
    uas_status st = check_token(ch, token, now_ms);
    if (st != UAS_GOOD)
        return uas__channel_fail(ch, st, "unknown security token");
    size_t header_len = UAS_HEADER_LEN + 8;
    size_t end = len;
    st = ch->policy->sym_unprotect(ch->keys, chunk, header_len, &end);
    if (st != UAS_GOOD)
        return uas__channel_fail(ch, UAS_BAD_SECURITY_CHECKS_FAILED, "chunk failed verification");
    r.p = chunk + header_len;
    r.end = chunk + end;
    uint32_t seq, request_id;
    if (!rd_u32(&r, &seq) || !rd_u32(&r, &request_id))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "truncated header");
    if (!seq_ok(ch, seq))
        return bad_sequence(ch, seq);
    const uint8_t *body = r.p;
    size_t body_len = (size_t)(r.end - r.p);

    if (mt == MT_CLO) {
        if (chunk_type != 'F')
            return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "chunked CLO");
        uas__channel_set_state(ch, UAS_CHANNEL_CLOSED, UAS_GOOD);
        return UAS_BAD_SECURE_CHANNEL_CLOSED;
    }
    /* Chunks of different messages are never interleaved. */
    if (ch->asm_active && request_id != ch->asm_request_id)
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID,
                                 "chunks of two messages interleaved");
    switch (chunk_type) {
    case 'A':
        /* The peer gave up on this message; a server has nothing to answer,
         * a client reports the error the server put in the abort body. */
        if (ch->cfg.role == UAS_CHANNEL_CLIENT && ch->cb.on_message_error) {
            rd ab = {body, body + body_len};
            uint32_t code = UAS_BAD_TCP_INTERNAL_ERROR;
            if (!rd_u32(&ab, &code) || !uas_is_bad(code))
                code = UAS_BAD_TCP_INTERNAL_ERROR;
            ch->cb.on_message_error(ch->ud, request_id, code);
        }
        assembly_reset(ch);
        return UAS_GOOD;
    case 'C':
        if (!ch->asm_active) {
            ch->asm_active = true;
            ch->asm_request_id = request_id;
        }
        if (!ch->asm_discard) {
            st = assembly_add(ch, body, body_len);
            if (st == UAS_BAD_TCP_NOT_ENOUGH_RESOURCES)
                return uas__channel_fail(ch, st, ASSEMBLY_NO_MEMORY);
            if (st != UAS_GOOD) {
                /* Too large: drop the rest of it, answer once it ends. */
                ch->asm_discard = true;
                ch->asm_error = st;
                if (ch->assembly)
                    ch->assembly->len = 0;
            }
        }
        return UAS_GOOD;
    case 'F':
        break;
    default:
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "unknown chunk type");
    }
    if (!ch->asm_active) {
        /* The common case: a single chunk, handed up without a copy. */
        if (ch->cfg.max_message_size && body_len > ch->cfg.max_message_size) {
            if (ch->cb.on_message_error)
                ch->cb.on_message_error(ch->ud, request_id,
                                        ch->cfg.role == UAS_CHANNEL_SERVER
                                            ? UAS_BAD_REQUEST_TOO_LARGE
                                            : UAS_BAD_RESPONSE_TOO_LARGE);
            return UAS_GOOD;
        }
        ch->cb.on_message(ch->ud, request_id, body, body_len);
        return UAS_GOOD;
    }
    if (!ch->asm_discard) {
        st = assembly_add(ch, body, body_len);
        if (st == UAS_BAD_TCP_NOT_ENOUGH_RESOURCES)
            return uas__channel_fail(ch, st, ASSEMBLY_NO_MEMORY);
        if (st != UAS_GOOD) {
            ch->asm_discard = true;
            ch->asm_error = st;
        }
    }
    if (ch->asm_discard) {
        if (ch->cb.on_message_error)
            ch->cb.on_message_error(ch->ud, request_id, ch->asm_error);
    } else {
        ch->cb.on_message(ch->ud, request_id, ch->assembly->data, ch->assembly->len);
    }
    assembly_reset(ch);
    /* One outsized message must not pin a large buffer for the connection's
     * lifetime. */
    if (ch->assembly && ch->assembly->cap > ch->recv_buffer) {
        uas_buf_put(ch->pool, ch->assembly);
        ch->assembly = NULL;
    }
    return UAS_GOOD;
}

/* Server: the credentials of the certificate type the policy needs. */
uas_secpol_cred *uas__channel_cred_for(const uas_channel *ch, const uas_secpol *p)
{
    if (uas_secpol_cred_fits(p, ch->cfg.cred))
        return ch->cfg.cred;
    for (size_t i = 0; i < ch->cfg.more_cred_count; i++)
        if (uas_secpol_cred_fits(p, ch->cfg.more_creds[i]))
            return ch->cfg.more_creds[i];
    return ch->cfg.cred;
}

/* The policy an OPN names, if this channel may use it: a client only its
 * own; a server one of its offers (None when it offers nothing). */
static const uas_secpol *channel_policy(uas_channel *ch, const uint8_t *uri, size_t len)
{
    const uas_secpol *p = uas_secpol_lookup(uri, len, true);
    if (!p)
        return NULL;
    if (ch->cfg.role == UAS_CHANNEL_CLIENT)
        return p == ch->policy ? p : NULL;
    if (ch->cfg.offer_count == 0)
        return p == &uas_secpol_none ? p : NULL;
    for (size_t i = 0; i < ch->cfg.offer_count; i++)
        if (ch->cfg.offers[i].policy == p)
            return p;
    return NULL;
}

static uas_status on_open(uas_channel *ch, uint8_t *chunk, size_t len, uint8_t chunk_type,
                          int64_t now_ms)
{
    if (chunk_type != 'F')
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "chunked OPN");
    rd r = {chunk + UAS_HEADER_LEN, chunk + len};
    uint32_t channel_id;
    const uint8_t *uri, *cert, *thumb;
    int32_t uri_len, cert_len, thumb_len;
    if (!rd_u32(&r, &channel_id) || !rd_bytes(&r, &uri, &uri_len, 1024) ||
        !rd_bytes(&r, &cert, &cert_len, ch->recv_buffer) || !rd_bytes(&r, &thumb, &thumb_len, 64))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID,
                                 "malformed asymmetric security header");
    const uas_secpol *policy = uri_len > 0 ? channel_policy(ch, uri, (size_t)uri_len) : NULL;
    if (!policy)
        return uas__channel_fail(ch, UAS_BAD_SECURITY_POLICY_REJECTED,
                                 "security policy not offered");
    if (ch->state == UAS_CHANNEL_OPEN && policy != ch->policy)
        return uas__channel_fail(ch, UAS_BAD_SECURITY_POLICY_REJECTED,
                                 "security policy changed on renewal");
    if (ch->cfg.role == UAS_CHANNEL_SERVER && ch->state == UAS_CHANNEL_OPEN &&
        channel_id != ch->channel_id)
        return uas__channel_fail(ch, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN, "unknown channel id");
    size_t header_len = (size_t)(r.p - chunk);
    if (policy != &uas_secpol_none) {
        if (!ch->keys) {
            uas_status kst =
                uas_secpol_keys_new(policy, uas__channel_cred_for(ch, policy), &ch->keys);
            if (kst != UAS_GOOD)
                return uas__channel_fail(ch, kst, "no credentials for this policy");
            if (policy->ecc)
                ch->send_seq = 0;
        }
        /* The PKI judges the sender before any private-key work.
         * Renewals are judged again: a certificate revoked or removed
         * from the trust list since the channel opened ends the channel
         * at its next renewal (the PKI's verdict cache keeps that cheap).
         * Both, and the private-key work, are a job (channel_job.c) that
         * the owner may run on another thread. */
        if (cert_len <= 0)
            return uas__channel_fail(ch, UAS_BAD_CERTIFICATE_INVALID, "no sender certificate");
        return uas__channel_opn_job(ch, policy, chunk, len, header_len, (size_t)(cert - chunk),
                                    (size_t)cert_len, now_ms);
    }
    size_t end = len;
    uas_status st = policy->asym_unprotect(ch->keys, chunk, header_len, &end);
    if (st != UAS_GOOD)
        return uas__channel_open_failed(ch, st);
    return uas__channel_open_finish(ch, policy, chunk, header_len, end, now_ms);
}

uas_status uas__channel_open_failed(uas_channel *ch, uas_status st)
{
    return uas__channel_fail(ch,
                             st == UAS_BAD_CERTIFICATE_INVALID ||
                                     st == UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED
                                 ? st
                                 : UAS_BAD_SECURITY_CHECKS_FAILED,
                             "OPN failed verification");
}

uas_status uas__channel_open_finish(uas_channel *ch, const uas_secpol *policy, const uint8_t *chunk,
                                    size_t header_len, size_t end, int64_t now_ms)
{
    rd r = {chunk + header_len, chunk + end};
    uint32_t channel_id = (uint32_t)chunk[8] | (uint32_t)chunk[9] << 8 | (uint32_t)chunk[10] << 16 |
                          (uint32_t)chunk[11] << 24;
    uint32_t seq, request_id;
    if (!rd_u32(&r, &seq) || !rd_u32(&r, &request_id))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "truncated OPN");
    if (!seq_ok(ch, seq))
        return bad_sequence(ch, seq);
    ch->policy = policy;
    if (ch->cfg.role == UAS_CHANNEL_SERVER)
        return uas__channel_on_opn_request(ch, request_id, r.p, (size_t)(r.end - r.p), now_ms);
    return uas__channel_on_opn_response(ch, request_id, channel_id, r.p, (size_t)(r.end - r.p),
                                        now_ms);
}

/* Dispatches one complete chunk (the buffer may be modified in place). */
static uas_status on_chunk(uas_channel *ch, uint8_t *chunk, size_t len, int64_t now_ms)
{
    uint8_t mt = uas__message_type(chunk);
    uint8_t chunk_type = chunk[3];
    if (!mt)
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "unknown message type");
    if (!(legal[ch->cfg.role][ch->state] & mt))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID,
                                 "message not allowed in this state");
    rd r = {chunk + UAS_HEADER_LEN, chunk + len};
    switch (mt) {
    case MT_HEL:
        return on_hello(ch, &r);
    case MT_ACK:
        return on_ack(ch, &r);
    case MT_ERR:
        return on_err(ch, &r);
    case MT_OPN:
        return on_open(ch, chunk, len, chunk_type, now_ms);
    default:
        return on_symmetric(ch, chunk, len, mt, chunk_type, now_ms);
    }
}

static uint32_t chunk_size(const uint8_t *h)
{
    return (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
}

/* Validates a chunk header before its body is awaited, so a lying size is
 * refused at once instead of being waited for. */
static uas_status check_header(uas_channel *ch, const uint8_t *h)
{
    uint32_t size = chunk_size(h);
    if (!uas__message_type(h))
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TYPE_INVALID, "unknown message type");
    /* Before the HEL is negotiated a HEL can be at most a few KiB. */
    uint32_t max = ch->state == UAS_CHANNEL_FRESH ? UAS_MIN_BUFFER : ch->recv_buffer;
    if (size < UAS_HEADER_LEN + 4 || size > max)
        return uas__channel_fail(ch, UAS_BAD_TCP_MESSAGE_TOO_LARGE, "chunk size out of range");
    return UAS_GOOD;
}

uas_status uas_channel_recv(uas_channel *ch, uint8_t *data, size_t len, int64_t now_ms)
{
    while (len > 0) {
        if (ch->state == UAS_CHANNEL_CLOSED)
            return ch->close_reason == UAS_GOOD ? UAS_BAD_SECURE_CHANNEL_CLOSED : ch->close_reason;
        if (ch->held)
            return uas__channel_keep(ch, data, len);
        uas_buf *p = ch->partial;
        if (!p && len >= UAS_HEADER_LEN) {
            uas_status st = check_header(ch, data);
            if (st != UAS_GOOD)
                return st;
            uint32_t size = chunk_size(data);
            if (len >= size) {
                /* Whole chunk in the caller's buffer: process it there. */
                st = on_chunk(ch, data, size, now_ms);
                if (st != UAS_GOOD)
                    return st;
                data += size;
                len -= size;
                continue;
            }
        }
        if (!p) {
            p = ch->partial = uas_buf_get(ch->pool, ch->recv_buffer);
            if (!p)
                return uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "out of memory");
            /* One chunk per connection, bounded by buffer_size: counted,
             * never refused, so a reader whose chunk spans two reads is
             * served while the budget is short. */
            uas_buf_charge(p, true);
        }
        /* Gather the header first, then exactly the rest of the chunk. */
        size_t want = UAS_HEADER_LEN;
        if (p->len >= UAS_HEADER_LEN)
            want = chunk_size(p->data);
        size_t take = want - p->len < len ? want - p->len : len;
        memcpy(p->data + p->len, data, take);
        p->len += (uint32_t)take;
        data += take;
        len -= take;
        if (p->len == UAS_HEADER_LEN && want == UAS_HEADER_LEN) {
            uas_status st = check_header(ch, p->data);
            if (st != UAS_GOOD)
                return st;
            continue;
        }
        if (p->len >= UAS_HEADER_LEN && p->len == chunk_size(p->data)) {
            ch->partial = NULL;
            uas_status st = on_chunk(ch, p->data, p->len, now_ms);
            uas_buf_put(ch->pool, p);
            if (st != UAS_GOOD)
                return st;
        }
    }
    return ch->state == UAS_CHANNEL_CLOSED && ch->close_reason != UAS_GOOD ? ch->close_reason
                                                                           : UAS_GOOD;
}

int64_t uas_channel_tick(uas_channel *ch, int64_t now_ms)
{
    if (ch->state == UAS_CHANNEL_CLOSED)
        return INT64_MAX;
    if (ch->state != UAS_CHANNEL_OPEN && now_ms >= ch->hello_deadline) {
        (void)uas__channel_fail(ch, UAS_BAD_TIMEOUT, "no HEL/OPN in time");
        return INT64_MAX;
    }
    if (now_ms >= ch->expires_at) {
        (void)uas__channel_fail(ch, UAS_BAD_SECURE_CHANNEL_CLOSED, "security token expired");
        return INT64_MAX;
    }
    if (ch->prev_token_id && now_ms >= ch->prev_expires_at) {
        ch->prev_token_id = 0;
        ch->send_token_id = ch->token_id;
        if (ch->keys)
            uas_secpol_keys_drop_prev(ch->keys);
    }
    if (ch->cfg.role == UAS_CHANNEL_CLIENT && ch->state == UAS_CHANNEL_OPEN &&
        now_ms >= ch->renew_at) {
        ch->renew_at = INT64_MAX;
        uas_status st = uas__channel_send_opn_request(ch, UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW);
        if (st != UAS_GOOD) {
            (void)uas__channel_fail(ch, st, "cannot renew the security token");
            return INT64_MAX;
        }
    }
    int64_t next = ch->state == UAS_CHANNEL_OPEN ? INT64_MAX : ch->hello_deadline;
    if (ch->expires_at < next)
        next = ch->expires_at;
    if (ch->prev_token_id && ch->prev_expires_at < next)
        next = ch->prev_expires_at;
    if (ch->renew_at < next)
        next = ch->renew_at;
    return next;
}

void uas_channel_close(uas_channel *ch, uas_status reason)
{
    if (ch->state == UAS_CHANNEL_CLOSED)
        return;
    if (ch->cfg.role == UAS_CHANNEL_CLIENT && ch->state == UAS_CHANNEL_OPEN)
        (void)uas__channel_send_clo(ch);
    else if (ch->cfg.role == UAS_CHANNEL_SERVER && uas_is_bad(reason))
        (void)uas__channel_send_err(ch, reason, "closed by the server");
    uas__channel_set_state(ch, UAS_CHANNEL_CLOSED, reason);
}
