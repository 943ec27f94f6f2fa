/* EventFilter (Part 4, 7.7 and 7.22.3) for event monitored items: checking
 * a filter when the item is created, the where clause (ContentFilter) and
 * the select clauses evaluated against a uas_sub_event.
 *
 * Supported operators: Equals, IsNull, GreaterThan, LessThan,
 * GreaterThanOrEqual, LessThanOrEqual, Like, Not, Between, InList, And, Or,
 * OfType; operands: Literal, Element, SimpleAttribute. Cast, BitwiseAnd/Or,
 * RelatedTo and AttributeOperand are reported BadFilterOperatorUnsupported /
 * BadFilterOperandInvalid. Logic is three-valued (TRUE/FALSE/NULL); an event
 * passes when the first element evaluates TRUE. Comparisons convert numbers
 * to a common type (integers exactly, otherwise double); other types compare
 * only with the same type (strings, DateTime, NodeId, StatusCode, ...).
 *
 * Cost: an element may be named by several operands but is evaluated once
 * per event; references may point either way but never in a cycle. The
 * limits bound the rest: max_filter_elements and max_like_pattern_length
 * when the filter is checked, max_filter_steps and max_filter_scratch per
 * evaluation (an evaluation that runs out is NULL: the event does not pass). */
#ifndef UAS_SUB_FILTER_H
#define UAS_SUB_FILTER_H

#include "sub_engine.h"

/* Check an EventFilter for CreateMonitoredItems: Good (possibly with a
 * result in *res when select clauses are invalid: those fields are then
 * always null) or BadEventFilterInvalid with *res saying why. *res is an
 * EventFilterResult allocated from a, or left empty when all is Good. */
uas_status sub_filter_check(const uas_event_filter *f, const uas_sub_limits *l,
                            uas_extensionobject *res, uas_arena *a);
/* Evaluate the where clause: true when the event passes (an empty
 * clause passes everything). Memory from a, at most l->max_filter_scratch
 * bytes of it (plus one field value). */
bool sub_filter_match(const uas_content_filter *where, const uas_sub_event *ev,
                      const uas_sub_limits *l, uas_arena *a);
/* The select clause values into fields[select_clauses_count] (allocated
 * from a; a field the event lacks is an empty variant). */
uas_status sub_filter_select(const uas_event_filter *f, const uas_sub_event *ev,
                             uas_variant *fields, uas_arena *a);

#endif
