/* Counting map for server-wide quotas (quota_map.h). */
#ifdef UAS_ENABLE_ENCRYPTION
#include <sodium.h>
#endif
#include <string.h>

#include <ua/mem.h>
#include <ua/net.h>

#include "quota_map.h"

static size_t quota_slot(const quota_map *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)(key ^ (key >> 29)) & mask;
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

uint32_t quota_get(const quota_map *m, uint64_t key)
{
    return key ? m->counts[quota_slot(m, key)] : 0;
}

void quota_add(quota_map *m, uint64_t key)
{
    if (!key)
        return;
    size_t i = quota_slot(m, key);
    m->keys[i] = key;
    m->counts[i]++;
}

void quota_sub(quota_map *m, uint64_t key)
{
    if (!key)
        return;
    size_t mask = m->cap - 1;
    size_t i = quota_slot(m, key);
    if (!m->keys[i] || --m->counts[i] > 0)
        return;
    m->keys[i] = 0;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        uint64_t k = m->keys[j];
        size_t home = (size_t)(k ^ (k >> 29)) & mask;
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->keys[i] = k;
            m->counts[i] = m->counts[j];
            m->keys[j] = 0;
            m->counts[j] = 0;
            i = j;
        }
    }
}

bool quota_init(quota_map *m, size_t cap)
{
    m->cap = cap;
    m->keys = uas_calloc(cap, sizeof(*m->keys));
    m->counts = uas_calloc(cap, sizeof(*m->counts));
    return m->keys && m->counts;
}

void quota_free(quota_map *m)
{
    if (m->keys)
        uas_free(m->keys, m->cap * sizeof(*m->keys));
    if (m->counts)
        uas_free(m->counts, m->cap * sizeof(*m->counts));
}

/* libsodium's SipHash; a build without libsodium (policy None, small
 * devices) mixes the random key into FNV-1a, which only spreads keys. */
uint64_t uas_address_key(const uint8_t key[UAS_ADDRESS_KEY_BYTES], const char *address)
{
    char group[80];
    if (uas_address_group_str(address, group, sizeof(group)))
        address = group;
    uint64_t k;
#ifdef UAS_ENABLE_ENCRYPTION
    _Static_assert(UAS_ADDRESS_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash key size");
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, (const unsigned char *)address, strlen(address), key);
    memcpy(&k, h, sizeof(k));
#else
    memcpy(&k, key, sizeof(k));
    k ^= 14695981039346656037ull;
    for (const char *p = address; *p; p++)
        k = (k ^ (uint8_t)*p) * 1099511628211ull;
#endif
    return k | 1; /* never the empty key */
}
