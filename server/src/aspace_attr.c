/* Attributes of nodes (Part 3, 5) as Variants, the Value of variables, and
 * the type check of values against DataType and ValueRank.
 *
 * Values of namespace 0 are decoded from the static blob into the request
 * arena on every read, zero-copy (strings point into the blob, which lives
 * forever): no heap copy to keep consistent, no lock. Stored values are
 * immutable snapshots (as_vsnap) deep-copied into the arena with no lock; a
 * Write publishes a new one and retires the old, which is freed only after
 * every loop passed a quiescent point (aspace_rcu.h), so it never pulls
 * memory from under a Read. */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <string.h>

#include <ua/codec.h>

#include "lockdef.h"
#include "aspace_internal.h"
#include "authz_node.h"

/* Which attributes each node class has (bit n = attribute id n). */
#define A(x) (1u << (x))
#define BASE_ATTRS                                                                                 \
    (A(AS_ATTR_NODE_ID) | A(AS_ATTR_NODE_CLASS) | A(AS_ATTR_BROWSE_NAME) |                         \
     A(AS_ATTR_DISPLAY_NAME) | A(AS_ATTR_DESCRIPTION) | A(AS_ATTR_WRITE_MASK) |                    \
     A(AS_ATTR_USER_WRITE_MASK) | A(AS_ATTR_ROLE_PERMISSIONS) | A(AS_ATTR_USER_ROLE_PERMISSIONS) | \
     A(AS_ATTR_ACCESS_RESTRICTIONS))

bool as_class_has_attr(uint8_t node_class, uint32_t attr)
{
    uint32_t m;
    switch (node_class) {
    case UAS_NODE_CLASS_OBJECT:
        m = A(AS_ATTR_EVENT_NOTIFIER);
        break;
    case UAS_NODE_CLASS_VARIABLE:
        m = A(AS_ATTR_VALUE) | A(AS_ATTR_DATA_TYPE) | A(AS_ATTR_VALUE_RANK) |
            A(AS_ATTR_ARRAY_DIMENSIONS) | A(AS_ATTR_ACCESS_LEVEL) | A(AS_ATTR_USER_ACCESS_LEVEL) |
            A(AS_ATTR_MINIMUM_SAMPLING_INTERVAL) | A(AS_ATTR_HISTORIZING) |
            A(AS_ATTR_ACCESS_LEVEL_EX);
        break;
    case UAS_NODE_CLASS_METHOD:
        m = A(AS_ATTR_EXECUTABLE) | A(AS_ATTR_USER_EXECUTABLE);
        break;
    case UAS_NODE_CLASS_OBJECT_TYPE:
        m = A(AS_ATTR_IS_ABSTRACT);
        break;
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        m = A(AS_ATTR_VALUE) | A(AS_ATTR_DATA_TYPE) | A(AS_ATTR_VALUE_RANK) |
            A(AS_ATTR_ARRAY_DIMENSIONS) | A(AS_ATTR_IS_ABSTRACT);
        break;
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        m = A(AS_ATTR_IS_ABSTRACT) | A(AS_ATTR_SYMMETRIC) | A(AS_ATTR_INVERSE_NAME);
        break;
    case UAS_NODE_CLASS_DATA_TYPE:
        m = A(AS_ATTR_IS_ABSTRACT) | A(AS_ATTR_DATA_TYPE_DEFINITION);
        break;
    case UAS_NODE_CLASS_VIEW:
        m = A(AS_ATTR_CONTAINS_NO_LOOPS) | A(AS_ATTR_EVENT_NOTIFIER);
        break;
    default:
        return false;
    }
    return attr >= 1 && attr <= AS_ATTR_MAX && ((m | BASE_ATTRS) & A(attr));
}

/* A scalar in the arena holding a copy of *val (shallow: pointers inside
 * stay pointing at node memory, which outlives the response). */
static uas_status scalar(uas_variant *v, uas_arena *arena, const uas_type *t, const void *val)
{
    void *p = uas_arena_alloc(arena, t->size);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(p, val, t->size);
    uas_variant_set_scalar(v, p, t);
    return UAS_GOOD;
}

static uas_status boolean(uas_variant *v, uas_arena *arena, bool b)
{
    return scalar(v, arena, UAS_TYPE(BOOLEAN), &b);
}

/* Decode a Variant of the static blob, zero-copy. */
static uas_status decode_blob(const uint8_t *p, size_t len, uas_variant *v, uas_arena *arena)
{
    uas_decoder d;
    uas_decoder_init(&d, p, len, arena, &uas_limits_default);
    d.zero_copy = true;
    return uas_decode(&d, v, UAS_TYPE(VARIANT));
}

static uas_status array_dims(const as_nv *nv, uas_variant *v, uas_arena *arena)
{
    const uint32_t *src;
    size_t n;
    if (nv->s) {
        src = uas_ns0_u32 + nv->s->array_dimensions;
        n = nv->s->array_dimensions_count;
    } else {
        src = as_var_of(nv->d)->array_dims;
        n = as_var_of(nv->d)->array_dims_count;
    }
    if (n == 0) {
        /* No dimensions (scalars, or unknown lengths): a null value, as
         * Part 3 asks, rather than an empty array. */
        memset(v, 0, sizeof(*v));
        return UAS_GOOD;
    }
    uint32_t *dims = UAS_EMPTY_ARRAY;
    if (n) {
        dims = uas_arena_alloc(arena, n * sizeof(uint32_t));
        if (!dims)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(dims, src, n * sizeof(uint32_t));
    }
    uas_variant_set_array(v, dims, n, UAS_TYPE(UINT32));
    return UAS_GOOD;
}

static uas_localizedtext static_text(uint32_t off)
{
    uas_localizedtext t = {{0, NULL}, uas_string_from(uas_ns0_str(off))};
    return t;
}

uas_status as_read_attr(uas_aspace *as, const as_nv *nv, uint32_t attr, uint32_t roles,
                        uint32_t perms, uas_variant *v, uas_arena *arena)
{
    uint8_t nc = as_nv_class(nv);
    memset(v, 0, sizeof(*v));
    if (!as_class_has_attr(nc, attr))
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    const uas_ns0_node *s = nv->s;
    const as_node *d = nv->d;
    switch (attr) {
    case AS_ATTR_NODE_ID: {
        uas_nodeid id = as_nv_id(nv);
        return scalar(v, arena, UAS_TYPE(NODE_ID), &id);
    }
    case AS_ATTR_NODE_CLASS: {
        int32_t c = nc;
        return scalar(v, arena, UAS_TYPE(INT32), &c);
    }
    case AS_ATTR_BROWSE_NAME: {
        uas_qualifiedname q = as_nv_browse_name(nv);
        return scalar(v, arena, UAS_TYPE(QUALIFIED_NAME), &q);
    }
    case AS_ATTR_DISPLAY_NAME: {
        uas_localizedtext t = as_nv_display_name(nv);
        return scalar(v, arena, UAS_TYPE(LOCALIZED_TEXT), &t);
    }
    case AS_ATTR_DESCRIPTION: {
        uas_localizedtext t = s ? static_text(s->description) : as_node_desc(d);
        return scalar(v, arena, UAS_TYPE(LOCALIZED_TEXT), &t);
    }
    case AS_ATTR_WRITE_MASK:
    case AS_ATTR_USER_WRITE_MASK: {
        uint32_t m = 0;
        if (!s)
            m = attr == AS_ATTR_WRITE_MASK
                    ? d->write_mask
                    : as_user_write_mask(d->write_mask & d->user_write_mask, perms);
        return scalar(v, arena, UAS_TYPE(UINT32), &m);
    }
    case AS_ATTR_IS_ABSTRACT:
        return boolean(v, arena, s ? (s->flags & UAS_NS0_ABSTRACT) != 0 : d->is_abstract);
    case AS_ATTR_SYMMETRIC:
        return boolean(v, arena, s ? (s->flags & UAS_NS0_SYMMETRIC) != 0 : d->symmetric);
    case AS_ATTR_INVERSE_NAME: {
        uas_localizedtext t = s ? static_text(s->inverse_name) : as_inverse_name(d);
        return scalar(v, arena, UAS_TYPE(LOCALIZED_TEXT), &t);
    }
    case AS_ATTR_CONTAINS_NO_LOOPS:
        return boolean(v, arena,
                       s ? (s->flags & UAS_NS0_CONTAINS_NO_LOOPS) != 0 : d->contains_no_loops);
    case AS_ATTR_EVENT_NOTIFIER: {
        uint8_t e = s ? s->event_notifier : d->event_notifier;
        return scalar(v, arena, UAS_TYPE(BYTE), &e);
    }
    case AS_ATTR_DATA_TYPE: {
        uas_nodeid id = as_nv_data_type(nv);
        return scalar(v, arena, UAS_TYPE(NODE_ID), &id);
    }
    case AS_ATTR_VALUE_RANK: {
        int32_t r = as_nv_value_rank(nv);
        return scalar(v, arena, UAS_TYPE(INT32), &r);
    }
    case AS_ATTR_ARRAY_DIMENSIONS:
        return array_dims(nv, v, arena);
    case AS_ATTR_ACCESS_LEVEL: {
        uint8_t a = as_nv_access_level(nv);
        return scalar(v, arena, UAS_TYPE(BYTE), &a);
    }
    case AS_ATTR_USER_ACCESS_LEVEL: {
        uint8_t a = s ? s->access_level
                      : (uint8_t)(as_var_of(d)->access_level & as_var_of(d)->user_access_level);
        a = as_user_access_level(a, perms);
        return scalar(v, arena, UAS_TYPE(BYTE), &a);
    }
    case AS_ATTR_ACCESS_LEVEL_EX: {
        uint32_t a = as_nv_access_level(nv);
        return scalar(v, arena, UAS_TYPE(UINT32), &a);
    }
    case AS_ATTR_MINIMUM_SAMPLING_INTERVAL: {
        double m = s ? (double)s->minimum_sampling_interval : as_var_of(d)->min_sampling;
        return scalar(v, arena, UAS_TYPE(DOUBLE), &m);
    }
    case AS_ATTR_HISTORIZING:
        return boolean(v, arena,
                       s ? (s->flags & UAS_NS0_HISTORIZING) != 0 : as_var_of(d)->historizing);
    case AS_ATTR_EXECUTABLE:
        return boolean(v, arena,
                       d ? as_meth_of(d)->executable : (s->flags & UAS_NS0_EXECUTABLE) != 0);
    case AS_ATTR_USER_EXECUTABLE:
        return boolean(v, arena,
                       (d ? as_meth_of(d)->executable && as_meth_of(d)->user_executable
                          : (s->flags & UAS_NS0_EXECUTABLE) != 0) &&
                           (perms & UAS_PERMISSION_TYPE_CALL));
    case AS_ATTR_DATA_TYPE_DEFINITION: {
        size_t len;
        const uint8_t *p = s ? uas_ns0_definition(s, &len) : NULL;
        if (!s && as_definition(d)->type) {
            /* Shallow: the node's memory outlives the response (heap
             * nodes are never freed while the server runs). */
            *v = *as_definition(d);
            return UAS_GOOD;
        }
        if (!p)
            return UAS_BAD_ATTRIBUTE_ID_INVALID;
        return decode_blob(p, len, v, arena);
    }
    case AS_ATTR_ROLE_PERMISSIONS:
    case AS_ATTR_USER_ROLE_PERMISSIONS:
        return as_read_role_permissions(as, nv, roles, attr == AS_ATTR_USER_ROLE_PERMISSIONS, v,
                                        arena);
    case AS_ATTR_ACCESS_RESTRICTIONS: {
        if (!s || s->access_restrictions == 0)
            return UAS_BAD_ATTRIBUTE_ID_INVALID;
        uint16_t r = s->access_restrictions;
        return scalar(v, arena, UAS_TYPE(UINT16), &r);
    }
    default:
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    }
}

/* ---- lock-free copies of scalar values (as_node.vseq) ---- */

static bool vfast_fits(const uas_variant *v)
{
    return v->type && !v->is_array && v->data && v->type->pointer_free && v->type->size <= 8;
}

static void vfast_set(as_var *var, const uas_variant *value, uas_status status, uas_datetime src_ts,
                      uas_datetime srv_ts)
{
    const uas_type *t = value && vfast_fits(value) ? value->type : NULL;
    as_vfast *d = atomic_load_explicit(&var->fast, memory_order_relaxed);
    bool fresh = false;
    if (!d) {
        /* Out of memory here only costs the fast path: the snapshot holds
         * the same value. */
        if (!t || !(d = uas_calloc(1, sizeof(*d))))
            return;
        fresh = true;
    }
    uint64_t bits = 0;
    if (t)
        memcpy(&bits, value->data, t->size);
    /* No fences (ThreadSanitizer does not model them): each field is a
     * release store after the odd sequence, each read an acquire load, so
     * a reader that sees any new field also sees the odd or the next
     * sequence on its check after them. On x86 these are plain moves. */
    uint32_t q = atomic_load_explicit(&d->vseq, memory_order_relaxed);
    atomic_store_explicit(&d->vseq, q + 1, memory_order_relaxed);
    atomic_store_explicit(&d->vtype, t, memory_order_release);
    atomic_store_explicit(&d->vbits, bits, memory_order_release);
    atomic_store_explicit(&d->vstatus, status, memory_order_release);
    atomic_store_explicit(&d->vsrc_ts, src_ts, memory_order_release);
    atomic_store_explicit(&d->vsrv_ts, srv_ts, memory_order_release);
    atomic_store_explicit(&d->vseq, q + 2, memory_order_release);
    if (fresh) /* readers that find it see the fields above */
        atomic_store_explicit(&var->fast, d, memory_order_release);
}

/* A consistent snapshot of the lock-free copy into dv: true when there
 * was one. A writer holds the sequence odd for a few stores; a reader that
 * keeps finding it odd or changed (the writer was preempted in between)
 * gives up after some tries and copies the value snapshot instead. */
static bool vfast_read(as_var *var, uas_datavalue *dv, uas_arena *arena, uas_status *st)
{
    as_vfast *d = atomic_load_explicit(&var->fast, memory_order_acquire);
    if (!d)
        return false;
    for (int tries = 0; tries < 100; tries++) {
        uint32_t s1 = atomic_load_explicit(&d->vseq, memory_order_acquire);
        if (s1 & 1)
            continue;
        const uas_type *t = atomic_load_explicit(&d->vtype, memory_order_acquire);
        uint64_t bits = atomic_load_explicit(&d->vbits, memory_order_acquire);
        uas_status status = atomic_load_explicit(&d->vstatus, memory_order_acquire);
        int64_t src = atomic_load_explicit(&d->vsrc_ts, memory_order_acquire);
        int64_t srv = atomic_load_explicit(&d->vsrv_ts, memory_order_acquire);
        if (atomic_load_explicit(&d->vseq, memory_order_relaxed) != s1)
            continue;
        if (!t)
            return false;
        void *p = uas_arena_alloc(arena, 8);
        if (!p) {
            *st = UAS_BAD_OUT_OF_MEMORY;
            return true;
        }
        memcpy(p, &bits, t->size);
        uas_variant_set_scalar(&dv->value, p, t);
        dv->status = status;
        dv->source_timestamp = src;
        dv->server_timestamp = srv;
        *st = UAS_GOOD;
        return true;
    }
    return false;
}

uas_status as_read_value(uas_aspace *as, const as_nv *nv, const as_range *range, uas_datavalue *dv,
                         uas_arena *arena)
{
    return as_read_value_ex(as, nv, range, dv, arena, true);
}

uas_status as_read_value_ex(uas_aspace *as, const as_nv *nv, const as_range *range,
                            uas_datavalue *dv, uas_arena *arena, bool locked)
{
    as_node *d = nv->d;
    memset(dv, 0, sizeof(*dv));
    const as_dsrc *ds = as_node_dsrc(d);
    if (ds && ds->read) {
        /* A data source runs without the structure lock (a lock-free Read
         * holds none), so it may block or even add nodes; d stays valid
         * (nodes are never freed while a reader may hold them). */
        uas_read_fn fn = ds->read;
        void *ud = ds->ud;
        uas_nodeid id = d->id;
        if (locked)
            as_unlock(as);
        uas_status st = fn(ud, &id, dv, arena);
        if (locked)
            as_rdlock(as);
        if (uas_is_bad(st))
            return st;
        if (range->dims) {
            uas_variant whole = dv->value;
            AS_TRY(as_range_read(&whole, range, &dv->value, arena, false));
        }
        dv->has_value = true;
        return UAS_GOOD;
    }
    bool stored = false;
    uas_status fast_st;
    as_var *var = as_var_of(d);
    if (var && !range->dims && vfast_read(var, dv, arena, &fast_st)) {
        AS_TRY(fast_st);
        stored = true;
    } else if (var) {
        /* The current snapshot, copied into the arena: it is freed only
         * after this reader's next quiescent point, the copy lives on. */
        as_vsnap *v = atomic_load_explicit(&var->vsnap, memory_order_acquire);
        if (v) {
            stored = true;
            AS_TRY(as_range_read(&v->value, range, &dv->value, arena, true));
            dv->status = v->status;
            dv->source_timestamp = v->source_ts;
            dv->server_timestamp = v->server_ts;
        }
    }
    if (!stored && nv->s) {
        size_t len;
        const uint8_t *p = uas_ns0_value(nv->s, &len);
        uas_variant whole;
        memset(&whole, 0, sizeof(whole));
        if (p)
            AS_TRY(decode_blob(p, len, &whole, arena));
        AS_TRY(as_range_read(&whole, range, &dv->value, arena, false));
        dv->source_timestamp = as->start_time;
        dv->server_timestamp = as->start_time;
    } else if (!stored) {
        /* A dynamic variable added without a value: null, Good. */
        if (range->dims)
            return UAS_BAD_INDEX_RANGE_NO_DATA;
        dv->source_timestamp = as->start_time;
        dv->server_timestamp = as->start_time;
    }
    dv->has_value = true;
    dv->has_status = dv->status != UAS_GOOD;
    dv->has_source_timestamp = true;
    dv->has_server_timestamp = true;
    return UAS_GOOD;
}

/* ---- type checks ---- */

/* The builtin type a DataType is encoded as (Part 6: the first builtin
 * ancestor), 0 for abstract roots (BaseDataType, Structure, Enumeration). */
static uint32_t builtin_base(uint32_t dt)
{
    for (int depth = 0; depth < 64; depth++) {
        if (dt == UAS_NS0ID_BASEDATATYPE || dt == UAS_NS0ID_STRUCTURE ||
            dt == UAS_NS0ID_ENUMERATION)
            return 0;
        if (dt >= 1 && dt <= 25)
            return dt;
        const uas_ns0_node *s = uas_ns0_find(dt);
        if (!s)
            return 0;
        uint32_t parent = 0;
        for (uint32_t i = 0; i < s->ref_count; i++) {
            const uas_ns0_ref *r = &uas_ns0_refs[s->refs + i];
            if (r->type == UAS_NS0ID_HASSUBTYPE && !r->forward) {
                parent = r->target;
                break;
            }
        }
        dt = parent;
    }
    return 0;
}

static bool type_ok(uint32_t dt, const uas_type *t)
{
    if (dt == UAS_NS0ID_BASEDATATYPE)
        return true;
    if (t->kind == UAS_BUILTIN_EXTENSIONOBJECT)
        return as_ns0_is_subtype(dt, UAS_NS0ID_STRUCTURE); /* an undecoded body */
    uint32_t vt = t->kind == UAS_KIND_ENUM ? UAS_NS0ID_INT32 : t->type_id;
    if (t->kind == UAS_KIND_ENUM && as_ns0_is_subtype(t->type_id, dt))
        return true;
    if (as_ns0_is_subtype(vt, dt))
        return true;
    if (vt == UAS_NS0ID_INT32 && as_ns0_is_subtype(dt, UAS_NS0ID_ENUMERATION))
        return true;
    uint32_t base = builtin_base(dt);
    return base != 0 && base == vt;
}

static bool rank_ok(int32_t rank, const uas_variant *v)
{
    size_t dims = v->is_array ? (v->array_dimensions ? v->array_dimensions_length : 1) : 0;
    switch (rank) {
    case -3: /* ScalarOrOneDimension */
        return dims <= 1;
    case -2: /* Any */
        return true;
    case -1: /* Scalar */
        return dims == 0;
    case 0: /* OneOrMoreDimensions */
        return dims >= 1;
    default:
        return rank > 0 && dims == (size_t)rank;
    }
}

uas_status as_check_value(const uas_nodeid *data_type, int32_t value_rank, const uas_variant *v)
{
    uint32_t dt = UAS_NS0ID_BASEDATATYPE;
    if (!as_nodeid_is_null(data_type)) {
        if (data_type->ns != 0 || data_type->kind != UAS_NODEID_NUMERIC)
            return UAS_BAD_TYPE_MISMATCH;
        dt = data_type->id.numeric;
    }
    if (!v->type)
        return dt == UAS_NS0ID_BASEDATATYPE ? UAS_GOOD : UAS_BAD_TYPE_MISMATCH;
    if (!type_ok(dt, v->type) || !rank_ok(value_rank, v))
        return UAS_BAD_TYPE_MISMATCH;
    return UAS_GOOD;
}

static void vsnap_free_rcu(as_rcu_item *it)
{
    as_vsnap *v = (as_vsnap *)((char *)it - offsetof(as_vsnap, rcu));
    uas_clear(&v->value, UAS_TYPE(VARIANT));
    uas_free(v, sizeof(*v));
}

uas_status as_init_value(as_node *d, uas_variant *v, uas_datetime now)
{
    as_vsnap *nv = uas_calloc(1, sizeof(*nv));
    if (!nv) {
        uas_clear(v, UAS_TYPE(VARIANT));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    nv->value = *v;
    nv->source_ts = nv->server_ts = now;
    memset(v, 0, sizeof(*v));
    as_var *var = as_var_of(d);
    as_vsnap *old = atomic_exchange_explicit(&var->vsnap, nv, memory_order_relaxed);
    if (old) /* not published: no reader has it */
        vsnap_free_rcu(&old->rcu);
    vfast_set(var, &nv->value, UAS_GOOD, now, now);
    return UAS_GOOD;
}

uas_status as_swap_value(uas_aspace *as, as_node *d, uas_variant *v, uas_status status,
                         uas_datetime source_ts, uas_datetime now)
{
    as_vsnap *nv = uas_malloc(sizeof(*nv));
    if (!nv) {
        uas_clear(v, UAS_TYPE(VARIANT));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    memset(nv, 0, sizeof(*nv));
    nv->value = *v;
    nv->status = status;
    nv->source_ts = source_ts ? source_ts : now;
    nv->server_ts = now;
    memset(v, 0, sizeof(*v));
    /* The value lock orders writers of this node; readers take no lock. */
    pthread_mutex_t *lock = as_value_lock(as, d);
    UAS_LOCK(lock, UAS_LOCK_VALUE);
    as_var *var = as_var_of(d);
    as_vsnap *old = atomic_exchange(&var->vsnap, nv);
    vfast_set(var, &nv->value, nv->status, nv->source_ts, nv->server_ts);
    if (as->on_value) {
        /* In write order: the hook queues a copy for each subscription
         * engine (svc_subscription.c), so the engines see every value in
         * the order readers do. */
        uas_datavalue dv;
        memset(&dv, 0, sizeof(dv));
        dv.value = nv->value;
        dv.has_value = true;
        dv.status = nv->status;
        dv.has_status = nv->status != UAS_GOOD;
        dv.source_timestamp = nv->source_ts;
        dv.has_source_timestamp = true;
        dv.server_timestamp = nv->server_ts;
        dv.has_server_timestamp = true;
        as->on_value(as->on_value_ud, &d->id, &dv);
    }
    UAS_UNLOCK(lock);
    if (old)
        as_rcu_retire(&as->rcu, &old->rcu, vsnap_free_rcu);
    if (d->persist && as->server) /* the store writes current values */
        uas_nodeset_store_touch(as->server);
    uas_aspace_value_fn vfn = as->on_value;
    void *vud = as->on_value_ud;
    uas_aspace_change_fn cfn = as->on_change;
    void *cud = as->on_change_ud;
    if (vfn || cfn) {
        /* Without the structure lock: the value hook's flush takes this
         * loop's engine lock, the change hook may read (and lock). */
        as_unlock(as);
        if (vfn)
            vfn(vud, NULL, NULL);
        if (cfn)
            cfn(cud, &d->id);
        as_rdlock(as);
    }
    return UAS_GOOD;
}

uas_status as_store_value(uas_aspace *as, as_node *d, const uas_variant *v, uas_status status,
                          uas_datetime source_ts, uas_datetime now)
{
    uas_variant copy;
    AS_TRY(uas_copy(v, &copy, UAS_TYPE(VARIANT)));
    return as_swap_value(as, d, &copy, status, source_ts, now);
}
