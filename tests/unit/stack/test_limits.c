/* The codec's limits and its streaming: nesting depth, array and string
 * lengths, lying lengths, message size, full buffers, flush callbacks that
 * hand out tiny buffers, and uas_encoded_size. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "helper_codec.h"
#include "helper_populate.h"

static const uas_type *VARIANT = &uas_types[UAS_TYPES_VARIANT];
static const uas_type *DATAVALUE = &uas_types[UAS_TYPES_DATA_VALUE];
static const uas_type *EXTOBJ = &uas_types[UAS_TYPES_EXTENSION_OBJECT];
static const uas_type *DIAG = &uas_types[UAS_TYPES_DIAGNOSTIC_INFO];

static uas_limits with_depth(uint16_t depth)
{
    uas_limits l = uas_limits_default;
    l.max_depth = depth;
    return l;
}

/* Decodes from an exact-size heap copy (ASan sees over-reads); reports the
 * arena bytes handed out through *used. */
static uas_status decode_lim(const uint8_t *p, size_t n, const uas_type *t,
                             const uas_limits *limits, size_t *used)
{
    uint8_t *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, p, n);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    void *dst = uas_arena_alloc(&a, t->size);
    cr_assert_not_null(dst);
    size_t before = a.used;
    uas_status st = uas_decode_binary(copy, n, dst, t, &a, limits, NULL);
    if (used)
        *used = a.used - before;
    uas_arena_free(&a);
    free(copy);
    return st;
}

static uas_status encode_lim(const void *v, const uas_type *t, const uas_limits *limits,
                             uint8_t *buf, size_t cap, size_t *written)
{
    uas_encoder e;
    uas_encoder_init(&e, buf, cap, limits);
    uas_status st = uas_encode(&e, v, t);
    *written = (size_t)(e.pos - buf);
    return st;
}

/* ---- nesting depth ---- */

/* `levels` Variants, each an array holding the next, the last an Int32. */
static uint8_t *nested_variant_bytes(unsigned levels, size_t *len)
{
    size_t n = (levels - 1) * 5 + 5;
    uint8_t *p = malloc(n);
    cr_assert_not_null(p);
    for (unsigned i = 0; i + 1 < levels; i++) {
        uint8_t *q = p + i * 5;
        q[0] = 0x80 | UAS_BUILTIN_VARIANT;
        q[1] = 1;
        q[2] = q[3] = q[4] = 0;
    }
    uint8_t *q = p + (levels - 1) * 5;
    q[0] = UAS_BUILTIN_INT32;
    q[1] = 7;
    q[2] = q[3] = q[4] = 0;
    *len = n;
    return p;
}

Test(limits, nested_variant_arrays_at_depth_limit_decode_and_one_more_exceeds)
{
    static const uint16_t depths[] = {1, 5, 64};
    for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
        uas_limits l = with_depth(depths[k]);
        size_t n;
        uint8_t *at = nested_variant_bytes(depths[k], &n);
        cr_assert_eq(decode_lim(at, n, VARIANT, &l, NULL), UAS_GOOD, "depth %u",
                     (unsigned)depths[k]);
        free(at);
        uint8_t *over = nested_variant_bytes(depths[k] + 1u, &n);
        cr_assert_eq(decode_lim(over, n, VARIANT, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "depth %u + 1", (unsigned)depths[k]);
        free(over);
    }
    /* the default limit is 64 */
    size_t n;
    uint8_t *over = nested_variant_bytes(65, &n);
    cr_assert_eq(decode_lim(over, n, VARIANT, NULL, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    free(over);
}

Test(limits, nested_variant_arrays_beyond_depth_limit_encode_returns_limits_exceeded)
{
    enum { L = 6 };
    uas_variant chain[L + 1];
    int32_t leaf = 7;
    for (int levels = L; levels <= L + 1; levels++) {
        for (int i = 0; i < levels - 1; i++)
            uas_variant_set_array(&chain[i], &chain[i + 1], 1, VARIANT);
        uas_variant_set_scalar(&chain[levels - 1], &leaf, &uas_types[UAS_TYPES_INT32]);
        uas_limits l = with_depth(L);
        uint8_t buf[256];
        size_t w;
        uas_status st = encode_lim(&chain[0], VARIANT, &l, buf, sizeof(buf), &w);
        if (levels == L) {
            cr_assert_eq(st, UAS_GOOD);
            size_t n;
            uint8_t *want = nested_variant_bytes(L, &n);
            cr_assert_eq(w, n);
            cr_assert_arr_eq(buf, want, n);
            free(want);
        } else {
            cr_assert_eq(st, UAS_BAD_ENCODING_LIMITS_EXCEEDED);
        }
    }
}

/* ExtensionObject(RequestHeader{additional_header: ExtensionObject(...)}),
 * `levels` decoded bodies deep. */
static uint8_t *nested_extobj_bytes(unsigned levels, size_t *len)
{
    uas_request_header *h = calloc(levels, sizeof(*h));
    cr_assert_not_null(h);
    for (unsigned i = 0; i + 1 < levels; i++) {
        h[i].request_handle = i;
        h[i].additional_header.encoding = UAS_EXTOBJ_DECODED;
        h[i].additional_header.content.decoded.type = UAS_TYPE(REQUEST_HEADER);
        h[i].additional_header.content.decoded.data = &h[i + 1];
    }
    uas_extensionobject top;
    memset(&top, 0, sizeof(top));
    top.encoding = UAS_EXTOBJ_DECODED;
    top.content.decoded.type = UAS_TYPE(REQUEST_HEADER);
    top.content.decoded.data = &h[0];
    uas_limits deep = with_depth(1000);
    size_t cap = 64 * (size_t)levels + 64;
    uint8_t *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t w;
    cr_assert_eq(encode_lim(&top, EXTOBJ, &deep, buf, cap, &w), UAS_GOOD);
    /* the encoder with the tighter limit agrees with the decoder */
    uas_limits tight = with_depth((uint16_t)(levels - 1));
    size_t w2;
    uint8_t *buf2 = malloc(cap);
    cr_assert_not_null(buf2);
    cr_assert_eq(encode_lim(&top, EXTOBJ, &tight, buf2, cap, &w2), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                 "%u levels with limit %u", levels, levels - 1);
    free(buf2);
    free(h);
    *len = w;
    return buf;
}

Test(limits, nested_extensionobjects_at_depth_limit_decode_and_one_more_exceeds)
{
    static const uint16_t depths[] = {1, 4, 64};
    for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
        uas_limits l = with_depth(depths[k]);
        size_t n;
        uint8_t *at = nested_extobj_bytes(depths[k], &n);
        cr_assert_eq(decode_lim(at, n, EXTOBJ, &l, NULL), UAS_GOOD, "depth %u",
                     (unsigned)depths[k]);
        free(at);
        uint8_t *over = nested_extobj_bytes(depths[k] + 1u, &n);
        cr_assert_eq(decode_lim(over, n, EXTOBJ, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "depth %u + 1", (unsigned)depths[k]);
        free(over);
    }
}

/* DataValue{Variant(DataValue{Variant(...)})}: `levels` Variants. */
static uint8_t *nested_datavalue_bytes(unsigned levels, size_t *len)
{
    uas_datavalue *dv = calloc(levels, sizeof(*dv));
    cr_assert_not_null(dv);
    static int32_t leaf = 3;
    for (unsigned i = 0; i < levels; i++) {
        dv[i].has_value = true;
        dv[i].has_status = i % 2;
        dv[i].status = UAS_BAD_DECODING_ERROR;
        if (i + 1 < levels)
            uas_variant_set_scalar(&dv[i].value, &dv[i + 1], DATAVALUE);
        else
            uas_variant_set_scalar(&dv[i].value, &leaf, &uas_types[UAS_TYPES_INT32]);
    }
    uas_limits deep = with_depth(1000);
    size_t cap = 16 * (size_t)levels + 16;
    uint8_t *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t w;
    cr_assert_eq(encode_lim(&dv[0], DATAVALUE, &deep, buf, cap, &w), UAS_GOOD);
    free(dv);
    *len = w;
    return buf;
}

Test(limits, nested_datavalues_at_depth_limit_decode_and_one_more_exceeds)
{
    static const uint16_t depths[] = {1, 7, 64};
    for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
        uas_limits l = with_depth(depths[k]);
        size_t n;
        uint8_t *at = nested_datavalue_bytes(depths[k], &n);
        cr_assert_eq(decode_lim(at, n, DATAVALUE, &l, NULL), UAS_GOOD, "depth %u",
                     (unsigned)depths[k]);
        free(at);
        uint8_t *over = nested_datavalue_bytes(depths[k] + 1u, &n);
        cr_assert_eq(decode_lim(over, n, DATAVALUE, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "depth %u + 1", (unsigned)depths[k]);
        free(over);
    }
}

/* A DiagnosticInfo with `inner` nested inner infos: every level is the mask
 * byte 0x40 (an inner info follows), the last one 0x00. */
static uint8_t *nested_diag_bytes(unsigned inner, size_t *len)
{
    uint8_t *p = malloc((size_t)inner + 1);
    cr_assert_not_null(p);
    memset(p, 0x40, inner);
    p[inner] = 0x00;
    *len = (size_t)inner + 1;
    return p;
}

Test(limits, nested_diagnosticinfos_at_depth_limit_decode_and_one_more_exceeds)
{
    static const uint16_t depths[] = {1, 3, 64};
    for (size_t k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
        uas_limits l = with_depth(depths[k]);
        size_t n;
        uint8_t *at = nested_diag_bytes(depths[k], &n);
        cr_assert_eq(decode_lim(at, n, DIAG, &l, NULL), UAS_GOOD, "depth %u", (unsigned)depths[k]);
        free(at);
        uint8_t *over = nested_diag_bytes(depths[k] + 1u, &n);
        cr_assert_eq(decode_lim(over, n, DIAG, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "depth %u + 1", (unsigned)depths[k]);
        free(over);
    }
}

Test(limits, nested_diagnosticinfos_beyond_depth_limit_encode_returns_limits_exceeded)
{
    enum { L = 5 };
    uas_diagnosticinfo chain[L + 2];
    memset(chain, 0, sizeof(chain));
    for (int i = 0; i < L + 1; i++) {
        chain[i].has_inner_diagnostic_info = true;
        chain[i].inner_diagnostic_info = &chain[i + 1];
    }
    uas_limits l = with_depth(L);
    uint8_t buf[64];
    size_t w;
    /* L inner levels fit, L + 1 do not */
    cr_assert_eq(encode_lim(&chain[1], DIAG, &l, buf, sizeof(buf), &w), UAS_GOOD);
    cr_assert_eq(w, L + 1);
    cr_assert_eq(encode_lim(&chain[0], DIAG, &l, buf, sizeof(buf), &w),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
}

/* ---- array and string lengths ---- */

static uint8_t *int32_array_variant(uint32_t count, size_t *len)
{
    size_t n = 5 + 4 * (size_t)count;
    uint8_t *p = calloc(1, n);
    cr_assert_not_null(p);
    p[0] = 0x80 | UAS_BUILTIN_INT32;
    memcpy(p + 1, &count, 4);
    *len = n;
    return p;
}

Test(limits, array_longer_than_max_array_length_returns_limits_exceeded)
{
    uas_limits l = uas_limits_default;
    l.max_array_length = 10;
    size_t n;
    uint8_t *ok = int32_array_variant(10, &n);
    cr_assert_eq(decode_lim(ok, n, VARIANT, &l, NULL), UAS_GOOD);
    free(ok);
    uint8_t *over = int32_array_variant(11, &n);
    cr_assert_eq(decode_lim(over, n, VARIANT, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    free(over);

    /* a structure's array field, and the encoder's side */
    uas_read_request r;
    memset(&r, 0, sizeof(r));
    uas_read_value_id nodes[11];
    memset(nodes, 0, sizeof(nodes));
    r.nodes_to_read = nodes;
    r.nodes_to_read_count = 11;
    uint8_t buf[1024];
    size_t w;
    cr_assert_eq(encode_lim(&r, UAS_TYPE(READ_REQUEST), &l, buf, sizeof(buf), &w),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    cr_assert_eq(encode_lim(&r, UAS_TYPE(READ_REQUEST), NULL, buf, sizeof(buf), &w), UAS_GOOD);
    cr_assert_eq(decode_lim(buf, w, UAS_TYPE(READ_REQUEST), &l, NULL),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    r.nodes_to_read_count = 10;
    cr_assert_eq(encode_lim(&r, UAS_TYPE(READ_REQUEST), &l, buf, sizeof(buf), &w), UAS_GOOD);
    cr_assert_eq(decode_lim(buf, w, UAS_TYPE(READ_REQUEST), &l, NULL), UAS_GOOD);
}

Test(limits, variant_dimensions_count_against_max_array_length)
{
    uas_limits l = uas_limits_default;
    l.max_array_length = 3;
    /* 1 element, 4 dimensions of 1 */
    const uint8_t in[] = {0xc6, 1, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 1, 0,
                          0,    0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    cr_assert_eq(decode_lim(in, sizeof(in), VARIANT, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    l.max_array_length = 4;
    cr_assert_eq(decode_lim(in, sizeof(in), VARIANT, &l, NULL), UAS_GOOD);
}

Test(limits, string_longer_than_max_string_length_returns_limits_exceeded)
{
    uas_limits l = uas_limits_default;
    l.max_string_length = 8;
    static const int idx[] = {UAS_TYPES_STRING, UAS_TYPES_BYTE_STRING, UAS_TYPES_XML_ELEMENT};
    for (size_t k = 0; k < 3; k++) {
        const uas_type *t = &uas_types[idx[k]];
        uint8_t in[4 + 9] = {8, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'};
        cr_assert_eq(decode_lim(in, 12, t, &l, NULL), UAS_GOOD, "%s of 8", t->name);
        in[0] = 9;
        cr_assert_eq(decode_lim(in, 13, t, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED, "%s of 9",
                     t->name);
        uas_string s = {9, in + 4};
        uint8_t buf[32];
        size_t w;
        cr_assert_eq(encode_lim(&s, t, &l, buf, sizeof(buf), &w), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "encode %s of 9", t->name);
        s.length = 8;
        cr_assert_eq(encode_lim(&s, t, &l, buf, sizeof(buf), &w), UAS_GOOD);
    }
    /* strings inside other builtins obey the same limit */
    const uint8_t nodeid[] = {0x03, 0x01, 0x00, 9,   0,   0,   0,   'a',
                              'b',  'c',  'd',  'e', 'f', 'g', 'h', 'i'};
    cr_assert_eq(decode_lim(nodeid, sizeof(nodeid), &uas_types[UAS_TYPES_NODE_ID], &l, NULL),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    const uint8_t qn[] = {0x01, 0x00, 9, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'};
    cr_assert_eq(decode_lim(qn, sizeof(qn), &uas_types[UAS_TYPES_QUALIFIED_NAME], &l, NULL),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    const uint8_t lt[] = {0x02, 9, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'};
    cr_assert_eq(decode_lim(lt, sizeof(lt), &uas_types[UAS_TYPES_LOCALIZED_TEXT], &l, NULL),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
}

Test(limits, extensionobject_body_is_bounded_by_the_message_not_the_string_limit)
{
    uas_limits l = uas_limits_default;
    l.max_string_length = 2;
    const uint8_t in[] = {0x01, 0x05, 0x01, 0x00, 0x01, 4, 0, 0, 0, 1, 2, 3, 4};
    cr_assert_eq(decode_lim(in, sizeof(in), EXTOBJ, &l, NULL), UAS_GOOD);
}

/* ---- lengths that lie ---- */

typedef struct lie_case {
    const char *what;
    const uas_type *type;
    uint8_t bytes[16];
    size_t len;
} lie_case;

Test(limits, length_beyond_remaining_bytes_returns_decoding_error_without_allocating)
{
    uas_limits huge = uas_limits_default;
    huge.max_array_length = UINT32_MAX;
    huge.max_string_length = UINT32_MAX;
    const lie_case cases[] = {
        {"Int32[]", VARIANT, {0x86, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5}, 10},
        {"Variant[]", VARIANT, {0x98, 0xff, 0xff, 0xff, 0x7f, 6, 1, 0, 0, 0}, 10},
        {"String[]", VARIANT, {0x8c, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"Guid[]", VARIANT, {0x8e, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"DataValue[]", VARIANT, {0x97, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"ExtensionObject[]", VARIANT, {0x96, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"String", &uas_types[UAS_TYPES_STRING], {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6}, 10},
        {"ByteString", &uas_types[UAS_TYPES_BYTE_STRING], {0xff, 0xff, 0xff, 0x7f, 1, 2}, 10},
        {"body", EXTOBJ, {0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3}, 10},
        {"RelativePath", UAS_TYPE(RELATIVE_PATH), {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"ContentFilter", UAS_TYPE(CONTENT_FILTER), {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, 10},
        {"dims", VARIANT, {0xc6, 0x01, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 1}, 14},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const uas_limits *lims[2] = {&huge, NULL};
        for (int k = 0; k < 2; k++) {
            size_t used = 0;
            uas_status st = decode_lim(cases[i].bytes, cases[i].len, cases[i].type, lims[k], &used);
            if (k == 1 && st == UAS_BAD_ENCODING_LIMITS_EXCEEDED)
                continue; /* 0x7fffffff is over the default array limit: also fine */
            cr_assert_eq(st, UAS_BAD_DECODING_ERROR, "%s: %s", cases[i].what, uas_status_name(st));
            cr_assert_leq(used, 256, "%s: the arena handed out %zu bytes", cases[i].what, used);
        }
    }
}

Test(limits, count_under_the_array_limit_but_beyond_the_input_returns_decoding_error)
{
    /* 999999 elements promised, 5 bytes sent, default limits */
    const uint8_t in[] = {0x8c, 0x3f, 0x42, 0x0f, 0x00, 0, 0, 0, 0, 0};
    size_t used = 0;
    cr_assert_eq(decode_lim(in, sizeof(in), VARIANT, NULL, &used), UAS_BAD_DECODING_ERROR);
    cr_assert_leq(used, 256, "the arena handed out %zu bytes", used);
}

Test(limits, negative_lengths_below_minus_one_return_decoding_error)
{
    static const int32_t bad[] = {-2, -100, INT32_MIN};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t n[4];
        memcpy(n, &bad[i], 4);
        const uint8_t arr[] = {0x86, n[0], n[1], n[2], n[3], 0, 0, 0, 0};
        const uint8_t str[] = {n[0], n[1], n[2], n[3], 'a', 'b'};
        const uint8_t eo[] = {0x00, 0x00, 0x01, n[0], n[1], n[2], n[3], 0, 0};
        const uint8_t dims[] = {0xc6, 1, 0, 0, 0, 1, 0, 0, 0, n[0], n[1], n[2], n[3]};
        cr_assert_eq(decode_lim(arr, sizeof(arr), VARIANT, NULL, NULL), UAS_BAD_DECODING_ERROR,
                     "array count %d", bad[i]);
        cr_assert_eq(decode_lim(str, sizeof(str), &uas_types[UAS_TYPES_STRING], NULL, NULL),
                     UAS_BAD_DECODING_ERROR, "string length %d", bad[i]);
        cr_assert_eq(decode_lim(eo, sizeof(eo), EXTOBJ, NULL, NULL), UAS_BAD_DECODING_ERROR,
                     "body length %d", bad[i]);
        cr_assert_eq(decode_lim(dims, sizeof(dims), VARIANT, NULL, NULL), UAS_BAD_DECODING_ERROR,
                     "dimension count %d", bad[i]);
    }
}

Test(limits, message_larger_than_max_message_size_returns_limits_exceeded)
{
    uas_limits l = uas_limits_default;
    l.max_message_size = 17;
    size_t n;
    uint8_t *p = int32_array_variant(3, &n); /* 17 bytes */
    cr_assert_eq(n, 17);
    cr_assert_eq(decode_lim(p, n, VARIANT, &l, NULL), UAS_GOOD);
    l.max_message_size = 16;
    cr_assert_eq(decode_lim(p, n, VARIANT, &l, NULL), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    l.max_message_size = 0; /* unlimited */
    cr_assert_eq(decode_lim(p, n, VARIANT, &l, NULL), UAS_GOOD);
    free(p);
}

/* ---- full buffers and streaming ---- */

/* A ReadResponse of n results; every second one holds a random structure in
 * its Variant, so ExtensionObject bodies of all sizes appear. */
static void big_read_response(uas_read_response *r, size_t n, uint64_t seed)
{
    pop_ctx c;
    pop_init(&c, seed);
    memset(r, 0, sizeof(*r));
    pop_value(&c, &r->response_header, UAS_TYPE(RESPONSE_HEADER));
    r->results = uas_calloc(n, sizeof(uas_datavalue));
    cr_assert_not_null(r->results);
    r->results_count = n;
    for (size_t i = 0; i < n; i++) {
        c.budget = 40;
        if (i % 2) {
            pop_value(&c, &r->results[i], DATAVALUE);
            continue;
        }
        const uas_type *t = pop_random_struct(&c);
        void *data = uas_calloc(1, t->size);
        cr_assert_not_null(data);
        pop_value(&c, data, t);
        r->results[i].has_value = true;
        r->results[i].has_source_timestamp = true;
        r->results[i].source_timestamp = (int64_t)i;
        uas_variant_set_scalar(&r->results[i].value, data, t);
    }
}

Test(encoder, too_small_buffer_without_flush_returns_limits_exceeded_at_every_size)
{
    uas_read_response r;
    big_read_response(&r, 6, 11);
    size_t n;
    uint8_t *want = th_encode(&r, UAS_TYPE(READ_RESPONSE), &n);
    cr_assert_gt(n, 300);
    for (size_t cap = 0; cap < n; cap++) {
        uint8_t *buf = malloc(cap ? cap : 1); /* exact: ASan catches writes past it */
        cr_assert_not_null(buf);
        uas_encoder e;
        uas_encoder_init(&e, buf, cap, NULL);
        uas_status st = uas_encode(&e, &r, UAS_TYPE(READ_RESPONSE));
        cr_assert_eq(st, UAS_BAD_ENCODING_LIMITS_EXCEEDED, "cap %zu of %zu: %s", cap, n,
                     uas_status_name(st));
        cr_assert(e.full, "cap %zu: full flag not set", cap);
        cr_assert_leq((size_t)(e.pos - buf), cap);
        free(buf);
    }
    uint8_t *buf = malloc(n);
    cr_assert_not_null(buf);
    size_t w;
    cr_assert_eq(uas_encode_binary(&r, UAS_TYPE(READ_RESPONSE), buf, n, &w), UAS_GOOD);
    cr_assert_eq(w, n);
    cr_assert_arr_eq(buf, want, n);
    free(buf);
    free(want);
    uas_clear(&r, UAS_TYPE(READ_RESPONSE));
}

/* Collects a stream of chunks handed out by the flush callback. */
typedef struct sink {
    uint8_t *chunk; /* exact-size heap buffer, reused */
    size_t chunk_size;
    uint8_t *out;
    size_t out_len, out_cap;
    size_t flushes;
    size_t fail_after; /* 0: never */
    uas_status fail_with;
} sink;

static uas_status sink_flush(void *ud, uint8_t **pos, uint8_t **end)
{
    sink *s = ud;
    size_t n = (size_t)(*pos - s->chunk);
    cr_assert_leq(n, s->chunk_size);
    /* the encoder only flushes a buffer it has filled */
    cr_assert_eq(n, s->chunk_size, "flush of a %zu-byte chunk holding %zu bytes", s->chunk_size, n);
    cr_assert_leq(s->out_len + n, s->out_cap, "stream longer than the one-buffer encoding");
    memcpy(s->out + s->out_len, s->chunk, n);
    s->out_len += n;
    s->flushes++;
    if (s->fail_after && s->flushes >= s->fail_after)
        return s->fail_with;
    memset(s->chunk, 0xAA, s->chunk_size); /* stale bytes must not leak into the stream */
    *pos = s->chunk;
    *end = s->chunk + s->chunk_size;
    return UAS_GOOD;
}

static uas_status stream_encode(const void *v, const uas_type *t, sink *s, size_t chunk, size_t cap)
{
    memset(s, 0, sizeof(*s));
    s->chunk = malloc(chunk);
    s->chunk_size = chunk;
    s->out = malloc(cap);
    s->out_cap = cap;
    cr_assert(s->chunk && s->out);
    uas_encoder e;
    uas_encoder_init(&e, s->chunk, chunk, NULL);
    e.flush = sink_flush;
    e.flush_ud = s;
    uas_status st = uas_encode(&e, v, t);
    if (st == UAS_GOOD) {
        size_t n = (size_t)(e.pos - s->chunk);
        cr_assert_leq(s->out_len + n, s->out_cap);
        memcpy(s->out + s->out_len, s->chunk, n);
        s->out_len += n;
    }
    return st;
}

static void sink_free(sink *s)
{
    free(s->chunk);
    free(s->out);
}

Test(encoder, flush_with_tiny_buffers_gives_the_same_stream_as_one_buffer)
{
    static const size_t chunks[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 257, 4096};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        uas_read_response r;
        big_read_response(&r, 150, seed);
        size_t n;
        uint8_t *want = th_encode(&r, UAS_TYPE(READ_RESPONSE), &n);
        cr_assert_gt(n, 4096, "seed %llu: only %zu bytes", (unsigned long long)seed, n);
        for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
            sink s;
            uas_status st = stream_encode(&r, UAS_TYPE(READ_RESPONSE), &s, chunks[k], n);
            cr_assert_eq(st, UAS_GOOD, "chunk %zu: %s", chunks[k], uas_status_name(st));
            cr_assert_eq(s.out_len, n, "chunk %zu: streamed %zu bytes, expected %zu", chunks[k],
                         s.out_len, n);
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(s.out[i], want[i],
                             "chunk %zu: byte %zu is 0x%02x, expected 0x%02x (seed %llu)",
                             chunks[k], i, s.out[i], want[i], (unsigned long long)seed);
            cr_assert_eq(s.flushes, (n - 1) / chunks[k], "chunk %zu: %zu flushes for %zu bytes",
                         chunks[k], s.flushes, n);
            sink_free(&s);
        }
        free(want);
        uas_clear(&r, UAS_TYPE(READ_RESPONSE));
    }
}

Test(encoder, flush_with_tiny_buffers_matches_for_every_generated_type)
{
    /* Every structure with nested ExtensionObjects straddling 7-byte and
     * 3-byte buffers. */
    for (size_t i = 0; i < pop_encodable_struct_count(); i++) {
        const uas_type *t = pop_encodable_struct(i);
        pop_ctx c;
        pop_init(&c, 4242 + i);
        void *v = calloc(1, t->size);
        cr_assert_not_null(v);
        pop_value(&c, v, t);
        size_t n;
        uint8_t *want = th_encode(v, t, &n);
        static const size_t chunks[] = {3, 7};
        for (size_t k = 0; k < 2; k++) {
            sink s;
            cr_assert_eq(stream_encode(v, t, &s, chunks[k], n), UAS_GOOD, "%s", t->name);
            cr_assert_eq(s.out_len, n, "%s chunk %zu", t->name, chunks[k]);
            cr_assert_arr_eq(s.out, want, n, "%s chunk %zu", t->name, chunks[k]);
            sink_free(&s);
        }
        free(want);
        uas_clear(v, t);
        free(v);
    }
}

Test(encoder, flush_error_aborts_the_encoding_with_that_status)
{
    uas_read_response r;
    big_read_response(&r, 20, 5);
    size_t n;
    uint8_t *want = th_encode(&r, UAS_TYPE(READ_RESPONSE), &n);
    for (size_t after = 1; after <= 3; after++) {
        sink s;
        memset(&s, 0, sizeof(s));
        s.chunk = malloc(64);
        s.chunk_size = 64;
        s.out = malloc(n);
        s.out_cap = n;
        s.fail_after = after;
        s.fail_with = UAS_BAD_TCP_INTERNAL_ERROR;
        uas_encoder e;
        uas_encoder_init(&e, s.chunk, 64, NULL);
        e.flush = sink_flush;
        e.flush_ud = &s;
        cr_assert_eq(uas_encode(&e, &r, UAS_TYPE(READ_RESPONSE)), UAS_BAD_TCP_INTERNAL_ERROR);
        cr_assert_eq(s.flushes, after, "encoder kept flushing after an error");
        sink_free(&s);
    }
    free(want);
    uas_clear(&r, UAS_TYPE(READ_RESPONSE));
}

static uas_status empty_flush(void *ud, uint8_t **pos, uint8_t **end)
{
    (void)ud;
    *end = *pos; /* no room */
    return UAS_GOOD;
}

Test(encoder, flush_that_gives_no_room_returns_limits_exceeded)
{
    uas_string s = uas_string_from("0123456789");
    uint8_t buf[4];
    uas_encoder e;
    uas_encoder_init(&e, buf, sizeof(buf), NULL);
    e.flush = empty_flush;
    cr_assert_eq(uas_encode(&e, &s, &uas_types[UAS_TYPES_STRING]),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
}

Test(encoder, encoded_size_equals_the_bytes_written_for_large_values)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        uas_read_response r;
        big_read_response(&r, 40, seed + 100);
        size_t size = uas_encoded_size(&r, UAS_TYPE(READ_RESPONSE));
        cr_assert_gt(size, 256);
        uint8_t *buf = malloc(size + 64);
        cr_assert_not_null(buf);
        size_t w;
        cr_assert_eq(uas_encode_binary(&r, UAS_TYPE(READ_RESPONSE), buf, size + 64, &w), UAS_GOOD);
        cr_assert_eq(w, size, "seed %llu: uas_encoded_size %zu, written %zu",
                     (unsigned long long)seed, size, w);
        free(buf);
        uas_clear(&r, UAS_TYPE(READ_RESPONSE));
    }
}

Test(encoder, encoded_size_of_unencodable_value_is_size_max)
{
    uas_variant v;
    uas_variant_set_scalar(&v, NULL, &uas_types[UAS_TYPES_INT32]);
    cr_assert_eq(uas_encoded_size(&v, VARIANT), SIZE_MAX);
}

/* Regression: each nesting level of ExtensionObjects whose bodies do not fit
 * the current buffer used to cost two more walks of the body (one to size it,
 * one to write it, each repeating the nested levels), so 20 levels took
 * seconds and 60 would never finish. The timeout is the assertion. */
Test(encoder, deeply_nested_extensionobjects_encode_in_linear_time, .timeout = 20)
{
    enum { LEVELS = 60 };
    static char payload[600];
    memset(payload, 'p', sizeof(payload) - 1);
    uas_request_header *h = calloc(LEVELS, sizeof(*h));
    cr_assert_not_null(h);
    for (unsigned i = 0; i + 1 < LEVELS; i++) {
        h[i].additional_header.encoding = UAS_EXTOBJ_DECODED;
        h[i].additional_header.content.decoded.type = UAS_TYPE(REQUEST_HEADER);
        h[i].additional_header.content.decoded.data = &h[i + 1];
    }
    h[LEVELS - 1].audit_entry_id = uas_string_from(payload);
    const uas_type *t = UAS_TYPE(REQUEST_HEADER);

    size_t n = uas_encoded_size(&h[0], t);
    cr_assert_gt(n, 600 + 20 * LEVELS);
    uint8_t *want = malloc(n);
    cr_assert_not_null(want);
    size_t w;
    cr_assert_eq(uas_encode_binary(&h[0], t, want, n, &w), UAS_GOOD);
    cr_assert_eq(w, n);

    /* too small, no flush: fails fast at every size */
    uint8_t *small = malloc(n);
    cr_assert_not_null(small);
    for (size_t cap = 0; cap < n; cap += 7)
        cr_assert_eq(uas_encode_binary(&h[0], t, small, cap, &w), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                     "cap %zu", cap);
    free(small);

    /* streamed through tiny buffers: the same bytes */
    static const size_t chunks[] = {1, 7, 64, 300};
    for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
        sink s;
        cr_assert_eq(stream_encode(&h[0], t, &s, chunks[k], n), UAS_GOOD, "chunk %zu", chunks[k]);
        cr_assert_eq(s.out_len, n);
        cr_assert_arr_eq(s.out, want, n, "chunk %zu", chunks[k]);
        sink_free(&s);
    }

    /* and it decodes back (depth 60 is within the default 64) */
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_request_header got;
    cr_assert_eq(uas_decode_binary(want, n, &got, t, &a, NULL, NULL), UAS_GOOD);
    cr_assert(uas_equal(&got, &h[0], t));
    uas_arena_free(&a);
    free(want);
    free(h);
}

/* ---- zero-copy decoding ---- */

static bool inside(const void *p, const uint8_t *buf, size_t n)
{
    return (const uint8_t *)p >= buf && (const uint8_t *)p < buf + n;
}

Test(decoder, zero_copy_strings_point_into_the_input_and_compare_equal)
{
    uas_read_value_id r;
    memset(&r, 0, sizeof(r));
    r.node_id = uas_nodeid_string(1, "a.node");
    r.index_range = uas_string_from("1:2");
    r.data_encoding.name = uas_string_from("Default Binary");
    size_t n;
    uint8_t *bytes = th_encode(&r, UAS_TYPE(READ_VALUE_ID), &n);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_decoder d;
    uas_decoder_init(&d, bytes, n, &a, NULL);
    d.zero_copy = true;
    uas_read_value_id got;
    cr_assert_eq(uas_decode(&d, &got, UAS_TYPE(READ_VALUE_ID)), UAS_GOOD);
    cr_assert(uas_equal(&got, &r, UAS_TYPE(READ_VALUE_ID)));
    cr_assert(inside(got.node_id.id.string.data, bytes, n));
    cr_assert(inside(got.index_range.data, bytes, n));
    cr_assert(inside(got.data_encoding.name.data, bytes, n));
    cr_assert_eq(a.used, 0, "zero-copy decode of strings used %zu arena bytes", a.used);
    uas_arena_free(&a);
    free(bytes);
}

Test(decoder, zero_copy_decoding_of_generated_values_equals_the_original)
{
    for (size_t i = 0; i < UAS_TYPES_COUNT; i += 3) {
        const uas_type *t = &uas_types[i];
        pop_ctx c;
        pop_init(&c, 99 + i);
        void *v = calloc(1, t->size);
        cr_assert_not_null(v);
        pop_value(&c, v, t);
        size_t n;
        uint8_t *bytes = th_encode(v, t, &n);
        uas_arena a;
        uas_arena_init(&a, NULL, 0, 0);
        uas_decoder d;
        uas_decoder_init(&d, bytes, n, &a, NULL);
        d.zero_copy = true;
        void *got = uas_arena_alloc(&a, t->size);
        cr_assert_eq(uas_decode(&d, got, t), UAS_GOOD, "%s", t->name);
        cr_assert_eq(d.pos, bytes + n, "%s", t->name);
        cr_assert(uas_equal(v, got, t), "%s: zero-copy decode differs", t->name);
        uas_arena_free(&a);
        free(bytes);
        uas_clear(v, t);
        free(v);
    }
}
