/* Histogram, round statistics and result block of the load generator. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/loadgen.h>

#include "helper_result.h"

Test(hist, exact_below_32)
{
    uas_hist h;
    uas_hist_init(&h);
    for (uint64_t v = 0; v < 32; v++)
        uas_hist_add(&h, v);
    cr_assert_eq(uas_hist_quantile(&h, 0.5), 15);
    cr_assert_eq(uas_hist_quantile(&h, 1.0), 31);
    cr_assert_eq(h.min, 0);
    cr_assert_eq(h.max, 31);
}

Test(hist, quantiles_within_3_percent_of_true_value)
{
    static uas_hist h;
    uas_hist_init(&h);
    /* 1..100000 uniformly: p50 = 50000, p99 = 99000. */
    for (uint64_t v = 1; v <= 100000; v++)
        uas_hist_add(&h, v);
    uint64_t p50 = uas_hist_quantile(&h, 0.50), p99 = uas_hist_quantile(&h, 0.99);
    cr_assert(p50 >= 50000 && p50 <= 50000 * 1.0313, "p50 %llu", (unsigned long long)p50);
    cr_assert(p99 >= 99000 && p99 <= 99000 * 1.0313, "p99 %llu", (unsigned long long)p99);
    cr_assert_eq(uas_hist_quantile(&h, 1.0), 100000);
}

Test(hist, quantile_never_below_true_value_for_skewed_data)
{
    static uas_hist h;
    uas_hist_init(&h);
    for (int i = 0; i < 990; i++)
        uas_hist_add(&h, 1000);
    for (int i = 0; i < 10; i++)
        uas_hist_add(&h, 5000000);
    cr_assert(uas_hist_quantile(&h, 0.99) >= 1000);
    cr_assert(uas_hist_quantile(&h, 0.99) < 1100);
    cr_assert(uas_hist_quantile(&h, 0.995) >= 5000000);
}

Test(hist, huge_values_are_clamped_not_lost)
{
    static uas_hist h;
    uas_hist_init(&h);
    uas_hist_add(&h, UINT64_MAX);
    cr_assert_eq(h.total, 1);
    cr_assert_eq(uas_hist_quantile(&h, 0.5), UINT64_MAX);
}

Test(hist, merge_adds_counts_and_extremes)
{
    static uas_hist a, b;
    uas_hist_init(&a);
    uas_hist_init(&b);
    uas_hist_add(&a, 10);
    uas_hist_add(&b, 1000);
    uas_hist_add(&b, 2000);
    uas_hist_merge(&a, &b);
    cr_assert_eq(a.total, 3);
    cr_assert_eq(a.min, 10);
    cr_assert_eq(a.max, 2000);
    cr_assert_eq(uas_hist_quantile(&a, 0.0), 10);
}

Test(hist, empty_histogram_reports_zero)
{
    uas_hist h;
    uas_hist_init(&h);
    cr_assert_eq(uas_hist_quantile(&h, 0.99), 0);
}

Test(stat, median_and_range_of_odd_and_even_counts)
{
    double odd[] = {5, 1, 3, 9, 7};
    uas_stat s;
    uas_stat_compute(odd, 5, &s);
    cr_assert_float_eq(s.median, 5, 1e-9);
    cr_assert_float_eq(s.min, 1, 1e-9);
    cr_assert_float_eq(s.max, 9, 1e-9);
    double even[] = {4, 1, 3, 2};
    uas_stat_compute(even, 4, &s);
    cr_assert_float_eq(s.median, 2.5, 1e-9);
}

Test(result, block_names_every_measure)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "read");
    snprintf(r.args, sizeof(r.args), "--self-load read --sessions 10");
    r.requests = 1000;
    r.throughput = 12345;
    r.p50_ns = 80000;
    r.has_server = true;
    r.server_cpu_us_per_op = 2.5;
    static const char *const must[] = {"--self-load read --sessions 10",
                                       "12345 ops/s",
                                       "80.0 /",
                                       "2.50 µs",
                                       "server RSS",
                                       "run record",
                                       "busy cores"};
    expect_block_has(&r, must, sizeof(must) / sizeof(must[0]));
}

Test(rounds, variants_alternate_and_each_runs_once_per_round)
{
    for (unsigned n = 1; n <= 4; n++) {
        for (unsigned r = 0; r < 6; r++) {
            unsigned seen = 0;
            for (unsigned k = 0; k < n; k++) {
                unsigned v = uas_round_variant(r, k, n);
                cr_assert_lt(v, n);
                cr_assert_not(seen & (1u << v), "variant %u twice in round %u", v, r);
                seen |= 1u << v;
            }
            cr_assert_eq(seen, (1u << n) - 1);
        }
    }
    /* Two variants: A B, B A, A B ... so neither always goes first. */
    cr_assert_eq(uas_round_variant(0, 0, 2), 0);
    cr_assert_eq(uas_round_variant(1, 0, 2), 1);
    cr_assert_eq(uas_round_variant(2, 0, 2), 0);
    cr_assert_eq(uas_round_variant(3, 1, 2), 0);
}

Test(stat, paired_ratio_divides_round_by_round)
{
    /* Round 2 is slow for both variants: pair by pair the ratio stays 1.5,
     * where the two medians alone would say 1.6 / 1.0. */
    double num[3] = {1.5, 3.0, 1.65}, den[3] = {1.0, 2.0, 1.1};
    uas_stat s;
    uas_stat_paired_ratio(num, den, 3, &s);
    cr_assert_eq(s.n, 3);
    cr_assert_float_eq(s.median, 1.5, 1e-9);
    cr_assert_float_eq(s.min, 1.5, 1e-9);
    cr_assert_float_eq(s.max, 1.5, 1e-9);
    /* A round without a denominator (no server CPU) is left out. */
    double den0[3] = {1.0, 0.0, 1.0};
    uas_stat_paired_ratio(num, den0, 3, &s);
    cr_assert_eq(s.n, 2);
    cr_assert_float_eq(s.min, 1.5, 1e-9);
    cr_assert_float_eq(s.max, 1.65, 1e-9);
}

Test(cpus, processor_lists_parse_to_masks_and_bad_ones_are_refused)
{
    uint64_t m = 0;
    cr_assert_eq(uas_cpu_list_parse("1", &m), 0);
    cr_assert_eq(m, 0x2);
    cr_assert_eq(uas_cpu_list_parse("0-1", &m), 0);
    cr_assert_eq(m, 0x3);
    cr_assert_eq(uas_cpu_list_parse("0,2-3,63", &m), 0);
    cr_assert_eq(m, UINT64_C(0x800000000000000D));
    static const char *const bad[] = {"", "a", "1-", "-1", "3-1", "64", "0,,1", "1 ", "0-99"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        m = 7;
        cr_assert_eq(uas_cpu_list_parse(bad[i], &m), -1, "'%s' accepted", bad[i]);
        cr_assert_eq(m, 7, "'%s' changed the mask", bad[i]);
    }
    cr_assert_eq(uas_cpu_list_parse(NULL, &m), -1);
}
