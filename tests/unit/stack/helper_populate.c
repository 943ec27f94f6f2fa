/* Descriptor-driven generator of pseudo-random values (see helper_populate.h
 * for the rules that keep them losslessly encodable). */
#include "helper_populate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

uint64_t pop_rand(pop_ctx *c)
{
    /* splitmix64: tiny, good enough, and the same on every platform. */
    uint64_t z = (c->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t pop_below(pop_ctx *c, uint32_t n)
{
    return (uint32_t)(pop_rand(c) % n);
}

void pop_init(pop_ctx *c, uint64_t seed)
{
    c->state = seed * 0x2545F4914F6CDD1Dull + 1;
    c->depth = 0;
    c->max_depth = 3;
    c->struct_depth = 0;
    c->budget = 200;
    c->array_max = 3;
}

static void *pop_alloc(size_t n, size_t size)
{
    void *p = uas_calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "helper_populate: out of memory\n");
        abort();
    }
    return p;
}

/* ---- encodable structures ---- */

static uint16_t encodable[UAS_TYPES_COUNT];
static size_t encodable_count;

static void find_encodable(void)
{
    if (encodable_count)
        return;
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++)
        if (uas_types[i].kind == UAS_KIND_STRUCT && uas_types[i].binary_encoding_id != 0)
            encodable[encodable_count++] = (uint16_t)i;
}

size_t pop_encodable_struct_count(void)
{
    find_encodable();
    return encodable_count;
}

const uas_type *pop_encodable_struct(size_t i)
{
    find_encodable();
    return i < encodable_count ? &uas_types[encodable[i]] : NULL;
}

const uas_type *pop_random_struct(pop_ctx *c)
{
    find_encodable();
    return &uas_types[encodable[pop_below(c, (uint32_t)encodable_count)]];
}

/* ---- builtins ---- */

/* Random bits, or with probability 1/4 one of the edge values. */
static uint64_t pick(pop_ctx *c, const uint64_t *edges, size_t n)
{
    if (pop_below(c, 4) == 0)
        return edges[pop_below(c, (uint32_t)n)];
    return pop_rand(c);
}

/* Integers of any width and signedness: two's complement, the same bits. */
static void pop_int(pop_ctx *c, void *dst, unsigned bytes)
{
    static const uint64_t u_edges[] = {0, 1, UINT64_MAX, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000};
    uint64_t v = pick(c, u_edges, sizeof(u_edges) / sizeof(u_edges[0]));
    switch (bytes) {
    case 1: {
        uint8_t x = (uint8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(dst, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(dst, &x, 4);
        break;
    }
    default:
        memcpy(dst, &v, 8);
        break;
    }
}

static void pop_float(pop_ctx *c, float *dst)
{
    static const uint64_t edges[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u,
                                     0xFF800000u, 0x80000000u, 0x00000001u, 0x7F7FFFFFu};
    uint32_t bits = (uint32_t)pick(c, edges, sizeof(edges) / sizeof(edges[0]));
    memcpy(dst, &bits, 4);
}

static void pop_double(pop_ctx *c, double *dst)
{
    static const uint64_t edges[] = {
        0x7FF8000000000000ull, 0xFFF8000000000001ull, 0x7FF0000000000001ull, 0x7FF0000000000000ull,
        0xFFF0000000000000ull, 0x8000000000000000ull, 0x0000000000000001ull, 0x7FEFFFFFFFFFFFFFull};
    uint64_t bits = pick(c, edges, sizeof(edges) / sizeof(edges[0]));
    memcpy(dst, &bits, 8);
}

/* A string that is never null (for fields whose presence is a flag). */
static void pop_string_nonnull(pop_ctx *c, uas_string *s)
{
    size_t n = pop_below(c, 5) == 0 ? 0 : 1 + pop_below(c, 12);
    s->length = n;
    if (n == 0) {
        s->data = UAS_EMPTY_ARRAY;
        return;
    }
    s->data = pop_alloc(n, 1);
    bool text = pop_below(c, 2);
    for (size_t i = 0; i < n; i++)
        s->data[i] = text ? (uint8_t)('a' + pop_below(c, 26)) : (uint8_t)pop_rand(c);
}

/* Null with probability 1/6, otherwise as above. */
static void pop_string(pop_ctx *c, uas_string *s)
{
    if (pop_below(c, 6) == 0) {
        s->length = 0;
        s->data = NULL;
        return;
    }
    pop_string_nonnull(c, s);
}

static void pop_guid(pop_ctx *c, uas_guid *g)
{
    uint64_t a = pop_rand(c), b = pop_rand(c);
    g->data1 = (uint32_t)a;
    g->data2 = (uint16_t)(a >> 32);
    g->data3 = (uint16_t)(a >> 48);
    memcpy(g->data4, &b, 8);
}

static void pop_nodeid(pop_ctx *c, uas_nodeid *id)
{
    static const uint64_t ns_edges[] = {0, 0, 1, 255, 256, 65535};
    static const uint64_t id_edges[] = {0, 255, 256, 65535, 65536, UINT32_MAX};
    memset(id, 0, sizeof(*id));
    id->ns = (uint16_t)pick(c, ns_edges, sizeof(ns_edges) / sizeof(ns_edges[0]));
    switch (pop_below(c, 5)) {
    case 0:
    case 1:
        id->kind = UAS_NODEID_NUMERIC;
        id->id.numeric = (uint32_t)pick(c, id_edges, sizeof(id_edges) / sizeof(id_edges[0]));
        if (pop_below(c, 2))
            id->id.numeric &= 0x1FF; /* exercise the compact forms */
        break;
    case 2:
        id->kind = UAS_NODEID_STRING;
        pop_string(c, &id->id.string);
        break;
    case 3:
        id->kind = UAS_NODEID_GUID;
        pop_guid(c, &id->id.guid);
        break;
    default:
        id->kind = UAS_NODEID_BYTESTRING;
        pop_string(c, &id->id.bytestring);
        break;
    }
}

static void pop_expandednodeid(pop_ctx *c, uas_expandednodeid *x)
{
    pop_nodeid(c, &x->nodeid);
    x->namespace_uri.length = 0;
    x->namespace_uri.data = NULL;
    if (pop_below(c, 3) == 0)
        pop_string_nonnull(c, &x->namespace_uri);
    x->server_index = pop_below(c, 3) == 0 ? (uint32_t)pop_rand(c) : 0;
}

/* ---- containers ---- */

static void pop_variant(pop_ctx *c, uas_variant *v);

static void pop_extensionobject(pop_ctx *c, uas_extensionobject *x, bool allow_decoded)
{
    memset(x, 0, sizeof(*x));
    unsigned choice = pop_below(c, allow_decoded && c->depth < c->max_depth ? 5 : 3);
    switch (choice) {
    case 0:
        x->encoding = UAS_EXTOBJ_EMPTY;
        pop_nodeid(c, &x->content.encoded.type_id);
        break;
    case 1:
        x->encoding = UAS_EXTOBJ_BYTESTRING;
        pop_nodeid(c, &x->content.encoded.type_id);
        /* Never a known encoding id: those would come back decoded. */
        if (x->content.encoded.type_id.ns == 0)
            x->content.encoded.type_id.ns = (uint16_t)(1 + pop_below(c, 300));
        pop_string(c, &x->content.encoded.body);
        break;
    case 2:
        x->encoding = UAS_EXTOBJ_XML;
        pop_nodeid(c, &x->content.encoded.type_id);
        pop_string(c, &x->content.encoded.body);
        break;
    default: {
        const uas_type *t = pop_random_struct(c);
        x->encoding = UAS_EXTOBJ_DECODED;
        x->content.decoded.type = t;
        x->content.decoded.data = pop_alloc(1, t->size);
        c->depth++;
        pop_value(c, x->content.decoded.data, t);
        c->depth--;
        break;
    }
    }
}

/* Element count of an array: null, empty or 1..array_max (1 when nested
 * deep), within the element budget. Returns SIZE_MAX for null. */
static size_t pop_count(pop_ctx *c, bool allow_null_or_empty)
{
    if (allow_null_or_empty) {
        unsigned r = pop_below(c, 8);
        if (r == 0)
            return SIZE_MAX;
        if (r == 1)
            return 0;
    }
    size_t max = c->struct_depth < 2 && c->depth < 2 ? c->array_max : 1;
    size_t n = 1 + pop_below(c, (uint32_t)max);
    if (n > c->budget) {
        n = c->budget;
        if (n == 0 && !allow_null_or_empty)
            n = 1; /* the caller needs an element; the budget is soft */
    }
    c->budget -= n <= c->budget ? n : c->budget;
    return n;
}

/* One element of a Variant: as pop_value, but ExtensionObjects stay encoded. */
static void pop_variant_elem(pop_ctx *c, void *dst, const uas_type *t)
{
    if (t->kind == UAS_BUILTIN_EXTENSIONOBJECT)
        pop_extensionobject(c, dst, false);
    else
        pop_value(c, dst, t);
}

static void pop_variant(pop_ctx *c, uas_variant *v)
{
    memset(v, 0, sizeof(*v));
    if (pop_below(c, 8) == 0)
        return; /* empty */
    const uas_type *t;
    bool deep = c->depth >= c->max_depth;
    if (!deep && pop_below(c, 4) == 0) {
        t = pop_random_struct(c);
    } else {
        do {
            t = &uas_types[pop_below(c, 25)];
            /* Flat at the depth limit: no containers. */
        } while (deep &&
                 (t->kind == UAS_BUILTIN_VARIANT || t->kind == UAS_BUILTIN_DATAVALUE ||
                  t->kind == UAS_BUILTIN_DIAGNOSTICINFO || t->kind == UAS_BUILTIN_EXTENSIONOBJECT));
    }
    bool is_array = pop_below(c, 3) == 0 || t->kind == UAS_BUILTIN_VARIANT;
    v->type = t;
    c->depth++;
    if (!is_array) {
        v->data = pop_alloc(1, t->size);
        pop_variant_elem(c, v->data, t);
    } else {
        v->is_array = true;
        size_t n = pop_count(c, t->kind != UAS_KIND_STRUCT);
        if (n == SIZE_MAX) {
            v->data = NULL;
            n = 0;
        } else if (n == 0) {
            v->data = UAS_EMPTY_ARRAY;
        } else {
            v->data = pop_alloc(n, t->size);
            for (size_t i = 0; i < n; i++)
                pop_variant_elem(c, (uint8_t *)v->data + i * t->size, t);
        }
        v->array_length = n;
        if (v->data && pop_below(c, 4) == 0) {
            /* Dimensions that multiply to the length: [n], [1, n] or [n, 1]. */
            unsigned shape = pop_below(c, 3);
            v->array_dimensions_length = shape == 0 ? 1 : 2;
            v->array_dimensions = pop_alloc(v->array_dimensions_length, sizeof(uint32_t));
            v->array_dimensions[0] = shape == 1 ? 1 : (uint32_t)n;
            if (shape)
                v->array_dimensions[1] = shape == 1 ? (uint32_t)n : 1;
        }
    }
    c->depth--;
}

static void pop_datavalue(pop_ctx *c, uas_datavalue *d)
{
    memset(d, 0, sizeof(*d));
    unsigned mask = pop_below(c, 64);
    d->has_value = mask & 1;
    d->has_status = mask & 2;
    d->has_source_timestamp = mask & 4;
    d->has_server_timestamp = mask & 8;
    d->has_source_picoseconds = mask & 16;
    d->has_server_picoseconds = mask & 32;
    if (d->has_value)
        pop_variant(c, &d->value);
    if (d->has_status)
        d->status = (uint32_t)pop_rand(c);
    if (d->has_source_timestamp)
        d->source_timestamp = (int64_t)pop_rand(c);
    if (d->has_server_timestamp)
        d->server_timestamp = (int64_t)pop_rand(c);
    if (d->has_source_picoseconds)
        d->source_picoseconds = (uint16_t)pop_rand(c);
    if (d->has_server_picoseconds)
        d->server_picoseconds = (uint16_t)pop_rand(c);
}

static void pop_diagnosticinfo(pop_ctx *c, uas_diagnosticinfo *d)
{
    memset(d, 0, sizeof(*d));
    unsigned mask = pop_below(c, 64);
    d->has_symbolic_id = mask & 1;
    d->has_namespace_uri = mask & 2;
    d->has_localized_text = mask & 4;
    d->has_locale = mask & 8;
    d->has_additional_info = mask & 16;
    d->has_inner_status = mask & 32;
    if (d->has_symbolic_id)
        d->symbolic_id = (int32_t)pop_rand(c);
    if (d->has_namespace_uri)
        d->namespace_uri = (int32_t)pop_rand(c);
    if (d->has_localized_text)
        d->localized_text = (int32_t)pop_rand(c);
    if (d->has_locale)
        d->locale = (int32_t)pop_rand(c);
    if (d->has_additional_info)
        pop_string(c, &d->additional_info);
    if (d->has_inner_status)
        d->inner_status = (uint32_t)pop_rand(c);
    if (c->depth < c->max_depth && pop_below(c, 3) == 0) {
        d->has_inner_diagnostic_info = true;
        d->inner_diagnostic_info = pop_alloc(1, sizeof(uas_diagnosticinfo));
        c->depth++;
        pop_diagnosticinfo(c, d->inner_diagnostic_info);
        c->depth--;
    }
}

static void pop_struct(pop_ctx *c, uint8_t *base, const uas_type *t)
{
    memset(base, 0, t->size);
    c->struct_depth++;
    for (uint16_t i = 0; i < t->member_count; i++) {
        const uas_member *m = &t->members[i];
        if (!m->is_array) {
            pop_value(c, base + m->offset, uas_member_type(m));
            continue;
        }
        size_t n = pop_count(c, true);
        void *elems;
        if (n == SIZE_MAX) {
            elems = NULL;
            n = 0;
        } else if (n == 0) {
            elems = UAS_EMPTY_ARRAY;
        } else {
            elems = pop_alloc(n, uas_member_type(m)->size);
            for (size_t k = 0; k < n; k++)
                pop_value(c, (uint8_t *)elems + k * uas_member_type(m)->size, uas_member_type(m));
        }
        memcpy(base + m->offset, &n, sizeof(n));
        memcpy(base + m->array_offset, &elems, sizeof(elems));
    }
    c->struct_depth--;
}

void pop_value(pop_ctx *c, void *dst, const uas_type *t)
{
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        *(bool *)dst = pop_below(c, 2);
        break;
    case UAS_BUILTIN_SBYTE:
    case UAS_BUILTIN_BYTE:
        pop_int(c, dst, 1);
        break;
    case UAS_BUILTIN_INT16:
    case UAS_BUILTIN_UINT16:
        pop_int(c, dst, 2);
        break;
    case UAS_BUILTIN_INT32:
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_STATUSCODE:
    case UAS_KIND_ENUM:
        pop_int(c, dst, 4);
        break;
    case UAS_BUILTIN_INT64:
    case UAS_BUILTIN_UINT64:
    case UAS_BUILTIN_DATETIME:
        pop_int(c, dst, 8);
        break;
    case UAS_BUILTIN_FLOAT:
        pop_float(c, dst);
        break;
    case UAS_BUILTIN_DOUBLE:
        pop_double(c, dst);
        break;
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_XMLELEMENT:
        pop_string(c, dst);
        break;
    case UAS_BUILTIN_GUID:
        pop_guid(c, dst);
        break;
    case UAS_BUILTIN_NODEID:
        pop_nodeid(c, dst);
        break;
    case UAS_BUILTIN_EXPANDEDNODEID:
        pop_expandednodeid(c, dst);
        break;
    case UAS_BUILTIN_QUALIFIEDNAME: {
        uas_qualifiedname *q = dst;
        q->ns = (uint16_t)pop_rand(c);
        pop_string(c, &q->name);
        break;
    }
    case UAS_BUILTIN_LOCALIZEDTEXT: {
        uas_localizedtext *l = dst;
        pop_string(c, &l->locale);
        pop_string(c, &l->text);
        break;
    }
    case UAS_BUILTIN_EXTENSIONOBJECT:
        pop_extensionobject(c, dst, true);
        break;
    case UAS_BUILTIN_DATAVALUE:
        pop_datavalue(c, dst);
        break;
    case UAS_BUILTIN_VARIANT:
        pop_variant(c, dst);
        break;
    case UAS_BUILTIN_DIAGNOSTICINFO:
        pop_diagnosticinfo(c, dst);
        break;
    case UAS_KIND_STRUCT:
        pop_struct(c, dst, t);
        break;
    default:
        fprintf(stderr, "helper_populate: type %s has unknown kind %u\n", t->name, t->kind);
        abort();
    }
}

uint64_t pop_value_sized(void *dst, const uas_type *t, uint64_t seed, unsigned array_max,
                         size_t min_size)
{
    for (uint64_t s = seed;; s++) {
        pop_ctx c;
        pop_init(&c, s);
        c.array_max = array_max;
        c.budget = 100 * (size_t)array_max;
        pop_value(&c, dst, t);
        size_t n = uas_encoded_size(dst, t);
        if ((n != SIZE_MAX && n >= min_size) || s - seed >= 1000)
            return s;
        uas_clear(dst, t);
    }
}
