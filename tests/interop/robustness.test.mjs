// Robustness seen from clients: many concurrent clients, and clients that
// vanish abruptly while others keep working.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { fileURLToPath } from "node:url";
import * as opcua from "node-opcua";
import { startServer, newClient } from "./lib/server.mjs";

const { AttributeIds, StatusCodes } = opcua;

// ns=1;i=2001 is a 100000-element Int32 array (400 kB): victims read it so
// that the server has a large response in flight when they vanish.
const server = await startServer(["--array-sizes", "100000"]);
const BIG_ARRAY = "ns=1;i=2001";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const bv = (k) => `ns=1;i=${1001 + k}`;

async function connectWithSession() {
    const client = newClient();
    await client.connect(server.url);
    const session = await client.createSession();
    return { client, session };
}

async function closeQuietly({ client, session }) {
    if (session) await session.close().catch(() => {});
    await client.disconnect().catch(() => {});
}

/** A Hello message (Part 6, 7.1.2.3) for raw-socket clients. */
function hello(url) {
    const u = Buffer.from(url, "utf8");
    const b = Buffer.alloc(32 + u.length);
    b.write("HELF", 0, "ascii");
    b.writeUInt32LE(b.length, 4);
    b.writeUInt32LE(0, 8); // protocol version
    b.writeUInt32LE(65536, 12); // receive buffer
    b.writeUInt32LE(65536, 16); // send buffer
    b.writeUInt32LE(0, 20); // max message size
    b.writeUInt32LE(0, 24); // max chunk count
    b.writeInt32LE(u.length, 28);
    u.copy(b, 32);
    return b;
}

function rawSocket() {
    return new Promise((resolve, reject) => {
        const s = net.connect({ host: "127.0.0.1", port: server.port }, () => resolve(s));
        s.on("error", () => {}); // resets are expected
        s.once("error", reject);
    });
}

/** Read the next `n` bytes from a socket (or fewer if it closes). */
function readBytes(s, n, timeoutMs = 5000) {
    return new Promise((resolve) => {
        let buf = Buffer.alloc(0);
        const done = () => {
            clearTimeout(t);
            s.off("data", onData);
            s.off("close", done);
            resolve(buf);
        };
        const onData = (d) => {
            buf = Buffer.concat([buf, d]);
            if (buf.length >= n) done();
        };
        const t = setTimeout(done, timeoutMs);
        s.on("data", onData);
        s.on("close", done);
    });
}

test("20 concurrent clients, each doing 50 reads in parallel, all succeed", async () => {
    const CLIENTS = 20;
    const READS = 50;
    const t0 = Date.now();
    const outcomes = await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
            const conn = await connectWithSession();
            try {
                const dvs = await Promise.all(
                    Array.from({ length: READS }, (_, i) => {
                        const k = (c * READS + i) % 100;
                        return conn.session
                            .read({ nodeId: bv(k), attributeId: AttributeIds.Value })
                            .then((dv) => [k, dv]);
                    })
                );
                for (const [k, dv] of dvs) {
                    assert.equal(dv.statusCode, StatusCodes.Good);
                    assert.equal(dv.value.value, k, `client ${c} BenchmarkValue${k}`);
                }
                return dvs.length;
            } finally {
                await closeQuietly(conn);
            }
        })
    );
    assert.equal(
        outcomes.reduce((a, b) => a + b, 0),
        CLIENTS * READS
    );
    assert.ok(Date.now() - t0 < 20000, `took ${Date.now() - t0} ms`);
});

test("clients that vanish abruptly do not disturb the others", async () => {
    // Steady clients read all along and must never see an error.
    let running = true;
    const errors = [];
    let reads = 0;
    const steady = await Promise.all(Array.from({ length: 4 }, connectWithSession));
    const loops = steady.flatMap(({ session }, c) =>
        Array.from({ length: 4 }, async (_, j) => {
            while (running) {
                const k = (c * 4 + j) % 100;
                try {
                    const dv = await session.read({ nodeId: bv(k), attributeId: AttributeIds.Value });
                    if (dv.statusCode !== StatusCodes.Good || dv.value.value !== k)
                        errors.push(`client ${c}: ${dv.statusCode} ${dv.value.value}`);
                    reads++;
                } catch (err) {
                    errors.push(`client ${c}: ${err.message}`);
                }
            }
        })
    );

    // 1. node-opcua clients whose socket is destroyed with requests in flight:
    //    one closes with FIN, one with RST.
    for (const how of ["destroy", "resetAndDestroy"]) {
        const victim = await connectWithSession();
        const pending = Array.from({ length: 8 }, () =>
            victim.session.read({ nodeId: BIG_ARRAY, attributeId: AttributeIds.Value }).catch(() => null)
        );
        await sleep(30);
        const socket = victim.client._secureChannel.getTransport()._socket;
        assert.ok(socket instanceof net.Socket, "found the client's socket");
        socket[how]();
        await Promise.all(pending);
        await victim.client.disconnect().catch(() => {});
    }

    // 2. A client process killed with SIGKILL while it reads.
    const child = spawn(
        process.execPath,
        [fileURLToPath(new URL("./lib/abrupt_client.mjs", import.meta.url)), server.url],
        { stdio: ["ignore", "pipe", "ignore"] }
    );
    try {
        // A hang guard, not a timing check: a fresh Node process loading
        // node-opcua took over 15 s on a loaded CI machine.
        await new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error("the client process did not get ready")), 60000);
            child.stdout.on("data", (d) => {
                if (String(d).includes("ready")) {
                    clearTimeout(t);
                    resolve();
                }
            });
            child.on("exit", (code) => reject(new Error(`the client process exited (${code})`)));
        });
        await sleep(100);
    } finally {
        child.kill("SIGKILL");
    }

    // 3. Raw sockets: closed at once, garbage, a Hello then half a message
    //    reset, a Hello then gone before the Acknowledge is read.
    (await rawSocket()).destroy();
    {
        // Part 6, 7.1.5: an Error message, then the server closes.
        const s = await rawSocket();
        s.write(Buffer.alloc(100, 0x5a));
        const err = await readBytes(s, 16, 3000);
        assert.equal(err.subarray(0, 4).toString("ascii"), "ERRF", "an Error message");
        assert.equal(err.readUInt32LE(8), StatusCodes.BadTcpMessageTypeInvalid.value);
        s.destroy();
    }
    {
        const s = await rawSocket();
        s.write(hello(server.url));
        const ack = await readBytes(s, 28);
        assert.equal(ack.subarray(0, 4).toString("ascii"), "ACKF", "the server acknowledges the Hello");
        // The first 20 bytes of an OpenSecureChannel chunk that claims 1000.
        const opn = Buffer.alloc(20);
        opn.write("OPNF", 0, "ascii");
        opn.writeUInt32LE(1000, 4);
        s.write(opn);
        await sleep(20);
        s.resetAndDestroy();
    }
    {
        const s = await rawSocket();
        s.write(hello(server.url));
        s.destroy();
    }

    await sleep(300);
    running = false;
    await Promise.all(loops);
    await Promise.all(steady.map(closeQuietly));

    assert.deepEqual(errors, [], "the steady clients saw no error");
    assert.ok(reads > 50, `the steady clients kept reading (${reads} reads)`);
    assert.ok(server.alive(), "the server is still running");

    // A newcomer is served as usual.
    const fresh = await connectWithSession();
    try {
        const dv = await fresh.session.read({ nodeId: bv(7), attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode, StatusCodes.Good);
        assert.equal(dv.value.value, 7);
    } finally {
        await closeQuietly(fresh);
    }
});

test("many short connections in a row", async () => {
    for (let i = 0; i < 50; i++) {
        const s = await rawSocket();
        s.write(hello(server.url));
        const ack = await readBytes(s, 28);
        assert.equal(ack.subarray(0, 4).toString("ascii"), "ACKF", `connection ${i}`);
        s.end();
        s.destroy();
    }
    const fresh = await connectWithSession();
    const dv = await fresh.session.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
    assert.equal(dv.value.value, opcua.ServerState.Running);
    await closeQuietly(fresh);
});
