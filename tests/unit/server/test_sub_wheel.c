/* The timer wheel and the id map under the subscription engine. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sub_map.h"
#include "sub_wheel.h"

typedef struct rec_timer {
    sub_timer t;
    int id;
    int fired;
    int64_t fired_at;
    sub_timer *cancel; /* cancelled from the callback */
    int64_t rearm;     /* re-armed from the callback when >= 0 */
} rec_timer;

static sub_wheel W;
static int order[64], norder;

static void rec_fn(sub_timer *t, int64_t now)
{
    rec_timer *r = SUB_CONTAINER(t, rec_timer, t);
    r->fired++;
    r->fired_at = now;
    if (norder < 64)
        order[norder++] = r->id;
    if (r->cancel)
        sub_wheel_cancel(&W, r->cancel);
    if (r->rearm >= 0) {
        int64_t d = r->rearm;
        r->rearm = -1;
        sub_wheel_arm(&W, t, d);
    }
}

static void rec_init(rec_timer *r, int id)
{
    memset(r, 0, sizeof(*r));
    sub_timer_init(&r->t, rec_fn);
    r->id = id;
    r->rearm = -1;
}

/* Advance like an event loop would: wake at each deadline the wheel names. */
static void run_to(int64_t t)
{
    for (int64_t d; (d = sub_wheel_next(&W)) <= t;)
        sub_wheel_advance(&W, d);
    sub_wheel_advance(&W, t);
}

static void setup(void)
{
    norder = 0;
    cr_assert_eq(sub_wheel_init(&W, 64, 0), UAS_GOOD);
}

static void teardown(void)
{
    sub_wheel_free(&W);
}

TestSuite(wheel, .init = setup, .fini = teardown);

Test(wheel, fires_at_the_deadline_in_order_fifo_within_a_ms)
{
    rec_timer r[4];
    for (int i = 0; i < 4; i++)
        rec_init(&r[i], i);
    sub_wheel_arm(&W, &r[0].t, 30);
    sub_wheel_arm(&W, &r[1].t, 10);
    sub_wheel_arm(&W, &r[2].t, 30);
    sub_wheel_arm(&W, &r[3].t, 20);
    cr_expect_eq(sub_wheel_next(&W), 10);
    sub_wheel_advance(&W, 9);
    cr_expect_eq(r[1].fired, 0);
    sub_wheel_advance(&W, 35);
    int want[] = {1, 3, 0, 2};
    cr_assert_eq(norder, 4);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(order[i], want[i]);
    cr_expect_eq(sub_wheel_next(&W), INT64_MAX);
    cr_expect_eq(W.count, 0);
}

Test(wheel, far_timers_wait_for_their_revolution)
{
    rec_timer r;
    rec_init(&r, 0);
    sub_wheel_arm(&W, &r.t, 1000); /* 15 revolutions of 64 slots away */
    int wakeups = 0;
    for (int64_t d; (d = sub_wheel_next(&W)) <= 2000 && wakeups < 100; wakeups++)
        sub_wheel_advance(&W, d);
    cr_expect_eq(r.fired, 1);
    cr_expect_eq(r.fired_at, 1000, "never late");
    cr_expect_leq(wakeups, 17, "about one early wake-up per revolution");
}

Test(wheel, cancel_and_rearm_from_callbacks)
{
    rec_timer a, b, c;
    rec_init(&a, 0);
    rec_init(&b, 1);
    rec_init(&c, 2);
    sub_wheel_arm(&W, &a.t, 5);
    sub_wheel_arm(&W, &b.t, 5);
    sub_wheel_arm(&W, &c.t, 7);
    a.cancel = &b.t; /* b was collected in the same pass */
    c.rearm = 3;     /* in the past: fires again in this advance */
    sub_wheel_advance(&W, 10);
    cr_expect_eq(a.fired, 1);
    cr_expect_eq(b.fired, 0);
    cr_expect_eq(c.fired, 2);
    cr_expect_not(sub_timer_armed(&c.t));
    sub_wheel_cancel(&W, &c.t); /* cancelling an idle timer is harmless */
    cr_expect_eq(W.count, 0);
}

Test(wheel, late_arm_fires_on_next_advance)
{
    rec_timer r;
    rec_init(&r, 0);
    sub_wheel_advance(&W, 100);
    sub_wheel_arm(&W, &r.t, 50);
    cr_expect_eq(sub_wheel_next(&W), 101);
    sub_wheel_advance(&W, 101);
    cr_expect_eq(r.fired, 1);
}

Test(wheel, a_long_stall_fires_everything_once)
{
    rec_timer r[3];
    int64_t d[] = {10, 500, 5000};
    for (int i = 0; i < 3; i++) {
        rec_init(&r[i], i);
        sub_wheel_arm(&W, &r[i].t, d[i]);
    }
    sub_wheel_advance(&W, 100000);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(r[i].fired, 1);
    cr_expect_eq(sub_wheel_next(&W), INT64_MAX);
}

Test(wheel, random_timers_fire_exactly_at_their_deadline)
{
    enum { N = 3000 };
    rec_timer *r = calloc(N, sizeof(*r));
    cr_assert_not_null(r);
    srand(42);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], i);
        sub_wheel_arm(&W, &r[i].t, rand() % 20000);
    }
    for (int i = 0; i < N; i += 7)
        sub_wheel_cancel(&W, &r[i].t);
    for (int i = 1; i < N; i += 11)
        if (i % 7)
            sub_wheel_arm(&W, &r[i].t, 20000 + rand() % 5000); /* re-armed later */
    run_to(30000);
    for (int i = 0; i < N; i++) {
        if (i % 7 == 0) {
            cr_expect_eq(r[i].fired, 0, "cancelled %d", i);
            continue;
        }
        cr_expect_eq(r[i].fired, 1, "timer %d fired %d times", i, r[i].fired);
        cr_expect_eq(r[i].fired_at, r[i].t.deadline, "timer %d", i);
    }
    free(r);
}

Test(wheel, periodic_deadlines_skip_missed_cycles)
{
    cr_expect_eq(sub_next_period(100, 30, 110), 130);
    cr_expect_eq(sub_next_period(100, 30, 130), 160);
    cr_expect_eq(sub_next_period(100, 30, 200), 220, "phase kept, no burst");
    cr_expect_eq(sub_next_period(100, 0, 100), 101);
}

Test(map, put_get_remove_with_collisions)
{
    sub_map m;
    memset(&m, 0, sizeof(m));
    cr_expect_null(sub_map_get(&m, 1));
    static int vals[2000];
    for (uint32_t i = 0; i < 2000; i++)
        cr_assert_eq(sub_map_put(&m, i * 7919u, &vals[i]), UAS_GOOD);
    for (uint32_t i = 0; i < 2000; i += 2)
        cr_assert(sub_map_remove(&m, i * 7919u, &vals[i]));
    cr_expect_not(sub_map_remove(&m, 0, &vals[0]));
    for (uint32_t i = 0; i < 2000; i++)
        cr_expect_eq(sub_map_get(&m, i * 7919u), i % 2 ? &vals[i] : NULL, "key %u", i);
    cr_expect_eq(m.count, 1000);
    /* Duplicate keys (colliding node hashes) are iterated. */
    int a, b, c;
    sub_map_put(&m, 5, &a);
    sub_map_put(&m, 5, &b);
    sub_map_put(&m, 5, &c);
    sub_map_remove(&m, 5, &b);
    uint32_t it = 0;
    void *seen[3] = {0};
    int n = 0;
    for (void *v; (v = sub_map_next(&m, 5, &it)) != NULL;)
        seen[n++] = v;
    cr_expect_eq(n, 2);
    cr_expect((seen[0] == &a && seen[1] == &c) || (seen[0] == &c && seen[1] == &a));
    sub_map_free(&m);
}
