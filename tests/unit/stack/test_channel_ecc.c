#define _GNU_SOURCE
/* The ECC policies end to end in memory: a client and a server channel open
 * every ECC policy in Sign and SignAndEncrypt, carry messages of one and of
 * many chunks both ways, renew the token (with the IKM chain of the
 * enhanced policies), start their sequence numbers at 0, and refuse a
 * tampered chunk and a credential of another curve. */
#include <criterion/criterion.h>
#include <string.h>

#include "channel_internal.h"
#include "helper_pipe.h"

#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/evp.h>
#include <openssl/x509.h>

/* A fresh key of the policy's certificate type with a self-signed
 * certificate, as credentials. */
static uas_secpol_cred *ecc_cred(const char *type)
{
    EVP_PKEY *k = NULL;
    const EVP_MD *md = EVP_sha256();
    if (!strcmp(type, "nistP256"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    else if (!strcmp(type, "nistP384"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384"), md = EVP_sha384();
    else if (!strcmp(type, "brainpoolP256r1"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "brainpoolP256r1");
    else if (!strcmp(type, "brainpoolP384r1"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "brainpoolP384r1"), md = EVP_sha384();
    else if (!strcmp(type, "curve25519"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"), md = NULL;
    else if (!strcmp(type, "curve448"))
        k = EVP_PKEY_Q_keygen(NULL, NULL, "ED448"), md = NULL;
    cr_assert_not_null(k, "%s key", type);
    X509 *x = X509_new();
    cr_assert(x && X509_set_version(x, 2) == 1 &&
              ASN1_INTEGER_set(X509_get_serialNumber(x), 7) == 1 &&
              X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
              X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24) && X509_set_pubkey(x, k) == 1);
    X509_NAME *name = X509_get_subject_name(x);
    cr_assert(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)type, -1,
                                         -1, 0) == 1 &&
              X509_set_issuer_name(x, name) == 1 && X509_sign(x, k, md) > 0);
    uint8_t *cert = NULL, *key = NULL;
    int cl = i2d_X509(x, &cert), kl = i2d_PrivateKey(k, &key);
    cr_assert(cl > 0 && kl > 0);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(cert, (size_t)cl, key, (size_t)kl, &c), UAS_GOOD, "%s cred",
                 type);
    OPENSSL_clear_free(key, (size_t)kl);
    OPENSSL_free(cert);
    X509_free(x);
    EVP_PKEY_free(k);
    return c;
}

typedef struct ecc_pipe {
    pipe p;
    uas_secpol_cred *server_cred, *client_cred;
    uas_channel_offer offers[2];
} ecc_pipe;

static void ecc_init(ecc_pipe *ep, const uas_secpol *pol, int32_t mode, uas_secpol_cred *server,
                     uas_secpol_cred *client)
{
    ep->server_cred = server;
    ep->client_cred = client;
    uas_channel_config sc, cc;
    pipe_config(&sc, UAS_CHANNEL_SERVER);
    pipe_config(&cc, UAS_CHANNEL_CLIENT);
    ep->offers[0] = (uas_channel_offer){pol, mode};
    ep->offers[1] = (uas_channel_offer){&uas_secpol_none, UAS_MESSAGE_SECURITY_MODE_NONE};
    sc.cred = server;
    sc.offers = ep->offers;
    sc.offer_count = 2;
    cc.cred = client;
    cc.policy = pol;
    cc.mode = mode;
    size_t n;
    cc.server_cert = uas_secpol_cred_cert(server, &n);
    cc.server_cert_len = n;
    pipe_init(&ep->p, &cc, &sc);
}

static void ecc_fini(ecc_pipe *ep)
{
    pipe_fini(&ep->p);
    uas_secpol_cred_unref(ep->server_cred);
    uas_secpol_cred_unref(ep->client_cred);
}

static void send_read(pipe_end *from, uint32_t request_id, size_t nodes)
{
    static char name[] = "SomeLongishNodeName";
    uas_read_value_id *ids = calloc(nodes, sizeof(*ids));
    for (size_t i = 0; i < nodes; i++) {
        ids[i].node_id = uas_nodeid_string(1, name);
        ids[i].attribute_id = 13;
    }
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = ids;
    req.nodes_to_read_count = nodes;
    cr_assert_eq(uas_channel_send(from->ch, request_id, &req, UAS_TYPE(READ_REQUEST)), UAS_GOOD);
    free(ids);
}

static const struct {
    const uas_secpol *pol;
    const char *type;
} ecc[] = {
    {&uas_secpol_ecc_nistp256_aesgcm, "nistP256"},
    {&uas_secpol_ecc_nistp256_chachapoly, "nistP256"},
    {&uas_secpol_ecc_nistp384_aesgcm, "nistP384"},
    {&uas_secpol_ecc_nistp384_chachapoly, "nistP384"},
    {&uas_secpol_ecc_brainpoolp256r1_aesgcm, "brainpoolP256r1"},
    {&uas_secpol_ecc_brainpoolp256r1_chachapoly, "brainpoolP256r1"},
    {&uas_secpol_ecc_brainpoolp384r1_aesgcm, "brainpoolP384r1"},
    {&uas_secpol_ecc_brainpoolp384r1_chachapoly, "brainpoolP384r1"},
    {&uas_secpol_ecc_curve25519, "curve25519"},
    {&uas_secpol_ecc_curve448, "curve448"},
};

Test(ecc_channel, every_policy_and_mode_carries_messages_and_renews, .timeout = 60)
{
    for (size_t i = 0; i < sizeof(ecc) / sizeof(ecc[0]); i++) {
        for (int32_t mode = 2; mode <= 3; mode++) {
            ecc_pipe ep;
            ecc_init(&ep, ecc[i].pol, mode, ecc_cred(ecc[i].type), ecc_cred(ecc[i].type));
            pipe_open(&ep.p);
            cr_assert_eq(uas_channel_policy(ep.p.server.ch), ecc[i].pol);
            /* The OPN took sequence number 0 on both sides. */
            cr_assert_eq(ep.p.client.ch->send_seq, 1, "%s", ecc[i].pol->uri);
            cr_assert_eq(ep.p.server.ch->send_seq, 1, "%s", ecc[i].pol->uri);
            send_read(&ep.p.client, 11, 3);
            send_read(&ep.p.client, 12, 5000); /* many chunks */
            send_read(&ep.p.server, 13, 5000); /* and the other way */
            pipe_pump(&ep.p);
            cr_assert_eq(ep.p.server.nmsgs, 2, "%s mode %d", ecc[i].pol->uri, mode);
            cr_assert_eq(ep.p.client.nmsgs, 1, "%s mode %d", ecc[i].pol->uri, mode);
            /* Renewal: new ephemeral keys (and the IKM chain). */
            uint32_t t1 = uas_channel_get_token_id(ep.p.client.ch);
            ep.p.now_ms += 3600000;
            uas_channel_tick(ep.p.client.ch, ep.p.now_ms);
            pipe_pump(&ep.p);
            cr_assert_neq(uas_channel_get_token_id(ep.p.client.ch), t1, "%s", ecc[i].pol->uri);
            send_read(&ep.p.client, 14, 3);
            send_read(&ep.p.server, 15, 3);
            pipe_pump(&ep.p);
            cr_assert_eq(ep.p.server.nmsgs, 3, "%s mode %d after renewal", ecc[i].pol->uri, mode);
            cr_assert_eq(ep.p.client.nmsgs, 2, "%s mode %d after renewal", ecc[i].pol->uri, mode);
            cr_assert_eq(uas_channel_get_state(ep.p.server.ch), UAS_CHANNEL_OPEN);
            ecc_fini(&ep);
        }
    }
}

Test(ecc_channel, encrypt_hides_the_body_and_sign_does_not)
{
    for (int32_t mode = 2; mode <= 3; mode++) {
        ecc_pipe ep;
        ecc_init(&ep, &uas_secpol_ecc_curve25519, mode, ecc_cred("curve25519"),
                 ecc_cred("curve25519"));
        pipe_open(&ep.p);
        send_read(&ep.p.client, 5, 3);
        uas_buf *b = pipe_peek(&ep.p.client, 0);
        cr_assert_not_null(b);
        bool seen = memmem(b->data, b->len, "SomeLongishNodeName", 19) != NULL;
        cr_assert_eq(seen, mode == 2, "mode %d", mode);
        ecc_fini(&ep);
    }
}

Test(ecc_channel, tampered_chunk_closes_with_security_checks_failed)
{
    for (int32_t mode = 2; mode <= 3; mode++) {
        ecc_pipe ep;
        ecc_init(&ep, &uas_secpol_ecc_nistp256_aesgcm, mode, ecc_cred("nistP256"),
                 ecc_cred("nistP256"));
        pipe_open(&ep.p);
        send_read(&ep.p.client, 5, 3);
        uas_buf *b = pipe_peek(&ep.p.client, 0);
        b->data[b->len / 2] ^= 0x40;
        cr_assert_eq(pipe_transmit(&ep.p, &ep.p.client), UAS_BAD_SECURITY_CHECKS_FAILED);
        cr_assert_eq(ep.p.server.nmsgs, 0);
        cr_assert_eq(uas_channel_get_state(ep.p.server.ch), UAS_CHANNEL_CLOSED);
        ecc_fini(&ep);
    }
}

Test(ecc_channel, credentials_of_another_curve_do_not_fit)
{
    uas_secpol_cred *p256 = ecc_cred("nistP256"), *x = ecc_cred("curve25519");
    uas_secpol_keys *k = NULL;
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_ecc_curve25519, p256, &k),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_basic256sha256, x, &k),
                 UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    cr_assert_eq(uas_secpol_keys_new(&uas_secpol_ecc_curve25519, x, &k), UAS_GOOD);
    size_t n;
    const uint8_t *der = uas_secpol_cred_cert(p256, &n);
    cr_assert_eq(uas_secpol_keys_set_peer(k, der, n), UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED);
    uas_secpol_keys_free(k);
    uas_secpol_cred_unref(p256);
    uas_secpol_cred_unref(x);
}

#else
Test(ecc_channel, skipped_without_encryption)
{
    cr_skip("built without UA_ENABLE_ENCRYPTION");
}
#endif
