// Read seen from node-opcua: the Server object, attributes, structures,
// index ranges, big requests, timestamps and errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, sharedSession, rawRequest, faultStatus } from "./lib/server.mjs";

const { AttributeIds, DataType, NodeClass, StatusCodes, VariantArrayType, TimestampsToReturn } = opcua;

const server = await startServer(["--array-sizes", "1000,100000"]);
const getSession = sharedSession(server);

const ARRAY_1000 = "ns=1;i=2001";
const ARRAY_100000 = "ns=1;i=2002";

async function readValue(nodeId, extra = {}) {
    const session = await getSession();
    return session.read({ nodeId, attributeId: AttributeIds.Value, ...extra });
}

test("ServerStatus decodes to a ServerStatusDataType: Running, with BuildInfo", async () => {
    const before = Date.now();
    const dv = await readValue("i=2256");
    assert.equal(dv.statusCode, StatusCodes.Good);
    assert.equal(dv.value.dataType, DataType.ExtensionObject);
    const st = dv.value.value;
    assert.ok(st instanceof opcua.ServerStatusDataType, `got ${st && st.constructor.name}`);
    assert.equal(st.state, opcua.ServerState.Running);
    assert.ok(st.startTime instanceof Date && st.currentTime instanceof Date);
    assert.ok(st.startTime <= st.currentTime, "started before now");
    assert.ok(Math.abs(st.currentTime.getTime() - before) < 60000, "currentTime is the time of day");
    const bi = st.buildInfo;
    assert.ok(bi instanceof opcua.BuildInfo);
    for (const f of ["productUri", "manufacturerName", "productName", "softwareVersion", "buildNumber"]) {
        assert.equal(typeof bi[f], "string", f);
        assert.ok(bi[f].length > 0, `${f} is not empty`);
    }
    assert.ok(bi.buildDate instanceof Date && bi.buildDate.getTime() > Date.UTC(2000, 0, 1), "a build date");
    assert.equal(st.secondsTillShutdown, 0);

    // The component variables say the same.
    const session = await getSession();
    const parts = await session.read(
        ["i=2257", "i=2259", "i=2261", "i=2262", "i=2263"].map((nodeId) => ({
            nodeId,
            attributeId: AttributeIds.Value,
        }))
    );
    for (const p of parts) assert.equal(p.statusCode, StatusCodes.Good);
    assert.equal(parts[0].value.value.getTime(), st.startTime.getTime(), "StartTime");
    assert.equal(parts[1].value.value, opcua.ServerState.Running, "State");
    assert.equal(parts[2].value.value, bi.productName, "BuildInfo.ProductName");
    assert.equal(parts[3].value.value, bi.productUri, "BuildInfo.ProductUri");
    assert.equal(parts[4].value.value, bi.manufacturerName, "BuildInfo.ManufacturerName");
});

test("ServerStatus.CurrentTime advances", async () => {
    const a = await readValue("i=2258");
    await new Promise((r) => setTimeout(r, 250));
    const b = await readValue("i=2258");
    assert.equal(a.statusCode, StatusCodes.Good);
    assert.ok(a.value.value instanceof Date);
    const dt = b.value.value.getTime() - a.value.value.getTime();
    assert.ok(dt >= 150 && dt < 10000, `advanced by ${dt} ms`);
    assert.ok(Math.abs(b.value.value.getTime() - Date.now()) < 60000, "close to the local clock");
});

test("NamespaceArray and ServerArray", async () => {
    const ns = await readValue("i=2255");
    assert.equal(ns.statusCode, StatusCodes.Good);
    assert.equal(ns.value.dataType, DataType.String);
    assert.equal(ns.value.arrayType, VariantArrayType.Array);
    assert.equal(ns.value.value[0], "http://opcfoundation.org/UA/");
    assert.equal(ns.value.value[1], "urn:o6:benchmark:server");
    const servers = await readValue("i=2254");
    assert.equal(servers.value.value[0], "urn:o6:benchmark:server");
});

test("ServerCapabilities.OperationLimits are advertised and MaxNodesPerRead holds", async () => {
    const session = await getSession();
    const limits = {
        MaxNodesPerRead: "i=11705",
        MaxNodesPerWrite: "i=11707",
        MaxNodesPerMethodCall: "i=11709",
        MaxNodesPerBrowse: "i=11710",
        MaxNodesPerTranslateBrowsePathsToNodeIds: "i=11712",
        MaxNodesPerNodeManagement: "i=11713",
    };
    const got = {};
    for (const [name, nodeId] of Object.entries(limits)) {
        const [bn, dv] = await session.read([
            { nodeId, attributeId: AttributeIds.BrowseName },
            { nodeId, attributeId: AttributeIds.Value },
        ]);
        assert.equal(bn.value.value.name, name);
        assert.equal(dv.statusCode, StatusCodes.Good, name);
        assert.equal(dv.value.dataType, DataType.UInt32, name);
        got[name] = dv.value.value;
    }
    assert.ok(got.MaxNodesPerRead > 0, "MaxNodesPerRead > 0");
    assert.ok(got.MaxNodesPerNodeManagement > 0, "NodeManagement is offered: its limit > 0");
    if (got.MaxNodesPerRead <= 20000) {
        // Exactly the limit is served (a request of several chunks)...
        const full = await session.read(
            Array.from({ length: got.MaxNodesPerRead }, (_, i) => ({
                nodeId: `ns=1;i=${1001 + (i % 100)}`,
                attributeId: AttributeIds.Value,
            }))
        );
        assert.equal(full.length, got.MaxNodesPerRead);
        assert.equal(full.at(-1).value.value, (got.MaxNodesPerRead - 1) % 100);
        // ...one more is refused as a whole.
        const nodesToRead = Array.from({ length: got.MaxNodesPerRead + 1 }, (_, i) => ({
            nodeId: `ns=1;i=${1001 + (i % 100)}`,
            attributeId: AttributeIds.Value,
        }));
        await assert.rejects(
            rawRequest(session, new opcua.ReadRequest({ nodesToRead, timestampsToReturn: TimestampsToReturn.Neither })),
            (err) => {
                assert.equal(faultStatus(err), StatusCodes.BadTooManyOperations);
                return true;
            }
        );
    }
});

test("every attribute of a contract variable", async () => {
    const session = await getSession();
    const nodeId = "ns=1;i=1001";
    const ids = Object.values(AttributeIds).filter((v) => typeof v === "number" && v > 0 && v < 100);
    const dvs = await session.read(ids.map((attributeId) => ({ nodeId, attributeId })));
    const a = {};
    ids.forEach((id, i) => (a[AttributeIds[id]] = dvs[i]));
    const good = (name) => {
        assert.equal(a[name].statusCode, StatusCodes.Good, name);
        return a[name].value;
    };
    assert.equal(good("NodeId").value.toString(), "ns=1;i=1001");
    assert.equal(good("NodeClass").value, NodeClass.Variable);
    assert.equal(good("BrowseName").value.toString(), "1:BenchmarkValue0");
    assert.equal(good("DisplayName").value.text, "BenchmarkValue0");
    assert.equal(good("Description").dataType, DataType.LocalizedText);
    assert.equal(good("WriteMask").value, 0);
    assert.equal(good("UserWriteMask").value, 0);
    const v = good("Value");
    assert.equal(v.dataType, DataType.Int32);
    assert.equal(v.arrayType, VariantArrayType.Scalar);
    assert.equal(v.value, 0);
    assert.equal(good("DataType").value.toString(), "ns=0;i=6", "Int32");
    assert.equal(good("ValueRank").value, -1, "scalar");
    const dims = good("ArrayDimensions").value;
    assert.ok(dims === null || dims.length === 0, "no ArrayDimensions for a scalar");
    assert.equal(good("AccessLevel").value, 3, "CurrentRead | CurrentWrite");
    assert.equal(good("UserAccessLevel").value, 3);
    assert.equal(good("MinimumSamplingInterval").dataType, DataType.Double);
    assert.equal(good("Historizing").value, false);
    if (a.AccessLevelEx.statusCode === StatusCodes.Good) assert.equal(a.AccessLevelEx.value.value & 0xff, 3);
    // Attributes a Variable does not have.
    for (const name of [
        "IsAbstract",
        "Symmetric",
        "InverseName",
        "ContainsNoLoops",
        "EventNotifier",
        "Executable",
        "UserExecutable",
        "DataTypeDefinition",
    ]) {
        assert.equal(a[name].statusCode, StatusCodes.BadAttributeIdInvalid, name);
    }
    // Attribute ids that do not exist (node-opcua refuses to build them:
    // patched in after construction).
    const rq = new opcua.ReadRequest({
        nodesToRead: [
            { nodeId, attributeId: AttributeIds.Value },
            { nodeId, attributeId: AttributeIds.Value },
        ],
        timestampsToReturn: TimestampsToReturn.Neither,
    });
    rq.nodesToRead[0].attributeId = 0;
    rq.nodesToRead[1].attributeId = 99;
    const bogus = await rawRequest(session, rq);
    for (const dv of bogus.results) assert.equal(dv.statusCode, StatusCodes.BadAttributeIdInvalid);
    // An Object has no Value.
    const obj = await readValue("i=2253");
    assert.equal(obj.statusCode, StatusCodes.BadAttributeIdInvalid);
});

test("attributes of other node classes", async () => {
    const session = await getSession();
    const [abs, sym, inv, exec, uexec, ev] = await session.read([
        { nodeId: "i=338", attributeId: AttributeIds.IsAbstract },
        { nodeId: "i=35", attributeId: AttributeIds.Symmetric },
        { nodeId: "i=35", attributeId: AttributeIds.InverseName },
        { nodeId: "ns=1;s=Demo.Add", attributeId: AttributeIds.Executable },
        { nodeId: "ns=1;s=Demo.Add", attributeId: AttributeIds.UserExecutable },
        { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
    ]);
    assert.equal(abs.value.value, false, "BuildInfo is concrete");
    assert.equal(sym.value.value, false, "Organizes is not symmetric");
    assert.equal(inv.value.value.text, "OrganizedBy");
    assert.equal(exec.value.value, true);
    assert.equal(uexec.value.value, true);
    assert.equal(ev.value.dataType, DataType.Byte);
});

test("DataTypeDefinition of BuildInfo (i=338)", async () => {
    const session = await getSession();
    const dv = await session.read({ nodeId: "i=338", attributeId: AttributeIds.DataTypeDefinition });
    assert.equal(dv.statusCode, StatusCodes.Good);
    const def = dv.value.value;
    assert.equal(def && def.constructor.name, "StructureDefinition");
    assert.equal(def.structureType, 0, "StructureType.Structure");
    assert.equal(def.baseDataType.toString(), "ns=0;i=22", "Structure");
    assert.equal(def.defaultEncodingId.toString(), "ns=0;i=340", "BuildInfo_Encoding_DefaultBinary");
    assert.deepEqual(
        def.fields.map((f) => [f.name, f.dataType.toString(), f.valueRank, f.isOptional]),
        [
            ["ProductUri", "ns=0;i=12", -1, false],
            ["ManufacturerName", "ns=0;i=12", -1, false],
            ["ProductName", "ns=0;i=12", -1, false],
            ["SoftwareVersion", "ns=0;i=12", -1, false],
            ["BuildNumber", "ns=0;i=12", -1, false],
            ["BuildDate", "ns=0;i=294", -1, false], // UtcTime
        ]
    );
});

test("DataTypeDefinition of ServerState (i=852) is an EnumDefinition", async () => {
    const session = await getSession();
    const dv = await session.read({ nodeId: "i=852", attributeId: AttributeIds.DataTypeDefinition });
    assert.equal(dv.statusCode, StatusCodes.Good);
    const def = dv.value.value;
    assert.equal(def && def.constructor.name, "EnumDefinition");
    const fields = def.fields.map((f) => [f.name, Number(f.value[1])]);
    assert.deepEqual(fields.slice(0, 2), [
        ["Running", 0],
        ["Failed", 1],
    ]);
    assert.ok(fields.some(([n, v]) => n === "Shutdown" && v === 4));
});

test("an unknown node is BadNodeIdUnknown, without spoiling the other items", async () => {
    const session = await getSession();
    const dvs = await session.read([
        { nodeId: "ns=1;i=1005", attributeId: AttributeIds.Value },
        { nodeId: "ns=1;i=424242", attributeId: AttributeIds.Value },
        { nodeId: "ns=7;s=nowhere", attributeId: AttributeIds.DisplayName },
        { nodeId: "ns=1;g=72962B91-FA75-4AE6-8D28-B404DC7DAF63", attributeId: AttributeIds.Value },
        { nodeId: "ns=1;b=AQIDBA==", attributeId: AttributeIds.Value },
        { nodeId: "ns=1;s=BenchmarkValue0", attributeId: AttributeIds.Value }, // a name, not an id
        { nodeId: "ns=1;i=1006", attributeId: AttributeIds.Value },
    ]);
    assert.equal(dvs[0].statusCode, StatusCodes.Good);
    assert.equal(dvs[0].value.value, 4);
    for (const dv of dvs.slice(1, -1)) assert.equal(dv.statusCode, StatusCodes.BadNodeIdUnknown);
    assert.equal(dvs.at(-1).value.value, 5);
});

test("RegisterNodes gives ids that read like the originals", async () => {
    const session = await getSession();
    const ids = ["ns=1;i=1003", "i=2258", "ns=1;s=Demo"];
    const registered = await session.registerNodes(ids);
    assert.equal(registered.length, 3);
    const dvs = await session.read(registered.map((nodeId) => ({ nodeId, attributeId: AttributeIds.BrowseName })));
    assert.deepEqual(
        dvs.map((dv) => dv.value.value.toString()),
        ["1:BenchmarkValue2", "CurrentTime", "1:Demo"]
    );
    await session.unregisterNodes(registered);
});

test("indexRange on an array variable (1000 Int32)", async () => {
    const session = await getSession();
    const [rank, dims] = await session.read([
        { nodeId: ARRAY_1000, attributeId: AttributeIds.ValueRank },
        { nodeId: ARRAY_1000, attributeId: AttributeIds.ArrayDimensions },
    ]);
    assert.equal(rank.value.value, 1);
    assert.deepEqual(Array.from(dims.value.value), [1000]);

    const whole = await readValue(ARRAY_1000);
    assert.equal(whole.value.arrayType, VariantArrayType.Array);
    assert.equal(whole.value.value.length, 1000);

    const cases = [
        ["10:14", StatusCodes.Good, [10, 11, 12, 13, 14]],
        ["7", StatusCodes.Good, [7]],
        ["998:999", StatusCodes.Good, [998, 999]],
        ["995:1005", StatusCodes.Good, [995, 996, 997, 998, 999]], // upper bound beyond: partial
        ["1000:1010", StatusCodes.BadIndexRangeNoData, null], // lower bound beyond
        ["2000", StatusCodes.BadIndexRangeNoData, null],
        ["5:3", StatusCodes.BadIndexRangeInvalid, null], // syntax: first < second
        ["5:5", StatusCodes.BadIndexRangeInvalid, null],
        ["abc", StatusCodes.BadIndexRangeInvalid, null],
        ["1,1", StatusCodes.BadIndexRangeNoData, null], // two dimensions on a one-dimensional array
    ];
    for (const [range, status, values] of cases) {
        const dv = await session.read({ nodeId: ARRAY_1000, attributeId: AttributeIds.Value, indexRange: range });
        assert.equal(dv.statusCode, status, `indexRange "${range}": ${dv.statusCode}`);
        if (values) assert.deepEqual(Array.from(dv.value.value), values, `indexRange "${range}"`);
    }
    // A range on a scalar selects nothing.
    const scalar = await readValue("ns=1;i=1001", { indexRange: "0" });
    assert.equal(scalar.statusCode, StatusCodes.BadIndexRangeNoData);
});

test("a 100000-element array arrives whole (a multi-chunk response)", async () => {
    const dv = await readValue(ARRAY_100000);
    assert.equal(dv.statusCode, StatusCodes.Good);
    assert.equal(dv.value.value.length, 100000);
    assert.equal(dv.value.value[0], 0);
    assert.equal(dv.value.value[99999], 99999 % 1000);
    const part = await readValue(ARRAY_100000, { indexRange: "50000:50003" });
    assert.deepEqual(Array.from(part.value.value), [0, 1, 2, 3]);
});

test("1000 nodes in one Read", async () => {
    const session = await getSession();
    const nodesToRead = [];
    for (let i = 0; i < 1000; i++) nodesToRead.push({ nodeId: `ns=1;i=${1001 + (i % 100)}`, attributeId: AttributeIds.Value });
    const dvs = await session.read(nodesToRead);
    assert.equal(dvs.length, 1000);
    dvs.forEach((dv, i) => {
        assert.equal(dv.statusCode, StatusCodes.Good);
        assert.equal(dv.value.dataType, DataType.Int32);
        assert.equal(dv.value.value, i % 100, `item ${i}`);
    });
});

test("timestampsToReturn selects the timestamps", async () => {
    const session = await getSession();
    const read = async (ttr) =>
        (
            await rawRequest(
                session,
                new opcua.ReadRequest({
                    nodesToRead: [{ nodeId: "ns=1;i=1010", attributeId: AttributeIds.Value }],
                    timestampsToReturn: ttr,
                })
            )
        ).results[0];
    const both = await read(TimestampsToReturn.Both);
    assert.ok(both.sourceTimestamp instanceof Date && both.serverTimestamp instanceof Date);
    const src = await read(TimestampsToReturn.Source);
    assert.ok(src.sourceTimestamp instanceof Date);
    assert.equal(src.serverTimestamp, null);
    const srv = await read(TimestampsToReturn.Server);
    assert.equal(srv.sourceTimestamp, null);
    assert.ok(srv.serverTimestamp instanceof Date);
    const neither = await read(TimestampsToReturn.Neither);
    assert.equal(neither.sourceTimestamp, null);
    assert.equal(neither.serverTimestamp, null);
    assert.equal(neither.value.value, 9);
    // Source timestamps belong to the Value attribute only.
    const dn = (
        await rawRequest(
            session,
            new opcua.ReadRequest({
                nodesToRead: [{ nodeId: "ns=1;i=1010", attributeId: AttributeIds.DisplayName }],
                timestampsToReturn: TimestampsToReturn.Both,
            })
        )
    ).results[0];
    assert.equal(dn.sourceTimestamp, null, "no source timestamp for DisplayName");
    assert.ok(dn.serverTimestamp instanceof Date);
});

test("request-level errors: negative maxAge, nothing to read", async () => {
    const session = await getSession();
    await assert.rejects(
        rawRequest(
            session,
            new opcua.ReadRequest({
                maxAge: -1,
                nodesToRead: [{ nodeId: "i=2258", attributeId: AttributeIds.Value }],
                timestampsToReturn: TimestampsToReturn.Both,
            })
        ),
        (err) => {
            assert.equal(faultStatus(err), StatusCodes.BadMaxAgeInvalid);
            return true;
        }
    );
    await assert.rejects(
        rawRequest(session, new opcua.ReadRequest({ nodesToRead: [], timestampsToReturn: TimestampsToReturn.Both })),
        (err) => {
            assert.equal(faultStatus(err), StatusCodes.BadNothingToDo);
            return true;
        }
    );
});

test("dataEncoding: Default Binary for structures only", async () => {
    const ok = await readValue("i=2256", { dataEncoding: "Default Binary" });
    assert.equal(ok.statusCode, StatusCodes.Good);
    assert.ok(ok.value.value instanceof opcua.ServerStatusDataType);
    const scalar = await readValue("ns=1;i=1001", { dataEncoding: "Default Binary" });
    assert.equal(scalar.statusCode, StatusCodes.BadDataEncodingInvalid);
    const xml = await readValue("i=2256", { dataEncoding: "Default XML" });
    assert.equal(xml.statusCode, StatusCodes.BadDataEncodingUnsupported);
});
