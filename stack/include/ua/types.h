/* The OPC UA type system as data. Every builtin, enumeration and structure
 * has a descriptor (uas_type); one generic implementation of
 * init/copy/clear/equal and of the binary codec walks the descriptors.
 * The descriptors of namespace 0 are generated into <ua/types_gen.h>. */
#ifndef UA_TYPES_H
#define UA_TYPES_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/builtin.h>
#include <ua/mem.h>
#include <ua/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Descriptor kinds: 1..25 are the builtin ids; option sets use the kind of
 * their unsigned integer. */
enum {
    UAS_KIND_ENUM = 26,   /* int32 on the wire and in memory */
    UAS_KIND_STRUCT = 27, /* members in order, ExtensionObject-encoded when polymorphic */
};

/* One member of a structure: 8 bytes, not 32 with two pointers, so the
 * 1,162 members of namespace 0 take 9 KB of read-only data instead of 37 KB
 * (the minimal profile's size; and fewer cache lines on the codec's path).
 * The generated structures are far below 64 KiB (the compiler refuses a
 * larger offset constant). */
typedef struct uas_member {
    uint16_t type_index;   /* the member's descriptor in uas_types[]: uas_member_type() */
    uint16_t offset;       /* of the value, or of the element count for arrays */
    uint16_t array_offset; /* of the element pointer (arrays only) */
    bool is_array;         /* size_t count at offset, T* at array_offset */
} uas_member;

typedef struct uas_type {
    const char *name;
    uint32_t type_id;            /* numeric DataType NodeId, namespace 0 */
    uint32_t binary_encoding_id; /* 0 for non-structures */
    uint32_t size;               /* sizeof the C type */
    uint8_t kind;
    bool pointer_free; /* copy and clear with memcpy / nothing */
    uint16_t member_count;
    const uas_member *members;
} uas_type;

/* Generated tables (ua/types_gen.h): uas_types[], UAS_TYPES_COUNT, one
 * index macro per type, e.g. UAS_TYPES_READ_REQUEST, UAS_TYPE(NAME), and
 * uas_member_type(m) (a member's descriptor) and uas_member_name(t, i) (""
 * in a build without member names). */
#include <ua/types_gen.h>

/* Lookup by DataType id or by binary encoding id (binary search over a
 * generated sorted table); NULL when unknown. */
const uas_type *uas_type_by_id(uint32_t type_id);
const uas_type *uas_type_by_encoding_id(uint32_t encoding_id);
const uas_type *uas_type_by_name(const char *name);

/* Generic operations on any value of a described type. Heap-owned values
 * (made with uas_new / uas_copy) are released with uas_clear / uas_delete. */
void uas_init(void *p, const uas_type *t); /* zero = null/empty everywhere */
void *uas_new(const uas_type *t);          /* NULL on out of memory */
void uas_delete(void *p, const uas_type *t);
void uas_clear(void *p, const uas_type *t);
/* Deep copy; on failure dst is left cleared. BadOutOfMemory. */
uas_status uas_copy(const void *src, void *dst, const uas_type *t);
/* Deep copy into an arena (nothing to clear afterwards). */
uas_status uas_copy_arena(const void *src, void *dst, const uas_type *t, uas_arena *a);
bool uas_equal(const void *a, const void *b, const uas_type *t);

/* Arrays of a described type: uas_array_new returns UAS_EMPTY_ARRAY for 0. */
void *uas_array_new(size_t n, const uas_type *t);
void uas_array_delete(void *p, size_t n, const uas_type *t);

/* Variant helpers; the value is referenced, not copied. */
void uas_variant_set_scalar(uas_variant *v, void *p, const uas_type *t);
void uas_variant_set_array(uas_variant *v, void *p, size_t n, const uas_type *t);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
