/* EventFilter: checking (select and where clauses, per-element results),
 * evaluation of every supported operator with three-valued logic, the
 * select clauses, the bounds on the cost of a where clause (shared
 * elements evaluated once, cycles refused, element, Like, step and scratch
 * limits), and event items end to end through the engine. */
#include <stdarg.h>

#include "sub_filter.h"
#include "test_sub_harness.h"

TestSuite(filter, .init = h_setup, .fini = h_teardown);

/* ---- a fake event ---- */

typedef struct fev {
    uas_sub_event base;
    uint16_t severity;
    const char *source;
    const char *message; /* NULL: the event has no Message */
    uas_datetime time;
    uint32_t type; /* ns=1 event type, a subtype of BaseEventType */
} fev;

static unsigned fev_calls; /* get_field calls, to count evaluations */

static uas_status fev_get(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                          uas_variant *out, uas_arena *a)
{
    const fev *f = (const fev *)ev;
    fev_calls++;
    if (op->attribute_id != UAS_SUB_ATTR_VALUE || op->browse_path_count != 1)
        return UAS_BAD_ATTRIBUTE_ID_INVALID;
    const uas_string *n = &op->browse_path[0].name;
    void *p = NULL;
    const uas_type *t = NULL;
    if (uas_string_eq_cstr(n, "Severity")) {
        uint16_t *v = uas_arena_alloc(a, sizeof(*v));
        *v = f->severity;
        p = v, t = &uas_types[UAS_TYPES_UINT16];
    } else if (uas_string_eq_cstr(n, "SourceName")) {
        uas_string *v = uas_arena_alloc(a, sizeof(*v));
        *v = uas_string_from(f->source);
        p = v, t = &uas_types[UAS_TYPES_STRING];
    } else if (uas_string_eq_cstr(n, "Message") && f->message) {
        uas_localizedtext *v = uas_arena_calloc(a, 1, sizeof(*v));
        v->text = uas_string_from(f->message);
        p = v, t = &uas_types[UAS_TYPES_LOCALIZED_TEXT];
    } else if (uas_string_eq_cstr(n, "Time")) {
        uas_datetime *v = uas_arena_alloc(a, sizeof(*v));
        *v = f->time;
        p = v, t = &uas_types[UAS_TYPES_DATE_TIME];
    } else if (uas_string_eq_cstr(n, "EventType")) {
        uas_nodeid *v = uas_arena_alloc(a, sizeof(*v));
        *v = uas_nodeid_numeric(1, f->type);
        p = v, t = &uas_types[UAS_TYPES_NODE_ID];
    } else {
        return UAS_BAD_NODE_ID_UNKNOWN;
    }
    uas_variant_set_scalar(out, p, t);
    return UAS_GOOD;
}

static bool fev_of_type(const uas_sub_event *ev, const uas_nodeid *type)
{
    const fev *f = (const fev *)ev;
    if (type->ns == 0 && type->kind == UAS_NODEID_NUMERIC && type->id.numeric == 2041)
        return true; /* BaseEventType */
    return type->ns == 1 && type->kind == UAS_NODEID_NUMERIC && type->id.numeric == f->type;
}

static fev event(uint16_t severity, const char *source)
{
    fev f;
    memset(&f, 0, sizeof(f));
    f.base.get_field = fev_get;
    f.base.is_of_type = fev_of_type;
    f.severity = severity;
    f.source = source;
    f.message = "hello";
    f.time = H_UTC0;
    f.type = 9000;
    return f;
}

/* ---- filter builders (memory from the harness arena) ---- */

static uas_extensionobject xo(const uas_type *t, const void *data, size_t size)
{
    uas_extensionobject x;
    memset(&x, 0, sizeof(x));
    x.encoding = UAS_EXTOBJ_DECODED;
    x.content.decoded.type = t;
    x.content.decoded.data = uas_arena_alloc(&H.a, size);
    memcpy(x.content.decoded.data, data, size);
    return x;
}

static uas_extensionobject lit(const uas_type *t, const void *value)
{
    uas_literal_operand l;
    memset(&l, 0, sizeof(l));
    void *v = uas_arena_alloc(&H.a, t->size);
    memcpy(v, value, t->size);
    uas_variant_set_scalar(&l.value, v, t);
    return xo(UAS_TYPE(LITERAL_OPERAND), &l, sizeof(l));
}

#define LIT_I32(v)  lit(&uas_types[UAS_TYPES_INT32], &(int32_t){v})
#define LIT_U64(v)  lit(&uas_types[UAS_TYPES_UINT64], &(uint64_t){v})
#define LIT_DBL(v)  lit(&uas_types[UAS_TYPES_DOUBLE], &(double){v})
#define LIT_BOOL(v) lit(&uas_types[UAS_TYPES_BOOLEAN], &(bool){v})
#define LIT_STR(s)  lit(&uas_types[UAS_TYPES_STRING], &(uas_string){sizeof(s) - 1, (uint8_t *)s})
#define LIT_TIME(v) lit(&uas_types[UAS_TYPES_DATE_TIME], &(uas_datetime){v})
#define LIT_NODE(n_, i_)                                                                           \
    lit(&uas_types[UAS_TYPES_NODE_ID], &(uas_nodeid){.ns = n_, .id.numeric = i_})

static uas_simple_attribute_operand sao(const char *name, uint32_t attr)
{
    uas_simple_attribute_operand s;
    memset(&s, 0, sizeof(s));
    s.type_definition_id = uas_nodeid_numeric(0, 2041);
    s.browse_path = uas_arena_calloc(&H.a, 1, sizeof(uas_qualifiedname));
    s.browse_path[0].name = uas_string_from(name);
    s.browse_path_count = 1;
    s.attribute_id = attr;
    return s;
}

static uas_extensionobject fld(const char *name)
{
    uas_simple_attribute_operand s = sao(name, UAS_SUB_ATTR_VALUE);
    return xo(UAS_TYPE(SIMPLE_ATTRIBUTE_OPERAND), &s, sizeof(s));
}

static uas_extensionobject elop(uint32_t index)
{
    uas_element_operand e = {index};
    return xo(UAS_TYPE(ELEMENT_OPERAND), &e, sizeof(e));
}

static uas_content_filter_element el(uas_filter_operator op, size_t n, ...)
{
    uas_content_filter_element e;
    e.filter_operator = op;
    e.filter_operands_count = n;
    e.filter_operands = uas_arena_calloc(&H.a, n ? n : 1, sizeof(uas_extensionobject));
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        e.filter_operands[i] = va_arg(ap, uas_extensionobject);
    va_end(ap);
    return e;
}

static uas_event_filter filter_of(uas_content_filter_element *els, size_t n)
{
    uas_event_filter f;
    memset(&f, 0, sizeof(f));
    f.select_clauses = uas_arena_calloc(&H.a, 1, sizeof(uas_simple_attribute_operand));
    f.select_clauses[0] = sao("Severity", UAS_SUB_ATTR_VALUE);
    f.select_clauses_count = 1;
    f.where_clause.elements = els;
    f.where_clause.elements_count = n;
    return f;
}

/* The engine's default limits. */
static const uas_sub_limits *lim(void)
{
    static uas_sub_config c;
    uas_sub_config_default(&c);
    return &c.limits;
}

/* Checked, then evaluated against ev, with limits l. */
static bool passes_l(const fev *ev, uas_content_filter_element *els, size_t n,
                     const uas_sub_limits *l)
{
    uas_event_filter f = filter_of(els, n);
    uas_extensionobject res;
    cr_assert_eq(sub_filter_check(&f, l, &res, &H.a), UAS_GOOD, "filter rejected");
    return sub_filter_match(&f.where_clause, &ev->base, l, &H.a);
}

static bool passes(const fev *ev, uas_content_filter_element *els, size_t n)
{
    return passes_l(ev, els, n, lim());
}

#define PASS1(ev, e) passes(ev, (uas_content_filter_element[]){e}, 1)

/* ---- checking ---- */

static const uas_event_filter_result *result_of(const uas_extensionobject *x)
{
    cr_assert_eq(x->content.decoded.type, UAS_TYPE(EVENT_FILTER_RESULT));
    return x->content.decoded.data;
}

Test(filter, check_select_clauses)
{
    uas_event_filter f = filter_of(NULL, 0);
    uas_extensionobject res;
    f.select_clauses_count = 0;
    cr_expect_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID,
                 "no select");
    uas_simple_attribute_operand sel[3] = {sao("Severity", 13), sao("Message", 0), sao("", 13)};
    f.select_clauses = sel;
    f.select_clauses_count = 3;
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_GOOD,
                 "bad clauses are reported, not fatal");
    const uas_event_filter_result *r = result_of(&res);
    cr_assert_eq(r->select_clause_results_count, 3);
    cr_expect_eq(r->select_clause_results[0], UAS_GOOD);
    cr_expect_eq(r->select_clause_results[1], UAS_BAD_ATTRIBUTE_ID_INVALID);
    cr_expect_eq(r->select_clause_results[2], UAS_BAD_BROWSE_NAME_INVALID);
    f.select_clauses_count = 1;
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_GOOD);
    cr_expect_eq(res.encoding, UAS_EXTOBJ_EMPTY, "no result when all is good");
}

Test(filter, check_where_clause_elements)
{
    uas_content_filter_element els[] = {
        el(UAS_FILTER_OPERATOR_AND, 2, elop(1), elop(0)),             /* names itself */
        el(UAS_FILTER_OPERATOR_EQUALS, 1, fld("Severity")),           /* one operand short */
        el(UAS_FILTER_OPERATOR_CAST, 2, fld("Severity"), LIT_I32(1)), /* unsupported */
        el(99, 0),                                                    /* no such operator */
        el(UAS_FILTER_OPERATOR_OF_TYPE, 1, LIT_STR("x")),             /* needs a NodeId */
        el(UAS_FILTER_OPERATOR_IN_LIST, 2, fld("Severity"), LIT_I32(1)),
    };
    uas_event_filter f = filter_of(els, 6);
    uas_extensionobject res;
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    const uas_content_filter_result *w = &result_of(&res)->where_clause_result;
    cr_assert_eq(w->element_results_count, 6);
    cr_expect_eq(w->element_results[0].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_expect_eq(w->element_results[0].operand_status_codes[0], UAS_GOOD);
    cr_expect_eq(w->element_results[0].operand_status_codes[1], UAS_BAD_FILTER_OPERAND_INVALID);
    cr_expect_eq(w->element_results[1].status_code, UAS_BAD_FILTER_OPERAND_COUNT_MISMATCH);
    cr_expect_eq(w->element_results[2].status_code, UAS_BAD_FILTER_OPERATOR_UNSUPPORTED);
    cr_expect_eq(w->element_results[3].status_code, UAS_BAD_FILTER_OPERATOR_INVALID);
    cr_expect_eq(w->element_results[4].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_expect_eq(w->element_results[5].status_code, UAS_GOOD);
}

/* ---- evaluation ---- */

Test(filter, comparisons_convert_numbers)
{
    fev e = event(500, "Boiler#1");
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_DBL(500.0))));
    cr_expect_not(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(501))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_GREATER_THAN, 2, fld("Severity"), LIT_I32(-1))));
    cr_expect_not(
        PASS1(&e, el(UAS_FILTER_OPERATOR_GREATER_THAN, 2, fld("Severity"), LIT_I32(500))));
    cr_expect(
        PASS1(&e, el(UAS_FILTER_OPERATOR_GREATER_THAN_OR_EQUAL, 2, fld("Severity"), LIT_I32(500))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_LESS_THAN, 2, fld("Severity"), LIT_U64(501))));
    cr_expect(
        PASS1(&e, el(UAS_FILTER_OPERATOR_LESS_THAN_OR_EQUAL, 2, fld("Severity"), LIT_DBL(500.5))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_LESS_THAN, 2, LIT_I32(-1), LIT_U64(0))),
              "a negative signed value is below any unsigned one");
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_GREATER_THAN, 2, fld("SourceName"), LIT_STR("A"))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("SourceName"), LIT_STR("Boiler#1"))));
    cr_expect_not(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("SourceName"), LIT_I32(1))),
                  "no implicit string/number conversion");
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("EventType"), LIT_NODE(1, 9000))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_LESS_THAN, 2, fld("Time"), LIT_TIME(H_UTC0 + 1))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_EQUALS, 2, LIT_BOOL(true), LIT_I32(1))),
              "Boolean converts to 0/1");
}

static bool like_match(const char *s, const char *p)
{
    fev e = event(1, s);
    uas_string pat = uas_string_from(p);
    return PASS1(&e, el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"),
                        lit(&uas_types[UAS_TYPES_STRING], &pat)));
}

Test(filter, like_patterns)
{
    cr_expect(like_match("Boiler#1", "Boiler#1"));
    cr_expect(like_match("Boiler#1", "Boil%"));
    cr_expect(like_match("Boiler#1", "%#1"));
    cr_expect(like_match("Boiler#1", "B_iler%"));
    cr_expect(like_match("Boiler#1", "%[0-9]"));
    cr_expect_not(like_match("Boiler#1", "%[^0-9]"));
    cr_expect(like_match("Boiler#7", "Boiler#[17]"));
    cr_expect_not(like_match("Boiler#5", "Boiler#[17]"));
    cr_expect(like_match("100%", "100\\%"));
    cr_expect_not(like_match("1000", "100\\%"));
    cr_expect(like_match("a_b", "a\\_b"));
    cr_expect_not(like_match("axb", "a\\_b"));
    cr_expect(like_match("", "%"));
    cr_expect(like_match("anything", "%%"));
    cr_expect_not(like_match("ab", "abc"));
    cr_expect_not(like_match("abc", "ab"));
    cr_expect(like_match("caf\xc3\xa9", "caf_"), "_ is one UTF-8 character");
    cr_expect(like_match("xaxbxc", "%a%b%c"));
    cr_expect_not(like_match("xaxbx", "%a%b%c"));
}

Test(filter, three_valued_logic)
{
    fev e = event(500, "s");
    e.message = NULL;
    /* Message is missing: comparisons with it are NULL. */
    uas_extensionobject null_cmp_src = fld("Message");
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_IS_NULL, 1, fld("Message"))));
    cr_expect_not(PASS1(&e, el(UAS_FILTER_OPERATOR_IS_NULL, 1, fld("Severity"))));
    uas_content_filter_element not_null[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, null_cmp_src, LIT_STR("x")),
    };
    cr_expect_not(passes(&e, not_null, 2), "NOT NULL is NULL, not TRUE");
    uas_content_filter_element or_null_true[] = {
        el(UAS_FILTER_OPERATOR_OR, 2, elop(1), elop(2)),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Message"), LIT_STR("x")),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500)),
    };
    cr_expect(passes(&e, or_null_true, 3), "NULL OR TRUE");
    uas_content_filter_element and_null_true[] = {
        el(UAS_FILTER_OPERATOR_AND, 2, elop(1), elop(2)),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Message"), LIT_STR("x")),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500)),
    };
    cr_expect_not(passes(&e, and_null_true, 3), "NULL AND TRUE is NULL");
    uas_content_filter_element not_and_null_false[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
        el(UAS_FILTER_OPERATOR_AND, 2, elop(2), elop(3)),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Message"), LIT_STR("x")),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(1)),
    };
    cr_expect(passes(&e, not_and_null_false, 4), "NULL AND FALSE is FALSE");
    uas_content_filter_element and_true_true[] = {
        el(UAS_FILTER_OPERATOR_AND, 2, elop(1), elop(2)),
        el(UAS_FILTER_OPERATOR_GREATER_THAN, 2, fld("Severity"), LIT_I32(100)),
        el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"), LIT_STR("s")),
    };
    cr_expect(passes(&e, and_true_true, 3));
}

Test(filter, between_inlist_oftype)
{
    fev e = event(500, "s");
    cr_expect(
        PASS1(&e, el(UAS_FILTER_OPERATOR_BETWEEN, 3, fld("Severity"), LIT_I32(100), LIT_DBL(500))));
    cr_expect_not(
        PASS1(&e, el(UAS_FILTER_OPERATOR_BETWEEN, 3, fld("Severity"), LIT_I32(501), LIT_I32(900))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_IN_LIST, 4, fld("Severity"), LIT_I32(1),
                           LIT_U64(500), LIT_I32(7))));
    cr_expect_not(
        PASS1(&e, el(UAS_FILTER_OPERATOR_IN_LIST, 3, fld("Severity"), LIT_I32(1), LIT_I32(7))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_OF_TYPE, 1, LIT_NODE(1, 9000))));
    cr_expect(PASS1(&e, el(UAS_FILTER_OPERATOR_OF_TYPE, 1, LIT_NODE(0, 2041))), "a supertype");
    cr_expect_not(PASS1(&e, el(UAS_FILTER_OPERATOR_OF_TYPE, 1, LIT_NODE(1, 9001))));
    cr_expect(passes(&e, NULL, 0), "an empty where clause passes everything");
}

/* ---- the cost of a where clause ---- */

/* n elements: And(e[i+1], e[i+1]) down to e[n-1], Severity == 500. Every
 * element is named twice by the one before it: 2^(n-1) paths. */
static uas_content_filter_element *shared_chain(size_t n)
{
    uas_content_filter_element *els = uas_arena_calloc(&H.a, n, sizeof(*els));
    for (size_t i = 0; i + 1 < n; i++)
        els[i] = el(UAS_FILTER_OPERATOR_AND, 2, elop((uint32_t)i + 1), elop((uint32_t)i + 1));
    els[n - 1] = el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500));
    return els;
}

Test(filter, a_shared_element_is_evaluated_once_per_event)
{
    fev e = event(500, "s");
    fev_calls = 0;
    cr_expect(passes(&e, shared_chain(12), 12));
    cr_expect_eq(fev_calls, 1, "the last element was evaluated %u times, not once", fev_calls);
    fev_calls = 0;
    e.severity = 7;
    cr_expect_not(passes(&e, shared_chain(12), 12));
    cr_expect_eq(fev_calls, 1);
}

Test(filter, a_deep_shared_chain_up_to_the_element_limit_is_cheap, .timeout = 10)
{
    /* 2^63 evaluations without memoization: the timeout would end it. */
    fev e = event(500, "s");
    size_t n = lim()->max_filter_elements;
    fev_calls = 0;
    cr_expect(passes(&e, shared_chain(n), n));
    cr_expect_eq(fev_calls, 1);
}

Test(filter, more_elements_than_the_limit_are_refused)
{
    size_t n = lim()->max_filter_elements + 1;
    uas_event_filter f = filter_of(shared_chain(n), n);
    uas_extensionobject res;
    cr_expect_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    cr_expect_eq(result_of(&res)->where_clause_result.element_results_count, 0);
    uas_sub_limits l = *lim();
    l.max_filter_elements = 3;
    f = filter_of(shared_chain(4), 4);
    cr_expect_eq(sub_filter_check(&f, &l, &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    f = filter_of(shared_chain(3), 3);
    cr_expect_eq(sub_filter_check(&f, &l, &res, &H.a), UAS_GOOD);
    /* Evaluation keeps to the limit even for a filter that skipped the check. */
    fev e = event(500, "s");
    cr_expect(sub_filter_match(&f.where_clause, &e.base, &l, &H.a));
    f = filter_of(shared_chain(4), 4);
    cr_expect_not(sub_filter_match(&f.where_clause, &e.base, &l, &H.a));
}

Test(filter, references_may_point_back_but_never_in_a_cycle)
{
    fev e = event(500, "s");
    /* Part 4, 7.7.1 forbids loops, not an order: e2 names e1 before it. */
    uas_content_filter_element back[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(2)),
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500)),
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
    };
    cr_expect(passes(&e, back, 3), "NOT NOT TRUE");

    uas_content_filter_element cycle[] = {
        el(UAS_FILTER_OPERATOR_AND, 2, elop(1), elop(3)),
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(2)),
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)), /* back to e1: a cycle */
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500)),
    };
    uas_event_filter f = filter_of(cycle, 4);
    uas_extensionobject res;
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    const uas_content_filter_result *w = &result_of(&res)->where_clause_result;
    cr_assert_eq(w->element_results_count, 4);
    cr_expect_eq(w->element_results[0].status_code, UAS_GOOD);
    cr_expect_eq(w->element_results[1].status_code, UAS_GOOD);
    cr_expect_eq(w->element_results[2].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_assert_eq(w->element_results[2].operand_status_codes_count, 1);
    cr_expect_eq(w->element_results[2].operand_status_codes[0], UAS_BAD_FILTER_OPERAND_INVALID);
    cr_expect_eq(w->element_results[3].status_code, UAS_GOOD);
    /* Unchecked, the evaluation still ends: the cycle reads as NULL. */
    cr_expect_not(sub_filter_match(&f.where_clause, &e.base, lim(), &H.a));

    uas_content_filter_element unreachable_cycle[] = {
        el(UAS_FILTER_OPERATOR_EQUALS, 2, fld("Severity"), LIT_I32(500)),
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(2)),
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
    };
    f = filter_of(unreachable_cycle, 3);
    cr_expect_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID,
                 "a cycle is refused even where the first element does not lead");

    uas_content_filter_element out_of_range[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
    };
    f = filter_of(out_of_range, 1);
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    w = &result_of(&res)->where_clause_result;
    cr_expect_eq(w->element_results[0].operand_status_codes[0], UAS_BAD_FILTER_OPERAND_INVALID);
}

static uas_string repeat(const char *unit, size_t times, const char *tail)
{
    size_t u = strlen(unit), t = strlen(tail);
    uas_string s = {u * times + t, uas_arena_alloc(&H.a, u * times + t + 1)};
    for (size_t i = 0; i < times; i++)
        memcpy(s.data + i * u, unit, u);
    memcpy(s.data + u * times, tail, t);
    s.data[s.length] = 0; /* also a C string */
    return s;
}

Test(filter, like_patterns_are_bounded)
{
    uas_sub_limits l = *lim();
    l.max_like_pattern_length = 8;
    /* A literal pattern over the limit is refused at creation. */
    uas_string longpat = repeat("%", 9, "");
    uas_content_filter_element one[] = {
        el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"),
           lit(&uas_types[UAS_TYPES_STRING], &longpat)),
    };
    uas_event_filter f = filter_of(one, 1);
    uas_extensionobject res;
    cr_assert_eq(sub_filter_check(&f, &l, &res, &H.a), UAS_BAD_EVENT_FILTER_INVALID);
    const uas_content_filter_result *w = &result_of(&res)->where_clause_result;
    cr_expect_eq(w->element_results[0].status_code, UAS_BAD_FILTER_OPERAND_INVALID);
    cr_expect_eq(w->element_results[0].operand_status_codes[0], UAS_GOOD);
    cr_expect_eq(w->element_results[0].operand_status_codes[1], UAS_BAD_FILTER_OPERAND_INVALID);
    longpat.length = 8;
    one[0] = el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"),
                lit(&uas_types[UAS_TYPES_STRING], &longpat));
    cr_expect_eq(sub_filter_check(&f, &l, &res, &H.a), UAS_GOOD, "at the limit");

    /* A pattern from the event over the limit makes Like NULL: neither it
     * nor its negation passes. */
    fev e = event(1, "%%%%%%%%%"); /* nine bytes */
    uas_content_filter_element not_like[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
        el(UAS_FILTER_OPERATOR_LIKE, 2, LIT_STR("abc"), fld("SourceName")),
    };
    cr_expect_not(passes_l(&e, not_like, 2, &l));
    cr_expect_not(passes_l(&e, not_like + 1, 1, &l));
    e.source = "%%%%%%%%";
    cr_expect(passes_l(&e, not_like + 1, 1, &l), "eight bytes match");
}

Test(filter, like_matching_is_polynomial_and_within_the_step_budget, .timeout = 10)
{
    /* "%a%a...%b" is exponential for a naive backtracking matcher and
     * linear here; "%aaa...ab" costs length(s) * length(p) steps. */
    uas_string subject = repeat("a", 400, "");
    uas_string pat = repeat("%a", 20, "%b");
    cr_expect_not(like_match((const char *)subject.data, (const char *)pat.data));
    pat = repeat("a", 40, "b");
    pat.data[0] = '%';
    fev e = event(1, (const char *)subject.data);
    uas_content_filter_element not_like[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
        el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"), lit(&uas_types[UAS_TYPES_STRING], &pat)),
    };
    cr_expect(passes(&e, not_like, 2), "no match, found within the default budget");
    uas_sub_limits l = *lim();
    l.max_filter_steps = 1000;
    cr_expect_not(passes_l(&e, not_like, 2, &l), "out of steps: NULL, so NOT does not pass");
    cr_expect(like_match("\xc3\xa9"
                         "a",
                         "%a"),
              "the last %% takes whole characters");
    cr_expect(like_match("x\xc3\xa9y", "%_y"));
    cr_expect_not(like_match("\xc3\xa9", "%__"));
    cr_expect(like_match("a\xc3", "a%"), "%% takes a character cut off at the end");
    cr_expect(like_match("a\xc3", "a_"));

    /* A '[' without ']' scans the rest of the pattern each time: charged. */
    uas_string brackets = repeat("[", 300, "");
    e = event(1, (const char *)brackets.data);
    pat = repeat("[", 200, "x");
    pat.data[0] = '%';
    uas_content_filter_element not_scan[] = {
        el(UAS_FILTER_OPERATOR_NOT, 1, elop(1)),
        el(UAS_FILTER_OPERATOR_LIKE, 2, fld("SourceName"), lit(&uas_types[UAS_TYPES_STRING], &pat)),
    };
    cr_expect_not(passes(&e, not_scan, 2), "about 100 * 200 * 200 bytes scanned: over budget");
    l.max_filter_steps = UINT32_MAX;
    cr_expect(passes_l(&e, not_scan, 2, &l), "no match given the time");
}

Test(filter, the_step_budget_bounds_an_evaluation)
{
    /* InList of 300 operands, the match last. */
    uas_content_filter_element in;
    in.filter_operator = UAS_FILTER_OPERATOR_IN_LIST;
    in.filter_operands_count = 301;
    in.filter_operands = uas_arena_calloc(&H.a, 301, sizeof(uas_extensionobject));
    in.filter_operands[0] = fld("Severity");
    for (int i = 1; i < 300; i++)
        in.filter_operands[i] = LIT_I32(1000 + i);
    in.filter_operands[300] = LIT_I32(500);
    fev e = event(500, "s");
    cr_expect(passes(&e, &in, 1));
    uas_sub_limits l = *lim();
    l.max_filter_steps = 300;
    cr_expect_not(passes_l(&e, &in, 1, &l), "302 steps are over the budget");
    l.max_filter_steps = 302;
    cr_expect(passes_l(&e, &in, 1, &l));
}

Test(filter, the_scratch_budget_bounds_an_evaluation)
{
    /* InList whose 200 operands are event fields, each fetched into the
     * scratch arena; the match last. */
    uas_content_filter_element in;
    in.filter_operator = UAS_FILTER_OPERATOR_IN_LIST;
    in.filter_operands_count = 202;
    in.filter_operands = uas_arena_calloc(&H.a, 202, sizeof(uas_extensionobject));
    in.filter_operands[0] = LIT_STR("s");
    for (int i = 1; i < 201; i++)
        in.filter_operands[i] = fld("Message");
    in.filter_operands[201] = fld("SourceName");
    fev e = event(500, "s");
    uas_arena a;
    uint8_t mem[256];
    uas_arena_init(&a, mem, sizeof(mem), 0);
    uas_event_filter f = filter_of(&in, 1);
    uas_extensionobject res;
    cr_assert_eq(sub_filter_check(&f, lim(), &res, &H.a), UAS_GOOD);
    cr_expect(sub_filter_match(&f.where_clause, &e.base, lim(), &a));
    size_t used = a.used;
    cr_expect_gt(used, 2048);
    uas_arena_reset(&a);
    uas_sub_limits l = *lim();
    l.max_filter_scratch = 2048;
    cr_expect_not(sub_filter_match(&f.where_clause, &e.base, &l, &a));
    cr_expect_leq(a.used, 2048 + 64, "stops at the budget (one field over at most): %zu", a.used);
    uas_arena_free(&a);
}

Test(filter, select_fields)
{
    fev e = event(300, "Pump");
    e.message = NULL;
    uas_event_filter f = filter_of(NULL, 0);
    uas_simple_attribute_operand sel[4] = {sao("SourceName", 13), sao("Severity", 13),
                                           sao("Message", 13), sao("Severity", 0)};
    f.select_clauses = sel;
    f.select_clauses_count = 4;
    uas_variant out[4];
    cr_assert_eq(sub_filter_select(&f, &e.base, out, &H.a), UAS_GOOD);
    cr_expect(uas_string_eq_cstr(out[0].data, "Pump"));
    cr_expect_eq(*(uint16_t *)out[1].data, 300);
    cr_expect_null(out[2].type, "a missing field is null");
    cr_expect_null(out[3].type, "an invalid clause is null");
}

/* ---- event items through the engine ---- */

static uas_extensionobject event_filter_where_severity(uint32_t min)
{
    uas_event_filter f =
        filter_of(uas_arena_calloc(&H.a, 1, sizeof(uas_content_filter_element)), 1);
    f.where_clause.elements[0] =
        el(UAS_FILTER_OPERATOR_GREATER_THAN_OR_EQUAL, 2, fld("Severity"), LIT_I32((int32_t)min));
    uas_simple_attribute_operand *sel = uas_arena_calloc(&H.a, 3, sizeof(*sel));
    sel[0] = sao("EventType", 13);
    sel[1] = sao("Severity", 13);
    sel[2] = sao("Message", 13);
    f.select_clauses = sel;
    f.select_clauses_count = 3;
    return xo(UAS_TYPE(EVENT_FILTER), &f, sizeof(f));
}

static h_item_opts event_opts(uint32_t queue, uas_extensionobject filter)
{
    h_item_opts o = h_opts(-1, queue);
    o.attr = UAS_SUB_ATTR_EVENT_NOTIFIER;
    o.filter = filter;
    return o;
}

static const uas_event_notification_list *events_of(size_t i)
{
    const uas_notification_message *nm = &H.full[i].notification_message;
    for (size_t k = 0; k < nm->notification_data_count; k++)
        if (nm->notification_data[k].content.decoded.type == UAS_TYPE(EVENT_NOTIFICATION_LIST))
            return nm->notification_data[k].content.decoded.data;
    return NULL;
}

static void post(uint16_t severity)
{
    fev e = event(severity, "src");
    uas_nodeid n = uas_nodeid_numeric(1, 9);
    uas_sub_engine_post_event(H.e, &n, &e.base, H.now);
}

/* Selected as EventType, Severity, Message: an EventQueueOverflowEventType
 * event (ns=0;i=3035) made by the engine. */
static bool is_overflow(const uas_event_field_list *f)
{
    if (f->event_fields_count != 3 || f->event_fields[0].type != &uas_types[UAS_TYPES_NODE_ID])
        return false;
    const uas_nodeid *t = f->event_fields[0].data;
    return t->ns == 0 && t->id.numeric == 3035 &&
           f->event_fields[1].type == &uas_types[UAS_TYPES_UINT16] &&
           f->event_fields[2].type == &uas_types[UAS_TYPES_LOCALIZED_TEXT];
}

static uint16_t severity_of(const uas_event_field_list *f)
{
    cr_assert_eq(f->event_fields[1].type, &uas_types[UAS_TYPES_UINT16]);
    return *(uint16_t *)f->event_fields[1].data;
}

Test(filter, event_items_filter_and_publish)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    h_publish(s, 1);
    uas_monitored_item_create_result r =
        h_item_res(s, id, 9, 42, event_opts(0, event_filter_where_severity(100)));
    cr_assert_eq(r.status_code, UAS_GOOD);
    cr_expect_eq(r.revised_queue_size, 100, "0: the default event queue");
    cr_expect_eq(r.revised_sampling_interval, 0);
    cr_expect_eq(H.nodes[9].mask, UAS_SUB_WATCH_EVENTS);
    H.nodes[9].pushed = true;
    h_item(s, id, 9, 7, h_opts(0, 1)); /* a data item on the same node */
    cr_expect_eq(H.nodes[9].mask, UAS_SUB_WATCH_EVENTS | UAS_SUB_WATCH_VALUE);
    h_run(100);
    post(50);
    post(500);
    h_run(200);
    post(700);
    h_run(1000);
    cr_assert_eq(H.n, 1);
    const uas_event_notification_list *l = events_of(0);
    cr_assert_not_null(l);
    cr_assert_eq(l->events_count, 2, "severity 50 filtered out");
    const uint16_t want[] = {500, 700};
    for (size_t k = 0; k < 2; k++) {
        const uas_event_field_list *f = &l->events[k];
        cr_expect_eq(f->client_handle, 42);
        cr_assert_eq(f->event_fields_count, 3);
        cr_expect_eq(f->event_fields[0].type, &uas_types[UAS_TYPES_NODE_ID]);
        cr_expect_eq(*(uint16_t *)f->event_fields[1].data, want[k]);
        cr_expect(
            uas_string_eq_cstr(&((uas_localizedtext *)f->event_fields[2].data)->text, "hello"));
    }
    cr_expect_not_null(h_dcn(0), "the data item's first sample travels in the same message");
}

Test(filter, event_queue_discard_and_modes)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 1);
    h_publish(s, 1);
    h_publish(s, 2);
    uint32_t item = h_item(s, id, 9, 1, event_opts(2, event_filter_where_severity(0)));
    for (uint16_t v = 1; v <= 4; v++)
        post(v);
    h_run(1000);
    cr_assert_eq(H.n, 1);
    const uas_event_notification_list *l = events_of(0);
    cr_assert_eq(l->events_count, 3, "the queue and the overflow event");
    cr_expect(is_overflow(&l->events[0]), "the overflow event first");
    cr_expect_eq(*(uint16_t *)l->events[1].event_fields[1].data, 3, "oldest discarded");
    cr_expect_eq(*(uint16_t *)l->events[2].event_fields[1].data, 4);
    uint32_t ids[] = {item};
    uas_set_monitoring_mode_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.monitoring_mode = UAS_MONITORING_MODE_DISABLED;
    req.monitored_item_ids = ids;
    req.monitored_item_ids_count = 1;
    uas_set_monitoring_mode_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_set_monitoring_mode(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    post(9);
    h_run(2000);
    cr_assert_eq(H.n, 2);
    cr_expect_eq(H.light[1].ndata, 0, "disabled: a keep-alive");
}

Test(filter, event_queue_overflow_event_ends_a_discard_newest_queue_and_skips_the_where_clause)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    h_publish(s, 1);
    /* Only severities >= 200 pass; the overflow event (severity 100) is
     * queued all the same. */
    h_item_opts o = event_opts(2, event_filter_where_severity(200));
    o.discard_oldest = false;
    h_item(s, id, 9, 5, o);
    for (uint16_t v = 300; v <= 304; v++)
        post(v);
    post(1); /* filtered out: no loss */
    h_run(1000);
    cr_assert_eq(H.n, 1);
    const uas_event_notification_list *l = events_of(0);
    cr_assert_eq(l->events_count, 3);
    cr_expect_eq(severity_of(&l->events[0]), 300);
    cr_expect_eq(severity_of(&l->events[1]), 304, "the newest overwritten");
    cr_expect(is_overflow(&l->events[2]), "the overflow event last");
    cr_expect_eq(l->events[2].client_handle, 5);
    cr_expect_eq(severity_of(&l->events[2]), 100);
}

Test(filter, one_overflow_event_while_one_waits_then_a_new_one)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    h_publish(s, 1);
    h_publish(s, 2);
    h_publish(s, 3);
    uint32_t item = h_item(s, id, 9, 1, event_opts(1, event_filter_where_severity(0)));
    for (uint16_t v = 1; v <= 10; v++)
        post(v);
    h_run(1000);
    cr_assert_eq(H.n, 1);
    cr_assert_eq(events_of(0)->events_count, 2, "one overflow event for nine losses");
    cr_expect(is_overflow(&events_of(0)->events[0]));
    cr_expect_eq(severity_of(&events_of(0)->events[1]), 10);
    /* No loss in the next cycle, no overflow event. */
    post(11);
    h_run(2000);
    cr_assert_eq(H.n, 2);
    cr_assert_eq(events_of(1)->events_count, 1);
    cr_expect_eq(severity_of(&events_of(1)->events[0]), 11);
    /* A smaller queue loses events too: ModifyMonitoredItems 3 -> 1. */
    uas_monitored_item_modify_request mr;
    memset(&mr, 0, sizeof(mr));
    mr.monitored_item_id = item;
    mr.requested_parameters.queue_size = 3;
    mr.requested_parameters.discard_oldest = true;
    mr.requested_parameters.filter = event_filter_where_severity(0);
    uas_modify_monitored_items_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_id = id;
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.items_to_modify = &mr;
    req.items_to_modify_count = 1;
    uas_modify_monitored_items_response resp;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_monitored_items(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    cr_assert_eq(resp.results[0].status_code, UAS_GOOD);
    post(12);
    post(13);
    post(14);
    mr.requested_parameters.queue_size = 1;
    memset(&resp, 0, sizeof(resp));
    cr_assert_eq(uas_sub_modify_monitored_items(s, &req, &resp, &H.a, H.now), UAS_GOOD);
    cr_assert_eq(resp.results[0].revised_queue_size, 1);
    h_run(3000);
    cr_assert_eq(H.n, 3);
    cr_assert_eq(events_of(2)->events_count, 2);
    cr_expect(is_overflow(&events_of(2)->events[0]));
    cr_expect_eq(severity_of(&events_of(2)->events[1]), 14);
}

Test(filter, overflow_event_fields_follow_the_select_clauses)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    h_publish(s, 1);
    uas_event_filter f = filter_of(NULL, 0);
    uas_simple_attribute_operand *sel = uas_arena_calloc(&H.a, 6, sizeof(*sel));
    sel[0] = sao("EventId", 13);
    sel[1] = sao("SourceNode", 13);
    sel[2] = sao("Time", 13);
    sel[3] = sao("Severity", 13);
    sel[3].type_definition_id = uas_nodeid_numeric(1, 9000); /* another event type */
    sel[4] = sao("NoSuchField", 13);
    sel[5] = sao("EventType", 13);
    sel[5].type_definition_id = uas_nodeid_numeric(0, 3035);
    f.select_clauses = sel;
    f.select_clauses_count = 6;
    h_item(s, id, 9, 1, event_opts(1, xo(UAS_TYPE(EVENT_FILTER), &f, sizeof(f))));
    H.now = 500;
    post(1);
    post(2);
    h_run(1000);
    cr_assert_eq(H.n, 1);
    const uas_event_field_list *o = &events_of(0)->events[0];
    cr_assert_eq(o->event_fields_count, 6);
    cr_assert_eq(o->event_fields[0].type, &uas_types[UAS_TYPES_BYTE_STRING]);
    cr_expect_eq(((uas_bytestring *)o->event_fields[0].data)->length, 16);
    cr_assert_eq(o->event_fields[1].type, &uas_types[UAS_TYPES_NODE_ID]);
    cr_expect_eq(((uas_nodeid *)o->event_fields[1].data)->id.numeric, 2253, "the Server object");
    cr_assert_eq(o->event_fields[2].type, &uas_types[UAS_TYPES_DATE_TIME]);
    cr_expect_eq(*(uas_datetime *)o->event_fields[2].data, H_UTC0 + 500 * 10000);
    cr_expect_null(o->event_fields[3].type, "a field of another event type is null");
    cr_expect_null(o->event_fields[4].type);
    cr_assert_eq(o->event_fields[5].type, &uas_types[UAS_TYPES_NODE_ID]);
    cr_expect_eq(((uas_nodeid *)o->event_fields[5].data)->id.numeric, 3035);
}

Test(filter, event_item_errors)
{
    uas_sub_session *s = h_session();
    uint32_t id = h_sub(s, 1000, 5);
    uas_extensionobject none;
    memset(&none, 0, sizeof(none));
    cr_expect_eq(h_item_res(s, id, 9, 1, event_opts(1, none)).status_code,
                 UAS_BAD_EVENT_FILTER_INVALID);
    uas_data_change_filter dcf;
    cr_expect_eq(h_item_res(s, id, 9, 1, event_opts(1, h_dcf(1, 0, 0, &dcf))).status_code,
                 UAS_BAD_FILTER_NOT_ALLOWED);
    uas_event_filter bad = filter_of(NULL, 0);
    bad.select_clauses_count = 0;
    uas_monitored_item_create_result r =
        h_item_res(s, id, 9, 1, event_opts(1, xo(UAS_TYPE(EVENT_FILTER), &bad, sizeof(bad))));
    cr_expect_eq(r.status_code, UAS_BAD_EVENT_FILTER_INVALID);
    cr_expect_eq(r.filter_result.content.decoded.type, UAS_TYPE(EVENT_FILTER_RESULT));
    cr_expect_eq(H.nodes[9].mask, 0);
}
