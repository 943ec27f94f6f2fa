/* OpenSSL helpers: parsing DER/PEM, thumbprints, names, times and the
 * certificate summary shown by `uapki list`. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <ua/log.h>
#include <ua/mem.h>

static bool looks_pem(const uint8_t *data, size_t len)
{
    size_t i = 0;
    while (i < len && isspace(data[i]))
        i++;
    return len - i >= 10 && memcmp(data + i, "-----BEGIN", 10) == 0;
}

X509 *pki_x509_parse_der(const uint8_t **p, const uint8_t *end)
{
    if (*p >= end || end - *p > (long)INT32_MAX)
        return NULL;
    const unsigned char *q = *p;
    X509 *x = d2i_X509(NULL, &q, (long)(end - *p));
    if (!x) {
        ERR_clear_error();
        return NULL;
    }
    *p = q;
    return x;
}

X509 *pki_x509_parse_any(const uint8_t *data, size_t len)
{
    if (len == 0 || len > PKI_MAX_CRL_FILE)
        return NULL;
    X509 *x = NULL;
    if (looks_pem(data, len)) {
        BIO *b = BIO_new_mem_buf(data, (int)len);
        if (b)
            x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        BIO_free(b);
    } else {
        const uint8_t *p = data;
        x = pki_x509_parse_der(&p, data + len);
        if (x && p != data + len) { /* trailing bytes: not one certificate */
            X509_free(x);
            x = NULL;
        }
    }
    ERR_clear_error();
    return x;
}

X509_CRL *pki_crl_parse_any(const uint8_t *data, size_t len)
{
    if (len == 0 || len > PKI_MAX_CRL_FILE)
        return NULL;
    X509_CRL *c = NULL;
    if (looks_pem(data, len)) {
        BIO *b = BIO_new_mem_buf(data, (int)len);
        if (b)
            c = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL);
        BIO_free(b);
    } else {
        const unsigned char *p = data;
        c = d2i_X509_CRL(NULL, &p, (long)len);
        if (c && p != data + len) {
            X509_CRL_free(c);
            c = NULL;
        }
    }
    ERR_clear_error();
    return c;
}

uas_status pki_x509_der(X509 *x, pki_buf *out)
{
    out->data = NULL;
    out->len = out->cap = 0;
    int n = i2d_X509(x, NULL);
    if (n <= 0)
        return UAS_BAD_CERTIFICATE_INVALID;
    out->data = uas_malloc((size_t)n + 1);
    if (!out->data)
        return UAS_BAD_OUT_OF_MEMORY;
    unsigned char *p = out->data;
    i2d_X509(x, &p);
    out->len = (size_t)n;
    out->cap = (size_t)n + 1;
    return UAS_GOOD;
}

void pki_hex_upper(const uint8_t *in, size_t n, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = 0;
}

void uas_pki_thumbprint(const uint8_t *der, size_t len, char out[UAS_PKI_THUMBPRINT_HEX])
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (EVP_Digest(der, len, md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20) {
        ERR_clear_error();
        memset(out, '0', 40);
        out[40] = 0;
        return;
    }
    pki_hex_upper(md, 20, out);
}

void pki_x509_thumbprint(X509 *x, char out[UAS_PKI_THUMBPRINT_HEX])
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (X509_digest(x, EVP_sha1(), md, &mdlen) != 1 || mdlen != 20) {
        ERR_clear_error();
        memset(out, '0', 40);
        out[40] = 0;
        return;
    }
    pki_hex_upper(md, 20, out);
}

bool pki_thumbprint_arg(const char *in, char out[UAS_PKI_THUMBPRINT_HEX])
{
    size_t n = in ? strlen(in) : 0;
    if (n < 8 || n > 40)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)in[i]))
            return false;
        out[i] = (char)toupper((unsigned char)in[i]);
    }
    out[n] = 0;
    return true;
}

time_t pki_time_from_datetime(uas_datetime t)
{
    int64_t ticks = t - UAS_DATETIME_UNIX_EPOCH;
    int64_t secs = ticks / 10000000;
    if (ticks < 0 && ticks % 10000000 != 0)
        secs--;
    return (time_t)secs;
}

uas_datetime pki_datetime_from_asn1(const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    time_t secs = timegm(&tm);
    return (uas_datetime)secs * 10000000 + UAS_DATETIME_UNIX_EPOCH;
}

void pki_name_oneline(const X509_NAME *n, char *buf, size_t cap)
{
    buf[0] = 0;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return;
    /* RFC 2253 escaping, but in certificate order (CN first as written). */
    unsigned long flags = (XN_FLAG_RFC2253 & ~XN_FLAG_DN_REV) & ~ASN1_STRFLGS_ESC_MSB;
    if (X509_NAME_print_ex(b, n, 0, flags) >= 0) {
        int r = BIO_read(b, buf, (int)cap - 1);
        buf[r > 0 ? r : 0] = 0;
    }
    BIO_free(b);
    ERR_clear_error();
}

void pki_x509_subject(X509 *x, char *buf, size_t cap)
{
    pki_name_oneline(X509_get_subject_name(x), buf, cap);
}

/* Text from a peer's certificate goes into logs and terminals: control
 * characters become '?'. */
static void scrub(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static void name_cn(const X509_NAME *n, char *buf, size_t cap)
{
    buf[0] = 0;
    int i = X509_NAME_get_index_by_NID(n, NID_commonName, -1);
    if (i < 0)
        return;
    ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i));
    unsigned char *utf8 = NULL;
    int len = ASN1_STRING_to_UTF8(&utf8, s);
    if (len > 0) {
        size_t m = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
        memcpy(buf, utf8, m);
        buf[m] = 0;
        if (strlen(buf) != m) /* embedded NUL */
            buf[0] = 0;
        scrub(buf);
    }
    OPENSSL_free(utf8);
    ERR_clear_error();
}

static bool copy_ia5(const ASN1_STRING *s, char *buf, size_t cap)
{
    const unsigned char *d = ASN1_STRING_get0_data(s);
    int len = ASN1_STRING_length(s);
    if (len < 0 || (size_t)len >= cap || memchr(d, 0, (size_t)len))
        return false;
    memcpy(buf, d, (size_t)len);
    buf[len] = 0;
    return true;
}

void pki_x509_first_uri(X509 *x, char *buf, size_t cap)
{
    buf[0] = 0;
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_URI && copy_ia5(g->d.uniformResourceIdentifier, buf, cap)) {
            scrub(buf);
            break;
        }
    }
    GENERAL_NAMES_free(gens);
    ERR_clear_error();
}

bool pki_x509_has_uri(X509 *x, const char *uri)
{
    bool found = false;
    size_t n = strlen(uri);
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && !found; i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_URI)
            continue;
        const ASN1_STRING *s = g->d.uniformResourceIdentifier;
        found = ASN1_STRING_length(s) == (int)n && memcmp(ASN1_STRING_get0_data(s), uri, n) == 0;
    }
    GENERAL_NAMES_free(gens);
    ERR_clear_error();
    return found;
}

bool pki_x509_self_signed(X509 *x)
{
    int r = X509_self_signed(x, 1);
    ERR_clear_error();
    return r == 1;
}

void pki_sanitize_name(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = in; *p && n + 1 < cap && n < 64; p++) {
        unsigned char c = (unsigned char)*p;
        out[n++] = (isalnum(c) || c == '.' || c == '-' || c == '_') ? (char)c : '_';
    }
    out[n] = 0;
    if (n == 0 || out[0] == '.')
        snprintf(out, cap, "cert");
}

void pki_x509_file_name(X509 *x, const char *ext, char *out, size_t cap)
{
    char cn[128], safe[80], tp[UAS_PKI_THUMBPRINT_HEX];
    name_cn(X509_get_subject_name(x), cn, sizeof(cn));
    pki_sanitize_name(cn, safe, sizeof(safe));
    pki_x509_thumbprint(x, tp);
    snprintf(out, cap, "%s [%s]%s", safe, tp, ext);
}

const char *pki_ssl_error(void)
{
    unsigned long e = ERR_peek_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();
    return r ? r : "unknown OpenSSL error";
}

void pki_x509_info(X509 *x, uas_pki_cert_info *info)
{
    memset(info, 0, sizeof(*info));
    pki_x509_thumbprint(x, info->thumbprint);
    pki_name_oneline(X509_get_subject_name(x), info->subject, sizeof(info->subject));
    pki_name_oneline(X509_get_issuer_name(x), info->issuer, sizeof(info->issuer));
    name_cn(X509_get_subject_name(x), info->common_name, sizeof(info->common_name));
    pki_x509_first_uri(x, info->application_uri, sizeof(info->application_uri));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex)
        snprintf(info->serial, sizeof(info->serial), "%s", hex);
    OPENSSL_free(hex);
    BN_free(bn);
    info->not_before = pki_datetime_from_asn1(X509_get0_notBefore(x));
    info->not_after = pki_datetime_from_asn1(X509_get0_notAfter(x));
    EVP_PKEY *pk = X509_get0_pubkey(x);
    info->key_bits = pk ? (uint32_t)EVP_PKEY_get_bits(pk) : 0;
    info->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
    info->self_signed = pki_x509_self_signed(x);
    ERR_clear_error();
}

uas_status uas_pki_cert_info_get(const uint8_t *der, size_t len, uas_pki_cert_info *info)
{
    if (!der || !info)
        return UAS_BAD_INVALID_ARGUMENT;
    X509 *x = pki_x509_parse_any(der, len);
    if (!x)
        return UAS_BAD_CERTIFICATE_INVALID;
    pki_x509_info(x, info);
    X509_free(x);
    return UAS_GOOD;
}

typedef struct load_ctx {
    STACK_OF(X509) * certs;
    STACK_OF(X509_CRL) * crls;
} load_ctx;

static bool load_one(void *ud, const char *path, const char *name)
{
    (void)name;
    load_ctx *c = ud;
    pki_buf b;
    if (pki_read_file(path, c->certs ? PKI_MAX_CERT_FILE : PKI_MAX_CRL_FILE, &b) != UAS_GOOD)
        return true;
    if (c->certs) {
        X509 *x = pki_x509_parse_any(b.data, b.len);
        if (!x)
            uas_log(UAS_LOG_WARN, PKI_LOG, "%s is not a certificate, ignored", path);
        else if (!sk_X509_push(c->certs, x))
            X509_free(x);
    } else {
        X509_CRL *crl = pki_crl_parse_any(b.data, b.len);
        if (!crl)
            uas_log(UAS_LOG_WARN, PKI_LOG, "%s is not a CRL, ignored", path);
        else if (!sk_X509_CRL_push(c->crls, crl))
            X509_CRL_free(crl);
    }
    pki_buf_free(&b, false);
    return true;
}

STACK_OF(X509) * pki_load_certs(const char *dir)
{
    load_ctx c = {sk_X509_new_null(), NULL};
    if (c.certs)
        pki_for_each_file(dir, load_one, &c);
    return c.certs;
}

STACK_OF(X509_CRL) * pki_load_crls(const char *dir)
{
    load_ctx c = {NULL, sk_X509_CRL_new_null()};
    if (c.crls)
        pki_for_each_file(dir, load_one, &c);
    return c.crls;
}
