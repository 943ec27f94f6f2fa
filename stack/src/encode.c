/* Binary encoder (Part 6, 5.2). Writes into the caller's buffer and, when it
 * is full, asks the flush callback for the next one, so large messages
 * stream out chunk by chunk. Primitives may straddle two buffers: OPC UA
 * chunks split the message body at arbitrary byte boundaries. */
#include "codec_internal.h"

typedef uas_status (*enc_fn)(uas_encoder *e, const void *src, const uas_type *t);
static const enc_fn enc_table[UAS_KIND_STRUCT + 1];

void uas_encoder_init(uas_encoder *e, void *buf, size_t len, const uas_limits *limits)
{
    e->pos = buf;
    e->end = e->pos + len;
    e->flush = NULL;
    e->flush_ud = NULL;
    e->limits = limits ? limits : &uas_limits_default;
    e->depth = 0;
    e->full = false;
}

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        uas_status st_ = (expr);                                                                   \
        if (st_ != UAS_GOOD)                                                                       \
            return st_;                                                                            \
    } while (0)

static uas_status enc_slow(uas_encoder *e, const uint8_t *src, size_t n)
{
    while (n > 0) {
        size_t room = (size_t)(e->end - e->pos);
        if (room == 0) {
            if (!e->flush) {
                e->full = true;
                return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
            }
            TRY(e->flush(e->flush_ud, &e->pos, &e->end));
            room = (size_t)(e->end - e->pos);
            if (room == 0)
                return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        }
        size_t k = room < n ? room : n;
        memcpy(e->pos, src, k);
        e->pos += k;
        src += k;
        n -= k;
    }
    return UAS_GOOD;
}

static inline uas_status wr(uas_encoder *e, const void *src, size_t n)
{
    if ((size_t)(e->end - e->pos) >= n && e->pos) {
        memcpy(e->pos, src, n);
        e->pos += n;
        return UAS_GOOD;
    }
    return enc_slow(e, src, n);
}

uas_status uas_encode_bytes(uas_encoder *e, const void *src, size_t n)
{
    return wr(e, src, n);
}

static inline uas_status wr_u8(uas_encoder *e, uint8_t v)
{
    return wr(e, &v, 1);
}

static inline uas_status wr_u16(uas_encoder *e, uint16_t v)
{
    v = UAS_LE16(v);
    return wr(e, &v, 2);
}

static inline uas_status wr_u32(uas_encoder *e, uint32_t v)
{
    v = UAS_LE32(v);
    return wr(e, &v, 4);
}

static inline uas_status wr_u64(uas_encoder *e, uint64_t v)
{
    v = UAS_LE64(v);
    return wr(e, &v, 8);
}

static uas_status enc_boolean(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    return wr_u8(e, *(const bool *)src ? 1 : 0);
}

static uas_status enc_fixed8(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    return wr(e, src, 1);
}

static uas_status enc_fixed16(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    uint16_t v;
    memcpy(&v, src, 2);
    return wr_u16(e, v);
}

static uas_status enc_fixed32(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    uint32_t v;
    memcpy(&v, src, 4);
    return wr_u32(e, v);
}

static uas_status enc_fixed64(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    uint64_t v;
    memcpy(&v, src, 8);
    return wr_u64(e, v);
}

static uas_status enc_guid(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_guid *g = src;
    uint8_t b[16];
    uint32_t d1 = UAS_LE32(g->data1);
    uint16_t d2 = UAS_LE16(g->data2), d3 = UAS_LE16(g->data3);
    memcpy(b, &d1, 4);
    memcpy(b + 4, &d2, 2);
    memcpy(b + 6, &d3, 2);
    memcpy(b + 8, g->data4, 8);
    return wr(e, b, 16);
}

static uas_status enc_string(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_string *s = src;
    if (!s->data)
        return wr_u32(e, UINT32_MAX); /* -1: null */
    if (s->length > e->limits->max_string_length || s->length > INT32_MAX)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    TRY(wr_u32(e, (uint32_t)s->length));
    return s->length ? wr(e, s->data, s->length) : UAS_GOOD;
}

/* The most compact form for numeric ids, as every peer expects. */
static uas_status enc_nodeid_flags(uas_encoder *e, const uas_nodeid *id, uint8_t flags)
{
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        if (id->ns == 0 && id->id.numeric <= 0xFF) {
            uint8_t b[2] = {NODEID_TWOBYTE | flags, (uint8_t)id->id.numeric};
            return wr(e, b, 2);
        }
        if (id->ns <= 0xFF && id->id.numeric <= 0xFFFF) {
            uint8_t b[4] = {NODEID_FOURBYTE | flags, (uint8_t)id->ns, (uint8_t)id->id.numeric,
                            (uint8_t)(id->id.numeric >> 8)};
            return wr(e, b, 4);
        }
        TRY(wr_u8(e, NODEID_NUMERIC | flags));
        TRY(wr_u16(e, id->ns));
        return wr_u32(e, id->id.numeric);
    case UAS_NODEID_STRING:
        TRY(wr_u8(e, NODEID_STRING | flags));
        TRY(wr_u16(e, id->ns));
        return enc_string(e, &id->id.string, NULL);
    case UAS_NODEID_GUID:
        TRY(wr_u8(e, NODEID_GUID | flags));
        TRY(wr_u16(e, id->ns));
        return enc_guid(e, &id->id.guid, NULL);
    case UAS_NODEID_BYTESTRING:
        TRY(wr_u8(e, NODEID_BYTESTRING | flags));
        TRY(wr_u16(e, id->ns));
        return enc_string(e, &id->id.bytestring, NULL);
    default:
        return UAS_BAD_ENCODING_ERROR;
    }
}

static uas_status enc_nodeid(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    return enc_nodeid_flags(e, src, 0);
}

static uas_status enc_expandednodeid(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_expandednodeid *x = src;
    uint8_t flags = (x->namespace_uri.data ? NODEID_FLAG_NAMESPACE_URI : 0) |
                    (x->server_index ? NODEID_FLAG_SERVER_INDEX : 0);
    TRY(enc_nodeid_flags(e, &x->nodeid, flags));
    if (x->namespace_uri.data)
        TRY(enc_string(e, &x->namespace_uri, NULL));
    if (x->server_index)
        TRY(wr_u32(e, x->server_index));
    return UAS_GOOD;
}

static uas_status enc_qualifiedname(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_qualifiedname *q = src;
    TRY(wr_u16(e, q->ns));
    return enc_string(e, &q->name, NULL);
}

static uas_status enc_localizedtext(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_localizedtext *l = src;
    uint8_t mask = (l->locale.data ? LT_LOCALE : 0) | (l->text.data ? LT_TEXT : 0);
    TRY(wr_u8(e, mask));
    if (l->locale.data)
        TRY(enc_string(e, &l->locale, NULL));
    if (l->text.data)
        TRY(enc_string(e, &l->text, NULL));
    return UAS_GOOD;
}

static inline uas_status enter(uas_encoder *e)
{
    if (e->depth >= e->limits->max_depth)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    e->depth++;
    return UAS_GOOD;
}

static uas_status count_flush(void *ud, uint8_t **pos, uint8_t **end);

/* Writes Int32 length + body of a decoded structure. The body is first
 * written straight into the current buffer with the length patched in
 * afterwards; only when it does not fit is its size computed up front (a
 * second walk) so the length can precede a body that spans buffers.
 *
 * Each nesting level must cost one extra walk at most, or nested
 * ExtensionObjects get exponentially slow (2^depth walks): the size counter
 * writes a placeholder instead of computing lengths it never reads, and
 * without a flush callback a body that overflowed the fast path is not tried
 * again, since the slow path would write the same bytes at the same place. */
static uas_status enc_struct_body(uas_encoder *e, const void *src, const uas_type *t)
{
    if (e->flush == count_flush) {
        TRY(wr_u32(e, 0));
        return enc_table[t->kind](e, src, t);
    }
    if ((size_t)(e->end - e->pos) > 4 && e->pos) {
        uint8_t *len_at = e->pos;
        uas_encoder_flush_fn flush = e->flush;
        bool full = e->full;
        e->pos += 4;
        e->flush = NULL;
        e->full = false;
        uas_status st = enc_table[t->kind](e, src, t);
        bool overflowed = e->full;
        e->flush = flush;
        e->full = full;
        if (st == UAS_GOOD) {
            uint32_t n = UAS_LE32((uint32_t)(e->pos - len_at - 4));
            memcpy(len_at, &n, 4);
            return UAS_GOOD;
        }
        if (!overflowed)
            return st;
        e->pos = len_at; /* did not fit: rewind and take the slow path */
        if (!flush) {
            e->full = true;
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        }
    }
    size_t size = uas_encoded_size(src, t);
    if (size == SIZE_MAX || size > INT32_MAX)
        return UAS_BAD_ENCODING_ERROR;
    TRY(wr_u32(e, (uint32_t)size));
    return enc_table[t->kind](e, src, t);
}

static uas_status enc_wrapped(uas_encoder *e, const void *src, const uas_type *t)
{
    if (t->kind != UAS_KIND_STRUCT || t->binary_encoding_id == 0)
        return UAS_BAD_ENCODING_ERROR;
    uas_nodeid id = {.ns = 0, .kind = UAS_NODEID_NUMERIC, .id.numeric = t->binary_encoding_id};
    TRY(enc_nodeid_flags(e, &id, 0));
    TRY(wr_u8(e, 1));
    TRY(enter(e));
    uas_status st = enc_struct_body(e, src, t);
    e->depth--;
    return st;
}

static uas_status enc_extensionobject(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_extensionobject *x = src;
    switch (x->encoding) {
    case UAS_EXTOBJ_EMPTY:
        TRY(enc_nodeid_flags(e, &x->content.encoded.type_id, 0));
        return wr_u8(e, 0);
    case UAS_EXTOBJ_BYTESTRING:
    case UAS_EXTOBJ_XML:
        TRY(enc_nodeid_flags(e, &x->content.encoded.type_id, 0));
        TRY(wr_u8(e, x->encoding == UAS_EXTOBJ_BYTESTRING ? 1 : 2));
        /* Bodies are bounded by the message size, not the string limit. */
        if (!x->content.encoded.body.data)
            return wr_u32(e, UINT32_MAX);
        if (x->content.encoded.body.length > INT32_MAX)
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        TRY(wr_u32(e, (uint32_t)x->content.encoded.body.length));
        return wr(e, x->content.encoded.body.data, x->content.encoded.body.length);
    case UAS_EXTOBJ_DECODED:
        if (!x->content.decoded.type || !x->content.decoded.data)
            return UAS_BAD_ENCODING_ERROR;
        return enc_wrapped(e, x->content.decoded.data, x->content.decoded.type);
    default:
        return UAS_BAD_ENCODING_ERROR;
    }
}

static uas_status enc_array(uas_encoder *e, size_t n, const void *elems, const uas_type *t,
                            enc_fn fn)
{
    if (!elems)
        return wr_u32(e, UINT32_MAX);
    if (n > e->limits->max_array_length || n > INT32_MAX)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    TRY(wr_u32(e, (uint32_t)n));
    if (n == 0)
        return UAS_GOOD;
    if (fn == enc_table[t->kind] && uas_is_memcpy_array(t))
        return wr(e, elems, n * t->size);
    const uint8_t *p = elems;
    for (size_t i = 0; i < n; i++)
        TRY(fn(e, p + i * t->size, t));
    return UAS_GOOD;
}

static uas_status enc_variant_body(uas_encoder *e, const uas_variant *v)
{
    const uas_type *t = v->type;
    if (!t)
        return wr_u8(e, 0);
    uint8_t tid;
    enc_fn fn = enc_table[t->kind];
    if (t->kind == UAS_KIND_STRUCT) {
        tid = UAS_BUILTIN_EXTENSIONOBJECT;
        fn = enc_wrapped;
    } else if (t->kind == UAS_KIND_ENUM) {
        tid = UAS_BUILTIN_INT32;
    } else if (t->kind >= UAS_BUILTIN_BOOLEAN && t->kind <= UAS_BUILTIN_DIAGNOSTICINFO) {
        tid = t->kind;
    } else {
        return UAS_BAD_ENCODING_ERROR;
    }
    if (!v->is_array) {
        if (!v->data || tid == UAS_BUILTIN_VARIANT)
            return UAS_BAD_ENCODING_ERROR;
        TRY(wr_u8(e, tid));
        return fn(e, v->data, t);
    }
    if (v->array_dimensions) {
        /* Never emit what a decoder must reject: the dimensions describe
         * exactly the elements. */
        uint64_t product = v->array_dimensions_length ? 1 : 0;
        for (size_t i = 0; i < v->array_dimensions_length && product <= UINT32_MAX; i++)
            product *= v->array_dimensions[i];
        if (product != v->array_length || (int32_t)product < 0)
            return UAS_BAD_ENCODING_ERROR;
    }
    uint8_t mask = tid | VARIANT_ARRAY | (v->array_dimensions ? VARIANT_DIMENSIONS : 0);
    TRY(wr_u8(e, mask));
    TRY(enc_array(e, v->array_length, v->data, t, fn));
    if (v->array_dimensions)
        TRY(enc_array(e, v->array_dimensions_length, v->array_dimensions,
                      &uas_types[UAS_TYPES_UINT32], enc_table[UAS_BUILTIN_UINT32]));
    return UAS_GOOD;
}

static uas_status enc_variant(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    TRY(enter(e));
    uas_status st = enc_variant_body(e, src);
    e->depth--;
    return st;
}

static uas_status enc_datavalue(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_datavalue *v = src;
    uint8_t mask = (v->has_value ? DV_VALUE : 0) | (v->has_status ? DV_STATUS : 0) |
                   (v->has_source_timestamp ? DV_SOURCE_TS : 0) |
                   (v->has_server_timestamp ? DV_SERVER_TS : 0) |
                   (v->has_source_picoseconds ? DV_SOURCE_PICO : 0) |
                   (v->has_server_picoseconds ? DV_SERVER_PICO : 0);
    TRY(wr_u8(e, mask));
    if (v->has_value)
        TRY(enc_variant(e, &v->value, NULL));
    if (v->has_status)
        TRY(wr_u32(e, v->status));
    if (v->has_source_timestamp)
        TRY(wr_u64(e, (uint64_t)v->source_timestamp));
    if (v->has_source_picoseconds)
        TRY(wr_u16(e, v->source_picoseconds));
    if (v->has_server_timestamp)
        TRY(wr_u64(e, (uint64_t)v->server_timestamp));
    if (v->has_server_picoseconds)
        TRY(wr_u16(e, v->server_picoseconds));
    return UAS_GOOD;
}

static uas_status enc_diagnosticinfo(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)t;
    const uas_diagnosticinfo *di = src;
    bool inner = di->has_inner_diagnostic_info && di->inner_diagnostic_info;
    uint8_t mask = (di->has_symbolic_id ? DI_SYMBOLIC_ID : 0) |
                   (di->has_namespace_uri ? DI_NAMESPACE_URI : 0) |
                   (di->has_localized_text ? DI_LOCALIZED_TEXT : 0) |
                   (di->has_locale ? DI_LOCALE : 0) |
                   (di->has_additional_info ? DI_ADDITIONAL_INFO : 0) |
                   (di->has_inner_status ? DI_INNER_STATUS : 0) | (inner ? DI_INNER_DIAGNOSTIC : 0);
    TRY(wr_u8(e, mask));
    if (di->has_symbolic_id)
        TRY(wr_u32(e, (uint32_t)di->symbolic_id));
    if (di->has_namespace_uri)
        TRY(wr_u32(e, (uint32_t)di->namespace_uri));
    if (di->has_locale)
        TRY(wr_u32(e, (uint32_t)di->locale));
    if (di->has_localized_text)
        TRY(wr_u32(e, (uint32_t)di->localized_text));
    if (di->has_additional_info)
        TRY(enc_string(e, &di->additional_info, NULL));
    if (di->has_inner_status)
        TRY(wr_u32(e, di->inner_status));
    if (inner) {
        TRY(enter(e));
        uas_status st = enc_diagnosticinfo(e, di->inner_diagnostic_info, NULL);
        e->depth--;
        return st;
    }
    return UAS_GOOD;
}

static uas_status enc_struct(uas_encoder *e, const void *src, const uas_type *t)
{
    const uint8_t *base = src;
    const uas_member *m = t->members;
    for (uint16_t i = 0; i < t->member_count; i++, m++) {
        if (m->is_array) {
            size_t n;
            const void *elems;
            memcpy(&n, base + m->offset, sizeof(n));
            memcpy(&elems, base + m->array_offset, sizeof(elems));
            const uas_type *mt = uas_member_type(m);
            TRY(enc_array(e, n, elems, mt, enc_table[mt->kind]));
        } else {
            const uas_type *mt = uas_member_type(m);
            TRY(enc_table[mt->kind](e, base + m->offset, mt));
        }
    }
    return UAS_GOOD;
}

static uas_status enc_invalid(uas_encoder *e, const void *src, const uas_type *t)
{
    (void)e;
    (void)src;
    (void)t;
    return UAS_BAD_ENCODING_ERROR;
}

static const enc_fn enc_table[UAS_KIND_STRUCT + 1] = {
    [0] = enc_invalid,
    [UAS_BUILTIN_BOOLEAN] = enc_boolean,
    [UAS_BUILTIN_SBYTE] = enc_fixed8,
    [UAS_BUILTIN_BYTE] = enc_fixed8,
    [UAS_BUILTIN_INT16] = enc_fixed16,
    [UAS_BUILTIN_UINT16] = enc_fixed16,
    [UAS_BUILTIN_INT32] = enc_fixed32,
    [UAS_BUILTIN_UINT32] = enc_fixed32,
    [UAS_BUILTIN_INT64] = enc_fixed64,
    [UAS_BUILTIN_UINT64] = enc_fixed64,
    [UAS_BUILTIN_FLOAT] = enc_fixed32,
    [UAS_BUILTIN_DOUBLE] = enc_fixed64,
    [UAS_BUILTIN_STRING] = enc_string,
    [UAS_BUILTIN_DATETIME] = enc_fixed64,
    [UAS_BUILTIN_GUID] = enc_guid,
    [UAS_BUILTIN_BYTESTRING] = enc_string,
    [UAS_BUILTIN_XMLELEMENT] = enc_string,
    [UAS_BUILTIN_NODEID] = enc_nodeid,
    [UAS_BUILTIN_EXPANDEDNODEID] = enc_expandednodeid,
    [UAS_BUILTIN_STATUSCODE] = enc_fixed32,
    [UAS_BUILTIN_QUALIFIEDNAME] = enc_qualifiedname,
    [UAS_BUILTIN_LOCALIZEDTEXT] = enc_localizedtext,
    [UAS_BUILTIN_EXTENSIONOBJECT] = enc_extensionobject,
    [UAS_BUILTIN_DATAVALUE] = enc_datavalue,
    [UAS_BUILTIN_VARIANT] = enc_variant,
    [UAS_BUILTIN_DIAGNOSTICINFO] = enc_diagnosticinfo,
    [UAS_KIND_ENUM] = enc_fixed32,
    [UAS_KIND_STRUCT] = enc_struct,
};

uas_status uas_encode(uas_encoder *e, const void *src, const uas_type *t)
{
    if (!t || t->kind > UAS_KIND_STRUCT)
        return UAS_BAD_ENCODING_ERROR;
    return enc_table[t->kind](e, src, t);
}

/* Size by encoding into a scratch buffer that is recycled on every flush:
 * one implementation of the wire format, so size and bytes never disagree. */
typedef struct {
    uint8_t buf[256];
    size_t flushed;
} size_counter;

static uas_status count_flush(void *ud, uint8_t **pos, uint8_t **end)
{
    size_counter *c = ud;
    c->flushed += (size_t)(*pos - c->buf);
    *pos = c->buf;
    *end = c->buf + sizeof(c->buf);
    return UAS_GOOD;
}

size_t uas_encoded_size(const void *src, const uas_type *t)
{
    size_counter c;
    c.flushed = 0;
    uas_encoder e;
    uas_encoder_init(&e, c.buf, sizeof(c.buf), NULL);
    /* No limits: the size is a fact about the value, limits are the caller's. */
    static const uas_limits unlimited = {UINT32_MAX, UINT32_MAX, UINT16_MAX, 0};
    e.limits = &unlimited;
    e.flush = count_flush;
    e.flush_ud = &c;
    if (uas_encode(&e, src, t) != UAS_GOOD)
        return SIZE_MAX;
    return c.flushed + (size_t)(e.pos - c.buf);
}

uas_status uas_encode_binary(const void *src, const uas_type *t, void *buf, size_t cap,
                             size_t *written)
{
    uas_encoder e;
    uas_encoder_init(&e, buf, cap, NULL);
    uas_status st = uas_encode(&e, src, t);
    if (written)
        *written = st == UAS_GOOD ? (size_t)(e.pos - (uint8_t *)buf) : 0;
    return st;
}
