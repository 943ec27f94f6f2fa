// Browse and BrowseNext seen from node-opcua.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, sharedSession, rawRequest, faultStatus } from "./lib/server.mjs";

const { AttributeIds, BrowseDirection, NodeClass, NodeClassMask, StatusCodes } = opcua;

const server = await startServer();
const getSession = sharedSession(server);

const ALL = 63; // BrowseResultMask: every field
const ORGANIZES = "ns=0;i=35";
const HAS_COMPONENT = "ns=0;i=47";
const HAS_PROPERTY = "ns=0;i=46";
const HIERARCHICAL = "ns=0;i=33";

function browseObjects(session, extra = {}) {
    return session.browse({
        nodeId: "i=85",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: HIERARCHICAL,
        includeSubtypes: true,
        resultMask: ALL,
        ...extra,
    });
}

/** Browse with a page size, following continuation points to the end. */
async function browsePaged(session, description, pageSize) {
    const saved = session.requestedMaxReferencesPerNode;
    session.requestedMaxReferencesPerNode = pageSize;
    try {
        const pages = [];
        let r = await session.browse(description);
        assert.equal(r.statusCode, StatusCodes.Good);
        pages.push(r.references);
        let cp = r.continuationPoint;
        while (cp && cp.length) {
            assert.ok(pages.length < 1000, "BrowseNext never ends");
            r = await session.browseNext(cp, false);
            assert.equal(r.statusCode, StatusCodes.Good);
            pages.push(r.references);
            cp = r.continuationPoint;
        }
        return pages;
    } finally {
        session.requestedMaxReferencesPerNode = saved;
    }
}

const refKey = (r) => `${r.referenceTypeId}|${r.isForward}|${r.nodeId}`;

test("Objects folder: Server, 1:Demo and 1:BenchmarkValue0..99", async () => {
    const session = await getSession();
    const r = await browseObjects(session);
    assert.equal(r.statusCode, StatusCodes.Good);
    assert.ok(!r.continuationPoint || r.continuationPoint.length === 0, "all in one answer");
    const byName = new Map(r.references.map((ref) => [ref.browseName.toString(), ref]));

    const srv = byName.get("Server");
    assert.ok(srv, "Server is under Objects");
    assert.equal(srv.nodeId.toString(), "ns=0;i=2253");
    assert.equal(srv.nodeClass, NodeClass.Object);
    assert.equal(srv.typeDefinition.toString(), "ns=0;i=2004", "typed ServerType");

    const demo = byName.get("1:Demo");
    assert.ok(demo, "1:Demo is under Objects");
    assert.equal(demo.nodeId.toString(), "ns=1;s=Demo");
    assert.equal(demo.nodeClass, NodeClass.Object);

    for (let k = 0; k < 100; k++) {
        const ref = byName.get(`1:BenchmarkValue${k}`);
        assert.ok(ref, `1:BenchmarkValue${k} is under Objects`);
        assert.equal(ref.nodeId.toString(), `ns=1;i=${1001 + k}`);
        assert.equal(ref.nodeClass, NodeClass.Variable);
        assert.equal(ref.referenceTypeId.toString(), ORGANIZES);
        assert.equal(ref.isForward, true);
        assert.equal(ref.displayName.text, `BenchmarkValue${k}`);
        assert.equal(ref.typeDefinition.toString(), "ns=0;i=63", "BaseDataVariableType");
    }
});

test("requestedMaxReferencesPerNode = 10: BrowseNext collects all references", async () => {
    const session = await getSession();
    const description = {
        nodeId: "i=85",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: HIERARCHICAL,
        includeSubtypes: true,
        resultMask: ALL,
    };
    const whole = (await session.browse(description)).references;
    assert.ok(whole.length >= 102, `at least 102 references, got ${whole.length}`);
    const pages = await browsePaged(session, description, 10);
    for (const p of pages.slice(0, -1)) assert.equal(p.length, 10, "full pages of 10");
    assert.ok(pages.at(-1).length >= 1 && pages.at(-1).length <= 10, "a last page of 1..10");
    assert.ok(pages.length >= 11, `at least 11 pages, got ${pages.length}`);
    const paged = pages.flat();
    assert.equal(paged.length, whole.length);
    assert.deepEqual(paged.map(refKey), whole.map(refKey), "same references in the same order");
    assert.equal(new Set(paged.map(refKey)).size, paged.length, "no reference twice");
});

test("BrowseNext with releaseContinuationPoints frees the continuation point", async () => {
    const session = await getSession();
    session.requestedMaxReferencesPerNode = 10;
    try {
        const first = await browseObjects(session);
        assert.equal(first.references.length, 10);
        const cp = first.continuationPoint;
        assert.ok(cp && cp.length > 0, "a continuation point");
        const released = await session.browseNext(cp, true);
        assert.equal(released.statusCode, StatusCodes.Good);
        assert.equal(released.references.length, 0, "releasing returns no references");
        assert.ok(!released.continuationPoint || released.continuationPoint.length === 0);
        const again = await session.browseNext(cp, false);
        assert.equal(again.statusCode, StatusCodes.BadContinuationPointInvalid);
    } finally {
        session.requestedMaxReferencesPerNode = 10000;
    }
});

test("a node with thousands of references is paged by the server even when the client asks for all", async () => {
    const session = await getSession();
    // PropertyType (i=68): every property points back to it with an inverse
    // HasTypeDefinition.
    const description = { nodeId: "i=68", browseDirection: BrowseDirection.Both, resultMask: ALL };
    const all = (await browsePaged(session, description, 0)).flat();
    assert.ok(all.length > 1000, `${all.length} references`);
    assert.equal(new Set(all.map(refKey)).size, all.length, "no reference twice");
    const small = (await browsePaged(session, description, 100)).flat();
    assert.deepEqual(small.map(refKey), all.map(refKey), "pages of 100 give the same references");
});

test("a continuation point belongs to the session that got it", async () => {
    const session = await getSession();
    const other = await session._client.createSession();
    session.requestedMaxReferencesPerNode = 5;
    try {
        const r = await browseObjects(session);
        assert.ok(r.continuationPoint && r.continuationPoint.length);
        const stolen = await other.browseNext(r.continuationPoint, false);
        assert.equal(stolen.statusCode, StatusCodes.BadContinuationPointInvalid);
        const own = await session.browseNext(r.continuationPoint, true);
        assert.equal(own.statusCode, StatusCodes.Good, "still valid for its owner");
    } finally {
        session.requestedMaxReferencesPerNode = 10000;
        await other.close();
    }
});

test("continuation points are limited to MaxBrowseContinuationPoints per session", async () => {
    const session = await getSession();
    const limit = (
        await session.read({
            nodeId: "i=2735", // ServerCapabilities.MaxBrowseContinuationPoints
            attributeId: AttributeIds.Value,
        })
    ).value.value;
    assert.ok(limit > 0 && limit < 1000, `a usable limit, got ${limit}`);
    session.requestedMaxReferencesPerNode = 1;
    const held = [];
    try {
        for (let i = 0; i < limit; i++) {
            const r = await browseObjects(session);
            assert.equal(r.statusCode, StatusCodes.Good, `continuation point ${i + 1}`);
            held.push(r.continuationPoint);
        }
        const over = await browseObjects(session);
        assert.equal(over.statusCode, StatusCodes.BadNoContinuationPoints);
        // Releasing them makes room again.
        const rel = await session.browseNext(held, true);
        for (const r of rel) assert.equal(r.statusCode, StatusCodes.Good);
        held.length = 0;
        const ok = await browseObjects(session);
        assert.equal(ok.statusCode, StatusCodes.Good);
        if (ok.continuationPoint) await session.browseNext(ok.continuationPoint, true);
    } finally {
        session.requestedMaxReferencesPerNode = 10000;
        if (held.length) await session.browseNext(held, true);
    }
});

test("Server object: ServerStatus, NamespaceArray, ServerCapabilities and the other ServerType members", async () => {
    const session = await getSession();
    const r = await session.browse({
        nodeId: "i=2253",
        browseDirection: BrowseDirection.Forward,
        resultMask: ALL,
    });
    assert.equal(r.statusCode, StatusCodes.Good);
    const byName = new Map(r.references.map((ref) => [ref.browseName.toString(), ref]));
    const expect = {
        ServerArray: ["ns=0;i=2254", HAS_PROPERTY, NodeClass.Variable],
        NamespaceArray: ["ns=0;i=2255", HAS_PROPERTY, NodeClass.Variable],
        ServerStatus: ["ns=0;i=2256", HAS_COMPONENT, NodeClass.Variable],
        ServiceLevel: ["ns=0;i=2267", HAS_PROPERTY, NodeClass.Variable],
        Auditing: ["ns=0;i=2994", HAS_PROPERTY, NodeClass.Variable],
        ServerCapabilities: ["ns=0;i=2268", HAS_COMPONENT, NodeClass.Object],
        ServerDiagnostics: ["ns=0;i=2274", HAS_COMPONENT, NodeClass.Object],
        VendorServerInfo: ["ns=0;i=2295", HAS_COMPONENT, NodeClass.Object],
        ServerRedundancy: ["ns=0;i=2296", HAS_COMPONENT, NodeClass.Object],
    };
    for (const [name, [id, refType, nc]] of Object.entries(expect)) {
        const ref = byName.get(name);
        assert.ok(ref, `Server has ${name}`);
        assert.equal(ref.nodeId.toString(), id, name);
        assert.equal(ref.referenceTypeId.toString(), refType, name);
        assert.equal(ref.nodeClass, nc, name);
    }
    assert.equal(byName.get("ServerStatus").typeDefinition.toString(), "ns=0;i=2138", "ServerStatusType");
    assert.equal(byName.get("NamespaceArray").typeDefinition.toString(), "ns=0;i=68", "PropertyType");
    const typeDef = r.references.find((ref) => ref.referenceTypeId.toString() === "ns=0;i=40");
    assert.ok(typeDef, "HasTypeDefinition");
    assert.equal(typeDef.nodeId.toString(), "ns=0;i=2004");
});

test("inverse browse: a contract variable and the Server object lead back to Objects", async () => {
    const session = await getSession();
    for (const [node, refType] of [
        ["ns=1;i=1001", ORGANIZES],
        ["ns=1;i=1100", ORGANIZES],
        ["i=2253", ORGANIZES],
        ["i=2256", HAS_COMPONENT],
    ]) {
        const r = await session.browse({
            nodeId: node,
            browseDirection: BrowseDirection.Inverse,
            referenceTypeId: HIERARCHICAL,
            includeSubtypes: true,
            resultMask: ALL,
        });
        assert.equal(r.statusCode, StatusCodes.Good, node);
        assert.equal(r.references.length, 1, `${node} has one hierarchical parent`);
        const [ref] = r.references;
        assert.equal(ref.isForward, false);
        assert.equal(ref.referenceTypeId.toString(), refType);
        const parent = node === "i=2256" ? "ns=0;i=2253" : "ns=0;i=85";
        assert.equal(ref.nodeId.toString(), parent, `${node} parent`);
    }
    // Both directions: the inverse Organizes plus the forward HasTypeDefinition.
    const both = await session.browse({
        nodeId: "ns=1;i=1001",
        browseDirection: BrowseDirection.Both,
        resultMask: ALL,
    });
    const keys = both.references.map((r) => `${r.isForward ? ">" : "<"}${r.referenceTypeId} ${r.nodeId}`);
    assert.ok(keys.includes("<ns=0;i=35 ns=0;i=85"), keys.join(", "));
    assert.ok(keys.includes(">ns=0;i=40 ns=0;i=63"), keys.join(", "));
});

test("nodeClassMask selects node classes", async () => {
    const session = await getSession();
    const vars = await browseObjects(session, { nodeClassMask: NodeClassMask.Variable });
    assert.equal(vars.statusCode, StatusCodes.Good);
    assert.equal(vars.references.length, 100, "exactly the 100 contract variables");
    for (const r of vars.references) assert.equal(r.nodeClass, NodeClass.Variable);

    const objs = await browseObjects(session, { nodeClassMask: NodeClassMask.Object });
    const names = objs.references.map((r) => r.browseName.toString());
    assert.ok(names.includes("Server") && names.includes("1:Demo"), names.join(","));
    for (const r of objs.references) assert.equal(r.nodeClass, NodeClass.Object);

    const methods = await session.browse({
        nodeId: "ns=1;s=Demo",
        browseDirection: BrowseDirection.Forward,
        nodeClassMask: NodeClassMask.Method,
        resultMask: ALL,
    });
    assert.deepEqual(
        methods.references.map((r) => [r.browseName.toString(), r.nodeId.toString()]),
        [
            ["1:Add", "ns=1;s=Demo.Add"],
            ["1:ReportEvent", "ns=1;s=Demo.ReportEvent"],
        ]
    );
});

test("referenceTypeId filter, with and without subtypes", async () => {
    const session = await getSession();
    const props = await session.browse({
        nodeId: "i=2253",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: HAS_PROPERTY,
        includeSubtypes: false,
        resultMask: ALL,
    });
    assert.ok(props.references.length >= 4);
    for (const r of props.references) assert.equal(r.referenceTypeId.toString(), HAS_PROPERTY);
    // HierarchicalReferences itself is abstract: nothing uses it without subtypes.
    const none = await browseObjects(session, { includeSubtypes: false });
    assert.equal(none.statusCode, StatusCodes.Good);
    assert.equal(none.references.length, 0);
});

test("resultMask 0 returns only the target node ids", async () => {
    const session = await getSession();
    const r = await browseObjects(session, { resultMask: 0, nodeClassMask: NodeClassMask.Variable });
    assert.equal(r.references.length, 100);
    for (const ref of r.references) {
        assert.match(ref.nodeId.toString(), /^ns=1;i=1\d\d\d$/);
        assert.ok(!ref.browseName.name, "no BrowseName");
        assert.ok(!ref.displayName.text, "no DisplayName");
    }
});

test("errors: unknown node, invalid reference type, invalid direction, unknown view", async () => {
    const session = await getSession();
    const unknown = await session.browse({ nodeId: "ns=1;i=424242", resultMask: ALL });
    assert.equal(unknown.statusCode, StatusCodes.BadNodeIdUnknown);
    const badRef = await session.browse({
        nodeId: "i=85",
        referenceTypeId: "i=85", // a folder, not a ReferenceType
        resultMask: ALL,
    });
    assert.equal(badRef.statusCode, StatusCodes.BadReferenceTypeIdInvalid);

    const badDirection = await rawRequest(
        session,
        new opcua.BrowseRequest({
            nodesToBrowse: [{ nodeId: "i=85", browseDirection: 3, resultMask: ALL }],
        })
    );
    assert.equal(badDirection.results[0].statusCode, StatusCodes.BadBrowseDirectionInvalid);

    await assert.rejects(
        rawRequest(
            session,
            new opcua.BrowseRequest({
                view: { viewId: "ns=1;i=424242" },
                nodesToBrowse: [{ nodeId: "i=85", resultMask: ALL }],
            })
        ),
        (err) => {
            assert.equal(faultStatus(err), StatusCodes.BadViewIdUnknown);
            return true;
        }
    );
});

test("every hierarchical reference below Server leads to a node with that BrowseName", async () => {
    const session = await getSession();
    const seen = new Set(["ns=0;i=2253"]);
    let frontier = ["ns=0;i=2253"];
    let checked = 0;
    for (let depth = 0; depth < 4 && frontier.length; depth++) {
        const results = await session.browse(
            frontier.map((nodeId) => ({
                nodeId,
                browseDirection: BrowseDirection.Forward,
                referenceTypeId: HIERARCHICAL,
                includeSubtypes: true,
                resultMask: ALL,
            }))
        );
        const next = [];
        const refs = [];
        for (const r of results) {
            assert.equal(r.statusCode, StatusCodes.Good);
            for (const ref of r.references) {
                refs.push(ref);
                const id = ref.nodeId.toString();
                if (!seen.has(id)) {
                    seen.add(id);
                    next.push(id);
                }
            }
        }
        if (refs.length) {
            const names = await session.read(
                refs.map((ref) => ({ nodeId: ref.nodeId, attributeId: AttributeIds.BrowseName }))
            );
            names.forEach((dv, i) => {
                assert.equal(dv.statusCode, StatusCodes.Good, refs[i].nodeId.toString());
                assert.equal(dv.value.value.toString(), refs[i].browseName.toString());
            });
            checked += refs.length;
        }
        frontier = next;
    }
    assert.ok(checked > 50, `walked ${checked} references`);
});
