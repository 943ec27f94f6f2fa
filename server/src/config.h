/* Loading uas_server_config from an INI file: the public API is
 * <ua/server_config.h>; docs/Configuration.md lists the keys. */
#ifndef UAS_CONFIG_H
#define UAS_CONFIG_H

#include <ua/server_config.h>

/* Calls fn for every configuration key whose value differs between a and b
 * (strings by content); returns how many differ (uaserver's SIGHUP). */
size_t uas_config_diff(const uas_server_config *a, const uas_server_config *b,
                       void (*fn)(void *ud, const char *section, const char *key), void *ud);

#endif
