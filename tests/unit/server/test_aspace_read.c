/* Read: every attribute of every node class, values of namespace 0 and of
 * added variables, index ranges, timestamps, data encodings, limits. */
#include <criterion/criterion.h>
#include <string.h>

#include "helper_aspace.h"

static fx f;

static void setup(void)
{
    fx_init(&f, NULL);
}

static void teardown(void)
{
    fx_fini(&f);
}

TestSuite(read, .init = setup, .fini = teardown);

/* Which of the 27 attributes a class has (bit n = attribute n). */
#define B(n)     (1u << (n))
#define BASE     (B(1) | B(2) | B(3) | B(4) | B(5) | B(6) | B(7))
#define OPTIONAL (B(24) | B(25) | B(26)) /* RolePermissions..AccessRestrictions */

static void expect_attrs(uas_nodeid id, uint32_t have)
{
    for (uint32_t a = 0; a <= 28; a++) {
        uas_datavalue dv = read_attr(&f, id, a, NULL);
        if (have & B(a))
            cr_assert_eq(dv.status, UAS_GOOD, "attribute %u: %s", a, uas_status_name(dv.status));
        else if (!(OPTIONAL & B(a)))
            cr_assert_eq(dv.status, UAS_BAD_ATTRIBUTE_ID_INVALID, "attribute %u: %s", a,
                         uas_status_name(dv.status));
        /* Every attribute but a Value and ArrayDimensions (null for
         * scalars, Part 3) has a value. */
        if (dv.status == UAS_GOOD && a != 13 && a != 16)
            cr_assert(dv.has_value && dv.value.type, "attribute %u has no value", a);
    }
}

Test(read, attribute_sets_per_node_class)
{
    /* Variable (CurrentTime), Object (Server), Method, ObjectType,
     * VariableType, ReferenceType, DataType. */
    expect_attrs(N0(2258),
                 BASE | B(13) | B(14) | B(15) | B(16) | B(17) | B(18) | B(19) | B(20) | B(27));
    expect_attrs(N0(UAS_NS0ID_SERVER), BASE | B(12));
    if (full_ns0())
        expect_attrs(N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS), BASE | B(21) | B(22));
    expect_attrs(N0(UAS_NS0ID_BASEOBJECTTYPE), BASE | B(8));
    expect_attrs(N0(UAS_NS0ID_BASEDATAVARIABLETYPE), BASE | B(8) | B(13) | B(14) | B(15) | B(16));
    expect_attrs(N0(UAS_NS0ID_HASCOMPONENT), BASE | B(8) | B(9) | B(10));
    expect_attrs(N0(UAS_NS0ID_BUILDINFO), BASE | B(8) | B(23));
}

Test(read, variable_attributes)
{
    uas_nodeid id = N0(2258);
    uas_datavalue dv = read_attr(&f, id, 1, NULL);
    cr_assert(uas_equal(dv.value.data, &id, UAS_TYPE(NODE_ID)));
    cr_assert_eq(*(int32_t *)read_attr(&f, id, 2, NULL).value.data, UAS_NODE_CLASS_VARIABLE);
    uas_qualifiedname *bn = read_attr(&f, id, 3, NULL).value.data;
    cr_assert_eq(bn->ns, 0);
    cr_assert(uas_string_eq_cstr(&bn->name, "CurrentTime"));
    uas_localizedtext *dn = read_attr(&f, id, 4, NULL).value.data;
    cr_assert(uas_string_eq_cstr(&dn->text, "CurrentTime"));
    uas_nodeid *dt = read_attr(&f, id, 14, NULL).value.data;
    cr_assert_eq(dt->id.numeric, UAS_NS0ID_UTCTIME);
    cr_assert_eq(*(int32_t *)read_attr(&f, id, 15, NULL).value.data, -1);
    uas_datavalue dims = read_attr(&f, id, 16, NULL);
    cr_assert_eq(dims.status, UAS_GOOD);
    cr_assert_null(dims.value.type, "a scalar's ArrayDimensions is null");
    cr_assert_eq(*(uint8_t *)read_attr(&f, id, 17, NULL).value.data, 1);
    cr_assert_eq(*(uint8_t *)read_attr(&f, id, 18, NULL).value.data, 1);
    cr_assert_eq(*(uint32_t *)read_attr(&f, id, 27, NULL).value.data, 1);
    cr_assert_eq(*(bool *)read_attr(&f, id, 20, NULL).value.data, false);
    cr_assert_eq(read_attr(&f, id, 19, NULL).value.type, UAS_TYPE(DOUBLE));
    cr_assert_eq(*(uint32_t *)read_attr(&f, id, 6, NULL).value.data, 0);
    /* ArrayDimensions of an array variable of namespace 0 (ServerType's
     * ServerArray property: one dimension). */
    need_full_ns0();
    uas_datavalue sa = read_attr(&f, N0(2005), 16, NULL);
    cr_assert_eq(sa.value.array_length, 1);
    cr_assert_eq(*(int32_t *)read_attr(&f, N0(2005), 15, NULL).value.data, 1);
}

Test(read, object_method_and_type_attributes)
{
    cr_assert_eq(*(uint8_t *)read_attr(&f, N0(UAS_NS0ID_SERVER), 12, NULL).value.data, 1);
    if (full_ns0()) {
        uas_nodeid m = N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS);
        cr_assert_eq(*(bool *)read_attr(&f, m, 21, NULL).value.data, true);
        cr_assert_eq(*(bool *)read_attr(&f, m, 22, NULL).value.data, true);
    }
    /* ReferenceTypes. */
    uas_localizedtext *inv = read_attr(&f, N0(UAS_NS0ID_HASCOMPONENT), 10, NULL).value.data;
    cr_assert(uas_string_eq_cstr(&inv->text, "ComponentOf"));
    cr_assert_eq(*(bool *)read_attr(&f, N0(UAS_NS0ID_HASCOMPONENT), 9, NULL).value.data, false);
    cr_assert_eq(*(bool *)read_attr(&f, N0(UAS_NS0ID_REFERENCES), 9, NULL).value.data, true);
    cr_assert_eq(*(bool *)read_attr(&f, N0(UAS_NS0ID_REFERENCES), 8, NULL).value.data, true);
    cr_assert_eq(*(bool *)read_attr(&f, N0(UAS_NS0ID_HASCOMPONENT), 8, NULL).value.data, false);
    /* A description from the NodeSet, and none. */
    uas_localizedtext *d = read_attr(&f, N0(UAS_NS0ID_OBJECTSFOLDER), 5, NULL).value.data;
    cr_assert_not_null(d->text.data);
    cr_assert_gt(d->text.length, 10);
    d = read_attr(&f, N0(UAS_NS0ID_HASCOMPONENT), 5, NULL).value.data;
    cr_assert_null(d->text.data);
}

Test(read, data_type_definition_of_buildinfo)
{
    uas_datavalue dv = read_attr(&f, N0(UAS_NS0ID_BUILDINFO), 23, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(dv.value.type, UAS_TYPE(STRUCTURE_DEFINITION));
    uas_structure_definition *sd = dv.value.data;
    cr_assert_eq(sd->fields_count, 6);
    cr_assert(uas_string_eq_cstr(&sd->fields[0].name, "ProductUri"));
    cr_assert(uas_string_eq_cstr(&sd->fields[5].name, "BuildDate"));
    cr_assert_eq(sd->fields[5].data_type.id.numeric, UAS_NS0ID_UTCTIME);
    cr_assert_eq(sd->base_data_type.id.numeric, UAS_NS0ID_STRUCTURE);
    /* An enumeration has an EnumDefinition; a builtin has none. */
    dv = read_attr(&f, N0(852), 23, NULL); /* ServerState */
    cr_assert_eq(dv.value.type, UAS_TYPE(ENUM_DEFINITION));
    cr_assert_eq(((uas_enum_definition *)dv.value.data)->fields_count, 8);
    cr_assert_eq(read_attr(&f, N0(UAS_NS0ID_INT32), 23, NULL).status, UAS_BAD_ATTRIBUTE_ID_INVALID);
}

Test(read, role_permissions_and_access_restrictions)
{
    need_full_ns0();
    uas_datavalue rp = read_attr(&f, N0(3708), 24, NULL);
    cr_assert_eq(rp.status, UAS_GOOD);
    cr_assert_eq(rp.value.type, UAS_TYPE(ROLE_PERMISSION_TYPE));
    cr_assert_eq(rp.value.array_length, 1);
    rp = read_attr(&f, N0(12637), 25, NULL); /* ServerConfiguration, UserRolePermissions */
    cr_assert_eq(rp.value.array_length, 3);
    uas_role_permission_type *r = rp.value.data;
    cr_assert_eq(r[0].role_id.ns, 0);
    cr_assert_neq(r[0].role_id.id.numeric, 0);
    cr_assert_eq(*(uint16_t *)read_attr(&f, N0(3708), 26, NULL).value.data, 3);
    /* A node without RolePermissions of its own shows its namespace's
     * default (Part 3, 5.2.9): one entry per well-known role. */
    rp = read_attr(&f, N0(UAS_NS0ID_SERVER), 24, NULL);
    cr_assert_eq(rp.status, UAS_GOOD);
    cr_assert_eq(rp.value.array_length, 8);
}

Test(read, server_status_value_from_data_source)
{
    uas_datavalue dv = read_attr(&f, N0(UAS_NS0ID_SERVER_SERVERSTATUS), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(dv.value.type, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    uas_server_status_data_type *st = dv.value.data;
    cr_assert_eq(st->state, UAS_SERVER_STATE_RUNNING);
    cr_assert_gt(st->current_time, st->start_time - 1);
    cr_assert(dv.has_source_timestamp && dv.has_server_timestamp);
    uas_datavalue ct = read_attr(&f, N0(2258), 13, NULL);
    cr_assert_eq(ct.value.type->kind, UAS_BUILTIN_DATETIME);
    int64_t diff = *(uas_datetime *)ct.value.data - uas_datetime_now();
    cr_assert_lt(diff < 0 ? -diff : diff, 50000000); /* within 5 s of now */
}

#ifndef UAS_MINIMAL /* the minimal namespace 0 has no EnumValues of NodeClass */
Test(read, static_value_of_namespace0)
{
    /* A value that comes straight from the NodeSet: NodeClass's EnumValues. */
    uas_datavalue dv = read_attr(&f, N0(UAS_NS0ID_NODECLASS_ENUMVALUES), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert(dv.value.is_array);
    cr_assert_eq(dv.value.array_length, 9);
    cr_assert_eq(dv.value.type, UAS_TYPE(ENUM_VALUE_TYPE));
}
#endif

Test(read, item_errors)
{
    cr_assert_eq(read_attr(&f, N1(999999), 13, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(read_attr(&f, S1("nope"), 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(read_attr(&f, N0(UAS_NS0ID_SERVER), 13, NULL).status,
                 UAS_BAD_ATTRIBUTE_ID_INVALID);
    cr_assert_eq(read_attr(&f, N0(UAS_NS0ID_SERVER), 0, NULL).status, UAS_BAD_ATTRIBUTE_ID_INVALID);
    cr_assert_eq(read_attr(&f, N0(UAS_NS0ID_SERVER), 99, NULL).status,
                 UAS_BAD_ATTRIBUTE_ID_INVALID);
    /* A variable without CurrentRead. */
    uas_variant v = v_int32(&f, 3);
    cr_assert_eq(add_var(&f, N1(10), "WriteOnly", &v, N0(UAS_NS0ID_INT32), -1,
                         UAS_ACCESS_LEVEL_TYPE_CURRENT_WRITE),
                 UAS_GOOD);
    cr_assert_eq(read_attr(&f, N1(10), 13, NULL).status, UAS_BAD_NOT_READABLE);
    cr_assert_eq(read_attr(&f, N1(10), 3, NULL).status, UAS_GOOD);
}

static uas_read_response *read_req(uas_read_request *rq)
{
    uas_read_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_read(&f.ctx, rq, rs);
    return rs;
}

Test(read, service_errors)
{
    uas_read_value_id rv[3];
    memset(rv, 0, sizeof(rv));
    for (int i = 0; i < 3; i++) {
        rv[i].node_id = N0(UAS_NS0ID_SERVER);
        rv[i].attribute_id = 1;
    }
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    cr_assert_eq(read_req(&rq)->response_header.service_result, UAS_BAD_NOTHING_TO_DO);
    rq.nodes_to_read = rv;
    rq.nodes_to_read_count = 3;
    rq.max_age = -1;
    cr_assert_eq(read_req(&rq)->response_header.service_result, UAS_BAD_MAX_AGE_INVALID);
    rq.max_age = 0;
    rq.timestamps_to_return = 4;
    cr_assert_eq(read_req(&rq)->response_header.service_result,
                 UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID);
    rq.timestamps_to_return = -1;
    cr_assert_eq(read_req(&rq)->response_header.service_result,
                 UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID);
    rq.timestamps_to_return = 0;
    uas_read_response *rs = read_req(&rq);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs->results_count, 3);

    fx_fini(&f);
    uas_server_config c;
    uas_server_config_default(&c);
    c.threads = 1;
    c.max_nodes_per_read = 2;
    fx_init(&f, &c);
    cr_assert_eq(read_req(&rq)->response_header.service_result, UAS_BAD_TOO_MANY_OPERATIONS);
    rq.nodes_to_read_count = 2;
    cr_assert_eq(read_req(&rq)->response_header.service_result, UAS_GOOD);
}

Test(read, timestamps_to_return)
{
    uas_variant v = v_int32(&f, 7);
    cr_assert_eq(add_var(&f, N1(1), "V", &v, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    uas_read_value_id rv[2];
    memset(rv, 0, sizeof(rv));
    rv[0].node_id = N1(1);
    rv[0].attribute_id = 13;
    rv[1].node_id = N1(1);
    rv[1].attribute_id = 3; /* BrowseName: never a source timestamp */
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_read = rv;
    rq.nodes_to_read_count = 2;
    struct {
        int ttr;
        bool src, srv;
    } cases[] = {{UAS_TIMESTAMPS_TO_RETURN_SOURCE, true, false},
                 {UAS_TIMESTAMPS_TO_RETURN_SERVER, false, true},
                 {UAS_TIMESTAMPS_TO_RETURN_BOTH, true, true},
                 {UAS_TIMESTAMPS_TO_RETURN_NEITHER, false, false}};
    for (size_t i = 0; i < 4; i++) {
        rq.timestamps_to_return = cases[i].ttr;
        uas_read_response *rs = read_req(&rq);
        uas_datavalue *d = &rs->results[0];
        cr_assert_eq(d->status, UAS_GOOD);
        cr_assert_eq(*(int32_t *)d->value.data, 7);
        cr_assert_eq(d->has_source_timestamp, cases[i].src, "case %zu", i);
        cr_assert_eq(d->has_server_timestamp, cases[i].srv, "case %zu", i);
        if (cases[i].src)
            cr_assert_gt(d->source_timestamp, 0);
        if (cases[i].srv)
            cr_assert_eq(d->server_timestamp, f.ctx.now);
        cr_assert_not(rs->results[1].has_source_timestamp);
        cr_assert_eq(rs->results[1].has_server_timestamp, cases[i].srv);
    }
}

Test(read, data_encoding)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = N0(UAS_NS0ID_SERVER_SERVERSTATUS);
    rv.attribute_id = 13;
    rv.data_encoding = QN(0, "Default Binary");
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_read = &rv;
    rq.nodes_to_read_count = 1;
    uas_datavalue *d = &read_req(&rq)->results[0];
    cr_assert_eq(d->status, UAS_GOOD);
    cr_assert_eq(d->value.type, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    rv.data_encoding = QN(0, "Default XML");
    cr_assert_eq(read_req(&rq)->results[0].status, UAS_BAD_DATA_ENCODING_UNSUPPORTED);
    rv.data_encoding = QN(1, "Default Binary");
    cr_assert_eq(read_req(&rq)->results[0].status, UAS_BAD_DATA_ENCODING_UNSUPPORTED);
    /* Not a structure value, or not the Value attribute. */
    rv.data_encoding = QN(0, "Default Binary");
    rv.node_id = N0(2258);
    cr_assert_eq(read_req(&rq)->results[0].status, UAS_BAD_DATA_ENCODING_INVALID);
    rv.node_id = N0(UAS_NS0ID_SERVER_SERVERSTATUS);
    rv.attribute_id = 3;
    cr_assert_eq(read_req(&rq)->results[0].status, UAS_BAD_DATA_ENCODING_INVALID);
}

/* ---- index ranges ---- */

static int32_t at(const uas_datavalue *d, size_t i)
{
    return ((int32_t *)d->value.data)[i];
}

Test(read, index_range_on_one_dimension)
{
    int32_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    uas_variant v = v_int32_array(&f, x, 10);
    cr_assert_eq(add_var(&f, N1(2), "Arr", &v, N0(UAS_NS0ID_INT32), 1, 1), UAS_GOOD);
    uas_datavalue d = read_attr(&f, N1(2), 13, "2:4");
    cr_assert_eq(d.status, UAS_GOOD);
    cr_assert_eq(d.value.array_length, 3);
    cr_assert(at(&d, 0) == 2 && at(&d, 2) == 4);
    d = read_attr(&f, N1(2), 13, "7");
    cr_assert_eq(d.value.array_length, 1);
    cr_assert_eq(at(&d, 0), 7);
    d = read_attr(&f, N1(2), 13, "8:20"); /* truncated at the end */
    cr_assert_eq(d.status, UAS_GOOD);
    cr_assert_eq(d.value.array_length, 2);
    cr_assert_eq(at(&d, 1), 9);
    cr_assert_eq(read_attr(&f, N1(2), 13, "10:12").status, UAS_BAD_INDEX_RANGE_NO_DATA);
    cr_assert_eq(read_attr(&f, N1(2), 13, "10").status, UAS_BAD_INDEX_RANGE_NO_DATA);
    cr_assert_eq(read_attr(&f, N1(2), 13, "1:2,0:1").status, UAS_BAD_INDEX_RANGE_NO_DATA);
    const char *bad[] = {"4:2", "3:3", "a", "-1", "1:", ":2", "1,", "1:2:3", " 1", "99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(read_attr(&f, N1(2), 13, bad[i]).status, UAS_BAD_INDEX_RANGE_INVALID, "'%s'",
                     bad[i]);
    /* A scalar number has no elements; a range on ArrayDimensions works. */
    uas_variant s = v_int32(&f, 1);
    cr_assert_eq(add_var(&f, N1(3), "Sc", &s, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    cr_assert_eq(read_attr(&f, N1(3), 13, "0").status, UAS_BAD_INDEX_RANGE_NO_DATA);
    if (full_ns0())
        cr_assert_eq(read_attr(&f, N0(2005), 16, "0").status, UAS_GOOD);
}

Test(read, index_range_on_matrix_and_strings)
{
    int32_t m[6] = {0, 1, 2, 10, 11, 12}; /* 2 x 3 */
    uas_variant v = v_int32_array(&f, m, 6);
    uint32_t dims[2] = {2, 3};
    v.array_dimensions = dims;
    v.array_dimensions_length = 2;
    cr_assert_eq(add_var(&f, N1(4), "Mat", &v, N0(UAS_NS0ID_INT32), 2, 1), UAS_GOOD);
    uas_datavalue d = read_attr(&f, N1(4), 13, "1,1:2");
    cr_assert_eq(d.status, UAS_GOOD);
    cr_assert_eq(d.value.array_length, 2);
    cr_assert(at(&d, 0) == 11 && at(&d, 1) == 12);
    cr_assert_eq(d.value.array_dimensions_length, 2);
    cr_assert(d.value.array_dimensions[0] == 1 && d.value.array_dimensions[1] == 2);
    d = read_attr(&f, N1(4), 13, "0:1,2");
    cr_assert(d.value.array_length == 2 && at(&d, 0) == 2 && at(&d, 1) == 12);
    cr_assert_eq(read_attr(&f, N1(4), 13, "1").status, UAS_BAD_INDEX_RANGE_NO_DATA);

    uas_variant s = v_string(&f, "hello");
    cr_assert_eq(add_var(&f, N1(5), "Str", &s, N0(UAS_NS0ID_STRING), -1, 1), UAS_GOOD);
    d = read_attr(&f, N1(5), 13, "1:3");
    cr_assert_eq(d.status, UAS_GOOD);
    cr_assert(uas_string_eq_cstr(d.value.data, "ell"));
    d = read_attr(&f, N1(5), 13, "4:9");
    cr_assert(uas_string_eq_cstr(d.value.data, "o"));
    cr_assert_eq(read_attr(&f, N1(5), 13, "5").status, UAS_BAD_INDEX_RANGE_NO_DATA);

    uas_string strs[2] = {uas_string_from("abc"), uas_string_from("defg")};
    uas_variant sa;
    uas_variant_set_array(&sa, strs, 2, UAS_TYPE(STRING));
    cr_assert_eq(add_var(&f, N1(6), "Strs", &sa, N0(UAS_NS0ID_STRING), 1, 1), UAS_GOOD);
    d = read_attr(&f, N1(6), 13, "0:1,1:2");
    cr_assert_eq(d.status, UAS_GOOD);
    uas_string *o = d.value.data;
    cr_assert(uas_string_eq_cstr(&o[0], "bc") && uas_string_eq_cstr(&o[1], "ef"));
    d = read_attr(&f, N1(6), 13, "1");
    cr_assert(uas_string_eq_cstr(&((uas_string *)d.value.data)[0], "defg"));
}

Test(read, scalar_read_allocates_nothing_on_the_heap)
{
    uas_variant v = v_int32(&f, 42);
    cr_assert_eq(add_var(&f, N1(20), "Hot", &v, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = N1(20);
    rv.attribute_id = 13;
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    rq.nodes_to_read = &rv;
    rq.nodes_to_read_count = 1;
    uas_read_response rs;
    fx_reset(&f);
    uas_mem_stats before, after;
    uas_mem_get_stats(&before);
    int good = 0;
    for (int i = 0; i < 100; i++) {
        memset(&rs, 0, sizeof(rs));
        uas_svc_read(&f.ctx, &rq, &rs);
        good += rs.results[0].status == UAS_GOOD && *(int32_t *)rs.results[0].value.data == 42;
        fx_reset(&f);
    }
    uas_mem_get_stats(&after);
    cr_assert_eq(good, 100);
    cr_assert_eq(after.allocs, before.allocs, "%llu heap allocations in 100 reads",
                 (unsigned long long)(after.allocs - before.allocs));
}
