#define _GNU_SOURCE
/* The ECC security policies over real sockets on 127.0.0.1: libuaclient
 * against libuaserver for every ECC policy in Sign and SignAndEncrypt with
 * a session and a Read (each endpoint advertised with the certificate of
 * its curve, made on first start), and the bad input of an ECC handshake
 * or channel: a certificate of the wrong curve, an ephemeral key off the
 * curve, a low-order X25519 key, a tampered AEAD tag, a replayed chunk, an
 * untrusted or expired ECC certificate (user names over ECC: test_ecc_user.c). Each gets its status
 * code and a log line, and a second client is served afterwards. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "channel_internal.h"
#include "helper_sec.h"
#include "secpol_internal.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"

static const char *const ecc_policies[] = {
    "ECC_nistP256_AesGcm",
    "ECC_nistP256_ChaChaPoly",
    "ECC_nistP384_AesGcm",
    "ECC_nistP384_ChaChaPoly",
    "ECC_brainpoolP256r1_AesGcm",
    "ECC_brainpoolP256r1_ChaChaPoly",
    "ECC_brainpoolP384r1_AesGcm",
    "ECC_brainpoolP384r1_ChaChaPoly",
    "ECC_curve25519",
    "ECC_curve448",
};
enum { N_ECC = sizeof(ecc_policies) / sizeof(ecc_policies[0]) };

typedef env_pki eenv;

static void eenv_start(eenv *s, const char *security, bool auto_accept)
{
    env_pki_dirs(s, "ecc");
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.log_level = UAS_LOG_WARN;
    cfg.security = security;
    cfg.auto_accept = auto_accept;
    env_pki_serve(s, &cfg);
}

/* The endpoint's certificate for (policy, mode). */
static void endpoint_cert(eenv *s, const char *policy, int32_t mode, uas_bytestring *cert)
{
    char uri[128];
    snprintf(uri, sizeof(uri), POLICY "%s", policy);
    uint8_t level = 0;
    memset(cert, 0, sizeof(*cert));
    uas_status st =
        uas_client_select_endpoint(s->e.loop, s->e.url, uri, mode, ENV_WAIT_MS, cert, &level);
    cr_assert_eq(st, UAS_GOOD, "select_endpoint %s: %s", policy, uas_status_name(st));
    cr_assert_gt(cert->length, 0);
}

/* A client with a session on (policy, mode), its own certificate made in
 * the client store; asserts a Read of the server state. */
static void read_with_session(eenv *s, const char *policy, int32_t mode)
{
    env_conn k;
    uas_status st = env_conn_login(s, &k, policy, mode, NULL);
    cr_assert_eq(st, UAS_GOOD, "connect %s/%d: %s", policy, mode, uas_status_name(st));
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid state = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    uas_datavalue dv;
    st = env_read(k.c, &state, 13, &dv, &a);
    cr_assert_eq(st, UAS_GOOD, "read over %s/%d: %s", policy, mode, uas_status_name(st));
    cr_assert(dv.has_value && dv.value.data);
    cr_assert_eq(*(int32_t *)dv.value.data, UAS_SERVER_STATE_RUNNING);
    uas_arena_free(&a);
    env_conn_close(&k);
}

Test(ecc, every_policy_and_mode_reads_with_a_session, .timeout = 60)
{
    char list[2048] = "";
    for (size_t i = 0; i < N_ECC; i++) {
        char item[96];
        snprintf(item, sizeof(item), "%s%s:Sign,%s:SignAndEncrypt", i ? "," : "", ecc_policies[i],
                 ecc_policies[i]);
        strcat(list, item);
    }
    eenv s;
    eenv_start(&s, list, true);
    for (size_t i = 0; i < N_ECC; i++) {
        read_with_session(&s, ecc_policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN);
        read_with_session(&s, ecc_policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
    }
    /* Each endpoint carries the certificate of its curve, and only that
     * policy takes it. */
    uas_bytestring p256, x25519;
    endpoint_cert(&s, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN, &p256);
    endpoint_cert(&s, "ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN, &x25519);
    const uas_secpol *pp = uas_security_policy(POLICY "ECC_nistP256_AesGcm", false);
    const uas_secpol *px = uas_security_policy(POLICY "ECC_curve25519", false);
    cr_expect_eq(uas_secpol_check_cert(pp, p256.data, p256.length), UAS_GOOD);
    cr_expect_eq(uas_secpol_check_cert(px, x25519.data, x25519.length), UAS_GOOD);
    cr_expect_eq(uas_secpol_check_cert(px, p256.data, p256.length),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_expect_eq(uas_secpol_check_cert(pp, x25519.data, x25519.length),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    uas_clear(&p256, UAS_TYPE(BYTE_STRING));
    uas_clear(&x25519, UAS_TYPE(BYTE_STRING));
    env_pki_stop(&s);
}

/* ---- bad input ---- */

/* An own certificate of this key type in the store at dir. */
static void make_cert(const char *dir, const char *name, const char *type, uas_datetime from,
                      uint32_t days, uas_bytestring *cert, uas_bytestring *key)
{
    uas_pki_store *st = NULL;
    cr_assert_eq(uas_pki_store_open(dir, NULL, &st), UAS_GOOD);
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = "urn:uastack:client"; /* what libuaclient says it is */
    p.application_name = name;
    p.file_name = name;
    p.key_type = type;
    p.validity_days = days;
    static const char *const dns[] = {"localhost"};
    p.dns_names = dns;
    p.dns_count = 1;
    cr_assert_eq(uas_pki_create_own(st, &p, from), UAS_GOOD);
    cr_assert_eq(uas_pki_load_own(st, name, cert, key), UAS_GOOD);
    uas_pki_store_close(st);
}

static const char *const bad_list = "ECC_nistP256_AesGcm:SignAndEncrypt,ECC_curve25519:Sign";

/* A second, normal client is served. */
static void still_serves(eenv *s)
{
    read_with_session(s, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT);
}

static uint32_t u32at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Opens a schan for policy with a fresh client certificate of type, the
 * OPN held back (not sent). */
static void held_opn(eenv *s, env_schan *sc, const char *policy, const char *type,
                     uas_bytestring *server_cert)
{
    uas_bytestring cert, key;
    make_cert(s->client_pki, type, type, uas_datetime_now(), 0, &cert, &key);
    endpoint_cert(s, policy,
                  policy[4] == 'c' ? UAS_MESSAGE_SECURITY_MODE_SIGN
                                   : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                  server_cert);
    char uri[128];
    snprintf(uri, sizeof(uri), POLICY "%s", policy);
    memset(sc, 0, sizeof(*sc));
    env_schan_connect(&s->e, sc, uri,
                      policy[4] == 'c' ? UAS_MESSAGE_SECURITY_MODE_SIGN
                                       : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                      &cert, &key, server_cert);
    sc->hold = true; /* the OPN follows the ACK */
    for (int i = 0; i < 20 && sc->nheld == 0; i++)
        env_schan_pump(sc, 200);
    cr_assert_eq(sc->nheld, 1, "no OPN held");
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
}

/* Replaces the client's ephemeral key in the held OPN by bad (signed
 * again, so only the key is wrong), sends it and expects an ERR. */
static void send_bad_nonce(env_schan *sc, const uint8_t *bad, size_t n)
{
    uint8_t *c = sc->held[0].data;
    size_t len = sc->held[0].len;
    uint8_t *at = memmem(c, len, sc->ch->local_nonce, n);
    cr_assert(at, "nonce not found in the OPN");
    memcpy(at, bad, n);
    const struct uas_ecc_suite *suite = uas_channel_policy(sc->ch)->ecc;
    size_t sl = suite->sig_len;
    cr_assert_eq(
        uas__ecc_sign(suite, sc->cred->key, sc->cred->ed_sk, c, len - sl, NULL, 0, c + len - sl),
        UAS_GOOD);
    raw_send(sc->fd, c, len);
}

Test(ecc, off_curve_ephemeral_key_is_refused_with_bad_nonce_invalid, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, true);
    env_log_capture();
    env_schan sc;
    uas_bytestring server_cert;
    held_opn(&s, &sc, "ECC_nistP256_AesGcm", "nistP256", &server_cert);
    uint8_t bad[64];
    memcpy(bad, sc.ch->local_nonce, 64);
    bad[63] ^= 1; /* y no longer on the curve for this x */
    send_bad_nonce(&sc, bad, 64);
    raw_expect_err(sc.fd, UAS_BAD_NONCE_INVALID);
    cr_expect(env_log_has("BadNonceInvalid"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    still_serves(&s);
    env_pki_stop(&s);
}

Test(ecc, low_order_x25519_key_is_refused_with_bad_nonce_invalid, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, true);
    env_log_capture();
    env_schan sc;
    uas_bytestring server_cert;
    held_opn(&s, &sc, "ECC_curve25519", "curve25519", &server_cert);
    uint8_t bad[32] = {1}; /* u = 1: a point of order 1 */
    send_bad_nonce(&sc, bad, 32);
    raw_expect_err(sc.fd, UAS_BAD_NONCE_INVALID);
    cr_expect(env_log_has("BadNonceInvalid"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    still_serves(&s);
    env_pki_stop(&s);
}

Test(ecc, certificate_of_the_wrong_curve_is_refused, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, true);
    env_log_capture();
    /* An ECC_curve25519 OPN (Ed25519 certificate), renamed to
     * ECC_nistP256_AesGcm and addressed to the server's P-256 certificate. */
    env_schan sc;
    uas_bytestring x_cert, p_cert;
    held_opn(&s, &sc, "ECC_curve25519", "curve25519", &x_cert);
    endpoint_cert(&s, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &p_cert);
    const uint8_t *c = sc.held[0].data;
    size_t len = sc.held[0].len;
    const uint8_t *p = c + 12;
    uint32_t ul = u32at(p);
    const uint8_t *cert = p + 4 + ul;
    uint32_t cl = u32at(cert);
    const uint8_t *thumb = cert + 4 + cl;
    const uint8_t *rest = thumb + 4 + u32at(thumb);
    const char *uri = POLICY "ECC_nistP256_AesGcm";
    uint8_t out[8192];
    size_t o = 0;
    memcpy(out, c, 12);
    o = 12;
    put32(out + o, (uint32_t)strlen(uri));
    memcpy(out + o + 4, uri, strlen(uri));
    o += 4 + strlen(uri);
    memcpy(out + o, cert, 4 + cl);
    o += 4 + cl;
    put32(out + o, 20);
    cr_assert_eq(uas_crypto_digest(UAS_DIGEST_SHA1, p_cert.data, p_cert.length, out + o + 4),
                 UAS_GOOD);
    o += 24;
    memcpy(out + o, rest, (size_t)(c + len - rest));
    o += (size_t)(c + len - rest);
    put32(out + 4, (uint32_t)o);
    raw_send(sc.fd, out, o);
    raw_expect_err(sc.fd, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_expect(env_log_has("BadCertificatePolicyCheckFailed"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_clear(&x_cert, UAS_TYPE(BYTE_STRING));
    uas_clear(&p_cert, UAS_TYPE(BYTE_STRING));
    still_serves(&s);
    env_pki_stop(&s);
}

/* Opens an ECC channel by hand and sends one Read held back, so the test
 * can modify or repeat its chunk. */
static void open_and_hold_read(eenv *s, env_schan *sc, uas_bytestring *server_cert)
{
    held_opn(s, sc, "ECC_nistP256_AesGcm", "nistP256", server_cert);
    raw_send(sc->fd, sc->held[0].data, sc->held[0].len);
    env_schan_drop_held(sc);
    for (int i = 0; i < 20 && uas_channel_get_state(sc->ch) != UAS_CHANNEL_OPEN; i++)
        env_schan_pump(sc, 200);
    cr_assert_eq(uas_channel_get_state(sc->ch), UAS_CHANNEL_OPEN);
    uas_read_value_id id;
    memset(&id, 0, sizeof(id));
    id.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    id.attribute_id = 13;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = &id;
    req.nodes_to_read_count = 1;
    env_schan_send(sc, &req, UAS_TYPE(READ_REQUEST));
    cr_assert_eq(sc->nheld, 1);
}

Test(ecc, tampered_aead_tag_closes_the_channel, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, true);
    env_log_capture();
    env_schan sc;
    uas_bytestring server_cert;
    open_and_hold_read(&s, &sc, &server_cert);
    sc.held[0].data[sc.held[0].len - 1] ^= 0x01;
    raw_send(sc.fd, sc.held[0].data, sc.held[0].len);
    raw_expect_err(sc.fd, UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_expect(env_log_has("BadSecurityChecksFailed"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    still_serves(&s);
    env_pki_stop(&s);
}

Test(ecc, replayed_chunk_closes_the_channel, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, true);
    env_log_capture();
    env_schan sc;
    uas_bytestring server_cert;
    open_and_hold_read(&s, &sc, &server_cert);
    /* The same chunk twice: its sequence number is used again, and the
     * AEAD nonce it was sealed under is not the one the server expects. */
    raw_send(sc.fd, sc.held[0].data, sc.held[0].len);
    uint8_t buf[65536];
    long n = raw_read_chunk(sc.fd, buf, sizeof(buf));
    cr_assert_gt(n, 0);
    cr_assert_eq(memcmp(buf, "MSGF", 4), 0, "the first copy is answered");
    raw_send(sc.fd, sc.held[0].data, sc.held[0].len);
    raw_expect_err(sc.fd, UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_expect(env_log_has("BadSecurityChecksFailed"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    still_serves(&s);
    env_pki_stop(&s);
}

Test(ecc, untrusted_and_expired_ecc_certificates_are_refused, .timeout = 60)
{
    eenv s;
    eenv_start(&s, bad_list, false);
    env_log_capture();
    uas_bytestring server_cert, cert, key;
    endpoint_cert(&s, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                  &server_cert);
    /* Untrusted. */
    make_cert(s.client_pki, "untrusted", "nistP256", uas_datetime_now(), 0, &cert, &key);
    env_schan sc;
    memset(&sc, 0, sizeof(sc));
    env_schan_connect(&s.e, &sc, POLICY "ECC_nistP256_AesGcm",
                      UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &cert, &key, &server_cert);
    while (env_schan_pump(&sc, 500))
        ;
    cr_expect_eq(sc.closed, UAS_BAD_CERTIFICATE_UNTRUSTED, "%s", uas_status_name(sc.closed));
    cr_expect(env_log_has("BadCertificateUntrusted"), "no log line");
    env_schan_close(&sc);
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    /* Trusted but expired: made 800 days ago for a year. */
    uas_datetime old = uas_datetime_now() - (int64_t)800 * 86400 * 10000000;
    make_cert(s.client_pki, "expired", "nistP256", old, 365, &cert, &key);
    uas_pki_store *st = NULL;
    cr_assert_eq(uas_pki_store_open(s.server_pki, NULL, &st), UAS_GOOD);
    cr_assert_eq(uas_pki_add(st, UAS_PKI_TRUSTED, cert.data, cert.length), UAS_GOOD);
    uas_pki_store_close(st);
    memset(&sc, 0, sizeof(sc));
    env_schan_connect(&s.e, &sc, POLICY "ECC_nistP256_AesGcm",
                      UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, &cert, &key, &server_cert);
    while (env_schan_pump(&sc, 500))
        ;
    cr_expect_eq(sc.closed, UAS_BAD_CERTIFICATE_TIME_INVALID, "%s", uas_status_name(sc.closed));
    cr_expect(env_log_has("BadCertificateTimeInvalid"), "no log line");
    env_log_release();
    env_schan_close(&sc);
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    /* A trusted client is served: its own certificate made on first use
     * and then trusted. */
    make_cert(s.client_pki, "uastack_client_nistP256", "nistP256", uas_datetime_now(), 0, &cert,
              &key);
    cr_assert_eq(uas_pki_store_open(s.server_pki, NULL, &st), UAS_GOOD);
    cr_assert_eq(uas_pki_add(st, UAS_PKI_TRUSTED, cert.data, cert.length), UAS_GOOD);
    uas_pki_store_close(st);
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    still_serves(&s);
    env_pki_stop(&s);
}
