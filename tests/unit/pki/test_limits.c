/* What a peer can make the PKI spend: chain building with crafted "CA"
 * certificates (huge RSA exponents, keys of the wrong size, many
 * candidates) is bounded before any signature is verified, and untrusted
 * certificates reach rejected/certs through a bounded, rate-limited writer
 * that never re-reads the whole folder. The elapsed times printed are for
 * the report; nothing asserts a time. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <ua/log.h>

#include "helper_pki.h"

static char *dir;
static uas_pki_store *store;

static void open_with(const uas_pki_options *o)
{
    if (store)
        uas_pki_store_close(store);
    cr_assert_eq(uas_pki_store_open(dir, o, &store), UAS_GOOD);
}

static void setup(void)
{
    uas_log_set_level(UAS_LOG_ERROR);
    dir = th_tmpdir();
    store = NULL;
    open_with(NULL);
}

static void teardown(void)
{
    uas_pki_store_close(store);
    store = NULL;
    th_rmrf(dir);
}

TestSuite(limits, .init = setup, .fini = teardown);

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* An RSA public key with the modulus of a fresh key of bits and a random
 * odd public exponent of e_bits (65537 when e_bits is 0): no private key
 * exists for it, which an attacker does not need. */
static EVP_PKEY *public_key(int bits, int e_bits)
{
    EVP_PKEY *real = EVP_RSA_gen((unsigned)bits);
    cr_assert_not_null(real);
    BIGNUM *n = NULL, *e = BN_new();
    cr_assert_eq(EVP_PKEY_get_bn_param(real, OSSL_PKEY_PARAM_RSA_N, &n), 1);
    if (e_bits) {
        cr_assert_eq(BN_rand(e, e_bits, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD), 1);
    } else {
        BN_set_word(e, 65537);
    }
    OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, n);
    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, e);
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(b);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *pk = NULL;
    cr_assert_eq(EVP_PKEY_fromdata_init(ctx), 1);
    cr_assert_eq(EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params), 1);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(b);
    BN_free(n);
    BN_free(e);
    EVP_PKEY_free(real);
    return pk;
}

/* A "CA" certificate named like real with real's subject key identifier
 * (so that it matches the leaf's authority key identifier), carrying pk,
 * signed by some other key. */
static X509 *fake_ca(const tcert *real, EVP_PKEY *pk, EVP_PKEY *signer)
{
    X509 *x = X509_dup(real->x);
    cr_assert_not_null(x);
    cr_assert_eq(X509_set_pubkey(x, pk), 1);
    ASN1_INTEGER_set(X509_get_serialNumber(x), rand());
    cr_assert(X509_sign(x, signer, EVP_sha256()) > 0);
    return x;
}

/* DER of leaf followed by the DER of extra[0..n-1] (malloc'd). */
static uint8_t *chain_der(X509 *leaf, X509 **extra, int n, size_t *len)
{
    size_t total = 0, l;
    uint8_t *d = th_der(leaf, &l);
    uint8_t *out = malloc(l);
    memcpy(out, d, l);
    total = l;
    free(d);
    for (int i = 0; i < n; i++) {
        d = th_der(extra[i], &l);
        out = realloc(out, total + l);
        memcpy(out + total, d, l);
        total += l;
        free(d);
    }
    *len = total;
    return out;
}

static uas_status validate(const uint8_t *der, size_t len, uas_pki_verdict *v)
{
    return uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 2048, 4096,
                            uas_datetime_now(), v);
}

enum { FAKES = 9 }; /* leaf + 9 = the default chain limit of 10 */

Test(limits, issuers_with_huge_exponents_are_refused_without_a_signature_check)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "Evil CA", .ca = true, .bits = 3072});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Evil leaf", .issuer = &ca, .bits = 3072});
    EVP_PKEY *signer = EVP_RSA_gen(2048);
    X509 *fakes[FAKES];
    for (int i = 0; i < FAKES; i++) {
        EVP_PKEY *pk = public_key(3072, 3072);
        fakes[i] = fake_ca(&ca, pk, signer);
        EVP_PKEY_free(pk);
    }
    size_t len;
    uint8_t *der = chain_der(leaf.x, fakes, FAKES, &len);
    uas_pki_verdict v;
    uas_status st = UAS_GOOD;
    double best = 1e9;
    for (int i = 0; i < 5; i++) { /* refusals are not cached: each one costs */
        double t0 = now_ms();
        st = validate(der, len, &v);
        double dt = now_ms() - t0;
        best = dt < best ? dt : best;
    }
    fprintf(stderr,
            "[measure] chain of a 3072-bit leaf + %d huge-exponent CAs: best of 5 %.2f ms, "
            "%u checks\n",
            FAKES, best, v.signature_checks);
    cr_assert_eq(st, UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, "%s: %s", uas_status_name(st), v.reason);
    cr_assert_eq(v.signature_checks, 0, "%u signatures verified", v.signature_checks);
    cr_assert(strstr(v.reason, "exponent") != NULL, "%s", v.reason);
    free(der);
    for (int i = 0; i < FAKES; i++)
        X509_free(fakes[i]);
    EVP_PKEY_free(signer);
    th_free(&leaf);
    th_free(&ca);
}

Test(limits, leaf_with_a_huge_exponent_isPolicyCheckFailed_before_any_check)
{
    tcert real = th_cert(&(tcert_opts){.cn = "Huge e"});
    EVP_PKEY *pk = public_key(3072, 3072);
    /* Self-issued with the huge key: checking its self-signature would
     * cost a full exponentiation with a 3072-bit exponent. */
    X509 *x = X509_dup(real.x);
    X509_set_pubkey(x, pk);
    cr_assert(X509_sign(x, real.key, EVP_sha256()) > 0);
    th_write_der(th_path(store, "trusted/certs"), "huge.der", x);
    size_t len;
    uint8_t *der = th_der(x, &len);
    uas_pki_verdict v;
    cr_assert_eq(validate(der, len, &v), UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, "%s: %s",
                 uas_status_name(v.status), v.reason);
    cr_assert_eq(v.signature_checks, 0);
    cr_assert(strstr(v.reason, "exponent") != NULL, "%s", v.reason);
    /* Without size bounds (uapki validate) the exponent is refused all the same. */
    cr_assert_eq(
        uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, uas_datetime_now(), &v),
        UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    free(der);
    X509_free(x);
    EVP_PKEY_free(pk);
    th_free(&real);
}

Test(limits, candidates_of_the_wrong_modulus_length_are_not_verified)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "Site CA", .ca = true});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Device", .issuer = &ca});
    EVP_PKEY *signer = EVP_RSA_gen(2048);
    X509 *fakes[3];
    for (int i = 0; i < 3; i++) {
        EVP_PKEY *pk = public_key(3072, 0); /* the leaf's signature has 256 bytes */
        fakes[i] = fake_ca(&ca, pk, signer);
        EVP_PKEY_free(pk);
    }
    size_t len;
    uint8_t *der = chain_der(leaf.x, fakes, 3, &len);
    uas_pki_verdict v;
    cr_assert_eq(validate(der, len, &v), UAS_BAD_CERTIFICATE_INVALID, "%s",
                 uas_status_name(v.status));
    cr_assert_eq(v.signature_checks, 0);
    free(der);
    for (int i = 0; i < 3; i++)
        X509_free(fakes[i]);
    EVP_PKEY_free(signer);
    th_free(&leaf);
    th_free(&ca);
}

Test(limits, signature_checks_per_validation_are_capped)
{
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.max_signature_checks = 4;
    open_with(&o);
    tcert ca = th_cert(&(tcert_opts){.cn = "Site CA", .ca = true});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Device", .issuer = &ca});
    EVP_PKEY *signer = EVP_RSA_gen(2048);
    X509 *fakes[FAKES];
    for (int i = 0; i < FAKES; i++) {
        EVP_PKEY *pk = public_key(2048, 0); /* plausible, but not the signer */
        fakes[i] = fake_ca(&ca, pk, signer);
        EVP_PKEY_free(pk);
    }
    size_t len;
    uint8_t *der = chain_der(leaf.x, fakes, FAKES, &len);
    uas_pki_verdict v;
    cr_assert_eq(validate(der, len, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, "%s: %s",
                 uas_status_name(v.status), v.reason);
    cr_assert_eq(v.signature_checks, 4);
    cr_assert(strstr(v.reason, "signature checks") != NULL, "%s", v.reason);
    /* The real CA in trusted/certs is tried first: one check finds it,
     * the sent candidates cost nothing. */
    th_write_der(th_path(store, "trusted/certs"), "ca.der", ca.x);
    X509_CRL *crl = th_crl(&ca, NULL, 0, 0, 0);
    th_write_crl(th_path(store, "trusted/crl"), "ca.crl", crl);
    cr_assert_eq(validate(der, len, &v), UAS_GOOD, "%s: %s", uas_status_name(v.status), v.reason);
    cr_assert_leq(v.signature_checks, 2, "%u", v.signature_checks);
    X509_CRL_free(crl);
    free(der);
    for (int i = 0; i < FAKES; i++)
        X509_free(fakes[i]);
    EVP_PKEY_free(signer);
    th_free(&leaf);
    th_free(&ca);
}

Test(limits, ca_keys_over_max_ca_key_bits_are_skipped)
{
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.max_ca_key_bits = 2048;
    o.revocation = UAS_PKI_REVOCATION_LENIENT;
    open_with(&o);
    tcert ca = th_cert(&(tcert_opts){.cn = "Big CA", .ca = true, .bits = 3072});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Device", .issuer = &ca});
    th_write_der(th_path(store, "trusted/certs"), "ca.der", ca.x);
    uas_pki_verdict v;
    cr_assert_eq(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE,
                 "%s: %s", uas_status_name(v.status), v.reason);
    cr_assert(strstr(v.reason, "3072 bits") != NULL, "%s", v.reason);
    o.max_ca_key_bits = 0; /* default 4096 */
    open_with(&o);
    cr_assert_eq(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, "%s", v.reason);
    th_free(&leaf);
    th_free(&ca);
}

/* ---- rejected/certs ---- */

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A self-signed certificate padded to about size bytes with a comment
 * extension (the planted files of the audit were 60 KB). */
static tcert padded_cert(const char *cn, EVP_PKEY *key, size_t size)
{
    tcert c = th_cert(&(tcert_opts){.cn = cn, .key = key});
    if (size > 2000) {
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        char *pad = malloc(size - 1500);
        memset(pad, 'x', size - 1500);
        ASN1_STRING_set(s, pad, (int)(size - 1500));
        cr_assert_eq(X509_add1_ext_i2d(c.x, NID_netscape_comment, s, 0, 0), 1);
        ASN1_IA5STRING_free(s);
        free(pad);
        cr_assert(X509_sign(c.x, c.key, EVP_sha256()) > 0);
    }
    return c;
}

Test(limits, untrusted_certificates_are_recorded_once_rate_limited_without_rescans)
{
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.max_rejected = 200;
    o.rejected_max_cert_size = 128 * 1024; /* let the planted files count */
    EVP_PKEY *key = EVP_RSA_gen(2048);
    char rejdir[4096];
    snprintf(rejdir, sizeof(rejdir), "%s", th_path(store, "rejected/certs"));
    for (int i = 0; i < 100; i++) {
        char cn[32], name[64];
        snprintf(cn, sizeof(cn), "Planted %d", i);
        snprintf(name, sizeof(name), "planted%d.der", i);
        tcert c = padded_cert(cn, key, 60000);
        th_write_der(rejdir, name, c.x);
        th_free(&c);
    }
    enum { PEERS = 30 };
    uint8_t *ders[PEERS];
    size_t lens[PEERS];
    for (int i = 0; i < PEERS; i++) {
        char cn[32];
        snprintf(cn, sizeof(cn), "Stranger %d", i);
        tcert c = th_cert(&(tcert_opts){.cn = cn, .key = key});
        ders[i] = th_der(c.x, &lens[i]);
        th_free(&c);
    }
    open_with(&o); /* now: the write budget starts full */
    uas_pki_verdict v;
    double worst = 0, total = 0, times[2 * PEERS];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < PEERS; i++) {
            double t0 = now_ms();
            cr_assert_eq(validate(ders[i], lens[i], &v), UAS_BAD_CERTIFICATE_UNTRUSTED);
            double dt = now_ms() - t0;
            total += dt;
            worst = dt > worst ? dt : worst;
            times[round * PEERS + i] = dt;
        }
    }
    qsort(times, 2 * PEERS, sizeof(double), dbl_cmp);
    fprintf(stderr,
            "[measure] untrusted validation with 100 planted 60 KB files: median %.2f ms, "
            "mean %.2f ms, worst %.2f ms\n",
            times[PEERS], total / (2 * PEERS), worst);
    uas_pki_reject_flush(store);
    uas_pki_reject_stats st;
    uas_pki_reject_stats_get(store, &st);
    cr_assert_eq(st.written, 10, "the default 10 per minute: %llu", (unsigned long long)st.written);
    cr_assert_geq(st.rate_limited, PEERS - 10);
    cr_assert_geq(st.known, 10, "the second round finds the recorded ones");
    cr_assert_leq(st.folder_scans, 3, "the folder is not read per certificate: %llu scans",
                  (unsigned long long)st.folder_scans);
    cr_assert_eq(th_count_files(rejdir), 110);
    for (int i = 0; i < PEERS; i++)
        free(ders[i]);
    EVP_PKEY_free(key);
}

Test(limits, oversized_certificates_are_not_recorded)
{
    EVP_PKEY *key = EVP_RSA_gen(2048);
    tcert big = padded_cert("Big stranger", key, 30000); /* default cap 16 KiB */
    tcert small = padded_cert("Small stranger", key, 0);
    uas_pki_verdict v;
    cr_assert_eq(th_validate(store, big.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED);
    cr_assert_eq(th_validate(store, small.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED);
    uas_pki_reject_flush(store);
    uas_pki_reject_stats st;
    uas_pki_reject_stats_get(store, &st);
    cr_assert_eq(st.too_large, 1);
    cr_assert_eq(st.written, 1);
    cr_assert_eq(th_count_files(th_path(store, "rejected/certs")), 1);
    size_t len;
    uint8_t *der = th_der(big.x, &len);
    cr_assert_eq(uas_pki_reject(store, der, len), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    free(der);
    th_free(&big);
    th_free(&small);
    EVP_PKEY_free(key);
}
