/* The 25 builtin types of OPC UA Part 6 through the binary codec: round trips
 * (encode -> decode -> uas_equal -> re-encode gives the same bytes), exact
 * bytes of the compact and flagged forms, and the decoder's rejections. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>
#include <ua/nodeids.h>

#include "helper_codec.h"
#include "helper_populate.h"

#define BYTES(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

/* ---- a tiny byte builder for expected encodings ---- */

typedef struct bb {
    uint8_t b[1024];
    size_t n;
} bb;

static void bb_u8(bb *o, uint8_t v)
{
    o->b[o->n++] = v;
}

static void bb_u16(bb *o, uint16_t v)
{
    bb_u8(o, (uint8_t)v);
    bb_u8(o, (uint8_t)(v >> 8));
}

static void bb_u32(bb *o, uint32_t v)
{
    bb_u16(o, (uint16_t)v);
    bb_u16(o, (uint16_t)(v >> 16));
}

static void bb_u64(bb *o, uint64_t v)
{
    bb_u32(o, (uint32_t)v);
    bb_u32(o, (uint32_t)(v >> 32));
}

static void bb_str(bb *o, const char *s)
{
    size_t n = strlen(s);
    bb_u32(o, (uint32_t)n);
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static uas_string S(const char *s)
{
    return uas_string_from(s);
}

static uas_string null_string(void)
{
    uas_string s = {0, NULL};
    return s;
}

static uas_string empty_string(void)
{
    uas_string s = {0, UAS_EMPTY_ARRAY};
    return s;
}

/* Decodes bytes as t into a fresh arena that the caller frees. */
static uas_status decode(const uint8_t *p, size_t n, void *dst, const uas_type *t, uas_arena *a)
{
    uas_arena_init(a, NULL, 0, 0);
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan catches over-reads */
    cr_assert_not_null(copy);
    memcpy(copy, p, n);
    uas_status st = uas_decode_binary(copy, n, dst, t, a, NULL, NULL);
    /* Decoded strings are copies, so the input may go now. */
    free(copy);
    return st;
}

/* ---- String, ByteString, XmlElement ---- */

static const uas_type *string_types[3] = {&uas_types[UAS_TYPES_STRING],
                                          &uas_types[UAS_TYPES_BYTE_STRING],
                                          &uas_types[UAS_TYPES_XML_ELEMENT]};

Test(string, abc_encodes_int32_length_then_bytes)
{
    for (int i = 0; i < 3; i++) {
        uas_string s = S("abc");
        th_expect_bytes(&s, string_types[i], BYTES(0x03, 0, 0, 0, 0x61, 0x62, 0x63),
                        string_types[i]->name);
    }
}

Test(string, null_encodes_minus_one_and_decodes_with_null_data)
{
    for (int i = 0; i < 3; i++) {
        uas_string s = null_string();
        th_expect_bytes(&s, string_types[i], BYTES(0xff, 0xff, 0xff, 0xff), string_types[i]->name);
        uas_string d;
        uas_arena a;
        cr_assert_eq(decode(BYTES(0xff, 0xff, 0xff, 0xff), &d, string_types[i], &a), UAS_GOOD);
        cr_assert_null(d.data, "%s: null decoded with data %p", string_types[i]->name, d.data);
        cr_assert_eq(d.length, 0);
        uas_arena_free(&a);
    }
}

Test(string, empty_encodes_zero_length_and_decodes_as_empty_not_null)
{
    for (int i = 0; i < 3; i++) {
        uas_string s = empty_string();
        th_expect_bytes(&s, string_types[i], BYTES(0, 0, 0, 0), string_types[i]->name);
        uas_string d;
        uas_arena a;
        cr_assert_eq(decode(BYTES(0, 0, 0, 0), &d, string_types[i], &a), UAS_GOOD);
        cr_assert_eq(d.data, UAS_EMPTY_ARRAY, "%s: empty decoded with data %p",
                     string_types[i]->name, d.data);
        cr_assert_eq(d.length, 0);
        uas_arena_free(&a);
    }
}

Test(string, null_and_empty_compare_unequal)
{
    uas_string n = null_string(), e = empty_string();
    for (int i = 0; i < 3; i++) {
        cr_assert_not(uas_equal(&n, &e, string_types[i]), "%s", string_types[i]->name);
        cr_assert_not(uas_equal(&e, &n, string_types[i]), "%s", string_types[i]->name);
    }
}

Test(string, binary_bytes_with_zeros_roundtrip)
{
    uint8_t raw[300];
    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t)(i * 7);
    uas_string s = {sizeof(raw), raw};
    for (int i = 0; i < 3; i++)
        th_roundtrip(&s, string_types[i], "300 binary bytes", NULL, NULL);
}

Test(string, negative_length_below_minus_one_returns_bad_decoding_error)
{
    uas_string d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0xfe, 0xff, 0xff, 0xff), &d, &uas_types[UAS_TYPES_STRING], &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0, 0, 0, 0x80), &d, &uas_types[UAS_TYPES_STRING], &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(string, length_beyond_input_returns_bad_decoding_error)
{
    uas_string d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(4, 0, 0, 0, 'a', 'b', 'c'), &d, &uas_types[UAS_TYPES_STRING], &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

/* ---- Boolean and the integers ---- */

Test(boolean, true_and_false_encode_as_one_and_zero)
{
    bool t = true, f = false;
    th_expect_bytes(&t, &uas_types[UAS_TYPES_BOOLEAN], BYTES(0x01), "true");
    th_expect_bytes(&f, &uas_types[UAS_TYPES_BOOLEAN], BYTES(0x00), "false");
}

Test(boolean, decode_of_any_nonzero_byte_gives_true)
{
    for (int v = 1; v < 256; v++) {
        uint8_t in = (uint8_t)v;
        bool b = false;
        uas_arena a;
        cr_assert_eq(decode(&in, 1, &b, &uas_types[UAS_TYPES_BOOLEAN], &a), UAS_GOOD);
        cr_assert(b, "byte 0x%02x decoded as false", v);
        uas_arena_free(&a);
    }
}

Test(integers, limits_of_every_width_roundtrip_little_endian)
{
    int8_t i8[] = {INT8_MIN, -1, 0, INT8_MAX};
    uint8_t u8[] = {0, 1, UINT8_MAX};
    int16_t i16[] = {INT16_MIN, -1, 0, INT16_MAX};
    uint16_t u16[] = {0, 1, UINT16_MAX};
    int32_t i32[] = {INT32_MIN, -1, 0, INT32_MAX};
    uint32_t u32[] = {0, 1, UINT32_MAX};
    int64_t i64[] = {INT64_MIN, -1, 0, INT64_MAX};
    uint64_t u64[] = {0, 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof(i8); i++)
        th_expect_bytes(&i8[i], &uas_types[UAS_TYPES_SBYTE], BYTES((uint8_t)i8[i]), "SByte");
    for (size_t i = 0; i < sizeof(u8); i++)
        th_expect_bytes(&u8[i], &uas_types[UAS_TYPES_BYTE], BYTES(u8[i]), "Byte");
    for (size_t i = 0; i < 4; i++) {
        bb o = {.n = 0};
        bb_u16(&o, (uint16_t)i16[i]);
        th_expect_bytes(&i16[i], &uas_types[UAS_TYPES_INT16], o.b, o.n, "Int16");
        o.n = 0;
        bb_u32(&o, (uint32_t)i32[i]);
        th_expect_bytes(&i32[i], &uas_types[UAS_TYPES_INT32], o.b, o.n, "Int32");
        o.n = 0;
        bb_u64(&o, (uint64_t)i64[i]);
        th_expect_bytes(&i64[i], &uas_types[UAS_TYPES_INT64], o.b, o.n, "Int64");
    }
    for (size_t i = 0; i < 3; i++) {
        bb o = {.n = 0};
        bb_u16(&o, u16[i]);
        th_expect_bytes(&u16[i], &uas_types[UAS_TYPES_UINT16], o.b, o.n, "UInt16");
        o.n = 0;
        bb_u32(&o, u32[i]);
        th_expect_bytes(&u32[i], &uas_types[UAS_TYPES_UINT32], o.b, o.n, "UInt32");
        o.n = 0;
        bb_u64(&o, u64[i]);
        th_expect_bytes(&u64[i], &uas_types[UAS_TYPES_UINT64], o.b, o.n, "UInt64");
    }
}

Test(integers, int32_minus_two_known_answer)
{
    int32_t v = -2;
    th_expect_bytes(&v, &uas_types[UAS_TYPES_INT32], BYTES(0xfe, 0xff, 0xff, 0xff), "-2");
    uint16_t u = 0x1234;
    th_expect_bytes(&u, &uas_types[UAS_TYPES_UINT16], BYTES(0x34, 0x12), "0x1234");
}

Test(integers, truncated_input_returns_bad_decoding_error)
{
    static const struct {
        int index;
        size_t size;
    } widths[] = {{UAS_TYPES_INT16, 2},  {UAS_TYPES_UINT32, 4}, {UAS_TYPES_INT64, 8},
                  {UAS_TYPES_DOUBLE, 8}, {UAS_TYPES_GUID, 16},  {UAS_TYPES_DATE_TIME, 8}};
    uint8_t in[16] = {0};
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
        for (size_t n = 0; n < widths[w].size; n++) {
            uint8_t out[16];
            uas_arena a;
            cr_assert_eq(decode(in, n, out, &uas_types[widths[w].index], &a),
                         UAS_BAD_DECODING_ERROR, "%s from %zu bytes",
                         uas_types[widths[w].index].name, n);
            uas_arena_free(&a);
        }
    }
}

/* ---- Float and Double: compared bitwise ---- */

Test(float, nan_payloads_infinities_and_negative_zero_keep_their_bits)
{
    static const uint32_t bits[] = {0x7FC00000u, 0xFFC00000u, 0x7FC00001u, 0x7F800001u,
                                    0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u};
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        float f;
        memcpy(&f, &bits[i], 4);
        bb o = {.n = 0};
        bb_u32(&o, bits[i]);
        th_expect_bytes(&f, &uas_types[UAS_TYPES_FLOAT], o.b, o.n, "float");
        float d;
        uas_arena a;
        cr_assert_eq(decode(o.b, o.n, &d, &uas_types[UAS_TYPES_FLOAT], &a), UAS_GOOD);
        uint32_t got;
        memcpy(&got, &d, 4);
        cr_assert_eq(got, bits[i], "float bits 0x%08x decoded as 0x%08x", bits[i], got);
        uas_arena_free(&a);
    }
}

Test(float, negative_zero_differs_from_zero_and_nan_equals_same_nan)
{
    float pz = 0.0f, nz = -0.0f, nan1 = NAN, nan2 = NAN;
    cr_assert_not(uas_equal(&pz, &nz, &uas_types[UAS_TYPES_FLOAT]));
    cr_assert(uas_equal(&nan1, &nan2, &uas_types[UAS_TYPES_FLOAT]));
}

Test(double, nan_payloads_infinities_and_negative_zero_keep_their_bits)
{
    static const uint64_t bits[] = {
        0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF8000000000123ull, 0x7FF0000000000001ull,
        0x7FF0000000000000ull, 0xFFF0000000000000ull, 0x8000000000000000ull, 0x0000000000000001ull};
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        double f;
        memcpy(&f, &bits[i], 8);
        bb o = {.n = 0};
        bb_u64(&o, bits[i]);
        th_expect_bytes(&f, &uas_types[UAS_TYPES_DOUBLE], o.b, o.n, "double");
        double d;
        uas_arena a;
        cr_assert_eq(decode(o.b, o.n, &d, &uas_types[UAS_TYPES_DOUBLE], &a), UAS_GOOD);
        uint64_t got;
        memcpy(&got, &d, 8);
        cr_assert_eq(got, bits[i], "double bits 0x%016llx decoded as 0x%016llx",
                     (unsigned long long)bits[i], (unsigned long long)got);
        uas_arena_free(&a);
    }
}

Test(double, negative_zero_encodes_sign_bit_last)
{
    double nz = -0.0;
    th_expect_bytes(&nz, &uas_types[UAS_TYPES_DOUBLE], BYTES(0, 0, 0, 0, 0, 0, 0, 0x80), "-0.0");
    double one = 1.0;
    th_expect_bytes(&one, &uas_types[UAS_TYPES_DOUBLE], BYTES(0, 0, 0, 0, 0, 0, 0xf0, 0x3f), "1.0");
}

/* ---- DateTime, StatusCode, Guid ---- */

Test(datetime, min_zero_and_max_roundtrip)
{
    uas_datetime v[] = {INT64_MIN, 0, 1, 132000000000000000ll, INT64_MAX};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        bb o = {.n = 0};
        bb_u64(&o, (uint64_t)v[i]);
        th_expect_bytes(&v[i], &uas_types[UAS_TYPES_DATE_TIME], o.b, o.n, "DateTime");
    }
}

Test(statuscode, encodes_as_little_endian_uint32)
{
    uas_status s = UAS_BAD_DECODING_ERROR;
    th_expect_bytes(&s, &uas_types[UAS_TYPES_STATUS_CODE], BYTES(0, 0, 0x07, 0x80),
                    "BadDecodingError");
}

Test(guid, encodes_data1_to_data3_little_endian_then_data4_bytes)
{
    /* 72962B91-FA75-4AE6-8D28-B404DC7DAF63 */
    uas_guid g = {0x72962B91u, 0xFA75, 0x4AE6, {0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63}};
    th_expect_bytes(&g, &uas_types[UAS_TYPES_GUID],
                    BYTES(0x91, 0x2b, 0x96, 0x72, 0x75, 0xfa, 0xe6, 0x4a, 0x8d, 0x28, 0xb4, 0x04,
                          0xdc, 0x7d, 0xaf, 0x63),
                    "guid");
}

/* ---- NodeId: the six wire forms ---- */

static const uas_type *NODEID = &uas_types[UAS_TYPES_NODE_ID];
static const uas_type *XNODEID = &uas_types[UAS_TYPES_EXPANDED_NODE_ID];

Test(nodeid, ns0_id_up_to_255_uses_two_byte_form)
{
    uas_nodeid a = uas_nodeid_numeric(0, 0), b = uas_nodeid_numeric(0, 255);
    th_expect_bytes(&a, NODEID, BYTES(0x00, 0x00), "i=0");
    th_expect_bytes(&b, NODEID, BYTES(0x00, 0xff), "i=255");
}

Test(nodeid, ns_up_to_255_and_id_up_to_65535_uses_four_byte_form)
{
    uas_nodeid a = uas_nodeid_numeric(0, 256);
    uas_nodeid b = uas_nodeid_numeric(1, 5);
    uas_nodeid c = uas_nodeid_numeric(255, 65535);
    th_expect_bytes(&a, NODEID, BYTES(0x01, 0x00, 0x00, 0x01), "i=256");
    th_expect_bytes(&b, NODEID, BYTES(0x01, 0x01, 0x05, 0x00), "ns=1;i=5");
    th_expect_bytes(&c, NODEID, BYTES(0x01, 0xff, 0xff, 0xff), "ns=255;i=65535");
}

Test(nodeid, ns_over_255_or_id_over_65535_uses_numeric_form)
{
    uas_nodeid a = uas_nodeid_numeric(256, 1);
    uas_nodeid b = uas_nodeid_numeric(0, 65536);
    uas_nodeid c = uas_nodeid_numeric(65535, UINT32_MAX);
    th_expect_bytes(&a, NODEID, BYTES(0x02, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00), "ns=256;i=1");
    th_expect_bytes(&b, NODEID, BYTES(0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00), "i=65536");
    th_expect_bytes(&c, NODEID, BYTES(0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
                    "ns=65535;i=4294967295");
}

Test(nodeid, string_form_encodes_ns_then_string)
{
    uas_nodeid a = uas_nodeid_string(1, "Hi");
    th_expect_bytes(&a, NODEID, BYTES(0x03, 0x01, 0x00, 0x02, 0, 0, 0, 'H', 'i'), "ns=1;s=Hi");
    uas_nodeid n = uas_nodeid_string(2, NULL);
    th_expect_bytes(&n, NODEID, BYTES(0x03, 0x02, 0x00, 0xff, 0xff, 0xff, 0xff), "null string");
    uas_nodeid e = uas_nodeid_string(2, "");
    th_expect_bytes(&e, NODEID, BYTES(0x03, 0x02, 0x00, 0, 0, 0, 0), "empty string");
    cr_assert_not(uas_equal(&n, &e, NODEID));
}

Test(nodeid, guid_form_encodes_ns_then_guid)
{
    uas_nodeid g;
    memset(&g, 0, sizeof(g));
    g.ns = 0x0102;
    g.kind = UAS_NODEID_GUID;
    g.id.guid = (uas_guid){0x04030201u, 0x0605, 0x0807, {9, 10, 11, 12, 13, 14, 15, 16}};
    th_expect_bytes(&g, NODEID,
                    BYTES(0x04, 0x02, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                    "guid id");
}

Test(nodeid, bytestring_form_encodes_ns_then_bytestring)
{
    uint8_t raw[3] = {0xde, 0xad, 0x00};
    uas_nodeid b;
    memset(&b, 0, sizeof(b));
    b.ns = 7;
    b.kind = UAS_NODEID_BYTESTRING;
    b.id.bytestring = (uas_bytestring){3, raw};
    th_expect_bytes(&b, NODEID, BYTES(0x05, 0x07, 0x00, 3, 0, 0, 0, 0xde, 0xad, 0x00), "b=dead00");
    /* Same bytes as a string id are a different NodeId. */
    uas_nodeid s = b;
    s.kind = UAS_NODEID_STRING;
    cr_assert_not(uas_equal(&b, &s, NODEID));
}

Test(nodeid, non_compact_numeric_forms_decode_to_the_same_id)
{
    uas_nodeid d4, d6;
    uas_arena a4, a6;
    cr_assert_eq(decode(BYTES(0x01, 0x00, 0x05, 0x00), &d4, NODEID, &a4), UAS_GOOD);
    cr_assert_eq(decode(BYTES(0x02, 0x00, 0x00, 0x05, 0, 0, 0), &d6, NODEID, &a6), UAS_GOOD);
    uas_nodeid want = uas_nodeid_numeric(0, 5);
    cr_assert(uas_equal(&d4, &want, NODEID));
    cr_assert(uas_equal(&d6, &want, NODEID));
    /* and the encoder writes them back in the compact form */
    th_expect_bytes(&d6, NODEID, BYTES(0x00, 0x05), "re-encoded i=5");
    uas_arena_free(&a4);
    uas_arena_free(&a6);
}

Test(nodeid, expanded_flags_in_plain_nodeid_return_bad_decoding_error)
{
    uas_nodeid d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x80, 0x05, 0, 0, 0, 0), &d, NODEID, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0x40, 0x05, 0, 0, 0, 0), &d, NODEID, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(nodeid, unknown_form_byte_returns_bad_decoding_error)
{
    for (uint8_t form = 6; form < 0x40; form++) {
        uint8_t in[8] = {form};
        uas_nodeid d;
        uas_arena a;
        cr_assert_eq(decode(in, sizeof(in), &d, NODEID, &a), UAS_BAD_DECODING_ERROR, "form 0x%02x",
                     form);
        uas_arena_free(&a);
    }
}

Test(nodeid, invalid_kind_encode_returns_bad_encoding_error)
{
    uas_nodeid id = uas_nodeid_numeric(0, 1);
    id.kind = 9;
    uint8_t buf[32];
    size_t n;
    cr_assert_eq(uas_encode_binary(&id, NODEID, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
    cr_assert_eq(uas_encoded_size(&id, NODEID), SIZE_MAX);
}

/* ---- ExpandedNodeId ---- */

static uas_expandednodeid xid(uas_nodeid id, const char *uri, uint32_t server)
{
    uas_expandednodeid x;
    memset(&x, 0, sizeof(x));
    x.nodeid = id;
    x.namespace_uri = uri ? S(uri) : null_string();
    x.server_index = server;
    return x;
}

Test(expandednodeid, without_uri_and_server_index_is_the_plain_nodeid)
{
    uas_expandednodeid x = xid(uas_nodeid_numeric(0, 5), NULL, 0);
    th_expect_bytes(&x, XNODEID, BYTES(0x00, 0x05), "i=5");
}

Test(expandednodeid, namespace_uri_sets_flag_0x80_and_follows_the_id)
{
    uas_expandednodeid x = xid(uas_nodeid_numeric(0, 5), "u", 0);
    th_expect_bytes(&x, XNODEID, BYTES(0x80, 0x05, 0x01, 0, 0, 0, 'u'), "nsu=u;i=5");
    uas_expandednodeid y = xid(uas_nodeid_numeric(2, 300), "ab", 0);
    th_expect_bytes(&y, XNODEID, BYTES(0x81, 0x02, 0x2c, 0x01, 0x02, 0, 0, 0, 'a', 'b'),
                    "nsu=ab;ns=2;i=300");
}

Test(expandednodeid, server_index_sets_flag_0x40_and_comes_last)
{
    uas_expandednodeid x = xid(uas_nodeid_numeric(0, 5), NULL, 3);
    th_expect_bytes(&x, XNODEID, BYTES(0x40, 0x05, 0x03, 0, 0, 0), "svr=3;i=5");
}

Test(expandednodeid, both_flags_write_uri_before_server_index)
{
    uas_expandednodeid x = xid(uas_nodeid_string(1, "x"), "u", 0x01020304);
    th_expect_bytes(
        &x, XNODEID,
        BYTES(0xc3, 0x01, 0x00, 0x01, 0, 0, 0, 'x', 0x01, 0, 0, 0, 'u', 0x04, 0x03, 0x02, 0x01),
        "svr;nsu;s=x");
}

Test(expandednodeid, empty_namespace_uri_keeps_the_flag_and_stays_empty)
{
    uas_expandednodeid x = xid(uas_nodeid_numeric(0, 1), "", 0);
    th_expect_bytes(&x, XNODEID, BYTES(0x80, 0x01, 0, 0, 0, 0), "nsu=;i=1");
    uas_expandednodeid d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x80, 0x01, 0, 0, 0, 0), &d, XNODEID, &a), UAS_GOOD);
    cr_assert_eq(d.namespace_uri.data, UAS_EMPTY_ARRAY);
    uas_arena_free(&a);
}

/* ---- QualifiedName, LocalizedText ---- */

Test(qualifiedname, encodes_ns_then_name)
{
    uas_qualifiedname q = {2, S("x")};
    th_expect_bytes(&q, &uas_types[UAS_TYPES_QUALIFIED_NAME], BYTES(0x02, 0x00, 1, 0, 0, 0, 'x'),
                    "2:x");
    uas_qualifiedname n = {65535, null_string()};
    th_expect_bytes(&n, &uas_types[UAS_TYPES_QUALIFIED_NAME],
                    BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "65535:null");
    uas_qualifiedname e = {65535, empty_string()};
    cr_assert_not(uas_equal(&n, &e, &uas_types[UAS_TYPES_QUALIFIED_NAME]));
}

Test(localizedtext, each_mask_combination_writes_mask_and_present_fields)
{
    const uas_type *t = &uas_types[UAS_TYPES_LOCALIZED_TEXT];
    for (int mask = 0; mask < 4; mask++) {
        for (int empty = 0; empty < 2; empty++) {
            uas_localizedtext l;
            l.locale = mask & 1 ? (empty ? empty_string() : S("en")) : null_string();
            l.text = mask & 2 ? (empty ? empty_string() : S("hello")) : null_string();
            bb o = {.n = 0};
            bb_u8(&o, (uint8_t)mask);
            if (mask & 1)
                bb_str(&o, empty ? "" : "en");
            if (mask & 2)
                bb_str(&o, empty ? "" : "hello");
            th_expect_bytes(&l, t, o.b, o.n, "localized text");
        }
    }
}

Test(localizedtext, reserved_mask_bits_are_ignored_on_decode)
{
    uas_localizedtext l;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0xfe, 1, 0, 0, 0, 'x'), &l, &uas_types[UAS_TYPES_LOCALIZED_TEXT], &a),
                 UAS_GOOD);
    cr_assert_null(l.locale.data);
    cr_assert(uas_string_eq_cstr(&l.text, "x"));
    uas_arena_free(&a);
}

/* ---- ExtensionObject ---- */

static const uas_type *EXTOBJ = &uas_types[UAS_TYPES_EXTENSION_OBJECT];

static uas_extensionobject eo_encoded(uint8_t encoding, uas_nodeid type_id, uas_bytestring body)
{
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = encoding;
    x.content.encoded.type_id = type_id;
    x.content.encoded.body = body;
    return x;
}

static uas_read_value_id sample_rvi(void)
{
    uas_read_value_id r;
    memset(&r, 0, sizeof(r));
    r.node_id = uas_nodeid_numeric(0, 2258);
    r.attribute_id = 13;
    return r;
}

/* The 18 body bytes of sample_rvi(). */
#define RVI_BODY                                                                                   \
    0x01, 0x00, 0xd2, 0x08, 0x0d, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff, 0xff,   \
        0xff

Test(extensionobject, empty_encodes_type_id_and_encoding_zero)
{
    uas_extensionobject x = eo_encoded(UAS_EXTOBJ_EMPTY, uas_nodeid_numeric(0, 0), null_string());
    th_expect_bytes(&x, EXTOBJ, BYTES(0x00, 0x00, 0x00), "empty");
    uas_extensionobject y = eo_encoded(UAS_EXTOBJ_EMPTY, uas_nodeid_numeric(1, 7), null_string());
    th_expect_bytes(&y, EXTOBJ, BYTES(0x01, 0x01, 0x07, 0x00, 0x00), "empty with type id");
}

Test(extensionobject, known_encoding_id_decodes_into_the_structure)
{
    uas_read_value_id r = sample_rvi();
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = UAS_TYPE(READ_VALUE_ID);
    x.content.decoded.data = &r;
    th_expect_bytes(&x, EXTOBJ, BYTES(0x01, 0x00, 0x74, 0x02, 0x01, 18, 0, 0, 0, RVI_BODY),
                    "ReadValueId");
    uas_extensionobject d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x01, 0x00, 0x74, 0x02, 0x01, 18, 0, 0, 0, RVI_BODY), &d, EXTOBJ, &a),
                 UAS_GOOD);
    cr_assert_eq(d.encoding, UAS_EXTOBJ_DECODED);
    cr_assert_eq(d.content.decoded.type, UAS_TYPE(READ_VALUE_ID));
    const uas_read_value_id *got = d.content.decoded.data;
    cr_assert_eq(got->attribute_id, 13);
    cr_assert_eq(got->node_id.id.numeric, 2258);
    uas_arena_free(&a);
}

Test(extensionobject, unknown_binary_body_is_kept_as_bytes_with_its_type_id)
{
    uint8_t body[4] = {0xde, 0xad, 0xbe, 0xef};
    uas_extensionobject x =
        eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(2, 99), (uas_bytestring){4, body});
    th_expect_bytes(&x, EXTOBJ,
                    BYTES(0x01, 0x02, 0x63, 0x00, 0x01, 4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef),
                    "ns=2;i=99 body");
    /* An ns0 numeric id that is no encoding id is unknown too. */
    uas_extensionobject y =
        eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(0, 1), (uas_bytestring){4, body});
    th_roundtrip(&y, EXTOBJ, "i=1 body", NULL, NULL);
    uas_extensionobject d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x01, 0x02, 0x63, 0x00, 0x01, 4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef), &d,
                        EXTOBJ, &a),
                 UAS_GOOD);
    cr_assert_eq(d.encoding, UAS_EXTOBJ_BYTESTRING);
    cr_assert_eq(d.content.encoded.type_id.ns, 2);
    cr_assert_eq(d.content.encoded.type_id.id.numeric, 99);
    cr_assert_eq(d.content.encoded.body.length, 4);
    cr_assert_arr_eq(d.content.encoded.body.data, body, 4);
    uas_arena_free(&a);
}

Test(extensionobject, null_and_empty_binary_bodies_stay_distinct)
{
    uas_extensionobject n =
        eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(3, 1), null_string());
    uas_extensionobject e =
        eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(3, 1), empty_string());
    th_expect_bytes(&n, EXTOBJ, BYTES(0x01, 0x03, 0x01, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff),
                    "null body");
    th_expect_bytes(&e, EXTOBJ, BYTES(0x01, 0x03, 0x01, 0x00, 0x01, 0, 0, 0, 0), "empty body");
    cr_assert_not(uas_equal(&n, &e, EXTOBJ));
}

Test(extensionobject, xml_body_is_kept_as_bytes_even_for_a_known_type_id)
{
    uas_extensionobject x =
        eo_encoded(UAS_EXTOBJ_XML,
                   uas_nodeid_numeric(0, UAS_NS0ID_READVALUEID_ENCODING_DEFAULTBINARY), S("<a/>"));
    th_expect_bytes(&x, EXTOBJ, BYTES(0x01, 0x00, 0x74, 0x02, 0x02, 4, 0, 0, 0, '<', 'a', '/', '>'),
                    "xml");
    uas_extensionobject d;
    uas_arena a;
    cr_assert_eq(
        decode(BYTES(0x01, 0x00, 0x74, 0x02, 0x02, 4, 0, 0, 0, '<', 'a', '/', '>'), &d, EXTOBJ, &a),
        UAS_GOOD);
    cr_assert_eq(d.encoding, UAS_EXTOBJ_XML);
    uas_arena_free(&a);
}

Test(extensionobject, trailing_bytes_in_a_known_body_are_skipped)
{
    /* A newer peer may append fields: the body length is authoritative. */
    uas_extensionobject d;
    uas_arena a;
    size_t consumed = 0;
    const uint8_t in[] = {0x01, 0x00, 0x74, 0x02, 0x01, 20, 0, 0, 0, RVI_BODY, 0xaa, 0xbb, 0x42};
    uas_arena_init(&a, NULL, 0, 0);
    cr_assert_eq(uas_decode_binary(in, sizeof(in), &d, EXTOBJ, &a, NULL, &consumed), UAS_GOOD);
    cr_assert_eq(consumed, sizeof(in) - 1, "consumed %zu", consumed);
    cr_assert_eq(d.encoding, UAS_EXTOBJ_DECODED);
    uas_read_value_id want = sample_rvi();
    cr_assert(uas_equal(d.content.decoded.data, &want, UAS_TYPE(READ_VALUE_ID)));
    uas_arena_free(&a);
}

Test(extensionobject, known_body_shorter_than_its_structure_returns_bad_decoding_error)
{
    /* Length 17 cuts the last byte of the structure although more bytes follow. */
    uas_extensionobject d;
    uas_arena a;
    cr_assert_eq(
        decode(BYTES(0x01, 0x00, 0x74, 0x02, 0x01, 17, 0, 0, 0, RVI_BODY, 0, 0), &d, EXTOBJ, &a),
        UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(extensionobject, body_length_beyond_input_returns_bad_decoding_error)
{
    uas_extensionobject d;
    uas_arena a;
    cr_assert_eq(
        decode(BYTES(0x01, 0x02, 0x63, 0x00, 0x01, 5, 0, 0, 0, 1, 2, 3, 4), &d, EXTOBJ, &a),
        UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0x01, 0x00, 0x74, 0x02, 0x01, 19, 0, 0, 0, RVI_BODY), &d, EXTOBJ, &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(extensionobject, encoding_byte_above_two_returns_bad_decoding_error)
{
    for (int enc = 3; enc < 256; enc++) {
        uint8_t in[] = {0x00, 0x00, (uint8_t)enc, 0, 0, 0, 0};
        uas_extensionobject d;
        uas_arena a;
        cr_assert_eq(decode(in, sizeof(in), &d, EXTOBJ, &a), UAS_BAD_DECODING_ERROR,
                     "encoding byte %d", enc);
        uas_arena_free(&a);
    }
}

Test(extensionobject, decoded_without_data_or_encodable_type_returns_bad_encoding_error)
{
    uas_read_value_id r = sample_rvi();
    int32_t i = 5;
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = UAS_TYPE(READ_VALUE_ID);
    x.content.decoded.data = NULL;
    uint8_t buf[64];
    size_t n;
    cr_assert_eq(uas_encode_binary(&x, EXTOBJ, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
    x.content.decoded.type = &uas_types[UAS_TYPES_INT32]; /* not a structure */
    x.content.decoded.data = &i;
    cr_assert_eq(uas_encode_binary(&x, EXTOBJ, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
    x.content.decoded.type = NULL;
    x.content.decoded.data = &r;
    cr_assert_eq(uas_encode_binary(&x, EXTOBJ, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
    x.encoding = 9;
    cr_assert_eq(uas_encode_binary(&x, EXTOBJ, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
}

/* ---- DataValue ---- */

static const uas_type *DATAVALUE = &uas_types[UAS_TYPES_DATA_VALUE];

Test(datavalue, every_mask_combination_roundtrips_in_wire_field_order)
{
    int32_t payload = 0x11223344;
    for (int mask = 0; mask < 64; mask++) {
        uas_datavalue v;
        memset(&v, 0, sizeof(v));
        v.has_value = mask & 0x01;
        v.has_status = mask & 0x02;
        v.has_source_timestamp = mask & 0x04;
        v.has_server_timestamp = mask & 0x08;
        v.has_source_picoseconds = mask & 0x10;
        v.has_server_picoseconds = mask & 0x20;
        if (v.has_value)
            uas_variant_set_scalar(&v.value, &payload, &uas_types[UAS_TYPES_INT32]);
        v.status = 0x80AB0000u;
        v.source_timestamp = 0x0102030405060708ll;
        v.server_timestamp = 0x1112131415161718ll;
        v.source_picoseconds = 0x2122;
        v.server_picoseconds = 0x3132;

        /* Part 6: value, status, source ts, source ps, server ts, server ps. */
        bb o = {.n = 0};
        bb_u8(&o, (uint8_t)mask);
        if (mask & 0x01) {
            bb_u8(&o, UAS_BUILTIN_INT32);
            bb_u32(&o, (uint32_t)payload);
        }
        if (mask & 0x02)
            bb_u32(&o, v.status);
        if (mask & 0x04)
            bb_u64(&o, (uint64_t)v.source_timestamp);
        if (mask & 0x10)
            bb_u16(&o, v.source_picoseconds);
        if (mask & 0x08)
            bb_u64(&o, (uint64_t)v.server_timestamp);
        if (mask & 0x20)
            bb_u16(&o, v.server_picoseconds);
        char what[32];
        snprintf(what, sizeof(what), "mask 0x%02x", mask);
        th_expect_bytes(&v, DATAVALUE, o.b, o.n, what);
    }
}

Test(datavalue, differing_flags_compare_unequal)
{
    uas_datavalue a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    b.has_status = true; /* status 0 (Good) present vs absent */
    cr_assert_not(uas_equal(&a, &b, DATAVALUE));
    b.has_status = false;
    b.status = 5; /* not present: not compared */
    cr_assert(uas_equal(&a, &b, DATAVALUE));
}

Test(datavalue, reserved_mask_bits_are_ignored_on_decode)
{
    uas_datavalue d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0xc2, 0x01, 0x02, 0x03, 0x04), &d, DATAVALUE, &a), UAS_GOOD);
    cr_assert(d.has_status);
    cr_assert_not(d.has_value);
    cr_assert_eq(d.status, 0x04030201u);
    uas_arena_free(&a);
}

/* ---- Variant ---- */

static const uas_type *VARIANT = &uas_types[UAS_TYPES_VARIANT];

/* One sample value of every builtin kind 1..25 (kind 24 is an Int32 Variant,
 * for arrays); all memory is static. */
typedef union sample_storage {
    bool b;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f;
    double d;
    uas_string s;
    uas_guid g;
    uas_nodeid n;
    uas_expandednodeid x;
    uas_qualifiedname q;
    uas_localizedtext l;
    uas_extensionobject e;
    uas_datavalue dv;
    uas_variant v;
    uas_diagnosticinfo di;
} sample_storage;

static int32_t sample_int = 42;

static void sample(uint8_t kind, int variation, sample_storage *o)
{
    memset(o, 0, sizeof(*o));
    switch (kind) {
    case UAS_BUILTIN_BOOLEAN:
        o->b = variation & 1;
        break;
    case UAS_BUILTIN_SBYTE:
        o->i8 = (int8_t)(-5 - variation);
        break;
    case UAS_BUILTIN_BYTE:
        o->u8 = (uint8_t)(200 + variation);
        break;
    case UAS_BUILTIN_INT16:
        o->i16 = (int16_t)(-300 - variation);
        break;
    case UAS_BUILTIN_UINT16:
        o->u16 = (uint16_t)(60000 + variation);
        break;
    case UAS_BUILTIN_INT32:
        o->i32 = -70000 - variation;
        break;
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_STATUSCODE:
        o->u32 = 4000000000u + (uint32_t)variation;
        break;
    case UAS_BUILTIN_INT64:
    case UAS_BUILTIN_DATETIME:
        o->i64 = -5000000000ll - variation;
        break;
    case UAS_BUILTIN_UINT64:
        o->u64 = 0xFEDCBA9876543210ull + (uint64_t)variation;
        break;
    case UAS_BUILTIN_FLOAT:
        o->f = 1.5f + (float)variation;
        break;
    case UAS_BUILTIN_DOUBLE:
        o->d = -2.25 - variation;
        break;
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
        o->s = variation % 3 == 2 ? null_string() : S(variation % 3 ? "" : "hi");
        break;
    case UAS_BUILTIN_XMLELEMENT:
        o->s = S("<a/>");
        break;
    case UAS_BUILTIN_GUID:
        o->g = (uas_guid){0x01020304u + (uint32_t)variation, 5, 6, {7, 8, 9, 10, 11, 12, 13, 14}};
        break;
    case UAS_BUILTIN_NODEID:
        o->n = variation & 1 ? uas_nodeid_string(3, "node") : uas_nodeid_numeric(1, 70000);
        break;
    case UAS_BUILTIN_EXPANDEDNODEID:
        o->x = xid(uas_nodeid_numeric(0, (uint32_t)variation), "urn:x", 2);
        break;
    case UAS_BUILTIN_QUALIFIEDNAME:
        o->q = (uas_qualifiedname){(uint16_t)variation, S("name")};
        break;
    case UAS_BUILTIN_LOCALIZEDTEXT:
        o->l = (uas_localizedtext){S("de"), S("Hallo")};
        break;
    case UAS_BUILTIN_EXTENSIONOBJECT:
        o->e = eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(4, 4), S("raw"));
        break;
    case UAS_BUILTIN_DATAVALUE:
        o->dv.has_value = true;
        o->dv.has_server_timestamp = true;
        o->dv.server_timestamp = variation;
        uas_variant_set_scalar(&o->dv.value, &sample_int, &uas_types[UAS_TYPES_INT32]);
        break;
    case UAS_BUILTIN_VARIANT:
        uas_variant_set_scalar(&o->v, &sample_int, &uas_types[UAS_TYPES_INT32]);
        break;
    case UAS_BUILTIN_DIAGNOSTICINFO:
        o->di.has_symbolic_id = true;
        o->di.symbolic_id = variation;
        o->di.has_additional_info = true;
        o->di.additional_info = S("info");
        break;
    default:
        cr_assert_fail("no sample for kind %u", kind);
    }
}

Test(variant, empty_encodes_a_zero_byte)
{
    uas_variant v;
    memset(&v, 0, sizeof(v));
    th_expect_bytes(&v, VARIANT, BYTES(0x00), "empty");
}

Test(variant, scalar_of_each_builtin_roundtrips_with_its_type_id_first)
{
    for (uint8_t kind = 1; kind <= 25; kind++) {
        if (kind == UAS_BUILTIN_VARIANT)
            continue;
        sample_storage s;
        sample(kind, 0, &s);
        uas_variant v;
        uas_variant_set_scalar(&v, &s, &uas_types[kind - 1]);
        uint8_t *bytes;
        size_t n;
        th_roundtrip(&v, VARIANT, uas_types[kind - 1].name, &bytes, &n);
        cr_assert_eq(bytes[0], kind, "%s: variant byte 0x%02x", uas_types[kind - 1].name, bytes[0]);
        /* the rest is the plain encoding of the value */
        size_t vn;
        uint8_t *plain = th_encode(&s, &uas_types[kind - 1], &vn);
        cr_assert_eq(n, vn + 1, "%s", uas_types[kind - 1].name);
        cr_assert_arr_eq(bytes + 1, plain, vn, "%s", uas_types[kind - 1].name);
        free(plain);
        free(bytes);
    }
}

Test(variant, scalar_variant_inside_variant_encode_returns_bad_encoding_error)
{
    sample_storage s;
    sample(UAS_BUILTIN_VARIANT, 0, &s);
    uas_variant v;
    uas_variant_set_scalar(&v, &s.v, VARIANT);
    uint8_t buf[64];
    size_t n;
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
}

Test(variant, scalar_variant_type_byte_returns_bad_decoding_error)
{
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x18, 0x06, 1, 0, 0, 0), &d, VARIANT, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, type_id_above_25_returns_bad_decoding_error)
{
    for (uint8_t tid = 26; tid < 64; tid++) {
        uint8_t in[] = {tid, 0, 0, 0, 0, 0, 0, 0, 0};
        uint8_t in_arr[] = {(uint8_t)(tid | 0x80), 1, 0, 0, 0, 0, 0, 0, 0};
        uas_variant d;
        uas_arena a;
        cr_assert_eq(decode(in, sizeof(in), &d, VARIANT, &a), UAS_BAD_DECODING_ERROR, "0x%02x",
                     tid);
        uas_arena_free(&a);
        cr_assert_eq(decode(in_arr, sizeof(in_arr), &d, VARIANT, &a), UAS_BAD_DECODING_ERROR,
                     "0x%02x", in_arr[0]);
        uas_arena_free(&a);
    }
}

Test(variant, flags_without_type_returns_bad_decoding_error)
{
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x80, 0, 0, 0, 0), &d, VARIANT, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0x40), &d, VARIANT, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, null_scalar_data_encode_returns_bad_encoding_error)
{
    uas_variant v;
    uas_variant_set_scalar(&v, NULL, &uas_types[UAS_TYPES_INT32]);
    uint8_t buf[16];
    size_t n;
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
}

Test(variant, int32_array_known_answer)
{
    int32_t arr[3] = {1, -1, 256};
    uas_variant v;
    uas_variant_set_array(&v, arr, 3, &uas_types[UAS_TYPES_INT32]);
    th_expect_bytes(&v, VARIANT,
                    BYTES(0x86, 3, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0),
                    "Int32[3]");
}

Test(variant, null_and_empty_arrays_stay_distinct)
{
    uas_variant n, e;
    memset(&n, 0, sizeof(n));
    n.type = &uas_types[UAS_TYPES_STRING];
    n.is_array = true;
    n.data = NULL;
    uas_variant_set_array(&e, NULL, 0, &uas_types[UAS_TYPES_STRING]);
    cr_assert_eq(e.data, UAS_EMPTY_ARRAY);
    th_expect_bytes(&n, VARIANT, BYTES(0x8c, 0xff, 0xff, 0xff, 0xff), "null String[]");
    th_expect_bytes(&e, VARIANT, BYTES(0x8c, 0, 0, 0, 0), "empty String[]");
    cr_assert_not(uas_equal(&n, &e, VARIANT));
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x8c, 0xff, 0xff, 0xff, 0xff), &d, VARIANT, &a), UAS_GOOD);
    cr_assert(d.is_array);
    cr_assert_null(d.data);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0x8c, 0, 0, 0, 0), &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.data, UAS_EMPTY_ARRAY);
    uas_arena_free(&a);
}

Test(variant, array_of_each_builtin_roundtrips)
{
    for (uint8_t kind = 1; kind <= 25; kind++) {
        const uas_type *t = &uas_types[kind - 1];
        sample_storage elems[3];
        uint8_t packed[3 * sizeof(sample_storage)];
        for (int i = 0; i < 3; i++) {
            sample(kind, i, &elems[i]);
            memcpy(packed + (size_t)i * t->size, &elems[i], t->size);
        }
        uas_variant v;
        uas_variant_set_array(&v, packed, 3, t);
        uint8_t *bytes;
        size_t n;
        th_roundtrip(&v, VARIANT, t->name, &bytes, &n);
        cr_assert_eq(bytes[0], 0x80 | kind, "%s[]: variant byte 0x%02x", t->name, bytes[0]);
        cr_assert_eq(bytes[1], 3);
        free(bytes);
    }
}

Test(variant, multi_dimensional_array_roundtrips_with_dimensions_after_elements)
{
    int32_t arr[6] = {1, 2, 3, 4, 5, 6};
    uint32_t dims[2] = {2, 3};
    uas_variant v;
    uas_variant_set_array(&v, arr, 6, &uas_types[UAS_TYPES_INT32]);
    v.array_dimensions = dims;
    v.array_dimensions_length = 2;
    bb o = {.n = 0};
    bb_u8(&o, 0xc6);
    bb_u32(&o, 6);
    for (int i = 0; i < 6; i++)
        bb_u32(&o, (uint32_t)arr[i]);
    bb_u32(&o, 2);
    bb_u32(&o, 2);
    bb_u32(&o, 3);
    th_expect_bytes(&v, VARIANT, o.b, o.n, "Int32[2][3]");

    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(o.b, o.n, &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.array_dimensions_length, 2);
    cr_assert_eq(d.array_dimensions[0], 2);
    cr_assert_eq(d.array_dimensions[1], 3);
    uas_arena_free(&a);

    /* Same elements without dimensions are a different value. */
    uas_variant flat = v;
    flat.array_dimensions = NULL;
    flat.array_dimensions_length = 0;
    cr_assert_not(uas_equal(&v, &flat, VARIANT));
}

Test(variant, dims_product_mismatch_returns_bad_decoding_error)
{
    /* 6 elements, dimensions 2 x 2 */
    bb o = {.n = 0};
    bb_u8(&o, 0xc6);
    bb_u32(&o, 6);
    for (int i = 0; i < 6; i++)
        bb_u32(&o, (uint32_t)i);
    bb_u32(&o, 2);
    bb_u32(&o, 2);
    bb_u32(&o, 2);
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(o.b, o.n, &d, VARIANT, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    /* a product far beyond the element count */
    o.n -= 8;
    bb_u32(&o, 0x10000);
    bb_u32(&o, 0x10001);
    cr_assert_eq(decode(o.b, o.n, &d, VARIANT, &a), UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, dims_on_a_scalar_return_bad_decoding_error)
{
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0x46, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0), &d, VARIANT, &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, empty_or_null_dims_list_returns_bad_decoding_error)
{
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0xc6, 0, 0, 0, 0, 0, 0, 0, 0), &d, VARIANT, &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
    cr_assert_eq(decode(BYTES(0xc6, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff), &d, VARIANT, &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, negative_dimension_returns_bad_decoding_error)
{
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(BYTES(0xc6, 1, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff),
                        &d, VARIANT, &a),
                 UAS_BAD_DECODING_ERROR);
    uas_arena_free(&a);
}

Test(variant, zero_dimension_matches_an_empty_array)
{
    uas_variant d;
    uas_arena a;
    const uint8_t in[] = {0xc6, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0};
    cr_assert_eq(decode(in, sizeof(in), &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.array_length, 0);
    th_expect_bytes(&d, VARIANT, in, sizeof(in), "Int32[0][5]");
    uas_arena_free(&a);
}

Test(variant, structure_scalar_travels_as_extensionobject_and_decodes_unwrapped)
{
    uas_read_value_id r = sample_rvi();
    uas_variant v;
    uas_variant_set_scalar(&v, &r, UAS_TYPE(READ_VALUE_ID));
    th_expect_bytes(&v, VARIANT, BYTES(0x16, 0x01, 0x00, 0x74, 0x02, 0x01, 18, 0, 0, 0, RVI_BODY),
                    "ReadValueId");
    uas_variant d;
    uas_arena a;
    cr_assert_eq(
        decode(BYTES(0x16, 0x01, 0x00, 0x74, 0x02, 0x01, 18, 0, 0, 0, RVI_BODY), &d, VARIANT, &a),
        UAS_GOOD);
    cr_assert_eq(d.type, UAS_TYPE(READ_VALUE_ID), "decoded as %s", d.type ? d.type->name : "-");
    cr_assert_not(d.is_array);
    cr_assert(uas_equal(d.data, &r, UAS_TYPE(READ_VALUE_ID)));
    uas_arena_free(&a);
}

Test(variant, structure_array_decodes_as_array_of_the_structure)
{
    uas_read_value_id r[2] = {sample_rvi(), sample_rvi()};
    r[1].attribute_id = 1;
    uas_variant v;
    uas_variant_set_array(&v, r, 2, UAS_TYPE(READ_VALUE_ID));
    uint8_t *bytes;
    size_t n;
    th_roundtrip(&v, VARIANT, "ReadValueId[2]", &bytes, &n);
    cr_assert_eq(bytes[0], 0x96);
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(bytes, n, &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.type, UAS_TYPE(READ_VALUE_ID));
    cr_assert_eq(d.array_length, 2);
    cr_assert_eq(((uas_read_value_id *)d.data)[1].attribute_id, 1);
    uas_arena_free(&a);
    free(bytes);
}

Test(variant, extensionobject_array_with_mixed_bodies_stays_extensionobjects)
{
    uas_read_value_id r = sample_rvi();
    uas_extensionobject eo[2];
    memset(eo, 0, sizeof(eo));
    eo[0].encoding = UAS_EXTOBJ_DECODED;
    eo[0].content.decoded.type = UAS_TYPE(READ_VALUE_ID);
    eo[0].content.decoded.data = &r;
    eo[1] = eo_encoded(UAS_EXTOBJ_BYTESTRING, uas_nodeid_numeric(5, 5), S("zz"));
    uas_variant v;
    uas_variant_set_array(&v, eo, 2, EXTOBJ);
    th_roundtrip(&v, VARIANT, "ExtensionObject[2] mixed", NULL, NULL);
}

Test(variant, extensionobject_holding_a_decoded_structure_comes_back_as_the_structure)
{
    /* The wire cannot tell "Variant of ExtensionObject(ReadValueId)" from
     * "Variant of ReadValueId": both decode as the latter. */
    uas_read_value_id r = sample_rvi();
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(READ_VALUE_ID);
    eo.content.decoded.data = &r;
    uas_variant wrapped, direct;
    uas_variant_set_scalar(&wrapped, &eo, EXTOBJ);
    uas_variant_set_scalar(&direct, &r, UAS_TYPE(READ_VALUE_ID));
    size_t n1, n2;
    uint8_t *b1 = th_encode(&wrapped, VARIANT, &n1);
    uint8_t *b2 = th_encode(&direct, VARIANT, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_arr_eq(b1, b2, n1);
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(b1, n1, &d, VARIANT, &a), UAS_GOOD);
    cr_assert(uas_equal(&d, &direct, VARIANT));
    cr_assert_not(uas_equal(&d, &wrapped, VARIANT));
    uas_arena_free(&a);
    free(b1);
    free(b2);
}

Test(variant, empty_structure_array_comes_back_as_empty_extensionobject_array)
{
    /* Zero elements carry no type id: the decoder can only say ExtensionObject[]. */
    uas_variant v;
    uas_variant_set_array(&v, NULL, 0, UAS_TYPE(READ_VALUE_ID));
    uint8_t buf[8];
    size_t n;
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_GOOD);
    cr_assert_eq(n, 5);
    cr_assert_arr_eq(buf, ((uint8_t[]){0x96, 0, 0, 0, 0}), 5);
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(buf, n, &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.type, EXTOBJ);
    cr_assert_eq(d.data, UAS_EMPTY_ARRAY);
    uas_arena_free(&a);
}

Test(variant, enumeration_travels_as_int32)
{
    int32_t nc = UAS_NODE_CLASS_VARIABLE;
    uas_variant v;
    uas_variant_set_scalar(&v, &nc, UAS_TYPE(NODE_CLASS));
    uint8_t buf[16];
    size_t n;
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_GOOD);
    cr_assert_eq(n, 5);
    cr_assert_arr_eq(buf, ((uint8_t[]){0x06, 0x02, 0, 0, 0}), 5);
    uas_variant d;
    uas_arena a;
    cr_assert_eq(decode(buf, n, &d, VARIANT, &a), UAS_GOOD);
    cr_assert_eq(d.type, &uas_types[UAS_TYPES_INT32]);
    cr_assert_eq(*(int32_t *)d.data, 2);
    uas_arena_free(&a);

    int32_t arr[2] = {1, 4};
    uas_variant_set_array(&v, arr, 2, UAS_TYPE(NODE_CLASS));
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_GOOD);
    cr_assert_eq(n, 13);
    cr_assert_arr_eq(buf, ((uint8_t[]){0x86, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0}), 13);
}

Test(variant, structure_without_encoding_id_returns_bad_encoding_error)
{
    /* A structure descriptor with no binary encoding cannot go in a Variant. */
    uas_type t = *UAS_TYPE(READ_VALUE_ID);
    t.binary_encoding_id = 0;
    uas_read_value_id r = sample_rvi();
    uas_variant v;
    uas_variant_set_scalar(&v, &r, &t);
    uint8_t buf[64];
    size_t n;
    cr_assert_eq(uas_encode_binary(&v, VARIANT, buf, sizeof(buf), &n), UAS_BAD_ENCODING_ERROR);
}

Test(variant, array_of_variants_roundtrips)
{
    sample_storage s1, s2;
    sample(UAS_BUILTIN_STRING, 0, &s1);
    sample(UAS_BUILTIN_DOUBLE, 0, &s2);
    int32_t ints[2] = {7, 8};
    uas_variant inner[4];
    uas_variant_set_scalar(&inner[0], &s1, &uas_types[UAS_TYPES_STRING]);
    uas_variant_set_scalar(&inner[1], &s2, &uas_types[UAS_TYPES_DOUBLE]);
    memset(&inner[2], 0, sizeof(inner[2]));
    uas_variant_set_array(&inner[3], ints, 2, &uas_types[UAS_TYPES_INT32]);
    uas_variant v;
    uas_variant_set_array(&v, inner, 4, VARIANT);
    uint8_t *bytes;
    size_t n;
    th_roundtrip(&v, VARIANT, "Variant[4]", &bytes, &n);
    cr_assert_eq(bytes[0], 0x98);
    cr_assert_eq(bytes[5], UAS_BUILTIN_STRING);
    free(bytes);
}

/* ---- DiagnosticInfo ---- */

static const uas_type *DIAG = &uas_types[UAS_TYPES_DIAGNOSTIC_INFO];

Test(diagnosticinfo, all_fields_encode_in_wire_order)
{
    uas_diagnosticinfo inner;
    memset(&inner, 0, sizeof(inner));
    inner.has_symbolic_id = true;
    inner.symbolic_id = 9;
    uas_diagnosticinfo d = {.symbolic_id = 1,
                            .namespace_uri = 2,
                            .localized_text = 3,
                            .locale = 4,
                            .additional_info = S("ai"),
                            .inner_status = 0x80010000u,
                            .inner_diagnostic_info = &inner,
                            .has_symbolic_id = true,
                            .has_namespace_uri = true,
                            .has_localized_text = true,
                            .has_locale = true,
                            .has_additional_info = true,
                            .has_inner_status = true,
                            .has_inner_diagnostic_info = true};
    /* symbolicId, namespaceUri, locale, localizedText, additionalInfo,
     * innerStatus, inner */
    th_expect_bytes(&d, DIAG,
                    BYTES(0x7f, 1, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 'a',
                          'i', 0x00, 0x00, 0x01, 0x80, 0x01, 9, 0, 0, 0),
                    "all fields");
}

Test(diagnosticinfo, each_field_alone_sets_only_its_mask_bit)
{
    static const uint8_t bits[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20};
    for (size_t i = 0; i < sizeof(bits); i++) {
        uas_diagnosticinfo d;
        memset(&d, 0, sizeof(d));
        d.has_symbolic_id = bits[i] == 0x01;
        d.has_namespace_uri = bits[i] == 0x02;
        d.has_localized_text = bits[i] == 0x04;
        d.has_locale = bits[i] == 0x08;
        d.has_additional_info = bits[i] == 0x10;
        d.has_inner_status = bits[i] == 0x20;
        d.symbolic_id = d.namespace_uri = d.localized_text = d.locale = 0x05060708;
        d.inner_status = 0x05060708u;
        d.additional_info = S("\x08\x07\x06\x05");
        bb o = {.n = 0};
        bb_u8(&o, bits[i]);
        if (bits[i] == 0x10)
            bb_str(&o, "\x08\x07\x06\x05");
        else
            bb_u32(&o, 0x05060708u);
        th_expect_bytes(&d, DIAG, o.b, o.n, "single field");
    }
}

Test(diagnosticinfo, nested_inner_infos_roundtrip)
{
    uas_diagnosticinfo chain[5];
    memset(chain, 0, sizeof(chain));
    for (int i = 0; i < 5; i++) {
        chain[i].has_symbolic_id = true;
        chain[i].symbolic_id = i;
        chain[i].has_additional_info = i % 2;
        chain[i].additional_info = i % 2 ? S("odd") : null_string();
        chain[i].has_inner_status = i == 2;
        chain[i].inner_status = UAS_BAD_OUT_OF_MEMORY;
        if (i < 4) {
            chain[i].has_inner_diagnostic_info = true;
            chain[i].inner_diagnostic_info = &chain[i + 1];
        }
    }
    th_roundtrip(&chain[0], DIAG, "5 nested", NULL, NULL);
    /* A deeper level that differs makes the whole chain differ. */
    uas_diagnosticinfo d;
    uas_arena a;
    uint8_t *bytes;
    size_t n;
    th_roundtrip(&chain[0], DIAG, "5 nested", &bytes, &n);
    cr_assert_eq(decode(bytes, n, &d, DIAG, &a), UAS_GOOD);
    cr_assert_eq(d.inner_diagnostic_info->inner_diagnostic_info->inner_diagnostic_info
                     ->inner_diagnostic_info->symbolic_id,
                 4);
    chain[4].symbolic_id = 44;
    cr_assert_not(uas_equal(&d, &chain[0], DIAG));
    uas_arena_free(&a);
    free(bytes);
}

Test(diagnosticinfo, inner_flag_without_pointer_is_not_encoded)
{
    uas_diagnosticinfo d;
    memset(&d, 0, sizeof(d));
    d.has_inner_diagnostic_info = true;
    th_expect_bytes(&d, DIAG, BYTES(0x00), "dangling inner flag");
}

/* ---- every builtin through the generator ---- */

Test(builtin, all_25_roundtrip_with_generated_values)
{
    for (int i = 0; i < 25; i++) {
        const uas_type *t = &uas_types[i];
        cr_assert_eq(t->kind, i + 1, "builtin %d has kind %u", i, t->kind);
        for (uint64_t seed = 1; seed <= 60; seed++) {
            pop_ctx c;
            pop_init(&c, seed * 1000 + (uint64_t)i);
            uint8_t value[512];
            cr_assert(t->size <= sizeof(value));
            pop_value(&c, value, t);
            th_roundtrip(value, t, t->name, NULL, NULL);
            uas_clear(value, t);
        }
    }
}
