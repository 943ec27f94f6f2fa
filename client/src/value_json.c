/* JSON for any value the type descriptors describe, for scripts (uacli
 * --output json). It follows the shapes of the OPC UA JSON encoding (Part
 * 6, 5.4) where they are plain: numbers, strings, booleans, structures as
 * objects by member name, arrays; node ids, qualified names and timestamps
 * as their text forms, status codes by name, Variants as {"Type","Body"}.
 * 64-bit integers are strings, as Part 6 asks, so no reader rounds them. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ua/client_text.h>

static void json_at(FILE *f, const void *p, const uas_type *t);

void uas_json_string(FILE *f, const uint8_t *s, size_t len)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\r')
            fputs("\\r", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f); /* UTF-8 passes through */
    }
    fputc('"', f);
}

static void str(FILE *f, const uas_string *s)
{
    uas_json_string(f, s->data, s->length);
}

static void cstr(FILE *f, const char *s)
{
    uas_json_string(f, (const uint8_t *)s, strlen(s));
}

/* JSON has no NaN or infinities: those are strings, as Part 6 has it. */
static void real(FILE *f, double v, bool single)
{
    char buf[40];
    uas_real_format(v, single, buf, sizeof(buf));
    if (isfinite(v))
        fputs(buf, f);
    else
        cstr(f, buf);
}

static void base64(FILE *f, const uas_bytestring *b)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!b->data) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < b->length; i += 3) {
        uint32_t v = (uint32_t)b->data[i] << 16;
        if (i + 1 < b->length)
            v |= (uint32_t)b->data[i + 1] << 8;
        if (i + 2 < b->length)
            v |= b->data[i + 2];
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < b->length ? tab[v >> 6 & 63] : '=', f);
        fputc(i + 2 < b->length ? tab[v & 63] : '=', f);
    }
    fputc('"', f);
}

static void array(FILE *f, const void *data, size_t n, const uas_type *t)
{
    if (!data && n == 0) {
        fputs("[]", f);
        return;
    }
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_at(f, (const uint8_t *)data + i * t->size, t);
    }
    fputc(']', f);
}

/* The schema's field name from the C member name: endpoint_url ->
 * EndpointUrl, as Opc.Ua.Types.bsd spells it. */
static void member_name(FILE *f, const char *c_name)
{
    char buf[128];
    size_t n = 0;
    bool up = true;
    for (const char *p = c_name; *p && n < sizeof(buf) - 1; p++) {
        if (*p == '_') {
            up = true;
            continue;
        }
        buf[n++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        up = false;
    }
    buf[n] = 0;
    cstr(f, buf);
}

static void structure(FILE *f, const void *p, const uas_type *t)
{
    fputc('{', f);
    for (uint16_t i = 0; i < t->member_count; i++) {
        const uas_member *m = &t->members[i];
        const uint8_t *base = p;
        if (i)
            fputc(',', f);
        member_name(f, uas_member_name(t, i));
        fputc(':', f);
        if (m->is_array) {
            size_t n;
            void *data;
            memcpy(&n, base + m->offset, sizeof(n));
            memcpy(&data, base + m->array_offset, sizeof(data));
            array(f, data, n, uas_member_type(m));
        } else {
            json_at(f, base + m->offset, uas_member_type(m));
        }
    }
    fputc('}', f);
}

void uas_variant_print_json(FILE *f, const uas_variant *v)
{
    if (!v->type) {
        fputs("null", f);
        return;
    }
    fputs("{\"Type\":", f);
    cstr(f, v->type->name);
    fputs(",\"Body\":", f);
    if (v->is_array)
        array(f, v->data, v->array_length, v->type);
    else
        json_at(f, v->data, v->type);
    fputc('}', f);
}

static void datavalue(FILE *f, const uas_datavalue *dv)
{
    char ts[64];
    fputs("{\"Value\":", f);
    if (dv->has_value)
        uas_variant_print_json(f, &dv->value);
    else
        fputs("null", f);
    fputs(",\"Status\":", f);
    cstr(f, uas_status_name(dv->has_status ? dv->status : UAS_GOOD));
    if (dv->has_source_timestamp) {
        uas_datetime_format(dv->source_timestamp, ts, sizeof(ts));
        fputs(",\"SourceTimestamp\":", f);
        cstr(f, ts);
    }
    if (dv->has_server_timestamp) {
        uas_datetime_format(dv->server_timestamp, ts, sizeof(ts));
        fputs(",\"ServerTimestamp\":", f);
        cstr(f, ts);
    }
    fputc('}', f);
}

static void json_at(FILE *f, const void *p, const uas_type *t)
{
    char buf[512];
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        fputs(*(const bool *)p ? "true" : "false", f);
        break;
    case UAS_BUILTIN_SBYTE:
        fprintf(f, "%d", (int)*(const int8_t *)p);
        break;
    case UAS_BUILTIN_BYTE:
        fprintf(f, "%u", (unsigned)*(const uint8_t *)p);
        break;
    case UAS_BUILTIN_INT16:
        fprintf(f, "%d", (int)*(const int16_t *)p);
        break;
    case UAS_BUILTIN_UINT16:
        fprintf(f, "%u", (unsigned)*(const uint16_t *)p);
        break;
    case UAS_BUILTIN_INT32:
    case UAS_KIND_ENUM:
        fprintf(f, "%" PRId32, *(const int32_t *)p);
        break;
    case UAS_BUILTIN_UINT32:
        fprintf(f, "%" PRIu32, *(const uint32_t *)p);
        break;
    case UAS_BUILTIN_INT64:
        fprintf(f, "\"%" PRId64 "\"", *(const int64_t *)p);
        break;
    case UAS_BUILTIN_UINT64:
        fprintf(f, "\"%" PRIu64 "\"", *(const uint64_t *)p);
        break;
    case UAS_BUILTIN_FLOAT:
        real(f, *(const float *)p, true);
        break;
    case UAS_BUILTIN_DOUBLE:
        real(f, *(const double *)p, false);
        break;
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_XMLELEMENT:
        str(f, p);
        break;
    case UAS_BUILTIN_DATETIME:
        uas_datetime_format(*(const uas_datetime *)p, buf, sizeof(buf));
        cstr(f, buf);
        break;
    case UAS_BUILTIN_GUID:
        uas_guid_format(p, buf, sizeof(buf));
        cstr(f, buf);
        break;
    case UAS_BUILTIN_BYTESTRING:
        base64(f, p);
        break;
    case UAS_BUILTIN_NODEID:
        uas_nodeid_format(p, buf, sizeof(buf));
        cstr(f, buf);
        break;
    case UAS_BUILTIN_EXPANDEDNODEID:
        uas_expandednodeid_format(p, buf, sizeof(buf));
        cstr(f, buf);
        break;
    case UAS_BUILTIN_STATUSCODE:
        cstr(f, uas_status_name(*(const uas_status *)p));
        break;
    case UAS_BUILTIN_QUALIFIEDNAME: {
        const uas_qualifiedname *q = p;
        fputs("{\"Name\":", f);
        str(f, &q->name);
        fprintf(f, ",\"Uri\":%u}", (unsigned)q->ns);
        break;
    }
    case UAS_BUILTIN_LOCALIZEDTEXT: {
        const uas_localizedtext *l = p;
        fputs("{\"Locale\":", f);
        str(f, &l->locale);
        fputs(",\"Text\":", f);
        str(f, &l->text);
        fputc('}', f);
        break;
    }
    case UAS_BUILTIN_EXTENSIONOBJECT: {
        const uas_extensionobject *e = p;
        if (e->encoding == UAS_EXTOBJ_EMPTY) {
            fputs("null", f);
        } else if (e->encoding == UAS_EXTOBJ_DECODED) {
            fputs("{\"TypeId\":", f);
            cstr(f, e->content.decoded.type->name);
            fputs(",\"Body\":", f);
            json_at(f, e->content.decoded.data, e->content.decoded.type);
            fputc('}', f);
        } else {
            uas_nodeid_format(&e->content.encoded.type_id, buf, sizeof(buf));
            fputs("{\"TypeId\":", f);
            cstr(f, buf);
            fputs(",\"Encoding\":", f);
            fputs(e->encoding == UAS_EXTOBJ_XML ? "2" : "1", f);
            fputs(",\"Body\":", f);
            base64(f, &e->content.encoded.body);
            fputc('}', f);
        }
        break;
    }
    case UAS_BUILTIN_DATAVALUE:
        datavalue(f, p);
        break;
    case UAS_BUILTIN_VARIANT:
        uas_variant_print_json(f, p);
        break;
    case UAS_KIND_STRUCT:
        structure(f, p, t);
        break;
    default:
        fputs("null", f); /* DiagnosticInfo and the like: nothing for scripts */
    }
}

void uas_value_print_json(FILE *f, const void *p, const uas_type *t)
{
    json_at(f, p, t);
}
