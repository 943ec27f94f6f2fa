// Session services seen from node-opcua: CreateSession/ActivateSession,
// revised timeouts, several sessions on one connection, closing,
// reconnecting, an anonymous None session that may not move to a new
// connection, session expiry.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, newClient, rawRequest, faultStatus, configFile } from "./lib/server.mjs";

const { AttributeIds, DataType, StatusCodes, TimestampsToReturn } = opcua;

// Short limits so that revision, expiry and token renewal are quick to
// observe.
const MIN_TIMEOUT = 1000;
const MAX_TIMEOUT = 600000;
const server = await startServer([
    "--config",
    configFile(
        "[transport]\nmin_token_lifetime_ms = 1000\n" +
            `[session]\nmin_session_timeout_ms = ${MIN_TIMEOUT}\nmax_session_timeout_ms = ${MAX_TIMEOUT}\n`
    ),
]);
// A second server that allows only two sessions.
const small = await startServer(["--config", configFile("[session]\nmax_sessions = 2\n")]);

async function diagnostics(session) {
    // Server.ServerDiagnostics.ServerDiagnosticsSummary
    const dv = await session.read({ nodeId: "i=2275", attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.Good);
    return dv.value.value;
}

const readCurrentTime = (session) =>
    session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });

function readRequest(nodeId = "i=2258") {
    return new opcua.ReadRequest({
        nodesToRead: [{ nodeId, attributeId: AttributeIds.Value }],
        timestampsToReturn: TimestampsToReturn.Neither,
    });
}

test("connect, create and activate a session, read, close, disconnect", async () => {
    const client = newClient({ requestedSessionTimeout: 60000 });
    await client.connect(server.url);
    const session = await client.createSession();
    assert.ok(session.sessionId && !session.sessionId.isEmpty(), "a sessionId");
    assert.equal(session.timeout, 60000, "a timeout inside the limits is granted as asked");
    const dv = await readCurrentTime(session);
    assert.equal(dv.statusCode, StatusCodes.Good);
    assert.ok(dv.value.value instanceof Date);
    await session.close();
    await client.disconnect();
});

test("the session timeout is revised into the server's limits", async () => {
    for (const [asked, granted] of [
        [1e9, MAX_TIMEOUT],
        [10, MIN_TIMEOUT],
        [5000, 5000],
    ]) {
        const client = newClient({ requestedSessionTimeout: asked });
        await client.connect(server.url);
        const session = await client.createSession();
        assert.equal(session.timeout, granted, `asked ${asked} ms`);
        await session.close();
        await client.disconnect();
    }
});

test("ServerDiagnosticsSummary counts sessions", async () => {
    const client = newClient();
    await client.connect(server.url);
    const a = await client.createSession();
    const d0 = await diagnostics(a);
    assert.ok(d0.currentSessionCount >= 1);
    const b = await client.createSession();
    const d1 = await diagnostics(a);
    assert.equal(d1.cumulatedSessionCount, d0.cumulatedSessionCount + 1);
    assert.equal(d1.currentSessionCount, d0.currentSessionCount + 1);
    await b.close();
    const d2 = await diagnostics(a);
    assert.equal(d2.currentSessionCount, d0.currentSessionCount);
    await a.close();
    await client.disconnect();
});

test("two sessions on one connection work independently", async () => {
    const client = newClient();
    await client.connect(server.url);
    const a = await client.createSession();
    const b = await client.createSession();
    assert.notEqual(a.sessionId.toString(), b.sessionId.toString());
    assert.notEqual(a.authenticationToken.toString(), b.authenticationToken.toString());
    const nodeId = "ns=1;i=1042";
    const w = await a.write({
        nodeId,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, value: -777 } },
    });
    assert.equal(w, StatusCodes.Good);
    const seen = await b.read({ nodeId, attributeId: AttributeIds.Value });
    assert.equal(seen.value.value, -777, "a write through one session is seen by the other");
    await a.close();
    const still = await readCurrentTime(b);
    assert.equal(still.statusCode, StatusCodes.Good, "closing one session leaves the other");
    await b.close();
    await client.disconnect();
});

test("twelve sessions on one connection all work", async () => {
    const client = newClient();
    await client.connect(server.url);
    const sessions = [];
    try {
        for (let i = 0; i < 12; i++) sessions.push(await client.createSession());
        for (let round = 0; round < 2; round++) {
            for (const s of sessions) assert.equal((await readCurrentTime(s)).statusCode, StatusCodes.Good);
        }
    } finally {
        for (const s of sessions) await s.close();
        await client.disconnect();
    }
});

test("ActivateSession again on the same connection keeps the session", async () => {
    const client = newClient();
    await client.connect(server.url);
    const session = await client.createSession();
    const id = session.sessionId.toString();
    const st = await client.changeSessionIdentity(session, { type: opcua.UserTokenType.Anonymous });
    assert.equal(st, StatusCodes.Good);
    assert.equal(session.sessionId.toString(), id);
    assert.equal((await readCurrentTime(session)).statusCode, StatusCodes.Good);
    await session.close();
    await client.disconnect();
});

test("past max_sessions, CreateSession is refused with BadTooManySessions", async () => {
    const client = newClient();
    await client.connect(small.url);
    const a = await client.createSession();
    const b = await client.createSession();
    await assert.rejects(client.createSession(), /BadTooManySessions/);
    await b.close();
    const c = await client.createSession(); // room again
    await c.close();
    await a.close();
    await client.disconnect();
});

test("a closed session's token is refused", async () => {
    const client = newClient();
    await client.connect(server.url);
    const a = await client.createSession();
    const b = await client.createSession();
    const closedToken = a.authenticationToken;
    await a.close();
    const own = b.authenticationToken;
    b.authenticationToken = closedToken;
    try {
        await assert.rejects(rawRequest(b, readRequest()), (err) => {
            const st = faultStatus(err);
            assert.ok(
                st === StatusCodes.BadSessionIdInvalid || st === StatusCodes.BadSessionClosed,
                `expected BadSessionIdInvalid or BadSessionClosed, got ${st}`
            );
            return true;
        });
    } finally {
        b.authenticationToken = own;
    }
    assert.equal((await readCurrentTime(b)).statusCode, StatusCodes.Good);
    await b.close();
    await client.disconnect();
});

test("reconnect after closing: new connections and sessions keep working", async () => {
    for (let i = 0; i < 3; i++) {
        const client = newClient();
        await client.connect(server.url);
        const session = await client.createSession();
        assert.equal((await readCurrentTime(session)).statusCode, StatusCodes.Good);
        await session.close();
        await client.disconnect();
    }
});

test("an anonymous session of a None channel does not move to a new connection", async () => {
    // Its authenticationToken travels in the clear on a None channel: with
    // nothing else to prove who it is, a second connection holding only the
    // token must not take the session over (Part 4, 5.6.3.1; issue #18, 7).
    // A user name session moves with its password (security.test.mjs).
    const first = newClient();
    await first.connect(server.url);
    const session = await first.createSession();
    const second = newClient();
    await second.connect(server.url);
    try {
        await assert.rejects(second.reactivateSession(session), (err) => {
            assert.match(String(err.message), /BadUserAccessDenied|0x801f0000/i, String(err.message));
            return true;
        });
        // The session still answers on its own connection.
        const other = await first.createSession();
        const own = other.authenticationToken;
        other.authenticationToken = session.authenticationToken;
        try {
            const r = await rawRequest(other, readRequest());
            assert.equal(r.results[0].statusCode, StatusCodes.Good, "the session stays on the first channel");
        } finally {
            other.authenticationToken = own;
        }
        await other.close();
    } finally {
        await first.disconnect();
        await second.disconnect();
    }
});

test("a session without traffic expires after its revised timeout", async () => {
    const watcher = newClient();
    await watcher.connect(server.url);
    const observer = await watcher.createSession();
    const before = await diagnostics(observer);
    const client = newClient({ requestedSessionTimeout: MIN_TIMEOUT, keepSessionAlive: false });
    await client.connect(server.url);
    const session = await client.createSession();
    assert.equal(session.timeout, MIN_TIMEOUT);
    // A request inside the timeout keeps it alive.
    await new Promise((r) => setTimeout(r, MIN_TIMEOUT / 2));
    await rawRequest(session, readRequest());
    await new Promise((r) => setTimeout(r, MIN_TIMEOUT / 2));
    const alive = await rawRequest(session, readRequest());
    assert.equal(alive.results[0].statusCode, StatusCodes.Good, "still alive after 1 s of activity");
    // Then silence for more than the timeout (the server checks every second).
    await new Promise((r) => setTimeout(r, MIN_TIMEOUT + 2000));
    await assert.rejects(rawRequest(session, readRequest()), (err) => {
        assert.equal(faultStatus(err), StatusCodes.BadSessionIdInvalid);
        return true;
    });
    await client.disconnect();
    const after = await diagnostics(observer);
    assert.equal(after.sessionTimeoutCount, before.sessionTimeoutCount + 1, "SessionTimeoutCount");
    await observer.close();
    await watcher.disconnect();
});

test("the secure channel token is renewed and the session goes on", async () => {
    // The server's minimum token lifetime is 1 s here: node-opcua renews at 75%.
    const client = newClient({ defaultSecureTokenLifetime: 1000 });
    let renewed = 0;
    client.on("security_token_renewed", () => renewed++);
    await client.connect(server.url);
    const session = await client.createSession();
    const t0 = Date.now();
    let reads = 0;
    while (Date.now() - t0 < 3000) {
        const dv = await readCurrentTime(session);
        assert.equal(dv.statusCode, StatusCodes.Good);
        reads++;
        await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(renewed >= 2, `token renewed ${renewed} times`);
    assert.ok(reads > 20);
    await session.close();
    await client.disconnect();
});
