#!/usr/bin/env node
/*
 * Golden byte vectors for uastack, produced by an independent peer: node-opcua.
 *
 *   node tests/interop/golden/make_golden.js [outdir]      (default: tests/golden)
 *
 * For each service message this writes
 *   <Name>.bin   exactly what goes in a MSG/OPN body: the binary encoding NodeId
 *                of the type, as node-opcua's secure channel writes it
 *                (encodeExpandedNodeId, i.e. the compact FourByte form), then the body
 *   <Name>.json  the values that were put in, with C field names (snake case) and
 *                C-side units (DateTime as 100 ns ticks, DataValue picoseconds in
 *                10 ps units as on the wire, has_* flags of DataValue/DiagnosticInfo)
 *
 * Everything is fixed (timestamps, nonces, GUIDs, handles): two runs give the same
 * bytes, so CI can regenerate into a temporary folder and diff with the committed
 * files. Every file is decoded back with node-opcua and re-encoded; the script
 * fails (exit 1) unless the bytes and the described values come back identical.
 */
"use strict";

const fs = require("fs");
const path = require("path");

const OPCUA_EPOCH_OFFSET_MS = 11644473600000n; // 1601-01-01 .. 1970-01-01

/* ---------------------------------------------------------------- helpers -- */

/** A fixed Date; extraTicks (0..9999) adds 100 ns ticks below the millisecond,
 *  carried the way node-opcua carries them (date.picoseconds). */
function fixedDate(iso, extraTicks = 0) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) throw new Error(`bad date ${iso}`);
    if (extraTicks) d.picoseconds = extraTicks * 100000;
    return d;
}

function ticksOf(date, picoseconds) {
    const excess = BigInt(Math.floor((picoseconds || 0) / 100000));
    return ((BigInt(date.getTime()) + OPCUA_EPOCH_OFFSET_MS) * 10000n + excess).toString();
}

function pattern(n, mul, add) {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = (i * mul + add) & 0xff;
    return b;
}

/** CamelCase -> snake_case with the rules of stack/codegen/README.md. */
function snake(name) {
    const s = name
        .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
        .replace(/([A-Z])([A-Z][a-z])/g, "$1_$2")
        .toLowerCase();
    const keywords = new Set(["default", "register", "signed", "unsigned", "struct", "union", "enum", "int", "char",
        "float", "double", "long", "short", "void", "const", "static", "extern", "auto", "break", "case", "continue",
        "do", "else", "for", "goto", "if", "return", "sizeof", "switch", "typedef", "volatile", "while", "inline",
        "restrict", "bool"]);
    return keywords.has(s) ? `${s}_` : s;
}

function hex32(v) {
    return `0x${(v >>> 0).toString(16).toUpperCase().padStart(8, "0")}`;
}

/* ------------------------------------------------------ value description -- */

function makeDescriber(o) {
    const dataTypeName = (dt) => o.DataType[dt];

    function describeNodeId(n) {
        if (n === null || n === undefined) return null;
        const out = { ns: n.namespace };
        switch (n.identifierType) {
            case o.NodeIdType.NUMERIC: out.kind = "numeric"; out.numeric = n.value; break;
            case o.NodeIdType.STRING: out.kind = "string"; out.string = n.value; break;
            case o.NodeIdType.GUID: out.kind = "guid"; out.guid = String(n.value).toUpperCase(); break;
            case o.NodeIdType.BYTESTRING: out.kind = "bytestring"; out.bytestring_hex = n.value.toString("hex"); break;
            default: throw new Error(`unknown NodeId kind ${n.identifierType}`);
        }
        if (n.namespaceUri) out.namespace_uri = n.namespaceUri;
        if (n.serverIndex) out.server_index = n.serverIndex;
        out.text = n.toString();
        return out;
    }

    function describeDateTime(d, picoseconds) {
        if (d === null || d === undefined) return { null: true, ticks: "0" };
        const pico = picoseconds !== undefined ? picoseconds : (d.picoseconds || 0);
        return { iso: d.toISOString(), ticks: ticksOf(d, pico) };
    }

    function describeString(s) {
        if (s === null || s === undefined) return null;
        return s;
    }

    function describeByteString(b) {
        if (b === null || b === undefined) return null;
        return { length: b.length, hex: b.toString("hex") };
    }

    function statusJson(s) {
        const v = typeof s === "number" ? s >>> 0 : s.value >>> 0;
        const name = typeof s === "number" ? undefined : s.name;
        return name ? { code: hex32(v), name } : { code: hex32(v) };
    }

    function describeLocalizedText(lt) {
        if (!lt) return { locale: null, text: null };
        return { locale: lt.locale ?? null, text: lt.text ?? null };
    }

    function describeQualifiedName(q) {
        if (!q) return { ns: 0, name: null };
        return { ns: q.namespaceIndex, name: q.name ?? null };
    }

    function describeVariantValue(dataType, v) {
        const name = dataTypeName(dataType);
        switch (name) {
            case "Null": return null;
            case "Boolean": case "SByte": case "Byte": case "Int16": case "UInt16": case "Int32": case "UInt32":
            case "Float": case "Double":
                return v;
            case "Int64": case "UInt64": {
                // node-opcua holds 64-bit integers as [high, low] 32-bit words
                const big = (BigInt(v[0] >>> 0) << 32n) | BigInt(v[1] >>> 0);
                const val = name === "Int64" ? BigInt.asIntN(64, big) : big;
                return val.toString();
            }
            case "String": case "XmlElement": return describeString(v);
            case "DateTime": return describeDateTime(v);
            case "Guid": return String(v).toUpperCase();
            case "ByteString": return describeByteString(v);
            case "NodeId": case "ExpandedNodeId": return describeNodeId(v);
            case "StatusCode": return statusJson(v);
            case "QualifiedName": return describeQualifiedName(v);
            case "LocalizedText": return describeLocalizedText(v);
            case "ExtensionObject": return describeExtensionObject(v);
            case "DataValue": return describeDataValue(v);
            case "Variant": return describeVariant(v);
            case "DiagnosticInfo": return describeDiagnosticInfo(v);
            default: throw new Error(`no description for variant type ${name}`);
        }
    }

    function describeVariant(v) {
        if (!v || v.dataType === o.DataType.Null) return { type: null };
        const out = { type: dataTypeName(v.dataType) };
        if (v.arrayType === o.VariantArrayType.Scalar) {
            out.is_array = false;
            out.value = describeVariantValue(v.dataType, v.value);
            if (v.dataType === o.DataType.ExtensionObject && v.value) {
                out.decoded_type = v.value.schema.name;
            }
        } else {
            out.is_array = true;
            const arr = v.value === null ? null : Array.from(v.value);
            out.array_length = arr === null ? null : arr.length;
            out.value = arr === null ? null : arr.map((e) => describeVariantValue(v.dataType, e));
            if (v.arrayType === o.VariantArrayType.Matrix && v.dimensions) {
                out.array_dimensions = Array.from(v.dimensions);
            } else {
                out.array_dimensions = null;
            }
        }
        return out;
    }

    // C view of a DataValue: has_* flags as node-opcua sets the encoding mask,
    // picoseconds in the wire unit (10 ps).
    function describeDataValue(dv) {
        const out = {};
        const hasValue = !!(dv.value && dv.value.dataType !== o.DataType.Null);
        out.has_value = hasValue;
        if (hasValue) out.value = describeVariant(dv.value);
        const hasStatus = !!(dv.statusCode && dv.statusCode.value !== 0);
        out.has_status = hasStatus;
        if (hasStatus) out.status = statusJson(dv.statusCode);
        out.has_source_timestamp = !!dv.sourceTimestamp;
        if (dv.sourceTimestamp) out.source_timestamp = describeDateTime(dv.sourceTimestamp, dv.sourcePicoseconds);
        const sp = dv.sourcePicoseconds ? dv.sourcePicoseconds % 100000 : 0;
        out.has_source_picoseconds = !!sp;
        if (sp) out.source_picoseconds = Math.floor(sp / 10);
        out.has_server_timestamp = !!dv.serverTimestamp;
        if (dv.serverTimestamp) out.server_timestamp = describeDateTime(dv.serverTimestamp, dv.serverPicoseconds);
        const vp = dv.serverPicoseconds ? dv.serverPicoseconds % 100000 : 0;
        out.has_server_picoseconds = !!vp;
        if (vp) out.server_picoseconds = Math.floor(vp / 10);
        return out;
    }

    function describeDiagnosticInfo(d) {
        if (!d) return { encoding_mask: 0 };
        const out = {};
        const f = (flag, key, val) => {
            out[`has_${key}`] = flag;
            if (flag) out[key] = val;
        };
        f(d.symbolicId >= 0, "symbolic_id", d.symbolicId);
        f(d.namespaceURI >= 0, "namespace_uri", d.namespaceURI);
        f(d.locale >= 0, "locale", d.locale);
        f(d.localizedText >= 0, "localized_text", d.localizedText);
        f(!!d.additionalInfo, "additional_info", d.additionalInfo);
        f(!!(d.innerStatusCode && d.innerStatusCode.value !== 0), "inner_status",
            d.innerStatusCode ? statusJson(d.innerStatusCode) : null);
        f(!!d.innerDiagnosticInfo, "inner_diagnostic_info",
            d.innerDiagnosticInfo ? describeDiagnosticInfo(d.innerDiagnosticInfo) : null);
        return out;
    }

    function describeExtensionObject(eo) {
        if (eo === null || eo === undefined) return { encoding: "empty" };
        if (!eo.schema) throw new Error("opaque extension object not expected here");
        return {
            encoding: "decoded",
            type: eo.schema.name,
            binary_encoding_id: eo.schema.encodingDefaultBinary.value,
            fields: describeStruct(eo),
        };
    }

    function describeBasic(fieldType, v) {
        switch (fieldType) {
            case "Boolean": case "SByte": case "Byte": case "Int16": case "UInt16": case "Int32": case "UInt32":
            case "Float": case "Double": case "Duration": case "IntegerId": case "Counter": case "Index":
                return v;
            case "String": case "UAString": case "LocaleId": case "XmlElement": return describeString(v);
            case "NumericRange": // encoded as a String; the empty range is the null String
                return v === null || v === undefined ? null : describeString(v.toEncodeableString());
            case "DateTime": case "UtcTime": return describeDateTime(v);
            case "Guid": return v === null ? null : String(v).toUpperCase();
            case "ByteString": case "Nonce": case "ApplicationInstanceCertificate": case "ContinuationPoint":
                return describeByteString(v);
            case "NodeId": case "ExpandedNodeId": return describeNodeId(v);
            case "StatusCode": return statusJson(v);
            case "QualifiedName": return describeQualifiedName(v);
            case "LocalizedText": return describeLocalizedText(v);
            case "ExtensionObject": return describeExtensionObject(v);
            case "DataValue": return describeDataValue(v);
            case "Variant": return describeVariant(v);
            case "DiagnosticInfo": return describeDiagnosticInfo(v);
            default: throw new Error(`no description for field type ${fieldType}`);
        }
    }

    function describeField(field, v) {
        if (field.category === "enumeration") {
            const e = o[field.fieldType];
            return { value: v, name: e ? e[v] : undefined };
        }
        if (field.category === "complex") return describeStruct(v);
        return describeBasic(field.fieldType, v);
    }

    function describeStruct(obj) {
        const out = {};
        for (const field of obj.schema.fields) {
            const v = obj[field.name];
            const key = snake(field.name);
            if (field.isArray) {
                out[key] = v === null || v === undefined ? null : Array.from(v).map((e) => describeField(field, e));
            } else {
                out[key] = describeField(field, v);
            }
        }
        return out;
    }

    return { describeStruct };
}

/* --------------------------------------------------------------- messages -- */

function buildMessages(o) {
    const { DataType, VariantArrayType, StatusCodes, NodeId, NodeIdType } = o;

    const T_REQ = fixedDate("2024-05-06T07:08:09.123Z");
    const T_RSP = fixedDate("2024-05-06T07:08:09.456Z");
    const T_SRC = fixedDate("2024-05-06T07:08:01.001Z");
    const T_SRV = fixedDate("2024-05-06T07:08:02.002Z");
    const T_START = fixedDate("2024-01-01T00:00:00.000Z");
    const T_BUILD = fixedDate("2023-12-24T18:30:00.500Z");
    const T_FINE = fixedDate("2024-02-29T23:59:59.999Z", 4567); // ticks below the millisecond

    const GUID_A = "72962B91-FA75-4AE6-8D28-B404DC7DAF63";
    const GUID_B = "0102A3B4-C5D6-E7F8-0910-111213141516";

    const numeric = (ns, v) => new NodeId(NodeIdType.NUMERIC, v, ns);
    const str = (ns, v) => new NodeId(NodeIdType.STRING, v, ns);
    const guid = (ns, v) => new NodeId(NodeIdType.GUID, v, ns);
    const bytes = (ns, v) => new NodeId(NodeIdType.BYTESTRING, v, ns);

    const requestHeader = (token, handle, timeoutHint) => ({
        authenticationToken: token,
        timestamp: T_REQ,
        requestHandle: handle,
        returnDiagnostics: 0,
        auditEntryId: null,
        timeoutHint,
        additionalHeader: null,
    });

    const msgs = [];

    /* 1. ReadRequest */
    msgs.push({
        name: "ReadRequest",
        cls: o.ReadRequest,
        notes: [
            "authenticationToken 0xDEADBEEF does not fit 16 bits: full Numeric NodeId form (0x02).",
            "nodes_to_read[0..2].index_range and data_encoding are null (String length -1; QualifiedName ns 0 + null name).",
        ],
        options: {
            requestHeader: requestHeader(numeric(0, 0xdeadbeef), 42, 10000),
            maxAge: 0.5,
            timestampsToReturn: o.TimestampsToReturn.Both,
            nodesToRead: [
                { nodeId: numeric(0, 2258), attributeId: o.AttributeIds.Value },
                { nodeId: str(1, "BenchmarkValue7"), attributeId: o.AttributeIds.Value, indexRange: new o.NumericRange("1:2") },
                { nodeId: guid(2, GUID_A), attributeId: o.AttributeIds.DisplayName },
                {
                    nodeId: bytes(3, Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x7f, 0x80])),
                    attributeId: o.AttributeIds.BrowseName,
                    dataEncoding: { namespaceIndex: 0, name: "Default Binary" },
                },
            ],
        },
    });

    /* 2. ReadResponse */
    const serverStatus = new o.ServerStatusDataType({
        startTime: T_START,
        currentTime: T_RSP,
        state: o.ServerState.Running,
        buildInfo: new o.BuildInfo({
            productUri: "urn:uastack:golden:product",
            manufacturerName: "uastack",
            productName: "uastack golden server",
            softwareVersion: "1.2.3",
            buildNumber: "456",
            buildDate: T_BUILD,
        }),
        secondsTillShutdown: 0,
        shutdownReason: { locale: "en", text: "no shutdown" },
    });
    const innerInner = new o.DiagnosticInfo({ localizedText: 3 });
    const inner = new o.DiagnosticInfo({
        symbolicId: 1,
        additionalInfo: "inner",
        innerStatusCode: StatusCodes.BadOutOfMemory,
        innerDiagnosticInfo: innerInner,
    });
    const diag = new o.DiagnosticInfo({
        symbolicId: 1,
        namespaceURI: 0,
        locale: 2,
        localizedText: 3,
        additionalInfo: "extra info",
        innerStatusCode: StatusCodes.BadInternalError,
        innerDiagnosticInfo: inner,
    });
    msgs.push({
        name: "ReadResponse",
        cls: o.ReadResponse,
        notes: [
            "results[7]: source/server picoseconds are in the wire unit of 10 ps (node-opcua holds 12340 ps and 99990 ps).",
            "results[11] DateTime has ticks below the millisecond (4567 x 100 ns).",
            "results[13] Int64 is -1234567890123.",
            "diagnostic_infos[0].locale (2) is written before localized_text (3) on the wire (Part 6, DiagnosticInfo).",
        ],
        options: {
            responseHeader: {
                timestamp: T_RSP,
                requestHandle: 42,
                serviceResult: StatusCodes.Good,
                serviceDiagnostics: new o.DiagnosticInfo(),
                stringTable: ["urn:golden:diag", "SymbolicOne", "en-US", "Something went wrong"],
                additionalHeader: null,
            },
            results: [
                { value: { dataType: DataType.Int32, value: -123456 }, sourceTimestamp: T_SRC, serverTimestamp: T_SRV },
                { value: { dataType: DataType.Double, value: 3.14159 }, statusCode: StatusCodes.Uncertain },
                { value: { dataType: DataType.String, value: "h\u00e9llo" } },
                { value: { dataType: DataType.UInt32, arrayType: VariantArrayType.Array, value: [1, 2, 3] } },
                {
                    value: {
                        dataType: DataType.Int16,
                        arrayType: VariantArrayType.Matrix,
                        dimensions: [2, 3],
                        value: new Int16Array([1, -2, 3, -4, 5, -6]),
                    },
                },
                { value: { dataType: DataType.LocalizedText, value: { locale: "en", text: "text" } } },
                { statusCode: StatusCodes.BadNodeIdUnknown },
                {
                    value: { dataType: DataType.Byte, value: 200 },
                    sourceTimestamp: T_SRC,
                    sourcePicoseconds: 12340,
                    serverTimestamp: T_SRV,
                    serverPicoseconds: 99990,
                },
                { value: { dataType: DataType.ExtensionObject, value: serverStatus } },
                { value: { dataType: DataType.String, arrayType: VariantArrayType.Array, value: [] } },
                { value: { dataType: DataType.Boolean, value: true } },
                { value: { dataType: DataType.DateTime, value: T_FINE } },
                { value: { dataType: DataType.ByteString, value: Buffer.from("deadbeef000102ff", "hex") } },
                { value: { dataType: DataType.Int64, arrayType: VariantArrayType.Scalar, value: [0xfffffee0, 0x8e04fb35] } },
                { value: { dataType: DataType.Guid, value: GUID_B } },
                { value: { dataType: DataType.QualifiedName, value: { namespaceIndex: 2, name: "Speed" } } },
            ],
            diagnosticInfos: [diag],
        },
    });

    /* 3. BrowseRequest */
    msgs.push({
        name: "BrowseRequest",
        cls: o.BrowseRequest,
        notes: [
            "view is the default ViewDescription: null NodeId (TwoByte 0), null DateTime (0), version 0.",
            "nodes_to_browse[1].reference_type_id is the null NodeId (all references).",
        ],
        options: {
            requestHeader: requestHeader(guid(1, GUID_A), 43, 5000),
            view: {},
            requestedMaxReferencesPerNode: 100,
            nodesToBrowse: [
                {
                    nodeId: numeric(0, 85),
                    browseDirection: o.BrowseDirection.Forward,
                    referenceTypeId: numeric(0, 33),
                    includeSubtypes: true,
                    nodeClassMask: 0,
                    resultMask: 63,
                },
                {
                    nodeId: str(2, "Demo.Static.Scalar"),
                    browseDirection: o.BrowseDirection.Inverse,
                    referenceTypeId: numeric(0, 0),
                    includeSubtypes: true,
                    nodeClassMask: o.NodeClassMask.Object | o.NodeClassMask.Variable,
                    resultMask: 63,
                },
            ],
        },
    });

    /* 4. CreateSessionRequest */
    msgs.push({
        name: "CreateSessionRequest",
        cls: o.CreateSessionRequest,
        notes: [
            "client_nonce[i] = (i*7+3) & 0xff, 32 bytes; client_certificate[i] = (i*13+5) & 0xff, 100 bytes.",
            "gateway_server_uri and discovery_profile_uri are null strings (-1).",
        ],
        options: {
            requestHeader: requestHeader(numeric(0, 0), 1, 15000),
            clientDescription: {
                applicationUri: "urn:uastack:golden:client",
                productUri: "urn:uastack:golden:product",
                applicationName: { locale: "en", text: "uastack golden client" },
                applicationType: o.ApplicationType.Client,
                gatewayServerUri: null,
                discoveryProfileUri: null,
                discoveryUrls: ["opc.tcp://localhost:4840"],
            },
            serverUri: "urn:golden:server",
            endpointUrl: "opc.tcp://localhost:4840/golden",
            sessionName: "golden-session",
            clientNonce: pattern(32, 7, 3),
            clientCertificate: pattern(100, 13, 5),
            requestedSessionTimeout: 60000,
            maxResponseMessageSize: 0,
        },
    });

    /* 5. PublishResponse */
    const dataChange = new o.DataChangeNotification({
        monitoredItems: [
            { clientHandle: 1, value: { value: { dataType: DataType.Double, value: 1.5 }, sourceTimestamp: T_SRC } },
            {
                clientHandle: 2,
                value: { value: { dataType: DataType.String, value: "abc" }, serverTimestamp: T_SRV },
            },
            {
                clientHandle: 3,
                value: {
                    value: { dataType: DataType.UInt16, arrayType: VariantArrayType.Array, value: [10, 20] },
                    statusCode: StatusCodes.Uncertain,
                    sourceTimestamp: T_SRC,
                    serverTimestamp: T_SRV,
                },
            },
        ],
        diagnosticInfos: [],
    });
    const events = new o.EventNotificationList({
        events: [
            {
                clientHandle: 9,
                eventFields: [
                    { dataType: DataType.String, value: "Tank level high" },
                    { dataType: DataType.UInt16, value: 500 },
                ],
            },
        ],
    });
    msgs.push({
        name: "PublishResponse",
        cls: o.PublishResponse,
        notes: [
            "response_header.string_table is a null array (length -1); diagnostic_infos and the DataChangeNotification's diagnostic_infos are empty arrays (length 0).",
            "notification_data holds two ExtensionObjects: DataChangeNotification (811) then EventNotificationList (916).",
        ],
        options: {
            responseHeader: {
                timestamp: T_RSP,
                requestHandle: 77,
                serviceResult: StatusCodes.Good,
                serviceDiagnostics: new o.DiagnosticInfo(),
                stringTable: [], // made null after construction (see tweak): the constructor coerces null to []
                additionalHeader: null,
            },
            subscriptionId: 7,
            availableSequenceNumbers: [3, 4],
            moreNotifications: false,
            notificationMessage: {
                sequenceNumber: 4,
                publishTime: T_RSP,
                notificationData: [dataChange, events],
            },
            results: [StatusCodes.Good, StatusCodes.BadSequenceNumberUnknown],
            diagnosticInfos: [],
        },
        tweak: (obj) => {
            obj.responseHeader.stringTable = null;
        },
    });

    /* 6. OpenSecureChannelRequest */
    msgs.push({
        name: "OpenSecureChannelRequest",
        cls: o.OpenSecureChannelRequest,
        notes: [
            "client_nonce is null (ByteString length -1): node-opcua's client passes undefined for SecurityMode None.",
        ],
        options: {
            requestHeader: requestHeader(numeric(0, 0), 1, 0),
            clientProtocolVersion: 0,
            requestType: o.SecurityTokenRequestType.Issue,
            securityMode: o.MessageSecurityMode.None,
            clientNonce: undefined,
            requestedLifetime: 3600000,
        },
    });

    return msgs;
}

/* ------------------------------------------------------------------- main -- */

function encodeMessage(o, obj) {
    const size = 1 << 16;
    const stream = new o.BinaryStream(size);
    o.encodeExpandedNodeId(obj.schema.encodingDefaultBinary, stream);
    obj.encode(stream);
    return Buffer.from(stream.buffer.subarray(0, stream.length));
}

async function main() {
    const outDir = path.resolve(process.argv[2] || path.join(__dirname, "..", "..", "golden"));
    const o = await import("node-opcua");
    const version = require("node-opcua/package.json").version;
    const { describeStruct } = makeDescriber(o);

    fs.mkdirSync(outDir, { recursive: true });
    let failures = 0;

    for (const m of buildMessages(o)) {
        const obj = new m.cls(m.options);
        if (m.tweak) m.tweak(obj);
        const bin = encodeMessage(o, obj);
        const encodingId = obj.schema.encodingDefaultBinary;

        // Round trip through node-opcua's own decoder.
        const stream = new o.BinaryStream(bin);
        const id = o.decodeExpandedNodeId(stream);
        const back = new m.cls();
        back.decode(stream);
        const problems = [];
        if (id.toString() !== encodingId.toString()) problems.push(`type id ${id} != ${encodingId}`);
        if (stream.length !== bin.length) problems.push(`decoder consumed ${stream.length} of ${bin.length} bytes`);
        const again = encodeMessage(o, back);
        if (!again.equals(bin)) problems.push("re-encoded bytes differ");
        const described = describeStruct(obj);
        const describedBack = describeStruct(back);
        if (JSON.stringify(described) !== JSON.stringify(describedBack)) problems.push("decoded values differ");

        const doc = {
            generator: "tests/interop/golden/make_golden.js",
            peer: `node-opcua ${version}`,
            type: m.name,
            binary_encoding_id: encodingId.value,
            file: `${m.name}.bin`,
            size: bin.length,
            type_id_bytes_hex: bin.subarray(0, id.value <= 0xff ? 2 : 4).toString("hex"),
            notes: m.notes,
            value: described,
        };
        fs.writeFileSync(path.join(outDir, `${m.name}.bin`), bin);
        fs.writeFileSync(path.join(outDir, `${m.name}.json`), `${JSON.stringify(doc, null, 2)}\n`);

        if (problems.length) {
            failures++;
            console.error(`FAIL ${m.name}: ${problems.join("; ")}`);
        } else {
            console.log(`ok   ${m.name}.bin ${bin.length} bytes (i=${encodingId.value}), round trip identical`);
        }
    }
    if (failures) {
        console.error(`${failures} vector(s) failed the node-opcua round trip`);
        process.exit(1);
    }
}

main().catch((err) => {
    console.error(err);
    process.exit(1);
});
