/* Levelled logging. The level check is a plain load so disabled levels cost
 * nothing measurable on hot paths. */
#define _POSIX_C_SOURCE 200809L
#include <ua/log.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int cur_level = UAS_LOG_INFO;
static uas_log_sink cur_sink;
static void *cur_sink_ud;

void uas_log_set_level(uas_log_level level)
{
    atomic_store_explicit(&cur_level, (int)level, memory_order_relaxed);
}

uas_log_level uas_log_get_level(void)
{
    return (uas_log_level)atomic_load_explicit(&cur_level, memory_order_relaxed);
}

void uas_log_set_sink(uas_log_sink sink, void *ud)
{
    cur_sink = sink;
    cur_sink_ud = ud;
}

int uas_log_level_parse(const char *name)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

void uas_log(uas_log_level level, const char *module, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(&cur_level, memory_order_relaxed))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (cur_sink) {
        cur_sink(cur_sink_ud, level, module, msg);
        return;
    }
    static const char *const tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [%s] %s\n", tm.tm_year + 1900,
            tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
            tags[level], module, msg);
}
