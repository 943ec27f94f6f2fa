/* NodeManagement handlers (svc_nodemgmt.c) driven directly: the permission
 * each one needs, string NodeIds through add and delete (the deleted
 * node's memory stays valid), references removed on both ends, namespace 0
 * rows not deletable, references of a loaded model's own ReferenceType. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authz.h"
#include "server_internal.h"
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

TestSuite(nodemgmt, .init = setup, .fini = teardown);

/* One AddNodes item; attrs of type at (NULL: none). */
static uas_status add_node(uint32_t cls, const char *id, uas_nodeid parent, uint32_t reftype,
                           const char *name, uas_nodeid td, const uas_type *at, void *attrs)
{
    uas_add_nodes_item it;
    memset(&it, 0, sizeof(it));
    it.parent_node_id = X(parent);
    it.reference_type_id = N0(reftype);
    it.requested_new_node_id = X(S1(id));
    it.browse_name = QN(1, name);
    it.node_class = cls;
    it.type_definition = X(td);
    if (at) {
        it.node_attributes.encoding = UAS_EXTOBJ_DECODED;
        it.node_attributes.content.decoded.type = at;
        it.node_attributes.content.decoded.data = attrs;
    }
    uas_add_nodes_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_add = &it;
    rq.nodes_to_add_count = 1;
    uas_add_nodes_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_add_nodes(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    return rs->results[0].status_code;
}

/* An Object below Objects (Organizes, BaseObjectType). */
static uas_status add_object(const char *id, const char *name)
{
    return add_node(UAS_NODE_CLASS_OBJECT, id, N0(85), 35, name, N0(58), NULL, NULL);
}

static uas_status delete_node_refs(uas_nodeid id, bool delete_target_references)
{
    uas_delete_nodes_item it = {.node_id = id,
                                .delete_target_references = delete_target_references};
    uas_delete_nodes_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_delete = &it;
    rq.nodes_to_delete_count = 1;
    uas_delete_nodes_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_delete_nodes(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    return rs->results[0];
}

static uas_status delete_node(uas_nodeid id)
{
    return delete_node_refs(id, true);
}

/* The references of id in direction dir (0 forward, 1 inverse) of type
 * reftype whose target is the NodeId target, found or not. */
static size_t refs_to(uas_nodeid id, int dir, uas_nodeid reftype, uas_nodeid target)
{
    uas_browse_response *rs = browse(&f, id, dir, reftype, false, 0, 63, 0);
    size_t n = 0;
    for (size_t i = 0; i < rs->results[0].references_count; i++)
        n += uas_equal(&rs->results[0].references[i].node_id.nodeid, &target, UAS_TYPE(NODE_ID));
    return n;
}

static uas_status reference(bool add, uas_nodeid src, uas_nodeid type, uas_nodeid dst)
{
    uas_status out;
    if (add) {
        uas_add_references_item it;
        memset(&it, 0, sizeof(it));
        it.source_node_id = src;
        it.reference_type_id = type;
        it.is_forward = true;
        it.target_node_id = X(dst);
        uas_add_references_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.references_to_add = &it;
        rq.references_to_add_count = 1;
        uas_add_references_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
        uas_svc_add_references(&f.ctx, &rq, rs);
        out = rs->results ? rs->results[0] : rs->response_header.service_result;
    } else {
        uas_delete_references_item it;
        memset(&it, 0, sizeof(it));
        it.source_node_id = src;
        it.reference_type_id = type;
        it.is_forward = true;
        it.target_node_id = X(dst);
        it.delete_bidirectional = true;
        uas_delete_references_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.references_to_delete = &it;
        rq.references_to_delete_count = 1;
        uas_delete_references_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
        uas_svc_delete_references(&f.ctx, &rq, rs);
        out = rs->results ? rs->results[0] : rs->response_header.service_result;
    }
    return out;
}

Test(nodemgmt, anonymous_and_operator_are_refused_everything)
{
    cr_assert_eq(add_object("Mine", "Mine"), UAS_GOOD);
    uint32_t roles[] = {UAS_ROLE_BIT(UAS_ROLE_ANONYMOUS),
                        UAS_ROLE_BIT(UAS_ROLE_ANONYMOUS) | UAS_ROLE_BIT(UAS_ROLE_OPERATOR)};
    for (size_t i = 0; i < 2; i++) {
        f.se.roles = roles[i];
        cr_assert_eq(add_object("Other", "Other"), UAS_BAD_USER_ACCESS_DENIED);
        cr_assert_eq(reference(true, S1("Mine"), N0(35), N0(2253)), UAS_BAD_USER_ACCESS_DENIED);
        cr_assert_eq(reference(false, N0(85), N0(35), S1("Mine")), UAS_BAD_USER_ACCESS_DENIED);
        cr_assert_eq(delete_node(S1("Mine")), UAS_BAD_USER_ACCESS_DENIED);
    }
    f.se.roles = UAS_ROLE_BIT(UAS_ROLE_ANONYMOUS) | UAS_ROLE_BIT(UAS_ROLE_CONFIGURE_ADMIN);
    cr_assert_eq(add_object("Other", "Other"), UAS_GOOD);
    cr_assert_eq(delete_node(S1("Mine")), UAS_GOOD);
}

Test(nodemgmt, deleted_node_is_gone_with_the_references_to_it)
{
    cr_assert_eq(add_object("Line.A", "LineA"), UAS_GOOD);
    cr_assert_eq(add_object("Line.A", "Again"), UAS_BAD_NODE_ID_EXISTS);
    cr_assert_eq(reference(true, S1("Line.A"), N0(35), N0(2253)), UAS_GOOD);
    cr_assert_eq(reference(true, S1("Line.A"), N0(35), N0(2253)),
                 UAS_BAD_DUPLICATE_REFERENCE_NOT_ALLOWED);
    size_t before = browse_count(&f, N0(2253), 1, N0(35));
    cr_assert_eq(delete_node(S1("Line.A")), UAS_GOOD);
    cr_assert_eq(read_attr(&f, S1("Line.A"), 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    uas_browse_response *rs = browse(&f, N0(85), 0, N0(35), false, 0, 63, 0);
    cr_assert_null(find_ref(&rs->results[0], "LineA"));
    cr_assert_eq(browse_count(&f, N0(2253), 1, N0(35)), before - 1);
    cr_assert_eq(delete_node(S1("Line.A")), UAS_BAD_NODE_ID_UNKNOWN);
    /* The id is free again. */
    cr_assert_eq(add_object("Line.A", "LineA"), UAS_GOOD);
}

Test(nodemgmt, namespace0_rows_and_their_references_are_not_deletable)
{
    cr_assert_eq(delete_node(N0(2253)), UAS_BAD_NO_DELETE_RIGHTS);
    cr_assert_eq(reference(false, N0(85), N0(35), N0(2255)), UAS_BAD_NOT_FOUND);
    cr_assert_eq(reference(false, N0(84), N0(35), N0(85)), UAS_BAD_NO_DELETE_RIGHTS);
    cr_assert_eq(reference(true, N0(85), N0(35), N0(99999)), UAS_BAD_TARGET_NODE_ID_INVALID);
    cr_assert_eq(reference(true, N0(85), N0(58), N0(2253)), UAS_BAD_REFERENCE_TYPE_ID_INVALID);
}

Test(nodemgmt, references_added_and_removed_on_both_ends)
{
    cr_assert_eq(add_object("R", "R"), UAS_GOOD);
    cr_assert_eq(reference(true, S1("R"), N0(35), N0(2253)), UAS_GOOD);
    uas_browse_response *rs = browse(&f, N0(2253), 1, N0(35), false, 0, 63, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "R"));
    cr_assert_eq(reference(false, S1("R"), N0(35), N0(2253)), UAS_GOOD);
    fx_reset(&f);
    rs = browse(&f, N0(2253), 1, N0(35), false, 0, 63, 0);
    cr_assert_null(find_ref(&rs->results[0], "R"));
    cr_assert_eq(reference(false, S1("R"), N0(35), N0(2253)), UAS_BAD_NOT_FOUND);
}

/* Part 4, 5.8.4: deleteTargetReferences false removes only the references
 * whose source is the deleted node (here Node -> Server, on both ends);
 * Objects -> Node, a reference of another node pointing to it, is left.
 * true removes that one too. */
Test(nodemgmt, delete_target_references_decides_about_references_pointing_to_the_node)
{
    for (int with = 0; with < 2; with++) {
        cr_assert_eq(add_object("Node", "Node"), UAS_GOOD);
        cr_assert_eq(reference(true, S1("Node"), N0(35), N0(2253)), UAS_GOOD);
        cr_assert_eq(refs_to(N0(85), 0, N0(35), S1("Node")), 1);
        cr_assert_eq(refs_to(N0(2253), 1, N0(35), S1("Node")), 1);
        cr_assert_eq(delete_node_refs(S1("Node"), with), UAS_GOOD);
        fx_reset(&f);
        cr_assert_eq(read_attr(&f, S1("Node"), 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
        cr_assert_eq(refs_to(N0(2253), 1, N0(35), S1("Node")), 0, "with=%d", with);
        cr_assert_eq(refs_to(N0(85), 0, N0(35), S1("Node")), with ? 0 : 1, "with=%d", with);
        if (!with) {
            /* The dangling reference names no node; the next node with
             * the id is its target. */
            uas_browse_response *rs = browse(&f, N0(85), 0, N0(35), false, 0, 63, 0);
            cr_assert_null(find_ref(&rs->results[0], "Node"));
            cr_assert_eq(add_object("Node", "Node"), UAS_GOOD);
            cr_assert_not_null(
                find_ref(&browse(&f, N0(85), 0, N0(35), false, 0, 63, 0)->results[0], "Node"));
            cr_assert_eq(delete_node_refs(S1("Node"), true), UAS_GOOD);
            cr_assert_eq(refs_to(N0(85), 0, N0(35), S1("Node")), 0);
        }
    }
}

/* ---- type and view nodes ---- */

static bool read_bool(uas_nodeid id, uint32_t attr)
{
    uas_datavalue dv = read_attr(&f, id, attr, NULL);
    cr_assert_eq(dv.status, UAS_GOOD, "attr %u: %s", attr, uas_status_name(dv.status));
    cr_assert_eq(dv.value.type, UAS_TYPE(BOOLEAN));
    return *(bool *)dv.value.data;
}

Test(nodemgmt, type_and_view_nodes_are_added_below_their_supertype)
{
    need_full_ns0();
    uas_nodeid none = N0(0);
    /* ObjectType, an instance of it; an abstract one has none. */
    uas_object_type_attributes ot = {.is_abstract = false};
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "PumpType", N0(58), 45, "PumpType", none,
                          UAS_TYPE(OBJECT_TYPE_ATTRIBUTES), &ot),
                 UAS_GOOD);
    cr_assert_eq(read_attr(&f, S1("PumpType"), 2, NULL).value.data
                     ? *(int32_t *)read_attr(&f, S1("PumpType"), 2, NULL).value.data
                     : -1,
                 UAS_NODE_CLASS_OBJECT_TYPE);
    cr_assert_not(read_bool(S1("PumpType"), 8));
    cr_assert_not_null(
        find_ref(&browse(&f, N0(58), 0, N0(45), false, 0, 63, 0)->results[0], "PumpType"));
    cr_assert_eq(
        add_node(UAS_NODE_CLASS_OBJECT, "Pump1", N0(85), 35, "Pump1", S1("PumpType"), NULL, NULL),
        UAS_GOOD);
    ot.is_abstract = true;
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "AbstractType", N0(58), 45, "AbstractType",
                          none, UAS_TYPE(OBJECT_TYPE_ATTRIBUTES), &ot),
                 UAS_GOOD);
    cr_assert(read_bool(S1("AbstractType"), 8));
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT, "Pump2", N0(85), 35, "Pump2", S1("AbstractType"),
                          NULL, NULL),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    /* VariableType with a value; a DataType whose Variables take Int32. */
    uas_variable_type_attributes vt;
    memset(&vt, 0, sizeof(vt));
    vt.value = v_double(&f, 1.5);
    vt.data_type = N0(11);
    vt.value_rank = -1;
    cr_assert_eq(add_node(UAS_NODE_CLASS_VARIABLE_TYPE, "LevelType", N0(63), 45, "LevelType", none,
                          UAS_TYPE(VARIABLE_TYPE_ATTRIBUTES), &vt),
                 UAS_GOOD);
    uas_datavalue dv = read_attr(&f, S1("LevelType"), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(*(double *)dv.value.data, 1.5);
    cr_assert_eq(
        add_node(UAS_NODE_CLASS_DATA_TYPE, "Counts", N0(6), 45, "Counts", none, NULL, NULL),
        UAS_GOOD);
    uas_variant i = v_int32(&f, 7);
    cr_assert_eq(add_var(&f, S1("CountVar"), "CountVar", &i, S1("Counts"), -1, 3), UAS_GOOD);
    uas_variant d = v_double(&f, 7.5);
    cr_assert_eq(add_var(&f, S1("CountVar2"), "CountVar2", &d, S1("Counts"), -1, 3),
                 UAS_BAD_TYPE_MISMATCH);
    /* ReferenceType: usable at once, its InverseName readable. */
    uas_reference_type_attributes rt;
    memset(&rt, 0, sizeof(rt));
    rt.inverse_name.text = uas_string_from("FedBy");
    cr_assert_eq(add_node(UAS_NODE_CLASS_REFERENCE_TYPE, "Feeds", N0(32), 45, "Feeds", none,
                          UAS_TYPE(REFERENCE_TYPE_ATTRIBUTES), &rt),
                 UAS_GOOD);
    dv = read_attr(&f, S1("Feeds"), 10, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert(uas_string_eq_cstr(&((uas_localizedtext *)dv.value.data)->text, "FedBy"));
    cr_assert_not(read_bool(S1("Feeds"), 9));
    cr_assert_eq(reference(true, S1("Pump1"), S1("Feeds"), N0(2253)), UAS_GOOD);
    cr_assert_eq(refs_to(N0(2253), 1, S1("Feeds"), S1("Pump1")), 1);
    cr_assert_eq(refs_to(N0(2253), 1, N0(32), S1("Pump1")), 0); /* no subtypes asked */
    /* View below the Views folder. */
    uas_view_attributes va = {.specified_attributes = UAS_NODE_ATTRIBUTES_MASK_CONTAINS_NO_LOOPS,
                              .contains_no_loops = true};
    cr_assert_eq(add_node(UAS_NODE_CLASS_VIEW, "Plant", N0(87), 35, "Plant", none,
                          UAS_TYPE(VIEW_ATTRIBUTES), &va),
                 UAS_GOOD);
    cr_assert(read_bool(S1("Plant"), 11));
    cr_assert_eq(*(int32_t *)read_attr(&f, S1("Plant"), 2, NULL).value.data, UAS_NODE_CLASS_VIEW);
}

Test(nodemgmt, type_nodes_get_the_status_codes_of_part4)
{
    need_full_ns0();
    uas_nodeid none = N0(0);
    uas_object_type_attributes ot;
    memset(&ot, 0, sizeof(ot));
    uas_variable_type_attributes vt;
    memset(&vt, 0, sizeof(vt));
    const uas_type *OT = UAS_TYPE(OBJECT_TYPE_ATTRIBUTES);
    /* The supertype must be of the node's class, by HasSubtype. */
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(63), 45, "T1", none, OT, &ot),
                 UAS_BAD_PARENT_NODE_ID_INVALID);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N1(4711), 45, "T1", none, OT, &ot),
                 UAS_BAD_PARENT_NODE_ID_INVALID);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 35, "T1", none, OT, &ot),
                 UAS_BAD_REFERENCE_NOT_ALLOWED);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 58, "T1", none, OT, &ot),
                 UAS_BAD_REFERENCE_TYPE_ID_INVALID);
    /* No TypeDefinition, the class's attributes. */
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 45, "T1", N0(58), OT, &ot),
                 UAS_BAD_TYPE_DEFINITION_INVALID);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 45, "T1", none,
                          UAS_TYPE(VARIABLE_TYPE_ATTRIBUTES), &vt),
                 UAS_BAD_NODE_ATTRIBUTES_INVALID);
    cr_assert_eq(add_node(0x100, "T1", N0(58), 45, "T1", none, NULL, NULL),
                 UAS_BAD_NODE_CLASS_INVALID);
    /* Ids and names. */
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 45, "T1", none, OT, &ot),
                 UAS_GOOD);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T1", N0(58), 45, "T1b", none, OT, &ot),
                 UAS_BAD_NODE_ID_EXISTS);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T2", N0(58), 45, "T1", none, OT, &ot),
                 UAS_BAD_BROWSE_NAME_DUPLICATED);
    cr_assert_eq(add_object("Twin.1", "Twin"), UAS_GOOD);
    cr_assert_eq(add_object("Twin.2", "Twin"), UAS_BAD_BROWSE_NAME_DUPLICATED);
    /* Anonymous users may add no type either. */
    f.se.roles = UAS_ROLE_BIT(UAS_ROLE_ANONYMOUS);
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "T3", N0(58), 45, "T3", none, OT, &ot),
                 UAS_BAD_USER_ACCESS_DENIED);
}

/* A structure DataType added with its DataTypeDefinition (GenericAttributes,
 * attribute 23): readable, and the run-time codec checks values of it. */
Test(nodemgmt, data_type_definition_of_an_added_structure_decodes_its_values)
{
    need_full_ns0();
    uas_structure_field fields[2];
    memset(fields, 0, sizeof(fields));
    fields[0].name = uas_string_from("X");
    fields[0].data_type = N0(11);
    fields[0].value_rank = -1;
    fields[1].name = uas_string_from("Count");
    fields[1].data_type = N0(6);
    fields[1].value_rank = -1;
    uas_structure_definition sd;
    memset(&sd, 0, sizeof(sd));
    sd.default_encoding_id = S1("Sample.Binary");
    sd.structure_type = UAS_STRUCTURE_TYPE_STRUCTURE;
    sd.fields = fields;
    sd.fields_count = 2;
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = UAS_TYPE(STRUCTURE_DEFINITION);
    x.content.decoded.data = &sd;
    uas_generic_attribute_value gv;
    memset(&gv, 0, sizeof(gv));
    gv.attribute_id = 23;
    uas_variant_set_scalar(&gv.value, &x, UAS_TYPE(EXTENSION_OBJECT));
    uas_generic_attributes ga;
    memset(&ga, 0, sizeof(ga));
    ga.attribute_values = &gv;
    ga.attribute_values_count = 1;
    const uas_type *GA = UAS_TYPE(GENERIC_ATTRIBUTES);
    /* Refused: a structure below Int32, a field of no DataType. */
    cr_assert_eq(add_node(UAS_NODE_CLASS_DATA_TYPE, "Sample", N0(6), 45, "Sample", N0(0), GA, &ga),
                 UAS_BAD_NODE_ATTRIBUTES_INVALID);
    fields[1].data_type = N1(4711);
    cr_assert_eq(add_node(UAS_NODE_CLASS_DATA_TYPE, "Sample", N0(22), 45, "Sample", N0(0), GA, &ga),
                 UAS_BAD_NODE_ATTRIBUTES_INVALID);
    fields[1].data_type = N0(6);
    cr_assert_eq(add_node(UAS_NODE_CLASS_DATA_TYPE, "Sample", N0(22), 45, "Sample", N0(0), GA, &ga),
                 UAS_GOOD);
    uas_datavalue dv = read_attr(&f, S1("Sample"), 23, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(dv.value.type, UAS_TYPE(STRUCTURE_DEFINITION));
    const uas_structure_definition *got = dv.value.data;
    cr_assert_eq(got->fields_count, 2);
    cr_assert(uas_equal(&got->base_data_type, &(uas_nodeid){0}, UAS_TYPE(NODE_ID)) == false);
    /* Values: a body of Double + Int32 is one, a shorter one is not. */
    uint8_t body[12] = {0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 5, 0, 0, 0};
    uas_extensionobject v;
    memset(&v, 0, sizeof(v));
    v.encoding = UAS_EXTOBJ_BYTESTRING;
    v.content.encoded.type_id = S1("Sample.Binary");
    v.content.encoded.body.data = body;
    v.content.encoded.body.length = sizeof(body);
    uas_variant val;
    uas_variant_set_scalar(&val, &v, UAS_TYPE(EXTENSION_OBJECT));
    cr_assert_eq(add_var(&f, S1("S1"), "S1", &val, S1("Sample"), -1, 3), UAS_GOOD);
    v.content.encoded.body.length = 8;
    cr_assert_eq(add_var(&f, S1("S2"), "S2", &val, S1("Sample"), -1, 3), UAS_BAD_TYPE_MISMATCH);
}

/* ---- the NodeManagement store (nodeset_store = FILE) ---- */

static char store_path[256];
static char last_error[1024];

static void capture(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud;
    (void)module;
    if (level == UAS_LOG_ERROR && !last_error[0])
        snprintf(last_error, sizeof(last_error), "%s", msg);
}

/* A "restart": the server goes (writing what is pending) and a new one
 * with the same store comes. The store's status. */
static uas_status restart(void)
{
    fx_fini(&f);
    uas_server_config c;
    uas_server_config_default(&c);
    c.threads = 1;
    c.nodeset_store = store_path;
    c.nodeset_store_interval_ms = 0;
    fx_init(&f, &c);
    last_error[0] = 0;
    uas_log_set_sink(capture, NULL);
    uas_status st = uas_nodeset_store_open(f.s);
    uas_log_set_sink(NULL, NULL);
    return st;
}

static void store_dir(void)
{
    snprintf(store_path, sizeof(store_path), "/tmp/uas-store-XXXXXX");
    cr_assert_not_null(mkdtemp(store_path));
    strcat(store_path, "/store.xml");
}

static void store_cleanup(void)
{
    unlink(store_path);
    *strrchr(store_path, '/') = 0;
    rmdir(store_path);
}

Test(nodemgmt, store_keeps_added_nodes_and_forgets_deleted_ones_across_restarts)
{
    need_full_ns0();
    store_dir();
    cr_assert_eq(restart(), UAS_GOOD, "a missing store is an empty one");
    /* An object with a variable, a type, a ReferenceType used by a
     * reference, a structure DataType with its definition. */
    cr_assert_eq(add_object("Kept", "Kept"), UAS_GOOD);
    cr_assert_eq(add_object("Gone", "Gone"), UAS_GOOD);
    uas_variable_attributes va;
    memset(&va, 0, sizeof(va));
    va.value = v_double(&f, 2.5);
    cr_assert_eq(add_node(UAS_NODE_CLASS_VARIABLE, "Kept.Level", S1("Kept"), 47, "Level", N0(63),
                          UAS_TYPE(VARIABLE_ATTRIBUTES), &va),
                 UAS_GOOD);
    uas_object_type_attributes ot = {.specified_attributes = UAS_NODE_ATTRIBUTES_MASK_IS_ABSTRACT,
                                     .is_abstract = true};
    cr_assert_eq(add_node(UAS_NODE_CLASS_OBJECT_TYPE, "TankType", N0(58), 45, "TankType", N0(0),
                          UAS_TYPE(OBJECT_TYPE_ATTRIBUTES), &ot),
                 UAS_GOOD);
    uas_reference_type_attributes rt;
    memset(&rt, 0, sizeof(rt));
    rt.inverse_name.text = uas_string_from("FedBy");
    cr_assert_eq(add_node(UAS_NODE_CLASS_REFERENCE_TYPE, "Feeds", N0(32), 45, "Feeds", N0(0),
                          UAS_TYPE(REFERENCE_TYPE_ATTRIBUTES), &rt),
                 UAS_GOOD);
    cr_assert_eq(reference(true, S1("Kept"), S1("Feeds"), N0(2253)), UAS_GOOD);
    uas_structure_field fields[1];
    memset(fields, 0, sizeof(fields));
    fields[0].name = uas_string_from("Mass");
    fields[0].data_type = N0(11);
    fields[0].value_rank = -1;
    uas_structure_definition sd;
    memset(&sd, 0, sizeof(sd));
    sd.default_encoding_id = S1("Load.Binary");
    sd.fields = fields;
    sd.fields_count = 1;
    uas_extensionobject x = {.encoding = UAS_EXTOBJ_DECODED};
    x.content.decoded.type = UAS_TYPE(STRUCTURE_DEFINITION);
    x.content.decoded.data = &sd;
    uas_generic_attribute_value gv = {.attribute_id = 23};
    uas_variant_set_scalar(&gv.value, &x, UAS_TYPE(EXTENSION_OBJECT));
    uas_generic_attributes ga = {.attribute_values = &gv, .attribute_values_count = 1};
    cr_assert_eq(add_node(UAS_NODE_CLASS_DATA_TYPE, "Load", N0(22), 45, "Load", N0(0),
                          UAS_TYPE(GENERIC_ATTRIBUTES), &ga),
                 UAS_GOOD);
    cr_assert_eq(delete_node(S1("Gone")), UAS_GOOD);

    cr_assert_eq(restart(), UAS_GOOD, "%s", last_error);
    cr_assert_eq(read_attr(&f, S1("Gone"), 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(refs_to(N0(85), 0, N0(35), S1("Kept")), 1);
    uas_datavalue dv = read_attr(&f, S1("Kept.Level"), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(*(double *)dv.value.data, 2.5);
    cr_assert(read_bool(S1("TankType"), 8));
    dv = read_attr(&f, S1("Feeds"), 10, NULL);
    cr_assert(uas_string_eq_cstr(&((uas_localizedtext *)dv.value.data)->text, "FedBy"));
    cr_assert_eq(refs_to(N0(2253), 1, S1("Feeds"), S1("Kept")), 1);
    dv = read_attr(&f, S1("Load"), 23, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(((uas_structure_definition *)dv.value.data)->fields_count, 1);
    /* Loaded nodes stay in the store: changed again, restarted again. */
    cr_assert_eq(delete_node(S1("Kept")), UAS_GOOD);
    cr_assert_eq(restart(), UAS_GOOD, "%s", last_error);
    cr_assert_eq(read_attr(&f, S1("Kept"), 1, NULL).status, UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(read_attr(&f, S1("Kept.Level"), 1, NULL).status, UAS_GOOD,
                 "a child keeps living when deleted alone");
    cr_assert(read_bool(S1("TankType"), 8));
    store_cleanup();
}

Test(nodemgmt, store_keeps_values_written_after_the_last_node_change)
{
    need_full_ns0();
    store_dir();
    cr_assert_eq(restart(), UAS_GOOD, "a missing store is an empty one");
    cr_assert_eq(add_object("Tank", "Tank"), UAS_GOOD);
    uas_variable_attributes va;
    memset(&va, 0, sizeof(va));
    va.value = v_double(&f, 2.5);
    va.specified_attributes =
        UAS_NODE_ATTRIBUTES_MASK_VALUE | UAS_NODE_ATTRIBUTES_MASK_ACCESS_LEVEL;
    va.access_level = UAS_ACCESS_LEVEL_TYPE_CURRENT_READ | UAS_ACCESS_LEVEL_TYPE_CURRENT_WRITE;
    cr_assert_eq(add_node(UAS_NODE_CLASS_VARIABLE, "Tank.Level", S1("Tank"), 47, "Level", N0(63),
                          UAS_TYPE(VARIABLE_ATTRIBUTES), &va),
                 UAS_GOOD);
    /* One without a value: a Double by its DataType. */
    memset(&va.value, 0, sizeof(va.value));
    va.specified_attributes =
        UAS_NODE_ATTRIBUTES_MASK_ACCESS_LEVEL | UAS_NODE_ATTRIBUTES_MASK_DATA_TYPE;
    va.data_type = N0(11);
    cr_assert_eq(add_node(UAS_NODE_CLASS_VARIABLE, "Tank.Setpoint", S1("Tank"), 47, "Setpoint",
                          N0(63), UAS_TYPE(VARIABLE_ATTRIBUTES), &va),
                 UAS_GOOD);
    cr_assert_eq(restart(), UAS_GOOD, "%s", last_error);
    uas_datavalue dv = read_attr(&f, S1("Tank.Level"), 13, NULL);
    cr_assert_not_null(dv.value.data);
    cr_assert_eq(*(double *)dv.value.data, 2.5);
    /* Only values change now, no node. */
    uas_variant v = v_double(&f, 7.5);
    cr_assert_eq(write_value(&f, S1("Tank.Level"), &v, NULL), UAS_GOOD);
    v = v_double(&f, 3.25);
    cr_assert_eq(write_value(&f, S1("Tank.Setpoint"), &v, NULL), UAS_GOOD);
    cr_assert_eq(restart(), UAS_GOOD, "%s", last_error);
    dv = read_attr(&f, S1("Tank.Level"), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_not_null(dv.value.data);
    cr_assert_eq(*(double *)dv.value.data, 7.5, "the store kept %g", *(double *)dv.value.data);
    dv = read_attr(&f, S1("Tank.Setpoint"), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_not_null(dv.value.data, "the written value of a node added without one");
    cr_assert_eq(*(double *)dv.value.data, 3.25);
    store_cleanup();
}

Test(nodemgmt, corrupt_store_is_refused_with_file_and_line)
{
    store_dir();
    FILE *fp = fopen(store_path, "w");
    cr_assert_not_null(fp);
    fputs("<?xml version=\"1.0\"?>\n<UANodeSet>\n  <UAObject NodeId=\"ns=1;x=oops\" "
          "BrowseName=\"1:X\"/>\n</UANodeSet>\n",
          fp);
    fclose(fp);
    cr_assert_neq(restart(), UAS_GOOD);
    cr_assert_not_null(strstr(last_error, "store.xml:3"), "%s", last_error);
    /* A truncated one too (a crash cannot leave one, but a disk can). */
    fp = fopen(store_path, "w");
    fputs("<?xml version=\"1.0\"?>\n<UANodeSet>\n  <UAObject NodeId=\"ns=1;s=A\"", fp);
    fclose(fp);
    cr_assert_neq(restart(), UAS_GOOD);
    cr_assert_not_null(strstr(last_error, "store.xml:"), "%s", last_error);
    store_cleanup();
}
