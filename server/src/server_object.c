/* The live variables of the Server object (Part 5, 6.3.1): status, build
 * information, namespaces, capabilities and operation limits, diagnostics
 * counters. Each is a data source over the namespace-0 node, computed when
 * read, so no timer keeps them fresh. */
#include <string.h>

#include <ua/nodeids.h>

#include "aspace.h"
#include "sub_diag.h"

#define OL(name)   UAS_NS0ID_SERVER_SERVERCAPABILITIES_OPERATIONLIMITS_##name
#define CAP(name)  UAS_NS0ID_SERVER_SERVERCAPABILITIES_##name
#define DIAG(name) UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_SERVERDIAGNOSTICSSUMMARY_##name

static const uas_datetime build_date = 134091072000000000LL; /* 2025-12-01 */

static void *scalar(uas_arena *a, const void *v, size_t size)
{
    void *p = uas_arena_alloc(a, size);
    if (p)
        memcpy(p, v, size);
    return p;
}

static uas_status set_u32(uas_datavalue *out, uas_arena *a, uint32_t v)
{
    void *p = scalar(a, &v, sizeof(v));
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_variant_set_scalar(&out->value, p, UAS_TYPE(UINT32));
    return UAS_GOOD;
}

static uas_status set_u16(uas_datavalue *out, uas_arena *a, uint16_t v)
{
    void *p = scalar(a, &v, sizeof(v));
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_variant_set_scalar(&out->value, p, UAS_TYPE(UINT16));
    return UAS_GOOD;
}

static uas_status set_string(uas_datavalue *out, uas_arena *a, const char *s)
{
    uas_string str = uas_string_from(s);
    void *p = scalar(a, &str, sizeof(str));
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_variant_set_scalar(&out->value, p, UAS_TYPE(STRING));
    return UAS_GOOD;
}

static void build_info(uas_server *s, uas_build_info *b)
{
    memset(b, 0, sizeof(*b));
    b->product_uri = uas_string_from(s->cfg.product_uri);
    b->manufacturer_name = uas_string_from("uastack");
    b->product_name = uas_string_from("uastack OPC UA server");
    b->software_version = uas_string_from(UAS_VERSION);
    b->build_number = uas_string_from(UAS_VERSION);
    b->build_date = build_date;
}

static uas_status read_status(uas_server *s, uint32_t id, uas_datavalue *out, uas_arena *a)
{
    uas_datetime now = uas_datetime_now();
    int32_t state =
        atomic_load(&s->stopping) ? UAS_SERVER_STATE_SHUTDOWN : UAS_SERVER_STATE_RUNNING;
    switch (id) {
    case UAS_NS0ID_SERVER_SERVERSTATUS: {
        uas_server_status_data_type *st = uas_arena_calloc(a, 1, sizeof(*st));
        if (!st)
            return UAS_BAD_OUT_OF_MEMORY;
        st->start_time = s->start_time;
        st->current_time = now;
        st->state = state;
        build_info(s, &st->build_info);
        uas_variant_set_scalar(&out->value, st, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_CURRENTTIME:
    case UAS_NS0ID_SERVER_SERVERSTATUS_STARTTIME: {
        uas_datetime t = id == UAS_NS0ID_SERVER_SERVERSTATUS_CURRENTTIME ? now : s->start_time;
        void *p = scalar(a, &t, sizeof(t));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(DATE_TIME));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_STATE: {
        void *p = scalar(a, &state, sizeof(state));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(SERVER_STATE));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO: {
        uas_build_info *b = uas_arena_alloc(a, sizeof(*b));
        if (!b)
            return UAS_BAD_OUT_OF_MEMORY;
        build_info(s, b);
        uas_variant_set_scalar(&out->value, b, UAS_TYPE(BUILD_INFO));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_PRODUCTURI:
        return set_string(out, a, s->cfg.product_uri);
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_MANUFACTURERNAME:
        return set_string(out, a, "uastack");
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_PRODUCTNAME:
        return set_string(out, a, "uastack OPC UA server");
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_SOFTWAREVERSION:
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_BUILDNUMBER:
        return set_string(out, a, UAS_VERSION);
    case UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_BUILDDATE: {
        void *p = scalar(a, &build_date, sizeof(build_date));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(DATE_TIME));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_SECONDSTILLSHUTDOWN:
        return set_u32(out, a, 0);
    case UAS_NS0ID_SERVER_ESTIMATEDRETURNTIME: {
        uas_datetime unknown = 0; /* no shutdown planned: MinTime */
        void *p = scalar(a, &unknown, sizeof(unknown));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(DATE_TIME));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERSTATUS_SHUTDOWNREASON: {
        uas_localizedtext *t = uas_arena_calloc(a, 1, sizeof(*t));
        if (!t)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, t, UAS_TYPE(LOCALIZED_TEXT));
        return UAS_GOOD;
    }
    default:
        return UAS_BAD_NODE_ID_UNKNOWN;
    }
}

/* What the subscription engines enforce; subscriptions and monitored
 * items are counted for the whole server, across its event loops. */
static uas_status read_sub_limit(uas_server *s, uint32_t id, uas_datavalue *out, uas_arena *a)
{
    const uas_sub_limits *l = uas_subs_limits(s);
    if (!l)
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    switch (id) {
    case CAP(MAXSUBSCRIPTIONS):
        return set_u32(out, a, l->max_subscriptions);
    case CAP(MAXMONITOREDITEMS):
        return set_u32(out, a, l->max_monitored_items);
    case CAP(MAXSUBSCRIPTIONSPERSESSION):
        return set_u32(out, a, l->max_subscriptions_per_session);
    case CAP(MAXMONITOREDITEMSPERSUBSCRIPTION):
        return set_u32(out, a, l->max_items_per_subscription);
    case CAP(MAXMONITOREDITEMSQUEUESIZE):
        /* The larger of the data and the event item maximum. */
        return set_u32(out, a,
                       l->max_queue_size > l->max_event_queue_size ? l->max_queue_size
                                                                   : l->max_event_queue_size);
    default: /* OL(MAXMONITOREDITEMSPERCALL), 0: no limit */
        return set_u32(out, a, l->max_operations);
    }
}

static uas_status read_limit(uas_server *s, uint32_t id, uas_datavalue *out, uas_arena *a)
{
    const uas_server_config *c = &s->cfg;
    switch (id) {
    case OL(MAXNODESPERREAD):
        return set_u32(out, a, c->max_nodes_per_read);
    case OL(MAXNODESPERWRITE):
        return set_u32(out, a, c->max_nodes_per_write);
    case OL(MAXNODESPERMETHODCALL):
        return set_u32(out, a, c->max_nodes_per_method_call);
    case OL(MAXNODESPERBROWSE):
        return set_u32(out, a, c->max_nodes_per_browse);
    case OL(MAXNODESPERREGISTERNODES):
        return set_u32(out, a, c->max_nodes_per_register);
    case OL(MAXNODESPERTRANSLATEBROWSEPATHSTONODEIDS):
        return set_u32(out, a, c->max_nodes_per_translate);
    case OL(MAXNODESPERNODEMANAGEMENT):
        return set_u32(out, a, c->max_nodes_per_node_management);
    case OL(MAXNODESPERHISTORYREADDATA):
    case OL(MAXNODESPERHISTORYREADEVENTS):
    case OL(MAXNODESPERHISTORYUPDATEDATA):
    case OL(MAXNODESPERHISTORYUPDATEEVENTS):
        return set_u32(out, a, 0); /* services not offered */
    case CAP(MAXBROWSECONTINUATIONPOINTS):
        return set_u16(out, a, (uint16_t)c->max_browse_continuation_points);
    case CAP(MAXQUERYCONTINUATIONPOINTS):
    case CAP(MAXHISTORYCONTINUATIONPOINTS):
        return set_u16(out, a, 0);
    case CAP(MAXARRAYLENGTH):
        return set_u32(out, a, c->decode_limits.max_array_length);
    case CAP(MAXSTRINGLENGTH):
    case CAP(MAXBYTESTRINGLENGTH):
        return set_u32(out, a, c->decode_limits.max_string_length);
    case CAP(MAXSESSIONS):
        return set_u32(out, a, c->max_sessions);
    case CAP(MAXSUBSCRIPTIONS):
    case CAP(MAXMONITOREDITEMS):
    case CAP(MAXSUBSCRIPTIONSPERSESSION):
    case CAP(MAXMONITOREDITEMSPERSUBSCRIPTION):
    case CAP(MAXMONITOREDITEMSQUEUESIZE):
    case OL(MAXMONITOREDITEMSPERCALL):
        return read_sub_limit(s, id, out, a);
    case CAP(MAXSELECTCLAUSEPARAMETERS):
    case CAP(MAXWHERECLAUSEPARAMETERS):
        return set_u32(out, a, 0); /* EventFilters are bounded by the decoder only */
    case CAP(MINSUPPORTEDSAMPLERATE): {
        double v = 0;
        void *p = scalar(a, &v, sizeof(v));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(DOUBLE));
        return UAS_GOOD;
    }
    default:
        return UAS_BAD_NODE_ID_UNKNOWN;
    }
}

static uas_status read_diag(uas_server *s, uint32_t id, uas_datavalue *out, uas_arena *a)
{
    uas_server_counters *k = &s->counters;
    uas_subs_figures f;
    uas_subs_get_figures(s, &f);
    switch (id) {
    case DIAG(CURRENTSESSIONCOUNT):
        return set_u32(out, a, uas_sessions_count(s->sessions));
    case DIAG(CUMULATEDSESSIONCOUNT):
        return set_u32(out, a, atomic_load(&k->cumulated_sessions));
    case DIAG(REJECTEDSESSIONCOUNT):
        return set_u32(out, a, atomic_load(&k->rejected_sessions));
    case DIAG(SESSIONTIMEOUTCOUNT):
        return set_u32(out, a, atomic_load(&k->session_timeouts));
    case DIAG(SESSIONABORTCOUNT):
        return set_u32(out, a, atomic_load(&k->session_aborts));
    case DIAG(SECURITYREJECTEDREQUESTSCOUNT):
        return set_u32(out, a, atomic_load(&k->security_rejected_requests));
    case DIAG(REJECTEDREQUESTSCOUNT):
        return set_u32(out, a, atomic_load(&k->rejected_requests));
    case DIAG(PUBLISHINGINTERVALCOUNT):
        return set_u32(out, a, f.publishing_intervals);
    case DIAG(CURRENTSUBSCRIPTIONCOUNT):
        return set_u32(out, a, f.current);
    case DIAG(CUMULATEDSUBSCRIPTIONCOUNT):
        return set_u32(out, a, f.cumulated);
    case DIAG(SERVERVIEWCOUNT):
    case DIAG(SECURITYREJECTEDSESSIONCOUNT):
        return set_u32(out, a, 0);
    default:
        return UAS_BAD_NODE_ID_UNKNOWN;
    }
}

static uas_status read_server_var(void *ud, const uas_nodeid *node, uas_datavalue *out,
                                  uas_arena *a)
{
    uas_server *s = ud;
    uint32_t id = node->id.numeric;
    out->has_value = true;
    out->has_source_timestamp = true;
    out->source_timestamp = uas_datetime_now();
    switch (id) {
    case UAS_NS0ID_SERVER_NAMESPACEARRAY: {
        size_t n;
        uas_string *arr;
        uas_status st = uas_server_namespace_array(s, a, &n, &arr);
        if (st != UAS_GOOD)
            return st;
        uas_variant_set_array(&out->value, arr, n, UAS_TYPE(STRING));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERARRAY: {
        uas_string *arr = uas_arena_alloc(a, sizeof(uas_string));
        if (!arr)
            return UAS_BAD_OUT_OF_MEMORY;
        arr[0] = uas_string_from(s->cfg.application_uri);
        uas_variant_set_array(&out->value, arr, 1, UAS_TYPE(STRING));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVICELEVEL: {
        uint8_t v = 255;
        void *p = scalar(a, &v, 1);
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(BYTE));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_AUDITING:
    case UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_ENABLEDFLAG: {
        bool v = id == UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_ENABLEDFLAG;
        void *p = scalar(a, &v, sizeof(v));
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p, UAS_TYPE(BOOLEAN));
        return UAS_GOOD;
    }
    case CAP(SERVERPROFILEARRAY):
    case CAP(LOCALEIDARRAY): {
        uas_string *arr = uas_arena_alloc(a, sizeof(uas_string));
        if (!arr)
            return UAS_BAD_OUT_OF_MEMORY;
        /* Data change subscriptions but no events yet: Embedded 2017. */
        arr[0] = uas_string_from(id == CAP(LOCALEIDARRAY)
                                     ? "en"
                                     : "http://opcfoundation.org/UA-Profile/Server/EmbeddedUA2017");
        uas_variant_set_array(&out->value, arr, 1, UAS_TYPE(STRING));
        return UAS_GOOD;
    }
    case UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_SERVERDIAGNOSTICSSUMMARY: {
        uas_server_diagnostics_summary_data_type *d = uas_arena_calloc(a, 1, sizeof(*d));
        if (!d)
            return UAS_BAD_OUT_OF_MEMORY;
        d->current_session_count = uas_sessions_count(s->sessions);
        d->cumulated_session_count = atomic_load(&s->counters.cumulated_sessions);
        d->rejected_session_count = atomic_load(&s->counters.rejected_sessions);
        d->session_timeout_count = atomic_load(&s->counters.session_timeouts);
        d->session_abort_count = atomic_load(&s->counters.session_aborts);
        d->security_rejected_requests_count = atomic_load(&s->counters.security_rejected_requests);
        d->rejected_requests_count = atomic_load(&s->counters.rejected_requests);
        uas_subs_figures f;
        uas_subs_get_figures(s, &f);
        d->current_subscription_count = f.current;
        d->cumulated_subscription_count = f.cumulated;
        d->publishing_interval_count = f.publishing_intervals;
        uas_variant_set_scalar(&out->value, d, UAS_TYPE(SERVER_DIAGNOSTICS_SUMMARY_DATA_TYPE));
        return UAS_GOOD;
    }
    default:
        break;
    }
    uas_status st = read_status(s, id, out, a);
    if (st == UAS_BAD_NODE_ID_UNKNOWN)
        st = read_limit(s, id, out, a);
    if (st == UAS_BAD_NODE_ID_UNKNOWN)
        st = read_diag(s, id, out, a);
    return st;
}

static const uint32_t live_nodes[] = {
    UAS_NS0ID_SERVER_NAMESPACEARRAY,
    UAS_NS0ID_SERVER_SERVERARRAY,
    UAS_NS0ID_SERVER_SERVICELEVEL,
    UAS_NS0ID_SERVER_AUDITING,
    UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_ENABLEDFLAG,
    UAS_NS0ID_SERVER_SERVERSTATUS,
    UAS_NS0ID_SERVER_SERVERSTATUS_STARTTIME,
    UAS_NS0ID_SERVER_SERVERSTATUS_CURRENTTIME,
    UAS_NS0ID_SERVER_SERVERSTATUS_STATE,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_PRODUCTURI,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_MANUFACTURERNAME,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_PRODUCTNAME,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_SOFTWAREVERSION,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_BUILDNUMBER,
    UAS_NS0ID_SERVER_SERVERSTATUS_BUILDINFO_BUILDDATE,
    UAS_NS0ID_SERVER_SERVERSTATUS_SECONDSTILLSHUTDOWN,
    UAS_NS0ID_SERVER_SERVERSTATUS_SHUTDOWNREASON,
    UAS_NS0ID_SERVER_ESTIMATEDRETURNTIME,
    CAP(SERVERPROFILEARRAY),
    CAP(LOCALEIDARRAY),
    CAP(MINSUPPORTEDSAMPLERATE),
    CAP(MAXBROWSECONTINUATIONPOINTS),
    CAP(MAXQUERYCONTINUATIONPOINTS),
    CAP(MAXHISTORYCONTINUATIONPOINTS),
    CAP(MAXARRAYLENGTH),
    CAP(MAXSTRINGLENGTH),
    CAP(MAXBYTESTRINGLENGTH),
    CAP(MAXSESSIONS),
    CAP(MAXSUBSCRIPTIONS),
    CAP(MAXMONITOREDITEMS),
    CAP(MAXSUBSCRIPTIONSPERSESSION),
    CAP(MAXMONITOREDITEMSPERSUBSCRIPTION),
    CAP(MAXMONITOREDITEMSQUEUESIZE),
    CAP(MAXSELECTCLAUSEPARAMETERS),
    CAP(MAXWHERECLAUSEPARAMETERS),
    OL(MAXMONITOREDITEMSPERCALL),
    OL(MAXNODESPERREAD),
    OL(MAXNODESPERWRITE),
    OL(MAXNODESPERMETHODCALL),
    OL(MAXNODESPERBROWSE),
    OL(MAXNODESPERREGISTERNODES),
    OL(MAXNODESPERTRANSLATEBROWSEPATHSTONODEIDS),
    OL(MAXNODESPERNODEMANAGEMENT),
    OL(MAXNODESPERHISTORYREADDATA),
    OL(MAXNODESPERHISTORYREADEVENTS),
    OL(MAXNODESPERHISTORYUPDATEDATA),
    OL(MAXNODESPERHISTORYUPDATEEVENTS),
    UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_SERVERDIAGNOSTICSSUMMARY,
    DIAG(SERVERVIEWCOUNT),
    DIAG(CURRENTSESSIONCOUNT),
    DIAG(CUMULATEDSESSIONCOUNT),
    DIAG(SECURITYREJECTEDSESSIONCOUNT),
    DIAG(REJECTEDSESSIONCOUNT),
    DIAG(SESSIONTIMEOUTCOUNT),
    DIAG(SESSIONABORTCOUNT),
    DIAG(PUBLISHINGINTERVALCOUNT),
    DIAG(CURRENTSUBSCRIPTIONCOUNT),
    DIAG(CUMULATEDSUBSCRIPTIONCOUNT),
    DIAG(SECURITYREJECTEDREQUESTSCOUNT),
    DIAG(REJECTEDREQUESTSCOUNT),
};

/* SetSubscriptionDurable (Part 5, 9.3): durable subscriptions are not
 * offered, and no subscription id of a session can be made durable. */
static uas_status no_such_subscription(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                                       size_t in_count, const uas_variant *in, size_t *out_count,
                                       uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in_count, (void)in, (void)arena;
    *out_count = 0;
    *out = NULL;
    return UAS_BAD_SUBSCRIPTION_ID_INVALID;
}

static const uint32_t subscription_methods[] = {
    UAS_NS0ID_SERVER_SETSUBSCRIPTIONDURABLE,
};

uas_status uas_server_object_init(uas_server *s)
{
    for (size_t i = 0; i < sizeof(subscription_methods) / sizeof(subscription_methods[0]); i++) {
        uas_nodeid id = uas_nodeid_numeric(0, subscription_methods[i]);
        uas_status st = uas_aspace_set_method(s->as, &id, no_such_subscription, s);
        if (st != UAS_GOOD && st != UAS_BAD_NODE_ID_UNKNOWN)
            return st;
    }
    for (size_t i = 0; i < sizeof(live_nodes) / sizeof(live_nodes[0]); i++) {
        uas_nodeid id = uas_nodeid_numeric(0, live_nodes[i]);
        uas_status st = uas_server_set_data_source(s, &id, read_server_var, NULL, s);
        /* The reduced namespace 0 lacks some of these nodes. */
        if (st != UAS_GOOD && st != UAS_BAD_NODE_ID_UNKNOWN)
            return st;
    }
    return UAS_GOOD;
}
