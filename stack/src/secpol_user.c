/* User identity token cryptography (secpol_user.h): password encryption and
 * user token signatures with the asymmetric algorithms of a policy. */
#include "secpol_user.h"

#include <string.h>

#include <ua/mem.h>

#ifdef UAS_ENABLE_ENCRYPTION

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>

#include "secpol_internal.h"

static bool rsa_policy(const uas_secpol *pol)
{
    return pol && pol->algs;
}

/* A public exponent of at most 32 bits, odd and at least 3 (65537 in
 * practice): a verification with a huge exponent costs as much as a
 * private-key operation, which anyone could make us do with a certificate
 * of their own. */
static bool exponent_fits(const EVP_PKEY *pub)
{
    BIGNUM *e = NULL;
    if (!EVP_PKEY_get_bn_param(pub, OSSL_PKEY_PARAM_RSA_E, &e))
        return false;
    bool ok = BN_num_bits(e) <= 32 && BN_is_odd(e) && !BN_is_one(e);
    BN_free(e);
    return ok;
}

uas_status uas_secpol_user_cipher_len(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                      size_t password_len, size_t nonce_len, size_t *out_len)
{
    *out_len = 0;
    if (!rsa_policy(pol))
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    EVP_PKEY *pub;
    uint8_t thumb[UAS_SHA1_LEN];
    uas_status st = uas__secpol_peer_key(pol, cert, cert_len, &pub, thumb);
    if (st != UAS_GOOD)
        return st;
    size_t block = uas_crypto_rsa_plain_block(pub, pol->algs->asym_enc);
    size_t plain = 4 + password_len + nonce_len;
    *out_len = (plain + block - 1) / block * uas_crypto_rsa_size(pub);
    EVP_PKEY_free(pub);
    return UAS_GOOD;
}

uas_status uas_secpol_user_encrypt(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                   const uint8_t *password, size_t password_len,
                                   const uint8_t *server_nonce, size_t nonce_len, uint8_t *out,
                                   size_t cap, size_t *out_len)
{
    *out_len = 0;
    if (!rsa_policy(pol))
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    if (password_len + nonce_len > UINT32_MAX - 4 || (password_len && !password) ||
        (nonce_len && !server_nonce))
        return UAS_BAD_INVALID_ARGUMENT;
    size_t need;
    uas_status st = uas_secpol_user_cipher_len(cert, cert_len, pol, password_len, nonce_len, &need);
    if (st != UAS_GOOD)
        return st;
    if (cap < need)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    EVP_PKEY *pub;
    uint8_t thumb[UAS_SHA1_LEN];
    st = uas__secpol_peer_key(pol, cert, cert_len, &pub, thumb);
    if (st != UAS_GOOD)
        return st;
    size_t plain_len = 4 + password_len + nonce_len;
    uint8_t *plain = uas_malloc(plain_len);
    if (!plain) {
        EVP_PKEY_free(pub);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    uint32_t n = (uint32_t)(password_len + nonce_len);
    plain[0] = (uint8_t)n;
    plain[1] = (uint8_t)(n >> 8);
    plain[2] = (uint8_t)(n >> 16);
    plain[3] = (uint8_t)(n >> 24);
    if (password_len)
        memcpy(plain + 4, password, password_len);
    if (nonce_len)
        memcpy(plain + 4 + password_len, server_nonce, nonce_len);
    st = uas_crypto_rsa_encrypt(pol->algs->asym_enc, pub, plain, plain_len, out, cap, out_len);
    uas_wipe(plain, plain_len);
    uas_free(plain, plain_len);
    EVP_PKEY_free(pub);
    return st;
}

size_t uas_secpol_user_block_len(const uas_secpol_cred *cred)
{
    return cred ? uas_crypto_rsa_size(cred->key) : 0;
}

/* The plaintext of a legacy secret: length | secret | nonce, then the
 * zero padding some clients add up to whole OAEP blocks (Part 4,
 * 7.41.2.2: "If a Client adds padding then all bytes shall be zero"). */
static uas_status parse_plain(const uint8_t *plain, size_t plain_len, const uint8_t *server_nonce,
                              size_t nonce_len, size_t *secret_len, const char **why)
{
    if (plain_len < 4) {
        *why = "bad length field";
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    size_t n =
        (size_t)plain[0] | (size_t)plain[1] << 8 | (size_t)plain[2] << 16 | (size_t)plain[3] << 24;
    if (n > plain_len - 4 || n < nonce_len) {
        *why = "bad length field";
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    uint8_t pad = 0;
    for (size_t i = 4 + n; i < plain_len; i++)
        pad |= plain[i];
    if (pad) {
        *why = "padding is not zero";
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    if (!uas_crypto_ct_equal(plain + 4 + n - nonce_len, server_nonce, nonce_len)) {
        *why = "bad nonce";
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    *secret_len = n - nonce_len;
    return UAS_GOOD;
}

uas_status uas_secpol_user_decrypt(const uas_secpol_cred *cred, const uas_secpol *pol,
                                   const uint8_t *cipher, size_t len, const uint8_t *server_nonce,
                                   size_t nonce_len, uint8_t *out_password, size_t cap,
                                   size_t *out_len, const char **why)
{
    const char *unused;
    if (!why)
        why = &unused;
    *why = "";
    *out_len = 0;
    if (!rsa_policy(pol)) {
        *why = "no encryption in the policy";
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    }
    if (!cred || !cipher || len == 0) {
        *why = "no secret";
        return UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    uint8_t *plain = uas_malloc(len);
    if (!plain)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t plain_len = 0;
    uas_status st =
        uas_crypto_rsa_decrypt(pol->algs->asym_enc, cred->key, cipher, len, plain, len, &plain_len);
    if (st == UAS_GOOD) {
        size_t pw = 0;
        st = parse_plain(plain, plain_len, server_nonce, nonce_len, &pw, why);
        if (st == UAS_GOOD && pw > cap) {
            *why = "secret longer than the buffer";
            st = UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        } else if (st == UAS_GOOD) {
            if (pw)
                memcpy(out_password, plain + 4, pw);
            *out_len = pw;
        }
    } else if (st != UAS_BAD_OUT_OF_MEMORY) {
        *why = "decryption failure";
        st = UAS_BAD_IDENTITY_TOKEN_INVALID;
    }
    uas_wipe(plain, len);
    uas_free(plain, len);
    return st;
}

uas_status uas_secpol_user_sign(const uas_secpol_cred *cred, const uas_secpol *pol,
                                const uint8_t *data, size_t len, uint8_t *sig, size_t sig_cap,
                                size_t *sig_len)
{
    *sig_len = 0;
    if (pol && pol->ecc) {
        /* ECDSA (r | s) or EdDSA with a user key of the policy's curve. */
        if (!cred)
            return UAS_BAD_INVALID_ARGUMENT;
        if (!cred->is_ecc || cred->curve != pol->ecc->curve)
            return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
        if (sig_cap < pol->ecc->sig_len)
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        uas_status st = uas__ecc_sign(pol->ecc, cred->key, cred->ed_sk, data, len, NULL, 0, sig);
        if (st == UAS_GOOD)
            *sig_len = pol->ecc->sig_len;
        return st;
    }
    if (!rsa_policy(pol))
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    if (!cred)
        return UAS_BAD_INVALID_ARGUMENT;
    if (cred->is_ecc)
        return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
    size_t n = uas_crypto_rsa_size(cred->key);
    if (n == 0 || sig_cap < n)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    uas_status st = uas_crypto_rsa_sign(pol->algs->asym_sig, cred->key, data, len, sig, n);
    if (st == UAS_GOOD)
        *sig_len = n;
    return st;
}

uas_status uas_secpol_user_verify(const uas_secpol *pol, const uint8_t *cert, size_t cert_len,
                                  const uint8_t *data, size_t len, const uint8_t *sig,
                                  size_t sig_len)
{
    if (!rsa_policy(pol) && !(pol && pol->ecc))
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    EVP_PKEY *pub;
    uint8_t thumb[UAS_SHA1_LEN];
    /* The key must be of the policy's kind: an ECC policy takes exactly its
     * curve's key, an RSA policy an RSA key in its size range
     * (BadCertificatePolicyCheckFailed otherwise). */
    uas_status st = uas__secpol_peer_key(pol, cert, cert_len, &pub, thumb);
    if (st != UAS_GOOD)
        return st;
    if (pol->ecc) {
        st = uas__ecc_verify(pol->ecc, pub, data, len, NULL, 0, sig, sig_len);
        EVP_PKEY_free(pub);
        return st == UAS_GOOD ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    if (!exponent_fits(pub)) {
        EVP_PKEY_free(pub);
        return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
    }
    st = uas_crypto_rsa_verify(pol->algs->asym_sig, pub, data, len, sig, sig_len);
    EVP_PKEY_free(pub);
    return st == UAS_GOOD ? UAS_GOOD : UAS_BAD_SECURITY_CHECKS_FAILED;
}

#else /* !UAS_ENABLE_ENCRYPTION */

uas_status uas_secpol_user_cipher_len(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                      size_t password_len, size_t nonce_len, size_t *out_len)
{
    (void)cert, (void)cert_len, (void)pol, (void)password_len, (void)nonce_len;
    *out_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}

uas_status uas_secpol_user_encrypt(const uint8_t *cert, size_t cert_len, const uas_secpol *pol,
                                   const uint8_t *password, size_t password_len,
                                   const uint8_t *server_nonce, size_t nonce_len, uint8_t *out,
                                   size_t cap, size_t *out_len)
{
    (void)cert, (void)cert_len, (void)pol, (void)password, (void)password_len;
    (void)server_nonce, (void)nonce_len, (void)out, (void)cap;
    *out_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}

size_t uas_secpol_user_block_len(const uas_secpol_cred *cred)
{
    (void)cred;
    return 0;
}

uas_status uas_secpol_user_decrypt(const uas_secpol_cred *cred, const uas_secpol *pol,
                                   const uint8_t *cipher, size_t len, const uint8_t *server_nonce,
                                   size_t nonce_len, uint8_t *out_password, size_t cap,
                                   size_t *out_len, const char **why)
{
    if (why)
        *why = "no encryption support";
    (void)cred, (void)pol, (void)cipher, (void)len, (void)server_nonce, (void)nonce_len;
    (void)out_password, (void)cap;
    *out_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}

uas_status uas_secpol_user_sign(const uas_secpol_cred *cred, const uas_secpol *pol,
                                const uint8_t *data, size_t len, uint8_t *sig, size_t sig_cap,
                                size_t *sig_len)
{
    (void)cred, (void)pol, (void)data, (void)len, (void)sig, (void)sig_cap;
    *sig_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}

uas_status uas_secpol_user_verify(const uas_secpol *pol, const uint8_t *cert, size_t cert_len,
                                  const uint8_t *data, size_t len, const uint8_t *sig,
                                  size_t sig_len)
{
    (void)pol, (void)cert, (void)cert_len, (void)data, (void)len, (void)sig, (void)sig_len;
    return UAS_BAD_NOT_SUPPORTED;
}

#endif
