#define _POSIX_C_SOURCE 200809L
/* The disturbance verdict of a measurement window (lg_judge_window): only
 * CPU that neither the server nor the load generator used flags a round; the
 * server's run-queue wait behind its own load generator is reported, never
 * judged. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen_internal.h"

#define S 1000000000ull

static void window(lg_proc_sample *a, lg_proc_sample *b, double self_s, double machine_s,
                   double runq_s)
{
    memset(a, 0, sizeof(*a));
    memset(b, 0, sizeof(*b));
    a->wall_ns = 100 * S;
    b->wall_ns = 110 * S; /* a 10 s window */
    a->machine_cpu_ns = 1000 * S;
    b->machine_cpu_ns = a->machine_cpu_ns + (uint64_t)(machine_s * S);
    a->self_cpu_ns = 50 * S;
    b->self_cpu_ns = a->self_cpu_ns + (uint64_t)(self_s * S);
    a->runq_ns = 7 * S;
    b->runq_ns = a->runq_ns + (uint64_t)(runq_s * S);
}

Test(judge, server_queued_behind_its_own_client_is_not_disturbed)
{
    lg_proc_sample a, b;
    /* Two busy cores, all of it server and load generator; the server
     * waited 40 % of its run time. The old rule (wait > 25 %) flagged this. */
    window(&a, &b, 10, 20, 4);
    uas_result r;
    memset(&r, 0, sizeof(r));
    lg_judge_window(&a, &b, 10.0 * S, &r);
    cr_expect_not(r.disturbed);
    cr_expect_float_eq(r.runq_share, 0.40, 1e-9);
    cr_expect_float_eq(r.foreign_cores, 0.0, 1e-9);
}

Test(judge, other_processes_taking_half_a_core_is_disturbed)
{
    lg_proc_sample a, b;
    window(&a, &b, 7, 20, 1); /* 5 CPU-seconds in 10 s belong to neither */
    uas_result r;
    memset(&r, 0, sizeof(r));
    lg_judge_window(&a, &b, 8.0 * S, &r);
    cr_expect(r.disturbed);
    cr_expect_float_eq(r.foreign_cores, 0.5, 1e-9);
}

Test(judge, tick_noise_below_a_tenth_of_a_core_is_not_disturbed)
{
    lg_proc_sample a, b;
    window(&a, &b, 7, 15.5, 0); /* 0.05 cores of kernel threads and ticks */
    uas_result r;
    memset(&r, 0, sizeof(r));
    lg_judge_window(&a, &b, 8.0 * S, &r);
    cr_expect_not(r.disturbed);
    cr_expect_float_eq(r.foreign_cores, 0.05, 1e-9);
}

Test(judge, unreadable_machine_figures_are_unknown_not_disturbed)
{
    lg_proc_sample a, b;
    window(&a, &b, 7, 20, 1);
    a.machine_cpu_ns = b.machine_cpu_ns = 0; /* /proc/stat unreadable */
    uas_result r;
    memset(&r, 0, sizeof(r));
    lg_judge_window(&a, &b, 8.0 * S, &r);
    cr_expect_not(r.disturbed);
    cr_expect_lt(r.foreign_cores, 0);
}

/* A failed subscription run says which part of its criterion failed. */
Test(verdict, expired_writer_is_named)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "sessions");
    r.sessions_target = r.sessions_ready = 100;
    uas_result_explain(&r, "BadSessionIdInvalid at Write");
    cr_expect_str_eq(r.why, "no expected deliveries (0 writes judged, 0 write errors); first "
                            "error: BadSessionIdInvalid at Write");
}

Test(verdict, every_failed_part_is_listed)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "sub");
    r.sessions_target = 10;
    r.sessions_ready = 8;
    r.sessions_lost = 1;
    r.notif_expected = 100;
    r.notif_missed = 3;
    r.seq_gaps = 2;
    uas_result_explain(&r, NULL);
    cr_expect_str_eq(r.why, "8 of 10 sessions subscribed; 1 sessions lost; 3 notifications "
                            "missed; 2 sequence gaps");
}

Test(verdict, counters_and_events_criteria)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "counters");
    r.items = 50;
    r.items_missing = 4;
    uas_result_explain(&r, "");
    cr_expect_str_eq(r.why, "4 items below 99 %");
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "events");
    r.other_events = 7;
    uas_result_explain(&r, NULL);
    cr_expect_str_eq(r.why, "no events reported by the server; 7 unexpected events");
}

Test(verdict, failed_verdict_line_carries_the_reason)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "sessions");
    snprintf(r.criterion, sizeof(r.criterion), "every expected delivery arrives");
    r.has_notif = true;
    r.sessions_target = 2;
    r.sessions_ready = 1;
    r.notif_expected = 10;
    uas_result_explain(&r, NULL);
    uas_run_record rec;
    memset(&rec, 0, sizeof(rec));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    uas_result_print(f, &r, &rec);
    fclose(f);
    cr_expect(strstr(buf, "| verdict | FAIL: every expected delivery arrives. Failed: 1 of 2 "
                          "sessions subscribed |") != NULL,
              "%s", buf);
    free(buf);
}
