/* See helper_env.h. */
#define _GNU_SOURCE
#include "helper_env.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <ua/net.h>
#include <ua/nodeids.h>
#include <ua/pki.h>

#include "server_internal.h"

/* ---- server nodes ---- */

static uas_status add_contract(uas_server *s)
{
    uas_nodeid parent = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    for (uint32_t i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof(name), "BenchmarkValue%u", i);
        int32_t v = (int32_t)i;
        uas_nodeid id = uas_nodeid_numeric(1, 1001 + i);
        uas_qualifiedname bn = {1, uas_string_from(name)};
        uas_variable_attributes a;
        memset(&a, 0, sizeof(a));
        a.display_name.text = uas_string_from(name);
        a.data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
        a.value_rank = -1;
        a.access_level = a.user_access_level = 0x03;
        uas_variant_set_scalar(&a.value, &v, UAS_TYPE(INT32));
        uas_status st = uas_server_add_variable(s, &id, &parent, &organizes, &bn, &type, &a);
        if (st != UAS_GOOD)
            return st;
    }
    return UAS_GOOD;
}

static uas_status demo_add(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                           size_t in_count, const uas_variant *in, size_t *out_count,
                           uas_variant **out, uas_arena *arena)
{
    (void)ud;
    (void)object;
    (void)method;
    (void)in_count;
    int64_t sum = (int64_t) * (const int32_t *)in[0].data + *(const int32_t *)in[1].data;
    if (sum > INT32_MAX || sum < INT32_MIN)
        return UAS_BAD_OUT_OF_RANGE;
    int32_t *r = uas_arena_alloc(arena, sizeof(*r));
    uas_variant *v = uas_arena_calloc(arena, 1, sizeof(*v));
    if (!r || !v)
        return UAS_BAD_OUT_OF_MEMORY;
    *r = (int32_t)sum;
    uas_variant_set_scalar(v, r, UAS_TYPE(INT32));
    *out = v;
    *out_count = 1;
    return UAS_GOOD;
}

static uas_status add_demo(uas_server *s)
{
    uas_nodeid obj = uas_nodeid_string(1, "Demo");
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid has_component = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_nodeid base = uas_nodeid_numeric(0, UAS_NS0ID_BASEOBJECTTYPE);
    uas_qualifiedname bn = {1, uas_string_from("Demo")};
    uas_object_attributes oa;
    memset(&oa, 0, sizeof(oa));
    oa.display_name.text = uas_string_from("Demo");
    uas_status st = uas_server_add_object(s, &obj, &objects, &organizes, &bn, &base, &oa);
    if (st != UAS_GOOD)
        return st;
    uas_nodeid m = uas_nodeid_string(1, "Demo.Add");
    uas_qualifiedname mbn = {1, uas_string_from("Add")};
    uas_method_attributes ma;
    memset(&ma, 0, sizeof(ma));
    ma.display_name.text = uas_string_from("Add");
    ma.executable = ma.user_executable = true;
    uas_argument in[2], out[1];
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    in[0].name = uas_string_from("a");
    in[1].name = uas_string_from("b");
    out[0].name = uas_string_from("sum");
    for (int i = 0; i < 2; i++) {
        in[i].data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
        in[i].value_rank = -1;
    }
    out[0].data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    out[0].value_rank = -1;
    return uas_server_add_method(s, &m, &obj, &has_component, &mbn, &ma, 2, in, 1, out, demo_add,
                                 NULL);
}

/* ns=1;s=Slow: every Read takes ENV_SLOW_MS (its loop is blocked meanwhile,
 * as a slow device driver would block it). */
static uas_status slow_read(void *ud, const uas_nodeid *node, uas_datavalue *out, uas_arena *arena)
{
    (void)ud;
    (void)node;
    struct timespec ts = {0, (long)ENV_SLOW_MS * 1000000L};
    nanosleep(&ts, NULL);
    int32_t *v = uas_arena_alloc(arena, sizeof(*v));
    if (!v)
        return UAS_BAD_OUT_OF_MEMORY;
    *v = 7;
    uas_variant_set_scalar(&out->value, v, UAS_TYPE(INT32));
    out->has_value = true;
    return UAS_GOOD;
}

static uas_status add_slow(uas_server *s)
{
    uas_nodeid id = uas_nodeid_string(1, "Slow");
    uas_nodeid parent = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {1, uas_string_from("Slow")};
    uas_variable_attributes a;
    memset(&a, 0, sizeof(a));
    a.data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    a.value_rank = -1;
    a.access_level = a.user_access_level = 0x01;
    int32_t v = 0;
    uas_variant_set_scalar(&a.value, &v, UAS_TYPE(INT32));
    uas_status st = uas_server_add_variable(s, &id, &parent, &organizes, &bn, &type, &a);
    return st == UAS_GOOD ? uas_server_set_data_source(s, &id, slow_read, NULL, NULL) : st;
}

/* ---- environment ---- */

void env_start(env *e, const env_options *o)
{
    memset(e, 0, sizeof(*e));
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.bind_address = "127.0.0.1";
    cfg.hostname = "127.0.0.1";
    cfg.port = 0;
    cfg.threads = o && o->threads ? o->threads : 1;
#ifdef UAS_SINGLE_LOOP
    cfg.threads = 1; /* the minimal profile: the two-loop scenarios run on its one loop */
#endif
#ifdef UAS_MINIMAL
    /* Its device defaults (8 sessions, 16 connections) are below what the
     * scenarios open; the limits themselves are tested by their own cases. */
    cfg.max_sessions = 10000;
    cfg.max_connections = 1000;
#endif
    cfg.log_level = UAS_LOG_ERROR;
    if (o && o->hello_timeout_ms)
        cfg.hello_timeout_ms = o->hello_timeout_ms;
    if (o && o->max_references_per_node)
        cfg.max_references_per_node = o->max_references_per_node;
    /* The contract nodes are written and called anonymously, as under
     * uaserver --contract; tests of authorization configure their own. */
    cfg.role_permissions = UAS_CONTRACT_PERMISSIONS;
    if (o && o->configure)
        o->configure(&cfg, o->configure_ud);
    e->threads = cfg.threads;
    uas_status st = UAS_GOOD;
    e->server = uas_server_new(&cfg, &st);
    /* UAS_IO_BACKEND=io_uring (the ctest variants) on a kernel that
     * refuses io_uring: nothing of that backend to test here. */
    if (!e->server && st == UAS_BAD_NOT_SUPPORTED)
        cr_skip_test("io_uring is not available on this machine");
    cr_assert(e->server, "uas_server_new: %s", uas_status_name(st));
    /* The backend asked for is the one that runs, so a variant of the
     * suite cannot silently test the other. */
    const char *want =
        cfg.io_backend && *cfg.io_backend ? cfg.io_backend : getenv("UAS_IO_BACKEND");
    if (want && strcmp(want, "auto") != 0)
        cr_assert_str_eq(uas_io_backend_name(uas_loop_io_backend(e->server->loops[0].loop)), want);
    cr_assert_eq(uas_server_add_namespace(e->server, "urn:uastack:server"), 1);
    cr_assert_eq(add_contract(e->server), UAS_GOOD);
    cr_assert_eq(add_demo(e->server), UAS_GOOD);
    cr_assert_eq(add_slow(e->server), UAS_GOOD);
    st = uas_server_start(e->server);
    cr_assert_eq(st, UAS_GOOD, "uas_server_start: %s", uas_status_name(st));
    e->port = uas_server_port(e->server);
    cr_assert_neq(e->port, 0);
    snprintf(e->url, sizeof(e->url), "opc.tcp://127.0.0.1:%u", e->port);
    e->loop = uas_loop_new(16u << 20);
    cr_assert(e->loop);
}

void env_stop(env *e)
{
    if (e->server)
        env_check_alive(e);
    if (e->server) {
        uas_server_stop(e->server);
        uas_server_delete(e->server);
        e->server = NULL;
    }
    if (e->loop) {
        for (int i = 0; i < 8; i++)
            uas_loop_run_once(e->loop, false);
        uas_loop_delete(e->loop);
        e->loop = NULL;
    }
}

uas_client *env_client(env *e, bool session, uint32_t request_timeout_ms)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = session;
    if (request_timeout_ms)
        cfg.request_timeout_ms = request_timeout_ms;
    uas_client *c = uas_client_new(e->loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    uas_status st = uas_client_wait_state(
        c, session ? UAS_CLIENT_SESSION_ACTIVE : UAS_CLIENT_CHANNEL_OPEN, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "connect: %s", uas_status_name(st));
    return c;
}

void env_client_close(uas_client *c)
{
    uas_client_disconnect(c);
    uas_status st = uas_client_wait_state(c, UAS_CLIENT_CLOSED, ENV_WAIT_MS);
    cr_expect_eq(st, UAS_GOOD, "disconnect: %s", uas_status_name(st));
    uas_client_delete(c);
}

typedef struct wake {
    ev_timer t;
    bool fired;
} wake;

static void on_wake(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    ((wake *)w->data)->fired = true;
}

/* A timer of ms from the real now: the loop's cached time is as old as its
 * last iteration, which may be seconds when the test did other work. */
static void wake_start(env *e, wake *w, uint32_t ms)
{
    w->fired = false;
    ev_now_update(uas_loop_ev(e->loop));
    ev_timer_init(&w->t, on_wake, ms / 1000.0, 0.0);
    w->t.data = w;
    ev_timer_start(uas_loop_ev(e->loop), &w->t);
}

bool env_run_until_count(env *e, const size_t *count, size_t target, uint32_t ms)
{
    wake w;
    wake_start(e, &w, ms);
    while (*count < target && !w.fired)
        uas_loop_run_once(e->loop, true);
    ev_timer_stop(uas_loop_ev(e->loop), &w.t);
    return *count >= target;
}

bool env_run_until(env *e, const bool *flag, uint32_t ms)
{
    wake w;
    wake_start(e, &w, ms);
    while (!*flag && !w.fired)
        uas_loop_run_once(e->loop, true);
    ev_timer_stop(uas_loop_ev(e->loop), &w.t);
    return *flag;
}

uas_status env_read(uas_client *c, const uas_nodeid *id, uint32_t attr, uas_datavalue *dv,
                    uas_arena *arena)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = *id;
    rv.attribute_id = attr;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    uas_read_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), arena, ENV_WAIT_MS);
    if (st != UAS_GOOD)
        return st;
    cr_assert_eq(resp.results_count, 1);
    *dv = resp.results[0];
    return UAS_GOOD;
}

int32_t env_read_i32(uas_client *c, uint32_t id)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid nid = uas_nodeid_numeric(1, id);
    uas_datavalue dv;
    uas_status st = env_read(c, &nid, 13, &dv, &a);
    cr_assert_eq(st, UAS_GOOD, "read: %s", uas_status_name(st));
    cr_assert(dv.has_value && dv.value.type == UAS_TYPE(INT32) && !dv.value.is_array);
    cr_assert(!dv.has_status || dv.status == UAS_GOOD);
    int32_t v = *(int32_t *)dv.value.data;
    uas_arena_free(&a);
    return v;
}

void env_check_alive(env *e)
{
    uas_client *c = env_client(e, true, 0);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid state = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    uas_datavalue dv;
    uas_status st = env_read(c, &state, 13, &dv, &a);
    cr_assert_eq(st, UAS_GOOD, "server no longer serves: %s", uas_status_name(st));
    cr_assert(dv.has_value && dv.value.data);
    cr_assert_eq(*(int32_t *)dv.value.data, UAS_SERVER_STATE_RUNNING);
    uas_arena_free(&a);
    env_client_close(c);
}

/* ---- raw sockets ---- */

int raw_connect(env *e)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(e->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

void raw_send(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        cr_assert(n > 0, "send: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

uint32_t raw_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static long read_full(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, p + got, n - got, 0);
        if (r == 0)
            return (long)got;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECONNRESET ? (long)got : -1;
        }
        got += (size_t)r;
    }
    return (long)got;
}

long raw_read_chunk(int fd, uint8_t *buf, size_t cap)
{
    long n = read_full(fd, buf, 8);
    if (n <= 0)
        return n;
    cr_assert_eq(n, 8, "partial chunk header");
    uint32_t size = raw_u32(buf + 4);
    cr_assert(size >= 8 && size <= cap, "chunk size %u", size);
    n = read_full(fd, buf + 8, size - 8);
    cr_assert_eq(n, (long)(size - 8), "truncated chunk");
    return (long)size;
}

void raw_expect_err(int fd, uas_status code)
{
    uint8_t buf[4096];
    long n = raw_read_chunk(fd, buf, sizeof(buf));
    cr_assert(n >= 16, "expected ERR, got %ld bytes", n);
    cr_assert(memcmp(buf, "ERRF", 4) == 0, "expected ERR, got %.4s", (const char *)buf);
    uas_status got = raw_u32(buf + 8);
    cr_assert_eq(got, code, "ERR %s, expected %s", uas_status_name(got), uas_status_name(code));
}

void raw_expect_close(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint8_t buf[256];
    for (;;) {
        int r = poll(&p, 1, ms);
        cr_assert(r == 1, "the server did not close the connection within %d ms", ms);
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return;
        cr_assert(n > 0 || errno == EAGAIN || errno == EINTR, "recv: %s", strerror(errno));
        /* Anything before the close (an ERR) is fine here. */
    }
}

size_t raw_build_hel(env *e, uint8_t *out, size_t cap)
{
    size_t url_len = strlen(e->url);
    size_t n = 8 + 20 + 4 + url_len;
    cr_assert(n <= cap);
    memcpy(out, "HELF", 4);
    put_u32(out + 4, (uint32_t)n);
    put_u32(out + 8, 0);
    put_u32(out + 12, 65536);
    put_u32(out + 16, 65536);
    put_u32(out + 20, 0);
    put_u32(out + 24, 0);
    put_u32(out + 28, (uint32_t)url_len);
    memcpy(out + 32, e->url, url_len);
    return n;
}

/* ---- log capture ---- */

/* Server threads log concurrently with the test thread. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_buf;
static size_t log_len, log_cap;

static void capture_line(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud;
    (void)level;
    size_t m = strlen(module), n = strlen(msg);
    pthread_mutex_lock(&log_lock);
    if (log_len + m + n + 3 > log_cap) {
        size_t cap = (log_cap ? log_cap * 2 : 65536) + m + n + 3;
        char *grown = realloc(log_buf, cap);
        if (!grown) {
            pthread_mutex_unlock(&log_lock);
            return;
        }
        log_buf = grown;
        log_cap = cap;
    }
    memcpy(log_buf + log_len, module, m);
    log_buf[log_len + m] = ' ';
    memcpy(log_buf + log_len + m + 1, msg, n);
    log_buf[log_len + m + 1 + n] = '\n';
    log_len += m + n + 2;
    log_buf[log_len] = 0;
    pthread_mutex_unlock(&log_lock);
}

void env_log_capture(void)
{
    uas_log_set_sink(capture_line, NULL);
}

void env_log_release(void)
{
    uas_log_set_sink(NULL, NULL);
    pthread_mutex_lock(&log_lock);
    free(log_buf);
    log_buf = NULL;
    log_len = log_cap = 0;
    pthread_mutex_unlock(&log_lock);
}

bool env_log_has_bytes(const void *data, size_t len)
{
    pthread_mutex_lock(&log_lock);
    bool found = log_buf && len && memmem(log_buf, log_len, data, len) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

bool env_log_has(const char *text)
{
    return env_log_has_bytes(text, strlen(text));
}

/* ---- certificates ---- */

void env_make_cert(const char *dir, const char *name, const char *uri, uas_bytestring *cert,
                   uas_bytestring *key)
{
#ifndef UAS_ENABLE_ENCRYPTION
    (void)dir, (void)name, (void)uri, (void)cert, (void)key;
    cr_skip_test("no certificates in a build without UA_ENABLE_ENCRYPTION");
#else
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(dir, NULL, &store), UAS_GOOD);
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = uri;
    p.file_name = name;
    uas_status st = uas_pki_ensure_own(store, &p, uas_datetime_now(), cert, key);
    uas_pki_store_close(store);
    cr_assert_eq(st, UAS_GOOD, "certificate for %s: %s", uri, uas_status_name(st));
#endif
}

/* ---- a secured channel driven by hand ---- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes what it can: the server may already have closed the socket (a
 * CLO after its ERR), which is no failure of the test. */
static void send_quietly(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

static uas_status schan_send(void *ud, uas_buf *chunk)
{
    env_schan *s = ud;
    if (s->hold) {
        cr_assert_lt(s->nheld, ENV_HELD_MAX, "too many held chunks");
        env_held *h = &s->held[s->nheld++];
        h->data = malloc(chunk->len);
        cr_assert(h->data);
        memcpy(h->data, chunk->data, chunk->len);
        h->len = chunk->len;
    } else {
        send_quietly(s->fd, chunk->data, chunk->len);
    }
    uas_buf_put(s->pool, chunk);
    return UAS_GOOD;
}

static void schan_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    env_schan *s = ud;
    if (request_id != s->want || s->answer)
        return;
    s->answer = malloc(len ? len : 1);
    cr_assert(s->answer);
    memcpy(s->answer, body, len);
    s->answer_len = len;
}

static void schan_state(void *ud, uas_channel_state state, uas_status reason)
{
    env_schan *s = ud;
    if (state == UAS_CHANNEL_CLOSED)
        s->closed = reason;
}

bool env_schan_pump(env_schan *s, int ms)
{
    static uint8_t buf[1u << 17];
    struct pollfd p = {s->fd, POLLIN, 0};
    if (poll(&p, 1, ms) != 1)
        return false;
    ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
    if (n <= 0)
        return false;
    return uas_channel_recv(s->ch, buf, (size_t)n, mono_ms()) == UAS_GOOD;
}

void env_schan_connect(env *e, env_schan *s, const char *policy_uri, int32_t mode,
                       const uas_bytestring *cert, const uas_bytestring *key,
                       const uas_bytestring *server_cert)
{
    memset(s, 0, sizeof(*s));
    s->pool = uas_bufpool_new(1u << 20);
    cr_assert(s->pool);
    cr_assert_eq(uas_secpol_cred_new(cert->data, cert->length, key->data, key->length, &s->cred),
                 UAS_GOOD);
    uas_channel_config cc;
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    cc.cred = s->cred;
    cc.policy = uas_security_policy(policy_uri, false);
    cr_assert(cc.policy, "unknown policy %s", policy_uri);
    cc.mode = mode;
    cc.server_cert = server_cert->data;
    cc.server_cert_len = server_cert->length;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = schan_send;
    cb.on_message = schan_message;
    cb.on_state = schan_state;
    s->fd = raw_connect(e);
    s->ch = uas_channel_new(&cc, &cb, s, s->pool, mono_ms());
    cr_assert(s->ch);
    cr_assert_eq(uas_channel_connect(s->ch, e->url, mono_ms()), UAS_GOOD);
}

void env_schan_open(env *e, env_schan *s, const char *policy_uri, int32_t mode,
                    const uas_bytestring *cert, const uas_bytestring *key,
                    const uas_bytestring *server_cert)
{
    env_schan_connect(e, s, policy_uri, mode, cert, key, server_cert);
    int64_t end = mono_ms() + ENV_WAIT_MS;
    while (uas_channel_get_state(s->ch) != UAS_CHANNEL_OPEN && mono_ms() < end &&
           env_schan_pump(s, ENV_WAIT_MS))
        ;
    cr_assert_eq(uas_channel_get_state(s->ch), UAS_CHANNEL_OPEN,
                 "the secured channel did not open");
}

void env_schan_drop_held(env_schan *s)
{
    for (size_t i = 0; i < s->nheld; i++)
        free(s->held[i].data);
    s->nheld = 0;
}

void env_schan_close(env_schan *s)
{
    if (s->ch) {
        s->hold = false;
        uas_channel_close(s->ch, UAS_GOOD);
        uas_channel_delete(s->ch);
    }
    if (s->fd >= 0)
        close(s->fd);
    env_schan_drop_held(s);
    free(s->answer);
    uas_secpol_cred_unref(s->cred);
    if (s->pool)
        uas_bufpool_delete(s->pool);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

uint32_t env_schan_send(env_schan *s, void *req, const uas_type *req_type)
{
    static uint32_t handle;
    uas_request_header *h = req; /* the first member of every request */
    uas_request_header saved = *h;
    h->timestamp = uas_datetime_now();
    h->request_handle = ++handle;
    uint32_t id = uas_channel_next_request_id(s->ch);
    uas_status st = uas_channel_send(s->ch, id, req, req_type);
    *h = saved;
    cr_assert_eq(st, UAS_GOOD, "uas_channel_send: %s", uas_status_name(st));
    return id;
}

uas_status env_schan_wait(env_schan *s, uint32_t id, void *resp, const uas_type *resp_type,
                          uas_arena *arena)
{
    if (resp)
        memset(resp, 0, resp_type->size);
    free(s->answer);
    s->answer = NULL;
    s->answer_len = 0;
    s->want = id;
    int64_t end = mono_ms() + ENV_WAIT_MS;
    while (!s->answer && uas_channel_get_state(s->ch) == UAS_CHANNEL_OPEN && mono_ms() < end)
        (void)env_schan_pump(s, (int)(end - mono_ms()));
    if (!s->answer) {
        if (uas_channel_get_state(s->ch) == UAS_CHANNEL_OPEN)
            return UAS_BAD_TIMEOUT;
        return uas_is_bad(s->closed) ? s->closed : UAS_BAD_CONNECTION_CLOSED;
    }
    uas_decoder d;
    uas_decoder_init(&d, s->answer, s->answer_len, arena, NULL);
    uas_nodeid type_id;
    cr_assert_eq(uas_decode(&d, &type_id, &uas_types[UAS_TYPES_NODE_ID]), UAS_GOOD);
    const uas_type *t = type_id.kind == UAS_NODEID_NUMERIC && type_id.ns == 0
                            ? uas_type_by_encoding_id(type_id.id.numeric)
                            : NULL;
    cr_assert(t, "an answer of an unknown type");
    if (t == UAS_TYPE(SERVICE_FAULT)) {
        uas_service_fault f;
        cr_assert_eq(uas_decode(&d, &f, t), UAS_GOOD);
        cr_assert(uas_is_bad(f.response_header.service_result));
        return f.response_header.service_result;
    }
    cr_assert_eq(t, resp_type, "answer %s, expected %s", t->name, resp_type->name);
    if (!resp)
        return UAS_GOOD;
    uas_status st = uas_decode(&d, resp, t);
    cr_assert_eq(st, UAS_GOOD, "decoding %s: %s", t->name, uas_status_name(st));
    return ((const uas_response_header *)resp)->service_result;
}

uas_status env_schan_call(env_schan *s, void *req, const uas_type *req_type, void *resp,
                          const uas_type *resp_type, uas_arena *arena)
{
    return env_schan_wait(s, env_schan_send(s, req, req_type), resp, resp_type, arena);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

bool env_rmtree(const char *dir)
{
    return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}
