/* Test material for the PKI tests: certificates, chains and CRLs made with
 * OpenSSL in temporary folders. */
#ifndef HELPER_PKI_H
#define HELPER_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <ua/pki.h>

typedef struct tcert {
    X509 *x;
    EVP_PKEY *key;
} tcert;

typedef struct tcert_opts {
    const char *cn;
    const tcert *issuer; /* NULL: self-signed */
    bool ca;             /* basicConstraints CA:TRUE, keyUsage keyCertSign+cRLSign */
    int pathlen;         /* with ca; -1 (or 0 when not set explicitly): see pathlen_set */
    bool pathlen_set;
    const char *key_usage;     /* NULL: default for leaf/CA; "" none */
    const char *ext_key_usage; /* NULL: leaf serverAuth,clientAuth, CA none; "" none */
    const char *uri;           /* subjectAltName URI; NULL: "urn:test:app" for leaves */
    bool no_uri;
    long not_before_days;         /* offset from now; 0 means -1 */
    long not_after_days;          /* offset from now; 0 means +365 */
    int bits;                     /* 0: 2048 */
    EVP_PKEY *key;                /* reuse this key (reference taken) */
    const EVP_MD *md;             /* NULL: SHA-256 */
    long serial;                  /* 0: random */
    bool not_self_signed_ku;      /* self-signed leaf without keyCertSign */
    const char *name_constraints; /* with ca, e.g. "critical,permitted;DNS:example.com" */
} tcert_opts;

tcert th_cert(const tcert_opts *o);
void th_free(tcert *c);
/* DER of x (malloc'd); *len receives the size. */
uint8_t *th_der(X509 *x, size_t *len);
void th_write_der(const char *dir, const char *name, X509 *x);
void th_write_pem(const char *dir, const char *name, X509 *x);
/* CRL of ca revoking the certificates of revoked[0..n-1]; last update now +
 * last_days (default 0), next update now + next_days (0 means +30). */
X509_CRL *th_crl(const tcert *ca, const tcert *const *revoked, int n, long last_days,
                 long next_days);
uint8_t *th_crl_der(X509_CRL *crl, size_t *len);
void th_write_crl(const char *dir, const char *name, X509_CRL *crl);

/* A fresh temporary folder (free the string with th_rmrf). */
char *th_tmpdir(void);
void th_rmrf(char *dir);
int th_count_files(const char *dir);
/* "<store>/<rel>" in a static rotating buffer. */
const char *th_path(uas_pki_store *s, const char *rel);
/* Validates with the usual parameters: client usage, 2048..4096, now. */
uas_status th_validate(uas_pki_store *s, X509 *x, const char *uri, uas_pki_verdict *v);
char *th_thumbprint(X509 *x); /* static buffer */

#endif
