/* Internals of the address space shared by its files (aspace*.c, svc_*.c,
 * numrange.c, nodes_api.c). Nothing outside the address space includes it.
 *
 * Two kinds of node sit behind one view (as_nv):
 * - static rows of namespace 0 (ns0.h), read in place, never copied;
 * - as_node records on the heap: the nodes a program adds (any namespace)
 *   and "overlays" of namespace 0 rows, created on demand to hold what a
 *   static row cannot: references added at run time (Objects -Organizes->
 *   MyObject), a written value, data source callbacks, a method callback.
 *
 * Lifetime: nodes are never removed while the server runs, so a node
 * pointer, and the strings of a dynamic node, stay valid once looked up,
 * even after the structure lock is released. That is what lets services drop
 * the lock around user callbacks and hand out references to node strings in
 * responses without copying. Reference arrays do move when they grow, so
 * they are read under the structure lock (the strings they point to do not
 * move).
 *
 * Reads take no lock (aspace_rcu.h): the Read service and uas_aspace_read
 * find nodes through the published hash table and overlay slots, read
 * values from immutable snapshots (as_vsnap) published with one atomic
 * store, and scalars of the fixed-size builtin types through the node's
 * seqlock (as_vfast). What a mutator replaces (a value snapshot, the
 * bucket table, role permissions, a node taken out again by an undo) is
 * freed through as_rcu_retire once every loop has passed a quiescent point.
 * Mutators still exclude each other: structure changes under the write
 * lock, values under the node's value lock (as_value_lock; no reader
 * takes it). */
#ifndef UAS_ASPACE_INTERNAL_H
#define UAS_ASPACE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ua/nodeids.h>
#include <ua/types.h>

#include "aspace.h"
#include "aspace_rcu.h"
#include "lockdef.h"
#include "ns0.h"

#define AS_TRY(x)                                                                                  \
    do {                                                                                           \
        uas_status as_try_st_ = (x);                                                               \
        if (as_try_st_ != UAS_GOOD)                                                                \
            return as_try_st_;                                                                     \
    } while (0)

/* Attribute ids (Part 6, AttributeIds.csv). */
enum {
    AS_ATTR_NODE_ID = 1,
    AS_ATTR_NODE_CLASS = 2,
    AS_ATTR_BROWSE_NAME = 3,
    AS_ATTR_DISPLAY_NAME = 4,
    AS_ATTR_DESCRIPTION = 5,
    AS_ATTR_WRITE_MASK = 6,
    AS_ATTR_USER_WRITE_MASK = 7,
    AS_ATTR_IS_ABSTRACT = 8,
    AS_ATTR_SYMMETRIC = 9,
    AS_ATTR_INVERSE_NAME = 10,
    AS_ATTR_CONTAINS_NO_LOOPS = 11,
    AS_ATTR_EVENT_NOTIFIER = 12,
    AS_ATTR_VALUE = 13,
    AS_ATTR_DATA_TYPE = 14,
    AS_ATTR_VALUE_RANK = 15,
    AS_ATTR_ARRAY_DIMENSIONS = 16,
    AS_ATTR_ACCESS_LEVEL = 17,
    AS_ATTR_USER_ACCESS_LEVEL = 18,
    AS_ATTR_MINIMUM_SAMPLING_INTERVAL = 19,
    AS_ATTR_HISTORIZING = 20,
    AS_ATTR_EXECUTABLE = 21,
    AS_ATTR_USER_EXECUTABLE = 22,
    AS_ATTR_DATA_TYPE_DEFINITION = 23,
    AS_ATTR_ROLE_PERMISSIONS = 24,
    AS_ATTR_USER_ROLE_PERMISSIONS = 25,
    AS_ATTR_ACCESS_RESTRICTIONS = 26,
    AS_ATTR_ACCESS_LEVEL_EX = 27,
    AS_ATTR_MAX = 27,
};

/* A reference stored on a heap node, in 16 bytes: a loaded model has a
 * few per node and each is stored on both ends, so their size is a large
 * part of a model's memory (docs/Benchmarks.md). A local numeric target
 * (nearly every one) is inline; any other (string, GUID or opaque id, a
 * namespace URI, another server) is a heap box. The type is the uint32 id
 * of aspace_dyn.c (namespace 0's numeric ids, AS_DYN_REFTYPE + i for the
 * others). Read through as_nv_ref / as_ref_target. */
typedef struct as_ref {
    union {
        uint32_t numeric;
        uas_expandednodeid *box; /* heap-owned */
    } t;
    uint32_t type;
    uint16_t ns;
    uint8_t forward;
    uint8_t boxed;
} as_ref;

/* Attributes that only ReferenceTypes (InverseName) and DataTypes
 * (DataTypeDefinition) have: out of the record every node pays for, on
 * the heap when a node has them (as_node_typex). */
typedef struct as_typex {
    uas_localizedtext inverse_name;
    uas_variant definition; /* a StructureDefinition or EnumDefinition, heap */
} as_typex;

/* A variable's value as readers see it: never changed once published in
 * as_node.vsnap; a write publishes a new one and retires the old. */
typedef struct as_vsnap {
    as_rcu_item rcu;
    uas_variant value; /* heap-owned */
    uas_status status;
    uas_datetime source_ts, server_ts;
} as_vsnap;

/* A variable's attributes and value: the class part of Variables and
 * VariableTypes (and of overlays of static ones), after the common record
 * in the same allocation (as_var_of). Other classes do not pay for it
 * (docs/Benchmarks.md, "Memory per loaded node"). */
typedef struct as_var {
    uas_nodeid data_type;
    uint32_t *array_dims;
    uint32_t array_dims_count;
    int32_t value_rank;
    double min_sampling;
    uint8_t access_level;
    uint8_t user_access_level;
    bool historizing;
    /* Four bytes of padding here: a per-variable 32-bit field (such as a
     * count of the monitored items watching the value) fits at no cost;
     * in as_node it would cost 8 bytes on every node. */
    /* The value again, when it is a scalar of a pointer-free builtin type
     * (as_vfast); NULL until the node first has such a value. */
    _Atomic(struct as_vfast *) fast;
    /* The current value (the one the node was created with until anything
     * wrote it), published with a release store, read with no lock. NULL:
     * none (a null value, Good), and on an overlay "the static value still
     * holds". */
    _Atomic(as_vsnap *) vsnap;
    /* Data source callbacks: one record published with a release store
     * (a lock-free Read must see read and ud of the same call), replaced
     * records retired. NULL: none. */
    _Atomic(struct as_dsrc *) dsrc;
} as_var;

/* A variable's value again, when it is a scalar of a pointer-free builtin
 * type of at most 8 bytes (Boolean .. Double, DateTime, StatusCode: what
 * plants mostly read), published by writers under the node's value lock
 * (as_value_lock) and read with no lock through the seqlock vseq (odd
 * while a writer updates; every field atomic, so readers never see a torn
 * value and the sanitizers see no race). vtype NULL: no such copy, Reads
 * use the snapshot. Allocated for the first such value (a model's
 * variables mostly hold arrays, strings or structures, or nothing) and
 * kept until the node is freed. */
typedef struct as_vfast {
    _Atomic uint32_t vseq;
    _Atomic uint32_t vstatus;
    _Atomic(const uas_type *) vtype;
    _Atomic uint64_t vbits;
    _Atomic int64_t vsrc_ts, vsrv_ts;
} as_vfast;

/* The class part of Methods (dynamic, or overlays of static methods). */
typedef struct as_meth {
    uas_method_fn method;
    void *method_ud;
    bool executable;
    bool user_executable;
} as_meth;

typedef struct as_node as_node;
/* The record of a heap node: what every class has. It is followed in the
 * same allocation by its class part (as_node_alloc): as_var, as_meth or
 * as_typex (ReferenceTypes, DataTypes); Objects, ObjectTypes and Views
 * have none. A node's class never changes. */
struct as_node {
    _Atomic(as_node *) next; /* hash chain (dynamic nodes only) */
    uas_nodeid id;           /* heap-owned */
    /* Base attributes of dynamic nodes (overlays use the static row). */
    uas_qualifiedname browse_name;
    /* NULL: the BrowseName's text without a locale (nearly every node of
     * a model); never replaced once the node is published. Read through
     * as_node_dn / as_node_desc. */
    uas_localizedtext *display_name;
    uas_localizedtext *description; /* NULL: none */
    /* References added at run time (for an overlay: after the static ones). */
    as_ref *refs;
    uint32_t ref_count;
    uint32_t ref_cap;
    uint32_t write_mask;
    uint32_t user_write_mask;
    uint8_t node_class;
    /* The one-byte attributes of Objects and Views */
    uint8_t event_notifier;
    /* Type and view nodes that only a NodeSet or AddNodes gives a heap
     * node (nodeset*.c, svc_nodemgmt.c) */
    bool is_abstract;
    bool symmetric;
    bool contains_no_loops;
    bool deleted;   /* DeleteNodes: unlinked, kept until the server ends */
    bool persist;   /* written to the NodeManagement store (nodeset_store.c) */
    bool published; /* was in the map: freeing it waits for readers */
    /* RolePermissions of the node's own (authz_node.h); NULL: the
     * NodeSet's for an overlay, else the namespace default. */
    struct as_rp *_Atomic rp; /* replaced via as_rp_publish */
    /* DeleteNodes' graveyard (not next, which a lock-free lookup still
     * walking through the deleted node must find unchanged), and later the
     * retire list: a node leaves the graveyard before it is retired. */
    union {
        as_node *graveyard_next;
        as_rcu_item rcu;
    };
};

/* The class parts start right after the record, so it must keep their
 * alignment. */
_Static_assert(sizeof(as_node) % _Alignof(as_var) == 0 &&
                   sizeof(as_node) % _Alignof(as_meth) == 0 &&
                   sizeof(as_node) % _Alignof(as_typex) == 0,
               "as_node's size must keep its class part aligned");

/* The class part of a node of class cls: its size, and where it is. */
size_t as_class_part_size(uint8_t cls);
static inline as_var *as_var_of(const as_node *d)
{
    return d && (d->node_class == UAS_NODE_CLASS_VARIABLE ||
                 d->node_class == UAS_NODE_CLASS_VARIABLE_TYPE)
               ? (as_var *)(void *)((char *)(uintptr_t)d + sizeof(as_node))
               : NULL;
}
static inline as_meth *as_meth_of(const as_node *d)
{
    return d && d->node_class == UAS_NODE_CLASS_METHOD
               ? (as_meth *)(void *)((char *)(uintptr_t)d + sizeof(as_node))
               : NULL;
}
/* A zeroed record of class cls with its class part. NULL: out of memory. */
as_node *as_node_alloc(uint8_t cls);

typedef struct as_dsrc {
    as_rcu_item rcu;
    uas_read_fn read;
    uas_write_fn write;
    void *ud;
} as_dsrc;

static inline const as_dsrc *as_node_dsrc(const as_node *d)
{
    as_var *v = as_var_of(d);
    return v ? atomic_load_explicit(&v->dsrc, memory_order_acquire) : NULL;
}

/* The hash map's buckets, replaced as a whole when it grows. */
typedef struct as_table {
    as_rcu_item rcu;
    size_t count; /* power of two */
    _Atomic(as_node *) b[];
} as_table;

#define AS_VLOCKS 64
struct uas_aspace {
    uas_server *server;
    pthread_rwlock_t lock;
    as_rcu rcu;
    /* Dynamic nodes: chained hash map on NodeId, power-of-two buckets.
     * Growing relinks the chains: table_seq is odd meanwhile, and a
     * lock-free lookup that saw it change looks again. */
    _Atomic(as_table *) table;
    _Atomic uint32_t table_seq;
    size_t node_count;
    /* Overlays of static rows, indexed like uas_ns0_nodes; a slot is set
     * once, with a release store, when the overlay is complete. */
    _Atomic(as_node *) *overlay;
    /* Reference type closure: the ids of the ReferenceTypes of namespace 0
     * (sorted) and a bit matrix sub x super. */
    uint32_t *reftypes;
    size_t reftype_count;
    uint8_t *reftype_sub;  /* reftype_count * reftype_count bits */
    uint32_t next_auto_id; /* ids of generated property nodes */
    uas_datetime start_time;
    uas_aspace_change_fn on_change;
    void *on_change_ud;
    uas_aspace_value_fn on_value; /* set before loops run */
    void *on_value_ud;
    /* ReferenceTypes outside the static table (NodeSets, AddNodes): they
     * get ids AS_DYN_REFTYPE + index in the uint32 reference type space of
     * as_ref, with their supertype's id (either space). Write lock. */
    uas_nodeid *dyn_reftypes;
    uint32_t *dyn_reftype_super;
    size_t dyn_reftype_count, dyn_reftype_cap;
    /* Deleted nodes: unlinked but not freed while the server runs, so
     * pointers services took under the lock stay valid (see above). */
    as_node *graveyard;
    /* The value locks: they order the writers of one node's value
     * (as_swap_value); a node's lock is picked by its address, so nodes
     * pay nothing for it. Readers take none. */
    pthread_mutex_t vlocks[AS_VLOCKS];
    /* Targets of removed references, kept for the same reason. */
    uas_expandednodeid *dead_targets;
    size_t dead_target_count, dead_target_cap;
};
#define AS_DYN_REFTYPE 0x80000000u

/* A node as services see it: a static row, a heap node, or both (an
 * overlay). Both NULL: no such node. */
typedef struct as_nv {
    const uas_ns0_node *s;
    as_node *d;
} as_nv;

static inline bool as_nv_found(const as_nv *nv)
{
    return nv->s || nv->d;
}

/* One reference of a node, read in place (the target's strings belong to
 * the node). */
typedef struct as_refv {
    uas_expandednodeid target;
    uint32_t type;
    bool forward;
} as_refv;

/* ---- aspace.c: store, lookup, references, type hierarchy ---- */

bool as_nodeid_eq(const uas_nodeid *a, const uas_nodeid *b);
bool as_nodeid_is_null(const uas_nodeid *id);
static inline bool as_is_ns0(const uas_nodeid *id, uint32_t num)
{
    return id->ns == 0 && id->kind == UAS_NODEID_NUMERIC && id->id.numeric == num;
}
/* Caller holds the lock (read or write), or is a lock-free reader (loop
 * iteration or as_rcu_enter). */
as_nv as_lookup(uas_aspace *as, const uas_nodeid *id);
uint8_t as_nv_class(const as_nv *nv);
uas_nodeid as_nv_id(const as_nv *nv); /* strings point into the node */
uas_qualifiedname as_nv_browse_name(const as_nv *nv);
uas_localizedtext as_nv_display_name(const as_nv *nv);
size_t as_nv_ref_count(const as_nv *nv);
void as_nv_ref(const as_nv *nv, size_t i, as_refv *out);
/* The forward HasTypeDefinition target (null NodeId when none). */
uas_nodeid as_nv_type_definition(const as_nv *nv);
/* Variable attributes of either kind of node. */
uint8_t as_nv_access_level(const as_nv *nv);
int32_t as_nv_value_rank(const as_nv *nv);
uas_nodeid as_nv_data_type(const as_nv *nv);
/* The target of the first forward reference of type (or subtype) reftype
 * whose target has this browse name in namespace 0; both NULL when none. */
as_nv as_find_child(uas_aspace *as, const as_nv *nv, uint32_t reftype, const char *name);

/* The heap node of nv, creating the overlay of a static row if needed.
 * Caller holds the write lock. NULL: out of memory. */
as_node *as_overlay(uas_aspace *as, as_nv *nv);
/* The same from a service holding the read lock: the lock is upgraded
 * (released, write-locked, released, read-locked again). */
as_node *as_overlay_upgrade(uas_aspace *as, as_nv *nv);
/* Insert a new dynamic node (the caller checked the id is free); takes
 * ownership. Write lock. */
uas_status as_insert(uas_aspace *as, as_node *n);
/* Take an inserted node out of the map again (undo of a failed add). */
void as_unlink(uas_aspace *as, as_node *n);
/* Append a reference to a node (an overlay for static rows). Write lock. */
uas_status as_add_ref(uas_aspace *as, as_nv *nv, uint32_t type, const uas_expandednodeid *target,
                      bool forward);
bool as_has_ref(const as_nv *nv, uint32_t type, const uas_expandednodeid *target, bool forward);
/* The target of a stored reference (strings point into the reference). */
void as_ref_target(const as_ref *r, uas_expandednodeid *out);
/* Fill r with a copy of target. Good or BadOutOfMemory. */
uas_status as_ref_set(as_ref *r, uint32_t type, const uas_expandednodeid *target, bool forward);
/* Is r's target the local node id. */
bool as_ref_to(const as_ref *r, const uas_nodeid *id);
/* Free what r owns. */
void as_ref_clear(as_ref *r);
/* Frees a published node after every reader of as moved on, an
 * unpublished one at once (as may then be NULL). */
void as_node_free(uas_aspace *as, as_node *n);
/* A DisplayName whose text is the BrowseName's, without a locale, is
 * dropped: the node shows the BrowseName's text (nearly every node of a
 * model). The DisplayName of a heap node is never replaced afterwards. */
void as_node_share_dn(as_node *n);
/* The type attributes of d (ReferenceTypes, DataTypes: their class part),
 * NULL for other classes. */
static inline as_typex *as_node_typex(as_node *d)
{
    return d && (d->node_class == UAS_NODE_CLASS_REFERENCE_TYPE ||
                 d->node_class == UAS_NODE_CLASS_DATA_TYPE)
               ? (as_typex *)(void *)((char *)d + sizeof(as_node))
               : NULL;
}
static inline const uas_variant *as_definition(const as_node *d)
{
    static const uas_variant none;
    const as_typex *tx = as_node_typex((as_node *)(uintptr_t)d);
    return tx ? &tx->definition : &none;
}
static inline uas_localizedtext as_inverse_name(const as_node *d)
{
    static const uas_localizedtext none;
    const as_typex *tx = as_node_typex((as_node *)(uintptr_t)d);
    return tx ? tx->inverse_name : none;
}
static inline uas_localizedtext as_node_dn(const as_node *d)
{
    if (d->display_name)
        return *d->display_name;
    uas_localizedtext t = {{0, NULL}, d->browse_name.name};
    return t;
}
static inline uas_localizedtext as_node_desc(const as_node *d)
{
    static const uas_localizedtext none;
    return d->description ? *d->description : none;
}
/* Set d's DisplayName or Description (*slot) to a copy of t. Good or
 * BadOutOfMemory. */
uas_status as_node_set_text(uas_localizedtext **slot, const uas_localizedtext *t);
/* The lock that orders the writers of d's value (struct uas_aspace's
 * vlocks). */
static inline pthread_mutex_t *as_value_lock(uas_aspace *as, const as_node *d)
{
    return &as->vlocks[((uintptr_t)d >> 6) % AS_VLOCKS];
}
/* Frees a replaced as_dsrc (as_rcu_retire). */
void as_dsrc_free_rcu(as_rcu_item *it);

/* Reference types: is the id a ReferenceType; is sub a subtype of super
 * (or equal). Lock-free (the closure is built at creation). */
bool as_is_reftype(const uas_aspace *as, const uas_nodeid *id);
bool as_reftype_sub(const uas_aspace *as, uint32_t sub, uint32_t super);
/* Type hierarchy of namespace 0 (DataTypes, ObjectTypes, VariableTypes),
 * walking HasSubtype upwards. */
bool as_ns0_is_subtype(uint32_t sub, uint32_t super);
/* Is ns a namespace index the server knows. */
bool as_ns_known(uas_aspace *as, uint16_t ns);

/* The closure of the static ReferenceTypes (ids below AS_DYN_REFTYPE). */
bool as_reftype_sub_static(const uas_aspace *as, uint32_t sub, uint32_t super);
/* Frees the dynamic reference types and the graveyard (aspace delete). */
void as_dyn_free(uas_aspace *as);
/* Dynamic ReferenceTypes (aspace_dyn.c). The uint32 id of a reference type
 * NodeId (static or dynamic); false when it is none. Read lock. */
bool as_reftype_id(const uas_aspace *as, const uas_nodeid *id, uint32_t *out);
/* The NodeId of a uint32 reference type id (strings point into the
 * aspace). */
uas_nodeid as_reftype_nodeid(const uas_aspace *as, uint32_t type);
/* Register a ReferenceType node with the id of its supertype. Write lock.
 * Good or BadOutOfMemory; *out: its uint32 id. */
uas_status as_dyn_reftype_add(uas_aspace *as, const uas_nodeid *id, uint32_t super, uint32_t *out);
/* Forget the last count registered (undo of a failed load). */
void as_dyn_reftype_truncate(uas_aspace *as, size_t count);
/* The ns0 DataType a DataType derives from, walking HasSubtype up through
 * heap nodes; 0 when it reaches none. Read lock. */
uint32_t as_ns0_ancestor(uas_aspace *as, const uas_nodeid *type);
/* as_check_value for DataTypes of any namespace. */
uas_status as_check_value_any(uas_aspace *as, const uas_nodeid *data_type, int32_t value_rank,
                              const uas_variant *v);
/* A structure value of a loaded model's DataType (an ExtensionObject with
 * a binary body) decoded against the type's DataTypeDefinition, the
 * run-time type descriptor (nodeset_types.c): its Default Binary encoding
 * id and a body that decodes completely. Good (also for DataTypes without
 * a loaded definition) or BadTypeMismatch. Read lock. */
uas_status as_rt_check(uas_aspace *as, const uas_nodeid *data_type, const uas_extensionobject *x);
/* Take a heap node out of the map onto the graveyard. Write lock. */
void as_bury(uas_aspace *as, as_node *n);
/* Remove the references of nv of this type and direction to target that
 * were added at run time (static rows' references cannot be removed; the
 * caller refuses those). *found: whether one was. Write lock. Good or
 * BadOutOfMemory. */
uas_status as_remove_ref(uas_aspace *as, as_nv *nv, uint32_t type, const uas_expandednodeid *target,
                         bool forward, bool *found);

/* The lock held by services; dropped around user callbacks (lockdef.h). */
static inline void as_rdlock(uas_aspace *as)
{
    UAS_RWLOCK_RD(&as->lock);
}
static inline void as_wrlock(uas_aspace *as)
{
    UAS_RWLOCK_WR(&as->lock);
}
static inline void as_unlock(uas_aspace *as)
{
    UAS_RWUNLOCK(&as->lock);
}

/* ---- nodes_api.c, shared with nodes_types.c (write lock held) ---- */

/* A free id, a known parent, a concrete hierarchical ReferenceType from
 * it, a BrowseName: Good or the AddNodes status (*pnv: the parent). */
uas_status as_check_common(uas_aspace *as, const uas_nodeid *id, const uas_nodeid *parent,
                           const uas_nodeid *reftype, const uas_qualifiedname *bn, as_nv *pnv);
/* An unlinked node with its base attributes (DisplayName defaults to the
 * BrowseName's text). NULL: out of memory. */
as_node *as_node_new(const uas_nodeid *id, uint8_t cls, const uas_qualifiedname *bn,
                     const uas_localizedtext *dn, const uas_localizedtext *desc);
/* Value, DataType, ValueRank, ArrayDimensions and the other attributes
 * of a variable from a (DataType and value checked). */
uas_status as_variable_attrs(uas_aspace *as, as_node *n, const uas_variable_attributes *a);
/* Link n below the parent (both directions, plus HasTypeDefinition td
 * when not NULL); on failure n is freed. */
uas_status as_add_built(uas_aspace *as, as_node *n, as_nv *pnv, const uas_nodeid *parent,
                        const uas_nodeid *reftype, const uas_nodeid *td);

/* ---- nodes_types.c: type and view nodes of AddNodes ---- */

/* Add an ObjectType, VariableType, DataType, ReferenceType (below its
 * supertype by HasSubtype) or View (below any node by a hierarchical
 * reference) from its attributes (the class's structure, or
 * GenericAttributes for a DataType with a DataTypeDefinition). Takes the
 * write lock. The AddNodes status codes. */
uas_status as_add_type_node(uas_aspace *as, uint8_t cls, const uas_nodeid *id,
                            const uas_nodeid *parent, const uas_nodeid *reftype,
                            const uas_qualifiedname *bn, const uas_extensionobject *attrs);
/* Does a forward hierarchical reference of the parent lead to a node with
 * this BrowseName (BadBrowseNameDuplicated). Read lock. */
bool as_child_named(uas_aspace *as, const as_nv *parent, const uas_qualifiedname *bn);

/* ---- aspace_attr.c: attributes and values ---- */

typedef struct as_range as_range;
/* The Value of a variable or variable type, cut by range, into dv (memory
 * from arena) with its status and both timestamps. Calls the data source
 * with the structure lock dropped and retaken. Caller holds the read lock.
 * Good or the status of the whole operation (BadIndexRangeNoData, the data
 * source's Bad status, BadOutOfMemory). */
uas_status as_read_value(uas_aspace *as, const as_nv *nv, const as_range *range, uas_datavalue *dv,
                         uas_arena *arena);
/* The same; locked false: the caller holds no structure lock but is a
 * lock-free reader (a loop iteration or as_rcu_enter), as the Read service
 * is. */
uas_status as_read_value_ex(uas_aspace *as, const as_nv *nv, const as_range *range,
                            uas_datavalue *dv, uas_arena *arena, bool locked);
/* Any other attribute into v; BadAttributeIdInvalid when the class does
 * not have it. The user attributes (UserAccessLevel, UserExecutable,
 * UserWriteMask, UserRolePermissions) are those of roles, whose
 * permissions on the node are perms (authz_node.h). */
uas_status as_read_attr(uas_aspace *as, const as_nv *nv, uint32_t attr, uint32_t roles,
                        uint32_t perms, uas_variant *v, uas_arena *arena);
/* Does a node of this class have this attribute. */
bool as_class_has_attr(uint8_t node_class, uint32_t attr);
/* Can a value be stored in a variable of this DataType and ValueRank:
 * Good or BadTypeMismatch. */
uas_status as_check_value(const uas_nodeid *data_type, int32_t value_rank, const uas_variant *v);
/* Replace the stored value by *v (heap-owned; taken over, *v is zeroed):
 * publishes a new snapshot (as_vsnap) under the node's value lock, hands
 * it to the value hook there (in write order), and retires the old one.
 * Without a value hook the change hook is called with the structure lock
 * dropped. Caller holds the read lock. source_ts 0: now. Good or
 * BadOutOfMemory (*v is freed). */
uas_status as_swap_value(uas_aspace *as, as_node *d, uas_variant *v, uas_status status,
                         uas_datetime source_ts, uas_datetime now);
/* Give d, not yet published, the value it is created with (taken over, *v
 * is zeroed), Good, both timestamps now. Good or BadOutOfMemory (*v is
 * freed). */
uas_status as_init_value(as_node *d, uas_variant *v, uas_datetime now);
/* The same with a deep copy of v. Good or BadOutOfMemory. */
uas_status as_store_value(uas_aspace *as, as_node *d, const uas_variant *v, uas_status status,
                          uas_datetime source_ts, uas_datetime now);

/* ---- numrange.c: NumericRange (Part 4, 7.27) ---- */

#define AS_RANGE_MAX_DIMS 8
struct as_range {
    size_t dims;
    uint32_t min[AS_RANGE_MAX_DIMS];
    uint32_t max[AS_RANGE_MAX_DIMS];
};

/* Good or BadIndexRangeInvalid. A null or empty string gives dims 0. */
uas_status as_range_parse(const uas_string *s, as_range *r);
/* dst = the part of src the range selects, allocated from arena (elements
 * deep-copied when deep, otherwise referencing src's memory). Good,
 * BadIndexRangeNoData, BadIndexRangeInvalid, BadOutOfMemory. */
uas_status as_range_read(const uas_variant *src, const as_range *r, uas_variant *dst,
                         uas_arena *arena, bool deep);
/* A heap copy of cur with the range replaced by v. Good,
 * BadIndexRangeNoData, BadIndexRangeDataMismatch (v does not fit the
 * range), BadTypeMismatch, BadWriteNotSupported (multi-dimensional),
 * BadOutOfMemory. */
uas_status as_range_write(const uas_variant *cur, const as_range *r, const uas_variant *v,
                          uas_variant *out);

/* ---- svc_browse.c shared with svc_translate.c ---- */

/* Does a reference pass a type filter (null type: every reference). */
bool as_ref_matches(const uas_aspace *as, uint32_t ref_type, const uas_nodeid *filter,
                    bool include_subtypes);

#endif
