/* The allocator indirection, its counters and the per-request arena, plus a
 * failmalloc run: every allocation of a deep copy fails once, in turn. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>
#include <ua/mem.h>
#include <ua/types.h>

#include "helper_codec.h"
#include "helper_populate.h"

static uas_mem_stats stats(void)
{
    uas_mem_stats s;
    uas_mem_get_stats(&s);
    return s;
}

/* ---- arena ---- */

#define ALIGN alignof(max_align_t)

Test(arena, allocations_are_aligned_to_max_align_t_even_in_an_unaligned_first_buffer)
{
    alignas(max_align_t) uint8_t buf[1024 + 1];
    uas_arena a;
    uas_arena_init(&a, buf + 1, 1024, 0);
    static const size_t sizes[] = {1, 3, 17, 0, 31, 64, 5, 4000, 2, 9000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        void *p = uas_arena_alloc(&a, sizes[i]);
        cr_assert_not_null(p, "size %zu", sizes[i]);
        cr_assert_eq((uintptr_t)p % ALIGN, 0, "size %zu at %p", sizes[i], p);
        memset(p, 0x5A, sizes[i]);
    }
    uas_arena_free(&a);
}

Test(arena, first_buffer_serves_small_requests_without_the_heap)
{
    uint8_t buf[2048];
    uas_arena a;
    uas_arena_init(&a, buf, sizeof(buf), 0);
    uas_mem_stats before = stats();
    for (int i = 0; i < 20; i++) {
        uint8_t *p = uas_arena_alloc(&a, 50);
        cr_assert_not_null(p);
        cr_assert(p >= buf && p + 50 <= buf + sizeof(buf), "allocation %d outside the buffer", i);
    }
    cr_assert_eq(stats().allocs, before.allocs, "the heap was used");
    cr_assert_eq(a.heap_total, 0);
    uas_arena_free(&a);
}

Test(arena, zero_size_allocations_are_distinct)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    void *p = uas_arena_alloc(&a, 0);
    void *q = uas_arena_alloc(&a, 0);
    cr_assert_not_null(p);
    cr_assert_not_null(q);
    cr_assert_neq(p, q);
    uas_arena_free(&a);
}

Test(arena, grows_beyond_the_first_block_and_keeps_earlier_data)
{
    uint8_t buf[256];
    uas_arena a;
    uas_arena_init(&a, buf, sizeof(buf), 0);
    enum { N = 400 };
    uint8_t *ptrs[N];
    size_t sizes[N];
    for (int i = 0; i < N; i++) {
        sizes[i] = 1 + (size_t)(i * 37) % 300;
        if (i == 200)
            sizes[i] = 20000; /* larger than any block so far */
        ptrs[i] = uas_arena_alloc(&a, sizes[i]);
        cr_assert_not_null(ptrs[i]);
        memset(ptrs[i], i & 0xFF, sizes[i]);
    }
    cr_assert_gt(a.heap_total, 0);
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < sizes[i]; k++)
            cr_assert_eq(ptrs[i][k], i & 0xFF, "allocation %d byte %zu overwritten", i, k);
    uas_arena_free(&a);
}

/* One "request": a fixed pattern of allocations. */
static void request(uas_arena *a)
{
    for (int i = 0; i < 300; i++) {
        void *p = uas_arena_alloc(a, 16 + (size_t)(i % 7) * 24);
        cr_assert_not_null(p);
        memset(p, 1, 16);
    }
    cr_assert_not_null(uas_arena_alloc(a, 6000));
}

Test(arena, reset_keeps_memory_and_stops_allocating_once_warm)
{
    uint8_t buf[512];
    uas_arena a;
    uas_arena_init(&a, buf, sizeof(buf), 0);
    for (int warm = 0; warm < 4; warm++) {
        request(&a);
        uas_arena_reset(&a);
    }
    uas_mem_stats before = stats();
    for (int i = 0; i < 50; i++) {
        request(&a);
        cr_assert_gt(a.used, 0);
        uas_arena_reset(&a);
        cr_assert_eq(a.used, 0);
    }
    uas_mem_stats after = stats();
    cr_assert_eq(after.allocs, before.allocs, "%llu heap allocations in 50 warm cycles",
                 (unsigned long long)(after.allocs - before.allocs));
    cr_assert_eq(after.frees, before.frees);
    cr_assert_gt(a.heap_total, 0, "reset gave all memory back");
    uas_arena_free(&a);
}

Test(arena, reset_after_an_outsized_request_keeps_only_the_largest_block)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    for (int i = 0; i < 100; i++)
        cr_assert_not_null(uas_arena_alloc(&a, 1000));
    cr_assert_not_null(uas_arena_alloc(&a, 1 << 20));
    size_t held = a.heap_total;
    uas_arena_reset(&a);
    cr_assert_lt(a.heap_total, held);
    cr_assert_geq(a.heap_total, (size_t)1 << 20);
    /* the kept block serves the next request */
    uas_mem_stats before = stats();
    cr_assert_not_null(uas_arena_alloc(&a, 100000));
    cr_assert_eq(stats().allocs, before.allocs);
    uas_arena_free(&a);
}

Test(arena, max_total_cap_returns_null)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 8192);
    cr_assert_not_null(uas_arena_alloc(&a, 4000));
    cr_assert_not_null(uas_arena_alloc(&a, 4000));
    cr_assert_leq(a.heap_total, 8192);
    cr_assert_null(uas_arena_alloc(&a, 4000));
    cr_assert_null(uas_arena_alloc(&a, 9000));
    cr_assert_leq(a.heap_total, 8192);
    /* after a reset the kept memory still serves requests under the cap */
    uas_arena_reset(&a);
    cr_assert_not_null(uas_arena_alloc(&a, 3000));
    uas_arena_free(&a);
}

/* A heap that refuses what no real heap could give (ASan would abort on
 * those sizes instead of returning NULL) and records the largest request. */
static size_t largest_request;

static void *bounded_alloc(void *ud, size_t size)
{
    (void)ud;
    if (size > largest_request)
        largest_request = size;
    return size > ((size_t)1 << 30) ? NULL : malloc(size);
}

static void *bounded_realloc(void *ud, void *p, size_t old_size, size_t new_size)
{
    (void)ud;
    (void)old_size;
    return new_size > ((size_t)1 << 30) ? NULL : realloc(p, new_size);
}

static void bounded_free(void *ud, void *p, size_t size)
{
    (void)ud;
    (void)size;
    free(p);
}

Test(arena, huge_sizes_return_null_instead_of_wrapping)
{
    uas_allocator bounded = {bounded_alloc, bounded_realloc, bounded_free, NULL};
    uas_mem_set_allocator(&bounded);
    static const size_t sizes[] = {SIZE_MAX,      SIZE_MAX - 1,  SIZE_MAX - 14,
                                   SIZE_MAX - 15, SIZE_MAX - 16, SIZE_MAX - 30,
                                   SIZE_MAX - 31, SIZE_MAX - 64, SIZE_MAX / 2 + 1};
    for (int capped = 0; capped < 2; capped++) {
        uint8_t buf[64];
        uas_arena a;
        uas_arena_init(&a, buf, sizeof(buf), capped ? 1u << 20 : 0);
        cr_assert_not_null(uas_arena_alloc(&a, 100)); /* a heap block exists */
        size_t held = a.heap_total;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            largest_request = 0;
            cr_assert_null(uas_arena_alloc(&a, sizes[i]), "size SIZE_MAX - %zu (capped %d)",
                           SIZE_MAX - sizes[i], capped);
            /* a request that reached the heap was not wrapped into a small one */
            cr_assert(largest_request == 0 || largest_request > ((size_t)1 << 30),
                      "size SIZE_MAX - %zu asked the heap for %zu bytes", SIZE_MAX - sizes[i],
                      largest_request);
            cr_assert_eq(a.heap_total, held);
        }
        cr_assert_null(uas_arena_calloc(&a, SIZE_MAX / 2, 3));
        /* two factors whose product overflows size_t (of 64 or 32 bits) */
        cr_assert_null(uas_arena_calloc(&a, (size_t)1 << (sizeof(size_t) == 8 ? 40 : 20),
                                        (size_t)1 << (sizeof(size_t) == 8 ? 40 : 20)));
        /* still usable */
        cr_assert_not_null(uas_arena_alloc(&a, 100));
        uas_arena_free(&a);
    }
    uas_mem_set_allocator(NULL);
}

Test(arena, calloc_zeroes_reused_memory)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uint8_t *p = uas_arena_alloc(&a, 1000);
    cr_assert_not_null(p);
    memset(p, 0xFF, 1000);
    uas_arena_reset(&a);
    uint8_t *q = uas_arena_calloc(&a, 10, 100);
    cr_assert_not_null(q);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(q[i], 0, "byte %d", i);
    uas_arena_free(&a);
}

Test(arena, free_returns_every_heap_byte)
{
    uas_mem_stats before = stats();
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    for (int i = 0; i < 1000; i++)
        cr_assert_not_null(uas_arena_alloc(&a, 333));
    cr_assert_gt(stats().bytes_live, before.bytes_live);
    uas_arena_free(&a);
    cr_assert_eq(stats().bytes_live, before.bytes_live);
    cr_assert_eq(a.heap_total, 0);
    /* usable again after free */
    cr_assert_not_null(uas_arena_alloc(&a, 10));
    uas_arena_free(&a);
}

/* ---- allocator counters ---- */

Test(allocator, counters_track_malloc_realloc_and_free)
{
    uas_mem_stats s0 = stats();
    void *p = uas_malloc(100);
    cr_assert_not_null(p);
    uas_mem_stats s1 = stats();
    cr_assert_eq(s1.allocs, s0.allocs + 1);
    cr_assert_eq(s1.bytes_alloc, s0.bytes_alloc + 100);
    cr_assert_eq(s1.bytes_live, s0.bytes_live + 100);
    p = uas_realloc(p, 100, 300);
    cr_assert_not_null(p);
    uas_mem_stats s2 = stats();
    cr_assert_eq(s2.allocs, s1.allocs + 1, "growing realloc counts as an allocation");
    cr_assert_eq(s2.bytes_live, s0.bytes_live + 300);
    p = uas_realloc(p, 300, 50);
    cr_assert_not_null(p);
    uas_mem_stats s3 = stats();
    cr_assert_eq(s3.allocs, s2.allocs, "shrinking realloc is no allocation");
    cr_assert_eq(s3.bytes_live, s0.bytes_live + 50);
    uas_free(p, 50);
    uas_mem_stats s4 = stats();
    cr_assert_eq(s4.frees, s0.frees + 1);
    cr_assert_eq(s4.bytes_live, s0.bytes_live);
    uas_free(NULL, 10); /* no-op */
    cr_assert_eq(stats().frees, s4.frees);
}

Test(allocator, calloc_overflow_returns_null_without_allocating)
{
    uas_mem_stats before = stats();
    cr_assert_null(uas_calloc(SIZE_MAX, 2));
    cr_assert_null(uas_calloc((size_t)1 << (sizeof(size_t) == 8 ? 33 : 17),
                              (size_t)1 << (sizeof(size_t) == 8 ? 33 : 17)));
    cr_assert_null(uas_calloc(2, SIZE_MAX / 2 + 1));
    cr_assert_eq(stats().allocs, before.allocs);
    uint32_t *z = uas_calloc(16, sizeof(uint32_t));
    cr_assert_not_null(z);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(z[i], 0);
    uas_free(z, 16 * sizeof(uint32_t));
}

Test(allocator, array_new_of_zero_is_the_empty_sentinel)
{
    cr_assert_eq(uas_array_new(0, &uas_types[UAS_TYPES_STRING]), UAS_EMPTY_ARRAY);
    uas_mem_stats before = stats();
    uas_array_delete(UAS_EMPTY_ARRAY, 0, &uas_types[UAS_TYPES_STRING]);
    uas_array_delete(NULL, 0, &uas_types[UAS_TYPES_STRING]);
    cr_assert_eq(stats().frees, before.frees);
    uas_string *a = uas_array_new(3, &uas_types[UAS_TYPES_STRING]);
    cr_assert_not_null(a);
    cr_assert_null(a[2].data, "array elements start null");
    uas_array_delete(a, 3, &uas_types[UAS_TYPES_STRING]);
    cr_assert_eq(stats().bytes_live, before.bytes_live);
}

/* ---- custom allocators ---- */

/* Every block carries its size in a header, so frees with the wrong size are
 * caught; allocation number fail_at (1-based) fails. */
typedef struct test_heap {
    size_t calls, fail_at, live_blocks, live_bytes, wrong_sizes;
} test_heap;

typedef union hdr {
    size_t size;
    max_align_t align;
} hdr;

static void *th_alloc(void *ud, size_t size)
{
    test_heap *h = ud;
    h->calls++;
    if (h->fail_at && h->calls == h->fail_at)
        return NULL;
    hdr *p = malloc(sizeof(hdr) + size);
    if (!p)
        return NULL;
    p->size = size;
    h->live_blocks++;
    h->live_bytes += size;
    return p + 1;
}

static void *th_realloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    test_heap *h = ud;
    h->calls++;
    if (h->fail_at && h->calls == h->fail_at)
        return NULL;
    hdr *p = (hdr *)ptr - 1;
    if (p->size != old_size)
        h->wrong_sizes++;
    hdr *q = realloc(p, sizeof(hdr) + new_size);
    if (!q)
        return NULL;
    h->live_bytes = h->live_bytes - q->size + new_size;
    q->size = new_size;
    return q + 1;
}

static void th_free(void *ud, void *ptr, size_t size)
{
    test_heap *h = ud;
    hdr *p = (hdr *)ptr - 1;
    if (p->size != size)
        h->wrong_sizes++;
    h->live_blocks--;
    h->live_bytes -= p->size;
    free(p);
}

static void use_test_heap(test_heap *h)
{
    uas_allocator a = {th_alloc, th_realloc, th_free, h};
    uas_mem_set_allocator(&a);
}

/* A large generated value (at least 3000 bytes encoded): PublishResponse and
 * ReadResponse nest DataValues, Variants, ExtensionObjects and
 * DiagnosticInfos. */
static void *big_value(const uas_type *t, uint64_t seed)
{
    void *v = calloc(1, t->size);
    cr_assert_not_null(v);
    pop_value_sized(v, t, seed, 40, 3000);
    return v;
}

Test(allocator, custom_hook_sees_every_allocation_with_matching_free_sizes)
{
    static const char *names[] = {"PublishResponse", "ReadResponse", "CreateSessionRequest",
                                  "BrowseResponse"};
    for (size_t k = 0; k < 4; k++) {
        const uas_type *t = uas_type_by_name(names[k]);
        cr_assert_not_null(t, "%s", names[k]);
        test_heap h = {0};
        use_test_heap(&h);
        void *v = big_value(t, 77 + k);
        void *copy = calloc(1, t->size);
        cr_assert_not_null(copy);
        cr_assert_eq(uas_copy(v, copy, t), UAS_GOOD);
        cr_assert(uas_equal(v, copy, t));
        cr_assert_gt(h.live_blocks, 0, "the hook saw no allocation");
        uas_clear(copy, t);
        uas_clear(v, t);
        uas_mem_set_allocator(NULL);
        cr_assert_eq(h.wrong_sizes, 0, "%s: %zu frees with a size other than allocated", names[k],
                     h.wrong_sizes);
        cr_assert_eq(h.live_blocks, 0, "%s: %zu blocks leaked", names[k], h.live_blocks);
        cr_assert_eq(h.live_bytes, 0);
        free(copy);
        free(v);
    }
}

Test(allocator, set_allocator_null_restores_malloc)
{
    test_heap h = {0};
    use_test_heap(&h);
    void *p = uas_malloc(10);
    cr_assert_eq(h.calls, 1);
    uas_free(p, 10);
    uas_mem_set_allocator(NULL);
    void *q = uas_malloc(10);
    cr_assert_not_null(q);
    cr_assert_eq(h.calls, 1, "the old hook is still called");
    uas_free(q, 10);
}

Test(allocator, copy_with_every_single_allocation_failing_returns_out_of_memory_and_leaks_nothing)
{
    static const char *names[] = {"PublishResponse", "ReadResponse", "BrowseResponse"};
    size_t total_runs = 0;
    for (size_t k = 0; k < 3; k++) {
        const uas_type *t = uas_type_by_name(names[k]);
        cr_assert_not_null(t);
        void *v = big_value(t, 500 + k); /* on malloc */
        void *copy = calloc(1, t->size);
        cr_assert_not_null(copy);

        /* how many allocations a successful copy makes */
        test_heap count = {0};
        use_test_heap(&count);
        cr_assert_eq(uas_copy(v, copy, t), UAS_GOOD);
        size_t needed = count.calls;
        uas_clear(copy, t);
        cr_assert_eq(count.live_blocks, 0);
        cr_assert_gt(needed, 20, "%s: only %zu allocations, too small a value", names[k], needed);

        for (size_t n = 1; n <= needed; n++) {
            test_heap h = {.fail_at = n};
            use_test_heap(&h);
            memset(copy, 0xA5, t->size); /* uas_copy must not rely on dst content */
            uas_status st = uas_copy(v, copy, t);
            uas_mem_set_allocator(NULL);
            cr_assert_eq(st, UAS_BAD_OUT_OF_MEMORY, "%s: allocation %zu of %zu failing gave %s",
                         names[k], n, needed, uas_status_name(st));
            cr_assert_eq(h.live_blocks, 0, "%s: allocation %zu failing leaked %zu blocks", names[k],
                         n, h.live_blocks);
            cr_assert_eq(h.wrong_sizes, 0, "%s: allocation %zu failing: freed with wrong size",
                         names[k], n);
            /* dst is left cleared */
            uint8_t *zero = calloc(1, t->size);
            cr_assert_arr_eq(copy, zero, t->size, "%s: dst not cleared after failure %zu", names[k],
                             n);
            free(zero);
            total_runs++;
        }
        /* and with nothing failing it still works */
        test_heap ok = {0};
        use_test_heap(&ok);
        cr_assert_eq(uas_copy(v, copy, t), UAS_GOOD);
        cr_assert(uas_equal(v, copy, t));
        uas_clear(copy, t);
        uas_mem_set_allocator(NULL);
        cr_assert_eq(ok.live_blocks, 0);
        uas_clear(v, t);
        free(v);
        free(copy);
    }
    cr_assert_gt(total_runs, 60);
}

Test(allocator, copy_arena_beyond_its_cap_returns_out_of_memory)
{
    const uas_type *t = UAS_TYPE(PUBLISH_RESPONSE);
    void *v = big_value(t, 9);
    size_t cap;
    for (cap = 512; cap < (1u << 20); cap += 512) { /* (0 means no cap) */
        uas_arena a;
        uas_arena_init(&a, NULL, 0, cap);
        void *dst = uas_arena_alloc(&a, t->size);
        uas_status st = dst ? uas_copy_arena(v, dst, t, &a) : UAS_BAD_OUT_OF_MEMORY;
        cr_assert(st == UAS_GOOD || st == UAS_BAD_OUT_OF_MEMORY, "cap %zu: %s", cap,
                  uas_status_name(st));
        if (st == UAS_GOOD)
            cr_assert(uas_equal(v, dst, t));
        uas_arena_free(&a);
        if (st == UAS_GOOD)
            break;
    }
    cr_assert_gt(cap, 512, "the copy fitted into the smallest cap");
    cr_assert_lt(cap, 1u << 20);
    uas_clear(v, t);
    free(v);
}

Test(allocator, decode_into_a_capped_arena_returns_out_of_memory_until_it_fits)
{
    const uas_type *t = UAS_TYPE(READ_RESPONSE);
    void *v = big_value(t, 31);
    size_t n;
    uint8_t *bytes = th_encode(v, t, &n);
    bool fitted = false;
    size_t cap;
    for (cap = 256; cap < (1u << 20) && !fitted; cap += 256) {
        uas_arena a;
        uas_arena_init(&a, NULL, 0, cap);
        void *dst = uas_arena_alloc(&a, t->size);
        if (dst) {
            uas_status st = uas_decode_binary(bytes, n, dst, t, &a, NULL, NULL);
            cr_assert(st == UAS_GOOD || st == UAS_BAD_OUT_OF_MEMORY, "cap %zu: %s", cap,
                      uas_status_name(st));
            if (st == UAS_GOOD) {
                cr_assert(uas_equal(v, dst, t));
                fitted = true;
            }
        }
        uas_arena_free(&a);
    }
    cr_assert(fitted);
    cr_assert_gt(cap, 512, "the value fitted into the smallest cap");
    free(bytes);
    uas_clear(v, t);
    free(v);
}

Test(types, new_and_delete_balance_the_allocator)
{
    uas_mem_stats before = stats();
    uas_read_request *r = uas_new(UAS_TYPE(READ_REQUEST));
    cr_assert_not_null(r);
    cr_assert_eq(r->nodes_to_read_count, 0);
    cr_assert_null(r->nodes_to_read);
    r->nodes_to_read = uas_array_new(2, UAS_TYPE(READ_VALUE_ID));
    r->nodes_to_read_count = 2;
    cr_assert_not_null(r->nodes_to_read);
    uas_string s = uas_string_from("x");
    cr_assert_eq(uas_copy(&s, &r->nodes_to_read[1].index_range, &uas_types[UAS_TYPES_STRING]),
                 UAS_GOOD);
    cr_assert_neq(r->nodes_to_read[1].index_range.data, s.data, "the copy is not deep");
    uas_delete(r, UAS_TYPE(READ_REQUEST));
    uas_delete(NULL, UAS_TYPE(READ_REQUEST));
    cr_assert_eq(stats().bytes_live, before.bytes_live);
}
