/* TransferSubscriptions (Part 4, 5.13.7) for one subscription: within one
 * engine, or from one engine (event loop) to another.
 *
 * A move between engines takes the subscription out of the source's
 * indexes (subscription ids, timer wheel, node watches) and puts it into
 * the target's; everything else (items, their queues and filters, the
 * retransmission queue, sequence numbers, the ready list) is plain heap
 * memory that simply changes hands. The caller holds both engines, so the
 * move is atomic for everyone who goes through an engine's lock. It is done
 * in two phases: first everything in the target that can fail (the id in
 * its map, a watch for every node, a retransmission ring of its size),
 * undone on failure; then the move itself, which cannot fail. A transfer
 * that runs out of memory therefore leaves the subscription where it was. */
#include <string.h>

#include "sub_internal.h"

static bool watched(const sub_item *it)
{
    return it->watch != NULL;
}

static void unreserve(sub_sub *s, uas_sub_engine *dst, sub_msg **rq)
{
    sub_map_remove(&dst->subs_by_id, s->id, s);
    for (sub_list *n = s->items.next; n != &s->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, sub_link);
        if (watched(it))
            sub_watch_forget_unused(dst, &it->node);
    }
    uas_free(rq, dst->cfg.limits.max_retransmission * sizeof(*rq));
}

/* Phase one: what the target needs, allocated before anything moves.
 * *rq is the target's retransmission ring when its size differs (NULL:
 * the subscription keeps its own). BadOutOfMemory, nothing reserved. */
static uas_status reserve(sub_sub *s, uas_sub_engine *dst, sub_msg ***rq)
{
    uas_sub_engine *src = s->e;
    uint32_t cap = dst->cfg.limits.max_retransmission;
    *rq = NULL;
    if (cap != src->cfg.limits.max_retransmission && cap > 0 &&
        !(*rq = uas_calloc(cap, sizeof(**rq))))
        return UAS_BAD_OUT_OF_MEMORY;
    if (sub_map_put(&dst->subs_by_id, s->id, s) != UAS_GOOD) {
        uas_free(*rq, cap * sizeof(**rq));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    for (sub_list *n = s->items.next; n != &s->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, sub_link);
        /* Everything attach needs, so that it cannot fail once reserved. */
        if (watched(it) && ((it->kind != SUB_ITEM_EVENT && !sub_vwatch_ready(dst)) ||
                            !sub_watch_get(dst, &it->node))) {
            unreserve(s, dst, *rq);
            return UAS_BAD_OUT_OF_MEMORY;
        }
    }
    return UAS_GOOD;
}

static void move_timer(uas_sub_engine *src, uas_sub_engine *dst, sub_timer *t)
{
    if (!sub_timer_armed(t))
        return;
    int64_t deadline = t->deadline;
    sub_wheel_cancel(&src->wheel, t);
    sub_wheel_arm(&dst->wheel, t, deadline);
}

/* The newest messages of the retransmission queue in the target's ring. */
static void move_rq(sub_sub *s, uas_sub_engine *dst, sub_msg **rq)
{
    uas_sub_engine *src = s->e;
    uint32_t ocap = src->cfg.limits.max_retransmission;
    uint32_t cap = dst->cfg.limits.max_retransmission;
    if (cap == ocap)
        return;
    uint32_t keep = s->rq_count < cap ? s->rq_count : cap;
    for (uint32_t k = 0; k < s->rq_count; k++) {
        sub_msg *m = s->rq[(s->rq_head + k) % ocap];
        if (k < s->rq_count - keep)
            sub_msg_put(src, m);
        else
            rq[k - (s->rq_count - keep)] = m;
    }
    uas_free(s->rq, ocap * sizeof(*s->rq));
    s->rq = rq;
    s->rq_head = 0;
    s->rq_count = keep;
}

/* Phase two: cannot fail. */
static void move(sub_sub *s, uas_sub_engine *dst, sub_msg **rq)
{
    uas_sub_engine *src = s->e;
    sub_map_remove(&src->subs_by_id, s->id, s);
    move_timer(src, dst, &s->pub_timer);
    for (sub_list *n = s->items.next; n != &s->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, sub_link);
        move_timer(src, dst, &it->sample_timer);
        if (watched(it)) {
            sub_watch_detach(src, it);
            (void)sub_watch_attach(dst, it); /* reserved: finds its watch */
        }
    }
    move_rq(s, dst, rq);
    if (src->shared != dst->shared) {
        /* Engines of different servers (tests): each keeps its own counts. */
        sub_release(&src->shared->subs, 1);
        sub_release(&src->shared->items, s->item_count);
        sub_release(&src->shared->slots, s->slots);
        atomic_fetch_add(&dst->shared->subs, 1);
        atomic_fetch_add(&dst->shared->items, s->item_count);
        atomic_fetch_add(&dst->shared->slots, s->slots);
    }
    src->nsubs--;
    src->nitems -= s->item_count;
    dst->nsubs++;
    dst->nitems += s->item_count;
    s->e = dst;
}

void uas_sub_transfer_from(uas_sub_engine *src, uint32_t sub_id, uas_sub_session *to,
                           bool send_initial_values, uas_transfer_result *r, uas_arena *a,
                           int64_t now)
{
    uas_sub_engine *dst = to->e;
    memset(r, 0, sizeof(*r));
    r->available_sequence_numbers = UAS_EMPTY_ARRAY;
    sub_sub *s = sub_map_get(&src->subs_by_id, sub_id);
    if (!s) {
        r->status_code = UAS_BAD_SUBSCRIPTION_ID_INVALID;
        return;
    }
    uas_sub_session *from = s->session;
    /* Part 4, 5.13.7: only a session of the same user takes it over. The
     * owner is compared rather than the sessions' current users because
     * an orphan has no session left to ask. A session's own subscription
     * stays its own even when it has since been activated for another user. */
    bool denied = from != to && memcmp(&s->owner, &to->owner, sizeof(s->owner)) != 0;
    /* The engines share their callbacks (one server), so either may ask. */
    if (!denied && dst->cfg.cb.may_transfer)
        denied = !dst->cfg.cb.may_transfer(dst->cfg.ud, from->orphans ? NULL : from->ud, to->ud);
    if (denied) {
        r->status_code = UAS_BAD_USER_ACCESS_DENIED;
        return;
    }
    /* The taking session's own caps hold for what it takes. */
    const uas_sub_limits *l = &dst->cfg.limits;
    if (from != to && to->sub_count >= l->max_subscriptions_per_session) {
        sub_limit_hit(dst, "subscriptions per session", l->max_subscriptions_per_session);
        r->status_code = UAS_BAD_TOO_MANY_SUBSCRIPTIONS;
        return;
    }
    if (from != to && l->max_items_per_session &&
        sub_session_items(to) + (uint64_t)s->item_count > l->max_items_per_session) {
        sub_limit_hit(dst, "monitored items per session", l->max_items_per_session);
        r->status_code = UAS_BAD_TOO_MANY_MONITORED_ITEMS;
        return;
    }
    bool moved = src != dst;
    if (moved) {
        sub_msg **rq;
        if (sub_map_get(&dst->subs_by_id, sub_id)) {
            /* Only after the ids of a loop wrapped around 2^32. */
            r->status_code = UAS_BAD_INTERNAL_ERROR;
            return;
        }
        if (reserve(s, dst, &rq) != UAS_GOOD) {
            r->status_code = UAS_BAD_OUT_OF_MEMORY;
            return;
        }
        move(s, dst, rq);
    }
    if (from != to) {
        sub_detach(s);
        sub_attach(s, to);
        sub_queue_status(from, s->id, s->next_seq, UAS_GOOD_SUBSCRIPTION_TRANSFERRED);
        sub_session_dispatch(from, now);
    }
    s->lifetime_ctr = 0;
    for (sub_list *n = s->items.next; n != &s->items; n = n->next) {
        sub_item *it = SUB_CONTAINER(n, sub_item, sub_link);
        bool fresh = moved && sub_item_resync(it, now);
        if (send_initial_values && !fresh)
            sub_item_resend_last(it, now);
    }
    r->available_sequence_numbers = sub_available_seqs(s, &r->available_sequence_numbers_count, a);
    r->status_code = UAS_GOOD;
    sub_session_dispatch(to, now);
}
