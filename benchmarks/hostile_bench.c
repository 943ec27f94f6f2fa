/* The hostile clients of issue 12 against a running uaserver, with the
 * server's resident memory (from /proc/PID/statm) before, at the peak and
 * after the clients are gone, and whether a normal client is served
 * meanwhile. Numbers for docs/Benchmarks.md (benchmarks/hostile.sh runs
 * it); nothing is asserted.
 *
 *   hostile_bench URL PID orphans [SESSIONS [SUBS [ITEMS]]]
 *       SESSIONS sessions (1000) each create SUBS subscriptions (9) with
 *       the longest lifetime a client may ask for and ITEMS data items
 *       (10, queue 1000) plus one event item on the Server object, then
 *       close with deleteSubscriptions = false.
 *   hostile_bench URL PID refresh|call [REQUESTS]
 *       One session with a subscription and an event item on the Server
 *       object sends REQUESTS (60000) Calls of ConditionRefresh (refresh)
 *       or of Server.GetMonitoredItems (call) and never reads an answer;
 *       after 10 s it goes away. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ua/client.h>
#include <ua/net.h>
#include <ua/nodeids.h>

static long page_kib;
static const char *url;
static int pid;
static uas_loop *loop;
static double peak_mib;

static double rss_mib(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/statm", pid);
    FILE *f = fopen(path, "r");
    long size = 0, res = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = 0;
    fclose(f);
    double mib = (double)res * (double)page_kib / 1024.0;
    if (mib > peak_mib)
        peak_mib = mib;
    return mib;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uas_client *connect_client(uint32_t max_inflight)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = url;
    cfg.create_session = true;
    cfg.request_timeout_ms = 600000;
    if (max_inflight)
        cfg.max_inflight = max_inflight;
    uas_client *c = uas_client_new(loop, &cfg, NULL, NULL);
    if (!c || uas_client_connect(c) != UAS_GOOD ||
        uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, 10000) != UAS_GOOD) {
        if (c)
            uas_client_delete(c);
        return NULL;
    }
    return c;
}

/* A normal client: connect, session, Read of the server state, close. */
static bool normal_client_served(void)
{
    uas_client *c = connect_client(0);
    if (!c)
        return false;
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    rv.attribute_id = 13;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    uas_read_response resp;
    uint8_t mem[4096];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), &a, 5000);
    bool ok = st == UAS_GOOD && resp.results_count == 1 && !resp.results[0].status;
    uas_arena_free(&a);
    uas_client_disconnect(c);
    uas_client_wait_state(c, UAS_CLIENT_CLOSED, 5000);
    uas_client_delete(c);
    return ok;
}

static uint32_t create_sub(uas_client *c, double interval, uint32_t lifetime, uint32_t ka)
{
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.requested_publishing_interval = interval;
    req.requested_lifetime_count = lifetime;
    req.requested_max_keep_alive_count = ka;
    req.publishing_enabled = true;
    uas_create_subscription_response resp;
    uint8_t mem[1024];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &resp,
                                         UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), &a, 10000);
    uas_arena_free(&a);
    return st == UAS_GOOD ? resp.subscription_id : 0;
}

/* ITEMS data items (CurrentTime, queue 1000) and one event item on Server. */
static uas_status create_items(uas_client *c, uint32_t sub, uint32_t nitems)
{
    static uas_qualifiedname path[2];
    static uas_simple_attribute_operand sel[2];
    static const char *const fields[] = {"EventId", "Message"};
    for (int i = 0; i < 2; i++) {
        path[i] = (uas_qualifiedname){0, uas_string_from(fields[i])};
        sel[i].type_definition_id = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
        sel[i].browse_path = &path[i];
        sel[i].browse_path_count = 1;
        sel[i].attribute_id = 13;
    }
    uas_event_filter ef;
    memset(&ef, 0, sizeof(ef));
    ef.select_clauses = sel;
    ef.select_clauses_count = 2;
    uas_monitored_item_create_request *it = calloc(nitems + 1, sizeof(*it));
    if (!it)
        return UAS_BAD_OUT_OF_MEMORY;
    for (uint32_t i = 0; i <= nitems; i++) {
        bool ev = i == nitems;
        it[i].item_to_monitor.node_id = uas_nodeid_numeric(
            0, ev ? UAS_NS0ID_SERVER : UAS_NS0ID_SERVER_SERVERSTATUS_CURRENTTIME);
        it[i].item_to_monitor.attribute_id = ev ? 12 : 13;
        it[i].monitoring_mode = UAS_MONITORING_MODE_REPORTING;
        it[i].requested_parameters.client_handle = i;
        it[i].requested_parameters.sampling_interval = 1000;
        it[i].requested_parameters.queue_size = ev ? 10000 : 1000;
        it[i].requested_parameters.discard_oldest = true;
        if (ev) {
            it[i].requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
            it[i].requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
            it[i].requested_parameters.filter.content.decoded.data = &ef;
        }
    }
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_create = it;
    req.items_to_create_count = nitems + 1;
    uas_create_monitored_items_response resp;
    uint8_t mem[4096];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 16 << 20);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &resp,
                                         UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE), &a, 10000);
    uas_arena_free(&a);
    free(it);
    return st;
}

static int orphans(int argc, char **argv)
{
    unsigned nsess = argc > 0 ? (unsigned)atoi(argv[0]) : 1000;
    unsigned nsubs = argc > 1 ? (unsigned)atoi(argv[1]) : 9;
    unsigned nitems = argc > 2 ? (unsigned)atoi(argv[2]) : 10;
    unsigned subs_ok = 0, subs_refused = 0, failed = 0;
    for (unsigned i = 0; i < nsess; i++) {
        uas_client *c = connect_client(0);
        if (!c) {
            failed++;
            continue;
        }
        for (unsigned k = 0; k < nsubs; k++) {
            /* The longest a client may ask for: 3.4 years before issue 12. */
            uint32_t id = create_sub(c, 3600000, 30000, 10000);
            if (!id) {
                subs_refused++;
                continue;
            }
            subs_ok++;
            create_items(c, id, nitems);
        }
        uas_close_session_request req;
        memset(&req, 0, sizeof(req));
        req.delete_subscriptions = false;
        uas_close_session_response resp;
        uint8_t mem[512];
        uas_arena a;
        uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
        uas_client_call_sync(c, &req, UAS_TYPE(CLOSE_SESSION_REQUEST), &resp,
                             UAS_TYPE(CLOSE_SESSION_RESPONSE), &a, 10000);
        uas_arena_free(&a);
        uas_client_delete(c);
        if (i % 50 == 0)
            rss_mib();
    }
    printf("sessions %u, subscriptions created %u, refused %u, failed sessions %u\n", nsess,
           subs_ok, subs_refused, failed);
    return 0;
}

static void ignore(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c, (void)ud, (void)st, (void)resp, (void)t;
}

static int storm(bool refresh, int argc, char **argv)
{
    unsigned n = argc > 0 ? (unsigned)atoi(argv[0]) : 60000;
    uas_client *c = connect_client(65536);
    if (!c)
        return 1;
    uint32_t sub = create_sub(c, 1000, 60, 20);
    if (!sub || create_items(c, sub, 0) != UAS_GOOD) {
        fprintf(stderr, "set-up failed\n");
        return 1;
    }
    uas_variant arg;
    uas_variant_set_scalar(&arg, &sub, UAS_TYPE(UINT32));
    uas_call_method_request m;
    memset(&m, 0, sizeof(m));
    m.object_id = uas_nodeid_numeric(0, refresh ? UAS_NS0ID_CONDITIONTYPE : UAS_NS0ID_SERVER);
    m.method_id = uas_nodeid_numeric(0, refresh ? UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH
                                                : UAS_NS0ID_SERVER_GETMONITOREDITEMS);
    m.input_arguments = &arg;
    m.input_arguments_count = 1;
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call = &m;
    req.methods_to_call_count = 1;
    /* The loop is not run from here on: nothing is read. Requests the
     * socket does not take wait in the client's own output queue. */
    unsigned sent = 0;
    for (; sent < n; sent++) {
        if (uas_client_request(c, &req, UAS_TYPE(CALL_REQUEST), ignore, NULL) != UAS_GOOD)
            break;
        if (sent % 2000 == 0)
            rss_mib();
    }
    for (int i = 0; i < 100; i++) {
        sleep_ms(100);
        rss_mib();
    }
    printf("%s requests sent %u\n", refresh ? "ConditionRefresh" : "GetMonitoredItems", sent);
    uas_client_delete(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hostile_bench URL PID orphans|refresh|call [N ...]\n");
        return 2;
    }
    page_kib = sysconf(_SC_PAGESIZE) / 1024;
    url = argv[1];
    pid = atoi(argv[2]);
    loop = uas_loop_new(0);
    if (!loop)
        return 1;
    double before = rss_mib();
    peak_mib = before;
    int rc = !strcmp(argv[3], "orphans")   ? orphans(argc - 4, argv + 4)
             : !strcmp(argv[3], "refresh") ? storm(true, argc - 4, argv + 4)
             : !strcmp(argv[3], "call")    ? storm(false, argc - 4, argv + 4)
                                           : 2;
    bool served = normal_client_served();
    double gone = rss_mib();
    /* Orphans and queues are released by timers: give them a moment. */
    sleep_ms(5000);
    double after = rss_mib();
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %s |\n", argv[3], before, peak_mib, gone, after,
           served ? "yes" : "**no**");
    uas_loop_delete(loop);
    return rc;
}
