#!/usr/bin/env python3
"""Seeds for fuzz_filter: one limits byte, then a binary EventFilter (Part 6
encoding). Usage: make_filter_seeds.py OUTDIR (tests/fuzz/filter_seeds)."""
import os
import struct
import sys

# Binary encoding ids of the operands (NodeIds.csv).
ELEMENT, LITERAL, SIMPLE_ATTRIBUTE = 594, 597, 603
# FilterOperator values.
EQ, ISNULL, GT, LT, GE, LE, LIKE, NOT, BETWEEN, INLIST, AND, OR, CAST = range(13)
OFTYPE = 14


def u8(v): return struct.pack('<B', v)
def u16(v): return struct.pack('<H', v)
def i32(v): return struct.pack('<i', v)
def u32(v): return struct.pack('<I', v)
def string(s):
    if s is None:
        return i32(-1)
    if isinstance(s, str):
        s = s.encode()
    return i32(len(s)) + s


def nodeid(ns, i):
    if ns == 0 and i < 256:
        return u8(0) + u8(i)
    return u8(1) + u8(ns) + u16(i)


def extobj(type_id, body):
    return nodeid(0, type_id) + u8(1) + i32(len(body)) + body


def element_op(i): return extobj(ELEMENT, u32(i))


def variant(kind, raw): return u8(kind) + raw


def lit_i32(v): return extobj(LITERAL, variant(6, i32(v)))
def lit_str(s): return extobj(LITERAL, variant(12, string(s)))
def lit_node(ns, i): return extobj(LITERAL, variant(17, nodeid(ns, i)))


def sao_body(name, attr=13):
    return (nodeid(0, 2041) + i32(1) + u16(0) + string(name) + u32(attr) + string(None))


def field(name): return extobj(SIMPLE_ATTRIBUTE, sao_body(name))


def element(op, *operands):
    return u32(op) + i32(len(operands)) + b''.join(operands)


def event_filter(selects, elements):
    return (i32(len(selects)) + b''.join(sao_body(s) for s in selects) +
            i32(len(elements)) + b''.join(elements))


def chain(n):
    els = [element(AND, element_op(i + 1), element_op(i + 1)) for i in range(n - 1)]
    return els + [element(OFTYPE, lit_node(0, 2041))]


SEEDS = {
    'severity_gt': event_filter(['Severity', 'Message'],
                                [element(GT, field('Severity'), lit_i32(100))]),
    'and_or_not': event_filter(['EventId', 'Time'], [
        element(AND, element_op(1), element_op(2)),
        element(OR, element_op(3), element_op(4)),
        element(NOT, element_op(4)),
        element(LIKE, field('SourceName'), lit_str(b'Boil%[0-9]')),
        element(ISNULL, field('Message')),
    ]),
    'between_inlist': event_filter(['Severity'], [
        element(OR, element_op(1), element_op(2)),
        element(BETWEEN, field('Severity'), lit_i32(1), lit_i32(600)),
        element(INLIST, field('SourceName'), lit_str(b'x'), lit_str(b'Boiler#1')),
    ]),
    'backward_reference': event_filter(['Severity'], [
        element(NOT, element_op(2)),
        element(EQ, field('Severity'), lit_i32(500)),
        element(NOT, element_op(1)),
    ]),
    'cycle': event_filter(['Severity'], [
        element(NOT, element_op(1)),
        element(NOT, element_op(0)),
    ]),
    'shared_chain_40': event_filter(['Severity'], chain(40)),
    'like_pathological': event_filter(['Message'], [
        element(LIKE, field('Message'), lit_str(b'%' + b'a' * 30 + b'b')),
    ]),
    'oftype_ge_le': event_filter(['EventType'], [
        element(AND, element_op(1), element_op(2)),
        element(OFTYPE, lit_node(0, 2130)),
        element(AND, element_op(3), element_op(3)),
        element(GE, field('Time'), field('ReceiveTime')),
    ]),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, body in SEEDS.items():
        for limits in (0, 0x3F):  # default limits, small limits
            suffix = '' if limits == 0 else '_small'
            with open(os.path.join(out, name + suffix + '.bin'), 'wb') as f:
                f.write(u8(limits) + body)


if __name__ == '__main__':
    main()
