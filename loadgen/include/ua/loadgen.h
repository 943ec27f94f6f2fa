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

/* Run record: what was measured where. */
typedef struct uas_run_record {
    char commit[48];
    char cpu[128];
    unsigned cpus;
    char kernel[160];
    char compiler[64];
    char flags[128];
    char date[32];
} uas_run_record;
void uas_run_record_fill(uas_run_record *r);

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
    double busy_cores; /* server CPU seconds per wall second */
    bool disturbed;    /* the server was starved of CPU (see the docs) */
    bool has_server;   /* false with --target: server-side numbers unknown */
} uas_result;

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
