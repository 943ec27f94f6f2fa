/* The application instance certificate: key pair generation, the self-signed
 * certificate of Part 6 6.2.2, writing the pair into own/ and loading it
 * back. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <ua/log.h>
#include <ua/mem.h>

#define DEFAULT_BITS 2048u
#define DEFAULT_DAYS 730u

static bool printable_ascii(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f)
            return false;
    return true;
}

static bool no_controls(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static bool dns_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '.' && c != '_' && !(c == '*' && i == 0))
            return false;
    }
    return true;
}

static bool file_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '.' && c != '_')
            return false;
    }
    return true;
}

static bool own_name(const uas_pki_create_params *p, char *out, size_t cap)
{
    if (p->file_name) {
        if (!file_name_ok(p->file_name))
            return false;
        snprintf(out, cap, "%s", p->file_name);
        return true;
    }
    pki_sanitize_name(p->application_name ? p->application_name : "uastack", out, cap);
    return true;
}

static bool own_paths(uas_pki_store *s, const char *name, char *cert, char *key, size_t cap)
{
    int a = snprintf(cert, cap, "%s/%s.der", s->dirs[PKI_DIR_OWN_CERTS], name);
    int b = snprintf(key, cap, "%s/%s.pem", s->dirs[PKI_DIR_OWN_PRIVATE], name);
    return a > 0 && (size_t)a < cap && b > 0 && (size_t)b < cap;
}

static uas_status check_params(const uas_pki_create_params *p)
{
    if (!p->application_uri || !printable_ascii(p->application_uri, 1024)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG,
                "the application URI must be 1..1024 printable ASCII "
                "characters without spaces");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    if (p->application_name && !no_controls(p->application_name, 64)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "the application name must be 1..64 characters");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    if (p->organization && !no_controls(p->organization, 64)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "the organization must be 1..64 characters");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < p->dns_count; i++) {
        if (!p->dns_names[i] || !dns_name_ok(p->dns_names[i])) {
            uas_log(UAS_LOG_ERROR, PKI_LOG, "bad DNS name '%s'",
                    p->dns_names[i] ? p->dns_names[i] : "(null)");
            return UAS_BAD_INVALID_ARGUMENT;
        }
    }
    for (size_t i = 0; i < p->ip_count; i++) {
        ASN1_OCTET_STRING *ip = p->ip_addresses[i] ? a2i_IPADDRESS(p->ip_addresses[i]) : NULL;
        ERR_clear_error();
        if (!ip) {
            uas_log(UAS_LOG_ERROR, PKI_LOG, "bad IP address '%s'",
                    p->ip_addresses[i] ? p->ip_addresses[i] : "(null)");
            return UAS_BAD_INVALID_ARGUMENT;
        }
        ASN1_OCTET_STRING_free(ip);
    }
    if (p->key_bits != 0 && (p->key_bits < 2048 || p->key_bits > 8192)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "key size must be 2048..8192 bits");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    if (p->validity_days > 36500) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "validity must be at most 36500 days");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    if (p->file_name && !file_name_ok(p->file_name)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "file name must be 1..64 of [A-Za-z0-9._-]");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    return UAS_GOOD;
}

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static bool push_name(GENERAL_NAMES *gens, int type, const char *text)
{
    GENERAL_NAME *g = GENERAL_NAME_new();
    if (!g)
        return false;
    if (type == GEN_IPADD) {
        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(text);
        if (!ip) {
            GENERAL_NAME_free(g);
            return false;
        }
        GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
    } else {
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        if (!s || !ASN1_STRING_set(s, text, (int)strlen(text))) {
            ASN1_IA5STRING_free(s);
            GENERAL_NAME_free(g);
            return false;
        }
        GENERAL_NAME_set0_value(g, type, s);
    }
    if (!sk_GENERAL_NAME_push(gens, g)) {
        GENERAL_NAME_free(g);
        return false;
    }
    return true;
}

/* subjectAltName built from GENERAL_NAMEs rather than a config string, so
 * that commas or colons in the URI cannot inject other names. */
static bool add_san(X509 *x, const uas_pki_create_params *p)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    bool ok = gens && push_name(gens, GEN_URI, p->application_uri);
    for (size_t i = 0; ok && i < p->dns_count; i++)
        ok = push_name(gens, GEN_DNS, p->dns_names[i]);
    for (size_t i = 0; ok && i < p->ip_count; i++)
        ok = push_name(gens, GEN_IPADD, p->ip_addresses[i]);
    ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1;
    GENERAL_NAMES_free(gens);
    return ok;
}

static bool set_serial(X509 *x)
{
    uint8_t raw[20];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return false;
    raw[0] &= 0x7f; /* positive */
    raw[0] |= 0x40; /* and 20 bytes long */
    BIGNUM *bn = BN_bin2bn(raw, sizeof(raw), NULL);
    bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok;
}

static const EVP_MD *sign_md(EVP_PKEY *key)
{
    if (EVP_PKEY_is_a(key, "ED25519") || EVP_PKEY_is_a(key, "ED448"))
        return NULL;
    if (EVP_PKEY_is_a(key, "EC") && EVP_PKEY_get_bits(key) > 256)
        return EVP_sha384();
    return EVP_sha256();
}

static X509 *make_cert(EVP_PKEY *key, const uas_pki_create_params *p, uas_datetime now)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    if (!x || !name)
        goto fail;
    time_t t = pki_time_from_datetime(now);
    uint32_t days = p->validity_days ? p->validity_days : DEFAULT_DAYS;
    const char *cn = p->application_name ? p->application_name : "uastack";
    if (X509_set_version(x, X509_VERSION_3) != 1 || !set_serial(x) ||
        !ASN1_TIME_adj(X509_getm_notBefore(x), t, 0, -3600) ||
        !ASN1_TIME_adj(X509_getm_notAfter(x), t, (int)days, 0))
        goto fail;
    if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8, (const unsigned char *)cn,
                                   -1, -1, 0) != 1)
        goto fail;
    if (p->organization &&
        X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
                                   (const unsigned char *)p->organization, -1, -1, 0) != 1)
        goto fail;
    if (p->dns_count > 0 &&
        X509_NAME_add_entry_by_NID(name, NID_domainComponent, MBSTRING_ASC,
                                   (const unsigned char *)p->dns_names[0], -1, -1, 0) != 1)
        goto fail;
    if (X509_set_subject_name(x, name) != 1 || X509_set_issuer_name(x, name) != 1 ||
        X509_set_pubkey(x, key) != 1)
        goto fail;
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (!add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, &ctx, NID_key_usage,
                 EVP_PKEY_is_a(key, "RSA")
                     ? "critical,digitalSignature,nonRepudiation,keyEncipherment,"
                       "dataEncipherment,keyCertSign"
                     : "critical,digitalSignature,nonRepudiation,keyCertSign") ||
        !add_ext(x, &ctx, NID_ext_key_usage, "serverAuth,clientAuth") ||
        !add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        !add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") || !add_san(x, p))
        goto fail;
    /* EdDSA signs the message itself (no digest); ECDSA on a 384-bit
     * curve takes SHA-384. */
    if (X509_sign(x, key, sign_md(key)) <= 0)
        goto fail;
    X509_NAME_free(name);
    return x;
fail:
    uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot make the certificate: %s", pki_ssl_error());
    X509_NAME_free(name);
    X509_free(x);
    return NULL;
}

/* The ECC certificate types (Part 12 / Part 6 names) and their keys. */
static const struct {
    const char *type;
    const char *alg;
    const char *group;
} ecc_types[] = {
    {"nistP256", "EC", "P-256"},
    {"nistP384", "EC", "P-384"},
    {"brainpoolP256r1", "EC", "brainpoolP256r1"},
    {"brainpoolP384r1", "EC", "brainpoolP384r1"},
    {"curve25519", "ED25519", NULL},
    {"curve448", "ED448", NULL},
};

static bool rsa_type(const char *t, uint32_t *bits)
{
    if (!t || !strcmp(t, "rsa"))
        return true;
    if (!strcmp(t, "rsa2048"))
        *bits = 2048;
    else if (!strcmp(t, "rsa3072"))
        *bits = 3072;
    else if (!strcmp(t, "rsa4096"))
        *bits = 4096;
    else
        return false;
    return true;
}

bool uas_pki_key_type_valid(const char *t)
{
    uint32_t bits = 0;
    if (rsa_type(t, &bits))
        return true;
    for (size_t i = 0; i < sizeof(ecc_types) / sizeof(ecc_types[0]); i++)
        if (!strcmp(t, ecc_types[i].type))
            return true;
    return false;
}

static EVP_PKEY *gen_key(const char *t, uint32_t bits)
{
    if (rsa_type(t, &bits))
        return EVP_RSA_gen(bits);
    for (size_t i = 0; i < sizeof(ecc_types) / sizeof(ecc_types[0]); i++) {
        if (strcmp(t, ecc_types[i].type) != 0)
            continue;
        if (ecc_types[i].group)
            return EVP_PKEY_Q_keygen(NULL, NULL, "EC", ecc_types[i].group);
        return EVP_PKEY_Q_keygen(NULL, NULL, ecc_types[i].alg);
    }
    return NULL;
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static uas_status write_key(const char *path, EVP_PKEY *key, bool overwrite)
{
    BIO *b = BIO_new(BIO_s_secmem()); /* cleared when freed */
    if (!b || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1) {
        BIO_free(b);
        uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot encode the key: %s", pki_ssl_error());
        return UAS_BAD_INTERNAL_ERROR;
    }
    char *pem = NULL;
    long n = BIO_get_mem_data(b, &pem);
    uas_status st = pki_write_file(path, pem, (size_t)n, 0600, !overwrite);
    BIO_free(b);
    return st;
}

uas_status uas_pki_create_own(uas_pki_store *s, const uas_pki_create_params *p, uas_datetime now)
{
    if (!s || !p)
        return UAS_BAD_INVALID_ARGUMENT;
    uas_status st = check_params(p);
    if (st != UAS_GOOD)
        return st;
    char name[80], cert_path[PKI_PATH_MAX], key_path[PKI_PATH_MAX];
    if (!own_name(p, name, sizeof(name)) ||
        !own_paths(s, name, cert_path, key_path, sizeof(cert_path)))
        return UAS_BAD_INVALID_ARGUMENT;
    if (!p->overwrite && (file_exists(cert_path) || file_exists(key_path))) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s or %s exists already", cert_path, key_path);
        return UAS_BAD_ENTRY_EXISTS;
    }
    uint32_t bits = p->key_bits ? p->key_bits : DEFAULT_BITS;
    const char *type = p->key_type ? p->key_type : "rsa";
    if (!uas_pki_key_type_valid(type)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG,
                "unknown key type '%.32s' (rsa2048, rsa3072, rsa4096, nistP256, nistP384, "
                "brainpoolP256r1, brainpoolP384r1, curve25519, curve448)",
                type);
        return UAS_BAD_INVALID_ARGUMENT;
    }
    EVP_PKEY *key = gen_key(type, bits);
    if (!key) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s key generation failed: %s", type, pki_ssl_error());
        return UAS_BAD_INTERNAL_ERROR;
    }
    rsa_type(type, &bits);
    X509 *x = make_cert(key, p, now);
    pki_buf der = {NULL, 0, 0};
    if (!x) {
        st = UAS_BAD_INTERNAL_ERROR;
        goto out;
    }
    st = pki_x509_der(x, &der);
    if (st != UAS_GOOD)
        goto out;
    /* Key first: a certificate must never exist without its key. */
    st = write_key(key_path, key, p->overwrite);
    if (st != UAS_GOOD)
        goto out;
    st = pki_write_file(cert_path, der.data, der.len, 0644, !p->overwrite);
    if (st != UAS_GOOD) {
        unlink(key_path);
        goto out;
    }
    char tp[UAS_PKI_THUMBPRINT_HEX];
    pki_x509_thumbprint(x, tp);
    if (EVP_PKEY_is_a(key, "RSA"))
        uas_log(UAS_LOG_INFO, PKI_LOG, "created %s (RSA %u, thumbprint %s) and %s", cert_path, bits,
                tp, key_path);
    else
        uas_log(UAS_LOG_INFO, PKI_LOG, "created %s (%s, thumbprint %s) and %s", cert_path, type, tp,
                key_path);
out:
    pki_buf_free(&der, false);
    X509_free(x);
    EVP_PKEY_free(key);
    return st;
}

static uas_status to_bytes(const uint8_t *data, size_t len, uas_bytestring *out)
{
    out->data = uas_malloc(len);
    if (!out->data)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(out->data, data, len);
    out->length = len;
    return UAS_GOOD;
}

static EVP_PKEY *read_key(const char *path, uas_status *st)
{
    pki_buf b;
    *st = pki_read_file(path, PKI_MAX_CERT_FILE, &b);
    if (*st != UAS_GOOD)
        return NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && (sb.st_mode & 077) != 0)
        uas_log(UAS_LOG_WARN, PKI_LOG, "private key %s is readable by group or others (mode %03o)",
                path, (unsigned)(sb.st_mode & 0777));
    EVP_PKEY *key = NULL;
    BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
    if (bio)
        key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    pki_buf_free(&b, true);
    if (!key) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s is not a PEM private key: %s", path, pki_ssl_error());
        *st = UAS_BAD_CERTIFICATE_INVALID;
    }
    return key;
}

uas_status uas_pki_load_own(uas_pki_store *s, const char *name, uas_bytestring *cert,
                            uas_bytestring *key)
{
    if (cert) {
        cert->data = NULL;
        cert->length = 0;
    }
    if (key) {
        key->data = NULL;
        key->length = 0;
    }
    char cert_path[PKI_PATH_MAX], key_path[PKI_PATH_MAX];
    if (!s || !name || !file_name_ok(name) ||
        !own_paths(s, name, cert_path, key_path, sizeof(cert_path)))
        return UAS_BAD_INVALID_ARGUMENT;
    pki_buf b;
    uas_status st = pki_read_file(cert_path, PKI_MAX_CERT_FILE, &b);
    if (st != UAS_GOOD)
        return st;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (!x) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s is not a certificate", cert_path);
        return UAS_BAD_CERTIFICATE_INVALID;
    }
    EVP_PKEY *pk = read_key(key_path, &st);
    pki_buf der = {NULL, 0, 0};
    unsigned char *kder = NULL;
    int klen = 0;
    if (!pk)
        goto out;
    if (X509_check_private_key(x, pk) != 1) {
        ERR_clear_error();
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s does not belong to %s", key_path, cert_path);
        st = UAS_BAD_CERTIFICATE_INVALID;
        goto out;
    }
    time_t now = time(NULL);
    if (X509_cmp_time(X509_get0_notAfter(x), &now) < 0)
        uas_log(UAS_LOG_WARN, PKI_LOG, "own certificate %s has expired; peers will refuse it",
                cert_path);
    if (cert) {
        st = pki_x509_der(x, &der);
        if (st == UAS_GOOD)
            st = to_bytes(der.data, der.len, cert);
        if (st != UAS_GOOD)
            goto out;
    }
    if (key) {
        klen = i2d_PrivateKey(pk, &kder);
        if (klen <= 0) {
            st = UAS_BAD_INTERNAL_ERROR;
            goto out;
        }
        st = to_bytes(kder, (size_t)klen, key);
    }
out:
    if (st != UAS_GOOD) {
        uas_pki_bytes_free(cert);
        uas_pki_bytes_free(key);
    }
    if (kder)
        OPENSSL_clear_free(kder, (size_t)klen);
    pki_buf_free(&der, false);
    EVP_PKEY_free(pk);
    X509_free(x);
    ERR_clear_error();
    return st;
}

/* A store holding one own certificate under another name (made by `uapki
 * create --name`, or for another application name) serves with it rather
 * than gaining a second one the operator did not ask for. With several,
 * which one is meant is unknown: NotFound, and the named one is made. */
static uas_status load_only_own(uas_pki_store *s, const char *wanted, uas_bytestring *cert,
                                uas_bytestring *key)
{
    uas_pki_cert_info *items = NULL;
    size_t n = 0;
    uas_status st = uas_pki_list(s, UAS_PKI_OWN, &items, &n);
    if (st != UAS_GOOD || n == 0) {
        uas_pki_list_free(items, n);
        return st == UAS_GOOD ? UAS_BAD_NOT_FOUND : st;
    }
    if (n > 1) {
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "own/certs holds %zu certificates and none is named %s.der: making that one "
                "(pass the one to use as certificate and private_key)",
                n, wanted);
        uas_pki_list_free(items, n);
        return UAS_BAD_NOT_FOUND;
    }
    char name[256];
    snprintf(name, sizeof(name), "%s", items[0].file);
    size_t len = strlen(name);
    if (len > 4 && !strcmp(name + len - 4, ".der"))
        name[len - 4] = 0;
    uas_pki_list_free(items, n);
    st = uas_pki_load_own(s, name, cert, key);
    if (st == UAS_GOOD)
        uas_log(UAS_LOG_INFO, PKI_LOG,
                "using own/certs/%s.der, the store's only own certificate (the application "
                "name would name it %s.der)",
                name, wanted);
    return st;
}

uas_status uas_pki_ensure_own(uas_pki_store *s, const uas_pki_create_params *p, uas_datetime now,
                              uas_bytestring *cert, uas_bytestring *key)
{
    if (!s || !p)
        return UAS_BAD_INVALID_ARGUMENT;
    char name[80];
    if (!own_name(p, name, sizeof(name)))
        return UAS_BAD_INVALID_ARGUMENT;
    uas_status st = uas_pki_load_own(s, name, cert, key);
    if (st != UAS_BAD_NOT_FOUND)
        return st;
    /* Only a name derived from the application name gives way; a file name
     * the caller chose means that file. */
    if (!p->file_name) {
        st = load_only_own(s, name, cert, key);
        if (st != UAS_BAD_NOT_FOUND)
            return st;
    }
    uas_pki_create_params q = *p;
    q.file_name = name;
    q.overwrite = false;
    st = uas_pki_create_own(s, &q, now);
    if (st != UAS_GOOD)
        return st;
    return uas_pki_load_own(s, name, cert, key);
}
