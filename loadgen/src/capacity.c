/* `uaserver --self-load capacity`: the whole set of scenarios, run one
 * after the other against fresh child servers, summed up in the Markdown
 * tables of docs/Benchmarks.md: request throughput (none against the
 * secured variant, alternated round by round), publish and event delivery,
 * session scalability (a series of session counts, plain and encrypted,
 * each required to deliver every notification to every session) and a
 * capability matrix of sessions x subscriptions x items against the
 * server's CPU and memory. Each step is an ordinary scenario run, parsed
 * from its own argument line, so what a table row says can be reproduced
 * with the command it names. Progress goes to stderr, the tables to
 * stdout, the full result blocks to --out. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>

#include "loadgen_internal.h"

enum { MAX_ARGS = 48, MAX_STEPS = 32 };

typedef struct cap_opts {
    bool quick;
    unsigned rounds, max_sessions;
    const char *policy, *out, *exe, *threads;
    const char *server_cpus, *client_cpus; /* passed on to every step */
    const char *target, *target_pid;       /* --target: the fixed-rate row for another server */
    char args[512];
} cap_opts;

typedef struct cap_run {
    const cap_opts *c;
    const uas_run_record *rec;
    FILE *out;
    unsigned step, steps;
    bool any_failed;
    uas_result res[LG_MAX_ROUNDS][LG_MAX_VARIANTS];
    lg_opts o;
} cap_run;

static void usage(FILE *f)
{
    fprintf(f, "usage: uaserver --self-load capacity [options]\n"
               "  --quick           tiny sizes, seconds per step (a smoke run)\n"
               "  --rounds N        rounds of the request throughput rows (3; --quick: 1)\n"
               "  --max-sessions N  largest session count of the scalability series (10000)\n"
               "  --policy NAME     policy of the encrypted rows (Basic256Sha256)\n"
               "  --threads N       server event loops of every step (1)\n"
               "  --server-cpus L   processors of the child servers, e.g. 1 (not pinned)\n"
               "  --client-cpus L   processors of the load generator, e.g. 0 (not pinned)\n"
               "  --out FILE        append every result block and the tables to FILE\n"
               "  --target URL      also run the fixed-rate row against another server\n"
               "                    (ns=1;i=1001..1100 Int32, 1,000 sessions allowed)\n"
               "  --target-pid PID  that server's process, for its CPU per Read\n"
               "The tables go to stdout, progress to stderr. A full run takes about\n"
               "20 minutes on 2 cores; --out keeps the command and result block of each row.\n");
}

static int parse(int argc, char **argv, cap_opts *c)
{
    memset(c, 0, sizeof(*c));
    c->rounds = 0;
    c->max_sessions = 10000;
    c->policy = "Basic256Sha256";
    c->threads = "1";
    size_t len = 0;
    for (int i = 0; i < argc && len < sizeof(c->args) - 1; i++)
        len +=
            (size_t)snprintf(c->args + len, sizeof(c->args) - len, "%s%s", i ? " " : "", argv[i]);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        unsigned long n = v ? strtoul(v, &end, 10) : 0;
        bool num_ok = v && end != v && !*end;
        if (!strcmp(a, "--quick")) {
            c->quick = true;
            continue;
        } else if (!strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--rounds") && num_ok && n >= 1 && n <= LG_MAX_ROUNDS) {
            c->rounds = (unsigned)n;
        } else if (!strcmp(a, "--max-sessions") && num_ok && n >= 10 && n <= 1000000) {
            c->max_sessions = (unsigned)n;
        } else if (!strcmp(a, "--threads") && num_ok && n >= 1 && n <= 256) {
            c->threads = v;
        } else if (!strcmp(a, "--policy") && v) {
            if (lg_policy_check(v) != 0) {
                fprintf(stderr, "uaserver --self-load capacity: unknown security policy '%s'\n", v);
                return -1;
            }
            c->policy = v;
        } else if (!strcmp(a, "--out") && v) {
            c->out = v;
        } else if (!strcmp(a, "--target") && v) {
            c->target = v;
        } else if (!strcmp(a, "--target-pid") && num_ok && n >= 1) {
            c->target_pid = v;
        } else if ((!strcmp(a, "--server-cpus") || !strcmp(a, "--client-cpus")) && v) {
            uint64_t m;
            if (uas_cpu_list_parse(v, &m) != 0 || m == 0) {
                fprintf(stderr,
                        "uaserver --self-load capacity: %s takes a processor list such as 1, "
                        "0-1 or 0,2\n",
                        a);
                return -1;
            }
            *(!strcmp(a, "--server-cpus") ? &c->server_cpus : &c->client_cpus) = v;
        } else {
            fprintf(stderr,
                    "uaserver --self-load capacity: unknown option or bad value '%s' (see "
                    "--help)\n",
                    a);
            return -1;
        }
        i++;
    }
    if (!c->rounds)
        c->rounds = c->quick ? 1 : 3;
    return 0;
}

/* Parses "scenario opt val ..." plus the shared options into r->o and runs
 * it; 0 when it ran (r->res holds the rounds). */
static int step(cap_run *r, const char *title, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int step(cap_run *r, const char *title, const char *fmt, ...)
{
    char line[400], shared[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    int n =
        snprintf(shared, sizeof(shared), " --threads %s --policy %s", r->c->threads, r->c->policy);
    if (r->c->server_cpus && n > 0 && (size_t)n < sizeof(shared))
        n += snprintf(shared + n, sizeof(shared) - (size_t)n, " --server-cpus %s",
                      r->c->server_cpus);
    if (r->c->client_cpus && n > 0 && (size_t)n < sizeof(shared))
        snprintf(shared + n, sizeof(shared) - (size_t)n, " --client-cpus %s", r->c->client_cpus);
    if (strlen(line) + strlen(shared) < sizeof(line))
        strcat(line, shared);
    char *argv[MAX_ARGS];
    int argc = 0;
    argv[argc++] = "--self-load";
    for (char *t = strtok(line, " "); t && argc < MAX_ARGS - 1; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    r->step++;
    fprintf(stderr, "\ncapacity step %u/%u: %s\n", r->step, r->steps, title);
    if (lg_parse_opts(argc, argv, &r->o) != 0)
        return -1;
    r->o.exe = r->c->exe;
    memset(r->res, 0, sizeof(r->res));
    FILE *blocks[2] = {r->out, NULL};
    bool verdict_failed = false;
    if (lg_run_rounds(&r->o, r->res, r->rec, blocks, &verdict_failed) != 0) {
        fprintf(stderr, "capacity step %u (%s) could not run\n", r->step, title);
        r->any_failed = true;
        return -1;
    }
    if (r->out)
        lg_print_summary(r->out, &r->o, r->res);
    if (verdict_failed)
        r->any_failed = true;
    return 0;
}

static double f_tp(const uas_result *x)
{
    return x->throughput;
}
static double f_p50(const uas_result *x)
{
    return (double)x->p50_ns / 1e3;
}
static double f_p99(const uas_result *x)
{
    return (double)x->p99_ns / 1e3;
}

/* ---- the sections ---- */

static void throughput(cap_run *r, FILE *f)
{
    fprintf(f,
            "## Request throughput\n\n"
            "Closed loop, server CPU and heap from the child only; none and %s "
            "SignAndEncrypt alternate round by round; median [min–max] of %u round%s.\n\n"
            "| scenario | security | requests/s | p50 (µs) | p99 (µs) | server CPU/op (µs) | "
            "CPU/op ÷ None, paired | server heap B/op | disturbed rounds |\n"
            "|---|---|--:|--:|--:|--:|--:|--:|--:|\n",
            r->c->policy, r->c->rounds, r->c->rounds == 1 ? "" : "s");
    static const char *const scenarios[] = {"read", "write", "browse"};
    for (int i = 0; i < 3; i++) {
        const char *size = r->c->quick ? "--sessions 2 --inflight 4 --duration 1 --warmup 0"
                                       : "--sessions 10 --inflight 10 --duration 8 --warmup 2";
        if (step(r, scenarios[i], "%s %s --security none,encrypt --rounds %u", scenarios[i], size,
                 r->c->rounds) != 0)
            continue;
        for (unsigned v = 0; v < r->o.nvariants; v++) {
            char tp[128], p50[128], p99[128], cpu[128], heap[128];
            unsigned disturbed = 0;
            for (unsigned k = 0; k < r->o.rounds; k++)
                disturbed += r->res[k][v].disturbed;
            lg_stat_text(tp, sizeof(tp), r->res, r->o.rounds, v, f_tp, "%.0f");
            lg_stat_text(p50, sizeof(p50), r->res, r->o.rounds, v, f_p50, "%.0f");
            lg_stat_text(p99, sizeof(p99), r->res, r->o.rounds, v, f_p99, "%.0f");
            lg_stat_text(cpu, sizeof(cpu), r->res, r->o.rounds, v, lg_get_cpu, "%.2f");
            lg_stat_text(heap, sizeof(heap), r->res, r->o.rounds, v, lg_get_heap, "%.1f");
            char ratio[64];
            lg_cpu_ratio_text(ratio, sizeof(ratio), r->res, r->o.rounds, v);
            fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %u |\n", scenarios[i],
                    r->o.variants[v].security == LG_SEC_NONE ? "None" : "SignAndEncrypt", tp, p50,
                    p99, cpu, ratio, heap, disturbed);
        }
        fflush(f);
    }
    fprintf(f, "\n");
}

/* Open loop: many sessions each polling at a fixed rate, the load plants
 * offer (one request per session every 20 ms), against uaserver and, with
 * --target, another server driven by the same generator. */
static void fixed_rate(cap_run *r, FILE *f)
{
    bool q = r->c->quick;
    /* --quick: slow enough that a stall of a shared machine (up to about
     * 100 ms) does not make requests late. */
    unsigned sessions = q ? 10 : 1000, rate = q ? 100 : 50000;
    fprintf(f,
            "## Fixed-rate Reads\n\n"
            "Open loop: %u sessions, %u Reads/s in all (one per session every %u ms), at most 4 "
            "in flight per session; latency from the send; one round%s.\n\n"
            "| server | sessions | offered Reads/s | answered Reads/s | p50 (µs) | p99 (µs) | "
            "server CPU/Read (µs) | server busy cores | rate kept |\n"
            "|---|--:|--:|--:|--:|--:|--:|--:|---|\n",
            sessions, rate, sessions * 1000 / rate, r->c->target ? " per server" : "");
    for (int peer = 0; peer < (r->c->target ? 2 : 1); peer++) {
        bool any_failed_before = r->any_failed;
        char extra[300] = "";
        if (peer)
            snprintf(extra, sizeof(extra), " --target %s%s%s", r->c->target,
                     r->c->target_pid ? " --target-pid " : "",
                     r->c->target_pid ? r->c->target_pid : "");
        if (step(r, peer ? "fixed rate (target)" : "fixed rate",
                 "read --sessions %u --rate %u --inflight 4 %s%s", sessions, rate,
                 q ? "--duration 3 --warmup 1" : "--duration 8 --warmup 3", extra) != 0)
            continue;
        /* A rate the machine cannot keep is this table's finding (its
         * "rate kept" column), not a failed run of the capacity series. */
        r->any_failed = any_failed_before;
        const uas_result *x = &r->res[0][0];
        char cpu[32] = "n/a", cores[32] = "n/a";
        if (x->has_server) {
            snprintf(cpu, sizeof(cpu), "%.2f", x->server_cpu_us_per_op);
            snprintf(cores, sizeof(cores), "%.2f", x->busy_cores);
        }
        fprintf(f, "| %s | %u | %u | %.0f | %.0f | %.0f | %s | %s | %s |\n",
                peer ? r->c->target : "uaserver", sessions, rate, x->throughput,
                (double)x->p50_ns / 1e3, (double)x->p99_ns / 1e3, cpu, cores,
                x->rate_kept ? "yes" : "**no** (see the result block)");
        fflush(f);
    }
    fprintf(f, "\n");
}

static void delivery_row(cap_run *r, FILE *f, const char *what, const char *shape)
{
    const uas_result *x = &r->res[0][0];
    bool cnt = r->o.scenario == SC_COUNTERS;
    char deliv[96];
    if (cnt)
        snprintf(deliv, sizeof(deliv), "worst item %.2f %% of samples", x->min_sample_pct);
    else
        snprintf(deliv, sizeof(deliv), "%.2f %% (missed %llu)", x->delivery_pct,
                 (unsigned long long)x->notif_missed);
    char lat[64] = "–";
    if (!cnt)
        snprintf(lat, sizeof(lat), "%.0f / %.0f", (double)x->p50_ns / 1e6, (double)x->p99_ns / 1e6);
    fprintf(f, "| %s | %s | %.0f | %s | %s | %.2f | %.1f | %.2f | %s |\n", what, shape,
            x->notif_per_s, deliv, lat, x->server_cpu_us_per_op, x->server_bytes_per_op,
            x->busy_cores, x->pass ? "yes" : "**no**");
}

static void delivery(cap_run *r, FILE *f)
{
    fprintf(f, "## Publish and event delivery\n\n"
               "One round each. Latency: write (or event report) to the notification's "
               "arrival.\n\n"
               "| scenario | shape | notif/s | delivery | latency p50 / p99 (ms) | "
               "server CPU/notif (µs) | server heap B/notif | busy cores | passed |\n"
               "|---|---|--:|---|--:|--:|--:|--:|---|\n");
    bool q = r->c->quick;
    if (step(r, "sub", "sub --sessions %u --nodes 10 --pub 500 --write-interval 700 %s",
             q ? 3 : 200, q ? "--duration 2 --warmup 1" : "--duration 20 --warmup 3") == 0)
        delivery_row(r, f, "sub",
                     q ? "3 sessions x 10 items, writes every 700 ms"
                       : "200 sessions x 10 items, writes every 700 ms");
    if (step(r, "sub (fast writers)",
             "sub --sessions %u --nodes 100 --writers 2 --queue-size 10 --pub 200 "
             "--write-interval 50 %s",
             q ? 2 : 20, q ? "--duration 2 --warmup 1" : "--duration 20 --warmup 3") == 0)
        delivery_row(r, f, "sub",
                     q ? "2 sessions x 100 items, 2 writers every 50 ms, queue 10"
                       : "20 sessions x 100 items, 2 writers every 50 ms, queue 10");
    if (step(r, "events", "events --sessions %u --event-rate %u --pub 500 %s", q ? 3 : 100,
             q ? 200 : 1000, q ? "--duration 2 --warmup 1" : "--duration 20 --warmup 3") == 0)
        delivery_row(r, f, "events",
                     q ? "3 sessions, 200 events/s, where clause"
                       : "100 sessions, 1,000 events/s, where clause");
    if (step(r, "counters", "counters --nodes %u --sampling 100 --pub 1000 %s", q ? 200 : 50000,
             q ? "--duration 3 --warmup 1" : "--duration 20 --warmup 5") == 0)
        delivery_row(r, f, "counters",
                     q ? "200 data-source items sampled every 100 ms"
                       : "50,000 data-source items sampled every 100 ms");
    fprintf(f, "\n");
}

static void scalability(cap_run *r, FILE *f)
{
    fprintf(f, "## Session scalability\n\n"
               "Each session: its own secure channel, one subscription (1000 ms) and one item on a "
               "shared node written every 500 ms; every session must receive every change for the "
               "whole window. A series stops at its first failure.\n\n"
               "| sessions | security | established | set-up rate (sessions/s) | server CPU per "
               "set-up (µs) | every session got every notification | sessions with drops | missed "
               "| server KiB/session | server RSS (MiB) |\n"
               "|--:|---|--:|--:|--:|---|--:|--:|--:|--:|\n");
    unsigned m = r->c->max_sessions;
    unsigned plain[] = {1000, 5000, m}, enc[] = {1000, m};
    if (r->c->quick) {
        plain[0] = 20, plain[1] = 40, plain[2] = 60;
        enc[0] = 10, enc[1] = 20;
    }
    for (int sec = 0; sec < 2; sec++) {
        unsigned *counts = sec ? enc : plain, n = sec ? 2 : 3, last = 0;
        for (unsigned i = 0; i < n; i++) {
            if (counts[i] <= last || counts[i] > m)
                continue;
            last = counts[i];
            char title[64];
            snprintf(title, sizeof(title), "sessions %u %s", counts[i], sec ? "encrypt" : "none");
            if (step(r, title, "sessions --sessions %u --security %s %s", counts[i],
                     sec ? "encrypt" : "none",
                     r->c->quick ? "--pub 200 --write-interval 100 --duration 2 --warmup 1"
                                 : "--duration 60 --warmup 5") != 0)
                break;
            const uas_result *x = &r->res[0][0];
            fprintf(f, "| %u | %s | %u | %.0f | %.0f | %s | %u | %llu | %.1f | %.1f |\n",
                    x->sessions_target, sec ? "SignAndEncrypt" : "None", x->sessions_ready,
                    x->session_rate, x->server_cpu_us_per_session, x->pass ? "yes" : "**no**",
                    x->sessions_with_drops, (unsigned long long)x->notif_missed,
                    x->rss_per_session_kb, (double)x->server_rss_kb / 1024.0);
            fflush(f);
            if (!x->pass)
                break;
        }
    }
    fprintf(f, "\n");
}

static void matrix(cap_run *r, FILE *f)
{
    fprintf(f, "## Capability matrix\n\n"
               "sessions x subscriptions x items on the 100 contract nodes, every node written "
               "once a second by one writer session; publishing 1000 ms (--quick: 200 ms), "
               "queue 1.\n\n"
               "| sessions | subs/session | items/sub | items | notif/s | delivery | server busy "
               "cores | server CPU/notif (µs) | server RSS (MiB) | server bytes/item | passed |\n"
               "|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|\n");
    static const unsigned full[][3] = {{10, 1, 100},  {100, 1, 100},  {1000, 1, 10},
                                       {100, 10, 10}, {10, 10, 1000}, {1, 1, 50000}};
    static const unsigned quick[][3] = {{2, 1, 10}, {4, 2, 5}};
    const unsigned(*shapes)[3] = r->c->quick ? quick : full;
    size_t n = r->c->quick ? sizeof(quick) / sizeof(quick[0]) : sizeof(full) / sizeof(full[0]);
    for (size_t i = 0; i < n; i++) {
        char title[64];
        snprintf(title, sizeof(title), "matrix %ux%ux%u", shapes[i][0], shapes[i][1], shapes[i][2]);
        if (step(r, title,
                 "sub --sessions %u --subs %u --nodes %u --writers 1 --write-interval 1000 %s",
                 shapes[i][0], shapes[i][1], shapes[i][2],
                 r->c->quick ? "--pub 200 --duration 2 --warmup 1" : "--duration 15 --warmup 3") !=
            0)
            continue;
        const uas_result *x = &r->res[0][0];
        fprintf(f, "| %u | %u | %u | %u | %.0f | %.2f %% | %.2f | %.2f | %.1f | %.0f | %s |\n",
                shapes[i][0], shapes[i][1], shapes[i][2], x->items, x->notif_per_s, x->delivery_pct,
                x->busy_cores, x->server_cpu_us_per_op, (double)x->server_rss_kb / 1024.0,
                x->rss_per_item_b, x->pass ? "yes" : "**no**");
        fflush(f);
    }
    fprintf(f, "\n");
}

int lg_capacity_main(int argc, char **argv, const char *exe)
{
    static cap_run run; /* the result arrays are large */
    cap_opts c;
    int prc = parse(argc, argv, &c);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    c.exe = exe;
    uas_log_set_level(UAS_LOG_WARN);
    unsigned long fds = lg_raise_fd_limit();
    uas_run_record rec;
    uas_run_record_fill(&rec);
    uas_run_record_calibrate(&rec);
    memset(&run, 0, sizeof(run));
    run.c = &c;
    run.rec = &rec;
    run.steps = 3 + (c.target ? 2 : 1) + 4 + 5 + (c.quick ? 2 : 6);
    if (c.out && !(run.out = fopen(c.out, "a"))) {
        fprintf(stderr, "uaserver --self-load capacity: cannot open %s\n", c.out);
        return 2;
    }
    FILE *outs[2] = {stdout, run.out};
    char speed[160];
    uas_run_record_crypto_text(&rec, speed, sizeof(speed));
    for (int i = 0; i < 2; i++)
        if (outs[i])
            fprintf(outs[i],
                    "# uastack capacity (`%s`)\n\n"
                    "| run record | |\n|---|---|\n| commit | %s |\n| CPU | %s x%u |\n"
                    "| crypto speed (one core) | %s |\n"
                    "| kernel | %s |\n| compiler, flags | %s `%s` |\n| date | %s |\n"
                    "| descriptor limit | %lu |\n\n",
                    c.args, rec.commit, rec.cpu, rec.cpus, speed, rec.kernel, rec.compiler,
                    rec.flags, rec.date, fds);
    /* Each section prints its table as soon as its steps are done, to
     * stdout (and --out, after the result blocks of its steps). */
    void (*sections[])(cap_run *, FILE *) = {throughput, fixed_rate, delivery, scalability, matrix};
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (!mem)
            return 1;
        sections[i](&run, mem);
        fclose(mem);
        fputs(buf, stdout);
        fflush(stdout);
        if (run.out) {
            fputs(buf, run.out);
            fflush(run.out);
        }
        free(buf);
    }
    fprintf(stderr, "\ncapacity: %u steps done%s\n", run.step,
            run.any_failed ? "; at least one step FAILED its verdict or could not run" : "");
    if (run.out)
        fclose(run.out);
    return run.any_failed ? 1 : 0;
}
