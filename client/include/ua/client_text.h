/* Text forms for tools and logs (libuaclient): node ids in the notation of
 * OPC UA Part 6, 5.3.1.10 ("i=85", "ns=1;s=Demo", "g=...", "b=..."),
 * timestamps, and a readable printer for any described value. */
#ifndef UA_CLIENT_TEXT_H
#define UA_CLIENT_TEXT_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <ua/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses "[ns=N;]i=123", "[ns=N;]s=text", "[ns=N;]g=xxxxxxxx-xxxx-xxxx-
 * xxxx-xxxxxxxxxxxx" or "[ns=N;]b=<base64>". String and ByteString
 * identifiers are copied into arena, or onto the heap when arena is NULL
 * (release with uas_clear(out, UAS_TYPE(NODE_ID))). BadNodeIdInvalid for
 * any syntax error (out is then null), BadOutOfMemory. */
uas_status uas_nodeid_parse(const char *text, uas_nodeid *out, uas_arena *arena);

/* The text form of a node id (what uas_nodeid_parse reads), NUL-terminated
 * in buf and truncated to size; returns the length of the whole text like
 * snprintf. */
size_t uas_nodeid_format(const uas_nodeid *id, char *buf, size_t size);
/* With "svr=N;" and "nsu=URI;" prefixes when the server index or the
 * namespace URI is set. */
size_t uas_expandednodeid_format(const uas_expandednodeid *id, char *buf, size_t size);
/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower case; parsing accepts
 * both cases). BadNodeIdInvalid when text is not exactly a GUID. */
size_t uas_guid_format(const uas_guid *g, char *buf, size_t size);
uas_status uas_guid_parse(const char *text, size_t len, uas_guid *out);
/* The shortest decimal text that reads back as the same double (or, with
 * single, float); NaN, Infinity, -Infinity by name. Returns the length
 * like snprintf. */
size_t uas_real_format(double v, bool single, char *buf, size_t size);
/* ISO 8601 in UTC with milliseconds, "2024-05-01T12:34:56.789Z". */
size_t uas_datetime_format(uas_datetime t, char *buf, size_t size);

/* Writes a readable form of the value p of type t: numbers, quoted
 * strings, node ids as text, status codes by name, arrays in brackets,
 * structures (also inside Variants and ExtensionObjects) by type name with
 * one member per line. indent is the column of the line the value starts
 * on; nested lines are indented two more per level. No final newline. */
void uas_value_print(FILE *f, const void *p, const uas_type *t, int indent);
/* A Variant as "<Type> <value>", "<Type>[n] [...]" or "empty". */
void uas_variant_print(FILE *f, const uas_variant *v, int indent);

/* The same values as JSON on one line, in the shapes of the OPC UA JSON
 * encoding where they are plain: structures as objects, node ids and
 * timestamps as text, status codes by name, 64-bit integers and ByteStrings
 * (base64) as strings, Variants as {"Type": name, "Body": value}. */
void uas_value_print_json(FILE *f, const void *p, const uas_type *t);
void uas_variant_print_json(FILE *f, const uas_variant *v);
/* A JSON string of len bytes (UTF-8 passes, controls escaped); null for
 * NULL. */
void uas_json_string(FILE *f, const uint8_t *s, size_t len);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
