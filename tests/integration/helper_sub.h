/* Subscription calls of the integration tests, synchronous over a client
 * (uas_client_call_sync, ENV_WAIT_MS): a subscription, its items (data
 * items on the contract nodes ns=1;i=1001.., or event items on the Server
 * object) and its end, and the server's Server/uastack diagnostics. */
#ifndef HELPER_SUB_H
#define HELPER_SUB_H

#include "helper_env.h"

enum { ENV_ATTR_EVENT_NOTIFIER = 12, ENV_ATTR_VALUE = 13 };

/* An arena on the stack for one response (32 MiB of heap at most). */
typedef struct env_arena {
    uint8_t mem[8192];
    uas_arena a;
} env_arena;

uas_arena *env_arena_init(env_arena *m);

/* CreateSubscription (publishing interval ms, lifetime count, keep-alive
 * 10, enabled): the status; *id the subscription (0 on failure). */
uas_status env_create_sub(uas_client *c, double interval_ms, uint32_t lifetime, uint32_t *id);
/* DeleteSubscriptions of one: the service result, else its result. */
uas_status env_delete_sub(uas_client *c, uint32_t id);

/* What env_create_items makes: n items, each with sampling interval 100
 * ms, queue q, discard oldest. Event items select the BaseEventType field
 * select ("Message" when NULL). */
typedef struct env_items {
    bool events;
    uint32_t n;
    uint32_t queue;
    const char *select;
} env_items;

/* The service result; each item's status into st, its revised queue size
 * into rq (either may be NULL). */
uas_status env_create_items(uas_client *c, uint32_t sub, const env_items *o, uas_status *st,
                            uint32_t *rq);

/* A Server/uastack variable (ns=1;s=uastack.<name>), UInt32 or UInt64,
 * read over the wire. */
uint64_t env_diag(uas_client *c, const char *name);

#endif
