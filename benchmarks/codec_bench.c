/* Codec micro-benchmark: ns per message and heap bytes per message for the
 * service messages on the hot paths. Several rounds; prints median and range
 * as a Markdown table with the run record. Decoding uses a warm per-request
 * arena (reset between messages) as the server does, so the heap columns
 * show what the steady state really allocates. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include <ua/codec.h>
#include <ua/nodeids.h>
#include <ua/types.h>

#ifndef UAS_BENCH_FLAGS
#define UAS_BENCH_FLAGS "unknown"
#endif
#ifndef UAS_BENCH_COMMIT
#define UAS_BENCH_COMMIT "unknown"
#endif

enum { MAX_ROUNDS = 15 };

typedef struct bench_case {
    const char *name;
    const uas_type *type;
    void *value;
    uint8_t *wire;
    size_t wire_len;
} bench_case;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- message builders (all memory from one setup arena) ---- */

static uas_arena setup;

static void *salloc(size_t n)
{
    void *p = uas_arena_calloc(&setup, 1, n);
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    return p;
}

static void request_header(uas_request_header *h)
{
    h->authentication_token = uas_nodeid_numeric(0, 0x10203040);
    h->timestamp = 133000000000000000LL;
    h->request_handle = 42;
    h->timeout_hint = 10000;
}

static void response_header(uas_response_header *h)
{
    h->timestamp = 133000000000000000LL;
    h->request_handle = 42;
}

static void *make_read_request(size_t n)
{
    uas_read_request *r = salloc(sizeof(*r));
    request_header(&r->request_header);
    r->timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    r->nodes_to_read_count = n;
    r->nodes_to_read = salloc(n * sizeof(uas_read_value_id));
    for (size_t i = 0; i < n; i++) {
        r->nodes_to_read[i].node_id = uas_nodeid_numeric(1, 1001 + (uint32_t)(i % 100));
        r->nodes_to_read[i].attribute_id = 13;
    }
    return r;
}

static void *make_read_response(size_t n)
{
    uas_read_response *r = salloc(sizeof(*r));
    response_header(&r->response_header);
    r->results_count = n;
    r->results = salloc(n * sizeof(uas_datavalue));
    int32_t *vals = salloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        vals[i] = (int32_t)i;
        uas_datavalue *dv = &r->results[i];
        uas_variant_set_scalar(&dv->value, &vals[i], UAS_TYPE(INT32));
        dv->has_value = true;
        dv->has_source_timestamp = dv->has_server_timestamp = true;
        dv->source_timestamp = dv->server_timestamp = 133000000000000000LL + (int64_t)i;
    }
    return r;
}

static void *make_publish_response(size_t n)
{
    uas_publish_response *r = salloc(sizeof(*r));
    response_header(&r->response_header);
    r->subscription_id = 7;
    r->available_sequence_numbers_count = 1;
    r->available_sequence_numbers = salloc(sizeof(uint32_t));
    r->available_sequence_numbers[0] = 4;
    r->notification_message.sequence_number = 4;
    r->notification_message.publish_time = 133000000000000000LL;
    uas_data_change_notification *dcn = salloc(sizeof(*dcn));
    dcn->monitored_items_count = n;
    dcn->monitored_items = salloc(n * sizeof(uas_monitored_item_notification));
    double *vals = salloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        vals[i] = (double)i * 0.5;
        uas_monitored_item_notification *m = &dcn->monitored_items[i];
        m->client_handle = (uint32_t)i;
        uas_variant_set_scalar(&m->value.value, &vals[i], UAS_TYPE(DOUBLE));
        m->value.has_value = true;
        m->value.has_source_timestamp = true;
        m->value.source_timestamp = 133000000000000000LL;
    }
    r->notification_message.notification_data_count = 1;
    r->notification_message.notification_data = salloc(sizeof(uas_extensionobject));
    r->notification_message.notification_data[0].encoding = UAS_EXTOBJ_DECODED;
    r->notification_message.notification_data[0].content.decoded.type =
        UAS_TYPE(DATA_CHANGE_NOTIFICATION);
    r->notification_message.notification_data[0].content.decoded.data = dcn;
    r->results = UAS_EMPTY_ARRAY;
    r->diagnostic_infos = UAS_EMPTY_ARRAY;
    return r;
}

static void *make_browse_response(size_t n)
{
    static char names[100][24];
    uas_browse_response *r = salloc(sizeof(*r));
    response_header(&r->response_header);
    r->results_count = 1;
    r->results = salloc(sizeof(uas_browse_result));
    uas_browse_result *br = &r->results[0];
    br->references_count = n;
    br->references = salloc(n * sizeof(uas_reference_description));
    for (size_t i = 0; i < n; i++) {
        uas_reference_description *d = &br->references[i];
        snprintf(names[i % 100], sizeof(names[0]), "BenchmarkValue%zu", i % 100);
        d->reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
        d->is_forward = true;
        d->node_id.nodeid = uas_nodeid_numeric(1, 1001 + (uint32_t)i);
        d->browse_name.ns = 1;
        d->browse_name.name = uas_string_from(names[i % 100]);
        d->display_name.text = uas_string_from(names[i % 100]);
        d->node_class = UAS_NODE_CLASS_VARIABLE;
        d->type_definition.nodeid = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    }
    return r;
}

/* ---- measurement ---- */

typedef struct result {
    double ns[MAX_ROUNDS];
    double heap_bytes, heap_allocs, arena_bytes;
} result;

static uint8_t scratch[1 << 20];

static void bench_decode(bench_case *c, int rounds, long iters, result *res)
{
    static uint8_t first[16384];
    uas_arena a;
    uas_arena_init(&a, first, sizeof(first), 0);
    void *dst = salloc(c->type->size);
    size_t arena_used = 0;
    uas_mem_stats s0, s1;
    for (int r = 0; r < rounds; r++) {
        /* Warm-up outside the timed and counted loop. */
        for (long i = 0; i < 1000; i++) {
            uas_arena_reset(&a);
            uas_decoder d;
            uas_decoder_init(&d, c->wire, c->wire_len, &a, NULL);
            d.zero_copy = true;
            if (uas_decode(&d, dst, c->type) != UAS_GOOD) {
                fprintf(stderr, "bench: decode of %s failed\n", c->name);
                exit(1);
            }
        }
        uas_mem_get_stats(&s0);
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            uas_arena_reset(&a);
            uas_decoder d;
            uas_decoder_init(&d, c->wire, c->wire_len, &a, NULL);
            d.zero_copy = true;
            (void)uas_decode(&d, dst, c->type);
        }
        double t1 = now_ns();
        uas_mem_get_stats(&s1);
        arena_used = a.used;
        res->ns[r] = (t1 - t0) / (double)iters;
        res->heap_bytes = (double)(s1.bytes_alloc - s0.bytes_alloc) / (double)iters;
        res->heap_allocs = (double)(s1.allocs - s0.allocs) / (double)iters;
    }
    res->arena_bytes = (double)arena_used;
    uas_arena_free(&a);
}

static void bench_encode(bench_case *c, int rounds, long iters, result *res)
{
    uas_mem_stats s0, s1;
    for (int r = 0; r < rounds; r++) {
        size_t n = 0;
        for (long i = 0; i < 1000; i++)
            (void)uas_encode_binary(c->value, c->type, scratch, sizeof(scratch), &n);
        uas_mem_get_stats(&s0);
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            uas_encoder e;
            uas_encoder_init(&e, scratch, sizeof(scratch), NULL);
            (void)uas_encode(&e, c->value, c->type);
        }
        double t1 = now_ns();
        uas_mem_get_stats(&s1);
        res->ns[r] = (t1 - t0) / (double)iters;
        res->heap_bytes = (double)(s1.bytes_alloc - s0.bytes_alloc) / (double)iters;
        res->heap_allocs = (double)(s1.allocs - s0.allocs) / (double)iters;
        res->arena_bytes = 0;
    }
}

static void print_row(const char *op, const bench_case *c, const result *res, int rounds)
{
    double sorted[MAX_ROUNDS];
    memcpy(sorted, res->ns, sizeof(double) * (size_t)rounds);
    qsort(sorted, (size_t)rounds, sizeof(double), cmp_double);
    printf("| %-6s | %-34s | %6zu | %9.1f | %7.1f–%-7.1f | %5.2f | %6.1f | %7.0f |\n", op, c->name,
           c->wire_len, sorted[rounds / 2], sorted[0], sorted[rounds - 1], res->heap_allocs,
           res->heap_bytes, res->arena_bytes);
}

static void run_record(void)
{
    struct utsname u;
    uname(&u);
    char cpu[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    snprintf(cpu, sizeof(cpu), "%s", p + 2);
                    cpu[strcspn(cpu, "\n")] = 0;
                }
                break;
            }
        }
        fclose(f);
    }
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
    printf("Run record: commit %s, %s, %s %s, compiler %s, flags `%s`, %s\n\n", UAS_BENCH_COMMIT,
           cpu, u.sysname, u.release, __VERSION__, UAS_BENCH_FLAGS, date);
}

int main(int argc, char **argv)
{
    int rounds = 5;
    long scale = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            scale = 0;
        } else {
            fprintf(stderr, "usage: codec_bench [--rounds N (1..%d)] [--quick]\n", MAX_ROUNDS);
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "codec_bench: --rounds must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    uas_arena_init(&setup, NULL, 0, 0);
    bench_case cases[] = {
        {"ReadRequest, 1 node", UAS_TYPE(READ_REQUEST), make_read_request(1), NULL, 0},
        {"ReadRequest, 100 nodes", UAS_TYPE(READ_REQUEST), make_read_request(100), NULL, 0},
        {"ReadResponse, 1 value", UAS_TYPE(READ_RESPONSE), make_read_response(1), NULL, 0},
        {"ReadResponse, 100 values", UAS_TYPE(READ_RESPONSE), make_read_response(100), NULL, 0},
        {"PublishResponse, 100 notifications", UAS_TYPE(PUBLISH_RESPONSE),
         make_publish_response(100), NULL, 0},
        {"BrowseResponse, 100 references", UAS_TYPE(BROWSE_RESPONSE), make_browse_response(100),
         NULL, 0},
    };
    size_t ncases = sizeof(cases) / sizeof(cases[0]);
    for (size_t i = 0; i < ncases; i++) {
        size_t n = 0;
        if (uas_encode_binary(cases[i].value, cases[i].type, scratch, sizeof(scratch), &n) !=
            UAS_GOOD) {
            fprintf(stderr, "bench: encode of %s failed\n", cases[i].name);
            return 1;
        }
        cases[i].wire = salloc(n);
        memcpy(cases[i].wire, scratch, n);
        cases[i].wire_len = n;
    }
    run_record();
    printf("| op     | message                            |  bytes | ns/msg    | range (ns)      | "
           "heap allocs/msg | heap B/msg | arena B/msg |\n");
    printf("|--------|------------------------------------|-------:|----------:|-----------------|"
           "------:|-------:|--------:|\n");
    for (size_t i = 0; i < ncases; i++) {
        /* Aim for ~0.2 s per round whatever the message size. */
        long iters = scale ? (long)(2e8 / (double)(cases[i].wire_len * 20 + 200)) : 2000;
        if (iters < 1000)
            iters = 1000;
        result dec, enc;
        fprintf(stderr, "codec_bench: %s (%ld iterations x %d rounds)\n", cases[i].name, iters,
                rounds);
        bench_decode(&cases[i], rounds, iters, &dec);
        bench_encode(&cases[i], rounds, iters, &enc);
        print_row("decode", &cases[i], &dec, rounds);
        print_row("encode", &cases[i], &enc, rounds);
    }
    uas_arena_free(&setup);
    return 0;
}
