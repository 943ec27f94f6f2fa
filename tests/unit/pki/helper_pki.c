#define _GNU_SOURCE
#include "helper_pki.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

static void add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    cr_assert_not_null(ext, "extension %d = %s", nid, value);
    cr_assert_eq(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

tcert th_cert(const tcert_opts *o)
{
    tcert c = {NULL, NULL};
    if (o->key) {
        EVP_PKEY_up_ref(o->key);
        c.key = o->key;
    } else {
        c.key = EVP_RSA_gen((unsigned)(o->bits ? o->bits : 2048));
    }
    cr_assert_not_null(c.key);
    c.x = X509_new();
    cr_assert_not_null(c.x);
    X509_set_version(c.x, X509_VERSION_3);
    if (o->serial) {
        ASN1_INTEGER_set(X509_get_serialNumber(c.x), o->serial);
    } else {
        uint8_t raw[16];
        RAND_bytes(raw, sizeof(raw));
        raw[0] &= 0x7f;
        raw[0] |= 0x01;
        BIGNUM *bn = BN_bin2bn(raw, sizeof(raw), NULL);
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c.x));
        BN_free(bn);
    }
    time_t now = time(NULL);
    long nb = o->not_before_days ? o->not_before_days : -1;
    long na = o->not_after_days ? o->not_after_days : 365;
    ASN1_TIME_adj(X509_getm_notBefore(c.x), now, (int)nb, 0);
    ASN1_TIME_adj(X509_getm_notAfter(c.x), now, (int)na, 0);
    X509_NAME *name = X509_get_subject_name(c.x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)o->cn, -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"uastack tests", -1,
                               -1, 0);
    X509_set_issuer_name(c.x, o->issuer ? X509_get_subject_name(o->issuer->x) : name);
    X509_set_pubkey(c.x, c.key);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, o->issuer ? o->issuer->x : c.x, c.x, NULL, NULL, 0);
    if (o->ca) {
        char bc[64];
        if (o->pathlen_set)
            snprintf(bc, sizeof(bc), "critical,CA:TRUE,pathlen:%d", o->pathlen);
        else
            snprintf(bc, sizeof(bc), "critical,CA:TRUE");
        add_ext(c.x, &ctx, NID_basic_constraints, bc);
        if (o->name_constraints)
            add_ext(c.x, &ctx, NID_name_constraints, o->name_constraints);
    } else {
        add_ext(c.x, &ctx, NID_basic_constraints, "critical,CA:FALSE");
    }
    const char *ku = o->key_usage;
    if (!ku)
        ku = o->ca ? "critical,keyCertSign,cRLSign"
             : (o->issuer || o->not_self_signed_ku)
                 ? "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment"
                 : "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment,"
                   "keyCertSign";
    if (*ku)
        add_ext(c.x, &ctx, NID_key_usage, ku);
    const char *eku = o->ext_key_usage;
    if (!eku)
        eku = o->ca ? "" : "serverAuth,clientAuth";
    if (*eku)
        add_ext(c.x, &ctx, NID_ext_key_usage, eku);
    add_ext(c.x, &ctx, NID_subject_key_identifier, "hash");
    add_ext(c.x, &ctx, NID_authority_key_identifier, "keyid:always");
    if (!o->ca && !o->no_uri) {
        char san[300];
        snprintf(san, sizeof(san), "URI:%s,DNS:localhost", o->uri ? o->uri : "urn:test:app");
        add_ext(c.x, &ctx, NID_subject_alt_name, san);
    }
    EVP_PKEY *signer = o->issuer ? o->issuer->key : c.key;
    cr_assert(X509_sign(c.x, signer, o->md ? o->md : EVP_sha256()) > 0, "sign: %s",
              ERR_reason_error_string(ERR_get_error()));
    return c;
}

void th_free(tcert *c)
{
    X509_free(c->x);
    EVP_PKEY_free(c->key);
    c->x = NULL;
    c->key = NULL;
}

uint8_t *th_der(X509 *x, size_t *len)
{
    int n = i2d_X509(x, NULL);
    cr_assert_gt(n, 0);
    uint8_t *buf = malloc((size_t)n);
    unsigned char *p = buf;
    i2d_X509(x, &p);
    *len = (size_t)n;
    return buf;
}

static void write_bytes(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "open %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

void th_write_der(const char *dir, const char *name, X509 *x)
{
    size_t len;
    uint8_t *der = th_der(x, &len);
    write_bytes(dir, name, der, len);
    free(der);
}

void th_write_pem(const char *dir, const char *name, X509 *x)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    PEM_write_X509(f, x);
    fclose(f);
}

X509_CRL *th_crl(const tcert *ca, const tcert *const *revoked, int n, long last_days,
                 long next_days)
{
    X509_CRL *crl = X509_CRL_new();
    cr_assert_not_null(crl);
    X509_CRL_set_version(crl, 1);
    X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca->x));
    time_t now = time(NULL);
    ASN1_TIME *t = ASN1_TIME_adj(NULL, now, (int)last_days, 0);
    X509_CRL_set1_lastUpdate(crl, t);
    ASN1_TIME_free(t);
    t = ASN1_TIME_adj(NULL, now, (int)(next_days ? next_days : 30), 0);
    X509_CRL_set1_nextUpdate(crl, t);
    ASN1_TIME_free(t);
    for (int i = 0; i < n; i++) {
        X509_REVOKED *r = X509_REVOKED_new();
        X509_REVOKED_set_serialNumber(r, X509_get_serialNumber(revoked[i]->x));
        ASN1_TIME *rt = ASN1_TIME_adj(NULL, now, -1, 0);
        X509_REVOKED_set_revocationDate(r, rt);
        ASN1_TIME_free(rt);
        X509_CRL_add0_revoked(crl, r);
    }
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca->x, NULL, NULL, crl, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_authority_key_identifier, "keyid");
    cr_assert_not_null(ext);
    X509_CRL_add_ext(crl, ext, -1);
    X509_EXTENSION_free(ext);
    X509_CRL_sort(crl);
    cr_assert(X509_CRL_sign(crl, ca->key, EVP_sha256()) > 0);
    return crl;
}

uint8_t *th_crl_der(X509_CRL *crl, size_t *len)
{
    int n = i2d_X509_CRL(crl, NULL);
    cr_assert_gt(n, 0);
    uint8_t *buf = malloc((size_t)n);
    unsigned char *p = buf;
    i2d_X509_CRL(crl, &p);
    *len = (size_t)n;
    return buf;
}

void th_write_crl(const char *dir, const char *name, X509_CRL *crl)
{
    size_t len;
    uint8_t *der = th_crl_der(crl, &len);
    write_bytes(dir, name, der, len);
    free(der);
}

char *th_tmpdir(void)
{
    char *d = strdup("/tmp/uapki-test-XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void th_rmrf(char *dir)
{
    if (!dir)
        return;
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

int th_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

const char *th_path(uas_pki_store *s, const char *rel)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 4096, "%s/%s", uas_pki_store_dir(s), rel);
    return b;
}

uas_status th_validate(uas_pki_store *s, X509 *x, const char *uri, uas_pki_verdict *v)
{
    size_t len;
    uint8_t *der = th_der(x, &len);
    uas_status st =
        uas_pki_validate(s, der, len, uri, UAS_PKI_USAGE_CLIENT, 2048, 4096, uas_datetime_now(), v);
    free(der);
    return st;
}

char *th_thumbprint(X509 *x)
{
    static char tp[UAS_PKI_THUMBPRINT_HEX];
    size_t len;
    uint8_t *der = th_der(x, &len);
    uas_pki_thumbprint(der, len, tp);
    free(der);
    return tp;
}
