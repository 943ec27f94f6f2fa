/* Levelled logging to stderr (or a sink the program installs). Lines carry
 * a UTC timestamp, the level and the module. Secrets never go through here. */
#ifndef UA_LOG_H
#define UA_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum uas_log_level {
    UAS_LOG_ERROR = 0,
    UAS_LOG_WARN = 1,
    UAS_LOG_INFO = 2,
    UAS_LOG_DEBUG = 3,
} uas_log_level;

typedef void (*uas_log_sink)(void *ud, uas_log_level level, const char *module, const char *msg);

void uas_log_set_level(uas_log_level level);
uas_log_level uas_log_get_level(void);
/* NULL restores stderr. */
void uas_log_set_sink(uas_log_sink sink, void *ud);
/* "error", "warn", "info", "debug"; -1 when unknown. */
int uas_log_level_parse(const char *name);

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void uas_log(uas_log_level level, const char *module, const char *fmt, ...);

#ifdef __cplusplus
}
#endif
#endif
