/* Processor placement of the measured server and of the load generator
 * (--server-cpus, --client-cpus). On two shared cores, a server and a
 * client that the scheduler moves around measure the scheduler as much as
 * the server: pinning each to its own core is how CPU per operation is
 * compared between builds and variants (docs/Benchmarks.md). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen_internal.h"

int uas_cpu_list_parse(const char *s, uint64_t *mask)
{
    uint64_t m = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9')
            return -1;
        unsigned long a = strtoul(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                return -1;
            b = strtoul(p, &end, 10);
            p = end;
        }
        if (a > b || b > 63)
            return -1;
        for (unsigned long c = a; c <= b; c++)
            m |= UINT64_C(1) << c;
        if (*p == 0)
            break;
        if (*p++ != ',')
            return -1;
    }
    *mask = m;
    return 0;
}

static int set_mask(uint64_t mask)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c = 0; c < 64; c++)
        if (mask >> c & 1)
            CPU_SET(c, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* The processors the load generator started with, so a child of a pinned
 * client is not left on the client's processors. */
static cpu_set_t g_start;
static bool g_start_saved;

/* 0 when every processor of mask is one this process may run on. */
static int check_allowed(const char *opt, uint64_t mask)
{
    cpu_set_t now;
    if (!mask || sched_getaffinity(0, sizeof(now), &now) != 0)
        return 0;
    const cpu_set_t *allowed = g_start_saved ? &g_start : &now;
    for (unsigned c = 0; c < 64; c++)
        if (mask >> c & 1 && !CPU_ISSET(c, allowed)) {
            fprintf(stderr, "uaserver --self-load: %s: processor %u is not available here\n", opt,
                    c);
            return -1;
        }
    return 0;
}

int lg_placement(uint64_t server, uint64_t client)
{
    if (check_allowed("--server-cpus", server) != 0 || check_allowed("--client-cpus", client) != 0)
        return -1;
    if (!client)
        return 0;
    if (!g_start_saved && sched_getaffinity(0, sizeof(g_start), &g_start) == 0)
        g_start_saved = true;
    if (set_mask(client) != 0) {
        perror("uaserver --self-load: --client-cpus");
        return -1;
    }
    return 0;
}

void lg_pin_child(uint64_t mask)
{
    if (mask)
        (void)set_mask(mask);
    else if (g_start_saved)
        (void)sched_setaffinity(0, sizeof(g_start), &g_start);
}

void uas_stat_paired_ratio(const double *num, const double *den, size_t n, uas_stat *out)
{
    double r[64];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 64; i++)
        if (den[i] > 0)
            r[m++] = num[i] / den[i];
    uas_stat_compute(r, m, out);
}
