#define _GNU_SOURCE
/* Parking, in memory and without threads of the channel's own: a server
 * channel with an offload hook hands the asymmetric work of an OPN to its
 * owner as jobs (pending), stays held until the owner completes them
 * (resume), and keeps what arrives meanwhile for afterwards, in order. The
 * owner here is the test: it runs a job on another thread, or refuses it
 * (queue full), or drops it (the connection went). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "channel_internal.h"
#include "helper_keys.h"
#include "helper_pipe.h"

#ifdef UAS_ENABLE_ENCRYPTION

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    test_keys_prepare();
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    test_keys_cleanup();
}

enum { MAX_JOBS = 8 };

typedef struct owner {
    uas_channel_job *jobs[MAX_JOBS];
    size_t njobs, next;
    uas_status answer; /* what offload returns (Good) */
} owner;

static uas_status offload(void *ud, uas_channel_job *job)
{
    owner *o = ud;
    if (o->answer != UAS_GOOD)
        return o->answer;
    cr_assert_lt(o->njobs, MAX_JOBS);
    o->jobs[o->njobs++] = job;
    return UAS_GOOD;
}

typedef struct park_pipe {
    pipe p;
    owner o;
    uas_secpol_cred *server_cred, *client_cred;
    uas_channel_offer offer;
} park_pipe;

static uas_secpol_cred *cred_of(test_key_id id)
{
    const test_key *k = test_key_get(id);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(k->cert, k->cert_len, k->key_der, k->key_len, &c), UAS_GOOD);
    return c;
}

static void park_init(park_pipe *pp, const uas_secpol *pol)
{
    memset(pp, 0, sizeof(*pp));
    pp->server_cred = cred_of(TK_RSA2048_A);
    pp->client_cred = cred_of(TK_RSA2048_B);
    uas_channel_config sc, cc;
    pipe_config(&sc, UAS_CHANNEL_SERVER);
    pipe_config(&cc, UAS_CHANNEL_CLIENT);
    pp->offer = (uas_channel_offer){pol, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT};
    sc.cred = pp->server_cred;
    sc.offers = &pp->offer;
    sc.offer_count = 1;
    sc.offload = offload;
    sc.offload_ud = &pp->o;
    cc.cred = pp->client_cred;
    cc.policy = pol;
    cc.mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    size_t n;
    cc.server_cert = uas_secpol_cred_cert(pp->server_cred, &n);
    cc.server_cert_len = n;
    pipe_init(&pp->p, &cc, &sc);
}

static void park_fini(park_pipe *pp)
{
    for (size_t i = pp->o.next; i < pp->o.njobs; i++)
        uas_channel_job_free(pp->o.jobs[i]);
    pipe_fini(&pp->p);
    uas_secpol_cred_unref(pp->server_cred);
    uas_secpol_cred_unref(pp->client_cred);
}

static void *run_job(void *arg)
{
    uas_channel_job_run(arg);
    return NULL;
}

/* Runs the next job on a thread of its own, then completes it here. */
static uas_status finish_next(park_pipe *pp)
{
    cr_assert_lt(pp->o.next, pp->o.njobs, "no job out");
    uas_channel_job *job = pp->o.jobs[pp->o.next++];
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, run_job, job), 0);
    pthread_join(th, NULL);
    return uas_channel_job_done(pp->p.server.ch, job, pp->p.now_ms);
}

/* Client HEL + OPN to the server; nothing from the server yet but ACK. */
static void connect_until_parked(park_pipe *pp)
{
    cr_assert_eq(uas_channel_connect(pp->p.client.ch, "opc.tcp://pipe:4840", 0), UAS_GOOD);
    pipe_transmit(&pp->p, &pp->p.client); /* HEL */
    pipe_transmit(&pp->p, &pp->p.server); /* ACK, the client answers with OPN */
    pipe_transmit(&pp->p, &pp->p.client); /* OPN */
}

static void send_read(park_pipe *pp, uint32_t request_id);

static const uas_secpol *const policies[] = {
    &uas_secpol_basic256sha256,
    &uas_secpol_aes128_sha256_rsaoaep,
    &uas_secpol_aes256_sha256_rsapss,
};

Test(channel_park, opn_is_pending_until_its_jobs_complete)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        park_pipe pp;
        park_init(&pp, policies[i]);
        connect_until_parked(&pp);
        /* Pending: the request's decrypt and verify is out. */
        cr_assert_eq(pp.o.njobs, 1);
        cr_assert(uas_channel_held(pp.p.server.ch));
        cr_assert_eq(uas_channel_get_state(pp.p.server.ch), UAS_CHANNEL_ACKED);
        cr_assert_eq(pp.p.server.out_count, 0, "the server answered before its job ran");
        cr_assert_eq(finish_next(&pp), UAS_GOOD);
        /* The response's signature is a job too; the answer waits for it. */
        cr_assert_eq(pp.o.njobs, 2);
        cr_assert(uas_channel_held(pp.p.server.ch));
        cr_assert_eq(pp.p.server.out_count, 0);
        cr_assert_eq(finish_next(&pp), UAS_GOOD);
        cr_assert_not(uas_channel_held(pp.p.server.ch));
        cr_assert_eq(pp.p.server.out_count, 1);
        pipe_pump(&pp.p);
        cr_assert_eq(uas_channel_get_state(pp.p.client.ch), UAS_CHANNEL_OPEN, "%s",
                     policies[i]->uri);
        cr_assert_eq(uas_channel_get_state(pp.p.server.ch), UAS_CHANNEL_OPEN);
        send_read(&pp, 5);
        pipe_pump(&pp.p);
        cr_assert_eq(pp.p.server.nmsgs, 1);
        park_fini(&pp);
    }
}

/* Opens the channel, finishing the jobs as they come. */
static void open_parked(park_pipe *pp)
{
    connect_until_parked(pp);
    cr_assert_eq(finish_next(pp), UAS_GOOD);
    cr_assert_eq(finish_next(pp), UAS_GOOD);
    pipe_pump(&pp->p);
    cr_assert_eq(uas_channel_get_state(pp->p.client.ch), UAS_CHANNEL_OPEN);
}

static void send_read(park_pipe *pp, uint32_t request_id)
{
    uas_read_value_id id;
    memset(&id, 0, sizeof(id));
    id.node_id = uas_nodeid_numeric(0, 2259);
    id.attribute_id = 13;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = &id;
    req.nodes_to_read_count = 1;
    cr_assert_eq(uas_channel_send(pp->p.client.ch, request_id, &req, UAS_TYPE(READ_REQUEST)),
                 UAS_GOOD);
}

static void hold_first(pipe_end *e, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)body, (void)len;
    if (request_id == 1)
        uas_channel_hold(e->ch);
}

/* The owner parks the first request (as the server parks an
 * ActivateSession): the two after it, which came in the same read, are
 * kept and handed up only when the hold ends, in order. */
Test(channel_park, held_channel_keeps_later_messages_in_order)
{
    park_pipe pp;
    park_init(&pp, &uas_secpol_basic256sha256);
    open_parked(&pp);
    pp.p.server.on_message_hook = hold_first;
    pp.p.split = PIPE_WHOLE;
    send_read(&pp, 1);
    send_read(&pp, 2);
    send_read(&pp, 3);
    cr_assert_eq(pipe_transmit(&pp.p, &pp.p.client), UAS_GOOD);
    cr_assert_eq(pp.p.server.nmsgs, 1);
    cr_assert(uas_channel_held(pp.p.server.ch));
    cr_assert(uas_channel_wants_input(pp.p.server.ch, 65536), "room for more in the backlog");
    cr_assert_eq(uas_channel_release(pp.p.server.ch, pp.p.now_ms), UAS_GOOD);
    cr_assert_eq(pp.p.server.nmsgs, 3);
    for (uint32_t i = 0; i < 3; i++)
        cr_expect_eq(pp.p.server.msgs[i].request_id, i + 1);
    park_fini(&pp);
}

/* A held channel that is fed past its backlog bound ends, instead of
 * buffering without limit. */
Test(channel_park, held_channel_refuses_unbounded_input)
{
    park_pipe pp;
    park_init(&pp, &uas_secpol_basic256sha256);
    open_parked(&pp);
    uas_channel_hold(pp.p.server.ch);
    static uint8_t junk[65536];
    uas_status st = UAS_GOOD;
    for (int i = 0; i < 8 && st == UAS_GOOD; i++) {
        if (!uas_channel_wants_input(pp.p.server.ch, sizeof(junk)))
            cr_assert_gt(i, 0);
        st = uas_channel_recv(pp.p.server.ch, junk, sizeof(junk), pp.p.now_ms);
    }
    cr_expect_eq(st, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES);
    cr_expect_eq(uas_channel_get_state(pp.p.server.ch), UAS_CHANNEL_CLOSED);
    park_fini(&pp);
}

/* The owner's queue is full: ERR BadTcpServerTooBusy, and the client
 * hears it. */
Test(channel_park, refused_offload_ends_the_opn_with_tcp_server_too_busy)
{
    park_pipe pp;
    park_init(&pp, &uas_secpol_basic256sha256);
    pp.o.answer = UAS_BAD_TCP_SERVER_TOO_BUSY;
    connect_until_parked(&pp);
    cr_assert_eq(pp.p.server.last_recv, UAS_BAD_TCP_SERVER_TOO_BUSY);
    cr_assert_eq(uas_channel_get_state(pp.p.server.ch), UAS_CHANNEL_CLOSED);
    pipe_transmit(&pp.p, &pp.p.server);
    cr_assert_eq(uas_channel_get_state(pp.p.client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(pp.p.client.reasons[pp.p.client.nstates - 1], UAS_BAD_TCP_SERVER_TOO_BUSY);
    park_fini(&pp);
}

/* A renewal's verification is a job too; its response is signed inline
 * (the channel keeps sending meanwhile, in sequence). */
Test(channel_park, renewal_verifies_off_the_channel_and_answers_in_sequence)
{
    park_pipe pp;
    park_init(&pp, &uas_secpol_aes256_sha256_rsapss);
    open_parked(&pp);
    uint32_t t1 = uas_channel_get_token_id(pp.p.client.ch);
    pp.p.now_ms += 3600000;
    uas_channel_tick(pp.p.client.ch, pp.p.now_ms);
    pipe_transmit(&pp.p, &pp.p.client);
    cr_assert_eq(pp.o.njobs, 3);
    cr_assert(uas_channel_held(pp.p.server.ch));
    cr_assert_eq(finish_next(&pp), UAS_GOOD);
    cr_assert_eq(pp.o.njobs, 3, "no job for the renewal's response");
    pipe_pump(&pp.p);
    cr_assert_neq(uas_channel_get_token_id(pp.p.client.ch), t1);
    send_read(&pp, 9);
    pipe_pump(&pp.p);
    cr_assert_eq(pp.p.server.nmsgs, 1);
    park_fini(&pp);
}

/* The connection goes while a job is out: the job owns everything it
 * reads, so it still runs safely after the channel is deleted, and is then
 * just freed (ASan/LSan builds check both). */
Test(channel_park, job_outlives_its_channel)
{
    park_pipe pp;
    park_init(&pp, &uas_secpol_basic256sha256);
    connect_until_parked(&pp);
    cr_assert_eq(pp.o.njobs, 1);
    uas_channel_job *job = pp.o.jobs[0];
    pp.o.next = 1;
    uas_channel_delete(pp.p.server.ch);
    pp.p.server.ch = NULL;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, run_job, job), 0);
    pthread_join(th, NULL);
    uas_channel_job_free(job);
    park_fini(&pp);
}

#else

Test(channel_park, skipped_without_encryption)
{
    cr_skip("built without UA_ENABLE_ENCRYPTION");
}

#endif
