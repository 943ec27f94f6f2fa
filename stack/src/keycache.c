/* See keycache.h. */
#include <string.h>

#include <ua/mem.h>

#include "keycache.h"

EVP_PKEY *uas_keycache_find(uas_keycache *c, int kind, const uint8_t *der, size_t len)
{
    for (int i = 0; i < UAS_KEYCACHE_SLOTS; i++) {
        uas_keycache_slot *s = &c->slot[i];
        if (s->der && s->kind == kind && s->len == len && memcmp(s->der, der, len) == 0) {
            if (EVP_PKEY_up_ref(s->key) != 1)
                return NULL;
            s->used = ++c->clock;
            return s->key;
        }
    }
    return NULL;
}

static void slot_clear(uas_keycache_slot *s)
{
    if (s->der)
        uas_free(s->der, s->len);
    EVP_PKEY_free(s->key);
    memset(s, 0, sizeof(*s));
}

void uas_keycache_put(uas_keycache *c, int kind, const uint8_t *der, size_t len, EVP_PKEY *key)
{
    if (!key || len == 0 || len > UAS_KEYCACHE_MAX_DER)
        return;
    uas_keycache_slot *victim = &c->slot[0];
    for (int i = 0; i < UAS_KEYCACHE_SLOTS; i++) {
        uas_keycache_slot *s = &c->slot[i];
        if (!s->der) {
            victim = s;
            break;
        }
        /* Unsigned distance from now: the oldest use is the largest. */
        if (c->clock - s->used > c->clock - victim->used)
            victim = s;
    }
    uint8_t *copy = uas_malloc(len);
    if (!copy)
        return;
    if (EVP_PKEY_up_ref(key) != 1) {
        uas_free(copy, len);
        return;
    }
    slot_clear(victim);
    memcpy(copy, der, len);
    victim->der = copy;
    victim->len = (uint32_t)len;
    victim->kind = kind;
    victim->key = key;
    victim->used = ++c->clock;
}

void uas_keycache_clear(uas_keycache *c)
{
    for (int i = 0; i < UAS_KEYCACHE_SLOTS; i++)
        slot_clear(&c->slot[i]);
    c->clock = 0;
}
