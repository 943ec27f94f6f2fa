/* Connections per client address group (an IPv4 address or an IPv6 /64),
 * counted server-wide: every loop accepts on its own socket, so the count
 * lives here under one mutex, taken once per accept and once per close. */
#include <stdio.h>
#include <string.h>

#include "lockdef.h"
#include "quota_map.h"
#include "server_internal.h"

struct uas_conn_limits {
    pthread_mutex_t lock;
    quota_map by_address;
    uint8_t key[UAS_ADDRESS_KEY_BYTES];
};

uas_conn_limits *uas_conn_limits_new(uint32_t max_connections)
{
    uas_conn_limits *l = uas_calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    size_t cap = 16;
    while (cap < (size_t)max_connections * 2)
        cap *= 2;
    pthread_mutex_init(&l->lock, NULL);
    if (!quota_init(&l->by_address, cap)) {
        uas_conn_limits_delete(l);
        return NULL;
    }
    uas_random_bytes(l->key, sizeof(l->key));
    return l;
}

void uas_conn_limits_delete(uas_conn_limits *l)
{
    if (!l)
        return;
    quota_free(&l->by_address);
    pthread_mutex_destroy(&l->lock);
    uas_free(l, sizeof(*l));
}

uint64_t uas_conn_limits_acquire(uas_conn_limits *l, const char *group, uint32_t max,
                                 uint32_t *count)
{
    uint64_t k = uas_address_key(l->key, group);
    UAS_LOCK_PLAIN(&l->lock);
    uint32_t n = quota_get(&l->by_address, k);
    *count = n;
    if (max && n >= max) {
        UAS_UNLOCK(&l->lock);
        return 0;
    }
    quota_add(&l->by_address, k);
    UAS_UNLOCK(&l->lock);
    return k;
}

void uas_conn_limits_release(uas_conn_limits *l, uint64_t key)
{
    if (!key)
        return;
    UAS_LOCK_PLAIN(&l->lock);
    quota_sub(&l->by_address, key);
    UAS_UNLOCK(&l->lock);
}

uint32_t uas_conn_limits_count(uas_conn_limits *l, const char *address)
{
    uint64_t k = uas_address_key(l->key, address);
    UAS_LOCK_PLAIN(&l->lock);
    uint32_t n = quota_get(&l->by_address, k);
    UAS_UNLOCK(&l->lock);
    return n;
}
