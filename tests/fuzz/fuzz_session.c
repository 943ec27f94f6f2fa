/* libFuzzer target for the session level: decode -> dispatch -> service ->
 * encode over the live address space of uaserver (namespace 0, the
 * benchmark contract and the demo nodes of server/app/app_nodes.c, with the
 * contract's permissions so writes and calls get through).
 *
 * One server (one loop, policy None, not listening) lives for the whole
 * run. Each input gets a fresh connection on a socketpair taken over by the
 * dispatcher (uas_dispatch_accept): the harness opens the channel with a
 * client uas_channel, creates and activates an anonymous session, feeds
 * the input's requests, closes the session (deleting its subscriptions)
 * and the socket, and drives the server's loop (uas_server_run_once) in
 * between. After each input the server must be back where it was: no
 * session, subscription or connection left over (sessions the input
 * created itself are expired first, as their timeout would).
 *
 * Input: byte 0 flags (bit 0: let the loop run a few more iterations after
 * each request, so Publish answers and keep-alives go out), byte 1 unused,
 * then frames of [u16 LE length | kind | request body]. The body is a
 * whole message as on the wire after the sequence header: encoding NodeId
 * and request. Kind bit 0: the authentication token of the request header
 * is replaced by the harness session's (the header is decoded and encoded
 * again), so the fuzzer needs no guess of a random GUID; a CloseSession
 * request then has deleteSubscriptions forced true (the harness cannot
 * delete orphaned subscriptions). Bodies longer than one chunk are cut.
 * The seeds are the requests of our own uacli commands, recorded by
 * tests/fuzz/capture_proxy.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/codec.h>
#include <ua/log.h>
#include <ua/server.h>

#include "app.h"
#include "channel_internal.h"
#include "dispatch.h"
#include "svc_subscription.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { BUF = 65536, MAX_BODY = BUF - 64 };

static uas_server *srv;
static char pki_dir[64];

typedef struct harness {
    int fd; /* our end of the socketpair */
    uas_bufpool *pool;
    uas_channel *ch;
    uint8_t token_mem[64];
    uas_nodeid token; /* the session's authentication token */
    bool have_token;
    bool session_answered;
    uint32_t answers;
    uint8_t rx[BUF];
} harness;

static void quiet(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level;
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "%s: %s\n", module, msg);
}

static void remove_pki_dir(void)
{
    rmdir(pki_dir); /* empty with policy None; left alone otherwise */
}

static void init(void)
{
    uas_log_set_sink(quiet, NULL);
    snprintf(pki_dir, sizeof(pki_dir), "/tmp/fuzz_session_pki.XXXXXX");
    if (!mkdtemp(pki_dir))
        abort();
    atexit(remove_pki_dir);
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1;
    cfg.port = 0;
    /* A small session table: the harness has one session at a time, and
     * the expiry sweep after each input scans every slot. */
    cfg.max_sessions = 64;
    cfg.security = "None";
    cfg.pki_dir = pki_dir;
    cfg.log_level = UAS_LOG_ERROR;
    cfg.role_permissions = UAS_CONTRACT_PERMISSIONS;
    uas_status st;
    srv = uas_server_new(&cfg, &st);
    if (!srv || app_add_contract_nodes(srv, NULL, 0) != UAS_GOOD ||
        app_add_demo_nodes(srv) != UAS_GOOD) {
        fprintf(stderr, "fuzz_session: no server: %s\n", uas_status_name(st));
        abort();
    }
    uas_log_set_sink(quiet, NULL); /* the server set its own level */
}

static uas_status on_send(void *ud, uas_buf *chunk)
{
    harness *h = ud;
    size_t off = 0;
    while (off < chunk->len) {
        ssize_t n = write(h->fd, chunk->data + off, chunk->len - off);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            uas_server_run_once(srv); /* let the server drain its side */
        } else {
            uas_buf_put(h->pool, chunk);
            return UAS_BAD_CONNECTION_CLOSED;
        }
    }
    uas_buf_put(h->pool, chunk);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    harness *h = ud;
    (void)request_id;
    h->answers++;
    uint8_t mem[4096];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_decoder d;
    uas_decoder_init(&d, body, len, &a, NULL);
    uas_nodeid type;
    if (uas_decode(&d, &type, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD)
        abort(); /* the server sent something that is no message */
    if (getenv("FZ_VERBOSE")) {
        const uas_type *t = uas_type_by_encoding_id(type.id.numeric);
        fprintf(stderr, "fuzz_session: answer %s\n", t ? t->name : "?");
    }
    if (type.id.numeric == UAS_TYPE(CREATE_SESSION_RESPONSE)->binary_encoding_id &&
        !h->have_token) {
        uas_create_session_response r;
        if (uas_decode(&d, &r, UAS_TYPE(CREATE_SESSION_RESPONSE)) == UAS_GOOD &&
            r.authentication_token.kind == UAS_NODEID_GUID) {
            h->token = r.authentication_token;
            h->have_token = true;
        }
    } else if (type.id.numeric == UAS_TYPE(ACTIVATE_SESSION_RESPONSE)->binary_encoding_id) {
        h->session_answered = true;
    }
    uas_arena_free(&a);
}

/* Runs the server's loop and reads what it sent until it is quiet. */
static void pump(harness *h, int rounds)
{
    int quiet_rounds = 0;
    for (int i = 0; i < 200 && quiet_rounds < rounds; i++) {
        uas_server_run_once(srv);
        ssize_t n = read(h->fd, h->rx, sizeof(h->rx));
        if (n > 0) {
            quiet_rounds = 0;
            if (h->ch && uas_channel_get_state(h->ch) != UAS_CHANNEL_CLOSED)
                uas_channel_recv(h->ch, h->rx, (size_t)n, 1000);
        } else {
            quiet_rounds++;
        }
    }
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
    p[3] = (uint8_t)(v >> 24);
}

/* One MSG chunk with this body, numbered by the client channel. */
static void send_body(harness *h, const uint8_t *body, size_t len)
{
    static uint8_t chunk[BUF];
    uas_channel *ch = h->ch;
    if (len > MAX_BODY)
        len = MAX_BODY;
    memcpy(chunk, "MSGF", 4);
    put_u32(chunk + 4, (uint32_t)(24 + len));
    put_u32(chunk + 8, ch->channel_id);
    put_u32(chunk + 12, ch->send_token_id);
    put_u32(chunk + 16, ch->send_seq);
    ch->send_seq++;
    put_u32(chunk + 20, uas_channel_next_request_id(ch));
    memcpy(chunk + 24, body, len);
    size_t total = 24 + len, off = 0;
    while (off < total) {
        ssize_t n = write(h->fd, chunk + off, total - off);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno == EAGAIN)
            pump(h, 1);
        else
            return;
    }
}

/* The body with our session's token in its request header. */
static size_t patch_token(harness *h, const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
    uint8_t mem[65536];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 4 << 20);
    uas_decoder d;
    uas_decoder_init(&d, in, len, &a, NULL);
    uas_nodeid type;
    size_t n = 0;
    if (uas_decode(&d, &type, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD)
        goto done;
    uas_encoder e;
    uas_encoder_init(&e, out, cap, NULL);
    if (type.kind == UAS_NODEID_NUMERIC && type.ns == 0 &&
        type.id.numeric == UAS_TYPE(CLOSE_SESSION_REQUEST)->binary_encoding_id) {
        uas_close_session_request r;
        if (uas_decode(&d, &r, UAS_TYPE(CLOSE_SESSION_REQUEST)) != UAS_GOOD)
            goto done;
        r.request_header.authentication_token = h->token;
        r.delete_subscriptions = true;
        if (uas_encode(&e, &type, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD ||
            uas_encode(&e, &r, UAS_TYPE(CLOSE_SESSION_REQUEST)) != UAS_GOOD)
            goto done;
        n = (size_t)(e.pos - (uint8_t *)out);
        goto done;
    }
    uas_request_header hdr;
    if (uas_decode(&d, &hdr, UAS_TYPE(REQUEST_HEADER)) != UAS_GOOD)
        goto done;
    hdr.authentication_token = h->token;
    size_t rest = (size_t)(d.end - d.pos);
    if (uas_encode(&e, &type, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD ||
        uas_encode(&e, &hdr, UAS_TYPE(REQUEST_HEADER)) != UAS_GOOD ||
        uas_encode_bytes(&e, d.pos, rest) != UAS_GOOD)
        goto done;
    n = (size_t)(e.pos - (uint8_t *)out);
done:
    uas_arena_free(&a);
    return n;
}

static bool open_session(harness *h)
{
    uas_create_session_request cs;
    memset(&cs, 0, sizeof(cs));
    cs.client_description.application_uri = uas_string_from("urn:fuzz_session");
    cs.client_description.application_type = 1; /* Client */
    cs.endpoint_url = uas_string_from("opc.tcp://fuzz:4840");
    cs.session_name = uas_string_from("fuzz");
    cs.requested_session_timeout = 60000;
    if (uas_channel_send(h->ch, uas_channel_next_request_id(h->ch), &cs,
                         UAS_TYPE(CREATE_SESSION_REQUEST)) != UAS_GOOD)
        return false;
    pump(h, 2);
    if (!h->have_token)
        return false;
    uas_activate_session_request as;
    memset(&as, 0, sizeof(as));
    as.request_header.authentication_token = h->token;
    uas_anonymous_identity_token anon = {.policy_id = uas_string_from("anonymous")};
    as.user_identity_token.encoding = UAS_EXTOBJ_DECODED;
    as.user_identity_token.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
    as.user_identity_token.content.decoded.data = &anon;
    if (uas_channel_send(h->ch, uas_channel_next_request_id(h->ch), &as,
                         UAS_TYPE(ACTIVATE_SESSION_REQUEST)) != UAS_GOOD)
        return false;
    pump(h, 2);
    return h->session_answered;
}

static void close_session(harness *h)
{
    if (!h->ch || uas_channel_get_state(h->ch) != UAS_CHANNEL_OPEN)
        return;
    uas_close_session_request r;
    memset(&r, 0, sizeof(r));
    r.request_header.authentication_token = h->token;
    r.delete_subscriptions = true;
    if (uas_channel_send(h->ch, uas_channel_next_request_id(h->ch), &r,
                         UAS_TYPE(CLOSE_SESSION_REQUEST)) == UAS_GOOD)
        pump(h, 2);
    uas_channel_close(h->ch, UAS_GOOD); /* CLO */
}

/* Key generation and server start-up before libFuzzer's clock runs, so
 * they never count against the first input's timeout. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    data += 2;
    size -= 2;
    static harness h;
    memset(&h, 0, sizeof(h));
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    h.fd = sv[0];
    uas_dispatch_accept(&srv->loops[0], sv[1], NULL); /* a socketpair has no address */
    h.pool = uas_bufpool_new(1 << 20);
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_CLIENT);
    cfg.policy = &uas_secpol_none;
    cfg.mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = on_send;
    cb.on_message = on_message;
    h.ch = uas_channel_new(&cfg, &cb, &h, h.pool, 1000);
    if (!h.ch || uas_channel_connect(h.ch, "opc.tcp://fuzz:4840", 1000) != UAS_GOOD)
        abort();
    pump(&h, 2);
    if (uas_channel_get_state(h.ch) != UAS_CHANNEL_OPEN || !open_session(&h)) {
        fprintf(stderr, "fuzz_session: the harness session did not open\n");
        abort();
    }
    static uint8_t patched[BUF];
    while (size >= 2 && uas_channel_get_state(h.ch) == UAS_CHANNEL_OPEN) {
        size_t len = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (len > size)
            len = size;
        const uint8_t *f = data;
        data += len;
        size -= len;
        if (len == 0)
            continue;
        if (f[0] & 1) {
            size_t n = patch_token(&h, f + 1, len - 1, patched, sizeof(patched));
            if (n)
                send_body(&h, patched, n);
            else
                send_body(&h, f + 1, len - 1);
        } else {
            send_body(&h, f + 1, len - 1);
        }
        pump(&h, (flags & 1) ? 4 : 1);
    }
    close_session(&h);
    pump(&h, 1);
    close(h.fd);
    for (int i = 0; i < 8 && srv->loops[0].connections; i++)
        uas_server_run_once(srv);
    uas_channel_delete(h.ch);
    uas_bufpool_stats st;
    uas_bufpool_get_stats(h.pool, &st);
    if (st.live != 0)
        abort();
    uas_bufpool_delete(h.pool);

    /* Sessions the input made and left: gone as their timeout would. */
    uas_sessions_expire(srv->sessions, srv, uas_monotonic_ms() + 100LL * 24 * 3600 * 1000);
    if (srv->loops[0].connections != 0 || uas_sessions_count(srv->sessions) != 0 ||
        uas_subs_count(srv) != 0) {
        fprintf(stderr, "fuzz_session: left over: %u connections, %u sessions, %u subscriptions\n",
                srv->loops[0].connections, uas_sessions_count(srv->sessions), uas_subs_count(srv));
        abort();
    }
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "fuzz_session: %u answers\n", h.answers);
    return 0;
}
