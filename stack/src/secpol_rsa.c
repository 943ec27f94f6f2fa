/* The RSA security policies of Part 7 and their chunk hooks (Part 6,
 * 6.7.2): Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss, and
 * the deprecated Basic256 (offered only on opt-in). Basic128Rsa15 is not
 * implemented: RSA PKCS#1 v1.5 encryption is a padding oracle.
 *
 * Received chunks are decrypted, then the signature is verified over the
 * plaintext, and only then the padding is looked at, in constant time; every
 * failure gives the same BadSecurityChecksFailed, so neither the answer nor
 * its timing tells a padding error from a signature error. */
#include <string.h>

#include <ua/types.h>

#include "secpol_internal.h"

static const struct uas_secpol_algs algs_basic256sha256 = {
    .kdf = UAS_DIGEST_SHA256,
    .sym_mac = UAS_DIGEST_SHA256,
    .sym_sign_key_len = 32,
    .sym_enc_key_len = 32,
    .asym_sig = UAS_RSA_PKCS1_SHA256,
    .asym_enc = UAS_RSA_OAEP_SHA1,
};

static const struct uas_secpol_algs algs_aes128_sha256_rsaoaep = {
    .kdf = UAS_DIGEST_SHA256,
    .sym_mac = UAS_DIGEST_SHA256,
    .sym_sign_key_len = 32,
    .sym_enc_key_len = 16,
    .asym_sig = UAS_RSA_PKCS1_SHA256,
    .asym_enc = UAS_RSA_OAEP_SHA1,
};

static const struct uas_secpol_algs algs_aes256_sha256_rsapss = {
    .kdf = UAS_DIGEST_SHA256,
    .sym_mac = UAS_DIGEST_SHA256,
    .sym_sign_key_len = 32,
    .sym_enc_key_len = 32,
    .asym_sig = UAS_RSA_PSS_SHA256,
    .asym_enc = UAS_RSA_OAEP_SHA256,
};

static const struct uas_secpol_algs algs_basic256 = {
    .kdf = UAS_DIGEST_SHA1,
    .sym_mac = UAS_DIGEST_SHA1,
    .sym_sign_key_len = 24,
    .sym_enc_key_len = 32,
    .asym_sig = UAS_RSA_PKCS1_SHA1,
    .asym_enc = UAS_RSA_OAEP_SHA1,
};

/* ---- little helpers ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* All ones when a < b, else 0, without a branch (a, b below 2^63). */
static unsigned ct_lt(size_t a, size_t b)
{
    return 0u - (unsigned)((a - b) >> (sizeof(size_t) * 8 - 1));
}

/* Checks, in constant time with respect to the padding bytes, the padding
 * that ends right before `after` (the ExtraPaddingSize byte when extra,
 * else the signature): [PaddingSize][Padding x count], every byte equal to
 * the low byte of count, count = ExtraPaddingSize << 8 | PaddingSize.
 * `first` is where the body starts (after the sequence header; the callers
 * guarantee after > first). Returns all ones when the padding is bad, else
 * 0 and the end of the body in *body_end. */
static unsigned check_padding(const uint8_t *chunk, size_t first, size_t after, bool extra,
                              size_t *body_end)
{
    size_t hi = extra ? chunk[after] : 0;
    size_t lo_pos = after - 1; /* the last padding byte, or PaddingSize itself */
    uint8_t lo = chunk[lo_pos];
    size_t count = hi << 8 | lo;
    size_t avail = lo_pos - first; /* bytes before lo_pos that may be padding */
    unsigned bad = ct_lt(avail, count);
    /* Scan every byte the field could claim (bounded by public lengths
     * only) and count mismatches inside the claimed padding: the byte d
     * places before lo_pos is padding when d < count. Forward and in 32
     * bits (d and count are below 65536) so the compiler vectorises it;
     * byte by byte it cost about as much as decrypting a small chunk. */
    size_t max = extra ? 65535u : 255u;
    uint32_t scan = (uint32_t)(avail < max ? avail : max);
    const uint8_t *p = chunk + lo_pos - scan;
    uint32_t c32 = (uint32_t)count, acc = 0;
    for (uint32_t j = 0; j < scan; j++) {
        uint32_t d = scan - 1 - j;
        acc |= (0u - ((d - c32) >> 31)) & (uint32_t)(p[j] ^ lo);
    }
    bad |= acc;
    bad = 0u - (unsigned)(bad != 0);
    *body_end = lo_pos - (count & ~(size_t)bad);
    return bad;
}

/* ---- symmetric chunks (MSG, CLO) ---- */

/* The padding [PaddingSize][Padding x PaddingSize] that ends right before
 * the signature at `after`, in a chunk whose MAC is already good; `first`
 * is where the body starts. Sets *body_end where the padding begins. */
static bool sym_padding_ok(const uint8_t *chunk, size_t first, size_t after, size_t *body_end)
{
    size_t lo_pos = after - 1;
    uint8_t pad = chunk[lo_pos];
    if (pad > lo_pos - first)
        return false;
    for (size_t i = lo_pos - pad; i < lo_pos; i++)
        if (chunk[i] != pad)
            return false;
    *body_end = lo_pos - pad;
    return true;
}

static size_t sym_sig_len(const uas_secpol_keys *k)
{
    return uas_digest_len(k->pol->algs->sym_mac);
}

static bool sym_encrypts(const uas_secpol_keys *k)
{
    return k->mode == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
}

static size_t rsa_sym_overhead(const void *keys, size_t cap)
{
    const uas_secpol_keys *k = keys;
    if (!k)
        return 0;
    size_t sig = sym_sig_len(k);
    if (!sym_encrypts(k))
        return sig;
    /* The encrypted part [16, end) must be whole AES blocks: the largest
     * that fits is (cap - 16) rounded down; a full chunk then carries a
     * PaddingSize of 0 and no padding. */
    if (cap < UAS_SYM_HEADER_LEN + UAS_SEQ_HEADER_LEN + 1 + sig + UAS_AES_BLOCK)
        return cap;
    size_t area = (cap - UAS_SYM_HEADER_LEN) / UAS_AES_BLOCK * UAS_AES_BLOCK;
    size_t body_end = UAS_SYM_HEADER_LEN + area - sig - 1;
    return cap - body_end;
}

static uas_status rsa_sym_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                                  size_t cap)
{
    uas_secpol_keys *k = keys;
    if (!k || header_len < UAS_SYM_HEADER_LEN || *len < header_len + UAS_SEQ_HEADER_LEN)
        return UAS_BAD_INTERNAL_ERROR;
    uas_sym_gen *g = uas__secpol_gen(k, get_u32(chunk + header_len - 4));
    if (!g)
        return UAS_BAD_INTERNAL_ERROR;
    size_t sig = sym_sig_len(k);
    size_t end = *len;
    size_t total;
    if (sym_encrypts(k)) {
        size_t plain = end - header_len;
        size_t pad = (UAS_AES_BLOCK - (plain + 1 + sig) % UAS_AES_BLOCK) % UAS_AES_BLOCK;
        total = end + 1 + pad + sig;
        if (total > cap)
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        /* PaddingSize and every Padding byte carry the padding size. */
        memset(chunk + end, (int)pad, pad + 1);
        end += pad + 1;
    } else {
        total = end + sig;
        if (total > cap)
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    }
    if (total > UINT32_MAX)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    put_u32(chunk + 4, (uint32_t)total);
    uas_status st = uas_crypto_hmac_keyed(&g->mac_local, chunk, end, NULL, 0, chunk + end);
    if (st == UAS_GOOD && sym_encrypts(k))
        st = uas_crypto_aes_cbc_run(&g->enc_local, g->local.iv, chunk + header_len,
                                    total - header_len);
    if (st != UAS_GOOD)
        return st;
    *len = total;
    return UAS_GOOD;
}

static uas_status rsa_sym_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    uas_secpol_keys *k = keys;
    if (!k || header_len < UAS_SYM_HEADER_LEN || *len < header_len)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    uas_sym_gen *g = uas__secpol_gen(k, get_u32(chunk + header_len - 4));
    if (!g)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    size_t sig = sym_sig_len(k);
    size_t n = *len - header_len;
    bool enc = sym_encrypts(k);
    /* Length checks are on public data and may end early. */
    if (n < UAS_SEQ_HEADER_LEN + sig + (enc ? 1u : 0u) || (enc && n % UAS_AES_BLOCK != 0))
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    if (enc &&
        uas_crypto_aes_cbc_run(&g->dec_remote, g->remote.iv, chunk + header_len, n) != UAS_GOOD)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    /* The MAC covers everything before the signature, whose place follows
     * from the chunk length alone; so it is checked over the same bytes
     * whatever the padding says, and a chunk that fails it is refused
     * before its padding is read. What an attacker can learn from the
     * timing is then only that the MAC failed: the padding is read only
     * in chunks the key holder made, and needs no constant-time scan. */
    size_t sig_at = *len - sig;
    if (uas_crypto_hmac_keyed_verify(&g->mac_remote, chunk, sig_at, chunk + sig_at) != UAS_GOOD)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    size_t body_end = sig_at;
    if (enc && !sym_padding_ok(chunk, header_len + UAS_SEQ_HEADER_LEN, sig_at, &body_end))
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    *len = body_end;
    return UAS_GOOD;
}

/* ---- asymmetric chunks (OPN) ---- */

/* Sizes of an OPN chunk we send: signed with our key, encrypted with the
 * peer's. */
typedef struct asym_sizes {
    size_t sig;   /* our key size */
    size_t plain; /* plaintext bytes per block */
    size_t block; /* ciphertext bytes per block: the peer's key size */
    bool extra;   /* ExtraPaddingSize present: the peer's key > 2048 bits */
} asym_sizes;

static bool send_sizes(const uas_secpol_keys *k, asym_sizes *s)
{
    if (!k || !k->peer_spki)
        return false;
    size_t ov = uas_crypto_oaep_overhead(k->pol->algs->asym_enc);
    s->sig = uas_crypto_rsa_size(k->cred->key);
    s->block = k->peer_size;
    s->plain = s->block > ov ? s->block - ov : 0;
    s->extra = k->peer_bits > 2048;
    return s->sig && s->block && s->plain;
}

static size_t rsa_asym_overhead(const void *keys, size_t cap)
{
    const uas_secpol_keys *k = keys;
    asym_sizes s;
    if (!send_sizes(k, &s))
        return 0; /* asym_protect refuses the chunk */
    size_t h = uas__secpol_asym_header_len(k);
    size_t tail = s.sig + 1 + (s.extra ? 1u : 0u);
    if (cap < h + s.block)
        return cap;
    size_t plain_max = (cap - h) / s.block * s.plain;
    if (plain_max < UAS_SEQ_HEADER_LEN + tail)
        return cap;
    return cap - (h + plain_max - tail);
}

static uas_status rsa_asym_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                                   size_t cap)
{
    uas_secpol_keys *k = keys;
    asym_sizes s;
    if (!send_sizes(k, &s) || *len < header_len + UAS_SEQ_HEADER_LEN)
        return UAS_BAD_INTERNAL_ERROR;
    const struct uas_secpol_algs *a = k->pol->algs;
    size_t bytes = *len - header_len + 1 + (s.extra ? 1u : 0u) + s.sig;
    size_t pad = (s.plain - bytes % s.plain) % s.plain;
    size_t plain_total = bytes + pad;
    size_t wire_len = header_len + plain_total / s.plain * s.block;
    if (wire_len > cap || wire_len > UINT32_MAX || (!s.extra && pad > 255))
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    uint8_t *p = chunk + *len;
    memset(p, (int)(pad & 0xff), pad + 1);
    p += pad + 1;
    if (s.extra)
        *p++ = (uint8_t)(pad >> 8);
    put_u32(chunk + 4, (uint32_t)wire_len);
    uas_status st =
        uas_crypto_rsa_sign(a->asym_sig, k->cred->key, chunk, (size_t)(p - chunk), p, s.sig);
    size_t out = 0;
    EVP_PKEY *peer = st == UAS_GOOD ? uas__secpol_peer_pkey(k) : NULL;
    if (st == UAS_GOOD && !peer)
        st = UAS_BAD_INTERNAL_ERROR;
    if (st == UAS_GOOD)
        st = uas_crypto_rsa_encrypt(a->asym_enc, peer, chunk + header_len, plain_total,
                                    chunk + header_len, cap - header_len, &out);
    EVP_PKEY_free(peer);
    if (st != UAS_GOOD)
        return st;
    *len = header_len + out;
    return UAS_GOOD;
}

static uas_status rsa_asym_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    uas_secpol_keys *k = keys;
    if (!k || header_len < 12 || *len < header_len)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    const struct uas_secpol_algs *a = k->pol->algs;

    EVP_PKEY *sender = NULL;
    uint8_t sender_thumb[UAS_SHA1_LEN];
    uas_status st = uas__secpol_opn_sender(k, chunk, header_len, &sender, sender_thumb);
    if (st != UAS_GOOD)
        return st;

    size_t n = *len - header_len;
    size_t own = uas_crypto_rsa_size(k->cred->key);
    size_t own_plain = uas_crypto_rsa_plain_block(k->cred->key, a->asym_enc);
    size_t sig = uas_crypto_rsa_size(sender);
    bool extra = k->cred->key_bits > 2048; /* the key that encrypted is ours */
    size_t plain = n / own * own_plain;
    if (n == 0 || n % own != 0 || plain < UAS_SEQ_HEADER_LEN + 1 + (extra ? 1u : 0u) + sig) {
        EVP_PKEY_free(sender);
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    /* From here on no early exit: decryption, signature and padding are
     * all checked, and any failure gives one answer. */
    size_t got = 0;
    unsigned bad = uas_crypto_rsa_decrypt(a->asym_enc, k->cred->key, chunk + header_len, n,
                                          chunk + header_len, n, &got) != UAS_GOOD;
    bad |= got != plain;
    size_t sig_at = header_len + plain - sig;
    bad |=
        uas_crypto_rsa_verify(a->asym_sig, sender, chunk, sig_at, chunk + sig_at, sig) != UAS_GOOD;
    size_t body_end = sig_at;
    size_t after = sig_at - (extra ? 1u : 0u);
    bad |= check_padding(chunk, header_len + UAS_SEQ_HEADER_LEN, after, extra, &body_end);
    if (bad) {
        EVP_PKEY_free(sender);
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    st = k->peer_spki ? UAS_GOOD : uas__secpol_set_peer_key(k, sender, sender_thumb);
    EVP_PKEY_free(sender);
    if (st != UAS_GOOD)
        return st;
    *len = body_end;
    return UAS_GOOD;
}

/* ---- the policies ---- */

#define RSA_HOOKS                                                                                  \
    .sym_overhead = rsa_sym_overhead, .sym_protect = rsa_sym_protect,                              \
    .sym_unprotect = rsa_sym_unprotect, .asym_overhead = rsa_asym_overhead,                        \
    .asym_protect = rsa_asym_protect, .asym_unprotect = rsa_asym_unprotect

#define URI_RSA_SHA1    "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
#define URI_RSA_SHA256  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
#define URI_RSA_PSS     "http://opcfoundation.org/UA/security/rsa-pss-sha2-256"
#define URI_OAEP_SHA1   "http://www.w3.org/2001/04/xmlenc#rsa-oaep"
#define URI_OAEP_SHA256 "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256"

const uas_secpol uas_secpol_basic256sha256 = {
    .uri = UAS_SECPOL_BASIC256SHA256_URI,
    RSA_HOOKS,
    .nonce_len = 32,
    .min_key_bits = 2048,
    .max_key_bits = 4096,
    .asym_signature_uri = URI_RSA_SHA256,
    .asym_encryption_uri = URI_OAEP_SHA1,
    .algs = &algs_basic256sha256,
};

const uas_secpol uas_secpol_aes128_sha256_rsaoaep = {
    .uri = UAS_SECPOL_AES128_SHA256_RSAOAEP_URI,
    RSA_HOOKS,
    .nonce_len = 32,
    .min_key_bits = 2048,
    .max_key_bits = 4096,
    .asym_signature_uri = URI_RSA_SHA256,
    .asym_encryption_uri = URI_OAEP_SHA1,
    .algs = &algs_aes128_sha256_rsaoaep,
};

const uas_secpol uas_secpol_aes256_sha256_rsapss = {
    .uri = UAS_SECPOL_AES256_SHA256_RSAPSS_URI,
    RSA_HOOKS,
    .nonce_len = 32,
    .min_key_bits = 2048,
    .max_key_bits = 4096,
    .asym_signature_uri = URI_RSA_PSS,
    .asym_encryption_uri = URI_OAEP_SHA256,
    .algs = &algs_aes256_sha256_rsapss,
};

/* Deprecated since 1.04 (SHA1): only with an explicit opt-in. */
const uas_secpol uas_secpol_basic256 = {
    .uri = UAS_SECPOL_BASIC256_URI,
    RSA_HOOKS,
    .nonce_len = 32,
    .min_key_bits = 1024,
    .max_key_bits = 2048,
    .deprecated = true,
    .asym_signature_uri = URI_RSA_SHA1,
    .asym_encryption_uri = URI_OAEP_SHA1,
    .algs = &algs_basic256,
};
