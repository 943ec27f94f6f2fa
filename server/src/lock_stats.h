/* Lock contention counters: how often a lock of each kind was found taken
 * and had to be waited for. Counted only on that slow path (a failed
 * trylock), so an uncontended lock costs nothing more; the counters are
 * process-wide, read with uas_server_lock_stats. */
#ifndef UAS_LOCK_STATS_H
#define UAS_LOCK_STATS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <ua/server.h>

extern _Atomic uint64_t uas__lock_waits[UAS_LOCK_KINDS];

static inline void uas__lock(pthread_mutex_t *m, uas_lock_kind kind)
{
    if (pthread_mutex_trylock(m) != 0) {
        atomic_fetch_add_explicit(&uas__lock_waits[kind], 1, memory_order_relaxed);
        pthread_mutex_lock(m);
    }
}

#endif
