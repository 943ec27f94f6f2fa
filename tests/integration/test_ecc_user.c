#define _GNU_SOURCE
/* User names over the ECC endpoints (EccEncryptedSecret, Part 4 7.41.2.3)
 * over real sockets: libuaclient logs in through every ECC policy; a wrong
 * password, a secret for a key the server did not hand out (tampered), a
 * secret made again for a spent ECDHKey (replayed) and one over an old
 * session nonce are refused with their status code and a log line, and a
 * second client is served afterwards. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "../../client/src/client_internal.h"
#include "helper_sec.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"
#define PW     "ecc-pw-1"

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

typedef env_pki uenv;
typedef env_conn conn;

static void uenv_start(uenv *s, const char *security)
{
    env_pki_dirs(s, "eccu");
    bool added = false;
    cr_assert_eq(uas_user_add(s->users, "bob", PW, strlen(PW), NULL, &added), UAS_GOOD);
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.log_level = UAS_LOG_INFO;
    cfg.security = security;
    cfg.users_file = s->users;
    cfg.auto_accept = true;
    env_pki_serve(s, &cfg);
}

/* A client of (policy, mode) logging in as bob with password; the status
 * of reaching an active session. */
static uas_status login(uenv *s, conn *k, const char *policy, int32_t mode, const char *password)
{
    uas_client_user u = {.kind = UAS_CLIENT_USER_NAME,
                         .name = "bob",
                         .password = password,
                         .password_len = strlen(password)};
    return env_conn_login(s, k, policy, mode, &u);
}

/* A second, normal client logs in and reads. */
static void still_serves(uenv *s)
{
    conn k;
    cr_expect_eq(
        login(s, &k, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, PW),
        UAS_GOOD, "a second client is served");
    env_expect_running(k.c);
    env_conn_close(&k);
}

Test(ecc_user, every_ecc_policy_logs_in_with_a_user_name, .timeout = 120)
{
    char list[2048] = "";
    for (size_t i = 0; i < N_ECC; i++) {
        char item[96];
        snprintf(item, sizeof(item), "%s%s:Sign,%s:SignAndEncrypt", i ? "," : "", ecc_policies[i],
                 ecc_policies[i]);
        strcat(list, item);
    }
    uenv s;
    uenv_start(&s, list);
    for (size_t i = 0; i < N_ECC; i++) {
        for (int m = 0; m < 2; m++) {
            int32_t mode =
                m ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT : UAS_MESSAGE_SECURITY_MODE_SIGN;
            conn k;
            uas_status st = login(&s, &k, ecc_policies[i], mode, PW);
            cr_expect_eq(st, UAS_GOOD, "%s/%d: %s", ecc_policies[i], mode, uas_status_name(st));
            if (st == UAS_GOOD) {
                cr_expect(strncmp(k.c->policy_id, "username_", 9) == 0, "%s", k.c->policy_id);
                env_expect_running(k.c);
            }
            env_conn_close(&k);
        }
    }
    env_pki_stop(&s);
}

Test(ecc_user, wrong_password_is_denied, .timeout = 60)
{
    uenv s;
    uenv_start(&s, "ECC_curve25519:SignAndEncrypt,ECC_nistP256_AesGcm:SignAndEncrypt");
    env_log_capture();
    conn k;
    uas_status st = login(&s, &k, "ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                          "not-the-password");
    cr_expect_eq(st, UAS_BAD_USER_ACCESS_DENIED, "%s", uas_status_name(st));
    cr_expect(env_log_has("user name login refused"), "no log line");
    env_log_release();
    env_conn_close(&k);
    still_serves(&s);
    env_pki_stop(&s);
}

static void on_activated(uas_client *c, void *ud, uas_status st, const void *resp,
                         const uas_type *t)
{
    (void)c, (void)resp, (void)t;
    *(uas_status *)ud = st;
}

/* ActivateSession again on k's channel with its session. */
static uas_status reactivate(uenv *s, conn *k)
{
    uas_nodeid token;
    cr_assert_eq(uas_copy(uas_client_auth_token(k->c), &token, UAS_TYPE(NODE_ID)), UAS_GOOD);
    uas_status st = UAS_BAD_TIMEOUT;
    uas_status sst = uas_client_activate_session(k->c, &token, on_activated, &st);
    for (int i = 0; i < 200 && sst == UAS_GOOD && st == UAS_BAD_TIMEOUT; i++)
        uas_loop_run_once(s->e.loop, false), usleep(10000);
    uas_clear(&token, UAS_TYPE(NODE_ID));
    return sst != UAS_GOOD ? sst : st;
}

/* The ECDHKey of an activation serves the next one; the client's copy
 * is then spent, so the test puts back what it wants to try. */
Test(ecc_user, secret_for_a_spent_key_or_an_old_nonce_is_refused, .timeout = 60)
{
    uenv s;
    uenv_start(&s, "ECC_nistP256_AesGcm:SignAndEncrypt,ECC_curve25519:SignAndEncrypt");
    conn k;
    cr_assert_eq(
        login(&s, &k, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, PW),
        UAS_GOOD);
    /* The key and nonce the login's ActivateSession answered with. */
    cr_assert_gt(k.c->server_eph_len, 0, "no ECDHKey after ActivateSession");
    uint8_t eph[96], nonce[128];
    size_t eph_len = k.c->server_eph_len, nonce_len = k.c->server_nonce_len;
    memcpy(eph, k.c->server_eph, eph_len);
    memcpy(nonce, k.c->server_nonce, nonce_len);
    /* A re-activation with them works and spends them. */
    cr_expect_eq(reactivate(&s, &k), UAS_GOOD);
    env_expect_running(k.c);
    env_log_capture();
    /* Replayed key: a secret for the spent ECDHKey (with the new nonce). */
    memcpy(k.c->server_eph, eph, eph_len);
    k.c->server_eph_len = eph_len;
    uas_status st = reactivate(&s, &k);
    cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_INVALID, "spent key: %s", uas_status_name(st));
    cr_expect(env_log_has("ReceiverPublicKey is not the key we handed out") ||
                  env_log_has("no ECDHKey of ours is outstanding"),
              "no log line for the spent key");
    env_log_release();
    env_conn_close(&k);

    /* Old nonce: a fresh login, then a secret for the current key over the
     * nonce of CreateSession instead of ActivateSession's. */
    cr_assert_eq(
        login(&s, &k, "ECC_nistP256_AesGcm", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, PW),
        UAS_GOOD);
    env_log_capture();
    k.c->server_nonce[0] ^= 1; /* not the session's nonce */
    st = reactivate(&s, &k);
    cr_expect(st == UAS_BAD_IDENTITY_TOKEN_INVALID || st == UAS_BAD_APPLICATION_SIGNATURE_INVALID,
              "old nonce: %s", uas_status_name(st));
    env_log_release();
    env_conn_close(&k);

    /* Tampered key: one bit of the ECDHKey changed (on curve25519 every
     * 32 bytes are a key, so the client still makes a secret for it). */
    cr_assert_eq(login(&s, &k, "ECC_curve25519", UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT, PW),
                 UAS_GOOD);
    env_log_capture();
    k.c->server_eph[5] ^= 1;
    st = reactivate(&s, &k);
    cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_INVALID, "tampered key: %s", uas_status_name(st));
    cr_expect(env_log_has("EccEncryptedSecret"), "no log line for the tampered key");
    env_log_release();
    env_conn_close(&k);
    still_serves(&s);
    env_pki_stop(&s);
}
