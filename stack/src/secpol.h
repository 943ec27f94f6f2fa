/* Security policy vtable used by the channel. Every hook works in place on a
 * chunk buffer: the channel lays out [headers | sequence header + body] and
 * the policy appends padding and signature and encrypts, or verifies,
 * decrypts and strips them. Policy None implements them as no-ops; the RSA
 * policies of the security issue plug in here without touching the channel. */
#ifndef UAS_SECPOL_H
#define UAS_SECPOL_H

#include <stddef.h>
#include <stdint.h>

#include <ua/status.h>

typedef struct uas_secpol {
    const char *uri;
    /* Bytes a chunk needs after the body for padding and signature, so the
     * writer stops filling the body early enough. */
    size_t (*sym_overhead)(const void *keys, size_t chunk_cap);
    /* Secure a finished chunk: [0, header_len) stays clear, [header_len,
     * *len) is the sequence header and body. Writes padding, signature and
     * the MessageSize field, encrypts; *len becomes the chunk's size. */
    uas_status (*sym_protect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                              size_t cap);
    /* Verify and decrypt a received chunk in place; *len becomes the end of
     * the plaintext body (padding and signature removed). */
    uas_status (*sym_unprotect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len);
    /* The same for OPN chunks (asymmetric algorithms). */
    size_t (*asym_overhead)(const void *keys, size_t chunk_cap);
    uas_status (*asym_protect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len,
                               size_t cap);
    uas_status (*asym_unprotect)(void *keys, uint8_t *chunk, size_t header_len, size_t *len);
} uas_secpol;

extern const uas_secpol uas_secpol_none;

#define UAS_SECPOL_NONE_URI "http://opcfoundation.org/UA/SecurityPolicy#None"

/* The policy with this URI among those compiled in, or NULL. */
const uas_secpol *uas_secpol_find(const uint8_t *uri, size_t len);

#endif
