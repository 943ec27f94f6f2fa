// The address space seen from node-opcua: the whole of namespace 0 browsed
// and every attribute of every node read (each must encode and decode),
// continuation points, TranslateBrowsePathsToNodeIds, Write with index
// ranges and type checks on the contract nodes, Call with good and bad
// arguments, HistoryRead answered as unsupported.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, withSession } from "./lib/server.mjs";

const { AttributeIds, BrowseDirection, DataType, StatusCodes, VariantArrayType } = opcua;

const server = await startServer(["--array-sizes", "10"]);

test("every node reachable from Root answers all 27 attributes", async () => {
    await withSession(server.url, async (session) => {
        const seen = new Set(["ns=0;i=84"]);
        let frontier = ["ns=0;i=84"];
        while (frontier.length) {
            const next = [];
            for (let i = 0; i < frontier.length; i += 500) {
                const results = await session.browse(
                    frontier.slice(i, i + 500).map((nodeId) => ({
                        nodeId,
                        browseDirection: BrowseDirection.Forward,
                        referenceTypeId: "i=33", // HierarchicalReferences
                        includeSubtypes: true,
                        resultMask: 63,
                    }))
                );
                for (const r of results) {
                    assert.equal(r.statusCode, StatusCodes.Good);
                    for (const ref of r.references) {
                        const k = ref.nodeId.toString();
                        if (!seen.has(k)) {
                            seen.add(k);
                            next.push(k);
                        }
                    }
                }
            }
            frontier = next;
        }
        assert.ok(seen.size > 1000, `only ${seen.size} nodes under Root`);
        const ids = [...seen];
        for (let i = 0; i < ids.length; i += 100) {
            const nodesToRead = [];
            for (const nodeId of ids.slice(i, i + 100))
                for (let attributeId = 1; attributeId <= 27; attributeId++)
                    nodesToRead.push({ nodeId, attributeId });
            const dvs = await session.read(nodesToRead);
            dvs.forEach((dv, j) => {
                const { nodeId, attributeId } = nodesToRead[j];
                // RolePermissions needs ReadRolePermissions, which an
                // anonymous session does not have (docs/Security.md).
                const ok =
                    dv.statusCode === StatusCodes.Good ||
                    dv.statusCode === StatusCodes.BadAttributeIdInvalid ||
                    (attributeId === 24 && dv.statusCode === StatusCodes.BadUserAccessDenied);
                assert.ok(ok, `${nodeId} attribute ${attributeId}: ${dv.statusCode.toString()}`);
                if (attributeId <= 4) assert.equal(dv.statusCode, StatusCodes.Good);
            });
        }
    });
});

test("browsing with a small maximum pages through continuation points", async () => {
    await withSession(server.url, async (session) => {
        const all = await session.browse({ nodeId: "i=2253", browseDirection: BrowseDirection.Both });
        session.requestedMaxReferencesPerNode = 4;
        let r = await session.browse({ nodeId: "i=2253", browseDirection: BrowseDirection.Both });
        const got = [...r.references];
        while (r.continuationPoint) {
            r = await session.browseNext(r.continuationPoint, false);
            assert.equal(r.statusCode, StatusCodes.Good);
            got.push(...r.references);
        }
        assert.deepEqual(
            got.map((x) => x.nodeId.toString()),
            all.references.map((x) => x.nodeId.toString())
        );
        r = await session.browse({ nodeId: "i=2253", browseDirection: BrowseDirection.Both });
        const released = await session.browseNext(r.continuationPoint, true);
        assert.equal(released.statusCode, StatusCodes.Good);
        const again = await session.browseNext(r.continuationPoint, false);
        assert.equal(again.statusCode, StatusCodes.BadContinuationPointInvalid);
    });
});

test("TranslateBrowsePathsToNodeIds finds CurrentTime", async () => {
    await withSession(server.url, async (session) => {
        const r = await session.translateBrowsePath(
            opcua.makeBrowsePath("i=84", "/Objects/Server/ServerStatus/CurrentTime")
        );
        assert.equal(r.statusCode, StatusCodes.Good);
        assert.equal(r.targets[0].targetId.toString(), "ns=0;i=2258");
        const none = await session.translateBrowsePath(
            opcua.makeBrowsePath("i=84", "/Objects/Server/NoSuchThing")
        );
        assert.equal(none.statusCode, StatusCodes.BadNoMatch);
    });
});

test("Write checks types and index ranges", async () => {
    await withSession(server.url, async (session) => {
        const w = (nodeId, value, indexRange) =>
            session.write({ nodeId, attributeId: AttributeIds.Value, indexRange, value: { value } });
        assert.equal(await w("ns=1;i=1001", { dataType: DataType.Int32, value: 77 }), StatusCodes.Good);
        assert.equal(
            await w("ns=1;i=1001", { dataType: DataType.Double, value: 1.5 }),
            StatusCodes.BadTypeMismatch
        );
        const dv = await session.read({ nodeId: "ns=1;i=1001", attributeId: AttributeIds.Value });
        assert.equal(dv.value.value, 77);
        const arr = { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: [5, 6] };
        assert.equal(await w("ns=1;i=2001", arr, "2:3"), StatusCodes.Good);
        assert.equal(await w("ns=1;i=2001", arr, "9:10"), StatusCodes.BadIndexRangeNoData);
        const part = await session.read({
            nodeId: "ns=1;i=2001",
            attributeId: AttributeIds.Value,
            indexRange: "1:4",
        });
        assert.deepEqual([...part.value.value], [1, 5, 6, 4]);
        assert.equal(
            await w("i=2258", { dataType: DataType.DateTime, value: new Date() }),
            StatusCodes.BadNotWritable
        );
    });
});

test("Call checks arguments against InputArguments", async () => {
    await withSession(server.url, async (session) => {
        const call = (inputArguments) =>
            session.call({ objectId: "ns=1;s=Demo", methodId: "ns=1;s=Demo.Add", inputArguments });
        const ok = await call([
            { dataType: DataType.Int32, value: 2 },
            { dataType: DataType.Int32, value: 40 },
        ]);
        assert.equal(ok.statusCode, StatusCodes.Good);
        assert.equal(ok.outputArguments[0].value, 42);
        const bad = await call([
            { dataType: DataType.Int32, value: 2 },
            { dataType: DataType.String, value: "x" },
        ]);
        assert.equal(bad.statusCode, StatusCodes.BadInvalidArgument);
        assert.equal(bad.inputArgumentResults[1], StatusCodes.BadTypeMismatch);
        const missing = await call([{ dataType: DataType.Int32, value: 2 }]);
        assert.equal(missing.statusCode, StatusCodes.BadArgumentsMissing);
        const args = await session.getArgumentDefinition("ns=1;s=Demo.Add");
        assert.equal(args.inputArguments.length, 2);
        assert.equal(args.outputArguments[0].name, "sum");
    });
});

test("HistoryRead: no history anywhere", async () => {
    await withSession(server.url, async (session) => {
        const request = new opcua.HistoryReadRequest({
            historyReadDetails: new opcua.ReadRawModifiedDetails({
                startTime: new Date(0),
                endTime: new Date(),
                numValuesPerNode: 10,
            }),
            nodesToRead: [{ nodeId: "i=2258" }, { nodeId: "ns=1;i=424242" }],
        });
        const response = await new Promise((resolve, reject) =>
            session.performMessageTransaction(request, (err, r) => (err ? reject(err) : resolve(r)))
        );
        assert.deepEqual(
            response.results.map((r) => r.statusCode),
            [StatusCodes.BadHistoryOperationUnsupported, StatusCodes.BadNodeIdUnknown]
        );
    });
});
