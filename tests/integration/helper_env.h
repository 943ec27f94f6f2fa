/* The world of an integration test: a uas_server in this process on an
 * ephemeral port of 127.0.0.1, running on its own threads, with the
 * benchmark contract nodes (ns=1;i=1001..1100 Int32, writable), a Demo
 * object with Demo.Add, and a slow variable; clients on one uas_loop driven
 * by the test thread; raw sockets for input no client would send.
 *
 * env_stop first proves the server still serves a fresh client (connect,
 * session, Read), then stops and deletes everything it started. */
#ifndef UAS_TEST_HELPER_ENV_H
#define UAS_TEST_HELPER_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/client.h>
#include <ua/server.h>

enum {
    ENV_WAIT_MS = 5000, /* upper bound for anything that should be quick */
    ENV_SLOW_MS = 800,  /* how long a Read of the slow variable takes */
};

typedef struct env {
    uas_server *server;
    uint16_t port;
    char url[64];
    uas_loop *loop;
    unsigned threads;
} env;

typedef struct env_options {
    unsigned threads;          /* server loops (1) */
    uint32_t hello_timeout_ms; /* 0: the server's default */
    uint32_t max_references_per_node;
    /* Called on the server configuration last, before the server is made
     * (security, PKI, users, log level); NULL: nothing more. */
    void (*configure)(uas_server_config *cfg, void *ud);
    void *configure_ud;
} env_options;

void env_start(env *e, const env_options *o);
void env_stop(env *e);

/* A client of the test loop, connected; with a session when asked.
 * request_timeout_ms 0: the default. Asserts success. */
uas_client *env_client(env *e, bool session, uint32_t request_timeout_ms);
/* Disconnects (CloseSession, CLO), waits for CLOSED, deletes. */
void env_client_close(uas_client *c);
/* Runs the test loop until *flag or ms pass; returns *flag. */
bool env_run_until(env *e, const bool *flag, uint32_t ms);
/* Runs the test loop until count >= target or ms pass. */
bool env_run_until_count(env *e, const size_t *count, size_t target, uint32_t ms);

/* Read of one attribute through call_sync into arena; returns the service
 * status; *dv gets the result. */
uas_status env_read(uas_client *c, const uas_nodeid *id, uint32_t attr, uas_datavalue *dv,
                    uas_arena *arena);
/* The Int32 value of a contract node (asserts Good). */
int32_t env_read_i32(uas_client *c, uint32_t id);
/* Asserts that a new client can connect, open a session and read the
 * server state (Running). */
void env_check_alive(env *e);

/* ---- raw sockets ---- */

/* A blocking TCP socket connected to the server (receive timeout 3 s). */
int raw_connect(env *e);
void raw_send(int fd, const void *data, size_t len);
/* One whole chunk into buf; its length, 0 on EOF, -1 on timeout/error. */
long raw_read_chunk(int fd, uint8_t *buf, size_t cap);
/* Asserts the next chunk is ERR with this code. */
void raw_expect_err(int fd, uas_status code);
/* Asserts the server closes the connection (EOF or reset) within ms. */
void raw_expect_close(int fd, int ms);
/* A HEL chunk for the env URL into out; returns its length. */
size_t raw_build_hel(env *e, uint8_t *out, size_t cap);
uint32_t raw_u32(const uint8_t *p);

/* ---- log capture ---- */

/* From now on every log line of every thread goes into a buffer instead of
 * stderr (the level is still the server's log_level). */
void env_log_capture(void);
/* Back to stderr; the buffer is emptied. */
void env_log_release(void);
/* Whether a captured line contains text, or these bytes. */
bool env_log_has(const char *text);
bool env_log_has_bytes(const void *data, size_t len);

/* ---- certificates ---- */

/* A self-signed application instance certificate for uri, made in the PKI
 * store at dir (file name name) or loaded from it; cert and key (DER) are
 * released with uas_pki_bytes_free. */
/* Removes a folder and everything below it; false when anything stayed. */
bool env_rmtree(const char *dir);

void env_make_cert(const char *dir, const char *name, const char *uri, uas_bytestring *cert,
                   uas_bytestring *key);

/* ---- a secured channel driven by hand ---- */

/* A client-role uas_channel on a blocking socket, driven by the test
 * thread: for requests no client library sends (hand-made CreateSession and
 * ActivateSession, signed with uas_channel_sign on ch), and for holding
 * back secured chunks to send them later, twice, out of order or
 * modified, with raw_send on fd. */
enum { ENV_HELD_MAX = 8 };

typedef struct env_held {
    uint8_t *data;
    size_t len;
} env_held;

typedef struct env_schan {
    int fd;
    uas_bufpool *pool;
    uas_secpol_cred *cred;
    uas_channel *ch;
    bool hold;                   /* chunks go to held[] instead of the socket */
    env_held held[ENV_HELD_MAX]; /* in the order they were secured */
    size_t nheld;
    uint32_t want;   /* the request id waited for */
    uint8_t *answer; /* its body (encoding NodeId + response), until the next wait */
    size_t answer_len;
    uas_status closed; /* why the channel closed (an ERR's code), once it did */
} env_schan;

/* Connects to e and opens a channel with this policy URI and mode,
 * secured with cert/key (DER) against the server's certificate; asserts
 * that it opens. */
void env_schan_open(env *e, env_schan *s, const char *policy_uri, int32_t mode,
                    const uas_bytestring *cert, const uas_bytestring *key,
                    const uas_bytestring *server_cert);
/* The same without waiting: HEL is sent, OPN follows the ACK (held when
 * hold is set by then) as env_schan_pump reads it. */
void env_schan_connect(env *e, env_schan *s, const char *policy_uri, int32_t mode,
                       const uas_bytestring *cert, const uas_bytestring *key,
                       const uas_bytestring *server_cert);
/* One read of the socket into the channel (waiting up to ms); false when
 * nothing more will come (timeout, EOF, or the channel closed). */
bool env_schan_pump(env_schan *s, int ms);
/* Sends CLO if the channel is still open; frees everything. */
void env_schan_close(env_schan *s);
/* Secures req into chunks for the socket (or held[] while hold is set);
 * its RequestHeader goes as the caller set it, plus a timestamp and a
 * request handle. Returns the request id. */
uint32_t env_schan_send(env_schan *s, void *req, const uas_type *req_type);
/* Reads the socket into the channel until the answer to request id comes:
 * the service result (a ServiceFault's, else Good), the channel's close
 * reason, or BadTimeout. resp (of resp_type, may be NULL) is decoded into
 * arena and zeroed unless such a response came. */
uas_status env_schan_wait(env_schan *s, uint32_t id, void *resp, const uas_type *resp_type,
                          uas_arena *arena);
uas_status env_schan_call(env_schan *s, void *req, const uas_type *req_type, void *resp,
                          const uas_type *resp_type, uas_arena *arena);
/* Frees the held chunks. */
void env_schan_drop_held(env_schan *s);

#endif
