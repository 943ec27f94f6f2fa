/* The disturbance verdict of a measurement window (lg_judge_window): only
 * CPU that neither the server nor the load generator used flags a round; the
 * server's run-queue wait behind its own load generator is reported, never
 * judged. */
#include <criterion/criterion.h>
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
