/* EventFilter checking and evaluation; see sub_filter.h for the scope.
 *
 * A where clause is a directed graph: an ElementOperand may name any other
 * element, and several operands may name the same one (Part 4, 7.7.1: "there
 * may be more than one path leading to another element"), but no path may
 * lead back to where it started. The check refuses cycles; evaluation walks
 * the elements reachable from the first one depth-first with an explicit
 * stack and evaluates each exactly once, after the elements it names, so a
 * shared element costs once, not once per path (a chain of
 * And(e[i+1], e[i+1]) would otherwise cost 2^n). Each evaluation also draws
 * on a step budget (elements, operands, Like matching) and a scratch memory
 * budget; running out of either makes the where clause NULL, so the event
 * is not delivered to that item. */
#include "sub_filter.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define ATTR_MAX 27

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

/* ---- the reference graph ---- */

enum { W_NEW = 0, W_OPEN = 1, W_DONE = 2 };

/* Depth-first walk over element references without recursion: the stack
 * holds the open elements, each element is pushed at most once, so the
 * arrays need one entry per element and the walk is linear in the
 * operands. */
typedef struct walker {
    const uas_content_filter *w;
    uint8_t *state;  /* per element: W_NEW, W_OPEN, W_DONE */
    uint32_t *next;  /* per element: next operand to look at */
    uint32_t *stack; /* the open elements */
    /* After every element idx references; false stops the walk. */
    bool (*done)(struct walker *k, size_t idx);
    /* Operand j of element idx names an open element: a cycle. */
    void (*cycle)(struct walker *k, size_t idx, size_t j);
} walker;

static bool walker_init(walker *k, const uas_content_filter *w, uas_arena *a)
{
    size_t n = w->elements_count;
    memset(k, 0, sizeof(*k));
    k->w = w;
    k->state = uas_arena_calloc(a, n, sizeof(uint8_t));
    k->next = uas_arena_calloc(a, n, sizeof(uint32_t));
    k->stack = uas_arena_calloc(a, n, sizeof(uint32_t));
    return k->state && k->next && k->stack;
}

/* The element an operand names, or SIZE_MAX. */
static size_t element_ref(const uas_content_filter *w, const uas_extensionobject *x)
{
    const uas_element_operand *el = operand_as(x, UAS_TYPE(ELEMENT_OPERAND));
    return el && el->index < w->elements_count ? el->index : SIZE_MAX;
}

static bool walk(walker *k, size_t root)
{
    if (k->state[root] != W_NEW)
        return true;
    size_t top = 0;
    k->stack[top++] = (uint32_t)root;
    k->state[root] = W_OPEN;
    while (top) {
        size_t i = k->stack[top - 1];
        const uas_content_filter_element *el = &k->w->elements[i];
        size_t push = SIZE_MAX;
        while (push == SIZE_MAX && k->next[i] < el->filter_operands_count) {
            size_t j = k->next[i]++;
            size_t r = element_ref(k->w, &el->filter_operands[j]);
            if (r == SIZE_MAX || k->state[r] == W_DONE)
                continue;
            if (k->state[r] == W_OPEN) {
                if (k->cycle)
                    k->cycle(k, i, j);
                continue;
            }
            push = r;
        }
        if (push != SIZE_MAX) {
            k->state[push] = W_OPEN;
            k->stack[top++] = (uint32_t)push;
            continue;
        }
        k->state[i] = W_DONE;
        top--;
        if (k->done && !k->done(k, i))
            return false;
    }
    return true;
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

static uas_status check_operand(const uas_content_filter *w, const uas_sub_limits *l,
                                const uas_content_filter_element *e, size_t j)
{
    const uas_extensionobject *x = &e->filter_operands[j];
    const uas_literal_operand *lit = operand_as(x, UAS_TYPE(LITERAL_OPERAND));
    const uas_simple_attribute_operand *sao = operand_as(x, UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND));
    if (e->filter_operator == UAS_FILTER_OPERATOR_OF_TYPE)
        return lit && lit->value.type == &uas_types[UAS_TYPES_NODE_ID] && !lit->value.is_array
                   ? UAS_GOOD
                   : UAS_BAD_FILTER_OPERAND_INVALID;
    if (lit && e->filter_operator == UAS_FILTER_OPERATOR_LIKE && j == 1 &&
        lit->value.type == &uas_types[UAS_TYPES_STRING] && !lit->value.is_array &&
        lit->value.data &&
        ((const uas_string *)lit->value.data)->length > l->max_like_pattern_length)
        return UAS_BAD_FILTER_OPERAND_INVALID; /* the matcher's work grows with it */
    if (lit)
        return UAS_GOOD;
    if (operand_as(x, UAS_TYPE(ELEMENT_OPERAND)))
        return element_ref(w, x) != SIZE_MAX ? UAS_GOOD : UAS_BAD_FILTER_OPERAND_INVALID;
    if (sao)
        return check_select(sao) == UAS_GOOD ? UAS_GOOD : UAS_BAD_FILTER_OPERAND_INVALID;
    return UAS_BAD_FILTER_OPERAND_INVALID; /* AttributeOperand: not for events */
}

static uas_status check_element(const uas_content_filter *w, const uas_sub_limits *l, size_t idx,
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
        r->operand_status_codes[j] = check_operand(w, l, el, j);
        if (r->operand_status_codes[j] != UAS_GOOD)
            st = UAS_BAD_FILTER_OPERAND_INVALID;
    }
    return st;
}

typedef struct cycle_walker {
    walker k;
    uas_content_filter_result *res;
} cycle_walker;

/* The operand that closes a cycle is invalid (Part 4, 7.7.1: "evaluation
 * shall not introduce loops"). */
static void on_cycle(walker *k, size_t idx, size_t j)
{
    uas_content_filter_element_result *r = &((cycle_walker *)k)->res->element_results[idx];
    if (j < r->operand_status_codes_count)
        r->operand_status_codes[j] = UAS_BAD_FILTER_OPERAND_INVALID;
    if (r->status_code == UAS_GOOD)
        r->status_code = UAS_BAD_FILTER_OPERAND_INVALID;
}

/* Checks every element, then the reference graph for cycles; true when
 * all is valid. BadOutOfMemory in *oom. */
static bool check_where(const uas_content_filter *w, const uas_sub_limits *l,
                        uas_content_filter_result *wr, uas_arena *a, bool *oom)
{
    size_t ne = w->elements_count;
    wr->element_results = uas_arena_calloc(a, ne, sizeof(*wr->element_results));
    cycle_walker cw;
    if (!wr->element_results || !walker_init(&cw.k, w, a)) {
        *oom = true;
        return false;
    }
    wr->element_results_count = ne;
    for (size_t i = 0; i < ne; i++) {
        uas_status st = check_element(w, l, i, &wr->element_results[i], a);
        if (st == UAS_BAD_OUT_OF_MEMORY) {
            *oom = true;
            return false;
        }
        wr->element_results[i].status_code = st;
    }
    cw.res = wr;
    cw.k.cycle = on_cycle;
    for (size_t i = 0; i < ne; i++)
        walk(&cw.k, i);
    bool valid = true;
    for (size_t i = 0; i < ne; i++)
        valid &= wr->element_results[i].status_code == UAS_GOOD;
    return valid;
}

uas_status sub_filter_check(const uas_event_filter *f, const uas_sub_limits *l,
                            uas_extensionobject *res, uas_arena *a)
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
    if (w->elements_count > l->max_filter_elements) {
        /* No per-element results: their number is the client's to choose. */
        invalid = true;
    } else if (w->elements_count) {
        bool oom = false;
        invalid |= !check_where(w, l, &r->where_clause_result, a, &oom);
        if (oom)
            return UAS_BAD_OUT_OF_MEMORY;
    }
    if (report || invalid) {
        res->encoding = UAS_EXTOBJ_DECODED;
        res->content.decoded.type = UAS_TYPE(EVENT_FILTER_RESULT);
        res->content.decoded.data = r;
    }
    return invalid ? UAS_BAD_EVENT_FILTER_INVALID : UAS_GOOD;
}

/* ---- values and comparison ---- */

/* One evaluation of a where clause against one event. The walker comes
 * first: its callbacks get the context back by a cast. */
typedef struct fctx {
    walker k;
    const uas_sub_event *ev;
    const uas_sub_limits *l;
    uas_arena *a;
    tri *val;       /* per element, valid once its state is W_DONE */
    size_t used0;   /* the arena's use when the evaluation began */
    uint64_t steps; /* work done so far */
    bool exhausted; /* the step or memory budget ran out */
} fctx;

static const bool B_FALSE = false, B_TRUE = true;

static bool over_budget(fctx *c)
{
    if (c->steps > c->l->max_filter_steps || c->a->used - c->used0 > c->l->max_filter_scratch)
        c->exhausted = true;
    return c->exhausted;
}

static void set_bool(uas_variant *out, tri t)
{
    memset(out, 0, sizeof(*out));
    if (t != TRI_NULL) /* the constants are only read */
        uas_variant_set_scalar(out, (void *)(t == TRI_TRUE ? &B_TRUE : &B_FALSE),
                               &uas_types[UAS_TYPES_BOOLEAN]);
}

static void operand_value(fctx *c, const uas_extensionobject *x, uas_variant *out)
{
    memset(out, 0, sizeof(*out));
    if (c->exhausted)
        return;
    const uas_literal_operand *lit = operand_as(x, UAS_TYPE(LITERAL_OPERAND));
    const uas_simple_attribute_operand *sao = operand_as(x, UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND));
    size_t r = element_ref(c->k.w, x);
    if (lit) {
        *out = lit->value;
    } else if (r != SIZE_MAX) {
        /* Evaluated already (the walk is post-order); open only on a
         * cycle, which the check refused: NULL then. */
        set_bool(out, c->k.state[r] == W_DONE ? c->val[r] : TRI_NULL);
    } else if (sao && c->ev->get_field) {
        if (c->ev->get_field(c->ev, sao, out, c->a) != UAS_GOOD || over_budget(c))
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

/* Does pattern element p[pi] match byte c? *adv: pattern bytes used;
 * *scanned: pattern bytes looked at (a '[' without ']' scans to the end). */
static bool match_one(const uint8_t *p, size_t m, size_t pi, uint8_t c, size_t *adv,
                      size_t *scanned)
{
    *scanned = 1;
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
    *scanned = j - pi;
    if (j >= m) { /* no closing bracket: a literal '[' */
        *adv = 1;
        return c == '[';
    }
    *adv = j + 1 - pi;
    return hit != neg;
}

/* Greedy matching that only ever goes back to the last '%': a later '%'
 * can absorb whatever an earlier one could, so earlier choices never need
 * revisiting. Every pass over the pattern after a '%' starts one character
 * further into the string, so the work is at most about length(str) *
 * length(pat) steps, never exponential; it is charged to c and the match
 * gives up (NULL) when the budget runs out. */
static tri like(fctx *c, const uas_string *str, const uas_string *pat)
{
    const uint8_t *s = str->data, *p = pat->data;
    size_t n = str->data ? str->length : 0, m = pat->data ? pat->length : 0;
    if (m > c->l->max_like_pattern_length)
        return TRI_NULL;
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < n) {
        if (++c->steps > c->l->max_filter_steps) {
            c->exhausted = true;
            return TRI_NULL;
        }
        if (pi < m && p[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        size_t adv = 1, scanned = 1;
        bool hit = pi < m && match_one(p, m, pi, s[si], &adv, &scanned);
        c->steps += scanned - 1; /* a [set] costs its length */
        if (hit) {
            si += p[pi] == '_' ? utf8_len(s[si]) : 1; /* '_' is one character */
            if (si > n)
                si = n; /* a character cut off at the end */
            pi += adv;
            continue;
        }
        if (star_p == SIZE_MAX)
            return TRI_FALSE;
        /* The last '%' takes one more character. */
        pi = star_p;
        star_s += utf8_len(s[star_s]);
        if (star_s > n)
            star_s = n;
        si = star_s;
    }
    while (pi < m && p[pi] == '%')
        pi++;
    return pi == m && si == n ? TRI_TRUE : TRI_FALSE;
}

/* ---- evaluation ---- */

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
        return like(c, v[0].data, v[1].data);
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

/* Evaluates element idx once its referenced elements are (the walk's
 * post-order); false stops the walk when a budget ran out. */
static bool eval_element(walker *k, size_t idx)
{
    fctx *c = (fctx *)k;
    const uas_content_filter_element *el = &k->w->elements[idx];
    int want = operand_count(el->filter_operator);
    size_t n = el->filter_operands_count;
    c->val[idx] = TRI_NULL;
    c->steps += 1 + n;
    if (over_budget(c))
        return false;
    /* sub_filter_check ran at creation; stay safe all the same. */
    if (want == 0 || (want > 0 && n != (size_t)want) || (want < 0 && n < (size_t)-want))
        return true;
    tri t = eval_op(c, el);
    if (over_budget(c))
        return false;
    c->val[idx] = t;
    return true;
}

bool sub_filter_match(const uas_content_filter *where, const uas_sub_event *ev,
                      const uas_sub_limits *l, uas_arena *a)
{
    size_t n = where->elements_count;
    if (n == 0)
        return true;
    if (n > l->max_filter_elements)
        return false; /* the check refused it; stay safe all the same */
    fctx c;
    memset(&c, 0, sizeof(c));
    c.ev = ev;
    c.l = l;
    c.a = a;
    c.used0 = a->used;
    c.val = uas_arena_calloc(a, n, sizeof(tri));
    if (!c.val || !walker_init(&c.k, where, a))
        return false;
    c.k.done = eval_element;
    if (!walk(&c.k, 0) || c.exhausted)
        return false;
    return c.val[0] == TRI_TRUE;
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
