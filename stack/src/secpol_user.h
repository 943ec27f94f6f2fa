/* User identity tokens of ActivateSession (Part 4, 7.41): the encrypted
 * password of a UserNameIdentityToken and the userTokenSignature of an
 * X509IdentityToken, with the asymmetric algorithms of a security policy.
 *
 * The policy is the one of the UserTokenPolicy the token names, which may
 * differ from the channel's (a None endpoint still encrypts passwords with
 * Basic256Sha256, say). Only public types appear here, so the server and
 * the client include this header beside ua/security.h.
 *
 * Password plaintext (Part 4, 7.41.2.2, "legacy" encrypted secret):
 *   length (UInt32, little endian, of password + nonce) | password | nonce
 *   [| zero padding up to whole OAEP blocks, as open62541 sends it]
 * where nonce is the serverNonce of the session, RSA-encrypted with the
 * server certificate's key by the policy's AsymmetricEncryptionAlgorithm:
 * RSA-OAEP (SHA1) for Basic256Sha256, Aes128_Sha256_RsaOaep and Basic256,
 * RSA-OAEP-SHA256 for Aes256_Sha256_RsaPss. */
#ifndef UAS_SECPOL_USER_H
#define UAS_SECPOL_USER_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stddef.h>
#include <stdint.h>

#include <ua/security.h>
#include <ua/status.h>

/* Bytes the encrypted password will take for this certificate (its key
 * size times the number of OAEP blocks). BadCertificateInvalid,
 * BadSecurityPolicyRejected (None or NULL policy). */
uas_status uas_secpol_user_cipher_len(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                      size_t password_len, size_t nonce_len, size_t *out_len);

/* Client side: encrypts password + server_nonce for the server whose DER
 * certificate (the first of a chain) is cert. out receives *out_len bytes
 * (uas_secpol_user_cipher_len); BadEncodingLimitsExceeded when cap is too
 * small, BadCertificateInvalid, BadCertificatePolicyCheckFailed (key not
 * RSA or outside the policy's limits), BadSecurityPolicyRejected. The
 * plaintext copy made inside is zeroed. */
uas_status uas_secpol_user_encrypt(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                   const uint8_t *password, size_t password_len,
                                   const uint8_t *server_nonce, size_t nonce_len, uint8_t *out,
                                   size_t cap, size_t *out_len);

/* Server side: decrypts a password with our private key, checks the
 * length field, that any padding after it is zero and that the secret ends
 * with server_nonce (constant time), and copies the password (without the
 * nonce) to out_password. Every decoding failure, a wrong nonce included,
 * is BadIdentityTokenInvalid to the peer; *why (may be NULL) names it for
 * the server's log: "decryption failure", "bad length field", "padding is
 * not zero", "bad nonce" (static strings, never secret).
 * BadEncodingLimitsExceeded when the password is longer than cap;
 * BadSecurityPolicyRejected for None. Nothing secret is left in temporary
 * memory. The caller bounds len first (uas_secpol_user_block_len): every
 * block costs a private-key operation. */
uas_status uas_secpol_user_decrypt(const uas_secpol_cred *cred, const uas_secpol *pol,
                                   const uint8_t *cipher, size_t len, const uint8_t *server_nonce,
                                   size_t nonce_len, uint8_t *out_password, size_t cap,
                                   size_t *out_len, const char **why);
/* One encrypted block of cred's key (its modulus size), 0 without one. */
size_t uas_secpol_user_block_len(const uas_secpol_cred *cred);

/* userTokenSignature of an X509IdentityToken (and any other signature made
 * with a key that is not the channel's): sign data with cred's private key
 * by the policy's AsymmetricSignatureAlgorithm (sig_cap at least the key
 * size; *sig_len receives it), or verify it with the public key of a DER
 * certificate. Verify returns UAS_GOOD, BadCertificateInvalid (not a
 * certificate), BadCertificatePolicyCheckFailed (key outside the policy's
 * limits, or a public exponent that is even, 1 or longer than 32 bits,
 * refused before any RSA work) or BadSecurityChecksFailed (bad
 * signature). */
uas_status uas_secpol_user_sign(const uas_secpol_cred *cred, const uas_secpol *pol,
                                const uint8_t *data, size_t len, uint8_t *sig, size_t sig_cap,
                                size_t *sig_len);
uas_status uas_secpol_user_verify(const uas_secpol *pol, const uint8_t *cert, size_t cert_len,
                                  const uint8_t *data, size_t len, const uint8_t *sig,
                                  size_t sig_len);

UAS_API_END
#endif
