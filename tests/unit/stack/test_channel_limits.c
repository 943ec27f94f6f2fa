/* The MaxMessageSize and MaxChunkCount of both sides in the secure channel
 * core (channel.c, channel_send.c): a request over the server's limits is
 * refused with BadRequestTooLarge while the channel stays open (also from a
 * client that ignores the ACK's limits), a client refuses to send one, a
 * response over the client's limits is cut off with an abort chunk or
 * refused on receipt, and messages of exactly the limit are delivered.
 * Driven through the in-memory wire of helper_pipe with the checks of
 * helper_channel.
 *
 * Spec references are OPC UA Part 6 (7.1.2 HEL/ACK limits, 6.7.3 abort). */

#include <criterion/criterion.h>

#include <stdlib.h>

#include "helper_channel.h"

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

/* ------------------------------------------------------------ request limits */

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

/* ------------------------------------------------------------ response limits */

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
