/* The RSA security policies (stack/src/secpol_rsa.c, secpol_keys.c):
 * policy table, credentials, key length limits, key derivation, and the
 * chunk hooks the channel calls, driven the way the channel drives them:
 * symmetric chunks of every policy x mode x size, OPN chunks both ways, and
 * every kind of tampering, which must end in BadSecurityChecksFailed. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <string.h>

#include "secpol.h"

#ifdef UAS_ENABLE_ENCRYPTION

#include <stdlib.h>

#include <openssl/hmac.h>

#include <ua/mem.h>
#include <ua/types.h>

#include "helper_keys.h"
#include "secpol_internal.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    test_keys_prepare();
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    test_keys_cleanup();
}

static const uas_secpol *const rsa_policies[] = {
    &uas_secpol_basic256sha256,
    &uas_secpol_aes128_sha256_rsaoaep,
    &uas_secpol_aes256_sha256_rsapss,
    &uas_secpol_basic256,
};
enum { N_POLICIES = sizeof(rsa_policies) / sizeof(rsa_policies[0]) };
static const int32_t modes[] = {UAS_MESSAGE_SECURITY_MODE_SIGN,
                                UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT};

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uas_secpol_cred *cred_of(test_key_id id)
{
    const test_key *k = test_key_get(id);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(k->cert, k->cert_len, k->key_der, k->key_len, &c), UAS_GOOD);
    return c;
}

/* One end of a channel: its credentials and key material. */
typedef struct side {
    uas_secpol_cred *cred;
    uas_secpol_keys *keys;
} side;

static void side_init(side *s, const uas_secpol *pol, test_key_id id, int32_t mode)
{
    s->cred = cred_of(id);
    cr_assert_eq(uas_secpol_keys_new(pol, s->cred, &s->keys), UAS_GOOD);
    cr_assert_eq(uas_secpol_keys_set_mode(s->keys, mode), UAS_GOOD);
}

static void side_fini(side *s)
{
    uas_secpol_keys_free(s->keys);
    uas_secpol_cred_unref(s->cred);
}

/* Both ends derive the keys of a token from fresh nonces. */
static void derive_both(const uas_secpol *pol, side *srv, side *cli, uint32_t token)
{
    uint8_t cn[32], sn[32];
    cr_assert_eq(uas_secpol_make_nonce(pol, cn, pol->nonce_len), UAS_GOOD);
    cr_assert_eq(uas_secpol_make_nonce(pol, sn, pol->nonce_len), UAS_GOOD);
    cr_assert_eq(uas_secpol_derive_keys(srv->keys, token, sn, 32, cn, 32, true), UAS_GOOD);
    cr_assert_eq(uas_secpol_derive_keys(cli->keys, token, cn, 32, sn, 32, false), UAS_GOOD);
    uas_wipe(cn, sizeof(cn));
    uas_wipe(sn, sizeof(sn));
}

/* A server (key A) and a client (key B) with the keys of token 1. */
static void pair_init(const uas_secpol *pol, int32_t mode, side *srv, side *cli)
{
    side_init(srv, pol, TK_RSA2048_A, mode);
    side_init(cli, pol, TK_RSA2048_B, mode);
    const test_key *a = test_key_get(TK_RSA2048_A), *b = test_key_get(TK_RSA2048_B);
    cr_assert_eq(uas_secpol_keys_set_peer(cli->keys, a->cert, a->cert_len), UAS_GOOD);
    cr_assert_eq(uas_secpol_keys_set_peer(srv->keys, b->cert, b->cert_len), UAS_GOOD);
    derive_both(pol, srv, cli, 1);
}

/* [MSG F size | channel 7 | token][seq | request id][body]; returns the
 * end of the body. */
static size_t build_msg(uint8_t *buf, uint32_t token, const uint8_t *body, size_t len)
{
    memcpy(buf, "MSGF", 4);
    put_u32(buf + 4, 0);
    put_u32(buf + 8, 7);
    put_u32(buf + 12, token);
    put_u32(buf + 16, 51);
    put_u32(buf + 20, 52);
    if (len)
        memcpy(buf + 24, body, len);
    return 24 + len;
}

static void fill_body(uint8_t *b, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(i * 7 + seed);
}

/* Protects a MSG chunk with `from` and unprotects it with `to`. */
static void sym_round_trip(const uas_secpol *pol, side *from, side *to, size_t cap, size_t body_len,
                           bool expect_full)
{
    uint8_t *body = malloc(body_len + 1), *buf = malloc(cap);
    fill_body(body, body_len, (unsigned)body_len);
    size_t len = build_msg(buf, 1, body, body_len);
    cr_assert_eq(pol->sym_protect(from->keys, buf, 16, &len, cap), UAS_GOOD, "%s body %zu",
                 pol->uri, body_len);
    cr_assert_leq(len, cap);
    cr_assert_eq(get_u32(buf + 4), len, "MessageSize is the chunk's size");
    if (expect_full)
        cr_assert_eq(len, cap, "%s: a full body fills the chunk (%zu of %zu)", pol->uri, len, cap);
    bool enc = uas_secpol_keys_mode(from->keys) == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    if (enc) {
        cr_assert_eq((len - 16) % 16, 0);
        if (body_len >= 32)
            cr_assert_neq(memcmp(buf + 24, body, body_len), 0, "the body is encrypted");
    } else if (body_len) {
        cr_assert_eq(memcmp(buf + 24, body, body_len), 0, "Sign leaves the body readable");
    }
    size_t end = len;
    cr_assert_eq(pol->sym_unprotect(to->keys, buf, 16, &end), UAS_GOOD, "%s body %zu", pol->uri,
                 body_len);
    cr_assert_eq(end, 24 + body_len);
    cr_assert_eq(get_u32(buf + 16), 51);
    cr_assert_eq(get_u32(buf + 20), 52);
    if (body_len)
        cr_assert_eq(memcmp(buf + 24, body, body_len), 0);
    free(body);
    free(buf);
}

/* ---- the policy table ---- */

Test(secpol, the_channel_lookup_still_knows_only_none)
{
    const char *none = UAS_SECPOL_NONE_URI, *b = UAS_SECPOL_BASIC256SHA256_URI;
    cr_assert_eq(uas_secpol_find((const uint8_t *)none, strlen(none)), &uas_secpol_none);
    cr_assert_null(uas_secpol_find((const uint8_t *)b, strlen(b)));
}

Test(secpol, lookup_offers_basic256_only_on_opt_in_and_never_basic128rsa15)
{
    for (size_t i = 0; i < N_POLICIES; i++) {
        const uas_secpol *p = rsa_policies[i];
        const uint8_t *u = (const uint8_t *)p->uri;
        cr_assert_eq(uas_secpol_lookup(u, strlen(p->uri), true), p);
        cr_assert_eq(uas_secpol_lookup(u, strlen(p->uri), false), p->deprecated ? NULL : p);
        cr_assert_null(uas_secpol_lookup(u, strlen(p->uri) - 1, true));
    }
    cr_assert(uas_secpol_basic256.deprecated);
    const char *r15 = "http://opcfoundation.org/UA/SecurityPolicy#Basic128Rsa15";
    cr_assert_null(uas_secpol_lookup((const uint8_t *)r15, strlen(r15), true));
    size_t n;
    const uas_secpol *const *all = uas_secpol_all(&n);
    cr_assert_eq(n, 15); /* None, 3 RSA, 10 ECC (issue #14), Basic256 */
    cr_assert_eq(all[0], &uas_secpol_none);
    cr_assert_eq(all[n - 1], &uas_secpol_basic256);
}

Test(secpol, policy_parameters_follow_part7)
{
    static const struct {
        const uas_secpol *p;
        uint16_t min, max;
        uint8_t sign_key, enc_key, sig;
    } want[] = {
        {&uas_secpol_basic256sha256, 2048, 4096, 32, 32, 32},
        {&uas_secpol_aes128_sha256_rsaoaep, 2048, 4096, 32, 16, 32},
        {&uas_secpol_aes256_sha256_rsapss, 2048, 4096, 32, 32, 32},
        {&uas_secpol_basic256, 1024, 2048, 24, 32, 20},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const uas_secpol *p = want[i].p;
        cr_assert_eq(p->nonce_len, 32);
        cr_assert_eq(p->min_key_bits, want[i].min);
        cr_assert_eq(p->max_key_bits, want[i].max);
        cr_assert_eq(p->algs->sym_sign_key_len, want[i].sign_key);
        cr_assert_eq(p->algs->sym_enc_key_len, want[i].enc_key);
        cr_assert_eq(uas_digest_len(p->algs->sym_mac), want[i].sig);
    }
    cr_assert_eq(uas_secpol_aes256_sha256_rsapss.algs->asym_sig, UAS_RSA_PSS_SHA256);
    cr_assert_eq(uas_secpol_aes256_sha256_rsapss.algs->asym_enc, UAS_RSA_OAEP_SHA256);
    cr_assert_eq(uas_secpol_basic256sha256.algs->asym_enc, UAS_RSA_OAEP_SHA1);
    cr_assert_eq(uas_secpol_aes128_sha256_rsaoaep.algs->asym_enc, UAS_RSA_OAEP_SHA1);
    cr_assert_eq(uas_secpol_basic256.algs->asym_sig, UAS_RSA_PKCS1_SHA1);
    cr_assert_eq(uas_secpol_basic256.algs->kdf, UAS_DIGEST_SHA1);
    cr_assert_eq(uas_secpol_none.nonce_len, 0);
}

/* ---- credentials and key length limits ---- */

Test(secpol, credentials_load_der_and_pem_keys_and_refuse_mismatches)
{
    const test_key *a = test_key_get(TK_RSA2048_A), *b = test_key_get(TK_RSA2048_B);
    const test_key *ec = test_key_get(TK_EC256);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(a->cert, a->cert_len, a->key_pem, a->key_pem_len, &c),
                 UAS_GOOD);
    size_t n;
    cr_assert_eq(uas_secpol_cred_cert(c, &n), c->cert);
    cr_assert_eq(n, a->cert_len);
    cr_assert_eq(uas_secpol_cred_key_bits(c), 2048);
    uint8_t t[20];
    uas_crypto_digest(UAS_DIGEST_SHA1, a->cert, a->cert_len, t);
    cr_assert(memcmp(uas_secpol_cred_thumbprint(c), t, 20) == 0);
    uas_secpol_cred_ref(c);
    uas_secpol_cred_unref(c);
    uas_secpol_cred_unref(c);
    /* Another certificate's key, garbage, a chain. */
    cr_assert_eq(uas_secpol_cred_new(a->cert, a->cert_len, b->key_der, b->key_len, &c),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_null(c);
    /* An EC key is a credential since the ECC policies (issue #14), for
     * them only; an RSA key does not go with an EC certificate. */
    cr_assert_eq(uas_secpol_cred_new(ec->cert, ec->cert_len, ec->key_der, ec->key_len, &c),
                 UAS_GOOD);
    uas_secpol_keys *k = NULL;
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_basic256sha256, c, &k),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_ecc_nistp256_aesgcm, c, &k), UAS_GOOD);
    uas_secpol_keys_free(k);
    uas_secpol_cred_unref(c);
    c = NULL;
    cr_assert_eq(uas_secpol_cred_new(ec->cert, ec->cert_len, a->key_der, a->key_len, &c),
                 UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_secpol_cred_new(a->key_der, a->key_len, a->key_der, a->key_len, &c),
                 UAS_BAD_CERTIFICATE_INVALID);
    uint8_t *chain = malloc(a->cert_len * 2);
    memcpy(chain, a->cert, a->cert_len);
    memcpy(chain + a->cert_len, a->cert, a->cert_len);
    cr_assert_eq(uas_secpol_cred_new(chain, a->cert_len * 2, a->key_der, a->key_len, &c),
                 UAS_BAD_CERTIFICATE_INVALID);
    free(chain);
    uas_secpol_cred_unref(NULL);
}

Test(secpol, certificate_key_length_limits_per_policy)
{
    static const struct {
        test_key_id id;
        uas_status b256sha256, basic256;
    } cases[] = {
        {TK_RSA512, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED,
         UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED},
        {TK_RSA1024, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, UAS_GOOD},
        {TK_RSA2048_A, UAS_GOOD, UAS_GOOD},
        {TK_RSA4096, UAS_GOOD, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED},
        {TK_EC256, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED,
         UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const test_key *k = test_key_get(cases[i].id);
        cr_assert_eq(uas_secpol_check_cert(&uas_secpol_basic256sha256, k->cert, k->cert_len),
                     cases[i].b256sha256, "key %d", (int)cases[i].id);
        cr_assert_eq(uas_secpol_check_cert(&uas_secpol_aes128_sha256_rsaoaep, k->cert, k->cert_len),
                     cases[i].b256sha256);
        cr_assert_eq(uas_secpol_check_cert(&uas_secpol_aes256_sha256_rsapss, k->cert, k->cert_len),
                     cases[i].b256sha256);
        cr_assert_eq(uas_secpol_check_cert(&uas_secpol_basic256, k->cert, k->cert_len),
                     cases[i].basic256, "key %d", (int)cases[i].id);
    }
    uint8_t junk[64] = {0x30, 0x82};
    cr_assert_eq(uas_secpol_check_cert(&uas_secpol_basic256sha256, junk, sizeof(junk)),
                 UAS_BAD_CERTIFICATE_INVALID);
}

Test(secpol, our_own_key_must_fit_the_policy_and_the_peer_too)
{
    uas_secpol_cred *small = cred_of(TK_RSA1024), *big = cred_of(TK_RSA4096);
    uas_secpol_keys *k = NULL;
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_basic256sha256, small, &k),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_null(k);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_basic256, big, &k),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_none, big, &k), UAS_BAD_SECURITY_POLICY_REJECTED);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_basic256sha256, big, &k), UAS_GOOD);
    const test_key *s = test_key_get(TK_RSA1024);
    cr_assert_eq(uas_secpol_keys_set_peer(k, s->cert, s->cert_len),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_null(uas_secpol_keys_peer_thumbprint(k));
    uas_secpol_keys_free(k);
    uas_secpol_cred_unref(small);
    uas_secpol_cred_unref(big);
}

Test(secpol, modes_other_than_sign_and_sign_and_encrypt_are_rejected)
{
    side s;
    side_init(&s, &uas_secpol_basic256sha256, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN);
    cr_assert_eq(uas_secpol_keys_mode(s.keys), UAS_MESSAGE_SECURITY_MODE_SIGN);
    cr_assert_eq(uas_secpol_keys_set_mode(s.keys, UAS_MESSAGE_SECURITY_MODE_NONE),
                 UAS_BAD_SECURITY_MODE_REJECTED);
    cr_assert_eq(uas_secpol_keys_set_mode(s.keys, UAS_MESSAGE_SECURITY_MODE_INVALID),
                 UAS_BAD_SECURITY_MODE_REJECTED);
    cr_assert_eq(uas_secpol_keys_set_mode(s.keys, 4), UAS_BAD_SECURITY_MODE_REJECTED);
    cr_assert_eq(uas_secpol_keys_mode(s.keys), UAS_MESSAGE_SECURITY_MODE_SIGN);
    side_fini(&s);
}

/* ---- key derivation ---- */

Test(secpol, derived_keys_follow_part6_for_every_policy)
{
    for (size_t i = 0; i < N_POLICIES; i++) {
        const uas_secpol *pol = rsa_policies[i];
        const struct uas_secpol_algs *a = pol->algs;
        side srv, cli;
        side_init(&srv, pol, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
        side_init(&cli, pol, TK_RSA2048_B, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
        uint8_t cn[32], sn[32];
        memset(cn, 0xc1, 32);
        memset(sn, 0x5e, 32);
        cr_assert_eq(uas_secpol_derive_keys(srv.keys, 9, sn, 32, cn, 32, true), UAS_GOOD);
        cr_assert_eq(uas_secpol_derive_keys(cli.keys, 9, cn, 32, sn, 32, false), UAS_GOOD);
        size_t sl = a->sym_sign_key_len, el = a->sym_enc_key_len, n = sl + el + 16;
        uint8_t client_keys[80], server_keys[80];
        /* Client keys from (ServerNonce as secret, ClientNonce as seed). */
        uas_crypto_p_hash(a->kdf, sn, 32, cn, 32, client_keys, n);
        uas_crypto_p_hash(a->kdf, cn, 32, sn, 32, server_keys, n);
        const uas_sym_gen *cg = uas__secpol_gen(cli.keys, 9), *sg = uas__secpol_gen(srv.keys, 9);
        cr_assert(cg && sg);
        cr_assert(memcmp(cg->local.sign, client_keys, sl) == 0, "%s", pol->uri);
        cr_assert(memcmp(cg->local.enc, client_keys + sl, el) == 0);
        cr_assert(memcmp(cg->local.iv, client_keys + sl + el, 16) == 0);
        cr_assert(memcmp(cg->remote.sign, server_keys, sl) == 0);
        cr_assert(memcmp(cg->remote.enc, server_keys + sl, el) == 0);
        cr_assert(memcmp(cg->remote.iv, server_keys + sl + el, 16) == 0);
        cr_assert(memcmp(&sg->local, &cg->remote, sizeof(sg->local)) == 0);
        cr_assert(memcmp(&sg->remote, &cg->local, sizeof(sg->remote)) == 0);
        /* The tokens' precomputed HMAC keys are these signing keys:
         * compared with OpenSSL's HMAC under the raw keys. */
        const EVP_MD *md = a->sym_mac == UAS_DIGEST_SHA1 ? EVP_sha1() : EVP_sha256();
        uint8_t msg[100], want_c[32], want_s[32], got[32];
        memset(msg, 0x3c, sizeof(msg));
        unsigned wl = 0;
        HMAC(md, client_keys, (int)sl, msg, sizeof(msg), want_c, &wl);
        HMAC(md, server_keys, (int)sl, msg, sizeof(msg), want_s, &wl);
        cr_assert_eq(wl, uas_digest_len(a->sym_mac));
        const uas_hmac_key *macs[4] = {&cg->mac_local, &sg->mac_remote, &cg->mac_remote,
                                       &sg->mac_local};
        for (int m = 0; m < 4; m++) {
            cr_assert_eq(uas_crypto_hmac_keyed(macs[m], msg, sizeof(msg), NULL, 0, got), UAS_GOOD);
            cr_assert(memcmp(got, m < 2 ? want_c : want_s, wl) == 0, "%s, key %d", pol->uri, m);
        }
        /* Unused bytes of the fixed-size key arrays stay zero. */
        static const uint8_t zero[32];
        cr_assert(memcmp(cg->local.sign + sl, zero, sizeof(cg->local.sign) - sl) == 0);
        cr_assert(memcmp(cg->local.enc + el, zero, sizeof(cg->local.enc) - el) == 0);
        /* Wrong nonce lengths. */
        cr_assert_eq(uas_secpol_derive_keys(srv.keys, 10, sn, 31, cn, 32, true),
                     UAS_BAD_NONCE_INVALID);
        cr_assert_eq(uas_secpol_derive_keys(srv.keys, 10, sn, 32, cn, 33, true),
                     UAS_BAD_NONCE_INVALID);
        cr_assert_eq(uas_secpol_derive_keys(srv.keys, 10, sn, 32, NULL, 32, true),
                     UAS_BAD_NONCE_INVALID);
        cr_assert_null(uas__secpol_gen(srv.keys, 10));
        uint8_t nonce[33];
        cr_assert_eq(uas_secpol_make_nonce(pol, nonce, 33), UAS_BAD_INVALID_ARGUMENT);
        side_fini(&srv);
        side_fini(&cli);
    }
    uint8_t nonce[32];
    cr_assert_eq(uas_secpol_make_nonce(&uas_secpol_none, nonce, 32), UAS_BAD_INVALID_ARGUMENT);
}

/* ---- symmetric chunks ---- */

static void sym_all_sizes(const uas_secpol *pol, int32_t mode, size_t cap)
{
    side srv, cli;
    pair_init(pol, mode, &srv, &cli);
    size_t overhead = pol->sym_overhead(srv.keys, cap);
    cr_assert_eq(pol->sym_overhead(cli.keys, cap), overhead);
    size_t body_max = cap - overhead - 24;
    const size_t sizes[] = {0, 1, 15, 16, 17, 31, 100, 1000, body_max - 17, body_max - 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        sym_round_trip(pol, &cli, &srv, cap, sizes[i], false);
        sym_round_trip(pol, &srv, &cli, cap, sizes[i], false);
    }
    /* A body up to the limit the overhead allows fills the chunk exactly
     * when the encrypted part can be whole blocks of it. */
    bool enc = mode == UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    sym_round_trip(pol, &cli, &srv, cap, body_max, !enc || (cap - 16) % 16 == 0);
    sym_round_trip(pol, &srv, &cli, cap, body_max, !enc || (cap - 16) % 16 == 0);
    /* One byte more does not fit. */
    uint8_t *buf = calloc(1, cap + 64);
    size_t len = build_msg(buf, 1, NULL, 0) + body_max + 1;
    cr_assert_eq(pol->sym_protect(cli.keys, buf, 16, &len, cap), UAS_BAD_ENCODING_LIMITS_EXCEEDED);
    free(buf);
    side_fini(&srv);
    side_fini(&cli);
}

Test(secpol, sym_round_trip_every_policy_mode_and_size)
{
    static const size_t caps[] = {8192, 8200, 65536};
    for (size_t p = 0; p < N_POLICIES; p++)
        for (size_t m = 0; m < 2; m++)
            for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
                sym_all_sizes(rsa_policies[p], modes[m], caps[c]);
}

/* Every single changed byte, a truncated or extended chunk: one answer. */
static void sym_tamper(const uas_secpol *pol, int32_t mode)
{
    side srv, cli;
    pair_init(pol, mode, &srv, &cli);
    uint8_t body[77], buf[512], copy[512];
    fill_body(body, sizeof(body), 3);
    size_t len = build_msg(buf, 1, body, sizeof(body));
    cr_assert_eq(pol->sym_protect(cli.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
    memcpy(copy, buf, len);
    for (size_t i = 0; i < len; i++) {
        memcpy(buf, copy, len);
        buf[i] ^= (uint8_t)(1u << (i % 8));
        size_t end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED,
                     "%s mode %d byte %zu", pol->uri, (int)mode, i);
    }
    static const size_t cut[] = {1, 15, 16, 17, 32};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        memcpy(buf, copy, len);
        size_t end = len - cut[i];
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED,
                     "cut %zu", cut[i]);
    }
    size_t tiny[] = {0, 15, 16, 24, 40};
    for (size_t i = 0; i < sizeof(tiny) / sizeof(tiny[0]); i++) {
        memcpy(buf, copy, len);
        size_t end = tiny[i];
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    }
    memcpy(buf, copy, len);
    memset(buf + len, 0, 16);
    size_t end = len + 16;
    cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    /* The intact chunk still passes: nothing above changed the keys. */
    memcpy(buf, copy, len);
    end = len;
    cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_GOOD);
    /* A chunk secured with the receiver's own sending keys is refused: the
     * directions have different keys. */
    memcpy(buf, copy, len);
    len = build_msg(buf, 1, body, sizeof(body));
    cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
    end = len;
    cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    side_fini(&srv);
    side_fini(&cli);
}

Test(secpol, sym_tampered_truncated_or_extended_chunks_fail_the_security_checks)
{
    for (size_t p = 0; p < N_POLICIES; p++)
        for (size_t m = 0; m < 2; m++)
            sym_tamper(rsa_policies[p], modes[m]);
}

/* Builds an encrypted chunk by hand with the sender's keys: a correct
 * signature over the given padding, so the receiver's padding check is
 * what decides. pad_bytes[0] is the PaddingSize byte. */
static size_t craft_padded(const uas_secpol *pol, const side *from, uint8_t *buf, size_t body_len,
                           const uint8_t *pad_bytes, size_t pad_len)
{
    const struct uas_secpol_algs *a = pol->algs;
    const uas_sym_gen *g = uas__secpol_gen(from->keys, 1);
    uint8_t body[64];
    fill_body(body, body_len, 9);
    size_t end = build_msg(buf, 1, body, body_len);
    memcpy(buf + end, pad_bytes, pad_len);
    end += pad_len;
    size_t sig = uas_digest_len(a->sym_mac);
    size_t total = end + sig;
    cr_assert_eq((total - 16) % 16, 0, "crafted padding must make whole blocks");
    put_u32(buf + 4, (uint32_t)total);
    uas_crypto_hmac(a->sym_mac, g->local.sign, a->sym_sign_key_len, buf, end, NULL, 0, buf + end);
    uas_crypto_aes_cbc(true, g->local.enc, a->sym_enc_key_len, g->local.iv, buf + 16, total - 16);
    return total;
}

Test(secpol, sym_padding_is_checked_after_the_signature_and_fails_alike)
{
    for (size_t p = 0; p < N_POLICIES; p++) {
        const uas_secpol *pol = rsa_policies[p];
        side srv, cli;
        pair_init(pol, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &srv, &cli);
        size_t sig = uas_digest_len(pol->algs->sym_mac);
        uint8_t buf[512], pad[64];
        /* Body of b bytes, then p padding bytes (incl. PaddingSize) so that
         * 8 + b + p + sig is a multiple of 16. */
        size_t b = 10;
        size_t plen = 16 - (8 + b + sig) % 16;
        if (plen < 2)
            plen += 16;
        /* Correct, longer than needed: accepted. */
        memset(pad, (int)(plen - 1), plen);
        size_t len = craft_padded(pol, &cli, buf, b, pad, plen), end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_GOOD, "%s", pol->uri);
        cr_assert_eq(end, 24 + b);
        /* One padding byte differs from the size. */
        pad[0] ^= 1;
        len = craft_padded(pol, &cli, buf, b, pad, plen);
        end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
        /* The size claims more padding than the chunk has. */
        memset(pad, 200, plen);
        len = craft_padded(pol, &cli, buf, b, pad, plen);
        end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
        /* The size reaches into the sequence header. */
        memset(pad, (int)(b + plen), plen);
        len = craft_padded(pol, &cli, buf, b, pad, plen);
        end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
        /* The whole body claimed as padding is still legal (an empty body). */
        uint8_t all[64];
        memset(all, (int)(b + plen - 1), b + plen);
        len = craft_padded(pol, &cli, buf, 0, all, b + plen);
        end = len;
        cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_GOOD);
        cr_assert_eq(end, 24);
        side_fini(&srv);
        side_fini(&cli);
    }
}

Test(secpol, renewal_keeps_the_previous_token_until_dropped)
{
    const uas_secpol *pol = &uas_secpol_aes256_sha256_rsapss;
    side srv, cli;
    pair_init(pol, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &srv, &cli);
    derive_both(pol, &srv, &cli, 2);
    uint8_t body[40], buf[256];
    fill_body(body, sizeof(body), 1);
    for (uint32_t token = 1; token <= 2; token++) {
        size_t len = build_msg(buf, token, body, sizeof(body)), end;
        cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
        end = len;
        cr_assert_eq(pol->sym_unprotect(cli.keys, buf, 16, &end), UAS_GOOD, "token %u", token);
    }
    /* Token 1 and 2 have different keys: a token-1 chunk relabelled 2
     * fails. */
    size_t len = build_msg(buf, 1, body, sizeof(body)), end;
    pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf));
    put_u32(buf + 12, 2);
    end = len;
    cr_assert_eq(pol->sym_unprotect(cli.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    /* A third token pushes the first out. */
    derive_both(pol, &srv, &cli, 3);
    len = build_msg(buf, 1, body, sizeof(body));
    cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_BAD_INTERNAL_ERROR);
    cr_assert_null(uas__secpol_gen(cli.keys, 1));
    cr_assert_not_null(uas__secpol_gen(cli.keys, 2));
    uas_secpol_keys_drop_prev(cli.keys);
    cr_assert_null(uas__secpol_gen(cli.keys, 2));
    static const uas_sym_gen zero;
    cr_assert(memcmp(&cli.keys->gen[1], &zero, sizeof(zero)) == 0, "the dropped keys are zeroed");
    len = build_msg(buf, 2, body, sizeof(body));
    cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
    end = len;
    cr_assert_eq(pol->sym_unprotect(cli.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    side_fini(&srv);
    side_fini(&cli);
}

/* Consecutive chunks through the same keys are each exactly what the
 * one-shot primitives make from the derived keys: HMAC over the plaintext,
 * then CBC from the token's IV (the keyed AES contexts carry nothing from
 * one chunk into the next). */
Test(secpol, consecutive_sym_chunks_match_the_one_shot_primitives)
{
    for (size_t p = 0; p < N_POLICIES; p++) {
        const uas_secpol *pol = rsa_policies[p];
        const struct uas_secpol_algs *a = pol->algs;
        side srv, cli;
        pair_init(pol, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &srv, &cli);
        const uas_sym_gen *g = uas__secpol_gen(srv.keys, 1);
        size_t sig = uas_digest_len(a->sym_mac);
        static const size_t sizes[] = {70, 0, 200, 15, 70};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint8_t body[200], buf[512], ref[512];
            fill_body(body, sizes[i], (unsigned)i);
            size_t len = build_msg(buf, 1, body, sizes[i]);
            cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
            /* Sending side: decrypt with the one-shot function, check the
             * signature with the raw key. */
            memcpy(ref, buf, len);
            cr_assert_eq(uas_crypto_aes_cbc(false, g->local.enc, a->sym_enc_key_len, g->local.iv,
                                            ref + 16, len - 16),
                         UAS_GOOD);
            cr_assert_eq(uas_crypto_hmac_verify(a->sym_mac, g->local.sign, a->sym_sign_key_len, ref,
                                                len - sig, ref + len - sig),
                         UAS_GOOD, "%s chunk %zu", pol->uri, i);
            cr_assert(memcmp(ref + 24, body, sizes[i]) == 0);
            /* Receiving side: a chunk encrypted by the one-shot function. */
            const uas_sym_gen *cg = uas__secpol_gen(cli.keys, 1);
            len = build_msg(buf, 1, body, sizes[i]);
            size_t pad = (16 - (len - 16 + 1 + sig) % 16) % 16;
            memset(buf + len, (int)pad, pad + 1);
            len += pad + 1;
            put_u32(buf + 4, (uint32_t)(len + sig));
            uas_crypto_hmac(a->sym_mac, cg->local.sign, a->sym_sign_key_len, buf, len, NULL, 0,
                            buf + len);
            len += sig;
            uas_crypto_aes_cbc(true, cg->local.enc, a->sym_enc_key_len, cg->local.iv, buf + 16,
                               len - 16);
            size_t end = len;
            cr_assert_eq(pol->sym_unprotect(srv.keys, buf, 16, &end), UAS_GOOD, "%s chunk %zu",
                         pol->uri, i);
            cr_assert_eq(end, 24 + sizes[i]);
            cr_assert(memcmp(buf + 24, body, sizes[i]) == 0);
        }
        side_fini(&srv);
        side_fini(&cli);
    }
}

/* Once a token's keys are derived, securing and checking a chunk costs no
 * allocation (the stack's allocator; OpenSSL's is counted by test_crypto). */
Test(secpol, sym_chunks_allocate_nothing_once_keys_are_derived)
{
    for (size_t p = 0; p < N_POLICIES; p++) {
        for (size_t m = 0; m < 2; m++) {
            const uas_secpol *pol = rsa_policies[p];
            side srv, cli;
            pair_init(pol, modes[m], &srv, &cli);
            uint8_t body[70], buf[256];
            fill_body(body, sizeof(body), 1);
            uas_mem_stats s0, s1;
            for (int i = 0; i < 20; i++) {
                if (i == 1) /* the first round made the thread's digest states */
                    uas_mem_get_stats(&s0);
                size_t len = build_msg(buf, 1, body, sizeof(body)), end;
                cr_assert_eq(pol->sym_protect(srv.keys, buf, 16, &len, sizeof(buf)), UAS_GOOD);
                end = len;
                cr_assert_eq(pol->sym_unprotect(cli.keys, buf, 16, &end), UAS_GOOD);
            }
            uas_mem_get_stats(&s1);
            cr_assert_eq(s1.allocs - s0.allocs, 0, "%s mode %d", pol->uri, (int)modes[m]);
            side_fini(&srv);
            side_fini(&cli);
        }
    }
}

/* The mode may still change after a token's keys exist: switching to
 * SignAndEncrypt keys the AES contexts then. Deriving the same token again
 * replaces its keys. */
Test(secpol, encryption_switched_on_after_derivation_still_works)
{
    const uas_secpol *pol = &uas_secpol_aes128_sha256_rsaoaep;
    side srv, cli;
    pair_init(pol, UAS_MESSAGE_SECURITY_MODE_SIGN, &srv, &cli);
    cr_assert_null(uas__secpol_gen(srv.keys, 1)->enc_local.ctx, "Sign keys no AES context");
    cr_assert_eq(uas_secpol_keys_set_mode(srv.keys, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT),
                 UAS_GOOD);
    cr_assert_eq(uas_secpol_keys_set_mode(cli.keys, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT),
                 UAS_GOOD);
    sym_round_trip(pol, &srv, &cli, 8192, 70, false);
    sym_round_trip(pol, &cli, &srv, 8192, 70, false);
    derive_both(pol, &srv, &cli, 1);
    sym_round_trip(pol, &srv, &cli, 8192, 70, false);
    sym_round_trip(pol, &cli, &srv, 8192, 70, false);
    side_fini(&srv);
    side_fini(&cli);
}

Test(secpol, chunks_without_keys_are_refused)
{
    side s;
    side_init(&s, &uas_secpol_basic256sha256, TK_RSA2048_A,
              UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
    uint8_t buf[256] = {0};
    size_t len = build_msg(buf, 1, NULL, 0), end = 64;
    const uas_secpol *pol = &uas_secpol_basic256sha256;
    cr_assert_eq(pol->sym_protect(s.keys, buf, 16, &len, sizeof(buf)), UAS_BAD_INTERNAL_ERROR);
    cr_assert_eq(pol->sym_unprotect(s.keys, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(pol->sym_protect(NULL, buf, 16, &len, sizeof(buf)), UAS_BAD_INTERNAL_ERROR);
    cr_assert_eq(pol->sym_unprotect(NULL, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(pol->asym_unprotect(NULL, buf, 16, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(pol->asym_protect(s.keys, buf, 16, &len, sizeof(buf)), UAS_BAD_INTERNAL_ERROR);
    cr_assert_eq(pol->sym_overhead(NULL, 8192), 0);
    cr_assert_eq(pol->asym_overhead(s.keys, 8192), 0);
    side_fini(&s);
}

/* ---- OPN chunks ---- */

/* [OPN F size | channel 0 | asymmetric security header][seq | request id]
 * [body]; returns the end of the body, *hl the header length. */
static size_t build_opn(uint8_t *buf, size_t cap, const uas_secpol *pol, const side *from,
                        const uint8_t *body, size_t len, size_t *hl)
{
    memcpy(buf, "OPNF", 4);
    put_u32(buf + 4, 0);
    put_u32(buf + 8, 0);
    size_t n = uas_secpol_asym_header(pol, from->keys, buf + 12, cap - 12);
    cr_assert_gt(n, 0);
    *hl = 12 + n;
    put_u32(buf + *hl, 1);
    put_u32(buf + *hl + 4, 77);
    if (len)
        memcpy(buf + *hl + 8, body, len);
    return *hl + 8 + len;
}

/* The client (knowing the server's certificate) sends an OPN; the server
 * learns the client from it; the server answers. */
static void opn_exchange(const uas_secpol *pol, test_key_id server_id, test_key_id client_id,
                         size_t cap, size_t req_len, size_t resp_len)
{
    side srv, cli;
    side_init(&srv, pol, server_id, UAS_MESSAGE_SECURITY_MODE_SIGN);
    side_init(&cli, pol, client_id, UAS_MESSAGE_SECURITY_MODE_SIGN);
    const test_key *sk = test_key_get(server_id), *ck = test_key_get(client_id);
    cr_assert_eq(uas_secpol_keys_set_peer(cli.keys, sk->cert, sk->cert_len), UAS_GOOD);
    uint8_t *buf = malloc(cap), *body = malloc(cap);
    size_t hl, len, end;

    fill_body(body, req_len, 5);
    len = build_opn(buf, cap, pol, &cli, body, req_len, &hl);
    cr_assert_eq(pol->asym_protect(cli.keys, buf, hl, &len, cap), UAS_GOOD, "%s req %zu", pol->uri,
                 req_len);
    cr_assert_leq(len, cap);
    cr_assert_eq(get_u32(buf + 4), len);
    cr_assert_eq((len - hl) % uas_crypto_rsa_size(test_key_get(server_id)->key), 0);
    end = len;
    cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_GOOD, "%s req %zu", pol->uri,
                 req_len);
    cr_assert_eq(end, hl + 8 + req_len);
    cr_assert_eq(get_u32(buf + hl + 4), 77);
    cr_assert(memcmp(buf + hl + 8, body, req_len) == 0);
    /* The server now knows the client's certificate. */
    cr_assert(uas_secpol_keys_peer_is(srv.keys, ck->cert, ck->cert_len));
    cr_assert_not(uas_secpol_keys_peer_is(srv.keys, sk->cert, sk->cert_len));

    fill_body(body, resp_len, 6);
    len = build_opn(buf, cap, pol, &srv, body, resp_len, &hl);
    cr_assert_eq(pol->asym_protect(srv.keys, buf, hl, &len, cap), UAS_GOOD);
    end = len;
    cr_assert_eq(pol->asym_unprotect(cli.keys, buf, hl, &end), UAS_GOOD, "%s resp %zu", pol->uri,
                 resp_len);
    cr_assert_eq(end, hl + 8 + resp_len);
    cr_assert(memcmp(buf + hl + 8, body, resp_len) == 0);
    free(buf);
    free(body);
    side_fini(&srv);
    side_fini(&cli);
}

Test(secpol, opn_round_trip_every_policy)
{
    static const size_t sizes[] = {0, 1, 100, 213, 214, 1000, 5000};
    for (size_t p = 0; p < N_POLICIES; p++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            opn_exchange(rsa_policies[p], TK_RSA2048_A, TK_RSA2048_B, 8192, sizes[i],
                         sizes[sizeof(sizes) / sizeof(sizes[0]) - 1 - i]);
}

/* A 4096-bit key on one side: the chunks encrypted for it carry
 * ExtraPaddingSize, the others not; signatures of both sizes. */
Test(secpol, opn_with_a_4096_bit_key_uses_extra_padding)
{
    static const size_t sizes[] = {0, 1, 469, 470, 471, 3000};
    for (size_t p = 0; p < 3; p++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            opn_exchange(rsa_policies[p], TK_RSA4096, TK_RSA2048_B, 8192, sizes[i], sizes[i]);
            opn_exchange(rsa_policies[p], TK_RSA2048_A, TK_RSA4096, 8192, sizes[i], 7);
        }
    /* Basic256 with a 1024-bit client. */
    opn_exchange(&uas_secpol_basic256, TK_RSA2048_A, TK_RSA1024, 8192, 500, 500);
}

/* The body limit asym_overhead gives fills the chunk as far as whole
 * blocks allow, and one byte more does not fit. */
Test(secpol, opn_overhead_fills_the_chunk)
{
    for (size_t p = 0; p < N_POLICIES; p++) {
        const uas_secpol *pol = rsa_policies[p];
        test_key_id server = p < 3 ? TK_RSA4096 : TK_RSA2048_A;
        side srv, cli;
        side_init(&srv, pol, server, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
        side_init(&cli, pol, TK_RSA2048_B, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
        const test_key *sk = test_key_get(server);
        uas_secpol_keys_set_peer(cli.keys, sk->cert, sk->cert_len);
        size_t cap = 8192, hl;
        uint8_t *buf = malloc(cap), *body = malloc(cap);
        size_t overhead = pol->asym_overhead(cli.keys, cap);
        size_t h = 12 + uas_secpol_asym_header(pol, cli.keys, buf + 12, cap - 12);
        size_t body_max = cap - overhead - h - 8;
        fill_body(body, body_max, 1);
        size_t len = build_opn(buf, cap, pol, &cli, body, body_max, &hl);
        cr_assert_eq(hl, h);
        cr_assert_eq(pol->asym_protect(cli.keys, buf, hl, &len, cap), UAS_GOOD, "%s", pol->uri);
        size_t block = uas_crypto_rsa_size(sk->key);
        cr_assert_leq(len, cap);
        cr_assert_gt(len + block, cap, "%s: %zu of %zu", pol->uri, len, cap);
        size_t end = len;
        cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_GOOD);
        cr_assert_eq(end, hl + 8 + body_max);
        cr_assert(memcmp(buf + hl + 8, body, body_max) == 0);
        len = build_opn(buf, cap, pol, &cli, body, body_max + 1, &hl);
        uas_status st = pol->asym_protect(cli.keys, buf, hl, &len, cap);
        cr_assert_eq(st, UAS_BAD_ENCODING_LIMITS_EXCEEDED, "%s: 0x%08x len %zu", pol->uri, st, len);
        free(buf);
        free(body);
        side_fini(&srv);
        side_fini(&cli);
    }
}

/* Every changed byte of a protected OPN (headers included), cut chunks,
 * a wrong receiver, a different sender: refused, and a refused OPN teaches
 * the server no peer. */
Test(secpol, opn_tampering_fails_the_security_checks)
{
    const uas_secpol *pol = &uas_secpol_basic256sha256;
    side srv, cli, other;
    side_init(&srv, pol, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN);
    side_init(&cli, pol, TK_RSA2048_B, UAS_MESSAGE_SECURITY_MODE_SIGN);
    side_init(&other, pol, TK_RSA2048_C, UAS_MESSAGE_SECURITY_MODE_SIGN);
    const test_key *sk = test_key_get(TK_RSA2048_A);
    uas_secpol_keys_set_peer(cli.keys, sk->cert, sk->cert_len);
    uas_secpol_keys_set_peer(other.keys, sk->cert, sk->cert_len);
    uint8_t body[300], buf[4096], copy[4096];
    fill_body(body, sizeof(body), 2);
    size_t hl, len = build_opn(buf, sizeof(buf), pol, &cli, body, sizeof(body), &hl);
    cr_assert_eq(pol->asym_protect(cli.keys, buf, hl, &len, sizeof(buf)), UAS_GOOD);
    memcpy(copy, buf, len);
    /* Every byte of the security header and a sample of the ciphertext
     * (each RSA decryption is slow under ASan). */
    for (size_t i = 12; i < len; i += i < hl ? 1 : 37) {
        memcpy(buf, copy, len);
        buf[i] ^= 0x20;
        size_t end = len;
        uas_status st = pol->asym_unprotect(srv.keys, buf, hl, &end);
        /* A changed certificate may no longer parse as one. */
        cr_assert(st == UAS_BAD_SECURITY_CHECKS_FAILED || st == UAS_BAD_CERTIFICATE_INVALID,
                  "byte %zu: 0x%08x", i, st);
        cr_assert_null(uas_secpol_keys_peer_thumbprint(srv.keys), "byte %zu", i);
    }
    /* The unencrypted message header is signed too. */
    for (size_t i = 0; i < 12; i++) {
        memcpy(buf, copy, len);
        buf[i] ^= 0x01;
        size_t end = len;
        cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED,
                     "byte %zu", i);
    }
    static const size_t cut[] = {1, 255, 256, 257};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        memcpy(buf, copy, len);
        size_t end = len - cut[i];
        cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    }
    memcpy(buf, copy, len);
    size_t end = hl;
    cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_null(uas_secpol_keys_peer_thumbprint(srv.keys));

    /* The intact OPN passes; then an OPN from another client certificate
     * on the same channel is refused. */
    memcpy(buf, copy, len);
    end = len;
    cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_GOOD);
    len = build_opn(buf, sizeof(buf), pol, &other, body, sizeof(body), &hl);
    cr_assert_eq(pol->asym_protect(other.keys, buf, hl, &len, sizeof(buf)), UAS_GOOD);
    end = len;
    cr_assert_eq(pol->asym_unprotect(srv.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED);

    /* A client refuses a response from a certificate other than the one it
     * encrypted for: C answers, pretending to be the server. */
    uas_secpol_keys_set_peer(other.keys, test_key_get(TK_RSA2048_B)->cert,
                             test_key_get(TK_RSA2048_B)->cert_len);
    len = build_opn(buf, sizeof(buf), pol, &other, body, 10, &hl);
    cr_assert_eq(pol->asym_protect(other.keys, buf, hl, &len, sizeof(buf)), UAS_GOOD);
    end = len;
    cr_assert_eq(pol->asym_unprotect(cli.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED);

    /* An OPN of another policy (header URI) is refused. */
    side b256;
    side_init(&b256, &uas_secpol_basic256, TK_RSA2048_B, UAS_MESSAGE_SECURITY_MODE_SIGN);
    uas_secpol_keys_set_peer(b256.keys, sk->cert, sk->cert_len);
    len = build_opn(buf, sizeof(buf), &uas_secpol_basic256, &b256, body, 10, &hl);
    cr_assert_eq(uas_secpol_basic256.asym_protect(b256.keys, buf, hl, &len, sizeof(buf)), UAS_GOOD);
    side fresh;
    side_init(&fresh, pol, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN);
    end = len;
    cr_assert_eq(pol->asym_unprotect(fresh.keys, buf, hl, &end), UAS_BAD_SECURITY_CHECKS_FAILED);
    side_fini(&fresh);
    side_fini(&b256);
    side_fini(&srv);
    side_fini(&cli);
    side_fini(&other);
}

/* A sender certificate outside the policy's key limits is refused before
 * any private-key operation. */
Test(secpol, opn_from_a_too_small_key_fails_the_policy_check)
{
    const uas_secpol *pol = &uas_secpol_basic256sha256;
    side srv;
    side_init(&srv, pol, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN);
    const test_key *small = test_key_get(TK_RSA1024), *sk = test_key_get(TK_RSA2048_A);
    uint8_t buf[4096] = {0};
    memcpy(buf, "OPNF", 4);
    size_t n = 12, ul = strlen(pol->uri);
    put_u32(buf + n, (uint32_t)ul);
    memcpy(buf + n + 4, pol->uri, ul);
    n += 4 + ul;
    put_u32(buf + n, (uint32_t)small->cert_len);
    memcpy(buf + n + 4, small->cert, small->cert_len);
    n += 4 + small->cert_len;
    put_u32(buf + n, 20);
    uas_crypto_digest(UAS_DIGEST_SHA1, sk->cert, sk->cert_len, buf + n + 4);
    n += 24;
    size_t end = n + 256;
    cr_assert_eq(pol->asym_unprotect(srv.keys, buf, n, &end),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    side_fini(&srv);
}

Test(secpol, asym_header_of_none_is_uri_and_two_null_bytestrings)
{
    uint8_t buf[128];
    size_t n = uas_secpol_asym_header(&uas_secpol_none, NULL, buf, sizeof(buf));
    size_t ul = strlen(UAS_SECPOL_NONE_URI);
    cr_assert_eq(n, 4 + ul + 8);
    cr_assert_eq(get_u32(buf), ul);
    cr_assert(memcmp(buf + 4, UAS_SECPOL_NONE_URI, ul) == 0);
    cr_assert_eq(get_u32(buf + 4 + ul), UINT32_MAX);
    cr_assert_eq(get_u32(buf + 8 + ul), UINT32_MAX);
    cr_assert_eq(uas_secpol_asym_header(&uas_secpol_none, NULL, buf, 20), 0);
    /* An RSA policy without a peer cannot name the receiver. */
    side s;
    side_init(&s, &uas_secpol_basic256sha256, TK_RSA2048_A, UAS_MESSAGE_SECURITY_MODE_SIGN);
    cr_assert_eq(uas_secpol_asym_header(&uas_secpol_basic256sha256, s.keys, buf, sizeof(buf)), 0);
    side_fini(&s);
}

Test(secpol, session_signatures_use_the_policy_algorithm)
{
    for (size_t p = 0; p < N_POLICIES; p++) {
        const uas_secpol *pol = rsa_policies[p];
        side srv, cli;
        pair_init(pol, UAS_MESSAGE_SECURITY_MODE_SIGN, &srv, &cli);
        uint8_t data[100], sig[512];
        fill_body(data, sizeof(data), 4);
        size_t n = 0;
        cr_assert_eq(uas_secpol_keys_sign(cli.keys, data, sizeof(data), sig, sizeof(sig), &n),
                     UAS_GOOD);
        cr_assert_eq(n, 256);
        cr_assert_eq(uas_secpol_keys_verify(srv.keys, data, sizeof(data), sig, n), UAS_GOOD);
        cr_assert_eq(uas_crypto_rsa_verify(pol->algs->asym_sig, test_key_get(TK_RSA2048_B)->key,
                                           data, sizeof(data), sig, n),
                     UAS_GOOD);
        data[0] ^= 1;
        cr_assert_eq(uas_secpol_keys_verify(srv.keys, data, sizeof(data), sig, n),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        cr_assert_eq(uas_secpol_keys_sign(cli.keys, data, sizeof(data), sig, 255, &n),
                     UAS_BAD_ENCODING_LIMITS_EXCEEDED);
        side_fini(&srv);
        side_fini(&cli);
    }
}

#else

Test(secpol, only_none_without_encryption)
{
    const char *none = UAS_SECPOL_NONE_URI;
    cr_assert_eq(uas_secpol_find((const uint8_t *)none, strlen(none)), &uas_secpol_none);
    uas_secpol_cred *c;
    cr_assert_eq(uas_secpol_cred_new(NULL, 0, NULL, 0, &c), UAS_BAD_NOT_SUPPORTED);
}

#endif
