/* NodeSet2 parsing with expat: one pass over the file, fed in 64 KiB
 * pieces, so memory follows the nodes kept, not the file size.
 *
 * NamespaceUris, Models and Aliases come before the nodes in every
 * NodeSet2 file (the schema's sequence), so each node's NodeId, BrowseName,
 * DataType and reference targets are resolved while it is read. What needs
 * the other nodes (reference types, targets, values, definitions) is kept
 * (references as NodeIds, <Value> and <Definition> as small DOM trees) for
 * the check stage. expat reads no external entities or DTDs here, and its
 * amplification limits (2.4+) stop entity bombs. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#ifndef UAS_MINIMAL
#include <expat.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nodeset.h"

typedef struct ns_alias {
    const char *name;
    const char *value;
} ns_alias;

#ifndef UAS_MINIMAL
#define NS_SEP '|'

typedef struct px {
    ns_load *l;
    ns_file *f;
    XML_Parser p;
    uint32_t depth;
    /* Text of the element being read (Uri, Alias, DisplayName, ...). */
    char *text;
    size_t text_len, text_cap;
    bool want_text;
    /* Context. */
    bool in_uris, in_models, in_aliases;
    ns_item *cur;           /* node being read */
    uint32_t cur_depth;     /* depth of its element */
    const char *alias_name; /* <Alias Alias=".."> */
    ns_sref ref;            /* <Reference> being read */
    bool ref_has_type;
    const char *text_for; /* which element wants the text */
    const char *locale;   /* of DisplayName / Description / InverseName */
    /* DOM capture of <Value> / <Definition>. */
    ns_dom *dom_root;
    ns_dom *dom_stack[64];
    uint32_t dom_depth;
    ns_alias *aliases;
    size_t alias_count, alias_cap;
    /* Namespaces of the whole load that the server does not have yet get
     * the indices they will have once added (at commit). */
} px;
#endif

const char *ns_dom_attr(const ns_dom *d, const char *name)
{
    for (const char **a = d->attrs; a && *a; a += 2)
        if (!strcmp(a[0], name))
            return a[1];
    return NULL;
}

const ns_dom *ns_dom_child(const ns_dom *d, const char *name)
{
    for (const ns_dom *c = d ? d->child : NULL; c; c = c->next)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

char *ns_strdup(ns_load *l, const char *s, size_t n)
{
    char *p = uas_arena_alloc(&l->arena, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

uas_status ns_fail(ns_load *l, const ns_file *f, uint32_t line, uas_status st, const char *fmt, ...)
{
    if (l->st != UAS_GOOD)
        return l->st;
    l->st = st;
    size_t n = 0;
    if (l->err && l->err_len) {
        /* Whole-file errors (cannot open, too large) have no line. */
        int k = !f     ? 0
                : line ? snprintf(l->err, l->err_len, "%s:%u: ", f->name, (unsigned)line)
                       : snprintf(l->err, l->err_len, "%s: ", f->name);
        n = k > 0 ? (size_t)k : 0;
        if (n < l->err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(l->err + n, l->err_len - n, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

#ifndef UAS_MINIMAL
static const char *local(const char *name)
{
    const char *s = strrchr(name, NS_SEP);
    return s ? s + 1 : name;
}

static const char *attr(const char **atts, const char *name)
{
    for (; atts && *atts; atts += 2)
        if (!strcmp(local(atts[0]), name))
            return atts[1];
    return NULL;
}

static uint32_t line_of(px *x)
{
    return (uint32_t)XML_GetCurrentLineNumber(x->p);
}

static void stop(px *x)
{
    XML_StopParser(x->p, XML_FALSE);
}

/* ---- NodeIds ---- */

static const char *alias_lookup(px *x, const char *name)
{
    for (size_t i = 0; i < x->alias_count; i++)
        if (!strcmp(x->aliases[i].name, name))
            return x->aliases[i].value;
    return NULL;
}
#endif

static bool parse_u32(const char *s, size_t n, uint32_t *out)
{
    if (n == 0 || n > 10)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static int hexv(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

bool ns_parse_guid(const char *s, size_t n, uas_guid *g)
{
    uint8_t b[16];
    size_t k = 0;
    if (n != 36)
        return false;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i++] != '-')
                return false;
            continue;
        }
        int hi = hexv(s[i]), lo = hexv(s[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        b[k++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    g->data1 = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    g->data2 = (uint16_t)(b[4] << 8 | b[5]);
    g->data3 = (uint16_t)(b[6] << 8 | b[7]);
    memcpy(g->data4, b + 8, 8);
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Whitespace inside is skipped (XML writers wrap base64). */
uas_status ns_base64(const char *s, size_t n, uas_bytestring *out)
{
    uint8_t *p = uas_malloc(n / 4 * 3 + 3);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        const char *q = strchr(b64, c);
        if (!q || !c || pad) {
            uas_free(p, n / 4 * 3 + 3);
            return UAS_BAD_DECODING_ERROR;
        }
        acc = acc << 6 | (uint32_t)(q - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            p[o++] = (uint8_t)(acc >> bits);
        }
    }
    uint8_t *shrunk = o ? uas_realloc(p, n / 4 * 3 + 3, o) : NULL;
    if (!o) {
        uas_free(p, n / 4 * 3 + 3);
        out->data = UAS_EMPTY_ARRAY;
        out->length = 0;
        return UAS_GOOD;
    }
    if (!shrunk) {
        uas_free(p, n / 4 * 3 + 3);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    out->data = shrunk;
    out->length = o;
    return UAS_GOOD;
}

static uas_status heap_string(const char *s, size_t n, uas_string *out)
{
    out->length = n;
    out->data = n ? uas_malloc(n) : UAS_EMPTY_ARRAY;
    if (!out->data)
        return UAS_BAD_OUT_OF_MEMORY;
    if (n)
        memcpy(out->data, s, n);
    return UAS_GOOD;
}

/* The server index a file namespace index maps to. */
static bool map_ns(ns_file *f, uint32_t idx, uint16_t *out)
{
    if (idx >= f->ns_count)
        return false;
    *out = f->ns_map[idx];
    return true;
}

uas_status ns_parse_nodeid(ns_load *l, ns_file *f, const char *text, uint32_t line, uas_nodeid *out)
{
    memset(out, 0, sizeof(*out));
    const char *s = text;
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    uint32_t fns = 0;
    const char *id = s;
    size_t idn = n;
    if (n >= 3 && !strncmp(s, "ns=", 3)) {
        const char *semi = memchr(s, ';', n);
        if (!semi || !parse_u32(s + 3, (size_t)(semi - s - 3), &fns))
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        id = semi + 1;
        idn = n - (size_t)(id - s);
    }
    if (idn < 2 || id[1] != '=' || !strchr("isgb", id[0])) {
        if (id != s)
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "unknown alias '%.*s'", (int)n, s);
    }
    if (!map_ns(f, fns, &out->ns))
        return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID,
                       "bad NodeId '%.*s': namespace index %u not in NamespaceUris", (int)n, s,
                       (unsigned)fns);
    const char *v = id + 2;
    size_t vn = idn - 2;
    switch (id[0]) {
    case 'i':
        out->kind = UAS_NODEID_NUMERIC;
        if (!parse_u32(v, vn, &out->id.numeric))
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        return UAS_GOOD;
    case 's':
        out->kind = UAS_NODEID_STRING;
        if (vn == 0)
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        return heap_string(v, vn, &out->id.string);
    case 'g':
        out->kind = UAS_NODEID_GUID;
        if (!ns_parse_guid(v, vn, &out->id.guid))
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        return UAS_GOOD;
    default:
        out->kind = UAS_NODEID_BYTESTRING;
        if (vn == 0 || ns_base64(v, vn, &out->id.bytestring) != UAS_GOOD)
            return ns_fail(l, f, line, UAS_BAD_NODE_ID_INVALID, "bad NodeId '%.*s'", (int)n, s);
        return UAS_GOOD;
    }
}

uas_status ns_resolve_nodeid(ns_load *l, ns_file *f, const char *text, uint32_t line,
                             uas_nodeid *out)
{
    const ns_alias *a = f->aliases;
    for (size_t i = 0; i < f->alias_count; i++)
        if (!strcmp(a[i].name, text))
            return ns_parse_nodeid(l, f, a[i].value, line, out);
    return ns_parse_nodeid(l, f, text, line, out);
}

#ifndef UAS_MINIMAL /* the XML parser: expat, not in the minimal profile */
/* A NodeId attribute or element text: an alias or a NodeId. */
static uas_status resolve_id(px *x, const char *text, uas_nodeid *out)
{
    const char *a = alias_lookup(x, text);
    return ns_parse_nodeid(x->l, x->f, a ? a : text, line_of(x), out);
}

/* "1:Name" -> QualifiedName in the server's namespace. */
static uas_status parse_qname(px *x, const char *text, uas_qualifiedname *q)
{
    memset(q, 0, sizeof(*q));
    const char *colon = strchr(text, ':');
    uint32_t fns = 0;
    const char *name = text;
    if (colon && parse_u32(text, (size_t)(colon - text), &fns))
        name = colon + 1;
    if (!map_ns(x->f, fns, &q->ns))
        return ns_fail(x->l, x->f, line_of(x), UAS_BAD_BROWSE_NAME_INVALID,
                       "bad BrowseName '%s': namespace index %u not in NamespaceUris", text,
                       (unsigned)fns);
    if (!*name)
        return ns_fail(x->l, x->f, line_of(x), UAS_BAD_BROWSE_NAME_INVALID, "empty BrowseName");
    return heap_string(name, strlen(name), &q->name);
}

static bool parse_bool(const char *s, bool dflt, bool *ok)
{
    if (!s)
        return dflt;
    if (!strcmp(s, "true") || !strcmp(s, "1"))
        return true;
    if (!strcmp(s, "false") || !strcmp(s, "0"))
        return false;
    *ok = false;
    return dflt;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    if (!s)
        return true;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* ---- nodes ---- */

static const struct {
    const char *tag;
    uint8_t cls;
} node_tags[] = {
    {"UAObject", UAS_NODE_CLASS_OBJECT},
    {"UAVariable", UAS_NODE_CLASS_VARIABLE},
    {"UAMethod", UAS_NODE_CLASS_METHOD},
    {"UAObjectType", UAS_NODE_CLASS_OBJECT_TYPE},
    {"UAVariableType", UAS_NODE_CLASS_VARIABLE_TYPE},
    {"UAReferenceType", UAS_NODE_CLASS_REFERENCE_TYPE},
    {"UADataType", UAS_NODE_CLASS_DATA_TYPE},
    {"UAView", UAS_NODE_CLASS_VIEW},
};

static ns_item *new_item(px *x, uint8_t cls)
{
    ns_file *f = x->f;
    ns_load *l = x->l;
    if (l->node_total >= l->limits.max_nodes) {
        ns_fail(l, f, line_of(x), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                "more than %zu nodes (limit nodeset_max_nodes)", l->limits.max_nodes);
        return NULL;
    }
    if (f->item_count == f->item_cap) {
        size_t cap = f->item_cap ? f->item_cap * 2 : 256;
        ns_item *g = uas_realloc(f->items, f->item_cap * sizeof(ns_item), cap * sizeof(ns_item));
        if (!g) {
            ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
            return NULL;
        }
        f->items = g;
        f->item_cap = cap;
    }
    ns_item *it = &f->items[f->item_count];
    memset(it, 0, sizeof(*it));
    it->n = as_node_alloc(cls);
    if (!it->n) {
        ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    it->file = f;
    it->line = line_of(x);
    f->item_count++;
    l->node_total++;
    return it;
}

static uas_status start_node(px *x, uint8_t cls, const char **atts)
{
    ns_item *it = new_item(x, cls);
    if (!it)
        return x->l->st;
    as_node *n = it->n;
    /* Every attribute is checked, whatever the class; a class keeps its
     * own (as_var, as_meth). */
    as_var *var = as_var_of(n), novar;
    as_meth *meth = as_meth_of(n), nometh;
    if (!var)
        var = memset(&novar, 0, sizeof(novar));
    if (!meth)
        meth = memset(&nometh, 0, sizeof(nometh));
    const char *id = attr(atts, "NodeId"), *bn = attr(atts, "BrowseName");
    if (!id)
        return ns_fail(x->l, x->f, it->line, UAS_BAD_NODE_ID_INVALID, "node without NodeId");
    if (!bn)
        return ns_fail(x->l, x->f, it->line, UAS_BAD_BROWSE_NAME_INVALID,
                       "node '%s' without BrowseName", id);
    AS_TRY(resolve_id(x, id, &n->id));
    AS_TRY(parse_qname(x, bn, &n->browse_name));
    bool ok = true;
    long v;
    v = 0;
    ok &= parse_long(attr(atts, "WriteMask"), 0, UINT32_MAX, &v);
    n->write_mask = (uint32_t)v;
    n->user_write_mask = UINT32_MAX;
    v = 0;
    ok &= parse_long(attr(atts, "EventNotifier"), 0, 255, &v);
    n->event_notifier = (uint8_t)v;
    n->is_abstract = parse_bool(attr(atts, "IsAbstract"), false, &ok);
    n->symmetric = parse_bool(attr(atts, "Symmetric"), false, &ok);
    n->contains_no_loops = parse_bool(attr(atts, "ContainsNoLoops"), false, &ok);
    meth->executable = parse_bool(attr(atts, "Executable"), true, &ok);
    meth->user_executable = parse_bool(attr(atts, "UserExecutable"), true, &ok);
    var->historizing = parse_bool(attr(atts, "Historizing"), false, &ok);
    v = 1;
    ok &= parse_long(attr(atts, "AccessLevel"), 0, 255, &v);
    var->access_level = (uint8_t)v;
    v = 1;
    ok &= parse_long(attr(atts, "UserAccessLevel"), 0, 255, &v);
    var->user_access_level = (uint8_t)v;
    v = -1;
    ok &= parse_long(attr(atts, "ValueRank"), -3, INT32_MAX, &v);
    var->value_rank = (int32_t)v;
    const char *msi = attr(atts, "MinimumSamplingInterval");
    if (msi) {
        char *end;
        var->min_sampling = strtod(msi, &end);
        ok &= end != msi && !*end;
    }
    if (!ok)
        return ns_fail(x->l, x->f, it->line, UAS_BAD_DECODING_ERROR,
                       "node '%s': an attribute has an invalid value", id);
    if (cls == UAS_NODE_CLASS_VARIABLE || cls == UAS_NODE_CLASS_VARIABLE_TYPE) {
        const char *dt = attr(atts, "DataType");
        if (dt)
            AS_TRY(resolve_id(x, dt, &var->data_type));
        else
            var->data_type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATATYPE);
        const char *ad = attr(atts, "ArrayDimensions");
        if (ad && *ad) {
            size_t cnt = 1;
            for (const char *p = ad; *p; p++)
                cnt += *p == ',';
            if (cnt > 32)
                return ns_fail(x->l, x->f, it->line, UAS_BAD_DECODING_ERROR,
                               "node '%s': too many ArrayDimensions", id);
            var->array_dims = uas_calloc(cnt, sizeof(uint32_t));
            if (!var->array_dims)
                return ns_fail(x->l, x->f, it->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            var->array_dims_count = (uint32_t)cnt;
            const char *p = ad;
            for (size_t i = 0; i < cnt; i++) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                if (!parse_u32(p, len, &var->array_dims[i]))
                    return ns_fail(x->l, x->f, it->line, UAS_BAD_DECODING_ERROR,
                                   "node '%s': bad ArrayDimensions '%s'", id, ad);
                p = e ? e + 1 : p + len;
            }
        }
    }
    /* The user attributes are derived from roles (authz_node.h); the file's
     * values are the upper bound. */
    x->cur = it;
    x->cur_depth = x->depth;
    return UAS_GOOD;
}

static uas_status add_sref(px *x, ns_item *it, const ns_sref *r)
{
    if (it->ref_count == it->ref_cap) {
        size_t cap = it->ref_cap ? it->ref_cap * 2 : 4;
        ns_sref *g = uas_realloc(it->refs, it->ref_cap * sizeof(ns_sref), cap * sizeof(ns_sref));
        if (!g)
            return ns_fail(x->l, x->f, r->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        it->refs = g;
        it->ref_cap = cap;
    }
    it->refs[it->ref_count++] = *r;
    return UAS_GOOD;
}

/* ---- DOM capture ---- */

static uas_status dom_start(px *x, const char *name, const char **atts)
{
    ns_load *l = x->l;
    if (x->dom_depth >= sizeof(x->dom_stack) / sizeof(x->dom_stack[0]))
        return ns_fail(l, x->f, line_of(x), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                       "value nested too deeply");
    ns_dom *d = uas_arena_calloc(&l->arena, 1, sizeof(*d));
    if (!d)
        return ns_fail(l, x->f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
    d->name = ns_strdup(l, name, strlen(name));
    d->line = line_of(x);
    size_t na = 0;
    while (atts[na])
        na += 2;
    if (na) {
        d->attrs = uas_arena_calloc(&l->arena, na + 1, sizeof(char *));
        if (!d->attrs)
            return ns_fail(l, x->f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < na; i++) {
            const char *s = i % 2 == 0 ? local(atts[i]) : atts[i];
            d->attrs[i] = ns_strdup(l, s, strlen(s));
        }
    }
    if (!d->name)
        return ns_fail(l, x->f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
    if (x->dom_depth == 0) {
        x->dom_root = d;
    } else {
        ns_dom *p = x->dom_stack[x->dom_depth - 1];
        if (p->last)
            p->last->next = d;
        else
            p->child = d;
        p->last = d;
    }
    x->dom_stack[x->dom_depth++] = d;
    x->text_len = 0;
    x->want_text = true;
    return UAS_GOOD;
}

static uas_status dom_end(px *x)
{
    ns_dom *d = x->dom_stack[--x->dom_depth];
    if (!d->child) {
        d->text = ns_strdup(x->l, x->text ? x->text : "", x->text_len);
        d->text_len = x->text_len;
        if (!d->text)
            return ns_fail(x->l, x->f, d->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    }
    x->text_len = 0;
    x->want_text = x->dom_depth > 0;
    return UAS_GOOD;
}

/* ---- expat callbacks ---- */

static void on_start(void *ud, const char *qname, const char **atts)
{
    px *x = ud;
    const char *name = local(qname);
    x->depth++;
    if (x->depth > x->l->limits.max_depth) {
        ns_fail(x->l, x->f, line_of(x), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                "elements nested deeper than %u (limit nodeset_max_depth)",
                (unsigned)x->l->limits.max_depth);
        stop(x);
        return;
    }
    uas_status st = UAS_GOOD;
    if (x->dom_depth) {
        st = dom_start(x, name, atts);
    } else if (x->cur) {
        ns_item *it = x->cur;
        if (x->depth == x->cur_depth + 1 &&
            (!strcmp(name, "DisplayName") || !strcmp(name, "Description") ||
             !strcmp(name, "InverseName"))) {
            x->text_for = !strcmp(name, "DisplayName")   ? "DisplayName"
                          : !strcmp(name, "Description") ? "Description"
                                                         : "InverseName";
            const char *loc = attr(atts, "Locale");
            x->locale = loc ? ns_strdup(x->l, loc, strlen(loc)) : NULL;
            x->want_text = true;
            x->text_len = 0;
        } else if (!strcmp(name, "Reference") && x->depth == x->cur_depth + 2) {
            memset(&x->ref, 0, sizeof(x->ref));
            x->ref.line = line_of(x);
            bool ok = true;
            x->ref.forward = parse_bool(attr(atts, "IsForward"), true, &ok);
            const char *rt = attr(atts, "ReferenceType");
            if (!ok || !rt) {
                st = ns_fail(x->l, x->f, x->ref.line, UAS_BAD_REFERENCE_TYPE_ID_INVALID,
                             "Reference without a valid ReferenceType/IsForward");
            } else {
                st = resolve_id(x, rt, &x->ref.type);
            }
            x->text_for = "Reference";
            x->want_text = true;
            x->text_len = 0;
        } else if (x->depth == x->cur_depth + 1 &&
                   ((!strcmp(name, "Value") &&
                     (it->n->node_class == UAS_NODE_CLASS_VARIABLE ||
                      it->n->node_class == UAS_NODE_CLASS_VARIABLE_TYPE)) ||
                    (!strcmp(name, "Definition") &&
                     it->n->node_class == UAS_NODE_CLASS_DATA_TYPE))) {
            st = dom_start(x, name, atts);
        }
    } else if (x->depth == 2) {
        x->in_uris = !strcmp(name, "NamespaceUris");
        x->in_models = !strcmp(name, "Models");
        x->in_aliases = !strcmp(name, "Aliases");
        for (size_t i = 0; i < sizeof(node_tags) / sizeof(node_tags[0]); i++)
            if (!strcmp(name, node_tags[i].tag))
                st = start_node(x, node_tags[i].cls, atts);
    } else if (x->depth == 3 && x->in_uris && !strcmp(name, "Uri")) {
        x->text_for = "Uri";
        x->want_text = true;
        x->text_len = 0;
    } else if (x->depth == 3 && x->in_aliases && !strcmp(name, "Alias")) {
        const char *a = attr(atts, "Alias");
        x->alias_name = a ? ns_strdup(x->l, a, strlen(a)) : NULL;
        if (!a)
            st = ns_fail(x->l, x->f, line_of(x), UAS_BAD_DECODING_ERROR, "Alias without a name");
        x->text_for = "Alias";
        x->want_text = true;
        x->text_len = 0;
    } else if (x->in_models && (x->depth == 3 || x->depth == 4) &&
               (!strcmp(name, "Model") || !strcmp(name, "RequiredModel"))) {
        ns_file *f = x->f;
        bool req = x->depth == 4;
        const char *uri = attr(atts, "ModelUri"), *ver = attr(atts, "Version");
        if (!uri) {
            st = ns_fail(x->l, f, line_of(x), UAS_BAD_DECODING_ERROR, "%s without ModelUri", name);
        } else {
            ns_model **arr = req ? &f->required : &f->models;
            size_t *cnt = req ? &f->required_count : &f->model_count;
            ns_model *g = uas_arena_alloc(&x->l->arena, (*cnt + 1) * sizeof(ns_model));
            if (!g) {
                st = ns_fail(x->l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
            } else {
                if (*cnt)
                    memcpy(g, *arr, *cnt * sizeof(ns_model));
                g[*cnt].uri = ns_strdup(x->l, uri, strlen(uri));
                g[*cnt].version = ver ? ns_strdup(x->l, ver, strlen(ver)) : NULL;
                *arr = g;
                (*cnt)++;
            }
        }
    }
    if (st != UAS_GOOD)
        stop(x);
}

static uas_status text_str(px *x, uas_localizedtext *t)
{
    uas_clear(t, UAS_TYPE(LOCALIZED_TEXT));
    size_t b = 0, e = x->text_len;
    while (b < e && strchr(" \n\r\t", x->text[b]))
        b++;
    while (e > b && strchr(" \n\r\t", x->text[e - 1]))
        e--;
    if (x->locale && *x->locale)
        AS_TRY(heap_string(x->locale, strlen(x->locale), &t->locale));
    return heap_string(x->text + b, e - b, &t->text);
}

static uas_status end_text(px *x, const char *name)
{
    ns_load *l = x->l;
    ns_file *f = x->f;
    if (!x->text)
        x->text = uas_malloc(x->text_cap = 256);
    if (!x->text)
        return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
    x->text[x->text_len] = 0;
    if (!strcmp(x->text_for, "Uri") && !strcmp(name, "Uri")) {
        uint16_t idx;
        uint16_t *m = uas_arena_alloc(&l->arena, (f->ns_count + 1) * sizeof(uint16_t));
        if (!m)
            return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        memcpy(m, f->ns_map, f->ns_count * sizeof(uint16_t));
        char *t = x->text;
        while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
            t++;
        size_t tl = strlen(t);
        while (tl && strchr(" \n\r\t", t[tl - 1]))
            t[--tl] = 0;
        AS_TRY(ns_map_uri(l, t, &idx));
        char **u = uas_arena_alloc(&l->arena, f->ns_count * sizeof(char *));
        if (!u)
            return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        if (f->ns_count > 1)
            memcpy(u, f->ns_uris, (f->ns_count - 1) * sizeof(char *));
        u[f->ns_count - 1] = ns_strdup(l, t, tl);
        f->ns_uris = u;
        m[f->ns_count++] = idx;
        f->ns_map = m;
    } else if (!strcmp(x->text_for, "Alias") && !strcmp(name, "Alias")) {
        if (x->alias_count == x->alias_cap) {
            size_t cap = x->alias_cap ? x->alias_cap * 2 : 32;
            ns_alias *g = uas_arena_alloc(&l->arena, cap * sizeof(ns_alias));
            if (!g)
                return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
            if (x->alias_count)
                memcpy(g, x->aliases, x->alias_count * sizeof(ns_alias));
            x->aliases = g;
            x->alias_cap = cap;
        }
        x->aliases[x->alias_count].name = x->alias_name;
        x->aliases[x->alias_count].value = ns_strdup(l, x->text, x->text_len);
        x->alias_count++;
    } else if (!strcmp(x->text_for, "Reference") && !strcmp(name, "Reference")) {
        AS_TRY(resolve_id(x, x->text, &x->ref.target));
        AS_TRY(add_sref(x, x->cur, &x->ref));
    } else if (x->cur && !strcmp(x->text_for, name)) {
        as_node *n = x->cur->n;
        bool dn = !strcmp(name, "DisplayName"), desc = !strcmp(name, "Description");
        as_typex *tx = dn || desc ? NULL : as_node_typex(n);
        uas_localizedtext **slot = dn ? &n->display_name : desc ? &n->description : NULL;
        /* The first text wins (files may repeat them per locale). */
        if (slot && !*slot) {
            if (!(*slot = uas_calloc(1, sizeof(uas_localizedtext))) ||
                text_str(x, *slot) != UAS_GOOD)
                return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        } else if (tx && !tx->inverse_name.text.data &&
                   text_str(x, &tx->inverse_name) != UAS_GOOD) {
            return ns_fail(l, f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
        }
    }
    return UAS_GOOD;
}

static void on_end(void *ud, const char *qname)
{
    px *x = ud;
    const char *name = local(qname);
    uas_status st = UAS_GOOD;
    if (x->dom_depth) {
        bool root = x->dom_depth == 1;
        st = dom_end(x);
        if (st == UAS_GOOD && root && x->cur) {
            if (!strcmp(x->dom_root->name, "Value"))
                x->cur->value = x->dom_root;
            else
                x->cur->definition = x->dom_root;
        }
    } else if (x->want_text && x->text_for) {
        st = end_text(x, name);
        x->want_text = false;
        x->text_for = NULL;
    } else if (x->cur && x->depth == x->cur_depth) {
        as_node_share_dn(x->cur->n);
        x->cur = NULL;
    }
    if (x->depth == 2)
        x->in_uris = x->in_models = x->in_aliases = false;
    x->depth--;
    if (st != UAS_GOOD)
        stop(x);
}

static void on_text(void *ud, const char *s, int len)
{
    px *x = ud;
    if (!x->want_text || len <= 0)
        return;
    if (x->text_len + (size_t)len + 1 > x->text_cap) {
        size_t cap = x->text_cap ? x->text_cap : 256;
        while (cap < x->text_len + (size_t)len + 1)
            cap *= 2;
        char *g = uas_realloc(x->text, x->text_cap, cap);
        if (!g) {
            ns_fail(x->l, x->f, line_of(x), UAS_BAD_OUT_OF_MEMORY, "out of memory");
            stop(x);
            return;
        }
        x->text = g;
        x->text_cap = cap;
    }
    memcpy(x->text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
}

uas_status ns_parse_file(ns_load *l, ns_file *f)
{
    const char *slash = strrchr(f->path, '/');
    f->name = slash ? slash + 1 : f->path;
    FILE *fp = fopen(f->path, "rb");
    if (!fp)
        return ns_fail(l, f, 0, UAS_BAD_NOT_FOUND, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) == 0 && (uint64_t)sb.st_size > l->limits.max_file_size) {
        fclose(fp);
        return ns_fail(l, f, 0, UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                       "file of %lld bytes is larger than %zu (limit nodeset_max_file_size)",
                       (long long)sb.st_size, l->limits.max_file_size);
    }
    px x;
    memset(&x, 0, sizeof(x));
    x.l = l;
    x.f = f;
    /* Namespace 0 is index 0 of every file. */
    f->ns_map = uas_arena_calloc(&l->arena, 1, sizeof(uint16_t));
    f->ns_count = f->ns_map ? 1 : 0;
    x.p = XML_ParserCreateNS(NULL, NS_SEP);
    if (!x.p || !f->ns_map) {
        fclose(fp);
        if (x.p)
            XML_ParserFree(x.p);
        return ns_fail(l, f, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    }
    XML_SetUserData(x.p, &x);
    XML_SetElementHandler(x.p, on_start, on_end);
    XML_SetCharacterDataHandler(x.p, on_text);
    size_t total = 0;
    for (;;) {
        void *buf = XML_GetBuffer(x.p, 65536);
        if (!buf) {
            ns_fail(l, f, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            break;
        }
        size_t n = fread(buf, 1, 65536, fp);
        total += n;
        if (total > l->limits.max_file_size) {
            ns_fail(l, f, line_of(&x), UAS_BAD_ENCODING_LIMITS_EXCEEDED,
                    "file larger than %zu bytes (limit nodeset_max_file_size)",
                    l->limits.max_file_size);
            break;
        }
        bool last = n < 65536;
        if (XML_ParseBuffer(x.p, (int)n, last) == XML_STATUS_ERROR) {
            if (l->st == UAS_GOOD)
                ns_fail(l, f, (uint32_t)XML_GetCurrentLineNumber(x.p), UAS_BAD_DECODING_ERROR,
                        "XML: %s", XML_ErrorString(XML_GetErrorCode(x.p)));
            break;
        }
        if (last || l->st != UAS_GOOD)
            break;
    }
    if (ferror(fp) && l->st == UAS_GOOD)
        ns_fail(l, f, 0, UAS_BAD_DECODING_ERROR, "read error");
    fclose(fp);
    XML_ParserFree(x.p);
    f->aliases = x.aliases;
    f->alias_count = x.alias_count;
    uas_free(x.text, x.text_cap);
    if (l->st == UAS_GOOD && f->model_count == 0) {
        /* Older files have no <Models>: their first namespace is the model. */
        if (f->ns_count < 2)
            return ns_fail(l, f, 1, UAS_BAD_DECODING_ERROR,
                           "neither <Models> nor <NamespaceUris>: the file names no model");
        f->models = uas_arena_calloc(&l->arena, 1, sizeof(ns_model));
        if (!f->models)
            return ns_fail(l, f, 1, UAS_BAD_OUT_OF_MEMORY, "out of memory");
        f->models[0].uri = f->ns_uris ? f->ns_uris[0] : NULL;
        f->model_count = f->models[0].uri ? 1 : 0;
    }
    return l->st;
}
#else
uas_status ns_parse_file(ns_load *l, ns_file *f)
{
    const char *slash = strrchr(f->path, '/');
    f->name = slash ? slash + 1 : f->path;
    return ns_fail(l, f, 0, UAS_BAD_NOT_SUPPORTED,
                   "NodeSet2 files are not read by the minimal profile (no XML parser)");
}
#endif /* UAS_MINIMAL */
