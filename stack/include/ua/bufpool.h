/* Pooled transport buffers in power-of-two size classes. One pool per event
 * loop, so it takes no locks. The class is chosen by usable capacity, never
 * by capacity plus header, so a 64 KiB chunk buffer stays in the 64 KiB
 * class. */
#ifndef UA_BUFPOOL_H
#define UA_BUFPOOL_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_buf {
    struct uas_buf *next; /* free list or the owner's queue */
    uint32_t cap;         /* usable bytes in data */
    uint32_t len;         /* bytes filled */
    uint32_t off;         /* bytes consumed (e.g. already written to the socket) */
    uint8_t cls;          /* size class (log2 of cap) */
    uint8_t charged;      /* its 2^cls bytes are counted in the memory budget */
    uint8_t data[];
} uas_buf;

typedef struct uas_bufpool_stats {
    uint64_t gets;      /* buffers handed out */
    uint64_t heap_gets; /* of which came from the heap (pool empty) */
    uint64_t live;      /* handed out and not yet returned */
    uint64_t cached_bytes;
    uint64_t live_bytes; /* capacity of the buffers handed out */
    uint64_t trimmed;    /* cached buffers freed by uas_bufpool_trim */
} uas_bufpool_stats;

typedef struct uas_bufpool uas_bufpool;

/* max_cached_bytes bounds what idle buffers may hold; beyond it returned
 * buffers go back to the heap. */
uas_bufpool *uas_bufpool_new(size_t max_cached_bytes);
void uas_bufpool_delete(uas_bufpool *p);
/* A buffer of at least min_cap usable bytes (len = off = 0), or NULL when
 * min_cap exceeds the largest class (16 MiB) or memory is exhausted. */
uas_buf *uas_buf_get(uas_bufpool *p, size_t min_cap);
/* Returns b to the pool; a charged buffer gives its bytes back to the
 * memory budget (ua/membudget.h) wherever it is returned. */
void uas_buf_put(uas_bufpool *p, uas_buf *b);
/* Counts b (handed out, not yet charged) in the memory budget: with force
 * always, else only if the budget has room (false: not charged). */
bool uas_buf_charge(uas_buf *b, bool force);
/* Sizes the idle cache to the recent peak: frees cached buffers (largest
 * first) beyond the most bytes handed out at once since the previous call,
 * then starts a new period. Call it now and then (seconds) from the pool's
 * thread, so memory held for a burst goes back once the burst is over. */
void uas_bufpool_trim(uas_bufpool *p);
void uas_bufpool_get_stats(const uas_bufpool *p, uas_bufpool_stats *out);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
