/* Run-time data types of loaded models: each DataType's <Definition>
 * becomes its DataTypeDefinition (a StructureDefinition or EnumDefinition,
 * attribute 23), which is also the run-time type descriptor: the field
 * list, optional fields and union switch drive the binary encoding of the
 * model's structure values (Part 6, 5.2.7), and a client decodes them from
 * the same definition. Leaf fields of builtin and namespace 0 types go
 * through the stack's generic codec (uas_encode over the generated
 * descriptors); fields of the models' own types recurse. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "nodeset.h"

#define NS0_UNION 12756u

static const ns_dom *find_field(const ns_dom *body, const char *name)
{
    for (const ns_dom *e = body->child; e; e = e->next)
        if (!strcmp(e->name, name))
            return e;
    return NULL;
}

uas_nodeid ns_binary_encoding(ns_load *l, const uas_nodeid *dt)
{
    ns_item *it = ns_find_item(l, dt);
    if (it) {
        for (size_t r = 0; r < it->ref_count; r++) {
            ns_sref *ref = &it->refs[r];
            if (!ref->forward || ref->type.ns || ref->type.id.numeric != UAS_NS0ID_HASENCODING)
                continue;
            ns_item *enc = ns_find_item(l, &ref->target);
            if (enc && enc->n->browse_name.ns == 0 &&
                uas_string_eq_cstr(&enc->n->browse_name.name, "Default Binary"))
                return ref->target;
        }
        /* Written on the encoding node (inverse HasEncoding). */
        for (size_t fi = 0; fi < l->file_count; fi++)
            for (size_t k = 0; k < l->files[fi].item_count; k++) {
                ns_item *e = &l->files[fi].items[k];
                if (e->n->node_class != UAS_NODE_CLASS_OBJECT ||
                    !uas_string_eq_cstr(&e->n->browse_name.name, "Default Binary"))
                    continue;
                for (size_t r = 0; r < e->ref_count; r++)
                    if (!e->refs[r].forward && !e->refs[r].type.ns &&
                        e->refs[r].type.id.numeric == UAS_NS0ID_HASENCODING &&
                        as_nodeid_eq(&e->refs[r].target, dt))
                        return e->n->id;
            }
    }
    return uas_nodeid_numeric(0, 0);
}

/* ---- DataTypeDefinition ---- */

static uas_status copy_text(ns_load *l, const char *s, uas_string *out)
{
    out->length = s ? strlen(s) : 0;
    out->data = s ? (uint8_t *)ns_strdup(l, s, out->length) : NULL;
    return !s || out->data ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
}

static uas_status arena_id(ns_load *l, uas_nodeid *id)
{
    if (id->kind != UAS_NODEID_STRING && id->kind != UAS_NODEID_BYTESTRING)
        return UAS_GOOD;
    uas_string h = id->id.string;
    id->id.string.data = (uint8_t *)ns_strdup(l, (const char *)h.data, h.length);
    uas_clear(&h, UAS_TYPE(STRING));
    return id->id.string.data ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
}

uas_status ns_build_definition(ns_load *l, ns_item *it, uas_variant *out)
{
    const ns_dom *def = it->definition;
    ns_file *f = it->file;
    memset(out, 0, sizeof(*out));
    uint32_t base = ns_ns0_base(l, &it->n->id);
    bool is_enum = base == UAS_NS0ID_ENUMERATION;
    bool option_set =
        ns_dom_attr(def, "IsOptionSet") && !strcmp(ns_dom_attr(def, "IsOptionSet"), "true");
    bool is_union = ns_dom_attr(def, "IsUnion") && !strcmp(ns_dom_attr(def, "IsUnion"), "true");
    size_t n = 0;
    for (const ns_dom *fd = def->child; fd; fd = fd->next)
        n += !strcmp(fd->name, "Field");
    if (is_enum || (option_set && base != UAS_NS0ID_STRUCTURE)) {
        uas_enum_definition ed;
        memset(&ed, 0, sizeof(ed));
        ed.fields = n ? uas_arena_calloc(&l->arena, n, sizeof(uas_enum_field)) : UAS_EMPTY_ARRAY;
        if (!ed.fields)
            return ns_fail(l, f, def->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        size_t i = 0;
        for (const ns_dom *fd = def->child; fd; fd = fd->next) {
            if (strcmp(fd->name, "Field"))
                continue;
            uas_enum_field *ef = &ed.fields[i];
            const char *name = ns_dom_attr(fd, "Name"), *val = ns_dom_attr(fd, "Value");
            if (!name)
                return ns_fail(l, f, fd->line, UAS_BAD_DECODING_ERROR, "Field without Name");
            char *end;
            ef->value = val ? strtoll(val, &end, 10) : (option_set ? (int64_t)i : (int64_t)i);
            if (val && (end == val || *end))
                return ns_fail(l, f, fd->line, UAS_BAD_DECODING_ERROR, "Field '%s': bad Value '%s'",
                               name, val);
            if (copy_text(l, name, &ef->name) != UAS_GOOD ||
                copy_text(l, name, &ef->display_name.text) != UAS_GOOD)
                return ns_fail(l, f, fd->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            const ns_dom *desc = ns_dom_child(fd, "Description");
            if (desc && desc->text && copy_text(l, desc->text, &ef->description.text) != UAS_GOOD)
                return ns_fail(l, f, fd->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            i++;
        }
        ed.fields_count = n;
        uas_variant tmp;
        uas_variant_set_scalar(&tmp, &ed, UAS_TYPE(ENUM_DEFINITION));
        if (uas_copy(&tmp, out, UAS_TYPE(VARIANT)) != UAS_GOOD)
            return ns_fail(l, f, def->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        return UAS_GOOD;
    }
    if (base != UAS_NS0ID_STRUCTURE && base != NS0_UNION &&
        !as_ns0_is_subtype(base, UAS_NS0ID_STRUCTURE))
        return ns_fail(l, f, def->line, UAS_BAD_TYPE_DEFINITION_INVALID,
                       "<Definition> of a DataType that is neither a Structure nor an "
                       "Enumeration");
    uas_structure_definition sd;
    memset(&sd, 0, sizeof(sd));
    sd.fields = n ? uas_arena_calloc(&l->arena, n, sizeof(uas_structure_field)) : UAS_EMPTY_ARRAY;
    if (!sd.fields)
        return ns_fail(l, f, def->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    bool optional = false;
    size_t i = 0;
    for (const ns_dom *fd = def->child; fd; fd = fd->next) {
        if (strcmp(fd->name, "Field"))
            continue;
        uas_structure_field *sf = &sd.fields[i++];
        const char *name = ns_dom_attr(fd, "Name"), *dt = ns_dom_attr(fd, "DataType");
        const char *vr = ns_dom_attr(fd, "ValueRank"), *opt = ns_dom_attr(fd, "IsOptional");
        if (!name)
            return ns_fail(l, f, fd->line, UAS_BAD_DECODING_ERROR, "Field without Name");
        if (copy_text(l, name, &sf->name) != UAS_GOOD)
            return ns_fail(l, f, fd->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        if (dt) {
            AS_TRY(ns_resolve_nodeid(l, f, dt, fd->line, &sf->data_type));
            if (arena_id(l, &sf->data_type) != UAS_GOOD)
                return ns_fail(l, f, fd->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        } else {
            sf->data_type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATATYPE);
        }
        uint8_t cls = 0;
        ns_item *ti = ns_find_item(l, &sf->data_type);
        if (ti) {
            cls = ti->n->node_class;
        } else {
            as_nv nv = as_lookup(l->as, &sf->data_type);
            cls = as_nv_class(&nv);
        }
        if (cls != UAS_NODE_CLASS_DATA_TYPE)
            return ns_fail(l, f, fd->line, UAS_BAD_TYPE_MISMATCH,
                           "Field '%s': DataType '%s' is not a DataType", name, dt ? dt : "");
        sf->value_rank = vr ? (int32_t)strtol(vr, NULL, 10) : -1;
        sf->is_optional = opt && !strcmp(opt, "true");
        optional |= sf->is_optional;
        const ns_dom *desc = ns_dom_child(fd, "Description");
        if (desc && desc->text && copy_text(l, desc->text, &sf->description.text) != UAS_GOOD)
            return ns_fail(l, f, fd->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    }
    sd.fields_count = n;
    sd.structure_type = is_union   ? UAS_STRUCTURE_TYPE_UNION
                        : optional ? UAS_STRUCTURE_TYPE_STRUCTURE_WITH_OPTIONAL_FIELDS
                                   : UAS_STRUCTURE_TYPE_STRUCTURE;
    sd.base_data_type = it->has_super ? it->super : uas_nodeid_numeric(0, UAS_NS0ID_STRUCTURE);
    sd.default_encoding_id = ns_binary_encoding(l, &it->n->id);
    uas_variant tmp;
    uas_variant_set_scalar(&tmp, &sd, UAS_TYPE(STRUCTURE_DEFINITION));
    if (uas_copy(&tmp, out, UAS_TYPE(VARIANT)) != UAS_GOOD)
        return ns_fail(l, f, def->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    return UAS_GOOD;
}

/* ---- binary encoding of structure values ---- */

typedef struct enc {
    ns_load *l;
    ns_file *f;
    uint8_t *buf;
    size_t len, cap;
} enc;

static uas_status put(enc *e, const void *p, size_t n)
{
    if (e->len + n > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        while (cap < e->len + n)
            cap *= 2;
        if (cap > ((size_t)16 << 20))
            return ns_fail(e->l, e->f, 0, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                           "structure value larger than 16 MiB");
        uint8_t *g = uas_realloc(e->buf, e->cap, cap);
        if (!g)
            return ns_fail(e->l, e->f, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        e->buf = g;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, p, n);
    e->len += n;
    return UAS_GOOD;
}

static uas_status put_u32(enc *e, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return put(e, b, 4);
}

/* Through the generic codec: parse the XML into the generated C type, then
 * uas_encode it. */

static uas_status put_typed(enc *e, const ns_dom *d, const uas_type *t, uint32_t depth)
{
    void *v = uas_arena_calloc(&e->l->arena, 1, t->size);
    if (!v)
        return ns_fail(e->l, e->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    AS_TRY(ns_parse_xml_value(e->l, e->f, d, t, v, depth));
    size_t n = uas_encoded_size(v, t);
    if (n == SIZE_MAX)
        return ns_fail(e->l, e->f, d->line, UAS_BAD_ENCODING_ERROR, "cannot encode <%s>", d->name);
    uint8_t *tmp = uas_arena_alloc(&e->l->arena, n ? n : 1);
    size_t w;
    if (!tmp || uas_encode_binary(v, t, tmp, n, &w) != UAS_GOOD)
        return ns_fail(e->l, e->f, d->line, UAS_BAD_ENCODING_ERROR, "cannot encode <%s>", d->name);
    return put(e, tmp, w);
}

/* The generated type a namespace 0 DataType is encoded as: its own, or
 * the first ancestor's; BaseDataType and other abstract roots: Variant. */
static const uas_type *ns0_wire_type(uint32_t id)
{
    for (int depth = 0; depth < 64 && id; depth++) {
        if (id == UAS_NS0ID_BASEDATATYPE)
            return UAS_TYPE(VARIANT);
        if (id == UAS_NS0ID_STRUCTURE)
            return UAS_TYPE(EXTENSION_OBJECT);
        if (id == UAS_NS0ID_ENUMERATION)
            return UAS_TYPE(INT32);
        const uas_type *t = uas_type_by_id(id);
        if (t)
            return t;
        const uas_ns0_node *s = uas_ns0_find(id);
        uint32_t parent = 0;
        for (uint32_t i = 0; s && i < s->ref_count; i++) {
            const uas_ns0_ref *r = &uas_ns0_refs[s->refs + i];
            if (r->type == UAS_NS0ID_HASSUBTYPE && !r->forward)
                parent = r->target;
        }
        id = parent;
    }
    return NULL;
}

static uas_status put_struct(enc *e, const uas_nodeid *dt, const ns_dom *body, uint32_t depth);

static uas_status put_field_value(enc *e, const uas_nodeid *dt, const ns_dom *d, uint32_t depth)
{
    if (dt->ns == 0 && dt->kind == UAS_NODEID_NUMERIC) {
        const uas_type *t = ns0_wire_type(dt->id.numeric);
        if (!t)
            return ns_fail(e->l, e->f, d->line, UAS_BAD_TYPE_MISMATCH,
                           "type mismatch: no encoding for DataType i=%u",
                           (unsigned)dt->id.numeric);
        return put_typed(e, d, t, depth);
    }
    uint32_t base = ns_ns0_base(e->l, dt);
    if (base == UAS_NS0ID_ENUMERATION)
        return put_typed(e, d, UAS_TYPE(INT32), depth);
    if (base == UAS_NS0ID_STRUCTURE || base == NS0_UNION ||
        (base && as_ns0_is_subtype(base, UAS_NS0ID_STRUCTURE) && ns_find_item(e->l, dt)))
        return put_struct(e, dt, d, depth + 1);
    uas_nodeid b = uas_nodeid_numeric(0, base);
    return put_field_value(e, &b, d, depth);
}

static uas_status put_field(enc *e, const uas_structure_field *sf, const ns_dom *d, uint32_t depth)
{
    if (sf->value_rank < 0)
        return put_field_value(e, &sf->data_type, d, depth);
    /* Arrays: Int32 length then the elements (each a child element). */
    uint32_t n = 0;
    for (const ns_dom *k = d->child; k; k = k->next)
        n++;
    AS_TRY(put_u32(e, n));
    for (const ns_dom *k = d->child; k; k = k->next)
        AS_TRY(put_field_value(e, &sf->data_type, k, depth));
    return UAS_GOOD;
}

static uas_status put_struct(enc *e, const uas_nodeid *dt, const ns_dom *body, uint32_t depth)
{
    if (depth > e->l->limits.max_depth)
        return ns_fail(e->l, e->f, body->line, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                       "structure value nested too deeply");
    ns_item *it = ns_find_item(e->l, dt);
    const uas_variant *def = it ? as_definition(it->n) : NULL;
    if (!def || def->type != UAS_TYPE(STRUCTURE_DEFINITION))
        return ns_fail(e->l, e->f, body->line, UAS_BAD_TYPE_MISMATCH,
                       "type mismatch: <%s> is of a DataType without a structure <Definition>",
                       body->name);
    const uas_structure_definition *sd = def->data;
    for (const ns_dom *k = body->child; k; k = k->next) {
        bool known = !strcmp(k->name, "SwitchField") || !strcmp(k->name, "EncodingMask");
        for (size_t i = 0; i < sd->fields_count && !known; i++)
            known = uas_string_eq_cstr(&sd->fields[i].name, k->name);
        if (!known)
            return ns_fail(e->l, e->f, k->line, UAS_BAD_TYPE_MISMATCH,
                           "type mismatch: <%s> has no field %s", body->name, k->name);
    }
    char name[256];
    if (sd->structure_type == UAS_STRUCTURE_TYPE_UNION) {
        for (size_t i = 0; i < sd->fields_count; i++) {
            snprintf(name, sizeof(name), "%.*s", (int)sd->fields[i].name.length,
                     (const char *)sd->fields[i].name.data);
            const ns_dom *fd = find_field(body, name);
            if (fd) {
                AS_TRY(put_u32(e, (uint32_t)i + 1));
                return put_field(e, &sd->fields[i], fd, depth);
            }
        }
        return put_u32(e, 0); /* null union */
    }
    if (sd->structure_type == UAS_STRUCTURE_TYPE_STRUCTURE_WITH_OPTIONAL_FIELDS) {
        uint32_t mask = 0, bit = 0;
        for (size_t i = 0; i < sd->fields_count; i++) {
            if (!sd->fields[i].is_optional)
                continue;
            snprintf(name, sizeof(name), "%.*s", (int)sd->fields[i].name.length,
                     (const char *)sd->fields[i].name.data);
            if (find_field(body, name))
                mask |= 1u << bit;
            bit++;
        }
        AS_TRY(put_u32(e, mask));
    }
    for (size_t i = 0; i < sd->fields_count; i++) {
        const uas_structure_field *sf = &sd->fields[i];
        snprintf(name, sizeof(name), "%.*s", (int)sf->name.length, (const char *)sf->name.data);
        const ns_dom *fd = find_field(body, name);
        if (!fd && sf->is_optional)
            continue;
        if (!fd)
            return ns_fail(e->l, e->f, body->line, UAS_BAD_TYPE_MISMATCH,
                           "type mismatch: <%s> lacks field %s", body->name, name);
        AS_TRY(put_field(e, sf, fd, depth));
    }
    return UAS_GOOD;
}

uas_status ns_encode_struct(ns_load *l, ns_file *f, const uas_nodeid *data_type, const ns_dom *body,
                            uas_bytestring *out, uint32_t depth)
{
    enc e = {l, f, NULL, 0, 0};
    uas_status st = put_struct(&e, data_type, body, depth);
    if (st != UAS_GOOD) {
        uas_free(e.buf, e.cap);
        return st;
    }
    out->length = e.len;
    out->data = uas_malloc(e.len ? e.len : 1);
    if (!out->data) {
        uas_free(e.buf, e.cap);
        return ns_fail(l, f, body->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    }
    if (e.len)
        memcpy(out->data, e.buf, e.len);
    uas_free(e.buf, e.cap);
    /* uas_clear frees length bytes: keep the size it will be freed with. */
    if (!e.len) {
        uas_free(out->data, 1);
        out->data = UAS_EMPTY_ARRAY;
    }
    return UAS_GOOD;
}

/* ---- binary decoding of structure values (Write, Call arguments) ---- */

/* The wire type of a field's DataType for the decoder; NULL: a structure
 * or enumeration of a loaded model (*def set, or *is_enum). */
static const uas_type *rt_field_type(uas_aspace *as, const uas_nodeid *dt,
                                     const uas_structure_definition **def, bool *is_enum)
{
    *def = NULL;
    *is_enum = false;
    if (dt->ns == 0 && dt->kind == UAS_NODEID_NUMERIC)
        return ns0_wire_type(dt->id.numeric);
    as_nv nv = as_lookup(as, dt);
    if (nv.d && as_definition(nv.d)->type == UAS_TYPE(STRUCTURE_DEFINITION)) {
        *def = as_definition(nv.d)->data;
        return NULL;
    }
    uint32_t base = as_ns0_ancestor(as, dt);
    if (base == UAS_NS0ID_ENUMERATION) {
        *is_enum = true;
        return UAS_TYPE(INT32);
    }
    return base ? ns0_wire_type(base) : NULL;
}

static uas_status rt_decode(uas_aspace *as, uas_decoder *d, const uas_structure_definition *sd,
                            uint32_t depth);

static uas_status rt_field(uas_aspace *as, uas_decoder *d, const uas_structure_field *f,
                           uint32_t depth)
{
    const uas_structure_definition *def;
    bool is_enum;
    const uas_type *t = rt_field_type(as, &f->data_type, &def, &is_enum);
    if (!t && !def)
        return UAS_BAD_TYPE_MISMATCH;
    int32_t n = 1;
    if (f->value_rank >= 0) {
        AS_TRY(uas_decode(d, &n, UAS_TYPE(INT32)));
        if (n < -1 || (uint32_t)(n < 0 ? 0 : n) > d->limits->max_array_length)
            return UAS_BAD_DECODING_ERROR;
    }
    for (int32_t i = 0; i < n; i++) {
        if (def) {
            AS_TRY(rt_decode(as, d, def, depth + 1));
        } else {
            void *v = uas_arena_alloc(d->arena, t->size);
            if (!v)
                return UAS_BAD_OUT_OF_MEMORY;
            AS_TRY(uas_decode(d, v, t));
        }
    }
    return UAS_GOOD;
}

static uas_status rt_decode(uas_aspace *as, uas_decoder *d, const uas_structure_definition *sd,
                            uint32_t depth)
{
    if (depth > d->limits->max_depth)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    uint32_t v;
    if (sd->structure_type == UAS_STRUCTURE_TYPE_UNION) {
        AS_TRY(uas_decode(d, &v, UAS_TYPE(UINT32)));
        if (v == 0)
            return UAS_GOOD;
        if (v > sd->fields_count)
            return UAS_BAD_DECODING_ERROR;
        return rt_field(as, d, &sd->fields[v - 1], depth);
    }
    uint32_t mask = UINT32_MAX, bit = 0;
    if (sd->structure_type == UAS_STRUCTURE_TYPE_STRUCTURE_WITH_OPTIONAL_FIELDS)
        AS_TRY(uas_decode(d, &mask, UAS_TYPE(UINT32)));
    for (size_t i = 0; i < sd->fields_count; i++) {
        if (sd->fields[i].is_optional && !(mask & (1u << bit++)))
            continue;
        AS_TRY(rt_field(as, d, &sd->fields[i], depth));
    }
    return UAS_GOOD;
}

uas_status as_rt_check(uas_aspace *as, const uas_nodeid *data_type, const uas_extensionobject *x)
{
    as_nv nv = as_lookup(as, data_type);
    if (!nv.d || as_definition(nv.d)->type != UAS_TYPE(STRUCTURE_DEFINITION))
        return UAS_GOOD; /* not a structure of a loaded model */
    const uas_structure_definition *sd = as_definition(nv.d)->data;
    if (x->encoding != UAS_EXTOBJ_BYTESTRING ||
        !as_nodeid_eq(&x->content.encoded.type_id, &sd->default_encoding_id))
        return UAS_BAD_TYPE_MISMATCH;
    uint8_t first[4096];
    uas_arena a;
    uas_arena_init(&a, first, sizeof(first), (size_t)1 << 20);
    uas_decoder d;
    uas_decoder_init(&d, x->content.encoded.body.data, x->content.encoded.body.length, &a,
                     &uas_limits_default);
    uas_status st = rt_decode(as, &d, sd, 0);
    if (st == UAS_GOOD && d.pos != d.end)
        st = UAS_BAD_DECODING_ERROR; /* trailing bytes: not this type */
    uas_arena_free(&a);
    return uas_is_bad(st) ? UAS_BAD_TYPE_MISMATCH : UAS_GOOD;
}
