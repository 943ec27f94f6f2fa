/* Shared by the fuzz targets and their seed generators: identities made in
 * memory at start-up, and secure channels put straight into OPEN with
 * symmetric keys derived from fixed nonces, so that an input (or a seed
 * recorded by another process) is secured with the same keys every time and
 * the fuzzer reaches the code behind the signature check.
 *
 * This reaches into the channel's internals (channel_internal.h): it is
 * test code, never linked into the libraries. */
#ifndef UAS_FUZZ_FIXED_H
#define UAS_FUZZ_FIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

#include "secpol.h"

/* A little-endian u32 of the input. */
static inline uint32_t fz_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum { FZ_CHANNEL_ID = 7, FZ_BUF = 8192, FZ_MAX_MSG = 65536, FZ_MAX_CHUNKS = 16 };

/* An RSA key with a self-signed certificate, made with OpenSSL's EVP and
 * X509 APIs (never written anywhere), and its credentials. */
typedef struct fz_identity {
    EVP_PKEY *key;
    uint8_t *cert; /* DER */
    size_t cert_len;
    uas_secpol_cred *cred;
} fz_identity;

void fz_identity_make(fz_identity *id, unsigned bits, const char *cn);
/* The same with an ECC key: curve "P-256", "brainpoolP256r1" ... (EC) or
 * "ED25519". */
void fz_identity_make_ecc(fz_identity *id, const char *curve, const char *cn);
void fz_identity_free(fz_identity *id);

/* Keys of token_id derived as a server (or a client) would from the fixed
 * nonces; *out is new key material in mode. */
void fz_fixed_keys(const uas_secpol *pol, uas_secpol_cred *cred, int32_t mode, bool is_server,
                   uint32_t token_id, uas_secpol_keys **out);

/* Puts a fresh channel into OPEN with pol/mode and the fixed keys of
 * token_id, as if HEL/ACK (FZ_BUF both ways, no message limits from the
 * peer) and OPN had run: server role expects sequence numbers from 2 on,
 * client role sends from 2 on. With renewed, the keys of token_id - 1 are
 * installed too and still accepted (and used for sending by a server)
 * until the peer switches, as during a token renewal. */
void fz_channel_open_fixed(uas_channel *ch, const uas_secpol *pol, uas_secpol_cred *cred,
                           int32_t mode, uint32_t token_id, bool renewed, int64_t now_ms);

/* The keys a fixed-key channel's peer secures its chunks with (the
 * channel's "remote" keys), for building valid chunks by hand. */
typedef struct fz_sym {
    uas_secpol_keys *keys;
    const uas_secpol *pol;
    bool encrypt;
} fz_sym;

/* Builds [header | plain | (padding) | signature] for token_id (falls back
 * to the newest token's keys when there are none for it) and secures it:
 * the signature is made over whatever plain holds, so a fuzzer controls
 * sequence header, body and, unless auto_pad, the padding bytes. type is
 * "MSG" / "CLO"; returns the chunk length written to out (0 if it does not
 * fit cap). Without auto_pad, an encrypted plain is zero-extended to a
 * whole block. */
size_t fz_seal(const fz_sym *s, const char *type, char chunk_type, uint32_t channel_id,
               uint32_t token_id, const uint8_t *plain, size_t plain_len, bool auto_pad,
               uint8_t *out, size_t cap);

/* The reverse for a chunk sent by a fixed-key channel whose keys are s
 * (decrypts in place, strips signature and padding): the plaintext
 * [sequence header | body] at *plain. false if it does not verify. */
bool fz_unseal(const fz_sym *s, uint8_t *chunk, size_t len, const uint8_t **plain,
               size_t *plain_len);

/* An OPN chunk as a client with identity `client` makes it for a server
 * with identity `server` under pol: [OPN F size | channel_id | uri |
 * SenderCertificate | ReceiverCertificateThumbprint] then plain, padding
 * (computed with auto_pad, else taken from plain, which is zero-extended
 * to whole blocks) and the signature, encrypted with the server's key.
 * uri, cert and thumb are written as given (NULL: a null ByteString).
 * Returns the length written to out, 0 if it does not fit cap. An ECC
 * policy's OPN is [headers | plain | signature] (signed with the client's
 * key, not encrypted, no padding: auto_pad and server are not used). */
size_t fz_seal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint32_t channel_id, const char *uri, const uint8_t *cert, size_t cert_len,
                   const uint8_t *thumb, const uint8_t *plain, size_t plain_len, bool auto_pad,
                   uint8_t *out, size_t cap);

/* The reverse, for a recorded OPN chunk (server keys < 4096 bits): the
 * plaintext [sequence header | body] at *plain (decrypted in place). */
bool fz_unseal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint8_t *chunk, size_t len, const uint8_t **plain, size_t *plain_len);

/* ---- keys made once and lent to each input's channel ----
 *
 * Deriving a channel's keys costs about 190 allocations in OpenSSL (the
 * P_SHA256 and the keyed HMAC and AES contexts), most of an input's time in
 * fuzz_secure. A slot holds the keys of one configuration for the whole
 * run; each input's channel borrows them and gives them back before it is
 * deleted. Keys the input changed (a token dropped or renewed, a peer
 * adopted) are freed and made again when they come back, so every input
 * starts from the same keys. */
typedef struct fz_keyslot {
    uas_secpol_keys *keys;
    const uas_secpol *pol;
    uas_secpol_cred *cred;
    int32_t mode;
    bool server;
    uint32_t token_id;
    bool renewed;
    const uint8_t *peer_cert; /* NULL: no peer */
    size_t peer_cert_len;
} fz_keyslot;

/* fz_channel_open_fixed with the slot's keys (made on first use, with
 * peer_cert as the peer when not NULL). */
void fz_channel_lend_fixed(uas_channel *ch, fz_keyslot *slot, const uas_secpol *pol,
                           uas_secpol_cred *cred, int32_t mode, uint32_t token_id, bool renewed,
                           const uint8_t *peer_cert, size_t peer_cert_len, int64_t now_ms);
/* Takes the slot's keys back from ch (before uas_channel_delete). */
void fz_channel_return_keys(uas_channel *ch, fz_keyslot *slot);

/* ---- the harness of the server-side channel targets ---- */

/* The state of a run: one buffer pool for every input (no buffer may be
 * live after an input), what the PKI says, counters for FZ_VERBOSE. */
typedef struct fz_run {
    uas_bufpool *pool;
    bool refuse; /* validate_peer refuses the client's certificate */
    size_t delivered, opened, opn_answers;
} fz_run;

/* A log sink that drops everything (prints it with FZ_VERBOSE set). */
void fz_quiet_logs(void);
/* A server channel config: FZ_CHANNEL_ID, FZ_BUF both ways, 64 KiB
 * messages of 16 chunks; and callbacks (ud: the fz_run) that check every
 * chunk sent (header size consistent, within FZ_BUF) and every message
 * handed up (within the limits), and count. */
void fz_server_config(uas_channel_config *cfg, uas_channel_callbacks *cb);
/* validate_peer for cfg (validate_ud: the fz_run): Good, or untrusted
 * when run->refuse. */
uas_status fz_validate(void *ud, const uint8_t *der, size_t len);
/* Feeds n bytes from a copy of exactly n bytes (the channel decrypts in
 * place; ASan sees a read past them), in three pieces with pieces; a
 * fatal status must leave the channel closed. false once it is closed. */
bool fz_feed(uas_channel *ch, const uint8_t *p, size_t n, bool pieces, int64_t now);
/* The next frame [u16 LE length | bytes] of the input, the length cut to
 * what is left; false when none is left. */
bool fz_next_frame(const uint8_t **data, size_t *size, const uint8_t **f, size_t *len);
/* Closes and deletes ch, then checks that no pool buffer is live. */
void fz_channel_end(uas_channel *ch, fz_run *run);

#endif
