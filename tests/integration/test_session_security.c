#define _GNU_SOURCE
/* Session-level and chunk-level security of the server under bad input,
 * over real sockets with Basic256Sha256 (Sign and SignAndEncrypt): every
 * refusal carries the status code Part 4 / Part 6 name, leaves a log line
 * without secrets, and costs nobody else anything (a second client keeps
 * reading, env_stop checks a fresh one). Requests no client library would
 * send are made by hand on a secured channel driven by the test
 * (env_schan in helper_env.h); anonymous access per endpoint
 * (anonymous_endpoints) is checked from GetEndpoints to ActivateSession. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

/* Password encryption as a client does it (public types only). */
#include "../../stack/src/secpol_user.h"
#include "helper_sec.h"

#define POLICY         "http://opcfoundation.org/UA/SecurityPolicy#"
#define B256           POLICY "Basic256Sha256"
#define RSA_OAEP       "http://www.w3.org/2001/04/xmlenc#rsa-oaep"
#define RSA_SHA1       "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
#define RSA_OAEP256    "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256"
#define NONE_URI       POLICY "None"
#define AES256         POLICY "Aes256_Sha256_RsaPss"
#define WRONG_PASSWORD "Tr0ub4dor&3"

enum {
    SIGN = UAS_MESSAGE_SECURITY_MODE_SIGN,
    ENCRYPT = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
    NONE = UAS_MESSAGE_SECURITY_MODE_NONE,
    ATTR_VALUE = 13,
};

typedef env_sec sec;

/* Set by a test before sec_start: another security list, a server-wide
 * login failure budget. */
static const char *security_override;
static uint32_t global_budget;

static void configure(uas_server_config *cfg, env_sec *s)
{
    if (security_override)
        cfg->security = security_override;
    cfg->login_global_max_failures = global_budget;
    cfg->anonymous_endpoints = s->ud;
}

/* anonymous_endpoints: the server's (NULL: its default). */
static void sec_start(sec *s, const char *anonymous_endpoints)
{
    env_sec_start(s, "ssec", configure, (void *)anonymous_endpoints);
}

static void open_channel(sec *s, env_schan *c, int32_t mode)
{
    env_schan_open(&s->e, c, B256, mode, &s->cert, &s->key, &s->server_cert);
}

/* ---- hand-made session requests ---- */

static uas_status create_session(sec *s, env_schan *c, const uas_bytestring *cert, const char *uri,
                                 size_t nonce_len, uas_create_session_response *r)
{
    uint8_t nonce[256];
    cr_assert_leq(nonce_len, sizeof(nonce));
    for (size_t i = 0; i < nonce_len; i++)
        nonce[i] = (uint8_t)rand();
    uas_create_session_request req;
    memset(&req, 0, sizeof(req));
    req.client_description.application_uri = uas_string_from(uri);
    req.client_description.application_type = UAS_APPLICATION_TYPE_CLIENT;
    req.client_description.application_name.text = uas_string_from("session security test");
    req.endpoint_url = uas_string_from(s->e.url);
    req.session_name = uas_string_from("security test");
    req.client_nonce.length = nonce_len;
    req.client_nonce.data = nonce_len ? nonce : NULL;
    req.client_certificate = *cert;
    req.requested_session_timeout = 60000;
    return env_schan_call(c, &req, UAS_TYPE(CREATE_SESSION_REQUEST), r,
                          UAS_TYPE(CREATE_SESSION_RESPONSE), &s->arena);
}

typedef enum sig_kind {
    SIG_GOOD,
    SIG_WRONG_DATA, /* the nonce alone, without the server certificate */
    SIG_FLIPPED,    /* one bit of the signature */
    SIG_WRONG_ALGORITHM,
    SIG_MISSING,
    SIG_KINDS,
} sig_kind;

static const char *const sig_names[SIG_KINDS] = {"good", "wrong data", "flipped bit",
                                                 "wrong algorithm", "missing"};

/* clientSignature = Sign(serverCertificate + serverNonce), or one of the
 * ways to get it wrong; sig holds its bytes. */
static void client_signature(sec *s, env_schan *c, const uas_bytestring *server_nonce, sig_kind k,
                             uas_signature_data *sd, uint8_t *sig, size_t cap)
{
    memset(sd, 0, sizeof(*sd));
    if (k == SIG_MISSING)
        return;
    size_t n = s->server_cert.length + server_nonce->length;
    uint8_t *data = uas_arena_alloc(&s->arena, n);
    cr_assert(data);
    memcpy(data, s->server_cert.data, s->server_cert.length);
    memcpy(data + s->server_cert.length, server_nonce->data, server_nonce->length);
    if (k == SIG_WRONG_DATA) {
        data += s->server_cert.length;
        n = server_nonce->length;
    }
    size_t len = 0;
    cr_assert_eq(uas_channel_sign(c->ch, data, n, sig, cap, &len), UAS_GOOD);
    if (k == SIG_FLIPPED)
        sig[len / 2] ^= 0x01;
    sd->algorithm = uas_string_from(
        k == SIG_WRONG_ALGORITHM ? RSA_SHA1
                                 : uas_security_policy_signature_uri(uas_channel_policy(c->ch)));
    sd->signature.data = sig;
    sd->signature.length = len;
}

static uas_extensionobject anonymous_token(uas_anonymous_identity_token *t)
{
    t->policy_id = uas_string_from("anonymous");
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
    eo.content.decoded.data = t;
    return eo;
}

/* ActivateSession of cs's session against server_nonce (the latest one),
 * anonymous when token is NULL. */
static uas_status activate(sec *s, env_schan *c, const uas_create_session_response *cs,
                           const uas_bytestring *server_nonce, sig_kind k,
                           const uas_extensionobject *token, uas_activate_session_response *r)
{
    uas_activate_session_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = cs->authentication_token;
    uint8_t sig[1024];
    client_signature(s, c, server_nonce, k, &req.client_signature, sig, sizeof(sig));
    uas_anonymous_identity_token anon;
    req.user_identity_token = token ? *token : anonymous_token(&anon);
    return env_schan_call(c, &req, UAS_TYPE(ACTIVATE_SESSION_REQUEST), r,
                          UAS_TYPE(ACTIVATE_SESSION_RESPONSE), &s->arena);
}

/* Read of Server_ServerStatus_State with the session token. */
static uas_status read_state(sec *s, env_schan *c, const uas_nodeid *token)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
    rv.attribute_id = ATTR_VALUE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.authentication_token = *token;
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    uas_read_response r;
    uas_status st =
        env_schan_call(c, &req, UAS_TYPE(READ_REQUEST), &r, UAS_TYPE(READ_RESPONSE), &s->arena);
    if (st == UAS_GOOD) {
        cr_assert_eq(r.results_count, 1);
        cr_assert(r.results[0].has_value && r.results[0].value.data);
        cr_assert_eq(*(int32_t *)r.results[0].value.data, UAS_SERVER_STATE_RUNNING);
    }
    return st;
}

/* A whole anonymous session on c, with a Read: the channel still works. */
static void session_works(sec *s, env_schan *c)
{
    uas_create_session_response cs;
    uas_status st = create_session(s, c, &s->cert, ENV_CLIENT_URI, 32, &cs);
    cr_assert_eq(st, UAS_GOOD, "CreateSession: %s", uas_status_name(st));
    uas_activate_session_response as;
    st = activate(s, c, &cs, &cs.server_nonce, SIG_GOOD, NULL, &as);
    cr_assert_eq(st, UAS_GOOD, "ActivateSession: %s", uas_status_name(st));
    cr_assert_eq(read_state(s, c, &cs.authentication_token), UAS_GOOD);
}

/* ---- CreateSession (Part 4, 5.6.2) ---- */

Test(session_security, create_session_refuses_short_nonce_foreign_certificate_and_wrong_uri,
     .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    /* Another valid certificate for the same ApplicationUri. */
    uas_bytestring other = {0, NULL}, other_key = {0, NULL};
    env_make_cert(s.client_pki, "other", ENV_CLIENT_URI, &other, &other_key);
    const int32_t modes[] = {SIGN, ENCRYPT};
    for (size_t m = 0; m < 2; m++) {
        env_schan c;
        open_channel(&s, &c, modes[m]);
        uas_create_session_response r;
        /* Part 4 Table 16: the nonce is 32..128 bytes. */
        cr_expect_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 16, &r),
                     UAS_BAD_NONCE_INVALID);
        cr_expect_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 0, &r), UAS_BAD_NONCE_INVALID);
        cr_expect_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 129, &r),
                     UAS_BAD_NONCE_INVALID);
        /* The channel's certificate is what counts (5.6.2.2: the same
         * certificate as the SecureChannel's). */
        cr_expect_eq(create_session(&s, &c, &other, ENV_CLIENT_URI, 32, &r),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        uas_bytestring none = {0, NULL};
        cr_expect_eq(create_session(&s, &c, &none, ENV_CLIENT_URI, 32, &r),
                     UAS_BAD_SECURITY_CHECKS_FAILED);
        /* An applicationUri its certificate does not carry. */
        cr_expect_eq(create_session(&s, &c, &s.cert, "urn:somebody:else", 32, &r),
                     UAS_BAD_CERTIFICATE_URI_INVALID);
        /* Service errors: the channel stays usable. */
        session_works(&s, &c);
        env_schan_close(&c);
    }
    /* The same refusals from a channel secured with the other certificate. */
    env_schan c;
    env_schan_open(&s.e, &c, B256, ENCRYPT, &other, &other_key, &s.server_cert);
    uas_create_session_response r;
    cr_expect_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &r),
                 UAS_BAD_SECURITY_CHECKS_FAILED);
    env_schan_close(&c);
    cr_expect(env_log_has("CreateSession refused: client nonce of 16 bytes"));
    cr_expect(env_log_has("CreateSession refused: client nonce of 129 bytes"));
    cr_expect(env_log_has("CreateSession refused: the client certificate is not the channel's"));
    cr_expect(env_log_has("BadCertificateUriInvalid"));
    uas_pki_bytes_free(&other);
    uas_pki_bytes_free(&other_key);
    env_sec_stop(&s);
}

/* ---- ActivateSession (Part 4, 5.6.3) ---- */

Test(session_security, activate_session_refuses_wrong_client_signatures, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    const int32_t modes[] = {SIGN, ENCRYPT};
    for (size_t m = 0; m < 2; m++) {
        env_schan c;
        open_channel(&s, &c, modes[m]);
        uas_create_session_response cs;
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        uas_activate_session_response as;
        for (sig_kind k = SIG_WRONG_DATA; k < SIG_KINDS; k++) {
            uas_status st = activate(&s, &c, &cs, &cs.server_nonce, k, NULL, &as);
            cr_expect_eq(st, UAS_BAD_APPLICATION_SIGNATURE_INVALID, "%s: %s", sig_names[k],
                         uas_status_name(st));
            /* ... and the session is not activated by it. */
            cr_expect_eq(read_state(&s, &c, &cs.authentication_token),
                         UAS_BAD_SESSION_NOT_ACTIVATED, "after %s", sig_names[k]);
        }
        /* Every refusal renewed the session's nonce (a ServiceFault carries
         * none): the right signature over the nonce the client knows is
         * refused too, and the client starts a new session. */
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, NULL, &as),
                     UAS_BAD_APPLICATION_SIGNATURE_INVALID);
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        cr_assert_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, NULL, &as), UAS_GOOD);
        cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_GOOD);
        /* The new serverNonce is accepted; a used one is not accepted
         * again (and the refusal does not end the activated session). */
        uas_activate_session_response again;
        cr_assert_eq(as.server_nonce.length, 32);
        cr_expect_eq(activate(&s, &c, &cs, &as.server_nonce, SIG_GOOD, NULL, &again), UAS_GOOD);
        cr_expect_eq(activate(&s, &c, &cs, &as.server_nonce, SIG_GOOD, NULL, &again),
                     UAS_BAD_APPLICATION_SIGNATURE_INVALID);
        cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_GOOD);
        env_schan_close(&c);
    }
    cr_expect(env_log_has("ActivateSession refused: BadApplicationSignatureInvalid"));
    env_sec_stop(&s);
}

/* A UserNameIdentityToken with password encrypted for the server
 * (Basic256Sha256, RSA-OAEP) together with nonce. */
static uas_extensionobject user_token(sec *s, uas_user_name_identity_token *t, const char *name,
                                      const char *password, const uas_bytestring *nonce,
                                      uint8_t *cipher, size_t cap)
{
    size_t n = 0;
    uas_status st = uas_secpol_user_encrypt(
        s->server_cert.data, s->server_cert.length, uas_security_policy(B256, false),
        (const uint8_t *)password, strlen(password), nonce->data, nonce->length, cipher, cap, &n);
    cr_assert_eq(st, UAS_GOOD, "encrypt: %s", uas_status_name(st));
    memset(t, 0, sizeof(*t));
    t->policy_id = uas_string_from("username_Basic256Sha256");
    t->user_name = uas_string_from(name);
    t->password.data = cipher;
    t->password.length = n;
    t->encryption_algorithm = uas_string_from(RSA_OAEP);
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    eo.content.decoded.data = t;
    return eo;
}

/* Neither password reached the log or the answer just received. */
static void no_secret_in(env_schan *c)
{
    static const char *const secrets[] = {ENV_PASSWORD, WRONG_PASSWORD};
    for (size_t i = 0; i < 2; i++) {
        cr_expect_not(env_log_has(secrets[i]), "a password is in the log");
        cr_expect_null(memmem(c->answer, c->answer_len, secrets[i], strlen(secrets[i])),
                       "a password is in the answer");
    }
}

Test(session_security, user_name_tokens_wrong_password_wrong_nonce_unknown_user, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    const int32_t modes[] = {SIGN, ENCRYPT};
    for (size_t m = 0; m < 2; m++) {
        env_schan c;
        open_channel(&s, &c, modes[m]);
        uas_create_session_response cs;
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        uas_activate_session_response as;
        uas_user_name_identity_token t;
        uint8_t cipher[1024];
        /* An unknown user and a wrong password look the same (no user
         * enumeration): BadUserAccessDenied. */
        uas_extensionobject tok =
            user_token(&s, &t, "alice", WRONG_PASSWORD, &cs.server_nonce, cipher, sizeof(cipher));
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as),
                     UAS_BAD_USER_ACCESS_DENIED);
        no_secret_in(&c);
        /* A refusal renews the nonce: each attempt gets a new session. */
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        tok = user_token(&s, &t, "mallory", ENV_PASSWORD, &cs.server_nonce, cipher, sizeof(cipher));
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as),
                     UAS_BAD_USER_ACCESS_DENIED);
        no_secret_in(&c);
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        /* The right password bound to another nonce: a replayed or forged
         * secret, BadIdentityTokenInvalid. */
        uint8_t stale[32];
        memset(stale, 0x5a, sizeof(stale));
        uas_bytestring stale_nonce = {sizeof(stale), stale};
        tok = user_token(&s, &t, "alice", ENV_PASSWORD, &stale_nonce, cipher, sizeof(cipher));
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as),
                     UAS_BAD_IDENTITY_TOKEN_INVALID);
        no_secret_in(&c);
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        /* A password in the clear is never taken. */
        t.password.data = (uint8_t *)ENV_PASSWORD;
        t.password.length = strlen(ENV_PASSWORD);
        t.encryption_algorithm = uas_string_from("");
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as),
                     UAS_BAD_IDENTITY_TOKEN_INVALID);
        no_secret_in(&c);
        cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_BAD_SESSION_NOT_ACTIVATED);
        cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
        /* Then the right one: the failures above (3 per mode) stay below
         * the throttling limit. */
        tok = user_token(&s, &t, "alice", ENV_PASSWORD, &cs.server_nonce, cipher, sizeof(cipher));
        cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as), UAS_GOOD);
        no_secret_in(&c);
        cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_GOOD);
        env_schan_close(&c);
    }
    cr_expect(env_log_has("user name login refused"));
    cr_expect(env_log_has("ActivateSession refused: BadUserAccessDenied"));
    cr_expect(env_log_has("ActivateSession refused: BadIdentityTokenInvalid"));
    /* Failed logins name the client, not the user (people type passwords
     * into the user name field). */
    cr_expect_not(env_log_has("mallory"));
    env_sec_stop(&s);
}

/* ---- chunks (Part 6, 6.7) ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Sends what it can: the server may close the socket before reading all
 * of a chunk it has already refused by its header. */
static void send_some(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* A connection past HEL/ACK. */
static int hello(sec *s)
{
    int fd = raw_connect(&s->e);
    uint8_t buf[256];
    raw_send(fd, buf, raw_build_hel(&s->e, buf, sizeof(buf)));
    uint8_t ack[64];
    cr_assert_gt(raw_read_chunk(fd, ack, sizeof(ack)), 0);
    cr_assert_eq(memcmp(ack, "ACKF", 4), 0);
    return fd;
}

/* An OPN chunk for Basic256Sha256 whose header claims size bytes, with a
 * SenderCertificate field of cert_claim bytes of which cert_len follow
 * (junk); when they all follow, a receiver thumbprint; the rest of the
 * chunk (total bytes) is junk. */
static size_t build_opn(uint8_t *out, uint32_t size, uint32_t cert_claim, size_t cert_len,
                        size_t total)
{
    static const char uri[] = B256;
    size_t n = 0;
    memcpy(out, "OPNF", 4);
    put_u32(out + 4, size);
    put_u32(out + 8, 0); /* SecureChannelId */
    n = 12;
    put_u32(out + n, sizeof(uri) - 1);
    memcpy(out + n + 4, uri, sizeof(uri) - 1);
    n += 4 + sizeof(uri) - 1;
    put_u32(out + n, cert_claim);
    n += 4;
    cr_assert_leq(n + cert_len, total);
    memset(out + n, 0x30, cert_len);
    n += cert_len;
    if (cert_len == cert_claim) {
        put_u32(out + n, 20);
        memset(out + n + 4, 0x11, 20);
        n += 24;
    }
    memset(out + n, 0xa5, total - n);
    return total;
}

/* The ERR chunk the server must answer with, then the close. */
static void expect_err_close(int fd, uas_status code)
{
    raw_expect_err(fd, code);
    raw_expect_close(fd, ENV_WAIT_MS);
    close(fd);
}

Test(session_security, oversized_and_malformed_opn_get_err_and_close, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    uas_client *other = env_client(&s.e, true, 0);
    cr_expect_eq(env_read_i32(other, 1001), 0);
    size_t cap = 200 * 1024;
    uint8_t *buf = malloc(cap);
    cr_assert(buf);

    /* A declared size over the receive buffer (64 KiB): refused on the
     * header alone, nothing more is read. */
    int fd = hello(&s);
    build_opn(buf, 1u << 20, 1000, 1000, 4096);
    send_some(fd, buf, 4096);
    expect_err_close(fd, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* A whole chunk carrying a 100 KB "certificate": too large as well. */
    fd = hello(&s);
    size_t big = 100 * 1024 + 512;
    build_opn(buf, (uint32_t)big, 100 * 1024, 100 * 1024, big);
    send_some(fd, buf, big);
    expect_err_close(fd, UAS_BAD_TCP_MESSAGE_TOO_LARGE);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* Within the buffer, but the certificate field claims 100 KB: the
     * security header is malformed. */
    fd = hello(&s);
    build_opn(buf, 60000, 100 * 1024, 1000, 60000);
    send_some(fd, buf, 60000);
    expect_err_close(fd, UAS_BAD_TCP_MESSAGE_TYPE_INVALID);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* A 50 KB certificate field that is no certificate: the PKI refuses it
     * before any private-key work. */
    fd = hello(&s);
    build_opn(buf, 60000, 50000, 50000, 60000);
    send_some(fd, buf, 60000);
    expect_err_close(fd, UAS_BAD_CERTIFICATE_INVALID);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    cr_expect(env_log_has("closed: BadTcpMessageTooLarge"));
    cr_expect(env_log_has("closed: BadTcpMessageTypeInvalid"));
    cr_expect(env_log_has("refused: BadCertificateInvalid"));
    free(buf);
    env_client_close(other);
    env_sec_stop(&s);
}

/* A real OPN of Basic256Sha256 SignAndEncrypt, held back unsent; returns
 * the offset of its ReceiverCertificateThumbprint. */
static size_t hold_opn(sec *s, env_schan *c)
{
    env_schan_connect(&s->e, c, B256, ENCRYPT, &s->cert, &s->key, &s->server_cert);
    c->hold = true;
    while (c->nheld == 0 && env_schan_pump(c, ENV_WAIT_MS))
        ;
    c->hold = false;
    cr_assert_eq(c->nheld, 1, "no OPN");
    const uint8_t *p = c->held[0].data;
    cr_assert_eq(memcmp(p, "OPNF", 4), 0);
    size_t at = 12;
    at += 4 + raw_u32(p + at); /* SecurityPolicyUri */
    at += 4 + raw_u32(p + at); /* SenderCertificate */
    cr_assert_eq(raw_u32(p + at), 20);
    return at + 4;
}

Test(session_security, tampered_opn_is_refused, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    uas_client *other = env_client(&s.e, true, 0);
    /* A flipped bit of the encrypted part: the one answer of Part 6
     * 6.7.7 for failed decryption or signature. */
    env_schan c;
    hold_opn(&s, &c);
    c.held[0].data[c.held[0].len - 1] ^= 0x01;
    raw_send(c.fd, c.held[0].data, c.held[0].len);
    expect_err_close(dup(c.fd), UAS_BAD_SECURITY_CHECKS_FAILED);
    env_schan_close(&c);
    cr_expect_eq(env_read_i32(other, 1001), 0);
    /* The same OPN untouched opens. */
    hold_opn(&s, &c);
    raw_send(c.fd, c.held[0].data, c.held[0].len);
    while (uas_channel_get_state(c.ch) != UAS_CHANNEL_OPEN && env_schan_pump(&c, ENV_WAIT_MS))
        ;
    cr_assert_eq(uas_channel_get_state(c.ch), UAS_CHANNEL_OPEN);
    session_works(&s, &c);
    env_schan_close(&c);
    cr_expect(env_log_has("closed: BadSecurityChecksFailed"));
    env_client_close(other);
    env_sec_stop(&s);
}

/* Part 6 6.7.7: "The receiver shall verify the ReceiverCertificateThumbprint
 * and report a Bad_CertificateInvalid error if it does not recognize it." */
Test(session_security, opn_for_another_receiver_is_certificate_invalid, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    env_schan c;
    size_t thumb = hold_opn(&s, &c);
    c.held[0].data[thumb] ^= 0x01;
    raw_send(c.fd, c.held[0].data, c.held[0].len);
    expect_err_close(dup(c.fd), UAS_BAD_CERTIFICATE_INVALID);
    env_schan_close(&c);
    env_sec_stop(&s);
}

/* A session-less request (FindServers) secured into one chunk and held. */
static uint32_t hold_request(env_schan *c)
{
    uas_find_servers_request req;
    memset(&req, 0, sizeof(req));
    c->hold = true;
    size_t before = c->nheld;
    uint32_t id = env_schan_send(c, &req, UAS_TYPE(FIND_SERVERS_REQUEST));
    c->hold = false;
    cr_assert_eq(c->nheld, before + 1, "the request took more than one chunk");
    return id;
}

static void expect_err_chunk(int fd, uas_status code, uint8_t *out, size_t cap, long *len)
{
    *len = raw_read_chunk(fd, out, cap);
    cr_assert_gt(*len, 16, "expected ERR, got %ld bytes", *len);
    cr_assert_eq(memcmp(out, "ERRF", 4), 0, "expected ERR, got %.4s", (const char *)out);
    uas_status got = raw_u32(out + 8);
    cr_expect_eq(got, code, "ERR %s, expected %s", uas_status_name(got), uas_status_name(code));
    raw_expect_close(fd, ENV_WAIT_MS);
}

Test(session_security, replayed_and_reordered_chunks_close_the_channel, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    uas_client *other = env_client(&s.e, true, 0);
    cr_expect_eq(env_read_i32(other, 1001), 0);
    uint8_t err[512];
    long err_len;

    /* Replay: a chunk the server took once, sent again. */
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uint32_t id = hold_request(&c);
    raw_send(c.fd, c.held[0].data, c.held[0].len);
    cr_expect_eq(env_schan_wait(&c, id, NULL, UAS_TYPE(FIND_SERVERS_RESPONSE), &s.arena), UAS_GOOD);
    cr_expect_eq(env_read_i32(other, 1001), 0);
    raw_send(c.fd, c.held[0].data, c.held[0].len);
    expect_err_chunk(c.fd, UAS_BAD_SECURITY_CHECKS_FAILED, err, sizeof(err), &err_len);
    env_schan_close(&c);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* Out of order: the second chunk before the first. */
    open_channel(&s, &c, ENCRYPT);
    hold_request(&c);
    hold_request(&c);
    raw_send(c.fd, c.held[1].data, c.held[1].len);
    expect_err_chunk(c.fd, UAS_BAD_SECURITY_CHECKS_FAILED, err, sizeof(err), &err_len);
    env_schan_close(&c);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* Another channel's chunk: not this channel's id. */
    env_schan a, b;
    open_channel(&s, &a, ENCRYPT);
    open_channel(&s, &b, ENCRYPT);
    uint32_t aid = hold_request(&a);
    raw_send(b.fd, a.held[0].data, a.held[0].len);
    expect_err_chunk(b.fd, UAS_BAD_TCP_SECURE_CHANNEL_UNKNOWN, err, sizeof(err), &err_len);
    /* a itself is unharmed. */
    raw_send(a.fd, a.held[0].data, a.held[0].len);
    cr_expect_eq(env_schan_wait(&a, aid, NULL, UAS_TYPE(FIND_SERVERS_RESPONSE), &s.arena),
                 UAS_GOOD);
    session_works(&s, &a);
    env_schan_close(&a);
    env_schan_close(&b);
    cr_expect_eq(env_read_i32(other, 1001), 0);

    /* Part 6 6.7.7: reported as a failed security check, logged as what
     * it is. */
    cr_expect(env_log_has("BadSequenceNumberInvalid"));
    env_client_close(other);
    env_sec_stop(&s);
}

Test(session_security, tampered_chunks_get_one_answer, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    uas_client *other = env_client(&s.e, true, 0);
    uint8_t first[512];
    long first_len = 0;
    const int32_t modes[] = {SIGN, ENCRYPT};
    for (size_t m = 0; m < 2; m++) {
        /* A byte of the body; the byte that decrypts into the padding
         * size (SignAndEncrypt: the block before it, CBC) or a body byte
         * (Sign); the last byte of the signature. */
        for (int where = 0; where < 3; where++) {
            env_schan c;
            open_channel(&s, &c, modes[m]);
            hold_request(&c);
            env_held *h = &c.held[0];
            size_t at = where == 0 ? 16 + 8 + 4 : where == 1 ? h->len - 32 - 16 - 1 : h->len - 1;
            h->data[at] ^= 0x01;
            raw_send(c.fd, h->data, h->len);
            uint8_t err[512];
            long err_len;
            expect_err_chunk(c.fd, UAS_BAD_SECURITY_CHECKS_FAILED, err, sizeof(err), &err_len);
            /* The same bytes every time: nothing tells what failed. */
            if (!first_len) {
                memcpy(first, err, (size_t)err_len);
                first_len = err_len;
            }
            cr_expect_eq(err_len, first_len, "mode %d, byte %zu", modes[m], at);
            cr_expect_eq(memcmp(err, first, (size_t)first_len), 0, "mode %d, byte %zu", modes[m],
                         at);
            env_schan_close(&c);
            cr_expect_eq(env_read_i32(other, 1001), 0);
        }
    }
    cr_expect(env_log_has("closed: BadSecurityChecksFailed"));
    env_client_close(other);
    env_sec_stop(&s);
}

/* ---- anonymous access per endpoint ---- */

/* From GetEndpoints: whether the endpoint of policy and mode has an
 * anonymous UserTokenPolicy (asserts it exists). */
static bool endpoint_has_anonymous(const uas_get_endpoints_response *r, const char *policy,
                                   int32_t mode)
{
    for (size_t i = 0; i < r->endpoints_count; i++) {
        const uas_endpoint_description *d = &r->endpoints[i];
        if (!uas_string_eq_cstr(&d->security_policy_uri, policy) || d->security_mode != mode)
            continue;
        bool anonymous = false, user_name = false;
        for (size_t k = 0; k < d->user_identity_tokens_count; k++) {
            anonymous =
                anonymous || d->user_identity_tokens[k].token_type == UAS_USER_TOKEN_TYPE_ANONYMOUS;
            user_name =
                user_name || d->user_identity_tokens[k].token_type == UAS_USER_TOKEN_TYPE_USER_NAME;
        }
        cr_expect(user_name, "%s/%d lost its user name policy", policy, mode);
        return anonymous;
    }
    cr_assert_fail("no endpoint %s/%d", policy, mode);
    return false;
}

static void get_endpoints(sec *s, uas_get_endpoints_response *r)
{
    uas_client *c = env_client(&s->e, false, 0);
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(s->e.url);
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), r,
                                         UAS_TYPE(GET_ENDPOINTS_RESPONSE), &s->arena, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "GetEndpoints: %s", uas_status_name(st));
    cr_assert_eq(r->endpoints_count, 3);
    env_client_close(c);
}

/* An anonymous session through the None endpoint with libuaclient. */
static uas_status none_anonymous_session(sec *s)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = s->e.url;
    cfg.create_session = true;
    uas_client *c = uas_client_new(s->e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    if (st == UAS_GOOD)
        cr_expect_eq(env_read_i32(c, 1001), 0);
    uas_client_delete(c);
    return st;
}

static uas_status anonymous_session(sec *s, int32_t mode)
{
    env_schan c;
    open_channel(s, &c, mode);
    uas_create_session_response cs;
    cr_assert_eq(create_session(s, &c, &s->cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
    uas_activate_session_response as;
    uas_status st = activate(s, &c, &cs, &cs.server_nonce, SIG_GOOD, NULL, &as);
    if (st == UAS_GOOD)
        cr_expect_eq(read_state(s, &c, &cs.authentication_token), UAS_GOOD);
    else
        cr_expect_eq(read_state(s, &c, &cs.authentication_token), UAS_BAD_SESSION_NOT_ACTIVATED);
    env_schan_close(&c);
    return st;
}

Test(session_security, anonymous_only_on_the_sign_and_encrypt_endpoint, .timeout = 60)
{
    sec s;
    sec_start(&s, "Basic256Sha256:SignAndEncrypt");
    uas_get_endpoints_response r;
    get_endpoints(&s, &r);
    cr_expect_not(endpoint_has_anonymous(&r, POLICY "None", NONE));
    cr_expect_not(endpoint_has_anonymous(&r, B256, SIGN));
    cr_expect(endpoint_has_anonymous(&r, B256, ENCRYPT));
    /* Enforced as advertised. */
    cr_expect_eq(none_anonymous_session(&s), UAS_BAD_IDENTITY_TOKEN_REJECTED);
    cr_expect_eq(anonymous_session(&s, SIGN), UAS_BAD_IDENTITY_TOKEN_REJECTED);
    cr_expect_eq(anonymous_session(&s, ENCRYPT), UAS_GOOD);
    cr_expect(env_log_has("ActivateSession refused: BadIdentityTokenRejected"));

    /* A session activated on SignAndEncrypt cannot take its anonymous
     * identity to the Sign endpoint. */
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uas_create_session_response cs;
    cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
    uas_activate_session_response as;
    cr_assert_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, NULL, &as), UAS_GOOD);
    env_schan d;
    open_channel(&s, &d, SIGN);
    uas_activate_session_response moved;
    cr_expect_eq(activate(&s, &d, &cs, &as.server_nonce, SIG_GOOD, NULL, &moved),
                 UAS_BAD_IDENTITY_TOKEN_REJECTED);
    cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_GOOD);
    env_schan_close(&d);
    env_schan_close(&c);

    /* env_stop proves liveness with an anonymous None session, which this
     * server refuses: prove it here on the endpoint that accepts one. */
    cr_expect_eq(anonymous_session(&s, ENCRYPT), UAS_GOOD);
    uas_server_stop(s.e.server);
    uas_server_delete(s.e.server);
    s.e.server = NULL;
    env_sec_stop(&s);
}

Test(session_security, anonymous_everywhere_but_sign_and_encrypt, .timeout = 60)
{
    sec s;
    sec_start(&s, "None, Basic256Sha256:Sign");
    uas_get_endpoints_response r;
    get_endpoints(&s, &r);
    cr_expect(endpoint_has_anonymous(&r, POLICY "None", NONE));
    cr_expect(endpoint_has_anonymous(&r, B256, SIGN));
    cr_expect_not(endpoint_has_anonymous(&r, B256, ENCRYPT));
    cr_expect_eq(none_anonymous_session(&s), UAS_GOOD);
    cr_expect_eq(anonymous_session(&s, SIGN), UAS_GOOD);
    cr_expect_eq(anonymous_session(&s, ENCRYPT), UAS_BAD_IDENTITY_TOKEN_REJECTED);
    /* User names are still accepted there. */
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uas_create_session_response cs;
    cr_assert_eq(create_session(&s, &c, &s.cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
    uas_user_name_identity_token t;
    uint8_t cipher[1024];
    uas_extensionobject tok =
        user_token(&s, &t, "alice", ENV_PASSWORD, &cs.server_nonce, cipher, sizeof(cipher));
    uas_activate_session_response as;
    cr_expect_eq(activate(&s, &c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as), UAS_GOOD);
    cr_expect_eq(read_state(&s, &c, &cs.authentication_token), UAS_GOOD);
    env_schan_close(&c);
    env_sec_stop(&s);
}

/* ---- user tokens as other stacks send them (issue #19) and the attacks
 * of issue #18 on sessions and logins ---- */

/* RSA-OAEP (SHA1 or SHA256) of plain for the server's certificate, block
 * by block, with OpenSSL itself rather than our client code: the bytes a
 * foreign client sends. Returns the cipher length. */
static size_t oaep_encrypt(const uas_bytestring *cert, bool sha256, const uint8_t *plain,
                           size_t len, uint8_t *out, size_t cap, size_t *block)
{
    const uint8_t *p = cert->data;
    X509 *x = d2i_X509(NULL, &p, (long)cert->length);
    cr_assert(x);
    EVP_PKEY *pub = X509_get_pubkey(x);
    cr_assert(pub);
    size_t k = (size_t)EVP_PKEY_get_size(pub);
    *block = k - (sha256 ? 66 : 42);
    size_t n = 0;
    for (size_t off = 0; off < len; off += *block) {
        size_t m = len - off < *block ? len - off : *block;
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pub, NULL);
        cr_assert(ctx && EVP_PKEY_encrypt_init(ctx) == 1);
        cr_assert_eq(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING), 1);
        const EVP_MD *md = sha256 ? EVP_sha256() : EVP_sha1();
        cr_assert_eq(EVP_PKEY_CTX_set_rsa_oaep_md(ctx, md), 1);
        cr_assert_eq(EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md), 1);
        size_t outl = cap - n;
        cr_assert_eq(EVP_PKEY_encrypt(ctx, out + n, &outl, plain + off, m), 1);
        n += outl;
        EVP_PKEY_CTX_free(ctx);
    }
    EVP_PKEY_free(pub);
    X509_free(x);
    return n;
}

/* How a legacy secret is built, and the one field a variant gets wrong. */
typedef struct legacy {
    const char *policy_id;
    const char *algorithm;
    const char *password;
    int32_t length_delta; /* added to the length field */
    bool wrong_nonce;     /* one bit of the nonce flipped */
    bool nonzero_pad;     /* the last padding byte 1 */
    bool sha256;          /* OAEP-SHA256 blocks */
    size_t blocks;        /* padded to this many plaintext blocks (0: 1) */
} legacy;

/* open62541's layout (ua_encryptedsecret.c, encryptSecretLegacy): UInt32
 * little-endian length of secret + nonce, the secret, the server nonce,
 * then zeros up to whole OAEP plaintext blocks. */
static uas_extensionobject legacy_token(sec *s, const legacy *l, const uas_bytestring *nonce,
                                        uas_user_name_identity_token *t, uint8_t *cipher,
                                        size_t cap)
{
    uint8_t plain[8192];
    memset(plain, 0, sizeof(plain));
    size_t pw = strlen(l->password);
    uint32_t n = (uint32_t)(pw + nonce->length) + (uint32_t)l->length_delta;
    for (int i = 0; i < 4; i++)
        plain[i] = (uint8_t)(n >> (8 * i));
    memcpy(plain + 4, l->password, pw);
    memcpy(plain + 4 + pw, nonce->data, nonce->length);
    if (l->wrong_nonce)
        plain[4 + pw + nonce->length - 1] ^= 1;
    /* One block first, to learn the plaintext block size. */
    size_t block;
    uint8_t scratch[1024];
    oaep_encrypt(&s->server_cert, l->sha256, plain, 1, scratch, sizeof(scratch), &block);
    size_t len = (l->blocks ? l->blocks : 1) * block;
    cr_assert_geq(len, 4 + pw + nonce->length);
    cr_assert_leq(len, sizeof(plain));
    if (l->nonzero_pad)
        plain[len - 1] = 1;
    memset(t, 0, sizeof(*t));
    t->policy_id = uas_string_from(l->policy_id);
    t->user_name = uas_string_from("alice");
    t->password.data = cipher;
    t->password.length = oaep_encrypt(&s->server_cert, l->sha256, plain, len, cipher, cap, &block);
    t->encryption_algorithm = uas_string_from(l->algorithm);
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    eo.content.decoded.data = t;
    return eo;
}

static uas_status legacy_login(sec *s, env_schan *c, const legacy *l, uas_nodeid *token)
{
    uas_create_session_response cs;
    cr_assert_eq(create_session(s, c, &s->cert, ENV_CLIENT_URI, 32, &cs), UAS_GOOD);
    uas_user_name_identity_token t;
    uint8_t cipher[8192];
    uas_extensionobject tok = legacy_token(s, l, &cs.server_nonce, &t, cipher, sizeof(cipher));
    uas_activate_session_response as;
    if (token)
        *token = cs.authentication_token;
    return activate(s, c, &cs, &cs.server_nonce, SIG_GOOD, &tok, &as);
}

static const legacy open62541 = {
    "username_Basic256Sha256", RSA_OAEP, ENV_PASSWORD, 0, false, false, false, 1};

Test(session_security, open62541_legacy_secret_is_accepted_and_each_wrong_field_refused,
     .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uas_nodeid token;
    cr_assert_eq(legacy_login(&s, &c, &open62541, &token), UAS_GOOD,
                 "open62541's zero-padded secret is refused");
    cr_expect_eq(read_state(&s, &c, &token), UAS_GOOD);
    struct variant {
        legacy l;
        uas_status st;
        const char *log;
    } v[] = {
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "unknown policy id 'username_B\\x01'"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "wrong algorithm URI '" RSA_OAEP256 "'"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "bad length: 512 encrypted bytes"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "user name token: bad length field"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "user name token: bad nonce"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "user name token: padding is not zero"},
        {open62541, UAS_BAD_IDENTITY_TOKEN_INVALID, "user name token: decryption failure"},
        {open62541, UAS_BAD_USER_ACCESS_DENIED, "user name login refused"},
    };
    v[0].l.policy_id = "username_B\x01";
    v[1].l.algorithm = RSA_OAEP256;
    v[2].l.blocks = 2;
    v[3].l.length_delta = 4096; /* longer than the plaintext */
    v[4].l.wrong_nonce = true;
    v[5].l.nonzero_pad = true;
    v[6].l.sha256 = true;
    v[7].l.password = WRONG_PASSWORD;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uas_status st = legacy_login(&s, &c, &v[i].l, &token);
        cr_expect_eq(st, v[i].st, "variant %zu: %s", i, uas_status_name(st));
        cr_expect(env_log_has(v[i].log), "no log line '%s'", v[i].log);
        cr_expect_eq(read_state(&s, &c, &token), UAS_BAD_SESSION_NOT_ACTIVATED);
        no_secret_in(&c);
    }
    env_schan_close(&c);
    /* The five counted failures blocked this client; another one (its own
     * certificate) is served. */
    uas_bytestring other = {0, NULL}, other_key = {0, NULL};
    env_make_cert(s.client_pki, "other", ENV_CLIENT_URI, &other, &other_key);
    env_schan_open(&s.e, &c, B256, ENCRYPT, &other, &other_key, &s.server_cert);
    uas_bytestring keep = s.cert;
    s.cert = other;
    cr_expect_eq(legacy_login(&s, &c, &open62541, &token), UAS_GOOD);
    cr_expect_eq(read_state(&s, &c, &token), UAS_GOOD);
    s.cert = keep;
    env_schan_close(&c);
    uas_pki_bytes_free(&other);
    uas_pki_bytes_free(&other_key);
    env_sec_stop(&s);
}

/* Issue #18, 4: a token that does not decrypt counts as a failed login,
 * the throttle comes before any RSA work, and a token is one RSA block. */
Test(session_security, undecryptable_tokens_are_throttled_before_rsa, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uas_nodeid token;
    /* 8 KiB of blocks: refused by its length, before any decryption. */
    legacy big = open62541;
    big.blocks = 32;
    cr_expect_eq(legacy_login(&s, &c, &big, &token), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect(env_log_has("bad length: 8192 encrypted bytes"));
    legacy bad = open62541;
    bad.sha256 = true; /* does not decrypt under OAEP-SHA1 */
    for (int i = 0; i < 5; i++)
        cr_expect_eq(legacy_login(&s, &c, &bad, &token), UAS_BAD_IDENTITY_TOKEN_INVALID);
    /* Five failures: the right password is refused without decryption. */
    cr_expect_eq(legacy_login(&s, &c, &open62541, &token), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect(env_log_has("client throttled"));
    cr_expect(env_log_has("failed logins from"));
    /* Another client is served meanwhile. */
    cr_expect_eq(none_anonymous_session(&s), UAS_GOOD);
    env_schan_close(&c);
    env_sec_stop(&s);
}

/* Issue #18, 10: the server-wide budget refuses every login once spent. */
Test(session_security, server_wide_failure_budget_stops_logins_for_everyone, .timeout = 60)
{
    global_budget = 3;
    sec s;
    sec_start(&s, NULL);
    env_schan c;
    open_channel(&s, &c, ENCRYPT);
    uas_nodeid token;
    legacy wrong = open62541;
    wrong.password = WRONG_PASSWORD;
    for (int i = 0; i < 3; i++)
        cr_expect_eq(legacy_login(&s, &c, &wrong, &token), UAS_BAD_USER_ACCESS_DENIED);
    env_schan_close(&c);
    cr_expect(env_log_has("3 failed logins server-wide"));
    /* Another client with its own certificate and the right password. */
    uas_bytestring other = {0, NULL}, other_key = {0, NULL};
    env_make_cert(s.client_pki, "other", ENV_CLIENT_URI, &other, &other_key);
    env_schan_open(&s.e, &c, B256, ENCRYPT, &other, &other_key, &s.server_cert);
    uas_bytestring keep = s.cert;
    s.cert = other;
    cr_expect_eq(legacy_login(&s, &c, &open62541, &token), UAS_BAD_TOO_MANY_OPERATIONS);
    cr_expect(env_log_has("server-wide login failure budget spent"));
    s.cert = keep;
    env_schan_close(&c);
    /* Anonymous clients are still served. */
    cr_expect_eq(none_anonymous_session(&s), UAS_GOOD);
    uas_pki_bytes_free(&other);
    uas_pki_bytes_free(&other_key);
    global_budget = 0;
    env_sec_stop(&s);
}

/* Issue #18, 13: a token policy of another endpoint is refused. */
Test(session_security, token_policy_must_be_the_endpoints, .timeout = 60)
{
    security_override = "None, Basic256Sha256:SignAndEncrypt, Aes256_Sha256_RsaPss:SignAndEncrypt";
    sec s;
    sec_start(&s, NULL);
    env_schan c;
    env_schan_open(&s.e, &c, AES256, ENCRYPT, &s.cert, &s.key, &s.server_cert);
    uas_nodeid token;
    /* Basic256Sha256's OAEP-SHA1 token on the Aes256_Sha256_RsaPss endpoint. */
    cr_expect_eq(legacy_login(&s, &c, &open62541, &token), UAS_BAD_IDENTITY_TOKEN_INVALID);
    cr_expect(env_log_has("policy id 'username_Basic256Sha256' is not offered on this endpoint"));
    cr_expect_eq(read_state(&s, &c, &token), UAS_BAD_SESSION_NOT_ACTIVATED);
    /* The endpoint's own policy works. */
    legacy own = open62541;
    own.policy_id = "username_Aes256_Sha256_RsaPss";
    own.algorithm = RSA_OAEP256;
    own.sha256 = true;
    cr_expect_eq(legacy_login(&s, &c, &own, &token), UAS_GOOD);
    cr_expect_eq(read_state(&s, &c, &token), UAS_GOOD);
    env_schan_close(&c);
    security_override = NULL;
    env_sec_stop(&s);
}

/* ---- None channels: what a sniffed authenticationToken is worth ---- */

static void open_none(sec *s, env_schan *c)
{
    env_schan_open(&s->e, c, NONE_URI, NONE, &s->cert, &s->key, &s->server_cert);
}

/* CreateSession + ActivateSession on a None channel: anonymous (password
 * NULL) or alice with password. */
static uas_status none_session(sec *s, env_schan *c, const char *password,
                               uas_create_session_response *cs, uas_activate_session_response *as)
{
    cr_assert_eq(create_session(s, c, &s->cert, ENV_CLIENT_URI, 32, cs), UAS_GOOD);
    uas_user_name_identity_token t;
    uint8_t cipher[1024];
    uas_extensionobject tok;
    if (password)
        tok = user_token(s, &t, "alice", password, &cs->server_nonce, cipher, sizeof(cipher));
    return activate(s, c, cs, &cs->server_nonce, SIG_MISSING, password ? &tok : NULL, as);
}

/* Issue #18, 7: moving a session to another channel needs its identity. */
Test(session_security, session_moves_only_with_its_proven_identity, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    env_schan a, b, m;
    open_none(&s, &a);
    open_none(&s, &b);
    open_none(&s, &m); /* mallory, who saw alice's token on the wire */
    uas_create_session_response cs;
    uas_activate_session_response as;
    cr_assert_eq(none_session(&s, &a, ENV_PASSWORD, &cs, &as), UAS_GOOD);
    /* Alice moves her session to b with her password. */
    uas_user_name_identity_token t;
    uint8_t cipher[1024];
    uas_extensionobject tok =
        user_token(&s, &t, "alice", ENV_PASSWORD, &as.server_nonce, cipher, sizeof(cipher));
    uas_activate_session_response as2;
    cr_expect_eq(activate(&s, &b, &cs, &as.server_nonce, SIG_MISSING, &tok, &as2), UAS_GOOD);
    cr_expect_eq(read_state(&s, &b, &cs.authentication_token), UAS_GOOD);
    /* Mallory re-activates it as anonymous: refused, and reads nothing. */
    uas_activate_session_response r;
    cr_expect_eq(activate(&s, &m, &cs, &as2.server_nonce, SIG_MISSING, NULL, &r),
                 UAS_BAD_IDENTITY_CHANGE_NOT_SUPPORTED);
    cr_expect_neq(read_state(&s, &m, &cs.authentication_token), UAS_GOOD);
    cr_expect(env_log_has("with its own user only"));
    /* Alice keeps her session. */
    cr_expect_eq(read_state(&s, &b, &cs.authentication_token), UAS_GOOD);
    /* An anonymous None session does not move at all. */
    uas_create_session_response acs;
    cr_assert_eq(none_session(&s, &a, NULL, &acs, &as), UAS_GOOD);
    cr_expect_eq(activate(&s, &m, &acs, &as.server_nonce, SIG_MISSING, NULL, &r),
                 UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_neq(read_state(&s, &m, &acs.authentication_token), UAS_GOOD);
    cr_expect(env_log_has("an anonymous session of a None channel cannot move"));
    cr_expect_eq(read_state(&s, &a, &acs.authentication_token), UAS_GOOD);
    env_schan_close(&a);
    env_schan_close(&b);
    env_schan_close(&m);
    env_sec_stop(&s);
}

/* Issue #18, 12: anonymous None sessions do not take each other's
 * subscriptions. */
Test(session_security, anonymous_none_sessions_keep_their_subscriptions, .timeout = 60)
{
    sec s;
    sec_start(&s, NULL);
    env_schan a, m;
    open_none(&s, &a);
    open_none(&s, &m);
    uas_create_session_response cs, mcs;
    uas_activate_session_response as;
    cr_assert_eq(none_session(&s, &a, NULL, &cs, &as), UAS_GOOD);
    cr_assert_eq(none_session(&s, &m, NULL, &mcs, &as), UAS_GOOD);
    uas_create_subscription_request creq;
    memset(&creq, 0, sizeof(creq));
    creq.request_header.authentication_token = cs.authentication_token;
    creq.requested_publishing_interval = 1000;
    creq.requested_lifetime_count = 60;
    creq.requested_max_keep_alive_count = 10;
    creq.publishing_enabled = true;
    uas_create_subscription_response cresp;
    cr_assert_eq(env_schan_call(&a, &creq, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &cresp,
                                UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), &s.arena),
                 UAS_GOOD);
    uint32_t id = cresp.subscription_id;
    uas_transfer_subscriptions_request treq;
    memset(&treq, 0, sizeof(treq));
    treq.request_header.authentication_token = mcs.authentication_token;
    treq.subscription_ids_count = 1;
    treq.subscription_ids = &id;
    uas_transfer_subscriptions_response tresp;
    cr_assert_eq(env_schan_call(&m, &treq, UAS_TYPE(TRANSFER_SUBSCRIPTIONS_REQUEST), &tresp,
                                UAS_TYPE(TRANSFER_SUBSCRIPTIONS_RESPONSE), &s.arena),
                 UAS_GOOD);
    cr_assert_eq(tresp.results_count, 1);
    cr_expect_eq(tresp.results[0].status_code, UAS_BAD_USER_ACCESS_DENIED, "%s",
                 uas_status_name(tresp.results[0].status_code));
    /* Its own session still has it: the transfer to itself is Good. */
    treq.request_header.authentication_token = cs.authentication_token;
    cr_assert_eq(env_schan_call(&a, &treq, UAS_TYPE(TRANSFER_SUBSCRIPTIONS_REQUEST), &tresp,
                                UAS_TYPE(TRANSFER_SUBSCRIPTIONS_RESPONSE), &s.arena),
                 UAS_GOOD);
    cr_expect_eq(tresp.results[0].status_code, UAS_GOOD, "%s",
                 uas_status_name(tresp.results[0].status_code));
    cr_expect_eq(read_state(&s, &a, &cs.authentication_token), UAS_GOOD);
    env_schan_close(&a);
    env_schan_close(&m);
    env_sec_stop(&s);
}
