/* Fixture for the address space tests: a real server (uas_server_new) and a
 * request context with a session of our own, so handlers run exactly as
 * the dispatcher runs them, minus the wire. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <string.h>

#include "authz.h"
#include "helper_aspace.h"
#include "ns0.h"

static uint8_t first_block[1 << 16];

void fx_init(fx *f, const uas_server_config *cfg)
{
    memset(f, 0, sizeof(*f));
    uas_server_config c;
    if (cfg) {
        c = *cfg;
    } else {
        uas_server_config_default(&c);
        c.threads = 1;
    }
    c.log_level = UAS_LOG_ERROR;
    uas_status st;
    f->s = uas_server_new(&c, &st);
    cr_assert_not_null(f->s, "uas_server_new: %s", uas_status_name(st));
    pthread_mutex_init(&f->se.lock, NULL);
    f->se.activated = true;
    /* Every permission, so the service tests are about the services; the
     * authorization tests give the session roles of their own. */
    f->se.roles = UAS_ROLES_INTERNAL;
    uas_arena_init(&f->arena, first_block, sizeof(first_block), 0);
    f->ctx.server = f->s;
    f->ctx.session = &f->se;
    f->ctx.arena = &f->arena;
    f->ctx.now = uas_datetime_now();
}

void fx_fini(fx *f)
{
    uas_view_session_release(&f->se);
    cr_assert_null(f->se.view_state);
    pthread_mutex_destroy(&f->se.lock);
    uas_arena_free(&f->arena);
    uas_server_delete(f->s);
}

void fx_reset(fx *f)
{
    uas_arena_reset(&f->arena);
    f->ctx.now = uas_datetime_now();
}

bool full_ns0(void)
{
    return strcmp(uas_ns0_set, "full") == 0;
}

void need_full_ns0(void)
{
    if (!full_ns0())
        cr_skip_test("needs the full namespace 0 (this build has the reduced set)");
}

uas_nodeid N0(uint32_t id)
{
    return uas_nodeid_numeric(0, id);
}

uas_nodeid N1(uint32_t id)
{
    return uas_nodeid_numeric(1, id);
}

uas_nodeid S1(const char *id)
{
    return uas_nodeid_string(1, id);
}

uas_qualifiedname QN(uint16_t ns, const char *name)
{
    uas_qualifiedname q = {ns, uas_string_from(name)};
    return q;
}

uas_expandednodeid X(uas_nodeid id)
{
    uas_expandednodeid x;
    memset(&x, 0, sizeof(x));
    x.nodeid = id;
    return x;
}

uas_datavalue read_attr(fx *f, uas_nodeid id, uint32_t attr, const char *range)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = id;
    rv.attribute_id = attr;
    rv.index_range = uas_string_from(range);
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    rq.nodes_to_read = &rv;
    rq.nodes_to_read_count = 1;
    uas_read_response *rs = uas_arena_calloc(&f->arena, 1, sizeof(*rs));
    uas_svc_read(&f->ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs->results_count, 1);
    return rs->results[0];
}

uas_status write_value(fx *f, uas_nodeid id, const uas_variant *v, const char *range)
{
    uas_write_value wv;
    memset(&wv, 0, sizeof(wv));
    wv.node_id = id;
    wv.attribute_id = 13;
    wv.index_range = uas_string_from(range);
    wv.value.value = *v;
    wv.value.has_value = true;
    uas_write_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_write = &wv;
    rq.nodes_to_write_count = 1;
    uas_write_response rs;
    memset(&rs, 0, sizeof(rs));
    uas_svc_write(&f->ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs.results_count, 1);
    return rs.results[0];
}

uas_browse_response *browse(fx *f, uas_nodeid id, int dir, uas_nodeid reftype, bool subtypes,
                            uint32_t ncmask, uint32_t rmask, uint32_t max)
{
    uas_browse_description *bd = uas_arena_calloc(&f->arena, 1, sizeof(*bd));
    bd->node_id = id;
    bd->browse_direction = dir;
    bd->reference_type_id = reftype;
    bd->include_subtypes = subtypes;
    bd->node_class_mask = ncmask;
    bd->result_mask = rmask;
    uas_browse_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.requested_max_references_per_node = max;
    rq.nodes_to_browse = bd;
    rq.nodes_to_browse_count = 1;
    uas_browse_response *rs = uas_arena_calloc(&f->arena, 1, sizeof(*rs));
    uas_svc_browse(&f->ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD, "browse: %s",
                 uas_status_name(rs->response_header.service_result));
    cr_assert_eq(rs->results_count, 1);
    return rs;
}

size_t browse_count(fx *f, uas_nodeid id, int dir, uas_nodeid reftype)
{
    uas_browse_response *rs = browse(f, id, dir, reftype, false, 0, 0, 0);
    cr_assert_eq(rs->results[0].status_code, UAS_GOOD);
    size_t n = rs->results[0].references_count;
    uas_bytestring cp = rs->results[0].continuation_point;
    while (cp.data) {
        uas_browse_next_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.continuation_points = &cp;
        rq.continuation_points_count = 1;
        uas_browse_next_response *nrs = uas_arena_calloc(&f->arena, 1, sizeof(*nrs));
        uas_svc_browse_next(&f->ctx, &rq, nrs);
        cr_assert_eq(nrs->results[0].status_code, UAS_GOOD);
        n += nrs->results[0].references_count;
        cp = nrs->results[0].continuation_point;
    }
    return n;
}

const uas_reference_description *find_ref(const uas_browse_result *r, const char *name)
{
    for (size_t i = 0; i < r->references_count; i++)
        if (uas_string_eq_cstr(&r->references[i].browse_name.name, name))
            return &r->references[i];
    return NULL;
}

static uas_variant scalar(fx *f, const void *p, const uas_type *t)
{
    void *d = uas_arena_alloc(&f->arena, t->size);
    memcpy(d, p, t->size);
    uas_variant v;
    uas_variant_set_scalar(&v, d, t);
    return v;
}

uas_variant v_int32(fx *f, int32_t x)
{
    return scalar(f, &x, UAS_TYPE(INT32));
}

uas_variant v_double(fx *f, double x)
{
    return scalar(f, &x, UAS_TYPE(DOUBLE));
}

uas_variant v_string(fx *f, const char *s)
{
    uas_string str = uas_string_from(s);
    return scalar(f, &str, UAS_TYPE(STRING));
}

uas_variant v_int32_array(fx *f, const int32_t *x, size_t n)
{
    int32_t *d = uas_arena_alloc(&f->arena, n * sizeof(int32_t) + 1);
    memcpy(d, x, n * sizeof(int32_t));
    uas_variant v;
    uas_variant_set_array(&v, d, n, UAS_TYPE(INT32));
    return v;
}

uas_status add_var(fx *f, uas_nodeid id, const char *name, const uas_variant *value,
                   uas_nodeid data_type, int32_t rank, uint8_t access)
{
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    a.specified_attributes = UAS_NODE_ATTRIBUTES_MASK_VALUE | UAS_NODE_ATTRIBUTES_MASK_DATA_TYPE |
                             UAS_NODE_ATTRIBUTES_MASK_VALUE_RANK |
                             UAS_NODE_ATTRIBUTES_MASK_ACCESS_LEVEL;
    if (value)
        a.value = *value;
    a.data_type = data_type;
    a.value_rank = rank;
    a.access_level = access;
    uas_nodeid parent = N0(UAS_NS0ID_OBJECTSFOLDER), org = N0(UAS_NS0ID_ORGANIZES);
    uas_qualifiedname bn = QN(1, name);
    return uas_server_add_variable(f->s, &id, &parent, &org, &bn, NULL, &a);
}
