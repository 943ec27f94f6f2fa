/* The worker pool: a mutex-protected FIFO of bounded length, a condition
 * variable, N threads. Items are few (handshakes and logins, not Reads),
 * each worth milliseconds, so one lock is not worth avoiding. */
#include "workpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <ev.h>
#include <ua/log.h>
#include <ua/mem.h>

struct uas_workpool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uas_work *head, *tail;
    unsigned queued, running;
    unsigned queue_max;
    bool stopping;
    unsigned nthreads;
    pthread_t *threads;
};

static void *worker(void *arg)
{
    uas_workpool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        if (!p->head)
            break; /* stopping with nothing queued */
        if (p->stopping)
            break; /* what waits is discarded by uas_workpool_free */
        uas_work *w = p->head;
        p->head = w->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        p->running++;
        pthread_mutex_unlock(&p->lock);
        w->next = NULL;
        w->run(w);
        w->complete(w);
        pthread_mutex_lock(&p->lock);
        p->running--;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

uas_status uas_workpool_new(unsigned threads, unsigned queue_max, uas_workpool **out)
{
    *out = NULL;
    if (threads == 0)
        threads = 1;
    if (queue_max == 0)
        queue_max = 1;
    uas_workpool *p = uas_calloc(1, sizeof(*p));
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    p->threads = uas_calloc(threads, sizeof(pthread_t));
    if (!p->threads) {
        uas_free(p, sizeof(*p));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->queue_max = queue_max;
    for (unsigned i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            uas_log(UAS_LOG_ERROR, "server", "cannot start worker thread %u of %u", i + 1, threads);
            uas_workpool_free(p);
            return UAS_BAD_RESOURCE_UNAVAILABLE;
        }
        p->nthreads++;
    }
    *out = p;
    return UAS_GOOD;
}

void uas_workpool_free(uas_workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    for (uas_work *w = p->head, *next; w; w = next) {
        next = w->next;
        w->discard(w);
    }
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    uas_free(p->threads, (p->nthreads ? p->nthreads : 1) * sizeof(pthread_t));
    uas_free(p, sizeof(*p));
}

uas_status uas_workpool_submit(uas_workpool *p, uas_work *w)
{
    pthread_mutex_lock(&p->lock);
    uas_status st = UAS_GOOD;
    if (p->stopping)
        st = UAS_BAD_SHUTDOWN;
    else if (p->queued >= p->queue_max)
        st = UAS_BAD_RESOURCE_UNAVAILABLE;
    if (st == UAS_GOOD) {
        w->next = NULL;
        if (p->tail)
            p->tail->next = w;
        else
            p->head = w;
        p->tail = w;
        p->queued++;
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

unsigned uas_workpool_threads(const uas_workpool *p)
{
    return p->nthreads;
}

unsigned uas_workpool_pending(uas_workpool *p)
{
    pthread_mutex_lock(&p->lock);
    unsigned n = p->queued + p->running;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* ---- inboxes ---- */

struct uas_work_inbox {
    struct ev_loop *ev;
    ev_async async;
    pthread_mutex_t lock;
    uas_work *head, *tail;
    void (*done)(uas_work *w);
};

static void on_inbox(struct ev_loop *ev, ev_async *a, int revents)
{
    (void)ev;
    (void)revents;
    uas_work_inbox *in = a->data;
    pthread_mutex_lock(&in->lock);
    uas_work *w = in->head;
    in->head = in->tail = NULL;
    pthread_mutex_unlock(&in->lock);
    while (w) {
        uas_work *next = w->next;
        w->next = NULL;
        in->done(w);
        w = next;
    }
}

uas_status uas_work_inbox_new(struct ev_loop *ev, void (*done)(uas_work *w), uas_work_inbox **out)
{
    uas_work_inbox *in = uas_calloc(1, sizeof(*in));
    *out = in;
    if (!in)
        return UAS_BAD_OUT_OF_MEMORY;
    in->ev = ev;
    in->done = done;
    pthread_mutex_init(&in->lock, NULL);
    ev_async_init(&in->async, on_inbox);
    in->async.data = in;
    ev_async_start(ev, &in->async);
    /* A pending completion must not keep uas_loop_run from returning
     * when everything else has stopped. */
    ev_unref(ev);
    return UAS_GOOD;
}

void uas_work_inbox_free(uas_work_inbox *in)
{
    if (!in)
        return;
    ev_ref(in->ev);
    ev_async_stop(in->ev, &in->async);
    for (uas_work *w = in->head, *next; w; w = next) {
        next = w->next;
        w->discard(w);
    }
    pthread_mutex_destroy(&in->lock);
    uas_free(in, sizeof(*in));
}

void uas_work_inbox_post(uas_work_inbox *in, uas_work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&in->lock);
    if (in->tail)
        in->tail->next = w;
    else
        in->head = w;
    in->tail = w;
    pthread_mutex_unlock(&in->lock);
    ev_async_send(in->ev, &in->async);
}
