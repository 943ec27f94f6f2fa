/* uacli subscribe: one subscription with a monitored item per node, a line
 * per data change (or per event, with --events on notifier objects) until
 * Ctrl-C, --count notifications or --duration seconds. Two Publish requests
 * stay outstanding, each acknowledging what the last one brought. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ua/nodeids.h>

#include "cli.h"

enum { MAX_ITEMS = 64, PUBLISHES = 2, ATTR_VALUE = 13, ATTR_EVENT_NOTIFIER = 12 };

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static const char *const event_fields[] = {"Time", "Severity", "SourceName", "EventType",
                                           "Message"};
enum { NFIELDS = sizeof(event_fields) / sizeof(event_fields[0]) };

typedef struct sub_run {
    cli *c;
    char names[MAX_ITEMS][128]; /* the node ids as given, by client handle */
    size_t nitems;
    uint32_t subscription_id;
    uint32_t ack_seq; /* the sequence number to acknowledge next, 0: none */
    unsigned publishes_out;
    uint64_t notifications, limit;
    uas_status failed;
} sub_run;

static void timestamp(uas_datetime t, char *buf, size_t len)
{
    uas_datetime_format(t, buf, len);
}

static void print_change(sub_run *r, const uas_monitored_item_notification *n)
{
    const char *name = n->client_handle < r->nitems ? r->names[n->client_handle] : "?";
    if (r->c->json) {
        printf("{");
        cli_json_key("NodeId", true);
        uas_json_string(stdout, (const uint8_t *)name, strlen(name));
        cli_json_key("DataValue", false);
        uas_value_print_json(stdout, &n->value, UAS_TYPE(DATA_VALUE));
        printf("}\n");
        return;
    }
    const uas_datavalue *dv = &n->value;
    char ts[64] = "";
    if (dv->has_source_timestamp)
        timestamp(dv->source_timestamp, ts, sizeof(ts));
    else if (dv->has_server_timestamp)
        timestamp(dv->server_timestamp, ts, sizeof(ts));
    printf("%s  %s = ", ts, name);
    if (dv->has_value && dv->value.type && !dv->value.is_array)
        uas_value_print(stdout, dv->value.data, dv->value.type, 0);
    else if (dv->has_value && dv->value.type)
        printf("%s[%zu]", dv->value.type->name, dv->value.array_length);
    else
        printf("(empty)");
    if (dv->has_status && dv->status != UAS_GOOD)
        printf("  [%s]", uas_status_name(dv->status));
    putchar('\n');
}

static void print_event(sub_run *r, const uas_event_field_list *e)
{
    const char *name = e->client_handle < r->nitems ? r->names[e->client_handle] : "?";
    if (r->c->json) {
        printf("{");
        cli_json_key("Notifier", true);
        uas_json_string(stdout, (const uint8_t *)name, strlen(name));
        cli_json_key("Event", false);
        putchar('{');
        for (size_t i = 0; i < e->event_fields_count && i < NFIELDS; i++) {
            cli_json_key(event_fields[i], i == 0);
            uas_variant_print_json(stdout, &e->event_fields[i]);
        }
        printf("}}\n");
        return;
    }
    printf("event from %s:", name);
    for (size_t i = 0; i < e->event_fields_count && i < NFIELDS; i++) {
        const uas_variant *v = &e->event_fields[i];
        printf(" %s=", event_fields[i]);
        if (v->type && !v->is_array)
            uas_value_print(stdout, v->data, v->type, 0);
        else
            printf("-");
    }
    putchar('\n');
}

static void count(sub_run *r)
{
    r->notifications++;
    if (r->limit && r->notifications >= r->limit)
        interrupted = 1;
}

static void on_publish(uas_client *cl, void *ud, uas_status st, const void *resp,
                       const uas_type *t);

static void publish(sub_run *r)
{
    uas_publish_request req;
    memset(&req, 0, sizeof(req));
    uas_subscription_acknowledgement ack = {r->subscription_id, r->ack_seq};
    if (r->ack_seq) {
        req.subscription_acknowledgements = &ack;
        req.subscription_acknowledgements_count = 1;
        r->ack_seq = 0;
    }
    uas_status st =
        uas_client_request(r->c->client, &req, UAS_TYPE(PUBLISH_REQUEST), on_publish, r);
    if (st == UAS_GOOD)
        r->publishes_out++;
    else if (r->failed == UAS_GOOD)
        r->failed = st;
}

static void on_publish(uas_client *cl, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)cl;
    sub_run *r = ud;
    r->publishes_out--;
    if (st == UAS_GOOD && t != UAS_TYPE(PUBLISH_RESPONSE))
        st = UAS_BAD_UNKNOWN_RESPONSE;
    const uas_publish_response *p = resp;
    if (st == UAS_GOOD && uas_is_bad(p->response_header.service_result))
        st = p->response_header.service_result;
    if (st == UAS_BAD_TIMEOUT && !interrupted) {
        publish(r); /* a long keep-alive: ask again */
        return;
    }
    if (st != UAS_GOOD) {
        if (r->failed == UAS_GOOD)
            r->failed = st;
        return;
    }
    const uas_notification_message *m = &p->notification_message;
    if (m->notification_data_count)
        r->ack_seq = m->sequence_number;
    for (size_t i = 0; i < m->notification_data_count; i++) {
        const uas_extensionobject *eo = &m->notification_data[i];
        if (eo->encoding != UAS_EXTOBJ_DECODED)
            continue;
        if (eo->content.decoded.type == UAS_TYPE(DATA_CHANGE_NOTIFICATION)) {
            const uas_data_change_notification *d = eo->content.decoded.data;
            for (size_t k = 0; k < d->monitored_items_count && !interrupted; k++) {
                print_change(r, &d->monitored_items[k]);
                count(r);
            }
        } else if (eo->content.decoded.type == UAS_TYPE(EVENT_NOTIFICATION_LIST)) {
            const uas_event_notification_list *e = eo->content.decoded.data;
            for (size_t k = 0; k < e->events_count && !interrupted; k++) {
                print_event(r, &e->events[k]);
                count(r);
            }
        } else if (eo->content.decoded.type == UAS_TYPE(STATUS_CHANGE_NOTIFICATION)) {
            const uas_status_change_notification *s = eo->content.decoded.data;
            if (r->c->json)
                printf("{\"SubscriptionStatus\":\"%s\"}\n", uas_status_name(s->status));
            else
                printf("subscription status: %s\n", uas_status_name(s->status));
            if (r->failed == UAS_GOOD && uas_is_bad(s->status))
                r->failed = s->status;
        }
    }
    fflush(stdout);
    if (!interrupted)
        publish(r);
}

/* The event filter of --events: the fields every BaseEventType has. */
static void event_filter(uas_event_filter *f, uas_simple_attribute_operand *sel,
                         uas_qualifiedname *path)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < NFIELDS; i++) {
        memset(&sel[i], 0, sizeof(sel[i]));
        path[i] = (uas_qualifiedname){0, uas_string_from(event_fields[i])};
        sel[i].type_definition_id = uas_nodeid_numeric(0, UAS_NS0ID_BASEEVENTTYPE);
        sel[i].browse_path = &path[i];
        sel[i].browse_path_count = 1;
        sel[i].attribute_id = ATTR_VALUE;
    }
    f->select_clauses = sel;
    f->select_clauses_count = NFIELDS;
}

static int create(sub_run *r, int argc, char **argv)
{
    cli *c = r->c;
    uas_create_subscription_request sreq;
    memset(&sreq, 0, sizeof(sreq));
    sreq.requested_publishing_interval = c->interval_ms;
    sreq.requested_lifetime_count = 60;
    sreq.requested_max_keep_alive_count = 10;
    sreq.publishing_enabled = true;
    uas_create_subscription_response sresp;
    if (cli_call(c, "CreateSubscription", &sreq, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &sresp,
                 UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE)))
        return EXIT_UA;
    r->subscription_id = sresp.subscription_id;

    static uas_monitored_item_create_request items[MAX_ITEMS];
    static uas_simple_attribute_operand sel[NFIELDS];
    static uas_qualifiedname path[NFIELDS];
    static uas_event_filter filter;
    event_filter(&filter, sel, path);
    for (int i = 0; i < argc; i++) {
        uas_monitored_item_create_request *it = &items[i];
        memset(it, 0, sizeof(*it));
        int rc = cli_parse_nodeid(c, argv[i], &it->item_to_monitor.node_id);
        if (rc)
            return rc;
        snprintf(r->names[i], sizeof(r->names[i]), "%s", argv[i]);
        it->item_to_monitor.attribute_id = c->events ? ATTR_EVENT_NOTIFIER : ATTR_VALUE;
        it->monitoring_mode = UAS_MONITORING_MODE_REPORTING;
        it->requested_parameters.client_handle = (uint32_t)i;
        it->requested_parameters.sampling_interval = c->events ? 0 : c->interval_ms;
        it->requested_parameters.queue_size = c->events ? 100 : 10;
        it->requested_parameters.discard_oldest = true;
        if (c->events) {
            it->requested_parameters.filter.encoding = UAS_EXTOBJ_DECODED;
            it->requested_parameters.filter.content.decoded.type = UAS_TYPE(EVENT_FILTER);
            it->requested_parameters.filter.content.decoded.data = &filter;
        }
    }
    r->nitems = (size_t)argc;
    uas_create_monitored_items_request mreq;
    memset(&mreq, 0, sizeof(mreq));
    mreq.subscription_id = r->subscription_id;
    mreq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    mreq.items_to_create = items;
    mreq.items_to_create_count = (size_t)argc;
    uas_create_monitored_items_response mresp;
    if (cli_call(c, "CreateMonitoredItems", &mreq, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &mresp,
                 UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE)))
        return EXIT_UA;
    int bad = 0;
    for (size_t i = 0; i < mresp.results_count; i++)
        if (uas_is_bad(mresp.results[i].status_code)) {
            char what[200];
            snprintf(what, sizeof(what), "monitoring %s", r->names[i]);
            cli_fail(what, mresp.results[i].status_code);
            bad++;
        }
    return bad == argc ? EXIT_UA : EXIT_OK;
}

int cmd_subscribe(cli *c, int argc, char **argv)
{
    if (argc > MAX_ITEMS)
        return cli_usage_error("at most %d nodes per subscription", MAX_ITEMS);
    if (!c->interval_ms)
        c->interval_ms = 1000;
    int rc = cli_open(c, true);
    if (rc)
        return rc;
    sub_run r;
    memset(&r, 0, sizeof(r));
    r.c = c;
    r.limit = c->count;
    if ((rc = create(&r, argc, argv)))
        return rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < PUBLISHES; i++)
        publish(&r);
    while (!interrupted && r.failed == UAS_GOOD &&
           uas_client_get_state(c->client) == UAS_CLIENT_SESSION_ACTIVE) {
        uas_loop_run_once(c->loop, true);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (c->duration_s && now.tv_sec - start.tv_sec >= (time_t)c->duration_s)
            break;
    }
    if (r.failed != UAS_GOOD)
        return cli_fail("publish", r.failed);
    if (uas_client_get_state(c->client) != UAS_CLIENT_SESSION_ACTIVE)
        return cli_fail("subscription", uas_client_get_reason(c->client));
    /* Leave no subscription behind (the session's close would too). */
    uas_delete_subscriptions_request dreq;
    memset(&dreq, 0, sizeof(dreq));
    dreq.subscription_ids = &r.subscription_id;
    dreq.subscription_ids_count = 1;
    uas_delete_subscriptions_response dresp;
    (void)uas_client_call_sync(c->client, &dreq, UAS_TYPE(DELETE_SUBSCRIPTIONS_REQUEST), &dresp,
                               UAS_TYPE(DELETE_SUBSCRIPTIONS_RESPONSE), &c->arena, c->timeout_ms);
    return EXIT_OK;
}
