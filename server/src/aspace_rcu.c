/* Deferred reclamation for lock-free Reads (aspace_rcu.h).
 *
 * Ordering. A reader going online stores its slot (sequentially
 * consistent) and then fences, so its later loads of published pointers
 * cannot be satisfied before the store is visible. A mutator publishes the
 * new pointer, then takes its retire epoch with a sequentially consistent
 * fetch_add; the reclaimer scans the slots with sequentially consistent
 * loads. A reader that announced an epoch after the retire epoch read the
 * epoch counter after the fetch_add, which synchronises with it, so it can
 * only see the new pointer; a reader whose slot was offline during the scan
 * went online after it and sees the new pointer for the same reason (the
 * fence). Offline and quiescent stores are releases that the scan's loads
 * acquire, so the reader's last use of an object happens before its free
 * (what ThreadSanitizer checks). */
#define _POSIX_C_SOURCE 200809L

#include "aspace_rcu.h"

#include <sched.h>
#include <string.h>

#include <ua/mem.h>
#include <ua/status.h>

/* The slot this thread is online in (loop slots only), and whose. */
static _Thread_local const as_rcu *tls_rcu;
static _Thread_local size_t tls_slot;

int as_rcu_init(as_rcu *r, size_t loops)
{
    memset(r, 0, sizeof(*r));
    r->loop_slots = loops;
    r->slot_count = loops + AS_RCU_SPARE_SLOTS;
    r->slots = uas_calloc(r->slot_count, sizeof(as_rcu_slot));
    if (!r->slots)
        return (int)UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; i < r->slot_count; i++) {
        atomic_init(&r->slots[i].seen, 0);
        atomic_init(&r->slots[i].busy, false);
    }
    atomic_init(&r->epoch, 1);
    atomic_init(&r->pending, 0);
    atomic_init(&r->retired, 0);
    atomic_init(&r->freed, 0);
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        uas_free(r->slots, r->slot_count * sizeof(as_rcu_slot));
        r->slots = NULL;
        return (int)UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    return (int)UAS_GOOD;
}

static void free_list(as_rcu_item *it)
{
    while (it) {
        as_rcu_item *next = it->next;
        it->free_fn(it);
        it = next;
    }
}

void as_rcu_destroy(as_rcu *r)
{
    if (!r->slots)
        return;
    free_list(r->head);
    r->head = NULL;
    pthread_mutex_destroy(&r->lock);
    uas_free(r->slots, r->slot_count * sizeof(as_rcu_slot));
    r->slots = NULL;
}

static void announce(as_rcu_slot *s, as_rcu *r)
{
    atomic_store(&s->seen, atomic_load(&r->epoch));
    atomic_thread_fence(memory_order_seq_cst);
}

void as_rcu_online(as_rcu *r, size_t i)
{
    announce(&r->slots[i], r);
    tls_rcu = r;
    tls_slot = i;
}

void as_rcu_offline(as_rcu *r, size_t i)
{
    atomic_store_explicit(&r->slots[i].seen, 0, memory_order_release);
    if (tls_rcu == r && tls_slot == i)
        tls_rcu = NULL;
    if (atomic_load_explicit(&r->pending, memory_order_relaxed))
        as_rcu_reclaim(r);
}

void as_rcu_quiescent(as_rcu *r, size_t i)
{
    /* A release store first: everything this loop read before happens
     * before the free of anything the scan allows. */
    atomic_store_explicit(&r->slots[i].seen, 0, memory_order_release);
    announce(&r->slots[i], r);
    if (atomic_load_explicit(&r->pending, memory_order_relaxed))
        as_rcu_reclaim(r);
}

bool as_rcu_in_loop(const as_rcu *r)
{
    return tls_rcu == r;
}

int as_rcu_enter(as_rcu *r)
{
    if (tls_rcu == r)
        return -1;
    for (;;) {
        for (size_t i = r->loop_slots; i < r->slot_count; i++) {
            as_rcu_slot *s = &r->slots[i];
            bool expect = false;
            if (!atomic_load_explicit(&s->busy, memory_order_relaxed) &&
                atomic_compare_exchange_strong(&s->busy, &expect, true)) {
                announce(s, r);
                return (int)i;
            }
        }
        sched_yield(); /* every spare slot is in a Read right now */
    }
}

void as_rcu_exit(as_rcu *r, int token)
{
    if (token < 0)
        return;
    as_rcu_slot *s = &r->slots[token];
    atomic_store_explicit(&s->seen, 0, memory_order_release);
    atomic_store_explicit(&s->busy, false, memory_order_release);
}

void as_rcu_retire(as_rcu *r, as_rcu_item *it, void (*free_fn)(as_rcu_item *it))
{
    if (!it)
        return;
    it->free_fn = free_fn;
    /* The object was unpublished before this: readers announcing a later
     * epoch cannot reach it. */
    it->epoch = atomic_fetch_add(&r->epoch, 1);
    pthread_mutex_lock(&r->lock);
    it->next = r->head;
    r->head = it;
    pthread_mutex_unlock(&r->lock);
    atomic_fetch_add_explicit(&r->pending, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->retired, 1, memory_order_relaxed);
}

/* The oldest epoch an online reader may still be in (UINT64_MAX: none). */
static uint64_t oldest_reader(as_rcu *r)
{
    uint64_t min = UINT64_MAX;
    for (size_t i = 0; i < r->slot_count; i++) {
        uint64_t e = atomic_load(&r->slots[i].seen);
        if (e && e < min)
            min = e;
    }
    return min;
}

size_t as_rcu_reclaim(as_rcu *r)
{
    /* One reclaimer at a time; the others go on with their work. */
    if (pthread_mutex_trylock(&r->lock) != 0)
        return 0;
    uint64_t min = oldest_reader(r);
    as_rcu_item *done = NULL;
    size_t n = 0;
    for (as_rcu_item **pp = &r->head; *pp;) {
        as_rcu_item *it = *pp;
        /* Retired at epoch e: readers that announced e or earlier may hold it. */
        if (it->epoch < min) {
            *pp = it->next;
            it->next = done;
            done = it;
            n++;
        } else {
            pp = &it->next;
        }
    }
    pthread_mutex_unlock(&r->lock);
    free_list(done);
    if (n) {
        atomic_fetch_sub_explicit(&r->pending, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->freed, n, memory_order_relaxed);
    }
    return n;
}
