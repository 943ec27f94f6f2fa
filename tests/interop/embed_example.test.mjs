// node-opcua against the embedding example (server/examples/embed_example.c)
// named by $EMBED_EXAMPLE: in the full build, and above all in the minimal
// profile (UA_MINIMAL: policy None, reduced namespace 0, one loop without
// locks, no events), a Read of its data source and a subscription that
// sees a write arrive. The example runs its own poll() loop (--exit-after).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as opcua from "node-opcua";
import { newClient } from "./lib/server.mjs";

const { AttributeIds, DataType, TimestampsToReturn, StatusCodes } = opcua;
const bin = process.env.EMBED_EXAMPLE;
if (!bin || !existsSync(bin)) throw new Error(`EMBED_EXAMPLE=${bin}: set it to the embed_example binary`);

const child = spawn(bin, ["--port", "0", "--exit-after", "120000"], { stdio: ["ignore", "pipe", "pipe"] });
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
process.on("exit", () => child.kill("SIGKILL"));
const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("embed_example did not start: " + out)), 20000);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => {
        out += d;
        const m = /listening on (opc\.tcp:\/\/\S+)/.exec(out);
        if (m) {
            clearTimeout(timer);
            resolve(m[1]);
        }
    });
});
after(async () => {
    child.kill("SIGTERM");
    assert.equal(await exited, 0, "embed_example did not stop cleanly");
});

async function withSession(fn) {
    const client = newClient();
    await client.connect(url);
    try {
        const session = await client.createSession();
        try {
            await fn(session);
        } finally {
            await session.close();
        }
    } finally {
        await client.disconnect();
    }
}

test("Read: the data source answers a Double", async () => {
    await withSession(async (session) => {
        const dv = await session.read({ nodeId: "ns=2;s=Sensor.Temperature", attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode.value, StatusCodes.Good.value);
        assert.equal(dv.value.dataType, DataType.Double);
        assert.ok(dv.value.value >= 20 && dv.value.value < 21, `temperature ${dv.value.value}`);
    });
});

test("subscription: the initial value, then a written one", async () => {
    await withSession(async (session) => {
        const sub = await session.createSubscription2({
            requestedPublishingInterval: 100, requestedMaxKeepAliveCount: 10,
            requestedLifetimeCount: 100, publishingEnabled: true,
        });
        const item = await sub.monitor(
            { nodeId: "ns=2;s=Sensor.SetPoint", attributeId: AttributeIds.Value },
            { samplingInterval: 50, queueSize: 10, discardOldest: true },
            TimestampsToReturn.Both
        );
        const values = [];
        const got = (pred) => new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error("no notification: " + JSON.stringify(values))), 10000);
            const check = () => { if (values.some(pred)) { clearTimeout(t); resolve(); } };
            item.on("changed", (dv) => { values.push(dv.value.value); check(); });
            check();
        });
        await got(() => true);
        const st = await session.write({
            nodeId: "ns=2;s=Sensor.SetPoint", attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Double, value: 23.25 } },
        });
        assert.equal(st.value, StatusCodes.Good.value);
        await got((v) => v === 23.25);
        await sub.terminate();
    });
});
