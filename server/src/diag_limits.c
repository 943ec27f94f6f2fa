/* The server's own diagnostics of its limits: how much of each server-wide
 * limit is in use now and how often one refused, where Part 5's
 * ServerDiagnosticsSummary has no counter for it. An object Server/uastack
 * in the server's namespace (ns=1) with three objects of variables, each a
 * data source read when a client reads (or samples) it:
 *
 *   MemoryBudget   Limit, InUse, Peak (bytes), Refusals,
 *                  ConnectionsDropped, SubscriptionQueueBytes,
 *                  SubscriptionQueueRefusals, Trims
 *   Subscriptions  MonitoredItems, QueuedNotifications (queue slots),
 *                  OrphanedSubscriptions, OrphansDropped, LimitRefusals
 *   Connections    Current, RefusedPerAddress, IdleChannelsClosed,
 *                  AcceptFailures
 *
 * Node ids are strings "uastack.<Object>.<Variable>", so they stay clear of
 * the numeric ids programs give their own nodes in namespace 1. */
#include <stdio.h>
#include <string.h>

#include <ua/membudget.h>
#include <ua/nodeids.h>

#include "server_internal.h"
#include "sub_diag.h"

enum { DL_U32, DL_U64 };

typedef struct dl_var {
    const char *group; /* object: MemoryBudget, Subscriptions, Connections */
    const char *name;
    uint8_t type;
} dl_var;

static const dl_var dl_vars[] = {
    {"MemoryBudget", "Limit", DL_U64},
    {"MemoryBudget", "InUse", DL_U64},
    {"MemoryBudget", "Peak", DL_U64},
    {"MemoryBudget", "Refusals", DL_U64},
    {"MemoryBudget", "ConnectionsDropped", DL_U64},
    {"MemoryBudget", "SubscriptionQueueBytes", DL_U64},
    {"MemoryBudget", "SubscriptionQueueRefusals", DL_U32},
    {"MemoryBudget", "Trims", DL_U64},
    {"Subscriptions", "MonitoredItems", DL_U32},
    {"Subscriptions", "QueuedNotifications", DL_U32},
    {"Subscriptions", "OrphanedSubscriptions", DL_U32},
    {"Subscriptions", "OrphansDropped", DL_U32},
    {"Subscriptions", "LimitRefusals", DL_U32},
    {"Connections", "Current", DL_U32},
    {"Connections", "RefusedPerAddress", DL_U32},
    {"Connections", "IdleChannelsClosed", DL_U32},
    {"Connections", "AcceptFailures", DL_U32},
};
#define DL_COUNT (sizeof(dl_vars) / sizeof(dl_vars[0]))

static const char *const dl_groups[] = {"MemoryBudget", "Subscriptions", "Connections"};

enum { DL_ID_MAX = 64 };

static void dl_id(char *out, const char *group, const char *name)
{
    if (name)
        snprintf(out, DL_ID_MAX, "uastack.%s.%s", group, name);
    else
        snprintf(out, DL_ID_MAX, "uastack.%s", group);
}

static uint64_t dl_value(uas_server *s, size_t i)
{
    uas_budget_stats b;
    uas_budget_get_stats(&b);
    uas_subs_figures f;
    uas_subs_get_figures(s, &f);
    const uas_server_counters *k = &s->counters;
    switch (i) {
    case 0:
        return b.limit;
    case 1:
        return b.used;
    case 2:
        return b.peak;
    case 3:
        return b.refusals;
    case 4:
        return b.drops;
    case 5:
        return f.queue_bytes;
    case 6:
        return f.budget_refused;
    case 7:
        return b.trims;
    case 8:
        return f.monitored_items;
    case 9:
        return f.queue_slots;
    case 10:
        return f.orphans;
    case 11:
        return f.orphans_dropped;
    case 12:
        return f.refused;
    case 13:
        return atomic_load(&k->current_connections);
    case 14:
        return atomic_load(&k->refused_per_address);
    case 15:
        return atomic_load(&k->idle_channels_closed);
    default:
        return atomic_load(&k->accept_failures);
    }
}

static uas_status dl_read(void *ud, const uas_nodeid *node, uas_datavalue *out, uas_arena *a)
{
    uas_server *s = ud;
    if (node->kind != UAS_NODEID_STRING)
        return UAS_BAD_NODE_ID_UNKNOWN;
    for (size_t i = 0; i < DL_COUNT; i++) {
        char id[DL_ID_MAX];
        dl_id(id, dl_vars[i].group, dl_vars[i].name);
        if (!uas_string_eq_cstr(&node->id.string, id))
            continue;
        uint64_t v = dl_value(s, i);
        void *p;
        if (dl_vars[i].type == DL_U64) {
            p = uas_arena_alloc(a, sizeof(uint64_t));
            if (p)
                memcpy(p, &v, sizeof(v));
        } else {
            uint32_t v32 = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            p = uas_arena_alloc(a, sizeof(uint32_t));
            if (p)
                memcpy(p, &v32, sizeof(v32));
        }
        if (!p)
            return UAS_BAD_OUT_OF_MEMORY;
        uas_variant_set_scalar(&out->value, p,
                               dl_vars[i].type == DL_U64 ? UAS_TYPE(UINT64) : UAS_TYPE(UINT32));
        out->has_value = true;
        out->has_source_timestamp = true;
        out->source_timestamp = uas_datetime_now();
        return UAS_GOOD;
    }
    return UAS_BAD_NODE_ID_UNKNOWN;
}

static uas_status dl_object(uas_server *s, const char *group, const uas_nodeid *parent)
{
    char id[DL_ID_MAX];
    dl_id(id, group, NULL);
    uas_nodeid nid = uas_nodeid_string(1, id);
    uas_nodeid comp = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = {1, uas_string_from(group)};
    return uas_server_add_object(s, &nid, parent, &comp, &bn, NULL, NULL);
}

uas_status uas_server_diag_limits_init(uas_server *s)
{
    uas_nodeid server = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
    uas_nodeid root = uas_nodeid_string(1, "uastack");
    uas_nodeid comp = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = {1, uas_string_from("uastack")};
    uas_status st = uas_server_add_object(s, &root, &server, &comp, &bn, NULL, NULL);
    if (st == UAS_BAD_PARENT_NODE_ID_INVALID)
        return UAS_GOOD; /* a namespace 0 without the Server object */
    for (size_t g = 0; st == UAS_GOOD && g < sizeof(dl_groups) / sizeof(dl_groups[0]); g++)
        st = dl_object(s, dl_groups[g], &root);
    for (size_t i = 0; st == UAS_GOOD && i < DL_COUNT; i++) {
        char pid[DL_ID_MAX], id[DL_ID_MAX];
        dl_id(pid, dl_vars[i].group, NULL);
        dl_id(id, dl_vars[i].group, dl_vars[i].name);
        uas_nodeid parent = uas_nodeid_string(1, pid);
        uas_nodeid nid = uas_nodeid_string(1, id);
        uas_qualifiedname vbn = {1, uas_string_from(dl_vars[i].name)};
        uas_variable_attributes va;
        memset(&va, 0, sizeof(va));
        va.data_type =
            uas_nodeid_numeric(0, dl_vars[i].type == DL_U64 ? UAS_NS0ID_UINT64 : UAS_NS0ID_UINT32);
        va.value_rank = -1;
        st = uas_server_add_variable(s, &nid, &parent, &comp, &vbn, NULL, &va);
        if (st == UAS_GOOD)
            st = uas_server_set_data_source(s, &nid, dl_read, NULL, s);
    }
    return st;
}
