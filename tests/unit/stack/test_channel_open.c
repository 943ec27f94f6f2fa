/* OpenSecureChannel in the secure channel core (channel.c): the whole
 * HEL -> ACK -> OPN handshake as both sides and the wire see it, which
 * message is legal in which state (no send before OPEN, MSG before OPN
 * refused, Renew before Issue or naming another channel refused), and
 * crafted OPN chunks with an unknown policy, a mode other than None, an
 * asymmetric header past the chunk's end or an undecodable body. Driven
 * through the in-memory wire of helper_pipe with the checks of
 * helper_channel.
 *
 * Spec references are OPC UA Part 6 (7.1 opc.tcp, 6.7 secure conversation)
 * and Part 4, 5.5.2 (OpenSecureChannel). */

#include <criterion/criterion.h>

#include <string.h>

#include "channel_internal.h"
#include "helper_channel.h"

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

/* ------------------------------------------------------------ bad input */

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

/* A crafted OPN chunk (not one the client would send) of the given request
 * type and mode under policy_uri, as channel channel_id with sequence
 * number seq and request id req; returns its length in buf. */
static size_t crafted_opn(uint8_t *buf, size_t cap, int32_t type, int32_t mode,
                          const char *policy_uri, uint32_t channel_id, uint32_t seq, uint32_t req)
{
    uas_open_secure_channel_request r;
    memset(&r, 0, sizeof(r));
    r.request_header.timestamp = T_REQ;
    r.request_type = type;
    r.security_mode = mode;
    r.requested_lifetime = 600000;
    size_t n = pipe_build_opn(buf, cap, channel_id, policy_uri, seq, req, &r,
                              UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    cr_assert_gt(n, 0, "crafted OPN does not fit");
    return n;
}

/* The first OPN of a fresh channel: Issue, channel 0, sequence 1. */
static size_t first_opn(uint8_t *buf, size_t cap, int32_t type, int32_t mode,
                        const char *policy_uri)
{
    return crafted_opn(buf, cap, type, mode, policy_uri, 0, 1, 1);
}

Test(bad_input, opn_with_unknown_security_policy_is_refused_policy_rejected)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uint8_t buf[512];
    size_t n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE,
                         UAS_MESSAGE_SECURITY_MODE_NONE,
                         "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_SECURITY_POLICY_REJECTED);
    pipe_fini(&p);

    /* A URI that only starts like None's is not None. */
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE,
                  UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI "x");
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
        uint8_t buf[512];
        size_t n =
            first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, modes[i], NONE_URI);
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
    uint8_t buf[512];
    size_t n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE,
                         UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI);
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
    uint8_t buf[512];
    size_t n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW,
                         UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI);
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_REQUEST_TYPE_INVALID);
    pipe_fini(&p);
}

Test(bad_input, opn_with_asymmetric_header_running_past_the_chunk_is_refused)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    hello_only(&p);
    uint8_t buf[512];
    size_t n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE,
                         UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI);
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
    uint8_t buf[512];
    size_t n = first_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE,
                         UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI);
    n -= 6; /* cut the body short */
    pipe_set_u32(buf + 4, (uint32_t)n);
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_DECODING_ERROR);
    cr_assert_neq(uas_channel_get_state(p.server.ch), UAS_CHANNEL_OPEN);
    pipe_fini(&p);
}

Test(bad_input, renew_naming_another_channel_is_refused_secure_channel_unknown)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    pipe_open(&p);
    uint8_t buf[512];
    size_t n =
        crafted_opn(buf, sizeof(buf), UAS_SECURITY_TOKEN_REQUEST_TYPE_RENEW,
                    UAS_MESSAGE_SECURITY_MODE_NONE, NONE_URI, 8, p.server.ch->recv_seq + 1, 50);
    uas_status st = feed_server(&p, buf, n);
    expect_server_failed(&p, st, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN);
    cr_assert_eq(uas_channel_get_token_id(p.server.ch), 1, "no token issued");
    pipe_fini(&p);
}
