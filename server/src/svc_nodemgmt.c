/* NodeManagement (Part 4, 5.7): AddNodes, AddReferences, DeleteNodes,
 * DeleteReferences.
 *
 * Who may: the permission each operation needs on the node it changes
 * (authz.h): AddNode on the parent, AddReference / RemoveReference on the
 * source, DeleteNode on the node. The built-in defaults grant those only
 * to ConfigureAdmin, so an anonymous session (or any user without a
 * configured role that grants them) gets BadUserAccessDenied.
 *
 * What changes: nodes and references of the heap store, under the address
 * space's write lock, through aspace functions (nodes_api.c for the add
 * checks and building, as_add_ref, as_remove_ref, as_bury). Deleted nodes
 * and removed reference targets are unlinked, not freed, while the server
 * runs (aspace_internal.h), so a request that looked them up before keeps
 * valid memory. After a delete the change hook runs for the node: its
 * monitored items sample it again and report BadNodeIdUnknown. Namespace 0
 * rows and their static references are not deletable (BadNoDeleteRights). */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

/* Common prologue: empty and too-large requests, result array. */
static void *results(uas_request_ctx *ctx, size_t n, size_t size, uas_response_header *h)
{
    uint32_t max = ctx->server->cfg.max_nodes_per_node_management;
    if (n == 0) {
        h->service_result = UAS_BAD_NOTHING_TO_DO;
        return NULL;
    }
    if (max && n > max) {
        h->service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return NULL;
    }
    void *r = uas_arena_calloc(ctx->arena, n, size);
    if (!r)
        h->service_result = UAS_BAD_OUT_OF_MEMORY;
    return r;
}

/* The session's permissions on a node (write or read lock held). */
static uint32_t perms_on(uas_request_ctx *ctx, const uas_nodeid *id, bool *found)
{
    as_nv nv = as_lookup(ctx->server->as, id);
    *found = as_nv_found(&nv);
    return *found ? as_perms(ctx->server->as, &nv, uas_authz_ctx_roles(ctx)) : 0;
}

static bool local(const uas_expandednodeid *x)
{
    return x->server_index == 0 && !x->namespace_uri.data;
}

/* ---- AddNodes ---- */

/* A node AddNodes added belongs to the NodeManagement store (when one is
 * configured), which is told to write. */
static void mark_persist(uas_server *s, const uas_nodeid *id)
{
    if (!s->store)
        return;
    as_wrlock(s->as);
    as_nv nv = as_lookup(s->as, id);
    if (nv.d)
        nv.d->persist = true;
    as_unlock(s->as);
    uas_nodeset_store_touch(s);
}

/* A free numeric id in namespace ns for a node the client left unnamed. */
static uas_nodeid fresh_id(uas_aspace *as, uint16_t ns)
{
    as_wrlock(as);
    uas_nodeid id;
    as_nv nv;
    do {
        id = uas_nodeid_numeric(ns, as->next_auto_id++);
        nv = as_lookup(as, &id);
    } while (as_nv_found(&nv));
    as_unlock(as);
    return id;
}

static uas_status add_one(uas_request_ctx *ctx, const uas_add_nodes_item *it, uas_nodeid *added)
{
    uas_server *s = ctx->server;
    if (!local(&it->parent_node_id))
        return UAS_BAD_PARENT_NODE_ID_INVALID;
    if (!local(&it->requested_new_node_id))
        return UAS_BAD_NODE_ID_REJECTED;
    if (!local(&it->type_definition))
        return UAS_BAD_TYPE_DEFINITION_INVALID;
    /* Reference types of other namespaces share numeric ids with namespace
     * 0's in the add functions: only namespace 0 ones here. */
    if (it->reference_type_id.ns != 0 || it->reference_type_id.kind != UAS_NODEID_NUMERIC)
        return UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    as_rdlock(s->as);
    bool found;
    uint32_t perms = perms_on(ctx, &it->parent_node_id.nodeid, &found);
    /* Part 4, 5.7.2: a BrowseName unique among the parent's children
     * (checked again under the write lock for type nodes; two Objects of
     * the same name added concurrently may both pass here). */
    as_nv pnv = as_lookup(s->as, &it->parent_node_id.nodeid);
    bool dup = found && as_child_named(s->as, &pnv, &it->browse_name);
    as_unlock(s->as);
    if (!found)
        return UAS_BAD_PARENT_NODE_ID_INVALID;
    AS_TRY(uas_authz_check(perms, UAS_PERMISSION_TYPE_ADD_NODE));
    if (dup)
        return UAS_BAD_BROWSE_NAME_DUPLICATED;
    const uas_extensionobject *a = &it->node_attributes;
    const uas_type *at = a->encoding == UAS_EXTOBJ_DECODED ? a->content.decoded.type : NULL;
    const void *attr = at ? a->content.decoded.data : NULL;
    if (a->encoding != UAS_EXTOBJ_EMPTY && !at)
        return UAS_BAD_NODE_ATTRIBUTES_INVALID;
    uas_nodeid id = it->requested_new_node_id.nodeid;
    if (as_nodeid_is_null(&id)) {
        uint16_t ns = it->parent_node_id.nodeid.ns ? it->parent_node_id.nodeid.ns : 1;
        id = fresh_id(s->as, ns);
    }
    const uas_nodeid *td = &it->type_definition.nodeid;
    uas_status st;
    switch (it->node_class) {
    case UAS_NODE_CLASS_OBJECT:
        if (at && at != UAS_TYPE(OBJECT_ATTRIBUTES))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        st = uas_server_add_object(s, &id, &it->parent_node_id.nodeid, &it->reference_type_id,
                                   &it->browse_name, td, attr);
        break;
    case UAS_NODE_CLASS_VARIABLE:
        if (at && at != UAS_TYPE(VARIABLE_ATTRIBUTES))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        st = uas_server_add_variable(s, &id, &it->parent_node_id.nodeid, &it->reference_type_id,
                                     &it->browse_name, td, attr);
        break;
    case UAS_NODE_CLASS_METHOD:
        if (at && at != UAS_TYPE(METHOD_ATTRIBUTES))
            return UAS_BAD_NODE_ATTRIBUTES_INVALID;
        if (!as_nodeid_is_null(td))
            return UAS_BAD_TYPE_DEFINITION_INVALID;
        /* No handler: Call answers BadNotImplemented until the program
         * binds one (uas_server_bind_method). */
        st = uas_server_add_method(s, &id, &it->parent_node_id.nodeid, &it->reference_type_id,
                                   &it->browse_name, attr, 0, NULL, 0, NULL, NULL, NULL);
        break;
    case UAS_NODE_CLASS_OBJECT_TYPE:
    case UAS_NODE_CLASS_VARIABLE_TYPE:
    case UAS_NODE_CLASS_DATA_TYPE:
    case UAS_NODE_CLASS_REFERENCE_TYPE:
    case UAS_NODE_CLASS_VIEW:
        if (!as_nodeid_is_null(td))
            return UAS_BAD_TYPE_DEFINITION_INVALID; /* types and views have none */
        st = as_add_type_node(s->as, (uint8_t)it->node_class, &id, &it->parent_node_id.nodeid,
                              &it->reference_type_id, &it->browse_name, a);
        break;
    default:
        return UAS_BAD_NODE_CLASS_INVALID;
    }
    if (st == UAS_GOOD) {
        *added = id; /* the request's memory lives as long as the response */
        mark_persist(s, &id);
    }
    return st;
}

void uas_svc_add_nodes(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_add_nodes_request *rq = req;
    uas_add_nodes_response *rs = resp;
    rs->results =
        results(ctx, rq->nodes_to_add_count, sizeof(uas_add_nodes_result), &rs->response_header);
    if (!rs->results)
        return;
    rs->results_count = rq->nodes_to_add_count;
    for (size_t i = 0; i < rq->nodes_to_add_count; i++)
        rs->results[i].status_code =
            add_one(ctx, &rq->nodes_to_add[i], &rs->results[i].added_node_id);
}

/* ---- AddReferences ---- */

static uas_status add_ref_one(uas_request_ctx *ctx, const uas_add_references_item *it)
{
    uas_aspace *as = ctx->server->as;
    as_wrlock(as);
    bool found;
    uint32_t perms = perms_on(ctx, &it->source_node_id, &found);
    uas_status st = UAS_GOOD;
    uint32_t type;
    as_nv src = as_lookup(as, &it->source_node_id);
    bool here = local(&it->target_node_id) &&
                (!it->target_server_uri.data || it->target_server_uri.length == 0);
    as_nv dst = here ? as_lookup(as, &it->target_node_id.nodeid) : (as_nv){NULL, NULL};
    if (!found)
        st = UAS_BAD_SOURCE_NODE_ID_INVALID;
    else if ((st = uas_authz_check(perms, UAS_PERMISSION_TYPE_ADD_REFERENCE)) != UAS_GOOD)
        ;
    else if (!as_reftype_id(as, &it->reference_type_id, &type))
        st = UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    else if (!here)
        st = UAS_BAD_REFERENCE_NOT_ALLOWED; /* other servers are not supported */
    else if (!as_nv_found(&dst))
        st = UAS_BAD_TARGET_NODE_ID_INVALID;
    else if (it->target_node_class && as_nv_class(&dst) != it->target_node_class)
        st = UAS_BAD_NODE_CLASS_INVALID;
    else if (as_has_ref(&src, type, &it->target_node_id, it->is_forward))
        st = UAS_BAD_DUPLICATE_REFERENCE_NOT_ALLOWED;
    if (st == UAS_GOOD)
        st = as_add_ref(as, &src, type, &it->target_node_id, it->is_forward);
    if (st == UAS_GOOD) {
        uas_expandednodeid back;
        memset(&back, 0, sizeof(back));
        back.nodeid = it->source_node_id;
        if (!as_has_ref(&dst, type, &back, !it->is_forward))
            st = as_add_ref(as, &dst, type, &back, !it->is_forward);
        if (st != UAS_GOOD) {
            bool gone;
            as_remove_ref(as, &src, type, &it->target_node_id, it->is_forward, &gone);
        }
    }
    as_unlock(as);
    return st;
}

void uas_svc_add_references(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_add_references_request *rq = req;
    uas_add_references_response *rs = resp;
    rs->results =
        results(ctx, rq->references_to_add_count, sizeof(uas_status), &rs->response_header);
    if (!rs->results)
        return;
    rs->results_count = rq->references_to_add_count;
    for (size_t i = 0; i < rq->references_to_add_count; i++)
        if ((rs->results[i] = add_ref_one(ctx, &rq->references_to_add[i])) == UAS_GOOD)
            uas_nodeset_store_touch(ctx->server);
}

/* ---- DeleteNodes ---- */

static uas_status delete_one(uas_request_ctx *ctx, const uas_delete_nodes_item *it)
{
    uas_aspace *as = ctx->server->as;
    as_wrlock(as);
    bool found;
    uint32_t perms = perms_on(ctx, &it->node_id, &found);
    as_nv nv = as_lookup(as, &it->node_id);
    uas_status st = UAS_GOOD;
    if (!found)
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if ((st = uas_authz_check(perms, UAS_PERMISSION_TYPE_DELETE_NODE)) != UAS_GOOD)
        ;
    else if (nv.s)
        st = UAS_BAD_NO_DELETE_RIGHTS; /* namespace 0's static rows */
    as_node *d = nv.d;
    /* Every reference is stored on both ends. The node's forward ones
     * (it is their source) go with it, their inverse entries on the
     * targets too. Its inverse ones are the references of other nodes that
     * point to it (they are the source): Part 4 (5.8.4) removes those only
     * for deleteTargetReferences. Left, they dangle: Browse reports them
     * without NodeClass or BrowseName, as for a node on another server,
     * and a node added later with the same id becomes their target. */
    for (uint32_t i = 0; st == UAS_GOOD && i < d->ref_count; i++) {
        const as_ref *r = &d->refs[i];
        uas_expandednodeid target;
        as_ref_target(r, &target);
        if (!local(&target) || (!r->forward && !it->delete_target_references))
            continue;
        as_nv t = as_lookup(as, &target.nodeid);
        if (!as_nv_found(&t) || t.d == d)
            continue;
        uas_expandednodeid me;
        memset(&me, 0, sizeof(me));
        me.nodeid = d->id;
        bool gone;
        st = as_remove_ref(as, &t, r->type, &me, !r->forward, &gone);
    }
    if (st == UAS_GOOD)
        as_bury(as, d);
    uas_aspace_change_fn hook = as->on_change;
    void *hook_ud = as->on_change_ud;
    as_unlock(as);
    /* Monitored items on the node sample it again: BadNodeIdUnknown. The
     * id stays valid (buried nodes are not freed). */
    if (st == UAS_GOOD && hook)
        hook(hook_ud, &d->id);
    return st;
}

void uas_svc_delete_nodes(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_delete_nodes_request *rq = req;
    uas_delete_nodes_response *rs = resp;
    rs->results = results(ctx, rq->nodes_to_delete_count, sizeof(uas_status), &rs->response_header);
    if (!rs->results)
        return;
    rs->results_count = rq->nodes_to_delete_count;
    for (size_t i = 0; i < rq->nodes_to_delete_count; i++)
        if ((rs->results[i] = delete_one(ctx, &rq->nodes_to_delete[i])) == UAS_GOOD)
            uas_nodeset_store_touch(ctx->server);
}

/* ---- DeleteReferences ---- */

static uas_status delete_ref_one(uas_request_ctx *ctx, const uas_delete_references_item *it)
{
    uas_aspace *as = ctx->server->as;
    as_wrlock(as);
    bool found;
    uint32_t perms = perms_on(ctx, &it->source_node_id, &found);
    as_nv src = as_lookup(as, &it->source_node_id);
    uint32_t type;
    uas_status st = UAS_GOOD;
    bool gone = false;
    if (!found)
        st = UAS_BAD_SOURCE_NODE_ID_INVALID;
    else if ((st = uas_authz_check(perms, UAS_PERMISSION_TYPE_REMOVE_REFERENCE)) != UAS_GOOD)
        ;
    else if (!as_reftype_id(as, &it->reference_type_id, &type))
        st = UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    else if (!local(&it->target_node_id))
        st = UAS_BAD_TARGET_NODE_ID_INVALID;
    if (st == UAS_GOOD)
        st = as_remove_ref(as, &src, type, &it->target_node_id, it->is_forward, &gone);
    if (st == UAS_GOOD && !gone)
        st = as_has_ref(&src, type, &it->target_node_id, it->is_forward)
                 ? UAS_BAD_NO_DELETE_RIGHTS /* a static reference of namespace 0 */
                 : UAS_BAD_NOT_FOUND;
    if (st == UAS_GOOD && it->delete_bidirectional) {
        as_nv dst = as_lookup(as, &it->target_node_id.nodeid);
        uas_expandednodeid back;
        memset(&back, 0, sizeof(back));
        back.nodeid = it->source_node_id;
        bool gone2;
        if (as_nv_found(&dst))
            st = as_remove_ref(as, &dst, type, &back, !it->is_forward, &gone2);
    }
    as_unlock(as);
    return st;
}

void uas_svc_delete_references(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_delete_references_request *rq = req;
    uas_delete_references_response *rs = resp;
    rs->results =
        results(ctx, rq->references_to_delete_count, sizeof(uas_status), &rs->response_header);
    if (!rs->results)
        return;
    rs->results_count = rq->references_to_delete_count;
    for (size_t i = 0; i < rq->references_to_delete_count; i++)
        if ((rs->results[i] = delete_ref_one(ctx, &rq->references_to_delete[i])) == UAS_GOOD)
            uas_nodeset_store_touch(ctx->server);
}
