/* A bounded pool of worker threads for the work that must never run on an
 * event loop: RSA private-key operations and signature checks, argon2id,
 * certificate parsing and validation, PKI file I/O (docs/Architecture.md,
 * "The loop never waits"). The pool knows nothing of loops or requests: a
 * work item says what to run on a worker and how to report that it ran
 * (the server's per-loop inbox, workpool_inbox below, posts it back to the
 * loop that submitted it with ev_async). */
#ifndef UAS_WORKPOOL_H
#define UAS_WORKPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/status.h>

struct ev_loop;

typedef struct uas_work uas_work;
struct uas_work {
    /* On a worker thread: may touch only what the item owns (copied
     * inputs) and what is immutable or locked for any thread (credentials,
     * the PKI and user stores). */
    void (*run)(uas_work *w);
    /* On the worker, right after run: hands the item back (to an inbox). */
    void (*complete)(uas_work *w);
    /* Frees an item that will never run or never be completed (shutdown);
     * any thread. */
    void (*discard)(uas_work *w);
    uas_work *next; /* the pool's and the inbox's list link */
};

typedef struct uas_workpool uas_workpool;

/* threads workers (at least 1), at most queue_max items waiting for one
 * (at least 1; running items do not count). BadOutOfMemory, or
 * BadResourceUnavailable when a thread cannot be started. */
uas_status uas_workpool_new(unsigned threads, unsigned queue_max, uas_workpool **out);
/* Stops and joins the workers; items still waiting are discarded, an item
 * running finishes and is completed first. NULL is fine. */
void uas_workpool_free(uas_workpool *p);
/* Queues w. Never blocks: BadResourceUnavailable when queue_max items
 * already wait (the caller refuses its request and logs), BadShutdown
 * after uas_workpool_free began. */
uas_status uas_workpool_submit(uas_workpool *p, uas_work *w);
unsigned uas_workpool_threads(const uas_workpool *p);
/* Items waiting and running now (diagnostics, tests). */
unsigned uas_workpool_pending(uas_workpool *p);

/* ---- back to a loop ----
 * An inbox belongs to one event loop: workers push completed items, an
 * ev_async wakes the loop, and the loop calls done for each, in order. */
typedef struct uas_work_inbox uas_work_inbox;
uas_status uas_work_inbox_new(struct ev_loop *ev, void (*done)(uas_work *w), uas_work_inbox **out);
/* Discards what is still in the inbox; call after the pool is freed. */
void uas_work_inbox_free(uas_work_inbox *in);
/* The complete hook of items for this inbox: set w->complete to
 * uas_work_inbox_post and put the inbox where it can find it. */
void uas_work_inbox_post(uas_work_inbox *in, uas_work *w);

#endif
