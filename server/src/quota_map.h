/* Counts per key, for quotas that hold server-wide: unactivated sessions
 * per channel and per client address (session.c), connections per client
 * address (addr_limit.c). The caller holds its own lock around every call.
 *
 * Open addressing on a non-zero 64-bit key, linear probing, backward-shift
 * deletion, an entry per key with a count above 0; the caller sizes the
 * map (a power of two) above the most keys it can hold at once. */
#ifndef UAS_QUOTA_MAP_H
#define UAS_QUOTA_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct quota_map {
    uint64_t *keys;
    uint32_t *counts;
    size_t cap; /* power of two */
} quota_map;

bool quota_init(quota_map *m, size_t cap);
void quota_free(quota_map *m);
/* Key 0 is "none": never counted, always 0. */
uint32_t quota_get(const quota_map *m, uint64_t key);
void quota_add(quota_map *m, uint64_t key);
void quota_sub(quota_map *m, uint64_t key);

enum { UAS_ADDRESS_KEY_BYTES = 16 };

/* The key of a client address: a keyed hash (SipHash with libsodium) of
 * its address group (uas_address_group: IPv4 address, IPv6 /64), so a peer
 * can neither aim its addresses at one probe chain nor get around a quota
 * with more addresses of its own /64. address is numeric, as getnameinfo
 * or uas_address_group gives it; never 0. */
uint64_t uas_address_key(const uint8_t key[UAS_ADDRESS_KEY_BYTES], const char *address);

#endif
