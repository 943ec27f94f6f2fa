/* Monitored items (Part 4, 5.12): parameter revision and filters, sampling
 * of pushed and data-source nodes, the DataChangeFilter, the per-item
 * queue with its discard policy and overflow bit, monitoring modes,
 * triggering, and draining the queues into NotificationMessages. */
#include <math.h>
#include <string.h>

#include "sub_internal.h"

#define T_DATAVALUE (&uas_types[UAS_TYPES_DATA_VALUE])
#define T_VARIANT   (&uas_types[UAS_TYPES_VARIANT])

/* ---- parameters ---- */

static bool filter_is(const uas_extensionobject *f, const uas_type *t)
{
    return f->encoding == UAS_EXTOBJ_DECODED && f->content.decoded.type == t &&
           f->content.decoded.data;
}

#ifndef UAS_MINIMAL
static void event_overflow(sub_item *it, int64_t now);
#endif

/* Integer milliseconds, never below the request (Part 4, 7.21: "equal or
 * higher than the requested samplingInterval"), within the limits. */
static double revise_interval(double req, double lo, double hi)
{
    if (req < lo)
        req = lo;
    if (req > hi)
        req = hi;
    return ceil(req);
}

typedef struct item_filter {
    int32_t trigger;
    uint32_t deadband_type;
    double deadband_value, deadband;
    uas_event_filter *efilter;
} item_filter;

static uas_status data_filter(sub_item *it, const uas_extensionobject *f, item_filter *out)
{
    uas_sub_engine *e = it->sub->e;
    out->trigger = UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE;
    out->deadband_type = UAS_DEADBAND_TYPE_NONE;
    out->deadband = -1;
    if (f->encoding == UAS_EXTOBJ_EMPTY)
        return UAS_GOOD;
    if (filter_is(f, UAS_TYPE(EVENT_FILTER)))
        return UAS_BAD_FILTER_NOT_ALLOWED;
    if (!filter_is(f, UAS_TYPE(DATA_CHANGE_FILTER)))
        return UAS_BAD_MONITORED_ITEM_FILTER_UNSUPPORTED; /* aggregates, unknown types */
    if (it->attr != UAS_SUB_ATTR_VALUE)
        return UAS_BAD_FILTER_NOT_ALLOWED;
    const uas_data_change_filter *dcf = f->content.decoded.data;
    if (dcf->trigger < UAS_DATA_CHANGE_TRIGGER_STATUS ||
        dcf->trigger > UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE_TIMESTAMP)
        return UAS_BAD_MONITORED_ITEM_FILTER_INVALID;
    out->trigger = dcf->trigger;
    out->deadband_type = dcf->deadband_type;
    out->deadband_value = dcf->deadband_value;
    if (dcf->deadband_type == UAS_DEADBAND_TYPE_NONE)
        return UAS_GOOD;
    if (dcf->deadband_type > UAS_DEADBAND_TYPE_PERCENT || !(dcf->deadband_value >= 0))
        return UAS_BAD_DEADBAND_FILTER_INVALID;
    if (!it->numeric)
        return UAS_BAD_FILTER_NOT_ALLOWED;
    if (dcf->deadband_type == UAS_DEADBAND_TYPE_ABSOLUTE) {
        out->deadband = dcf->deadband_value;
        return UAS_GOOD;
    }
    if (dcf->deadband_value > 100)
        return UAS_BAD_DEADBAND_FILTER_INVALID;
    if (!e->cfg.cb.get_eu_range)
        return UAS_BAD_MONITORED_ITEM_FILTER_UNSUPPORTED;
    uas_range r;
    uas_status st = e->cfg.cb.get_eu_range(e->cfg.ud, &it->node, &r);
    if (uas_is_bad(st))
        return st;
    /* Part 8, 6.2: percent of the EURange span, fixed when the item is
     * created or modified. */
    out->deadband = dcf->deadband_value / 100.0 * fabs(r.high - r.low);
    return UAS_GOOD;
}

static void set_overflow(uas_datavalue *dv)
{
    dv->status |= SUB_STATUS_OVERFLOW;
    dv->has_status = true;
}

/* A ring of n slots holding the newest min(count, n) entries of the old
 * one; the caller swaps it in. */
static uas_status queue_resize(sub_item *it, uint32_t n, uint32_t *dropped)
{
    bool data = it->kind == SUB_ITEM_DATA;
    uas_sub_engine *e = it->sub->e;
    size_t esz = data ? sizeof(sub_val) : sizeof(sub_evrec *);
    /* The ring is reserved from the memory budget: when it is exhausted
     * the item is refused like one past the count limits. */
    if (!sub_mem_take(e, (size_t)n * esz))
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    void *q = uas_calloc(n, esz);
    if (!q) {
        sub_mem_give(e, (size_t)n * esz);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    uint32_t drop = it->qcount > n ? it->qcount - n : 0;
    for (uint32_t k = 0; k < it->qcount; k++) {
        uint32_t i = (it->qhead + k) % it->qsize;
        if (data) {
            sub_val *src = &it->dq[i];
            if (k < drop)
                sub_dv_release_queued(e, &src->dv, &src->inl);
            else
                sub_dv_move(&((sub_val *)q)[k - drop].dv, &((sub_val *)q)[k - drop].inl, &src->dv,
                            &src->inl);
        } else if (k < drop) {
            sub_evrec_put(e, it->eq[i]);
        } else {
            ((sub_evrec **)q)[k - drop] = it->eq[i];
        }
    }
    if (drop && data && n > 1)
        set_overflow(&((sub_val *)q)[0].dv); /* values were lost before it */
    uas_free(data ? (void *)it->dq : (void *)it->eq, it->qsize * esz);
    sub_mem_give(e, (size_t)it->qsize * esz);
    if (data)
        it->dq = q;
    else
        it->eq = q;
    it->qsize = n;
    it->qhead = 0;
    it->qcount -= drop;
    *dropped = drop;
    return UAS_GOOD;
}

/* Queue slots are reserved before a queue grows, so the queues of all
 * items stay within max_queued_per_subscription and the server-wide
 * max_queued_notifications: a request for more is revised down to what
 * is left (Part 4 lets the server revise queueSize), and an item that
 * cannot get one slot is refused. *qs becomes the size to use; *grown the
 * slots reserved beyond the current queue (to release if resizing fails). */
static uas_status reserve_slots(sub_item *it, uint32_t *qs, uint32_t *grown)
{
    sub_sub *s = it->sub;
    uas_sub_engine *e = s->e;
    const uas_sub_limits *l = &e->cfg.limits;
    *grown = 0;
    if (*qs <= it->qsize)
        return UAS_GOOD; /* shrinking: released once the queue is smaller */
    uint32_t need = *qs - it->qsize;
    uint32_t per_sub = l->max_queued_per_subscription;
    if (per_sub) {
        uint32_t left = s->slots < per_sub ? per_sub - s->slots : 0;
        if (need > left)
            need = left;
    }
    uint32_t got =
        need ? sub_reserve_upto(&e->shared->slots, need, l->max_queued_notifications) : 0;
    if (got < *qs - it->qsize) {
        bool sub_full = per_sub && s->slots + got >= per_sub;
        sub_limit_hit(e,
                      sub_full ? "queued notifications per subscription"
                               : "queued notifications of the server",
                      sub_full ? per_sub : l->max_queued_notifications);
    }
    if (it->qsize + got == 0)
        return UAS_BAD_TOO_MANY_MONITORED_ITEMS;
    s->slots += got;
    *grown = got;
    *qs = it->qsize + got;
    return UAS_GOOD;
}

static void release_slots(sub_item *it, uint32_t n)
{
    it->sub->slots -= n;
    sub_release(&it->sub->e->shared->slots, n);
}

uas_status sub_item_configure(sub_item *it, const uas_monitoring_parameters *p, bool create,
                              int64_t now, double *rev_sampling, uint32_t *rev_queue,
                              uas_extensionobject *filter_result, uas_arena *a)
{
    uas_sub_engine *e = it->sub->e;
    const uas_sub_limits *l = &e->cfg.limits;
    item_filter flt;
    memset(&flt, 0, sizeof(flt));
    flt.deadband = -1;
    uas_status st;
    if (it->kind == SUB_ITEM_EVENT) {
#ifdef UAS_MINIMAL
        /* The minimal profile has no events and no event filters. */
        (void)filter_result, (void)a;
        return UAS_BAD_MONITORED_ITEM_FILTER_UNSUPPORTED;
#else
        if (!filter_is(&p->filter, UAS_TYPE(EVENT_FILTER)))
            return p->filter.encoding == UAS_EXTOBJ_EMPTY ? UAS_BAD_EVENT_FILTER_INVALID
                                                          : UAS_BAD_FILTER_NOT_ALLOWED;
        st = sub_filter_check(p->filter.content.decoded.data, l, filter_result, a);
        if (uas_is_bad(st))
            return st;
        flt.efilter = uas_new(UAS_TYPE(EVENT_FILTER));
        if (!flt.efilter || uas_copy(p->filter.content.decoded.data, flt.efilter,
                                     UAS_TYPE(EVENT_FILTER)) != UAS_GOOD) {
            uas_free(flt.efilter, sizeof(uas_event_filter));
            return UAS_BAD_OUT_OF_MEMORY;
        }
#endif
    } else if ((st = data_filter(it, &p->filter, &flt)) != UAS_GOOD) {
        return st;
    }

    double si = 0;
    if (it->kind == SUB_ITEM_DATA) {
        si = p->sampling_interval;
        if (isnan(si) || si < 0)
            si = it->sub->interval; /* -1: the publishing interval */
        if (!(si == 0 && it->pushed))
            si = revise_interval(si, l->min_sampling_interval, l->max_sampling_interval);
    }
    uint32_t qs = p->queue_size, qmax;
    if (it->kind == SUB_ITEM_DATA) {
        qmax = l->max_queue_size ? l->max_queue_size : 1;
        if (qs == 0)
            qs = 1;
    } else {
        qmax = l->max_event_queue_size ? l->max_event_queue_size : 1;
        if (qs == 0)
            qs = l->default_event_queue_size ? l->default_event_queue_size : 1;
    }
    if (qs > qmax)
        qs = qmax;
    uint32_t dropped = 0, grown = 0;
    uint32_t old_qsize = it->qsize;
    if ((create || qs != it->qsize) && (st = reserve_slots(it, &qs, &grown)) == UAS_GOOD &&
        (st = queue_resize(it, qs, &dropped)) != UAS_GOOD)
        release_slots(it, grown);
    if (st == UAS_GOOD && qs < old_qsize)
        release_slots(it, old_qsize - qs);
    if (st != UAS_GOOD) {
        uas_delete(flt.efilter, UAS_TYPE(EVENT_FILTER));
        return st;
    }

    /* Nothing can fail from here on: apply. */
    it->client_handle = p->client_handle;
    it->discard_oldest = p->discard_oldest;
    it->trigger = flt.trigger;
    it->deadband_type = flt.deadband_type;
    it->deadband_value = flt.deadband_value;
    it->deadband = flt.deadband;
    if (flt.efilter) {
        uas_delete(it->efilter, UAS_TYPE(EVENT_FILTER));
        it->efilter = flt.efilter;
    }
    int64_t old_ms = it->sampling_ms;
    it->sampling_interval = si;
    it->sampling_ms = (int64_t)si;
    if (!create && it->mode != UAS_MONITORING_MODE_DISABLED && it->kind == SUB_ITEM_DATA &&
        old_ms != it->sampling_ms) {
        if (it->pushed) {
            if (it->next_sample_at > now + it->sampling_ms)
                it->next_sample_at = now + it->sampling_ms;
            if (sub_timer_armed(&it->sample_timer))
                sub_wheel_arm(&e->wheel, &it->sample_timer, it->next_sample_at);
        } else {
            sub_wheel_arm(&e->wheel, &it->sample_timer, now + it->sampling_ms);
        }
    }
#ifndef UAS_MINIMAL
    if (dropped && it->kind == SUB_ITEM_EVENT)
        event_overflow(it, now); /* a smaller queue lost events too */
#endif
    *rev_sampling = si;
    *rev_queue = qs;
    return UAS_GOOD;
}

/* ---- the queue ---- */

/* TimestampsToReturn applied to a queued copy; the server timestamp is the
 * sampling time when the source did not give one. */
static void apply_timestamps(sub_item *it, uas_datavalue *dv, int64_t now)
{
    bool src =
        it->ttr == UAS_TIMESTAMPS_TO_RETURN_SOURCE || it->ttr == UAS_TIMESTAMPS_TO_RETURN_BOTH;
    bool srv =
        it->ttr == UAS_TIMESTAMPS_TO_RETURN_SERVER || it->ttr == UAS_TIMESTAMPS_TO_RETURN_BOTH;
    if (!src)
        dv->has_source_timestamp = dv->has_source_picoseconds = false;
    if (!srv) {
        dv->has_server_timestamp = dv->has_server_picoseconds = false;
    } else if (!dv->has_server_timestamp) {
        dv->server_timestamp = sub_utc(it->sub->e, now);
        dv->has_server_timestamp = true;
    }
}

/* Part 4, 5.12.1.5: a full queue drops the oldest entry (the next one gets
 * the overflow bit) or overwrites the newest (which gets it); a queue of
 * one is a plain "latest value" buffer without the bit. Returns the slot
 * (released, empty) to fill and whether the new entry gets the bit. */
static uint32_t queue_slot(sub_item *it, bool *overflow_new, bool *discarded)
{
    *overflow_new = *discarded = false;
    if (it->qcount < it->qsize)
        return (it->qhead + it->qcount++) % it->qsize;
    *discarded = true;
    if (it->qsize == 1)
        return it->qhead;
    if (it->discard_oldest) {
        uint32_t old = it->qhead;
        it->qhead = (it->qhead + 1) % it->qsize;
        return old; /* the ring is full: the oldest slot is the new tail */
    }
    *overflow_new = true;
    return (it->qhead + it->qcount - 1) % it->qsize;
}

static void enqueue_value(sub_item *it, const uas_datavalue *src, int64_t now)
{
    bool overflow_new, discarded;
    uint32_t i = queue_slot(it, &overflow_new, &discarded);
    sub_val *slot = &it->dq[i];
    if (discarded)
        sub_dv_release_queued(it->sub->e, &slot->dv, &slot->inl);
    if (discarded && it->qsize > 1 && it->discard_oldest)
        set_overflow(&it->dq[it->qhead].dv);
    /* A value the memory budget (or the heap) cannot take is lost: the
     * client gets its place with BadOutOfMemory, and the queue does not
     * grow past what was reserved for it. */
    if (sub_dv_store_queued(it->sub->e, &slot->dv, &slot->inl, src) != UAS_GOOD) {
        memset(&slot->dv, 0, sizeof(slot->dv));
        memset(&slot->inl, 0, sizeof(slot->inl));
        slot->dv.status = UAS_BAD_OUT_OF_MEMORY;
        slot->dv.has_status = true;
    }
    apply_timestamps(it, &slot->dv, now);
    if (overflow_new)
        set_overflow(&slot->dv);
}

static void make_ready(sub_item *it)
{
    if (!sub_list_linked(&it->ready_link))
        sub_list_push_back(&it->sub->ready, &it->ready_link);
}

/* Part 4, 5.12.1.6: a reporting triggering item that queues a
 * notification makes its linked Sampling items report their queues. Links
 * are item ids resolved now, so a deleted target is simply skipped. */
static void notify(sub_item *it)
{
    if (it->mode == UAS_MONITORING_MODE_REPORTING) {
        make_ready(it);
        for (uint32_t k = 0; k < it->nlinks; k++) {
            sub_item *t = sub_map_get(&it->sub->item_map, it->links[k]);
            if (t && t->mode == UAS_MONITORING_MODE_SAMPLING && (t->qcount > 0 || t->ovf)) {
                t->triggered = true;
                make_ready(t);
            }
        }
    } else if (it->triggered) {
        make_ready(it);
    }
}

/* ---- the DataChangeFilter ---- */

static bool num_at(const uas_variant *v, size_t i, double *out)
{
    if (!v->type || !v->data)
        return false;
    const uint8_t *p = (const uint8_t *)v->data + i * v->type->size;
    switch (v->type->kind) {
    case UAS_BUILTIN_SBYTE:
        *out = *(const int8_t *)p;
        return true;
    case UAS_BUILTIN_BYTE:
        *out = *(const uint8_t *)p;
        return true;
    case UAS_BUILTIN_INT16:
        *out = *(const int16_t *)p;
        return true;
    case UAS_BUILTIN_UINT16:
        *out = *(const uint16_t *)p;
        return true;
    case UAS_BUILTIN_INT32:
        *out = *(const int32_t *)p;
        return true;
    case UAS_BUILTIN_UINT32:
        *out = *(const uint32_t *)p;
        return true;
    case UAS_BUILTIN_INT64:
        *out = (double)*(const int64_t *)p;
        return true;
    case UAS_BUILTIN_UINT64:
        *out = (double)*(const uint64_t *)p;
        return true;
    case UAS_BUILTIN_FLOAT:
        *out = *(const float *)p;
        return true;
    case UAS_BUILTIN_DOUBLE:
        *out = *(const double *)p;
        return true;
    default:
        return false;
    }
}

/* Part 8, 6.2: for arrays, one element beyond the deadband reports the
 * whole array; a change of type or length always reports. */
static bool beyond_deadband(const uas_variant *a, const uas_variant *b, double db)
{
    if (a->type != b->type || a->is_array != b->is_array)
        return true;
    size_t n = a->is_array ? a->array_length : 1;
    if (a->is_array && b->array_length != n)
        return true;
    for (size_t i = 0; i < n; i++) {
        double x, y;
        if (!num_at(a, i, &x) || !num_at(b, i, &y))
            return !uas_equal(a, b, T_VARIANT);
        if (fabs(x - y) > db)
            return true;
    }
    return false;
}

static uas_status status_of(const uas_datavalue *dv)
{
    return dv->has_status ? dv->status : UAS_GOOD;
}

static bool data_changed(const sub_item *it, const uas_datavalue *old, const uas_datavalue *nv)
{
    if (status_of(old) != status_of(nv))
        return true;
    if (it->trigger == UAS_DATA_CHANGE_TRIGGER_STATUS)
        return false;
    if (old->has_value != nv->has_value)
        return true;
    if (nv->has_value && (it->deadband >= 0 ? beyond_deadband(&old->value, &nv->value, it->deadband)
                                            : !uas_equal(&old->value, &nv->value, T_VARIANT)))
        return true;
    if (it->trigger != UAS_DATA_CHANGE_TRIGGER_STATUS_VALUE_TIMESTAMP)
        return false;
    return old->has_source_timestamp != nv->has_source_timestamp ||
           old->source_timestamp != nv->source_timestamp ||
           old->has_source_picoseconds != nv->has_source_picoseconds ||
           old->source_picoseconds != nv->source_picoseconds;
}

/* ---- sampling ---- */

/* Returns whether the sample was queued (it passed the filter). */
static bool sample(sub_item *it, const uas_datavalue *dv, int64_t now)
{
    if (it->has_last && !data_changed(it, &it->last.dv, dv))
        return false;
    sub_dv_release(&it->last.dv, &it->last.inl);
    it->has_last = sub_dv_store(&it->last.dv, &it->last.inl, dv) == UAS_GOOD;
    enqueue_value(it, dv, now);
    notify(it);
    return true;
}

static bool read_and_sample(sub_item *it, int64_t now)
{
    uas_sub_engine *e = it->sub->e;
    if (!e->cfg.cb.read_value)
        return false;
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    e->cfg.cb.read_value(e->cfg.ud, &it->node, it->attr, &it->index_range, &dv, &e->scratch);
    bool queued = sample(it, &dv, now);
    sub_scratch_reset(e);
    return queued;
}

static void drop_pending(sub_item *it)
{
    if (it->pending == SUB_PENDING_VALUE)
        sub_dv_release(&it->pending_v.dv, &it->pending_v.inl);
    it->pending = SUB_PENDING_NONE;
}

void sub_item_timer_fn(sub_timer *t, int64_t now)
{
    sub_item *it = SUB_CONTAINER(t, sub_item, sample_timer);
    uas_sub_engine *e = it->sub->e;
    if (it->mode == UAS_MONITORING_MODE_DISABLED)
        return;
    if (!it->pushed) {
        read_and_sample(it, now);
        sub_wheel_arm(&e->wheel, t, sub_next_period(t->deadline, it->sampling_ms, now));
        return;
    }
    /* A pushed item throttled by its sampling interval: take the latest
     * change now, then no other before one more interval. */
    if (it->pending == SUB_PENDING_VALUE)
        sample(it, &it->pending_v.dv, now);
    else if (it->pending == SUB_PENDING_READ)
        read_and_sample(it, now);
    drop_pending(it);
    it->next_sample_at = now + it->sampling_ms;
}

void sub_item_push(sub_item *it, const uas_datavalue *dv, int64_t now)
{
    if (it->mode == UAS_MONITORING_MODE_DISABLED || !it->pushed)
        return;
    /* An index range is applied by read_value, so such items re-read. */
    bool ranged = it->index_range.length > 0;
    if (it->sampling_ms == 0 || now >= it->next_sample_at) {
        drop_pending(it);
        sub_wheel_cancel(&it->sub->e->wheel, &it->sample_timer);
        if (ranged)
            read_and_sample(it, now);
        else
            sample(it, dv, now);
        it->next_sample_at = now + it->sampling_ms;
        return;
    }
    drop_pending(it);
    it->pending = SUB_PENDING_READ;
    if (!ranged && sub_dv_store(&it->pending_v.dv, &it->pending_v.inl, dv) == UAS_GOOD)
        it->pending = SUB_PENDING_VALUE;
    if (!sub_timer_armed(&it->sample_timer))
        sub_wheel_arm(&it->sub->e->wheel, &it->sample_timer, it->next_sample_at);
}

void sub_item_start(sub_item *it, int64_t now)
{
    if (it->mode == UAS_MONITORING_MODE_DISABLED || it->kind != SUB_ITEM_DATA)
        return;
    read_and_sample(it, now); /* the first sample is always reported */
    if (it->pushed)
        it->next_sample_at = now + it->sampling_ms;
    else
        sub_wheel_arm(&it->sub->e->wheel, &it->sample_timer, now + it->sampling_ms);
}

static void queue_clear(sub_item *it)
{
    for (uint32_t k = 0; k < it->qcount; k++) {
        uint32_t i = (it->qhead + k) % it->qsize;
        if (it->kind == SUB_ITEM_DATA)
            sub_dv_release_queued(it->sub->e, &it->dq[i].dv, &it->dq[i].inl);
        else
            sub_evrec_put(it->sub->e, it->eq[i]);
    }
    it->qhead = it->qcount = 0;
    sub_evrec_put(it->sub->e, it->ovf);
    it->ovf = NULL;
}

/* Disabled: no sampling, nothing queued, and the next enable starts over
 * with a first sample (Part 4, 5.12.1.3 / 5.12.4). */
static void stop(sub_item *it)
{
    sub_wheel_cancel(&it->sub->e->wheel, &it->sample_timer);
    queue_clear(it);
    drop_pending(it);
    sub_dv_release(&it->last.dv, &it->last.inl);
    it->has_last = false;
    it->triggered = false;
    sub_list_remove(&it->ready_link);
}

void sub_item_set_mode(sub_item *it, uas_monitoring_mode mode, int64_t now)
{
    uint8_t old = it->mode;
    if (old == mode)
        return;
    it->mode = (uint8_t)mode;
    if (mode == UAS_MONITORING_MODE_DISABLED) {
        stop(it);
    } else if (old == UAS_MONITORING_MODE_DISABLED) {
        sub_item_start(it, now);
    } else if (mode == UAS_MONITORING_MODE_REPORTING) {
        it->triggered = false;
        if (it->qcount > 0 || it->ovf)
            make_ready(it);
    } else if (!it->triggered) {
        sub_list_remove(&it->ready_link);
    }
}

bool sub_item_resync(sub_item *it, int64_t now)
{
    if (it->mode == UAS_MONITORING_MODE_DISABLED || !it->pushed)
        return false;
    if (it->sampling_ms == 0 || now >= it->next_sample_at) {
        drop_pending(it);
        sub_wheel_cancel(&it->sub->e->wheel, &it->sample_timer);
        bool queued = read_and_sample(it, now);
        it->next_sample_at = now + it->sampling_ms;
        return queued;
    }
    /* Inside the sampling interval: look again when it ends (a pending
     * value, if any, is at least as new as what a read would give). */
    if (it->pending == SUB_PENDING_NONE)
        it->pending = SUB_PENDING_READ;
    if (!sub_timer_armed(&it->sample_timer))
        sub_wheel_arm(&it->sub->e->wheel, &it->sample_timer, it->next_sample_at);
    return false;
}

void sub_item_resend_last(sub_item *it, int64_t now)
{
    if (it->mode == UAS_MONITORING_MODE_DISABLED || it->kind != SUB_ITEM_DATA || !it->has_last)
        return;
    enqueue_value(it, &it->last.dv, now);
    notify(it);
}

#ifndef UAS_MINIMAL
/* The select clauses of the item's filter evaluated on ev, in a pooled
 * record (NULL: filtered out by the where clause, or out of memory; then
 * *lost tells whether the event passed and was lost for want of memory).
 * The record and its spilled fields are charged to the memory budget;
 * `force` charges them whatever the limit. */
static sub_evrec *select_fields(sub_item *it, const uas_sub_event *ev, bool where, bool force,
                                bool *lost)
{
    uas_sub_engine *e = it->sub->e;
    /* Evaluate in the scratch arena: the where clause leaves temporaries
     * there, and the selected values point into the event, which the
     * reporter owns only for this call. Only a passing event is copied,
     * deep, into a record. */
    size_t n = it->efilter->select_clauses_count;
    uas_variant *tmp = n ? uas_arena_calloc(&e->scratch, n, sizeof(uas_variant)) : NULL;
    sub_evrec *r = NULL;
    if ((n == 0 || tmp) &&
        (!where || sub_filter_match(&it->efilter->where_clause, ev, &e->cfg.limits, &e->scratch)) &&
        sub_filter_select(it->efilter, ev, tmp, &e->scratch) == UAS_GOOD)
        r = sub_evrec_get(e);
    bool passed = r != NULL;
    bool ok = passed;
    if (ok && n) {
        r->fields = uas_arena_alloc(&r->arena, n * sizeof(uas_variant));
        ok = r->fields != NULL;
        r->n = (uint32_t)n;
    }
    for (size_t i = 0; ok && i < n; i++)
        ok = uas_copy_arena(&tmp[i], &r->fields[i], T_VARIANT, &r->arena) == UAS_GOOD;
    sub_scratch_reset(e);
    if (ok) {
        size_t bytes = SUB_EVREC_SIZE + r->arena.heap_total;
        if (force)
            sub_mem_force(e, bytes);
        else
            ok = sub_mem_take(e, bytes);
        if (ok)
            r->charged = bytes;
    }
    if (!ok && r) {
        sub_evrec_put(e, r);
        r = NULL;
    }
    *lost = passed && !ok;
    return r;
}

#endif

static void queue_event(sub_item *it, const uas_sub_event *ev, bool where, int64_t now)
{
#ifdef UAS_MINIMAL
    (void)it, (void)ev, (void)where, (void)now;
#else
    if (it->mode == UAS_MONITORING_MODE_DISABLED || !it->efilter)
        return;
    bool lost;
    sub_evrec *r = select_fields(it, ev, where, false, &lost);
    if (!r) {
        /* Lost for want of memory: reported like a queue overflow (Part 4,
         * 5.12.1.5), so the queue never grows past the budget. */
        if (lost) {
            event_overflow(it, now);
            notify(it);
        }
        return;
    }
    bool overflow_new, discarded;
    uint32_t i = queue_slot(it, &overflow_new, &discarded);
    if (discarded)
        sub_evrec_put(it->sub->e, it->eq[i]);
    it->eq[i] = r;
    if (discarded)
        event_overflow(it, now);
    notify(it);
#endif
}

void sub_item_event(sub_item *it, const uas_sub_event *ev, int64_t now)
{
    queue_event(it, ev, true, now);
}

void sub_item_event_unfiltered(sub_item *it, const uas_sub_event *ev, int64_t now)
{
    queue_event(it, ev, false, now);
}

#ifndef UAS_MINIMAL
/* ---- EventQueueOverflowEventType (Part 4, 5.12.1.5) ---- */

enum {
    NS0_BASE_EVENT_TYPE = 2041,
    NS0_SERVER = 2253,
    NS0_EVENT_QUEUE_OVERFLOW_EVENT_TYPE = 3035,
};

typedef struct ovf_event {
    uas_sub_event base;
    uint8_t event_id[16];
    uas_datetime time;
} ovf_event;

static bool ovf_is_of_type(const uas_sub_event *ev, const uas_nodeid *type)
{
    (void)ev;
    return type->ns == 0 && type->kind == UAS_NODEID_NUMERIC &&
           (type->id.numeric == NS0_BASE_EVENT_TYPE ||
            type->id.numeric == NS0_EVENT_QUEUE_OVERFLOW_EVENT_TYPE);
}

static uas_status put(uas_variant *out, uas_arena *a, const void *v, size_t size, const uas_type *t)
{
    void *p = uas_arena_alloc(a, size);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(p, v, size);
    uas_variant_set_scalar(out, p, t);
    return UAS_GOOD;
}

uas_status uas_sub_base_event_field(const uas_base_event_fields *f,
                                    const uas_simple_attribute_operand *op, uas_variant *out,
                                    uas_arena *a)
{
    if (op->attribute_id != UAS_SUB_ATTR_VALUE || op->browse_path_count != 1 ||
        op->browse_path[0].ns != 0)
        return UAS_BAD_NO_DATA;
    const uas_string *name = &op->browse_path[0].name;
    if (uas_string_eq_cstr(name, "EventId")) {
        /* Points into the event: the selected fields are deep-copied for
         * the queue. */
        uas_bytestring b = {16, (uint8_t *)f->event_id};
        return put(out, a, &b, sizeof(b), UAS_TYPE(BYTE_STRING));
    }
    if (uas_string_eq_cstr(name, "EventType"))
        return put(out, a, &f->event_type, sizeof(uas_nodeid), UAS_TYPE(NODE_ID));
    if (uas_string_eq_cstr(name, "SourceNode"))
        return put(out, a, &f->source_node, sizeof(uas_nodeid), UAS_TYPE(NODE_ID));
    if (uas_string_eq_cstr(name, "SourceName")) {
        uas_string n = uas_string_from(f->source_name);
        return put(out, a, &n, sizeof(n), UAS_TYPE(STRING));
    }
    if (uas_string_eq_cstr(name, "Time"))
        return put(out, a, &f->time, sizeof(f->time), UAS_TYPE(DATE_TIME));
    if (uas_string_eq_cstr(name, "ReceiveTime"))
        return put(out, a, &f->receive_time, sizeof(f->receive_time), UAS_TYPE(DATE_TIME));
    if (uas_string_eq_cstr(name, "Message")) {
        uas_localizedtext t = {uas_string_from("en"),
                               uas_string_from(f->message ? f->message : "")};
        return put(out, a, &t, sizeof(t), UAS_TYPE(LOCALIZED_TEXT));
    }
    if (uas_string_eq_cstr(name, "Severity"))
        return put(out, a, &f->severity, sizeof(f->severity), UAS_TYPE(UINT16));
    return UAS_BAD_NO_DATA;
}

/* The BaseEventType fields of the event; EventQueueOverflowEventType adds
 * none. The engine makes this event itself, so it answers without the
 * address space: a field of another type is null like any missing one. */
static uas_status ovf_field(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                            uas_variant *out, uas_arena *a)
{
    const ovf_event *o = (const ovf_event *)ev;
    const uas_nodeid *td = &op->type_definition_id;
    bool known_type = (td->ns == 0 && td->kind == UAS_NODEID_NUMERIC && td->id.numeric == 0) ||
                      ovf_is_of_type(ev, td);
    if (!known_type)
        return UAS_BAD_NO_DATA;
    uas_base_event_fields f = {
        .event_id = o->event_id,
        .event_type = uas_nodeid_numeric(0, NS0_EVENT_QUEUE_OVERFLOW_EVENT_TYPE),
        .source_node = uas_nodeid_numeric(0, NS0_SERVER),
        .source_name = "Server",
        .message = "Events were lost: the queue overflowed",
        .time = o->time,
        .receive_time = o->time,
        .severity = 100, /* low: the client learns of a loss, nothing failed */
    };
    return uas_sub_base_event_field(&f, op, out, a);
}

/* Events were lost: report it with one EventQueueOverflowEventType event
 * beside the queue, which the where clause does not filter (Part 4,
 * 7.22.3) and which is not repeated while one is waiting. When memory
 * runs out, the loss goes unreported, as the lost events do. */
static void event_overflow(sub_item *it, int64_t now)
{
    if (it->ovf || !it->efilter)
        return;
    ovf_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.base.get_field = ovf_field;
    ev.base.is_of_type = ovf_is_of_type;
    uas_random_bytes(ev.event_id, sizeof(ev.event_id));
    ev.time = sub_utc(it->sub->e, now);
    /* Counted past the limit: one per item at most, and the client must
     * learn of the loss. */
    bool lost;
    it->ovf = select_fields(it, &ev.base, false, true, &lost);
}

#endif

/* ---- lifecycle ---- */

void sub_item_delete(sub_item *it)
{
    sub_sub *s = it->sub;
    uas_sub_engine *e = s->e;
    stop(it);
    sub_watch_detach(e, it);
    sub_map_remove(&s->item_map, it->id, it);
    sub_list_remove(&it->sub_link);
    s->item_count--;
    e->nitems--;
    sub_release(&e->shared->items, 1);
    release_slots(it, it->qsize);
    sub_mem_give(e, (size_t)it->qsize *
                        (it->kind == SUB_ITEM_DATA ? sizeof(sub_val) : sizeof(sub_evrec *)));
    uas_free(it->dq, it->kind == SUB_ITEM_DATA ? it->qsize * sizeof(sub_val) : 0);
    uas_free(it->eq, it->kind == SUB_ITEM_EVENT ? it->qsize * sizeof(*it->eq) : 0);
    uas_delete(it->efilter, UAS_TYPE(EVENT_FILTER));
    uas_free(it->links, it->links_cap * sizeof(uint32_t));
    uas_clear(&it->node, &uas_types[UAS_TYPES_NODE_ID]);
    uas_clear(&it->index_range, &uas_types[UAS_TYPES_STRING]);
    uas_free(it, sizeof(*it));
}
