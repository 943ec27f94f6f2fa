#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include <ua/nodeids.h>

#include "helper_sub.h"

uas_arena *env_arena_init(env_arena *m)
{
    uas_arena_init(&m->a, m->mem, sizeof(m->mem), 32u << 20);
    return &m->a;
}

uas_status env_create_sub(uas_client *c, double interval_ms, uint32_t lifetime, uint32_t *id)
{
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.requested_publishing_interval = interval_ms;
    req.requested_lifetime_count = lifetime;
    req.requested_max_keep_alive_count = 10;
    req.publishing_enabled = true;
    uas_create_subscription_response resp;
    env_arena m;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &resp,
                                         UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), env_arena_init(&m),
                                         ENV_WAIT_MS);
    uas_arena_free(&m.a);
    *id = st == UAS_GOOD ? resp.subscription_id : 0;
    return st;
}

uas_status env_delete_sub(uas_client *c, uint32_t id)
{
    uas_delete_subscriptions_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_ids = &id;
    req.subscription_ids_count = 1;
    uas_delete_subscriptions_response resp;
    env_arena m;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(DELETE_SUBSCRIPTIONS_REQUEST), &resp,
                                         UAS_TYPE(DELETE_SUBSCRIPTIONS_RESPONSE),
                                         env_arena_init(&m), ENV_WAIT_MS);
    if (st == UAS_GOOD && resp.results_count == 1)
        st = resp.results[0];
    uas_arena_free(&m.a);
    return st;
}

enum { MAX_ITEMS = 200 };

uas_status env_create_items(uas_client *c, uint32_t sub, const env_items *o, uas_status *st,
                            uint32_t *rq)
{
    uas_monitored_item_create_request it[MAX_ITEMS];
    cr_assert_leq(o->n, MAX_ITEMS);
    memset(it, 0, sizeof(it));
    uas_qualifiedname path = {0, uas_string_from(o->select ? o->select : "Message")};
    uas_simple_attribute_operand sel;
    memset(&sel, 0, sizeof(sel));
    sel.type_definition_id = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
    sel.browse_path = &path;
    sel.browse_path_count = 1;
    sel.attribute_id = ENV_ATTR_VALUE;
    uas_event_filter ef;
    memset(&ef, 0, sizeof(ef));
    ef.select_clauses = &sel;
    ef.select_clauses_count = 1;
    for (uint32_t i = 0; i < o->n; i++) {
        it[i].item_to_monitor.node_id = o->events ? uas_nodeid_numeric(0, UAS_NS0ID_SERVER)
                                                  : uas_nodeid_numeric(1, 1001 + i % 100);
        it[i].item_to_monitor.attribute_id = o->events ? ENV_ATTR_EVENT_NOTIFIER : ENV_ATTR_VALUE;
        it[i].monitoring_mode = UAS_MONITORING_MODE_REPORTING;
        it[i].requested_parameters.client_handle = i;
        it[i].requested_parameters.sampling_interval = 100;
        it[i].requested_parameters.queue_size = o->queue;
        it[i].requested_parameters.discard_oldest = true;
        if (o->events) {
            it[i].requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
            it[i].requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
            it[i].requested_parameters.filter.content.decoded.data = &ef;
        }
    }
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_create = it;
    req.items_to_create_count = o->n;
    uas_create_monitored_items_response resp;
    env_arena m;
    uas_status s = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &resp,
                                        UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE),
                                        env_arena_init(&m), ENV_WAIT_MS);
    if (s == UAS_GOOD) {
        cr_assert_eq(resp.results_count, o->n);
        for (uint32_t i = 0; i < o->n; i++) {
            if (st)
                st[i] = resp.results[i].status_code;
            if (rq)
                rq[i] = resp.results[i].revised_queue_size;
        }
    }
    uas_arena_free(&m.a);
    return s;
}

uint64_t env_diag(uas_client *c, const char *name)
{
    char id[96];
    snprintf(id, sizeof(id), "uastack.%s", name);
    uas_nodeid n = uas_nodeid_string(1, id);
    uas_datavalue dv;
    env_arena m;
    uas_status st = env_read(c, &n, ENV_ATTR_VALUE, &dv, env_arena_init(&m));
    cr_assert_eq(st, UAS_GOOD, "Read %s: %s", id, uas_status_name(st));
    cr_assert(dv.has_value, "%s: no value (%s)", id, uas_status_name(dv.status));
    uint64_t v = 0; /* cr_assert_fail of the armhf stand-in returns */
    if (dv.value.type == UAS_TYPE(UINT64))
        v = *(uint64_t *)dv.value.data;
    else if (dv.value.type == UAS_TYPE(UINT32))
        v = *(uint32_t *)dv.value.data;
    else
        cr_assert_fail("%s: neither UInt32 nor UInt64", id);
    uas_arena_free(&m.a);
    return v;
}
