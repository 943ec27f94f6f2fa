/* The opc.tcp connection and secure channel core (channel.c, channel_send.c)
 * driven through an in-memory wire (helper_pipe): a client and a server
 * channel talk HEL -> ACK -> OPN -> MSG -> CLO with no sockets, the bytes cut
 * whole, per byte or at random, under a clock the test sets. Each test
 * asserts what an application or the peer would notice: the chunks on the
 * wire, the callbacks, the state, the status uas_channel_recv returns.
 *
 * Spec references are OPC UA Part 6 (7.1 opc.tcp, 6.7 secure conversation)
 * and Part 4, 5.5.2 (OpenSecureChannel). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/channel.h>
#include <ua/codec.h>

#include "channel_internal.h"
#include "helper_pipe.h"

#define URL       "opc.tcp://pipe:4840"
#define NONE_URI  "http://opcfoundation.org/UA/SecurityPolicy#None"
#define T_REQ     INT64_C(133594528891230000)
#define NODEID_T  (&uas_types[UAS_TYPES_NODE_ID])
#define READ_REQ  UAS_TYPE(READ_REQUEST)
#define READ_RESP UAS_TYPE(READ_RESPONSE)

/* ------------------------------------------------------------ messages */

/* A ReadRequest for n nodes with string NodeIds of name_len bytes each, so
 * its size can be steered from a few dozen bytes to hundreds of KiB. */
typedef struct big_req {
    uas_read_request r;
    uas_read_value_id *ids;
    char *names;
} big_req;

static void big_req_make(big_req *b, size_t n, size_t name_len, uint32_t handle)
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

static void big_req_free(big_req *b)
{
    free(b->ids);
    free(b->names);
}

static size_t body_size(const void *v, const uas_type *t);

/* A one-node ReadRequest whose body is exactly `size` bytes (the String
 * NodeId grows the body by one per character). */
static void req_of_size(big_req *b, size_t size)
{
    big_req_make(b, 1, 1, 1);
    size_t base = body_size(&b->r, UAS_TYPE(READ_REQUEST));
    big_req_free(b);
    cr_assert_geq(size, base);
    big_req_make(b, 1, 1 + size - base, 1);
    cr_assert_eq(body_size(&b->r, UAS_TYPE(READ_REQUEST)), size);
}

/* A ReadResponse of n DataValues, each a String of str_len bytes with a
 * status and a source timestamp. */
typedef struct big_resp {
    uas_read_response r;
    uas_datavalue *dv;
    uas_string *strs;
    char *text;
} big_resp;

static void big_resp_make(big_resp *b, size_t n, size_t str_len, uint32_t handle)
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

static void big_resp_free(big_resp *b)
{
    free(b->dv);
    free(b->strs);
    free(b->text);
}

/* Bytes of the MSG body uas_channel_send makes of v: encoding NodeId + v. */
static size_t body_size(const void *v, const uas_type *t)
{
    uas_nodeid id = uas_nodeid_numeric(0, t->binary_encoding_id);
    return uas_encoded_size(&id, NODEID_T) + uas_encoded_size(v, t);
}

/* Decodes a received body (NodeId + message) into dst from arena a,
 * asserting the NodeId names t and every byte is consumed. */
static void decode_body(const uint8_t *body, size_t len, const uas_type *t, void *dst, uas_arena *a)
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

/* Asserts that m is the given message, decoded and compared with uas_equal. */
static void expect_message(const pipe_msg *m, uint32_t request_id, const void *want,
                           const uas_type *t)
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

static pipe_chunk parse_buf(const uas_buf *b)
{
    pipe_chunk c;
    cr_assert_not_null(b, "no chunk queued");
    pipe_parse(b->data, b->len, &c);
    return c;
}

/* Sends v as request_id from e, asserting Good. */
static void send_ok(pipe_end *e, uint32_t request_id, const void *v, const uas_type *t)
{
    uas_status st = uas_channel_send(e->ch, request_id, v, t);
    cr_assert_eq(st, UAS_GOOD, "%s: uas_channel_send(%s) = 0x%08x (%s)", e->name, t->name, st,
                 uas_status_name(st));
}

/* Buffer sizes of 8192 in both directions and both roles. */
static void small_buffers(uas_channel_config *c, uas_channel_config *s)
{
    pipe_config(c, UAS_CHANNEL_CLIENT);
    pipe_config(s, UAS_CHANNEL_SERVER);
    c->recv_buffer_size = c->send_buffer_size = 8192;
    s->recv_buffer_size = s->send_buffer_size = 8192;
}

/* The server failed fatally with `code`: the status uas_channel_recv
 * returned, the ERR it queued, its CLOSED state and the reason given to
 * on_state all say so. */
static void expect_server_failed(pipe *p, uas_status returned, uas_status code)
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

/* After expect_server_failed: the client, given the ERR, closes with the code. */
static void expect_client_told(pipe *p, uas_status code)
{
    uas_status st = pipe_transmit(p, &p->server);
    cr_assert_eq(st, code, "client's uas_channel_recv returned 0x%08x on ERR", st);
    cr_assert_eq(uas_channel_get_state(p->client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p->client.reasons[p->client.nstates - 1], code);
}

/* ------------------------------------------------------------ handshake */

Test(handshake, connect_hel_ack_opn_opens_both_sides_with_same_channel_and_token)
{
    pipe p;
    uas_channel_config c, s;
    pipe_config(&c, UAS_CHANNEL_CLIENT);
    pipe_config(&s, UAS_CHANNEL_SERVER);
    c.recv_buffer_size = 8192;
    c.max_message_size = 1u << 20;
    c.max_chunk_count = 200;
    s.max_message_size = 2u << 20;
    s.max_chunk_count = 300;
    pipe_init(&p, &c, &s);

    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_HEL_SENT);
    cr_assert_eq(p.client.out_count, 1);
    pipe_chunk hel = parse_buf(p.client.out_head);
    cr_assert_str_eq(hel.type, "HEL");
    cr_assert_eq(hel.chunk_type, 'F');
    cr_assert_eq(hel.body_len, 20 + 4 + strlen(URL));
    cr_assert_eq(pipe_get_u32(hel.body + 0), 0, "ProtocolVersion");
    cr_assert_eq(pipe_get_u32(hel.body + 4), 8192, "ReceiveBufferSize");
    cr_assert_eq(pipe_get_u32(hel.body + 8), 65536, "SendBufferSize");
    cr_assert_eq(pipe_get_u32(hel.body + 12), 1u << 20, "MaxMessageSize");
    cr_assert_eq(pipe_get_u32(hel.body + 16), 200, "MaxChunkCount");
    cr_assert_eq(memcmp(hel.body + 24, URL, strlen(URL)), 0);

    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_ACKED);
    cr_assert_str_eq(uas_channel_endpoint_url(p.server.ch), URL);
    pipe_chunk ack = parse_buf(p.server.out_head);
    cr_assert_str_eq(ack.type, "ACK");
    cr_assert_eq(ack.chunk_type, 'F');
    cr_assert_eq(ack.body_len, 20);
    /* The server receives what the client may send and sends no more than
     * the client receives (Part 6, 7.1.2.4). */
    cr_assert_eq(pipe_get_u32(ack.body + 4), 65536, "ACK ReceiveBufferSize");
    cr_assert_eq(pipe_get_u32(ack.body + 8), 8192, "ACK SendBufferSize");
    cr_assert_eq(pipe_get_u32(ack.body + 12), 2u << 20, "ACK MaxMessageSize");
    cr_assert_eq(pipe_get_u32(ack.body + 16), 300, "ACK MaxChunkCount");

    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPN_SENT);
    pipe_chunk opn = parse_buf(p.client.out_head);
    cr_assert_str_eq(opn.type, "OPN");
    cr_assert_eq(opn.chunk_type, 'F');
    cr_assert_eq(opn.channel_id, 0, "an Issue request carries channel id 0");
    cr_assert_eq(opn.policy_uri_len, strlen(NONE_URI));
    cr_assert_eq(memcmp(opn.policy_uri, NONE_URI, strlen(NONE_URI)), 0);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_open_secure_channel_request oreq;
    decode_body(opn.body, opn.body_len, UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST), &oreq, &a);
    cr_assert_eq(oreq.request_type, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE);
    cr_assert_eq(oreq.security_mode, UAS_MESSAGE_SECURITY_MODE_NONE);
    cr_assert_eq(oreq.requested_lifetime, c.requested_lifetime_ms);
    cr_assert_eq(oreq.request_header.timestamp, p.utc, "timestamp from the injected clock");

    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    pipe_chunk opr = parse_buf(p.server.out_head);
    cr_assert_str_eq(opr.type, "OPN");
    cr_assert_eq(opr.channel_id, 7);
    cr_assert_eq(opr.request_id, opn.request_id, "OPN response answers the OPN request id");
    uas_open_secure_channel_response oresp;
    decode_body(opr.body, opr.body_len, UAS_TYPE(OPEN_SECURE_CHANNEL_RESPONSE), &oresp, &a);
    cr_assert_eq(oresp.response_header.service_result, UAS_GOOD);
    cr_assert_eq(oresp.security_token.channel_id, 7);
    cr_assert_eq(oresp.security_token.token_id, 1);
    cr_assert_eq(oresp.security_token.created_at, p.utc);
    cr_assert_eq(oresp.security_token.revised_lifetime, c.requested_lifetime_ms);
    uas_arena_free(&a);

    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(p.client.out_count + p.server.out_count, 0, "nothing more to say");

    cr_assert_eq(uas_channel_get_id(p.client.ch), 7);
    cr_assert_eq(uas_channel_get_id(p.server.ch), 7);
    cr_assert_eq(uas_channel_get_token_id(p.client.ch), 1);
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 1);
    cr_assert_eq(uas_channel_peer_max_message_size(p.client.ch), 2u << 20);
    cr_assert_eq(uas_channel_peer_max_message_size(p.server.ch), 1u << 20);

    /* on_state saw every step, each with a Good reason. */
    static const uas_channel_state cs[] = {UAS_CHANNEL_HEL_SENT, UAS_CHANNEL_OPN_SENT,
                                           UAS_CHANNEL_OPEN};
    static const uas_channel_state ss[] = {UAS_CHANNEL_ACKED, UAS_CHANNEL_OPEN};
    cr_assert_eq(p.client.nstates, 3);
    cr_assert_eq(p.server.nstates, 2);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(p.client.states[i], cs[i], "client state %zu", i);
        cr_assert_eq(p.client.reasons[i], UAS_GOOD);
    }
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(p.server.states[i], ss[i], "server state %zu", i);
        cr_assert_eq(p.server.reasons[i], UAS_GOOD);
    }
    pipe_fini(&p);
}

Test(handshake, negotiated_sizes_cap_server_chunks_at_client_receive_buffer_of_8192)
{
    pipe p;
    uas_channel_config c;
    pipe_config(&c, UAS_CHANNEL_CLIENT);
    c.recv_buffer_size = 8192; /* server sends 65536 by default */
    pipe_init(&p, &c, NULL);
    pipe_open(&p);

    /* Client -> server: the server receives 65536, one chunk suffices. */
    big_req rq;
    big_req_make(&rq, 200, 100, 1); /* ~24 KiB */
    uint32_t id = uas_channel_next_request_id(p.client.ch);
    send_ok(&p.client, id, &rq.r, READ_REQ);
    cr_assert_eq(p.client.out_count, 1, "a 24 KiB request fits one 64 KiB chunk");
    cr_assert_gt(p.client.out_head->len, 8192);
    pipe_pump(&p);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], id, &rq.r, READ_REQ);

    /* Server -> client: chunks of at most 8192 bytes. */
    big_resp rs;
    big_resp_make(&rs, 200, 100, 1);
    send_ok(&p.server, id, &rs.r, READ_RESP);
    cr_assert_gt(p.server.out_count, 2);
    for (size_t i = 0; i < p.server.out_count; i++) {
        uas_buf *b = pipe_peek(&p.server, i);
        cr_assert_leq(b->len, 8192, "server chunk %zu is %u bytes", i, b->len);
    }
    pipe_pump(&p);
    cr_assert_eq(p.client.nmsgs, 1);
    expect_message(&p.client.msgs[0], id, &rs.r, READ_RESP);
    big_req_free(&rq);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(handshake, send_before_open_returns_bad_secure_channel_closed)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    big_req rq;
    big_req_make(&rq, 1, 0, 1);
    cr_assert_eq(uas_channel_send(p.client.ch, 1, &rq.r, READ_REQ), UAS_BAD_SECURE_CHANNEL_CLOSED);
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    cr_assert_eq(uas_channel_send(p.client.ch, 1, &rq.r, READ_REQ), UAS_BAD_SECURE_CHANNEL_CLOSED);
    cr_assert_eq(p.client.out_count, 1, "only the HEL went out");
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_BAD_INVALID_STATE);
    big_req_free(&rq);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ messages */

/* Read request and response under one way of cutting the bytes. */
static void read_roundtrip(pipe_split split)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    p.split = split;
    pipe_open(&p);

    big_req rq;
    big_req_make(&rq, 3, 0, 42);
    uint32_t id = uas_channel_next_request_id(p.client.ch);
    send_ok(&p.client, id, &rq.r, READ_REQ);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    const pipe_msg *m = &p.server.msgs[0];
    /* The body starts with NodeId(631), ReadRequest_Encoding_DefaultBinary,
     * in its four-byte form. */
    static const uint8_t nodeid_631[] = {0x01, 0x00, 0x77, 0x02};
    cr_assert_geq(m->len, 4);
    cr_assert_eq(memcmp(m->body, nodeid_631, 4), 0);
    expect_message(m, id, &rq.r, READ_REQ);

    big_resp rs;
    big_resp_make(&rs, 3, 5, 42);
    send_ok(&p.server, m->request_id, &rs.r, READ_RESP);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    expect_message(&p.client.msgs[0], id, &rs.r, READ_RESP);
    cr_assert_eq(p.client.nerrs + p.server.nerrs, 0);
    big_req_free(&rq);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(message, read_request_and_response_whole_arrive_equal_with_same_request_id)
{
    read_roundtrip(PIPE_WHOLE);
}

Test(message, read_request_and_response_fed_one_byte_at_a_time_arrive_equal)
{
    read_roundtrip(PIPE_BYTES);
}

Test(message, read_request_and_response_in_random_pieces_arrive_equal)
{
    read_roundtrip(PIPE_RANDOM);
}

/* A simple server answers from inside on_message. */
static void echo_hook(pipe_end *e, uint32_t request_id, const uint8_t *body, size_t len)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_read_request req;
    decode_body(body, len, READ_REQ, &req, &a);
    big_resp rs;
    big_resp_make(&rs, req.nodes_to_read_count, req.nodes_to_read_count % 300,
                  req.request_header.request_handle);
    send_ok(e, request_id, &rs.r, READ_RESP);
    big_resp_free(&rs);
    uas_arena_free(&a);
}

Test(message, many_requests_of_random_sizes_answered_inside_on_message_all_arrive_in_order)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    p.split = PIPE_RANDOM;
    p.server.on_message_hook = echo_hook;
    pipe_open(&p);
    uint64_t seed = 12345;
    size_t n = 40;
    size_t nodes[40];
    uint32_t ids[40];
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        nodes[i] = 1 + (size_t)(seed >> 33) % 200;
        big_req rq;
        big_req_make(&rq, nodes[i], (size_t)(seed >> 40) % 120, (uint32_t)i);
        ids[i] = uas_channel_next_request_id(p.client.ch);
        send_ok(&p.client, ids[i], &rq.r, READ_REQ);
        big_req_free(&rq);
        if (i % 3 == 2)
            pipe_pump(&p); /* several requests in flight at once */
    }
    pipe_pump(&p);
    cr_assert_eq(p.server.nmsgs, n);
    cr_assert_eq(p.client.nmsgs, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(p.server.msgs[i].request_id, ids[i]);
        big_resp rs;
        big_resp_make(&rs, nodes[i], nodes[i] % 300, (uint32_t)i);
        expect_message(&p.client.msgs[i], ids[i], &rs.r, READ_RESP);
        big_resp_free(&rs);
    }
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ chunking */

Test(chunking, response_of_200_kib_crosses_many_8192_byte_chunks_and_reassembles_intact)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    p.split = PIPE_RANDOM;
    pipe_open(&p);

    big_resp rs;
    big_resp_make(&rs, 400, 500, 9); /* ~205 KB */
    size_t want = body_size(&rs.r, READ_RESP);
    cr_assert_gt(want, 200000);
    uint32_t id = 77;
    send_ok(&p.server, id, &rs.r, READ_RESP);

    /* The wire: MSG chunks C...C F, each at most 8192 bytes and all but the
     * last full, consecutive sequence numbers, one request id, the channel
     * and token of the handshake; their bodies are the message. */
    size_t n = p.server.out_count;
    cr_assert_geq(n, want / 8192 + 1);
    uint8_t *joined = malloc(want);
    cr_assert_not_null(joined);
    size_t off = 0;
    uint32_t first_seq = 0;
    for (size_t i = 0; i < n; i++) {
        pipe_chunk ck = parse_buf(pipe_peek(&p.server, i));
        cr_assert_str_eq(ck.type, "MSG");
        cr_assert_eq(ck.chunk_type, i + 1 < n ? 'C' : 'F', "chunk %zu is '%c'", i, ck.chunk_type);
        cr_assert_leq(ck.size, 8192, "chunk %zu is %u bytes", i, ck.size);
        if (i + 1 < n)
            cr_assert_eq(ck.size, 8192, "intermediate chunk %zu not full", i);
        cr_assert_eq(ck.channel_id, 7);
        cr_assert_eq(ck.token_id, 1);
        cr_assert_eq(ck.request_id, id);
        if (i == 0)
            first_seq = ck.seq;
        cr_assert_eq(ck.seq, first_seq + (uint32_t)i, "sequence numbers not consecutive");
        cr_assert_leq(off + ck.body_len, want);
        memcpy(joined + off, ck.body, ck.body_len);
        off += ck.body_len;
    }
    cr_assert_eq(off, want);
    uint8_t *expect = malloc(want);
    cr_assert_not_null(expect);
    uas_nodeid nid = uas_nodeid_numeric(0, READ_RESP->binary_encoding_id);
    size_t w1 = 0, w2 = 0;
    cr_assert_eq(uas_encode_binary(&nid, NODEID_T, expect, want, &w1), UAS_GOOD);
    cr_assert_eq(uas_encode_binary(&rs.r, READ_RESP, expect + w1, want - w1, &w2), UAS_GOOD);
    cr_assert_eq(w1 + w2, want);
    cr_assert_eq(memcmp(joined, expect, want), 0, "chunk bodies differ from the encoding");
    free(joined);
    free(expect);

    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    expect_message(&p.client.msgs[0], id, &rs.r, READ_RESP);

    /* And the other way, fed one byte at a time. */
    big_req rq;
    big_req_make(&rq, 300, 200, 5); /* ~66 KB */
    p.split = PIPE_BYTES;
    send_ok(&p.client, 78, &rq.r, READ_REQ);
    cr_assert_gt(p.client.out_count, 7);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], 78, &rq.r, READ_REQ);
    big_req_free(&rq);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(chunking, message_exactly_filling_one_chunk_goes_as_one_final_chunk)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    /* Grow a response until its body is exactly what one chunk carries:
     * 8192 - 8 (header) - 8 (symmetric security header) - 8 (sequence). */
    size_t cap = 8192 - 24;
    big_resp rs;
    big_resp_make(&rs, 1, 0, 1);
    size_t base = body_size(&rs.r, READ_RESP);
    big_resp_free(&rs);
    big_resp_make(&rs, 1, cap - base, 1);
    cr_assert_eq(body_size(&rs.r, READ_RESP), cap);
    send_ok(&p.server, 3, &rs.r, READ_RESP);
    cr_assert_eq(p.server.out_count, 1);
    pipe_chunk ck = parse_buf(p.server.out_head);
    cr_assert_eq(ck.chunk_type, 'F');
    cr_assert_eq(ck.size, 8192);
    pipe_pump(&p);
    expect_message(&p.client.msgs[0], 3, &rs.r, READ_RESP);
    big_resp_free(&rs);

    /* One byte more takes a second chunk. */
    big_resp_make(&rs, 1, cap - base + 1, 1);
    send_ok(&p.server, 4, &rs.r, READ_RESP);
    cr_assert_eq(p.server.out_count, 2);
    cr_assert_eq(parse_buf(pipe_peek(&p.server, 0)).chunk_type, 'C');
    cr_assert_eq(parse_buf(pipe_peek(&p.server, 1)).body_len, 1);
    pipe_pump(&p);
    expect_message(&p.client.msgs[1], 4, &rs.r, READ_RESP);
    big_resp_free(&rs);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ bad input */

/* Feeds crafted bytes to a fresh server and returns what recv said. */
static uas_status feed_server(pipe *p, const void *bytes, size_t len)
{
    return pipe_feed(p, &p->server, bytes, len);
}

Test(bad_input, garbage_instead_of_hel_is_answered_with_err_message_type_invalid)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    static const char http[] = "GET / HTTP/1.1\r\nHost: pipe\r\n\r\n";
    uas_status st = feed_server(&p, http, sizeof(http) - 1);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);
}

Test(bad_input, garbage_fed_byte_by_byte_is_refused_once_the_header_is_in)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    p.split = PIPE_BYTES;
    static const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    uas_status st = feed_server(&p, junk, 8);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);
}

Test(bad_input, hel_header_announcing_more_than_8192_bytes_is_refused_before_its_body)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    uint8_t h[8] = {'H', 'E', 'L', 'F'};
    pipe_set_u32(h + 4, 8193);
    /* Only the header: the server must not wait for 8 KiB of body. */
    uas_status st = feed_server(&p, h, sizeof(h));
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    pipe_fini(&p);
}

Test(bad_input, chunk_larger_than_negotiated_receive_buffer_is_refused_message_too_large)
{
    uas_channel_config c;
    pipe_config(&c, UAS_CHANNEL_CLIENT);
    c.send_buffer_size = 8192; /* the server receives 65536 but agrees to 8192 */
    pipe p;
    pipe_init(&p, &c, NULL);
    pipe_open(&p);
    uint8_t h[8] = {'M', 'S', 'G', 'F'};
    pipe_set_u32(h + 4, 8193);
    uas_status st = feed_server(&p, h, sizeof(h));
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    expect_client_told(&p, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    pipe_fini(&p);
}

Test(bad_input, chunk_of_exactly_the_negotiated_size_is_accepted)
{
    uas_channel_config c;
    pipe_config(&c, UAS_CHANNEL_CLIENT);
    c.send_buffer_size = 8192;
    pipe p;
    pipe_init(&p, &c, NULL);
    pipe_open(&p);
    big_resp rs; /* any message; the server does not check what it is */
    big_resp_make(&rs, 1, 0, 1);
    size_t base = body_size(&rs.r, READ_RESP);
    big_resp_free(&rs);
    big_resp_make(&rs, 1, 8192 - 24 - base, 1);
    send_ok(&p.client, 5, &rs.r, READ_RESP);
    cr_assert_eq(p.client.out_head->len, 8192);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(bad_input, hel_with_buffer_sizes_below_8192_is_refused)
{
    /* Part 6, 7.1.2.3: both sizes shall be at least 8192 bytes (for the
     * non-ECC policies this stack has); no particular code is named, the
     * stack answers BadTcpInternalError. */
    static const uint32_t sizes[][2] = {{8191, 65536}, {65536, 8191}, {1024, 1024}};
    for (size_t i = 0; i < 3; i++) {
        pipe p;
        pipe_init(&p, NULL, NULL);
        uint8_t hel[128];
        size_t n =
            pipe_build_hel(hel, sizeof(hel), sizes[i][0], sizes[i][1], 0, 0, URL, strlen(URL));
        uas_status st = feed_server(&p, hel, n);
        expect_server_failed(&p, st, UAS_BAD_TCP_INTERNAL_ERROR);
        pipe_fini(&p);
    }
}

Test(bad_input, hel_with_endpoint_url_over_4096_bytes_is_refused_endpoint_url_invalid)
{
    static char url[4097];
    memset(url, 'x', sizeof(url));
    memcpy(url, "opc.tcp://", 10);
    static uint8_t hel[8192];

    /* 4096 bytes is the limit and still accepted. */
    pipe p;
    pipe_init(&p, NULL, NULL);
    size_t n = pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, url, 4096);
    cr_assert_eq(feed_server(&p, hel, n), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_ACKED);
    cr_assert_eq(strlen(uas_channel_endpoint_url(p.server.ch)), 4096);
    pipe_fini(&p);

    pipe_init(&p, NULL, NULL);
    n = pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, url, 4097);
    uas_status st = feed_server(&p, hel, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    pipe_fini(&p);

    /* A null or empty URL is no better. */
    pipe_init(&p, NULL, NULL);
    n = pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, "", 0);
    st = feed_server(&p, hel, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    pipe_fini(&p);

    /* And the client refuses to send one. */
    pipe_init(&p, NULL, NULL);
    url[4096] = 0;
    cr_assert_eq(uas_channel_connect(p.client.ch, url, p.now_ms), UAS_GOOD);
    pipe_fini(&p);
    pipe_init(&p, NULL, NULL);
    char *longer = malloc(4098);
    memset(longer, 'y', 4097);
    longer[4097] = 0;
    cr_assert_eq(uas_channel_connect(p.client.ch, longer, p.now_ms),
                 UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    cr_assert_eq(p.client.out_count, 0);
    free(longer);
    pipe_fini(&p);
}

Test(bad_input, truncated_hel_is_refused)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    uint8_t hel[128];
    (void)pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, URL, strlen(URL));
    pipe_set_u32(hel + 4, 20); /* ends inside the buffer sizes */
    uas_status st = feed_server(&p, hel, 20);
    cr_assert(uas_is_bad(st));
    expect_server_failed(&p, st, st);
    pipe_fini(&p);
}

Test(bad_input, second_hel_after_ack_is_refused_message_type_invalid)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    uint8_t hel[128];
    size_t n = pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, URL, strlen(URL));
    cr_assert_eq(feed_server(&p, hel, n), UAS_GOOD);
    pipe_discard(&p, &p.server);
    uas_status st = feed_server(&p, hel, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);
}

/* A MSG chunk for the pipe's server (channel 7, token 1). */
static size_t build_msg(uint8_t *out, uint32_t seq, uint32_t request_id)
{
    memcpy(out, "MSGF", 4);
    pipe_set_u32(out + 4, 28);
    pipe_set_u32(out + 8, 7);
    pipe_set_u32(out + 12, 1);
    pipe_set_u32(out + 16, seq);
    pipe_set_u32(out + 20, request_id);
    pipe_set_u32(out + 24, 0xDEADBEEF);
    return 28;
}

Test(bad_input, msg_before_opn_is_refused_message_type_invalid)
{
    /* Before HEL. */
    pipe p;
    pipe_init(&p, NULL, NULL);
    uint8_t msg[28];
    size_t n = build_msg(msg, 1, 1);
    uas_status st = feed_server(&p, msg, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);

    /* After HEL, before OPN. */
    pipe_init(&p, NULL, NULL);
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_ACKED);
    pipe_discard(&p, &p.server);
    st = feed_server(&p, msg, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    cr_assert_eq(p.server.nmsgs, 0);
    pipe_fini(&p);
}

/* Gets a server to ACKED (HEL from the pipe's client) and drops the ACK. */
static void hello_only(pipe *p)
{
    cr_assert_eq(uas_channel_connect(p->client.ch, URL, p->now_ms), UAS_GOOD);
    cr_assert_eq(pipe_transmit(p, &p->client), UAS_GOOD);
    pipe_discard(p, &p->server);
}

static void opn_request(uas_open_secure_channel_request *r, int32_t type, int32_t mode)
{
    memset(r, 0, sizeof(*r));
    r->request_header.timestamp = T_REQ;
    r->request_type = type;
    r->security_mode = mode;
    r->requested_lifetime = 600000;
}

Test(bad_input, opn_with_unknown_security_policy_is_refused_policy_rejected)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 0,
                              "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", 1, 1, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_POLICY_REJECTED);
    pipe_fini(&p);

    /* A URI that only starts like None's is not None. */
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI "x", 1, 1, &r,
                       UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_POLICY_REJECTED);
    pipe_fini(&p);
}

Test(bad_input, opn_with_mode_sign_under_policy_none_is_refused_mode_rejected)
{
    static const int32_t modes[] = {UAS_MESSAGE_SECURITY_MODE_SIGN,
                                    UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                                    UAS_MESSAGE_SECURITY_MODE_INVALID};
    for (size_t i = 0; i < 3; i++) {
        pipe p;
        pipe_init(&p, NULL, NULL);
        hello_only(&p);
        uas_open_secure_channel_request r;
        opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, modes[i]);
        uint8_t buf[512];
        size_t n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI, 1, 1, &r,
                                  UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
        uas_status st = feed_server(&p, buf, n);
        expect_server_failed(&p, st, UAS_BAD_SECURITY_MODE_REJECTED);
        pipe_fini(&p);
    }
}

Test(bad_input, crafted_opn_with_mode_none_opens_the_channel)
{
    /* The control for the two tests above: the same crafted bytes with the
     * right policy and mode are accepted. */
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI, 1, 1, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    cr_assert_eq(feed_server(&p, buf, n), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    uint8_t msg[28];
    n = build_msg(msg, 2, 2);
    cr_assert_eq(feed_server(&p, msg, n), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    cr_assert_eq(p.server.msgs[0].len, 4);
    pipe_fini(&p);
}

Test(bad_input, renew_before_issue_is_refused)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI, 1, 1, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_REQUEST_TYPE_INVALID);
    pipe_fini(&p);
}

/* Opens a pipe, has the client send one small request and takes its chunk
 * off the queue for the caller to mutate. */
static uas_buf *open_and_take_request(pipe *p, uint32_t *request_id)
{
    pipe_init(p, NULL, NULL);
    pipe_open(p);
    big_req rq;
    big_req_make(&rq, 2, 0, 1);
    *request_id = uas_channel_next_request_id(p->client.ch);
    send_ok(&p->client, *request_id, &rq.r, READ_REQ);
    big_req_free(&rq);
    cr_assert_eq(p->client.out_count, 1);
    return pipe_take(&p->client);
}

static uas_status deliver(pipe *p, uas_buf *b)
{
    uas_status st = pipe_feed(p, &p->server, b->data, b->len);
    uas_buf_put(p->pool, b);
    return st;
}

Test(bad_input, msg_with_wrong_channel_id_is_refused_secure_channel_unknown)
{
    pipe p;
    uint32_t id;
    uas_buf *b = open_and_take_request(&p, &id);
    pipe_set_u32(b->data + 8, 8);
    uas_status st = deliver(&p, b);
    expect_server_failed(&p, st, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN);
    cr_assert_eq(p.server.nmsgs, 0);
    expect_client_told(&p, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN);
    pipe_fini(&p);
}

Test(bad_input, msg_with_wrong_token_id_is_refused_token_unknown)
{
    pipe p;
    uint32_t id;
    uas_buf *b = open_and_take_request(&p, &id);
    pipe_set_u32(b->data + 12, 2); /* the next token, not issued yet */
    uas_status st = deliver(&p, b);
    expect_server_failed(&p, st, UAS_BAD_SECURE_CHANNEL_TOKEN_UNKNOWN);
    cr_assert_eq(p.server.nmsgs, 0);
    pipe_fini(&p);
}

Test(bad_input, sequence_number_gap_is_refused_sequence_number_invalid)
{
    pipe p;
    uint32_t id;
    uas_buf *first = open_and_take_request(&p, &id);
    uas_buf_put(p.pool, first); /* lost on the way */
    big_req rq;
    big_req_make(&rq, 1, 0, 2);
    send_ok(&p.client, id + 1, &rq.r, READ_REQ);
    big_req_free(&rq);
    uas_status st = pipe_transmit(&p, &p.client);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(p.server.nmsgs, 0);
    pipe_fini(&p);
}

Test(bad_input, replayed_chunk_is_refused_as_a_failed_security_check)
{
    pipe p;
    uint32_t id;
    uas_buf *b = open_and_take_request(&p, &id);
    cr_assert_eq(pipe_feed(&p, &p.server, b->data, b->len), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    uas_status st = deliver(&p, b);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(p.server.nmsgs, 1, "the replay was not delivered");
    pipe_fini(&p);
}

Test(bad_input, msg_truncated_inside_its_security_or_sequence_header_is_refused)
{
    /* 12 bytes: header + channel id, no token. 16: no sequence header. */
    static const uint32_t sizes[] = {12, 16, 20};
    for (size_t i = 0; i < 3; i++) {
        pipe p;
        uint32_t id;
        uas_buf *b = open_and_take_request(&p, &id);
        pipe_set_u32(b->data + 4, sizes[i]);
        b->len = sizes[i];
        uas_status st = deliver(&p, b);
        cr_assert(uas_is_bad(st), "size %u accepted", sizes[i]);
        expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
        cr_assert_eq(p.server.nmsgs, 0);
        pipe_fini(&p);
    }
}

Test(bad_input, chunk_announcing_less_than_a_header_is_refused)
{
    static const uint32_t sizes[] = {0, 7, 8, 11};
    for (size_t i = 0; i < 4; i++) {
        pipe p;
        pipe_init(&p, NULL, NULL);
        uint8_t h[16] = {'H', 'E', 'L', 'F'};
        pipe_set_u32(h + 4, sizes[i]);
        uas_status st = feed_server(&p, h, sizeof(h));
        cr_assert(uas_is_bad(st), "MessageSize %u accepted", sizes[i]);
        expect_server_failed(&p, st, st);
        pipe_fini(&p);
    }
}

Test(bad_input, opn_with_asymmetric_header_running_past_the_chunk_is_refused)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI, 1, 1, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    pipe_set_u32(buf + 12, 5000); /* policy URI length beyond the chunk */
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);
}

Test(bad_input, opn_with_undecodable_body_is_refused)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 0, NONE_URI, 1, 1, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    n -= 6; /* cut the body short */
    pipe_set_u32(buf + 4, (uint32_t)n);
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_DECODING_ERROR);
    cr_assert_neq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    pipe_fini(&p);
}

Test(bad_input, chunks_of_two_messages_interleaved_are_refused)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    big_req a, b;
    big_req_make(&a, 150, 100, 1); /* 3 chunks */
    big_req_make(&b, 1, 0, 2);
    send_ok(&p.client, 10, &a.r, READ_REQ);
    send_ok(&p.client, 11, &b.r, READ_REQ);
    cr_assert_eq(p.client.out_count, 4);
    uas_buf *a1 = pipe_take(&p.client), *a2 = pipe_take(&p.client);
    uas_buf *a3 = pipe_take(&p.client), *b1 = pipe_take(&p.client);
    pipe_chunk ca1 = parse_buf(a1);
    cr_assert_eq(ca1.chunk_type, 'C');
    /* Wire order a1, b1, a2, a3 with sequence numbers renumbered to run on,
     * so the interleaving is the only fault. */
    pipe_set_u32(b1->data + ca1.seq_offset, ca1.seq + 1);
    cr_assert_eq(pipe_feed(&p, &p.server, a1->data, a1->len), UAS_GOOD);
    uas_status st = pipe_feed(&p, &p.server, b1->data, b1->len);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    cr_assert_eq(p.server.nmsgs, 0);
    uas_buf_put(p.pool, a1);
    uas_buf_put(p.pool, a2);
    uas_buf_put(p.pool, a3);
    uas_buf_put(p.pool, b1);
    big_req_free(&a);
    big_req_free(&b);
    pipe_fini(&p);
}

Test(bad_input, unknown_chunk_type_is_refused_message_type_invalid)
{
    pipe p;
    uint32_t id;
    uas_buf *b = open_and_take_request(&p, &id);
    b->data[3] = 'X';
    uas_status st = deliver(&p, b);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    cr_assert_eq(p.server.nmsgs, 0);
    pipe_fini(&p);
}

Test(bad_input, unknown_message_type_after_open_is_refused_message_type_invalid)
{
    pipe p;
    uint32_t id;
    uas_buf *b = open_and_take_request(&p, &id);
    memcpy(b->data, "RHE", 3);
    uas_status st = deliver(&p, b);
    expect_server_failed(&p, st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    pipe_fini(&p);
}

Test(bad_input, client_given_garbage_closes_without_sending_err)
{
    /* Only the server answers with ERR; a client just closes (Part 6, 7.1.5). */
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    static const uint8_t junk[16] = {'X', 'Y', 'Z', 'F', 16};
    uas_status st = pipe_feed(&p, &p.client, junk, sizeof(junk));
    cr_assert_eq(st, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.client.out_count, 0);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ limits */

/* A client that ignores the server's limits: the ACK's MaxMessageSize and
 * MaxChunkCount are zeroed on the way. */
static void open_ignoring_server_limits(pipe *p)
{
    cr_assert_eq(uas_channel_connect(p->client.ch, URL, p->now_ms), UAS_GOOD);
    cr_assert_eq(pipe_transmit(p, &p->client), UAS_GOOD);
    pipe_chunk ack = parse_buf(p->server.out_head);
    cr_assert_str_eq(ack.type, "ACK");
    pipe_set_u32(p->server.out_head->data + 8 + 12, 0);
    pipe_set_u32(p->server.out_head->data + 8 + 16, 0);
    pipe_pump(p);
    cr_assert_eq(uas_channel_get_state(p->client.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(uas_channel_peer_max_message_size(p->client.ch), 0);
}

/* The server got exactly one error for id with code, stays OPEN, said
 * nothing, and serves the next request. */
static void expect_request_refused_then_next_served(pipe *p, uint32_t id, uas_status code)
{
    cr_assert_eq(p->server.nmsgs, 0, "the oversized request was delivered");
    cr_assert_eq(p->server.nerrs, 1);
    cr_assert_eq(p->server.errs[0].request_id, id);
    cr_assert_eq(p->server.errs[0].status, code, "on_message_error got 0x%08x",
                 p->server.errs[0].status);
    cr_assert_eq(uas_channel_get_state(p->server.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(p->server.out_count, 0, "the channel layer answered by itself");
    /* ~12 KB: two chunks where chunks are 8192, within every limit used. */
    big_req rq;
    big_req_make(&rq, 80, 130, 2);
    send_ok(&p->client, id + 1, &rq.r, READ_REQ);
    cr_assert_eq(pipe_transmit(p, &p->client), UAS_GOOD);
    cr_assert_eq(p->server.nmsgs, 1);
    expect_message(&p->server.msgs[0], id + 1, &rq.r, READ_REQ);
    big_req_free(&rq);
}

Test(limits, request_over_server_max_message_size_gets_request_too_large_and_channel_stays_open)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    s.max_message_size = 32768;
    pipe p;
    pipe_init(&p, &c, &s);
    p.split = PIPE_RANDOM;
    open_ignoring_server_limits(&p);
    big_req rq;
    big_req_make(&rq, 300, 150, 1); /* ~52 KB over 7 chunks */
    cr_assert_gt(body_size(&rq.r, READ_REQ), 32768);
    send_ok(&p.client, 20, &rq.r, READ_REQ);
    cr_assert_gt(p.client.out_count, 4);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    expect_request_refused_then_next_served(&p, 20, UAS_BAD_REQUEST_TOO_LARGE);
    big_req_free(&rq);
    pipe_fini(&p);
}

Test(limits, single_chunk_request_over_server_max_message_size_gets_request_too_large)
{
    uas_channel_config s;
    pipe_config(&s, UAS_CHANNEL_SERVER);
    s.max_message_size = 16384; /* below the 65536 chunk size */
    pipe p;
    pipe_init(&p, NULL, &s);
    open_ignoring_server_limits(&p);
    big_req rq;
    big_req_make(&rq, 200, 100, 1);
    send_ok(&p.client, 20, &rq.r, READ_REQ);
    cr_assert_eq(p.client.out_count, 1);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    expect_request_refused_then_next_served(&p, 20, UAS_BAD_REQUEST_TOO_LARGE);
    big_req_free(&rq);
    pipe_fini(&p);
}

Test(limits, request_of_exactly_server_max_message_size_is_delivered)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    big_req rq;
    big_req_make(&rq, 300, 150, 1);
    s.max_message_size = (uint32_t)body_size(&rq.r, READ_REQ);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p); /* the client knows the limit and is within it */
    send_ok(&p.client, 20, &rq.r, READ_REQ);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nerrs, 0);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], 20, &rq.r, READ_REQ);
    big_req_free(&rq);
    pipe_fini(&p);
}

Test(limits, request_over_server_max_chunk_count_gets_request_too_large_and_channel_stays_open)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    s.max_chunk_count = 3;
    pipe p;
    pipe_init(&p, &c, &s);
    open_ignoring_server_limits(&p);

    /* Exactly three full chunks pass. */
    size_t per = 8192 - 24;
    big_req rq;
    req_of_size(&rq, 3 * per);
    send_ok(&p.client, 30, &rq.r, READ_REQ);
    cr_assert_eq(p.client.out_count, 3);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nerrs, 0);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], 30, &rq.r, READ_REQ);
    free(p.server.msgs[0].body);
    p.server.nmsgs = 0;
    big_req_free(&rq);

    /* One byte more needs a fourth chunk. */
    req_of_size(&rq, 3 * per + 1);
    send_ok(&p.client, 40, &rq.r, READ_REQ);
    cr_assert_eq(p.client.out_count, 4);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    expect_request_refused_then_next_served(&p, 40, UAS_BAD_REQUEST_TOO_LARGE);
    big_req_free(&rq);
    pipe_fini(&p);
}

/* Client limits for the response tests: 8192-byte chunks both ways. */
static void open_with_client_limits(pipe *p, uint32_t max_message, uint32_t max_chunks)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    c.max_message_size = max_message;
    c.max_chunk_count = max_chunks;
    pipe_init(p, &c, &s);
    pipe_open(p);
}

/* A response whose body is exactly `size` bytes. */
static void resp_of_size(big_resp *rs, size_t size)
{
    big_resp_make(rs, 1, 0, 1);
    size_t base = body_size(&rs->r, READ_RESP);
    cr_assert_geq(size, base + 5);
    big_resp_free(rs);
    /* The String length prefix is fixed size, so the body grows by one per
     * character. */
    big_resp_make(rs, 1, size - base, 1);
    cr_assert_eq(body_size(&rs->r, READ_RESP), size);
}

Test(limits, response_over_client_max_message_size_is_aborted_and_client_told_too_large)
{
    pipe p;
    open_with_client_limits(&p, 40000, 0);
    big_resp rs;
    resp_of_size(&rs, 60000);
    uas_status st = uas_channel_send(p.server.ch, 50, &rs.r, READ_RESP);
    cr_assert_eq(st, UAS_BAD_RESPONSE_TOO_LARGE);
    /* Chunks up to the limit went out, then an abort chunk (Part 6, 6.7.3). */
    size_t n = p.server.out_count;
    cr_assert_geq(n, 2);
    size_t bodies = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        pipe_chunk ck = parse_buf(pipe_peek(&p.server, i));
        cr_assert_eq(ck.chunk_type, 'C');
        bodies += ck.body_len;
    }
    cr_assert_leq(bodies, 40000, "more than MaxMessageSize went out before the abort");
    pipe_chunk ab = parse_buf(p.server.out_tail);
    cr_assert_str_eq(ab.type, "MSG");
    cr_assert_eq(ab.chunk_type, 'A');
    cr_assert_eq(ab.request_id, 50);
    cr_assert_geq(ab.body_len, 8);
    cr_assert_eq(pipe_get_u32(ab.body), UAS_BAD_RESPONSE_TOO_LARGE, "abort Error");
    uint32_t reason_len = pipe_get_u32(ab.body + 4);
    cr_assert_eq(reason_len, ab.body_len - 8, "abort Reason is a String filling the body");
    cr_assert_leq(reason_len, 4096);

    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 0);
    cr_assert_eq(p.client.nerrs, 1);
    cr_assert_eq(p.client.errs[0].request_id, 50);
    cr_assert_eq(p.client.errs[0].status, UAS_BAD_RESPONSE_TOO_LARGE);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);

    /* The channel goes on. */
    big_resp_free(&rs);
    resp_of_size(&rs, 30000);
    send_ok(&p.server, 51, &rs.r, READ_RESP);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    expect_message(&p.client.msgs[0], 51, &rs.r, READ_RESP);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(limits, response_too_large_before_any_chunk_left_sends_nothing)
{
    pipe p;
    open_with_client_limits(&p, 4000, 0);
    big_resp rs;
    resp_of_size(&rs, 5000); /* fits one chunk, exceeds the limit */
    uint64_t before = p.server.chunks_sent;
    cr_assert_eq(uas_channel_send(p.server.ch, 60, &rs.r, READ_RESP), UAS_BAD_RESPONSE_TOO_LARGE);
    cr_assert_eq(p.server.chunks_sent, before, "nothing may go out: the caller answers");
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(limits, response_of_exactly_client_max_message_size_is_delivered)
{
    big_resp rs;
    resp_of_size(&rs, 40000);
    pipe p;
    open_with_client_limits(&p, 40000, 0);
    send_ok(&p.server, 70, &rs.r, READ_RESP);
    pipe_chunk last = parse_buf(p.server.out_tail);
    cr_assert_eq(last.chunk_type, 'F');
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nerrs, 0);
    cr_assert_eq(p.client.nmsgs, 1);
    cr_assert_eq(p.client.msgs[0].len, 40000);
    expect_message(&p.client.msgs[0], 70, &rs.r, READ_RESP);
    big_resp_free(&rs);

    /* One byte more is too large. */
    resp_of_size(&rs, 40001);
    cr_assert_eq(uas_channel_send(p.server.ch, 71, &rs.r, READ_RESP), UAS_BAD_RESPONSE_TOO_LARGE);
    cr_assert_eq(parse_buf(p.server.out_tail).chunk_type, 'A');
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    cr_assert_eq(p.client.nerrs, 1);
    cr_assert_eq(p.client.errs[0].status, UAS_BAD_RESPONSE_TOO_LARGE);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(limits, response_of_exactly_client_max_message_size_filling_whole_chunks_is_delivered)
{
    /* The limit falls exactly on a chunk boundary: the writer must not
     * count a next chunk that never comes. */
    size_t per = 8192 - 24;
    big_resp rs;
    resp_of_size(&rs, 3 * per);
    pipe p;
    open_with_client_limits(&p, (uint32_t)(3 * per), 3);
    send_ok(&p.server, 72, &rs.r, READ_RESP);
    cr_assert_eq(p.server.out_count, 3);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nerrs, 0);
    expect_message(&p.client.msgs[0], 72, &rs.r, READ_RESP);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(limits, response_over_client_max_chunk_count_is_aborted_and_client_told_too_large)
{
    pipe p;
    open_with_client_limits(&p, 0, 4);
    size_t per = 8192 - 24;
    big_resp rs;
    resp_of_size(&rs, 4 * per); /* exactly four chunks: fine */
    send_ok(&p.server, 80, &rs.r, READ_RESP);
    cr_assert_eq(p.server.out_count, 4);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    big_resp_free(&rs);

    resp_of_size(&rs, 4 * per + 1); /* a fifth chunk: refused */
    cr_assert_eq(uas_channel_send(p.server.ch, 81, &rs.r, READ_RESP), UAS_BAD_RESPONSE_TOO_LARGE);
    size_t n = p.server.out_count;
    cr_assert_leq(n, 4, "more chunks than MaxChunkCount, abort included");
    cr_assert_eq(parse_buf(p.server.out_tail).chunk_type, 'A');
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    cr_assert_eq(p.client.nerrs, 1);
    cr_assert_eq(p.client.errs[0].request_id, 81);
    cr_assert_eq(p.client.errs[0].status, UAS_BAD_RESPONSE_TOO_LARGE);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(limits, client_refuses_request_over_server_limit_with_request_too_large)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    s.max_message_size = 5000;
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    big_req rq;
    big_req_make(&rq, 50, 100, 1); /* ~6 KB, one chunk */
    cr_assert_eq(uas_channel_send(p.client.ch, 90, &rq.r, READ_REQ), UAS_BAD_REQUEST_TOO_LARGE);
    cr_assert_eq(p.client.out_count, 0);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    big_req_free(&rq);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ abort */

Test(abort, abort_chunk_from_client_discards_partial_request_and_next_request_is_served)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    s.max_message_size = 20000;
    pipe p;
    pipe_init(&p, &c, &s);
    p.split = PIPE_RANDOM;
    pipe_open(&p);
    big_req rq;
    big_req_make(&rq, 250, 150, 1); /* ~43 KB */
    /* The client learnt the limit from the ACK: it stops and aborts. */
    cr_assert_eq(uas_channel_send(p.client.ch, 100, &rq.r, READ_REQ), UAS_BAD_REQUEST_TOO_LARGE);
    size_t n = p.client.out_count;
    cr_assert_geq(n, 2, "some chunks went out before the limit was hit");
    for (size_t i = 0; i + 1 < n; i++)
        cr_assert_eq(parse_buf(pipe_peek(&p.client, i)).chunk_type, 'C');
    pipe_chunk ab = parse_buf(p.client.out_tail);
    cr_assert_eq(ab.chunk_type, 'A');
    cr_assert_eq(pipe_get_u32(ab.body), UAS_BAD_REQUEST_TOO_LARGE);

    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    /* Part 6, 6.7.3: the receiver ignores the message, keeps the channel;
     * the client already reported the error, the server does not answer. */
    cr_assert_eq(p.server.nmsgs, 0);
    cr_assert_eq(p.server.nerrs, 0);
    cr_assert_eq(p.server.out_count, 0);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);

    big_req small;
    big_req_make(&small, 20, 20, 2);
    send_ok(&p.client, 101, &small.r, READ_REQ);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], 101, &small.r, READ_REQ);
    big_req_free(&small);
    big_req_free(&rq);
    pipe_fini(&p);
}

Test(abort, crafted_abort_after_intermediate_chunks_discards_them)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    big_req rq;
    big_req_make(&rq, 200, 150, 1); /* several chunks */
    send_ok(&p.client, 110, &rq.r, READ_REQ);
    size_t n = p.client.out_count;
    cr_assert_geq(n, 3);
    /* Turn the final chunk into an abort (same sequence number). */
    uas_buf *last = p.client.out_tail;
    last->data[3] = 'A';
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 0);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    /* The same request again arrives whole. */
    send_ok(&p.client, 111, &rq.r, READ_REQ);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);
    expect_message(&p.server.msgs[0], 111, &rq.r, READ_REQ);
    big_req_free(&rq);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ tokens */

static void token_configs(uas_channel_config *c, uas_channel_config *s, uint32_t requested)
{
    pipe_config(c, UAS_CHANNEL_CLIENT);
    pipe_config(s, UAS_CHANNEL_SERVER);
    c->requested_lifetime_ms = requested;
    s->min_lifetime_ms = 10000;
    s->max_lifetime_ms = 60000;
}

static uint32_t send_small_request(pipe *p)
{
    big_req rq;
    big_req_make(&rq, 1, 0, 1);
    uint32_t id = uas_channel_next_request_id(p->client.ch);
    send_ok(&p->client, id, &rq.r, READ_REQ);
    big_req_free(&rq);
    return id;
}

static void send_small_response(pipe *p, uint32_t id)
{
    big_resp rs;
    big_resp_make(&rs, 1, 3, 1);
    send_ok(&p->server, id, &rs.r, READ_RESP);
    big_resp_free(&rs);
}

Test(token, client_renews_at_75_percent_and_server_switches_token_only_when_client_does)
{
    uas_channel_config c, s;
    token_configs(&c, &s, 40000);
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    pipe_open(&p);
    cr_assert_eq(uas_channel_tick(p.client.ch, t0), t0 + 30000, "renewal due at 75 %%");
    cr_assert_eq(uas_channel_tick(p.server.ch, t0), t0 + 50000, "expiry at lifetime + 25 %%");

    /* R1 goes out on token 1. */
    uint32_t r1 = send_small_request(&p);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);

    p.now_ms = t0 + 29999;
    cr_assert_eq(uas_channel_tick(p.client.ch, p.now_ms), t0 + 30000);
    cr_assert_eq(p.client.out_count, 0, "renewed early");
    p.now_ms = t0 + 30000;
    (void)uas_channel_tick(p.client.ch, p.now_ms);
    cr_assert_eq(p.client.out_count, 1, "no renewal at 75 %% of the lifetime");
    pipe_chunk opn = parse_buf(p.client.out_head);
    cr_assert_str_eq(opn.type, "OPN");
    cr_assert_eq(opn.channel_id, 7, "a Renew names the channel");
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_open_secure_channel_request oreq;
    decode_body(opn.body, opn.body_len, UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST), &oreq, &a);
    cr_assert_eq(oreq.request_type, UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW);
    cr_assert_eq(uas_channel_get_token_id(p.client.ch), 1, "client switched before the answer");

    /* R2 is sent before the renewal is delivered: still token 1. */
    uint32_t r2 = send_small_request(&p);
    cr_assert_eq(parse_buf(p.client.out_tail).token_id, 1);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 2, "server issued token 2");
    cr_assert_eq(p.server.nmsgs, 2, "R2 on the old token was accepted");
    pipe_chunk opr = parse_buf(p.server.out_head);
    cr_assert_str_eq(opr.type, "OPN");
    uas_open_secure_channel_response oresp;
    decode_body(opr.body, opr.body_len, UAS_TYPE(OPEN_SECURE_CHANNEL_RESPONSE), &oresp, &a);
    cr_assert_eq(oresp.security_token.token_id, 2);
    cr_assert_eq(oresp.security_token.channel_id, 7);
    cr_assert_eq(oresp.security_token.revised_lifetime, 40000);
    uas_arena_free(&a);

    /* The server answers R1 and R2 still on token 1 (Part 4, 5.5.2). */
    send_small_response(&p, r1);
    send_small_response(&p, r2);
    cr_assert_eq(parse_buf(pipe_peek(&p.server, 1)).token_id, 1);
    cr_assert_eq(parse_buf(pipe_peek(&p.server, 2)).token_id, 1);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(uas_channel_get_token_id(p.client.ch), 2);
    cr_assert_eq(p.client.nmsgs, 2, "client accepts the old token after renewing");
    cr_assert_leq(uas_channel_tick(p.client.ch, p.now_ms), p.now_ms + 30000,
                  "next renewal not scheduled");

    /* R3 uses token 2; from then on the server does too. */
    uint32_t r3 = send_small_request(&p);
    cr_assert_eq(parse_buf(p.client.out_tail).token_id, 2);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 3);
    send_small_response(&p, r3);
    cr_assert_eq(parse_buf(p.server.out_tail).token_id, 2);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 3);

    /* The renewal moved the server's expiry: lifetime + 25 % from renewal. */
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 50000), t0 + 30000 + 50000);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);

    /* Token 1 is gone now. */
    (void)send_small_request(&p);
    pipe_set_u32(p.client.out_tail->data + 12, 1);
    uas_status st = pipe_transmit(&p, &p.client);
    expect_server_failed(&p, st, UAS_BAD_SECURE_CHANNEL_TOKEN_UNKNOWN);
    pipe_fini(&p);
}

Test(token, server_closes_channel_when_token_expires_without_renewal)
{
    uas_channel_config c, s;
    token_configs(&c, &s, 40000);
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    pipe_open(&p);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 49999), t0 + 50000);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(p.server.out_count, 0);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 50000), INT64_MAX);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    uas_status why = p.server.reasons[p.server.nstates - 1];
    cr_assert(uas_is_bad(why));
    cr_assert_eq(pipe_err_code(&p.server), why, "ERR tells the client why");
    expect_client_told(&p, why);
    pipe_fini(&p);
}

Test(token, server_accepts_old_token_until_it_expires_then_refuses_it)
{
    uas_channel_config c, s;
    token_configs(&c, &s, 40000);
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    pipe_open(&p);
    p.now_ms = t0 + 30000;
    (void)uas_channel_tick(p.client.ch, p.now_ms);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD); /* renewal to the server */
    pipe_discard(&p, &p.server); /* its answer is lost: the client stays on token 1 */
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 2);

    p.now_ms = t0 + 49999;
    cr_assert_eq(uas_channel_tick(p.server.ch, p.now_ms), t0 + 50000, "old token's end");
    (void)send_small_request(&p);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(p.server.nmsgs, 1);

    p.now_ms = t0 + 50000;
    (void)uas_channel_tick(p.server.ch, p.now_ms);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN, "token 2 still valid");
    (void)send_small_request(&p);
    uas_status st = pipe_transmit(&p, &p.client);
    expect_server_failed(&p, st, UAS_BAD_SECURE_CHANNEL_TOKEN_UNKNOWN);
    pipe_fini(&p);
}

/* Revised lifetime for a requested one, read from the wire and from the
 * client's renewal schedule. */
static uint32_t revised_for(uint32_t requested)
{
    uas_channel_config c, s;
    token_configs(&c, &s, requested);
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);
    pipe_chunk opr = parse_buf(p.server.out_head);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_open_secure_channel_response oresp;
    decode_body(opr.body, opr.body_len, UAS_TYPE(OPEN_SECURE_CHANNEL_RESPONSE), &oresp, &a);
    uint32_t revised = oresp.security_token.revised_lifetime;
    uas_arena_free(&a);
    pipe_pump(&p);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(uas_channel_tick(p.client.ch, t0), t0 + (int64_t)revised * 3 / 4,
                 "client renews at 75 %% of the revised, not the requested, lifetime");
    cr_assert_eq(uas_channel_tick(p.server.ch, t0), t0 + (int64_t)revised * 5 / 4);
    pipe_fini(&p);
    return revised;
}

Test(token, revised_lifetime_is_clamped_to_server_min_and_max)
{
    cr_assert_eq(revised_for(1000), 10000);
    cr_assert_eq(revised_for(0), 10000);
    cr_assert_eq(revised_for(10000), 10000);
    cr_assert_eq(revised_for(33333), 33333);
    cr_assert_eq(revised_for(60000), 60000);
    cr_assert_eq(revised_for(3600000), 60000);
    cr_assert_eq(revised_for(UINT32_MAX), 60000);
}

/* ------------------------------------------------------------ timeouts */

Test(timeout, server_without_hel_closes_at_hello_timeout_with_err_bad_timeout)
{
    uas_channel_config s;
    pipe_config(&s, UAS_CHANNEL_SERVER);
    s.hello_timeout_ms = 5000;
    pipe p;
    pipe_init(&p, NULL, &s);
    int64_t t0 = p.now_ms;
    cr_assert_eq(uas_channel_tick(p.server.ch, t0), t0 + 5000, "tick gives the deadline");
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 4999), t0 + 5000);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_FRESH);
    cr_assert_eq(p.server.out_count, 0);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 5000), INT64_MAX);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.reasons[p.server.nstates - 1], UAS_BAD_TIMEOUT);
    cr_assert_eq(pipe_err_code(&p.server), UAS_BAD_TIMEOUT);
    cr_assert_eq(p.server.out_count, 1);
    /* A late HEL is refused. */
    uint8_t hel[128];
    size_t n = pipe_build_hel(hel, sizeof(hel), 65536, 65536, 0, 0, URL, strlen(URL));
    cr_assert_eq(feed_server(&p, hel, n), UAS_BAD_TIMEOUT);
    cr_assert_eq(p.server.out_count, 1);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 999999), INT64_MAX);
    pipe_fini(&p);
}

Test(timeout, server_with_hel_but_no_opn_closes_at_hello_timeout)
{
    uas_channel_config s;
    pipe_config(&s, UAS_CHANNEL_SERVER);
    s.hello_timeout_ms = 5000;
    pipe p;
    pipe_init(&p, NULL, &s);
    int64_t t0 = p.now_ms;
    hello_only(&p);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_ACKED);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 4999), t0 + 5000);
    (void)uas_channel_tick(p.server.ch, t0 + 5000);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(pipe_err_code(&p.server), UAS_BAD_TIMEOUT);
    expect_client_told(&p, UAS_BAD_TIMEOUT);
    pipe_fini(&p);
}

Test(timeout, opened_channel_ignores_hello_timeout_and_tick_gives_token_deadline)
{
    uas_channel_config c, s;
    token_configs(&c, &s, 40000);
    s.hello_timeout_ms = 5000;
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    pipe_open(&p);
    cr_assert_eq(uas_channel_tick(p.server.ch, t0 + 6000), t0 + 50000);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(p.server.out_count, 0);
    pipe_fini(&p);
}

Test(timeout, fresh_client_has_no_deadline)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    cr_assert_eq(uas_channel_tick(p.client.ch, p.now_ms + 1000000), INT64_MAX);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_FRESH);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ sequence numbers */

/* Sends k small requests one at a time, returning their sequence numbers as
 * seen on the wire, each delivered and answered. */
static void exchange(pipe *p, size_t k, uint32_t *req_seq, uint32_t *resp_seq)
{
    for (size_t i = 0; i < k; i++) {
        size_t before = p->server.nmsgs;
        uint32_t id = send_small_request(p);
        req_seq[i] = parse_buf(p->client.out_tail).seq;
        cr_assert_eq(pipe_transmit(p, &p->client), UAS_GOOD, "request %zu (seq %u) refused", i,
                     req_seq[i]);
        cr_assert_eq(p->server.nmsgs, before + 1);
        send_small_response(p, id);
        resp_seq[i] = parse_buf(p->server.out_tail).seq;
        cr_assert_eq(pipe_transmit(p, &p->server), UAS_GOOD, "response %zu (seq %u) refused", i,
                     resp_seq[i]);
    }
}

Test(seqnum, sender_wraps_only_after_uint32_max_minus_1024_and_receiver_accepts)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    /* Fast-forward both directions to just before the wrap. */
    uint32_t start = UINT32_MAX - 1024 - 2;
    p.client.ch->send_seq = start;
    p.server.ch->recv_seq = start - 1;
    p.server.ch->send_seq = start;
    p.client.ch->recv_seq = start - 1;
    uint32_t rq[6], rs[6];
    exchange(&p, 6, rq, rs);
    uint32_t *dirs[2] = {rq, rs};
    for (int d = 0; d < 2; d++) {
        uint32_t *q = dirs[d];
        /* 4294966269, 4294966270, 4294966271 (= UINT32_MAX - 1024, not yet
         * allowed to wrap), 4294966272 (> UINT32_MAX - 1024), then < 1024. */
        cr_assert_eq(q[0], start, "dir %d", d);
        cr_assert_eq(q[1], start + 1, "dir %d", d);
        cr_assert_eq(q[2], UINT32_MAX - 1024, "dir %d", d);
        cr_assert_eq(q[3], UINT32_MAX - 1023, "dir %d: wrapped at or before UINT32_MAX - 1024", d);
        cr_assert_lt(q[4], 1024, "dir %d: no wrap after %u", d, q[3]);
        cr_assert_eq(q[5], q[4] + 1, "dir %d", d);
    }
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    pipe_fini(&p);
}

Test(seqnum, receiver_refuses_wrap_before_uint32_max_minus_1024)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    p.client.ch->send_seq = 100000;
    p.server.ch->recv_seq = 99999;
    uint32_t rq[1], rs[1];
    exchange(&p, 1, rq, rs);
    p.client.ch->send_seq = 5; /* an early "wrap" */
    (void)send_small_request(&p);
    uas_status st = pipe_transmit(&p, &p.client);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_CHECKS_FAILED);
    pipe_fini(&p);
}

/* ------------------------------------------------------------ close */

Test(close, clo_from_client_closes_server_with_good_reason_and_no_err)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    p.split = PIPE_BYTES;
    pipe_open(&p);
    uas_channel_close(p.client.ch, UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.client.reasons[p.client.nstates - 1], UAS_GOOD);
    cr_assert_eq(p.client.out_count, 1);
    pipe_chunk clo = parse_buf(p.client.out_head);
    cr_assert_str_eq(clo.type, "CLO");
    cr_assert_eq(clo.chunk_type, 'F');
    cr_assert_eq(clo.channel_id, 7);
    cr_assert_eq(clo.token_id, 1);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_close_secure_channel_request creq;
    decode_body(clo.body, clo.body_len, UAS_TYPE(CLOSE_SECURE_CHANNEL_REQUEST), &creq, &a);
    uas_arena_free(&a);

    uas_status st = pipe_transmit(&p, &p.client);
    cr_assert_eq(st, UAS_BAD_SECURE_CHANNEL_CLOSED, "recv tells the owner to close: 0x%08x", st);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.states[p.server.nstates - 1], UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.reasons[p.server.nstates - 1], UAS_GOOD, "orderly close");
    cr_assert_eq(p.server.out_count, 0, "no ERR after an orderly close");
    cr_assert_eq(p.server.nmsgs, 0, "CLO is not a message for the application");

    big_resp rs;
    big_resp_make(&rs, 1, 1, 1);
    cr_assert_eq(uas_channel_send(p.server.ch, 1, &rs.r, READ_RESP), UAS_BAD_SECURE_CHANNEL_CLOSED);
    cr_assert_eq(uas_channel_send(p.client.ch, 1, &rs.r, READ_RESP), UAS_BAD_SECURE_CHANNEL_CLOSED);
    big_resp_free(&rs);
    uas_channel_close(p.client.ch, UAS_GOOD); /* idempotent */
    cr_assert_eq(p.client.out_count, 0);
    cr_assert_eq(p.client.nstates, 4);
    pipe_fini(&p);
}

Test(close, server_close_with_bad_reason_sends_err_and_client_closes_with_it)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    uas_channel_close(p.server.ch, UAS_BAD_SHUTDOWN);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.reasons[p.server.nstates - 1], UAS_BAD_SHUTDOWN);
    cr_assert_eq(p.server.out_count, 1);
    cr_assert_eq(pipe_err_code(&p.server), UAS_BAD_SHUTDOWN);
    expect_client_told(&p, UAS_BAD_SHUTDOWN);
    cr_assert_eq(p.client.out_count, 0, "a client does not answer ERR");
    uas_channel_close(p.server.ch, UAS_BAD_SHUTDOWN);
    cr_assert_eq(p.server.out_count, 0, "second close sends nothing");
    pipe_fini(&p);
}

Test(close, server_close_with_good_reason_sends_nothing)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    uas_channel_close(p.server.ch, UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.out_count, 0);
    pipe_fini(&p);
}

Test(close, client_close_before_open_sends_no_clo)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    pipe_discard(&p, &p.client);
    uas_channel_close(p.client.ch, UAS_GOOD);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.client.out_count, 0);
    pipe_fini(&p);
}

Test(close, transport_refusing_output_closes_the_channel)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    p.server.send_status = UAS_BAD_TCP_NOT_ENOUGH_RESOURCES;
    big_resp rs;
    big_resp_make(&rs, 1, 1, 1);
    cr_assert_eq(uas_channel_send(p.server.ch, 1, &rs.r, READ_RESP),
                 UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.reasons[p.server.nstates - 1], UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(close, deleting_channels_mid_message_returns_every_buffer_to_the_pool)
{
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    big_req rq;
    big_req_make(&rq, 200, 150, 1);
    send_ok(&p.client, 5, &rq.r, READ_REQ);
    /* Deliver the first chunk and a half: the server holds an assembly and
     * a partial chunk when it is deleted. */
    uas_buf *b1 = pipe_take(&p.client), *b2 = pipe_take(&p.client);
    cr_assert_eq(pipe_feed(&p, &p.server, b1->data, b1->len), UAS_GOOD);
    cr_assert_eq(pipe_feed(&p, &p.server, b2->data, b2->len / 2), UAS_GOOD);
    uas_buf_put(p.pool, b1);
    uas_buf_put(p.pool, b2);
    big_req_free(&rq);
    pipe_fini(&p); /* asserts live == 0 */
}

Test(close, transport_refusing_a_chunk_mid_message_with_any_bad_status_closes_the_channel)
{
    /* channel.h: "A Bad status (e.g. the output queue is over its limit)
     * closes the channel." Once a chunk of a message is lost the stream
     * cannot go on, whatever the transport's code. */
    uas_channel_config c, s;
    small_buffers(&c, &s);
    pipe p;
    pipe_init(&p, &c, &s);
    pipe_open(&p);
    p.server.send_status = UAS_BAD_COMMUNICATION_ERROR;
    big_resp rs;
    big_resp_make(&rs, 100, 200, 1); /* several chunks */
    cr_assert_eq(uas_channel_send(p.server.ch, 1, &rs.r, READ_RESP), UAS_BAD_COMMUNICATION_ERROR);
    cr_assert_eq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(p.server.reasons[p.server.nstates - 1], UAS_BAD_COMMUNICATION_ERROR);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(token, client_accepts_old_token_from_server_until_it_expires_after_renewing)
{
    /* Part 4, 5.6.2.1: a server secures its output with the old token until
     * that token expires or the client uses the new one, and clients should
     * accept an expired token for up to 25 % of its lifetime more. So an
     * answer on token 1 shortly before token 1's end is legitimate. */
    uas_channel_config c, s;
    token_configs(&c, &s, 60000);
    pipe p;
    pipe_init(&p, &c, &s);
    int64_t t0 = p.now_ms;
    pipe_open(&p);
    uint32_t r1 = send_small_request(&p); /* e.g. a Publish the server holds */
    cr_assert_eq(pipe_transmit(&p, &p.client), UAS_GOOD);

    p.now_ms = t0 + 45000; /* renewal at 75 % */
    (void)uas_channel_tick(p.client.ch, p.now_ms);
    pipe_pump(&p);
    cr_assert_eq(uas_channel_get_token_id(p.client.ch), 2);
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 2);

    /* The client stays quiet, so the server still answers on token 1,
     * 14 s after the renewal, 1 s before token 1's lifetime ends. */
    p.now_ms = t0 + 59000;
    cr_assert_gt(uas_channel_tick(p.server.ch, p.now_ms), p.now_ms);
    (void)uas_channel_tick(p.client.ch, p.now_ms);
    send_small_response(&p, r1);
    cr_assert_eq(parse_buf(p.server.out_tail).token_id, 1);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD, "client refused token 1 before its end");
    cr_assert_eq(p.client.nmsgs, 1);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    pipe_fini(&p);
}

Test(limits, response_over_client_max_message_size_from_a_server_ignoring_it_is_refused)
{
    /* The server is told "no limit" (HEL patched on the way), so only the
     * client's receive side stands between it and a too large response. */
    uas_channel_config c, s;
    small_buffers(&c, &s);
    c.max_message_size = 40000;
    pipe p;
    pipe_init(&p, &c, &s);
    cr_assert_eq(uas_channel_connect(p.client.ch, URL, p.now_ms), UAS_GOOD);
    pipe_set_u32(p.client.out_head->data + 8 + 12, 0);
    pipe_pump(&p);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    big_resp rs;
    resp_of_size(&rs, 60000);
    send_ok(&p.server, 120, &rs.r, READ_RESP);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 0);
    cr_assert_eq(p.client.nerrs, 1);
    cr_assert_eq(p.client.errs[0].request_id, 120);
    cr_assert_eq(p.client.errs[0].status, UAS_BAD_RESPONSE_TOO_LARGE);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_OPEN);
    big_resp_free(&rs);
    resp_of_size(&rs, 20000);
    send_ok(&p.server, 121, &rs.r, READ_RESP);
    cr_assert_eq(pipe_transmit(&p, &p.server), UAS_GOOD);
    cr_assert_eq(p.client.nmsgs, 1);
    expect_message(&p.client.msgs[0], 121, &rs.r, READ_RESP);
    big_resp_free(&rs);
    pipe_fini(&p);
}

Test(bad_input, renew_naming_another_channel_is_refused_secure_channel_unknown)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    uas_open_secure_channel_request r;
    opn_request(&r, UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW, UAS_MESSAGE_SECURITY_MODE_NONE);
    uint8_t buf[512];
    size_t n = pipe_build_opn(buf, sizeof(buf), 8, NONE_URI, p.server.ch->recv_seq + 1, 50, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN);
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 1, "no token issued");
    pipe_fini(&p);
}
