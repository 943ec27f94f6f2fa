/* Internal state of uas_client, shared by its modules: the connection and
 * state machine (client.c), the pending-request table and response
 * dispatch (client_requests.c), the session services (client_session.c)
 * and the blocking helpers (client_sync.c). */
#ifndef UAS_CLIENT_INTERNAL_H
#define UAS_CLIENT_INTERNAL_H

#include <ev.h>

#include <ua/client.h>
#include <ua/pki.h>
#include <ua/security.h>

enum {
    UAS_CLIENT_NONE = -1, /* end of an index list */
    UAS_CLIENT_MAX_INFLIGHT = 65536,
    UAS_CLIENT_FIRST_SLOTS = 16,   /* slots allocated up front; doubled on demand */
    UAS_CLIENT_ARENA_FIRST = 2048, /* inline first block of the response arena */
    UAS_CLIENT_POLICY_ID = 128,    /* longest user token policy id kept */
    UAS_CLIENT_NONCE = 32,         /* our session nonce */
    UAS_CLIENT_SERVER_NONCE = 128, /* longest server nonce kept */
    UAS_CLIENT_SIG_MAX = 1024,     /* RSA up to 8192 bits */
};

/* One request in flight. Slots are linked by index (never by pointer: the
 * array may grow under a callback) into the deadline list while in flight
 * and into the free list otherwise. */
typedef struct uas_pending {
    uint32_t id;  /* request id on the wire; 0 while the slot is free */
    uint32_t gen; /* bumped per use, so a late answer never hits a reused slot */
    int32_t prev, next;
    int64_t deadline_ms;
    const uas_type *req_type;
    uas_client_response_fn cb;
    void *ud;
} uas_pending;

struct uas_client {
    uas_loop *loop;
    uas_client_config cfg; /* endpoint_url and session_name point at owned copies */
    uas_client_state_fn on_state;
    void *ud;
    uas_client_state state;
    uas_status reason;
    bool reason_from_server; /* the server's ERR closed the channel */
    uas_conn *conn;          /* NULL when not connected */
    bool closing;            /* uas_client_disconnect was called */
    bool deleted;            /* uas_client_delete was called: free once busy is 0 */
    int busy;                /* callback frames that still use the client */

    /* Security (client_security.c): owned copies of cfg.security/user. */
    const uas_secpol *policy; /* &uas_secpol_none when unsecured */
    uas_secpol_cred *cred;    /* NULL when unsecured */
    uas_pki_store *pki;       /* NULL without security.pki_dir */
    uas_bytestring server_cert;
    uas_bytestring user_cert;
    uas_bytestring user_key;
    char *user_name;
    uint8_t *password;
    size_t password_len;
    uint8_t client_nonce[UAS_CLIENT_NONCE];
    uint8_t server_nonce[UAS_CLIENT_SERVER_NONCE];
    size_t server_nonce_len;
    /* ECC policies: the server's ECDHKey for the next EccEncryptedSecret
     * (its signature checked; used once; length 0 when none). */
    uint8_t server_eph[96];
    size_t server_eph_len;
    /* The UserTokenPolicy's securityPolicyUri (empty: the channel's). */
    char token_policy_uri[UAS_CLIENT_POLICY_ID];

    /* Session. */
    uas_nodeid auth_token; /* heap-owned; null without a session */
    uas_nodeid session_id; /* heap-owned */
    char policy_id[UAS_CLIENT_POLICY_ID];
    /* A take-over in progress (uas_client_activate_session). */
    bool takeover;
    uas_nodeid takeover_token;
    uas_client_response_fn takeover_cb;
    void *takeover_ud;

    /* Requests in flight: ids are (gen << shift) | slot, so the slot of an
     * answer is found by a mask and checked by comparing the whole id. */
    uas_pending *slots;
    uint32_t nslots; /* allocated, <= 1 << shift */
    uint32_t shift;
    int32_t free_head;
    int32_t head, tail; /* in flight, by deadline (one timeout for all: FIFO) */
    uint32_t inflight;
    uint32_t next_handle;
    int64_t connect_deadline_ms; /* while CONNECTING, else INT64_MAX */
    ev_timer timer;

    /* Responses are decoded here; reset before each one. */
    uas_arena arena;
    uint8_t arena_first[UAS_CLIENT_ARENA_FIRST];
};

/* client.c */
void uas__client_set_state(uas_client *c, uas_client_state s, uas_status reason);
/* Closes the connection because of st (session set-up failed). */
void uas__client_fail(uas_client *c, uas_status st);
void uas__client_release(uas_client *c);
bool uas__nodeid_is_null(const uas_nodeid *id);

/* client_requests.c */
uas_status uas__requests_init(uas_client *c);
void uas__requests_free(uas_client *c);
/* Sends req; the session token goes in unless the caller set one. *id (if
 * given) receives the request id. See uas_client_request for the contract. */
uas_status uas__client_send(uas_client *c, void *req, const uas_type *req_type,
                            uas_client_response_fn cb, void *ud, uint32_t *id);
/* uas_client_request, also giving the request id. */
uas_status uas__client_request_id(uas_client *c, void *req, const uas_type *req_type,
                                  uas_client_response_fn cb, void *ud, uint32_t *id);
/* Forgets a request: its callback will not run. */
void uas__client_cancel(uas_client *c, uint32_t id);
/* Answers every request in flight with status. */
void uas__client_fail_all(uas_client *c, uas_status status);
/* Re-arms the timer for the earliest deadline. */
void uas__client_arm_timer(uas_client *c);
/* The loop's time in ms, brought up to date when the caller is outside the
 * loop: libev caches it per iteration, and a caller that has not run the
 * loop for a while would time deadlines from the past. Inside a callback the
 * iteration's time is fresh and no clock is read. */
int64_t uas__client_now_ms(uas_client *c);
void uas__client_on_message(uas_conn *conn, uint32_t request_id, const uint8_t *body, size_t len);
void uas__client_on_message_error(uas_conn *conn, uint32_t request_id, uas_status status);

/* client_security.c */
/* Copies the security and user settings of cfg into c and fills
 * c->cfg.conn.channel (cred, policy, mode, server certificate, validator).
 * Logs why and returns Bad for an invalid configuration. */
uas_status uas__security_init(uas_client *c, const uas_client_config *cfg);
void uas__security_free(uas_client *c);
/* Before connecting: validates the configured server certificate. */
uas_status uas__security_check_server(uas_client *c);
bool uas__security_on(const uas_client *c);

/* client_user.c */
/* Fills t->password (and encryption_algorithm) for the chosen token
 * policy; release with uas__user_secret_free. */
uas_status uas__user_secret(uas_client *c, uas_user_name_identity_token *t);
void uas__user_secret_free(uas_client *c, uas_user_name_identity_token *t);
/* ECC policies: asks for the server's ECDHKey in a request's
 * AdditionalHeader when a user name will need it (the header's memory is
 * in *ap and *kv, the caller's); takes the ECDHKey of a response. */
void uas__ecdh_request(uas_client *c, uas_extensionobject *ah, uas_additional_parameters_type *ap,
                       uas_key_value_pair *kv, uas_string *uri);
uas_status uas__ecdh_take(uas_client *c, const uas_extensionobject *ah);
/* userTokenSignature of an X509 identity into sig (cap bytes). */
uas_status uas__user_sign(uas_client *c, uas_signature_data *sd, uint8_t *sig, size_t cap);
/* The channel-bound data an X.509 user token signs on an enhanced ECC
 * channel (client_session.c); *out is the caller's to uas_free(*out, *n). */
uas_status uas__user_bound_data(uas_client *c, uint8_t **out, size_t *n);

/* client_session.c */
void uas__session_start(uas_client *c);
void uas__session_close(uas_client *c);
void uas__session_forget(uas_client *c);

#endif
