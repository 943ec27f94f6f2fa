/* Session services (Part 4, 5.6) and the discovery services (5.4). */
#include <string.h>

#include "aspace.h"
#include "dispatch.h"

#define TCP_PROFILE "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"

static uint32_t channel_of(uas_request_ctx *ctx)
{
    return ctx->channel_id;
}

static void set_result(void *resp, uas_status st)
{
    ((uas_response_header *)resp)->service_result = st;
}

/* The URL the client asked with, when it names an opc.tcp endpoint: clients
 * connect back to what they receive, so echoing their host keeps NAT and
 * loopback set-ups working. */
static const uas_string *requested_url(const uas_string *url)
{
    static const char prefix[] = "opc.tcp://";
    if (!url->data || url->length <= sizeof(prefix) - 1 ||
        memcmp(url->data, prefix, sizeof(prefix) - 1) != 0)
        return NULL;
    return url;
}

static uas_status endpoints_for(uas_request_ctx *ctx, const uas_string *url, size_t *count,
                                uas_endpoint_description **out)
{
    uas_status st = uas_server_endpoints(ctx->server, ctx->arena, count, out);
    if (st == UAS_GOOD && url) {
        for (size_t i = 0; i < *count; i++) {
            (*out)[i].endpoint_url = *url;
            if ((*out)[i].server.discovery_urls_count == 1)
                (*out)[i].server.discovery_urls[0] = *url;
        }
    }
    return st;
}

void uas_svc_get_endpoints(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_get_endpoints_request *req = vreq;
    uas_get_endpoints_response *resp = vresp;
    /* A profile filter that does not name our transport selects nothing. */
    bool match = req->profile_uris_count == 0;
    for (size_t i = 0; i < req->profile_uris_count; i++)
        if (uas_string_eq_cstr(&req->profile_uris[i], TCP_PROFILE))
            match = true;
    if (!match) {
        resp->endpoints = UAS_EMPTY_ARRAY;
        return;
    }
    uas_status st = endpoints_for(ctx, requested_url(&req->endpoint_url), &resp->endpoints_count,
                                  &resp->endpoints);
    if (st != UAS_GOOD)
        set_result(resp, st);
}

void uas_svc_find_servers(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_find_servers_request *req = vreq;
    uas_find_servers_response *resp = vresp;
    uas_application_description d;
    uas_server_app_description(ctx->server, &d);
    bool match = req->server_uris_count == 0;
    for (size_t i = 0; i < req->server_uris_count; i++)
        if (uas_string_eq_cstr(&req->server_uris[i], ctx->server->cfg.application_uri))
            match = true;
    if (!match) {
        resp->servers = UAS_EMPTY_ARRAY;
        return;
    }
    const uas_string *url = requested_url(&req->endpoint_url);
    if (url) {
        d.discovery_urls_count = 1;
        d.discovery_urls = uas_arena_alloc(ctx->arena, sizeof(uas_string));
        if (!d.discovery_urls) {
            set_result(resp, UAS_BAD_OUT_OF_MEMORY);
            return;
        }
        d.discovery_urls[0] = *url;
    }
    resp->servers = uas_arena_alloc(ctx->arena, sizeof(d));
    if (!resp->servers) {
        set_result(resp, UAS_BAD_OUT_OF_MEMORY);
        return;
    }
    resp->servers[0] = d;
    resp->servers_count = 1;
}

void uas_svc_create_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_create_session_request *req = vreq;
    uas_create_session_response *resp = vresp;
    const uas_server_config *cfg = &ctx->server->cfg;
    double timeout = req->requested_session_timeout;
    if (!(timeout >= cfg->min_session_timeout_ms)) /* also catches NaN */
        timeout = cfg->min_session_timeout_ms;
    if (timeout > cfg->max_session_timeout_ms)
        timeout = cfg->max_session_timeout_ms;
    uas_session *se = NULL;
    uas_status st = uas_sessions_create(ctx->server->sessions, ctx->server, channel_of(ctx),
                                        (int64_t)timeout, ctx->now_ms, &se);
    if (st != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, "session", "CreateSession refused: %s", uas_status_name(st));
        set_result(resp, st);
        return;
    }
    if (req->session_name.data && req->session_name.length > 0) {
        size_t n = req->session_name.length > 256 ? 256 : req->session_name.length;
        se->name.data = uas_malloc(n);
        if (se->name.data) {
            memcpy(se->name.data, req->session_name.data, n);
            se->name.length = n;
        }
    }
    se->max_response_size = req->max_response_message_size;
    resp->session_id = se->session_id;
    resp->authentication_token = se->auth_token;
    resp->revised_session_timeout = timeout;
    resp->server_nonce.length = sizeof(se->server_nonce);
    resp->server_nonce.data = uas_arena_alloc(ctx->arena, sizeof(se->server_nonce));
    if (resp->server_nonce.data)
        memcpy(resp->server_nonce.data, se->server_nonce, sizeof(se->server_nonce));
    else
        resp->server_nonce.length = 0;
    resp->max_request_message_size = cfg->max_message_size;
    resp->server_software_certificates = UAS_EMPTY_ARRAY;
    st = endpoints_for(ctx, requested_url(&req->endpoint_url), &resp->server_endpoints_count,
                       &resp->server_endpoints);
    if (ctx->sconn)
        uas_sconn_cache_add(ctx->sconn, se);
    uas_session_unref(ctx->server, se);
    if (st != UAS_GOOD) {
        uas_sessions_remove(ctx->server->sessions, se);
        set_result(resp, st);
        return;
    }
    uas_log(UAS_LOG_DEBUG, "session", "session created on channel %u, timeout %.0f ms",
            channel_of(ctx), timeout);
    uas_server_system_event(ctx->server, 100, "Session created");
}

/* Anonymous is the only identity until user authentication arrives with
 * the security work: no token, or an AnonymousIdentityToken whose policy
 * is ours. */
static uas_status check_identity(const uas_extensionobject *tok)
{
    if (tok->encoding == UAS_EXTOBJ_EMPTY)
        return UAS_GOOD;
    if (tok->encoding != UAS_EXTOBJ_DECODED)
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    if (tok->content.decoded.type != UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN))
        return UAS_BAD_IDENTITY_TOKEN_REJECTED;
    const uas_anonymous_identity_token *a = tok->content.decoded.data;
    if (a->policy_id.data && a->policy_id.length > 0 &&
        !uas_string_eq_cstr(&a->policy_id, "anonymous"))
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    return UAS_GOOD;
}

void uas_svc_activate_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_activate_session_request *req = vreq;
    uas_activate_session_response *resp = vresp;
    uas_session *se = ctx->session;
    uint32_t channel = channel_of(ctx);
    /* The first activation must come over the channel that created the
     * session; later ones may move it to a new channel. */
    if (!se->activated && se->channel_id != channel) {
        set_result(resp, UAS_BAD_SECURE_CHANNEL_ID_INVALID);
        return;
    }
    uas_status st = check_identity(&req->user_identity_token);
    if (st != UAS_GOOD) {
        atomic_fetch_add(&ctx->server->counters.security_rejected_requests, 1);
        set_result(resp, st);
        return;
    }
    if (se->activated && se->channel_id != channel)
        uas_log(UAS_LOG_INFO, "session", "session moved from channel %u to channel %u",
                se->channel_id, channel);
    se->channel_id = channel;
    se->activated = true;
    uas_random_bytes(se->server_nonce, sizeof(se->server_nonce));
    resp->server_nonce.length = sizeof(se->server_nonce);
    resp->server_nonce.data = uas_arena_alloc(ctx->arena, sizeof(se->server_nonce));
    if (resp->server_nonce.data)
        memcpy(resp->server_nonce.data, se->server_nonce, sizeof(se->server_nonce));
    else
        resp->server_nonce.length = 0;
    size_t n = req->client_software_certificates_count;
    resp->results_count = n;
    resp->results = n ? uas_arena_calloc(ctx->arena, n, sizeof(uas_status)) : UAS_EMPTY_ARRAY;
    if (!resp->results) {
        resp->results_count = 0;
        resp->results = UAS_EMPTY_ARRAY;
    }
    resp->diagnostic_infos = UAS_EMPTY_ARRAY;
}

void uas_svc_close_session(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_close_session_request *req = vreq;
    uas_close_session_response *resp = vresp;
    if (ctx->session->channel_id != channel_of(ctx)) {
        set_result(resp, UAS_BAD_SECURE_CHANNEL_ID_INVALID);
        return;
    }
    /* Kept subscriptions live on, transferable, until their lifetime ends. */
    ctx->session->delete_subscriptions = req->delete_subscriptions;
    uas_sessions_remove(ctx->server->sessions, ctx->session);
    uas_server_system_event(ctx->server, 100, "Session closed");
}

void uas_svc_cancel(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    (void)ctx;
    (void)vreq;
    /* Every service completes before the next request of the channel is
     * read, so nothing is ever outstanding to cancel. */
    ((uas_cancel_response *)vresp)->cancel_count = 0;
}
