/* Subscriptions driven with an injected clock: revision rules, keep-alive
 * timing, lifetime, the Publish queue (timeouts, limits, late
 * subscriptions, priorities), acknowledgements, Republish, more
 * notifications, TransferSubscriptions, deletion. */
#include "test_sub_harness.h"

#include "sub_internal.h" /* white box: the sequence number wrap */

TestSuite(sub, .init = h_setup, .fini = h_teardown);

static uas_sub_stats stats(void)
{
    uas_sub_stats s;
    uas_sub_engine_get_stats(H.e, &s);
    return s;
}

Test(sub, create_revises_interval_keepalive_lifetime)
{
    uas_sub_session *s = h_session();
    uas_create_subscription_response r = h_sub_full(s, 0, 0, 0, 0, 0);
    cr_expect_eq(r.revised_publishing_interval, 50, "0 means the fastest");
    cr_expect_eq(r.revised_max_keep_alive_count, 1);
    cr_expect_eq(r.revised_lifetime_count, 3, "at least 3 keep-alives");
    r = h_sub_full(s, -7, 1, 10, 0, 0);
    cr_expect_eq(r.revised_publishing_interval, 50);
    cr_expect_eq(r.revised_lifetime_count, 30);
    r = h_sub_full(s, 120.2, 100, 10, 0, 0);
    cr_expect_eq(r.revised_publishing_interval, 121, "integer ms, never below the request");
    cr_expect_eq(r.revised_lifetime_count, 100);
    r = h_sub_full(s, 1e12, 1000000, 1000000, 0, 0);
    cr_expect_eq(r.revised_publishing_interval, 3600000);
    cr_expect_eq(r.revised_max_keep_alive_count, 10000);
    cr_expect_eq(r.revised_lifetime_count, 30000);
    r = h_sub_full(s, NAN, 5, 2, 0, 0);
    cr_expect_eq(r.revised_publishing_interval, 50);
    cr_expect_eq(r.revised_lifetime_count, 6);
    cr_expect_neq(r.subscription_id, 0);
}

Test(sub, lifetime_limit_wins_over_keepalive)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.limits.max_lifetime_count = 30;
    h_start(&c);
    uas_create_subscription_response r = h_sub_full(h_session(), 100, 100, 20, 0, 0);
    cr_expect_eq(r.revised_lifetime_count, 30);
    cr_expect_eq(r.revised_max_keep_alive_count, 10);
}

Test(sub, too_many_subscriptions)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.limits.max_subscriptions_per_session = 2;
    h_start(&c);
    uas_sub_session *s = h_session();
    h_sub(s, 100, 1);
    h_sub(s, 100, 1);
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    uas_create_subscription_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_expect_eq(uas_sub_create_subscription(s, &req, &resp, &H.a, 0),
                 UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    cr_expect_eq(resp.response_header.service_result, UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    h_sub(h_session(), 100, 1); /* another session may */
}

Test(sub, modify_revises_and_checks_session)
{
    uas_sub_session *a = h_session(), *b = h_session();
    uint32_t id = h_sub(a, 100, 5);
    uas_modify_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.requested_publishing_interval = 10;
    req.requested_lifetime_count = 2;
    req.requested_max_keep_alive_count = 4;
    uas_modify_subscription_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_subscription(a, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_eq(resp.revised_publishing_interval, 50);
    cr_expect_eq(resp.revised_max_keep_alive_count, 4);
    cr_expect_eq(resp.revised_lifetime_count, 12);
    cr_expect_eq(uas_sub_modify_subscription(b, &req, &resp, &H.a, 0),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID, "another session's subscription");
    req.subscription_id = 4242;
    cr_expect_eq(uas_sub_modify_subscription(a, &req, &resp, &H.a, 0),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID);
    /* The new interval is in force: first keep-alive after 50 ms. */
    h_publish(a, 1);
    h_run(49);
    cr_expect_eq(H.n, 0);
    h_run(50);
    cr_expect_eq(H.n, 1);
}

Test(sub, keepalive_first_cycle_then_every_max_keepalive_count)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 3);
    for (uint32_t i = 1; i <= 5; i++)
        h_publish(s, i);
    h_run(1099);
    cr_assert_eq(H.n, 4);
    int64_t at[] = {100, 400, 700, 1000};
    for (size_t i = 0; i < 4; i++) {
        cr_expect_eq(H.light[i].at, at[i], "keep-alive %zu at %lld", i, (long long)H.light[i].at);
        cr_expect_eq(H.light[i].result, UAS_GOOD);
        cr_expect_eq(H.light[i].sub_id, id);
        cr_expect_eq(H.light[i].ndata, 0, "no notification data");
        cr_expect_eq(H.light[i].seq, 1, "the next sequence number, not consumed");
        cr_expect_eq(H.light[i].request_id, i + 1, "oldest Publish first");
    }
    cr_expect_eq(H.full[0].notification_message.publish_time, H_UTC0 + 100 * 10000);
}

Test(sub, keepalive_counts_from_the_last_data_message)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 3);
    h_item(s, id, 1, 1, h_opts(0, 1));
    for (uint32_t i = 1; i <= 6; i++)
        h_publish(s, i);
    h_run(750);
    h_write(1, 7);
    h_run(1200);
    cr_assert_eq(H.n, 5);
    cr_expect_eq(H.light[0].at, 100);
    cr_expect_eq(H.light[0].nitems, 1, "the first sample");
    cr_expect_eq(H.light[0].seq, 1);
    cr_expect_eq(H.light[1].at, 400);
    cr_expect_eq(H.light[1].ndata, 0);
    cr_expect_eq(H.light[1].seq, 2, "keep-alive: next number");
    cr_expect_eq(H.light[2].at, 700);
    cr_expect_eq(H.light[3].at, 800);
    cr_expect_eq(H.light[3].seq, 2);
    cr_expect_eq(h_dc_val(3, 0), 7);
    cr_expect_eq(H.light[4].at, 1100);
    cr_expect_eq(H.light[4].seq, 3);
}

Test(sub, lifetime_expiry_sends_status_change_bad_timeout)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub_full(s, 100, 3, 1, 0, 0).subscription_id;
    h_item(s, id, 1, 1, h_opts(0, 1));
    h_run(299);
    cr_expect_eq(stats().subscriptions, 1);
    cr_expect_eq(stats().monitored_items, 1);
    h_run(300); /* third cycle without a Publish request */
    cr_expect_eq(stats().subscriptions, 0);
    cr_expect_eq(stats().monitored_items, 0);
    cr_expect_eq(stats().timers, 0, "no timer left behind");
    cr_expect_eq(H.nodes[1].mask, 0, "the node is no longer watched");
    cr_expect_eq(H.n, 0);
    h_publish(s, 1);
    cr_assert_eq(H.n, 1, "answered at once");
    cr_expect_eq(H.light[0].result, UAS_GOOD);
    cr_expect_eq(H.light[0].sub_id, id);
    cr_expect_eq(h_status_change(0), UAS_BAD_TIMEOUT);
    h_publish(s, 2);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].result, UAS_BAD_NO_SUBSCRIPTION);
}

Test(sub, publish_resets_lifetime)
{
    uas_sub_session *s = h_session();
    h_sub_full(s, 100, 3, 1, 0, 0);
    h_run(250);
    h_publish(s, 1); /* due since 100: answered at once */
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].at, 250);
    h_run(499);
    cr_expect_eq(stats().subscriptions, 1);
    h_run(500);
    cr_expect_eq(stats().subscriptions, 0);
}

Test(sub, publish_timeout_answers_bad_timeout)
{
    uas_sub_session *s = h_session();
    h_sub(s, 1000, 10);
    h_publish_acks(s, 1, 7, 500, 0, NULL);
    cr_expect_eq(stats().parked_publishes, 1);
    h_run(499);
    cr_expect_eq(H.n, 0);
    h_run(500);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].result, UAS_BAD_TIMEOUT);
    cr_expect_eq(H.light[0].request_handle, 7);
    cr_expect_eq(stats().parked_publishes, 0);
    /* The cycle at 1000 finds no request: late, served by the next one. */
    h_run(1100);
    cr_expect_eq(H.n, 1);
    h_publish(s, 8);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].result, UAS_GOOD);
    cr_expect_eq(H.light[1].at, 1100);
}

Test(sub, too_many_publish_requests_answers_the_oldest)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.limits.max_publish_requests = 3;
    h_start(&c);
    uas_sub_session *s = h_session();
    h_sub(s, 10000, 10);
    for (uint32_t i = 1; i <= 3; i++)
        h_publish(s, i);
    cr_expect_eq(H.n, 0);
    h_publish(s, 4);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].request_id, 1);
    cr_expect_eq(H.light[0].result, UAS_BAD_TOO_MANY_PUBLISH_REQUESTS);
    cr_expect_eq(stats().parked_publishes, 3);
    h_run(10000);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].request_id, 2);
}

Test(sub, no_subscription)
{
    uas_sub_session *s = h_session();
    h_publish(s, 1);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].result, UAS_BAD_NO_SUBSCRIPTION);
    /* Deleting the last subscription answers the parked requests. */
    uint32_t id = h_sub(s, 1000, 5);
    h_publish(s, 2);
    h_publish(s, 3);
    cr_expect_eq(H.n, 1);
    uas_delete_subscriptions_request req;
    memset(&req, 0, sizeof(req));
    uint32_t ids[] = {id, 777};
    req.subscription_ids = ids;
    req.subscription_ids_count = 2;
    uas_delete_subscriptions_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_delete_subscriptions(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_assert_eq(resp.results_count, 2);
    cr_expect_eq(resp.results[0], UAS_GOOD);
    cr_expect_eq(resp.results[1], UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[1].result, UAS_BAD_NO_SUBSCRIPTION);
    cr_expect_eq(H.light[2].result, UAS_BAD_NO_SUBSCRIPTION);
    req.subscription_ids_count = 0;
    cr_expect_eq(uas_sub_delete_subscriptions(s, &req, &resp, &H.a, 0), UAS_BAD_NOTHING_TO_DO);
}

Test(sub, late_subscription_is_answered_at_once)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 10);
    h_item(s, id, 1, 11, h_opts(0, 5));
    h_run(100); /* data due, no request: late */
    h_write(1, 3);
    h_run(250);
    cr_expect_eq(H.n, 0);
    h_publish(s, 1);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].at, 250);
    cr_expect_eq(H.light[0].nitems, 2, "everything queued meanwhile");
    cr_expect_eq(h_dc_val(0, 0), 0);
    cr_expect_eq(h_dc_val(0, 1), 3);
    cr_expect_eq(h_dcn(0)->monitored_items[0].client_handle, 11);
    h_publish(s, 2); /* nothing due now: parked */
    cr_expect_eq(H.n, 1);
}

Test(sub, priority_then_longest_wait)
{
    uas_sub_session *s = h_session();
    uint32_t a = h_sub_full(s, 100, 30, 10, 0, 1).subscription_id;
    uint32_t b = h_sub_full(s, 300, 30, 10, 0, 5).subscription_id;
    uint32_t c = h_sub_full(s, 200, 30, 10, 0, 1).subscription_id;
    h_item(s, a, 1, 1, h_opts(0, 1));
    h_item(s, b, 2, 2, h_opts(0, 1));
    h_item(s, c, 3, 3, h_opts(0, 1));
    h_run(350); /* a due since 100, c since 200, b since 300 */
    h_publish(s, 1);
    h_publish(s, 2);
    h_publish(s, 3);
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[0].sub_id, b, "highest priority first");
    cr_expect_eq(H.light[1].sub_id, a, "then the one waiting longest");
    cr_expect_eq(H.light[2].sub_id, c);
}

Test(sub, same_tick_competition_goes_by_priority)
{
    uas_sub_session *s = h_session();
    uint32_t lo = h_sub_full(s, 100, 30, 10, 0, 1).subscription_id;
    uint32_t hi = h_sub_full(s, 100, 30, 10, 0, 9).subscription_id;
    h_item(s, lo, 1, 1, h_opts(0, 1));
    h_item(s, hi, 2, 2, h_opts(0, 1));
    h_publish(s, 1);
    h_run(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].sub_id, hi);
    h_publish(s, 2);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].sub_id, lo, "the other one was left late");
}

/* Three data messages (seq 1..3) for a subscription with one item. */
static uint32_t three_messages(uas_sub_session *s)
{
    uint32_t id = h_sub(s, 100, 10);
    h_item(s, id, 1, 1, h_opts(0, 1));
    for (uint32_t i = 1; i <= 3; i++) {
        h_publish(s, i);
        h_run(i * 100);
        h_write(1, i);
    }
    cr_assert_eq(H.n, 3);
    for (uint32_t i = 0; i < 3; i++)
        cr_assert_eq(H.light[i].seq, i + 1);
    return id;
}

Test(sub, acknowledgements_and_their_results)
{
    uas_sub_session *s = h_session();
    uint32_t id = three_messages(s);
    cr_expect_eq(H.full[2].available_sequence_numbers_count, 3);
    uas_subscription_acknowledgement acks[] = {{id, 2}, {id, 2}, {999, 1}, {id, 99}};
    h_publish_acks(s, 1, 4, 0, 4, acks);
    h_run(400);
    cr_assert_eq(H.n, 4);
    const uas_publish_response *r = &H.full[3];
    cr_assert_eq(r->results_count, 4);
    cr_expect_eq(r->results[0], UAS_GOOD);
    cr_expect_eq(r->results[1], UAS_BAD_SEQUENCE_NUMBER_UNKNOWN, "already acknowledged");
    cr_expect_eq(r->results[2], UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_expect_eq(r->results[3], UAS_BAD_SEQUENCE_NUMBER_UNKNOWN);
    cr_assert_eq(r->available_sequence_numbers_count, 3);
    cr_expect_eq(r->available_sequence_numbers[0], 1);
    cr_expect_eq(r->available_sequence_numbers[1], 3);
    cr_expect_eq(r->available_sequence_numbers[2], 4, "this message included");
}

Test(sub, republish_hits_and_misses)
{
    uas_sub_session *s = h_session();
    uint32_t id = three_messages(s);
    uas_republish_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.retransmit_sequence_number = 2;
    uas_republish_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_republish(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    cr_expect_eq(resp.notification_message.sequence_number, 2);
    cr_assert_eq(resp.notification_message.notification_data_count, 1);
    const uas_data_change_notification *d =
        resp.notification_message.notification_data[0].content.decoded.data;
    cr_expect_eq(h_val(&d->monitored_items[0]), 1);
    req.retransmit_sequence_number = 9;
    cr_expect_eq(uas_sub_republish(s, &req, &resp, &H.a, H.now), UAS_BAD_MESSAGE_NOT_AVAILABLE);
    req.subscription_id = 31337;
    cr_expect_eq(uas_sub_republish(s, &req, &resp, &H.a, H.now), UAS_BAD_SUBSCRIPTION_ID_INVALID);
    req.subscription_id = id;
    req.retransmit_sequence_number = 2;
    cr_expect_eq(uas_sub_republish(h_session(), &req, &resp, &H.a, H.now),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID, "another session");
}

Test(sub, retransmission_queue_is_bounded)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 10);
    h_item(s, id, 1, 1, h_opts(0, 1));
    for (uint32_t i = 1; i <= 12; i++) {
        h_publish(s, i);
        h_run(i * 100);
        h_write(1, i);
    }
    cr_assert_eq(H.n, 12);
    const uas_publish_response *r = &H.full[11];
    cr_assert_eq(r->available_sequence_numbers_count, 10);
    for (uint32_t k = 0; k < 10; k++)
        cr_expect_eq(r->available_sequence_numbers[k], k + 3, "oldest dropped");
    uas_republish_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.retransmit_sequence_number = 2;
    uas_republish_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_expect_eq(uas_sub_republish(s, &req, &resp, &H.a, H.now), UAS_BAD_MESSAGE_NOT_AVAILABLE);
    req.retransmit_sequence_number = 3;
    cr_expect_eq(uas_sub_republish(s, &req, &resp, &H.a, H.now), UAS_GOOD);
}

Test(sub, max_notifications_and_more_notifications)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub_full(s, 100, 30, 10, 2, 0).subscription_id;
    for (uint32_t n = 1; n <= 5; n++)
        h_item(s, id, n, n, h_opts(0, 1));
    h_publish(s, 1);
    h_publish(s, 2);
    h_run(100);
    cr_assert_eq(H.n, 2, "the remainder goes at once with the next parked request");
    cr_expect_eq(H.light[0].nitems, 2);
    cr_expect(H.light[0].more);
    cr_expect_eq(H.light[0].seq, 1);
    cr_expect_eq(H.light[1].nitems, 2);
    cr_expect(H.light[1].more);
    cr_expect_eq(H.light[1].seq, 2);
    cr_expect_eq(H.light[1].at, 100);
    h_run(150);
    h_publish(s, 3); /* more pending: answered at once */
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[2].nitems, 1);
    cr_expect_not(H.light[2].more);
    cr_expect_eq(H.light[2].seq, 3);
    cr_expect_eq(H.light[2].at, 150);
    double seen = 0;
    for (size_t i = 0; i < 3; i++) {
        const uas_data_change_notification *d = h_dcn(i);
        for (size_t k = 0; k < d->monitored_items_count; k++)
            seen += d->monitored_items[k].client_handle;
    }
    cr_expect_eq(seen, 15, "every item exactly once");
}

Test(sub, set_publishing_mode)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 1);
    h_item(s, id, 1, 1, h_opts(0, 1));
    uas_set_publishing_mode_request req;
    memset(&req, 0, sizeof(req));
    uint32_t ids[] = {id, 5555};
    req.subscription_ids = ids;
    req.subscription_ids_count = 2;
    req.publishing_enabled = false;
    uas_set_publishing_mode_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_set_publishing_mode(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_eq(resp.results[0], UAS_GOOD);
    cr_expect_eq(resp.results[1], UAS_BAD_SUBSCRIPTION_ID_INVALID);
    h_publish(s, 1);
    h_publish(s, 2);
    h_run(200);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[0].ndata, 0, "disabled: keep-alives only");
    cr_expect_eq(H.light[1].ndata, 0);
    req.publishing_enabled = true;
    cr_assert_eq(uas_sub_set_publishing_mode(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    h_publish(s, 3);
    h_run(300);
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[2].nitems, 1, "the queued value");
}

static bool deny_transfer(void *ud, void *from, void *to)
{
    (void)ud;
    return from == to || (uintptr_t)to != 66;
}

Test(sub, transfer_with_initial_values)
{
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *b = uas_sub_session_new(H.e, (void *)2);
    uint32_t id = h_sub(a, 100, 10);
    h_item(a, id, 1, 1, h_opts(0, 1));
    h_write(1, 42);
    h_publish_acks(a, 10, 1, 0, 0, NULL);
    h_run(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(h_dc_val(0, 0), 42);
    h_publish_acks(a, 10, 2, 0, 0, NULL);
    h_publish_acks(a, 10, 3, 0, 0, NULL);

    uas_transfer_subscriptions_request req;
    memset(&req, 0, sizeof(req));
    uint32_t ids[] = {id, 999};
    req.subscription_ids = ids;
    req.subscription_ids_count = 2;
    req.send_initial_values = true;
    uas_transfer_subscriptions_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_transfer_subscriptions(b, &req, &resp, &H.a, H.now), UAS_GOOD);
    cr_assert_eq(resp.results_count, 2);
    cr_expect_eq(resp.results[0].status_code, UAS_GOOD);
    cr_assert_eq(resp.results[0].available_sequence_numbers_count, 1);
    cr_expect_eq(resp.results[0].available_sequence_numbers[0], 1);
    cr_expect_eq(resp.results[1].status_code, UAS_BAD_SUBSCRIPTION_ID_INVALID);
    /* The old session hears of it with its parked request, then has none. */
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[1].target, 10);
    cr_expect_eq(H.light[1].sub_id, id);
    cr_expect_eq(h_status_change(1), UAS_GOOD_SUBSCRIPTION_TRANSFERRED);
    cr_expect_eq(H.light[2].result, UAS_BAD_NO_SUBSCRIPTION);
    cr_expect_eq(uas_sub_session_subscription_count(a), 0);
    cr_expect_eq(uas_sub_session_subscription_count(b), 1);
    /* The new session gets the last value again (sendInitialValues). */
    h_publish_acks(b, 20, 4, 0, 0, NULL);
    h_run(200);
    cr_assert_eq(H.n, 4);
    cr_expect_eq(H.light[3].target, 20);
    cr_expect_eq(H.light[3].seq, 2, "the sequence continues");
    cr_expect_eq(h_dc_val(3, 0), 42);
    /* Acknowledging from the old session no longer works. */
    uas_subscription_acknowledgement ack = {id, 2};
    h_publish_acks(a, 10, 5, 0, 1, &ack);
    cr_expect_eq(H.light[4].result, UAS_BAD_NO_SUBSCRIPTION);
}

Test(sub, transfer_access_denied_and_orphans)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.cb.may_transfer = deny_transfer;
    h_start(&c);
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *evil = uas_sub_session_new(H.e, (void *)66);
    uint32_t id = h_sub(a, 100, 10);
    uas_transfer_subscriptions_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_ids = &id;
    req.subscription_ids_count = 1;
    uas_transfer_subscriptions_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_transfer_subscriptions(evil, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_eq(resp.results[0].status_code, UAS_BAD_USER_ACCESS_DENIED);
    /* Session closed without deleting its subscriptions: transferable. */
    uas_sub_session_delete(a, false, 0);
    cr_expect_eq(stats().subscriptions, 1);
    uas_sub_session *b = uas_sub_session_new(H.e, (void *)2);
    cr_assert_eq(uas_sub_transfer_subscriptions(b, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_eq(resp.results[0].status_code, UAS_GOOD);
    cr_expect_eq(uas_sub_session_subscription_count(b), 1);
    /* An orphan that nobody takes expires with its lifetime. */
    h_sub(b, 100, 1);
    uas_sub_session_delete(b, false, 0);
    h_run(299);
    cr_expect_eq(stats().subscriptions, 2);
    h_run(3000);
    cr_expect_eq(stats().subscriptions, 0);
}

Test(sub, session_delete_answers_parked_and_cleans_up)
{
    uas_sub_session *s = h_session();
    for (int k = 0; k < 3; k++) {
        uint32_t id = h_sub(s, 10000 + k, 5);
        for (uint32_t n = 1; n <= 8; n++)
            h_item(s, id, n, n, h_opts(n == 8 ? 100 : 0, 4));
    }
    h_publish(s, 1);
    h_publish(s, 2);
    h_run(1000);
    for (uint32_t n = 1; n <= 7; n++)
        h_write(n, n);
    size_t before = H.n;
    cr_expect_eq(before, 0);
    cr_expect_gt(H.nodes[8].reads, 10, "the data source is sampled");
    cr_expect_eq(stats().monitored_items, 24);
    cr_expect_neq(H.nodes[1].mask, 0);
    uas_sub_session_delete(s, true, H.now);
    cr_expect_eq(H.n, before + 2);
    cr_expect_eq(H.light[before].result, UAS_BAD_SESSION_CLOSED);
    uas_sub_stats st = stats();
    cr_expect_eq(st.sessions, 0);
    cr_expect_eq(st.subscriptions, 0);
    cr_expect_eq(st.monitored_items, 0);
    cr_expect_eq(st.parked_publishes, 0);
    cr_expect_eq(st.watched_nodes, 0);
    cr_expect_eq(st.timers, 0);
    cr_expect_eq(H.nodes[1].mask, 0);
    cr_expect_null(H.nodes[1].watch);
}

Test(sub, engine_delete_with_everything_alive)
{
    /* LSan checks this one: nothing may leak. */
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 5);
    for (uint32_t n = 1; n <= 8; n++)
        h_item(s, id, n, n, h_opts(0, 3));
    h_publish(s, 1);
    h_run(100);
    for (uint32_t n = 1; n <= 7; n++)
        h_write(n, n);
    h_publish(s, 2);
    h_publish(s, 3);
    uas_sub_session_new(H.e, NULL);
}

Test(sub, drop_target_forgets_parked_requests)
{
    uas_sub_session *s = h_session();
    h_sub(s, 100, 1);
    h_publish_acks(s, 1, 1, 0, 0, NULL);
    h_publish_acks(s, 2, 2, 0, 0, NULL);
    h_publish_acks(s, 1, 3, 0, 0, NULL);
    uas_sub_engine_drop_target(H.e, (uas_sub_publish_target *)1);
    cr_expect_eq(stats().parked_publishes, 1);
    h_run(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].request_id, 2);
}

Test(sub, subscription_ids_follow_the_configured_stride)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.sub_id_first = 3;
    c.sub_id_step = 4; /* loop 3 of 4 */
    h_start(&c);
    uas_sub_session *s = h_session();
    cr_expect_eq(h_sub(s, 100, 1), 3);
    cr_expect_eq(h_sub(s, 100, 1), 7);
    cr_expect_eq(h_sub(s, 100, 1), 11);
}

Test(sub, sequence_numbers_wrap_to_one)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 10);
    h_item(s, id, 1, 1, h_opts(0, 1));
    sub_sub *sp = sub_map_get(&H.e->subs_by_id, id);
    cr_assert_not_null(sp);
    sp->next_seq = UINT32_MAX;
    for (uint32_t i = 1; i <= 3; i++) {
        h_publish(s, i);
        h_run(i * 100);
        h_write(1, i);
    }
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[0].seq, UINT32_MAX);
    cr_expect_eq(H.light[1].seq, 1, "0 is skipped");
    cr_expect_eq(H.light[2].seq, 2);
}

/* ---- the server's counters (cb.sub_changed) ---- */

static uint32_t changes[16][2];
static size_t nchanges;

static void on_sub_changed(void *ud, uint32_t old_ms, uint32_t new_ms)
{
    (void)ud;
    cr_assert(nchanges < 16);
    changes[nchanges][0] = old_ms;
    changes[nchanges][1] = new_ms;
    nchanges++;
}

static void modify_interval(uas_sub_session *s, uint32_t id, double interval)
{
    uas_modify_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.requested_publishing_interval = interval;
    req.requested_max_keep_alive_count = 1;
    req.requested_lifetime_count = 3;
    uas_modify_subscription_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_subscription(s, &req, &resp, &H.a, H.now), UAS_GOOD);
}

Test(sub, sub_changed_tells_creation_interval_changes_and_every_kind_of_end)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.cb.sub_changed = on_sub_changed;
    c.limits.max_queue_size = 77;
    h_start(&c);
    nchanges = 0;
    cr_expect_eq(uas_sub_engine_limits(H.e)->max_queue_size, 77);
    uas_sub_session *s = h_session();
    uint32_t a = h_sub(s, 100, 1000);
    uint32_t b = h_sub(s, 249.5, 1000);
    uint32_t d = h_sub(s, 100, 1000);
    modify_interval(s, a, 500);
    modify_interval(s, a, 499.2); /* revised to 500 again: no change */
    uas_delete_subscriptions_request dr = {.subscription_ids = &b, .subscription_ids_count = 1};
    uas_delete_subscriptions_response dresp;
    memset(&dresp, 0, sizeof(dresp));
    cr_assert_eq(uas_sub_delete_subscriptions(s, &dr, &dresp, &H.a, H.now), UAS_GOOD);
    h_run(1500); /* a: lifetime 3 x 500 ms without a Publish request */
    cr_expect_eq(stats().subscriptions, 1);
    cr_expect_eq(stats().subscriptions_created, 3);
    (void)d;
    uas_sub_engine_delete(H.e); /* d ends with the engine */
    H.e = NULL;
    const uint32_t want[][2] = {{0, 100}, {0, 250}, {0, 100}, {100, 500},
                                {250, 0}, {500, 0}, {100, 0}};
    cr_assert_eq(nchanges, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < nchanges; i++)
        cr_expect(changes[i][0] == want[i][0] && changes[i][1] == want[i][1],
                  "change %zu: %u -> %u", i, changes[i][0], changes[i][1]);
}
