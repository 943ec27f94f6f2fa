/* libuaclient against libuaserver over real sockets on 127.0.0.1: the
 * services a client uses (discovery, session, Read, Write, Browse +
 * BrowseNext, TranslateBrowsePaths, Call), 100 sessions with 10 requests
 * each in flight on one loop, request timeouts and late answers, flow
 * control (max_inflight), and the server going away. Each scenario runs
 * against a server with one loop and with two (suites cs1 and cs2). */
#include <criterion/criterion.h>

#include <ev.h>
#include <string.h>

#include <ua/nodeids.h>

#include "helper_env.h"

enum { ATTR_VALUE = 13 };

/* One scenario, run on a one-loop and a two-loop server. */
#define BOTH(name)                                                                                 \
    static void name(unsigned threads);                                                            \
    Test(cs1, name, .timeout = 60)                                                                 \
    {                                                                                              \
        name(1);                                                                                   \
    }                                                                                              \
    Test(cs2, name, .timeout = 60)                                                                 \
    {                                                                                              \
        name(2);                                                                                   \
    }                                                                                              \
    static void name(unsigned threads)

static void start(env *e, unsigned threads)
{
    env_options o = {.threads = threads};
    env_start(e, &o);
}

/* ---- discovery ---- */

BOTH(get_endpoints_without_session_lists_the_none_endpoint)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, false, 0);
    cr_assert_eq(uas_client_get_state(c), UAS_CLIENT_CHANNEL_OPEN);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    uas_get_endpoints_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), &resp,
                                         UAS_TYPE(GET_ENDPOINTS_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "%s", uas_status_name(st));
    cr_assert_eq(resp.endpoints_count, 1);
    const uas_endpoint_description *ep = &resp.endpoints[0];
    cr_expect(uas_string_eq_cstr(&ep->endpoint_url, e.url));
    cr_expect_eq(ep->security_mode, UAS_MESSAGE_SECURITY_MODE_NONE);
    cr_expect(uas_string_eq_cstr(&ep->security_policy_uri,
                                 "http://opcfoundation.org/UA/SecurityPolicy#None"));
    cr_assert_eq(ep->user_identity_tokens_count, 1);
    cr_expect_eq(ep->user_identity_tokens[0].token_type, UAS_USER_TOKEN_TYPE_ANONYMOUS);
    cr_expect(uas_string_eq_cstr(&ep->server.application_uri, "urn:uastack:server"));
    /* A session service without a session is refused locally. */
    uas_read_request rr;
    memset(&rr, 0, sizeof(rr));
    uas_read_response rresp;
    st = uas_client_call_sync(c, &rr, UAS_TYPE(READ_REQUEST), &rresp, UAS_TYPE(READ_RESPONSE), &a,
                              ENV_WAIT_MS);
    cr_expect_eq(st, UAS_BAD_INVALID_STATE, "%s", uas_status_name(st));
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

BOTH(find_servers_returns_this_server)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, false, 0);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_find_servers_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(e.url);
    uas_find_servers_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(FIND_SERVERS_REQUEST), &resp,
                                         UAS_TYPE(FIND_SERVERS_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "%s", uas_status_name(st));
    cr_assert_eq(resp.servers_count, 1);
    cr_expect(uas_string_eq_cstr(&resp.servers[0].application_uri, "urn:uastack:server"));
    cr_expect_eq(resp.servers[0].application_type, UAS_APPLICATION_TYPE_SERVER);
    cr_assert_eq(resp.servers[0].discovery_urls_count, 1);
    cr_expect(uas_string_eq_cstr(&resp.servers[0].discovery_urls[0], e.url));
    /* A filter naming another server selects nothing. */
    uas_string other = uas_string_from("urn:somebody:else");
    req.server_uris_count = 1;
    req.server_uris = &other;
    st = uas_client_call_sync(c, &req, UAS_TYPE(FIND_SERVERS_REQUEST), &resp,
                              UAS_TYPE(FIND_SERVERS_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD);
    cr_expect_eq(resp.servers_count, 0);
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

/* ---- session ---- */

typedef struct state_log {
    uas_client_state states[16];
    uas_status reasons[16];
    size_t n;
} state_log;

static void log_state(uas_client *c, void *ud, uas_client_state s, uas_status reason)
{
    (void)c;
    state_log *l = ud;
    if (l->n < 16) {
        l->states[l->n] = s;
        l->reasons[l->n++] = reason;
    }
}

BOTH(connect_creates_and_activates_a_session_and_disconnect_closes_it)
{
    env e;
    start(&e, threads);
    state_log log = {.n = 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    uas_client *c = uas_client_new(e.loop, &cfg, log_state, &log);
    cr_assert(c);
    cr_assert_eq(uas_client_get_state(c), UAS_CLIENT_DISCONNECTED);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    const uas_nodeid *tok = uas_client_auth_token(c);
    cr_expect_eq(tok->kind, UAS_NODEID_GUID, "the server issues GUID tokens");
    /* The session is usable and shows in the server's diagnostics. */
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid count = uas_nodeid_numeric(
        0, UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_SERVERDIAGNOSTICSSUMMARY_CURRENTSESSIONCOUNT);
    uas_datavalue dv;
    cr_assert_eq(env_read(c, &count, ATTR_VALUE, &dv, &a), UAS_GOOD);
    cr_assert(dv.has_value && dv.value.type == UAS_TYPE(UINT32));
    cr_expect_geq(*(uint32_t *)dv.value.data, 1);
    uas_nodeid saved;
    cr_assert_eq(uas_copy(tok, &saved, UAS_TYPE(NODE_ID)), UAS_GOOD);
    uas_client_disconnect(c);
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_CLOSED, ENV_WAIT_MS), UAS_GOOD);
    cr_expect_eq(uas_client_get_reason(c), UAS_GOOD);
    /* CloseSession reached the server: the token is dead for everyone. */
    uas_client *other = env_client(&e, false, 0);
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = uas_nodeid_numeric(1, 1001);
    rv.attribute_id = ATTR_VALUE;
    uas_read_request rr;
    memset(&rr, 0, sizeof(rr));
    rr.request_header.authentication_token = saved;
    rr.nodes_to_read_count = 1;
    rr.nodes_to_read = &rv;
    uas_read_response rresp;
    uas_status st = uas_client_call_sync(other, &rr, UAS_TYPE(READ_REQUEST), &rresp,
                                         UAS_TYPE(READ_RESPONSE), &a, ENV_WAIT_MS);
    cr_expect_eq(st, UAS_BAD_SESSION_ID_INVALID, "%s", uas_status_name(st));
    uas_clear(&saved, UAS_TYPE(NODE_ID));
    uas_arena_free(&a);
    env_client_close(other);
    /* CONNECTING, CHANNEL_OPEN, SESSION_CREATING, SESSION_ACTIVE, CLOSED(Good). */
    cr_assert_eq(log.n, 5);
    uas_client_state want[] = {UAS_CLIENT_CONNECTING, UAS_CLIENT_CHANNEL_OPEN,
                               UAS_CLIENT_SESSION_CREATING, UAS_CLIENT_SESSION_ACTIVE,
                               UAS_CLIENT_CLOSED};
    for (size_t i = 0; i < 5; i++)
        cr_expect_eq(log.states[i], want[i], "state %zu", i);
    cr_expect_eq(log.reasons[4], UAS_GOOD);
    /* After CloseSession the token is forgotten. */
    cr_expect_eq(uas_client_auth_token(c)->kind, UAS_NODEID_NUMERIC);
    cr_expect_eq(uas_client_auth_token(c)->id.numeric, 0);
    uas_client_delete(c);
    env_stop(&e);
}

/* A refused connection, an unknown host and a malformed URL are three
 * different answers (they were one, BadTcpEndpointUrlInvalid, in uacli). */
BOTH(connect_to_a_closed_port_fails_with_bad_connection_rejected)
{
    env e;
    start(&e, threads);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = "opc.tcp://127.0.0.1:1";
    uas_client *c = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    cr_expect_eq(st, UAS_BAD_CONNECTION_REJECTED, "%s", uas_status_name(st));
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_CLOSED);
    uas_client_delete(c);
    /* A host name that cannot resolve (or, with no resolver, times out). */
    cfg.endpoint_url = "opc.tcp://no-such-host.invalid:4840";
    c = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    st = uas_client_connect(c);
    cr_expect(st == UAS_BAD_NOT_FOUND || st == UAS_BAD_TIMEOUT, "%s", uas_status_name(st));
    uas_client_delete(c);
    /* A malformed URL is refused before any socket. */
    cfg.endpoint_url = "http://127.0.0.1:4840";
    c = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_expect_eq(uas_client_connect(c), UAS_BAD_TCP_ENDPOINT_URL_INVALID);
    uas_client_delete(c);
    env_stop(&e);
}

/* ---- Read / Write ---- */

BOTH(read_server_status_decodes_the_structure)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS);
    uas_datavalue dv;
    cr_assert_eq(env_read(c, &id, ATTR_VALUE, &dv, &a), UAS_GOOD);
    cr_assert(dv.has_value);
    cr_assert_eq(dv.value.type, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    const uas_server_status_data_type *ss = dv.value.data;
    cr_expect_eq(ss->state, UAS_SERVER_STATE_RUNNING);
    cr_expect_gt(ss->current_time, ss->start_time - 1);
    cr_expect(uas_string_eq_cstr(&ss->build_info.product_uri, "urn:uastack"));
    /* A missing node answers per operation, not with a fault. */
    uas_nodeid missing = uas_nodeid_numeric(1, 999999);
    cr_assert_eq(env_read(c, &missing, ATTR_VALUE, &dv, &a), UAS_GOOD);
    cr_expect(dv.has_status && dv.status == UAS_BAD_NODE_ID_UNKNOWN);
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

BOTH(read_many_contract_nodes_in_one_request)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    uas_read_value_id ids[100];
    memset(ids, 0, sizeof(ids));
    for (uint32_t i = 0; i < 100; i++) {
        ids[i].node_id = uas_nodeid_numeric(1, 1001 + i);
        ids[i].attribute_id = ATTR_VALUE;
    }
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_NEITHER;
    req.nodes_to_read_count = 100;
    req.nodes_to_read = ids;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_read_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "%s", uas_status_name(st));
    cr_assert_eq(resp.results_count, 100);
    for (uint32_t i = 0; i < 100; i++) {
        cr_assert(resp.results[i].has_value && resp.results[i].value.type == UAS_TYPE(INT32));
        cr_expect_eq(*(int32_t *)resp.results[i].value.data, (int32_t)i);
    }
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

static uas_status write_value(uas_client *c, uas_nodeid id, uas_variant v)
{
    uas_write_value wv;
    memset(&wv, 0, sizeof(wv));
    wv.node_id = id;
    wv.attribute_id = ATTR_VALUE;
    wv.value.value = v;
    wv.value.has_value = true;
    uas_write_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_write_count = 1;
    req.nodes_to_write = &wv;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_write_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(WRITE_REQUEST), &resp,
                                         UAS_TYPE(WRITE_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0];
    }
    uas_arena_free(&a);
    return st;
}

BOTH(write_then_read_back_from_another_session)
{
    env e;
    start(&e, threads);
    uas_client *w = env_client(&e, true, 0);
    uas_client *r = env_client(&e, true, 0);
    int32_t v = -123456;
    uas_variant var;
    uas_variant_set_scalar(&var, &v, UAS_TYPE(INT32));
    cr_assert_eq(write_value(w, uas_nodeid_numeric(1, 1042), var), UAS_GOOD);
    cr_expect_eq(env_read_i32(w, 1042), -123456);
    cr_expect_eq(env_read_i32(r, 1042), -123456);
    cr_expect_eq(env_read_i32(r, 1043), 42, "the neighbour is untouched");
    /* The variable is Int32: a Double is refused and changes nothing. */
    double d = 1.5;
    uas_variant_set_scalar(&var, &d, UAS_TYPE(DOUBLE));
    cr_expect_eq(write_value(w, uas_nodeid_numeric(1, 1042), var), UAS_BAD_TYPE_MISMATCH);
    cr_expect_eq(env_read_i32(r, 1042), -123456);
    env_client_close(w);
    env_client_close(r);
    env_stop(&e);
}

/* ---- Browse ---- */

static size_t browse_all(uas_client *c, uas_nodeid node, uint32_t max_refs, size_t *pages,
                         uas_nodeid *found, size_t found_cap)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_browse_description bd;
    memset(&bd, 0, sizeof(bd));
    bd.node_id = node;
    bd.browse_direction = UAS_BROWSE_DIRECTION_FORWARD;
    bd.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    bd.include_subtypes = true;
    bd.result_mask = 0x3F;
    uas_browse_request req;
    memset(&req, 0, sizeof(req));
    req.requested_max_references_per_node = max_refs;
    req.nodes_to_browse_count = 1;
    req.nodes_to_browse = &bd;
    uas_browse_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(BROWSE_REQUEST), &resp,
                                         UAS_TYPE(BROWSE_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "browse: %s", uas_status_name(st));
    cr_assert_eq(resp.results_count, 1);
    uas_browse_result *r = &resp.results[0];
    size_t total = 0;
    *pages = 0;
    for (;;) {
        cr_assert_eq(r->status_code, UAS_GOOD, "%s", uas_status_name(r->status_code));
        (*pages)++;
        if (max_refs)
            cr_assert_leq(r->references_count, max_refs);
        for (size_t i = 0; i < r->references_count; i++) {
            cr_expect_eq(r->references[i].is_forward, true);
            /* Numeric ids only: the others point into the arena. */
            if (total < found_cap)
                found[total] = r->references[i].node_id.nodeid.kind == UAS_NODEID_NUMERIC
                                   ? r->references[i].node_id.nodeid
                                   : uas_nodeid_numeric(0, 0);
            total++;
        }
        if (!r->continuation_point.data || r->continuation_point.length == 0)
            break;
        uas_browse_next_request next;
        memset(&next, 0, sizeof(next));
        next.continuation_points_count = 1;
        next.continuation_points = &r->continuation_point;
        uas_browse_next_response nresp;
        st = uas_client_call_sync(c, &next, UAS_TYPE(BROWSE_NEXT_REQUEST), &nresp,
                                  UAS_TYPE(BROWSE_NEXT_RESPONSE), &a, ENV_WAIT_MS);
        cr_assert_eq(st, UAS_GOOD, "BrowseNext: %s", uas_status_name(st));
        cr_assert_eq(nresp.results_count, 1);
        r = &nresp.results[0];
        cr_assert_lt(*pages, 1000, "continuation points never end");
    }
    uas_arena_free(&a);
    return total;
}

BOTH(browse_with_small_pages_follows_continuation_points)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid whole[256], paged[256];
    size_t pages = 0;
    size_t n = browse_all(c, objects, 0, &pages, whole, 256);
    cr_assert_eq(pages, 1);
    /* Server, Demo, Slow and the 100 contract variables at least. */
    cr_assert_geq(n, 103);
    size_t m = browse_all(c, objects, 7, &pages, paged, 256);
    cr_expect_eq(m, n, "paged browse gives every reference once");
    cr_expect_eq(pages, (n + 6) / 7);
    for (size_t i = 0; i < n && i < 256; i++)
        cr_expect(uas_equal(&whole[i], &paged[i], UAS_TYPE(NODE_ID)), "reference %zu", i);
    /* Releasing a continuation point ends it: a later BrowseNext fails. */
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_browse_description bd;
    memset(&bd, 0, sizeof(bd));
    bd.node_id = objects;
    bd.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    bd.include_subtypes = true;
    bd.result_mask = 0x3F;
    uas_browse_request req;
    memset(&req, 0, sizeof(req));
    req.requested_max_references_per_node = 2;
    req.nodes_to_browse_count = 1;
    req.nodes_to_browse = &bd;
    uas_browse_response resp;
    cr_assert_eq(uas_client_call_sync(c, &req, UAS_TYPE(BROWSE_REQUEST), &resp,
                                      UAS_TYPE(BROWSE_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_GOOD);
    cr_assert_eq(resp.results_count, 1);
    cr_assert(resp.results[0].continuation_point.length > 0);
    uas_browse_next_request next;
    memset(&next, 0, sizeof(next));
    next.release_continuation_points = true;
    next.continuation_points_count = 1;
    next.continuation_points = &resp.results[0].continuation_point;
    uas_browse_next_response nresp;
    cr_assert_eq(uas_client_call_sync(c, &next, UAS_TYPE(BROWSE_NEXT_REQUEST), &nresp,
                                      UAS_TYPE(BROWSE_NEXT_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_GOOD);
    cr_assert_eq(nresp.results_count, 1);
    cr_expect_eq(nresp.results[0].status_code, UAS_GOOD);
    cr_expect_eq(nresp.results[0].references_count, 0);
    next.release_continuation_points = false;
    cr_assert_eq(uas_client_call_sync(c, &next, UAS_TYPE(BROWSE_NEXT_REQUEST), &nresp,
                                      UAS_TYPE(BROWSE_NEXT_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_GOOD);
    cr_assert_eq(nresp.results_count, 1);
    cr_expect_eq(nresp.results[0].status_code, UAS_BAD_CONTINUATION_POINT_INVALID, "%s",
                 uas_status_name(nresp.results[0].status_code));
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

/* ---- TranslateBrowsePathsToNodeIds ---- */

static uas_status translate(uas_client *c, const char *const *names, const uint16_t *ns, size_t n,
                            uas_browse_path_result *out, uas_arena *a)
{
    uas_relative_path_element el[8];
    memset(el, 0, sizeof(el));
    for (size_t i = 0; i < n; i++) {
        el[i].reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
        el[i].include_subtypes = true;
        el[i].target_name.ns = ns[i];
        el[i].target_name.name = uas_string_from(names[i]);
    }
    uas_browse_path bp;
    memset(&bp, 0, sizeof(bp));
    bp.starting_node = uas_nodeid_numeric(0, UAS_NS0ID_ROOTFOLDER);
    bp.relative_path.elements_count = n;
    bp.relative_path.elements = el;
    uas_translate_browse_paths_to_node_ids_request req;
    memset(&req, 0, sizeof(req));
    req.browse_paths_count = 1;
    req.browse_paths = &bp;
    uas_translate_browse_paths_to_node_ids_response resp;
    uas_status st =
        uas_client_call_sync(c, &req, UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST), &resp,
                             UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE), a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        *out = resp.results[0];
    }
    return st;
}

BOTH(translate_browse_paths_resolves_server_status_and_contract_nodes)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_browse_path_result r;
    const char *p1[] = {"Objects", "Server", "ServerStatus"};
    const uint16_t ns1[] = {0, 0, 0};
    cr_assert_eq(translate(c, p1, ns1, 3, &r, &a), UAS_GOOD);
    cr_assert_eq(r.status_code, UAS_GOOD, "%s", uas_status_name(r.status_code));
    cr_assert_eq(r.targets_count, 1);
    uas_nodeid want = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS);
    cr_expect(uas_equal(&r.targets[0].target_id.nodeid, &want, UAS_TYPE(NODE_ID)));
    cr_expect_eq(r.targets[0].remaining_path_index, UINT32_MAX);
    const char *p2[] = {"Objects", "BenchmarkValue7"};
    const uint16_t ns2[] = {0, 1};
    cr_assert_eq(translate(c, p2, ns2, 2, &r, &a), UAS_GOOD);
    cr_assert_eq(r.status_code, UAS_GOOD);
    cr_assert_eq(r.targets_count, 1);
    want = uas_nodeid_numeric(1, 1008);
    cr_expect(uas_equal(&r.targets[0].target_id.nodeid, &want, UAS_TYPE(NODE_ID)));
    const char *p3[] = {"Objects", "NoSuchThing"};
    cr_assert_eq(translate(c, p3, ns1, 2, &r, &a), UAS_GOOD);
    cr_expect_eq(r.status_code, UAS_BAD_NO_MATCH, "%s", uas_status_name(r.status_code));
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}

/* ---- Call ---- */

static uas_status call_add(uas_client *c, int32_t x, int32_t y, int32_t *sum)
{
    uas_variant in[2];
    uas_variant_set_scalar(&in[0], &x, UAS_TYPE(INT32));
    uas_variant_set_scalar(&in[1], &y, UAS_TYPE(INT32));
    uas_call_method_request m;
    memset(&m, 0, sizeof(m));
    m.object_id = uas_nodeid_string(1, "Demo");
    m.method_id = uas_nodeid_string(1, "Demo.Add");
    m.input_arguments_count = 2;
    m.input_arguments = in;
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call_count = 1;
    req.methods_to_call = &m;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_call_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CALL_REQUEST), &resp,
                                         UAS_TYPE(CALL_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0].status_code;
        if (st == UAS_GOOD) {
            cr_assert_eq(resp.results[0].output_arguments_count, 1);
            cr_assert_eq(resp.results[0].output_arguments[0].type, UAS_TYPE(INT32));
            *sum = *(int32_t *)resp.results[0].output_arguments[0].data;
        }
    }
    uas_arena_free(&a);
    return st;
}

BOTH(call_demo_add_returns_the_sum_and_reports_overflow)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    int32_t sum = 0;
    cr_assert_eq(call_add(c, 2, 40, &sum), UAS_GOOD);
    cr_expect_eq(sum, 42);
    cr_assert_eq(call_add(c, -7, 3, &sum), UAS_GOOD);
    cr_expect_eq(sum, -4);
    cr_expect_eq(call_add(c, INT32_MAX, 1, &sum), UAS_BAD_OUT_OF_RANGE);
    env_client_close(c);
    env_stop(&e);
}

/* ---- many sessions, many requests ---- */

enum { SESSIONS = 100, PER_SESSION = 10 };

typedef struct load {
    size_t active, answered, good, closed;
} load;

static void load_state(uas_client *c, void *ud, uas_client_state s, uas_status reason)
{
    (void)c;
    (void)reason;
    load *l = ud;
    if (s == UAS_CLIENT_SESSION_ACTIVE)
        l->active++;
    if (s == UAS_CLIENT_CLOSED)
        l->closed++;
}

typedef struct load_req {
    load *l;
    int32_t expect;
} load_req;

static void load_answer(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    load_req *r = ud;
    r->l->answered++;
    if (st != UAS_GOOD || t != UAS_TYPE(READ_RESPONSE))
        return;
    const uas_read_response *rr = resp;
    if (rr->results_count == 1 && rr->results[0].has_value &&
        rr->results[0].value.type == UAS_TYPE(INT32) &&
        *(int32_t *)rr->results[0].value.data == r->expect)
        r->l->good++;
}

BOTH(hundred_sessions_on_one_loop_with_ten_requests_each_in_flight)
{
    env e;
    start(&e, threads);
    static uas_client *cl[SESSIONS];
    static load_req reqs[SESSIONS * PER_SESSION];
    load l = {0, 0, 0, 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.max_inflight = PER_SESSION;
    for (size_t i = 0; i < SESSIONS; i++) {
        cl[i] = uas_client_new(e.loop, &cfg, load_state, &l);
        cr_assert(cl[i]);
        cr_assert_eq(uas_client_connect(cl[i]), UAS_GOOD);
    }
    cr_assert(env_run_until_count(&e, &l.active, SESSIONS, 20000), "%zu of %d sessions active",
              l.active, SESSIONS);
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.attribute_id = ATTR_VALUE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    for (size_t i = 0; i < SESSIONS; i++) {
        for (size_t k = 0; k < PER_SESSION; k++) {
            uint32_t node = (uint32_t)((i * PER_SESSION + k) % 100);
            rv.node_id = uas_nodeid_numeric(1, 1001 + node);
            load_req *r = &reqs[i * PER_SESSION + k];
            r->l = &l;
            r->expect = (int32_t)node;
            cr_assert_eq(uas_client_request(cl[i], &req, UAS_TYPE(READ_REQUEST), load_answer, r),
                         UAS_GOOD);
        }
        /* The eleventh is over max_inflight. */
        cr_assert_eq(uas_client_request(cl[i], &req, UAS_TYPE(READ_REQUEST), load_answer, NULL),
                     UAS_BAD_TOO_MANY_OPERATIONS);
    }
    cr_assert(env_run_until_count(&e, &l.answered, SESSIONS * PER_SESSION, 20000),
              "%zu of %d answered", l.answered, SESSIONS * PER_SESSION);
    cr_expect_eq(l.good, SESSIONS * PER_SESSION);
    for (size_t i = 0; i < SESSIONS; i++)
        uas_client_disconnect(cl[i]);
    cr_assert(env_run_until_count(&e, &l.closed, SESSIONS, 20000), "%zu closed", l.closed);
    for (size_t i = 0; i < SESSIONS; i++)
        uas_client_delete(cl[i]);
    env_stop(&e);
}

/* ---- timeouts, late answers, server going away ---- */

typedef struct one_answer {
    bool done;
    uas_status status;
    int calls;
    int32_t value; /* of an Int32 read */
} one_answer;

static void on_one(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    one_answer *o = ud;
    o->done = true;
    o->status = st;
    o->calls++;
    const uas_read_response *r = resp;
    if (t == UAS_TYPE(READ_RESPONSE) && r->results_count == 1 && r->results[0].has_value &&
        r->results[0].value.type == UAS_TYPE(INT32))
        o->value = *(int32_t *)r->results[0].value.data;
}

static void send_read(uas_client *c, uas_nodeid id, one_answer *o)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = id;
    rv.attribute_id = ATTR_VALUE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    cr_assert_eq(uas_client_request(c, &req, UAS_TYPE(READ_REQUEST), on_one, o), UAS_GOOD);
}

BOTH(request_timeout_answers_bad_timeout_and_the_late_answer_is_dropped)
{
    env e;
    start(&e, threads);
    /* The slow read takes 800 ms, the client waits 500. */
    uas_client *c = env_client(&e, true, 500);
    one_answer o = {false, UAS_GOOD, 0, 0};
    int64_t t0 = uas_monotonic_ms();
    send_read(c, uas_nodeid_string(1, "Slow"), &o);
    cr_assert(env_run_until(&e, &o.done, ENV_WAIT_MS));
    int64_t took = uas_monotonic_ms() - t0;
    cr_expect_eq(o.status, UAS_BAD_TIMEOUT, "%s", uas_status_name(o.status));
    cr_expect(took >= 490 && took < ENV_SLOW_MS, "timed out after %lld ms", (long long)took);
    /* The server answers the slow read (value 7) while this one is in
     * flight: that late answer must not be taken for this one's. */
    one_answer o2 = {false, UAS_GOOD, 0, 0};
    send_read(c, uas_nodeid_numeric(1, 1005), &o2);
    cr_assert(env_run_until(&e, &o2.done, ENV_WAIT_MS));
    cr_expect_eq(o2.status, UAS_GOOD, "%s", uas_status_name(o2.status));
    cr_expect_eq(o2.value, 4);
    cr_expect_eq(o2.calls, 1);
    cr_expect_eq(env_read_i32(c, 1005), 4);
    cr_expect_eq(o.calls, 1, "a timed-out request is answered once");
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_SESSION_ACTIVE);
    env_client_close(c);
    env_stop(&e);
}

BOTH(server_stop_answers_pending_requests_bad_connection_closed)
{
    env e;
    start(&e, threads);
    state_log log = {.n = 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    uas_client *c = uas_client_new(e.loop, &cfg, log_state, &log);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    /* A request races the stop: it is answered either normally or with
     * BadConnectionClosed, exactly once, and stopping closes the
     * connection so the client learns at once (not at its timeout). */
    one_answer o = {false, UAS_GOOD, 0, 0};
    send_read(c, uas_nodeid_numeric(1, 1001), &o);
    uas_server_stop(e.server);
    cr_assert(env_run_until(&e, &o.done, ENV_WAIT_MS));
    cr_expect(o.status == UAS_GOOD || o.status == UAS_BAD_CONNECTION_CLOSED, "%s",
              uas_status_name(o.status));
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_CLOSED, ENV_WAIT_MS), UAS_GOOD);
    cr_expect_eq(uas_client_get_reason(c), UAS_BAD_CONNECTION_CLOSED, "%s",
                 uas_status_name(uas_client_get_reason(c)));
    cr_expect_eq(log.states[log.n - 1], UAS_CLIENT_CLOSED);
    uas_server_delete(e.server);
    e.server = NULL;
    /* Closed: requests are refused at once. */
    uas_read_request rr;
    memset(&rr, 0, sizeof(rr));
    cr_expect_eq(uas_client_request(c, &rr, UAS_TYPE(READ_REQUEST), on_one, &o),
                 UAS_BAD_CONNECTION_CLOSED);
    uas_client_delete(c);
    env_stop(&e);
}

/* A callback may delete its own client; the others still get their
 * answers, exactly once. */
typedef struct deleter {
    uas_client *c;
    int answers;
    uas_status last;
} deleter;

static void delete_on_answer(uas_client *c, void *ud, uas_status st, const void *resp,
                             const uas_type *t)
{
    (void)resp;
    (void)t;
    deleter *d = ud;
    d->answers++;
    d->last = st;
    if (d->c == c) {
        d->c = NULL;
        uas_client_delete(c);
    }
}

BOTH(deleting_a_client_from_its_callback_answers_the_rest_once)
{
    env e;
    start(&e, threads);
    uas_client *c = env_client(&e, true, 0);
    deleter d = {c, 0, UAS_GOOD};
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = uas_nodeid_numeric(1, 1001);
    rv.attribute_id = ATTR_VALUE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    for (int i = 0; i < 5; i++)
        cr_assert_eq(uas_client_request(c, &req, UAS_TYPE(READ_REQUEST), delete_on_answer, &d),
                     UAS_GOOD);
    int64_t until = uas_monotonic_ms() + ENV_WAIT_MS;
    while (d.answers < 5 && uas_monotonic_ms() < until)
        uas_loop_run_once(e.loop, false);
    cr_expect_eq(d.answers, 5);
    cr_expect_eq(d.last, UAS_BAD_CONNECTION_CLOSED, "the others end with the client");
    cr_expect_null(d.c);
    env_stop(&e);
}

/* The client's HEL limits what the server may send: a response over it is
 * aborted (abort chunk) and answered with that status; the channel stays. */
BOTH(response_over_the_client_message_limit_is_bad_response_too_large)
{
    env e;
    start(&e, threads);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.conn.channel.recv_buffer_size = 8192;
    cfg.conn.channel.max_message_size = 16384;
    uas_client *c = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    enum { N = 2000 };
    static uas_read_value_id ids[N];
    memset(ids, 0, sizeof(ids));
    for (size_t i = 0; i < N; i++) {
        ids[i].node_id = uas_nodeid_numeric(1, 1001 + (uint32_t)(i % 100));
        ids[i].attribute_id = ATTR_VALUE;
    }
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.nodes_to_read_count = N;
    req.nodes_to_read = ids;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_read_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), &a, ENV_WAIT_MS);
    cr_expect_eq(st, UAS_BAD_RESPONSE_TOO_LARGE, "%s", uas_status_name(st));
    cr_expect_eq(resp.results_count, 0);
    /* Small answers still come through on the same channel. */
    cr_expect_eq(env_read_i32(c, 1003), 2);
    cr_expect_eq(uas_client_get_state(c), UAS_CLIENT_SESSION_ACTIVE);
    uas_arena_free(&a);
    env_client_close(c);
    env_stop(&e);
}
