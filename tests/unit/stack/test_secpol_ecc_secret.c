/* The EccEncryptedSecret (secpol_ecc_secret.h): its layout field by
 * field, a round trip for every ECC policy, and the refusals: any bit of
 * the headers, payload or tag changed, another receiver key, an old
 * nonce, a sender key off the curve or of low order, a Length or policy
 * URI that does not match. */
#include <criterion/criterion.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <ua/mem.h>

#include "secpol_ecc.h"
#include "secpol_ecc_secret.h"

static const uas_secpol *const policies[] = {
    &uas_secpol_ecc_nistp256_aesgcm,
    &uas_secpol_ecc_nistp256_chachapoly,
    &uas_secpol_ecc_nistp384_aesgcm,
    &uas_secpol_ecc_nistp384_chachapoly,
    &uas_secpol_ecc_brainpoolp256r1_aesgcm,
    &uas_secpol_ecc_brainpoolp256r1_chachapoly,
    &uas_secpol_ecc_brainpoolp384r1_aesgcm,
    &uas_secpol_ecc_brainpoolp384r1_chachapoly,
    &uas_secpol_ecc_curve25519,
    &uas_secpol_ecc_curve448,
};
enum { NPOL = sizeof(policies) / sizeof(policies[0]) };

static const uint8_t nonce[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const char secret[] = "correct horse battery staple";
static const uint8_t cert[] = {0x30, 0x03, 0x02, 0x01, 0x05}; /* any bytes: not interpreted */

typedef struct sealed {
    uint8_t *b;
    size_t len, signed_len;
} sealed;

static void seal(const uas_secpol *pol, const uas_ecc_rkey *k, sealed *s)
{
    size_t pl = 0;
    const uint8_t *pub = uas_ecc_rkey_pub(k, &pl);
    cr_assert_eq(uas_ecc_secret_seal(pol, cert, sizeof(cert), pub, pl, nonce, sizeof(nonce),
                                     (const uint8_t *)secret, strlen(secret), 0x01d9000011112222LL,
                                     &s->b, &s->len, &s->signed_len),
                 UAS_GOOD, "%s", pol->uri);
}

static void unseal(sealed *s)
{
    uas_free(s->b, s->len);
}

/* Parse + open; the status, and the reason in *why. */
static uas_status open_it(const uas_secpol *pol, const uas_ecc_rkey *k, const uint8_t *b,
                          size_t len, const uint8_t *n, const char **why)
{
    uas_ecc_secret_view v;
    *why = "";
    uas_status st = uas_ecc_secret_parse(pol, b, len, &v, why);
    if (st != UAS_GOOD)
        return st;
    uint8_t out[64];
    size_t out_len = 0;
    st = uas_ecc_secret_open(k, b, &v, n, sizeof(nonce), out, sizeof(out), &out_len, why);
    if (st == UAS_GOOD) {
        cr_assert_eq(out_len, strlen(secret));
        cr_assert_arr_eq(out, secret, out_len);
    }
    return st;
}

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

Test(ecc_secret, layout_field_by_field)
{
    const uas_secpol *pol = &uas_secpol_ecc_nistp256_aesgcm;
    uas_ecc_rkey *k = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    const uint8_t *p = s.b;
    /* TypeId i=17546 (four-byte NodeId), EncodingMask 1, Length. */
    static const uint8_t head[] = {0x01, 0x00, 0x8a, 0x44, 0x01};
    cr_assert_arr_eq(p, head, sizeof(head));
    cr_assert_eq(u32(p + 5), s.len - 9);
    p += 9;
    size_t ul = strlen(pol->uri);
    cr_assert_eq(u32(p), ul);
    cr_assert_arr_eq(p + 4, pol->uri, ul);
    p += 4 + ul;
    cr_assert_eq(u32(p), sizeof(cert));
    cr_assert_arr_eq(p + 4, cert, sizeof(cert));
    p += 4 + sizeof(cert);
    cr_assert_eq(u32(p), 0x11112222u); /* SigningTime, little endian */
    cr_assert_eq(u32(p + 4), 0x01d90000u);
    p += 8;
    cr_assert_eq(p[0] | p[1] << 8, 4 + 64 + 4 + 64); /* KeyDataLength */
    p += 2;
    cr_assert_eq(u32(p), 64); /* SenderPublicKey */
    p += 4 + 64;
    size_t pl = 0;
    const uint8_t *pub = uas_ecc_rkey_pub(k, &pl);
    cr_assert_eq(u32(p), 64); /* ReceiverPublicKey: ours */
    cr_assert_arr_eq(p + 4, pub, 64);
    p += 4 + 64;
    /* Payload: 4+32 + 4+28 + 2 = 70 -> 10 bytes of padding to 80, then
     * the 16-byte tag and the 64-byte ECDSA signature. */
    size_t payload = s.len - (size_t)(p - s.b) - 16 - 64;
    cr_assert_eq(payload, 80);
    cr_assert_eq(s.signed_len, s.len - 64);
    cr_assert_eq(open_it(pol, k, s.b, s.len, nonce, &(const char *){""}), UAS_GOOD);
    unseal(&s);
    uas_ecc_rkey_free(k);
}

Test(ecc_secret, every_policy_round_trips)
{
    for (size_t i = 0; i < NPOL; i++) {
        uas_ecc_rkey *k = NULL;
        cr_assert_eq(uas_ecc_rkey_new(policies[i], &k), UAS_GOOD);
        sealed s;
        seal(policies[i], k, &s);
        const char *why;
        cr_expect_eq(open_it(policies[i], k, s.b, s.len, nonce, &why), UAS_GOOD, "%s: %s",
                     policies[i]->uri, why);
        unseal(&s);
        uas_ecc_rkey_free(k);
    }
}

/* Every byte before the signature is covered: the headers as the AEAD's
 * additional data, the payload and tag by the AEAD (the signature is the
 * caller's check). */
Test(ecc_secret, any_changed_byte_is_refused)
{
    const uas_secpol *pol = &uas_secpol_ecc_curve25519;
    uas_ecc_rkey *k = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    for (size_t i = 0; i < s.signed_len; i++) {
        s.b[i] ^= 0x20;
        const char *why;
        uas_status st = open_it(pol, k, s.b, s.len, nonce, &why);
        cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_INVALID, "byte %zu accepted (%s)", i,
                     uas_status_name(st));
        s.b[i] ^= 0x20;
    }
    unseal(&s);
    uas_ecc_rkey_free(k);
}

Test(ecc_secret, another_receiver_key_is_refused)
{
    const uas_secpol *pol = &uas_secpol_ecc_nistp384_aesgcm;
    uas_ecc_rkey *k = NULL, *other = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    cr_assert_eq(uas_ecc_rkey_new(pol, &other), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    const char *why;
    cr_expect_eq(open_it(pol, other, s.b, s.len, nonce, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "ReceiverPublicKey is not the key we handed out");
    unseal(&s);
    uas_ecc_rkey_free(k);
    uas_ecc_rkey_free(other);
}

Test(ecc_secret, an_old_nonce_is_refused)
{
    const uas_secpol *pol = &uas_secpol_ecc_brainpoolp256r1_chachapoly;
    uas_ecc_rkey *k = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    uint8_t newer[sizeof(nonce)];
    memcpy(newer, nonce, sizeof(nonce));
    newer[31] ^= 1;
    const char *why;
    cr_expect_eq(open_it(pol, k, s.b, s.len, newer, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "bad nonce");
    unseal(&s);
    uas_ecc_rkey_free(k);
}

/* The offset of SenderPublicKey's bytes in a sealed secret. */
static size_t sender_at(const uas_secpol *pol)
{
    return 9 + 4 + strlen(pol->uri) + 4 + sizeof(cert) + 8 + 2 + 4;
}

Test(ecc_secret, sender_key_off_the_curve_or_of_low_order_is_refused)
{
    const uas_secpol *pol = &uas_secpol_ecc_nistp256_aesgcm;
    uas_ecc_rkey *k = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    s.b[sender_at(pol) + 63] ^= 1; /* y off the curve */
    const char *why;
    cr_expect_eq(open_it(pol, k, s.b, s.len, nonce, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "SenderPublicKey is not on the curve or of low order");
    unseal(&s);
    uas_ecc_rkey_free(k);

    pol = &uas_secpol_ecc_curve25519;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    seal(pol, k, &s);
    memset(s.b + sender_at(pol), 0, 32); /* a low-order point */
    cr_expect_eq(open_it(pol, k, s.b, s.len, nonce, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "SenderPublicKey is not on the curve or of low order");
    unseal(&s);
    uas_ecc_rkey_free(k);
}

Test(ecc_secret, header_mismatches_are_refused_before_any_cryptography)
{
    const uas_secpol *pol = &uas_secpol_ecc_nistp256_chachapoly;
    uas_ecc_rkey *k = NULL;
    cr_assert_eq(uas_ecc_rkey_new(pol, &k), UAS_GOOD);
    sealed s;
    seal(pol, k, &s);
    uas_ecc_secret_view v;
    const char *why = "";
    /* Another policy than the token's. */
    cr_expect_eq(uas_ecc_secret_parse(&uas_secpol_ecc_nistp256_aesgcm, s.b, s.len, &v, &why),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "SecurityPolicyUri is not the token policy's");
    /* Truncated: the Length field no longer matches. */
    cr_expect_eq(uas_ecc_secret_parse(pol, s.b, s.len - 1, &v, &why),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_str_eq(why, "Length field does not match the token");
    /* Nothing at all, or a few bytes. */
    cr_expect_eq(uas_ecc_secret_parse(pol, NULL, 0, &v, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect_eq(uas_ecc_secret_parse(pol, s.b, 7, &v, &why), UAS_BAD_IDENTITY_TOKEN_INVALID);
    /* Not an ECC policy. */
    cr_expect_eq(uas_ecc_secret_parse(&uas_secpol_basic256sha256, s.b, s.len, &v, &why),
                 UAS_BAD_IDENTITY_TOKEN_INVALID);
    unseal(&s);
    uas_ecc_rkey_free(k);
}

#else
Test(ecc_secret, not_built_without_encryption) {}
#endif
