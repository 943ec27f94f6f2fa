/* Browse and BrowseNext (Part 4, 5.8.2-5.8.3), RegisterNodes and
 * UnregisterNodes (5.8.5-5.8.6).
 *
 * A continuation point remembers the node id (a heap copy), the filter and
 * the index of the next reference, never a pointer into the store: a node's
 * references are only ever appended, so the index stays meaningful while
 * other threads add nodes and references. Continuation points belong to
 * the session (se->view_state); its requests are serialised by the session
 * lock, so they need no lock of their own.
 *
 * Authorization: browsing a node needs the Browse permission on it
 * (BadUserAccessDenied), and references to nodes of this server the
 * session may not browse are left out of the result, so a session only
 * learns of nodes it may see. BrowseNext judges with the roles the session
 * has then (a re-activation may have changed them). */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

typedef struct as_filter {
    uas_nodeid ref_type; /* ns0 numeric or null */
    bool include_subtypes;
    uint8_t direction;
    uint32_t node_class_mask;
    uint32_t result_mask;
} as_filter;

typedef struct as_cp {
    uint64_t id;
    uas_nodeid node; /* heap-owned */
    as_filter f;
    uint32_t max;  /* references per answer, 0: unlimited */
    size_t offset; /* next reference index to look at */
} as_cp;

typedef struct as_view_state {
    as_cp *cps;
    size_t count;
    size_t cap;
    uint64_t next_id;
} as_view_state;

/* ---- continuation points ---- */

static void cp_free(as_cp *cp)
{
    uas_clear(&cp->node, UAS_TYPE(NODE_ID));
}

void uas_view_session_release(uas_session *se)
{
    as_view_state *vs = se->view_state;
    if (!vs)
        return;
    for (size_t i = 0; i < vs->count; i++)
        cp_free(&vs->cps[i]);
    uas_free(vs->cps, vs->cap * sizeof(as_cp));
    uas_free(vs, sizeof(*vs));
    se->view_state = NULL;
}

static as_cp *cp_find(uas_session *se, const uas_bytestring *b)
{
    as_view_state *vs = se ? se->view_state : NULL;
    if (!vs || !b->data || b->length != sizeof(uint64_t))
        return NULL;
    uint64_t id;
    memcpy(&id, b->data, sizeof(id));
    for (size_t i = 0; i < vs->count; i++)
        if (vs->cps[i].id == id)
            return &vs->cps[i];
    return NULL;
}

static void cp_remove(uas_session *se, as_cp *cp)
{
    as_view_state *vs = se->view_state;
    cp_free(cp);
    *cp = vs->cps[--vs->count];
}

/* A new continuation point, or NULL when the session has used its quota
 * (or there is no session) or memory ran out. */
static as_cp *cp_new(uas_request_ctx *ctx, const uas_nodeid *node)
{
    uas_session *se = ctx->session;
    uint32_t limit = ctx->server->cfg.max_browse_continuation_points;
    if (!se || limit == 0)
        return NULL;
    as_view_state *vs = se->view_state;
    if (!vs) {
        vs = uas_calloc(1, sizeof(*vs));
        if (!vs)
            return NULL;
        /* Not a secret (they are per session), just not trivially reused. */
        vs->next_id = (uint64_t)ctx->now * 2654435761u + 1;
        se->view_state = vs;
    }
    if (vs->count >= limit)
        return NULL;
    if (vs->count == vs->cap) {
        size_t cap = vs->cap ? vs->cap * 2 : 4;
        as_cp *cps = uas_realloc(vs->cps, vs->cap * sizeof(as_cp), cap * sizeof(as_cp));
        if (!cps)
            return NULL;
        vs->cps = cps;
        vs->cap = cap;
    }
    as_cp *cp = &vs->cps[vs->count];
    memset(cp, 0, sizeof(*cp));
    if (uas_copy(node, &cp->node, UAS_TYPE(NODE_ID)) != UAS_GOOD)
        return NULL;
    cp->id = vs->next_id++;
    vs->count++;
    return cp;
}

static uas_status cp_bytes(const as_cp *cp, uas_bytestring *out, uas_arena *arena)
{
    out->data = uas_arena_alloc(arena, sizeof(cp->id));
    if (!out->data)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(out->data, &cp->id, sizeof(cp->id));
    out->length = sizeof(cp->id);
    return UAS_GOOD;
}

/* ---- browsing one node ---- */

/* Fill rd for a reference that passes the filter; false when it does not. */
static bool describe(uas_aspace *as, const as_filter *f, uint32_t roles, const as_refv *r,
                     uas_reference_description *rd)
{
    if (f->direction == UAS_BROWSE_DIRECTION_FORWARD && !r->forward)
        return false;
    if (f->direction == UAS_BROWSE_DIRECTION_INVERSE && r->forward)
        return false;
    if (!as_ref_matches(as, r->type, &f->ref_type, f->include_subtypes))
        return false;
    as_nv t = {NULL, NULL};
    if (r->target.server_index == 0 && !r->target.namespace_uri.data)
        t = as_lookup(as, &r->target.nodeid);
    if (as_nv_found(&t) && !(as_perms(as, &t, roles) & UAS_PERMISSION_TYPE_BROWSE))
        return false;
    uint8_t nc = as_nv_found(&t) ? as_nv_class(&t) : 0;
    if (f->node_class_mask && !(nc & f->node_class_mask))
        return false;
    memset(rd, 0, sizeof(*rd));
    uint32_t m = f->result_mask;
    rd->node_id = r->target;
    if (m & UAS_BROWSE_RESULT_MASK_REFERENCE_TYPE_ID)
        rd->reference_type_id = as_reftype_nodeid(as, r->type);
    if (m & UAS_BROWSE_RESULT_MASK_IS_FORWARD)
        rd->is_forward = r->forward;
    if (!as_nv_found(&t))
        return true; /* elsewhere: only what the reference itself says */
    if (m & UAS_BROWSE_RESULT_MASK_NODE_CLASS)
        rd->node_class = nc;
    if (m & UAS_BROWSE_RESULT_MASK_BROWSE_NAME)
        rd->browse_name = as_nv_browse_name(&t);
    if (m & UAS_BROWSE_RESULT_MASK_DISPLAY_NAME)
        rd->display_name = as_nv_display_name(&t);
    if ((m & UAS_BROWSE_RESULT_MASK_TYPE_DEFINITION) &&
        (nc == UAS_NODE_CLASS_OBJECT || nc == UAS_NODE_CLASS_VARIABLE))
        rd->type_definition.nodeid = as_nv_type_definition(&t);
    return true;
}

/* References of nv from *offset on, at most max (0: all). On return
 * *offset is the index of the next matching reference, or SIZE_MAX when
 * there is none. Caller holds the read lock. */
static uas_status browse_refs(uas_aspace *as, const as_nv *nv, const as_filter *f, uint32_t roles,
                              uint32_t max, size_t *offset, uas_browse_result *br, uas_arena *arena)
{
    size_t n = as_nv_ref_count(nv), cap = 0, count = 0;
    uas_reference_description *out = UAS_EMPTY_ARRAY, rd;
    size_t i = *offset;
    *offset = SIZE_MAX;
    for (; i < n; i++) {
        as_refv r;
        as_nv_ref(nv, i, &r);
        if (!describe(as, f, roles, &r, &rd))
            continue;
        if (max && count == max) {
            *offset = i; /* one more exists: the next answer starts here */
            break;
        }
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            if (max && ncap > max)
                ncap = max;
            uas_reference_description *grown = uas_arena_alloc(arena, ncap * sizeof(rd));
            if (!grown)
                return UAS_BAD_OUT_OF_MEMORY;
            if (count)
                memcpy(grown, out, count * sizeof(rd));
            out = grown;
            cap = ncap;
        }
        out[count++] = rd;
    }
    br->references = out;
    br->references_count = count;
    return UAS_GOOD;
}

static uint32_t effective_max(const uas_server *s, uint32_t requested)
{
    uint32_t lim = s->cfg.max_references_per_node;
    if (requested == 0)
        return lim;
    return lim && lim < requested ? lim : requested;
}

static uas_status browse_one(uas_request_ctx *ctx, const uas_browse_description *bd, uint32_t max,
                             uas_browse_result *br)
{
    uas_aspace *as = ctx->server->as;
    if (bd->browse_direction < UAS_BROWSE_DIRECTION_FORWARD ||
        bd->browse_direction > UAS_BROWSE_DIRECTION_BOTH)
        return UAS_BAD_BROWSE_DIRECTION_INVALID;
    if (!as_nodeid_is_null(&bd->reference_type_id) && !as_is_reftype(as, &bd->reference_type_id))
        return UAS_BAD_REFERENCE_TYPE_ID_INVALID;
    as_nv nv = as_lookup(as, &bd->node_id);
    if (!as_nv_found(&nv))
        return UAS_BAD_NODE_ID_UNKNOWN;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    if (!(as_perms(as, &nv, roles) & UAS_PERMISSION_TYPE_BROWSE))
        return UAS_BAD_USER_ACCESS_DENIED;
    as_filter f = {
        .ref_type = uas_nodeid_numeric(0, 0),
        .include_subtypes = bd->include_subtypes,
        .direction = (uint8_t)bd->browse_direction,
        .node_class_mask = bd->node_class_mask,
        .result_mask = bd->result_mask,
    };
    uint32_t rt;
    if (!as_nodeid_is_null(&bd->reference_type_id) &&
        as_reftype_id(as, &bd->reference_type_id, &rt))
        f.ref_type = uas_nodeid_numeric(0, rt); /* the uint32 form: nothing to copy */
    size_t offset = 0;
    AS_TRY(browse_refs(as, &nv, &f, roles, max, &offset, br, ctx->arena));
    if (offset == SIZE_MAX)
        return UAS_GOOD;
    as_cp *cp = cp_new(ctx, &bd->node_id);
    if (!cp) {
        br->references = UAS_EMPTY_ARRAY;
        br->references_count = 0;
        return UAS_BAD_NO_CONTINUATION_POINTS;
    }
    cp->f = f;
    cp->max = max;
    cp->offset = offset;
    return cp_bytes(cp, &br->continuation_point, ctx->arena);
}

void uas_svc_browse(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_browse_request *rq = req;
    uas_browse_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->nodes_to_browse_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_browse && n > s->cfg.max_nodes_per_browse) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    if (!as_nodeid_is_null(&rq->view.view_id)) {
        rs->response_header.service_result = UAS_BAD_VIEW_ID_UNKNOWN;
        return;
    }
    rs->results = uas_arena_calloc(ctx->arena, n, sizeof(uas_browse_result));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    uint32_t max = effective_max(s, rq->requested_max_references_per_node);
    as_rdlock(s->as);
    for (size_t i = 0; i < n; i++)
        rs->results[i].status_code = browse_one(ctx, &rq->nodes_to_browse[i], max, &rs->results[i]);
    as_unlock(s->as);
}

static uas_status browse_next_one(uas_request_ctx *ctx, const uas_bytestring *b, bool release,
                                  uas_browse_result *br)
{
    as_cp *cp = cp_find(ctx->session, b);
    if (!cp)
        return UAS_BAD_CONTINUATION_POINT_INVALID;
    if (release) {
        cp_remove(ctx->session, cp);
        return UAS_GOOD;
    }
    uas_aspace *as = ctx->server->as;
    as_nv nv = as_lookup(as, &cp->node); /* nodes are never removed */
    size_t offset = cp->offset;
    uas_status st =
        browse_refs(as, &nv, &cp->f, uas_authz_ctx_roles(ctx), cp->max, &offset, br, ctx->arena);
    if (st != UAS_GOOD || offset == SIZE_MAX) {
        cp_remove(ctx->session, cp);
        return st;
    }
    cp->offset = offset;
    return cp_bytes(cp, &br->continuation_point, ctx->arena);
}

void uas_svc_browse_next(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_browse_next_request *rq = req;
    uas_browse_next_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->continuation_points_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_browse && n > s->cfg.max_nodes_per_browse) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    rs->results = uas_arena_calloc(ctx->arena, n, sizeof(uas_browse_result));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    as_rdlock(s->as);
    for (size_t i = 0; i < n; i++)
        rs->results[i].status_code = browse_next_one(
            ctx, &rq->continuation_points[i], rq->release_continuation_points, &rs->results[i]);
    as_unlock(s->as);
}

/* ---- RegisterNodes / UnregisterNodes ---- */

/* Registering changes nothing here: every NodeId is already as fast to
 * look up as it gets, so the same ids come back. */
void uas_svc_register_nodes(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_register_nodes_request *rq = req;
    uas_register_nodes_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->nodes_to_register_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_register && n > s->cfg.max_nodes_per_register) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    rs->registered_node_ids = uas_arena_alloc(ctx->arena, n * sizeof(uas_nodeid));
    if (!rs->registered_node_ids) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        /* The request may point into the receive buffer: copy. */
        if (uas_copy_arena(&rq->nodes_to_register[i], &rs->registered_node_ids[i],
                           UAS_TYPE(NODE_ID), ctx->arena) != UAS_GOOD) {
            rs->registered_node_ids = NULL;
            rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
            return;
        }
    }
    rs->registered_node_ids_count = n;
}

void uas_svc_unregister_nodes(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_unregister_nodes_request *rq = req;
    uas_unregister_nodes_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->nodes_to_unregister_count;
    if (n == 0)
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
    else if (s->cfg.max_nodes_per_register && n > s->cfg.max_nodes_per_register)
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
}
