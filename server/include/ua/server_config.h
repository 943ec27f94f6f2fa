/* Configuration files for an embedding program: the INI format uaserver
 * reads (every section and key in docs/Configuration.md), applied on top
 * of a uas_server_config, so a device reads the same file as uaserver.
 * Not in the minimal profile (UA_MINIMAL), which has no INI parser. */
#ifndef UA_SERVER_CONFIG_H
#define UA_SERVER_CONFIG_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stddef.h>
#include <stdio.h>

#include <ua/server.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Holds the strings a loaded configuration points to: free it with
 * uas_server_config_file_free after the last use of the configuration
 * (uas_server_new copies what it keeps). */
typedef struct uas_config_file uas_config_file;

/* Applies the keys of the file at path on top of cfg (start from
 * uas_server_config_default). On error, err (errlen bytes) names the line
 * and the problem, and cfg may be partly changed: BadNotFound (cannot
 * open), BadConfigurationError (syntax, unknown key, bad or out-of-range
 * value), BadOutOfMemory. */
uas_status uas_server_config_load_file(const char *path, uas_server_config *cfg,
                                       uas_config_file **keep, char *err, size_t errlen);
void uas_server_config_file_free(uas_config_file *f);
/* Writes cfg in the same INI format (uaserver --print-config). */
void uas_server_config_print(FILE *out, const uas_server_config *cfg);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
