/* The run record and the result block. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ua/loadgen.h>

#ifndef UAS_BUILD_COMMIT
#define UAS_BUILD_COMMIT "unknown"
#endif
#ifndef UAS_BUILD_FLAGS
#define UAS_BUILD_FLAGS "unknown"
#endif

void uas_run_record_fill(uas_run_record *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->commit, sizeof(r->commit), "%s", UAS_BUILD_COMMIT);
    snprintf(r->compiler, sizeof(r->compiler), "%s", __VERSION__);
    snprintf(r->flags, sizeof(r->flags), "%s", UAS_BUILD_FLAGS);
    snprintf(r->cpu, sizeof(r->cpu), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            char *p = strchr(line, ':');
            if (!strncmp(line, "model name", 10) && p) {
                snprintf(r->cpu, sizeof(r->cpu), "%s", p + 2);
                r->cpu[strcspn(r->cpu, "\n")] = 0;
                break;
            }
        }
        fclose(f);
    }
    r->cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(r->kernel, sizeof(r->kernel), "%s %s", u.sysname, u.release);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(r->date, sizeof(r->date), "%Y-%m-%d %H:%M UTC", &tm);
}

void uas_result_print(FILE *f, const uas_result *r, const uas_run_record *rec)
{
    fprintf(f, "### %s%s%s\n\n", r->scenario, r->variant[0] ? " — " : "", r->variant);
    fprintf(f, "| measure | value |\n|---|---|\n");
    fprintf(f, "| arguments | `%s` |\n", r->args);
    fprintf(f, "| duration | %.1f s |\n", r->duration_s);
    fprintf(f, "| operations | %llu (errors %llu) |\n", (unsigned long long)r->requests,
            (unsigned long long)r->errors);
    fprintf(f, "| throughput | %.0f ops/s |\n", r->throughput);
    fprintf(f, "| latency p50 / p99 / max | %.1f / %.1f / %.1f µs |\n", (double)r->p50_ns / 1e3,
            (double)r->p99_ns / 1e3, (double)r->max_ns / 1e3);
    if (r->has_server) {
        fprintf(f, "| server CPU per op | %.2f µs |\n", r->server_cpu_us_per_op);
        if (r->server_bytes_per_op >= 0)
            fprintf(f, "| server heap per op | %.1f bytes, %.3f allocations |\n",
                    r->server_bytes_per_op, r->server_allocs_per_op);
        else
            fprintf(f, "| server heap per op | not available (external server) |\n");
        fprintf(f, "| server RSS | %llu KiB |\n", (unsigned long long)r->server_rss_kb);
        fprintf(f, "| server busy cores | %.2f |\n", r->busy_cores);
        fprintf(f, "| disturbed | %s |\n", r->disturbed ? "yes (server starved of CPU)" : "no");
    } else {
        fprintf(f, "| server-side numbers | not available (--target) |\n");
    }
    fprintf(f, "| run record | commit %s; %s x%u; %s; %s `%s`; %s |\n\n", rec->commit, rec->cpu,
            rec->cpus, rec->kernel, rec->compiler, rec->flags, rec->date);
}
