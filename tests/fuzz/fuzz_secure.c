/* libFuzzer target for secured symmetric chunks on an open server channel
 * (uas_channel_recv behind the signature): Basic256Sha256 in Sign or
 * SignAndEncrypt with keys derived from fixed nonces (fuzz_fixed.h), so
 * the fuzzer gets past the HMAC to decryption, padding, sequence numbers,
 * token switching (a renewal overlap), chunk assembly and aborts, CLO, and
 * the messages handed up.
 *
 * Input: byte 0 flags (bit 0: SignAndEncrypt, else Sign; bit 1: a renewal
 * is in progress, tokens 1 and 2 both valid; bit 2: feed each frame in
 * three pieces), byte 1 the clock step per frame in 100 ms, then frames of
 * [u16 LE length | bytes]. A frame's first byte says what it is: bit 0
 * clear: the rest goes to the channel as it is; set: the rest is [type
 * (0 MSG, 1 CLO) | chunk type | token id u32 LE | plaintext] and is sealed
 * with the client's keys first, with the channel id of the channel (or a
 * wrong one with bit 1), and the padding computed (bit 2) or taken from
 * the plaintext (the plaintext is then zero-extended to a whole block).
 *
 * Checked as in fuzz_channel: no crash or sanitizer report, every chunk
 * sent has a consistent header, no message over the limits is handed up, a
 * failed recv leaves the channel closed, no pool buffer leaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/log.h>

#include "fuzz_fixed.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_MSG = 65536, MAX_CHUNKS = 16, OUT = FZ_BUF + 64 };

static fz_identity server_id;
static size_t delivered;      /* messages handed up, for FZ_VERBOSE */
static fz_sym client_keys[2]; /* [Sign, SignAndEncrypt] */

typedef struct world {
    uas_bufpool *pool;
} world;

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uas_status on_send(void *ud, uas_buf *chunk)
{
    world *w = ud;
    if (chunk->len < 8 || chunk->len > FZ_BUF || u32(chunk->data + 4) != chunk->len)
        abort();
    uas_buf_put(w->pool, chunk);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)ud;
    (void)request_id;
    delivered++;
    if (len > MAX_MSG || (len && !body))
        abort();
}

static void quiet(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level, (void)module, (void)msg;
}

static void init(void)
{
    uas_log_set_sink(quiet, NULL);
    fz_identity_make(&server_id, 2048, "fuzz_secure server");
    for (int e = 0; e < 2; e++) {
        client_keys[e].pol = &uas_secpol_basic256sha256;
        client_keys[e].encrypt = e == 1;
        fz_fixed_keys(&uas_secpol_basic256sha256, server_id.cred,
                      e ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT
                        : UAS_MESSAGE_SECURITY_MODE_SIGN,
                      false, 2, &client_keys[e].keys);
    }
}

/* Feeds n bytes (a copy: the channel decrypts in place); false once the
 * channel is closed. */
static bool feed(uas_channel *ch, const uint8_t *p, size_t n, bool pieces, int64_t now)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        abort();
    memcpy(copy, p, n);
    size_t step = pieces ? n / 3 + 1 : n;
    uas_status st = UAS_GOOD;
    for (size_t off = 0; off < n && st == UAS_GOOD; off += step) {
        size_t k = n - off < step ? n - off : step;
        st = uas_channel_recv(ch, copy + off, k, now);
        if (st != UAS_GOOD && uas_channel_get_state(ch) != UAS_CHANNEL_CLOSED)
            abort(); /* a fatal status must leave the channel closed */
    }
    free(copy);
    return uas_channel_get_state(ch) != UAS_CHANNEL_CLOSED;
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
    uint8_t flags = data[0], step = data[1];
    bool enc = flags & 1, renewed = flags & 2, pieces = flags & 4;
    data += 2;
    size -= 2;

    world w = {uas_bufpool_new(1 << 20)};
    if (!w.pool)
        return 0;
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_SERVER);
    cfg.channel_id = FZ_CHANNEL_ID;
    cfg.recv_buffer_size = cfg.send_buffer_size = FZ_BUF;
    cfg.max_message_size = MAX_MSG;
    cfg.max_chunk_count = MAX_CHUNKS;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = on_send;
    cb.on_message = on_message;
    int64_t now = 1000;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &w, w.pool, now);
    if (!ch) {
        uas_bufpool_delete(w.pool);
        return 0;
    }
    fz_channel_open_fixed(ch, &uas_secpol_basic256sha256, server_id.cred,
                          enc ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT
                              : UAS_MESSAGE_SECURITY_MODE_SIGN,
                          renewed ? 2 : 1, renewed, now);
    const fz_sym *sym = &client_keys[enc];
    static uint8_t out[OUT];
    while (size >= 2) {
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
        bool alive;
        if (!(f[0] & 1) || len < 7) {
            alive = feed(ch, f + 1, len - 1, pieces, now);
        } else {
            size_t n = fz_seal(sym, (f[1] & 1) ? "CLO" : "MSG", (char)f[2],
                               (f[0] & 2) ? FZ_CHANNEL_ID + 1 : FZ_CHANNEL_ID, u32(f + 3), f + 7,
                               len - 7, (f[0] & 4) != 0, out, sizeof(out));
            alive = feed(ch, out, n, pieces, now);
        }
        now += (int64_t)step * 100;
        uas_channel_tick(ch, now);
        if (!alive || uas_channel_get_state(ch) == UAS_CHANNEL_CLOSED)
            break;
    }
    uas_channel_close(ch, UAS_GOOD);
    uas_channel_delete(ch);
    uas_bufpool_stats s;
    uas_bufpool_get_stats(w.pool, &s);
    if (s.live != 0)
        abort(); /* a chunk buffer leaked */
    uas_bufpool_delete(w.pool);
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "fuzz_secure: %zu messages handed up so far\n", delivered);
    return 0;
}
