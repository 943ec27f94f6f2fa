/* Typed values from the command line: "int32" "42" -> Variant Int32 42. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

typedef struct type_name {
    const char *name;
    int type_index;
} type_name;

static const type_name types[] = {
    {"boolean", UAS_TYPES_BOOLEAN}, {"sbyte", UAS_TYPES_SBYTE},   {"byte", UAS_TYPES_BYTE},
    {"int16", UAS_TYPES_INT16},     {"uint16", UAS_TYPES_UINT16}, {"int32", UAS_TYPES_INT32},
    {"uint32", UAS_TYPES_UINT32},   {"int64", UAS_TYPES_INT64},   {"uint64", UAS_TYPES_UINT64},
    {"float", UAS_TYPES_FLOAT},     {"double", UAS_TYPES_DOUBLE}, {"string", UAS_TYPES_STRING},
};

static bool parse_signed(const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (!*s || *end || errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_unsigned(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    while (*s == ' ')
        s++;
    if (*s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    if (!*s || *end || errno || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0) {
        *out = true;
        return true;
    }
    if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0) {
        *out = false;
        return true;
    }
    return false;
}

/* Fills the value of builtin kind into p; false when text does not fit. */
static bool parse_into(int kind, const char *text, void *p, uas_arena *a)
{
    long long sv;
    unsigned long long uv;
    char *end;
    switch (kind) {
    case UAS_BUILTIN_BOOLEAN:
        return parse_bool(text, p);
    case UAS_BUILTIN_SBYTE:
        if (!parse_signed(text, INT8_MIN, INT8_MAX, &sv))
            return false;
        *(int8_t *)p = (int8_t)sv;
        return true;
    case UAS_BUILTIN_BYTE:
        if (!parse_unsigned(text, UINT8_MAX, &uv))
            return false;
        *(uint8_t *)p = (uint8_t)uv;
        return true;
    case UAS_BUILTIN_INT16:
        if (!parse_signed(text, INT16_MIN, INT16_MAX, &sv))
            return false;
        *(int16_t *)p = (int16_t)sv;
        return true;
    case UAS_BUILTIN_UINT16:
        if (!parse_unsigned(text, UINT16_MAX, &uv))
            return false;
        *(uint16_t *)p = (uint16_t)uv;
        return true;
    case UAS_BUILTIN_INT32:
        if (!parse_signed(text, INT32_MIN, INT32_MAX, &sv))
            return false;
        *(int32_t *)p = (int32_t)sv;
        return true;
    case UAS_BUILTIN_UINT32:
        if (!parse_unsigned(text, UINT32_MAX, &uv))
            return false;
        *(uint32_t *)p = (uint32_t)uv;
        return true;
    case UAS_BUILTIN_INT64:
        if (!parse_signed(text, INT64_MIN, INT64_MAX, &sv))
            return false;
        *(int64_t *)p = (int64_t)sv;
        return true;
    case UAS_BUILTIN_UINT64:
        if (!parse_unsigned(text, UINT64_MAX, &uv))
            return false;
        *(uint64_t *)p = (uint64_t)uv;
        return true;
    case UAS_BUILTIN_FLOAT:
    case UAS_BUILTIN_DOUBLE: {
        errno = 0;
        double d = strtod(text, &end);
        if (!*text || *end || (errno == ERANGE && isinf(d)))
            return false;
        if (kind == UAS_BUILTIN_FLOAT && isfinite(d) && fabs(d) > FLT_MAX)
            return false;
        if (kind == UAS_BUILTIN_FLOAT)
            *(float *)p = (float)d;
        else
            *(double *)p = d;
        return true;
    }
    case UAS_BUILTIN_STRING: {
        uas_string *s = p;
        size_t n = strlen(text);
        s->length = n;
        s->data = n ? uas_arena_alloc(a, n) : UAS_EMPTY_ARRAY;
        if (!s->data)
            return false;
        memcpy(s->data, text, n);
        return true;
    }
    default:
        return false;
    }
}

int cli_parse_value(cli *c, const char *type, const char *text, uas_variant *out)
{
    const uas_type *t = NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcasecmp(type, types[i].name) == 0)
            t = &uas_types[types[i].type_index];
    if (!t)
        return cli_usage_error("unknown type '%s' (boolean, sbyte, byte, int16, uint16, int32, "
                               "uint32, int64, uint64, float, double, string)",
                               type);
    void *p = uas_arena_calloc(&c->arena, 1, t->size);
    if (!p || !parse_into(t->kind, text, p, &c->arena))
        return cli_usage_error("'%s' is not a valid %s value", text, type);
    uas_variant_set_scalar(out, p, t);
    return EXIT_OK;
}
