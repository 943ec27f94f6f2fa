/* libuaclient: an asynchronous OPC UA client on a uas_loop (libev). One
 * uas_client is one connection with its secure channel and (optionally) one
 * session; a loop carries many clients, each with many requests in flight.
 * Every call returns at once; results arrive through callbacks on the
 * loop's thread. This is also the engine of the load generator.
 *
 * Threading: a client is used from its loop's thread only. */
#ifndef UA_CLIENT_H
#define UA_CLIENT_H

#include <ua/export.h>
UAS_API_BEGIN

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
    UAS_CLIENT_CLOSED, /* closed or failed; the reason says which */
} uas_client_state;

/* Security of the connection (Part 4, 5.5 and 5.6). Everything here is
 * copied by uas_client_new. With policy None (the default) the rest is
 * ignored and the connection is unsecured. */
typedef struct uas_client_security {
    /* SecurityPolicy URI (e.g. "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
     * NULL: None. */
    const char *policy_uri;
    /* UAS_MESSAGE_SECURITY_MODE_SIGN or _SIGN_AND_ENCRYPT (0: SignAndEncrypt). */
    int32_t mode;
    /* The client's application instance certificate (DER) and private key
     * (DER or PEM). NULL: taken from pki_dir. */
    const uint8_t *cert;
    size_t cert_len;
    const uint8_t *key;
    size_t key_len;
    /* A PKI store (ua/pki.h layout), created when missing. Without cert
     * the own certificate is loaded from it, or made on first use
     * (ApplicationUri "urn:uastack:client", file name "uastack_client").
     * Unless validate_server is set, the server's certificate is validated
     * against its trust list (usage server, Part 4 6.1.3); a refused one
     * lands in rejected/certs. */
    const char *pki_dir;
    /* The server's certificate (DER) from its EndpointDescription, e.g. by
     * uas_client_select_endpoint. Required for a secured policy. */
    const uint8_t *server_cert;
    size_t server_cert_len;
    /* Judges the server's certificate; Good accepts. It is asked before
     * connecting and again for the certificate of the OPN answer. */
    uas_status (*validate_server)(void *ud, const uint8_t *der, size_t len);
    void *validate_ud;
    /* LAB ONLY: accept any server certificate (no validate_server, no
     * pki_dir trust check). A warning is logged at every connect. Without
     * this, validate_server or pki_dir, a secured configuration is invalid. */
    bool accept_any_server_cert;
} uas_client_security;

typedef enum uas_client_user_kind {
    UAS_CLIENT_USER_ANONYMOUS = 0,
    UAS_CLIENT_USER_NAME = 1, /* name + password */
    UAS_CLIENT_USER_X509 = 2, /* user certificate + key */
} uas_client_user_kind;

/* The identity ActivateSession presents (copied; the password is zeroed
 * when the client is freed). The UserTokenPolicy is picked from the
 * server's endpoint matching the channel's policy and mode. */
typedef struct uas_client_user {
    uas_client_user_kind kind;
    const char *name;
    const char *password; /* password_len bytes (need not be NUL-terminated) */
    size_t password_len;
    const uint8_t *cert; /* X509: DER */
    size_t cert_len;
    const uint8_t *key; /* X509: DER or PEM */
    size_t key_len;
} uas_client_user;

typedef struct uas_client_config {
    const char *endpoint_url;    /* copied */
    bool create_session;         /* true: CreateSession + ActivateSession */
    const char *session_name;    /* "uastack client"; copied */
    uint32_t session_timeout_ms; /* 60000 */
    /* 10000: a request without an answer fails BadTimeout; also bounds the
     * connection set-up (TCP, HEL, OPN) */
    uint32_t request_timeout_ms;
    uint32_t max_inflight; /* requests in flight per client (1024, at most 65536) */
    uas_conn_config conn;  /* transport/channel settings (security comes from below) */
    uas_client_security security;
    uas_client_user user;
} uas_client_config;

void uas_client_config_default(uas_client_config *cfg);

typedef void (*uas_client_state_fn)(uas_client *c, void *ud, uas_client_state state,
                                    uas_status reason);
/* The answer to one request. status is the service result (Good, a Bad
 * service result from a ServiceFault, or a local error such as BadTimeout,
 * BadConnectionClosed, BadDecodingError). resp is the decoded response of
 * type t: the expected response type, or UAS_TYPE(SERVICE_FAULT) for a
 * fault; NULL when no response arrived. It and everything it points to are
 * valid only during the call. */
typedef void (*uas_client_response_fn)(uas_client *c, void *ud, uas_status status, const void *resp,
                                       const uas_type *t);

/* NULL on out of memory or an invalid configuration (no URL). */
uas_client *uas_client_new(uas_loop *loop, const uas_client_config *cfg,
                           uas_client_state_fn on_state, void *ud);
/* Frees the client (also from inside its own callbacks); outstanding
 * requests are answered BadConnectionClosed, the connection is closed
 * without CloseSession, and no state callback follows. */
void uas_client_delete(uas_client *c);
/* From DISCONNECTED or CLOSED. BadTcpEndpointUrlInvalid, BadNotConnected
 * (the socket failed at once; state CLOSED), BadInvalidState; with
 * security, the status of a refused server certificate (state CLOSED,
 * nothing sent). On a secured channel the session set-up checks the
 * server's signature (BadApplicationSignatureInvalid) and certificate
 * (BadCertificateInvalid) and closes the client on failure. Later
 * failures arrive as on_state(CLOSED, reason). */
uas_status uas_client_connect(uas_client *c);
/* CloseSession(deleteSubscriptions) if a session is active, then CLO;
 * on_state(CLOSED, Good) follows (possibly before this returns). */
void uas_client_disconnect(uas_client *c);
uas_client_state uas_client_get_state(const uas_client *c);
/* Why the client is CLOSED (Good after uas_client_disconnect). */
uas_status uas_client_get_reason(const uas_client *c);
/* Whether that reason is the server's: its ERR message closed the channel
 * (e.g. it refused our certificate), as opposed to a check of our own. */
bool uas_client_reason_from_server(const uas_client *c);
/* The session's authentication token (a null NodeId without a session). It
 * stays readable after the connection is lost, so another client may take
 * the session over with uas_client_activate_session. */
const uas_nodeid *uas_client_auth_token(const uas_client *c);

/* Sends any request. The request header (timestamp, handle, timeout hint
 * and, unless the caller set one, the session's authentication token) is
 * filled in for the encoding only; req is read during the call and left as
 * it was. Returns Good and the callback runs exactly once later, or
 * returns Bad and it never runs: BadTooManyOperations when max_inflight
 * requests are in flight; BadInvalidState before the channel is open, or,
 * for a session service without a caller-set token, before the session is
 * active, or after uas_client_disconnect; BadConnectionClosed once closed;
 * an encoding or transport status of uas_conn_send. */
uas_status uas_client_request(uas_client *c, void *req, const uas_type *req_type,
                              uas_client_response_fn cb, void *ud);

/* Takes over an existing session (e.g. one of a lost connection) on this
 * client's open channel: ActivateSession with auth_token (anonymous). On
 * Good the client uses that session and its state becomes SESSION_ACTIVE;
 * cb gets the ActivateSession answer either way. BadInvalidState unless the
 * channel is open and no session set-up is under way. */
uas_status uas_client_activate_session(uas_client *c, const uas_nodeid *auth_token,
                                       uas_client_response_fn cb, void *ud);

/* Blocking helper for tools and tests: runs the loop until the client
 * reaches state (or a later one, or CLOSED) or timeout_ms passes. Good when
 * state was reached; the close reason (BadConnectionClosed if none) when
 * the client closed instead; BadTimeout; BadInvalidState when the client
 * is DISCONNECTED. Must not be called from a callback of the loop. */
uas_status uas_client_wait_state(uas_client *c, uas_client_state state, uint32_t timeout_ms);
/* Blocking request: runs the loop until the answer or timeout_ms
 * (BadTimeout, the request is then forgotten). The response, when one of
 * resp_type arrived, is deep-copied into arena (resp is zeroed otherwise);
 * returns the status the callback would have got. Must not be called from
 * a callback of the loop. */
/* Blocking discovery for tools: GetEndpoints on an unsecured channel to
 * url, then the endpoint with policy_uri and mode (0: SignAndEncrypt). Its
 * serverCertificate is deep-copied into server_cert (release it with
 * uas_clear(server_cert, UAS_TYPE(BYTE_STRING))); security_level (may be
 * NULL) receives its level. BadSecurityPolicyRejected when the server
 * offers no such endpoint, BadCertificateInvalid when it has no
 * certificate; else the connection's or the service's status. Must not be
 * called from a callback of the loop. */
uas_status uas_client_select_endpoint(uas_loop *loop, const char *url, const char *policy_uri,
                                      int32_t mode, uint32_t timeout_ms,
                                      uas_bytestring *server_cert, uint8_t *security_level);

uas_status uas_client_call_sync(uas_client *c, void *req, const uas_type *req_type, void *resp,
                                const uas_type *resp_type, uas_arena *arena, uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
