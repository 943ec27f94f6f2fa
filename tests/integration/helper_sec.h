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

#endif
