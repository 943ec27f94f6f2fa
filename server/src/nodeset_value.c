/* Values of NodeSet2 files in the XML encoding (Part 6, 5.3): builtin
 * types, ListOf arrays, Variants, and ExtensionObjects, either of a
 * namespace 0 structure (decoded into its generated C type through the
 * type descriptors) or of a DataType of the loaded files (encoded in
 * binary through the run-time type of its <Definition>, nodeset_types.c).
 *
 * Values are built in the load's arena, then deep-copied to the heap once
 * complete and checked against the node's DataType and ValueRank. */
#define _DEFAULT_SOURCE

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nodeset.h"

typedef struct vctx {
    ns_load *l;
    ns_file *f;
    uint32_t depth;
} vctx;

static uas_status bad(vctx *c, const ns_dom *d, const char *what)
{
    return ns_fail(c->l, c->f, d ? d->line : 0, UAS_BAD_TYPE_MISMATCH, "type mismatch: %s%s%s%s",
                   what, d ? " in <" : "", d ? d->name : "", d ? ">" : "");
}

/* Text without the surrounding whitespace, as a C string in the arena. */
static const char *trimmed(vctx *c, const ns_dom *d, size_t *len)
{
    const char *s = d && d->text ? d->text : "";
    size_t n = d && d->text ? d->text_len : 0;
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (len)
        *len = n;
    return ns_strdup(c->l, s, n);
}

static bool name_eq(const char *member, const char *elem)
{
    /* Descriptor names are snake_case, XML ones PascalCase. */
    for (;;) {
        while (*member == '_')
            member++;
        if (!*member || !*elem)
            return !*member && !*elem;
        if (tolower((unsigned char)*member) != tolower((unsigned char)*elem))
            return false;
        member++, elem++;
    }
}

static bool parse_datetime(const char *s, uas_datetime *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int y, mo, d, h = 0, mi = 0;
    double sec = 0;
    if (sscanf(s, "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) < 3)
        return false;
    if (y < 1601 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = (int)sec;
    time_t t = timegm(&tm);
    *out = (int64_t)t * 10000000LL + UAS_DATETIME_UNIX_EPOCH +
           (int64_t)((sec - (int)sec) * 10000000.0);
    return true;
}

static uas_status parse_content(vctx *c, const ns_dom *d, const uas_type *t, void *dst);

static uas_status parse_int(vctx *c, const ns_dom *d, const uas_type *t, void *dst)
{
    const char *s = trimmed(c, d, NULL);
    if (!s)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    char *end;
    errno = 0;
    bool sign = t->kind == UAS_BUILTIN_SBYTE || t->kind == UAS_BUILTIN_INT16 ||
                t->kind == UAS_BUILTIN_INT32 || t->kind == UAS_BUILTIN_INT64 ||
                t->kind == UAS_KIND_ENUM;
    long long sv = 0;
    unsigned long long uv = 0;
    if (t->kind == UAS_KIND_ENUM || t->kind == UAS_BUILTIN_INT32) {
        const char *us = strrchr(s, '_'); /* an enumeration: "Name_3" */
        if (us)
            s = us + 1;
    }
    if (sign)
        sv = strtoll(s, &end, 10);
    else
        uv = *s == '-' ? (errno = ERANGE, 0) : strtoull(s, &end, 10);
    if (errno || end == s || *end)
        return bad(c, d, "not an integer");
    switch (t->kind) {
    case UAS_BUILTIN_SBYTE:
        if (sv < INT8_MIN || sv > INT8_MAX)
            return bad(c, d, "out of range");
        *(int8_t *)dst = (int8_t)sv;
        break;
    case UAS_BUILTIN_BYTE:
        if (uv > UINT8_MAX)
            return bad(c, d, "out of range");
        *(uint8_t *)dst = (uint8_t)uv;
        break;
    case UAS_BUILTIN_INT16:
        if (sv < INT16_MIN || sv > INT16_MAX)
            return bad(c, d, "out of range");
        *(int16_t *)dst = (int16_t)sv;
        break;
    case UAS_BUILTIN_UINT16:
        if (uv > UINT16_MAX)
            return bad(c, d, "out of range");
        *(uint16_t *)dst = (uint16_t)uv;
        break;
    case UAS_BUILTIN_INT32:
    case UAS_KIND_ENUM:
        if (sv < INT32_MIN || sv > INT32_MAX)
            return bad(c, d, "out of range");
        *(int32_t *)dst = (int32_t)sv;
        break;
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_STATUSCODE:
        if (uv > UINT32_MAX)
            return bad(c, d, "out of range");
        *(uint32_t *)dst = (uint32_t)uv;
        break;
    case UAS_BUILTIN_INT64:
        *(int64_t *)dst = sv;
        break;
    default:
        *(uint64_t *)dst = uv;
        break;
    }
    return UAS_GOOD;
}

static uas_status arena_string(vctx *c, const char *s, size_t n, uas_string *out)
{
    out->length = n;
    out->data = (uint8_t *)ns_strdup(c->l, s, n);
    return out->data ? UAS_GOOD : ns_fail(c->l, c->f, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
}

static uas_status parse_nodeid_elem(vctx *c, const ns_dom *d, uas_nodeid *out)
{
    const ns_dom *idf = ns_dom_child(d, "Identifier");
    const char *s = trimmed(c, idf, NULL);
    if (!s)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    if (!*s) {
        memset(out, 0, sizeof(*out));
        return UAS_GOOD;
    }
    uas_nodeid heap;
    AS_TRY(ns_parse_nodeid(c->l, c->f, s, d->line, &heap));
    uas_status st = UAS_GOOD;
    *out = heap;
    if (heap.kind == UAS_NODEID_STRING || heap.kind == UAS_NODEID_BYTESTRING) {
        st = arena_string(c, (const char *)heap.id.string.data, heap.id.string.length,
                          &out->id.string);
    }
    uas_clear(&heap, UAS_TYPE(NODE_ID));
    return st;
}

/* The DataType an ExtensionObject's TypeId names: the type itself or one
 * of its encodings (the DataType's forward HasEncoding, written on either
 * node). */
static uas_nodeid datatype_of_encoding(vctx *c, const uas_nodeid *tid)
{
    ns_load *l = c->l;
    ns_item *it = ns_find_item(l, tid);
    if (it && it->n->node_class == UAS_NODE_CLASS_DATA_TYPE)
        return *tid;
    if (it) {
        for (size_t i = 0; i < it->ref_count; i++)
            if (!it->refs[i].forward && it->refs[i].type.ns == 0 &&
                it->refs[i].type.id.numeric == UAS_NS0ID_HASENCODING)
                return it->refs[i].target;
        /* Written on the DataType: search the staged DataTypes. */
        for (size_t fi = 0; fi < l->file_count; fi++)
            for (size_t k = 0; k < l->files[fi].item_count; k++) {
                ns_item *dt = &l->files[fi].items[k];
                if (dt->n->node_class != UAS_NODE_CLASS_DATA_TYPE)
                    continue;
                for (size_t r = 0; r < dt->ref_count; r++)
                    if (dt->refs[r].forward && dt->refs[r].type.ns == 0 &&
                        dt->refs[r].type.id.numeric == UAS_NS0ID_HASENCODING &&
                        as_nodeid_eq(&dt->refs[r].target, tid))
                        return dt->n->id;
            }
    }
    as_nv nv = as_lookup(l->as, tid);
    if (as_nv_class(&nv) == UAS_NODE_CLASS_DATA_TYPE)
        return *tid;
    size_t n = as_nv_found(&nv) ? as_nv_ref_count(&nv) : 0;
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(&nv, i, &r);
        if (!r.forward && r.type == UAS_NS0ID_HASENCODING)
            return r.target.nodeid;
    }
    return uas_nodeid_numeric(0, 0);
}

static uas_status parse_extobj(vctx *c, const ns_dom *d, uas_extensionobject *x)
{
    memset(x, 0, sizeof(*x));
    const ns_dom *tid = ns_dom_child(d, "TypeId"), *body = ns_dom_child(d, "Body");
    uas_nodeid id;
    if (!tid)
        return bad(c, d, "ExtensionObject without TypeId");
    AS_TRY(parse_nodeid_elem(c, tid, &id));
    if (!body || !body->child) {
        x->encoding = UAS_EXTOBJ_EMPTY;
        x->content.encoded.type_id = id;
        return UAS_GOOD;
    }
    uas_nodeid dt = datatype_of_encoding(c, &id);
    char b[64];
    if (dt.ns == 0 && dt.kind == UAS_NODEID_NUMERIC && dt.id.numeric) {
        const uas_type *t = uas_type_by_id(dt.id.numeric);
        if (!t || t->kind != UAS_KIND_STRUCT) {
            snprintf(b, sizeof(b), "no structure type for TypeId i=%u", (unsigned)id.id.numeric);
            return bad(c, d, b);
        }
        void *data = uas_arena_calloc(&c->l->arena, 1, t->size);
        if (!data)
            return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        AS_TRY(parse_content(c, body->child, t, data));
        x->encoding = UAS_EXTOBJ_DECODED;
        x->content.decoded.type = t;
        x->content.decoded.data = data;
        return UAS_GOOD;
    }
    if (as_nodeid_is_null(&dt))
        return bad(c, d, "ExtensionObject TypeId is no DataType or encoding of one");
    /* A structure of the loaded models: binary through its run-time type. */
    uas_bytestring bytes;
    AS_TRY(ns_encode_struct(c->l, c->f, &dt, body->child, &bytes, c->depth + 1));
    x->encoding = UAS_EXTOBJ_BYTESTRING;
    x->content.encoded.type_id = ns_binary_encoding(c->l, &dt);
    x->content.encoded.body.length = bytes.length;
    x->content.encoded.body.data =
        (uint8_t *)ns_strdup(c->l, (const char *)bytes.data, bytes.length);
    uas_clear(&bytes, UAS_TYPE(BYTE_STRING));
    if (!x->content.encoded.body.data)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    if (x->content.encoded.type_id.kind == UAS_NODEID_STRING ||
        x->content.encoded.type_id.kind == UAS_NODEID_BYTESTRING) {
        uas_nodeid h = x->content.encoded.type_id;
        AS_TRY(arena_string(c, (const char *)h.id.string.data, h.id.string.length,
                            &x->content.encoded.type_id.id.string));
    }
    return UAS_GOOD;
}

static uas_status parse_variant_elem(vctx *c, const ns_dom *d, uas_variant *v);

static uas_status parse_struct(vctx *c, const ns_dom *d, const uas_type *t, void *dst)
{
    if (++c->depth > c->l->limits.max_depth)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                       "value nested too deeply");
    for (const ns_dom *e = d->child; e; e = e->next) {
        const uas_member *m = NULL;
        for (uint16_t i = 0; i < t->member_count; i++)
            if (name_eq(uas_member_name(t, i), e->name))
                m = &t->members[i];
        if (!m) {
            char b[96];
            snprintf(b, sizeof(b), "%s has no field %s", t->name, e->name);
            return bad(c, e, b);
        }
        uint8_t *base = dst;
        if (!m->is_array) {
            AS_TRY(parse_content(c, e, uas_member_type(m), base + m->offset));
            continue;
        }
        size_t n = 0;
        for (const ns_dom *k = e->child; k; k = k->next)
            n++;
        void *arr =
            n ? uas_arena_calloc(&c->l->arena, n, uas_member_type(m)->size) : UAS_EMPTY_ARRAY;
        if (!arr)
            return ns_fail(c->l, c->f, e->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        size_t i = 0;
        for (const ns_dom *k = e->child; k; k = k->next, i++)
            AS_TRY(parse_content(c, k, uas_member_type(m),
                                 (uint8_t *)arr + i * uas_member_type(m)->size));
        *(size_t *)(base + m->offset) = n;
        *(void **)(base + m->array_offset) = arr;
    }
    c->depth--;
    return UAS_GOOD;
}

/* The value of type t that element d holds (its text or its children). */
static uas_status parse_content(vctx *c, const ns_dom *d, const uas_type *t, void *dst)
{
    size_t n;
    const char *s;
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        s = trimmed(c, d, NULL);
        if (s && (!strcmp(s, "true") || !strcmp(s, "1")))
            *(bool *)dst = true;
        else if (s && (!strcmp(s, "false") || !strcmp(s, "0")))
            *(bool *)dst = false;
        else
            return bad(c, d, "not a Boolean");
        return UAS_GOOD;
    case UAS_BUILTIN_SBYTE:
    case UAS_BUILTIN_BYTE:
    case UAS_BUILTIN_INT16:
    case UAS_BUILTIN_UINT16:
    case UAS_BUILTIN_INT32:
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_INT64:
    case UAS_BUILTIN_UINT64:
    case UAS_KIND_ENUM:
        return parse_int(c, d, t, dst);
    case UAS_BUILTIN_FLOAT:
    case UAS_BUILTIN_DOUBLE: {
        s = trimmed(c, d, NULL);
        double v;
        char *end = NULL;
        if (s && !strcmp(s, "INF"))
            v = INFINITY;
        else if (s && !strcmp(s, "-INF"))
            v = -INFINITY;
        else if (s && !strcmp(s, "NaN"))
            v = NAN;
        else if (!s || (v = strtod(s, &end), end == s || *end))
            return bad(c, d, "not a number");
        if (t->kind == UAS_BUILTIN_FLOAT)
            *(float *)dst = (float)v;
        else
            *(double *)dst = v;
        return UAS_GOOD;
    }
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_XMLELEMENT:
        return arena_string(c, d->text ? d->text : "", d->text ? d->text_len : 0, dst);
    case UAS_BUILTIN_DATETIME:
        s = trimmed(c, d, NULL);
        if (!s || !parse_datetime(s, dst))
            return bad(c, d, "not a DateTime");
        return UAS_GOOD;
    case UAS_BUILTIN_GUID: {
        const ns_dom *g = ns_dom_child(d, "String");
        s = trimmed(c, g ? g : d, &n);
        if (!s || !ns_parse_guid(s, n, dst))
            return bad(c, d, "not a Guid");
        return UAS_GOOD;
    }
    case UAS_BUILTIN_BYTESTRING: {
        uas_bytestring b;
        if (ns_base64(d->text ? d->text : "", d->text ? d->text_len : 0, &b) != UAS_GOOD)
            return bad(c, d, "not base64");
        uas_status st = arena_string(c, (const char *)b.data, b.length, dst);
        uas_clear(&b, UAS_TYPE(BYTE_STRING));
        return st;
    }
    case UAS_BUILTIN_NODEID:
        return parse_nodeid_elem(c, d, dst);
    case UAS_BUILTIN_EXPANDEDNODEID: {
        uas_expandednodeid *x = dst;
        memset(x, 0, sizeof(*x));
        return parse_nodeid_elem(c, d, &x->nodeid);
    }
    case UAS_BUILTIN_STATUSCODE: {
        const ns_dom *code = ns_dom_child(d, "Code");
        return code ? parse_int(c, code, t, dst) : (*(uint32_t *)dst = 0, UAS_GOOD);
    }
    case UAS_BUILTIN_QUALIFIEDNAME: {
        uas_qualifiedname *q = dst;
        const ns_dom *ni = ns_dom_child(d, "NamespaceIndex"), *nm = ns_dom_child(d, "Name");
        uint16_t fns = 0;
        if (ni)
            AS_TRY(parse_int(c, ni, UAS_TYPE(UINT16), &fns));
        if (fns >= c->f->ns_count)
            return bad(c, d, "NamespaceIndex not in NamespaceUris");
        q->ns = c->f->ns_map[fns];
        return nm ? arena_string(c, nm->text, nm->text_len, &q->name)
                  : (memset(&q->name, 0, sizeof(q->name)), UAS_GOOD);
    }
    case UAS_BUILTIN_LOCALIZEDTEXT: {
        uas_localizedtext *lt = dst;
        const ns_dom *lo = ns_dom_child(d, "Locale"), *tx = ns_dom_child(d, "Text");
        memset(lt, 0, sizeof(*lt));
        if (lo && lo->text_len)
            AS_TRY(arena_string(c, lo->text, lo->text_len, &lt->locale));
        if (tx)
            AS_TRY(arena_string(c, tx->text ? tx->text : "", tx->text_len, &lt->text));
        return UAS_GOOD;
    }
    case UAS_BUILTIN_EXTENSIONOBJECT:
        return parse_extobj(c, d, dst);
    case UAS_BUILTIN_VARIANT: {
        const ns_dom *v = ns_dom_child(d, "Value");
        memset(dst, 0, sizeof(uas_variant));
        return v && v->child ? parse_variant_elem(c, v->child, dst) : UAS_GOOD;
    }
    case UAS_KIND_STRUCT:
        return parse_struct(c, d, t, dst);
    default: {
        char b[64];
        snprintf(b, sizeof(b), "%s values are not supported in NodeSets", t->name);
        return bad(c, d, b);
    }
    }
}

/* A builtin type by its XML element name (Boolean ... Variant). */
static const uas_type *builtin_named(const char *name)
{
    const uas_type *t = uas_type_by_name(name);
    return t && t->kind >= UAS_BUILTIN_BOOLEAN && t->kind <= UAS_BUILTIN_DIAGNOSTICINFO ? t : NULL;
}

/* <Int32>5</Int32> or <ListOfInt32><Int32>..</Int32>...</ListOfInt32>. */
static uas_status parse_variant_elem(vctx *c, const ns_dom *d, uas_variant *v)
{
    memset(v, 0, sizeof(*v));
    bool list = !strncmp(d->name, "ListOf", 6);
    const uas_type *t = builtin_named(list ? d->name + 6 : d->name);
    if (!t)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_TYPE_MISMATCH,
                       "type mismatch: unknown value element <%s>", d->name);
    if (++c->depth > c->l->limits.max_depth)
        return ns_fail(c->l, c->f, d->line, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                       "value nested too deeply");
    if (!list) {
        void *p = uas_arena_calloc(&c->l->arena, 1, t->size);
        if (!p)
            return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        AS_TRY(parse_content(c, d, t, p));
        uas_variant_set_scalar(v, p, t);
    } else {
        size_t n = 0;
        for (const ns_dom *k = d->child; k; k = k->next)
            n++;
        void *arr = n ? uas_arena_calloc(&c->l->arena, n, t->size) : UAS_EMPTY_ARRAY;
        if (!arr)
            return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        size_t i = 0;
        for (const ns_dom *k = d->child; k; k = k->next, i++) {
            if (strcmp(k->name, t->name))
                return bad(c, k, "element of another type in a ListOf");
            AS_TRY(parse_content(c, k, t, (uint8_t *)arr + i * t->size));
        }
        uas_variant_set_array(v, arr, n, t);
    }
    /* ExtensionObjects of namespace 0 structures are held decoded, as a
     * Variant of the structure itself (how the codec expects them). */
    if (t->kind == UAS_BUILTIN_EXTENSIONOBJECT && v->data) {
        uas_extensionobject *x = v->data;
        size_t cnt = list ? v->array_length : 1;
        const uas_type *st = NULL;
        bool same = cnt > 0;
        for (size_t i = 0; i < cnt && same; i++) {
            if (x[i].encoding != UAS_EXTOBJ_DECODED || (st && st != x[i].content.decoded.type))
                same = false;
            else
                st = x[i].content.decoded.type;
        }
        if (same) {
            uint8_t *arr = uas_arena_calloc(&c->l->arena, cnt, st->size);
            if (!arr)
                return ns_fail(c->l, c->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            for (size_t i = 0; i < cnt; i++)
                memcpy(arr + i * st->size, x[i].content.decoded.data, st->size);
            if (list)
                uas_variant_set_array(v, arr, cnt, st);
            else
                uas_variant_set_scalar(v, arr, st);
        }
    }
    c->depth--;
    return UAS_GOOD;
}

uas_status ns_parse_xml_value(ns_load *l, ns_file *f, const ns_dom *d, const uas_type *t, void *dst,
                              uint32_t depth)
{
    vctx c = {l, f, depth};
    return parse_content(&c, d, t, dst);
}

uint32_t ns_ns0_base(ns_load *l, const uas_nodeid *dt)
{
    uas_nodeid t = *dt;
    for (size_t steps = 0; steps <= l->node_total + 64; steps++) {
        if (t.ns == 0 && t.kind == UAS_NODEID_NUMERIC && uas_ns0_find(t.id.numeric))
            return t.id.numeric;
        ns_item *it = ns_find_item(l, &t);
        if (!it)
            return as_ns0_ancestor(l->as, &t);
        if (!it->has_super)
            return 0;
        t = it->super;
    }
    return 0;
}

uas_status ns_build_value(ns_load *l, ns_item *it, uas_variant *out)
{
    vctx c = {l, it->file, 0};
    memset(out, 0, sizeof(*out));
    const ns_dom *v = it->value->child;
    if (!v)
        return UAS_GOOD; /* <Value/>: null */
    if (v->next)
        return ns_fail(l, it->file, v->next->line, UAS_BAD_TYPE_MISMATCH,
                       "type mismatch: more than one value element");
    uas_variant tmp;
    AS_TRY(parse_variant_elem(&c, v, &tmp));
    const as_var *var = as_var_of(it->n); /* only variables get a value */
    uint32_t base = ns_ns0_base(l, &var->data_type);
    uas_nodeid b = uas_nodeid_numeric(0, base ? base : UAS_NS0ID_BASEDATATYPE);
    if (!base || as_check_value(&b, var->value_rank, &tmp) != UAS_GOOD)
        return ns_fail(l, it->file, v->line, UAS_BAD_TYPE_MISMATCH,
                       "type mismatch: a <%s> value does not fit the node's DataType%s and "
                       "ValueRank %d",
                       v->name, base ? "" : " (which derives from no known type)",
                       (int)var->value_rank);
    if (uas_copy(&tmp, out, UAS_TYPE(VARIANT)) != UAS_GOOD)
        return ns_fail(l, it->file, v->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    return UAS_GOOD;
}
