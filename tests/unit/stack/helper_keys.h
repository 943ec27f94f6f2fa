/* RSA (and one EC) keys with self-signed certificates for the crypto and
 * security policy tests, generated with OpenSSL's EVP and X509 APIs.
 *
 * Criterion runs every test in a fresh process, so generating keys in each
 * test would cost seconds (a 4096-bit key under ASan). Instead a test file's
 * ReportHook(PRE_ALL) calls test_keys_prepare() in the runner process: it
 * generates every identity once, writes them (DER) to a private temporary
 * folder and names that folder in an environment variable the test
 * processes inherit. test_key_get() loads from there (once per process), or
 * generates in-process when run without the runner (--no-fork, a debugger).
 * ReportHook(POST_ALL) calls test_keys_cleanup(). */
#ifndef UAS_TEST_HELPER_KEYS_H
#define UAS_TEST_HELPER_KEYS_H

#ifdef UAS_ENABLE_ENCRYPTION

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

typedef enum test_key_id {
    TK_RSA2048_A = 0, /* the "server" */
    TK_RSA2048_B,     /* the "client" */
    TK_RSA2048_C,     /* a third party */
    TK_RSA4096,
    TK_RSA1024,
    TK_RSA512,
    TK_EC256, /* not RSA */
    TK_COUNT,
} test_key_id;

typedef struct test_key {
    EVP_PKEY *key;
    uint8_t *cert; /* DER of the self-signed certificate */
    size_t cert_len;
    uint8_t *key_der; /* DER of the private key (PKCS#1 for RSA) */
    size_t key_len;
    uint8_t *key_pem; /* PEM (PKCS#8) of the private key, NUL-terminated */
    size_t key_pem_len;
} test_key;

void test_keys_prepare(void);
void test_keys_cleanup(void);
const test_key *test_key_get(test_key_id id);

#endif
#endif
