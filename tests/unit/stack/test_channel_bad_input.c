/* Hostile MSG chunks on an open secure channel (channel.c): a real request
 * taken off the wire and mutated (wrong channel or token id, truncated
 * inside its headers, unknown chunk or message type), lost or replayed
 * (sequence number gap, replay), each refusing fatally with the code the
 * peer is told; and a client given garbage, which closes without an ERR.
 * Driven through the in-memory wire of helper_pipe with the checks of
 * helper_channel.
 *
 * Spec references are OPC UA Part 6 (7.1.5 errors, 6.7 secure
 * conversation). */

#include <criterion/criterion.h>

#include <string.h>

#include "helper_channel.h"

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
