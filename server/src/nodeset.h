/* NodeSet2 loading (Part 6, Annex F): files parsed with expat into staged
 * nodes, resolved across files, checked, then committed to the address
 * space in one step, so a server never runs with half a model.
 *
 * Stages (nodeset_load.c drives them):
 *   parse    nodeset_xml.c    one file at a time, streaming; NodeIds and
 *                             aliases resolved as they are read
 *   order    nodeset_load.c   files sorted by <RequiredModel>
 *   check    nodeset_load.c   duplicates, reference targets and types,
 *                             type hierarchy cycles, values (nodeset_value.c)
 *   commit   nodeset_load.c   nodes inserted, references added both ways
 *
 * Errors name the file and line: "Opc.Ua.Di.NodeSet2.xml:120: unknown
 * alias 'Foo'". */
#ifndef UAS_NODESET_H
#define UAS_NODESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aspace_internal.h"

typedef struct ns_limits {
    size_t max_file_size; /* bytes of one file */
    size_t max_nodes;     /* nodes of one load (all files) */
    uint32_t max_depth;   /* XML element nesting */
    bool persist;         /* the nodes belong to the NodeManagement store */
} ns_limits;

/* A captured XML subtree (<Value>, <Definition>): element local names,
 * attributes, text. Memory from the load's arena. */
typedef struct ns_dom ns_dom;
struct ns_dom {
    const char *name;
    const char **attrs; /* name, value, ..., NULL */
    char *text;
    size_t text_len;
    ns_dom *child, *last, *next;
    uint32_t line;
};
const char *ns_dom_attr(const ns_dom *d, const char *name);
const ns_dom *ns_dom_child(const ns_dom *d, const char *name);

typedef struct ns_sref {
    uas_nodeid type;
    uas_nodeid target;
    bool forward;
    uint32_t line;
} ns_sref;

/* One node of a file, built as far as the file alone allows. */
typedef struct ns_item {
    as_node *n;
    ns_sref *refs;
    size_t ref_count, ref_cap;
    ns_dom *value;
    ns_dom *definition;
    uint32_t line;
    struct ns_file *file;
    /* Check stage: the supertype (HasSubtype written on either node). */
    uas_nodeid super;
    bool has_super;
    uint32_t mark;    /* cycle walk */
    uint32_t reftype; /* ReferenceTypes: uint32 id once registered */
} ns_item;

typedef struct ns_model {
    const char *uri;
    const char *version;
} ns_model;

typedef struct ns_file {
    const char *path;
    const char *name; /* basename, for messages */
    /* File namespace index -> server index (index 0 is namespace 0). */
    uint16_t *ns_map;
    size_t ns_count;
    char **ns_uris;
    ns_model *models;
    size_t model_count;
    ns_model *required;
    size_t required_count;
    ns_item *items;
    size_t item_count, item_cap;
    bool loaded;         /* ordering: already placed */
    const void *aliases; /* parse-time table, kept for <Definition> fields */
    size_t alias_count;
} ns_file;

typedef struct ns_load {
    uas_server *server;
    uas_aspace *as;
    ns_limits limits;
    uas_arena arena; /* strings, DOM and staging of the whole load */
    ns_file *files;
    size_t file_count;
    size_t node_total;
    char *err;
    size_t err_len;
    uas_status st;
    /* Namespace URIs new to the server, in the order they get indices. */
    char **new_uris;
    size_t new_uri_count;
    uint16_t ns_base; /* the server's namespace count when the load began */
    /* Staged nodes by NodeId (open addressing). */
    ns_item **index;
    size_t index_cap;
} ns_load;

/* Record the first error as "file:line: reason" (later ones are ignored)
 * and return st. */
uas_status ns_fail(ns_load *l, const ns_file *f, uint32_t line, uas_status st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
char *ns_strdup(ns_load *l, const char *s, size_t n);

/* The server index of a namespace URI: the server's, or the index it will
 * get when the load commits (nodeset_load.c). */
uas_status ns_map_uri(ns_load *l, const char *uri, uint16_t *out);
/* nodeset_load.c: the load behind uas_server_load_nodesets, with the first
 * error's text in err. */
uas_status uas__nodeset_load(uas_server *s, const char *const *paths, size_t count,
                             const ns_limits *limits, char *err, size_t err_len);
/* nodeset_value.c: a value of a generated type from its XML element. */
uas_status ns_parse_xml_value(ns_load *l, ns_file *f, const ns_dom *d, const uas_type *t, void *dst,
                              uint32_t depth);
bool ns_parse_guid(const char *s, size_t n, uas_guid *g);
uas_status ns_base64(const char *s, size_t n, uas_bytestring *out);

/* nodeset_xml.c: parse one file into f (f->path set). */
uas_status ns_parse_file(ns_load *l, ns_file *f);
/* A NodeId in the file's text form ("ns=1;i=5", "i=5", "s=..", "g=..",
 * "b=..") or an alias, mapped to the server's namespaces. Heap strings. */
uas_status ns_parse_nodeid(ns_load *l, ns_file *f, const char *text, uint32_t line,
                           uas_nodeid *out);

/* The same for text that may be an alias (attributes of <Field>). */
uas_status ns_resolve_nodeid(ns_load *l, ns_file *f, const char *text, uint32_t line,
                             uas_nodeid *out);

/* nodeset_value.c: the <Value> of a variable or variable type as a heap
 * Variant checked against its DataType and ValueRank. */
uas_status ns_build_value(ns_load *l, ns_item *it, uas_variant *out);

/* nodeset_types.c: run-time types from <Definition> elements. */
/* The DataTypeDefinition (a Variant of an ExtensionObject holding a
 * StructureDefinition or EnumDefinition) of a DataType item; heap. */
uas_status ns_build_definition(ns_load *l, ns_item *it, uas_variant *out);
/* Encode the XML body of a structure of a loaded DataType (the element
 * under <Body>) in OPC UA binary into out (heap ByteString). */
uas_status ns_encode_struct(ns_load *l, ns_file *f, const uas_nodeid *data_type, const ns_dom *body,
                            uas_bytestring *out, uint32_t depth);
/* The staged or existing node with this id (NULL if none). */
ns_item *ns_find_item(ns_load *l, const uas_nodeid *id);
/* The ns0 DataType a (possibly loaded) DataType derives from; 0 if none. */
uint32_t ns_ns0_base(ns_load *l, const uas_nodeid *dt);
/* The binary encoding node of a structured DataType (null id if none). */
uas_nodeid ns_binary_encoding(ns_load *l, const uas_nodeid *dt);

/* nodeset_write.c: the NodeManagement store's nodes (marked persist) as
 * NodeSet2 text, heap (*text, free()). Takes the address space's read
 * lock. Good or BadOutOfMemory. */
uas_status ns_store_text(uas_server *s, char **text, size_t *len, size_t *nodes);

#endif
