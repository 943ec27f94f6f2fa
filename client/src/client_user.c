/* User identity tokens of ActivateSession (Part 4, 7.41): the password
 * secret of a UserNameIdentityToken and the userTokenSignature of an
 * X509IdentityToken. */
#include <string.h>

#include <ua/log.h>

#include "client_internal.h"
#include "secpol.h"
#ifdef UAS_ENABLE_ENCRYPTION
#include "secpol_ecc_secret.h"
#endif
#include "secpol_user.h"

#define POLICY_NONE "http://opcfoundation.org/UA/SecurityPolicy#None"

/* The security policy that protects the user token: the token policy's,
 * or the channel's when the token policy names none. */
static const char *token_policy(const uas_client *c)
{
    return c->token_policy_uri[0] ? c->token_policy_uri : uas_security_policy_uri(c->policy);
}

/* The security policy of the user token. An ECC one is usable for a
 * password (ecc_ok) only as the channel's own policy: the secret is signed
 * with the channel's key for the server's ECDHKey. */
static uas_status token_secpol(const uas_client *c, const uas_secpol **pol, bool secret)
{
    *pol = uas_security_policy(token_policy(c), false);
    if (!*pol) {
        uas_log(UAS_LOG_ERROR, "client", "%s: user token policy %s is not supported",
                c->cfg.endpoint_url, token_policy(c));
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    /* An X.509 user token's signature needs nothing of the channel; an
     * EccEncryptedSecret needs the channel of its policy (its keys). */
    if (secret && (*pol)->ecc && (*pol != c->policy || !uas__security_on(c))) {
        uas_log(UAS_LOG_ERROR, "client",
                "%s: user token policy %s differs from the channel's; an EccEncryptedSecret "
                "needs the channel of that policy",
                c->cfg.endpoint_url, token_policy(c));
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    return UAS_GOOD;
}

#define ECDH_POLICY "ECDHPolicyUri"
#define ECDH_KEY    "ECDHKey"

void uas__ecdh_request(uas_client *c, uas_extensionobject *ah, uas_additional_parameters_type *ap,
                       uas_key_value_pair *kv, uas_string *uri)
{
    if (c->cfg.user.kind != UAS_CLIENT_USER_NAME || !c->policy || !c->policy->ecc ||
        !uas__security_on(c))
        return;
    memset(kv, 0, sizeof(*kv));
    *uri = uas_string_from(uas_security_policy_uri(c->policy));
    kv->key.name = uas_string_from(ECDH_POLICY);
    kv->value.type = UAS_TYPE(STRING);
    kv->value.data = uri;
    ap->parameters = kv;
    ap->parameters_count = 1;
    ah->encoding = UAS_EXTOBJ_DECODED;
    ah->content.decoded.type = UAS_TYPE(ADDITIONAL_PARAMETERS_TYPE);
    ah->content.decoded.data = ap;
}

/* A response without an ECDHKey leaves none (the next secret cannot be
 * made: uas__user_secret says so). One whose signature does not verify
 * with the server's certificate is BadSecurityChecksFailed. */
uas_status uas__ecdh_take(uas_client *c, const uas_extensionobject *ah)
{
    c->server_eph_len = 0;
    if (ah->encoding != UAS_EXTOBJ_DECODED ||
        ah->content.decoded.type != UAS_TYPE(ADDITIONAL_PARAMETERS_TYPE) || !c->conn ||
        !c->policy || !c->policy->ecc)
        return UAS_GOOD;
    const uas_additional_parameters_type *ap = ah->content.decoded.data;
    for (size_t i = 0; i < ap->parameters_count; i++) {
        const uas_key_value_pair *kv = &ap->parameters[i];
        if (kv->key.ns != 0 || !uas_string_eq_cstr(&kv->key.name, ECDH_KEY) ||
            kv->value.type != UAS_TYPE(EPHEMERAL_KEY_TYPE) || kv->value.is_array || !kv->value.data)
            continue;
        const uas_ephemeral_key_type *k = kv->value.data;
        if (!k->public_key.data || k->public_key.length > sizeof(c->server_eph) ||
            !k->signature.data ||
            uas_channel_verify(uas_conn_channel(c->conn), k->public_key.data, k->public_key.length,
                               k->signature.data, k->signature.length) != UAS_GOOD) {
            uas_log(UAS_LOG_WARN, "client", "%s: the server's ECDHKey is not signed by its key",
                    c->cfg.endpoint_url);
            return UAS_BAD_SECURITY_CHECKS_FAILED;
        }
        memcpy(c->server_eph, k->public_key.data, k->public_key.length);
        c->server_eph_len = k->public_key.length;
    }
    return UAS_GOOD;
}

#ifdef UAS_ENABLE_ENCRYPTION
/* The password in an EccEncryptedSecret for the server's ECDHKey, signed
 * with the channel's key; the key is used once. */
static uas_status ecc_secret(uas_client *c, const uas_secpol *pol, uas_user_name_identity_token *t)
{
    if (!c->server_eph_len) {
        uas_log(UAS_LOG_ERROR, "client",
                "%s: the server sent no ECDHKey for the EccEncryptedSecret of the password",
                c->cfg.endpoint_url);
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    uas_channel *ch = uas_conn_channel(c->conn);
    size_t cert_len = 0;
    const uint8_t *cert = uas_channel_local_cert(ch, &cert_len);
    uint8_t *out = NULL;
    size_t n = 0, signed_len = 0;
    uas_status st = uas_ecc_secret_seal(pol, cert, cert_len, c->server_eph, c->server_eph_len,
                                        c->server_nonce, c->server_nonce_len, c->password,
                                        c->password_len, uas_datetime_now(), &out, &n, &signed_len);
    c->server_eph_len = 0;
    size_t sig_len = 0;
    if (st == UAS_GOOD)
        st = uas_channel_sign(ch, out, signed_len, out + signed_len, n - signed_len, &sig_len);
    if (st == UAS_GOOD && sig_len != n - signed_len)
        st = UAS_BAD_INTERNAL_ERROR;
    if (st != UAS_GOOD) {
        if (out) {
            uas_wipe(out, n);
            uas_free(out, n);
        }
        return st;
    }
    t->password.data = out;
    t->password.length = n;
    t->encryption_algorithm = uas_string_from(NULL); /* the secret names its policy */
    return UAS_GOOD;
}
#endif

uas_status uas__user_secret(uas_client *c, uas_user_name_identity_token *t)
{
    const char *uri = token_policy(c);
    if (strcmp(uri, POLICY_NONE) == 0) {
        /* A plain password only inside an encrypted channel. */
        if (!uas__security_on(c) ||
            c->cfg.conn.channel.mode != UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT) {
            uas_log(UAS_LOG_ERROR, "client",
                    "%s: the server wants the password unencrypted on a channel without "
                    "encryption; refused",
                    c->cfg.endpoint_url);
            return UAS_BAD_SECURITY_MODE_INSUFFICIENT;
        }
        t->password.data = c->password;
        t->password.length = c->password_len;
        return UAS_GOOD;
    }
    const uas_secpol *pol;
    uas_status st = token_secpol(c, &pol, true);
    if (st != UAS_GOOD)
        return st;
#ifdef UAS_ENABLE_ENCRYPTION
    if (pol->ecc)
        return ecc_secret(c, pol, t);
#endif
    /* On a None channel the certificate is the endpoint's (see
     * adopt_endpoint_cert); the password is never sent in clear for want of
     * one. */
    if (!c->server_cert.length) {
        uas_log(UAS_LOG_ERROR, "client",
                "%s: encrypting the password needs the server's certificate, and the "
                "server sent none with its endpoint",
                c->cfg.endpoint_url);
        return UAS_BAD_CERTIFICATE_INVALID;
    }
    size_t need = 0;
    st = uas_secpol_user_cipher_len(c->server_cert.data, c->server_cert.length, pol,
                                    c->password_len, c->server_nonce_len, &need);
    if (st != UAS_GOOD)
        return st;
    uint8_t *out = uas_malloc(need ? need : 1);
    if (!out)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t n = 0;
    st = uas_secpol_user_encrypt(c->server_cert.data, c->server_cert.length, pol, c->password,
                                 c->password_len, c->server_nonce, c->server_nonce_len, out, need,
                                 &n);
    /* n == need by the contract of uas_secpol_user_cipher_len; the free
     * relies on it. */
    if (st == UAS_GOOD && (n != need || need == 0))
        st = UAS_BAD_INTERNAL_ERROR;
    if (st != UAS_GOOD) {
        uas_free(out, need ? need : 1);
        return st;
    }
    t->password.data = out;
    t->password.length = n;
    t->encryption_algorithm = uas_string_from(pol->asym_encryption_uri);
    return UAS_GOOD;
}

void uas__user_secret_free(uas_client *c, uas_user_name_identity_token *t)
{
    if (t->password.data && t->password.data != c->password)
        uas_free(t->password.data, t->password.length);
    t->password.data = NULL;
}

uas_status uas__user_sign(uas_client *c, uas_signature_data *sd, uint8_t *sig, size_t cap)
{
    memset(sd, 0, sizeof(*sd));
    const uas_secpol *pol;
    uas_status st = token_secpol(c, &pol, false);
    if (st != UAS_GOOD)
        return st;
    if (strcmp(uas_security_policy_uri(pol), POLICY_NONE) == 0)
        return UAS_GOOD; /* no signature asked for */
    uas_secpol_cred *cred = NULL;
    st = uas_secpol_cred_new(c->user_cert.data, c->user_cert.length, c->user_key.data,
                             c->user_key.length, &cred);
    if (st != UAS_GOOD)
        return st;
    /* Channel-bound (Part 4, 6.1.8 of 1.05.07) when the channel is of an
     * enhanced ECC policy and the token is of that same policy; otherwise
     * serverCertificate + serverNonce. */
    size_t n = c->server_cert.length + c->server_nonce_len;
    uint8_t *data = NULL;
    if (pol == c->policy && c->conn && uas__security_on(c) &&
        uas_channel_enhanced(uas_conn_channel(c->conn))) {
        st = uas__user_bound_data(c, &data, &n);
        if (st != UAS_GOOD) {
            uas_secpol_cred_unref(cred);
            return st;
        }
    } else {
        data = uas_malloc(n ? n : 1);
        if (!data) {
            uas_secpol_cred_unref(cred);
            return UAS_BAD_OUT_OF_MEMORY;
        }
        if (c->server_cert.length)
            memcpy(data, c->server_cert.data, c->server_cert.length);
        if (c->server_nonce_len)
            memcpy(data + c->server_cert.length, c->server_nonce, c->server_nonce_len);
    }
    size_t sig_len = 0;
    st = uas_secpol_user_sign(cred, pol, data, n, sig, cap, &sig_len);
    uas_free(data, n ? n : 1);
    uas_secpol_cred_unref(cred);
    if (st == UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED)
        uas_log(UAS_LOG_ERROR, "client",
                "%s: the user certificate's key does not fit user token policy %s (an ECC "
                "policy needs a user key of its curve, an RSA policy an RSA key)",
                c->cfg.endpoint_url, token_policy(c));
    if (st != UAS_GOOD)
        return st;
    sd->algorithm = uas_string_from(uas_security_policy_signature_uri(pol));
    sd->signature.data = sig;
    sd->signature.length = sig_len;
    return UAS_GOOD;
}
