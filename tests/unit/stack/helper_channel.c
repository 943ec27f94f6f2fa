/* Messages and checks shared by the secure channel tests (see helper_channel.h). */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "helper_channel.h"

void big_req_make(big_req *b, size_t n, size_t name_len, uint32_t handle)
{
    memset(b, 0, sizeof(*b));
    b->ids = calloc(n ? n : 1, sizeof(*b->ids));
    b->names = malloc(n * name_len + 1);
    cr_assert(b->ids && b->names);
    for (size_t i = 0; i < n; i++) {
        char *s = b->names + i * name_len;
        for (size_t k = 0; k < name_len; k++)
            s[k] = (char)('a' + (i * 7 + k) % 26);
        uas_read_value_id *id = &b->ids[i];
        if (name_len) {
            id->node_id.ns = 2;
            id->node_id.kind = UAS_NODEID_STRING;
            id->node_id.id.string.length = name_len;
            id->node_id.id.string.data = (uint8_t *)s;
        } else {
            id->node_id = uas_nodeid_numeric(2, 1000 + (uint32_t)i);
        }
        id->attribute_id = 13; /* Value */
    }
    b->r.request_header.timestamp = T_REQ;
    b->r.request_header.request_handle = handle;
    b->r.request_header.timeout_hint = 5000;
    b->r.max_age = 500.0;
    b->r.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    b->r.nodes_to_read_count = n;
    b->r.nodes_to_read = n ? b->ids : UAS_EMPTY_ARRAY;
}

void big_req_free(big_req *b)
{
    free(b->ids);
    free(b->names);
}

void big_resp_make(big_resp *b, size_t n, size_t str_len, uint32_t handle)
{
    memset(b, 0, sizeof(*b));
    b->dv = calloc(n ? n : 1, sizeof(*b->dv));
    b->strs = calloc(n ? n : 1, sizeof(*b->strs));
    b->text = malloc(n * str_len + 1);
    cr_assert(b->dv && b->strs && b->text);
    for (size_t i = 0; i < n; i++) {
        char *s = b->text + i * str_len;
        for (size_t k = 0; k < str_len; k++)
            s[k] = (char)('A' + (i * 13 + k * 3) % 26);
        b->strs[i].length = str_len;
        b->strs[i].data = str_len ? (uint8_t *)s : UAS_EMPTY_ARRAY;
        uas_variant_set_scalar(&b->dv[i].value, &b->strs[i], &uas_types[UAS_BUILTIN_STRING - 1]);
        b->dv[i].has_value = true;
        b->dv[i].status = (i % 3) ? UAS_GOOD : 0x40000000u; /* some Uncertain */
        b->dv[i].has_status = (i % 3) == 0;
        b->dv[i].source_timestamp = T_REQ + (int64_t)i;
        b->dv[i].has_source_timestamp = true;
    }
    b->r.response_header.timestamp = T_REQ + 1;
    b->r.response_header.request_handle = handle;
    b->r.results_count = n;
    b->r.results = n ? b->dv : UAS_EMPTY_ARRAY;
}

void big_resp_free(big_resp *b)
{
    free(b->dv);
    free(b->strs);
    free(b->text);
}

size_t body_size(const void *v, const uas_type *t)
{
    uas_nodeid id = uas_nodeid_numeric(0, t->binary_encoding_id);
    return uas_encoded_size(&id, NODEID_T) + uas_encoded_size(v, t);
}

void decode_body(const uint8_t *body, size_t len, const uas_type *t, void *dst, uas_arena *a)
{
    uas_decoder d;
    uas_decoder_init(&d, body, len, a, NULL);
    uas_nodeid id;
    cr_assert_eq(uas_decode(&d, &id, NODEID_T), UAS_GOOD, "body NodeId does not decode");
    cr_assert_eq(id.ns, 0);
    cr_assert_eq(id.kind, UAS_NODEID_NUMERIC);
    cr_assert_eq(id.id.numeric, t->binary_encoding_id, "body is NodeId(%u), expected %s (%u)",
                 id.id.numeric, t->name, t->binary_encoding_id);
    uas_status st = uas_decode(&d, dst, t);
    cr_assert_eq(st, UAS_GOOD, "%s body does not decode: 0x%08x", t->name, st);
    cr_assert_eq(d.pos, d.end, "%zu bytes left after the %s body", (size_t)(d.end - d.pos),
                 t->name);
}

void expect_message(const pipe_msg *m, uint32_t request_id, const void *want, const uas_type *t)
{
    cr_assert_eq(m->request_id, request_id, "request id %u, expected %u", m->request_id,
                 request_id);
    cr_assert_eq(m->len, body_size(want, t), "%s body of %zu bytes, expected %zu", t->name, m->len,
                 body_size(want, t));
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    void *got = malloc(t->size);
    cr_assert_not_null(got);
    decode_body(m->body, m->len, t, got, &a);
    cr_assert(uas_equal(got, want, t), "received %s differs from the one sent", t->name);
    free(got);
    uas_arena_free(&a);
}

pipe_chunk parse_buf(const uas_buf *b)
{
    pipe_chunk c;
    cr_assert_not_null(b, "no chunk queued");
    pipe_parse(b->data, b->len, &c);
    return c;
}

void send_ok(pipe_end *e, uint32_t request_id, const void *v, const uas_type *t)
{
    uas_status st = uas_channel_send(e->ch, request_id, v, t);
    cr_assert_eq(st, UAS_GOOD, "%s: uas_channel_send(%s) = 0x%08x (%s)", e->name, t->name, st,
                 uas_status_name(st));
}

void small_buffers(uas_channel_config *c, uas_channel_config *s)
{
    pipe_config(c, UAS_CHANNEL_CLIENT);
    pipe_config(s, UAS_CHANNEL_SERVER);
    c->recv_buffer_size = c->send_buffer_size = 8192;
    s->recv_buffer_size = s->send_buffer_size = 8192;
}

void expect_server_failed(pipe *p, uas_status returned, uas_status code)
{
    pipe_end *s = &p->server;
    cr_assert_eq(returned, code, "uas_channel_recv returned 0x%08x (%s), expected 0x%08x (%s)",
                 returned, uas_status_name(returned), code, uas_status_name(code));
    cr_assert_eq(uas_channel_get_state(s->ch), UAS_CHANNEL_CLOSED, "server not CLOSED");
    cr_assert_gt(s->nstates, 0);
    cr_assert_eq(s->states[s->nstates - 1], UAS_CHANNEL_CLOSED);
    cr_assert_eq(s->reasons[s->nstates - 1], code, "on_state reason 0x%08x, expected 0x%08x",
                 s->reasons[s->nstates - 1], code);
    cr_assert_eq(pipe_err_code(s), code, "ERR carries 0x%08x, expected 0x%08x", pipe_err_code(s),
                 code);
    /* The ERR is the last thing the server says. */
    pipe_chunk last = parse_buf(s->out_tail);
    cr_assert_str_eq(last.type, "ERR");
    /* Further input is refused with the same code and answered by nothing. */
    size_t queued = s->out_count;
    static const uint8_t more[] = {'M', 'S', 'G', 'F', 24, 0, 0, 0};
    cr_assert_eq(uas_channel_recv(s->ch, (uint8_t *)(uintptr_t)more, sizeof(more), p->now_ms),
                 code);
    cr_assert_eq(s->out_count, queued);
}

void expect_client_told(pipe *p, uas_status code)
{
    uas_status st = pipe_transmit(p, &p->server);
    cr_assert_eq(st, code, "client's uas_channel_recv returned 0x%08x on ERR", st);
    cr_assert_eq(uas_channel_get_state(p->client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p->client.reasons[p->client.nstates - 1], code);
}

uas_status feed_server(pipe *p, const void *bytes, size_t len)
{
    return pipe_feed(p, &p->server, bytes, len);
}

void hello_only(pipe *p)
{
    cr_assert_eq(uas_channel_connect(p->client.ch, URL, p->now_ms), UAS_GOOD);
    cr_assert_eq(pipe_transmit(p, &p->client), UAS_GOOD);
    pipe_discard(p, &p->server);
}
