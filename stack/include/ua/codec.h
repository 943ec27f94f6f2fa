/* OPC UA binary encoding (Part 6, 5.2) for any described type.
 *
 * Decoding never trusts a length: every array, string and nesting level is
 * checked against uas_limits and against the bytes actually left, and all
 * memory comes from the caller's arena. Encoding writes into the caller's
 * buffer; when it is full the flush callback may hand over a fresh one (the
 * transport sends the full chunk), so a message of any size streams out in
 * chunk-sized pieces without an intermediate copy. */
#ifndef UA_CODEC_H
#define UA_CODEC_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/mem.h>
#include <ua/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_limits {
    uint32_t max_array_length;  /* elements in one array */
    uint32_t max_string_length; /* bytes in one String/ByteString/XmlElement */
    uint16_t max_depth;         /* nesting of Variant/ExtensionObject/DiagnosticInfo */
    size_t max_message_size;    /* bytes of one encoded message (0 = unlimited) */
} uas_limits;

/* 1,000,000 elements, 16 MiB strings, depth 64, 16 MiB messages. */
extern const uas_limits uas_limits_default;

typedef struct uas_decoder {
    const uint8_t *pos;
    const uint8_t *end;
    uas_arena *arena;
    const uas_limits *limits;
    uint16_t depth;
    /* Strings and ByteStrings point into the input buffer instead of being
     * copied; only valid while that buffer outlives the decoded value. */
    bool zero_copy;
} uas_decoder;

void uas_decoder_init(uas_decoder *d, const void *buf, size_t len, uas_arena *arena,
                      const uas_limits *limits);
/* Decode one value of type t at d->pos into dst (uninitialised memory of
 * t->size bytes). Returns Good, BadDecodingError (malformed or truncated),
 * BadEncodingLimitsExceeded (a limit of d->limits) or BadOutOfMemory (the
 * arena). On error dst holds no pointers that must be freed. */
uas_status uas_decode(uas_decoder *d, void *dst, const uas_type *t);

/* Called when the encoder's buffer is full: consume the bytes written so far
 * and point *pos and *end at fresh space. Any error status aborts the encoding. */
typedef uas_status (*uas_encoder_flush_fn)(void *ud, uint8_t **pos, uint8_t **end);

typedef struct uas_encoder {
    uint8_t *pos;
    uint8_t *end;
    uas_encoder_flush_fn flush; /* NULL: a full buffer is an error */
    void *flush_ud;
    const uas_limits *limits;
    uint16_t depth;
    bool full; /* set when the buffer ran out with no flush callback */
} uas_encoder;

void uas_encoder_init(uas_encoder *e, void *buf, size_t len, const uas_limits *limits);
/* Good, BadEncodingLimitsExceeded (buffer full with no flush, or a limit),
 * BadEncodingError (a value that cannot be encoded, e.g. a Variant of a type
 * without a binary encoding), or whatever the flush callback returned. */
uas_status uas_encode(uas_encoder *e, const void *src, const uas_type *t);

/* Exact encoded size of a value, or SIZE_MAX if it cannot be encoded. */
size_t uas_encoded_size(const void *src, const uas_type *t);

/* Whole-buffer helpers. */
uas_status uas_decode_binary(const void *buf, size_t len, void *dst, const uas_type *t,
                             uas_arena *arena, const uas_limits *limits, size_t *consumed);
uas_status uas_encode_binary(const void *src, const uas_type *t, void *buf, size_t cap,
                             size_t *written);

/* Primitive writers/readers shared with the transport (headers, lengths). */
uas_status uas_encode_bytes(uas_encoder *e, const void *src, size_t n);
uas_status uas_decode_bytes(uas_decoder *d, void *dst, size_t n);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
