// TranslateBrowsePathsToNodeIds seen from node-opcua.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, sharedSession } from "./lib/server.mjs";

const { makeBrowsePath, StatusCodes } = opcua;

const server = await startServer();
const getSession = sharedSession(server);

async function translate(path, start = "RootFolder") {
    const session = await getSession();
    return session.translateBrowsePath(makeBrowsePath(start, path));
}

const targetsOf = (r) => r.targets.map((t) => t.targetId.toString());

test("/Objects/Server/ServerStatus/CurrentTime is i=2258", async () => {
    const r = await translate("/Objects/Server/ServerStatus/CurrentTime");
    assert.equal(r.statusCode, StatusCodes.Good);
    assert.deepEqual(targetsOf(r), ["ns=0;i=2258"]);
    assert.equal(r.targets[0].remainingPathIndex, 0xffffffff, "the whole path was followed");
});

test("more well-known paths", async () => {
    const cases = [
        ["/Objects/Server", "ns=0;i=2253"],
        ["/Objects/Server.NamespaceArray", "ns=0;i=2255"],
        ["/Objects/Server/ServerCapabilities/OperationLimits/MaxNodesPerRead", "ns=0;i=11705"],
        ["/Objects/Server/ServerStatus/BuildInfo/ProductName", "ns=0;i=2261"],
        ["/Types/DataTypes/BaseDataType/Structure/BuildInfo", "ns=0;i=338"],
        ["/Objects/1:BenchmarkValue5", "ns=1;i=1006"],
        ["/Objects/1:BenchmarkValue99", "ns=1;i=1100"],
        ["/Objects/1:Demo/1:Add", "ns=1;s=Demo.Add"],
        ["/Objects/1:Demo/1:Add.InputArguments", null],
    ];
    for (const [path, id] of cases) {
        const r = await translate(path);
        assert.equal(r.statusCode, StatusCodes.Good, path);
        assert.equal(r.targets.length, 1, path);
        if (id) assert.equal(targetsOf(r)[0], id, path);
    }
});

test("from another starting node", async () => {
    const r = await translate("/ServerStatus/State", "ns=0;i=2253");
    assert.equal(r.statusCode, StatusCodes.Good);
    assert.deepEqual(targetsOf(r), ["ns=0;i=2259"]);
    const demo = await translate("/1:Add", "ns=1;s=Demo");
    assert.deepEqual(targetsOf(demo), ["ns=1;s=Demo.Add"]);
});

test("inverse and exact reference types in a path", async () => {
    // "<!Organizes>": follow Organizes backwards; "<#Organizes>": no subtypes.
    const up = await translate("<!Organizes>Objects", "ns=1;i=1001");
    assert.deepEqual(targetsOf(up), ["ns=0;i=85"]);
    const exact = await translate("<#Organizes>1:BenchmarkValue0", "ns=0;i=85");
    assert.deepEqual(targetsOf(exact), ["ns=1;i=1001"]);
    const wrongType = await translate("<#HasComponent>1:BenchmarkValue0", "ns=0;i=85");
    assert.equal(wrongType.statusCode, StatusCodes.BadNoMatch);
});

test("a missing path is BadNoMatch", async () => {
    for (const path of [
        "/Objects/Server/NoSuchChild",
        "/Objects/Server/ServerStatus/CurrentTime/Deeper",
        "/Objects/BenchmarkValue5", // namespace 0 name: the node is in namespace 1
        "/Objects/1:BenchmarkValue100",
    ]) {
        const r = await translate(path);
        assert.equal(r.statusCode, StatusCodes.BadNoMatch, path);
        assert.equal((r.targets || []).length, 0, path);
    }
});

test("an unknown starting node is BadNodeIdUnknown", async () => {
    const r = await translate("/Server", "ns=1;i=424242");
    assert.equal(r.statusCode, StatusCodes.BadNodeIdUnknown);
});

test("several paths in one request", async () => {
    const session = await getSession();
    const paths = [];
    for (let k = 0; k < 100; k++) paths.push(makeBrowsePath("ObjectsFolder", `/1:BenchmarkValue${k}`));
    paths.push(makeBrowsePath("ObjectsFolder", "/Nope"));
    const results = await session.translateBrowsePath(paths);
    assert.equal(results.length, 101);
    for (let k = 0; k < 100; k++) {
        assert.equal(results[k].statusCode, StatusCodes.Good);
        assert.equal(results[k].targets[0].targetId.toString(), `ns=1;i=${1001 + k}`);
    }
    assert.equal(results[100].statusCode, StatusCodes.BadNoMatch);
});
