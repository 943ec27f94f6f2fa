// Write seen from node-opcua: the contract variables, type checks,
// read-only nodes, index ranges.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, sharedSession } from "./lib/server.mjs";

const { AttributeIds, DataType, StatusCodes, VariantArrayType } = opcua;

const server = await startServer(["--array-sizes", "1000,100000"]);
const getSession = sharedSession(server);
const ARRAY = "ns=1;i=2001";
const BIG_ARRAY = "ns=1;i=2002"; // 100000 Int32

const int32 = (value) => ({ value: { dataType: DataType.Int32, value } });
const bv = (k) => `ns=1;i=${1001 + k}`;

async function readValues(nodeIds) {
    const session = await getSession();
    const dvs = await session.read(nodeIds.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })));
    return dvs.map((dv) => {
        assert.equal(dv.statusCode, StatusCodes.Good);
        return dv.value.value;
    });
}

test("contract variables: written values read back", async () => {
    const session = await getSession();
    const values = [42, -1, 0, 2147483647, -2147483648, 123456789];
    const nodes = values.map((_, i) => bv(10 + i));
    const results = await session.write(
        nodes.map((nodeId, i) => ({ nodeId, attributeId: AttributeIds.Value, value: int32(values[i]) }))
    );
    assert.deepEqual(results, values.map(() => StatusCodes.Good));
    assert.deepEqual(await readValues(nodes), values);
    // Written again: the last value wins.
    assert.equal(
        await session.write({ nodeId: nodes[0], attributeId: AttributeIds.Value, value: int32(43) }),
        StatusCodes.Good
    );
    assert.deepEqual(await readValues([nodes[0]]), [43]);
});

test("all 100 contract variables in one Write", async () => {
    const session = await getSession();
    const nodes = Array.from({ length: 100 }, (_, k) => bv(k));
    const results = await session.write(
        nodes.map((nodeId, k) => ({ nodeId, attributeId: AttributeIds.Value, value: int32(1000 + k) }))
    );
    assert.equal(results.length, 100);
    for (const r of results) assert.equal(r, StatusCodes.Good);
    assert.deepEqual(
        await readValues(nodes),
        nodes.map((_, k) => 1000 + k)
    );
});

test("a written source timestamp is kept", async () => {
    const session = await getSession();
    const t = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    const st = await session.write({
        nodeId: bv(50),
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, value: 5050 }, sourceTimestamp: t },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId: bv(50), attributeId: AttributeIds.Value });
    assert.equal(dv.value.value, 5050);
    assert.equal(dv.sourceTimestamp.getTime(), t.getTime());
});

test("wrong type: BadTypeMismatch, and the value is unchanged", async () => {
    const session = await getSession();
    const nodeId = bv(60);
    assert.equal(await session.write({ nodeId, attributeId: AttributeIds.Value, value: int32(6060) }), StatusCodes.Good);
    const wrong = [
        { dataType: DataType.Double, value: 1.5 },
        { dataType: DataType.Double, value: 7 },
        { dataType: DataType.String, value: "7" },
        { dataType: DataType.Int64, arrayType: VariantArrayType.Scalar, value: [0, 7] },
        { dataType: DataType.UInt32, value: 7 },
        { dataType: DataType.Int16, value: 7 },
        { dataType: DataType.Boolean, value: true },
        { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array([1, 2]) },
    ];
    for (const v of wrong) {
        const st = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: v } });
        assert.equal(st, StatusCodes.BadTypeMismatch, `${DataType[v.dataType]} ${v.arrayType ? "array" : ""}`.trim());
    }
    assert.deepEqual(await readValues([nodeId]), [6060]);
});

test("read-only nodes: BadNotWritable or BadUserAccessDenied", async () => {
    const session = await getSession();
    const cases = [
        ["i=2258", { dataType: DataType.DateTime, value: new Date() }], // ServerStatus.CurrentTime
        ["i=2259", { dataType: DataType.Int32, value: 1 }], // ServerStatus.State
        ["i=2255", { dataType: DataType.String, arrayType: VariantArrayType.Array, value: ["x"] }],
        ["i=11705", { dataType: DataType.UInt32, value: 1 }], // MaxNodesPerRead
    ];
    for (const [nodeId, v] of cases) {
        const [al] = await session.read([{ nodeId, attributeId: AttributeIds.AccessLevel }]);
        assert.equal(al.value.value & 2, 0, `${nodeId}: AccessLevel says not writable`);
        const st = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: v } });
        assert.ok(
            st === StatusCodes.BadNotWritable || st === StatusCodes.BadUserAccessDenied,
            `${nodeId}: ${st}`
        );
    }
    const now = (await session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value })).value.value;
    assert.ok(Math.abs(now.getTime() - Date.now()) < 60000, "CurrentTime still the server clock");
});

test("attributes other than Value are not writable (WriteMask 0)", async () => {
    const session = await getSession();
    const st = await session.write({
        nodeId: bv(1),
        attributeId: AttributeIds.DisplayName,
        value: { value: { dataType: DataType.LocalizedText, value: { text: "renamed" } } },
    });
    assert.equal(st, StatusCodes.BadNotWritable);
    const dn = await session.read({ nodeId: bv(1), attributeId: AttributeIds.DisplayName });
    assert.equal(dn.value.value.text, "BenchmarkValue1");
});

test("one bad item does not spoil the others", async () => {
    const session = await getSession();
    const [before] = await readValues([bv(71)]);
    const results = await session.write([
        { nodeId: bv(70), attributeId: AttributeIds.Value, value: int32(7070) },
        { nodeId: "ns=1;i=424242", attributeId: AttributeIds.Value, value: int32(1) },
        { nodeId: bv(71), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Float, value: 1 } } },
        { nodeId: bv(72), attributeId: AttributeIds.Value, value: int32(7272) },
    ]);
    assert.deepEqual(results, [
        StatusCodes.Good,
        StatusCodes.BadNodeIdUnknown,
        StatusCodes.BadTypeMismatch,
        StatusCodes.Good,
    ]);
    assert.deepEqual(await readValues([bv(70), bv(71), bv(72)]), [7070, before, 7272]);
});

test("indexRange writes part of an array", async () => {
    const session = await getSession();
    const st = await session.write({
        nodeId: ARRAY,
        attributeId: AttributeIds.Value,
        indexRange: "10:12",
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array([-7, -8, -9]) } },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId: ARRAY, attributeId: AttributeIds.Value, indexRange: "9:13" });
    assert.deepEqual(Array.from(dv.value.value), [9, -7, -8, -9, 13]);
    const whole = await session.read({ nodeId: ARRAY, attributeId: AttributeIds.Value });
    assert.equal(whole.value.value.length, 1000, "the array keeps its length");

    // Fewer elements than the range names: refused, nothing changes.
    const short = await session.write({
        nodeId: ARRAY,
        attributeId: AttributeIds.Value,
        indexRange: "20:25",
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array([1, 2]) } },
    });
    assert.ok(short.isNotGood(), `a short write is refused, got ${short}`);
    const after = await session.read({ nodeId: ARRAY, attributeId: AttributeIds.Value, indexRange: "20:25" });
    assert.deepEqual(Array.from(after.value.value), [20, 21, 22, 23, 24, 25]);

    const int32s = (vals) => ({
        value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array(vals) },
    });
    const write = (nodeId, indexRange, value) =>
        session.write({ nodeId, attributeId: AttributeIds.Value, indexRange, value });
    // Bad syntax ("5:5" is not a range).
    assert.equal(await write(ARRAY, "5:5", int32s([1])), StatusCodes.BadIndexRangeInvalid);
    // Beyond the end of the array.
    assert.equal(await write(ARRAY, "2000:2001", int32s([1, 2])), StatusCodes.BadIndexRangeNoData);
    // A single element is written as a one-element array...
    assert.equal(await write(ARRAY, "7", int32s([-70])), StatusCodes.Good);
    const seven = await session.read({ nodeId: ARRAY, attributeId: AttributeIds.Value, indexRange: "7" });
    assert.deepEqual(Array.from(seven.value.value), [-70]);
    // ...not as a scalar.
    assert.equal(await write(ARRAY, "7", int32(1)), StatusCodes.BadTypeMismatch);
    // A range on a scalar variable is refused. OPC 10000-4 7.27 suggests
    // BadIndexRangeNoData ("all other invalid requests with a valid syntax");
    // uastack answers BadWriteNotSupported, which is also refused.
    const onScalar = await write(bv(90), "0", int32s([1]));
    assert.ok(
        [StatusCodes.BadIndexRangeNoData, StatusCodes.BadWriteNotSupported].includes(onScalar),
        `range on a scalar: ${onScalar}`
    );
});

test("a whole array written and read back", async () => {
    const session = await getSession();
    const values = Int32Array.from({ length: 1000 }, (_, i) => 3 * i - 1500);
    const st = await session.write({
        nodeId: ARRAY,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: values } },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId: ARRAY, attributeId: AttributeIds.Value });
    assert.deepEqual(Array.from(dv.value.value), Array.from(values));
    // A scalar into the array variable is a type mismatch.
    const scalar = await session.write({ nodeId: ARRAY, attributeId: AttributeIds.Value, value: int32(1) });
    assert.equal(scalar, StatusCodes.BadTypeMismatch);
});

test("a 100000-element array written in one request (several chunks) and read back", async () => {
    const session = await getSession();
    const values = Int32Array.from({ length: 100000 }, (_, i) => (i * 7919) | 0);
    const st = await session.write({
        nodeId: BIG_ARRAY,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: values } },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId: BIG_ARRAY, attributeId: AttributeIds.Value });
    assert.equal(dv.value.value.length, 100000);
    assert.ok(Buffer.from(dv.value.value.buffer).equals(Buffer.from(values.buffer)), "same 100000 values");
});

test("a written status code is kept", async () => {
    const session = await getSession();
    const st = await session.write({
        nodeId: bv(80),
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, value: 8080 }, statusCode: StatusCodes.UncertainLastUsableValue },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId: bv(80), attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.UncertainLastUsableValue);
    assert.equal(dv.value.value, 8080);
    // A plain write makes it Good again.
    await session.write({ nodeId: bv(80), attributeId: AttributeIds.Value, value: int32(8081) });
    const again = await session.read({ nodeId: bv(80), attributeId: AttributeIds.Value });
    assert.equal(again.statusCode, StatusCodes.Good);
});
