/* Open-addressing uint32 -> pointer map; see sub_map.h. */
#include "sub_map.h"

#include <string.h>

#include <ua/mem.h>

/* Fibonacci hashing spreads sequential ids over the table. */
static uint32_t home(const sub_map *m, uint32_t key)
{
    return (uint32_t)((key * 2654435769u) & (m->cap - 1));
}

static uas_status grow(sub_map *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 16;
    sub_map_ent *old = m->ents;
    uint32_t ocap = m->cap;
    sub_map_ent *ents = uas_calloc(ncap, sizeof(*ents));
    if (!ents)
        return UAS_BAD_OUT_OF_MEMORY;
    m->ents = ents;
    m->cap = ncap;
    m->count = 0;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i].val)
            (void)sub_map_put(m, old[i].key, old[i].val); /* cannot grow again */
    uas_free(old, ocap * sizeof(*old));
    return UAS_GOOD;
}

uas_status sub_map_put(sub_map *m, uint32_t key, void *val)
{
    if ((m->count + 1) * 2 > m->cap) {
        uas_status st = grow(m);
        if (st != UAS_GOOD)
            return st;
    }
    uint32_t i = home(m, key);
    while (m->ents[i].val)
        i = (i + 1) & (m->cap - 1);
    m->ents[i].key = key;
    m->ents[i].val = val;
    m->count++;
    return UAS_GOOD;
}

void *sub_map_next(const sub_map *m, uint32_t key, uint32_t *it)
{
    if (m->cap == 0)
        return NULL;
    /* *it counts probe steps from the key's home slot. */
    for (uint32_t step = *it; step < m->cap; step++) {
        const sub_map_ent *e = &m->ents[(home(m, key) + step) & (m->cap - 1)];
        if (!e->val)
            return NULL;
        if (e->key == key) {
            *it = step + 1;
            return e->val;
        }
    }
    return NULL;
}

void *sub_map_get(const sub_map *m, uint32_t key)
{
    uint32_t it = 0;
    return sub_map_next(m, key, &it);
}

bool sub_map_remove(sub_map *m, uint32_t key, const void *val)
{
    if (m->cap == 0)
        return false;
    uint32_t mask = m->cap - 1, i = home(m, key);
    while (m->ents[i].val && !(m->ents[i].key == key && m->ents[i].val == val))
        i = (i + 1) & mask;
    if (!m->ents[i].val)
        return false;
    /* Backward shift: pull a later entry of the probe run into the hole
     * when the hole is no further from its home than where it sits. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & mask; m->ents[j].val; j = (j + 1) & mask) {
        uint32_t h = home(m, m->ents[j].key);
        if (((j - h) & mask) >= ((j - hole) & mask)) {
            m->ents[hole] = m->ents[j];
            hole = j;
        }
    }
    m->ents[hole].val = NULL;
    m->ents[hole].key = 0;
    m->count--;
    return true;
}

void sub_map_free(sub_map *m)
{
    uas_free(m->ents, m->cap * sizeof(*m->ents));
    memset(m, 0, sizeof(*m));
}
