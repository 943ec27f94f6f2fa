/* Loading uas_server_config from an INI file (docs/Configuration.md). */
#ifndef UAS_CONFIG_H
#define UAS_CONFIG_H

#include <stdio.h>

#include <ua/server.h>

/* Holds the strings a loaded configuration points to. */
typedef struct uas_config_file uas_config_file;

/* Applies the file's keys on top of cfg. On error err names the line and
 * the problem: BadNotFound (cannot open), BadConfigurationError. */
uas_status uas_config_load(const char *path, uas_server_config *cfg, uas_config_file **keep,
                           char *err, size_t errlen);
void uas_config_file_free(uas_config_file *f);
/* Calls fn for every configuration key whose value differs between a and b
 * (strings by content); returns how many differ. */
size_t uas_config_diff(const uas_server_config *a, const uas_server_config *b,
                       void (*fn)(void *ud, const char *section, const char *key), void *ud);
void uas_config_print(FILE *out, const uas_server_config *c);

#endif
