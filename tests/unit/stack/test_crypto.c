/* The cryptographic primitives under the RSA security policies
 * (stack/src/crypto_util.c): known-answer tests against published vectors,
 * RSA round trips, and tampering, which must always end in
 * BadSecurityChecksFailed. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#ifdef UAS_ENABLE_ENCRYPTION

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <ua/mem.h>

#include "crypto_util.h"
#include "helper_keys.h"

/* OpenSSL's allocations, counted to bound what the symmetric path makes
 * per chunk. The functions must be installed before OpenSSL allocates
 * anything (it refuses them afterwards), hence a constructor. */
static unsigned long long ossl_allocs, ossl_frees;
static bool ossl_counting;

static void *count_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    ossl_allocs++;
    return malloc(n);
}

static void *count_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    ossl_allocs++;
    return realloc(p, n);
}

static void count_free(void *p, const char *file, int line)
{
    (void)file, (void)line;
    if (p)
        ossl_frees++;
    free(p);
}

/* HMAC computed by OpenSSL's one-shot EVP_Q_mac: the independent
 * reference the keyed contexts are checked against. */
static void q_hmac(uas_digest d, const uint8_t *key, size_t kl, const uint8_t *m, size_t ml,
                   uint8_t *out)
{
    size_t n = 0;
    static const uint8_t empty[1];
    cr_assert_not_null(EVP_Q_mac(NULL, "HMAC", NULL, d == UAS_DIGEST_SHA1 ? "SHA1" : "SHA256", NULL,
                                 kl ? key : empty, kl, m, ml, out, 32, &n));
    cr_assert_eq(n, uas_digest_len(d));
}

/* P_hash of RFC 5246, section 5, iterated here from one-shot HMACs. */
static void ref_p_hash(uas_digest d, const uint8_t *secret, size_t sl, const uint8_t *seed,
                       size_t seed_len, uint8_t *out, size_t len)
{
    size_t hl = uas_digest_len(d);
    uint8_t a[32], buf[32 + 256], block[32];
    cr_assert(seed_len <= 256);
    q_hmac(d, secret, sl, seed, seed_len, a); /* A(1) */
    for (size_t done = 0; done < len; done += hl) {
        memcpy(buf, a, hl);
        memcpy(buf + hl, seed, seed_len);
        q_hmac(d, secret, sl, buf, hl + seed_len, block);
        memcpy(out + done, block, len - done < hl ? len - done : hl);
        q_hmac(d, secret, sl, a, hl, a); /* A(i+1) */
    }
}

__attribute__((constructor)) static void count_openssl_allocations(void)
{
    ossl_counting = CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free) == 1;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    test_keys_prepare();
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    test_keys_cleanup();
}

static size_t unhex(const char *s, uint8_t *out)
{
    size_t n = 0;
    while (s[0] && s[1]) {
        unsigned v;
        sscanf(s, "%2x", &v);
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void assert_hex(const uint8_t *got, size_t len, const char *want_hex)
{
    uint8_t want[256];
    size_t n = unhex(want_hex, want);
    cr_assert_eq(n, len, "length %zu, want %zu", len, n);
    cr_assert(memcmp(got, want, n) == 0, "bytes differ from the known answer");
}

/* ---- P_hash ---- */

/* The TLS 1.2 PRF is P_SHA256(secret, label + seed), the construction of
 * Part 6, 6.7.5. Vector from the IETF TLS working group list
 * (https://www.ietf.org/mail-archive/web/tls/current/msg03416.html), as
 * used by BearSSL's test_crypto.c and many TLS stacks. */
Test(crypto, p_sha256_matches_the_published_tls12_prf_vector)
{
    uint8_t secret[16], seed[64], out[100];
    size_t sl = unhex("9bbe436ba940f017b17652849a71db35", secret);
    memcpy(seed, "test label", 10);
    size_t n = 10 + unhex("a0ba9f936cda311827a6f796ffd5198c", seed + 10);
    cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, sl, seed, n, out, 100), UAS_GOOD);
    assert_hex(out, 100,
               "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a"
               "6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab"
               "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701"
               "87347b66");
    /* A shorter output is a prefix of the longer one. */
    uint8_t first[37];
    cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, sl, seed, n, first, 37), UAS_GOOD);
    cr_assert(memcmp(first, out, 37) == 0);
}

/* P_SHA1 (Basic256) has no standalone published vector; check it against
 * the definition computed with OpenSSL's one-shot HMAC. */
Test(crypto, p_sha1_follows_the_rfc5246_definition)
{
    uint8_t secret[32], seed[32], want[80];
    for (int i = 0; i < 32; i++) {
        secret[i] = (uint8_t)(i * 7 + 1);
        seed[i] = (uint8_t)(255 - i);
    }
    ref_p_hash(UAS_DIGEST_SHA1, secret, 32, seed, 32, want, 80);
    static const size_t lens[] = {1, 19, 20, 21, 56, 80};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        uint8_t out[80];
        cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA1, secret, 32, seed, 32, out, lens[i]),
                     UAS_GOOD);
        cr_assert(memcmp(out, want, lens[i]) == 0, "length %zu", lens[i]);
    }
}

/* The key block of every policy that uses P_SHA256 (sign key, encrypt
 * key, IV: 32 + 32 + 16 bytes at most) from OPC UA-sized nonces, and a
 * seed longer than a hash block, against the definition. */
Test(crypto, p_sha256_follows_the_rfc5246_definition_for_channel_nonces)
{
    static const size_t seed_lens[] = {32, 64, 100};
    static const size_t lens[] = {1, 32, 33, 64, 80, 200};
    uint8_t secret[64], seed[100], want[200], out[200];
    for (int i = 0; i < 100; i++)
        seed[i] = (uint8_t)(i * 5 + 3);
    for (int i = 0; i < 64; i++)
        secret[i] = (uint8_t)(i * 11 + 2);
    for (size_t s = 0; s < sizeof(seed_lens) / sizeof(seed_lens[0]); s++) {
        size_t sl = seed_lens[s] < 64 ? seed_lens[s] : 64;
        ref_p_hash(UAS_DIGEST_SHA256, secret, sl, seed, seed_lens[s], want, 200);
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            memset(out, 0, sizeof(out));
            cr_assert_eq(
                uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, sl, seed, seed_lens[s], out, lens[i]),
                UAS_GOOD);
            cr_assert(memcmp(out, want, lens[i]) == 0, "seed %zu, length %zu", seed_lens[s],
                      lens[i]);
        }
    }
}

Test(crypto, p_hash_refuses_empty_inputs_an_oversized_seed_and_unknown_digests)
{
    uint8_t secret[32] = {1}, seed[UAS_P_HASH_SEED_MAX + 1] = {2}, out[32];
    cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, 0, seed, 32, out, 32),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, 32, seed, 0, out, 32),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_p_hash(UAS_DIGEST_SHA256, NULL, 32, seed, 32, out, 32),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(
        uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, 32, seed, UAS_P_HASH_SEED_MAX + 1, out, 32),
        UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_p_hash((uas_digest)5, secret, 32, seed, 32, out, 32),
                 UAS_BAD_INVALID_ARGUMENT);
    /* The largest seed still works. */
    cr_assert_eq(
        uas_crypto_p_hash(UAS_DIGEST_SHA256, secret, 32, seed, UAS_P_HASH_SEED_MAX, out, 32),
        UAS_GOOD);
}

/* ---- HMAC ---- */

/* RFC 4231, test cases 1, 2, 3, 4, 6 and 7 (5 truncates the output). */
Test(crypto, hmac_sha256_matches_rfc4231)
{
    uint8_t key[131], data[160], out[32];
    memset(key, 0x0b, 20);
    cr_assert_eq(
        uas_crypto_hmac(UAS_DIGEST_SHA256, key, 20, (const uint8_t *)"Hi There", 8, NULL, 0, out),
        UAS_GOOD);
    assert_hex(out, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

    const char *jefe = "what do ya want for nothing?";
    uas_crypto_hmac(UAS_DIGEST_SHA256, (const uint8_t *)"Jefe", 4, (const uint8_t *)jefe,
                    strlen(jefe), NULL, 0, out);
    assert_hex(out, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* The same message given in two pieces. */
    uas_crypto_hmac(UAS_DIGEST_SHA256, (const uint8_t *)"Jefe", 4, (const uint8_t *)jefe, 10,
                    (const uint8_t *)jefe + 10, strlen(jefe) - 10, out);
    assert_hex(out, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    memset(key, 0xaa, 20);
    memset(data, 0xdd, 50);
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 20, data, 50, NULL, 0, out);
    assert_hex(out, 32, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

    for (int i = 0; i < 25; i++)
        key[i] = (uint8_t)(i + 1);
    memset(data, 0xcd, 50);
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 25, data, 50, NULL, 0, out);
    assert_hex(out, 32, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

    memset(key, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 131, (const uint8_t *)t6, strlen(t6), NULL, 0, out);
    assert_hex(out, 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    const char *t7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the "
                     "HMAC algorithm.";
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 131, (const uint8_t *)t7, strlen(t7), NULL, 0, out);
    assert_hex(out, 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* RFC 2202, HMAC-SHA1 (Basic256) test cases 1, 2, 3, 6 and 7. */
Test(crypto, hmac_sha1_matches_rfc2202)
{
    uint8_t key[80], data[73], out[20];
    const char *m = "what do ya want for nothing?";
    cr_assert_eq(uas_crypto_hmac(UAS_DIGEST_SHA1, (const uint8_t *)"Jefe", 4, (const uint8_t *)m,
                                 strlen(m), NULL, 0, out),
                 UAS_GOOD);
    assert_hex(out, 20, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    memset(key, 0x0b, 20);
    uas_crypto_hmac(UAS_DIGEST_SHA1, key, 20, (const uint8_t *)"Hi There", 8, NULL, 0, out);
    assert_hex(out, 20, "b617318655057264e28bc0b6fb378c8ef146be00");
    memset(key, 0xaa, 20);
    memset(data, 0xdd, 50);
    uas_crypto_hmac(UAS_DIGEST_SHA1, key, 20, data, 50, NULL, 0, out);
    assert_hex(out, 20, "125d7342b9ac11cd91a39af48aa17b4f63f175d3");
    memset(key, 0xaa, 80);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    uas_crypto_hmac(UAS_DIGEST_SHA1, key, 80, (const uint8_t *)t6, strlen(t6), NULL, 0, out);
    assert_hex(out, 20, "aa4ae5e15272d00e95705637ce8a3b55ed402112");
    const char *t7 = "Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data";
    uas_crypto_hmac(UAS_DIGEST_SHA1, key, 80, (const uint8_t *)t7, strlen(t7), NULL, 0, out);
    assert_hex(out, 20, "e8e99d0f45237d786d6bbaa7965c7808bbff1a91");
}

Test(crypto, hmac_verify_accepts_the_mac_and_refuses_any_changed_byte)
{
    uint8_t key[32], data[100], mac[32];
    memset(key, 0x42, sizeof(key));
    for (int i = 0; i < 100; i++)
        data[i] = (uint8_t)i;
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 32, data, 100, NULL, 0, mac);
    cr_assert_eq(uas_crypto_hmac_verify(UAS_DIGEST_SHA256, key, 32, data, 100, mac), UAS_GOOD);
    for (int i = 0; i < 32; i++) {
        mac[i] ^= 0x01;
        cr_assert_eq(uas_crypto_hmac_verify(UAS_DIGEST_SHA256, key, 32, data, 100, mac),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        mac[i] ^= 0x01;
    }
    data[99] ^= 0x80;
    cr_assert_eq(uas_crypto_hmac_verify(UAS_DIGEST_SHA256, key, 32, data, 100, mac),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    data[99] ^= 0x80;
    key[0] ^= 1;
    cr_assert_eq(uas_crypto_hmac_verify(UAS_DIGEST_SHA256, key, 32, data, 100, mac),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
}

/* The keyed HMAC context, reused message after message, against
 * OpenSSL's one-shot EVP_Q_mac, for keys shorter than, as long as and
 * longer than the 64-byte block (and the empty key), messages around the
 * block and padding boundaries, in one piece and in two. */
Test(crypto, keyed_hmac_matches_openssl_one_shot_hmac_for_every_key_length)
{
    static const size_t key_lens[] = {0, 1, 20, 32, 63, 64, 65, 80, 131};
    static const size_t msg_lens[] = {0,   1,   55,  56,  63,  64,  65,  100,
                                      118, 119, 120, 127, 128, 183, 184, 200};
    uint8_t key[131], msg[200], want[32], got[32];
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 31 + 1);
    for (int d = 0; d < 2; d++) {
        size_t hl = uas_digest_len((uas_digest)d);
        for (size_t k = 0; k < sizeof(key_lens) / sizeof(key_lens[0]); k++) {
            size_t kl = key_lens[k];
            uas_hmac_key hk;
            cr_assert_eq(uas_crypto_hmac_key_set(&hk, (uas_digest)d, key, kl), UAS_GOOD);
            for (size_t m = 0; m < sizeof(msg_lens) / sizeof(msg_lens[0]); m++) {
                size_t ml = msg_lens[m], cut = ml / 3;
                q_hmac((uas_digest)d, key, kl, msg, ml, want);
                memset(got, 0, sizeof(got));
                cr_assert_eq(uas_crypto_hmac_keyed(&hk, msg, ml, NULL, 0, got), UAS_GOOD);
                cr_assert(memcmp(got, want, hl) == 0, "digest %d, key %zu, msg %zu", d, kl, ml);
                memset(got, 0, sizeof(got));
                cr_assert_eq(uas_crypto_hmac_keyed(&hk, msg, cut, msg + cut, ml - cut, got),
                             UAS_GOOD);
                cr_assert(memcmp(got, want, hl) == 0, "digest %d, key %zu, msg %zu in two", d, kl,
                          ml);
                memset(got, 0, sizeof(got));
                cr_assert_eq(uas_crypto_hmac((uas_digest)d, key, kl, msg, ml, NULL, 0, got),
                             UAS_GOOD);
                cr_assert(memcmp(got, want, hl) == 0, "one-shot, digest %d, key %zu", d, kl);
                cr_assert_eq(uas_crypto_hmac_keyed_verify(&hk, msg, ml, want), UAS_GOOD);
                want[hl - 1] ^= 1;
                cr_assert_eq(uas_crypto_hmac_keyed_verify(&hk, msg, ml, want),
                             UAS_BAD_SECURITY_CHECKS_FAILED);
            }
            /* Clearing frees the context; a cleared key refuses to MAC. */
            uas_crypto_hmac_key_clear(&hk);
            static const uas_hmac_key zero;
            cr_assert(memcmp(&hk, &zero, sizeof(zero)) == 0);
            cr_assert_eq(uas_crypto_hmac_keyed(&hk, msg, 10, NULL, 0, got),
                         UAS_BAD_INVALID_ARGUMENT);
            cr_assert_eq(uas_crypto_hmac_keyed_verify(&hk, msg, 10, want),
                         UAS_BAD_SECURITY_CHECKS_FAILED);
        }
    }
    uas_hmac_key hk;
    cr_assert_eq(uas_crypto_hmac_key_set(&hk, (uas_digest)7, key, 32), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_null(hk.ctx);
    uas_crypto_hmac_key_clear(&hk); /* harmless on a cleared key */
    /* A NULL key is the empty key. */
    uint8_t a[32], b[32];
    cr_assert_eq(uas_crypto_hmac(UAS_DIGEST_SHA256, NULL, 0, msg, 10, NULL, 0, a), UAS_GOOD);
    q_hmac(UAS_DIGEST_SHA256, key, 0, msg, 10, b);
    cr_assert(memcmp(a, b, 32) == 0);
}

/* ---- AES-CBC ---- */

static const char *sp800_38a_plain = "6bc1bee22e409f96e93d7e117393172a"
                                     "ae2d8a571e03ac9c9eb76fac45af8e51"
                                     "30c81c46a35ce411e5fbc1191a0a52ef"
                                     "f69f2445df4f9b17ad2b417be66c3710";

/* NIST SP 800-38A F.2.1 (CBC-AES128.Encrypt) and F.2.2 (.Decrypt). */
Test(crypto, aes128_cbc_matches_sp800_38a_f21_f22)
{
    uint8_t key[16], iv[16], buf[64];
    unhex("2b7e151628aed2a6abf7158809cf4f3c", key);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    unhex(sp800_38a_plain, buf);
    cr_assert_eq(uas_crypto_aes_cbc(true, key, 16, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64,
               "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
               "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7");
    cr_assert_eq(uas_crypto_aes_cbc(false, key, 16, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64, sp800_38a_plain);
}

/* NIST SP 800-38A F.2.5 (CBC-AES256.Encrypt) and F.2.6 (.Decrypt). */
Test(crypto, aes256_cbc_matches_sp800_38a_f25_f26)
{
    uint8_t key[32], iv[16], buf[64];
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    unhex(sp800_38a_plain, buf);
    cr_assert_eq(uas_crypto_aes_cbc(true, key, 32, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64,
               "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
               "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b");
    cr_assert_eq(uas_crypto_aes_cbc(false, key, 32, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64, sp800_38a_plain);
}

Test(crypto, aes_cbc_refuses_partial_blocks_and_odd_key_sizes)
{
    uint8_t key[32] = {0}, iv[16] = {0}, buf[48] = {0};
    cr_assert_eq(uas_crypto_aes_cbc(true, key, 32, iv, buf, 15), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_aes_cbc(false, key, 16, iv, buf, 33), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_aes_cbc(true, key, 24, iv, buf, 48), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_aes_cbc(true, key, 32, iv, buf, 0), UAS_GOOD);
}

/* The per-thread contexts switch between key sizes and directions without
 * one call leaking into the next. */
Test(crypto, aes_cbc_interleaved_keys_and_directions_stay_independent)
{
    uint8_t k1[16], k2[32], iv[16], a[64], b[64], ref_a[64], ref_b[64];
    memset(k1, 1, sizeof(k1));
    memset(k2, 2, sizeof(k2));
    memset(iv, 3, sizeof(iv));
    for (int i = 0; i < 64; i++)
        a[i] = b[i] = (uint8_t)i;
    memcpy(ref_a, a, 64);
    memcpy(ref_b, b, 64);
    uas_crypto_aes_cbc(true, k1, 16, iv, a, 64);
    uas_crypto_aes_cbc(true, k2, 32, iv, b, 64);
    uas_crypto_aes_cbc(false, k1, 16, iv, a, 64);
    cr_assert(memcmp(a, ref_a, 64) == 0);
    uas_crypto_aes_cbc(false, k2, 32, iv, b, 64);
    cr_assert(memcmp(b, ref_b, 64) == 0);
}

/* A keyed context runs every message as CBC from the IV it is given,
 * whatever went through it before and whatever the lengths. */
Test(crypto, aes_cbc_keyed_restarts_from_the_iv_for_every_message)
{
    static const char *f25 = "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
                             "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b";
    uint8_t key[32], iv[16], other_iv[16], buf[64], ref[64], plain[64];
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    uas_aes_cbc enc, dec;
    cr_assert_eq(uas_crypto_aes_cbc_keyed(&enc, true, key, 32), UAS_GOOD);
    cr_assert_eq(uas_crypto_aes_cbc_keyed(&dec, false, key, 32), UAS_GOOD);
    for (int round = 0; round < 3; round++) {
        unhex(sp800_38a_plain, buf);
        cr_assert_eq(uas_crypto_aes_cbc_run(&enc, iv, buf, 64), UAS_GOOD);
        assert_hex(buf, 64, f25);
        cr_assert_eq(uas_crypto_aes_cbc_run(&dec, iv, buf, 64), UAS_GOOD);
        assert_hex(buf, 64, sp800_38a_plain);
        /* Other lengths and IVs in between, against the one-shot function. */
        for (size_t n = 16; n <= 48; n += 16) {
            memset(other_iv, round * 16 + (int)n, sizeof(other_iv));
            for (size_t i = 0; i < n; i++)
                plain[i] = buf[i] = ref[i] = (uint8_t)(i * 13 + n + (size_t)round);
            cr_assert_eq(uas_crypto_aes_cbc(true, key, 32, other_iv, ref, n), UAS_GOOD);
            cr_assert_eq(uas_crypto_aes_cbc_run(&enc, other_iv, buf, n), UAS_GOOD);
            cr_assert(memcmp(buf, ref, n) == 0, "round %d, %zu bytes", round, n);
            cr_assert_eq(uas_crypto_aes_cbc_run(&dec, other_iv, buf, n), UAS_GOOD);
            cr_assert(memcmp(buf, plain, n) == 0, "round %d, %zu bytes", round, n);
        }
    }
    /* Refused and empty inputs leave the contexts as they were. */
    cr_assert_eq(uas_crypto_aes_cbc_run(&enc, iv, buf, 15), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_aes_cbc_run(&dec, iv, buf, 0), UAS_GOOD);
    unhex(sp800_38a_plain, buf);
    cr_assert_eq(uas_crypto_aes_cbc_run(&enc, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64, f25);
    cr_assert_eq(uas_crypto_aes_cbc_run(&dec, iv, buf, 64), UAS_GOOD);
    assert_hex(buf, 64, sp800_38a_plain);
    /* Freeing zeroes the state; a freed or unkeyed context refuses. */
    uas_crypto_aes_cbc_free(&enc);
    uas_crypto_aes_cbc_free(&dec);
    static const uas_aes_cbc zero;
    cr_assert(memcmp(&enc, &zero, sizeof(zero)) == 0);
    cr_assert_eq(uas_crypto_aes_cbc_run(&enc, iv, buf, 16), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_aes_cbc_keyed(&enc, true, key, 24), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_null(enc.ctx);
    uas_crypto_aes_cbc_free(&enc); /* harmless twice */
}

/* The per-chunk primitives never allocate from the stack's allocator, and
 * the keyed AES context allocates nothing inside OpenSSL either. The keyed
 * HMAC context does, in OpenSSL 3.0: EVP_MAC_init and EVP_MAC_final each
 * copy a digest state into a newly allocated one (HMAC_Init_ex,
 * HMAC_Final); so at most 2 allocations per MAC, all freed before the MAC
 * returns. A rewrite that duplicated or re-keyed the context per chunk (11
 * allocations) fails here. */
Test(crypto, per_chunk_primitives_allocate_nothing_but_openssl_hmac_copies)
{
    cr_assert(ossl_counting, "OpenSSL's allocations cannot be counted");
    uint8_t key[32], iv[16] = {7}, data[160], mac[32];
    memset(key, 0x5a, sizeof(key));
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)i;
    uas_aes_cbc enc, dec;
    cr_assert_eq(uas_crypto_aes_cbc_keyed(&enc, true, key, 32), UAS_GOOD);
    cr_assert_eq(uas_crypto_aes_cbc_keyed(&dec, false, key, 16), UAS_GOOD);
    uas_hmac_key hk256, hk1;
    cr_assert_eq(uas_crypto_hmac_key_set(&hk256, UAS_DIGEST_SHA256, key, 32), UAS_GOOD);
    cr_assert_eq(uas_crypto_hmac_key_set(&hk1, UAS_DIGEST_SHA1, key, 24), UAS_GOOD);
    uas_mem_stats s0, s1;
    uas_mem_get_stats(&s0);
    unsigned long long o0 = ossl_allocs;
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(uas_crypto_aes_cbc_run(&enc, iv, data, 144), UAS_GOOD);
        cr_assert_eq(uas_crypto_aes_cbc_run(&dec, iv, data, 144), UAS_GOOD);
    }
    cr_assert_eq(ossl_allocs - o0, 0, "OpenSSL allocations per AES chunk");
    o0 = ossl_allocs;
    unsigned long long f0 = ossl_frees;
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(uas_crypto_hmac_keyed(&hk256, data, 100, NULL, 0, mac), UAS_GOOD);
        cr_assert_eq(uas_crypto_hmac_keyed_verify(&hk256, data, 100, mac), UAS_GOOD);
        cr_assert_eq(uas_crypto_hmac_keyed(&hk1, data, 100, data, 7, mac), UAS_GOOD);
    }
    unsigned long long per_300 = ossl_allocs - o0;
    cr_assert_leq(per_300, 2 * 300, "OpenSSL allocations: %llu per 300 MACs", per_300);
    cr_assert_eq(ossl_frees - f0, per_300, "every allocation of a MAC is freed by its end");
    uas_mem_get_stats(&s1);
    cr_assert_eq(s1.allocs - s0.allocs, 0, "stack allocations per chunk");
    uas_crypto_aes_cbc_free(&enc);
    uas_crypto_aes_cbc_free(&dec);
    uas_crypto_hmac_key_clear(&hk256);
    uas_crypto_hmac_key_clear(&hk1);
}

typedef struct thread_job {
    uint8_t out[32];
    uint8_t buf[32];
    uas_status st;
} thread_job;

static void *thread_main(void *p)
{
    thread_job *j = p;
    uint8_t key[32] = {9}, iv[16] = {0};
    j->st = uas_crypto_hmac(UAS_DIGEST_SHA256, key, 32, (const uint8_t *)"x", 1, NULL, 0, j->out);
    if (j->st == UAS_GOOD)
        j->st = uas_crypto_aes_cbc(true, key, 32, iv, j->buf, 32);
    return NULL;
}

/* Contexts of a thread that ends are freed (ASan's leak check). */
Test(crypto, other_threads_get_their_own_contexts_and_free_them_at_exit)
{
    thread_job j[4];
    pthread_t t[4];
    memset(j, 0, sizeof(j));
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, &j[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    uint8_t key[32] = {9}, iv[16] = {0}, out[32], buf[32] = {0};
    uas_crypto_hmac(UAS_DIGEST_SHA256, key, 32, (const uint8_t *)"x", 1, NULL, 0, out);
    uas_crypto_aes_cbc(true, key, 32, iv, buf, 32);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(j[i].st, UAS_GOOD);
        cr_assert(memcmp(j[i].out, out, 32) == 0);
        cr_assert(memcmp(j[i].buf, buf, 32) == 0);
    }
}

/* ---- digests and thumbprints ---- */

Test(crypto, sha1_and_sha256_of_abc_match_fips180)
{
    uint8_t out[32];
    cr_assert_eq(uas_crypto_digest(UAS_DIGEST_SHA1, (const uint8_t *)"abc", 3, out), UAS_GOOD);
    assert_hex(out, 20, "a9993e364706816aba3e25717850c26c9cd0d89d");
    cr_assert_eq(uas_crypto_digest(UAS_DIGEST_SHA256, (const uint8_t *)"abc", 3, out), UAS_GOOD);
    assert_hex(out, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(crypto, certificate_thumbprint_is_the_sha1_of_its_der)
{
    const test_key *k = test_key_get(TK_RSA2048_A);
    uint8_t mine[20], theirs[20];
    unsigned n = 0;
    cr_assert_eq(uas_crypto_digest(UAS_DIGEST_SHA1, k->cert, k->cert_len, mine), UAS_GOOD);
    X509 *x;
    size_t der_len;
    cr_assert_eq(uas_crypto_load_cert(k->cert, k->cert_len, &x, &der_len), UAS_GOOD);
    cr_assert_eq(der_len, k->cert_len);
    X509_digest(x, EVP_sha1(), theirs, &n);
    X509_free(x);
    cr_assert_eq(n, 20);
    cr_assert(memcmp(mine, theirs, 20) == 0);
}

/* ---- loading keys and certificates ---- */

Test(crypto, private_keys_load_from_der_and_pem_and_garbage_is_refused)
{
    const test_key *k = test_key_get(TK_RSA2048_A);
    EVP_PKEY *p = NULL;
    cr_assert_eq(uas_crypto_load_private_key(k->key_der, k->key_len, &p), UAS_GOOD);
    cr_assert_eq(EVP_PKEY_eq(p, k->key), 1);
    EVP_PKEY_free(p);
    cr_assert_eq(uas_crypto_load_private_key(k->key_pem, k->key_pem_len, &p), UAS_GOOD);
    cr_assert_eq(EVP_PKEY_eq(p, k->key), 1);
    EVP_PKEY_free(p);
    uint8_t junk[300];
    memset(junk, 0x30, sizeof(junk));
    cr_assert_eq(uas_crypto_load_private_key(junk, sizeof(junk), &p), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_null(p);
    cr_assert_eq(uas_crypto_load_private_key(k->key_der, k->key_len / 2, &p),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_load_private_key(NULL, 0, &p), UAS_BAD_INVALID_ARGUMENT);
}

Test(crypto, certificates_load_the_first_of_a_chain_and_garbage_is_refused)
{
    const test_key *a = test_key_get(TK_RSA2048_A), *b = test_key_get(TK_RSA2048_B);
    uint8_t *chain = malloc(a->cert_len + b->cert_len);
    memcpy(chain, a->cert, a->cert_len);
    memcpy(chain + a->cert_len, b->cert, b->cert_len);
    X509 *x;
    size_t n;
    cr_assert_eq(uas_crypto_load_cert(chain, a->cert_len + b->cert_len, &x, &n), UAS_GOOD);
    cr_assert_eq(n, a->cert_len);
    X509_free(x);
    cr_assert_eq(uas_crypto_load_cert(chain, a->cert_len - 1, &x, &n), UAS_BAD_CERTIFICATE_INVALID);
    cr_assert_null(x);
    chain[1] ^= 0x55;
    cr_assert_eq(uas_crypto_load_cert(chain, a->cert_len, &x, &n), UAS_BAD_CERTIFICATE_INVALID);
    free(chain);
}

/* The public key of a certificate or SPKI: the same key as OpenSSL's own
 * decoding, the same object on a repeat (from the per-thread cache), exact
 * bytes only, and every key still right once more distinct inputs than
 * the cache has slots went through it. */
Test(crypto, public_keys_decode_once_per_input_and_stay_right_past_the_cache_size)
{
    static const test_key_id ids[] = {TK_RSA2048_A, TK_RSA2048_B, TK_RSA2048_C, TK_RSA4096,
                                      TK_RSA1024,   TK_RSA512,    TK_EC256};
    enum { NID = sizeof(ids) / sizeof(ids[0]) };
    uint8_t *spki[NID];
    int spki_len[NID];
    for (int i = 0; i < NID; i++) {
        spki[i] = NULL;
        spki_len[i] = i2d_PUBKEY(test_key_get(ids[i])->key, &spki[i]);
        cr_assert_gt(spki_len[i], 0);
    }
    /* 2 x 7 distinct inputs: more than the slots, so entries get replaced. */
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < NID; i++) {
            const test_key *k = test_key_get(ids[i]);
            EVP_PKEY *c1 = uas_crypto_public_key(k->cert, k->cert_len, true);
            EVP_PKEY *c2 = uas_crypto_public_key(k->cert, k->cert_len, true);
            EVP_PKEY *s1 = uas_crypto_public_key(spki[i], (size_t)spki_len[i], false);
            cr_assert_not_null(c1, "key %d", i);
            cr_assert_not_null(s1, "key %d", i);
            cr_assert_eq(c1, c2, "a repeat is served from the cache");
            cr_assert_eq(EVP_PKEY_eq(c1, k->key), 1, "key %d, pass %d", i, pass);
            cr_assert_eq(EVP_PKEY_eq(s1, k->key), 1, "key %d, pass %d", i, pass);
            /* A certificate and its SPKI are separate entries. */
            cr_assert_neq(c1, s1);
            EVP_PKEY_free(c1);
            EVP_PKEY_free(c2);
            EVP_PKEY_free(s1);
        }
    }
    /* A reference outlives its entry's replacement. */
    const test_key *a = test_key_get(TK_RSA2048_A);
    EVP_PKEY *held = uas_crypto_public_key(a->cert, a->cert_len, true);
    for (int i = 0; i < NID; i++) {
        EVP_PKEY *x = uas_crypto_public_key(spki[i], (size_t)spki_len[i], false);
        EVP_PKEY_free(x);
        x = uas_crypto_public_key(test_key_get(ids[i])->cert, test_key_get(ids[i])->cert_len, true);
        EVP_PKEY_free(x);
    }
    cr_assert_eq(EVP_PKEY_eq(held, a->key), 1);
    EVP_PKEY_free(held);
    /* Exact bytes only: a byte more or less, a changed byte, garbage. */
    uint8_t buf[8192];
    cr_assert_lt(a->cert_len + 1, sizeof(buf));
    memcpy(buf, a->cert, a->cert_len);
    buf[a->cert_len] = 0;
    cr_assert_null(uas_crypto_public_key(buf, a->cert_len + 1, true));
    cr_assert_null(uas_crypto_public_key(buf, a->cert_len - 1, true));
    buf[1] ^= 0x55;
    cr_assert_null(uas_crypto_public_key(buf, a->cert_len, true));
    cr_assert_null(uas_crypto_public_key(spki[0], (size_t)spki_len[0] - 1, false));
    cr_assert_null(uas_crypto_public_key(a->cert, a->cert_len, false), "a certificate is no SPKI");
    cr_assert_null(uas_crypto_public_key(NULL, 10, true));
    for (int i = 0; i < NID; i++)
        OPENSSL_free(spki[i]);
}

Test(crypto, certificate_length_comes_from_the_first_der_header)
{
    const test_key *a = test_key_get(TK_RSA2048_A), *b = test_key_get(TK_RSA2048_B);
    uint8_t *chain = malloc(a->cert_len + b->cert_len);
    memcpy(chain, a->cert, a->cert_len);
    memcpy(chain + a->cert_len, b->cert, b->cert_len);
    size_t n = 0;
    cr_assert_eq(uas_crypto_cert_len(chain, a->cert_len + b->cert_len, &n), UAS_GOOD);
    cr_assert_eq(n, a->cert_len);
    cr_assert_eq(uas_crypto_cert_len(chain, a->cert_len - 1, &n), UAS_BAD_CERTIFICATE_INVALID);
    cr_assert_eq(uas_crypto_cert_len(chain, 1, &n), UAS_BAD_CERTIFICATE_INVALID);
    cr_assert_eq(uas_crypto_cert_len(NULL, 0, &n), UAS_BAD_CERTIFICATE_INVALID);
    chain[0] = 0x04; /* an OCTET STRING, not a SEQUENCE */
    cr_assert_eq(uas_crypto_cert_len(chain, a->cert_len, &n), UAS_BAD_CERTIFICATE_INVALID);
    free(chain);
}

/* ---- RSA signatures ---- */

static void check_sign_verify(uas_rsa_sig alg, test_key_id id)
{
    const test_key *k = test_key_get(id), *other = test_key_get(TK_RSA2048_C);
    size_t ks = uas_crypto_rsa_size(k->key);
    uint8_t data[777], sig[512];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 31);
    cr_assert_eq(uas_crypto_rsa_sign(alg, k->key, data, sizeof(data), sig, ks), UAS_GOOD);
    cr_assert_eq(uas_crypto_rsa_verify(alg, k->key, data, sizeof(data), sig, ks), UAS_GOOD);
    /* Tampered data, tampered signature, another key, a short signature. */
    data[500] ^= 1;
    cr_assert_eq(uas_crypto_rsa_verify(alg, k->key, data, sizeof(data), sig, ks),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    data[500] ^= 1;
    sig[ks / 2] ^= 0x10;
    cr_assert_eq(uas_crypto_rsa_verify(alg, k->key, data, sizeof(data), sig, ks),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    sig[ks / 2] ^= 0x10;
    cr_assert_eq(uas_crypto_rsa_verify(alg, other->key, data, sizeof(data), sig, ks),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(uas_crypto_rsa_verify(alg, k->key, data, sizeof(data), sig, ks - 1),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    /* The signature does not verify under the other algorithms. */
    for (int o = 0; o < 3; o++) {
        if ((uas_rsa_sig)o != alg)
            cr_assert_eq(uas_crypto_rsa_verify((uas_rsa_sig)o, k->key, data, sizeof(data), sig, ks),
                         UAS_BAD_SECURITY_CHECKS_FAILED);
    }
    cr_assert_eq(uas_crypto_rsa_sign(alg, k->key, data, sizeof(data), sig, ks - 1),
                 UAS_BAD_INVALID_ARGUMENT);
}

Test(crypto, rsa_pkcs1_sha256_signs_and_verifies_and_detects_tampering)
{
    check_sign_verify(UAS_RSA_PKCS1_SHA256, TK_RSA2048_A);
    check_sign_verify(UAS_RSA_PKCS1_SHA256, TK_RSA4096);
}

Test(crypto, rsa_pss_sha256_signs_and_verifies_and_detects_tampering)
{
    check_sign_verify(UAS_RSA_PSS_SHA256, TK_RSA2048_A);
    check_sign_verify(UAS_RSA_PSS_SHA256, TK_RSA4096);
}

Test(crypto, rsa_pkcs1_sha1_signs_and_verifies_and_detects_tampering)
{
    check_sign_verify(UAS_RSA_PKCS1_SHA1, TK_RSA1024);
    check_sign_verify(UAS_RSA_PKCS1_SHA1, TK_RSA2048_A);
}

/* PSS as Part 7 defines it (MGF1-SHA256, 32-byte salt), checked with an
 * independently configured OpenSSL verifier. */
Test(crypto, rsa_pss_signature_uses_mgf1_sha256_and_a_32_byte_salt)
{
    const test_key *k = test_key_get(TK_RSA2048_A);
    uint8_t data[64] = {1, 2, 3}, sig[256];
    cr_assert_eq(uas_crypto_rsa_sign(UAS_RSA_PSS_SHA256, k->key, data, 64, sig, 256), UAS_GOOD);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx;
    EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, k->key);
    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256());
    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32);
    cr_assert_eq(EVP_DigestVerify(md, sig, 256, data, 64), 1);
    EVP_MD_CTX_free(md);
}

/* ---- RSA-OAEP ---- */

static void check_oaep(uas_rsa_enc e, test_key_id id)
{
    const test_key *k = test_key_get(id);
    size_t ks = uas_crypto_rsa_size(k->key);
    size_t pb = uas_crypto_rsa_plain_block(k->key, e);
    cr_assert_eq(pb, ks - (e == UAS_RSA_OAEP_SHA1 ? 42 : 66));
    const size_t lens[] = {1, pb - 1, pb, pb + 1, 3 * pb + 5};
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t len = lens[li];
        size_t blocks = (len + pb - 1) / pb;
        size_t cap = blocks * ks;
        uint8_t *plain = malloc(len), *buf = malloc(cap);
        for (size_t i = 0; i < len; i++)
            plain[i] = (uint8_t)(i * 13 + li);
        /* In place: the ciphertext grows over the plaintext. */
        memcpy(buf, plain, len);
        size_t n = 0;
        cr_assert_eq(uas_crypto_rsa_encrypt(e, k->key, buf, len, buf, cap, &n), UAS_GOOD);
        cr_assert_eq(n, cap);
        uint8_t *copy = malloc(cap);
        memcpy(copy, buf, cap);
        size_t m = 0;
        cr_assert_eq(uas_crypto_rsa_decrypt(e, k->key, buf, n, buf, cap, &m), UAS_GOOD);
        cr_assert_eq(m, len);
        cr_assert(memcmp(buf, plain, len) == 0, "round trip of %zu bytes", len);
        /* A changed byte in any block fails the whole, with no output. */
        for (size_t b = 0; b < blocks; b++) {
            memcpy(buf, copy, cap);
            buf[b * ks + ks / 3] ^= 0x04;
            cr_assert_eq(uas_crypto_rsa_decrypt(e, k->key, buf, n, buf, cap, &m),
                         UAS_BAD_SECURITY_CHECKS_FAILED);
            cr_assert_eq(m, 0);
        }
        /* Truncated, or decoded with the other OAEP hash. */
        memcpy(buf, copy, cap);
        cr_assert_eq(uas_crypto_rsa_decrypt(e, k->key, buf, n - 1, buf, cap, &m),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        cr_assert_eq(
            uas_crypto_rsa_decrypt(e == UAS_RSA_OAEP_SHA1 ? UAS_RSA_OAEP_SHA256 : UAS_RSA_OAEP_SHA1,
                                   k->key, buf, n, buf, cap, &m),
            UAS_BAD_SECURITY_CHECKS_FAILED);
        /* Too little room for the output. */
        memcpy(buf, copy, cap);
        if (len > 1)
            cr_assert_eq(uas_crypto_rsa_decrypt(e, k->key, buf, n, buf, len - 1, &m),
                         UAS_BAD_SECURITY_CHECKS_FAILED);
        cr_assert_eq(uas_crypto_rsa_encrypt(e, k->key, plain, len, buf, cap - 1, &m),
                     UAS_BAD_ENCODING_LIMITS_EXCEEDED);
        free(plain);
        free(buf);
        free(copy);
    }
}

Test(crypto, rsa_oaep_sha1_multi_block_round_trip_and_tampering)
{
    check_oaep(UAS_RSA_OAEP_SHA1, TK_RSA2048_A);
    check_oaep(UAS_RSA_OAEP_SHA1, TK_RSA1024);
}

Test(crypto, rsa_oaep_sha256_multi_block_round_trip_and_tampering)
{
    check_oaep(UAS_RSA_OAEP_SHA256, TK_RSA2048_A);
    check_oaep(UAS_RSA_OAEP_SHA256, TK_RSA4096);
}

/* Our OAEP-SHA256 is RSAES-OAEP with SHA-256 and MGF1-SHA256: a block made
 * by an independently configured OpenSSL context decrypts. */
Test(crypto, rsa_oaep_sha256_interoperates_with_a_plain_openssl_context)
{
    const test_key *k = test_key_get(TK_RSA2048_A);
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(k->key, NULL);
    EVP_PKEY_encrypt_init(c);
    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING);
    EVP_PKEY_CTX_set_rsa_oaep_md(c, EVP_sha256());
    EVP_PKEY_CTX_set_rsa_mgf1_md(c, EVP_sha256());
    uint8_t msg[100], ct[256], pt[256];
    memset(msg, 0x5a, sizeof(msg));
    size_t n = sizeof(ct), m = 0;
    cr_assert_eq(EVP_PKEY_encrypt(c, ct, &n, msg, sizeof(msg)), 1);
    EVP_PKEY_CTX_free(c);
    cr_assert_eq(uas_crypto_rsa_decrypt(UAS_RSA_OAEP_SHA256, k->key, ct, n, pt, sizeof(pt), &m),
                 UAS_GOOD);
    cr_assert_eq(m, sizeof(msg));
    cr_assert(memcmp(pt, msg, m) == 0);
}

Test(crypto, rsa_refuses_non_rsa_keys)
{
    const test_key *ec = test_key_get(TK_EC256);
    uint8_t data[16] = {0}, sig[256];
    size_t n;
    cr_assert_eq(uas_crypto_rsa_size(ec->key), 0);
    cr_assert_eq(uas_crypto_rsa_sign(UAS_RSA_PKCS1_SHA256, ec->key, data, 16, sig, 256),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_rsa_verify(UAS_RSA_PKCS1_SHA256, ec->key, data, 16, sig, 256),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(uas_crypto_rsa_encrypt(UAS_RSA_OAEP_SHA1, ec->key, data, 16, sig, 256, &n),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_crypto_rsa_decrypt(UAS_RSA_OAEP_SHA1, ec->key, sig, 256, sig, 256, &n),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
}

/* ---- randomness and comparison ---- */

Test(crypto, random_bytes_differ_and_compare_in_constant_time)
{
    uint8_t a[32], b[32], zero[32] = {0};
    cr_assert_eq(uas_crypto_random(a, 32), UAS_GOOD);
    cr_assert_eq(uas_crypto_random(b, 32), UAS_GOOD);
    cr_assert_not(uas_crypto_ct_equal(a, b, 32));
    cr_assert_not(uas_crypto_ct_equal(a, zero, 32));
    memcpy(b, a, 32);
    cr_assert(uas_crypto_ct_equal(a, b, 32));
    uas_wipe(a, 32);
    cr_assert(uas_crypto_ct_equal(a, zero, 32));
}

#else

Test(crypto, not_built_without_encryption) {}

#endif
