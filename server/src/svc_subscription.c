/* Wiring of the subscription engine (sub_engine.h) into the server: one
 * engine per event loop, the subscription and monitored-item services,
 * Publish requests parked as data, publishing timers, value changes from the
 * address space, and delivery of Publish responses to connections that may
 * live on another loop.
 *
 * Threading. A session's subscriptions live in the engine of the loop that
 * first served one of its subscription requests; TransferSubscriptions
 * moves a subscription into the engine of the session that takes it, so a
 * subscription id names a subscription in exactly one engine, not
 * necessarily the one that gave the id out. An engine is normally used
 * only by its own loop, but a write on another loop, a session reactivated
 * on a connection of another loop, or a session expiring on loop 0 also
 * reach it, so each engine has a mutex (uncontended on the single-loop
 * path). A Publish response for a connection of another loop is deep-copied
 * and handed over through that loop's inbox (ev_async); the engine's timer
 * is re-armed by its own loop, told through the same inbox. Lock order:
 * session, then engine, then address space; a transfer between loops holds
 * two engines, the lower loop's first. */
#include <ev.h>
#include <string.h>

#include <ua/codec.h>
#include <ua/membudget.h>
#include <ua/nodeids.h>

#include "lockdef.h"
#include "aspace_monitor.h"
#include "authz.h"
#ifdef UAS_ENABLE_ENCRYPTION
#include "crypto_util.h"
#endif
#include "dispatch.h"
#include "lock_stats.h"
#include "sub_diag.h"
#include "sub_engine.h"
#include "sub_map.h"
#include "sub_methods.h"
#include "svc_subscription.h"

_Thread_local uas_sloop *uas__current_loop;
_Thread_local uas_session *uas__current_session;

typedef struct inbox_msg {
    struct inbox_msg *next;
    uint32_t channel_id;
    uint32_t request_id;
    uas_publish_response *resp; /* heap copy */
} inbox_msg;

/* One written value for one engine: its own copy of the value and its
 * timestamps, so no value between two drains is lost. */
typedef struct sample_msg {
    struct sample_msg *next;
    int64_t now;
    size_t charged;   /* to the memory budget */
    uas_nodeid id;    /* heap copy */
    uas_datavalue dv; /* heap copy */
} sample_msg;

/* The server-wide subscription figures of ServerDiagnosticsSummary, kept
 * beside the engines so that reading them takes no engine's lock: a client
 * that monitors them has them read under its own engine's lock (sampling),
 * where taking the other engines' locks could deadlock. */
typedef struct subs_diag {
    uas_sub_shared shared; /* the server-wide counts every engine uses */
    atomic_uint current, cumulated;
    pthread_mutex_t lock; /* of intervals; taken last, after any engine */
    sub_map intervals;    /* publishing interval (ms) -> interval_count */
} subs_diag;

typedef struct interval_count {
    uint32_t subs;
} interval_count;

struct uas_sloop_subs {
    uas_sloop *loop;
    uas_sub_engine *engine;
    subs_diag *diag; /* shared by the loops, owned by loop 0 */
    pthread_mutex_t lock;
    ev_timer timer;
    ev_async wake;
    pthread_mutex_t inbox_lock;
    inbox_msg *head, *tail;
    atomic_bool rearm;
    sub_map conns; /* channel id -> uas_conn of this loop */
    /* Written values for this engine (MPSC, lock-free): writers push under
     * the node's value lock, so per node in write order; the loop takes
     * the whole stack and applies it oldest first (drain_samples). */
    _Atomic(sample_msg *) samples;
    _Atomic uint64_t samples_lost; /* out of memory */
};

/* The target of a parked Publish: the loop and the channel of the
 * connection it came on, never a pointer, so a closed connection cannot
 * leave a dangling target behind. A 64-bit pointer holds the loop (+1) in
 * its high half and the channel id in its low half. A 32-bit one holds
 * the loop in its top 8 bits and the low 24 bits of the channel id, so
 * there the loop's connection map is keyed by those 24 bits (chan_key):
 * of two live channels 2^24 ids apart the second gets no Publish answers,
 * never the other's (uas_subs_conn_opened). */
#if UINTPTR_MAX > UINT32_MAX
static uint32_t chan_key(uint32_t channel)
{
    return channel;
}

static uas_sub_publish_target *make_target(unsigned loop, uint32_t channel)
{
    return (uas_sub_publish_target *)(uintptr_t)(((uint64_t)(loop + 1) << 32) | channel);
}

static void split_target(uas_sub_publish_target *t, unsigned *loop, uint32_t *channel)
{
    uint64_t v = (uint64_t)(uintptr_t)t;
    *loop = (unsigned)(v >> 32) - 1;
    *channel = (uint32_t)v;
}
#else
static uint32_t chan_key(uint32_t channel)
{
    return channel & 0xFFFFFFu;
}

static uas_sub_publish_target *make_target(unsigned loop, uint32_t channel)
{
    return (uas_sub_publish_target *)(uintptr_t)(((uint32_t)loop << 24) | chan_key(channel));
}

static void split_target(uas_sub_publish_target *t, unsigned *loop, uint32_t *channel)
{
    uint32_t v = (uint32_t)(uintptr_t)t;
    *loop = v >> 24;
    *channel = v & 0xFFFFFFu;
}
#endif

/* ---- timers ---- */

static void arm_timer(uas_sloop_subs *ss)
{
    struct ev_loop *ev = uas_loop_ev(ss->loop->loop);
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    int64_t next = uas_sub_engine_next_deadline(ss->engine);
    UAS_UNLOCK(&ss->lock);
    if (next == INT64_MAX) {
        ev_timer_stop(ev, &ss->timer);
        return;
    }
    /* A deadline already passed (the engine counts whole milliseconds, so
     * that is common right after an early wake-up) is armed 0.5 ms ahead. */
    double after = (double)(next - uas_monotonic_ms()) / 1000.0;
    if (after < 0.0005)
        after = 0.0005;
    /* A timer already due no later than that stays as it is: re-arming it
     * on every write would keep pushing a passed deadline 0.5 ms into the
     * future, and under a stream of writes (one every 0.1 ms) the
     * publishing tick would not come until the writes pause. The check
     * compares the clamped delay: compared with the raw, negative one it
     * failed exactly when the deadline had passed. */
    if (ev_is_active(&ss->timer) && ev_timer_remaining(ev, &ss->timer) <= after)
        return;
    ev_timer_stop(ev, &ss->timer);
    ev_timer_set(&ss->timer, after, 0.0);
    ev_timer_start(ev, &ss->timer);
}

/* After any call into an engine: its deadline may have moved. */
static void engine_touched(uas_sloop_subs *ss)
{
    if (uas__current_loop == ss->loop) {
        arm_timer(ss);
    } else {
        atomic_store(&ss->rearm, true);
        ev_async_send(uas_loop_ev(ss->loop->loop), &ss->wake);
    }
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop_subs *ss = w->data;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    uas_sub_engine_tick(ss->engine, uas_monotonic_ms());
    UAS_UNLOCK(&ss->lock);
    arm_timer(ss);
}

/* ---- delivery ---- */

static void deliver(uas_sloop_subs *ss, uint32_t channel_id, uint32_t request_id,
                    const uas_publish_response *resp)
{
    uas_conn *c = sub_map_get(&ss->conns, chan_key(channel_id));
    if (c) /* else the connection closed: nobody to answer */
        uas_dispatch_respond(ss->loop->server, c, request_id, resp, UAS_TYPE(PUBLISH_RESPONSE));
}

static void cb_send_publish(void *ud, uas_sub_publish_target *target, uint32_t request_id,
                            const uas_publish_response *resp)
{
    uas_server *s = ud;
    unsigned li;
    uint32_t channel;
    split_target(target, &li, &channel);
    if (li >= s->nloops)
        return;
    uas_sloop_subs *dst = s->loops[li].subs;
    if (uas__current_loop == dst->loop) {
        deliver(dst, channel, request_id, resp);
        return;
    }
    /* Another loop owns the connection: the response leaves engine memory,
     * so it is copied to the heap and sent from there. */
    inbox_msg *m = uas_calloc(1, sizeof(*m));
    uas_publish_response *copy = uas_new(UAS_TYPE(PUBLISH_RESPONSE));
    if (!m || !copy || uas_copy(resp, copy, UAS_TYPE(PUBLISH_RESPONSE)) != UAS_GOOD) {
        uas_free(m, sizeof(*m));
        uas_delete(copy, UAS_TYPE(PUBLISH_RESPONSE));
        uas_log(UAS_LOG_WARN, "subscription", "out of memory: a Publish response was lost");
        return;
    }
    m->channel_id = channel;
    m->request_id = request_id;
    m->resp = copy;
    UAS_LOCK_PLAIN(&dst->inbox_lock);
    if (dst->tail)
        dst->tail->next = m;
    else
        dst->head = m;
    dst->tail = m;
    UAS_UNLOCK(&dst->inbox_lock);
    ev_async_send(uas_loop_ev(dst->loop->loop), &dst->wake);
}

static void sample_free(sample_msg *m)
{
    uas_budget_release(m->charged);
    uas_clear(&m->id, UAS_TYPE(NODE_ID));
    uas_clear(&m->dv, UAS_TYPE(DATA_VALUE));
    uas_free(m, sizeof(*m));
}

/* Applies the queued values of this loop's engine, oldest first, under
 * one acquisition of its lock. Only the engine's own loop calls it. */
static void drain_samples(uas_sloop_subs *ss)
{
    sample_msg *m = atomic_exchange(&ss->samples, NULL);
    if (!m)
        return;
    sample_msg *fifo = NULL;
    while (m) {
        sample_msg *next = m->next;
        m->next = fifo;
        fifo = m;
        m = next;
    }
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    for (m = fifo; m; m = m->next)
        uas_sub_engine_value_changed(ss->engine, &m->id, &m->dv, m->now);
    UAS_UNLOCK(&ss->lock);
    while (fifo) {
        sample_msg *next = fifo->next;
        sample_free(fifo);
        fifo = next;
    }
    arm_timer(ss);
}

static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)ev;
    (void)revents;
    uas_sloop_subs *ss = w->data;
    drain_samples(ss);
    UAS_LOCK_PLAIN(&ss->inbox_lock);
    inbox_msg *m = ss->head;
    ss->head = ss->tail = NULL;
    UAS_UNLOCK(&ss->inbox_lock);
    while (m) {
        inbox_msg *next = m->next;
        deliver(ss, m->channel_id, m->request_id, m->resp);
        uas_delete(m->resp, UAS_TYPE(PUBLISH_RESPONSE));
        uas_free(m, sizeof(*m));
        m = next;
    }
    if (atomic_exchange(&ss->rearm, false))
        arm_timer(ss);
}

/* ---- engine callbacks into the address space ---- */

static void cb_read_value(void *ud, const uas_nodeid *node, uint32_t attribute,
                          const uas_string *index_range, uas_datavalue *out, uas_arena *a)
{
    uas_server *s = ud;
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = *node;
    rv.attribute_id = attribute;
    if (index_range)
        rv.index_range = *index_range;
    uas_aspace_read(s->as, &rv, UAS_TIMESTAMPS_TO_RETURN_BOTH, uas_datetime_now(), out, a);
}

/* The roles of the session whose CreateMonitoredItems runs on this thread
 * (the engine calls check_node synchronously from it); the server's own
 * checks otherwise. */
static _Thread_local uint32_t check_roles = UAS_ROLES_INTERNAL;

static uas_status cb_check_node(void *ud, const uas_read_value_id *item, uas_sub_node_info *info)
{
    uas_server *s = ud;
    bool pushed = false, numeric = false;
    uas_status st = uas_aspace_monitor_info(s->as, &item->node_id, &pushed, &numeric);
    if (st != UAS_GOOD)
        return st;
    /* The attribute, index range and encoding are checked by reading once. */
    uint8_t mem[1024];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_datavalue dv;
    uas_aspace_read(s->as, item, UAS_TIMESTAMPS_TO_RETURN_NEITHER, uas_datetime_now(), &dv, &a);
    uas_arena_free(&a);
    if (dv.has_status &&
        (dv.status == UAS_BAD_ATTRIBUTE_ID_INVALID || dv.status == UAS_BAD_NODE_ID_UNKNOWN ||
         dv.status == UAS_BAD_INDEX_RANGE_INVALID || dv.status == UAS_BAD_NOT_READABLE ||
         dv.status == UAS_BAD_DATA_ENCODING_INVALID ||
         dv.status == UAS_BAD_DATA_ENCODING_UNSUPPORTED))
        return dv.status;
    st = uas_authz_check_monitor(s, item, check_roles);
    if (st != UAS_GOOD)
        return st;
    info->pushed = pushed && item->attribute_id == UAS_SUB_ATTR_VALUE;
    info->numeric = numeric;
    return UAS_GOOD;
}

static uas_status cb_eu_range(void *ud, const uas_nodeid *node, uas_range *out)
{
    uas_server *s = ud;
    return uas_aspace_eu_range(s->as, node, out);
}

/* A value was written: queues a copy of (id, dv) for every engine that may
 * watch the node (uas_sub_engine_may_watch), and wakes the loops of the
 * others; the calling loop's own engine gets its
 * copy when the writer flushes (on_value with id NULL). No engine lock is
 * taken, so a Write never waits for another loop's engine (issue 16). */
static void post_value(uas_server *s, const uas_nodeid *id, const uas_datavalue *dv)
{
    /* Worked out at the first engine that may watch the node: a write
     * nobody watches costs one hash per loop's filter, nothing else. */
    int64_t now = 0;
    size_t full = 0;
    uas_datavalue lost; /* the value's place past the memory budget */
    uint32_t h = uas_sub_nodeid_hash(id);
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        if (!ss || !ss->engine || !uas_sub_engine_may_watch(ss->engine, h))
            continue;
        if (!full) {
            now = uas_monotonic_ms();
            full = sizeof(sample_msg) + uas_encoded_size(dv, UAS_TYPE(DATA_VALUE));
            memset(&lost, 0, sizeof(lost));
            lost.status = UAS_BAD_OUT_OF_MEMORY;
            lost.has_status = true;
            lost.source_timestamp = dv->source_timestamp;
            lost.has_source_timestamp = dv->has_source_timestamp;
            lost.server_timestamp = dv->server_timestamp;
            lost.has_server_timestamp = dv->has_server_timestamp;
        }
        /* Queued values draw on the memory budget, so a loop that does
         * not drain its queue (stalled) cannot take the process's memory:
         * past the budget the value is replaced by its status,
         * BadOutOfMemory, as a full subscription queue does (sub_item.c). */
        bool fits = uas_budget_try_reserve(full);
        size_t need = fits ? full : sizeof(sample_msg);
        if (!fits)
            uas_budget_charge(need);
        sample_msg *m = uas_calloc(1, sizeof(*m));
        if (m)
            m->charged = need;
        else
            uas_budget_release(need);
        if (!m || uas_copy(id, &m->id, UAS_TYPE(NODE_ID)) != UAS_GOOD ||
            uas_copy(fits ? dv : &lost, &m->dv, UAS_TYPE(DATA_VALUE)) != UAS_GOOD) {
            if (m)
                sample_free(m);
            if (atomic_fetch_add(&ss->samples_lost, 1) == 0)
                uas_log(UAS_LOG_WARN, "subscription",
                        "out of memory: a data change was not delivered to loop %u", i);
            continue;
        }
        if (!fits) {
            atomic_fetch_add(&ss->samples_lost, 1);
            atomic_fetch_add_explicit(&ss->diag->shared.budget_refused, 1, memory_order_relaxed);
        }
        m->now = now;
        sample_msg *head = atomic_load_explicit(&ss->samples, memory_order_relaxed);
        do
            m->next = head;
        while (!atomic_compare_exchange_weak_explicit(&ss->samples, &head, m, memory_order_release,
                                                      memory_order_relaxed));
        if (uas__current_loop != ss->loop)
            ev_async_send(uas_loop_ev(ss->loop->loop), &ss->wake);
    }
}

/* The value hook (aspace.h): called under the node's value lock with the
 * value written, then once with id NULL after the lock is dropped. */
static void on_value(void *ud, const uas_nodeid *id, const uas_datavalue *dv)
{
    uas_server *s = ud;
    if (id) {
        post_value(s, id, dv);
        return;
    }
    /* A write on a loop: its own engine sees it before the loop goes on,
     * as before the inbox (a Publish answered next already carries it). */
    uas_sloop *l = uas__current_loop;
    if (l && l->server == s && l->subs)
        drain_samples(l->subs);
}

/* The change hook: after a write (already queued by on_value: nothing to
 * do) or after a node was deleted: its monitored items sample it again
 * (BadNodeIdUnknown), through the same queues. */
static void on_value_changed(void *ud, const uas_nodeid *id)
{
    uas_server *s = ud;
    uint8_t mem[2048];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 16u << 20);
    uas_datavalue dv;
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = *id;
    rv.attribute_id = UAS_SUB_ATTR_VALUE;
    uas_aspace_read(s->as, &rv, UAS_TIMESTAMPS_TO_RETURN_BOTH, uas_datetime_now(), &dv, &a);
    bool gone = dv.status == UAS_BAD_NODE_ID_UNKNOWN;
    if (gone)
        post_value(s, id, &dv);
    uas_arena_free(&a);
    if (gone)
        on_value(s, NULL, NULL);
}

void uas_subs_post_event(uas_server *s, const uas_nodeid *notifier, const uas_sub_event *ev)
{
    int64_t now = uas_monotonic_ms();
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        if (!ss)
            continue;
        UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
        uas_sub_engine_post_event(ss->engine, notifier, ev, now);
        UAS_UNLOCK(&ss->lock);
        engine_touched(ss);
    }
}

/* ---- diagnostics ---- */

static void interval_add(subs_diag *d, uint32_t ms)
{
    interval_count *c = sub_map_get(&d->intervals, ms);
    if (c) {
        c->subs++;
        return;
    }
    c = uas_malloc(sizeof(*c));
    if (!c || sub_map_put(&d->intervals, ms, c) != UAS_GOOD) {
        /* The count of intervals is off by one while it lasts. */
        uas_free(c, sizeof(*c));
        return;
    }
    c->subs = 1;
}

static void interval_remove(subs_diag *d, uint32_t ms)
{
    interval_count *c = sub_map_get(&d->intervals, ms);
    if (c && --c->subs == 0) {
        sub_map_remove(&d->intervals, ms, c);
        uas_free(c, sizeof(*c));
    }
}

/* Called by an engine, under its lock. */
static void cb_sub_changed(void *ud, uint32_t old_ms, uint32_t new_ms)
{
    uas_server *s = ud;
    subs_diag *d = s->loops[0].subs->diag;
    if (old_ms == 0) {
        atomic_fetch_add(&d->current, 1);
        atomic_fetch_add(&d->cumulated, 1);
    } else if (new_ms == 0) {
        atomic_fetch_sub(&d->current, 1);
    }
    UAS_LOCK_PLAIN(&d->lock);
    if (old_ms)
        interval_remove(d, old_ms);
    if (new_ms)
        interval_add(d, new_ms);
    UAS_UNLOCK(&d->lock);
}

static subs_diag *diag_new(void)
{
    subs_diag *d = uas_calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    atomic_init(&d->current, 0);
    atomic_init(&d->cumulated, 0);
    pthread_mutex_init(&d->lock, NULL);
    return d;
}

static void diag_free(subs_diag *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->intervals.cap; i++)
        if (d->intervals.ents[i].val)
            uas_free(d->intervals.ents[i].val, sizeof(interval_count));
    sub_map_free(&d->intervals);
    pthread_mutex_destroy(&d->lock);
    uas_free(d, sizeof(*d));
}

void uas_subs_get_figures(uas_server *s, uas_subs_figures *out)
{
    memset(out, 0, sizeof(*out));
    if (!s->loops || !s->loops[0].subs)
        return;
    subs_diag *d = s->loops[0].subs->diag;
    out->current = atomic_load(&d->current);
    out->cumulated = atomic_load(&d->cumulated);
    out->monitored_items = atomic_load(&d->shared.items);
    out->queue_slots = atomic_load(&d->shared.slots);
    out->orphans = atomic_load(&d->shared.orphans);
    out->orphans_dropped = atomic_load(&d->shared.orphans_dropped);
    out->refused = atomic_load(&d->shared.refused);
    out->queue_bytes = atomic_load(&d->shared.queue_bytes);
    out->budget_refused = atomic_load(&d->shared.budget_refused);
    UAS_LOCK_PLAIN(&d->lock);
    out->publishing_intervals = d->intervals.count;
    UAS_UNLOCK(&d->lock);
}

const uas_sub_limits *uas_subs_limits(uas_server *s)
{
    if (!s->loops || !s->loops[0].subs || !s->loops[0].subs->engine)
        return NULL;
    return uas_sub_engine_limits(s->loops[0].subs->engine);
}

/* ---- set-up ---- */

void uas_server_config_subscription_defaults(uas_server_config *c)
{
    c->max_subscriptions = 20000;
    c->max_subscriptions_per_session = 50;
    c->max_monitored_items = 200000;
    c->max_monitored_items_per_session = 50000;
    c->max_monitored_items_per_subscription = 50000;
    c->max_queued_notifications = 500000;
    c->max_queued_per_subscription = 100000;
    c->max_publishing_interval_ms = 600000;
    c->max_subscription_lifetime_ms = 3600000;
    c->max_orphaned_subscriptions = 1000;
    c->max_orphaned_per_user = 100;
    c->max_orphan_lifetime_ms = 600000;
}

/* The configured limits, 0 standing for the default. */
static void subs_limits(const uas_server_config *in, uas_server_config *out)
{
    uas_server_config d;
    uas_server_config_subscription_defaults(&d);
#define PICK(f) out->f = in->f ? in->f : d.f
    PICK(max_subscriptions);
    PICK(max_subscriptions_per_session);
    PICK(max_monitored_items);
    PICK(max_monitored_items_per_session);
    PICK(max_monitored_items_per_subscription);
    PICK(max_queued_notifications);
    PICK(max_queued_per_subscription);
    PICK(max_publishing_interval_ms);
    PICK(max_subscription_lifetime_ms);
    PICK(max_orphaned_subscriptions);
    PICK(max_orphaned_per_user);
    PICK(max_orphan_lifetime_ms);
#undef PICK
}

uas_status uas_subs_init(uas_server *s)
{
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop *l = &s->loops[i];
        uas_sloop_subs *ss = uas_calloc(1, sizeof(*ss));
        if (!ss)
            return UAS_BAD_OUT_OF_MEMORY;
        l->subs = ss;
        ss->loop = l;
        ss->diag = i == 0 ? diag_new() : s->loops[0].subs->diag;
        if (!ss->diag)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_sub_config cfg;
        uas_sub_config_default(&cfg);
        cfg.ud = s;
        cfg.cb.send_publish = cb_send_publish;
        cfg.cb.read_value = cb_read_value;
        cfg.cb.check_node = cb_check_node;
        cfg.cb.get_eu_range = cb_eu_range;
        cfg.cb.sub_changed = cb_sub_changed;
        /* Disjoint subscription ids across loops. */
        cfg.sub_id_first = i + 1;
        cfg.sub_id_step = s->nloops;
        uas_server_config sl;
        subs_limits(&s->cfg, &sl);
        cfg.shared = &ss->diag->shared;
        cfg.limits.max_subscriptions = sl.max_subscriptions;
        cfg.limits.max_subscriptions_per_session = sl.max_subscriptions_per_session;
        cfg.limits.max_monitored_items = sl.max_monitored_items;
        cfg.limits.max_items_per_session = sl.max_monitored_items_per_session;
        cfg.limits.max_items_per_subscription = sl.max_monitored_items_per_subscription;
        cfg.limits.max_queued_notifications = sl.max_queued_notifications;
        cfg.limits.max_queued_per_subscription = sl.max_queued_per_subscription;
        cfg.limits.max_publishing_interval = sl.max_publishing_interval_ms;
        if (cfg.limits.min_publishing_interval > cfg.limits.max_publishing_interval)
            cfg.limits.min_publishing_interval = cfg.limits.max_publishing_interval;
        cfg.limits.max_subscription_lifetime_ms = sl.max_subscription_lifetime_ms;
        cfg.limits.max_orphan_lifetime_ms = sl.max_orphan_lifetime_ms;
        /* 0 (a configuration not made by uas_server_config_default): the
         * engine's defaults. */
        if (s->cfg.max_filter_elements)
            cfg.limits.max_filter_elements = s->cfg.max_filter_elements;
        if (s->cfg.max_like_pattern_length)
            cfg.limits.max_like_pattern_length = s->cfg.max_like_pattern_length;
        if (s->cfg.max_filter_steps)
            cfg.limits.max_filter_steps = s->cfg.max_filter_steps;
        if (s->cfg.max_filter_scratch)
            cfg.limits.max_filter_scratch = s->cfg.max_filter_scratch;
        ss->engine = uas_sub_engine_new(&cfg, uas_monotonic_ms());
        if (!ss->engine)
            return UAS_BAD_OUT_OF_MEMORY;
        pthread_mutex_init(&ss->lock, NULL);
        pthread_mutex_init(&ss->inbox_lock, NULL);
        atomic_init(&ss->rearm, false);
        struct ev_loop *ev = uas_loop_ev(l->loop);
        ev_timer_init(&ss->timer, on_timer, 0.0, 0.0);
        ss->timer.data = ss;
        ev_async_init(&ss->wake, on_wake);
        ss->wake.data = ss;
        ev_async_start(ev, &ss->wake);
        /* The async watcher alone must not keep a loop running. */
        ev_unref(ev);
    }
    uas_aspace_set_change_hook(s->as, on_value_changed, s);
    uas_aspace_set_value_hook(s->as, on_value, s);
    return UAS_GOOD;
}

double uas_subs_timer_remaining(uas_sloop *l)
{
    uas_sloop_subs *ss = l->subs;
    return ss && ss->engine ? uas_loop_timer_remaining(l->loop, &ss->timer) : -1.0;
}

void uas_subs_free(uas_server *s)
{
    if (s->as) {
        uas_aspace_set_change_hook(s->as, NULL, NULL);
        uas_aspace_set_value_hook(s->as, NULL, NULL);
    }
    /* Engines first: deleting their subscriptions updates the shared
     * figures of loop 0. */
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        if (!ss || !ss->engine)
            continue;
        struct ev_loop *ev = uas_loop_ev(s->loops[i].loop);
        ev_ref(ev);
        ev_async_stop(ev, &ss->wake);
        ev_timer_stop(ev, &ss->timer);
        for (sample_msg *m = atomic_exchange(&ss->samples, NULL), *next; m; m = next) {
            next = m->next;
            sample_free(m);
        }
        uas_sub_engine_delete(ss->engine);
        ss->engine = NULL;
        pthread_mutex_destroy(&ss->lock);
        pthread_mutex_destroy(&ss->inbox_lock);
    }
    for (unsigned i = 0; s->loops && i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        if (!ss)
            continue;
        if (i == 0)
            diag_free(ss->diag);
        for (inbox_msg *m = ss->head; m;) {
            inbox_msg *next = m->next;
            uas_delete(m->resp, UAS_TYPE(PUBLISH_RESPONSE));
            uas_free(m, sizeof(*m));
            m = next;
        }
        sub_map_free(&ss->conns);
        uas_free(ss, sizeof(*ss));
        s->loops[i].subs = NULL;
    }
}

void uas_subs_conn_opened(uas_sloop *l, uint32_t channel_id, uas_conn *c)
{
    void *held = sub_map_get(&l->subs->conns, chan_key(channel_id));
    if (held) { /* only on a 32-bit build (chan_key): never answer the wrong one */
        if (held != c)
            uas_log(UAS_LOG_WARN, "subscription",
                    "channel %u shares its Publish key with a live channel: it gets no Publish "
                    "answers",
                    channel_id);
        return;
    }
    if (sub_map_put(&l->subs->conns, chan_key(channel_id), c) != UAS_GOOD)
        uas_log(UAS_LOG_WARN, "subscription", "out of memory: channel %u gets no Publish answers",
                channel_id);
}

void uas_subs_conn_closed(uas_sloop *l, uint32_t channel_id, uas_conn *c)
{
    sub_map_remove(&l->subs->conns, chan_key(channel_id), c);
    uas_server *s = l->server;
    uas_sub_publish_target *t = make_target(l->index, channel_id);
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
        uas_sub_engine_drop_target(ss->engine, t);
        UAS_UNLOCK(&ss->lock);
    }
}

/* While more than max orphans (of owner, or of all with owner NULL) live
 * in all the engines together, the oldest of them goes. Each engine is
 * locked on its own, never two at once; a count read from one engine may
 * be stale by the time the next is read, which at worst drops one orphan
 * less or more than a cap needs in a race with another loop. */
static void drop_orphans(uas_server *s, const uas_sub_owner *owner, uint32_t max)
{
    for (;;) {
        uint32_t total = 0;
        int64_t oldest = INT64_MAX;
        uas_sloop_subs *from = NULL;
        for (unsigned i = 0; i < s->nloops; i++) {
            uas_sloop_subs *ss = s->loops[i].subs;
            int64_t t;
            UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
            total += uas_sub_engine_orphans(ss->engine, owner, &t);
            UAS_UNLOCK(&ss->lock);
            if (t < oldest) {
                oldest = t;
                from = ss;
            }
        }
        if (total <= max || !from)
            return;
        uint32_t id = 0;
        UAS_LOCK(&from->lock, UAS_LOCK_SUBSCRIPTIONS);
        bool dropped = uas_sub_engine_drop_oldest_orphan(from->engine, owner, &id);
        UAS_UNLOCK(&from->lock);
        engine_touched(from);
        if (!dropped)
            return;
        subs_diag *d = s->loops[0].subs->diag;
        UAS_LOG_LIMITED(UAS_LOG_WARN, "subscription",
                        "orphaned subscription %u dropped, the oldest %s: more than %u; %u "
                        "orphans now, %u dropped since start",
                        id, owner ? "of its user" : "of the server", max,
                        atomic_load(&d->shared.orphans), atomic_load(&d->shared.orphans_dropped));
    }
}

void uas_subs_session_release(uas_server *s, uas_session *se)
{
    if (!se->sub)
        return;
    uas_sloop_subs *ss = se->sub_loop->subs;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    uas_sub_owner owner = *uas_sub_session_owner(se->sub);
    bool orphaned = !se->delete_subscriptions && uas_sub_session_subscription_count(se->sub) > 0;
    uas_sub_session_delete(se->sub, se->delete_subscriptions, uas_monotonic_ms());
    UAS_UNLOCK(&ss->lock);
    se->sub = NULL;
    engine_touched(ss);
    if (orphaned && s) { /* s NULL: the session table is being deleted */
        uas_server_config sl;
        subs_limits(&s->cfg, &sl);
        drop_orphans(s, &owner, sl.max_orphaned_per_user);
        drop_orphans(s, NULL, sl.max_orphaned_subscriptions);
    }
}

uint32_t uas_subs_count(uas_server *s)
{
    uas_subs_figures f;
    uas_subs_get_figures(s, &f);
    return f.current;
}

/* ---- services ---- */

/* The engine and subscription session of the request's session, created
 * on this loop's engine on first use. NULL: out of memory. */
static uas_sloop_subs *subs_of(uas_request_ctx *ctx)
{
    uas_session *se = ctx->session;
    if (!se->sub) {
        uas_sloop_subs *ss = ctx->loop->subs;
        UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
        se->sub = uas_sub_session_new(ss->engine, se);
        UAS_UNLOCK(&ss->lock);
        if (!se->sub)
            return NULL;
        se->sub_loop = ctx->loop;
    }
    return se->sub_loop->subs;
}

/* The owner of the subscriptions a session creates or takes (Part 4,
 * 5.13.7): its user (a user name, or "x509:<thumbprint>" of an X.509 user
 * token). An anonymous user is told apart by the client application
 * instead, whose certificate CreateSession checked against the
 * ApplicationUri the spec compares. An anonymous session on a None
 * channel has nothing to prove who it is, so it owns its subscriptions
 * alone (the spec wants a signed channel for anonymous transfers): its
 * session id goes into the key, and another session asking for them gets
 * BadUserAccessDenied. The tag byte keeps a user name apart from a
 * certificate digest and a session id. */
static uas_status owner_of(const uas_session *se, uas_sub_owner *out)
{
#ifndef UAS_ENABLE_ENCRYPTION
    /* No users and no certificates without encryption: every session is
     * the one anonymous owner, as on None channels of the full build. */
    (void)se;
    memset(out->key, 0, sizeof(out->key));
    out->key[0] = 'A';
    return UAS_GOOD;
#else
    uint8_t in[1 + sizeof(se->user)];
    size_t n = 1;
    if (se->user[0]) {
        in[0] = 'U';
        size_t len = strlen(se->user); /* snprintf terminated it */
        memcpy(in + 1, se->user, len);
        n += len;
    } else {
        in[0] = 'A';
        if (se->client_cert.data) {
            /* The leaf alone: a client may send its chain one time and not
             * the next. */
            size_t leaf = se->client_cert.length, first;
            /* The DER header gives the leaf's length; no parse (it cost a
             * seventh of an ECC set-up): the certificate was validated at
             * CreateSession. */
            if (uas_crypto_cert_len(se->client_cert.data, se->client_cert.length, &first) ==
                UAS_GOOD)
                leaf = first;
            uas_status st =
                uas_crypto_digest(UAS_DIGEST_SHA256, se->client_cert.data, leaf, in + 1);
            if (st != UAS_GOOD)
                return st;
            n += UAS_SHA256_LEN;
        } else {
            in[0] = 'S';
            memcpy(in + 1, &se->session_id.id.guid, sizeof(se->session_id.id.guid));
            n += sizeof(se->session_id.id.guid);
        }
    }
    return uas_crypto_digest(UAS_DIGEST_SHA256, in, n, out->key);
#endif
}

/* subs_of() and the owner of the session's current user, for the services
 * that record an owner: the user may have changed since the last one
 * (ActivateSession). NULL with resp's service result set on failure. */
static uas_sloop_subs *subs_owned(uas_request_ctx *ctx, uas_sub_owner *owner,
                                  uas_response_header *resp)
{
    uas_sloop_subs *ss = subs_of(ctx);
    uas_status st = ss ? owner_of(ctx->session, owner) : UAS_BAD_OUT_OF_MEMORY;
    if (st != UAS_GOOD) {
        resp->service_result = st;
        return NULL;
    }
    return ss;
}

#define SUB_SERVICE(name, fn, req_t, resp_t)                                                       \
    void name(uas_request_ctx *ctx, const void *req, void *resp)                                   \
    {                                                                                              \
        uas_sloop_subs *ss = subs_of(ctx);                                                         \
        if (!ss) {                                                                                 \
            ((uas_response_header *)resp)->service_result = UAS_BAD_OUT_OF_MEMORY;                 \
            return;                                                                                \
        }                                                                                          \
        UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);                                               \
        (void)fn(ctx->session->sub, (const req_t *)req, (resp_t *)resp, ctx->arena, ctx->now_ms);  \
        UAS_UNLOCK(&ss->lock);                                                                     \
        engine_touched(ss);                                                                        \
    }

void uas_svc_create_subscription(uas_request_ctx *ctx, const void *req, void *resp)
{
    uas_create_subscription_response *r = resp;
    uas_sub_owner owner;
    uas_sloop_subs *ss = subs_owned(ctx, &owner, &r->response_header);
    if (!ss)
        return;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    uas_sub_session_set_owner(ctx->session->sub, &owner);
    (void)uas_sub_create_subscription(ctx->session->sub, req, r, ctx->arena, ctx->now_ms);
    UAS_UNLOCK(&ss->lock);
    engine_touched(ss);
}

SUB_SERVICE(uas_svc_modify_subscription, uas_sub_modify_subscription,
            uas_modify_subscription_request, uas_modify_subscription_response)
SUB_SERVICE(uas_svc_set_publishing_mode, uas_sub_set_publishing_mode,
            uas_set_publishing_mode_request, uas_set_publishing_mode_response)
SUB_SERVICE(uas_svc_delete_subscriptions, uas_sub_delete_subscriptions,
            uas_delete_subscriptions_request, uas_delete_subscriptions_response)
SUB_SERVICE(uas_svc_republish, uas_sub_republish, uas_republish_request, uas_republish_response)

/* Items are created with the session's permissions on their nodes. */
void uas_svc_create_monitored_items(uas_request_ctx *ctx, const void *req, void *resp)
{
    uas_sloop_subs *ss = subs_of(ctx);
    if (!ss) {
        ((uas_response_header *)resp)->service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    check_roles = uas_authz_ctx_roles(ctx);
    (void)uas_sub_create_monitored_items(ctx->session->sub, req, resp, ctx->arena, ctx->now_ms);
    check_roles = UAS_ROLES_INTERNAL;
    UAS_UNLOCK(&ss->lock);
    engine_touched(ss);
}

SUB_SERVICE(uas_svc_modify_monitored_items, uas_sub_modify_monitored_items,
            uas_modify_monitored_items_request, uas_modify_monitored_items_response)
SUB_SERVICE(uas_svc_delete_monitored_items, uas_sub_delete_monitored_items,
            uas_delete_monitored_items_request, uas_delete_monitored_items_response)
SUB_SERVICE(uas_svc_set_monitoring_mode, uas_sub_set_monitoring_mode,
            uas_set_monitoring_mode_request, uas_set_monitoring_mode_response)
SUB_SERVICE(uas_svc_set_triggering, uas_sub_set_triggering, uas_set_triggering_request,
            uas_set_triggering_response)

/* Two engines at once only ever here, always the lower loop first, so two
 * transfers in opposite directions cannot deadlock. */
static void lock_pair(uas_sloop_subs *a, uas_sloop_subs *b)
{
    if (a->loop->index > b->loop->index) {
        uas_sloop_subs *t = a;
        a = b;
        b = t;
    }
    UAS_LOCK(&a->lock, UAS_LOCK_SUBSCRIPTIONS);
    UAS_LOCK(&b->lock, UAS_LOCK_SUBSCRIPTIONS);
}

static void unlock_pair(uas_sloop_subs *a, uas_sloop_subs *b)
{
    UAS_UNLOCK(&a->lock);
    UAS_UNLOCK(&b->lock);
}

/* The subscriptions of the session's own engine are transferred first;
 * an id it does not know may live in another loop's engine (its session
 * was served there), and is moved from there into this session's engine,
 * with both engines locked for the move. Ids are looked up under the
 * locks, so a subscription moved meanwhile by a concurrent transfer is at
 * worst reported BadSubscriptionIdInvalid, never half-moved. */
void uas_svc_transfer_subscriptions(uas_request_ctx *ctx, const void *vreq, void *vresp)
{
    const uas_transfer_subscriptions_request *req = vreq;
    uas_transfer_subscriptions_response *resp = vresp;
    uas_server *s = ctx->server;
    uas_sub_owner owner;
    uas_sloop_subs *ss = subs_owned(ctx, &owner, &resp->response_header);
    if (!ss)
        return;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    uas_sub_session_set_owner(ctx->session->sub, &owner);
    uas_status st =
        uas_sub_transfer_subscriptions(ctx->session->sub, req, resp, ctx->arena, ctx->now_ms);
    UAS_UNLOCK(&ss->lock);
    for (size_t i = 0; st == UAS_GOOD && i < resp->results_count; i++) {
        uas_transfer_result *r = &resp->results[i];
        for (unsigned k = 0; k < s->nloops && r->status_code == UAS_BAD_SUBSCRIPTION_ID_INVALID;
             k++) {
            uas_sloop_subs *src = s->loops[k].subs;
            if (src == ss)
                continue;
            lock_pair(ss, src);
            uas_sub_transfer_from(src->engine, req->subscription_ids[i], ctx->session->sub,
                                  req->send_initial_values, r, ctx->arena, ctx->now_ms);
            unlock_pair(ss, src);
            if (r->status_code != UAS_BAD_SUBSCRIPTION_ID_INVALID)
                engine_touched(src);
        }
    }
    engine_touched(ss);
}

void uas_svc_publish(uas_request_ctx *ctx, const void *req, void *resp)
{
    (void)resp;
    /* Whatever happens, the engine answers through send_publish; the
     * dispatcher sends nothing for this request. */
    ctx->no_response = true;
    uas_sloop_subs *ss = subs_of(ctx);
    if (!ss) {
        ctx->no_response = false;
        ((uas_response_header *)resp)->service_result = UAS_BAD_OUT_OF_MEMORY;
        return;
    }
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    uas_sub_publish(ctx->session->sub, make_target(ctx->loop->index, ctx->channel_id),
                    ctx->request_id, req, ctx->now_ms);
    UAS_UNLOCK(&ss->lock);
    engine_touched(ss);
}

/* ---- Server.GetMonitoredItems and Server.ResendData ---- */

static uas_status method_on_sub(uas_session *se, const uas_variant *in, uas_sloop_subs **ss,
                                uint32_t *sub_id)
{
    if (!se || !in[0].data)
        return UAS_BAD_SUBSCRIPTION_ID_INVALID;
    if (!se->sub && uas__current_loop) {
        /* No subscription of its own yet: still tell "not yours" apart
         * from "no such subscription". */
        uas_sloop_subs *own = uas__current_loop->subs;
        UAS_LOCK(&own->lock, UAS_LOCK_SUBSCRIPTIONS);
        se->sub = uas_sub_session_new(own->engine, se);
        UAS_UNLOCK(&own->lock);
        if (se->sub)
            se->sub_loop = uas__current_loop;
    }
    if (!se->sub)
        return UAS_BAD_SUBSCRIPTION_ID_INVALID;
    *sub_id = *(const uint32_t *)in[0].data;
    *ss = se->sub_loop->subs;
    return UAS_GOOD;
}

/* A subscription id that is not the caller's: another session's (on any
 * loop) is not the caller's to use (Part 5, 9.1/9.2), else it is unknown. */
static uas_status not_own(uas_server *s, uint32_t id)
{
    for (unsigned i = 0; i < s->nloops; i++) {
        uas_sloop_subs *ss = s->loops[i].subs;
        UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
        bool has = uas_sub_engine_has_subscription(ss->engine, id);
        UAS_UNLOCK(&ss->lock);
        if (has)
            return UAS_BAD_USER_ACCESS_DENIED;
    }
    return UAS_BAD_SUBSCRIPTION_ID_INVALID;
}

static uas_status get_monitored_items(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                                      size_t in_count, const uas_variant *in, size_t *out_count,
                                      uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in_count;
    uas_sloop_subs *ss;
    uint32_t id;
    uas_session *se = uas__current_session;
    uas_status st = method_on_sub(se, in, &ss, &id);
    if (st != UAS_GOOD)
        return st;
    uint32_t *sh = NULL, *ch = NULL;
    size_t n = 0;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    st = uas_sub_get_monitored_items(se->sub, id, arena, &sh, &ch, &n);
    UAS_UNLOCK(&ss->lock);
    if (st == UAS_BAD_SUBSCRIPTION_ID_INVALID)
        return not_own(ud, id);
    if (st != UAS_GOOD)
        return st;
    uas_variant *v = uas_arena_calloc(arena, 2, sizeof(uas_variant));
    if (!v)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_variant_set_array(&v[0], sh, n, UAS_TYPE(UINT32));
    uas_variant_set_array(&v[1], ch, n, UAS_TYPE(UINT32));
    *out = v;
    *out_count = 2;
    return UAS_GOOD;
}

static uas_status resend_data(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                              size_t in_count, const uas_variant *in, size_t *out_count,
                              uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in_count, (void)arena;
    uas_sloop_subs *ss;
    uint32_t id;
    uas_session *se = uas__current_session;
    uas_status st = method_on_sub(se, in, &ss, &id);
    if (st != UAS_GOOD)
        return st;
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    st = uas_sub_resend_data(se->sub, id, uas_monotonic_ms());
    UAS_UNLOCK(&ss->lock);
    engine_touched(ss);
    if (st == UAS_BAD_SUBSCRIPTION_ID_INVALID)
        return not_own(ud, id);
    *out_count = 0;
    *out = NULL;
    return st;
}

/* ConditionRefresh (SubscriptionId) and ConditionRefresh2 (SubscriptionId,
 * MonitoredItemId), Part 9, 5.5.7 and 5.5.8. */
static uas_status condition_refresh(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                                    size_t in_count, const uas_variant *in, size_t *out_count,
                                    uas_variant **out, uas_arena *arena)
{
    (void)object, (void)arena;
    uas_sloop_subs *ss;
    uint32_t id, item = 0;
    uas_session *se = uas__current_session;
    uas_status st = method_on_sub(se, in, &ss, &id);
    if (st != UAS_GOOD)
        return st;
    if (method->id.numeric == UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH2) {
        if (in_count < 2 || !in[1].data)
            return UAS_BAD_MONITORED_ITEM_ID_INVALID;
        item = *(const uint32_t *)in[1].data;
    }
    UAS_LOCK(&ss->lock, UAS_LOCK_SUBSCRIPTIONS);
    st = uas_server_condition_refresh(se->sub, id, item, uas_monotonic_ms());
    UAS_UNLOCK(&ss->lock);
    engine_touched(ss);
    if (st == UAS_BAD_SUBSCRIPTION_ID_INVALID)
        return not_own(ud, id);
    *out_count = 0;
    *out = NULL;
    return st;
}

uas_status uas_subs_methods_init(uas_server *s)
{
    static const struct {
        uint32_t id;
        uas_method_fn fn;
    } methods[] = {
        {UAS_NS0ID_SERVER_GETMONITOREDITEMS, get_monitored_items},
        {UAS_NS0ID_SERVER_RESENDDATA, resend_data},
        {UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH, condition_refresh},
        {UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH2, condition_refresh},
    };
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        uas_nodeid id = uas_nodeid_numeric(0, methods[i].id);
        uas_status st = uas_aspace_set_method(s->as, &id, methods[i].fn, s);
        if (st != UAS_GOOD && st != UAS_BAD_NODE_ID_UNKNOWN) /* reduced namespace 0 */
            return st;
    }
    return UAS_GOOD;
}
