/* The server object: configuration, event loops and their threads,
 * listening sockets, housekeeping, and the descriptions it advertises.
 *
 * Each loop has its own listening socket bound with SO_REUSEPORT, so the
 * kernel spreads new connections over the loops and no accept hand-off (and
 * no lock) is needed; a connection then lives on its loop for good. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ua/membudget.h>

#include "lockdef.h"
#include "aspace.h"
#include "authz.h"
#include "dispatch.h"
#include "secpol.h"
#include "svc_subscription.h"
#include "workpool.h"

typedef struct loop_watchers {
    ev_io listen;
    ev_async stop;
    ev_timer housekeeping;
    ev_timer idle;          /* closes channels idle without a session */
    ev_timer accept_retry;  /* resumes accepting after a shortage of descriptors */
    ev_async relieve;       /* memory pressure: drop the largest consumer */
    ev_timer trim;          /* gives memory of past bursts back (memory_trim) */
    ev_check rcu_online;    /* lock-free Reads: the loop woke up (aspace.h) */
    ev_prepare rcu_offline; /* and is going to sleep: a quiescent point */
    double accept_backoff;  /* seconds of the next pause */
} loop_watchers;

/* Pauses of the listener when accept() fails for lack of descriptors or
 * memory: short at first, doubling up to a second while the shortage lasts. */
#define ACCEPT_BACKOFF_MIN 0.01
#define ACCEPT_BACKOFF_MAX 1.0

void uas_server_config_default(uas_server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->bind_address = "0.0.0.0";
    c->port = 4840;
    c->application_uri = "urn:uastack:server";
    c->product_uri = "urn:uastack";
    c->application_name = "uastack server";
    c->buffer_size = 65536;
    c->max_message_size = 16u << 20;
    c->max_chunk_count = 4096;
    c->max_connections = 10000;
    c->hello_timeout_ms = 10000;
    c->max_output_bytes = 4u << 20;
    c->min_token_lifetime_ms = 600000;
    c->max_token_lifetime_ms = 3600000;
    c->max_sessions = 10000;
    c->min_session_timeout_ms = 10000;
    c->max_session_timeout_ms = 3600000;
    c->max_browse_continuation_points = 10;
    c->max_nodes_per_read = 10000;
    c->max_nodes_per_write = 10000;
    c->max_nodes_per_browse = 5000;
    c->max_references_per_node = 1000;
    c->max_nodes_per_translate = 1000;
    c->max_nodes_per_method_call = 1000;
    c->max_nodes_per_register = 5000;
    c->max_filter_elements = 64;
    c->max_like_pattern_length = 1024;
    c->max_filter_steps = 100000;
    c->max_filter_scratch = 65536;
    c->decode_limits = uas_limits_default;
    c->max_nodes_per_node_management = 1000;
    c->nodeset_max_file_size = (size_t)64 << 20;
    c->nodeset_max_nodes = 1000000;
    c->nodeset_max_depth = 64;
    c->nodeset_store_interval_ms = 1000;
    c->log_level = UAS_LOG_INFO;
    c->security = "None";
    c->pki_dir = "uastack-pki";
    c->allow_anonymous = true;
    c->key_bits = 2048;
    c->channel_idle_timeout_ms = 30000;
    c->session_activation_timeout_ms = 15000;
    c->max_unactivated_per_channel = 8;
    c->max_unactivated_per_address = 128;
    c->log_rate_burst = 10;
    c->log_rate_interval_ms = 10000;
    c->max_connections_per_address = 256;
    c->memory_trim = 3;
    uas_server_config_subscription_defaults(c);
#ifdef UAS_MINIMAL
    /* The minimal profile's defaults are a device's: a few clients, 8 KiB
     * chunks (the smallest Part 6 allows), 1 MiB messages. */
    c->buffer_size = 8192;
    c->max_message_size = 1u << 20;
    c->max_chunk_count = 128;
    c->max_connections = 16;
    c->max_sessions = 8;
    c->max_output_bytes = 256u << 10;
#endif
    c->worker_queue = 256;
}

/* Descriptors the server needs besides its connections: per loop the
 * listener, the epoll and eventfd of libev and a spare; in general stdio,
 * PKI and configuration files, the users file, log files of an embedding
 * program. A connection refused at max_connections still takes a
 * descriptor for a moment, which the general reserve also covers. */
enum { FDS_PER_LOOP = 4, FDS_RESERVED = 64 };

uint32_t uas_server_connection_limit(uint32_t configured, uint64_t nofile, unsigned nloops)
{
    uint64_t reserved = (uint64_t)FDS_PER_LOOP * nloops + FDS_RESERVED;
    uint64_t fit = nofile > reserved ? nofile - reserved : 1;
    return fit < configured ? (uint32_t)fit : configured;
}

static char *dup_cstr(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = uas_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void free_cstr(char *s)
{
    if (s)
        uas_free(s, strlen(s) + 1);
}

/* io_backend, else the UAS_IO_BACKEND environment variable (how the
 * test suite runs under either backend), else auto. */
static bool io_backend_of(const uas_server_config *c, uas_io_backend *b)
{
    const char *n = c->io_backend && *c->io_backend ? c->io_backend : getenv("UAS_IO_BACKEND");
    *b = UAS_IO_AUTO;
    return !n || !*n || uas_io_backend_parse(n, b);
}

/* Each refusal names the setting, so a configuration error is found
 * without reading the code. */
static uas_status check_config(const uas_server_config *c)
{
    uas_io_backend iob;
    const char *why = c->buffer_size < 8192                         ? "buffer_size below 8192"
                      : c->max_sessions == 0                        ? "max_sessions is 0"
                      : c->max_connections == 0                     ? "max_connections is 0"
                      : !c->application_uri || !*c->application_uri ? "application_uri is empty"
                      : !c->bind_address                            ? "bind_address is missing"
                      : c->min_session_timeout_ms > c->max_session_timeout_ms
                          ? "min_session_timeout_ms above max_session_timeout_ms"
                      : c->min_token_lifetime_ms > c->max_token_lifetime_ms
                          ? "min_token_lifetime_ms above max_token_lifetime_ms"
                      : c->threads > 256 ? "threads above 256"
                      : !io_backend_of(c, &iob)
                          ? "io_backend (or UAS_IO_BACKEND) is not auto, epoll or io_uring"
#ifdef UAS_SINGLE_LOOP
                      : c->threads > 1 ? "threads above 1 (this build has one event loop)"
#endif
                                       : NULL;
    if (why) {
        uas_log(UAS_LOG_ERROR, "server", "configuration: %s", why);
        return UAS_BAD_INVALID_ARGUMENT;
    }
    return UAS_GOOD;
}

uas_status uas_server_config_check(const uas_server_config *cfg)
{
    uas_status st = check_config(cfg);
    return st == UAS_GOOD ? uas_server_security_check(cfg) : st;
}

static uas_server *server_new(const uas_server_config *cfg, struct ev_loop *app_loop,
                              uas_status *status)
{
    uas_status st = check_config(cfg);
    if (st == UAS_GOOD && app_loop && cfg->threads != 1) {
        uas_log(UAS_LOG_ERROR, "server",
                "configuration: threads must be 1 on the application's libev loop");
        st = UAS_BAD_INVALID_ARGUMENT;
    }
    if (st != UAS_GOOD) {
        *status = st;
        return NULL;
    }
    uas_server *s = uas_calloc(1, sizeof(*s));
    if (!s) {
        *status = UAS_BAD_OUT_OF_MEMORY;
        return NULL;
    }
    s->cfg = *cfg;
    uas_log_set_level(cfg->log_level);
    uas_log_set_rate_limit(cfg->log_rate_burst, cfg->log_rate_interval_ms);
    pthread_mutex_init(&s->ns_lock, NULL);
    atomic_init(&s->next_channel_id, 1);
    s->start_time = uas_datetime_now();
    char host[256] = "localhost";
    if (cfg->hostname)
        snprintf(host, sizeof(host), "%s", cfg->hostname);
    else
        gethostname(host, sizeof(host) - 1);
    s->hostname = dup_cstr(host);
    /* String fields of the copied config must outlive the caller's. */
    s->cfg.application_uri = dup_cstr(cfg->application_uri);
    s->cfg.product_uri = dup_cstr(cfg->product_uri ? cfg->product_uri : "");
    s->cfg.application_name = dup_cstr(cfg->application_name ? cfg->application_name : "");
    s->cfg.bind_address = dup_cstr(cfg->bind_address);
    s->cfg.hostname = NULL;
    uas_io_backend iob;
    io_backend_of(cfg, &iob);
    s->cfg.io_backend = NULL; /* read here only */
    s->cfg.nodeset_store = cfg->nodeset_store ? dup_cstr(cfg->nodeset_store) : NULL;
#ifdef UAS_SINGLE_LOOP
    s->nloops = 1;
#else
    s->nloops = cfg->threads ? cfg->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
#endif
    if (s->nloops == 0)
        s->nloops = 1;
    /* Past the descriptor limit accept() fails instead of refusing
     * cleanly: max_connections stays below it. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        s->cfg.max_connections =
            uas_server_connection_limit(cfg->max_connections, rl.rlim_cur, s->nloops);
        if (s->cfg.max_connections < cfg->max_connections)
            uas_log(UAS_LOG_WARN, "server",
                    "max_connections lowered from %u to %u: the descriptor limit "
                    "(RLIMIT_NOFILE, ulimit -n) is %llu",
                    cfg->max_connections, s->cfg.max_connections, (unsigned long long)rl.rlim_cur);
    }
    s->loops = uas_calloc(s->nloops, sizeof(uas_sloop));
    s->sessions = uas_sessions_new(cfg->max_sessions);
    s->conn_limits = uas_conn_limits_new(s->cfg.max_connections);
    uas_budget_set_limit(cfg->memory_budget);
    if (!s->hostname || !s->cfg.application_uri || !s->cfg.product_uri ||
        !s->cfg.application_name || !s->cfg.bind_address || !s->loops || !s->sessions ||
        !s->conn_limits || uas_server_add_namespace(s, "http://opcfoundation.org/UA/") != 0 ||
        uas_server_add_namespace(s, s->cfg.application_uri) != 1) {
        uas_server_delete(s);
        *status = UAS_BAD_OUT_OF_MEMORY;
        return NULL;
    }
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        l->server = s;
        l->index = i;
        l->listen_fd = -1;
        uas_arena_init(&l->arena, l->arena_first, sizeof(l->arena_first),
                       (size_t)s->cfg.max_message_size * 4);
        uas_status lst = UAS_BAD_OUT_OF_MEMORY;
        l->loop = uas_loop_new_io(i == 0 ? app_loop : NULL, 64u << 20, iob, &lst);
        l->watchers = uas_calloc(1, sizeof(loop_watchers));
        if (!l->loop || !l->watchers) {
            uas_server_delete(s);
            *status = l->loop ? UAS_BAD_OUT_OF_MEMORY : lst;
            return NULL;
        }
    }
#ifdef UAS_ENABLE_ENCRYPTION
    /* The worker pool takes the expensive work (RSA, argon2id, PKI); a
     * build without encryption has none, and no threads of its own. */
    unsigned workers =
        cfg->worker_threads ? cfg->worker_threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    st = uas_workpool_new(workers, cfg->worker_queue, &s->pool);
    for (unsigned i = 0; st == UAS_GOOD && i < s->nloops; i++)
        st = uas_work_inbox_new(uas_loop_ev(s->loops[i].loop), uas_dispatch_work_done,
                                &s->loops[i].inbox);
#else
    st = UAS_GOOD;
#endif
    if (st == UAS_GOOD)
        st = uas_server_security_init(s);
    if (st == UAS_GOOD)
        st = uas_authz_new(s, &s->authz);
    if (st != UAS_GOOD) {
        uas_server_delete(s);
        *status = st;
        return NULL;
    }
    s->as = uas_aspace_new(s);
    if (!s->as || uas_server_object_init(s) != UAS_GOOD ||
        uas_server_diag_limits_init(s) != UAS_GOOD || uas_subs_init(s) != UAS_GOOD ||
        uas_subs_methods_init(s) != UAS_GOOD || uas_authz_roleset_init(s) != UAS_GOOD) {
        uas_server_delete(s);
        *status = UAS_BAD_OUT_OF_MEMORY;
        return NULL;
    }
    /* Information models of the configuration: a server never starts
     * with half of them (the reason is logged). */
    if ((st = uas_nodeset_load_config(s, cfg->nodesets)) != UAS_GOOD) {
        uas_server_delete(s);
        *status = st;
        return NULL;
    }
    *status = UAS_GOOD;
    return s;
}

uas_server *uas_server_new(const uas_server_config *cfg, uas_status *status)
{
    return server_new(cfg, NULL, status);
}

uas_server *uas_server_new_libev(const uas_server_config *cfg, struct ev_loop *loop,
                                 uas_status *status)
{
    if (!loop) {
        *status = UAS_BAD_INVALID_ARGUMENT;
        return NULL;
    }
    uas_server *s = server_new(cfg, loop, status);
    /* Callbacks run on the application's thread, inside its ev_run. */
    if (s)
        uas__current_loop = &s->loops[0];
    return s;
}

/* The loop may be the application's, which outlives the server: none of
 * the server's watchers may stay on it. */
static void stop_watchers(uas_sloop *l)
{
    loop_watchers *w = l->watchers;
    if (!w || !l->loop)
        return;
    struct ev_loop *ev = uas_loop_ev(l->loop);
    ev_io_stop(ev, &w->listen);
    uas_loop_accept_stop(l->loop);
    ev_async_stop(ev, &w->stop);
    ev_timer_stop(ev, &w->housekeeping);
    ev_timer_stop(ev, &w->idle);
    ev_timer_stop(ev, &w->accept_retry);
    ev_async_stop(ev, &w->relieve);
    ev_timer_stop(ev, &w->trim);
    if (ev_is_active(&w->rcu_online)) {
        ev_ref(ev);
        ev_check_stop(ev, &w->rcu_online);
        ev_ref(ev);
        ev_prepare_stop(ev, &w->rcu_offline);
        if (l->server->as)
            uas_aspace_loop_offline(l->server->as, l->index);
    }
}

static void on_rcu_online(struct ev_loop *ev, ev_check *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    uas_aspace_loop_online(l->server->as, l->index);
}

static void on_rcu_offline(struct ev_loop *ev, ev_prepare *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    uas_aspace_loop_offline(l->server->as, l->index);
}

void uas_server_delete(uas_server *s)
{
    if (!s)
        return;
    uas_server_stop(s);
    /* Order: connections, then sessions (their subscriptions go through the
     * engines), then the engines, then the loops they are attached to. */
    for (unsigned i = 0; s->loops && i < s->nloops; i++)
        if (s->loops[i].subs)
            uas_dispatch_abort_all(&s->loops[i]);
    uas_budget_clear_pressure_hook(s);
    /* Every connection is gone, so no result has anyone to go to: the
     * workers finish what runs, and what waits or came back is freed. */
    uas_workpool_free(s->pool);
    s->pool = NULL;
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_work_inbox_free(s->loops[i].inbox);
        s->loops[i].inbox = NULL;
    }
    uas_sessions_delete(s->sessions);
    uas_conn_limits_delete(s->conn_limits);
    uas_subs_free(s);
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        stop_watchers(l);
        if (l->listen_fd >= 0)
            close(l->listen_fd);
        if (l->loop)
            uas_loop_delete(l->loop);
        if (l->watchers)
            uas_free(l->watchers, sizeof(loop_watchers));
        uas_arena_free(&l->arena);
    }
    if (s->loops)
        uas_free(s->loops, s->nloops * sizeof(uas_sloop));
    uas_nodeset_store_close(s); /* writes what is pending */
    uas_aspace_delete(s->as);
    uas_nodeset_registry_free(s);
    if (s->loops && uas__current_loop == &s->loops[0])
        uas__current_loop = NULL;
    uas_server_security_free(s);
    uas_authz_delete(s->authz);
    for (size_t i = 0; i < s->namespace_count; i++)
        free_cstr(s->namespaces[i]);
    if (s->namespaces)
        uas_free(s->namespaces, s->namespace_count * sizeof(char *));
    free_cstr(s->hostname);
    free_cstr(s->endpoint_url);
    free_cstr((char *)s->cfg.application_uri);
    free_cstr((char *)s->cfg.product_uri);
    free_cstr((char *)s->cfg.application_name);
    free_cstr((char *)s->cfg.bind_address);
    free_cstr((char *)s->cfg.nodeset_store);
    pthread_mutex_destroy(&s->ns_lock);
    uas_free(s, sizeof(*s));
}

/* ---- namespaces ---- */

uint16_t uas_server_add_namespace(uas_server *s, const char *uri)
{
    UAS_LOCK_PLAIN(&s->ns_lock);
    for (size_t i = 0; i < s->namespace_count; i++) {
        if (strcmp(s->namespaces[i], uri) == 0) {
            UAS_UNLOCK(&s->ns_lock);
            return (uint16_t)i;
        }
    }
    uint16_t idx = UINT16_MAX;
    char *copy = dup_cstr(uri);
    char **grown = copy && s->namespace_count < UINT16_MAX - 1
                       ? uas_realloc(s->namespaces, s->namespace_count * sizeof(char *),
                                     (s->namespace_count + 1) * sizeof(char *))
                       : NULL;
    if (grown) {
        s->namespaces = grown;
        s->namespaces[s->namespace_count] = copy;
        idx = (uint16_t)s->namespace_count++;
        uas_authz_namespace_added(s->authz, idx, uri);
    } else {
        free_cstr(copy);
    }
    UAS_UNLOCK(&s->ns_lock);
    return idx;
}

uas_status uas_server_namespace_array(uas_server *s, uas_arena *a, size_t *count, uas_string **out)
{
    UAS_LOCK_PLAIN(&s->ns_lock);
    size_t n = s->namespace_count;
    uas_string *arr = uas_arena_alloc(a, n * sizeof(uas_string));
    uas_status st = arr ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; arr && i < n; i++) {
        size_t len = strlen(s->namespaces[i]);
        arr[i].length = len;
        arr[i].data = uas_arena_alloc(a, len ? len : 1);
        if (!arr[i].data) {
            st = UAS_BAD_OUT_OF_MEMORY;
            break;
        }
        memcpy(arr[i].data, s->namespaces[i], len);
    }
    UAS_UNLOCK(&s->ns_lock);
    *count = n;
    *out = arr;
    return st;
}

/* ---- descriptions ---- */

void uas_server_app_description(uas_server *s, uas_application_description *d)
{
    memset(d, 0, sizeof(*d));
    d->application_uri = uas_string_from(s->cfg.application_uri);
    d->product_uri = uas_string_from(s->cfg.product_uri);
    d->application_name.locale = uas_string_from("en");
    d->application_name.text = uas_string_from(s->cfg.application_name);
    d->application_type = UAS_APPLICATION_TYPE_SERVER;
    if (s->endpoint_url) {
        /* Points into the server, which outlives every response. Callers
         * that change the URL copy the array first. */
        d->discovery_urls_count = 1;
        d->discovery_urls = &s->discovery_url;
    } else {
        d->discovery_urls = UAS_EMPTY_ARRAY;
    }
}

/* SecurityLevel (Part 4, 7.14): None 0; among the RSA policies the
 * stronger ones higher, and every SignAndEncrypt endpoint above every Sign
 * one. */
static uint8_t security_level(const uas_channel_offer *o)
{
    static const char *const order[] = {"Basic256", "Basic256Sha256", "Aes128_Sha256_RsaOaep",
                                        "Aes256_Sha256_RsaPss"};
    if (!uas_security_policy_signature_uri(o->policy))
        return 0;
    const char *name = uas_server_policy_name(o->policy);
    uint8_t strength = 1;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (!strcmp(name, order[i]))
            strength = (uint8_t)(i + 1);
    return (uint8_t)((o->mode == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT ? 100 : 0) +
                     10 * strength);
}

static uas_string arena_printf_id(uas_arena *a, const char *prefix, const char *name)
{
    uas_string r = {0, NULL};
    size_t n = strlen(prefix) + strlen(name);
    char *p = uas_arena_alloc(a, n + 1);
    if (p) {
        snprintf(p, n + 1, "%s%s", prefix, name);
        r.data = (uint8_t *)p;
        r.length = n;
    }
    return r;
}

uas_status uas_server_endpoints(uas_server *s, uas_arena *a, size_t *count,
                                uas_endpoint_description **out)
{
    size_t n = s->offer_count;
    uas_endpoint_description *e = uas_arena_calloc(a, n, sizeof(*e));
    uas_string *urls = uas_arena_alloc(a, sizeof(uas_string));
    if (!e || !urls)
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        const uas_channel_offer *o = &s->offers[i];
        /* Each endpoint with the certificate of its policy's type. */
        size_t cert_len = 0;
        const uint8_t *cert = uas_secpol_cred_cert(uas_server_cred_for(s, o->policy), &cert_len);
        uas_endpoint_description *d = &e[i];
        uas_server_app_description(s, &d->server);
        if (d->server.discovery_urls_count) {
            urls[0] = d->server.discovery_urls[0];
            d->server.discovery_urls = urls;
        }
        d->endpoint_url = uas_string_from(s->endpoint_url ? s->endpoint_url : "");
        d->security_mode = o->mode;
        d->security_policy_uri = uas_string_from(uas_security_policy_uri(o->policy));
        d->transport_profile_uri =
            uas_string_from("http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary");
        d->security_level = security_level(o);
        /* The certificate also on None endpoints: clients encrypt user
         * passwords with it. */
        if (cert) {
            d->server_certificate.data = (uint8_t *)cert;
            d->server_certificate.length = cert_len;
        }
        /* anonymous, user name, X.509 of the endpoint's policy and, on an
         * RSA or None endpoint, X.509 of each ECC curve (6 at most). */
        uas_user_token_policy *p = uas_arena_calloc(a, 3 + 6, sizeof(*p));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        size_t k = 0;
        if (uas_server_anonymous_allowed(s, o->policy, o->mode)) {
            p[k].policy_id = uas_string_from("anonymous");
            p[k].token_type = UAS_USER_TOKEN_TYPE_ANONYMOUS;
            k++;
        }
        const uas_secpol *up = uas_server_user_token_policy(s, o->policy);
#ifdef UAS_ENABLE_ENCRYPTION /* else no users file: up is NULL (no certificate) */
        if (up && s->users && uas_user_store_present(s->users)) {
            p[k].policy_id = arena_printf_id(a, "username_", uas_server_policy_name(up));
            p[k].token_type = UAS_USER_TOKEN_TYPE_USER_NAME;
            p[k].security_policy_uri = uas_string_from(uas_security_policy_uri(up));
            if (!p[k].policy_id.data)
                return UAS_BAD_OUT_OF_MEMORY;
            k++;
        }
#endif
        /* X.509 user tokens: the user's key is of the token policy's kind
         * (an ECC endpoint's curve, RSA on an RSA endpoint). */
        if (up && s->user_pki) {
            p[k].policy_id = arena_printf_id(a, "x509_", uas_server_policy_name(up));
            p[k].token_type = UAS_USER_TOKEN_TYPE_CERTIFICATE;
            p[k].security_policy_uri = uas_string_from(uas_security_policy_uri(up));
            if (!p[k].policy_id.data)
                return UAS_BAD_OUT_OF_MEMORY;
            k++;
        }
        /* On an RSA or None endpoint also one X.509 token policy per ECC
         * curve offered: Part 4 7.40.5 wants a distinct UserTokenPolicy per
         * certificate key algorithm, and Part 6 6.8.2 keeps only RSA token
         * policies off ECC endpoints. Such a user token's signature covers
         * serverCertificate + serverNonce (the channel is not an enhanced
         * ECC one). */
        const char *curves[6];
        size_t ncurves = 0;
        for (size_t j = 0; up && s->user_pki && !up->ecc && j < n && ncurves < 6; j++) {
            const uas_secpol *ep = s->offers[j].policy;
            const char *type = ep->ecc ? uas_secpol_cert_type(ep) : NULL;
            bool seen = !type;
            for (size_t m = 0; !seen && m < ncurves; m++)
                seen = strcmp(curves[m], type) == 0;
            if (seen)
                continue;
            curves[ncurves++] = type;
            p[k].policy_id = arena_printf_id(a, "x509_", uas_server_policy_name(ep));
            p[k].token_type = UAS_USER_TOKEN_TYPE_CERTIFICATE;
            p[k].security_policy_uri = uas_string_from(uas_security_policy_uri(ep));
            if (!p[k].policy_id.data)
                return UAS_BAD_OUT_OF_MEMORY;
            k++;
        }
        d->user_identity_tokens_count = k;
        d->user_identity_tokens = k ? p : UAS_EMPTY_ARRAY;
    }
    *count = n;
    *out = e;
    return UAS_GOOD;
}

/* ---- loops ---- */

/* Out of descriptors or memory: the pending connection stays readable,
 * so retrying now would spin. Pause the listener; the backlog keeps the
 * clients until descriptors are free again. */
static void accept_pause(uas_sloop *l, int err)
{
    loop_watchers *lw = l->watchers;
    struct ev_loop *ev = uas_loop_ev(l->loop);
    atomic_fetch_add(&l->server->counters.accept_failures, 1);
    UAS_LOG_LIMITED(UAS_LOG_WARN, "server", "accept: %s; pausing accepts for %.0f ms",
                    strerror(err), lw->accept_backoff * 1000.0);
    ev_io_stop(ev, &lw->listen);
    uas_loop_accept_stop(l->loop);
    ev_timer_set(&lw->accept_retry, lw->accept_backoff, 0.0);
    ev_timer_start(ev, &lw->accept_retry);
    lw->accept_backoff *= 2;
    if (lw->accept_backoff > ACCEPT_BACKOFF_MAX)
        lw->accept_backoff = ACCEPT_BACKOFF_MAX;
}

static bool accept_transient(int err)
{
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED ||
           err == EPROTO;
}

static void on_accept(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    loop_watchers *lw = l->watchers;
    for (int i = 0; i < 64; i++) { /* bounded: other watchers get their turn */
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd =
            accept4(l->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            lw->accept_backoff = ACCEPT_BACKOFF_MIN;
            uas_dispatch_accept(l, fd, plen > 0 ? &peer : NULL);
            continue;
        }
        if (!accept_transient(errno))
            accept_pause(l, errno);
        return;
    }
}

/* The io_uring loop's multishot accept (uas_loop_accept_start). */
static void on_ring_accept(void *ud, int fd, int err, const struct sockaddr *peer)
{
    uas_sloop *l = ud;
    if (fd >= 0) {
        ((loop_watchers *)l->watchers)->accept_backoff = ACCEPT_BACKOFF_MIN;
        uas_dispatch_accept(l, fd, peer);
    } else if (!accept_transient(err)) {
        accept_pause(l, err);
    }
}

/* Accepting through the ring on an io_uring loop, else the ev_io. */
static void accept_resume(uas_sloop *l)
{
    loop_watchers *lw = l->watchers;
    if (uas_loop_accept_start(l->loop, l->listen_fd, on_ring_accept, l) != UAS_GOOD)
        ev_io_start(uas_loop_ev(l->loop), &lw->listen);
}

static void on_accept_retry(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    accept_resume(w->data);
}

static void on_idle_sweep(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    uas_dispatch_close_idle(l, uas_loop_now_ms(l->loop));
}

static void on_relieve(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_dispatch_relieve(w->data);
}

/* The budget refused a reservation (any thread): every loop looks for its
 * largest consumer, and the largest of all is dropped. */
static void budget_pressure(void *ud)
{
    uas_server *s = ud;
    atomic_store(&s->relieve_pending, s->nloops);
    for (unsigned i = 0; i < s->nloops; i++) {
        loop_watchers *w = s->loops[i].watchers;
        ev_async_send(uas_loop_ev(s->loops[i].loop), &w->relieve);
    }
}

/* Memory of a burst that is over goes back: the loop's buffer pool keeps
 * what its recent peak needed (memory_trim & 1); loop 0 then asks the C
 * library to return freed pages when much was freed (memory_trim & 2). */
static void on_trim(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    if (l->server->cfg.memory_trim & 1)
        uas_bufpool_trim(uas_loop_pool(l->loop));
    if ((l->server->cfg.memory_trim & 2) && l->index == 0 && uas_budget_trim(4u << 20)) {
        uas_budget_stats bs;
        uas_budget_get_stats(&bs);
        UAS_LOG_LIMITED(UAS_LOG_INFO, "server",
                        "memory of a burst returned: memory budget %zu of %zu bytes in use "
                        "(peak %zu, %llu refusals, %llu connections dropped), RSS %zu bytes",
                        bs.used, bs.limit, bs.peak, (unsigned long long)bs.refusals,
                        (unsigned long long)bs.drops, uas_process_rss());
    }
}

static void on_stop(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)revents;
    /* The application's loop is the application's to stop. */
    uas_sloop *l = w->data;
    if (!uas_loop_is_foreign(l->loop))
        ev_break(ev, EVBREAK_ALL);
}

static void on_housekeeping(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop *l = w->data;
    uas_sessions_expire(l->server->sessions, l->server, uas_monotonic_ms());
}

/* probe: only find out whether another socket listens on the address.
 * SO_REUSEPORT would let a second uaserver of the same user join this
 * one's port silently, and clients would then alternate between the two;
 * a plain bind (SO_REUSEADDR only, which ignores TIME_WAIT but not a
 * listener) fails then, before this server shares the port among its own
 * loops. */
static int open_listener(uas_server *s, uint16_t port, bool probe, uas_status *st)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    struct sockaddr *sa;
    socklen_t len;
    int family;
    memset(&a6, 0, sizeof(a6));
    memset(&a4, 0, sizeof(a4));
    if (inet_pton(AF_INET, s->cfg.bind_address, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons(port);
        sa = (struct sockaddr *)&a4;
        len = sizeof(a4);
        family = AF_INET;
    } else if (inet_pton(AF_INET6, s->cfg.bind_address, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(port);
        sa = (struct sockaddr *)&a6;
        len = sizeof(a6);
        family = AF_INET6;
    } else {
        uas_log(UAS_LOG_ERROR, "server", "bind address '%s' is not an IP address",
                s->cfg.bind_address);
        *st = UAS_BAD_INVALID_ARGUMENT;
        return -1;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *st = UAS_BAD_RESOURCE_UNAVAILABLE;
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (probe) {
        int rc = bind(fd, sa, len);
        int err = errno;
        close(fd);
        if (rc == 0)
            return 0;
        uas_log(UAS_LOG_ERROR, "server", "cannot listen on %s:%u: %s%s", s->cfg.bind_address, port,
                strerror(err),
                err == EADDRINUSE ? " (another server, or another uaserver, holds the port)" : "");
        *st = UAS_BAD_RESOURCE_UNAVAILABLE;
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, sa, len) != 0 || listen(fd, 1024) != 0) {
        uas_log(UAS_LOG_ERROR, "server", "cannot listen on %s:%u: %s", s->cfg.bind_address, port,
                strerror(errno));
        close(fd);
        *st = UAS_BAD_RESOURCE_UNAVAILABLE;
        return -1;
    }
    return fd;
}

uas_status uas_server_listen(uas_server *s)
{
    uas_status st = UAS_GOOD;
    uint16_t port = s->cfg.port;
    /* After the program's own nodes, which stored nodes may reference. */
    if ((st = uas_nodeset_store_open(s)) != UAS_GOOD)
        return st;
    if (port != 0 && open_listener(s, port, true, &st) < 0)
        return st;
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        l->listen_fd = open_listener(s, port, false, &st);
        if (l->listen_fd < 0)
            return st;
        if (i == 0) {
            /* Port 0: the others join the port the kernel picked. */
            struct sockaddr_storage ss;
            socklen_t sl = sizeof(ss);
            getsockname(l->listen_fd, (struct sockaddr *)&ss, &sl);
            port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
        }
        loop_watchers *w = l->watchers;
        struct ev_loop *ev = uas_loop_ev(l->loop);
        ev_io_init(&w->listen, on_accept, l->listen_fd, EV_READ);
        w->listen.data = l;
        accept_resume(l);
        ev_async_init(&w->stop, on_stop);
        w->stop.data = l;
        ev_async_start(ev, &w->stop);
        w->accept_backoff = ACCEPT_BACKOFF_MIN;
        ev_timer_init(&w->accept_retry, on_accept_retry, 0.0, 0.0);
        w->accept_retry.data = l;
        ev_async_init(&w->relieve, on_relieve);
        w->relieve.data = l;
        ev_async_start(ev, &w->relieve);
        /* First after the wake-up, last before the sleep: every other
         * callback of an iteration runs between the two. Neither keeps the
         * loop running. */
        ev_check_init(&w->rcu_online, on_rcu_online);
        ev_set_priority(&w->rcu_online, EV_MAXPRI);
        w->rcu_online.data = l;
        ev_check_start(ev, &w->rcu_online);
        ev_unref(ev);
        ev_prepare_init(&w->rcu_offline, on_rcu_offline);
        ev_set_priority(&w->rcu_offline, EV_MINPRI);
        w->rcu_offline.data = l;
        ev_prepare_start(ev, &w->rcu_offline);
        ev_unref(ev);
        if (s->cfg.memory_trim) {
            ev_timer_init(&w->trim, on_trim, 2.0, 2.0);
            w->trim.data = l;
            ev_timer_start(ev, &w->trim);
        }
        if (s->cfg.channel_idle_timeout_ms) {
            /* A quarter of the timeout, within 50 ms .. 1 s: a channel
             * closes at most that late. */
            double every = s->cfg.channel_idle_timeout_ms / 4000.0;
            every = every < 0.05 ? 0.05 : every > 1.0 ? 1.0 : every;
            ev_timer_init(&w->idle, on_idle_sweep, every, every);
            w->idle.data = l;
            ev_timer_start(ev, &w->idle);
        }
        if (i == 0) {
            ev_timer_init(&w->housekeeping, on_housekeeping, 1.0, 1.0);
            w->housekeeping.data = l;
            ev_timer_start(ev, &w->housekeeping);
        }
    }
    s->port = port;
    uas_budget_set_pressure_hook(budget_pressure, s);
    char url[512];
    snprintf(url, sizeof(url), "opc.tcp://%s:%u", s->hostname, port);
    free_cstr(s->endpoint_url);
    s->endpoint_url = dup_cstr(url);
    s->discovery_url = uas_string_from(s->endpoint_url);
    uas_log(UAS_LOG_INFO, "server", "listening on %s:%u (%u loop%s, %s), endpoint %s",
            s->cfg.bind_address, port, s->nloops, s->nloops == 1 ? "" : "s",
            uas_io_backend_name(uas_loop_io_backend(s->loops[0].loop)), url);
    return s->endpoint_url ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
}

const char *uas_server_endpoint_url(const uas_server *s)
{
    return s->endpoint_url ? s->endpoint_url : "";
}

uint16_t uas_server_port(const uas_server *s)
{
    return s->port;
}

static void *loop_thread(void *arg)
{
    uas_sloop *l = arg;
    uas__current_loop = l;
    uas_loop_run(l->loop);
    return NULL;
}

uas_status uas_server_start(uas_server *s)
{
    /* One loop without locks (UAS_SINGLE_LOOP): it may run on a thread of
     * its own, but then only its callbacks may call the server's API. */
    if (s->loops[0].listen_fd < 0) {
        uas_status st = uas_server_listen(s);
        if (st != UAS_GOOD)
            return st;
    }
    atomic_store(&s->stopping, false);
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        if (pthread_create(&l->thread, NULL, loop_thread, l) != 0)
            return UAS_BAD_RESOURCE_UNAVAILABLE;
        l->thread_started = true;
    }
    return UAS_GOOD;
}

uas_status uas_server_run(uas_server *s)
{
    if (s->loops[0].listen_fd < 0) {
        uas_status st = uas_server_listen(s);
        if (st != UAS_GOOD)
            return st;
    }
    atomic_store(&s->stopping, false);
    for (unsigned i = 1; i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        if (pthread_create(&l->thread, NULL, loop_thread, l) != 0)
            return UAS_BAD_RESOURCE_UNAVAILABLE;
        l->thread_started = true;
    }
    uas__current_loop = &s->loops[0];
    uas_loop_run(s->loops[0].loop);
    uas__current_loop = NULL;
    uas_server_stop(s);
    return UAS_GOOD;
}

void uas_server_run_once(uas_server *s)
{
    uas__current_loop = &s->loops[0];
    uas_loop_run_once(s->loops[0].loop, false);
    uas__current_loop = NULL;
}

/* ---- driven by the application's poll()/epoll loop ---- */

static uas_status pollable(uas_server *s)
{
    if (s->nloops != 1 || uas_loop_is_foreign(s->loops[0].loop) || s->loops[0].thread_started)
        return UAS_BAD_INVALID_STATE;
    /* The application's thread is the loop's from now on: API calls made
     * between two uas_server_process calls act at once, as from a callback. */
    uas__current_loop = &s->loops[0];
    return UAS_GOOD;
}

uas_status uas_server_process(uas_server *s)
{
    uas_status st = pollable(s);
    if (st == UAS_GOOD)
        uas_loop_run_once(s->loops[0].loop, false);
    return st;
}

static void earliest(double *min, double t)
{
    if (t >= 0 && (*min < 0 || t < *min))
        *min = t;
}

uas_status uas_server_get_pollfds(uas_server *s, struct pollfd *fds, size_t cap, size_t *count,
                                  int *timeout_ms)
{
    uas_status st = pollable(s);
    if (st != UAS_GOOD)
        return st;
    uas_sloop *l = &s->loops[0];
    loop_watchers *w = l->watchers;
    size_t n = 0;
    if (l->listen_fd >= 0 && ev_is_active(&w->listen)) {
        if (n < cap)
            fds[n] = (struct pollfd){.fd = l->listen_fd, .events = POLLIN};
        n++;
    }
    /* io_uring: the ring's descriptor stands for the listener and every
     * connection's socket. */
    int ring_fd = uas_loop_poll_fd(l->loop);
    if (ring_fd >= 0) {
        if (n < cap)
            fds[n] = (struct pollfd){.fd = ring_fd, .events = POLLIN};
        n++;
    }
    n += uas_dispatch_pollfds(l, n < cap ? fds + n : NULL, n < cap ? cap - n : 0);
    *count = n;
    if (n > cap)
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    /* Every timer of the loop: the server's own, the subscription engine's
     * and each connection's. */
    uas_loop_now_update(l->loop);
    double next = -1;
    earliest(&next, uas_loop_timer_remaining(l->loop, &w->housekeeping));
    earliest(&next, uas_loop_timer_remaining(l->loop, &w->idle));
    earliest(&next, uas_loop_timer_remaining(l->loop, &w->accept_retry));
    earliest(&next, uas_subs_timer_remaining(l));
    earliest(&next, uas_dispatch_timer_remaining(l));
    *timeout_ms = next < 0 ? -1 : next > 3600.0 ? 3600000 : (int)ceil(next * 1000.0);
    return UAS_GOOD;
}

void uas_server_request_stop(uas_server *s)
{
    atomic_store(&s->stopping, true);
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        loop_watchers *w = l->watchers;
        if (l->loop && w && ev_is_active(&w->stop))
            ev_async_send(uas_loop_ev(l->loop), &w->stop);
    }
}

void uas_server_stop(uas_server *s)
{
    uas_server_request_stop(s);
    bool all_stopped = true;
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        if (l->thread_started && !pthread_equal(l->thread, pthread_self())) {
            pthread_join(l->thread, NULL);
            l->thread_started = false;
        }
        all_stopped = all_stopped && !l->thread_started;
    }
    /* With every loop stopped nothing else touches the connections: close
     * them so clients learn at once rather than at their timeouts. */
    for (unsigned i = 0; all_stopped && s->loops && i < s->nloops; i++)
        uas_dispatch_abort_all(&s->loops[i]);
}
