#define _GNU_SOURCE
/* The process memory budget and the per-address caps, over real sockets:
 * a client that never reads its answers, a connect flood from one address,
 * and chunk floods at the message size limit on many connections. Each
 * test checks that memory stays bounded (the budget's counters: the server
 * runs in this process, so its RSS is not separable here; the RSS of a
 * separate uaserver is measured by benchmarks/attack_rss.sh) and that a
 * second, normal client keeps being served (env_stop then a fresh one). */
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ua/membudget.h>
#include <ua/nodeids.h>

#include "helper_env.h"
#include "server_internal.h"

#define POLICY_NONE "http://opcfoundation.org/UA/SecurityPolicy#None"

static void run_for(env *e, uint32_t ms)
{
    bool never = false;
    env_run_until(e, &never, ms);
}

static unsigned connections(env *e)
{
    return atomic_load(&e->server->counters.current_connections);
}

static size_t budget_used(void)
{
    uas_budget_stats s;
    uas_budget_get_stats(&s);
    return s.used;
}

/* Runs the test loop (serving good clients) until cond(e) or ms pass. */
static bool wait_for(env *e, bool (*cond)(env *e, void *ud), void *ud, uint32_t ms)
{
    for (uint32_t waited = 0; waited <= ms; waited += 50) {
        if (cond(e, ud))
            return true;
        run_for(e, 50);
    }
    return cond(e, ud);
}

static bool connections_at_most(env *e, void *ud)
{
    return connections(e) <= *(unsigned *)ud;
}

static bool budget_below(env *e, void *ud)
{
    (void)e;
    return budget_used() <= *(size_t *)ud;
}

static void expect_reads(uas_client *c)
{
    cr_expect_eq(env_read_i32(c, 1001), 0, "a normal client is still served");
}

/* A Browse of the Server object, n times over: a few bytes of request per
 * kilobyte of answer. */
static uas_browse_description *browse_request(uas_browse_request *req, size_t n)
{
    uas_browse_description *bd = calloc(n, sizeof(*bd));
    cr_assert(bd);
    for (size_t i = 0; i < n; i++) {
        bd[i].node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
        bd[i].browse_direction = UAS_BROWSE_DIRECTION_BOTH;
        bd[i].reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_REFERENCES);
        bd[i].include_subtypes = true;
        bd[i].result_mask = 0x3F;
    }
    memset(req, 0, sizeof(*req));
    req->nodes_to_browse_count = n;
    req->nodes_to_browse = bd;
    return bd;
}

/* ---- a connect flood from one address ---- */

enum { PER_ADDRESS = 8 };

static void per_address_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_connections_per_address = PER_ADDRESS;
    cfg->log_level = UAS_LOG_WARN;
}

static uas_client *client_from(env *e, const char *source)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = true;
    cfg.conn.source_address = source;
    uas_client *c = uas_client_new(e->loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    uas_status st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "connect from %s: %s", source, uas_status_name(st));
    return c;
}

static bool connections_at_least(env *e, void *ud)
{
    return connections(e) >= *(unsigned *)ud;
}

Test(memory, connect_flood_from_one_address_is_capped, .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .configure = per_address_config};
    env_start(&e, &o);
    env_log_capture();
    int fds[PER_ADDRESS * 4];
    for (int i = 0; i < PER_ADDRESS; i++)
        fds[i] = raw_connect(&e);
    unsigned n = PER_ADDRESS;
    cr_assert(wait_for(&e, connections_at_least, &n, ENV_WAIT_MS));
    /* Every further connection from 127.0.0.1 is refused with an ERR. */
    for (int i = PER_ADDRESS; i < PER_ADDRESS * 4; i++) {
        fds[i] = raw_connect(&e);
        raw_expect_err(fds[i], UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        raw_expect_close(fds[i], ENV_WAIT_MS);
    }
    cr_expect_eq(connections(&e), PER_ADDRESS);
    cr_expect_eq(atomic_load(&e.server->counters.refused_per_address), PER_ADDRESS * 3);
    cr_expect_eq(uas_conn_limits_count(e.server->conn_limits, "127.0.0.1"), PER_ADDRESS);
    cr_expect(env_log_has("max_connections_per_address"), "no log line names the cap");
    /* A client from another address is served meanwhile. */
    uas_client *c = client_from(&e, "127.0.0.2");
    expect_reads(c);
    env_client_close(c);
    /* Once the flood ends, the address may connect again (env_stop). */
    for (int i = 0; i < PER_ADDRESS * 4; i++)
        close(fds[i]);
    unsigned none = 0;
    cr_assert(wait_for(&e, connections_at_most, &none, ENV_WAIT_MS));
    cr_expect_eq(uas_conn_limits_count(e.server->conn_limits, "127.0.0.1"), 0);
    env_log_release();
    env_stop(&e);
}

/* ---- chunk floods at the message size limit ---- */

/* A client channel of policy None on a blocking socket, driven by the
 * test: its chunks go to the socket, or are held to be sent later. */
enum { HELD_MAX = 16 };
typedef struct rawch {
    int fd;
    uas_bufpool *pool;
    uas_channel *ch;
    bool hold;
    uint8_t *held[HELD_MAX];
    size_t held_len[HELD_MAX];
    size_t nheld;
    bool closed;
} rawch;

static bool nonblocking_send, flood_blocked;

static uas_status rawch_send(void *ud, uas_buf *chunk)
{
    rawch *r = ud;
    if (r->hold) {
        cr_assert_lt(r->nheld, HELD_MAX);
        r->held[r->nheld] = malloc(chunk->len);
        cr_assert(r->held[r->nheld]);
        memcpy(r->held[r->nheld], chunk->data, chunk->len);
        r->held_len[r->nheld++] = chunk->len;
    } else if (nonblocking_send) {
        if (!flood_blocked && send(r->fd, chunk->data, chunk->len, MSG_DONTWAIT | MSG_NOSIGNAL) !=
                                  (ssize_t)chunk->len)
            flood_blocked = true;
    } else {
        raw_send(r->fd, chunk->data, chunk->len);
    }
    uas_buf_put(r->pool, chunk);
    return UAS_GOOD;
}

static void rawch_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)ud, (void)id, (void)body, (void)len;
}

static void rawch_state(void *ud, uas_channel_state st, uas_status reason)
{
    (void)reason;
    if (st == UAS_CHANNEL_CLOSED)
        ((rawch *)ud)->closed = true;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void rawch_open(env *e, rawch *r)
{
    memset(r, 0, sizeof(*r));
    r->pool = uas_bufpool_new(1u << 20);
    cr_assert(r->pool);
    uas_channel_config cc;
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    cc.policy = uas_security_policy(POLICY_NONE, false);
    cc.mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = rawch_send;
    cb.on_message = rawch_message;
    cb.on_state = rawch_state;
    r->fd = raw_connect(e);
    r->ch = uas_channel_new(&cc, &cb, r, r->pool, mono_ms());
    cr_assert(r->ch);
    cr_assert_eq(uas_channel_connect(r->ch, e->url, mono_ms()), UAS_GOOD);
    uint8_t buf[65536];
    int64_t end = mono_ms() + ENV_WAIT_MS;
    while (uas_channel_get_state(r->ch) != UAS_CHANNEL_OPEN && !r->closed && mono_ms() < end) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), 0);
        if (n <= 0)
            break;
        uas_channel_recv(r->ch, buf, (size_t)n, mono_ms());
    }
    cr_assert_eq(uas_channel_get_state(r->ch), UAS_CHANNEL_OPEN, "the None channel did not open");
}

static void rawch_close(rawch *r)
{
    for (size_t i = 0; i < r->nheld; i++)
        free(r->held[i]);
    uas_channel_delete(r->ch);
    close(r->fd);
    uas_bufpool_delete(r->pool);
}

/* What the server said on the socket so far: ERR's code, BadConnectionClosed
 * for a close without ERR, Good while it is open and silent. */
static uas_status rawch_fate(rawch *r)
{
    uint8_t buf[256];
    ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n >= 16 && memcmp(buf, "ERRF", 4) == 0)
        return raw_u32(buf + 8);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        return UAS_BAD_CONNECTION_CLOSED;
    return UAS_GOOD;
}

/* ---- a client that never reads ---- */

static void never_reader_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_output_bytes = 1u << 20;
    cfg->log_level = UAS_LOG_WARN;
}

/* The requests of a non-reader go straight to the socket, without
 * blocking: once the server stops taking them, the flood is over. */
Test(memory, client_that_never_reads_is_dropped_and_its_memory_returns, .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .configure = never_reader_config};
    env_start(&e, &o);
    env_log_capture();
    uas_client *good = env_client(&e, true, 0);
    static rawch bad;
    rawch_open(&e, &bad);
    unsigned before = connections(&e);
    size_t base = budget_used();

    /* GetEndpoints needs no session; its answer is several times the
     * request, and the socket is never read. */
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    nonblocking_send = true;
    flood_blocked = false;
    int sent = 0;
    for (; sent < 100000 && !flood_blocked && !bad.closed; sent++) {
        uas_channel_send(bad.ch, (uint32_t)sent + 1, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST));
        if (sent % 5000 == 4999)
            run_for(&e, 20);
    }
    nonblocking_send = false;
    cr_assert_gt(sent, 1000, "the flood did not start");

    /* It is dropped while the good client keeps reading, though its
     * socket stays open. */
    unsigned want = before - 1;
    bool dropped = false;
    for (int i = 0; i < 40 && !dropped; i++) {
        expect_reads(good);
        dropped = wait_for(&e, connections_at_most, &want, 250);
    }
    cr_assert(dropped, "the client that never reads still has its connection");
    cr_expect(env_log_has("peer does not read"), "no log line names the non-reader");

    /* Its queue (max_output_bytes, 1 MiB) was the bound, and it is back. */
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    cr_log_info("non-reader: %d requests sent, budget base %zu, peak %zu", sent, base, bs.peak);
    cr_expect_leq(bs.peak, base + (2u << 20), "the budget peaked at %zu bytes", bs.peak);
    size_t limit = base + (256u << 10);
    cr_expect(wait_for(&e, budget_below, &limit, 5000), "the budget still holds %zu bytes",
              budget_used());
    expect_reads(good);

    rawch_close(&bad);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
}

/* Reads whatever the server sent; true once it closed the connection. */
static bool rawch_drain_closed(rawch *r)
{
    static uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0)
            continue;
        return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
}

enum { FLOODERS = 48, FLOOD_MESSAGE = 256u << 10, FLOOD_BUDGET = 4u << 20 };

static void chunk_flood_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_message_size = FLOOD_MESSAGE;
    cfg->memory_budget = FLOOD_BUDGET;
    cfg->max_connections_per_address = 0;
    cfg->log_level = UAS_LOG_WARN;
}

Test(memory, chunk_floods_at_the_message_limit_stay_within_the_budget, .timeout = 90)
{
    env e;
    env_options o = {.threads = 2, .configure = chunk_flood_config};
    env_start(&e, &o);
    env_log_capture();
    uas_client *good = env_client(&e, true, 0);
    size_t base = budget_used();
    /* Each flooder sends all chunks of a message just under the limit but
     * the last, and holds it open. */
    uas_browse_request req;
    uas_browse_description *bd = browse_request(&req, 11000);
    static rawch r[FLOODERS];
    for (int i = 0; i < FLOODERS; i++) {
        rawch_open(&e, &r[i]);
        r[i].hold = true;
        uas_status st = uas_channel_send(r[i].ch, 100, &req, UAS_TYPE(BROWSE_REQUEST));
        cr_assert_eq(st, UAS_GOOD, "flooder %d: %s", i, uas_status_name(st));
        cr_assert_geq(r[i].nheld, 3);
        for (size_t k = 0; k + 1 < r[i].nheld; k++)
            raw_send(r[i].fd, r[i].held[k], r[i].held_len[k]);
        if (i % 8 == 7)
            expect_reads(good);
    }
    free(bd);
    run_for(&e, 500);
    expect_reads(good);

    /* Memory stayed within the budget, plus what is never refused: one
     * receive buffer per connection for a chunk split across reads. */
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    cr_expect_gt(bs.refusals, 0, "the budget never refused: the flood did not reach it");
    cr_expect_leq(bs.peak, FLOOD_BUDGET + (size_t)FLOODERS * 65536 + (512u << 10),
                  "the budget peaked at %zu bytes", bs.peak);
    int refused = 0;
    for (int i = 0; i < FLOODERS; i++) {
        uas_status f = rawch_fate(&r[i]);
        if (f == UAS_BAD_TCP_NOT_ENOUGH_RESOURCES || f == UAS_BAD_CONNECTION_CLOSED)
            refused++;
    }
    cr_log_info("chunk flood: peak %zu, refusals %llu, drops %llu, %d of %d refused", bs.peak,
                (unsigned long long)bs.refusals, (unsigned long long)bs.drops, refused, FLOODERS);
    /* 48 x 256 KiB of assembly do not fit in 4 MiB: most were refused. */
    cr_expect_geq(refused, FLOODERS / 2, "only %d flooders were refused", refused);
    cr_expect(env_log_has("memory budget exhausted") || env_log_has("no memory to assemble"),
              "no log line tells why");

    for (int i = 0; i < FLOODERS; i++)
        rawch_close(&r[i]);
    size_t limit = base + (256u << 10);
    cr_expect(wait_for(&e, budget_below, &limit, 5000), "the budget still holds %zu bytes",
              budget_used());
    expect_reads(good);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
}

/* ---- the largest consumer goes first ---- */

enum { SMALL_BUDGET = 4u << 20 };

static void small_budget_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->memory_budget = SMALL_BUDGET;
    cfg->max_output_bytes = 3u << 20;
    cfg->max_message_size = FLOOD_MESSAGE;
    cfg->max_connections_per_address = 0;
    cfg->log_level = UAS_LOG_WARN;
}

Test(memory, exhausted_budget_drops_the_client_that_does_not_read_first, .timeout = 90)
{
    env e;
    env_options o = {.threads = 2, .configure = small_budget_config};
    env_start(&e, &o);
    env_log_capture();
    uas_client *good = env_client(&e, true, 0);
    size_t base = budget_used();

    /* A non-reader whose queue grows to about half the budget, and stays
     * there: under its own cap (3 MiB), so only the budget can drop it. */
    static rawch bad;
    rawch_open(&e, &bad);
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    nonblocking_send = true;
    flood_blocked = false;
    uint32_t id = 1;
    for (int round = 0; round < 400 && budget_used() < base + (2u << 20); round++) {
        for (int k = 0; k < 200 && !flood_blocked; k++)
            uas_channel_send(bad.ch, id++, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST));
        run_for(&e, 20);
    }
    nonblocking_send = false;
    cr_assert_geq(budget_used(), base + (1u << 20), "the non-reader's queue did not grow");
    unsigned with_bad = connections(&e);

    /* Chunk floods run the budget out: the non-reader, the largest
     * consumer, is dropped, and the good client is served. */
    uas_browse_request breq;
    uas_browse_description *bd = browse_request(&breq, 11000);
    enum { N = 12 };
    static rawch r[N];
    for (int i = 0; i < N; i++) {
        rawch_open(&e, &r[i]);
        r[i].hold = true;
        cr_assert_eq(uas_channel_send(r[i].ch, 100, &breq, UAS_TYPE(BROWSE_REQUEST)), UAS_GOOD);
        for (size_t k = 0; k + 1 < r[i].nheld; k++)
            raw_send(r[i].fd, r[i].held[k], r[i].held_len[k]);
    }
    free(bd);
    unsigned want = with_bad + N - 1;
    cr_expect(wait_for(&e, connections_at_most, &want, ENV_WAIT_MS),
              "nothing was dropped: %u connections", connections(&e));
    cr_expect(env_log_has("the largest consumer"), "no log line names the dropped consumer");
    /* Its socket is full of answers it never read: what ends it is the
     * close behind them. */
    bool closed = false;
    for (int t = 0; t < 100 && !closed; t++) {
        closed = rawch_drain_closed(&bad);
        if (!closed)
            run_for(&e, 50);
    }
    cr_expect(closed, "the non-reader was not the one dropped");
    expect_reads(good);

    for (int i = 0; i < N; i++)
        rawch_close(&r[i]);
    rawch_close(&bad);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
}
