/* Subscription services and engine wiring (svc_subscription.c). */
#ifndef UAS_SVC_SUBSCRIPTION_H
#define UAS_SVC_SUBSCRIPTION_H

#include "server_internal.h"

/* The loop whose thread is running (NULL on other threads). */
extern _Thread_local uas_sloop *uas__current_loop;
/* The session whose request this thread is serving (method callbacks have
 * no request context). */
extern _Thread_local uas_session *uas__current_session;

/* Server object methods acting on the caller's subscriptions. */
uas_status uas_subs_methods_init(uas_server *s);

/* The defaults of the subscription limits of uas_server_config (also what
 * 0 stands for). */
void uas_server_config_subscription_defaults(uas_server_config *c);

uas_status uas_subs_init(uas_server *s);
void uas_subs_free(uas_server *s);
/* Seconds until the loop's subscription engine needs to run, -1: idle. */
double uas_subs_timer_remaining(uas_sloop *l);
void uas_subs_conn_opened(uas_sloop *l, uint32_t channel_id, uas_conn *c);
void uas_subs_conn_closed(uas_sloop *l, uint32_t channel_id, uas_conn *c);
/* A session ends: its subscriptions follow se->delete_subscriptions. */
void uas_subs_session_release(uas_server *s, uas_session *se);
uint32_t uas_subs_count(uas_server *s);
/* Hand an event reported by notifier to every engine (any thread). */
struct uas_sub_event;
void uas_subs_post_event(uas_server *s, const uas_nodeid *notifier, const struct uas_sub_event *ev);

/* ConditionRefresh(2) of a subscription of ss (events.c makes the
 * RefreshStart and RefreshEnd events); the caller holds ss's engine. */
struct uas_sub_session;
uas_status uas_server_condition_refresh(struct uas_sub_session *ss, uint32_t sub_id,
                                        uint32_t item_id, int64_t now_ms);

void uas_svc_create_subscription(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_modify_subscription(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_set_publishing_mode(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_delete_subscriptions(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_republish(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_transfer_subscriptions(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_create_monitored_items(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_modify_monitored_items(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_delete_monitored_items(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_set_monitoring_mode(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_set_triggering(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_publish(uas_request_ctx *ctx, const void *req, void *resp);

#endif
