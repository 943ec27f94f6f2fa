/* `uaserver --self-load SCENARIO ...`: closed-loop request scenarios (read,
 * write, browse) against a child uaserver (or --target URL), measured the
 * way the peer's harness measures: server CPU and heap per operation from
 * the child only, latency from a log-linear histogram, several rounds with
 * variants alternated and reversed every other round, median and range. */
#define _GNU_SOURCE
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>
#include <ua/nodeids.h>

#include "loadgen_internal.h"

enum { MAX_VARIANTS = 4, MAX_ROUNDS = 15 };
enum { SC_READ, SC_WRITE, SC_BROWSE };

typedef struct lg_opts {
    int scenario;
    const char *scenario_name;
    unsigned sessions, inflight, nodes, rounds;
    unsigned threads[MAX_VARIANTS];
    unsigned nthreads;
    double duration, warmup;
    const char *target, *out, *exe;
    int target_pid; /* --target-pid: sample an external server's CPU and RSS */
    char args[512];
} lg_opts;

typedef struct lg_run lg_run;
typedef struct lg_sess lg_sess;

typedef struct lg_slot {
    lg_sess *s;
    uint64_t sent_ns;
} lg_slot;

struct lg_sess {
    lg_run *run;
    uas_client *c;
    lg_slot *slots;
    unsigned index;
    uas_read_request rr;
    uas_write_request wr;
    uas_browse_request br;
    uas_read_value_id *ids;
    uas_write_value *wv;
    int32_t *vals;
    uas_browse_description bd;
};

enum { PH_CONNECT, PH_WARMUP, PH_MEASURE, PH_DRAIN };

struct lg_run {
    const lg_opts *o;
    uas_loop *loop;
    lg_sess *sess;
    int phase;
    uint64_t outstanding;
    uint64_t ops, errors;
    uas_status first_error;
    uas_hist hist;
};

static void issue(lg_slot *slot);

/* A response counts only if it carries what was asked for: one result per
 * node, each Good (and, for reads, an Int32 value). */
static uas_status check_response(const lg_opts *o, const void *resp, const uas_type *t)
{
    if (!resp)
        return UAS_BAD_NO_DATA;
    if (t == UAS_TYPE(READ_RESPONSE)) {
        const uas_read_response *r = resp;
        if (r->results_count != o->nodes)
            return UAS_BAD_UNEXPECTED_ERROR;
        for (size_t i = 0; i < r->results_count; i++)
            if ((r->results[i].has_status && uas_is_bad(r->results[i].status)) ||
                !r->results[i].value.type || r->results[i].value.type->kind != UAS_BUILTIN_INT32)
                return r->results[i].has_status ? r->results[i].status : UAS_BAD_TYPE_MISMATCH;
    } else if (t == UAS_TYPE(WRITE_RESPONSE)) {
        const uas_write_response *r = resp;
        if (r->results_count != o->nodes)
            return UAS_BAD_UNEXPECTED_ERROR;
        for (size_t i = 0; i < r->results_count; i++)
            if (uas_is_bad(r->results[i]))
                return r->results[i];
    } else if (t == UAS_TYPE(BROWSE_RESPONSE)) {
        const uas_browse_response *r = resp;
        if (r->results_count != 1 || uas_is_bad(r->results[0].status_code) ||
            r->results[0].references_count == 0)
            return UAS_BAD_UNEXPECTED_ERROR;
    } else {
        return UAS_BAD_UNEXPECTED_ERROR;
    }
    return UAS_GOOD;
}

static void on_response(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    lg_slot *slot = ud;
    lg_run *run = slot->s->run;
    if (st == UAS_GOOD)
        st = check_response(run->o, resp, t);
    run->outstanding--;
    if (run->phase == PH_MEASURE) {
        if (st == UAS_GOOD) {
            run->ops++;
            uas_hist_add(&run->hist, lg_now_ns() - slot->sent_ns);
        } else {
            if (!run->errors)
                run->first_error = st;
            run->errors++;
        }
    }
    if (run->phase == PH_WARMUP || run->phase == PH_MEASURE)
        issue(slot);
}

static void issue(lg_slot *slot)
{
    lg_sess *s = slot->s;
    const lg_opts *o = s->run->o;
    slot->sent_ns = lg_now_ns();
    uas_status st;
    switch (o->scenario) {
    case SC_WRITE:
        st = uas_client_request(s->c, &s->wr, UAS_TYPE(WRITE_REQUEST), on_response, slot);
        break;
    case SC_BROWSE:
        st = uas_client_request(s->c, &s->br, UAS_TYPE(BROWSE_REQUEST), on_response, slot);
        break;
    default:
        st = uas_client_request(s->c, &s->rr, UAS_TYPE(READ_REQUEST), on_response, slot);
        break;
    }
    if (st == UAS_GOOD) {
        s->run->outstanding++;
    } else if (s->run->phase == PH_MEASURE) {
        if (!s->run->errors)
            s->run->first_error = st;
        s->run->errors++;
    }
}

/* Requests are built once per session; the client only reads them. */
static int build_requests(lg_sess *s, const lg_opts *o)
{
    unsigned n = o->nodes;
    s->ids = calloc(n, sizeof(*s->ids));
    s->wv = calloc(n, sizeof(*s->wv));
    s->vals = calloc(n, sizeof(*s->vals));
    s->slots = calloc(o->inflight, sizeof(*s->slots));
    if (!s->ids || !s->wv || !s->vals || !s->slots)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        uint32_t id = 1001 + (s->index * 7 + i) % 100;
        s->ids[i].node_id = uas_nodeid_numeric(1, id);
        s->ids[i].attribute_id = 13;
        s->vals[i] = (int32_t)i;
        s->wv[i].node_id = s->ids[i].node_id;
        s->wv[i].attribute_id = 13;
        s->wv[i].value.has_value = true;
        uas_variant_set_scalar(&s->wv[i].value.value, &s->vals[i], UAS_TYPE(INT32));
    }
    s->rr.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_NEITHER;
    s->rr.nodes_to_read_count = n;
    s->rr.nodes_to_read = s->ids;
    s->wr.nodes_to_write_count = n;
    s->wr.nodes_to_write = s->wv;
    s->bd.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
    s->bd.browse_direction = UAS_BROWSE_DIRECTION_FORWARD;
    s->bd.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    s->bd.include_subtypes = true;
    s->bd.result_mask = 63;
    s->br.nodes_to_browse_count = 1;
    s->br.nodes_to_browse = &s->bd;
    for (unsigned i = 0; i < o->inflight; i++)
        s->slots[i].s = s;
    return 0;
}

static void free_sess(lg_sess *s)
{
    if (s->c)
        uas_client_delete(s->c);
    free(s->ids);
    free(s->wv);
    free(s->vals);
    free(s->slots);
}

/* Heap counters of the child, read through its uastack.* nodes. */
static int read_heap(uas_client *ctrl, uint64_t *bytes, uint64_t *allocs)
{
    uas_read_value_id ids[2];
    memset(ids, 0, sizeof(ids));
    ids[0].node_id = uas_nodeid_string(1, "uastack.HeapBytesAllocated");
    ids[1].node_id = uas_nodeid_string(1, "uastack.HeapAllocations");
    ids[0].attribute_id = ids[1].attribute_id = 13;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = ids;
    req.nodes_to_read_count = 2;
    uas_read_response resp;
    uint8_t mem[4096];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_status st = uas_client_call_sync(ctrl, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), &a, 10000);
    int rc = -1;
    if (st == UAS_GOOD && resp.results_count == 2 && resp.results[0].value.type &&
        resp.results[0].value.type->kind == UAS_BUILTIN_UINT64 && resp.results[1].value.type &&
        resp.results[1].value.type->kind == UAS_BUILTIN_UINT64) {
        *bytes = *(uint64_t *)resp.results[0].value.data;
        *allocs = *(uint64_t *)resp.results[1].value.data;
        rc = 0;
    }
    uas_arena_free(&a);
    return rc;
}

static void on_tick(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)w;
    (void)revents; /* only wakes the loop so the phases advance on time */
}

static void run_until(lg_run *run, uint64_t deadline_ns, const char *what, unsigned round,
                      unsigned rounds)
{
    uint64_t start = lg_now_ns(), last = 0;
    uint64_t ops0 = run->ops;
    while (lg_now_ns() < deadline_ns) {
        uas_loop_run_once(run->loop, true);
        uint64_t now = lg_now_ns();
        if (now - last > 1000000000ull) {
            last = now;
            double el = (double)(now - start) / 1e9;
            fprintf(stderr, "\rself-load %s round %u/%u: %s %.0fs/%.0fs, %.0f ops/s   ",
                    run->o->scenario_name, round, rounds, what, el,
                    (double)(deadline_ns - start) / 1e9,
                    el > 0 ? (double)(run->ops - ops0) / el : 0.0);
        }
    }
}

static int connect_all(lg_run *run, const char *url, uas_client **ctrl)
{
    const lg_opts *o = run->o;
    uas_client_config cc;
    uas_client_config_default(&cc);
    cc.endpoint_url = url;
    cc.create_session = true;
    cc.session_name = "self-load";
    cc.max_inflight = o->inflight + 4;
    for (unsigned i = 0; i < o->sessions; i++) {
        lg_sess *s = &run->sess[i];
        s->run = run;
        s->index = i;
        if (build_requests(s, o))
            return -1;
        s->c = uas_client_new(run->loop, &cc, NULL, s);
        if (!s->c || uas_client_connect(s->c) != UAS_GOOD)
            return -1;
    }
    *ctrl = uas_client_new(run->loop, &cc, NULL, NULL);
    if (!*ctrl || uas_client_connect(*ctrl) != UAS_GOOD)
        return -1;
    for (unsigned i = 0; i < o->sessions; i++)
        if (uas_client_wait_state(run->sess[i].c, UAS_CLIENT_SESSION_ACTIVE, 30000) != UAS_GOOD)
            return -1;
    return uas_client_wait_state(*ctrl, UAS_CLIENT_SESSION_ACTIVE, 30000) == UAS_GOOD ? 0 : -1;
}

/* One measured run of one variant; fills r. 0 on success. */
static int run_once(const lg_opts *o, unsigned threads, unsigned round, uas_result *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->scenario, sizeof(r->scenario), "%s", o->scenario_name);
    snprintf(r->args, sizeof(r->args), "%s", o->args);
    if (o->nthreads > 1)
        snprintf(r->variant, sizeof(r->variant), "threads=%u", threads);
    lg_child child;
    memset(&child, 0, sizeof(child));
    const char *url = o->target;
    if (!url) {
        if (lg_child_start(&child, o->exe, threads, NULL) != 0) {
            fprintf(stderr, "self-load: cannot start the server child (%s)\n", o->exe);
            return -1;
        }
        url = child.url;
    }
    r->has_server = !o->target || o->target_pid > 0;
    if (o->target && o->target_pid > 0)
        child.pid = o->target_pid; /* sampled only, never started or stopped */
    lg_run *run = calloc(1, sizeof(*run));
    int rc = -1;
    uas_client *ctrl = NULL;
    if (!run)
        goto out;
    run->o = o;
    uas_hist_init(&run->hist);
    run->loop = uas_loop_new(64u << 20);
    run->sess = calloc(o->sessions, sizeof(lg_sess));
    if (!run->loop || !run->sess)
        goto out;
    ev_timer tick;
    ev_timer_init(&tick, on_tick, 0.1, 0.1);
    ev_timer_start(uas_loop_ev(run->loop), &tick);
    fprintf(stderr, "\rself-load %s round %u/%u: connecting %u sessions to %s   ", o->scenario_name,
            round, o->rounds, o->sessions, url);
    if (connect_all(run, url, &ctrl) != 0) {
        fprintf(stderr, "\nself-load: could not establish %u sessions with %s\n", o->sessions, url);
        goto out;
    }
    run->phase = PH_WARMUP;
    for (unsigned i = 0; i < o->sessions; i++)
        for (unsigned k = 0; k < o->inflight; k++)
            issue(&run->sess[i].slots[k]);
    run_until(run, lg_now_ns() + (uint64_t)(o->warmup * 1e9), "warm-up", round, o->rounds);

    lg_proc_sample a, b;
    uint64_t heap_a = 0, heap_b = 0, allocs_a = 0, allocs_b = 0;
    bool heap_ok = !o->target && read_heap(ctrl, &heap_a, &allocs_a) == 0;
    if (r->has_server)
        lg_child_sample(&child, &a);
    uint64_t t0 = lg_now_ns();
    run->phase = PH_MEASURE;
    run_until(run, t0 + (uint64_t)(o->duration * 1e9), "measuring", round, o->rounds);
    uint64_t t1 = lg_now_ns();
    run->phase = PH_DRAIN;
    uint64_t ops = run->ops;
    if (r->has_server)
        lg_child_sample(&child, &b);
    heap_ok = heap_ok && read_heap(ctrl, &heap_b, &allocs_b) == 0;
    uint64_t drain_end = lg_now_ns() + 10000000000ull;
    while (run->outstanding > 0 && lg_now_ns() < drain_end)
        uas_loop_run_once(run->loop, true);
    fprintf(stderr, "\r%80s\r", "");

    r->duration_s = (double)(t1 - t0) / 1e9;
    r->requests = ops;
    r->errors = run->errors;
    r->throughput = (double)ops / r->duration_s;
    r->p50_ns = uas_hist_quantile(&run->hist, 0.50);
    r->p99_ns = uas_hist_quantile(&run->hist, 0.99);
    r->max_ns = run->hist.max;
    if (r->has_server && ops > 0) {
        double cpu_ns = (double)(b.cpu_ns - a.cpu_ns);
        r->server_cpu_us_per_op = cpu_ns / 1e3 / (double)ops;
        r->busy_cores = cpu_ns / (double)(t1 - t0);
        r->server_rss_kb = b.rss_kb;
        /* Starved: its threads waited for a CPU more than a quarter of the
         * time they ran. */
        r->disturbed = (double)(b.runq_ns - a.runq_ns) > 0.25 * cpu_ns;
        if (heap_ok) {
            r->server_bytes_per_op = (double)(heap_b - heap_a) / (double)ops;
            r->server_allocs_per_op = (double)(allocs_b - allocs_a) / (double)ops;
        } else {
            r->server_bytes_per_op = r->server_allocs_per_op = -1;
        }
    }
    if (run->errors)
        fprintf(stderr, "self-load: %llu operations failed, first: %s\n",
                (unsigned long long)run->errors, uas_status_name(run->first_error));
    rc = ops > 0 ? 0 : -1;
out:
    if (run) {
        if (ctrl)
            uas_client_delete(ctrl);
        for (unsigned i = 0; run->sess && i < o->sessions; i++)
            free_sess(&run->sess[i]);
        free(run->sess);
        if (run->loop)
            uas_loop_delete(run->loop);
        free(run);
    }
    if (!o->target)
        lg_child_stop(&child);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: uaserver --self-load read|write|browse [options]\n"
               "  --sessions N      concurrent sessions (10)\n"
               "  --inflight N      outstanding requests per session, closed loop (10)\n"
               "  --nodes N         values per Read/Write request (1)\n"
               "  --threads N[,M]   server event loops; a list alternates variants (1)\n"
               "  --duration S      measurement window in seconds (10)\n"
               "  --warmup S        warm-up in seconds (3)\n"
               "  --rounds N        rounds, median and range reported (1)\n"
               "  --security none   (encrypted modes arrive with the security work)\n"
               "  --target URL      drive an external server instead of a child\n"
               "  --target-pid PID  with --target: sample that process's CPU and memory\n"
               "  --out FILE        append the Markdown results to FILE\n");
}

static int parse_uint(const char *opt, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    if (!v || end == v || *end || n < lo || n > hi) {
        fprintf(stderr, "uaserver --self-load: %s takes a number from %u to %u\n", opt, lo, hi);
        return -1;
    }
    *out = (unsigned)n;
    return 0;
}

static int parse_opts(int argc, char **argv, lg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->sessions = 10;
    o->inflight = 10;
    o->nodes = 1;
    o->rounds = 1;
    o->threads[0] = 1;
    o->nthreads = 1;
    o->duration = 10;
    o->warmup = 3;
    size_t len = 0;
    for (int i = 0; i < argc && len < sizeof(o->args) - 1; i++)
        len +=
            (size_t)snprintf(o->args + len, sizeof(o->args) - len, "%s%s", i ? " " : "", argv[i]);
    if (argc < 2 || argv[1][0] == '-') {
        usage(stderr);
        return -1;
    }
    o->scenario_name = argv[1];
    if (!strcmp(argv[1], "read"))
        o->scenario = SC_READ;
    else if (!strcmp(argv[1], "write"))
        o->scenario = SC_WRITE;
    else if (!strcmp(argv[1], "browse"))
        o->scenario = SC_BROWSE;
    else {
        fprintf(stderr, "uaserver --self-load: unknown scenario '%s' (read, write, browse)\n",
                argv[1]);
        return -1;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--sessions"))
            bad = parse_uint(a, v, 1, 100000, &o->sessions);
        else if (!strcmp(a, "--inflight"))
            bad = parse_uint(a, v, 1, 10000, &o->inflight);
        else if (!strcmp(a, "--nodes"))
            bad = parse_uint(a, v, 1, 100000, &o->nodes);
        else if (!strcmp(a, "--rounds"))
            bad = parse_uint(a, v, 1, MAX_ROUNDS, &o->rounds);
        else if (!strcmp(a, "--duration") || !strcmp(a, "--warmup")) {
            unsigned s = 0;
            bad = parse_uint(a, v, !strcmp(a, "--duration") ? 1 : 0, 3600, &s);
            if (!strcmp(a, "--duration"))
                o->duration = s;
            else
                o->warmup = s;
        } else if (!strcmp(a, "--threads")) {
            o->nthreads = 0;
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", v ? v : "");
            for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
                if (o->nthreads == MAX_VARIANTS) {
                    fprintf(stderr, "uaserver --self-load: at most %d --threads variants\n",
                            MAX_VARIANTS);
                    bad = -1;
                } else {
                    bad = parse_uint(a, t, 1, 256, &o->threads[o->nthreads++]);
                }
            }
            bad = bad || o->nthreads == 0 ? -1 : 0;
        } else if (!strcmp(a, "--security")) {
            if (!v || strcmp(v, "none") != 0) {
                fprintf(stderr, "uaserver --self-load: only --security none is available in "
                                "this build (encryption comes with the security policies)\n");
                bad = -1;
            }
        } else if (!strcmp(a, "--target") && v) {
            o->target = v;
        } else if (!strcmp(a, "--target-pid")) {
            unsigned pid = 0;
            bad = parse_uint(a, v, 1, 4194304, &pid);
            o->target_pid = (int)pid;
        } else if (!strcmp(a, "--out") && v) {
            o->out = v;
        } else if (!strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "uaserver --self-load: unknown option or missing value '%s'\n", a);
            bad = -1;
        }
        if (bad)
            return -1;
        if (strcmp(a, "--help"))
            i++;
    }
    return 0;
}

static void print_summary(FILE *f, const lg_opts *o, uas_result res[][MAX_VARIANTS],
                          unsigned rounds)
{
    fprintf(f, "### Summary: %s, %u round%s (median [min–max])\n\n", o->scenario_name, rounds,
            rounds == 1 ? "" : "s");
    fprintf(f, "| server | throughput (ops/s) | p50 (µs) | p99 (µs) | server CPU/op (µs) | "
               "server heap B/op | disturbed rounds |\n|---|---|---|---|---|---|---|\n");
    for (unsigned v = 0; v < o->nthreads; v++) {
        double tp[MAX_ROUNDS], p50[MAX_ROUNDS], p99[MAX_ROUNDS], cpu[MAX_ROUNDS], b[MAX_ROUNDS];
        unsigned disturbed = 0;
        for (unsigned r = 0; r < rounds; r++) {
            tp[r] = res[r][v].throughput;
            p50[r] = (double)res[r][v].p50_ns / 1e3;
            p99[r] = (double)res[r][v].p99_ns / 1e3;
            cpu[r] = res[r][v].server_cpu_us_per_op;
            b[r] = res[r][v].server_bytes_per_op;
            disturbed += res[r][v].disturbed;
        }
        uas_stat s1, s2, s3, s4, s5;
        uas_stat_compute(tp, rounds, &s1);
        uas_stat_compute(p50, rounds, &s2);
        uas_stat_compute(p99, rounds, &s3);
        uas_stat_compute(cpu, rounds, &s4);
        uas_stat_compute(b, rounds, &s5);
        char name[96], heap[64] = "n/a", cpu_s[64] = "n/a";
        if (o->target)
            snprintf(name, sizeof(name), "%s", o->target);
        else
            snprintf(name, sizeof(name), "uaserver threads=%u", o->threads[v]);
        if (s5.min >= 0)
            snprintf(heap, sizeof(heap), "%.1f [%.1f–%.1f]", s5.median, s5.min, s5.max);
        if (res[0][v].has_server)
            snprintf(cpu_s, sizeof(cpu_s), "%.2f [%.2f–%.2f]", s4.median, s4.min, s4.max);
        fprintf(f,
                "| %s | %.0f [%.0f–%.0f] | %.0f [%.0f–%.0f] | %.0f [%.0f–%.0f] | %s | %s | %u |\n",
                name, s1.median, s1.min, s1.max, s2.median, s2.min, s2.max, s3.median, s3.min,
                s3.max, cpu_s, heap, disturbed);
    }
    fprintf(f, "\n");
}

int uas_selfload_main(int argc, char **argv, const char *exe)
{
    lg_opts o;
    int prc = parse_opts(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    o.exe = exe;
    uas_log_set_level(UAS_LOG_WARN);
    uas_run_record rec;
    uas_run_record_fill(&rec);
    static uas_result res[MAX_ROUNDS][MAX_VARIANTS];
    FILE *out = o.out ? fopen(o.out, "a") : NULL;
    if (o.out && !out) {
        fprintf(stderr, "uaserver --self-load: cannot open %s\n", o.out);
        return 2;
    }
    int failed = 0;
    for (unsigned r = 0; r < o.rounds && !failed; r++) {
        for (unsigned k = 0; k < o.nthreads && !failed; k++) {
            /* Alternate the variants, reversed every other round, so slow
             * drift of the machine does not favour one of them. */
            unsigned v = r % 2 ? o.nthreads - 1 - k : k;
            if (run_once(&o, o.threads[v], r + 1, &res[r][v]) != 0) {
                failed = 1;
                break;
            }
            uas_result_print(stdout, &res[r][v], &rec);
            if (out)
                uas_result_print(out, &res[r][v], &rec);
            fflush(stdout);
        }
    }
    if (!failed) {
        print_summary(stdout, &o, res, o.rounds);
        if (out)
            print_summary(out, &o, res, o.rounds);
    }
    if (out)
        fclose(out);
    return failed ? 1 : 0;
}
