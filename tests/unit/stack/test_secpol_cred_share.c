/* Credentials are shared by certificate and key: a program that opens many
 * channels with one certificate (the load generator: one per session) gets
 * the credentials it made before instead of parsing the key again, and a
 * different key or certificate never gets someone else's. */
#include <criterion/criterion.h>
#include <string.h>

#include "helper_keys.h"
#include "secpol.h"

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

static uas_secpol_cred *cred(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                             size_t key_len)
{
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(cert, cert_len, key, key_len, &c), UAS_GOOD);
    return c;
}

Test(secpol_cred_share, same_certificate_and_key_share_one_credential)
{
    const test_key *a = test_key_get(TK_RSA2048_A);
    uas_secpol_cred *c1 = cred(a->cert, a->cert_len, a->key_der, a->key_len);
    uas_secpol_cred *c2 = cred(a->cert, a->cert_len, a->key_der, a->key_len);
    cr_expect_eq(c1, c2, "the second request parsed the key again");
    /* Each holder has its own reference: one release leaves it usable. */
    uas_secpol_cred_unref(c1);
    size_t len = 0;
    const uint8_t *der = uas_secpol_cred_cert(c2, &len);
    cr_expect(len == a->cert_len && memcmp(der, a->cert, len) == 0);
    uas_secpol_cred_unref(c2);
}

Test(secpol_cred_share, another_key_or_certificate_gets_its_own)
{
    const test_key *a = test_key_get(TK_RSA2048_A);
    const test_key *b = test_key_get(TK_RSA2048_B);
    const test_key *e = test_key_get(TK_EC256);
    uas_secpol_cred *ca = cred(a->cert, a->cert_len, a->key_der, a->key_len);
    uas_secpol_cred *cb = cred(b->cert, b->cert_len, b->key_der, b->key_len);
    uas_secpol_cred *ce = cred(e->cert, e->cert_len, e->key_der, e->key_len);
    cr_expect_neq(ca, cb);
    cr_expect_neq(ca, ce);
    size_t len = 0;
    const uint8_t *der = uas_secpol_cred_cert(cb, &len);
    cr_expect(len == b->cert_len && memcmp(der, b->cert, len) == 0);
    /* A's certificate with B's key is refused, cached or not. */
    uas_secpol_cred *mixed = NULL;
    cr_expect_neq(uas_secpol_cred_new(a->cert, a->cert_len, b->key_der, b->key_len, &mixed),
                  UAS_GOOD);
    cr_expect_null(mixed);
    /* The same key in another encoding (PEM) is a miss, never a wrong hit. */
    uas_secpol_cred *pem = cred(a->cert, a->cert_len, a->key_pem, a->key_pem_len);
    cr_expect_neq(pem, cb);
    der = uas_secpol_cred_cert(pem, &len);
    cr_expect(len == a->cert_len && memcmp(der, a->cert, len) == 0);
    uas_secpol_cred_unref(pem);
    uas_secpol_cred_unref(ca);
    uas_secpol_cred_unref(cb);
    uas_secpol_cred_unref(ce);
}

#else

Test(secpol_cred_share, skipped)
{
    cr_skip_test("no credentials without UA_ENABLE_ENCRYPTION");
}

#endif
