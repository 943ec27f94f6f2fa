/* A server with a PKI and a users file in a temporary folder (user
 * "alice" with ENV_PASSWORD), client certificates auto-accepted, its
 * Basic256Sha256 SignAndEncrypt certificate fetched, and a client
 * certificate for ENV_CLIENT_URI made: what the secured-session tests
 * start from. */
#ifndef HELPER_SEC_H
#define HELPER_SEC_H

#include "helper_env.h"

#define ENV_CLIENT_URI "urn:uastack:test:client"
#define ENV_PASSWORD   "correct horse battery staple"

typedef struct env_sec env_sec;
/* The test's settings, after the helper's (security, limits ...). */
typedef void (*env_sec_configure_fn)(uas_server_config *cfg, env_sec *s);

struct env_sec {
    env e;
    char dir[64]; /* temporary: server-pki/, client-pki/, users */
    char server_pki[128];
    char client_pki[128];
    char users[128];
    uas_bytestring server_cert;
    uas_bytestring cert, key; /* the client's, for ENV_CLIENT_URI */
    uas_arena arena;          /* heap-backed, for responses */
    env_sec_configure_fn configure;
    void *ud; /* the test's */
};

/* Starts it (log lines captured: env_log_has); tag names the folder. */
void env_sec_start(env_sec *s, const char *tag, env_sec_configure_fn configure, void *ud);
/* Stops the server and removes the folder. */
void env_sec_stop(env_sec *s);

/* For suites whose server is not env_start's (the ECC ones): a temporary
 * folder with server-pki/, client-pki/ and a users file path, a server
 * started from the test's configuration and a client loop. */
typedef struct env_pki {
    env e;
    char dir[64];
    char server_pki[128];
    char client_pki[128];
    char users[128]; /* not made: uas_user_add makes it */
} env_pki;

/* The folder and its paths (tag names it): what the test puts in the
 * stores before the server starts. */
void env_pki_dirs(env_pki *s, const char *tag);
/* Starts the server of cfg (the test's security, users file, ...) bound to
 * 127.0.0.1 on an ephemeral port, one loop, PKI in server_pki. */
void env_pki_serve(env_pki *s, uas_server_config *cfg);
/* Stops it and removes the folder. */
void env_pki_stop(env_pki *s);

/* A client that trusts exactly the certificate of the endpoint it chose. */
typedef struct env_conn {
    uas_client *c;
    uas_bytestring cert; /* the endpoint's */
    char uri[128];       /* the policy's */
} env_conn;

/* A client of the policy named (without the URI prefix) and mode, its own
 * certificate in client_pki, logging in as user (NULL: anonymous): the
 * status of reaching an active session. */
uas_status env_conn_login(env_pki *s, env_conn *k, const char *policy, int32_t mode,
                          const uas_client_user *user);
void env_conn_close(env_conn *k);
/* A Read of ServerStatus/State gives Running. */
void env_expect_running(uas_client *c);

#endif
