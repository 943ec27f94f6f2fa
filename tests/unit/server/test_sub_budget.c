/* Publish and event queues draw on the process memory budget: a flood
 * that would pass a small budget is cut at it (events as a queue overflow
 * with its EventQueueOverflowEventType event, data values as BadOutOfMemory
 * in their place), a new item whose queue does not fit is refused with
 * BadTooManyMonitoredItems, and everything charged goes back (the harness's
 * teardown checks the budget returns to where it was, for every suite). */
#include <stdlib.h>

#include "test_sub_harness.h"

TestSuite(sub_budget, .init = h_setup, .fini = h_teardown);

static size_t budget_used(void)
{
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    return bs.used;
}

static uint32_t budget_refused(void)
{
    return atomic_load(&((uas_sub_shared *)uas_sub_engine_shared(H.e))->budget_refused);
}

static uas_status sev_field(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                            uas_variant *out, uas_arena *a)
{
    (void)op;
    uint16_t *v = uas_arena_alloc(a, sizeof(*v));
    cr_assert_not_null(v);
    *v = (uint16_t)(uintptr_t)ev->ud;
    uas_variant_set_scalar(out, v, &uas_types[UAS_TYPES_UINT16]);
    return UAS_GOOD;
}

static void event(uint16_t severity)
{
    uas_sub_event ev = {sev_field, NULL, (void *)(uintptr_t)severity};
    uas_nodeid n9 = uas_nodeid_numeric(1, 9);
    uas_sub_engine_post_event(H.e, &n9, &ev, H.now);
}

static uas_qualifiedname sev_name = {0, {8, (uint8_t *)"Severity"}};
static uas_simple_attribute_operand sel;
static uas_event_filter ef;

static h_item_opts event_opts(uint32_t queue)
{
    memset(&sel, 0, sizeof(sel));
    sel.attribute_id = UAS_SUB_ATTR_VALUE;
    sel.browse_path = &sev_name;
    sel.browse_path_count = 1;
    memset(&ef, 0, sizeof(ef));
    ef.select_clauses = &sel;
    ef.select_clauses_count = 1;
    h_item_opts o = h_opts(0, queue);
    o.attr = UAS_SUB_ATTR_EVENT_NOTIFIER;
    o.filter.encoding = UAS_EXTOBJ_DECODED;
    o.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    o.filter.content.decoded.data = &ef;
    return o;
}

/* Severities of the events of captured response i, appended to out. */
static size_t severities(size_t i, uint16_t *out, size_t n, size_t max)
{
    const uas_notification_message *nm = &H.full[i].notification_message;
    for (size_t k = 0; k < nm->notification_data_count; k++) {
        if (nm->notification_data[k].content.decoded.type != UAS_TYPE(EVENT_NOTIFICATION_LIST))
            continue;
        const uas_event_notification_list *l = nm->notification_data[k].content.decoded.data;
        for (size_t j = 0; j < l->events_count && n < max; j++) {
            cr_assert_eq(l->events[j].event_fields_count, 1);
            out[n++] = *(const uint16_t *)l->events[j].event_fields[0].data;
        }
    }
    return n;
}

/* Publish (acknowledging what came before) until a response brings
 * nothing more; the severities of all events delivered. */
static size_t drain(uas_sub_session *s, uint32_t sub, uint16_t *out, size_t max)
{
    size_t n = 0;
    for (uint32_t rid = 1; rid < 200; rid++) {
        size_t before = H.n;
        uas_subscription_acknowledgement ack = {sub, 0};
        bool acked = before > 0 && H.light[before - 1].nitems > 0;
        if (acked)
            ack.sequence_number = H.light[before - 1].seq;
        h_publish_acks(s, 1, rid, 0, acked ? 1 : 0, &ack);
        h_run(H.now + 1000);
        cr_assert_gt(H.n, before, "no answer to Publish %u", rid);
        n = severities(H.n - 1, out, n, max);
        if (H.light[H.n - 1].nitems == 0)
            break;
    }
    return n;
}

Test(sub_budget, an_event_flood_is_cut_at_the_budget_and_reported_as_an_overflow)
{
    size_t limit = budget_used() + (512u << 10);
    uas_budget_set_limit(limit);
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    h_item(s, sub, 9, 7, event_opts(10000));

    /* 2,000 events of about 1 KiB each would need 2 MiB: the budget
     * takes a few hundred, the rest are lost as an overflow. */
    for (int i = 0; i < 2000; i++) {
        event(500);
        cr_assert_leq(budget_used(), limit, "the queue grew past the budget at event %d", i);
    }
    cr_expect_gt(budget_refused(), 0);

    static uint16_t sev[4096];
    size_t n = drain(s, sub, sev, 4096);
    cr_expect_gt(n, 100, "what fitted is delivered");
    cr_expect_lt(n, 2000, "not all of the flood was queued");
    /* discardOldest: the EventQueueOverflowEventType event (Severity 100)
     * heads what is left of the queue. */
    cr_expect_eq(sev[0], 100, "the loss is reported first");
    size_t ovf = 0;
    for (size_t i = 0; i < n; i++)
        ovf += sev[i] == 100;
    cr_expect_eq(ovf, 1, "one overflow event");

    /* Once the client has taken and acknowledged them, the budget has
     * room again and new events come through whole. */
    for (int i = 0; i < 5; i++)
        event(700);
    n = drain(s, sub, sev, 4096);
    cr_expect_eq(n, 5);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(sev[i], 700);
    uas_sub_session_delete(s, true, H.now);
}

Test(sub_budget, an_item_whose_queue_does_not_fit_is_refused_and_others_are_served)
{
    size_t limit = budget_used() + (100u << 10);
    uas_budget_set_limit(limit);
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    /* 10,000 slots of 8 bytes and a 64 KiB batch do not fit in 100 KiB. */
    uas_monitored_item_create_result r = h_item_res(s, sub, 9, 1, event_opts(10000));
    cr_expect_eq(r.status_code, UAS_BAD_TOO_MANY_MONITORED_ITEMS, "%s",
                 uas_status_name(r.status_code));
    cr_expect_eq(budget_refused(), 1);
    /* A modest queue still fits, for this session and another. */
    h_item(s, sub, 9, 2, event_opts(10));
    uas_sub_session *other = h_session();
    uint32_t sub2 = h_sub(other, 100, 10);
    h_item(other, sub2, 1, 3, h_opts(0, 10));
    h_write(1, 42);
    h_publish(other, 1);
    h_run(H.now + 200);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].nitems, 2, "the first sample and the write");
    cr_expect_leq(budget_used(), limit);
    uas_sub_session_delete(s, true, H.now);
    uas_sub_session_delete(other, true, H.now);
}

Test(sub_budget, large_values_past_the_budget_are_queued_as_bad_out_of_memory)
{
    size_t limit = budget_used() + (512u << 10);
    uas_budget_set_limit(limit);
    uas_sub_session *s = h_session();
    uint32_t sub = h_sub(s, 100, 10);
    h_item(s, sub, 1, 1, h_opts(0, 1000));
    h_run(H.now + 1); /* the first sample */

    /* 200 strings of 8 KiB would need 1.6 MiB. */
    static char text[8192];
    memset(text, 'x', sizeof(text));
    uas_string str = {sizeof(text), (uint8_t *)text};
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    uas_variant_set_scalar(&dv.value, &str, &uas_types[UAS_TYPES_STRING]);
    dv.has_value = true;
    for (int i = 0; i < 200; i++) {
        text[0] = (char)('a' + i % 26); /* a change each time */
        text[1] = (char)('a' + i / 26);
        uas_sub_engine_value_changed_watch(H.e, H.nodes[1].watch, &dv, H.now);
        cr_assert_leq(budget_used(), limit, "the queue grew past the budget at value %d", i);
    }
    cr_expect_gt(budget_refused(), 0);

    h_publish(s, 1);
    h_run(H.now + 200);
    cr_assert_eq(H.n, 1);
    const uas_data_change_notification *d = h_dcn(0);
    cr_assert_not_null(d);
    cr_expect_eq(d->monitored_items_count, 201, "the first sample and every change");
    size_t strings = 0, refused = 0;
    for (size_t i = 0; i < d->monitored_items_count; i++) {
        const uas_datavalue *v = &d->monitored_items[i].value;
        if (v->value.type == &uas_types[UAS_TYPES_STRING])
            strings++;
        else if (v->has_status && (v->status & 0xFFFF0000u) == UAS_BAD_OUT_OF_MEMORY)
            refused++;
    }
    cr_expect_gt(strings, 10, "what fitted is delivered");
    cr_expect_gt(refused, 0, "what did not is marked");
    cr_expect_eq(strings + refused + 1, 201);
    uas_sub_session_delete(s, true, H.now);
}
