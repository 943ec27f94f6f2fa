/* Node ids as text (Part 6, 5.3.1.10): "ns=1;i=1001", "s=", "g=", "b="
 * (base64), and the GUID and timestamp forms the printer shares. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <ua/client_text.h>

/* ---- a bounded writer that still counts what did not fit ---- */

typedef struct tw {
    char *buf;
    size_t size;
    size_t len;
} tw;

static void tw_put(tw *w, const char *s, size_t n)
{
    if (w->len < w->size) {
        size_t room = w->size - 1 - w->len;
        memcpy(w->buf + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

static void tw_fmt(tw *w, const char *fmt, unsigned long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), fmt, v);
    tw_put(w, tmp, (size_t)n);
}

static size_t tw_end(tw *w)
{
    if (w->size > 0)
        w->buf[w->len < w->size ? w->len : w->size - 1] = 0;
    return w->len;
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(tw *w, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char out[4] = {b64[(v >> 18) & 63], b64[(v >> 12) & 63],
                       i + 1 < n ? b64[(v >> 6) & 63] : '=', i + 2 < n ? b64[v & 63] : '='};
        tw_put(w, out, 4);
    }
}

static int b64_value(char ch)
{
    const char *p = ch ? strchr(b64, ch) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Strict: length a multiple of 4, padding only at the end. Returns the
 * decoded length, or -1. out needs len / 4 * 3 bytes. */
static long b64_decode(const char *s, size_t len, uint8_t *out)
{
    if (len % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = b64_value(s[i + k])) < 0) {
                return -1;
            }
        }
        uint32_t x =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(x >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(x >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)x;
    }
    return (long)o;
}

/* ---- GUID ---- */

size_t uas_guid_format(const uas_guid *g, char *buf, size_t size)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof(tmp), "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     (unsigned)g->data1, (unsigned)g->data2, (unsigned)g->data3, g->data4[0],
                     g->data4[1], g->data4[2], g->data4[3], g->data4[4], g->data4[5], g->data4[6],
                     g->data4[7]);
    tw w = {buf, size, 0};
    tw_put(&w, tmp, (size_t)n);
    return tw_end(&w);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

uas_status uas_guid_parse(const char *text, size_t len, uas_guid *out)
{
    /* 8-4-4-4-12 hex digits. */
    static const size_t dash[] = {8, 13, 18, 23};
    uint8_t b[16];
    size_t nb = 0;
    if (len != 36)
        return UAS_BAD_NODE_ID_INVALID;
    for (size_t i = 0, d = 0; i < 36;) {
        if (d < 4 && i == dash[d]) {
            if (text[i] != '-')
                return UAS_BAD_NODE_ID_INVALID;
            i++;
            d++;
            continue;
        }
        int hi = hexval(text[i]), lo = hexval(text[i + 1]);
        if (hi < 0 || lo < 0)
            return UAS_BAD_NODE_ID_INVALID;
        b[nb++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    out->data1 = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    out->data2 = (uint16_t)(b[4] << 8 | b[5]);
    out->data3 = (uint16_t)(b[6] << 8 | b[7]);
    memcpy(out->data4, b + 8, 8);
    return UAS_GOOD;
}

/* ---- DateTime ---- */

/* The proleptic Gregorian date of a day count from 1970-01-01 (Howard
 * Hinnant's civil_from_days), in 64 bits: gmtime_r takes a time_t, which
 * is 32 bits on armhf and holds neither 1601 (the DateTime epoch) nor any
 * date after 2038. */
static void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

size_t uas_datetime_format(uas_datetime t, char *buf, size_t size)
{
    /* Ticks of 100 ns since 1601; floor divisions, so times before 1970
     * count down from the right day. */
    int64_t ticks = t - UAS_DATETIME_UNIX_EPOCH;
    int64_t secs = ticks / 10000000;
    int64_t rem = ticks % 10000000;
    if (rem < 0) {
        rem += 10000000;
        secs--;
    }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    int64_t year;
    unsigned month, day;
    civil_from_days(days, &year, &month, &day);
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)year, month, day,
             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), (int)(rem / 10000));
    tw w = {buf, size, 0};
    tw_put(&w, tmp, strlen(tmp));
    return tw_end(&w);
}

/* ---- NodeId ---- */

static void put_identifier(tw *w, const uas_nodeid *id)
{
    switch (id->kind) {
    case UAS_NODEID_NUMERIC:
        tw_fmt(w, "i=%llu", id->id.numeric);
        break;
    case UAS_NODEID_STRING:
        tw_put(w, "s=", 2);
        if (id->id.string.data)
            tw_put(w, (const char *)id->id.string.data, id->id.string.length);
        break;
    case UAS_NODEID_GUID: {
        char g[40];
        uas_guid_format(&id->id.guid, g, sizeof(g));
        tw_put(w, "g=", 2);
        tw_put(w, g, strlen(g));
        break;
    }
    case UAS_NODEID_BYTESTRING:
        tw_put(w, "b=", 2);
        if (id->id.bytestring.data)
            b64_encode(w, id->id.bytestring.data, id->id.bytestring.length);
        break;
    default:
        tw_put(w, "?", 1);
    }
}

size_t uas_nodeid_format(const uas_nodeid *id, char *buf, size_t size)
{
    tw w = {buf, size, 0};
    if (id->ns)
        tw_fmt(&w, "ns=%llu;", id->ns);
    put_identifier(&w, id);
    return tw_end(&w);
}

size_t uas_expandednodeid_format(const uas_expandednodeid *id, char *buf, size_t size)
{
    tw w = {buf, size, 0};
    if (id->server_index)
        tw_fmt(&w, "svr=%llu;", id->server_index);
    if (id->namespace_uri.data) {
        tw_put(&w, "nsu=", 4);
        tw_put(&w, (const char *)id->namespace_uri.data, id->namespace_uri.length);
        tw_put(&w, ";", 1);
    } else if (id->nodeid.ns) {
        tw_fmt(&w, "ns=%llu;", id->nodeid.ns);
    }
    put_identifier(&w, &id->nodeid);
    return tw_end(&w);
}

/* Decimal without sign, leading '+' or spaces, at most max. */
static bool parse_uint(const char *s, size_t n, unsigned long long max, unsigned long long *out)
{
    if (n == 0 || n > 20)
        return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static void *alloc_from(uas_arena *a, size_t n)
{
    return a ? uas_arena_alloc(a, n) : uas_malloc(n);
}

uas_status uas_nodeid_parse(const char *text, uas_nodeid *out, uas_arena *arena)
{
    memset(out, 0, sizeof(*out));
    if (!text)
        return UAS_BAD_NODE_ID_INVALID;
    const char *p = text;
    unsigned long long ns = 0;
    if (strncmp(p, "ns=", 3) == 0) {
        const char *semi = strchr(p + 3, ';');
        if (!semi || !parse_uint(p + 3, (size_t)(semi - p - 3), UINT16_MAX, &ns))
            return UAS_BAD_NODE_ID_INVALID;
        p = semi + 1;
    }
    if (!p[0] || p[1] != '=')
        return UAS_BAD_NODE_ID_INVALID;
    const char *v = p + 2;
    size_t n = strlen(v);
    uas_nodeid id;
    memset(&id, 0, sizeof(id));
    id.ns = (uint16_t)ns;
    switch (p[0]) {
    case 'i': {
        unsigned long long num;
        if (!parse_uint(v, n, UINT32_MAX, &num))
            return UAS_BAD_NODE_ID_INVALID;
        id.kind = UAS_NODEID_NUMERIC;
        id.id.numeric = (uint32_t)num;
        break;
    }
    case 's':
        if (n == 0)
            return UAS_BAD_NODE_ID_INVALID;
        id.kind = UAS_NODEID_STRING;
        id.id.string.data = alloc_from(arena, n);
        if (!id.id.string.data)
            return UAS_BAD_OUT_OF_MEMORY;
        memcpy(id.id.string.data, v, n);
        id.id.string.length = n;
        break;
    case 'g':
        id.kind = UAS_NODEID_GUID;
        if (uas_guid_parse(v, n, &id.id.guid) != UAS_GOOD)
            return UAS_BAD_NODE_ID_INVALID;
        break;
    case 'b': {
        if (n == 0 || n % 4)
            return UAS_BAD_NODE_ID_INVALID;
        uint8_t *bytes = alloc_from(arena, n / 4 * 3);
        if (!bytes)
            return UAS_BAD_OUT_OF_MEMORY;
        long len = b64_decode(v, n, bytes);
        if (len <= 0) {
            if (!arena)
                uas_free(bytes, n / 4 * 3);
            return UAS_BAD_NODE_ID_INVALID;
        }
        if (!arena && (size_t)len != n / 4 * 3) {
            /* The heap copy must have exactly the length uas_clear frees. */
            uint8_t *exact = uas_malloc((size_t)len);
            if (exact)
                memcpy(exact, bytes, (size_t)len);
            uas_free(bytes, n / 4 * 3);
            if (!exact)
                return UAS_BAD_OUT_OF_MEMORY;
            bytes = exact;
        }
        id.kind = UAS_NODEID_BYTESTRING;
        id.id.bytestring.data = bytes;
        id.id.bytestring.length = (size_t)len;
        break;
    }
    default:
        return UAS_BAD_NODE_ID_INVALID;
    }
    *out = id;
    return UAS_GOOD;
}
