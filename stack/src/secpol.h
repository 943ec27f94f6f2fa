/* Security policy vtable used by the channel. Every hook works in place on a
 * chunk buffer: the channel lays out [headers | sequence header + body] and
 * the policy appends padding and signature and encrypts, or verifies,
 * decrypts and strips them. Policy None implements them as no-ops.
 *
 * The RSA policies (secpol_rsa.c, compiled with UA_ENABLE_ENCRYPTION) keep
 * their per-channel state in a uas_secpol_keys, passed to the hooks as
 * `keys`:
 *   - the application's credentials (certificate + private key, shared by
 *     every channel, uas_secpol_cred),
 *   - the peer's certificate (its public key and SHA1 thumbprint),
 *   - the message security mode (Sign or SignAndEncrypt),
 *   - the symmetric keys derived from the nonces, for both directions, for
 *     the newest security token and the previous one (renewal overlap);
 *     in SignAndEncrypt also an AES context per token and direction, keyed
 *     once at derivation (about 640 bytes of OpenSSL memory each), so that
 *     a chunk costs no allocation and no key setup.
 * A symmetric chunk selects its keys by the TokenId in its security header
 * (the last 4 bytes before header_len), so the channel needs no call to
 * switch keys when a token is renewed.
 *
 * Chunk layout (Part 6, 6.7.2), symmetric, SignAndEncrypt:
 *   [MessageHeader 12 | TokenId 4] [SequenceHeader 8 | Body | PaddingSize 1 |
 *   Padding | Signature]; the signature (HMAC) covers everything before it,
 *   the bracket from the sequence header on is AES-CBC encrypted.
 * Sign: [headers] [SequenceHeader | Body | Signature], no padding.
 * OPN (asymmetric, signed and encrypted whenever the policy is not None,
 * even in mode Sign): [MessageHeader 12 | asymmetric security header]
 * [SequenceHeader | Body | PaddingSize | Padding | ExtraPaddingSize? |
 * Signature], signed with our private key, encrypted with the peer's public
 * key in OAEP blocks; ExtraPaddingSize is present when the encrypting key is
 * longer than 2048 bits. */
#ifndef UAS_SECPOL_H
#define UAS_SECPOL_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/security.h>
#include <ua/status.h>

struct uas_secpol_algs; /* the algorithm suite of an RSA policy (secpol_rsa.c) */
struct uas_ecc_suite;   /* the suite of an ECC policy (secpol_ecc.h) */

/* The largest SecureChannel nonce of any policy: an ECC ephemeral key on a
 * 384-bit curve (x | y). */
#define UAS_SECPOL_NONCE_MAX 96

typedef struct uas_secpol {
    const char *uri;
    /* Bytes a chunk needs after the body for padding and signature, so the
     * writer stops filling the body early enough: the body must end at or
     * before chunk_cap - overhead. For symmetric chunks the header is the
     * 16 bytes of MessageHeader + TokenId. */
    size_t (*sym_overhead)(const void *keys, size_t chunk_cap);
    /* Secure a finished chunk: [0, header_len) stays clear, [header_len,
     * *len) is the sequence header and body. Writes padding, signature and
     * the MessageSize field, encrypts; *len becomes the chunk's size. The
     * RSA policies take the keys of the TokenId in [header_len - 4,
     * header_len) (BadInternalError when they have none for it). */
    uas_status (*sym_protect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                              size_t cap);
    /* Verify and decrypt a received chunk in place; *len becomes the end of
     * the plaintext body (padding and signature removed). Every failure is
     * BadSecurityChecksFailed. */
    uas_status (*sym_unprotect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len);
    /* The same for OPN chunks (asymmetric algorithms). asym_overhead assumes
     * the security header written by uas_secpol_asym_header(). */
    size_t (*asym_overhead)(const void *keys, size_t chunk_cap);
    uas_status (*asym_protect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                               size_t cap);
    /* Parses the asymmetric security header in [12, header_len) itself:
     * checks ReceiverCertificateThumbprint against our certificate, takes
     * the peer's certificate from SenderCertificate (first one; on later
     * OPNs it must be the same certificate), then decrypts and verifies.
     * BadCertificateInvalid / BadCertificatePolicyCheckFailed when the
     * SenderCertificate is unreadable / outside the key limits (checked
     * before any private-key operation); every other failure is
     * BadSecurityChecksFailed. The peer is adopted only on success. */
    uas_status (*asym_unprotect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len);

    /* Policy parameters; 0 / NULL for None. */
    uint16_t nonce_len;              /* SecureChannelNonceLength, bytes */
    uint16_t min_key_bits;           /* MinAsymmetricKeyLength */
    uint16_t max_key_bits;           /* MaxAsymmetricKeyLength */
    bool deprecated;                 /* offered only when the configuration opts in */
    const char *asym_signature_uri;  /* SignatureData.algorithm (Part 4, 7.37) */
    const char *asym_encryption_uri; /* EncryptionAlgorithm of user tokens */
    const struct uas_secpol_algs *algs;
    /* ECC policies (Part 6, 6.8): the nonces are ephemeral public keys,
     * OPN chunks are signed only, symmetric chunks use an AEAD, and the
     * sequence numbers start at 0 and wrap from UINT32_MAX to 0 (not the
     * legacy 1 / "< 1024" rule). NULL for None and RSA. */
    const struct uas_ecc_suite *ecc;
} uas_secpol;

extern const uas_secpol uas_secpol_none;
#ifdef UAS_ENABLE_ENCRYPTION
extern const uas_secpol uas_secpol_basic256sha256;
extern const uas_secpol uas_secpol_aes128_sha256_rsaoaep;
extern const uas_secpol uas_secpol_aes256_sha256_rsapss;
extern const uas_secpol uas_secpol_basic256; /* deprecated */
extern const uas_secpol uas_secpol_ecc_nistp256_aesgcm;
extern const uas_secpol uas_secpol_ecc_nistp256_chachapoly;
extern const uas_secpol uas_secpol_ecc_nistp384_aesgcm;
extern const uas_secpol uas_secpol_ecc_nistp384_chachapoly;
extern const uas_secpol uas_secpol_ecc_brainpoolp256r1_aesgcm;
extern const uas_secpol uas_secpol_ecc_brainpoolp256r1_chachapoly;
extern const uas_secpol uas_secpol_ecc_brainpoolp384r1_aesgcm;
extern const uas_secpol uas_secpol_ecc_brainpoolp384r1_chachapoly;
extern const uas_secpol uas_secpol_ecc_curve25519;
extern const uas_secpol uas_secpol_ecc_curve448;
#endif

#define UAS_SECPOL_NONE_URI           "http://opcfoundation.org/UA/SecurityPolicy#None"
#define UAS_SECPOL_BASIC256SHA256_URI "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"
#define UAS_SECPOL_AES128_SHA256_RSAOAEP_URI                                                       \
    "http://opcfoundation.org/UA/SecurityPolicy#Aes128_Sha256_RsaOaep"
#define UAS_SECPOL_AES256_SHA256_RSAPSS_URI                                                        \
    "http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss"
#define UAS_SECPOL_BASIC256_URI "http://opcfoundation.org/UA/SecurityPolicy#Basic256"

/* The policy the channel accepts without a configured list: None only. A
 * channel that offers the RSA policies looks the URI up among the policies
 * of its endpoint configuration instead (uas_secpol_lookup). */
const uas_secpol *uas_secpol_find(const uint8_t *uri, size_t len);

/* Every policy compiled in (None first, then the RSA ones strongest
 * first, then the ECC ones, Basic256 last); *count receives their number. */
const uas_secpol *const *uas_secpol_all(size_t *count);

/* The compiled-in policy with this URI, or NULL; a deprecated policy only
 * when allow_deprecated. */
const uas_secpol *uas_secpol_lookup(const uint8_t *uri, size_t len, bool allow_deprecated);

/* ---- credentials: our certificate and private key ----
 * One per application (or per certificate type), shared read-only by every
 * channel; reference counted (atomically), so channels on different event
 * loops may hold it. Without UA_ENABLE_ENCRYPTION every function below
 * returns BadNotSupported (or NULL / nothing). */
typedef struct uas_secpol_cred uas_secpol_cred;

/* cert: DER of our certificate; key: the RSA private key in DER (PKCS#1 or
 * PKCS#8) or unencrypted PEM. Checks that the key is RSA and belongs to the
 * certificate. Returns BadCertificateInvalid (certificate unreadable),
 * BadInvalidArgument (key unreadable, not RSA, or not the certificate's),
 * BadOutOfMemory. The key bytes are not kept (the caller zeroes them). */
uas_status uas_secpol_cred_new(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                               size_t key_len, uas_secpol_cred **out);
void uas_secpol_cred_ref(uas_secpol_cred *c);
void uas_secpol_cred_unref(uas_secpol_cred *c); /* frees at zero; NULL is fine */
const uint8_t *uas_secpol_cred_cert(const uas_secpol_cred *c, size_t *len);
const uint8_t *uas_secpol_cred_thumbprint(const uas_secpol_cred *c); /* 20 bytes */
uint32_t uas_secpol_cred_key_bits(const uas_secpol_cred *c);

/* Checks a DER certificate's public key against the policy's key length
 * limits: UAS_GOOD, BadCertificateInvalid (unreadable), or
 * BadCertificatePolicyCheckFailed (not RSA, or too short / too long). */
uas_status uas_secpol_check_cert(const uas_secpol *pol, const uint8_t *der, size_t len);

/* ---- per-channel key material ---- */
typedef struct uas_secpol_keys uas_secpol_keys;

/* New key material for a channel using an RSA policy with our credentials
 * (a reference is taken). BadCertificatePolicyCheckFailed when our key does
 * not fit the policy, BadSecurityPolicyRejected for None or a NULL policy,
 * BadOutOfMemory. */
uas_status uas_secpol_keys_new(const uas_secpol *pol, uas_secpol_cred *cred, uas_secpol_keys **out);
/* Zeroes every secret and releases the credentials; NULL is fine. */
void uas_secpol_keys_free(uas_secpol_keys *k);
const uas_secpol *uas_secpol_keys_policy(const uas_secpol_keys *k);
/* New key material with the same policy, credentials (a reference), mode
 * and peer as k, and no symmetric keys: what a worker thread needs for the
 * asymmetric operations of a channel (sign, verify, OPN chunks) while the
 * channel's own keys stay on its thread. BadOutOfMemory. */
uas_status uas_secpol_keys_clone_peer(const uas_secpol_keys *k, uas_secpol_keys **out);
/* After a clone signed our OPN response elsewhere: what that signature
 * settled (the enhanced ECC policies' ChannelThumbprint) back into k. */
void uas_secpol_keys_adopt_sign_state(uas_secpol_keys *k, const uas_secpol_keys *job);
/* The same for a channel's keys (channel.c): *out NULL and Good for a
 * channel without keys (None). */
struct uas_channel;
uas_status uas_channel_clone_keys(const struct uas_channel *ch, uas_secpol_keys **out);

/* The MessageSecurityMode of the channel (UAS_MESSAGE_SECURITY_MODE_SIGN
 * or _SIGN_AND_ENCRYPT); anything else gives BadSecurityModeRejected. Must
 * be set before the first symmetric chunk; the default is SignAndEncrypt.
 * Set before the keys are derived, as the channel does; a later switch to
 * SignAndEncrypt keys the AES contexts of the tokens already derived
 * (BadOutOfMemory when that fails). */
uas_status uas_secpol_keys_set_mode(uas_secpol_keys *k, int32_t mode);
int32_t uas_secpol_keys_mode(const uas_secpol_keys *k);

/* Sets the peer's certificate (first certificate of a DER ByteString that
 * may hold a chain). A client calls this with the server certificate of the
 * endpoint before its first OPN; a server gets it from the OPN's
 * SenderCertificate inside asym_unprotect. BadCertificateInvalid,
 * BadCertificatePolicyCheckFailed (key length limits of the policy). The
 * trust decision (chain, validity, revocation) is the PKI's, not this. */
uas_status uas_secpol_keys_set_peer(uas_secpol_keys *k, const uint8_t *der, size_t len);
/* Our certificate (DER), as sent in SenderCertificate; NULL for NULL keys. */
const uint8_t *uas_secpol_keys_local_cert(const uas_secpol_keys *k, size_t *len);
/* SHA1 of the peer's certificate (the ReceiverCertificateThumbprint of our
 * OPN chunks), or NULL before a peer is known. */
const uint8_t *uas_secpol_keys_peer_thumbprint(const uas_secpol_keys *k);
/* SHA1 of the peer's certificate compared with a certificate's DER
 * (CreateSession: the client certificate must be the channel's). */
bool uas_secpol_keys_peer_is(const uas_secpol_keys *k, const uint8_t *der, size_t len);

/* A fresh nonce of the policy's SecureChannelNonceLength; len must be that
 * length (BadInvalidArgument otherwise). */
uas_status uas_secpol_make_nonce(const uas_secpol *pol, uint8_t *out, size_t len);
/* The channel's nonce for an OPN: random bytes for RSA; for ECC a fresh
 * ephemeral key pair whose public key is the nonce, its private half kept
 * in k until uas_secpol_derive_keys uses (and forgets) it. */
uas_status uas_secpol_keys_make_nonce(uas_secpol_keys *k, uint8_t *out, size_t len);

/* Whether the policy is an ECC policy with the SecureChannelEnhancements of
 * 1.05.07 (ECC_nistP256_AesGcm and friends): the session signatures cover
 * uas_secpol_keys_bound_data instead of certificate | nonce. */
bool uas_secpol_keys_enhanced(const uas_secpol_keys *k);
/* The channel-bound signature data of the enhanced policies:
 *   ChannelThumbprint | nonce_a | H(cert_0) | ... | H(cert_n-1) | nonce_b
 * with H the policy's hash of each certificate's leaf (DER, a chain is
 * cut to its first certificate). *out is uas_malloc'ed (*out_len bytes;
 * uas_free it). BadInvalidState before the ChannelThumbprint is known,
 * BadCertificateInvalid, BadOutOfMemory. */
uas_status uas_secpol_keys_bound_data(const uas_secpol_keys *k, const uint8_t *nonce_a,
                                      size_t nonce_a_len, const uint8_t *const *certs,
                                      const size_t *cert_lens, size_t n_certs,
                                      const uint8_t *nonce_b, size_t nonce_b_len, uint8_t **out,
                                      size_t *out_len);
/* Whether a credential's key is the one an ECC policy needs (its curve), or
 * an RSA key for an RSA policy; the server picks its certificate per
 * endpoint by this. */
bool uas_secpol_cred_fits(const uas_secpol *pol, const uas_secpol_cred *c);
/* uas_secpol_cert_type: ua/security.h. */

/* Derives the symmetric keys of a new security token (Part 6, 6.7.5):
 * client keys = P_SHA256(secret = ServerNonce, seed = ClientNonce),
 * server keys = P_SHA256(secret = ClientNonce, seed = ServerNonce),
 * each SigningKey | EncryptingKey | InitializationVector (P_SHA1 for
 * Basic256). is_server tells which nonce is whose: the local keys secure
 * what we send, the remote keys what we receive. The new token becomes the
 * newest; the previous newest is kept for chunks still carrying its token
 * id; an older one is zeroed and its AES contexts freed. Both nonces must
 * have the policy's length (BadNonceInvalid); BadOutOfMemory when the AES
 * contexts cannot be made. The caller zeroes its nonces afterwards. */
uas_status uas_secpol_derive_keys(uas_secpol_keys *k, uint32_t token_id, const uint8_t *local_nonce,
                                  size_t local_len, const uint8_t *remote_nonce, size_t remote_len,
                                  bool is_server);
/* Forgets (zeroes, frees the contexts of) the keys of every token but the
 * newest: call when the previous token may no longer be used. */
void uas_secpol_keys_drop_prev(uas_secpol_keys *k);

/* Writes the asymmetric security header of an OPN chunk at p (the bytes
 * after the SecureChannelId): SecurityPolicyUri, SenderCertificate (ours,
 * null for None) and ReceiverCertificateThumbprint (the peer's, null for
 * None). Returns the bytes written, 0 when cap is too small. keys may be
 * NULL for None. */
size_t uas_secpol_asym_header(const uas_secpol *pol, const void *keys, uint8_t *p, size_t cap);

/* Asymmetric signatures of the session services (CreateSession /
 * ActivateSession signatures, Part 4, 5.6.2 / 5.6.3) with the channel's
 * policy: sign with our private key, verify with the peer's certificate.
 * sig_cap must be at least our key size; *sig_len receives it. Verify
 * returns UAS_GOOD or BadSecurityChecksFailed (also without a peer). */
uas_status uas_secpol_keys_sign(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                uint8_t *sig, size_t sig_cap, size_t *sig_len);
uas_status uas_secpol_keys_verify(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                  const uint8_t *sig, size_t sig_len);

UAS_API_END
#endif
