/* The opc.tcp connection layer of the secure channel core (channel.c):
 * the buffer sizes HEL and ACK negotiate and how they bound every chunk,
 * what a server refuses before the channel is open (garbage instead of HEL,
 * chunk headers announcing too much or too little, HEL with small buffers,
 * an over-long or empty endpoint URL, a truncated or a second HEL), and the
 * hello timeout of a server that never gets HEL or OPN. Driven through the
 * in-memory wire of helper_pipe with the checks of helper_channel.
 *
 * Spec references are OPC UA Part 6, 7.1 (opc.tcp). */

#include <criterion/criterion.h>

#include <string.h>
#include <stdlib.h>

#include "helper_channel.h"

/* ------------------------------------------------------------ handshake */

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

/* ------------------------------------------------------------ bad input */

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

Test(timeout, fresh_client_has_no_deadline)
{
    pipe p;
    pipe_init(&p, NULL, NULL);
    cr_assert_eq(uas_channel_tick(p.client.ch, p.now_ms + 1000000), INT64_MAX);
    cr_assert_eq(uas_channel_get_state(p.client.ch), UAS_CHANNEL_FRESH);
    pipe_fini(&p);
}
