/* Records the OPNs a client channel sends, as seeds for fuzz_opn: a
 * client and a server uas_channel joined in memory open a channel (HEL,
 * OPN Issue), then the client's clock passes its renewal time (OPN Renew).
 * The OPN chunks are decrypted with the server's key of this process and
 * written as plaintext frames, which fuzz_opn signs and encrypts again with
 * its own identities; HEL goes as it is.
 *
 *   make_opn_seeds OUTDIR        (fuzz_opn)
 *   make_opn_seeds OUTDIR ecc    (fuzz_opn_ecc: the ECC policies; their
 *                                OPNs are only signed, so "decrypting" is
 *                                stripping the signature) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/log.h>

#include "fuzz_fixed.h"

typedef struct side {
    uas_channel *ch;
    uas_bufpool *pool;
    uint8_t *chunks[16]; /* client: what it sent */
    size_t lens[16], n;
    uint8_t *out; /* not yet delivered */
    size_t len;
} side;

static uas_status on_send(void *ud, uas_buf *b)
{
    side *s = ud;
    if (s->n < 16) {
        s->chunks[s->n] = malloc(b->len);
        memcpy(s->chunks[s->n], b->data, b->len);
        s->lens[s->n++] = b->len;
    }
    s->out = realloc(s->out, s->len + b->len);
    memcpy(s->out + s->len, b->data, b->len);
    s->len += b->len;
    uas_buf_put(s->pool, b);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)ud, (void)id, (void)body, (void)len;
}

static void deliver(side *from, side *to, int64_t now)
{
    if (!from->len)
        return;
    uint8_t *copy = from->out;
    size_t n = from->len;
    from->out = NULL;
    from->len = 0;
    uas_channel_recv(to->ch, copy, n, now);
    free(copy);
}

static void frame(FILE *f, uint8_t kind, const uint8_t *pre, size_t pre_len, const uint8_t *p,
                  size_t n)
{
    size_t len = 1 + pre_len + n;
    fputc((int)(len & 0xff), f);
    fputc((int)(len >> 8), f);
    fputc(kind, f);
    fwrite(pre, 1, pre_len, f);
    fwrite(p, 1, n, f);
}

/* Writes chunk i of the client as a sealed-OPN frame (or raw). */
static void opn_frame(FILE *f, const uas_secpol *pol, fz_identity *cl, fz_identity *sv, side *c,
                      size_t i, uint32_t seq)
{
    uint8_t *ch = c->chunks[i];
    if (memcmp(ch, "OPN", 3) != 0) {
        frame(f, 0, NULL, 0, ch, c->lens[i]);
        return;
    }
    const uint8_t *plain;
    size_t plain_len;
    if (!fz_unseal_opn(pol, cl, sv, ch, c->lens[i], &plain, &plain_len)) {
        fprintf(stderr, "OPN chunk %zu does not decrypt\n", i);
        exit(1);
    }
    uint8_t *p = malloc(plain_len);
    memcpy(p, plain, plain_len);
    if (seq) { /* the sequence number the fixed-key server expects */
        p[0] = (uint8_t)seq, p[1] = (uint8_t)(seq >> 8), p[2] = (uint8_t)(seq >> 16),
        p[3] = (uint8_t)(seq >> 24);
    }
    uint8_t pre[5] = {4, ch[8], ch[9], ch[10], ch[11]}; /* padding computed, channel id */
    frame(f, 1, pre, sizeof(pre), p, plain_len);
    free(p);
}

/* curve: an ECC policy's identities (fz_identity_make_ecc), else RSA of
 * bits. */
static void record(const char *dir, const char *name, uint8_t flags, const uas_secpol *pol,
                   unsigned bits, const char *curve, int32_t mode)
{
    fz_identity sv, cl;
    if (curve) {
        fz_identity_make_ecc(&sv, curve, "seed server");
        fz_identity_make_ecc(&cl, curve, "seed client");
    } else {
        fz_identity_make(&sv, bits, "seed server");
        fz_identity_make(&cl, bits, "seed client");
    }
    uas_bufpool *pool = uas_bufpool_new(1 << 20);
    side c = {0}, s = {0};
    c.pool = s.pool = pool;
    uas_channel_offer offer = {pol, mode};
    uas_channel_config cc, sc;
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    uas_channel_config_default(&sc, UAS_CHANNEL_SERVER);
    cc.recv_buffer_size = cc.send_buffer_size = FZ_BUF;
    sc.recv_buffer_size = sc.send_buffer_size = FZ_BUF;
    cc.requested_lifetime_ms = 600000;
    sc.channel_id = FZ_CHANNEL_ID;
    sc.cred = sv.cred;
    sc.offers = &offer;
    sc.offer_count = 1;
    cc.cred = cl.cred;
    cc.policy = pol;
    cc.mode = mode;
    cc.server_cert = sv.cert;
    cc.server_cert_len = sv.cert_len;
    uas_channel_callbacks cb = {0};
    cb.send = on_send;
    cb.on_message = on_message;
    c.ch = uas_channel_new(&cc, &cb, &c, pool, 1000);
    s.ch = uas_channel_new(&sc, &cb, &s, pool, 1000);
    if (!c.ch || !s.ch || uas_channel_connect(c.ch, "opc.tcp://fuzz:4840", 1000) != UAS_GOOD) {
        fprintf(stderr, "%s: cannot connect\n", name);
        exit(1);
    }
    for (int i = 0; i < 4; i++) {
        deliver(&c, &s, 1000);
        deliver(&s, &c, 1000);
    }
    if (uas_channel_get_state(c.ch) != UAS_CHANNEL_OPEN) {
        fprintf(stderr, "%s: channel not open\n", name);
        exit(1);
    }
    size_t issued = c.n;
    int64_t later = 1000 + 600000 * 8 / 10; /* past 75 % of the lifetime */
    uas_channel_tick(c.ch, later);
    deliver(&c, &s, later);
    deliver(&s, &c, later);
    if (c.n == issued) {
        fprintf(stderr, "%s: no renewal\n", name);
        exit(1);
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/%s_issue.bin", dir, name);
    FILE *f = fopen(path, "wb");
    fputc(flags, f);
    fputc(0, f);
    for (size_t i = 0; i < issued; i++)
        opn_frame(f, pol, &cl, &sv, &c, i, 0);
    fclose(f);
    printf("%s\n", path);
    snprintf(path, sizeof(path), "%s/%s_renew.bin", dir, name);
    f = fopen(path, "wb");
    if (curve) {
        /* No fixed keys for ECC (fuzz_opn_ecc): the whole conversation,
         * Issue then Renew, as the client numbered it. */
        fputc(flags, f);
        fputc(0, f);
        for (size_t i = 0; i < c.n; i++)
            opn_frame(f, pol, &cl, &sv, &c, i, 0);
    } else {
        /* A fixed-key channel in the recorded mode (bit 6: Sign). */
        fputc(flags | 16 | (mode == UAS_MESSAGE_SECURITY_MODE_SIGN ? 64 : 0), f);
        fputc(0, f);
        for (size_t i = issued; i < c.n; i++)
            opn_frame(f, pol, &cl, &sv, &c, i, 2);
    }
    fclose(f);
    printf("%s\n", path);
    for (size_t i = 0; i < c.n; i++)
        free(c.chunks[i]);
    for (size_t i = 0; i < s.n; i++)
        free(s.chunks[i]);
    free(c.out);
    free(s.out);
    uas_channel_delete(c.ch);
    uas_channel_delete(s.ch);
    uas_bufpool_delete(pool);
    fz_identity_free(&sv);
    fz_identity_free(&cl);
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "ecc") == 0)) {
        fprintf(stderr, "usage: make_opn_seeds OUTDIR [ecc]\n");
        return 2;
    }
    const int32_t se = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    const int32_t sign = UAS_MESSAGE_SECURITY_MODE_SIGN;
    if (argc == 3) { /* tests/fuzz/seeds/fuzz_opn_ecc; flags: the policy */
        record(argv[1], "p256_gcm", 0, &uas_secpol_ecc_nistp256_aesgcm, 0, "P-256", se);
        record(argv[1], "p256_chacha", 1, &uas_secpol_ecc_nistp256_chachapoly, 0, "P-256", sign);
        record(argv[1], "curve25519", 2, &uas_secpol_ecc_curve25519, 0, "ED25519", se);
        record(argv[1], "bp256_gcm", 3, &uas_secpol_ecc_brainpoolp256r1_aesgcm, 0,
               "brainpoolP256r1", sign);
        return 0;
    }
    record(argv[1], "basic256_1024", 0, &uas_secpol_basic256, 1024, NULL, se);
    record(argv[1], "basic256sha256", 1 | 0 << 1, &uas_secpol_basic256sha256, 2048, NULL, se);
    record(argv[1], "aes128", 1 | 1 << 1, &uas_secpol_aes128_sha256_rsaoaep, 2048, NULL, sign);
    record(argv[1], "aes256pss", 1 | 2 << 1, &uas_secpol_aes256_sha256_rsapss, 2048, NULL, se);
    return 0;
}
