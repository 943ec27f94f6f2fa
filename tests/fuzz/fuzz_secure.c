/* libFuzzer target for secured symmetric chunks on an open server channel
 * (uas_channel_recv behind the signature): Basic256Sha256 in Sign or
 * SignAndEncrypt with keys derived from fixed nonces (fuzz_fixed.h), so
 * the fuzzer gets past the HMAC to decryption, padding, sequence numbers,
 * token switching (a renewal overlap), chunk assembly and aborts, CLO, and
 * the messages handed up.
 *
 * Input: byte 0 flags (bit 0: SignAndEncrypt, else Sign; bit 1: a renewal
 * is in progress, tokens 1 and 2 both valid; bit 2: feed each frame in
 * three pieces), byte 1 the clock step per frame in 100 ms, then frames of
 * [u16 LE length | bytes]. A frame's first byte says what it is: bit 0
 * clear: the rest goes to the channel as it is; set: the rest is [type
 * (0 MSG, 1 CLO) | chunk type | token id u32 LE | plaintext] and is sealed
 * with the client's keys first, with the channel id of the channel (or a
 * wrong one with bit 1), and the padding computed (bit 2) or taken from
 * the plaintext (the plaintext is then zero-extended to a whole block).
 *
 * Checked as in fuzz_channel: no crash or sanitizer report, every chunk
 * sent has a consistent header, no message over the limits is handed up, a
 * failed recv leaves the channel closed, no pool buffer leaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

#include "fuzz_fixed.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { OUT = FZ_BUF + 64 };

static fz_identity server_id;
static fz_sym client_keys[2];        /* [Sign, SignAndEncrypt] */
static fz_keyslot server_keys[2][2]; /* [SignAndEncrypt][renewed] */
static fz_run run;

/* Key generation before libFuzzer's clock runs, so it never counts
 * against the first input's timeout. The server's keys and the pool are
 * made once too (fz_keyslot): per input they cost more than the input. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_quiet_logs();
    fz_identity_make(&server_id, 2048, "fuzz_secure server");
    for (int e = 0; e < 2; e++) {
        client_keys[e].pol = &uas_secpol_basic256sha256;
        client_keys[e].encrypt = e == 1;
        fz_fixed_keys(&uas_secpol_basic256sha256, server_id.cred,
                      e ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT
                        : UAS_MESSAGE_SECURITY_MODE_SIGN,
                      false, 2, &client_keys[e].keys);
    }
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
    bool enc = flags & 1, renewed = flags & 2, pieces = flags & 4;
    data += 2;
    size -= 2;

    uas_channel_config cfg;
    uas_channel_callbacks cb;
    fz_server_config(&cfg, &cb);
    int64_t now = 1000;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &run, run.pool, now);
    if (!ch)
        abort();
    fz_keyslot *slot = &server_keys[enc][renewed];
    fz_channel_lend_fixed(ch, slot, &uas_secpol_basic256sha256, server_id.cred,
                          enc ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT
                              : UAS_MESSAGE_SECURITY_MODE_SIGN,
                          renewed ? 2 : 1, renewed, NULL, 0, now);
    const fz_sym *sym = &client_keys[enc];
    static uint8_t out[OUT];
    const uint8_t *f;
    size_t len;
    while (fz_next_frame(&data, &size, &f, &len)) {
        if (len == 0)
            continue;
        bool alive;
        if (!(f[0] & 1) || len < 7) {
            alive = fz_feed(ch, f + 1, len - 1, pieces, now);
        } else {
            size_t n = fz_seal(sym, (f[1] & 1) ? "CLO" : "MSG", (char)f[2],
                               (f[0] & 2) ? FZ_CHANNEL_ID + 1 : FZ_CHANNEL_ID, fz_u32(f + 3), f + 7,
                               len - 7, (f[0] & 4) != 0, out, sizeof(out));
            alive = fz_feed(ch, out, n, pieces, now);
        }
        now += (int64_t)step * 100;
        uas_channel_tick(ch, now);
        if (!alive || uas_channel_get_state(ch) == UAS_CHANNEL_CLOSED)
            break;
    }
    uas_channel_close(ch, UAS_GOOD);
    fz_channel_return_keys(ch, slot);
    fz_channel_end(ch, &run);
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "fuzz_secure: %zu messages handed up so far\n", run.delivered);
    return 0;
}
