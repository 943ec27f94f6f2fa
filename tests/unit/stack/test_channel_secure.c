#define _GNU_SOURCE
/* Secured channels end to end in memory: a client and a server channel
 * open every RSA policy in Sign and SignAndEncrypt, exchange messages of
 * one and many chunks, renew the token, and refuse what they must. */
#include <criterion/criterion.h>
#include <string.h>

#include "channel_internal.h"
#include "helper_keys.h"
#include "helper_pipe.h"

#ifdef UAS_ENABLE_ENCRYPTION

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

static uas_secpol_cred *cred_of(test_key_id id)
{
    const test_key *k = test_key_get(id);
    uas_secpol_cred *c = NULL;
    cr_assert_eq(uas_secpol_cred_new(k->cert, k->cert_len, k->key_der, k->key_len, &c), UAS_GOOD);
    return c;
}

typedef struct secure_pipe {
    pipe p;
    uas_secpol_cred *server_cred, *client_cred;
    uas_channel_offer offers[2];
} secure_pipe;

static uas_status refuse_all(void *ud, const uint8_t *der, size_t len)
{
    (void)ud, (void)der, (void)len;
    return UAS_BAD_CERTIFICATE_UNTRUSTED;
}

/* Server offering (spol, smode) and None; client opening (cpol, cmode). */
static void secure_init2(secure_pipe *sp, const uas_secpol *spol, int32_t smode,
                         const uas_secpol *cpol, int32_t cmode,
                         uas_status (*validate)(void *, const uint8_t *, size_t))
{
    sp->server_cred = cred_of(TK_RSA2048_A);
    sp->client_cred = cred_of(TK_RSA2048_B);
    uas_channel_config sc, cc;
    pipe_config(&sc, UAS_CHANNEL_SERVER);
    pipe_config(&cc, UAS_CHANNEL_CLIENT);
    sp->offers[0] = (uas_channel_offer){spol, smode};
    sp->offers[1] = (uas_channel_offer){&uas_secpol_none, UAS_MESSAGE_SECURITY_MODE_NONE};
    sc.cred = sp->server_cred;
    sc.offers = sp->offers;
    sc.offer_count = 2;
    sc.validate_peer = validate;
    cc.cred = sp->client_cred;
    cc.policy = cpol;
    cc.mode = cmode;
    size_t n;
    cc.server_cert = uas_secpol_cred_cert(sp->server_cred, &n);
    cc.server_cert_len = n;
    pipe_init(&sp->p, &cc, &sc);
}

static void secure_init(secure_pipe *sp, const uas_secpol *pol, int32_t mode,
                        uas_status (*validate)(void *, const uint8_t *, size_t))
{
    secure_init2(sp, pol, mode, pol, mode, validate);
}

/* Connects and pumps; returns the server's closing reason (Good if open). */
static uas_status connect_and_pump(secure_pipe *sp)
{
    cr_assert_eq(uas_channel_connect(sp->p.client.ch, "opc.tcp://pipe:4840", 0), UAS_GOOD);
    pipe_pump(&sp->p);
    if (uas_channel_get_state(sp->p.server.ch) != UAS_CHANNEL_CLOSED)
        return UAS_GOOD;
    return sp->p.server.reasons[sp->p.server.nstates - 1];
}

static void secure_fini(secure_pipe *sp)
{
    pipe_fini(&sp->p);
    uas_secpol_cred_unref(sp->server_cred);
    uas_secpol_cred_unref(sp->client_cred);
}

/* A ReadRequest with many string node ids, big enough to need many chunks. */
static void send_big_read(pipe *p, uint32_t request_id, size_t nodes)
{
    static char name[32];
    snprintf(name, sizeof(name), "SomeLongishNodeName");
    uas_read_value_id *ids = calloc(nodes, sizeof(*ids));
    for (size_t i = 0; i < nodes; i++) {
        ids[i].node_id = uas_nodeid_string(1, name);
        ids[i].attribute_id = 13;
    }
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = ids;
    req.nodes_to_read_count = nodes;
    cr_assert_eq(uas_channel_send(p->client.ch, request_id, &req, UAS_TYPE(READ_REQUEST)),
                 UAS_GOOD);
    free(ids);
}

static const uas_secpol *const policies[] = {
    &uas_secpol_basic256sha256,
    &uas_secpol_aes128_sha256_rsaoaep,
    &uas_secpol_aes256_sha256_rsapss,
    &uas_secpol_basic256,
};

Test(secure_channel, every_policy_and_mode_opens_and_carries_messages)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        for (int32_t mode = 2; mode <= 3; mode++) {
            secure_pipe sp;
            secure_init(&sp, policies[i], mode, NULL);
            pipe_open(&sp.p);
            cr_assert_eq(uas_channel_security_mode(sp.p.server.ch), mode);
            cr_assert_eq(uas_channel_policy(sp.p.server.ch), policies[i]);
            /* One chunk, then a message that needs many. */
            send_big_read(&sp.p, 11, 3);
            send_big_read(&sp.p, 12, 5000);
            pipe_pump(&sp.p);
            cr_assert_eq(sp.p.server.nmsgs, 2, "%s mode %d: %zu messages", policies[i]->uri, mode,
                         sp.p.server.nmsgs);
            uas_arena a;
            uas_arena_init(&a, NULL, 0, 0);
            uas_decoder d;
            uas_decoder_init(&d, sp.p.server.msgs[1].body, sp.p.server.msgs[1].len, &a, NULL);
            uas_nodeid id;
            uas_read_request req;
            cr_assert_eq(uas_decode(&d, &id, UAS_TYPE(NODE_ID)), UAS_GOOD);
            cr_assert_eq(uas_decode(&d, &req, UAS_TYPE(READ_REQUEST)), UAS_GOOD);
            cr_assert_eq(req.nodes_to_read_count, 5000);
            uas_arena_free(&a);
            secure_fini(&sp);
        }
    }
}

Test(secure_channel, encrypted_chunks_do_not_carry_the_plaintext)
{
    secure_pipe sp;
    secure_init(&sp, &uas_secpol_basic256sha256, 3, NULL);
    pipe_open(&sp.p);
    send_big_read(&sp.p, 5, 3);
    uas_buf *b = pipe_peek(&sp.p.client, 0);
    cr_assert_not_null(b);
    cr_assert_null(memmem(b->data, b->len, "SomeLongishNodeName", 19),
                   "SignAndEncrypt leaves the body readable");
    secure_fini(&sp);
}

Test(secure_channel, sign_only_chunks_carry_the_plaintext)
{
    secure_pipe sp;
    secure_init(&sp, &uas_secpol_basic256sha256, 2, NULL);
    pipe_open(&sp.p);
    send_big_read(&sp.p, 5, 3);
    uas_buf *b = pipe_peek(&sp.p.client, 0);
    cr_assert_not_null(memmem(b->data, b->len, "SomeLongishNodeName", 19));
    secure_fini(&sp);
}

Test(secure_channel, tampered_chunk_closes_with_security_checks_failed)
{
    secure_pipe sp;
    secure_init(&sp, &uas_secpol_aes128_sha256_rsaoaep, 3, NULL);
    pipe_open(&sp.p);
    send_big_read(&sp.p, 5, 3);
    uas_buf *b = pipe_peek(&sp.p.client, 0);
    b->data[b->len / 2] ^= 0x40;
    cr_assert_eq(pipe_transmit(&sp.p, &sp.p.client), UAS_BAD_SECURITY_CHECKS_FAILED);
    cr_assert_eq(sp.p.server.nmsgs, 0);
    cr_assert_eq(uas_channel_get_state(sp.p.server.ch), UAS_CHANNEL_CLOSED);
    secure_fini(&sp);
}

Test(secure_channel, mode_not_offered_is_rejected)
{
    secure_pipe sp;
    secure_init2(&sp, &uas_secpol_basic256sha256, 3, &uas_secpol_basic256sha256, 2, NULL);
    cr_assert_eq(connect_and_pump(&sp), UAS_BAD_SECURITY_MODE_REJECTED);
    secure_fini(&sp);
}

Test(secure_channel, untrusted_client_certificate_is_refused_before_decryption)
{
    secure_pipe sp;
    secure_init(&sp, &uas_secpol_basic256sha256, 3, refuse_all);
    cr_assert_eq(connect_and_pump(&sp), UAS_BAD_CERTIFICATE_UNTRUSTED);
    /* The client learns why from the server's ERR. */
    cr_assert_eq(uas_channel_get_state(sp.p.client.ch), UAS_CHANNEL_CLOSED);
    cr_assert_eq(sp.p.client.reasons[sp.p.client.nstates - 1], UAS_BAD_CERTIFICATE_UNTRUSTED);
    secure_fini(&sp);
}

Test(secure_channel, policy_not_offered_is_rejected)
{
    secure_pipe sp;
    secure_init2(&sp, &uas_secpol_basic256sha256, 3, &uas_secpol_aes256_sha256_rsapss, 3, NULL);
    cr_assert_eq(connect_and_pump(&sp), UAS_BAD_SECURITY_POLICY_REJECTED);
    secure_fini(&sp);
}

Test(secure_channel, token_renewal_keeps_the_channel_working)
{
    secure_pipe sp;
    secure_init(&sp, &uas_secpol_aes256_sha256_rsapss, 3, NULL);
    pipe_open(&sp.p);
    uint32_t t1 = uas_channel_get_token_id(sp.p.client.ch);
    /* Past 75 % of the lifetime the client renews. */
    sp.p.now_ms += 3600000;
    uas_channel_tick(sp.p.client.ch, sp.p.now_ms);
    pipe_pump(&sp.p);
    cr_assert_neq(uas_channel_get_token_id(sp.p.client.ch), t1);
    send_big_read(&sp.p, 21, 3);
    pipe_pump(&sp.p);
    cr_assert_eq(sp.p.server.nmsgs, 1);
    cr_assert_eq(uas_channel_get_state(sp.p.server.ch), UAS_CHANNEL_OPEN);
    secure_fini(&sp);
}

#else

Test(secure_channel, skipped_without_encryption)
{
    cr_skip("built without UA_ENABLE_ENCRYPTION");
}

#endif
