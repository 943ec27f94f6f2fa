/* Call: method lookup, the object/method relation, Executable, argument
 * checks against InputArguments, the callback and its outputs. */
#include <criterion/criterion.h>
#include <string.h>

#include "helper_aspace.h"

static fx f;
static int calls;

static uas_status add_fn(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                         size_t in_count, const uas_variant *in, size_t *out_count,
                         uas_variant **out, uas_arena *arena)
{
    (void)ud;
    (void)object;
    (void)method;
    calls++;
    cr_assert_eq(in_count, 2);
    int32_t a = *(int32_t *)in[0].data, b = *(int32_t *)in[1].data;
    if (a == 666)
        return UAS_BAD_INVALID_STATE;
    int32_t *sum = uas_arena_alloc(arena, sizeof(int32_t));
    *sum = a + b;
    *out = uas_arena_alloc(arena, sizeof(uas_variant));
    uas_variant_set_scalar(*out, sum, UAS_TYPE(INT32));
    *out_count = 1;
    return UAS_GOOD;
}

static int noops;

static uas_status noop_fn(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                          size_t in_count, const uas_variant *in, size_t *out_count,
                          uas_variant **out, uas_arena *arena)
{
    (void)ud;
    (void)object;
    (void)method;
    (void)in_count;
    (void)in;
    (void)out;
    (void)arena;
    noops++;
    *out_count = 0;
    return UAS_GOOD;
}

static uas_argument arg(const char *name, uint32_t type, int32_t rank)
{
    uas_argument a;
    memset(&a, 0, sizeof(a));
    a.name = uas_string_from(name);
    a.data_type = N0(type);
    a.value_rank = rank;
    return a;
}

static void setup(void)
{
    fx_init(&f, NULL);
    calls = 0;
    noops = 0;
    uas_nodeid obj = S1("Calc"), objects = N0(UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES), comp = N0(UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = QN(1, "Calc");
    cr_assert_eq(uas_server_add_object(f.s, &obj, &objects, &org, &bn, NULL, NULL), UAS_GOOD);
    uas_argument in[2] = {arg("a", UAS_NS0ID_INT32, -1), arg("b", UAS_NS0ID_INTEGER, -1)};
    uas_argument out[1] = {arg("sum", UAS_NS0ID_INT32, -1)};
    uas_nodeid m = S1("Calc.Add");
    uas_qualifiedname mbn = QN(1, "Add");
    cr_assert_eq(
        uas_server_add_method(f.s, &m, &obj, &comp, &mbn, NULL, 2, in, 1, out, add_fn, NULL),
        UAS_GOOD);
    /* A method without a callback, one that is not executable, and one
     * without arguments on another object. */
    uas_nodeid m2 = S1("Calc.Nothing"), m3 = S1("Calc.Off"), m4 = S1("Other.M");
    uas_qualifiedname bn2 = QN(1, "Nothing"), bn3 = QN(1, "Off"), bn4 = QN(1, "M");
    cr_assert_eq(
        uas_server_add_method(f.s, &m2, &obj, &comp, &bn2, NULL, 0, NULL, 0, NULL, NULL, NULL),
        UAS_GOOD);
    uas_method_attributes off;
    memset(&off, 0, sizeof(off));
    off.specified_attributes = UAS_NODE_ATTRIBUTES_MASK_EXECUTABLE;
    off.executable = false;
    cr_assert_eq(
        uas_server_add_method(f.s, &m3, &obj, &comp, &bn3, &off, 2, in, 0, NULL, add_fn, NULL),
        UAS_GOOD);
    uas_nodeid other = S1("Other");
    uas_qualifiedname obn = QN(1, "Other");
    cr_assert_eq(uas_server_add_object(f.s, &other, &objects, &org, &obn, NULL, NULL), UAS_GOOD);
    cr_assert_eq(
        uas_server_add_method(f.s, &m4, &other, &comp, &bn4, NULL, 0, NULL, 0, NULL, noop_fn, NULL),
        UAS_GOOD);
}

static void teardown(void)
{
    fx_fini(&f);
}

TestSuite(call, .init = setup, .fini = teardown);

static uas_call_method_result *call(uas_nodeid obj, uas_nodeid method, const uas_variant *in,
                                    size_t n)
{
    uas_call_method_request cm;
    memset(&cm, 0, sizeof(cm));
    cm.object_id = obj;
    cm.method_id = method;
    cm.input_arguments = (uas_variant *)in;
    cm.input_arguments_count = n;
    uas_call_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.methods_to_call = &cm;
    rq.methods_to_call_count = 1;
    uas_call_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_call(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs->results_count, 1);
    return &rs->results[0];
}

Test(call, good_arguments_give_outputs)
{
    uas_variant in[2] = {v_int32(&f, 40), v_int32(&f, 2)};
    uas_call_method_result *r = call(S1("Calc"), S1("Calc.Add"), in, 2);
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_eq(r->output_arguments_count, 1);
    cr_assert_eq(*(int32_t *)r->output_arguments[0].data, 42);
    cr_assert_eq(r->input_argument_results_count, 2);
    cr_assert(r->input_argument_results[0] == UAS_GOOD && r->input_argument_results[1] == UAS_GOOD);
    cr_assert_eq(calls, 1);
    /* The callback's own failure is the result. */
    in[0] = v_int32(&f, 666);
    r = call(S1("Calc"), S1("Calc.Add"), in, 2);
    cr_assert_eq(r->status_code, UAS_BAD_INVALID_STATE);
    cr_assert_eq(r->output_arguments_count, 0);
}

Test(call, argument_count_and_types)
{
    uas_variant in[3] = {v_int32(&f, 1), v_string(&f, "two"), v_int32(&f, 3)};
    uas_call_method_result *r = call(S1("Calc"), S1("Calc.Add"), in, 1);
    cr_assert_eq(r->status_code, UAS_BAD_ARGUMENTS_MISSING);
    r = call(S1("Calc"), S1("Calc.Add"), in, 3);
    cr_assert_eq(r->status_code, UAS_BAD_TOO_MANY_ARGUMENTS);
    r = call(S1("Calc"), S1("Calc.Add"), in, 2);
    cr_assert_eq(r->status_code, UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(r->input_argument_results_count, 2);
    cr_assert_eq(r->input_argument_results[0], UAS_GOOD);
    cr_assert_eq(r->input_argument_results[1], UAS_BAD_TYPE_MISMATCH);
    /* Integer (abstract) accepts any integer type, an array is no scalar. */
    int64_t big = 5;
    uas_variant i64;
    uas_variant_set_scalar(&i64, &big, UAS_TYPE(INT64));
    in[1] = i64;
    r = call(S1("Calc"), S1("Calc.Add"), in, 2);
    cr_assert_eq(r->status_code, UAS_GOOD);
    int32_t x[2] = {1, 2};
    in[0] = v_int32_array(&f, x, 2);
    r = call(S1("Calc"), S1("Calc.Add"), in, 2);
    cr_assert_eq(r->status_code, UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(r->input_argument_results[0], UAS_BAD_TYPE_MISMATCH);
    cr_assert_eq(calls, 1);
}

Test(call, object_and_method_checks)
{
    uas_variant in[2] = {v_int32(&f, 1), v_int32(&f, 2)};
    cr_assert_eq(call(S1("Nope"), S1("Calc.Add"), in, 2)->status_code, UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(call(S1("Calc"), S1("Calc.Nope"), in, 2)->status_code, UAS_BAD_METHOD_INVALID);
    /* Not a method, and a method of another object. */
    cr_assert_eq(call(S1("Calc"), S1("Other"), in, 2)->status_code, UAS_BAD_METHOD_INVALID);
    cr_assert_eq(call(S1("Calc"), S1("Other.M"), NULL, 0)->status_code, UAS_BAD_METHOD_INVALID);
    cr_assert_eq(call(S1("Other"), S1("Other.M"), NULL, 0)->status_code, UAS_GOOD);
    cr_assert_eq(noops, 1);
    /* The object must be an Object (or ObjectType). */
    cr_assert_eq(call(N0(2258), S1("Other.M"), NULL, 0)->status_code, UAS_BAD_NODE_ID_INVALID);
    cr_assert_eq(call(S1("Calc"), S1("Calc.Off"), in, 2)->status_code, UAS_BAD_NOT_EXECUTABLE);
    cr_assert_eq(call(S1("Calc"), S1("Calc.Nothing"), NULL, 0)->status_code,
                 UAS_BAD_NOT_IMPLEMENTED);
    cr_assert_eq(calls, 0);
}

Test(call, namespace0_method_arguments)
{
    need_full_ns0();
    /* Server.GetMonitoredItems takes one UInt32. */
    cr_assert_eq(
        call(N0(UAS_NS0ID_SERVER), N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS), NULL, 0)->status_code,
        UAS_BAD_ARGUMENTS_MISSING);
    uas_variant s = v_string(&f, "1");
    uas_call_method_result *r =
        call(N0(UAS_NS0ID_SERVER), N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS), &s, 1);
    cr_assert_eq(r->status_code, UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(r->input_argument_results[0], UAS_BAD_TYPE_MISMATCH);
    /* A method of namespace 0 gets its callback attached later. */
    uas_nodeid gmi = N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS);
    cr_assert_eq(uas_aspace_set_method(f.s->as, &gmi, noop_fn, NULL), UAS_GOOD);
    uint32_t id = 1;
    uas_variant u;
    uas_variant_set_scalar(&u, &id, UAS_TYPE(UINT32));
    cr_assert_eq(call(N0(UAS_NS0ID_SERVER), gmi, &u, 1)->status_code, UAS_GOOD);
    cr_assert_eq(noops, 1);
    uas_nodeid obj = N0(UAS_NS0ID_SERVER), unknown = N1(31337);
    cr_assert_eq(uas_aspace_set_method(f.s->as, &obj, noop_fn, NULL), UAS_BAD_NODE_CLASS_INVALID);
    cr_assert_eq(uas_aspace_set_method(f.s->as, &unknown, noop_fn, NULL), UAS_BAD_NODE_ID_UNKNOWN);
}

Test(call, method_declared_on_the_type)
{
    need_full_ns0();
    /* ServerType declares GetMonitoredItems: callable on its instance
     * Server (argument checks are reached), not on the Objects folder. */
    uas_nodeid m = N0(UAS_NS0ID_SERVERTYPE_GETMONITOREDITEMS);
    cr_assert_eq(call(N0(UAS_NS0ID_SERVER), m, NULL, 0)->status_code, UAS_BAD_ARGUMENTS_MISSING);
    cr_assert_eq(call(N0(UAS_NS0ID_SERVERTYPE), m, NULL, 0)->status_code,
                 UAS_BAD_ARGUMENTS_MISSING);
    cr_assert_eq(call(N0(UAS_NS0ID_OBJECTSFOLDER), m, NULL, 0)->status_code,
                 UAS_BAD_METHOD_INVALID);
}

Test(call, service_level_errors)
{
    uas_call_request rq;
    memset(&rq, 0, sizeof(rq));
    uas_call_response rs;
    memset(&rs, 0, sizeof(rs));
    uas_svc_call(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);
    rq.methods_to_call_count = f.s->cfg.max_nodes_per_method_call + 1;
    memset(&rs, 0, sizeof(rs));
    uas_svc_call(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_TOO_MANY_OPERATIONS);
}

/* A method may add nodes: the structure lock is not held during the call. */
static uas_status adding_fn(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                            size_t in_count, const uas_variant *in, size_t *out_count,
                            uas_variant **out, uas_arena *arena)
{
    (void)object;
    (void)method;
    (void)in_count;
    (void)in;
    (void)out_count;
    (void)out;
    (void)arena;
    uas_server *s = ud;
    uas_nodeid id = S1("Made"), parent = S1("Other"), comp = N0(UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = QN(1, "Made");
    return uas_server_add_object(s, &id, &parent, &comp, &bn, NULL, NULL);
}

Test(call, method_may_add_nodes)
{
    uas_nodeid m = S1("Other.Make"), other = S1("Other"), comp = N0(UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = QN(1, "Make");
    cr_assert_eq(
        uas_server_add_method(f.s, &m, &other, &comp, &bn, NULL, 0, NULL, 0, NULL, adding_fn, f.s),
        UAS_GOOD);
    cr_assert_eq(call(other, m, NULL, 0)->status_code, UAS_GOOD);
    cr_assert_eq(read_attr(&f, S1("Made"), 2, NULL).status, UAS_GOOD);
    cr_assert_eq(call(other, m, NULL, 0)->status_code, UAS_BAD_NODE_ID_EXISTS);
}
