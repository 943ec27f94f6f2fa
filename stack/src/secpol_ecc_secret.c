/* EccEncryptedSecret (secpol_ecc_secret.h): the layout, its key
 * derivation and the AEAD over the payload. Primitives come from
 * secpol_ecc_crypto.c (OpenSSL EVP, libsodium); nothing here is one. */
#include "secpol_ecc_secret.h"

#include <string.h>

#include <sodium.h>

#include <ua/mem.h>

#include "secpol_ecc.h"

#define LABEL "opcua-secret"

struct uas_ecc_rkey {
    const uas_secpol *pol;
    uas_ecc_eph eph;
    uint8_t pub[UAS_ECC_NONCE_MAX];
    size_t pub_len;
};

uas_status uas_ecc_rkey_new(const uas_secpol *pol, uas_ecc_rkey **out)
{
    *out = NULL;
    if (!pol || !pol->ecc)
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    uas_ecc_rkey *k = uas_malloc(sizeof(*k));
    if (!k)
        return UAS_BAD_OUT_OF_MEMORY;
    memset(k, 0, sizeof(*k));
    k->pol = pol;
    k->pub_len = uas__ecc_nonce_len(pol->ecc->curve);
    uas_status st = uas__ecc_eph_new(pol->ecc->curve, &k->eph, k->pub, k->pub_len);
    if (st != UAS_GOOD) {
        uas_ecc_rkey_free(k);
        return st;
    }
    *out = k;
    return UAS_GOOD;
}

const uint8_t *uas_ecc_rkey_pub(const uas_ecc_rkey *k, size_t *len)
{
    *len = k->pub_len;
    return k->pub;
}

const uas_secpol *uas_ecc_rkey_policy(const uas_ecc_rkey *k)
{
    return k->pol;
}

void uas_ecc_rkey_free(uas_ecc_rkey *k)
{
    if (!k)
        return;
    uas__ecc_eph_clear(&k->eph);
    uas_wipe(k, sizeof(*k));
    uas_free(k, sizeof(*k));
}

/* ---- little-endian fields ---- */

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

static uint8_t *put_bytes(uint8_t *p, const uint8_t *b, size_t n, bool null)
{
    if (null)
        return put_u32(p, UINT32_MAX); /* length -1: null */
    p = put_u32(p, (uint32_t)n);
    if (n)
        memcpy(p, b, n);
    return p + n;
}

/* ---- key derivation (Part 6, 6.8.3) ---- */

/* EncryptingKey | IV from the shared secret of eph and peer. */
static uas_status derive(const struct uas_ecc_suite *s, const uas_ecc_eph *eph, const uint8_t *peer,
                         const uint8_t *sender, const uint8_t *receiver, size_t key_len,
                         uint8_t *km, size_t km_len)
{
    uint8_t secret[UAS_ECC_SECRET_MAX];
    size_t secret_len = 0;
    uas_status st = uas__ecc_shared(s->curve, eph, peer, key_len, secret, &secret_len);
    if (st != UAS_GOOD)
        return st;
    uint8_t salt[2 + sizeof(LABEL) - 1 + 2 * UAS_ECC_NONCE_MAX];
    uint8_t *p = put_u16(salt, (uint16_t)km_len);
    memcpy(p, LABEL, sizeof(LABEL) - 1);
    p += sizeof(LABEL) - 1;
    memcpy(p, sender, key_len);
    p += key_len;
    memcpy(p, receiver, key_len);
    p += key_len;
    size_t salt_len = (size_t)(p - salt);
    st = uas__ecc_hkdf(s->md, secret, secret_len, salt, salt_len, salt, salt_len, km, km_len);
    sodium_memzero(secret, sizeof(secret));
    return st;
}

/* PayloadPaddingSize (Part 6, 6.8.3): the payload fills whole 16-byte
 * blocks, with at least one block beside the secret. */
static size_t padding_of(size_t nonce_len, size_t secret_len)
{
    size_t data = 4 + nonce_len + 4 + secret_len + 2;
    size_t pad = data % 16 == 0 ? 0 : 16 - data % 16;
    if (pad + secret_len < 16)
        pad += 16;
    return pad;
}

static uas_status aead(const struct uas_ecc_suite *s, bool encrypt, const uint8_t *km,
                       const uint8_t *aad, size_t aad_len, uint8_t *data, size_t data_len,
                       uint8_t *tag)
{
    uas_aead_key ak;
    memset(&ak, 0, sizeof(ak));
    uas_status st = uas__aead_key_set(&ak, s->aead, encrypt, km, km + s->enc_key_len);
    /* The IV as derived: token id and sequence number 0 leave it as it is. */
    if (st == UAS_GOOD)
        st = encrypt ? uas__aead_seal(&ak, s->aead, 0, 0, aad, aad_len, data, data_len, tag)
                     : uas__aead_open(&ak, s->aead, 0, 0, aad, aad_len, data, data_len, tag);
    uas__aead_key_clear(&ak);
    return st;
}

/* ---- sender ---- */

uas_status uas_ecc_secret_seal(const uas_secpol *pol, const uint8_t *cert, size_t cert_len,
                               const uint8_t *receiver_pub, size_t receiver_len,
                               const uint8_t *nonce, size_t nonce_len, const uint8_t *secret,
                               size_t secret_len, uas_datetime signing_time, uint8_t **out,
                               size_t *out_len, size_t *signed_len)
{
    *out = NULL;
    *out_len = *signed_len = 0;
    if (!pol || !pol->ecc)
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    const struct uas_ecc_suite *s = pol->ecc;
    size_t key_len = uas__ecc_nonce_len(s->curve);
    if (receiver_len != key_len)
        return UAS_BAD_NONCE_INVALID;
    if (secret_len > UAS_ECC_SECRET_MAX_SECRET || nonce_len > 1024 || cert_len > 65536)
        return UAS_BAD_INVALID_ARGUMENT;
    size_t uri_len = strlen(pol->uri);
    size_t pad = padding_of(nonce_len, secret_len);
    size_t payload = 4 + nonce_len + 4 + secret_len + pad + 2;
    size_t key_data = 4 + key_len + 4 + key_len;
    size_t header = 4 + 1 + 4 + 4 + uri_len + 4 + (cert ? cert_len : 0) + 8 + 2 + key_data;
    size_t total = header + payload + UAS_AEAD_TAG_LEN + s->sig_len;
    uint8_t *b = uas_malloc(total);
    if (!b)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_ecc_eph eph;
    memset(&eph, 0, sizeof(eph));
    uint8_t sender[UAS_ECC_NONCE_MAX];
    uas_status st = uas__ecc_eph_new(s->curve, &eph, sender, key_len);
    if (st != UAS_GOOD)
        goto fail;
    /* Common header: TypeId as a four-byte NodeId, the encoding mask, the
     * length of what follows the Length field. */
    uint8_t *p = b;
    *p++ = 0x01;
    *p++ = 0x00;
    p = put_u16(p, UAS_ECC_SECRET_TYPE_ID);
    *p++ = 0x01;
    p = put_u32(p, (uint32_t)(total - 9));
    p = put_bytes(p, (const uint8_t *)pol->uri, uri_len, false);
    p = put_bytes(p, cert, cert_len, cert == NULL);
    p = put_u32(p, (uint32_t)(uint64_t)signing_time);
    p = put_u32(p, (uint32_t)((uint64_t)signing_time >> 32));
    p = put_u16(p, (uint16_t)key_data);
    p = put_bytes(p, sender, key_len, false);
    p = put_bytes(p, receiver_pub, key_len, false);
    uint8_t *pl = p;
    p = put_bytes(p, nonce, nonce_len, false);
    p = put_bytes(p, secret, secret_len, false);
    memset(p, (int)(pad & 0xff), pad);
    p = put_u16(p + pad, (uint16_t)pad);
    uint8_t km[UAS_AEAD_KEY_MAX + UAS_AEAD_IV_LEN];
    size_t km_len = s->enc_key_len + UAS_AEAD_IV_LEN;
    st = derive(s, &eph, receiver_pub, sender, receiver_pub, key_len, km, km_len);
    if (st == UAS_GOOD)
        st = aead(s, true, km, b, (size_t)(pl - b), pl, payload, p);
    sodium_memzero(km, sizeof(km));
    if (st != UAS_GOOD)
        goto fail;
    uas__ecc_eph_clear(&eph);
    *out = b;
    *out_len = total;
    *signed_len = total - s->sig_len;
    return UAS_GOOD;
fail:
    uas__ecc_eph_clear(&eph);
    uas_wipe(b, total);
    uas_free(b, total);
    return st;
}

/* ---- receiver ---- */

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;
} reader;

static const uint8_t *take(reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static uint32_t get_u32(reader *r)
{
    const uint8_t *q = take(r, 4);
    return q ? (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24
             : 0;
}

/* A ByteString/String: NULL with *n 0 for null or empty. */
static const uint8_t *get_bytes(reader *r, size_t *n)
{
    uint32_t len = get_u32(r);
    *n = 0;
    if (r->bad || len == UINT32_MAX || len == 0)
        return NULL;
    const uint8_t *q = take(r, len);
    if (q)
        *n = len;
    return q;
}

static uas_status invalid(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return UAS_BAD_IDENTITY_TOKEN_INVALID;
}

uas_status uas_ecc_secret_parse(const uas_secpol *pol, const uint8_t *in, size_t len,
                                uas_ecc_secret_view *v, const char **why)
{
    memset(v, 0, sizeof(*v));
    if (!pol || !pol->ecc)
        return invalid(why, "not an ECC policy");
    const struct uas_ecc_suite *s = pol->ecc;
    reader r = {.p = in, .end = in ? in + len : NULL};
    const uint8_t *id = take(&r, 1);
    uint32_t type = 0;
    if (id && id[0] == 0x01) { /* four-byte NodeId */
        const uint8_t *q = take(&r, 3);
        type = q && q[0] == 0 ? (uint32_t)q[1] | (uint32_t)q[2] << 8 : 0;
    } else if (id && id[0] == 0x02) { /* numeric NodeId */
        const uint8_t *q = take(&r, 2);
        type = q && q[0] == 0 && q[1] == 0 ? get_u32(&r) : 0;
    }
    if (r.bad || type != UAS_ECC_SECRET_TYPE_ID)
        return invalid(why, "not an EccEncryptedSecret (TypeId)");
    const uint8_t *mask = take(&r, 1);
    uint32_t length = get_u32(&r);
    if (r.bad || mask[0] != 0x01)
        return invalid(why, "bad encoding mask");
    if ((size_t)length != (size_t)(r.end - r.p))
        return invalid(why, "Length field does not match the token");
    size_t uri_len;
    const uint8_t *uri = get_bytes(&r, &uri_len);
    if (r.bad || uri_len != strlen(pol->uri) || memcmp(uri, pol->uri, uri_len) != 0)
        return invalid(why, "SecurityPolicyUri is not the token policy's");
    v->cert = get_bytes(&r, &v->cert_len);
    uint32_t lo = get_u32(&r), hi = get_u32(&r);
    v->signing_time = (uas_datetime)((uint64_t)hi << 32 | lo);
    const uint8_t *kdl = take(&r, 2);
    if (r.bad)
        return invalid(why, "truncated header");
    size_t key_data = (size_t)kdl[0] | (size_t)kdl[1] << 8;
    const uint8_t *kd_start = r.p;
    v->sender_pub = get_bytes(&r, &v->sender_len);
    v->receiver_pub = get_bytes(&r, &v->receiver_len);
    if (r.bad || (size_t)(r.p - kd_start) != key_data)
        return invalid(why, "KeyDataLength does not match the keys");
    size_t key_len = uas__ecc_nonce_len(s->curve);
    if (v->sender_len != key_len || v->receiver_len != key_len)
        return invalid(why, "a public key of another length than the curve's");
    v->header_len = (size_t)(r.p - in);
    size_t rest = (size_t)(r.end - r.p);
    if (rest < (size_t)s->sig_len + UAS_AEAD_TAG_LEN + 16)
        return invalid(why, "no payload");
    v->sig_len = s->sig_len;
    v->signed_len = len - s->sig_len;
    v->payload_len = rest - s->sig_len;
    if ((v->payload_len - UAS_AEAD_TAG_LEN) % 16 != 0)
        return invalid(why, "payload is not whole blocks");
    return UAS_GOOD;
}

uas_status uas_ecc_secret_open(const uas_ecc_rkey *k, const uint8_t *in,
                               const uas_ecc_secret_view *v, const uint8_t *nonce, size_t nonce_len,
                               uint8_t *out, size_t cap, size_t *out_len, const char **why)
{
    *out_len = 0;
    const struct uas_ecc_suite *s = k->pol->ecc;
    if (v->receiver_len != k->pub_len || sodium_memcmp(v->receiver_pub, k->pub, k->pub_len) != 0)
        return invalid(why, "ReceiverPublicKey is not the key we handed out");
    size_t plen = v->payload_len - UAS_AEAD_TAG_LEN;
    uint8_t *pl = uas_malloc(plen);
    if (!pl)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(pl, in + v->header_len, plen);
    uint8_t tag[UAS_AEAD_TAG_LEN];
    memcpy(tag, in + v->header_len + plen, sizeof(tag));
    uint8_t km[UAS_AEAD_KEY_MAX + UAS_AEAD_IV_LEN];
    size_t km_len = s->enc_key_len + UAS_AEAD_IV_LEN;
    uas_status st =
        derive(s, &k->eph, v->sender_pub, v->sender_pub, k->pub, k->pub_len, km, km_len);
    if (st == UAS_BAD_NONCE_INVALID) {
        st = invalid(why, "SenderPublicKey is not on the curve or of low order");
    } else if (st == UAS_GOOD) {
        st = aead(s, false, km, in, v->header_len, pl, plen, tag);
        if (st == UAS_BAD_SECURITY_CHECKS_FAILED)
            st = invalid(why, "payload tag does not verify");
    }
    sodium_memzero(km, sizeof(km));
    if (st != UAS_GOOD)
        goto done;
    /* Nonce | Secret | Padding | PaddingSize, the padding at the end. */
    reader r = {.p = pl, .end = pl + plen};
    size_t got_nonce_len, secret_len;
    const uint8_t *got_nonce = get_bytes(&r, &got_nonce_len);
    const uint8_t *secret = get_bytes(&r, &secret_len);
    if (r.bad || (size_t)(r.end - r.p) < 2) {
        st = invalid(why, "payload does not decode");
        goto done;
    }
    if (got_nonce_len != nonce_len || !nonce_len ||
        sodium_memcmp(got_nonce, nonce, nonce_len) != 0) {
        st = invalid(why, "bad nonce");
        goto done;
    }
    size_t pad = (size_t)pl[plen - 2] | (size_t)pl[plen - 1] << 8;
    if (pad != (size_t)(r.end - r.p) - 2 || pad != padding_of(nonce_len, secret_len)) {
        st = invalid(why, "bad padding");
        goto done;
    }
    for (size_t i = 0; i < pad; i++)
        if (r.p[i] != (uint8_t)(pad & 0xff)) {
            st = invalid(why, "bad padding");
            goto done;
        }
    if (secret_len > cap) {
        st = UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        goto done;
    }
    if (secret_len)
        memcpy(out, secret, secret_len);
    *out_len = secret_len;
done:
    uas_wipe(pl, plen);
    uas_free(pl, plen);
    return st;
}
