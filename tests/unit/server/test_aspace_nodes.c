/* The embedding API: adding objects, variables, methods and references,
 * with every error status, and what the added nodes look like to clients. */
#include <criterion/criterion.h>
#include <stdio.h>
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

TestSuite(nodes, .init = setup, .fini = teardown);

static uas_status add_obj(uas_nodeid id, uas_nodeid parent, uint32_t reftype, const char *name,
                          const uas_nodeid *td)
{
    uas_nodeid rt = N0(reftype);
    uas_qualifiedname bn = QN(1, name);
    return uas_server_add_object(f.s, &id, &parent, &rt, name ? &bn : NULL, td, NULL);
}

Test(nodes, object_is_linked_both_ways_with_a_type_definition)
{
    cr_assert_eq(add_obj(S1("Dev"), N0(UAS_NS0ID_OBJECTSFOLDER), UAS_NS0ID_ORGANIZES, "Dev", NULL),
                 UAS_GOOD);
    uas_browse_response *rs =
        browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), 0, N0(0), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    const uas_reference_description *rd = find_ref(&rs->results[0], "Dev");
    cr_assert_not_null(rd);
    cr_assert_eq(rd->node_class, UAS_NODE_CLASS_OBJECT);
    cr_assert_eq(rd->browse_name.ns, 1);
    cr_assert(uas_string_eq_cstr(&rd->display_name.text, "Dev")); /* defaults to the name */
    cr_assert_eq(rd->type_definition.nodeid.id.numeric, UAS_NS0ID_BASEOBJECTTYPE);
    rs = browse(&f, S1("Dev"), 2, N0(0), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_eq(rs->results[0].references_count, 2);
    const uas_reference_description *up = find_ref(&rs->results[0], "Objects");
    cr_assert_not_null(up);
    cr_assert_not(up->is_forward);
    cr_assert_eq(up->reference_type_id.id.numeric, UAS_NS0ID_ORGANIZES);
    /* A folder by type definition; attributes as given. */
    uas_nodeid folder = N0(UAS_NS0ID_FOLDERTYPE), id = N1(7), parent = S1("Dev");
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES);
    uas_qualifiedname bn = QN(1, "Folder");
    uas_object_attributes a;
    memset(&a, 0, sizeof(a));
    a.specified_attributes =
        UAS_NODE_ATTRIBUTES_MASK_DISPLAY_NAME | UAS_NODE_ATTRIBUTES_MASK_EVENT_NOTIFIER;
    a.display_name.locale = uas_string_from("en");
    a.display_name.text = uas_string_from("My folder");
    a.event_notifier = 1;
    a.description.text = uas_string_from("ignored: not specified");
    cr_assert_eq(uas_server_add_object(f.s, &id, &parent, &org, &bn, &folder, &a), UAS_GOOD);
    uas_localizedtext *dn = read_attr(&f, id, 4, NULL).value.data;
    cr_assert(uas_string_eq_cstr(&dn->text, "My folder") && uas_string_eq_cstr(&dn->locale, "en"));
    cr_assert_null(((uas_localizedtext *)read_attr(&f, id, 5, NULL).value.data)->text.data);
    cr_assert_eq(*(uint8_t *)read_attr(&f, id, 12, NULL).value.data, 1);
    rs =
        browse(&f, id, 0, N0(UAS_NS0ID_HASTYPEDEFINITION), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_eq(rs->results[0].references[0].node_id.nodeid.id.numeric, UAS_NS0ID_FOLDERTYPE);
}

Test(nodes, add_errors)
{
    uas_nodeid objects = N0(UAS_NS0ID_OBJECTSFOLDER);
    cr_assert_eq(add_obj(N1(1), objects, UAS_NS0ID_ORGANIZES, "A", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(N1(1), objects, UAS_NS0ID_ORGANIZES, "B", NULL), UAS_BAD_NODE_ID_EXISTS);
    cr_assert_eq(add_obj(N0(UAS_NS0ID_SERVER), objects, UAS_NS0ID_ORGANIZES, "B", NULL),
                 UAS_BAD_NODE_ID_EXISTS);
    cr_assert_eq(add_obj(N0(0), objects, UAS_NS0ID_ORGANIZES, "B", NULL), UAS_BAD_NODE_ID_INVALID);
    cr_assert_eq(add_obj(uas_nodeid_numeric(9, 1), objects, UAS_NS0ID_ORGANIZES, "B", NULL),
                 UAS_BAD_NODE_ID_INVALID); /* namespace 9 is not registered */
    cr_assert_eq(add_obj(N1(2), N1(999), UAS_NS0ID_ORGANIZES, "B", NULL),
                 UAS_BAD_PARENT_NODE_ID_INVALID);
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_SERVER, "B", NULL),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID); /* not a reference type */
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_HIERARCHICALREFERENCES, "B", NULL),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID); /* abstract */
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_HASTYPEDEFINITION, "B", NULL),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID); /* not hierarchical */
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_ORGANIZES, NULL, NULL),
                 UAS_BAD_BROWSE_NAME_INVALID);
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_ORGANIZES, "", NULL),
                 UAS_BAD_BROWSE_NAME_INVALID);
    uas_nodeid td = N0(UAS_NS0ID_SERVER);
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_ORGANIZES, "B", &td),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    td = N0(UAS_NS0ID_BASEDATAVARIABLETYPE);
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_ORGANIZES, "B", &td),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    td = N0(2004); /* ServerType: a real ObjectType */
    cr_assert_eq(add_obj(N1(2), objects, UAS_NS0ID_ORGANIZES, "B", &td), UAS_GOOD);
    /* Nothing of the failed attempts is visible. */
    uas_browse_response *rs =
        browse(&f, objects, 0, N0(0), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    size_t mine = 0;
    for (size_t i = 0; i < rs->results[0].references_count; i++)
        mine += rs->results[0].references[i].node_id.nodeid.ns == 1;
    cr_assert_eq(mine, 2);
}

Test(nodes, variable_errors_and_defaults)
{
    uas_variant d = v_double(&f, 2.5);
    cr_assert_eq(add_var(&f, N1(1), "X", &d, N0(UAS_NS0ID_INT32), -1, 1), UAS_BAD_TYPE_MISMATCH);
    cr_assert_eq(add_var(&f, N1(1), "X", &d, N0(UAS_NS0ID_DOUBLE), 1, 1), UAS_BAD_TYPE_MISMATCH);
    cr_assert_eq(add_var(&f, N1(1), "X", &d, N0(UAS_NS0ID_SERVER), -1, 1),
                 UAS_BAD_TYPE_MISMATCH); /* not a DataType */
    uas_nodeid id = N1(1), parent = N0(UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES), abstract = N0(62); /* BaseVariableType */
    uas_nodeid objtype = N0(UAS_NS0ID_BASEOBJECTTYPE);
    uas_qualifiedname bn = QN(1, "X");
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    a.value = d; /* specified_attributes 0: non-zero fields count */
    cr_assert_eq(uas_server_add_variable(f.s, &id, &parent, &org, &bn, &abstract, &a),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    cr_assert_eq(uas_server_add_variable(f.s, &id, &parent, &org, &bn, &objtype, &a),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    cr_assert_eq(uas_server_add_variable(f.s, &id, &parent, &org, &bn, NULL, &a), UAS_GOOD);
    /* Defaults derived from the value. */
    cr_assert_eq(((uas_nodeid *)read_attr(&f, id, 14, NULL).value.data)->id.numeric,
                 UAS_NS0ID_DOUBLE);
    cr_assert_eq(*(int32_t *)read_attr(&f, id, 15, NULL).value.data, -1);
    cr_assert_eq(*(uint8_t *)read_attr(&f, id, 17, NULL).value.data, 1);
    cr_assert_eq(*(double *)read_attr(&f, id, 13, NULL).value.data, 2.5);
    uas_browse_response *rs =
        browse(&f, id, 0, N0(UAS_NS0ID_HASTYPEDEFINITION), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_eq(rs->results[0].references[0].node_id.nodeid.id.numeric,
                 UAS_NS0ID_BASEDATAVARIABLETYPE);
    /* A variable under a variable (HasComponent), a property type. */
    uas_nodeid pid = N1(2), prop = N0(UAS_NS0ID_PROPERTYTYPE), hp = N0(UAS_NS0ID_HASPROPERTY);
    uas_qualifiedname pbn = QN(1, "Unit");
    cr_assert_eq(uas_server_add_variable(f.s, &pid, &id, &hp, &pbn, &prop, NULL), UAS_GOOD);
    cr_assert_eq(read_attr(&f, pid, 13, NULL).value.type, NULL); /* added without a value */
    cr_assert_eq(*(int32_t *)read_attr(&f, pid, 15, NULL).value.data, -2);
}

Test(nodes, every_kind_of_node_id)
{
    uas_nodeid objects = N0(UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid g;
    memset(&g, 0, sizeof(g));
    g.ns = 1;
    g.kind = UAS_NODEID_GUID;
    g.id.guid.data1 = 0xdeadbeef;
    g.id.guid.data4[7] = 9;
    uas_nodeid b;
    memset(&b, 0, sizeof(b));
    b.ns = 1;
    b.kind = UAS_NODEID_BYTESTRING;
    uint8_t bytes[3] = {0, 1, 2};
    b.id.bytestring.data = bytes;
    b.id.bytestring.length = 3;
    cr_assert_eq(add_obj(g, objects, UAS_NS0ID_ORGANIZES, "G", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(b, objects, UAS_NS0ID_ORGANIZES, "B", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(S1("s"), objects, UAS_NS0ID_ORGANIZES, "S", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(N1(1), objects, UAS_NS0ID_ORGANIZES, "N", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(g, objects, UAS_NS0ID_ORGANIZES, "G", NULL), UAS_BAD_NODE_ID_EXISTS);
    cr_assert_eq(add_obj(b, objects, UAS_NS0ID_ORGANIZES, "B", NULL), UAS_BAD_NODE_ID_EXISTS);
    /* Same text, different kind or namespace: different nodes. */
    cr_assert_eq(add_obj(uas_nodeid_string(0, "s"), objects, UAS_NS0ID_ORGANIZES, "S0", NULL),
                 UAS_GOOD);
    bytes[0] = 'x'; /* the id was copied */
    uas_qualifiedname *bn = read_attr(&f,
                                      (uas_nodeid){.ns = 1,
                                                   .kind = UAS_NODEID_BYTESTRING,
                                                   .id.bytestring = {3, (uint8_t[]){0, 1, 2}}},
                                      3, NULL)
                                .value.data;
    cr_assert(uas_string_eq_cstr(&bn->name, "B"));
    bn = read_attr(&f, g, 3, NULL).value.data;
    cr_assert(uas_string_eq_cstr(&bn->name, "G"));
}

Test(nodes, many_nodes_grow_the_map)
{
    uas_nodeid parent = S1("Big");
    cr_assert_eq(add_obj(parent, N0(UAS_NS0ID_OBJECTSFOLDER), UAS_NS0ID_ORGANIZES, "Big", NULL),
                 UAS_GOOD);
    char name[32];
    for (uint32_t i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "n%u", i);
        uas_nodeid id = uas_nodeid_string(1, name);
        cr_assert_eq(add_obj(id, parent, UAS_NS0ID_HASCOMPONENT, name, NULL), UAS_GOOD);
    }
    for (uint32_t i = 0; i < 5000; i += 7) {
        snprintf(name, sizeof(name), "n%u", i);
        uas_qualifiedname *bn = read_attr(&f, uas_nodeid_string(1, name), 3, NULL).value.data;
        cr_assert(uas_string_eq_cstr(&bn->name, name));
    }
    cr_assert_eq(browse_count(&f, parent, 0, N0(UAS_NS0ID_HASCOMPONENT)), 5000);
}

Test(nodes, method_gets_argument_properties)
{
    uas_nodeid obj = S1("O"), m = S1("O.M"), comp = N0(UAS_NS0ID_HASCOMPONENT);
    cr_assert_eq(add_obj(obj, N0(UAS_NS0ID_OBJECTSFOLDER), UAS_NS0ID_ORGANIZES, "O", NULL),
                 UAS_GOOD);
    uas_argument in[2];
    memset(in, 0, sizeof(in));
    in[0].name = uas_string_from("x");
    in[0].data_type = N0(UAS_NS0ID_DOUBLE);
    in[0].value_rank = -1;
    in[1].name = uas_string_from("y");
    in[1].data_type = N0(UAS_NS0ID_STRING);
    in[1].value_rank = 1;
    uas_qualifiedname bn = QN(1, "M");
    cr_assert_eq(uas_server_add_method(f.s, &m, &obj, &comp, &bn, NULL, 2, in, 0, NULL, NULL, NULL),
                 UAS_GOOD);
    uas_browse_response *rs =
        browse(&f, m, 0, N0(UAS_NS0ID_HASPROPERTY), false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_eq(rs->results[0].references_count, 1); /* no outputs: no OutputArguments */
    const uas_reference_description *rd = find_ref(&rs->results[0], "InputArguments");
    cr_assert_not_null(rd);
    cr_assert_eq(rd->browse_name.ns, 0);
    cr_assert_eq(rd->type_definition.nodeid.id.numeric, UAS_NS0ID_PROPERTYTYPE);
    cr_assert_eq(rd->node_id.nodeid.ns, 1);
    uas_nodeid pid = rd->node_id.nodeid;
    uas_datavalue d = read_attr(&f, pid, 13, NULL);
    cr_assert_eq(d.value.type, UAS_TYPE(ARGUMENT));
    cr_assert_eq(d.value.array_length, 2);
    uas_argument *got = d.value.data;
    cr_assert(uas_equal(&got[1], &in[1], UAS_TYPE(ARGUMENT)));
    cr_assert_eq(((uas_nodeid *)read_attr(&f, pid, 14, NULL).value.data)->id.numeric,
                 UAS_NS0ID_ARGUMENT);
    cr_assert_eq(*(uint32_t *)read_attr(&f, pid, 16, NULL).value.data, 2);
    cr_assert_eq(*(bool *)read_attr(&f, m, 21, NULL).value.data, true);
    /* Errors: argument of an unknown DataType, missing parent. */
    uas_nodeid m2 = S1("O.M2");
    in[0].data_type = N1(77);
    cr_assert_eq(
        uas_server_add_method(f.s, &m2, &obj, &comp, &bn, NULL, 2, in, 0, NULL, NULL, NULL),
        UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(read_attr(&f, m2, 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    uas_nodeid nowhere = S1("nowhere");
    cr_assert_eq(
        uas_server_add_method(f.s, &m2, &nowhere, &comp, &bn, NULL, 0, NULL, 0, NULL, NULL, NULL),
        UAS_BAD_PARENT_NODE_ID_INVALID);
}

Test(nodes, add_reference)
{
    uas_nodeid a = S1("A"), b = S1("B"), objects = N0(UAS_NS0ID_OBJECTSFOLDER);
    cr_assert_eq(add_obj(a, objects, UAS_NS0ID_ORGANIZES, "A", NULL), UAS_GOOD);
    cr_assert_eq(add_obj(b, objects, UAS_NS0ID_ORGANIZES, "B", NULL), UAS_GOOD);
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES), hier = N0(UAS_NS0ID_HIERARCHICALREFERENCES);
    uas_nodeid notref = N0(UAS_NS0ID_SERVER), unknown = S1("nope");
    uas_expandednodeid xb = X(b), xu = X(unknown);
    cr_assert_eq(uas_server_add_reference(f.s, &a, &org, &xb, true), UAS_GOOD);
    cr_assert_eq(uas_server_add_reference(f.s, &a, &org, &xb, true),
                 UAS_BAD_DUPLICATE_REFERENCE_NOT_ALLOWED);
    cr_assert_eq(uas_server_add_reference(f.s, &unknown, &org, &xb, true),
                 UAS_BAD_SOURCE_NODE_ID_INVALID);
    cr_assert_eq(uas_server_add_reference(f.s, &a, &org, &xu, true),
                 UAS_BAD_TARGET_NODE_ID_INVALID);
    cr_assert_eq(uas_server_add_reference(f.s, &a, &notref, &xb, true),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID);
    cr_assert_eq(uas_server_add_reference(f.s, &a, &hier, &xb, true),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID);
    /* Both ends see it. */
    uas_browse_response *rs = browse(&f, b, 1, org, false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "A"));
    rs = browse(&f, a, 0, org, false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "B"));
    /* An inverse reference given from the other side is the same one. */
    uas_expandednodeid xa = X(a);
    cr_assert_eq(uas_server_add_reference(f.s, &b, &org, &xa, false),
                 UAS_BAD_DUPLICATE_REFERENCE_NOT_ALLOWED);
    /* References on namespace 0 nodes, and to other servers. */
    uas_nodeid server = N0(UAS_NS0ID_SERVER);
    cr_assert_eq(uas_server_add_reference(f.s, &server, &org, &xa, true), UAS_GOOD);
    rs = browse(&f, server, 0, org, false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "A"));
    uas_expandednodeid far = X(N1(1));
    far.server_index = 3;
    cr_assert_eq(uas_server_add_reference(f.s, &a, &org, &far, true), UAS_GOOD);
    rs = browse(&f, a, 0, org, false, 0, UAS_BROWSE_RESULT_MASK_ALL, 0);
    bool seen = false;
    for (size_t i = 0; i < rs->results[0].references_count; i++) {
        const uas_reference_description *rd = &rs->results[0].references[i];
        if (rd->node_id.server_index == 3) {
            seen = true;
            cr_assert_eq(rd->node_class, 0); /* unknown here */
            cr_assert_null(rd->browse_name.name.data);
        }
    }
    cr_assert(seen);
    /* A node class mask hides what cannot be classified. */
    rs = browse(&f, a, 0, org, false, UAS_NODE_CLASS_OBJECT, UAS_BROWSE_RESULT_MASK_ALL, 0);
    cr_assert_eq(rs->results[0].references_count, 1);
}
