/* Call (Part 4, 5.11.2): check the object, the method and its relation,
 * Executable, the input arguments against the InputArguments property,
 * then run the program's callback with the structure lock released (a
 * method may add nodes). Outputs come from the request arena.
 *
 * The session needs the Call permission on both the object (or object
 * type) and the method (Part 3, 8.55): BadNotExecutable says the method
 * cannot run at all, BadUserAccessDenied that this session may not run it. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "aspace_internal.h"
#include "authz_node.h"

static bool has_component(uas_aspace *as, const as_nv *nv, const uas_nodeid *method)
{
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (r.forward && as_reftype_sub(as, r.type, UAS_NS0ID_HASCOMPONENT) &&
            r.target.server_index == 0 && as_nodeid_eq(&r.target.nodeid, method))
            return true;
    }
    return false;
}

/* The supertype of a type node (inverse HasSubtype), or not found. */
static as_nv supertype(uas_aspace *as, const as_nv *nv)
{
    as_nv none = {NULL, NULL};
    size_t n = as_nv_ref_count(nv);
    as_refv r;
    for (size_t i = 0; i < n; i++) {
        as_nv_ref(nv, i, &r);
        if (!r.forward && r.type == UAS_NS0ID_HASSUBTYPE)
            return as_lookup(as, &r.target.nodeid);
    }
    return none;
}

/* Is the method a component of the object, of its type or of a supertype
 * (a method declared on the type is callable on its instances). */
static bool method_of(uas_aspace *as, const as_nv *obj, const uas_nodeid *method)
{
    if (has_component(as, obj, method))
        return true;
    as_nv t = *obj;
    if (as_nv_class(obj) == UAS_NODE_CLASS_OBJECT) {
        uas_nodeid td = as_nv_type_definition(obj);
        t = as_lookup(as, &td);
    } else {
        t = supertype(as, obj);
    }
    for (int depth = 0; depth < 32 && as_nv_found(&t); depth++) {
        if (has_component(as, &t, method))
            return true;
        t = supertype(as, &t);
    }
    return false;
}

/* The Argument array of the method's InputArguments property (none: 0). */
static uas_status input_args(uas_aspace *as, const as_nv *m, const uas_argument **args,
                             size_t *count, uas_arena *arena)
{
    *args = NULL;
    *count = 0;
    as_nv p = as_find_child(as, m, UAS_NS0ID_HASPROPERTY, "InputArguments");
    if (!as_nv_found(&p))
        return UAS_GOOD;
    uas_datavalue dv;
    as_range all = {0};
    AS_TRY(as_read_value(as, &p, &all, &dv, arena));
    if (dv.value.type == UAS_TYPE(ARGUMENT) && dv.value.is_array) {
        *args = dv.value.data;
        *count = dv.value.array_length;
    }
    return UAS_GOOD;
}

static uas_status call_one(uas_request_ctx *ctx, const uas_call_method_request *cm,
                           uas_call_method_result *res)
{
    uas_aspace *as = ctx->server->as;
    as_nv obj = as_lookup(as, &cm->object_id);
    if (!as_nv_found(&obj))
        return UAS_BAD_NODE_ID_UNKNOWN;
    uint8_t oc = as_nv_class(&obj);
    if (oc != UAS_NODE_CLASS_OBJECT && oc != UAS_NODE_CLASS_OBJECT_TYPE)
        return UAS_BAD_NODE_ID_INVALID;
    as_nv m = as_lookup(as, &cm->method_id);
    if (as_nv_class(&m) != UAS_NODE_CLASS_METHOD || !method_of(as, &obj, &cm->method_id))
        return UAS_BAD_METHOD_INVALID;
    bool executable = m.d ? as_meth_of(m.d)->executable && as_meth_of(m.d)->user_executable
                          : (m.s->flags & UAS_NS0_EXECUTABLE) != 0;
    if (!executable)
        return UAS_BAD_NOT_EXECUTABLE;
    uint32_t roles = uas_authz_ctx_roles(ctx);
    if (!(as_perms(as, &obj, roles) & as_perms(as, &m, roles) & UAS_PERMISSION_TYPE_CALL))
        return UAS_BAD_USER_ACCESS_DENIED;

    const uas_argument *args;
    size_t nargs, nin = cm->input_arguments_count;
    AS_TRY(input_args(as, &m, &args, &nargs, ctx->arena));
    if (nin < nargs)
        return UAS_BAD_ARGUMENTS_MISSING;
    if (nin > nargs)
        return UAS_BAD_TOO_MANY_ARGUMENTS;
    if (nin) {
        res->input_argument_results = uas_arena_alloc(ctx->arena, nin * sizeof(uas_status));
        if (!res->input_argument_results)
            return UAS_BAD_OUT_OF_MEMORY;
        res->input_argument_results_count = nin;
        bool bad = false;
        for (size_t i = 0; i < nin; i++) {
            uas_status st = as_check_value_any(as, &args[i].data_type, args[i].value_rank,
                                               &cm->input_arguments[i]);
            res->input_argument_results[i] = st;
            bad |= st != UAS_GOOD;
        }
        if (bad)
            return UAS_BAD_INVALID_ARGUMENT;
    }

    const as_meth *mp = as_meth_of(m.d);
    if (!mp || !mp->method)
        return UAS_BAD_NOT_IMPLEMENTED;
    uas_method_fn fn = mp->method;
    void *ud = mp->method_ud;
    size_t nout = 0;
    uas_variant *out = NULL;
    as_unlock(as);
    uas_status st =
        fn(ud, &cm->object_id, &cm->method_id, nin, cm->input_arguments, &nout, &out, ctx->arena);
    as_rdlock(as);
    if (uas_is_bad(st))
        return st;
    res->output_arguments = nout ? out : UAS_EMPTY_ARRAY;
    res->output_arguments_count = nout;
    return st;
}

void uas_svc_call(uas_request_ctx *ctx, const void *req, void *resp)
{
    const uas_call_request *rq = req;
    uas_call_response *rs = resp;
    uas_server *s = ctx->server;
    size_t n = rq->methods_to_call_count;
    if (n == 0) {
        rs->response_header.service_result = UAS_BAD_NOTHING_TO_DO;
        return;
    }
    if (s->cfg.max_nodes_per_method_call && n > s->cfg.max_nodes_per_method_call) {
        rs->response_header.service_result = UAS_BAD_TOO_MANY_OPERATIONS;
        return;
    }
    rs->results = uas_arena_calloc(ctx->arena, n, sizeof(uas_call_method_result));
    if (!rs->results) {
        rs->response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    rs->results_count = n;
    as_rdlock(s->as);
    for (size_t i = 0; i < n; i++) {
        uas_call_method_result *r = &rs->results[i];
        r->status_code = call_one(ctx, &rq->methods_to_call[i], r);
        if (uas_is_bad(r->status_code) && r->status_code != UAS_BAD_INVALID_ARGUMENT) {
            r->input_argument_results = NULL;
            r->input_argument_results_count = 0;
        }
    }
    as_unlock(s->as);
}

uas_status uas_aspace_set_method(uas_aspace *as, const uas_nodeid *id, uas_method_fn fn, void *ud)
{
    as_wrlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    if (!as_nv_found(&nv))
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if (as_nv_class(&nv) != UAS_NODE_CLASS_METHOD)
        st = UAS_BAD_NODE_CLASS_INVALID;
    else {
        as_node *d = as_overlay(as, &nv);
        if (!d)
            st = UAS_BAD_OUT_OF_MEMORY;
        else {
            as_meth_of(d)->method = fn;
            as_meth_of(d)->method_ud = ud;
        }
    }
    as_unlock(as);
    return st;
}
