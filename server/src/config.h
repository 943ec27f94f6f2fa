/* Loading uas_server_config from an INI file: the public API is
 * <ua/server_config.h>; docs/Configuration.md lists the keys. */
#ifndef UAS_CONFIG_H
#define UAS_CONFIG_H

#include <ua/server_config.h>

#endif
