/* libuaclient without a server: argument and state checks, and a peer that
 * accepts TCP but never answers HEL (the connect deadline). */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ua/client.h>

static uas_loop *loop;

static void setup(void)
{
    loop = uas_loop_new(1u << 20);
    cr_assert(loop);
}

static void teardown(void)
{
    uas_loop_delete(loop);
}

TestSuite(client_api, .init = setup, .fini = teardown);

static uas_client *make(const char *url, uint32_t timeout_ms)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = url;
    cfg.request_timeout_ms = timeout_ms;
    return uas_client_new(loop, &cfg, NULL, NULL);
}

static void never(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    (void)ud;
    (void)st;
    (void)resp;
    (void)t;
    cr_assert_fail("a refused request must not be answered");
}

Test(client_api, new_needs_a_url_and_a_positive_max_inflight)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cr_expect_null(uas_client_new(loop, &cfg, NULL, NULL));
    cfg.endpoint_url = "opc.tcp://127.0.0.1:4840";
    cfg.max_inflight = 0;
    cr_expect_null(uas_client_new(loop, &cfg, NULL, NULL));
    cfg.max_inflight = 1u << 30; /* clamped, not refused */
    uas_client *c = uas_client_new(loop, &cfg, NULL, NULL);
    cr_expect_not_null(c);
    uas_client_delete(c);
}

Test(client_api, requests_before_connect_are_refused_and_never_answered)
{
    uas_client *c = make("opc.tcp://127.0.0.1:4840", 1000);
    cr_assert(c);
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_DISCONNECTED);
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    cr_expect_eq(uas_client_request(c, &req, UAS_TYPE(READ_REQUEST), never, NULL),
                 UAS_BAD_INVALID_STATE);
    uas_get_endpoints_request ge;
    memset(&ge, 0, sizeof(ge));
    cr_expect_eq(uas_client_request(c, &ge, UAS_TYPE(GET_ENDPOINTS_REQUEST), never, NULL),
                 UAS_BAD_INVALID_STATE);
    /* Not a request type at all. */
    cr_expect_eq(uas_client_request(c, &req, UAS_TYPE(READ_RESPONSE), never, NULL),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_expect_eq(uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, 10), UAS_BAD_INVALID_STATE);
    uas_nodeid tok = uas_nodeid_numeric(0, 5);
    cr_expect_eq(uas_client_activate_session(c, &tok, never, NULL), UAS_BAD_INVALID_STATE);
    uas_client_disconnect(c); /* harmless */
    uas_client_delete(c);
}

Test(client_api, invalid_url_fails_connect_at_once)
{
    uas_client *c = make("opc.tcp://[::1", 1000);
    cr_assert(c);
    cr_expect_eq(uas_client_connect(c), UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_CLOSED);
    cr_expect_eq(uas_client_get_reason(c), UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    uas_client_delete(c);
}

typedef struct states {
    uas_client_state last;
    uas_status reason;
    int n;
} states;

static void on_state(uas_client *c, void *ud, uas_client_state s, uas_status reason)
{
    (void)c;
    states *st = ud;
    st->last = s;
    st->reason = reason;
    st->n++;
}

Test(client_api, a_peer_that_never_answers_hel_times_out_the_connect)
{
    /* Listening, so the TCP handshake completes, but nobody accepts. */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(ls >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(ls, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(ls, (struct sockaddr *)&a, &len);
    char url[64];
    snprintf(url, sizeof(url), "opc.tcp://127.0.0.1:%u", ntohs(a.sin_port));
    states st = {UAS_CLIENT_DISCONNECTED, UAS_GOOD, 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = url;
    cfg.request_timeout_ms = 200;
    uas_client *c = uas_client_new(loop, &cfg, on_state, &st);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_expect_eq(st.last, UAS_CLIENT_CONNECTING);
    int64_t t0 = uas_monotonic_ms();
    uas_status s = uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, 5000);
    int64_t took = uas_monotonic_ms() - t0;
    cr_expect_eq(s, UAS_BAD_TIMEOUT, "%s", uas_status_name(s));
    cr_expect_eq(st.last, UAS_CLIENT_CLOSED);
    cr_expect_eq(st.reason, UAS_BAD_TIMEOUT);
    cr_expect(took >= 190 && took < 2000, "gave up after %lld ms", (long long)took);
    /* CLOSED may connect again (and time out again). */
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_expect_eq(uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, 5000), UAS_BAD_TIMEOUT);
    uas_client_delete(c);
    close(ls);
}

Test(client_api, wait_state_returns_bad_timeout_when_nothing_happens)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(ls, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(ls, (struct sockaddr *)&a, &len);
    char url[64];
    snprintf(url, sizeof(url), "opc.tcp://127.0.0.1:%u", ntohs(a.sin_port));
    uas_client *c = make(url, 10000);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    int64_t t0 = uas_monotonic_ms();
    cr_expect_eq(uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, 100), UAS_BAD_TIMEOUT);
    int64_t took = uas_monotonic_ms() - t0;
    cr_expect(took >= 90 && took < 1000, "%lld ms", (long long)took);
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_CONNECTING);
    /* Deleting a connecting client is fine. */
    uas_client_delete(c);
    close(ls);
}
