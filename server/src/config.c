/* Configuration files: INI, parsed by inih. Every key maps onto a field of
 * uas_server_config through one table, which docs/Configuration.md mirrors;
 * an unknown key, a malformed number or a value out of range is an error
 * naming the line, never silently ignored. */
#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* T_LIST: a string key that may repeat; the values are joined by newlines. */
enum { T_STR, T_U16, T_U32, T_SIZE, T_LEVEL, T_BOOL, T_LIST };

typedef struct key_def {
    const char *section;
    const char *key;
    uint8_t type;
    size_t offset;
    uint64_t min, max;
} key_def;

#define K(sec, name, type, field, lo, hi)                                                          \
    {                                                                                              \
        sec, name, type, offsetof(uas_server_config, field), lo, hi                                \
    }

static const key_def keys[] = {
    K("server", "bind_address", T_STR, bind_address, 0, 0),
    K("server", "port", T_U16, port, 0, 65535),
    K("server", "hostname", T_STR, hostname, 0, 0),
    K("server", "threads", T_U32, threads, 0, 256),
    K("server", "worker_threads", T_U32, worker_threads, 0, 256),
    K("server", "worker_queue", T_U32, worker_queue, 1, 1000000),
    K("server", "application_uri", T_STR, application_uri, 0, 0),
    K("server", "product_uri", T_STR, product_uri, 0, 0),
    K("server", "application_name", T_STR, application_name, 0, 0),
    K("server", "log_level", T_LEVEL, log_level, 0, 0),
    K("transport", "buffer_size", T_U32, buffer_size, 8192, 16u << 20),
    K("transport", "max_message_size", T_U32, max_message_size, 8192, 1u << 30),
    K("transport", "max_chunk_count", T_U32, max_chunk_count, 0, 1u << 20),
    K("transport", "max_connections", T_U32, max_connections, 1, 1000000),
    K("transport", "hello_timeout_ms", T_U32, hello_timeout_ms, 100, 3600000),
    K("transport", "max_output_bytes", T_SIZE, max_output_bytes, 65536, 1u << 30),
    K("transport", "min_token_lifetime_ms", T_U32, min_token_lifetime_ms, 1000, UINT32_MAX),
    K("transport", "max_token_lifetime_ms", T_U32, max_token_lifetime_ms, 1000, UINT32_MAX),
    K("session", "max_sessions", T_U32, max_sessions, 1, 1000000),
    K("session", "min_session_timeout_ms", T_U32, min_session_timeout_ms, 1000, UINT32_MAX),
    K("session", "max_session_timeout_ms", T_U32, max_session_timeout_ms, 1000, UINT32_MAX),
    K("session", "max_browse_continuation_points", T_U32, max_browse_continuation_points, 0, 65535),
    K("limits", "max_nodes_per_read", T_U32, max_nodes_per_read, 1, UINT32_MAX),
    K("limits", "max_nodes_per_write", T_U32, max_nodes_per_write, 1, UINT32_MAX),
    K("limits", "max_nodes_per_browse", T_U32, max_nodes_per_browse, 1, UINT32_MAX),
    K("limits", "max_references_per_node", T_U32, max_references_per_node, 1, UINT32_MAX),
    K("limits", "max_nodes_per_translate", T_U32, max_nodes_per_translate, 1, UINT32_MAX),
    K("limits", "max_nodes_per_method_call", T_U32, max_nodes_per_method_call, 1, UINT32_MAX),
    K("limits", "max_nodes_per_register", T_U32, max_nodes_per_register, 1, UINT32_MAX),
    K("limits", "max_filter_elements", T_U32, max_filter_elements, 1, 4096),
    K("limits", "max_like_pattern_length", T_U32, max_like_pattern_length, 1, 1u << 20),
    K("limits", "max_filter_steps", T_U32, max_filter_steps, 100, UINT32_MAX),
    K("limits", "max_filter_scratch", T_U32, max_filter_scratch, 1024, 1u << 30),
    K("limits", "max_array_length", T_U32, decode_limits.max_array_length, 1, UINT32_MAX),
    K("limits", "max_string_length", T_U32, decode_limits.max_string_length, 1, UINT32_MAX),
    K("limits", "max_depth", T_U16, decode_limits.max_depth, 1, 1000),
    K("security", "security", T_STR, security, 0, 0),
    K("security", "allow_deprecated", T_BOOL, allow_deprecated, 0, 0),
    K("security", "pki_dir", T_STR, pki_dir, 0, 0),
    K("security", "users_file", T_STR, users_file, 0, 0),
    K("security", "allow_anonymous", T_BOOL, allow_anonymous, 0, 0),
    K("security", "anonymous_endpoints", T_STR, anonymous_endpoints, 0, 0),
    K("security", "auto_accept", T_BOOL, auto_accept, 0, 0),
    K("security", "certificate", T_STR, certificate, 0, 0),
    K("security", "private_key", T_STR, private_key, 0, 0),
    K("security", "key_bits", T_U32, key_bits, 2048, 8192),
    K("security", "trust_certificate", T_STR, trust_certificate, 0, 0),
    K("transport", "channel_idle_timeout_ms", T_U32, channel_idle_timeout_ms, 0, UINT32_MAX),
    K("session", "activation_timeout_ms", T_U32, session_activation_timeout_ms, 0, UINT32_MAX),
    K("session", "max_unactivated_per_channel", T_U32, max_unactivated_per_channel, 0, 1000000),
    K("session", "max_unactivated_per_address", T_U32, max_unactivated_per_address, 0, 1000000),
    K("server", "log_rate_burst", T_U32, log_rate_burst, 0, 1000000),
    K("server", "log_rate_interval_ms", T_U32, log_rate_interval_ms, 1, 3600000),
    K("roles", "anonymous", T_STR, anonymous_roles, 0, 0),
    K("roles", "x509", T_LIST, x509_roles, 0, 0),
    K("roles", "permissions", T_LIST, role_permissions, 0, 0),
    K("security", "login_max_failures", T_U32, login_max_failures, 0, 1000000),
    K("security", "login_window_ms", T_U32, login_window_ms, 0, UINT32_MAX),
    K("security", "login_backoff_ms", T_U32, login_backoff_ms, 0, UINT32_MAX),
    K("security", "login_max_backoff_ms", T_U32, login_max_backoff_ms, 0, UINT32_MAX),
    K("security", "login_global_max_failures", T_U32, login_global_max_failures, 0, 100000000),
    K("security", "pki_max_signature_checks", T_U32, pki_max_signature_checks, 0, 1000),
    K("security", "pki_max_ca_key_bits", T_U32, pki_max_ca_key_bits, 0, 16384),
    K("security", "pki_max_rejected", T_U32, pki_max_rejected, 0, 100000),
    K("security", "pki_rejected_max_cert_size", T_U32, pki_rejected_max_cert_size, 0, 262144),
    K("security", "pki_rejected_writes_per_minute", T_U32, pki_rejected_writes_per_minute, 0,
      100000),
    K("transport", "memory_budget", T_SIZE, memory_budget, 0, (uint64_t)1 << 40),
    K("transport", "max_connections_per_address", T_U32, max_connections_per_address, 0, 1000000),
    K("transport", "memory_trim", T_U32, memory_trim, 0, 3),
    K("transport", "io_backend", T_STR, io_backend, 0, 0),
    K("limits", "max_nodes_per_node_management", T_U32, max_nodes_per_node_management, 1,
      UINT32_MAX),
    K("nodesets", "nodesets", T_LIST, nodesets, 0, 0),
    K("nodesets", "max_file_size", T_SIZE, nodeset_max_file_size, 1024, (size_t)1 << 32),
    K("nodesets", "max_nodes", T_U32, nodeset_max_nodes, 1, UINT32_MAX),
    K("nodesets", "max_depth", T_U32, nodeset_max_depth, 4, 1000),
    K("nodesets", "nodeset_store", T_STR, nodeset_store, 0, 0),
    K("nodesets", "nodeset_store_interval_ms", T_U32, nodeset_store_interval_ms, 0, 3600000),
    K("subscriptions", "max_subscriptions", T_U32, max_subscriptions, 0, 10000000),
    K("subscriptions", "max_subscriptions_per_session", T_U32, max_subscriptions_per_session, 0,
      100000),
    K("subscriptions", "max_monitored_items", T_U32, max_monitored_items, 0, 100000000),
    K("subscriptions", "max_monitored_items_per_session", T_U32, max_monitored_items_per_session, 0,
      100000000),
    K("subscriptions", "max_monitored_items_per_subscription", T_U32,
      max_monitored_items_per_subscription, 0, 100000000),
    K("subscriptions", "max_queued_notifications", T_U32, max_queued_notifications, 0, UINT32_MAX),
    K("subscriptions", "max_queued_per_subscription", T_U32, max_queued_per_subscription, 0,
      UINT32_MAX),
    K("subscriptions", "max_publishing_interval_ms", T_U32, max_publishing_interval_ms, 0,
      86400000),
    K("subscriptions", "max_subscription_lifetime_ms", T_U32, max_subscription_lifetime_ms, 0,
      UINT32_MAX),
    K("subscriptions", "max_orphaned_subscriptions", T_U32, max_orphaned_subscriptions, 0,
      10000000),
    K("subscriptions", "max_orphaned_per_user", T_U32, max_orphaned_per_user, 0, 10000000),
    K("subscriptions", "max_orphan_lifetime_ms", T_U32, max_orphan_lifetime_ms, 0, UINT32_MAX),
};

struct uas_config_file {
    char **strings;
    size_t count;
};

typedef struct parse_state {
    uas_server_config *cfg;
    uas_config_file *keep;
    char *err;
    size_t errlen;
    FILE *fp;
    int line;     /* lines read so far: the one being handled */
    int err_line; /* the line err is about, 0: none yet */
} parse_state;

/* The first error wins: inih goes on after one, and a later key's message
 * must not be reported for an earlier line. */
static bool first_error(parse_state *ps)
{
    if (ps->err_line)
        return false;
    ps->err_line = ps->line;
    return true;
}

/* inih's line reader, counting lines and naming the syntax errors inih only
 * reports by line number. */
static char *read_line(char *str, int num, void *stream)
{
    parse_state *ps = stream;
    char *got = fgets(str, num, ps->fp);
    if (!got)
        return NULL;
    ps->line++;
    const char *p = str;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '[' && !strchr(p, ']') && first_error(ps))
        snprintf(ps->err, ps->errlen, "section header without a closing ']'");
    else if (*p && *p != '\n' && *p != '\r' && *p != ';' && *p != '#' && *p != '[' &&
             !strchr(p, '=') && !strchr(p, ':') && first_error(ps))
        snprintf(ps->err, ps->errlen, "expected 'key = value' or '[section]'");
    return got;
}

static int keep_string(uas_config_file *f, const char *v, const char **dst)
{
    size_t n = strlen(v) + 1;
    char *copy = uas_malloc(n);
    char **grown =
        uas_realloc(f->strings, f->count * sizeof(char *), (f->count + 1) * sizeof(char *));
    if (!copy || !grown) {
        uas_free(copy, n);
        if (grown)
            f->strings = grown;
        return 0;
    }
    memcpy(copy, v, n);
    f->strings = grown;
    f->strings[f->count++] = copy;
    *dst = copy;
    return 1;
}

/* *dst = *dst + "\n" + v, or v when *dst is NULL (the kept strings hold
 * both; the old one is freed with the file). */
static int append_line(uas_config_file *f, const char **dst, const char *v)
{
    if (!*dst)
        return keep_string(f, v, dst);
    size_t a = strlen(*dst), b = strlen(v);
    char *joined = uas_malloc(a + b + 2);
    if (!joined)
        return 0;
    memcpy(joined, *dst, a);
    joined[a] = '\n';
    memcpy(joined + a + 1, v, b + 1);
    int ok = keep_string(f, joined, dst);
    uas_free(joined, a + b + 2);
    return ok;
}

/* Debian's inih reports the line of the first error as ini_parse_file's
 * result; messages here omit it and the caller prefixes it. */
static int on_value(void *user, const char *section, const char *name, const char *value)
{
    parse_state *ps = user;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const key_def *k = &keys[i];
        if (strcmp(k->section, section) != 0 || strcmp(k->key, name) != 0)
            continue;
        uint8_t *field = (uint8_t *)ps->cfg + k->offset;
        if (k->type == T_STR) {
            if (!keep_string(ps->keep, value, (const char **)(void *)field)) {
                if (first_error(ps))
                    snprintf(ps->err, ps->errlen, "out of memory");
                return 0;
            }
            return 1;
        }
        if (k->type == T_LIST) {
            const char **dst = (const char **)(void *)field;
            if (!append_line(ps->keep, dst, value)) {
                snprintf(ps->err, ps->errlen, "out of memory");
                return 0;
            }
            return 1;
        }
        if (k->type == T_LEVEL) {
            int lvl = uas_log_level_parse(value);
            if (lvl < 0) {
                if (first_error(ps))
                    snprintf(ps->err, ps->errlen,
                             "%s.%s must be error, warn, info or debug, not '%s'", section, name,
                             value);
                return 0;
            }
            *(uas_log_level *)(void *)field = (uas_log_level)lvl;
            return 1;
        }
        if (k->type == T_BOOL) {
            bool b;
            if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
                b = true;
            else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
                b = false;
            else {
                if (first_error(ps))
                    snprintf(ps->err, ps->errlen, "%s.%s must be true or false, not '%s'", section,
                             name, value);
                return 0;
            }
            *(bool *)(void *)field = b;
            return 1;
        }
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-' || v < k->min || v > k->max) {
            if (first_error(ps))
                snprintf(ps->err, ps->errlen, "%s.%s must be a number from %llu to %llu", section,
                         name, (unsigned long long)k->min, (unsigned long long)k->max);
            return 0;
        }
        if (k->type == T_U16)
            *(uint16_t *)(void *)field = (uint16_t)v;
        else if (k->type == T_U32)
            *(uint32_t *)(void *)field = (uint32_t)v;
        else
            *(size_t *)(void *)field = (size_t)v;
        return 1;
    }
    if (first_error(ps))
        snprintf(ps->err, ps->errlen, "unknown key '%s' in section [%s]", name, section);
    return 0;
}

uas_status uas_server_config_load_file(const char *path, uas_server_config *cfg,
                                       uas_config_file **keep, char *err, size_t errlen)
{
    uas_config_file *f = uas_calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return UAS_BAD_OUT_OF_MEMORY;
    }
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        uas_server_config_file_free(f);
        return UAS_BAD_NOT_FOUND;
    }
    char msg[200] = "";
    parse_state ps = {cfg, f, msg, sizeof(msg), fp, 0, 0};
    int rc = ini_parse_stream(read_line, &ps, on_value, &ps);
    fclose(fp);
    if (rc != 0) {
        /* rc is inih's first error line; ours should be the same one. */
        snprintf(err, errlen, "line %d: %s", rc,
                 msg[0] && ps.err_line == rc ? msg
                                             : "syntax error (a line longer than 200 "
                                               "characters?)");
        uas_server_config_file_free(f);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    *keep = f;
    return UAS_GOOD;
}

void uas_server_config_file_free(uas_config_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        uas_free(f->strings[i], strlen(f->strings[i]) + 1);
    if (f->strings)
        uas_free(f->strings, f->count * sizeof(char *));
    uas_free(f, sizeof(*f));
}

/* A T_LIST value as one "key = line" per entry. */
static void print_lines(FILE *out, const char *key, const char *v)
{
    while (v && *v) {
        const char *e = strchr(v, '\n');
        int n = e ? (int)(e - v) : (int)strlen(v);
        fprintf(out, "%s = %.*s\n", key, n, v);
        v = e ? e + 1 : NULL;
    }
}

static void print_key(FILE *out, const key_def *k, const uas_server_config *c)
{
    const uint8_t *f = (const uint8_t *)c + k->offset;
    switch (k->type) {
    case T_STR:
    case T_LIST: {
        const char *v = *(const char *const *)(const void *)f;
        if (!v)
            fprintf(out, "; %s is not set\n", k->key);
        else if (k->type == T_LIST)
            print_lines(out, k->key, v);
        else
            fprintf(out, "%s = %s\n", k->key, v);
        break;
    }
    case T_U16:
        fprintf(out, "%s = %u\n", k->key, (unsigned)*(const uint16_t *)(const void *)f);
        break;
    case T_U32:
        fprintf(out, "%s = %u\n", k->key, (unsigned)*(const uint32_t *)(const void *)f);
        break;
    case T_SIZE:
        fprintf(out, "%s = %zu\n", k->key, *(const size_t *)(const void *)f);
        break;
    case T_LEVEL:
        fprintf(out, "%s = %s\n", k->key,
                uas_log_level_name(*(const uas_log_level *)(const void *)f));
        break;
    default:
        fprintf(out, "%s = %s\n", k->key, *(const bool *)(const void *)f ? "true" : "false");
        break;
    }
}

/* Every key of the table, a section at a time in the order sections first
 * appear, so that what is printed loads back to the same configuration. */
void uas_server_config_print(FILE *out, const uas_server_config *c)
{
    const size_t n = sizeof(keys) / sizeof(keys[0]);
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(keys[j].section, keys[i].section);
        if (seen)
            continue;
        fprintf(out, "%s[%s]\n", i ? "\n" : "", keys[i].section);
        for (size_t j = i; j < n; j++)
            if (!strcmp(keys[j].section, keys[i].section))
                print_key(out, &keys[j], c);
    }
}

static bool same_value(const key_def *k, const uas_server_config *a, const uas_server_config *b)
{
    const uint8_t *fa = (const uint8_t *)a + k->offset, *fb = (const uint8_t *)b + k->offset;
    switch (k->type) {
    case T_STR:
    case T_LIST: {
        const char *sa = *(const char *const *)(const void *)fa;
        const char *sb = *(const char *const *)(const void *)fb;
        return sa == sb || (sa && sb && !strcmp(sa, sb));
    }
    case T_U16:
        return *(const uint16_t *)(const void *)fa == *(const uint16_t *)(const void *)fb;
    case T_U32:
        return *(const uint32_t *)(const void *)fa == *(const uint32_t *)(const void *)fb;
    case T_SIZE:
        return *(const size_t *)(const void *)fa == *(const size_t *)(const void *)fb;
    case T_LEVEL:
        return *(const uas_log_level *)(const void *)fa == *(const uas_log_level *)(const void *)fb;
    default:
        return *(const bool *)(const void *)fa == *(const bool *)(const void *)fb;
    }
}

size_t uas_config_diff(const uas_server_config *a, const uas_server_config *b,
                       void (*fn)(void *ud, const char *section, const char *key), void *ud)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!same_value(&keys[i], a, b)) {
            n++;
            if (fn)
                fn(ud, keys[i].section, keys[i].key);
        }
    return n;
}
