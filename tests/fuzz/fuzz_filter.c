/* libFuzzer target for the EventFilter checker and evaluator
 * (server/src/sub_filter.c).
 *
 * Input: one byte choosing the limits (the defaults, or small ones so the
 * budgets run out), then a binary-encoded EventFilter (tests/fuzz/
 * filter_seeds holds a few; make_filter_seeds.py writes them). The filter is
 * checked, then evaluated against three events through the server's own
 * BaseEventType field code, whether the check accepted it or not (the
 * evaluator must stay safe on filters it never saw checked: cycles, bad
 * counts, dangling references). Aborts, so libFuzzer keeps the input, when:
 *  - an evaluation fetches more event fields than the where clause has
 *    operands (an element evaluated more than once per event);
 *  - it holds more scratch memory than max_filter_scratch plus one field;
 *  - two evaluations of the same event disagree;
 *  - an accepted filter breaks the element limit or has no select clause.
 * Hangs and exponential blow-ups show as libFuzzer timeouts (-timeout). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/codec.h>

#include "sub_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz_event {
    uas_sub_event base;
    uas_base_event_fields f;
    size_t calls; /* get_field calls */
} fz_event;

static uas_status fz_get(const uas_sub_event *ev, const uas_simple_attribute_operand *op,
                         uas_variant *out, uas_arena *a)
{
    fz_event *e = ev->ud;
    e->calls++;
    return uas_sub_base_event_field(&e->f, op, out, a);
}

static bool fz_of_type(const uas_sub_event *ev, const uas_nodeid *type)
{
    const fz_event *e = ev->ud;
    return type->ns == 0 && type->kind == UAS_NODEID_NUMERIC &&
           (type->id.numeric == 2041 || uas_equal(type, &e->f.event_type, UAS_TYPE(NODE_ID)));
}

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_filter: %s\n", what);
    abort();
}

static size_t operands_in(const uas_content_filter *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->elements_count; i++)
        n += w->elements[i].filter_operands_count;
    return n;
}

static void evaluate(const uas_event_filter *f, fz_event *ev, const uas_sub_limits *l)
{
    uint8_t first[1024];
    uas_arena a;
    uas_arena_init(&a, first, sizeof(first), 0);
    ev->calls = 0;
    bool pass = sub_filter_match(&f->where_clause, &ev->base, l, &a);
    if (ev->calls > operands_in(&f->where_clause))
        fail("an element was evaluated more than once");
    /* A field value is small here (the largest is a LocalizedText). */
    if (a.used > (size_t)l->max_filter_scratch + 256)
        fail("the evaluation went past its scratch budget");
    uas_arena_reset(&a);
    if (sub_filter_match(&f->where_clause, &ev->base, l, &a) != pass)
        fail("two evaluations of one event disagree");
    uas_arena_reset(&a);
    size_t n = f->select_clauses_count;
    if (n && n <= 64) {
        uas_variant fields[64];
        if (sub_filter_select(f, &ev->base, fields, &a) != UAS_GOOD)
            fail("select failed");
    }
    uas_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uas_sub_config cfg;
    uas_sub_config_default(&cfg);
    uas_sub_limits l = cfg.limits;
    if (data[0] & 1) { /* small limits: the budgets run out */
        l.max_filter_elements = 1 + data[0] % 16;
        l.max_like_pattern_length = 1 + data[0] % 8;
        l.max_filter_steps = 50 + data[0];
        l.max_filter_scratch = 256 + 8 * data[0];
    }

    uint8_t first[4096];
    uas_arena arena;
    uas_arena_init(&arena, first, sizeof(first), 64u << 20);
    uas_event_filter f;
    uas_limits dl = uas_limits_default;
    dl.max_array_length = 100000;
    dl.max_string_length = 1u << 20;
    size_t used = 0;
    if (uas_decode_binary(data + 1, size - 1, &f, UAS_TYPE(EVENT_FILTER), &arena, &dl, &used) !=
        UAS_GOOD) {
        uas_arena_free(&arena);
        return 0;
    }

    uas_extensionobject res;
    uas_status st = sub_filter_check(&f, &l, &res, &arena);
    if (st != UAS_GOOD && st != UAS_BAD_EVENT_FILTER_INVALID && st != UAS_BAD_OUT_OF_MEMORY)
        fail("unexpected check status");
    if (st == UAS_GOOD &&
        (f.where_clause.elements_count > l.max_filter_elements || f.select_clauses_count == 0))
        fail("the check accepted a filter past its limits");
    if (st != UAS_GOOD && res.encoding == UAS_EXTOBJ_DECODED &&
        res.content.decoded.type != UAS_TYPE(EVENT_FILTER_RESULT))
        fail("the result is not an EventFilterResult");

    static const uint8_t id[16] = {1, 2, 3};
    static const char *const names[] = {"Boiler#1", "caf\xc3\xa9", ""};
    for (int i = 0; i < 3; i++) {
        fz_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.base.get_field = fz_get;
        ev.base.is_of_type = fz_of_type;
        ev.base.ud = &ev;
        ev.f.event_id = id;
        ev.f.event_type = uas_nodeid_numeric(0, i == 0 ? 2041 : 2130); /* Base, SystemEvent */
        ev.f.source_node = uas_nodeid_numeric(0, 2253);
        ev.f.source_name = names[i];
        ev.f.message = i == 2 ? NULL : "100% done";
        ev.f.time = 133000000000000000 + i;
        ev.f.receive_time = ev.f.time;
        ev.f.severity = (uint16_t)(1 + 499 * i);
        evaluate(&f, &ev, &l);
    }
    uas_arena_free(&arena);
    return 0;
}
