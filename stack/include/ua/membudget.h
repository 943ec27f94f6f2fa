/* One memory budget for the whole process. Memory a peer can make the
 * stack hold for it (chunk assembly, queued output, publish and event
 * queues) is reserved here first, so that all connections and all event
 * loops together stay under one figure however many peers there are.
 *
 * The counters are relaxed atomics: a reservation is one compare-and-swap,
 * cheap enough for every queued chunk, and no lock is taken. Reservations
 * are plain byte counts; whoever reserves releases the same count.
 *
 * When a reservation is refused the pressure hook (set by the server) is
 * called, at most once until uas_budget_pressure_done re-arms it, so the
 * owner can drop its largest consumer on its own threads. */
#ifndef UA_MEMBUDGET_H
#define UA_MEMBUDGET_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The limit; 0 sets the machine default (uas_budget_default). Usage is kept:
 * a limit below it only refuses new reservations. */
void uas_budget_set_limit(size_t bytes);
size_t uas_budget_limit(void);
/* A quarter of the memory this process may use (physical RAM, or the
 * cgroup v2 memory.max when lower), within 64 MiB .. 1 GiB. */
size_t uas_budget_default(void);

/* Reserves n bytes when they fit under the limit; false (and the pressure
 * hook runs) when they do not. */
bool uas_budget_try_reserve(size_t n);
/* Counts n bytes whatever the limit: memory that cannot be refused without
 * harm (the first chunks of a reader's queue, a connection's receive
 * buffer), so the figure stays true. Past the limit it runs the pressure
 * hook like a refusal (without counting one). */
void uas_budget_charge(size_t n);
void uas_budget_release(size_t n);

typedef struct uas_budget_stats {
    size_t limit;
    size_t used;
    size_t peak;       /* highest used since the process started */
    uint64_t refusals; /* reservations refused */
    uint64_t drops;    /* consumers dropped to relieve it (uas_budget_count_drop) */
    uint64_t trims;    /* malloc_trim calls made by uas_budget_trim */
} uas_budget_stats;
void uas_budget_get_stats(uas_budget_stats *out);

/* Called (from the thread whose reservation failed) when the budget
 * refuses; NULL removes it. One owner at a time (the last server made in
 * the process); only the owner that set it may clear it:
 * uas_budget_clear_pressure_hook(ud) does nothing when another ud is set. */
void uas_budget_set_pressure_hook(void (*fn)(void *ud), void *ud);
void uas_budget_clear_pressure_hook(void *ud);
/* The owner handled one pressure event: the next refusal calls the hook
 * again. */
void uas_budget_pressure_done(void);
void uas_budget_count_drop(void);

/* Gives freed heap memory back to the system (glibc malloc_trim) when the
 * budget's usage fell by at least min_drop bytes since the last trim (or
 * since its highest point after it); true when it trimmed. Without glibc
 * it does nothing. */
bool uas_budget_trim(size_t min_drop);

/* Resident set size of this process in bytes (/proc/self/statm); 0 when
 * unknown. */
size_t uas_process_rss(void);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
