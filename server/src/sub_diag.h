/* What the Server object (server_object.c) shows of the subscriptions:
 * ServerDiagnosticsSummary's figures and the limits of ServerCapabilities,
 * from svc_subscription.c. Both are readable from any thread without an
 * engine's lock, including while an engine samples them for a client. */
#ifndef UAS_SUB_DIAG_H
#define UAS_SUB_DIAG_H

#include "server_internal.h"
#include "sub_engine.h"

typedef struct uas_subs_figures {
    uint32_t current;              /* subscriptions now */
    uint32_t cumulated;            /* created since the server started */
    uint32_t publishing_intervals; /* distinct publishing intervals now */
    /* The server-wide counts the limits apply to (uas_sub_shared). */
    uint32_t monitored_items;
    uint32_t queue_slots;     /* queue sizes of all monitored items */
    uint32_t orphans;         /* subscriptions without session now */
    uint32_t orphans_dropped; /* orphans deleted early by a cap or max_orphan_lifetime_ms */
    uint32_t refused;         /* requests refused or revised by a subscription limit */
    uint64_t queue_bytes;     /* memory budget held by the engines' queues */
    uint32_t budget_refused;  /* items or notifications the memory budget refused */
} uas_subs_figures;

void uas_subs_get_figures(uas_server *s, uas_subs_figures *out);
/* The limits every loop's engine enforces, NULL before the engines exist.
 * Counts of subscriptions, monitored items and queue slots are shared by
 * the engines, so those limits hold for the server as a whole. */
const uas_sub_limits *uas_subs_limits(uas_server *s);

#endif
