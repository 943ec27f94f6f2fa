/* Shared checks of the codec tests: whole-value round trips and hex dumps
 * for failure messages. Failures are reported through Criterion asserts. */
#ifndef UAS_TEST_HELPER_CODEC_H
#define UAS_TEST_HELPER_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include <ua/codec.h>

/* Encodes v into a malloc'd buffer of exactly its encoded size (asserting
 * that the encode succeeds and uas_encoded_size is exact). Free with free(). */
uint8_t *th_encode(const void *v, const uas_type *t, size_t *len);

/* encode -> decode into a fresh arena -> uas_equal -> re-encode gives the same
 * bytes, and the decoder consumed every byte. `what` names the value in the
 * failure messages. If out/out_len are given, the encoding is returned there
 * (malloc'd). */
void th_roundtrip(const void *v, const uas_type *t, const char *what, uint8_t **out,
                  size_t *out_len);

/* Asserts that the encoding of v is exactly the given bytes, then round-trips. */
void th_expect_bytes(const void *v, const uas_type *t, const uint8_t *bytes, size_t n,
                     const char *what);

/* "01 02 ff" (at most 64 bytes shown) into a static buffer. */
const char *th_hex(const uint8_t *p, size_t n);

#endif
