/* The ECC security policies (Part 6, 6.8; Part 7) and their chunk hooks.
 *
 * Handshake: each side's OPN nonce is the public half of a fresh ephemeral
 * key on the policy's curve (x | y for the Weierstrass curves, the raw key
 * for X25519 / X448). OPN chunks are signed with the application key
 * (ECDSA r | s, Ed25519, Ed448) and not encrypted, so they carry no
 * padding. Both sides compute the shared secret and derive, per direction,
 *   HKDF(IKM = secret, salt = info = L | label | own nonce | peer nonce, L)
 * with label "opcua-server" for the server's keys and "opcua-client" for
 * the client's, L the bytes of SigningKey | EncryptingKey | IV (a 16-bit
 * little-endian number).
 *
 * Symmetric chunks: [MessageHeader | TokenId] [SequenceHeader | Body] [Tag]
 * with no padding. SignAndEncrypt seals the bracket with the header as
 * additional data; Sign authenticates the whole chunk as additional data
 * with nothing encrypted. The AEAD nonce is the derived IV with the TokenId
 * XORed into bytes 0..3 and the previous chunk's sequence number into
 * bytes 4..7: the receiver knows that number without decrypting, and a
 * replayed or reordered chunk fails its tag.
 *
 * SecureChannelEnhancements (1.05.07; the NIST and brainpool AEAD
 * policies): the first OPN response is signed over the response chunk
 * followed by the request's signature, and that response signature is the
 * ChannelThumbprint the session signatures are bound to; on renewal the
 * IKM is the previous IKM XOR the new shared secret. */
#include <string.h>

#include <sodium.h>

#include <ua/types.h>

#include "secpol_internal.h"

#define POLICY_PREFIX "http://opcfoundation.org/UA/SecurityPolicy#"

/* The suites. Derived key material: the AesGcm and ChaChaPoly policies of
 * the NIST and brainpool curves derive no signing key (the AEAD key tags
 * in both modes); curve25519 / curve448 derive a 32-byte signing key that
 * keys the tag in mode Sign. */
#define SUITE(name, c, a, m, ml, sk, ek, sl, enh, tws)                                             \
    static const struct uas_ecc_suite name = {                                                     \
        .curve = c,                                                                                \
        .aead = a,                                                                                 \
        .md = m,                                                                                   \
        .md_len = ml,                                                                              \
        .sign_key_len = sk,                                                                        \
        .enc_key_len = ek,                                                                         \
        .sig_len = sl,                                                                             \
        .enhanced = enh,                                                                           \
        .tag_with_sign_key = tws,                                                                  \
    }

SUITE(s_p256_gcm, UAS_ECC_NISTP256, UAS_AEAD_AES128_GCM, "SHA256", 32, 0, 16, 64, true, false);
SUITE(s_p256_chacha, UAS_ECC_NISTP256, UAS_AEAD_CHACHA20_POLY1305, "SHA256", 32, 0, 32, 64, true,
      false);
SUITE(s_p384_gcm, UAS_ECC_NISTP384, UAS_AEAD_AES256_GCM, "SHA384", 48, 0, 32, 96, true, false);
SUITE(s_p384_chacha, UAS_ECC_NISTP384, UAS_AEAD_CHACHA20_POLY1305, "SHA384", 48, 0, 32, 96, true,
      false);
SUITE(s_bp256_gcm, UAS_ECC_BRAINPOOLP256R1, UAS_AEAD_AES128_GCM, "SHA256", 32, 0, 16, 64, true,
      false);
SUITE(s_bp256_chacha, UAS_ECC_BRAINPOOLP256R1, UAS_AEAD_CHACHA20_POLY1305, "SHA256", 32, 0, 32, 64,
      true, false);
SUITE(s_bp384_gcm, UAS_ECC_BRAINPOOLP384R1, UAS_AEAD_AES256_GCM, "SHA384", 48, 0, 32, 96, true,
      false);
SUITE(s_bp384_chacha, UAS_ECC_BRAINPOOLP384R1, UAS_AEAD_CHACHA20_POLY1305, "SHA384", 48, 0, 32, 96,
      true, false);
SUITE(s_25519, UAS_ECC_CURVE25519, UAS_AEAD_CHACHA20_POLY1305, "SHA256", 32, 32, 32, 64, false,
      true);
SUITE(s_448, UAS_ECC_CURVE448, UAS_AEAD_CHACHA20_POLY1305, "SHA256", 32, 32, 32, 114, false, true);

/* The per-token AEAD keys. */
typedef struct ecc_gen {
    uint32_t token_id;
    bool valid;
    uas_aead_key local;  /* what we send */
    uas_aead_key remote; /* what we receive */
} ecc_gen;

enum first_opn { FIRST_NONE, FIRST_REQ_SENT, FIRST_REQ_GOT, FIRST_DONE };

struct uas_ecc_chan {
    uas_ecc_eph eph;
    uint8_t nonce[UAS_ECC_NONCE_MAX]; /* our ephemeral public key */
    ecc_gen gen[2];                   /* [0] newest token, [1] the previous one */
    uint32_t recv_seq;                /* sequence number of the last chunk received */
    bool recv_seq_known;
    enum first_opn first;
    uint8_t req_sig[UAS_ECC_SIG_MAX]; /* first OPN request's signature (enhanced) */
    uint8_t thumbprint[UAS_ECC_SIG_MAX];
    uint8_t thumbprint_len;
    uint8_t ikm[UAS_ECC_SECRET_MAX];
    uint8_t ikm_len;
};

static const struct uas_ecc_suite *suite(const uas_secpol_keys *k)
{
    return k->pol->ecc;
}

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

static void gen_clear(ecc_gen *g)
{
    uas__aead_key_clear(&g->local);
    uas__aead_key_clear(&g->remote);
    sodium_memzero(g, sizeof(*g));
}

uas_status uas__ecc_chan_new(uas_secpol_keys *k)
{
    k->ecc = uas_calloc(1, sizeof(*k->ecc));
    return k->ecc ? UAS_GOOD : UAS_BAD_OUT_OF_MEMORY;
}

void uas__ecc_chan_free(uas_secpol_keys *k)
{
    struct uas_ecc_chan *e = k->ecc;
    if (!e)
        return;
    uas__ecc_eph_clear(&e->eph);
    gen_clear(&e->gen[0]);
    gen_clear(&e->gen[1]);
    sodium_memzero(e, sizeof(*e));
    uas_free(e, sizeof(*e));
    k->ecc = NULL;
}

uas_status uas__ecc_make_nonce(uas_secpol_keys *k, uint8_t *out, size_t len)
{
    if (len != k->pol->nonce_len)
        return UAS_BAD_INVALID_ARGUMENT;
    uas_status st = uas__ecc_eph_new(suite(k)->curve, &k->ecc->eph, out, len);
    if (st == UAS_GOOD)
        memcpy(k->ecc->nonce, out, len);
    return st;
}

static uas_status derive_dir(const struct uas_ecc_suite *s, const uint8_t *ikm, size_t ikm_len,
                             const char *label, const uint8_t *own, const uint8_t *peer, size_t n,
                             uint8_t *out, size_t out_len)
{
    uint8_t salt[2 + 12 + 2 * UAS_ECC_NONCE_MAX];
    salt[0] = (uint8_t)out_len;
    salt[1] = (uint8_t)(out_len >> 8);
    memcpy(salt + 2, label, 12);
    memcpy(salt + 14, own, n);
    memcpy(salt + 14 + n, peer, n);
    size_t sl = 14 + 2 * n;
    return uas__ecc_hkdf(s->md, ikm, ikm_len, salt, sl, salt, sl, out, out_len);
}

/* Keys one direction's AEAD from SigningKey | EncryptingKey | IV. */
static uas_status key_dir(const uas_secpol_keys *k, uas_aead_key *ak, bool encrypt,
                          const uint8_t *material)
{
    const struct uas_ecc_suite *s = suite(k);
    const uint8_t *key = material + s->sign_key_len;
    if (s->tag_with_sign_key && k->mode == UAS_MESSAGE_SECURITY_MODE_SIGN)
        key = material;
    return uas__aead_key_set(ak, s->aead, encrypt, key,
                             material + s->sign_key_len + s->enc_key_len);
}

uas_status uas__ecc_derive(uas_secpol_keys *k, uint32_t token_id, const uint8_t *local_nonce,
                           const uint8_t *remote_nonce, size_t n, bool is_server)
{
    struct uas_ecc_chan *e = k->ecc;
    const struct uas_ecc_suite *s = suite(k);
    /* Our nonce must be the public key whose private half we hold. */
    if (!e->eph.have || sodium_memcmp(local_nonce, e->nonce, n) != 0)
        return UAS_BAD_NONCE_INVALID;
    uint8_t secret[UAS_ECC_SECRET_MAX];
    size_t secret_len = 0;
    uas_status st = uas__ecc_shared(s->curve, &e->eph, remote_nonce, n, secret, &secret_len);
    /* An ephemeral key serves one exchange. */
    uas__ecc_eph_clear(&e->eph);
    if (st != UAS_GOOD)
        return st;
    if (s->enhanced && e->ikm_len == secret_len) {
        for (size_t i = 0; i < secret_len; i++)
            secret[i] ^= e->ikm[i];
    }
    const uint8_t *client = is_server ? remote_nonce : local_nonce;
    const uint8_t *server = is_server ? local_nonce : remote_nonce;
    size_t L = (size_t)s->sign_key_len + s->enc_key_len + UAS_AEAD_IV_LEN;
    uint8_t ck[32 + UAS_AEAD_KEY_MAX + UAS_AEAD_IV_LEN], sk[sizeof(ck)];
    st = derive_dir(s, secret, secret_len, "opcua-client", client, server, n, ck, L);
    if (st == UAS_GOOD)
        st = derive_dir(s, secret, secret_len, "opcua-server", server, client, n, sk, L);
    ecc_gen g;
    memset(&g, 0, sizeof(g));
    g.token_id = token_id;
    g.valid = true;
    if (st == UAS_GOOD)
        st = key_dir(k, &g.local, true, is_server ? sk : ck);
    if (st == UAS_GOOD)
        st = key_dir(k, &g.remote, false, is_server ? ck : sk);
    if (st == UAS_GOOD && s->enhanced) {
        memcpy(e->ikm, secret, secret_len);
        e->ikm_len = (uint8_t)secret_len;
    }
    sodium_memzero(secret, sizeof(secret));
    sodium_memzero(ck, sizeof(ck));
    sodium_memzero(sk, sizeof(sk));
    if (st != UAS_GOOD) {
        gen_clear(&g);
        return st;
    }
    if (e->gen[0].valid && e->gen[0].token_id != token_id) {
        gen_clear(&e->gen[1]);
        e->gen[1] = e->gen[0];
    } else {
        gen_clear(&e->gen[0]);
    }
    e->gen[0] = g; /* the cipher contexts move with it */
    sodium_memzero(&g, sizeof(g));
    return UAS_GOOD;
}

void uas__ecc_copy_sign_state(uas_secpol_keys *dst, const uas_secpol_keys *src)
{
    if (!dst->ecc || !src->ecc)
        return;
    dst->ecc->first = src->ecc->first;
    memcpy(dst->ecc->req_sig, src->ecc->req_sig, sizeof(dst->ecc->req_sig));
    memcpy(dst->ecc->thumbprint, src->ecc->thumbprint, sizeof(dst->ecc->thumbprint));
    dst->ecc->thumbprint_len = src->ecc->thumbprint_len;
}

void uas__ecc_drop_prev(uas_secpol_keys *k)
{
    if (k->ecc)
        gen_clear(&k->ecc->gen[1]);
}

static ecc_gen *gen_of(struct uas_ecc_chan *e, uint32_t token_id)
{
    for (int i = 0; i < 2; i++)
        if (e->gen[i].valid && e->gen[i].token_id == token_id)
            return &e->gen[i];
    return NULL;
}

static bool encrypts(const uas_secpol_keys *k)
{
    return k->mode == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
}

/* ---- symmetric chunks ---- */

static size_t ecc_sym_overhead(const void *keys, size_t cap)
{
    (void)keys;
    (void)cap;
    return UAS_AEAD_TAG_LEN;
}

static uas_status ecc_sym_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                                  size_t cap)
{
    uas_secpol_keys *k = keys;
    if (!k || !k->ecc || header_len < UAS_SYM_HEADER_LEN ||
        *len < header_len + UAS_SEQ_HEADER_LEN || *len + UAS_AEAD_TAG_LEN > cap)
        return UAS_BAD_INTERNAL_ERROR;
    uint32_t token_id = get_u32(chunk + header_len - 4);
    ecc_gen *g = gen_of(k->ecc, token_id);
    if (!g)
        return UAS_BAD_INTERNAL_ERROR;
    uint32_t seq = get_u32(chunk + header_len);
    size_t total = *len + UAS_AEAD_TAG_LEN;
    put_u32(chunk + 4, (uint32_t)total);
    uas_status st;
    if (encrypts(k))
        st = uas__aead_seal(&g->local, suite(k)->aead, token_id, seq - 1, chunk, header_len,
                            chunk + header_len, *len - header_len, chunk + *len);
    else
        st = uas__aead_seal(&g->local, suite(k)->aead, token_id, seq - 1, chunk, *len, NULL, 0,
                            chunk + *len);
    if (st == UAS_GOOD)
        *len = total;
    return st;
}

static uas_status ecc_sym_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    uas_secpol_keys *k = keys;
    if (!k || !k->ecc || header_len < UAS_SYM_HEADER_LEN ||
        *len < header_len + UAS_SEQ_HEADER_LEN + UAS_AEAD_TAG_LEN || !k->ecc->recv_seq_known)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    uint32_t token_id = get_u32(chunk + header_len - 4);
    ecc_gen *g = gen_of(k->ecc, token_id);
    if (!g)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    size_t end = *len - UAS_AEAD_TAG_LEN;
    /* The nonce takes the sequence number the chunk must follow: a
     * replayed, dropped or reordered chunk fails here. */
    uint32_t prev = k->ecc->recv_seq;
    uas_status st;
    if (encrypts(k))
        st = uas__aead_open(&g->remote, suite(k)->aead, token_id, prev, chunk, header_len,
                            chunk + header_len, end - header_len, chunk + end);
    else
        st = uas__aead_open(&g->remote, suite(k)->aead, token_id, prev, chunk, end, NULL, 0,
                            chunk + end);
    if (st != UAS_GOOD)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    k->ecc->recv_seq = get_u32(chunk + header_len);
    *len = end;
    return UAS_GOOD;
}

/* ---- OPN chunks: signed, never encrypted, no padding ---- */

static size_t ecc_asym_overhead(const void *keys, size_t cap)
{
    (void)cap;
    const uas_secpol_keys *k = keys;
    return k ? k->pol->ecc->sig_len : 0;
}

static uas_status ecc_asym_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                                   size_t cap)
{
    uas_secpol_keys *k = keys;
    if (!k || !k->ecc || *len < header_len)
        return UAS_BAD_INTERNAL_ERROR;
    struct uas_ecc_chan *e = k->ecc;
    const struct uas_ecc_suite *s = suite(k);
    size_t total = *len + s->sig_len;
    if (total > cap)
        return UAS_BAD_INTERNAL_ERROR;
    put_u32(chunk + 4, (uint32_t)total);
    /* Enhanced, first response: sign the chunk followed by the request's
     * signature; our signature becomes the ChannelThumbprint. */
    bool bind = s->enhanced && e->first == FIRST_REQ_GOT;
    uas_status st = uas__ecc_sign(s, k->cred->key, k->cred->ed_sk, chunk, *len,
                                  bind ? e->req_sig : NULL, bind ? s->sig_len : 0, chunk + *len);
    if (st != UAS_GOOD)
        return st;
    if (s->enhanced && e->first == FIRST_NONE) {
        memcpy(e->req_sig, chunk + *len, s->sig_len);
        e->first = FIRST_REQ_SENT;
    } else if (bind) {
        memcpy(e->thumbprint, chunk + *len, s->sig_len);
        e->thumbprint_len = s->sig_len;
        e->first = FIRST_DONE;
    }
    *len = total;
    return UAS_GOOD;
}

static uas_status ecc_asym_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    uas_secpol_keys *k = keys;
    if (!k || !k->ecc || header_len < 12 || *len < header_len)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    struct uas_ecc_chan *e = k->ecc;
    const struct uas_ecc_suite *s = suite(k);
    EVP_PKEY *sender = NULL;
    uint8_t sender_thumb[UAS_SHA1_LEN];
    uas_status st = uas__secpol_opn_sender(k, chunk, header_len, &sender, sender_thumb);
    if (st != UAS_GOOD)
        return st; /* a wrong curve: BadCertificatePolicyCheckFailed */
    if (*len < header_len + UAS_SEQ_HEADER_LEN + 1 + s->sig_len) {
        EVP_PKEY_free(sender);
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    size_t sig_at = *len - s->sig_len;
    /* Enhanced, first response: the server signed our request's signature
     * too. */
    bool bind = s->enhanced && e->first == FIRST_REQ_SENT;
    st = uas__ecc_verify(s, sender, chunk, sig_at, bind ? e->req_sig : NULL, bind ? s->sig_len : 0,
                         chunk + sig_at, s->sig_len);
    if (st == UAS_GOOD && !k->peer_spki)
        st = uas__secpol_set_peer_key(k, sender, sender_thumb);
    EVP_PKEY_free(sender);
    if (st != UAS_GOOD)
        return st;
    if (s->enhanced && e->first == FIRST_NONE) {
        memcpy(e->req_sig, chunk + sig_at, s->sig_len);
        e->first = FIRST_REQ_GOT;
    } else if (bind) {
        memcpy(e->thumbprint, chunk + sig_at, s->sig_len);
        e->thumbprint_len = s->sig_len;
        e->first = FIRST_DONE;
    }
    e->recv_seq = get_u32(chunk + header_len);
    e->recv_seq_known = true;
    *len = sig_at;
    return UAS_GOOD;
}

/* ---- channel-bound signature data (enhanced policies) ---- */

bool uas_secpol_keys_enhanced(const uas_secpol_keys *k)
{
    return k && k->pol->ecc && k->pol->ecc->enhanced;
}

uas_status uas_secpol_keys_bound_data(const uas_secpol_keys *k, const uint8_t *nonce_a,
                                      size_t nonce_a_len, const uint8_t *const *certs,
                                      const size_t *cert_lens, size_t n_certs,
                                      const uint8_t *nonce_b, size_t nonce_b_len, uint8_t **out,
                                      size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!uas_secpol_keys_enhanced(k) || !k->ecc->thumbprint_len || n_certs > 4)
        return UAS_BAD_INVALID_STATE;
    const struct uas_ecc_suite *s = suite(k);
    size_t n = k->ecc->thumbprint_len + nonce_a_len + n_certs * s->md_len + nonce_b_len;
    uint8_t *d = uas_malloc(n ? n : 1);
    if (!d)
        return UAS_BAD_OUT_OF_MEMORY;
    uint8_t *p = d;
    memcpy(p, k->ecc->thumbprint, k->ecc->thumbprint_len);
    p += k->ecc->thumbprint_len;
    if (nonce_a_len)
        memcpy(p, nonce_a, nonce_a_len);
    p += nonce_a_len;
    for (size_t i = 0; i < n_certs; i++) {
        size_t leaf = 0;
        if (uas_crypto_cert_len(certs[i], cert_lens[i], &leaf) != UAS_GOOD ||
            EVP_Q_digest(NULL, s->md, NULL, certs[i], leaf, p, NULL) != 1) {
            uas_free(d, n ? n : 1);
            return UAS_BAD_CERTIFICATE_INVALID;
        }
        p += s->md_len;
    }
    if (nonce_b_len)
        memcpy(p, nonce_b, nonce_b_len);
    *out = d;
    *out_len = n;
    return UAS_GOOD;
}

const char *uas_secpol_cert_type(const uas_secpol *pol)
{
    if (!pol || (!pol->ecc && !pol->algs))
        return NULL;
    if (!pol->ecc)
        return "rsa";
    static const char *const names[] = {"nistP256",        "nistP384",   "brainpoolP256r1",
                                        "brainpoolP384r1", "curve25519", "curve448"};
    return names[pol->ecc->curve];
}

/* ---- the policies ---- */

#define ECC_POLICY(var, name, st, nl)                                                              \
    const uas_secpol var = {                                                                       \
        .uri = POLICY_PREFIX name,                                                                 \
        .sym_overhead = ecc_sym_overhead,                                                          \
        .sym_protect = ecc_sym_protect,                                                            \
        .sym_unprotect = ecc_sym_unprotect,                                                        \
        .asym_overhead = ecc_asym_overhead,                                                        \
        .asym_protect = ecc_asym_protect,                                                          \
        .asym_unprotect = ecc_asym_unprotect,                                                      \
        .nonce_len = nl,                                                                           \
        .asym_signature_uri = "",                                                                  \
        .asym_encryption_uri = "",                                                                 \
        .ecc = &st,                                                                                \
    }

ECC_POLICY(uas_secpol_ecc_nistp256_aesgcm, "ECC_nistP256_AesGcm", s_p256_gcm, 64);
ECC_POLICY(uas_secpol_ecc_nistp256_chachapoly, "ECC_nistP256_ChaChaPoly", s_p256_chacha, 64);
ECC_POLICY(uas_secpol_ecc_nistp384_aesgcm, "ECC_nistP384_AesGcm", s_p384_gcm, 96);
ECC_POLICY(uas_secpol_ecc_nistp384_chachapoly, "ECC_nistP384_ChaChaPoly", s_p384_chacha, 96);
ECC_POLICY(uas_secpol_ecc_brainpoolp256r1_aesgcm, "ECC_brainpoolP256r1_AesGcm", s_bp256_gcm, 64);
ECC_POLICY(uas_secpol_ecc_brainpoolp256r1_chachapoly, "ECC_brainpoolP256r1_ChaChaPoly",
           s_bp256_chacha, 64);
ECC_POLICY(uas_secpol_ecc_brainpoolp384r1_aesgcm, "ECC_brainpoolP384r1_AesGcm", s_bp384_gcm, 96);
ECC_POLICY(uas_secpol_ecc_brainpoolp384r1_chachapoly, "ECC_brainpoolP384r1_ChaChaPoly",
           s_bp384_chacha, 96);
ECC_POLICY(uas_secpol_ecc_curve25519, "ECC_curve25519", s_25519, 32);
ECC_POLICY(uas_secpol_ecc_curve448, "ECC_curve448", s_448, 56);
