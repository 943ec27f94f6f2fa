/* AddNodes of type and view nodes (Part 4, 5.7.2; the node classes of
 * Part 3, 5.5-5.8): ObjectType, VariableType, DataType and ReferenceType,
 * each below its supertype by HasSubtype (or a subtype of it), and View,
 * below any node by a hierarchical reference.
 *
 * A type node has no TypeDefinition (svc_nodemgmt.c refuses one), its
 * supertype is a node of its own class, and its BrowseName is unique among
 * the nodes the parent reaches by hierarchical references. A
 * ReferenceType is registered with its supertype in the uint32 reference
 * type space (aspace_dyn.c), so references of it can be added and browsed
 * at once. A DataType may carry its DataTypeDefinition (GenericAttributes,
 * attribute 23, since DataTypeAttributes has no field for it); it is
 * checked like a NodeSet's <Definition> and then checks and decodes the
 * values of Variables of the type (as_rt_check), as a loaded model's
 * does. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"

#define SPEC(a, mask, nonzero)                                                                     \
    (((a)->specified_attributes & UAS_NODE_ATTRIBUTES_MASK_##mask) ||                              \
     ((a)->specified_attributes == 0 && (nonzero)))

static bool name_eq(const uas_string *a, const uas_string *b)
{
    size_t na = a->data ? a->length : 0, nb = b->data ? b->length : 0;
    return na == nb && (na == 0 || memcmp(a->data, b->data, na) == 0);
}

static bool has_name(const uas_string *s)
{
    return s->data && s->length > 0;
}

bool as_child_named(uas_aspace *as, const as_nv *parent, const uas_qualifiedname *bn)
{
    size_t n = as_nv_ref_count(parent);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(parent, i, &r);
        if (!r.forward || r.target.server_index || r.target.namespace_uri.data ||
            !as_reftype_sub(as, r.type, UAS_NS0ID_HIERARCHICALREFERENCES))
            continue;
        as_nv t = as_lookup(as, &r.target.nodeid);
        if (!as_nv_found(&t))
            continue;
        uas_qualifiedname q = as_nv_browse_name(&t);
        if (q.ns == bn->ns && name_eq(&q.name, &bn->name))
            return true;
    }
    return false;
}

/* The parts every attribute structure shares. */
typedef struct base_attrs {
    uint32_t spec;
    const uas_localizedtext *dn, *desc;
    uint32_t write_mask, user_write_mask;
} base_attrs;

#define BASE_OF(a)                                                                                 \
    (base_attrs)                                                                                   \
    {                                                                                              \
        (a)->specified_attributes, &(a)->display_name, &(a)->description, (a)->write_mask,         \
            (a)->user_write_mask                                                                   \
    }

/* ---- DataTypeDefinition ---- */

static uas_status check_struct(uas_aspace *as, const uas_nodeid *id, const uas_nodeid *parent,
                               const uas_structure_definition *sd)
{
    if (sd->structure_type > UAS_STRUCTURE_TYPE_UNION)
        return UAS_BAD_NODE_ATTRIBUTES_INVALID; /* subtyped values: not decoded */
    if (as_nodeid_is_null(&sd->default_encoding_id))
        return UAS_BAD_NODE_ATTRIBUTES_INVALID; /* values could never match it */
    if (!as_nodeid_is_null(&sd->base_data_type) && !as_nodeid_eq(&sd->base_data_type, parent))
        return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    size_t optional = 0;
    for (size_t i = 0; i < sd->fields_count; i++) {
        const uas_structure_field *f = &sd->fields[i];
        if (!has_name(&f->name) || (f->value_rank < 1 && f->value_rank != -1))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        if (f->is_optional &&
            (sd->structure_type != UAS_STRUCTURE_TYPE_STRUCTURE_WITH_OPTIONAL_FIELDS ||
             ++optional > 32))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        /* A mandatory scalar of the type itself would nest without end. */
        if (as_nodeid_eq(&f->data_type, id)) {
            if (sd->structure_type == UAS_STRUCTURE_TYPE_STRUCTURE && f->value_rank == -1)
                return UAS_BAD_NODE_ATTRIBUTES_INVALID;
            continue;
        }
        as_nv t = as_lookup(as, &f->data_type);
        if (as_nv_class(&t) != UAS_NODE_CLASS_DATA_TYPE)
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    }
    return UAS_GOOD;
}

/* The DataTypeDefinition value v of a new DataType below parent into
 * n's type attributes: a StructureDefinition for a subtype of Structure,
 * an EnumDefinition for one of Enumeration. */
static uas_status take_definition(uas_aspace *as, as_node *n, const uas_nodeid *parent,
                                  const uas_variant *v)
{
    const uas_type *t = v->type;
    const void *data = v->data;
    if (v->is_array || !data)
        return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    if (t == UAS_TYPE(EXTENSION_OBJECT)) {
        const uas_extensionobject *x = data;
        if (x->encoding != UAS_EXTOBJ_DECODED)
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        t = x->content.decoded.type;
        data = x->content.decoded.data;
    }
    uint32_t base = as_ns0_ancestor(as, parent);
    if (t == UAS_TYPE(STRUCTURE_DEFINITION)) {
        if (!base || !as_ns0_is_subtype(base, UAS_NS0ID_STRUCTURE))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        AS_TRY(check_struct(as, &n->id, parent, data));
    } else if (t == UAS_TYPE(ENUM_DEFINITION)) {
        const uas_enum_definition *ed = data;
        if (!base || !as_ns0_is_subtype(base, UAS_NS0ID_ENUMERATION))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        for (size_t i = 0; i < ed->fields_count; i++)
            if (!has_name(&ed->fields[i].name))
                return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    } else {
        return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    }
    as_typex *tx = as_node_typex(n);
    if (!tx)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_variant tmp;
    uas_variant_set_scalar(&tmp, (void *)(uintptr_t)data, t);
    AS_TRY(uas_copy(&tmp, &tx->definition, UAS_TYPE(VARIANT)));
    if (t == UAS_TYPE(STRUCTURE_DEFINITION)) {
        uas_structure_definition *sd = tx->definition.data;
        if (as_nodeid_is_null(&sd->base_data_type))
            AS_TRY(uas_copy(parent, &sd->base_data_type, UAS_TYPE(NODE_ID)));
    }
    return UAS_GOOD;
}

/* ---- attributes per class ---- */

static uas_status data_type_attrs(uas_aspace *as, as_node *n, const uas_nodeid *parent,
                                  const uas_type *at, const void *a)
{
    if (at == UAS_TYPE(DATA_TYPE_ATTRIBUTES)) {
        const uas_data_type_attributes *d = a;
        n->is_abstract = SPEC(d, IS_ABSTRACT, d->is_abstract) && d->is_abstract;
        return UAS_GOOD;
    }
    const uas_generic_attributes *g = a;
    for (size_t i = 0; i < g->attribute_values_count; i++) {
        const uas_generic_attribute_value *v = &g->attribute_values[i];
        if (v->attribute_id == AS_ATTR_IS_ABSTRACT && v->value.type == UAS_TYPE(BOOLEAN) &&
            !v->value.is_array && v->value.data)
            n->is_abstract = *(const bool *)v->value.data;
        else if (v->attribute_id == AS_ATTR_DATA_TYPE_DEFINITION && !as_definition(n)->type)
            AS_TRY(take_definition(as, n, parent, &v->value));
        else
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    }
    return UAS_GOOD;
}

static uas_status variable_type_attrs(uas_aspace *as, as_node *n,
                                      const uas_variable_type_attributes *t)
{
    /* The attributes a VariableType shares with a Variable, with the same
     * bits in specified_attributes. */
    uas_variable_attributes va;
    memset(&va, 0, sizeof(va));
    va.specified_attributes =
        t->specified_attributes &
        (UAS_NODE_ATTRIBUTES_MASK_VALUE | UAS_NODE_ATTRIBUTES_MASK_DATA_TYPE |
         UAS_NODE_ATTRIBUTES_MASK_VALUE_RANK | UAS_NODE_ATTRIBUTES_MASK_ARRAY_DIMENSIONS);
    /* Keep "some attributes specified" when none of these is (AccessLevel
     * is no attribute of a VariableType). */
    if (t->specified_attributes && !va.specified_attributes)
        va.specified_attributes = UAS_NODE_ATTRIBUTES_MASK_ACCESS_LEVEL;
    va.value = t->value;
    va.data_type = t->data_type;
    va.value_rank = t->value_rank;
    va.array_dimensions_count = t->array_dimensions_count;
    va.array_dimensions = t->array_dimensions;
    AS_TRY(as_variable_attrs(as, n, &va));
    n->is_abstract = SPEC(t, IS_ABSTRACT, t->is_abstract) && t->is_abstract;
    return UAS_GOOD;
}

/* Class-specific attributes of n (its base ones are set). */
static uas_status class_attrs(uas_aspace *as, as_node *n, const uas_nodeid *parent,
                              const uas_type *at, const void *a)
{
    static const uas_variable_type_attributes no_vt;
    if (!a && n->node_class != UAS_NODE_CLASS_VARIABLE_TYPE)
        return UAS_GOOD;
    switch (n->node_class) {
    case UAS_NODE_CLASS_OBJECT_TYPE: {
        const uas_object_type_attributes *o = a;
        n->is_abstract = SPEC(o, IS_ABSTRACT, o->is_abstract) && o->is_abstract;
        return UAS_GOOD;
    }
    case UAS_NODE_CLASS_VARIABLE_TYPE: /* defaults: BaseDataType, any rank */
        return variable_type_attrs(as, n, a ? a : &no_vt);
    case UAS_NODE_CLASS_DATA_TYPE:
        return data_type_attrs(as, n, parent, at, a);
    case UAS_NODE_CLASS_REFERENCE_TYPE: {
        const uas_reference_type_attributes *r = a;
        n->is_abstract = SPEC(r, IS_ABSTRACT, r->is_abstract) && r->is_abstract;
        n->symmetric = SPEC(r, SYMMETRIC, r->symmetric) && r->symmetric;
        if (SPEC(r, INVERSE_NAME, r->inverse_name.text.data) && r->inverse_name.text.data) {
            as_typex *tx = as_node_typex(n);
            if (!tx)
                return UAS_BAD_OUT_OF_MEMORY;
            AS_TRY(uas_copy(&r->inverse_name, &tx->inverse_name, UAS_TYPE(LOCALIZED_TEXT)));
        }
        return UAS_GOOD;
    }
    default: { /* View */
        const uas_view_attributes *v = a;
        n->contains_no_loops =
            SPEC(v, CONTAINS_NO_LOOPS, v->contains_no_loops) && v->contains_no_loops;
        if (SPEC(v, EVENT_NOTIFIER, v->event_notifier))
            n->event_notifier = v->event_notifier;
        return UAS_GOOD;
    }
    }
}

static const uas_type *attrs_type(uint8_t cls)
{
    switch (cls) {
    case UAS_NODE_CLASS_OBJECT_TYPE:
        return UAS_TYPE(OBJECT_TYPE_ATTRIBUTES);
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        return UAS_TYPE(VARIABLE_TYPE_ATTRIBUTES);
    case UAS_NODE_CLASS_DATA_TYPE:
        return UAS_TYPE(DATA_TYPE_ATTRIBUTES);
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        return UAS_TYPE(REFERENCE_TYPE_ATTRIBUTES);
    case UAS_NODE_CLASS_VIEW:
        return UAS_TYPE(VIEW_ATTRIBUTES);
    default:
        return NULL;
    }
}

static base_attrs base_of(const uas_type *at, const void *a)
{
    base_attrs none = {0, NULL, NULL, 0, 0};
    if (!a)
        return none;
    if (at == UAS_TYPE(OBJECT_TYPE_ATTRIBUTES))
        return BASE_OF((const uas_object_type_attributes *)a);
    if (at == UAS_TYPE(VARIABLE_TYPE_ATTRIBUTES))
        return BASE_OF((const uas_variable_type_attributes *)a);
    if (at == UAS_TYPE(DATA_TYPE_ATTRIBUTES))
        return BASE_OF((const uas_data_type_attributes *)a);
    if (at == UAS_TYPE(REFERENCE_TYPE_ATTRIBUTES))
        return BASE_OF((const uas_reference_type_attributes *)a);
    if (at == UAS_TYPE(VIEW_ATTRIBUTES))
        return BASE_OF((const uas_view_attributes *)a);
    return BASE_OF((const uas_generic_attributes *)a);
}

#define BASE_SPEC(b, mask, nonzero)                                                                \
    (((b)->spec & UAS_NODE_ATTRIBUTES_MASK_##mask) || ((b)->spec == 0 && (nonzero)))

/* The supertype checks: a HasSubtype (or subtype) from a node of the same
 * class; for a ReferenceType also its uint32 id (*super). */
static uas_status check_super(uas_aspace *as, uint8_t cls, const as_nv *pnv,
                              const uas_nodeid *parent, const uas_nodeid *reftype, uint32_t *super)
{
    if (cls == UAS_NODE_CLASS_VIEW)
        return UAS_GOOD;
    if (!as_reftype_sub(as, reftype->id.numeric, UAS_NS0ID_HASSUBTYPE))
        return UAS_BAD_REFERENCE_NOT_ALLOWED;
    if (as_nv_class(pnv) != cls)
        return UAS_BAD_PARENT_NODE_ID_INVALID;
    if (cls == UAS_NODE_CLASS_REFERENCE_TYPE && !as_reftype_id(as, parent, super))
        return UAS_BAD_PARENT_NODE_ID_INVALID;
    return UAS_GOOD;
}

/* Register a new ReferenceType; one deleted before keeps its uint32 id
 * (references of it may remain) with the new supertype. */
static uas_status register_reftype(uas_aspace *as, const uas_nodeid *id, uint32_t super,
                                   bool *added)
{
    uint32_t old;
    *added = false;
    if (as_reftype_id(as, id, &old) && old >= AS_DYN_REFTYPE) {
        as->dyn_reftype_super[old - AS_DYN_REFTYPE] = super;
        return UAS_GOOD;
    }
    uint32_t out;
    AS_TRY(as_dyn_reftype_add(as, id, super, &out));
    *added = true;
    return UAS_GOOD;
}

uas_status as_add_type_node(uas_aspace *as, uint8_t cls, const uas_nodeid *id,
                            const uas_nodeid *parent, const uas_nodeid *reftype,
                            const uas_qualifiedname *bn, const uas_extensionobject *attrs)
{
    const uas_type *want = attrs_type(cls);
    if (!want)
        return UAS_BAD_NODE_CLASS_INVALID;
    const uas_type *at = attrs->encoding == UAS_EXTOBJ_DECODED ? attrs->content.decoded.type : NULL;
    const void *a = at ? attrs->content.decoded.data : NULL;
    if ((attrs->encoding != UAS_EXTOBJ_EMPTY && !at) ||
        (at && at != want &&
         !(cls == UAS_NODE_CLASS_DATA_TYPE && at == UAS_TYPE(GENERIC_ATTRIBUTES))))
        return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    /* Namespace 0 is the OPC Foundation's (and a ReferenceType there
     * would collide with the static uint32 reference type ids). */
    if (id->ns == 0)
        return UAS_BAD_NODE_ID_REJECTED;
    base_attrs b = base_of(at, a);
    as_wrlock(as);
    as_nv pnv;
    uint32_t super = 0;
    size_t reftypes_before = as->dyn_reftype_count;
    uas_status st = as_check_common(as, id, parent, reftype, bn, &pnv);
    if (st == UAS_GOOD)
        st = check_super(as, cls, &pnv, parent, reftype, &super);
    if (st == UAS_GOOD && as_child_named(as, &pnv, bn))
        st = UAS_BAD_BROWSE_NAME_DUPLICATED;
    as_node *n = NULL;
    if (st == UAS_GOOD) {
        n = as_node_new(id, cls, bn,
                        b.dn && BASE_SPEC(&b, DISPLAY_NAME, b.dn->text.data) ? b.dn : NULL,
                        b.desc && BASE_SPEC(&b, DESCRIPTION, b.desc->text.data) ? b.desc : NULL);
        if (!n)
            st = UAS_BAD_OUT_OF_MEMORY;
    }
    if (st == UAS_GOOD) {
        st = class_attrs(as, n, parent, at, a);
        n->write_mask = BASE_SPEC(&b, WRITE_MASK, b.write_mask) ? b.write_mask : 0;
        n->user_write_mask =
            BASE_SPEC(&b, USER_WRITE_MASK, b.user_write_mask) ? b.user_write_mask : UINT32_MAX;
        if (st != UAS_GOOD) {
            as_node_free(as, n);
            n = NULL;
        }
    }
    bool registered = false;
    if (st == UAS_GOOD && cls == UAS_NODE_CLASS_REFERENCE_TYPE &&
        (st = register_reftype(as, id, super, &registered)) != UAS_GOOD)
        as_node_free(as, n);
    if (st == UAS_GOOD && (st = as_add_built(as, n, &pnv, parent, reftype, NULL)) != UAS_GOOD &&
        registered)
        as_dyn_reftype_truncate(as, reftypes_before);
    as_unlock(as);
    return st;
}
