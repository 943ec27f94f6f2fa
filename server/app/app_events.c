/* --event-rate N: a thread of the server reports N BaseEventType events per
 * second through the Server object, numbered in their Message ("selfload
 * event K"), and counts them in ns=1;s=uastack.EventsReported. A load
 * generator reads the counter at the edges of its window: every event
 * numbered in [count at start, count at end) was reported inside it and
 * must reach every event item whose filter selects it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ua/log.h>
#include <ua/nodeids.h>

#include "app.h"

/* 100 wake-ups a second: finer ticks cost the server more than the events
 * at low rates, and publishing intervals are coarser anyway. */
enum { TICK_NS = 10000000, MAX_BEHIND_S = 1 };

static struct {
    uas_server *s;
    uint32_t rate;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    _Atomic uint64_t reported;
} src;

static uint64_t events_reported(void *ud)
{
    (void)ud;
    return atomic_load(&src.reported);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
    (void)arg;
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
    uas_nodeid demo = uas_nodeid_string(1, "Demo");
    uas_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_type = &type;
    ev.source_node = &demo;
    ev.source_name = APP_EVENT_SOURCE_NAME;
    ev.severity = 500;
    char msg[64];
    ev.message = msg;
    uint64_t start = mono_ns(), due_base = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&src.stop)) {
        uint64_t el = mono_ns() - start;
        uint64_t due = due_base + (uint64_t)((double)el / 1e9 * src.rate);
        uint64_t k = atomic_load(&src.reported);
        /* A server too busy to keep the rate does not try to catch up
         * with a burst: the rate is an offered load, and the counter says
         * what was really reported. */
        if (due > k + (uint64_t)src.rate * MAX_BEHIND_S) {
            due_base += due - k;
            due = k;
        }
        for (; k < due && !atomic_load(&src.stop); k++) {
            snprintf(msg, sizeof(msg), "selfload event %llu", (unsigned long long)k);
            uas_status st = uas_server_report_event(src.s, &ev);
            if (st != UAS_GOOD)
                uas_log(UAS_LOG_WARN, "events", "event source: %s", uas_status_name(st));
            atomic_store(&src.reported, k + 1);
        }
        next.tv_nsec += TICK_NS;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return NULL;
}

uas_status app_event_source_add(uas_server *s, uint32_t rate)
{
    src.s = s;
    src.rate = rate;
    return app_add_u64_var(s, "uastack.EventsReported", events_reported, NULL);
}

int app_event_source_start(void)
{
    if (!src.s || !src.rate)
        return 0;
    atomic_store(&src.stop, false);
    if (pthread_create(&src.thread, NULL, run, NULL) != 0)
        return -1;
    src.started = true;
    return 0;
}

void app_event_source_stop(void)
{
    if (!src.started)
        return;
    atomic_store(&src.stop, true);
    pthread_join(src.thread, NULL);
    src.started = false;
}
