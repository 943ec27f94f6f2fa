/* Messages of the secure channel core (channel.c, channel_send.c) on an
 * open channel: Read requests and responses arriving equal whether the
 * bytes come whole, one at a time or in random pieces, many requests in
 * flight answered from inside on_message, large messages cut into MSG
 * chunks (C...C F) and reassembled, a message exactly filling one chunk,
 * abort chunks discarding a partial message, and chunks of two messages
 * interleaved refused. Driven through the in-memory wire of helper_pipe
 * with the checks of helper_channel.
 *
 * Spec references are OPC UA Part 6, 6.7 (secure conversation). */

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "helper_channel.h"

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

/* ------------------------------------------------------------ bad input */

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
