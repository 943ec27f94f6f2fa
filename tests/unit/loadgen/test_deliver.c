/* Delivery accounting of the subscription scenarios: which written values
 * must arrive (uas_deliv_rule), sequence numbers, data-source counters and
 * the subscription result block. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/loadgen.h>

#include "helper_result.h"

#define MS 1000000ull

/* Writes every `every` ms from t = 0, each answered after rtt ms. */
static void log_writes(uas_write_log *l, unsigned n, uint64_t every, uint64_t rtt)
{
    for (unsigned k = 0; k < n; k++) {
        int64_t i = uas_write_log_add(l, k * every * MS);
        cr_assert_eq(i, (int64_t)k);
        uas_write_log_done(l, k, (k * every + rtt) * MS);
    }
}

static uas_deliv_rule rule(uint64_t t0, uint64_t t1, uint64_t end, uint64_t pub, uint32_t q)
{
    uas_deliv_rule r;
    memset(&r, 0, sizeof(r));
    r.t0_ns = t0 * MS;
    r.t1_ns = t1 * MS;
    r.end_ns = end * MS;
    r.pub_ns = pub * MS;
    r.guard_ns = 100 * MS;
    r.queue_size = q;
    return r;
}

Test(deliv, write_log_and_rx_set)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    for (unsigned k = 0; k < 1000; k++)
        cr_assert_eq(uas_write_log_add(&l, k), (int64_t)k);
    cr_assert_eq(l.resp_ns[10], 0);
    uas_write_log_done(&l, 10, 0); /* 0 would mean "no response": stored as 1 */
    cr_assert_neq(l.resp_ns[10], 0);
    uas_write_log_done(&l, 5000, 7); /* out of range: ignored */
    uas_write_log_free(&l);
    cr_assert_eq(l.n, 0);

    uas_rx_set rx;
    memset(&rx, 0, sizeof(rx));
    cr_assert_not(uas_rx_set_has(&rx, 3));
    cr_assert_eq(uas_rx_set_add(&rx, 3), 1);
    cr_assert_eq(uas_rx_set_add(&rx, 3), 0);
    cr_assert_eq(uas_rx_set_add(&rx, 100000), 1);
    cr_assert(uas_rx_set_has(&rx, 3));
    cr_assert(uas_rx_set_has(&rx, 100000));
    cr_assert_not(uas_rx_set_has(&rx, 99999));
    uas_rx_set_free(&rx);
}

/* Writes spaced wider than the publishing interval: every value must
 * arrive by itself, and one lost value is one miss. */
Test(deliv, wide_writes_each_must_arrive)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    log_writes(&l, 20, 1500, 2); /* 0, 1.5 s, ... 28.5 s */
    uas_deliv_rule r = rule(3000, 24000, 40000, 1000, 1);
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    /* Sent in [3 s, 24 s): k = 2..15. */
    cr_assert_eq(p.first, 2);
    cr_assert_eq(p.end, 16);
    cr_assert_eq(p.judged_count, 14);
    cr_assert_eq(p.must_each, 14);

    uas_rx_set rx;
    memset(&rx, 0, sizeof(rx));
    for (uint32_t k = 0; k < 20; k++)
        if (k != 7)
            uas_rx_set_add(&rx, k);
    uas_deliv_count c;
    memset(&c, 0, sizeof(c));
    uas_deliv_check(&p, &rx, &c);
    cr_assert_eq(c.expected, 14);
    cr_assert_eq(c.delivered, 13);
    cr_assert_eq(c.missed, 1);
    cr_assert_eq(c.values, 13);
    uas_rx_set_free(&rx);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

/* Two writes per publishing interval with queue size 1: a value that was
 * overwritten may be lost, but within every window of about one interval
 * one of the values must arrive. */
Test(deliv, fast_writes_queue_one_need_one_per_group)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    log_writes(&l, 40, 500, 1); /* every 500 ms */
    uas_deliv_rule r = rule(0, 15000, 30000, 1000, 1);
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.judged_count, 30);
    cr_assert_eq(p.must_each, 0);
    /* D_k = resp_k + 1100 ms: writes k+1 and k+2 were sent before it, so
     * the group of k is k .. k+2. */
    cr_assert_eq(p.group_end[0], 3);

    /* A server publishing every second delivers every other value. */
    uas_rx_set rx;
    memset(&rx, 0, sizeof(rx));
    for (uint32_t k = 1; k < 40; k += 2)
        uas_rx_set_add(&rx, k);
    uas_deliv_count c;
    memset(&c, 0, sizeof(c));
    uas_deliv_check(&p, &rx, &c);
    cr_assert_eq(c.expected, 30);
    cr_assert_eq(c.missed, 0);
    cr_assert_eq(c.values, 15);

    /* A gap of three consecutive values (1.5 s without a change reported)
     * is a miss for every group that lies inside it. */
    uas_rx_set rx2;
    memset(&rx2, 0, sizeof(rx2));
    for (uint32_t k = 0; k < 40; k++)
        if (k < 10 || k > 12)
            uas_rx_set_add(&rx2, k);
    memset(&c, 0, sizeof(c));
    uas_deliv_check(&p, &rx2, &c);
    cr_assert_eq(c.missed, 1); /* the group 10..12 */
    uas_rx_set_free(&rx);
    uas_rx_set_free(&rx2);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

/* Queue size 3 keeps the last three values of a cycle: with two writes per
 * cycle every value must arrive. */
Test(deliv, larger_queue_keeps_every_value)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    log_writes(&l, 40, 500, 1);
    uas_deliv_rule r = rule(0, 15000, 30000, 1000, 3);
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.must_each, p.judged_count);
    uas_deliv_plan_free(&p);
    /* Queue size 2 is not enough (two later writes before D_k). */
    r.queue_size = 2;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.must_each, 0);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

/* A sampling interval on a pushed item: the value must have been the
 * latest at the item's next sample. */
Test(deliv, sampling_interval_needs_the_value_to_survive_a_sample)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    log_writes(&l, 10, 500, 1);
    uas_deliv_rule r = rule(0, 5000, 20000, 1000, 10);
    r.sampling_ns = 600 * MS; /* the next write comes before the next sample */
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.must_each, 1); /* only the last write is not overwritten */
    uas_deliv_plan_free(&p);
    r.sampling_ns = 400 * MS;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.must_each, p.judged_count);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

/* Failed writes are not expected; writes whose cycle may end after the end
 * of collection are not judged. */
Test(deliv, unanswered_and_late_writes_are_not_judged)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    for (unsigned k = 0; k < 10; k++) {
        uas_write_log_add(&l, k * 2000 * MS);
        if (k != 4)
            uas_write_log_done(&l, k, (k * 2000 + 5) * MS);
    }
    /* Writes at 0..18 s; collection ends at 17 s: D_8 = 17.105 s is late. */
    uas_deliv_rule r = rule(0, 20000, 17000, 1000, 1);
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.judged_count, 7); /* 0..7 without 4 */
    cr_assert_eq(p.judged[4], 0);
    cr_assert_eq(p.judged[8], 0);
    cr_assert_eq(p.judged[9], 0);
    uas_rx_set rx;
    memset(&rx, 0, sizeof(rx));
    uas_deliv_count c;
    memset(&c, 0, sizeof(c));
    uas_deliv_check(&p, &rx, &c); /* nothing arrived */
    cr_assert_eq(c.expected, 7);
    cr_assert_eq(c.missed, 7);
    uas_rx_set_free(&rx);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

Test(deliv, empty_window)
{
    uas_write_log l;
    memset(&l, 0, sizeof(l));
    log_writes(&l, 5, 1000, 1);
    uas_deliv_rule r = rule(10000, 20000, 30000, 1000, 1);
    uas_deliv_plan p;
    cr_assert_eq(uas_deliv_plan_build(&p, &l, &r), 0);
    cr_assert_eq(p.judged_count, 0);
    uas_rx_set rx;
    memset(&rx, 0, sizeof(rx));
    uas_deliv_count c;
    memset(&c, 0, sizeof(c));
    uas_deliv_check(&p, &rx, &c);
    cr_assert_eq(c.expected, 0);
    uas_deliv_plan_free(&p);
    uas_write_log_free(&l);
}

Test(seq, gaps_and_repeats)
{
    uas_seq_track t;
    memset(&t, 0, sizeof(t));
    uas_seq_track_add(&t, 1);
    uas_seq_track_add(&t, 2);
    uas_seq_track_add(&t, 5); /* 3 and 4 lost */
    uas_seq_track_add(&t, 5); /* a repeat */
    uas_seq_track_add(&t, 6);
    cr_assert_eq(t.messages, 5);
    cr_assert_eq(t.gaps, 2);
    cr_assert_eq(t.repeats, 1);
    cr_assert_eq(t.last, 6);
}

/* UA DateTime: 100 ns units. */
#define SEC 10000000ll

Test(counters, full_rate_passes)
{
    /* Sampling 100 ms, publishing 1 s: each notification carries the
     * counter ten samples on. */
    uas_counter_track t;
    memset(&t, 0, sizeof(t));
    for (int i = 0; i <= 20; i++)
        uas_counter_track_add(&t, 1000 + 10 * (uint64_t)i, 5 * SEC + i * SEC);
    uas_counter_eval e;
    uas_counter_track_eval(&t, 100, 1000, 0.99, &e);
    cr_assert_float_eq(e.span_s, 20.0, 1e-9);
    cr_assert_float_eq(e.samples, 200.0, 1e-9);
    cr_assert_float_eq(e.expected_samples, 200.0, 1e-9);
    cr_assert_float_eq(e.sample_ratio, 1.0, 1e-9);
    cr_assert_float_eq(e.expected_notif, 21.0, 1e-9);
    cr_assert(e.ok);
}

Test(counters, slow_sampling_or_lost_cycles_fail)
{
    uas_counter_track t;
    memset(&t, 0, sizeof(t));
    /* 2 % of the samples not taken. */
    for (int i = 0; i <= 20; i++)
        uas_counter_track_add(&t, (uint64_t)(i * 98) / 10, i * SEC);
    uas_counter_eval e;
    uas_counter_track_eval(&t, 100, 1000, 0.99, &e);
    cr_assert(e.sample_ratio < 0.99);
    cr_assert_not(e.ok);

    /* Every sample taken, but three publishing cycles lost. */
    memset(&t, 0, sizeof(t));
    for (int i = 0; i <= 20; i++)
        if (i < 5 || i > 7)
            uas_counter_track_add(&t, 10 * (uint64_t)i, i * SEC);
    uas_counter_track_eval(&t, 100, 1000, 0.99, &e);
    cr_assert_float_eq(e.sample_ratio, 1.0, 1e-9);
    cr_assert(e.notif_ratio < 0.99);
    cr_assert_not(e.ok);

    /* Nothing arrived. */
    memset(&t, 0, sizeof(t));
    uas_counter_track_eval(&t, 100, 1000, 0.99, &e);
    cr_assert_not(e.ok);
}

Test(result, subscription_block_names_every_measure)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "sessions");
    snprintf(r.args, sizeof(r.args), "--self-load sessions --sessions 20");
    snprintf(r.criterion, sizeof(r.criterion), "all 20 sessions subscribed");
    r.has_notif = r.has_server = r.pass = true;
    r.notifications = 1200;
    r.notif_per_s = 20;
    r.notif_expected = 2400;
    r.notif_delivered = 2400;
    r.delivery_pct = 100;
    r.p50_ns = 250 * MS;
    r.sessions_target = r.sessions_ready = 20;
    r.session_rate = 812;
    r.rss_per_session_kb = 41.5;
    r.server_cpu_us_per_op = 3.25;
    r.server_bytes_per_op = 12;
    static const char *const must[] = {"--self-load sessions --sessions 20",
                                       "PASS",
                                       "20 notif/s",
                                       "100.00 % (2400 of 2400 expected, missed 0)",
                                       "250.0 /",
                                       "20 of 20 subscribed",
                                       "812 sessions/s",
                                       "41.5 KiB per session",
                                       "3.25 µs",
                                       "server heap per notification",
                                       "Publish errors, sequence gaps",
                                       "busy cores",
                                       "run record"};
    expect_block_has(&r, must, sizeof(must) / sizeof(must[0]));
}

Test(result, events_block_names_every_measure)
{
    uas_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.scenario, sizeof(r.scenario), "events");
    snprintf(r.args, sizeof(r.args), "--self-load events --event-rate 200");
    snprintf(r.criterion, sizeof(r.criterion), "every event reaches every item");
    r.has_notif = r.has_server = r.has_events = r.pass = true;
    r.notifications = 3000;
    r.notif_per_s = 1000;
    r.events_reported = 600;
    r.events_reported_per_s = 200;
    r.notif_expected = r.notif_delivered = 3000;
    r.delivery_pct = 100;
    r.items = 5;
    r.p50_ns = 100 * MS;
    r.sessions_target = r.sessions_ready = 5;
    static const char *const must[] = {"### events",
                                       "PASS",
                                       "600 reported by the server in the window (200 events/s)",
                                       "0 other events received",
                                       "100.00 % (3000 of 3000 expected, missed 0)",
                                       "items with misses | 0 of 5",
                                       "report→notify latency p50 / p99 / max | 100.0 /",
                                       "run record"};
    expect_block_has(&r, must, sizeof(must) / sizeof(must[0]));
}
