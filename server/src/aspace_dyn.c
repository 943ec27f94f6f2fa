/* The parts of the address space that NodeSets and NodeManagement add
 * beyond namespace 0's static rows: ReferenceTypes of other namespaces,
 * the type hierarchy through heap nodes, and deleted nodes.
 *
 * ReferenceTypes are identified by a uint32 everywhere references are
 * stored (as_ref.type, the static rows); those of other namespaces get ids
 * from AS_DYN_REFTYPE up, which no namespace 0 id reaches, so the closure
 * of the static ones stays a bit matrix and a dynamic one walks its
 * supertypes until it meets namespace 0. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"

bool as_reftype_id(const uas_aspace *as, const uas_nodeid *id, uint32_t *out)
{
    if (id->ns == 0 && id->kind == UAS_NODEID_NUMERIC) {
        /* Static ids, and the internal form of dynamic ones (a filter a
         * continuation point keeps). */
        uint32_t v = id->id.numeric;
        if (v >= AS_DYN_REFTYPE ? v - AS_DYN_REFTYPE < as->dyn_reftype_count
                                : as_is_reftype(as, id)) {
            *out = v;
            return true;
        }
        return false;
    }
    for (size_t i = 0; i < as->dyn_reftype_count; i++) {
        if (as_nodeid_eq(&as->dyn_reftypes[i], id)) {
            *out = AS_DYN_REFTYPE + (uint32_t)i;
            return true;
        }
    }
    return false;
}

uas_nodeid as_reftype_nodeid(const uas_aspace *as, uint32_t type)
{
    if (type >= AS_DYN_REFTYPE && type - AS_DYN_REFTYPE < as->dyn_reftype_count)
        return as->dyn_reftypes[type - AS_DYN_REFTYPE];
    return uas_nodeid_numeric(0, type);
}

uas_status as_dyn_reftype_add(uas_aspace *as, const uas_nodeid *id, uint32_t super, uint32_t *out)
{
    if (as->dyn_reftype_count == as->dyn_reftype_cap) {
        size_t cap = as->dyn_reftype_cap ? as->dyn_reftype_cap * 2 : 16;
        uas_nodeid *ids = uas_realloc(as->dyn_reftypes, as->dyn_reftype_cap * sizeof(uas_nodeid),
                                      cap * sizeof(uas_nodeid));
        if (!ids)
            return UAS_BAD_OUT_OF_MEMORY;
        as->dyn_reftypes = ids;
        uint32_t *sup = uas_realloc(as->dyn_reftype_super, as->dyn_reftype_cap * sizeof(uint32_t),
                                    cap * sizeof(uint32_t));
        if (!sup)
            return UAS_BAD_OUT_OF_MEMORY;
        as->dyn_reftype_super = sup;
        as->dyn_reftype_cap = cap;
    }
    AS_TRY(uas_copy(id, &as->dyn_reftypes[as->dyn_reftype_count], UAS_TYPE(NODE_ID)));
    as->dyn_reftype_super[as->dyn_reftype_count] = super;
    *out = AS_DYN_REFTYPE + (uint32_t)as->dyn_reftype_count++;
    return UAS_GOOD;
}

void as_dyn_reftype_truncate(uas_aspace *as, size_t count)
{
    while (as->dyn_reftype_count > count)
        uas_clear(&as->dyn_reftypes[--as->dyn_reftype_count], UAS_TYPE(NODE_ID));
}

void as_dyn_free(uas_aspace *as)
{
    as_dyn_reftype_truncate(as, 0);
    uas_free(as->dyn_reftypes, as->dyn_reftype_cap * sizeof(uas_nodeid));
    uas_free(as->dyn_reftype_super, as->dyn_reftype_cap * sizeof(uint32_t));
    as->dyn_reftype_cap = 0;
    for (size_t i = 0; i < as->dead_target_count; i++)
        uas_clear(&as->dead_targets[i], UAS_TYPE(EXPANDED_NODE_ID));
    uas_free(as->dead_targets, as->dead_target_cap * sizeof(uas_expandednodeid));
    while (as->graveyard) {
        as_node *n = as->graveyard;
        as->graveyard = n->graveyard_next;
        as_node_free(as, n);
    }
}

bool as_reftype_sub(const uas_aspace *as, uint32_t sub, uint32_t super)
{
    /* Supertype chains of dynamic types are short (a model rarely nests
     * more than a few); the bound stops a cycle a bad model sneaked in. */
    for (int depth = 0; depth < 64; depth++) {
        if (sub == super)
            return true;
        if (sub < AS_DYN_REFTYPE)
            return super < AS_DYN_REFTYPE && as_reftype_sub_static(as, sub, super);
        if (sub - AS_DYN_REFTYPE >= as->dyn_reftype_count)
            return false;
        sub = as->dyn_reftype_super[sub - AS_DYN_REFTYPE];
    }
    return false;
}

static bool supertype_of(uas_aspace *as, const as_nv *nv, uas_nodeid *out)
{
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (!r.forward && r.type == UAS_NS0ID_HASSUBTYPE) {
            *out = r.target.nodeid;
            return true;
        }
    }
    (void)as;
    return false;
}

uint32_t as_ns0_ancestor(uas_aspace *as, const uas_nodeid *type)
{
    uas_nodeid t = *type;
    for (int depth = 0; depth < 64; depth++) {
        if (t.ns == 0 && t.kind == UAS_NODEID_NUMERIC && uas_ns0_find(t.id.numeric))
            return t.id.numeric;
        as_nv nv = as_lookup(as, &t);
        if (!as_nv_found(&nv) || !supertype_of(as, &nv, &t))
            return 0;
    }
    return 0;
}

uas_status as_check_value_any(uas_aspace *as, const uas_nodeid *data_type, int32_t value_rank,
                              const uas_variant *v)
{
    if (data_type->ns == 0 && data_type->kind == UAS_NODEID_NUMERIC)
        return as_check_value(data_type, value_rank, v);
    uint32_t base = as_ns0_ancestor(as, data_type);
    if (!base)
        return UAS_BAD_TYPE_MISMATCH;
    uas_nodeid b = uas_nodeid_numeric(0, base);
    /* A structure of a loaded type travels as an ExtensionObject whose body
     * its run-time type decodes; an enumeration as Int32 (checked against
     * Enumeration). */
    AS_TRY(as_check_value(&b, value_rank, v));
    if (v->type == UAS_TYPE(EXTENSION_OBJECT) && v->data) {
        const uas_extensionobject *x = v->data;
        size_t n = v->is_array ? v->array_length : 1;
        for (size_t i = 0; i < n; i++)
            AS_TRY(as_rt_check(as, data_type, &x[i]));
    }
    return UAS_GOOD;
}

void as_bury(uas_aspace *as, as_node *n)
{
    as_unlink(as, n);
    n->deleted = true;
    n->graveyard_next = as->graveyard;
    as->graveyard = n;
}

uas_status as_remove_ref(uas_aspace *as, as_nv *nv, uint32_t type, const uas_expandednodeid *target,
                         bool forward, bool *found)
{
    *found = false;
    as_node *d = nv->d;
    if (!d)
        return UAS_GOOD;
    for (uint32_t i = 0; i < d->ref_count;) {
        as_ref *r = &d->refs[i];
        if (r->type == type && r->forward == forward && as_ref_to(r, &target->nodeid)) {
            /* A response built under the read lock may still point at the
             * strings of a boxed target: they move to a list freed with
             * the aspace (an inline target has none). */
            if (r->boxed) {
                if (as->dead_target_count == as->dead_target_cap) {
                    size_t cap = as->dead_target_cap ? as->dead_target_cap * 2 : 16;
                    uas_expandednodeid *g = uas_realloc(
                        as->dead_targets, as->dead_target_cap * sizeof(*g), cap * sizeof(*g));
                    if (!g)
                        return UAS_BAD_OUT_OF_MEMORY;
                    as->dead_targets = g;
                    as->dead_target_cap = cap;
                }
                as->dead_targets[as->dead_target_count++] = *r->t.box;
                uas_free(r->t.box, sizeof(*r->t.box));
            }
            memmove(r, r + 1, (d->ref_count - i - 1) * sizeof(as_ref));
            d->ref_count--;
            *found = true;
            continue;
        }
        i++;
    }
    return UAS_GOOD;
}
