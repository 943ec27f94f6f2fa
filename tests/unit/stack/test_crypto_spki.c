/* uas_crypto_spki: the SubjectPublicKeyInfo of a key, memoised per thread
 * by key object, is always i2d_PUBKEY's encoding of that very key, also
 * after more keys than the memo holds and for a key freed and replaced
 * by the caller. */
#include <criterion/criterion.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "crypto_util.h"

static void expect_spki(EVP_PKEY *k)
{
    uint8_t want[512], got[512];
    uint8_t *p = want;
    int n = i2d_PUBKEY(k, &p);
    cr_assert_gt(n, 0);
    cr_expect_eq(uas_crypto_spki(k, NULL, 0), n);
    memset(got, 0, sizeof(got));
    cr_expect_eq(uas_crypto_spki(k, got, sizeof(got)), n);
    cr_expect_arr_eq(got, want, (size_t)n);
    /* Too small a buffer: the length, nothing written. */
    uint8_t small[8] = {0};
    cr_expect_eq(uas_crypto_spki(k, small, sizeof(small)), n);
    static const uint8_t zero[8];
    cr_expect_arr_eq(small, zero, sizeof(zero));
}

Test(crypto_spki, equals_i2d_pubkey_for_many_keys)
{
    const char *const groups[] = {"P-256", "P-384", "brainpoolP256r1", "P-256", "P-256", "P-384"};
    for (int round = 0; round < 2; round++) {
        EVP_PKEY *keys[6];
        for (int i = 0; i < 6; i++) {
            keys[i] = EVP_PKEY_Q_keygen(NULL, NULL, "EC", groups[i]);
            cr_assert(keys[i]);
        }
        /* More keys than the memo holds, each twice, in two orders. */
        for (int i = 0; i < 6; i++)
            expect_spki(keys[i]);
        for (int i = 5; i >= 0; i--)
            expect_spki(keys[i]);
        for (int i = 0; i < 6; i++)
            EVP_PKEY_free(keys[i]);
    }
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    cr_assert(ed);
    expect_spki(ed);
    EVP_PKEY_free(ed);
}

/* A key freed by its owner stays alive in the memo, so a new key can never
 * get its address and be answered with the old encoding. */
Test(crypto_spki, a_new_key_never_gets_an_old_encoding)
{
    for (int i = 0; i < 50; i++) {
        EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        cr_assert(k);
        expect_spki(k);
        EVP_PKEY_free(k);
    }
}
#else
Test(crypto_spki, not_built_without_encryption) {}
#endif
