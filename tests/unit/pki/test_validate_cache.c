/* What validations reuse (pki_cache.c): the trust list and recent Good
 * verdicts must never outlive a change of the store, whether made through
 * the API or by another process in the folders. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

TestSuite(validate_cache, .init = setup, .fini = teardown);

static uas_status check(X509 *x)
{
    uas_pki_verdict v;
    return th_validate(store, x, "urn:test:app", &v);
}

Test(validate_cache, repeated_validation_stays_good)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(th_path(store, "trusted/certs"), "self.der", c.x);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(check(c.x), UAS_GOOD);
    th_free(&c);
}

Test(validate_cache, removal_through_the_api_is_seen_at_once)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(th_path(store, "trusted/certs"), "self.der", c.x);
    cr_assert_eq(check(c.x), UAS_GOOD);
    size_t removed = 0;
    cr_assert_eq(uas_pki_remove(store, th_thumbprint(c.x), &removed), UAS_GOOD);
    cr_assert_eq(removed, 1);
    cr_assert_eq(check(c.x), UAS_BAD_CERTIFICATE_UNTRUSTED);
    th_free(&c);
}

Test(validate_cache, a_file_removed_by_another_process_is_seen_at_once)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    const char *trusted = th_path(store, "trusted/certs");
    th_write_der(trusted, "self.der", c.x);
    cr_assert_eq(check(c.x), UAS_GOOD);
    char path[1024];
    snprintf(path, sizeof(path), "%s/self.der", trusted);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(check(c.x), UAS_BAD_CERTIFICATE_UNTRUSTED);
    th_free(&c);
}

Test(validate_cache, a_file_added_by_another_process_is_seen_at_once)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    cr_assert_eq(check(c.x), UAS_BAD_CERTIFICATE_UNTRUSTED);
    th_write_der(th_path(store, "trusted/certs"), "self.der", c.x);
    cr_assert_eq(check(c.x), UAS_GOOD);
    th_free(&c);
}

Test(validate_cache, a_good_verdict_does_not_serve_a_later_time)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(th_path(store, "trusted/certs"), "self.der", c.x);
    cr_assert_eq(check(c.x), UAS_GOOD);
    size_t len;
    uint8_t *der = th_der(c.x, &len);
    uas_pki_verdict v;
    /* 20 years on: the certificate has expired by then. */
    uas_datetime later = uas_datetime_now() + 20LL * 365 * 24 * 3600 * 10000000LL;
    cr_assert_eq(uas_pki_validate(store, der, len, "urn:test:app", UAS_PKI_USAGE_CLIENT, 2048, 4096,
                                  later, &v),
                 UAS_BAD_CERTIFICATE_TIME_INVALID);
    free(der);
    th_free(&c);
}

Test(validate_cache, other_parameters_are_not_served_by_a_cached_verdict)
{
    tcert c = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(th_path(store, "trusted/certs"), "self.der", c.x);
    cr_assert_eq(check(c.x), UAS_GOOD);
    uas_pki_verdict v;
    cr_assert_eq(th_validate(store, c.x, "urn:other:app", &v), UAS_BAD_CERTIFICATE_URI_INVALID);
    th_free(&c);
}
