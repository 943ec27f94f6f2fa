/* libuaserver: an OPC UA server to embed in a program, or to run as
 * uaserver. Create it from a configuration, add namespaces and nodes (with
 * value callbacks, write callbacks and methods), then run it on the
 * caller's thread (uas_server_run, or uas_server_run_once from the
 * program's own loop) or on its own threads (uas_server_start), and stop it
 * with uas_server_stop from any thread. */
#ifndef UA_SERVER_H
#define UA_SERVER_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/codec.h>
#include <ua/log.h>
#include <ua/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_server uas_server;

typedef struct uas_server_config {
    /* Network. */
    const char *bind_address; /* "0.0.0.0" */
    uint16_t port;            /* 4840; 0 picks an ephemeral port */
    const char *hostname;     /* in advertised endpoint URLs; NULL: gethostname() */
    unsigned threads;         /* event loops; 0: one per core */
    /* The worker pool for RSA, argon2id and PKI work (docs/Architecture.md,
     * "Worker pool"): threads (0: one per core) and how many jobs may wait
     * for one (256); past that new handshakes and logins are refused. */
    unsigned worker_threads;
    uint32_t worker_queue;
    /* Identity. */
    const char *application_uri;  /* "urn:uastack:server" */
    const char *product_uri;      /* "urn:uastack" */
    const char *application_name; /* "uastack server" */
    /* Transport limits. */
    uint32_t buffer_size;      /* chunk size offered (65536) */
    uint32_t max_message_size; /* per request/response body (16 MiB) */
    uint32_t max_chunk_count;  /* per message (4096) */
    uint32_t max_connections;  /* 10000 */
    uint32_t hello_timeout_ms; /* 10000 */
    size_t max_output_bytes;   /* queued output per connection (4 MiB) */
    uint32_t min_token_lifetime_ms, max_token_lifetime_ms; /* 10 min, 1 h */
    /* Sessions. */
    uint32_t max_sessions;                   /* 10000 */
    uint32_t min_session_timeout_ms;         /* 10 s */
    uint32_t max_session_timeout_ms;         /* 1 h */
    uint32_t max_browse_continuation_points; /* per session (10) */
    /* Operation limits (advertised in ServerCapabilities/OperationLimits). */
    uint32_t max_nodes_per_read;            /* 10000 */
    uint32_t max_nodes_per_write;           /* 10000 */
    uint32_t max_nodes_per_browse;          /* 5000 */
    uint32_t max_references_per_node;       /* per Browse result before a continuation (1000) */
    uint32_t max_nodes_per_translate;       /* 1000 */
    uint32_t max_nodes_per_method_call;     /* 1000 */
    uint32_t max_nodes_per_register;        /* 5000 */
    uint32_t max_nodes_per_node_management; /* AddNodes ... DeleteReferences items (1000) */
    /* Event filters of event monitored items (docs/Security.md). */
    uint32_t max_filter_elements;     /* where clause elements (64) */
    uint32_t max_like_pattern_length; /* bytes of a Like pattern (1024) */
    uint32_t max_filter_steps;        /* work per event and item (100000) */
    uint32_t max_filter_scratch;      /* scratch bytes per event and item (65536) */
    /* Decoder limits for request bodies. */
    uas_limits decode_limits;
    uas_log_level log_level; /* INFO */
    /* Security (docs/Security.md). The offered endpoints: a comma-separated
     * list of Policy[:Mode] (policy short names as Basic256Sha256 or full
     * URIs; mode Sign or SignAndEncrypt, SignAndEncrypt when left out;
     * "None"). NULL or "None": policy None only, and no PKI is opened. The
     * uaserver program's default offers every RSA policy (UAS_SECURITY_ALL). */
    const char *security;
    bool allow_deprecated;         /* Basic256 may be listed; false */
    const char *pki_dir;           /* certificate store; "uastack-pki" */
    const char *users_file;        /* NULL: <pki_dir>/users */
    bool allow_anonymous;          /* AnonymousIdentityToken accepted; true */
    bool auto_accept;              /* LAB ONLY: untrusted client certificates accepted; false */
    const char *certificate;       /* DER/PEM file used instead of the store's own certificate */
    const char *private_key;       /* its private key (DER or PEM), with certificate */
    uint32_t key_bits;             /* own certificate created on first start; 2048 */
    const char *trust_certificate; /* a certificate added to trusted/certs on start */
    /* The endpoints that accept anonymous sessions when allow_anonymous:
     * entries of security in its Policy[:Mode] syntax. NULL: every
     * endpoint; "": none. An entry that is not offered is an error. */
    const char *anonymous_endpoints;
    /* Bounds against abandoned and abusive peers (docs/Security.md,
     * "Connections and sessions"); 0 turns one off. */
    uint32_t channel_idle_timeout_ms;       /* channel with no session, idle (30000) */
    uint32_t session_activation_timeout_ms; /* created, never activated (15000) */
    uint32_t max_unactivated_per_channel;   /* unactivated sessions of one channel (8) */
    uint32_t max_unactivated_per_address;   /* ... of one client address (128) */
    uint32_t log_rate_burst;                /* lines per call site and interval (10) */
    uint32_t log_rate_interval_ms;          /* (10000) */
    /* Authorization (docs/Security.md, "Roles and permissions"): role names
     * are the well-known roles (Anonymous, AuthenticatedUser, Observer,
     * Operator, Engineer, Supervisor, ConfigureAdmin, SecurityAdmin).
     * anonymous_roles: roles anonymous sessions get besides Anonymous
     * ("Observer"); NULL: none. x509_roles: newline-separated entries
     * "ROLE,ROLE thumbprint=HEX" or "ROLE,ROLE subject=NAME" for X.509
     * user identities. role_permissions: newline-separated entries
     * "NAMESPACE ROLE PERMISSION,PERMISSION" (namespace index, URI or "*"
     * for every namespace but 0) replacing the built-in default of a role
     * in a namespace; later entries win. */
    const char *anonymous_roles;
    const char *x509_roles;
    const char *role_permissions;
    /* Failed-login throttling of user name logins (docs/Security.md,
     * "Sessions and user tokens"); 0: the built-in default in brackets.
     * Per client (address, IPv6 /64, or client certificate): after
     * login_max_failures [5] within login_window_ms [60000], refused for
     * login_backoff_ms [60000], doubling up to login_max_backoff_ms
     * [900000]; server-wide: login_global_max_failures [100] failures
     * within the window refuse every login for login_backoff_ms. */
    uint32_t login_max_failures;
    uint32_t login_window_ms;
    uint32_t login_backoff_ms;
    uint32_t login_max_backoff_ms;
    uint32_t login_global_max_failures;
    /* Subscription limits (docs/Security.md, "Subscription limits"); 0:
     * the default in brackets. Server-wide counts hold across all event
     * loops. Queue slots: the queue sizes of monitored items, summed. */
    uint32_t max_subscriptions;                    /* server-wide [20000] */
    uint32_t max_subscriptions_per_session;        /* [50] */
    uint32_t max_monitored_items;                  /* server-wide [200000] */
    uint32_t max_monitored_items_per_session;      /* [50000] */
    uint32_t max_monitored_items_per_subscription; /* [50000] */
    uint32_t max_queued_notifications;             /* queue slots, server-wide [500000] */
    uint32_t max_queued_per_subscription;          /* queue slots of one subscription [100000] */
    uint32_t max_publishing_interval_ms;           /* [600000] */
    uint32_t max_subscription_lifetime_ms;         /* lifetime count x interval [3600000] */
    uint32_t max_orphaned_subscriptions;           /* without session, server-wide [1000] */
    uint32_t max_orphaned_per_user;                /* ... of one user identity [100] */
    uint32_t max_orphan_lifetime_ms;               /* [600000] */
    /* PKI limits (docs/Security.md, PKI); 0: the default in brackets. */
    uint32_t pki_max_signature_checks;       /* per validation [chain limit + 2 = 12] */
    uint32_t pki_max_ca_key_bits;            /* RSA key of a CA [4096] */
    uint32_t pki_max_rejected;               /* files in rejected/certs [100] */
    uint32_t pki_rejected_max_cert_size;     /* bytes of a recorded certificate [16384] */
    uint32_t pki_rejected_writes_per_minute; /* new rejected files [10] */
    /* Memory and per-address bounds (docs/Security.md, "Limits"). */
    size_t memory_budget;                 /* bytes for the whole process; 0: uas_budget_default() */
    uint32_t max_connections_per_address; /* IPv4 address or IPv6 /64 (256); 0: none */
    uint32_t memory_trim; /* return memory: 1 pools to recent peak, 2 malloc_trim (3) */
    /* Information models (docs/Configuration.md, [nodesets]): NodeSet2
     * files loaded by uas_server_new, comma-separated, any order (required
     * models first); NULL: none. Limits of one load: */
    const char *nodesets;
    size_t nodeset_max_file_size; /* bytes of one file (64 MiB) */
    uint32_t nodeset_max_nodes;   /* nodes of one load (1000000) */
    uint32_t nodeset_max_depth;   /* XML element nesting (64) */
    /* How the loops move socket bytes: "auto" (io_uring when built in and
     * allowed by the kernel, else epoll), "epoll" or "io_uring" (refused
     * at start when unavailable); NULL or "": the UAS_IO_BACKEND
     * environment variable, else "auto" (docs/Configuration.md). */
    const char *io_backend;
    /* The NodeManagement store: nodes added by AddNodes written to this
     * NodeSet2 file, loaded by uas_server_listen; NULL: none. At most one
     * write per nodeset_store_interval_ms (1000). */
    const char *nodeset_store;
    uint32_t nodeset_store_interval_ms;
} uas_server_config;

#define UAS_SECURITY_ALL                                                                           \
    "None,Basic256Sha256:SignAndEncrypt,Basic256Sha256:Sign,"                                      \
    "Aes128_Sha256_RsaOaep:SignAndEncrypt,Aes128_Sha256_RsaOaep:Sign,"                             \
    "Aes256_Sha256_RsaPss:SignAndEncrypt,Aes256_Sha256_RsaPss:Sign"

/* role_permissions of the benchmark contract (uaserver --contract): its
 * clients write the variables and call the methods of namespace 1
 * anonymously. Not for production: anonymous sessions of the default
 * configuration only browse and read. */
#define UAS_CONTRACT_PERMISSIONS "1 Anonymous Browse,Read,ReadHistory,ReceiveEvents,Write,Call"

void uas_server_config_default(uas_server_config *cfg);

/* NULL with *status on an invalid configuration or out of memory. */
uas_server *uas_server_new(const uas_server_config *cfg, uas_status *status);
void uas_server_delete(uas_server *s);

/* Bind and listen (every loop gets its own SO_REUSEPORT socket). */
uas_status uas_server_listen(uas_server *s);
/* The port actually bound (useful with port 0). */
uint16_t uas_server_port(const uas_server *s);
/* Whether uas_server_new would accept cfg's settings (limits, the security
 * and anonymous_endpoints lists), with nothing made: no certificate, no
 * socket. The reason is logged. Good, BadInvalidArgument or
 * BadConfigurationError. */
uas_status uas_server_config_check(const uas_server_config *cfg);
/* The endpoint URL advertised in GetEndpoints (opc.tcp://HOSTNAME:PORT),
 * once listening; "" before. */
const char *uas_server_endpoint_url(const uas_server *s);
/* Run every loop: loop 0 on the caller's thread, the others on threads of
 * their own. Returns after uas_server_stop. */
uas_status uas_server_run(uas_server *s);
/* Start all loops on threads of their own and return. */
uas_status uas_server_start(uas_server *s);
/* One non-blocking iteration of a single-loop server (threads = 1), for a
 * program that drives the server from its own loop. */
void uas_server_run_once(uas_server *s);

/* ---- driving the server from the application's event loop ----
 * (docs/Embedding.md, "Foreign event loop"; examples/poll_loop.c and
 * examples/libev_loop.c.) Both need threads = 1. */

/* A poll()/epoll/select loop, as with c-ares or libcurl's multi interface:
 * the server's sockets with the poll() events it waits for (the first cap
 * into fds, *count of them in all: at most cfg.max_connections + 1) and at
 * most *timeout_ms of waiting (-1: no deadline). Wait for them, then call
 * uas_server_process, whether a socket became ready or the time ran out;
 * ask again before every wait, as the set and the deadline change.
 * BadResourceUnavailable when cap is too small (*count says how many);
 * BadInvalidState for a server with more than one loop, on an
 * application's libev loop, or running on threads. From the first call on,
 * the calling thread is the server's loop thread. */
struct pollfd;
uas_status uas_server_get_pollfds(uas_server *s, struct pollfd *fds, size_t cap, size_t *count,
                                  int *timeout_ms);
/* Runs every callback that is ready or due, without blocking. */
uas_status uas_server_process(uas_server *s);

/* An application that runs libev itself: the server's watchers go on the
 * application's loop, which the application runs (ev_run) and which must
 * outlive the server; uas_server_run, uas_server_start and
 * uas_server_request_stop do not apply, uas_server_delete removes every
 * watcher of the server from the loop. cfg->threads must be 1. */
struct ev_loop;
uas_server *uas_server_new_libev(const uas_server_config *cfg, struct ev_loop *loop,
                                 uas_status *status);
/* Stops every loop (joining the started threads) and closes every
 * connection. Call it from any thread but a server callback; from a
 * callback, or a signal handler, use uas_server_request_stop. */
void uas_server_stop(uas_server *s);
/* Asks every loop to stop and returns at once; async-signal-safe, so a
 * SIGTERM handler may call it. */
void uas_server_request_stop(uas_server *s);
/* Reads the trust lists, CRLs and users file again now, even files
 * rewritten in place (uaserver calls it on SIGHUP). Any thread, but not
 * from a signal handler. */
void uas_server_reload_security(uas_server *s);

/* ---- address space ---- */

/* Index of a namespace URI, added if new. */
uint16_t uas_server_add_namespace(uas_server *s, const char *uri);

/* A data source: called on every Read (and sampling) of the variable. Fill
 * out->value (may reference memory from arena, which lives until the
 * response is sent) and timestamps (no source timestamp: the time of the
 * read); return a Bad status to fail the read. Callbacks run without any
 * address space lock held: they may read, write and even add nodes. */
typedef uas_status (*uas_read_fn)(void *ud, const uas_nodeid *node, uas_datavalue *out,
                                  uas_arena *arena);
/* Called on a client Write (after the DataType/ValueRank check) with the
 * complete new value (for an index range: the merged array) before it is
 * stored; a Bad status rejects the write with that status. */
typedef uas_status (*uas_write_fn)(void *ud, const uas_nodeid *node, const uas_datavalue *in);
/* A method: inputs already checked against InputArguments; outputs
 * allocated from arena. */
typedef uas_status (*uas_method_fn)(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                                    size_t in_count, const uas_variant *in, size_t *out_count,
                                    uas_variant **out, uas_arena *arena);

/* Adds nodes under parent with the reference type (a concrete
 * hierarchical one: HasComponent, Organizes, ...), both directions, plus
 * HasTypeDefinition (NULL or null type_definition: BaseObjectType i=58 for
 * objects, BaseDataVariableType i=63 for variables). Attribute structures
 * are the generated AddNodes types (attr may be NULL); their memory is
 * copied. A field is used when its bit is set in specified_attributes; with
 * specified_attributes 0 every non-zero field is used. Defaults:
 * DisplayName = BrowseName text, AccessLevel CurrentRead, DataType and
 * ValueRank from the value (none: BaseDataType, Any), Executable true.
 * BadNodeIdInvalid (null id, or a namespace not added), BadNodeIdExists,
 * BadParentNodeIdInvalid, BadReferenceTypeIdInvalid, BadBrowseNameInvalid
 * (empty), BadTypeDefinitionInvalid (not a concrete type of the node's
 * kind), BadTypeMismatch (variables: DataType is not a DataType, or the
 * value does not match DataType and ValueRank), BadInvalidArgument
 * (methods: an argument of an unknown DataType), BadOutOfMemory.
 * add_method adds InputArguments/OutputArguments properties when the
 * counts are non-zero; their ids are numeric in the method's namespace,
 * counting up from 0xF0000000 (skipping ids in use). */
uas_status uas_server_add_object(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                 const uas_nodeid *reference_type,
                                 const uas_qualifiedname *browse_name,
                                 const uas_nodeid *type_definition,
                                 const uas_object_attributes *attr);
uas_status uas_server_add_variable(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                   const uas_nodeid *reference_type,
                                   const uas_qualifiedname *browse_name,
                                   const uas_nodeid *type_definition,
                                   const uas_variable_attributes *attr);
uas_status uas_server_add_method(uas_server *s, const uas_nodeid *id, const uas_nodeid *parent,
                                 const uas_nodeid *reference_type,
                                 const uas_qualifiedname *browse_name,
                                 const uas_method_attributes *attr, size_t in_count,
                                 const uas_argument *in, size_t out_count, const uas_argument *out,
                                 uas_method_fn fn, void *ud);
/* A reference, in both directions when the target is in this server:
 * BadSourceNodeIdInvalid, BadReferenceTypeIdInvalid (not a concrete
 * ReferenceType), BadTargetNodeIdInvalid, BadDuplicateReferenceNotAllowed,
 * BadOutOfMemory. */
uas_status uas_server_add_reference(uas_server *s, const uas_nodeid *source,
                                    const uas_nodeid *reference_type,
                                    const uas_expandednodeid *target, bool forward);
/* Attach callbacks to a variable (also to namespace 0 variables); NULL
 * detaches. With a read callback and no write callback the variable is not
 * writable by clients. BadNodeIdUnknown, BadNodeClassInvalid. */
uas_status uas_server_set_data_source(uas_server *s, const uas_nodeid *id, uas_read_fn read,
                                      uas_write_fn write, void *ud);
/* Gives a node RolePermissions of its own (also a namespace 0 node),
 * replacing its namespace's default for it; list NULL returns it to the
 * default. Entries of roles that are not well-known are kept and shown
 * but grant nothing yet. BadNodeIdUnknown, BadOutOfMemory. */
uas_status uas_server_set_role_permissions(uas_server *s, const uas_nodeid *id,
                                           const uas_role_permission_type *list, size_t count);
/* An event to report. Memory is only read during the call. */
typedef struct uas_event {
    const uas_nodeid *event_type;  /* BaseEventType (i=2041) or a subtype */
    const uas_nodeid *source_node; /* NULL: the Server object */
    const char *source_name;       /* NULL: "Server" */
    const char *message;
    uint16_t severity; /* 1 (low) .. 1000 (high) */
    uas_datetime time; /* 0: now */
} uas_event;

/* Reports an event through the Server object to every event monitored
 * item whose filter selects it (thread-safe). BadInvalidArgument for a type
 * that is not an event type, BadOutOfRange for the severity. */
uas_status uas_server_report_event(uas_server *s, const uas_event *ev);

/* Lock contention: how many times, since the process started, a thread
 * found a lock of each kind taken and waited for it. */
typedef enum uas_lock_kind {
    UAS_LOCK_ADDRESS_SPACE = 0, /* the address space's read-write lock */
    UAS_LOCK_VALUE,             /* a variable's stored value */
    UAS_LOCK_SESSION,           /* a session, held while one of its requests runs */
    UAS_LOCK_SUBSCRIPTIONS,     /* an event loop's subscription engine */
    UAS_LOCK_KINDS
} uas_lock_kind;
typedef struct uas_lock_stats {
    uint64_t waits[UAS_LOCK_KINDS];
} uas_lock_stats;
void uas_server_lock_stats(uas_lock_stats *out);

/* Loads NodeSet2 files (Part 6, Annex F) into the address space: required
 * models are loaded first (from this call's files or an earlier load),
 * namespaces mapped onto the server's array, every node class with its
 * references, values in the XML encoding, DataTypeDefinitions from
 * <Definition>. All or nothing: on any error no node of any file is added
 * and the reason is logged as "file:line: reason". Limits from the
 * configuration (nodeset_max_*). Good, BadNotFound (a file), BadDecodingError
 * (XML), BadNodeIdInvalid, BadNodeIdExists, BadTargetNodeIdInvalid,
 * BadReferenceTypeIdInvalid, BadTypeMismatch, BadTypeDefinitionInvalid
 * (hierarchy), BadConfigurationError (models), BadEncodingLimitsExceeded,
 * BadOutOfMemory. */
uas_status uas_server_load_nodesets(uas_server *s, const char *const *paths, size_t count);
/* Binds the handler of a method node (e.g. declared in a NodeSet); NULL
 * unbinds. A Call of an unbound method answers BadNotImplemented.
 * BadNodeIdUnknown, BadNodeClassInvalid, BadOutOfMemory. */
uas_status uas_server_bind_method(uas_server *s, const uas_nodeid *id, uas_method_fn fn, void *ud);

/* Local value update (thread-safe, no AccessLevel check); the value is
 * copied. BadNodeIdUnknown, BadNodeClassInvalid, BadTypeMismatch. */
uas_status uas_server_write_value(uas_server *s, const uas_nodeid *id, const uas_variant *value);
/* Current value, deep-copied to the heap (uas_clear it). */
uas_status uas_server_read_value(uas_server *s, const uas_nodeid *id, uas_variant *out);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
