/* The NodeManagement store's text (nodeset_store.c): the persisted heap
 * nodes as a NodeSet2 document, read by the same loader as any model.
 *
 * The file's namespace indices are the server's (its NamespaceUris list
 * the server's array from index 1), so NodeIds are written as they are.
 * Values: builtin scalars and one-dimensional arrays (Boolean .. Double,
 * String, DateTime, Guid, ByteString, NodeId, StatusCode, QualifiedName,
 * LocalizedText); a value of another type is left out with a warning.
 * References: every one stored on the node whose target is a local node
 * that exists (a dangling one, left by DeleteNodes without
 * deleteTargetReferences, would make the file unloadable). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nodeset.h"

/* ---- text building ---- */

typedef struct buf {
    char *p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *g = realloc(b->p, cap);
        if (!g) {
            b->oom = true;
            return;
        }
        b->p = g;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* A string literal, its length counted by the compiler. */
#define PUTS(b, lit) put((b), (lit), sizeof(lit) - 1)

static void putf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(buf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(tmp)) {
        put(b, tmp, (size_t)n);
        return;
    }
    b->oom = true; /* only short numbers go through here */
}

/* XML-escaped text (attribute values and element text alike). */
static void put_esc(buf *b, const uint8_t *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '&'                                   ? "&amp;"
                        : s[i] == '<'                                 ? "&lt;"
                        : s[i] == '>'                                 ? "&gt;"
                        : s[i] == '"'                                 ? "&quot;"
                        : s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' ? "" /* not XML 1.0 */
                                                                      : NULL;
        if (!e)
            continue;
        put(b, (const char *)s + from, i - from);
        put(b, e, strlen(e));
        from = i + 1;
    }
    put(b, (const char *)s + from, n - from);
}

static void put_str(buf *b, const uas_string *s)
{
    if (s->data)
        put_esc(b, s->data, s->length);
}

static void put_base64(buf *b, const uint8_t *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=',
                     i + 2 < n ? t[v & 63] : '='};
        put(b, q, 4);
    }
}

static void put_guid(buf *b, const uas_guid *g)
{
    putf(b, "%08" PRIx32 "-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", g->data1, g->data2,
         g->data3, g->data4[0], g->data4[1], g->data4[2], g->data4[3], g->data4[4], g->data4[5],
         g->data4[6], g->data4[7]);
}

/* The text form of a NodeId, the file's namespace indices being the
 * server's. */
static void put_nodeid(buf *b, const uas_nodeid *id)
{
    if (id->ns)
        putf(b, "ns=%u;", id->ns);
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        putf(b, "i=%" PRIu32, id->id.numeric);
        break;
    case UAS_NODEID_STRING:
        PUTS(b, "s=");
        put_str(b, &id->id.string);
        break;
    case UAS_NODEID_GUID:
        PUTS(b, "g=");
        put_guid(b, &id->id.guid);
        break;
    default:
        PUTS(b, "b=");
        put_base64(b, id->id.bytestring.data,
                   id->id.bytestring.data ? id->id.bytestring.length : 0);
        break;
    }
}

static void put_text_elem(buf *b, const char *name, const uas_localizedtext *t)
{
    if (!t->text.data)
        return;
    putf(b, "    <%s", name);
    if (t->locale.data && t->locale.length) {
        PUTS(b, " Locale=\"");
        put_str(b, &t->locale);
        PUTS(b, "\"");
    }
    PUTS(b, ">");
    put_str(b, &t->text);
    putf(b, "</%s>\n", name);
}

/* ---- values ---- */

static bool value_writable(const uas_type *t)
{
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
    case UAS_BUILTIN_SBYTE:
    case UAS_BUILTIN_BYTE:
    case UAS_BUILTIN_INT16:
    case UAS_BUILTIN_UINT16:
    case UAS_BUILTIN_INT32:
    case UAS_BUILTIN_UINT32:
    case UAS_BUILTIN_INT64:
    case UAS_BUILTIN_UINT64:
    case UAS_BUILTIN_FLOAT:
    case UAS_BUILTIN_DOUBLE:
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_DATETIME:
    case UAS_BUILTIN_GUID:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_NODEID:
    case UAS_BUILTIN_STATUSCODE:
    case UAS_BUILTIN_QUALIFIEDNAME:
    case UAS_BUILTIN_LOCALIZEDTEXT:
        return true;
    default:
        return false;
    }
}

static void put_double(buf *b, double v, int digits)
{
    if (isnan(v))
        PUTS(b, "NaN");
    else if (isinf(v))
        put(b, v < 0 ? "-INF" : "INF", v < 0 ? 4 : 3);
    else
        putf(b, "%.*g", digits, v);
}

static void put_datetime(buf *b, uas_datetime dt)
{
    int64_t ticks = dt - UAS_DATETIME_UNIX_EPOCH;
    int64_t secs = ticks >= 0 ? ticks / 10000000 : -((-ticks + 9999999) / 10000000);
    int64_t frac = ticks - secs * 10000000;
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 1601) {
        PUTS(b, "1601-01-01T00:00:00Z");
        return;
    }
    putf(b, "%04d-%02d-%02dT%02d:%02d:%02d.%07" PRId64 "Z", tm.tm_year + 1900, tm.tm_mon + 1,
         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static void put_scalar(buf *b, const uas_type *t, const void *p)
{
    putf(b, "<%s>", t->name);
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        put(b, *(const bool *)p ? "true" : "false", *(const bool *)p ? 4 : 5);
        break;
    case UAS_BUILTIN_SBYTE:
        putf(b, "%d", *(const int8_t *)p);
        break;
    case UAS_BUILTIN_BYTE:
        putf(b, "%u", *(const uint8_t *)p);
        break;
    case UAS_BUILTIN_INT16:
        putf(b, "%d", *(const int16_t *)p);
        break;
    case UAS_BUILTIN_UINT16:
        putf(b, "%u", *(const uint16_t *)p);
        break;
    case UAS_BUILTIN_INT32:
        putf(b, "%" PRId32, *(const int32_t *)p);
        break;
    case UAS_BUILTIN_UINT32:
        putf(b, "%" PRIu32, *(const uint32_t *)p);
        break;
    case UAS_BUILTIN_INT64:
        putf(b, "%" PRId64, *(const int64_t *)p);
        break;
    case UAS_BUILTIN_UINT64:
        putf(b, "%" PRIu64, *(const uint64_t *)p);
        break;
    case UAS_BUILTIN_FLOAT:
        put_double(b, *(const float *)p, 9);
        break;
    case UAS_BUILTIN_DOUBLE:
        put_double(b, *(const double *)p, 17);
        break;
    case UAS_BUILTIN_STRING:
        put_str(b, p);
        break;
    case UAS_BUILTIN_DATETIME:
        put_datetime(b, *(const uas_datetime *)p);
        break;
    case UAS_BUILTIN_GUID:
        PUTS(b, "<String>");
        put_guid(b, p);
        PUTS(b, "</String>");
        break;
    case UAS_BUILTIN_BYTESTRING: {
        const uas_bytestring *s = p;
        put_base64(b, s->data, s->data ? s->length : 0);
        break;
    }
    case UAS_BUILTIN_NODEID:
        PUTS(b, "<Identifier>");
        put_nodeid(b, p);
        PUTS(b, "</Identifier>");
        break;
    case UAS_BUILTIN_STATUSCODE:
        putf(b, "<Code>%" PRIu32 "</Code>", *(const uint32_t *)p);
        break;
    case UAS_BUILTIN_QUALIFIEDNAME: {
        const uas_qualifiedname *q = p;
        putf(b, "<NamespaceIndex>%u</NamespaceIndex><Name>", q->ns);
        put_str(b, &q->name);
        PUTS(b, "</Name>");
        break;
    }
    default: { /* LocalizedText */
        const uas_localizedtext *l = p;
        PUTS(b, "<Locale>");
        put_str(b, &l->locale);
        PUTS(b, "</Locale><Text>");
        put_str(b, &l->text);
        PUTS(b, "</Text>");
        break;
    }
    }
    putf(b, "</%s>", t->name);
}

/* A Variable's or VariableType's value; false when its type cannot be
 * written (structures): the node is stored without it. */
static bool put_value(buf *b, const uas_variant *v)
{
    if (!v->type || !value_writable(v->type) || (v->is_array && v->array_dimensions_length > 1))
        return false;
    PUTS(b, "    <Value>");
    if (!v->is_array) {
        put_scalar(b, v->type, v->data);
    } else {
        putf(b, "<ListOf%s>", v->type->name);
        for (size_t i = 0; i < v->array_length; i++)
            put_scalar(b, v->type, (const uint8_t *)v->data + i * v->type->size);
        putf(b, "</ListOf%s>", v->type->name);
    }
    PUTS(b, "</Value>\n");
    return true;
}

/* ---- nodes ---- */

static const char *element_of(uint8_t cls)
{
    switch (cls) {
    case UAS_NODE_CLASS_OBJECT:
        return "UAObject";
    case UAS_NODE_CLASS_VARIABLE:
        return "UAVariable";
    case UAS_NODE_CLASS_METHOD:
        return "UAMethod";
    case UAS_NODE_CLASS_OBJECT_TYPE:
        return "UAObjectType";
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        return "UAVariableType";
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        return "UAReferenceType";
    case UAS_NODE_CLASS_DATA_TYPE:
        return "UADataType";
    case UAS_NODE_CLASS_VIEW:
        return "UAView";
    default:
        return NULL;
    }
}

static void put_definition(buf *b, const as_node *n)
{
    const uas_variant *d = as_definition(n);
    if (!d->type || !d->data)
        return;
    PUTS(b, "    <Definition Name=\"");
    put_str(b, &n->browse_name.name);
    PUTS(b, "\"");
    if (d->type == UAS_TYPE(STRUCTURE_DEFINITION)) {
        const uas_structure_definition *sd = d->data;
        if (sd->structure_type == UAS_STRUCTURE_TYPE_UNION)
            PUTS(b, " IsUnion=\"true\"");
        PUTS(b, ">\n");
        for (size_t i = 0; i < sd->fields_count; i++) {
            const uas_structure_field *f = &sd->fields[i];
            PUTS(b, "      <Field Name=\"");
            put_str(b, &f->name);
            PUTS(b, "\" DataType=\"");
            put_nodeid(b, &f->data_type);
            putf(b, "\" ValueRank=\"%" PRId32 "\"%s />\n", f->value_rank,
                 f->is_optional ? " IsOptional=\"true\"" : "");
        }
    } else {
        const uas_enum_definition *ed = d->data;
        PUTS(b, ">\n");
        for (size_t i = 0; i < ed->fields_count; i++) {
            PUTS(b, "      <Field Name=\"");
            put_str(b, &ed->fields[i].name);
            putf(b, "\" Value=\"%" PRId64 "\" />\n", ed->fields[i].value);
        }
    }
    PUTS(b, "    </Definition>\n");
}

static void put_node(uas_aspace *as, buf *b, const as_node *n)
{
    const char *el = element_of(n->node_class);
    if (!el)
        return;
    putf(b, "  <%s NodeId=\"", el);
    put_nodeid(b, &n->id);
    putf(b, "\" BrowseName=\"%u:", n->browse_name.ns);
    put_str(b, &n->browse_name.name);
    PUTS(b, "\"");
    if (n->write_mask)
        putf(b, " WriteMask=\"%" PRIu32 "\"", n->write_mask);
    switch (n->node_class) {
    case UAS_NODE_CLASS_VARIABLE:
    case UAS_NODE_CLASS_VARIABLE_TYPE: {
        const as_var *v = as_var_of(n);
        PUTS(b, " DataType=\"");
        put_nodeid(b, &v->data_type);
        putf(b, "\" ValueRank=\"%" PRId32 "\"", v->value_rank);
        if (v->array_dims_count) {
            PUTS(b, " ArrayDimensions=\"");
            for (uint32_t i = 0; i < v->array_dims_count; i++)
                putf(b, "%s%" PRIu32, i ? "," : "", v->array_dims[i]);
            PUTS(b, "\"");
        }
        if (n->node_class == UAS_NODE_CLASS_VARIABLE) {
            putf(b, " AccessLevel=\"%u\" UserAccessLevel=\"%u\"", v->access_level,
                 v->user_access_level);
            if (v->historizing)
                PUTS(b, " Historizing=\"true\"");
            if (v->min_sampling != 0)
                putf(b, " MinimumSamplingInterval=\"%.17g\"", v->min_sampling);
        }
        break;
    }
    case UAS_NODE_CLASS_METHOD:
        if (!as_meth_of(n)->executable)
            PUTS(b, " Executable=\"false\"");
        if (!as_meth_of(n)->user_executable)
            PUTS(b, " UserExecutable=\"false\"");
        break;
    case UAS_NODE_CLASS_OBJECT:
        if (n->event_notifier)
            putf(b, " EventNotifier=\"%u\"", n->event_notifier);
        break;
    case UAS_NODE_CLASS_VIEW:
        if (n->event_notifier)
            putf(b, " EventNotifier=\"%u\"", n->event_notifier);
        if (n->contains_no_loops)
            PUTS(b, " ContainsNoLoops=\"true\"");
        break;
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        if (n->symmetric)
            PUTS(b, " Symmetric=\"true\"");
        break;
    default:
        break;
    }
    if (n->node_class >= UAS_NODE_CLASS_OBJECT_TYPE && n->node_class != UAS_NODE_CLASS_VIEW &&
        n->is_abstract)
        PUTS(b, " IsAbstract=\"true\"");
    PUTS(b, ">\n");
    uas_localizedtext dn = as_node_dn(n), desc = as_node_desc(n);
    put_text_elem(b, "DisplayName", &dn);
    put_text_elem(b, "Description", &desc);
    if (n->node_class == UAS_NODE_CLASS_REFERENCE_TYPE) {
        uas_localizedtext inv = as_inverse_name(n);
        put_text_elem(b, "InverseName", &inv);
    }
    PUTS(b, "    <References>\n");
    as_nv nv = {NULL, (as_node *)n};
    size_t count = as_nv_ref_count(&nv);
    as_refv r;
    for (size_t i = 0; i < count; i++) {
        as_nv_ref(&nv, i, &r);
        if (r.target.server_index || r.target.namespace_uri.data)
            continue; /* NodeSet2 References name local nodes */
        as_nv t = as_lookup(as, &r.target.nodeid);
        if (!as_nv_found(&t))
            continue; /* dangling (deleteTargetReferences false) */
        uas_nodeid type = as_reftype_nodeid(as, r.type);
        PUTS(b, "      <Reference ReferenceType=\"");
        put_nodeid(b, &type);
        put(b, r.forward ? "\">" : "\" IsForward=\"false\">", r.forward ? 2 : 20);
        put_nodeid(b, &r.target.nodeid);
        PUTS(b, "</Reference>\n");
    }
    PUTS(b, "    </References>\n");
    /* The stored value as a Read sees it (a data source's belongs to the
     * program, which gives it again after a restart). */
    as_var *var = as_var_of(n);
    if (var && atomic_load_explicit(&var->vsnap, memory_order_acquire) && !as_node_dsrc(n)) {
        uas_arena a;
        uas_arena_init(&a, NULL, 0, 0);
        uas_datavalue dv;
        memset(&dv, 0, sizeof(dv));
        as_range whole;
        memset(&whole, 0, sizeof(whole));
        if (as_read_value(as, &nv, &whole, &dv, &a) == UAS_GOOD && dv.value.type &&
            !put_value(b, &dv.value))
            uas_log(UAS_LOG_WARN, "nodeset", "store: a value of type %s is not stored",
                    dv.value.type->name);
        uas_arena_free(&a);
    }
    put_definition(b, n);
    putf(b, "  </%s>\n", el);
}

uas_status ns_store_text(uas_server *s, char **text, size_t *len, size_t *nodes)
{
    buf bb = {NULL, 0, 0, false}, *b = &bb;
    PUTS(b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    put(b,
        "<!-- uaserver's NodeManagement store: written by the server, replaced on every "
        "change -->\n",
        90);
    PUTS(b, "<UANodeSet xmlns=\"http://opcfoundation.org/UA/2011/03/UANodeSet.xsd\">\n");
    PUTS(b, "  <NamespaceUris>\n");
    pthread_mutex_lock(&s->ns_lock);
    for (size_t i = 1; i < s->namespace_count; i++) {
        PUTS(b, "    <Uri>");
        put_esc(b, (const uint8_t *)s->namespaces[i], strlen(s->namespaces[i]));
        PUTS(b, "</Uri>\n");
    }
    pthread_mutex_unlock(&s->ns_lock);
    PUTS(b, "  </NamespaceUris>\n");
    uas_aspace *as = s->as;
    *nodes = 0;
    /* The read lock keeps the nodes and the table in place; the read-side
     * section keeps the value snapshots a Write may replace meanwhile. */
    as_rdlock(as);
    as_table *t = atomic_load_explicit(&as->table, memory_order_acquire);
    for (size_t i = 0; i < t->count; i++)
        for (as_node *n = atomic_load_explicit(&t->b[i], memory_order_acquire); n;
             n = atomic_load_explicit(&n->next, memory_order_acquire))
            if (n->persist && !n->deleted) {
                int tok = as_rcu_enter(&as->rcu);
                put_node(as, b, n);
                as_rcu_exit(&as->rcu, tok);
                (*nodes)++;
            }
    as_unlock(as);
    PUTS(b, "</UANodeSet>\n");
    if (b->oom) {
        free(b->p);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    *text = b->p;
    *len = b->n;
    return UAS_GOOD;
}
