/* The run record and the result block. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ua/loadgen.h>

#include "uas_commit.h" /* UAS_BUILD_COMMIT, written at build time */
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

/* The subscription scenarios' lines: what arrived and what it cost. */
#define WHY(...)                                                                                   \
    do {                                                                                           \
        if (n < sizeof(r->why))                                                                    \
            n += (size_t)snprintf(r->why + n, sizeof(r->why) - n, "%s", n ? "; " : "");            \
        if (n < sizeof(r->why))                                                                    \
            n += (size_t)snprintf(r->why + n, sizeof(r->why) - n, __VA_ARGS__);                    \
    } while (0)

void uas_result_explain(uas_result *r, const char *first_error)
{
    size_t n = 0;
    r->why[0] = 0;
    if (r->sessions_ready < r->sessions_target)
        WHY("%u of %u sessions subscribed", r->sessions_ready, r->sessions_target);
    if (r->sessions_lost)
        WHY("%u sessions lost", r->sessions_lost);
    if (!strcmp(r->scenario, "counters")) {
        if (!r->items)
            WHY("no monitored items");
        if (r->items_missing)
            WHY("%u items below 99 %%", r->items_missing);
    } else if (!strcmp(r->scenario, "events")) {
        if (!r->events_reported)
            WHY("no events reported by the server");
        if (r->other_events)
            WHY("%llu unexpected events", (unsigned long long)r->other_events);
    } else if (!r->notif_expected) {
        WHY("no expected deliveries (%llu writes judged, %llu write errors)",
            (unsigned long long)r->writes, (unsigned long long)r->write_errors);
    }
    if (r->notif_missed)
        WHY("%llu notifications missed", (unsigned long long)r->notif_missed);
    if (r->seq_gaps)
        WHY("%llu sequence gaps", (unsigned long long)r->seq_gaps);
    if (first_error && first_error[0])
        WHY("first error: %s", first_error);
}

void uas_rate_judge(uas_result *r)
{
    size_t n = 0;
    r->why[0] = 0;
    double due = (double)r->due;
    if (r->due == 0)
        WHY("no request was due in the window");
    if (due > 0 && (double)r->capped > 0.01 * due)
        WHY("%llu of %llu requests not sent: the session already had --inflight outstanding",
            (unsigned long long)r->capped, (unsigned long long)r->due);
    if (due > 0 && (double)r->sent_late > 0.01 * due)
        WHY("%llu of %llu requests sent more than %.0f ms late (the load generator fell behind)",
            (unsigned long long)r->sent_late, (unsigned long long)r->due, (double)r->late_ns / 1e6);
    if (r->throughput < 0.98 * r->offered_rate)
        WHY("answered %.0f/s of %.0f/s offered", r->throughput, r->offered_rate);
    if (r->errors)
        WHY("%llu requests failed", (unsigned long long)r->errors);
    r->rate_kept = n == 0;
    snprintf(r->criterion, sizeof(r->criterion),
             "rate %.0f/s kept (answered >= 98 %%, <= 1 %% late or capped)", r->offered_rate);
    r->pass = r->rate_kept;
}
#undef WHY

/* The verdict with the two figures it rests on, so a reader can judge a
 * round on another machine by the numbers rather than by the flag. */
static void print_disturbed(FILE *f, const uas_result *r)
{
    fprintf(f, "| disturbed | %s (other processes: ", r->disturbed ? "yes" : "no");
    if (r->foreign_cores >= 0)
        fprintf(f, "%.2f cores", r->foreign_cores);
    else
        fprintf(f, "unknown");
    fprintf(f, "; server run-queue wait %.0f %% of its CPU) |\n", r->runq_share * 100);
}

static void print_locks(FILE *f, const uas_result *r)
{
    if (!r->has_locks)
        return;
    fprintf(f,
            "| lock waits (contended acquisitions) | address space %llu, values %llu, "
            "sessions %llu, subscription engines %llu |\n",
            (unsigned long long)r->lock_waits[0], (unsigned long long)r->lock_waits[1],
            (unsigned long long)r->lock_waits[2], (unsigned long long)r->lock_waits[3]);
}

static void print_notif(FILE *f, const uas_result *r)
{
    bool counters = !strcmp(r->scenario, "counters");
    bool sessions = !strcmp(r->scenario, "sessions");
    fprintf(f, "| verdict | %s: %s%s%s |\n", r->pass ? "PASS" : "FAIL", r->criterion,
            !r->pass && r->why[0] ? ". Failed: " : "", r->pass ? "" : r->why);
    fprintf(f, "| notifications | %llu in the window, %.0f notif/s, %u monitored items |\n",
            (unsigned long long)r->notifications, r->notif_per_s, r->items);
    if (r->has_events) {
        fprintf(f,
                "| events | %llu reported by the server in the window (%.0f events/s), "
                "%llu other events received |\n",
                (unsigned long long)r->events_reported, r->events_reported_per_s,
                (unsigned long long)r->other_events);
        fprintf(f, "| delivery | %.2f %% (%llu of %llu expected, missed %llu) |\n", r->delivery_pct,
                (unsigned long long)r->notif_delivered, (unsigned long long)r->notif_expected,
                (unsigned long long)r->notif_missed);
        fprintf(f, "| items with misses | %u of %u |\n", r->items_missing, r->items);
        fprintf(f, "| report→notify latency p50 / p99 / max | %.1f / %.1f / %.1f ms |\n",
                (double)r->p50_ns / 1e6, (double)r->p99_ns / 1e6, (double)r->max_ns / 1e6);
    } else if (counters) {
        fprintf(f, "| samples | %.0f samples/s taken by the server (counter advance) |\n",
                r->samples_per_s);
        fprintf(f, "| worst item | %.2f %% of its samples, %.2f %% of its publishing cycles |\n",
                r->min_sample_pct, r->min_notif_pct);
        fprintf(f, "| items below 99 %% | %u of %u |\n", r->items_missing, r->items);
    } else {
        fprintf(f, "| delivery | %.2f %% (%llu of %llu expected, missed %llu) |\n", r->delivery_pct,
                (unsigned long long)r->notif_delivered, (unsigned long long)r->notif_expected,
                (unsigned long long)r->notif_missed);
        fprintf(f, "| items with misses | %u of %u |\n", r->items_missing, r->items);
        fprintf(f, "| written values received | %llu of %llu (queue semantics may conflate) |\n",
                (unsigned long long)r->values_seen, (unsigned long long)r->notif_expected);
        fprintf(f, "| write→notify latency p50 / p99 / max | %.1f / %.1f / %.1f ms |\n",
                (double)r->p50_ns / 1e6, (double)r->p99_ns / 1e6, (double)r->max_ns / 1e6);
        fprintf(
            f,
            "| writes judged | %llu (write errors %llu; round trip p50 / p99 %.1f / %.1f ms) |\n",
            (unsigned long long)r->writes, (unsigned long long)r->write_errors,
            (double)r->write_p50_ns / 1e6, (double)r->write_p99_ns / 1e6);
    }
    fprintf(f, "| Publish errors, sequence gaps | %llu, %llu |\n",
            (unsigned long long)r->publish_errors, (unsigned long long)r->seq_gaps);
    fprintf(f, "| sessions | %u of %u subscribed", r->sessions_ready, r->sessions_target);
    if (sessions || r->sessions_target > 1)
        fprintf(f, " in %.1f s (%.0f sessions/s), %u with drops", r->establish_s, r->session_rate,
                r->sessions_with_drops);
    if (r->sessions_lost)
        fprintf(f, ", %u lost during the run", r->sessions_lost);
    fprintf(f, " |\n");
    if (sessions)
        fprintf(f, "| descriptors, sources | limit %lu, %u loopback source address%s |\n",
                r->fd_limit, r->source_addresses, r->source_addresses == 1 ? "" : "es");
    if (!r->has_server) {
        fprintf(f, "| server-side numbers | not available (--target) |\n");
        return;
    }
    fprintf(f, "| server CPU per notification | %.2f µs |\n", r->server_cpu_us_per_op);
    if (r->server_cpu_us_per_session > 0)
        fprintf(f, "| server CPU per session set-up | %.0f µs (channel, session, subscription) |\n",
                r->server_cpu_us_per_session);
    if (counters)
        fprintf(f, "| server CPU per sample | %.2f µs |\n", r->server_cpu_us_per_sample);
    if (r->server_bytes_per_op >= 0)
        fprintf(f, "| server heap per notification | %.1f bytes, %.3f allocations |\n",
                r->server_bytes_per_op, r->server_allocs_per_op);
    else
        fprintf(f, "| server heap per notification | not available (external server, or its "
                   "counters were unreadable) |\n");
    fprintf(f, "| server RSS | %llu KiB (idle %llu KiB", (unsigned long long)r->server_rss_kb,
            (unsigned long long)r->server_rss_idle_kb);
    if (r->sessions_ready && !counters)
        fprintf(f, ", %.1f KiB per session", r->rss_per_session_kb);
    if (r->sessions_ready)
        fprintf(f, ", %.0f bytes per monitored item", r->rss_per_item_b);
    fprintf(f, ") |\n");
    print_locks(f, r);
    fprintf(f, "| server busy cores | %.2f |\n", r->busy_cores);
    print_disturbed(f, r);
}

static void print_record(FILE *f, const uas_run_record *rec)
{
    char speed[160];
    uas_run_record_crypto_text(rec, speed, sizeof(speed));
    fprintf(f, "| run record | commit %s; %s x%u; %s; %s `%s`; %s; %s |\n\n", rec->commit, rec->cpu,
            rec->cpus, rec->kernel, rec->compiler, rec->flags, speed, rec->date);
}

void uas_result_print(FILE *f, const uas_result *r, const uas_run_record *rec)
{
    fprintf(f, "### %s%s%s\n\n", r->scenario, r->variant[0] ? " — " : "", r->variant);
    fprintf(f, "| measure | value |\n|---|---|\n");
    fprintf(f, "| arguments | `%s` |\n", r->args);
    fprintf(f, "| duration | %.1f s |\n", r->duration_s);
    if (r->has_notif) {
        print_notif(f, r);
        print_record(f, rec);
        return;
    }
    if (r->has_rate) {
        fprintf(f, "| verdict | %s: %s%s%s |\n", r->rate_kept ? "RATE KEPT" : "RATE NOT KEPT",
                r->criterion, r->rate_kept ? "" : ". Failed: ", r->rate_kept ? "" : r->why);
        fprintf(f,
                "| open loop | %.0f requests/s offered; %llu due in the window, %llu sent "
                "late (> %.0f ms), %llu not sent (in-flight cap) |\n",
                r->offered_rate, (unsigned long long)r->due, (unsigned long long)r->sent_late,
                (double)r->late_ns / 1e6, (unsigned long long)r->capped);
    }
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
            fprintf(f, "| server heap per op | not available (external server, or its counters "
                       "were unreadable) |\n");
        fprintf(f, "| server RSS | %llu KiB |\n", (unsigned long long)r->server_rss_kb);
        print_locks(f, r);
        fprintf(f, "| server busy cores | %.2f |\n", r->busy_cores);
        print_disturbed(f, r);
    } else {
        fprintf(f, "| server-side numbers | not available (--target) |\n");
    }
    print_record(f, rec);
}
