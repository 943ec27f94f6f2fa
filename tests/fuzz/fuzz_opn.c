/* libFuzzer target for OPN parsing on the server side of a secure channel:
 * the asymmetric security header (policy URI, sender certificate, receiver
 * thumbprint), the PKI callback, RSA decryption and signature, padding,
 * the sequence header and the OpenSecureChannelRequest (issue and renew),
 * with the server and client identities made in memory at start-up.
 *
 * Input: byte 0 flags (bit 0: 2048-bit keys and the policy of bits 1-2,
 * Basic256Sha256 / Aes128_Sha256_RsaOaep / Aes256_Sha256_RsaPss /
 * Basic256, else 1024-bit keys and Basic256, whose RSA is about 6 times
 * cheaper so most executions get through it; bit 3: feed each frame in
 * three pieces; bit 4: the channel is already open (fixed keys) with the
 * client as its peer, so OPNs are renewals, in mode Sign with bit 6, else
 * SignAndEncrypt; bit 5: the PKI refuses the client certificate), byte 1 the clock step per frame
 * in 100 ms, then frames of [u16 LE length | bytes]. A frame's first byte: bit 0 clear, the rest is
 * fed as it is; set, the rest is [header flags | channel id u32 LE | plaintext] and becomes an OPN
 * chunk signed with the client's key and encrypted with the server's (fz_seal_opn). Header flags:
 * bit 0 null SenderCertificate, bit 1 a wrong thumbprint, bit 2 padding computed (else taken from
 * the plaintext), bit 3 the None policy URI, bit 4 the certificate of another client (and signed
 * with its key).
 *
 * Checked: no crash or sanitizer report, chunks sent have consistent
 * headers, a failed recv leaves the channel closed, no pool buffer leaks.
 * Not reached: keys over 2048 bits (ExtraPaddingSize), too slow to fuzz.
 *
 * Built a second time with FZ_OPN_ECC as fuzz_opn_ecc: the ECC policies'
 * OPN (Part 6, 6.8: signed, not encrypted, the nonces ephemeral public
 * keys), some fifteen times cheaper than RSA-2048 per execution. Byte 0
 * bits 0-1 pick the policy (ECC_nistP256_AesGcm, ECC_nistP256_ChaChaPoly,
 * ECC_curve25519, ECC_brainpoolP256r1_AesGcm), each with identities on its
 * curve; bit 4 has no meaning there (an ECC channel's keys come from
 * ephemeral keys, so there are no fixed keys: the renewal seeds are whole
 * conversations, Issue then Renew); header flag bit 2 (padding) neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

#include "fuzz_fixed.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { OUT = 3 * FZ_BUF };

typedef struct fz_world {
    fz_identity server, client, other;
} fz_world;

#ifdef FZ_OPN_ECC
/* P-256, Ed25519, brainpoolP256r1: the world of each policy below. */
static fz_world worlds[3];
static const char *const curves[3] = {"P-256", "ED25519", "brainpoolP256r1"};
static const int world_of[4] = {0, 0, 1, 2};
static uas_secpol_cred *more_creds[2];
#else
static fz_world worlds[2];               /* 1024 and 2048 bits */
static fz_keyslot renewal_keys[2][4][2]; /* [world][policy][Sign], the client as peer */
#endif
static const uas_secpol *policies[4];
static uas_channel_offer offers[9];
static fz_run run;

/* Key generation before libFuzzer's clock runs, so it never counts
 * against the first input's timeout. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_quiet_logs();
#ifdef FZ_OPN_ECC
    for (int i = 0; i < 3; i++) {
        fz_identity_make_ecc(&worlds[i].server, curves[i], "fuzz_opn server");
        fz_identity_make_ecc(&worlds[i].client, curves[i], "fuzz_opn client");
        fz_identity_make_ecc(&worlds[i].other, curves[i], "fuzz_opn other client");
    }
    more_creds[0] = worlds[1].server.cred;
    more_creds[1] = worlds[2].server.cred;
    policies[0] = &uas_secpol_ecc_nistp256_aesgcm;
    policies[1] = &uas_secpol_ecc_nistp256_chachapoly;
    policies[2] = &uas_secpol_ecc_curve25519;
    policies[3] = &uas_secpol_ecc_brainpoolp256r1_aesgcm;
#else
    static const unsigned bits[2] = {1024, 2048};
    for (int i = 0; i < 2; i++) {
        fz_identity_make(&worlds[i].server, bits[i], "fuzz_opn server");
        fz_identity_make(&worlds[i].client, bits[i], "fuzz_opn client");
        fz_identity_make(&worlds[i].other, bits[i], "fuzz_opn other client");
    }
    policies[0] = &uas_secpol_basic256sha256;
    policies[1] = &uas_secpol_aes128_sha256_rsaoaep;
    policies[2] = &uas_secpol_aes256_sha256_rsapss;
    policies[3] = &uas_secpol_basic256;
#endif
    for (int i = 0; i < 4; i++) {
        offers[2 * i] = (uas_channel_offer){policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN};
        offers[2 * i + 1] =
            (uas_channel_offer){policies[i], UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT};
    }
    offers[8] = (uas_channel_offer){&uas_secpol_none, UAS_MESSAGE_SECURITY_MODE_NONE};
    run.pool = uas_bufpool_new(1 << 20);
    if (!run.pool)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0], step = data[1];
#ifdef FZ_OPN_ECC
    int pi = flags & 3;
    const fz_world *wd = &worlds[world_of[pi]];
#else
    int wi = flags & 1, pi = (flags & 1) ? (flags >> 1) & 3 : 3;
    const fz_world *wd = &worlds[wi];
#endif
    const uas_secpol *pol = policies[pi];
    bool pieces = flags & 8;
    data += 2;
    size -= 2;

    run.refuse = (flags & 32) != 0;
    uas_channel_config cfg;
    uas_channel_callbacks cb;
    fz_server_config(&cfg, &cb);
#ifdef FZ_OPN_ECC
    cfg.cred = worlds[0].server.cred;
    cfg.more_creds = more_creds;
    cfg.more_cred_count = 2;
#else
    cfg.cred = wd->server.cred;
#endif
    cfg.offers = offers;
    cfg.offer_count = sizeof(offers) / sizeof(offers[0]);
    cfg.validate_peer = fz_validate;
    cfg.validate_ud = &run;
    int64_t now = 1000;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &run, run.pool, now);
    if (!ch)
        abort();
    bool sign_only = flags & 64;
#ifdef FZ_OPN_ECC
    fz_keyslot *slot = NULL; /* ECC keys come from ephemeral keys, not fixed nonces */
#else
    fz_keyslot *slot = (flags & 16) ? &renewal_keys[wi][pi][sign_only] : NULL;
#endif
    if (slot)
        fz_channel_lend_fixed(ch, slot, pol, wd->server.cred,
                              sign_only ? UAS_MESSAGE_SECURITY_MODE_SIGN
                                        : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                              1, false, wd->client.cert, wd->client.cert_len, now);
    static uint8_t out[OUT];
    static uint8_t wrong_thumb[20];
    const uint8_t *f;
    size_t len;
    while (fz_next_frame(&data, &size, &f, &len)) {
        if (len == 0)
            continue;
        bool alive;
        if (!(f[0] & 1) || len < 6) {
            alive = fz_feed(ch, f + 1, len - 1, pieces, now);
        } else {
            uint8_t hf = f[1];
            const fz_identity *from = (hf & 16) ? &wd->other : &wd->client;
            const uint8_t *thumb =
                (hf & 2) ? wrong_thumb : uas_secpol_cred_thumbprint(wd->server.cred);
            size_t n =
                fz_seal_opn(pol, from, &wd->server, fz_u32(f + 2),
                            (hf & 8) ? UAS_SECPOL_NONE_URI : pol->uri, (hf & 1) ? NULL : from->cert,
                            from->cert_len, thumb, f + 6, len - 6, (hf & 4) != 0, out, sizeof(out));
            alive = fz_feed(ch, out, n, pieces, now);
        }
        now += (int64_t)step * 100;
        uas_channel_tick(ch, now);
        if (!alive)
            break;
    }
    uas_channel_close(ch, UAS_GOOD);
    if (slot)
        fz_channel_return_keys(ch, slot);
    fz_channel_end(ch, &run);
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "fuzz_opn: %zu channels opened, %zu OPNs answered so far\n", run.opened,
                run.opn_answers);
    return 0;
}
