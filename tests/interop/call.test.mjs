// Call seen from node-opcua: ns=1;s=Demo.Add(Int32 a, Int32 b) -> Int32 sum.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, sharedSession } from "./lib/server.mjs";

const { DataType, StatusCodes } = opcua;

const server = await startServer();
const getSession = sharedSession(server);

const OBJECT = "ns=1;s=Demo";
const METHOD = "ns=1;s=Demo.Add";
const i32 = (value) => ({ dataType: DataType.Int32, value });

async function add(inputArguments, objectId = OBJECT, methodId = METHOD) {
    const session = await getSession();
    return session.call({ objectId, methodId, inputArguments });
}

test("Demo.Add(2, 40) = 42", async () => {
    const r = await add([i32(2), i32(40)]);
    assert.equal(r.statusCode, StatusCodes.Good);
    assert.equal(r.outputArguments.length, 1);
    assert.equal(r.outputArguments[0].dataType, DataType.Int32);
    assert.equal(r.outputArguments[0].value, 42);
    for (const st of r.inputArgumentResults || []) assert.equal(st, StatusCodes.Good);
});

test("Demo.Add on more values, several calls in one request", async () => {
    const session = await getSession();
    const pairs = [
        [-5, 5],
        [-2147483648, 0],
        [2147483647, 0],
        [2147483646, 1],
        [1000000, -2000000],
    ];
    const results = await session.call(
        pairs.map(([a, b]) => ({ objectId: OBJECT, methodId: METHOD, inputArguments: [i32(a), i32(b)] }))
    );
    assert.equal(results.length, pairs.length);
    results.forEach((r, i) => {
        assert.equal(r.statusCode, StatusCodes.Good);
        assert.equal(r.outputArguments[0].value, pairs[i][0] + pairs[i][1]);
    });
});

test("the method's arguments are described by InputArguments/OutputArguments", async () => {
    const session = await getSession();
    const def = await session.getArgumentDefinition(METHOD);
    assert.deepEqual(
        def.inputArguments.map((a) => [a.name, a.dataType.toString(), a.valueRank]),
        [
            ["a", "ns=0;i=6", -1],
            ["b", "ns=0;i=6", -1],
        ]
    );
    assert.deepEqual(
        def.outputArguments.map((a) => [a.name, a.dataType.toString(), a.valueRank]),
        [["sum", "ns=0;i=6", -1]]
    );
});

test("wrong argument type: BadInvalidArgument, inputArgumentResults say which", async () => {
    const first = await add([{ dataType: DataType.Double, value: 2 }, i32(40)]);
    assert.equal(first.statusCode, StatusCodes.BadInvalidArgument);
    assert.deepEqual(first.inputArgumentResults, [StatusCodes.BadTypeMismatch, StatusCodes.Good]);
    assert.equal((first.outputArguments || []).length, 0);

    const second = await add([i32(2), { dataType: DataType.String, value: "40" }]);
    assert.equal(second.statusCode, StatusCodes.BadInvalidArgument);
    assert.deepEqual(second.inputArgumentResults, [StatusCodes.Good, StatusCodes.BadTypeMismatch]);
});

test("missing argument: BadArgumentsMissing", async () => {
    assert.equal((await add([i32(2)])).statusCode, StatusCodes.BadArgumentsMissing);
    assert.equal((await add([])).statusCode, StatusCodes.BadArgumentsMissing);
});

test("too many arguments: BadTooManyArguments", async () => {
    const r = await add([i32(1), i32(2), i32(3)]);
    assert.equal(r.statusCode, StatusCodes.BadTooManyArguments);
});

test("overflow: BadOutOfRange", async () => {
    assert.equal((await add([i32(2147483647), i32(1)])).statusCode, StatusCodes.BadOutOfRange);
    assert.equal((await add([i32(-2147483648), i32(-1)])).statusCode, StatusCodes.BadOutOfRange);
    // The method still works afterwards.
    assert.equal((await add([i32(1), i32(1)])).outputArguments[0].value, 2);
});

test("wrong object or method", async () => {
    // A method called on an object that does not have it.
    const other = await add([i32(1), i32(2)], "i=2253");
    assert.equal(other.statusCode, StatusCodes.BadMethodInvalid);
    // A method id that is not a method.
    const notMethod = await add([i32(1), i32(2)], OBJECT, "ns=1;i=1001");
    assert.equal(notMethod.statusCode, StatusCodes.BadMethodInvalid);
    const unknownMethod = await add([i32(1), i32(2)], OBJECT, "ns=1;s=Demo.Nope");
    assert.equal(unknownMethod.statusCode, StatusCodes.BadMethodInvalid);
    // An object that does not exist.
    const unknownObject = await add([i32(1), i32(2)], "ns=1;s=Nowhere");
    assert.equal(unknownObject.statusCode, StatusCodes.BadNodeIdUnknown);
});

// SERVER DEVIATION (fails against uastack at the time of writing; reported
// to the lead, see tests/interop/README.md). Server.GetMonitoredItems
// (i=11492) and Server.ResendData (i=12873) are advertised with
// Executable = true, but calling them answers BadNotImplemented. OPC 10000-5
// 9.1 and 9.2 define their result: Bad_SubscriptionIdInvalid for a
// subscription that does not exist - and with no subscription service every
// id is one that does not exist. node-opcua's session.getMonitoredItems()
// throws BadNotImplemented where it should throw BadSubscriptionIdInvalid.
test("Server.GetMonitoredItems / ResendData on an unknown subscription: BadSubscriptionIdInvalid", async () => {
    const session = await getSession();
    await assert.rejects(session.getMonitoredItems(4242), /BadSubscriptionIdInvalid/);
    const resend = await session.call({
        objectId: "i=2253",
        methodId: "i=12873", // Server.ResendData
        inputArguments: [{ dataType: DataType.UInt32, value: 4242 }],
    });
    assert.equal(resend.statusCode, StatusCodes.BadSubscriptionIdInvalid);
});
