/* Test identities: see helper_keys.h. */
#ifdef UAS_ENABLE_ENCRYPTION

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "helper_keys.h"

#define ENV_DIR "UAS_TEST_KEYS_DIR"

static const unsigned rsa_bits[TK_COUNT] = {
    [TK_RSA2048_A] = 2048, [TK_RSA2048_B] = 2048, [TK_RSA2048_C] = 2048,
    [TK_RSA4096] = 4096,   [TK_RSA1024] = 1024,   [TK_RSA512] = 512,
};

static test_key cache[TK_COUNT];
static char owned_dir[64]; /* set in the runner process that made the folder */

static void die(const char *what)
{
    fprintf(stderr, "helper_keys: %s\n", what);
    abort();
}

static EVP_PKEY *generate_key(test_key_id id)
{
    EVP_PKEY *k = id == TK_EC256 ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                                 : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)rsa_bits[id]);
    if (!k)
        die("key generation failed");
    return k;
}

static X509 *self_signed(EVP_PKEY *k, test_key_id id)
{
    X509 *x = X509_new();
    char cn[32];
    snprintf(cn, sizeof(cn), "uastack test %d", (int)id);
    if (!x || X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1000 + (long)id) != 1 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365) || X509_set_pubkey(x, k) != 1)
        die("certificate fields");
    X509_NAME *name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(x, name) != 1 || X509_sign(x, k, EVP_sha256()) <= 0)
        die("certificate signature");
    return x;
}

static uint8_t *der_cert(X509 *x, size_t *len)
{
    int n = i2d_X509(x, NULL);
    uint8_t *b = malloc((size_t)n), *p = b;
    if (n <= 0 || !b || i2d_X509(x, &p) != n)
        die("certificate encoding");
    *len = (size_t)n;
    return b;
}

static uint8_t *der_key(EVP_PKEY *k, size_t *len)
{
    int n = i2d_PrivateKey(k, NULL);
    uint8_t *b = malloc((size_t)n), *p = b;
    if (n <= 0 || !b || i2d_PrivateKey(k, &p) != n)
        die("key encoding");
    *len = (size_t)n;
    return b;
}

static uint8_t *pem_key(EVP_PKEY *k, size_t *len)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio || PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) != 1)
        die("PEM encoding");
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b)
        die("out of memory");
    memcpy(b, data, (size_t)n);
    b[n] = 0;
    *len = (size_t)n;
    BIO_free(bio);
    return b;
}

static void path_of(char *out, size_t cap, const char *dir, test_key_id id, const char *ext)
{
    snprintf(out, cap, "%s/k%d.%s", dir, (int)id, ext);
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0)
        die("cannot write the key cache");
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *b = malloc(65536);
    *n = b ? fread(b, 1, 65536, f) : 0;
    fclose(f);
    return b;
}

static void fill(test_key_id id, EVP_PKEY *k, uint8_t *cert, size_t cert_len)
{
    test_key *t = &cache[id];
    t->key = k;
    t->cert = cert;
    t->cert_len = cert_len;
    t->key_der = der_key(k, &t->key_len);
    t->key_pem = pem_key(k, &t->key_pem_len);
}

static void generate(test_key_id id)
{
    EVP_PKEY *k = generate_key(id);
    X509 *x = self_signed(k, id);
    size_t n;
    uint8_t *cert = der_cert(x, &n);
    X509_free(x);
    fill(id, k, cert, n);
}

void test_keys_prepare(void)
{
    strcpy(owned_dir, "/tmp/uas-testkeys-XXXXXX");
    if (!mkdtemp(owned_dir))
        die("mkdtemp");
    char path[128];
    for (int i = 0; i < TK_COUNT; i++) {
        generate((test_key_id)i);
        path_of(path, sizeof(path), owned_dir, (test_key_id)i, "crt");
        write_file(path, cache[i].cert, cache[i].cert_len);
        path_of(path, sizeof(path), owned_dir, (test_key_id)i, "key");
        write_file(path, cache[i].key_der, cache[i].key_len);
    }
    setenv(ENV_DIR, owned_dir, 1);
}

void test_keys_cleanup(void)
{
    if (!owned_dir[0])
        return;
    char path[128];
    for (int i = 0; i < TK_COUNT; i++) {
        path_of(path, sizeof(path), owned_dir, (test_key_id)i, "crt");
        unlink(path);
        path_of(path, sizeof(path), owned_dir, (test_key_id)i, "key");
        unlink(path);
    }
    rmdir(owned_dir);
    owned_dir[0] = 0;
}

const test_key *test_key_get(test_key_id id)
{
    test_key *t = &cache[id];
    if (t->key)
        return t;
    const char *dir = getenv(ENV_DIR);
    if (dir) {
        char path[128];
        size_t cn = 0, kn = 0;
        path_of(path, sizeof(path), dir, id, "crt");
        uint8_t *cert = read_file(path, &cn);
        path_of(path, sizeof(path), dir, id, "key");
        uint8_t *key = read_file(path, &kn);
        const unsigned char *p = key;
        EVP_PKEY *k = key ? d2i_AutoPrivateKey(NULL, &p, (long)kn) : NULL;
        free(key);
        if (cert && k) {
            fill(id, k, cert, cn);
            return t;
        }
        free(cert);
        EVP_PKEY_free(k);
    }
    generate(id);
    return t;
}

#endif
