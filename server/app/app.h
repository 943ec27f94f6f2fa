/* uaserver's own nodes (app_nodes.c). */
#ifndef UAS_APP_H
#define UAS_APP_H

#include <ua/server.h>

uas_status app_add_contract_nodes(uas_server *s, const uint32_t *array_sizes, size_t n_arrays);
uas_status app_add_demo_nodes(uas_server *s);
/* A read-only UInt64 variable ns=1;s=<name> under Demo whose value is
 * get(ud) at each read, e.g. the uastack.* counters load generators read
 * from another process (at most 16). */
typedef uint64_t (*app_u64_fn)(void *ud);
uas_status app_add_u64_var(uas_server *s, const char *name, app_u64_fn get, void *ud);
/* n UInt64 counters ns=1;i=100001.. (data sources): every read, including
 * each sample a monitored item takes, advances the counter by one and
 * returns it. */
uas_status app_add_counter_nodes(uas_server *s, uint32_t n);

/* The event source of --event-rate (app_events.c): rate BaseEventType
 * events per second from ns=1;s=Demo with SourceName APP_EVENT_SOURCE_NAME,
 * counted in ns=1;s=uastack.EventsReported. add: before listening; start:
 * once the server runs (0, or -1 when the thread cannot start); stop:
 * before the server is deleted. */
#define APP_EVENT_SOURCE_NAME "uastack.EventSource"
uas_status app_event_source_add(uas_server *s, uint32_t rate);
int app_event_source_start(void);
void app_event_source_stop(void);

#endif
