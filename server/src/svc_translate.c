/* TranslateBrowsePathsToNodeIds (Part 4, 5.8.4): follow a RelativePath of
 * (reference type, direction, target BrowseName) elements from a starting
 * node, breadth first, keeping every node that matches at each step.
 *
 * A reference to a node in another server ends that branch: its target is
 * returned with remainingPathIndex = the element whose BrowseName could not
 * be checked here, and the result is UncertainReferenceOutOfServer when no
 * local node matched the whole path.
 *
 * Authorization, as Browse: the starting node needs the Browse permission
 * (BadUserAccessDenied), and a node the session may not browse is no match
 * and no step, so a path never reveals a node Browse would hide. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

/* Nodes in flight at one step; beyond this the path is refused. */
#define MAX_MATCHES 10000

typedef struct node_set {
    uas_expandednodeid *ids; /* arena; strings point into nodes */
    uint32_t *remaining;     /* remainingPathIndex (targets only) */
    size_t count, cap;
} node_set;

static bool set_has(const node_set *s, const uas_expandednodeid *id)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->ids[i].server_index == id->server_index &&
            as_nodeid_eq(&s->ids[i].nodeid, &id->nodeid))
            return true;
    return false;
}

static uas_status set_add(node_set *s, const uas_expandednodeid *id, uint32_t remaining,
                          uas_arena *arena)
{
    if (set_has(s, id))
        return UAS_GOOD;
    if (s->count == MAX_MATCHES)
        return UAS_BAD_TOO_MANY_MATCHES;
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        uas_expandednodeid *ids = uas_arena_alloc(arena, cap * sizeof(*ids));
        uint32_t *rem = uas_arena_alloc(arena, cap * sizeof(*rem));
        if (!ids || !rem)
            return UAS_BAD_OUT_OF_MEMORY;
        if (s->count) {
            memcpy(ids, s->ids, s->count * sizeof(*ids));
            memcpy(rem, s->remaining, s->count * sizeof(*rem));
        }
        s->ids = ids;
        s->remaining = rem;
        s->cap = cap;
    }
    s->ids[s->count] = *id;
    s->remaining[s->count] = remaining;
    s->count++;
    return UAS_GOOD;
}

static bool qn_eq(const uas_qualifiedname *a, const uas_qualifiedname *b)
{
    size_t na = a->name.data ? a->name.length : 0, nb = b->name.data ? b->name.length : 0;
    return a->ns == b->ns && na == nb && (na == 0 || memcmp(a->name.data, b->name.data, na) == 0);
}

/* One element from every node of cur into next (local matches) and ext
 * (targets in other servers). */
static uas_status step(uas_aspace *as, const node_set *cur, const uas_relative_path_element *el,
                       uint32_t index, uint32_t roles, node_set *next, node_set *ext,
                       uas_arena *arena)
{
    for (size_t k = 0; k < cur->count; k++) {
        as_nv nv = as_lookup(as, &cur->ids[k].nodeid);
        size_t n = as_nv_ref_count(&nv);
        for (size_t i = 0; i < n; i++) {
            as_refv r;
            as_nv_ref(&nv, i, &r);
            if (r.forward == el->is_inverse ||
                !as_ref_matches(as, r.type, &el->reference_type_id, el->include_subtypes))
                continue;
            if (r.target.server_index != 0 || r.target.namespace_uri.data) {
                AS_TRY(set_add(ext, &r.target, index, arena));
                continue;
            }
            as_nv t = as_lookup(as, &r.target.nodeid);
            if (!as_nv_found(&t) || !(as_perms(as, &t, roles) & UAS_PERMISSION_TYPE_BROWSE))
                continue;
            uas_qualifiedname q = as_nv_browse_name(&t);
            if (qn_eq(&q, &el->target_name))
                AS_TRY(set_add(next, &r.target, UINT32_MAX, arena));
        }
    }
    return UAS_GOOD;
}

static uas_status translate_one(uas_aspace *as, const uas_browse_path *bp, uint32_t roles,
                                uas_browse_path_result *res, uas_arena *arena)
{
    const uas_relative_path *rp = &bp->relative_path;
    if (rp->elements_count == 0)
        return UAS_BAD_NOTHING_TO_DO;
    for (size_t i = 0; i < rp->elements_count; i++) {
        const uas_string *name = &rp->elements[i].target_name.name;
        if (!name->data || name->length == 0)
            return UAS_BAD_BROWSE_NAME_INVALID;
    }
    as_nv start = as_lookup(as, &bp->starting_node);
    if (!as_nv_found(&start))
        return UAS_BAD_NODE_ID_UNKNOWN;
    if (!(as_perms(as, &start, roles) & UAS_PERMISSION_TYPE_BROWSE))
        return UAS_BAD_USER_ACCESS_DENIED;
    node_set cur = {0}, ext = {0};
    uas_expandednodeid first;
    memset(&first, 0, sizeof(first));
    first.nodeid = as_nv_id(&start);
    AS_TRY(set_add(&cur, &first, UINT32_MAX, arena));
    for (size_t i = 0; i < rp->elements_count && cur.count; i++) {
        node_set next = {0};
        AS_TRY(step(as, &cur, &rp->elements[i], (uint32_t)i, roles, &next, &ext, arena));
        cur = next;
    }
    /* cur now holds the nodes that matched every element. */
    for (size_t i = 0; i < ext.count; i++)
        AS_TRY(set_add(&cur, &ext.ids[i], ext.remaining[i], arena));
    if (cur.count == 0)
        return UAS_BAD_NO_MATCH;
    res->targets = uas_arena_alloc(arena, cur.count * sizeof(uas_browse_path_target));
    if (!res->targets)
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; i < cur.count; i++) {
        res->targets[i].target_id = cur.ids[i];
        res->targets[i].remaining_path_index = cur.remaining[i];
    }
    res->targets_count = cur.count;
    return cur.count == ext.count ? UAS_UNCERTAIN_REFERENCE_OUT_OF_SERVER : UAS_GOOD;
}

void uas_svc_translate(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_translate_browse_paths_to_node_ids_request *rq = req;
    uas_translate_browse_paths_to_node_ids_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->browse_paths_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_translate && n > s->cfg.max_nodes_per_translate) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    rs->results = uas_arena_calloc(ctx->arena, n, sizeof(uas_browse_path_result));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    as_rdlock(s->as);
    for (size_t i = 0; i < n; i++) {
        uas_browse_path_result *r = &rs->results[i];
        r->status_code = translate_one(s->as, &rq->browse_paths[i], roles, r, ctx->arena);
        if (uas_is_bad(r->status_code)) {
            r->targets = NULL;
            r->targets_count = 0;
        }
    }
    as_unlock(s->as);
}
