#define _GNU_SOURCE
/* Publish and event queues on the process memory budget, and the live
 * usage of the server-wide limits in the address space (Server/uastack),
 * over real sockets. An event flood into the queues of a client that never
 * publishes is cut at a small budget, and is reported (budget counters,
 * SubscriptionQueueRefusals) while a second client is served; once the
 * flooded subscription goes, its bytes come back. The diagnostics
 * variables follow the server as it changes (not a snapshot). */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ua/nodeids.h>

#include "helper_memory.h"
#include "helper_sub.h"
#include "server_internal.h"
#include "sub_diag.h"

static uas_client *client_from(env *e, uas_loop *loop, const char *source)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = true;
    cfg.conn.source_address = source;
    cfg.request_timeout_ms = 60000;
    uas_client *c = uas_client_new(loop ? loop : e->loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    uas_status st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "connect from %s: %s", source, uas_status_name(st));
    return c;
}

/* ---- an event flood past a small budget ---- */

enum {
    SMALL_BUDGET = 16u << 20,
    FLOOD_ITEMS = 8,
    FLOOD_QUEUE = 10000,
    FLOOD_EVENTS = 12000,
};

static void small_budget(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->memory_budget = SMALL_BUDGET;
    cfg->log_level = UAS_LOG_ERROR;
}

static bool queue_bytes_at_most(env *e, void *ud)
{
    uas_subs_figures f;
    uas_subs_get_figures(e->server, &f);
    return f.queue_bytes <= *(size_t *)ud;
}

Test(budget_queues, an_event_flood_past_the_budget_is_cut_and_others_are_served, .timeout = 120)
{
#ifdef UAS_MINIMAL
    cr_skip_test("the minimal profile has no event items");
#endif
    size_t used0 = mem_budget_used();
    env e;
    env_options o = {.threads = 2, .configure = small_budget};
    env_start(&e, &o);
    uas_client *good = client_from(&e, NULL, "127.0.0.2");
    cr_assert_eq(env_diag(good, "MemoryBudget.Limit"), SMALL_BUDGET);
    size_t rss0 = uas_process_rss();

    /* A client that subscribes to every event with 8 queues of 10,000 and
     * then never publishes (its loop is not run): unbounded, its queues
     * would hold 8 x 10,000 events of about 1 KiB, five times the budget. */
    uas_loop *hl = uas_loop_new(0);
    cr_assert(hl);
    uas_client *hostile = client_from(&e, hl, "127.0.0.3");
    uint32_t sub;
    cr_assert_eq(env_create_sub(hostile, 100, 6000, &sub), UAS_GOOD);
    uas_status st[FLOOD_ITEMS];
    uint32_t rq[FLOOD_ITEMS];
    cr_assert_eq(
        env_create_items(hostile, sub, &(env_items){true, FLOOD_ITEMS, FLOOD_QUEUE, NULL}, st, rq),
        UAS_GOOD);
    for (int i = 0; i < FLOOD_ITEMS; i++) {
        cr_assert_eq(st[i], UAS_GOOD, "item %d: %s", i, uas_status_name(st[i]));
        cr_assert_eq(rq[i], FLOOD_QUEUE);
    }

    uas_event ev;
    memset(&ev, 0, sizeof(ev));
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
    ev.event_type = &type;
    ev.severity = 500;
    ev.message = "flood";
    for (int i = 0; i < FLOOD_EVENTS; i++) {
        cr_assert_eq(uas_server_report_event(e.server, &ev), UAS_GOOD);
        if (i % 2000 == 0)
            mem_expect_reads(good); /* served throughout */
    }
    mem_run_for(&e, 200);
    /* The process (server and test clients) grew by the budget and a
     * little; unbounded, the queues alone held 80 MiB (measured: 11 ->
     * 92 MiB before the queues drew on the budget, 11 -> 28 MiB after). */
    size_t rss1 = uas_process_rss();
    cr_expect_lt(rss1 - rss0, 40u << 20, "RSS grew from %zu to %zu MiB", rss0 >> 20, rss1 >> 20);

    /* The queues stopped at the budget, and the server says so. */
    uint64_t queue_bytes = env_diag(good, "MemoryBudget.SubscriptionQueueBytes");
    uint64_t refusals = env_diag(good, "MemoryBudget.SubscriptionQueueRefusals");
    uint64_t peak = env_diag(good, "MemoryBudget.Peak");
    cr_expect_gt(queue_bytes, SMALL_BUDGET / 2, "the queues took what there was: %llu",
                 (unsigned long long)queue_bytes);
    cr_expect_leq(queue_bytes, SMALL_BUDGET);
    cr_expect_gt(refusals, 0, "the budget refused events");
    cr_expect_leq(peak, SMALL_BUDGET + (1u << 20), "peak %llu", (unsigned long long)peak);
    cr_expect_eq(env_diag(good, "Subscriptions.MonitoredItems"), FLOOD_ITEMS);
    /* A second client is served: reads, and a session of its own. */
    mem_expect_reads(good);
    env_check_alive(&e);

    /* The client reads again and deletes its subscription: every byte of
     * its queues goes back (a few batches of credit may stay per loop). */
    cr_assert_eq(env_delete_sub(hostile, sub), UAS_GOOD);
    size_t credit = 2 * e.threads * (128u << 10);
    cr_expect(mem_wait_for(&e, queue_bytes_at_most, &credit, ENV_WAIT_MS),
              "the queues kept their bytes");
    cr_expect_leq(env_diag(good, "MemoryBudget.SubscriptionQueueBytes"), credit);
    cr_expect_eq(env_diag(good, "Subscriptions.MonitoredItems"), 0);
    /* Queues still full when the server stops are released with it. */
    cr_assert_eq(env_create_sub(hostile, 100, 6000, &sub), UAS_GOOD);
    cr_assert_eq(env_create_items(hostile, sub, &(env_items){true, 2, FLOOD_QUEUE, NULL}, st, NULL),
                 UAS_GOOD);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(uas_server_report_event(e.server, &ev), UAS_GOOD);
    env_client_close(good);
    env_stop(&e); /* with the hostile session and its queues still there */
    uas_client_delete(hostile);
    uas_loop_delete(hl);
    /* The server is gone: every byte it charged went back. */
    cr_expect_eq(mem_budget_used(), used0, "%zu bytes still charged", mem_budget_used() - used0);
}

/* ---- the diagnostics are live ---- */

enum { PER_ADDRESS = 3 };

static void diag_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->memory_budget = 64u << 20;
    cfg->max_connections_per_address = PER_ADDRESS;
    cfg->log_level = UAS_LOG_ERROR;
}

Test(budget_queues, limit_usage_is_live_in_the_address_space, .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .configure = diag_config};
    env_start(&e, &o);
    uas_client *c = client_from(&e, NULL, "127.0.0.2");
    cr_expect_eq(env_diag(c, "MemoryBudget.Limit"), 64u << 20);
    cr_expect_geq(env_diag(c, "Connections.Current"), 1);
    cr_expect_eq(env_diag(c, "Subscriptions.MonitoredItems"), 0);
    cr_expect_eq(env_diag(c, "Subscriptions.QueuedNotifications"), 0);
    cr_expect_eq(env_diag(c, "Subscriptions.OrphanedSubscriptions"), 0);
    cr_expect_eq(env_diag(c, "Connections.RefusedPerAddress"), 0);
    uint64_t queue_bytes0 = env_diag(c, "MemoryBudget.SubscriptionQueueBytes");

    /* Monitored items and their queues show as they come and go. */
    uint32_t sub;
    cr_assert_eq(env_create_sub(c, 100, 6000, &sub), UAS_GOOD);
    uas_status st[50];
    uint32_t rq[50];
    cr_assert_eq(env_create_items(c, sub, &(env_items){false, 50, 20, NULL}, st, rq), UAS_GOOD);
    uint64_t slots = 0;
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(st[i], UAS_GOOD);
        slots += rq[i];
    }
    cr_expect_eq(env_diag(c, "Subscriptions.MonitoredItems"), 50);
    cr_expect_eq(env_diag(c, "Subscriptions.QueuedNotifications"), slots);
    cr_expect_gt(env_diag(c, "MemoryBudget.SubscriptionQueueBytes"), queue_bytes0);
    cr_expect_gt(env_diag(c, "MemoryBudget.InUse"), 0);
    cr_assert_eq(env_delete_sub(c, sub), UAS_GOOD);
    cr_expect_eq(env_diag(c, "Subscriptions.MonitoredItems"), 0);
    cr_expect_eq(env_diag(c, "Subscriptions.QueuedNotifications"), 0);

    /* Connections from one address past its cap are refused and counted. */
    int fds[PER_ADDRESS + 2];
    for (int i = 0; i < PER_ADDRESS; i++)
        fds[i] = raw_connect(&e);
    unsigned want = PER_ADDRESS + 1;
    for (int i = 0; i < 100 && env_diag(c, "Connections.Current") < want; i++)
        mem_run_for(&e, 20);
    cr_expect_eq(env_diag(c, "Connections.Current"), want);
    for (int i = PER_ADDRESS; i < PER_ADDRESS + 2; i++) {
        fds[i] = raw_connect(&e);
        raw_expect_err(fds[i], UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
    }
    cr_expect_eq(env_diag(c, "Connections.RefusedPerAddress"), 2);
    for (int i = 0; i < PER_ADDRESS + 2; i++)
        close(fds[i]);

    /* An orphan appears when a session closes and keeps its subscription. */
    uas_client *d = client_from(&e, NULL, "127.0.0.4");
    cr_assert_eq(env_create_sub(d, 100, 6000, &sub), UAS_GOOD);
    uas_close_session_request creq;
    memset(&creq, 0, sizeof(creq));
    creq.delete_subscriptions = false;
    uas_close_session_response cresp;
    env_arena m;
    cr_assert_eq(uas_client_call_sync(d, &creq, UAS_TYPE(CLOSE_SESSION_REQUEST), &cresp,
                                      UAS_TYPE(CLOSE_SESSION_RESPONSE), env_arena_init(&m),
                                      ENV_WAIT_MS),
                 UAS_GOOD);
    uas_arena_free(&m.a);
    uas_client_delete(d);
    uint64_t orphans = 0;
    for (int i = 0; i < 100 && (orphans = env_diag(c, "Subscriptions.OrphanedSubscriptions")) < 1;
         i++)
        mem_run_for(&e, 20);
    cr_expect_eq(orphans, 1);
    env_client_close(c);
    env_stop(&e);
}
