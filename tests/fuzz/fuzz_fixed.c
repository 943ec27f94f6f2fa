/* Fixed-key secure channels and in-memory identities for the fuzz targets:
 * see fuzz_fixed.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include <ua/log.h>

#include "channel_internal.h"
#include "fuzz_fixed.h"
#include "secpol_ecc.h"
#include "secpol_internal.h"

static const uint8_t client_nonce[64] = {
    0xc1, 0x1e, 0x47, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14,
    0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20,
};
static const uint8_t server_nonce[64] = {
    0x5e, 0x27, 0xe2, 0x00, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0xe0, 0xe1, 0xe2, 0xe3, 0xe4,
    0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xeb, 0xec, 0xed, 0xee, 0xef, 0xd0,
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_fixed: %s\n", what);
    abort();
}

/* A self-signed certificate for id->key and the credentials. */
static void certify(fz_identity *id, const char *cn)
{
    X509 *x = X509_new();
    if (!id->key || !x || X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set(X509_get_serialNumber(x), 4242) != 1 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365) ||
        X509_set_pubkey(x, id->key) != 1)
        die("certificate fields");
    X509_NAME *name = X509_get_subject_name(x);
    /* Ed25519 signs without a separate digest. */
    const EVP_MD *md = EVP_PKEY_is_a(id->key, "ED25519") ? NULL : EVP_sha256();
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(x, name) != 1 || X509_sign(x, id->key, md) <= 0)
        die("certificate signature");
    int n = i2d_X509(x, NULL);
    id->cert = malloc(n > 0 ? (size_t)n : 1);
    uint8_t *p = id->cert;
    if (n <= 0 || !id->cert || i2d_X509(x, &p) != n)
        die("certificate encoding");
    id->cert_len = (size_t)n;
    X509_free(x);
    int kn = i2d_PrivateKey(id->key, NULL);
    uint8_t *kder = malloc(kn > 0 ? (size_t)kn : 1), *kp = kder;
    if (kn <= 0 || !kder || i2d_PrivateKey(id->key, &kp) != kn)
        die("key encoding");
    if (uas_secpol_cred_new(id->cert, id->cert_len, kder, (size_t)kn, &id->cred) != UAS_GOOD)
        die("credentials");
    OPENSSL_cleanse(kder, (size_t)kn);
    free(kder);
}

void fz_identity_make(fz_identity *id, unsigned bits, const char *cn)
{
    memset(id, 0, sizeof(*id));
    id->key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
    certify(id, cn);
}

void fz_identity_make_ecc(fz_identity *id, const char *curve, const char *cn)
{
    memset(id, 0, sizeof(*id));
    id->key = strcmp(curve, "ED25519") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")
                                            : EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
    certify(id, cn);
}

void fz_identity_free(fz_identity *id)
{
    uas_secpol_cred_unref(id->cred);
    EVP_PKEY_free(id->key);
    free(id->cert);
    memset(id, 0, sizeof(*id));
}

static void derive(uas_secpol_keys *k, uint32_t token_id, bool is_server)
{
    size_t n = k->pol->nonce_len;
    const uint8_t *local = is_server ? server_nonce : client_nonce;
    const uint8_t *remote = is_server ? client_nonce : server_nonce;
    if (n > sizeof(client_nonce) ||
        uas_secpol_derive_keys(k, token_id, local, n, remote, n, is_server) != UAS_GOOD)
        die("key derivation");
}

void fz_fixed_keys(const uas_secpol *pol, uas_secpol_cred *cred, int32_t mode, bool is_server,
                   uint32_t token_id, uas_secpol_keys **out)
{
    if (uas_secpol_keys_new(pol, cred, out) != UAS_GOOD ||
        uas_secpol_keys_set_mode(*out, mode) != UAS_GOOD)
        die("key material");
    /* Both tokens of a renewal: the older one first, as the channel does. */
    if (token_id > 1)
        derive(*out, token_id - 1, is_server);
    derive(*out, token_id, is_server);
}

/* The channel as if HEL/ACK and OPN had run, with its keys in place. */
static void set_open(uas_channel *ch, const uas_secpol *pol, int32_t mode, uint32_t token_id,
                     bool renewed, int64_t now_ms)
{
    bool server = ch->cfg.role == UAS_CHANNEL_SERVER;
    ch->policy = pol;
    ch->mode = mode;
    ch->channel_id = FZ_CHANNEL_ID;
    ch->send_buffer = ch->recv_buffer = FZ_BUF;
    ch->peer_max_message = 0;
    ch->peer_max_chunks = 0;
    ch->token_id = token_id;
    ch->send_token_id = renewed && server ? token_id - 1 : token_id;
    ch->prev_token_id = renewed ? token_id - 1 : 0;
    ch->prev_expires_at = renewed ? now_ms + 60000 : 0;
    ch->expires_at = server ? now_ms + 3600000 : INT64_MAX;
    ch->hello_deadline = INT64_MAX;
    if (server) {
        ch->recv_seq = 1;
        ch->recv_seq_known = true;
    } else {
        ch->send_seq = 2;
    }
    ch->state = UAS_CHANNEL_OPEN;
}

void fz_channel_open_fixed(uas_channel *ch, const uas_secpol *pol, uas_secpol_cred *cred,
                           int32_t mode, uint32_t token_id, bool renewed, int64_t now_ms)
{
    if (ch->keys)
        uas_secpol_keys_free(ch->keys);
    fz_fixed_keys(pol, cred, mode, ch->cfg.role == UAS_CHANNEL_SERVER, token_id, &ch->keys);
    if (!renewed)
        uas_secpol_keys_drop_prev(ch->keys);
    set_open(ch, pol, mode, token_id, renewed, now_ms);
}

static void slot_make(fz_keyslot *slot)
{
    fz_fixed_keys(slot->pol, slot->cred, slot->mode, slot->server, slot->token_id, &slot->keys);
    if (!slot->renewed)
        uas_secpol_keys_drop_prev(slot->keys);
    if (slot->peer_cert &&
        uas_secpol_keys_set_peer(slot->keys, slot->peer_cert, slot->peer_cert_len) != UAS_GOOD)
        die("peer certificate");
}

void fz_channel_lend_fixed(uas_channel *ch, fz_keyslot *slot, const uas_secpol *pol,
                           uas_secpol_cred *cred, int32_t mode, uint32_t token_id, bool renewed,
                           const uint8_t *peer_cert, size_t peer_cert_len, int64_t now_ms)
{
    if (!slot->keys) {
        *slot = (fz_keyslot){.pol = pol,
                             .cred = cred,
                             .mode = mode,
                             .server = ch->cfg.role == UAS_CHANNEL_SERVER,
                             .token_id = token_id,
                             .renewed = renewed,
                             .peer_cert = peer_cert,
                             .peer_cert_len = peer_cert_len};
        slot_make(slot);
    }
    if (ch->keys)
        uas_secpol_keys_free(ch->keys);
    ch->keys = slot->keys;
    set_open(ch, pol, mode, token_id, renewed, now_ms);
}

void fz_channel_return_keys(uas_channel *ch, fz_keyslot *slot)
{
    uas_secpol_keys *k = slot->keys;
    /* The channel replaces its keys only when an offloaded first OPN
     * succeeds; the targets run OPNs inline. */
    if (ch->keys != k)
        die("the channel replaced lent keys");
    ch->keys = NULL;
    bool same = k->gen[0].valid && k->gen[0].token_id == slot->token_id &&
                k->gen[1].valid == slot->renewed &&
                (!slot->renewed || k->gen[1].token_id == slot->token_id - 1) &&
                (k->peer_spki != NULL) == (slot->peer_cert != NULL);
    if (!same) {
        /* Made again at once: allocations and frees stay balanced within
         * the input, or libFuzzer would run it again to look for a leak. */
        uas_secpol_keys_free(k);
        slot_make(slot);
    }
}

/* ---- the harness of the server-side channel targets ---- */

static void quiet(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level;
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "%s: %s\n", module, msg);
}

void fz_quiet_logs(void)
{
    uas_log_set_sink(quiet, NULL);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uas_status on_send(void *ud, uas_buf *chunk)
{
    fz_run *run = ud;
    if (chunk->len < 8 || chunk->len > FZ_BUF || get_u32(chunk->data + 4) != chunk->len)
        die("a malformed chunk was sent");
    if (memcmp(chunk->data, "OPNF", 4) == 0)
        run->opn_answers++;
    uas_buf_put(run->pool, chunk);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    fz_run *run = ud;
    (void)request_id;
    run->delivered++;
    if (len > FZ_MAX_MSG || (len && !body))
        die("a message over the limits was handed up");
}

static void on_state(void *ud, uas_channel_state state, uas_status reason)
{
    (void)reason;
    if (state == UAS_CHANNEL_OPEN)
        ((fz_run *)ud)->opened++;
}

void fz_server_config(uas_channel_config *cfg, uas_channel_callbacks *cb)
{
    uas_channel_config_default(cfg, UAS_CHANNEL_SERVER);
    cfg->channel_id = FZ_CHANNEL_ID;
    cfg->recv_buffer_size = cfg->send_buffer_size = FZ_BUF;
    cfg->max_message_size = FZ_MAX_MSG;
    cfg->max_chunk_count = FZ_MAX_CHUNKS;
    memset(cb, 0, sizeof(*cb));
    cb->send = on_send;
    cb->on_message = on_message;
    cb->on_state = on_state;
}

uas_status fz_validate(void *ud, const uint8_t *der, size_t len)
{
    (void)der, (void)len;
    return ((fz_run *)ud)->refuse ? UAS_BAD_CERTIFICATE_UNTRUSTED : UAS_GOOD;
}

bool fz_feed(uas_channel *ch, const uint8_t *p, size_t n, bool pieces, int64_t now)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        die("out of memory");
    memcpy(copy, p, n);
    size_t step = pieces ? n / 3 + 1 : n;
    uas_status st = UAS_GOOD;
    for (size_t off = 0; off < n && st == UAS_GOOD; off += step) {
        size_t k = n - off < step ? n - off : step;
        st = uas_channel_recv(ch, copy + off, k, now);
        if (st != UAS_GOOD && uas_channel_get_state(ch) != UAS_CHANNEL_CLOSED)
            die("a fatal status left the channel open");
    }
    free(copy);
    return uas_channel_get_state(ch) != UAS_CHANNEL_CLOSED;
}

bool fz_next_frame(const uint8_t **data, size_t *size, const uint8_t **f, size_t *len)
{
    if (*size < 2)
        return false;
    size_t n = (size_t)(*data)[0] | (size_t)(*data)[1] << 8;
    *data += 2;
    *size -= 2;
    if (n > *size)
        n = *size;
    *f = *data;
    *len = n;
    *data += n;
    *size -= n;
    return true;
}

void fz_channel_end(uas_channel *ch, fz_run *run)
{
    uas_channel_close(ch, UAS_GOOD);
    uas_channel_delete(ch);
    uas_bufpool_stats s;
    uas_bufpool_get_stats(run->pool, &s);
    if (s.live != 0)
        die("a chunk buffer leaked");
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uas_sym_gen *gen_for(const fz_sym *s, uint32_t token_id)
{
    uas_sym_gen *g = uas__secpol_gen(s->keys, token_id);
    return g ? g : &s->keys->gen[0];
}

size_t fz_seal(const fz_sym *s, const char *type, char chunk_type, uint32_t channel_id,
               uint32_t token_id, const uint8_t *plain, size_t plain_len, bool auto_pad,
               uint8_t *out, size_t cap)
{
    uas_sym_gen *g = gen_for(s, token_id);
    size_t sig = uas_digest_len(s->pol->algs->sym_mac);
    size_t end = UAS_SYM_HEADER_LEN + plain_len;
    size_t total;
    if (s->encrypt && auto_pad) {
        size_t pad = (UAS_AES_BLOCK - (plain_len + 1 + sig) % UAS_AES_BLOCK) % UAS_AES_BLOCK;
        total = end + pad + 1 + sig;
    } else if (s->encrypt) {
        size_t area = (plain_len + sig + UAS_AES_BLOCK - 1) / UAS_AES_BLOCK * UAS_AES_BLOCK;
        total = UAS_SYM_HEADER_LEN + area;
    } else {
        total = end + sig;
    }
    if (total > cap || total > UINT32_MAX)
        return 0;
    memcpy(out, type, 3);
    out[3] = (uint8_t)chunk_type;
    put_u32(out + 4, (uint32_t)total);
    put_u32(out + 8, channel_id);
    put_u32(out + 12, token_id);
    memcpy(out + UAS_SYM_HEADER_LEN, plain, plain_len);
    size_t sig_at = total - sig;
    if (sig_at > end) /* padding, or the zeros that fill the block */
        memset(out + end, auto_pad ? (int)(sig_at - end - 1) : 0, sig_at - end);
    if (uas_crypto_hmac_keyed(&g->mac_local, out, sig_at, NULL, 0, out + sig_at) != UAS_GOOD)
        die("hmac");
    if (s->encrypt && uas_crypto_aes_cbc_run(&g->enc_local, g->local.iv, out + UAS_SYM_HEADER_LEN,
                                             total - UAS_SYM_HEADER_LEN) != UAS_GOOD)
        die("aes");
    return total;
}

bool fz_unseal(const fz_sym *s, uint8_t *chunk, size_t len, const uint8_t **plain,
               size_t *plain_len)
{
    if (len < UAS_SYM_HEADER_LEN)
        return false;
    uint32_t token = (uint32_t)chunk[12] | (uint32_t)chunk[13] << 8 | (uint32_t)chunk[14] << 16 |
                     (uint32_t)chunk[15] << 24;
    uas_sym_gen *g = uas__secpol_gen(s->keys, token);
    size_t sig = uas_digest_len(s->pol->algs->sym_mac);
    if (!g || len < UAS_SYM_HEADER_LEN + sig + 1)
        return false;
    /* Our own chunks: decrypt with the key we encrypt with (a fresh
     * context; ours is keyed for encrypting). */
    if (s->encrypt &&
        uas_crypto_aes_cbc(false, g->local.enc, s->pol->algs->sym_enc_key_len, g->local.iv,
                           chunk + UAS_SYM_HEADER_LEN, len - UAS_SYM_HEADER_LEN) != UAS_GOOD)
        return false;
    size_t sig_at = len - sig;
    uint8_t mac[64];
    if (uas_crypto_hmac_keyed(&g->mac_local, chunk, sig_at, NULL, 0, mac) != UAS_GOOD ||
        memcmp(mac, chunk + sig_at, sig) != 0)
        return false;
    size_t body_end = sig_at;
    if (s->encrypt) {
        uint8_t pad = chunk[sig_at - 1];
        if (pad + 1u > sig_at - UAS_SYM_HEADER_LEN)
            return false;
        body_end = sig_at - 1 - pad;
    }
    *plain = chunk + UAS_SYM_HEADER_LEN;
    *plain_len = body_end - UAS_SYM_HEADER_LEN;
    return true;
}

static size_t put_bytes(uint8_t *p, const void *data, size_t len)
{
    put_u32(p, data ? (uint32_t)len : UINT32_MAX);
    if (data)
        memcpy(p + 4, data, len);
    return 4 + (data ? len : 0);
}

static size_t opn_header(uint8_t *out, uint32_t wire, uint32_t channel_id, const char *uri,
                         const uint8_t *cert, size_t cert_len, const uint8_t *thumb)
{
    memcpy(out, "OPNF", 4);
    put_u32(out + 4, wire);
    put_u32(out + 8, channel_id);
    size_t at = 12;
    at += put_bytes(out + at, uri, uri ? strlen(uri) : 0);
    at += put_bytes(out + at, cert, cert_len);
    at += put_bytes(out + at, thumb, UAS_SHA1_LEN);
    return at;
}

/* ECC (Part 6, 6.8): [headers | plain | signature], signed only. */
static size_t seal_opn_ecc(const uas_secpol *pol, const fz_identity *client, uint32_t channel_id,
                           const char *uri, const uint8_t *cert, size_t cert_len,
                           const uint8_t *thumb, size_t h, const uint8_t *plain, size_t plain_len,
                           uint8_t *out, size_t cap)
{
    size_t sig = pol->ecc->sig_len, wire = h + plain_len + sig;
    if (wire > cap || wire > UINT32_MAX)
        return 0;
    opn_header(out, (uint32_t)wire, channel_id, uri, cert, cert_len, thumb);
    memcpy(out + h, plain, plain_len);
    if (uas__ecc_sign(pol->ecc, client->key, client->cred->ed_sk, out, h + plain_len, NULL, 0,
                      out + h + plain_len) != UAS_GOOD)
        die("ecc sign");
    return wire;
}

size_t fz_seal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint32_t channel_id, const char *uri, const uint8_t *cert, size_t cert_len,
                   const uint8_t *thumb, const uint8_t *plain, size_t plain_len, bool auto_pad,
                   uint8_t *out, size_t cap)
{
    const struct uas_secpol_algs *a = pol->algs;
    size_t h = 12 + 4 + (uri ? strlen(uri) : 0) + 4 + (cert ? cert_len : 0) + 4 +
               (thumb ? UAS_SHA1_LEN : 0);
    if (pol->ecc)
        return seal_opn_ecc(pol, client, channel_id, uri, cert, cert_len, thumb, h, plain,
                            plain_len, out, cap);
    size_t sig = uas_crypto_rsa_size(client->key);
    size_t block = uas_crypto_rsa_size(server->key);
    size_t pblock = uas_crypto_rsa_plain_block(server->key, a->asym_enc);
    bool extra = uas_crypto_rsa_bits(server->key) > 2048;
    if (!sig || !pblock || h > cap)
        return 0;
    size_t body = plain_len, total_plain;
    if (auto_pad) {
        size_t bytes = plain_len + 1 + (extra ? 1u : 0u) + sig;
        size_t pad = (pblock - bytes % pblock) % pblock;
        total_plain = bytes + pad;
    } else {
        total_plain = (plain_len + sig + pblock - 1) / pblock * pblock;
    }
    size_t wire = h + total_plain / pblock * block;
    if (wire > cap || h + total_plain > cap || wire > UINT32_MAX)
        return 0;
    opn_header(out, (uint32_t)wire, channel_id, uri, cert, cert_len, thumb);
    memcpy(out + h, plain, plain_len);
    size_t sig_at = h + total_plain - sig;
    if (auto_pad) {
        size_t pad = total_plain - plain_len - 1 - (extra ? 1u : 0u) - sig;
        memset(out + h + body, (int)(pad & 0xff), pad + 1);
        if (extra)
            out[sig_at - 1] = (uint8_t)(pad >> 8);
    } else if (sig_at > h + body) {
        memset(out + h + body, 0, sig_at - h - body);
    }
    if (uas_crypto_rsa_sign(a->asym_sig, client->key, out, sig_at, out + sig_at, sig) != UAS_GOOD)
        die("rsa sign");
    uint8_t *tmp = malloc(total_plain / pblock * block);
    size_t n = 0;
    if (!tmp ||
        uas_crypto_rsa_encrypt(a->asym_enc, server->key, out + h, total_plain, tmp,
                               total_plain / pblock * block, &n) != UAS_GOOD ||
        h + n != wire)
        die("rsa encrypt");
    memcpy(out + h, tmp, n);
    free(tmp);
    return wire;
}

bool fz_unseal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint8_t *chunk, size_t len, const uint8_t **plain, size_t *plain_len)
{
    size_t at = 12;
    for (int field = 0; field < 3; field++) {
        if (at + 4 > len)
            return false;
        uint32_t n = (uint32_t)chunk[at] | (uint32_t)chunk[at + 1] << 8 |
                     (uint32_t)chunk[at + 2] << 16 | (uint32_t)chunk[at + 3] << 24;
        at += 4 + (n == UINT32_MAX ? 0 : n);
    }
    if (pol->ecc) { /* not encrypted: strip the signature */
        size_t sig = pol->ecc->sig_len;
        if (at > len || len - at < sig + UAS_SEQ_HEADER_LEN)
            return false;
        *plain = chunk + at;
        *plain_len = len - at - sig;
        return true;
    }
    size_t got = 0, sig = uas_crypto_rsa_size(client->key);
    if (at > len ||
        uas_crypto_rsa_decrypt(pol->algs->asym_enc, server->key, chunk + at, len - at, chunk + at,
                               len - at, &got) != UAS_GOOD ||
        got < sig + 1 + UAS_SEQ_HEADER_LEN)
        return false;
    size_t lo = at + got - sig - 1;
    if (chunk[lo] > lo - at)
        return false;
    *plain = chunk + at;
    *plain_len = lo - chunk[lo] - at;
    return true;
}
