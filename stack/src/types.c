/* Descriptor-driven deep copy, clear and comparison for every type, and the
 * lookups over the generated tables. One copy routine serves the heap and
 * arenas: only where memory comes from differs. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <ua/types.h>

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        uas_status st_ = (expr);                                                                   \
        if (st_ != UAS_GOOD)                                                                       \
            return st_;                                                                            \
    } while (0)

/* ---- lookups ---- */

const uas_type *uas_type_by_encoding_id(uint32_t id)
{
    size_t lo = 0, hi = UAS_TYPES_ENCODABLE_COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uas_type *t = &uas_types[uas_types_by_encoding_id[mid]];
        if (t->binary_encoding_id == id)
            return t;
        if (t->binary_encoding_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const uas_type *uas_type_by_id(uint32_t id)
{
    size_t lo = 0, hi = UAS_TYPES_COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uas_type *t = &uas_types[uas_types_by_type_id[mid]];
        if (t->type_id == id)
            return t;
        if (t->type_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const uas_type *uas_type_by_name(const char *name)
{
    size_t lo = 0, hi = UAS_TYPES_COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uas_type *t = &uas_types[uas_types_by_name[mid]];
        int c = strcmp(t->name, name);
        if (c == 0)
            return t;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- builtin helpers ---- */

uas_datetime uas_datetime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uas_datetime)ts.tv_sec * 10000000 + ts.tv_nsec / 100 + UAS_DATETIME_UNIX_EPOCH;
}

void uas_random_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = getrandom(b, n, 0);
        if (r <= 0)
            continue; /* EINTR; the pool is initialised once the system runs */
        b += r;
        n -= (size_t)r;
    }
}

int64_t uas_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uas_string uas_string_from(const char *cstr)
{
    uas_string s = {0, NULL};
    if (cstr) {
        s.length = strlen(cstr);
        s.data = s.length ? (uint8_t *)(uintptr_t)cstr : UAS_EMPTY_ARRAY;
    }
    return s;
}

bool uas_string_eq_cstr(const uas_string *s, const char *cstr)
{
    if (!s->data || !cstr)
        return !s->data && !cstr;
    size_t n = strlen(cstr);
    return s->length == n && (n == 0 || memcmp(s->data, cstr, n) == 0);
}

uas_nodeid uas_nodeid_numeric(uint16_t ns, uint32_t id)
{
    uas_nodeid n;
    memset(&n, 0, sizeof(n));
    n.ns = ns;
    n.kind = UAS_NODEID_NUMERIC;
    n.id.numeric = id;
    return n;
}

uas_nodeid uas_nodeid_string(uint16_t ns, const char *id)
{
    uas_nodeid n;
    memset(&n, 0, sizeof(n));
    n.ns = ns;
    n.kind = UAS_NODEID_STRING;
    n.id.string = uas_string_from(id);
    return n;
}

void uas_variant_set_scalar(uas_variant *v, void *p, const uas_type *t)
{
    memset(v, 0, sizeof(*v));
    v->type = t;
    v->data = p;
}

void uas_variant_set_array(uas_variant *v, void *p, size_t n, const uas_type *t)
{
    memset(v, 0, sizeof(*v));
    v->type = t;
    v->is_array = true;
    /* No elements behind a NULL pointer: an empty array for n == 0, a null
     * array otherwise, never a length over the sentinel. */
    v->data = p ? p : (n == 0 ? UAS_EMPTY_ARRAY : NULL);
    v->array_length = p ? n : 0;
}

/* ---- clear ---- */

static void clear_value(void *p, const uas_type *t);

static void free_string(uas_string *s)
{
    if (s->data && s->data != UAS_EMPTY_ARRAY)
        uas_free(s->data, s->length);
    s->data = NULL;
    s->length = 0;
}

static void free_array(void *elems, size_t n, const uas_type *t)
{
    if (!elems || elems == UAS_EMPTY_ARRAY)
        return;
    if (!t->pointer_free)
        for (size_t i = 0; i < n; i++)
            clear_value((uint8_t *)elems + i * t->size, t);
    uas_free(elems, n * t->size);
}

static void clear_nodeid(uas_nodeid *id)
{
    if (id->kind == UAS_NODEID_STRING)
        free_string(&id->id.string);
    else if (id->kind == UAS_NODEID_BYTESTRING)
        free_string(&id->id.bytestring);
}

static void clear_variant(uas_variant *v)
{
    if (v->type) {
        if (v->is_array)
            free_array(v->data, v->array_length, v->type);
        else if (v->data) {
            clear_value(v->data, v->type);
            uas_free(v->data, v->type->size);
        }
    }
    if (v->array_dimensions)
        uas_free(v->array_dimensions, v->array_dimensions_length * sizeof(uint32_t));
}

static void clear_value(void *p, const uas_type *t)
{
    switch (t->kind) {
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_XMLELEMENT:
        free_string(p);
        break;
    case UAS_BUILTIN_NODEID:
        clear_nodeid(p);
        break;
    case UAS_BUILTIN_EXPANDEDNODEID: {
        uas_expandednodeid *x = p;
        clear_nodeid(&x->nodeid);
        free_string(&x->namespace_uri);
        break;
    }
    case UAS_BUILTIN_QUALIFIEDNAME:
        free_string(&((uas_qualifiedname *)p)->name);
        break;
    case UAS_BUILTIN_LOCALIZEDTEXT:
        free_string(&((uas_localizedtext *)p)->locale);
        free_string(&((uas_localizedtext *)p)->text);
        break;
    case UAS_BUILTIN_EXTENSIONOBJECT: {
        uas_extensionobject *x = p;
        if (x->encoding == UAS_EXTOBJ_DECODED) {
            if (x->content.decoded.data && x->content.decoded.type) {
                clear_value(x->content.decoded.data, x->content.decoded.type);
                uas_free(x->content.decoded.data, x->content.decoded.type->size);
            }
        } else {
            clear_nodeid(&x->content.encoded.type_id);
            free_string(&x->content.encoded.body);
        }
        break;
    }
    case UAS_BUILTIN_DATAVALUE:
        clear_variant(&((uas_datavalue *)p)->value);
        break;
    case UAS_BUILTIN_VARIANT:
        clear_variant(p);
        break;
    case UAS_BUILTIN_DIAGNOSTICINFO: {
        uas_diagnosticinfo *d = p;
        free_string(&d->additional_info);
        if (d->inner_diagnostic_info) {
            clear_value(d->inner_diagnostic_info, t);
            uas_free(d->inner_diagnostic_info, sizeof(uas_diagnosticinfo));
        }
        break;
    }
    case UAS_KIND_STRUCT: {
        uint8_t *base = p;
        for (uint16_t i = 0; i < t->member_count; i++) {
            const uas_member *m = &t->members[i];
            if (m->is_array) {
                size_t n;
                void *elems;
                memcpy(&n, base + m->offset, sizeof(n));
                memcpy(&elems, base + m->array_offset, sizeof(elems));
                free_array(elems, n, uas_member_type(m));
            } else if (!uas_member_type(m)->pointer_free) {
                clear_value(base + m->offset, uas_member_type(m));
            }
        }
        break;
    }
    default:
        break;
    }
}

void uas_init(void *p, const uas_type *t)
{
    memset(p, 0, t->size);
}

void uas_clear(void *p, const uas_type *t)
{
    if (!t->pointer_free)
        clear_value(p, t);
    memset(p, 0, t->size);
}

void *uas_new(const uas_type *t)
{
    return uas_calloc(1, t->size);
}

void uas_delete(void *p, const uas_type *t)
{
    if (!p)
        return;
    uas_clear(p, t);
    uas_free(p, t->size);
}

void *uas_array_new(size_t n, const uas_type *t)
{
    if (n == 0)
        return UAS_EMPTY_ARRAY;
    return uas_calloc(n, t->size);
}

void uas_array_delete(void *p, size_t n, const uas_type *t)
{
    free_array(p, n, t);
}

/* ---- copy ---- */

typedef struct copier {
    uas_arena *arena; /* NULL: heap */
} copier;

static void *cp_alloc(const copier *c, size_t size)
{
    if (c->arena)
        return uas_arena_alloc(c->arena, size);
    return uas_malloc(size);
}

static uas_status copy_value(const copier *c, const void *src, void *dst, const uas_type *t);

/* Copies n bytes that may be a null or empty sentinel. */
static uas_status copy_bytes(const copier *c, const void *src, size_t n, void **dst)
{
    if (!src || src == UAS_EMPTY_ARRAY || n == 0) {
        *dst = src ? UAS_EMPTY_ARRAY : NULL;
        return UAS_GOOD;
    }
    *dst = cp_alloc(c, n);
    if (!*dst)
        return UAS_BAD_OUT_OF_MEMORY;
    memcpy(*dst, src, n);
    return UAS_GOOD;
}

static uas_status copy_string(const copier *c, const uas_string *src, uas_string *dst)
{
    dst->length = src->data ? src->length : 0;
    return copy_bytes(c, src->data, src->length, (void **)&dst->data);
}

/* dst is zeroed beforehand, so a failed element leaves clearable state. */
static uas_status copy_array(const copier *c, const void *src, size_t n, void **dst,
                             const uas_type *t)
{
    if (!src || src == UAS_EMPTY_ARRAY || n == 0) {
        *dst = src ? UAS_EMPTY_ARRAY : NULL;
        return UAS_GOOD;
    }
    if (n > SIZE_MAX / t->size)
        return UAS_BAD_OUT_OF_MEMORY;
    if (t->pointer_free)
        return copy_bytes(c, src, n * t->size, dst);
    uint8_t *p = cp_alloc(c, n * t->size);
    if (!p)
        return UAS_BAD_OUT_OF_MEMORY;
    memset(p, 0, n * t->size);
    *dst = p;
    for (size_t i = 0; i < n; i++)
        TRY(copy_value(c, (const uint8_t *)src + i * t->size, p + i * t->size, t));
    return UAS_GOOD;
}

static uas_status copy_nodeid(const copier *c, const uas_nodeid *src, uas_nodeid *dst)
{
    *dst = *src;
    if (src->kind == UAS_NODEID_STRING)
        return copy_string(c, &src->id.string, &dst->id.string);
    if (src->kind == UAS_NODEID_BYTESTRING)
        return copy_string(c, &src->id.bytestring, &dst->id.bytestring);
    return UAS_GOOD;
}

static uas_status copy_scalar(const copier *c, const void *src, void **dst, const uas_type *t)
{
    *dst = cp_alloc(c, t->size);
    if (!*dst)
        return UAS_BAD_OUT_OF_MEMORY;
    memset(*dst, 0, t->size);
    return copy_value(c, src, *dst, t);
}

static uas_status copy_variant(const copier *c, const uas_variant *src, uas_variant *dst)
{
    memset(dst, 0, sizeof(*dst));
    dst->type = src->type;
    dst->is_array = src->is_array;
    if (src->type) {
        if (src->is_array) {
            dst->array_length = src->array_length;
            TRY(copy_array(c, src->data, src->array_length, &dst->data, src->type));
        } else if (src->data) {
            TRY(copy_scalar(c, src->data, &dst->data, src->type));
        }
    }
    if (src->array_dimensions) {
        dst->array_dimensions_length = src->array_dimensions_length;
        TRY(copy_bytes(c, src->array_dimensions, src->array_dimensions_length * sizeof(uint32_t),
                       (void **)&dst->array_dimensions));
        if (dst->array_dimensions == UAS_EMPTY_ARRAY)
            dst->array_dimensions = NULL; /* a zero-dimension list is not encodable */
    }
    return UAS_GOOD;
}

static uas_status copy_value(const copier *c, const void *src, void *dst, const uas_type *t)
{
    if (t->pointer_free) {
        memcpy(dst, src, t->size);
        return UAS_GOOD;
    }
    switch (t->kind) {
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_XMLELEMENT:
        return copy_string(c, src, dst);
    case UAS_BUILTIN_NODEID:
        return copy_nodeid(c, src, dst);
    case UAS_BUILTIN_EXPANDEDNODEID: {
        const uas_expandednodeid *s = src;
        uas_expandednodeid *d = dst;
        d->server_index = s->server_index;
        memset(&d->namespace_uri, 0, sizeof(d->namespace_uri));
        TRY(copy_nodeid(c, &s->nodeid, &d->nodeid));
        return copy_string(c, &s->namespace_uri, &d->namespace_uri);
    }
    case UAS_BUILTIN_QUALIFIEDNAME: {
        const uas_qualifiedname *s = src;
        uas_qualifiedname *d = dst;
        d->ns = s->ns;
        return copy_string(c, &s->name, &d->name);
    }
    case UAS_BUILTIN_LOCALIZEDTEXT: {
        const uas_localizedtext *s = src;
        uas_localizedtext *d = dst;
        memset(d, 0, sizeof(*d));
        TRY(copy_string(c, &s->locale, &d->locale));
        return copy_string(c, &s->text, &d->text);
    }
    case UAS_BUILTIN_EXTENSIONOBJECT: {
        const uas_extensionobject *s = src;
        uas_extensionobject *d = dst;
        memset(d, 0, sizeof(*d));
        d->encoding = s->encoding;
        if (s->encoding == UAS_EXTOBJ_DECODED) {
            d->content.decoded.type = s->content.decoded.type;
            if (!s->content.decoded.data || !s->content.decoded.type)
                return UAS_GOOD;
            return copy_scalar(c, s->content.decoded.data, &d->content.decoded.data,
                               s->content.decoded.type);
        }
        TRY(copy_nodeid(c, &s->content.encoded.type_id, &d->content.encoded.type_id));
        return copy_string(c, &s->content.encoded.body, &d->content.encoded.body);
    }
    case UAS_BUILTIN_DATAVALUE: {
        const uas_datavalue *s = src;
        uas_datavalue *d = dst;
        *d = *s;
        return copy_variant(c, &s->value, &d->value);
    }
    case UAS_BUILTIN_VARIANT:
        return copy_variant(c, src, dst);
    case UAS_BUILTIN_DIAGNOSTICINFO: {
        const uas_diagnosticinfo *s = src;
        uas_diagnosticinfo *d = dst;
        *d = *s;
        d->additional_info.data = NULL;
        d->inner_diagnostic_info = NULL;
        TRY(copy_string(c, &s->additional_info, &d->additional_info));
        if (s->inner_diagnostic_info)
            return copy_scalar(c, s->inner_diagnostic_info, (void **)&d->inner_diagnostic_info, t);
        return UAS_GOOD;
    }
    case UAS_KIND_STRUCT: {
        const uint8_t *sb = src;
        uint8_t *db = dst;
        memset(dst, 0, t->size);
        for (uint16_t i = 0; i < t->member_count; i++) {
            const uas_member *m = &t->members[i];
            if (m->is_array) {
                size_t n;
                const void *elems;
                void *copy = NULL;
                memcpy(&n, sb + m->offset, sizeof(n));
                memcpy(&elems, sb + m->array_offset, sizeof(elems));
                uas_status st = copy_array(c, elems, n, &copy, uas_member_type(m));
                /* Publish what was copied so a failure can still be cleared. */
                size_t kept = copy ? n : 0;
                memcpy(db + m->offset, &kept, sizeof(kept));
                memcpy(db + m->array_offset, &copy, sizeof(copy));
                if (st != UAS_GOOD)
                    return st;
            } else {
                TRY(copy_value(c, sb + m->offset, db + m->offset, uas_member_type(m)));
            }
        }
        return UAS_GOOD;
    }
    default:
        memcpy(dst, src, t->size);
        return UAS_GOOD;
    }
}

uas_status uas_copy(const void *src, void *dst, const uas_type *t)
{
    copier c = {NULL};
    memset(dst, 0, t->size);
    uas_status st = copy_value(&c, src, dst, t);
    if (st != UAS_GOOD)
        uas_clear(dst, t);
    return st;
}

uas_status uas_copy_arena(const void *src, void *dst, const uas_type *t, uas_arena *a)
{
    copier c = {a};
    memset(dst, 0, t->size);
    return copy_value(&c, src, dst, t);
}

/* ---- equal ---- */

static bool equal_value(const void *a, const void *b, const uas_type *t);

static bool equal_string(const uas_string *a, const uas_string *b)
{
    if (!a->data || !b->data)
        return !a->data && !b->data;
    return a->length == b->length && (a->length == 0 || memcmp(a->data, b->data, a->length) == 0);
}

static bool equal_array(const void *a, size_t na, const void *b, size_t nb, const uas_type *t)
{
    if (!a || !b)
        return !a && !b;
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!equal_value((const uint8_t *)a + i * t->size, (const uint8_t *)b + i * t->size, t))
            return false;
    return true;
}

static bool equal_nodeid(const uas_nodeid *a, const uas_nodeid *b)
{
    if (a->ns != b->ns || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case UAS_NODEID_NUMERIC:
        return a->id.numeric == b->id.numeric;
    case UAS_NODEID_STRING:
        return equal_string(&a->id.string, &b->id.string);
    case UAS_NODEID_GUID:
        return memcmp(&a->id.guid, &b->id.guid, sizeof(uas_guid)) == 0;
    case UAS_NODEID_BYTESTRING:
        return equal_string(&a->id.bytestring, &b->id.bytestring);
    default:
        return false;
    }
}

static bool equal_variant(const uas_variant *a, const uas_variant *b)
{
    if (a->type != b->type || a->is_array != b->is_array)
        return false;
    if (!equal_array(a->array_dimensions, a->array_dimensions_length, b->array_dimensions,
                     b->array_dimensions_length, &uas_types[UAS_TYPES_UINT32]))
        return false;
    if (!a->type)
        return true;
    if (a->is_array)
        return equal_array(a->data, a->array_length, b->data, b->array_length, a->type);
    if (!a->data || !b->data)
        return !a->data && !b->data;
    return equal_value(a->data, b->data, a->type);
}

static bool equal_value(const void *a, const void *b, const uas_type *t)
{
    switch (t->kind) {
    case UAS_BUILTIN_BOOLEAN:
        return *(const bool *)a == *(const bool *)b;
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_XMLELEMENT:
        return equal_string(a, b);
    case UAS_BUILTIN_NODEID:
        return equal_nodeid(a, b);
    case UAS_BUILTIN_EXPANDEDNODEID: {
        const uas_expandednodeid *x = a, *y = b;
        return x->server_index == y->server_index && equal_nodeid(&x->nodeid, &y->nodeid) &&
               equal_string(&x->namespace_uri, &y->namespace_uri);
    }
    case UAS_BUILTIN_QUALIFIEDNAME: {
        const uas_qualifiedname *x = a, *y = b;
        return x->ns == y->ns && equal_string(&x->name, &y->name);
    }
    case UAS_BUILTIN_LOCALIZEDTEXT: {
        const uas_localizedtext *x = a, *y = b;
        return equal_string(&x->locale, &y->locale) && equal_string(&x->text, &y->text);
    }
    case UAS_BUILTIN_EXTENSIONOBJECT: {
        const uas_extensionobject *x = a, *y = b;
        if (x->encoding != y->encoding)
            return false;
        if (x->encoding == UAS_EXTOBJ_DECODED) {
            if (x->content.decoded.type != y->content.decoded.type)
                return false;
            if (!x->content.decoded.data || !y->content.decoded.data)
                return !x->content.decoded.data && !y->content.decoded.data;
            return equal_value(x->content.decoded.data, y->content.decoded.data,
                               x->content.decoded.type);
        }
        return equal_nodeid(&x->content.encoded.type_id, &y->content.encoded.type_id) &&
               equal_string(&x->content.encoded.body, &y->content.encoded.body);
    }
    case UAS_BUILTIN_DATAVALUE: {
        const uas_datavalue *x = a, *y = b;
        if (x->has_value != y->has_value || x->has_status != y->has_status ||
            x->has_source_timestamp != y->has_source_timestamp ||
            x->has_server_timestamp != y->has_server_timestamp ||
            x->has_source_picoseconds != y->has_source_picoseconds ||
            x->has_server_picoseconds != y->has_server_picoseconds)
            return false;
        return (!x->has_value || equal_variant(&x->value, &y->value)) &&
               (!x->has_status || x->status == y->status) &&
               (!x->has_source_timestamp || x->source_timestamp == y->source_timestamp) &&
               (!x->has_server_timestamp || x->server_timestamp == y->server_timestamp) &&
               (!x->has_source_picoseconds || x->source_picoseconds == y->source_picoseconds) &&
               (!x->has_server_picoseconds || x->server_picoseconds == y->server_picoseconds);
    }
    case UAS_BUILTIN_VARIANT:
        return equal_variant(a, b);
    case UAS_BUILTIN_DIAGNOSTICINFO: {
        const uas_diagnosticinfo *x = a, *y = b;
        bool xi = x->has_inner_diagnostic_info && x->inner_diagnostic_info;
        bool yi = y->has_inner_diagnostic_info && y->inner_diagnostic_info;
        if (x->has_symbolic_id != y->has_symbolic_id ||
            x->has_namespace_uri != y->has_namespace_uri ||
            x->has_localized_text != y->has_localized_text || x->has_locale != y->has_locale ||
            x->has_additional_info != y->has_additional_info ||
            x->has_inner_status != y->has_inner_status || xi != yi)
            return false;
        return (!x->has_symbolic_id || x->symbolic_id == y->symbolic_id) &&
               (!x->has_namespace_uri || x->namespace_uri == y->namespace_uri) &&
               (!x->has_localized_text || x->localized_text == y->localized_text) &&
               (!x->has_locale || x->locale == y->locale) &&
               (!x->has_additional_info ||
                equal_string(&x->additional_info, &y->additional_info)) &&
               (!x->has_inner_status || x->inner_status == y->inner_status) &&
               (!xi || equal_value(x->inner_diagnostic_info, y->inner_diagnostic_info, t));
    }
    case UAS_KIND_STRUCT: {
        const uint8_t *x = a, *y = b;
        for (uint16_t i = 0; i < t->member_count; i++) {
            const uas_member *m = &t->members[i];
            if (m->is_array) {
                size_t nx, ny;
                const void *ex, *ey;
                memcpy(&nx, x + m->offset, sizeof(nx));
                memcpy(&ny, y + m->offset, sizeof(ny));
                memcpy(&ex, x + m->array_offset, sizeof(ex));
                memcpy(&ey, y + m->array_offset, sizeof(ey));
                if (!equal_array(ex, nx, ey, ny, uas_member_type(m)))
                    return false;
            } else if (!equal_value(x + m->offset, y + m->offset, uas_member_type(m))) {
                return false;
            }
        }
        return true;
    }
    default:
        /* Fixed-size numbers compare bitwise, so NaN equals the same NaN. */
        return memcmp(a, b, t->size) == 0;
    }
}

bool uas_equal(const void *a, const void *b, const uas_type *t)
{
    return equal_value(a, b, t);
}
