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

#endif
