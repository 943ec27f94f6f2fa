#define _POSIX_C_SOURCE 200809L
/* The worker pool on its own: every item runs once and is completed, the
 * queue bound refuses without blocking, shutdown discards what waits, and
 * an inbox brings completed items back to its loop's thread. */
#include <criterion/criterion.h>
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "workpool.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct item {
    uas_work work;
    atomic_int *ran, *completed, *discarded;
    atomic_bool *hold; /* run waits while *hold (NULL: does not wait) */
    atomic_bool started;
    uas_work_inbox *inbox;
    pthread_t done_on;
    bool done;
} item;

static void item_run(uas_work *w)
{
    item *it = (item *)w;
    atomic_store(&it->started, true);
    while (it->hold && atomic_load(it->hold))
        sleep_ms(1);
    atomic_fetch_add(it->ran, 1);
}

static void item_complete(uas_work *w)
{
    item *it = (item *)w;
    atomic_fetch_add(it->completed, 1);
    if (it->inbox)
        uas_work_inbox_post(it->inbox, w);
}

static void item_discard(uas_work *w)
{
    atomic_fetch_add(((item *)w)->discarded, 1);
}

static atomic_int ran, completed, discarded;

static void item_init(item *it, atomic_bool *hold)
{
    memset(it, 0, sizeof(*it));
    it->work.run = item_run;
    it->work.complete = item_complete;
    it->work.discard = item_discard;
    it->ran = &ran;
    it->completed = &completed;
    it->discarded = &discarded;
    it->hold = hold;
}

static void reset(void)
{
    atomic_store(&ran, 0);
    atomic_store(&completed, 0);
    atomic_store(&discarded, 0);
}

static void wait_count(atomic_int *c, int n)
{
    for (int t = 0; t < 5000 && atomic_load(c) < n; t++)
        sleep_ms(1);
    cr_assert_eq(atomic_load(c), n);
}

Test(workpool, every_item_runs_once_and_is_completed)
{
    reset();
    uas_workpool *p;
    cr_assert_eq(uas_workpool_new(2, 64, &p), UAS_GOOD);
    cr_assert_eq(uas_workpool_threads(p), 2);
    static item items[50];
    for (int i = 0; i < 50; i++) {
        item_init(&items[i], NULL);
        cr_assert_eq(uas_workpool_submit(p, &items[i].work), UAS_GOOD);
    }
    wait_count(&completed, 50);
    cr_expect_eq(atomic_load(&ran), 50);
    cr_expect_eq(uas_workpool_pending(p), 0);
    uas_workpool_free(p);
    cr_expect_eq(atomic_load(&discarded), 0);
}

Test(workpool, full_queue_refuses_without_blocking)
{
    reset();
    uas_workpool *p;
    cr_assert_eq(uas_workpool_new(1, 2, &p), UAS_GOOD);
    atomic_bool hold = true;
    item busy, q[3];
    item_init(&busy, &hold);
    cr_assert_eq(uas_workpool_submit(p, &busy.work), UAS_GOOD);
    for (int t = 0; t < 5000 && !atomic_load(&busy.started); t++)
        sleep_ms(1);
    cr_assert(atomic_load(&busy.started));
    /* Running items do not count against the queue: two may wait. */
    for (int i = 0; i < 3; i++)
        item_init(&q[i], NULL);
    cr_expect_eq(uas_workpool_submit(p, &q[0].work), UAS_GOOD);
    cr_expect_eq(uas_workpool_submit(p, &q[1].work), UAS_GOOD);
    cr_expect_eq(uas_workpool_submit(p, &q[2].work), UAS_BAD_RESOURCE_UNAVAILABLE);
    cr_expect_eq(uas_workpool_pending(p), 3);
    atomic_store(&hold, false);
    wait_count(&completed, 3);
    /* Room again. */
    cr_expect_eq(uas_workpool_submit(p, &q[2].work), UAS_GOOD);
    wait_count(&completed, 4);
    uas_workpool_free(p);
}

static void *release_later(void *arg)
{
    sleep_ms(100);
    atomic_store((atomic_bool *)arg, false);
    return NULL;
}

Test(workpool, shutdown_finishes_the_running_item_and_discards_the_waiting_ones)
{
    reset();
    uas_workpool *p;
    cr_assert_eq(uas_workpool_new(1, 8, &p), UAS_GOOD);
    atomic_bool hold = true;
    item busy, q[3];
    item_init(&busy, &hold);
    cr_assert_eq(uas_workpool_submit(p, &busy.work), UAS_GOOD);
    for (int t = 0; t < 5000 && !atomic_load(&busy.started); t++)
        sleep_ms(1);
    for (int i = 0; i < 3; i++) {
        item_init(&q[i], NULL);
        cr_assert_eq(uas_workpool_submit(p, &q[i].work), UAS_GOOD);
    }
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, release_later, &hold), 0);
    uas_workpool_free(p); /* returns once the running item ended */
    pthread_join(th, NULL);
    cr_expect_eq(atomic_load(&ran), 1);
    cr_expect_eq(atomic_load(&completed), 1);
    cr_expect_eq(atomic_load(&discarded), 3);
}

static atomic_int done_count;

static void on_done(uas_work *w)
{
    item *it = (item *)w;
    it->done_on = pthread_self();
    it->done = true;
    atomic_fetch_add(&done_count, 1);
}

Test(workpool, inbox_completes_items_on_its_loop_thread)
{
    reset();
    atomic_store(&done_count, 0);
    struct ev_loop *ev = ev_loop_new(EVFLAG_AUTO);
    cr_assert(ev);
    uas_work_inbox *in;
    cr_assert_eq(uas_work_inbox_new(ev, on_done, &in), UAS_GOOD);
    uas_workpool *p;
    cr_assert_eq(uas_workpool_new(2, 16, &p), UAS_GOOD);
    static item items[10];
    for (int i = 0; i < 10; i++) {
        item_init(&items[i], NULL);
        items[i].inbox = in;
        cr_assert_eq(uas_workpool_submit(p, &items[i].work), UAS_GOOD);
    }
    for (int t = 0; t < 5000 && atomic_load(&done_count) < 10; t++)
        ev_run(ev, EVRUN_NOWAIT), sleep_ms(1);
    cr_assert_eq(atomic_load(&done_count), 10);
    for (int i = 0; i < 10; i++)
        cr_expect(items[i].done && pthread_equal(items[i].done_on, pthread_self()));
    uas_workpool_free(p);
    uas_work_inbox_free(in);
    ev_loop_destroy(ev);
    cr_expect_eq(atomic_load(&discarded), 0);
}

Test(workpool, inbox_discards_what_its_loop_never_took)
{
    reset();
    atomic_store(&done_count, 0);
    struct ev_loop *ev = ev_loop_new(EVFLAG_AUTO);
    uas_work_inbox *in;
    cr_assert_eq(uas_work_inbox_new(ev, on_done, &in), UAS_GOOD);
    uas_workpool *p;
    cr_assert_eq(uas_workpool_new(1, 16, &p), UAS_GOOD);
    item it;
    item_init(&it, NULL);
    it.inbox = in;
    cr_assert_eq(uas_workpool_submit(p, &it.work), UAS_GOOD);
    wait_count(&completed, 1);
    uas_workpool_free(p);
    uas_work_inbox_free(in); /* the loop never ran: the item is discarded */
    ev_loop_destroy(ev);
    cr_expect_eq(atomic_load(&done_count), 0);
    cr_expect_eq(atomic_load(&discarded), 1);
}
