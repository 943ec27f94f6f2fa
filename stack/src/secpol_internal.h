/* Internals shared by secpol_keys.c (credentials, key material, key
 * derivation) and secpol_rsa.c (the policies and their chunk hooks). */
#ifndef UAS_SECPOL_INTERNAL_H
#define UAS_SECPOL_INTERNAL_H

#include <stdatomic.h>

#include "crypto_util.h"
#include "secpol.h"
#include "secpol_ecc.h"

/* The algorithm suite of an RSA policy (Part 7). */
struct uas_secpol_algs {
    uas_digest kdf;           /* KeyDerivationAlgorithm: P_SHA1 / P_SHA256 */
    uas_digest sym_mac;       /* SymmetricSignatureAlgorithm: HMAC-SHA1 / -SHA256 */
    uint8_t sym_sign_key_len; /* DerivedSignatureKeyLength / 8 */
    uint8_t sym_enc_key_len;  /* AES-128 / AES-256 key bytes */
    uas_rsa_sig asym_sig;     /* AsymmetricSignatureAlgorithm */
    uas_rsa_enc asym_enc;     /* AsymmetricEncryptionAlgorithm */
};

struct uas_secpol_cred {
    atomic_uint refs;
    EVP_PKEY *key;
    uint32_t key_bits;
    uint8_t thumb[UAS_SHA1_LEN];
    size_t cert_len;
    uint8_t *cert;
    /* ECC keys: the curve, and for Ed25519 libsodium's form of the key
     * (seed | public key), wiped on free. */
    bool is_ecc;
    uas_ecc_curve curve;
    uint8_t ed_sk[64];
};

enum {
    UAS_SYM_SIGN_KEY_MAX = 32,
    UAS_SYM_ENC_KEY_MAX = 32,
    UAS_SYM_HEADER_LEN = 16, /* MessageHeader 12 + TokenId 4 */
    UAS_SEQ_HEADER_LEN = 8,
};

/* The keys of one direction of one token. */
typedef struct uas_sym_keys {
    uint8_t sign[UAS_SYM_SIGN_KEY_MAX];
    uint8_t enc[UAS_SYM_ENC_KEY_MAX];
    uint8_t iv[UAS_AES_BLOCK];
} uas_sym_keys;

typedef struct uas_sym_gen {
    uint32_t token_id;
    bool valid;
    uas_sym_keys local;  /* what we send */
    uas_sym_keys remote; /* what we receive */
    /* AES contexts keyed once with local.enc (encrypting) and remote.enc
     * (decrypting) while the mode encrypts, else empty: keying per chunk
     * would redo the key schedule every time. About 640 bytes of OpenSSL
     * memory each, freed (and wiped) with the keys. */
    uas_aes_cbc enc_local;
    uas_aes_cbc dec_remote;
    /* HMAC contexts keyed once with local.sign and remote.sign (in every
     * mode): keying per chunk would redo the two pad compressions. About
     * 850 bytes of OpenSSL memory each, freed (and wiped) with the keys. */
    uas_hmac_key mac_local;
    uas_hmac_key mac_remote;
} uas_sym_gen;

/* Per channel. The peer's public key is kept as its DER
 * SubjectPublicKeyInfo (about 300 bytes for 2048 bits, from the stack's
 * allocator) and turned into an EVP_PKEY only for the rare asymmetric
 * operations: an OpenSSL RSA EVP_PKEY holds about 1.9 KB, which 10,000
 * channels would pay for nothing between two OPNs. */
struct uas_secpol_keys {
    const uas_secpol *pol;
    uas_secpol_cred *cred;
    uint8_t *peer_spki; /* NULL until the peer is known */
    uint32_t peer_spki_len;
    uint16_t peer_bits;
    uint16_t peer_size; /* bytes: the peer's signature and ciphertext block size */
    uint8_t peer_thumb[UAS_SHA1_LEN];
    int32_t mode;
    uas_sym_gen gen[2];       /* [0] newest token, [1] the previous one */
    struct uas_ecc_chan *ecc; /* ECC policies only (secpol_ecc.c) */
};

/* ---- ECC policies (secpol_ecc.c), called by secpol_keys.c ---- */
uas_status uas__ecc_chan_new(uas_secpol_keys *k);
void uas__ecc_chan_free(uas_secpol_keys *k);
uas_status uas__ecc_make_nonce(uas_secpol_keys *k, uint8_t *out, size_t len);
uas_status uas__ecc_derive(uas_secpol_keys *k, uint32_t token_id, const uint8_t *local_nonce,
                           const uint8_t *remote_nonce, size_t len, bool is_server);
void uas__ecc_drop_prev(uas_secpol_keys *k);
/* The enhanced policies' OPN binding (the first request's signature, the
 * ChannelThumbprint and how far the handshake is) from src to dst. */
void uas__ecc_copy_sign_state(uas_secpol_keys *dst, const uas_secpol_keys *src);

/* The keys of the token with this id, or NULL. Not const: securing a
 * chunk moves the state of the token's AES contexts. */
uas_sym_gen *uas__secpol_gen(uas_secpol_keys *k, uint32_t token_id);

/* The header length of our OPN chunks: 12 bytes of MessageHeader and
 * SecureChannelId plus uas_secpol_asym_header() (0 without a peer). */
size_t uas__secpol_asym_header_len(const uas_secpol_keys *k);

/* Loads a peer certificate (first of a chain) and checks it against the
 * policy's key limits: *pub (owned by the caller) and its thumbprint. */
uas_status uas__secpol_peer_key(const uas_secpol *pol, const uint8_t *der, size_t len,
                                EVP_PKEY **pub, uint8_t thumb[UAS_SHA1_LEN]);

/* The asymmetric security header of a received OPN (Part 6, 6.7.2.3):
 * this policy's URI, the sender's certificate (its key within the policy's
 * limits, the channel's peer once one is known) and our certificate's
 * thumbprint. *sender (EVP_PKEY_free it) and its thumbprint. */
uas_status uas__secpol_opn_sender(const uas_secpol_keys *k, const uint8_t *chunk, size_t header_len,
                                  EVP_PKEY **sender, uint8_t thumb[UAS_SHA1_LEN]);

/* Makes pub (checked by uas__secpol_peer_key) the channel's peer. */
uas_status uas__secpol_set_peer_key(uas_secpol_keys *k, EVP_PKEY *pub,
                                    const uint8_t thumb[UAS_SHA1_LEN]);

/* The peer's public key as a new EVP_PKEY (EVP_PKEY_free it), or NULL. */
EVP_PKEY *uas__secpol_peer_pkey(const uas_secpol_keys *k);

#endif
