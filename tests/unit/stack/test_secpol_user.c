#define _GNU_SOURCE
/* User identity token cryptography: a password encrypted by the client
 * side decrypts on the server side for every policy, tampering and wrong
 * nonces fail uniformly, and user token signatures verify. */
#include <criterion/criterion.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION /* a build without it may have no OpenSSL headers */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#endif

#include "helper_keys.h"
#include "secpol.h"
#include "secpol_user.h"

#ifdef UAS_ENABLE_ENCRYPTION

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

static uas_secpol_cred *cred_of(test_key_id id)
{
    const test_key *k = test_key_get(id);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(k->cert, k->cert_len, k->key_der, k->key_len, &c), UAS_GOOD);
    return c;
}

static const uas_secpol *const policies[] = {
    &uas_secpol_basic256sha256,
    &uas_secpol_aes128_sha256_rsaoaep,
    &uas_secpol_aes256_sha256_rsapss,
    &uas_secpol_basic256,
};

static const uint8_t nonce[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

Test(secpol_user, password_round_trip_for_every_policy)
{
    uas_secpol_cred *server = cred_of(TK_RSA2048_A);
    size_t cert_len;
    const uint8_t *cert = uas_secpol_cred_cert(server, &cert_len);
    const char *pw = "correct horse battery staple";
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        uint8_t cipher[1024];
        size_t n, need;
        cr_assert_eq(uas_secpol_user_cipher_len(cert, cert_len, policies[i], strlen(pw),
                                                sizeof(nonce), &need),
                     UAS_GOOD);
        cr_assert_eq(need, 256);
        cr_assert_eq(uas_secpol_user_encrypt(cert, cert_len, policies[i], (const uint8_t *)pw,
                                             strlen(pw), nonce, sizeof(nonce), cipher,
                                             sizeof(cipher), &n),
                     UAS_GOOD);
        cr_assert_eq(n, need);
        cr_assert_null(memmem(cipher, n, pw, strlen(pw)));
        uint8_t out[64];
        size_t out_len;
        cr_assert_eq(uas_secpol_user_decrypt(server, policies[i], cipher, n, nonce, sizeof(nonce),
                                             out, sizeof(out), &out_len, NULL),
                     UAS_GOOD, "%s", uas_security_policy_uri(policies[i]));
        cr_assert_eq(out_len, strlen(pw));
        cr_assert_eq(memcmp(out, pw, out_len), 0);
    }
    uas_secpol_cred_unref(server);
}

Test(secpol_user, long_password_takes_several_blocks)
{
    uas_secpol_cred *server = cred_of(TK_RSA2048_A);
    size_t cert_len;
    const uint8_t *cert = uas_secpol_cred_cert(server, &cert_len);
    uint8_t pw[500];
    memset(pw, 'p', sizeof(pw));
    uint8_t cipher[2048], out[600];
    size_t n, out_len;
    cr_assert_eq(uas_secpol_user_encrypt(cert, cert_len, &uas_secpol_aes256_sha256_rsapss, pw,
                                         sizeof(pw), nonce, sizeof(nonce), cipher, sizeof(cipher),
                                         &n),
                 UAS_GOOD);
    cr_assert_eq(n, 3 * 256);
    cr_assert_eq(uas_secpol_user_decrypt(server, &uas_secpol_aes256_sha256_rsapss, cipher, n, nonce,
                                         sizeof(nonce), out, sizeof(out), &out_len, NULL),
                 UAS_GOOD);
    cr_assert_eq(out_len, sizeof(pw));
    /* Too small an output buffer. */
    cr_assert_eq(uas_secpol_user_decrypt(server, &uas_secpol_aes256_sha256_rsapss, cipher, n, nonce,
                                         sizeof(nonce), out, 100, &out_len, NULL),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    cr_assert_eq(uas_secpol_user_encrypt(cert, cert_len, &uas_secpol_aes256_sha256_rsapss, pw,
                                         sizeof(pw), nonce, sizeof(nonce), cipher, 600, &n),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    uas_secpol_cred_unref(server);
}

Test(secpol_user, wrong_nonce_tampering_wrong_key_and_wrong_padding_fail_alike)
{
    uas_secpol_cred *server = cred_of(TK_RSA2048_A);
    uas_secpol_cred *other = cred_of(TK_RSA2048_C);
    size_t cert_len;
    const uint8_t *cert = uas_secpol_cred_cert(server, &cert_len);
    uint8_t cipher[512], out[64];
    size_t n, out_len;
    const uas_secpol *pol = &uas_secpol_basic256sha256;
    cr_assert_eq(uas_secpol_user_encrypt(cert, cert_len, pol, (const uint8_t *)"pw", 2, nonce,
                                         sizeof(nonce), cipher, sizeof(cipher), &n),
                 UAS_GOOD);
    uint8_t other_nonce[32];
    memcpy(other_nonce, nonce, sizeof(nonce));
    other_nonce[31] ^= 1;
    cr_assert_eq(uas_secpol_user_decrypt(server, pol, cipher, n, other_nonce, sizeof(other_nonce),
                                         out, sizeof(out), &out_len, NULL),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_assert_eq(uas_secpol_user_decrypt(other, pol, cipher, n, nonce, sizeof(nonce), out,
                                         sizeof(out), &out_len, NULL),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    /* OAEP-SHA256 ciphertext read as OAEP-SHA1. */
    cr_assert_eq(uas_secpol_user_decrypt(server, &uas_secpol_aes256_sha256_rsapss, cipher, n, nonce,
                                         sizeof(nonce), out, sizeof(out), &out_len, NULL),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cipher[10] ^= 0x80;
    cr_assert_eq(uas_secpol_user_decrypt(server, pol, cipher, n, nonce, sizeof(nonce), out,
                                         sizeof(out), &out_len, NULL),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_assert_eq(uas_secpol_user_decrypt(server, pol, cipher, n - 1, nonce, sizeof(nonce), out,
                                         sizeof(out), &out_len, NULL),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_assert_eq(out_len, 0);
    cr_assert_eq(uas_secpol_user_decrypt(server, &uas_secpol_none, cipher, n, nonce, sizeof(nonce),
                                         out, sizeof(out), &out_len, NULL),
                 UAS_BAD_SECURITY_POLICY_REJECTED);
    uas_secpol_cred_unref(server);
    uas_secpol_cred_unref(other);
}

Test(secpol_user, key_outside_policy_limits_is_refused_for_encryption)
{
    const test_key *k = test_key_get(TK_RSA1024);
    uint8_t cipher[512];
    size_t n;
    cr_assert_eq(uas_secpol_user_encrypt(k->cert, k->cert_len, &uas_secpol_basic256sha256,
                                         (const uint8_t *)"pw", 2, nonce, sizeof(nonce), cipher,
                                         sizeof(cipher), &n),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_eq(uas_secpol_user_encrypt((const uint8_t *)"junk", 4, &uas_secpol_basic256sha256,
                                         (const uint8_t *)"pw", 2, nonce, sizeof(nonce), cipher,
                                         sizeof(cipher), &n),
                 UAS_BAD_CERTIFICATE_INVALID);
}

Test(secpol_user, user_token_signature_verifies_with_the_certificate_only)
{
    uas_secpol_cred *user = cred_of(TK_RSA2048_B);
    size_t cert_len;
    const uint8_t *cert = uas_secpol_cred_cert(user, &cert_len);
    const test_key *other = test_key_get(TK_RSA2048_C);
    const uint8_t data[] = "server certificate and server nonce";
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        uint8_t sig[512];
        size_t sig_len;
        cr_assert_eq(
            uas_secpol_user_sign(user, policies[i], data, sizeof(data), sig, sizeof(sig), &sig_len),
            UAS_GOOD);
        cr_assert_eq(sig_len, 256);
        cr_assert_eq(
            uas_secpol_user_verify(policies[i], cert, cert_len, data, sizeof(data), sig, sig_len),
            UAS_GOOD);
        cr_assert_eq(uas_secpol_user_verify(policies[i], other->cert, other->cert_len, data,
                                            sizeof(data), sig, sig_len),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        sig[5] ^= 1;
        cr_assert_eq(
            uas_secpol_user_verify(policies[i], cert, cert_len, data, sizeof(data), sig, sig_len),
            UAS_BAD_SECURITY_CHECKS_FAILED);
    }
    uas_secpol_cred_unref(user);
}

/* A self-signed certificate (DER) of a new 2048-bit key with public
 * exponent e. */
static size_t cert_with_exponent(unsigned long long e_value, uint8_t *out, size_t cap)
{
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    cr_assert(kctx && EVP_PKEY_keygen_init(kctx) == 1);
    cr_assert_eq(EVP_PKEY_CTX_set_rsa_keygen_bits(kctx, 2048), 1);
    BIGNUM *e = BN_new();
    cr_assert(e && BN_set_word(e, (BN_ULONG)e_value) == 1);
    cr_assert_eq(EVP_PKEY_CTX_set1_rsa_keygen_pubexp(kctx, e), 1);
    EVP_PKEY *key = NULL;
    cr_assert_eq(EVP_PKEY_keygen(kctx, &key), 1);
    X509 *x = X509_new();
    cr_assert(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"big exponent", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_set_pubkey(x, key);
    cr_assert(X509_sign(x, key, EVP_sha256()) > 0);
    int n = i2d_X509(x, NULL);
    cr_assert(n > 0 && (size_t)n <= cap);
    uint8_t *p = out;
    i2d_X509(x, &p);
    X509_free(x);
    EVP_PKEY_free(key);
    BN_free(e);
    EVP_PKEY_CTX_free(kctx);
    return (size_t)n;
}

/* Issue #18, 4: a verification with a huge exponent costs like a
 * private-key operation; such certificates are refused before it. */
Test(secpol_user, user_certificate_with_a_big_exponent_is_refused_before_verifying)
{
    uint8_t cert[2048], sig[256];
    memset(sig, 0x55, sizeof(sig));
    const uint8_t data[] = "server certificate and server nonce";
    size_t n = cert_with_exponent((1ull << 32) + 15, cert, sizeof(cert));
    cr_assert_eq(uas_secpol_user_verify(&uas_secpol_basic256sha256, cert, n, data, sizeof(data),
                                        sig, sizeof(sig)),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    /* 65537 passes on to the signature check. */
    n = cert_with_exponent(65537, cert, sizeof(cert));
    cr_assert_eq(uas_secpol_user_verify(&uas_secpol_basic256sha256, cert, n, data, sizeof(data),
                                        sig, sizeof(sig)),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
}

#endif
