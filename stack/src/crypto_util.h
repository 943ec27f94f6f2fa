/* Cryptographic primitives of the RSA security policies, over OpenSSL 3
 * (EVP; for HMAC the low-level SHA-1/SHA-256 functions, see crypto_util.c)
 * and libsodium (zeroing, randomness).
 *
 * Every function returns UAS_GOOD or one Bad code; none leaves an entry on
 * OpenSSL's error queue. Verification and decryption failures are always
 * UAS_BAD_SECURITY_CHECKS_FAILED, whatever went wrong inside, so callers
 * cannot leak the reason by accident.
 *
 * The symmetric path of a channel allocates nothing per chunk. Each token
 * keeps, per direction, an HMAC key whose pad blocks are already absorbed
 * (uas_hmac_key: two digest states in plain memory, copied per message),
 * so a MAC costs only the compressions of the message and of the inner
 * digest. AES-CBC, whose key schedule is the expensive part of keying, has
 * a context per token and direction, keyed once when the token's keys are
 * derived (uas_crypto_aes_cbc_keyed), about 600 bytes of OpenSSL memory
 * each. The one-shot uas_crypto_aes_cbc keeps per-thread contexts and keys
 * them on every call. */
#ifndef UAS_CRYPTO_UTIL_H
#define UAS_CRYPTO_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <ua/status.h>

typedef enum uas_digest {
    UAS_DIGEST_SHA1 = 0,
    UAS_DIGEST_SHA256 = 1,
} uas_digest;

enum {
    UAS_SHA1_LEN = 20,
    UAS_SHA256_LEN = 32,
    UAS_MAX_DIGEST_LEN = 32,
    UAS_AES_BLOCK = 16,
    UAS_RSA_MAX_BYTES = 1024, /* 8192-bit modulus: the largest key handled */
};

/* Asymmetric signature algorithms (Part 7 AsymmetricSignatureAlgorithm). */
typedef enum uas_rsa_sig {
    UAS_RSA_PKCS1_SHA1 = 0,   /* RSA-PKCS15-SHA1 */
    UAS_RSA_PKCS1_SHA256 = 1, /* RSA-PKCS15-SHA2-256 */
    UAS_RSA_PSS_SHA256 = 2,   /* RSA-PSS-SHA2-256, MGF1-SHA256, 32-byte salt */
} uas_rsa_sig;

/* Asymmetric encryption algorithms (Part 7 AsymmetricEncryptionAlgorithm). */
typedef enum uas_rsa_enc {
    UAS_RSA_OAEP_SHA1 = 0,   /* RSA-OAEP-SHA1 (MGF1-SHA1) */
    UAS_RSA_OAEP_SHA256 = 1, /* RSA-OAEP-SHA2-256 (MGF1-SHA256) */
} uas_rsa_enc;

static inline size_t uas_digest_len(uas_digest d)
{
    return d == UAS_DIGEST_SHA1 ? UAS_SHA1_LEN : UAS_SHA256_LEN;
}

/* One-time setup (algorithm fetches, sodium_init); every function below
 * calls it itself, so calling it is optional. Thread-safe. Returns
 * BadInternalError when OpenSSL or libsodium cannot be initialised. */
uas_status uas_crypto_init(void);

/* ---- memory and randomness ---- */

void uas_crypto_zero(void *p, size_t n);
/* Constant-time comparison; true when the n bytes are equal. */
bool uas_crypto_ct_equal(const void *a, const void *b, size_t n);
/* Cryptographically strong random bytes (libsodium). */
uas_status uas_crypto_random(void *out, size_t n);

/* ---- hashes, HMAC, key derivation ---- */

/* out receives uas_digest_len(d) bytes (SHA1 of a DER certificate is the
 * thumbprint of Part 6, 6.7.2.3). */
uas_status uas_crypto_digest(uas_digest d, const uint8_t *data, size_t len, uint8_t *out);

/* An HMAC key ready for use: the digest states after the ipad and the
 * opad block of RFC 2104. Each MAC copies them, which saves the two pad
 * compressions that keying on every call costs (2 of the 5 of a 100-byte
 * message) and allocates nothing. A secret as good as the key: free it
 * with uas_crypto_hmac_key_clear (or any zeroing of its memory). The
 * layout is private to crypto_util.c (it holds OpenSSL's SHA_CTX or
 * SHA256_CTX, whose headers the rest of the stack does not see). */
enum { UAS_HMAC_STATE_MAX = 112 };
typedef struct uas_hmac_key {
    _Alignas(8) unsigned char inner[UAS_HMAC_STATE_MAX];
    _Alignas(8) unsigned char outer[UAS_HMAC_STATE_MAX];
    uas_digest d;
    bool ready; /* false until set, and after a failed set or a clear */
} uas_hmac_key;

/* Any key length (a key longer than the 64-byte block is replaced by its
 * digest). BadInvalidArgument for an unknown digest, BadInternalError
 * when the start-up self-test failed. */
uas_status uas_crypto_hmac_key_set(uas_hmac_key *hk, uas_digest d, const uint8_t *key,
                                   size_t key_len);
/* Zeroes hk. */
void uas_crypto_hmac_key_clear(uas_hmac_key *hk);
/* HMAC of a | b (b may be NULL) into uas_digest_len(hk->d) bytes of out;
 * BadInvalidArgument when hk is not set. */
uas_status uas_crypto_hmac_keyed(const uas_hmac_key *hk, const uint8_t *a, size_t a_len,
                                 const uint8_t *b, size_t b_len, uint8_t *out);
/* UAS_GOOD when mac is the HMAC of data, else BadSecurityChecksFailed
 * (compared in constant time). */
uas_status uas_crypto_hmac_keyed_verify(const uas_hmac_key *hk, const uint8_t *data, size_t len,
                                        const uint8_t *mac);

/* HMAC over the concatenation of up to two pieces (b may be NULL), keyed
 * for this call only. */
uas_status uas_crypto_hmac(uas_digest d, const uint8_t *key, size_t key_len, const uint8_t *a,
                           size_t a_len, const uint8_t *b, size_t b_len, uint8_t *out);

/* Computes the HMAC of data and compares it in constant time with mac
 * (uas_digest_len(d) bytes): UAS_GOOD or BadSecurityChecksFailed. */
uas_status uas_crypto_hmac_verify(uas_digest d, const uint8_t *key, size_t key_len,
                                  const uint8_t *data, size_t len, const uint8_t *mac);

/* P_hash of RFC 5246 section 5 (the PRF of Part 6, 6.7.5 without a label):
 * A(0) = seed, A(i) = HMAC(secret, A(i-1)),
 * output = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ...
 * truncated to len bytes. P_SHA256 with d = SHA256, P_SHA1 with SHA1. */
uas_status uas_crypto_p_hash(uas_digest d, const uint8_t *secret, size_t secret_len,
                             const uint8_t *seed, size_t seed_len, uint8_t *out, size_t len);

/* ---- AES-CBC without padding ---- */

/* Encrypts or decrypts len bytes in place; len must be a multiple of 16,
 * key_len 16 (AES-128) or 32 (AES-256). BadInvalidArgument otherwise. */
uas_status uas_crypto_aes_cbc(bool encrypt, const uint8_t *key, size_t key_len,
                              const uint8_t iv[UAS_AES_BLOCK], uint8_t *data, size_t len);

/* AES-CBC keyed once for one direction (the keys of one security token),
 * so that a chunk costs neither an allocation nor a key schedule nor even
 * a re-initialisation: see uas_crypto_aes_cbc_run. */
typedef struct uas_aes_cbc {
    EVP_CIPHER_CTX *ctx; /* NULL until keyed */
    /* The CBC state the context holds: the last ciphertext block it went
     * through (zero after keying). Public data, like every ciphertext. */
    uint8_t chain[UAS_AES_BLOCK];
    bool chain_lost; /* an OpenSSL call failed: start over from an IV */
    bool encrypt;
} uas_aes_cbc;

/* key_len 16 or 32 (BadInvalidArgument otherwise); BadOutOfMemory. */
uas_status uas_crypto_aes_cbc_keyed(uas_aes_cbc *c, bool encrypt, const uint8_t *key,
                                    size_t key_len);
/* Frees the context, which wipes the key schedule, and zeroes c. */
void uas_crypto_aes_cbc_free(uas_aes_cbc *c);
/* Encrypts or decrypts (as keyed) len bytes in place as CBC from iv; len
 * must be a multiple of 16. BadInvalidArgument, BadInternalError. */
uas_status uas_crypto_aes_cbc_run(uas_aes_cbc *c, const uint8_t iv[UAS_AES_BLOCK], uint8_t *data,
                                  size_t len);

/* ---- RSA ---- */

/* Modulus size in bytes / bits; 0 when the key is not RSA. */
size_t uas_crypto_rsa_size(const EVP_PKEY *key);
uint32_t uas_crypto_rsa_bits(const EVP_PKEY *key);
/* OAEP overhead per block: 2 * hash length + 2 (42 for SHA1, 66 for SHA256). */
size_t uas_crypto_oaep_overhead(uas_rsa_enc e);
/* Plaintext bytes per encrypted block: key size minus the OAEP overhead. */
size_t uas_crypto_rsa_plain_block(const EVP_PKEY *key, uas_rsa_enc e);

/* Signs data with a private key; sig_len must be the key's size and
 * receives exactly that many bytes. */
uas_status uas_crypto_rsa_sign(uas_rsa_sig alg, EVP_PKEY *priv, const uint8_t *data, size_t len,
                               uint8_t *sig, size_t sig_len);
/* UAS_GOOD or BadSecurityChecksFailed (wrong length, bad signature). */
uas_status uas_crypto_rsa_verify(uas_rsa_sig alg, EVP_PKEY *pub, const uint8_t *data, size_t len,
                                 const uint8_t *sig, size_t sig_len);

/* Encrypts len bytes in blocks of uas_crypto_rsa_plain_block() bytes (the
 * last may be shorter) into blocks of the key's size. out may be the same
 * pointer as in (the buffer then needs room for the ciphertext); no other
 * overlap is allowed. *out_len receives blocks * key size. */
uas_status uas_crypto_rsa_encrypt(uas_rsa_enc e, EVP_PKEY *pub, const uint8_t *in, size_t len,
                                  uint8_t *out, size_t out_cap, size_t *out_len);
/* Decrypts len bytes (a multiple of the key's size) block by block; the
 * plaintexts are written one after another to out, which may be the same
 * pointer as in. Every block is processed even after one fails, and any
 * failure (length, OAEP decoding) gives BadSecurityChecksFailed with
 * *out_len 0, so the time and the answer do not depend on what went
 * wrong. */
uas_status uas_crypto_rsa_decrypt(uas_rsa_enc e, EVP_PKEY *priv, const uint8_t *in, size_t len,
                                  uint8_t *out, size_t out_cap, size_t *out_len);

/* ---- keys and certificates ---- */

/* A private key in DER (PKCS#1 or PKCS#8) or PEM (unencrypted). The
 * caller frees it with EVP_PKEY_free. BadInvalidArgument when unreadable. */
uas_status uas_crypto_load_private_key(const uint8_t *data, size_t len, EVP_PKEY **out);
/* The length of the first DER element of der (a certificate of a chain
 * given one after another), from its header alone; BadCertificateInvalid
 * when the header is not a SEQUENCE that fits. */
uas_status uas_crypto_cert_len(const uint8_t *der, size_t len, size_t *der_len);
/* The public key of exactly these bytes: a DER certificate (cert) or a
 * DER SubjectPublicKeyInfo. A new reference (EVP_PKEY_free), or NULL when
 * they do not decode as one whole element. Repeated inputs come from a
 * per-thread cache of the last few (keycache.h). */
EVP_PKEY *uas_crypto_public_key(const uint8_t *der, size_t len, bool cert);
/* The first certificate of a DER ByteString (a single certificate or a
 * chain of them one after another). *der_len (may be NULL) receives the
 * length of that certificate's encoding. BadCertificateInvalid when it is
 * not one. */
uas_status uas_crypto_load_cert(const uint8_t *der, size_t len, X509 **out, size_t *der_len);

#endif
