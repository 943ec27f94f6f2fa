/* Event filters from a hostile client, over real sockets (issue #18,
 * finding 1). A where clause whose elements each name the next one twice
 * has 2^n paths; evaluated path by path, one anonymous client's filter made
 * every CreateSession (which reports an event) wait for seconds, then
 * stalled the server. Such a filter must be cheap (each element evaluated
 * once per event) or refused, and a second, normal client must keep being
 * served: connect, CreateSession, Read. */
#include <criterion/criterion.h>

#include <string.h>

#include <ua/nodeids.h>

#include "helper_env.h"

enum {
    ATTR_EVENT_NOTIFIER = 12,
    NS0_BASE_EVENT_TYPE = 2041,
    NS0_SERVER = 2253,
};

static uas_extensionobject xo(uas_arena *a, const uas_type *t, const void *data, size_t size)
{
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = t;
    x.content.decoded.data = uas_arena_alloc(a, size);
    cr_assert(x.content.decoded.data);
    memcpy(x.content.decoded.data, data, size);
    return x;
}

static uas_extensionobject elop(uas_arena *a, uint32_t index)
{
    uas_element_operand e = {index};
    return xo(a, UAS_TYPE(ELEMENT_OPERAND), &e, sizeof(e));
}

static uas_extensionobject lit(uas_arena *a, const uas_type *t, const void *value)
{
    uas_literal_operand l;
    memset(&l, 0, sizeof(l));
    void *v = uas_arena_alloc(a, t->size);
    memcpy(v, value, t->size);
    uas_variant_set_scalar(&l.value, v, t);
    return xo(a, UAS_TYPE(LITERAL_OPERAND), &l, sizeof(l));
}

static uas_simple_attribute_operand field(uas_arena *a, const char *name)
{
    uas_simple_attribute_operand s;
    memset(&s, 0, sizeof(s));
    s.type_definition_id = uas_nodeid_numeric(0, NS0_BASE_EVENT_TYPE);
    s.browse_path = uas_arena_calloc(a, 1, sizeof(uas_qualifiedname));
    s.browse_path[0].name = uas_string_from(name);
    s.browse_path_count = 1;
    s.attribute_id = 13;
    return s;
}

static void set_element(uas_arena *a, uas_content_filter_element *el, uas_filter_operator op,
                        size_t n, const uas_extensionobject *ops)
{
    el->filter_operator = op;
    el->filter_operands_count = n;
    el->filter_operands = uas_arena_calloc(a, n, sizeof(uas_extensionobject));
    memcpy(el->filter_operands, ops, n * sizeof(uas_extensionobject));
}

/* Select Severity; where e[i] = And(e[i+1], e[i+1]) down to e[n-1] =
 * OfType(BaseEventType): TRUE for every event, through 2^(n-1) paths. */
static uas_event_filter *shared_chain(uas_arena *a, size_t n)
{
    uas_event_filter *f = uas_arena_calloc(a, 1, sizeof(*f));
    f->select_clauses = uas_arena_calloc(a, 1, sizeof(uas_simple_attribute_operand));
    f->select_clauses[0] = field(a, "Severity");
    f->select_clauses_count = 1;
    f->where_clause.elements = uas_arena_calloc(a, n, sizeof(uas_content_filter_element));
    f->where_clause.elements_count = n;
    for (size_t i = 0; i + 1 < n; i++) {
        uas_extensionobject ops[2] = {elop(a, (uint32_t)i + 1), elop(a, (uint32_t)i + 1)};
        set_element(a, &f->where_clause.elements[i], UAS_FILTER_OPERATOR_AND, 2, ops);
    }
    uas_nodeid base = uas_nodeid_numeric(0, NS0_BASE_EVENT_TYPE);
    uas_extensionobject of = lit(a, &uas_types[UAS_TYPES_NODE_ID], &base);
    set_element(a, &f->where_clause.elements[n - 1], UAS_FILTER_OPERATOR_OF_TYPE, 1, &of);
    return f;
}

static uint32_t create_subscription(uas_client *c, uas_arena *a)
{
    uas_create_subscription_request req;
    memset(&req, 0, sizeof(req));
    req.requested_publishing_interval = 50;
    req.requested_lifetime_count = 1000;
    req.requested_max_keep_alive_count = 10;
    req.publishing_enabled = true;
    uas_create_subscription_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &resp,
                                         UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "CreateSubscription: %s", uas_status_name(st));
    return resp.subscription_id;
}

/* One event item on Server with filter f; its create result. */
static uas_monitored_item_create_result event_item(uas_client *c, uint32_t sub, uas_event_filter *f,
                                                   uas_arena *a)
{
    uas_monitored_item_create_request item;
    memset(&item, 0, sizeof(item));
    item.item_to_monitor.node_id = uas_nodeid_numeric(0, NS0_SERVER);
    item.item_to_monitor.attribute_id = ATTR_EVENT_NOTIFIER;
    item.monitoring_mode = UAS_MONITORING_MODE_REPORTING;
    item.requested_parameters.client_handle = 7;
    item.requested_parameters.queue_size = 10;
    item.requested_parameters.discard_oldest = true;
    item.requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
    item.requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
    item.requested_parameters.filter.content.decoded.data = f;
    uas_create_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = sub;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_create = &item;
    req.items_to_create_count = 1;
    uas_create_monitored_items_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &resp,
                                         UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE), a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "CreateMonitoredItems: %s", uas_status_name(st));
    cr_assert_eq(resp.results_count, 1);
    return resp.results[0];
}

static const uas_content_filter_result *where_result(const uas_monitored_item_create_result *r)
{
    cr_assert_eq(r->filter_result.encoding, UAS_EXTOBJ_DECODED);
    cr_assert_eq(r->filter_result.content.decoded.type, UAS_TYPE(EVENT_FILTER_RESULT));
    return &((const uas_event_filter_result *)r->filter_result.content.decoded.data)
                ->where_clause_result;
}

/* Publishes until an event with this severity arrives (or tries run out). */
static bool publish_until_event(uas_client *c, uint16_t severity, uas_arena *a)
{
    for (int tries = 0; tries < 20; tries++) {
        uas_publish_request req;
        memset(&req, 0, sizeof(req));
        uas_publish_response resp;
        uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(PUBLISH_REQUEST), &resp,
                                             UAS_TYPE(PUBLISH_RESPONSE), a, ENV_WAIT_MS);
        cr_assert_eq(st, UAS_GOOD, "Publish: %s", uas_status_name(st));
        const uas_notification_message *m = &resp.notification_message;
        for (size_t i = 0; i < m->notification_data_count; i++) {
            const uas_extensionobject *x = &m->notification_data[i];
            if (x->encoding != UAS_EXTOBJ_DECODED ||
                x->content.decoded.type != UAS_TYPE(EVENT_NOTIFICATION_LIST))
                continue;
            const uas_event_notification_list *l = x->content.decoded.data;
            for (size_t j = 0; j < l->events_count; j++) {
                const uas_event_field_list *ev = &l->events[j];
                if (ev->event_fields_count == 1 &&
                    ev->event_fields[0].type == &uas_types[UAS_TYPES_UINT16] &&
                    *(const uint16_t *)ev->event_fields[0].data == severity)
                    return true;
            }
        }
    }
    return false;
}

Test(filter_dos, a_deep_shared_where_clause_leaves_other_clients_served, .timeout = 60)
{
    env e;
    env_options o = {.threads = 1};
    env_start(&e, &o);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_client *attacker = env_client(&e, true, 0);
    uint32_t sub = create_subscription(attacker, &a);
    /* 48 elements: 2^47 paths, well within the element limit (64). */
    uas_monitored_item_create_result r = event_item(attacker, sub, shared_chain(&a, 48), &a);
    cr_assert_eq(r.status_code, UAS_GOOD, "the filter is valid: %s",
                 uas_status_name(r.status_code));

    /* The next CreateSession reports an event through that filter. */
    for (int i = 0; i < 3; i++)
        env_check_alive(&e); /* connect, CreateSession, Read within ENV_WAIT_MS */
    /* And the filter still works: "Session created" (severity 100) got
     * through to the attacker's item. */
    cr_expect(publish_until_event(attacker, 100, &a), "no event passed the filter");
    env_client_close(attacker);
    uas_arena_free(&a);
    env_stop(&e);
}

static void small_limits(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_filter_elements = 8;
    cfg->max_like_pattern_length = 16;
}

Test(filter_dos, where_clauses_past_the_limits_or_in_a_cycle_are_refused, .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .configure = small_limits};
    env_start(&e, &o);
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_client *c = env_client(&e, true, 0);
    uint32_t sub = create_subscription(c, &a);

    uas_monitored_item_create_result r = event_item(c, sub, shared_chain(&a, 9), &a);
    cr_expect_eq(r.status_code, UAS_BAD_EVENT_FILTER_INVALID, "9 elements over a limit of 8: %s",
                 uas_status_name(r.status_code));
    r = event_item(c, sub, shared_chain(&a, 8), &a);
    cr_expect_eq(r.status_code, UAS_GOOD, "8 elements: %s", uas_status_name(r.status_code));
    r = event_item(c, sub, shared_chain(&a, 10000), &a);
    cr_expect_eq(r.status_code, UAS_BAD_EVENT_FILTER_INVALID);

    /* e0 = Not(e1), e1 = Not(e0): a cycle, refused at the operand that
     * closes it. */
    uas_event_filter *f = shared_chain(&a, 2);
    uas_extensionobject to0 = elop(&a, 0), to1 = elop(&a, 1);
    set_element(&a, &f->where_clause.elements[0], UAS_FILTER_OPERATOR_NOT, 1, &to1);
    set_element(&a, &f->where_clause.elements[1], UAS_FILTER_OPERATOR_NOT, 1, &to0);
    r = event_item(c, sub, f, &a);
    cr_expect_eq(r.status_code, UAS_BAD_EVENT_FILTER_INVALID);
    const uas_content_filter_result *w = where_result(&r);
    cr_assert_eq(w->element_results_count, 2);
    cr_expect_eq(w->element_results[0].status_code, UAS_GOOD);
    cr_expect_eq(w->element_results[1].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_assert_eq(w->element_results[1].operand_status_codes_count, 1);
    cr_expect_eq(w->element_results[1].operand_status_codes[0], UAS_BAD_FILTER_OPERAND_INVALID);

    /* Like with a pattern longer than the configured 16 bytes. */
    f = shared_chain(&a, 1);
    uas_simple_attribute_operand msg = field(&a, "Message");
    uas_string pat = uas_string_from("%%%%%%%%%%%%%%%%%");
    uas_extensionobject like[2] = {
        xo(&a, UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND), &msg, sizeof(msg)),
        lit(&a, &uas_types[UAS_TYPES_STRING], &pat),
    };
    set_element(&a, &f->where_clause.elements[0], UAS_FILTER_OPERATOR_LIKE, 2, like);
    r = event_item(c, sub, f, &a);
    cr_expect_eq(r.status_code, UAS_BAD_EVENT_FILTER_INVALID);
    w = where_result(&r);
    cr_assert_eq(w->element_results_count, 1);
    cr_expect_eq(w->element_results[0].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_assert_eq(w->element_results[0].operand_status_codes_count, 2);
    cr_expect_eq(w->element_results[0].operand_status_codes[0], UAS_GOOD);
    cr_expect_eq(w->element_results[0].operand_status_codes[1], UAS_BAD_FILTER_OPERAND_INVALID);

    env_check_alive(&e);
    env_client_close(c);
    uas_arena_free(&a);
    env_stop(&e);
}
