/* The primitives of the ECC policies, each one call into libsodium or
 * OpenSSL 3 EVP: ephemeral keys and key agreement (ECDH on the NIST and
 * brainpool curves, X25519, X448), HKDF, ECDSA / EdDSA signatures and the
 * AEAD ciphers (AES-GCM, ChaCha20-Poly1305 IETF). */
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <sodium.h>

#include "secpol_ecc.h"

/* Algorithms fetched once per process: a fetch by name per operation
 * (EVP_DigestSignInit_ex with "SHA256", EVP_PKEY_Q_keygen) walks
 * OpenSSL's name map under its provider locks, which a set-up profile
 * showed. Fetched objects are immutable and shared between threads. */
static EVP_KDF *g_hkdf;
static EVP_MD *g_sha256, *g_sha384;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch_once(void)
{
    g_hkdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    g_sha384 = EVP_MD_fetch(NULL, "SHA384", NULL);
}

static const EVP_MD *suite_md(const struct uas_ecc_suite *s)
{
    pthread_once(&g_once, fetch_once);
    return strcmp(s->md, "SHA384") == 0 ? g_sha384 : g_sha256;
}

/* One key per Weierstrass curve, made on first use, that carries the
 * curve's group: key generation takes its group from it (a template)
 * and a peer's nonce is imported into a copy of its parameters. Both
 * spare the group's construction from its name per handshake
 * (EC_GROUP_new_by_curve_name and the name look-ups behind
 * EVP_PKEY_Q_keygen / EVP_PKEY_fromdata). Its private half is never
 * used. */
static EVP_PKEY *g_tmpl[UAS_ECC_CURVE448 + 1];
static pthread_mutex_t g_tmpl_lock = PTHREAD_MUTEX_INITIALIZER;

static EVP_PKEY *curve_template(uas_ecc_curve c)
{
    pthread_mutex_lock(&g_tmpl_lock);
    if (!g_tmpl[c])
        g_tmpl[c] = EVP_PKEY_Q_keygen(NULL, NULL, "EC", uas__ecc_group(c));
    EVP_PKEY *t = g_tmpl[c];
    pthread_mutex_unlock(&g_tmpl_lock);
    return t;
}

size_t uas__ecc_nonce_len(uas_ecc_curve c)
{
    switch (c) {
    case UAS_ECC_NISTP256:
    case UAS_ECC_BRAINPOOLP256R1:
        return 64;
    case UAS_ECC_NISTP384:
    case UAS_ECC_BRAINPOOLP384R1:
        return 96;
    case UAS_ECC_CURVE25519:
        return 32;
    case UAS_ECC_CURVE448:
        return 56;
    }
    return 0;
}

const char *uas__ecc_group(uas_ecc_curve c)
{
    switch (c) {
    case UAS_ECC_NISTP256:
        return "P-256";
    case UAS_ECC_NISTP384:
        return "P-384";
    case UAS_ECC_BRAINPOOLP256R1:
        return "brainpoolP256r1";
    case UAS_ECC_BRAINPOOLP384R1:
        return "brainpoolP384r1";
    case UAS_ECC_CURVE25519:
        return "X25519";
    case UAS_ECC_CURVE448:
        return "X448";
    }
    return "";
}

bool uas__ecc_key_curve(EVP_PKEY *k, uas_ecc_curve *out)
{
    if (!k)
        return false;
    if (EVP_PKEY_is_a(k, "ED25519")) {
        *out = UAS_ECC_CURVE25519;
        return true;
    }
    if (EVP_PKEY_is_a(k, "ED448")) {
        *out = UAS_ECC_CURVE448;
        return true;
    }
    if (!EVP_PKEY_is_a(k, "EC"))
        return false;
    char group[64];
    size_t n = 0;
    if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), &n) !=
        1) {
        ERR_clear_error();
        return false;
    }
    static const uas_ecc_curve ws[] = {UAS_ECC_NISTP256, UAS_ECC_NISTP384, UAS_ECC_BRAINPOOLP256R1,
                                       UAS_ECC_BRAINPOOLP384R1};
    for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
        const char *g = uas__ecc_group(ws[i]);
        /* OpenSSL names P-256 "prime256v1" and P-384 "secp384r1". */
        if (strcmp(group, g) == 0 || (ws[i] == UAS_ECC_NISTP256 && !strcmp(group, "prime256v1")) ||
            (ws[i] == UAS_ECC_NISTP384 && !strcmp(group, "secp384r1"))) {
            *out = ws[i];
            return true;
        }
    }
    return false;
}

bool uas__ecc_key_is(uas_ecc_curve c, EVP_PKEY *k)
{
    uas_ecc_curve got;
    return uas__ecc_key_curve(k, &got) && got == c;
}

/* ---- ephemeral keys and key agreement ---- */

uas_status uas__ecc_eph_new(uas_ecc_curve c, uas_ecc_eph *e, uint8_t *pub, size_t pub_len)
{
    uas__ecc_eph_clear(e);
    if (pub_len != uas__ecc_nonce_len(c))
        return UAS_BAD_INVALID_ARGUMENT;
    if (c == UAS_ECC_CURVE25519) {
        randombytes_buf(e->sk, sizeof(e->sk));
        if (crypto_scalarmult_base(pub, e->sk) != 0)
            return UAS_BAD_INTERNAL_ERROR;
        e->have = true;
        return UAS_GOOD;
    }
    uas_status st = UAS_BAD_INTERNAL_ERROR;
    if (c == UAS_ECC_CURVE448) {
        e->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "X448");
        size_t n = pub_len;
        if (e->pkey && EVP_PKEY_get_raw_public_key(e->pkey, pub, &n) == 1 && n == pub_len)
            st = UAS_GOOD;
    } else {
        EVP_PKEY *t = curve_template(c);
        EVP_PKEY_CTX *gc = t ? EVP_PKEY_CTX_new_from_pkey(NULL, t, NULL) : NULL;
        if (!gc || EVP_PKEY_keygen_init(gc) != 1 || EVP_PKEY_generate(gc, &e->pkey) != 1)
            e->pkey = NULL;
        EVP_PKEY_CTX_free(gc);
        uint8_t pt[1 + UAS_ECC_NONCE_MAX];
        size_t n = 0;
        if (e->pkey &&
            EVP_PKEY_get_octet_string_param(e->pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pt,
                                            sizeof(pt), &n) == 1 &&
            n == pub_len + 1 && pt[0] == 0x04) {
            memcpy(pub, pt + 1, pub_len);
            st = UAS_GOOD;
        }
    }
    if (st != UAS_GOOD) {
        ERR_clear_error();
        uas__ecc_eph_clear(e);
        return st;
    }
    e->have = true;
    return UAS_GOOD;
}

void uas__ecc_eph_clear(uas_ecc_eph *e)
{
    EVP_PKEY_free(e->pkey);
    sodium_memzero(e, sizeof(*e));
}

static EVP_PKEY *peer_key(uas_ecc_curve c, const uint8_t *peer, size_t len)
{
    if (c == UAS_ECC_CURVE448)
        return EVP_PKEY_new_raw_public_key_ex(NULL, "X448", NULL, peer, len);
    uint8_t pt[1 + UAS_ECC_NONCE_MAX];
    pt[0] = 0x04;
    memcpy(pt + 1, peer, len);
    EVP_PKEY *t = curve_template(c);
    EVP_PKEY *k = t ? EVP_PKEY_new() : NULL;
    /* The encoded point is decoded onto the copied group, which refuses a
     * point off the curve. */
    if (k && (EVP_PKEY_copy_parameters(k, t) != 1 ||
              EVP_PKEY_set1_encoded_public_key(k, pt, len + 1) != 1)) {
        EVP_PKEY_free(k);
        k = NULL;
    }
    return k;
}

uas_status uas__ecc_shared(uas_ecc_curve c, const uas_ecc_eph *e, const uint8_t *peer,
                           size_t peer_len, uint8_t *secret, size_t *secret_len)
{
    *secret_len = 0;
    if (!e->have || peer_len != uas__ecc_nonce_len(c))
        return UAS_BAD_NONCE_INVALID;
    if (c == UAS_ECC_CURVE25519) {
        /* libsodium refuses a result of all zeros: a low-order point. */
        if (crypto_scalarmult(secret, e->sk, peer) != 0)
            return UAS_BAD_NONCE_INVALID;
        *secret_len = crypto_scalarmult_BYTES;
        return UAS_GOOD;
    }
    uas_status st = UAS_BAD_NONCE_INVALID;
    EVP_PKEY *pk = peer_key(c, peer, peer_len);
    /* The import refused a point off the curve; the quick check refuses
     * the point at infinity and coordinates out of range. The full check
     * (set_peer_ex with validate 1) would add a scalar multiplication by
     * the group order, which proves nothing on these curves of cofactor
     * 1 (P-256, P-384, brainpool r1) and X448 has no such check. */
    EVP_PKEY_CTX *kc = pk ? EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL) : NULL;
    bool valid = kc && (c == UAS_ECC_CURVE448 || EVP_PKEY_public_check_quick(kc) == 1);
    EVP_PKEY_CTX *dc = valid ? EVP_PKEY_CTX_new_from_pkey(NULL, e->pkey, NULL) : NULL;
    size_t n = UAS_ECC_SECRET_MAX;
    if (dc && EVP_PKEY_derive_init(dc) == 1 && EVP_PKEY_derive_set_peer_ex(dc, pk, 0) == 1 &&
        EVP_PKEY_derive(dc, secret, &n) == 1) {
        *secret_len = n;
        st = UAS_GOOD;
    }
    EVP_PKEY_CTX_free(kc);
    EVP_PKEY_CTX_free(dc);
    EVP_PKEY_free(pk);
    ERR_clear_error();
    return st;
}

uas_status uas__ecc_hkdf(const char *md, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
                         size_t salt_len, const uint8_t *info, size_t info_len, uint8_t *out,
                         size_t out_len)
{
    pthread_once(&g_once, fetch_once);
    if (!g_hkdf)
        return UAS_BAD_INTERNAL_ERROR;
    char mdname[16];
    strncpy(mdname, md, sizeof(mdname) - 1);
    mdname[sizeof(mdname) - 1] = 0;
    /* An empty salt or info is left out: HKDF then uses its default (a
     * salt of HashLen zeros, RFC 5869 2.2). */
    OSSL_PARAM params[5];
    size_t np = 0;
    params[np++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, mdname, 0);
    params[np++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
    if (salt_len)
        params[np++] =
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    if (info_len)
        params[np++] =
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    params[np] = OSSL_PARAM_construct_end();
    EVP_KDF_CTX *k = EVP_KDF_CTX_new(g_hkdf);
    uas_status st =
        k && EVP_KDF_derive(k, out, out_len, params) == 1 ? UAS_GOOD : UAS_BAD_INTERNAL_ERROR;
    EVP_KDF_CTX_free(k);
    ERR_clear_error();
    return st;
}

/* ---- signatures ---- */

/* ECDSA signatures travel as r | s, each padded to the field size
 * (Part 7); OpenSSL speaks DER. */
static uas_status ecdsa_der_to_raw(const uint8_t *der, size_t der_len, uint8_t *raw, size_t n)
{
    const uint8_t *p = der;
    ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    if (!s)
        return UAS_BAD_INTERNAL_ERROR;
    const BIGNUM *r, *sv;
    ECDSA_SIG_get0(s, &r, &sv);
    uas_status st = BN_bn2binpad(r, raw, (int)(n / 2)) == (int)(n / 2) &&
                            BN_bn2binpad(sv, raw + n / 2, (int)(n / 2)) == (int)(n / 2)
                        ? UAS_GOOD
                        : UAS_BAD_INTERNAL_ERROR;
    ECDSA_SIG_free(s);
    return st;
}

static int ecdsa_raw_to_der(const uint8_t *raw, size_t n, uint8_t **der)
{
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, (int)(n / 2), NULL);
    BIGNUM *sv = BN_bin2bn(raw + n / 2, (int)(n / 2), NULL);
    int len = -1;
    if (s && r && sv && ECDSA_SIG_set0(s, r, sv) == 1) {
        r = sv = NULL;
        len = i2d_ECDSA_SIG(s, der);
    }
    BN_free(r);
    BN_free(sv);
    ECDSA_SIG_free(s);
    return len;
}

uas_status uas__ecc_sign(const struct uas_ecc_suite *s, EVP_PKEY *priv, const uint8_t *ed_sk,
                         const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                         uint8_t *sig)
{
    if (s->curve == UAS_ECC_CURVE25519) {
        if (b_len)
            return UAS_BAD_INTERNAL_ERROR;
        return crypto_sign_ed25519_detached(sig, NULL, a, a_len, ed_sk) == 0
                   ? UAS_GOOD
                   : UAS_BAD_INTERNAL_ERROR;
    }
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    uas_status st = UAS_BAD_INTERNAL_ERROR;
    if (!mc)
        return UAS_BAD_OUT_OF_MEMORY;
    if (s->curve == UAS_ECC_CURVE448) {
        size_t n = s->sig_len;
        if (!b_len && EVP_DigestSignInit_ex(mc, NULL, NULL, NULL, NULL, priv, NULL) == 1 &&
            EVP_DigestSign(mc, sig, &n, a, a_len) == 1 && n == s->sig_len)
            st = UAS_GOOD;
    } else {
        uint8_t der[160];
        size_t n = sizeof(der);
        if (EVP_DigestSignInit(mc, NULL, suite_md(s), NULL, priv) == 1 &&
            EVP_DigestSignUpdate(mc, a, a_len) == 1 &&
            (!b_len || EVP_DigestSignUpdate(mc, b, b_len) == 1) &&
            EVP_DigestSignFinal(mc, der, &n) == 1)
            st = ecdsa_der_to_raw(der, n, sig, s->sig_len);
    }
    EVP_MD_CTX_free(mc);
    ERR_clear_error();
    return st;
}

uas_status uas__ecc_verify(const struct uas_ecc_suite *s, EVP_PKEY *pub, const uint8_t *a,
                           size_t a_len, const uint8_t *b, size_t b_len, const uint8_t *sig,
                           size_t sig_len)
{
    if (!pub || sig_len != s->sig_len)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    if (s->curve == UAS_ECC_CURVE25519) {
        uint8_t pk[32];
        size_t n = sizeof(pk);
        if (b_len || EVP_PKEY_get_raw_public_key(pub, pk, &n) != 1 || n != sizeof(pk)) {
            ERR_clear_error();
            return UAS_BAD_SECURITY_CHECKS_FAILED;
        }
        return crypto_sign_ed25519_verify_detached(sig, a, a_len, pk) == 0
                   ? UAS_GOOD
                   : UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    if (!mc)
        return UAS_BAD_OUT_OF_MEMORY;
    bool ok = false;
    if (s->curve == UAS_ECC_CURVE448) {
        ok = !b_len && EVP_DigestVerifyInit_ex(mc, NULL, NULL, NULL, NULL, pub, NULL) == 1 &&
             EVP_DigestVerify(mc, sig, sig_len, a, a_len) == 1;
    } else {
        uint8_t *der = NULL;
        int dl = ecdsa_raw_to_der(sig, sig_len, &der);
        ok = dl > 0 && EVP_DigestVerifyInit(mc, NULL, suite_md(s), NULL, pub) == 1 &&
             EVP_DigestVerifyUpdate(mc, a, a_len) == 1 &&
             (!b_len || EVP_DigestVerifyUpdate(mc, b, b_len) == 1) &&
             EVP_DigestVerifyFinal(mc, der, (size_t)dl) == 1;
        OPENSSL_free(der);
    }
    EVP_MD_CTX_free(mc);
    ERR_clear_error();
    return ok ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}

/* ---- AEAD ---- */

void uas__aead_nonce(const uint8_t iv[UAS_AEAD_IV_LEN], uint32_t token_id, uint32_t seq,
                     uint8_t out[UAS_AEAD_IV_LEN])
{
    memcpy(out, iv, UAS_AEAD_IV_LEN);
    for (int i = 0; i < 4; i++) {
        out[i] ^= (uint8_t)(token_id >> (8 * i));
        out[4 + i] ^= (uint8_t)(seq >> (8 * i));
    }
}

uas_status uas__aead_key_set(uas_aead_key *k, uas_aead a, bool encrypt, const uint8_t *key,
                             const uint8_t *iv)
{
    uas__aead_key_clear(k);
    size_t kl = a == UAS_AEAD_AES128_GCM ? 16 : 32;
    memcpy(k->key, key, kl);
    memcpy(k->iv, iv, UAS_AEAD_IV_LEN);
    if (a == UAS_AEAD_CHACHA20_POLY1305)
        return UAS_GOOD;
    k->ctx = EVP_CIPHER_CTX_new();
    if (!k->ctx)
        return UAS_BAD_OUT_OF_MEMORY;
    const EVP_CIPHER *c = a == UAS_AEAD_AES128_GCM ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
    int ok = encrypt ? EVP_EncryptInit_ex2(k->ctx, c, key, NULL, NULL)
                     : EVP_DecryptInit_ex2(k->ctx, c, key, NULL, NULL);
    if (ok != 1) {
        ERR_clear_error();
        uas__aead_key_clear(k);
        return UAS_BAD_INTERNAL_ERROR;
    }
    /* The AES key schedule now lives in the context (OpenSSL wipes it on
     * free); our copy is kept for nothing but is zeroed with the rest. */
    return UAS_GOOD;
}

void uas__aead_key_clear(uas_aead_key *k)
{
    EVP_CIPHER_CTX_free(k->ctx);
    sodium_memzero(k, sizeof(*k));
}

uas_status uas__aead_seal(uas_aead_key *k, uas_aead a, uint32_t token_id, uint32_t seq,
                          const uint8_t *aad, size_t aad_len, uint8_t *data, size_t data_len,
                          uint8_t tag[UAS_AEAD_TAG_LEN])
{
    uint8_t nonce[UAS_AEAD_IV_LEN];
    uas__aead_nonce(k->iv, token_id, seq, nonce);
    uint8_t none[1];
    if (!data) /* Sign: nothing to encrypt, but the libraries want a buffer */
        data = none;
    if (a == UAS_AEAD_CHACHA20_POLY1305) {
        unsigned long long tl = 0;
        return crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                   data, tag, &tl, data, data_len, aad, aad_len, NULL, nonce, k->key) == 0
                   ? UAS_GOOD
                   : UAS_BAD_INTERNAL_ERROR;
    }
    int n = 0;
    bool ok = k->ctx && EVP_EncryptInit_ex2(k->ctx, NULL, NULL, nonce, NULL) == 1 &&
              (!aad_len || EVP_EncryptUpdate(k->ctx, NULL, &n, aad, (int)aad_len) == 1) &&
              (!data_len || EVP_EncryptUpdate(k->ctx, data, &n, data, (int)data_len) == 1) &&
              EVP_EncryptFinal_ex(k->ctx, data + data_len, &n) == 1 &&
              EVP_CIPHER_CTX_ctrl(k->ctx, EVP_CTRL_AEAD_GET_TAG, UAS_AEAD_TAG_LEN, tag) == 1;
    if (!ok)
        ERR_clear_error();
    return ok ? UAS_GOOD : UAS_BAD_INTERNAL_ERROR;
}

uas_status uas__aead_open(uas_aead_key *k, uas_aead a, uint32_t token_id, uint32_t seq,
                          const uint8_t *aad, size_t aad_len, uint8_t *data, size_t data_len,
                          const uint8_t tag[UAS_AEAD_TAG_LEN])
{
    uint8_t nonce[UAS_AEAD_IV_LEN];
    uas__aead_nonce(k->iv, token_id, seq, nonce);
    uint8_t none[1];
    if (!data)
        data = none;
    if (a == UAS_AEAD_CHACHA20_POLY1305) {
        return crypto_aead_chacha20poly1305_ietf_decrypt_detached(data, NULL, data, data_len, tag,
                                                                  aad, aad_len, nonce, k->key) == 0
                   ? UAS_GOOD
                   : UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    int n = 0;
    bool ok =
        k->ctx && EVP_DecryptInit_ex2(k->ctx, NULL, NULL, nonce, NULL) == 1 &&
        (!aad_len || EVP_DecryptUpdate(k->ctx, NULL, &n, aad, (int)aad_len) == 1) &&
        (!data_len || EVP_DecryptUpdate(k->ctx, data, &n, data, (int)data_len) == 1) &&
        EVP_CIPHER_CTX_ctrl(k->ctx, EVP_CTRL_AEAD_SET_TAG, UAS_AEAD_TAG_LEN, (void *)tag) == 1 &&
        EVP_DecryptFinal_ex(k->ctx, data + data_len, &n) == 1;
    if (!ok)
        ERR_clear_error();
    return ok ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}
