#!/usr/bin/env python3
"""Generate the namespace 0 address space of uastack as constant C tables.

Reads Opc.Ua.NodeSet2.xml (nodes, attributes, references, values, DataType
definitions), Opc.Ua.Types.bsd (binary layout of the structures found in
values and definitions) and NodeIds.csv (DefaultBinary encoding ids), and
writes two interchangeable table sets, each defining the symbols declared in
server/src/ns0.h:

  ns0_full.c     every node of the NodeSet
  ns0_reduced.c  the reduced set for small devices (rule: reduced_set())
  ns0_minimal.c  the minimal profile's set (UA_MINIMAL: reduced_set(minimal=True))

Nodes are rows of one sorted array; references, strings, numbers and values
live in shared pools that rows index, so the tables are plain data: no
pointers (no load-time relocations in position-independent code), no code
per node. Values and DataTypeDefinitions are stored as the OPC UA binary
encoding of a Variant, produced here from the XML encoding of the NodeSet.

The contract (outputs, reduced set, value encoding) is in
stack/codegen/README.md. Output is deterministic and independent of the
schema and output paths. Python 3 standard library only.

Usage: gen_ns0.py --schema DIR --out DIR   (DIR: server/gen)
"""

import argparse
import base64
import csv
import datetime
import math
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET

UANS = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"
TNS = "{http://opcfoundation.org/UA/2008/02/Types.xsd}"
BSD = "{http://opcfoundation.org/BinarySchema/}"

# Must match UAS_NS0_LAYOUT in server/src/ns0.h (the column order of the rows).
LAYOUT = 1
NONE = 0xFFFFFFFF

BUILTINS = ["Boolean", "SByte", "Byte", "Int16", "UInt16", "Int32", "UInt32", "Int64",
            "UInt64", "Float", "Double", "String", "DateTime", "Guid", "ByteString",
            "XmlElement", "NodeId", "ExpandedNodeId", "StatusCode", "QualifiedName",
            "LocalizedText", "ExtensionObject", "DataValue", "Variant", "DiagnosticInfo"]
BUILTIN_ID = {name: i + 1 for i, name in enumerate(BUILTINS)}
INT_FORMATS = {"Boolean": "<B", "SByte": "<b", "Byte": "<B", "Int16": "<h", "UInt16": "<H",
               "Int32": "<i", "UInt32": "<I", "Int64": "<q", "UInt64": "<Q",
               "StatusCode": "<I", "DateTime": "<q"}
OPTION_SET_BUILTIN = {8: "Byte", 16: "UInt16", 32: "UInt32", 64: "UInt64"}

NODE_CLASSES = {"UAObject": 1, "UAVariable": 2, "UAMethod": 4, "UAObjectType": 8,
                "UAVariableType": 16, "UAReferenceType": 32, "UADataType": 64, "UAView": 128}
OBJECT, VARIABLE, METHOD, OBJECT_TYPE, VARIABLE_TYPE, REFERENCE_TYPE, DATA_TYPE, VIEW = (
    1, 2, 4, 8, 16, 32, 64, 128)

# Flags of uas_ns0_node (server/src/ns0.h).
ABSTRACT, SYMMETRIC, EXECUTABLE, HISTORIZING, DEPRECATED, CONTAINS_NO_LOOPS = 1, 2, 4, 8, 16, 32

# Well-known ids used by the reduced-set rule and the definitions.
HAS_SUBTYPE, HAS_TYPE_DEFINITION, HAS_MODELLING_RULE, HAS_PROPERTY = 45, 40, 37, 46
HAS_ENCODING = 38
AGGREGATES, HIERARCHICAL = 44, 33
MANDATORY, MODELLING_RULE_TYPE = 78, 77
STRUCTURE, ENUMERATION, UNION = 22, 29, 12756
# StructureType enumeration values (Part 3, 8.48).
ST_STRUCTURE, ST_OPTIONAL, ST_UNION, ST_SUBTYPED, ST_UNION_SUBTYPED = 0, 1, 2, 3, 4

# Reduced set seeds: the root folders, the type folders and the Server object.
REDUCED_FOLDERS = [84, 85, 86, 87, 88, 89, 90, 91]  # Root Objects Types Views, 4 type folders
REDUCED_SERVER = 2253
# Kept with every Aggregates child, recursively, whether mandatory or not.
REDUCED_WITH_ALL_CHILDREN = [11704]  # Server/ServerCapabilities/OperationLimits
# The event types the server itself reports (BaseEventType, SystemEventType,
# EventQueueOverflowEventType), with their instance declarations: without
# them its events fail OfType and select clauses on the reduced build.
REDUCED_EVENT_TYPES = [2041, 2130, 3035]


def die(msg):
    sys.exit("gen_ns0.py: error: " + msg)


def local(tag):
    return tag.split("}", 1)[-1]


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [row for row in csv.reader(f) if row]


def parse_nodeid(text, where):
    """NodeId string (i=, s=, g=, b=, optional ns=) -> (ns, kind, id)."""
    text = text.strip()
    m = re.fullmatch(r"(?:ns=(\d+);)?([isgb])=(.*)", text, re.S)
    if not m:
        die("%s: malformed NodeId %r" % (where, text))
    ns, kind, ident = int(m.group(1) or 0), m.group(2), m.group(3)
    if kind == "i":
        ident = int(ident)
        if not 0 <= ident <= 0xFFFFFFFF:
            die("%s: NodeId %r out of range" % (where, text))
    elif kind == "b":
        ident = base64.b64decode(ident, validate=True)
    return (ns, kind, ident)


# ---------------------------------------------------------------------------
# Opc.Ua.Types.bsd: the binary layout walked by the structure encoder


class Bsd:
    def __init__(self, path, type_ids, supertype):
        root = ET.parse(path).getroot()
        self.structs, self.enums, self.opaques = {}, {}, {}
        for el in root:
            kind, name = local(el.tag), el.get("Name")
            if kind == "StructuredType" and el.get("BaseType"):
                fields = el.findall(BSD + "Field")
                counts = {f.get("LengthField") for f in fields if f.get("LengthField")}
                members = []
                for f in fields:
                    for attr in ("SwitchField", "SwitchValue", "Length"):
                        if f.get(attr):
                            die("bsd %s.%s: %s is not supported" % (name, f.get("Name"), attr))
                    if f.get("Name") not in counts:
                        members.append((f.get("Name"), f.get("TypeName").split(":", 1)[1],
                                        bool(f.get("LengthField"))))
                self.structs[name] = members
            elif kind == "EnumeratedType":
                bits = int(el.get("LengthInBits", "32"))
                self.enums[name] = (OPTION_SET_BUILTIN[bits] if el.get("IsOptionSet") == "true"
                                    else "Int32")
            elif kind == "OpaqueType":
                self.opaques[name] = None
        # The builtin under each opaque type: HasSubtype chain of its DataType.
        for name in self.opaques:
            if name in BUILTIN_ID:
                self.opaques[name] = name
                continue
            nid, seen = type_ids.get(name), set()
            while nid is not None and not 1 <= nid <= 25 and nid not in seen:
                seen.add(nid)
                nid = supertype.get(nid)
            # Opaque types without a node in this NodeSet (Services only) are
            # left unresolved; encoding one is an error.
            self.opaques[name] = BUILTINS[nid - 1] if nid is not None and 1 <= nid <= 25 else None

    def kind(self, name):
        """('builtin', B) | ('struct', fields) for a bsd type name."""
        if name == "CharArray":
            return ("builtin", "String")
        if name in BUILTIN_ID:
            return ("builtin", name)
        if name in self.enums:
            return ("builtin", self.enums[name])
        if name in self.opaques:
            if self.opaques[name] is None:
                die("bsd OpaqueType %s: no builtin found" % name)
            return ("builtin", self.opaques[name])
        if name in self.structs:
            return ("struct", self.structs[name])
        die("bsd type %s is unknown" % name)


# ---------------------------------------------------------------------------
# Binary encoding (Part 6, 5.2). Python values: numbers, str/None, bytes/None,
# NodeId (ns, kind, id), LocalizedText (locale|None, text|None), QualifiedName
# (ns, name), ExtensionObject (type name, dict) or None, Variant (builtin,
# is_array, value) or None, structures as dicts (missing field = default).


class Encoder:
    def __init__(self, bsd, encoding_ids):
        self.bsd = bsd
        self.encoding_ids = encoding_ids  # bsd name -> DefaultBinary id

    def string(self, v):
        if v is None:
            return struct.pack("<i", -1)
        if isinstance(v, str):
            v = v.encode("utf-8")
        return struct.pack("<i", len(v)) + v

    def nodeid(self, v, flags=0):
        ns, kind, ident = v
        if kind == "i":
            if ns == 0 and ident <= 0xFF and not flags:
                return struct.pack("<BB", 0, ident)
            if ns <= 0xFF and ident <= 0xFFFF:
                return struct.pack("<BBH", 1 | flags, ns, ident)
            return struct.pack("<BHI", 2 | flags, ns, ident)
        if kind == "s":
            return struct.pack("<BH", 3 | flags, ns) + self.string(ident)
        if kind == "g":
            return struct.pack("<BH", 4 | flags, ns) + self.guid(ident)
        return struct.pack("<BH", 5 | flags, ns) + self.string(ident)

    @staticmethod
    def guid(text):
        h = text.replace("-", "").strip("{}")
        if len(h) != 32:
            die("malformed Guid %r" % text)
        b = bytes.fromhex(h)
        return struct.pack("<IHH", int(h[0:8], 16), int(h[8:12], 16), int(h[12:16], 16)) + b[8:]

    def builtin(self, name, v):
        if name in INT_FORMATS:
            return struct.pack(INT_FORMATS[name], int(v or 0))
        if name in ("Float", "Double"):
            return struct.pack("<f" if name == "Float" else "<d", float(v or 0.0))
        if name in ("String", "ByteString", "XmlElement"):
            return self.string(v)
        if name == "Guid":
            return self.guid(v or "00000000-0000-0000-0000-000000000000")
        if name == "NodeId":
            return self.nodeid(v or (0, "i", 0))
        if name == "ExpandedNodeId":
            return self.nodeid(v or (0, "i", 0))
        if name == "QualifiedName":
            ns, text = v or (0, None)
            return struct.pack("<H", ns) + self.string(text)
        if name == "LocalizedText":
            locale, text = v or (None, None)
            mask = (1 if locale is not None else 0) | (2 if text is not None else 0)
            out = struct.pack("<B", mask)
            if locale is not None:
                out += self.string(locale)
            if text is not None:
                out += self.string(text)
            return out
        if name == "ExtensionObject":
            if v is None:
                return self.nodeid((0, "i", 0)) + b"\x00"
            tname, fields = v
            if tname not in self.encoding_ids:
                die("structure %s has no DefaultBinary encoding id" % tname)
            body = self.struct(tname, fields)
            return (self.nodeid((0, "i", self.encoding_ids[tname])) + b"\x01"
                    + struct.pack("<i", len(body)) + body)
        if name == "Variant":
            return self.variant(v)
        die("encoding builtin %s is not supported" % name)

    def variant(self, v):
        if v is None:
            return b"\x00"
        tname, is_array, value = v
        if tname == "Variant" and not is_array:
            die("a Variant cannot hold a scalar Variant")
        tid = BUILTIN_ID[tname]
        if not is_array:
            return struct.pack("<B", tid) + self.builtin(tname, value)
        if value is None:
            return struct.pack("<Bi", tid | 0x80, -1)
        return (struct.pack("<Bi", tid | 0x80, len(value))
                + b"".join(self.builtin(tname, x) for x in value))

    def field(self, tname, v):
        kind, arg = self.bsd.kind(tname)
        return self.builtin(arg, v) if kind == "builtin" else self.struct(tname, v)

    def struct(self, tname, value):
        fields = self.bsd.structs.get(tname)
        if fields is None:
            die("structure %s is not in Opc.Ua.Types.bsd" % tname)
        value = value or {}
        unknown = set(value) - {f[0] for f in fields}
        if unknown:
            die("structure %s has no field(s) %s" % (tname, ", ".join(sorted(unknown))))
        out = []
        for fname, ftype, is_array in fields:
            v = value.get(fname)
            if not is_array:
                out.append(self.field(ftype, v))
            elif v is None:
                out.append(struct.pack("<i", -1))
            else:
                out.append(struct.pack("<i", len(v)))
                out.extend(self.field(ftype, x) for x in v)
        return b"".join(out)


# ---------------------------------------------------------------------------
# XML encoding (Opc.Ua.Types.xsd) -> Python values


EPOCH_1601 = datetime.datetime(1601, 1, 1, tzinfo=datetime.timezone.utc)


def xml_datetime(text):
    text = text.strip()
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?", text)
    if not m:
        die("malformed DateTime %r" % text)
    dt = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    tz = m.group(3) or "Z"
    offset = 0 if tz == "Z" else (1 if tz[0] == "+" else -1) * (int(tz[1:3]) * 60 + int(tz[4:6]))
    dt = dt.replace(tzinfo=datetime.timezone(datetime.timedelta(minutes=offset)))
    delta = dt - EPOCH_1601
    ticks = (delta.days * 86400 + delta.seconds) * 10_000_000
    if m.group(2):
        ticks += int((m.group(2)[1:] + "0000000")[:7])  # 100 ns digits
    return ticks


class XmlReader:
    def __init__(self, bsd, xml_type_ids):
        self.bsd = bsd
        self.xml_type_ids = xml_type_ids  # bsd name -> set of acceptable TypeIds

    @staticmethod
    def children(el, where, allowed):
        found = {}
        for c in el:
            name = local(c.tag)
            if c.tag != TNS + name or name not in allowed or name in found:
                die("%s: unexpected element %s" % (where, c.tag))
            found[name] = c
        return found

    def builtin(self, tname, el, where):
        text = el.text or ""
        if tname == "Boolean":
            t = text.strip()
            if t not in ("true", "false", "1", "0"):
                die("%s: malformed Boolean %r" % (where, t))
            return t in ("true", "1")
        if tname in INT_FORMATS and tname not in ("DateTime", "StatusCode"):
            return int(text.strip())
        if tname in ("Float", "Double"):
            t = text.strip()
            special = {"INF": math.inf, "-INF": -math.inf, "NaN": math.nan}
            return special[t] if t in special else float(t)
        if tname == "String":
            return text
        if tname == "DateTime":
            return xml_datetime(text)
        if tname == "ByteString":
            return base64.b64decode(re.sub(r"\s+", "", text), validate=True)
        if tname == "Guid":
            c = self.children(el, where, {"String"})
            return (c["String"].text or "").strip() if "String" in c else None
        if tname in ("NodeId", "ExpandedNodeId"):
            c = self.children(el, where, {"Identifier"})
            if "Identifier" not in c:
                return None
            return parse_nodeid(c["Identifier"].text or "", where)
        if tname == "StatusCode":
            c = self.children(el, where, {"Code"})
            return int(c["Code"].text.strip(), 0) if "Code" in c else 0
        if tname == "QualifiedName":
            c = self.children(el, where, {"NamespaceIndex", "Name"})
            ns = int(c["NamespaceIndex"].text.strip()) if "NamespaceIndex" in c else 0
            return (ns, (c["Name"].text or "") if "Name" in c else None)
        if tname == "LocalizedText":
            c = self.children(el, where, {"Locale", "Text"})
            return ((c["Locale"].text or "") if "Locale" in c else None,
                    (c["Text"].text or "") if "Text" in c else None)
        if tname == "ExtensionObject":
            return self.extension_object(el, where)
        if tname == "Variant":
            c = self.children(el, where, {"Value"})
            return self.variant(c["Value"], where) if "Value" in c else None
        die("%s: XML value of type %s is not supported" % (where, tname))

    def extension_object(self, el, where):
        c = self.children(el, where, {"TypeId", "Body"})
        if "Body" not in c:
            return None
        body = list(c["Body"])
        if len(body) != 1 or body[0].tag != TNS + local(body[0].tag):
            die("%s: ExtensionObject Body must hold one structure element" % where)
        tname = local(body[0].tag)
        # The TypeId is the DefaultXml encoding or the DataType; the body
        # element names the structure, which decides the binary encoding id.
        if "TypeId" in c:
            tid = self.builtin("NodeId", c["TypeId"], where)
            if tid is None or tid[0] != 0 or tid[1] != "i" or tid[2] not in self.xml_type_ids.get(
                    tname, ()):
                die("%s: ExtensionObject TypeId %r does not match body %s" % (where, tid, tname))
        return (tname, self.struct(tname, body[0], where + "/" + tname))

    def struct(self, tname, el, where):
        fields = self.bsd.structs.get(tname)
        if fields is None:
            die("%s: structure %s is not in Opc.Ua.Types.bsd" % (where, tname))
        found = self.children(el, where, {f[0] for f in fields})
        value = {}
        for fname, ftype, is_array in fields:
            if fname not in found:
                continue
            if is_array:
                value[fname] = [self.field(ftype, x, "%s/%s" % (where, fname))
                                for x in found[fname]]
            else:
                value[fname] = self.field(ftype, found[fname], "%s/%s" % (where, fname))
        return value

    def field(self, tname, el, where):
        if tname in self.bsd.enums:
            # Enumerations are written Name_Value; option sets as numbers.
            text = (el.text or "").strip()
            return int(text.rsplit("_", 1)[-1])
        kind, arg = self.bsd.kind(tname)
        if kind == "builtin":
            return self.builtin(arg, el, where)
        return self.struct(tname, el, where)

    def variant(self, el, where):
        """A typed value element (<Int32>, <ListOfString>, ...) -> Variant."""
        name = local(el.tag)
        if el.tag != TNS + name:
            die("%s: value element %s is not in the Types.xsd namespace" % (where, el.tag))
        if name.startswith("ListOf") and name[6:] in BUILTIN_ID:
            item = name[6:]
            values = []
            for x in el:
                if x.tag != TNS + item:
                    die("%s: %s holds %s" % (where, name, x.tag))
                values.append(self.builtin(item, x, where))
            return (item, True, values)
        if name in BUILTIN_ID:
            return (name, False, self.builtin(name, el, where))
        die("%s: value element %s is not a builtin type" % (where, name))


# ---------------------------------------------------------------------------
# The NodeSet


class Node:
    __slots__ = ("id", "node_class", "tag", "browse_name", "display_name", "description",
                 "inverse_name", "flags", "access_level", "event_notifier", "value_rank",
                 "data_type", "mss", "access_restrictions", "array_dims", "role_perms",
                 "value", "value_kind", "refs", "el")


class NodeSet:
    def __init__(self, schema_dir):
        def path(name):
            return os.path.join(schema_dir, name)

        root = ET.parse(path("Opc.Ua.NodeSet2.xml")).getroot()
        model = root.find(UANS + "Models/" + UANS + "Model")
        if model is None or not model.get("Version") or not model.get("PublicationDate"):
            die("Opc.Ua.NodeSet2.xml: no Model Version/PublicationDate")
        self.version, self.date = model.get("Version"), model.get("PublicationDate")[:10]
        if root.find(UANS + "NamespaceUris") is not None:
            die("Opc.Ua.NodeSet2.xml declares NamespaceUris; only namespace 0 is supported")
        self.aliases = {a.get("Alias"): a.text.strip() for a in root.iter(UANS + "Alias")}

        self.nodeids = {}
        for name, ident, cls in read_csv(path("NodeIds.csv")):
            self.nodeids[(name, cls)] = int(ident)

        # Node elements in document order.
        self.elements = [el for el in root if local(el.tag) in NODE_CLASSES]
        for el in root:
            if el.tag.startswith(UANS) and local(el.tag) not in NODE_CLASSES and local(
                    el.tag) not in ("Models", "Aliases", "Extensions"):
                die("Opc.Ua.NodeSet2.xml: unknown element %s" % local(el.tag))
        self.nodes = {}
        for el in self.elements:
            n = Node()
            n.el = el
            n.tag = local(el.tag)
            n.id = self.ns0(el.get("NodeId"), "NodeId")
            if n.id in self.nodes:
                die("duplicate node i=%d" % n.id)
            self.nodes[n.id] = n
        self.read_references()
        # Supertype of every type node (HasSubtype, either direction).
        self.supertype = {}
        for src, rtype, tgt in self.triples:
            if rtype == HAS_SUBTYPE:
                if tgt in self.supertype and self.supertype[tgt] != src:
                    die("i=%d has two supertypes" % tgt)
                self.supertype[tgt] = src
        type_ids = {name: i for (name, cls), i in self.nodeids.items() if cls == "DataType"}
        self.bsd = Bsd(path("Opc.Ua.Types.bsd"), type_ids, self.supertype)
        self.binary_encoding = {}
        xml_type_ids = {}
        for name in self.bsd.structs:
            enc = self.nodeids.get((name + "_Encoding_DefaultBinary", "Object"))
            if enc is not None:
                self.binary_encoding[name] = enc
            xml_type_ids[name] = {i for i in (self.nodeids.get((name, "DataType")),
                                              self.nodeids.get((name + "_Encoding_DefaultXml",
                                                                "Object")),
                                              enc) if i is not None}
        self.encoder = Encoder(self.bsd, self.binary_encoding)
        self.xml = XmlReader(self.bsd, xml_type_ids)
        for el in self.elements:
            self.read_node(self.nodes[self.ns0(el.get("NodeId"), "NodeId")])
        for el in self.elements:
            self.read_value(self.nodes[self.ns0(el.get("NodeId"), "NodeId")])

    def ns0(self, text, where, alias=False):
        if text is None:
            die("%s missing" % where)
        text = text.strip()
        if alias:
            text = self.aliases.get(text, text)
        ns, kind, ident = parse_nodeid(text, where)
        if ns != 0 or kind != "i":
            die("%s: %s is not a numeric namespace 0 NodeId" % (where, text))
        return ident

    def read_references(self):
        """Normalise to (source, type, target) triples, de-duplicate, and list
        both directions per node: first the references written in the node's
        own element (in order), then those written on other nodes (in
        document order)."""
        own = {}
        self.triples = []
        seen = set()
        for el in self.elements:
            nid = self.ns0(el.get("NodeId"), "NodeId")
            lst = own[nid] = []
            refs = el.find(UANS + "References")
            for r in (refs if refs is not None else []):
                where = "i=%d reference" % nid
                rtype = self.ns0(r.get("ReferenceType"), where, alias=True)
                target = self.ns0(r.text, where)
                if target not in self.nodes:
                    die("%s: target i=%d is not defined" % (where, target))
                if rtype > 0xFFFF:
                    die("%s: reference type i=%d does not fit uint16" % (where, rtype))
                fwd = {"true": True, "false": False}.get(r.get("IsForward", "true"))
                if fwd is None:
                    die("%s: IsForward=%r" % (where, r.get("IsForward")))
                lst.append((rtype, target, fwd))
                triple = (nid, rtype, target) if fwd else (target, rtype, nid)
                if triple not in seen:
                    seen.add(triple)
                    self.triples.append(triple)
        self.written = sum(len(v) for v in own.values())
        entries = {nid: [] for nid in self.nodes}
        keys = {nid: set() for nid in self.nodes}

        def add(nid, entry):
            if entry not in keys[nid]:
                keys[nid].add(entry)
                entries[nid].append(entry)

        for nid, lst in own.items():
            for entry in lst:
                add(nid, entry)
        for nid, lst in own.items():
            for rtype, target, fwd in lst:
                add(target, (rtype, nid, not fwd))
        for nid, n in self.nodes.items():
            n.refs = entries[nid]
        for rtype in {t for _, t, _ in self.triples}:
            if rtype not in self.nodes or local(self.nodes[rtype].el.tag) != "UAReferenceType":
                die("reference type i=%d is not a ReferenceType node" % rtype)

    def text_child(self, el, tag, where):
        found = el.findall(UANS + tag)
        if not found:
            return None
        if len(found) > 1 or found[0].get("Locale"):
            # The tables hold one text with a null locale per attribute.
            die("%s: %s with a Locale or several translations" % (where, tag))
        return found[0].text or ""

    def read_node(self, n):
        el, where = n.el, "i=%d" % n.id
        n.node_class = NODE_CLASSES[n.tag]
        bn = el.get("BrowseName")
        m = re.fullmatch(r"(\d+):(.*)", bn or "", re.S)
        if m:
            if int(m.group(1)) != 0:
                die("%s: BrowseName %r is not in namespace 0" % (where, bn))
            bn = m.group(2)
        if not bn:
            die("%s: no BrowseName" % where)
        n.browse_name = bn
        dn = self.text_child(el, "DisplayName", where)
        n.display_name = None if dn is None or dn == bn else dn
        n.description = self.text_child(el, "Description", where)
        n.inverse_name = self.text_child(el, "InverseName", where)

        def flag(attr, bit, default="false"):
            v = el.get(attr, default)
            if v not in ("true", "false"):
                die("%s: %s=%r" % (where, attr, v))
            return bit if v == "true" else 0

        n.flags = (flag("IsAbstract", ABSTRACT) | flag("Symmetric", SYMMETRIC)
                   | flag("Historizing", HISTORIZING) | flag("ContainsNoLoops", CONTAINS_NO_LOOPS))
        if n.node_class == METHOD:
            n.flags |= flag("Executable", EXECUTABLE, "true")
        if el.get("ReleaseStatus") == "Deprecated":
            n.flags |= DEPRECATED

        def number(attr, default, lo, hi):
            v = int(el.get(attr, default))
            if not lo <= v <= hi:
                die("%s: %s=%d does not fit the table" % (where, attr, v))
            return v

        is_var = n.node_class in (VARIABLE, VARIABLE_TYPE)
        n.access_level = number("AccessLevel", "1", 0, 255) if n.node_class == VARIABLE else 0
        n.event_notifier = (number("EventNotifier", "0", 0, 255)
                            if n.node_class in (OBJECT, VIEW) else 0)
        n.value_rank = number("ValueRank", "-1", -3, 127) if is_var else 0
        n.access_restrictions = number("AccessRestrictions", "0", 0, 0xFFFF)
        n.data_type = self.ns0(el.get("DataType", "i=24"), where + " DataType",
                               alias=True) if is_var else 0
        n.mss = float(el.get("MinimumSamplingInterval", "0")) if n.node_class == VARIABLE else 0.0
        if struct.unpack("<f", struct.pack("<f", n.mss))[0] != n.mss:
            die("%s: MinimumSamplingInterval %r is not exact as a float" % (where, n.mss))
        dims = el.get("ArrayDimensions")
        n.array_dims = tuple(int(x) for x in dims.split(",")) if dims and is_var else ()
        if len(n.array_dims) > 255 or any(not 0 <= d <= 0xFFFFFFFF for d in n.array_dims):
            die("%s: ArrayDimensions %r" % (where, dims))
        perms = el.find(UANS + "RolePermissions")
        n.role_perms = tuple(
            (self.ns0(p.text, where + " RolePermission"), int(p.get("Permissions", "0")))
            for p in (perms if perms is not None else []))
        if len(n.role_perms) > 255:
            die("%s: too many RolePermissions" % where)

    def read_value(self, n):
        """The Value (Variables, VariableTypes) or the Definition (DataTypes)
        as a binary-encoded Variant."""
        el, where = n.el, "i=%d" % n.id
        is_var = n.node_class in (VARIABLE, VARIABLE_TYPE)
        n.value, n.value_kind = None, None
        v = el.find(UANS + "Value")
        if v is not None:
            if not is_var:
                die("%s: Value on a %s" % (where, n.tag))
            typed = list(v)
            if len(typed) != 1:
                die("%s: Value must hold one element" % where)
            n.value = self.encoder.variant(self.xml.variant(typed[0], where))
            n.value_kind = "value"
        d = el.find(UANS + "Definition")
        if d is not None:
            if n.node_class != DATA_TYPE:
                die("%s: Definition on a %s" % (where, n.tag))
            n.value = self.encoder.variant(("ExtensionObject", False, self.definition(n, d)))
            n.value_kind = "definition"

    def is_subtype(self, nid, ancestor):
        seen = set()
        while nid is not None and nid not in seen:
            if nid == ancestor:
                return True
            seen.add(nid)
            nid = self.supertype.get(nid)
        return False

    def definition(self, n, d):
        """Definition element -> ExtensionObject value of StructureDefinition
        or EnumDefinition."""
        where = "i=%d Definition" % n.id
        allowed = {"Name", "SymbolicName", "IsUnion", "IsOptionSet", "BaseType"}
        if set(d.attrib) - allowed:
            die("%s: unsupported attribute(s) %s" % (where, sorted(set(d.attrib) - allowed)))
        fields = d.findall(UANS + "Field")
        if len(fields) != len(list(d)):
            die("%s: unexpected child elements" % where)
        is_enum = (d.get("IsOptionSet") == "true" or self.is_subtype(n.id, ENUMERATION))
        if not is_enum and not self.is_subtype(n.id, STRUCTURE):
            die("%s: DataType is neither a Structure nor an Enumeration/OptionSet" % where)
        out = []
        for f in fields:
            fw = "%s field %s" % (where, f.get("Name"))
            extra = set(f.attrib) - {"Name", "SymbolicName", "DataType", "ValueRank",
                                     "ArrayDimensions", "Value", "IsOptional", "AllowSubTypes",
                                     "MaxStringLength"}
            if extra:
                die("%s: unsupported attribute(s) %s" % (fw, sorted(extra)))
            for c in f:
                if c.tag not in (UANS + "Description", UANS + "DisplayName"):
                    die("%s: unexpected element %s" % (fw, c.tag))
            desc = self.text_child(f, "Description", fw)
            desc = (None, desc) if desc is not None else None
            if is_enum:
                if f.get("Value") is None:
                    die("%s: enumeration field without Value" % fw)
                dn = self.text_child(f, "DisplayName", fw)
                out.append({"Value": int(f.get("Value")),
                            "DisplayName": (None, dn if dn is not None else f.get("Name")),
                            "Description": desc, "Name": f.get("Name")})
            else:
                dims = f.get("ArrayDimensions")
                out.append({"Name": f.get("Name"), "Description": desc,
                            "DataType": (0, "i", self.ns0(f.get("DataType", "i=24"), fw,
                                                          alias=True)),
                            "ValueRank": int(f.get("ValueRank", "-1")),
                            "ArrayDimensions": [int(x) for x in dims.split(",")] if dims else None,
                            "MaxStringLength": int(f.get("MaxStringLength", "0")),
                            "IsOptional": f.get("IsOptional") == "true",
                            "AllowSubTypes": f.get("AllowSubTypes") == "true"})
        if is_enum:
            return ("EnumDefinition", {"Fields": out})
        # 1.05: fields that allow subtypes make a StructureWithSubtypedValues
        # (UnionWithSubtypedValues) whose IsOptional flags those fields.
        union = d.get("IsUnion") == "true" or self.is_subtype(n.id, UNION)
        subtyped = any(f["AllowSubTypes"] for f in out)
        optional = any(f["IsOptional"] for f in out)
        if subtyped and optional:
            die("%s: optional fields together with AllowSubTypes" % where)
        if union:
            stype = ST_UNION_SUBTYPED if subtyped else ST_UNION
        else:
            stype = ST_SUBTYPED if subtyped else ST_OPTIONAL if optional else ST_STRUCTURE
        for f in out:
            f["IsOptional"] = f["IsOptional"] or f.pop("AllowSubTypes")
        return ("StructureDefinition", {
            "DefaultEncodingId": (0, "i", self.default_binary(n)),
            "BaseDataType": (0, "i", self.supertype.get(n.id, 0)),
            "StructureType": stype,
            "Fields": out})

    def default_binary(self, n):
        """The DefaultBinary encoding id: NodeIds.csv <Name>_Encoding_DefaultBinary,
        cross-checked with the HasEncoding reference to "Default Binary"; 0
        for structures without one (abstract)."""
        names = {n.el.get("SymbolicName") or n.browse_name,
                 (n.el.find(UANS + "Definition").get("SymbolicName")
                  or n.el.find(UANS + "Definition").get("Name"))}
        csv_ids = {self.nodeids.get((name + "_Encoding_DefaultBinary", "Object")) for name in names}
        csv_ids.discard(None)
        ref_ids = {t for rtype, t, fwd in n.refs if rtype == HAS_ENCODING and fwd
                   and self.nodes[t].browse_name == "Default Binary"}
        if len(csv_ids) > 1 or (ref_ids and ref_ids != csv_ids):
            die("i=%d: DefaultBinary encoding ids disagree: NodeIds.csv %s, NodeSet %s"
                % (n.id, sorted(csv_ids), sorted(ref_ids)))
        return csv_ids.pop() if csv_ids else 0


# ---------------------------------------------------------------------------
# The reduced set


def subtypes_of(ns, root):
    out = {root}
    changed = True
    while changed:
        changed = False
        for child, parent in ns.supertype.items():
            if parent in out and child not in out:
                out.add(child)
                changed = True
    return out


def reduced_set(ns, minimal=False):
    """Reduced namespace 0 for small devices:
    - every ReferenceType and DataType, with the properties of the DataTypes
      (EnumStrings, EnumValues, OptionSetValues: Part 3 requires one on
      every enumeration);
    - the Root, Objects, Types and Views folders and the ObjectTypes,
      VariableTypes, DataTypes and ReferenceTypes folders;
    - the Server object and, recursively, every child (Aggregates subtype)
      of a kept Object or Variable whose instance declaration in the
      child's parent's type hierarchy has ModellingRule Mandatory;
    - Server/ServerCapabilities/OperationLimits with all its children;
    - the event types the server reports, with all their children;
    - the modelling rule objects (instances of ModellingRuleType), which
      also get their mandatory NamingRule through the rule above;
    - closed under HasTypeDefinition targets and supertypes (HasSubtype),
      so every kept type's hierarchy up to its root is kept.
    References are kept when both ends are kept.

    minimal (the UA_MINIMAL profile, which has no events): instead of every
    DataType only the built-in ones (i=1..29) and those a kept Variable or
    VariableType has as DataType, with their properties and supertypes; no
    event types."""
    nodes = ns.nodes
    aggregates = subtypes_of(ns, AGGREGATES)

    def forward(nid, rtypes):
        return [t for rt, t, fwd in nodes[nid].refs if fwd and rt in rtypes]

    def type_definition(nid):
        tds = forward(nid, {HAS_TYPE_DEFINITION})
        return tds[0] if tds else None

    def mandatory_declarations(type_id):
        """BrowseNames of the mandatory Aggregates children of a type and its
        supertypes."""
        names, seen = set(), set()
        while type_id is not None and type_id not in seen:
            seen.add(type_id)
            for child in forward(type_id, aggregates):
                if MANDATORY in forward(child, {HAS_MODELLING_RULE}):
                    names.add(nodes[child].browse_name)
            type_id = ns.supertype.get(type_id)
        return names

    keep = set()
    event_types = [] if minimal else REDUCED_EVENT_TYPES
    for n in nodes.values():
        if n.node_class == DATA_TYPE and minimal and n.id > 29:
            continue
        if n.node_class in (REFERENCE_TYPE, DATA_TYPE):
            keep.add(n.id)
            if n.node_class == DATA_TYPE:
                keep.update(forward(n.id, {HAS_PROPERTY}))
        elif n.node_class == OBJECT and type_definition(n.id) == MODELLING_RULE_TYPE:
            keep.add(n.id)
    keep.update(REDUCED_FOLDERS)
    keep.add(REDUCED_SERVER)
    stack = list(REDUCED_WITH_ALL_CHILDREN + event_types)
    while stack:
        nid = stack.pop()
        if nid not in keep:
            keep.add(nid)
            stack.extend(forward(nid, aggregates))
    for nid in REDUCED_FOLDERS + [REDUCED_SERVER] + REDUCED_WITH_ALL_CHILDREN + event_types:
        if nid not in nodes:
            die("reduced set: i=%d is not in the NodeSet" % nid)
    changed = True
    while changed:
        changed = False
        for nid in sorted(keep):
            add = []
            n = nodes[nid]
            if n.node_class in (OBJECT, VARIABLE):
                mandatory = mandatory_declarations(type_definition(nid))
                add += [c for c in forward(nid, aggregates) if nodes[c].browse_name in mandatory]
                td = type_definition(nid)
                if td is not None:
                    add.append(td)
            if nid in ns.supertype:
                add.append(ns.supertype[nid])
            if minimal and n.node_class in (VARIABLE, VARIABLE_TYPE) and n.data_type in nodes:
                add.append(n.data_type)
            if minimal and n.node_class == DATA_TYPE:
                add += forward(nid, {HAS_PROPERTY})
            for a in add:
                if a not in keep:
                    keep.add(a)
                    changed = True
    # Every kept instance that has a parent in the NodeSet keeps one (the
    # modelling rules have none in namespace 0).
    hierarchical = subtypes_of(ns, HIERARCHICAL)
    for nid in keep:
        n = nodes[nid]
        parents = [t for rt, t, fwd in n.refs if not fwd and rt in hierarchical]
        if n.node_class in (OBJECT, VARIABLE, METHOD) and parents and not keep.intersection(
                parents):
            die("reduced set: i=%d %s has no kept parent" % (nid, n.browse_name))
    return keep


# ---------------------------------------------------------------------------
# C output


def c_bytes(data):
    """Bytes as a C string literal body: printable ASCII as is, everything
    else, '?' (trigraphs) and the quote/backslash as 3-digit octal/escapes."""
    out = []
    for b in data:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 32 <= b < 127 and b != 0x3F:
            out.append(chr(b))
        else:
            out.append("\\%03o" % b)
    return "".join(out)


def c_pieces(data, width=88):
    """Split bytes into C literal pieces of at most `width` source columns,
    never inside an escape."""
    pieces, cur, cur_len = [], [], 0
    for b in data:
        e = c_bytes(bytes([b]))
        if cur and cur_len + len(e) > width:
            pieces.append('"%s"' % "".join(cur))
            cur, cur_len = [], 0
        cur.append(e)
        cur_len += len(e)
    pieces.append('"%s"' % "".join(cur))
    return pieces


def comment(text):
    text = text.replace("*/", "* /").replace("\n", " ")
    return "/* %s */" % "".join(c if 32 <= ord(c) < 127 and c != "?" else "." for c in text)


class Tables:
    """The pools and rows of one table set (full or reduced)."""

    def __init__(self, ns, keep, name):
        self.ns, self.name = ns, name
        self.ids = sorted(keep)
        self.strings, self.string_off, self.string_len = [], {}, 0
        self.u32, self.u32_off = [0], {}
        self.blobs, self.blob_off, self.blob_len = [], {}, 0
        self.refs, self.rows = [], []
        self.values = self.definitions = 0
        for nid in self.ids:
            self.row(ns.nodes[nid], keep)

    def string(self, s):
        if s is None:
            return NONE
        if s not in self.string_off:
            self.string_off[s] = self.string_len
            self.strings.append(s)
            self.string_len += len(s.encode("utf-8")) + 1
        return self.string_off[s]

    def pool(self, seq):
        """Index of a sequence in the u32 pool (0 for an empty one)."""
        if not seq:
            return 0
        if seq not in self.u32_off:
            self.u32_off[seq] = len(self.u32)
            self.u32.extend(seq)
        if self.u32_off[seq] > 0xFFFF:
            die("u32 pool index does not fit uint16")
        return self.u32_off[seq]

    def blob(self, data, n):
        if data not in self.blob_off:
            self.blob_off[data] = self.blob_len
            self.blobs.append((data, n))
            self.blob_len += len(data)
        return self.blob_off[data]

    def row(self, n, keep):
        refs = [r for r in n.refs if r[1] in keep]
        if len(refs) > 0xFFFF:
            die("i=%d: %d references do not fit uint16" % (n.id, len(refs)))
        first = len(self.refs)
        self.refs.extend((n.id, r) for r in refs)
        if n.value is not None:
            off, length = self.blob(n.value, n), len(n.value)
            if n.value_kind == "value":
                self.values += 1
            else:
                self.definitions += 1
        else:
            off, length = NONE, 0
        perms = tuple(x for p in n.role_perms for x in p)
        mss = "0" if n.mss == 0 else repr(n.mss) + "f"
        cols = [n.id, n.data_type, self.string(n.browse_name), self.string(n.display_name),
                self.string(n.description), self.string(n.inverse_name), first,
                off, length, mss, len(refs), n.access_restrictions, self.pool(n.array_dims),
                self.pool(perms), n.node_class, n.flags, n.access_level, n.event_notifier,
                n.value_rank, len(n.array_dims), len(n.role_perms)]
        self.rows.append(("{%s}," % ", ".join("NONE" if c == NONE else str(c) for c in cols),
                          n))

    def render(self, header):
        ns = self.ns
        out = [header]
        out.append("/* Namespace 0, %s set: %d nodes, %d references (both directions), %d values,"
                   "\n * %d DataTypeDefinitions. Tables and field meanings: server/src/ns0.h. */\n"
                   % (self.name, len(self.ids), len(self.refs), self.values, self.definitions))
        out.append("#include \"ns0.h\"\n\n")
        out.append("#if UAS_NS0_LAYOUT != %d\n#error \"server/src/ns0.h does not match "
                   "gen_ns0.py: regenerate\"\n#endif\n\n" % LAYOUT)
        out.append("#define NONE UAS_NS0_NONE\n\n")
        out.append("const char uas_ns0_set[] = \"%s\";\n\n" % self.name)

        out.append("/* NUL-terminated UTF-8 strings; rows hold offsets. */\n")
        out.append("const char uas_ns0_strings[] =\n")
        off = 0
        for s in self.strings:
            data = s.encode("utf-8") + b"\0"
            pieces = c_pieces(data)
            out.append("    /* %6d */ %s\n" % (off, pieces[0]))
            out.extend("                 %s\n" % p for p in pieces[1:])
            off += len(data)
        out.append("    ;\n\n")

        out.append("/* ArrayDimensions and RolePermissions (role id, permission mask) runs. */\n")
        out.append("const uint32_t uas_ns0_u32[] = {\n")
        for i in range(0, len(self.u32), 12):
            out.append("    %s,\n" % ", ".join("%du" % x for x in self.u32[i:i + 12]))
        out.append("};\n\n")

        out.append("/* Binary-encoded Variants: the Value of Variables and VariableTypes, the\n"
                   " * DataTypeDefinition of DataTypes. Identical encodings are shared. */\n")
        out.append("const uint8_t uas_ns0_blob[] =\n")
        off = 0
        for data, n in self.blobs:
            out.append("    /* %d: i=%d %s, %d bytes */\n"
                       % (off, n.id, comment(n.browse_name)[3:-3], len(data)))
            out.extend("    %s\n" % p for p in c_pieces(data))
            off += len(data)
        out.append("    ;\n\n")

        out.append("/* Per node: {target, type, forward}. */\n")
        out.append("const uas_ns0_ref uas_ns0_refs[] = {\n")
        cur, line = None, []
        for src, (rtype, target, fwd) in self.refs:
            if src != cur:
                if line:
                    out.append("    " + " ".join(line) + "\n")
                out.append("    /* i=%d */\n" % src)
                cur, line = src, []
            item = "{%d, %d, %d}," % (target, rtype, 1 if fwd else 0)
            if line and sum(len(x) + 1 for x in line) + len(item) > 92:
                out.append("    " + " ".join(line) + "\n")
                line = []
            line.append(item)
        if line:
            out.append("    " + " ".join(line) + "\n")
        out.append("};\n")
        out.append("const size_t uas_ns0_ref_count = sizeof uas_ns0_refs / sizeof uas_ns0_refs[0];"
                   "\n\n")

        out.append("/* Sorted by id. Columns: id, data_type, browse_name, display_name, "
                   "description,\n * inverse_name, refs, value, value_len, "
                   "minimum_sampling_interval, ref_count,\n * access_restrictions, "
                   "array_dimensions, role_permissions, node_class, flags,\n * access_level, "
                   "event_notifier, value_rank, array_dimensions_count,\n * "
                   "role_permission_count. */\n")
        out.append("const uas_ns0_node uas_ns0_nodes[] = {\n")
        for text, n in self.rows:
            out.append("    %s %s\n" % (text, comment(n.browse_name)))
        out.append("};\n")
        out.append("const size_t uas_ns0_node_count = "
                   "sizeof uas_ns0_nodes / sizeof uas_ns0_nodes[0];\n\n")
        out.append("#undef NONE\n")
        return "".join(out)

    def summary(self):
        return ("%s: %d nodes, %d references, %d values, %d definitions; pools: strings %d B, "
                "blob %d B, u32 %d entries"
                % (self.name, len(self.ids), len(self.refs), self.values, self.definitions,
                   self.string_len + 1, self.blob_len + 1, len(self.u32)))


def write(path, text):
    """Write only on change, so a no-op regeneration does not trigger rebuilds."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
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
    ap.add_argument("--out", required=True, help="output folder (server/gen)")
    args = ap.parse_args()

    ns = NodeSet(args.schema)
    header = ("/* DO NOT EDIT. Generated by stack/codegen/gen_ns0.py from the OPC UA %s schema\n"
              " * (%s). */\n/* clang-format off */\n" % (ns.version, ns.date))
    full = Tables(ns, set(ns.nodes), "full")
    reduced = Tables(ns, reduced_set(ns), "reduced")
    minimal = Tables(ns, reduced_set(ns, minimal=True), "minimal")
    # Render everything before writing anything.
    files = {"ns0_full.c": full.render(header), "ns0_reduced.c": reduced.render(header),
             "ns0_minimal.c": minimal.render(header)}
    for name, text in files.items():
        write(os.path.join(args.out, name), text)
    print("gen_ns0.py: %d Reference elements, %d distinct references"
          % (ns.written, len(ns.triples)))
    print("gen_ns0.py: " + full.summary())
    print("gen_ns0.py: " + reduced.summary())
    print("gen_ns0.py: " + minimal.summary())


if __name__ == "__main__":
    main()
