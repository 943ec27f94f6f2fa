#!/usr/bin/env python3
"""Generate the namespace 0 C types of uastack from the official OPC UA schema.

The stack handles every value through data (uas_type descriptors walked by one
generic codec and one init/copy/clear/equal), so the 300-odd structures,
enumerations and opaque types of namespace 0 must exist as C types plus
descriptor tables. Writing them by hand would be error-prone and would drift
from the specification; this script derives them from the published files:

  Opc.Ua.Types.bsd     types, fields, enumeration values (binary layout)
  NodeIds.csv          DataType and DefaultBinary encoding ids, node id macros
  StatusCode.csv       status code macros, names and descriptions
  Opc.Ua.NodeSet2.xml  schema version, builtin type under each OpaqueType

The contract (file list, naming and layout rules) is stack/codegen/README.md.
Output is deterministic and independent of where the schema and output folders
are, because CI regenerates into a scratch folder and diffs against the
committed stack/gen. Python 3 standard library only.

Usage: gen_types.py --schema DIR --out DIR
"""

import argparse
import csv
import os
import re
import sys
import xml.etree.ElementTree as ET

BSD = "{http://opcfoundation.org/BinarySchema/}"
UANS = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"

# The 25 builtin types in id order (id = index + 1): bsd/DataType name, C type
# from ua/builtin.h, descriptor index suffix, pointer-free. The index names are
# fixed rather than snake-cased: the generic rule would give S_BYTE / U_INT16.
BUILTINS = [
    ("Boolean", "bool", "BOOLEAN", True),
    ("SByte", "int8_t", "SBYTE", True),
    ("Byte", "uint8_t", "BYTE", True),
    ("Int16", "int16_t", "INT16", True),
    ("UInt16", "uint16_t", "UINT16", True),
    ("Int32", "int32_t", "INT32", True),
    ("UInt32", "uint32_t", "UINT32", True),
    ("Int64", "int64_t", "INT64", True),
    ("UInt64", "uint64_t", "UINT64", True),
    ("Float", "float", "FLOAT", True),
    ("Double", "double", "DOUBLE", True),
    ("String", "uas_string", "STRING", False),
    ("DateTime", "uas_datetime", "DATE_TIME", True),
    ("Guid", "uas_guid", "GUID", True),
    ("ByteString", "uas_bytestring", "BYTE_STRING", False),
    ("XmlElement", "uas_xmlelement", "XML_ELEMENT", False),
    ("NodeId", "uas_nodeid", "NODE_ID", False),
    ("ExpandedNodeId", "uas_expandednodeid", "EXPANDED_NODE_ID", False),
    ("StatusCode", "uas_status", "STATUS_CODE", True),
    ("QualifiedName", "uas_qualifiedname", "QUALIFIED_NAME", False),
    ("LocalizedText", "uas_localizedtext", "LOCALIZED_TEXT", False),
    ("ExtensionObject", "uas_extensionobject", "EXTENSION_OBJECT", False),
    ("DataValue", "uas_datavalue", "DATA_VALUE", False),
    ("Variant", "uas_variant", "VARIANT", False),
    ("DiagnosticInfo", "uas_diagnosticinfo", "DIAGNOSTIC_INFO", False),
]
BUILTIN_ID = {b[0]: i + 1 for i, b in enumerate(BUILTINS)}
# opc: primitives of the binary schema; CharArray is the bsd's String.
OPC_PRIMITIVE = dict(BUILTIN_ID, CharArray=BUILTIN_ID["String"])

# Option set width -> (C type, descriptor kind, mask literal digits, suffix).
OPTION_WIDTHS = {
    8: ("uint8_t", "UAS_BUILTIN_BYTE", 2, "u"),
    16: ("uint16_t", "UAS_BUILTIN_UINT16", 4, "u"),
    32: ("uint32_t", "UAS_BUILTIN_UINT32", 8, "u"),
    64: ("uint64_t", "UAS_BUILTIN_UINT64", 16, "ull"),
}

# Opaque types whose DataType node is missing from Opc.Ua.NodeSet2.xml (they
# are published only in Opc.Ua.NodeSet2.Services.xml, which is not in the
# schema folder). There both are subtypes of BaseDataType (i=24), which
# Opc.Ua.Types.xsd confirms by typing them ua:Variant. Used only when the
# NodeSet has no answer, so a future NodeSet that has the nodes wins.
OPAQUE_FALLBACK = {"RsaEncryptedSecret": 24, "EccEncryptedSecret": 24}

# The minimal profile (UA_MINIMAL) carries only the descriptors its code
# names (UAS_TYPES_* / UAS_TYPE() in the files it compiles: the requests and
# responses of its services, the identity tokens and filters it decodes, the
# values it builds) and what those contain. In that build the other types
# have no index macro, so code that names one does not compile; an
# ExtensionObject of such a type is kept as its encoded body (decode.c).
MINIMAL_ROOTS = """
READ_REQUEST READ_RESPONSE WRITE_REQUEST WRITE_RESPONSE BROWSE_REQUEST BROWSE_RESPONSE
BROWSE_NEXT_REQUEST BROWSE_NEXT_RESPONSE TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST
TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE REGISTER_NODES_REQUEST REGISTER_NODES_RESPONSE
UNREGISTER_NODES_REQUEST UNREGISTER_NODES_RESPONSE CALL_REQUEST CALL_RESPONSE
PUBLISH_REQUEST PUBLISH_RESPONSE CREATE_MONITORED_ITEMS_REQUEST CREATE_MONITORED_ITEMS_RESPONSE
CREATE_SUBSCRIPTION_REQUEST CREATE_SUBSCRIPTION_RESPONSE MODIFY_SUBSCRIPTION_REQUEST
MODIFY_SUBSCRIPTION_RESPONSE SET_PUBLISHING_MODE_REQUEST SET_PUBLISHING_MODE_RESPONSE
DELETE_SUBSCRIPTIONS_REQUEST DELETE_SUBSCRIPTIONS_RESPONSE REPUBLISH_REQUEST REPUBLISH_RESPONSE
MODIFY_MONITORED_ITEMS_REQUEST MODIFY_MONITORED_ITEMS_RESPONSE DELETE_MONITORED_ITEMS_REQUEST
DELETE_MONITORED_ITEMS_RESPONSE SET_MONITORING_MODE_REQUEST SET_MONITORING_MODE_RESPONSE
CREATE_SESSION_REQUEST CREATE_SESSION_RESPONSE ACTIVATE_SESSION_REQUEST ACTIVATE_SESSION_RESPONSE
CLOSE_SESSION_REQUEST CLOSE_SESSION_RESPONSE CANCEL_REQUEST CANCEL_RESPONSE
GET_ENDPOINTS_REQUEST GET_ENDPOINTS_RESPONSE FIND_SERVERS_REQUEST FIND_SERVERS_RESPONSE
OPEN_SECURE_CHANNEL_REQUEST OPEN_SECURE_CHANNEL_RESPONSE CLOSE_SECURE_CHANNEL_REQUEST
SERVICE_FAULT REQUEST_HEADER ANONYMOUS_IDENTITY_TOKEN USER_NAME_IDENTITY_TOKEN
X509_IDENTITY_TOKEN DATA_CHANGE_FILTER DATA_CHANGE_NOTIFICATION STATUS_CHANGE_NOTIFICATION
ADDITIONAL_PARAMETERS_TYPE EPHEMERAL_KEY_TYPE ARGUMENT BUILD_INFO SERVER_STATUS_DATA_TYPE
SERVER_DIAGNOSTICS_SUMMARY_DATA_TYPE RANGE ENUM_VALUE_TYPE IDENTITY_MAPPING_RULE_TYPE
ROLE_PERMISSION_TYPE DATA_TYPE_ATTRIBUTES OBJECT_TYPE_ATTRIBUTES VARIABLE_TYPE_ATTRIBUTES
REFERENCE_TYPE_ATTRIBUTES VIEW_ATTRIBUTES GENERIC_ATTRIBUTES STRUCTURE_DEFINITION ENUM_DEFINITION
EVENT_FILTER EVENT_NOTIFICATION_LIST
""".split()

C_KEYWORDS = set(
    "auto break case char const continue default do double else enum extern "
    "float for goto if inline int long register restrict return short signed "
    "sizeof static struct switch typedef union unsigned void volatile while "
    "bool true false _Alignas _Alignof _Atomic _Bool _Complex _Generic "
    "_Imaginary _Noreturn _Static_assert _Thread_local".split()
)


def die(msg):
    sys.exit("gen_types.py: error: " + msg)


def snake(name):
    """CamelCase -> snake_case per the README (ThreeDVector -> three_d_vector,
    EUInformation -> eu_information, X509IdentityToken -> x509_identity_token)."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return s.lower()


def local(tag):
    return tag.split("}", 1)[-1]


def c_string(text):
    """A C string literal; non-ASCII goes out as octal UTF-8 bytes so the
    generated sources stay ASCII, and '??' is broken up so no trigraph forms."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "?" and out and out[-1] == "?":
            out.append("\\?")
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append("\\%03o" % byte)
    return '"' + "".join(out) + '"'


def wrap(items, first, indent, last, width=100):
    """Join items with ', ' into lines of at most width columns (an item that
    alone is longer stays whole)."""
    lines, line = [], first
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else last)
        if line == first:
            line += piece
        elif len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent + piece
        else:
            line += " " + piece
    lines.append(line)
    return "\n".join(lines) + "\n"


class Names:
    """One namespace for every identifier the generator invents, so two schema
    names that snake-case to the same C name stop the build instead of making
    a header that fails to compile (or, for macros, silently wins)."""

    def __init__(self, taken):
        self.owner = dict.fromkeys(taken, "a hand-written header")

    def add(self, ident, what):
        if ident in self.owner:
            die("name collision: %s (%s) and %s" % (ident, what, self.owner[ident]))
        self.owner[ident] = what
        return ident


def handwritten_identifiers():
    """uas_/UAS_ identifiers of stack/include/ua (comments stripped), which
    generated names must not reuse."""
    inc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "ua")
    if not os.path.isdir(inc):
        die("hand-written headers not found at stack/include/ua")
    found = set()
    for fn in sorted(os.listdir(inc)):
        if fn.endswith(".h"):
            with open(os.path.join(inc, fn), encoding="utf-8") as f:
                text = re.sub(r"/\*.*?\*/|//[^\n]*", "", f.read(), flags=re.S)
            found.update(re.findall(r"\b(?:uas|UAS)_\w+", text))
    return found


# ---------------------------------------------------------------------------
# Reading the schema


def read_nodeset(path):
    """Version, date and the builtin id (1..25) under every DataType."""
    root = ET.parse(path).getroot()
    model = root.find(UANS + "Models/" + UANS + "Model")
    if model is None or not model.get("Version") or not model.get("PublicationDate"):
        die("%s: no Model Version/PublicationDate" % os.path.basename(path))
    # Reference types are usually written as aliases ("HasSubtype").
    aliases = {a.get("Alias"): a.text.strip() for a in root.iter(UANS + "Alias")}
    # Parent of each DataType. HasSubtype (i=45) may be written on the parent
    # (forward) or on the subtype (IsForward="false"); normalise both.
    parent, known = {}, set()
    for node in root.iter(UANS + "UADataType"):
        nid = node.get("NodeId")
        known.add(nid)
        for ref in node.iter(UANS + "Reference"):
            if aliases.get(ref.get("ReferenceType"), ref.get("ReferenceType")) != "i=45":
                continue
            target = ref.text.strip()
            if ref.get("IsForward", "true") == "false":
                parent[nid] = target
            else:
                parent[target] = nid
    return model.get("Version"), model.get("PublicationDate")[:10], parent, known


def builtin_under(numeric_id, parent, known, name):
    nid, seen = "i=%d" % numeric_id, set()
    if nid not in known:
        if name in OPAQUE_FALLBACK:
            return OPAQUE_FALLBACK[name]
        die("OpaqueType %s (%s) has no DataType node in the NodeSet" % (name, nid))
    while True:
        m = re.fullmatch(r"i=(\d+)", nid)
        if m and 1 <= int(m.group(1)) <= 25:
            return int(m.group(1))
        if nid in seen or nid not in parent:
            die("OpaqueType %s: HasSubtype chain ends at %s, not a builtin" % (name, nid))
        seen.add(nid)
        nid = parent[nid]


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [row for row in csv.reader(f) if row]


class Schema:
    def __init__(self, schema_dir):
        def path(name):
            return os.path.join(schema_dir, name)

        self.version, self.date, parent, known = read_nodeset(path("Opc.Ua.NodeSet2.xml"))
        self.nodeids = [(r[0], int(r[1]), r[2]) for r in read_csv(path("NodeIds.csv"))]
        self.ids = {(n, cls): i for n, i, cls in self.nodeids}
        self.statuses = [(r[0], int(r[1], 16), r[2]) for r in read_csv(path("StatusCode.csv"))]

        root = ET.parse(path("Opc.Ua.Types.bsd")).getroot()
        self.opaques, self.enums, self.structs, self.builtin_structs = [], [], [], set()
        for el in root:
            kind, name = local(el.tag), el.get("Name")
            if kind == "OpaqueType":
                tid = self.type_id(name)
                self.opaques.append({"kind": "opaque", "name": name,
                                     "builtin": builtin_under(tid, parent, known, name)})
            elif kind == "EnumeratedType":
                self.enums.append(self.read_enum(el))
            elif kind == "StructuredType" and not el.get("BaseType"):
                # Wire layouts of builtins (NodeId, Variant, ...), hand-written.
                self.builtin_structs.add(name)
            elif kind == "StructuredType":
                self.structs.append(self.read_struct(el))
        self.by_name = {t["name"]: t for t in self.opaques + self.enums + self.structs}

    def type_id(self, name, required=True):
        tid = self.ids.get((name, "DataType"))
        if tid is None and required:
            die("NodeIds.csv has no DataType row for %s" % name)
        return tid

    def read_enum(self, el):
        name = el.get("Name")
        values = [(v.get("Name"), int(v.get("Value"), 0))
                  for v in el.findall(BSD + "EnumeratedValue")]
        return {"kind": "enum", "name": name, "option_set": el.get("IsOptionSet") == "true",
                "bits": int(el.get("LengthInBits", "32")), "values": values,
                # NodeIdType is the selector inside the NodeId encoding byte:
                # a wire-format detail with no DataType, so no descriptor.
                "type_id": self.type_id(name, required=False)}

    def read_struct(self, el):
        name = el.get("Name")
        fields = el.findall(BSD + "Field")
        # Derived structures already repeat the parent's fields (SourceType is
        # not reliable: some inherited fields lack it), so take all of them.
        counts = {f.get("LengthField") for f in fields if f.get("LengthField")}
        members = []
        for i, f in enumerate(fields):
            fname = f.get("Name")
            if fname in counts:
                continue
            length = f.get("LengthField")
            if length and (i == 0 or fields[i - 1].get("Name") != length
                           or fields[i - 1].get("TypeName") != "opc:Int32"):
                die("%s.%s: length field %s does not precede it" % (name, fname, length))
            for attr in ("SwitchField", "SwitchValue", "Length"):
                if f.get(attr):
                    die("%s.%s: %s is not supported in ExtensionObject structures"
                        % (name, fname, attr))
            members.append({"name": fname, "type": f.get("TypeName"), "array": bool(length)})
        return {"kind": "struct", "name": name, "members": members,
                "type_id": self.type_id(name),
                "encoding_id": self.ids.get((name + "_Encoding_DefaultBinary", "Object"), 0)}


# ---------------------------------------------------------------------------
# Generating


class Generator:
    def __init__(self, schema):
        self.s = schema
        self.names = Names(handwritten_identifiers())
        self.header = ("/* DO NOT EDIT. Generated by stack/codegen/gen_types.py from the "
                       "OPC UA %s schema (%s). */\n" % (schema.version, schema.date))
        # Descriptor order: builtins, enums and option sets, structures.
        self.descriptors = [
            {"kind": "builtin", "name": b[0], "type_id": i + 1,
             "index": self.names.add("UAS_TYPES_" + b[2], "builtin " + b[0])}
            for i, b in enumerate(BUILTINS)]
        for t in schema.opaques + schema.enums + schema.structs:
            t["c"] = self.names.add("uas_" + snake(t["name"]), "type " + t["name"])
            if t["kind"] != "opaque" and t["type_id"] is not None:
                t["index"] = self.names.add("UAS_TYPES_" + snake(t["name"]).upper(),
                                            "type " + t["name"])
        # Builtins, then enums and option sets, then structures.
        self.descriptors += [t for t in schema.enums if "index" in t] + schema.structs
        for i, d in enumerate(self.descriptors):
            d["pos"] = i
        for fixed in ("UAS_TYPES_COUNT", "UAS_TYPES_ENCODABLE_COUNT", "UAS_TYPE",
                      "uas_types", "uas_types_by_type_id", "uas_types_by_encoding_id",
                      "uas_types_by_name"):
            self.names.add(fixed, "generated table")
        self.pointer_free_memo = {}
        self.minimal_positions()

    def minimal_positions(self):
        """Mark the descriptors of the minimal profile (every builtin, the
        roots and what they contain) with their index in its uas_types[]."""
        by_index = {d["index"]: d for d in self.descriptors}
        todo = [d["index"] for d in self.descriptors if d["kind"] == "builtin"]
        for root in MINIMAL_ROOTS:
            if "UAS_TYPES_" + root not in by_index:
                die("MINIMAL_ROOTS: no type %s" % root)
            todo.append("UAS_TYPES_" + root)
        keep = set()
        while todo:
            index = todo.pop()
            if index in keep:
                continue
            keep.add(index)
            d = by_index[index]
            if d["kind"] == "struct":
                todo.extend(m[1] for m in self.members(d))
        pos = 0
        for d in self.descriptors:
            if d["index"] in keep:
                d["min_pos"] = pos
                pos += 1
            else:
                d["min_pos"] = None

    def members(self, struct):
        """(field, descriptor index macro, is array) of each member."""
        return [f[2] for f in self.fields(struct) if f[2]]

    # -- type resolution ---------------------------------------------------

    def resolve(self, typename, where):
        """(C type, descriptor index macro, pointer-free) of a bsd TypeName."""
        prefix, _, name = typename.partition(":")
        if prefix == "opc" and name in OPC_PRIMITIVE:
            return self.builtin(OPC_PRIMITIVE[name])
        if prefix in ("ua", "tns"):
            t = self.s.by_name.get(name, {"kind": None})
            if t["kind"] == "opaque":
                c, index, pf = self.builtin(t["builtin"])
                # An opaque type that is itself a builtin (StatusCode) keeps
                # the builtin C type; others document themselves by typedef.
                return (c if name in BUILTIN_ID else t["c"]), index, pf
            if t["kind"] == "enum" and "index" in t:
                return t["c"], t["index"], True
            if t["kind"] == "struct":
                return t["c"], t["index"], self.pointer_free(t)
            if name in self.s.builtin_structs and name in BUILTIN_ID:
                return self.builtin(BUILTIN_ID[name])
        die("%s: unsupported field type %s" % (where, typename))

    @staticmethod
    def builtin(bid):
        _, c, index, pf = BUILTINS[bid - 1]
        return c, "UAS_TYPES_" + index, pf

    def pointer_free(self, struct):
        key = struct["name"]
        if key not in self.pointer_free_memo:
            self.pointer_free_memo[key] = False  # struct_order() rejects by-value cycles
            self.pointer_free_memo[key] = all(
                not m["array"] and self.resolve(m["type"], key)[2]
                for m in struct["members"])
        return self.pointer_free_memo[key]

    def fields(self, struct):
        """C declarations of a structure: (C type, field name, member or None)."""
        out, seen = [], Names(())
        for m in struct["members"]:
            where = "%s.%s" % (struct["name"], m["name"])
            field = snake(m["name"])
            if field in C_KEYWORDS:
                field += "_"
            c, index, _ = self.resolve(m["type"], where)
            if m["array"]:
                seen.add(field + "_count", where)
                out.append(("size_t ", field + "_count", None))
                out.append((c + " *", field, (field, index, True)))
            else:
                out.append((c + " ", field, (field, index, False)))
            seen.add(field, where)
        return out

    def struct_order(self):
        """Structures after everything they contain by value (depth-first in
        document order, so the result is stable and close to the bsd)."""
        order, state = [], {}

        def visit(t, path):
            if state.get(t["name"]) == "done":
                return
            if state.get(t["name"]) == "active":
                die("structures contain each other by value: " + " -> ".join(path))
            state[t["name"]] = "active"
            for m in t["members"]:
                dep = self.s.by_name.get(m["type"].partition(":")[2])
                if not m["array"] and dep is not None and dep["kind"] == "struct":
                    visit(dep, path + [dep["name"]])
            state[t["name"]] = "done"
            order.append(t)

        for t in self.s.structs:
            visit(t, [t["name"]])
        return order

    # -- files -------------------------------------------------------------

    def statuscodes_h(self):
        out = [self.header, "#ifndef UA_STATUSCODES_H\n#define UA_STATUSCODES_H\n\n"]
        for name, code, _ in self.s.statuses:
            macro = self.names.add("UAS_" + snake(name).upper(), "status " + name)
            out.append("#define %s 0x%08Xu\n" % (macro, code))
        out.append("\n#endif\n")
        return "".join(out)

    def statuscodes_c(self):
        rows = sorted(self.s.statuses, key=lambda r: r[1])
        for a, b in zip(rows, rows[1:]):
            if a[1] == b[1]:
                die("status codes %s and %s share 0x%08X" % (a[0], b[0], a[1]))
        names, descs, entries = [], [], []
        name_len = desc_len = 0
        for name, code, desc in rows:
            if code & 0xFFFF:
                die("status code %s has info bits set (0x%08X)" % (name, code))
            entries.append((code >> 16, name_len, desc_len, name))
            names.append(name)
            descs.append(desc)
            name_len += len(name.encode()) + 1
            desc_len += len(desc.encode()) + 1
        if name_len > 0xFFFF or desc_len > 0xFFFF:
            die("status code texts exceed 16-bit offsets")
        out = [self.header, "#include <stddef.h>\n#include <stdint.h>\n\n#include <ua/status.h>\n\n",
               "/* Every name, then every description, one after the other (each ends in\n"
               " * NUL); an entry holds the code's upper half and 16-bit offsets into\n"
               " * them: 6 bytes instead of two pointers and a code (24 on 64 bits). The\n"
               " * minimal profile (UA_MINIMAL) has neither (below). */\n"
               "#ifndef UAS_MINIMAL\n"
               "static const char status_names[%d] =\n" % name_len]
        out.extend("    %s \"\\0\"\n" % c_string(n) for n in names[:-1])
        out.append("    %s;\n\n" % c_string(names[-1]))
        out.append("static const char status_descriptions[%d] =\n" % desc_len)
        out.extend("    %s \"\\0\"\n" % c_string(d) for d in descs[:-1])
        out.append("    %s;\n\n" % c_string(descs[-1]))
        out.append("typedef struct status_entry {\n    uint16_t code; /* the upper 16 bits */\n"
                   "    uint16_t name;\n    uint16_t description;\n} status_entry;\n\n"
                   "/* Sorted by code for the binary search below. */\n"
                   "static const status_entry status_table[] = {\n")
        for code, no, do, name in entries:
            out.append("    {0x%04Xu, %d, %d}, /* %s */\n" % (code, no, do, name))
        out.append("""};

/* The low 16 bits are info bits (limit bits, overflow, ...) that qualify a
 * code without changing its meaning, so they do not take part in the lookup. */
static const status_entry *status_find(uas_status s)
{
    size_t lo = 0, hi = sizeof(status_table) / sizeof(status_table[0]);
    uint16_t code = (uint16_t)(s >> 16);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (status_table[mid].code == code)
            return &status_table[mid];
        if (status_table[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *uas_status_name(uas_status s)
{
    const status_entry *e = status_find(s);
    return e ? status_names + e->name : "Unknown";
}

const char *uas_status_description(uas_status s)
{
    const status_entry *e = status_find(s);
    return e ? status_descriptions + e->description : "";
}
#else
/* The minimal profile: a code is named by its value, "0x80340000" (info
 * bits included), which the specification's table translates; the names
 * and their table would be 7.8 KB of a device's program. Four buffers per
 * thread, so one log line can name four codes. */
const char *uas_status_name(uas_status s)
{
    static _Thread_local char buf[4][11];
    static _Thread_local unsigned next;
    char *p = buf[next++ & 3u];
    p[0] = '0';
    p[1] = 'x';
    for (int i = 0; i < 8; i++)
        p[2 + i] = "0123456789ABCDEF"[(s >> (28 - 4 * i)) & 0xFu];
    p[10] = '\\0';
    return p;
}

const char *uas_status_description(uas_status s)
{
    (void)s;
    return "";
}
#endif
""")
        return "".join(out)

    def nodeids_h(self):
        out = [self.header, "#ifndef UA_NODEIDS_H\n#define UA_NODEIDS_H\n\n",
               "/* Every numeric identifier of namespace 0 (NodeIds.csv); not every one\n"
               " * exists in the address space. */\n"]
        for name, nid, _ in self.s.nodeids:
            macro = self.names.add("UAS_NS0ID_" + name.upper(), "node id " + name)
            out.append("#define %s %du\n" % (macro, nid))
        out.append("\n#endif\n")
        return "".join(out)

    def types_gen_h(self):
        s = self.s
        out = [self.header, """#ifndef UA_TYPES_GEN_H
#define UA_TYPES_GEN_H

/* Needs uas_type from <ua/types.h>, which includes this file at the right spot. */
#ifndef UA_TYPES_H
#error "include <ua/types.h> instead of <ua/types_gen.h>"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/builtin.h>

/* Opaque types: a builtin under another name. */
"""]
        for t in s.opaques:
            out.append("typedef %s %s;\n" % (BUILTINS[t["builtin"] - 1][1], t["c"]))

        out.append("\n/* Enumerations (int32 in memory and on the wire) and option sets\n"
                   " * (unsigned masks of their declared width). */\n")
        for t in s.enums:
            prefix = "UAS_" + snake(t["name"]).upper() + "_"
            consts = [(self.names.add(prefix + snake(v).upper(), "%s.%s" % (t["name"], v)), n)
                      for v, n in t["values"]]
            if t["type_id"] is None:
                out.append("/* Wire-format detail without a DataType: no descriptor. */\n")
            if t["option_set"]:
                if t["bits"] not in OPTION_WIDTHS:
                    die("option set %s has width %d" % (t["name"], t["bits"]))
                ctype, _, digits, suffix = OPTION_WIDTHS[t["bits"]]
                out.append("typedef %s %s;\n" % (ctype, t["c"]))
                for c, n in consts:
                    if not 0 <= n < 1 << t["bits"]:
                        die("%s: %s does not fit %d bits" % (t["name"], c, t["bits"]))
                    out.append("#define %s 0x%0*X%s\n" % (c, digits, n, suffix))
            else:
                out.append("typedef int32_t %s;\n" % t["c"])
                for c, n in consts:
                    if not -(1 << 31) <= n < 1 << 31:
                        die("%s: %s does not fit an int" % (t["name"], c))
                # An empty C enum is invalid; Enumeration (the abstract base) has none.
                if consts:
                    out.append("enum {\n")
                    out.extend("    %s = %d,\n" % c for c in consts)
                    out.append("};\n")
            out.append("\n")

        # Forward typedefs first, so pointers (arrays) may name any structure;
        # only by-value containment then constrains the definition order.
        out.append("/* Structures (ExtensionObject-encoded, fields in wire order). */\n")
        out.extend("typedef struct %s %s;\n" % (t["c"], t["c"]) for t in s.structs)
        for t in self.struct_order():
            out.append("\nstruct %s {\n" % t["c"])
            fields = self.fields(t)
            for c, field, _ in fields:
                out.append("    %s%s;\n" % (c, field))
            if not fields:
                out.append("    uint8_t reserved_; /* C has no empty structs */\n")
            out.append("};\n")

        enc = self.encodable()
        mini = [d for d in self.descriptors if d["min_pos"] is not None]
        out.append("\n/* Indexes into uas_types[]. The minimal profile (UA_MINIMAL) has only\n"
                   " * the descriptors its services reach (gen_types.py, MINIMAL_ROOTS). */\n"
                   "#ifdef UAS_MINIMAL\n")
        for d in mini:
            out.append("#define %s %d\n" % (d["index"], d["min_pos"]))
        out.append("#define UAS_TYPES_COUNT %d\n#define UAS_TYPES_ENCODABLE_COUNT %d\n#else\n"
                   % (len(mini), sum(1 for d in enc if d["min_pos"] is not None)))
        for d in self.descriptors:
            out.append("#define %s %d\n" % (d["index"], d["pos"]))
        out.append("#define UAS_TYPES_COUNT %d\n#define UAS_TYPES_ENCODABLE_COUNT %d\n#endif\n"
                   % (len(self.descriptors), len(enc)))
        out.append("""
extern const uas_type uas_types[UAS_TYPES_COUNT];
#define UAS_TYPE(NAME) (&uas_types[UAS_TYPES_##NAME])

/* A member's descriptor (members hold 16-bit indexes, not pointers). */
static inline const uas_type *uas_member_type(const uas_member *m)
{
    return &uas_types[m->type_index];
}

/* The name of member i of t, for printing; "" in the minimal profile
 * (UA_MINIMAL), which has no member names. The names are a table beside
 * uas_types[], so a descriptor stays 32 bytes. */
#ifndef UAS_MINIMAL
extern const char *const *const uas_member_names[UAS_TYPES_COUNT];
#endif
static inline const char *uas_member_name(const uas_type *t, uint16_t i)
{
#ifdef UAS_MINIMAL
    (void)t, (void)i;
    return "";
#else
    size_t k = ((uintptr_t)t - (uintptr_t)uas_types) / sizeof(uas_type);
    if (k >= UAS_TYPES_COUNT || &uas_types[k] != t || i >= t->member_count)
        return ""; /* not a generated descriptor */
    return uas_member_names[k][i];
#endif
}

/* Lookup tables for binary search, each a list of indexes into uas_types[]:
 * sorted by type_id, by binary_encoding_id (only the types that have one) and
 * by strcmp of the name. */
extern const uint16_t uas_types_by_type_id[UAS_TYPES_COUNT];
extern const uint16_t uas_types_by_encoding_id[UAS_TYPES_ENCODABLE_COUNT];
extern const uint16_t uas_types_by_name[UAS_TYPES_COUNT];

#endif
""")
        return "".join(out)

    def encodable(self):
        enc = sorted((d for d in self.descriptors if d.get("encoding_id")),
                     key=lambda d: d["encoding_id"])
        for a, b in zip(enc, enc[1:]):
            if a["encoding_id"] == b["encoding_id"]:
                die("%s and %s share encoding id %d" % (a["name"], b["name"], a["encoding_id"]))
        return enc

    def types_gen_c(self):
        out = [self.header, "#include <stddef.h>\n\n#include <ua/types.h>\n\n",
               "/* Member names serve printing (uacli, uas_member_name); the minimal\n"
               " * profile (UA_MINIMAL) has none. */\n"]
        for t in self.s.structs:
            members = self.members(t)
            if not members:
                continue
            out.append("#ifndef UAS_MINIMAL\n")
            out.append(wrap(['"%s"' % field for field, _, _ in members],
                            "static const char *const %s_names[%d] = {" % (t["c"], len(members)),
                            "    ", "};"))
            if t["min_pos"] is not None:
                out.append("#endif\n")
            out.append("static const uas_member %s_members[%d] = {\n" % (t["c"], len(members)))
            for field, index, array in members:
                items = [".type_index = %s" % index]
                if array:
                    items += [".offset = offsetof(%s, %s_count)" % (t["c"], field),
                              ".array_offset = offsetof(%s, %s)" % (t["c"], field),
                              ".is_array = true"]
                else:
                    items.append(".offset = offsetof(%s, %s)" % (t["c"], field))
                out.append(wrap(items, "    {", "     ", "},"))
            out.append("};\n")
            if t["min_pos"] is None:
                out.append("#endif\n")
            out.append("\n")

        out.append("const uas_type uas_types[UAS_TYPES_COUNT] = {\n")
        for d in self.descriptors:
            if d["kind"] == "builtin":
                _, c, _, pf = BUILTINS[d["type_id"] - 1]
                fields = [("type_id", d["type_id"]), ("size", "sizeof(%s)" % c),
                          ("kind", "UAS_BUILTIN_" + d["name"].upper()), ("pointer_free", pf)]
            elif d["kind"] == "enum":
                kind = OPTION_WIDTHS[d["bits"]][1] if d["option_set"] else "UAS_KIND_ENUM"
                fields = [("type_id", d["type_id"]), ("size", "sizeof(%s)" % d["c"]),
                          ("kind", kind), ("pointer_free", True)]
            else:
                n = len(d["members"])
                fields = [("type_id", d["type_id"]), ("binary_encoding_id", d["encoding_id"]),
                          ("size", "sizeof(%s)" % d["c"]), ("kind", "UAS_KIND_STRUCT"),
                          ("pointer_free", self.pointer_free(d)), ("member_count", n),
                          ("members", "%s_members" % d["c"] if n else "NULL")]
            items = ['.name = "%s"' % d["name"]] + [
                ".%s = %s" % (k, str(v).lower() if isinstance(v, bool) else v)
                for k, v in fields]
            if d["min_pos"] is None:
                out.append("#ifndef UAS_MINIMAL\n")
            out.append(wrap(items, "    [%s] = {" % d["index"], "        ", "},"))
            if d["min_pos"] is None:
                out.append("#endif\n")
        out.append("};\n")
        out.append("\n#ifndef UAS_MINIMAL\n"
                   "const char *const *const uas_member_names[UAS_TYPES_COUNT] = {\n")
        for d in self.descriptors:
            if d["kind"] == "struct" and d["members"]:
                out.append("    [%s] = %s_names,\n" % (d["index"], d["c"]))
        out.append("};\n#endif\n")

        tables = [
            ("uas_types_by_type_id", "UAS_TYPES_COUNT",
             sorted(self.descriptors, key=lambda d: d["type_id"])),
            ("uas_types_by_encoding_id", "UAS_TYPES_ENCODABLE_COUNT", self.encodable()),
            ("uas_types_by_name", "UAS_TYPES_COUNT",
             sorted(self.descriptors, key=lambda d: d["name"].encode())),
        ]
        ids = [d["type_id"] for d in tables[0][2]]
        names = [d["name"] for d in tables[2][2]]
        for what, keys in (("type id", ids), ("name", names)):
            for a, b in zip(keys, keys[1:]):
                if a == b:
                    die("two descriptors share the %s %s" % (what, a))
        for table, size, entries in tables:
            out.append("\nconst uint16_t %s[%s] = {\n#ifdef UAS_MINIMAL\n" % (table, size))
            out.extend("    %s,\n" % d["index"] for d in entries if d["min_pos"] is not None)
            out.append("#else\n")
            out.extend("    %s,\n" % d["index"] for d in entries)
            out.append("#endif\n};\n")
        return "".join(out)


def write(path, text):
    """Write only on change, so a no-op regeneration does not trigger rebuilds."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schema", required=True, help="folder with the OPC UA schema files")
    ap.add_argument("--out", required=True, help="output folder (stack/gen)")
    args = ap.parse_args()

    gen = Generator(Schema(args.schema))
    # Render everything before writing anything, so a collision or schema
    # error leaves the previous output untouched.
    files = {
        "include/ua/statuscodes.h": gen.statuscodes_h(),
        "src/statuscodes.c": gen.statuscodes_c(),
        "include/ua/nodeids.h": gen.nodeids_h(),
        "include/ua/types_gen.h": gen.types_gen_h(),
        "src/types_gen.c": gen.types_gen_c(),
    }
    for rel, text in files.items():
        write(os.path.join(args.out, *rel.split("/")), text)


if __name__ == "__main__":
    main()
