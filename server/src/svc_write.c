/* Write (Part 4, 5.10.4): the Value attribute of variables whose
 * AccessLevel has CurrentWrite. Other attributes are not writable
 * (BadNotWritable; WriteMask is 0 on every node this server makes).
 *
 * The value must match the variable's DataType (a subtype, the builtin a
 * DataType is encoded as, Int32 for enumerations) and ValueRank. A status
 * code and a source timestamp in the written DataValue are kept; the
 * server timestamp is the time of the write. A write callback sees the
 * complete new value (for an index range: the merged array) before it is
 * stored and may reject it. A variable with a read callback but no write
 * callback is not writable (what would be stored would never be read).
 *
 * A writable variable is written only by a session with the Write
 * permission on it (authz.h): BadNotWritable says the node cannot be
 * written at all, BadUserAccessDenied that this session may not. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

/* Caller holds the read lock. */
static uas_status write_one(uas_aspace *as, const uas_write_value *wv, uint32_t roles,
                            uas_datetime now, uas_arena *arena)
{
    as_nv nv = as_lookup(as, &wv->node_id);
    if (!as_nv_found(&nv))
        return UAS_BAD_NODE_ID_UNKNOWN;
    uint8_t nc = as_nv_class(&nv);
    if (!as_class_has_attr(nc, wv->attribute_id))
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    if (wv->attribute_id != AS_ATTR_VALUE || nc != UAS_NODE_CLASS_VARIABLE)
        return UAS_BAD_NOT_WRITABLE;
    uint8_t access = as_nv_access_level(&nv);
    if (!nv.s)
        access &= as_var_of(nv.d)->user_access_level;
    if (!(access & UAS_ACCESS_LEVEL_TYPE_CURRENT_WRITE))
        return UAS_BAD_NOT_WRITABLE;
    if (!(as_perms(as, &nv, roles) & UAS_PERMISSION_TYPE_WRITE))
        return UAS_BAD_USER_ACCESS_DENIED;
    as_range range;
    AS_TRY(as_range_parse(&wv->index_range, &range));
    uas_variant empty;
    memset(&empty, 0, sizeof(empty));
    const uas_variant *v = wv->value.has_value ? &wv->value.value : &empty;
    uas_nodeid dt = as_nv_data_type(&nv);
    /* A range writes part of an array: the elements must fit the DataType;
     * as_range_write checks they match the current array. */
    AS_TRY(as_check_value_any(as, &dt, range.dims ? -2 : as_nv_value_rank(&nv), v));
    as_node *d = as_overlay_upgrade(as, &nv);
    if (!d)
        return UAS_BAD_OUT_OF_MEMORY;
    const as_dsrc *ds = as_node_dsrc(d);
    uas_read_fn dread = ds ? ds->read : NULL;
    uas_write_fn dwrite = ds ? ds->write : NULL;
    if (dread && !dwrite)
        return UAS_BAD_NOT_WRITABLE; /* a stored value would never be read back */
    uas_status status = wv->value.has_status ? wv->value.status : UAS_GOOD;
    uas_datetime src = wv->value.has_source_timestamp ? wv->value.source_timestamp : now;

    uas_variant merged;
    memset(&merged, 0, sizeof(merged));
    if (range.dims) {
        if (dread)
            return UAS_BAD_WRITE_NOT_SUPPORTED; /* nothing stored to merge into */
        uas_datavalue cur;
        as_range all = {0};
        AS_TRY(as_read_value(as, &nv, &all, &cur, arena));
        AS_TRY(as_range_write(&cur.value, &range, v, &merged));
        v = &merged;
    }
    if (dwrite) {
        uas_write_fn fn = dwrite;
        void *ud = ds->ud;
        uas_datavalue in = wv->value;
        in.value = *v;
        in.has_value = true;
        as_unlock(as);
        uas_status st = fn(ud, &d->id, &in);
        as_rdlock(as);
        if (uas_is_bad(st)) {
            uas_clear(&merged, UAS_TYPE(VARIANT));
            return st;
        }
    }
    if (range.dims)
        return as_swap_value(as, d, &merged, status, src, now);
    return as_store_value(as, d, v, status, src, now);
}

void uas_svc_write(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_write_request *rq = req;
    uas_write_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->nodes_to_write_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_write && n > s->cfg.max_nodes_per_write) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    rs->results = uas_arena_alloc(ctx->arena, n * sizeof(uas_status));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    uas_aspace *as = s->as;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    as_rdlock(as);
    for (size_t i = 0; i < n; i++)
        rs->results[i] = write_one(as, &rq->nodes_to_write[i], roles, ctx->now, ctx->arena);
    as_unlock(as);
}

/* ---- local value access (server.h) ---- */

uas_status uas_server_write_value(uas_server *s, const uas_nodeid *id, const uas_variant *value)
{
    uas_aspace *as = s->as;
    as_rdlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    if (!as_nv_found(&nv))
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if (as_nv_class(&nv) != UAS_NODE_CLASS_VARIABLE)
        st = UAS_BAD_NODE_CLASS_INVALID;
    if (st == UAS_GOOD) {
        uas_nodeid dt = as_nv_data_type(&nv);
        st = as_check_value_any(as, &dt, as_nv_value_rank(&nv), value);
    }
    if (st == UAS_GOOD) {
        as_node *d = as_overlay_upgrade(as, &nv);
        uas_datetime now = uas_datetime_now();
        st = d ? as_store_value(as, d, value, UAS_GOOD, now, now) : UAS_BAD_OUT_OF_MEMORY;
    }
    as_unlock(as);
    return st;
}

uas_status uas_server_read_value(uas_server *s, const uas_nodeid *id, uas_variant *out)
{
    memset(out, 0, sizeof(*out));
    uas_aspace *as = s->as;
    uint8_t first[1024];
    uas_arena arena;
    uas_arena_init(&arena, first, sizeof(first), 0);
    as_rdlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    uas_datavalue dv;
    if (!as_nv_found(&nv))
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if (as_nv_class(&nv) != UAS_NODE_CLASS_VARIABLE &&
             as_nv_class(&nv) != UAS_NODE_CLASS_VARIABLE_TYPE)
        st = UAS_BAD_NODE_CLASS_INVALID;
    else {
        as_range all = {0};
        st = as_read_value(as, &nv, &all, &dv, &arena);
    }
    as_unlock(as);
    if (st == UAS_GOOD)
        st = uas_copy(&dv.value, out, UAS_TYPE(VARIANT));
    uas_arena_free(&arena);
    return st;
}
