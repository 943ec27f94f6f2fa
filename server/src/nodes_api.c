/* The embedding API of the address space (server.h): adding objects,
 * variables, methods and references, attaching data sources.
 *
 * Attribute structures follow AddNodes: a field is taken when its bit is
 * set in specified_attributes. A program that leaves specified_attributes
 * at 0 gets every non-zero field taken and defaults for the others
 * (DisplayName = BrowseName, AccessLevel CurrentRead, DataType and
 * ValueRank from the value, Executable true), so a zero-initialised
 * structure with just a value set does the expected thing.
 *
 * A node is built completely (attributes and its own references) before it
 * is linked, all under the write lock, and a failure unlinks it again, so
 * readers never see half a node. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"

#define SPEC(a, mask, nonzero)                                                                     \
    (((a)->specified_attributes & UAS_NODE_ATTRIBUTES_MASK_##mask) ||                              \
     ((a)->specified_attributes == 0 && (nonzero)))

static bool text_set(const uas_localizedtext *t)
{
    return t->text.data != NULL;
}

/* ---- checks shared by the add functions (write lock held) ---- */

static uas_status check_new_id(uas_aspace *as, const uas_nodeid *id)
{
    if (!id || as_nodeid_is_null(id) || !as_ns_known(as, id->ns))
        return UAS_BAD_NODE_ID_INVALID;
    as_nv nv = as_lookup(as, id);
    return as_nv_found(&nv) ? UAS_BAD_NODE_ID_EXISTS : UAS_GOOD;
}

static bool ns0_flag(const uas_nodeid *id, uint8_t flag)
{
    const uas_ns0_node *s =
        id->ns == 0 && id->kind == UAS_NODEID_NUMERIC ? uas_ns0_find(id->id.numeric) : NULL;
    return s && (s->flags & flag);
}

/* A concrete ReferenceType, hierarchical when it links a child. */
static bool reftype_usable(uas_aspace *as, const uas_nodeid *rt, bool hierarchical)
{
    if (!rt || !as_is_reftype(as, rt) || ns0_flag(rt, UAS_NS0_ABSTRACT))
        return false;
    return !hierarchical || as_reftype_sub(as, rt->id.numeric, UAS_NS0ID_HIERARCHICALREFERENCES);
}

uas_status as_check_common(uas_aspace *as, const uas_nodeid *id, const uas_nodeid *parent,
                           const uas_nodeid *reftype, const uas_qualifiedname *bn, as_nv *pnv)
{
    AS_TRY(check_new_id(as, id));
    *pnv = parent ? as_lookup(as, parent) : (as_nv){NULL, NULL};
    if (!as_nv_found(pnv))
        return UAS_BAD_PARENT_NODE_ID_INVALID;
    if (!reftype_usable(as, reftype, true))
        return UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    if (!bn || !bn->name.data || bn->name.length == 0)
        return UAS_BAD_BROWSE_NAME_INVALID;
    return UAS_GOOD;
}

/* The type definition (default if null) must be a concrete type of cls. */
static uas_status check_type(uas_aspace *as, const uas_nodeid *td, uint32_t dflt, uint8_t cls,
                             uas_nodeid *out)
{
    *out = td && !as_nodeid_is_null(td) ? *td : uas_nodeid_numeric(0, dflt);
    as_nv t = as_lookup(as, out);
    if (as_nv_class(&t) != cls || ns0_flag(out, UAS_NS0_ABSTRACT) || (!t.s && t.d->is_abstract))
        return UAS_BAD_TYPE_DEFINITION_INVALID;
    return UAS_GOOD;
}

/* ---- building nodes ---- */

as_node *as_node_new(const uas_nodeid *id, uint8_t cls, const uas_qualifiedname *bn,
                     const uas_localizedtext *dn, const uas_localizedtext *desc)
{
    as_node *n = as_node_alloc(cls);
    if (!n)
        return NULL;
    bool ok = uas_copy(id, &n->id, UAS_TYPE(NODE_ID)) == UAS_GOOD &&
              uas_copy(bn, &n->browse_name, UAS_TYPE(QUALIFIED_NAME)) == UAS_GOOD;
    if (ok && dn && text_set(dn))
        ok = as_node_set_text(&n->display_name, dn) == UAS_GOOD;
    if (ok)
        as_node_share_dn(n);
    if (ok && desc)
        ok = as_node_set_text(&n->description, desc) == UAS_GOOD;
    if (!ok) {
        as_node_free(NULL, n); /* not published */
        return NULL;
    }
    return n;
}

static uas_expandednodeid exp_of(const uas_nodeid *id)
{
    uas_expandednodeid x;
    memset(&x, 0, sizeof(x));
    x.nodeid = *id;
    return x;
}

/* The node's own references: inverse to the parent, HasTypeDefinition. */
static uas_status own_refs(uas_aspace *as, as_node *n, const uas_nodeid *parent,
                           const uas_nodeid *reftype, const uas_nodeid *td)
{
    as_nv nv = {NULL, n};
    uas_expandednodeid p = exp_of(parent);
    AS_TRY(as_add_ref(as, &nv, reftype->id.numeric, &p, false));
    if (td) {
        uas_expandednodeid t = exp_of(td);
        AS_TRY(as_add_ref(as, &nv, UAS_NS0ID_HASTYPEDEFINITION, &t, true));
    }
    return UAS_GOOD;
}

static void drop_last_ref(as_node *d)
{
    d->ref_count--;
    as_ref_clear(&d->refs[d->ref_count]);
}

/* Insert n and the forward reference parent -> n; undone on failure. */
static uas_status link_node(uas_aspace *as, as_node *n, as_nv *pnv, const uas_nodeid *reftype)
{
    AS_TRY(as_insert(as, n));
    uas_expandednodeid c = exp_of(&n->id);
    uas_status st = as_add_ref(as, pnv, reftype->id.numeric, &c, true);
    if (st != UAS_GOOD)
        as_unlink(as, n);
    return st;
}

uas_status as_add_built(uas_aspace *as, as_node *n, as_nv *pnv, const uas_nodeid *parent,
                        const uas_nodeid *reftype, const uas_nodeid *td)
{
    uas_status st = own_refs(as, n, parent, reftype, td);
    if (st == UAS_GOOD)
        st = link_node(as, n, pnv, reftype);
    if (st != UAS_GOOD)
        as_node_free(as, n);
    return st;
}

/* ---- objects ---- */

uas_status uas_server_add_object(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                 const uas_nodeid *reference_type,
                                 const uas_qualifiedname *browse_name,
                                 const uas_nodeid *type_definition,
                                 const uas_object_attributes *attr)
{
    uas_aspace *as = s->as;
    uas_object_attributes none;
    memset(&none, 0, sizeof(none));
    const uas_object_attributes *a = attr ? attr : &none;
    as_wrlock(as);
    as_nv pnv;
    uas_nodeid td;
    uas_status st = as_check_common(as, id, parent, reference_type, browse_name, &pnv);
    if (st == UAS_GOOD)
        st = check_type(as, type_definition, UAS_NS0ID_BASEOBJECTTYPE, UAS_NODE_CLASS_OBJECT_TYPE,
                        &td);
    if (st == UAS_GOOD) {
        as_node *n =
            as_node_new(id, UAS_NODE_CLASS_OBJECT, browse_name,
                        SPEC(a, DISPLAY_NAME, text_set(&a->display_name)) ? &a->display_name : NULL,
                        SPEC(a, DESCRIPTION, text_set(&a->description)) ? &a->description : NULL);
        if (!n) {
            st = UAS_BAD_OUT_OF_MEMORY;
        } else {
            if (SPEC(a, EVENT_NOTIFIER, a->event_notifier))
                n->event_notifier = a->event_notifier;
            if (SPEC(a, WRITE_MASK, a->write_mask))
                n->write_mask = a->write_mask;
            n->user_write_mask =
                SPEC(a, USER_WRITE_MASK, a->user_write_mask) ? a->user_write_mask : UINT32_MAX;
            st = as_add_built(as, n, &pnv, parent, reference_type, &td);
        }
    }
    as_unlock(as);
    return st;
}

/* ---- variables ---- */

/* The DataType a value implies when the program gives none. */
static uas_nodeid type_of_value(const uas_variant *v)
{
    if (!v->type)
        return uas_nodeid_numeric(0, UAS_NS0ID_BASEDATATYPE);
    if (v->type->kind == UAS_BUILTIN_EXTENSIONOBJECT)
        return uas_nodeid_numeric(0, UAS_NS0ID_STRUCTURE);
    if (v->type->kind == UAS_BUILTIN_VARIANT)
        return uas_nodeid_numeric(0, UAS_NS0ID_BASEDATATYPE);
    return uas_nodeid_numeric(0, v->type->type_id);
}

static int32_t rank_of_value(const uas_variant *v)
{
    if (!v->type)
        return -2; /* Any */
    if (!v->is_array)
        return -1;
    return v->array_dimensions ? (int32_t)v->array_dimensions_length : 1;
}

/* Fill the variable attributes of n from a (DataType checked). */
uas_status as_variable_attrs(uas_aspace *as, as_node *n, const uas_variable_attributes *a)
{
    as_var *x = as_var_of(n);
    bool has_value = SPEC(a, VALUE, a->value.type != NULL);
    uas_variant empty;
    memset(&empty, 0, sizeof(empty));
    const uas_variant *v = has_value ? &a->value : &empty;
    uas_nodeid dt =
        SPEC(a, DATA_TYPE, !as_nodeid_is_null(&a->data_type)) ? a->data_type : type_of_value(v);
    as_nv dtn = as_lookup(as, &dt);
    if (as_nv_class(&dtn) != UAS_NODE_CLASS_DATA_TYPE)
        return UAS_BAD_TYPE_MISMATCH;
    /* Loaded models' DataTypes may have string ids: a copy of its own. */
    AS_TRY(uas_copy(&dt, &x->data_type, UAS_TYPE(NODE_ID)));
    x->value_rank = SPEC(a, VALUE_RANK, a->value_rank != 0) ? a->value_rank : rank_of_value(v);
    if (has_value)
        AS_TRY(as_check_value_any(as, &x->data_type, x->value_rank, v));
    if (SPEC(a, ARRAY_DIMENSIONS, a->array_dimensions_count > 0) && a->array_dimensions_count) {
        x->array_dims = uas_calloc(a->array_dimensions_count, sizeof(uint32_t));
        if (!x->array_dims)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(x->array_dims, a->array_dimensions, a->array_dimensions_count * sizeof(uint32_t));
        x->array_dims_count = (uint32_t)a->array_dimensions_count;
    }
    x->access_level = SPEC(a, ACCESS_LEVEL, a->access_level) ? a->access_level
                                                             : UAS_ACCESS_LEVEL_TYPE_CURRENT_READ;
    x->user_access_level =
        SPEC(a, USER_ACCESS_LEVEL, a->user_access_level) ? a->user_access_level : 0xFF;
    if (SPEC(a, MINIMUM_SAMPLING_INTERVAL, a->minimum_sampling_interval != 0))
        x->min_sampling = a->minimum_sampling_interval;
    if (SPEC(a, HISTORIZING, a->historizing))
        x->historizing = a->historizing;
    if (SPEC(a, WRITE_MASK, a->write_mask))
        n->write_mask = a->write_mask;
    n->user_write_mask =
        SPEC(a, USER_WRITE_MASK, a->user_write_mask) ? a->user_write_mask : UINT32_MAX;
    uas_datetime now = uas_datetime_now();
    if (has_value) {
        uas_variant copy;
        AS_TRY(uas_copy(v, &copy, UAS_TYPE(VARIANT)));
        AS_TRY(as_init_value(n, &copy, now)); /* n is not in the map yet */
    }
    return UAS_GOOD;
}

uas_status uas_server_add_variable(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                   const uas_nodeid *reference_type,
                                   const uas_qualifiedname *browse_name,
                                   const uas_nodeid *type_definition,
                                   const uas_variable_attributes *attr)
{
    uas_aspace *as = s->as;
    uas_variable_attributes none;
    memset(&none, 0, sizeof(none));
    const uas_variable_attributes *a = attr ? attr : &none;
    as_wrlock(as);
    as_nv pnv;
    uas_nodeid td;
    uas_status st = as_check_common(as, id, parent, reference_type, browse_name, &pnv);
    if (st == UAS_GOOD)
        st = check_type(as, type_definition, UAS_NS0ID_BASEDATAVARIABLETYPE,
                        UAS_NODE_CLASS_VARIABLE_TYPE, &td);
    if (st == UAS_GOOD) {
        as_node *n =
            as_node_new(id, UAS_NODE_CLASS_VARIABLE, browse_name,
                        SPEC(a, DISPLAY_NAME, text_set(&a->display_name)) ? &a->display_name : NULL,
                        SPEC(a, DESCRIPTION, text_set(&a->description)) ? &a->description : NULL);
        if (!n)
            st = UAS_BAD_OUT_OF_MEMORY;
        else if ((st = as_variable_attrs(as, n, a)) != UAS_GOOD)
            as_node_free(as, n);
        else
            st = as_add_built(as, n, &pnv, parent, reference_type, &td);
    }
    as_unlock(as);
    return st;
}

/* ---- methods ---- */

/* A free numeric id in namespace ns for a generated node. */
static uas_nodeid auto_id(uas_aspace *as, uint16_t ns)
{
    for (;;) {
        uas_nodeid id = uas_nodeid_numeric(ns, as->next_auto_id++);
        if (as->next_auto_id == 0)
            as->next_auto_id = 0xF0000000u;
        as_nv nv = as_lookup(as, &id);
        if (!as_nv_found(&nv))
            return id;
    }
}

/* The InputArguments / OutputArguments property of a method, unlinked. */
static uas_status arg_property(uas_aspace *as, as_node *m, const char *name, size_t count,
                               const uas_argument *args, as_node **out)
{
    *out = NULL;
    for (size_t i = 0; i < count; i++) {
        as_nv t = as_lookup(as, &args[i].data_type);
        if (as_nv_class(&t) != UAS_NODE_CLASS_DATA_TYPE)
            return UAS_BAD_INVALID_ARGUMENT;
    }
    uas_nodeid id = auto_id(as, m->id.ns);
    uas_qualifiedname bn = {0, uas_string_from(name)};
    as_node *p = as_node_new(&id, UAS_NODE_CLASS_VARIABLE, &bn, NULL, NULL);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    as_var *pv = as_var_of(p);
    pv->data_type = uas_nodeid_numeric(0, UAS_NS0ID_ARGUMENT);
    pv->value_rank = 1;
    pv->access_level = pv->user_access_level = UAS_ACCESS_LEVEL_TYPE_CURRENT_READ;
    pv->array_dims = uas_calloc(1, sizeof(uint32_t));
    uas_variant v;
    uas_variant_set_array(&v, (void *)(uintptr_t)args, count, UAS_TYPE(ARGUMENT));
    uas_nodeid pt = uas_nodeid_numeric(0, UAS_NS0ID_PROPERTYTYPE);
    uas_nodeid hp = uas_nodeid_numeric(0, UAS_NS0ID_HASPROPERTY);
    uas_status st = pv->array_dims ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
    if (st == UAS_GOOD) {
        pv->array_dims[0] = (uint32_t)count;
        pv->array_dims_count = 1;
        uas_variant copy;
        st = uas_copy(&v, &copy, UAS_TYPE(VARIANT));
        if (st == UAS_GOOD)
            st = as_init_value(p, &copy, uas_datetime_now());
    }
    if (st == UAS_GOOD) {
        st = own_refs(as, p, &m->id, &hp, &pt);
    }
    if (st == UAS_GOOD) {
        as_nv mnv = {NULL, m};
        uas_expandednodeid x = exp_of(&p->id);
        st = as_add_ref(as, &mnv, UAS_NS0ID_HASPROPERTY, &x, true);
    }
    if (st != UAS_GOOD) {
        as_node_free(as, p);
        return st;
    }
    *out = p;
    return UAS_GOOD;
}

uas_status uas_server_add_method(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                 const uas_nodeid *reference_type,
                                 const uas_qualifiedname *browse_name,
                                 const uas_method_attributes *attr, size_t in_count,
                                 const uas_argument *in, size_t out_count, const uas_argument *out,
                                 uas_method_fn fn, void *ud)
{
    uas_aspace *as = s->as;
    uas_method_attributes none;
    memset(&none, 0, sizeof(none));
    const uas_method_attributes *a = attr ? attr : &none;
    as_wrlock(as);
    as_nv pnv;
    as_node *m = NULL, *pin = NULL, *pout = NULL;
    uas_status st = as_check_common(as, id, parent, reference_type, browse_name, &pnv);
    if (st == UAS_GOOD && ((in_count && !in) || (out_count && !out)))
        st = UAS_BAD_INVALID_ARGUMENT;
    if (st == UAS_GOOD) {
        m = as_node_new(id, UAS_NODE_CLASS_METHOD, browse_name,
                        SPEC(a, DISPLAY_NAME, text_set(&a->display_name)) ? &a->display_name : NULL,
                        SPEC(a, DESCRIPTION, text_set(&a->description)) ? &a->description : NULL);
        if (!m)
            st = UAS_BAD_OUT_OF_MEMORY;
    }
    if (st == UAS_GOOD) {
        /* Executable unless the program says otherwise explicitly. */
        as_meth *mp = as_meth_of(m);
        mp->executable =
            (a->specified_attributes & UAS_NODE_ATTRIBUTES_MASK_EXECUTABLE) ? a->executable : true;
        mp->user_executable = (a->specified_attributes & UAS_NODE_ATTRIBUTES_MASK_USER_EXECUTABLE)
                                  ? a->user_executable
                                  : true;
        if (SPEC(a, WRITE_MASK, a->write_mask))
            m->write_mask = a->write_mask;
        m->user_write_mask = UINT32_MAX;
        mp->method = fn;
        mp->method_ud = ud;
        st = own_refs(as, m, parent, reference_type, NULL);
    }
    if (st == UAS_GOOD && in_count)
        st = arg_property(as, m, "InputArguments", in_count, in, &pin);
    if (st == UAS_GOOD && out_count)
        st = arg_property(as, m, "OutputArguments", out_count, out, &pout);
    /* Link the properties first: nobody can reach them before the method. */
    bool in_linked = false, out_linked = false;
    if (st == UAS_GOOD && pin && (st = as_insert(as, pin)) == UAS_GOOD)
        in_linked = true;
    if (st == UAS_GOOD && pout && (st = as_insert(as, pout)) == UAS_GOOD)
        out_linked = true;
    if (st == UAS_GOOD)
        st = link_node(as, m, &pnv, reference_type);
    if (st != UAS_GOOD) {
        if (in_linked)
            as_unlink(as, pin);
        if (out_linked)
            as_unlink(as, pout);
        as_node_free(as, pin);
        as_node_free(as, pout);
        as_node_free(as, m);
    }
    as_unlock(as);
    return st;
}

/* ---- references and data sources ---- */

uas_status uas_server_add_reference(uas_server *s, const uas_nodeid *source,
                                    const uas_nodeid *reference_type,
                                    const uas_expandednodeid *target, bool forward)
{
    uas_aspace *as = s->as;
    if (!source || !target)
        return UAS_BAD_INVALID_ARGUMENT;
    as_wrlock(as);
    as_nv src = as_lookup(as, source);
    bool local = target->server_index == 0 && !target->namespace_uri.data;
    as_nv dst = local ? as_lookup(as, &target->nodeid) : (as_nv){NULL, NULL};
    uas_status st = UAS_GOOD;
    if (!as_nv_found(&src))
        st = UAS_BAD_SOURCE_NODE_ID_INVALID;
    else if (!reftype_usable(as, reference_type, false))
        st = UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    else if (local && !as_nv_found(&dst))
        st = UAS_BAD_TARGET_NODE_ID_INVALID;
    else if (as_has_ref(&src, reference_type->id.numeric, target, forward))
        st = UAS_BAD_DUPLICATE_REFERENCE_NOT_ALLOWED;
    if (st == UAS_GOOD)
        st = as_add_ref(as, &src, reference_type->id.numeric, target, forward);
    if (st == UAS_GOOD && local) {
        uas_expandednodeid back = exp_of(source);
        if (!as_has_ref(&dst, reference_type->id.numeric, &back, !forward))
            st = as_add_ref(as, &dst, reference_type->id.numeric, &back, !forward);
        if (st != UAS_GOOD)
            drop_last_ref(src.d);
    }
    as_unlock(as);
    return st;
}

uas_status uas_server_set_data_source(uas_server *s, const uas_nodeid *id, uas_read_fn read,
                                      uas_write_fn write, void *ud)
{
    uas_aspace *as = s->as;
    as_wrlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    if (!as_nv_found(&nv))
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if (as_nv_class(&nv) != UAS_NODE_CLASS_VARIABLE)
        st = UAS_BAD_NODE_CLASS_INVALID;
    else {
        as_node *d = as_overlay(as, &nv);
        as_dsrc *ds = NULL;
        if (d && (read || write) && (ds = uas_calloc(1, sizeof(*ds))) == NULL)
            d = NULL;
        if (!d) {
            st = UAS_BAD_OUT_OF_MEMORY;
        } else {
            if (ds) {
                ds->read = read;
                ds->write = write;
                ds->ud = ud;
            }
            /* One store: a lock-free Read sees the old callbacks or the new. */
            as_dsrc *old = atomic_exchange(&as_var_of(d)->dsrc, ds);
            if (old)
                as_rcu_retire(&as->rcu, &old->rcu, as_dsrc_free_rcu);
        }
    }
    as_unlock(as);
    return st;
}
