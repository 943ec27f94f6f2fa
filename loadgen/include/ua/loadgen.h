/* The load generator behind `uaserver --self-load`: scenarios that drive a
 * server (a child uaserver, or --target URL) with the async client and
 * measure it, and the I/O-free measurement pieces they use. */
#ifndef UA_LOADGEN_H
#define UA_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Log-linear latency histogram (HDR style): 2^k ranges split in 32 linear
 * sub-buckets, so any value up to ~1 hour in ns is kept within 3 %. Fixed
 * size, no allocation per sample. */
enum { UAS_HIST_SUB = 32, UAS_HIST_RANGES = 42 };
typedef struct uas_hist {
    uint64_t counts[UAS_HIST_RANGES][UAS_HIST_SUB];
    uint64_t total;
    uint64_t min, max;
    double sum;
} uas_hist;

void uas_hist_init(uas_hist *h);
void uas_hist_add(uas_hist *h, uint64_t value);
void uas_hist_merge(uas_hist *dst, const uas_hist *src);
/* Value at quantile q (0..1); 0 for an empty histogram. Returns the upper
 * edge of the bucket, so a percentile is never reported lower than true. */
uint64_t uas_hist_quantile(const uas_hist *h, double q);

/* Median and range of a set of rounds. */
typedef struct uas_stat {
    double median, min, max;
    size_t n;
} uas_stat;
void uas_stat_compute(const double *values, size_t n, uas_stat *out);

/* Median and range of num[i] / den[i] over the pairs with den[i] > 0:
 * the rounds of two variants compared pair by pair, so a round the machine
 * slowed for both counts once, as a ratio, not twice in two ranges. */
void uas_stat_paired_ratio(const double *num, const double *den, size_t n, uas_stat *out);

/* Processor list "0", "1-3" or "0,2-3" (processors 0..63) as a bit mask;
 * 0 on success, -1 when malformed. */
int uas_cpu_list_parse(const char *s, uint64_t *mask);

/* Which variant runs k-th (0-based) in round `round` (0-based) of
 * nvariants: in order in even rounds, reversed in odd ones, so a slow
 * drift of the machine favours no variant and each runs once per round. */
unsigned uas_round_variant(unsigned round, unsigned k, unsigned nvariants);

/* Run record: what was measured where. */
typedef struct uas_run_record {
    char commit[48];
    char cpu[128];
    unsigned cpus;
    char kernel[160];
    char compiler[64];
    char flags[128];
    char date[32];
    /* The machine's cryptography speed (uas_run_record_calibrate), 0 when
     * not measured: one RSA-2048 sign (median, µs), single-core SHA-256
     * and AES-256-CBC encryption (MB/s). */
    double rsa2048_sign_us, sha256_mbps, aes256cbc_mbps;
} uas_run_record;
/* Commit, CPU, kernel, compiler, flags and date; cheap. */
void uas_run_record_fill(uas_run_record *r);
/* Measures the cryptography speeds (about half a second). */
void uas_run_record_calibrate(uas_run_record *r);
/* "RSA-2048 sign N µs, SHA-256 N MB/s, AES-256-CBC N MB/s" into buf. */
int uas_run_record_crypto_text(const uas_run_record *r, char *buf, size_t len);

/* ---- Delivery accounting of the subscription scenarios (I/O free) ----
 *
 * A writer writes a set of nodes together, once per tick: tick k writes the
 * value UAS_DELIV_VALUE_BASE + k to each of its nodes, so a received value
 * names the write it came from. The write log keeps, per tick, when the
 * Write request was sent and when its Good response arrived.
 *
 * Expected deliveries (queue size Q, sampling interval S of the item,
 * revised publishing interval P, guard G for the lateness of the server's
 * publishing timer; every time is the client's):
 *   write k of a node was applied at some moment in [sent_k, resp_k], and
 *   stays the node's value until write k+1 is applied (not before
 *   sent_{k+1}). Let D_k = resp_k + S + P + G. Some publishing cycle of the
 *   subscription ends in (resp_k + S, D_k].
 *   - If fewer than Q later writes were sent before D_k (and, when S > 0,
 *     none before resp_k + S, so the item's sampling saw value k), value k
 *     is still in the item's queue when that cycle ends (or was reported
 *     earlier): it MUST arrive by itself.
 *   - Otherwise the cycle ends holding one of the values k .. b-1, where b
 *     is the first write sent at or after D_k: at least ONE of them must
 *     arrive.
 * Each write sent inside the measurement window with a Good response is
 * one expected delivery per monitored item on its node; it is delivered
 * when its rule holds. With writes spaced wider than S + P + G (plus the
 * write's round trip) every written value must arrive; with faster writes
 * the rule says "no item goes without a new value for more than about one
 * publishing interval", which is what queue size 1 promises. Writes with no
 * Good response are not expected (their value may never have existed) but
 * still count as possible overwrites; a write whose D_k lies after the end
 * of collection is not judged. */
enum { UAS_DELIV_VALUE_BASE = 1 << 20 };

typedef struct uas_write_log {
    uint64_t *sent_ns; /* per tick */
    uint64_t *resp_ns; /* 0: no Good response (yet) */
    uint32_t n, cap;
} uas_write_log;

/* Appends tick n (returned) sent at sent_ns; -1 on out of memory. */
int64_t uas_write_log_add(uas_write_log *l, uint64_t sent_ns);
/* A Good response to tick k. */
void uas_write_log_done(uas_write_log *l, uint32_t k, uint64_t resp_ns);
void uas_write_log_free(uas_write_log *l);

/* The ticks one monitored item received (a growable bitmap). */
typedef struct uas_rx_set {
    uint64_t *bits;
    uint32_t words;
} uas_rx_set;
/* 1 when k is new, 0 when it was there, -1 on out of memory. */
int uas_rx_set_add(uas_rx_set *s, uint32_t k);
bool uas_rx_set_has(const uas_rx_set *s, uint32_t k);
void uas_rx_set_free(uas_rx_set *s);

typedef struct uas_deliv_rule {
    uint64_t t0_ns, t1_ns; /* writes sent in [t0, t1) are judged */
    uint64_t end_ns;       /* notifications were collected until here */
    uint64_t pub_ns;       /* revised publishing interval */
    uint64_t sampling_ns;  /* revised sampling interval of the items */
    uint64_t guard_ns;     /* publishing timer lateness tolerated */
    uint32_t queue_size;   /* revised queue size (>= 1) */
} uas_deliv_rule;

/* Per judged write: [k, group_end) is the set of which one must arrive
 * (group_end == k + 1: write k itself). */
typedef struct uas_deliv_plan {
    uint32_t first, end; /* judged writes are k in [first, end) with judged[k - first] */
    uint32_t *group_end;
    uint8_t *judged;
    uint32_t judged_count, must_each; /* writes judged; of them, to arrive by themselves */
} uas_deliv_plan;

int uas_deliv_plan_build(uas_deliv_plan *p, const uas_write_log *l, const uas_deliv_rule *r);
void uas_deliv_plan_free(uas_deliv_plan *p);

typedef struct uas_deliv_count {
    uint64_t expected;  /* judged writes (one item) */
    uint64_t delivered; /* of them, whose rule held */
    uint64_t missed;    /* expected - delivered */
    uint64_t values;    /* distinct judged values that arrived (queue 1 conflates some) */
} uas_deliv_count;
/* Adds one item's outcome to *c. */
void uas_deliv_check(const uas_deliv_plan *p, const uas_rx_set *rx, uas_deliv_count *c);

/* Sequence numbers of one subscription's NotificationMessages: data
 * messages must be numbered 1, 2, 3 ... without holes (keep-alives carry the
 * next number and do not count). */
typedef struct uas_seq_track {
    uint32_t last;
    bool have;
    uint64_t messages, gaps, repeats;
} uas_seq_track;
void uas_seq_track_add(uas_seq_track *t, uint32_t seq);

/* A data-source counter item (counters scenario): the counter advances by
 * one per sample the server takes, and the notifications carry its value
 * and the sample's source timestamp. Between the first and the last
 * notification inside the window, (value_last - value_first) samples were
 * taken over (ts_last - ts_first); the item reaches its samples when that
 * is at least min_ratio of round(span / sampling interval), and its
 * notifications when it got one per publishing cycle (at least min_ratio of
 * round(span / P) + 1). */
typedef struct uas_counter_track {
    uint64_t v_first, v_last;
    int64_t ts_first, ts_last; /* UA DateTime (100 ns) */
    uint32_t notifications;
    bool have;
} uas_counter_track;
void uas_counter_track_add(uas_counter_track *t, uint64_t value, int64_t source_ts);

typedef struct uas_counter_eval {
    double span_s;
    double samples;          /* counter advance */
    double expected_samples; /* round(span / sampling) */
    double sample_ratio;     /* samples / expected (1 for span 0) */
    double expected_notif;   /* round(span / P) + 1 */
    double notif_ratio;
    bool ok; /* both ratios >= min_ratio */
} uas_counter_eval;
void uas_counter_track_eval(const uas_counter_track *t, double sampling_ms, double pub_ms,
                            double min_ratio, uas_counter_eval *out);

/* One scenario run's numbers. */
typedef struct uas_result {
    char scenario[32];
    char args[512];   /* the full argument line */
    char variant[64]; /* e.g. "threads=1", "" when no alternation */
    double duration_s;
    uint64_t requests; /* completed operations */
    uint64_t errors;
    double throughput; /* operations per second */
    uint64_t p50_ns, p99_ns, max_ns;
    double server_cpu_us_per_op;
    double server_bytes_per_op;
    double server_allocs_per_op;
    uint64_t server_rss_kb;
    double busy_cores;    /* server CPU seconds per wall second */
    bool disturbed;       /* other processes took CPU during the window (see the docs) */
    double runq_share;    /* server run-queue wait / server CPU in the window */
    double foreign_cores; /* CPU of processes other than server and load generator,
                             in cores; < 0: unknown */
    /* Lock contention in the window: acquisitions that found the lock
     * taken (address space, variable values, sessions, subscription
     * engines), from the child's uastack.LockWaits.* counters. */
    bool has_locks;
    uint64_t lock_waits[4];
    bool has_server; /* false with --target: server-side numbers unknown */
    /* --logins: secured session set-ups completed beside the load in the
     * window, per second, and the ones that failed. */
    uint64_t logins, login_failures;
    double logins_per_s;

    /* Open loop (--rate): requests were due at fixed times, spread over the
     * sessions; latency counts from the send, lateness is counted apart. */
    bool has_rate;
    double offered_rate; /* requests/s asked for */
    uint64_t due;        /* requests due in the window */
    uint64_t sent_late;  /* of them, sent more than late_ns after their time */
    uint64_t late_ns;    /* max(UAS_RATE_LATE_NS, one session's interval) */
    uint64_t capped;     /* of them, not sent: the session had --inflight outstanding */
    bool rate_kept;      /* see uas_rate_judge */

    /* Subscription scenarios (sub, sessions, counters): requests, throughput
     * and the latency fields above then count notifications, notif/s and
     * write->notification latency, and the per-op server costs are per
     * notification. */
    bool has_notif;
    uint64_t notifications; /* data-change notifications received in the window */
    double notif_per_s;
    uint64_t notif_expected; /* see uas_deliv_rule (sub, sessions) */
    uint64_t notif_delivered;
    uint64_t notif_missed;
    double delivery_pct;                 /* delivered / expected */
    uint64_t values_seen;                /* distinct judged written values received, all items */
    uint64_t writes;                     /* Write ticks judged (each writes --write-nodes values) */
    uint64_t write_p50_ns, write_p99_ns; /* Write round trip in the window */
    uint64_t write_errors;
    uint64_t publish_errors; /* Publish answered Bad or not at all */
    uint64_t seq_gaps;       /* missing NotificationMessage sequence numbers */
    uint32_t items;          /* monitored items, all sessions */
    uint32_t items_missing;  /* items with at least one miss (or below the bar) */
    /* sessions */
    uint32_t sessions_target, sessions_ready, sessions_with_drops;
    uint32_t sessions_lost;           /* subscribed, then closed before the end */
    double establish_s;               /* first connect to last session subscribed */
    double session_rate;              /* sessions/s established and subscribed */
    double server_cpu_us_per_session; /* server CPU of set-up / sessions set up */
    uint64_t server_rss_idle_kb;
    double rss_per_session_kb; /* (RSS with all sessions - idle RSS) / sessions */
    double rss_per_item_b;     /* the same per monitored item, in bytes */
    unsigned source_addresses; /* loopback source addresses used */
    unsigned long fd_limit;
    /* counters */
    double samples_per_s;  /* samples the server took (counter advance) */
    double min_sample_pct; /* worst item: samples / expected samples */
    double min_notif_pct;  /* worst item: notifications / publishing cycles */
    double server_cpu_us_per_sample;
    /* events: what the child's event source reported in the window, and
     * the events (BaseEventType, selected by a where clause) received. */
    bool has_events;
    double events_reported_per_s;
    uint64_t events_reported;
    uint64_t other_events; /* unparsable, overflow or unexpected events */
    /* The scenario's pass criterion and its outcome. */
    char criterion[96];
    bool pass;
    char why[256]; /* on FAIL: which parts of the criterion failed, and the first error */
} uas_result;
/* Fills r->why with the parts of a subscription scenario's criterion that
 * r's figures miss (empty when none), and the first error if one is given. */
void uas_result_explain(uas_result *r, const char *first_error);

/* Whether an open-loop run kept its rate: at most 1 % of the due requests
 * sent late (after the session's next request was due, and at least
 * UAS_RATE_LATE_NS after their time) or dropped at the in-flight cap, and
 * answered throughput at least 98 % of the offered rate. Sets
 * r->rate_kept, r->pass and r->why. */
enum { UAS_RATE_LATE_NS = 10000000 };
void uas_rate_judge(uas_result *r);

/* Markdown result block; every field labelled. */
void uas_result_print(FILE *f, const uas_result *r, const uas_run_record *rec);

/* `uaserver --self-load ...`: argv[0] is "--self-load"; exe is the uaserver
 * binary started as the measured child. Exit status: 0, 1 (run failed),
 * 2 (usage). */
int uas_selfload_main(int argc, char **argv, const char *exe);

#ifdef __cplusplus
}
#endif
#endif
