/* uacli browse / translate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>

#include "cli.h"

enum { NCOLS = 4, MAX_PAGES = 100000, MAX_NODES = 5000 };

typedef struct table {
    char **cells; /* NCOLS per row, from the arena */
    unsigned *depth;
    size_t rows, cap;
} table;

static char *cell_dup(cli *c, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = uas_arena_alloc(&c->arena, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static uas_status add_ref(cli *c, table *t, const uas_reference_description *r, unsigned depth)
{
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **cells = realloc(t->cells, cap * NCOLS * sizeof(char *));
        if (!cells)
            return UAS_BAD_OUT_OF_MEMORY;
        t->cells = cells;
        unsigned *depths = realloc(t->depth, cap * sizeof(unsigned));
        if (!depths)
            return UAS_BAD_OUT_OF_MEMORY;
        t->depth = depths;
        t->cap = cap;
    }
    char name[512], id[512], type[512];
    /* Depth shows as indentation of the name in a recursive browse. */
    int n = snprintf(name, sizeof(name), "%*s", (int)(depth * 2 < 64 ? depth * 2 : 64), "");
    if (r->browse_name.ns)
        n += snprintf(name + n, sizeof(name) - (size_t)n, "%u:", (unsigned)r->browse_name.ns);
    snprintf(name + n, sizeof(name) - (size_t)n, "%.*s",
             r->browse_name.name.data ? (int)r->browse_name.name.length : 0,
             r->browse_name.name.data ? (const char *)r->browse_name.name.data : "");
    uas_expandednodeid_format(&r->node_id, id, sizeof(id));
    bool has_type = r->type_definition.nodeid.kind != UAS_NODEID_NUMERIC ||
                    r->type_definition.nodeid.id.numeric != 0 || r->type_definition.nodeid.ns;
    if (has_type)
        uas_expandednodeid_format(&r->type_definition, type, sizeof(type));
    else
        snprintf(type, sizeof(type), "-");
    char **row = t->cells + t->rows * NCOLS;
    row[0] = cell_dup(c, name);
    row[1] = cell_dup(c, id);
    row[2] = cell_dup(c, cli_node_class_name(r->node_class));
    row[3] = cell_dup(c, type);
    if (!row[0] || !row[1] || !row[2] || !row[3])
        return UAS_BAD_OUT_OF_MEMORY;
    t->depth[t->rows] = depth;
    t->rows++;
    return UAS_GOOD;
}

/* One object per reference, in the table's order; the indentation of a
 * recursive browse becomes "Depth" (names are given without it). */
static void print_json(const table *t)
{
    static const char *const head[NCOLS] = {"BrowseName", "NodeId", "NodeClass", "TypeDefinition"};
    putchar('[');
    for (size_t i = 0; i < t->rows; i++) {
        printf("%s{", i ? "," : "");
        for (int k = 0; k < NCOLS; k++) {
            const char *v = t->cells[i * NCOLS + k];
            if (k == 0)
                v += t->depth[i] * 2 < 64 ? t->depth[i] * 2 : 64;
            cli_json_key(head[k], k == 0);
            uas_json_string(stdout, (const uint8_t *)v, strlen(v));
        }
        cli_json_key("Depth", false);
        printf("%u}", t->depth[i]);
    }
    printf("]\n");
}

static void print_table(const table *t)
{
    static const char *const head[NCOLS] = {"BrowseName", "NodeId", "NodeClass", "TypeDefinition"};
    size_t w[NCOLS];
    for (int k = 0; k < NCOLS; k++) {
        w[k] = strlen(head[k]);
        for (size_t i = 0; i < t->rows; i++) {
            size_t n = strlen(t->cells[i * NCOLS + k]);
            if (n > w[k])
                w[k] = n;
        }
    }
    for (int k = 0; k < NCOLS; k++)
        printf("| %-*s ", (int)w[k], head[k]);
    printf("|\n");
    for (int k = 0; k < NCOLS; k++) {
        printf("|");
        for (size_t i = 0; i < w[k] + 2; i++)
            putchar('-');
    }
    printf("|\n");
    for (size_t i = 0; i < t->rows; i++) {
        for (int k = 0; k < NCOLS; k++)
            printf("| %-*s ", (int)w[k], t->cells[i * NCOLS + k]);
        printf("|\n");
    }
}

/* The references of one node, following continuation points. They point
 * into responses in c->arena, which live until cli_close. */
typedef struct refs {
    const uas_reference_description **v;
    size_t n, cap;
} refs;

static uas_status take_result(const uas_browse_result *r, refs *out, uas_bytestring *cp)
{
    if (uas_is_bad(r->status_code))
        return r->status_code;
    for (size_t i = 0; i < r->references_count; i++) {
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 32;
            const uas_reference_description **v = realloc(out->v, cap * sizeof(*v));
            if (!v)
                return UAS_BAD_OUT_OF_MEMORY;
            out->v = v;
            out->cap = cap;
        }
        out->v[out->n++] = &r->references[i];
    }
    *cp = r->continuation_point;
    return UAS_GOOD;
}

/* Bad statuses are returned, and printed (what names the service). */
static uas_status browse_one(cli *c, const uas_nodeid *id, refs *out)
{
    uas_browse_description bd;
    memset(&bd, 0, sizeof(bd));
    bd.node_id = *id;
    bd.browse_direction = UAS_BROWSE_DIRECTION_FORWARD;
    bd.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    bd.include_subtypes = true;
    bd.result_mask = 0x3F; /* everything */
    uas_browse_request req;
    memset(&req, 0, sizeof(req));
    req.requested_max_references_per_node = c->max_refs;
    req.nodes_to_browse_count = 1;
    req.nodes_to_browse = &bd;
    uas_browse_response resp;
    uas_status st =
        cli_call(c, "browse", &req, UAS_TYPE(BROWSE_REQUEST), &resp, UAS_TYPE(BROWSE_RESPONSE));
    if (st != UAS_GOOD)
        return st;
    uas_bytestring cp = {0, NULL};
    st = resp.results_count == 1 ? take_result(&resp.results[0], out, &cp)
                                 : UAS_BAD_UNKNOWN_RESPONSE;
    /* Follow continuation points until the server has given everything. */
    for (int page = 0; st == UAS_GOOD && cp.data && cp.length && page < MAX_PAGES; page++) {
        uas_browse_next_request next;
        memset(&next, 0, sizeof(next));
        next.continuation_points_count = 1;
        next.continuation_points = &cp;
        uas_browse_next_response nresp;
        st = cli_call(c, "BrowseNext", &next, UAS_TYPE(BROWSE_NEXT_REQUEST), &nresp,
                      UAS_TYPE(BROWSE_NEXT_RESPONSE));
        if (st != UAS_GOOD)
            return st;
        cp.data = NULL;
        st = nresp.results_count == 1 ? take_result(&nresp.results[0], out, &cp)
                                      : UAS_BAD_UNKNOWN_RESPONSE;
    }
    if (st != UAS_GOOD)
        cli_fail("browse", st);
    return st;
}

/* A recursive browse: every node once (hierarchies may hold cycles and
 * shared children), at most --depth levels and MAX_NODES rows. */
typedef struct walk {
    table t;
    char **seen; /* node id texts, from the arena */
    size_t nseen, capseen;
    unsigned max_depth;
    bool truncated;
} walk;

static bool first_visit(cli *c, walk *w, const char *id)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (!strcmp(w->seen[i], id))
            return false;
    if (w->nseen == w->capseen) {
        size_t cap = w->capseen ? w->capseen * 2 : 64;
        char **v = realloc(w->seen, cap * sizeof(*v));
        if (!v)
            return false;
        w->seen = v;
        w->capseen = cap;
    }
    w->seen[w->nseen] = cell_dup(c, id);
    return w->seen[w->nseen++] != NULL;
}

static uas_status walk_node(cli *c, walk *w, const uas_nodeid *id, unsigned depth)
{
    refs r = {NULL, 0, 0};
    uas_status st = browse_one(c, id, &r);
    for (size_t i = 0; st == UAS_GOOD && i < r.n; i++) {
        if (w->t.rows >= MAX_NODES) {
            w->truncated = true;
            break;
        }
        st = add_ref(c, &w->t, r.v[i], depth);
        const uas_expandednodeid *target = &r.v[i]->node_id;
        char text[512];
        uas_expandednodeid_format(target, text, sizeof(text));
        if (st == UAS_GOOD && depth + 1 < w->max_depth && target->server_index == 0 &&
            !target->namespace_uri.data && first_visit(c, w, text))
            st = walk_node(c, w, &target->nodeid, depth + 1);
    }
    free(r.v);
    return st;
}

int cmd_browse(cli *c, int argc, char **argv)
{
    uas_nodeid start;
    int rc = argc > 0 ? cli_parse_nodeid(c, argv[0], &start) : 0;
    if (rc)
        return rc;
    if (argc == 0)
        start = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    if ((rc = cli_open(c, true)))
        return rc;
    walk w;
    memset(&w, 0, sizeof(w));
    w.max_depth = c->recursive ? (c->depth ? c->depth : 3) : 1;
    char text[512];
    cli_nodeid_text(&start, text, sizeof(text));
    first_visit(c, &w, text);
    uas_status st = walk_node(c, &w, &start, 0);
    if (st == UAS_GOOD) {
        if (c->json)
            print_json(&w.t);
        else
            print_table(&w.t);
        if (w.truncated)
            fprintf(stderr, "uacli: stopped after %d references; browse a deeper node\n",
                    MAX_NODES);
    }
    free(w.t.cells);
    free(w.t.depth);
    free(w.seen);
    return st == UAS_GOOD ? EXIT_OK : EXIT_UA;
}

/* ---- translate: the relative path text of Part 4, A.2 ("/" hierarchical
 * references, "." aggregates, "&" escapes, "ns:" prefixes) ---- */

static int parse_path(cli *c, const char *text, uas_relative_path *out)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '/' || *p == '.';
    out->elements = uas_arena_calloc(&c->arena, cap, sizeof(uas_relative_path_element));
    out->elements_count = 0;
    if (!out->elements)
        return cli_fail("translate", UAS_BAD_OUT_OF_MEMORY);
    const char *p = text;
    size_t len = strlen(text);
    char *name = uas_arena_alloc(&c->arena, len + 1);
    if (!name)
        return cli_fail("translate", UAS_BAD_OUT_OF_MEMORY);
    while (*p) {
        uint32_t ref;
        if (*p == '/')
            ref = UAS_NS0ID_HIERARCHICALREFERENCES;
        else if (*p == '.')
            ref = UAS_NS0ID_AGGREGATES;
        else
            return cli_usage_error("path '%s': each element starts with '/' or '.'", text);
        p++;
        size_t n = 0;
        bool escaped = false;
        while (*p && (escaped || (*p != '/' && *p != '.'))) {
            if (!escaped && *p == '&') {
                escaped = true;
                p++;
                continue;
            }
            name[n++] = *p++;
            escaped = false;
        }
        /* An optional "ns:" prefix. */
        uint16_t ns = 0;
        size_t start = 0;
        size_t digits = 0;
        while (digits < n && name[digits] >= '0' && name[digits] <= '9')
            digits++;
        if (digits > 0 && digits < n && name[digits] == ':') {
            unsigned long v = strtoul(name, NULL, 10);
            if (v > UINT16_MAX)
                return cli_usage_error("path '%s': namespace index too large", text);
            ns = (uint16_t)v;
            start = digits + 1;
        }
        if (n == start)
            return cli_usage_error("path '%s': empty browse name", text);
        uas_relative_path_element *e = &out->elements[out->elements_count++];
        e->reference_type_id = uas_nodeid_numeric(0, ref);
        e->include_subtypes = true;
        e->target_name.ns = ns;
        e->target_name.name.length = n - start;
        e->target_name.name.data = uas_arena_alloc(&c->arena, n - start);
        if (!e->target_name.name.data)
            return cli_fail("translate", UAS_BAD_OUT_OF_MEMORY);
        memcpy(e->target_name.name.data, name + start, n - start);
    }
    if (out->elements_count == 0)
        return cli_usage_error("path '%s' is empty", text);
    return EXIT_OK;
}

int cmd_translate(cli *c, int argc, char **argv)
{
    (void)argc;
    uas_browse_path bp;
    memset(&bp, 0, sizeof(bp));
    bp.starting_node = uas_nodeid_numeric(0, UAS_NS0ID_ROOTFOLDER);
    int rc = parse_path(c, argv[0], &bp.relative_path);
    if (rc || (rc = cli_open(c, true)))
        return rc;
    uas_translate_browse_paths_to_node_ids_request req;
    memset(&req, 0, sizeof(req));
    req.browse_paths_count = 1;
    req.browse_paths = &bp;
    uas_translate_browse_paths_to_node_ids_response resp;
    if (cli_call(c, "translate", &req, UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST), &resp,
                 UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE)))
        return EXIT_UA;
    if (resp.results_count != 1)
        return cli_fail("translate", UAS_BAD_UNKNOWN_RESPONSE);
    const uas_browse_path_result *r = &resp.results[0];
    if (uas_is_bad(r->status_code))
        return cli_fail("translate", r->status_code);
    if (c->json) {
        printf("{");
        cli_json_key("Path", true);
        uas_json_string(stdout, (const uint8_t *)argv[0], strlen(argv[0]));
        cli_json_key("Result", false);
        uas_value_print_json(stdout, r, UAS_TYPE(BROWSE_PATH_RESULT));
        printf("}\n");
        return EXIT_OK;
    }
    for (size_t i = 0; i < r->targets_count; i++) {
        char buf[512];
        uas_expandednodeid_format(&r->targets[i].target_id, buf, sizeof(buf));
        if (r->targets[i].remaining_path_index == UINT32_MAX)
            printf("%s -> %s\n", argv[0], buf);
        else
            printf("%s -> %s (remaining path from element %u)\n", argv[0], buf,
                   (unsigned)r->targets[i].remaining_path_index);
    }
    return EXIT_OK;
}
