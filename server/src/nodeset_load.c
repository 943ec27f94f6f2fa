/* Loading NodeSet2 files: order by required models, check everything, then
 * commit under the address space's write lock (nodeset.h).
 *
 * Nothing of a load is visible until all of its files have been parsed and
 * checked; the commit itself can only fail for lack of memory, and then it
 * is undone (nodes unlinked, references of existing nodes truncated), so a
 * failed load leaves the address space as it was. Namespace URIs a failed
 * commit added stay in the namespace array (they cannot be taken back
 * without renumbering); no node uses them. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodeset.h"

#define NS0_URI "http://opcfoundation.org/UA/"
/* The version of namespace 0 the generated tables hold (server/gen). */
#define NS0_VERSION "1.05.03"

typedef struct ns_registry {
    ns_model *models; /* heap strings */
    size_t count, cap;
} ns_registry;

void uas_nodeset_registry_free(uas_server *s)
{
    ns_registry *r = s->nodesets;
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++) {
        free((char *)r->models[i].uri);
        free((char *)r->models[i].version);
    }
    free(r->models);
    free(r);
    s->nodesets = NULL;
}

/* ---- namespaces ---- */

uas_status ns_map_uri(ns_load *l, const char *uri, uint16_t *out)
{
    uas_server *s = l->server;
    pthread_mutex_lock(&s->ns_lock);
    for (size_t i = 0; i < s->namespace_count; i++) {
        if (!strcmp(s->namespaces[i], uri)) {
            pthread_mutex_unlock(&s->ns_lock);
            *out = (uint16_t)i;
            return UAS_GOOD;
        }
    }
    pthread_mutex_unlock(&s->ns_lock);
    for (size_t i = 0; i < l->new_uri_count; i++) {
        if (!strcmp(l->new_uris[i], uri)) {
            *out = (uint16_t)(l->ns_base + i);
            return UAS_GOOD;
        }
    }
    if (l->ns_base + l->new_uri_count >= UINT16_MAX - 1)
        return ns_fail(l, NULL, 0, UAS_BAD_TOO_MANY_OPERATIONS, "too many namespaces");
    char **g = uas_arena_alloc(&l->arena, (l->new_uri_count + 1) * sizeof(char *));
    char *copy = ns_strdup(l, uri, strlen(uri));
    if (!g || !copy)
        return ns_fail(l, NULL, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    if (l->new_uri_count)
        memcpy(g, l->new_uris, l->new_uri_count * sizeof(char *));
    g[l->new_uri_count] = copy;
    l->new_uris = g;
    *out = (uint16_t)(l->ns_base + l->new_uri_count++);
    return UAS_GOOD;
}

/* ---- NodeId text for messages ---- */

static const char *idtext(const uas_nodeid *id, char *buf, size_t n)
{
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        snprintf(buf, n, "ns=%u;i=%u", id->ns, (unsigned)id->id.numeric);
        break;
    case UAS_NODEID_STRING:
        snprintf(buf, n, "ns=%u;s=%.*s", id->ns, (int)id->id.string.length,
                 (const char *)id->id.string.data);
        break;
    case UAS_NODEID_GUID:
        snprintf(buf, n, "ns=%u;g=%08x-...", id->ns, (unsigned)id->id.guid.data1);
        break;
    default:
        snprintf(buf, n, "ns=%u;b=(%zu bytes)", id->ns, id->id.bytestring.length);
        break;
    }
    return buf;
}

/* ---- the staged index ---- */

static uint64_t hash_id(const uas_nodeid *id)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)id->ns << 8 | id->kind);
    const uint8_t *p;
    size_t n;
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        p = (const uint8_t *)&id->id.numeric;
        n = sizeof(id->id.numeric);
        break;
    case UAS_NODEID_GUID:
        p = (const uint8_t *)&id->id.guid;
        n = sizeof(id->id.guid);
        break;
    default:
        p = id->id.string.data;
        n = p ? id->id.string.length : 0;
        break;
    }
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}

ns_item *ns_find_item(ns_load *l, const uas_nodeid *id)
{
    if (!l->index_cap)
        return NULL;
    for (size_t k = (size_t)hash_id(id) & (l->index_cap - 1);; k = (k + 1) & (l->index_cap - 1)) {
        ns_item *it = l->index[k];
        if (!it)
            return NULL;
        if (as_nodeid_eq(&it->n->id, id))
            return it;
    }
}

static uas_status build_index(ns_load *l)
{
    size_t cap = 64;
    while (cap < l->node_total * 2)
        cap *= 2;
    l->index = uas_arena_calloc(&l->arena, cap, sizeof(ns_item *));
    if (!l->index)
        return ns_fail(l, NULL, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    l->index_cap = cap;
    char b1[96];
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            size_t k = (size_t)hash_id(&it->n->id) & (cap - 1);
            for (; l->index[k]; k = (k + 1) & (cap - 1)) {
                if (as_nodeid_eq(&l->index[k]->n->id, &it->n->id))
                    return ns_fail(l, f, it->line, UAS_BAD_NODE_ID_EXISTS,
                                   "duplicate NodeId '%s' (first at %s:%u)",
                                   idtext(&it->n->id, b1, sizeof(b1)), l->index[k]->file->name,
                                   (unsigned)l->index[k]->line);
            }
            as_nv nv = as_lookup(l->as, &it->n->id);
            if (as_nv_found(&nv))
                return ns_fail(l, f, it->line, UAS_BAD_NODE_ID_EXISTS,
                               "duplicate NodeId '%s': already in the address space",
                               idtext(&it->n->id, b1, sizeof(b1)));
            l->index[k] = it;
        }
    }
    return UAS_GOOD;
}

/* ---- models ---- */

/* Dotted versions compared numerically ("1.04.11" < "1.05.3"); an absent
 * required version accepts any. */
static int vercmp(const char *a, const char *b)
{
    while (*a || *b) {
        char *ea, *eb;
        unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        a = *ea ? ea + 1 : ea;
        b = *eb ? eb + 1 : eb;
        if (ea == a && eb == b && !*a && !*b)
            break;
    }
    return 0;
}

static const ns_model *registered(ns_load *l, const char *uri)
{
    ns_registry *r = l->server->nodesets;
    for (size_t i = 0; r && i < r->count; i++)
        if (!strcmp(r->models[i].uri, uri))
            return &r->models[i];
    return NULL;
}

static ns_file *provider(ns_load *l, const char *uri, const ns_model **m)
{
    for (size_t i = 0; i < l->file_count; i++)
        for (size_t k = 0; k < l->files[i].model_count; k++)
            if (!strcmp(l->files[i].models[k].uri, uri)) {
                *m = &l->files[i].models[k];
                return &l->files[i];
            }
    return NULL;
}

static uas_status place(ns_load *l, ns_file *f, ns_file **order, size_t *n, uint32_t depth)
{
    if (f->loaded)
        return UAS_GOOD;
    if (depth > l->file_count)
        return ns_fail(l, f, 1, UAS_BAD_CONFIGURATION_ERROR,
                       "models require each other in a cycle");
    for (size_t i = 0; i < f->required_count; i++) {
        const ns_model *req = &f->required[i];
        const ns_model *have = NULL;
        const char *ver = NULL;
        if (!strcmp(req->uri, NS0_URI)) {
            ver = NS0_VERSION;
        } else if ((have = registered(l, req->uri))) {
            ver = have->version;
        } else {
            ns_file *p = provider(l, req->uri, &have);
            if (!p)
                return ns_fail(l, f, 1, UAS_BAD_CONFIGURATION_ERROR,
                               "requires model %s%s%s, which no loaded NodeSet provides", req->uri,
                               req->version ? " version " : "", req->version ? req->version : "");
            if (p != f)
                AS_TRY(place(l, p, order, n, depth + 1));
            ver = have->version;
        }
        if (req->version && ver && vercmp(ver, req->version) < 0)
            return ns_fail(l, f, 1, UAS_BAD_CONFIGURATION_ERROR,
                           "requires model %s version %s, but version %s is loaded", req->uri,
                           req->version, ver);
    }
    if (!f->loaded) {
        f->loaded = true;
        order[(*n)++] = f;
    }
    return UAS_GOOD;
}

static uas_status order_files(ns_load *l)
{
    for (size_t i = 0; i < l->file_count; i++)
        for (size_t k = 0; k < l->files[i].model_count; k++) {
            const ns_model *m = &l->files[i].models[k];
            const ns_model *other;
            ns_file *p = provider(l, m->uri, &other);
            if (registered(l, m->uri))
                return ns_fail(l, &l->files[i], 1, UAS_BAD_CONFIGURATION_ERROR,
                               "model %s is already loaded", m->uri);
            if (p && p != &l->files[i])
                return ns_fail(l, &l->files[i], 1, UAS_BAD_CONFIGURATION_ERROR,
                               "model %s is also in %s", m->uri, p->name);
        }
    ns_file **order = uas_arena_alloc(&l->arena, l->file_count * sizeof(ns_file *));
    if (!order)
        return ns_fail(l, NULL, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < l->file_count; i++)
        AS_TRY(place(l, &l->files[i], order, &n, 0));
    ns_file *sorted = uas_arena_alloc(&l->arena, l->file_count * sizeof(ns_file));
    if (!sorted)
        return ns_fail(l, NULL, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = *order[i];
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sorted[i].item_count; k++)
            sorted[i].items[k].file = &sorted[i];
    l->files = sorted;
    return UAS_GOOD;
}

/* ---- checks ---- */

/* Node class of a staged or existing node, 0 when there is none. */
static uint8_t class_of(ns_load *l, const uas_nodeid *id)
{
    ns_item *it = ns_find_item(l, id);
    if (it)
        return it->n->node_class;
    as_nv nv = as_lookup(l->as, id);
    return as_nv_class(&nv);
}

static bool is_reftype(ns_load *l, const uas_nodeid *id)
{
    ns_item *it = ns_find_item(l, id);
    if (it)
        return it->n->node_class == UAS_NODE_CLASS_REFERENCE_TYPE;
    return as_is_reftype(l->as, id);
}

static bool is_hassubtype(const uas_nodeid *t)
{
    return t->ns == 0 && t->kind == UAS_NODEID_NUMERIC && t->id.numeric == UAS_NS0ID_HASSUBTYPE;
}

static uas_status check_refs(ns_load *l)
{
    char b[96];
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            for (size_t r = 0; r < it->ref_count; r++) {
                ns_sref *ref = &it->refs[r];
                if (!is_reftype(l, &ref->type))
                    return ns_fail(l, f, ref->line, UAS_BAD_REFERENCE_TYPE_ID_INVALID,
                                   "'%s' is not a ReferenceType", idtext(&ref->type, b, sizeof(b)));
                if (!class_of(l, &ref->target))
                    return ns_fail(l, f, ref->line, UAS_BAD_TARGET_NODE_ID_INVALID,
                                   "unresolved reference target '%s'",
                                   idtext(&ref->target, b, sizeof(b)));
                if (is_hassubtype(&ref->type)) {
                    ns_item *sub = ref->forward ? ns_find_item(l, &ref->target) : it;
                    const uas_nodeid *super = ref->forward ? &it->n->id : &ref->target;
                    if (sub && !sub->has_super) {
                        sub->super = *super;
                        sub->has_super = true;
                    }
                }
            }
            const as_var *var = as_var_of(it->n);
            if (var && class_of(l, &var->data_type) != UAS_NODE_CLASS_DATA_TYPE)
                return ns_fail(l, f, it->line, UAS_BAD_TYPE_MISMATCH,
                               "DataType '%s' of '%s' is not a DataType",
                               idtext(&var->data_type, b, sizeof(b)),
                               idtext(&it->n->id, b + 48, 48));
        }
    }
    return UAS_GOOD;
}

static bool is_type_class(uint8_t c)
{
    return c == UAS_NODE_CLASS_OBJECT_TYPE || c == UAS_NODE_CLASS_VARIABLE_TYPE ||
           c == UAS_NODE_CLASS_DATA_TYPE || c == UAS_NODE_CLASS_REFERENCE_TYPE;
}

/* Every staged type's supertype chain must end outside the staged nodes
 * (in namespace 0 or an earlier load) without meeting itself, and a
 * supertype must be of the same node class. */
static uas_status check_hierarchy(ns_load *l)
{
    char b[96];
    uint32_t walk = 0;
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            if (!is_type_class(it->n->node_class))
                continue;
            if (it->has_super && class_of(l, &it->super) != it->n->node_class)
                return ns_fail(l, f, it->line, UAS_BAD_TYPE_DEFINITION_INVALID,
                               "supertype '%s' of '%s' is not of the same node class",
                               idtext(&it->super, b, sizeof(b)), idtext(&it->n->id, b + 48, 48));
            walk++;
            ns_item *p = it;
            while (p && p->has_super) {
                if (p->mark == walk)
                    return ns_fail(l, f, it->line, UAS_BAD_TYPE_DEFINITION_INVALID,
                                   "cycle in the type hierarchy at '%s'",
                                   idtext(&it->n->id, b, sizeof(b)));
                p->mark = walk;
                p = ns_find_item(l, &p->super);
            }
        }
    }
    return UAS_GOOD;
}

static uas_status check_values(ns_load *l)
{
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            if (it->definition) {
                as_typex *tx = as_node_typex(it->n);
                if (!tx)
                    return ns_fail(l, f, it->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
                AS_TRY(ns_build_definition(l, it, &tx->definition));
            }
        }
    }
    uas_datetime now = uas_datetime_now();
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            as_var *var = as_var_of(it->n);
            if (it->value && var) { /* the parser keeps Values of variables only */
                uas_variant v;
                AS_TRY(ns_build_value(l, it, &v));
                if (as_init_value(it->n, &v, now) != UAS_GOOD)
                    return ns_fail(l, f, it->line, UAS_BAD_OUT_OF_MEMORY, "out of memory");
            }
        }
    }
    return UAS_GOOD;
}

/* ---- commit ---- */

typedef struct touched {
    as_node *d;
    uint32_t ref_count;
} touched;

typedef struct commit {
    ns_load *l;
    touched *t;
    size_t tn, tcap;
    size_t inserted_files, inserted_items; /* progress for undo */
    size_t reftypes_before;
    /* Reference dedupe: (node, type, target, direction). */
    struct dk {
        const as_node *src;
        const uas_nodeid *tgt;
        uint32_t type;
        bool fwd;
    } * set;
    size_t set_cap;
} commit;

static bool dedupe(commit *c, const as_node *src, uint32_t type, const uas_nodeid *tgt, bool fwd)
{
    uint64_t h = hash_id(tgt) ^ ((uint64_t)(uintptr_t)src * 0x9E3779B97F4A7C15ULL) ^
                 ((uint64_t)type << 1 | fwd) * 0xC2B2AE3D27D4EB4FULL;
    for (size_t k = (size_t)(h ^ (h >> 31)) & (c->set_cap - 1);; k = (k + 1) & (c->set_cap - 1)) {
        struct dk *e = &c->set[k];
        if (!e->src) {
            e->src = src;
            e->tgt = tgt;
            e->type = type;
            e->fwd = fwd;
            return false;
        }
        if (e->src == src && e->type == type && e->fwd == fwd && as_nodeid_eq(e->tgt, tgt))
            return true;
    }
}

static uas_status touch(commit *c, as_node *d)
{
    for (size_t i = c->tn; i-- > 0 && i + 8 >= c->tn;)
        if (c->t[i].d == d)
            return UAS_GOOD; /* recent: the common case of many children */
    for (size_t i = 0; i < c->tn; i++)
        if (c->t[i].d == d)
            return UAS_GOOD;
    if (c->tn == c->tcap) {
        size_t cap = c->tcap ? c->tcap * 2 : 64;
        touched *g = uas_realloc(c->t, c->tcap * sizeof(touched), cap * sizeof(touched));
        if (!g)
            return UAS_BAD_OUT_OF_MEMORY;
        c->t = g;
        c->tcap = cap;
    }
    c->t[c->tn].d = d;
    c->t[c->tn].ref_count = d->ref_count;
    c->tn++;
    return UAS_GOOD;
}

/* The node a reference end lives on: a staged node or an existing one
 * (its overlay for static rows). */
static as_node *end_node(commit *c, const uas_nodeid *id, as_nv *nv)
{
    ns_item *it = ns_find_item(c->l, id);
    if (it) {
        nv->s = NULL;
        nv->d = it->n;
        return it->n;
    }
    *nv = as_lookup(c->l->as, id);
    as_node *d = as_overlay(c->l->as, nv);
    if (d && touch(c, d) != UAS_GOOD)
        return NULL;
    return d;
}

static uas_status add_one(commit *c, as_nv *nv, uint32_t type, const uas_nodeid *target,
                          bool forward)
{
    if (dedupe(c, nv->d, type, target, forward))
        return UAS_GOOD;
    uas_expandednodeid x;
    memset(&x, 0, sizeof(x));
    x.nodeid = *target;
    return as_add_ref(c->l->as, nv, type, &x, forward);
}

static uas_status register_reftype(commit *c, ns_item *it, uint32_t depth)
{
    ns_load *l = c->l;
    if (it->reftype || depth > 64)
        return UAS_GOOD;
    uint32_t super = UAS_NS0ID_REFERENCES;
    if (it->has_super) {
        ns_item *p = ns_find_item(l, &it->super);
        if (p) {
            AS_TRY(register_reftype(c, p, depth + 1));
            super = p->reftype;
        } else if (!as_reftype_id(l->as, &it->super, &super)) {
            super = UAS_NS0ID_REFERENCES;
        }
    }
    return as_dyn_reftype_add(l->as, &it->n->id, super, &it->reftype);
}

static uas_status commit_refs(commit *c)
{
    ns_load *l = c->l;
    size_t refs = 0;
    for (size_t fi = 0; fi < l->file_count; fi++)
        for (size_t i = 0; i < l->files[fi].item_count; i++)
            refs += l->files[fi].items[i].ref_count;
    c->set_cap = 64;
    while (c->set_cap < refs * 4)
        c->set_cap *= 2;
    c->set = uas_calloc(c->set_cap, sizeof(*c->set));
    if (!c->set)
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            for (size_t r = 0; r < it->ref_count; r++) {
                ns_sref *ref = &it->refs[r];
                uint32_t type;
                if (!as_reftype_id(l->as, &ref->type, &type))
                    return UAS_BAD_REFERENCE_TYPE_ID_INVALID; /* checked before */
                as_nv src = {NULL, it->n}, dst;
                AS_TRY(add_one(c, &src, type, &ref->target, ref->forward));
                as_node *t = end_node(c, &ref->target, &dst);
                if (!t)
                    return UAS_BAD_OUT_OF_MEMORY;
                AS_TRY(add_one(c, &dst, type, &it->n->id, !ref->forward));
            }
        }
    }
    return UAS_GOOD;
}

static void undo(commit *c)
{
    ns_load *l = c->l;
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            if (!it->n)
                continue;
            as_nv nv = as_lookup(l->as, &it->n->id);
            if (nv.d == it->n)
                as_unlink(l->as, it->n);
            /* References the commit appended stay owned by the node; it
             * is freed with the load. */
        }
    }
    for (size_t i = 0; i < c->tn; i++) {
        as_node *d = c->t[i].d;
        while (d->ref_count > c->t[i].ref_count)
            as_ref_clear(&d->refs[--d->ref_count]);
    }
    as_dyn_reftype_truncate(l->as, c->reftypes_before);
}

static void shrink_refs(as_node *d)
{
    if (d->ref_cap > d->ref_count && d->ref_count) {
        as_ref *r =
            uas_realloc(d->refs, d->ref_cap * sizeof(as_ref), d->ref_count * sizeof(as_ref));
        if (r) {
            d->refs = r;
            d->ref_cap = d->ref_count;
        }
    }
}

static uas_status do_commit(ns_load *l)
{
    uas_server *s = l->server;
    uas_aspace *as = l->as;
    for (size_t i = 0; i < l->new_uri_count; i++) {
        uint16_t idx = uas_server_add_namespace(s, l->new_uris[i]);
        if (idx != l->ns_base + i)
            return ns_fail(l, NULL, 0, UAS_BAD_INVALID_STATE,
                           "namespace %s got index %u instead of %zu (added concurrently?)",
                           l->new_uris[i], idx, l->ns_base + i);
    }
    commit c;
    memset(&c, 0, sizeof(c));
    c.l = l;
    as_wrlock(as);
    c.reftypes_before = as->dyn_reftype_count;
    uas_status st = UAS_GOOD;
    for (size_t fi = 0; fi < l->file_count && st == UAS_GOOD; fi++)
        for (size_t i = 0; i < l->files[fi].item_count && st == UAS_GOOD; i++)
            if (l->files[fi].items[i].n->node_class == UAS_NODE_CLASS_REFERENCE_TYPE)
                st = register_reftype(&c, &l->files[fi].items[i], 0);
    /* A program may add nodes between the checks and here (a load while
     * the server runs): the ids are looked up again under the write lock. */
    for (size_t fi = 0; fi < l->file_count && st == UAS_GOOD; fi++)
        for (size_t i = 0; i < l->files[fi].item_count && st == UAS_GOOD; i++) {
            as_nv nv = as_lookup(as, &l->files[fi].items[i].n->id);
            if (as_nv_found(&nv))
                st = UAS_BAD_NODE_ID_EXISTS;
        }
    for (size_t fi = 0; fi < l->file_count && st == UAS_GOOD; fi++)
        for (size_t i = 0; i < l->files[fi].item_count && st == UAS_GOOD; i++)
            st = as_insert(as, l->files[fi].items[i].n);
    if (st == UAS_GOOD)
        st = commit_refs(&c);
    if (st != UAS_GOOD) {
        undo(&c);
    } else {
        /* The address space owns the nodes now. Their reference arrays
         * grew by doubling: cut them to size (a model is mostly read). */
        for (size_t fi = 0; fi < l->file_count; fi++)
            for (size_t i = 0; i < l->files[fi].item_count; i++) {
                shrink_refs(l->files[fi].items[i].n);
                l->files[fi].items[i].n->persist = l->limits.persist;
                l->files[fi].items[i].n = NULL;
            }
        for (size_t i = 0; i < c.tn; i++)
            shrink_refs(c.t[i].d);
    }
    as_unlock(as);
    uas_free(c.t, c.tcap * sizeof(touched));
    uas_free(c.set, c.set_cap * sizeof(*c.set));
    if (st == UAS_BAD_NODE_ID_EXISTS)
        return ns_fail(l, NULL, 0, st, "a node of the files was added meanwhile by the program");
    if (st != UAS_GOOD)
        return ns_fail(l, NULL, 0, st, "committing the nodes failed (out of memory)");
    return UAS_GOOD;
}

static uas_status register_models(ns_load *l)
{
    uas_server *s = l->server;
    ns_registry *r = s->nodesets;
    if (!r && !(r = s->nodesets = calloc(1, sizeof(*r))))
        return UAS_BAD_OUT_OF_MEMORY;
    for (size_t fi = 0; fi < l->file_count; fi++) {
        for (size_t k = 0; k < l->files[fi].model_count; k++) {
            if (r->count == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 8;
                ns_model *g = realloc(r->models, cap * sizeof(ns_model));
                if (!g)
                    return UAS_BAD_OUT_OF_MEMORY;
                r->models = g;
                r->cap = cap;
            }
            const ns_model *m = &l->files[fi].models[k];
            r->models[r->count].uri = strdup(m->uri);
            r->models[r->count].version = m->version ? strdup(m->version) : NULL;
            if (!r->models[r->count].uri)
                return UAS_BAD_OUT_OF_MEMORY;
            r->count++;
        }
    }
    return UAS_GOOD;
}

/* ---- driver ---- */

static void free_load(ns_load *l)
{
    for (size_t fi = 0; fi < l->file_count; fi++) {
        ns_file *f = &l->files[fi];
        for (size_t i = 0; i < f->item_count; i++) {
            ns_item *it = &f->items[i];
            for (size_t r = 0; r < it->ref_count; r++) {
                uas_clear(&it->refs[r].type, UAS_TYPE(NODE_ID));
                uas_clear(&it->refs[r].target, UAS_TYPE(NODE_ID));
            }
            uas_free(it->refs, it->ref_cap * sizeof(ns_sref));
            as_node_free(l->as, it->n);
        }
        uas_free(f->items, f->item_cap * sizeof(ns_item));
    }
    uas_arena_free(&l->arena);
}

uas_status uas__nodeset_load(uas_server *s, const char *const *paths, size_t count,
                             const ns_limits *limits, char *err, size_t err_len)
{
    if (err_len)
        err[0] = 0;
    if (count == 0)
        return UAS_GOOD;
    ns_load l;
    memset(&l, 0, sizeof(l));
    l.server = s;
    l.as = s->as;
    l.limits = *limits;
    l.err = err;
    l.err_len = err_len;
    if (err_len)
        err[0] = 0;
    uas_arena_init(&l.arena, NULL, 0, 0);
    pthread_mutex_lock(&s->ns_lock);
    l.ns_base = (uint16_t)s->namespace_count;
    pthread_mutex_unlock(&s->ns_lock);
    l.files = uas_arena_calloc(&l.arena, count ? count : 1, sizeof(ns_file));
    if (!l.files) {
        uas_arena_free(&l.arena);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    l.file_count = count;
    for (size_t i = 0; i < count && l.st == UAS_GOOD; i++) {
        l.files[i].path = paths[i];
        ns_parse_file(&l, &l.files[i]);
    }
    if (l.st == UAS_GOOD)
        order_files(&l);
    /* Checks read the address space (existing nodes): under the read
     * lock, which the commit trades for the write lock. */
    if (l.st == UAS_GOOD) {
        as_rdlock(l.as);
        if (build_index(&l) == UAS_GOOD && check_refs(&l) == UAS_GOOD &&
            check_hierarchy(&l) == UAS_GOOD)
            check_values(&l);
        as_unlock(l.as);
    }
    if (l.st == UAS_GOOD && do_commit(&l) == UAS_GOOD && register_models(&l) != UAS_GOOD)
        ns_fail(&l, NULL, 0, UAS_BAD_OUT_OF_MEMORY, "out of memory");
    uas_status st = l.st;
    if (st != UAS_GOOD)
        uas_log(UAS_LOG_ERROR, "nodeset", "%s", err_len ? err : "load failed");
    else
        uas_log(UAS_LOG_INFO, "nodeset", "loaded %zu nodes from %zu NodeSet2 files", l.node_total,
                count);
    free_load(&l);
    return st;
}

uas_status uas_server_load_nodesets(uas_server *s, const char *const *paths, size_t count)
{
    char err[512];
    ns_limits lim = {
        .max_file_size = s->cfg.nodeset_max_file_size,
        .max_nodes = s->cfg.nodeset_max_nodes,
        .max_depth = s->cfg.nodeset_max_depth,
    };
    return uas__nodeset_load(s, paths, count, &lim, err, sizeof(err));
}

uas_status uas_server_bind_method(uas_server *s, const uas_nodeid *id, uas_method_fn fn, void *ud)
{
    return uas_aspace_set_method(s->as, id, fn, ud);
}

uas_status uas_nodeset_load_config(uas_server *s, const char *list)
{
    if (!list || !*list)
        return UAS_GOOD;
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',' || *p == '\n';
    char *copy = strdup(list);
    const char **paths = calloc(n, sizeof(char *));
    if (!copy || !paths) {
        free(copy);
        free(paths);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",\n", &save); t;
         t = strtok_r(NULL, ",\n", &save)) {
        while (*t == ' ' || *t == '\t')
            t++;
        char *e = t + strlen(t);
        while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
            *--e = 0;
        if (*t)
            paths[k++] = t;
    }
    uas_status st = k ? uas_server_load_nodesets(s, paths, k) : UAS_GOOD;
    free(copy);
    free(paths);
    return st;
}
