/* Deferred reclamation for the address space, so that Reads take no lock.
 *
 * Readers never lock: they load published pointers (hash table, overlay
 * slots, value snapshots, role permissions) and use what they point to
 * until their next quiescent point. A mutator (which still serialises with
 * other mutators through the structure lock or the node's value lock)
 * publishes a new object with one atomic store and hands the old one to
 * as_rcu_retire, which frees it only after every reader that could still
 * hold it has passed a quiescent point.
 *
 * Two kinds of reader:
 * - an event loop (QSBR): one slot per loop, announced online after the
 *   loop wakes up (ev_check) and offline before it sleeps (ev_prepare), so
 *   a Read on a loop costs nothing at all, and a sleeping loop never holds
 *   reclamation back;
 * - any other thread (the program's API calls, worker threads): a short
 *   critical section as_rcu_enter .. as_rcu_exit that borrows one of a few
 *   spare slots (epoch-based).
 *
 * The epoch is a global counter. A retired object is tagged with the epoch
 * of its retirement and freed once every online slot has announced a
 * later epoch. */
#ifndef UAS_ASPACE_RCU_H
#define UAS_ASPACE_RCU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Spare slots for threads that are not inside a loop iteration. A thread
 * that finds them all busy waits for one (they are held for one Read). */
#define AS_RCU_SPARE_SLOTS 32

typedef struct as_rcu_slot {
    _Atomic uint64_t seen; /* 0: offline; else the epoch announced */
    atomic_bool busy;      /* spare slots: borrowed */
    char pad[64 - sizeof(uint64_t) - sizeof(atomic_bool)];
} as_rcu_slot;

/* Embedded in every object that can be retired, so retiring never
 * allocates (and so never fails). */
typedef struct as_rcu_item {
    struct as_rcu_item *next;
    void (*free_fn)(struct as_rcu_item *it);
    uint64_t epoch;
} as_rcu_item;

typedef struct as_rcu {
    _Atomic uint64_t epoch;
    as_rcu_slot *slots; /* loops first, then the spare ones */
    size_t loop_slots, slot_count;
    pthread_mutex_t lock; /* of the retired list */
    as_rcu_item *head;    /* newest first */
    _Atomic size_t pending;
    /* Figures for tests and diagnostics. */
    _Atomic uint64_t retired, freed;
} as_rcu;

/* loops: how many event loops will announce quiescent points. Good or
 * BadOutOfMemory. */
int as_rcu_init(as_rcu *r, size_t loops);
/* Frees everything still retired (no reader may be left). */
void as_rcu_destroy(as_rcu *r);

/* Loop slot i: online (after the loop woke up; this thread reads through
 * slot i until offline) and offline (before it sleeps; a quiescent point,
 * and reclamation of what every reader has passed). */
void as_rcu_online(as_rcu *r, size_t i);
void as_rcu_offline(as_rcu *r, size_t i);
/* A quiescent point inside a long iteration. */
void as_rcu_quiescent(as_rcu *r, size_t i);

/* A read-side critical section: nothing on a thread that is online in a
 * loop slot of r, else a spare slot. Returns the token for as_rcu_exit. */
int as_rcu_enter(as_rcu *r);
void as_rcu_exit(as_rcu *r, int token);
/* Is this thread online in a loop slot of r. */
bool as_rcu_in_loop(const as_rcu *r);

/* Call free_fn(it) (which frees the object it is embedded in) once no
 * reader can hold the object. Never blocks for readers, never allocates.
 * it NULL: nothing. */
void as_rcu_retire(as_rcu *r, as_rcu_item *it, void (*free_fn)(as_rcu_item *it));
/* Frees what every reader has passed; returns how many were freed. */
size_t as_rcu_reclaim(as_rcu *r);

#endif
