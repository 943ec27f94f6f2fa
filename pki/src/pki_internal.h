/* Internals shared by the PKI sources: file helpers, OpenSSL helpers and the
 * store structure. */
#ifndef UAS_PKI_INTERNAL_H
#define UAS_PKI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/x509.h>

#include <ua/pki.h>

#define PKI_LOG "pki"

/* Largest certificate and CRL files read. */
#define PKI_MAX_CERT_FILE (256u * 1024u)
#define PKI_MAX_CRL_FILE  (8u * 1024u * 1024u)
/* Most files looked at in one folder. */
#define PKI_MAX_FOLDER_FILES 10000u
#define PKI_PATH_MAX         4096u

typedef enum pki_dir {
    PKI_DIR_OWN_CERTS = 0,
    PKI_DIR_TRUSTED_CERTS,
    PKI_DIR_ISSUERS_CERTS,
    PKI_DIR_REJECTED_CERTS,
    PKI_DIR_OWN_PRIVATE,
    PKI_DIR_TRUSTED_CRL,
    PKI_DIR_ISSUERS_CRL,
    PKI_DIR_COUNT
} pki_dir;

typedef struct pki_cache pki_cache;
typedef struct pki_rejected pki_rejected;

struct uas_pki_store {
    char *root;
    char *dirs[PKI_DIR_COUNT];
    uas_pki_options opts;
    pki_cache *cache;       /* pki_cache.c */
    pki_rejected *rejected; /* pki_rejected.c: the queue and writer of rejected/certs */
};

/* pki_rejected.c. free stops the writer thread after it drained the queue. */
uas_status pki_rejected_init(uas_pki_store *s);
void pki_rejected_free(uas_pki_store *s);

/* ---- what validations share (pki_cache.c; thread-safe) ---- */

enum { PKI_SNAPSHOT_DIRS = 4, PKI_VERDICT_KEY = 32 };
typedef struct pki_snapshot pki_snapshot;

uas_status pki_cache_init(uas_pki_store *s);
void pki_cache_free(uas_pki_store *s);
/* After this process changed the trust list, issuers or CRLs. */
void pki_cache_invalidate(uas_pki_store *s);
/* The current trust list (loaded again when stale), with a reference for
 * the caller; *gen names it for the verdict cache. NULL: out of memory. */
pki_snapshot *pki_snapshot_get(uas_pki_store *s, uint64_t *gen);
void pki_snapshot_put(uas_pki_store *s, pki_snapshot *p);
void pki_snapshot_sources(const pki_snapshot *p, STACK_OF(X509) * *trusted,
                          STACK_OF(X509) * *issuers, STACK_OF(X509_CRL) * *crls);
/* Good verdicts of recent validations, keyed by the certificate and every
 * parameter of the validation except the time. */
void pki_verdict_key(const uint8_t *der, size_t len, const char *uri, uint32_t usage,
                     uint32_t min_bits, uint32_t max_bits, uint8_t key[PKI_VERDICT_KEY]);
bool pki_verdict_lookup(uas_pki_store *s, const uint8_t key[PKI_VERDICT_KEY], uint64_t gen,
                        time_t at, uas_pki_verdict *out);
void pki_verdict_store(uas_pki_store *s, const uint8_t key[PKI_VERDICT_KEY], uint64_t gen,
                       time_t at, const uas_pki_verdict *v);

/* A file's content read into memory (uas_malloc). */
typedef struct pki_buf {
    uint8_t *data;
    size_t len;
    size_t cap; /* allocation size */
} pki_buf;

/* ---- files (pki_file.c) ---- */

/* Reads a whole file of at most max bytes. UAS_BAD_NOT_FOUND, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
 * UAS_BAD_RESOURCE_UNAVAILABLE. */
uas_status pki_read_file(const char *path, size_t max, pki_buf *out);
void pki_buf_free(pki_buf *b, bool wipe);
/* Writes a file with exactly the given mode whatever the umask. exclusive:
 * fails with UAS_BAD_ENTRY_EXISTS when it exists (O_CREAT|O_EXCL), else the
 * file is replaced atomically (temporary file + rename). Data is fsynced. */
uas_status pki_write_file(const char *path, const void *data, size_t len, unsigned mode,
                          bool exclusive);
/* mkdir -p with mode for the directories it creates. */
uas_status pki_mkdirs(const char *path, unsigned mode);
/* snprintf into a heap string (uas_malloc, free with pki_str_free). */
char *pki_strdup_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void pki_str_free(char *s);
/* snprintf that reports truncation as false. */
bool pki_path(char *out, size_t cap, const char *dir, const char *name);

/* Callback for each regular file of a folder (hidden files and temporaries
 * are skipped). Return false to stop. */
typedef bool (*pki_file_fn)(void *ud, const char *path, const char *name);
uas_status pki_for_each_file(const char *dir, pki_file_fn fn, void *ud);

/* ---- OpenSSL helpers (pki_x509.c) ---- */

/* DER or PEM certificate bytes -> X509 (NULL if neither). */
X509 *pki_x509_parse_any(const uint8_t *data, size_t len);
/* Exactly one DER certificate at *p..end; advances *p. */
X509 *pki_x509_parse_der(const uint8_t **p, const uint8_t *end);
X509_CRL *pki_crl_parse_any(const uint8_t *data, size_t len);
/* DER encoding (uas_malloc). */
uas_status pki_x509_der(X509 *x, pki_buf *out);
void pki_x509_thumbprint(X509 *x, char out[UAS_PKI_THUMBPRINT_HEX]);
void pki_hex_upper(const uint8_t *in, size_t n, char *out);
/* uas_datetime <-> time_t (seconds, floor). */
time_t pki_time_from_datetime(uas_datetime t);
uas_datetime pki_datetime_from_asn1(const ASN1_TIME *t);
void pki_x509_info(X509 *x, uas_pki_cert_info *info);
/* First subjectAltName URI into buf ("" if none). */
void pki_x509_first_uri(X509 *x, char *buf, size_t cap);
bool pki_x509_has_uri(X509 *x, const char *uri);
/* Self-issued (subject == issuer) and signed by its own key. */
bool pki_x509_self_signed(X509 *x);
/* CN, sanitised for a file name: "<CN> [<thumbprint>]" + ext. */
void pki_x509_file_name(X509 *x, const char *ext, char *out, size_t cap);
void pki_sanitize_name(const char *in, char *out, size_t cap);
/* Clears the OpenSSL error queue, returning its first reason (static string). */
const char *pki_ssl_error(void);

/* Loads the certificates of a folder into a new stack (never NULL unless
 * out of memory). Files that are not certificates are skipped (WARN). */
STACK_OF(X509) * pki_load_certs(const char *dir);
STACK_OF(X509_CRL) * pki_load_crls(const char *dir);

/* ---- chain building (pki_chain.c) ---- */

#define PKI_CHAIN_LIMIT 32 /* hard cap on uas_pki_options.max_chain */

/* A certificate chain, leaf first; each entry holds a reference. */
typedef struct pki_chain {
    X509 *cert[PKI_CHAIN_LIMIT];
    uint32_t n;
} pki_chain;

/* Where issuers are looked for, in order of preference. */
typedef struct pki_sources {
    STACK_OF(X509) * trusted;
    STACK_OF(X509) * issuers;
    STACK_OF(X509) * sent; /* came with the certificate */
} pki_sources;

/* What one chain building may spend. Every candidate issuer's key passes
 * pki_key_refusal (at most max_ca_key_bits) before its first signature
 * check, an RSA candidate only when its modulus is as long as the
 * signature, and at most max_checks signatures are verified in all
 * (checks counts them, self-signature checks included). */
typedef struct pki_chain_limits {
    uint32_t max;             /* certificates in the chain */
    uint32_t max_ca_key_bits; /* RSA modulus of a CA */
    uint32_t max_checks;      /* signature verifications */
    uint32_t checks;          /* out: verifications done */
} pki_chain_limits;

/* Builds the chain of leaf up to a self-signed root. UAS_GOOD, or
 * UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE (issuer missing or with a refused
 * key, loop, longer than max, more signature checks than allowed),
 * UAS_BAD_CERTIFICATE_INVALID (the leaf's signature does not verify),
 * UAS_BAD_SECURITY_CHECKS_FAILED (an issuer's signature does not verify).
 * The leaf's own key must have passed pki_key_refusal. On failure *depth
 * and reason say where and why; c keeps what was built. */
uas_status pki_chain_build(pki_chain *c, X509 *leaf, const pki_sources *src, pki_chain_limits *lim,
                           time_t now, uint32_t *depth, char *reason, size_t cap);
void pki_chain_free(pki_chain *c);
/* Subject one-liner for messages ("CN=..,O=..", certificate order). */
void pki_x509_subject(X509 *x, char *buf, size_t cap);
void pki_name_oneline(const X509_NAME *n, char *buf, size_t cap);

/* ---- keys (pki_key.c) ---- */

#define PKI_MAX_RSA_EXPONENT_BITS 32
#define PKI_MAX_KEY_BITS          16384 /* any RSA key, whatever the bounds asked */

/* NULL when pk may take part in signature checks: EC/EdDSA, or RSA of
 * min_bits (0: any)..max_bits with an odd public exponent of at most 32
 * bits. Else why not, written into buf. */
const char *pki_key_refusal(EVP_PKEY *pk, uint32_t min_bits, uint32_t max_bits, char *buf,
                            size_t cap);

/* Is the thumbprint text valid (8..40 hex digits)? Upper-cases into out. */
bool pki_thumbprint_arg(const char *in, char out[UAS_PKI_THUMBPRINT_HEX]);

#endif
