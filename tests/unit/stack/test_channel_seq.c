/* The secure channel core (channel.c) over time: security tokens renewed by
 * the client at 75 % of their lifetime, the server switching only when the
 * client does, old tokens accepted until they expire, revised lifetimes
 * clamped to the server's bounds, the deadlines uas_channel_tick reports,
 * and sequence numbers wrapping only after UINT32_MAX - 1024. Driven through
 * the in-memory wire of helper_pipe under a clock the test sets, with the
 * checks of helper_channel.
 *
 * Spec references are OPC UA Part 6, 6.7 (secure conversation) and Part 4,
 * 5.5.2 (OpenSecureChannel). */

#include <criterion/criterion.h>

#include "channel_internal.h"
#include "helper_channel.h"

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

/* ------------------------------------------------------------ tokens */

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

/* ------------------------------------------------------------ timeouts */

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
