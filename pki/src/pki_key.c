/* Public keys a validation is willing to compute with. A signature check
 * costs about (bits of the exponent) x (bits of the modulus)^2: an RSA key
 * with a 3072-bit public exponent makes one X509_verify as expensive as a
 * private-key operation, and a peer may send ten of them with one OPN.
 * So every key is looked at before it takes part in any signature check:
 * the exponent must be an odd number of at most 32 bits (65537 in
 * practice; Part 6 and every CA profile use it) and the modulus within the
 * size bounds of its role. */
#include "pki_internal.h"

#include <stdio.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>

const char *pki_key_refusal(EVP_PKEY *pk, uint32_t min_bits, uint32_t max_bits, char *buf,
                            size_t cap)
{
    if (!pk) {
        snprintf(buf, cap, "unusable public key");
        return buf;
    }
    int id = EVP_PKEY_get_base_id(pk);
    uint32_t bits = (uint32_t)EVP_PKEY_get_bits(pk);
    if (id == EVP_PKEY_EC || id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) {
        /* Curve sizes are fixed and their checks cheap. */
        return NULL;
    }
    if (id != EVP_PKEY_RSA && id != EVP_PKEY_RSA_PSS) {
        snprintf(buf, cap, "key type %s is not supported", OBJ_nid2sn(id));
        return buf;
    }
    if ((min_bits && bits < min_bits) || bits > max_bits) {
        snprintf(buf, cap, "RSA key of %u bits, allowed %u..%u", bits, min_bits, max_bits);
        return buf;
    }
    BIGNUM *e = NULL;
    const char *bad = NULL;
    if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e) != 1 || !e)
        bad = "RSA key without a readable public exponent";
    else if (BN_num_bits(e) > PKI_MAX_RSA_EXPONENT_BITS)
        bad = "RSA public exponent of more than 32 bits";
    else if (!BN_is_odd(e) || BN_is_one(e))
        bad = "RSA public exponent is not an odd number above 1";
    BN_free(e);
    ERR_clear_error();
    if (bad) {
        snprintf(buf, cap, "%s", bad);
        return buf;
    }
    return NULL;
}
