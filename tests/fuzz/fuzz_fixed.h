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

#include <ua/channel.h>

#include "secpol.h"

enum { FZ_CHANNEL_ID = 7, FZ_BUF = 8192 };

/* An RSA key with a self-signed certificate, made with OpenSSL's EVP and
 * X509 APIs (never written anywhere), and its credentials. */
typedef struct fz_identity {
    EVP_PKEY *key;
    uint8_t *cert; /* DER */
    size_t cert_len;
    uas_secpol_cred *cred;
} fz_identity;

void fz_identity_make(fz_identity *id, unsigned bits, const char *cn);
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
 * Returns the length written to out, 0 if it does not fit cap. */
size_t fz_seal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint32_t channel_id, const char *uri, const uint8_t *cert, size_t cert_len,
                   const uint8_t *thumb, const uint8_t *plain, size_t plain_len, bool auto_pad,
                   uint8_t *out, size_t cap);

/* The reverse, for a recorded OPN chunk (server keys < 4096 bits): the
 * plaintext [sequence header | body] at *plain (decrypted in place). */
bool fz_unseal_opn(const uas_secpol *pol, const fz_identity *client, const fz_identity *server,
                   uint8_t *chunk, size_t len, const uint8_t **plain, size_t *plain_len);

#endif
