/* What a misbehaving or hostile peer sends, over real sockets: bytes that
 * are not opc.tcp, chunk headers that lie, messages out of order, requests
 * without or with someone else's session, and a flood of connections that
 * never say hello. Each must get the answer Part 6 prescribes (ERR and
 * close, or a ServiceFault on a channel that stays usable), and the server
 * must go on serving a normal client afterwards (env_stop checks). */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ua/channel.h>
#include <ua/codec.h>
#include <ua/nodeids.h>

#include "helper_env.h"

enum { ATTR_VALUE = 13 };

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void start(env *e, unsigned threads)
{
    env_options o = {.threads = threads};
    env_start(e, &o);
}

/* HEL, then the ACK it earns. */
static void hello(env *e, int fd)
{
    uint8_t hel[256];
    raw_send(fd, hel, raw_build_hel(e, hel, sizeof(hel)));
    uint8_t ack[256];
    long n = raw_read_chunk(fd, ack, sizeof(ack));
    cr_assert_eq(n, 28, "ACK expected, got %ld bytes", n);
    cr_assert(memcmp(ack, "ACKF", 4) == 0);
}

/* ---- opc.tcp framing ---- */

Test(bad_input, garbage_instead_of_hel_gets_err_message_type_invalid_and_close)
{
    env e;
    start(&e, 1);
    int fd = raw_connect(&e);
    raw_send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    env_stop(&e);
}

Test(bad_input, hel_claiming_a_huge_size_gets_err_message_too_large_and_close)
{
    env e;
    start(&e, 2);
    int fd = raw_connect(&e);
    uint8_t hel[256];
    size_t n = raw_build_hel(&e, hel, sizeof(hel));
    put_u32(hel + 4, 0x7FFFFFF0u); /* the server must not wait for 2 GiB */
    raw_send(fd, hel, n);
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    env_stop(&e);
}

Test(bad_input, hel_claiming_fewer_bytes_than_its_fields_gets_err_and_close)
{
    env e;
    start(&e, 1);
    int fd = raw_connect(&e);
    uint8_t hel[256];
    size_t n = raw_build_hel(&e, hel, sizeof(hel));
    put_u32(hel + 4, 20); /* header + 12 bytes: the fields do not fit */
    raw_send(fd, hel, n);
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    env_stop(&e);
}

Test(bad_input, truncated_hel_then_close_leaves_the_server_serving)
{
    env e;
    start(&e, 1);
    for (int i = 0; i < 20; i++) {
        int fd = raw_connect(&e);
        uint8_t hel[256];
        size_t n = raw_build_hel(&e, hel, sizeof(hel));
        raw_send(fd, hel, (size_t)(i % 2 ? 5 : n - 3)); /* in the header, in the body */
        close(fd);
    }
    env_check_alive(&e);
    env_stop(&e);
}

Test(bad_input, unknown_message_type_gets_err_message_type_invalid)
{
    env e;
    start(&e, 1);
    int fd = raw_connect(&e);
    uint8_t msg[16] = {'X', 'Y', 'Z', 'F'};
    put_u32(msg + 4, sizeof(msg));
    raw_send(fd, msg, sizeof(msg));
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    /* Also after a good HEL. */
    fd = raw_connect(&e);
    hello(&e, fd);
    raw_send(fd, msg, sizeof(msg));
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    env_stop(&e);
}

Test(bad_input, msg_before_opn_gets_err_and_close)
{
    env e;
    start(&e, 1);
    int fd = raw_connect(&e);
    hello(&e, fd);
    uint8_t msg[32] = {'M', 'S', 'G', 'F'};
    put_u32(msg + 4, sizeof(msg));
    put_u32(msg + 8, 1);  /* a channel id nobody issued */
    put_u32(msg + 12, 1); /* token */
    put_u32(msg + 16, 1); /* sequence number */
    put_u32(msg + 20, 1); /* request id */
    raw_send(fd, msg, sizeof(msg));
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    /* Straight after connecting, without HEL, too. */
    fd = raw_connect(&e);
    raw_send(fd, msg, sizeof(msg));
    raw_expect_err(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
    env_stop(&e);
}

/* ---- a secure channel over a blocking socket, without libuaclient: the
 * I/O-free uas_channel core moves the bytes, so any request can be sent,
 * session or not ---- */

typedef struct rawch {
    int fd;
    uas_bufpool *pool;
    uas_channel *ch;
    uint8_t *msg; /* the last message body (malloc) */
    size_t msg_len;
    bool got;
} rawch;

static uas_status rc_send(void *ud, uas_buf *b)
{
    rawch *r = ud;
    raw_send(r->fd, b->data, b->len);
    uas_buf_put(r->pool, b);
    return UAS_GOOD;
}

static void rc_on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)request_id;
    rawch *r = ud;
    free(r->msg);
    r->msg = malloc(len);
    cr_assert(r->msg);
    memcpy(r->msg, body, len);
    r->msg_len = len;
    r->got = true;
}

/* Feeds what the socket delivers into the channel until *flag or EOF. */
static void rc_pump(rawch *r, const bool *flag)
{
    uint8_t buf[65536];
    while (!*flag) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), 0);
        cr_assert(n > 0, "connection closed or timed out while waiting");
        cr_assert_eq(uas_channel_recv(r->ch, buf, (size_t)n, uas_monotonic_ms()), UAS_GOOD);
    }
}

static void rc_open(env *e, rawch *r)
{
    memset(r, 0, sizeof(*r));
    r->fd = raw_connect(e);
    r->pool = uas_bufpool_new(1u << 20);
    cr_assert(r->pool);
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_CLIENT);
    uas_channel_callbacks cb = {rc_send, rc_on_message, NULL, NULL, NULL};
    r->ch = uas_channel_new(&cfg, &cb, r, r->pool, uas_monotonic_ms());
    cr_assert(r->ch);
    cr_assert_eq(uas_channel_connect(r->ch, e->url, uas_monotonic_ms()), UAS_GOOD);
    uint8_t buf[65536];
    while (uas_channel_get_state(r->ch) != UAS_CHANNEL_OPEN) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), 0);
        cr_assert(n > 0, "no channel");
        cr_assert_eq(uas_channel_recv(r->ch, buf, (size_t)n, uas_monotonic_ms()), UAS_GOOD);
    }
}

static void rc_close(rawch *r)
{
    uas_channel_close(r->ch, UAS_GOOD);
    uas_channel_delete(r->ch);
    close(r->fd);
    uas_bufpool_delete(r->pool);
    free(r->msg);
}

/* Sends msg, waits for the answer; returns its service result and the type
 * of the answer. */
static uas_status rc_request(rawch *r, const void *msg, const uas_type *t, const uas_type **answer)
{
    r->got = false;
    cr_assert_eq(uas_channel_send(r->ch, uas_channel_next_request_id(r->ch), msg, t), UAS_GOOD);
    rc_pump(r, &r->got);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_decoder d;
    uas_decoder_init(&d, r->msg, r->msg_len, &a, NULL);
    uas_nodeid id;
    cr_assert_eq(uas_decode(&d, &id, UAS_TYPE(NODE_ID)), UAS_GOOD);
    *answer = uas_type_by_encoding_id(id.id.numeric);
    cr_assert(*answer);
    void *resp = uas_arena_alloc(&a, (*answer)->size);
    cr_assert_eq(uas_decode(&d, resp, *answer), UAS_GOOD);
    uas_status st = ((uas_response_header *)resp)->service_result;
    uas_arena_free(&a);
    return st;
}

static void read_req(uas_read_request *req, uas_read_value_id *rv, uint32_t node)
{
    memset(rv, 0, sizeof(*rv));
    rv->node_id = uas_nodeid_numeric(1, node);
    rv->attribute_id = ATTR_VALUE;
    memset(req, 0, sizeof(*req));
    req->nodes_to_read_count = 1;
    req->nodes_to_read = rv;
}

Test(bad_input, read_without_session_gets_fault_session_id_invalid_and_channel_stays)
{
    env e;
    start(&e, 1);
    rawch r;
    rc_open(&e, &r);
    uas_read_request req;
    uas_read_value_id rv;
    read_req(&req, &rv, 1001);
    const uas_type *t = NULL;
    cr_expect_eq(rc_request(&r, &req, UAS_TYPE(READ_REQUEST), &t), UAS_BAD_SESSION_ID_INVALID);
    cr_expect_eq(t, UAS_TYPE(SERVICE_FAULT));
    /* A message that is no service request: BadServiceUnsupported. */
    uas_read_response not_a_request;
    memset(&not_a_request, 0, sizeof(not_a_request));
    cr_expect_eq(rc_request(&r, &not_a_request, UAS_TYPE(READ_RESPONSE), &t),
                 UAS_BAD_SERVICE_UNSUPPORTED);
    cr_expect_eq(t, UAS_TYPE(SERVICE_FAULT));
    /* The channel still serves session-less services. */
    uas_get_endpoints_request ge;
    memset(&ge, 0, sizeof(ge));
    cr_expect_eq(rc_request(&r, &ge, UAS_TYPE(GET_ENDPOINTS_REQUEST), &t), UAS_GOOD);
    cr_expect_eq(t, UAS_TYPE(GET_ENDPOINTS_RESPONSE));
    rc_close(&r);
    env_stop(&e);
}

/* ---- sessions used wrongly, through libuaclient ---- */

typedef struct answer {
    bool done;
    uas_status status;
} answer;

static void on_answer(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    (void)resp;
    (void)t;
    answer *a = ud;
    a->done = true;
    a->status = st;
}

/* Read ns=1;i=1001 with the given token (NULL: the client's own). */
static uas_status read_with(env *e, uas_client *c, const uas_nodeid *token)
{
    uas_read_request req;
    uas_read_value_id rv;
    read_req(&req, &rv, 1001);
    if (token)
        req.request_header.authentication_token = *token;
    answer a = {false, UAS_GOOD};
    uas_status st = uas_client_request(c, &req, UAS_TYPE(READ_REQUEST), on_answer, &a);
    if (st != UAS_GOOD)
        return st;
    cr_assert(env_run_until(e, &a.done, ENV_WAIT_MS));
    return a.status;
}

Test(bad_input, wrong_authentication_token_gets_bad_session_id_invalid)
{
    env e;
    start(&e, 2);
    uas_client *c = env_client(&e, true, 0);
    uas_nodeid forged;
    memset(&forged, 0, sizeof(forged));
    forged.kind = UAS_NODEID_GUID;
    uas_random_bytes(&forged.id.guid, sizeof(forged.id.guid));
    cr_expect_eq(read_with(&e, c, &forged), UAS_BAD_SESSION_ID_INVALID);
    uas_nodeid numeric = uas_nodeid_numeric(0, 12345);
    cr_expect_eq(read_with(&e, c, &numeric), UAS_BAD_SESSION_ID_INVALID);
    /* The real session is unharmed. */
    cr_expect_eq(read_with(&e, c, NULL), UAS_GOOD);
    env_client_close(c);
    env_stop(&e);
}

typedef struct activation {
    bool done;
    uas_status status;
} activation;

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)c;
    (void)resp;
    (void)t;
    activation *a = ud;
    a->done = true;
    a->status = st;
}

static void session_stays_on_its_channel(unsigned threads)
{
    env e;
    start(&e, threads);
    uas_client *a = env_client(&e, true, 0);
    uas_client *b = env_client(&e, false, 0);
    uas_nodeid token;
    cr_assert_eq(uas_copy(uas_client_auth_token(a), &token, UAS_TYPE(NODE_ID)), UAS_GOOD);
    /* The session is bound to a's channel: b may not use it... */
    cr_expect_eq(read_with(&e, b, &token), UAS_BAD_SECURE_CHANNEL_ID_INVALID);
    cr_expect_eq(read_with(&e, a, NULL), UAS_GOOD);
    /* A token nobody issued cannot be taken over. */
    uas_nodeid forged;
    memset(&forged, 0, sizeof(forged));
    forged.kind = UAS_NODEID_GUID;
    uas_random_bytes(&forged.id.guid, sizeof(forged.id.guid));
    activation act = {false, UAS_GOOD};
    cr_assert_eq(uas_client_activate_session(b, &forged, on_activated, &act), UAS_GOOD);
    cr_assert(env_run_until(&e, &act.done, ENV_WAIT_MS));
    cr_expect_eq(act.status, UAS_BAD_SESSION_ID_INVALID, "%s", uas_status_name(act.status));
    cr_expect_eq(uas_client_get_state(b), UAS_CLIENT_CHANNEL_OPEN);
    /* ...nor take it over by activating it anonymously on its own channel:
     * an anonymous session of a None channel proves nothing and does not
     * move (issue #18, 7; a user name session moves with its password, see
     * test_session_security.c). */
    act.done = false;
    cr_assert_eq(uas_client_activate_session(b, &token, on_activated, &act), UAS_GOOD);
    cr_assert(env_run_until(&e, &act.done, ENV_WAIT_MS));
    cr_expect_eq(act.status, UAS_BAD_USER_ACCESS_DENIED, "%s", uas_status_name(act.status));
    cr_expect_eq(uas_client_get_state(b), UAS_CLIENT_CHANNEL_OPEN);
    cr_expect_eq(read_with(&e, b, &token), UAS_BAD_SECURE_CHANNEL_ID_INVALID);
    /* The owner keeps its session, and b its channel. */
    cr_expect_eq(read_with(&e, a, NULL), UAS_GOOD);
    cr_expect_eq(env_read_i32(a, 1001), 0);
    uas_clear(&token, UAS_TYPE(NODE_ID));
    env_client_close(a); /* closes the session */
    env_client_close(b);
    env_stop(&e);
}

Test(bad_input, session_on_another_channel_is_not_taken_over_one_loop)
{
    session_stays_on_its_channel(1);
}

Test(bad_input, session_on_another_channel_is_not_taken_over_two_loops)
{
    session_stays_on_its_channel(2);
}

/* ---- connections that never speak ---- */

enum { FLOOD = 200, HELLO_TIMEOUT_MS = 500 };

Test(bad_input, half_open_flood_does_not_stop_clients_and_is_closed_after_hello_timeout,
     .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .hello_timeout_ms = HELLO_TIMEOUT_MS};
    env_start(&e, &o);
    static int fds[FLOOD];
    int64_t t0 = uas_monotonic_ms();
    for (int i = 0; i < FLOOD; i++)
        fds[i] = raw_connect(&e);
    /* One of them starts a HEL and stops halfway: the same timeout. */
    uint8_t hel[256];
    size_t n = raw_build_hel(&e, hel, sizeof(hel));
    raw_send(fds[0], hel, n / 2);
    /* A normal client works meanwhile, well within the timeout. */
    uas_client *c = env_client(&e, true, 0);
    cr_expect_eq(env_read_i32(c, 1010), 9);
    cr_expect_lt(uas_monotonic_ms() - t0, HELLO_TIMEOUT_MS, "the client was held up");
    /* Every silent connection gets ERR BadTimeout and is closed, not
     * before the timeout. */
    int closed = 0;
    int64_t first_close = 0;
    static bool done[FLOOD];
    memset(done, 0, sizeof(done));
    while (closed < FLOOD && uas_monotonic_ms() - t0 < 10 * HELLO_TIMEOUT_MS) {
        static struct pollfd p[FLOOD];
        for (int i = 0; i < FLOOD; i++)
            p[i] = (struct pollfd){done[i] ? -1 : fds[i], POLLIN, 0};
        if (poll(p, FLOOD, 100) <= 0)
            continue;
        for (int i = 0; i < FLOOD; i++) {
            if (done[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            uint8_t buf[512];
            long len = raw_read_chunk(fds[i], buf, sizeof(buf));
            if (len > 0) {
                cr_expect(memcmp(buf, "ERRF", 4) == 0);
                cr_expect_eq(raw_u32(buf + 8), UAS_BAD_TIMEOUT, "%s",
                             uas_status_name(raw_u32(buf + 8)));
                raw_expect_close(fds[i], ENV_WAIT_MS);
            }
            if (!first_close)
                first_close = uas_monotonic_ms() - t0;
            done[i] = true;
            closed++;
        }
    }
    cr_expect_eq(closed, FLOOD, "%d of %d half-open connections closed", closed, FLOOD);
    cr_expect_geq(first_close, HELLO_TIMEOUT_MS - 50, "closed after %lld ms",
                  (long long)first_close);
    for (int i = 0; i < FLOOD; i++)
        close(fds[i]);
    /* The client that spoke stays connected. */
    cr_expect_eq(env_read_i32(c, 1010), 9);
    env_client_close(c);
    env_stop(&e);
}
