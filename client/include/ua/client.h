/* libuaclient: an asynchronous OPC UA client on a uas_loop (libev). One
 * uas_client is one connection with its secure channel and (optionally) one
 * session; a loop carries many clients, each with many requests in flight.
 * Every call returns at once; results arrive through callbacks on the
 * loop's thread. This is also the engine of the load generator. */
#ifndef UA_CLIENT_H
#define UA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/net.h>
#include <ua/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_client uas_client;

typedef enum uas_client_state {
    UAS_CLIENT_DISCONNECTED = 0,
    UAS_CLIENT_CONNECTING,   /* TCP, HEL, OPN */
    UAS_CLIENT_CHANNEL_OPEN, /* session-less services usable (GetEndpoints, FindServers) */
    UAS_CLIENT_SESSION_CREATING,
    UAS_CLIENT_SESSION_ACTIVE,
    UAS_CLIENT_CLOSED,       /* closed or failed; the reason says which */
} uas_client_state;

typedef struct uas_client_config {
    const char *endpoint_url;
    bool create_session;           /* true: CreateSession + ActivateSession (anonymous) */
    const char *session_name;      /* "uastack client" */
    uint32_t session_timeout_ms;   /* 60000 */
    uint32_t request_timeout_ms;   /* 10000: a request without an answer fails BadTimeout */
    uint32_t max_inflight;         /* requests in flight per client (1024) */
    uas_conn_config conn;          /* transport/channel settings */
} uas_client_config;

void uas_client_config_default(uas_client_config *cfg);

typedef void (*uas_client_state_fn)(uas_client *c, void *ud, uas_client_state state,
                                    uas_status reason);
/* The answer to one request. status is the service result (Good, a Bad
 * service result from a ServiceFault, or a local error such as BadTimeout,
 * BadConnectionClosed). resp is the decoded response of type t (NULL when
 * no response arrived); it and everything it points to are valid only
 * during the call. */
typedef void (*uas_client_response_fn)(uas_client *c, void *ud, uas_status status,
                                       const void *resp, const uas_type *t);

uas_client *uas_client_new(uas_loop *loop, const uas_client_config *cfg,
                           uas_client_state_fn on_state, void *ud);
/* Frees the client; outstanding requests are answered BadConnectionClosed. */
void uas_client_delete(uas_client *c);
uas_status uas_client_connect(uas_client *c);
/* CloseSession (if any), then CLO; on_state(CLOSED, Good) follows. */
void uas_client_disconnect(uas_client *c);
uas_client_state uas_client_get_state(const uas_client *c);

/* Sends any request. The request header (authentication token, handle,
 * timestamp, timeout hint) is filled in by the client; the rest of req is
 * only read during the call. BadTooManyOperations when max_inflight is
 * reached; BadInvalidState before the channel (or, for session services,
 * the session) is up. */
uas_status uas_client_request(uas_client *c, void *req, const uas_type *req_type,
                              uas_client_response_fn cb, void *ud);

/* Blocking helper for tools and tests: runs the loop until the client
 * reaches state (or CLOSED) or timeout_ms passes. */
uas_status uas_client_wait_state(uas_client *c, uas_client_state state, uint32_t timeout_ms);
/* Blocking request: runs the loop until the answer; the response is
 * deep-copied into arena. */
uas_status uas_client_call_sync(uas_client *c, void *req, const uas_type *req_type, void *resp,
                                const uas_type *resp_type, uas_arena *arena,
                                uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
