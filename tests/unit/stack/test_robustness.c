/* Hostile input for the decoder: every truncation of valid messages,
 * thousands of deterministic mutations, and random bytes decoded as every
 * type. Inputs sit in exact-size heap buffers so the ASan build catches any
 * read past the end. Whatever decodes must re-encode, decode again to an
 * equal value, and re-encode to the same bytes (a canonical form). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "helper_codec.h"
#include "helper_populate.h"

typedef struct sample {
    const uas_type *type;
    uint8_t *bytes;
    size_t len;
} sample;

enum { MAX_SAMPLES = 80 };

static sample samples[MAX_SAMPLES];
static size_t nsamples;

static void add_sample(const uas_type *t, uint64_t seed, unsigned array_max, size_t min_size)
{
    cr_assert_lt(nsamples, MAX_SAMPLES);
    void *v = calloc(1, t->size);
    cr_assert_not_null(v);
    pop_value_sized(v, t, seed, array_max, min_size);
    sample *s = &samples[nsamples++];
    s->type = t;
    s->bytes = th_encode(v, t, &s->len);
    uas_clear(v, t);
    free(v);
}

/* Service messages of the usual kinds plus 50 structure types picked by a
 * fixed seed, and the recursive builtins. */
static void make_samples(void)
{
    static const struct {
        const char *name;
        unsigned array_max;
        size_t big;
    } kinds[] = {{"ReadRequest", 80, 4000},
                 {"ReadResponse", 80, 8000},
                 {"BrowseResponse", 80, 8000},
                 {"PublishResponse", 80, 3000},
                 {"CreateSessionRequest", 8, 150}}; /* no top-level array */
    nsamples = 0;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const uas_type *t = uas_type_by_name(kinds[i].name);
        cr_assert_not_null(t, "%s", kinds[i].name);
        add_sample(t, 1000 + i * 100, kinds[i].array_max, kinds[i].big);
        add_sample(t, 2000 + i * 100, 4, 100);
    }
    pop_ctx pick;
    pop_init(&pick, 4711);
    for (int i = 0; i < 50; i++)
        add_sample(pop_random_struct(&pick), 3000 + (uint64_t)i, 3, 0);
    static const int builtins[] = {UAS_TYPES_VARIANT, UAS_TYPES_DATA_VALUE,
                                   UAS_TYPES_DIAGNOSTIC_INFO, UAS_TYPES_EXTENSION_OBJECT,
                                   UAS_TYPES_EXPANDED_NODE_ID};
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
        add_sample(&uas_types[builtins[i]], 5000 + i * 100, 3, 40);
        add_sample(&uas_types[builtins[i]], 6000 + i * 100, 3, 0);
    }
}

static void free_samples(void)
{
    for (size_t i = 0; i < nsamples; i++)
        free(samples[i].bytes);
    nsamples = 0;
}

/* Decodes buf as t into the (reset) arena. If that succeeds, checks the
 * canonical-form property. `what` is for failure messages. */
static uas_status decode_and_check(const uint8_t *buf, size_t n, const uas_type *t,
                                   uas_arena *arena, bool zero_copy, const char *what)
{
    uas_arena_reset(arena);
    uint8_t *in = malloc(n ? n : 1);
    cr_assert_not_null(in);
    memcpy(in, buf, n);
    uas_decoder d;
    uas_decoder_init(&d, in, n, arena, NULL);
    d.zero_copy = zero_copy;
    void *v = uas_arena_alloc(arena, t->size);
    cr_assert_not_null(v);
    uas_status st = uas_decode(&d, v, t);
    cr_assert(d.pos >= in && d.pos <= in + n, "%s: decoder position outside the input", what);
    if (st != UAS_GOOD) {
        cr_assert(st == UAS_BAD_DECODING_ERROR || st == UAS_BAD_ENCODING_LIMITS_EXCEEDED ||
                      st == UAS_BAD_OUT_OF_MEMORY,
                  "%s: unexpected status %s", what, uas_status_name(st));
        free(in);
        return st;
    }
    /* decoded -> encode -> decode -> equal -> encode gives the same bytes */
    size_t n1 = uas_encoded_size(v, t);
    cr_assert_neq(n1, SIZE_MAX, "%s: a decoded value cannot be encoded; input %s", what,
                  th_hex(buf, n));
    uint8_t *e1 = malloc(n1 ? n1 : 1);
    cr_assert_not_null(e1);
    size_t w1;
    uas_status est = uas_encode_binary(v, t, e1, n1, &w1);
    cr_assert_eq(est, UAS_GOOD, "%s: re-encoding failed: %s; input %s", what, uas_status_name(est),
                 th_hex(buf, n));
    cr_assert_eq(w1, n1);
    void *v2 = uas_arena_alloc(arena, t->size);
    cr_assert_not_null(v2);
    uas_status st2 = uas_decode_binary(e1, n1, v2, t, arena, NULL, NULL);
    cr_assert_eq(st2, UAS_GOOD, "%s: the re-encoding does not decode: %s; input %s", what,
                 uas_status_name(st2), th_hex(buf, n));
    cr_assert(uas_equal(v, v2, t), "%s: decode(encode(decoded)) differs; input %s", what,
              th_hex(buf, n));
    size_t n2;
    uint8_t *e2 = th_encode(v2, t, &n2);
    cr_assert(n2 == n1 && memcmp(e1, e2, n1) == 0, "%s: re-encodings differ; input %s", what,
              th_hex(buf, n));
    free(e2);
    free(e1);
    free(in); /* after the checks: zero-copy strings point into it */
    return st;
}

Test(robustness, every_truncation_of_valid_messages_returns_decoding_error, .timeout = 60)
{
    make_samples();
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    size_t total = 0;
    for (size_t i = 0; i < nsamples; i++) {
        const sample *s = &samples[i];
        char what[128];
        snprintf(what, sizeof(what), "%s (sample %zu) whole", s->type->name, i);
        cr_assert_eq(decode_and_check(s->bytes, s->len, s->type, &arena, false, what), UAS_GOOD,
                     "%s", what);
        for (size_t len = 0; len < s->len; len++) {
            uas_arena_reset(&arena);
            uint8_t *in = malloc(len ? len : 1);
            cr_assert_not_null(in);
            memcpy(in, s->bytes, len);
            void *v = uas_arena_alloc(&arena, s->type->size);
            size_t consumed = 0;
            uas_status st = uas_decode_binary(in, len, v, s->type, &arena, NULL, &consumed);
            cr_assert_eq(st, UAS_BAD_DECODING_ERROR, "%s (sample %zu): %zu of %zu bytes gave %s",
                         s->type->name, i, len, s->len, uas_status_name(st));
            cr_assert_leq(consumed, len);
            free(in);
            total++;
        }
    }
#ifdef UAS_MINIMAL /* 154 of the 399 descriptors: fewer samples */
    cr_assert_gt(total, 20000, "only %zu truncations tried", total);
#else
    cr_assert_gt(total, 30000, "only %zu truncations tried", total);
#endif
    uas_arena_free(&arena);
    free_samples();
}

/* ---- mutations ---- */

static const uint32_t extreme[] = {0xFFFFFFFFu, 0xFFFFFFFEu, 0x7FFFFFFFu, 0x80000000u,
                                   0x00000000u, 0x00000001u, 0x000F4240u, 0x000F4241u,
                                   0x01000000u, 0x00010000u, 0x0000FFFFu, 0x00000040u};

/* Writes a copy of in with one mutation into out (capacity n + 4); returns
 * its length. */
static size_t mutate_once(pop_ctx *r, const uint8_t *in, size_t n, uint8_t *out)
{
    memcpy(out, in, n);
    size_t pos = n ? pop_below(r, (uint32_t)n) : 0;
    switch (pop_below(r, 7)) {
    case 0: /* flip 1..3 bits */
        for (unsigned k = 1 + pop_below(r, 3); k > 0 && n; k--)
            out[pop_below(r, (uint32_t)n)] ^= (uint8_t)(1u << pop_below(r, 8));
        return n;
    case 1: { /* replace a byte */
        static const uint8_t vals[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0x40, 0x3F, 0x18};
        if (n)
            out[pos] = pop_below(r, 2) ? vals[pop_below(r, 8)] : (uint8_t)pop_rand(r);
        return n;
    }
    case 2: { /* insert 1..4 random bytes */
        unsigned k = 1 + pop_below(r, 4);
        memmove(out + pos + k, in + pos, n - pos);
        for (unsigned i = 0; i < k; i++)
            out[pos + i] = (uint8_t)pop_rand(r);
        return n + k;
    }
    case 3: { /* remove 1..4 bytes */
        size_t k = 1 + pop_below(r, 4);
        if (k > n - pos)
            k = n - pos;
        memmove(out + pos, in + pos + k, n - pos - k);
        return n - k;
    }
    case 4:
    case 5: { /* an extreme 4-byte length somewhere */
        if (n < 4)
            return n;
        size_t at = pop_below(r, (uint32_t)(n - 3));
        uint32_t v = extreme[pop_below(r, sizeof(extreme) / sizeof(extreme[0]))];
        if (pop_below(r, 4) == 0)
            v = (uint32_t)(n - at + pop_below(r, 9) - 4); /* near the true remainder */
        memcpy(out + at, &v, 4);
        return n;
    }
    default: { /* copy a run of bytes elsewhere */
        if (n < 2)
            return n;
        size_t from = pop_below(r, (uint32_t)n);
        size_t len = 1 + pop_below(r, 8);
        if (len > n - from)
            len = n - from;
        if (len > n - pos)
            len = n - pos;
        memmove(out + pos, in + from, len);
        return n;
    }
    }
}

/* One to three mutations; out has room for n + 16 bytes. */
static size_t mutate(pop_ctx *r, const uint8_t *in, size_t n, uint8_t *out)
{
    size_t m = mutate_once(r, in, n, out);
    unsigned more = pop_below(r, 8) == 0 ? 1 + pop_below(r, 2) : 0;
    if (!more)
        return m;
    uint8_t *tmp = malloc(n + 16);
    cr_assert_not_null(tmp);
    for (unsigned k = 0; k < more; k++) {
        memcpy(tmp, out, m);
        m = mutate_once(r, tmp, m, out);
    }
    free(tmp);
    return m;
}

Test(robustness, thousands_of_mutations_decode_without_crash_and_reencode_canonically,
     .timeout = 60)
{
    make_samples();
    pop_ctx r;
    pop_init(&r, 20240601);
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    size_t tried = 0, decoded = 0;
    for (size_t i = 0; i < nsamples; i++) {
        const sample *s = &samples[i];
        uint8_t *buf = malloc(s->len + 64);
        cr_assert_not_null(buf);
        for (int k = 0; k < 1000; k++) {
            size_t n = mutate(&r, s->bytes, s->len, buf);
            cr_assert_leq(n, s->len + 16);
            char what[128];
            snprintf(what, sizeof(what), "%s (sample %zu) mutation %d", s->type->name, i, k);
            if (decode_and_check(buf, n, s->type, &arena, k % 2, what) == UAS_GOOD)
                decoded++;
            tried++;
        }
        free(buf);
    }
    cr_assert_gt(tried, 60000);
    /* Some mutations hit bytes that do not matter (values, not structure). */
    cr_assert_gt(decoded, tried / 20, "only %zu of %zu mutants decoded", decoded, tried);
    uas_arena_free(&arena);
    free_samples();
}

Test(robustness, random_bytes_decode_as_every_type_without_crash, .timeout = 60)
{
    pop_ctx r;
    pop_init(&r, 777);
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    uint8_t buf[96];
    size_t decoded = 0;
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++) {
        const uas_type *t = &uas_types[i];
        for (int k = 0; k < 120; k++) {
            size_t n = pop_below(&r, sizeof(buf) + 1);
            /* half pure noise, half mostly zeros (small lengths, null ids)
             * so decoding gets past the first fields */
            for (size_t b = 0; b < n; b++)
                buf[b] = k % 2 ? (uint8_t)pop_rand(&r)
                               : (pop_below(&r, 6) == 0 ? (uint8_t)pop_rand(&r) : 0);
            char what[128];
            snprintf(what, sizeof(what), "%s random %d", t->name, k);
            if (decode_and_check(buf, n, t, &arena, k % 4 == 1, what) == UAS_GOOD)
                decoded++;
        }
    }
    cr_assert_gt(decoded, 100, "only %zu random inputs decoded", decoded);
    uas_arena_free(&arena);
}

Test(robustness, service_messages_behind_an_encoding_id_decode_without_crash, .timeout = 60)
{
    /* A NodeId naming the type, then the body: what a MSG chunk carries. */
    make_samples();
    pop_ctx r;
    pop_init(&r, 99);
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    for (size_t i = 0; i < nsamples; i++) {
        const sample *s = &samples[i];
        if (!s->type->binary_encoding_id)
            continue;
        uas_nodeid id = uas_nodeid_numeric(0, s->type->binary_encoding_id);
        size_t idn;
        uint8_t *idb = th_encode(&id, &uas_types[UAS_TYPES_NODE_ID], &idn);
        size_t n = idn + s->len;
        uint8_t *msg = malloc(n + 64);
        cr_assert_not_null(msg);
        memcpy(msg, idb, idn);
        memcpy(msg + idn, s->bytes, s->len);
        uint8_t *mut = malloc(n + 64);
        cr_assert_not_null(mut);
        for (int k = 0; k < 40; k++) {
            size_t m = k == 0 ? n : mutate(&r, msg, n, mut);
            const uint8_t *in = k == 0 ? msg : mut;
            uas_decoder d;
            uas_arena_reset(&arena);
            uas_decoder_init(&d, in, m, &arena, NULL);
            uas_nodeid got;
            if (uas_decode(&d, &got, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD)
                continue;
            if (got.ns != 0 || got.kind != UAS_NODEID_NUMERIC)
                continue;
            const uas_type *t = uas_type_by_encoding_id(got.id.numeric);
            if (k == 0)
                cr_assert_eq(t, s->type, "encoding id %u names %s", got.id.numeric,
                             t ? t->name : "nothing");
            if (!t)
                continue;
            char what[128];
            snprintf(what, sizeof(what), "%s behind its encoding id, mutation %d", t->name, k);
            size_t off = (size_t)(d.pos - in);
            uas_status st = decode_and_check(in + off, m - off, t, &arena, false, what);
            if (k == 0)
                cr_assert_eq(st, UAS_GOOD, "%s", what);
        }
        free(mut);
        free(msg);
        free(idb);
    }
    uas_arena_free(&arena);
    free_samples();
}
