// NodeManagement seen from node-opcua (AddNodes, AddReferences, DeleteNodes,
// DeleteReferences): only a user whose configured role grants it
// (ConfigureAdmin, `uapki user add --roles ConfigureAdmin`) may change the
// address space; anonymous sessions and users of other roles get
// BadUserAccessDenied. Added nodes are live for Browse, Read, Write and
// subscriptions; deleting a node ends its monitored items with
// BadNodeIdUnknown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as opcua from "node-opcua";
import * as types from "node-opcua-types";
import { newClient, startServer } from "./lib/server.mjs";

const { AttributeIds, DataType, MessageSecurityMode, NodeClass, SecurityPolicy, StatusCodes, UserTokenType } =
    opcua;

const UAPKI = process.env.UAPKI || join(dirname(dirname(process.env.UASERVER || ".")), "pki", "uapki");
const work = mkdtempSync(join(tmpdir(), "uas-nodemgmt-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));
const uapki = (args, input) =>
    execFileSync(UAPKI, args, { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });

const certificateManager = new opcua.OPCUACertificateManager({
    rootFolder: join(work, "client-pki"),
    automaticallyAcceptUnknownCertificate: true,
});
await certificateManager.initialize();
const pki = join(work, "pki");
uapki(["--store", pki, "user", "add", "cora", "--password-stdin", "--roles", "ConfigureAdmin"], "cfg-pass\n");
uapki(["--store", pki, "user", "add", "olive", "--password-stdin", "--roles", "Operator"], "op-pass\n");
const server = await startServer([
    "--security", "None,Basic256Sha256:SignAndEncrypt", "--pki", pki, "--auto-accept",
]);

const users = {
    cora: { type: UserTokenType.UserName, userName: "cora", password: "cfg-pass" },
    olive: { type: UserTokenType.UserName, userName: "olive", password: "op-pass" },
};

async function withSession(identity, fn, url = server.url) {
    const client = newClient({
        securityMode: MessageSecurityMode.SignAndEncrypt,
        securityPolicy: SecurityPolicy.Basic256Sha256,
        certificateManager,
        clientCertificateManager: certificateManager,
        requestedSessionTimeout: 60000,
    });
    await client.connect(url);
    let session;
    try {
        session = await client.createSession(identity);
        return await fn(session);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect();
    }
}

const transact = (session, request) =>
    new Promise((resolve, reject) =>
        session.performMessageTransaction(request, (err, response) => (err ? reject(err) : resolve(response)))
    );

const addNodes = (s, nodesToAdd) => transact(s, new types.AddNodesRequest({ nodesToAdd }));
const addRefs = (s, referencesToAdd) => transact(s, new types.AddReferencesRequest({ referencesToAdd }));
const delNodes = (s, nodesToDelete) => transact(s, new types.DeleteNodesRequest({ nodesToDelete }));
const delRefs = (s, referencesToDelete) => transact(s, new types.DeleteReferencesRequest({ referencesToDelete }));

function objectItem(id, name) {
    return {
        parentNodeId: "i=85",
        referenceTypeId: "i=35",
        requestedNewNodeId: id,
        browseName: new opcua.QualifiedName({ namespaceIndex: 1, name }),
        nodeClass: NodeClass.Object,
        nodeAttributes: new types.ObjectAttributes({ specifiedAttributes: 0, displayName: { text: name } }),
        typeDefinition: "i=58",
    };
}

function variableItem(id, parent, name, value) {
    return {
        parentNodeId: parent,
        referenceTypeId: "i=47",
        requestedNewNodeId: id,
        browseName: new opcua.QualifiedName({ namespaceIndex: 1, name }),
        nodeClass: NodeClass.Variable,
        nodeAttributes: new types.VariableAttributes({
            specifiedAttributes: 0,
            displayName: { text: name },
            value: new opcua.Variant({ dataType: DataType.Double, value }),
            dataType: "i=11",
            valueRank: -1,
            accessLevel: 3,
            userAccessLevel: 3,
        }),
        typeDefinition: "i=63",
    };
}

const ref = (source, target) => ({
    sourceNodeId: source,
    referenceTypeId: "i=35",
    isForward: true,
    targetNodeId: target,
    targetNodeClass: NodeClass.Object,
});

for (const [who, identity] of [
    ["anonymous", undefined],
    ["a user without a node-management role (Operator)", users.olive],
]) {
    test(`${who}: every NodeManagement service is refused with BadUserAccessDenied`, async () => {
        await withSession(identity, async (s) => {
            const a = await addNodes(s, [objectItem("ns=1;s=Nope", "Nope")]);
            assert.equal(a.results[0].statusCode, StatusCodes.BadUserAccessDenied);
            const r = await addRefs(s, [ref("ns=1;s=Demo", "i=2253")]);
            assert.equal(r.results[0], StatusCodes.BadUserAccessDenied);
            const d = await delNodes(s, [{ nodeId: "ns=1;s=Demo", deleteTargetReferences: true }]);
            assert.equal(d.results[0], StatusCodes.BadUserAccessDenied);
            const dr = await delRefs(s, [
                { sourceNodeId: "i=85", referenceTypeId: "i=35", isForward: true, targetNodeId: "ns=1;s=Demo", deleteBidirectional: true },
            ]);
            assert.equal(dr.results[0], StatusCodes.BadUserAccessDenied);
            const demo = await s.read({ nodeId: "ns=1;s=Demo", attributeId: AttributeIds.BrowseName });
            assert.equal(demo.statusCode, StatusCodes.Good, "nothing was deleted");
            const nope = await s.read({ nodeId: "ns=1;s=Nope", attributeId: AttributeIds.NodeClass });
            assert.equal(nope.statusCode, StatusCodes.BadNodeIdUnknown, "nothing was added");
        });
    });
}

test("ConfigureAdmin: added nodes are live for Browse, Read, Write and subscriptions; a delete ends them", async () => {
    await withSession(users.cora, async (s) => {
        const a = await addNodes(s, [
            objectItem("ns=1;s=Line", "Line"),
            variableItem("ns=1;s=Line.Speed", "ns=1;s=Line", "Speed", 3.5),
            objectItem("ns=1;s=Line", "Twice"),
        ]);
        assert.deepEqual(
            a.results.map((r) => r.statusCode),
            [StatusCodes.Good, StatusCodes.Good, StatusCodes.BadNodeIdExists]
        );
        const objects = await s.browse({ nodeId: "i=85", resultMask: 63 });
        assert.ok(objects.references.some((r) => r.browseName.name === "Line"));
        const line = await s.browse({ nodeId: "ns=1;s=Line", resultMask: 63 });
        assert.ok(line.references.some((r) => r.browseName.name === "Speed"));
        assert.equal((await s.read({ nodeId: "ns=1;s=Line.Speed", attributeId: AttributeIds.Value })).value.value, 3.5);

        const sub = await s.createSubscription2({ requestedPublishingInterval: 50, publishingEnabled: true });
        const item = await sub.monitor(
            { nodeId: "ns=1;s=Line.Speed", attributeId: AttributeIds.Value },
            { samplingInterval: 0, queueSize: 10 },
            opcua.TimestampsToReturn.Both
        );
        const seen = [];
        item.on("changed", (dv) => seen.push(dv));
        const until = async (pred, what) => {
            for (let i = 0; i < 100 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
            assert.ok(pred(), what);
        };
        await until(() => seen.length >= 1, "initial value");
        const w = await s.write({
            nodeId: "ns=1;s=Line.Speed",
            attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Double, value: 7.25 } },
        });
        assert.equal(w, StatusCodes.Good);
        await until(() => seen.some((dv) => dv.value.value === 7.25), "the written value is notified");

        // A reference of its own, then removed again.
        const r = await addRefs(s, [ref("ns=1;s=Line", "i=2253"), ref("ns=1;s=Line", "i=2253")]);
        assert.deepEqual(r.results, [StatusCodes.Good, StatusCodes.BadDuplicateReferenceNotAllowed]);
        const back = await s.browse({ nodeId: "i=2253", browseDirection: opcua.BrowseDirection.Inverse, resultMask: 63 });
        assert.ok(back.references.some((x) => x.browseName.name === "Line"), "the inverse is on the target");
        const dr = await delRefs(s, [
            { sourceNodeId: "ns=1;s=Line", referenceTypeId: "i=35", isForward: true, targetNodeId: "i=2253", deleteBidirectional: true },
        ]);
        assert.equal(dr.results[0], StatusCodes.Good);
        const back2 = await s.browse({ nodeId: "i=2253", browseDirection: opcua.BrowseDirection.Inverse, resultMask: 63 });
        assert.ok(!back2.references.some((x) => x.browseName.name === "Line"));

        const d = await delNodes(s, [
            { nodeId: "ns=1;s=Line.Speed", deleteTargetReferences: true },
            { nodeId: "i=85", deleteTargetReferences: false },
        ]);
        assert.deepEqual(d.results, [StatusCodes.Good, StatusCodes.BadNoDeleteRights]);
        await until(
            () => seen.some((dv) => dv.statusCode === StatusCodes.BadNodeIdUnknown),
            "the monitored item reports BadNodeIdUnknown"
        );
        const gone = await s.read({ nodeId: "ns=1;s=Line.Speed", attributeId: AttributeIds.Value });
        assert.equal(gone.statusCode, StatusCodes.BadNodeIdUnknown);
        const line2 = await s.browse({ nodeId: "ns=1;s=Line", resultMask: 63 });
        assert.ok(!line2.references.some((x) => x.browseName.name === "Speed"), "no reference to a deleted node");
        await sub.terminate();
    });
});

function typeItem(nodeClass, id, parent, name, nodeAttributes, referenceTypeId = "i=45") {
    return {
        parentNodeId: parent,
        referenceTypeId,
        requestedNewNodeId: id,
        browseName: new opcua.QualifiedName({ namespaceIndex: 1, name }),
        nodeClass,
        nodeAttributes,
    };
}

test("ConfigureAdmin: type and view nodes are added below their supertype, with Part 4's status codes", async () => {
    await withSession(users.cora, async (s) => {
        const definition = new types.StructureDefinition({
            defaultEncodingId: "ns=1;s=Batch.Binary",
            structureType: types.StructureType.Structure,
            fields: [
                new types.StructureField({ name: "Id", dataType: "i=7", valueRank: -1 }),
                new types.StructureField({ name: "Weight", dataType: "i=11", valueRank: -1 }),
            ],
        });
        const a = await addNodes(s, [
            typeItem(NodeClass.ObjectType, "ns=1;s=MixerType", "i=58", "MixerType",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0, isAbstract: false })),
            typeItem(NodeClass.VariableType, "ns=1;s=LevelType", "i=63", "LevelType",
                new types.VariableTypeAttributes({
                    specifiedAttributes: 0,
                    value: new opcua.Variant({ dataType: DataType.Double, value: 2.5 }),
                    dataType: "i=11",
                    valueRank: -1,
                })),
            typeItem(NodeClass.DataType, "ns=1;s=Batch", "i=22", "Batch",
                new types.GenericAttributes({
                    specifiedAttributes: 0,
                    attributeValues: [
                        new types.GenericAttributeValue({
                            attributeId: AttributeIds.DataTypeDefinition,
                            value: new opcua.Variant({ dataType: DataType.ExtensionObject, value: definition }),
                        }),
                    ],
                })),
            typeItem(NodeClass.ReferenceType, "ns=1;s=Feeds", "i=32", "Feeds",
                new types.ReferenceTypeAttributes({ specifiedAttributes: 0, inverseName: { text: "FedBy" } })),
            typeItem(NodeClass.View, "ns=1;s=PlantView", "i=87", "PlantView",
                new types.ViewAttributes({ specifiedAttributes: 0, containsNoLoops: true }), "i=35"),
            // The refusals: wrong supertype class, not HasSubtype, a
            // TypeDefinition, a duplicate BrowseName, an existing id.
            typeItem(NodeClass.ObjectType, "ns=1;s=T1", "i=63", "T1",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0 })),
            typeItem(NodeClass.ObjectType, "ns=1;s=T2", "i=58", "T2",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0 }), "i=35"),
            { ...typeItem(NodeClass.ObjectType, "ns=1;s=T3", "i=58", "T3",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0 })), typeDefinition: "i=58" },
            typeItem(NodeClass.ObjectType, "ns=1;s=T4", "i=58", "MixerType",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0 })),
            typeItem(NodeClass.ObjectType, "ns=1;s=MixerType", "i=58", "T5",
                new types.ObjectTypeAttributes({ specifiedAttributes: 0 })),
        ]);
        assert.deepEqual(a.results.map((r) => r.statusCode), [
            StatusCodes.Good, StatusCodes.Good, StatusCodes.Good, StatusCodes.Good, StatusCodes.Good,
            StatusCodes.BadParentNodeIdInvalid, StatusCodes.BadReferenceNotAllowed,
            StatusCodes.BadTypeDefinitionInvalid, StatusCodes.BadBrowseNameDuplicated, StatusCodes.BadNodeIdExists,
        ]);
        const read = async (nodeId, attributeId) => {
            const dv = await s.read({ nodeId, attributeId });
            assert.equal(dv.statusCode, StatusCodes.Good, `${nodeId} attribute ${attributeId}`);
            return dv.value.value;
        };
        assert.equal(await read("ns=1;s=MixerType", AttributeIds.NodeClass), NodeClass.ObjectType);
        assert.equal(await read("ns=1;s=MixerType", AttributeIds.IsAbstract), false);
        assert.equal(await read("ns=1;s=LevelType", AttributeIds.Value), 2.5);
        assert.equal((await read("ns=1;s=Feeds", AttributeIds.InverseName)).text, "FedBy");
        assert.equal(await read("ns=1;s=PlantView", AttributeIds.ContainsNoLoops), true);
        const def = await read("ns=1;s=Batch", AttributeIds.DataTypeDefinition);
        assert.deepEqual(def.fields.map((f) => f.name), ["Id", "Weight"]);
        assert.equal(def.baseDataType.toString(), "ns=0;i=22");
        const sub = await s.browse({ nodeId: "i=58", referenceTypeId: "i=45", resultMask: 63 });
        assert.ok(sub.references.some((r) => r.browseName.name === "MixerType"), "a subtype of BaseObjectType");

        // The new types at work: an instance, a reference of the new type.
        const inst = await addNodes(s, [{ ...objectItem("ns=1;s=Mixer1", "Mixer1"), typeDefinition: "ns=1;s=MixerType" }]);
        assert.equal(inst.results[0].statusCode, StatusCodes.Good);
        const r = await addRefs(s, [{ ...ref("ns=1;s=Mixer1", "i=2253"), referenceTypeId: "ns=1;s=Feeds" }]);
        assert.equal(r.results[0], StatusCodes.Good);
        const fed = await s.browse({
            nodeId: "i=2253", referenceTypeId: "ns=1;s=Feeds", browseDirection: opcua.BrowseDirection.Inverse, resultMask: 63,
        });
        assert.deepEqual(fed.references.map((x) => x.browseName.name), ["Mixer1"]);
    });
});

test("DeleteNodes: deleteTargetReferences false leaves the references of other nodes to it, true removes them", async () => {
    await withSession(users.cora, async (s) => {
        const a = await addNodes(s, [objectItem("ns=1;s=Keep", "Keep"), objectItem("ns=1;s=Drop", "Drop")]);
        assert.deepEqual(a.results.map((r) => r.statusCode), [StatusCodes.Good, StatusCodes.Good]);
        const r = await addRefs(s, [ref("ns=1;s=Keep", "i=2253"), ref("ns=1;s=Drop", "i=2253")]);
        assert.deepEqual(r.results, [StatusCodes.Good, StatusCodes.Good]);
        const d = await delNodes(s, [
            { nodeId: "ns=1;s=Keep", deleteTargetReferences: false },
            { nodeId: "ns=1;s=Drop", deleteTargetReferences: true },
        ]);
        assert.deepEqual(d.results, [StatusCodes.Good, StatusCodes.Good]);
        const objects = await s.browse({ nodeId: "i=85", referenceTypeId: "i=35", resultMask: 63 });
        const to = (id) => objects.references.filter((x) => x.nodeId.toString() === id);
        // Objects -> Keep is a reference of Objects: it stays, naming no node.
        assert.equal(to("ns=1;s=Keep").length, 1);
        assert.equal(to("ns=1;s=Keep")[0].nodeClass, NodeClass.Unspecified);
        assert.equal(to("ns=1;s=Drop").length, 0);
        // Keep -> Server was Keep's own: gone on both ends.
        const server = await s.browse({ nodeId: "i=2253", browseDirection: opcua.BrowseDirection.Inverse, resultMask: 63 });
        assert.ok(!server.references.some((x) => ["ns=1;s=Keep", "ns=1;s=Drop"].includes(x.nodeId.toString())));
    });
});

test("the NodeManagement store (nodeset_store): added nodes survive a restart, deleted ones stay gone, a corrupt store is refused", async () => {
    const store = join(work, "store.xml");
    const config = join(work, "store.ini");
    writeFileSync(config, `[nodesets]\nnodeset_store = ${store}\nnodeset_store_interval_ms = 0\n`);
    const args = ["--config", config, "--security", "None,Basic256Sha256:SignAndEncrypt", "--pki", pki, "--auto-accept"];
    const run = async (fn) => {
        const srv = await startServer(args, { register: false });
        try {
            await withSession(users.cora, fn, srv.url);
        } finally {
            const res = await srv.stop();
            assert.equal(res.code, 0, `clean exit: ${srv.stderr()}`);
        }
    };
    await run(async (s) => {
        const a = await addNodes(s, [
            objectItem("ns=1;s=Stored", "Stored"),
            variableItem("ns=1;s=Stored.Flow", "ns=1;s=Stored", "Flow", 4.75),
            objectItem("ns=1;s=Dropped", "Dropped"),
        ]);
        assert.deepEqual(a.results.map((r) => r.statusCode), [StatusCodes.Good, StatusCodes.Good, StatusCodes.Good]);
    });
    assert.match(readFileSync(store, "utf8"), /<UAVariable NodeId="ns=1;s=Stored.Flow"/);
    await run(async (s) => {
        assert.equal((await s.read({ nodeId: "ns=1;s=Stored.Flow", attributeId: AttributeIds.Value })).value.value, 4.75);
        const objects = await s.browse({ nodeId: "i=85", resultMask: 63 });
        assert.ok(objects.references.some((r) => r.browseName.name === "Stored"));
        const d = await delNodes(s, [{ nodeId: "ns=1;s=Dropped", deleteTargetReferences: true }]);
        assert.equal(d.results[0], StatusCodes.Good);
    });
    await run(async (s) => {
        const gone = await s.read({ nodeId: "ns=1;s=Dropped", attributeId: AttributeIds.NodeClass });
        assert.equal(gone.statusCode, StatusCodes.BadNodeIdUnknown);
        const kept = await s.read({ nodeId: "ns=1;s=Stored", attributeId: AttributeIds.NodeClass });
        assert.equal(kept.statusCode, StatusCodes.Good);
    });
    // A store that does not parse: the server does not start, and says where.
    writeFileSync(store, '<?xml version="1.0"?>\n<UANodeSet>\n  <UAObject NodeId="ns=1;q=1" BrowseName="1:X"/>\n</UANodeSet>\n');
    await assert.rejects(startServer(args, { register: false }), /store\.xml:3/);
});
