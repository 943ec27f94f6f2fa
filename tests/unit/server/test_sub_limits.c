/* The bounds of issue 12 in the engine: counts shared by the engines of
 * one server (subscriptions, monitored items, queue slots), per-session
 * and per-subscription caps, the lifetime cap, orphans (lifetime, oldest
 * first). */
#include "sub_methods.h"
#include "test_sub_harness.h"

TestSuite(sub_limits, .init = h_setup, .fini = h_teardown);

static uas_sub_shared shared;

/* H.e again, with these limits and the shared counts. */
static void restart(void (*set)(uas_sub_limits *l))
{
    uas_sub_engine_delete(H.e);
    memset(&shared, 0, sizeof(shared));
    uas_sub_config c;
    h_default_cb(&c);
    c.shared = &shared;
    set(&c.limits);
    h_start(&c);
}

static uas_status create_sub(uas_sub_session *s)
{
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.requested_publishing_interval = 100;
    uas_create_subscription_response resp;
    memset(&resp, 0, sizeof(resp));
    return uas_sub_create_subscription(s, &req, &resp, &H.a, H.now);
}

static void three_subs(uas_sub_limits *l)
{
    l->max_subscriptions = 3;
}

Test(sub_limits, subscriptions_count_across_engines)
{
    restart(three_subs);
    uas_sub_config c;
    h_default_cb(&c);
    c.shared = &shared;
    three_subs(&c.limits);
    uas_sub_engine *e2 = uas_sub_engine_new(&c, H.now);
    cr_assert_not_null(e2);
    uas_sub_session *a = h_session();
    uas_sub_session *b = uas_sub_session_new(e2, NULL);
    cr_assert_eq(create_sub(a), UAS_GOOD);
    cr_assert_eq(create_sub(a), UAS_GOOD);
    cr_assert_eq(create_sub(b), UAS_GOOD);
    /* Each engine holds fewer than 3, the server 3: both refuse. */
    cr_expect_eq(create_sub(b), UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    cr_expect_eq(create_sub(a), UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    cr_expect_eq(atomic_load(&shared.subs), 3);
    cr_expect_geq(atomic_load(&shared.refused), 2);
    /* A deleted one frees its place for any engine. */
    uas_sub_session_delete(a, true, H.now);
    cr_expect_eq(atomic_load(&shared.subs), 1);
    cr_expect_eq(create_sub(b), UAS_GOOD);
    uas_sub_engine_delete(e2);
    cr_expect_eq(atomic_load(&shared.subs), 0);
}

static void items_per_session(uas_sub_limits *l)
{
    l->max_items_per_session = 3;
    l->max_monitored_items = 5;
}

Test(sub_limits, monitored_items_per_session_and_server)
{
    restart(items_per_session);
    uas_sub_session *a = h_session(), *b = h_session();
    uint32_t s1 = h_sub(a, 100, 1), s2 = h_sub(a, 100, 1);
    h_item(a, s1, 1, 1, h_opts(0, 1));
    h_item(a, s1, 2, 2, h_opts(0, 1));
    h_item(a, s2, 3, 3, h_opts(0, 1));
    /* A fourth in either subscription of the session is one too many. */
    cr_expect_eq(h_item_res(a, s2, 4, 4, h_opts(0, 1)).status_code,
                 UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    cr_expect_eq(h_item_res(a, s1, 4, 4, h_opts(0, 1)).status_code,
                 UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    /* Another session has its own 3, but the server only 2 more. */
    uint32_t s3 = h_sub(b, 100, 1);
    h_item(b, s3, 1, 1, h_opts(0, 1));
    h_item(b, s3, 2, 2, h_opts(0, 1));
    cr_expect_eq(h_item_res(b, s3, 3, 3, h_opts(0, 1)).status_code,
                 UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    cr_expect_eq(atomic_load(&shared.items), 5);
    uas_sub_session_delete(b, true, H.now);
    cr_expect_eq(atomic_load(&shared.items), 3);
}

static void slots(uas_sub_limits *l)
{
    l->max_queued_per_subscription = 10;
    l->max_queued_notifications = 14;
}

Test(sub_limits, queue_sizes_are_revised_to_the_slots_left)
{
    restart(slots);
    uas_sub_session *a = h_session();
    uint32_t s1 = h_sub(a, 100, 1), s2 = h_sub(a, 100, 1);
    cr_expect_eq(h_item_res(a, s1, 1, 1, h_opts(0, 8)).revised_queue_size, 8);
    /* 2 left in the subscription. */
    cr_expect_eq(h_item_res(a, s1, 2, 2, h_opts(0, 8)).revised_queue_size, 2);
    cr_expect_eq(h_item_res(a, s1, 3, 3, h_opts(0, 1)).status_code,
                 UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    /* 4 left in the server. */
    cr_expect_eq(h_item_res(a, s2, 4, 4, h_opts(0, 8)).revised_queue_size, 4);
    cr_expect_eq(atomic_load(&shared.slots), 14);
    /* Modifying to a smaller queue gives slots back. */
    uas_monitored_item_modify_request m;
    memset(&m, 0, sizeof(m));
    m.monitored_item_id = 1;
    m.requested_parameters.queue_size = 3;
    uas_modify_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = s1;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_modify_count = 1;
    req.items_to_modify = &m;
    uas_modify_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_monitored_items(a, &req, &resp, &H.a, H.now), UAS_GOOD);
    cr_expect_eq(resp.results[0].revised_queue_size, 3);
    cr_expect_eq(atomic_load(&shared.slots), 9);
    uas_sub_session_delete(a, true, H.now);
    cr_expect_eq(atomic_load(&shared.slots), 0);
}

static void one_hour(uas_sub_limits *l)
{
    l->max_subscription_lifetime_ms = 60000;
}

Test(sub_limits, lifetime_times_interval_is_capped)
{
    restart(one_hour);
    uas_create_subscription_response r = h_sub_full(h_session(), 1000, 30000, 10000, 0, 0);
    cr_expect_eq(r.revised_lifetime_count, 60);
    cr_expect_eq(r.revised_max_keep_alive_count, 20);
    r = h_sub_full(h_session(), 3600000, 30000, 10000, 0, 0);
    cr_expect_eq(r.revised_lifetime_count, 3, "at least 3 keep-alives");
    cr_expect_eq(r.revised_max_keep_alive_count, 1);
}

static void orphan_life(uas_sub_limits *l)
{
    l->max_orphan_lifetime_ms = 5000;
}

Test(sub_limits, orphans_live_no_longer_than_their_cap)
{
    restart(orphan_life);
    uas_sub_session *a = h_session();
    uint32_t id = h_sub_full(a, 1000, 30000, 10000, 0, 0).subscription_id;
    uas_sub_session_delete(a, false, H.now);
    int64_t oldest;
    cr_expect_eq(uas_sub_engine_orphans(H.e, NULL, &oldest), 1);
    cr_expect_eq(atomic_load(&shared.orphans), 1);
    h_run(H.now + 4000);
    cr_expect(uas_sub_engine_has_subscription(H.e, id));
    h_run(H.now + 1500);
    cr_expect_not(uas_sub_engine_has_subscription(H.e, id), "orphan still there after 5.5 s");
    cr_expect_eq(atomic_load(&shared.orphans), 0);
    cr_expect_eq(atomic_load(&shared.orphans_dropped), 1);
    cr_expect_eq(atomic_load(&shared.subs), 0);
}

static void none(uas_sub_limits *l)
{
    (void)l;
}

Test(sub_limits, oldest_orphan_of_an_owner_goes_first)
{
    restart(none);
    uas_sub_owner u1, u2;
    memset(&u1, 1, sizeof(u1));
    memset(&u2, 2, sizeof(u2));
    uint32_t ids[3];
    uas_sub_session *s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = h_session();
        uas_sub_session_set_owner(s[i], i == 1 ? &u2 : &u1);
        ids[i] = h_sub(s[i], 100, 1);
    }
    for (int i = 0; i < 3; i++) {
        H.now += 10;
        uas_sub_session_delete(s[i], false, H.now);
    }
    int64_t oldest;
    cr_expect_eq(uas_sub_engine_orphans(H.e, &u1, &oldest), 2);
    cr_expect_eq(uas_sub_engine_orphans(H.e, &u2, &oldest), 1);
    cr_expect_eq(uas_sub_engine_orphans(H.e, NULL, &oldest), 3);
    uint32_t id = 0;
    cr_assert(uas_sub_engine_drop_oldest_orphan(H.e, &u1, &id));
    cr_expect_eq(id, ids[0]);
    cr_assert(uas_sub_engine_drop_oldest_orphan(H.e, NULL, &id));
    cr_expect_eq(id, ids[1], "u2's is now the oldest of all");
    cr_expect_eq(uas_sub_engine_orphans(H.e, NULL, &oldest), 1);
    cr_expect_eq(atomic_load(&shared.orphans_dropped), 2);
    cr_expect_not(uas_sub_engine_drop_oldest_orphan(H.e, &u2, &id));
}

static void one_per_session(uas_sub_limits *l)
{
    l->max_subscriptions_per_session = 1;
}

Test(sub_limits, transfer_respects_the_taking_sessions_cap)
{
    restart(one_per_session);
    uas_sub_session *a = h_session(), *b = h_session();
    uint32_t orphan = h_sub(a, 100, 1);
    uas_sub_session_delete(a, false, H.now);
    h_sub(b, 100, 1);
    uas_transfer_result r;
    uas_sub_transfer_from(H.e, orphan, b, false, &r, &H.a, H.now);
    cr_expect_eq(r.status_code, UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    int64_t oldest;
    cr_expect_eq(uas_sub_engine_orphans(H.e, NULL, &oldest), 1, "the orphan stays an orphan");
    uas_sub_session *c = h_session();
    uas_sub_transfer_from(H.e, orphan, c, false, &r, &H.a, H.now);
    cr_expect_eq(r.status_code, UAS_GOOD);
    cr_expect_eq(uas_sub_engine_orphans(H.e, NULL, &oldest), 0);
    cr_expect_eq(atomic_load(&shared.orphans), 0);
    cr_expect_eq(atomic_load(&shared.subs), 2);
}
