/* The Subscription (Part 4, 5.13) and MonitoredItem (5.12) services other
 * than Publish/Republish (sub_publish.c): request-level checks, one result
 * per operation from the arena, revision of the requested parameters.
 * Every service that names a subscription resets its lifetime counter:
 * Part 4 5.13.1.2 counts cycles "without having received a Subscription
 * Service request from the Client" (the CTT checks the MonitoredItem
 * services too). */
#include <math.h>
#include <string.h>

#include "sub_internal.h"

#define ATTR_MAX 27 /* AccessLevelEx, the highest attribute id of 1.05 */

static uas_status done(uas_response_header *h, uas_status st)
{
    h->service_result = st;
    return st;
}

/* BadNothingToDo / BadTooManyOperations for a list of n operations. */
static uas_status check_count(const uas_sub_engine *e, size_t n)
{
    if (n == 0)
        return UAS_BAD_NOTHING_TO_DO;
    if (e->cfg.limits.max_operations && n > e->cfg.limits.max_operations)
        return UAS_BAD_TOO_MANY_OPERATIONS;
    return UAS_GOOD;
}

static uas_status *alloc_results(uas_arena *a, size_t n)
{
    return uas_arena_calloc(a, n, sizeof(uas_status));
}

/* ---- subscriptions ---- */

typedef struct sub_params {
    double interval;
    uint32_t lifetime, keep_alive;
} sub_params;

/* Part 4, 5.13.2.2: an interval of 0 or less means the fastest; the
 * lifetime is at least three keep-alive periods; revising never fails. */
static sub_params revise_sub(const uas_sub_limits *l, double interval, uint32_t lifetime,
                             uint32_t keep_alive)
{
    sub_params r;
    if (isnan(interval) || interval < l->min_publishing_interval)
        interval = l->min_publishing_interval;
    if (interval > l->max_publishing_interval)
        interval = l->max_publishing_interval;
    r.interval = ceil(interval);
    if (r.interval < 1)
        r.interval = 1;
    uint32_t max_ka = l->max_keep_alive_count ? l->max_keep_alive_count : 1;
    uint32_t max_lt = l->max_lifetime_count >= 3 ? l->max_lifetime_count : 3;
    r.keep_alive = keep_alive == 0 ? 1 : keep_alive > max_ka ? max_ka : keep_alive;
    /* max_subscription_lifetime_ms bounds how long a subscription nobody
     * publishes for is kept (lifetime count x interval): without it the
     * largest counts and interval allow years. */
    if (l->max_subscription_lifetime_ms) {
        uint64_t fit = l->max_subscription_lifetime_ms / (uint64_t)r.interval;
        if (fit < max_lt)
            max_lt = fit < 3 ? 3 : (uint32_t)fit;
    }
    uint64_t lt = lifetime < 3ull * r.keep_alive ? 3ull * r.keep_alive : lifetime;
    r.lifetime = lt > max_lt ? max_lt : (uint32_t)lt;
    if (r.lifetime < 3ull * r.keep_alive)
        r.keep_alive = r.lifetime / 3; /* the lifetime limit wins */
    return r;
}

static uint32_t cap_notifs(const uas_sub_limits *l, uint32_t n)
{
    if (l->max_notifications_per_publish && (n == 0 || n > l->max_notifications_per_publish))
        return l->max_notifications_per_publish;
    return n;
}

static uint32_t new_sub_id(uas_sub_engine *e)
{
    for (;;) {
        uint32_t id = e->next_sub_id;
        e->next_sub_id += e->cfg.sub_id_step;
        if (id != 0 && !sub_map_get(&e->subs_by_id, id))
            return id;
    }
}

uas_status uas_sub_create_subscription(uas_sub_session *ss,
                                       const uas_create_subscription_request *req,
                                       uas_create_subscription_response *resp, uas_arena *a,
                                       int64_t now)
{
    (void)a;
    uas_sub_engine *e = ss->e;
    const uas_sub_limits *l = &e->cfg.limits;
    if (ss->sub_count >= l->max_subscriptions_per_session) {
        sub_limit_hit(e, "subscriptions per session", l->max_subscriptions_per_session);
        return done(&resp->response_header, UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    }
    if (!sub_reserve(&e->shared->subs, 1, l->max_subscriptions)) {
        sub_limit_hit(e, "subscriptions of the server", l->max_subscriptions);
        return done(&resp->response_header, UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    }
    sub_sub *s = uas_calloc(1, sizeof(*s));
    sub_msg **rq = l->max_retransmission ? uas_calloc(l->max_retransmission, sizeof(*rq)) : NULL;
    if (!s || (l->max_retransmission && !rq)) {
        uas_free(s, sizeof(*s));
        uas_free(rq, l->max_retransmission * sizeof(*rq));
        sub_release(&e->shared->subs, 1);
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    }
    s->e = e;
    s->owner = ss->owner;
    s->rq = rq;
    s->id = new_sub_id(e);
    if (sub_map_put(&e->subs_by_id, s->id, s) != UAS_GOOD) {
        uas_free(s, sizeof(*s));
        uas_free(rq, l->max_retransmission * sizeof(*rq));
        sub_release(&e->shared->subs, 1);
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    }
    sub_params p = revise_sub(l, req->requested_publishing_interval, req->requested_lifetime_count,
                              req->requested_max_keep_alive_count);
    s->interval = p.interval;
    s->interval_ms = (int64_t)p.interval;
    s->lifetime_count = p.lifetime;
    s->max_keep_alive = p.keep_alive;
    s->max_notifs = cap_notifs(l, req->max_notifications_per_publish);
    s->priority = req->priority;
    s->enabled = req->publishing_enabled;
    s->next_seq = 1;
    s->next_item_id = 1;
    sub_list_init(&s->items);
    sub_list_init(&s->ready);
    sub_timer_init(&s->pub_timer, sub_pub_timer_fn);
    sub_attach(s, ss);
    e->nsubs++;
    e->subs_created++;
    sub_changed(e, 0, s->interval_ms);
    sub_wheel_arm(&e->wheel, &s->pub_timer, now + s->interval_ms);
    resp->subscription_id = s->id;
    resp->revised_publishing_interval = s->interval;
    resp->revised_lifetime_count = s->lifetime_count;
    resp->revised_max_keep_alive_count = s->max_keep_alive;
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_modify_subscription(uas_sub_session *ss,
                                       const uas_modify_subscription_request *req,
                                       uas_modify_subscription_response *resp, uas_arena *a,
                                       int64_t now)
{
    (void)a;
    sub_sub *s = sub_find(ss, req->subscription_id);
    if (!s)
        return done(&resp->response_header, UAS_BAD_SUBSCRIPTION_ID_INVALID);
    const uas_sub_limits *l = &ss->e->cfg.limits;
    sub_params p = revise_sub(l, req->requested_publishing_interval, req->requested_lifetime_count,
                              req->requested_max_keep_alive_count);
    if ((int64_t)p.interval != s->interval_ms) {
        sub_changed(ss->e, s->interval_ms, (int64_t)p.interval);
        s->interval_ms = (int64_t)p.interval;
        sub_wheel_arm(&ss->e->wheel, &s->pub_timer, now + s->interval_ms);
    }
    s->interval = p.interval;
    s->lifetime_count = p.lifetime;
    s->max_keep_alive = p.keep_alive;
    s->max_notifs = cap_notifs(l, req->max_notifications_per_publish);
    s->priority = req->priority;
    s->lifetime_ctr = 0;
    resp->revised_publishing_interval = s->interval;
    resp->revised_lifetime_count = s->lifetime_count;
    resp->revised_max_keep_alive_count = s->max_keep_alive;
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_set_publishing_mode(uas_sub_session *ss,
                                       const uas_set_publishing_mode_request *req,
                                       uas_set_publishing_mode_response *resp, uas_arena *a,
                                       int64_t now)
{
    (void)now;
    size_t n = req->subscription_ids_count;
    uas_status st = check_count(ss->e, n);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    if (!(resp->results = alloc_results(a, n)))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++) {
        sub_sub *s = sub_find(ss, req->subscription_ids[i]);
        if (!s) {
            resp->results[i] = UAS_BAD_SUBSCRIPTION_ID_INVALID;
            continue;
        }
        s->enabled = req->publishing_enabled;
        s->lifetime_ctr = 0;
    }
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_delete_subscriptions(uas_sub_session *ss,
                                        const uas_delete_subscriptions_request *req,
                                        uas_delete_subscriptions_response *resp, uas_arena *a,
                                        int64_t now)
{
    size_t n = req->subscription_ids_count;
    uas_status st = check_count(ss->e, n);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    if (!(resp->results = alloc_results(a, n)))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++) {
        sub_sub *s = sub_find(ss, req->subscription_ids[i]);
        if (s)
            sub_delete(s);
        else
            resp->results[i] = UAS_BAD_SUBSCRIPTION_ID_INVALID;
    }
    sub_session_dispatch(ss, now); /* the last one gone: BadNoSubscription */
    return done(&resp->response_header, UAS_GOOD);
}

/* Part 4, 5.13.7, for the subscriptions of this engine (sub_transfer.c);
 * the server looks for the others in the other engines. */
uas_status uas_sub_transfer_subscriptions(uas_sub_session *ss,
                                          const uas_transfer_subscriptions_request *req,
                                          uas_transfer_subscriptions_response *resp, uas_arena *a,
                                          int64_t now)
{
    size_t n = req->subscription_ids_count;
    uas_status st = check_count(ss->e, n);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    if (!(resp->results = uas_arena_calloc(a, n, sizeof(uas_transfer_result))))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++)
        uas_sub_transfer_from(ss->e, req->subscription_ids[i], ss, req->send_initial_values,
                              &resp->results[i], a, now);
    return done(&resp->response_header, UAS_GOOD);
}

/* ---- monitored items ---- */

/* A subscription for a MonitoredItem service with n operations. */
static uas_status item_service(uas_sub_session *ss, uint32_t sub_id, size_t n, int32_t ttr,
                               sub_sub **out)
{
    sub_sub *s = sub_find(ss, sub_id);
    if (!s)
        return UAS_BAD_SUBSCRIPTION_ID_INVALID;
    if (ttr < UAS_TIMESTAMPS_TO_RETURN_SOURCE || ttr > UAS_TIMESTAMPS_TO_RETURN_NEITHER)
        return UAS_BAD_TIMESTAMPS_TO_RETURN_INVALID;
    uas_status st = check_count(ss->e, n);
    if (st != UAS_GOOD)
        return st;
    s->lifetime_ctr = 0;
    *out = s;
    return UAS_GOOD;
}

static uint32_t new_item_id(sub_sub *s)
{
    for (;;) {
        uint32_t id = s->next_item_id++;
        if (id != 0 && !sub_map_get(&s->item_map, id))
            return id;
    }
}

static uas_status create_item(sub_sub *s, const uas_monitored_item_create_request *r, int32_t ttr,
                              uas_monitored_item_create_result *res, uas_arena *a, int64_t now)
{
    uas_sub_engine *e = s->e;
    const uas_sub_limits *l = &e->cfg.limits;
    const uas_read_value_id *rv = &r->item_to_monitor;
    if (s->item_count >= l->max_items_per_subscription) {
        sub_limit_hit(e, "monitored items per subscription", l->max_items_per_subscription);
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    }
    if (l->max_items_per_session && sub_session_items(s->session) >= l->max_items_per_session) {
        sub_limit_hit(e, "monitored items per session", l->max_items_per_session);
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    }
    if (rv->attribute_id < 1 || rv->attribute_id > ATTR_MAX)
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    if (r->monitoring_mode < UAS_MONITORING_MODE_DISABLED ||
        r->monitoring_mode > UAS_MONITORING_MODE_REPORTING)
        return UAS_BAD_MONITORING_MODE_INVALID;
    uas_sub_node_info info = {.pushed = true, .numeric = true};
    if (e->cfg.cb.check_node) {
        uas_status st = e->cfg.cb.check_node(e->cfg.ud, rv, &info);
        if (uas_is_bad(st))
            return st;
    }
    if (!sub_reserve(&e->shared->items, 1, l->max_monitored_items)) {
        sub_limit_hit(e, "monitored items of the server", l->max_monitored_items);
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    }
    sub_item *it = uas_calloc(1, sizeof(*it));
    if (!it) {
        sub_release(&e->shared->items, 1);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    it->sub = s;
    it->id = new_item_id(s);
    it->attr = rv->attribute_id;
    it->kind = it->attr == UAS_SUB_ATTR_EVENT_NOTIFIER ? SUB_ITEM_EVENT : SUB_ITEM_DATA;
    it->pushed = info.pushed && it->attr == UAS_SUB_ATTR_VALUE;
    it->numeric = info.numeric;
    it->ttr = ttr;
    it->mode = UAS_MONITORING_MODE_DISABLED; /* set once configured */
    sub_timer_init(&it->sample_timer, sub_item_timer_fn);
    sub_list_push_back(&s->items, &it->sub_link);
    s->item_count++;
    e->nitems++;
    uas_status st = sub_map_put(&s->item_map, it->id, it);
    if (st == UAS_GOOD)
        st = uas_copy(&rv->node_id, &it->node, &uas_types[UAS_TYPES_NODE_ID]);
    if (st == UAS_GOOD)
        st = uas_copy(&rv->index_range, &it->index_range, &uas_types[UAS_TYPES_STRING]);
    if (st == UAS_GOOD)
        st = sub_item_configure(it, &r->requested_parameters, true, now,
                                &res->revised_sampling_interval, &res->revised_queue_size,
                                &res->filter_result, a);
    if (st == UAS_GOOD && (it->pushed || it->kind == SUB_ITEM_EVENT))
        st = sub_watch_attach(e, it);
    if (uas_is_bad(st)) {
        sub_item_delete(it);
        return st;
    }
    it->mode = (uint8_t)r->monitoring_mode;
    sub_item_start(it, now);
    res->monitored_item_id = it->id;
    return UAS_GOOD;
}

uas_status uas_sub_create_monitored_items(uas_sub_session *ss,
                                          const uas_create_monitored_items_request *req,
                                          uas_create_monitored_items_response *resp, uas_arena *a,
                                          int64_t now)
{
    sub_sub *s;
    size_t n = req->items_to_create_count;
    uas_status st = item_service(ss, req->subscription_id, n, req->timestamps_to_return, &s);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    resp->results = uas_arena_calloc(a, n, sizeof(uas_monitored_item_create_result));
    if (!resp->results)
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++)
        resp->results[i].status_code = create_item(
            s, &req->items_to_create[i], req->timestamps_to_return, &resp->results[i], a, now);
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_modify_monitored_items(uas_sub_session *ss,
                                          const uas_modify_monitored_items_request *req,
                                          uas_modify_monitored_items_response *resp, uas_arena *a,
                                          int64_t now)
{
    sub_sub *s;
    size_t n = req->items_to_modify_count;
    uas_status st = item_service(ss, req->subscription_id, n, req->timestamps_to_return, &s);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    resp->results = uas_arena_calloc(a, n, sizeof(uas_monitored_item_modify_result));
    if (!resp->results)
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++) {
        const uas_monitored_item_modify_request *r = &req->items_to_modify[i];
        uas_monitored_item_modify_result *res = &resp->results[i];
        sub_item *it = sub_map_get(&s->item_map, r->monitored_item_id);
        if (!it) {
            res->status_code = UAS_BAD_MONITORED_ITEM_ID_INVALID;
            continue;
        }
        res->status_code = sub_item_configure(it, &r->requested_parameters, false, now,
                                              &res->revised_sampling_interval,
                                              &res->revised_queue_size, &res->filter_result, a);
        if (res->status_code == UAS_GOOD)
            it->ttr = req->timestamps_to_return;
    }
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_delete_monitored_items(uas_sub_session *ss,
                                          const uas_delete_monitored_items_request *req,
                                          uas_delete_monitored_items_response *resp, uas_arena *a,
                                          int64_t now)
{
    (void)now;
    sub_sub *s;
    size_t n = req->monitored_item_ids_count;
    uas_status st = item_service(ss, req->subscription_id, n, UAS_TIMESTAMPS_TO_RETURN_BOTH, &s);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    if (!(resp->results = alloc_results(a, n)))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++) {
        sub_item *it = sub_map_get(&s->item_map, req->monitored_item_ids[i]);
        if (it)
            sub_item_delete(it);
        else
            resp->results[i] = UAS_BAD_MONITORED_ITEM_ID_INVALID;
    }
    return done(&resp->response_header, UAS_GOOD);
}

uas_status uas_sub_set_monitoring_mode(uas_sub_session *ss,
                                       const uas_set_monitoring_mode_request *req,
                                       uas_set_monitoring_mode_response *resp, uas_arena *a,
                                       int64_t now)
{
    sub_sub *s;
    size_t n = req->monitored_item_ids_count;
    uas_status st = item_service(ss, req->subscription_id, n, UAS_TIMESTAMPS_TO_RETURN_BOTH, &s);
    if (st == UAS_GOOD && (req->monitoring_mode < UAS_MONITORING_MODE_DISABLED ||
                           req->monitoring_mode > UAS_MONITORING_MODE_REPORTING))
        st = UAS_BAD_MONITORING_MODE_INVALID;
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    if (!(resp->results = alloc_results(a, n)))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->results_count = n;
    for (size_t i = 0; i < n; i++) {
        sub_item *it = sub_map_get(&s->item_map, req->monitored_item_ids[i]);
        if (it)
            sub_item_set_mode(it, req->monitoring_mode, now);
        else
            resp->results[i] = UAS_BAD_MONITORED_ITEM_ID_INVALID;
    }
    return done(&resp->response_header, UAS_GOOD);
}

static bool unlink_trigger(sub_item *it, uint32_t id)
{
    for (uint32_t k = 0; k < it->nlinks; k++) {
        if (it->links[k] == id) {
            it->links[k] = it->links[--it->nlinks];
            return true;
        }
    }
    return false;
}

static uas_status link_trigger(sub_item *it, uint32_t id)
{
    const uas_sub_limits *l = &it->sub->e->cfg.limits;
    if (!sub_map_get(&it->sub->item_map, id))
        return UAS_BAD_MONITORED_ITEM_ID_INVALID;
    for (uint32_t k = 0; k < it->nlinks; k++)
        if (it->links[k] == id)
            return UAS_GOOD; /* already linked */
    if (it->nlinks >= l->max_triggering_links)
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    if (it->nlinks == it->links_cap) {
        uint32_t ncap = it->links_cap ? it->links_cap * 2 : 4;
        uint32_t *nl =
            uas_realloc(it->links, it->links_cap * sizeof(uint32_t), ncap * sizeof(uint32_t));
        if (!nl)
            return UAS_BAD_OUT_OF_MEMORY;
        it->links = nl;
        it->links_cap = ncap;
    }
    it->links[it->nlinks++] = id;
    return UAS_GOOD;
}

uas_status uas_sub_set_triggering(uas_sub_session *ss, const uas_set_triggering_request *req,
                                  uas_set_triggering_response *resp, uas_arena *a, int64_t now)
{
    (void)now;
    size_t nadd = req->links_to_add_count, nrem = req->links_to_remove_count;
    sub_sub *s = sub_find(ss, req->subscription_id);
    if (!s)
        return done(&resp->response_header, UAS_BAD_SUBSCRIPTION_ID_INVALID);
    uas_status st = check_count(ss->e, nadd + nrem);
    if (st != UAS_GOOD)
        return done(&resp->response_header, st);
    s->lifetime_ctr = 0;
    sub_item *it = sub_map_get(&s->item_map, req->triggering_item_id);
    if (!it)
        return done(&resp->response_header, UAS_BAD_MONITORED_ITEM_ID_INVALID);
    resp->add_results = nadd ? alloc_results(a, nadd) : NULL;
    resp->remove_results = nrem ? alloc_results(a, nrem) : NULL;
    if ((nadd && !resp->add_results) || (nrem && !resp->remove_results))
        return done(&resp->response_header, UAS_BAD_OUT_OF_MEMORY);
    resp->add_results_count = nadd;
    resp->remove_results_count = nrem;
    /* Part 4, 5.12.5.2: removals are applied before additions. */
    for (size_t i = 0; i < nrem; i++)
        resp->remove_results[i] = unlink_trigger(it, req->links_to_remove[i])
                                      ? UAS_GOOD
                                      : UAS_BAD_MONITORED_ITEM_ID_INVALID;
    for (size_t i = 0; i < nadd; i++)
        resp->add_results[i] = link_trigger(it, req->links_to_add[i]);
    return done(&resp->response_header, UAS_GOOD);
}
