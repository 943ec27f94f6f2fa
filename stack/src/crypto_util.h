/* Cryptographic primitives of the RSA security policies, over OpenSSL 3's
 * public, non-deprecated EVP API (EVP_MAC for HMAC, EVP_KDF "TLS1-PRF" for
 * P_hash, EVP_CIPHER for AES-CBC, EVP_PKEY for RSA) and libsodium
 * (randomness, constant-time compares). Secrets are wiped with uas_wipe (ua/mem.h).
 *
 * Every function returns UAS_GOOD or one Bad code; none leaves an entry on
 * OpenSSL's error queue. Verification and decryption failures are always
 * UAS_BAD_SECURITY_CHECKS_FAILED, whatever went wrong inside, so callers
 * cannot leak the reason by accident.
 *
 * The symmetric path of a channel allocates nothing from the stack per
 * chunk. Each token keeps, per direction, an EVP_MAC_CTX keyed once
 * (uas_hmac_key) and an AES-CBC context keyed once (uas_aes_cbc); a chunk
 * re-initialises them without a key (the MAC) or with the new IV only
 * (AES). With OpenSSL 3.0 the MAC's re-initialisation and final each copy
 * a digest state into a newly allocated one inside OpenSSL (2 allocations,
 * 224 bytes with SHA-256, freed at once; docs/Benchmarks.md); the AES
 * re-initialisation allocates nothing. The one-shot uas_crypto_aes_cbc
 * keeps per-thread contexts and keys them on every call. */
#ifndef UAS_CRYPTO_UTIL_H
#define UAS_CRYPTO_UTIL_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <ua/mem.h>
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

/* ---- comparison and randomness ---- */

/* Constant-time comparison (libsodium's sodium_memcmp); true when the n
 * bytes are equal. */
bool uas_crypto_ct_equal(const void *a, const void *b, size_t n);
/* Cryptographically strong random bytes (libsodium). */
uas_status uas_crypto_random(void *out, size_t n);

/* ---- hashes, HMAC, key derivation ---- */

/* out receives uas_digest_len(d) bytes (SHA1 of a DER certificate is the
 * thumbprint of Part 6, 6.7.2.3). */
uas_status uas_crypto_digest(uas_digest d, const uint8_t *data, size_t len, uint8_t *out);

/* An HMAC key ready for use: an EVP_MAC_CTX keyed once (OpenSSL keeps the
 * pad states), re-initialised without a key per MAC. A secret as good as
 * the key: free it with uas_crypto_hmac_key_clear. Used by one thread at a
 * time (the MAC functions take it const but run its context). */
typedef struct uas_hmac_key {
    EVP_MAC_CTX *ctx; /* NULL until set, and after a failed set or a clear */
    uas_digest d;
} uas_hmac_key;

/* Any key length (a key longer than the 64-byte block is replaced by its
 * digest). BadInvalidArgument for an unknown digest, BadOutOfMemory,
 * BadInternalError when OpenSSL refuses. */
uas_status uas_crypto_hmac_key_set(uas_hmac_key *hk, uas_digest d, const uint8_t *key,
                                   size_t key_len);
/* Frees the context (OpenSSL wipes the key it holds) and zeroes hk;
 * harmless on a cleared key. */
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
 * truncated to len bytes. P_SHA256 with d = SHA256, P_SHA1 with SHA1,
 * through OpenSSL's TLS1-PRF. Secret and seed must not be empty and the
 * seed at most UAS_P_HASH_SEED_MAX bytes (TLS1-PRF's limit):
 * BadInvalidArgument otherwise. */
enum { UAS_P_HASH_SEED_MAX = 1024 };
uas_status uas_crypto_p_hash(uas_digest d, const uint8_t *secret, size_t secret_len,
                             const uint8_t *seed, size_t seed_len, uint8_t *out, size_t len);

/* ---- AES-CBC without padding ---- */

/* Encrypts or decrypts len bytes in place; len must be a multiple of 16,
 * key_len 16 (AES-128) or 32 (AES-256). BadInvalidArgument otherwise. */
uas_status uas_crypto_aes_cbc(bool encrypt, const uint8_t *key, size_t key_len,
                              const uint8_t iv[UAS_AES_BLOCK], uint8_t *data, size_t len);

/* AES-CBC keyed once for one direction (the keys of one security token),
 * so that a chunk costs neither an allocation nor a key schedule: see
 * uas_crypto_aes_cbc_run. About 600 bytes of OpenSSL memory. */
typedef struct uas_aes_cbc {
    EVP_CIPHER_CTX *ctx; /* NULL until keyed */
} uas_aes_cbc;

/* key_len 16 or 32 (BadInvalidArgument otherwise); BadOutOfMemory. */
uas_status uas_crypto_aes_cbc_keyed(uas_aes_cbc *c, bool encrypt, const uint8_t *key,
                                    size_t key_len);
/* Frees the context, which wipes the key schedule, and zeroes c. */
void uas_crypto_aes_cbc_free(uas_aes_cbc *c);
/* Encrypts or decrypts (as keyed) len bytes in place as CBC from iv; len
 * must be a multiple of 16. Sets the IV on the keyed context
 * (EVP_CipherInit_ex with no cipher and no key), then runs the chunk.
 * BadInvalidArgument, BadInternalError. */
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

/* The SubjectPublicKeyInfo DER of k (i2d_PUBKEY), its length returned
 * (-1: none) and copied to out when cap suffices (out may be NULL).
 * Memoised per thread for the last few key objects, holding a reference
 * so the pointer keeps naming that key: OpenSSL 3 encodes through its
 * provider encoders (a fifth of the server's CPU per ECC set-up), and the
 * keys a server sees again are the same objects (uas_crypto_public_key's
 * cache). */
int uas_crypto_spki(EVP_PKEY *k, uint8_t *out, size_t cap);

UAS_API_END
#endif
