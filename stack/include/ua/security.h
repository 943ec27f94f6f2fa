/* Security policies and credentials as the rest of the stack uses them:
 * look a policy up by URI, hold the application's certificate and private
 * key, and make or check the session-level signatures of CreateSession and
 * ActivateSession with a channel's keys. The algorithms live in
 * stack/src/secpol*.c behind this surface. */
#ifndef UA_SECURITY_H
#define UA_SECURITY_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_secpol uas_secpol;
typedef struct uas_secpol_cred uas_secpol_cred;

/* A compiled-in policy by URI; deprecated ones (Basic256) only when
 * allow_deprecated. NULL when unknown. Policy None is always there. */
const uas_secpol *uas_security_policy(const char *uri, bool allow_deprecated);
const char *uas_security_policy_uri(const uas_secpol *p);
/* SignatureData.algorithm of the policy's asymmetric signature (NULL for None). */
const char *uas_security_policy_signature_uri(const uas_secpol *p);
/* SecureChannelNonceLength (0 for None). */
size_t uas_security_policy_nonce_length(const uas_secpol *p);
/* The certificate type a policy needs, as uapki names it: "rsa" for the
 * RSA policies, "nistP256", "nistP384", "brainpoolP256r1",
 * "brainpoolP384r1", "curve25519", "curve448"; NULL for None. */
const char *uas_secpol_cert_type(const uas_secpol *pol);

/* Certificate (DER) and private key (DER or PEM) of this application.
 * Reference-counted; shared by every channel. */
uas_status uas_secpol_cred_new(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                               size_t key_len, uas_secpol_cred **out);
void uas_secpol_cred_ref(uas_secpol_cred *c);
void uas_secpol_cred_unref(uas_secpol_cred *c);
const uint8_t *uas_secpol_cred_cert(const uas_secpol_cred *c, size_t *len);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
