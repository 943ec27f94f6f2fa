/* Known-answer tests of the ECC policies' primitives against published
 * vectors (kept here as data): HKDF (RFC 5869), X25519 and X448 (RFC
 * 7748), Ed25519 (RFC 8032), ChaCha20-Poly1305 (RFC 8439), AES-GCM (the
 * GCM specification's test case 2), and the refusals: a low-order X25519
 * point, a P-256 point off the curve, a tampered tag. */
#include <criterion/criterion.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/evp.h>

#include "secpol_ecc.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = strlen(h) / 2;
    cr_assert_leq(n, cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        cr_assert_eq(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

#define HEX(var, str)                                                                              \
    uint8_t var[256];                                                                              \
    size_t var##_len = unhex(str, var, sizeof(var));                                               \
    (void)var##_len

Test(ecc_vectors, hkdf_sha256_rfc5869_case1)
{
    HEX(ikm, "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
    HEX(salt, "000102030405060708090a0b0c");
    HEX(info, "f0f1f2f3f4f5f6f7f8f9");
    HEX(okm,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
    uint8_t out[42];
    cr_assert_eq(
        uas__ecc_hkdf("SHA256", ikm, ikm_len, salt, salt_len, info, info_len, out, sizeof(out)),
        UAS_GOOD);
    cr_assert_eq(okm_len, sizeof(out));
    cr_assert_arr_eq(out, okm, sizeof(out));
}

Test(ecc_vectors, hkdf_sha256_rfc5869_case3_empty_salt_and_info)
{
    HEX(ikm, "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
    HEX(okm,
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
    uint8_t out[42];
    cr_assert_eq(uas__ecc_hkdf("SHA256", ikm, ikm_len, NULL, 0, NULL, 0, out, sizeof(out)),
                 UAS_GOOD);
    cr_assert_arr_eq(out, okm, okm_len);
}

Test(ecc_vectors, x25519_rfc7748_6_1)
{
    HEX(a_priv, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    HEX(b_pub, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    HEX(shared, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    uas_ecc_eph e;
    memset(&e, 0, sizeof(e));
    memcpy(e.sk, a_priv, a_priv_len);
    e.have = true;
    uint8_t out[UAS_ECC_SECRET_MAX];
    size_t n = 0;
    cr_assert_eq(uas__ecc_shared(UAS_ECC_CURVE25519, &e, b_pub, b_pub_len, out, &n), UAS_GOOD);
    cr_assert_eq(n, 32);
    cr_assert_arr_eq(out, shared, 32);
}

Test(ecc_vectors, x25519_low_order_points_are_refused)
{
    uas_ecc_eph e;
    memset(&e, 0, sizeof(e));
    uint8_t pub[32];
    cr_assert_eq(uas__ecc_eph_new(UAS_ECC_CURVE25519, &e, pub, sizeof(pub)), UAS_GOOD);
    /* 0 and 1 are points of small order: the shared secret would be all
     * zeros whatever our key. */
    uint8_t bad[2][32] = {{0}, {1}};
    for (int i = 0; i < 2; i++) {
        uint8_t out[UAS_ECC_SECRET_MAX];
        size_t n = 0;
        cr_assert_eq(uas__ecc_shared(UAS_ECC_CURVE25519, &e, bad[i], 32, out, &n),
                     UAS_BAD_NONCE_INVALID);
    }
    uas__ecc_eph_clear(&e);
}

Test(ecc_vectors, x448_rfc7748_6_2)
{
    HEX(a_priv,
        "9a8f4925d1519f5775cf46b04b5800d4ee9ee8bae8bc5565d498c28dd9c9baf574a9419744897391006"
        "382a6f127ab1d9ac2d8c0a598726b");
    HEX(b_pub,
        "3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972fc3e34fb4232a13ca706d"
        "cb57aec3dae07bdc1c67bf33609");
    HEX(shared,
        "07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56fd2464c335543936521"
        "c24403085d59a449a5037514a879d");
    uas_ecc_eph e;
    memset(&e, 0, sizeof(e));
    e.pkey = EVP_PKEY_new_raw_private_key_ex(NULL, "X448", NULL, a_priv, a_priv_len);
    cr_assert_not_null(e.pkey);
    e.have = true;
    uint8_t out[UAS_ECC_SECRET_MAX];
    size_t n = 0;
    cr_assert_eq(uas__ecc_shared(UAS_ECC_CURVE448, &e, b_pub, b_pub_len, out, &n), UAS_GOOD);
    cr_assert_eq(n, 56);
    cr_assert_arr_eq(out, shared, 56);
    uas__ecc_eph_clear(&e);
}

Test(ecc_vectors, x448_low_order_point_is_refused)
{
    uas_ecc_eph e;
    memset(&e, 0, sizeof(e));
    uint8_t pub[56];
    cr_assert_eq(uas__ecc_eph_new(UAS_ECC_CURVE448, &e, pub, sizeof(pub)), UAS_GOOD);
    uint8_t zero[56] = {0};
    uint8_t out[UAS_ECC_SECRET_MAX];
    size_t n = 0;
    cr_assert_eq(uas__ecc_shared(UAS_ECC_CURVE448, &e, zero, 56, out, &n), UAS_BAD_NONCE_INVALID);
    uas__ecc_eph_clear(&e);
}

Test(ecc_vectors, p256_both_sides_agree_and_a_point_off_the_curve_is_refused)
{
    uas_ecc_eph a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    uint8_t pa[64], pb[64];
    cr_assert_eq(uas__ecc_eph_new(UAS_ECC_NISTP256, &a, pa, sizeof(pa)), UAS_GOOD);
    cr_assert_eq(uas__ecc_eph_new(UAS_ECC_NISTP256, &b, pb, sizeof(pb)), UAS_GOOD);
    uint8_t sa[UAS_ECC_SECRET_MAX], sb[UAS_ECC_SECRET_MAX];
    size_t na = 0, nb = 0;
    cr_assert_eq(uas__ecc_shared(UAS_ECC_NISTP256, &a, pb, 64, sa, &na), UAS_GOOD);
    cr_assert_eq(uas__ecc_shared(UAS_ECC_NISTP256, &b, pa, 64, sb, &nb), UAS_GOOD);
    cr_assert_eq(na, 32);
    cr_assert_arr_eq(sa, sb, 32);
    pb[63] ^= 1; /* y no longer belongs to x */
    cr_assert_eq(uas__ecc_shared(UAS_ECC_NISTP256, &a, pb, 64, sa, &na), UAS_BAD_NONCE_INVALID);
    uas__ecc_eph_clear(&a);
    uas__ecc_eph_clear(&b);
}

static const struct uas_ecc_suite ed25519_suite = {
    .curve = UAS_ECC_CURVE25519, .md = "SHA256", .md_len = 32, .sig_len = 64};

Test(ecc_vectors, ed25519_rfc8032_test1)
{
    HEX(seed, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
    HEX(pub, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    HEX(sig, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3"
             "9701cf9b46bd25bf5f0595bbe24655141438e7a100b");
    uint8_t sk[64];
    memcpy(sk, seed, 32);
    memcpy(sk + 32, pub, 32);
    uint8_t out[64];
    cr_assert_eq(uas__ecc_sign(&ed25519_suite, NULL, sk, (const uint8_t *)"", 0, NULL, 0, out),
                 UAS_GOOD);
    cr_assert_arr_eq(out, sig, 64);
    EVP_PKEY *pk = EVP_PKEY_new_raw_public_key_ex(NULL, "ED25519", NULL, pub, pub_len);
    cr_assert_not_null(pk);
    cr_assert_eq(uas__ecc_verify(&ed25519_suite, pk, (const uint8_t *)"", 0, NULL, 0, sig, 64),
                 UAS_GOOD);
    sig[0] ^= 1;
    cr_assert_eq(uas__ecc_verify(&ed25519_suite, pk, (const uint8_t *)"", 0, NULL, 0, sig, 64),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    EVP_PKEY_free(pk);
}

Test(ecc_vectors, chacha20_poly1305_rfc8439_2_8_2)
{
    HEX(key, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
    HEX(iv, "070000004041424344454647");
    HEX(aad, "50515253c0c1c2c3c4c5c6c7");
    const char *pt = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
                     "for the future, sunscreen would be it.";
    HEX(ct, "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb"
            "69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad6"
            "75945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116");
    HEX(tag, "1ae10b594f09e26a7e902ecbd0600691");
    uas_aead_key k;
    memset(&k, 0, sizeof(k));
    cr_assert_eq(uas__aead_key_set(&k, UAS_AEAD_CHACHA20_POLY1305, true, key, iv), UAS_GOOD);
    uint8_t buf[256], t[16];
    size_t n = strlen(pt);
    cr_assert_eq(n, ct_len);
    memcpy(buf, pt, n);
    /* Token 0 and sequence 0 leave the IV as it is. */
    cr_assert_eq(uas__aead_seal(&k, UAS_AEAD_CHACHA20_POLY1305, 0, 0, aad, aad_len, buf, n, t),
                 UAS_GOOD);
    cr_assert_arr_eq(buf, ct, n);
    cr_assert_arr_eq(t, tag, 16);
    cr_assert_eq(uas__aead_open(&k, UAS_AEAD_CHACHA20_POLY1305, 0, 0, aad, aad_len, buf, n, t),
                 UAS_GOOD);
    cr_assert_arr_eq(buf, pt, n);
    memcpy(buf, ct, n);
    t[15] ^= 0x80;
    cr_assert_eq(uas__aead_open(&k, UAS_AEAD_CHACHA20_POLY1305, 0, 0, aad, aad_len, buf, n, t),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    uas__aead_key_clear(&k);
}

Test(ecc_vectors, aes128_gcm_test_case_2_and_tampered_tag)
{
    uint8_t key[16] = {0}, iv[12] = {0}, buf[16] = {0}, t[16];
    HEX(ct, "0388dace60b6a392f328c2b971b2fe78");
    HEX(tag, "ab6e47d42cec13bdf53a67b21257bddf");
    uas_aead_key enc, dec;
    memset(&enc, 0, sizeof(enc));
    memset(&dec, 0, sizeof(dec));
    cr_assert_eq(uas__aead_key_set(&enc, UAS_AEAD_AES128_GCM, true, key, iv), UAS_GOOD);
    cr_assert_eq(uas__aead_key_set(&dec, UAS_AEAD_AES128_GCM, false, key, iv), UAS_GOOD);
    cr_assert_eq(uas__aead_seal(&enc, UAS_AEAD_AES128_GCM, 0, 0, NULL, 0, buf, 16, t), UAS_GOOD);
    cr_assert_arr_eq(buf, ct, ct_len);
    cr_assert_arr_eq(t, tag, tag_len);
    /* The keyed context serves the next record with only a new IV. */
    cr_assert_eq(uas__aead_open(&dec, UAS_AEAD_AES128_GCM, 0, 0, NULL, 0, buf, 16, t), UAS_GOOD);
    uint8_t zero[16] = {0};
    cr_assert_arr_eq(buf, zero, 16);
    memcpy(buf, ct, 16);
    t[0] ^= 1;
    cr_assert_eq(uas__aead_open(&dec, UAS_AEAD_AES128_GCM, 0, 0, NULL, 0, buf, 16, t),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    uas__aead_key_clear(&enc);
    uas__aead_key_clear(&dec);
}

Test(ecc_vectors, aead_nonce_mixes_token_and_sequence_little_endian)
{
    uint8_t iv[12] = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0};
    uint8_t out[12];
    uas__aead_nonce(iv, 0x04030201u, 0x08070605u, out);
    uint8_t want[12] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x90, 0xa0, 0xb0, 0xc0};
    cr_assert_arr_eq(out, want, 12);
}

#else
Test(ecc_vectors, skipped_without_encryption)
{
    cr_skip_test("built without encryption");
}
#endif
