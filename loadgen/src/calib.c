/* The machine's cryptography speed for the run record: one RSA-2048
 * signature, and single-core SHA-256 and AES-256-CBC throughput. Hosts of
 * the same CPU name differ by 4x in RSA signs, so a record without them
 * cannot be compared with one from another machine. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include <ua/loadgen.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/evp.h>
#include <stdlib.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of 11 signatures of 32 bytes with SHA-256 and PKCS#1 v1.5, after
 * one to warm up, in microseconds; 0 when OpenSSL refuses. */
static double rsa2048_sign_us(void)
{
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    if (!key)
        return 0;
    unsigned char msg[32] = {1}, sig[512];
    double t[11];
    int ok = 1;
    for (int i = -1; i < 11 && ok; i++) {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        size_t len = sizeof(sig);
        double t0 = now_s();
        ok = md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
             EVP_DigestSign(md, sig, &len, msg, sizeof(msg)) == 1;
        if (i >= 0)
            t[i] = (now_s() - t0) * 1e6;
        EVP_MD_CTX_free(md);
    }
    EVP_PKEY_free(key);
    if (!ok)
        return 0;
    qsort(t, 11, sizeof(t[0]), cmp_double);
    return t[5];
}

/* MB/s over 64 MiB in 64 KiB pieces, the best of three passes. */
#define PIECE  (64 * 1024)
#define PIECES 1024

static double sha256_mbps(void)
{
    static unsigned char buf[PIECE];
    unsigned char out[EVP_MAX_MD_SIZE];
    double best = 0;
    for (int pass = 0; pass < 3; pass++) {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
            EVP_MD_CTX_free(md);
            return 0;
        }
        double t0 = now_s();
        for (int i = 0; i < PIECES; i++)
            EVP_DigestUpdate(md, buf, sizeof(buf));
        EVP_DigestFinal_ex(md, out, NULL);
        double mbps = (double)PIECE * PIECES / 1e6 / (now_s() - t0);
        EVP_MD_CTX_free(md);
        best = mbps > best ? mbps : best;
    }
    return best;
}

static double aes256cbc_mbps(void)
{
    static unsigned char in[PIECE], out[PIECE + 32];
    unsigned char key[32] = {7}, iv[16] = {9};
    double best = 0;
    for (int pass = 0; pass < 3; pass++) {
        EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        if (!c || EVP_EncryptInit_ex(c, EVP_aes_256_cbc(), NULL, key, iv) != 1) {
            EVP_CIPHER_CTX_free(c);
            return 0;
        }
        EVP_CIPHER_CTX_set_padding(c, 0);
        int n;
        double t0 = now_s();
        for (int i = 0; i < PIECES; i++)
            EVP_EncryptUpdate(c, out, &n, in, (int)sizeof(in));
        double mbps = (double)PIECE * PIECES / 1e6 / (now_s() - t0);
        EVP_CIPHER_CTX_free(c);
        best = mbps > best ? mbps : best;
    }
    return best;
}
#endif

void uas_run_record_calibrate(uas_run_record *r)
{
    r->rsa2048_sign_us = r->sha256_mbps = r->aes256cbc_mbps = 0;
#ifdef UAS_ENABLE_ENCRYPTION
    r->rsa2048_sign_us = rsa2048_sign_us();
    r->sha256_mbps = sha256_mbps();
    r->aes256cbc_mbps = aes256cbc_mbps();
#endif
}

int uas_run_record_crypto_text(const uas_run_record *r, char *buf, size_t len)
{
    if (r->rsa2048_sign_us <= 0)
        return snprintf(buf, len, "crypto speed not measured");
    return snprintf(buf, len, "RSA-2048 sign %.0f µs, SHA-256 %.0f MB/s, AES-256-CBC %.0f MB/s",
                    r->rsa2048_sign_us, r->sha256_mbps, r->aes256cbc_mbps);
}
