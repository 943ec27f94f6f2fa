/* Golden vectors from an independent peer (node-opcua, see tests/golden/README.md).
 *
 * Each tests/golden/<Name>.bin is a MSG/OPN body: the binary encoding NodeId of
 * the type, then the body. For every vector the test
 *   - decodes the type id, finds the descriptor with uas_type_by_encoding_id and
 *     decodes the body into an arena (stack buffer + heap growth),
 *   - checks the decoded values against those make_golden.js put in (they are
 *     listed in tests/golden/<Name>.json),
 *   - re-encodes type id + body and requires the very same bytes,
 * and for every message it also builds the structure from scratch in C and
 * encodes it, which checks the encoder independently of the decoder. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/builtin.h>
#include <ua/codec.h>
#include <ua/mem.h>
#include <ua/nodeids.h>
#include <ua/status.h>
#include <ua/types.h>

#ifndef UAS_GOLDEN_DIR
#error "UAS_GOLDEN_DIR must name the folder of the golden vectors"
#endif

/* Builtin descriptors sit at index (builtin id - 1) of uas_types[]. */
#define BUILTIN(k) (&uas_types[(k)-1])

/* The fixed times of make_golden.js, as 100 ns ticks since 1601. */
#define T_REQ   INT64_C(133594528891230000) /* 2024-05-06T07:08:09.123Z */
#define T_RSP   INT64_C(133594528894560000) /* 2024-05-06T07:08:09.456Z */
#define T_SRC   INT64_C(133594528810010000) /* 2024-05-06T07:08:01.001Z */
#define T_SRV   INT64_C(133594528820020000) /* 2024-05-06T07:08:02.002Z */
#define T_START INT64_C(133485408000000000) /* 2024-01-01T00:00:00.000Z */
#define T_BUILD INT64_C(133479162005000000) /* 2023-12-24T18:30:00.500Z */
#define T_FINE  INT64_C(133537247999994567) /* 2024-02-29T23:59:59.999Z + 4567 ticks */

/* 72962B91-FA75-4AE6-8D28-B404DC7DAF63 */
static const uas_guid GUID_A = {
    0x72962B91u, 0xFA75u, 0x4AE6u, {0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63}};
/* 0102A3B4-C5D6-E7F8-0910-111213141516 */
static const uas_guid GUID_B = {
    0x0102A3B4u, 0xC5D6u, 0xE7F8u, {0x09, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16}};
static uint8_t BYTESTRING_NODEID[] = {0x00, 0x01, 0xFE, 0xFF, 0x7F, 0x80};
static uint8_t BYTESTRING_VALUE[] = {0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01, 0x02, 0xFF};

/* ------------------------------------------------------------------ files */

typedef struct blob {
    uint8_t *data;
    size_t len;
} blob;

static blob read_golden(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", UAS_GOLDEN_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open golden vector %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_gt(n, 0, "golden vector %s is empty", path);
    rewind(f);
    blob b = {malloc((size_t)n), (size_t)n};
    cr_assert_not_null(b.data);
    cr_assert_eq(fread(b.data, 1, b.len, f), b.len, "short read of %s", path);
    fclose(f);
    return b;
}

/* Fails with the first differing offset and the bytes around it. */
static void assert_same_bytes(const uint8_t *got, size_t got_len, const blob *want,
                              const char *what)
{
    size_t n = got_len < want->len ? got_len : want->len;
    size_t i = 0;
    while (i < n && got[i] == want->data[i])
        i++;
    if (i < n || got_len != want->len) {
        char ctx_w[3 * 16 + 1] = "", ctx_g[3 * 16 + 1] = "";
        size_t from = i >= 4 ? i - 4 : 0;
        for (size_t k = from; k < from + 16; k++) {
            if (k < want->len)
                snprintf(ctx_w + strlen(ctx_w), sizeof ctx_w - strlen(ctx_w), "%02x ",
                         want->data[k]);
            if (k < got_len)
                snprintf(ctx_g + strlen(ctx_g), sizeof ctx_g - strlen(ctx_g), "%02x ", got[k]);
        }
        cr_assert_fail("%s: bytes differ from the golden file at offset %zu (expected %zu bytes, "
                       "got %zu)\n  expected from offset %zu: %s\n  got      from offset %zu: %s",
                       what, i, want->len, got_len, from, ctx_w, from, ctx_g);
    }
    cr_assert_eq(memcmp(got, want->data, want->len), 0, "%s: memcmp", what);
}

/* -------------------------------------------------------- decode + encode */

typedef struct golden {
    const char *name;
    blob file;
    uas_arena arena; /* first block: the test's stack buffer, then heap blocks */
    uas_nodeid type_id;
    const uas_type *type;
    void *msg;
} golden;

/* What a test holds on the heap, released by the suite's fini even when an
 * assertion ends the test early (so the sanitizer reports no leak then). */
static struct {
    golden g;
    bool arena_live;
    uint8_t *enc; /* the last encoding */
    blob want;    /* the golden file of an encode test */
} T;

static void release_all(void)
{
    if (T.arena_live)
        uas_arena_free(&T.g.arena);
    free(T.g.file.data);
    free(T.enc);
    free(T.want.data);
    memset(&T, 0, sizeof T);
}

TestSuite(golden, .fini = release_all);

/* Small on purpose, so that the larger vectors make the arena grow onto the heap. */
#define STACK_ARENA 1024

static void golden_decode(golden *g, uint8_t *stack_buf, size_t stack_size, const char *name,
                          const uas_type *expected, uint32_t encoding_id)
{
    g->name = name;
    g->file = read_golden(name);
    uas_arena_init(&g->arena, stack_buf, stack_size, 0);
    T.arena_live = true;

    uas_decoder d;
    uas_decoder_init(&d, g->file.data, g->file.len, &g->arena, &uas_limits_default);
    uas_status st = uas_decode(&d, &g->type_id, BUILTIN(UAS_BUILTIN_NODEID));
    cr_assert_eq(st, UAS_GOOD, "%s: decoding the type NodeId: 0x%08" PRIX32, name, st);
    cr_assert_eq(g->type_id.ns, 0, "%s: type id namespace", name);
    cr_assert_eq(g->type_id.kind, UAS_NODEID_NUMERIC, "%s: type id kind", name);
    cr_assert_eq(g->type_id.id.numeric, encoding_id,
                 "%s: type id: expected i=%" PRIu32 ", got i=%" PRIu32, name, encoding_id,
                 g->type_id.id.numeric);

    g->type = uas_type_by_encoding_id(g->type_id.id.numeric);
    cr_assert_not_null(g->type, "%s: uas_type_by_encoding_id(%" PRIu32 ") found nothing", name,
                       g->type_id.id.numeric);
    cr_assert_eq(g->type, expected, "%s: uas_type_by_encoding_id(%" PRIu32 ") gave %s", name,
                 g->type_id.id.numeric, g->type->name);
    cr_assert_eq(g->type->binary_encoding_id, encoding_id, "%s: descriptor binary_encoding_id",
                 name);

    g->msg = uas_arena_alloc(&g->arena, g->type->size);
    cr_assert_not_null(g->msg, "%s: arena allocation", name);
    st = uas_decode(&d, g->msg, g->type);
    cr_assert_eq(st, UAS_GOOD, "%s: uas_decode of the body: 0x%08" PRIX32 " (%s) at offset %td",
                 name, st, uas_status_name(st), d.pos - g->file.data);
    cr_assert_eq(d.pos, d.end, "%s: decoder stopped at offset %td of %zu", name,
                 d.pos - g->file.data, g->file.len);
}

/* Encodes type id + message into a fresh heap buffer. */
static uint8_t *encode_message(const uas_nodeid *type_id, const void *msg, const uas_type *t,
                               size_t cap, size_t *len, const char *what)
{
    free(T.enc);
    uint8_t *buf = T.enc = malloc(cap);
    cr_assert_not_null(buf);
    uas_encoder e;
    uas_encoder_init(&e, buf, cap, &uas_limits_default);
    uas_status st = uas_encode(&e, type_id, BUILTIN(UAS_BUILTIN_NODEID));
    cr_assert_eq(st, UAS_GOOD, "%s: encoding the type NodeId: 0x%08" PRIX32, what, st);
    st = uas_encode(&e, msg, t);
    cr_assert_eq(st, UAS_GOOD, "%s: uas_encode: 0x%08" PRIX32 " (%s) after %td bytes", what, st,
                 uas_status_name(st), e.pos - buf);
    *len = (size_t)(e.pos - buf);
    return buf;
}

static void golden_assert_reencodes(const golden *g)
{
    size_t len = 0;
    uint8_t *buf = encode_message(&g->type_id, g->msg, g->type, g->file.len + 256, &len, g->name);
    assert_same_bytes(buf, len, &g->file, g->name);

    size_t id_len = uas_encoded_size(&g->type_id, BUILTIN(UAS_BUILTIN_NODEID));
    size_t body_len = uas_encoded_size(g->msg, g->type);
    cr_assert_eq(id_len, 4, "%s: uas_encoded_size of the type id (FourByte form)", g->name);
    cr_assert_eq(id_len + body_len, g->file.len,
                 "%s: uas_encoded_size: %zu + %zu, file has %zu bytes", g->name, id_len, body_len,
                 g->file.len);

    /* The same bytes with a buffer of exactly the message size. */
    buf = encode_message(&g->type_id, g->msg, g->type, g->file.len, &len, g->name);
    assert_same_bytes(buf, len, &g->file, g->name);
}

/* Encodes a message built in C and compares with the golden file. */
static void assert_encodes_like_golden(const char *name, uint32_t encoding_id, const void *msg,
                                       const uas_type *t)
{
    T.want = read_golden(name);
    uas_nodeid type_id = uas_nodeid_numeric(0, encoding_id);
    size_t len = 0;
    uint8_t *buf = encode_message(&type_id, msg, t, T.want.len + 256, &len, name);
    assert_same_bytes(buf, len, &T.want, name);
    cr_assert_eq(uas_encoded_size(msg, t) + 4, T.want.len, "%s: uas_encoded_size", name);
}

/* ------------------------------------------------------------ field checks */

#define STR_ARGS(s)                                                                                \
    (int)((s).data ? (s).length : 0), ((s).data && (s).length ? (const char *)(s).data : "")

#define ASSERT_STR(s, lit, field)                                                                  \
    cr_assert(uas_string_eq_cstr(&(s), lit), "%s: expected \"%s\", got %s\"%.*s\"", field, lit,    \
              (s).data ? "" : "(null) ", STR_ARGS(s))

#define ASSERT_NULL_STR(s, field)                                                                  \
    cr_assert_null((s).data, "%s: expected a null string, got \"%.*s\"", field, STR_ARGS(s))

static void assert_bytes(const uas_bytestring *b, const uint8_t *want, size_t n, const char *field)
{
    cr_assert_eq(b->length, n, "%s: length %zu, expected %zu", field, b->length, n);
    cr_assert_not_null(b->data, "%s: null", field);
    cr_assert_eq(memcmp(b->data, want, n), 0, "%s: content", field);
}

static void assert_guid(const uas_guid *g, const uas_guid *want, const char *field)
{
    cr_assert_eq(g->data1, want->data1, "%s: data1 0x%08" PRIX32, field, g->data1);
    cr_assert_eq(g->data2, want->data2, "%s: data2 0x%04X", field, g->data2);
    cr_assert_eq(g->data3, want->data3, "%s: data3 0x%04X", field, g->data3);
    cr_assert_eq(memcmp(g->data4, want->data4, 8), 0, "%s: data4", field);
}

static void assert_numeric_nodeid(const uas_nodeid *n, uint16_t ns, uint32_t id, const char *field)
{
    cr_assert_eq(n->kind, UAS_NODEID_NUMERIC, "%s: kind %d, expected numeric", field, n->kind);
    cr_assert_eq(n->ns, ns, "%s: ns %u, expected %u", field, n->ns, ns);
    cr_assert_eq(n->id.numeric, id, "%s: i=%" PRIu32 ", expected %" PRIu32, field, n->id.numeric,
                 id);
}

static void assert_scalar(const uas_variant *v, uint8_t builtin, const char *field)
{
    cr_assert_not_null(v->type, "%s: empty variant", field);
    cr_assert_eq(v->type, BUILTIN(builtin), "%s: variant type %s, expected builtin %d", field,
                 v->type->name, builtin);
    cr_assert_not(v->is_array, "%s: expected a scalar", field);
    cr_assert_not_null(v->data, "%s: no data", field);
}

static void assert_array(const uas_variant *v, uint8_t builtin, size_t n, const char *field)
{
    cr_assert_not_null(v->type, "%s: empty variant", field);
    cr_assert_eq(v->type, BUILTIN(builtin), "%s: variant type %s, expected builtin %d", field,
                 v->type->name, builtin);
    cr_assert(v->is_array, "%s: expected an array", field);
    cr_assert_eq(v->array_length, n, "%s: array length %zu, expected %zu", field, v->array_length,
                 n);
}

/* DataValue presence flags: value, status, source ts, server ts, source ps, server ps. */
static void assert_dv_flags(const uas_datavalue *dv, bool value, bool status, bool src, bool srv,
                            bool src_ps, bool srv_ps, const char *field)
{
    cr_assert_eq(dv->has_value, value, "%s.has_value", field);
    cr_assert_eq(dv->has_status, status, "%s.has_status", field);
    cr_assert_eq(dv->has_source_timestamp, src, "%s.has_source_timestamp", field);
    cr_assert_eq(dv->has_server_timestamp, srv, "%s.has_server_timestamp", field);
    cr_assert_eq(dv->has_source_picoseconds, src_ps, "%s.has_source_picoseconds", field);
    cr_assert_eq(dv->has_server_picoseconds, srv_ps, "%s.has_server_picoseconds", field);
}

static void assert_request_header(const uas_request_header *h, uint32_t handle, uint32_t timeout,
                                  const char *name)
{
    cr_assert_eq(h->timestamp, T_REQ, "%s: request_header.timestamp %" PRId64, name, h->timestamp);
    cr_assert_eq(h->request_handle, handle, "%s: request_header.request_handle", name);
    cr_assert_eq(h->return_diagnostics, 0, "%s: request_header.return_diagnostics", name);
    ASSERT_NULL_STR(h->audit_entry_id, "request_header.audit_entry_id");
    cr_assert_eq(h->timeout_hint, timeout, "%s: request_header.timeout_hint", name);
    cr_assert_eq(h->additional_header.encoding, UAS_EXTOBJ_EMPTY,
                 "%s: request_header.additional_header.encoding", name);
}

/* ============================================================ ReadRequest */

Test(golden, read_request_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "ReadRequest.bin", UAS_TYPE(READ_REQUEST),
                  UAS_NS0ID_READREQUEST_ENCODING_DEFAULTBINARY);
    const uas_read_request *r = g->msg;

    assert_numeric_nodeid(&r->request_header.authentication_token, 0, 0xDEADBEEFu,
                          "request_header.authentication_token");
    assert_request_header(&r->request_header, 42, 10000, g->name);
    cr_assert_eq(r->max_age, 0.5, "max_age %g", r->max_age);
    cr_assert_eq(r->timestamps_to_return, UAS_TIMESTAMPS_TO_RETURN_BOTH, "timestamps_to_return %d",
                 (int)r->timestamps_to_return);
    cr_assert_eq(r->nodes_to_read_count, 4, "nodes_to_read_count %zu", r->nodes_to_read_count);

    const uas_read_value_id *n = r->nodes_to_read;
    assert_numeric_nodeid(&n[0].node_id, 0, 2258, "nodes_to_read[0].node_id");
    cr_assert_eq(n[0].attribute_id, 13, "nodes_to_read[0].attribute_id");
    ASSERT_NULL_STR(n[0].index_range, "nodes_to_read[0].index_range");
    cr_assert_eq(n[0].data_encoding.ns, 0, "nodes_to_read[0].data_encoding.ns");
    ASSERT_NULL_STR(n[0].data_encoding.name, "nodes_to_read[0].data_encoding.name");

    cr_assert_eq(n[1].node_id.kind, UAS_NODEID_STRING, "nodes_to_read[1].node_id.kind");
    cr_assert_eq(n[1].node_id.ns, 1, "nodes_to_read[1].node_id.ns");
    ASSERT_STR(n[1].node_id.id.string, "BenchmarkValue7", "nodes_to_read[1].node_id.string");
    cr_assert_eq(n[1].attribute_id, 13, "nodes_to_read[1].attribute_id");
    ASSERT_STR(n[1].index_range, "1:2", "nodes_to_read[1].index_range");

    cr_assert_eq(n[2].node_id.kind, UAS_NODEID_GUID, "nodes_to_read[2].node_id.kind");
    cr_assert_eq(n[2].node_id.ns, 2, "nodes_to_read[2].node_id.ns");
    assert_guid(&n[2].node_id.id.guid, &GUID_A, "nodes_to_read[2].node_id.guid");
    cr_assert_eq(n[2].attribute_id, 4, "nodes_to_read[2].attribute_id (DisplayName)");

    cr_assert_eq(n[3].node_id.kind, UAS_NODEID_BYTESTRING, "nodes_to_read[3].node_id.kind");
    cr_assert_eq(n[3].node_id.ns, 3, "nodes_to_read[3].node_id.ns");
    assert_bytes(&n[3].node_id.id.bytestring, BYTESTRING_NODEID, sizeof BYTESTRING_NODEID,
                 "nodes_to_read[3].node_id.bytestring");
    cr_assert_eq(n[3].attribute_id, 3, "nodes_to_read[3].attribute_id (BrowseName)");
    cr_assert_eq(n[3].data_encoding.ns, 0, "nodes_to_read[3].data_encoding.ns");
    ASSERT_STR(n[3].data_encoding.name, "Default Binary", "nodes_to_read[3].data_encoding.name");

    golden_assert_reencodes(g);
}

static void build_request_header(uas_request_header *h, uas_nodeid token, uint32_t handle,
                                 uint32_t timeout)
{
    uas_init(h, UAS_TYPE(REQUEST_HEADER));
    h->authentication_token = token;
    h->timestamp = T_REQ;
    h->request_handle = handle;
    h->return_diagnostics = 0;
    h->timeout_hint = timeout;
}

Test(golden, read_request_built_in_c_encodes_like_node_opcua)
{
    uas_read_value_id nodes[4];
    for (int i = 0; i < 4; i++)
        uas_init(&nodes[i], UAS_TYPE(READ_VALUE_ID));
    nodes[0].node_id = uas_nodeid_numeric(0, 2258);
    nodes[0].attribute_id = 13;
    nodes[1].node_id = uas_nodeid_string(1, "BenchmarkValue7");
    nodes[1].attribute_id = 13;
    nodes[1].index_range = uas_string_from("1:2");
    nodes[2].node_id.ns = 2;
    nodes[2].node_id.kind = UAS_NODEID_GUID;
    nodes[2].node_id.id.guid = GUID_A;
    nodes[2].attribute_id = 4;
    nodes[3].node_id.ns = 3;
    nodes[3].node_id.kind = UAS_NODEID_BYTESTRING;
    nodes[3].node_id.id.bytestring.length = sizeof BYTESTRING_NODEID;
    nodes[3].node_id.id.bytestring.data = BYTESTRING_NODEID;
    nodes[3].attribute_id = 3;
    nodes[3].data_encoding.ns = 0;
    nodes[3].data_encoding.name = uas_string_from("Default Binary");

    uas_read_request r;
    uas_init(&r, UAS_TYPE(READ_REQUEST));
    build_request_header(&r.request_header, uas_nodeid_numeric(0, 0xDEADBEEFu), 42, 10000);
    r.max_age = 0.5;
    r.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    r.nodes_to_read_count = 4;
    r.nodes_to_read = nodes;

    assert_encodes_like_golden("ReadRequest.bin", UAS_NS0ID_READREQUEST_ENCODING_DEFAULTBINARY, &r,
                               UAS_TYPE(READ_REQUEST));
}

/* =========================================================== ReadResponse */

static void check_diagnostic_chain(const uas_diagnosticinfo *d)
{
    cr_assert(d->has_symbolic_id, "diagnostic_infos[0].has_symbolic_id");
    cr_assert_eq(d->symbolic_id, 1, "diagnostic_infos[0].symbolic_id");
    cr_assert(d->has_namespace_uri, "diagnostic_infos[0].has_namespace_uri");
    cr_assert_eq(d->namespace_uri, 0, "diagnostic_infos[0].namespace_uri");
    cr_assert(d->has_locale, "diagnostic_infos[0].has_locale");
    cr_assert_eq(d->locale, 2, "diagnostic_infos[0].locale (written before localized_text)");
    cr_assert(d->has_localized_text, "diagnostic_infos[0].has_localized_text");
    cr_assert_eq(d->localized_text, 3, "diagnostic_infos[0].localized_text");
    cr_assert(d->has_additional_info, "diagnostic_infos[0].has_additional_info");
    ASSERT_STR(d->additional_info, "extra info", "diagnostic_infos[0].additional_info");
    cr_assert(d->has_inner_status, "diagnostic_infos[0].has_inner_status");
    cr_assert_eq(d->inner_status, UAS_BAD_INTERNAL_ERROR, "diagnostic_infos[0].inner_status");
    cr_assert(d->has_inner_diagnostic_info, "diagnostic_infos[0].has_inner_diagnostic_info");
    cr_assert_not_null(d->inner_diagnostic_info, "diagnostic_infos[0].inner_diagnostic_info");

    const uas_diagnosticinfo *in = d->inner_diagnostic_info;
    cr_assert(in->has_symbolic_id, "inner.has_symbolic_id");
    cr_assert_eq(in->symbolic_id, 1, "inner.symbolic_id");
    cr_assert_not(in->has_namespace_uri, "inner.has_namespace_uri");
    cr_assert_not(in->has_locale, "inner.has_locale");
    cr_assert_not(in->has_localized_text, "inner.has_localized_text");
    cr_assert(in->has_additional_info, "inner.has_additional_info");
    ASSERT_STR(in->additional_info, "inner", "inner.additional_info");
    cr_assert(in->has_inner_status, "inner.has_inner_status");
    cr_assert_eq(in->inner_status, UAS_BAD_OUT_OF_MEMORY, "inner.inner_status");
    cr_assert(in->has_inner_diagnostic_info, "inner.has_inner_diagnostic_info");
    cr_assert_not_null(in->inner_diagnostic_info, "inner.inner_diagnostic_info");

    const uas_diagnosticinfo *in2 = in->inner_diagnostic_info;
    cr_assert_not(in2->has_symbolic_id, "inner.inner.has_symbolic_id");
    cr_assert_not(in2->has_locale, "inner.inner.has_locale");
    cr_assert(in2->has_localized_text, "inner.inner.has_localized_text");
    cr_assert_eq(in2->localized_text, 3, "inner.inner.localized_text");
    cr_assert_not(in2->has_additional_info, "inner.inner.has_additional_info");
    cr_assert_not(in2->has_inner_status, "inner.inner.has_inner_status");
    cr_assert_not(in2->has_inner_diagnostic_info, "inner.inner.has_inner_diagnostic_info");
}

Test(golden, read_response_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "ReadResponse.bin", UAS_TYPE(READ_RESPONSE),
                  UAS_NS0ID_READRESPONSE_ENCODING_DEFAULTBINARY);
    const uas_read_response *r = g->msg;

    const uas_response_header *h = &r->response_header;
    cr_assert_eq(h->timestamp, T_RSP, "response_header.timestamp %" PRId64, h->timestamp);
    cr_assert_eq(h->request_handle, 42, "response_header.request_handle");
    cr_assert_eq(h->service_result, UAS_GOOD, "response_header.service_result");
    cr_assert_not(
        h->service_diagnostics.has_symbolic_id || h->service_diagnostics.has_namespace_uri ||
            h->service_diagnostics.has_locale || h->service_diagnostics.has_localized_text ||
            h->service_diagnostics.has_additional_info || h->service_diagnostics.has_inner_status ||
            h->service_diagnostics.has_inner_diagnostic_info,
        "response_header.service_diagnostics: expected no field");
    cr_assert_eq(h->string_table_count, 4, "response_header.string_table_count");
    ASSERT_STR(h->string_table[0], "urn:golden:diag", "string_table[0]");
    ASSERT_STR(h->string_table[1], "SymbolicOne", "string_table[1]");
    ASSERT_STR(h->string_table[2], "en-US", "string_table[2]");
    ASSERT_STR(h->string_table[3], "Something went wrong", "string_table[3]");
    cr_assert_eq(h->additional_header.encoding, UAS_EXTOBJ_EMPTY,
                 "response_header.additional_header");

    cr_assert_eq(r->results_count, 16, "results_count %zu", r->results_count);
    const uas_datavalue *dv = r->results;

    /* [0] Int32 with both timestamps */
    assert_dv_flags(&dv[0], true, false, true, true, false, false, "results[0]");
    assert_scalar(&dv[0].value, UAS_BUILTIN_INT32, "results[0].value");
    cr_assert_eq(*(const int32_t *)dv[0].value.data, -123456, "results[0] Int32");
    cr_assert_eq(dv[0].source_timestamp, T_SRC, "results[0].source_timestamp");
    cr_assert_eq(dv[0].server_timestamp, T_SRV, "results[0].server_timestamp");

    /* [1] Double, Uncertain */
    assert_dv_flags(&dv[1], true, true, false, false, false, false, "results[1]");
    assert_scalar(&dv[1].value, UAS_BUILTIN_DOUBLE, "results[1].value");
    cr_assert_eq(*(const double *)dv[1].value.data, 3.14159, "results[1] Double");
    cr_assert_eq(dv[1].status, UAS_UNCERTAIN, "results[1].status 0x%08" PRIX32, dv[1].status);

    /* [2] UTF-8 String */
    assert_dv_flags(&dv[2], true, false, false, false, false, false, "results[2]");
    assert_scalar(&dv[2].value, UAS_BUILTIN_STRING, "results[2].value");
    const uas_string *s = dv[2].value.data;
    cr_assert_eq(s->length, 6, "results[2] String length (h, 2-byte e-acute, l, l, o)");
    ASSERT_STR(*s, "h\xC3\xA9llo", "results[2] String");

    /* [3] UInt32[3] */
    assert_array(&dv[3].value, UAS_BUILTIN_UINT32, 3, "results[3].value");
    cr_assert_null(dv[3].value.array_dimensions, "results[3] has no dimensions");
    const uint32_t *u = dv[3].value.data;
    cr_assert(u[0] == 1 && u[1] == 2 && u[2] == 3, "results[3] = {%u, %u, %u}", u[0], u[1], u[2]);

    /* [4] Int16 2x3 matrix */
    assert_array(&dv[4].value, UAS_BUILTIN_INT16, 6, "results[4].value");
    cr_assert_eq(dv[4].value.array_dimensions_length, 2, "results[4].array_dimensions_length");
    cr_assert_not_null(dv[4].value.array_dimensions, "results[4].array_dimensions");
    cr_assert_eq(dv[4].value.array_dimensions[0], 2, "results[4].array_dimensions[0]");
    cr_assert_eq(dv[4].value.array_dimensions[1], 3, "results[4].array_dimensions[1]");
    const int16_t *m = dv[4].value.data;
    static const int16_t want_m[6] = {1, -2, 3, -4, 5, -6};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(m[i], want_m[i], "results[4] matrix element %d: %d", i, m[i]);

    /* [5] LocalizedText */
    assert_scalar(&dv[5].value, UAS_BUILTIN_LOCALIZEDTEXT, "results[5].value");
    const uas_localizedtext *lt = dv[5].value.data;
    ASSERT_STR(lt->locale, "en", "results[5].locale");
    ASSERT_STR(lt->text, "text", "results[5].text");

    /* [6] only a bad status */
    assert_dv_flags(&dv[6], false, true, false, false, false, false, "results[6]");
    cr_assert_eq(dv[6].status, UAS_BAD_NODE_ID_UNKNOWN, "results[6].status 0x%08" PRIX32,
                 dv[6].status);
    cr_assert_null(dv[6].value.type, "results[6].value is empty");

    /* [7] picoseconds */
    assert_dv_flags(&dv[7], true, false, true, true, true, true, "results[7]");
    assert_scalar(&dv[7].value, UAS_BUILTIN_BYTE, "results[7].value");
    cr_assert_eq(*(const uint8_t *)dv[7].value.data, 200, "results[7] Byte");
    cr_assert_eq(dv[7].source_timestamp, T_SRC, "results[7].source_timestamp");
    cr_assert_eq(dv[7].source_picoseconds, 1234, "results[7].source_picoseconds %u",
                 dv[7].source_picoseconds);
    cr_assert_eq(dv[7].server_timestamp, T_SRV, "results[7].server_timestamp");
    cr_assert_eq(dv[7].server_picoseconds, 9999, "results[7].server_picoseconds %u",
                 dv[7].server_picoseconds);

    /* [8] ServerStatusDataType in an ExtensionObject, held decoded */
    const uas_variant *v8 = &dv[8].value;
    cr_assert_eq(v8->type, UAS_TYPE(SERVER_STATUS_DATA_TYPE), "results[8] decoded type %s",
                 v8->type ? v8->type->name : "(empty)");
    cr_assert_not(v8->is_array, "results[8] scalar");
    const uas_server_status_data_type *ss = v8->data;
    cr_assert_eq(ss->start_time, T_START, "results[8].start_time");
    cr_assert_eq(ss->current_time, T_RSP, "results[8].current_time");
    cr_assert_eq(ss->state, UAS_SERVER_STATE_RUNNING, "results[8].state");
    ASSERT_STR(ss->build_info.product_uri, "urn:uastack:golden:product", "build_info.product_uri");
    ASSERT_STR(ss->build_info.manufacturer_name, "uastack", "build_info.manufacturer_name");
    ASSERT_STR(ss->build_info.product_name, "uastack golden server", "build_info.product_name");
    ASSERT_STR(ss->build_info.software_version, "1.2.3", "build_info.software_version");
    ASSERT_STR(ss->build_info.build_number, "456", "build_info.build_number");
    cr_assert_eq(ss->build_info.build_date, T_BUILD, "build_info.build_date");
    cr_assert_eq(ss->seconds_till_shutdown, 0, "results[8].seconds_till_shutdown");
    ASSERT_STR(ss->shutdown_reason.locale, "en", "results[8].shutdown_reason.locale");
    ASSERT_STR(ss->shutdown_reason.text, "no shutdown", "results[8].shutdown_reason.text");

    /* [9] empty String array */
    assert_array(&dv[9].value, UAS_BUILTIN_STRING, 0, "results[9].value");
    cr_assert_null(dv[9].value.array_dimensions, "results[9] has no dimensions");

    /* [10] Boolean, [11] DateTime below the millisecond, [12] ByteString */
    assert_scalar(&dv[10].value, UAS_BUILTIN_BOOLEAN, "results[10].value");
    cr_assert_eq(*(const bool *)dv[10].value.data, true, "results[10] Boolean");
    assert_scalar(&dv[11].value, UAS_BUILTIN_DATETIME, "results[11].value");
    cr_assert_eq(*(const uas_datetime *)dv[11].value.data, T_FINE, "results[11] DateTime %" PRId64,
                 *(const uas_datetime *)dv[11].value.data);
    assert_scalar(&dv[12].value, UAS_BUILTIN_BYTESTRING, "results[12].value");
    assert_bytes(dv[12].value.data, BYTESTRING_VALUE, sizeof BYTESTRING_VALUE,
                 "results[12] ByteString");

    /* [13] Int64, [14] Guid, [15] QualifiedName */
    assert_scalar(&dv[13].value, UAS_BUILTIN_INT64, "results[13].value");
    cr_assert_eq(*(const int64_t *)dv[13].value.data, INT64_C(-1234567890123), "results[13] Int64");
    assert_scalar(&dv[14].value, UAS_BUILTIN_GUID, "results[14].value");
    assert_guid(dv[14].value.data, &GUID_B, "results[14] Guid");
    assert_scalar(&dv[15].value, UAS_BUILTIN_QUALIFIEDNAME, "results[15].value");
    const uas_qualifiedname *qn = dv[15].value.data;
    cr_assert_eq(qn->ns, 2, "results[15].ns");
    ASSERT_STR(qn->name, "Speed", "results[15].name");

    cr_assert_eq(r->diagnostic_infos_count, 1, "diagnostic_infos_count");
    check_diagnostic_chain(&r->diagnostic_infos[0]);

    golden_assert_reencodes(g);
}

Test(golden, read_response_built_in_c_encodes_like_node_opcua)
{
    static uas_string table[4];
    table[0] = uas_string_from("urn:golden:diag");
    table[1] = uas_string_from("SymbolicOne");
    table[2] = uas_string_from("en-US");
    table[3] = uas_string_from("Something went wrong");

    int32_t i32 = -123456;
    double dbl = 3.14159;
    uas_string str = uas_string_from("h\xC3\xA9llo");
    uint32_t u32[3] = {1, 2, 3};
    int16_t i16[6] = {1, -2, 3, -4, 5, -6};
    uint32_t dims[2] = {2, 3};
    uas_localizedtext lt = {uas_string_from("en"), uas_string_from("text")};
    uint8_t byte = 200;
    bool boolean = true;
    uas_datetime fine = T_FINE;
    uas_bytestring bs = {sizeof BYTESTRING_VALUE, BYTESTRING_VALUE};
    int64_t i64 = INT64_C(-1234567890123);
    uas_guid guid = GUID_B;
    uas_qualifiedname qn = {2, uas_string_from("Speed")};

    uas_server_status_data_type ss;
    uas_init(&ss, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    ss.start_time = T_START;
    ss.current_time = T_RSP;
    ss.state = UAS_SERVER_STATE_RUNNING;
    ss.build_info.product_uri = uas_string_from("urn:uastack:golden:product");
    ss.build_info.manufacturer_name = uas_string_from("uastack");
    ss.build_info.product_name = uas_string_from("uastack golden server");
    ss.build_info.software_version = uas_string_from("1.2.3");
    ss.build_info.build_number = uas_string_from("456");
    ss.build_info.build_date = T_BUILD;
    ss.seconds_till_shutdown = 0;
    ss.shutdown_reason.locale = uas_string_from("en");
    ss.shutdown_reason.text = uas_string_from("no shutdown");

    uas_datavalue dv[16];
    for (int i = 0; i < 16; i++) {
        uas_init(&dv[i], BUILTIN(UAS_BUILTIN_DATAVALUE));
        dv[i].has_value = true;
    }
    uas_variant_set_scalar(&dv[0].value, &i32, BUILTIN(UAS_BUILTIN_INT32));
    dv[0].has_source_timestamp = true;
    dv[0].source_timestamp = T_SRC;
    dv[0].has_server_timestamp = true;
    dv[0].server_timestamp = T_SRV;
    uas_variant_set_scalar(&dv[1].value, &dbl, BUILTIN(UAS_BUILTIN_DOUBLE));
    dv[1].has_status = true;
    dv[1].status = UAS_UNCERTAIN;
    uas_variant_set_scalar(&dv[2].value, &str, BUILTIN(UAS_BUILTIN_STRING));
    uas_variant_set_array(&dv[3].value, u32, 3, BUILTIN(UAS_BUILTIN_UINT32));
    uas_variant_set_array(&dv[4].value, i16, 6, BUILTIN(UAS_BUILTIN_INT16));
    dv[4].value.array_dimensions_length = 2;
    dv[4].value.array_dimensions = dims;
    uas_variant_set_scalar(&dv[5].value, &lt, BUILTIN(UAS_BUILTIN_LOCALIZEDTEXT));
    dv[6].has_value = false;
    dv[6].has_status = true;
    dv[6].status = UAS_BAD_NODE_ID_UNKNOWN;
    uas_variant_set_scalar(&dv[7].value, &byte, BUILTIN(UAS_BUILTIN_BYTE));
    dv[7].has_source_timestamp = true;
    dv[7].source_timestamp = T_SRC;
    dv[7].has_source_picoseconds = true;
    dv[7].source_picoseconds = 1234;
    dv[7].has_server_timestamp = true;
    dv[7].server_timestamp = T_SRV;
    dv[7].has_server_picoseconds = true;
    dv[7].server_picoseconds = 9999;
    uas_variant_set_scalar(&dv[8].value, &ss, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    uas_variant_set_array(&dv[9].value, UAS_EMPTY_ARRAY, 0, BUILTIN(UAS_BUILTIN_STRING));
    uas_variant_set_scalar(&dv[10].value, &boolean, BUILTIN(UAS_BUILTIN_BOOLEAN));
    uas_variant_set_scalar(&dv[11].value, &fine, BUILTIN(UAS_BUILTIN_DATETIME));
    uas_variant_set_scalar(&dv[12].value, &bs, BUILTIN(UAS_BUILTIN_BYTESTRING));
    uas_variant_set_scalar(&dv[13].value, &i64, BUILTIN(UAS_BUILTIN_INT64));
    uas_variant_set_scalar(&dv[14].value, &guid, BUILTIN(UAS_BUILTIN_GUID));
    uas_variant_set_scalar(&dv[15].value, &qn, BUILTIN(UAS_BUILTIN_QUALIFIEDNAME));

    uas_diagnosticinfo d2, d1, d0;
    uas_init(&d2, BUILTIN(UAS_BUILTIN_DIAGNOSTICINFO));
    d2.has_localized_text = true;
    d2.localized_text = 3;
    uas_init(&d1, BUILTIN(UAS_BUILTIN_DIAGNOSTICINFO));
    d1.has_symbolic_id = true;
    d1.symbolic_id = 1;
    d1.has_additional_info = true;
    d1.additional_info = uas_string_from("inner");
    d1.has_inner_status = true;
    d1.inner_status = UAS_BAD_OUT_OF_MEMORY;
    d1.has_inner_diagnostic_info = true;
    d1.inner_diagnostic_info = &d2;
    uas_init(&d0, BUILTIN(UAS_BUILTIN_DIAGNOSTICINFO));
    d0.has_symbolic_id = true;
    d0.symbolic_id = 1;
    d0.has_namespace_uri = true;
    d0.namespace_uri = 0;
    d0.has_locale = true;
    d0.locale = 2;
    d0.has_localized_text = true;
    d0.localized_text = 3;
    d0.has_additional_info = true;
    d0.additional_info = uas_string_from("extra info");
    d0.has_inner_status = true;
    d0.inner_status = UAS_BAD_INTERNAL_ERROR;
    d0.has_inner_diagnostic_info = true;
    d0.inner_diagnostic_info = &d1;

    uas_read_response r;
    uas_init(&r, UAS_TYPE(READ_RESPONSE));
    r.response_header.timestamp = T_RSP;
    r.response_header.request_handle = 42;
    r.response_header.service_result = UAS_GOOD;
    r.response_header.string_table_count = 4;
    r.response_header.string_table = table;
    r.results_count = 16;
    r.results = dv;
    r.diagnostic_infos_count = 1;
    r.diagnostic_infos = &d0;

    assert_encodes_like_golden("ReadResponse.bin", UAS_NS0ID_READRESPONSE_ENCODING_DEFAULTBINARY,
                               &r, UAS_TYPE(READ_RESPONSE));
}

/* ========================================================== BrowseRequest */

Test(golden, browse_request_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "BrowseRequest.bin", UAS_TYPE(BROWSE_REQUEST),
                  UAS_NS0ID_BROWSEREQUEST_ENCODING_DEFAULTBINARY);
    const uas_browse_request *r = g->msg;

    const uas_nodeid *tok = &r->request_header.authentication_token;
    cr_assert_eq(tok->kind, UAS_NODEID_GUID, "request_header.authentication_token.kind");
    cr_assert_eq(tok->ns, 1, "request_header.authentication_token.ns");
    assert_guid(&tok->id.guid, &GUID_A, "request_header.authentication_token.guid");
    assert_request_header(&r->request_header, 43, 5000, g->name);

    assert_numeric_nodeid(&r->view.view_id, 0, 0, "view.view_id");
    cr_assert_eq(r->view.timestamp, 0, "view.timestamp");
    cr_assert_eq(r->view.view_version, 0, "view.view_version");
    cr_assert_eq(r->requested_max_references_per_node, 100, "requested_max_references_per_node");
    cr_assert_eq(r->nodes_to_browse_count, 2, "nodes_to_browse_count");

    const uas_browse_description *b = r->nodes_to_browse;
    assert_numeric_nodeid(&b[0].node_id, 0, UAS_NS0ID_OBJECTSFOLDER, "nodes_to_browse[0].node_id");
    cr_assert_eq(b[0].browse_direction, UAS_BROWSE_DIRECTION_FORWARD,
                 "nodes_to_browse[0].browse_direction");
    assert_numeric_nodeid(&b[0].reference_type_id, 0, UAS_NS0ID_HIERARCHICALREFERENCES,
                          "nodes_to_browse[0].reference_type_id");
    cr_assert_eq(b[0].include_subtypes, true, "nodes_to_browse[0].include_subtypes");
    cr_assert_eq(b[0].node_class_mask, 0, "nodes_to_browse[0].node_class_mask");
    cr_assert_eq(b[0].result_mask, 63, "nodes_to_browse[0].result_mask");

    cr_assert_eq(b[1].node_id.kind, UAS_NODEID_STRING, "nodes_to_browse[1].node_id.kind");
    cr_assert_eq(b[1].node_id.ns, 2, "nodes_to_browse[1].node_id.ns");
    ASSERT_STR(b[1].node_id.id.string, "Demo.Static.Scalar", "nodes_to_browse[1].node_id.string");
    cr_assert_eq(b[1].browse_direction, UAS_BROWSE_DIRECTION_INVERSE,
                 "nodes_to_browse[1].browse_direction");
    assert_numeric_nodeid(&b[1].reference_type_id, 0, 0, "nodes_to_browse[1].reference_type_id");
    cr_assert_eq(b[1].include_subtypes, true, "nodes_to_browse[1].include_subtypes");
    cr_assert_eq(b[1].node_class_mask, UAS_NODE_CLASS_OBJECT | UAS_NODE_CLASS_VARIABLE,
                 "nodes_to_browse[1].node_class_mask (Object|Variable)");
    cr_assert_eq(b[1].result_mask, 63, "nodes_to_browse[1].result_mask");

    golden_assert_reencodes(g);
}

Test(golden, browse_request_built_in_c_encodes_like_node_opcua)
{
    uas_nodeid token;
    memset(&token, 0, sizeof token);
    token.ns = 1;
    token.kind = UAS_NODEID_GUID;
    token.id.guid = GUID_A;

    uas_browse_description b[2];
    uas_init(&b[0], UAS_TYPE(BROWSE_DESCRIPTION));
    uas_init(&b[1], UAS_TYPE(BROWSE_DESCRIPTION));
    b[0].node_id = uas_nodeid_numeric(0, 85);
    b[0].browse_direction = UAS_BROWSE_DIRECTION_FORWARD;
    b[0].reference_type_id = uas_nodeid_numeric(0, 33);
    b[0].include_subtypes = true;
    b[0].node_class_mask = 0;
    b[0].result_mask = 63;
    b[1].node_id = uas_nodeid_string(2, "Demo.Static.Scalar");
    b[1].browse_direction = UAS_BROWSE_DIRECTION_INVERSE;
    b[1].include_subtypes = true;
    b[1].node_class_mask = 1 | 2;
    b[1].result_mask = 63;

    uas_browse_request r;
    uas_init(&r, UAS_TYPE(BROWSE_REQUEST));
    build_request_header(&r.request_header, token, 43, 5000);
    r.requested_max_references_per_node = 100;
    r.nodes_to_browse_count = 2;
    r.nodes_to_browse = b;

    assert_encodes_like_golden("BrowseRequest.bin", UAS_NS0ID_BROWSEREQUEST_ENCODING_DEFAULTBINARY,
                               &r, UAS_TYPE(BROWSE_REQUEST));
}

/* =================================================== CreateSessionRequest */

static void fill_pattern(uint8_t *p, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * mul + add) & 0xFF);
}

Test(golden, create_session_request_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "CreateSessionRequest.bin",
                  UAS_TYPE(CREATE_SESSION_REQUEST),
                  UAS_NS0ID_CREATESESSIONREQUEST_ENCODING_DEFAULTBINARY);
    const uas_create_session_request *r = g->msg;

    assert_numeric_nodeid(&r->request_header.authentication_token, 0, 0,
                          "request_header.authentication_token");
    assert_request_header(&r->request_header, 1, 15000, g->name);

    const uas_application_description *c = &r->client_description;
    ASSERT_STR(c->application_uri, "urn:uastack:golden:client",
               "client_description.application_uri");
    ASSERT_STR(c->product_uri, "urn:uastack:golden:product", "client_description.product_uri");
    ASSERT_STR(c->application_name.locale, "en", "client_description.application_name.locale");
    ASSERT_STR(c->application_name.text, "uastack golden client",
               "client_description.application_name.text");
    cr_assert_eq(c->application_type, UAS_APPLICATION_TYPE_CLIENT,
                 "client_description.application_type");
    ASSERT_NULL_STR(c->gateway_server_uri, "client_description.gateway_server_uri");
    ASSERT_NULL_STR(c->discovery_profile_uri, "client_description.discovery_profile_uri");
    cr_assert_eq(c->discovery_urls_count, 1, "client_description.discovery_urls_count");
    ASSERT_STR(c->discovery_urls[0], "opc.tcp://localhost:4840",
               "client_description.discovery_urls[0]");

    ASSERT_STR(r->server_uri, "urn:golden:server", "server_uri");
    ASSERT_STR(r->endpoint_url, "opc.tcp://localhost:4840/golden", "endpoint_url");
    ASSERT_STR(r->session_name, "golden-session", "session_name");
    uint8_t nonce[32], cert[100];
    fill_pattern(nonce, sizeof nonce, 7, 3);
    fill_pattern(cert, sizeof cert, 13, 5);
    assert_bytes(&r->client_nonce, nonce, sizeof nonce, "client_nonce");
    assert_bytes(&r->client_certificate, cert, sizeof cert, "client_certificate");
    cr_assert_eq(r->requested_session_timeout, 60000.0, "requested_session_timeout");
    cr_assert_eq(r->max_response_message_size, 0, "max_response_message_size");

    golden_assert_reencodes(g);
}

Test(golden, create_session_request_built_in_c_encodes_like_node_opcua)
{
    uint8_t nonce[32], cert[100];
    fill_pattern(nonce, sizeof nonce, 7, 3);
    fill_pattern(cert, sizeof cert, 13, 5);
    uas_string urls[1] = {uas_string_from("opc.tcp://localhost:4840")};

    uas_create_session_request r;
    uas_init(&r, UAS_TYPE(CREATE_SESSION_REQUEST));
    build_request_header(&r.request_header, uas_nodeid_numeric(0, 0), 1, 15000);
    r.client_description.application_uri = uas_string_from("urn:uastack:golden:client");
    r.client_description.product_uri = uas_string_from("urn:uastack:golden:product");
    r.client_description.application_name.locale = uas_string_from("en");
    r.client_description.application_name.text = uas_string_from("uastack golden client");
    r.client_description.application_type = UAS_APPLICATION_TYPE_CLIENT;
    r.client_description.discovery_urls_count = 1;
    r.client_description.discovery_urls = urls;
    r.server_uri = uas_string_from("urn:golden:server");
    r.endpoint_url = uas_string_from("opc.tcp://localhost:4840/golden");
    r.session_name = uas_string_from("golden-session");
    r.client_nonce.length = sizeof nonce;
    r.client_nonce.data = nonce;
    r.client_certificate.length = sizeof cert;
    r.client_certificate.data = cert;
    r.requested_session_timeout = 60000.0;
    r.max_response_message_size = 0;

    assert_encodes_like_golden("CreateSessionRequest.bin",
                               UAS_NS0ID_CREATESESSIONREQUEST_ENCODING_DEFAULTBINARY, &r,
                               UAS_TYPE(CREATE_SESSION_REQUEST));
}

/* ======================================================== PublishResponse */

Test(golden, publish_response_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "PublishResponse.bin", UAS_TYPE(PUBLISH_RESPONSE),
                  UAS_NS0ID_PUBLISHRESPONSE_ENCODING_DEFAULTBINARY);
    const uas_publish_response *r = g->msg;

    cr_assert_eq(r->response_header.timestamp, T_RSP, "response_header.timestamp");
    cr_assert_eq(r->response_header.request_handle, 77, "response_header.request_handle");
    cr_assert_eq(r->response_header.service_result, UAS_GOOD, "response_header.service_result");
    cr_assert_eq(r->response_header.string_table_count, 0, "response_header.string_table_count");
    cr_assert_null(r->response_header.string_table,
                   "response_header.string_table: a null array (-1) must decode to NULL");

    cr_assert_eq(r->subscription_id, 7, "subscription_id");
    cr_assert_eq(r->available_sequence_numbers_count, 2, "available_sequence_numbers_count");
    cr_assert_eq(r->available_sequence_numbers[0], 3, "available_sequence_numbers[0]");
    cr_assert_eq(r->available_sequence_numbers[1], 4, "available_sequence_numbers[1]");
    cr_assert_eq(r->more_notifications, false, "more_notifications");

    const uas_notification_message *nm = &r->notification_message;
    cr_assert_eq(nm->sequence_number, 4, "notification_message.sequence_number");
    cr_assert_eq(nm->publish_time, T_RSP, "notification_message.publish_time");
    cr_assert_eq(nm->notification_data_count, 2, "notification_message.notification_data_count");

    /* [0] DataChangeNotification */
    const uas_extensionobject *eo = &nm->notification_data[0];
    cr_assert_eq(eo->encoding, UAS_EXTOBJ_DECODED, "notification_data[0].encoding %d",
                 eo->encoding);
    cr_assert_eq(eo->content.decoded.type, UAS_TYPE(DATA_CHANGE_NOTIFICATION),
                 "notification_data[0] decoded type");
    const uas_data_change_notification *dcn = eo->content.decoded.data;
    cr_assert_eq(dcn->monitored_items_count, 3, "data_change.monitored_items_count");
    cr_assert_eq(dcn->diagnostic_infos_count, 0, "data_change.diagnostic_infos_count");
    cr_assert_not_null(dcn->diagnostic_infos,
                       "data_change.diagnostic_infos: empty (0), not null (-1)");

    const uas_monitored_item_notification *mi = dcn->monitored_items;
    cr_assert_eq(mi[0].client_handle, 1, "monitored_items[0].client_handle");
    assert_dv_flags(&mi[0].value, true, false, true, false, false, false,
                    "monitored_items[0].value");
    assert_scalar(&mi[0].value.value, UAS_BUILTIN_DOUBLE, "monitored_items[0].value.value");
    cr_assert_eq(*(const double *)mi[0].value.value.data, 1.5, "monitored_items[0] Double");
    cr_assert_eq(mi[0].value.source_timestamp, T_SRC, "monitored_items[0].source_timestamp");

    cr_assert_eq(mi[1].client_handle, 2, "monitored_items[1].client_handle");
    assert_dv_flags(&mi[1].value, true, false, false, true, false, false,
                    "monitored_items[1].value");
    assert_scalar(&mi[1].value.value, UAS_BUILTIN_STRING, "monitored_items[1].value.value");
    ASSERT_STR(*(const uas_string *)mi[1].value.value.data, "abc", "monitored_items[1] String");
    cr_assert_eq(mi[1].value.server_timestamp, T_SRV, "monitored_items[1].server_timestamp");

    cr_assert_eq(mi[2].client_handle, 3, "monitored_items[2].client_handle");
    assert_dv_flags(&mi[2].value, true, true, true, true, false, false, "monitored_items[2].value");
    assert_array(&mi[2].value.value, UAS_BUILTIN_UINT16, 2, "monitored_items[2].value.value");
    const uint16_t *u16 = mi[2].value.value.data;
    cr_assert(u16[0] == 10 && u16[1] == 20, "monitored_items[2] UInt16[] = {%u, %u}", u16[0],
              u16[1]);
    cr_assert_eq(mi[2].value.status, UAS_UNCERTAIN, "monitored_items[2].status");

    /* [1] EventNotificationList */
    eo = &nm->notification_data[1];
    cr_assert_eq(eo->encoding, UAS_EXTOBJ_DECODED, "notification_data[1].encoding %d",
                 eo->encoding);
    cr_assert_eq(eo->content.decoded.type, UAS_TYPE(EVENT_NOTIFICATION_LIST),
                 "notification_data[1] decoded type");
    const uas_event_notification_list *enl = eo->content.decoded.data;
    cr_assert_eq(enl->events_count, 1, "events_count");
    cr_assert_eq(enl->events[0].client_handle, 9, "events[0].client_handle");
    cr_assert_eq(enl->events[0].event_fields_count, 2, "events[0].event_fields_count");
    assert_scalar(&enl->events[0].event_fields[0], UAS_BUILTIN_STRING, "events[0].event_fields[0]");
    ASSERT_STR(*(const uas_string *)enl->events[0].event_fields[0].data, "Tank level high",
               "events[0].event_fields[0]");
    assert_scalar(&enl->events[0].event_fields[1], UAS_BUILTIN_UINT16, "events[0].event_fields[1]");
    cr_assert_eq(*(const uint16_t *)enl->events[0].event_fields[1].data, 500,
                 "events[0].event_fields[1]");

    cr_assert_eq(r->results_count, 2, "results_count");
    cr_assert_eq(r->results[0], UAS_GOOD, "results[0]");
    cr_assert_eq(r->results[1], UAS_BAD_SEQUENCE_NUMBER_UNKNOWN, "results[1] 0x%08" PRIX32,
                 r->results[1]);
    cr_assert_eq(r->diagnostic_infos_count, 0, "diagnostic_infos_count");
    cr_assert_not_null(r->diagnostic_infos, "diagnostic_infos: empty (0), not null (-1)");

    golden_assert_reencodes(g);
}

Test(golden, publish_response_built_in_c_encodes_like_node_opcua)
{
    double d = 1.5;
    uas_string abc = uas_string_from("abc");
    uint16_t u16[2] = {10, 20};

    uas_monitored_item_notification mi[3];
    for (int i = 0; i < 3; i++) {
        uas_init(&mi[i], UAS_TYPE(MONITORED_ITEM_NOTIFICATION));
        mi[i].client_handle = (uint32_t)i + 1;
        mi[i].value.has_value = true;
    }
    uas_variant_set_scalar(&mi[0].value.value, &d, BUILTIN(UAS_BUILTIN_DOUBLE));
    mi[0].value.has_source_timestamp = true;
    mi[0].value.source_timestamp = T_SRC;
    uas_variant_set_scalar(&mi[1].value.value, &abc, BUILTIN(UAS_BUILTIN_STRING));
    mi[1].value.has_server_timestamp = true;
    mi[1].value.server_timestamp = T_SRV;
    uas_variant_set_array(&mi[2].value.value, u16, 2, BUILTIN(UAS_BUILTIN_UINT16));
    mi[2].value.has_status = true;
    mi[2].value.status = UAS_UNCERTAIN;
    mi[2].value.has_source_timestamp = true;
    mi[2].value.source_timestamp = T_SRC;
    mi[2].value.has_server_timestamp = true;
    mi[2].value.server_timestamp = T_SRV;

    uas_data_change_notification dcn;
    uas_init(&dcn, UAS_TYPE(DATA_CHANGE_NOTIFICATION));
    dcn.monitored_items_count = 3;
    dcn.monitored_items = mi;
    dcn.diagnostic_infos_count = 0;
    dcn.diagnostic_infos = UAS_EMPTY_ARRAY;

    uas_string tank = uas_string_from("Tank level high");
    uint16_t severity = 500;
    uas_variant fields[2];
    memset(fields, 0, sizeof fields);
    uas_variant_set_scalar(&fields[0], &tank, BUILTIN(UAS_BUILTIN_STRING));
    uas_variant_set_scalar(&fields[1], &severity, BUILTIN(UAS_BUILTIN_UINT16));
    uas_event_field_list ev;
    uas_init(&ev, UAS_TYPE(EVENT_FIELD_LIST));
    ev.client_handle = 9;
    ev.event_fields_count = 2;
    ev.event_fields = fields;
    uas_event_notification_list enl;
    uas_init(&enl, UAS_TYPE(EVENT_NOTIFICATION_LIST));
    enl.events_count = 1;
    enl.events = &ev;

    uas_extensionobject data[2];
    memset(data, 0, sizeof data);
    data[0].encoding = UAS_EXTOBJ_DECODED;
    data[0].content.decoded.type = UAS_TYPE(DATA_CHANGE_NOTIFICATION);
    data[0].content.decoded.data = &dcn;
    data[1].encoding = UAS_EXTOBJ_DECODED;
    data[1].content.decoded.type = UAS_TYPE(EVENT_NOTIFICATION_LIST);
    data[1].content.decoded.data = &enl;

    uint32_t seq[2] = {3, 4};
    uas_status results[2] = {UAS_GOOD, UAS_BAD_SEQUENCE_NUMBER_UNKNOWN};

    uas_publish_response r;
    uas_init(&r, UAS_TYPE(PUBLISH_RESPONSE));
    r.response_header.timestamp = T_RSP;
    r.response_header.request_handle = 77;
    r.response_header.service_result = UAS_GOOD;
    r.response_header.string_table_count = 0;
    r.response_header.string_table = NULL; /* null array: -1 on the wire */
    r.subscription_id = 7;
    r.available_sequence_numbers_count = 2;
    r.available_sequence_numbers = seq;
    r.more_notifications = false;
    r.notification_message.sequence_number = 4;
    r.notification_message.publish_time = T_RSP;
    r.notification_message.notification_data_count = 2;
    r.notification_message.notification_data = data;
    r.results_count = 2;
    r.results = results;
    r.diagnostic_infos_count = 0;
    r.diagnostic_infos = UAS_EMPTY_ARRAY; /* empty array: 0 on the wire */

    assert_encodes_like_golden("PublishResponse.bin",
                               UAS_NS0ID_PUBLISHRESPONSE_ENCODING_DEFAULTBINARY, &r,
                               UAS_TYPE(PUBLISH_RESPONSE));
}

/* =============================================== OpenSecureChannelRequest */

Test(golden, open_secure_channel_request_decodes_and_reencodes_identically)
{
    _Alignas(max_align_t) uint8_t stack_buf[STACK_ARENA];
    golden *g = &T.g;
    golden_decode(g, stack_buf, sizeof stack_buf, "OpenSecureChannelRequest.bin",
                  UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST),
                  UAS_NS0ID_OPENSECURECHANNELREQUEST_ENCODING_DEFAULTBINARY);
    const uas_open_secure_channel_request *r = g->msg;

    assert_numeric_nodeid(&r->request_header.authentication_token, 0, 0,
                          "request_header.authentication_token");
    assert_request_header(&r->request_header, 1, 0, g->name);
    cr_assert_eq(r->client_protocol_version, 0, "client_protocol_version");
    cr_assert_eq(r->request_type, UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE, "request_type");
    cr_assert_eq(r->security_mode, UAS_MESSAGE_SECURITY_MODE_NONE, "security_mode");
    cr_assert_null(r->client_nonce.data,
                   "client_nonce: node-opcua sends a null ByteString for None");
    cr_assert_eq(r->client_nonce.length, 0, "client_nonce.length");
    cr_assert_eq(r->requested_lifetime, 3600000, "requested_lifetime");

    golden_assert_reencodes(g);
}

Test(golden, open_secure_channel_request_built_in_c_encodes_like_node_opcua)
{
    uas_open_secure_channel_request r;
    uas_init(&r, UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
    build_request_header(&r.request_header, uas_nodeid_numeric(0, 0), 1, 0);
    r.client_protocol_version = 0;
    r.request_type = UAS_SECURITY_TOKEN_REQUEST_TYPE_ISSUE;
    r.security_mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    r.requested_lifetime = 3600000;

    assert_encodes_like_golden("OpenSecureChannelRequest.bin",
                               UAS_NS0ID_OPENSECURECHANNELREQUEST_ENCODING_DEFAULTBINARY, &r,
                               UAS_TYPE(OPEN_SECURE_CHANNEL_REQUEST));
}
