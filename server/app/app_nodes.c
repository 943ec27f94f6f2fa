/* Nodes uaserver adds on top of namespace 0: the benchmark contract that
 * public OPC UA benchmark clients expect (100 writable Int32 variables
 * ns=1;i=1001..1100, optional Int32 arrays ns=1;i=2001+k and optional UInt64
 * counters ns=1;i=100001..), and a small demo object with a method, so a
 * fresh server has something to call. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>

#include "app.h"

static uas_status add_int32_var(uas_server *s, uint32_t id, const char *name, int32_t *values,
                                size_t n, bool array)
{
    uas_nodeid nid = uas_nodeid_numeric(1, id);
    uas_nodeid parent = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {1, uas_string_from(name)};
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    a.display_name.text = uas_string_from(name);
    a.data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    a.access_level = a.user_access_level = 0x03; /* CurrentRead | CurrentWrite */
    uint32_t dims[1] = {(uint32_t)n};
    if (array) {
        a.value_rank = 1;
        a.array_dimensions_count = 1;
        a.array_dimensions = dims;
        uas_variant_set_array(&a.value, values, n, UAS_TYPE(INT32));
    } else {
        a.value_rank = -1;
        uas_variant_set_scalar(&a.value, values, UAS_TYPE(INT32));
    }
    return uas_server_add_variable(s, &nid, &parent, &organizes, &bn, &type, &a);
}

uas_status app_add_contract_nodes(uas_server *s, const uint32_t *array_sizes, size_t n_arrays)
{
    char name[64];
    for (int32_t i = 0; i < 100; i++) {
        int32_t v = i;
        snprintf(name, sizeof(name), "BenchmarkValue%d", i);
        uas_status st = add_int32_var(s, 1001 + (uint32_t)i, name, &v, 1, false);
        if (st != UAS_GOOD)
            return st;
    }
    for (size_t k = 0; k < n_arrays; k++) {
        size_t n = array_sizes[k];
        int32_t *vals = uas_array_new(n, UAS_TYPE(INT32));
        if (!vals)
            return UAS_BAD_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
            vals[i] = (int32_t)(i % 1000);
        snprintf(name, sizeof(name), "BenchmarkArray%zu", n);
        uas_status st = add_int32_var(s, 2001 + (uint32_t)k, name, vals, n, true);
        uas_array_delete(vals, n, UAS_TYPE(INT32));
        if (st != UAS_GOOD)
            return st;
    }
    return UAS_GOOD;
}

/* Counters for the subscription benchmark: one 64-bit cell per node, shared
 * by the server's loops, hence atomic. The array lives as long as the
 * process (the server is never rebuilt inside one). */
static _Atomic uint64_t *counters;

static uas_status read_counter(void *ud, const uas_nodeid *node, uas_datavalue *out,
                               uas_arena *arena)
{
    (void)node;
    uint64_t *v = uas_arena_alloc(arena, sizeof(uint64_t));
    if (!v)
        return UAS_BAD_OUT_OF_MEMORY;
    *v = atomic_fetch_add_explicit(&counters[(uintptr_t)ud], 1, memory_order_relaxed) + 1;
    uas_variant_set_scalar(&out->value, v, UAS_TYPE(UINT64));
    out->has_value = true;
    out->source_timestamp = uas_datetime_now();
    out->has_source_timestamp = true;
    return UAS_GOOD;
}

uas_status app_add_counter_nodes(uas_server *s, uint32_t n)
{
    if (n == 0)
        return UAS_GOOD;
    counters = calloc(n, sizeof(*counters));
    if (!counters)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_nodeid parent = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    char name[32];
    for (uint32_t i = 0; i < n; i++) {
        uas_nodeid id = uas_nodeid_numeric(1, 100001 + i);
        snprintf(name, sizeof(name), "Counter%u", i);
        uas_qualifiedname bn = {1, uas_string_from(name)};
        uas_variable_attributes a;
        memset(&a, 0, sizeof(a));
        a.display_name.text = uas_string_from(name);
        a.data_type = uas_nodeid_numeric(0, UAS_NS0ID_UINT64);
        a.value_rank = -1;
        a.access_level = a.user_access_level = 0x01; /* CurrentRead */
        uas_status st = uas_server_add_variable(s, &id, &parent, &organizes, &bn, &type, &a);
        if (st == UAS_GOOD)
            st = uas_server_set_data_source(s, &id, read_counter, NULL, (void *)(uintptr_t)i);
        if (st != UAS_GOOD)
            return st;
    }
    return UAS_GOOD;
}

/* Demo.Add(a, b) = a + b, with Int32 overflow reported as BadOutOfRange. */
static uas_status demo_add(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                           size_t in_count, const uas_variant *in, size_t *out_count,
                           uas_variant **out, uas_arena *arena)
{
    (void)ud;
    (void)object;
    (void)method;
    (void)in_count;
    int64_t sum = (int64_t) * (int32_t *)in[0].data + *(int32_t *)in[1].data;
    if (sum > INT32_MAX || sum < INT32_MIN)
        return UAS_BAD_OUT_OF_RANGE;
    int32_t *r = uas_arena_alloc(arena, sizeof(int32_t));
    uas_variant *v = uas_arena_calloc(arena, 1, sizeof(uas_variant));
    if (!r || !v)
        return UAS_BAD_OUT_OF_MEMORY;
    *r = (int32_t)sum;
    uas_variant_set_scalar(v, r, UAS_TYPE(INT32));
    *out = v;
    *out_count = 1;
    return UAS_GOOD;
}

/* The uastack.* counter variables: each is a getter and its argument,
 * served by one data source. The process adds a handful, once. */
enum { MAX_U64_VARS = 16 };
static struct u64_var {
    app_u64_fn get;
    void *ud;
} u64_vars[MAX_U64_VARS];
static unsigned n_u64_vars;

static uas_status read_u64_var(void *ud, const uas_nodeid *node, uas_datavalue *out,
                               uas_arena *arena)
{
    (void)node;
    const struct u64_var *var = ud;
    uint64_t *v = uas_arena_alloc(arena, sizeof(uint64_t));
    if (!v)
        return UAS_BAD_OUT_OF_MEMORY;
    *v = var->get(var->ud);
    uas_variant_set_scalar(&out->value, v, UAS_TYPE(UINT64));
    out->has_value = true;
    return UAS_GOOD;
}

/* Heap counters of this process (uas_mem_get_stats), so a load generator
 * in another process can take allocation deltas over its window. */
static uint64_t heap_bytes(void *ud)
{
    (void)ud;
    uas_mem_stats st;
    uas_mem_get_stats(&st);
    return st.bytes_alloc;
}

static uint64_t heap_allocs(void *ud)
{
    (void)ud;
    uas_mem_stats st;
    uas_mem_get_stats(&st);
    return st.allocs;
}

/* Lock contention of this process (uas_server_lock_stats), one counter
 * per kind. */
static uint64_t lock_waits(void *ud)
{
    uas_lock_stats st;
    uas_server_lock_stats(&st);
    return st.waits[(uintptr_t)ud];
}

uas_status app_add_u64_var(uas_server *s, const char *name, app_u64_fn get, void *ud)
{
    if (n_u64_vars == MAX_U64_VARS)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_nodeid id = uas_nodeid_string(1, name);
    uas_nodeid parent = uas_nodeid_string(1, "Demo");
    uas_nodeid has_component = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {1, uas_string_from(name)};
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    a.display_name.text = uas_string_from(name);
    a.data_type = uas_nodeid_numeric(0, UAS_NS0ID_UINT64);
    a.value_rank = -1;
    a.access_level = a.user_access_level = 0x01;
    uas_status st = uas_server_add_variable(s, &id, &parent, &has_component, &bn, &type, &a);
    if (st != UAS_GOOD)
        return st;
    struct u64_var *var = &u64_vars[n_u64_vars++];
    var->get = get;
    var->ud = ud;
    return uas_server_set_data_source(s, &id, read_u64_var, NULL, var);
}

/* Demo.ReportEvent(message, severity): a BaseEventType event from Demo,
 * reported through the Server object. */
static uas_status demo_report_event(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                                    size_t in_count, const uas_variant *in, size_t *out_count,
                                    uas_variant **out, uas_arena *arena)
{
    (void)method, (void)in_count, (void)arena;
    uas_server *s = ud;
    const uas_string *msg = in[0].data;
    char text[256];
    size_t n = msg->data && msg->length < sizeof(text) ? msg->length : 0;
    if (n)
        memcpy(text, msg->data, n);
    text[n] = 0;
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
    uas_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_type = &type;
    ev.source_node = object;
    ev.source_name = "Demo";
    ev.message = text;
    ev.severity = *(const uint16_t *)in[1].data;
    *out_count = 0;
    *out = NULL;
    return uas_server_report_event(s, &ev);
}

static uas_status add_report_event_method(uas_server *s, const uas_nodeid *obj)
{
    uas_nodeid m = uas_nodeid_string(1, "Demo.ReportEvent");
    uas_nodeid has_component = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = {1, uas_string_from("ReportEvent")};
    uas_method_attributes ma;
    memset(&ma, 0, sizeof(ma));
    ma.display_name.text = uas_string_from("ReportEvent");
    ma.executable = ma.user_executable = true;
    uas_argument in[2];
    memset(in, 0, sizeof(in));
    in[0].name = uas_string_from("message");
    in[0].data_type = uas_nodeid_numeric(0, UAS_NS0ID_STRING);
    in[0].value_rank = -1;
    in[1].name = uas_string_from("severity");
    in[1].data_type = uas_nodeid_numeric(0, UAS_NS0ID_UINT16);
    in[1].value_rank = -1;
    return uas_server_add_method(s, &m, obj, &has_component, &bn, &ma, 2, in, 0, NULL,
                                 demo_report_event, s);
}

uas_status app_add_demo_nodes(uas_server *s)
{
    uas_nodeid obj = uas_nodeid_string(1, "Demo");
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid has_component = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_nodeid folder = uas_nodeid_numeric(0, UAS_NS0ID_BASEOBJECTTYPE);
    uas_qualifiedname bn = {1, uas_string_from("Demo")};
    uas_object_attributes oa;
    memset(&oa, 0, sizeof(oa));
    oa.display_name.text = uas_string_from("Demo");
    uas_status st = uas_server_add_object(s, &obj, &objects, &organizes, &bn, &folder, &oa);
    if (st != UAS_GOOD)
        return st;
    uas_nodeid m = uas_nodeid_string(1, "Demo.Add");
    uas_qualifiedname mbn = {1, uas_string_from("Add")};
    uas_method_attributes ma;
    memset(&ma, 0, sizeof(ma));
    ma.display_name.text = uas_string_from("Add");
    ma.executable = ma.user_executable = true;
    uas_argument in[2], out[1];
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    in[0].name = uas_string_from("a");
    in[1].name = uas_string_from("b");
    out[0].name = uas_string_from("sum");
    for (int i = 0; i < 2; i++) {
        in[i].data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
        in[i].value_rank = -1;
    }
    out[0].data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    out[0].value_rank = -1;
    st = uas_server_add_method(s, &m, &obj, &has_component, &mbn, &ma, 2, in, 1, out, demo_add,
                               NULL);
    if (st == UAS_GOOD)
        st = add_report_event_method(s, &obj);
    if (st == UAS_GOOD)
        st = app_add_u64_var(s, "uastack.HeapBytesAllocated", heap_bytes, NULL);
    if (st == UAS_GOOD)
        st = app_add_u64_var(s, "uastack.HeapAllocations", heap_allocs, NULL);
    static const char *const locks[UAS_LOCK_KINDS] = {
        "uastack.LockWaits.AddressSpace", "uastack.LockWaits.Value", "uastack.LockWaits.Session",
        "uastack.LockWaits.Subscriptions"};
    for (uintptr_t k = 0; k < UAS_LOCK_KINDS && st == UAS_GOOD; k++)
        st = app_add_u64_var(s, locks[k], lock_waits, (void *)k);
    return st;
}
