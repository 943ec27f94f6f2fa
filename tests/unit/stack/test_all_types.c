/* One table-driven test over the whole descriptor table: every type, with
 * several generated values each, must survive encode/decode, deep copy to the
 * heap and to an arena, and comparison; clearing must give back every byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "helper_codec.h"
#include "helper_populate.h"

#define SEEDS 6

static uint64_t live_bytes(void)
{
    uas_mem_stats s;
    uas_mem_get_stats(&s);
    return s.bytes_live;
}

static void check_one(const uas_type *t, void *v, const char *what)
{
    /* encode -> decode -> equal -> same bytes again */
    th_roundtrip(v, t, what, NULL, NULL);

    /* heap copy */
    void *copy = calloc(1, t->size);
    cr_assert_not_null(copy);
    cr_assert_eq(uas_copy(v, copy, t), UAS_GOOD, "%s: uas_copy failed", what);
    cr_assert(uas_equal(v, copy, t), "%s: heap copy differs", what);
    /* a copy is deep: clearing it leaves the original intact */
    uas_clear(copy, t);
    uint8_t *zero = calloc(1, t->size);
    cr_assert_not_null(zero);
    cr_assert_arr_eq(copy, zero, t->size, "%s: uas_clear left non-zero bytes", what);
    free(zero);
    free(copy);

    /* arena copy */
    uas_arena arena;
    uint8_t first[512];
    uas_arena_init(&arena, first, sizeof(first), 0);
    void *acopy = uas_arena_alloc(&arena, t->size);
    cr_assert_not_null(acopy);
    cr_assert_eq(uas_copy_arena(v, acopy, t, &arena), UAS_GOOD, "%s: uas_copy_arena failed", what);
    cr_assert(uas_equal(v, acopy, t), "%s: arena copy differs", what);
    uas_arena_free(&arena);
}

Test(all_types, every_descriptor_roundtrips_copies_and_compares)
{
    cr_assert_eq(UAS_TYPES_COUNT, sizeof(uas_types) / sizeof(uas_types[0]));
    uint64_t base = live_bytes();
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++) {
        const uas_type *t = &uas_types[i];
        char what[160];

        /* the zero value (null/empty everywhere) */
        void *zero = calloc(1, t->size);
        cr_assert_not_null(zero);
        uas_init(zero, t);
        snprintf(what, sizeof(what), "%s (index %zu) zero value", t->name, i);
        check_one(t, zero, what);

        void *prev = NULL;
        uint8_t *prev_bytes = NULL;
        size_t prev_len = 0;
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
            pop_ctx c;
            pop_init(&c, seed * 7919 + i);
            void *v = calloc(1, t->size);
            cr_assert_not_null(v);
            pop_value(&c, v, t);
            snprintf(what, sizeof(what), "%s (index %zu) seed %llu", t->name, i,
                     (unsigned long long)seed);
            check_one(t, v, what);

            /* uas_equal agrees with the encodings: equal values have equal
             * bytes and different bytes mean different values. */
            size_t len;
            uint8_t *bytes = th_encode(v, t, &len);
            if (prev) {
                bool same_bytes = len == prev_len && memcmp(bytes, prev_bytes, len) == 0;
                cr_assert_eq(uas_equal(v, prev, t), same_bytes,
                             "%s: uas_equal says %d against the previous seed, bytes say %d", what,
                             !same_bytes, same_bytes);
                uas_clear(prev, t);
                free(prev);
                free(prev_bytes);
            }
            prev = v;
            prev_bytes = bytes;
            prev_len = len;
        }
        uas_clear(prev, t);
        free(prev);
        free(prev_bytes);
        uas_clear(zero, t);
        free(zero);
        cr_assert_eq(live_bytes(), base, "%s: %lld bytes of the stack's allocator still live",
                     t->name, (long long)(live_bytes() - base));
    }
}

/* Generated values are not all trivial: most types with members produce
 * different encodings for different seeds (so the round trip above is not
 * checking the same empty value over and over). */
Test(all_types, generator_varies_values_of_every_type_with_members)
{
    size_t varied = 0, candidates = 0;
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++) {
        const uas_type *t = &uas_types[i];
        if (t->kind == UAS_KIND_STRUCT && t->member_count == 0)
            continue;
        candidates++;
        uint8_t *first = NULL;
        size_t first_len = 0;
        bool differs = false;
        for (uint64_t seed = 1; seed <= SEEDS && !differs; seed++) {
            pop_ctx c;
            pop_init(&c, seed * 7919 + i);
            void *v = calloc(1, t->size);
            cr_assert_not_null(v);
            pop_value(&c, v, t);
            size_t len;
            uint8_t *bytes = th_encode(v, t, &len);
            if (!first) {
                first = bytes;
                first_len = len;
            } else {
                differs = len != first_len || memcmp(bytes, first, len) != 0;
                free(bytes);
            }
            uas_clear(v, t);
            free(v);
        }
        free(first);
        varied += differs;
    }
    /* Boolean-only structures may repeat by chance; nearly all must vary. */
    cr_assert_geq(varied * 100, candidates * 98, "only %zu of %zu types varied", varied,
                  candidates);
}
