/* Memory you can account for: a pluggable allocator with counters, and the
 * per-request arena every decoder allocates from.
 *
 * Ownership rule of the whole stack: values produced by a decoder live in the
 * arena they were decoded into and die with it (never uas_clear them); values
 * built with uas_copy/uas_new live on the allocator and are released with
 * uas_clear/uas_delete. */
#ifndef UA_MEM_H
#define UA_MEM_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device program may route every allocation of the stack through its own
 * heap. Out of memory is reported as a NULL return, never an abort. */
typedef struct uas_allocator {
    void *(*alloc)(void *ud, size_t size);
    void *(*realloc)(void *ud, void *ptr, size_t old_size, size_t new_size);
    void (*free)(void *ud, void *ptr, size_t size);
    void *ud;
} uas_allocator;

/* Process-wide counters of the allocator calls made by the stack. Relaxed
 * atomics: cheap enough because the steady-state paths do not allocate. */
typedef struct uas_mem_stats {
    uint64_t allocs; /* successful alloc + growing realloc calls */
    uint64_t frees;
    uint64_t bytes_alloc; /* total bytes ever handed out */
    uint64_t bytes_live;  /* bytes currently held */
} uas_mem_stats;

/* Replace the allocator (NULL restores malloc). Call before anything else. */
void uas_mem_set_allocator(const uas_allocator *a);
void *uas_malloc(size_t size);
void *uas_calloc(size_t n, size_t size); /* overflow-checked, zeroed */
void *uas_realloc(void *ptr, size_t old_size, size_t new_size);
void uas_free(void *ptr, size_t size);
void uas_mem_get_stats(uas_mem_stats *out);

/* Routes the allocations of the libraries under the stack, OpenSSL (built
 * with encryption) and libev, through the allocator above, so that the
 * counters (and a device's own heap) see them too. Call it first in main:
 * OpenSSL accepts it only before its first allocation. UAS_GOOD, or
 * BadInvalidState when OpenSSL has already allocated (libev's allocations
 * are routed anyway). */
uas_status uas_mem_count_libraries(void);

/* Zeroes n bytes of secret memory in a way the compiler cannot drop
 * (libsodium's sodium_memzero): the one wipe of the whole tree. p may be
 * NULL when n is 0. */
void uas_wipe(void *p, size_t n);

/* Bump allocator for one request. The first block may be caller memory (a
 * stack buffer or a pooled buffer), so small requests never touch the heap;
 * further blocks come from the allocator and are kept across resets so a
 * connection's arena stops allocating once warm. */
typedef struct uas_arena_block uas_arena_block;
typedef struct uas_arena {
    uint8_t *pos;
    uint8_t *end;
    uas_arena_block *cur;    /* heap block being filled, or NULL */
    uas_arena_block *blocks; /* all heap blocks, newest first */
    uint8_t *first;          /* caller's initial memory */
    size_t first_size;
    size_t max_total;  /* cap on heap bytes this arena may hold (0 = none) */
    size_t heap_total; /* heap bytes held */
    size_t used;       /* bytes handed out since the last reset */
} uas_arena;

void uas_arena_init(uas_arena *a, void *first, size_t first_size, size_t max_total);
/* Aligned to max_align_t. Returns NULL when the cap or the heap says no. */
void *uas_arena_alloc(uas_arena *a, size_t size);
void *uas_arena_calloc(uas_arena *a, size_t n, size_t size);
/* Forget every allocation but keep the memory (the largest heap block stays,
 * smaller ones are returned so one huge request cannot pin memory forever
 * unless it is the normal size). */
void uas_arena_reset(uas_arena *a);
void uas_arena_free(uas_arena *a);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
