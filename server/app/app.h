/* uaserver's own nodes (app_nodes.c). */
#ifndef UAS_APP_H
#define UAS_APP_H

#include <ua/server.h>

uas_status app_add_contract_nodes(uas_server *s, const uint32_t *array_sizes, size_t n_arrays);
uas_status app_add_demo_nodes(uas_server *s);
/* n UInt64 counters ns=1;i=100001.. (data sources): every read, including
 * each sample a monitored item takes, advances the counter by one and
 * returns it. */
uas_status app_add_counter_nodes(uas_server *s, uint32_t n);

#endif
