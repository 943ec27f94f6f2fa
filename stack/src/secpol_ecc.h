/* Internals of the ECC security policies (Part 6, 6.8; Part 7): the curve
 * and AEAD suite of each policy, the per-channel ECC state (ephemeral key,
 * AEAD keys of the newest and previous token, the ChannelThumbprint of the
 * enhanced policies) and the primitives behind them.
 *
 * Library split: libsodium does X25519, Ed25519 and ChaCha20-Poly1305
 * (IETF); OpenSSL 3 EVP does the NIST and brainpool curves (ECDH, ECDSA),
 * X448/Ed448, AES-GCM and HKDF. */
#ifndef UAS_SECPOL_ECC_H
#define UAS_SECPOL_ECC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include <ua/status.h>

#include "crypto_util.h"

typedef enum uas_ecc_curve {
    UAS_ECC_NISTP256,
    UAS_ECC_NISTP384,
    UAS_ECC_BRAINPOOLP256R1,
    UAS_ECC_BRAINPOOLP384R1,
    UAS_ECC_CURVE25519,
    UAS_ECC_CURVE448,
} uas_ecc_curve;

typedef enum uas_aead {
    UAS_AEAD_AES128_GCM,
    UAS_AEAD_AES256_GCM,
    UAS_AEAD_CHACHA20_POLY1305,
} uas_aead;

enum {
    UAS_ECC_NONCE_MAX = 96,  /* P-384 / brainpoolP384r1: x | y */
    UAS_ECC_SECRET_MAX = 56, /* X448 */
    UAS_ECC_SIG_MAX = 114,   /* Ed448 */
    UAS_AEAD_KEY_MAX = 32,
    UAS_AEAD_IV_LEN = 12,
    UAS_AEAD_TAG_LEN = 16,
    UAS_ECC_HASH_MAX = 48,
};

/* The algorithm suite of an ECC policy. */
struct uas_ecc_suite {
    uas_ecc_curve curve;
    uas_aead aead;
    const char *md; /* HKDF, ECDSA and certificate hash: "SHA256" / "SHA384" */
    uint8_t md_len;
    uint8_t sign_key_len;   /* DerivedSignatureKeyLength / 8 (0 for the AesGcm/ChaChaPoly) */
    uint8_t enc_key_len;    /* AEAD key bytes */
    uint8_t sig_len;        /* asymmetric signature: ECDSA r|s, Ed25519, Ed448 */
    bool enhanced;          /* SecureChannelEnhancements (1.05.07): ChannelThumbprint, IKM chain */
    bool tag_with_sign_key; /* Sign mode: the tag is keyed with the signing key */
};

/* Curve helpers. */
size_t uas__ecc_nonce_len(uas_ecc_curve c);
/* The OpenSSL group / key type name of the curve ("P-256", "X25519" ...). */
const char *uas__ecc_group(uas_ecc_curve c);
/* Whether an application key (certificate or private key) is of the
 * curve's signature type: EC on the group, Ed25519, Ed448. */
bool uas__ecc_key_is(uas_ecc_curve c, EVP_PKEY *k);
/* Which curve a key is of; false for RSA or an unknown curve. */
bool uas__ecc_key_curve(EVP_PKEY *k, uas_ecc_curve *out);

/* An ephemeral key pair. X25519 lives in libsodium buffers, the others
 * in an EVP_PKEY. */
typedef struct uas_ecc_eph {
    EVP_PKEY *pkey;
    uint8_t sk[32];
    bool have;
} uas_ecc_eph;

/* Makes a fresh ephemeral key, replacing (and wiping) the one e holds; e
 * must be zeroed before its first use. pub receives the nonce encoding (x | y for
 * the Weierstrass curves, the raw key for X25519/X448). */
uas_status uas__ecc_eph_new(uas_ecc_curve c, uas_ecc_eph *e, uint8_t *pub, size_t pub_len);
void uas__ecc_eph_clear(uas_ecc_eph *e);
/* The shared secret with the peer's nonce (x coordinate / raw X25519 or
 * X448 output). BadNonceInvalid when the peer's key is not on the curve or
 * of low order. */
uas_status uas__ecc_shared(uas_ecc_curve c, const uas_ecc_eph *e, const uint8_t *peer,
                           size_t peer_len, uint8_t *secret, size_t *secret_len);

/* HKDF (RFC 5869) through EVP_KDF "HKDF". */
uas_status uas__ecc_hkdf(const char *md, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
                         size_t salt_len, const uint8_t *info, size_t info_len, uint8_t *out,
                         size_t out_len);

/* Asymmetric signatures with an application key. sign: priv is the
 * credentials' key (ed_sk its libsodium form for Ed25519); sig_len bytes
 * are written. Data may come in two parts (a | b), for the enhanced OPN
 * response; Ed25519/Ed448 need b_len == 0. */
uas_status uas__ecc_sign(const struct uas_ecc_suite *s, EVP_PKEY *priv, const uint8_t *ed_sk,
                         const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                         uint8_t *sig);
/* BadSecurityChecksFailed when the signature does not verify. */
uas_status uas__ecc_verify(const struct uas_ecc_suite *s, EVP_PKEY *pub, const uint8_t *a,
                           size_t a_len, const uint8_t *b, size_t b_len, const uint8_t *sig,
                           size_t sig_len);

/* One direction of one token. The AES-GCM context is keyed once at
 * derivation; each chunk only sets its IV. */
typedef struct uas_aead_key {
    uint8_t key[UAS_AEAD_KEY_MAX];
    uint8_t iv[UAS_AEAD_IV_LEN];
    EVP_CIPHER_CTX *ctx; /* AES-GCM only */
} uas_aead_key;

uas_status uas__aead_key_set(uas_aead_key *k, uas_aead a, bool encrypt, const uint8_t *key,
                             const uint8_t *iv);
void uas__aead_key_clear(uas_aead_key *k);
/* Encrypts data in place (SignAndEncrypt: aad is the clear header) or,
 * with data_len 0, authenticates aad alone (Sign); writes the 16-byte tag.
 * The IV is the key's IV with token id and sequence number mixed in. */
uas_status uas__aead_seal(uas_aead_key *k, uas_aead a, uint32_t token_id, uint32_t seq,
                          const uint8_t *aad, size_t aad_len, uint8_t *data, size_t data_len,
                          uint8_t tag[UAS_AEAD_TAG_LEN]);
/* The reverse; BadSecurityChecksFailed when the tag does not match (the
 * plaintext is then not to be used). */
uas_status uas__aead_open(uas_aead_key *k, uas_aead a, uint32_t token_id, uint32_t seq,
                          const uint8_t *aad, size_t aad_len, uint8_t *data, size_t data_len,
                          const uint8_t tag[UAS_AEAD_TAG_LEN]);

/* The masked AEAD nonce of one chunk: IV with the TokenId XORed into bytes
 * 0..3 and the sequence number into bytes 4..7 (little endian). */
void uas__aead_nonce(const uint8_t iv[UAS_AEAD_IV_LEN], uint32_t token_id, uint32_t seq,
                     uint8_t out[UAS_AEAD_IV_LEN]);

#endif
