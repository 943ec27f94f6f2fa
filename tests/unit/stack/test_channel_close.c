/* Closing a secure channel (channel.c, channel_send.c): CLO from the client
 * (an orderly close, no ERR), a server close with a Bad reason (ERR, the
 * client closes with it) or a Good one (nothing sent), a client closing
 * before OPEN, a transport refusing output, and channels deleted in the
 * middle of a message returning every buffer to the pool. Driven through
 * the in-memory wire of helper_pipe with the checks of helper_channel.
 *
 * Spec references are OPC UA Part 6 (7.1.5 errors, 6.7 secure
 * conversation). */

#include <criterion/criterion.h>

#include "helper_channel.h"

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
