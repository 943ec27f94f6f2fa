/* A readable printer for any value the type descriptors describe: one
 * routine per builtin, and structures walked generically over their
 * members, so every generated type (and every structure a server returns
 * inside a Variant or ExtensionObject) prints without code of its own. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ua/client_text.h>

enum { MAX_BYTES = 64 }; /* ByteString bytes shown before eliding */

/* The shortest text that reads back as the same value (21.5, not
 * 21.499999999999999 or 21.500000000000000), trying precisions upwards:
 * at most 9 significant digits identify a float, 17 a double. */
size_t uas_real_format(double v, bool single, char *buf, size_t size)
{
    if (!isfinite(v))
        return (size_t)snprintf(buf, size, "%s",
                                isnan(v) ? "NaN"
                                : v > 0  ? "Infinity"
                                         : "-Infinity");
    int n = 0;
    int max = single ? 9 : 17;
    for (int prec = 1; prec <= max; prec++) {
        n = snprintf(buf, size, "%.*g", prec, v);
        if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
            break;
    }
    return (size_t)n;
}

static void print_real(FILE *f, double v, bool single)
{
    char buf[40];
    uas_real_format(v, single, buf, sizeof(buf));
    fputs(buf, f);
}

static void print_at(FILE *f, const void *p, const uas_type *t, int indent);

static void newline(FILE *f, int indent)
{
    fprintf(f, "\n%*s", indent, "");
}

static void print_string(FILE *f, const uas_string *s)
{
    if (!s->data) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < s->length; i++) {
        unsigned char ch = s->data[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void print_bytes(FILE *f, const uas_bytestring *b)
{
    if (!b->data) {
        fputs("null", f);
        return;
    }
    fputs("0x", f);
    size_t n = b->length < MAX_BYTES ? b->length : MAX_BYTES;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b->data[i]);
    if (b->length > n)
        fprintf(f, "... (%zu bytes)", b->length);
}

static void print_status(FILE *f, uas_status s)
{
    const char *name = uas_status_name(s);
    if (strcmp(name, "Unknown") == 0 || (s & 0xFFFF))
        fprintf(f, "%s (0x%08" PRIX32 ")", name, s);
    else
        fputs(name, f);
}

static void print_qname(FILE *f, const uas_qualifiedname *q)
{
    if (q->ns)
        fprintf(f, "%u:", (unsigned)q->ns);
    if (q->name.data)
        fwrite(q->name.data, 1, q->name.length, f);
}

static void print_ltext(FILE *f, const uas_localizedtext *l)
{
    print_string(f, &l->text);
    if (l->locale.data && l->locale.length) {
        fputs(" [", f);
        fwrite(l->locale.data, 1, l->locale.length, f);
        fputc(']', f);
    }
}

static void print_nodeid(FILE *f, const uas_nodeid *id)
{
    char buf[256];
    size_t n = uas_nodeid_format(id, buf, sizeof(buf));
    fputs(buf, f);
    if (n >= sizeof(buf))
        fputs("...", f);
}

static void print_expanded(FILE *f, const uas_expandednodeid *id)
{
    char buf[512];
    size_t n = uas_expandednodeid_format(id, buf, sizeof(buf));
    fputs(buf, f);
    if (n >= sizeof(buf))
        fputs("...", f);
}

/* Values printed on one line; the others open a block. */
static bool is_inline(const uas_type *t)
{
    switch (t->kind) {
    case UAS_KIND_STRUCT:
    case UAS_BUILTIN_DATAVALUE:
    case UAS_BUILTIN_DIAGNOSTICINFO:
    case UAS_BUILTIN_EXTENSIONOBJECT:
    case UAS_BUILTIN_VARIANT:
        return false;
    default:
        return true;
    }
}

static void print_array(FILE *f, const void *data, size_t n, const uas_type *t, int indent)
{
    if (!data) {
        fputs("null", f);
        return;
    }
    if (is_inline(t)) {
        fputc('[', f);
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputs(", ", f);
            print_at(f, (const uint8_t *)data + i * t->size, t, indent);
        }
        fputc(']', f);
        return;
    }
    if (n == 0) {
        fputs("[]", f);
        return;
    }
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        newline(f, indent + 2);
        fprintf(f, "[%zu] ", i);
        print_at(f, (const uint8_t *)data + i * t->size, t, indent + 2);
    }
    newline(f, indent);
    fputc(']', f);
}

static void print_struct(FILE *f, const void *p, const uas_type *t, int indent)
{
    fprintf(f, "%s {", t->name);
    for (uint16_t i = 0; i < t->member_count; i++) {
        const uas_member *m = &t->members[i];
        newline(f, indent + 2);
        fprintf(f, "%s: ", uas_member_name(t, i));
        const uint8_t *base = p;
        if (m->is_array) {
            size_t n;
            void *data;
            memcpy(&n, base + m->offset, sizeof(n));
            memcpy(&data, base + m->array_offset, sizeof(data));
            print_array(f, data, n, uas_member_type(m), indent + 2);
        } else {
            print_at(f, base + m->offset, uas_member_type(m), indent + 2);
        }
    }
    newline(f, indent);
    fputc('}', f);
}

void uas_variant_print(FILE *f, const uas_variant *v, int indent)
{
    if (!v->type) {
        fputs("empty", f);
        return;
    }
    if (!v->is_array) {
        fprintf(f, "%s ", v->type->name);
        print_at(f, v->data, v->type, indent);
        return;
    }
    fprintf(f, "%s[%zu", v->type->name, v->array_length);
    for (size_t i = 1; v->array_dimensions && i < v->array_dimensions_length; i++)
        fprintf(f, ",%u", (unsigned)v->array_dimensions[i]);
    fputs("] ", f);
    print_array(f, v->data, v->array_length, v->type, indent);
}

static void print_extobj(FILE *f, const uas_extensionobject *e, int indent)
{
    switch (e->encoding) {
    case UAS_EXTOBJ_EMPTY:
        fputs("ExtensionObject(empty)", f);
        break;
    case UAS_EXTOBJ_DECODED:
        print_at(f, e->content.decoded.data, e->content.decoded.type, indent);
        break;
    default:
        fputs(e->encoding == UAS_EXTOBJ_XML ? "ExtensionObject(xml, " : "ExtensionObject(", f);
        print_nodeid(f, &e->content.encoded.type_id);
        fprintf(f, ", %zu bytes)", e->content.encoded.body.length);
    }
}

static void print_datavalue(FILE *f, const uas_datavalue *dv, int indent)
{
    char ts[64];
    fputs("DataValue {", f);
    newline(f, indent + 2);
    fputs("value: ", f);
    if (dv->has_value)
        uas_variant_print(f, &dv->value, indent + 2);
    else
        fputs("(none)", f);
    newline(f, indent + 2);
    fputs("status: ", f);
    print_status(f, dv->has_status ? dv->status : UAS_GOOD);
    if (dv->has_source_timestamp) {
        uas_datetime_format(dv->source_timestamp, ts, sizeof(ts));
        newline(f, indent + 2);
        fprintf(f, "source_timestamp: %s", ts);
    }
    if (dv->has_server_timestamp) {
        uas_datetime_format(dv->server_timestamp, ts, sizeof(ts));
        newline(f, indent + 2);
        fprintf(f, "server_timestamp: %s", ts);
    }
    newline(f, indent);
    fputc('}', f);
}

static void print_diag(FILE *f, const uas_diagnosticinfo *d, int indent)
{
    fputs("DiagnosticInfo {", f);
    if (d->has_symbolic_id) {
        newline(f, indent + 2);
        fprintf(f, "symbolic_id: %d", (int)d->symbolic_id);
    }
    if (d->has_namespace_uri) {
        newline(f, indent + 2);
        fprintf(f, "namespace_uri: %d", (int)d->namespace_uri);
    }
    if (d->has_localized_text) {
        newline(f, indent + 2);
        fprintf(f, "localized_text: %d", (int)d->localized_text);
    }
    if (d->has_locale) {
        newline(f, indent + 2);
        fprintf(f, "locale: %d", (int)d->locale);
    }
    if (d->has_additional_info) {
        newline(f, indent + 2);
        fputs("additional_info: ", f);
        print_string(f, &d->additional_info);
    }
    if (d->has_inner_status) {
        newline(f, indent + 2);
        fputs("inner_status: ", f);
        print_status(f, d->inner_status);
    }
    if (d->has_inner_diagnostic_info && d->inner_diagnostic_info) {
        newline(f, indent + 2);
        fputs("inner_diagnostic_info: ", f);
        print_diag(f, d->inner_diagnostic_info, indent + 2);
    }
    newline(f, indent);
    fputc('}', f);
}

static void print_at(FILE *f, const void *p, const uas_type *t, int indent)
{
    if (!p) {
        fputs("null", f);
        return;
    }
    /* Option sets share the kind of their unsigned integer but are not the
     * builtin descriptor itself: shown as a mask. */
    bool mask = t->kind <= UAS_BUILTIN_UINT64 && t->type_id != t->kind;
    char buf[64];
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        fputs(*(const bool *)p ? "true" : "false", f);
        break;
    case UAS_BUILTIN_SBYTE:
        fprintf(f, "%d", (int)*(const int8_t *)p);
        break;
    case UAS_BUILTIN_BYTE:
        fprintf(f, mask ? "0x%02x" : "%u", (unsigned)*(const uint8_t *)p);
        break;
    case UAS_BUILTIN_INT16:
        fprintf(f, "%d", (int)*(const int16_t *)p);
        break;
    case UAS_BUILTIN_UINT16:
        fprintf(f, mask ? "0x%04x" : "%u", (unsigned)*(const uint16_t *)p);
        break;
    case UAS_BUILTIN_INT32:
    case UAS_KIND_ENUM:
        fprintf(f, "%" PRId32, *(const int32_t *)p);
        break;
    case UAS_BUILTIN_UINT32:
        fprintf(f, mask ? "0x%08" PRIx32 : "%" PRIu32, *(const uint32_t *)p);
        break;
    case UAS_BUILTIN_INT64:
        fprintf(f, "%" PRId64, *(const int64_t *)p);
        break;
    case UAS_BUILTIN_UINT64:
        fprintf(f, mask ? "0x%016" PRIx64 : "%" PRIu64, *(const uint64_t *)p);
        break;
    case UAS_BUILTIN_FLOAT:
        print_real(f, *(const float *)p, true);
        break;
    case UAS_BUILTIN_DOUBLE:
        print_real(f, *(const double *)p, false);
        break;
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_XMLELEMENT:
        print_string(f, p);
        break;
    case UAS_BUILTIN_DATETIME:
        uas_datetime_format(*(const uas_datetime *)p, buf, sizeof(buf));
        fputs(buf, f);
        break;
    case UAS_BUILTIN_GUID:
        uas_guid_format(p, buf, sizeof(buf));
        fputs(buf, f);
        break;
    case UAS_BUILTIN_BYTESTRING:
        print_bytes(f, p);
        break;
    case UAS_BUILTIN_NODEID:
        print_nodeid(f, p);
        break;
    case UAS_BUILTIN_EXPANDEDNODEID:
        print_expanded(f, p);
        break;
    case UAS_BUILTIN_STATUSCODE:
        print_status(f, *(const uas_status *)p);
        break;
    case UAS_BUILTIN_QUALIFIEDNAME:
        print_qname(f, p);
        break;
    case UAS_BUILTIN_LOCALIZEDTEXT:
        print_ltext(f, p);
        break;
    case UAS_BUILTIN_EXTENSIONOBJECT:
        print_extobj(f, p, indent);
        break;
    case UAS_BUILTIN_DATAVALUE:
        print_datavalue(f, p, indent);
        break;
    case UAS_BUILTIN_VARIANT:
        uas_variant_print(f, p, indent);
        break;
    case UAS_BUILTIN_DIAGNOSTICINFO:
        print_diag(f, p, indent);
        break;
    case UAS_KIND_STRUCT:
        print_struct(f, p, t, indent);
        break;
    default:
        fprintf(f, "(%s)", t->name);
    }
}

void uas_value_print(FILE *f, const void *p, const uas_type *t, int indent)
{
    print_at(f, p, t, indent);
}
