/* Internal pieces of the load generator. */
#ifndef UAS_LOADGEN_INTERNAL_H
#define UAS_LOADGEN_INTERNAL_H

#include <sys/types.h>

#include <ua/client.h>
#include <ua/loadgen.h>

enum { LG_MAX_VARIANTS = 4, LG_MAX_ROUNDS = 15 };
enum { SC_READ, SC_WRITE, SC_BROWSE, SC_SUB, SC_SESSIONS, SC_COUNTERS, SC_EVENTS };
enum { LG_SEC_NONE, LG_SEC_SIGN, LG_SEC_ENCRYPT };

/* What --threads and --security alternate, round by round. */
typedef struct lg_variant {
    unsigned threads;
    int security;    /* LG_SEC_* */
    unsigned logins; /* concurrent login loops beside the load (lg_logins.c) */
} lg_variant;

typedef struct lg_opts {
    int scenario;
    const char *scenario_name;
    unsigned sessions, inflight, nodes, rounds;
    unsigned threads[LG_MAX_VARIANTS];
    unsigned nthreads;
    int security[LG_MAX_VARIANTS]; /* LG_SEC_* */
    unsigned nsecurity;
    unsigned logins[LG_MAX_VARIANTS]; /* --logins: login loops beside the load */
    unsigned nlogins;
    bool login_anonymous;                 /* --login-identity anonymous */
    const char *policy;                   /* --policy, e.g. "Basic256Sha256" */
    lg_variant variants[LG_MAX_VARIANTS]; /* threads x security */
    unsigned nvariants;
    double duration, warmup;
    const char *target, *out, *exe;
    int target_pid; /* --target-pid: sample an external server's CPU and RSS */
    char args[512];
    /* Subscription scenarios (scn_sub.c); see usage() in selfload.c. */
    unsigned subs, pub_ms, queue_size, sampling_ms;
    unsigned writers, write_nodes, write_interval_ms;
    unsigned publish_requests;
    unsigned ramp_rate;                /* sessions started per second, 0: as fast as allowed */
    unsigned connect_parallel;         /* session set-ups in flight at once */
    unsigned sources;                  /* loopback source addresses, 0: as many as needed */
    unsigned keep_alive;               /* requested max keep-alive count */
    unsigned event_rate;               /* events: events per second the child reports */
    uint64_t server_cpus, client_cpus; /* --server-cpus, --client-cpus; 0: not pinned */
    double rate; /* --rate: requests/s offered in all (open loop); 0: closed loop */
} lg_opts;

typedef struct lg_child {
    pid_t pid;
    int out_fd;
    char url[256];
} lg_child;

typedef struct lg_proc_sample {
    uint64_t wall_ns;
    uint64_t cpu_ns;  /* user + system */
    uint64_t run_ns;  /* summed on-CPU time of the threads (schedstat, ns resolution) */
    uint64_t runq_ns; /* summed run-queue delay of the threads */
    uint64_t rss_kb;
    uint64_t self_cpu_ns;    /* the load generator's own CPU (user + system) */
    uint64_t machine_cpu_ns; /* busy time of every processor (/proc/stat) */
} lg_proc_sample;

/* Judges a measurement window [a, b]: the server's run-queue wait as a
 * share of its CPU, and the cores that processes other than the server and
 * the load generator used. Only the latter marks a round disturbed: on a
 * machine with as many cores as server and client need, the server always
 * queues behind its own load generator, so its wait alone says nothing
 * about outside interference. */
void lg_judge_window(const lg_proc_sample *a, const lg_proc_sample *b, double server_cpu_ns,
                     uas_result *r);

/* Start `exe --contract --port 0 --bind 127.0.0.1 --threads N [extra...]`
 * (extra: NULL-terminated, may be NULL) on the processors of cpus (0: not
 * pinned); 0 on success with c->url set. */
int lg_child_start(lg_child *c, const char *exe, unsigned threads, uint64_t cpus,
                   const char *const *extra);
/* Checks that the processors of both masks exist for this process and
 * pins the calling thread (and the threads it starts later) to client;
 * 0: not pinned. 0 on success, -1 with a message on stderr. */
int lg_placement(uint64_t server, uint64_t client);
/* In a forked child: pins it to mask, or with 0 gives it back the
 * processors the load generator started with. */
void lg_pin_child(uint64_t mask);
void lg_child_stop(lg_child *c);
int lg_child_sample(const lg_child *c, lg_proc_sample *s);
uint64_t lg_now_ns(void);

/* Heap counters of the child, read through its uastack.* nodes. */
int lg_read_heap(uas_client *ctrl, uint64_t *bytes, uint64_t *allocs);
/* The child's lock contention counters (uastack.LockWaits.*), and their
 * change over a window into r. */
int lg_read_lock_waits(uas_client *ctrl, uint64_t waits[4]);
void lg_lock_waits_delta(uas_result *r, const uint64_t a[4], const uint64_t b[4]);
/* One UInt64 variable ns=1;s=name of the child (e.g. uastack.EventsReported). */
int lg_read_u64(uas_client *ctrl, const char *name, uint64_t *value);

/* One measured run of a subscription scenario (sub, sessions, counters):
 * 0 when it ran (r->pass holds the verdict), -1 when it could not run. */
int lg_sub_run_once(const lg_opts *o, const lg_variant *v, unsigned round, uas_result *r);

/* The options of `--self-load SCENARIO ...` (argv[0] is "--self-load"):
 * 0, 1 for --help, -1 on a usage error (reported on stderr). */
int lg_parse_opts(int argc, char **argv, lg_opts *o);
/* Runs o's rounds, alternating its variants, into res; each result block
 * also goes to the non-NULL files of blocks. 0 when every run ran
 * (*verdict_failed set when a subscription verdict failed), -1 when one
 * could not run. */
int lg_run_rounds(const lg_opts *o, uas_result res[][LG_MAX_VARIANTS], const uas_run_record *rec,
                  FILE *blocks[2], bool *verdict_failed);
/* "median [min–max]" of one field over the rounds of variant v (just the
 * median for one round); buf should hold 128 bytes. */
const char *lg_stat_text(char *buf, size_t len, uas_result res[][LG_MAX_VARIANTS], unsigned rounds,
                         unsigned v, double (*get)(const uas_result *), const char *fmt);
/* Field getters for lg_stat_text shared by the summaries: server CPU (µs)
 * and heap bytes per operation. */
double lg_get_cpu(const uas_result *r);
double lg_get_heap(const uas_result *r);
/* Server CPU per operation of variant v divided by variant 0's, round by
 * round: "median [min–max]", or "–" for variant 0 or without server CPU. */
const char *lg_cpu_ratio_text(char *buf, size_t len, uas_result res[][LG_MAX_VARIANTS],
                              unsigned rounds, unsigned v);
/* The Markdown summary of the rounds: median and range per variant. */
void lg_print_summary(FILE *f, const lg_opts *o, uas_result res[][LG_MAX_VARIANTS]);
/* Raises the descriptor limit to the hard limit; returns the limit. */
unsigned long lg_raise_fd_limit(void);
/* `--self-load capacity ...` (capacity.c). */
int lg_capacity_main(int argc, char **argv, const char *exe);

/* The variant's label in results ("threads=2 encrypt"), "" with one. */
void lg_variant_label(const lg_opts *o, const lg_variant *v, char *buf, size_t len);

/* ---- security of the sessions (lg_security.c) ---- */
typedef struct lg_sec {
    int level; /* LG_SEC_* */
    char policy_uri[160];
    char child_security[96]; /* the child's --security "Policy:Mode" */
    char dir[64];            /* temporary store of the client certificate */
    char cert_path[128];
    uas_bytestring cert, key, server_cert;
} lg_sec;

const char *lg_security_name(int level);
int lg_security_parse(const char *text, int *level);
/* 0 when name is a known secured policy ("Basic256Sha256", ...). */
int lg_policy_check(const char *name);
/* Makes the client certificate for level (nothing for none). */
int lg_sec_open(lg_sec *s, const lg_opts *o, int level);
/* Appends the child's --security and --trust-certificate to extra at n;
 * returns the new count. */
int lg_sec_child_args(const lg_sec *s, const char **extra, int n);
/* GetEndpoints on url: the server certificate of the secured endpoint. */
int lg_sec_discover(lg_sec *s, uas_loop *loop, const char *url);
/* Sets the security of a session's client configuration. */
void lg_sec_apply(const lg_sec *s, uas_client_config *cc);
void lg_sec_close(lg_sec *s);

/* ---- login load (lg_logins.c) ----
 * The user the logins present; a --target server needs it in its users
 * file (uapki user add selfload). */
#define LG_LOGIN_USER     "selfload"
#define LG_LOGIN_PASSWORD "selfload-password"
typedef struct lg_logins lg_logins;
/* n loops (none: *out NULL) of secured session set-ups against url with
 * sec's policy and mode, with the user name or anonymous. */
int lg_logins_new(lg_logins **out, uas_loop *loop, const lg_sec *sec, const char *url, unsigned n,
                  bool anonymous);
void lg_logins_begin(lg_logins *l);
/* Call every loop iteration: counts finished logins, starts the next. */
void lg_logins_poll(lg_logins *l);
/* Count finished logins from now on (true) or not. */
void lg_logins_count(lg_logins *l, bool on);
void lg_logins_result(const lg_logins *l, uint64_t *ok, uint64_t *failed, uas_status *first);
void lg_logins_free(lg_logins *l);
/* A users file in dir with the login user; its path into path. */
int lg_logins_user_file(const char *dir, char *path, size_t cap);

#endif
