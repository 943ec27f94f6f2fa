// The server-wide limits' usage seen from node-opcua (issue 12): the
// Server/uastack object of the server's namespace, found by browsing, with
// the memory budget (its configured limit), monitored items, queue slots,
// orphans and connections, read live: the values follow what clients do,
// also when the variable is itself monitored (then sampled).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, newClient, configFile } from "./lib/server.mjs";

const { AttributeIds, DataType, StatusCodes, TimestampsToReturn, BrowseDirection } = opcua;

const BUDGET = 48 * 1024 * 1024;
const server = await startServer([
    "--threads", "2",
    "--config", configFile(`[transport]\nmemory_budget = ${BUDGET}\n`),
]);

const VARS = {
    MemoryBudget: ["Limit", "InUse", "Peak", "Refusals", "ConnectionsDropped", "SubscriptionQueueBytes",
        "SubscriptionQueueRefusals", "Trims"],
    Subscriptions: ["MonitoredItems", "QueuedNotifications", "OrphanedSubscriptions", "OrphansDropped",
        "LimitRefusals"],
    Connections: ["Current", "RefusedPerAddress", "IdleChannelsClosed", "AcceptFailures"],
};
const U64 = new Set(["Limit", "InUse", "Peak", "Refusals", "ConnectionsDropped", "SubscriptionQueueBytes", "Trims"]);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function open() {
    const client = newClient();
    await client.connect(server.url);
    const session = await client.createSession();
    const close = async () => {
        await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    };
    server.onStop(close);
    return { client, session, close };
}

/** A Server/uastack variable as a Number (UInt64 arrives as [high, low]). */
async function diag(session, path) {
    const dv = await session.read({ nodeId: `ns=1;s=uastack.${path}`, attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.Good, `${path}: ${dv.statusCode}`);
    const name = path.split(".")[1];
    assert.equal(dv.value.dataType, U64.has(name) ? DataType.UInt64 : DataType.UInt32, `${path}'s type`);
    const v = dv.value.value;
    return Array.isArray(v) ? v[0] * 2 ** 32 + v[1] : Number(v);
}

async function waitFor(cond, ms, what) {
    const t0 = Date.now();
    while (!(await cond())) {
        if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(20);
    }
}

test("Server/uastack is browsable and every variable reads, the budget as configured", async () => {
    const { session, close } = await open();
    const server = await session.browse({
        nodeId: "i=2253",
        browseDirection: BrowseDirection.Forward,
        resultMask: 63,
    });
    const ref = server.references.find((r) => r.browseName.toString() === "1:uastack");
    assert.ok(ref, "Server has the uastack object");
    const groups = await session.browse({ nodeId: ref.nodeId, browseDirection: BrowseDirection.Forward, referenceTypeId: "i=47", resultMask: 63 });
    const names = groups.references.map((r) => r.browseName.name).sort();
    assert.deepEqual(names, Object.keys(VARS).sort());
    for (const [group, vars] of Object.entries(VARS)) {
        const g = groups.references.find((r) => r.browseName.name === group);
        const children = await session.browse({ nodeId: g.nodeId, browseDirection: BrowseDirection.Forward, referenceTypeId: "i=47", resultMask: 63 });
        assert.deepEqual(children.references.map((r) => r.browseName.name).sort(), [...vars].sort(), group);
        for (const v of vars) await diag(session, `${group}.${v}`);
    }
    assert.equal(await diag(session, "MemoryBudget.Limit"), BUDGET);
    assert.ok((await diag(session, "Connections.Current")) >= 1);
    await close();
});

test("monitored items, queue slots and orphans are live, also when monitored", async () => {
    const { session, close } = await open();
    const items0 = await diag(session, "Subscriptions.MonitoredItems");
    const bytes0 = await diag(session, "MemoryBudget.SubscriptionQueueBytes");
    const sub = await session.createSubscription2({
        requestedPublishingInterval: 100,
        requestedLifetimeCount: 600,
        requestedMaxKeepAliveCount: 10,
        publishingEnabled: true,
    });
    // The count of monitored items, monitored: it counts itself, then the
    // 20 items below, as the server samples it.
    const seen = [];
    const watch = await sub.monitor(
        { nodeId: "ns=1;s=uastack.Subscriptions.MonitoredItems", attributeId: AttributeIds.Value },
        { samplingInterval: 100, queueSize: 10, discardOldest: true },
        TimestampsToReturn.Both
    );
    watch.on("changed", (dv) => seen.push(Number(dv.value.value)));
    await waitFor(async () => seen.includes(items0 + 1), 5000, "the item counting itself");
    const group = await sub.monitorItems(
        Array.from({ length: 20 }, (_, i) => ({ nodeId: `ns=1;i=${1001 + i}`, attributeId: AttributeIds.Value })),
        { samplingInterval: 100, queueSize: 5, discardOldest: true },
        TimestampsToReturn.Both
    );
    await waitFor(async () => seen.includes(items0 + 21), 5000, "21 items, sampled");
    assert.equal(await diag(session, "Subscriptions.MonitoredItems"), items0 + 21);
    assert.ok((await diag(session, "Subscriptions.QueuedNotifications")) >= 20 * 5);
    assert.ok((await diag(session, "MemoryBudget.SubscriptionQueueBytes")) > bytes0, "queues hold budget bytes");
    await group.terminate();
    assert.equal(await diag(session, "Subscriptions.MonitoredItems"), items0 + 1);
    await sub.terminate();
    assert.equal(await diag(session, "Subscriptions.MonitoredItems"), items0);

    // A session that goes and leaves its subscription makes an orphan.
    const orphans0 = await diag(session, "Subscriptions.OrphanedSubscriptions");
    const other = await open();
    await other.session.createSubscription2({
        requestedPublishingInterval: 100,
        requestedLifetimeCount: 600,
        requestedMaxKeepAliveCount: 10,
        publishingEnabled: true,
    });
    await other.session.close(false);
    await other.client.disconnect();
    await waitFor(
        async () => (await diag(session, "Subscriptions.OrphanedSubscriptions")) === orphans0 + 1,
        5000,
        "the orphan"
    );
    await close();
});
