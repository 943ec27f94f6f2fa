/* The node store: lookup of static namespace 0 rows and heap nodes,
 * references of both, the reference type closure and the type hierarchy.
 *
 * Namespace 0 costs nothing at start-up: rows are found by binary search
 * in the generated table; the only allocations are the overlay pointer
 * array (one pointer per row) and the reference type closure. */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "lockdef.h"
#include "aspace_internal.h"
#include "authz_node.h"

/* ---- NodeIds ---- */

bool as_nodeid_eq(const uas_nodeid *a, const uas_nodeid *b)
{
    if (a->ns != b->ns || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case UAS_NODEID_NUMERIC:
        return a->id.numeric == b->id.numeric;
    case UAS_NODEID_GUID:
        return memcmp(&a->id.guid, &b->id.guid, sizeof(uas_guid)) == 0;
    case UAS_NODEID_STRING:
    case UAS_NODEID_BYTESTRING: {
        const uas_string *x = &a->id.string, *y = &b->id.string;
        size_t nx = x->data ? x->length : 0, ny = y->data ? y->length : 0;
        return nx == ny && (nx == 0 || memcmp(x->data, y->data, nx) == 0);
    }
    default:
        return false;
    }
}

bool as_nodeid_is_null(const uas_nodeid *id)
{
    if (id->ns != 0)
        return false;
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        return id->id.numeric == 0;
    case UAS_NODEID_STRING:
    case UAS_NODEID_BYTESTRING:
        return !id->id.string.data || id->id.string.length == 0;
    case UAS_NODEID_GUID: {
        static const uas_guid zero;
        return memcmp(&id->id.guid, &zero, sizeof(zero)) == 0;
    }
    default:
        return false;
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t hash_nodeid(const uas_nodeid *id)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint8_t hdr[3] = {(uint8_t)id->ns, (uint8_t)(id->ns >> 8), id->kind};
    h = fnv(h, hdr, sizeof(hdr));
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        return fnv(h, &id->id.numeric, sizeof(id->id.numeric));
    case UAS_NODEID_GUID:
        return fnv(h, &id->id.guid, sizeof(id->id.guid));
    default:
        return id->id.string.data ? fnv(h, id->id.string.data, id->id.string.length) : h;
    }
}

/* ---- store ---- */

static size_t ns0_index(const uas_ns0_node *s)
{
    return (size_t)(s - uas_ns0_nodes);
}

static uas_status build_reftypes(uas_aspace *as)
{
    size_t n = 0;
    for (size_t i = 0; i < uas_ns0_node_count; i++)
        if (uas_ns0_nodes[i].node_class == UAS_NODE_CLASS_REFERENCE_TYPE)
            n++;
    as->reftypes = uas_calloc(n ? n : 1, sizeof(uint32_t));
    as->reftype_sub = uas_calloc(n * n / 8 + 1, 1);
    if (!as->reftypes || !as->reftype_sub)
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; i < uas_ns0_node_count; i++)
        if (uas_ns0_nodes[i].node_class == UAS_NODE_CLASS_REFERENCE_TYPE)
            as->reftypes[as->reftype_count++] = uas_ns0_nodes[i].id;
    /* The rows are sorted by id, so reftypes is too. Walk each type up its
     * HasSubtype chain and mark every ancestor. */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            if (as_ns0_is_subtype(as->reftypes[i], as->reftypes[j])) {
                size_t bit = i * n + j;
                as->reftype_sub[bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
        }
    }
    return UAS_GOOD;
}

static as_table *table_new(size_t count)
{
    as_table *t = uas_calloc(1, sizeof(as_table) + count * sizeof(t->b[0]));
    if (t)
        t->count = count;
    return t;
}

static void table_free(as_table *t)
{
    if (t)
        uas_free(t, sizeof(as_table) + t->count * sizeof(t->b[0]));
}

static void table_free_rcu(as_rcu_item *it)
{
    table_free((as_table *)((char *)it - offsetof(as_table, rcu)));
}

static void free_tables(uas_aspace *as)
{
    size_t n = as->reftype_count;
    table_free(atomic_load_explicit(&as->table, memory_order_relaxed));
    uas_free(as->overlay, uas_ns0_node_count * sizeof(as->overlay[0]));
    uas_free(as->reftypes, (n ? n : 1) * sizeof(uint32_t));
    uas_free(as->reftype_sub, n * n / 8 + 1);
}

uas_aspace *uas_aspace_new(uas_server *s)
{
    uas_aspace *as = uas_calloc(1, sizeof(*as));
    if (!as)
        return NULL;
    as->server = s;
    as->start_time = uas_datetime_now();
    as->next_auto_id = 0xF0000000u;
    atomic_init(&as->table, table_new(256));
    atomic_init(&as->table_seq, 0);
    as->overlay = uas_calloc(uas_ns0_node_count, sizeof(as->overlay[0]));
    if (!atomic_load(&as->table) || !as->overlay || build_reftypes(as) != UAS_GOOD ||
        as_rcu_init(&as->rcu, s ? s->nloops : 1) != (int)UAS_GOOD) {
        free_tables(as);
        uas_free(as, sizeof(*as));
        return NULL;
    }
    size_t nlocks = 0;
    while (nlocks < AS_VLOCKS && pthread_mutex_init(&as->vlocks[nlocks], NULL) == 0)
        nlocks++;
    if (nlocks < AS_VLOCKS || pthread_rwlock_init(&as->lock, NULL) != 0) {
        while (nlocks > 0)
            pthread_mutex_destroy(&as->vlocks[--nlocks]);
        as_rcu_destroy(&as->rcu);
        free_tables(as);
        uas_free(as, sizeof(*as));
        return NULL;
    }
    return as;
}

static void vsnap_free(as_vsnap *v)
{
    if (!v)
        return;
    uas_clear(&v->value, UAS_TYPE(VARIANT));
    uas_free(v, sizeof(*v));
}

void as_dsrc_free_rcu(as_rcu_item *it)
{
    uas_free((char *)it - offsetof(as_dsrc, rcu), sizeof(as_dsrc));
}

size_t as_class_part_size(uint8_t cls)
{
    switch (cls) {
    case UAS_NODE_CLASS_VARIABLE:
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        return sizeof(as_var);
    case UAS_NODE_CLASS_METHOD:
        return sizeof(as_meth);
    case UAS_NODE_CLASS_REFERENCE_TYPE:
    case UAS_NODE_CLASS_DATA_TYPE:
        return sizeof(as_typex);
    default:
        return 0;
    }
}

as_node *as_node_alloc(uint8_t cls)
{
    as_node *n = uas_calloc(1, sizeof(as_node) + as_class_part_size(cls));
    if (n)
        n->node_class = cls;
    return n;
}

uas_status as_node_set_text(uas_localizedtext **slot, const uas_localizedtext *t)
{
    uas_localizedtext *c = uas_malloc(sizeof(*c));
    if (!c)
        return UAS_BAD_OUT_OF_MEMORY;
    if (uas_copy(t, c, UAS_TYPE(LOCALIZED_TEXT)) != UAS_GOOD) {
        uas_free(c, sizeof(*c));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    *slot = c;
    return UAS_GOOD;
}

static void text_free(uas_localizedtext *t)
{
    if (!t)
        return;
    uas_clear(t, UAS_TYPE(LOCALIZED_TEXT));
    uas_free(t, sizeof(*t));
}

static void node_free_now(as_node *n)
{
    uas_clear(&n->id, UAS_TYPE(NODE_ID));
    uas_clear(&n->browse_name, UAS_TYPE(QUALIFIED_NAME));
    text_free(n->display_name);
    text_free(n->description);
    for (uint32_t i = 0; i < n->ref_count; i++)
        as_ref_clear(&n->refs[i]);
    uas_free(n->refs, n->ref_cap * sizeof(as_ref));
    as_var *v = as_var_of(n);
    if (v) {
        as_dsrc *ds = atomic_load_explicit(&v->dsrc, memory_order_relaxed);
        if (ds)
            uas_free(ds, sizeof(*ds));
        uas_clear(&v->data_type, UAS_TYPE(NODE_ID));
        uas_free(v->array_dims, v->array_dims_count * sizeof(uint32_t));
        vsnap_free(atomic_load_explicit(&v->vsnap, memory_order_relaxed));
        as_vfast *f = atomic_load_explicit(&v->fast, memory_order_relaxed);
        if (f)
            uas_free(f, sizeof(*f));
    }
    as_rp_free(n->rp);
    as_typex *tx = as_node_typex(n);
    if (tx) {
        uas_clear(&tx->inverse_name, UAS_TYPE(LOCALIZED_TEXT));
        uas_clear(&tx->definition, UAS_TYPE(VARIANT));
    }
    uas_free(n, sizeof(*n) + as_class_part_size(n->node_class));
}

static void node_free_rcu(as_rcu_item *it)
{
    node_free_now((as_node *)((char *)it - offsetof(as_node, rcu)));
}

void as_node_free(uas_aspace *as, as_node *n)
{
    if (!n)
        return;
    /* A node that was in the map (an add undone, a load rolled back) may
     * still be in a lock-free Read on another loop. */
    if (n->published)
        as_rcu_retire(&as->rcu, &n->rcu, node_free_rcu);
    else
        node_free_now(n);
}

void uas_aspace_delete(uas_aspace *as)
{
    if (!as)
        return;
    /* No reader is left: everything is freed now, the graveyard and what
     * was retired last (as_dyn_free retires the buried nodes). */
    as_table *t = atomic_load_explicit(&as->table, memory_order_relaxed);
    for (size_t i = 0; i < t->count; i++) {
        as_node *n = atomic_load_explicit(&t->b[i], memory_order_relaxed);
        while (n) {
            as_node *next = atomic_load_explicit(&n->next, memory_order_relaxed);
            node_free_now(n);
            n = next;
        }
    }
    for (size_t i = 0; i < uas_ns0_node_count; i++) {
        as_node *o = atomic_load_explicit(&as->overlay[i], memory_order_relaxed);
        if (o)
            node_free_now(o);
    }
    as_dyn_free(as);
    as_rcu_destroy(&as->rcu);
    free_tables(as);
    pthread_rwlock_destroy(&as->lock);
    for (size_t i = 0; i < AS_VLOCKS; i++)
        pthread_mutex_destroy(&as->vlocks[i]);
    uas_free(as, sizeof(*as));
}

void uas_aspace_set_change_hook(uas_aspace *as, uas_aspace_change_fn fn, void *ud)
{
    as_wrlock(as);
    as->on_change = fn;
    as->on_change_ud = ud;
    as_unlock(as);
}

void uas_aspace_loop_online(uas_aspace *as, unsigned i)
{
    if (i < as->rcu.loop_slots)
        as_rcu_online(&as->rcu, i);
}

void uas_aspace_loop_offline(uas_aspace *as, unsigned i)
{
    if (i < as->rcu.loop_slots)
        as_rcu_offline(&as->rcu, i);
}

void uas_aspace_set_value_hook(uas_aspace *as, uas_aspace_value_fn fn, void *ud)
{
    as_wrlock(as);
    as->on_value = fn;
    as->on_value_ud = ud;
    as_unlock(as);
}

/* Lock-free: a node's id never changes once it is in the map, and the
 * chains only change by publishing a head, unlinking one node (whose own
 * next stays intact) or, while table_seq is odd, relinking on growth. */
static as_node *hash_find(uas_aspace *as, const uas_nodeid *id)
{
    uint64_t h = hash_nodeid(id);
    for (;;) {
        uint32_t q = atomic_load_explicit(&as->table_seq, memory_order_acquire);
        if (q & 1) {
            sched_yield(); /* a writer is relinking the chains */
            continue;
        }
        as_table *t = atomic_load_explicit(&as->table, memory_order_acquire);
        as_node *found = NULL;
        /* A chain relinked under us may lead into another one, but never
         * in a circle (growth moves each node once, onto chains of moved
         * nodes); the sequence check below sends such a walk round again. */
        for (as_node *n =
                 atomic_load_explicit(&t->b[(size_t)h & (t->count - 1)], memory_order_acquire);
             n; n = atomic_load_explicit(&n->next, memory_order_acquire))
            if (as_nodeid_eq(&n->id, id)) {
                found = n;
                break;
            }
        if (atomic_load_explicit(&as->table_seq, memory_order_acquire) == q)
            return found;
    }
}

as_nv as_lookup(uas_aspace *as, const uas_nodeid *id)
{
    as_nv nv = {NULL, NULL};
    if (id->ns == 0 && id->kind == UAS_NODEID_NUMERIC) {
        nv.s = uas_ns0_find(id->id.numeric);
        if (nv.s) {
            nv.d = atomic_load_explicit(&as->overlay[ns0_index(nv.s)], memory_order_acquire);
            return nv;
        }
    }
    nv.d = hash_find(as, id);
    return nv;
}

/* Write lock. Readers retry while table_seq is odd (a few microseconds
 * per doubling, which happens log2(nodes) times). */
static uas_status grow_buckets(uas_aspace *as)
{
    as_table *old = atomic_load_explicit(&as->table, memory_order_relaxed);
    size_t nb = old->count * 2;
    as_table *t = table_new(nb);
    if (!t)
        return UAS_BAD_OUT_OF_MEMORY;
    atomic_fetch_add(&as->table_seq, 1);
    for (size_t i = 0; i < old->count; i++) {
        as_node *n = atomic_load_explicit(&old->b[i], memory_order_relaxed);
        while (n) {
            as_node *next = atomic_load_explicit(&n->next, memory_order_relaxed);
            size_t k = (size_t)hash_nodeid(&n->id) & (nb - 1);
            atomic_store_explicit(&n->next, atomic_load_explicit(&t->b[k], memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&t->b[k], n, memory_order_relaxed);
            n = next;
        }
    }
    atomic_store(&as->table, t);
    atomic_fetch_add(&as->table_seq, 1);
    as_rcu_retire(&as->rcu, &old->rcu, table_free_rcu);
    return UAS_GOOD;
}

uas_status as_insert(uas_aspace *as, as_node *n)
{
    as_table *t = atomic_load_explicit(&as->table, memory_order_relaxed);
    if (as->node_count >= t->count && grow_buckets(as) != UAS_GOOD &&
        as->node_count >= t->count * 8)
        return UAS_BAD_OUT_OF_MEMORY; /* a longer chain still works; give up late */
    t = atomic_load_explicit(&as->table, memory_order_relaxed);
    size_t k = (size_t)hash_nodeid(&n->id) & (t->count - 1);
    n->published = true;
    atomic_store_explicit(&n->next, atomic_load_explicit(&t->b[k], memory_order_relaxed),
                          memory_order_relaxed);
    /* The release store publishes everything written to n before. */
    atomic_store(&t->b[k], n);
    as->node_count++;
    return UAS_GOOD;
}

as_node *as_overlay(uas_aspace *as, as_nv *nv)
{
    if (nv->d || !nv->s)
        return nv->d;
    as_node *made = atomic_load_explicit(&as->overlay[ns0_index(nv->s)], memory_order_acquire);
    if (made) /* made by another thread since the lookup */
        return nv->d = made;
    as_node *d = as_node_alloc(nv->s->node_class);
    if (!d)
        return NULL;
    d->id = uas_nodeid_numeric(0, nv->s->id);
    as_meth *m = as_meth_of(d);
    if (m) {
        m->executable = (nv->s->flags & UAS_NS0_EXECUTABLE) != 0;
        m->user_executable = m->executable;
    }
    atomic_store(&as->overlay[ns0_index(nv->s)], d);
    nv->d = d;
    return d;
}

/* ---- node views ---- */

static uas_string static_str(uint32_t off)
{
    return uas_string_from(uas_ns0_str(off));
}

uint8_t as_nv_class(const as_nv *nv)
{
    return nv->s ? nv->s->node_class : nv->d ? nv->d->node_class : 0;
}

uas_nodeid as_nv_id(const as_nv *nv)
{
    return nv->s ? uas_nodeid_numeric(0, nv->s->id) : nv->d->id;
}

uas_qualifiedname as_nv_browse_name(const as_nv *nv)
{
    if (nv->s) {
        uas_qualifiedname q = {0, static_str(nv->s->browse_name)};
        return q;
    }
    return nv->d->browse_name;
}

uas_localizedtext as_nv_display_name(const as_nv *nv)
{
    if (nv->s) {
        uas_localizedtext t = {{0, NULL}, static_str(nv->s->display_name)};
        if (nv->s->display_name == UAS_NS0_NONE)
            t.text = static_str(nv->s->browse_name);
        return t;
    }
    return as_node_dn(nv->d);
}

size_t as_nv_ref_count(const as_nv *nv)
{
    return (nv->s ? nv->s->ref_count : 0) + (nv->d ? nv->d->ref_count : 0);
}

void as_nv_ref(const as_nv *nv, size_t i, as_refv *out)
{
    size_t ns = nv->s ? nv->s->ref_count : 0;
    if (i < ns) {
        const uas_ns0_ref *r = &uas_ns0_refs[nv->s->refs + i];
        memset(&out->target, 0, sizeof(out->target));
        out->target.nodeid = uas_nodeid_numeric(0, r->target);
        out->type = r->type;
        out->forward = r->forward != 0;
        return;
    }
    const as_ref *r = &nv->d->refs[i - ns];
    as_ref_target(r, &out->target);
    out->type = r->type;
    out->forward = r->forward;
}

uas_nodeid as_nv_type_definition(const as_nv *nv)
{
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (r.forward && r.type == UAS_NS0ID_HASTYPEDEFINITION)
            return r.target.nodeid;
    }
    return uas_nodeid_numeric(0, 0);
}

uint8_t as_nv_access_level(const as_nv *nv)
{
    if (nv->s)
        return nv->s->node_class == UAS_NODE_CLASS_VARIABLE ? nv->s->access_level : 0;
    return nv->d->node_class == UAS_NODE_CLASS_VARIABLE ? as_var_of(nv->d)->access_level : 0;
}

int32_t as_nv_value_rank(const as_nv *nv)
{
    if (nv->s)
        return nv->s->value_rank;
    const as_var *v = as_var_of(nv->d);
    return v ? v->value_rank : 0;
}

uas_nodeid as_nv_data_type(const as_nv *nv)
{
    if (nv->s)
        return uas_nodeid_numeric(0, nv->s->data_type);
    const as_var *v = as_var_of(nv->d);
    return v ? v->data_type : uas_nodeid_numeric(0, 0);
}

as_nv as_find_child(uas_aspace *as, const as_nv *nv, uint32_t reftype, const char *name)
{
    as_nv none = {NULL, NULL};
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (!r.forward || !as_reftype_sub(as, r.type, reftype) || r.target.server_index ||
            r.target.namespace_uri.data)
            continue;
        as_nv t = as_lookup(as, &r.target.nodeid);
        if (!as_nv_found(&t))
            continue;
        uas_qualifiedname q = as_nv_browse_name(&t);
        if (q.ns == 0 && uas_string_eq_cstr(&q.name, name))
            return t;
    }
    return none;
}

/* ---- adding references ---- */

static bool exp_eq(const uas_expandednodeid *a, const uas_expandednodeid *b)
{
    if (a->server_index != b->server_index || !as_nodeid_eq(&a->nodeid, &b->nodeid))
        return false;
    if (!a->namespace_uri.data || !b->namespace_uri.data)
        return !a->namespace_uri.data && !b->namespace_uri.data;
    return a->namespace_uri.length == b->namespace_uri.length &&
           memcmp(a->namespace_uri.data, b->namespace_uri.data, a->namespace_uri.length) == 0;
}

bool as_has_ref(const as_nv *nv, uint32_t type, const uas_expandednodeid *target, bool forward)
{
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (r.type == type && r.forward == forward && exp_eq(&r.target, target))
            return true;
    }
    return false;
}

uas_status as_add_ref(uas_aspace *as, as_nv *nv, uint32_t type, const uas_expandednodeid *target,
                      bool forward)
{
    as_node *d = as_overlay(as, nv);
    if (!d)
        return UAS_BAD_OUT_OF_MEMORY;
    if (d->ref_count == d->ref_cap) {
        uint32_t cap = d->ref_cap ? d->ref_cap * 2 : 4;
        as_ref *refs = uas_realloc(d->refs, d->ref_cap * sizeof(as_ref), cap * sizeof(as_ref));
        if (!refs)
            return UAS_BAD_OUT_OF_MEMORY;
        d->refs = refs;
        d->ref_cap = cap;
    }
    AS_TRY(as_ref_set(&d->refs[d->ref_count], type, target, forward));
    d->ref_count++;
    return UAS_GOOD;
}

void as_node_share_dn(as_node *n)
{
    uas_localizedtext *t = n->display_name;
    const uas_string *b = &n->browse_name.name;
    if (!t || t->locale.length || !b->data || t->text.length != b->length ||
        (b->length && memcmp(t->text.data, b->data, b->length) != 0))
        return;
    text_free(t);
    n->display_name = NULL;
}

static bool inline_target(const uas_expandednodeid *x)
{
    return x->server_index == 0 && !x->namespace_uri.data && x->nodeid.kind == UAS_NODEID_NUMERIC;
}

void as_ref_target(const as_ref *r, uas_expandednodeid *out)
{
    if (r->boxed) {
        *out = *r->t.box;
        return;
    }
    memset(out, 0, sizeof(*out));
    out->nodeid = uas_nodeid_numeric(r->ns, r->t.numeric);
}

uas_status as_ref_set(as_ref *r, uint32_t type, const uas_expandednodeid *target, bool forward)
{
    memset(r, 0, sizeof(*r));
    r->type = type;
    r->forward = forward;
    if (inline_target(target)) {
        r->ns = target->nodeid.ns;
        r->t.numeric = target->nodeid.id.numeric;
        return UAS_GOOD;
    }
    uas_expandednodeid *box = uas_calloc(1, sizeof(*box));
    if (!box)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_status st = uas_copy(target, box, UAS_TYPE(EXPANDED_NODE_ID));
    if (st != UAS_GOOD) {
        uas_free(box, sizeof(*box));
        return st;
    }
    r->t.box = box;
    r->boxed = 1;
    return UAS_GOOD;
}

bool as_ref_to(const as_ref *r, const uas_nodeid *id)
{
    if (!r->boxed)
        return id->kind == UAS_NODEID_NUMERIC && id->ns == r->ns && id->id.numeric == r->t.numeric;
    return r->t.box->server_index == 0 && !r->t.box->namespace_uri.data &&
           as_nodeid_eq(&r->t.box->nodeid, id);
}

void as_ref_clear(as_ref *r)
{
    if (r->boxed) {
        uas_clear(r->t.box, UAS_TYPE(EXPANDED_NODE_ID));
        uas_free(r->t.box, sizeof(*r->t.box));
    }
    memset(r, 0, sizeof(*r));
}

/* ---- type hierarchy ---- */

bool as_ns0_is_subtype(uint32_t sub, uint32_t super)
{
    for (int depth = 0; depth < 64; depth++) {
        if (sub == super)
            return true;
        const uas_ns0_node *s = uas_ns0_find(sub);
        if (!s)
            return false;
        uint32_t parent = 0;
        for (uint32_t i = 0; i < s->ref_count; i++) {
            const uas_ns0_ref *r = &uas_ns0_refs[s->refs + i];
            if (r->type == UAS_NS0ID_HASSUBTYPE && !r->forward) {
                parent = r->target;
                break;
            }
        }
        if (!parent)
            return false;
        sub = parent;
    }
    return false;
}

static long reftype_index(const uas_aspace *as, uint32_t id)
{
    size_t lo = 0, hi = as->reftype_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (as->reftypes[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < as->reftype_count && as->reftypes[lo] == id ? (long)lo : -1;
}

bool as_is_reftype(const uas_aspace *as, const uas_nodeid *id)
{
    if (id->ns == 0 && id->kind == UAS_NODEID_NUMERIC && reftype_index(as, id->id.numeric) >= 0)
        return true;
    for (size_t i = 0; i < as->dyn_reftype_count; i++)
        if (as_nodeid_eq(&as->dyn_reftypes[i], id))
            return true;
    return false;
}

bool as_reftype_sub_static(const uas_aspace *as, uint32_t sub, uint32_t super)
{
    if (sub == super)
        return true;
    long i = reftype_index(as, sub), j = reftype_index(as, super);
    if (i < 0 || j < 0)
        return false;
    size_t bit = (size_t)i * as->reftype_count + (size_t)j;
    return (as->reftype_sub[bit / 8] >> (bit % 8)) & 1u;
}

bool as_ref_matches(const uas_aspace *as, uint32_t ref_type, const uas_nodeid *filter,
                    bool include_subtypes)
{
    if (as_nodeid_is_null(filter))
        return true;
    uint32_t want;
    if (!as_reftype_id(as, filter, &want))
        return false;
    if (ref_type == want)
        return true;
    return include_subtypes && as_reftype_sub(as, ref_type, want);
}

bool as_ns_known(uas_aspace *as, uint16_t ns)
{
    if (ns == 0)
        return true;
    uas_server *s = as->server;
    if (!s)
        return false;
    UAS_LOCK_PLAIN(&s->ns_lock);
    bool known = ns < s->namespace_count;
    UAS_UNLOCK(&s->ns_lock);
    return known;
}

as_node *as_overlay_upgrade(uas_aspace *as, as_nv *nv)
{
    if (nv->d || !nv->s)
        return nv->d;
    as_unlock(as);
    as_wrlock(as);
    as_node *d = as_overlay(as, nv); /* returns the one another thread made meanwhile */
    as_unlock(as);
    as_rdlock(as);
    return d;
}

void as_unlink(uas_aspace *as, as_node *n)
{
    as_table *t = atomic_load_explicit(&as->table, memory_order_relaxed);
    size_t k = (size_t)hash_nodeid(&n->id) & (t->count - 1);
    /* n keeps its next: a reader standing on n walks on. */
    for (_Atomic(as_node *) *pp = &t->b[k]; atomic_load_explicit(pp, memory_order_relaxed);
         pp = &atomic_load_explicit(pp, memory_order_relaxed)->next) {
        if (atomic_load_explicit(pp, memory_order_relaxed) == n) {
            atomic_store(pp, atomic_load_explicit(&n->next, memory_order_relaxed));
            as->node_count--;
            return;
        }
    }
}
