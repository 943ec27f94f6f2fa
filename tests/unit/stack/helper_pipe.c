/* In-memory client/server wire for the channel tests (see helper_pipe.h). */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "helper_pipe.h"

void pipe_config(uas_channel_config *cfg, uas_channel_role role)
{
    uas_channel_config_default(cfg, role);
    if (role == UAS_CHANNEL_SERVER)
        cfg->channel_id = 7;
}

/* ---- callbacks ---- */

static uas_status cb_send(void *ud, uas_buf *chunk)
{
    pipe_end *e = ud;
    cr_assert_not_null(chunk, "%s: send callback got NULL", e->name);
    cr_assert_leq(chunk->len, chunk->cap, "%s: chunk overruns its buffer", e->name);
    e->chunks_sent++;
    if (e->send_status != UAS_GOOD) {
        /* The transport refuses: the chunk is still ours to return. */
        uas_buf_put(e->pipe->pool, chunk);
        return e->send_status;
    }
    chunk->next = NULL;
    if (e->out_tail)
        e->out_tail->next = chunk;
    else
        e->out_head = chunk;
    e->out_tail = chunk;
    e->out_count++;
    return UAS_GOOD;
}

static void cb_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    pipe_end *e = ud;
    cr_assert_lt(e->nmsgs, PIPE_MAX_EVENTS, "%s: too many messages for the recorder", e->name);
    pipe_msg *m = &e->msgs[e->nmsgs++];
    m->request_id = request_id;
    m->len = len;
    m->body = malloc(len ? len : 1);
    cr_assert_not_null(m->body);
    memcpy(m->body, body, len);
    if (e->on_message_hook)
        e->on_message_hook(e, request_id, body, len);
}

static void cb_message_error(void *ud, uint32_t request_id, uas_status status)
{
    pipe_end *e = ud;
    cr_assert_lt(e->nerrs, PIPE_MAX_EVENTS);
    e->errs[e->nerrs].request_id = request_id;
    e->errs[e->nerrs].status = status;
    e->nerrs++;
}

static void cb_state(void *ud, uas_channel_state state, uas_status reason)
{
    pipe_end *e = ud;
    cr_assert_lt(e->nstates, PIPE_MAX_EVENTS);
    e->states[e->nstates] = state;
    e->reasons[e->nstates] = reason;
    e->nstates++;
}

static uas_datetime cb_utc(void *ud)
{
    pipe_end *e = ud;
    return e->pipe->utc;
}

/* ---- setup ---- */

static void end_init(pipe *p, pipe_end *e, const char *name, const uas_channel_config *cfg,
                     uas_channel_role role)
{
    uas_channel_config def;
    if (!cfg) {
        pipe_config(&def, role);
        cfg = &def;
    }
    memset(e, 0, sizeof(*e));
    e->pipe = p;
    e->name = name;
    e->send_status = UAS_GOOD;
    static const uas_channel_callbacks cbs = {
        .send = cb_send,
        .on_message = cb_message,
        .on_message_error = cb_message_error,
        .on_state = cb_state,
        .utc_now = cb_utc,
    };
    e->ch = uas_channel_new(cfg, &cbs, e, p->pool, p->now_ms);
    cr_assert_not_null(e->ch, "uas_channel_new(%s) failed", name);
}

void pipe_init(pipe *p, const uas_channel_config *client_cfg, const uas_channel_config *server_cfg)
{
    memset(p, 0, sizeof(*p));
    p->pool = uas_bufpool_new(8u << 20);
    cr_assert_not_null(p->pool);
    p->now_ms = 1000000;
    p->utc = UAS_DATETIME_UNIX_EPOCH + INT64_C(1714979289) * 1000 * UAS_DATETIME_MSEC;
    p->rng = 0x9E3779B97F4A7C15u;
    if (client_cfg)
        cr_assert_eq(client_cfg->role, UAS_CHANNEL_CLIENT);
    if (server_cfg)
        cr_assert_eq(server_cfg->role, UAS_CHANNEL_SERVER);
    end_init(p, &p->client, "client", client_cfg, UAS_CHANNEL_CLIENT);
    end_init(p, &p->server, "server", server_cfg, UAS_CHANNEL_SERVER);
}

static void end_fini(pipe *p, pipe_end *e)
{
    uas_channel_delete(e->ch);
    e->ch = NULL;
    pipe_discard(p, e);
    for (size_t i = 0; i < e->nmsgs; i++)
        free(e->msgs[i].body);
    e->nmsgs = 0;
}

void pipe_fini(pipe *p)
{
    end_fini(p, &p->client);
    end_fini(p, &p->server);
    uas_bufpool_stats st;
    uas_bufpool_get_stats(p->pool, &st);
    cr_expect_eq(st.live, 0,
                 "%llu pool buffers still outstanding after both channels were "
                 "deleted and the queues drained",
                 (unsigned long long)st.live);
    uas_bufpool_delete(p->pool);
    p->pool = NULL;
}

pipe_end *pipe_peer(pipe *p, pipe_end *e)
{
    return e == &p->client ? &p->server : &p->client;
}

/* ---- moving bytes ---- */

static uint32_t rnd(pipe *p)
{
    /* xorshift64* */
    p->rng ^= p->rng >> 12;
    p->rng ^= p->rng << 25;
    p->rng ^= p->rng >> 27;
    return (uint32_t)((p->rng * 0x2545F4914F6CDD1Du) >> 32);
}

static uas_status recv_pieces(pipe *p, pipe_end *to, uint8_t *data, size_t len, const size_t *cuts,
                              size_t ncuts)
{
    size_t off = 0;
    size_t cut = 0;
    while (off < len) {
        size_t n;
        switch (p->split) {
        case PIPE_BYTES:
            n = 1;
            break;
        case PIPE_RANDOM:
            n = 1 + rnd(p) % PIPE_RANDOM_MAX;
            break;
        case PIPE_CHUNKS:
            n = cut < ncuts ? cuts[cut++] : len - off;
            break;
        default:
            n = len - off;
            break;
        }
        if (n > len - off)
            n = len - off;
        uas_status st = uas_channel_recv(to->ch, data + off, n, p->now_ms);
        to->last_recv = st;
        if (st != UAS_GOOD)
            return st;
        off += n;
    }
    return UAS_GOOD;
}

uas_status pipe_feed(pipe *p, pipe_end *e, const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, data, len);
    uas_status st = recv_pieces(p, e, copy, len, &len, 1);
    free(copy);
    return st;
}

uas_status pipe_transmit(pipe *p, pipe_end *from)
{
    pipe_end *to = pipe_peer(p, from);
    size_t total = 0, n = 0;
    for (uas_buf *b = from->out_head; b; b = b->next) {
        total += b->len;
        n++;
    }
    if (n == 0)
        return UAS_GOOD;
    uint8_t *wire = malloc(total);
    size_t *cuts = malloc(n * sizeof(*cuts));
    cr_assert(wire && cuts);
    size_t off = 0, i = 0;
    while (from->out_head) {
        uas_buf *b = pipe_take(from);
        memcpy(wire + off, b->data, b->len);
        off += b->len;
        cuts[i++] = b->len;
        uas_buf_put(p->pool, b);
    }
    uas_status st = recv_pieces(p, to, wire, total, cuts, n);
    free(cuts);
    free(wire);
    return st;
}

void pipe_pump(pipe *p)
{
    for (int round = 0; round < 1000; round++) {
        if (!p->client.out_head && !p->server.out_head)
            return;
        (void)pipe_transmit(p, &p->client);
        (void)pipe_transmit(p, &p->server);
    }
    cr_assert_fail("pipe_pump: the two sides never went quiet");
}

void pipe_open(pipe *p)
{
    uas_status st = uas_channel_connect(p->client.ch, "opc.tcp://pipe:4840", p->now_ms);
    cr_assert_eq(st, UAS_GOOD, "connect: 0x%08x", st);
    pipe_pump(p);
    cr_assert_eq(uas_channel_get_state(p->client.ch), UAS_CHANNEL_OPEN, "client not OPEN");
    cr_assert_eq(uas_channel_get_state(p->server.ch), UAS_CHANNEL_OPEN, "server not OPEN");
}

uas_buf *pipe_take(pipe_end *e)
{
    uas_buf *b = e->out_head;
    if (!b)
        return NULL;
    e->out_head = b->next;
    if (!e->out_head)
        e->out_tail = NULL;
    e->out_count--;
    b->next = NULL;
    return b;
}

uas_buf *pipe_peek(pipe_end *e, size_t i)
{
    uas_buf *b = e->out_head;
    while (b && i--)
        b = b->next;
    return b;
}

void pipe_discard(pipe *p, pipe_end *e)
{
    uas_buf *b;
    while ((b = pipe_take(e)) != NULL)
        uas_buf_put(p->pool, b);
}

/* ---- wire format ---- */

uint32_t pipe_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void pipe_set_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Skips a String/ByteString field at *off, returning its bytes. */
static const uint8_t *skip_bytes(const uint8_t *data, size_t len, size_t *off, size_t *n)
{
    cr_assert_leq(*off + 4, len, "chunk truncated in a string length");
    int32_t l = (int32_t)pipe_get_u32(data + *off);
    *off += 4;
    if (l < 0) {
        *n = 0;
        return NULL;
    }
    cr_assert_leq(*off + (size_t)l, len, "chunk truncated in a string");
    const uint8_t *s = data + *off;
    *off += (size_t)l;
    *n = (size_t)l;
    return s;
}

void pipe_parse(const uint8_t *data, size_t len, pipe_chunk *c)
{
    memset(c, 0, sizeof(*c));
    cr_assert_geq(len, 8, "chunk shorter than its header");
    memcpy(c->type, data, 3);
    c->chunk_type = data[3];
    c->size = pipe_get_u32(data + 4);
    cr_assert_eq(c->size, len, "%s chunk: MessageSize %u but %zu bytes", c->type, c->size, len);
    size_t off = 8;
    if (!strcmp(c->type, "HEL") || !strcmp(c->type, "ACK") || !strcmp(c->type, "ERR")) {
        c->body = data + off;
        c->body_len = len - off;
        return;
    }
    cr_assert_leq(off + 4, len);
    c->channel_id = pipe_get_u32(data + off);
    off += 4;
    if (!strcmp(c->type, "OPN")) {
        size_t n;
        c->policy_uri = skip_bytes(data, len, &off, &c->policy_uri_len);
        (void)skip_bytes(data, len, &off, &n); /* sender certificate */
        (void)skip_bytes(data, len, &off, &n); /* receiver thumbprint */
    } else {
        cr_assert_leq(off + 4, len);
        c->token_id = pipe_get_u32(data + off);
        off += 4;
    }
    cr_assert_leq(off + 8, len, "%s chunk without a sequence header", c->type);
    c->seq_offset = off;
    c->seq = pipe_get_u32(data + off);
    c->request_id = pipe_get_u32(data + off + 4);
    off += 8;
    c->body = data + off;
    c->body_len = len - off;
}

uas_status pipe_err_code(pipe_end *e)
{
    for (uas_buf *b = e->out_head; b; b = b->next) {
        pipe_chunk c;
        pipe_parse(b->data, b->len, &c);
        if (!strcmp(c.type, "ERR")) {
            cr_assert_geq(c.body_len, 8, "ERR without Error and Reason");
            uint32_t reason_len = pipe_get_u32(c.body + 4);
            cr_assert_eq(reason_len, c.body_len - 8, "ERR Reason length does not match");
            return pipe_get_u32(c.body);
        }
    }
    cr_assert_fail("%s queued no ERR message", e->name);
    return 0;
}

size_t pipe_build_hel(uint8_t *out, size_t cap, uint32_t recv_size, uint32_t send_size,
                      uint32_t max_msg, uint32_t max_chunks, const char *url, size_t url_len)
{
    size_t n = 8 + 20 + 4 + url_len;
    cr_assert_leq(n, cap);
    memcpy(out, "HELF", 4);
    pipe_set_u32(out + 4, (uint32_t)n);
    pipe_set_u32(out + 8, 0);
    pipe_set_u32(out + 12, recv_size);
    pipe_set_u32(out + 16, send_size);
    pipe_set_u32(out + 20, max_msg);
    pipe_set_u32(out + 24, max_chunks);
    pipe_set_u32(out + 28, (uint32_t)url_len);
    memcpy(out + 32, url, url_len);
    return n;
}

size_t pipe_build_opn(uint8_t *out, size_t cap, uint32_t channel_id, const char *policy_uri,
                      uint32_t seq, uint32_t request_id, const void *msg, const uas_type *type)
{
    size_t uri_len = strlen(policy_uri);
    size_t off = 0;
    cr_assert_leq(8 + 4 + 4 + uri_len + 8 + 8, cap);
    memcpy(out, "OPNF", 4);
    off = 8;
    pipe_set_u32(out + off, channel_id);
    off += 4;
    pipe_set_u32(out + off, (uint32_t)uri_len);
    memcpy(out + off + 4, policy_uri, uri_len);
    off += 4 + uri_len;
    pipe_set_u32(out + off, UINT32_MAX);     /* null certificate */
    pipe_set_u32(out + off + 4, UINT32_MAX); /* null thumbprint */
    off += 8;
    pipe_set_u32(out + off, seq);
    pipe_set_u32(out + off + 4, request_id);
    off += 8;
    uas_nodeid id = uas_nodeid_numeric(0, type->binary_encoding_id);
    size_t w = 0;
    uas_status st = uas_encode_binary(&id, &uas_types[UAS_TYPES_NODE_ID], out + off, cap - off, &w);
    cr_assert_eq(st, UAS_GOOD);
    off += w;
    st = uas_encode_binary(msg, type, out + off, cap - off, &w);
    cr_assert_eq(st, UAS_GOOD);
    off += w;
    pipe_set_u32(out + 4, (uint32_t)off);
    return off;
}
