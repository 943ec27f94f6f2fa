/* Cryptographic primitives over OpenSSL 3's public EVP API (EVP_MAC,
 * EVP_KDF, EVP_CIPHER, EVP_PKEY) and libsodium; see crypto_util.h for the
 * contract. No primitive, padding or mode is assembled here: whatever
 * provider OpenSSL is configured with (a FIPS one included) computes every
 * MAC, key derivation and cipher. The tree builds with
 * OPENSSL_NO_DEPRECATED_3_0 (top-level CMakeLists.txt). */
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include <ua/mem.h>

#include "crypto_util.h"
#include "keycache.h"

/* ---- one-time setup and per-thread contexts ---- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_ok;
static EVP_MD *g_md[2];
static EVP_MAC *g_hmac;
static EVP_KDF *g_prf;
static EVP_CIPHER *g_aes[2]; /* 0: AES-128-CBC, 1: AES-256-CBC */
static pthread_key_t g_tls_key;

static const char *const g_md_name[2] = {"SHA1", "SHA256"};

/* Contexts of one thread, created on first use and freed when the thread
 * ends. They hold no secret between calls: every use sets the key again,
 * and what they keep is overwritten by the next use. The key cache holds
 * peers' public keys only. */
enum { SPKI_SLOTS = 4 };
typedef struct spki_memo {
    EVP_PKEY *key; /* one reference held: the pointer names this key while kept */
    uint8_t *der;
    size_t len;
} spki_memo;

typedef struct tls_ctx {
    EVP_CIPHER_CTX *aes[2];
    uas_keycache keys;
    spki_memo spki[SPKI_SLOTS]; /* uas_crypto_spki */
    unsigned spki_next;
} tls_ctx;

static void spki_clear(spki_memo *m)
{
    EVP_PKEY_free(m->key);
    if (m->der)
        uas_free(m->der, m->len);
    memset(m, 0, sizeof(*m));
}

/* Every thread's contexts stay reachable from this list (so leak checkers
 * see the main thread's, which no destructor frees). */
static pthread_mutex_t g_tls_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct tls_node {
    tls_ctx ctx;
    struct tls_node *prev, *next;
} tls_node;
static tls_node *g_tls_list;

static void tls_free(void *p)
{
    tls_node *n = p;
    if (!n)
        return;
    pthread_mutex_lock(&g_tls_lock);
    if (n->prev)
        n->prev->next = n->next;
    else
        g_tls_list = n->next;
    if (n->next)
        n->next->prev = n->prev;
    pthread_mutex_unlock(&g_tls_lock);
    for (int i = 0; i < 2; i++)
        EVP_CIPHER_CTX_free(n->ctx.aes[i]);
    uas_keycache_clear(&n->ctx.keys);
    for (int i = 0; i < SPKI_SLOTS; i++)
        spki_clear(&n->ctx.spki[i]);
    uas_free(n, sizeof(*n));
}

static void init_algs(void)
{
    if (sodium_init() < 0)
        return;
    /* Fetched once: every later use is a pointer, not a name lookup. */
    g_md[UAS_DIGEST_SHA1] = EVP_MD_fetch(NULL, "SHA1", NULL);
    g_md[UAS_DIGEST_SHA256] = EVP_MD_fetch(NULL, "SHA256", NULL);
    g_hmac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
    g_prf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_TLS1_PRF, NULL);
    g_aes[0] = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
    g_aes[1] = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
    if (!g_md[0] || !g_md[1] || !g_hmac || !g_prf || !g_aes[0] || !g_aes[1])
        return;
    g_ok = pthread_key_create(&g_tls_key, tls_free) == 0;
}

static void init_once(void)
{
    init_algs();
    ERR_clear_error();
}

uas_status uas_crypto_init(void)
{
    pthread_once(&g_once, init_once);
    return g_ok ? UAS_GOOD : UAS_BAD_INTERNAL_ERROR;
}

static tls_ctx *tls_get(void)
{
    if (uas_crypto_init() != UAS_GOOD)
        return NULL;
    tls_node *n = pthread_getspecific(g_tls_key);
    if (n)
        return &n->ctx;
    n = uas_calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    if (pthread_setspecific(g_tls_key, n) != 0) {
        uas_free(n, sizeof(*n));
        return NULL;
    }
    pthread_mutex_lock(&g_tls_lock);
    n->next = g_tls_list;
    if (g_tls_list)
        g_tls_list->prev = n;
    g_tls_list = n;
    pthread_mutex_unlock(&g_tls_lock);
    return &n->ctx;
}

/* ---- comparison and randomness ---- */

bool uas_crypto_ct_equal(const void *a, const void *b, size_t n)
{
    return sodium_memcmp(a, b, n) == 0;
}

uas_status uas_crypto_random(void *out, size_t n)
{
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    randombytes_buf(out, n);
    return UAS_GOOD;
}

/* ---- hashes, HMAC, key derivation ---- */

uas_status uas_crypto_digest(uas_digest d, const uint8_t *data, size_t len, uint8_t *out)
{
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    unsigned int n = 0;
    if (EVP_Digest(data, len, out, &n, g_md[d], NULL) != 1 || n != uas_digest_len(d)) {
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    return UAS_GOOD;
}

uas_status uas_crypto_hmac_key_set(uas_hmac_key *hk, uas_digest d, const uint8_t *key,
                                   size_t key_len)
{
    memset(hk, 0, sizeof(*hk));
    if (d != UAS_DIGEST_SHA1 && d != UAS_DIGEST_SHA256)
        return UAS_BAD_INVALID_ARGUMENT;
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    /* A NULL key would make EVP_MAC_init re-initialise an unkeyed context
     * instead of setting the empty key. */
    static const uint8_t empty[1];
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)g_md_name[d], 0),
        OSSL_PARAM_construct_end(),
    };
    hk->ctx = EVP_MAC_CTX_new(g_hmac);
    if (!hk->ctx) {
        ERR_clear_error();
        return UAS_BAD_OUT_OF_MEMORY;
    }
    if (EVP_MAC_init(hk->ctx, key ? key : empty, key ? key_len : 0, params) != 1) {
        uas_crypto_hmac_key_clear(hk);
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    hk->d = d;
    return UAS_GOOD;
}

void uas_crypto_hmac_key_clear(uas_hmac_key *hk)
{
    /* The provider wipes its copy of the key and the digest states. */
    EVP_MAC_CTX_free(hk->ctx);
    memset(hk, 0, sizeof(*hk));
}

/* EVP_MAC_init without a key starts over from the key already set (the
 * HMAC's pad states are copied, not recomputed). */
uas_status uas_crypto_hmac_keyed(const uas_hmac_key *hk, const uint8_t *a, size_t a_len,
                                 const uint8_t *b, size_t b_len, uint8_t *out)
{
    if (!hk->ctx)
        return UAS_BAD_INVALID_ARGUMENT;
    size_t hl = uas_digest_len(hk->d), n = 0;
    if (EVP_MAC_init(hk->ctx, NULL, 0, NULL) != 1 || EVP_MAC_update(hk->ctx, a, a_len) != 1 ||
        (b && b_len && EVP_MAC_update(hk->ctx, b, b_len) != 1) ||
        EVP_MAC_final(hk->ctx, out, &n, hl) != 1 || n != hl) {
        ERR_clear_error();
        uas_wipe(out, hl);
        return UAS_BAD_INTERNAL_ERROR;
    }
    return UAS_GOOD;
}

uas_status uas_crypto_hmac_keyed_verify(const uas_hmac_key *hk, const uint8_t *data, size_t len,
                                        const uint8_t *mac)
{
    if (!hk->ctx)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    uint8_t want[UAS_MAX_DIGEST_LEN];
    uas_status st = uas_crypto_hmac_keyed(hk, data, len, NULL, 0, want);
    bool ok = st == UAS_GOOD && uas_crypto_ct_equal(want, mac, uas_digest_len(hk->d));
    uas_wipe(want, sizeof(want));
    return ok ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}

uas_status uas_crypto_hmac(uas_digest d, const uint8_t *key, size_t key_len, const uint8_t *a,
                           size_t a_len, const uint8_t *b, size_t b_len, uint8_t *out)
{
    uas_hmac_key hk;
    uas_status st = uas_crypto_hmac_key_set(&hk, d, key, key_len);
    if (st == UAS_GOOD)
        st = uas_crypto_hmac_keyed(&hk, a, a_len, b, b_len, out);
    uas_crypto_hmac_key_clear(&hk);
    return st;
}

uas_status uas_crypto_hmac_verify(uas_digest d, const uint8_t *key, size_t key_len,
                                  const uint8_t *data, size_t len, const uint8_t *mac)
{
    uas_hmac_key hk;
    uas_status st = uas_crypto_hmac_key_set(&hk, d, key, key_len);
    if (st == UAS_GOOD)
        st = uas_crypto_hmac_keyed_verify(&hk, data, len, mac);
    uas_crypto_hmac_key_clear(&hk);
    return st == UAS_GOOD ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}

/* OpenSSL's TLS1-PRF with a single digest (anything but MD5-SHA1) is
 * P_hash(secret, label + seed) of RFC 5246, section 5, and the label and
 * seed are simply concatenated: given the OPC UA seed alone it is the
 * P_SHA256 / P_SHA1 of Part 6, 6.7.5. test_crypto.c checks it against the
 * published TLS 1.2 PRF vector and against P_hash iterated by hand from
 * one-shot HMACs. */
uas_status uas_crypto_p_hash(uas_digest d, const uint8_t *secret, size_t secret_len,
                             const uint8_t *seed, size_t seed_len, uint8_t *out, size_t len)
{
    if ((d != UAS_DIGEST_SHA1 && d != UAS_DIGEST_SHA256) || !secret || !secret_len || !seed ||
        !seed_len || seed_len > UAS_P_HASH_SEED_MAX)
        return UAS_BAD_INVALID_ARGUMENT;
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    if (len == 0)
        return UAS_GOOD;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)g_md_name[d], 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, (void *)secret, secret_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, (void *)seed, seed_len),
        OSSL_PARAM_construct_end(),
    };
    EVP_KDF_CTX *k = EVP_KDF_CTX_new(g_prf);
    /* Freeing the context wipes its copies of the secret and seed. */
    uas_status st =
        k && EVP_KDF_derive(k, out, len, params) == 1 ? UAS_GOOD : UAS_BAD_INTERNAL_ERROR;
    EVP_KDF_CTX_free(k);
    ERR_clear_error();
    if (st != UAS_GOOD)
        uas_wipe(out, len);
    return st;
}

/* ---- AES-CBC ---- */

uas_status uas_crypto_aes_cbc(bool encrypt, const uint8_t *key, size_t key_len,
                              const uint8_t iv[UAS_AES_BLOCK], uint8_t *data, size_t len)
{
    if ((key_len != 16 && key_len != 32) || len % UAS_AES_BLOCK != 0 || len > INT32_MAX)
        return UAS_BAD_INVALID_ARGUMENT;
    tls_ctx *t = tls_get();
    if (!t)
        return UAS_BAD_OUT_OF_MEMORY;
    int k = key_len == 32;
    if (!t->aes[k]) {
        t->aes[k] = EVP_CIPHER_CTX_new();
        if (!t->aes[k] || EVP_CipherInit_ex2(t->aes[k], g_aes[k], NULL, NULL, 1, NULL) != 1) {
            EVP_CIPHER_CTX_free(t->aes[k]);
            t->aes[k] = NULL;
            ERR_clear_error();
            return UAS_BAD_OUT_OF_MEMORY;
        }
    }
    EVP_CIPHER_CTX *c = t->aes[k];
    int out = 0;
    /* Same cipher: re-keying reuses the context without allocating. */
    if (EVP_CipherInit_ex2(c, NULL, key, iv, encrypt ? 1 : 0, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c, 0) != 1 ||
        (len && EVP_CipherUpdate(c, data, &out, data, (int)len) != 1) || (size_t)out != len) {
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    return UAS_GOOD;
}

uas_status uas_crypto_aes_cbc_keyed(uas_aes_cbc *c, bool encrypt, const uint8_t *key,
                                    size_t key_len)
{
    memset(c, 0, sizeof(*c));
    if (key_len != 16 && key_len != 32)
        return UAS_BAD_INVALID_ARGUMENT;
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    c->ctx = EVP_CIPHER_CTX_new();
    if (!c->ctx ||
        EVP_CipherInit_ex2(c->ctx, g_aes[key_len == 32], key, NULL, encrypt ? 1 : 0, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(c->ctx, 0) != 1) {
        uas_crypto_aes_cbc_free(c);
        ERR_clear_error();
        return UAS_BAD_OUT_OF_MEMORY;
    }
    return UAS_GOOD;
}

void uas_crypto_aes_cbc_free(uas_aes_cbc *c)
{
    /* The provider clears its context, key schedule included, on free. */
    EVP_CIPHER_CTX_free(c->ctx);
    memset(c, 0, sizeof(*c));
}

/* A new IV on the keyed context (NULL cipher and key: the key schedule
 * and the direction stay, nothing is allocated), then the chunk. */
uas_status uas_crypto_aes_cbc_run(uas_aes_cbc *c, const uint8_t iv[UAS_AES_BLOCK], uint8_t *data,
                                  size_t len)
{
    if (!c->ctx || len % UAS_AES_BLOCK != 0 || len > INT32_MAX)
        return UAS_BAD_INVALID_ARGUMENT;
    if (len == 0)
        return UAS_GOOD;
    int out = 0;
    if (EVP_CipherInit_ex(c->ctx, NULL, NULL, NULL, iv, -1) != 1 ||
        EVP_CipherUpdate(c->ctx, data, &out, data, (int)len) != 1 || (size_t)out != len) {
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    return UAS_GOOD;
}

/* ---- RSA ---- */

size_t uas_crypto_rsa_size(const EVP_PKEY *key)
{
    if (!key || !EVP_PKEY_is_a(key, "RSA"))
        return 0;
    int n = EVP_PKEY_get_size(key);
    return n > 0 ? (size_t)n : 0;
}

uint32_t uas_crypto_rsa_bits(const EVP_PKEY *key)
{
    if (!key || !EVP_PKEY_is_a(key, "RSA"))
        return 0;
    int n = EVP_PKEY_get_bits(key);
    return n > 0 ? (uint32_t)n : 0;
}

size_t uas_crypto_oaep_overhead(uas_rsa_enc e)
{
    return 2 * (e == UAS_RSA_OAEP_SHA1 ? UAS_SHA1_LEN : UAS_SHA256_LEN) + 2;
}

size_t uas_crypto_rsa_plain_block(const EVP_PKEY *key, uas_rsa_enc e)
{
    size_t ks = uas_crypto_rsa_size(key);
    size_t ov = uas_crypto_oaep_overhead(e);
    return ks > ov ? ks - ov : 0;
}

/* A digest-sign or digest-verify context with the padding of alg. */
static EVP_MD_CTX *sig_ctx(uas_rsa_sig alg, EVP_PKEY *key, bool sign)
{
    if (uas_crypto_init() != UAS_GOOD)
        return NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md)
        return NULL;
    EVP_PKEY_CTX *pctx = NULL;
    const char *dn = alg == UAS_RSA_PKCS1_SHA1 ? "SHA1" : "SHA256";
    int ok = sign ? EVP_DigestSignInit_ex(md, &pctx, dn, NULL, NULL, key, NULL)
                  : EVP_DigestVerifyInit_ex(md, &pctx, dn, NULL, NULL, key, NULL);
    if (ok == 1 && alg == UAS_RSA_PSS_SHA256) {
        /* Part 7: MGF1 with SHA2-256 (the default: the signature digest)
         * and a salt as long as the digest, 32 bytes. */
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
    } else if (ok == 1) {
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1;
    }
    if (ok != 1) {
        EVP_MD_CTX_free(md);
        return NULL;
    }
    return md;
}

uas_status uas_crypto_rsa_sign(uas_rsa_sig alg, EVP_PKEY *priv, const uint8_t *data, size_t len,
                               uint8_t *sig, size_t sig_len)
{
    size_t ks = uas_crypto_rsa_size(priv);
    if (ks == 0 || sig_len != ks)
        return UAS_BAD_INVALID_ARGUMENT;
    EVP_MD_CTX *md = sig_ctx(alg, priv, true);
    size_t n = sig_len;
    uas_status st = md && EVP_DigestSign(md, sig, &n, data, len) == 1 && n == ks
                        ? UAS_GOOD
                        : UAS_BAD_INTERNAL_ERROR;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return st;
}

uas_status uas_crypto_rsa_verify(uas_rsa_sig alg, EVP_PKEY *pub, const uint8_t *data, size_t len,
                                 const uint8_t *sig, size_t sig_len)
{
    size_t ks = uas_crypto_rsa_size(pub);
    if (ks == 0 || sig_len != ks)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    EVP_MD_CTX *md = sig_ctx(alg, pub, false);
    uas_status st = md && EVP_DigestVerify(md, sig, sig_len, data, len) == 1
                        ? UAS_GOOD
                        : UAS_BAD_SECURITY_CHECKS_FAILED;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return st;
}

static EVP_PKEY_CTX *enc_ctx(uas_rsa_enc e, EVP_PKEY *key, bool encrypt)
{
    if (uas_crypto_init() != UAS_GOOD)
        return NULL;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    if (!c)
        return NULL;
    const EVP_MD *md = g_md[e == UAS_RSA_OAEP_SHA1 ? UAS_DIGEST_SHA1 : UAS_DIGEST_SHA256];
    int ok = (encrypt ? EVP_PKEY_encrypt_init(c) : EVP_PKEY_decrypt_init(c)) == 1 &&
             EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_oaep_md(c, md) == 1 && EVP_PKEY_CTX_set_rsa_mgf1_md(c, md) == 1;
    if (!ok) {
        EVP_PKEY_CTX_free(c);
        return NULL;
    }
    return c;
}

uas_status uas_crypto_rsa_encrypt(uas_rsa_enc e, EVP_PKEY *pub, const uint8_t *in, size_t len,
                                  uint8_t *out, size_t out_cap, size_t *out_len)
{
    *out_len = 0;
    size_t ks = uas_crypto_rsa_size(pub);
    size_t pb = uas_crypto_rsa_plain_block(pub, e);
    if (ks == 0 || pb == 0 || ks > UAS_RSA_MAX_BYTES || len == 0)
        return UAS_BAD_INVALID_ARGUMENT;
    size_t blocks = (len + pb - 1) / pb;
    if (blocks > out_cap / ks)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    EVP_PKEY_CTX *c = enc_ctx(e, pub, true);
    if (!c) {
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    uint8_t tmp[UAS_RSA_MAX_BYTES];
    uas_status st = UAS_GOOD;
    /* Backwards, so that out == in works: block i's ciphertext overwrites
     * only plaintext of blocks already encrypted (and its own, copied out
     * first). */
    for (size_t i = blocks; i-- > 0;) {
        size_t off = i * pb;
        size_t n = len - off < pb ? len - off : pb;
        memcpy(tmp, in + off, n);
        size_t outl = ks;
        if (EVP_PKEY_encrypt(c, out + i * ks, &outl, tmp, n) != 1 || outl != ks) {
            st = UAS_BAD_INTERNAL_ERROR;
            break;
        }
    }
    uas_wipe(tmp, sizeof(tmp));
    EVP_PKEY_CTX_free(c);
    ERR_clear_error();
    if (st == UAS_GOOD)
        *out_len = blocks * ks;
    return st;
}

uas_status uas_crypto_rsa_decrypt(uas_rsa_enc e, EVP_PKEY *priv, const uint8_t *in, size_t len,
                                  uint8_t *out, size_t out_cap, size_t *out_len)
{
    *out_len = 0;
    size_t ks = uas_crypto_rsa_size(priv);
    if (ks == 0 || ks > UAS_RSA_MAX_BYTES || len == 0 || len % ks != 0)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    EVP_PKEY_CTX *c = enc_ctx(e, priv, false);
    if (!c) {
        ERR_clear_error();
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    uint8_t tmp[UAS_RSA_MAX_BYTES];
    size_t written = 0;
    unsigned bad = 0;
    /* No early exit: a block that fails to decode is counted and the others
     * are still decrypted, so neither the time taken nor the answer tells
     * which check failed. OpenSSL's OAEP decoding is itself constant-time
     * and reports one error whatever the padding fault. */
    for (size_t off = 0; off < len; off += ks) {
        size_t outl = sizeof(tmp);
        int ok = EVP_PKEY_decrypt(c, tmp, &outl, in + off, ks);
        size_t take = ok == 1 ? outl : 0;
        bad |= (unsigned)(ok != 1) | (unsigned)(written + take > out_cap);
        if (written + take > out_cap)
            take = 0;
        /* written <= off, so the target never reaches a block not yet read. */
        memcpy(out + written, tmp, take);
        written += take;
    }
    uas_wipe(tmp, sizeof(tmp));
    EVP_PKEY_CTX_free(c);
    ERR_clear_error();
    if (bad) {
        uas_wipe(out, written);
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    *out_len = written;
    return UAS_GOOD;
}

/* ---- keys and certificates ---- */

uas_status uas_crypto_load_private_key(const uint8_t *data, size_t len, EVP_PKEY **out)
{
    *out = NULL;
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    if (!data || len == 0 || len > INT32_MAX)
        return UAS_BAD_INVALID_ARGUMENT;
    const unsigned char *p = data;
    EVP_PKEY *k = d2i_AutoPrivateKey(NULL, &p, (long)len);
    if (!k) {
        BIO *b = BIO_new_mem_buf(data, (int)len);
        if (b) {
            /* No password callback: encrypted PEM keys are refused. */
            k = PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)"");
            BIO_free(b);
        }
    }
    ERR_clear_error();
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    *out = k;
    return UAS_GOOD;
}

uas_status uas_crypto_cert_len(const uint8_t *der, size_t len, size_t *der_len)
{
    if (!der || len == 0 || len > INT32_MAX)
        return UAS_BAD_CERTIFICATE_INVALID;
    const unsigned char *p = der;
    long body = 0;
    int tag = 0, cls = 0;
    int r = ASN1_get_object(&p, &body, &tag, &cls, (long)len);
    ERR_clear_error();
    if ((r & 0x80) || !(r & V_ASN1_CONSTRUCTED) || tag != V_ASN1_SEQUENCE ||
        cls != V_ASN1_UNIVERSAL || body < 0 || (size_t)body > len - (size_t)(p - der))
        return UAS_BAD_CERTIFICATE_INVALID;
    *der_len = (size_t)(p - der) + (size_t)body;
    return UAS_GOOD;
}

static EVP_PKEY *decode_public_key(const uint8_t *der, size_t len, bool cert)
{
    const unsigned char *p = der;
    EVP_PKEY *k = NULL;
    if (cert) {
        X509 *x = d2i_X509(NULL, &p, (long)len);
        if (x && (size_t)(p - der) == len)
            k = X509_get_pubkey(x); /* a new reference */
        X509_free(x);
    } else {
        k = d2i_PUBKEY(NULL, &p, (long)len);
        if (k && (size_t)(p - der) != len) {
            EVP_PKEY_free(k);
            k = NULL;
        }
    }
    ERR_clear_error();
    return k;
}

int uas_crypto_spki(EVP_PKEY *k, uint8_t *out, size_t cap)
{
    tls_ctx *t = tls_get();
    spki_memo *m = NULL;
    for (int i = 0; t && i < SPKI_SLOTS; i++)
        if (t->spki[i].key == k)
            m = &t->spki[i];
    if (!m) {
        int n = i2d_PUBKEY(k, NULL);
        uint8_t *der = n > 0 ? uas_malloc((size_t)n) : NULL;
        uint8_t *p = der;
        if (!der || i2d_PUBKEY(k, &p) != n || !t || EVP_PKEY_up_ref(k) != 1) {
            /* Not kept: answer from this encoding alone. */
            int r = der && p == der + n ? n : -1;
            if (r > 0 && out && cap >= (size_t)n)
                memcpy(out, der, (size_t)n);
            if (der)
                uas_free(der, (size_t)n);
            ERR_clear_error();
            return r;
        }
        m = &t->spki[t->spki_next++ % SPKI_SLOTS];
        spki_clear(m);
        m->key = k;
        m->der = der;
        m->len = (size_t)n;
    }
    if (out && cap >= m->len)
        memcpy(out, m->der, m->len);
    return (int)m->len;
}

EVP_PKEY *uas_crypto_public_key(const uint8_t *der, size_t len, bool cert)
{
    if (!der || len == 0 || len > INT32_MAX)
        return NULL;
    tls_ctx *t = tls_get();
    EVP_PKEY *k = t ? uas_keycache_find(&t->keys, cert, der, len) : NULL;
    if (k)
        return k;
    k = decode_public_key(der, len, cert);
    if (k && t)
        uas_keycache_put(&t->keys, cert, der, len, k);
    return k;
}

uas_status uas_crypto_load_cert(const uint8_t *der, size_t len, X509 **out, size_t *der_len)
{
    *out = NULL;
    if (uas_crypto_init() != UAS_GOOD)
        return UAS_BAD_INTERNAL_ERROR;
    if (!der || len == 0 || len > INT32_MAX)
        return UAS_BAD_CERTIFICATE_INVALID;
    const unsigned char *p = der;
    X509 *x = d2i_X509(NULL, &p, (long)len);
    ERR_clear_error();
    if (!x)
        return UAS_BAD_CERTIFICATE_INVALID;
    if (der_len)
        *der_len = (size_t)(p - der);
    *out = x;
    return UAS_GOOD;
}
