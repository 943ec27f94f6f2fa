/* Messages and checks shared by the secure channel tests (test_channel_*.c):
 * Read requests and responses whose size a test can steer from a few dozen
 * bytes to hundreds of KiB, the decoding and comparison of what arrived, and
 * the assertions of a fatal server failure (status returned, ERR queued,
 * CLOSED with the code as reason). They work on the in-memory wire of
 * helper_pipe; failures are reported through Criterion asserts. */
#ifndef UAS_TEST_HELPER_CHANNEL_H
#define UAS_TEST_HELPER_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include <ua/channel.h>
#include <ua/codec.h>

#include "helper_pipe.h"

#define URL       "opc.tcp://pipe:4840"
#define NONE_URI  "http://opcfoundation.org/UA/SecurityPolicy#None"
#define T_REQ     INT64_C(133594528891230000)
#define NODEID_T  (&uas_types[UAS_TYPES_NODE_ID])
#define READ_REQ  UAS_TYPE(READ_REQUEST)
#define READ_RESP UAS_TYPE(READ_RESPONSE)

/* A ReadRequest for n nodes with string NodeIds of name_len bytes each
 * (numeric NodeIds when name_len is 0), so its size can be steered from a
 * few dozen bytes to hundreds of KiB. */
typedef struct big_req {
    uas_read_request r;
    uas_read_value_id *ids;
    char *names;
} big_req;

void big_req_make(big_req *b, size_t n, size_t name_len, uint32_t handle);
void big_req_free(big_req *b);

/* A ReadResponse of n DataValues, each a String of str_len bytes with a
 * status and a source timestamp. */
typedef struct big_resp {
    uas_read_response r;
    uas_datavalue *dv;
    uas_string *strs;
    char *text;
} big_resp;

void big_resp_make(big_resp *b, size_t n, size_t str_len, uint32_t handle);
void big_resp_free(big_resp *b);

/* Bytes of the MSG body uas_channel_send makes of v: encoding NodeId + v. */
size_t body_size(const void *v, const uas_type *t);

/* Decodes a received body (NodeId + message) into dst from arena a,
 * asserting the NodeId names t and every byte is consumed. */
void decode_body(const uint8_t *body, size_t len, const uas_type *t, void *dst, uas_arena *a);

/* Asserts that m is the given message, decoded and compared with uas_equal. */
void expect_message(const pipe_msg *m, uint32_t request_id, const void *want, const uas_type *t);

/* Parses a queued chunk, asserting there is one. */
pipe_chunk parse_buf(const uas_buf *b);

/* Sends v as request_id from e, asserting Good. */
void send_ok(pipe_end *e, uint32_t request_id, const void *v, const uas_type *t);

/* Buffer sizes of 8192 in both directions and both roles. */
void small_buffers(uas_channel_config *c, uas_channel_config *s);

/* The server failed fatally with `code`: the status uas_channel_recv
 * returned, the ERR it queued, its CLOSED state and the reason given to
 * on_state all say so, and further input is refused with the same code and
 * answered by nothing. */
void expect_server_failed(pipe *p, uas_status returned, uas_status code);

/* After expect_server_failed: the client, given the ERR, closes with the code. */
void expect_client_told(pipe *p, uas_status code);

/* Feeds crafted bytes to a fresh server and returns what recv said. */
uas_status feed_server(pipe *p, const void *bytes, size_t len);

/* Gets a server to ACKED (HEL from the pipe's client) and drops the ACK. */
void hello_only(pipe *p);

#endif
