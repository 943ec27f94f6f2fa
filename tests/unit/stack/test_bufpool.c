/* The transport buffer pool: power-of-two size classes chosen by usable
 * capacity, reuse through per-class free lists, a byte budget for idle
 * buffers, and the 16 MiB ceiling. Stats are what an operator would watch
 * (heap_gets should stop growing once the pool is warm). */
#include <criterion/criterion.h>

#include <string.h>

#include <ua/bufpool.h>

static uas_bufpool_stats stats(const uas_bufpool *p)
{
    uas_bufpool_stats s;
    uas_bufpool_get_stats(p, &s);
    return s;
}

Test(bufpool, size_classes_are_powers_of_two_by_usable_capacity)
{
    static const struct {
        size_t ask, cap;
    } cases[] = {
        {0, 256},
        {1, 256},
        {256, 256},
        {257, 512},
        {4096, 4096},
        {8192, 8192},
        {8193, 16384},
        {65535, 65536},
        {65536, 65536},
        {65537, 131072},
        {1u << 20, 1u << 20},
        {(1u << 24) - 1, 1u << 24},
        {1u << 24, 1u << 24},
    };
    uas_bufpool *p = uas_bufpool_new(0);
    cr_assert_not_null(p);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uas_buf *b = uas_buf_get(p, cases[i].ask);
        cr_assert_not_null(b, "get(%zu) failed", cases[i].ask);
        cr_assert_eq(b->cap, cases[i].cap, "get(%zu) gave cap %u, expected %zu", cases[i].ask,
                     b->cap, cases[i].cap);
        cr_assert_eq((size_t)1 << b->cls, b->cap);
        cr_assert_eq(b->len, 0);
        cr_assert_eq(b->off, 0);
        cr_assert_null(b->next);
        /* Every byte of the capacity is usable (ASan would object). */
        memset(b->data, 0xA5, b->cap);
        uas_buf_put(p, b);
    }
    uas_bufpool_delete(p);
}

Test(bufpool, request_of_64_kib_gets_a_64_kib_buffer_not_128)
{
    uas_bufpool *p = uas_bufpool_new(1u << 20);
    uas_buf *b = uas_buf_get(p, 65536);
    cr_assert_eq(b->cap, 65536);
    uas_buf_put(p, b);
    cr_assert_eq(stats(p).cached_bytes, 65536, "cached as 64 KiB, not with its header");
    uas_bufpool_delete(p);
}

Test(bufpool, more_than_16_mib_returns_null_and_counts_nothing)
{
    uas_bufpool *p = uas_bufpool_new(0);
    cr_assert_null(uas_buf_get(p, (1u << 24) + 1));
    cr_assert_null(uas_buf_get(p, SIZE_MAX));
    uas_bufpool_stats s = stats(p);
    cr_assert_eq(s.gets, 0);
    cr_assert_eq(s.heap_gets, 0);
    cr_assert_eq(s.live, 0);
    uas_bufpool_delete(p);
}

Test(bufpool, returned_buffer_is_reused_and_heap_gets_stop_growing)
{
    uas_bufpool *p = uas_bufpool_new(1u << 20);
    uas_buf *first = uas_buf_get(p, 8192);
    uas_buf_put(p, first);
    for (int i = 0; i < 1000; i++) {
        uas_buf *b = uas_buf_get(p, 5000 + (size_t)i); /* all in the 8 KiB class */
        cr_assert_eq(b, first, "round %d did not reuse the cached buffer", i);
        b->len = 17;
        b->off = 3;
        uas_buf_put(p, b);
    }
    uas_bufpool_stats s = stats(p);
    cr_assert_eq(s.gets, 1001);
    cr_assert_eq(s.heap_gets, 1);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.cached_bytes, 8192);
    uas_buf *b = uas_buf_get(p, 8192);
    cr_assert_eq(b->len, 0, "len reset on reuse");
    cr_assert_eq(b->off, 0, "off reset on reuse");
    cr_assert_null(b->next);
    uas_buf_put(p, b);
    uas_bufpool_delete(p);
}

Test(bufpool, working_set_of_many_buffers_is_served_from_the_pool_once_warm)
{
    uas_bufpool *p = uas_bufpool_new(8u << 20);
    uas_buf *held[32];
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 32; i++)
            held[i] = uas_buf_get(p, (size_t)256 << (i % 8));
        cr_assert_eq(stats(p).live, 32);
        for (int i = 0; i < 32; i++)
            uas_buf_put(p, held[i]);
        cr_assert_eq(stats(p).heap_gets, 32, "round %d went to the heap", round);
    }
    cr_assert_eq(stats(p).live, 0);
    uas_bufpool_delete(p);
}

Test(bufpool, classes_do_not_serve_each_other)
{
    uas_bufpool *p = uas_bufpool_new(1u << 20);
    uas_buf_put(p, uas_buf_get(p, 512));
    uas_buf *b = uas_buf_get(p, 8192);
    cr_assert_eq(stats(p).heap_gets, 2, "a cached 512 buffer cannot serve 8192");
    cr_assert_eq(stats(p).cached_bytes, 512);
    uas_buf_put(p, b);
    b = uas_buf_get(p, 300);
    cr_assert_eq(b->cap, 512, "300 bytes come from the 512 class");
    cr_assert_eq(stats(p).heap_gets, 2);
    uas_buf_put(p, b);
    uas_bufpool_delete(p);
}

Test(bufpool, idle_buffers_beyond_max_cached_bytes_go_back_to_the_heap)
{
    uas_bufpool *p = uas_bufpool_new(100000);
    uas_buf *a = uas_buf_get(p, 65536), *b = uas_buf_get(p, 65536);
    uas_buf_put(p, a);
    uas_buf_put(p, b); /* 131072 would exceed 100000 */
    uas_bufpool_stats s = stats(p);
    cr_assert_eq(s.cached_bytes, 65536);
    cr_assert_leq(s.cached_bytes, 100000);
    cr_assert_eq(s.live, 0);
    a = uas_buf_get(p, 65536);
    b = uas_buf_get(p, 65536);
    cr_assert_eq(stats(p).heap_gets, 3, "only one of the two was kept");
    uas_buf_put(p, a);
    uas_buf_put(p, b);

    /* Small buffers still fit in what is left of the budget. */
    uas_buf *smalls[100];
    for (int i = 0; i < 100; i++)
        smalls[i] = uas_buf_get(p, 256);
    for (int i = 0; i < 100; i++)
        uas_buf_put(p, smalls[i]);
    s = stats(p);
    cr_assert_leq(s.cached_bytes, 100000);
    cr_assert_eq(s.cached_bytes, 65536 + 100 * 256);
    uas_bufpool_delete(p); /* frees the cached ones (LSan checks) */
}

Test(bufpool, zero_budget_caches_nothing)
{
    uas_bufpool *p = uas_bufpool_new(0);
    for (int i = 0; i < 5; i++)
        uas_buf_put(p, uas_buf_get(p, 1000));
    uas_bufpool_stats s = stats(p);
    cr_assert_eq(s.cached_bytes, 0);
    cr_assert_eq(s.heap_gets, 5);
    cr_assert_eq(s.live, 0);
    uas_bufpool_delete(p);
}

Test(bufpool, put_null_is_a_no_op_and_live_counts_outstanding_buffers)
{
    uas_bufpool *p = uas_bufpool_new(1u << 20);
    uas_buf_put(p, NULL);
    uas_buf *a = uas_buf_get(p, 10), *b = uas_buf_get(p, 10000);
    cr_assert_eq(stats(p).live, 2);
    uas_buf_put(p, a);
    cr_assert_eq(stats(p).live, 1);
    uas_buf_put(p, b);
    cr_assert_eq(stats(p).live, 0);
    uas_bufpool_delete(p);
    uas_bufpool_delete(NULL);
}
