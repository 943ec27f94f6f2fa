/* Binary decoder (Part 6, 5.2). Every length read from the wire is checked
 * against the configured limits and against the bytes that remain before
 * anything is allocated, so a lying length costs nothing. All memory comes
 * from the decoder's arena. */
#include "codec_internal.h"

const uas_limits uas_limits_default = {
    .max_array_length = 1000000,
    .max_string_length = 16u << 20,
    .max_depth = 64,
    .max_message_size = 16u << 20,
};

typedef uas_status (*dec_fn)(uas_decoder *d, void *dst, const uas_type *t);
static const dec_fn dec_table[UAS_KIND_STRUCT + 1];

static inline size_t left(const uas_decoder *d)
{
    return (size_t)(d->end - d->pos);
}

void uas_decoder_init(uas_decoder *d, const void *buf, size_t len, uas_arena *arena,
                      const uas_limits *limits)
{
    d->pos = buf;
    d->end = d->pos + len;
    d->arena = arena;
    d->limits = limits ? limits : &uas_limits_default;
    d->depth = 0;
    d->zero_copy = false;
}

uas_status uas_decode_bytes(uas_decoder *d, void *dst, size_t n)
{
    if (left(d) < n)
        return UAS_BAD_DECODING_ERROR;
    memcpy(dst, d->pos, n);
    d->pos += n;
    return UAS_GOOD;
}

static inline uas_status rd_u8(uas_decoder *d, uint8_t *v)
{
    if (d->pos >= d->end)
        return UAS_BAD_DECODING_ERROR;
    *v = *d->pos++;
    return UAS_GOOD;
}

static inline uas_status rd_u16(uas_decoder *d, uint16_t *v)
{
    if (left(d) < 2)
        return UAS_BAD_DECODING_ERROR;
    uint16_t x;
    memcpy(&x, d->pos, 2);
    *v = UAS_LE16(x);
    d->pos += 2;
    return UAS_GOOD;
}

static inline uas_status rd_u32(uas_decoder *d, uint32_t *v)
{
    if (left(d) < 4)
        return UAS_BAD_DECODING_ERROR;
    uint32_t x;
    memcpy(&x, d->pos, 4);
    *v = UAS_LE32(x);
    d->pos += 4;
    return UAS_GOOD;
}

static inline uas_status rd_u64(uas_decoder *d, uint64_t *v)
{
    if (left(d) < 8)
        return UAS_BAD_DECODING_ERROR;
    uint64_t x;
    memcpy(&x, d->pos, 8);
    *v = UAS_LE64(x);
    d->pos += 8;
    return UAS_GOOD;
}

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        uas_status st_ = (expr);                                                                   \
        if (st_ != UAS_GOOD)                                                                       \
            return st_;                                                                            \
    } while (0)

static uas_status dec_boolean(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uint8_t b;
    TRY(rd_u8(d, &b));
    *(bool *)dst = b != 0;
    return UAS_GOOD;
}

static uas_status dec_fixed8(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    return rd_u8(d, dst);
}

static uas_status dec_fixed16(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uint16_t v;
    TRY(rd_u16(d, &v));
    memcpy(dst, &v, 2);
    return UAS_GOOD;
}

static uas_status dec_fixed32(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uint32_t v;
    TRY(rd_u32(d, &v));
    memcpy(dst, &v, 4);
    return UAS_GOOD;
}

static uas_status dec_fixed64(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uint64_t v;
    TRY(rd_u64(d, &v));
    memcpy(dst, &v, 8);
    return UAS_GOOD;
}

static uas_status dec_guid(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_guid *g = dst;
    if (left(d) < 16)
        return UAS_BAD_DECODING_ERROR;
    (void)rd_u32(d, &g->data1);
    (void)rd_u16(d, &g->data2);
    (void)rd_u16(d, &g->data3);
    memcpy(g->data4, d->pos, 8);
    d->pos += 8;
    return UAS_GOOD;
}

/* Reads an Int32 length: -1 is null, other negatives are malformed. */
static uas_status rd_length(uas_decoder *d, int32_t *n)
{
    uint32_t u;
    TRY(rd_u32(d, &u));
    *n = (int32_t)u;
    return *n < -1 ? UAS_BAD_DECODING_ERROR : UAS_GOOD;
}

static uas_status dec_string(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_string *s = dst;
    int32_t n;
    TRY(rd_length(d, &n));
    if (n < 0) {
        s->length = 0;
        s->data = NULL;
        return UAS_GOOD;
    }
    if ((uint32_t)n > d->limits->max_string_length)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    if ((size_t)n > left(d))
        return UAS_BAD_DECODING_ERROR;
    s->length = (size_t)n;
    if (n == 0) {
        s->data = UAS_EMPTY_ARRAY;
    } else if (d->zero_copy) {
        s->data = (uint8_t *)(uintptr_t)d->pos;
    } else {
        s->data = uas_arena_alloc(d->arena, (size_t)n);
        if (!s->data)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(s->data, d->pos, (size_t)n);
    }
    d->pos += n;
    return UAS_GOOD;
}

/* Decodes the NodeId body after its encoding byte (flags already removed). */
static uas_status dec_nodeid_body(uas_decoder *d, uas_nodeid *id, uint8_t form)
{
    switch (form) {
    case NODEID_TWOBYTE: {
        uint8_t v;
        TRY(rd_u8(d, &v));
        id->ns = 0;
        id->kind = UAS_NODEID_NUMERIC;
        id->id.numeric = v;
        return UAS_GOOD;
    }
    case NODEID_FOURBYTE: {
        uint8_t ns;
        uint16_t v;
        TRY(rd_u8(d, &ns));
        TRY(rd_u16(d, &v));
        id->ns = ns;
        id->kind = UAS_NODEID_NUMERIC;
        id->id.numeric = v;
        return UAS_GOOD;
    }
    case NODEID_NUMERIC:
        id->kind = UAS_NODEID_NUMERIC;
        TRY(rd_u16(d, &id->ns));
        return rd_u32(d, &id->id.numeric);
    case NODEID_STRING:
        id->kind = UAS_NODEID_STRING;
        TRY(rd_u16(d, &id->ns));
        return dec_string(d, &id->id.string, NULL);
    case NODEID_GUID:
        id->kind = UAS_NODEID_GUID;
        TRY(rd_u16(d, &id->ns));
        return dec_guid(d, &id->id.guid, NULL);
    case NODEID_BYTESTRING:
        id->kind = UAS_NODEID_BYTESTRING;
        TRY(rd_u16(d, &id->ns));
        return dec_string(d, &id->id.bytestring, NULL);
    default:
        return UAS_BAD_DECODING_ERROR;
    }
}

static uas_status dec_nodeid(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uint8_t form;
    TRY(rd_u8(d, &form));
    /* The URI and server-index flags belong to ExpandedNodeId only. */
    if (form & (NODEID_FLAG_NAMESPACE_URI | NODEID_FLAG_SERVER_INDEX))
        return UAS_BAD_DECODING_ERROR;
    return dec_nodeid_body(d, dst, form);
}

static uas_status dec_expandednodeid(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_expandednodeid *e = dst;
    uint8_t form;
    TRY(rd_u8(d, &form));
    TRY(dec_nodeid_body(d, &e->nodeid, form & 0x3F));
    e->namespace_uri.length = 0;
    e->namespace_uri.data = NULL;
    e->server_index = 0;
    if (form & NODEID_FLAG_NAMESPACE_URI)
        TRY(dec_string(d, &e->namespace_uri, NULL));
    if (form & NODEID_FLAG_SERVER_INDEX)
        TRY(rd_u32(d, &e->server_index));
    return UAS_GOOD;
}

static uas_status dec_qualifiedname(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_qualifiedname *q = dst;
    TRY(rd_u16(d, &q->ns));
    return dec_string(d, &q->name, NULL);
}

/* Reserved mask bits of LocalizedText, DataValue and DiagnosticInfo are
 * ignored rather than rejected: they carry no data, and some peers set them. */
static uas_status dec_localizedtext(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_localizedtext *l = dst;
    uint8_t mask;
    TRY(rd_u8(d, &mask));
    l->locale.length = l->text.length = 0;
    l->locale.data = l->text.data = NULL;
    if (mask & LT_LOCALE)
        TRY(dec_string(d, &l->locale, NULL));
    if (mask & LT_TEXT)
        TRY(dec_string(d, &l->text, NULL));
    return UAS_GOOD;
}

static inline uas_status enter(uas_decoder *d)
{
    if (d->depth >= d->limits->max_depth)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    d->depth++;
    return UAS_GOOD;
}

static inline uas_status dec_value(uas_decoder *d, void *dst, const uas_type *t)
{
    return dec_table[t->kind](d, dst, t);
}

static uas_status dec_extensionobject(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_extensionobject *e = dst;
    uas_nodeid type_id;
    uint8_t enc;
    TRY(dec_nodeid(d, &type_id, NULL));
    TRY(rd_u8(d, &enc));
    if (enc == 0) {
        e->encoding = UAS_EXTOBJ_EMPTY;
        e->content.encoded.type_id = type_id;
        e->content.encoded.body.length = 0;
        e->content.encoded.body.data = NULL;
        return UAS_GOOD;
    }
    if (enc != 1 && enc != 2)
        return UAS_BAD_DECODING_ERROR;
    int32_t n;
    TRY(rd_length(d, &n));
    if (n > 0 && (size_t)n > left(d))
        return UAS_BAD_DECODING_ERROR;
    const uas_type *body_type = NULL;
    if (enc == 1 && n >= 0 && type_id.ns == 0 && type_id.kind == UAS_NODEID_NUMERIC)
        body_type = uas_type_by_encoding_id(type_id.id.numeric);
    if (!body_type) {
        /* Unknown binary bodies and XML bodies are kept as bytes. */
        const uint8_t *body = d->pos;
        e->encoding = enc == 1 ? UAS_EXTOBJ_BYTESTRING : UAS_EXTOBJ_XML;
        e->content.encoded.type_id = type_id;
        e->content.encoded.body.length = n > 0 ? (size_t)n : 0;
        if (n < 0) {
            e->content.encoded.body.data = NULL;
        } else if (n == 0) {
            e->content.encoded.body.data = UAS_EMPTY_ARRAY;
        } else if (d->zero_copy) {
            e->content.encoded.body.data = (uint8_t *)(uintptr_t)body;
        } else {
            e->content.encoded.body.data = uas_arena_alloc(d->arena, (size_t)n);
            if (!e->content.encoded.body.data)
                return UAS_BAD_OUT_OF_MEMORY;
            memcpy(e->content.encoded.body.data, body, (size_t)n);
        }
        d->pos += n > 0 ? n : 0;
        return UAS_GOOD;
    }
    TRY(enter(d));
    void *data = uas_arena_alloc(d->arena, body_type->size);
    if (!data)
        return UAS_BAD_OUT_OF_MEMORY;
    /* The body is decoded within its declared length; trailing bytes a newer
     * peer may add are skipped. */
    const uint8_t *body_end = d->pos + n;
    const uint8_t *saved_end = d->end;
    d->end = body_end;
    uas_status st = dec_value(d, data, body_type);
    d->end = saved_end;
    d->depth--;
    if (st != UAS_GOOD)
        return st;
    d->pos = body_end;
    e->encoding = UAS_EXTOBJ_DECODED;
    e->content.decoded.type = body_type;
    e->content.decoded.data = data;
    return UAS_GOOD;
}

/* Reads an array: Int32 count, then the elements. */
static uas_status dec_array(uas_decoder *d, size_t *count, void **elems, const uas_type *t)
{
    int32_t n;
    TRY(rd_length(d, &n));
    if (n < 0) {
        *count = 0;
        *elems = NULL;
        return UAS_GOOD;
    }
    if ((uint32_t)n > d->limits->max_array_length)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    if (n == 0) {
        *count = 0;
        *elems = UAS_EMPTY_ARRAY;
        return UAS_GOOD;
    }
    /* Every element takes at least its minimum encoding on the wire (only
     * structures without fields take none), so a count beyond what the
     * remaining bytes can hold is a lie, refused before allocating. */
    size_t min = uas_min_wire_size(t);
    if ((size_t)n * min > left(d))
        return UAS_BAD_DECODING_ERROR;
    uint8_t *p = uas_arena_alloc(d->arena, (size_t)n * t->size);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    if (uas_is_memcpy_array(t)) {
        memcpy(p, d->pos, (size_t)n * t->size);
        d->pos += (size_t)n * t->size;
    } else {
        dec_fn fn = dec_table[t->kind];
        for (int32_t i = 0; i < n; i++)
            TRY(fn(d, p + (size_t)i * t->size, t));
    }
    *count = (size_t)n;
    *elems = p;
    return UAS_GOOD;
}

/* A Variant holding ExtensionObjects of one known structure is presented as
 * that structure (scalar or array), so users see ReadRequest, not bytes. */
static uas_status variant_unwrap(uas_decoder *d, uas_variant *v)
{
    uas_extensionobject *eo = v->data;
    if (!v->is_array) {
        if (eo->encoding == UAS_EXTOBJ_DECODED) {
            v->type = eo->content.decoded.type;
            v->data = eo->content.decoded.data;
        }
        return UAS_GOOD;
    }
    if (v->array_length == 0)
        return UAS_GOOD;
    const uas_type *t = NULL;
    for (size_t i = 0; i < v->array_length; i++) {
        if (eo[i].encoding != UAS_EXTOBJ_DECODED || (t && eo[i].content.decoded.type != t))
            return UAS_GOOD;
        t = eo[i].content.decoded.type;
    }
    uint8_t *p = uas_arena_alloc(d->arena, v->array_length * t->size);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; i < v->array_length; i++)
        memcpy(p + i * t->size, eo[i].content.decoded.data, t->size);
    v->type = t;
    v->data = p;
    return UAS_GOOD;
}

static uas_status dec_variant_body(uas_decoder *d, uas_variant *v)
{
    uint8_t mask;
    TRY(rd_u8(d, &mask));
    memset(v, 0, sizeof(*v));
    uint8_t tid = mask & VARIANT_TYPE_MASK;
    if (tid == 0)
        return mask == 0 ? UAS_GOOD : UAS_BAD_DECODING_ERROR;
    if (tid > UAS_BUILTIN_DIAGNOSTICINFO)
        return UAS_BAD_DECODING_ERROR;
    const uas_type *t = &uas_types[tid - 1];
    v->type = t;
    if (!(mask & VARIANT_ARRAY)) {
        /* Dimensions without an array, and a Variant directly inside a
         * Variant, are not valid encodings. */
        if ((mask & VARIANT_DIMENSIONS) || tid == UAS_BUILTIN_VARIANT)
            return UAS_BAD_DECODING_ERROR;
        v->data = uas_arena_alloc(d->arena, t->size);
        if (!v->data)
            return UAS_BAD_OUT_OF_MEMORY;
        TRY(dec_value(d, v->data, t));
    } else {
        v->is_array = true;
        TRY(dec_array(d, &v->array_length, &v->data, t));
        if (mask & VARIANT_DIMENSIONS) {
            TRY(dec_array(d, &v->array_dimensions_length, (void **)&v->array_dimensions,
                          &uas_types[UAS_TYPES_UINT32]));
            /* The dimensions must describe exactly the elements sent. */
            uint64_t product = 1;
            for (size_t i = 0; i < v->array_dimensions_length; i++) {
                uint32_t dim = v->array_dimensions[i];
                if ((int32_t)dim < 0)
                    return UAS_BAD_DECODING_ERROR;
                product *= dim;
                if (product > UINT32_MAX)
                    return UAS_BAD_DECODING_ERROR;
            }
            if (v->array_dimensions_length == 0 || product != v->array_length)
                return UAS_BAD_DECODING_ERROR;
        }
    }
    if (tid == UAS_BUILTIN_EXTENSIONOBJECT)
        return variant_unwrap(d, v);
    return UAS_GOOD;
}

static uas_status dec_variant(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    TRY(enter(d));
    uas_status st = dec_variant_body(d, dst);
    d->depth--;
    return st;
}

static uas_status dec_datavalue(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_datavalue *v = dst;
    uint8_t mask;
    TRY(rd_u8(d, &mask));
    memset(v, 0, sizeof(*v));
    v->has_value = mask & DV_VALUE;
    v->has_status = mask & DV_STATUS;
    v->has_source_timestamp = mask & DV_SOURCE_TS;
    v->has_server_timestamp = mask & DV_SERVER_TS;
    v->has_source_picoseconds = mask & DV_SOURCE_PICO;
    v->has_server_picoseconds = mask & DV_SERVER_PICO;
    if (v->has_value)
        TRY(dec_variant(d, &v->value, NULL));
    if (v->has_status)
        TRY(rd_u32(d, &v->status));
    if (v->has_source_timestamp)
        TRY(rd_u64(d, (uint64_t *)&v->source_timestamp));
    if (v->has_source_picoseconds)
        TRY(rd_u16(d, &v->source_picoseconds));
    if (v->has_server_timestamp)
        TRY(rd_u64(d, (uint64_t *)&v->server_timestamp));
    if (v->has_server_picoseconds)
        TRY(rd_u16(d, &v->server_picoseconds));
    return UAS_GOOD;
}

static uas_status dec_diagnosticinfo(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)t;
    uas_diagnosticinfo *di = dst;
    uint8_t mask;
    TRY(rd_u8(d, &mask));
    memset(di, 0, sizeof(*di));
    di->has_symbolic_id = mask & DI_SYMBOLIC_ID;
    di->has_namespace_uri = mask & DI_NAMESPACE_URI;
    di->has_localized_text = mask & DI_LOCALIZED_TEXT;
    di->has_locale = mask & DI_LOCALE;
    di->has_additional_info = mask & DI_ADDITIONAL_INFO;
    di->has_inner_status = mask & DI_INNER_STATUS;
    di->has_inner_diagnostic_info = mask & DI_INNER_DIAGNOSTIC;
    if (di->has_symbolic_id)
        TRY(rd_u32(d, (uint32_t *)&di->symbolic_id));
    if (di->has_namespace_uri)
        TRY(rd_u32(d, (uint32_t *)&di->namespace_uri));
    if (di->has_locale)
        TRY(rd_u32(d, (uint32_t *)&di->locale));
    if (di->has_localized_text)
        TRY(rd_u32(d, (uint32_t *)&di->localized_text));
    if (di->has_additional_info)
        TRY(dec_string(d, &di->additional_info, NULL));
    if (di->has_inner_status)
        TRY(rd_u32(d, &di->inner_status));
    if (di->has_inner_diagnostic_info) {
        TRY(enter(d));
        di->inner_diagnostic_info = uas_arena_alloc(d->arena, sizeof(uas_diagnosticinfo));
        uas_status st = di->inner_diagnostic_info
                            ? dec_diagnosticinfo(d, di->inner_diagnostic_info, NULL)
                            : UAS_BAD_OUT_OF_MEMORY;
        d->depth--;
        return st;
    }
    return UAS_GOOD;
}

static uas_status dec_struct(uas_decoder *d, void *dst, const uas_type *t)
{
    uint8_t *base = dst;
    const uas_member *m = t->members;
    for (uint16_t i = 0; i < t->member_count; i++, m++) {
        const uas_type *mt = uas_member_type(m);
        if (m->is_array)
            TRY(dec_array(d, (size_t *)(base + m->offset), (void **)(base + m->array_offset), mt));
        else
            TRY(dec_table[mt->kind](d, base + m->offset, mt));
    }
    return UAS_GOOD;
}

static uas_status dec_invalid(uas_decoder *d, void *dst, const uas_type *t)
{
    (void)d;
    (void)dst;
    (void)t;
    return UAS_BAD_DECODING_ERROR;
}

static const dec_fn dec_table[UAS_KIND_STRUCT + 1] = {
    [0] = dec_invalid,
    [UAS_BUILTIN_BOOLEAN] = dec_boolean,
    [UAS_BUILTIN_SBYTE] = dec_fixed8,
    [UAS_BUILTIN_BYTE] = dec_fixed8,
    [UAS_BUILTIN_INT16] = dec_fixed16,
    [UAS_BUILTIN_UINT16] = dec_fixed16,
    [UAS_BUILTIN_INT32] = dec_fixed32,
    [UAS_BUILTIN_UINT32] = dec_fixed32,
    [UAS_BUILTIN_INT64] = dec_fixed64,
    [UAS_BUILTIN_UINT64] = dec_fixed64,
    [UAS_BUILTIN_FLOAT] = dec_fixed32,
    [UAS_BUILTIN_DOUBLE] = dec_fixed64,
    [UAS_BUILTIN_STRING] = dec_string,
    [UAS_BUILTIN_DATETIME] = dec_fixed64,
    [UAS_BUILTIN_GUID] = dec_guid,
    [UAS_BUILTIN_BYTESTRING] = dec_string,
    [UAS_BUILTIN_XMLELEMENT] = dec_string,
    [UAS_BUILTIN_NODEID] = dec_nodeid,
    [UAS_BUILTIN_EXPANDEDNODEID] = dec_expandednodeid,
    [UAS_BUILTIN_STATUSCODE] = dec_fixed32,
    [UAS_BUILTIN_QUALIFIEDNAME] = dec_qualifiedname,
    [UAS_BUILTIN_LOCALIZEDTEXT] = dec_localizedtext,
    [UAS_BUILTIN_EXTENSIONOBJECT] = dec_extensionobject,
    [UAS_BUILTIN_DATAVALUE] = dec_datavalue,
    [UAS_BUILTIN_VARIANT] = dec_variant,
    [UAS_BUILTIN_DIAGNOSTICINFO] = dec_diagnosticinfo,
    [UAS_KIND_ENUM] = dec_fixed32,
    [UAS_KIND_STRUCT] = dec_struct,
};

uas_status uas_decode(uas_decoder *d, void *dst, const uas_type *t)
{
    if (!t || t->kind > UAS_KIND_STRUCT)
        return UAS_BAD_DECODING_ERROR;
    if (d->limits->max_message_size && left(d) > d->limits->max_message_size)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    return dec_table[t->kind](d, dst, t);
}

uas_status uas_decode_binary(const void *buf, size_t len, void *dst, const uas_type *t,
                             uas_arena *arena, const uas_limits *limits, size_t *consumed)
{
    uas_decoder d;
    uas_decoder_init(&d, buf, len, arena, limits);
    uas_status st = uas_decode(&d, dst, t);
    if (consumed)
        *consumed = (size_t)(d.pos - (const uint8_t *)buf);
    return st;
}
