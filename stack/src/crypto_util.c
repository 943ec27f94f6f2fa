/* Cryptographic primitives over OpenSSL 3 EVP and libsodium; see
 * crypto_util.h for the contract.
 *
 * HMAC alone runs on OpenSSL's low-level SHA1_* and SHA256_* functions,
 * deprecated since 3.0. Their state is a plain struct, and copying a state
 * is what HMAC with precomputed pad states needs per message: through EVP
 * (or the provider's dupctx) OpenSSL 3.0 copies a digest state only into a
 * newly allocated one, and EVP_MAC's HMAC does that copy on every init.
 * The low-level functions are the same code, SHA-NI assembly included,
 * that the default provider runs for EVP's SHA-1 and SHA-256; they bypass
 * the provider, so a FIPS provider configuration would not cover HMAC.
 * The target builds with OPENSSL_NO_DEPRECATED so that nothing else slips
 * back to deprecated calls; this file lifts it for itself before the first
 * OpenSSL header and silences the warning only around the sha_* wrappers
 * and the one-piece HMAC-SHA-256 (hmac_sha256_one).
 * A known-answer test at start-up checks the whole HMAC path. */
#undef OPENSSL_NO_DEPRECATED

#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <sodium.h>

#include <ua/mem.h>

#include "crypto_util.h"
#include "keycache.h"

#ifdef OPENSSL_NO_DEPRECATED_3_0
#error "HMAC needs OpenSSL's SHA1_Init/SHA256_Init, absent from this OpenSSL (no-deprecated)"
#endif

enum { HMAC_BLOCK = 64 }; /* the block of SHA-1 and SHA-256 */

/* ---- one-time setup and per-thread contexts ---- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_ok;
static EVP_MD *g_md[2];
static EVP_CIPHER *g_aes[2]; /* 0: AES-128-CBC, 1: AES-256-CBC */
static pthread_key_t g_tls_key;

/* Contexts of one thread, created on first use and freed when the thread
 * ends. They hold no secret between calls: every use sets the key again,
 * and what they keep is overwritten by the next use. The key cache holds
 * peers' public keys only. */
typedef struct tls_ctx {
    EVP_CIPHER_CTX *aes[2];
    uas_keycache keys;
} tls_ctx;

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
    uas_free(n, sizeof(*n));
}

static bool hmac_self_test(void);

static void init_algs(void)
{
    if (sodium_init() < 0)
        return;
    /* Fetched once: every later use is a pointer, not a name lookup. */
    g_md[UAS_DIGEST_SHA1] = EVP_MD_fetch(NULL, "SHA1", NULL);
    g_md[UAS_DIGEST_SHA256] = EVP_MD_fetch(NULL, "SHA256", NULL);
    g_aes[0] = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
    g_aes[1] = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
    if (!g_md[0] || !g_md[1] || !g_aes[0] || !g_aes[1])
        return;
    if (pthread_key_create(&g_tls_key, tls_free) != 0)
        return;
    g_ok = hmac_self_test();
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

/* ---- memory and randomness ---- */

void uas_crypto_zero(void *p, size_t n)
{
    if (p && n)
        sodium_memzero(p, n);
}

/* Word by word: CRYPTO_memcmp goes a byte at a time and was a tenth of the
 * MAC check of a small chunk. The empty asm keeps the compiler from
 * turning the accumulation into an early exit. */
bool uas_crypto_ct_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        acc |= u ^ v;
#if defined(__GNUC__)
        __asm__("" : "+r"(acc));
#endif
    }
    for (; i < n; i++)
        acc |= (uint64_t)(x[i] ^ y[i]);
    return ((acc | (0 - acc)) >> 63) == 0;
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

/* A SHA-1 or SHA-256 state in plain memory: copied by assignment. */
typedef union sha_state {
    SHA_CTX sha1;
    SHA256_CTX sha256;
} sha_state;

_Static_assert(sizeof(sha_state) <= UAS_HMAC_STATE_MAX, "uas_hmac_key too small for a state");
_Static_assert(_Alignof(sha_state) <= 8, "uas_hmac_key under-aligned for a state");

/* The only deprecated calls of the stack (see the top of the file). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static bool sha_init(uas_digest d, sha_state *s)
{
    return (d == UAS_DIGEST_SHA1 ? SHA1_Init(&s->sha1) : SHA256_Init(&s->sha256)) == 1;
}

static bool sha_update(uas_digest d, sha_state *s, const void *p, size_t n)
{
    if (n == 0)
        return true;
    return (d == UAS_DIGEST_SHA1 ? SHA1_Update(&s->sha1, p, n) : SHA256_Update(&s->sha256, p, n)) ==
           1;
}

/* Final also wipes the block buffer, so only the digest stays in s. */
static bool sha_final(uas_digest d, sha_state *s, uint8_t *out)
{
    return (d == UAS_DIGEST_SHA1 ? SHA1_Final(out, &s->sha1) : SHA256_Final(out, &s->sha256)) == 1;
}
#pragma GCC diagnostic pop

/* uas_crypto_hmac_key_set without the one-time setup, which runs the
 * self-test through it. */
static uas_status hmac_key_make(uas_hmac_key *hk, uas_digest d, const uint8_t *key, size_t key_len)
{
    memset(hk, 0, sizeof(*hk));
    if (d != UAS_DIGEST_SHA1 && d != UAS_DIGEST_SHA256)
        return UAS_BAD_INVALID_ARGUMENT;
    sha_state s;
    uint8_t pad[HMAC_BLOCK], k[UAS_MAX_DIGEST_LEN];
    bool ok = true;
    if (key_len > HMAC_BLOCK) {
        /* RFC 2104: a longer key is replaced by its digest. */
        ok = sha_init(d, &s) && sha_update(d, &s, key, key_len) && sha_final(d, &s, k);
        key = k;
        key_len = uas_digest_len(d);
    }
    memset(pad, 0x36, sizeof(pad));
    for (size_t i = 0; i < key_len; i++)
        pad[i] ^= key[i];
    ok = ok && sha_init(d, &s) && sha_update(d, &s, pad, HMAC_BLOCK);
    memcpy(hk->inner, &s, sizeof(s));
    for (size_t i = 0; i < HMAC_BLOCK; i++)
        pad[i] ^= 0x36 ^ 0x5c;
    ok = ok && sha_init(d, &s) && sha_update(d, &s, pad, HMAC_BLOCK);
    memcpy(hk->outer, &s, sizeof(s));
    OPENSSL_cleanse(&s, sizeof(s));
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(k, sizeof(k));
    if (!ok) {
        uas_crypto_hmac_key_clear(hk);
        return UAS_BAD_INTERNAL_ERROR;
    }
    hk->d = d;
    hk->ready = true;
    return UAS_GOOD;
}

uas_status uas_crypto_hmac_key_set(uas_hmac_key *hk, uas_digest d, const uint8_t *key,
                                   size_t key_len)
{
    if (uas_crypto_init() != UAS_GOOD) {
        uas_crypto_hmac_key_clear(hk);
        return UAS_BAD_INTERNAL_ERROR;
    }
    return hmac_key_make(hk, d, key, key_len);
}

void uas_crypto_hmac_key_clear(uas_hmac_key *hk)
{
    uas_crypto_zero(hk, sizeof(*hk));
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Closes a SHA-256 whose state has absorbed the pad block and whole
 * blocks of the message: the rest of it, `tail` (t + 9 <= 128 bytes), the
 * 0x80 byte, zeros and the bit length of pad block plus message (total
 * bytes) go in one or two blocks laid out here; the digest is the state's
 * words, big-endian. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static bool sha256_close(SHA256_CTX *c, const uint8_t *tail, size_t t, uint64_t total,
                         uint8_t out[UAS_SHA256_LEN])
{
    uint8_t blk[2 * HMAC_BLOCK];
    size_t nb = t + 9 <= HMAC_BLOCK ? HMAC_BLOCK : 2 * HMAC_BLOCK;
    /* Constant sizes compile to a few vector stores (128 bytes at once
     * became a slow `rep stos`). */
    memset(blk, 0, HMAC_BLOCK);
    if (nb > HMAC_BLOCK)
        memset(blk + HMAC_BLOCK, 0, HMAC_BLOCK);
    memcpy(blk, tail, t);
    blk[t] = 0x80;
    uint64_t bits = total * 8;
    put_be32(blk + nb - 8, (uint32_t)(bits >> 32));
    put_be32(blk + nb - 4, (uint32_t)bits);
    /* A state that has absorbed whole blocks only (num == 0) hands whole
     * blocks straight to the compression function. */
    if (SHA256_Update(c, blk, nb) != 1)
        return false;
    for (int i = 0; i < 8; i++)
        put_be32(out + 4 * i, c->h[i]);
    return true;
}

/* HMAC-SHA-256 of one piece: every signed chunk's MAC. A message that
 * fits two blocks with its padding (up to 119 bytes, every small chunk)
 * is closed in one call; a longer one has its whole blocks compressed in
 * place and only its tail copied. SHA256_Final's bookkeeping and block
 * wipe cost a third of the MAC of a 100-byte chunk. Nothing here needs wiping: the
 * tail copied is plaintext the chunk buffer still holds, and the states
 * copied from the key are overwritten by the first compression. */
static uas_status hmac_sha256_one(const uas_hmac_key *hk, const uint8_t *m, size_t n, uint8_t *out)
{
    /* Only the chaining words matter: whole blocks never touch the rest
     * of the state but the counters, which sha256_close does not read. */
    SHA256_CTX c = {.md_len = UAS_SHA256_LEN};
    uint8_t inner[UAS_SHA256_LEN];
    size_t whole = n + 9 <= 2 * HMAC_BLOCK ? 0 : n / HMAC_BLOCK * HMAC_BLOCK;
    memcpy(c.h, ((const SHA256_CTX *)(const void *)hk->inner)->h, sizeof(c.h));
    bool ok = (whole == 0 || SHA256_Update(&c, m, whole) == 1) &&
              sha256_close(&c, m + whole, n - whole, HMAC_BLOCK + (uint64_t)n, inner);
    memcpy(c.h, ((const SHA256_CTX *)(const void *)hk->outer)->h, sizeof(c.h));
    c.Nl = c.Nh = c.num = 0;
    ok = ok && sha256_close(&c, inner, sizeof(inner), HMAC_BLOCK + sizeof(inner), out);
    return ok ? UAS_GOOD : UAS_BAD_INTERNAL_ERROR;
}
#pragma GCC diagnostic pop

/* H((K ^ opad) | H((K ^ ipad) | a | b)) from the two absorbed pads. The
 * local state needs no wiping afterwards: a final leaves only the digest
 * in it, and the states it started from stay with the key. */
uas_status uas_crypto_hmac_keyed(const uas_hmac_key *hk, const uint8_t *a, size_t a_len,
                                 const uint8_t *b, size_t b_len, uint8_t *out)
{
    if (!hk->ready)
        return UAS_BAD_INVALID_ARGUMENT;
    uas_digest d = hk->d;
    if (d == UAS_DIGEST_SHA256 && (!b || b_len == 0))
        return hmac_sha256_one(hk, a, a_len, out);
    sha_state s;
    uint8_t inner[UAS_MAX_DIGEST_LEN];
    memcpy(&s, hk->inner, sizeof(s));
    bool ok = sha_update(d, &s, a, a_len) && (!b || sha_update(d, &s, b, b_len)) &&
              sha_final(d, &s, inner);
    memcpy(&s, hk->outer, sizeof(s));
    ok = ok && sha_update(d, &s, inner, uas_digest_len(d)) && sha_final(d, &s, out);
    OPENSSL_cleanse(inner, sizeof(inner));
    if (!ok) {
        OPENSSL_cleanse(&s, sizeof(s));
        return UAS_BAD_INTERNAL_ERROR;
    }
    return UAS_GOOD;
}

uas_status uas_crypto_hmac_keyed_verify(const uas_hmac_key *hk, const uint8_t *data, size_t len,
                                        const uint8_t *mac)
{
    uint8_t want[UAS_MAX_DIGEST_LEN];
    uas_status st = uas_crypto_hmac_keyed(hk, data, len, NULL, 0, want);
    bool ok = st == UAS_GOOD && uas_crypto_ct_equal(want, mac, uas_digest_len(hk->d));
    uas_crypto_zero(want, sizeof(want));
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

/* RFC 2202 and RFC 4231, test cases 2 (a short key; the message given in
 * two pieces) and 6 (a key longer than the block) of each: the low-level
 * functions really compute HMAC-SHA1 and HMAC-SHA256. */
static bool hmac_self_test(void)
{
    static const struct {
        uas_digest d;
        size_t key_len; /* 0: "Jefe" */
        const char *msg;
        uint8_t want[UAS_MAX_DIGEST_LEN];
    } kat[] = {
        {UAS_DIGEST_SHA1, 0, "what do ya want for nothing?", {0xef, 0xfc, 0xdf, 0x6a, 0xe5,
                                                              0xeb, 0x2f, 0xa2, 0xd2, 0x74,
                                                              0x16, 0xd5, 0xf1, 0x84, 0xdf,
                                                              0x9c, 0x25, 0x9a, 0x7c, 0x79}},
        {UAS_DIGEST_SHA256,
         0,
         "what do ya want for nothing?",
         {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
          0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
          0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43}},
        {UAS_DIGEST_SHA1,
         80,
         "Test Using Larger Than Block-Size Key - Hash Key First",
         {0xaa, 0x4a, 0xe5, 0xe1, 0x52, 0x72, 0xd0, 0x0e, 0x95, 0x70,
          0x56, 0x37, 0xce, 0x8a, 0x3b, 0x55, 0xed, 0x40, 0x21, 0x12}},
        {UAS_DIGEST_SHA256,
         131,
         "Test Using Larger Than Block-Size Key - Hash Key First",
         {0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f, 0x0d, 0x8a, 0x26,
          0xaa, 0xcb, 0xf5, 0xb7, 0x7f, 0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28,
          0xc5, 0x14, 0x05, 0x46, 0x04, 0x0f, 0x0e, 0xe3, 0x7f, 0x54}},
    };
    uint8_t key[131];
    memset(key, 0xaa, sizeof(key));
    bool ok = true;
    for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
        uas_hmac_key hk;
        uint8_t out[UAS_MAX_DIGEST_LEN];
        const uint8_t *m = (const uint8_t *)kat[i].msg;
        size_t len = strlen(kat[i].msg);
        uas_status st = kat[i].key_len ? hmac_key_make(&hk, kat[i].d, key, kat[i].key_len)
                                       : hmac_key_make(&hk, kat[i].d, (const uint8_t *)"Jefe", 4);
        ok = ok && st == UAS_GOOD &&
             uas_crypto_hmac_keyed(&hk, m, 10, m + 10, len - 10, out) == UAS_GOOD &&
             memcmp(out, kat[i].want, uas_digest_len(kat[i].d)) == 0;
        uas_crypto_hmac_key_clear(&hk);
    }
    return ok;
}

uas_status uas_crypto_hmac_verify(uas_digest d, const uint8_t *key, size_t key_len,
                                  const uint8_t *data, size_t len, const uint8_t *mac)
{
    uint8_t want[UAS_MAX_DIGEST_LEN];
    uas_status st = uas_crypto_hmac(d, key, key_len, data, len, NULL, 0, want);
    bool ok = st == UAS_GOOD && uas_crypto_ct_equal(want, mac, uas_digest_len(d));
    uas_crypto_zero(want, sizeof(want));
    return ok ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}

/* The secret is keyed once for all the HMACs of the expansion. */
uas_status uas_crypto_p_hash(uas_digest d, const uint8_t *secret, size_t secret_len,
                             const uint8_t *seed, size_t seed_len, uint8_t *out, size_t len)
{
    size_t hl = uas_digest_len(d);
    uint8_t a[UAS_MAX_DIGEST_LEN], block[UAS_MAX_DIGEST_LEN];
    uas_hmac_key hk;
    uas_status st = uas_crypto_hmac_key_set(&hk, d, secret, secret_len);
    /* A(1) = HMAC(secret, seed) */
    if (st == UAS_GOOD)
        st = uas_crypto_hmac_keyed(&hk, seed, seed_len, NULL, 0, a);
    size_t done = 0;
    while (st == UAS_GOOD && done < len) {
        st = uas_crypto_hmac_keyed(&hk, a, hl, seed, seed_len, block);
        if (st != UAS_GOOD)
            break;
        size_t n = len - done < hl ? len - done : hl;
        memcpy(out + done, block, n);
        done += n;
        /* A(i+1) = HMAC(secret, A(i)) */
        st = uas_crypto_hmac_keyed(&hk, a, hl, NULL, 0, a);
    }
    uas_crypto_hmac_key_clear(&hk);
    uas_crypto_zero(a, sizeof(a));
    uas_crypto_zero(block, sizeof(block));
    if (st != UAS_GOOD)
        uas_crypto_zero(out, len);
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

static void xor_block(uint8_t *dst, const uint8_t *a, const uint8_t *b)
{
    for (size_t i = 0; i < UAS_AES_BLOCK; i++)
        dst[i] = a[i] ^ b[i];
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
        EVP_CipherInit_ex2(c->ctx, g_aes[key_len == 32], key, c->chain, encrypt ? 1 : 0, NULL) !=
            1 ||
        EVP_CIPHER_CTX_set_padding(c->ctx, 0) != 1) {
        uas_crypto_aes_cbc_free(c);
        ERR_clear_error();
        return UAS_BAD_OUT_OF_MEMORY;
    }
    c->encrypt = encrypt;
    return UAS_GOOD;
}

void uas_crypto_aes_cbc_free(uas_aes_cbc *c)
{
    /* The provider clears its context, key schedule included, on free. */
    EVP_CIPHER_CTX_free(c->ctx);
    memset(c, 0, sizeof(*c));
}

/* Every chunk is CBC from the token's IV, yet the context is never
 * re-initialised: in OpenSSL 3.0 EVP_CipherInit_ex with only an IV costs
 * about as much as encrypting a small chunk (it re-applies the padding
 * setting and queries the IV length through parameter lists). Instead the
 * context goes on from its chain block V, the last ciphertext block it
 * saw, as a CBC stream does, and the first block is corrected by IV ^ V:
 * encrypting P1 ^ IV ^ V from V gives E(P1 ^ IV), the ciphertext CBC from
 * IV; decrypting from V gives D(C1) ^ V, and ^ V ^ IV makes it
 * D(C1) ^ IV. Every later block chains on the previous ciphertext block
 * as usual. */
uas_status uas_crypto_aes_cbc_run(uas_aes_cbc *c, const uint8_t iv[UAS_AES_BLOCK], uint8_t *data,
                                  size_t len)
{
    if (!c->ctx || len % UAS_AES_BLOCK != 0 || len > INT32_MAX)
        return UAS_BAD_INVALID_ARGUMENT;
    if (len == 0)
        return UAS_GOOD;
    if (c->chain_lost) {
        static const uint8_t zero[UAS_AES_BLOCK];
        if (EVP_CipherInit_ex(c->ctx, NULL, NULL, NULL, zero, -1) != 1) {
            ERR_clear_error();
            return UAS_BAD_INTERNAL_ERROR;
        }
        memset(c->chain, 0, sizeof(c->chain));
        c->chain_lost = false;
    }
    bool encrypt = c->encrypt;
    uint8_t fix[UAS_AES_BLOCK], last[UAS_AES_BLOCK];
    xor_block(fix, iv, c->chain);
    if (encrypt)
        xor_block(data, data, fix);
    else
        memcpy(last, data + len - UAS_AES_BLOCK, UAS_AES_BLOCK);
    int out = 0;
    if (EVP_CipherUpdate(c->ctx, data, &out, data, (int)len) != 1 || (size_t)out != len) {
        c->chain_lost = true;
        OPENSSL_cleanse(fix, sizeof(fix));
        ERR_clear_error();
        return UAS_BAD_INTERNAL_ERROR;
    }
    if (encrypt) {
        memcpy(c->chain, data + len - UAS_AES_BLOCK, UAS_AES_BLOCK);
    } else {
        xor_block(data, data, fix);
        memcpy(c->chain, last, UAS_AES_BLOCK);
    }
    OPENSSL_cleanse(fix, sizeof(fix));
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
    uas_crypto_zero(tmp, sizeof(tmp));
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
    uas_crypto_zero(tmp, sizeof(tmp));
    EVP_PKEY_CTX_free(c);
    ERR_clear_error();
    if (bad) {
        uas_crypto_zero(out, written);
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
