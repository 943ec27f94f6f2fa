/* NumericRange (Part 4, 7.27): "n", "a:b" with a < b, several dimensions
 * separated by commas ("1:2,0:3"). On read a range may run past the end of
 * the data (the result is truncated) but must select something; on write
 * it must lie within the current value and match the written array.
 * For Strings and ByteStrings the range selects bytes, and for arrays of
 * them one extra, last dimension selects bytes of every element. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"

uas_status as_range_parse(const uas_string *s, as_range *r)
{
    memset(r, 0, sizeof(*r));
    if (!s->data || s->length == 0)
        return UAS_GOOD;
    const uint8_t *p = s->data, *end = s->data + s->length;
    for (;;) {
        if (r->dims == AS_RANGE_MAX_DIMS)
            return UAS_BAD_INDEX_RANGE_INVALID;
        uint64_t v[2] = {0, 0};
        int parts = 0;
        for (;;) {
            if (p == end || *p < '0' || *p > '9')
                return UAS_BAD_INDEX_RANGE_INVALID;
            uint64_t x = 0;
            while (p < end && *p >= '0' && *p <= '9') {
                x = x * 10 + (uint64_t)(*p++ - '0');
                if (x > UINT32_MAX)
                    return UAS_BAD_INDEX_RANGE_INVALID;
            }
            v[parts++] = x;
            if (p < end && *p == ':' && parts == 1) {
                p++;
                continue;
            }
            break;
        }
        if (parts == 2 && v[0] >= v[1])
            return UAS_BAD_INDEX_RANGE_INVALID;
        r->min[r->dims] = (uint32_t)v[0];
        r->max[r->dims] = (uint32_t)(parts == 2 ? v[1] : v[0]);
        r->dims++;
        if (p == end)
            return UAS_GOOD;
        if (*p != ',')
            return UAS_BAD_INDEX_RANGE_INVALID;
        p++;
    }
}

static bool is_bytes(const uas_type *t)
{
    return t && (t->kind == UAS_BUILTIN_STRING || t->kind == UAS_BUILTIN_BYTESTRING ||
                 t->kind == UAS_BUILTIN_XMLELEMENT);
}

/* The bytes [min, max] of a string (clipped); BadIndexRangeNoData when the
 * string has none there. */
static uas_status sub_bytes(const uas_string *src, uint32_t min, uint32_t max, uas_string *dst,
                            uas_arena *arena, bool deep)
{
    size_t len = src->data ? src->length : 0;
    if (min >= len)
        return UAS_BAD_INDEX_RANGE_NO_DATA;
    size_t last = max < len ? max : len - 1;
    dst->length = last - min + 1;
    if (!deep) {
        dst->data = src->data + min;
        return UAS_GOOD;
    }
    dst->data = uas_arena_alloc(arena, dst->length);
    if (!dst->data)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(dst->data, src->data + min, dst->length);
    return UAS_GOOD;
}

uas_status as_range_read(const uas_variant *src, const as_range *r, uas_variant *dst,
                         uas_arena *arena, bool deep)
{
    if (r->dims == 0) {
        if (deep)
            return uas_copy_arena(src, dst, UAS_TYPE(VARIANT), arena);
        *dst = *src;
        return UAS_GOOD;
    }
    memset(dst, 0, sizeof(*dst));
    const uas_type *t = src->type;
    if (!t)
        return UAS_BAD_INDEX_RANGE_NO_DATA;
    if (!src->is_array) {
        if (!is_bytes(t) || r->dims != 1)
            return UAS_BAD_INDEX_RANGE_NO_DATA;
        uas_string *s = uas_arena_alloc(arena, sizeof(uas_string));
        if (!s)
            return UAS_BAD_OUT_OF_MEMORY;
        AS_TRY(sub_bytes(src->data, r->min[0], r->max[0], s, arena, deep));
        dst->type = t;
        dst->data = s;
        return UAS_GOOD;
    }
    /* The array's own dimensions: its ArrayDimensions, or one. */
    size_t nd = src->array_dimensions ? src->array_dimensions_length : 1;
    uint32_t one = (uint32_t)src->array_length;
    const uint32_t *dim = src->array_dimensions ? src->array_dimensions : &one;
    bool inner = is_bytes(t) && r->dims == nd + 1; /* last dimension selects bytes */
    if (r->dims != nd && !inner)
        return UAS_BAD_INDEX_RANGE_NO_DATA;
    uint32_t lo[AS_RANGE_MAX_DIMS], cnt[AS_RANGE_MAX_DIMS];
    size_t total = 1;
    for (size_t i = 0; i < nd; i++) {
        if (r->min[i] >= dim[i])
            return UAS_BAD_INDEX_RANGE_NO_DATA;
        uint32_t hi = r->max[i] < dim[i] ? r->max[i] : dim[i] - 1;
        lo[i] = r->min[i];
        cnt[i] = hi - lo[i] + 1;
        total *= cnt[i];
    }
    uint8_t *out = uas_arena_calloc(arena, total, t->size);
    if (!out)
        return UAS_BAD_OUT_OF_MEMORY;
    /* Walk the selected box in row-major order (last dimension fastest). */
    uint32_t idx[AS_RANGE_MAX_DIMS] = {0};
    for (size_t k = 0; k < total; k++) {
        size_t off = 0;
        for (size_t i = 0; i < nd; i++)
            off = off * dim[i] + lo[i] + idx[i];
        const uint8_t *el = (const uint8_t *)src->data + off * t->size;
        uint8_t *o = out + k * t->size;
        if (inner) {
            uas_status st = sub_bytes((const uas_string *)el, r->min[nd], r->max[nd],
                                      (uas_string *)o, arena, deep);
            if (st == UAS_BAD_INDEX_RANGE_NO_DATA)
                memset(o, 0, sizeof(uas_string)); /* nothing of this element: null */
            else if (st != UAS_GOOD)
                return st;
        } else if (deep) {
            AS_TRY(uas_copy_arena(el, o, t, arena));
        } else {
            memcpy(o, el, t->size);
        }
        for (size_t i = nd; i-- > 0;) {
            if (++idx[i] < cnt[i])
                break;
            idx[i] = 0;
        }
    }
    dst->type = t;
    dst->is_array = true;
    dst->data = out;
    dst->array_length = total;
    if (src->array_dimensions && nd > 1) {
        dst->array_dimensions = uas_arena_alloc(arena, nd * sizeof(uint32_t));
        if (!dst->array_dimensions)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(dst->array_dimensions, cnt, nd * sizeof(uint32_t));
        dst->array_dimensions_length = nd;
    }
    return UAS_GOOD;
}

uas_status as_range_write(const uas_variant *cur, const as_range *r, const uas_variant *v,
                          uas_variant *out)
{
    memset(out, 0, sizeof(*out));
    if (!cur->type || !cur->is_array || r->dims != 1 ||
        (cur->array_dimensions && cur->array_dimensions_length > 1))
        return UAS_BAD_WRITE_NOT_SUPPORTED;
    if (!v->type || !v->is_array || v->type != cur->type)
        return UAS_BAD_TYPE_MISMATCH;
    if (r->max[0] >= cur->array_length)
        return UAS_BAD_INDEX_RANGE_NO_DATA;
    size_t n = (size_t)r->max[0] - r->min[0] + 1;
    if (v->array_length != n)
        return UAS_BAD_INDEX_RANGE_DATA_MISMATCH;
    AS_TRY(uas_copy(cur, out, UAS_TYPE(VARIANT)));
    const uas_type *t = cur->type;
    for (size_t i = 0; i < n; i++) {
        void *dst = (uint8_t *)out->data + (r->min[0] + i) * t->size;
        const void *src = (const uint8_t *)v->data + i * t->size;
        uas_clear(dst, t);
        uas_status st = uas_copy(src, dst, t);
        if (st != UAS_GOOD) {
            uas_clear(out, UAS_TYPE(VARIANT));
            return st;
        }
    }
    return UAS_GOOD;
}
