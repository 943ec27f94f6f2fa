/* Levelled logging. The level check is a plain load so disabled levels cost
 * nothing measurable on hot paths.
 *
 * Log lines carry text that peers chose (session names, URIs, user names),
 * so every message is escaped in one place before it reaches stderr or a
 * sink: a peer can neither start a forged line nor send the terminal
 * escape sequences. Call sites a peer can trigger at will log through a
 * rate limiter (UAS_LOG_LIMITED), so a flood of one event costs a few
 * lines and a count, not the disk. */
#define _POSIX_C_SOURCE 200809L
#include <ua/log.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int cur_level = UAS_LOG_INFO;
static uas_log_sink cur_sink;
static void *cur_sink_ud;
static atomic_uint rate_burst = 10;
static atomic_uint rate_interval_ms = 10000;

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

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int uas_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

const char *uas_log_level_name(uas_log_level level)
{
    return (unsigned)level < 4 ? level_names[level] : "?";
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t left, uint32_t *cp)
{
    size_t n;
    uint32_t min;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
        min = 0x80;
        *cp = p[0] & 0x1fu;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        min = 0x800;
        *cp = p[0] & 0x0fu;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        min = 0x10000;
        *cp = p[0] & 0x07u;
    } else {
        return 0;
    }
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        *cp = (*cp << 6) | (p[i] & 0x3fu);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
        return 0;
    return n;
}

size_t uas_log_escape(char *out, size_t cap, const char *in, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        char esc[4];
        size_t en = 0, take = 1;
        uint32_t cp = 0;
        unsigned char b = p[i];
        if (b == '\n' || b == '\r' || b == '\t') {
            esc[0] = '\\';
            esc[1] = b == '\n' ? 'n' : b == '\r' ? 'r' : 't';
            en = 2;
        } else if (b < 0x80 && b >= 0x20 && b != 0x7f) {
            esc[0] = (char)b;
            en = 1;
        } else if (b >= 0x80 && (take = utf8_seq(p + i, len - i, &cp)) != 0 &&
                   !(cp >= 0x80 && cp <= 0x9f)) {
            /* A printable character beyond ASCII: copied whole. */
            if (o + take >= cap)
                break;
            memcpy(out + o, p + i, take);
            o += take;
            i += take;
            continue;
        } else {
            /* Other controls, C1 controls, bytes of invalid UTF-8. */
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[b >> 4];
            esc[3] = hex[b & 15];
            en = 4;
            take = 1;
        }
        if (o + en >= cap)
            break; /* never half an escape */
        memcpy(out + o, esc, en);
        o += en;
        i += take;
    }
    out[o] = 0;
    return o;
}

static void emit(uas_log_level level, const char *module, const char *fmt, va_list ap,
                 unsigned suppressed)
{
    char raw[1024];
    int n = vsnprintf(raw, sizeof(raw), fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(raw) ? (size_t)n : sizeof(raw) - 1;
    if (suppressed)
        len += (size_t)snprintf(raw + len, sizeof(raw) - len, " (%u similar lines suppressed)",
                                suppressed);
    if (len >= sizeof(raw))
        len = sizeof(raw) - 1;
    char msg[4 * sizeof(raw) + 1];
    uas_log_escape(msg, sizeof(msg), raw, len);
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

void uas_log(uas_log_level level, const char *module, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(&cur_level, memory_order_relaxed))
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(level, module, fmt, ap, 0);
    va_end(ap);
}

void uas_log_set_rate_limit(unsigned burst, unsigned interval_ms)
{
    atomic_store_explicit(&rate_burst, burst, memory_order_relaxed);
    atomic_store_explicit(&rate_interval_ms, interval_ms, memory_order_relaxed);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A fixed window per limiter: the first burst lines of each interval are
 * printed, the rest counted; the next printed line says how many were
 * dropped. Loops share limiters, so the window roll is a compare-and-swap
 * (GCC/Clang atomics on plain fields keep the public struct free of
 * <stdatomic.h>); a line more or less at the roll is harmless. */
void uas_log_limited(uas_log_limit *lim, uas_log_level level, const char *module, const char *fmt,
                     ...)
{
    if ((int)level > atomic_load_explicit(&cur_level, memory_order_relaxed))
        return;
    unsigned burst = atomic_load_explicit(&rate_burst, memory_order_relaxed);
    int64_t interval = atomic_load_explicit(&rate_interval_ms, memory_order_relaxed);
    unsigned suppressed = 0;
    if (burst) {
        int64_t now = mono_ms() + 1; /* 0 marks a limiter never used */
        long long start = __atomic_load_n(&lim->window_start_ms, __ATOMIC_RELAXED);
        if ((start == 0 || now - start >= interval) &&
            __atomic_compare_exchange_n(&lim->window_start_ms, &start, (long long)now, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&lim->count, 0, __ATOMIC_RELAXED);
            suppressed = __atomic_exchange_n(&lim->suppressed, 0, __ATOMIC_RELAXED);
        }
        if (__atomic_fetch_add(&lim->count, 1, __ATOMIC_RELAXED) >= burst) {
            __atomic_fetch_add(&lim->suppressed, 1 + suppressed, __ATOMIC_RELAXED);
            return;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    emit(level, module, fmt, ap, suppressed);
    va_end(ap);
}
