/* Session and discovery services driven in memory: no sockets, the
 * request context is built by hand and the clock is the test's. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "dispatch.h"

static uas_server *srv;
static uint8_t mem[65536];
static uas_arena arena;

static void setup_with(uint32_t max_sessions)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1;
    cfg.max_sessions = max_sessions;
    cfg.min_session_timeout_ms = 10000;
    cfg.max_session_timeout_ms = 60000;
    cfg.log_level = UAS_LOG_ERROR;
    /* Many unactivated sessions of channel 1 (the quotas have tests of
     * their own in test_session_quota.c). */
    cfg.max_unactivated_per_channel = 0;
    uas_status st;
    srv = uas_server_new(&cfg, &st);
    cr_assert_not_null(srv, "server: %s", uas_status_name(st));
    uas_arena_init(&arena, mem, sizeof(mem), 0);
}

static void setup(void)
{
    setup_with(100);
}

static void teardown(void)
{
    uas_arena_free(&arena);
    uas_server_delete(srv);
}

static uas_request_ctx ctx_on(uint32_t channel, int64_t now_ms)
{
    uas_request_ctx c;
    memset(&c, 0, sizeof(c));
    c.server = srv;
    c.arena = &arena;
    c.channel_id = channel;
    c.now_ms = now_ms;
    c.now = uas_datetime_now();
    return c;
}

/* CreateSession on a channel; returns the response (token etc.). */
static uas_create_session_response create(uint32_t channel, double timeout, int64_t now)
{
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.session_name = uas_string_from("test");
    req.requested_session_timeout = timeout;
    uas_create_session_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(channel, now);
    uas_svc_create_session(&c, &req, &resp);
    return resp;
}

static uas_status activate(const uas_nodeid *token, uint32_t channel,
                           const uas_extensionobject *identity)
{
    uas_session *se = uas_sessions_find(srv->sessions, token);
    if (!se)
        return UAS_BAD_SESSION_ID_INVALID;
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    if (identity)
        req.user_identity_token = *identity;
    uas_activate_session_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(channel, 0);
    c.session = se;
    uas_svc_activate_session(&c, &req, &resp);
    uas_session_unref(srv, se);
    return resp.response_header.service_result;
}

static uas_status close_on(const uas_nodeid *token, uint32_t channel)
{
    uas_session *se = uas_sessions_find(srv->sessions, token);
    if (!se)
        return UAS_BAD_SESSION_ID_INVALID;
    uas_close_session_request req;
    memset(&req, 0, sizeof(req));
    uas_close_session_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(channel, 0);
    c.session = se;
    uas_svc_close_session(&c, &req, &resp);
    uas_session_unref(srv, se);
    return resp.response_header.service_result;
}

TestSuite(session, .init = setup, .fini = teardown);

Test(session, create_returns_token_nonce_and_endpoints)
{
    uas_create_session_response r = create(1, 30000, 0);
    cr_assert_eq(r.response_header.service_result, UAS_GOOD);
    cr_assert_eq(r.authentication_token.kind, UAS_NODEID_GUID);
    cr_assert_eq(r.session_id.ns, 1);
    cr_assert_float_eq(r.revised_session_timeout, 30000, 1e-9);
    cr_assert_eq(r.server_nonce.length, 32);
    cr_assert_eq(r.server_endpoints_count, 1);
    cr_assert_eq(uas_sessions_count(srv->sessions), 1);
}

Test(session, create_revises_timeout_into_configured_bounds)
{
    cr_assert_float_eq(create(1, 1, 0).revised_session_timeout, 10000, 1e-9);
    cr_assert_float_eq(create(1, 1e9, 0).revised_session_timeout, 60000, 1e-9);
    cr_assert_float_eq(create(1, NAN, 0).revised_session_timeout, 10000, 1e-9);
}

Test(session, two_sessions_get_different_tokens)
{
    uas_create_session_response a = create(1, 30000, 0), b = create(1, 30000, 0);
    cr_assert_neq(
        memcmp(&a.authentication_token.id.guid, &b.authentication_token.id.guid, sizeof(uas_guid)),
        0);
}

Test(session, first_activation_on_another_channel_is_refused)
{
    uas_create_session_response r = create(1, 30000, 0);
    cr_assert_eq(activate(&r.authentication_token, 2, NULL), UAS_BAD_SECURE_CHANNEL_ID_INVALID);
    cr_assert_eq(activate(&r.authentication_token, 1, NULL), UAS_GOOD);
}

Test(session, activation_rotates_the_server_nonce)
{
    uas_create_session_response r = create(1, 30000, 0);
    uint8_t before[32];
    memcpy(before, r.server_nonce.data, 32);
    cr_assert_eq(activate(&r.authentication_token, 1, NULL), UAS_GOOD);
    uas_session *se = uas_sessions_find(srv->sessions, &r.authentication_token);
    cr_assert(se->activated);
    cr_assert_neq(memcmp(se->server_nonce, before, 32), 0);
    uas_session_unref(srv, se);
}

Test(session, anonymous_token_with_foreign_policy_is_invalid)
{
    uas_create_session_response r = create(1, 30000, 0);
    uas_anonymous_identity_token tok = {uas_string_from("not-ours")};
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
    eo.content.decoded.data = &tok;
    cr_assert_eq(activate(&r.authentication_token, 1, &eo), UAS_BAD_IDENTITY_TOKEN_INVALID);
    tok.policy_id = uas_string_from("anonymous");
    cr_assert_eq(activate(&r.authentication_token, 1, &eo), UAS_GOOD);
}

Test(session, username_token_is_rejected_when_no_user_name_policy_is_offered)
{
    uas_create_session_response r = create(1, 30000, 0);
    uas_user_name_identity_token tok;
    memset(&tok, 0, sizeof(tok));
    tok.user_name = uas_string_from("alice");
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    eo.content.decoded.data = &tok;
    cr_assert_eq(activate(&r.authentication_token, 1, &eo), UAS_BAD_IDENTITY_TOKEN_REJECTED);
    cr_assert_eq(srv->counters.security_rejected_requests, 1);
}

Test(session, anonymous_none_session_does_not_move_to_a_new_channel)
{
    /* Issue #18, 7: without a certificate or a user to prove, the token
     * alone (readable on a None channel) must not move the session. */
    uas_create_session_response r = create(1, 30000, 0);
    cr_assert_eq(activate(&r.authentication_token, 1, NULL), UAS_GOOD);
    cr_assert_eq(activate(&r.authentication_token, 2, NULL), UAS_BAD_USER_ACCESS_DENIED);
    uas_session *se = uas_sessions_find(srv->sessions, &r.authentication_token);
    cr_assert_eq(se->channel_id, 1);
    uas_session_unref(srv, se);
    /* Closing from the other channel is refused; from its channel it works. */
    cr_assert_eq(close_on(&r.authentication_token, 2), UAS_BAD_SECURE_CHANNEL_ID_INVALID);
    cr_assert_eq(close_on(&r.authentication_token, 1), UAS_GOOD);
    cr_assert_null(uas_sessions_find(srv->sessions, &r.authentication_token));
}

Test(session, idle_session_expires_after_its_timeout)
{
    uas_create_session_response r = create(1, 10000, 1000);
    uas_create_session_response keep = create(1, 60000, 1000);
    uas_sessions_expire(srv->sessions, srv, 1000 + 10000);
    cr_assert_eq(uas_sessions_count(srv->sessions), 2, "not yet expired at the deadline");
    uas_sessions_expire(srv->sessions, srv, 1000 + 10001);
    cr_assert_null(uas_sessions_find(srv->sessions, &r.authentication_token));
    uas_session *k = uas_sessions_find(srv->sessions, &keep.authentication_token);
    cr_assert_not_null(k);
    uas_session_unref(srv, k);
    cr_assert_eq(srv->counters.session_timeouts, 1);
}

Test(session, many_sessions_expire_in_one_scan)
{
    for (int i = 0; i < 90; i++)
        create(1, 10000, 0);
    uas_sessions_expire(srv->sessions, srv, 20000);
    cr_assert_eq(uas_sessions_count(srv->sessions), 0);
    cr_assert_eq(srv->counters.session_timeouts, 90);
}

Test(session_limit, create_beyond_max_sessions_fails, .init = NULL, .fini = NULL)
{
    setup_with(2);
    cr_assert_eq(create(1, 30000, 0).response_header.service_result, UAS_GOOD);
    cr_assert_eq(create(1, 30000, 0).response_header.service_result, UAS_GOOD);
    cr_assert_eq(create(1, 30000, 0).response_header.service_result, UAS_BAD_TOO_MANY_SESSIONS);
    cr_assert_eq(srv->counters.rejected_sessions, 1);
    teardown();
}

Test(discovery, get_endpoints_filters_by_transport_profile)
{
    setup();
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    uas_string prof =
        uas_string_from("http://opcfoundation.org/UA-Profile/Transport/https-uabinary");
    req.profile_uris = &prof;
    req.profile_uris_count = 1;
    uas_get_endpoints_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(1, 0);
    uas_svc_get_endpoints(&c, &req, &resp);
    cr_assert_eq(resp.endpoints_count, 0);
    prof = uas_string_from("http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary");
    req.endpoint_url = uas_string_from("opc.tcp://10.1.2.3:4840");
    memset(&resp, 0, sizeof(resp));
    uas_svc_get_endpoints(&c, &req, &resp);
    cr_assert_eq(resp.endpoints_count, 1);
    cr_assert(uas_string_eq_cstr(&resp.endpoints[0].endpoint_url, "opc.tcp://10.1.2.3:4840"),
              "the endpoint URL echoes the host the client used");
    cr_assert_eq(resp.endpoints[0].user_identity_tokens_count, 1);
    cr_assert_eq(resp.endpoints[0].user_identity_tokens[0].token_type,
                 UAS_USER_TOKEN_TYPE_ANONYMOUS);
    teardown();
}

Test(discovery, find_servers_filters_by_server_uri)
{
    setup();
    uas_find_servers_request req;
    memset(&req, 0, sizeof(req));
    uas_string uri = uas_string_from("urn:someone:else");
    req.server_uris = &uri;
    req.server_uris_count = 1;
    uas_find_servers_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_request_ctx c = ctx_on(1, 0);
    uas_svc_find_servers(&c, &req, &resp);
    cr_assert_eq(resp.servers_count, 0);
    uri = uas_string_from("urn:uastack:server");
    memset(&resp, 0, sizeof(resp));
    uas_svc_find_servers(&c, &req, &resp);
    cr_assert_eq(resp.servers_count, 1);
    cr_assert_eq(resp.servers[0].application_type, UAS_APPLICATION_TYPE_SERVER);
    teardown();
}
