/* Events: the embedding API uas_server_report_event, the server's own
 * system events, and the view of an event that EventFilters evaluate
 * (sub_engine.h's uas_sub_event): the BaseEventType fields, computed on
 * demand so an event costs only what the filters select.
 *
 * Every event is reported through the Server object (the root of the
 * notifier hierarchy), so a client subscribed to Server sees them all. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include <ua/nodeids.h>

#include "aspace_internal.h"
#include "sub_engine.h"
#include "sub_methods.h"
#include "svc_subscription.h"

#ifndef UAS_MINIMAL
typedef struct event_view {
    const uas_event *ev;
    uint8_t event_id[16];
    uas_datetime time;
    uas_datetime receive_time;
} event_view;

static bool is_subtype(const uas_nodeid *sub, uint32_t super)
{
    return sub->ns == 0 && sub->kind == UAS_NODEID_NUMERIC &&
           as_ns0_is_subtype(sub->id.numeric, super);
}

static bool ev_is_of_type(const uas_sub_event *e, const uas_nodeid *type_id)
{
    const event_view *v = e->ud;
    if (type_id->ns != 0 || type_id->kind != UAS_NODEID_NUMERIC)
        return false;
    return is_subtype(v->ev->event_type, type_id->id.numeric);
}

static uas_status ev_get_field(const uas_sub_event *e, const uas_simple_attribute_operand *op,
                               uas_variant *out, uas_arena *a)
{
    const event_view *v = e->ud;
    /* A field declared on a type the event is not of is null. */
    if (op->type_definition_id.ns == 0 && op->type_definition_id.kind == UAS_NODEID_NUMERIC &&
        op->type_definition_id.id.numeric != 0 &&
        !is_subtype(v->ev->event_type, op->type_definition_id.id.numeric))
        return UAS_BAD_NO_DATA;
    uas_base_event_fields f = {
        .event_id = v->event_id,
        .event_type = *v->ev->event_type,
        .source_node =
            v->ev->source_node ? *v->ev->source_node : uas_nodeid_numeric(0, UAS_NS0ID_SERVER),
        .source_name = v->ev->source_name ? v->ev->source_name : "Server",
        .message = v->ev->message,
        .time = v->time,
        .receive_time = v->receive_time,
        .severity = v->ev->severity,
    };
    return uas_sub_base_event_field(&f, op, out, a);
}

uas_status uas_server_report_event(uas_server *s, const uas_event *ev)
{
    if (!ev || !ev->event_type || !is_subtype(ev->event_type, UAS_NS0ID_BASEEVENTTYPE))
        return UAS_BAD_INVALID_ARGUMENT;
    if (ev->severity < 1 || ev->severity > 1000)
        return UAS_BAD_OUT_OF_RANGE;
    event_view v;
    v.ev = ev;
    uas_random_bytes(v.event_id, sizeof(v.event_id));
    v.receive_time = uas_datetime_now();
    v.time = ev->time ? ev->time : v.receive_time;
    uas_sub_event se = {ev_get_field, ev_is_of_type, &v};
    uas_nodeid server = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
    uas_subs_post_event(s, &server, &se);
    return UAS_GOOD;
}

static void view_init(event_view *v, const uas_event *ev)
{
    v->ev = ev;
    uas_random_bytes(v->event_id, sizeof(v->event_id));
    v->receive_time = uas_datetime_now();
    v->time = v->receive_time;
}

uas_status uas_server_condition_refresh(struct uas_sub_session *ss, uint32_t sub_id,
                                        uint32_t item_id, int64_t now_ms)
{
    uas_nodeid start_type = uas_nodeid_numeric(0, UAS_NS0ID_REFRESHSTARTEVENTTYPE);
    uas_nodeid end_type = uas_nodeid_numeric(0, UAS_NS0ID_REFRESHENDEVENTTYPE);
    uas_nodeid server = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
    uas_event start = {&start_type, &server, "Server", "ConditionRefresh starts", 100, 0};
    uas_event end = {&end_type, &server, "Server", "ConditionRefresh ends", 100, 0};
    event_view vs, ve;
    view_init(&vs, &start);
    view_init(&ve, &end);
    uas_sub_event s = {ev_get_field, ev_is_of_type, &vs}, e = {ev_get_field, ev_is_of_type, &ve};
    return uas_sub_condition_refresh(ss, sub_id, item_id, &s, &e, now_ms);
}

void uas_server_system_event(uas_server *s, uint16_t severity, const char *message)
{
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_SYSTEMEVENTTYPE);
    uas_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_type = &type;
    ev.source_name = "Server";
    ev.message = message;
    ev.severity = severity;
    (void)uas_server_report_event(s, &ev);
}

#else /* UAS_MINIMAL: no event monitored items, so no event could reach anyone. */

uas_status uas_server_condition_refresh(struct uas_sub_session *ss, uint32_t sub_id,
                                        uint32_t item_id, int64_t now_ms)
{
    (void)ss, (void)sub_id, (void)item_id, (void)now_ms;
    return UAS_BAD_NOT_SUPPORTED;
}

uas_status uas_server_report_event(uas_server *s, const uas_event *ev)
{
    (void)s, (void)ev;
    return UAS_BAD_NOT_SUPPORTED;
}

void uas_server_system_event(uas_server *s, uint16_t severity, const char *message)
{
    (void)s, (void)severity, (void)message;
}

#endif
