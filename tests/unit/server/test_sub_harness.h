/* Shared harness of the test_sub_*.c files (header-only: a helper_*.c
 * would be linked into every server test). A fake address space of
 * numeric nodes ns=1;i=<n> holding Doubles, an injected clock that the
 * test moves with h_run() exactly like a libev timer would (tick at each
 * deadline the engine asks for), and a recorder of every PublishResponse
 * handed to send_publish. */
#ifndef TEST_SUB_HARNESS_H
#define TEST_SUB_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <ua/membudget.h>

#include "sub_engine.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#define H_NODES 32
#define H_RECS  1024
#define H_UTC0  133000000000000000LL /* some day in 2022, in 100 ns ticks */
/* Good with the DataValue info type and the Overflow bit. */
#define SUB_OVERFLOW_BITS 0x00000480u

typedef struct h_node {
    bool exists;
    bool pushed;  /* writes are reported through value_changed */
    bool numeric; /* deadband allowed */
    bool has_range;
    bool notifier; /* EventNotifier allowed */
    double value;
    uas_status status;
    uas_range range;
    uint32_t reads;
    uas_sub_watch *watch;
    unsigned mask;
} h_node;

/* What every response looked like, recorded without allocating. */
typedef struct h_light {
    uintptr_t target;
    uint32_t request_id;
    uint32_t request_handle;
    uas_status result;
    uint32_t sub_id;
    uint32_t seq;
    uint32_t ndata; /* NotificationData entries */
    uint32_t nitems;
    bool more;
    int64_t at;
} h_light;

typedef struct harness {
    uas_sub_engine *e;
    int64_t now;
    h_node nodes[H_NODES];
    h_light light[H_RECS];
    uas_publish_response full[H_RECS]; /* deep copies when capture */
    size_t n;
    bool capture;
    uint8_t mem[1 << 16];
    uas_arena a;
    uint64_t live0; /* heap bytes held by the stack's allocator at setup */
    size_t budget0; /* bytes of the process memory budget in use at setup */
} harness;

static harness H;

static inline h_node *h_node_of(const uas_nodeid *id)
{
    if (id->ns != 1 || id->kind != UAS_NODEID_NUMERIC || id->id.numeric >= H_NODES)
        return NULL;
    h_node *n = &H.nodes[id->id.numeric];
    return n->exists ? n : NULL;
}

static inline void h_cb_send(void *ud, uas_sub_publish_target *t, uint32_t rid,
                             const uas_publish_response *r)
{
    (void)ud;
    cr_assert(H.n < H_RECS, "too many responses");
    h_light *l = &H.light[H.n];
    memset(l, 0, sizeof(*l));
    l->target = (uintptr_t)t;
    l->request_id = rid;
    l->request_handle = r->response_header.request_handle;
    l->result = r->response_header.service_result;
    l->sub_id = r->subscription_id;
    l->seq = r->notification_message.sequence_number;
    l->ndata = (uint32_t)r->notification_message.notification_data_count;
    l->more = r->more_notifications;
    l->at = H.now;
    for (size_t i = 0; i < r->notification_message.notification_data_count; i++) {
        const uas_extensionobject *x = &r->notification_message.notification_data[i];
        if (x->content.decoded.type == UAS_TYPE(DATA_CHANGE_NOTIFICATION))
            l->nitems += (uint32_t)((uas_data_change_notification *)x->content.decoded.data)
                             ->monitored_items_count;
        if (x->content.decoded.type == UAS_TYPE(EVENT_NOTIFICATION_LIST))
            l->nitems +=
                (uint32_t)((uas_event_notification_list *)x->content.decoded.data)->events_count;
    }
    if (H.capture)
        cr_assert_eq(uas_copy(r, &H.full[H.n], UAS_TYPE(PUBLISH_RESPONSE)), UAS_GOOD);
    H.n++;
}

static inline void h_cb_read(void *ud, const uas_nodeid *node, uint32_t attr,
                             const uas_string *range, uas_datavalue *out, uas_arena *a)
{
    (void)ud;
    (void)range;
    memset(out, 0, sizeof(*out));
    h_node *n = h_node_of(node);
    if (!n || attr != UAS_SUB_ATTR_VALUE) {
        out->has_status = true;
        out->status = n ? UAS_BAD_ATTRIBUTE_ID_INVALID : UAS_BAD_NODE_ID_UNKNOWN;
        return;
    }
    n->reads++;
    double *d = uas_arena_alloc(a, sizeof(double));
    cr_assert_not_null(d);
    *d = n->value;
    uas_variant_set_scalar(&out->value, d, &uas_types[UAS_TYPES_DOUBLE]);
    out->has_value = true;
    out->status = n->status;
    out->has_status = n->status != UAS_GOOD;
    out->source_timestamp = H_UTC0 + H.now * 10000;
    out->has_source_timestamp = true;
}

static inline uas_status h_cb_check(void *ud, const uas_read_value_id *rv, uas_sub_node_info *info)
{
    (void)ud;
    h_node *n = h_node_of(&rv->node_id);
    if (!n)
        return UAS_BAD_NODE_ID_UNKNOWN;
    if (rv->attribute_id == UAS_SUB_ATTR_EVENT_NOTIFIER && !n->notifier)
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    if (rv->attribute_id != UAS_SUB_ATTR_VALUE && rv->attribute_id != UAS_SUB_ATTR_EVENT_NOTIFIER &&
        rv->attribute_id != 4 /* DisplayName */)
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    info->pushed = n->pushed;
    info->numeric = n->numeric;
    return UAS_GOOD;
}

static inline uas_status h_cb_eu(void *ud, const uas_nodeid *node, uas_range *out)
{
    (void)ud;
    h_node *n = h_node_of(node);
    if (!n || !n->has_range)
        return UAS_BAD_DEADBAND_FILTER_INVALID; /* Part 8: no EURange */
    *out = n->range;
    return UAS_GOOD;
}

static inline void h_cb_watch(void *ud, const uas_nodeid *node, uas_sub_watch *w, unsigned mask)
{
    (void)ud;
    h_node *n = h_node_of(node);
    cr_assert_not_null(n);
    n->watch = mask ? w : NULL;
    n->mask = mask;
}

static inline uas_datetime h_cb_utc(void *ud, int64_t now)
{
    (void)ud;
    return H_UTC0 + now * 10000;
}

static inline void h_default_cb(uas_sub_config *c)
{
    uas_sub_config_default(c);
    c->cb.send_publish = h_cb_send;
    c->cb.read_value = h_cb_read;
    c->cb.check_node = h_cb_check;
    c->cb.get_eu_range = h_cb_eu;
    c->cb.watch = h_cb_watch;
    c->cb.utc_now = h_cb_utc;
}

static inline void h_start(const uas_sub_config *c)
{
    H.e = uas_sub_engine_new(c, H.now);
    cr_assert_not_null(H.e);
}

static inline void h_setup(void)
{
    memset(&H, 0, sizeof(H));
    uas_mem_stats ms;
    uas_mem_get_stats(&ms);
    H.live0 = ms.bytes_live;
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    H.budget0 = bs.used;
    H.capture = true;
    uas_arena_init(&H.a, H.mem, sizeof(H.mem), 0);
    for (uint32_t i = 1; i < 8; i++) {
        H.nodes[i].exists = true;
        H.nodes[i].pushed = true;
        H.nodes[i].numeric = true;
    }
    H.nodes[8].exists = true; /* a data source: sampled */
    H.nodes[8].numeric = true;
    H.nodes[9].exists = true; /* an event notifier */
    H.nodes[9].notifier = true;
    uas_sub_config c;
    h_default_cb(&c);
    h_start(&c);
}

static inline void h_teardown(void)
{
    uas_sub_engine_delete(H.e);
    for (size_t i = 0; i < H.n; i++)
        if (H.capture)
            uas_clear(&H.full[i], UAS_TYPE(PUBLISH_RESPONSE));
    uas_arena_free(&H.a);
    /* Criterion's workers skip LSan's exit-time check: check here, and
     * through the allocator's own counter. */
    uas_mem_stats ms;
    uas_mem_get_stats(&ms);
    cr_expect_eq(ms.bytes_live, H.live0, "%lld bytes not returned",
                 (long long)(ms.bytes_live - H.live0));
    /* Every queue charged the memory budget and gave it all back. */
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    cr_expect_eq(bs.used, H.budget0, "%lld bytes of the memory budget not released",
                 (long long)bs.used - (long long)H.budget0);
#if defined(__SANITIZE_ADDRESS__)
    cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "leaks: see the report above");
#endif
}

/* Move the clock to t, ticking at every deadline on the way. */
static inline void h_run(int64_t t)
{
    for (;;) {
        int64_t d = uas_sub_engine_next_deadline(H.e);
        if (d > t)
            break;
        if (d > H.now)
            H.now = d;
        uas_sub_engine_tick(H.e, H.now);
    }
    H.now = t;
    uas_sub_engine_tick(H.e, H.now);
}

static inline uas_sub_session *h_session(void)
{
    uas_sub_session *s = uas_sub_session_new(H.e, NULL);
    cr_assert_not_null(s);
    return s;
}

static inline uas_create_subscription_response h_sub_full(uas_sub_session *s, double interval,
                                                          uint32_t lifetime, uint32_t ka,
                                                          uint32_t maxn, uint8_t prio)
{
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.requested_publishing_interval = interval;
    req.requested_lifetime_count = lifetime;
    req.requested_max_keep_alive_count = ka;
    req.max_notifications_per_publish = maxn;
    req.publishing_enabled = true;
    req.priority = prio;
    uas_create_subscription_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_status st = uas_sub_create_subscription(s, &req, &resp, &H.a, H.now);
    cr_assert_eq(st, UAS_GOOD, "CreateSubscription: %s", uas_status_name(st));
    return resp;
}

static inline uint32_t h_sub(uas_sub_session *s, double interval, uint32_t ka)
{
    return h_sub_full(s, interval, 3 * ka, ka, 0, 0).subscription_id;
}

typedef struct h_item_opts {
    double sampling;
    uint32_t queue;
    bool discard_oldest;
    uas_monitoring_mode mode;
    uint32_t attr;
    uas_extensionobject filter;
    uas_timestamps_to_return ttr;
} h_item_opts;

static inline h_item_opts h_opts(double sampling, uint32_t queue)
{
    h_item_opts o;
    memset(&o, 0, sizeof(o));
    o.sampling = sampling;
    o.queue = queue;
    o.discard_oldest = true;
    o.mode = UAS_MONITORING_MODE_REPORTING;
    o.attr = UAS_SUB_ATTR_VALUE;
    o.ttr = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    return o;
}

/* CreateMonitoredItems for one item; the whole result. */
static inline uas_monitored_item_create_result
h_item_res(uas_sub_session *s, uint32_t sub, uint32_t node, uint32_t handle, h_item_opts o)
{
    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    it.item_to_monitor.node_id = uas_nodeid_numeric(1, node);
    it.item_to_monitor.attribute_id = o.attr;
    it.monitoring_mode = o.mode;
    it.requested_parameters.client_handle = handle;
    it.requested_parameters.sampling_interval = o.sampling;
    it.requested_parameters.queue_size = o.queue;
    it.requested_parameters.discard_oldest = o.discard_oldest;
    it.requested_parameters.filter = o.filter;
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.timestamps_to_return = o.ttr;
    req.items_to_create_count = 1;
    req.items_to_create = &it;
    uas_create_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    uas_status st = uas_sub_create_monitored_items(s, &req, &resp, &H.a, H.now);
    cr_assert_eq(st, UAS_GOOD, "CreateMonitoredItems: %s", uas_status_name(st));
    cr_assert_eq(resp.results_count, 1);
    return resp.results[0];
}

static inline uint32_t h_item(uas_sub_session *s, uint32_t sub, uint32_t node, uint32_t handle,
                              h_item_opts o)
{
    uas_monitored_item_create_result r = h_item_res(s, sub, node, handle, o);
    cr_assert_eq(r.status_code, UAS_GOOD, "item: %s", uas_status_name(r.status_code));
    return r.monitored_item_id;
}

/* A Publish request with request id = request handle = rid. */
static inline void h_publish_acks(uas_sub_session *s, uintptr_t target, uint32_t rid,
                                  uint32_t timeout_hint, size_t nack,
                                  const uas_subscription_acknowledgement *acks)
{
    uas_publish_request req;
    memset(&req, 0, sizeof(req));
    req.request_header.request_handle = rid;
    req.request_header.timeout_hint = timeout_hint;
    req.subscription_acknowledgements_count = nack;
    req.subscription_acknowledgements = (uas_subscription_acknowledgement *)acks;
    uas_sub_publish(s, (uas_sub_publish_target *)target, rid, &req, H.now);
}

static inline void h_publish(uas_sub_session *s, uint32_t rid)
{
    h_publish_acks(s, 1, rid, 0, 0, NULL);
}

/* A write of a stored (pushed) node, as the address space would report. */
static inline void h_write(uint32_t node, double v)
{
    h_node *n = &H.nodes[node];
    n->value = v;
    if (!n->pushed || !n->watch)
        return;
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    uas_variant_set_scalar(&dv.value, &v, &uas_types[UAS_TYPES_DOUBLE]);
    dv.has_value = true;
    dv.status = n->status;
    dv.has_status = n->status != UAS_GOOD;
    dv.source_timestamp = H_UTC0 + H.now * 10000;
    dv.has_source_timestamp = true;
    uas_sub_engine_value_changed_watch(H.e, n->watch, &dv, H.now);
}

/* The DataChangeNotification of a captured response, or NULL. */
static inline const uas_data_change_notification *h_dcn(size_t i)
{
    cr_assert(i < H.n);
    const uas_notification_message *nm = &H.full[i].notification_message;
    for (size_t k = 0; k < nm->notification_data_count; k++)
        if (nm->notification_data[k].content.decoded.type == UAS_TYPE(DATA_CHANGE_NOTIFICATION))
            return nm->notification_data[k].content.decoded.data;
    return NULL;
}

static inline double h_val(const uas_monitored_item_notification *mn)
{
    cr_assert_eq(mn->value.value.type, &uas_types[UAS_TYPES_DOUBLE]);
    return *(const double *)mn->value.value.data;
}

/* Value k of the DataChangeNotification of response i. */
static inline double h_dc_val(size_t i, size_t k)
{
    const uas_data_change_notification *d = h_dcn(i);
    cr_assert_not_null(d, "response %zu has no data", i);
    cr_assert(k < d->monitored_items_count, "response %zu has %zu items", i,
              d->monitored_items_count);
    return h_val(&d->monitored_items[k]);
}

static inline uas_status h_dc_status(size_t i, size_t k)
{
    const uas_data_change_notification *d = h_dcn(i);
    cr_assert_not_null(d);
    return d->monitored_items[k].value.has_status ? d->monitored_items[k].value.status : UAS_GOOD;
}

/* The status of the StatusChangeNotification of response i. */
static inline uas_status h_status_change(size_t i)
{
    const uas_notification_message *nm = &H.full[i].notification_message;
    cr_assert_eq(nm->notification_data_count, 1);
    cr_assert_eq(nm->notification_data[0].content.decoded.type,
                 UAS_TYPE(STATUS_CHANGE_NOTIFICATION));
    return ((uas_status_change_notification *)nm->notification_data[0].content.decoded.data)
        ->status;
}

static inline uas_extensionobject h_dcf(uas_data_change_trigger trig, uint32_t dbt, double dbv,
                                        uas_data_change_filter *storage)
{
    storage->trigger = trig;
    storage->deadband_type = dbt;
    storage->deadband_value = dbv;
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = UAS_TYPE(DATA_CHANGE_FILTER);
    x.content.decoded.data = storage;
    return x;
}

#endif
