// NodeSet2 information models seen from node-opcua. The server loads the
// companion specifications of $UA_NODESETS_DIR (every *.NodeSet2.xml there,
// through the configuration key `nodesets` and `--nodeset`) plus uastack's
// own test model; this file walks the XML of each file itself, so it holds
// for files it never names:
// - every node is found with its BrowseName and NodeClass;
// - every value a file gives reads back as given;
// - every DataType <Definition> reads back as DataTypeDefinition, and
//   node-opcua's dynamic extension-object support builds each structure;
// - structured values of the test model's own types (nested, optional
//   fields, union, enumeration) decode through that support;
// - a declared method without a handler answers BadNotImplemented.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as opcua from "node-opcua";
import { startServer, withSession } from "./lib/server.mjs";

const { AttributeIds, StatusCodes, NodeClass } = opcua;
const here = dirname(fileURLToPath(import.meta.url));
const setsDir = process.env.UA_NODESETS_DIR || join(here, "../../../shared/opcua-nodesets");
const testModel = join(here, "../data/nodesets/Uastack.Test.NodeSet2.xml");
const haveSets = existsSync(setsDir);
const files = haveSets
    ? readdirSync(setsDir)
          .filter((f) => f.endsWith(".xml"))
          .sort()
          .map((f) => join(setsDir, f))
    : [];

// ---- a small XML reader (elements, attributes, text; enough for NodeSet2) ----

function decodeEntities(s) {
    return s.replace(/&(#x[0-9a-fA-F]+|#\d+|lt|gt|amp|quot|apos);/g, (_, e) =>
        e[0] === "#"
            ? String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10))
            : { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" }[e]
    );
}

function parseXml(text) {
    const root = { name: "#root", attrs: {}, children: [], text: "" };
    const stack = [root];
    const re =
        /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!\[CDATA\[([\s\S]*?)\]\]>|<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|([^<]+)/g;
    let m;
    while ((m = re.exec(text))) {
        const top = stack[stack.length - 1];
        if (m[1] !== undefined) top.text += m[1];
        else if (m[6] !== undefined) top.text += decodeEntities(m[6]);
        else if (m[3]) {
            const name = m[3].replace(/^.*:/, "");
            if (m[2]) {
                stack.pop();
                continue;
            }
            const attrs = {};
            for (const a of (m[4] || "").matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g))
                attrs[a[1].replace(/^.*:/, "")] = decodeEntities(a[2] ?? a[3]);
            const el = { name, attrs, children: [], text: "" };
            top.children.push(el);
            if (!m[5]) stack.push(el);
        }
    }
    return root.children[0];
}

const child = (el, name) => el.children.find((c) => c.name === name);

const NODE_CLASSES = {
    UAObject: NodeClass.Object,
    UAVariable: NodeClass.Variable,
    UAMethod: NodeClass.Method,
    UAObjectType: NodeClass.ObjectType,
    UAVariableType: NodeClass.VariableType,
    UAReferenceType: NodeClass.ReferenceType,
    UADataType: NodeClass.DataType,
    UAView: NodeClass.View,
};

// Every node of a file, with its ids mapped onto the server's namespaces.
function readModel(path, serverNamespaces) {
    const doc = parseXml(readFileSync(path, "utf8"));
    const uris = ["http://opcfoundation.org/UA/"];
    const nsu = child(doc, "NamespaceUris");
    if (nsu) for (const u of nsu.children) uris.push(u.text.trim());
    const map = uris.map((u) => {
        const i = serverNamespaces.indexOf(u);
        assert.ok(i >= 0, `${path}: namespace ${u} is not in the server's NamespaceArray`);
        return i;
    });
    const mapId = (s) =>
        s.trim().replace(/^(?:ns=(\d+);)?/, (_, n) => (map[Number(n || 0)] ? `ns=${map[Number(n || 0)]};` : ""));
    const nodes = [];
    for (const el of doc.children) {
        if (!(el.name in NODE_CLASSES)) continue;
        const bn = el.attrs.BrowseName;
        const colon = /^(\d+):/.exec(bn);
        nodes.push({
            el,
            nodeId: mapId(el.attrs.NodeId),
            nodeClass: NODE_CLASSES[el.name],
            browseName: colon ? bn.slice(colon[0].length) : bn,
            browseNs: colon ? map[Number(colon[1])] : 0,
        });
    }
    return { path, nodes, map };
}

async function readAll(session, nodesToRead) {
    const out = [];
    for (let i = 0; i < nodesToRead.length; i += 500)
        out.push(...(await session.read(nodesToRead.slice(i, i + 500))));
    return out;
}

// The value element of a node compared with what the server returned.
function checkValue(where, el, variant) {
    const name = el.name;
    if (name.startsWith("ListOf")) {
        assert.ok(Array.isArray(variant.value) || ArrayBuffer.isView(variant.value), `${where}: not an array`);
        assert.equal(variant.value.length, el.children.length, `${where}: array length`);
        el.children.forEach((c, i) => checkScalar(`${where}[${i}]`, c, variant.value[i]));
        return;
    }
    checkScalar(where, el, variant.value);
}

function checkScalar(where, el, v) {
    const t = el.text.trim();
    switch (el.name) {
        case "String":
            assert.equal(v, el.text, where);
            break;
        case "Boolean":
            assert.equal(v, t === "true" || t === "1", where);
            break;
        case "Byte":
        case "SByte":
        case "Int16":
        case "UInt16":
        case "Int32":
        case "UInt32":
        case "Float":
        case "Double":
            assert.equal(Number(v), Number(t.replace(/^.*_/, "")), where);
            break;
        case "Int64":
        case "UInt64":
            assert.equal(BigInt(opcua.coerceInt64toInt53 ? opcua.coerceInt64toInt53(v) : v), BigInt(t), where);
            break;
        case "DateTime":
            assert.equal(v.getTime(), new Date(t).getTime(), where);
            break;
        case "ByteString":
            assert.equal(Buffer.from(v).toString("base64"), t.replace(/\s+/g, ""), where);
            break;
        case "LocalizedText":
            assert.equal(v.text ?? null, child(el, "Text") ? child(el, "Text").text : null, where);
            break;
        case "QualifiedName":
            assert.equal(v.name, child(el, "Name").text, where);
            break;
        case "ExtensionObject": {
            const body = child(el, "Body");
            const inner = body && body.children[0];
            assert.ok(v && typeof v === "object", `${where}: no decoded structure`);
            if (inner)
                for (const f of inner.children) {
                    const key = f.name[0].toLowerCase() + f.name.slice(1);
                    assert.ok(key in v, `${where}: field ${f.name} missing in ${v.constructor.name}`);
                    if (f.children.length === 0 && f.text.trim() && typeof v[key] !== "object")
                        assert.equal(String(v[key]), f.text.trim().replace(/^.*_(\d+)$/, "$1"), `${where}.${f.name}`);
                }
            break;
        }
        default:
            assert.fail(`${where}: value element <${el.name}> not covered by this test`);
    }
}

const cfgDir = mkdtempSync(join(tmpdir(), "uas-nodeset-"));
const cfgFile = join(cfgDir, "server.conf");
// Half the files through the configuration key, half through --nodeset.
const viaConfig = files.filter((_, i) => i % 2 === 0);
const viaFlag = [...files.filter((_, i) => i % 2 === 1), testModel];
writeFileSync(
    cfgFile,
    `[nodesets]\n${viaConfig.map((f) => `nodesets = ${f}\n`).join("")}` +
        "[roles]\npermissions = * Anonymous Browse,Read,ReadRolePermissions,Write,Call\n"
);
const server = await startServer(["--config", cfgFile, ...viaFlag.flatMap((f) => ["--nodeset", f])]);

async function models(session) {
    const nsArray = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value;
    return [...files, testModel].map((f) => readModel(f, nsArray));
}

test("NodeSet folder present", { skip: !haveSets && `no NodeSet folder at ${setsDir} (set UA_NODESETS_DIR)` }, () => {
    assert.ok(files.length > 0, `no *.xml in ${setsDir}`);
});

test("every node of every file has its BrowseName and NodeClass", async () => {
    await withSession(server.url, async (session) => {
        for (const m of await models(session)) {
            const reads = m.nodes.flatMap((n) => [
                { nodeId: n.nodeId, attributeId: AttributeIds.NodeClass },
                { nodeId: n.nodeId, attributeId: AttributeIds.BrowseName },
            ]);
            const dvs = await readAll(session, reads);
            m.nodes.forEach((n, i) => {
                const where = `${m.path}: ${n.nodeId}`;
                assert.equal(dvs[2 * i].statusCode, StatusCodes.Good, `${where}: ${dvs[2 * i].statusCode}`);
                assert.equal(dvs[2 * i].value.value, n.nodeClass, `${where}: NodeClass`);
                const q = dvs[2 * i + 1].value.value;
                assert.equal(q.name, n.browseName, `${where}: BrowseName`);
                assert.equal(q.namespaceIndex, n.browseNs, `${where}: BrowseName namespace`);
            });
        }
    });
});

test("every value a file gives reads back", async () => {
    await withSession(server.url, async (session) => {
        let count = 0;
        for (const m of await models(session)) {
            const withValue = m.nodes.filter((n) => child(n.el, "Value") && child(n.el, "Value").children.length);
            const dvs = await readAll(
                session,
                withValue.map((n) => ({ nodeId: n.nodeId, attributeId: AttributeIds.Value }))
            );
            withValue.forEach((n, i) => {
                const where = `${m.path}: ${n.nodeId}`;
                assert.equal(dvs[i].statusCode, StatusCodes.Good, `${where}: ${dvs[i].statusCode}`);
                checkValue(where, child(n.el, "Value").children[0], dvs[i].value);
                count++;
            });
        }
        assert.ok(count > (haveSets ? 100 : 5), `only ${count} values`);
    });
});

test("every DataType definition reads back and builds a structure in node-opcua", async () => {
    await withSession(server.url, async (session) => {
        let structs = 0;
        for (const m of await models(session)) {
            const types = m.nodes.filter((n) => n.nodeClass === NodeClass.DataType && child(n.el, "Definition"));
            const dvs = await readAll(
                session,
                types.map((n) => ({ nodeId: n.nodeId, attributeId: AttributeIds.DataTypeDefinition }))
            );
            for (const [i, n] of types.entries()) {
                const where = `${m.path}: ${n.nodeId}`;
                assert.equal(dvs[i].statusCode, StatusCodes.Good, `${where}: ${dvs[i].statusCode}`);
                const def = dvs[i].value.value;
                const xmlFields = child(n.el, "Definition").children.filter((c) => c.name === "Field");
                assert.deepEqual(
                    def.fields.map((f) => f.name),
                    xmlFields.map((f) => f.attrs.Name),
                    `${where}: fields`
                );
                const isStruct = def.constructor.name === "StructureDefinition";
                if (isStruct && n.el.attrs.IsAbstract !== "true") {
                    const obj = await session.constructExtensionObject(opcua.resolveNodeId(n.nodeId), {});
                    assert.ok(obj, `${where}: no structure built`);
                    structs++;
                }
            }
        }
        assert.ok(structs >= (haveSets ? 20 : 3), `only ${structs} structures`);
    });
});

test("structured values of a model's own types decode with dynamic extension objects", async () => {
    await withSession(server.url, async (session) => {
        const nsArray = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value;
        const ns = nsArray.indexOf("urn:uastack:test:types");
        assert.ok(ns > 0);
        const [shape, choice, color, origin] = await session.read(
            [6002, 6003, 6004, 6005].map((i) => ({ nodeId: `ns=${ns};i=${i}`, attributeId: AttributeIds.Value }))
        );
        const s = shape.value.value;
        assert.equal(s.name, "triangle");
        assert.equal(Number(s.color), 2);
        assert.equal(s.origin.x, 1.5);
        assert.equal(s.origin.y, -2);
        assert.deepEqual(
            s.points.map((p) => [p.x, p.y]),
            [
                [0, 0],
                [3, 0],
                [0, 4],
            ]
        );
        assert.equal(s.weight, 12.25);
        assert.ok(s.comment === undefined || s.comment === null, "absent optional field");
        assert.equal(choice.value.value.text ?? choice.value.value.value, "hello");
        assert.equal(color.value.value, 1);
        assert.equal(origin.value.value.x, 7);
        assert.equal(origin.value.value.y, 8);
        // Written back: node-opcua encodes with the definition it read, the
        // server decodes with its run-time type.
        const writeExt = async (nodeId, value) =>
            session.write({
                nodeId,
                attributeId: AttributeIds.Value,
                value: { value: { dataType: opcua.DataType.ExtensionObject, value } },
            });
        const pt = await session.constructExtensionObject(opcua.resolveNodeId(`ns=${ns};i=3002`), { x: 4, y: 5 });
        assert.equal(await writeExt(`ns=${ns};i=6005`, pt), StatusCodes.BadNotWritable, "Origin is read-only");
        const shape2 = await session.constructExtensionObject(opcua.resolveNodeId(`ns=${ns};i=3003`), {
            name: "square",
            color: 0,
            origin: { x: 1, y: 1 },
            points: [{ x: 2, y: 3 }],
            comment: "written by node-opcua",
        });
        assert.equal(await writeExt(`ns=${ns};i=6002`, shape2), StatusCodes.Good);
        const back = (await session.read({ nodeId: `ns=${ns};i=6002`, attributeId: AttributeIds.Value })).value.value;
        assert.equal(back.name, "square");
        assert.equal(back.comment, "written by node-opcua");
        assert.deepEqual([back.points[0].x, back.points[0].y], [2, 3]);
        assert.equal(await writeExt(`ns=${ns};i=6002`, pt), StatusCodes.BadTypeMismatch, "a PointType is no ShapeType");
    });
});

test("a declared method without a handler answers BadNotImplemented", async () => {
    await withSession(server.url, async (session) => {
        const nsArray = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value;
        const ns = nsArray.indexOf("urn:uastack:test:types");
        const r = await session.call({
            objectId: `ns=${ns};i=6001`,
            methodId: `ns=${ns};i=7001`,
            inputArguments: [{ dataType: opcua.DataType.Double, value: 2 }],
        });
        assert.equal(r.statusCode, StatusCodes.BadNotImplemented);
    });
});
