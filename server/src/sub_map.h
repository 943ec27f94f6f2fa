/* uint32 key -> pointer hash map for the subscription engine: subscription
 * ids, monitored item ids and node hashes. Open addressing with linear
 * probing and backward-shift deletion (no tombstones, so lookups stay short
 * after churn). Keys may repeat (node hashes collide): lookups iterate. The
 * table grows at 50% load and never shrinks, so a warm engine does not
 * allocate here. */
#ifndef UAS_SUB_MAP_H
#define UAS_SUB_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/status.h>

typedef struct sub_map_ent {
    uint32_t key;
    void *val; /* NULL: free */
} sub_map_ent;

typedef struct sub_map {
    sub_map_ent *ents;
    uint32_t cap; /* power of two, or 0 */
    uint32_t count;
} sub_map;

/* BadOutOfMemory. val must not be NULL. */
uas_status sub_map_put(sub_map *m, uint32_t key, void *val);
/* First value with this key, or NULL. */
void *sub_map_get(const sub_map *m, uint32_t key);
/* Iterate the values with this key: *it = 0 first; NULL at the end. */
void *sub_map_next(const sub_map *m, uint32_t key, uint32_t *it);
/* Remove the entry (key, val); false when absent. */
bool sub_map_remove(sub_map *m, uint32_t key, const void *val);
void sub_map_free(sub_map *m);

#endif
