/* The steady state of a subscription does not allocate: values written
 * and sampled, notifications queued, messages built, sent, kept for
 * Republish and acknowledged, Publish requests parked and answered, all
 * from pools and embedded storage once warm. Counted with the stack's
 * allocator statistics (uas_mem_get_stats). */
#include <stdlib.h>

#include "test_sub_harness.h"

TestSuite(alloc, .init = h_setup, .fini = h_teardown);

static uint32_t last_seq, rid;

/* One publishing cycle as a client drives it: writes, a Publish request
 * acknowledging the previous message, the engine's tick. */
static void cycle(uas_sub_session *s, uint32_t sub, int k)
{
    for (uint32_t n = 1; n <= 7; n++)
        h_write(n, k * 10 + n);
    H.nodes[8].value = k;
    uas_subscription_acknowledgement ack = {sub, last_seq};
    h_publish_acks(s, 1, ++rid, 60000, last_seq ? 1 : 0, &ack);
    h_run(H.now + 100);
    cr_assert_eq(H.n, 1, "one message per cycle");
    cr_assert_eq(H.light[0].result, UAS_GOOD);
    if (k > 0)
        cr_assert_eq(H.light[0].nitems, 8, "one new value per item: %u", H.light[0].nitems);
    last_seq = H.light[0].seq;
    H.n = 0;
}

Test(alloc, steady_state_publish_cycles_do_not_allocate)
{
    H.capture = false; /* the recorder itself must not allocate */
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    for (uint32_t n = 1; n <= 7; n++)
        h_item(s, sub, n, n, h_opts(0, 2));
    h_item(s, sub, 8, 8, h_opts(50, 2)); /* a sampled data source */
    h_run(1);
    H.n = 0;
    for (int k = 0; k < 50; k++)
        cycle(s, sub, k);
    uas_mem_stats before, after;
    uas_sub_stats es0, es1;
    uas_sub_engine_get_stats(H.e, &es0);
    uas_mem_get_stats(&before);
    enum { N = 2000 };
    for (int k = 50; k < 50 + N; k++)
        cycle(s, sub, k);
    uas_mem_get_stats(&after);
    uas_sub_engine_get_stats(H.e, &es1);
    cr_expect_eq(es1.messages_sent - es0.messages_sent, N);
    cr_log_info("%d publish cycles: %llu allocations, %lld bytes live difference", N,
                (unsigned long long)(after.allocs - before.allocs),
                (long long)(after.bytes_live - before.bytes_live));
    cr_expect_eq(after.allocs, before.allocs, "%llu allocations in %d cycles",
                 (unsigned long long)(after.allocs - before.allocs), N);
    cr_expect_eq(after.frees, before.frees);
    cr_expect_eq(after.bytes_live, before.bytes_live);
}

Test(alloc, keep_alive_cycles_do_not_allocate)
{
    H.capture = false;
    uas_sub_session *s = h_session();
    h_sub(s, 100, 1);
    for (uint32_t i = 0; i < 20; i++) {
        h_publish_acks(s, 1, ++rid, 1000, 0, NULL);
        h_run(H.now + 100);
    }
    H.n = 0;
    uas_mem_stats before, after;
    uas_mem_get_stats(&before);
    for (uint32_t i = 0; i < 1000; i++) {
        h_publish_acks(s, 1, ++rid, 1000, 0, NULL);
        h_run(H.now + 100);
        cr_assert_eq(H.n, 1);
        cr_assert_eq(H.light[0].ndata, 0);
        H.n = 0;
    }
    uas_mem_get_stats(&after);
    cr_expect_eq(after.allocs, before.allocs);
    cr_expect_eq(after.bytes_live, before.bytes_live);
}

/* ---- events: pooled records ---- */

/* An event's fields as events.c gives them: values that point into the
 * reported event, which the engine has to copy for its queue. */
static char ev_text[4096];
static size_t ev_len = 40;

static uas_status text_field(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                             uas_variant *out, uas_arena *a)
{
    (void)ev;
    (void)op;
    uas_string *str = uas_arena_alloc(a, sizeof(*str));
    if (!str)
        return UAS_BAD_OUT_OF_MEMORY;
    str->length = (int32_t)ev_len;
    str->data = (uint8_t *)ev_text;
    uas_variant_set_scalar(out, str, &uas_types[UAS_TYPES_STRING]);
    return UAS_GOOD;
}

static uas_simple_attribute_operand ev_sel[3];
static uas_event_filter ev_filter;

/* An event item on node 9 selecting three text fields. */
static uint32_t event_item(uas_sub_session *s, uint32_t sub, uint32_t queue)
{
    static uas_qualifiedname name = {0, {7, (uint8_t *)"Message"}};
    memset(ev_sel, 0, sizeof(ev_sel));
    for (int i = 0; i < 3; i++) {
        ev_sel[i].attribute_id = UAS_SUB_ATTR_VALUE;
        ev_sel[i].browse_path = &name;
        ev_sel[i].browse_path_count = 1;
    }
    memset(&ev_filter, 0, sizeof(ev_filter));
    ev_filter.select_clauses = ev_sel;
    ev_filter.select_clauses_count = 3;
    h_item_opts o = h_opts(0, queue);
    o.attr = UAS_SUB_ATTR_EVENT_NOTIFIER;
    o.filter.encoding = UAS_EXTOBJ_DECODED;
    o.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    o.filter.content.decoded.data = &ev_filter;
    return h_item(s, sub, 9, 90, o);
}

static void post_events(uas_sub_engine *e, int n)
{
    uas_sub_event ev = {text_field, NULL, NULL};
    uas_nodeid n9 = uas_nodeid_numeric(1, 9);
    for (int i = 0; i < n; i++)
        uas_sub_engine_post_event(e, &n9, &ev, H.now);
}

/* Events, a Publish acknowledging the previous message, the tick: the
 * message of the previous cycle is released, its records reused. */
static void event_cycle(uas_sub_session *s, uint32_t sub, int nev)
{
    post_events(H.e, nev);
    uas_subscription_acknowledgement ack = {sub, last_seq};
    h_publish_acks(s, 1, ++rid, 60000, last_seq ? 1 : 0, &ack);
    h_run(H.now + 100);
    cr_assert_eq(H.n, 1, "one message per cycle");
    cr_assert_eq(H.light[0].nitems, (uint32_t)nev, "%u events", H.light[0].nitems);
    last_seq = H.light[0].seq;
    H.n = 0;
}

Test(alloc, steady_state_events_do_not_allocate)
{
    H.capture = false;
    memset(ev_text, 'x', sizeof(ev_text));
    ev_len = 40;
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    event_item(s, sub, 100);
    h_run(1);
    H.n = 0;
    last_seq = 0;
    for (int k = 0; k < 50; k++)
        event_cycle(s, sub, 20);
    uas_mem_stats before, after;
    uas_mem_get_stats(&before);
    enum { N = 1000, EV = 20 };
    for (int k = 0; k < N; k++)
        event_cycle(s, sub, EV);
    uas_mem_get_stats(&after);
    cr_log_info("%d events: %llu allocations, %lld bytes live difference", N * EV,
                (unsigned long long)(after.allocs - before.allocs),
                (long long)(after.bytes_live - before.bytes_live));
    cr_expect_eq(after.allocs, before.allocs, "%llu allocations for %d events",
                 (unsigned long long)(after.allocs - before.allocs), N * EV);
    cr_expect_eq(after.frees, before.frees);
    cr_expect_eq(after.bytes_live, before.bytes_live);
}

/* A steady load of more records than pool_max still allocates nothing
 * (the pool follows the records' recent peak), and after the load stops
 * the idle records above pool_max go back to the heap. */
Test(alloc, event_pool_follows_the_load_and_shrinks_after_it)
{
    uas_sub_engine_delete(H.e);
    uas_sub_config c;
    h_default_cb(&c);
    c.pool_max = 4;
    h_start(&c);
    H.capture = false;
    memset(ev_text, 'x', sizeof(ev_text));
    ev_len = 40;
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    event_item(s, sub, 100);
    h_run(1);
    H.n = 0;
    last_seq = 0;
    for (int k = 0; k < 20; k++)
        event_cycle(s, sub, 50);
    uas_mem_stats before, after, idle;
    uas_mem_get_stats(&before);
    for (int k = 0; k < 200; k++)
        event_cycle(s, sub, 50);
    uas_mem_get_stats(&after);
    cr_expect_eq(after.allocs, before.allocs, "%llu allocations for 10000 events, pool_max 4",
                 (unsigned long long)(after.allocs - before.allocs));
    /* The last message is acknowledged; nothing more comes for 30 s. */
    uas_subscription_acknowledgement ack = {sub, last_seq};
    h_publish_acks(s, 1, ++rid, 60000, 1, &ack);
    for (int t = 0; t < 300; t++)
        h_run(H.now + 100);
    uas_mem_get_stats(&idle);
    cr_expect_lt(idle.bytes_live + 40 * 1024, after.bytes_live,
                 "idle records were not returned: %lld bytes live, %lld under load",
                 (long long)idle.bytes_live, (long long)after.bytes_live);
}

/* Fields larger than a record's own memory spill into the heap; the
 * spill is returned with the record, which goes back to the pool. */
Test(alloc, large_event_spills_and_returns_its_spill)
{
    memset(ev_text, 'y', sizeof(ev_text));
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    event_item(s, sub, 100);
    h_run(1);
    H.n = 0;
    last_seq = 0;
    H.capture = false;
    ev_len = 40;
    for (int k = 0; k < 10; k++)
        event_cycle(s, sub, 4);
    ev_len = sizeof(ev_text); /* 3 x 4 KiB: far over the inline size */
    uas_mem_stats before, after;
    uas_mem_get_stats(&before);
    for (int k = 0; k < 10; k++)
        event_cycle(s, sub, 4);
    /* The last message is released by the next acknowledgement. */
    ev_len = 40;
    event_cycle(s, sub, 4);
    uas_mem_get_stats(&after);
    cr_expect_eq(after.bytes_live, before.bytes_live, "%lld bytes kept",
                 (long long)(after.bytes_live - before.bytes_live));
    cr_expect_eq(after.allocs - before.allocs, after.frees - before.frees);
    /* The arena's heap blocks: at most one per field, none for the
     * records themselves (pooled). */
    cr_expect_leq(after.allocs - before.allocs, 40 * 3, "%llu allocations for 40 large events",
                  (unsigned long long)(after.allocs - before.allocs));

    /* What the client gets is the whole event. */
    H.capture = true;
    ev_len = sizeof(ev_text);
    post_events(H.e, 1);
    uas_subscription_acknowledgement ack = {sub, last_seq};
    h_publish_acks(s, 1, ++rid, 60000, 1, &ack);
    h_run(H.now + 100);
    cr_assert_eq(H.n, 1);
    const uas_notification_message *nm = &H.full[0].notification_message;
    cr_assert_eq(nm->notification_data_count, 1);
    cr_assert_eq(nm->notification_data[0].content.decoded.type, UAS_TYPE(EVENT_NOTIFICATION_LIST));
    const uas_event_notification_list *l = nm->notification_data[0].content.decoded.data;
    cr_assert_eq(l->events_count, 1);
    cr_assert_eq(l->events[0].event_fields_count, 3);
    for (int i = 0; i < 3; i++) {
        const uas_string *str = l->events[0].event_fields[i].data;
        cr_assert_eq(l->events[0].event_fields[i].type, &uas_types[UAS_TYPES_STRING]);
        cr_assert_eq(str->length, (int32_t)sizeof(ev_text));
        cr_assert_eq(memcmp(str->data, ev_text, sizeof(ev_text)), 0);
        cr_assert_neq(str->data, (uint8_t *)ev_text, "copied, not borrowed");
    }
}

/* Records made by one engine are released by another after a transfer,
 * and outlive the engine that made them. */
Test(alloc, event_records_move_with_a_transfer)
{
    memset(ev_text, 'z', sizeof(ev_text));
    ev_len = 40;
    H.capture = false;
    uas_sub_session *a = h_session();
    uint32_t sub = h_sub(a, 100, 10);
    event_item(a, sub, 100);
    h_run(1);
    H.n = 0;
    last_seq = 0;
    event_cycle(a, sub, 5); /* one message kept for Republish */
    post_events(H.e, 7);    /* and seven events queued */
    ev_len = 2000;          /* one of them spilled */
    post_events(H.e, 1);
    ev_len = 40;

    uas_sub_config c;
    h_default_cb(&c);
    c.sub_id_first = 1000;
    uas_sub_engine *e2 = uas_sub_engine_new(&c, H.now);
    cr_assert_not_null(e2);
    uas_sub_session *b = uas_sub_session_new(e2, (void *)2);
    cr_assert_not_null(b);
    uas_transfer_result r;
    uas_sub_transfer_from(H.e, sub, b, false, &r, &H.a, H.now);
    cr_assert_eq(r.status_code, UAS_GOOD);
    cr_assert_eq(r.available_sequence_numbers_count, 1);
    uas_sub_session_delete(a, false, H.now);
    uas_sub_engine_delete(H.e); /* the engine that made the records */
    H.e = e2;
    H.n = 0;

    uas_subscription_acknowledgement ack = {sub, last_seq};
    h_publish_acks(b, 1, ++rid, 60000, 1, &ack);
    h_run(H.now + 100);
    cr_assert_geq(H.n, 1);
    size_t got = 0;
    for (size_t i = 0; i < H.n; i++)
        got += H.light[i].result == UAS_GOOD && H.light[i].sub_id == sub ? H.light[i].nitems : 0;
    cr_expect_eq(got, 8, "queued events delivered from the new engine: %zu", got);
    last_seq = H.light[H.n - 1].seq;
    H.n = 0;
    event_cycle(b, sub, 3); /* releases the moved records into e2's pool */
}

/* ---- every allocation failing in turn ---- */

static uint64_t nalloc, fail_at;

static void *fail_alloc(void *ud, size_t size)
{
    (void)ud;
    return ++nalloc == fail_at ? NULL : malloc(size);
}

static void *fail_realloc(void *ud, void *p, size_t old, size_t size)
{
    (void)ud;
    (void)old;
    return ++nalloc == fail_at ? NULL : realloc(p, size);
}

static void fail_free(void *ud, void *p, size_t size)
{
    (void)ud;
    (void)size;
    free(p);
}

static uint32_t raw_item(uas_sub_session *s, uint32_t sub, uint32_t node, uint32_t attr,
                         uint32_t queue, double sampling, uas_extensionobject filter)
{
    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    it.item_to_monitor.node_id = uas_nodeid_numeric(1, node);
    it.item_to_monitor.attribute_id = attr;
    it.monitoring_mode = UAS_MONITORING_MODE_REPORTING;
    it.requested_parameters.client_handle = node;
    it.requested_parameters.sampling_interval = sampling;
    it.requested_parameters.queue_size = queue;
    it.requested_parameters.discard_oldest = true;
    it.requested_parameters.filter = filter;
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.items_to_create_count = 1;
    req.items_to_create = &it;
    uas_create_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    if (uas_sub_create_monitored_items(s, &req, &resp, &H.a, H.now) != UAS_GOOD)
        return 0;
    return resp.results[0].status_code == UAS_GOOD ? resp.results[0].monitored_item_id : 0;
}

static uas_status no_field(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                           uas_variant *out, uas_arena *a)
{
    (void)ev;
    (void)op;
    (void)a;
    double *d = uas_arena_alloc(a, sizeof(double));
    if (!d)
        return UAS_BAD_OUT_OF_MEMORY;
    *d = 1.5;
    uas_variant_set_scalar(out, d, &uas_types[UAS_TYPES_DOUBLE]);
    return UAS_GOOD;
}

/* Everything the engine does, tolerating any failure on the way. */
static void scenario(void)
{
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *b = uas_sub_session_new(H.e, (void *)2);
    if (!a || !b) {
        uas_sub_session_delete(a, true, H.now);
        uas_sub_session_delete(b, true, H.now);
        return;
    }
    uas_create_subscription_request cr;
    memset(&cr, 0, sizeof(cr));
    cr.requested_publishing_interval = 100;
    cr.requested_max_keep_alive_count = 2;
    cr.requested_lifetime_count = 6;
    cr.publishing_enabled = true;
    uas_create_subscription_response cresp;
    memset(&cresp, 0, sizeof(cresp));
    uint32_t sub = uas_sub_create_subscription(a, &cr, &cresp, &H.a, H.now) == UAS_GOOD
                       ? cresp.subscription_id
                       : 0;
    uas_extensionobject none;
    memset(&none, 0, sizeof(none));
    uint32_t i1 = raw_item(a, sub, 1, UAS_SUB_ATTR_VALUE, 3, 0, none);
    uint32_t i2 = raw_item(a, sub, 2, UAS_SUB_ATTR_VALUE, 2, 100, none);
    raw_item(a, sub, 8, UAS_SUB_ATTR_VALUE, 2, 50, none);
    uas_simple_attribute_operand sel;
    memset(&sel, 0, sizeof(sel));
    sel.attribute_id = UAS_SUB_ATTR_VALUE;
    uas_event_filter ef;
    memset(&ef, 0, sizeof(ef));
    ef.select_clauses = &sel;
    ef.select_clauses_count = 1;
    uas_extensionobject fx;
    memset(&fx, 0, sizeof(fx));
    fx.encoding = UAS_EXTOBJ_DECODED;
    fx.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    fx.content.decoded.data = &ef;
    raw_item(a, sub, 9, UAS_SUB_ATTR_EVENT_NOTIFIER, 2, 0, fx);
    uas_sub_event ev = {no_field, NULL, NULL};
    uas_nodeid n9 = uas_nodeid_numeric(1, 9);
    for (int k = 1; k <= 4; k++) {
        h_write(1, k);
        h_write(2, k);
        H.nodes[8].value = k;
        uas_sub_engine_post_event(H.e, &n9, &ev, H.now);
        uas_subscription_acknowledgement acks[6] = {
            {sub, (uint32_t)k - 1}, {sub, 1}, {1, 1}, {2, 2}, {3, 3}, {4, 4}};
        h_publish_acks(a, 1, (uint32_t)k, 1000, 6, acks);
        h_run(H.now + 100);
    }
    uint32_t link = i2;
    uas_set_triggering_request tr;
    memset(&tr, 0, sizeof(tr));
    tr.subscription_id = sub;
    tr.triggering_item_id = i1;
    tr.links_to_add = &link;
    tr.links_to_add_count = 1;
    uas_set_triggering_response tresp;
    memset(&tresp, 0, sizeof(tresp));
    uas_sub_set_triggering(a, &tr, &tresp, &H.a, H.now);
    uas_republish_request rr = {.subscription_id = sub, .retransmit_sequence_number = 2};
    uas_republish_response rresp;
    memset(&rresp, 0, sizeof(rresp));
    uas_sub_republish(a, &rr, &rresp, &H.a, H.now);
    h_publish(a, 10);
    uas_transfer_subscriptions_request xr;
    memset(&xr, 0, sizeof(xr));
    xr.subscription_ids = &sub;
    xr.subscription_ids_count = 1;
    xr.send_initial_values = true;
    uas_transfer_subscriptions_response xresp;
    memset(&xresp, 0, sizeof(xresp));
    uas_sub_transfer_subscriptions(b, &xr, &xresp, &H.a, H.now);
    h_publish(b, 11);
    h_run(H.now + 300);
    uas_sub_session_delete(a, true, H.now);
    uas_sub_session_delete(b, false, H.now);
    h_run(H.now + 1000); /* the orphan expires */
    uas_arena_reset(&H.a);
}

Test(alloc, every_allocation_failure_is_survived)
{
    H.capture = false;
    uas_sub_engine_delete(H.e);
    H.e = NULL;
    uas_sub_config c;
    h_default_cb(&c);
    uas_allocator failing = {fail_alloc, fail_realloc, fail_free, NULL};
    uint64_t runs = 0;
    for (fail_at = 1; fail_at < 100000; fail_at++, runs++) {
        uas_mem_stats m0, m1;
        uas_mem_get_stats(&m0);
        nalloc = 0;
        H.n = 0;
        H.now = 0;
        for (int i = 0; i < H_NODES; i++)
            H.nodes[i].watch = NULL, H.nodes[i].mask = 0;
        uas_mem_set_allocator(&failing);
        H.e = uas_sub_engine_new(&c, 0);
        if (H.e)
            scenario();
        uas_sub_engine_delete(H.e);
        H.e = NULL;
        uas_mem_set_allocator(NULL);
        uas_mem_get_stats(&m1);
        cr_assert_eq(m1.bytes_live, m0.bytes_live, "allocation %llu failing leaks %lld bytes",
                     (unsigned long long)fail_at, (long long)(m1.bytes_live - m0.bytes_live));
        if (nalloc < fail_at)
            break; /* the whole scenario ran without reaching the failure */
    }
    cr_log_info("scenario survived %llu failing allocations; %zu responses in the full run",
                (unsigned long long)runs, H.n);
    cr_expect_gt(runs, 30);
    cr_expect_geq(H.n, 6, "the full run publishes");
}
