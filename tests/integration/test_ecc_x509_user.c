#define _GNU_SOURCE
/* X.509 user identity tokens with ECC keys (Part 4, 7.41.5 and 6.1.8 of
 * 1.05.07) over real sockets: a user certificate of the endpoint's curve
 * logs in through libuaclient on the enhanced P-256 policies (channel-bound
 * user token signature) and on curve25519 (serverCertificate + nonce);
 * an RSA user still logs in on an RSA endpoint. Refused, each with its
 * status code and a log line, while a second client keeps being served: a
 * user signature that does not verify (BadUserSignatureInvalid), a user
 * certificate the user trust list does not hold and one of another curve
 * than the endpoint's (BadIdentityTokenRejected, as for RSA). The refused
 * activations are made by hand on a live session so that the signature can
 * be tampered with after it was made. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "../../client/src/client_internal.h"
#include "helper_sec.h"
#include "secpol_user.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"

enum { U_P256, U_ED25519, U_RSA, U_STRANGER, N_USERS };

static const char *const user_names[N_USERS] = {"p256", "ed25519", "rsa", "stranger"};
static const char *const user_keys[N_USERS] = {"nistP256", "curve25519", "rsa2048", "nistP256"};

typedef struct xenv {
    env_pki p;
    uas_bytestring cert[N_USERS], key[N_USERS];
} xenv;
typedef env_conn conn;

static void make_user(xenv *s, int u)
{
    char path[192], uri[96];
    snprintf(path, sizeof(path), "%s/user-%s", s->p.dir, user_names[u]);
    snprintf(uri, sizeof(uri), "urn:uastack:user:%s", user_names[u]);
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(path, NULL, &store), UAS_GOOD);
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = uri;
    p.file_name = user_names[u];
    p.key_type = user_keys[u];
    uas_status st = uas_pki_ensure_own(store, &p, uas_datetime_now(), &s->cert[u], &s->key[u]);
    uas_pki_store_close(store);
    cr_assert_eq(st, UAS_GOOD, "user %s: %s", user_names[u], uas_status_name(st));
}

static void xenv_start(xenv *s, const char *security)
{
    memset(s, 0, sizeof(*s));
    env_pki_dirs(&s->p, "eccx");
    cr_assert_eq(uas_user_add(s->p.users, "bob", "pw-of-bob", 9, NULL, NULL), UAS_GOOD);
    /* The user trust list holds every user but the stranger. */
    char store[160];
    snprintf(store, sizeof(store), "%s/user", s->p.server_pki);
    uas_pki_store *ps;
    cr_assert_eq(uas_pki_store_open(store, NULL, &ps), UAS_GOOD);
    for (int u = 0; u < N_USERS; u++) {
        make_user(s, u);
        if (u != U_STRANGER)
            cr_assert_eq(uas_pki_add(ps, UAS_PKI_TRUSTED, s->cert[u].data, s->cert[u].length),
                         UAS_GOOD);
    }
    uas_pki_store_close(ps);
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.log_level = UAS_LOG_INFO;
    cfg.security = security;
    cfg.users_file = s->p.users;
    cfg.auto_accept = true; /* the clients' self-made application certificates */
    env_pki_serve(&s->p, &cfg);
}

static void xenv_stop(xenv *s)
{
    for (int u = 0; u < N_USERS; u++) {
        uas_pki_bytes_free(&s->cert[u]);
        uas_pki_bytes_free(&s->key[u]);
    }
    env_pki_stop(&s->p);
}

/* A client of (policy, mode) logging in as X.509 user u: the status of
 * reaching an active session. */
static uas_status login(xenv *s, conn *k, const char *policy, int32_t mode, int u)
{
    uas_client_user user = {.kind = UAS_CLIENT_USER_X509,
                            .cert = s->cert[u].data,
                            .cert_len = s->cert[u].length,
                            .key = s->key[u].data,
                            .key_len = s->key[u].length};
    return env_conn_login(&s->p, k, policy, mode, &user);
}

/* A second, normal client logs in and reads. */
static void still_serves(xenv *s)
{
    conn k;
    cr_expect_eq(
        login(s, &k, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_P256),
        UAS_GOOD, "a second client is served");
    env_expect_running(k.c);
    env_conn_close(&k);
}

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)c, (void)resp, (void)t;
    *(uas_status *)ud = st;
}

/* ActivateSession again on k's live session, made here instead of by the
 * library: a valid clientSignature, and the X509IdentityToken of user u
 * with a userTokenSignature by u's key under the token policy of the
 * channel's policy, one bit of it flipped when tamper is set. */
static uas_status activate_by_hand(xenv *s, conn *k, int u, bool tamper)
{
    uas_client *c = k->c;
    uas_channel *ch = uas_conn_channel(c->conn);
    bool bound = uas_channel_enhanced(ch);
    size_t cl = 0;
    const uint8_t *client_cert = uas_channel_local_cert(ch, &cl);
    uint8_t *data = NULL, *udata = NULL;
    size_t n = 0, un = 0;
    if (bound) {
        const uint8_t *certs[3] = {c->server_cert.data, c->server_cert.data, client_cert};
        size_t lens[3] = {c->server_cert.length, c->server_cert.length, cl};
        cr_assert_eq(uas_channel_bound_data(ch, c->server_nonce, c->server_nonce_len, certs, lens,
                                            3, c->client_nonce, sizeof(c->client_nonce), &data, &n),
                     UAS_GOOD);
        cr_assert_eq(uas__user_bound_data(c, &udata, &un), UAS_GOOD);
    } else {
        n = c->server_cert.length + c->server_nonce_len;
        data = uas_malloc(n);
        cr_assert(data);
        memcpy(data, c->server_cert.data, c->server_cert.length);
        memcpy(data + c->server_cert.length, c->server_nonce, c->server_nonce_len);
    }
    uint8_t csig[UAS_CLIENT_SIG_MAX], usig[UAS_CLIENT_SIG_MAX];
    size_t csig_len = 0, usig_len = 0;
    cr_assert_eq(uas_channel_sign(ch, data, n, csig, sizeof(csig), &csig_len), UAS_GOOD);
    uas_secpol_cred *cred = NULL;
    cr_assert_eq(uas_secpol_cred_new(s->cert[u].data, s->cert[u].length, s->key[u].data,
                                     s->key[u].length, &cred),
                 UAS_GOOD);
    /* The user key signs with its own curve's algorithm: for a user of
     * another curve than the channel's, the policy of that curve. */
    const char *upol = u == U_ED25519 ? POLICY "ECC_curve25519" : POLICY "ECC_nistP256_AesGcm";
    cr_assert_eq(uas_secpol_user_sign(cred, uas_security_policy(upol, false), bound ? udata : data,
                                      bound ? un : n, usig, sizeof(usig), &usig_len),
                 UAS_GOOD);
    uas_secpol_cred_unref(cred);
    uas_free(data, n);
    if (udata)
        uas_free(udata, un);
    if (tamper)
        usig[usig_len / 2] ^= 0x10;

    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = *uas_client_auth_token(c);
    req.client_signature.signature.data = csig;
    req.client_signature.signature.length = csig_len;
    uas_x509_identity_token x509;
    memset(&x509, 0, sizeof(x509));
    char pid[96];
    snprintf(pid, sizeof(pid), "x509_%s", k->uri + strlen(POLICY));
    x509.policy_id = uas_string_from(pid);
    x509.certificate_data = s->cert[u];
    req.user_identity_token.encoding = UAS_EXTOBJ_DECODED;
    req.user_identity_token.content.decoded.type = UAS_TYPE(X509_IDENTITY_TOKEN);
    req.user_identity_token.content.decoded.data = &x509;
    req.user_token_signature.signature.data = usig;
    req.user_token_signature.signature.length = usig_len;
    uas_status st = UAS_BAD_TIMEOUT;
    uas_status sst =
        uas__client_send(c, &req, UAS_TYPE(ACTIVATE_SESSION_REQUEST), on_activated, &st, NULL);
    for (int i = 0; i < 500 && sst == UAS_GOOD && st == UAS_BAD_TIMEOUT; i++)
        uas_loop_run_once(s->p.e.loop, false), usleep(10000);
    return sst != UAS_GOOD ? sst : st;
}

Test(ecc_x509_user, users_of_the_endpoints_curve_log_in, .timeout = 120)
{
    xenv s;
    xenv_start(&s, "ECC_nistP256_AesGcm:SignAndEncrypt,ECC_nistP256_ChaChaPoly:Sign,"
                   "ECC_curve25519:SignAndEncrypt,Basic256Sha256:SignAndEncrypt");
    static const struct {
        const char *policy;
        int32_t mode;
        int user;
    } cases[] = {
        {"ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_P256},
        {"ECC_nistP256_ChaChaPoly", UAS_MESSAGE_SECURITY_MODE_SIGN, U_P256},
        {"ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_ED25519},
        {"Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_RSA},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        conn k;
        uas_status st = login(&s, &k, cases[i].policy, cases[i].mode, cases[i].user);
        cr_expect_eq(st, UAS_GOOD, "%s: %s", cases[i].policy, uas_status_name(st));
        if (st == UAS_GOOD) {
            cr_expect(strncmp(k.c->policy_id, "x509_", 5) == 0, "%s", k.c->policy_id);
            env_expect_running(k.c);
            /* The by-hand activation of the other tests, untampered, passes. */
            if (cases[i].user != U_RSA)
                cr_expect_eq(activate_by_hand(&s, &k, cases[i].user, false), UAS_GOOD,
                             "%s: activation by hand", cases[i].policy);
        }
        env_conn_close(&k);
    }
    xenv_stop(&s);
}

Test(ecc_x509_user, tampered_user_signature_is_refused, .timeout = 90)
{
    xenv s;
    xenv_start(&s, "ECC_nistP256_AesGcm:SignAndEncrypt,ECC_curve25519:SignAndEncrypt");
    static const struct {
        const char *policy;
        int user;
    } cases[] = {{"ECC_nistP256_AesGcm", U_P256}, {"ECC_curve25519", U_ED25519}};
    for (size_t i = 0; i < 2; i++) {
        conn k;
        cr_assert_eq(login(&s, &k, cases[i].policy, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                           cases[i].user),
                     UAS_GOOD);
        env_log_capture();
        uas_status st = activate_by_hand(&s, &k, cases[i].user, true);
        cr_expect_eq(st, UAS_BAD_USER_SIGNATURE_INVALID, "%s: %s", cases[i].policy,
                     uas_status_name(st));
        cr_expect(env_log_has("user token signature does not verify"), "no log line");
        env_log_release();
        env_conn_close(&k);
    }
    still_serves(&s);
    xenv_stop(&s);
}

Test(ecc_x509_user, untrusted_or_wrong_curve_user_is_rejected, .timeout = 90)
{
    xenv s;
    xenv_start(&s, "ECC_nistP256_AesGcm:SignAndEncrypt,ECC_curve25519:SignAndEncrypt");
    /* Not in the user trust list: through the library. */
    env_log_capture();
    conn k;
    uas_status st = login(&s, &k, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                          U_STRANGER);
    cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_REJECTED, "untrusted: %s", uas_status_name(st));
    cr_expect(env_log_has("user certificate not trusted"), "no log line for the untrusted user");
    env_log_release();
    env_conn_close(&k);

    /* A trusted P-256 user, correctly signed with its own key, on the
     * curve25519 endpoint: the key is not of the endpoint's curve. */
    cr_assert_eq(
        login(&s, &k, "ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_ED25519),
        UAS_GOOD);
    env_log_capture();
    st = activate_by_hand(&s, &k, U_P256, false);
    cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_REJECTED, "wrong curve: %s", uas_status_name(st));
    cr_expect(env_log_has("user certificate unusable"), "no log line for the wrong curve");
    env_log_release();
    env_conn_close(&k);

    /* The library refuses to sign with a key of another curve. */
    st = login(&s, &k, "ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_P256);
    cr_expect_neq(st, UAS_GOOD, "a P-256 user on curve25519 logged in");
    env_conn_close(&k);
    still_serves(&s);
    xenv_stop(&s);
}

Test(ecc_x509_user, ecc_users_on_an_rsa_endpoint, .timeout = 90)
{
    /* Part 4 7.40.5: one X.509 token policy per key algorithm. The RSA
     * endpoint offers its own and one per ECC curve of the server; each
     * user takes the one its key fits and signs serverCertificate +
     * serverNonce with it. */
    xenv s;
    xenv_start(&s, "Basic256Sha256:SignAndEncrypt,ECC_nistP256_AesGcm:SignAndEncrypt,"
                   "ECC_nistP256_ChaChaPoly:SignAndEncrypt,ECC_curve25519:Sign");
    static const struct {
        int user;
        const char *policy_id;
    } cases[] = {
        {U_P256, "x509_ECC_nistP256_AesGcm"},
        {U_ED25519, "x509_ECC_curve25519"},
        {U_RSA, "x509_Basic256Sha256"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        conn k;
        uas_status st = login(&s, &k, "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                              cases[i].user);
        cr_expect_eq(st, UAS_GOOD, "%s: %s", user_names[cases[i].user], uas_status_name(st));
        if (st == UAS_GOOD) {
            cr_expect_str_eq(k.c->policy_id, cases[i].policy_id);
            env_expect_running(k.c);
        }
        env_conn_close(&k);
    }
    /* The untrusted P-256 user is still refused there. */
    conn k;
    cr_expect_eq(
        login(&s, &k, "Basic256Sha256", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, U_STRANGER),
        UAS_BAD_IDENTITY_TOKEN_REJECTED);
    env_conn_close(&k);
    still_serves(&s);
    xenv_stop(&s);
}
