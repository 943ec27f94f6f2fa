/* SecurityPolicy None: chunks go out as they are. */
#include <string.h>

#include "secpol.h"

static size_t none_overhead(const void *keys, size_t chunk_cap)
{
    (void)keys;
    (void)chunk_cap;
    return 0;
}

static uas_status none_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                               size_t cap)
{
    (void)keys;
    (void)header_len;
    (void)cap;
    uint32_t size = (uint32_t)*len;
    chunk[4] = (uint8_t)size;
    chunk[5] = (uint8_t)(size >> 8);
    chunk[6] = (uint8_t)(size >> 16);
    chunk[7] = (uint8_t)(size >> 24);
    return UAS_GOOD;
}

static uas_status none_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    (void)keys;
    (void)chunk;
    (void)header_len;
    (void)len;
    return UAS_GOOD;
}

const uas_secpol uas_secpol_none = {
    .uri = UAS_SECPOL_NONE_URI,
    .sym_overhead = none_overhead,
    .sym_protect = none_protect,
    .sym_unprotect = none_unprotect,
    .asym_overhead = none_overhead,
    .asym_protect = none_protect,
    .asym_unprotect = none_unprotect,
};

const uas_secpol *uas_secpol_find(const uint8_t *uri, size_t len)
{
    static const uas_secpol *const policies[] = {&uas_secpol_none};
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        size_t n = strlen(policies[i]->uri);
        if (n == len && memcmp(policies[i]->uri, uri, n) == 0)
            return policies[i];
    }
    return NULL;
}
