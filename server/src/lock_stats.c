/* The process-wide lock contention counters of lock_stats.h. */
#define _GNU_SOURCE
#include "lock_stats.h"

_Atomic uint64_t uas__lock_waits[UAS_LOCK_KINDS];

void uas_server_lock_stats(uas_lock_stats *out)
{
    for (int i = 0; i < UAS_LOCK_KINDS; i++)
        out->waits[i] = atomic_load_explicit(&uas__lock_waits[i], memory_order_relaxed);
}
