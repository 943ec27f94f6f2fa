/* Monitored items driven with an injected clock: queues and the overflow
 * bit, deadbands, triggers, sampling of pushed and data-source nodes,
 * monitoring modes, triggering links, revision and error codes. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include <ua/nodeids.h>

#include "test_sub_harness.h"

TestSuite(items, .init = h_setup, .fini = h_teardown);

/* A subscription with `interval` and one parked Publish per 100 ms. */
static uint32_t sub_with_publishes(uas_sub_session *s, double interval, uint32_t npub)
{
    uint32_t id = h_sub_full(s, interval, 300, 100, 0, 0).subscription_id;
    for (uint32_t i = 1; i <= npub; i++)
        h_publish(s, i);
    return id;
}

static void write_at(int64_t t, uint32_t node, double v)
{
    h_run(t);
    h_write(node, v);
}

static void expect_values(size_t resp, const double *v, size_t n)
{
    const uas_data_change_notification *d = h_dcn(resp);
    cr_assert_not_null(d);
    cr_assert_eq(d->monitored_items_count, n, "%zu values, expected %zu", d->monitored_items_count,
                 n);
    for (size_t k = 0; k < n; k++)
        cr_expect_eq(h_val(&d->monitored_items[k]), v[k], "value %zu: %g, expected %g", k,
                     h_val(&d->monitored_items[k]), v[k]);
}

static uas_status set_mode(uas_sub_session *s, uint32_t sub, uint32_t item,
                           uas_monitoring_mode mode, uas_status *item_result)
{
    uint32_t ids[] = {item};
    uas_set_monitoring_mode_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.monitoring_mode = mode;
    req.monitored_item_ids = ids;
    req.monitored_item_ids_count = 1;
    uas_set_monitoring_mode_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_status st = uas_sub_set_monitoring_mode(s, &req, &resp, &H.a, H.now);
    if (item_result && st == UAS_GOOD)
        *item_result = resp.results[0];
    return st;
}

Test(items, queue_overflow_discard_oldest_flags_the_oldest_kept)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    h_item(s, id, 1, 1, h_opts(0, 3));
    for (int i = 1; i <= 4; i++)
        write_at(10 * i, 1, i);
    h_run(1000);
    cr_assert_eq(H.n, 1);
    expect_values(0, (double[]){2, 3, 4}, 3);
    cr_expect_eq(h_dc_status(0, 0), SUB_OVERFLOW_BITS);
    cr_expect_eq(h_dc_status(0, 1), UAS_GOOD);
    cr_expect_eq(h_dc_status(0, 2), UAS_GOOD);
}

Test(items, queue_overflow_discard_newest_flags_the_new_value)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    h_item_opts o = h_opts(0, 3);
    o.discard_oldest = false;
    h_item(s, id, 1, 1, o);
    for (int i = 1; i <= 4; i++)
        write_at(10 * i, 1, i);
    h_run(1000);
    expect_values(0, (double[]){0, 1, 4}, 3);
    cr_expect_eq(h_dc_status(0, 0), UAS_GOOD);
    cr_expect_eq(h_dc_status(0, 1), UAS_GOOD);
    cr_expect_eq(h_dc_status(0, 2), SUB_OVERFLOW_BITS);
}

Test(items, queue_of_one_keeps_the_latest_without_overflow_bit)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    h_item(s, id, 1, 1, h_opts(0, 1));
    for (int i = 1; i <= 4; i++)
        write_at(10 * i, 1, i);
    h_run(1000);
    expect_values(0, (double[]){4}, 1);
    cr_expect_eq(h_dc_status(0, 0), UAS_GOOD);
}

Test(items, queue_size_and_sampling_revision)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uas_monitored_item_create_result r = h_item_res(s, id, 1, 1, h_opts(0, 0));
    cr_expect_eq(r.revised_queue_size, 1, "0 means 1");
    cr_expect_eq(r.revised_sampling_interval, 0, "pushed: every change");
    r = h_item_res(s, id, 1, 1, h_opts(-1, 5000));
    cr_expect_eq(r.revised_queue_size, 1000, "the maximum");
    cr_expect_eq(r.revised_sampling_interval, 1000, "-1: the publishing interval");
    r = h_item_res(s, id, 1, 1, h_opts(10, 2));
    cr_expect_eq(r.revised_sampling_interval, 50, "the fastest supported");
    r = h_item_res(s, id, 1, 1, h_opts(120.5, 2));
    cr_expect_eq(r.revised_sampling_interval, 121);
    r = h_item_res(s, id, 1, 1, h_opts(1e10, 2));
    cr_expect_eq(r.revised_sampling_interval, 3600000);
    r = h_item_res(s, id, 8, 1, h_opts(0, 2));
    cr_expect_eq(r.revised_sampling_interval, 50, "a sampled node cannot do 0");
    cr_expect_neq(r.monitored_item_id, 0);
}

Test(items, absolute_deadband)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_data_change_filter f;
    h_item_opts o = h_opts(0, 10);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE, UAS_DEADBAND_TYPE_ABSOLUTE, 1.0, &f);
    h_item(s, id, 1, 1, o);
    double w[] = {0.5, 1.0, 1.5, 2.0, 3.0};
    for (int i = 0; i < 5; i++)
        write_at(10 * (i + 1), 1, w[i]);
    h_run(1000);
    expect_values(0, (double[]){0, 1.5, 3.0}, 3);
}

Test(items, percent_deadband_uses_the_eu_range)
{
    H.nodes[2].has_range = true;
    H.nodes[2].range = (uas_range){0, 200};
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_data_change_filter f;
    h_item_opts o = h_opts(0, 10);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE, UAS_DEADBAND_TYPE_PERCENT, 10, &f);
    h_item(s, id, 2, 1, o);
    double w[] = {10, 25, 40, 46};
    for (int i = 0; i < 4; i++)
        write_at(10 * (i + 1), 2, w[i]);
    h_run(1000);
    expect_values(0, (double[]){0, 25, 46}, 3);
}

Test(items, filter_errors)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uas_data_change_filter f;
    h_item_opts o = h_opts(0, 1);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE, UAS_DEADBAND_TYPE_PERCENT, 10, &f);
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_DEADBAND_FILTER_INVALID,
                 "no EURange: the callback's status");
    H.nodes[3].has_range = true;
    H.nodes[3].range = (uas_range){-5, 5};
    f.deadband_value = 150;
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_DEADBAND_FILTER_INVALID);
    f.deadband_type = UAS_DEADBAND_TYPE_ABSOLUTE;
    f.deadband_value = -1;
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_DEADBAND_FILTER_INVALID);
    f.deadband_value = 1;
    H.nodes[4].numeric = false;
    cr_expect_eq(h_item_res(s, id, 4, 1, o).status_code, UAS_BAD_FILTER_NOT_ALLOWED,
                 "deadband on a non-numeric type");
    f.deadband_type = 7;
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_DEADBAND_FILTER_INVALID);
    f.deadband_type = UAS_DEADBAND_TYPE_NONE;
    f.trigger = 7;
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_MONITORED_ITEM_FILTER_INVALID);
    f.trigger = UAS_DATA_CHANGE_TRIGGER_STATUS;
    o.attr = 4; /* DisplayName */
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_FILTER_NOT_ALLOWED);
    o.attr = UAS_SUB_ATTR_VALUE;
    uas_event_filter ef;
    memset(&ef, 0, sizeof(ef));
    o.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    o.filter.content.decoded.data = &ef;
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_FILTER_NOT_ALLOWED);
#ifdef UAS_MINIMAL /* no descriptor: the filter stays encoded */
    o.filter.encoding = UAS_EXTOBJ_BYTESTRING;
    o.filter.content.encoded.type_id = (uas_nodeid){
        .kind = UAS_NODEID_NUMERIC, .id.numeric = UAS_NS0ID_AGGREGATEFILTER_ENCODING_DEFAULTBINARY};
    o.filter.content.encoded.body = (uas_bytestring){0, UAS_EMPTY_ARRAY};
#else
    uas_aggregate_filter af;
    memset(&af, 0, sizeof(af));
    o.filter.content.decoded.type = UAS_TYPE(AGGREGATE_FILTER);
    o.filter.content.decoded.data = &af;
#endif
    cr_expect_eq(h_item_res(s, id, 3, 1, o).status_code, UAS_BAD_MONITORED_ITEM_FILTER_UNSUPPORTED);
    cr_expect_eq(uas_sub_session_subscription_count(s), 1);
    uas_sub_stats st;
    uas_sub_engine_get_stats(H.e, &st);
    cr_expect_eq(st.monitored_items, 0, "failed items leave nothing behind");
    cr_expect_eq(st.watched_nodes, 0);
}

Test(items, percent_deadband_without_eu_range_callback)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.cb.get_eu_range = NULL;
    h_start(&c);
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uas_data_change_filter f;
    h_item_opts o = h_opts(0, 1);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE, UAS_DEADBAND_TYPE_PERCENT, 10, &f);
    cr_expect_eq(h_item_res(s, id, 1, 1, o).status_code, UAS_BAD_MONITORED_ITEM_FILTER_UNSUPPORTED);
}

Test(items, trigger_status_ignores_values)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_data_change_filter f;
    h_item_opts o = h_opts(0, 10);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS, UAS_DEADBAND_TYPE_NONE, 0, &f);
    h_item(s, id, 1, 1, o);
    write_at(10, 1, 1);
    write_at(20, 1, 2);
    H.nodes[1].status = UAS_UNCERTAIN;
    write_at(30, 1, 2);
    write_at(40, 1, 3);
    h_run(1000);
    expect_values(0, (double[]){0, 2}, 2);
    cr_expect_eq(h_dc_status(0, 1), UAS_UNCERTAIN);
}

Test(items, trigger_timestamp_reports_same_value_with_new_source_time)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_data_change_filter f1, f2;
    h_item_opts o = h_opts(0, 10);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE_TIMESTAMP, 0, 0, &f1);
    h_item(s, id, 1, 1, o);
    o.filter = h_dcf(UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE, 0, 0, &f2);
    h_item(s, id, 1, 2, o);
    write_at(10, 1, 0);
    write_at(20, 1, 0);
    write_at(30, 1, 5);
    h_run(1000);
    const uas_data_change_notification *d = h_dcn(0);
    cr_assert_not_null(d);
    int n1 = 0, n2 = 0;
    for (size_t k = 0; k < d->monitored_items_count; k++)
        d->monitored_items[k].client_handle == 1 ? n1++ : n2++;
    cr_expect_eq(n1, 4, "first sample, two new timestamps, new value");
    cr_expect_eq(n2, 2, "first sample, new value");
}

Test(items, pushed_changes_are_throttled_to_the_sampling_interval)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    cr_assert_eq(h_item_res(s, id, 1, 1, h_opts(100, 10)).revised_sampling_interval, 100);
    write_at(10, 1, 1);
    write_at(20, 1, 2);
    write_at(50, 1, 3);  /* taken at 100 */
    write_at(150, 1, 4); /* taken at 200 */
    write_at(350, 1, 5); /* a full interval later: taken at once */
    write_at(360, 1, 6); /* taken at 450 */
    h_run(1000);
    expect_values(0, (double[]){0, 3, 4, 5, 6}, 5);
    const uas_data_change_notification *d = h_dcn(0);
    int64_t taken[] = {0, 100, 200, 350, 450}, source[] = {0, 50, 150, 350, 360};
    for (size_t k = 0; k < 5; k++) {
        const uas_datavalue *dv = &d->monitored_items[k].value;
        cr_expect(dv->has_server_timestamp);
        cr_expect_eq(dv->server_timestamp, H_UTC0 + taken[k] * 10000, "value %zu taken at", k);
        cr_expect_eq(dv->source_timestamp, H_UTC0 + source[k] * 10000);
    }
}

Test(items, data_source_is_sampled_at_its_interval)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    cr_assert_eq(h_item_res(s, id, 8, 1, h_opts(100, 10)).revised_sampling_interval, 100);
    cr_expect_eq(H.nodes[8].reads, 1, "the first sample at creation");
    cr_expect_eq(H.nodes[8].mask, 0, "nothing to watch");
    h_run(150);
    H.nodes[8].value = 5; /* no value_changed: nobody reports this one */
    h_run(450);
    H.nodes[8].value = 6;
    h_run(1000);
    cr_expect_eq(H.nodes[8].reads, 11);
    expect_values(0, (double[]){0, 5, 6}, 3);
}

Test(items, index_range_items_reread_on_change)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    it.item_to_monitor.node_id = uas_nodeid_numeric(1, 3);
    it.item_to_monitor.attribute_id = UAS_SUB_ATTR_VALUE;
    it.item_to_monitor.index_range = uas_string_from("1:2");
    it.monitoring_mode = UAS_MONITORING_MODE_REPORTING;
    it.requested_parameters.queue_size = 5;
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.items_to_create = &it;
    req.items_to_create_count = 1;
    uas_create_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_create_monitored_items(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_assert_eq(resp.results[0].status_code, UAS_GOOD);
    cr_expect_eq(H.nodes[3].reads, 1);
    write_at(10, 3, 9);
    cr_expect_eq(H.nodes[3].reads, 2, "read_value applies the range");
    h_run(1000);
    expect_values(0, (double[]){0, 9}, 2);
}

Test(items, monitoring_modes)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 100, 3);
    h_item_opts o = h_opts(0, 5);
    o.mode = UAS_MONITORING_MODE_SAMPLING;
    uint32_t item = h_item(s, id, 1, 1, o);
    write_at(150, 1, 5);
    h_run(250);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].ndata, 0, "sampling: queued, not reported");
    uas_status r = 0;
    cr_assert_eq(set_mode(s, id, item, UAS_MONITORING_MODE_REPORTING, &r), UAS_GOOD);
    cr_expect_eq(r, UAS_GOOD);
    h_run(300);
    cr_assert_eq(H.n, 2);
    expect_values(1, (double[]){0, 5}, 2);
    h_run(350);
    set_mode(s, id, item, UAS_MONITORING_MODE_DISABLED, NULL);
    write_at(360, 1, 6);
    h_run(400);
    cr_expect_eq(H.n, 2, "disabled: nothing");
    set_mode(s, id, item, UAS_MONITORING_MODE_REPORTING, NULL);
    h_run(500);
    cr_assert_eq(H.n, 3);
    expect_values(2, (double[]){6}, 1); /* a fresh first sample */
    cr_expect_eq(set_mode(s, id, item, 5, NULL), UAS_BAD_MONITORING_MODE_INVALID);
    cr_expect_eq(set_mode(s, id, 4711, UAS_MONITORING_MODE_SAMPLING, &r), UAS_GOOD);
    cr_expect_eq(r, UAS_BAD_MONITORED_ITEM_ID_INVALID);
    cr_expect_eq(set_mode(s, 4711, item, UAS_MONITORING_MODE_SAMPLING, &r),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID);
}

static uas_status set_triggering(uas_sub_session *s, uint32_t sub, uint32_t trig, uint32_t *add,
                                 size_t nadd, uint32_t *rem, size_t nrem,
                                 uas_set_triggering_response *resp)
{
    uas_set_triggering_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.triggering_item_id = trig;
    req.links_to_add = add;
    req.links_to_add_count = nadd;
    req.links_to_remove = rem;
    req.links_to_remove_count = nrem;
    memset(resp, 0, sizeof(*resp));
    return uas_sub_set_triggering(s, &req, resp, &H.a, H.now);
}

Test(items, triggering_reports_linked_sampling_items)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 100, 4);
    uint32_t trig = h_item(s, id, 1, 10, h_opts(0, 1));
    h_item_opts o = h_opts(0, 1);
    o.mode = UAS_MONITORING_MODE_SAMPLING;
    uint32_t linked = h_item(s, id, 2, 20, o);
    uas_set_triggering_response resp;
    uint32_t add[] = {linked, 999};
    cr_assert_eq(set_triggering(s, id, trig, add, 2, NULL, 0, &resp), UAS_GOOD);
    cr_assert_eq(resp.add_results_count, 2);
    cr_expect_eq(resp.add_results[0], UAS_GOOD);
    cr_expect_eq(resp.add_results[1], UAS_BAD_MONITORED_ITEM_ID_INVALID);
    h_run(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].nitems, 1, "only the triggering item's first sample");
    write_at(150, 2, 5);
    h_run(200);
    cr_expect_eq(H.n, 1, "the linked item alone reports nothing");
    write_at(250, 1, 1);
    h_run(300);
    cr_assert_eq(H.n, 2);
    const uas_data_change_notification *d = h_dcn(1);
    cr_assert_eq(d->monitored_items_count, 2);
    cr_expect_eq(d->monitored_items[0].client_handle, 10);
    cr_expect_eq(h_val(&d->monitored_items[0]), 1);
    cr_expect_eq(d->monitored_items[1].client_handle, 20);
    cr_expect_eq(h_val(&d->monitored_items[1]), 5);

    uint32_t rem[] = {linked, linked};
    cr_assert_eq(set_triggering(s, id, trig, NULL, 0, rem, 2, &resp), UAS_GOOD);
    cr_expect_eq(resp.remove_results[0], UAS_GOOD);
    cr_expect_eq(resp.remove_results[1], UAS_BAD_MONITORED_ITEM_ID_INVALID, "not linked any more");
    write_at(350, 2, 6);
    write_at(360, 1, 2);
    h_run(400);
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[2].nitems, 1);

    cr_expect_eq(set_triggering(s, id, 999, add, 1, NULL, 0, &resp),
                 UAS_BAD_MONITORED_ITEM_ID_INVALID);
    cr_expect_eq(set_triggering(s, id, trig, NULL, 0, NULL, 0, &resp), UAS_BAD_NOTHING_TO_DO);
    cr_expect_eq(set_triggering(s, 999, trig, add, 1, NULL, 0, &resp),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID);
}

Test(items, create_errors)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.limits.max_items_per_subscription = 2;
    h_start(&c);
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    cr_expect_eq(h_item_res(s, id, 20, 1, h_opts(0, 1)).status_code, UAS_BAD_NODE_ID_UNKNOWN);
    h_item_opts o = h_opts(0, 1);
    o.attr = 99;
    cr_expect_eq(h_item_res(s, id, 1, 1, o).status_code, UAS_BAD_ATTRIBUTE_ID_INVALID);
    o = h_opts(0, 1);
    o.mode = 7;
    cr_expect_eq(h_item_res(s, id, 1, 1, o).status_code, UAS_BAD_MONITORING_MODE_INVALID);
    o = h_opts(0, 1);
    o.attr = UAS_SUB_ATTR_EVENT_NOTIFIER;
    cr_expect_eq(h_item_res(s, id, 1, 1, o).status_code, UAS_BAD_ATTRIBUTE_ID_INVALID,
                 "check_node: not an event notifier");
    h_item(s, id, 1, 1, h_opts(0, 1));
    h_item(s, id, 2, 1, h_opts(0, 1));
    cr_expect_eq(h_item_res(s, id, 3, 1, h_opts(0, 1)).status_code,
                 UAS_BAD_TOO_MANY_MONITORED_ITEMS);

    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.items_to_create = &it;
    req.items_to_create_count = 1;
    uas_create_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    req.timestamps_to_return = 9;
    cr_expect_eq(uas_sub_create_monitored_items(s, &req, &resp, &H.a, 0),
                 UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID);
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_create_count = 0;
    cr_expect_eq(uas_sub_create_monitored_items(s, &req, &resp, &H.a, 0), UAS_BAD_NOTHING_TO_DO);
    req.subscription_id = 555;
    req.items_to_create_count = 1;
    cr_expect_eq(uas_sub_create_monitored_items(s, &req, &resp, &H.a, 0),
                 UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_expect_eq(resp.response_header.service_result, UAS_BAD_SUBSCRIPTION_ID_INVALID);
}

static uas_monitored_item_modify_result modify(uas_sub_session *s, uint32_t sub, uint32_t item,
                                               h_item_opts o)
{
    uas_monitored_item_modify_request m;
    memset(&m, 0, sizeof(m));
    m.monitored_item_id = item;
    m.requested_parameters.client_handle = 77;
    m.requested_parameters.sampling_interval = o.sampling;
    m.requested_parameters.queue_size = o.queue;
    m.requested_parameters.discard_oldest = o.discard_oldest;
    m.requested_parameters.filter = o.filter;
    uas_modify_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.timestamps_to_return = o.ttr;
    req.items_to_modify = &m;
    req.items_to_modify_count = 1;
    uas_modify_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_monitored_items(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    return resp.results[0];
}

Test(items, modify_shrinks_the_queue_keeping_the_newest)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 100, 3);
    uint32_t item = h_item(s, id, 1, 1, h_opts(0, 5));
    for (int i = 1; i <= 4; i++)
        write_at(10 * i, 1, i);
    h_item_opts o = h_opts(200, 2);
    o.ttr = UAS_TIMESTAMPS_TO_RETURN_SOURCE;
    uas_monitored_item_modify_result r = modify(s, id, item, o);
    cr_expect_eq(r.status_code, UAS_GOOD);
    cr_expect_eq(r.revised_queue_size, 2);
    cr_expect_eq(r.revised_sampling_interval, 200);
    cr_expect_eq(modify(s, id, 4242, o).status_code, UAS_BAD_MONITORED_ITEM_ID_INVALID);
    h_run(100);
    cr_assert_eq(H.n, 1);
    expect_values(0, (double[]){3, 4}, 2);
    cr_expect_eq(h_dc_status(0, 0), SUB_OVERFLOW_BITS, "values were dropped before it");
    cr_expect_eq(h_dcn(0)->monitored_items[0].client_handle, 77);
    write_at(110, 1, 5); /* taken at once */
    write_at(150, 1, 6); /* within 200 ms: taken at 310 */
    h_run(300);
    cr_assert_eq(H.n, 2);
    expect_values(1, (double[]){5}, 1);
    h_run(400);
    cr_assert_eq(H.n, 3);
    expect_values(2, (double[]){6}, 1);
    const uas_data_change_notification *d = h_dcn(2);
    cr_expect_not(d->monitored_items[0].value.has_server_timestamp, "Source only now");
    cr_expect(d->monitored_items[0].value.has_source_timestamp);
}

Test(items, timestamps_to_return)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    uas_timestamps_to_return t[] = {UAS_TIMESTAMPS_TO_RETURN_SOURCE,
                                    UAS_TIMESTAMPS_TO_RETURN_SERVER, UAS_TIMESTAMPS_TO_RETURN_BOTH,
                                    UAS_TIMESTAMPS_TO_RETURN_NEITHER};
    for (uint32_t k = 0; k < 4; k++) {
        h_item_opts o = h_opts(0, 1);
        o.ttr = t[k];
        h_item(s, id, 1, k, o);
    }
    h_run(1000);
    const uas_data_change_notification *d = h_dcn(0);
    cr_assert_eq(d->monitored_items_count, 4);
    for (uint32_t k = 0; k < 4; k++) {
        const uas_datavalue *dv = &d->monitored_items[k].value;
        bool src = t[k] == UAS_TIMESTAMPS_TO_RETURN_SOURCE || t[k] == UAS_TIMESTAMPS_TO_RETURN_BOTH;
        bool srv = t[k] == UAS_TIMESTAMPS_TO_RETURN_SERVER || t[k] == UAS_TIMESTAMPS_TO_RETURN_BOTH;
        cr_expect_eq(dv->has_source_timestamp, src, "item %u source", k);
        cr_expect_eq(dv->has_server_timestamp, srv, "item %u server", k);
    }
}

Test(items, delete_items_and_node_watches)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uint32_t a = h_item(s, id, 1, 1, h_opts(0, 1));
    uint32_t b = h_item(s, id, 1, 2, h_opts(100, 1));
    uas_sub_watch *w = H.nodes[1].watch;
    cr_expect_not_null(w);
    cr_expect_eq(H.nodes[1].mask, UAS_SUB_WATCH_VALUE);
    uint32_t ids[] = {a, 12345};
    uas_delete_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.monitored_item_ids = ids;
    req.monitored_item_ids_count = 2;
    uas_delete_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_delete_monitored_items(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_eq(resp.results[0], UAS_GOOD);
    cr_expect_eq(resp.results[1], UAS_BAD_MONITORED_ITEM_ID_INVALID);
    cr_expect_eq(H.nodes[1].watch, w, "one item is still on the node");
    ids[0] = b;
    req.monitored_item_ids_count = 1;
    cr_assert_eq(uas_sub_delete_monitored_items(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_null(H.nodes[1].watch);
    cr_expect_eq(H.nodes[1].mask, 0);
    h_write(1, 3); /* nobody listens: must not crash */
    uas_sub_engine_value_changed(H.e, &(uas_nodeid){.ns = 1, .id.numeric = 1}, NULL, 0);
    uas_sub_stats st;
    uas_sub_engine_get_stats(H.e, &st);
    cr_expect_eq(st.monitored_items, 0);
    cr_expect_eq(st.watched_nodes, 0);
}

/* Writers on other loops ask uas_sub_engine_may_watch before they copy a
 * value for this engine: yes for a node with a data item, no once its
 * last item is gone, and no for a node that is not watched. */
Test(items, writers_see_which_values_are_watched)
{
    uas_nodeid n1 = {.ns = 1, .id.numeric = 1}, n2 = {.ns = 1, .id.numeric = 2};
    uint32_t h1 = uas_sub_nodeid_hash(&n1), h2 = uas_sub_nodeid_hash(&n2);
    cr_assert_neq(h1 & 4095, h2 & 4095, "the test needs two nodes in different slots");
    cr_expect_not(uas_sub_engine_may_watch(H.e, h1), "nothing is watched yet");
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uint32_t a = h_item(s, id, 1, 1, h_opts(0, 1));
    uint32_t b = h_item(s, id, 1, 2, h_opts(100, 1));
    cr_expect(uas_sub_engine_may_watch(H.e, h1));
    cr_expect_not(uas_sub_engine_may_watch(H.e, h2), "an unwatched node is posted to nobody");
    uint32_t ids[] = {a};
    uas_delete_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.monitored_item_ids = ids;
    req.monitored_item_ids_count = 1;
    uas_delete_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_delete_monitored_items(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect(uas_sub_engine_may_watch(H.e, h1), "one item is still on the node");
    ids[0] = b;
    cr_assert_eq(uas_sub_delete_monitored_items(s, &req, &resp, &H.a, 0), UAS_GOOD);
    cr_expect_not(uas_sub_engine_may_watch(H.e, h1), "the last item is gone");
}

Test(items, value_changed_by_node_id)
{
    uas_sub_session *s = h_session();
    uint32_t id = sub_with_publishes(s, 1000, 1);
    h_item(s, id, 1, 1, h_opts(0, 3));
    double v = 8;
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    uas_variant_set_scalar(&dv.value, &v, &uas_types[UAS_TYPES_DOUBLE]);
    dv.has_value = true;
    uas_nodeid n = uas_nodeid_numeric(1, 1);
    uas_sub_engine_value_changed(H.e, &n, &dv, 10);
    h_run(1000);
    expect_values(0, (double[]){0, 8}, 2);
}

/* Many items on one node: each creation and deletion updates the node's
 * watch in constant time (it kept one list walk per change, quadratic in
 * the items of the node). No timing assertion: the log shows the time. */
#ifndef UAS_MINIMAL /* half of the items monitor events */
Test(items, twenty_thousand_items_on_one_node)
{
    enum { N = 10000 }; /* data items, and as many event items */
    H.capture = false;
    H.nodes[9].pushed = true;
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 100, 10);
    uas_simple_attribute_operand sel;
    memset(&sel, 0, sizeof(sel));
    sel.attribute_id = UAS_SUB_ATTR_VALUE;
    uas_event_filter ef;
    memset(&ef, 0, sizeof(ef));
    ef.select_clauses = &sel;
    ef.select_clauses_count = 1;
    uas_monitored_item_create_request *its =
        uas_arena_calloc(&H.a, 2 * N, sizeof(uas_monitored_item_create_request));
    cr_assert_not_null(its);
    for (uint32_t k = 0; k < 2 * N; k++) {
        its[k].item_to_monitor.node_id = uas_nodeid_numeric(1, 9);
        its[k].monitoring_mode = UAS_MONITORING_MODE_REPORTING;
        its[k].requested_parameters.client_handle = k;
        its[k].requested_parameters.queue_size = 1;
        if (k % 2) {
            its[k].item_to_monitor.attribute_id = UAS_SUB_ATTR_EVENT_NOTIFIER;
            its[k].requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
            its[k].requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
            its[k].requested_parameters.filter.content.decoded.data = &ef;
        } else {
            its[k].item_to_monitor.attribute_id = UAS_SUB_ATTR_VALUE;
        }
    }
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_create = its;
    req.items_to_create_count = 2 * N;
    uas_create_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(uas_sub_create_monitored_items(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (uint32_t k = 0; k < 2 * N; k++)
        cr_assert_eq(resp.results[k].status_code, UAS_GOOD);
    cr_expect_eq(H.nodes[9].mask, UAS_SUB_WATCH_VALUE | UAS_SUB_WATCH_EVENTS);
    uas_sub_stats st;
    uas_sub_engine_get_stats(H.e, &st);
    cr_expect_eq(st.monitored_items, 2 * N);
    cr_expect_eq(st.watched_nodes, 1);
    /* Every data item takes the write. */
    h_write(9, 5);
    h_publish(s, 1);
    h_run(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].nitems, 2 * N > 10000 ? 10000 : 2 * N, "first message full");
    /* Deleting the data items leaves the node watched for events only;
     * deleting the rest forgets it. */
    uint32_t *ids = uas_arena_calloc(&H.a, N, sizeof(uint32_t));
    cr_assert_not_null(ids);
    for (uint32_t k = 0; k < N; k++)
        ids[k] = resp.results[2 * k].monitored_item_id;
    uas_delete_monitored_items_request dr;
    memset(&dr, 0, sizeof(dr));
    dr.subscription_id = id;
    dr.monitored_item_ids = ids;
    dr.monitored_item_ids_count = N;
    uas_delete_monitored_items_response dresp;
    memset(&dresp, 0, sizeof(dresp));
    cr_assert_eq(uas_sub_delete_monitored_items(s, &dr, &dresp, &H.a, H.now), UAS_GOOD);
    cr_expect_eq(H.nodes[9].mask, UAS_SUB_WATCH_EVENTS);
    for (uint32_t k = 0; k < N; k++)
        ids[k] = resp.results[2 * k + 1].monitored_item_id;
    memset(&dresp, 0, sizeof(dresp));
    cr_assert_eq(uas_sub_delete_monitored_items(s, &dr, &dresp, &H.a, H.now), UAS_GOOD);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    cr_expect_eq(H.nodes[9].mask, 0);
    uas_sub_engine_get_stats(H.e, &st);
    cr_expect_eq(st.watched_nodes, 0);
    cr_log_info("%d items on one node: created in %.1f ms, all done in %.1f ms", 2 * N,
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
                (double)(t2.tv_sec - t0.tv_sec) * 1e3 + (double)(t2.tv_nsec - t0.tv_nsec) / 1e6);
}
#endif
