/* Reads of a value that other loops keep writing: a Read takes no lock on
 * a scalar value (aspace_attr.c, the node's seqlock), so what it returns
 * must still be one write, whole: the value, its status and its source
 * timestamp from the same Write. Writers and readers run on both loops of
 * a two-loop server (connections are spread over the loops), each with
 * several requests in flight; every write carries a value v, the status
 * Uncertain for odd v, and the source timestamp BASE + v. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "helper_env.h"

enum { ATTR_VALUE = 13, WRITERS = 4, READERS = 4, INFLIGHT = 4, NODES = 3 };
#define BASE_TS ((int64_t)133000000000000000)

typedef struct world {
    size_t active;
    size_t reads, writes, torn, bad;
    bool stop;
    int64_t first_torn_v, first_torn_ts;
    uas_status first_torn_st;
} world;

typedef struct op {
    world *w;
    uas_client *c;
    unsigned writer; /* writers: index; readers: unused */
    int32_t seq;
    uas_write_value wv[NODES];
    uas_read_value_id rv[NODES];
    int32_t val;
} op;

static void on_state(uas_client *c, void *ud, uas_client_state s, uas_status reason)
{
    (void)c;
    (void)reason;
    if (s == UAS_CLIENT_SESSION_ACTIVE)
        ((world *)ud)->active++;
}

static void send_write(op *o);
static void send_read(op *o);

static void on_write(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    op *o = ud;
    const uas_write_response *wr = resp;
    if (st != UAS_GOOD || t != UAS_TYPE(WRITE_RESPONSE) || wr->results_count != NODES) {
        if (!o->w->bad)
            fprintf(stderr, "write: %s\n", uas_status_name(st));
        o->w->bad++;
    } else
        for (size_t i = 0; i < NODES; i++)
            if (wr->results[i] != UAS_GOOD) {
                if (!o->w->bad)
                    fprintf(stderr, "write result %s\n", uas_status_name(wr->results[i]));
                o->w->bad++;
            }
    o->w->writes++;
    if (!o->w->stop)
        send_write(o);
}

static void on_read(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    op *o = ud;
    world *w = o->w;
    const uas_read_response *rr = resp;
    w->reads++;
    if (st != UAS_GOOD || t != UAS_TYPE(READ_RESPONSE) || rr->results_count != NODES) {
        w->bad++;
    } else {
        for (size_t i = 0; i < NODES; i++) {
            const uas_datavalue *dv = &rr->results[i];
            if (!dv->has_value || dv->value.type != UAS_TYPE(INT32)) {
                w->bad++;
                continue;
            }
            int32_t v = *(int32_t *)dv->value.data;
            uas_status status = dv->has_status ? dv->status : UAS_GOOD;
            /* Before the first write the node holds its initial value
             * (k for node 1001 + k, Good, the server's timestamp). */
            if (v < 1000)
                continue;
            bool ok = dv->has_source_timestamp && dv->source_timestamp == BASE_TS + v &&
                      status == ((v & 1) ? UAS_UNCERTAIN : UAS_GOOD);
            if (!ok) {
                if (!w->torn) {
                    w->first_torn_v = v;
                    w->first_torn_ts = dv->source_timestamp;
                    w->first_torn_st = status;
                }
                w->torn++;
            }
        }
    }
    if (!w->stop)
        send_read(o);
}

static void send_write(op *o)
{
    /* Values of writer k: 1000 + k, + WRITERS, ...: distinct across writers. */
    int32_t v = 1000 + (int32_t)o->writer + WRITERS * o->seq++;
    uas_write_request rq;
    memset(&rq, 0, sizeof(rq));
    for (size_t i = 0; i < NODES; i++) {
        o->wv[i].value.status = (v & 1) ? UAS_UNCERTAIN : UAS_GOOD;
        o->wv[i].value.has_status = (v & 1) != 0;
        o->wv[i].value.source_timestamp = BASE_TS + v;
        o->wv[i].value.has_source_timestamp = true;
    }
    o->val = v;
    rq.nodes_to_write = o->wv;
    rq.nodes_to_write_count = NODES;
    if (uas_client_request(o->c, &rq, UAS_TYPE(WRITE_REQUEST), on_write, o) != UAS_GOOD)
        o->w->bad++;
}

static void send_read(op *o)
{
    uas_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_SOURCE;
    rq.nodes_to_read = o->rv;
    rq.nodes_to_read_count = NODES;
    if (uas_client_request(o->c, &rq, UAS_TYPE(READ_REQUEST), on_read, o) != UAS_GOOD)
        o->w->bad++;
}

Test(read_consistency, concurrent_writes_on_two_loops_are_read_whole, .timeout = 120)
{
    env e;
    env_options eo = {.threads = 2};
    env_start(&e, &eo);
    world w;
    memset(&w, 0, sizeof(w));
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    cfg.max_inflight = 2 * INFLIGHT; /* the next is sent from the answer's callback */
    uas_client *cl[WRITERS + READERS];
    for (int i = 0; i < WRITERS + READERS; i++) {
        cl[i] = uas_client_new(e.loop, &cfg, on_state, &w);
        cr_assert(cl[i]);
        cr_assert_eq(uas_client_connect(cl[i]), UAS_GOOD);
    }
    cr_assert(env_run_until_count(&e, &w.active, WRITERS + READERS, 20000));
    static op ops[WRITERS + READERS][INFLIGHT];
    for (int i = 0; i < WRITERS + READERS; i++)
        for (int k = 0; k < INFLIGHT; k++) {
            op *o = &ops[i][k];
            memset(o, 0, sizeof(*o));
            o->w = &w;
            o->c = cl[i];
            o->writer = (unsigned)(i * INFLIGHT + k);
            for (size_t n = 0; n < NODES; n++) {
                uas_nodeid id = uas_nodeid_numeric(1, 1001 + (uint32_t)n);
                o->wv[n].node_id = id;
                o->wv[n].attribute_id = ATTR_VALUE;
                o->wv[n].value.has_value = true;
                uas_variant_set_scalar(&o->wv[n].value.value, &o->val, UAS_TYPE(INT32));
                o->rv[n].node_id = id;
                o->rv[n].attribute_id = ATTR_VALUE;
            }
        }
    /* Writer values are distinct per (writer, slot): 16 writer slots. */
    for (int i = 0; i < WRITERS + READERS; i++)
        for (int k = 0; k < INFLIGHT; k++) {
            if (i < WRITERS) {
                ops[i][k].writer = (unsigned)(i * INFLIGHT + k);
                send_write(&ops[i][k]);
            } else {
                send_read(&ops[i][k]);
            }
        }
    size_t target = 20000;
    env_run_until_count(&e, &w.reads, target, 30000);
    w.stop = true; /* the requests still out are answered while closing */
    for (int i = 0; i < WRITERS + READERS; i++)
        env_client_close(cl[i]);
    cr_expect(w.reads >= 1000, "only %zu reads", w.reads);
    cr_expect(w.writes >= 1000, "only %zu writes", w.writes);
    cr_expect_eq(w.bad, 0, "%zu failed requests or results", w.bad);
    cr_expect_eq(w.torn, 0,
                 "%zu of %zu reads mixed two writes (first: value %lld, source timestamp "
                 "BASE%+lld, status 0x%08x)",
                 w.torn, w.reads, (long long)w.first_torn_v, (long long)(w.first_torn_ts - BASE_TS),
                 w.first_torn_st);
    env_stop(&e);
}
