/* uaserver: the OPC UA server program. Runs on an embedded default
 * configuration; a config file and flags override it (flags win). */
#define _GNU_SOURCE
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <unistd.h>

#include <ua/loadgen.h>
#include <ua/mem.h>
#include <ua/net.h>

#include "app.h"
#include "config.h"

static uas_server *running;

static void on_signal(int sig)
{
    (void)sig;
    if (running)
        uas_server_request_stop(running);
}

/* The program, unlike the library, may raise its own soft descriptor limit
 * (often 1024) up to the hard one, as far as max_connections needs; the
 * server lowers max_connections to whatever limit remains. */
static void raise_nofile(const uas_server_config *cfg)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_connections + 64 + 4 * 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: uaserver [options]\n"
               "  --config FILE        INI configuration (see docs/Configuration.md)\n"
               "  --port N             TCP port (default 4840, 0 = ephemeral)\n"
               "  --bind ADDR          listen address (default 0.0.0.0)\n"
               "  --hostname NAME      host name in advertised endpoint URLs\n"
               "  --threads N          event loops (default: one per core)\n"
               "  --io-backend B       auto, epoll or io_uring: how sockets are read and\n"
               "                       written (default auto: io_uring when available)\n"
               "  --nodeset FILE       load a NodeSet2 information model (repeatable, any\n"
               "                       order; added to the nodesets key of the config)\n"
               "  --log-level L        error, warn, info or debug (default info)\n"
               "  --contract           benchmark contract: namespace urn:o6:benchmark:server,\n"
               "                       BenchmarkValue0..99 at ns=1;i=1001..1100\n"
               "  --array-sizes N,...  contract Int32 arrays at ns=1;i=2001+k\n"
               "  --counters N         contract UInt64 counters at ns=1;i=100001.., advanced\n"
               "                       by every read (each sample of a monitored item)\n"
               "  --event-rate N       report N BaseEventType events per second from\n"
               "                       ns=1;s=Demo (SourceName uastack.EventSource), counted\n"
               "                       in ns=1;s=uastack.EventsReported\n"
               "  --security LIST      offered endpoints, Policy[:Mode],... or None\n"
               "                       (default: None and every RSA policy in Sign and\n"
               "                       SignAndEncrypt; --contract: None)\n"
               "  --pki DIR            certificate store (default uastack-pki; --contract: a\n"
               "                       temporary one)\n"
               "  --users FILE         users file (default DIR/users)\n"
               "  --certificate FILE   application certificate (DER/PEM) instead of the store's\n"
               "  --private-key FILE   its private key (DER/PEM)\n"
               "  --trust-certificate FILE  add a certificate to the trusted list on start\n"
               "  --key-bits N         RSA key size of a certificate created on first start\n"
               "  --no-anonymous       refuse anonymous sessions\n"
               "  --allow-deprecated   allow Basic256 in --security\n"
               "  --auto-accept        LAB ONLY: accept untrusted client certificates\n"
               "  --print-config       print the effective configuration and exit\n"
               "  --version, --help\n"
               "load generator (the server measured in a child process; --self-load --help):\n"
               "  --self-load read|write|browse|sub|sessions|counters|events [options]\n"
               "  --self-load capacity [options]   every table of docs/Benchmarks.md\n");
}

/* A URL of this server for a client on this machine: the bound address,
 * or the loopback address of its family for a wildcard bind. */
static void local_url(const char *bind, uint16_t port, char *out, size_t len)
{
    if (!bind || !*bind || !strcmp(bind, "0.0.0.0"))
        bind = "127.0.0.1";
    else if (!strcmp(bind, "::"))
        bind = "::1";
    bool v6 = strchr(bind, ':') != NULL;
    snprintf(out, len, "opc.tcp://%s%s%s:%u", v6 ? "[" : "", bind, v6 ? "]" : "", port);
}

static int parse_u32(const char *opt, const char *v, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    if (!v || end == v || *end || v[0] == '-' || n > max) {
        fprintf(stderr, "uaserver: %s needs a number from 0 to %u\n", opt, max);
        return -1;
    }
    *out = (uint32_t)n;
    return 0;
}

static int parse_sizes(const char *v, uint32_t *sizes, size_t *n)
{
    *n = 0;
    const char *p = v;
    while (p && *p) {
        char *end;
        unsigned long long k = strtoull(p, &end, 10);
        if (end == p || k == 0 || k > 10000000 || *n == 16 || (*end && *end != ',')) {
            fprintf(stderr, "uaserver: --array-sizes takes up to 16 sizes 1..10000000, "
                            "comma-separated\n");
            return -1;
        }
        sizes[(*n)++] = (uint32_t)k;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The temporary store of a contract server goes with the server. */
static void remove_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool is_none(const char *security)
{
    return !security || !strcmp(security, "None") || !*security;
}

/* The options of one start: the configuration (file, then flags) and what
 * only the program uses. */
typedef struct app_opts {
    uas_server_config cfg;
    uas_config_file *file;
    bool contract, print_config;
    uint32_t sizes[16];
    size_t nsizes;
    uint32_t ncounters, event_rate;
    char *nodesets; /* the file's list and every --nodeset, when any flag gave one */
} app_opts;

static void app_opts_free(app_opts *o)
{
    free(o->nodesets);
    o->nodesets = NULL;
    uas_server_config_file_free(o->file);
    o->file = NULL;
}

/* 0: go on; 1: done (help, version); 2: bad options, said on stderr. Run
 * again on SIGHUP, so it must have no effect but on o. */
static int parse_options(int argc, char **argv, app_opts *o)
{
    uas_server_config *cfg = &o->cfg;
    memset(o, 0, sizeof(*o));
    uas_server_config_default(cfg);
    /* NULL: not set by the file nor a flag (defaults decided below). */
    cfg->security = NULL;
    cfg->pki_dir = NULL;
    /* The config file first, so flags override it whatever their order. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "uaserver: --config needs a file\n");
                return 2;
            }
            char err[256];
            if (uas_server_config_load_file(argv[i + 1], cfg, &o->file, err, sizeof(err)) !=
                UAS_GOOD) {
                fprintf(stderr, "uaserver: %s: %s\n", argv[i + 1], err);
                return 2;
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint32_t n;
        if (!strcmp(a, "--config")) {
            i++;
        } else if (!strcmp(a, "--port")) {
            if (parse_u32(a, v, 65535, &n))
                return 2;
            cfg->port = (uint16_t)n;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (parse_u32(a, v, 256, &n))
                return 2;
            cfg->threads = n;
            i++;
        } else if (!strcmp(a, "--io-backend")) {
            uas_io_backend b;
            if (!uas_io_backend_parse(v, &b)) {
                fprintf(stderr, "uaserver: --io-backend takes auto, epoll or io_uring\n");
                return 2;
            }
            cfg->io_backend = v;
            i++;
        } else if (!strcmp(a, "--bind") && v) {
            cfg->bind_address = v;
            i++;
        } else if (!strcmp(a, "--hostname") && v) {
            cfg->hostname = v;
            i++;
        } else if (!strcmp(a, "--log-level")) {
            int lvl = uas_log_level_parse(v);
            if (lvl < 0) {
                fprintf(stderr, "uaserver: --log-level takes error, warn, info or debug\n");
                return 2;
            }
            cfg->log_level = (uas_log_level)lvl;
            i++;
        } else if (!strcmp(a, "--contract")) {
            o->contract = true;
        } else if (!strcmp(a, "--array-sizes")) {
            if (parse_sizes(v, o->sizes, &o->nsizes))
                return 2;
            i++;
        } else if (!strcmp(a, "--counters")) {
            if (parse_u32(a, v, 10000000, &o->ncounters))
                return 2;
            i++;
        } else if (!strcmp(a, "--event-rate")) {
            if (parse_u32(a, v, 10000000, &o->event_rate))
                return 2;
            i++;
        } else if (!strcmp(a, "--security") && v) {
            cfg->security = v;
            i++;
        } else if (!strcmp(a, "--nodeset") && v) {
            /* Appended to the configuration's list (comma-separated). */
            if (!o->nodesets && cfg->nodesets && !(o->nodesets = strdup(cfg->nodesets)))
                return 2;
            size_t old = o->nodesets ? strlen(o->nodesets) : 0;
            char *g = realloc(o->nodesets, old + strlen(v) + 2);
            if (!g)
                return 2;
            if (!o->nodesets)
                g[0] = 0;
            else if (old)
                strcat(g, ",");
            strcat(g, v);
            o->nodesets = g;
            cfg->nodesets = o->nodesets;
            i++;
        } else if (!strcmp(a, "--pki") && v) {
            cfg->pki_dir = v;
            i++;
        } else if (!strcmp(a, "--users") && v) {
            cfg->users_file = v;
            i++;
        } else if (!strcmp(a, "--certificate") && v) {
            cfg->certificate = v;
            i++;
        } else if (!strcmp(a, "--private-key") && v) {
            cfg->private_key = v;
            i++;
        } else if (!strcmp(a, "--trust-certificate") && v) {
            cfg->trust_certificate = v;
            i++;
        } else if (!strcmp(a, "--key-bits")) {
            if (parse_u32(a, v, 8192, &n))
                return 2;
            cfg->key_bits = n;
            i++;
        } else if (!strcmp(a, "--no-anonymous")) {
            cfg->allow_anonymous = false;
        } else if (!strcmp(a, "--allow-deprecated")) {
            cfg->allow_deprecated = true;
        } else if (!strcmp(a, "--auto-accept")) {
            cfg->auto_accept = true;
        } else if (!strcmp(a, "--print-config")) {
            o->print_config = true;
        } else if (!strcmp(a, "--version")) {
            printf("uaserver %s\n", UAS_VERSION);
            return 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "uaserver: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->contract) {
        cfg->application_uri = "urn:o6:benchmark:server";
        cfg->application_name = "uastack benchmark server";
        /* The contract's clients write its nodes and call its methods
         * anonymously; without --contract, anonymous sessions only browse
         * and read namespace 1 (docs/Security.md). A configuration that
         * sets [roles] permissions decides instead. */
        if (!cfg->role_permissions)
            cfg->role_permissions = UAS_CONTRACT_PERMISSIONS;
        /* The load generator opens up to 4096 connections per loopback
         * source address; a configured cap other than the default stays. */
        uas_server_config d;
        uas_server_config_default(&d);
        if (cfg->max_connections_per_address == d.max_connections_per_address)
            cfg->max_connections_per_address = 0;
    }
    /* The contract (benchmarks, load tests) runs without security unless
     * asked; the server program offers every RSA policy by default. */
    if (!cfg->security)
#ifdef UAS_ENABLE_ENCRYPTION
        cfg->security = o->contract ? "None" : UAS_SECURITY_ALL;
#else
        cfg->security = "None"; /* the only policy of a build without encryption */
#endif
    return 0;
}

/* SIGHUP: the configuration is read again as at start (file, then flags).
 * The log level and the log rate limit change at once; a key that only
 * takes effect at the next start is named in a warning; the trust lists,
 * CRLs and users file are read again even when the file is invalid. Runs on
 * a thread of its own that waits for the signal, so no file is read in a
 * signal handler nor on a loop. */
typedef struct hup_ctx {
    int argc;
    char **argv;
    const uas_server_config *cfg; /* the running configuration */
    uas_server *server;
    pthread_t thread;
    atomic_bool quit;
} hup_ctx;

static bool hot_key(const char *key)
{
    return !strcmp(key, "log_level") || !strcmp(key, "log_rate_burst") ||
           !strcmp(key, "log_rate_interval_ms");
}

static void warn_restart(void *ud, const char *section, const char *key)
{
    (void)ud;
    if (!hot_key(key))
        uas_log(UAS_LOG_WARN, "server",
                "reload: [%s] %s changed; it takes effect at the next start", section, key);
}

static void reload(hup_ctx *h)
{
    app_opts o;
    int rc = parse_options(h->argc, h->argv, &o);
    if (rc == 0 && !o.cfg.pki_dir)
        o.cfg.pki_dir = h->cfg->pki_dir; /* the default or temporary store of the start */
    uas_status st = rc == 0 ? uas_server_config_check(&o.cfg) : UAS_BAD_CONFIGURATION_ERROR;
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_ERROR, "server",
                "reload: the configuration is not valid (%s, see above); the running one is kept",
                uas_status_name(st));
    } else {
        uas_log_set_level(o.cfg.log_level);
        uas_log_set_rate_limit(o.cfg.log_rate_burst, o.cfg.log_rate_interval_ms);
        uas_config_diff(h->cfg, &o.cfg, warn_restart, NULL);
        uas_log(UAS_LOG_INFO, "server", "reload: configuration read again (log level %s)",
                uas_log_level_name(o.cfg.log_level));
    }
    /* Whatever the file says: the stores are files of their own. */
    uas_server_reload_security(h->server);
    app_opts_free(&o);
}

static void *hup_main(void *arg)
{
    hup_ctx *h = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    for (;;) {
        int sig;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (atomic_load(&h->quit))
            return NULL;
        reload(h);
    }
}

int main(int argc, char **argv)
{
    /* First: OpenSSL takes the hooks only before it allocates, and the
     * self-load heap figures are to include its and libev's allocations. */
    if (uas_mem_count_libraries() != UAS_GOOD)
        fprintf(stderr, "uaserver: OpenSSL's allocations are not counted\n");
    if (argc > 1 && !strcmp(argv[1], "--self-load")) {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
            fprintf(stderr, "uaserver: cannot find its own executable\n");
            return 2;
        }
        exe[n] = 0;
        return uas_selfload_main(argc - 1, argv + 1, exe);
    }
    /* Blocked in every thread the server starts; the reload thread waits
     * for it. Until then a SIGHUP stays pending instead of ending the
     * process. */
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);
    hup_ctx hupper = {.argc = argc, .argv = argv};
    bool hup_started = false;
    app_opts opts;
    int rc = parse_options(argc, argv, &opts);
    uas_server_config cfg = opts.cfg;
    bool contract = opts.contract, print_config = opts.print_config;
    char tmp_pki[64] = "";
    if (rc != 0) {
        rc = rc == 1 ? 0 : 2;
        goto out;
    }
    rc = 2;
    if (!cfg.pki_dir) {
        cfg.pki_dir = "uastack-pki";
        if (contract && !is_none(cfg.security) && !print_config) {
            snprintf(tmp_pki, sizeof(tmp_pki), "/tmp/uaserver-pki-XXXXXX");
            if (!mkdtemp(tmp_pki)) {
                fprintf(stderr, "uaserver: cannot create a temporary certificate store\n");
                tmp_pki[0] = 0;
                goto out;
            }
            cfg.pki_dir = tmp_pki;
        }
    }
    if (print_config) {
        /* Printed only when valid: an operator checks a file with it. */
        uas_status cst = uas_server_config_check(&cfg);
        if (cst != UAS_GOOD) {
            fprintf(stderr, "uaserver: the configuration is not valid (%s)\n",
                    uas_status_name(cst));
            rc = 2;
            goto out;
        }
        uas_server_config_print(stdout, &cfg);
        rc = 0;
        goto out;
    }
    raise_nofile(&cfg);
    uas_status st;
    uas_server *s = uas_server_new(&cfg, &st);
    if (!s) {
        fprintf(stderr, "uaserver: cannot create the server: %s (%s)\n", uas_status_name(st),
                uas_status_description(st));
        goto out;
    }
    st = app_add_demo_nodes(s);
    if (st == UAS_GOOD && contract)
        st = app_add_contract_nodes(s, opts.sizes, opts.nsizes);
    if (st == UAS_GOOD && contract)
        st = app_add_counter_nodes(s, opts.ncounters);
    if (st == UAS_GOOD && opts.event_rate)
        st = app_event_source_add(s, opts.event_rate);
    if (st == UAS_GOOD)
        st = uas_server_listen(s);
    if (st != UAS_GOOD) {
        fprintf(stderr, "uaserver: %s\n", uas_status_name(st));
        uas_server_delete(s);
        goto out;
    }
    /* Tests start the server on port 0 and read the real port from the
     * first line: a URL that reaches this server from this machine. */
    char here[300];
    local_url(cfg.bind_address, uas_server_port(s), here, sizeof(here));
    printf("uaserver listening on %s\n", here);
    printf("uaserver endpoint URL (advertised to clients): %s\n", uas_server_endpoint_url(s));
    if (contract)
        printf("benchmark server ready\n");
    fflush(stdout);
    running = s;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (app_event_source_start() != 0) {
        fprintf(stderr, "uaserver: cannot start the event source thread\n");
        uas_server_delete(s);
        goto out;
    }
    hupper.cfg = &cfg;
    hupper.server = s;
    if (pthread_create(&hupper.thread, NULL, hup_main, &hupper) == 0)
        hup_started = true;
    else
        uas_log(UAS_LOG_WARN, "server", "no reload thread: SIGHUP is ignored");
    st = uas_server_run(s);
    if (hup_started) {
        atomic_store(&hupper.quit, true);
        pthread_kill(hupper.thread, SIGHUP);
        pthread_join(hupper.thread, NULL);
    }
    app_event_source_stop();
    running = NULL;
    uas_log(UAS_LOG_INFO, "server", "stopped");
    uas_server_delete(s);
    rc = st == UAS_GOOD ? 0 : 1;
out:
    if (tmp_pki[0])
        remove_tree(tmp_pki);
    app_opts_free(&opts);
    return rc;
}
