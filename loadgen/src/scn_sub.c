/* The subscription scenarios of `uaserver --self-load`:
 *
 *   sub       --sessions subscriber sessions, each with --subs subscriptions
 *             of --nodes monitored items on the contract nodes
 *             ns=1;i=1001.. (sampling 0, queue --queue-size), and writers
 *             (--writers dedicated sessions, or the first subscriber) that
 *             write --write-nodes of those nodes every --write-interval ms;
 *   sessions  a ramp to --sessions sessions, each with one subscription
 *             (1000 ms) and one item on one shared node, written every
 *             500 ms by one writer session; establishment rate, server
 *             memory per session, and whether every session gets every
 *             change it must get;
 *   counters  one session, one subscription of --nodes data-source counters
 *             (uaserver --counters N) sampled every --sampling ms;
 *   events    --sessions sessions, each with --subs subscriptions of one
 *             event item on the Server object, while the child reports
 *             --event-rate events per second (uaserver --event-rate); the
 *             EventFilter selects Message, Time and SourceName where
 *             SourceName equals the event source's, and every event the
 *             child reported inside the window (its uastack.EventsReported
 *             counter read at the window's edges) must reach every item.
 *
 * Every session is one async client on the one loop of the load generator,
 * keeps --publish-requests Publish requests outstanding and acknowledges
 * every NotificationMessage in its next Publish. What must arrive is
 * decided by the rule of uas_deliv_rule (ua/loadgen.h, deliver.c) from the
 * writers' send and response times; server CPU, RSS and heap come from the
 * child as in the request scenarios. */
#define _GNU_SOURCE
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ua/log.h>
#include <ua/nodeids.h>

#include "loadgen_internal.h"

enum { PH_INIT, PH_SETUP, PH_WARMUP, PH_MEASURE, PH_DRAIN, PH_STOP };
enum { SS_IDLE, SS_CONNECTING, SS_SUBSCRIBING, SS_READY, SS_FAILED };
enum {
    CMI_BATCH = 1000,     /* monitored items per CreateMonitoredItems */
    CMI_INFLIGHT = 4,     /* CreateMonitoredItems in flight per subscription */
    MAX_ACKS = 512,       /* acknowledgements per Publish */
    WRITE_SLOTS = 16,     /* Write requests in flight per writer */
    CONTRACT_NODES = 100, /* ns=1;i=1001..1100 */
    /* connect() searches the ephemeral ports of one source/destination pair
     * in the kernel, and that search grows slow as they fill up. */
    SESSIONS_PER_SOURCE = 4096,
};

typedef struct sb_run sb_run;
typedef struct sb_sess sb_sess;
typedef struct sb_writer sb_writer;

typedef struct sb_item {
    uint32_t node; /* contract node index (1001 + node) or counter (100001 + node) */
    uas_rx_set rx;
    uas_counter_track ct;
} sb_item;

typedef struct sb_sub {
    sb_sess *s;
    uint32_t id;
    uint32_t first_item, nitems;
    uint32_t cmi_next, cmi_pending;
    uas_seq_track seq;
} sb_sub;

struct sb_sess {
    sb_run *run;
    uas_client *c;
    unsigned index;
    int state;
    bool subscriber;
    sb_sub *subs;
    unsigned nsubs, subs_pending;
    sb_item *items;
    unsigned nitems;
    unsigned publish_out;
    uas_subscription_acknowledgement *acks;
    size_t nacks, acks_cap;
    uint64_t t_start, t_ready;
};

typedef struct sb_wslot {
    sb_writer *w;
    uint32_t k;
    bool busy;
} sb_wslot;

struct sb_writer {
    sb_run *run;
    sb_sess *s;
    uint32_t *nodes;
    unsigned nnodes;
    uas_write_value *wv;
    int32_t value;
    uas_write_log log;
    ev_timer timer;
    sb_wslot slots[WRITE_SLOTS];
    unsigned out;
    bool active;
};

struct sb_run {
    const lg_opts *o;
    const lg_sec *sec;
    uas_loop *loop;
    char url[256];
    bool counters;
    sb_sess *sess; /* subscribers [0, nsubscribers), then writer sessions */
    unsigned nsess, nsubscribers;
    sb_writer *writers;
    unsigned nwriters;
    sb_writer *node_writer[CONTRACT_NODES];
    int phase;
    uint64_t t0, t1;
    /* set-up */
    unsigned started, setting_up, ready, failed;
    uint64_t t_first_start, t_last_ready;
    uas_status first_error;
    char first_error_where[48];
    /* revised parameters (the strictest seen) */
    double rev_pub_ms, rev_sampling_ms;
    uint32_t rev_queue;
    /* counted in the window */
    uint64_t notifications, publish_errors, write_errors, status_changes, bad_handles;
    uint64_t seq_gaps, seq_gaps_at_t0;
    bool need_topup; /* a session has fewer Publish requests out than asked */
    uas_hist lat, write_rtt;
    /* loopback sources */
    char (*sources)[16];
    unsigned nsources;
    /* events: the filter of every event item, and the numbers of the
     * events the child reported before warm-up (base), and before the
     * window's start (ev_a) and end (ev_b) */
    bool events;
    uint64_t ev_base, ev_a, ev_b;
    uint64_t other_events;
    uas_qualifiedname ev_path[3];
    uas_simple_attribute_operand ev_select[3], ev_where_field;
    uas_literal_operand ev_where_value;
    uas_extensionobject ev_operands[2];
    uas_content_filter_element ev_where;
    uas_event_filter ev_filter;
};

/* Event items select Message (which numbers the event), Time and
 * SourceName, where SourceName is the child's event source: the server's
 * own system events (sessions created and closed) do not count. */
enum { EV_MESSAGE, EV_TIME, EV_SOURCE_NAME };
static void build_event_filter(sb_run *run)
{
    static const char *const fields[] = {"Message", "Time", "SourceName"};
    for (int i = 0; i < 3; i++) {
        run->ev_path[i] = (uas_qualifiedname){0, uas_string_from(fields[i])};
        run->ev_select[i].type_definition_id = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
        run->ev_select[i].browse_path = &run->ev_path[i];
        run->ev_select[i].browse_path_count = 1;
        run->ev_select[i].attribute_id = 13;
    }
    run->ev_where_field = run->ev_select[EV_SOURCE_NAME];
    static uas_string source = {sizeof("uastack.EventSource") - 1,
                                (uint8_t *)"uastack.EventSource"};
    uas_variant_set_scalar(&run->ev_where_value.value, &source, UAS_TYPE(STRING));
    run->ev_operands[0].encoding = run->ev_operands[1].encoding = UAS_EXTOBJ_DECODED;
    run->ev_operands[0].content.decoded.type = UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND);
    run->ev_operands[0].content.decoded.data = &run->ev_where_field;
    run->ev_operands[1].content.decoded.type = UAS_TYPE(LITERAL_OPERAND);
    run->ev_operands[1].content.decoded.data = &run->ev_where_value;
    run->ev_where.filter_operator = UAS_FILTER_OPERATOR_EQUALS;
    run->ev_where.filter_operands = run->ev_operands;
    run->ev_where.filter_operands_count = 2;
    run->ev_filter.select_clauses = run->ev_select;
    run->ev_filter.select_clauses_count = 3;
    run->ev_filter.where_clause.elements = &run->ev_where;
    run->ev_filter.where_clause.elements_count = 1;
}

static void note_error(sb_run *run, uas_status st, const char *where)
{
    if (run->first_error == UAS_GOOD && st != UAS_GOOD) {
        run->first_error = st;
        snprintf(run->first_error_where, sizeof(run->first_error_where), "%s", where);
    }
}

static bool in_window(const sb_run *run)
{
    return run->phase == PH_MEASURE;
}

/* ---- session set-up ---- */

static void sess_failed(sb_sess *s, uas_status st, const char *where)
{
    sb_run *run = s->run;
    if (s->state == SS_FAILED || s->state == SS_IDLE)
        return;
    note_error(run, st, where);
    if (s->state == SS_CONNECTING || s->state == SS_SUBSCRIBING)
        run->setting_up--;
    if (s->state == SS_READY)
        run->ready--;
    s->state = SS_FAILED;
    run->failed++;
}

static void sess_ready(sb_sess *s);

static void on_cmi(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t);

static void send_cmi(sb_sub *sub)
{
    sb_sess *s = sub->s;
    sb_run *run = s->run;
    const lg_opts *o = run->o;
    while (sub->cmi_next < sub->nitems && sub->cmi_pending < CMI_INFLIGHT) {
        uint32_t n = sub->nitems - sub->cmi_next;
        if (n > CMI_BATCH)
            n = CMI_BATCH;
        uas_monitored_item_create_request *it = calloc(n, sizeof(*it));
        if (!it) {
            sess_failed(s, UAS_BAD_OUT_OF_MEMORY, "CreateMonitoredItems");
            return;
        }
        for (uint32_t j = 0; j < n; j++) {
            uint32_t h = sub->first_item + sub->cmi_next + j;
            uint32_t node = s->items[h].node;
            if (run->events) {
                it[j].item_to_monitor.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
                it[j].item_to_monitor.attribute_id = 12; /* EventNotifier */
                it[j].requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
                it[j].requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
                it[j].requested_parameters.filter.content.decoded.data = &run->ev_filter;
            } else {
                it[j].item_to_monitor.node_id =
                    uas_nodeid_numeric(1, run->counters ? 100001 + node : 1001 + node);
                it[j].item_to_monitor.attribute_id = 13;
            }
            it[j].monitoring_mode = UAS_MONITORING_MODE_REPORTING;
            it[j].requested_parameters.client_handle = h;
            it[j].requested_parameters.sampling_interval = o->sampling_ms;
            it[j].requested_parameters.queue_size = o->queue_size;
            it[j].requested_parameters.discard_oldest = true;
        }
        uas_create_monitored_items_request req;
        memset(&req, 0, sizeof(req));
        req.subscription_id = sub->id;
        req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
        req.items_to_create = it;
        req.items_to_create_count = n;
        uas_status st =
            uas_client_request(s->c, &req, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), on_cmi, sub);
        free(it);
        if (st != UAS_GOOD) {
            sess_failed(s, st, "CreateMonitoredItems");
            return;
        }
        sub->cmi_next += n;
        sub->cmi_pending++;
    }
}

static void on_cmi(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    sb_sub *sub = ud;
    sb_sess *s = sub->s;
    sb_run *run = s->run;
    sub->cmi_pending--;
    if (s->state != SS_SUBSCRIBING)
        return;
    if (st == UAS_GOOD && t != UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE))
        st = UAS_BAD_UNEXPECTED_ERROR;
    if (st != UAS_GOOD) {
        sess_failed(s, st, "CreateMonitoredItems");
        return;
    }
    const uas_create_monitored_items_response *r = resp;
    for (size_t i = 0; i < r->results_count; i++) {
        const uas_monitored_item_create_result *mr = &r->results[i];
        if (uas_is_bad(mr->status_code)) {
            sess_failed(s, mr->status_code, "monitored item");
            return;
        }
        if (mr->revised_sampling_interval > run->rev_sampling_ms)
            run->rev_sampling_ms = mr->revised_sampling_interval;
        if (mr->revised_queue_size && mr->revised_queue_size < run->rev_queue)
            run->rev_queue = mr->revised_queue_size;
    }
    send_cmi(sub);
    if (s->state == SS_SUBSCRIBING && sub->cmi_next == sub->nitems && sub->cmi_pending == 0 &&
        --s->subs_pending == 0)
        sess_ready(s);
}

static void on_create_sub(uas_client *c, void *ud, uas_status st, const void *resp,
                          const uas_type *t)
{
    (void)c;
    sb_sub *sub = ud;
    sb_sess *s = sub->s;
    sb_run *run = s->run;
    if (s->state != SS_SUBSCRIBING)
        return;
    if (st == UAS_GOOD && t != UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE))
        st = UAS_BAD_UNEXPECTED_ERROR;
    if (st != UAS_GOOD) {
        sess_failed(s, st, "CreateSubscription");
        return;
    }
    const uas_create_subscription_response *r = resp;
    sub->id = r->subscription_id;
    if (r->revised_publishing_interval > run->rev_pub_ms)
        run->rev_pub_ms = r->revised_publishing_interval;
    send_cmi(sub);
}

static void start_subscribing(sb_sess *s)
{
    const lg_opts *o = s->run->o;
    s->state = SS_SUBSCRIBING;
    s->subs_pending = s->nsubs;
    for (unsigned i = 0; i < s->nsubs && s->state == SS_SUBSCRIBING; i++) {
        uas_create_subscription_request req;
        memset(&req, 0, sizeof(req));
        req.requested_publishing_interval = o->pub_ms;
        req.requested_max_keep_alive_count = o->keep_alive;
        req.requested_lifetime_count = o->keep_alive * 3 > 300 ? o->keep_alive * 3 : 300;
        req.max_notifications_per_publish = 0;
        req.publishing_enabled = true;
        uas_status st = uas_client_request(s->c, &req, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST),
                                           on_create_sub, &s->subs[i]);
        if (st != UAS_GOOD)
            sess_failed(s, st, "CreateSubscription");
    }
}

static void on_state(uas_client *c, void *ud, uas_client_state state, uas_status reason)
{
    (void)c;
    sb_sess *s = ud;
    if (state == UAS_CLIENT_SESSION_ACTIVE && s->state == SS_CONNECTING) {
        if (s->subscriber)
            start_subscribing(s);
        else
            sess_ready(s);
    } else if (state == UAS_CLIENT_CLOSED) {
        sess_failed(s, reason == UAS_GOOD ? UAS_BAD_CONNECTION_CLOSED : reason,
                    s->state == SS_READY ? "connection lost" : "connect");
    }
}

static void start_session(sb_run *run, sb_sess *s)
{
    const lg_opts *o = run->o;
    uas_client_config cc;
    uas_client_config_default(&cc);
    cc.endpoint_url = run->url;
    cc.create_session = true;
    cc.session_name = "self-load";
    /* Writers and early subscribers idle while later sessions set up, which
     * on a slow host (RSA-2048 signs of 1 ms and more) outlasts the default
     * minute; the set-up deadline stays far below the hour asked for. */
    cc.session_timeout_ms = 3600000;
    /* A parked Publish may wait keep-alive x publishing interval times the
     * requests parked before it. */
    uint64_t to = (uint64_t)o->keep_alive * o->pub_ms * (o->publish_requests + 1) + 30000;
    cc.request_timeout_ms = to > 600000 ? 600000 : (uint32_t)to;
    cc.max_inflight = o->publish_requests + WRITE_SLOTS + CMI_INFLIGHT * o->subs + 16;
    if (run->nsources > 1)
        cc.conn.source_address = run->sources[s->index % run->nsources];
    lg_sec_apply(run->sec, &cc);
    s->t_start = lg_now_ns();
    if (!run->t_first_start)
        run->t_first_start = s->t_start;
    run->started++;
    run->setting_up++;
    s->state = SS_CONNECTING;
    s->c = uas_client_new(run->loop, &cc, on_state, s);
    uas_status st = s->c ? uas_client_connect(s->c) : UAS_BAD_OUT_OF_MEMORY;
    if (st != UAS_GOOD)
        sess_failed(s, st, "connect");
}

/* ---- publishing ---- */

static void on_publish(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t);

static void issue_publishes(sb_sess *s)
{
    sb_run *run = s->run;
    while (s->state == SS_READY && s->publish_out < run->o->publish_requests &&
           run->phase != PH_STOP) {
        uas_publish_request req;
        memset(&req, 0, sizeof(req));
        size_t n = s->nacks < MAX_ACKS ? s->nacks : MAX_ACKS;
        req.subscription_acknowledgements = s->acks;
        req.subscription_acknowledgements_count = n;
        uas_status st = uas_client_request(s->c, &req, UAS_TYPE(PUBLISH_REQUEST), on_publish, s);
        if (st != UAS_GOOD) {
            if (in_window(run))
                run->publish_errors++;
            note_error(run, st, "Publish (send)");
            run->need_topup = true;
            return;
        }
        s->publish_out++;
        if (n) {
            memmove(s->acks, s->acks + n, (s->nacks - n) * sizeof(*s->acks));
            s->nacks -= n;
        }
    }
}

static void push_ack(sb_sess *s, uint32_t sub_id, uint32_t seq)
{
    if (s->nacks == s->acks_cap) {
        size_t cap = s->acks_cap ? s->acks_cap * 2 : 8;
        void *p = realloc(s->acks, cap * sizeof(*s->acks));
        if (!p)
            return; /* the server keeps it for Republish: harmless */
        s->acks = p;
        s->acks_cap = cap;
    }
    s->acks[s->nacks].subscription_id = sub_id;
    s->acks[s->nacks].sequence_number = seq;
    s->nacks++;
}

static void on_value(sb_run *run, sb_item *it, const uas_datavalue *dv, uint64_t now)
{
    bool win = in_window(run);
    if (win)
        run->notifications++;
    const uas_variant *v = &dv->value;
    if (!v->type || v->is_array || !v->data)
        return;
    if (run->counters) {
        if (win && v->type->kind == UAS_BUILTIN_UINT64)
            uas_counter_track_add(&it->ct, *(const uint64_t *)v->data,
                                  dv->has_source_timestamp ? dv->source_timestamp
                                                           : dv->server_timestamp);
        return;
    }
    if (v->type->kind != UAS_BUILTIN_INT32)
        return;
    int32_t x = *(const int32_t *)v->data;
    sb_writer *w = it->node < CONTRACT_NODES ? run->node_writer[it->node] : NULL;
    if (x < UAS_DELIV_VALUE_BASE || !w)
        return; /* the initial value of the node */
    uint32_t k = (uint32_t)(x - UAS_DELIV_VALUE_BASE);
    if (uas_rx_set_add(&it->rx, k) == 1 && k < w->log.n) {
        uint64_t sent = w->log.sent_ns[k];
        if (run->t0 && sent >= run->t0 && sent < run->t1)
            uas_hist_add(&run->lat, now - sent);
    }
}

/* An event of the child's source: "selfload event K" in Message. */
static void on_event(sb_run *run, sb_item *it, const uas_event_field_list *ev)
{
    bool win = in_window(run);
    if (win)
        run->notifications++;
    const uas_variant *f = ev->event_fields;
    const uas_localizedtext *msg = ev->event_fields_count == 3 &&
                                           f[EV_MESSAGE].type == UAS_TYPE(LOCALIZED_TEXT) &&
                                           !f[EV_MESSAGE].is_array
                                       ? f[EV_MESSAGE].data
                                       : NULL;
    static const char prefix[] = "selfload event ";
    const size_t plen = sizeof(prefix) - 1;
    uint64_t k = 0;
    size_t i = plen;
    bool ok = msg && msg->text.length > plen && msg->text.length < plen + 21 &&
              !memcmp(msg->text.data, prefix, plen);
    for (; ok && i < msg->text.length; i++) {
        uint8_t c = msg->text.data[i];
        ok = c >= '0' && c <= '9';
        k = k * 10 + (uint64_t)(c - '0');
    }
    if (!ok) {
        run->other_events++; /* e.g. an EventQueueOverflowEventType event */
        return;
    }
    if (k >= run->ev_base && k - run->ev_base < UINT32_MAX)
        uas_rx_set_add(&it->rx, (uint32_t)(k - run->ev_base));
    if (win && f[EV_TIME].type == UAS_TYPE(DATE_TIME) && !f[EV_TIME].is_array) {
        /* Reported (the event's Time, the server's clock) to received
         * (this machine's clock: the same one). */
        int64_t now = uas_datetime_now(), t = *(const uas_datetime *)f[EV_TIME].data;
        if (now > t)
            uas_hist_add(&run->lat, (uint64_t)(now - t) * 100);
        else
            uas_hist_add(&run->lat, 0);
    }
}

static sb_sub *find_sub(sb_sess *s, uint32_t id)
{
    for (unsigned i = 0; i < s->nsubs; i++)
        if (s->subs[i].id == id)
            return &s->subs[i];
    return NULL;
}

static void handle_publish(sb_sess *s, const uas_publish_response *r, uint64_t now)
{
    sb_run *run = s->run;
    const uas_notification_message *nm = &r->notification_message;
    sb_sub *sub = find_sub(s, r->subscription_id);
    if (nm->notification_data_count > 0 && sub) {
        uint64_t g = sub->seq.gaps;
        uas_seq_track_add(&sub->seq, nm->sequence_number);
        run->seq_gaps += sub->seq.gaps - g;
        push_ack(s, r->subscription_id, nm->sequence_number);
    }
    for (size_t i = 0; i < nm->notification_data_count; i++) {
        const uas_extensionobject *eo = &nm->notification_data[i];
        if (eo->encoding != UAS_EXTOBJ_DECODED)
            continue;
        if (eo->content.decoded.type == UAS_TYPE(DATA_CHANGE_NOTIFICATION)) {
            const uas_data_change_notification *dc = eo->content.decoded.data;
            for (size_t j = 0; j < dc->monitored_items_count; j++) {
                uint32_t h = dc->monitored_items[j].client_handle;
                if (h >= s->nitems) {
                    run->bad_handles++;
                    continue;
                }
                on_value(run, &s->items[h], &dc->monitored_items[j].value, now);
            }
        } else if (eo->content.decoded.type == UAS_TYPE(EVENT_NOTIFICATION_LIST)) {
            const uas_event_notification_list *el = eo->content.decoded.data;
            for (size_t j = 0; j < el->events_count; j++) {
                uint32_t h = el->events[j].client_handle;
                if (h >= s->nitems) {
                    run->bad_handles++;
                    continue;
                }
                on_event(run, &s->items[h], &el->events[j]);
            }
        } else if (eo->content.decoded.type == UAS_TYPE(STATUS_CHANGE_NOTIFICATION)) {
            run->status_changes++;
        }
    }
}

static void on_publish(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    sb_sess *s = ud;
    sb_run *run = s->run;
    s->publish_out--;
    if (st == UAS_GOOD && t == UAS_TYPE(PUBLISH_RESPONSE)) {
        handle_publish(s, resp, lg_now_ns());
    } else {
        if (run->phase == PH_MEASURE || run->phase == PH_DRAIN)
            run->publish_errors++;
        note_error(run, st == UAS_GOOD ? UAS_BAD_UNEXPECTED_ERROR : st, "Publish");
    }
    /* A Bad answer other than a timeout waits for the next tick, so a
     * server refusing Publishes is not hammered. */
    if (st == UAS_GOOD || st == UAS_BAD_TIMEOUT)
        issue_publishes(s);
    else
        run->need_topup = true;
}

static void sess_ready(sb_sess *s)
{
    sb_run *run = s->run;
    s->state = SS_READY;
    s->t_ready = lg_now_ns();
    run->t_last_ready = s->t_ready;
    run->setting_up--;
    run->ready++;
    if (s->subscriber)
        issue_publishes(s);
}

/* ---- writers ---- */

static void writer_write(sb_writer *w);

static void on_write(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    sb_wslot *slot = ud;
    sb_writer *w = slot->w;
    sb_run *run = w->run;
    slot->busy = false;
    w->out--;
    if (st == UAS_GOOD && t == UAS_TYPE(WRITE_RESPONSE)) {
        const uas_write_response *r = resp;
        if (r->results_count != w->nnodes)
            st = UAS_BAD_UNEXPECTED_ERROR;
        for (size_t i = 0; i < r->results_count && st == UAS_GOOD; i++)
            if (uas_is_bad(r->results[i]))
                st = r->results[i];
    } else if (st == UAS_GOOD) {
        st = UAS_BAD_UNEXPECTED_ERROR;
    }
    if (st == UAS_GOOD) {
        uint64_t now = lg_now_ns();
        uas_write_log_done(&w->log, slot->k, now);
        if (run->phase == PH_MEASURE)
            uas_hist_add(&run->write_rtt, now - w->log.sent_ns[slot->k]);
    } else {
        note_error(run, st, "Write");
        if (run->phase == PH_MEASURE || run->phase == PH_DRAIN)
            run->write_errors++;
    }
    if (run->o->write_interval_ms == 0 && w->active)
        writer_write(w); /* closed loop */
}

static void writer_write(sb_writer *w)
{
    sb_run *run = w->run;
    if (!w->active || w->s->state != SS_READY)
        return;
    sb_wslot *slot = NULL;
    for (unsigned i = 0; i < WRITE_SLOTS && !slot; i++)
        if (!w->slots[i].busy)
            slot = &w->slots[i];
    if (!slot) {
        if (in_window(run))
            run->write_errors++; /* the server is WRITE_SLOTS writes behind */
        return;
    }
    uint64_t now = lg_now_ns();
    int64_t k = uas_write_log_add(&w->log, now);
    if (k < 0 || k > INT32_MAX - UAS_DELIV_VALUE_BASE)
        return;
    w->value = (int32_t)(UAS_DELIV_VALUE_BASE + k);
    uas_write_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_write = w->wv;
    req.nodes_to_write_count = w->nnodes;
    slot->w = w;
    slot->k = (uint32_t)k;
    uas_status st = uas_client_request(w->s->c, &req, UAS_TYPE(WRITE_REQUEST), on_write, slot);
    if (st != UAS_GOOD) {
        note_error(run, st, "Write (send)");
        if (in_window(run))
            run->write_errors++;
        return;
    }
    slot->busy = true;
    w->out++;
}

static void on_write_timer(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    writer_write(t->data);
}

static int writer_init(sb_run *run, sb_writer *w, sb_sess *s)
{
    w->run = run;
    w->s = s;
    w->nodes = calloc(CONTRACT_NODES, sizeof(uint32_t));
    w->wv = calloc(CONTRACT_NODES, sizeof(uas_write_value));
    if (!w->nodes || !w->wv)
        return -1;
    ev_timer_init(&w->timer, on_write_timer, 0.0, 0.0);
    w->timer.data = w;
    return 0;
}

static void writer_add_node(sb_writer *w, uint32_t node)
{
    uas_write_value *v = &w->wv[w->nnodes];
    v->node_id = uas_nodeid_numeric(1, 1001 + node);
    v->attribute_id = 13;
    v->value.has_value = true;
    uas_variant_set_scalar(&v->value.value, &w->value, UAS_TYPE(INT32));
    w->nodes[w->nnodes++] = node;
    w->run->node_writer[node] = w;
}

/* Writers start together with the warm-up, spread over one interval. */
static void writers_start(sb_run *run)
{
    const lg_opts *o = run->o;
    for (unsigned i = 0; i < run->nwriters; i++) {
        sb_writer *w = &run->writers[i];
        if (w->nnodes == 0)
            continue;
        w->active = true;
        if (o->write_interval_ms == 0) {
            writer_write(w); /* closed loop: on_write sends the next */
            continue;
        }
        double iv = o->write_interval_ms / 1000.0;
        ev_timer_set(&w->timer, iv * (i + 1) / run->nwriters, iv);
        ev_timer_start(uas_loop_ev(run->loop), &w->timer);
    }
}

static void writers_stop(sb_run *run)
{
    for (unsigned i = 0; i < run->nwriters; i++) {
        run->writers[i].active = false;
        ev_timer_stop(uas_loop_ev(run->loop), &run->writers[i].timer);
    }
}

/* ---- the run ---- */

static void on_tick(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    sb_run *run = t->data;
    const lg_opts *o = run->o;
    /* Ramp: start sessions at --ramp-rate, at most --connect-parallel in
     * set-up; writer sessions first. */
    if (run->phase == PH_SETUP) {
        uint64_t now = lg_now_ns();
        uint64_t allowed = run->nsess, writers = run->nsess - run->nsubscribers;
        if (o->ramp_rate)
            allowed = writers + 1 +
                      (run->t_first_start
                           ? (uint64_t)((double)(now - run->t_first_start) / 1e9 * o->ramp_rate)
                           : 0);
        while (run->started < run->nsess && run->started < allowed &&
               run->setting_up < o->connect_parallel) {
            unsigned i = run->nsess - 1 - run->started; /* writers (at the end) first */
            start_session(run, &run->sess[i]);
        }
    }
    /* Top up Publish requests refused earlier. */
    if (run->need_topup) {
        run->need_topup = false;
        for (unsigned i = 0; i < run->nsubscribers; i++)
            if (run->sess[i].state == SS_READY &&
                run->sess[i].publish_out < run->o->publish_requests)
                issue_publishes(&run->sess[i]);
    }
    /* Closed-loop writers whose Write could not be sent: try again. */
    if (o->write_interval_ms == 0)
        for (unsigned i = 0; i < run->nwriters; i++)
            if (run->writers[i].active && run->writers[i].out == 0)
                writer_write(&run->writers[i]);
}

static void progress(sb_run *run, const char *what, uint64_t start, uint64_t end, unsigned round)
{
    uint64_t now = lg_now_ns();
    double el = (double)(now - start) / 1e9;
    if (run->phase == PH_SETUP)
        fprintf(stderr,
                "\rself-load %s round %u/%u: %s %.0fs, %u of %u sessions ready, %u failed   ",
                run->o->scenario_name, round, run->o->rounds, what, el, run->ready, run->nsess,
                run->failed);
    else
        fprintf(stderr, "\rself-load %s round %u/%u: %s %.0fs/%.0fs, %llu notifications   ",
                run->o->scenario_name, round, run->o->rounds, what, el, (double)(end - start) / 1e9,
                (unsigned long long)run->notifications);
}

static void run_until(sb_run *run, uint64_t end, const char *what, unsigned round)
{
    uint64_t start = lg_now_ns(), last = 0;
    while (lg_now_ns() < end) {
        uas_loop_run_once(run->loop, true);
        uint64_t now = lg_now_ns();
        if (now - last > 1000000000ull) {
            last = now;
            progress(run, what, start, end, round);
        }
    }
}

static void assign(sb_run *run)
{
    const lg_opts *o = run->o;
    /* Subscribers: items of every subscription on nodes 0, 1, ... (wrapping
     * after the 100 contract nodes; counters: one item per counter). */
    for (unsigned i = 0; i < run->nsubscribers; i++) {
        sb_sess *s = &run->sess[i];
        s->subscriber = true;
        s->nsubs = run->counters ? 1 : o->subs;
        s->nitems = s->nsubs * o->nodes;
        for (unsigned k = 0; k < s->nsubs; k++) {
            s->subs[k].s = s;
            s->subs[k].first_item = k * o->nodes;
            s->subs[k].nitems = o->nodes;
        }
        for (unsigned h = 0; h < s->nitems; h++)
            s->items[h].node = run->counters ? h : (h % o->nodes) % CONTRACT_NODES;
    }
}

static int build(sb_run *run)
{
    const lg_opts *o = run->o;
    run->nsubscribers = run->counters ? 1 : o->sessions;
    unsigned dedicated = run->counters ? 0 : o->writers;
    run->nsess = run->nsubscribers + dedicated;
    run->sess = calloc(run->nsess, sizeof(sb_sess));
    if (!run->sess)
        return -1;
    for (unsigned i = 0; i < run->nsess; i++) {
        sb_sess *s = &run->sess[i];
        s->run = run;
        s->index = i;
        if (i < run->nsubscribers) {
            unsigned nsubs = run->counters ? 1 : o->subs;
            s->subs = calloc(nsubs, sizeof(sb_sub));
            s->items = calloc((size_t)nsubs * o->nodes, sizeof(sb_item));
            if (!s->subs || !s->items)
                return -1;
        }
    }
    assign(run);
    if (!run->counters && !run->events && o->write_nodes > 0) {
        run->nwriters = dedicated ? dedicated : 1;
        if (run->nwriters > o->write_nodes)
            run->nwriters = o->write_nodes;
        run->writers = calloc(run->nwriters, sizeof(sb_writer));
        if (!run->writers)
            return -1;
        for (unsigned i = 0; i < run->nwriters; i++)
            if (writer_init(run, &run->writers[i],
                            dedicated ? &run->sess[run->nsubscribers + i] : &run->sess[0]))
                return -1;
        for (unsigned n = 0; n < o->write_nodes; n++)
            writer_add_node(&run->writers[n % run->nwriters], n);
    }
    /* Loopback sources: one address per SESSIONS_PER_SOURCE connections. */
    unsigned need = (run->nsess + SESSIONS_PER_SOURCE - 1) / SESSIONS_PER_SOURCE;
    if (need > 250)
        need = 250;
    run->nsources = o->sources ? o->sources : need;
    if (run->nsources > 1) {
        run->sources = calloc(run->nsources, sizeof(*run->sources));
        if (!run->sources)
            return -1;
        for (unsigned i = 0; i < run->nsources; i++)
            snprintf(run->sources[i], sizeof(run->sources[i]), "127.0.0.%u", 2 + i);
    }
    return 0;
}

static void free_run(sb_run *run)
{
    for (unsigned i = 0; run->sess && i < run->nsess; i++) {
        sb_sess *s = &run->sess[i];
        if (s->c)
            uas_client_delete(s->c);
        for (unsigned h = 0; s->items && h < s->nitems; h++)
            uas_rx_set_free(&s->items[h].rx);
        free(s->items);
        free(s->subs);
        free(s->acks);
    }
    free(run->sess);
    for (unsigned i = 0; run->writers && i < run->nwriters; i++) {
        if (run->loop)
            ev_timer_stop(uas_loop_ev(run->loop), &run->writers[i].timer);
        uas_write_log_free(&run->writers[i].log);
        free(run->writers[i].nodes);
        free(run->writers[i].wv);
    }
    free(run->writers);
    free(run->sources);
}

/* Sessions and items judged by the delivery rule. */
static void evaluate_writes(sb_run *run, uint64_t end_ns, uas_result *r)
{
    uas_deliv_rule rule;
    memset(&rule, 0, sizeof(rule));
    rule.t0_ns = run->t0;
    rule.t1_ns = run->t1;
    rule.end_ns = end_ns;
    rule.pub_ns = (uint64_t)(run->rev_pub_ms * 1e6);
    rule.sampling_ns = (uint64_t)(run->rev_sampling_ms * 1e6);
    uint64_t g = rule.pub_ns / 10;
    rule.guard_ns = g > 50000000ull ? g : 50000000ull;
    rule.queue_size = run->rev_queue;
    uas_deliv_plan *plans = calloc(run->nwriters ? run->nwriters : 1, sizeof(*plans));
    if (!plans)
        return;
    for (unsigned i = 0; i < run->nwriters; i++) {
        uas_deliv_plan_build(&plans[i], &run->writers[i].log, &rule);
        r->writes += plans[i].judged_count;
    }
    uas_deliv_count total;
    memset(&total, 0, sizeof(total));
    for (unsigned i = 0; i < run->nsubscribers; i++) {
        sb_sess *s = &run->sess[i];
        if (!s->t_ready)
            continue; /* never subscribed: counted in sessions_ready */
        bool drops = s->state != SS_READY;
        for (unsigned h = 0; h < s->nitems; h++) {
            sb_writer *w = run->node_writer[s->items[h].node];
            if (!w)
                continue;
            uas_deliv_count c;
            memset(&c, 0, sizeof(c));
            uas_deliv_check(&plans[w - run->writers], &s->items[h].rx, &c);
            total.expected += c.expected;
            total.delivered += c.delivered;
            total.missed += c.missed;
            total.values += c.values;
            if (c.missed) {
                r->items_missing++;
                drops = true;
            }
        }
        r->sessions_with_drops += drops;
    }
    for (unsigned i = 0; i < run->nwriters; i++)
        uas_deliv_plan_free(&plans[i]);
    free(plans);
    r->notif_expected = total.expected;
    r->notif_delivered = total.delivered;
    r->notif_missed = total.missed;
    r->values_seen = total.values;
    r->delivery_pct =
        total.expected ? 100.0 * (double)total.delivered / (double)total.expected : 0.0;
}

/* Every event numbered in [ev_a, ev_b) must have reached every item. */
static void evaluate_events(sb_run *run, uas_result *r)
{
    r->has_events = true;
    r->events_reported = run->ev_b - run->ev_a;
    r->events_reported_per_s = (double)r->events_reported / r->duration_s;
    r->other_events = run->other_events;
    for (unsigned i = 0; i < run->nsubscribers; i++) {
        sb_sess *s = &run->sess[i];
        if (!s->t_ready)
            continue;
        bool drops = s->state != SS_READY;
        for (unsigned h = 0; h < s->nitems; h++) {
            uint64_t got = 0;
            for (uint64_t k = run->ev_a; k < run->ev_b; k++)
                got += uas_rx_set_has(&s->items[h].rx, (uint32_t)(k - run->ev_base));
            r->notif_expected += r->events_reported;
            r->notif_delivered += got;
            r->values_seen += got;
            if (got < r->events_reported) {
                r->items_missing++;
                drops = true;
            }
        }
        r->sessions_with_drops += drops;
    }
    r->notif_missed = r->notif_expected - r->notif_delivered;
    r->delivery_pct =
        r->notif_expected ? 100.0 * (double)r->notif_delivered / (double)r->notif_expected : 0.0;
}

static void evaluate_counters(sb_run *run, uas_result *r)
{
    sb_sess *s = &run->sess[0];
    r->min_sample_pct = r->min_notif_pct = s->nitems ? 1e9 : 0;
    unsigned ok = 0;
    for (unsigned h = 0; h < s->nitems; h++) {
        uas_counter_eval e;
        uas_counter_track_eval(&s->items[h].ct, run->rev_sampling_ms, run->rev_pub_ms, 0.99, &e);
        ok += e.ok;
        if (!e.ok)
            r->items_missing++;
        double sp = 100.0 * e.sample_ratio, np = 100.0 * e.notif_ratio;
        if (!s->items[h].ct.have)
            sp = np = 0;
        if (sp < r->min_sample_pct)
            r->min_sample_pct = sp;
        if (np < r->min_notif_pct)
            r->min_notif_pct = np;
        if (e.span_s > 0)
            r->samples_per_s += e.samples / e.span_s;
        r->notif_expected += (uint64_t)(e.expected_notif + 0.5);
    }
    r->notif_delivered = ok; /* items that passed */
    r->delivery_pct = s->nitems ? 100.0 * ok / s->nitems : 0;
}

int lg_sub_run_once(const lg_opts *o, const lg_variant *var, unsigned round, uas_result *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->scenario, sizeof(r->scenario), "%s", o->scenario_name);
    snprintf(r->args, sizeof(r->args), "%s", o->args);
    lg_variant_label(o, var, r->variant, sizeof(r->variant));
    r->has_notif = true;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        r->fd_limit = (unsigned long)rl.rlim_cur;

    sb_run *run = calloc(1, sizeof(*run));
    if (!run)
        return -1;
    run->o = o;
    lg_sec sec;
    run->sec = &sec;
    if (lg_sec_open(&sec, o, var->security) != 0) {
        lg_sec_close(&sec);
        free(run);
        return -1;
    }
    run->counters = o->scenario == SC_COUNTERS;
    run->events = o->scenario == SC_EVENTS;
    if (run->events)
        build_event_filter(run);
    run->rev_queue = UINT32_MAX;
    uas_hist_init(&run->lat);
    uas_hist_init(&run->write_rtt);
    int rc = -1;
    uas_client *ctrl = NULL;
    lg_child child;
    memset(&child, 0, sizeof(child));
    char cfg_path[64] = "";
    if (build(run) != 0) {
        fprintf(stderr, "self-load: out of memory\n");
        goto out;
    }
    r->sessions_target = run->nsubscribers;
    r->source_addresses = run->nsources ? run->nsources : 1;
    /* Both processes hold one socket per session. */
    unsigned long fds_needed = run->nsess + 64;
    if (r->fd_limit && r->fd_limit < fds_needed) {
        fprintf(stderr,
                "self-load: the descriptor limit (%lu, raised to the hard limit) is too low "
                "for %u sessions: raise `ulimit -Hn` to at least %lu\n",
                r->fd_limit, run->nsess, fds_needed);
        goto out;
    }

    /* The child. */
    const char *url = o->target;
    if (!url) {
        const char *extra[12];
        int n = lg_sec_child_args(&sec, extra, 0);
        char counters_s[16], rate_s[16];
        if (run->events) {
            snprintf(rate_s, sizeof(rate_s), "%u", o->event_rate);
            extra[n++] = "--event-rate";
            extra[n++] = rate_s;
        }
        if (run->counters) {
            snprintf(counters_s, sizeof(counters_s), "%u", o->nodes);
            extra[n++] = "--counters";
            extra[n++] = counters_s;
        }
        /* The server's default limits are 10000 sessions and connections. */
        if (run->nsess + 16 > 9000) {
            snprintf(cfg_path, sizeof(cfg_path), "/tmp/uas-selfload-%d.ini", (int)getpid());
            FILE *f = fopen(cfg_path, "w");
            if (!f)
                goto out;
            fprintf(f, "[transport]\nmax_connections = %u\n[session]\nmax_sessions = %u\n",
                    run->nsess + 64, run->nsess + 64);
            fclose(f);
            extra[n++] = "--config";
            extra[n++] = cfg_path;
        }
        extra[n] = NULL;
        if (lg_child_start(&child, o->exe, var->threads, o->server_cpus, extra) != 0) {
            fprintf(stderr, "self-load: cannot start the server child (%s)\n", o->exe);
            goto out;
        }
        url = child.url;
    }
    snprintf(run->url, sizeof(run->url), "%s", url);
    r->has_server = !o->target || o->target_pid > 0;
    if (o->target && o->target_pid > 0)
        child.pid = o->target_pid;
    lg_proc_sample idle, ready, a, b;
    memset(&idle, 0, sizeof(idle));
    memset(&ready, 0, sizeof(ready));
    if (r->has_server)
        lg_child_sample(&child, &idle);
    r->server_rss_idle_kb = idle.rss_kb;

    run->loop = uas_loop_new(64u << 20);
    if (!run->loop || lg_sec_discover(&sec, run->loop, url) != 0)
        goto out;
    ev_timer tick;
    ev_timer_init(&tick, on_tick, 0.01, 0.01);
    tick.data = run;
    ev_timer_start(uas_loop_ev(run->loop), &tick);
    uas_client_config cc;
    uas_client_config_default(&cc);
    cc.endpoint_url = url;
    cc.session_name = "self-load control";
    /* It idles through set-ups that can outlast the default minute. */
    cc.session_timeout_ms = 3600000;
    lg_sec_apply(&sec, &cc);
    ctrl = uas_client_new(run->loop, &cc, NULL, NULL);
    if (!ctrl || uas_client_connect(ctrl) != UAS_GOOD ||
        uas_client_wait_state(ctrl, UAS_CLIENT_SESSION_ACTIVE, 30000) != UAS_GOOD) {
        fprintf(stderr, "self-load: cannot connect to %s\n", url);
        goto out;
    }

    /* Set-up: sessions, subscriptions, items. The deadline allows the ramp
     * plus a minute. */
    run->phase = PH_SETUP;
    uint64_t setup_start = lg_now_ns();
    double ramp_s = o->ramp_rate ? (double)run->nsess / o->ramp_rate : 0;
    uint64_t setup_end = setup_start + (uint64_t)((ramp_s + 60 + run->nsess / 200.0) * 1e9);
    uint64_t last = 0;
    while (run->ready + run->failed < run->nsess && lg_now_ns() < setup_end) {
        uas_loop_run_once(run->loop, true);
        if (lg_now_ns() - last > 1000000000ull) {
            last = lg_now_ns();
            progress(run, "setting up", setup_start, setup_end, round);
        }
    }
    r->sessions_ready = 0;
    for (unsigned i = 0; i < run->nsubscribers; i++)
        r->sessions_ready += run->sess[i].state == SS_READY;
    if (run->t_last_ready > run->t_first_start)
        r->establish_s = (double)(run->t_last_ready - run->t_first_start) / 1e9;
    r->session_rate = r->establish_s > 0 ? r->sessions_ready / r->establish_s : 0;
    if (r->sessions_ready == 0 || (run->nwriters && run->writers[0].s->state != SS_READY)) {
        fprintf(stderr,
                "\nself-load: set-up failed (%u of %u sessions ready, %u failed); first "
                "error: %s at %s\n",
                run->ready, run->nsess, run->failed, uas_status_name(run->first_error),
                run->first_error_where);
        goto out;
    }
    if (run->failed || run->ready < run->nsess)
        fprintf(stderr, "\nself-load: %u of %u sessions did not set up; first error: %s at %s\n",
                run->nsess - run->ready, run->nsess, uas_status_name(run->first_error),
                run->first_error_where);
    if (r->has_server) {
        lg_child_sample(&child, &ready);
        unsigned items = 0;
        for (unsigned i = 0; i < run->nsubscribers; i++)
            items += run->sess[i].state == SS_READY ? run->sess[i].nitems : 0;
        /* Everything the server did to set a session up: OPN (the
         * asymmetric crypto when secured), CreateSession, ActivateSession,
         * the subscription and its items. */
        if (r->sessions_ready && ready.run_ns > idle.run_ns)
            r->server_cpu_us_per_session =
                (double)(ready.run_ns - idle.run_ns) / 1e3 / r->sessions_ready;
        if (ready.rss_kb > idle.rss_kb && r->sessions_ready) {
            r->rss_per_session_kb = (double)(ready.rss_kb - idle.rss_kb) / r->sessions_ready;
            r->rss_per_item_b = (double)(ready.rss_kb - idle.rss_kb) * 1024.0 / items;
        }
    }

    /* Warm-up with the writers running, then the window. */
    run->phase = PH_WARMUP;
    if (run->events && lg_read_u64(ctrl, "uastack.EventsReported", &run->ev_base) != 0) {
        fprintf(stderr,
                "\nself-load: %s has no ns=1;s=uastack.EventsReported (the events "
                "scenario needs a uaserver started with --event-rate)\n",
                url);
        goto out;
    }
    writers_start(run);
    run_until(run, lg_now_ns() + (uint64_t)(o->warmup * 1e9), "warm-up", round);
    uint64_t heap_a = 0, heap_b = 0, allocs_a = 0, allocs_b = 0;
    bool heap_ok = !o->target && lg_read_heap(ctrl, &heap_a, &allocs_a) == 0;
    uint64_t locks_a[4], locks_b[4];
    bool locks_ok = !o->target && lg_read_lock_waits(ctrl, locks_a) == 0;
    if (run->events && lg_read_u64(ctrl, "uastack.EventsReported", &run->ev_a) != 0)
        goto out;
    if (r->has_server)
        lg_child_sample(&child, &a);
    run->t0 = lg_now_ns();
    run->t1 = UINT64_MAX;
    run->seq_gaps_at_t0 = run->seq_gaps;
    run->phase = PH_MEASURE;
    uint64_t t1 = run->t0 + (uint64_t)(o->duration * 1e9);
    run_until(run, t1, "measuring", round);
    run->t1 = lg_now_ns();
    run->phase = PH_DRAIN;
    writers_stop(run);
    if (r->has_server)
        lg_child_sample(&child, &b);
    heap_ok = heap_ok && lg_read_heap(ctrl, &heap_b, &allocs_b) == 0;
    if (locks_ok && lg_read_lock_waits(ctrl, locks_b) == 0)
        lg_lock_waits_delta(r, locks_a, locks_b);
    if (run->events && lg_read_u64(ctrl, "uastack.EventsReported", &run->ev_b) != 0)
        goto out;
    /* Collect what the last writes (events) must still bring. */
    double tail_ms = run->rev_pub_ms + run->rev_sampling_ms + run->rev_pub_ms / 10 + 50 + 3000;
    run_until(run, lg_now_ns() + (uint64_t)(tail_ms * 1e6), "draining", round);
    uint64_t end_ns = lg_now_ns();
    run->phase = PH_STOP;
    fprintf(stderr, "\r%100s\r", "");

    r->duration_s = (double)(run->t1 - run->t0) / 1e9;
    r->notifications = run->notifications;
    r->notif_per_s = (double)run->notifications / r->duration_s;
    r->requests = run->notifications;
    r->throughput = r->notif_per_s;
    r->errors = run->publish_errors + run->write_errors;
    r->publish_errors = run->publish_errors;
    r->write_errors = run->write_errors;
    r->seq_gaps = run->seq_gaps - run->seq_gaps_at_t0;
    r->p50_ns = uas_hist_quantile(&run->lat, 0.50);
    r->p99_ns = uas_hist_quantile(&run->lat, 0.99);
    r->max_ns = run->lat.max;
    r->write_p50_ns = uas_hist_quantile(&run->write_rtt, 0.50);
    r->write_p99_ns = uas_hist_quantile(&run->write_rtt, 0.99);
    for (unsigned i = 0; i < run->nsubscribers; i++) {
        r->items += run->sess[i].t_ready ? run->sess[i].nitems : 0;
        r->sessions_lost += run->sess[i].t_ready && run->sess[i].state != SS_READY;
    }
    if (run->counters)
        evaluate_counters(run, r);
    else if (run->events)
        evaluate_events(run, r);
    else
        evaluate_writes(run, end_ns, r);
    uint64_t ops = run->notifications;
    if (r->has_server && ops > 0) {
        /* The threads' schedstat run time has ns resolution where the
         * clock ticks of /proc/PID/stat have 10 ms: light subscription
         * loads need it. The server's threads live for the whole run. */
        double cpu_ns =
            b.run_ns > a.run_ns ? (double)(b.run_ns - a.run_ns) : (double)(b.cpu_ns - a.cpu_ns);
        r->server_cpu_us_per_op = cpu_ns / 1e3 / (double)ops;
        r->busy_cores = cpu_ns / (double)(b.wall_ns - a.wall_ns);
        r->server_rss_kb = b.rss_kb;
        lg_judge_window(&a, &b, cpu_ns, r);
        if (run->counters && r->samples_per_s > 0)
            r->server_cpu_us_per_sample = cpu_ns / 1e3 / (r->samples_per_s * r->duration_s);
        if (heap_ok) {
            r->server_bytes_per_op = (double)(heap_b - heap_a) / (double)ops;
            r->server_allocs_per_op = (double)(allocs_b - allocs_a) / (double)ops;
        } else {
            r->server_bytes_per_op = r->server_allocs_per_op = -1;
        }
    } else {
        r->server_bytes_per_op = r->server_allocs_per_op = -1;
    }

    /* The verdict. */
    switch (o->scenario) {
    case SC_EVENTS:
        snprintf(r->criterion, sizeof(r->criterion),
                 "every event reported in the window reaches every item, no other events");
        r->pass = r->sessions_ready == run->nsubscribers && r->sessions_lost == 0 &&
                  r->events_reported > 0 && r->notif_missed == 0 && r->other_events == 0 &&
                  r->seq_gaps == 0;
        break;
    case SC_COUNTERS:
        snprintf(r->criterion, sizeof(r->criterion),
                 "every item >= 99 %% of its samples and of its publishing cycles");
        r->pass = r->items_missing == 0 && r->items > 0 && r->sessions_lost == 0;
        break;
    case SC_SESSIONS:
        snprintf(r->criterion, sizeof(r->criterion),
                 "all %u sessions subscribed, every expected delivery arrives", run->nsubscribers);
        r->pass = r->sessions_ready == run->nsubscribers && r->sessions_lost == 0 &&
                  r->notif_expected > 0 && r->notif_missed == 0 && r->seq_gaps == 0;
        break;
    default:
        snprintf(r->criterion, sizeof(r->criterion),
                 "every expected delivery arrives, no sequence gaps");
        r->pass = r->sessions_ready == run->nsubscribers && r->sessions_lost == 0 &&
                  r->notif_expected > 0 && r->notif_missed == 0 && r->seq_gaps == 0;
        break;
    }
    if (!r->pass) {
        char first[128] = "";
        if (run->first_error != UAS_GOOD)
            snprintf(first, sizeof(first), "%s at %s", uas_status_name(run->first_error),
                     run->first_error_where);
        uas_result_explain(r, first);
    }
    if (run->bad_handles || run->status_changes)
        fprintf(stderr, "self-load: %llu notifications with unknown handles, %llu status changes\n",
                (unsigned long long)run->bad_handles, (unsigned long long)run->status_changes);
    if (run->first_error != UAS_GOOD)
        fprintf(stderr, "self-load: first error: %s at %s\n", uas_status_name(run->first_error),
                run->first_error_where);
    rc = 0;
out:
    if (ctrl)
        uas_client_delete(ctrl);
    free_run(run);
    if (run->loop)
        uas_loop_delete(run->loop);
    free(run);
    if (!o->target)
        lg_child_stop(&child);
    if (cfg_path[0])
        unlink(cfg_path);
    lg_sec_close(&sec);
    return rc;
}
