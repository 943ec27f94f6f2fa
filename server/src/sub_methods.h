/* GetMonitoredItems and ResendData on the engine (sub_methods.c). */
#ifndef UAS_SUB_METHODS_H
#define UAS_SUB_METHODS_H

#include "sub_engine.h"

/* BadSubscriptionIdInvalid unless sub_id belongs to s; handles from a. */
uas_status uas_sub_get_monitored_items(uas_sub_session *s, uint32_t sub_id, uas_arena *a,
                                       uint32_t **server_handles, uint32_t **client_handles,
                                       size_t *count);
/* Whether any session of this engine has that subscription. */
/* ConditionRefresh / ConditionRefresh2 (Part 9, 5.5.7 and 5.5.8) on a
 * subscription of s: start, then (the server has no conditions to
 * repeat) end, queued on its event items (item_id 0) or on one
 * (item_id), past their where clauses. Good, BadSubscriptionIdInvalid,
 * BadUserAccessDenied (another session's), BadMonitoredItemIdInvalid (no
 * such event item), BadRefreshInProgress (the last refresh's events are
 * not all sent yet). */
uas_status uas_sub_condition_refresh(uas_sub_session *s, uint32_t sub_id, uint32_t item_id,
                                     const uas_sub_event *start, const uas_sub_event *end,
                                     int64_t now);
bool uas_sub_engine_has_subscription(uas_sub_engine *e, uint32_t sub_id);
/* Queue the last value of every data item again for the next Publish. */
uas_status uas_sub_resend_data(uas_sub_session *s, uint32_t sub_id, int64_t now);

#endif
