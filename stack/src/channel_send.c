/* The sending half of the channel: messages are encoded straight into
 * pooled chunk buffers; when one is full it is sealed (sequence number,
 * security) and handed to the transport while encoding continues in the
 * next. The peer's MaxMessageSize and MaxChunkCount are enforced as the
 * chunks go; exceeding them after chunks left ends the message with an abort
 * chunk (Part 6, 6.7.3). OPN handling (both roles) lives here too. */
#include <string.h>

#include <ua/mem.h>

#include "channel_internal.h"

typedef struct chunk_writer {
    uas_channel *ch;
    uas_buf *buf;
    uint8_t mt;
    uint32_t request_id;
    size_t header_len; /* cleartext part: message header + security header */
    size_t body_limit; /* where the body must stop, leaving room for security */
    uint32_t chunks;   /* chunks already handed to the transport */
    size_t body_bytes; /* message bytes in those chunks */
    uas_status too_large;
    bool refused; /* the send callback refused a chunk: the stream is broken */
} chunk_writer;

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static size_t put_bytes(uint8_t *p, const char *s)
{
    if (!s) {
        put_u32(p, UINT32_MAX);
        return 4;
    }
    size_t n = strlen(s);
    put_u32(p, (uint32_t)n);
    memcpy(p + 4, s, n);
    return 4 + n;
}

static const char *mt_name(uint8_t mt)
{
    switch (mt) {
    case MT_OPN:
        return "OPN";
    case MT_CLO:
        return "CLO";
    default:
        return "MSG";
    }
}

static uas_status begin_chunk(chunk_writer *w)
{
    uas_channel *ch = w->ch;
    w->buf = uas_buf_get(ch->pool, ch->send_buffer);
    if (!w->buf)
        return UAS_BAD_OUT_OF_MEMORY;
    uint8_t *p = w->buf->data;
    memcpy(p, mt_name(w->mt), 3);
    p[3] = 'F';
    put_u32(p + 4, 0);
    put_u32(p + 8, ch->channel_id);
    size_t n = 12;
    size_t overhead;
    if (w->mt == MT_OPN) {
        /* Policy URI, our certificate, the receiver's thumbprint. */
        size_t h = uas_secpol_asym_header(ch->policy, ch->keys, p + n, ch->send_buffer - n);
        if (h == 0) {
            uas_buf_put(ch->pool, w->buf);
            w->buf = NULL;
            return UAS_BAD_INTERNAL_ERROR;
        }
        n += h;
        overhead = ch->policy->asym_overhead(ch->keys, ch->send_buffer);
    } else {
        put_u32(p + n, ch->send_token_id);
        n += 4;
        overhead = ch->policy->sym_overhead(ch->keys, ch->send_buffer);
    }
    w->header_len = n;
    w->body_limit = ch->send_buffer - overhead;
    return UAS_GOOD;
}

/* Seals the current chunk and passes it on. */
static uas_status finish_chunk(chunk_writer *w, uint8_t chunk_type, size_t end)
{
    uas_channel *ch = w->ch;
    uint8_t *p = w->buf->data;
    p[3] = chunk_type;
    uint32_t seq = ch->send_seq;
    /* Part 6, 6.7.2.4: no wrap until the number is greater than
     * UINT32_MAX - 1024; then one below 1024. The ECC policies wrap from
     * UINT32_MAX to 0 instead. */
    ch->send_seq = seq > UINT32_MAX - 1024 && !(ch->policy && ch->policy->ecc) ? 1 : seq + 1;
    put_u32(p + w->header_len, seq);
    put_u32(p + w->header_len + 4, w->request_id);
    if (w->mt == MT_OPN && ch->defer_opn) {
        /* Secured by a job off the loop (channel_job.c); sent when it
         * completes. An OPN response is always one chunk. */
        ch->opn_out = uas__channel_opn_out_job(ch, p, w->header_len, end, w->buf->cap);
        uas_buf_put(ch->pool, w->buf);
        w->buf = NULL;
        if (!ch->opn_out)
            return UAS_BAD_OUT_OF_MEMORY;
        w->chunks++;
        return UAS_GOOD;
    }
    size_t len = end;
    uas_status st = w->mt == MT_OPN
                        ? ch->policy->asym_protect(ch->keys, p, w->header_len, &len, w->buf->cap)
                        : ch->policy->sym_protect(ch->keys, p, w->header_len, &len, w->buf->cap);
    if (st != UAS_GOOD) {
        uas_buf_put(ch->pool, w->buf);
        w->buf = NULL;
        return st;
    }
    w->buf->len = (uint32_t)len;
    uas_buf *b = w->buf;
    w->buf = NULL;
    w->chunks++;
    st = ch->cb.send(ch->ud, b);
    if (st != UAS_GOOD)
        w->refused = true;
    return st;
}

static uas_status writer_flush(void *ud, uint8_t **pos, uint8_t **end)
{
    chunk_writer *w = ud;
    size_t body_start = w->header_len + 8;
    size_t chunk_body = (size_t)(*pos - w->buf->data) - body_start;
    /* This chunk is not the last one: at least one more follows. */
    if (w->ch->peer_max_chunks && w->chunks + 2 > w->ch->peer_max_chunks)
        return w->too_large;
    if (w->ch->peer_max_message && w->body_bytes + chunk_body + 1 > w->ch->peer_max_message)
        return w->too_large;
    uas_status st = finish_chunk(w, 'C', (size_t)(*pos - w->buf->data));
    if (st != UAS_GOOD)
        return st;
    w->body_bytes += chunk_body;
    st = begin_chunk(w);
    if (st != UAS_GOOD)
        return st;
    *pos = w->buf->data + w->header_len + 8;
    *end = w->buf->data + w->body_limit;
    return UAS_GOOD;
}

/* Replaces the unfinished chunk's body by an abort body and sends it. */
static void send_abort(chunk_writer *w, uas_status code)
{
    if (!w->buf && begin_chunk(w) != UAS_GOOD)
        return;
    uint8_t *p = w->buf->data + w->header_len + 8;
    put_u32(p, code);
    size_t n = 4 + put_bytes(p + 4, uas_status_name(code));
    (void)finish_chunk(w, 'A', (size_t)(p + n - w->buf->data));
}

/* *refused (if given) tells whether the send callback refused a chunk. */
static uas_status send_message(uas_channel *ch, uint8_t mt, uint32_t request_id, const void *msg,
                               const uas_type *type, bool *refused)
{
    if (type->binary_encoding_id == 0)
        return UAS_BAD_ENCODING_ERROR;
    chunk_writer w = {.ch = ch, .mt = mt, .request_id = request_id};
    w.too_large =
        ch->cfg.role == UAS_CHANNEL_SERVER ? UAS_BAD_RESPONSE_TOO_LARGE : UAS_BAD_REQUEST_TOO_LARGE;
    uas_status st = begin_chunk(&w);
    if (st != UAS_GOOD)
        return st;
    uas_encoder e;
    uint8_t *body = w.buf->data + w.header_len + 8;
    uas_encoder_init(&e, body, w.body_limit - (w.header_len + 8), NULL);
    /* Message bodies are bounded by the peer's limits, checked per chunk
     * above, not by the decoder-side string/array defaults. */
    static const uas_limits send_limits = {UINT32_MAX, UINT32_MAX, 64, 0};
    e.limits = &send_limits;
    e.flush = writer_flush;
    e.flush_ud = &w;
    uas_nodeid id = uas_nodeid_numeric(0, type->binary_encoding_id);
    st = uas_encode(&e, &id, &uas_types[UAS_TYPES_NODE_ID]);
    if (st == UAS_GOOD)
        st = uas_encode(&e, msg, type);
    bool sent = false;
    if (st == UAS_GOOD) {
        size_t last = (size_t)(e.pos - (w.buf->data + w.header_len + 8));
        sent = !(ch->peer_max_message && w.body_bytes + last > ch->peer_max_message);
        st = sent ? finish_chunk(&w, 'F', (size_t)(e.pos - w.buf->data)) : w.too_large;
    }
    if (!sent) {
        /* Chunks already out end with an abort chunk, unless the transport
         * refused one: nothing more goes to it then. */
        ch->last_send_aborted = w.chunks > 0 && !w.refused;
        if (ch->last_send_aborted)
            send_abort(&w, st);
        else if (w.buf)
            uas_buf_put(ch->pool, w.buf);
    }
    if (refused)
        *refused = w.refused;
    return st;
}

uas_status uas_channel_send(uas_channel *ch, uint32_t request_id, const void *msg,
                            const uas_type *type)
{
    if (ch->state != UAS_CHANNEL_OPEN)
        return UAS_BAD_SECURE_CHANNEL_CLOSED;
    bool refused = false;
    ch->last_send_aborted = false;
    uas_status st = send_message(ch, MT_MSG, request_id, msg, type, &refused);
    /* A transport that refused a chunk broke the stream, whatever its code:
     * fatal for the channel (channel.h, send callback). A message that is
     * too large is the caller's to answer. */
    if (refused || st == UAS_BAD_TCP_NOT_ENOUGH_RESOURCES || st == UAS_BAD_CONNECTION_CLOSED)
        (void)uas__channel_fail(ch, st, "transport refused output");
    return st;
}

bool uas_channel_last_send_aborted(const uas_channel *ch)
{
    return ch->last_send_aborted;
}

bool uas_channel_closed_by_peer(const uas_channel *ch)
{
    return ch->closed_by_peer;
}

/* ---- connection-level messages ---- */

static uas_status send_raw(uas_channel *ch, const char *type, const uint8_t *body, size_t len)
{
    uas_buf *b = uas_buf_get(ch->pool, UAS_HEADER_LEN + len);
    if (!b)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(b->data, type, 3);
    b->data[3] = 'F';
    put_u32(b->data + 4, (uint32_t)(UAS_HEADER_LEN + len));
    memcpy(b->data + UAS_HEADER_LEN, body, len);
    b->len = (uint32_t)(UAS_HEADER_LEN + len);
    return ch->cb.send(ch->ud, b);
}

uas_status uas__channel_send_ack(uas_channel *ch)
{
    uint8_t body[20];
    put_u32(body, 0); /* protocol version */
    put_u32(body + 4, ch->recv_buffer);
    put_u32(body + 8, ch->send_buffer);
    put_u32(body + 12, ch->cfg.max_message_size);
    put_u32(body + 16, ch->cfg.max_chunk_count);
    return send_raw(ch, "ACK", body, sizeof(body));
}

uas_status uas__channel_send_err(uas_channel *ch, uas_status code, const char *reason)
{
    uint8_t body[4 + 4 + 256];
    size_t n = strlen(reason);
    if (n > 256)
        n = 256;
    put_u32(body, code);
    put_u32(body + 4, (uint32_t)n);
    memcpy(body + 8, reason, n);
    return send_raw(ch, "ERR", body, 8 + n);
}

uas_status uas_channel_connect(uas_channel *ch, const char *endpoint_url, int64_t now_ms)
{
    (void)now_ms;
    if (ch->cfg.role != UAS_CHANNEL_CLIENT || ch->state != UAS_CHANNEL_FRESH)
        return UAS_BAD_INVALID_STATE;
    size_t n = endpoint_url ? strlen(endpoint_url) : 0;
    if (n == 0 || n > UAS_MAX_URL)
        return UAS_BAD_TCP_ENDPOINT_URL_INVALID;
    ch->endpoint_url = uas_malloc(n + 1);
    if (!ch->endpoint_url)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(ch->endpoint_url, endpoint_url, n + 1);
    uint8_t body[20 + 4 + UAS_MAX_URL];
    put_u32(body, 0);
    put_u32(body + 4, ch->cfg.recv_buffer_size);
    put_u32(body + 8, ch->cfg.send_buffer_size);
    put_u32(body + 12, ch->cfg.max_message_size);
    put_u32(body + 16, ch->cfg.max_chunk_count);
    size_t len = 20 + put_bytes(body + 20, endpoint_url);
    uas_status st = send_raw(ch, "HEL", body, len);
    if (st != UAS_GOOD)
        return st;
    uas__channel_set_state(ch, UAS_CHANNEL_HEL_SENT, UAS_GOOD);
    return UAS_GOOD;
}

uas_status uas__channel_send_clo(uas_channel *ch)
{
    uas_close_secure_channel_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.timestamp = ch->cb.utc_now(ch->ud);
    return send_message(ch, MT_CLO, uas_channel_next_request_id(ch), &req,
                        UAS_TYPE(CLOSE_SECURE_CHANNEL_REQUEST), NULL);
}

/* ---- OPN ---- */

uas_status uas__channel_send_opn_request(uas_channel *ch, int32_t request_type)
{
    uas_open_secure_channel_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.timestamp = ch->cb.utc_now(ch->ud);
    req.request_header.timeout_hint = 10000;
    req.client_protocol_version = 0;
    req.request_type = request_type;
    req.security_mode = ch->mode;
    req.requested_lifetime = ch->cfg.requested_lifetime_ms;
    size_t nonce_len = ch->policy->nonce_len;
    if (nonce_len) {
        uas_status st = uas_secpol_keys_make_nonce(ch->keys, ch->local_nonce, nonce_len);
        if (st != UAS_GOOD)
            return st;
        ch->local_nonce_len = nonce_len;
        req.client_nonce.data = ch->local_nonce;
        req.client_nonce.length = nonce_len;
    }
    ch->opn_request_id = uas_channel_next_request_id(ch);
    return send_message(ch, MT_OPN, ch->opn_request_id, &req, UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST),
                        NULL);
}

/* Decodes an OPN body (NodeId + message) of the expected type, or a
 * ServiceFault, into the caller's arena. */
static uas_status decode_opn(uas_channel *ch, const uint8_t *body, size_t len, uas_arena *a,
                             const uas_type *expect, const uas_type **got, void *dst)
{
    uas_decoder d;
    uas_decoder_init(&d, body, len, a, ch->cfg.decode_limits);
    uas_nodeid id;
    uas_status st = uas_decode(&d, &id, &uas_types[UAS_TYPES_NODE_ID]);
    if (st != UAS_GOOD)
        return st;
    if (id.ns != 0 || id.kind != UAS_NODEID_NUMERIC)
        return UAS_BAD_DECODING_ERROR;
    const uas_type *t = uas_type_by_encoding_id(id.id.numeric);
    if (t != expect && t != UAS_TYPE(SERVICE_FAULT))
        return UAS_BAD_DECODING_ERROR;
    *got = t;
    return uas_decode(&d, dst, t);
}

/* Server: whether (policy, mode) is one of the configured offers. */
static bool mode_offered(const uas_channel *ch, int32_t mode)
{
    if (ch->cfg.offer_count == 0)
        return ch->policy == &uas_secpol_none && mode == UAS_MESSAGE_SECURITY_MODE_NONE;
    for (size_t i = 0; i < ch->cfg.offer_count; i++)
        if (ch->cfg.offers[i].policy == ch->policy && ch->cfg.offers[i].mode == mode)
            return true;
    return false;
}

uas_status uas__channel_on_opn_request(uas_channel *ch, uint32_t request_id, const uint8_t *body,
                                       size_t len, int64_t now_ms)
{
    uint8_t mem[2048];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 65536);
    uas_open_secure_channel_request req;
    const uas_type *t = NULL;
    uas_status st = decode_opn(ch, body, len, &a, UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST), &t, &req);
    if (st == UAS_GOOD && t != UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST))
        st = UAS_BAD_DECODING_ERROR;
    if (st != UAS_GOOD) {
        uas_arena_free(&a);
        return uas__channel_fail(ch, UAS_BAD_DECODING_ERROR, "undecodable OPN request");
    }
    bool renew = req.request_type == UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW;
    uint32_t handle = req.request_header.request_handle;
    int32_t mode = req.security_mode;
    uint32_t lifetime = req.requested_lifetime;
    size_t nonce_len = ch->policy->nonce_len;
    uint8_t client_nonce[UAS_SECPOL_NONCE_MAX];
    bool nonce_ok =
        nonce_len == 0 || (req.client_nonce.data && req.client_nonce.length == nonce_len &&
                           nonce_len <= sizeof(client_nonce));
    if (nonce_ok && nonce_len)
        memcpy(client_nonce, req.client_nonce.data, nonce_len);
    uas_arena_free(&a);
    if (!nonce_ok)
        return uas__channel_fail(ch, UAS_BAD_NONCE_INVALID, "client nonce of the wrong length");
    if (renew != (ch->state == UAS_CHANNEL_OPEN))
        return uas__channel_fail(ch, UAS_BAD_REQUEST_TYPE_INVALID,
                                 renew ? "renew before issue" : "second issue on one channel");
    if (!mode_offered(ch, mode) || (renew && mode != ch->mode))
        return uas__channel_fail(ch, UAS_BAD_SECURITY_MODE_REJECTED,
                                 "security mode not offered with this policy");
    if (ch->keys && !renew && uas_secpol_keys_set_mode(ch->keys, mode) != UAS_GOOD)
        return uas__channel_fail(ch, UAS_BAD_SECURITY_MODE_REJECTED, "security mode refused");
    ch->mode = mode;
    if (lifetime < ch->cfg.min_lifetime_ms)
        lifetime = ch->cfg.min_lifetime_ms;
    if (lifetime > ch->cfg.max_lifetime_ms)
        lifetime = ch->cfg.max_lifetime_ms;
    uint32_t old = ch->token_id;
    int64_t old_expiry = ch->expires_at;
    ch->token_id = old + 1 ? old + 1 : 1;
    if (renew) {
        /* The old token keeps securing our output until the client uses
         * the new one (Part 4, 5.5.2). */
        ch->prev_token_id = old;
        ch->prev_expires_at = old_expiry;
        ch->send_token_id = old;
    } else {
        ch->send_token_id = ch->token_id;
    }
    /* 25 % grace after the lifetime before the channel is dropped. */
    ch->expires_at = now_ms + (int64_t)lifetime + (int64_t)lifetime / 4;

    uint8_t server_nonce[UAS_SECPOL_NONCE_MAX];
    if (nonce_len) {
        st = uas_secpol_keys_make_nonce(ch->keys, server_nonce, nonce_len);
        if (st == UAS_GOOD)
            st = uas_secpol_derive_keys(ch->keys, ch->token_id, server_nonce, nonce_len,
                                        client_nonce, nonce_len, true);
        uas_wipe(client_nonce, sizeof(client_nonce));
        if (st != UAS_GOOD) {
            uas_wipe(server_nonce, sizeof(server_nonce));
            return uas__channel_fail(ch, st, "cannot derive the channel keys");
        }
    }

    uas_open_secure_channel_response resp;
    memset(&resp, 0, sizeof(resp));
    resp.response_header.timestamp = ch->cb.utc_now(ch->ud);
    resp.response_header.request_handle = handle;
    resp.server_protocol_version = 0;
    resp.security_token.channel_id = ch->channel_id;
    resp.security_token.token_id = ch->token_id;
    resp.security_token.created_at = resp.response_header.timestamp;
    resp.security_token.revised_lifetime = lifetime;
    resp.server_nonce.data = nonce_len ? server_nonce : UAS_EMPTY_ARRAY;
    resp.server_nonce.length = nonce_len;
    /* The first response's signature is worked out off the loop when the
     * owner offloads. A renewal's is not: the channel sends on meanwhile
     * (Publish responses), and its sequence numbers must stay in order. */
    ch->defer_opn = !renew && ch->cfg.offload && ch->keys;
    st = send_message(ch, MT_OPN, request_id, &resp, UAS_TYPE(OPEN_SECURE_CHANNEL_RESPONSE), NULL);
    ch->defer_opn = false;
    uas_wipe(server_nonce, sizeof(server_nonce));
    struct uas_channel_job *out = ch->opn_out;
    ch->opn_out = NULL;
    if (st != UAS_GOOD) {
        uas_channel_job_free(out);
        return uas__channel_fail(ch, st, "cannot send OPN response");
    }
    if (!renew) {
        ch->hello_deadline = INT64_MAX;
        uas__channel_set_state(ch, UAS_CHANNEL_OPEN, UAS_GOOD);
    }
    return out ? uas__channel_park(ch, out, now_ms) : UAS_GOOD;
}

uas_status uas__channel_on_opn_response(uas_channel *ch, uint32_t request_id, uint32_t channel_id,
                                        const uint8_t *body, size_t len, int64_t now_ms)
{
    if (request_id != ch->opn_request_id)
        return uas__channel_fail(ch, UAS_BAD_SECURITY_CHECKS_FAILED,
                                 "OPN response to an unknown request");
    uint8_t mem[2048];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 65536);
    union {
        uas_open_secure_channel_response ok;
        uas_service_fault fault;
    } resp;
    const uas_type *t = NULL;
    uas_status st =
        decode_opn(ch, body, len, &a, UAS_TYPE(OPEN_SECURE_CHANNEL_RESPONSE), &t, &resp);
    if (st == UAS_GOOD && t == UAS_TYPE(SERVICE_FAULT))
        st = uas_is_bad(resp.fault.response_header.service_result)
                 ? resp.fault.response_header.service_result
                 : UAS_BAD_UNEXPECTED_ERROR;
    else if (st == UAS_GOOD && uas_is_bad(resp.ok.response_header.service_result))
        st = resp.ok.response_header.service_result;
    if (st != UAS_GOOD) {
        uas_arena_free(&a);
        return uas__channel_fail(ch, st, "OPN refused");
    }
    uas_channel_security_token tok = resp.ok.security_token;
    size_t nonce_len = ch->policy->nonce_len;
    uint8_t server_nonce[UAS_SECPOL_NONCE_MAX];
    bool nonce_ok =
        nonce_len == 0 || (resp.ok.server_nonce.data && resp.ok.server_nonce.length == nonce_len &&
                           nonce_len <= sizeof(server_nonce) && ch->local_nonce_len == nonce_len);
    if (nonce_ok && nonce_len)
        memcpy(server_nonce, resp.ok.server_nonce.data, nonce_len);
    uas_arena_free(&a);
    if (!nonce_ok)
        return uas__channel_fail(ch, UAS_BAD_NONCE_INVALID, "server nonce of the wrong length");
    if (nonce_len) {
        uas_status kst = uas_secpol_derive_keys(ch->keys, tok.token_id, ch->local_nonce, nonce_len,
                                                server_nonce, nonce_len, false);
        uas_wipe(server_nonce, sizeof(server_nonce));
        uas_wipe(ch->local_nonce, sizeof(ch->local_nonce));
        if (kst != UAS_GOOD)
            return uas__channel_fail(ch, kst, "cannot derive the channel keys");
    }
    if (tok.channel_id != channel_id || tok.channel_id == 0 ||
        (ch->state == UAS_CHANNEL_OPEN && tok.channel_id != ch->channel_id))
        return uas__channel_fail(ch, UAS_BAD_SECURE_CHANNEL_ID_INVALID, "channel id mismatch");
    if (ch->state == UAS_CHANNEL_OPEN) {
        /* The server may secure its output with the old token until it
         * expires (it switches when we use the new one); accept it that
         * long plus 25 % (Part 4, 5.6.2.1). */
        ch->prev_token_id = ch->token_id;
        ch->prev_expires_at = ch->token_end;
    }
    ch->channel_id = tok.channel_id;
    ch->token_id = tok.token_id;
    ch->send_token_id = tok.token_id;
    uint32_t lifetime = tok.revised_lifetime ? tok.revised_lifetime : 3600000;
    ch->renew_at = now_ms + (int64_t)lifetime * 3 / 4;
    ch->token_end = now_ms + (int64_t)lifetime + (int64_t)lifetime / 4;
    if (ch->state == UAS_CHANNEL_OPN_SENT)
        uas__channel_set_state(ch, UAS_CHANNEL_OPEN, UAS_GOOD);
    return UAS_GOOD;
}
