/* The store: Part 12 layout, listing, look-up by thumbprint, trust list
 * management and CRLs. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

TestSuite(store, .init = setup, .fini = teardown);

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

Test(store, open_creates_the_part12_layout)
{
    static const char *const rel[] = {"own/certs",     "own/private",   "trusted/certs",
                                      "trusted/crl",   "issuers/certs", "issuers/crl",
                                      "rejected/certs"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
        cr_assert(is_dir(th_path(store, rel[i])), "%s", rel[i]);
    cr_assert_str_eq(uas_pki_folder_path(store, UAS_PKI_TRUSTED), th_path(store, "trusted/certs"));
    cr_assert_str_eq(uas_pki_folder_name(UAS_PKI_ISSUERS), "issuers");
    /* A nested path that does not exist yet. */
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/a/b/pki/", dir);
    uas_pki_store *s2;
    cr_assert_eq(uas_pki_store_open(sub, NULL, &s2), UAS_GOOD);
    cr_assert(is_dir(th_path(s2, "rejected/certs")));
    uas_pki_store_close(s2);
}

Test(store, open_fails_cleanly_on_a_file)
{
    char file[4096];
    snprintf(file, sizeof(file), "%s/plain", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    uas_pki_store *s2 = (uas_pki_store *)1;
    cr_assert_neq(uas_pki_store_open(file, NULL, &s2), UAS_GOOD);
    cr_assert_null(s2);
    cr_assert_eq(uas_pki_store_open("", NULL, &s2), UAS_BAD_INVALID_ARGUMENT);
}

Test(store, list_gives_subject_issuer_validity_thumbprint_sorted)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "Zeta CA", .ca = true});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Alpha", .issuer = &ca});
    th_write_der(th_path(store, "trusted/certs"), "z.der", ca.x);
    th_write_pem(th_path(store, "trusted/certs"), "a.pem", leaf.x); /* PEM works too */
    uas_pki_cert_info *items;
    size_t n;
    cr_assert_eq(uas_pki_list(store, UAS_PKI_TRUSTED, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(items[0].common_name, "Alpha");
    cr_assert_str_eq(items[0].file, "a.pem");
    cr_assert_str_eq(items[0].subject, "CN=Alpha,O=uastack tests");
    cr_assert_str_eq(items[0].issuer, "CN=Zeta CA,O=uastack tests");
    cr_assert_str_eq(items[0].thumbprint, th_thumbprint(leaf.x));
    cr_assert_str_eq(items[0].application_uri, "urn:test:app");
    cr_assert_not(items[0].self_signed);
    cr_assert_not(items[0].is_ca);
    cr_assert_eq(items[0].key_bits, 2048);
    uas_datetime now = uas_datetime_now();
    cr_assert_lt(items[0].not_before, now);
    cr_assert_gt(items[0].not_after, now);
    cr_assert_str_eq(items[1].common_name, "Zeta CA");
    cr_assert(items[1].self_signed);
    cr_assert(items[1].is_ca);
    uas_pki_list_free(items, n);
    cr_assert_eq(uas_pki_list(store, UAS_PKI_ISSUERS, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 0);
    cr_assert_null(items);
    th_free(&leaf);
    th_free(&ca);
}

Test(store, find_by_thumbprint_prefix_any_case)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Findme"});
    th_write_der(th_path(store, "issuers/certs"), "f.der", c.x);
    char tp[UAS_PKI_THUMBPRINT_HEX];
    snprintf(tp, sizeof(tp), "%s", th_thumbprint(c.x));
    uas_bytestring der;
    char path[4096];
    cr_assert_eq(uas_pki_find(store, UAS_PKI_ISSUERS, tp, &der, path, sizeof(path)), UAS_GOOD);
    size_t len;
    uint8_t *want = th_der(c.x, &len);
    cr_assert_eq(der.length, len);
    cr_assert_eq(memcmp(der.data, want, len), 0);
    cr_assert(strstr(path, "issuers/certs/f.der") != NULL, "%s", path);
    uas_pki_bytes_free(&der);
    tp[8] = 0;
    tp[0] = (char)(tp[0] | 0x20);
    cr_assert_eq(uas_pki_find(store, UAS_PKI_ISSUERS, tp, NULL, NULL, 0), UAS_GOOD);
    cr_assert_eq(uas_pki_find(store, UAS_PKI_TRUSTED, tp, NULL, NULL, 0), UAS_BAD_NOT_FOUND);
    tp[7] = 0;
    cr_assert_eq(uas_pki_find(store, UAS_PKI_ISSUERS, tp, NULL, NULL, 0), UAS_BAD_INVALID_ARGUMENT,
                 "fewer than 8 digits");
    cr_assert_eq(uas_pki_find(store, UAS_PKI_ISSUERS, "XYZXYZXYZ", NULL, NULL, 0),
                 UAS_BAD_INVALID_ARGUMENT);
    free(want);
    th_free(&c);
}

Test(store, add_names_files_by_cn_and_thumbprint_and_clears_rejected)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Some/App"});
    size_t len;
    uint8_t *der = th_der(c.x, &len);
    cr_assert_eq(uas_pki_reject(store, der, len), UAS_GOOD);
    cr_assert_eq(th_count_files(th_path(store, "rejected/certs")), 1);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, der, len), UAS_GOOD);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, der, len), UAS_GOOD, "idempotent");
    cr_assert_eq(th_count_files(th_path(store, "rejected/certs")), 0);
    cr_assert_eq(th_count_files(th_path(store, "trusted/certs")), 1);
    char expect[256];
    snprintf(expect, sizeof(expect), "trusted/certs/Some_App [%s].der", th_thumbprint(c.x));
    struct stat sb;
    cr_assert_eq(stat(th_path(store, expect), &sb), 0, "%s", expect);
    uint8_t junk[8] = {1, 2, 3};
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, junk, sizeof(junk)),
                 UAS_BAD_CERTIFICATE_INVALID);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_OWN, der, len), UAS_BAD_INVALID_ARGUMENT);
    free(der);
    th_free(&c);
}

Test(store, remove_deletes_from_every_list_but_own)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Gone"});
    size_t len;
    uint8_t *der = th_der(c.x, &len);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, der, len), UAS_GOOD);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_ISSUERS, der, len), UAS_GOOD);
    th_write_der(th_path(store, "own/certs"), "own.der", c.x);
    size_t removed = 0;
    cr_assert_eq(uas_pki_remove(store, th_thumbprint(c.x), &removed), UAS_GOOD);
    cr_assert_eq(removed, 2);
    cr_assert_eq(th_count_files(th_path(store, "own/certs")), 1);
    cr_assert_eq(uas_pki_remove(store, th_thumbprint(c.x), &removed), UAS_BAD_NOT_FOUND);
    cr_assert_eq(removed, 0);
    free(der);
    th_free(&c);
}

Test(store, remove_needs_a_thumbprint_of_8_to_40_hex_digits)
{
    tcert a = th_cert(&(tcert_opts){.cn = "A"});
    size_t len;
    uint8_t *der = th_der(a.x, &len);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, der, len), UAS_GOOD);
    char tp[UAS_PKI_THUMBPRINT_HEX];
    snprintf(tp, sizeof(tp), "%.7s", th_thumbprint(a.x));
    cr_assert_eq(uas_pki_remove(store, tp, NULL), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_pki_remove(store, "", NULL), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_pki_remove(store, "../../etc", NULL), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(th_count_files(th_path(store, "trusted/certs")), 1);
    snprintf(tp, sizeof(tp), "%.8s", th_thumbprint(a.x));
    cr_assert_eq(uas_pki_remove(store, tp, NULL), UAS_GOOD);
    cr_assert_eq(th_count_files(th_path(store, "trusted/certs")), 0);
    free(der);
    th_free(&a);
}

Test(store, add_crl_checks_its_issuer_and_keeps_the_newest)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "CRL CA", .ca = true});
    tcert other = th_cert(&(tcert_opts){.cn = "CRL CA", .ca = true}); /* same name, other key */
    X509_CRL *old = th_crl(&ca, NULL, 0, -10, 0);
    X509_CRL *fresh = th_crl(&ca, NULL, 0, -1, 0);
    X509_CRL *forged = th_crl(&other, NULL, 0, 0, 0);
    size_t l_old, l_fresh, l_forged;
    uint8_t *d_old = th_crl_der(old, &l_old), *d_fresh = th_crl_der(fresh, &l_fresh),
            *d_forged = th_crl_der(forged, &l_forged);

    cr_assert_eq(uas_pki_add_crl(store, d_old, l_old, false), UAS_BAD_NOT_FOUND,
                 "issuer not in the store");
    th_write_der(th_path(store, "issuers/certs"), "ca.der", ca.x);
    cr_assert_eq(uas_pki_add_crl(store, d_forged, l_forged, false), UAS_BAD_CERTIFICATE_INVALID);
    uint8_t junk[10] = {0x30, 0x03, 1, 2, 3};
    cr_assert_eq(uas_pki_add_crl(store, junk, sizeof(junk), false), UAS_BAD_DECODING_ERROR);

    cr_assert_eq(uas_pki_add_crl(store, d_old, l_old, true), UAS_GOOD);
    cr_assert_eq(th_count_files(th_path(store, "issuers/crl")), 1);
    cr_assert_eq(uas_pki_add_crl(store, d_fresh, l_fresh, true), UAS_GOOD);
    cr_assert_eq(th_count_files(th_path(store, "issuers/crl")), 1, "the older one is replaced");
    cr_assert_eq(uas_pki_add_crl(store, d_old, l_old, true), UAS_BAD_INVALID_STATE);
    cr_assert_eq(th_count_files(th_path(store, "issuers/crl")), 1);
    cr_assert_eq(uas_pki_add_crl(store, d_fresh, l_fresh, false), UAS_GOOD);
    cr_assert_eq(th_count_files(th_path(store, "trusted/crl")), 1);

    /* The stored CRL is the one validation uses. */
    tcert leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &ca});
    th_write_der(th_path(store, "trusted/certs"), "leaf.der", leaf.x);
    uas_pki_verdict v;
    cr_assert_eq(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, "%s", v.reason);

    free(d_old);
    free(d_fresh);
    free(d_forged);
    X509_CRL_free(old);
    X509_CRL_free(fresh);
    X509_CRL_free(forged);
    th_free(&leaf);
    th_free(&ca);
    th_free(&other);
}

Test(store, crl_of_a_ca_without_crlsign_is_refused)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "No CRL sign", .ca = true, .key_usage = "keyCertSign"});
    th_write_der(th_path(store, "trusted/certs"), "ca.der", ca.x);
    X509_CRL *crl = th_crl(&ca, NULL, 0, 0, 0);
    size_t len;
    uint8_t *der = th_crl_der(crl, &len);
    cr_assert_eq(uas_pki_add_crl(store, der, len, false), UAS_BAD_CERTIFICATE_INVALID);
    free(der);
    X509_CRL_free(crl);
    th_free(&ca);
}

Test(store, read_cert_file_takes_der_and_pem)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Files"});
    th_write_der(dir, "c.der", c.x);
    th_write_pem(dir, "c.pem", c.x);
    char p1[4096], p2[4096], p3[4096];
    snprintf(p1, sizeof(p1), "%s/c.der", dir);
    snprintf(p2, sizeof(p2), "%s/c.pem", dir);
    snprintf(p3, sizeof(p3), "%s/missing.der", dir);
    uas_bytestring a, b;
    cr_assert_eq(uas_pki_read_cert_file(p1, &a), UAS_GOOD);
    cr_assert_eq(uas_pki_read_cert_file(p2, &b), UAS_GOOD);
    cr_assert_eq(a.length, b.length);
    cr_assert_eq(memcmp(a.data, b.data, a.length), 0);
    uas_pki_bytes_free(&b);
    cr_assert_eq(uas_pki_read_cert_file(p3, &b), UAS_BAD_NOT_FOUND);
    cr_assert_null(b.data);
    uas_pki_bytes_free(&a);
    th_free(&c);
}
