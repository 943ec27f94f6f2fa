#define _GNU_SOURCE
/* Bounds against abandoned and abusive peers, over real sockets: the
 * listener at the descriptor limit, idle channels without a session, the
 * activation deadline and the quotas of unactivated sessions, None
 * channels on a server without a None endpoint, and log lines carrying
 * peer text. Each test shows a second, normal client still served (and
 * env_stop a fresh one). */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <ua/nodeids.h>

#include "helper_env.h"
#include "server_internal.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Runs the test loop for ms (clients keep being served meanwhile). */
static void run_for(env *e, uint32_t ms)
{
    bool never = false;
    env_run_until(e, &never, ms);
}

/* A client with an open channel and no session. */
static uas_client *channel_only(env *e)
{
    return env_client(e, false, 0);
}

/* A hand-made CreateSession on c's channel (never activated by it). */
static uas_status create_session(uas_client *c, const char *name, uas_nodeid *token)
{
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.client_description.application_uri = uas_string_from("urn:uastack:test:dos");
    req.client_description.application_type = UAS_APPLICATION_TYPE_CLIENT;
    req.session_name = uas_string_from(name);
    req.requested_session_timeout = 600000; /* as long as the server allows */
    /* Any token: CreateSession ignores it, the client library wants one
     * for a request outside its own session set-up. */
    req.request_header.authentication_token = uas_nodeid_numeric(0, 1);
    uas_create_session_response resp;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_SESSION_REQUEST), &resp,
                                         UAS_TYPE(CREATE_SESSION_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD && token)
        *token = resp.authentication_token; /* a GUID: no memory in the arena */
    uas_arena_free(&a);
    return st;
}

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)c, (void)resp, (void)t;
    uas_status *out = ud;
    *out = st;
}

/* ActivateSession of token on c's channel (anonymous). */
static uas_status activate(env *e, uas_client *c, const uas_nodeid *token)
{
    uas_status st = UAS_BAD_TIMEOUT;
    cr_assert_eq(uas_client_activate_session(c, token, on_activated, &st), UAS_GOOD);
    for (int i = 0; i < 100 && st == UAS_BAD_TIMEOUT; i++)
        run_for(e, 50);
    return st;
}

static void expect_reads(uas_client *c)
{
    cr_expect_eq(env_read_i32(c, 1001), 0, "a normal client is still served");
}

/* Waits (up to ms) until the server holds n sessions. */
static bool sessions_become(env *e, uint32_t n, uint32_t ms)
{
    for (uint32_t waited = 0; waited <= ms; waited += 50) {
        if (uas_sessions_count(e->server->sessions) == n)
            return true;
        run_for(e, 50);
    }
    return false;
}

/* ---- the listener at the descriptor limit ---- */

static atomic_uint accept_lines;

static void count_accept_lines(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level;
    if (!strcmp(module, "server") && strstr(msg, "accept"))
        atomic_fetch_add(&accept_lines, 1);
}

static void warn_level(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->log_level = UAS_LOG_WARN;
}

/* Descriptors the rest of the process frees while the test holds the
 * table full (a socket the server closes late, a file a timer opened)
 * would let one accept through: the test takes every freed slot back. */
static int filler[1024];
static size_t nfill;

static int top_up(int like)
{
    int fd;
    while (nfill < 1024 && (fd = dup(like)) >= 0)
        filler[nfill++] = fd;
    return errno;
}

static void hold_full(int like, long ms)
{
    for (long t = 0; t < ms; t += 5) {
        top_up(like);
        sleep_ms(5);
    }
}

Test(dos, accept_pauses_while_descriptors_run_out, .timeout = 60)
{
    /* The process (server included) out of descriptors: a low soft limit,
     * filled up. The limit is lowered before the server starts: an
     * io_uring accept checks the limit of the moment it was armed, and
     * a server's limit is normally set before it starts anyway. */
    struct rlimit old, low;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    if (low.rlim_cur > 512)
        low.rlim_cur = 512;
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    env e;
    env_options o = {.configure = warn_level};
    env_start(&e, &o);
    uas_log_set_sink(count_accept_lines, NULL);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(e.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int c = -1, rc = -1, connect_errno = 0, fill_errno = 0;
    unsigned failures = 0, lines = 0;
    /* A slot freed between the last top-up and the server's accept lets
     * that accept through: the client is then served at once, which
     * proves nothing, and the attempt is repeated on a new connection. */
    for (int attempt = 0; attempt < 3 && failures == 0; attempt++) {
        if (c >= 0) {
            close(c);
            if (nfill)
                close(filler[--nfill]);
        }
        c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert(c >= 0, "socket: %s", strerror(errno));
        struct timeval tv = {3, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        fill_errno = top_up(c);
        hold_full(c, 100);
        /* A client arrives: the kernel completes the handshake, accept()
         * fails with EMFILE. */
        rc = connect(c, (struct sockaddr *)&a, sizeof(a));
        connect_errno = errno;
        hold_full(c, 1500);
        failures = atomic_load(&e.server->counters.accept_failures);
        lines = atomic_load(&accept_lines);
    }
    while (nfill)
        close(filler[--nfill]);
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    cr_assert_eq(fill_errno, EMFILE, "the descriptors did not run out: %s", strerror(fill_errno));
    cr_assert_eq(rc, 0, "connect: %s", strerror(connect_errno));
    /* It hit the limit, and retried a bounded number of times (a pause
     * doubling to 1 s) instead of spinning on the ready listener. */
    cr_expect_geq(failures, 1, "accept never failed in 3 attempts: the test proved nothing");
    cr_expect_leq(failures, 30, "accept retried %u times in 1.5 s: it spins", failures);
    cr_expect_leq(lines, 11, "%u log lines about accept in 1.5 s", lines);
    /* Descriptors are back: the waiting client is accepted and served. */
    uint8_t buf[4096];
    size_t n = raw_build_hel(&e, buf, sizeof(buf));
    raw_send(c, buf, n);
    long got = raw_read_chunk(c, buf, sizeof(buf));
    cr_expect(got >= 8 && memcmp(buf, "ACKF", 4) == 0, "no ACK after the descriptors came back");
    close(c);
    uas_log_set_sink(NULL, NULL);
    env_stop(&e);
}

/* ---- channels without a session ---- */

static void short_idle(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->channel_idle_timeout_ms = 300;
}

Test(dos, channel_without_session_closes_when_idle, .timeout = 60)
{
    env e;
    env_options o = {.configure = short_idle};
    env_start(&e, &o);
    uas_client *idle = channel_only(&e);
    uas_client *normal = env_client(&e, true, 0);
    /* (A connection that never opens a channel is the HEL timeout's.) */
    uas_status st = uas_client_wait_state(idle, UAS_CLIENT_CLOSED, ENV_WAIT_MS);
    cr_expect_eq(st, UAS_GOOD, "the idle channel was not closed: %s", uas_status_name(st));
    cr_expect_eq(uas_client_get_reason(idle), UAS_BAD_TIMEOUT, "closed by %s",
                 uas_status_name(uas_client_get_reason(idle)));
    cr_expect_geq(atomic_load(&e.server->counters.idle_channels_closed), 1);
    /* The channel with a session idled as long and stays. */
    run_for(&e, 600);
    cr_expect_eq(uas_client_get_state(normal), UAS_CLIENT_SESSION_ACTIVE);
    expect_reads(normal);
    uas_client_delete(idle);
    env_client_close(normal);
    env_stop(&e);
}

/* ---- unactivated sessions ---- */

static void small_table(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_sessions = 5;
    cfg->max_unactivated_per_channel = 3;
    cfg->session_activation_timeout_ms = 500;
    cfg->log_level = UAS_LOG_INFO;
}

Test(dos, one_connection_cannot_hold_the_session_table, .timeout = 60)
{
    env_log_capture();
    env e;
    env_options o = {.configure = small_table};
    env_start(&e, &o);
    /* One connection: three unactivated sessions, then refused. */
    uas_client *x = channel_only(&e);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(create_session(x, "x", NULL), UAS_GOOD, "session %d", i);
    cr_expect_eq(create_session(x, "x", NULL), UAS_BAD_TOO_MANY_SESSIONS);
    cr_expect(env_log_has("max_unactivated_per_channel"), "the refusal is logged");
    /* A second connection fills the table; a third client finds it full. */
    uas_client *y = channel_only(&e);
    cr_assert_eq(create_session(y, "y", NULL), UAS_GOOD);
    cr_assert_eq(create_session(y, "y", NULL), UAS_GOOD);
    uas_client *z = channel_only(&e);
    cr_expect_eq(create_session(z, "z", NULL), UAS_BAD_TOO_MANY_SESSIONS);
    /* They leave without activating: past the activation deadline (not
     * their requested hour) the sessions are gone... */
    uas_client_delete(x);
    uas_client_delete(y);
    cr_expect(sessions_become(&e, 0, ENV_WAIT_MS), "unactivated sessions still held: %u",
              uas_sessions_count(e.server->sessions));
    cr_expect(env_log_has("not activated"));
    /* ... and others get sessions again. */
    uas_nodeid token;
    cr_expect_eq(create_session(z, "z", &token), UAS_GOOD);
    cr_expect_eq(activate(&e, z, &token), UAS_GOOD);
    expect_reads(z);
    uas_client *normal = env_client(&e, true, 0);
    expect_reads(normal);
    env_client_close(normal);
    env_client_close(z);
    env_stop(&e);
    env_log_release();
}

static void address_quota(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_unactivated_per_channel = 2;
    cfg->max_unactivated_per_address = 3;
    cfg->session_activation_timeout_ms = 1000;
}

Test(dos, unactivated_sessions_per_address_are_bounded, .timeout = 60)
{
    env e;
    env_options o = {.configure = address_quota};
    env_start(&e, &o);
    uas_client *a = channel_only(&e);
    uas_client *b = channel_only(&e);
    uas_nodeid token;
    cr_assert_eq(create_session(a, "a", &token), UAS_GOOD);
    cr_assert_eq(create_session(a, "a", NULL), UAS_GOOD);
    cr_assert_eq(create_session(b, "b", NULL), UAS_GOOD);
    cr_expect_eq(uas_sessions_unactivated_from(e.server->sessions, "127.0.0.1"), 3);
    /* Another connection of the same address does not escape the quota. */
    cr_expect_eq(create_session(b, "b", NULL), UAS_BAD_TOO_MANY_SESSIONS);
    /* An activation frees its place. */
    cr_expect_eq(activate(&e, a, &token), UAS_GOOD);
    cr_expect_eq(uas_sessions_unactivated_from(e.server->sessions, "127.0.0.1"), 2);
    cr_expect_eq(create_session(b, "b", NULL), UAS_GOOD);
    expect_reads(a);
    uas_client_delete(b);
    env_client_close(a);
    /* b's sessions end at their activation deadline; then the address
     * has room for env_stop's fresh client again. */
    cr_expect(sessions_become(&e, 0, ENV_WAIT_MS));
    env_stop(&e);
}

/* ---- log lines with peer text ---- */

static void short_activation(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->session_activation_timeout_ms = 200;
    cfg->log_level = UAS_LOG_INFO;
}

Test(dos, session_name_cannot_forge_log_lines, .timeout = 60)
{
    env_log_capture();
    env e;
    env_options o = {.configure = short_activation};
    env_start(&e, &o);
    uas_client *c = channel_only(&e);
    cr_assert_eq(create_session(c, "\n ERROR [security] forged\x1b[31m\xc2\x9b", NULL), UAS_GOOD);
    cr_assert(sessions_become(&e, 0, ENV_WAIT_MS), "the session did not expire");
    /* Logged (the expiry names the session), escaped: no line break, no
     * terminal escape, no C1 control. */
    cr_expect(env_log_has("\\n ERROR [security] forged\\x1b[31m\\xc2\\x9b"),
              "the session name is missing from the log, or not escaped");
    cr_expect_not(env_log_has("\n ERROR [security] forged"), "a forged line");
    cr_expect_not(env_log_has_bytes("\x1b", 1), "an escape sequence reached the log");
    cr_expect_not(env_log_has_bytes("\xc2\x9b", 2), "a C1 control reached the log");
    uas_client_delete(c);
    env_stop(&e);
    env_log_release();
}

/* ---- None on a server without a None endpoint ---- */

#ifdef UAS_ENABLE_ENCRYPTION /* a secured endpoint beside discovery over None */
static char pki_root[64];

static void secured_only(uas_server_config *cfg, void *ud)
{
    (void)ud;
    static char server_pki[128];
    snprintf(server_pki, sizeof(server_pki), "%s/server", pki_root);
    cfg->security = "Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = server_pki;
    cfg->auto_accept = true;
}

Test(dos, none_channel_serves_discovery_only, .timeout = 60)
{
    snprintf(pki_root, sizeof(pki_root), "/tmp/uas-dos-XXXXXX");
    cr_assert(mkdtemp(pki_root));
    env e;
    env_options o = {.configure = secured_only};
    env_start(&e, &o);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    /* Discovery over None works: that is how clients learn the
     * certificate they secure the channel with. */
    uas_client *none = channel_only(&e);
    uas_get_endpoints_request ge;
    memset(&ge, 0, sizeof(ge));
    uas_get_endpoints_response ger;
    cr_expect_eq(uas_client_call_sync(none, &ge, UAS_TYPE(GET_ENDPOINTS_REQUEST), &ger,
                                      UAS_TYPE(GET_ENDPOINTS_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_GOOD);
    cr_expect_eq(ger.endpoints_count, 1);
    uas_find_servers_request fs;
    memset(&fs, 0, sizeof(fs));
    uas_find_servers_response fsr;
    cr_expect_eq(uas_client_call_sync(none, &fs, UAS_TYPE(FIND_SERVERS_REQUEST), &fsr,
                                      UAS_TYPE(FIND_SERVERS_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_GOOD);
    /* Nothing else: no session, and no session service even with a token
     * someone else holds. */
    cr_expect_eq(create_session(none, "none", NULL), UAS_BAD_SECURITY_POLICY_REJECTED);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    char client_pki[128];
    snprintf(client_pki, sizeof(client_pki), "%s/client", pki_root);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    cfg.security.policy_uri = POLICY "Basic256Sha256";
    cfg.security.mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    cfg.security.pki_dir = client_pki;
    cfg.security.accept_any_server_cert = true;
    uas_bytestring server_cert = {0, NULL};
    cr_assert_eq(uas_client_select_endpoint(e.loop, e.url, cfg.security.policy_uri,
                                            cfg.security.mode, ENV_WAIT_MS, &server_cert, NULL),
                 UAS_GOOD);
    cfg.security.server_cert = server_cert.data;
    cfg.security.server_cert_len = server_cert.length;
    uas_client *secure = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert(secure);
    cr_assert_eq(uas_client_connect(secure), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(secure, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = uas_nodeid_numeric(1, 1001);
    rv.attribute_id = 13;
    uas_read_request rr;
    memset(&rr, 0, sizeof(rr));
    rr.nodes_to_read_count = 1;
    rr.nodes_to_read = &rv;
    rr.request_header.authentication_token = *uas_client_auth_token(secure);
    uas_read_response rres;
    cr_expect_eq(uas_client_call_sync(none, &rr, UAS_TYPE(READ_REQUEST), &rres,
                                      UAS_TYPE(READ_RESPONSE), &a, ENV_WAIT_MS),
                 UAS_BAD_SECURITY_POLICY_REJECTED);
    uas_nodeid token = *uas_client_auth_token(secure);
    cr_expect_eq(activate(&e, none, &token), UAS_BAD_SECURITY_POLICY_REJECTED);
    /* The secured client is served throughout. */
    expect_reads(secure);
    env_client_close(none);
    env_client_close(secure);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    uas_arena_free(&a);
    /* env_stop proves liveness with a None session, which this server
     * refuses: the secured client above proved it. */
    uas_server_stop(e.server);
    uas_server_delete(e.server);
    e.server = NULL;
    env_stop(&e);
    cr_expect(env_rmtree(pki_root));
}
#endif /* UAS_ENABLE_ENCRYPTION */
