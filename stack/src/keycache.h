/* The public keys of the last few certificates a thread decoded.
 *
 * OpenSSL 3.0 decodes a DER certificate in about 90 µs and a public key in
 * about 80 µs, mostly in its decoder framework, and an encrypted session
 * set-up needs the client's key several times (the OPN's signature and
 * encryption, ActivateSession's signature). Clients reconnect with the
 * same certificate, and channels keep only the key's DER (a decoded RSA
 * key is several KiB), so a handful of slots per thread saves most of the
 * decoding without a lock shared by event loops. Entries are matched on
 * the whole DER, never on a digest of it. */
#ifndef UAS_KEYCACHE_H
#define UAS_KEYCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

enum {
    UAS_KEYCACHE_SLOTS = 8,
    UAS_KEYCACHE_MAX_DER = 8192, /* larger inputs are decoded, not kept */
};

typedef struct uas_keycache_slot {
    uint8_t *der; /* a copy, NULL when free */
    uint32_t len;
    uint32_t used; /* the cache's clock at the last hit */
    int kind;      /* the caller's namespace (certificate or SPKI) */
    EVP_PKEY *key; /* one reference held by the slot */
} uas_keycache_slot;

typedef struct uas_keycache {
    uas_keycache_slot slot[UAS_KEYCACHE_SLOTS];
    uint32_t clock;
} uas_keycache;

/* The key decoded earlier from exactly these bytes of this kind, as a new
 * reference, or NULL. */
EVP_PKEY *uas_keycache_find(uas_keycache *c, int kind, const uint8_t *der, size_t len);
/* Keeps a reference to key for these bytes, in place of the least
 * recently used entry; does nothing when out of memory or too large. */
void uas_keycache_put(uas_keycache *c, int kind, const uint8_t *der, size_t len, EVP_PKEY *key);
/* Drops every entry. */
void uas_keycache_clear(uas_keycache *c);

#endif
