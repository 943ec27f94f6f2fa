/* Secure channel micro-benchmark: what the server pays per MSG chunk for
 * each security policy, receiving a one-node ReadRequest (verify, decrypt)
 * and sending a one-value ReadResponse (encode, sign, encrypt), CPU ns per
 * message and allocations per message (the stack's allocator and OpenSSL's,
 * counted separately, with OpenSSL's bytes). The None row is the framing and encoding baseline:
 * a policy's row minus None is what its cryptography costs.
 *
 * A client and a server uas_channel are joined in memory, as the channel
 * tests do, with two RSA-2048 identities generated at start. Chunks travel
 * in batches through one contiguous buffer, as they would arrive from a
 * socket read: the client's requests are made before the timed part, the
 * server's responses are delivered to the client after it (which proves
 * every one of them verifies). Time is the thread's CPU time, so a
 * preemption on a shared machine does not count, and is read once per
 * batch. Several rounds; prints median and range as a Markdown table with
 * the run record. */
#define _GNU_SOURCE /* malloc_usable_size */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/mem.h>
#include <ua/security.h>
#include <ua/types.h>

#ifndef UAS_BENCH_FLAGS
#define UAS_BENCH_FLAGS "unknown"
#endif
#ifndef UAS_BENCH_COMMIT
#define UAS_BENCH_COMMIT "unknown"
#endif

/* A batch is timed as a whole: reading the thread CPU clock is a system
 * call (about 0.5 µs here), 2 ns per message over 256. */
enum { MAX_ROUNDS = 15, BATCH = 256, WIRE_CAP = BATCH * 512 };

static void die(const char *what)
{
    fprintf(stderr, "secure_bench: %s\n", what);
    exit(1);
}

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- OpenSSL's allocations ----
 * Counted through CRYPTO_set_mem_functions, installed before OpenSSL does
 * anything. The bench is single-threaded, so plain counters do. */

static unsigned long long ossl_allocs, ossl_bytes;
static long long ossl_live;

static void *ossl_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    void *p = malloc(n);
    if (p) {
        ossl_allocs++;
        ossl_bytes += n;
        ossl_live += (long long)malloc_usable_size(p);
    }
    return p;
}

static void *ossl_realloc(void *old, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    size_t was = old ? malloc_usable_size(old) : 0;
    void *p = realloc(old, n);
    if (p || n == 0) {
        if (n > was) {
            ossl_allocs++;
            ossl_bytes += n - was;
        }
        ossl_live += (long long)(p ? malloc_usable_size(p) : 0) - (long long)was;
    }
    return p;
}

static void ossl_free(void *p, const char *file, int line)
{
    (void)file, (void)line;
    if (p)
        ossl_live -= (long long)malloc_usable_size(p);
    free(p);
}

/* ---- identities ---- */

typedef struct identity {
    uas_secpol_cred *cred;
    const uint8_t *cert;
    size_t cert_len;
} identity;

static void make_identity(identity *id, const char *cn)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    X509 *x = X509_new();
    if (!k || !x || X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1) != 1 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 3600L) || X509_set_pubkey(x, k) != 1)
        die("certificate fields");
    X509_NAME *name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(x, name) != 1 || X509_sign(x, k, EVP_sha256()) <= 0)
        die("certificate signature");
    uint8_t *cert = NULL, *key = NULL;
    int cn_len = i2d_X509(x, &cert), kn = i2d_PrivateKey(k, &key);
    if (cn_len <= 0 || kn <= 0)
        die("DER encoding");
    if (uas_secpol_cred_new(cert, (size_t)cn_len, key, (size_t)kn, &id->cred) != UAS_GOOD)
        die("uas_secpol_cred_new");
    OPENSSL_clear_free(key, (size_t)kn);
    OPENSSL_free(cert);
    X509_free(x);
    EVP_PKEY_free(k);
    id->cert = uas_secpol_cred_cert(id->cred, &id->cert_len);
}

/* ---- an in-memory channel pair ---- */

typedef struct pair pair;

typedef struct end {
    uas_channel *ch;
    pair *p;
    uas_buf *head, *tail; /* chunks sent and not yet delivered (handshake) */
    /* Once open: chunks are copied here and their buffers given back at
     * once, as a transport would after writing them. */
    bool to_wire;
    uint8_t *wire;
    size_t wire_len;
    uint64_t messages; /* on_message calls */
    uas_channel_state state;
} end;

struct pair {
    uas_bufpool *pool;
    end client, server;
    int64_t now_ms;
};

static uas_status cb_send(void *ud, uas_buf *chunk)
{
    end *e = ud;
    if (e->to_wire) {
        if (e->wire_len + chunk->len > WIRE_CAP)
            die("wire buffer too small");
        memcpy(e->wire + e->wire_len, chunk->data, chunk->len);
        e->wire_len += chunk->len;
        uas_buf_put(e->p->pool, chunk);
        return UAS_GOOD;
    }
    chunk->next = NULL;
    if (e->tail)
        e->tail->next = chunk;
    else
        e->head = chunk;
    e->tail = chunk;
    return UAS_GOOD;
}

static void cb_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)request_id, (void)body, (void)len;
    ((end *)ud)->messages++;
}

static void cb_state(void *ud, uas_channel_state state, uas_status reason)
{
    (void)reason;
    ((end *)ud)->state = state;
}

static const uas_channel_callbacks callbacks = {
    .send = cb_send,
    .on_message = cb_message,
    .on_state = cb_state,
};

/* Delivers every chunk `from` has queued to `to`, returning the buffers to
 * the pool. */
static void deliver(pair *p, end *from, end *to)
{
    while (from->head) {
        uas_buf *b = from->head;
        from->head = b->next;
        if (!from->head)
            from->tail = NULL;
        if (uas_channel_recv(to->ch, b->data, b->len, p->now_ms) != UAS_GOOD)
            die("a chunk was refused");
        uas_buf_put(p->pool, b);
    }
}

static uint32_t chunk_size(const uint8_t *h)
{
    return (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
}

typedef struct bench_policy {
    const char *name;
    const char *uri;
    int32_t mode;
} bench_policy;

/* False when the policy is not compiled in. */
static bool pair_open(pair *p, const bench_policy *bp, identity *server_id, identity *client_id)
{
    memset(p, 0, sizeof(*p));
    p->client.p = p->server.p = p;
    const uas_secpol *pol = uas_security_policy(bp->uri, false);
    if (!pol)
        return false;
    p->now_ms = 1000000;
    p->pool = uas_bufpool_new(8u << 20);
    if (!p->pool)
        die("uas_bufpool_new");
    uas_channel_config sc, cc;
    uas_channel_config_default(&sc, UAS_CHANNEL_SERVER);
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    sc.channel_id = 7;
    uas_channel_offer offer = {pol, bp->mode};
    sc.offers = &offer;
    sc.offer_count = 1;
    cc.policy = pol;
    cc.mode = bp->mode;
    if (bp->mode != UAS_MESSAGE_SECURITY_MODE_NONE) {
        sc.cred = server_id->cred;
        cc.cred = client_id->cred;
        cc.server_cert = server_id->cert;
        cc.server_cert_len = server_id->cert_len;
    }
    p->server.ch = uas_channel_new(&sc, &callbacks, &p->server, p->pool, p->now_ms);
    p->client.ch = uas_channel_new(&cc, &callbacks, &p->client, p->pool, p->now_ms);
    if (!p->server.ch || !p->client.ch)
        die("uas_channel_new");
    if (uas_channel_connect(p->client.ch, "opc.tcp://bench:4840", p->now_ms) != UAS_GOOD)
        die("uas_channel_connect");
    for (int i = 0; i < 8 && (p->client.head || p->server.head); i++) {
        deliver(p, &p->client, &p->server);
        deliver(p, &p->server, &p->client);
    }
    if (p->client.state != UAS_CHANNEL_OPEN || p->server.state != UAS_CHANNEL_OPEN)
        die("the channel did not open");
    end *ends[] = {&p->client, &p->server};
    for (int i = 0; i < 2; i++) {
        ends[i]->to_wire = true;
        ends[i]->wire = malloc(WIRE_CAP);
        if (!ends[i]->wire)
            die("out of memory");
    }
    return true;
}

static void pair_close(pair *p)
{
    uas_channel_delete(p->client.ch);
    uas_channel_delete(p->server.ch);
    end *ends[] = {&p->client, &p->server};
    for (int i = 0; i < 2; i++) {
        free(ends[i]->wire);
        while (ends[i]->head) {
            uas_buf *b = ends[i]->head;
            ends[i]->head = b->next;
            uas_buf_put(p->pool, b);
        }
    }
    uas_bufpool_delete(p->pool);
}

/* ---- the messages ---- */

static uas_read_value_id read_node;
static uas_read_request read_request;
static int32_t read_value = 42;
static uas_datavalue read_result;
static uas_read_response read_response;

static void make_messages(void)
{
    read_request.request_header.authentication_token = uas_nodeid_numeric(0, 0x10203040);
    read_request.request_header.timestamp = 133000000000000000LL;
    read_request.request_header.request_handle = 42;
    read_request.request_header.timeout_hint = 10000;
    read_request.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    read_node.node_id = uas_nodeid_numeric(1, 1001);
    read_node.attribute_id = 13;
    read_request.nodes_to_read = &read_node;
    read_request.nodes_to_read_count = 1;
    read_response.response_header.timestamp = 133000000000000000LL;
    read_response.response_header.request_handle = 42;
    uas_variant_set_scalar(&read_result.value, &read_value, UAS_TYPE(INT32));
    read_result.has_value = true;
    read_result.has_source_timestamp = read_result.has_server_timestamp = true;
    read_result.source_timestamp = read_result.server_timestamp = 133000000000000000LL;
    read_response.results = &read_result;
    read_response.results_count = 1;
}

/* ---- measurement ---- */

typedef struct counters {
    uint64_t heap, ossl, ossl_bytes;
} counters;

static void snapshot(counters *c)
{
    uas_mem_stats s;
    uas_mem_get_stats(&s);
    c->heap = s.allocs;
    c->ossl = ossl_allocs;
    c->ossl_bytes = ossl_bytes;
}

typedef struct result {
    double ns[MAX_ROUNDS];
    double heap_allocs, ossl_allocs, ossl_bytes; /* per message, over every round */
    size_t wire;                                 /* bytes of one chunk on the wire */
} result;

/* The server receives `iters` ReadRequest chunks per round, one
 * uas_channel_recv per chunk. */
static void bench_recv(pair *p, int rounds, long iters, result *res)
{
    uint64_t heap = 0, ossl = 0, ossl_b = 0, total = 0;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        double ns = 0;
        long done = 0;
        for (; done + BATCH <= iters; done += BATCH) {
            p->client.wire_len = 0;
            for (int i = 0; i < BATCH; i++) {
                if (uas_channel_send(p->client.ch, uas_channel_next_request_id(p->client.ch),
                                     &read_request, UAS_TYPE(READ_REQUEST)) != UAS_GOOD)
                    die("client send");
            }
            uint8_t *wire = p->client.wire;
            size_t wire_len = p->client.wire_len;
            res->wire = chunk_size(wire);
            uint64_t before = p->server.messages;
            counters c0, c1;
            snapshot(&c0);
            double t0 = cpu_ns();
            for (size_t off = 0; off < wire_len;) {
                uint32_t n = chunk_size(wire + off);
                (void)uas_channel_recv(p->server.ch, wire + off, n, p->now_ms);
                off += n;
            }
            double t1 = cpu_ns();
            snapshot(&c1);
            if (p->server.messages - before != BATCH)
                die("the server did not take every request");
            ns += t1 - t0;
            if (r >= 0) {
                heap += c1.heap - c0.heap;
                ossl += c1.ossl - c0.ossl;
                ossl_b += c1.ossl_bytes - c0.ossl_bytes;
                total += BATCH;
            }
        }
        if (r >= 0)
            res->ns[r] = ns / (double)done;
    }
    res->heap_allocs = (double)heap / (double)total;
    res->ossl_allocs = (double)ossl / (double)total;
    res->ossl_bytes = (double)ossl_b / (double)total;
}

/* The server sends `iters` ReadResponse chunks per round. Handing a chunk
 * to the transport (a copy of ~130 bytes and a pool put) is part of it. */
static void bench_send(pair *p, int rounds, long iters, result *res)
{
    uint64_t heap = 0, ossl = 0, ossl_b = 0, total = 0;
    for (int r = -1; r < rounds; r++) {
        double ns = 0;
        long done = 0;
        for (; done + BATCH <= iters; done += BATCH) {
            p->server.wire_len = 0;
            counters c0, c1;
            snapshot(&c0);
            double t0 = cpu_ns();
            for (uint32_t i = 0; i < BATCH; i++)
                (void)uas_channel_send(p->server.ch, 1000 + i, &read_response,
                                       UAS_TYPE(READ_RESPONSE));
            double t1 = cpu_ns();
            snapshot(&c1);
            res->wire = chunk_size(p->server.wire);
            uint64_t before = p->client.messages;
            if (uas_channel_recv(p->client.ch, p->server.wire, p->server.wire_len, p->now_ms) !=
                    UAS_GOOD ||
                p->client.messages - before != BATCH)
                die("the client did not get every response");
            ns += t1 - t0;
            if (r >= 0) {
                heap += c1.heap - c0.heap;
                ossl += c1.ossl - c0.ossl;
                ossl_b += c1.ossl_bytes - c0.ossl_bytes;
                total += BATCH;
            }
        }
        if (r >= 0)
            res->ns[r] = ns / (double)done;
    }
    res->heap_allocs = (double)heap / (double)total;
    res->ossl_allocs = (double)ossl / (double)total;
    res->ossl_bytes = (double)ossl_b / (double)total;
}

static void print_row(const char *policy, const char *op, const result *res, int rounds,
                      long long held)
{
    double sorted[MAX_ROUNDS];
    memcpy(sorted, res->ns, sizeof(double) * (size_t)rounds);
    qsort(sorted, (size_t)rounds, sizeof(double), cmp_double);
    printf("| %-36s | %-4s | %5zu | %7.1f | %6.1f–%-6.1f | %5.2f | %5.2f | %6.1f | %6lld |\n",
           policy, op, res->wire, sorted[rounds / 2], sorted[0], sorted[rounds - 1],
           res->heap_allocs, res->ossl_allocs, res->ossl_bytes, held);
}

static void run_record(void)
{
    struct utsname u;
    uname(&u);
    char cpu[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    snprintf(cpu, sizeof(cpu), "%s", p + 2);
                    cpu[strcspn(cpu, "\n")] = 0;
                }
                break;
            }
        }
        fclose(f);
    }
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
    printf("Run record: commit %s, %s, %s %s, compiler %s, flags `%s`, %s, %s\n\n",
           UAS_BENCH_COMMIT, cpu, u.sysname, u.release, __VERSION__, UAS_BENCH_FLAGS,
           OpenSSL_version(OPENSSL_VERSION), date);
}

int main(int argc, char **argv)
{
    /* Before anything makes OpenSSL allocate. */
    if (CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free) != 1)
        die("CRYPTO_set_mem_functions");
    int rounds = 5;
    long iters = 200 * BATCH;
    const char *only = NULL; /* run the policies whose name contains this (profiling) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            iters = 2 * BATCH;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: secure_bench [--rounds N (1..%d)] [--quick] [--only TEXT]\n",
                    MAX_ROUNDS);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "secure_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    make_messages();
    identity server_id, client_id;
    make_identity(&server_id, "secure_bench server");
    make_identity(&client_id, "secure_bench client");
    static const bench_policy policies[] = {
        {"None", "http://opcfoundation.org/UA/SecurityPolicy#None", UAS_MESSAGE_SECURITY_MODE_NONE},
        {"Basic256Sha256 Sign", "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256",
         UAS_MESSAGE_SECURITY_MODE_SIGN},
        {"Basic256Sha256 SignAndEncrypt",
         "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256",
         UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT},
        {"Aes128_Sha256_RsaOaep SignAndEncrypt",
         "http://opcfoundation.org/UA/SecurityPolicy#Aes128_Sha256_RsaOaep",
         UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT},
        {"Aes256_Sha256_RsaPss SignAndEncrypt",
         "http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss",
         UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT},
    };
    size_t npol = sizeof(policies) / sizeof(policies[0]);
    /* One throwaway pair first, so what OpenSSL and the stack set up once
     * per process (fetched algorithms, per-thread state) is not charged to
     * the first policy's "held" column. */
    pair warm;
    if (pair_open(&warm, &policies[2], &server_id, &client_id)) {
        result scratch;
        bench_recv(&warm, 1, BATCH, &scratch);
        bench_send(&warm, 1, BATCH, &scratch);
        pair_close(&warm);
    }

    run_record();
    printf("| policy and mode                      | dir  | bytes | ns/msg  | range (ns)    | "
           "heap allocs/msg | OpenSSL allocs/msg | OpenSSL B/msg | OpenSSL B held/channel |\n");
    printf("|--------------------------------------|------|------:|--------:|---------------|"
           "------:|------:|------:|-------:|\n");
    for (size_t i = 0; i < npol; i++) {
        if (only && !strstr(policies[i].name, only))
            continue;
        fprintf(stderr, "secure_bench: %s (%ld messages x %d rounds per direction)\n",
                policies[i].name, iters, rounds);
        long long live0 = ossl_live;
        pair p;
        if (!pair_open(&p, &policies[i], &server_id, &client_id))
            continue;
        /* What the two channels keep from OpenSSL once open, per channel. */
        long long held = (ossl_live - live0) / 2;
        result recv, send;
        bench_recv(&p, rounds, iters, &recv);
        bench_send(&p, rounds, iters, &send);
        pair_close(&p);
        print_row(policies[i].name, "recv", &recv, rounds, held);
        print_row(policies[i].name, "send", &send, rounds, held);
    }
    uas_secpol_cred_unref(server_id.cred);
    uas_secpol_cred_unref(client_id.cred);
    return 0;
}
