/* NodeSet2 load time and memory per node (docs/Benchmarks.md, "NodeSet2
 * loading"). Each round creates a server, loads the given files with
 * uas_server_load_nodesets and measures the wall time of the load and the
 * heap bytes it left live (the allocator's counters, uas_mem_get_stats),
 * then deletes the server. Prints median and range over the rounds, and
 * namespace 0's static tables per node for comparison.
 *
 *   nodeset_bench [--rounds N] FILE...   */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <malloc.h>

#include <ua/server.h>

#include "aspace_internal.h"
#include "ns0.h"
#include "server_internal.h"

/* Where the bytes of the heap nodes go, by node class: what glibc's malloc
 * really holds for each piece (malloc_usable_size, so rounding is in; its
 * 8-byte chunk header is added per allocation). Values, definitions and
 * the rest are the difference to the measured total. */
typedef struct cls_bytes {
    size_t nodes, record, refs, strings, values, allocs;
} cls_bytes;

static size_t blk(const void *p, cls_bytes *c)
{
    if (!p)
        return 0;
    c->allocs++;
    return malloc_usable_size((void *)p) + 8;
}

static size_t str_blk(const uas_string *s, cls_bytes *c)
{
    return s->length > 0 ? blk(s->data, c) : 0;
}

static void text_blk(const uas_localizedtext *t, size_t *bytes, cls_bytes *c)
{
    if (t)
        *bytes += blk(t, c) + str_blk(&t->text, c) + str_blk(&t->locale, c);
}

static void account(const as_node *n, cls_bytes *c)
{
    c->nodes++;
    c->record += blk(n, c);
    c->refs += blk(n->refs, c);
    for (uint32_t i = 0; i < n->ref_count; i++)
        if (n->refs[i].boxed)
            c->refs += blk(n->refs[i].t.box, c);
    if (n->id.kind == UAS_NODEID_STRING)
        c->strings += str_blk(&n->id.id.string, c);
    c->strings += str_blk(&n->browse_name.name, c);
    text_blk(n->display_name, &c->strings, c);
    text_blk(n->description, &c->strings, c);
    const as_var *v = as_var_of(n);
    if (v) {
        /* The value's top-level block and, for arrays of strings, each
         * element's (what the nine files hold), plus the DataType's. */
        c->values += blk(v->array_dims, c);
        if (v->data_type.kind == UAS_NODEID_STRING)
            c->values += str_blk(&v->data_type.id.string, c);
        const as_vsnap *sn = atomic_load(&((as_var *)v)->vsnap);
        const uas_variant *x = sn ? &sn->value : NULL;
        if (sn)
            c->values += blk(sn, c);
        c->values += blk(atomic_load(&((as_var *)v)->fast), c);
        if (x && x->type && x->data && x->data != UAS_EMPTY_ARRAY) {
            size_t cnt = x->is_array ? x->array_length : 1;
            c->values += blk(x->data, c);
            if (x->type == UAS_TYPE(STRING))
                for (size_t i = 0; i < cnt; i++)
                    c->values += str_blk(&((const uas_string *)x->data)[i], c);
            if (x->type == UAS_TYPE(LOCALIZED_TEXT))
                for (size_t i = 0; i < cnt; i++) {
                    c->values += str_blk(&((const uas_localizedtext *)x->data)[i].text, c);
                    c->values += str_blk(&((const uas_localizedtext *)x->data)[i].locale, c);
                }
        }
    }
}

static void breakdown(uas_server *s, size_t total_malloc)
{
    uas_aspace *as = s->as;
    cls_bytes cb[130]; /* by class; [129]: overlays of namespace 0 */
    memset(cb, 0, sizeof(cb));
    as_table *t = atomic_load(&as->table);
    size_t slots = t->count * sizeof(t->b[0]);
    for (size_t i = 0; i < t->count; i++)
        for (as_node *n = atomic_load(&t->b[i]); n; n = atomic_load(&n->next))
            account(n, &cb[n->node_class]);
    size_t ov = 0;
    for (size_t i = 0; i < uas_ns0_node_count; i++) {
        as_node *o = atomic_load(&as->overlay[i]);
        if (o) {
            account(o, &cb[129]);
            ov++;
        }
    }
    static const char *names[130] = {
        [1] = "Object",        [2] = "Variable",       [4] = "Method",    [8] = "ObjectType",
        [16] = "VariableType", [32] = "ReferenceType", [64] = "DataType", [128] = "View"};
    size_t sum = 0;
    printf("%-14s %6s %8s %8s %8s %8s %7s %6s\n", "class", "nodes", "record/n", "refs/n", "strs/n",
           "values/n", "allocs", "B/node");
    for (int k = 0; k <= 129; k++) {
        cls_bytes *c = &cb[k];
        if (!c->nodes)
            continue;
        const char *nm = k == 129 ? "ns0 overlays" : names[k] ? names[k] : "?";
        size_t tot = c->record + c->refs + c->strings + c->values;
        sum += tot;
        printf("%-14s %6zu %8.0f %8.0f %8.0f %8.0f %7zu %6.0f\n", nm, c->nodes,
               (double)c->record / c->nodes, (double)c->refs / c->nodes,
               (double)c->strings / c->nodes, (double)c->values / c->nodes, c->allocs,
               (double)tot / c->nodes);
    }
    printf("hash slots %zu B; overlays %zu; definitions, other values and the rest %zd B\n", slots,
           ov, (ssize_t)total_malloc - (ssize_t)sum - (ssize_t)slots);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = 5, first = 1;
    if (argc > 2 && !strcmp(argv[1], "--rounds")) {
        rounds = atoi(argv[2]);
        first = 3;
    }
    if (first >= argc || rounds < 1 || rounds > 100) {
        fprintf(stderr, "usage: nodeset_bench [--rounds N] FILE...\n");
        return 2;
    }
    const char **paths = (const char **)argv + first;
    size_t n = (size_t)(argc - first);
    double ms[100], bytes[100], mbytes[100], allocs[100];
    size_t nodes = 0;
    for (int r = 0; r < rounds; r++) {
        uas_server_config cfg;
        uas_server_config_default(&cfg);
        cfg.threads = 1;
        cfg.log_level = UAS_LOG_WARN;
        uas_status st;
        uas_server *s = uas_server_new(&cfg, &st);
        if (!s) {
            fprintf(stderr, "uas_server_new: %s\n", uas_status_name(st));
            return 1;
        }
        uas_mem_stats a, b;
        uas_mem_get_stats(&a);
        struct mallinfo2 ma = mallinfo2();
        double t0 = now_ms();
        st = uas_server_load_nodesets(s, paths, n);
        double t1 = now_ms();
        uas_mem_get_stats(&b);
        struct mallinfo2 mb = mallinfo2();
        if (st != UAS_GOOD) {
            fprintf(stderr, "load failed: %s\n", uas_status_name(st));
            return 1;
        }
        ms[r] = t1 - t0;
        bytes[r] = (double)(b.bytes_live - a.bytes_live);
        mbytes[r] = (double)mb.uordblks - (double)ma.uordblks;
        allocs[r] = (double)(b.allocs - b.frees) - (double)(a.allocs - a.frees);
        if (r == rounds - 1)
            breakdown(s, (size_t)mbytes[r]);
        /* NODESET_BENCH_KEEP: the last round's server stays, so a heap
         * profiler's leak report lists what the load keeps. */
        if (r < rounds - 1 || !getenv("NODESET_BENCH_KEEP"))
            uas_server_delete(s);
    }
    /* The node count: the files' UA* node elements. */
    for (size_t i = 0; i < n; i++) {
        FILE *fp = fopen(paths[i], "r");
        char line[4096];
        while (fp && fgets(line, sizeof(line), fp)) {
            const char *p = line;
            while ((p = strstr(p, "<UA")) != NULL) {
                p += 3;
                if (!strncmp(p, "Object", 6) || !strncmp(p, "Variable", 8) ||
                    !strncmp(p, "Method", 6) || !strncmp(p, "DataType", 8) ||
                    !strncmp(p, "ReferenceType", 13) || !strncmp(p, "View", 4))
                    nodes++;
            }
        }
        if (fp)
            fclose(fp);
    }
    qsort(ms, (size_t)rounds, sizeof(double), cmp);
    qsort(bytes, (size_t)rounds, sizeof(double), cmp);
    qsort(mbytes, (size_t)rounds, sizeof(double), cmp);
    printf("commit %s, flags '%s', %zu files, %zu nodes, %d rounds\n", UAS_BENCH_COMMIT,
           UAS_BENCH_FLAGS, n, nodes, rounds);
    printf("load time   median %.1f ms (range %.1f .. %.1f)\n", ms[rounds / 2], ms[0],
           ms[rounds - 1]);
    printf("heap kept   median %.0f bytes = %.0f bytes/node (range %.0f .. %.0f)\n",
           bytes[rounds / 2], bytes[rounds / 2] / (double)nodes, bytes[0], bytes[rounds - 1]);
    printf("heap malloc median %.0f bytes = %.0f bytes/node (mallinfo2 uordblks: every "
           "allocation, with malloc's rounding and headers); %.0f live allocations\n",
           mbytes[rounds / 2], mbytes[rounds / 2] / (double)nodes, allocs[rounds - 1]);
    printf("ns0 static  %zu nodes: rows %zu B + references %zu B = %.0f bytes/node "
           "(strings and value blobs not counted)\n",
           uas_ns0_node_count, uas_ns0_node_count * sizeof(uas_ns0_node),
           uas_ns0_ref_count * sizeof(uas_ns0_ref),
           (double)(uas_ns0_node_count * sizeof(uas_ns0_node) +
                    uas_ns0_ref_count * sizeof(uas_ns0_ref)) /
               (double)uas_ns0_node_count);
    return 0;
}
