/* The subscription engine: OPC UA Part 4 subscriptions (5.13) and monitored
 * items (5.12) for one event loop, with no I/O, no threads, no locks and an
 * injected clock (every entry point takes now_ms, a monotonic millisecond
 * count), so every rule is unit-tested deterministically.
 *
 * Wiring it into the server (one engine per event loop):
 *
 *  1. uas_sub_engine_new(cfg, now) when the loop starts; cfg.cb carries
 *     send_publish (encode and send one PublishResponse now), read_value
 *     (sample a node attribute), check_node (validate an item at creation),
 *     get_eu_range (percent deadband), watch (the address space keeps a
 *     per-node list of engines interested in value writes / events).
 *  2. One libev timer per loop: after every call into the engine, re-arm
 *     it at uas_sub_engine_next_deadline(); when it fires, call
 *     uas_sub_engine_tick(e, now) (it returns the next deadline too).
 *  3. uas_sub_session_new() when a session is created (keep the pointer in
 *     uas_session), uas_sub_session_delete() when it is closed or expires
 *     (CloseSession's deleteSubscriptions decides whether the
 *     subscriptions die or stay transferable until their lifetime ends).
 *  4. Services: the dispatcher calls uas_sub_<service>(session, req, resp,
 *     arena, now) for the eleven subscription/monitored item services; each
 *     fills resp from the arena and returns (and stores in
 *     resp->response_header.service_result) the service result.
 *     Publish is different: uas_sub_publish() never fills a response in the
 *     call; the answer, immediate or later, always goes through
 *     cb.send_publish with the request id and the target given (the
 *     dispatcher sends nothing for a Publish). A Bad service_result in that
 *     response means "answer with a ServiceFault".
 *  5. Writes: when a Value is written, the address space calls
 *     uas_sub_engine_value_changed_watch(e, watch, dv, now) for every watch
 *     registered on the node (from another loop: through that loop's async
 *     queue). Data-source (callback) nodes report pushed = false in
 *     check_node and are sampled through read_value instead.
 *  6. A connection that closes: uas_sub_engine_drop_target() forgets its
 *     parked Publish requests without answering them.
 *
 * Memory: the engine allocates with uas_malloc (the stack's pluggable,
 * counted allocator); responses handed to send_publish point into engine
 * memory valid only during the callback; service responses come from the
 * caller's arena. Steady state (values of pointer-free scalar types, queues
 * and Publish queue warm) allocates nothing: messages, parked Publish
 * requests and timers are pooled or embedded.
 *
 * Subscription ids come from cfg.sub_id_first + k * cfg.sub_id_step so N
 * engines (loops) of one server hand out disjoint ids. */
#ifndef UAS_SUB_ENGINE_H
#define UAS_SUB_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ua/types.h>

typedef struct uas_sub_engine uas_sub_engine;
typedef struct uas_sub_session uas_sub_session;
/* The server's handle for "where the Publish response goes" (its
 * connection/channel); never dereferenced by the engine. */
typedef struct uas_sub_publish_target uas_sub_publish_target;
/* The engine's record of one monitored node, handed to the address space
 * through cb.watch so a write reaches the items without a node lookup. */
typedef struct uas_sub_watch uas_sub_watch;

/* What cb.watch registers, as a mask (0: nothing, forget the watch). */
enum { UAS_SUB_WATCH_VALUE = 1, UAS_SUB_WATCH_EVENTS = 2 };

/* Attribute ids used by the engine (Part 6, A.1). */
enum { UAS_SUB_ATTR_EVENT_NOTIFIER = 12, UAS_SUB_ATTR_VALUE = 13 };

/* Filled by cb.check_node for an item to create. */
typedef struct uas_sub_node_info {
    /* Value changes of the node arrive through value_changed (a stored
     * variable); false: sampled through read_value at the sampling
     * interval (a data-source node). Only meaningful for the Value. */
    bool pushed;
    /* The DataType is numeric, so deadband filters are allowed. */
    bool numeric;
} uas_sub_node_info;

/* An event being reported, as seen by the EventFilter evaluator: field
 * values are fetched on demand, so an event with many fields costs only
 * what the filters select. */
typedef struct uas_sub_event {
    /* Value of a SimpleAttributeOperand (typeDefinitionId, browsePath,
     * attributeId, indexRange) for this event: Good with *out (allocated
     * from a), or Bad when the event has no such field (null in the
     * EventFieldList). */
    uas_status (*get_field)(const struct uas_sub_event *ev, const uas_simple_attribute_operand *op,
                            uas_variant *out, uas_arena *a);
    /* True when the event's type is type_id or one of its subtypes. */
    bool (*is_of_type)(const struct uas_sub_event *ev, const uas_nodeid *type_id);
    void *ud;
} uas_sub_event;

/* The BaseEventType fields of an event (Part 5, 6.4.2), and the one place
 * that answers a SimpleAttributeOperand naming one of them (a browse path
 * of one namespace-0 name, Value attribute): Good with *out allocated from
 * a, BadNoData for any other field. The caller checks the operand's type
 * definition against the event's type. */
typedef struct uas_base_event_fields {
    const uint8_t *event_id; /* 16 bytes */
    uas_nodeid event_type, source_node;
    const char *source_name, *message; /* message NULL: "" */
    uas_datetime time, receive_time;
    uint16_t severity;
} uas_base_event_fields;
uas_status uas_sub_base_event_field(const uas_base_event_fields *f,
                                    const uas_simple_attribute_operand *op, uas_variant *out,
                                    uas_arena *a);

/* Whom a subscription belongs to: the user its session acted for when it
 * was created or last transferred, so that only the same user may take it
 * over (Part 4, 5.13.7), even after that session is gone. The server
 * derives the key from its session; the engine only compares keys, so a
 * digest is enough and the engine never sees who the user is. */
enum { UAS_SUB_OWNER_LEN = 32 };
typedef struct uas_sub_owner {
    uint8_t key[UAS_SUB_OWNER_LEN];
} uas_sub_owner;

typedef struct uas_sub_callbacks {
    /* Hand over a finished PublishResponse for a parked request (valid only
     * during the call; encode it before returning). Must not call back into
     * the engine. */
    void (*send_publish)(void *ud, uas_sub_publish_target *target, uint32_t request_id,
                         const uas_publish_response *resp);
    /* Sample node.attribute[index_range] into *out (memory from a). A read
     * error is reported as a DataValue with a Bad status. */
    void (*read_value)(void *ud, const uas_nodeid *node, uint32_t attribute,
                       const uas_string *index_range, uas_datavalue *out, uas_arena *a);
    /* Validate the node, attribute, index range and data encoding of an
     * item: Good (info filled) or BadNodeIdUnknown, BadAttributeIdInvalid,
     * BadIndexRangeInvalid, BadNotReadable, BadDataEncodingInvalid ...
     * NULL: every item is accepted as pushed and numeric. */
    uas_status (*check_node)(void *ud, const uas_read_value_id *item, uas_sub_node_info *info);
    /* EURange of an AnalogItem for a percent deadband: Good with *out, or
     * the status the item gets (Part 8 names BadDeadbandFilterInvalid for
     * "no EURange"). NULL: BadMonitoredItemFilterUnsupported. */
    uas_status (*get_eu_range)(void *ud, const uas_nodeid *node, uas_range *out);
    /* The engine's interest in a node changed: mask of UAS_SUB_WATCH_*; 0
     * means forget w (it is freed after the call). May be NULL. */
    void (*watch)(void *ud, const uas_nodeid *node, uas_sub_watch *w, unsigned mask);
    /* TransferSubscriptions, asked after the owners matched (see
     * uas_sub_owner): may session `to` take a subscription of session
     * `from` (session_ud values; from is NULL for a subscription whose
     * session is gone)? NULL: yes. */
    bool (*may_transfer)(void *ud, void *from, void *to);
    /* UTC for publish times and server timestamps. NULL: system clock. */
    uas_datetime (*utc_now)(void *ud, int64_t now_ms);
    /* A subscription was created (old_ms 0), deleted (new_ms 0: by the
     * client, its session, its lifetime or the engine's end) or got a new
     * publishing interval, for counters kept across engines (the server's
     * diagnostics) that must be readable without an engine's lock. A
     * transfer between engines is neither. May be NULL. */
    void (*sub_changed)(void *ud, uint32_t old_interval_ms, uint32_t new_interval_ms);
} uas_sub_callbacks;

typedef struct uas_sub_limits {
    double min_publishing_interval;         /* ms, 50 */
    double max_publishing_interval;         /* ms, 3,600,000 */
    double min_sampling_interval;           /* ms, 50: what 0 means for sampled nodes */
    double max_sampling_interval;           /* ms, 3,600,000 */
    uint32_t max_keep_alive_count;          /* 10,000 */
    uint32_t max_lifetime_count;            /* 30,000 (>= 3 * max_keep_alive_count) */
    uint32_t max_notifications_per_publish; /* 10,000; caps the client's 0 (= unlimited) */
    /* Counts of every engine sharing cfg.shared (a whole server): */
    uint32_t max_subscriptions;        /* 10,000 */
    uint32_t max_monitored_items;      /* 1,000,000 */
    uint32_t max_queued_notifications; /* queue slots of all items, 0 = unlimited */
    /* Per session and per subscription: */
    uint32_t max_subscriptions_per_session; /* 100 */
    uint32_t max_items_per_session;         /* 0 = unlimited */
    uint32_t max_items_per_subscription;    /* 100,000 */
    uint32_t max_queued_per_subscription;   /* queue slots of its items, 0 = unlimited */
    /* lifetime count x publishing interval, 0 = unlimited: */
    uint32_t max_subscription_lifetime_ms;
    uint32_t max_orphan_lifetime_ms;   /* a subscription without session, 0 = its lifetime */
    uint32_t max_publish_requests;     /* parked per session, 20 */
    uint32_t max_retransmission;       /* messages kept per subscription, 10 */
    uint32_t max_queue_size;           /* data items, 1,000 */
    uint32_t default_event_queue_size; /* event items asking for 0, 100 */
    uint32_t max_event_queue_size;     /* 10,000 */
    uint32_t max_triggering_links;     /* per item, 1,000 */
    uint32_t max_operations;           /* ids/items per call, 0 = unlimited */
    /* Event filters (where clauses), see sub_filter.h. */
    uint32_t max_filter_elements;     /* elements of a where clause, 64 */
    uint32_t max_like_pattern_length; /* bytes of a Like pattern, 1024 */
    uint32_t max_filter_steps;        /* work per evaluation (event and item), 100,000 */
    uint32_t max_filter_scratch;      /* scratch bytes per evaluation, 65,536 */
} uas_sub_limits;

/* Counts kept for all the engines of one server, so that the limits
 * marked above hold server-wide, not per event loop: every engine of a
 * server points at one record (atomics: the engines run on their own
 * threads). "slots" are queue entries reserved by monitored items (a data
 * item's queue is allocated at its revised size; an event item's holds
 * up to that many event records). */
typedef struct uas_sub_shared {
    atomic_uint subs, items, slots, orphans;
    atomic_uint orphans_dropped; /* deleted early: orphan caps and max_orphan_lifetime_ms */
    atomic_uint refused;         /* subscriptions/items refused or queues revised by a limit */
    /* Bytes the engines hold of the process memory budget for queues
     * (their batches included), and queue work the budget refused: items
     * not created, notifications not queued. */
    atomic_size_t queue_bytes;
    atomic_uint budget_refused;
} uas_sub_shared;

typedef struct uas_sub_config {
    uas_sub_callbacks cb;
    void *ud; /* first argument of every callback */
    uas_sub_limits limits;
    uint32_t sub_id_first; /* 1 */
    uint32_t sub_id_step;  /* 1 */
    uint32_t wheel_slots;  /* 2048 (ms per revolution) */
    uint32_t pool_max;     /* idle messages, parked requests and event records (1 KiB) kept, 4096 */
    /* The server-wide counts (zeroed by the owner, outliving the engines);
     * NULL: the engine keeps its own, and its limits hold for it alone. */
    uas_sub_shared *shared;
} uas_sub_config;

typedef struct uas_sub_stats {
    uint32_t sessions;
    uint32_t subscriptions;
    uint32_t monitored_items;
    uint32_t parked_publishes;
    uint32_t watched_nodes;
    uint32_t timers;
    uint32_t pooled_messages;
    uint64_t messages_sent; /* NotificationMessages with data */
    uint64_t keep_alives_sent;
    uint32_t subscriptions_created; /* since the engine started */
    uint32_t orphans;               /* subscriptions without session now */
} uas_sub_stats;

void uas_sub_config_default(uas_sub_config *cfg);

/* NULL on out of memory. */
uas_sub_engine *uas_sub_engine_new(const uas_sub_config *cfg, int64_t now_ms);
/* Deletes every session and subscription without answering anything. */
void uas_sub_engine_delete(uas_sub_engine *e);
/* Do all work due at now_ms (publishing cycles, keep-alives, lifetimes,
 * sampling, Publish timeouts); returns the next deadline (INT64_MAX:
 * none). Call it no earlier than needed: it is cheap but not free. */
int64_t uas_sub_engine_tick(uas_sub_engine *e, int64_t now_ms);
/* When tick should run next (INT64_MAX: nothing armed); re-arm the loop
 * timer with it after any call into the engine. */
int64_t uas_sub_engine_next_deadline(const uas_sub_engine *e);

/* A new value of the node's Value attribute (a write). Items on it take
 * the change at their sampling interval (0: every change). */
void uas_sub_engine_value_changed(uas_sub_engine *e, const uas_nodeid *node,
                                  const uas_datavalue *dv, int64_t now_ms);
void uas_sub_engine_value_changed_watch(uas_sub_engine *e, uas_sub_watch *w,
                                        const uas_datavalue *dv, int64_t now_ms);
/* An event reported by notifier (the caller walks the notifier hierarchy
 * and calls once per notifier); event items filter and queue it. */
void uas_sub_engine_post_event(uas_sub_engine *e, const uas_nodeid *notifier,
                               const uas_sub_event *ev, int64_t now_ms);
void uas_sub_engine_post_event_watch(uas_sub_engine *e, uas_sub_watch *w, const uas_sub_event *ev,
                                     int64_t now_ms);
/* Forget every parked Publish request of this target (connection closed). */
void uas_sub_engine_drop_target(uas_sub_engine *e, uas_sub_publish_target *target);
void uas_sub_engine_get_stats(const uas_sub_engine *e, uas_sub_stats *out);
/* The hash the engine files a node under (uas_sub_engine_may_watch). */
uint32_t uas_sub_nodeid_hash(const uas_nodeid *id);
/* Whether the engine may watch the value of the node of this hash, without
 * its lock: false means it does not (sequentially consistent: a watch
 * added before an item's first sample is seen by a write published after
 * that sample). Collisions answer true. */
bool uas_sub_engine_may_watch(const uas_sub_engine *e, uint32_t hash);
/* The limits the engine enforces (its configuration, fixed at creation). */
const uas_sub_limits *uas_sub_engine_limits(const uas_sub_engine *e);

/* session_ud is the server's session (given back to may_transfer). NULL on
 * out of memory. */
uas_sub_session *uas_sub_session_new(uas_sub_engine *e, void *session_ud);
/* Parked Publish requests are answered BadSessionClosed. With
 * delete_subscriptions false the subscriptions live on without a session
 * (orphans) until another session transfers them, their lifetime ends,
 * max_orphan_lifetime_ms passes, or the server drops them for its orphan
 * caps (uas_sub_engine_drop_oldest_orphan). */
void uas_sub_session_delete(uas_sub_session *s, bool delete_subscriptions, int64_t now_ms);
uint32_t uas_sub_session_subscription_count(const uas_sub_session *s);
/* The owner recorded on the subscriptions s creates or takes from now on;
 * set it before such a call when the session's user may have changed
 * (ActivateSession). A new session has the all-zero key, which every
 * session shares until the server sets one. */
void uas_sub_session_set_owner(uas_sub_session *s, const uas_sub_owner *owner);
const uas_sub_owner *uas_sub_session_owner(const uas_sub_session *s);

/* Orphaned subscriptions (their session closed with deleteSubscriptions
 * false, or expired) of this engine, of one owner or (owner NULL) all:
 * how many, and since when the oldest is orphaned (*oldest_ms; INT64_MAX:
 * none). The server compares engines with it to drop the oldest of all. */
uint32_t uas_sub_engine_orphans(const uas_sub_engine *e, const uas_sub_owner *owner,
                                int64_t *oldest_ms);
/* Deletes the oldest orphan (of owner, or of all); its id in *id. False:
 * there is none. Counted in shared->orphans_dropped. */
bool uas_sub_engine_drop_oldest_orphan(uas_sub_engine *e, const uas_sub_owner *owner, uint32_t *id);
/* The engine's server-wide counts (cfg.shared or its own). */
const uas_sub_shared *uas_sub_engine_shared(const uas_sub_engine *e);

/* ---- services (Part 4, 5.12 and 5.13) ---- */

uas_status uas_sub_create_subscription(uas_sub_session *s,
                                       const uas_create_subscription_request *req,
                                       uas_create_subscription_response *resp, uas_arena *a,
                                       int64_t now_ms);
uas_status uas_sub_modify_subscription(uas_sub_session *s,
                                       const uas_modify_subscription_request *req,
                                       uas_modify_subscription_response *resp, uas_arena *a,
                                       int64_t now_ms);
uas_status uas_sub_set_publishing_mode(uas_sub_session *s,
                                       const uas_set_publishing_mode_request *req,
                                       uas_set_publishing_mode_response *resp, uas_arena *a,
                                       int64_t now_ms);
uas_status uas_sub_delete_subscriptions(uas_sub_session *s,
                                        const uas_delete_subscriptions_request *req,
                                        uas_delete_subscriptions_response *resp, uas_arena *a,
                                        int64_t now_ms);
uas_status uas_sub_republish(uas_sub_session *s, const uas_republish_request *req,
                             uas_republish_response *resp, uas_arena *a, int64_t now_ms);
uas_status uas_sub_transfer_subscriptions(uas_sub_session *s,
                                          const uas_transfer_subscriptions_request *req,
                                          uas_transfer_subscriptions_response *resp, uas_arena *a,
                                          int64_t now_ms);
/* One subscription of TransferSubscriptions, taken from engine src
 * (to's own engine or another one) into session `to`, with its monitored
 * items, queues, retransmission queue and sequence numbers. The old session
 * gets a GoodSubscriptionTransferred StatusChangeNotification; with
 * send_initial_values every data item queues its current value again.
 * Between engines the caller holds both (always locked in one fixed order).
 * r: Good with availableSequenceNumbers (from a), BadSubscriptionIdInvalid
 * (src has no such subscription), BadUserAccessDenied (another owner than
 * to's, or may_transfer said no; the subscription stays with its session),
 * BadOutOfMemory (the subscription stays where it was). */
void uas_sub_transfer_from(uas_sub_engine *src, uint32_t sub_id, uas_sub_session *to,
                           bool send_initial_values, uas_transfer_result *r, uas_arena *a,
                           int64_t now_ms);
/* Acknowledgements are processed first; then the request is answered at
 * once (a late subscription, more notifications, a pending status change,
 * BadNoSubscription) or parked until a subscription needs it, its
 * timeoutHint passes (BadTimeout) or a newer request pushes it out of a
 * full queue (BadTooManyPublishRequests). Every answer goes through
 * cb.send_publish(target, request_id). */
void uas_sub_publish(uas_sub_session *s, uas_sub_publish_target *target, uint32_t request_id,
                     const uas_publish_request *req, int64_t now_ms);

uas_status uas_sub_create_monitored_items(uas_sub_session *s,
                                          const uas_create_monitored_items_request *req,
                                          uas_create_monitored_items_response *resp, uas_arena *a,
                                          int64_t now_ms);
uas_status uas_sub_modify_monitored_items(uas_sub_session *s,
                                          const uas_modify_monitored_items_request *req,
                                          uas_modify_monitored_items_response *resp, uas_arena *a,
                                          int64_t now_ms);
uas_status uas_sub_delete_monitored_items(uas_sub_session *s,
                                          const uas_delete_monitored_items_request *req,
                                          uas_delete_monitored_items_response *resp, uas_arena *a,
                                          int64_t now_ms);
uas_status uas_sub_set_monitoring_mode(uas_sub_session *s,
                                       const uas_set_monitoring_mode_request *req,
                                       uas_set_monitoring_mode_response *resp, uas_arena *a,
                                       int64_t now_ms);
uas_status uas_sub_set_triggering(uas_sub_session *s, const uas_set_triggering_request *req,
                                  uas_set_triggering_response *resp, uas_arena *a, int64_t now_ms);

#endif
