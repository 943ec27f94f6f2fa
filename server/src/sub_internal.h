/* Internal structures of the subscription engine, shared by sub_engine.c
 * (engine, sessions, pools, node index), sub_item.c (monitored items),
 * sub_publish.c (publishing state machine) and sub_services.c. */
#ifndef UAS_SUB_INTERNAL_H
#define UAS_SUB_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>

#include "sub_engine.h"
#include "sub_filter.h"
#include "sub_map.h"
#include "sub_wheel.h"

typedef struct sub_sub sub_sub;
typedef struct sub_item sub_item;

/* DataValue info bits (Part 4, 7.39.1): InfoType DataValue + Overflow. */
#define SUB_STATUS_OVERFLOW 0x0480u

/* A DataValue owned by the engine. Scalars of pointer-free types up to 16
 * bytes (all numbers, DateTime, StatusCode, Guid) live in `inl` instead
 * of on the heap, which keeps the steady state of numeric monitoring free
 * of malloc; the variant's data pointer then points at inl, so such a
 * value must move with sub_dv_move, never with a plain struct copy. */
typedef union sub_inl {
    uint8_t b[16];
    uint64_t u[2];
    double d[2];
} sub_inl;

typedef struct sub_val {
    uas_datavalue dv;
    sub_inl inl;
} sub_val;

/* Deep copy of src into empty dst (inline when possible). BadOutOfMemory. */
uas_status sub_dv_store(uas_datavalue *dst, sub_inl *inl, const uas_datavalue *src);
void sub_dv_release(uas_datavalue *dv, sub_inl *inl);
void sub_dv_move(uas_datavalue *dst, sub_inl *dst_inl, uas_datavalue *src, sub_inl *src_inl);
/* The same for values that are queued (item queues, NotificationMessages):
 * a value that does not fit inline holds bytes of the memory budget, and
 * its unused inl records how many, so they go back wherever the value is
 * released. BadOutOfMemory also when the budget refuses. */
uas_status sub_dv_store_queued(uas_sub_engine *e, uas_datavalue *dst, sub_inl *inl,
                               const uas_datavalue *src);
void sub_dv_release_queued(uas_sub_engine *e, uas_datavalue *dv, sub_inl *inl);

/* One event's selected fields, from the item's queue until its
 * NotificationMessage is released. The fields are deep-copied into an arena
 * whose first block is the record's own memory, so a queued event costs no
 * malloc once the engine's pool is warm; a larger event spills into heap
 * blocks of that arena, returned with the record. The size holds a full
 * BaseEventType selection (8 fields, about 700 bytes with a short Message)
 * inline. Records are plain heap blocks of one size, pooled per engine
 * (up to cfg.pool_max), and any engine may take one back: a transfer
 * carries queued and sent records to another engine, which then releases
 * them into its own pool. */
#define SUB_EVREC_SIZE 1024u
typedef struct sub_evrec {
    struct sub_evrec *next_free;
    uas_variant *fields;
    uint32_t n;
    size_t charged; /* bytes it holds of the memory budget (sub_mem_take) */
    uas_arena arena;
    max_align_t mem[]; /* the arena's first block, up to SUB_EVREC_SIZE */
} sub_evrec;

/* A monitored node (the public uas_sub_watch). */
struct uas_sub_watch {
    uas_nodeid node;
    uint32_t hash;
    unsigned mask; /* what the address space was told */
    sub_list items;
    /* Items of each kind in the list: the mask follows from them without
     * a walk, so adding or removing one of many items on a node is O(1). */
    uint32_t ndata, nevents;
};

enum { SUB_ITEM_DATA = 0, SUB_ITEM_EVENT = 1 };
/* What a pushed item holds between a change and its next sample. */
enum { SUB_PENDING_NONE = 0, SUB_PENDING_VALUE = 1, SUB_PENDING_READ = 2 };

struct sub_item {
    sub_sub *sub;
    uint32_t id;
    uint32_t client_handle;
    uint8_t kind;
    uint8_t mode; /* uas_monitoring_mode */
    uint8_t pending;
    bool discard_oldest;
    bool pushed;    /* changes arrive through value_changed */
    bool triggered; /* a triggering item asked this Sampling item to report */
    bool has_last;
    bool numeric; /* deadband allowed */
    uas_timestamps_to_return ttr;
    uas_nodeid node;
    uint32_t attr;
    uas_string index_range;
    double sampling_interval; /* revised, reported */
    int64_t sampling_ms;      /* 0: every change */
    int64_t next_sample_at;   /* pushed items: earliest time of the next sample */
    /* DataChangeFilter */
    int32_t trigger;
    uint32_t deadband_type;
    double deadband_value; /* as requested */
    double deadband;       /* absolute, < 0: none */
    /* EventFilter (heap copy) */
    uas_event_filter *efilter;
    /* queue: ring of qsize entries, qcount used from qhead */
    uint32_t qsize, qhead, qcount;
    sub_val *dq;    /* data items */
    sub_evrec **eq; /* event items */
    /* An EventQueueOverflowEventType event waiting to be reported, in
     * addition to the queue: first (discardOldest) or last (NULL: none). */
    sub_evrec *ovf;
    sub_val last; /* the last value that passed the filter */
    sub_val pending_v;
    sub_timer sample_timer;
    uas_sub_watch *watch; /* pushed data and event items */
    sub_list watch_link;
    sub_list sub_link;
    sub_list ready_link; /* in sub->ready: has something to report */
    uint32_t *links;     /* ids of the items this one triggers */
    uint32_t nlinks, links_cap;
};

/* A NotificationMessage kept for Republish; pooled with its arrays. */
typedef struct sub_msg {
    struct sub_msg *next_free;
    uint32_t seq;
    uas_datetime publish_time;
    uint32_t ndc, dc_cap;
    uas_monitored_item_notification *dc;
    sub_inl *dc_inl;
    uint32_t nev, ev_cap;
    uas_event_field_list *ev;
    sub_evrec **ev_rec; /* ev[i]'s fields live in ev_rec[i] */
} sub_msg;

/* Budget bytes of a message's arrays, charged from when they grow until
 * they are freed (pooled messages keep theirs). */
static inline size_t sub_msg_arrays_size(uint32_t dc_cap, uint32_t ev_cap)
{
    return (size_t)dc_cap * (sizeof(uas_monitored_item_notification) + sizeof(sub_inl)) +
           (size_t)ev_cap * (sizeof(uas_event_field_list) + sizeof(sub_evrec *));
}

struct sub_sub {
    uas_sub_engine *e;
    uas_sub_session *session;
    uas_sub_owner owner; /* kept when orphaned and across engines */
    uint32_t id;
    double interval; /* revised, ms */
    int64_t interval_ms;
    uint32_t lifetime_count;
    uint32_t max_keep_alive;
    int64_t orphaned_at; /* when its session went (in the engine's orphans) */
    /* A ConditionRefresh queued events not yet all sent: another one is
     * refused (BadRefreshInProgress) instead of queueing more. */
    bool refresh_pending;
    uint32_t slots;      /* queue slots its items reserved (max_queued_per_subscription) */
    uint32_t max_notifs; /* 0: unlimited */
    uint8_t priority;
    bool enabled;
    bool message_sent; /* something went out since creation */
    bool due;          /* wants a Publish request: data, keep-alive or more */
    int64_t due_since;
    uint32_t keep_alive_ctr; /* empty cycles since the last message */
    uint32_t lifetime_ctr;   /* cycles without a Publish request available */
    uint32_t next_seq;
    sub_timer pub_timer;
    sub_list session_link;
    sub_list items;
    uint32_t item_count;
    sub_map item_map;
    uint32_t next_item_id;
    sub_list ready;
    sub_msg **rq; /* retransmission ring */
    uint32_t rq_head, rq_count;
};

/* A Publish request waiting for something to send. */
typedef struct sub_parked {
    sub_list link;
    uas_sub_session *session;
    uas_sub_publish_target *target;
    uint32_t request_id;
    uint32_t request_handle;
    sub_timer timeout;
    uint32_t nresults;
    uas_status *results; /* inl_results or heap */
    uas_status inl_results[4];
} sub_parked;

/* A StatusChangeNotification waiting for the session's next Publish. */
typedef struct sub_status {
    sub_list link;
    uint32_t sub_id;
    uint32_t seq;
    uas_status status;
} sub_status;

struct uas_sub_session {
    uas_sub_engine *e;
    void *ud;
    uas_sub_owner owner; /* given to the subscriptions it creates or takes */
    bool orphans;        /* the engine's holder of subscriptions without session */
    sub_list subs;
    uint32_t sub_count;
    sub_list parked;
    uint32_t parked_count;
    sub_list status;
    uint32_t status_count;
    sub_list engine_link;
    sub_list dirty_link; /* needs a dispatch at the end of the tick */
};

enum { SUB_VWATCH_SLOTS = 4096 }; /* a power of two */

struct uas_sub_engine {
    uas_sub_config cfg;
    sub_wheel wheel;
    sub_map subs_by_id;
    sub_map watches; /* node hash -> uas_sub_watch */
    sub_list sessions;
    uas_sub_session orphans;
    sub_list dirty;
    uint32_t next_sub_id;
    uint32_t nsessions, nsubs, nitems, nparked, norphans;
    uas_sub_shared *shared; /* cfg.shared or own_shared */
    uas_sub_shared own_shared;
    uint32_t nwatches;
    /* Which node values the engine watches, readable without the engine
     * lock by writers on every thread (svc_subscription.c): a count per
     * hash slot of the watches with data items, SUB_VWATCH_SLOTS of them,
     * made on the first such watch. A slot at 0 means no watched node has
     * that hash; a collision only costs a copy the engine then ignores. */
    _Atomic(_Atomic uint32_t *) vwatch;
    sub_msg *free_msgs;
    uint32_t nfree_msgs;
    sub_evrec *free_evrecs;
    uint32_t nfree_evrecs;
    /* Records taken and not yet returned here, and their recent peak: the
     * pool keeps up to max(pool_max, peak) idle records, so a steady load
     * larger than pool_max allocates nothing, and the peak decays by a
     * quarter a second (sub_evrec_trim) so memory returns after a burst. */
    uint32_t evrecs_in_use, evrecs_peak;
    int64_t evrecs_trim_at;
    /* Bytes reserved from the process memory budget and not yet handed
     * to a queue (sub_mem_take): reserving in batches keeps the shared
     * counter off the path of each notification. */
    size_t mem_credit;
    sub_list free_parked;
    uint32_t nfree_parked;
    uint32_t *seq_buf; /* availableSequenceNumbers of one response */
    uint64_t messages_sent, keep_alives_sent;
    uint32_t subs_created;
    uas_arena scratch; /* samples, filter evaluation; reset after each use */
    uint8_t scratch_mem[4096];
};

/* ---- sub_engine.c ---- */
/* Publish and event queues draw on the process memory budget
 * (ua/membudget.h): item queue rings, event records, data values that do
 * not fit inline, NotificationMessage arrays. sub_mem_take reserves n
 * bytes (false: the budget is exhausted, counted in shared->budget_refused);
 * sub_mem_force counts them whatever the limit (memory that must exist,
 * such as the one EventQueueOverflow record that reports a loss);
 * sub_mem_give returns them, in any engine: the charge moves with the
 * memory (transfers carry it along). */
bool sub_mem_take(uas_sub_engine *e, size_t n);
void sub_mem_force(uas_sub_engine *e, size_t n);
void sub_mem_give(uas_sub_engine *e, size_t n);
uas_datetime sub_utc(uas_sub_engine *e, int64_t now);
sub_msg *sub_msg_get(uas_sub_engine *e);
void sub_msg_put(uas_sub_engine *e, sub_msg *m);
/* An empty event record (NULL: out of memory). */
sub_evrec *sub_evrec_get(uas_sub_engine *e);
void sub_evrec_trim(uas_sub_engine *e, int64_t now);
/* Back to e's pool, whichever engine made it (NULL: nothing). */
void sub_evrec_put(uas_sub_engine *e, sub_evrec *r);
sub_parked *sub_parked_get(uas_sub_engine *e);
void sub_parked_put(uas_sub_engine *e, sub_parked *p);
/* The engine's filter of watched values (vwatch), made before its first
 * data item's watch so that an engine never watches a value that writers
 * cannot see it watch; false when it cannot be made. */
bool sub_vwatch_ready(uas_sub_engine *e);
/* Attach a pushed/event item to its node's watch (BadOutOfMemory). */
uas_status sub_watch_attach(uas_sub_engine *e, sub_item *it);
/* The node's watch, created without items when there is none (NULL: out
 * of memory): a transfer reserves its watches before it moves anything,
 * so that attaching afterwards cannot fail. */
uas_sub_watch *sub_watch_get(uas_sub_engine *e, const uas_nodeid *node);
/* Free the node's watch if it has no items (a reservation not used). */
void sub_watch_forget_unused(uas_sub_engine *e, const uas_nodeid *node);
void sub_watch_detach(uas_sub_engine *e, sub_item *it);
void sub_mark_dirty(uas_sub_session *s);
/* cb.sub_changed, when set. */
void sub_changed(uas_sub_engine *e, int64_t old_ms, int64_t new_ms);
sub_sub *sub_find(uas_sub_session *s, uint32_t id); /* in this session only */
/* n more of a server-wide count, unless that passes max (0: no limit). */
bool sub_reserve(atomic_uint *count, uint32_t n, uint32_t max);
/* Up to n more, as many as max leaves (0: no limit); how many. */
uint32_t sub_reserve_upto(atomic_uint *count, uint32_t n, uint32_t max);
void sub_release(atomic_uint *count, uint32_t n);
/* Monitored items of all the session's subscriptions. */
uint32_t sub_session_items(const uas_sub_session *s);
/* A limit refused something: counted, and logged at most a few times per
 * interval (a client can hit limits at will). */
void sub_limit_hit(uas_sub_engine *e, const char *what, uint32_t limit);
void sub_scratch_reset(uas_sub_engine *e);

/* ---- sub_item.c ---- */
/* Revise and apply MonitoringParameters (filter, sampling, queue) to a new
 * or existing item (it->kind, attr, node, pushed, numeric set); fills the
 * revised values and the filter result (from a). The item keeps its
 * previous settings when this fails. */
uas_status sub_item_configure(sub_item *it, const uas_monitoring_parameters *p, bool create,
                              int64_t now, double *rev_sampling, uint32_t *rev_queue,
                              uas_extensionobject *filter_result, uas_arena *a);
/* Start monitoring (initial sample, timers) after creation or enabling. */
void sub_item_start(sub_item *it, int64_t now);
void sub_item_set_mode(sub_item *it, uas_monitoring_mode mode, int64_t now);
/* Stop, unregister (node watch, subscription) and free. */
void sub_item_delete(sub_item *it);
void sub_item_push(sub_item *it, const uas_datavalue *dv, int64_t now);
void sub_item_event(sub_item *it, const uas_sub_event *ev, int64_t now);
/* The same without the where clause (ConditionRefresh's markers). */
void sub_item_event_unfiltered(sub_item *it, const uas_sub_event *ev, int64_t now);
/* A pushed item moved to another engine may have missed a write that was
 * handed to the engines one after the other while it moved: sample the
 * node's current value (at the sampling interval). True when that queued
 * a notification. */
bool sub_item_resync(sub_item *it, int64_t now);
/* Queue the last value again (TransferSubscriptions sendInitialValues). */
void sub_item_resend_last(sub_item *it, int64_t now);
/* Move up to max queued notifications into m (0 when m cannot grow). */
uint32_t sub_item_drain(sub_item *it, sub_msg *m, uint32_t max);
void sub_item_timer_fn(sub_timer *t, int64_t now);

/* ---- sub_publish.c ---- */
void sub_pub_timer_fn(sub_timer *t, int64_t now);
void sub_parked_timeout_fn(sub_timer *t, int64_t now);
void sub_session_dispatch(uas_sub_session *s, int64_t now);
/* Unlink from its session, free items, messages and timers. */
void sub_delete(sub_sub *s);
void sub_attach(sub_sub *s, uas_sub_session *ss);
void sub_detach(sub_sub *s);
void sub_queue_status(uas_sub_session *ss, uint32_t sub_id, uint32_t seq, uas_status st);
/* Take the oldest parked request off its session's queue (NULL: none). */
sub_parked *sub_parked_pop(uas_sub_session *ss);
void sub_parked_unlink(sub_parked *p);
/* Answer an unlinked parked request with a Bad service result and pool it. */
void sub_answer_error(uas_sub_engine *e, sub_parked *p, uas_status st, int64_t now);
/* availableSequenceNumbers of s, copied into a (NULL a: engine buffer). */
uint32_t *sub_available_seqs(sub_sub *s, size_t *n, uas_arena *a);
uas_status sub_ack(uas_sub_session *ss, const uas_subscription_acknowledgement *ack);
sub_msg *sub_rq_find(sub_sub *s, uint32_t seq);
/* A NotificationMessage pointing into m (valid while m is). */
typedef struct sub_msg_view {
    uas_notification_message nm;
    uas_extensionobject eo[2];
    uas_data_change_notification dcn;
    uas_event_notification_list enl;
} sub_msg_view;
void sub_msg_view_init(sub_msg_view *v, const sub_msg *m);

#endif
