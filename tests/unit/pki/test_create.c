/* The application instance certificate: the Part 6 profile of what
 * uas_pki_create_own makes, the 0600 key file whatever the umask, loading
 * the pair back. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <ua/log.h>

#include "helper_pki.h"

static char *dir;
static uas_pki_store *store;

static void setup(void)
{
    uas_log_set_level(UAS_LOG_ERROR);
    dir = th_tmpdir();
    cr_assert_eq(uas_pki_store_open(dir, NULL, &store), UAS_GOOD);
}

static void teardown(void)
{
    uas_pki_store_close(store);
    th_rmrf(dir);
}

TestSuite(create, .init = setup, .fini = teardown);

static const char *const dns[] = {"plc1.example.com", "plc1"};
static const char *const ips[] = {"192.168.1.20", "::1"};

static uas_pki_create_params params(void)
{
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = "urn:plc1:acme:server";
    p.application_name = "ACME Server";
    p.organization = "ACME";
    p.dns_names = dns;
    p.dns_count = 2;
    p.ip_addresses = ips;
    p.ip_count = 2;
    p.validity_days = 365;
    return p;
}

static X509 *load_cert(const char *name)
{
    uas_bytestring cert, key;
    cr_assert_eq(uas_pki_load_own(store, name, &cert, &key), UAS_GOOD);
    const unsigned char *p = cert.data;
    X509 *x = d2i_X509(NULL, &p, (long)cert.length);
    cr_assert_not_null(x);
    p = key.data;
    EVP_PKEY *pk = d2i_AutoPrivateKey(NULL, &p, (long)key.length);
    cr_assert_not_null(pk, "the key is DER that d2i_AutoPrivateKey reads");
    cr_assert_eq(X509_check_private_key(x, pk), 1);
    EVP_PKEY_free(pk);
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    cr_assert_null(cert.data);
    return x;
}

Test(create, certificate_follows_the_part6_profile)
{
    uas_pki_create_params p = params();
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    X509 *x = load_cert("ACME_Server");

    /* subjectAltName: URI = ApplicationUri, DNS names, IP addresses */
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    cr_assert_not_null(gens);
    int uris = 0, dnss = 0, ipv4 = 0, ipv6 = 0;
    for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_URI) {
            cr_assert_str_eq((const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier),
                             "urn:plc1:acme:server");
            uris++;
        } else if (g->type == GEN_DNS) {
            dnss++;
        } else if (g->type == GEN_IPADD) {
            int n = ASN1_STRING_length(g->d.iPAddress);
            ipv4 += n == 4;
            ipv6 += n == 16;
        }
    }
    GENERAL_NAMES_free(gens);
    cr_assert_eq(uris, 1);
    cr_assert_eq(dnss, 2);
    cr_assert_eq(ipv4, 1);
    cr_assert_eq(ipv6, 1);

    uint32_t flags = X509_get_extension_flags(x);
    uint32_t ku = X509_get_key_usage(x);
    cr_assert(flags & EXFLAG_KUSAGE);
    cr_assert_eq(ku, KU_DIGITAL_SIGNATURE | KU_NON_REPUDIATION | KU_KEY_ENCIPHERMENT |
                         KU_DATA_ENCIPHERMENT | KU_KEY_CERT_SIGN);
    cr_assert(flags & EXFLAG_XKUSAGE);
    cr_assert_eq(X509_get_extended_key_usage(x) & (XKU_SSL_SERVER | XKU_SSL_CLIENT),
                 XKU_SSL_SERVER | XKU_SSL_CLIENT);
    cr_assert(flags & EXFLAG_BCONS);
    cr_assert_not(flags & EXFLAG_CA, "basicConstraints CA:FALSE");
    cr_assert_not_null(X509_get0_subject_key_id(x));
    cr_assert_not_null(X509_get0_authority_key_id(x));
    cr_assert_eq(X509_get_version(x), X509_VERSION_3);
    cr_assert_eq(X509_get_signature_nid(x), NID_sha256WithRSAEncryption);
    cr_assert_eq(EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_RSA);
    cr_assert_eq(EVP_PKEY_get_bits(X509_get0_pubkey(x)), 2048);
    cr_assert_eq(X509_self_signed(x, 1), 1);

    uas_pki_cert_info info;
    size_t len;
    uint8_t *der = th_der(x, &len);
    cr_assert_eq(uas_pki_cert_info_get(der, len, &info), UAS_GOOD);
    cr_assert_str_eq(info.common_name, "ACME Server");
    cr_assert(strstr(info.subject, "CN=ACME Server") != NULL, "%s", info.subject);
    cr_assert(strstr(info.subject, "O=ACME") != NULL, "%s", info.subject);
    cr_assert(strstr(info.subject, "DC=plc1.example.com") != NULL, "%s", info.subject);
    cr_assert_str_eq(info.application_uri, "urn:plc1:acme:server");
    cr_assert(info.self_signed);
    cr_assert_not(info.is_ca);
    int64_t days = (info.not_after - info.not_before) / 864000000000LL;
    cr_assert(days == 365, "validity %lld days", (long long)days);
    cr_assert_eq(strlen(info.serial), 40, "a 20-byte random serial: %s", info.serial);
    free(der);
    X509_free(x);
}

Test(create, key_file_is_0600_whatever_the_umask)
{
    mode_t old = umask(0);
    uas_pki_create_params p = params();
    p.file_name = "srv";
    uas_status st = uas_pki_create_own(store, &p, uas_datetime_now());
    umask(old);
    cr_assert_eq(st, UAS_GOOD);
    struct stat sb;
    cr_assert_eq(stat(th_path(store, "own/private/srv.pem"), &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
    cr_assert_eq(stat(th_path(store, "own/private"), &sb), 0);
    cr_assert_eq(sb.st_mode & 0077, 0, "own/private mode %o", sb.st_mode & 0777);
    cr_assert_eq(stat(th_path(store, "own/certs/srv.der"), &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0644);
    /* The same with overwrite (temporary file + rename). */
    old = umask(0);
    p.overwrite = true;
    st = uas_pki_create_own(store, &p, uas_datetime_now());
    umask(old);
    cr_assert_eq(st, UAS_GOOD);
    cr_assert_eq(stat(th_path(store, "own/private/srv.pem"), &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
    cr_assert_eq(th_count_files(th_path(store, "own/private")), 1, "no temporary file left");
}

Test(create, existing_pair_is_kept_unless_overwrite)
{
    uas_pki_create_params p = params();
    p.file_name = "srv";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    X509 *a = load_cert("srv");
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_BAD_ENTRY_EXISTS);
    X509 *b = load_cert("srv");
    cr_assert_eq(X509_cmp(a, b), 0);
    p.overwrite = true;
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    X509 *c = load_cert("srv");
    cr_assert_neq(X509_cmp(a, c), 0);
    X509_free(a);
    X509_free(b);
    X509_free(c);
}

Test(create, ensure_own_creates_once_then_loads)
{
    uas_pki_create_params p = params();
    uas_bytestring c1, k1, c2, k2;
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &c1, &k1), UAS_GOOD);
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &c2, &k2), UAS_GOOD);
    cr_assert_eq(c1.length, c2.length);
    cr_assert_eq(memcmp(c1.data, c2.data, c1.length), 0);
    cr_assert_eq(k1.length, k2.length);
    cr_assert_eq(memcmp(k1.data, k2.data, k1.length), 0);
    cr_assert_eq(th_count_files(th_path(store, "own/certs")), 1);
    uas_pki_bytes_free(&c1);
    uas_pki_bytes_free(&k1);
    uas_pki_bytes_free(&c2);
    uas_pki_bytes_free(&k2);
}

/* `uapki create --name plant` before the first start: the server uses that
 * certificate instead of making a second one under its application name. */
Test(create, ensure_own_uses_the_only_own_certificate_under_another_name)
{
    uas_pki_create_params p = params();
    p.file_name = "plant";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    uas_bytestring c1, k1, c2, k2;
    cr_assert_eq(uas_pki_load_own(store, "plant", &c1, &k1), UAS_GOOD);
    p = params(); /* its application name names another file */
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &c2, &k2), UAS_GOOD);
    cr_expect_eq(c1.length, c2.length);
    cr_expect_eq(memcmp(c1.data, c2.data, c1.length), 0);
    cr_expect_eq(th_count_files(th_path(store, "own/certs")), 1);
    uas_pki_bytes_free(&c1);
    uas_pki_bytes_free(&k1);
    uas_pki_bytes_free(&c2);
    uas_pki_bytes_free(&k2);
}

/* A file name the caller chose means that file, even beside another. */
Test(create, ensure_own_with_a_chosen_file_name_makes_that_one)
{
    uas_pki_create_params p = params();
    p.file_name = "plant";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    p.file_name = "other";
    uas_bytestring c, k;
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &c, &k), UAS_GOOD);
    cr_expect_eq(th_count_files(th_path(store, "own/certs")), 2);
    uas_pki_bytes_free(&c);
    uas_pki_bytes_free(&k);
}

/* With two, which one is meant is unknown: the named one is made. */
Test(create, ensure_own_with_several_others_makes_the_named_one)
{
    uas_pki_create_params p = params();
    p.file_name = "one";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    p.file_name = "two";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    p = params();
    uas_bytestring c, k;
    cr_assert_eq(uas_pki_ensure_own(store, &p, uas_datetime_now(), &c, &k), UAS_GOOD);
    cr_expect_eq(th_count_files(th_path(store, "own/certs")), 3);
    uas_pki_bytes_free(&c);
    uas_pki_bytes_free(&k);
}

Test(create, key_bits_are_configurable)
{
    uas_pki_create_params p = params();
    p.key_bits = 3072;
    p.file_name = "big";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    X509 *x = load_cert("big");
    cr_assert_eq(EVP_PKEY_get_bits(X509_get0_pubkey(x)), 3072);
    X509_free(x);
}

Test(create, bad_parameters_are_refused)
{
    uas_pki_create_params p = params();
    p.application_uri = NULL;
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    p = params();
    p.application_uri = "urn:with space";
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    p = params();
    p.key_bits = 1024;
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    p = params();
    const char *bad_ip[] = {"300.1.1.1"};
    p.ip_addresses = bad_ip;
    p.ip_count = 1;
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    p = params();
    const char *bad_dns[] = {"host name"};
    p.dns_names = bad_dns;
    p.dns_count = 1;
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    p = params();
    p.file_name = "../escape";
    cr_assert_eq(uas_pki_create_own(store, &p, 0), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(th_count_files(th_path(store, "own/certs")), 0);
    cr_assert_eq(th_count_files(th_path(store, "own/private")), 0);
}

Test(create, uri_with_commas_stays_one_uri)
{
    uas_pki_create_params p = params();
    p.application_uri = "urn:a,DNS:evil.example.com";
    p.dns_count = 0;
    p.file_name = "commas";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    X509 *x = load_cert("commas");
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    cr_assert_eq(sk_GENERAL_NAME_num(gens), 3, "one URI and the two IPs");
    cr_assert_eq(sk_GENERAL_NAME_value(gens, 0)->type, GEN_URI);
    GENERAL_NAMES_free(gens);
    X509_free(x);
}

Test(create, created_certificate_validates_when_trusted)
{
    uas_pki_create_params p = params();
    p.file_name = "peer";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    uas_bytestring cert;
    cr_assert_eq(uas_pki_load_own(store, "peer", &cert, NULL), UAS_GOOD);
    uas_datetime now = uas_datetime_now();
    cr_assert_eq(uas_pki_validate(store, cert.data, cert.length, "urn:plc1:acme:server",
                                  UAS_PKI_USAGE_SERVER, 2048, 4096, now, NULL),
                 UAS_BAD_CERTIFICATE_UNTRUSTED);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, cert.data, cert.length), UAS_GOOD);
    cr_assert_eq(uas_pki_validate(store, cert.data, cert.length, "urn:plc1:acme:server",
                                  UAS_PKI_USAGE_SERVER, 2048, 4096, now, NULL),
                 UAS_GOOD);
    cr_assert_eq(uas_pki_validate(store, cert.data, cert.length, "urn:plc1:acme:server",
                                  UAS_PKI_USAGE_CLIENT, 2048, 4096, now, NULL),
                 UAS_GOOD);
    uas_pki_bytes_free(&cert);
}

Test(create, load_own_detects_a_key_that_does_not_match)
{
    uas_pki_create_params p = params();
    p.file_name = "one";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    p.file_name = "two";
    cr_assert_eq(uas_pki_create_own(store, &p, uas_datetime_now()), UAS_GOOD);
    cr_assert_eq(
        rename(th_path(store, "own/private/two.pem"), th_path(store, "own/private/one.pem")), 0);
    uas_bytestring cert, key;
    cr_assert_eq(uas_pki_load_own(store, "one", &cert, &key), UAS_BAD_CERTIFICATE_INVALID);
    cr_assert_null(cert.data);
    cr_assert_null(key.data);
    cr_assert_eq(uas_pki_load_own(store, "two", &cert, &key), UAS_BAD_NOT_FOUND);
    cr_assert_eq(uas_pki_load_own(store, "../two", &cert, &key), UAS_BAD_INVALID_ARGUMENT);
}
