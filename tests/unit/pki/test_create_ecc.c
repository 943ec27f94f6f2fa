/* uas_pki_create_own with the ECC certificate types (uapki create
 * --key-type): each type makes a key of its curve with a self-signature of
 * the right kind, keyUsage without keyEncipherment, that loads back, passes
 * validation once trusted, and makes credentials for its ECC policy only. */
#include <criterion/criterion.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ua/pki.h>
#include <ua/security.h>

#include "helper_pki.h"

#ifdef UAS_ENABLE_ENCRYPTION
static char *dir;
static uas_pki_store *store;

static void setup(void)
{
    dir = th_tmpdir();
    cr_assert_eq(uas_pki_store_open(dir, NULL, &store), UAS_GOOD);
}

static void teardown(void)
{
    uas_pki_store_close(store);
    th_rmrf(dir);
}

static const struct {
    const char *type, *policy, *pkey, *md;
} types[] = {
    {"nistP256", "ECC_nistP256_AesGcm", "EC", "SHA256"},
    {"nistP384", "ECC_nistP384_AesGcm", "EC", "SHA384"},
    {"brainpoolP256r1", "ECC_brainpoolP256r1_AesGcm", "EC", "SHA256"},
    {"brainpoolP384r1", "ECC_brainpoolP384r1_ChaChaPoly", "EC", "SHA384"},
    {"curve25519", "ECC_curve25519", "ED25519", NULL},
    {"curve448", "ECC_curve448", "ED448", NULL},
};

Test(create_ecc, every_key_type_makes_a_usable_certificate, .init = setup, .fini = teardown)
{
    static const char *const dns[] = {"localhost"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        uas_pki_create_params p;
        memset(&p, 0, sizeof(p));
        p.application_uri = "urn:uastack:test";
        p.application_name = types[i].type;
        p.file_name = types[i].type;
        p.key_type = types[i].type;
        p.dns_names = dns;
        p.dns_count = 1;
        cr_assert(uas_pki_key_type_valid(types[i].type));
        cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD, "%s",
                     types[i].type);
        uas_bytestring cert, key;
        cr_assert_eq(uas_pki_load_own(store, types[i].type, &cert, &key), UAS_GOOD);
        const uint8_t *d = cert.data;
        X509 *x = d2i_X509(NULL, &d, (long)cert.length);
        cr_assert_not_null(x);
        EVP_PKEY *pk = X509_get0_pubkey(x);
        cr_assert(EVP_PKEY_is_a(pk, types[i].pkey), "%s", types[i].type);
        int md = NID_undef, pknid = NID_undef;
        cr_assert_eq(X509_get_signature_info(x, &md, &pknid, NULL, NULL), 1);
        if (types[i].md)
            cr_assert_str_eq(OBJ_nid2sn(md), types[i].md, "%s", types[i].type);
        uint32_t ku = X509_get_key_usage(x);
        cr_assert(ku & KU_DIGITAL_SIGNATURE);
        cr_assert_not(ku & KU_KEY_ENCIPHERMENT, "%s: an ECC key does not encipher", types[i].type);
        /* Trusted, it validates as a client certificate. */
        cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, cert.data, cert.length), UAS_GOOD);
        uas_pki_verdict v;
        cr_assert_eq(uas_pki_validate(store, cert.data, cert.length, "urn:uastack:test",
                                      UAS_PKI_USAGE_CLIENT, 0, 0, uas_datetime_now(), &v),
                     UAS_GOOD, "%s: %s", types[i].type, v.reason);
        /* Credentials for its own policy, not for an RSA one. */
        char uri[128];
        snprintf(uri, sizeof(uri), "http://opcfoundation.org/UA/SecurityPolicy#%s",
                 types[i].policy);
        const uas_secpol *pol = uas_security_policy(uri, false);
        cr_assert_not_null(pol);
        cr_assert_str_eq(uas_secpol_cert_type(pol), types[i].type);
        uas_secpol_cred *c = NULL;
        cr_assert_eq(uas_secpol_cred_new(cert.data, cert.length, key.data, key.length, &c),
                     UAS_GOOD, "%s", types[i].type);
        uas_secpol_cred_unref(c);
        X509_free(x);
        uas_pki_bytes_free(&cert);
        uas_pki_bytes_free(&key);
    }
    cr_assert_not(uas_pki_key_type_valid("secp256k1"));
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = "urn:uastack:test";
    p.key_type = "secp256k1";
    p.file_name = "bad";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_BAD_INVALID_ARGUMENT);
}
#else
Test(create_ecc, skipped_without_encryption)
{
    cr_skip("built without UA_ENABLE_ENCRYPTION");
}
#endif
