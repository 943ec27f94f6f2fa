/* libFuzzer target for the binary decoder.
 *
 * The input is read one of two ways:
 *  - a service message: a NodeId naming a binary encoding id of namespace 0,
 *    then the body (the layout of the .bin files in tests/golden, so those are a
 *    ready seed corpus);
 *  - otherwise: two bytes (little-endian) picking an entry of uas_types[],
 *    then the body.
 * Whatever decodes must survive the round trip: encode, decode again, compare
 * equal, re-encode to the same bytes, deep-copy to the heap and clear. Any
 * mismatch aborts, so libFuzzer keeps the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Streams the encoding through buffers of `chunk` bytes into out. */
typedef struct stream {
    uint8_t buf[32];
    size_t chunk;
    uint8_t *out;
    size_t len, cap;
} stream;

static uas_status stream_flush(void *ud, uint8_t **pos, uint8_t **end)
{
    stream *s = ud;
    size_t n = (size_t)(*pos - s->buf);
    if (n != s->chunk || s->len + n > s->cap)
        abort(); /* flushed a buffer that was not full, or wrote too much */
    memcpy(s->out + s->len, s->buf, n);
    s->len += n;
    *pos = s->buf;
    *end = s->buf + s->chunk;
    return UAS_GOOD;
}

static void fail(const char *what, const uas_type *t)
{
    fprintf(stderr, "fuzz_decode: %s (type %s)\n", what, t->name);
    abort();
}

/* Picks the type and the offset of the body. */
static const uas_type *pick_type(const uint8_t *data, size_t size, size_t *body)
{
    uas_arena a;
    uint8_t scratch[256];
    uas_arena_init(&a, scratch, sizeof(scratch), 0);
    uas_decoder d;
    uas_decoder_init(&d, data, size, &a, NULL);
    uas_nodeid id;
    if (uas_decode(&d, &id, &uas_types[UAS_TYPES_NODE_ID]) == UAS_GOOD && id.ns == 0 &&
        id.kind == UAS_NODEID_NUMERIC) {
        const uas_type *t = uas_type_by_encoding_id(id.id.numeric);
        if (t) {
            *body = (size_t)(d.pos - data);
            uas_arena_free(&a);
            return t;
        }
    }
    uas_arena_free(&a);
    if (size < 2)
        return NULL;
    *body = 2;
    return &uas_types[(size_t)(data[0] | data[1] << 8) % UAS_TYPES_COUNT];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    const uas_type *t = pick_type(data, size, &off);
    if (!t)
        return 0;

    /* A small first block, and a cap so that a lying count of huge elements
     * ends in BadOutOfMemory instead of exhausting the fuzzer's memory. */
    uint8_t first[4096];
    uas_arena arena;
    uas_arena_init(&arena, first, sizeof(first), 64u << 20);
    void *v = uas_arena_alloc(&arena, t->size);
    if (!v)
        fail("arena", t);
    uas_decoder d;
    uas_decoder_init(&d, data + off, size - off, &arena, NULL);
    d.zero_copy = size & 1; /* both string modes */
    uas_status st = uas_decode(&d, v, t);
    if (d.pos < data + off || d.pos > data + size)
        fail("decoder position outside the input", t);
    if (st != UAS_GOOD) {
        if (st != UAS_BAD_DECODING_ERROR && st != UAS_BAD_ENCODING_LIMITS_EXCEEDED &&
            st != UAS_BAD_OUT_OF_MEMORY)
            fail("unexpected decode status", t);
        uas_arena_free(&arena);
        return 0;
    }

    size_t n = uas_encoded_size(v, t);
    if (n == SIZE_MAX)
        fail("decoded value has no encoded size", t);
    uint8_t *e1 = malloc(n ? n : 1);
    uint8_t *e2 = malloc(n ? n : 1);
    if (!e1 || !e2)
        abort();
    size_t w = 0;
    if (uas_encode_binary(v, t, e1, n, &w) != UAS_GOOD || w != n)
        fail("re-encoding failed or differs from uas_encoded_size", t);

    void *v2 = uas_arena_alloc(&arena, t->size);
    if (!v2)
        fail("arena", t);
    st = uas_decode_binary(e1, n, v2, t, &arena, NULL, &w);
    if (st != UAS_GOOD || w != n)
        fail("the re-encoding does not decode completely", t);
    if (!uas_equal(v, v2, t) || !uas_equal(v2, v, t))
        fail("decode(encode(decoded)) differs", t);
    if (uas_encode_binary(v2, t, e2, n, &w) != UAS_GOOD || w != n || memcmp(e1, e2, n) != 0)
        fail("re-encodings differ", t);

    /* the same bytes when streamed through tiny buffers */
    stream sm;
    sm.chunk = 1 + data[size - 1] % sizeof(sm.buf);
    sm.out = e2;
    sm.len = 0;
    sm.cap = n;
    uas_encoder e;
    uas_encoder_init(&e, sm.buf, sm.chunk, NULL);
    e.flush = stream_flush;
    e.flush_ud = &sm;
    if (uas_encode(&e, v, t) != UAS_GOOD)
        fail("streamed encoding failed", t);
    size_t rest = (size_t)(e.pos - sm.buf);
    if (sm.len + rest != n)
        fail("streamed encoding has another length", t);
    memcpy(e2 + sm.len, sm.buf, rest);
    if (memcmp(e1, e2, n) != 0)
        fail("streamed encoding differs", t);

    /* heap copy and clear: LeakSanitizer checks the clear */
    void *c = calloc(1, t->size);
    if (!c)
        abort();
    if (uas_copy(v, c, t) != UAS_GOOD)
        fail("uas_copy", t);
    if (!uas_equal(v, c, t))
        fail("heap copy differs", t);
    uas_clear(c, t);
    free(c);

    free(e1);
    free(e2);
    uas_arena_free(&arena);
    return 0;
}
