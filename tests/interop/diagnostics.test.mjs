// Subscription figures of the Server object seen from node-opcua (OPC
// 10000-5 6.3.2 ServerCapabilities, 6.3.3/12.9 ServerDiagnosticsSummary): the
// limits the server advertises are the ones it enforces, and the
// subscription counters follow creation, modification, transfer and
// deletion on both event loops (--threads 2), also while a client monitors
// them (they are then sampled under one loop's subscription engine).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as opcua from "node-opcua";
import { startServer, newClient, rawRequest, faultStatus } from "./lib/server.mjs";

const { AttributeIds, DataType, StatusCodes, TimestampsToReturn, MonitoringMode, UserTokenType } = opcua;

// alice: subscriptions of anonymous None sessions are their session's
// alone (issue #18, 12), so the transfer below is made as a user.
const UAPKI = process.env.UAPKI || join(dirname(dirname(process.env.UASERVER || ".")), "pki", "uapki");
const work = mkdtempSync(join(tmpdir(), "uas-diag-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));
execFileSync(UAPKI, ["--store", join(work, "pki"), "user", "add", "alice", "--password-stdin"], {
    input: "wonderland\n",
    stdio: ["pipe", "pipe", "pipe"],
});
const ALICE = { type: UserTokenType.UserName, userName: "alice", password: "wonderland" };
const server = await startServer([
    "--threads", "2", "--security", "None,Basic256Sha256:SignAndEncrypt", "--pki", join(work, "pki"),
]);

const CAP = {
    MaxSubscriptions: "i=24096",
    MaxMonitoredItems: "i=24097",
    MaxSubscriptionsPerSession: "i=24098",
    MaxSelectClauseParameters: "i=24099",
    MaxWhereClauseParameters: "i=24100",
    MaxMonitoredItemsPerSubscription: "i=24104",
    MaxMonitoredItemsQueueSize: "i=31916",
    MaxMonitoredItemsPerCall: "i=11714", // OperationLimits
};
const SUMMARY = "i=2275";
const PUBLISHING_INTERVAL_COUNT = "i=2284";
const CURRENT_SUBSCRIPTION_COUNT = "i=2285";
const CUMULATED_SUBSCRIPTION_COUNT = "i=2286";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, ms, what) {
    const t0 = Date.now();
    while (!(await cond())) {
        if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(20);
    }
}

/** A client and session, closed before the server stops (if not before). */
async function open(identity = undefined) {
    const client = newClient();
    await client.connect(server.url);
    const session = await client.createSession(identity);
    const c = { client, session, done: false };
    c.close = async (deleteSubscriptions = true) => {
        if (c.done) return;
        c.done = true;
        await session.close(deleteSubscriptions).catch(() => {});
        await client.disconnect().catch(() => {});
    };
    server.onStop(() => c.close());
    return c;
}

async function readU32(session, nodeId) {
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.Good, `${nodeId}: ${dv.statusCode}`);
    assert.equal(dv.value.dataType, DataType.UInt32, `${nodeId} is a UInt32`);
    return dv.value.value;
}

/** The three subscription figures, from their variables and from the summary. */
async function figures(session) {
    const current = await readU32(session, CURRENT_SUBSCRIPTION_COUNT);
    const cumulated = await readU32(session, CUMULATED_SUBSCRIPTION_COUNT);
    const intervals = await readU32(session, PUBLISHING_INTERVAL_COUNT);
    const dv = await session.read({ nodeId: SUMMARY, attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.Good);
    const s = dv.value.value;
    assert.deepEqual(
        [s.currentSubscriptionCount, s.cumulatedSubscriptionCount, s.publishingIntervalCount],
        [current, cumulated, intervals],
        "the summary says the same as its variables"
    );
    return { current, cumulated, intervals };
}

async function createSub(session, interval) {
    const r = await rawRequest(
        session,
        new opcua.CreateSubscriptionRequest({
            requestedPublishingInterval: interval,
            requestedLifetimeCount: 600,
            requestedMaxKeepAliveCount: 10,
            publishingEnabled: true,
        })
    );
    return r.subscriptionId;
}

const loopOf = (subscriptionId) => (subscriptionId - 1) % 2;

test("ServerCapabilities advertises the subscription limits, and MaxSubscriptionsPerSession is enforced", async () => {
    const c = await open();
    const v = {};
    for (const [name, nodeId] of Object.entries(CAP)) v[name] = await readU32(c.session, nodeId);
    assert.ok(v.MaxSubscriptions >= v.MaxSubscriptionsPerSession, `MaxSubscriptions ${v.MaxSubscriptions}`);
    // The defaults of issue 12 (server-wide counts, docs/Security.md).
    assert.equal(v.MaxSubscriptions, 20000);
    assert.equal(v.MaxSubscriptionsPerSession, 50);
    assert.equal(v.MaxMonitoredItems, 200000);
    assert.equal(v.MaxMonitoredItemsPerSubscription, 50000);
    assert.equal(v.MaxMonitoredItemsQueueSize, 10000, "the larger of the data and event queue limits");
    assert.equal(v.MaxSelectClauseParameters, 0, "not limited");
    assert.equal(v.MaxWhereClauseParameters, 0, "not limited");
    assert.equal(v.MaxMonitoredItemsPerCall, 0, "not limited");

    // The advertised per-session limit is the enforced one.
    const ids = [];
    for (let i = 0; i < v.MaxSubscriptionsPerSession; i++) ids.push(await createSub(c.session, 1000));
    const over = await createSub(c.session, 1000).then(
        () => null,
        (err) => faultStatus(err)
    );
    assert.ok(
        String(over).includes("BadTooManySubscriptions"),
        `subscription ${v.MaxSubscriptionsPerSession + 1}: ${over}`
    );
    // A queue size beyond the advertised maximum is revised to it.
    const item = await rawRequest(
        c.session,
        new opcua.CreateMonitoredItemsRequest({
            subscriptionId: ids[0],
            timestampsToReturn: TimestampsToReturn.Both,
            itemsToCreate: [
                {
                    itemToMonitor: { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
                    monitoringMode: MonitoringMode.Reporting,
                    requestedParameters: {
                        clientHandle: 1,
                        queueSize: 1e6,
                        filter: new opcua.EventFilter({
                            selectClauses: [{ browsePath: [{ name: "Severity" }], attributeId: AttributeIds.Value }],
                        }),
                    },
                },
            ],
        })
    );
    assert.equal(item.results[0].statusCode.value, StatusCodes.Good.value, `${item.results[0].statusCode}`);
    assert.equal(item.results[0].revisedQueueSize, v.MaxMonitoredItemsQueueSize);
    await c.close();
});

test("ServerDiagnosticsSummary counts subscriptions and publishing intervals on both loops", async () => {
    const watcher = await open();
    const f0 = await figures(watcher.session);
    assert.equal(f0.current, 0, "nothing left by the test before");
    assert.equal(f0.intervals, 0);

    // Sessions until both loops hold a subscription of 100 ms.
    const sessions = [];
    const subs = [];
    for (let i = 0; i < 12 && new Set(subs.map((s) => loopOf(s.id))).size < 2; i++) {
        const c = await open(ALICE);
        sessions.push(c);
        subs.push({ c, id: await createSub(c.session, 100) });
    }
    assert.equal(new Set(subs.map((s) => loopOf(s.id))).size, 2, "subscriptions on both loops");
    const n = subs.length;
    const a = subs[0].c;
    const s250 = await createSub(a.session, 250);
    const s3333 = await createSub(a.session, 3333);
    let f = await figures(watcher.session);
    assert.deepEqual(f, { current: n + 2, cumulated: f0.cumulated + n + 2, intervals: 3 }, "100, 250 and 3333 ms");

    // ModifySubscription: 250 -> 3333 ms leaves two distinct intervals.
    const m = await rawRequest(
        a.session,
        new opcua.ModifySubscriptionRequest({
            subscriptionId: s250,
            requestedPublishingInterval: 3333,
            requestedLifetimeCount: 600,
            requestedMaxKeepAliveCount: 10,
        })
    );
    assert.equal(m.revisedPublishingInterval, 3333);
    f = await figures(watcher.session);
    assert.deepEqual(f, { current: n + 2, cumulated: f0.cumulated + n + 2, intervals: 2 });

    // A transfer to a session on the other loop neither creates nor deletes.
    const other = subs.find((s) => loopOf(s.id) !== loopOf(subs[0].id)).c;
    const tr = await rawRequest(
        other.session,
        new opcua.TransferSubscriptionsRequest({ subscriptionIds: [s3333], sendInitialValues: false })
    );
    assert.equal(tr.results[0].statusCode.value, StatusCodes.Good.value, `${tr.results[0].statusCode}`);
    f = await figures(watcher.session);
    assert.deepEqual(f, { current: n + 2, cumulated: f0.cumulated + n + 2, intervals: 2 });

    // DeleteSubscriptions, then closing the sessions with theirs.
    const del = await rawRequest(a.session, new opcua.DeleteSubscriptionsRequest({ subscriptionIds: [s250] }));
    assert.equal(del.results[0].value, StatusCodes.Good.value);
    f = await figures(watcher.session);
    assert.deepEqual(f, { current: n + 1, cumulated: f0.cumulated + n + 2, intervals: 2 });
    for (const c of sessions) await c.close();
    f = await figures(watcher.session);
    assert.deepEqual(f, { current: 0, cumulated: f0.cumulated + n + 2, intervals: 0 });
    await watcher.close();
});

test("a client monitoring CurrentSubscriptionCount sees it change while other loops create subscriptions", async () => {
    const w = await open();
    const sub = await w.session.createSubscription2({
        requestedPublishingInterval: 50,
        requestedMaxKeepAliveCount: 10,
        requestedLifetimeCount: 600,
        publishingEnabled: true,
    });
    const item = await sub.monitor(
        { nodeId: CURRENT_SUBSCRIPTION_COUNT, attributeId: AttributeIds.Value },
        { samplingInterval: 50, queueSize: 10, discardOldest: true },
        TimestampsToReturn.Both
    );
    const seen = [];
    item.on("changed", (dv) => seen.push(dv.value.value));
    await waitFor(() => seen.length >= 1, 5000, "the first sample");
    const base = seen.at(-1);
    // Sessions on both loops create and delete subscriptions while the
    // watcher's engine samples the count.
    const others = [];
    for (let i = 0; i < 6; i++) others.push(await open());
    const ids = await Promise.all(others.map((c) => createSub(c.session, 100)));
    await waitFor(() => seen.at(-1) === base + ids.length, 5000, `the count ${base + ids.length} (seen ${seen})`);
    await Promise.all(
        others.map((c, i) =>
            rawRequest(c.session, new opcua.DeleteSubscriptionsRequest({ subscriptionIds: [ids[i]] }))
        )
    );
    await waitFor(() => seen.at(-1) === base, 5000, `the count back to ${base} (seen ${seen})`);
    for (const c of others) await c.close();
    await sub.terminate();
    await w.close();
});
