/* EventFilter checking and evaluation; see sub_filter.h for the scope.
 *
 * Elements may only reference later elements (ElementOperand index greater
 * than their own), which the check enforces: evaluation then needs no
 * cycle detection and its recursion depth is bounded by MAX_ELEMENTS. */
#include "sub_filter.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_ELEMENTS 128
#define ATTR_MAX     27

typedef enum tri { TRI_FALSE = 0, TRI_TRUE = 1, TRI_NULL = 2 } tri;

static const void *operand_as(const uas_extensionobject *x, const uas_type *t)
{
    if (x->encoding == UAS_EXTOBJ_DECODED && x->content.decoded.type == t)
        return x->content.decoded.data;
    return NULL;
}

/* Operand count per operator: >0 exact, <0 at least -n, 0 unsupported. */
static int operand_count(uas_filter_operator op)
{
    switch (op) {
    case UAS_FILTER_OPERATOR_IS_NULL:
    case UAS_FILTER_OPERATOR_NOT:
    case UAS_FILTER_OPERATOR_OF_TYPE:
        return 1;
    case UAS_FILTER_OPERATOR_EQUALS:
    case UAS_FILTER_OPERATOR_GREATER_THAN:
    case UAS_FILTER_OPERATOR_LESS_THAN:
    case UAS_FILTER_OPERATOR_GREATER_THAN_OR_EQUAL:
    case UAS_FILTER_OPERATOR_LESS_THAN_OR_EQUAL:
    case UAS_FILTER_OPERATOR_LIKE:
    case UAS_FILTER_OPERATOR_AND:
    case UAS_FILTER_OPERATOR_OR:
        return 2;
    case UAS_FILTER_OPERATOR_BETWEEN:
        return 3;
    case UAS_FILTER_OPERATOR_IN_LIST:
        return -2;
    default:
        return 0;
    }
}

/* ---- checking ---- */

static uas_status check_select(const uas_simple_attribute_operand *s)
{
    if (s->attribute_id < 1 || s->attribute_id > ATTR_MAX)
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    for (size_t i = 0; i < s->browse_path_count; i++)
        if (!s->browse_path[i].name.data || s->browse_path[i].name.length == 0)
            return UAS_BAD_BROWSE_NAME_INVALID;
    return UAS_GOOD;
}

static uas_status check_operand(const uas_content_filter *w, size_t idx, uas_filter_operator op,
                                const uas_extensionobject *x)
{
    const uas_literal_operand *lit = operand_as(x, UAS_TYPE(LITERAL_OPERAND));
    const uas_element_operand *el = operand_as(x, UAS_TYPE(ELEMENT_OPERAND));
    const uas_simple_attribute_operand *sao = operand_as(x, UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND));
    if (op == UAS_FILTER_OPERATOR_OF_TYPE)
        return lit && lit->value.type == &uas_types[UAS_TYPES_NODE_ID] && !lit->value.is_array
                   ? UAS_GOOD
                   : UAS_BAD_FILTER_OPERAND_INVALID;
    if (lit)
        return UAS_GOOD;
    if (el)
        return el->index > idx && el->index < w->elements_count ? UAS_GOOD
                                                                : UAS_BAD_FILTER_OPERAND_INVALID;
    if (sao)
        return check_select(sao) == UAS_GOOD ? UAS_GOOD : UAS_BAD_FILTER_OPERAND_INVALID;
    return UAS_BAD_FILTER_OPERAND_INVALID; /* AttributeOperand: not for events */
}

static uas_status check_element(const uas_content_filter *w, size_t idx,
                                uas_content_filter_element_result *r, uas_arena *a)
{
    const uas_content_filter_element *el = &w->elements[idx];
    if (el->filter_operator < 0 || el->filter_operator > UAS_FILTER_OPERATOR_BITWISE_OR)
        return UAS_BAD_FILTER_OPERATOR_INVALID;
    int want = operand_count(el->filter_operator);
    if (want == 0)
        return UAS_BAD_FILTER_OPERATOR_UNSUPPORTED;
    size_t n = el->filter_operands_count;
    if ((want > 0 && n != (size_t)want) || (want < 0 && n < (size_t)-want))
        return UAS_BAD_FILTER_OPERAND_COUNT_MISMATCH;
    uas_status st = UAS_GOOD;
    r->operand_status_codes = uas_arena_calloc(a, n, sizeof(uas_status));
    if (!r->operand_status_codes)
        return UAS_BAD_OUT_OF_MEMORY;
    r->operand_status_codes_count = n;
    for (size_t j = 0; j < n; j++) {
        r->operand_status_codes[j] =
            check_operand(w, idx, el->filter_operator, &el->filter_operands[j]);
        if (r->operand_status_codes[j] != UAS_GOOD)
            st = UAS_BAD_FILTER_OPERAND_INVALID;
    }
    return st;
}

uas_status sub_filter_check(const uas_event_filter *f, uas_extensionobject *res, uas_arena *a)
{
    memset(res, 0, sizeof(*res));
    uas_event_filter_result *r = uas_arena_calloc(a, 1, sizeof(*r));
    if (!r)
        return UAS_BAD_OUT_OF_MEMORY;
    bool report = false, invalid = f->select_clauses_count == 0;
    size_t ns = f->select_clauses_count;
    if (ns) {
        r->select_clause_results = uas_arena_calloc(a, ns, sizeof(uas_status));
        if (!r->select_clause_results)
            return UAS_BAD_OUT_OF_MEMORY;
        r->select_clause_results_count = ns;
    }
    for (size_t i = 0; i < ns; i++) {
        r->select_clause_results[i] = check_select(&f->select_clauses[i]);
        report |= r->select_clause_results[i] != UAS_GOOD;
    }
    const uas_content_filter *w = &f->where_clause;
    size_t ne = w->elements_count;
    if (ne > MAX_ELEMENTS) {
        invalid = true;
    } else if (ne) {
        uas_content_filter_result *wr = &r->where_clause_result;
        wr->element_results = uas_arena_calloc(a, ne, sizeof(*wr->element_results));
        if (!wr->element_results)
            return UAS_BAD_OUT_OF_MEMORY;
        wr->element_results_count = ne;
        for (size_t i = 0; i < ne; i++) {
            uas_status st = check_element(w, i, &wr->element_results[i], a);
            if (st == UAS_BAD_OUT_OF_MEMORY)
                return st;
            wr->element_results[i].status_code = st;
            invalid |= st != UAS_GOOD;
        }
    }
    if (report || invalid) {
        res->encoding = UAS_EXTOBJ_DECODED;
        res->content.decoded.type = UAS_TYPE(EVENT_FILTER_RESULT);
        res->content.decoded.data = r;
    }
    return invalid ? UAS_BAD_EVENT_FILTER_INVALID : UAS_GOOD;
}

/* ---- values and comparison ---- */

typedef struct fctx {
    const uas_content_filter *w;
    const uas_sub_event *ev;
    uas_arena *a;
} fctx;

static void eval(fctx *c, size_t idx, uas_variant *out);

static void operand_value(fctx *c, const uas_extensionobject *x, uas_variant *out)
{
    memset(out, 0, sizeof(*out));
    const uas_literal_operand *lit = operand_as(x, UAS_TYPE(LITERAL_OPERAND));
    const uas_element_operand *el = operand_as(x, UAS_TYPE(ELEMENT_OPERAND));
    const uas_simple_attribute_operand *sao = operand_as(x, UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND));
    if (lit) {
        *out = lit->value;
    } else if (el) {
        eval(c, el->index, out);
    } else if (sao && c->ev->get_field) {
        if (c->ev->get_field(c->ev, sao, out, c->a) != UAS_GOOD)
            memset(out, 0, sizeof(*out));
    }
}

static bool is_null(const uas_variant *v)
{
    return !v->type || (!v->is_array && !v->data);
}

enum { CMP_LT = -1, CMP_EQ = 0, CMP_GT = 1, CMP_NE = 2, CMP_NONE = 3 };

/* A number as a signed or unsigned 64-bit integer, or a double. */
typedef struct num {
    int kind; /* 0 signed, 1 unsigned, 2 double */
    int64_t i;
    uint64_t u;
    double d;
} num;

static bool to_num(const uas_variant *v, num *n)
{
    if (v->is_array || !v->data)
        return false;
    const void *p = v->data;
    memset(n, 0, sizeof(*n));
    switch (v->type->kind) {
    case UAS_BUILTIN_BOOLEAN:
        n->i = *(const bool *)p;
        return true;
    case UAS_BUILTIN_SBYTE:
        n->i = *(const int8_t *)p;
        return true;
    case UAS_BUILTIN_INT16:
        n->i = *(const int16_t *)p;
        return true;
    case UAS_BUILTIN_INT32:
        n->i = *(const int32_t *)p;
        return true;
    case UAS_BUILTIN_INT64:
        n->i = *(const int64_t *)p;
        return true;
    case UAS_BUILTIN_BYTE:
        n->kind = 1, n->u = *(const uint8_t *)p;
        return true;
    case UAS_BUILTIN_UINT16:
        n->kind = 1, n->u = *(const uint16_t *)p;
        return true;
    case UAS_BUILTIN_UINT32:
        n->kind = 1, n->u = *(const uint32_t *)p;
        return true;
    case UAS_BUILTIN_UINT64:
        n->kind = 1, n->u = *(const uint64_t *)p;
        return true;
    case UAS_BUILTIN_FLOAT:
        n->kind = 2, n->d = *(const float *)p;
        return true;
    case UAS_BUILTIN_DOUBLE:
        n->kind = 2, n->d = *(const double *)p;
        return true;
    default:
        return false;
    }
}

static double num_d(const num *n)
{
    return n->kind == 0 ? (double)n->i : n->kind == 1 ? (double)n->u : n->d;
}

static int cmp_num(const num *x, const num *y)
{
    if (x->kind == 2 || y->kind == 2) {
        double a = num_d(x), b = num_d(y);
        if (isnan(a) || isnan(b))
            return CMP_NONE;
        return a < b ? CMP_LT : a > b ? CMP_GT : CMP_EQ;
    }
    /* Integers exactly: a negative signed value is below any unsigned. */
    if (x->kind == 0 && y->kind == 0)
        return x->i < y->i ? CMP_LT : x->i > y->i ? CMP_GT : CMP_EQ;
    if (x->kind == 0 && x->i < 0)
        return CMP_LT;
    if (y->kind == 0 && y->i < 0)
        return CMP_GT;
    uint64_t a = x->kind == 0 ? (uint64_t)x->i : x->u, b = y->kind == 0 ? (uint64_t)y->i : y->u;
    return a < b ? CMP_LT : a > b ? CMP_GT : CMP_EQ;
}

static int cmp_bytes(const uas_string *a, const uas_string *b)
{
    size_t n = a->length < b->length ? a->length : b->length;
    int r = n ? memcmp(a->data, b->data, n) : 0;
    if (r == 0)
        r = a->length < b->length ? -1 : a->length > b->length;
    return r < 0 ? CMP_LT : r > 0 ? CMP_GT : CMP_EQ;
}

static int compare(const uas_variant *a, const uas_variant *b)
{
    if (is_null(a) || is_null(b))
        return CMP_NONE;
    num x, y;
    if (to_num(a, &x) && to_num(b, &y))
        return cmp_num(&x, &y);
    if (a->type != b->type || a->is_array || b->is_array)
        return a->type == b->type && uas_equal(a, b, &uas_types[UAS_TYPES_VARIANT]) ? CMP_EQ
                                                                                    : CMP_NONE;
    switch (a->type->kind) {
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
        return cmp_bytes(a->data, b->data);
    case UAS_BUILTIN_DATETIME: {
        int64_t p = *(const int64_t *)a->data, q = *(const int64_t *)b->data;
        return p < q ? CMP_LT : p > q ? CMP_GT : CMP_EQ;
    }
    case UAS_BUILTIN_LOCALIZEDTEXT:
        return cmp_bytes(&((const uas_localizedtext *)a->data)->text,
                         &((const uas_localizedtext *)b->data)->text);
    default:
        return uas_equal(a->data, b->data, a->type) ? CMP_EQ : CMP_NE;
    }
}

/* ---- Like (Part 4, 7.7.3: % _ \ [] [^]) ---- */

static size_t utf8_len(uint8_t c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Does pattern element p[pi] match byte c? *adv: pattern bytes used. */
static bool match_one(const uint8_t *p, size_t m, size_t pi, uint8_t c, size_t *adv)
{
    if (p[pi] == '\\' && pi + 1 < m) {
        *adv = 2;
        return p[pi + 1] == c;
    }
    if (p[pi] != '[') {
        *adv = 1;
        return p[pi] == '_' || p[pi] == c;
    }
    size_t j = pi + 1;
    bool neg = j < m && p[j] == '^';
    if (neg)
        j++;
    size_t start = j;
    bool hit = false;
    while (j < m && (p[j] != ']' || j == start)) {
        if (j + 2 < m && p[j + 1] == '-' && p[j + 2] != ']') {
            hit |= c >= p[j] && c <= p[j + 2];
            j += 3;
        } else {
            hit |= p[j] == c;
            j++;
        }
    }
    if (j >= m) { /* no closing bracket: a literal '[' */
        *adv = 1;
        return c == '[';
    }
    *adv = j + 1 - pi;
    return hit != neg;
}

static bool like(const uas_string *str, const uas_string *pat)
{
    const uint8_t *s = str->data, *p = pat->data;
    size_t n = str->data ? str->length : 0, m = pat->data ? pat->length : 0;
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
    /* Greedy matching with one backtrack point per '%' (the last one). */
    while (si < n) {
        if (pi < m && p[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        size_t adv;
        if (pi < m && match_one(p, m, pi, s[si], &adv)) {
            si += p[pi] == '_' ? utf8_len(s[si]) : 1; /* '_' is one character */
            pi += adv;
            continue;
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < m && p[pi] == '%')
        pi++;
    return pi == m && si == n;
}

/* ---- evaluation ---- */

static void set_bool(fctx *c, uas_variant *out, tri t)
{
    memset(out, 0, sizeof(*out));
    if (t == TRI_NULL)
        return;
    bool *b = uas_arena_alloc(c->a, sizeof(bool));
    if (!b)
        return;
    *b = t == TRI_TRUE;
    uas_variant_set_scalar(out, b, &uas_types[UAS_TYPES_BOOLEAN]);
}

static tri as_tri(const uas_variant *v)
{
    if (is_null(v) || v->type != &uas_types[UAS_TYPES_BOOLEAN] || v->is_array)
        return TRI_NULL;
    return *(const bool *)v->data ? TRI_TRUE : TRI_FALSE;
}

static tri tri_of_cmp(int r, uas_filter_operator op)
{
    if (r == CMP_NONE || r == CMP_NE)
        return op == UAS_FILTER_OPERATOR_EQUALS && r == CMP_NE ? TRI_FALSE : TRI_NULL;
    switch (op) {
    case UAS_FILTER_OPERATOR_EQUALS:
        return r == CMP_EQ ? TRI_TRUE : TRI_FALSE;
    case UAS_FILTER_OPERATOR_GREATER_THAN:
        return r == CMP_GT ? TRI_TRUE : TRI_FALSE;
    case UAS_FILTER_OPERATOR_LESS_THAN:
        return r == CMP_LT ? TRI_TRUE : TRI_FALSE;
    case UAS_FILTER_OPERATOR_GREATER_THAN_OR_EQUAL:
        return r != CMP_LT ? TRI_TRUE : TRI_FALSE;
    default:
        return r != CMP_GT ? TRI_TRUE : TRI_FALSE; /* LessThanOrEqual */
    }
}

static tri eval_op(fctx *c, const uas_content_filter_element *el)
{
    uas_variant v[3];
    const uas_extensionobject *ops = el->filter_operands;
    switch (el->filter_operator) {
    case UAS_FILTER_OPERATOR_EQUALS:
    case UAS_FILTER_OPERATOR_GREATER_THAN:
    case UAS_FILTER_OPERATOR_LESS_THAN:
    case UAS_FILTER_OPERATOR_GREATER_THAN_OR_EQUAL:
    case UAS_FILTER_OPERATOR_LESS_THAN_OR_EQUAL:
        operand_value(c, &ops[0], &v[0]);
        operand_value(c, &ops[1], &v[1]);
        if (is_null(&v[0]) || is_null(&v[1]))
            return TRI_NULL;
        return tri_of_cmp(compare(&v[0], &v[1]), el->filter_operator);
    case UAS_FILTER_OPERATOR_IS_NULL:
        operand_value(c, &ops[0], &v[0]);
        return is_null(&v[0]) ? TRI_TRUE : TRI_FALSE;
    case UAS_FILTER_OPERATOR_LIKE: {
        operand_value(c, &ops[0], &v[0]);
        operand_value(c, &ops[1], &v[1]);
        const uas_type *ts = &uas_types[UAS_TYPES_STRING];
        if (is_null(&v[0]) || is_null(&v[1]))
            return TRI_NULL;
        if (v[0].type != ts || v[1].type != ts || v[0].is_array || v[1].is_array)
            return TRI_FALSE;
        return like(v[0].data, v[1].data) ? TRI_TRUE : TRI_FALSE;
    }
    case UAS_FILTER_OPERATOR_NOT: {
        operand_value(c, &ops[0], &v[0]);
        tri t = as_tri(&v[0]);
        return t == TRI_NULL ? TRI_NULL : t == TRI_TRUE ? TRI_FALSE : TRI_TRUE;
    }
    case UAS_FILTER_OPERATOR_BETWEEN: {
        for (int i = 0; i < 3; i++)
            operand_value(c, &ops[i], &v[i]);
        if (is_null(&v[0]) || is_null(&v[1]) || is_null(&v[2]))
            return TRI_NULL;
        int lo = compare(&v[0], &v[1]), hi = compare(&v[0], &v[2]);
        if (lo == CMP_NONE || lo == CMP_NE || hi == CMP_NONE || hi == CMP_NE)
            return TRI_FALSE;
        return lo != CMP_LT && hi != CMP_GT ? TRI_TRUE : TRI_FALSE;
    }
    case UAS_FILTER_OPERATOR_IN_LIST:
        operand_value(c, &ops[0], &v[0]);
        if (is_null(&v[0]))
            return TRI_NULL;
        for (size_t i = 1; i < el->filter_operands_count; i++) {
            operand_value(c, &ops[i], &v[1]);
            if (compare(&v[0], &v[1]) == CMP_EQ)
                return TRI_TRUE;
        }
        return TRI_FALSE;
    case UAS_FILTER_OPERATOR_AND:
    case UAS_FILTER_OPERATOR_OR: {
        /* Three-valued logic (Part 4, Tables 120/121). */
        operand_value(c, &ops[0], &v[0]);
        tri x = as_tri(&v[0]);
        bool and = el->filter_operator == UAS_FILTER_OPERATOR_AND;
        if (x == (and? TRI_FALSE : TRI_TRUE))
            return x; /* short cut */
        operand_value(c, &ops[1], &v[1]);
        tri y = as_tri(&v[1]);
        if (y == (and? TRI_FALSE : TRI_TRUE))
            return y;
        return x == TRI_NULL || y == TRI_NULL ? TRI_NULL : x;
    }
    case UAS_FILTER_OPERATOR_OF_TYPE: {
        const uas_literal_operand *lit = operand_as(&ops[0], UAS_TYPE(LITERAL_OPERAND));
        if (!lit || lit->value.type != &uas_types[UAS_TYPES_NODE_ID] || !lit->value.data ||
            !c->ev->is_of_type)
            return TRI_FALSE;
        return c->ev->is_of_type(c->ev, lit->value.data) ? TRI_TRUE : TRI_FALSE;
    }
    default:
        return TRI_NULL;
    }
}

static void eval(fctx *c, size_t idx, uas_variant *out)
{
    memset(out, 0, sizeof(*out));
    if (idx >= c->w->elements_count)
        return;
    const uas_content_filter_element *el = &c->w->elements[idx];
    int want = operand_count(el->filter_operator);
    size_t n = el->filter_operands_count;
    /* sub_filter_check ran at creation; stay safe all the same. */
    if (want == 0 || (want > 0 && n != (size_t)want) || (want < 0 && n < (size_t)-want))
        return;
    set_bool(c, out, eval_op(c, el));
}

bool sub_filter_match(const uas_content_filter *where, const uas_sub_event *ev, uas_arena *a)
{
    if (where->elements_count == 0)
        return true;
    fctx c = {where, ev, a};
    uas_variant v;
    eval(&c, 0, &v);
    return as_tri(&v) == TRI_TRUE;
}

uas_status sub_filter_select(const uas_event_filter *f, const uas_sub_event *ev,
                             uas_variant *fields, uas_arena *a)
{
    for (size_t i = 0; i < f->select_clauses_count; i++) {
        memset(&fields[i], 0, sizeof(fields[i]));
        const uas_simple_attribute_operand *s = &f->select_clauses[i];
        if (check_select(s) != UAS_GOOD || !ev->get_field)
            continue;
        if (ev->get_field(ev, s, &fields[i], a) != UAS_GOOD)
            memset(&fields[i], 0, sizeof(fields[i]));
    }
    return UAS_GOOD;
}
