/* TransferSubscriptions between two engines (two event loops of one
 * server): the subscription leaves the source's indexes with its items,
 * queues, timers, retransmission queue and sequence numbers and goes on in
 * the target; a write missed while it moved is caught up; a move that runs
 * out of memory leaves it where it was. Both engines share the harness's
 * fake clock and callbacks. */
#include <stdlib.h>

#include "test_sub_harness.h"

static uas_sub_engine *E2;
static unsigned nchanged; /* cb.sub_changed calls */

static void on_changed(void *ud, uint32_t old_ms, uint32_t new_ms)
{
    (void)ud, (void)old_ms, (void)new_ms;
    nchanged++;
}

/* Loop 0 hands out odd ids, loop 1 even ones, as the server does. */
static void engines(uint32_t retrans2, bool (*may)(void *, void *, void *))
{
    uas_sub_config c;
    h_default_cb(&c);
    c.cb.may_transfer = may;
    c.cb.sub_changed = on_changed;
    c.sub_id_first = 1;
    c.sub_id_step = 2;
    uas_sub_engine_delete(E2);
    uas_sub_engine_delete(H.e);
    uas_arena_reset(&H.a);
    h_start(&c);
    c.sub_id_first = 2;
    c.limits.max_retransmission = retrans2;
    E2 = uas_sub_engine_new(&c, H.now);
    cr_assert_not_null(E2);
}

static void setup(void)
{
    h_setup();
    engines(10, NULL);
}

static void teardown(void)
{
    uas_sub_engine_delete(E2);
    E2 = NULL;
    h_teardown();
}

TestSuite(xfer, .init = setup, .fini = teardown);

static uas_sub_stats st(uas_sub_engine *e)
{
    uas_sub_stats s;
    uas_sub_engine_get_stats(e, &s);
    return s;
}

/* Both loops tick at every deadline either asks for. */
static void run2(int64_t t)
{
    for (;;) {
        int64_t d1 = uas_sub_engine_next_deadline(H.e), d2 = uas_sub_engine_next_deadline(E2);
        int64_t d = d1 < d2 ? d1 : d2;
        if (d > t)
            break;
        if (d > H.now)
            H.now = d;
        uas_sub_engine_tick(H.e, H.now);
        uas_sub_engine_tick(E2, H.now);
    }
    H.now = t;
    uas_sub_engine_tick(H.e, H.now);
    uas_sub_engine_tick(E2, H.now);
}

/* A write as the server reports it: to every engine, by node. */
static void write2(uint32_t node, double v)
{
    H.nodes[node].value = v;
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    uas_variant_set_scalar(&dv.value, &v, &uas_types[UAS_TYPES_DOUBLE]);
    dv.has_value = true;
    dv.source_timestamp = H_UTC0 + H.now * 10000;
    dv.has_source_timestamp = true;
    uas_nodeid id = uas_nodeid_numeric(1, node);
    uas_sub_engine_value_changed(H.e, &id, &dv, H.now);
    uas_sub_engine_value_changed(E2, &id, &dv, H.now);
}

/* An event whose only field is Severity. */
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

static void event2(uint16_t severity)
{
    uas_sub_event ev = {sev_field, NULL, (void *)(uintptr_t)severity};
    uas_nodeid n9 = uas_nodeid_numeric(1, 9);
    uas_sub_engine_post_event(H.e, &n9, &ev, H.now);
    uas_sub_engine_post_event(E2, &n9, &ev, H.now);
}

static uas_qualifiedname sev_name = {0, {8, (uint8_t *)"Severity"}};

static h_item_opts event_opts(uas_event_filter *ef, uas_simple_attribute_operand *sel)
{
    memset(sel, 0, sizeof(*sel));
    sel->attribute_id = UAS_SUB_ATTR_VALUE;
    sel->browse_path = &sev_name;
    sel->browse_path_count = 1;
    memset(ef, 0, sizeof(*ef));
    ef->select_clauses = sel;
    ef->select_clauses_count = 1;
    h_item_opts o = h_opts(0, 4);
    o.attr = UAS_SUB_ATTR_EVENT_NOTIFIER;
    o.filter.encoding = UAS_EXTOBJ_DECODED;
    o.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    o.filter.content.decoded.data = ef;
    return o;
}

static uas_transfer_result transfer(uas_sub_engine *src, uint32_t id, uas_sub_session *to,
                                    bool initial)
{
    uas_transfer_result r;
    uas_sub_transfer_from(src, id, to, initial, &r, &H.a, H.now);
    return r;
}

/* Number of data notifications in response i (0 when it has none). */
static size_t ndata(size_t i)
{
    const uas_data_change_notification *d = h_dcn(i);
    return d ? d->monitored_items_count : 0;
}

Test(xfer, moves_items_queues_timers_and_retransmission_queue)
{
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *b = uas_sub_session_new(E2, (void *)2);
    uint32_t id = h_sub(a, 100, 10);
    cr_assert_eq(id % 2, 1, "an id of loop 0");
    H.nodes[1].value = 1;
    h_item(a, id, 1, 11, h_opts(0, 4));
    H.nodes[8].value = 80;
    h_item(a, id, 8, 18, h_opts(100, 2)); /* a data source, sampled by the wheel */
    uas_event_filter ef;
    uas_simple_attribute_operand sel;
    h_item(a, id, 9, 19, event_opts(&ef, &sel));
    h_publish_acks(a, 10, 1, 0, 0, NULL);
    run2(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].seq, 1);
    cr_expect_eq(H.light[0].nitems, 2, "node 1 and node 8");
    /* Message 1 stays unacknowledged; more is queued, and A parks one. */
    write2(1, 2);
    event2(500);
    h_publish_acks(a, 10, 2, 0, 0, NULL);
    cr_assert_eq(H.n, 1, "nothing due before the next cycle");
    cr_expect_eq(st(H.e).watched_nodes, 2);
    cr_expect_eq(st(E2).watched_nodes, 0);

    unsigned changed = nchanged;
    uas_transfer_result r = transfer(H.e, id, b, false);
    cr_assert_eq(r.status_code, UAS_GOOD, "%s", uas_status_name(r.status_code));
    cr_expect_eq(nchanged, changed, "a move neither creates nor deletes a subscription");
    cr_assert_eq(r.available_sequence_numbers_count, 1);
    cr_expect_eq(r.available_sequence_numbers[0], 1);
    /* Nothing of it is left in loop 0: ids, items, node watches, timers. */
    uas_sub_stats s1 = st(H.e), s2 = st(E2);
    cr_expect_eq(s1.subscriptions, 0);
    cr_expect_eq(s1.monitored_items, 0);
    cr_expect_eq(s1.watched_nodes, 0);
    cr_expect_eq(s1.timers, 0);
    cr_expect_eq(s2.subscriptions, 1);
    cr_expect_eq(s2.monitored_items, 3);
    cr_expect_eq(s2.watched_nodes, 2);
    cr_expect_eq(s2.timers, 2, "the publishing and the sampling timer");
    /* The old session is told with its parked request. */
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].target, 10);
    cr_expect_eq(H.light[1].sub_id, id);
    cr_expect_eq(h_status_change(1), UAS_GOOD_SUBSCRIPTION_TRANSFERRED);
    cr_expect_eq(uas_sub_session_subscription_count(a), 0);
    cr_expect_eq(uas_sub_session_subscription_count(b), 1);

    /* The queued value and event come to B, in the sequence that went on. */
    h_publish_acks(b, 20, 3, 0, 0, NULL);
    run2(200);
    cr_assert_eq(H.n, 3);
    cr_expect_eq(H.light[2].target, 20);
    cr_expect_eq(H.light[2].sub_id, id);
    cr_expect_eq(H.light[2].seq, 2);
    cr_expect_eq(H.light[2].nitems, 2, "value 2 and the event");
    cr_expect_eq(h_dc_val(2, 0), 2);
    /* Writes and events now reach it through loop 1 only; the sampling
     * timer runs on loop 1's wheel. */
    uas_nodeid n1 = uas_nodeid_numeric(1, 1);
    double v = 3;
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    uas_variant_set_scalar(&dv.value, &v, &uas_types[UAS_TYPES_DOUBLE]);
    dv.has_value = true;
    uas_sub_engine_value_changed(E2, &n1, &dv, H.now);
    H.nodes[8].value = 81;
    h_publish_acks(b, 20, 4, 0, 0, NULL);
    run2(300);
    cr_assert_eq(H.n, 4);
    cr_expect_eq(H.light[3].seq, 3);
    cr_expect_eq(ndata(3), 2);
    cr_expect_eq(h_dc_val(3, 0), 3);
    cr_expect_eq(h_dc_val(3, 1), 81);
    /* Message 1 went along: B can have it again and acknowledge it. */
    uas_republish_request rr = {.subscription_id = id, .retransmit_sequence_number = 1};
    uas_republish_response rresp;
    memset(&rresp, 0, sizeof(rresp));
    cr_expect_eq(uas_sub_republish(b, &rr, &rresp, &H.a, H.now), UAS_GOOD);
    uas_subscription_acknowledgement ack = {id, 1};
    h_publish_acks(b, 20, 5, 0, 1, &ack);
    cr_expect_eq(H.n, 4, "parked");
    /* A has nothing left. */
    h_publish_acks(a, 10, 6, 0, 0, NULL);
    cr_assert_eq(H.n, 5);
    cr_expect_eq(H.light[4].result, UAS_BAD_NO_SUBSCRIPTION);
    /* B owns it: delete it there. */
    uas_delete_subscriptions_request dr = {.subscription_ids = &id, .subscription_ids_count = 1};
    uas_delete_subscriptions_response dresp;
    memset(&dresp, 0, sizeof(dresp));
    cr_assert_eq(uas_sub_delete_subscriptions(b, &dr, &dresp, &H.a, H.now), UAS_GOOD);
    cr_expect_eq(dresp.results[0], UAS_GOOD);
    cr_expect_eq(st(E2).watched_nodes, 0);
    cr_expect_eq(st(E2).monitored_items, 0);
}

Test(xfer, a_write_missed_while_moving_is_caught_up_and_initial_values_come_once)
{
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *b = uas_sub_session_new(E2, (void *)2);
    uint32_t id = h_sub(a, 100, 10);
    write2(1, 10);
    write2(2, 20);
    h_item(a, id, 1, 1, h_opts(0, 4));
    h_item(a, id, 2, 2, h_opts(0, 4));
    h_publish_acks(a, 10, 1, 0, 0, NULL);
    run2(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].nitems, 2);
    /* A write that reached loop 1 before the subscription and loop 0 after
     * it: neither engine saw it for this subscription. */
    H.nodes[1].value = 11;
    uas_transfer_result r = transfer(H.e, id, b, true);
    cr_assert_eq(r.status_code, UAS_GOOD);
    h_publish_acks(b, 20, 2, 0, 0, NULL);
    run2(200);
    cr_assert_eq(H.n, 2);
    cr_assert_eq(ndata(1), 2, "one value per item, no repeat");
    cr_expect_eq(h_dc_val(1, 0), 11, "the missed write");
    cr_expect_eq(h_dc_val(1, 1), 20, "the initial value");
}

Test(xfer, within_one_engine_and_unknown_ids)
{
    uas_sub_session *a = uas_sub_session_new(E2, (void *)1);
    uas_sub_session *b = uas_sub_session_new(E2, (void *)2);
    uint32_t id = h_sub(a, 100, 10);
    cr_expect_eq(transfer(H.e, id, b, false).status_code, UAS_BAD_SUBSCRIPTION_ID_INVALID,
                 "not in that engine");
    cr_expect_eq(transfer(E2, id + 2, b, false).status_code, UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_expect_eq(transfer(E2, id, b, false).status_code, UAS_GOOD);
    cr_expect_eq(uas_sub_session_subscription_count(b), 1);
    cr_expect_eq(st(E2).subscriptions, 1);
}

static bool only_one(void *ud, void *from, void *to)
{
    (void)ud;
    (void)from;
    return (uintptr_t)to == 1;
}

Test(xfer, access_denied_leaves_it_in_place_and_orphans_move)
{
    engines(10, only_one);
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)7);
    uas_sub_session *evil = uas_sub_session_new(E2, (void *)66);
    uas_sub_session *b = uas_sub_session_new(E2, (void *)1);
    uint32_t id = h_sub(a, 100, 10);
    h_item(a, id, 1, 1, h_opts(0, 1));
    cr_expect_eq(transfer(H.e, id, evil, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(st(H.e).subscriptions, 1);
    cr_expect_eq(st(H.e).watched_nodes, 1);
    cr_expect_eq(st(E2).watched_nodes, 0);
    /* Closed without deleting its subscriptions: the orphan moves too. */
    uas_sub_session_delete(a, false, H.now);
    cr_expect_eq(transfer(H.e, id, b, false).status_code, UAS_GOOD);
    cr_expect_eq(st(H.e).subscriptions, 0);
    cr_expect_eq(st(E2).subscriptions, 1);
    cr_expect_eq(H.n, 0, "an orphan has nobody to tell");
}

/* ---- the owner (Part 4, 5.13.7: the same user only) ---- */

static uas_sub_owner owner(uint8_t who)
{
    uas_sub_owner o;
    memset(o.key, who, sizeof(o.key));
    return o;
}

static uas_sub_session *session_of(uas_sub_engine *e, uintptr_t ud, uint8_t who)
{
    uas_sub_session *s = uas_sub_session_new(e, (void *)ud);
    cr_assert_not_null(s);
    uas_sub_owner o = owner(who);
    uas_sub_session_set_owner(s, &o);
    return s;
}

Test(xfer, the_same_owner_takes_it_from_the_same_or_another_engine)
{
    uas_sub_session *a = session_of(H.e, 1, 'A');
    uas_sub_session *same = session_of(H.e, 2, 'A');
    uas_sub_session *there = session_of(E2, 3, 'A');
    uint32_t id = h_sub(a, 100, 10);
    cr_expect_eq(transfer(H.e, id, same, false).status_code, UAS_GOOD);
    cr_expect_eq(transfer(H.e, id, there, false).status_code, UAS_GOOD);
    cr_expect_eq(uas_sub_session_subscription_count(there), 1);
}

Test(xfer, another_owner_is_denied_and_the_old_session_keeps_it)
{
    uas_sub_session *a = session_of(H.e, 1, 'A');
    uas_sub_session *b = session_of(H.e, 2, 'B');
    uas_sub_session *b2 = session_of(E2, 3, 'B');
    uint32_t id = h_sub(a, 100, 10);
    h_item(a, id, 1, 1, h_opts(0, 1));
    h_publish_acks(a, 10, 1, 0, 0, NULL);
    cr_expect_eq(transfer(H.e, id, b, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(transfer(H.e, id, b2, true).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(uas_sub_session_subscription_count(a), 1);
    cr_expect_eq(uas_sub_session_subscription_count(b) + uas_sub_session_subscription_count(b2), 0);
    cr_expect_eq(st(E2).subscriptions, 0);
    cr_expect_eq(st(E2).watched_nodes, 0, "nothing reserved for a denied move");
    /* A is not told anything and goes on being served. */
    write2(1, 5);
    run2(100);
    cr_assert_eq(H.n, 1);
    cr_expect_eq(H.light[0].target, 10);
    cr_expect_eq(h_dc_val(0, 0), 5);
}

Test(xfer, a_session_keeps_what_it_created_under_an_earlier_user)
{
    uas_sub_session *a = session_of(H.e, 1, 'A');
    uint32_t id = h_sub(a, 100, 10);
    /* Activated for B since: new subscriptions are B's, the old one A's. */
    uas_sub_owner b = owner('B');
    uas_sub_session_set_owner(a, &b);
    uint32_t id2 = h_sub(a, 100, 10);
    cr_expect_eq(transfer(H.e, id, a, false).status_code, UAS_GOOD, "its own");
    uas_sub_session *other_b = session_of(H.e, 2, 'B');
    cr_expect_eq(transfer(H.e, id, other_b, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(transfer(H.e, id2, other_b, false).status_code, UAS_GOOD);
}

Test(xfer, an_orphan_keeps_its_owner_across_engines)
{
    uas_sub_session *a = session_of(H.e, 1, 'A');
    uint32_t id = h_sub(a, 100, 10);
    h_item(a, id, 1, 1, h_opts(0, 1));
    uas_sub_session_delete(a, false, H.now);
    uas_sub_session *b = session_of(E2, 2, 'B');
    cr_expect_eq(transfer(H.e, id, b, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(st(H.e).subscriptions, 1, "still the orphan of loop 0");
    /* The same user on the other loop takes it; orphaned there, it is
     * still A's when it comes back. */
    uas_sub_session *a2 = session_of(E2, 3, 'A');
    cr_expect_eq(transfer(H.e, id, a2, false).status_code, UAS_GOOD);
    cr_expect_eq(st(E2).subscriptions, 1);
    uas_sub_session_delete(a2, false, H.now);
    uas_sub_session *b0 = session_of(H.e, 4, 'B');
    cr_expect_eq(transfer(E2, id, b0, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(transfer(E2, id, b, false).status_code, UAS_BAD_USER_ACCESS_DENIED);
    uas_sub_session *a3 = session_of(H.e, 5, 'A');
    cr_expect_eq(transfer(E2, id, a3, false).status_code, UAS_GOOD);
    cr_expect_eq(uas_sub_session_subscription_count(a3), 1);
    cr_expect_eq(st(H.e).watched_nodes, 1);
    cr_expect_eq(st(E2).watched_nodes, 0);
}

Test(xfer, a_smaller_retransmission_queue_keeps_the_newest_messages)
{
    engines(2, NULL);
    uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
    uas_sub_session *b = uas_sub_session_new(E2, (void *)2);
    uint32_t id = h_sub(a, 100, 10);
    h_item(a, id, 1, 1, h_opts(0, 1));
    for (int k = 1; k <= 4; k++) {
        write2(1, k);
        h_publish_acks(a, 10, (uint32_t)k, 0, 0, NULL);
        run2(H.now + 100);
    }
    cr_assert_eq(H.n, 4);
    uas_transfer_result r = transfer(H.e, id, b, false);
    cr_assert_eq(r.status_code, UAS_GOOD);
    cr_assert_eq(r.available_sequence_numbers_count, 2);
    cr_expect_eq(r.available_sequence_numbers[0], 3);
    cr_expect_eq(r.available_sequence_numbers[1], 4);
    write2(1, 5);
    h_publish_acks(b, 20, 9, 0, 0, NULL);
    run2(H.now + 100);
    cr_assert_eq(H.n, 5);
    cr_expect_eq(H.light[4].seq, 5);
}

/* ---- every allocation of a move failing in turn ---- */

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

Test(xfer, a_move_out_of_memory_leaves_the_subscription_where_it_was)
{
    H.capture = false;
    uas_allocator failing = {fail_alloc, fail_realloc, fail_free, NULL};
    uint64_t runs = 0;
    for (fail_at = 1; fail_at < 1000; fail_at++, runs++) {
        /* Fresh engines every round: the first allocation of the target
         * (its id map, its watches) is the one that may fail. */
        engines(3, NULL);
        uas_sub_session *a = uas_sub_session_new(H.e, (void *)1);
        uas_sub_session *b = uas_sub_session_new(E2, (void *)2);
        uint32_t id = h_sub(a, 100, 10);
        for (uint32_t n = 1; n <= 5; n++)
            h_item(a, id, n, n, h_opts(0, 2));
        write2(1, 1);
        h_publish_acks(a, 10, 1, 0, 0, NULL);
        run2(H.now + 100);
        nalloc = 0;
        uas_mem_set_allocator(&failing);
        uas_transfer_result r = transfer(H.e, id, b, false);
        uas_mem_set_allocator(NULL);
        if (r.status_code == UAS_GOOD) {
            cr_expect_eq(st(E2).subscriptions, 1);
            cr_expect_eq(st(E2).watched_nodes, 5);
            cr_expect_eq(st(H.e).watched_nodes, 0);
        } else {
            cr_assert_eq(r.status_code, UAS_BAD_OUT_OF_MEMORY, "%s",
                         uas_status_name(r.status_code));
            cr_expect_eq(st(H.e).subscriptions, 1);
            cr_expect_eq(st(H.e).monitored_items, 5);
            cr_expect_eq(st(H.e).watched_nodes, 5);
            cr_expect_eq(st(E2).subscriptions, 0);
            cr_expect_eq(st(E2).watched_nodes, 0, "no reservation left behind");
            cr_expect_eq(uas_sub_session_subscription_count(a), 1);
            /* It goes on working where it was. */
            size_t n0 = H.n;
            write2(2, (double)(1000 + fail_at));
            h_publish_acks(a, 10, 2, 0, 0, NULL);
            run2(H.now + 100);
            cr_expect_eq(H.n, n0 + 1);
            cr_expect_eq(H.light[n0].nitems, 1);
        }
        H.n = 0;
        if (nalloc < fail_at)
            break; /* the move ran without reaching the failure */
    }
    cr_log_info("move survived %llu failing allocations", (unsigned long long)runs);
    cr_expect_gt(runs, 2);
}
