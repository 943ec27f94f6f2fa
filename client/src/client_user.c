/* User identity tokens of ActivateSession (Part 4, 7.41): the password
 * secret of a UserNameIdentityToken and the userTokenSignature of an
 * X509IdentityToken. */
#include <string.h>

#include <ua/log.h>

#include "client_internal.h"
#include "secpol.h"
#include "secpol_user.h"

#define POLICY_NONE "http://opcfoundation.org/UA/SecurityPolicy#None"

/* The security policy that protects the user token: the token policy's,
 * or the channel's when the token policy names none. */
static const char *token_policy(const uas_client *c)
{
    return c->token_policy_uri[0] ? c->token_policy_uri : uas_security_policy_uri(c->policy);
}

/* The server certificate the secret is for: the first of a chain. */
static uas_status token_secpol(const uas_client *c, const uas_secpol **pol)
{
    *pol = uas_security_policy(token_policy(c), false);
    if (!*pol) {
        uas_log(UAS_LOG_ERROR, "client", "%s: user token policy %s is not supported",
                c->cfg.endpoint_url, token_policy(c));
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    if ((*pol)->ecc) {
        uas_log(UAS_LOG_ERROR, "client",
                "%s: a user name over %s needs an EccEncryptedSecret, which uastack does not "
                "implement (use an RSA endpoint or an anonymous login)",
                c->cfg.endpoint_url, token_policy(c));
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    return UAS_GOOD;
}

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
    uas_status st = token_secpol(c, &pol);
    if (st != UAS_GOOD)
        return st;
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
    uas_status st = token_secpol(c, &pol);
    if (st != UAS_GOOD)
        return st;
    if (strcmp(uas_security_policy_uri(pol), POLICY_NONE) == 0)
        return UAS_GOOD; /* no signature asked for */
    uas_secpol_cred *cred = NULL;
    st = uas_secpol_cred_new(c->user_cert.data, c->user_cert.length, c->user_key.data,
                             c->user_key.length, &cred);
    if (st != UAS_GOOD)
        return st;
    size_t n = c->server_cert.length + c->server_nonce_len;
    uint8_t *data = uas_malloc(n ? n : 1);
    if (!data) {
        uas_secpol_cred_unref(cred);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    if (c->server_cert.length)
        memcpy(data, c->server_cert.data, c->server_cert.length);
    if (c->server_nonce_len)
        memcpy(data + c->server_cert.length, c->server_nonce, c->server_nonce_len);
    size_t sig_len = 0;
    st = uas_secpol_user_sign(cred, pol, data, n, sig, cap, &sig_len);
    uas_free(data, n ? n : 1);
    uas_secpol_cred_unref(cred);
    if (st != UAS_GOOD)
        return st;
    sd->algorithm = uas_string_from(uas_security_policy_signature_uri(pol));
    sd->signature.data = sig;
    sd->signature.length = sig_len;
    return UAS_GOOD;
}
