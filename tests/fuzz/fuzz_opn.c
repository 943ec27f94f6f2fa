/* libFuzzer target for OPN parsing on the server side of a secure channel:
 * the asymmetric security header (policy URI, sender certificate, receiver
 * thumbprint), the PKI callback, RSA decryption and signature, padding,
 * the sequence header and the OpenSecureChannelRequest (issue and renew),
 * with the server and client identities made in memory at start-up.
 *
 * Input: byte 0 flags (bit 0: 2048-bit keys and the policy of bits 1-2,
 * Basic256Sha256 / Aes128_Sha256_RsaOaep / Aes256_Sha256_RsaPss /
 * Basic256, else 1024-bit keys and Basic256, whose RSA is about 6 times
 * cheaper so most executions get through it; bit 3: feed each frame in
 * three pieces; bit 4: the channel is already open (fixed keys) with the
 * client as its peer, so OPNs are renewals; bit 5: the PKI refuses the
 * client certificate), byte 1 the clock step per frame in 100 ms, then
 * frames of [u16 LE length | bytes]. A frame's first byte: bit 0 clear,
 * the rest is fed as it is; set, the rest is [header flags | channel id
 * u32 LE | plaintext] and becomes an OPN chunk signed with the client's
 * key and encrypted with the server's (fz_seal_opn). Header flags: bit 0
 * null SenderCertificate, bit 1 a wrong thumbprint, bit 2 padding computed
 * (else taken from the plaintext), bit 3 the None policy URI, bit 4 the
 * certificate of another client (and signed with its key).
 *
 * Checked: no crash or sanitizer report, chunks sent have consistent
 * headers, a failed recv leaves the channel closed, no pool buffer leaks.
 * Not reached: keys over 2048 bits (ExtraPaddingSize), too slow to fuzz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/log.h>

#include "channel_internal.h"
#include "fuzz_fixed.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { OUT = 3 * FZ_BUF };

typedef struct fz_world {
    fz_identity server, client, other;
} fz_world;

static fz_world worlds[2]; /* 1024 and 2048 bits */
static const uas_secpol *policies[4];
static uas_channel_offer offers[9];
static size_t opened, answered; /* channels that reached OPEN, OPN answers: FZ_VERBOSE */

static void quiet(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level;
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "%s: %s\n", module, msg);
}

static void init(void)
{
    uas_log_set_sink(quiet, NULL);
    static const unsigned bits[2] = {1024, 2048};
    for (int i = 0; i < 2; i++) {
        fz_identity_make(&worlds[i].server, bits[i], "fuzz_opn server");
        fz_identity_make(&worlds[i].client, bits[i], "fuzz_opn client");
        fz_identity_make(&worlds[i].other, bits[i], "fuzz_opn other client");
    }
    policies[0] = &uas_secpol_basic256sha256;
    policies[1] = &uas_secpol_aes128_sha256_rsaoaep;
    policies[2] = &uas_secpol_aes256_sha256_rsapss;
    policies[3] = &uas_secpol_basic256;
    for (int i = 0; i < 4; i++) {
        offers[2 * i] = (uas_channel_offer){policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN};
        offers[2 * i + 1] =
            (uas_channel_offer){policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT};
    }
    offers[8] = (uas_channel_offer){&uas_secpol_none, UAS_MESSAGE_SECURITY_MODE_NONE};
}

typedef struct world {
    uas_bufpool *pool;
    bool refuse;
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
    if (memcmp(chunk->data, "OPNF", 4) == 0)
        answered++;
    uas_buf_put(w->pool, chunk);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)ud, (void)request_id, (void)body, (void)len;
}

static void on_state(void *ud, uas_channel_state state, uas_status reason)
{
    (void)ud, (void)reason;
    if (state == UAS_CHANNEL_OPEN)
        opened++;
}

static uas_status validate(void *ud, const uint8_t *der, size_t len)
{
    (void)der, (void)len;
    return ((world *)ud)->refuse ? UAS_BAD_CERTIFICATE_UNTRUSTED : UAS_GOOD;
}

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
    const fz_world *wd = &worlds[flags & 1];
    const uas_secpol *pol = (flags & 1) ? policies[(flags >> 1) & 3] : &uas_secpol_basic256;
    bool pieces = flags & 8, renewal = flags & 16;
    data += 2;
    size -= 2;

    world w = {uas_bufpool_new(1 << 20), (flags & 32) != 0};
    if (!w.pool)
        return 0;
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_SERVER);
    cfg.channel_id = FZ_CHANNEL_ID;
    cfg.recv_buffer_size = cfg.send_buffer_size = FZ_BUF;
    cfg.max_message_size = 65536;
    cfg.max_chunk_count = 16;
    cfg.cred = wd->server.cred;
    cfg.offers = offers;
    cfg.offer_count = sizeof(offers) / sizeof(offers[0]);
    cfg.validate_peer = validate;
    cfg.validate_ud = &w;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = on_send;
    cb.on_message = on_message;
    cb.on_state = on_state;
    int64_t now = 1000;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &w, w.pool, now);
    if (!ch) {
        uas_bufpool_delete(w.pool);
        return 0;
    }
    if (renewal) {
        fz_channel_open_fixed(ch, pol, wd->server.cred, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                              1, false, now);
        if (uas_secpol_keys_set_peer(ch->keys, wd->client.cert, wd->client.cert_len) != UAS_GOOD)
            abort();
    }
    static uint8_t out[OUT];
    static uint8_t wrong_thumb[20];
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
        if (!(f[0] & 1) || len < 6) {
            alive = feed(ch, f + 1, len - 1, pieces, now);
        } else {
            uint8_t hf = f[1];
            const fz_identity *from = (hf & 16) ? &wd->other : &wd->client;
            const uint8_t *thumb =
                (hf & 2) ? wrong_thumb : uas_secpol_cred_thumbprint(wd->server.cred);
            size_t n =
                fz_seal_opn(pol, from, &wd->server, u32(f + 2),
                            (hf & 8) ? UAS_SECPOL_NONE_URI : pol->uri, (hf & 1) ? NULL : from->cert,
                            from->cert_len, thumb, f + 6, len - 6, (hf & 4) != 0, out, sizeof(out));
            alive = feed(ch, out, n, pieces, now);
        }
        now += (int64_t)step * 100;
        uas_channel_tick(ch, now);
        if (!alive)
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
        fprintf(stderr, "fuzz_opn: %zu channels opened, %zu OPNs answered so far\n", opened,
                answered);
    return 0;
}
