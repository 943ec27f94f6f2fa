/* Soak: many short client lives against one uaserver, and the server's
 * resident memory (RSS) sampled as they go. It must stay flat: whatever a
 * connection, a session or a request takes has to come back.
 *
 * The program starts `uaserver --contract` on 127.0.0.1 with an ephemeral
 * port (its log goes to a file, from which the port is read) and runs two
 * phases with the client library (client/include):
 *   orderly: connect, CreateSession, ActivateSession, Read ns=1;i=1001,
 *            CloseSession + CloseSecureChannel (uas_client_disconnect);
 *   abrupt:  the same, but the client is deleted (its socket closed with no
 *            CloseSession and no CLO) at a random point: right after the
 *            TCP connect was started, once the channel is open, once
 *            CreateSession is answered (never activated), once the session
 *            is active, with a Read in flight, or after the Read.
 * RSS comes from /proc/PID/statm every --sample cycles (progress on
 * stderr). The verdict: after --warmup cycles of each phase, no sample may
 * exceed the RSS at the end of the warm-up by more than --limit-mib.
 * Prints the samples and the verdict as Markdown on stdout; exits 1 on FAIL.
 *
 * Abandoned sessions live until their timeout: the server is started with
 * a configuration (written next to its log) whose session timeout floor and
 * activation deadline are 1 s, so the abrupt phase's steady state is
 * reached within the warm-up instead of filling the session table, and
 * whose cap of unactivated sessions per client address is lifted (every
 * cycle comes from 127.0.0.1: the default of 128 refuses CreateSession
 * once a second's abandoned sessions pass it, as it should against one
 * flooding address). Every other setting is the default.
 *
 *   soak --server PATH [--cycles N] [--abrupt N] [--sample N] [--warmup N]
 *        [--limit-mib M] [--seed S] [--dir DIR] */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ua/client.h>
#include <ua/log.h>
#include <ua/net.h>

#ifndef UAS_BENCH_COMMIT
#define UAS_BENCH_COMMIT "unknown"
#endif
#ifndef UAS_BENCH_FLAGS
#define UAS_BENCH_FLAGS ""
#endif

enum { MAX_SAMPLES = 4096, WAIT_MS = 5000 };

typedef struct sample {
    const char *phase;
    unsigned long cycle;
    double rss_mib;
    unsigned long failed;
} sample;

static sample samples[MAX_SAMPLES];
static unsigned long cut_failed[6], cut_runs[6]; /* abrupt: per cut point */
static size_t nsamples;
static pid_t server_pid;
static char url[128];
static uas_loop *loop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rss_mib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long size = 0, resident = 0;
    if (!f || fscanf(f, "%lu %lu", &size, &resident) != 2) {
        fprintf(stderr, "soak: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

/* Starts the server; its log goes to DIR/uaserver.log, where the port is
 * read from the "listening on" line. */
static void start_server(const char *server, const char *dir)
{
    char conf[512], log[512];
    snprintf(conf, sizeof(conf), "%s/soak.ini", dir);
    snprintf(log, sizeof(log), "%s/uaserver.log", dir);
    FILE *c = fopen(conf, "w");
    if (!c) {
        perror(conf);
        exit(2);
    }
    fputs("[server]\nbind_address = 127.0.0.1\nport = 0\n"
          "[session]\nmin_session_timeout_ms = 1000\nactivation_timeout_ms = 1000\n"
          "max_unactivated_per_address = 1000000\n",
          c);
    fclose(c);
    unlink(log);
    server_pid = fork();
    if (server_pid == 0) {
        FILE *l = freopen(log, "w", stdout);
        if (!l || dup2(fileno(stdout), 2) < 0)
            _exit(127);
        execl(server, server, "--contract", "--config", conf, "--log-level", "info", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        usleep(50000);
        FILE *f = fopen(log, "r");
        char line[1024];
        while (f && fgets(line, sizeof(line), f)) {
            char *p = strstr(line, "listening on ");
            unsigned port;
            char *colon = p ? strchr(p + 13, ':') : NULL;
            if (colon && sscanf(colon + 1, "%u", &port) == 1 && port) {
                snprintf(url, sizeof(url), "opc.tcp://127.0.0.1:%u", port);
                fclose(f);
                return;
            }
        }
        if (f)
            fclose(f);
        if (waitpid(server_pid, NULL, WNOHANG) == server_pid)
            break;
    }
    fprintf(stderr, "soak: the server did not start (see %s)\n", log);
    exit(2);
}

typedef struct waiter {
    bool done;
    uas_status status;
} waiter;

static void on_answer(uas_client *c, void *ud, uas_status status, const void *resp,
                      const uas_type *t)
{
    (void)c, (void)resp, (void)t;
    waiter *w = ud;
    w->done = true;
    w->status = status;
}

static uas_status wait_answer(waiter *w)
{
    double end = now_s() + WAIT_MS / 1000.0;
    while (!w->done && now_s() < end)
        uas_loop_run_once(loop, true);
    return w->done ? w->status : UAS_BAD_TIMEOUT;
}

static uas_status read_one(uas_client *c, waiter *w)
{
    static uas_read_value_id rv;
    rv.node_id = uas_nodeid_numeric(1, 1001);
    rv.attribute_id = 13;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    memset(w, 0, sizeof(*w));
    return uas_client_request(c, &req, UAS_TYPE(READ_REQUEST), on_answer, w);
}

static uas_client *new_client(bool session)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = url;
    cfg.create_session = session;
    cfg.session_timeout_ms = 1000;
    cfg.request_timeout_ms = WAIT_MS;
    uas_client *c = uas_client_new(loop, &cfg, NULL, NULL);
    if (!c) {
        fprintf(stderr, "soak: out of memory\n");
        exit(2);
    }
    return c;
}

/* One orderly life; false on any failure. */
static bool orderly(void)
{
    uas_client *c = new_client(true);
    bool ok = uas_client_connect(c) == UAS_GOOD &&
              uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, WAIT_MS) == UAS_GOOD;
    waiter w;
    ok = ok && read_one(c, &w) == UAS_GOOD && wait_answer(&w) == UAS_GOOD;
    uas_client_disconnect(c);
    if (uas_client_wait_state(c, UAS_CLIENT_CLOSED, WAIT_MS) != UAS_GOOD ||
        uas_client_get_reason(c) != UAS_GOOD)
        ok = false;
    uas_client_delete(c);
    return ok;
}

/* One life cut short at point (0..5); false when a step before the cut
 * failed. */
static bool abrupt(unsigned point)
{
    uas_client *c = new_client(point >= 3);
    bool ok = uas_client_connect(c) == UAS_GOOD;
    waiter w;
    switch (point) {
    case 0: /* the TCP connect is under way */
        break;
    case 1: /* channel open, no session */
        ok = ok && uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, WAIT_MS) == UAS_GOOD;
        break;
    case 2: { /* CreateSession answered, never activated */
        ok = ok && uas_client_wait_state(c, UAS_CLIENT_CHANNEL_OPEN, WAIT_MS) == UAS_GOOD;
        uas_create_session_request cs;
        memset(&cs, 0, sizeof(cs));
        cs.client_description.application_uri = uas_string_from("urn:uastack:soak");
        cs.client_description.application_type = 1;
        cs.endpoint_url = uas_string_from(url);
        cs.session_name = uas_string_from("soak");
        cs.requested_session_timeout = 1000;
        /* The client library sends session-less requests other than
         * discovery only with a token set; CreateSession ignores it. */
        cs.request_header.authentication_token = uas_nodeid_numeric(0, 1);
        memset(&w, 0, sizeof(w));
        ok = ok &&
             uas_client_request(c, &cs, UAS_TYPE(CREATE_SESSION_REQUEST), on_answer, &w) ==
                 UAS_GOOD &&
             wait_answer(&w) == UAS_GOOD;
        break;
    }
    case 3: /* session active */
        ok = ok && uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, WAIT_MS) == UAS_GOOD;
        break;
    case 4: /* a Read in flight */
        ok = ok && uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, WAIT_MS) == UAS_GOOD &&
             read_one(c, &w) == UAS_GOOD;
        if (ok) /* let it reach the socket */
            uas_loop_run_once(loop, false);
        break;
    default: /* after the Read */
        ok = ok && uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, WAIT_MS) == UAS_GOOD &&
             read_one(c, &w) == UAS_GOOD && wait_answer(&w) == UAS_GOOD;
        break;
    }
    uas_client_delete(c); /* socket closed: no CloseSession, no CLO */
    uas_loop_run_once(loop, false);
    return ok;
}

static void record(const char *phase, unsigned long cycle, unsigned long failed)
{
    if (nsamples == MAX_SAMPLES)
        return;
    sample *s = &samples[nsamples++];
    s->phase = phase;
    s->cycle = cycle;
    s->rss_mib = rss_mib(server_pid);
    s->failed = failed;
    fprintf(stderr, "soak: %-7s %7lu cycles  RSS %7.1f MiB  failed %lu\n", phase, cycle, s->rss_mib,
            failed);
}

typedef struct verdict {
    double base, max, min, last;
    bool pass;
    double secs;
    unsigned long failed;
} verdict;

static verdict run_phase(const char *phase, bool cut, unsigned long cycles, unsigned long every,
                         unsigned long warmup, double limit)
{
    verdict v = {0};
    unsigned long failed = 0;
    double t0 = now_s();
    record(phase, 0, 0);
    for (unsigned long i = 1; i <= cycles; i++) {
        unsigned point = (unsigned)(random() % 6);
        bool ok = cut ? abrupt(point) : orderly();
        if (cut) {
            cut_runs[point]++;
            cut_failed[point] += !ok;
        }
        if (!ok)
            failed++;
        if (i % every == 0 || i == cycles) {
            record(phase, i, failed);
            double r = samples[nsamples - 1].rss_mib;
            if (i == warmup)
                v.base = v.min = v.max = r;
            else if (i > warmup) {
                v.max = r > v.max ? r : v.max;
                v.min = r < v.min ? r : v.min;
            }
            v.last = r;
        }
    }
    v.secs = now_s() - t0;
    v.failed = failed;
    v.pass = v.max - v.base <= limit;
    return v;
}

static unsigned long arg_ul(int argc, char **argv, const char *name, unsigned long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return strtoul(argv[i + 1], NULL, 10);
    return def;
}

static const char *arg_s(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return def;
}

int main(int argc, char **argv)
{
    const char *server = arg_s(argc, argv, "--server", NULL);
    if (!server) {
        fprintf(stderr, "usage: soak --server PATH [--cycles N] [--abrupt N] [--sample N] "
                        "[--warmup N] [--limit-mib M] [--seed S] [--dir DIR]\n");
        return 2;
    }
    unsigned long cycles = arg_ul(argc, argv, "--cycles", 100000);
    unsigned long abrupt_cycles = arg_ul(argc, argv, "--abrupt", cycles);
    unsigned long every = arg_ul(argc, argv, "--sample", 5000);
    unsigned long warmup = arg_ul(argc, argv, "--warmup", 10000);
    double limit = (double)arg_ul(argc, argv, "--limit-mib", 8);
    unsigned long seed = arg_ul(argc, argv, "--seed", 1);
    const char *dir = arg_s(argc, argv, "--dir", "/tmp");
    if (!every || warmup % every || warmup >= cycles || warmup >= abrupt_cycles) {
        fprintf(stderr, "soak: --warmup must be a multiple of --sample, below the cycles\n");
        return 2;
    }
    srandom((unsigned)seed);
    signal(SIGPIPE, SIG_IGN);
    uas_log_set_level(UAS_LOG_ERROR);
    start_server(server, dir);
    loop = uas_loop_new(16u << 20);
    fprintf(stderr, "soak: server pid %d at %s\n", (int)server_pid, url);
    verdict o = run_phase("orderly", false, cycles, every, warmup, limit);
    verdict a = run_phase("abrupt", true, abrupt_cycles, every, warmup, limit);
    double end_rss = rss_mib(server_pid);
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    uas_loop_delete(loop);

    struct utsname u;
    uname(&u);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("Run: commit %s, %s %s, %ld CPUs, flags `%s`, seed %lu, server `%s --contract` "
           "(session timeout floor and activation deadline 1 s, no per-address cap of unactivated "
           "sessions)\n\n",
           UAS_BENCH_COMMIT, u.sysname, u.machine, cpus, UAS_BENCH_FLAGS, seed, server);
    printf("| phase | cycles | RSS (MiB) | failed cycles |\n|---|--:|--:|--:|\n");
    for (size_t i = 0; i < nsamples; i++)
        printf("| %s | %lu | %.1f | %lu |\n", samples[i].phase, samples[i].cycle,
               samples[i].rss_mib, samples[i].failed);
    printf("\n| phase | cycles | time (s) | cycles/s | RSS after warm-up (MiB) | max after (MiB) "
           "| growth (MiB) | bytes per cycle | failed | verdict |\n"
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    verdict *vs[2] = {&o, &a};
    unsigned long ns[2] = {cycles, abrupt_cycles};
    for (int i = 0; i < 2; i++) {
        const verdict *v = vs[i];
        /* From the warm-up's end to the last sample; RSS moves in pages. */
        double per = (v->last - v->base) * 1048576.0 / (double)(ns[i] - warmup);
        printf("| %s | %lu | %.1f | %.0f | %.1f | %.1f | %+.1f | %+.1f | %lu | %s |\n",
               i ? "abrupt" : "orderly", ns[i], v->secs, (double)ns[i] / v->secs, v->base, v->max,
               v->max - v->base, per, v->failed, v->pass ? "PASS" : "FAIL");
    }
    static const char *const points[6] = {
        "TCP connect under way", "channel open",   "session created, not activated",
        "session active",        "Read in flight", "after the Read"};
    printf("\n| abrupt: cut | cycles | failed before the cut |\n|---|--:|--:|\n");
    for (int i = 0; i < 6; i++)
        printf("| %s | %lu | %lu |\n", points[i], cut_runs[i], cut_failed[i]);
    printf("\nServer RSS at the end: %.1f MiB. Verdict (flat within %.0f MiB after warm-up of "
           "%lu cycles): **%s**\n",
           end_rss, limit, warmup, o.pass && a.pass ? "PASS" : "FAIL");
    return o.pass && a.pass ? 0 : 1;
}
