/* Key material of the RSA security policies: the application's credentials
 * (shared), the per-channel keys (peer certificate, mode, symmetric keys of
 * the newest and the previous token) and the key derivation of Part 6,
 * 6.7.5. Every secret is zeroed with libsodium before its memory is given
 * back. */
#include <pthread.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>
#include <sodium.h>

#include <ua/mem.h>
#include <ua/types.h>

#include "secpol_internal.h"

/* ---- credentials ---- */

/* Credentials made recently, shared by whoever asks for the same
 * certificate and key again. A client program that opens many
 * connections with one certificate (the load generator: one per session)
 * otherwise parsed the private key and certificate per connection:
 * OpenSSL 3.0's decoders made that 60 % of the client's CPU per ECC
 * set-up. A hit needs the same certificate bytes and the same SHA-256 of
 * the key bytes; the key itself is not copied. Credentials are immutable
 * and reference-counted, so sharing them between channels and threads is
 * what the server already does with its own. The cache keeps one
 * reference to each entry until it is pushed out. */
enum { CRED_CACHE = 4 };
static struct {
    uas_secpol_cred *cred;
    uint8_t key_hash[UAS_SHA256_LEN];
} g_creds[CRED_CACHE];
static unsigned g_creds_next;
static pthread_mutex_t g_creds_lock = PTHREAD_MUTEX_INITIALIZER;

static uas_status cred_parse(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                             size_t key_len, uas_secpol_cred **out);

uas_status uas_secpol_cred_new(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                               size_t key_len, uas_secpol_cred **out)
{
    *out = NULL;
    uint8_t h[UAS_SHA256_LEN];
    if (!cert || !key || uas_crypto_digest(UAS_DIGEST_SHA256, key, key_len, h) != UAS_GOOD)
        return cred_parse(cert, cert_len, key, key_len, out);
    pthread_mutex_lock(&g_creds_lock);
    for (unsigned i = 0; i < CRED_CACHE; i++) {
        uas_secpol_cred *c = g_creds[i].cred;
        if (c && c->cert_len == cert_len && memcmp(c->cert, cert, cert_len) == 0 &&
            sodium_memcmp(g_creds[i].key_hash, h, sizeof(h)) == 0) {
            uas_secpol_cred_ref(c);
            pthread_mutex_unlock(&g_creds_lock);
            sodium_memzero(h, sizeof(h));
            *out = c;
            return UAS_GOOD;
        }
    }
    pthread_mutex_unlock(&g_creds_lock);
    uas_status st = cred_parse(cert, cert_len, key, key_len, out);
    if (st == UAS_GOOD) {
        uas_secpol_cred_ref(*out);
        pthread_mutex_lock(&g_creds_lock);
        unsigned i = g_creds_next++ % CRED_CACHE;
        uas_secpol_cred *old = g_creds[i].cred;
        g_creds[i].cred = *out;
        memcpy(g_creds[i].key_hash, h, sizeof(h));
        pthread_mutex_unlock(&g_creds_lock);
        uas_secpol_cred_unref(old);
    }
    sodium_memzero(h, sizeof(h));
    return st;
}

static uas_status cred_parse(const uint8_t *cert, size_t cert_len, const uint8_t *key,
                             size_t key_len, uas_secpol_cred **out)
{
    *out = NULL;
    X509 *x = NULL;
    EVP_PKEY *pk = NULL;
    uas_secpol_cred *c = NULL;
    size_t der_len = 0;
    uas_status st = uas_crypto_load_cert(cert, cert_len, &x, &der_len);
    if (st != UAS_GOOD)
        goto out;
    /* Our certificate alone, not a chain: it is what peers thumbprint. */
    if (der_len != cert_len) {
        st = UAS_BAD_CERTIFICATE_INVALID;
        goto out;
    }
    st = uas_crypto_load_private_key(key, key_len, &pk);
    if (st != UAS_GOOD)
        goto out;
    uas_ecc_curve curve = UAS_ECC_NISTP256;
    bool ecc = uas__ecc_key_curve(pk, &curve);
    if ((!ecc && uas_crypto_rsa_bits(pk) == 0) || X509_check_private_key(x, pk) != 1) {
        st = UAS_BAD_INVALID_ARGUMENT;
        goto out;
    }
    c = uas_calloc(1, sizeof(*c));
    if (!c || !(c->cert = uas_malloc(cert_len))) {
        st = UAS_BAD_OUT_OF_MEMORY;
        goto out;
    }
    c->is_ecc = ecc;
    c->curve = curve;
    if (ecc && curve == UAS_ECC_CURVE25519) {
        /* libsodium signs Ed25519 from the 32-byte seed OpenSSL holds. */
        uint8_t seed[32], pub[32];
        size_t n = sizeof(seed);
        int ok = EVP_PKEY_get_raw_private_key(pk, seed, &n) == 1 && n == sizeof(seed) &&
                 crypto_sign_ed25519_seed_keypair(pub, c->ed_sk, seed) == 0;
        sodium_memzero(seed, sizeof(seed));
        if (!ok) {
            st = UAS_BAD_INVALID_ARGUMENT;
            goto out;
        }
    }
    memcpy(c->cert, cert, cert_len);
    c->cert_len = cert_len;
    st = uas_crypto_digest(UAS_DIGEST_SHA1, cert, cert_len, c->thumb);
    if (st != UAS_GOOD)
        goto out;
    c->key = pk;
    pk = NULL;
    c->key_bits = ecc ? (uint32_t)EVP_PKEY_get_bits(c->key) : uas_crypto_rsa_bits(c->key);
    atomic_init(&c->refs, 1);
    *out = c;
    c = NULL;
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(pk);
    if (c) {
        if (c->cert)
            uas_free(c->cert, cert_len);
        uas_free(c, sizeof(*c));
    }
    return st;
}

void uas_secpol_cred_ref(uas_secpol_cred *c)
{
    if (c)
        atomic_fetch_add(&c->refs, 1);
}

void uas_secpol_cred_unref(uas_secpol_cred *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    /* EVP_PKEY_free clears the key's numbers (OpenSSL's BN_clear_free). */
    EVP_PKEY_free(c->key);
    uas_free(c->cert, c->cert_len);
    sodium_memzero(c->ed_sk, sizeof(c->ed_sk));
    uas_free(c, sizeof(*c));
}

const uint8_t *uas_secpol_cred_cert(const uas_secpol_cred *c, size_t *len)
{
    *len = c ? c->cert_len : 0;
    return c ? c->cert : NULL;
}

const uint8_t *uas_secpol_cred_thumbprint(const uas_secpol_cred *c)
{
    return c ? c->thumb : NULL;
}

uint32_t uas_secpol_cred_key_bits(const uas_secpol_cred *c)
{
    return c ? c->key_bits : 0;
}

static bool key_fits(const uas_secpol *pol, uint32_t bits)
{
    return bits != 0 && bits >= pol->min_key_bits && bits <= pol->max_key_bits;
}

bool uas_secpol_cred_fits(const uas_secpol *pol, const uas_secpol_cred *c)
{
    if (!pol || !c)
        return false;
    if (pol->ecc)
        return c->is_ecc && c->curve == pol->ecc->curve;
    return pol->algs && !c->is_ecc && key_fits(pol, c->key_bits);
}

/* A ByteString field of the security header (a negative length is null);
 * false when malformed. */
static bool rd_bytes(const uint8_t **p, const uint8_t *end, const uint8_t **data, size_t *len)
{
    if (end - *p < 4)
        return false;
    int32_t n = (int32_t)((uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 | (uint32_t)(*p)[2] << 16 |
                          (uint32_t)(*p)[3] << 24);
    *p += 4;
    if (n < 0) {
        *data = NULL;
        *len = 0;
        return true;
    }
    if ((size_t)(end - *p) < (size_t)n)
        return false;
    *data = *p;
    *len = (size_t)n;
    *p += n;
    return true;
}

uas_status uas__secpol_opn_sender(const uas_secpol_keys *k, const uint8_t *chunk, size_t header_len,
                                  EVP_PKEY **sender, uint8_t thumb[UAS_SHA1_LEN])
{
    *sender = NULL;
    const uint8_t *p = chunk + 12, *hend = chunk + header_len;
    const uint8_t *uri, *cert, *rthumb;
    size_t uri_len, cert_len, rthumb_len;
    if (!rd_bytes(&p, hend, &uri, &uri_len) || !rd_bytes(&p, hend, &cert, &cert_len) ||
        !rd_bytes(&p, hend, &rthumb, &rthumb_len) || p != hend)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    if (!uri || uri_len != strlen(k->pol->uri) || memcmp(uri, k->pol->uri, uri_len) != 0)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    /* Part 6 6.7.7: an unknown ReceiverCertificateThumbprint is
     * Bad_CertificateInvalid. */
    if (!rthumb || rthumb_len != UAS_SHA1_LEN || memcmp(rthumb, k->cred->thumb, UAS_SHA1_LEN) != 0)
        return UAS_BAD_CERTIFICATE_INVALID;
    if (!cert)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    uas_status st = uas__secpol_peer_key(k->pol, cert, cert_len, sender, thumb);
    if (st != UAS_GOOD)
        return st; /* BadCertificateInvalid / BadCertificatePolicyCheckFailed */
    /* Once a peer is known (client: the endpoint's certificate; server: the
     * first OPN), every OPN must come from that same certificate. */
    if (k->peer_spki && memcmp(thumb, k->peer_thumb, UAS_SHA1_LEN) != 0) {
        EVP_PKEY_free(*sender);
        *sender = NULL;
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    }
    return UAS_GOOD;
}

uas_status uas__secpol_peer_key(const uas_secpol *pol, const uint8_t *der, size_t len,
                                EVP_PKEY **pub, uint8_t thumb[UAS_SHA1_LEN])
{
    *pub = NULL;
    size_t der_len = 0;
    uas_status st = uas_crypto_cert_len(der, len, &der_len);
    if (st != UAS_GOOD)
        return st;
    EVP_PKEY *k = uas_crypto_public_key(der, der_len, true);
    if (!k)
        return UAS_BAD_CERTIFICATE_INVALID;
    /* An ECC policy takes exactly its curve's key (Part 7). */
    if (pol->ecc ? !uas__ecc_key_is(pol->ecc->curve, k)
                 : !key_fits(pol, uas_crypto_rsa_bits(k)) ||
                       uas_crypto_rsa_size(k) > UAS_RSA_MAX_BYTES) {
        EVP_PKEY_free(k);
        return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
    }
    st = uas_crypto_digest(UAS_DIGEST_SHA1, der, der_len, thumb);
    if (st != UAS_GOOD) {
        EVP_PKEY_free(k);
        return st;
    }
    *pub = k;
    return UAS_GOOD;
}

uas_status uas_secpol_check_cert(const uas_secpol *pol, const uint8_t *der, size_t len)
{
    if (!pol || (!pol->algs && !pol->ecc))
        return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
    EVP_PKEY *k;
    uint8_t thumb[UAS_SHA1_LEN];
    uas_status st = uas__secpol_peer_key(pol, der, len, &k, thumb);
    EVP_PKEY_free(k);
    return st;
}

/* ---- per-channel keys ---- */

uas_status uas_secpol_keys_new(const uas_secpol *pol, uas_secpol_cred *cred, uas_secpol_keys **out)
{
    *out = NULL;
    if (!pol || (!pol->algs && !pol->ecc))
        return UAS_BAD_SECURITY_POLICY_REJECTED;
    if (!uas_secpol_cred_fits(pol, cred))
        return UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED;
    uas_secpol_keys *k = uas_calloc(1, sizeof(*k));
    if (!k)
        return UAS_BAD_OUT_OF_MEMORY;
    if (pol->ecc) {
        k->pol = pol;
        if (uas__ecc_chan_new(k) != UAS_GOOD) {
            uas_free(k, sizeof(*k));
            return UAS_BAD_OUT_OF_MEMORY;
        }
    }
    k->pol = pol;
    k->cred = cred;
    uas_secpol_cred_ref(cred);
    k->mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    *out = k;
    return UAS_GOOD;
}

uas_status uas_secpol_keys_clone_peer(const uas_secpol_keys *k, uas_secpol_keys **out)
{
    *out = NULL;
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    uas_secpol_keys *c = NULL;
    uas_status st = uas_secpol_keys_new(k->pol, k->cred, &c);
    if (st != UAS_GOOD)
        return st;
    c->mode = k->mode;
    if (k->peer_spki) {
        c->peer_spki = uas_malloc(k->peer_spki_len);
        if (!c->peer_spki) {
            uas_secpol_keys_free(c);
            return UAS_BAD_OUT_OF_MEMORY;
        }
        memcpy(c->peer_spki, k->peer_spki, k->peer_spki_len);
        c->peer_spki_len = k->peer_spki_len;
        c->peer_bits = k->peer_bits;
        c->peer_size = k->peer_size;
        memcpy(c->peer_thumb, k->peer_thumb, UAS_SHA1_LEN);
    }
    /* An enhanced ECC policy's OPN response signs the request's signature. */
    uas__ecc_copy_sign_state(c, k);
    *out = c;
    return UAS_GOOD;
}

void uas_secpol_keys_adopt_sign_state(uas_secpol_keys *k, const uas_secpol_keys *job)
{
    if (k && job)
        uas__ecc_copy_sign_state(k, job);
}

/* Frees a token's AES and HMAC contexts (OpenSSL wipes the keys they
 * hold) and zeroes its keys. */
static void gen_clear(uas_sym_gen *g)
{
    uas_crypto_aes_cbc_free(&g->enc_local);
    uas_crypto_aes_cbc_free(&g->dec_remote);
    uas_crypto_hmac_key_clear(&g->mac_local);
    uas_crypto_hmac_key_clear(&g->mac_remote);
    uas_wipe(g, sizeof(*g));
}

/* Keys a token's AES contexts once, if the mode encrypts and they are not
 * there yet. */
static uas_status gen_ciphers(const uas_secpol_keys *k, uas_sym_gen *g)
{
    if (!k->pol->algs || !g->valid || k->mode != UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT)
        return UAS_GOOD;
    size_t el = k->pol->algs->sym_enc_key_len;
    uas_status st = UAS_GOOD;
    if (!g->enc_local.ctx)
        st = uas_crypto_aes_cbc_keyed(&g->enc_local, true, g->local.enc, el);
    if (st == UAS_GOOD && !g->dec_remote.ctx)
        st = uas_crypto_aes_cbc_keyed(&g->dec_remote, false, g->remote.enc, el);
    return st;
}

void uas_secpol_keys_free(uas_secpol_keys *k)
{
    if (!k)
        return;
    gen_clear(&k->gen[0]);
    gen_clear(&k->gen[1]);
    uas__ecc_chan_free(k);
    if (k->peer_spki)
        uas_free(k->peer_spki, k->peer_spki_len);
    uas_secpol_cred_unref(k->cred);
    uas_wipe(k, sizeof(*k));
    uas_free(k, sizeof(*k));
}

const uas_secpol *uas_secpol_keys_policy(const uas_secpol_keys *k)
{
    return k ? k->pol : NULL;
}

uas_status uas_secpol_keys_set_mode(uas_secpol_keys *k, int32_t mode)
{
    if (!k || (mode != UAS_MESSAGE_SECURITY_MODE_SIGN &&
               mode != UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT))
        return UAS_BAD_SECURITY_MODE_REJECTED;
    k->mode = mode;
    /* Normally set before any token exists; a later switch to encryption
     * keys the contexts of the tokens already derived. */
    uas_status st = gen_ciphers(k, &k->gen[0]);
    if (st == UAS_GOOD)
        st = gen_ciphers(k, &k->gen[1]);
    return st;
}

int32_t uas_secpol_keys_mode(const uas_secpol_keys *k)
{
    return k ? k->mode : UAS_MESSAGE_SECURITY_MODE_INVALID;
}

uas_status uas_secpol_keys_set_peer(uas_secpol_keys *k, const uint8_t *der, size_t len)
{
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    EVP_PKEY *pub;
    uint8_t thumb[UAS_SHA1_LEN];
    uas_status st = uas__secpol_peer_key(k->pol, der, len, &pub, thumb);
    if (st != UAS_GOOD)
        return st;
    st = uas__secpol_set_peer_key(k, pub, thumb);
    EVP_PKEY_free(pub);
    return st;
}

uas_status uas__secpol_set_peer_key(uas_secpol_keys *k, EVP_PKEY *pub,
                                    const uint8_t thumb[UAS_SHA1_LEN])
{
    int n = uas_crypto_spki(pub, NULL, 0);
    uint8_t *der = n > 0 ? uas_malloc((size_t)n) : NULL;
    if (!der || uas_crypto_spki(pub, der, (size_t)n) != n) {
        if (der)
            uas_free(der, (size_t)n);
        ERR_clear_error();
        return n > 0 ? UAS_BAD_OUT_OF_MEMORY : UAS_BAD_CERTIFICATE_INVALID;
    }
    if (k->peer_spki)
        uas_free(k->peer_spki, k->peer_spki_len);
    k->peer_spki = der;
    k->peer_spki_len = (uint32_t)n;
    k->peer_bits = (uint16_t)uas_crypto_rsa_bits(pub);
    k->peer_size = (uint16_t)uas_crypto_rsa_size(pub);
    memcpy(k->peer_thumb, thumb, UAS_SHA1_LEN);
    return UAS_GOOD;
}

EVP_PKEY *uas__secpol_peer_pkey(const uas_secpol_keys *k)
{
    if (!k || !k->peer_spki)
        return NULL;
    return uas_crypto_public_key(k->peer_spki, k->peer_spki_len, false);
}

const uint8_t *uas_secpol_keys_local_cert(const uas_secpol_keys *k, size_t *len)
{
    return uas_secpol_cred_cert(k ? k->cred : NULL, len);
}

const uint8_t *uas_secpol_keys_peer_thumbprint(const uas_secpol_keys *k)
{
    return k && k->peer_spki ? k->peer_thumb : NULL;
}

bool uas_secpol_keys_peer_is(const uas_secpol_keys *k, const uint8_t *der, size_t len)
{
    uint8_t t[UAS_SHA1_LEN];
    return k && k->peer_spki && der &&
           uas_crypto_digest(UAS_DIGEST_SHA1, der, len, t) == UAS_GOOD &&
           memcmp(t, k->peer_thumb, sizeof(t)) == 0;
}

size_t uas__secpol_asym_header_len(const uas_secpol_keys *k)
{
    if (!k || !k->peer_spki)
        return 0;
    /* MessageHeader + SecureChannelId, then three length-prefixed fields. */
    return 12 + 4 + strlen(k->pol->uri) + 4 + k->cred->cert_len + 4 + UAS_SHA1_LEN;
}

uas_status uas_secpol_make_nonce(const uas_secpol *pol, uint8_t *out, size_t len)
{
    if (!pol || !pol->nonce_len || len != pol->nonce_len)
        return UAS_BAD_INVALID_ARGUMENT;
    return uas_crypto_random(out, len);
}

uas_status uas_secpol_keys_make_nonce(uas_secpol_keys *k, uint8_t *out, size_t len)
{
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    if (k->pol->ecc)
        return uas__ecc_make_nonce(k, out, len);
    return uas_secpol_make_nonce(k->pol, out, len);
}

/* P_hash(secret, seed) split into SigningKey | EncryptingKey | IV. */
static uas_status derive_dir(const struct uas_secpol_algs *a, const uint8_t *secret,
                             size_t secret_len, const uint8_t *seed, size_t seed_len,
                             uas_sym_keys *out)
{
    uint8_t buf[UAS_SYM_SIGN_KEY_MAX + UAS_SYM_ENC_KEY_MAX + UAS_AES_BLOCK];
    size_t sl = a->sym_sign_key_len, el = a->sym_enc_key_len;
    size_t n = sl + el + UAS_AES_BLOCK;
    uas_status st = uas_crypto_p_hash(a->kdf, secret, secret_len, seed, seed_len, buf, n);
    if (st == UAS_GOOD) {
        memcpy(out->sign, buf, sl);
        memcpy(out->enc, buf + sl, el);
        memcpy(out->iv, buf + sl + el, UAS_AES_BLOCK);
    }
    uas_wipe(buf, sizeof(buf));
    return st;
}

uas_status uas_secpol_derive_keys(uas_secpol_keys *k, uint32_t token_id, const uint8_t *local_nonce,
                                  size_t local_len, const uint8_t *remote_nonce, size_t remote_len,
                                  bool is_server)
{
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    const uas_secpol *pol = k->pol;
    if (!local_nonce || !remote_nonce || local_len != pol->nonce_len ||
        remote_len != pol->nonce_len)
        return UAS_BAD_NONCE_INVALID;
    if (pol->ecc)
        return uas__ecc_derive(k, token_id, local_nonce, remote_nonce, local_len, is_server);
    const uint8_t *client = is_server ? remote_nonce : local_nonce;
    const uint8_t *server = is_server ? local_nonce : remote_nonce;
    size_t n = pol->nonce_len;
    uas_sym_gen g;
    memset(&g, 0, sizeof(g));
    uas_sym_keys *client_keys = is_server ? &g.remote : &g.local;
    uas_sym_keys *server_keys = is_server ? &g.local : &g.remote;
    /* Part 6, Table 65/66: ClientSecret = ClientSeed = ClientNonce,
     * ServerSecret = ServerSeed = ServerNonce; the client's keys come from
     * (ServerSecret, ClientSeed), the server's from (ClientSecret,
     * ServerSeed). */
    uas_status st = derive_dir(pol->algs, server, n, client, n, client_keys);
    if (st == UAS_GOOD)
        st = derive_dir(pol->algs, client, n, server, n, server_keys);
    g.token_id = token_id;
    g.valid = true;
    const struct uas_secpol_algs *a = pol->algs;
    if (st == UAS_GOOD)
        st = uas_crypto_hmac_key_set(&g.mac_local, a->sym_mac, g.local.sign, a->sym_sign_key_len);
    if (st == UAS_GOOD)
        st = uas_crypto_hmac_key_set(&g.mac_remote, a->sym_mac, g.remote.sign, a->sym_sign_key_len);
    if (st == UAS_GOOD)
        st = gen_ciphers(k, &g);
    if (st != UAS_GOOD) {
        gen_clear(&g);
        return st;
    }
    if (k->gen[0].valid && k->gen[0].token_id != token_id) {
        gen_clear(&k->gen[1]);
        k->gen[1] = k->gen[0];
    } else {
        gen_clear(&k->gen[0]);
    }
    k->gen[0] = g; /* the contexts move with it */
    uas_wipe(&g, sizeof(g));
    return UAS_GOOD;
}

void uas_secpol_keys_drop_prev(uas_secpol_keys *k)
{
    if (k)
        gen_clear(&k->gen[1]);
    if (k)
        uas__ecc_drop_prev(k);
}

uas_sym_gen *uas__secpol_gen(uas_secpol_keys *k, uint32_t token_id)
{
    for (int i = 0; i < 2; i++) {
        if (k->gen[i].valid && k->gen[i].token_id == token_id)
            return &k->gen[i];
    }
    return NULL;
}

/* ---- session signatures ---- */

uas_status uas_secpol_keys_sign(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                uint8_t *sig, size_t sig_cap, size_t *sig_len)
{
    *sig_len = 0;
    if (!k)
        return UAS_BAD_INVALID_ARGUMENT;
    if (k->pol->ecc) {
        const struct uas_ecc_suite *s = k->pol->ecc;
        if (sig_cap < s->sig_len)
            return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        uas_status st = uas__ecc_sign(s, k->cred->key, k->cred->ed_sk, data, len, NULL, 0, sig);
        if (st == UAS_GOOD)
            *sig_len = s->sig_len;
        return st;
    }
    size_t ks = uas_crypto_rsa_size(k->cred->key);
    if (sig_cap < ks)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    uas_status st = uas_crypto_rsa_sign(k->pol->algs->asym_sig, k->cred->key, data, len, sig, ks);
    if (st == UAS_GOOD)
        *sig_len = ks;
    return st;
}

uas_status uas_secpol_keys_verify(const uas_secpol_keys *k, const uint8_t *data, size_t len,
                                  const uint8_t *sig, size_t sig_len)
{
    EVP_PKEY *pub = uas__secpol_peer_pkey(k);
    if (!pub)
        return UAS_BAD_SECURITY_CHECKS_FAILED;
    if (k->pol->ecc) {
        uas_status est = uas__ecc_verify(k->pol->ecc, pub, data, len, NULL, 0, sig, sig_len);
        EVP_PKEY_free(pub);
        return est;
    }
    uas_status st = uas_crypto_rsa_verify(k->pol->algs->asym_sig, pub, data, len, sig, sig_len);
    EVP_PKEY_free(pub);
    return st;
}
