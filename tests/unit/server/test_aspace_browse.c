/* Browse, BrowseNext, RegisterNodes and TranslateBrowsePathsToNodeIds on
 * namespace 0 and on added nodes, driven through the service handlers. */
#include <criterion/criterion.h>
#include <string.h>

#include "helper_aspace.h"

#define ALL  UAS_BROWSE_RESULT_MASK_ALL
#define FWD  UAS_BROWSE_DIRECTION_FORWARD
#define INV  UAS_BROWSE_DIRECTION_INVERSE
#define BOTH UAS_BROWSE_DIRECTION_BOTH

static fx f;

static void setup(void)
{
    fx_init(&f, NULL);
}

static void teardown(void)
{
    fx_fini(&f);
}

TestSuite(browse, .init = setup, .fini = teardown);

Test(browse, objects_folder_lists_server_with_all_fields)
{
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD,
                                     N0(UAS_NS0ID_HIERARCHICALREFERENCES), true, 0, ALL, 0);
    uas_browse_result *r = &rs->results[0];
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_null(r->continuation_point.data);
    const uas_reference_description *rd = find_ref(r, "Server");
    cr_assert_not_null(rd);
    cr_assert_eq(rd->node_id.nodeid.id.numeric, UAS_NS0ID_SERVER);
    cr_assert_eq(rd->reference_type_id.id.numeric, UAS_NS0ID_ORGANIZES);
    cr_assert(rd->is_forward);
    cr_assert_eq(rd->node_class, UAS_NODE_CLASS_OBJECT);
    cr_assert(uas_string_eq_cstr(&rd->display_name.text, "Server"));
    cr_assert_eq(rd->type_definition.nodeid.id.numeric, 2004); /* ServerType */
    /* HasTypeDefinition is not hierarchical: FolderType must not show. */
    cr_assert_null(find_ref(r, "FolderType"));
}

Test(browse, server_object_children)
{
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD,
                                     N0(UAS_NS0ID_HIERARCHICALREFERENCES), true, 0, ALL, 0);
    uas_browse_result *r = &rs->results[0];
    const char *names[] = {"ServerArray", "NamespaceArray", "ServerStatus", "ServerCapabilities",
                           "ServerDiagnostics"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        cr_assert_not_null(find_ref(r, names[i]), "%s missing", names[i]);
    const uas_reference_description *st = find_ref(r, "ServerStatus");
    cr_assert_eq(st->node_id.nodeid.id.numeric, UAS_NS0ID_SERVER_SERVERSTATUS);
    cr_assert_eq(st->reference_type_id.id.numeric, UAS_NS0ID_HASCOMPONENT);
    cr_assert_eq(st->node_class, UAS_NODE_CLASS_VARIABLE);
    cr_assert_eq(st->type_definition.nodeid.id.numeric, 2138); /* ServerStatusType */
    cr_assert_null(find_ref(r, "Objects")); /* inverse: not in a forward browse */
    if (full_ns0()) {
        const uas_reference_description *m = find_ref(r, "GetMonitoredItems");
        cr_assert_eq(m->node_class, UAS_NODE_CLASS_METHOD);
        cr_assert_eq(m->type_definition.nodeid.id.numeric, 0); /* methods have none */
    }
}

Test(browse, inverse_finds_parent)
{
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), INV, N0(0), false, 0, ALL, 0);
    uas_browse_result *r = &rs->results[0];
    cr_assert_eq(r->references_count, 1);
    cr_assert_eq(r->references[0].node_id.nodeid.id.numeric, UAS_NS0ID_OBJECTSFOLDER);
    cr_assert_eq(r->references[0].reference_type_id.id.numeric, UAS_NS0ID_ORGANIZES);
    cr_assert_not(r->references[0].is_forward);
    uas_browse_response *both = browse(&f, N0(UAS_NS0ID_SERVER), BOTH, N0(0), false, 0, ALL, 0);
    uas_browse_response *fwd = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 0);
    cr_assert_eq(both->results[0].references_count, fwd->results[0].references_count + 1);
}

Test(browse, reference_subtype_filter)
{
    /* No reference is exactly HierarchicalReferences. */
    uas_browse_response *exact = browse(&f, N0(UAS_NS0ID_SERVER), FWD,
                                        N0(UAS_NS0ID_HIERARCHICALREFERENCES), false, 0, ALL, 0);
    cr_assert_eq(exact->results[0].references_count, 0);
    cr_assert_eq(exact->results[0].status_code, UAS_GOOD);
    /* HasChild covers HasComponent and HasProperty but not Organizes. */
    uas_browse_response *child =
        browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(UAS_NS0ID_HASCHILD), true, 0, ALL, 0);
    uas_browse_result *r = &child->results[0];
    cr_assert_not_null(find_ref(r, "ServerArray"));
    cr_assert_not_null(find_ref(r, "ServerStatus"));
    for (size_t i = 0; i < r->references_count; i++) {
        uint32_t t = r->references[i].reference_type_id.id.numeric;
        cr_assert(t == UAS_NS0ID_HASCOMPONENT || t == UAS_NS0ID_HASPROPERTY, "type %u", t);
    }
    uas_browse_response *prop =
        browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(UAS_NS0ID_HASPROPERTY), false, 0, ALL, 0);
    cr_assert_not_null(find_ref(&prop->results[0], "ServerArray"));
    cr_assert_null(find_ref(&prop->results[0], "ServerStatus"));
}

Test(browse, node_class_mask)
{
    uas_browse_response *rs =
        browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, UAS_NODE_CLASS_VARIABLE, ALL, 0);
    uas_browse_result *r = &rs->results[0];
    cr_assert_geq(r->references_count, 3);
    cr_assert_not_null(find_ref(r, "ServerStatus"));
    cr_assert_null(find_ref(r, "ServerCapabilities")); /* an Object */
    for (size_t i = 0; i < r->references_count; i++)
        cr_assert_eq(r->references[i].node_class, UAS_NODE_CLASS_VARIABLE);
    uas_browse_response *two = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false,
                                      UAS_NODE_CLASS_VARIABLE | UAS_NODE_CLASS_OBJECT_TYPE, ALL, 0);
    cr_assert_eq(two->results[0].references_count, r->references_count + 1); /* + ServerType */
}

Test(browse, result_mask_fills_only_requested_fields)
{
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(0), false, 0,
                                     UAS_BROWSE_RESULT_MASK_BROWSE_NAME, 0);
    const uas_reference_description *rd = find_ref(&rs->results[0], "Server");
    cr_assert_not_null(rd);
    cr_assert_eq(rd->node_id.nodeid.id.numeric, UAS_NS0ID_SERVER); /* always there */
    cr_assert_eq(rd->reference_type_id.id.numeric, 0);
    cr_assert_not(rd->is_forward);
    cr_assert_eq(rd->node_class, 0);
    cr_assert_null(rd->display_name.text.data);
    cr_assert_eq(rd->type_definition.nodeid.id.numeric, 0);
    rs = browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(0), false, 0,
                UAS_BROWSE_RESULT_MASK_TYPE_DEFINITION | UAS_BROWSE_RESULT_MASK_IS_FORWARD, 0);
    rd = &rs->results[0].references[0];
    cr_assert_null(rd->browse_name.name.data);
    bool some_td = false;
    for (size_t i = 0; i < rs->results[0].references_count; i++)
        some_td |= rs->results[0].references[i].type_definition.nodeid.id.numeric != 0;
    cr_assert(some_td);
}

Test(browse, item_errors)
{
    uas_browse_response *rs = browse(&f, N1(424242), FWD, N0(0), false, 0, ALL, 0);
    cr_assert_eq(rs->results[0].status_code, UAS_BAD_NODE_ID_UNKNOWN);
    rs = browse(&f, N0(UAS_NS0ID_SERVER), 3, N0(0), false, 0, ALL, 0);
    cr_assert_eq(rs->results[0].status_code, UAS_BAD_BROWSE_DIRECTION_INVALID);
    rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(UAS_NS0ID_OBJECTSFOLDER), false, 0, ALL, 0);
    cr_assert_eq(rs->results[0].status_code, UAS_BAD_REFERENCE_TYPE_ID_INVALID);
    cr_assert_eq(rs->results[0].references_count, 0);
}

Test(browse, service_errors)
{
    uas_browse_request rq;
    memset(&rq, 0, sizeof(rq));
    uas_browse_response rs;
    memset(&rs, 0, sizeof(rs));
    uas_svc_browse(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);

    uas_browse_description bd;
    memset(&bd, 0, sizeof(bd));
    bd.node_id = N0(UAS_NS0ID_SERVER);
    rq.nodes_to_browse = &bd;
    rq.nodes_to_browse_count = 1;
    rq.view.view_id = N0(UAS_NS0ID_SERVER);
    memset(&rs, 0, sizeof(rs));
    uas_svc_browse(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_VIEW_ID_UNKNOWN);

    rq.view.view_id = N0(0);
    rq.nodes_to_browse_count = f.s->cfg.max_nodes_per_browse + 1;
    memset(&rs, 0, sizeof(rs));
    uas_svc_browse(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_TOO_MANY_OPERATIONS);
}

/* BrowseNext with one continuation point; the response lives in f.arena. */
static uas_browse_result *next(uas_bytestring cp, bool release)
{
    uas_browse_next_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.release_continuation_points = release;
    rq.continuation_points = &cp;
    rq.continuation_points_count = 1;
    uas_browse_next_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_browse_next(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs->results_count, 1);
    return &rs->results[0];
}

Test(browse, continuation_points_page_through_everything)
{
    uas_browse_response *all = browse(&f, N0(UAS_NS0ID_SERVER), BOTH, N0(0), false, 0, ALL, 0);
    size_t total = all->results[0].references_count;
    cr_assert_gt(total, 10);
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), BOTH, N0(0), false, 0, ALL, 3);
    uas_browse_result *r = &rs->results[0];
    cr_assert_eq(r->references_count, 3);
    cr_assert_not_null(r->continuation_point.data);
    size_t seen = 0;
    for (;;) {
        for (size_t i = 0; i < r->references_count; i++, seen++)
            cr_assert(uas_equal(&r->references[i], &all->results[0].references[seen],
                                UAS_TYPE(REFERENCE_DESCRIPTION)),
                      "reference %zu differs", seen);
        if (!r->continuation_point.data)
            break;
        cr_assert_eq(r->references_count, 3);
        r = next(r->continuation_point, false);
        cr_assert_eq(r->status_code, UAS_GOOD);
    }
    cr_assert_eq(seen, total);
}

Test(browse, exact_multiple_needs_no_continuation_point)
{
    uas_browse_response *all =
        browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(0), false, 0, ALL, 0);
    uint32_t n = (uint32_t)all->results[0].references_count;
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(0), false, 0, ALL, n);
    cr_assert_eq(rs->results[0].references_count, n);
    cr_assert_null(rs->results[0].continuation_point.data);
    cr_assert_null(f.se.view_state); /* no continuation point was ever made */
}

Test(browse, release_and_invalid_continuation_points)
{
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 2);
    uas_bytestring cp = rs->results[0].continuation_point;
    cr_assert_not_null(cp.data);
    uas_browse_result *r = next(cp, true);
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_eq(r->references_count, 0);
    r = next(cp, false);
    cr_assert_eq(r->status_code, UAS_BAD_CONTINUATION_POINT_INVALID);
    uint8_t junk[3] = {1, 2, 3};
    uas_bytestring bad = {sizeof(junk), junk};
    cr_assert_eq(next(bad, false)->status_code, UAS_BAD_CONTINUATION_POINT_INVALID);

    uas_browse_next_request rq;
    memset(&rq, 0, sizeof(rq));
    uas_browse_next_response nrs;
    memset(&nrs, 0, sizeof(nrs));
    uas_svc_browse_next(&f.ctx, &rq, &nrs);
    cr_assert_eq(nrs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);
}

Test(browse, continuation_point_limit_per_session)
{
    uint32_t limit = f.s->cfg.max_browse_continuation_points;
    cr_assert_gt(limit, 0);
    uas_bytestring first = {0, NULL};
    for (uint32_t i = 0; i < limit; i++) {
        uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 1);
        cr_assert_eq(rs->results[0].status_code, UAS_GOOD);
        cr_assert_not_null(rs->results[0].continuation_point.data);
        if (i == 0)
            first = rs->results[0].continuation_point;
    }
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 1);
    cr_assert_eq(rs->results[0].status_code, UAS_BAD_NO_CONTINUATION_POINTS);
    cr_assert_null(rs->results[0].continuation_point.data);
    /* A node that fits in one answer needs none and still works. */
    rs = browse(&f, N0(UAS_NS0ID_SERVER), INV, N0(0), false, 0, ALL, 1);
    cr_assert_eq(rs->results[0].status_code, UAS_GOOD);
    /* Releasing one frees a slot. */
    cr_assert_eq(next(first, true)->status_code, UAS_GOOD);
    rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 1);
    cr_assert_eq(rs->results[0].status_code, UAS_GOOD);
    /* Session release drops them all. */
    uas_bytestring cp = rs->results[0].continuation_point;
    uas_view_session_release(&f.se);
    cr_assert_eq(next(cp, false)->status_code, UAS_BAD_CONTINUATION_POINT_INVALID);
}

Test(browse, server_limit_on_references_per_node)
{
    fx_fini(&f);
    uas_server_config c;
    uas_server_config_default(&c);
    c.threads = 1;
    c.max_references_per_node = 4;
    fx_init(&f, &c);
    uas_browse_response *rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 0);
    cr_assert_eq(rs->results[0].references_count, 4);
    cr_assert_not_null(rs->results[0].continuation_point.data);
    rs = browse(&f, N0(UAS_NS0ID_SERVER), FWD, N0(0), false, 0, ALL, 2);
    cr_assert_eq(rs->results[0].references_count, 2);
}

Test(browse, continuation_survives_added_references)
{
    uas_variant e = v_int32(&f, 0);
    cr_assert_eq(add_var(&f, N1(2), "Early", &e, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    uas_browse_response *rs =
        browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(UAS_NS0ID_ORGANIZES), false, 0, ALL, 1);
    size_t before = 1;
    uas_bytestring cp = rs->results[0].continuation_point;
    cr_assert_not_null(cp.data);
    /* Nodes added meanwhile show up at the end of the same listing. */
    int32_t x = 1;
    uas_variant v = v_int32(&f, x);
    cr_assert_eq(add_var(&f, N1(1), "Late", &v, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    bool late = false;
    while (cp.data) {
        uas_browse_result *r = next(cp, false);
        cr_assert_eq(r->status_code, UAS_GOOD);
        before += r->references_count;
        late |= find_ref(r, "Late") != NULL;
        cp = r->continuation_point;
    }
    cr_assert(late);
    uas_browse_response *all =
        browse(&f, N0(UAS_NS0ID_OBJECTSFOLDER), FWD, N0(UAS_NS0ID_ORGANIZES), false, 0, ALL, 0);
    cr_assert_eq(before, all->results[0].references_count);
}

Test(browse, register_nodes_returns_the_same_ids)
{
    uas_nodeid ids[2] = {N0(UAS_NS0ID_SERVER), S1("x")};
    uas_register_nodes_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.nodes_to_register = ids;
    rq.nodes_to_register_count = 2;
    uas_register_nodes_response rs;
    memset(&rs, 0, sizeof(rs));
    uas_svc_register_nodes(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs.registered_node_ids_count, 2);
    cr_assert(uas_equal(&rs.registered_node_ids[1], &ids[1], UAS_TYPE(NODE_ID)));
    cr_assert_neq(rs.registered_node_ids[1].id.string.data, ids[1].id.string.data); /* copied */
    rq.nodes_to_register_count = 0;
    memset(&rs, 0, sizeof(rs));
    uas_svc_register_nodes(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);
    rq.nodes_to_register_count = f.s->cfg.max_nodes_per_register + 1;
    memset(&rs, 0, sizeof(rs));
    uas_svc_register_nodes(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_TOO_MANY_OPERATIONS);

    uas_unregister_nodes_request urq;
    memset(&urq, 0, sizeof(urq));
    uas_unregister_nodes_response urs;
    memset(&urs, 0, sizeof(urs));
    uas_svc_unregister_nodes(&f.ctx, &urq, &urs);
    cr_assert_eq(urs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);
    urq.nodes_to_unregister = ids;
    urq.nodes_to_unregister_count = 2;
    memset(&urs, 0, sizeof(urs));
    uas_svc_unregister_nodes(&f.ctx, &urq, &urs);
    cr_assert_eq(urs.response_header.service_result, UAS_GOOD);
}

/* ---- TranslateBrowsePathsToNodeIds ---- */

static uas_browse_path_result *translate(uas_nodeid start, const uas_relative_path_element *el,
                                         size_t n)
{
    uas_browse_path bp;
    memset(&bp, 0, sizeof(bp));
    bp.starting_node = start;
    bp.relative_path.elements = (uas_relative_path_element *)el;
    bp.relative_path.elements_count = n;
    uas_translate_browse_paths_to_node_ids_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.browse_paths = &bp;
    rq.browse_paths_count = 1;
    uas_translate_browse_paths_to_node_ids_response *rs =
        uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_translate(&f.ctx, &rq, rs);
    cr_assert_eq(rs->response_header.service_result, UAS_GOOD);
    cr_assert_eq(rs->results_count, 1);
    return &rs->results[0];
}

static uas_relative_path_element EL(uint32_t reftype, bool inverse, const char *name)
{
    uas_relative_path_element e;
    memset(&e, 0, sizeof(e));
    e.reference_type_id = N0(reftype);
    e.include_subtypes = true;
    e.is_inverse = inverse;
    e.target_name = QN(0, name);
    return e;
}

Test(translate, objects_server_serverstatus_currenttime, .init = setup, .fini = teardown)
{
    uas_relative_path_element p[4] = {
        EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "Objects"),
        EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "Server"),
        EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "ServerStatus"),
        EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "CurrentTime"),
    };
    uas_browse_path_result *r = translate(N0(UAS_NS0ID_ROOTFOLDER), p, 4);
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_eq(r->targets_count, 1);
    cr_assert_eq(r->targets[0].target_id.nodeid.id.numeric, 2258);
    cr_assert_eq(r->targets[0].remaining_path_index, UINT32_MAX);
    /* Exact reference types without subtypes: Organizes then HasComponent. */
    p[0] = EL(UAS_NS0ID_ORGANIZES, false, "Objects");
    p[0].include_subtypes = false;
    p[2] = EL(UAS_NS0ID_HASCOMPONENT, false, "ServerStatus");
    p[2].include_subtypes = false;
    r = translate(N0(UAS_NS0ID_ROOTFOLDER), p, 4);
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_eq(r->targets[0].target_id.nodeid.id.numeric, 2258);
    /* HasProperty cannot reach ServerStatus. */
    p[2] = EL(UAS_NS0ID_HASPROPERTY, false, "ServerStatus");
    r = translate(N0(UAS_NS0ID_ROOTFOLDER), p, 4);
    cr_assert_eq(r->status_code, UAS_BAD_NO_MATCH);
    cr_assert_eq(r->targets_count, 0);
}

Test(translate, inverse_and_errors, .init = setup, .fini = teardown)
{
    uas_relative_path_element up = EL(UAS_NS0ID_ORGANIZES, true, "Objects");
    uas_browse_path_result *r = translate(N0(UAS_NS0ID_SERVER), &up, 1);
    cr_assert_eq(r->status_code, UAS_GOOD);
    cr_assert_eq(r->targets[0].target_id.nodeid.id.numeric, UAS_NS0ID_OBJECTSFOLDER);

    uas_relative_path_element nope = EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "Nope");
    cr_assert_eq(translate(N0(UAS_NS0ID_SERVER), &nope, 1)->status_code, UAS_BAD_NO_MATCH);
    /* Browse names are namespace-qualified. */
    uas_relative_path_element ns1 = EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "ServerStatus");
    ns1.target_name.ns = 1;
    cr_assert_eq(translate(N0(UAS_NS0ID_SERVER), &ns1, 1)->status_code, UAS_BAD_NO_MATCH);
    uas_relative_path_element empty = EL(UAS_NS0ID_HIERARCHICALREFERENCES, false, "");
    cr_assert_eq(translate(N0(UAS_NS0ID_SERVER), &empty, 1)->status_code,
                 UAS_BAD_BROWSE_NAME_INVALID);
    cr_assert_eq(translate(N0(UAS_NS0ID_SERVER), NULL, 0)->status_code, UAS_BAD_NOTHING_TO_DO);
    cr_assert_eq(translate(N1(77777), &up, 1)->status_code, UAS_BAD_NODE_ID_UNKNOWN);
}

Test(translate, added_nodes_and_limits, .init = setup, .fini = teardown)
{
    uas_variant v = v_int32(&f, 5);
    cr_assert_eq(add_var(&f, S1("Temp"), "Temperature", &v, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    uas_relative_path_element p = EL(UAS_NS0ID_ORGANIZES, false, "Temperature");
    p.target_name.ns = 1;
    uas_browse_path_result *r = translate(N0(UAS_NS0ID_OBJECTSFOLDER), &p, 1);
    cr_assert_eq(r->status_code, UAS_GOOD);
    uas_nodeid want = S1("Temp");
    cr_assert(uas_equal(&r->targets[0].target_id.nodeid, &want, UAS_TYPE(NODE_ID)));

    uas_translate_browse_paths_to_node_ids_request rq;
    memset(&rq, 0, sizeof(rq));
    uas_translate_browse_paths_to_node_ids_response rs;
    memset(&rs, 0, sizeof(rs));
    uas_svc_translate(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_NOTHING_TO_DO);
    rq.browse_paths_count = f.s->cfg.max_nodes_per_translate + 1;
    memset(&rs, 0, sizeof(rs));
    uas_svc_translate(&f.ctx, &rq, &rs);
    cr_assert_eq(rs.response_header.service_result, UAS_BAD_TOO_MANY_OPERATIONS);
}

Test(translate, reference_to_another_server, .init = setup, .fini = teardown)
{
    uas_nodeid obj = S1("Gateway"), parent = N0(UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES);
    uas_qualifiedname bn = QN(1, "Gateway");
    cr_assert_eq(uas_server_add_object(f.s, &obj, &parent, &org, &bn, NULL, NULL), UAS_GOOD);
    uas_expandednodeid remote = X(N1(5));
    remote.server_index = 2;
    cr_assert_eq(uas_server_add_reference(f.s, &obj, &org, &remote, true), UAS_GOOD);
    uas_relative_path_element p[2] = {EL(UAS_NS0ID_ORGANIZES, false, "Gateway"),
                                      EL(UAS_NS0ID_ORGANIZES, false, "Far")};
    p[0].target_name.ns = 1;
    uas_browse_path_result *r = translate(N0(UAS_NS0ID_OBJECTSFOLDER), p, 2);
    cr_assert_eq(r->status_code, UAS_UNCERTAIN_REFERENCE_OUT_OF_SERVER);
    cr_assert_eq(r->targets_count, 1);
    cr_assert_eq(r->targets[0].target_id.server_index, 2);
    cr_assert_eq(r->targets[0].remaining_path_index, 1);
}
