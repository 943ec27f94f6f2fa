/* The connection I/O path (stack/src/net.c): output is written once per
 * loop iteration for every connection that produced any. These scenarios
 * check what that must keep: every response arrives, in order and intact,
 * with many connections active in the same iterations; a client that does
 * not read for a while makes the server's writes partial (the socket
 * buffers fill) and still gets every byte afterwards; connections that go
 * away while they have output pending leave the server serving others. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <string.h>
#include <time.h>

#include "helper_env.h"

enum { ATTR_VALUE = 13 };

typedef struct tally {
    size_t active, answered, good;
    uas_status first_bad; /* the first answer that was not Good */
} tally;

static void on_state(uas_client *c, void *ud, uas_client_state s, uas_status reason)
{
    (void)c;
    (void)reason;
    if (s == UAS_CLIENT_SESSION_ACTIVE)
        ((tally *)ud)->active++;
}

typedef struct big_req {
    tally *t;
    uint32_t first; /* node of the first value: values follow 1001 + (first + i) % 100 */
    size_t n;
} big_req;

/* Every value must be the contract node's own (node ns=1;i=1001+k holds k). */
static void on_big(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    big_req *r = ud;
    r->t->answered++;
    if (st != UAS_GOOD || t != UAS_TYPE(READ_RESPONSE)) {
        if (!r->t->first_bad)
            r->t->first_bad = st != UAS_GOOD ? st : UAS_BAD_UNEXPECTED_ERROR;
        return;
    }
    const uas_read_response *rr = resp;
    bool ok = rr->results_count == r->n;
    for (size_t i = 0; ok && i < r->n; i++) {
        const uas_datavalue *dv = &rr->results[i];
        ok = dv->has_value && dv->value.type == UAS_TYPE(INT32) &&
             *(int32_t *)dv->value.data == (int32_t)((r->first + i) % 100);
    }
    if (!ok) { /* a Good answer with the wrong values: bytes lost or mixed */
        if (!r->t->first_bad)
            r->t->first_bad = UAS_BAD_DATA_LOST;
        return;
    }
    r->t->good++;
}

static void fill_ids(uas_read_value_id *ids, size_t n, uint32_t first)
{
    memset(ids, 0, n * sizeof(*ids));
    for (size_t i = 0; i < n; i++) {
        ids[i].node_id = uas_nodeid_numeric(1, 1001 + (uint32_t)((first + i) % 100));
        ids[i].attribute_id = ATTR_VALUE;
    }
}

/* All from 127.0.0.1: past the default max_connections_per_address. */
static void no_address_cap(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_connections_per_address = 0;
}

/* 300 connections, each with 3 Reads in flight on different nodes, all
 * sent before the loop runs: the server reads them in the same iterations
 * and writes each connection's answers in one pass. */
static void many_connections(unsigned threads)
{
    enum { CONNS = 300, EACH = 3 };
    env e;
    env_options o = {.threads = threads, .configure = no_address_cap};
    env_start(&e, &o);
    static uas_client *cl[CONNS];
    static big_req reqs[CONNS * EACH];
    static uas_read_value_id ids[CONNS * EACH][2];
    tally t = {0, 0, 0, 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    /* In groups: the server refuses more than 128 not yet activated
     * sessions from one address. */
    for (size_t i = 0; i < CONNS; i++) {
        cl[i] = uas_client_new(e.loop, &cfg, on_state, &t);
        cr_assert(cl[i]);
        cr_assert_eq(uas_client_connect(cl[i]), UAS_GOOD);
        if (i % 50 == 49)
            cr_assert(env_run_until_count(&e, &t.active, i + 1, 20000), "%zu of %zu active",
                      t.active, i + 1);
    }
    for (size_t i = 0; i < CONNS; i++)
        for (size_t k = 0; k < EACH; k++) {
            size_t j = i * EACH + k;
            reqs[j] = (big_req){&t, (uint32_t)(j % 100), 2};
            fill_ids(ids[j], 2, reqs[j].first);
            uas_read_request rq;
            memset(&rq, 0, sizeof(rq));
            rq.nodes_to_read = ids[j];
            rq.nodes_to_read_count = 2;
            cr_assert_eq(uas_client_request(cl[i], &rq, UAS_TYPE(READ_REQUEST), on_big, &reqs[j]),
                         UAS_GOOD);
        }
    cr_assert(env_run_until_count(&e, &t.answered, CONNS * EACH, 20000), "%zu of %d answered",
              t.answered, CONNS * EACH);
    cr_expect_eq(t.good, CONNS * EACH);
    for (size_t i = 0; i < CONNS; i++)
        env_client_close(cl[i]);
    env_stop(&e);
}

Test(net_io, many_connections_get_every_answer_one_loop, .timeout = 120)
{
    many_connections(1);
}

Test(net_io, many_connections_get_every_answer_two_loops, .timeout = 120)
{
    many_connections(2);
}

/* 1,500 Reads of 1,000 values each (about 9 MB of answers) sent at once
 * by a client that then does not read for a second: the socket buffers
 * fill, the server's writes come back partial and then EAGAIN, and it must
 * finish them when the socket drains, in order and without losing a byte.
 * The server's output limit is raised so that the stall is not a reason to
 * drop the client. */
static void big_output(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_output_bytes = 64u << 20;
}

Test(net_io, partial_writes_finish_when_a_slow_reader_drains, .timeout = 120)
{
    enum { REQS = 1500, NODES = 1000 };
    env e;
    env_options o = {.threads = 1, .configure = big_output};
    env_start(&e, &o);
    tally t = {0, 0, 0, 0};
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    cfg.max_inflight = REQS;
    /* The requests (18 MB) may queue on this side too when the server
     * reads slowly (a sanitizer build, a loaded machine). */
    cfg.conn.max_output_bytes = 64u << 20;
    /* ... and answer slowly: the last of them waits for all the others. */
    cfg.request_timeout_ms = 120000;
    uas_client *c = uas_client_new(e.loop, &cfg, on_state, &t);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_assert(env_run_until_count(&e, &t.active, 1, ENV_WAIT_MS));
    static uas_read_value_id ids[REQS][NODES];
    static big_req reqs[REQS];
    for (size_t j = 0; j < REQS; j++) {
        reqs[j] = (big_req){&t, (uint32_t)(j % 100), NODES};
        fill_ids(ids[j], NODES, reqs[j].first);
        uas_read_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.nodes_to_read = ids[j];
        rq.nodes_to_read_count = NODES;
        uas_status st = uas_client_request(c, &rq, UAS_TYPE(READ_REQUEST), on_big, &reqs[j]);
        cr_assert_eq(st, UAS_GOOD, "request %zu: %s", j, uas_status_name(st));
    }
    /* The requests leave as they are queued (a long queue is written at
     * once) or with this iteration's flush; then the client stops reading
     * while the server answers. */
    uas_loop_run_once(e.loop, false);
    struct timespec stall = {1, 0};
    nanosleep(&stall, NULL);
    cr_assert(env_run_until_count(&e, &t.answered, REQS, 60000), "%zu of %d answered", t.answered,
              REQS);
    cr_expect_eq(t.good, REQS, "%zu of %d answers intact (first failure: %s)", t.good, REQS,
                 uas_status_name(t.first_bad));
    env_client_close(c);
    env_stop(&e); /* a fresh client is served */
}

/* Clients that queue requests and vanish in the same iteration (their
 * connection closes while the server may hold their answers for the
 * end-of-iteration flush), many times over: the server keeps serving. */
Test(net_io, connections_closed_with_output_pending_leave_the_server_serving, .timeout = 120)
{
    enum { ROUNDS = 20, CONNS = 20 };
    env e;
    env_options o = {.threads = 2};
    env_start(&e, &o);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    for (int r = 0; r < ROUNDS; r++) {
        tally t = {0, 0, 0, 0};
        uas_client *cl[CONNS];
        for (int i = 0; i < CONNS; i++) {
            cl[i] = uas_client_new(e.loop, &cfg, on_state, &t);
            cr_assert(cl[i]);
            cr_assert_eq(uas_client_connect(cl[i]), UAS_GOOD);
        }
        cr_assert(env_run_until_count(&e, &t.active, CONNS, 20000));
        static uas_read_value_id ids[CONNS][100];
        static big_req reqs[CONNS];
        for (int i = 0; i < CONNS; i++) {
            reqs[i] = (big_req){&t, 0, 100};
            fill_ids(ids[i], 100, 0);
            uas_read_request rq;
            memset(&rq, 0, sizeof(rq));
            rq.nodes_to_read = ids[i];
            rq.nodes_to_read_count = 100;
            for (int k = 0; k < 5; k++)
                cr_assert_eq(
                    uas_client_request(cl[i], &rq, UAS_TYPE(READ_REQUEST), on_big, &reqs[i]),
                    UAS_GOOD);
        }
        uas_loop_run_once(e.loop, false);
        for (int i = 0; i < CONNS; i++)
            uas_client_delete(cl[i]); /* no CloseSession: the socket just closes */
    }
    env_check_alive(&e);
    env_stop(&e);
}
