/* uas_pki_validate against chains made here with OpenSSL: each Part 4
 * 6.1.3 step gives its own status code, for the leaf and for issuers. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <openssl/rsa.h> /* EVP_RSA_gen */

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

TestSuite(validate, .init = setup, .fini = teardown);

#define TRUSTED  th_path(store, "trusted/certs")
#define ISSUERS  th_path(store, "issuers/certs")
#define REJECTED th_path(store, "rejected/certs")
#define TCRL     th_path(store, "trusted/crl")
#define ICRL     th_path(store, "issuers/crl")

static void expect(uas_status got, uas_status want, const uas_pki_verdict *v)
{
    cr_assert_eq(got, want, "got %s (%s), want %s", uas_status_name(got), v->reason,
                 uas_status_name(want));
    cr_assert_eq(v->status, got);
}

/* root CA -> intermediate CA -> leaf, with CRLs of both CAs (none revoked). */
typedef struct chain3 {
    tcert root, inter, leaf;
} chain3;

static chain3 make_chain3(void)
{
    chain3 c;
    c.root = th_cert(&(tcert_opts){.cn = "Root CA", .ca = true});
    c.inter = th_cert(&(tcert_opts){.cn = "Intermediate CA", .ca = true, .issuer = &c.root});
    c.leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &c.inter});
    return c;
}

static void store_chain3(chain3 *c, bool crls)
{
    th_write_der(TRUSTED, "root.der", c->root.x);
    th_write_der(ISSUERS, "inter.der", c->inter.x);
    if (crls) {
        X509_CRL *r = th_crl(&c->root, NULL, 0, 0, 0);
        X509_CRL *i = th_crl(&c->inter, NULL, 0, 0, 0);
        th_write_crl(TCRL, "root.crl", r);
        th_write_crl(ICRL, "inter.crl", i);
        X509_CRL_free(r);
        X509_CRL_free(i);
    }
}

static void free_chain3(chain3 *c)
{
    th_free(&c->leaf);
    th_free(&c->inter);
    th_free(&c->root);
}

Test(validate, trusted_self_signed_leaf_isGood)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(TRUSTED, "self.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, "urn:test:app", &v), UAS_GOOD, &v);
    cr_assert_eq(v.chain_length, 1);
    cr_assert_str_eq(v.thumbprint, th_thumbprint(leaf.x));
    cr_assert_not(v.auto_accepted);
    th_free(&leaf);
}

Test(validate, ca_intermediate_leaf_with_root_trusted_isGood)
{
    chain3 c = make_chain3();
    store_chain3(&c, true);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, "urn:test:app", &v), UAS_GOOD, &v);
    cr_assert_eq(v.chain_length, 3);
    cr_assert_eq(th_count_files(REJECTED), 0);
    free_chain3(&c);
}

Test(validate, trusted_intermediate_with_root_in_issuers_isGood)
{
    chain3 c = make_chain3();
    th_write_der(ISSUERS, "root.der", c.root.x);
    th_write_der(TRUSTED, "inter.der", c.inter.x);
    X509_CRL *r = th_crl(&c.root, NULL, 0, 0, 0), *i = th_crl(&c.inter, NULL, 0, 0, 0);
    th_write_crl(ICRL, "root.crl", r);
    th_write_crl(TCRL, "inter.crl", i);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_GOOD, &v);
    X509_CRL_free(r);
    X509_CRL_free(i);
    free_chain3(&c);
}

Test(validate, chain_in_issuers_only_isUntrusted)
{
    chain3 c = make_chain3();
    th_write_der(ISSUERS, "root.der", c.root.x);
    th_write_der(ISSUERS, "inter.der", c.inter.x);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
    free_chain3(&c);
}

Test(validate, untrusted_self_signed_isUntrusted_and_copied_to_rejected_once)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Stranger"});
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
    uas_pki_reject_flush(store); /* written by the store's writer thread */
    cr_assert_eq(th_count_files(REJECTED), 1);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
    uas_pki_reject_flush(store);
    cr_assert_eq(th_count_files(REJECTED), 1, "the same certificate is kept once");
    uas_pki_cert_info *items;
    size_t n;
    cr_assert_eq(uas_pki_list(store, UAS_PKI_REJECTED, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(items[0].thumbprint, th_thumbprint(leaf.x));
    cr_assert_str_eq(items[0].common_name, "Stranger");
    uas_pki_list_free(items, n);
    th_free(&leaf);
}

Test(validate, trust_after_rejection_isGood)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Newcomer"});
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
    uas_pki_reject_flush(store);
    /* An admin promotes it by its full thumbprint (any case); a prefix
     * could name a planted certificate and is refused. */
    char prefix[UAS_PKI_THUMBPRINT_HEX];
    snprintf(prefix, sizeof(prefix), "%.10s", v.thumbprint);
    cr_assert_eq(uas_pki_trust_rejected(store, prefix), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(th_count_files(REJECTED), 1);
    snprintf(prefix, sizeof(prefix), "%s", v.thumbprint);
    for (char *p = prefix; *p; p++)
        *p = (char)(*p | 0x20); /* any case */
    cr_assert_eq(uas_pki_trust_rejected(store, prefix), UAS_GOOD);
    cr_assert_eq(th_count_files(REJECTED), 0);
    cr_assert_eq(th_count_files(TRUSTED), 1);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    cr_assert_eq(uas_pki_trust_rejected(store, prefix), UAS_BAD_NOT_FOUND);
    th_free(&leaf);
}

Test(validate, rejected_folder_is_bounded_new_ones_refused_nothing_evicted)
{
    /* Evicting the oldest let untrusted peers push out an entry an
     * administrator was about to trust; a full folder now refuses. */
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.max_rejected = 3;
    open_with(&o);
    EVP_PKEY *key = EVP_RSA_gen(2048);
    char tps[5][UAS_PKI_THUMBPRINT_HEX];
    for (int i = 0; i < 5; i++) {
        char cn[16];
        snprintf(cn, sizeof(cn), "Peer %d", i);
        tcert c = th_cert(&(tcert_opts){.cn = cn, .key = key});
        uas_pki_verdict v;
        expect(th_validate(store, c.x, NULL, &v), UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
        memcpy(tps[i], v.thumbprint, sizeof(tps[i]));
        th_free(&c);
        uas_pki_reject_flush(store);
        cr_assert_leq(th_count_files(REJECTED), 3);
    }
    cr_assert_eq(th_count_files(REJECTED), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(uas_pki_find(store, UAS_PKI_REJECTED, tps[i], NULL, NULL, 0), UAS_GOOD);
    for (int i = 3; i < 5; i++)
        cr_assert_eq(uas_pki_find(store, UAS_PKI_REJECTED, tps[i], NULL, NULL, 0),
                     UAS_BAD_NOT_FOUND);
    uas_pki_reject_stats st;
    uas_pki_reject_stats_get(store, &st);
    cr_assert_eq(st.written, 3);
    cr_assert_eq(st.folder_full, 2);
    EVP_PKEY_free(key);
}

static int warn_lines;
static char last_warn[1024];
static void count_warn(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud;
    (void)module;
    if (level == UAS_LOG_WARN) {
        warn_lines++;
        snprintf(last_warn, sizeof(last_warn), "%s", msg);
    }
}

Test(validate, auto_accept_accepts_untrusted_and_warns_every_time)
{
    uas_log_set_sink(count_warn, NULL);
    uas_log_set_level(UAS_LOG_WARN);
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.auto_accept = true;
    warn_lines = 0;
    open_with(&o);
    cr_assert_eq(warn_lines, 1, "opening with auto-accept warns");
    tcert leaf = th_cert(&(tcert_opts){.cn = "Lab peer"});
    uas_pki_verdict v;
    for (int i = 1; i <= 2; i++) {
        expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
        cr_assert(v.auto_accepted);
        cr_assert_eq(warn_lines, 1 + i);
        cr_assert(strstr(last_warn, "AUTO-ACCEPT") != NULL, "%s", last_warn);
    }
    cr_assert_eq(th_count_files(REJECTED), 0);
    /* Every other check still applies. */
    expect(th_validate(store, leaf.x, "urn:other", &v), UAS_BAD_CERTIFICATE_URI_INVALID, &v);
    uas_log_set_sink(NULL, NULL);
    th_free(&leaf);
}

Test(validate, expired_leaf_isTimeInvalid)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Old", .not_before_days = -400, .not_after_days = -1});
    th_write_der(TRUSTED, "old.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_TIME_INVALID, &v);
    cr_assert_eq(v.depth, 0);
    th_free(&leaf);
}

Test(validate, not_yet_valid_leaf_isTimeInvalid)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Future", .not_before_days = 2, .not_after_days = 30});
    th_write_der(TRUSTED, "future.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_TIME_INVALID, &v);
    th_free(&leaf);
}

Test(validate, now_is_injected)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(TRUSTED, "self.der", leaf.x);
    size_t len;
    uint8_t *der = th_der(leaf.x, &len);
    uas_datetime now = uas_datetime_now();
    uas_datetime day = 864000000000LL;
    cr_assert_eq(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_SERVER, 0, 0, now, NULL),
                 UAS_GOOD);
    cr_assert_eq(
        uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_SERVER, 0, 0, now + 400 * day, NULL),
        UAS_BAD_CERTIFICATE_TIME_INVALID);
    cr_assert_eq(
        uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_SERVER, 0, 0, now - 2 * day, NULL),
        UAS_BAD_CERTIFICATE_TIME_INVALID);
    free(der);
    th_free(&leaf);
}

Test(validate, expired_intermediate_isIssuerTimeInvalid)
{
    chain3 c;
    c.root = th_cert(&(tcert_opts){.cn = "Root CA", .ca = true});
    c.inter = th_cert(&(tcert_opts){.cn = "Intermediate CA",
                                    .ca = true,
                                    .issuer = &c.root,
                                    .not_before_days = -800,
                                    .not_after_days = -2});
    c.leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &c.inter});
    store_chain3(&c, true);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_TIME_INVALID, &v);
    cr_assert_eq(v.depth, 1);
    free_chain3(&c);
}

Test(validate, expired_root_isIssuerTimeInvalid)
{
    chain3 c;
    c.root = th_cert(
        &(tcert_opts){.cn = "Root CA", .ca = true, .not_before_days = -800, .not_after_days = -2});
    c.inter = th_cert(&(tcert_opts){.cn = "Intermediate CA", .ca = true, .issuer = &c.root});
    c.leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &c.inter});
    store_chain3(&c, true);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_TIME_INVALID, &v);
    cr_assert_eq(v.depth, 2);
    free_chain3(&c);
}

Test(validate, revoked_leaf_isRevoked)
{
    chain3 c = make_chain3();
    th_write_der(TRUSTED, "root.der", c.root.x);
    th_write_der(ISSUERS, "inter.der", c.inter.x);
    const tcert *revoked[] = {&c.leaf};
    X509_CRL *r = th_crl(&c.root, NULL, 0, 0, 0), *i = th_crl(&c.inter, revoked, 1, 0, 0);
    th_write_crl(TCRL, "root.crl", r);
    th_write_crl(ICRL, "inter.crl", i);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_REVOKED, &v);
    cr_assert_eq(v.depth, 0);
    X509_CRL_free(r);
    X509_CRL_free(i);
    free_chain3(&c);
}

Test(validate, revoked_intermediate_isIssuerRevoked)
{
    chain3 c = make_chain3();
    th_write_der(TRUSTED, "root.der", c.root.x);
    th_write_der(ISSUERS, "inter.der", c.inter.x);
    const tcert *revoked[] = {&c.inter};
    X509_CRL *r = th_crl(&c.root, revoked, 1, 0, 0), *i = th_crl(&c.inter, NULL, 0, 0, 0);
    th_write_crl(TCRL, "root.crl", r);
    th_write_crl(ICRL, "inter.crl", i);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_REVOKED, &v);
    cr_assert_eq(v.depth, 1);
    X509_CRL_free(r);
    X509_CRL_free(i);
    free_chain3(&c);
}

Test(validate, crl_of_another_ca_revokes_nothing)
{
    /* A CRL naming the leaf's serial but signed by a different key of the
     * same name must not count, neither as revocation nor as "a CRL". */
    chain3 c = make_chain3();
    store_chain3(&c, false);
    tcert fake = th_cert(&(tcert_opts){.cn = "Intermediate CA", .ca = true});
    const tcert *revoked[] = {&c.leaf};
    X509_CRL *r = th_crl(&c.root, NULL, 0, 0, 0), *f = th_crl(&fake, revoked, 1, 0, 0);
    th_write_crl(TCRL, "root.crl", r);
    th_write_crl(ICRL, "fake.crl", f);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_REVOCATION_UNKNOWN, &v);
    X509_CRL_free(r);
    X509_CRL_free(f);
    th_free(&fake);
    free_chain3(&c);
}

Test(validate, ca_without_crl_isRevocationUnknown_unless_lenient)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "Lone CA", .ca = true});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &ca});
    th_write_der(TRUSTED, "ca.der", ca.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_REVOCATION_UNKNOWN, &v);
    cr_assert_eq(v.depth, 0);
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.revocation = UAS_PKI_REVOCATION_LENIENT;
    open_with(&o);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    /* Lenient still honours a CRL that is there. */
    const tcert *revoked[] = {&leaf};
    X509_CRL *crl = th_crl(&ca, revoked, 1, 0, 0);
    th_write_crl(TCRL, "ca.crl", crl);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_REVOKED, &v);
    X509_CRL_free(crl);
    th_free(&leaf);
    th_free(&ca);
}

Test(validate, root_without_crl_isIssuerRevocationUnknown)
{
    chain3 c = make_chain3();
    th_write_der(TRUSTED, "root.der", c.root.x);
    th_write_der(ISSUERS, "inter.der", c.inter.x);
    X509_CRL *i = th_crl(&c.inter, NULL, 0, 0, 0);
    th_write_crl(ICRL, "inter.crl", i);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_REVOCATION_UNKNOWN,
           &v);
    cr_assert_eq(v.depth, 1);
    X509_CRL_free(i);
    free_chain3(&c);
}

Test(validate, application_uri_must_match_san)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "App", .uri = "urn:host:vendor:app"});
    th_write_der(TRUSTED, "app.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, "urn:host:vendor:app", &v), UAS_GOOD, &v);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    expect(th_validate(store, leaf.x, "urn:host:vendor:other", &v), UAS_BAD_CERTIFICATE_URI_INVALID,
           &v);
    expect(th_validate(store, leaf.x, "urn:host:vendor:ap", &v), UAS_BAD_CERTIFICATE_URI_INVALID,
           &v);
    th_free(&leaf);
    tcert nouri = th_cert(&(tcert_opts){.cn = "No URI", .no_uri = true});
    th_write_der(TRUSTED, "nouri.der", nouri.x);
    expect(th_validate(store, nouri.x, "urn:host:vendor:app", &v), UAS_BAD_CERTIFICATE_URI_INVALID,
           &v);
    th_free(&nouri);
}

Test(validate, missing_key_usage_isUseNotAllowed)
{
    tcert a = th_cert(&(tcert_opts){.cn = "Sign only", .key_usage = "critical,digitalSignature"});
    tcert b = th_cert(&(tcert_opts){.cn = "No KU", .key_usage = ""});
    th_write_der(TRUSTED, "a.der", a.x);
    th_write_der(TRUSTED, "b.der", b.x);
    uas_pki_verdict v;
    expect(th_validate(store, a.x, NULL, &v), UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED, &v);
    expect(th_validate(store, b.x, NULL, &v), UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED, &v);
    th_free(&a);
    th_free(&b);
}

Test(validate, extended_key_usage_follows_the_role)
{
    tcert srv = th_cert(&(tcert_opts){.cn = "Server only", .ext_key_usage = "serverAuth"});
    th_write_der(TRUSTED, "srv.der", srv.x);
    size_t len;
    uint8_t *der = th_der(srv.x, &len);
    uas_datetime now = uas_datetime_now();
    cr_assert_eq(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_SERVER, 0, 0, now, NULL),
                 UAS_GOOD);
    cr_assert_eq(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, NULL),
                 UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED);
    free(der);
    th_free(&srv);
}

Test(validate, issuer_that_is_not_a_ca_isIssuerUseNotAllowed)
{
    /* An application certificate (CA:FALSE, but keyCertSign like every
     * self-signed application certificate) used to sign another one. */
    tcert app = th_cert(&(tcert_opts){.cn = "App as CA"});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &app});
    th_write_der(TRUSTED, "app.der", app.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_USE_NOT_ALLOWED, &v);
    cr_assert_eq(v.depth, 1);
    th_free(&leaf);
    th_free(&app);
}

Test(validate, path_length_constraint_isIssuerUseNotAllowed)
{
    chain3 c;
    c.root = th_cert(&(tcert_opts){.cn = "Root CA", .ca = true, .pathlen = 0, .pathlen_set = true});
    c.inter = th_cert(&(tcert_opts){.cn = "Intermediate CA", .ca = true, .issuer = &c.root});
    c.leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &c.inter});
    store_chain3(&c, true);
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_ISSUER_USE_NOT_ALLOWED, &v);
    cr_assert_eq(v.depth, 2);
    free_chain3(&c);
}

Test(validate, name_constraints_of_the_ca_apply)
{
    tcert ok_ca = th_cert(&(tcert_opts){
        .cn = "Local CA", .ca = true, .name_constraints = "critical,permitted;DNS:localhost"});
    tcert bad_ca = th_cert(&(tcert_opts){
        .cn = "Plant CA", .ca = true, .name_constraints = "critical,permitted;DNS:plant.example"});
    /* Leaves carry DNS:localhost. */
    tcert a = th_cert(&(tcert_opts){.cn = "A", .issuer = &ok_ca});
    tcert b = th_cert(&(tcert_opts){.cn = "B", .issuer = &bad_ca});
    th_write_der(TRUSTED, "ok.der", ok_ca.x);
    th_write_der(TRUSTED, "bad.der", bad_ca.x);
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.revocation = UAS_PKI_REVOCATION_LENIENT;
    open_with(&o);
    uas_pki_verdict v;
    expect(th_validate(store, a.x, NULL, &v), UAS_GOOD, &v);
    expect(th_validate(store, b.x, NULL, &v), UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED, &v);
    th_free(&a);
    th_free(&b);
    th_free(&ok_ca);
    th_free(&bad_ca);
}

Test(validate, short_key_isPolicyCheckFailed)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Weak", .bits = 1024});
    th_write_der(TRUSTED, "weak.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, &v);
    size_t len;
    uint8_t *der = th_der(leaf.x, &len);
    cr_assert_eq(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 1024, 2048,
                                  uas_datetime_now(), NULL),
                 UAS_GOOD, "a legacy policy may allow 1024 bits");
    free(der);
    th_free(&leaf);
}

Test(validate, long_key_over_max_isPolicyCheckFailed)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Big", .bits = 3072});
    th_write_der(TRUSTED, "big.der", leaf.x);
    size_t len;
    uint8_t *der = th_der(leaf.x, &len);
    cr_assert_eq(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 1024, 2048,
                                  uas_datetime_now(), NULL),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    free(der);
    th_free(&leaf);
}

Test(validate, sha1_signature_isPolicyCheckFailed_unless_allowed)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Legacy", .md = EVP_sha1()});
    th_write_der(TRUSTED, "legacy.der", leaf.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, &v);
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.allow_sha1 = true;
    open_with(&o);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    th_free(&leaf);
}

Test(validate, cross_signed_loop_terminates_with_chain_incomplete)
{
    /* A signed by B and B signed by A: no self-signed root anywhere. */
    EVP_PKEY *ka = EVP_RSA_gen(2048), *kb = EVP_RSA_gen(2048);
    tcert a_self = th_cert(&(tcert_opts){.cn = "CA A", .ca = true, .key = ka});
    tcert b_self = th_cert(&(tcert_opts){.cn = "CA B", .ca = true, .key = kb});
    tcert a_by_b = th_cert(&(tcert_opts){.cn = "CA A", .ca = true, .key = ka, .issuer = &b_self});
    tcert b_by_a = th_cert(&(tcert_opts){.cn = "CA B", .ca = true, .key = kb, .issuer = &a_self});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Leaf", .issuer = &a_self});
    th_write_der(TRUSTED, "a_by_b.der", a_by_b.x);
    th_write_der(TRUSTED, "b_by_a.der", b_by_a.x);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, &v);
    cr_assert(strstr(v.reason, "loop") != NULL, "%s", v.reason);
    cr_assert_leq(v.chain_length, 3);
    th_free(&leaf);
    th_free(&a_by_b);
    th_free(&b_by_a);
    th_free(&a_self);
    th_free(&b_self);
    EVP_PKEY_free(ka);
    EVP_PKEY_free(kb);
}

Test(validate, chain_longer_than_limit_isChainIncomplete)
{
    /* root + 10 intermediates + leaf = 12 > 10. CA keys are short to keep
     * the test fast; the policy check only looks at the leaf key. */
    enum { N = 11 };
    tcert ca[N];
    char name[32];
    ca[0] = th_cert(&(tcert_opts){.cn = "CA 0", .ca = true, .bits = 1024});
    th_write_der(TRUSTED, "ca0.der", ca[0].x);
    for (int i = 1; i < N; i++) {
        snprintf(name, sizeof(name), "CA %d", i);
        ca[i] = th_cert(&(tcert_opts){.cn = name, .ca = true, .bits = 1024, .issuer = &ca[i - 1]});
        snprintf(name, sizeof(name), "ca%d.der", i);
        th_write_der(ISSUERS, name, ca[i].x);
    }
    tcert leaf = th_cert(&(tcert_opts){.cn = "Deep leaf", .issuer = &ca[N - 1]});
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, &v);
    cr_assert(strstr(v.reason, "limit") != NULL, "%s", v.reason);
    cr_assert_eq(v.chain_length, 10);
    /* With a higher limit the same chain is complete (and then needs CRLs). */
    uas_pki_options o;
    uas_pki_options_default(&o);
    o.max_chain = 12;
    o.revocation = UAS_PKI_REVOCATION_LENIENT;
    open_with(&o);
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    cr_assert_eq(v.chain_length, 12);
    th_free(&leaf);
    for (int i = 0; i < N; i++)
        th_free(&ca[i]);
}

Test(validate, missing_issuer_isChainIncomplete)
{
    chain3 c = make_chain3();
    th_write_der(TRUSTED, "root.der", c.root.x); /* intermediate nowhere */
    uas_pki_verdict v;
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, &v);
    cr_assert_eq(v.depth, 0);
    /* Trusting the leaf itself does not excuse an incomplete chain. */
    th_write_der(TRUSTED, "leaf.der", c.leaf.x);
    expect(th_validate(store, c.leaf.x, NULL, &v), UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE, &v);
    free_chain3(&c);
}

Test(validate, issuers_sent_with_the_certificate_complete_the_chain)
{
    chain3 c = make_chain3();
    th_write_der(TRUSTED, "root.der", c.root.x);
    X509_CRL *r = th_crl(&c.root, NULL, 0, 0, 0), *i = th_crl(&c.inter, NULL, 0, 0, 0);
    th_write_crl(TCRL, "root.crl", r);
    th_write_crl(TCRL, "inter.crl", i);
    size_t l1, l2;
    uint8_t *d1 = th_der(c.leaf.x, &l1), *d2 = th_der(c.inter.x, &l2);
    uint8_t *both = malloc(l1 + l2);
    memcpy(both, d1, l1);
    memcpy(both + l1, d2, l2);
    uas_pki_verdict v;
    expect(uas_pki_validate(store, both, l1 + l2, NULL, UAS_PKI_USAGE_CLIENT, 2048, 4096,
                            uas_datetime_now(), &v),
           UAS_GOOD, &v);
    cr_assert_eq(v.chain_length, 3);
    cr_assert_str_eq(v.thumbprint, th_thumbprint(c.leaf.x), "thumbprint of the leaf only");
    /* A sent certificate is never trusted by itself. */
    uas_pki_remove(store, th_thumbprint(c.root.x), NULL);
    th_write_der(ISSUERS, "root.der", c.root.x);
    expect(uas_pki_validate(store, both, l1 + l2, NULL, UAS_PKI_USAGE_CLIENT, 2048, 4096,
                            uas_datetime_now(), &v),
           UAS_BAD_CERTIFICATE_UNTRUSTED, &v);
    /* A damaged certificate after the leaf. */
    both[l1 + l2 - 1] ^= 0xff;
    expect(uas_pki_validate(store, both, l1 + l2 - 3, NULL, UAS_PKI_USAGE_CLIENT, 2048, 4096,
                            uas_datetime_now(), &v),
           UAS_BAD_CERTIFICATE_INVALID, &v);
    free(both);
    free(d1);
    free(d2);
    X509_CRL_free(r);
    X509_CRL_free(i);
    free_chain3(&c);
}

Test(validate, corrupted_der_isCertificateInvalid)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Victim"});
    th_write_der(TRUSTED, "victim.der", leaf.x);
    size_t len;
    uint8_t *der = th_der(leaf.x, &len);
    uas_datetime now = uas_datetime_now();
    uas_pki_verdict v;
    /* truncated */
    expect(uas_pki_validate(store, der, len - 1, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v),
           UAS_BAD_CERTIFICATE_INVALID, &v);
    expect(uas_pki_validate(store, der, 0, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v),
           UAS_BAD_CERTIFICATE_INVALID, &v);
    /* last byte of the signature flipped: parses, does not verify */
    der[len - 1] ^= 0x01;
    expect(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v),
           UAS_BAD_CERTIFICATE_INVALID, &v);
    der[len - 1] ^= 0x01;
    /* garbage and flipped bytes all over: never Good, never a crash */
    for (size_t i = 0; i < len; i += 7) {
        der[i] ^= 0x5a;
        uas_status st =
            uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v);
        cr_assert_neq(st, UAS_GOOD, "byte %zu flipped still Good", i);
        der[i] ^= 0x5a;
    }
    uint8_t junk[64];
    memset(junk, 0x30, sizeof(junk));
    expect(uas_pki_validate(store, junk, sizeof(junk), NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v),
           UAS_BAD_CERTIFICATE_INVALID, &v);
    expect(uas_pki_validate(store, der, len, NULL, UAS_PKI_USAGE_CLIENT, 0, 0, now, &v), UAS_GOOD,
           &v);
    free(der);
    th_free(&leaf);
}

Test(validate, unreadable_files_in_the_store_are_skipped)
{
    tcert leaf = th_cert(&(tcert_opts){.cn = "Self"});
    th_write_der(TRUSTED, "self.der", leaf.x);
    FILE *f = fopen(th_path(store, "trusted/certs/README"), "w");
    fputs("not a certificate\n", f);
    fclose(f);
    f = fopen(th_path(store, "trusted/crl/junk.crl"), "w");
    fputs("junk\n", f);
    fclose(f);
    uas_pki_verdict v;
    expect(th_validate(store, leaf.x, NULL, &v), UAS_GOOD, &v);
    th_free(&leaf);
}
