/* The worker pool over real sockets: the RSA, argon2id and PKI work of
 * OPN, CreateSession and ActivateSession runs on the pool, never on the
 * loop that serves the connection (issue 11, part 2).
 *
 * The tests make the pool's state certain instead of racing it: they put
 * blocker items of their own on the server's pool (the test links the
 * server library and sees its internals), so a handshake's job provably
 * waits in the queue, or the queue is provably full. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ua/pki.h>
#include <ua/security.h>

#include "../../stack/src/secpol_user.h"
#include "helper_sec.h"
#include "server_internal.h"
#include "workpool.h"

#define POLICY         "http://opcfoundation.org/UA/SecurityPolicy#"
#define B256           POLICY "Basic256Sha256"
#define RSA_OAEP       "http://www.w3.org/2001/04/xmlenc#rsa-oaep"
#define WRONG_PASSWORD "Tr0ub4dor&3"

enum { ENCRYPT = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT };

typedef env_sec sec;

static struct {
    unsigned workers, queue;
} pool;

static void configure(uas_server_config *cfg, env_sec *s)
{
    (void)s;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->worker_threads = pool.workers;
    cfg->worker_queue = pool.queue;
}

static void sec_start(sec *s, unsigned workers, unsigned queue)
{
    pool.workers = workers;
    pool.queue = queue;
    env_sec_start(s, "wpool", configure, NULL);
    cr_assert_eq(uas_workpool_threads(s->e.server->pool), workers);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- blockers: items of the test on the server's pool ---- */

typedef struct blocker {
    uas_work work;
    atomic_bool started, release, finished;
} blocker;

static void blocker_run(uas_work *w)
{
    blocker *b = (blocker *)w;
    atomic_store(&b->started, true);
    while (!atomic_load(&b->release))
        sleep_ms(1);
}

static void blocker_complete(uas_work *w)
{
    atomic_store(&((blocker *)w)->finished, true);
}

static void blocker_discard(uas_work *w)
{
    atomic_store(&((blocker *)w)->finished, true);
}

static void block(sec *s, blocker *b)
{
    memset(b, 0, sizeof(*b));
    b->work.run = blocker_run;
    b->work.complete = blocker_complete;
    b->work.discard = blocker_discard;
    cr_assert_eq(uas_workpool_submit(s->e.server->pool, &b->work), UAS_GOOD);
}

/* Occupies every worker (waits until each runs a blocker). */
static void block_workers(sec *s, blocker *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        block(s, &b[i]);
    for (unsigned i = 0; i < n; i++)
        for (int t = 0; t < ENV_WAIT_MS && !atomic_load(&b[i].started); t++)
            sleep_ms(1);
    for (unsigned i = 0; i < n; i++)
        cr_assert(atomic_load(&b[i].started), "blocker %u never ran", i);
}

static void unblock(blocker *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        atomic_store(&b[i].release, true);
    for (unsigned i = 0; i < n; i++)
        for (int t = 0; t < ENV_WAIT_MS && !atomic_load(&b[i].finished); t++)
            sleep_ms(1);
}

static void wait_pool_idle(sec *s)
{
    for (int t = 0; t < ENV_WAIT_MS && uas_workpool_pending(s->e.server->pool) > 0; t++)
        sleep_ms(1);
    cr_assert_eq(uas_workpool_pending(s->e.server->pool), 0);
}

/* ---- hand-made session requests (as in test_session_security.c) ---- */

static uint32_t send_create(sec *s, env_schan *c)
{
    uint8_t nonce[32];
    for (size_t i = 0; i < sizeof(nonce); i++)
        nonce[i] = (uint8_t)rand();
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.client_description.application_uri = uas_string_from(ENV_CLIENT_URI);
    req.client_description.application_type = UAS_APPLICATION_TYPE_CLIENT;
    req.client_description.application_name.text = uas_string_from("workpool test");
    req.endpoint_url = uas_string_from(s->e.url);
    req.session_name = uas_string_from("workpool test");
    req.client_nonce.length = sizeof(nonce);
    req.client_nonce.data = nonce;
    req.client_certificate = s->cert;
    req.requested_session_timeout = 60000;
    return env_schan_send(c, &req, UAS_TYPE(CREATE_SESSION_REQUEST));
}

static uas_status create_session(sec *s, env_schan *c, uas_arena *arena,
                                 uas_create_session_response *r)
{
    uint32_t id = send_create(s, c);
    return env_schan_wait(c, id, r, UAS_TYPE(CREATE_SESSION_RESPONSE), arena);
}

/* An ActivateSession with the client signature (a bit flipped when
 * bad_signature) and a user name token (the wrong password when
 * bad_password); returns the request id. */
static uint32_t send_activate(sec *s, env_schan *c, const uas_create_session_response *cs,
                              bool bad_signature, bool bad_password)
{
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = cs->authentication_token;
    size_t n = s->server_cert.length + cs->server_nonce.length;
    uint8_t data[8192], sig[1024], cipher[1024];
    cr_assert_leq(n, sizeof(data));
    memcpy(data, s->server_cert.data, s->server_cert.length);
    memcpy(data + s->server_cert.length, cs->server_nonce.data, cs->server_nonce.length);
    size_t len = 0;
    cr_assert_eq(uas_channel_sign(c->ch, data, n, sig, sizeof(sig), &len), UAS_GOOD);
    if (bad_signature)
        sig[len / 2] ^= 0x01;
    req.client_signature.algorithm =
        uas_string_from(uas_security_policy_signature_uri(uas_channel_policy(c->ch)));
    req.client_signature.signature.data = sig;
    req.client_signature.signature.length = len;
    const char *pw = bad_password ? WRONG_PASSWORD : ENV_PASSWORD;
    size_t clen = 0;
    cr_assert_eq(uas_secpol_user_encrypt(s->server_cert.data, s->server_cert.length,
                                         uas_security_policy(B256, false), (const uint8_t *)pw,
                                         strlen(pw), cs->server_nonce.data, cs->server_nonce.length,
                                         cipher, sizeof(cipher), &clen),
                 UAS_GOOD);
    uas_user_name_identity_token t;
    memset(&t, 0, sizeof(t));
    t.policy_id = uas_string_from("username_Basic256Sha256");
    t.user_name = uas_string_from("alice");
    t.password.data = cipher;
    t.password.length = clen;
    t.encryption_algorithm = uas_string_from(RSA_OAEP);
    req.user_identity_token.encoding = UAS_EXTOBJ_DECODED;
    req.user_identity_token.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    req.user_identity_token.content.decoded.data = &t;
    return env_schan_send(c, &req, UAS_TYPE(ACTIVATE_SESSION_REQUEST));
}

static void open_channel(sec *s, env_schan *c)
{
    env_schan_open(&s->e, c, B256, ENCRYPT, &s->cert, &s->key, &s->server_cert);
}

/* Whether anything arrives on c within ms. */
static bool answered_within(env_schan *c, int ms)
{
    return env_schan_pump(c, ms);
}

/* A full queue: with one worker busy and one item waiting (worker_threads
 * 1, worker_queue 1), a new OPN is refused with ERR BadTcpServerTooBusy,
 * a CreateSession with BadTooManySessions and an ActivateSession with
 * BadServerTooBusy, each with a log line; a client on a None channel is
 * served throughout, and once the queue drains everything works again. */
Test(workpool, full_queue_refuses_handshakes_with_status_and_log, .timeout = 120)
{
    sec s;
    sec_start(&s, 1, 1);
    uas_client *reader = env_client(&s.e, true, 0);
    env_schan c1, c2;
    open_channel(&s, &c1);
    open_channel(&s, &c2);
    uas_create_session_response cs;
    cr_assert_eq(create_session(&s, &c1, &s.arena, &cs), UAS_GOOD);

    blocker b[2];
    block_workers(&s, &b[0], 1);
    block(&s, &b[1]); /* waits: the queue (1) is full */

    env_schan c3;
    env_schan_connect(&s.e, &c3, B256, ENCRYPT, &s.cert, &s.key, &s.server_cert);
    for (int i = 0; i < 50 && !c3.closed && env_schan_pump(&c3, 100);)
        i++;
    cr_expect_eq(c3.closed, UAS_BAD_TCP_SERVER_TOO_BUSY, "OPN: %s", uas_status_name(c3.closed));
    env_schan_close(&c3);

    uas_create_session_response cs2;
    cr_expect_eq(create_session(&s, &c2, &s.arena, &cs2), UAS_BAD_TOO_MANY_SESSIONS);
    uas_activate_session_response ar;
    uint32_t id = send_activate(&s, &c1, &cs, false, false);
    cr_expect_eq(env_schan_wait(&c1, id, &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &s.arena),
                 UAS_BAD_SERVER_TOO_BUSY);
    /* The loop is not blocked: a Read on a None channel is answered. */
    for (int i = 0; i < 20; i++)
        cr_assert_eq(env_read_i32(reader, 1001 + (uint32_t)i), i);

    cr_expect(env_log_has("OPN refused: BadTcpServerTooBusy (worker queue full)"));
    cr_expect(env_log_has("CreateSession refused: BadTooManySessions: the worker queue is full"));
    cr_expect(env_log_has("ActivateSession refused: BadServerTooBusy: the worker queue is full"));

    unblock(b, 2);
    wait_pool_idle(&s);
    /* The refused activation took nothing: the same nonce activates. */
    id = send_activate(&s, &c1, &cs, false, false);
    cr_expect_eq(env_schan_wait(&c1, id, &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &s.arena),
                 UAS_GOOD);
    env_schan_close(&c1);
    env_schan_close(&c2);
    env_client_close(reader);
    env_sec_stop(&s);
}

/* Clients that leave while their work waits for a worker: an OPN (RSA), an
 * ActivateSession with a user name (RSA + argon2id) and one whose client
 * signature must be checked. Their results are dropped, nothing leaks
 * (LeakSanitizer in the sanitizer build), and the server keeps serving. */
Test(workpool, client_leaving_while_its_job_is_queued_leaves_nothing, .timeout = 120)
{
    sec s;
    sec_start(&s, 1, 8);
    unsigned base = atomic_load(&s.e.server->counters.current_connections);
    env_schan c1, c2, c3;
    open_channel(&s, &c1);
    open_channel(&s, &c2);
    uas_create_session_response cs1, cs2;
    cr_assert_eq(create_session(&s, &c1, &s.arena, &cs1), UAS_GOOD);
    cr_assert_eq(create_session(&s, &c2, &s.arena, &cs2), UAS_GOOD);

    blocker b;
    block_workers(&s, &b, 1);
    (void)send_activate(&s, &c1, &cs1, false, false); /* argon2id */
    (void)send_activate(&s, &c2, &cs2, true, false);  /* a bad client signature */
    env_schan_connect(&s.e, &c3, B256, ENCRYPT, &s.cert, &s.key, &s.server_cert);
    /* The ACK comes from the loop; the OPN that follows it waits. */
    cr_assert(env_schan_pump(&c3, ENV_WAIT_MS));
    for (int t = 0; t < ENV_WAIT_MS && uas_workpool_pending(s.e.server->pool) < 4; t++)
        sleep_ms(1);
    cr_assert_eq(uas_workpool_pending(s.e.server->pool), 4, "the three jobs wait for the worker");
    /* Gone without a word. */
    shutdown(c1.fd, SHUT_RDWR);
    shutdown(c2.fd, SHUT_RDWR);
    shutdown(c3.fd, SHUT_RDWR);
    for (int t = 0;
         t < ENV_WAIT_MS && atomic_load(&s.e.server->counters.current_connections) > base + 3; t++)
        sleep_ms(1);
    for (int t = 0;
         t < ENV_WAIT_MS && atomic_load(&s.e.server->counters.current_connections) > base; t++)
        sleep_ms(1);
    cr_assert_eq(atomic_load(&s.e.server->counters.current_connections), base,
                 "the server noticed the three closes while their jobs waited");
    unblock(&b, 1);
    wait_pool_idle(&s);
    /* The dropped results activated nothing. */
    cr_expect_not(env_log_has("ActivateSession refused"));
    env_schan_close(&c1);
    env_schan_close(&c2);
    env_schan_close(&c3);
    /* Still serving secured clients. */
    env_schan c4;
    open_channel(&s, &c4);
    uas_create_session_response cs4;
    cr_assert_eq(create_session(&s, &c4, &s.arena, &cs4), UAS_GOOD);
    uas_activate_session_response ar;
    uint32_t id = send_activate(&s, &c4, &cs4, false, false);
    cr_expect_eq(env_schan_wait(&c4, id, &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &s.arena),
                 UAS_GOOD);
    env_schan_close(&c4);
    env_sec_stop(&s);
}

/* Requests that arrive while an ActivateSession waits for a worker: the
 * server keeps reading until the channel's backlog (its receive buffer
 * plus two reads, 192 KiB here) is full, then stops reading; with io_uring
 * what the ring received past that point waits in the connection's stash
 * (stack/src/net.c, drain_stash) while the receive is cancelled. Once the
 * activation is done every request is processed, in order: the last
 * answer arrives on a channel whose signed and sequence-numbered chunks
 * would fail on a byte lost, doubled or reordered. */
Test(workpool, requests_behind_a_parked_activation_are_all_answered, .timeout = 120)
{
    enum { READS = 128, NODES = 100 }; /* about 2 KiB per request, 256 KiB in all */
    sec s;
    sec_start(&s, 1, 8);
    env_schan c;
    open_channel(&s, &c);
    uas_create_session_response cs;
    cr_assert_eq(create_session(&s, &c, &s.arena, &cs), UAS_GOOD);

    blocker b;
    block_workers(&s, &b, 1);
    uint32_t act = send_activate(&s, &c, &cs, false, false); /* waits for the worker */
    uas_read_value_id ids[NODES];
    memset(ids, 0, sizeof(ids));
    for (int i = 0; i < NODES; i++) {
        ids[i].node_id = uas_nodeid_numeric(1, 1001 + (uint32_t)i);
        ids[i].attribute_id = 13;
    }
    uint32_t last = 0;
    for (int r = 0; r < READS; r++) {
        uas_read_request req;
        memset(&req, 0, sizeof(req));
        req.request_header.authentication_token = cs.authentication_token;
        req.nodes_to_read_count = NODES;
        req.nodes_to_read = ids;
        last = env_schan_send(&c, &req, UAS_TYPE(READ_REQUEST));
    }
    sleep_ms(200); /* the server reads what it may meanwhile */
    cr_assert_eq(uas_channel_get_state(c.ch), UAS_CHANNEL_OPEN);
    unblock(&b, 1);

    uas_activate_session_response ar;
    cr_assert_eq(env_schan_wait(&c, act, &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &s.arena),
                 UAS_GOOD);
    uas_read_response rr;
    uas_status st = env_schan_wait(&c, last, &rr, UAS_TYPE(READ_RESPONSE), &s.arena);
    cr_assert_eq(st, UAS_GOOD, "the last Read: %s", uas_status_name(st));
    cr_assert_eq(rr.results_count, NODES);
    for (int i = 0; i < NODES; i++)
        cr_assert(rr.results[i].has_value && *(int32_t *)rr.results[i].value.data == i);
    cr_expect_not(env_log_has("too much input while a request is parked"));
    env_schan_close(&c);
    env_sec_stop(&s);
}

/* ---- a login storm ---- */

enum { STORM_CHANNELS = 4, STORM_ROUNDS = 3 };

typedef struct storm {
    sec *s;
    atomic_int done;
    atomic_int refused; /* activations answered with a Bad status */
    atomic_int wrong;   /* answered Good or not at all */
} storm;

/* New channel + CreateSession + ActivateSession with a wrong password or
 * a wrong signature, again and again, on its own thread. */
static void *storm_thread(void *arg)
{
    storm *st = arg;
    sec *s = st->s;
    uas_arena arena;
    uas_arena_init(&arena, NULL, 0, 0);
    for (int i = 0; i < STORM_ROUNDS * STORM_CHANNELS; i++) {
        env_schan c;
        open_channel(s, &c);
        uas_create_session_response cs;
        if (create_session(s, &c, &arena, &cs) != UAS_GOOD) {
            atomic_fetch_add(&st->wrong, 1);
        } else {
            uint32_t id = send_activate(s, &c, &cs, i % 2 == 1, i % 2 == 0);
            uas_activate_session_response ar;
            uas_status r = env_schan_wait(&c, id, &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &arena);
            if (uas_is_bad(r) && r != UAS_BAD_TIMEOUT)
                atomic_fetch_add(&st->refused, 1);
            else
                atomic_fetch_add(&st->wrong, 1);
        }
        env_schan_close(&c);
        uas_arena_reset(&arena);
    }
    uas_arena_free(&arena);
    atomic_store(&st->done, 1);
    return NULL;
}

/* Wrong passwords and wrong signatures in bulk, on the one loop that also
 * serves a reader. First with the worker held: the logins' answers cannot
 * come (their work waits on the pool, not on the loop) while the reader's
 * Reads are all answered; then released, each login gets its refusal.
 * Then a free-running storm on another thread while the reader keeps
 * reading: every Read is answered and every login refused. */
Test(workpool, login_storm_leaves_reader_served, .timeout = 300)
{
    sec s;
    sec_start(&s, 1, 64);
    uas_client *reader = env_client(&s.e, true, 0);
    env_schan c[STORM_CHANNELS];
    uas_create_session_response cs[STORM_CHANNELS];
    uas_arena arenas[STORM_CHANNELS];
    for (int i = 0; i < STORM_CHANNELS; i++) {
        uas_arena_init(&arenas[i], NULL, 0, 0);
        open_channel(&s, &c[i]);
        cr_assert_eq(create_session(&s, &c[i], &arenas[i], &cs[i]), UAS_GOOD);
    }
    blocker b;
    block_workers(&s, &b, 1);
    uint32_t ids[STORM_CHANNELS];
    for (int i = 0; i < STORM_CHANNELS; i++)
        ids[i] = send_activate(&s, &c[i], &cs[i], i % 2 == 1, i % 2 == 0);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(env_read_i32(reader, 1001 + (uint32_t)(i % 100)), i % 100);
    for (int i = 0; i < STORM_CHANNELS; i++)
        cr_assert_not(answered_within(&c[i], 0), "login %d answered while its work waited", i);
    unblock(&b, 1);
    for (int i = 0; i < STORM_CHANNELS; i++) {
        uas_activate_session_response ar;
        uas_status r =
            env_schan_wait(&c[i], ids[i], &ar, UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &arenas[i]);
        cr_expect_eq(
            r, i % 2 == 1 ? UAS_BAD_APPLICATION_SIGNATURE_INVALID : UAS_BAD_USER_ACCESS_DENIED,
            "login %d: %s", i, uas_status_name(r));
        env_schan_close(&c[i]);
        uas_arena_free(&arenas[i]);
    }

    storm st = {.s = &s};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, storm_thread, &st), 0);
    size_t reads = 0;
    while (!atomic_load(&st.done)) {
        cr_assert_eq(env_read_i32(reader, 1001 + (uint32_t)(reads % 100)), (int32_t)(reads % 100));
        reads++;
    }
    pthread_join(th, NULL);
    cr_expect_eq(atomic_load(&st.refused), STORM_ROUNDS * STORM_CHANNELS);
    cr_expect_eq(atomic_load(&st.wrong), 0);
    cr_expect_gt(reads, 0, "the reader was served during the storm");
    cr_expect(env_log_has("ActivateSession refused"));
    env_client_close(reader);
    env_sec_stop(&s);
}
