/* NodeSet2 load time and memory per node (docs/Benchmarks.md, "NodeSet2
 * loading"). Each round creates a server, loads the given files with
 * uas_server_load_nodesets and measures the wall time of the load and the
 * heap bytes it left live (the allocator's counters, uas_mem_get_stats),
 * then deletes the server. Prints median and range over the rounds, and
 * namespace 0's static tables per node for comparison.
 *
 *   nodeset_bench [--rounds N] FILE...   */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ua/server.h>

#include "ns0.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = 5, first = 1;
    if (argc > 2 && !strcmp(argv[1], "--rounds")) {
        rounds = atoi(argv[2]);
        first = 3;
    }
    if (first >= argc || rounds < 1 || rounds > 100) {
        fprintf(stderr, "usage: nodeset_bench [--rounds N] FILE...\n");
        return 2;
    }
    const char **paths = (const char **)argv + first;
    size_t n = (size_t)(argc - first);
    double ms[100], bytes[100];
    size_t nodes = 0;
    for (int r = 0; r < rounds; r++) {
        uas_server_config cfg;
        uas_server_config_default(&cfg);
        cfg.threads = 1;
        cfg.log_level = UAS_LOG_WARN;
        uas_status st;
        uas_server *s = uas_server_new(&cfg, &st);
        if (!s) {
            fprintf(stderr, "uas_server_new: %s\n", uas_status_name(st));
            return 1;
        }
        uas_mem_stats a, b;
        uas_mem_get_stats(&a);
        double t0 = now_ms();
        st = uas_server_load_nodesets(s, paths, n);
        double t1 = now_ms();
        uas_mem_get_stats(&b);
        if (st != UAS_GOOD) {
            fprintf(stderr, "load failed: %s\n", uas_status_name(st));
            return 1;
        }
        ms[r] = t1 - t0;
        bytes[r] = (double)(b.bytes_live - a.bytes_live);
        uas_server_delete(s);
    }
    /* The node count: the files' UA* node elements. */
    for (size_t i = 0; i < n; i++) {
        FILE *fp = fopen(paths[i], "r");
        char line[4096];
        while (fp && fgets(line, sizeof(line), fp)) {
            const char *p = line;
            while ((p = strstr(p, "<UA")) != NULL) {
                p += 3;
                if (!strncmp(p, "Object", 6) || !strncmp(p, "Variable", 8) ||
                    !strncmp(p, "Method", 6) || !strncmp(p, "DataType", 8) ||
                    !strncmp(p, "ReferenceType", 13) || !strncmp(p, "View", 4))
                    nodes++;
            }
        }
        if (fp)
            fclose(fp);
    }
    qsort(ms, (size_t)rounds, sizeof(double), cmp);
    qsort(bytes, (size_t)rounds, sizeof(double), cmp);
    printf("commit %s, flags '%s', %zu files, %zu nodes, %d rounds\n", UAS_BENCH_COMMIT,
           UAS_BENCH_FLAGS, n, nodes, rounds);
    printf("load time   median %.1f ms (range %.1f .. %.1f)\n", ms[rounds / 2], ms[0],
           ms[rounds - 1]);
    printf("heap kept   median %.0f bytes = %.0f bytes/node (range %.0f .. %.0f)\n",
           bytes[rounds / 2], bytes[rounds / 2] / (double)nodes, bytes[0], bytes[rounds - 1]);
    printf("ns0 static  %zu nodes: rows %zu B + references %zu B = %.0f bytes/node "
           "(strings and value blobs not counted)\n",
           uas_ns0_node_count, uas_ns0_node_count * sizeof(uas_ns0_node),
           uas_ns0_ref_count * sizeof(uas_ns0_ref),
           (double)(uas_ns0_node_count * sizeof(uas_ns0_node) +
                    uas_ns0_ref_count * sizeof(uas_ns0_ref)) /
               (double)uas_ns0_node_count);
    return 0;
}
