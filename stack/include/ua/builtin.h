/* The 25 builtin types of OPC UA Part 6, as value types with visible layouts.
 *
 * Null versus empty: a string or array whose data pointer is NULL is null (-1
 * on the wire); an empty one has length 0 and points to UAS_EMPTY_ARRAY. */
#ifndef UA_BUILTIN_H
#define UA_BUILTIN_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UAS_EMPTY_ARRAY ((void *)0x01)

/* Builtin type ids (Part 6, 5.1.2); also the kind of their type descriptors. */
enum {
    UAS_BUILTIN_BOOLEAN = 1,
    UAS_BUILTIN_SBYTE = 2,
    UAS_BUILTIN_BYTE = 3,
    UAS_BUILTIN_INT16 = 4,
    UAS_BUILTIN_UINT16 = 5,
    UAS_BUILTIN_INT32 = 6,
    UAS_BUILTIN_UINT32 = 7,
    UAS_BUILTIN_INT64 = 8,
    UAS_BUILTIN_UINT64 = 9,
    UAS_BUILTIN_FLOAT = 10,
    UAS_BUILTIN_DOUBLE = 11,
    UAS_BUILTIN_STRING = 12,
    UAS_BUILTIN_DATETIME = 13,
    UAS_BUILTIN_GUID = 14,
    UAS_BUILTIN_BYTESTRING = 15,
    UAS_BUILTIN_XMLELEMENT = 16,
    UAS_BUILTIN_NODEID = 17,
    UAS_BUILTIN_EXPANDEDNODEID = 18,
    UAS_BUILTIN_STATUSCODE = 19,
    UAS_BUILTIN_QUALIFIEDNAME = 20,
    UAS_BUILTIN_LOCALIZEDTEXT = 21,
    UAS_BUILTIN_EXTENSIONOBJECT = 22,
    UAS_BUILTIN_DATAVALUE = 23,
    UAS_BUILTIN_VARIANT = 24,
    UAS_BUILTIN_DIAGNOSTICINFO = 25,
};

/* 100 ns ticks since 1601-01-01 UTC. */
typedef int64_t uas_datetime;
#define UAS_DATETIME_UNIX_EPOCH 116444736000000000LL /* 1970-01-01 */
#define UAS_DATETIME_MSEC       10000LL
uas_datetime uas_datetime_now(void); /* system clock */
int64_t uas_monotonic_ms(void);      /* CLOCK_MONOTONIC in ms */
/* Cryptographically strong random bytes from the kernel. */
void uas_random_bytes(void *p, size_t n);

typedef struct uas_string {
    size_t length;
    uint8_t *data; /* NULL: null string; UAS_EMPTY_ARRAY when length is 0 */
} uas_string;

typedef uas_string uas_bytestring;
typedef uas_string uas_xmlelement;

typedef struct uas_guid {
    uint32_t data1;
    uint16_t data2;
    uint16_t data3;
    uint8_t data4[8];
} uas_guid;

typedef enum uas_nodeid_kind {
    UAS_NODEID_NUMERIC = 0,
    UAS_NODEID_STRING = 1,
    UAS_NODEID_GUID = 2,
    UAS_NODEID_BYTESTRING = 3,
} uas_nodeid_kind;

/* The encoder always picks the most compact wire form of a numeric id. */
typedef struct uas_nodeid {
    uint16_t ns;
    uint8_t kind; /* uas_nodeid_kind */
    union {
        uint32_t numeric;
        uas_string string;
        uas_guid guid;
        uas_bytestring bytestring;
    } id;
} uas_nodeid;

typedef struct uas_expandednodeid {
    uas_nodeid nodeid;
    uas_string namespace_uri; /* non-null: encoded with the URI flag */
    uint32_t server_index;    /* non-zero: encoded with the server index flag */
} uas_expandednodeid;

typedef struct uas_qualifiedname {
    uint16_t ns;
    uas_string name;
} uas_qualifiedname;

/* A null locale or text is absent from the encoding mask. */
typedef struct uas_localizedtext {
    uas_string locale;
    uas_string text;
} uas_localizedtext;

struct uas_type;

typedef enum uas_extobj_encoding {
    UAS_EXTOBJ_EMPTY = 0,      /* no body */
    UAS_EXTOBJ_BYTESTRING = 1, /* binary body of an unknown type, kept as bytes */
    UAS_EXTOBJ_XML = 2,        /* XML body, kept as bytes */
    UAS_EXTOBJ_DECODED = 3,    /* body decoded into content.decoded */
} uas_extobj_encoding;

typedef struct uas_extensionobject {
    uint8_t encoding; /* uas_extobj_encoding */
    union {
        struct {
            uas_nodeid type_id; /* the encoding id on the wire */
            uas_bytestring body;
        } encoded;
        struct {
            const struct uas_type *type;
            void *data;
        } decoded;
    } content;
} uas_extensionobject;

/* A Variant holds a scalar or an array of one type. Structures are held
 * decoded, with their own descriptor; the codec wraps them into
 * ExtensionObjects on the wire. Enumerations travel as Int32. */
typedef struct uas_variant {
    const struct uas_type *type; /* NULL: empty variant */
    void *data;                  /* scalar: one value; array: the elements */
    size_t array_length;
    bool is_array;
    size_t array_dimensions_length;
    uint32_t *array_dimensions; /* NULL: no dimensions on the wire */
} uas_variant;

typedef struct uas_datavalue {
    uas_variant value;
    uas_status status;
    uas_datetime source_timestamp;
    uas_datetime server_timestamp;
    uint16_t source_picoseconds;
    uint16_t server_picoseconds;
    bool has_value;
    bool has_status;
    bool has_source_timestamp;
    bool has_server_timestamp;
    bool has_source_picoseconds;
    bool has_server_picoseconds;
} uas_datavalue;

typedef struct uas_diagnosticinfo {
    int32_t symbolic_id;
    int32_t namespace_uri;
    int32_t localized_text;
    int32_t locale;
    uas_string additional_info;
    uas_status inner_status;
    struct uas_diagnosticinfo *inner_diagnostic_info;
    bool has_symbolic_id;
    bool has_namespace_uri;
    bool has_localized_text;
    bool has_locale;
    bool has_additional_info;
    bool has_inner_status;
    bool has_inner_diagnostic_info;
} uas_diagnosticinfo;

/* Convenience constructors; the strings they make point at static or caller
 * memory (no copy). */
uas_string uas_string_from(const char *cstr);
uas_nodeid uas_nodeid_numeric(uint16_t ns, uint32_t id);
uas_nodeid uas_nodeid_string(uint16_t ns, const char *id);
bool uas_string_eq_cstr(const uas_string *s, const char *cstr);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
