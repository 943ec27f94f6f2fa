/* The publishing side of subscriptions (Part 4, 5.13.1): the publishing
 * timer with keep-alive and lifetime counters, the session's queue of
 * parked Publish requests, NotificationMessages (drained from the item
 * queues into pooled messages) and their sequence numbers, the
 * retransmission queue (acknowledgements, Republish) and
 * StatusChangeNotifications.
 *
 * The state table of 5.13.1.2 is reduced to three variables per
 * subscription: `due` (it wants a Publish request: notifications, a
 * keep-alive or the rest of a "more notifications" message; the spec's
 * LATE state when none is parked), keep_alive_ctr and lifetime_ctr. A
 * timer only updates them and marks the session; the session then hands
 * its parked requests to the due subscriptions, highest priority first,
 * then the one due longest (Part 4, 5.13.1.1: priority decides, equal
 * priorities take turns). Keep-alives follow the first publishing cycle
 * and then every maxKeepAliveCount empty cycles after the last message of
 * any kind (the off-by-one of the literal state table is OPC Mantis 5367). */
#include <string.h>

#include "sub_internal.h"

#define MAX_PENDING_STATUS 16 /* per session; the oldest is dropped beyond */

/* ---- parked requests ---- */

void sub_parked_unlink(sub_parked *p)
{
    if (!sub_list_linked(&p->link))
        return;
    sub_list_remove(&p->link);
    p->session->parked_count--;
    p->session->e->nparked--;
}

sub_parked *sub_parked_pop(uas_sub_session *ss)
{
    sub_list *n = sub_list_first(&ss->parked);
    if (!n)
        return NULL;
    sub_parked *p = SUB_CONTAINER(n, sub_parked, link);
    sub_parked_unlink(p);
    return p;
}

/* ---- answering ---- */

static void send_response(uas_sub_engine *e, uas_sub_publish_target *target, uint32_t request_id,
                          uas_publish_response *r)
{
    if (e->cfg.cb.send_publish)
        e->cfg.cb.send_publish(e->cfg.ud, target, request_id, r);
}

static void answer(uas_sub_engine *e, sub_parked *p, sub_sub *s, uint32_t sub_id,
                   const uas_notification_message *nm, bool more, int64_t now)
{
    uas_publish_response r;
    memset(&r, 0, sizeof(r));
    r.response_header.timestamp = sub_utc(e, now);
    r.response_header.request_handle = p->request_handle;
    r.subscription_id = sub_id;
    r.available_sequence_numbers = UAS_EMPTY_ARRAY;
    if (s)
        r.available_sequence_numbers =
            sub_available_seqs(s, &r.available_sequence_numbers_count, NULL);
    r.more_notifications = more;
    r.notification_message = *nm;
    r.results_count = p->nresults;
    r.results = p->nresults ? p->results : UAS_EMPTY_ARRAY;
    send_response(e, p->target, p->request_id, &r);
    sub_parked_put(e, p);
}

void sub_answer_error(uas_sub_engine *e, sub_parked *p, uas_status st, int64_t now)
{
    uas_publish_response r;
    memset(&r, 0, sizeof(r));
    r.response_header.timestamp = sub_utc(e, now);
    r.response_header.request_handle = p->request_handle;
    r.response_header.service_result = st;
    send_response(e, p->target, p->request_id, &r);
    sub_parked_put(e, p);
}

void sub_parked_timeout_fn(sub_timer *t, int64_t now)
{
    sub_parked *p = SUB_CONTAINER(t, sub_parked, timeout);
    sub_parked_unlink(p);
    sub_answer_error(p->session->e, p, UAS_BAD_TIMEOUT, now);
}

/* ---- messages and the retransmission queue ---- */

void sub_msg_view_init(sub_msg_view *v, const sub_msg *m)
{
    memset(v, 0, sizeof(*v));
    v->nm.sequence_number = m->seq;
    v->nm.publish_time = m->publish_time;
    v->nm.notification_data = v->eo;
    if (m->ndc) {
        v->dcn.monitored_items_count = m->ndc;
        v->dcn.monitored_items = m->dc;
        uas_extensionobject *x = &v->eo[v->nm.notification_data_count++];
        x->encoding = UAS_EXTOBJ_DECODED;
        x->content.decoded.type = UAS_TYPE(DATA_CHANGE_NOTIFICATION);
        x->content.decoded.data = &v->dcn;
    }
    if (m->nev) {
        v->enl.events_count = m->nev;
        v->enl.events = m->ev;
        uas_extensionobject *x = &v->eo[v->nm.notification_data_count++];
        x->encoding = UAS_EXTOBJ_DECODED;
        x->content.decoded.type = UAS_TYPE(EVENT_NOTIFICATION_LIST);
        x->content.decoded.data = &v->enl;
    }
}

static sub_msg **rq_at(sub_sub *s, uint32_t k)
{
    return &s->rq[(s->rq_head + k) % s->e->cfg.limits.max_retransmission];
}

/* Keep m for Republish; a full queue forgets its oldest message. */
static void rq_push(sub_sub *s, sub_msg *m)
{
    uint32_t cap = s->e->cfg.limits.max_retransmission;
    if (s->rq_count == cap) {
        sub_msg_put(s->e, *rq_at(s, 0));
        s->rq_head = (s->rq_head + 1) % cap;
        s->rq_count--;
    }
    *rq_at(s, s->rq_count++) = m;
}

sub_msg *sub_rq_find(sub_sub *s, uint32_t seq)
{
    for (uint32_t k = 0; k < s->rq_count; k++)
        if ((*rq_at(s, k))->seq == seq)
            return *rq_at(s, k);
    return NULL;
}

uint32_t *sub_available_seqs(sub_sub *s, size_t *n, uas_arena *a)
{
    *n = s->rq_count;
    if (s->rq_count == 0)
        return UAS_EMPTY_ARRAY;
    uint32_t *out = a ? uas_arena_alloc(a, s->rq_count * sizeof(uint32_t)) : s->e->seq_buf;
    if (!out) {
        *n = 0;
        return UAS_EMPTY_ARRAY;
    }
    for (uint32_t k = 0; k < s->rq_count; k++)
        out[k] = (*rq_at(s, k))->seq;
    return out;
}

uas_status sub_ack(uas_sub_session *ss, const uas_subscription_acknowledgement *ack)
{
    sub_sub *s = sub_find(ss, ack->subscription_id);
    if (!s)
        return UAS_BAD_SUBSCRIPTION_ID_INVALID;
    for (uint32_t k = 0; k < s->rq_count; k++) {
        if ((*rq_at(s, k))->seq != ack->sequence_number)
            continue;
        sub_msg_put(s->e, *rq_at(s, k));
        for (; k + 1 < s->rq_count; k++) /* keep the order: queues are short */
            *rq_at(s, k) = *rq_at(s, k + 1);
        s->rq_count--;
        return UAS_GOOD;
    }
    return UAS_BAD_SEQUENCE_NUMBER_UNKNOWN;
}

static uint32_t take_seq(sub_sub *s)
{
    uint32_t seq = s->next_seq++;
    if (s->next_seq == 0) /* 0 is never a sequence number */
        s->next_seq = 1;
    return seq;
}

/* ---- draining into a NotificationMessage ---- */

/* Grow m's arrays to hold `need` data (or event) notifications. Fresh
 * arrays instead of realloc: inline values point into dc_inl and have to
 * be moved one by one. The arrays are counted in the memory budget but
 * never refused by it: draining moves notifications the queues already
 * hold, and refusing it would keep a full queue full. */
static bool msg_reserve(uas_sub_engine *e, sub_msg *m, bool data, uint32_t need)
{
    uint32_t cap = data ? m->dc_cap : m->ev_cap;
    if (need <= cap)
        return true;
    uint32_t ncap = cap ? cap * 2 : 16;
    if (ncap < need)
        ncap = need;
    size_t grow = data ? sub_msg_arrays_size(ncap - cap, 0) : sub_msg_arrays_size(0, ncap - cap);
    sub_mem_force(e, grow);
    if (!data) {
        uas_event_field_list *ev = uas_calloc(ncap, sizeof(*ev));
        sub_evrec **rec = uas_calloc(ncap, sizeof(*rec));
        if (!ev || !rec) {
            uas_free(ev, ncap * sizeof(*ev));
            uas_free(rec, ncap * sizeof(*rec));
            sub_mem_give(e, grow);
            return false;
        }
        if (m->nev) {
            memcpy(ev, m->ev, m->nev * sizeof(*ev));
            memcpy(rec, m->ev_rec, m->nev * sizeof(*rec));
        }
        uas_free(m->ev, m->ev_cap * sizeof(*ev));
        uas_free(m->ev_rec, m->ev_cap * sizeof(*rec));
        m->ev = ev;
        m->ev_rec = rec;
        m->ev_cap = ncap;
        return true;
    }
    uas_monitored_item_notification *dc = uas_calloc(ncap, sizeof(*dc));
    sub_inl *inl = uas_calloc(ncap, sizeof(*inl));
    if (!dc || !inl) {
        uas_free(dc, ncap * sizeof(*dc));
        uas_free(inl, ncap * sizeof(*inl));
        sub_mem_give(e, grow);
        return false;
    }
    for (uint32_t i = 0; i < m->ndc; i++) {
        dc[i].client_handle = m->dc[i].client_handle;
        sub_dv_move(&dc[i].value, &inl[i], &m->dc[i].value, &m->dc_inl[i]);
    }
    uas_free(m->dc, m->dc_cap * sizeof(*dc));
    uas_free(m->dc_inl, m->dc_cap * sizeof(*inl));
    m->dc = dc;
    m->dc_inl = inl;
    m->dc_cap = ncap;
    return true;
}

/* The record moves with its fields: the message returns it to the pool. */
static void drain_event(sub_item *it, sub_msg *m, sub_evrec **q)
{
    sub_evrec *r = *q;
    uas_event_field_list *fl = &m->ev[m->nev];
    fl->client_handle = it->client_handle;
    fl->event_fields_count = r->n;
    fl->event_fields = r->n ? r->fields : UAS_EMPTY_ARRAY;
    m->ev_rec[m->nev++] = r;
    *q = NULL;
}

uint32_t sub_item_drain(sub_item *it, sub_msg *m, uint32_t max)
{
    bool data = it->kind == SUB_ITEM_DATA;
    uint32_t queued = it->qcount + (it->ovf ? 1 : 0);
    uint32_t n = queued < max ? queued : max;
    if (!msg_reserve(it->sub->e, m, data, (data ? m->ndc : m->nev) + n))
        return 0;
    uint32_t k = 0;
    /* The overflow event heads the queue when the oldest events were the
     * ones discarded, and ends it when the newest were (Part 4, 5.12.1.5). */
    if (it->ovf && it->discard_oldest && n > 0) {
        drain_event(it, m, &it->ovf);
        k++;
    }
    for (; k < n && it->qcount > 0; k++) {
        uint32_t i = it->qhead;
        if (data) {
            uas_monitored_item_notification *mn = &m->dc[m->ndc];
            mn->client_handle = it->client_handle;
            sub_dv_move(&mn->value, &m->dc_inl[m->ndc], &it->dq[i].dv, &it->dq[i].inl);
            m->ndc++;
        } else {
            drain_event(it, m, &it->eq[i]);
        }
        it->qhead = (it->qhead + 1) % it->qsize;
        it->qcount--;
    }
    if (k < n && it->ovf)
        drain_event(it, m, &it->ovf);
    if (it->qcount == 0 && !it->ovf) {
        it->triggered = false;
        sub_list_remove(&it->ready_link);
    }
    return n;
}

/* ---- sending ---- */

static void send_keep_alive(sub_sub *s, sub_parked *p, int64_t now)
{
    /* A keep-alive carries the next sequence number without using it. */
    uas_notification_message nm;
    memset(&nm, 0, sizeof(nm));
    nm.sequence_number = s->next_seq;
    nm.publish_time = sub_utc(s->e, now);
    nm.notification_data = UAS_EMPTY_ARRAY;
    s->e->keep_alives_sent++;
    answer(s->e, p, s, s->id, &nm, false, now);
}

/* Returns true when notifications are left for another message. */
static bool send_data(sub_sub *s, sub_parked *p, int64_t now)
{
    uas_sub_engine *e = s->e;
    sub_msg *m = sub_msg_get(e);
    if (!m) {
        sub_answer_error(e, p, UAS_BAD_OUT_OF_MEMORY, now);
        return true;
    }
    uint32_t room = s->max_notifs ? s->max_notifs : UINT32_MAX;
    sub_list *n;
    while (room > 0 && (n = sub_list_first(&s->ready)) != NULL) {
        uint32_t got = sub_item_drain(SUB_CONTAINER(n, sub_item, ready_link), m, room);
        if (got == 0 && sub_list_first(&s->ready) == n)
            break; /* the message could not grow */
        room -= got;
    }
    bool more = !sub_list_empty(&s->ready);
    if (!more)
        s->refresh_pending = false; /* its RefreshEndEvent went out */
    m->seq = take_seq(s);
    m->publish_time = sub_utc(e, now);
    sub_msg_view v;
    sub_msg_view_init(&v, m);
    e->messages_sent++;
    if (e->cfg.limits.max_retransmission == 0) {
        answer(e, p, s, s->id, &v.nm, more, now);
        sub_msg_put(e, m);
    } else {
        rq_push(s, m); /* before answering: availableSequenceNumbers include it */
        answer(e, p, s, s->id, &v.nm, more, now);
    }
    return more;
}

static void publish_one(sub_sub *s, sub_parked *p, int64_t now)
{
    s->lifetime_ctr = 0;
    s->keep_alive_ctr = 0;
    s->message_sent = true;
    s->due = false;
    if (s->enabled && !sub_list_empty(&s->ready)) {
        if (send_data(s, p, now)) {
            /* The rest goes with the next Publish request, at once. */
            s->due = true;
            s->due_since = now;
        }
    } else {
        if (sub_list_empty(&s->ready))
            s->refresh_pending = false; /* nothing of a refresh left to send */
        send_keep_alive(s, p, now);
    }
}

static void send_status(uas_sub_session *ss, sub_parked *p, int64_t now)
{
    sub_list *n = sub_list_first(&ss->status);
    sub_status *st = SUB_CONTAINER(n, sub_status, link);
    sub_list_remove(n);
    ss->status_count--;
    uas_status_change_notification scn;
    memset(&scn, 0, sizeof(scn));
    scn.status = st->status;
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(STATUS_CHANGE_NOTIFICATION);
    eo.content.decoded.data = &scn;
    uas_notification_message nm;
    memset(&nm, 0, sizeof(nm));
    nm.sequence_number = st->seq;
    nm.publish_time = sub_utc(ss->e, now);
    nm.notification_data_count = 1;
    nm.notification_data = &eo;
    uint32_t id = st->sub_id;
    uas_free(st, sizeof(*st));
    answer(ss->e, p, NULL, id, &nm, false, now);
}

void sub_session_dispatch(uas_sub_session *ss, int64_t now)
{
    while (ss->parked_count > 0) {
        if (ss->status_count > 0) {
            send_status(ss, sub_parked_pop(ss), now);
            continue;
        }
        sub_sub *best = NULL;
        for (sub_list *n = ss->subs.next; n != &ss->subs; n = n->next) {
            sub_sub *s = SUB_CONTAINER(n, sub_sub, session_link);
            if (s->due && (!best || s->priority > best->priority ||
                           (s->priority == best->priority && s->due_since < best->due_since)))
                best = s;
        }
        if (!best)
            break;
        publish_one(best, sub_parked_pop(ss), now);
    }
    /* Part 4, 5.13.8 (DeleteSubscriptions): without subscriptions the
     * queued requests are answered BadNoSubscription. */
    if (ss->sub_count == 0 && ss->status_count == 0) {
        sub_parked *p;
        while ((p = sub_parked_pop(ss)) != NULL)
            sub_answer_error(ss->e, p, UAS_BAD_NO_SUBSCRIPTION, now);
    }
}

void sub_queue_status(uas_sub_session *ss, uint32_t sub_id, uint32_t seq, uas_status status)
{
    if (ss->orphans)
        return; /* nobody to tell */
    if (ss->status_count >= MAX_PENDING_STATUS) {
        sub_list *n = sub_list_first(&ss->status);
        sub_list_remove(n);
        uas_free(SUB_CONTAINER(n, sub_status, link), sizeof(sub_status));
        ss->status_count--;
    }
    sub_status *st = uas_calloc(1, sizeof(*st));
    if (!st)
        return;
    st->sub_id = sub_id;
    st->seq = seq;
    st->status = status;
    sub_list_push_back(&ss->status, &st->link);
    ss->status_count++;
}

/* ---- the publishing timer ---- */

static void expire(sub_sub *s, int64_t now)
{
    (void)now;
    uas_sub_session *ss = s->session;
    uint32_t id = s->id, seq = s->next_seq;
    sub_delete(s);
    sub_queue_status(ss, id, seq, UAS_BAD_TIMEOUT);
    if (!ss->orphans)
        sub_mark_dirty(ss);
}

void sub_pub_timer_fn(sub_timer *t, int64_t now)
{
    sub_sub *s = SUB_CONTAINER(t, sub_sub, pub_timer);
    uas_sub_session *ss = s->session;
    sub_wheel_arm(&s->e->wheel, t, sub_next_period(t->deadline, s->interval_ms, now));
    /* Lifetime: consecutive cycles in which no Publish request was there
     * to carry a message (Part 4, 5.13.2.2). */
    if (ss->parked_count > 0) {
        s->lifetime_ctr = 0;
    } else if (++s->lifetime_ctr >= s->lifetime_count) {
        expire(s, now);
        return;
    }
    /* An orphan lives no longer than max_orphan_lifetime_ms, whatever its
     * lifetime count allows: nobody may ever come back for it. */
    uint32_t max_orphan = s->e->cfg.limits.max_orphan_lifetime_ms;
    if (ss->orphans && max_orphan && now - s->orphaned_at >= (int64_t)max_orphan) {
        atomic_fetch_add_explicit(&s->e->shared->orphans_dropped, 1, memory_order_relaxed);
        expire(s, now);
        return;
    }
    bool data = s->enabled && !sub_list_empty(&s->ready);
    if (!data)
        s->keep_alive_ctr++;
    if (!s->due && (data || !s->message_sent || s->keep_alive_ctr >= s->max_keep_alive)) {
        s->due = true;
        s->due_since = now;
    }
    if (s->due)
        sub_mark_dirty(ss);
}

/* ---- subscriptions in sessions ---- */

void sub_attach(sub_sub *s, uas_sub_session *ss)
{
    sub_list_push_back(&ss->subs, &s->session_link);
    ss->sub_count++;
    s->session = ss;
    if (ss->orphans) {
        ss->e->norphans++;
        atomic_fetch_add_explicit(&ss->e->shared->orphans, 1, memory_order_relaxed);
    }
}

void sub_detach(sub_sub *s)
{
    uas_sub_session *ss = s->session;
    sub_list_remove(&s->session_link);
    ss->sub_count--;
    s->session = NULL;
    if (ss->orphans) {
        ss->e->norphans--;
        sub_release(&ss->e->shared->orphans, 1);
    }
}

void sub_delete(sub_sub *s)
{
    uas_sub_engine *e = s->e;
    sub_wheel_cancel(&e->wheel, &s->pub_timer);
    sub_list *n;
    while ((n = sub_list_first(&s->items)) != NULL)
        sub_item_delete(SUB_CONTAINER(n, sub_item, sub_link));
    for (uint32_t k = 0; k < s->rq_count; k++)
        sub_msg_put(e, *rq_at(s, k));
    uas_free(s->rq, e->cfg.limits.max_retransmission * sizeof(sub_msg *));
    sub_map_free(&s->item_map);
    sub_map_remove(&e->subs_by_id, s->id, s);
    if (s->session)
        sub_detach(s);
    e->nsubs--;
    sub_release(&e->shared->subs, 1);
    sub_changed(e, s->interval_ms, 0);
    uas_free(s, sizeof(*s));
}

/* ---- Publish and Republish services ---- */

void uas_sub_publish(uas_sub_session *ss, uas_sub_publish_target *target, uint32_t request_id,
                     const uas_publish_request *req, int64_t now)
{
    uas_sub_engine *e = ss->e;
    sub_parked *p = sub_parked_get(e);
    if (!p) {
        uas_publish_response r;
        memset(&r, 0, sizeof(r));
        r.response_header.timestamp = sub_utc(e, now);
        r.response_header.request_handle = req->request_header.request_handle;
        r.response_header.service_result = UAS_BAD_OUT_OF_MEMORY;
        send_response(e, target, request_id, &r);
        return;
    }
    p->session = ss;
    p->target = target;
    p->request_id = request_id;
    p->request_handle = req->request_header.request_handle;
    size_t nack = req->subscription_acknowledgements_count;
    if (nack > 4) {
        p->results = uas_malloc(nack * sizeof(uas_status));
        if (!p->results) {
            p->results = p->inl_results;
            sub_answer_error(e, p, UAS_BAD_OUT_OF_MEMORY, now);
            return;
        }
    }
    p->nresults = (uint32_t)nack;
    /* Acknowledgements first, whatever happens to the request. */
    for (size_t i = 0; i < nack; i++)
        p->results[i] = sub_ack(ss, &req->subscription_acknowledgements[i]);
    for (sub_list *n = ss->subs.next; n != &ss->subs; n = n->next)
        SUB_CONTAINER(n, sub_sub, session_link)->lifetime_ctr = 0;
    if (ss->sub_count == 0 && ss->status_count == 0) {
        sub_answer_error(e, p, UAS_BAD_NO_SUBSCRIPTION, now);
        return;
    }
    uint32_t max = e->cfg.limits.max_publish_requests ? e->cfg.limits.max_publish_requests : 1;
    while (ss->parked_count >= max)
        sub_answer_error(e, sub_parked_pop(ss), UAS_BAD_TOO_MANY_PUBLISH_REQUESTS, now);
    sub_list_push_back(&ss->parked, &p->link);
    ss->parked_count++;
    e->nparked++;
    if (req->request_header.timeout_hint > 0)
        sub_wheel_arm(&e->wheel, &p->timeout, now + req->request_header.timeout_hint);
    sub_session_dispatch(ss, now);
}

uas_status uas_sub_republish(uas_sub_session *ss, const uas_republish_request *req,
                             uas_republish_response *resp, uas_arena *a, int64_t now)
{
    (void)now;
    uas_status st = UAS_GOOD;
    sub_sub *s = sub_find(ss, req->subscription_id);
    sub_msg *m = NULL;
    if (!s) {
        st = UAS_BAD_SUBSCRIPTION_ID_INVALID;
    } else {
        s->lifetime_ctr = 0;
        m = sub_rq_find(s, req->retransmit_sequence_number);
        if (!m)
            st = UAS_BAD_MESSAGE_NOT_AVAILABLE;
    }
    if (m) {
        sub_msg_view v;
        sub_msg_view_init(&v, m);
        st = uas_copy_arena(&v.nm, &resp->notification_message, UAS_TYPE(NOTIFICATION_MESSAGE), a);
    }
    resp->response_header.service_result = st;
    return st;
}
