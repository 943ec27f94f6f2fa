/* Levelled logging to stderr (or a sink the program installs). Lines carry
 * a UTC timestamp, the level and the module. Secrets never go through here.
 * Every message is escaped before it is written or handed to the sink
 * (uas_log_escape), so text a peer chose cannot forge a line. */
#ifndef UA_LOG_H
#define UA_LOG_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdarg.h>
#include <stddef.h>

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
const char *uas_log_level_name(uas_log_level level);

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void uas_log(uas_log_level level, const char *module, const char *fmt, ...);

/* The message of a log line as written: bytes below 0x20 and 0x7f become
 * \n, \r, \t or \xNN; bytes of invalid UTF-8 and the C1 controls
 * (U+0080..U+009F) become \xNN per byte; other UTF-8 is kept. Writes at
 * most cap - 1 characters (never half an escape) and a NUL; returns the
 * length written. */
size_t uas_log_escape(char *out, size_t cap, const char *in, size_t len);

/* Rate limiting for lines a peer can trigger at will (refused connections,
 * refused sessions): each limiter prints the first `burst` lines of every
 * interval and counts the rest; the next line it prints ends with
 * "(N similar lines suppressed)". A limiter is a zero-initialised static,
 * normally one per call site through UAS_LOG_LIMITED; it may be shared by
 * all threads. */
typedef struct uas_log_limit {
    long long window_start_ms; /* accessed atomically by log.c only */
    unsigned count;
    unsigned suppressed;
} uas_log_limit;

/* For every limiter of the process: burst lines per interval_ms (default
 * 10 per 10000 ms); burst 0 turns limiting off. */
void uas_log_set_rate_limit(unsigned burst, unsigned interval_ms);

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void uas_log_limited(uas_log_limit *lim, uas_log_level level, const char *module, const char *fmt,
                     ...);

/* uas_log with a limiter of its own for this call site. */
#define UAS_LOG_LIMITED(level, module, ...)                                                        \
    do {                                                                                           \
        static uas_log_limit uas_log_limit_site_;                                                  \
        uas_log_limited(&uas_log_limit_site_, level, module, __VA_ARGS__);                         \
    } while (0)

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
