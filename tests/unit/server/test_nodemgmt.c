/* NodeManagement handlers (svc_nodemgmt.c) driven directly: the permission
 * each one needs, string NodeIds through add and delete (the deleted
 * node's memory stays valid), references removed on both ends, namespace 0
 * rows not deletable, references of a loaded model's own ReferenceType. */
#include <criterion/criterion.h>
#include <string.h>

#include "authz.h"
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

static uas_status add_object(const char *id, const char *name)
{
    uas_add_nodes_item it;
    memset(&it, 0, sizeof(it));
    it.parent_node_id = X(N0(85));
    it.reference_type_id = N0(35);
    it.requested_new_node_id = X(S1(id));
    it.browse_name = QN(1, name);
    it.node_class = UAS_NODE_CLASS_OBJECT;
    it.type_definition = X(N0(58));
    uas_add_nodes_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_add = &it;
    rq.nodes_to_add_count = 1;
    uas_add_nodes_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_add_nodes(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    return rs->results[0].status_code;
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
