/* Internal to the binary codec: little-endian primitives and wire constants. */
#ifndef UAS_CODEC_INTERNAL_H
#define UAS_CODEC_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <ua/codec.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define UAS_LE16(x)    __builtin_bswap16(x)
#define UAS_LE32(x)    __builtin_bswap32(x)
#define UAS_LE64(x)    __builtin_bswap64(x)
#define UAS_HOST_IS_LE 0
#else
#define UAS_LE16(x)    (x)
#define UAS_LE32(x)    (x)
#define UAS_LE64(x)    (x)
#define UAS_HOST_IS_LE 1
#endif

/* NodeId encoding byte (Part 6, 5.2.2.9) and ExpandedNodeId flags. */
enum {
    NODEID_TWOBYTE = 0x00,
    NODEID_FOURBYTE = 0x01,
    NODEID_NUMERIC = 0x02,
    NODEID_STRING = 0x03,
    NODEID_GUID = 0x04,
    NODEID_BYTESTRING = 0x05,
    NODEID_FLAG_SERVER_INDEX = 0x40,
    NODEID_FLAG_NAMESPACE_URI = 0x80,
};

/* Variant encoding byte. */
enum { VARIANT_TYPE_MASK = 0x3F, VARIANT_DIMENSIONS = 0x40, VARIANT_ARRAY = 0x80 };

/* DataValue mask. */
enum {
    DV_VALUE = 0x01,
    DV_STATUS = 0x02,
    DV_SOURCE_TS = 0x04,
    DV_SERVER_TS = 0x08,
    DV_SOURCE_PICO = 0x10,
    DV_SERVER_PICO = 0x20,
};

/* DiagnosticInfo mask (the wire order differs from the bit order: locale is
 * written before localized text). */
enum {
    DI_SYMBOLIC_ID = 0x01,
    DI_NAMESPACE_URI = 0x02,
    DI_LOCALIZED_TEXT = 0x04,
    DI_LOCALE = 0x08,
    DI_ADDITIONAL_INFO = 0x10,
    DI_INNER_STATUS = 0x20,
    DI_INNER_DIAGNOSTIC = 0x40,
};

/* LocalizedText mask. */
enum { LT_LOCALE = 0x01, LT_TEXT = 0x02 };

/* Bytes on the wire of a fixed-size builtin, 0 for variable-size kinds.
 * Where it equals the C size on a little-endian host, arrays of that type
 * are copied with one memcpy. */
static inline size_t uas_wire_size(uint8_t kind)
{
    switch (kind) {
    case UAS_BUILTIN_BOOLEAN:
    case UAS_BUILTIN_SBYTE:
    case UAS_BUILTIN_BYTE:
        return 1;
    case UAS_BUILTIN_INT16:
    case UAS_BUILTIN_UINT16:
        return 2;
    case UAS_BUILTIN_INT32:
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_FLOAT:
    case UAS_BUILTIN_STATUSCODE:
    case UAS_KIND_ENUM:
        return 4;
    case UAS_BUILTIN_INT64:
    case UAS_BUILTIN_UINT64:
    case UAS_BUILTIN_DOUBLE:
    case UAS_BUILTIN_DATETIME:
        return 8;
    case UAS_BUILTIN_GUID:
        return 16;
    default:
        return 0;
    }
}

/* Fewest bytes any value of type t takes on the wire (a structure: the sum
 * of its members, arrays counting their length field). Computed once per
 * type from the descriptors. */
size_t uas_min_wire_size(const uas_type *t);

/* True when an array of this type is its wire image in memory. */
static inline int uas_is_memcpy_array(const uas_type *t)
{
    return UAS_HOST_IS_LE && t->kind != UAS_BUILTIN_BOOLEAN && uas_wire_size(t->kind) == t->size;
}

#endif
