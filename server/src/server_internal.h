/* Internal structure of the server, shared by its modules: the event loops,
 * connections, sessions, the service dispatcher and the address space. */
#ifndef UAS_SERVER_INTERNAL_H
#define UAS_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <ua/log.h>
#include <ua/net.h>
#include <ua/pki.h>
#include <ua/server.h>

typedef struct uas_aspace uas_aspace; /* aspace.h */
typedef struct uas_session uas_session;
typedef struct uas_sloop uas_sloop;
typedef struct uas_sloop_subs uas_sloop_subs; /* svc_subscription.c */

/* Everything a service handler may use for one request. Memory for the
 * response comes from arena and lives until the response is encoded. */
typedef struct uas_request_ctx {
    uas_server *server;
    uas_sloop *loop;
    uas_conn *conn;          /* NULL when driven without a transport (tests) */
    struct uas_sconn *sconn; /* the connection's session cache, or NULL */
    uint32_t channel_id;     /* the secure channel the request came on */
    uas_session *session;    /* NULL for services without a session */
    uas_arena *arena;
    uint32_t request_id;
    int64_t now_ms;   /* monotonic */
    uas_datetime now; /* UTC */
    bool no_response; /* the service answers later by itself (Publish) */
    /* Parking (uas_request_park): the request message as received, and,
     * when the handler runs again after its parked work ran, that work. */
    const uint8_t *body;
    size_t body_len;
    void *work_done;
} uas_request_ctx;

/* Parks the request while job runs on a worker thread (run(job) there;
 * it may touch only the job's own data and thread-safe stores), holding
 * the channel so that nothing after it on the channel is processed first.
 * When it ran, the request is decoded again and its handler called again
 * on the loop with ctx->work_done = job; free(job) follows. Returns Good
 * (parked: the handler returns without a response), BadNotSupported (no
 * pool or no connection: the caller runs job inline) or
 * BadResourceUnavailable (the queue is full: the caller refuses the
 * request and logs). On anything but Good the caller keeps job. */
uas_status uas_request_park(uas_request_ctx *ctx, void *job, void (*run)(void *job),
                            void (*free)(void *job));

/* A service fills resp (zeroed, of the response type); a Bad
 * response_header.service_result turns the answer into a ServiceFault. */
typedef void (*uas_service_fn)(uas_request_ctx *ctx, const void *req, void *resp);

typedef struct uas_service {
    const uas_type *request;
    const uas_type *response;
    uas_service_fn fn;
    uint8_t session; /* SVC_NO_SESSION, SVC_SESSION_CREATED, SVC_SESSION_ACTIVE */
} uas_service;

enum { SVC_NO_SESSION = 0, SVC_SESSION_CREATED = 1, SVC_SESSION_ACTIVE = 2 };

/* The service (by request encoding id), or NULL. */
const uas_service *uas_service_find(uint32_t encoding_id);

/* ---- sessions (session.c) ---- */

struct uas_session {
    atomic_int refs;
    atomic_bool closed;
    pthread_mutex_t lock; /* held while a request of this session runs */
    uas_nodeid session_id;
    uas_nodeid auth_token; /* GUID, namespace 0 */
    uas_string name;
    uint32_t channel_id;   /* the channel it is bound to */
    atomic_bool activated; /* read by the timeout scan of another loop */
    int64_t timeout_ms;
    /* Abuse bounds (session.c): when it was created (monotonic), and the
     * unactivated-session quotas it holds until activated or gone. */
    int64_t created_ms;
    uint32_t quota_channel;
    uint64_t quota_address; /* keyed hash of the client address; 0: none */
    atomic_bool quota_held;
    atomic_llong last_activity_ms;
    uint8_t server_nonce[32];
    uint32_t max_response_size;
    uas_datetime created_at;
    /* Security (svc_session.c): the client certificate of CreateSession
     * (heap copy, NULL on a None channel), whom the session was activated
     * for (user name or certificate thumbprint, for logs). */
    uas_bytestring client_cert;
    /* CreateSession's clientNonce: the ECC policies with channel-bound
     * signatures sign it again in ActivateSession. */
    uint8_t client_nonce[64];
    uint8_t client_nonce_len;
    /* ECC policies: the receiver key of the next EccEncryptedSecret, handed
     * out as ECDHKey in CreateSession/ActivateSession's AdditionalHeader;
     * used once (secpol_ecc_secret.h). NULL when none is out. */
    struct uas_ecc_rkey *user_eph;
    char user[72];
    uint32_t roles; /* authz.h: the roles of the activated identity */
    /* Per-session state of the View services (continuation points); owned
     * and released by the address space module. */
    void *view_state;
    /* Subscriptions (svc_subscription.c): the engine session, created on
     * the loop that first served a subscription request, and what
     * CloseSession asked for them. */
    struct uas_sub_session *sub;
    uas_sloop *sub_loop;
    bool delete_subscriptions;
};

typedef struct uas_session_table uas_session_table;

uas_session_table *uas_sessions_new(uint32_t max_sessions);
void uas_sessions_delete(uas_session_table *t);
/* New, not yet activated session with fresh id, token and nonce (one
 * reference for the table, one for the caller), for a CreateSession of
 * ctx (its channel, client address and time). BadTooManySessions, logged,
 * past max_sessions or an unactivated-session quota of the channel or of
 * the client address. */
uas_status uas_sessions_create(uas_session_table *t, uas_server *s, const uas_request_ctx *ctx,
                               int64_t timeout_ms, uas_session **out);
/* The session was activated: the quotas of unactivated sessions it held
 * are free again (dispatch.c calls it after ActivateSession). */
void uas_sessions_activated(uas_session_table *t, uas_session *se);
/* Unactivated sessions counted against a channel and against a client
 * address (numeric; an IPv6 address counts for its /64); for tests and
 * diagnostics. */
uint32_t uas_sessions_unactivated_on_channel(uas_session_table *t, uint32_t channel_id);
uint32_t uas_sessions_unactivated_from(uas_session_table *t, const char *address);
/* The session with this authentication token, with a reference, or NULL. */
uas_session *uas_sessions_find(uas_session_table *t, const uas_nodeid *token);
/* Remove from the table and mark closed (CloseSession, timeout). */
void uas_sessions_remove(uas_session_table *t, uas_session *se);
/* Close sessions idle past their timeout. */
void uas_sessions_expire(uas_session_table *t, uas_server *s, int64_t now_ms);
uint32_t uas_sessions_count(uas_session_table *t);
/* Authentication tokens are GUIDs in namespace 0; equal ones name one session. */
bool uas_session_token_eq(const uas_nodeid *a, const uas_nodeid *b);
void uas_session_ref(uas_session *se);
void uas_session_unref(uas_server *s, uas_session *se);

/* ---- connections per client address (conn_limit.c) ---- */

typedef struct uas_conn_limits uas_conn_limits;
/* Sized for max_connections connections (the map never holds more keys). */
uas_conn_limits *uas_conn_limits_new(uint32_t max_connections);
void uas_conn_limits_delete(uas_conn_limits *l);
/* Counts one more connection of this address group (uas_address_group)
 * unless it has max already (0: no cap); *count gets how many it had. The
 * key to release, or 0 when refused. */
uint64_t uas_conn_limits_acquire(uas_conn_limits *l, const char *group, uint32_t max,
                                 uint32_t *count);
void uas_conn_limits_release(uas_conn_limits *l, uint64_t key);
/* Open connections of a numeric address's group (tests, diagnostics). */
uint32_t uas_conn_limits_count(uas_conn_limits *l, const char *address);

/* ---- the server ---- */

/* Per event loop state: one thread, one libev loop, one listening socket,
 * one request arena. Nothing in it is touched by another thread. */
struct uas_sloop {
    uas_server *server;
    unsigned index;
    uas_loop *loop;
    pthread_t thread;
    bool thread_started;
    int listen_fd;
    uint8_t arena_first[16384];
    uas_arena arena;
    uint32_t connections;
    struct uas_sconn *conns; /* open connections (dispatch.c) */
    uas_sloop_subs *subs;    /* the subscription engine of this loop */
    void *watchers;          /* listener, stop and housekeeping watchers (server.c) */
    /* Memory pressure (dispatch.c): the most one of its connections held
     * at this loop's last look, for the other loops to compare with. */
    atomic_size_t largest_held;
    /* Completed worker jobs come back here (workpool.h). */
    struct uas_work_inbox *inbox;
};

/* Counters of ServerDiagnosticsSummary. */
typedef struct uas_server_counters {
    atomic_uint cumulated_sessions;
    atomic_uint rejected_sessions;
    atomic_uint session_timeouts;
    atomic_uint session_aborts;
    atomic_uint security_rejected_requests;
    atomic_uint rejected_requests;
    atomic_uint current_connections;
    atomic_uint accept_failures; /* accept() failed for lack of descriptors or memory */
    atomic_uint idle_channels_closed;
    atomic_uint refused_per_address; /* max_connections_per_address */
    atomic_uint budget_drops;        /* connections dropped for the memory budget */
} uas_server_counters;

struct uas_server {
    uas_server_config cfg;
    char *hostname;
    char *endpoint_url;       /* opc.tcp://hostname:port */
    uas_string discovery_url; /* the same, as ApplicationDescription's DiscoveryUrls */
    uint16_t port;
    unsigned nloops;
    uas_sloop *loops;
    uas_session_table *sessions;
    uas_conn_limits *conn_limits;
    atomic_uint relieve_pending; /* loops yet to look at a memory pressure event */
    uas_aspace *as;
    uas_server_counters counters;
    uas_datetime start_time;
    atomic_bool stopping;
    atomic_uint next_channel_id;
    /* Security (security.c): the offered (policy, mode) pairs, our
     * credentials and the stores; NULL / 0 with policy None only. */
    uas_channel_offer *offers;  /* the endpoints, then None if not among them */
    size_t offer_count;         /* endpoints */
    size_t channel_offer_count; /* what a channel may open: + None for discovery */
    size_t offers_cap;
    bool none_offered;     /* sessions allowed on None channels */
    bool *offer_anonymous; /* per entry of offers: anonymous sessions accepted */
    uas_secpol_cred *cred;
    /* One certificate per further type the endpoints need (ECC curves),
     * created in the PKI store on first start (security.c). */
    uas_secpol_cred *ecc_creds[6];
    size_t ecc_cred_count;
    uas_pki_store *pki;      /* application trust list */
    uas_pki_store *user_pki; /* <pki_dir>/user: trust list of X509 user tokens */
    uas_user_store *users;   /* NULL: no users file, user names refused */
    struct uas_authz *authz; /* roles and permissions (authz.h) */
    /* RSA, argon2id and PKI work off the loops (workpool.h). */
    struct uas_workpool *pool;
    /* Namespace array (index 0: OPC UA, 1: the application URI). */
    pthread_mutex_t ns_lock;
    char **namespaces;
    size_t namespace_count;
    struct ns_registry *nodesets;    /* models loaded from NodeSet2 files (nodeset_load.c) */
    struct uas_nodeset_store *store; /* the NodeManagement store (nodeset_store.c) */
};

/* ---- NodeSet2 files (nodeset_load.c) ---- */

/* The comma-separated list of the nodesets key, loaded at once. */
uas_status uas_nodeset_load_config(uas_server *s, const char *list);
void uas_nodeset_registry_free(uas_server *s);

/* ---- the NodeManagement store (nodeset_store.c) ---- */

typedef struct uas_nodeset_store uas_nodeset_store;
/* Load cfg.nodeset_store (when set and present) and start its writer.
 * Good, or the load's status (logged with file:line). */
uas_status uas_nodeset_store_open(uas_server *s);
/* A NodeManagement change: write the store soon (at most once per
 * nodeset_store_interval_ms). */
void uas_nodeset_store_touch(uas_server *s);
/* Write the store now (tests). BadInvalidState without a store. */
uas_status uas_nodeset_store_flush(uas_server *s);
/* Write what is pending, stop the writer (server delete). */
void uas_nodeset_store_close(uas_server *s);

/* ---- security (security.c) ---- */

/* Reads the security part of the configuration: parses the offered list,
 * opens the certificate store, creates or loads the application
 * certificate, opens the users file and the user trust list.
 * BadConfigurationError (logged with the reason), BadOutOfMemory, or the
 * PKI's status. */
uas_status uas_server_security_init(uas_server *s);
/* The security and anonymous_endpoints lists of cfg parsed as
 * uas_server_security_init would, with nothing made or kept; an error is
 * logged. Good or BadConfigurationError. */
uas_status uas_server_security_check(const uas_server_config *cfg);
void uas_server_security_free(uas_server *s);
/* validate_peer of the server channels: the client certificate against the
 * trust list (ud is the server). Logs the reason of a refusal. */
uas_status uas_server_validate_client(void *ud, const uint8_t *der, size_t len);
/* The credentials of the certificate type a policy needs (an ECC curve's,
 * else the RSA one); may be NULL. */
uas_secpol_cred *uas_server_cred_for(const uas_server *s, const uas_secpol *pol);
/* Whether the endpoint of this policy and mode accepts anonymous
 * sessions (allow_anonymous and anonymous_endpoints); false for an
 * endpoint not offered. */
bool uas_server_anonymous_allowed(const uas_server *s, const uas_secpol *p, int32_t mode);
/* The short name of a policy ("Basic256Sha256", "None"). */
const char *uas_server_policy_name(const uas_secpol *p);
/* The policy of the UserTokenPolicy whose policyId is id ("username_X"
 * or "x509_X" with prefix "username_" / "x509_"), when this server
 * advertises it; NULL otherwise. */
const uas_secpol *uas_server_token_policy(uas_server *s, const uas_string *id, const char *prefix);
/* The policy user tokens of an endpoint of policy p are secured with
 * (p itself, Basic256Sha256 for None); NULL without credentials. */
const uas_secpol *uas_server_user_token_policy(uas_server *s, const uas_secpol *p);

/* max_connections as the descriptor limit allows: the configured value,
 * lowered so that the connections plus what the server itself needs
 * (per loop and in general) fit under nofile (RLIMIT_NOFILE); at least 1. */
uint32_t uas_server_connection_limit(uint32_t configured, uint64_t nofile, unsigned nloops);

/* Endpoint descriptions of this server, allocated from arena. */
uas_status uas_server_endpoints(uas_server *s, uas_arena *a, size_t *count,
                                uas_endpoint_description **out);
void uas_server_app_description(uas_server *s, uas_application_description *d);
/* Namespace array snapshot allocated from arena. */
uas_status uas_server_namespace_array(uas_server *s, uas_arena *a, size_t *count, uas_string **out);

/* A SystemEventType event from the server itself (events.c). */
void uas_server_system_event(uas_server *s, uint16_t severity, const char *message);

/* Live variables of the Server object (server_object.c). */
uas_status uas_server_object_init(uas_server *s);
/* Server/uastack: usage of the server-wide limits (diag_limits.c). */
uas_status uas_server_diag_limits_init(uas_server *s);

#endif
