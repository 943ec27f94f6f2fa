/* SecurityPolicy None: chunks go out as they are. Also the policy table and
 * the parts of the policy API that do not depend on the crypto library
 * (stubs of the rest when UA_ENABLE_ENCRYPTION is off). */
#include <string.h>

#include "secpol.h"

static size_t none_overhead(const void *keys, size_t chunk_cap)
{
    (void)keys;
    (void)chunk_cap;
    return 0;
}

static uas_status none_protect(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                               size_t cap)
{
    (void)keys;
    (void)header_len;
    (void)cap;
    uint32_t size = (uint32_t)*len;
    chunk[4] = (uint8_t)size;
    chunk[5] = (uint8_t)(size >> 8);
    chunk[6] = (uint8_t)(size >> 16);
    chunk[7] = (uint8_t)(size >> 24);
    return UAS_GOOD;
}

static uas_status none_unprotect(void *keys, uint8_t *chunk, size_t header_len, size_t *len)
{
    (void)keys;
    (void)chunk;
    (void)header_len;
    (void)len;
    return UAS_GOOD;
}

const uas_secpol uas_secpol_none = {
    .uri = UAS_SECPOL_NONE_URI,
    .sym_overhead = none_overhead,
    .sym_protect = none_protect,
    .sym_unprotect = none_unprotect,
    .asym_overhead = none_overhead,
    .asym_protect = none_protect,
    .asym_unprotect = none_unprotect,
};

static const uas_secpol *const policies[] = {
    &uas_secpol_none,
#ifdef UAS_ENABLE_ENCRYPTION
    &uas_secpol_aes256_sha256_rsapss,
    &uas_secpol_basic256sha256,
    &uas_secpol_aes128_sha256_rsaoaep,
    &uas_secpol_ecc_nistp256_aesgcm,
    &uas_secpol_ecc_nistp256_chachapoly,
    &uas_secpol_ecc_nistp384_aesgcm,
    &uas_secpol_ecc_nistp384_chachapoly,
    &uas_secpol_ecc_brainpoolp256r1_aesgcm,
    &uas_secpol_ecc_brainpoolp256r1_chachapoly,
    &uas_secpol_ecc_brainpoolp384r1_aesgcm,
    &uas_secpol_ecc_brainpoolp384r1_chachapoly,
    &uas_secpol_ecc_curve25519,
    &uas_secpol_ecc_curve448,
    &uas_secpol_basic256,
#endif
};

static bool uri_is(const uas_secpol *p, const uint8_t *uri, size_t len)
{
    size_t n = strlen(p->uri);
    return n == len && memcmp(p->uri, uri, n) == 0;
}

const uas_secpol *uas_secpol_find(const uint8_t *uri, size_t len)
{
    return uri_is(&uas_secpol_none, uri, len) ? &uas_secpol_none : NULL;
}

const uas_secpol *const *uas_secpol_all(size_t *count)
{
    *count = sizeof(policies) / sizeof(policies[0]);
    return policies;
}

const uas_secpol *uas_secpol_lookup(const uint8_t *uri, size_t len, bool allow_deprecated)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        if (uri_is(policies[i], uri, len))
            return !policies[i]->deprecated || allow_deprecated ? policies[i] : NULL;
    }
    return NULL;
}

static size_t put_bytes(uint8_t *p, const void *data, size_t len)
{
    uint32_t n = data ? (uint32_t)len : UINT32_MAX;
    p[0] = (uint8_t)n;
    p[1] = (uint8_t)(n >> 8);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 24);
    if (data)
        memcpy(p + 4, data, len);
    return 4 + (data ? len : 0);
}

size_t uas_secpol_asym_header(const uas_secpol *pol, const void *keys, uint8_t *p, size_t cap)
{
    const uint8_t *cert = NULL, *thumb = NULL;
    size_t cert_len = 0;
    if (pol != &uas_secpol_none) {
        if (!keys)
            return 0;
        cert = uas_secpol_keys_local_cert(keys, &cert_len);
        thumb = uas_secpol_keys_peer_thumbprint(keys);
        if (!cert || !thumb)
            return 0;
    }
    size_t uri_len = strlen(pol->uri);
    size_t need = 12 + uri_len + (cert ? cert_len : 0) + (thumb ? 20 : 0);
    if (need > cap)
        return 0;
    size_t n = put_bytes(p, pol->uri, uri_len);
    n += put_bytes(p + n, cert, cert_len);
    n += put_bytes(p + n, thumb, 20);
    return n;
}

#ifndef UAS_ENABLE_ENCRYPTION
/* Without the crypto library only None exists: the key API answers
 * BadNotSupported so the channel compiles the same in both builds. */
uas_status uas_secpol_cred_new(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                               size_t key_len, uas_secpol_cred **out)
{
    (void)cert;
    (void)cert_len;
    (void)key;
    (void)key_len;
    *out = NULL;
    return UAS_BAD_NOT_SUPPORTED;
}
void uas_secpol_cred_ref(uas_secpol_cred *c)
{
    (void)c;
}
void uas_secpol_cred_unref(uas_secpol_cred *c)
{
    (void)c;
}
const uint8_t *uas_secpol_cred_cert(const uas_secpol_cred *c, size_t *len)
{
    (void)c;
    *len = 0;
    return NULL;
}
const uint8_t *uas_secpol_cred_thumbprint(const uas_secpol_cred *c)
{
    (void)c;
    return NULL;
}
uint32_t uas_secpol_cred_key_bits(const uas_secpol_cred *c)
{
    (void)c;
    return 0;
}
uas_status uas_secpol_check_cert(const uas_secpol *pol, const uint8_t *der, size_t len)
{
    (void)pol;
    (void)der;
    (void)len;
    return UAS_BAD_NOT_SUPPORTED;
}
const char *uas_secpol_cert_type(const uas_secpol *pol)
{
    (void)pol;
    return NULL;
}
bool uas_secpol_cred_fits(const uas_secpol *pol, const uas_secpol_cred *c)
{
    (void)pol;
    (void)c;
    return false;
}
uas_status uas_secpol_keys_make_nonce(uas_secpol_keys *k, uint8_t *out, size_t len)
{
    (void)k;
    (void)out;
    (void)len;
    return UAS_BAD_NOT_SUPPORTED;
}
bool uas_secpol_keys_enhanced(const uas_secpol_keys *k)
{
    (void)k;
    return false;
}
uas_status uas_secpol_keys_bound_data(const uas_secpol_keys *k, const uint8_t *nonce_a,
                                      size_t nonce_a_len, const uint8_t *const *certs,
                                      const size_t *cert_lens, size_t n_certs,
                                      const uint8_t *nonce_b, size_t nonce_b_len, uint8_t **out,
                                      size_t *out_len)
{
    (void)k;
    (void)nonce_a;
    (void)nonce_a_len;
    (void)certs;
    (void)cert_lens;
    (void)n_certs;
    (void)nonce_b;
    (void)nonce_b_len;
    *out = NULL;
    *out_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}
uas_status uas_secpol_keys_new(const uas_secpol *pol, uas_secpol_cred *cred, uas_secpol_keys **out)
{
    (void)pol;
    (void)cred;
    *out = NULL;
    return UAS_BAD_NOT_SUPPORTED;
}
uas_status uas_secpol_keys_clone_peer(const uas_secpol_keys *k, uas_secpol_keys **out)
{
    (void)k;
    *out = NULL;
    return UAS_BAD_NOT_SUPPORTED;
}
void uas_secpol_keys_adopt_sign_state(uas_secpol_keys *k, const uas_secpol_keys *job)
{
    (void)k;
    (void)job;
}
void uas_secpol_keys_free(uas_secpol_keys *k)
{
    (void)k;
}
const uas_secpol *uas_secpol_keys_policy(const uas_secpol_keys *k)
{
    (void)k;
    return &uas_secpol_none;
}
uas_status uas_secpol_keys_set_mode(uas_secpol_keys *k, int32_t mode)
{
    (void)k;
    (void)mode;
    return UAS_BAD_NOT_SUPPORTED;
}
int32_t uas_secpol_keys_mode(const uas_secpol_keys *k)
{
    (void)k;
    return 1; /* None */
}
uas_status uas_secpol_keys_set_peer(uas_secpol_keys *k, const uint8_t *der, size_t len)
{
    (void)k;
    (void)der;
    (void)len;
    return UAS_BAD_NOT_SUPPORTED;
}
const uint8_t *uas_secpol_keys_local_cert(const uas_secpol_keys *k, size_t *len)
{
    (void)k;
    *len = 0;
    return NULL;
}
const uint8_t *uas_secpol_keys_peer_thumbprint(const uas_secpol_keys *k)
{
    (void)k;
    return NULL;
}
bool uas_secpol_keys_peer_is(const uas_secpol_keys *k, const uint8_t *der, size_t len)
{
    (void)k;
    (void)der;
    (void)len;
    return false;
}
uas_status uas_secpol_make_nonce(const uas_secpol *pol, uint8_t *out, size_t len)
{
    (void)pol;
    (void)out;
    (void)len;
    return UAS_BAD_NOT_SUPPORTED;
}
uas_status uas_secpol_derive_keys(uas_secpol_keys *k, uint32_t token_id, const uint8_t *local_nonce,
                                  size_t local_len, const uint8_t *remote_nonce, size_t remote_len,
                                  bool is_server)
{
    (void)k;
    (void)token_id;
    (void)local_nonce;
    (void)local_len;
    (void)remote_nonce;
    (void)remote_len;
    (void)is_server;
    return UAS_BAD_NOT_SUPPORTED;
}
void uas_secpol_keys_drop_prev(uas_secpol_keys *k)
{
    (void)k;
}
uas_status uas_secpol_keys_sign(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                uint8_t *sig, size_t sig_cap, size_t *sig_len)
{
    (void)k;
    (void)data;
    (void)len;
    (void)sig;
    (void)sig_cap;
    *sig_len = 0;
    return UAS_BAD_NOT_SUPPORTED;
}
uas_status uas_secpol_keys_verify(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                  const uint8_t *sig, size_t sig_len)
{
    (void)k;
    (void)data;
    (void)len;
    (void)sig;
    (void)sig_len;
    return UAS_BAD_NOT_SUPPORTED;
}
#endif

/* ---- the public surface (ua/security.h) ---- */

const uas_secpol *uas_security_policy(const char *uri, bool allow_deprecated)
{
    return uri ? uas_secpol_lookup((const uint8_t *)uri, strlen(uri), allow_deprecated) : NULL;
}

const char *uas_security_policy_uri(const uas_secpol *p)
{
    return p->uri;
}

const char *uas_security_policy_signature_uri(const uas_secpol *p)
{
    return p->asym_signature_uri;
}

size_t uas_security_policy_nonce_length(const uas_secpol *p)
{
    return p->nonce_len;
}
