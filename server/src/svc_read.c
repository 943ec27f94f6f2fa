/* Read (Part 4, 5.10.2) and HistoryRead (5.10.3, answered as unsupported).
 *
 * Read takes no lock (aspace_rcu.h): on a loop it reads between two
 * quiescent points of that loop, elsewhere inside as_rcu_enter/exit.
 * Results live in the request arena. A Read of a stored scalar allocates
 * nothing on the heap: the value is copied from the node's seqlocked copy
 * or its published snapshot into the arena. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

static bool has_encoding(const uas_qualifiedname *q)
{
    return q->ns != 0 || (q->name.data && q->name.length > 0);
}

/* Part 4, 7.29: a data encoding applies only to Values of structure
 * DataTypes, and only "Default Binary" is served. */
static uas_status check_encoding(const as_nv *nv, uint32_t attr, const uas_qualifiedname *q)
{
    if (attr != AS_ATTR_VALUE)
        return UAS_BAD_DATA_ENCODING_INVALID;
    uas_nodeid dt = as_nv_data_type(nv);
    if (dt.ns != 0 || dt.kind != UAS_NODEID_NUMERIC ||
        !(as_ns0_is_subtype(dt.id.numeric, UAS_NS0ID_STRUCTURE) ||
          dt.id.numeric == UAS_NS0ID_BASEDATATYPE))
        return UAS_BAD_DATA_ENCODING_INVALID;
    if (q->ns != 0 || !uas_string_eq_cstr(&q->name, "Default Binary"))
        return UAS_BAD_DATA_ENCODING_UNSUPPORTED;
    return UAS_GOOD;
}

static bool is_structure(const uas_variant *v)
{
    return v->type &&
           (v->type->kind == UAS_KIND_STRUCT || v->type->kind == UAS_BUILTIN_EXTENSIONOBJECT);
}

static void fail(uas_datavalue *out, uas_status st)
{
    memset(out, 0, sizeof(*out));
    out->status = st;
    out->has_status = true;
}

/* One ReadValueId for a session of these roles; caller is a lock-free
 * reader. A Bad return is the operation's status (the caller clears out). */
static uas_status read_item(uas_aspace *as, const uas_read_value_id *rv, uint32_t roles,
                            uas_timestamps_to_return ttr, uas_datetime now, uas_datavalue *out,
                            uas_arena *arena)
{
    memset(out, 0, sizeof(*out));
    as_nv nv = as_lookup(as, &rv->node_id);
    if (!as_nv_found(&nv))
        return UAS_BAD_NODE_ID_UNKNOWN;
    uint8_t nc = as_nv_class(&nv);
    uint32_t attr = rv->attribute_id;
    if (!as_class_has_attr(nc, attr))
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    as_range range;
    AS_TRY(as_range_parse(&rv->index_range, &range));
    bool encoding = has_encoding(&rv->data_encoding);
    if (encoding)
        AS_TRY(check_encoding(&nv, attr, &rv->data_encoding));
    uint32_t perms = as_perms(as, &nv, roles);

    if (attr == AS_ATTR_VALUE) {
        uint8_t access = as_nv_access_level(&nv);
        if (!nv.s)
            access &= as_var_of(nv.d)->user_access_level;
        if (nc == UAS_NODE_CLASS_VARIABLE && !(access & UAS_ACCESS_LEVEL_TYPE_CURRENT_READ))
            return UAS_BAD_NOT_READABLE;
        if (!(perms & UAS_PERMISSION_TYPE_READ))
            return UAS_BAD_USER_ACCESS_DENIED;
        AS_TRY(as_read_value_ex(as, &nv, &range, out, arena, false));
        if (encoding && !is_structure(&out->value))
            return UAS_BAD_DATA_ENCODING_INVALID;
    } else {
        if (!(perms & as_read_needs(attr, false)))
            return UAS_BAD_USER_ACCESS_DENIED;
        uas_variant v;
        uas_status st = as_read_attr(as, &nv, attr, roles, perms, &v, arena);
        if (st == UAS_GOOD && range.dims)
            st = as_range_read(&v, &range, &out->value, arena, false);
        else
            out->value = v;
        if (st != UAS_GOOD)
            return st;
        out->has_value = true;
    }

    /* Source timestamps belong to Values only; the server timestamp is the
     * time of this read. */
    bool src = attr == AS_ATTR_VALUE &&
               (ttr == UAS_TIMESTAMPS_TO_RETURN_SOURCE || ttr == UAS_TIMESTAMPS_TO_RETURN_BOTH);
    bool srv = ttr == UAS_TIMESTAMPS_TO_RETURN_SERVER || ttr == UAS_TIMESTAMPS_TO_RETURN_BOTH;
    if (src && !out->has_source_timestamp) {
        out->source_timestamp = now;
        out->has_source_timestamp = true;
    }
    out->has_source_timestamp = src;
    if (!src)
        out->source_timestamp = 0;
    out->has_source_picoseconds = src && out->has_source_picoseconds;
    out->server_timestamp = srv ? now : 0;
    out->has_server_timestamp = srv;
    out->server_picoseconds = 0;
    out->has_server_picoseconds = false;
    out->has_status = out->status != UAS_GOOD;
    return UAS_GOOD;
}

static void read_one(uas_aspace *as, const uas_read_value_id *rv, uint32_t roles,
                     uas_timestamps_to_return ttr, uas_datetime now, uas_datavalue *out,
                     uas_arena *arena)
{
    uas_status st = read_item(as, rv, roles, ttr, now, out, arena);
    if (st != UAS_GOOD)
        fail(out, st);
}

void uas_aspace_read(uas_aspace *as, const uas_read_value_id *rv, uas_timestamps_to_return ttr,
                     uas_datetime now, uas_datavalue *out, uas_arena *arena)
{
    int tok = as_rcu_enter(&as->rcu);
    read_one(as, rv, UAS_ROLES_INTERNAL, ttr, now, out, arena);
    as_rcu_exit(&as->rcu, tok);
}

void uas_svc_read(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_read_request *rq = req;
    uas_read_response *rs = resp;
    uas_server *s = ctx->server;
    uas_status st = UAS_GOOD;
    if (rq->nodes_to_read_count == 0)
        st = UAS_BAD_NOTHING_TO_DO;
    else if (s->cfg.max_nodes_per_read && rq->nodes_to_read_count > s->cfg.max_nodes_per_read)
        st = UAS_BAD_TOO_MANY_OPERATIONS;
    else if (rq->max_age < 0)
        st = UAS_BAD_MAX_AGE_INVALID;
    else if (rq->timestamps_to_return < UAS_TIMESTAMPS_TO_RETURN_SOURCE ||
             rq->timestamps_to_return > UAS_TIMESTAMPS_TO_RETURN_NEITHER)
        st = UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID;
    if (st != UAS_GOOD) {
        rs->response_header.service_result = st;
        return;
    }
    size_t n = rq->nodes_to_read_count;
    rs->results = uas_arena_alloc(ctx->arena, n * sizeof(uas_datavalue));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    uas_aspace *as = s->as;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    int tok = as_rcu_enter(&as->rcu);
    for (size_t i = 0; i < n; i++)
        read_one(as, &rq->nodes_to_read[i], roles, rq->timestamps_to_return, ctx->now,
                 &rs->results[i], ctx->arena);
    as_rcu_exit(&as->rcu, tok);
}

/* No node keeps history (Historizing is false everywhere and AccessLevel
 * never has HistoryRead), so every item answers
 * BadHistoryOperationUnsupported; nodes that do not exist say so, and so
 * do nodes whose history the session may not read (ReadHistory). */
void uas_svc_history_read(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_history_read_request *rq = req;
    uas_history_read_response *rs = resp;
    uas_server *s = ctx->server;
    if (rq->timestamps_to_return < UAS_TIMESTAMPS_TO_RETURN_SOURCE ||
        rq->timestamps_to_return > UAS_TIMESTAMPS_TO_RETURN_NEITHER) {
        rs->response_header.service_result = UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID;
        return;
    }
    if (rq->history_read_details.encoding != UAS_EXTOBJ_DECODED &&
        !rq->release_continuation_points) {
        rs->response_header.service_result = UAS_BAD_HISTORY_OPERATION_INVALID;
        return;
    }
    if (rq->nodes_to_read_count == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_read && rq->nodes_to_read_count > s->cfg.max_nodes_per_read) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    size_t n = rq->nodes_to_read_count;
    rs->results = uas_arena_calloc(ctx->arena, n, sizeof(uas_history_read_result));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    uas_aspace *as = s->as;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    as_rdlock(as);
    for (size_t i = 0; i < n; i++) {
        as_nv nv = as_lookup(as, &rq->nodes_to_read[i].node_id);
        uas_status st = UAS_BAD_NODE_ID_UNKNOWN;
        if (as_nv_found(&nv))
            st = as_perms(as, &nv, roles) & UAS_PERMISSION_TYPE_READ_HISTORY
                     ? UAS_BAD_HISTORY_OPERATION_UNSUPPORTED
                     : UAS_BAD_USER_ACCESS_DENIED;
        rs->results[i].status_code = st;
    }
    as_unlock(as);
}
