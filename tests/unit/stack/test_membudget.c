/* The process memory budget, the charge of pooled buffers to it, pools
 * trimmed to their recent peak, and the address groups of per-address
 * limits. Criterion runs each test in a process of its own, so the
 * budget starts empty in every test. */
#include <criterion/criterion.h>

#include <string.h>

#include <ua/bufpool.h>
#include <ua/membudget.h>
#include <ua/net.h>

static int pressure_calls;
static void on_pressure(void *ud)
{
    cr_assert_eq(ud, &pressure_calls);
    pressure_calls++;
}

Test(membudget, reserve_refuses_beyond_the_limit_and_release_gives_back)
{
    uas_budget_set_limit(1000);
    cr_assert(uas_budget_try_reserve(600));
    cr_assert(uas_budget_try_reserve(400));
    cr_assert_not(uas_budget_try_reserve(1));
    uas_budget_release(400);
    cr_assert(uas_budget_try_reserve(300));
    uas_budget_stats s;
    uas_budget_get_stats(&s);
    cr_expect_eq(s.limit, 1000);
    cr_expect_eq(s.used, 900);
    cr_expect_eq(s.peak, 1000);
    cr_expect_eq(s.refusals, 1);
    /* Forced charges count beyond the limit, and block reservations. */
    uas_budget_charge(500);
    uas_budget_get_stats(&s);
    cr_expect_eq(s.used, 1400);
    cr_expect_not(uas_budget_try_reserve(1));
    uas_budget_release(1400);
    cr_expect(uas_budget_try_reserve(1000));
    cr_expect_not(uas_budget_try_reserve((size_t)-1), "no wrap-around");
}

Test(membudget, pressure_hook_runs_once_until_re_armed)
{
    uas_budget_set_limit(100);
    uas_budget_set_pressure_hook(on_pressure, &pressure_calls);
    cr_assert_not(uas_budget_try_reserve(200));
    cr_assert_not(uas_budget_try_reserve(200));
    cr_expect_eq(pressure_calls, 1, "one event until the owner handled it");
    uas_budget_pressure_done();
    cr_assert_not(uas_budget_try_reserve(200));
    cr_expect_eq(pressure_calls, 2);
    uas_budget_clear_pressure_hook(NULL); /* not the owner: stays */
    uas_budget_pressure_done();
    cr_assert_not(uas_budget_try_reserve(200));
    cr_expect_eq(pressure_calls, 3);
    /* Counted memory past the limit is pressure too, not a refusal. */
    uas_budget_pressure_done();
    uas_budget_charge(200);
    cr_expect_eq(pressure_calls, 4);
    uas_budget_stats s;
    uas_budget_get_stats(&s);
    cr_expect_eq(s.refusals, 4);
    uas_budget_release(200);
    uas_budget_clear_pressure_hook(&pressure_calls);
    uas_budget_pressure_done();
    cr_assert_not(uas_budget_try_reserve(200));
    cr_expect_eq(pressure_calls, 4);
}

Test(membudget, default_is_a_quarter_of_memory_within_bounds)
{
    size_t d = uas_budget_default();
    cr_expect_geq(d, (size_t)64 << 20);
    cr_expect_leq(d, (size_t)1 << 30);
    uas_budget_set_limit(0);
    cr_expect_eq(uas_budget_limit(), d);
    cr_expect_gt(uas_process_rss(), 0);
}

Test(membudget, charged_buffers_give_back_wherever_they_are_returned)
{
    uas_budget_set_limit(200000);
    uas_bufpool *p = uas_bufpool_new(1u << 20);
    uas_buf *a = uas_buf_get(p, 65536);
    uas_buf *b = uas_buf_get(p, 65536);
    uas_buf *c = uas_buf_get(p, 65536);
    uas_buf *d = uas_buf_get(p, 65536);
    cr_assert(uas_buf_charge(a, false));
    cr_assert(uas_buf_charge(a, false), "charging twice counts once");
    cr_assert(uas_buf_charge(b, false));
    cr_assert(uas_buf_charge(c, false));
    cr_assert_not(uas_buf_charge(d, false), "a fourth 64 KiB buffer does not fit in 200000");
    cr_assert(uas_buf_charge(d, true));
    uas_budget_stats s;
    uas_budget_get_stats(&s);
    cr_expect_eq(s.used, 4 * 65536);
    uas_buf_put(p, a);
    uas_buf_put(p, b);
    uas_buf_put(p, c);
    uas_buf_put(p, d);
    uas_budget_get_stats(&s);
    cr_expect_eq(s.used, 0);
    /* A buffer reused from the cache is not charged any more. */
    uas_buf *e = uas_buf_get(p, 65536);
    cr_expect_eq(e->charged, 0);
    uas_buf_put(p, e);
    uas_bufpool_delete(p);
}

Test(bufpool, trim_keeps_what_the_recent_peak_needed)
{
    uas_bufpool *p = uas_bufpool_new(64u << 20);
    enum { N = 32 };
    uas_buf *b[N];
    for (int i = 0; i < N; i++)
        b[i] = uas_buf_get(p, 1u << 20);
    for (int i = 0; i < N; i++)
        uas_buf_put(p, b[i]);
    uas_bufpool_stats st;
    uas_bufpool_get_stats(p, &st);
    cr_assert_eq(st.cached_bytes, (uint64_t)N << 20);
    /* The burst is in this period's peak: everything stays. */
    uas_bufpool_trim(p);
    uas_bufpool_get_stats(p, &st);
    cr_expect_eq(st.cached_bytes, (uint64_t)N << 20);
    /* A quiet period with two buffers in use at most: two stay. */
    uas_buf *x = uas_buf_get(p, 1u << 20);
    uas_buf *y = uas_buf_get(p, 1u << 20);
    uas_buf_put(p, x);
    uas_buf_put(p, y);
    uas_bufpool_trim(p);
    uas_bufpool_get_stats(p, &st);
    cr_expect_eq(st.cached_bytes, 2u << 20);
    cr_expect_eq(st.trimmed, N - 2);
    cr_expect_eq(st.live_bytes, 0);
    /* Nothing in use for a period: the cache empties. */
    uas_bufpool_trim(p);
    uas_bufpool_get_stats(p, &st);
    cr_expect_eq(st.cached_bytes, 0);
    uas_bufpool_delete(p);
}

Test(address_group, ipv6_counts_per_64_and_ipv4_mapped_as_ipv4)
{
    char a[80], b[80];
    cr_assert(uas_address_group_str("2001:db8:1:2:aaaa::1", a, sizeof(a)));
    cr_assert(uas_address_group_str("2001:db8:1:2:bbbb:cccc:dddd:eeee", b, sizeof(b)));
    cr_expect_str_eq(a, "2001:db8:1:2::/64");
    cr_expect_str_eq(a, b);
    cr_assert(uas_address_group_str("2001:db8:1:3::1", b, sizeof(b)));
    cr_expect_str_neq(a, b, "another /64 is another source");
    cr_assert(uas_address_group_str("::ffff:10.1.2.3", a, sizeof(a)));
    cr_expect_str_eq(a, "10.1.2.3");
    cr_assert(uas_address_group_str("10.1.2.3", b, sizeof(b)));
    cr_expect_str_eq(b, "10.1.2.3");
    cr_expect_not(uas_address_group_str("not an address", a, sizeof(a)));
    cr_expect_str_eq(a, "");
}
