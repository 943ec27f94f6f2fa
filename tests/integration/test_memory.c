#define _GNU_SOURCE
/* The process memory budget and the per-address caps, over real sockets:
 * a client that never reads its answers, a connect flood from one address,
 * and an exhausted budget dropping the largest consumer first
 * (test_memory_chunks.c: chunk floods). Each test checks that memory stays
 * bounded (the budget's counters: the server runs in this process, so its
 * RSS is not separable here; benchmarks/attack_rss.sh measures the RSS of a
 * separate uaserver) and that a second, normal client keeps being served
 * (env_stop then a fresh one). */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper_memory.h"
#include "server_internal.h"

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
    unsigned before = mem_connections(&e);
    size_t base = mem_budget_used();

    /* GetEndpoints needs no session; its answer is several times the
     * request, and the socket is never read. */
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    mem_nonblocking_send = true;
    mem_flood_blocked = false;
    int sent = 0;
    for (; sent < 100000 && !mem_flood_blocked && !bad.closed; sent++) {
        uas_channel_send(bad.ch, (uint32_t)sent + 1, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST));
        if (sent % 5000 == 4999)
            mem_run_for(&e, 20);
    }
    mem_nonblocking_send = false;
    cr_assert_gt(sent, 1000, "the flood did not start");

    /* It is dropped while the good client keeps reading, though its
     * socket stays open. */
    unsigned want = before - 1;
    bool dropped = false;
    for (int i = 0; i < 40 && !dropped; i++) {
        mem_expect_reads(good);
        dropped = mem_wait_for(&e, mem_connections_at_most, &want, 250);
    }
    cr_assert(dropped, "the client that never reads still has its connection");
    cr_expect(env_log_has("peer does not read"), "no log line names the non-reader");

    /* Its queue (max_output_bytes, 1 MiB) was the bound, and it is back. */
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    cr_expect_leq(bs.peak, base + (2u << 20), "the budget peaked at %zu bytes", bs.peak);
    size_t limit = base + (256u << 10);
    cr_expect(mem_wait_for(&e, mem_budget_below, &limit, 5000), "the budget still holds %zu bytes",
              mem_budget_used());
    mem_expect_reads(good);

    rawch_close(&bad);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
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
    return mem_connections(e) >= *(unsigned *)ud;
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
    cr_assert(mem_wait_for(&e, connections_at_least, &n, ENV_WAIT_MS));
    /* Every further connection from 127.0.0.1 is refused with an ERR. */
    for (int i = PER_ADDRESS; i < PER_ADDRESS * 4; i++) {
        fds[i] = raw_connect(&e);
        raw_expect_err(fds[i], UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
        raw_expect_close(fds[i], ENV_WAIT_MS);
    }
    cr_expect_eq(mem_connections(&e), PER_ADDRESS);
    cr_expect_eq(atomic_load(&e.server->counters.refused_per_address), PER_ADDRESS * 3);
    cr_expect_eq(uas_conn_limits_count(e.server->conn_limits, "127.0.0.1"), PER_ADDRESS);
    cr_expect(env_log_has("max_connections_per_address"), "no log line names the cap");
    /* A client from another address is served meanwhile. */
    uas_client *c = client_from(&e, "127.0.0.2");
    mem_expect_reads(c);
    env_client_close(c);
    /* Once the flood ends, the address may connect again (env_stop). */
    for (int i = 0; i < PER_ADDRESS * 4; i++)
        close(fds[i]);
    unsigned none = 0;
    cr_assert(mem_wait_for(&e, mem_connections_at_most, &none, ENV_WAIT_MS));
    cr_expect_eq(uas_conn_limits_count(e.server->conn_limits, "127.0.0.1"), 0);
    env_log_release();
    env_stop(&e);
}

enum { FLOOD_MESSAGE = 256u << 10 };

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
    size_t base = mem_budget_used();

    /* A non-reader whose queue grows to about half the budget, and stays
     * there: under its own cap (3 MiB), so only the budget can drop it. */
    static rawch bad;
    rawch_open(&e, &bad);
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    mem_nonblocking_send = true;
    mem_flood_blocked = false;
    uint32_t id = 1;
    for (int round = 0; round < 400 && mem_budget_used() < base + (2u << 20); round++) {
        for (int k = 0; k < 200 && !mem_flood_blocked; k++)
            uas_channel_send(bad.ch, id++, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST));
        mem_run_for(&e, 20);
    }
    mem_nonblocking_send = false;
    cr_assert_geq(mem_budget_used(), base + (1u << 20), "the non-reader's queue did not grow");
    unsigned with_bad = mem_connections(&e);

    /* Chunk floods run the budget out: the non-reader, the largest
     * consumer, is dropped, and the good client is served. */
    uas_browse_request breq;
    uas_browse_description *bd = mem_browse_request(&breq, 11000);
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
    cr_expect(mem_wait_for(&e, mem_connections_at_most, &want, ENV_WAIT_MS),
              "nothing was dropped: %u mem_connections", mem_connections(&e));
    cr_expect(env_log_has("the largest consumer"), "no log line names the dropped consumer");
    /* Its socket is full of answers it never read: what ends it is the
     * close behind them. */
    bool closed = false;
    for (int t = 0; t < 100 && !closed; t++) {
        closed = rawch_drain_closed(&bad);
        if (!closed)
            mem_run_for(&e, 50);
    }
    cr_expect(closed, "the non-reader was not the one dropped");
    mem_expect_reads(good);

    for (int i = 0; i < N; i++)
        rawch_close(&r[i]);
    rawch_close(&bad);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
}
