/* Shared round-trip checks of the codec tests (see helper_codec.h). */
#include "helper_codec.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *th_hex(const uint8_t *p, size_t n)
{
    static char buf[64 * 3 + 8];
    size_t shown = n < 64 ? n : 64;
    char *o = buf;
    for (size_t i = 0; i < shown; i++)
        o += sprintf(o, i ? " %02x" : "%02x", p[i]);
    if (shown < n)
        strcpy(o, " ...");
    else
        *o = 0;
    return buf;
}

uint8_t *th_encode(const void *v, const uas_type *t, size_t *len)
{
    size_t size = uas_encoded_size(v, t);
    cr_assert_neq(size, SIZE_MAX, "%s: uas_encoded_size says not encodable", t->name);
    uint8_t *buf = malloc(size ? size : 1);
    cr_assert_not_null(buf);
    size_t written = 0;
    uas_status st = uas_encode_binary(v, t, buf, size, &written);
    cr_assert_eq(st, UAS_GOOD, "%s: encode into %zu bytes: %s", t->name, size, uas_status_name(st));
    cr_assert_eq(written, size, "%s: wrote %zu bytes, uas_encoded_size said %zu", t->name, written,
                 size);
    *len = size;
    return buf;
}

void th_roundtrip(const void *v, const uas_type *t, const char *what, uint8_t **out,
                  size_t *out_len)
{
    size_t n;
    uint8_t *bytes = th_encode(v, t, &n);

    /* An exact-size heap copy, so ASan sees any read past the end. */
    uint8_t *in = malloc(n ? n : 1);
    cr_assert_not_null(in);
    memcpy(in, bytes, n);
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    void *dec = uas_arena_alloc(&arena, t->size);
    cr_assert_not_null(dec);
    size_t consumed = 0;
    uas_status st = uas_decode_binary(in, n, dec, t, &arena, NULL, &consumed);
    cr_assert_eq(st, UAS_GOOD, "%s (%s): decode: %s; bytes %s", what, t->name, uas_status_name(st),
                 th_hex(bytes, n));
    cr_assert_eq(consumed, n, "%s (%s): decode consumed %zu of %zu bytes", what, t->name, consumed,
                 n);
    cr_assert(uas_equal(v, dec, t), "%s (%s): decoded value differs; bytes %s", what, t->name,
              th_hex(bytes, n));
    cr_assert(uas_equal(dec, v, t), "%s (%s): uas_equal is not symmetric", what, t->name);

    size_t n2;
    uint8_t *again = th_encode(dec, t, &n2);
    cr_assert_eq(n2, n, "%s (%s): re-encoding gives %zu bytes, first encoding %zu", what, t->name,
                 n2, n);
    cr_assert_arr_eq(again, bytes, n, "%s (%s): re-encoding differs", what, t->name);
    free(again);
    free(in);
    uas_arena_free(&arena);
    if (out) {
        *out = bytes;
        *out_len = n;
    } else {
        free(bytes);
    }
}

void th_expect_bytes(const void *v, const uas_type *t, const uint8_t *bytes, size_t n,
                     const char *what)
{
    uint8_t *got;
    size_t len;
    th_roundtrip(v, t, what, &got, &len);
    char want[64 * 3 + 8];
    snprintf(want, sizeof(want), "%s", th_hex(bytes, n));
    cr_assert(len == n && memcmp(got, bytes, n) == 0, "%s: encoded as [%s], expected [%s]", what,
              th_hex(got, len), want);
    free(got);
}
