/* The subscription engine: lifecycle of the engine and of its sessions,
 * the pools that keep the steady state free of malloc, engine-owned
 * DataValues, the index of monitored nodes and the entry points the
 * address space calls (value changes, events). */
#include <string.h>

#include <ua/codec.h>
#include <ua/log.h>
#include <ua/membudget.h>

#include "sub_internal.h"

void uas_sub_config_default(uas_sub_config *c)
{
    memset(c, 0, sizeof(*c));
    uas_sub_limits *l = &c->limits;
    l->min_publishing_interval = 50;
    l->max_publishing_interval = 3600000;
    l->min_sampling_interval = 50;
    l->max_sampling_interval = 3600000;
    l->max_keep_alive_count = 10000;
    l->max_lifetime_count = 30000;
    l->max_notifications_per_publish = 10000;
    l->max_subscriptions = 10000;
    l->max_subscriptions_per_session = 100;
    l->max_monitored_items = 1000000;
    l->max_items_per_subscription = 100000;
    l->max_publish_requests = 20;
    l->max_retransmission = 10;
    l->max_queue_size = 1000;
    l->default_event_queue_size = 100;
    l->max_event_queue_size = 10000;
    l->max_triggering_links = 1000;
    l->max_operations = 0;
    l->max_filter_elements = 64;
    l->max_like_pattern_length = 1024;
    l->max_filter_steps = 100000;
    l->max_filter_scratch = 65536;
    c->sub_id_first = 1;
    c->sub_id_step = 1;
    c->wheel_slots = 2048;
    c->pool_max = 4096;
}

/* ---- engine-owned DataValues ---- */

static bool fits_inline(const uas_variant *v)
{
    return v->type && !v->is_array && v->data && v->type->pointer_free &&
           v->type->size <= sizeof(sub_inl) && !v->array_dimensions;
}

static void store_inline(uas_datavalue *dst, sub_inl *inl, const uas_datavalue *src)
{
    *dst = *src;
    memcpy(inl->b, src->value.data, src->value.type->size);
    dst->value.data = inl->b;
}

uas_status sub_dv_store(uas_datavalue *dst, sub_inl *inl, const uas_datavalue *src)
{
    if (fits_inline(&src->value)) {
        store_inline(dst, inl, src);
        return UAS_GOOD;
    }
    return uas_copy(src, dst, &uas_types[UAS_TYPES_DATA_VALUE]);
}

void sub_dv_release(uas_datavalue *dv, sub_inl *inl)
{
    if (dv->value.data != (void *)inl->b)
        uas_clear(dv, &uas_types[UAS_TYPES_DATA_VALUE]);
    memset(dv, 0, sizeof(*dv));
}

void sub_dv_move(uas_datavalue *dst, sub_inl *dst_inl, uas_datavalue *src, sub_inl *src_inl)
{
    *dst = *src;
    /* inl goes along either way: a queued heap value keeps its charge
     * there (sub_dv_store_queued). */
    *dst_inl = *src_inl;
    if (src->value.data == (void *)src_inl->b)
        dst->value.data = dst_inl->b;
    memset(src, 0, sizeof(*src));
    memset(src_inl, 0, sizeof(*src_inl));
}

/* Heap values are charged about their encoded size plus the allocator's
 * bookkeeping; the figure is an estimate, the release gives back exactly
 * what was taken. */
enum { SUB_DV_OVERHEAD = 32 };

uas_status sub_dv_store_queued(uas_sub_engine *e, uas_datavalue *dst, sub_inl *inl,
                               const uas_datavalue *src)
{
    if (fits_inline(&src->value)) { /* numbers: no heap, no charge */
        store_inline(dst, inl, src);
        return UAS_GOOD;
    }
    memset(inl, 0, sizeof(*inl));
    size_t n = uas_encoded_size(src, &uas_types[UAS_TYPES_DATA_VALUE]) + SUB_DV_OVERHEAD;
    if (!sub_mem_take(e, n))
        return UAS_BAD_OUT_OF_MEMORY;
    uas_status st = uas_copy(src, dst, &uas_types[UAS_TYPES_DATA_VALUE]);
    if (st != UAS_GOOD) {
        sub_mem_give(e, n);
        return st;
    }
    inl->u[0] = n;
    return UAS_GOOD;
}

void sub_dv_release_queued(uas_sub_engine *e, uas_datavalue *dv, sub_inl *inl)
{
    if (dv->value.data != (void *)inl->b && inl->u[0])
        sub_mem_give(e, (size_t)inl->u[0]);
    sub_dv_release(dv, inl);
    memset(inl, 0, sizeof(*inl));
}

/* ---- the memory budget ---- */

enum { SUB_MEM_BATCH = 64u << 10 };

bool sub_mem_take(uas_sub_engine *e, size_t n)
{
    if (n <= e->mem_credit) {
        e->mem_credit -= n;
        return true;
    }
    size_t want = n - e->mem_credit + SUB_MEM_BATCH;
    if (!uas_budget_try_reserve(want)) {
        atomic_fetch_add_explicit(&e->shared->budget_refused, 1, memory_order_relaxed);
        UAS_LOG_LIMITED(UAS_LOG_WARN, "subscription",
                        "memory budget exhausted: %zu bytes for monitored item or publish "
                        "queues refused",
                        n);
        return false;
    }
    atomic_fetch_add_explicit(&e->shared->queue_bytes, want, memory_order_relaxed);
    e->mem_credit = e->mem_credit + want - n;
    return true;
}

void sub_mem_force(uas_sub_engine *e, size_t n)
{
    if (n <= e->mem_credit) {
        e->mem_credit -= n;
        return;
    }
    size_t want = n - e->mem_credit;
    uas_budget_charge(want);
    atomic_fetch_add_explicit(&e->shared->queue_bytes, want, memory_order_relaxed);
    e->mem_credit = 0;
}

/* Credit beyond two batches goes back to the budget. */
static void mem_return(uas_sub_engine *e, size_t keep)
{
    if (e->mem_credit <= keep)
        return;
    size_t back = e->mem_credit - keep;
    e->mem_credit = keep;
    uas_budget_release(back);
    atomic_fetch_sub_explicit(&e->shared->queue_bytes, back, memory_order_relaxed);
}

void sub_mem_give(uas_sub_engine *e, size_t n)
{
    e->mem_credit += n;
    if (e->mem_credit > 2 * SUB_MEM_BATCH)
        mem_return(e, SUB_MEM_BATCH);
}

/* ---- engine ---- */

static void session_init(uas_sub_engine *e, uas_sub_session *s, void *ud)
{
    memset(s, 0, sizeof(*s));
    s->e = e;
    s->ud = ud;
    sub_list_init(&s->subs);
    sub_list_init(&s->parked);
    sub_list_init(&s->status);
}

uas_sub_engine *uas_sub_engine_new(const uas_sub_config *cfg, int64_t now)
{
    uas_sub_engine *e = uas_calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->cfg = *cfg;
    e->shared = cfg->shared ? cfg->shared : &e->own_shared;
    if (e->cfg.sub_id_first == 0)
        e->cfg.sub_id_first = 1;
    if (e->cfg.sub_id_step == 0)
        e->cfg.sub_id_step = 1;
    e->next_sub_id = e->cfg.sub_id_first;
    sub_list_init(&e->sessions);
    sub_list_init(&e->dirty);
    sub_list_init(&e->free_parked);
    session_init(e, &e->orphans, NULL);
    e->orphans.orphans = true;
    uas_arena_init(&e->scratch, e->scratch_mem, sizeof(e->scratch_mem), 0);
    uint32_t nseq = e->cfg.limits.max_retransmission ? e->cfg.limits.max_retransmission : 1;
    e->seq_buf = uas_calloc(nseq, sizeof(uint32_t));
    if (!e->seq_buf || sub_wheel_init(&e->wheel, e->cfg.wheel_slots, now) != UAS_GOOD) {
        uas_free(e->seq_buf, nseq * sizeof(uint32_t));
        uas_free(e, sizeof(*e));
        return NULL;
    }
    return e;
}

static void session_free_subs(uas_sub_session *s)
{
    sub_list *n;
    while ((n = sub_list_first(&s->subs)) != NULL)
        sub_delete(SUB_CONTAINER(n, sub_sub, session_link));
}

static void session_clear(uas_sub_session *s, bool answer, int64_t now)
{
    uas_sub_engine *e = s->e;
    sub_list *n;
    sub_parked *p;
    while ((p = sub_parked_pop(s)) != NULL) {
        if (answer)
            sub_answer_error(e, p, UAS_BAD_SESSION_CLOSED, now);
        else
            sub_parked_put(e, p);
    }
    while ((n = sub_list_first(&s->status)) != NULL) {
        sub_list_remove(n);
        uas_free(SUB_CONTAINER(n, sub_status, link), sizeof(sub_status));
    }
    s->status_count = 0;
    sub_list_remove(&s->dirty_link);
}

void uas_sub_engine_delete(uas_sub_engine *e)
{
    if (!e)
        return;
    sub_list *n;
    while ((n = sub_list_first(&e->sessions)) != NULL) {
        uas_sub_session *s = SUB_CONTAINER(n, uas_sub_session, engine_link);
        session_clear(s, false, 0);
        session_free_subs(s);
        sub_list_remove(&s->engine_link);
        uas_free(s, sizeof(*s));
    }
    session_clear(&e->orphans, false, 0);
    session_free_subs(&e->orphans);
    _Atomic uint32_t *vw = atomic_load(&e->vwatch);
    if (vw)
        uas_free(vw, SUB_VWATCH_SLOTS * sizeof(*vw));
    e->cfg.pool_max = 0; /* sub_msg_put now frees */
    while (e->free_msgs) {
        sub_msg *m = e->free_msgs;
        e->free_msgs = m->next_free;
        e->nfree_msgs--;
        sub_msg_put(e, m);
    }
    while (e->free_evrecs) {
        sub_evrec *r = e->free_evrecs;
        e->free_evrecs = r->next_free;
        uas_free(r, SUB_EVREC_SIZE);
    }
    e->nfree_evrecs = 0;
    while ((n = sub_list_first(&e->free_parked)) != NULL) {
        sub_list_remove(n);
        uas_free(SUB_CONTAINER(n, sub_parked, link), sizeof(sub_parked));
    }
    uint32_t nseq = e->cfg.limits.max_retransmission ? e->cfg.limits.max_retransmission : 1;
    uas_free(e->seq_buf, nseq * sizeof(uint32_t));
    sub_map_free(&e->subs_by_id);
    sub_map_free(&e->watches);
    sub_wheel_free(&e->wheel);
    uas_arena_free(&e->scratch);
    mem_return(e, 0); /* every queue is gone: what is left is credit */
    uas_free(e, sizeof(*e));
}

uas_datetime sub_utc(uas_sub_engine *e, int64_t now)
{
    if (e->cfg.cb.utc_now)
        return e->cfg.cb.utc_now(e->cfg.ud, now);
    return uas_datetime_now();
}

void sub_scratch_reset(uas_sub_engine *e)
{
    uas_arena_reset(&e->scratch);
}

void sub_mark_dirty(uas_sub_session *s)
{
    if (!sub_list_linked(&s->dirty_link))
        sub_list_push_back(&s->e->dirty, &s->dirty_link);
}

int64_t uas_sub_engine_tick(uas_sub_engine *e, int64_t now)
{
    /* Timers only update state and mark sessions dirty; the Publish
     * requests are handed out afterwards, so subscriptions that fell due
     * in the same millisecond compete by priority, not by timer order. */
    sub_wheel_advance(&e->wheel, now);
    sub_evrec_trim(e, now);
    sub_list *n;
    while ((n = sub_list_first(&e->dirty)) != NULL) {
        sub_list_remove(n);
        sub_session_dispatch(SUB_CONTAINER(n, uas_sub_session, dirty_link), now);
    }
    return sub_wheel_next(&e->wheel);
}

int64_t uas_sub_engine_next_deadline(const uas_sub_engine *e)
{
    return sub_wheel_next(&e->wheel);
}

void uas_sub_engine_get_stats(const uas_sub_engine *e, uas_sub_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->sessions = e->nsessions;
    out->subscriptions = e->nsubs;
    out->monitored_items = e->nitems;
    out->parked_publishes = e->nparked;
    out->watched_nodes = e->nwatches;
    out->timers = (uint32_t)e->wheel.count;
    out->pooled_messages = e->nfree_msgs;
    out->messages_sent = e->messages_sent;
    out->keep_alives_sent = e->keep_alives_sent;
    out->subscriptions_created = e->subs_created;
    out->orphans = e->norphans;
}

const uas_sub_shared *uas_sub_engine_shared(const uas_sub_engine *e)
{
    return e->shared;
}

bool sub_reserve(atomic_uint *count, uint32_t n, uint32_t max)
{
    unsigned cur = atomic_load_explicit(count, memory_order_relaxed);
    do {
        if (max && (n > max || cur > max - n))
            return false;
    } while (!atomic_compare_exchange_weak_explicit(count, &cur, cur + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

uint32_t sub_reserve_upto(atomic_uint *count, uint32_t n, uint32_t max)
{
    unsigned cur = atomic_load_explicit(count, memory_order_relaxed);
    uint32_t take;
    do {
        take = n;
        if (max) {
            if (cur >= max)
                return 0;
            if (take > max - cur)
                take = max - cur;
        }
    } while (!atomic_compare_exchange_weak_explicit(count, &cur, cur + take, memory_order_relaxed,
                                                    memory_order_relaxed));
    return take;
}

void sub_release(atomic_uint *count, uint32_t n)
{
    atomic_fetch_sub_explicit(count, n, memory_order_relaxed);
}

void sub_limit_hit(uas_sub_engine *e, const char *what, uint32_t limit)
{
    atomic_fetch_add_explicit(&e->shared->refused, 1, memory_order_relaxed);
    UAS_LOG_LIMITED(UAS_LOG_WARN, "subscription", "refused: %s (limit %u)", what, limit);
}

uint32_t sub_session_items(const uas_sub_session *s)
{
    uint32_t n = 0;
    for (const sub_list *l = s->subs.next; l != &s->subs; l = l->next)
        n += SUB_CONTAINER(l, const sub_sub, session_link)->item_count;
    return n;
}

const uas_sub_limits *uas_sub_engine_limits(const uas_sub_engine *e)
{
    return &e->cfg.limits;
}

void sub_changed(uas_sub_engine *e, int64_t old_ms, int64_t new_ms)
{
    if (e->cfg.cb.sub_changed)
        e->cfg.cb.sub_changed(e->cfg.ud, (uint32_t)old_ms, (uint32_t)new_ms);
}

/* ---- pools ---- */

sub_msg *sub_msg_get(uas_sub_engine *e)
{
    sub_msg *m = e->free_msgs;
    if (m) {
        e->free_msgs = m->next_free;
        e->nfree_msgs--;
        m->next_free = NULL;
        return m;
    }
    return uas_calloc(1, sizeof(sub_msg));
}

void sub_msg_put(uas_sub_engine *e, sub_msg *m)
{
    for (uint32_t i = 0; i < m->ndc; i++)
        sub_dv_release_queued(e, &m->dc[i].value, &m->dc_inl[i]);
    for (uint32_t i = 0; i < m->nev; i++)
        sub_evrec_put(e, m->ev_rec[i]);
    m->ndc = m->nev = 0;
    if (e->nfree_msgs < e->cfg.pool_max) {
        m->next_free = e->free_msgs;
        e->free_msgs = m;
        e->nfree_msgs++;
        return;
    }
    /* The arrays hold their charge while pooled (sub_msg_arrays_size). */
    sub_mem_give(e, sub_msg_arrays_size(m->dc_cap, m->ev_cap));
    uas_free(m->dc, m->dc_cap * sizeof(*m->dc));
    uas_free(m->dc_inl, m->dc_cap * sizeof(*m->dc_inl));
    uas_free(m->ev, m->ev_cap * sizeof(*m->ev));
    uas_free(m->ev_rec, m->ev_cap * sizeof(*m->ev_rec));
    uas_free(m, sizeof(*m));
}

static uint32_t evrec_cap(const uas_sub_engine *e)
{
    return e->evrecs_peak > e->cfg.pool_max ? e->evrecs_peak : e->cfg.pool_max;
}

void sub_evrec_trim(uas_sub_engine *e, int64_t now)
{
    if (now < e->evrecs_trim_at)
        return;
    e->evrecs_trim_at = now + 1000;
    uint32_t decayed = e->evrecs_peak - e->evrecs_peak / 4;
    e->evrecs_peak = decayed > e->evrecs_in_use ? decayed : e->evrecs_in_use;
    while (e->nfree_evrecs > evrec_cap(e)) {
        sub_evrec *r = e->free_evrecs;
        e->free_evrecs = r->next_free;
        e->nfree_evrecs--;
        uas_free(r, SUB_EVREC_SIZE);
    }
}

sub_evrec *sub_evrec_get(uas_sub_engine *e)
{
    sub_evrec *r = e->free_evrecs;
    if (r) {
        e->free_evrecs = r->next_free;
        e->nfree_evrecs--;
    } else {
        r = uas_malloc(SUB_EVREC_SIZE);
        if (!r)
            return NULL;
        uas_arena_init(&r->arena, r->mem, SUB_EVREC_SIZE - offsetof(sub_evrec, mem), 0);
    }
    if (++e->evrecs_in_use > e->evrecs_peak)
        e->evrecs_peak = e->evrecs_in_use;
    r->next_free = NULL;
    r->fields = NULL;
    r->n = 0;
    r->charged = 0;
    return r;
}

void sub_evrec_put(uas_sub_engine *e, sub_evrec *r)
{
    if (!r)
        return;
    /* Spilled blocks go back to the heap at once: a pooled record is never
     * larger than SUB_EVREC_SIZE, so the pool's size bounds its memory. */
    uas_arena_free(&r->arena);
    sub_mem_give(e, r->charged);
    r->charged = 0;
    /* A record taken by another engine (before a transfer) is not counted
     * here. */
    if (e->evrecs_in_use > 0)
        e->evrecs_in_use--;
    if (e->nfree_evrecs < evrec_cap(e)) {
        r->next_free = e->free_evrecs;
        e->free_evrecs = r;
        e->nfree_evrecs++;
        return;
    }
    uas_free(r, SUB_EVREC_SIZE);
}

sub_parked *sub_parked_get(uas_sub_engine *e)
{
    sub_list *n = sub_list_first(&e->free_parked);
    sub_parked *p;
    if (n) {
        sub_list_remove(n);
        e->nfree_parked--;
        p = SUB_CONTAINER(n, sub_parked, link);
    } else {
        p = uas_malloc(sizeof(*p));
        if (!p)
            return NULL;
    }
    memset(p, 0, sizeof(*p));
    sub_timer_init(&p->timeout, sub_parked_timeout_fn);
    p->results = p->inl_results;
    return p;
}

void sub_parked_put(uas_sub_engine *e, sub_parked *p)
{
    sub_wheel_cancel(&e->wheel, &p->timeout);
    if (p->results != p->inl_results)
        uas_free(p->results, p->nresults * sizeof(uas_status));
    p->results = p->inl_results;
    p->nresults = 0;
    if (e->nfree_parked < e->cfg.pool_max) {
        sub_list_push_back(&e->free_parked, &p->link);
        e->nfree_parked++;
        return;
    }
    uas_free(p, sizeof(*p));
}

/* ---- sessions ---- */

uas_sub_session *uas_sub_session_new(uas_sub_engine *e, void *ud)
{
    uas_sub_session *s = uas_malloc(sizeof(*s));
    if (!s)
        return NULL;
    session_init(e, s, ud);
    sub_list_push_back(&e->sessions, &s->engine_link);
    e->nsessions++;
    return s;
}

void uas_sub_session_delete(uas_sub_session *s, bool delete_subscriptions, int64_t now)
{
    if (!s)
        return;
    uas_sub_engine *e = s->e;
    session_clear(s, true, now);
    if (delete_subscriptions) {
        session_free_subs(s);
    } else {
        sub_list *n;
        while ((n = sub_list_first(&s->subs)) != NULL) {
            sub_sub *sub = SUB_CONTAINER(n, sub_sub, session_link);
            sub_detach(sub);
            sub->orphaned_at = now;
            sub_attach(sub, &e->orphans);
        }
    }
    sub_list_remove(&s->engine_link);
    e->nsessions--;
    uas_free(s, sizeof(*s));
}

uint32_t uas_sub_session_subscription_count(const uas_sub_session *s)
{
    return s->sub_count;
}

void uas_sub_session_set_owner(uas_sub_session *s, const uas_sub_owner *owner)
{
    s->owner = *owner;
}

const uas_sub_owner *uas_sub_session_owner(const uas_sub_session *s)
{
    return &s->owner;
}

/* ---- orphans ---- */

static bool owned_by(const sub_sub *s, const uas_sub_owner *owner)
{
    return !owner || memcmp(&s->owner, owner, sizeof(*owner)) == 0;
}

/* The orphans list is in the order they were orphaned (sub_attach appends),
 * so the first match is the oldest. */
static sub_sub *oldest_orphan(const uas_sub_engine *e, const uas_sub_owner *owner)
{
    for (const sub_list *l = e->orphans.subs.next; l != &e->orphans.subs; l = l->next) {
        sub_sub *s = SUB_CONTAINER(l, sub_sub, session_link);
        if (owned_by(s, owner))
            return s;
    }
    return NULL;
}

uint32_t uas_sub_engine_orphans(const uas_sub_engine *e, const uas_sub_owner *owner,
                                int64_t *oldest_ms)
{
    sub_sub *old = oldest_orphan(e, owner);
    *oldest_ms = old ? old->orphaned_at : INT64_MAX;
    if (!owner)
        return e->norphans;
    uint32_t n = 0;
    for (const sub_list *l = e->orphans.subs.next; l != &e->orphans.subs; l = l->next)
        n += owned_by(SUB_CONTAINER(l, const sub_sub, session_link), owner);
    return n;
}

bool uas_sub_engine_drop_oldest_orphan(uas_sub_engine *e, const uas_sub_owner *owner, uint32_t *id)
{
    sub_sub *s = oldest_orphan(e, owner);
    if (!s)
        return false;
    *id = s->id;
    atomic_fetch_add_explicit(&e->shared->orphans_dropped, 1, memory_order_relaxed);
    sub_delete(s);
    return true;
}

sub_sub *sub_find(uas_sub_session *s, uint32_t id)
{
    sub_sub *sub = sub_map_get(&s->e->subs_by_id, id);
    return sub && sub->session == s ? sub : NULL;
}

void uas_sub_engine_drop_target(uas_sub_engine *e, uas_sub_publish_target *target)
{
    for (sub_list *sn = e->sessions.next; sn != &e->sessions; sn = sn->next) {
        uas_sub_session *s = SUB_CONTAINER(sn, uas_sub_session, engine_link);
        for (sub_list *n = s->parked.next; n != &s->parked;) {
            sub_list *next = n->next;
            sub_parked *p = SUB_CONTAINER(n, sub_parked, link);
            if (p->target == target) {
                sub_parked_unlink(p);
                sub_parked_put(e, p);
            }
            n = next;
        }
    }
}

/* ---- monitored nodes ---- */

static uint32_t hash_bytes(uint32_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u; /* FNV-1a */
    return h;
}

uint32_t uas_sub_nodeid_hash(const uas_nodeid *id)
{
    uint32_t h = hash_bytes(2166136261u, &id->ns, sizeof(id->ns));
    h = hash_bytes(h, &id->kind, 1);
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        return hash_bytes(h, &id->id.numeric, sizeof(id->id.numeric));
    case UAS_NODEID_GUID:
        return hash_bytes(h, &id->id.guid, sizeof(id->id.guid));
    default:
        return id->id.string.data && id->id.string.data != UAS_EMPTY_ARRAY
                   ? hash_bytes(h, id->id.string.data, id->id.string.length)
                   : h;
    }
}

bool uas_sub_engine_may_watch(const uas_sub_engine *e, uint32_t hash)
{
    _Atomic uint32_t *vw = atomic_load(&((uas_sub_engine *)e)->vwatch);
    return vw && atomic_load(&vw[hash & (SUB_VWATCH_SLOTS - 1)]) != 0;
}

bool sub_vwatch_ready(uas_sub_engine *e)
{
    if (atomic_load_explicit(&e->vwatch, memory_order_relaxed))
        return true;
    _Atomic uint32_t *vw = uas_calloc(SUB_VWATCH_SLOTS, sizeof(*vw));
    if (!vw)
        return false;
    atomic_store(&e->vwatch, vw);
    return true;
}

static uas_sub_watch *watch_find(uas_sub_engine *e, const uas_nodeid *node, uint32_t h)
{
    uint32_t it = 0;
    uas_sub_watch *w;
    while ((w = sub_map_next(&e->watches, h, &it)) != NULL)
        if (uas_equal(&w->node, node, &uas_types[UAS_TYPES_NODE_ID]))
            return w;
    return NULL;
}

/* Tell the address space what this node's items need now; forget the
 * watch when nothing does. */
static void watch_update(uas_sub_engine *e, uas_sub_watch *w)
{
    unsigned mask =
        (w->ndata ? UAS_SUB_WATCH_VALUE : 0u) | (w->nevents ? UAS_SUB_WATCH_EVENTS : 0u);
    if (mask != w->mask && e->cfg.cb.watch)
        e->cfg.cb.watch(e->cfg.ud, &w->node, w, mask);
    if ((mask ^ w->mask) & UAS_SUB_WATCH_VALUE) {
        /* Sequentially consistent, as the writer's publication of a value
         * and its look here: either the item's first sample (after this)
         * sees the value, or the writer sees the watch. */
        _Atomic uint32_t *slot = &atomic_load(&e->vwatch)[w->hash & (SUB_VWATCH_SLOTS - 1)];
        if (mask & UAS_SUB_WATCH_VALUE)
            atomic_fetch_add(slot, 1);
        else
            atomic_fetch_sub(slot, 1);
        atomic_thread_fence(memory_order_seq_cst);
    }
    w->mask = mask;
    if (mask == 0) {
        sub_map_remove(&e->watches, w->hash, w);
        uas_clear(&w->node, &uas_types[UAS_TYPES_NODE_ID]);
        uas_free(w, sizeof(*w));
        e->nwatches--;
    }
}

uas_sub_watch *sub_watch_get(uas_sub_engine *e, const uas_nodeid *node)
{
    uint32_t h = uas_sub_nodeid_hash(node);
    uas_sub_watch *w = watch_find(e, node, h);
    if (w)
        return w;
    w = uas_calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->hash = h;
    sub_list_init(&w->items);
    if (uas_copy(node, &w->node, &uas_types[UAS_TYPES_NODE_ID]) != UAS_GOOD ||
        sub_map_put(&e->watches, h, w) != UAS_GOOD) {
        uas_clear(&w->node, &uas_types[UAS_TYPES_NODE_ID]);
        uas_free(w, sizeof(*w));
        return NULL;
    }
    e->nwatches++;
    return w;
}

void sub_watch_forget_unused(uas_sub_engine *e, const uas_nodeid *node)
{
    uas_sub_watch *w = watch_find(e, node, uas_sub_nodeid_hash(node));
    if (w && sub_list_empty(&w->items))
        watch_update(e, w);
}

uas_status sub_watch_attach(uas_sub_engine *e, sub_item *it)
{
    if (it->kind != SUB_ITEM_EVENT && !sub_vwatch_ready(e))
        return UAS_BAD_OUT_OF_MEMORY;
    uas_sub_watch *w = sub_watch_get(e, &it->node);
    if (!w)
        return UAS_BAD_OUT_OF_MEMORY;
    sub_list_push_back(&w->items, &it->watch_link);
    it->watch = w;
    if (it->kind == SUB_ITEM_EVENT)
        w->nevents++;
    else
        w->ndata++;
    watch_update(e, w);
    return UAS_GOOD;
}

void sub_watch_detach(uas_sub_engine *e, sub_item *it)
{
    uas_sub_watch *w = it->watch;
    if (!w)
        return;
    sub_list_remove(&it->watch_link);
    it->watch = NULL;
    if (it->kind == SUB_ITEM_EVENT)
        w->nevents--;
    else
        w->ndata--;
    watch_update(e, w);
}

void uas_sub_engine_value_changed_watch(uas_sub_engine *e, uas_sub_watch *w,
                                        const uas_datavalue *dv, int64_t now)
{
    (void)e;
    for (sub_list *n = w->items.next; n != &w->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, watch_link);
        if (it->kind == SUB_ITEM_DATA)
            sub_item_push(it, dv, now);
    }
}

void uas_sub_engine_value_changed(uas_sub_engine *e, const uas_nodeid *node,
                                  const uas_datavalue *dv, int64_t now)
{
    uas_sub_watch *w = watch_find(e, node, uas_sub_nodeid_hash(node));
    if (w)
        uas_sub_engine_value_changed_watch(e, w, dv, now);
}

void uas_sub_engine_post_event_watch(uas_sub_engine *e, uas_sub_watch *w, const uas_sub_event *ev,
                                     int64_t now)
{
    (void)e;
    for (sub_list *n = w->items.next; n != &w->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, watch_link);
        if (it->kind == SUB_ITEM_EVENT)
            sub_item_event(it, ev, now);
    }
}

void uas_sub_engine_post_event(uas_sub_engine *e, const uas_nodeid *notifier,
                               const uas_sub_event *ev, int64_t now)
{
    uas_sub_watch *w = watch_find(e, notifier, uas_sub_nodeid_hash(notifier));
    if (w)
        uas_sub_engine_post_event_watch(e, w, ev, now);
}
