/* Deterministic pseudo-random values of any described type, for the codec
 * tests (round trips over the whole descriptor table, robustness, failmalloc).
 *
 * A populated value is heap-owned (uas_malloc), so it is released with
 * uas_clear, which the leak checker then verifies. The generator only makes
 * values that the binary encoding can carry without loss, so a correct codec
 * must give them back equal (uas_equal) after encode + decode:
 *  - a Variant holds a builtin or a structure with a binary encoding, never an
 *    enumeration or option set (those travel as their integer builtin);
 *  - a Variant of ExtensionObject never holds decoded bodies (the decoder
 *    presents those as the structure itself), and arrays of structures in a
 *    Variant have at least one element (an empty one decodes as
 *    ExtensionObject[]);
 *  - an ExtensionObject kept as bytes has a type id that is no known encoding
 *    id (the decoder would decode a known one);
 *  - Variant dimensions multiply to the array length. */
#ifndef UAS_TEST_HELPER_POPULATE_H
#define UAS_TEST_HELPER_POPULATE_H

#include <stddef.h>
#include <stdint.h>

#include <ua/types.h>

typedef struct pop_ctx {
    uint64_t state;
    unsigned depth;        /* Variant / ExtensionObject / DiagnosticInfo nesting */
    unsigned max_depth;    /* beyond it values are kept flat */
    unsigned struct_depth; /* structure nesting, shrinks arrays */
    size_t budget;         /* array elements still allowed in this value */
    unsigned array_max;    /* longest array near the top of the value */
} pop_ctx;

/* Defaults: nesting depth 3, 200 array elements per value, arrays of up to 3
 * elements (1 when nested deeper). */
void pop_init(pop_ctx *c, uint64_t seed);
uint64_t pop_rand(pop_ctx *c);
/* Uniform in [0, n); n > 0. */
uint32_t pop_below(pop_ctx *c, uint32_t n);

/* Fills dst (t->size bytes, prior content ignored) with a random value of t.
 * Release with uas_clear(dst, t). Aborts the test on out of memory. */
void pop_value(pop_ctx *c, void *dst, const uas_type *t);

/* A larger value: pop_value with arrays of up to array_max elements and a
 * budget of 100 * array_max, trying the seeds from `seed` on until the
 * encoding is at least min_size bytes (at most 1000 seeds; the last one is
 * kept). Returns the seed used. */
uint64_t pop_value_sized(void *dst, const uas_type *t, uint64_t seed, unsigned array_max,
                         size_t min_size);

/* A random structure type that has a binary encoding id. */
const uas_type *pop_random_struct(pop_ctx *c);

/* Number of descriptors that are structures with a binary encoding id, and
 * the i-th of them. */
size_t pop_encodable_struct_count(void);
const uas_type *pop_encodable_struct(size_t i);

#endif
