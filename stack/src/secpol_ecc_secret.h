/* The EccEncryptedSecret (Part 4, 7.41.2.3 / 7.41.2.5; Part 6, 6.8.3):
 * how a password (UserNameIdentityToken) or issued token travels to a
 * server over an ECC policy.
 *
 * Layout (UA Binary):
 *   TypeId (NodeId i=17546) | EncodingMask (Byte 0x01) | Length (UInt32,
 *   bytes after this field) | SecurityPolicyUri (String) | Certificate
 *   (ByteString, the sender's, may be null) | SigningTime (DateTime) |
 *   KeyDataLength (UInt16) | SenderPublicKey (ByteString) |
 *   ReceiverPublicKey (ByteString) | [ Nonce (ByteString) | Secret
 *   (ByteString) | PayloadPadding | PayloadPaddingSize (UInt16) ]enc |
 *   Tag (16) | Signature
 * The receiver's public key is an ephemeral key the server hands out in
 * the AdditionalHeader of CreateSession/ActivateSession (ECDHKey), the
 * sender's one the client makes for this secret. Keys:
 *   salt = L | "opcua-secret" | SenderPublicKey | ReceiverPublicKey
 *   EncryptingKey | IV = HKDF(IKM = shared secret, salt, info = salt, L)
 * The payload is sealed with the policy's AEAD (the IV as it is, no token
 * id or sequence number mixed in) with everything before it as additional
 * data; the signature (the policy's ECDSA r|s or EdDSA, with the sender's
 * application key) covers everything before it. The Nonce is the last
 * serverNonce of the session. This follows open62541 1.5.7, which
 * interoperates. Only public types appear here. */
#ifndef UAS_SECPOL_ECC_SECRET_H
#define UAS_SECPOL_ECC_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include <ua/builtin.h>
#include <ua/status.h>

#include "secpol.h"

UAS_API_BEGIN

enum {
    UAS_ECC_SECRET_TYPE_ID = 17546, /* EccEncryptedSecret DataType */
    UAS_ECC_SECRET_MAX_SECRET = 1024,
};

/* The receiver's ephemeral key of one secret (one per session nonce). */
typedef struct uas_ecc_rkey uas_ecc_rkey;

/* A fresh key on pol's curve. BadSecurityPolicyRejected for a policy
 * that is not ECC, BadOutOfMemory, BadInternalError. */
uas_status uas_ecc_rkey_new(const uas_secpol *pol, uas_ecc_rkey **out);
const uint8_t *uas_ecc_rkey_pub(const uas_ecc_rkey *k, size_t *len);
const uas_secpol *uas_ecc_rkey_policy(const uas_ecc_rkey *k);
void uas_ecc_rkey_free(uas_ecc_rkey *k); /* wipes; NULL is fine */

/* Sender: builds the secret for receiver_pub (the server's ECDHKey), all
 * but the signature. *out (uas_malloc'd, *out_len bytes) ends with
 * sig_len bytes the caller fills with its signature over the first
 * *signed_len bytes (uas_channel_sign on the client). cert may be NULL.
 * BadNonceInvalid: receiver_pub not on the curve; BadInvalidArgument: a
 * secret longer than UAS_ECC_SECRET_MAX_SECRET. */
uas_status uas_ecc_secret_seal(const uas_secpol *pol, const uint8_t *cert, size_t cert_len,
                               const uint8_t *receiver_pub, size_t receiver_len,
                               const uint8_t *nonce, size_t nonce_len, const uint8_t *secret,
                               size_t secret_len, uas_datetime signing_time, uint8_t **out,
                               size_t *out_len, size_t *signed_len);

/* The fields of a received secret, pointing into it (uas_ecc_secret_parse). */
typedef struct uas_ecc_secret_view {
    const uint8_t *cert; /* NULL when the field is null or empty */
    size_t cert_len;
    uas_datetime signing_time;
    const uint8_t *sender_pub, *receiver_pub;
    size_t sender_len, receiver_len;
    size_t header_len;  /* the additional data: [0, header_len) */
    size_t payload_len; /* sealed payload with its tag, from header_len */
    size_t signed_len;  /* the signature starts here */
    size_t sig_len;
} uas_ecc_secret_view;

/* Receiver, step 1 (cheap): decodes the headers and checks them against
 * pol: TypeId, EncodingMask, the Length field against len, the policy
 * URI, KeyDataLength, the public keys' lengths, a payload of whole
 * blocks with its tag and the signature of pol's size after it. Every
 * failure is BadIdentityTokenInvalid with a static reason in *why. The
 * caller then verifies the signature over [0, signed_len) with the
 * sender's key and checks that receiver_pub is the key it handed out. */
uas_status uas_ecc_secret_parse(const uas_secpol *pol, const uint8_t *in, size_t len,
                                uas_ecc_secret_view *v, const char **why);

/* Receiver, step 2: key agreement with k, opens the payload (tag), checks
 * the Nonce against nonce (constant time) and the padding, and copies the
 * Secret to out (*out_len bytes). BadIdentityTokenInvalid with *why for
 * everything the sender got wrong ("tag does not verify", "bad nonce",
 * "bad padding", "receiver key is not ours", "sender key not on the
 * curve" ...); BadEncodingLimitsExceeded when cap is too small. No
 * plaintext is left in temporary memory. */
uas_status uas_ecc_secret_open(const uas_ecc_rkey *k, const uint8_t *in,
                               const uas_ecc_secret_view *v, const uint8_t *nonce, size_t nonce_len,
                               uint8_t *out, size_t cap, size_t *out_len, const char **why);

UAS_API_END

#endif
