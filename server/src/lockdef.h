/* The server's lock and unlock sites go through these macros. A build with
 * one event loop (UAS_SINGLE_LOOP, set by the UA_MINIMAL profile) runs every
 * service, callback and API call on the loop's thread, so there the locks
 * compile to nothing; initialising and destroying them stays (it is not on
 * any request path). Waits are counted as in lock_stats.h. */
#ifndef UAS_LOCKDEF_H
#define UAS_LOCKDEF_H

#include <pthread.h>

#include "lock_stats.h"

#ifdef UAS_SINGLE_LOOP
#define UAS_LOCK(m, kind) ((void)(m), (void)(kind))
#define UAS_LOCK_PLAIN(m) ((void)(m))
#define UAS_UNLOCK(m)     ((void)(m))
#define UAS_TRYLOCK(m)    ((void)(m), 0)
#define UAS_RWLOCK_RD(l)  ((void)(l))
#define UAS_RWLOCK_WR(l)  ((void)(l))
#define UAS_RWUNLOCK(l)   ((void)(l))
#else
#define UAS_LOCK(m, kind) uas__lock((m), (kind))
#define UAS_LOCK_PLAIN(m) pthread_mutex_lock(m)
#define UAS_UNLOCK(m)     pthread_mutex_unlock(m)
#define UAS_TRYLOCK(m)    pthread_mutex_trylock(m)
/* Macros, not functions: pthread_rwlock_t is only declared where the
 * file asks for POSIX (the address space's files do). */
#define UAS_RWLOCK_RD(l)                                                                           \
    do {                                                                                           \
        if (pthread_rwlock_tryrdlock(l) != 0) {                                                    \
            atomic_fetch_add_explicit(&uas__lock_waits[UAS_LOCK_ADDRESS_SPACE], 1,                 \
                                      memory_order_relaxed);                                       \
            pthread_rwlock_rdlock(l);                                                              \
        }                                                                                          \
    } while (0)
#define UAS_RWLOCK_WR(l)                                                                           \
    do {                                                                                           \
        if (pthread_rwlock_trywrlock(l) != 0) {                                                    \
            atomic_fetch_add_explicit(&uas__lock_waits[UAS_LOCK_ADDRESS_SPACE], 1,                 \
                                      memory_order_relaxed);                                       \
            pthread_rwlock_wrlock(l);                                                              \
        }                                                                                          \
    } while (0)
#define UAS_RWUNLOCK(l) pthread_rwlock_unlock(l)
#endif

#endif
