// Starts the uaserver binary named by $UASERVER for one test file and stops
// it when the file is done.
//
//   import { startServer, newClient } from "./lib/server.mjs";
//   const server = await startServer(["--array-sizes", "1000"]);
//   ... server.url ...
//
// startServer() must be called at the top level of the test file (or inside
// a describe()): it registers an after() hook there that stops the server
// (SIGTERM, then SIGKILL after a grace period) and fails the file when the
// server did not stop cleanly: a non-zero exit status or an
// AddressSanitizer/UndefinedBehaviorSanitizer report on its stderr, so the
// same tests catch memory errors and leaks when UASERVER is an ASan build.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import * as opcua from "node-opcua";

const START_TIMEOUT_MS = Number(process.env.UASERVER_START_TIMEOUT_MS || 20000);
const STOP_GRACE_MS = Number(process.env.UASERVER_STOP_GRACE_MS || 10000);

const SANITIZER_REPORT =
    /ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|ThreadSanitizer|SUMMARY: \w+Sanitizer/;

function serverBinary() {
    const bin = process.env.UASERVER;
    if (!bin) {
        throw new Error(
            "UASERVER is not set: point it at the uaserver binary, e.g. " +
                "UASERVER=build/release/server/uaserver node --test tests/interop/"
        );
    }
    if (!existsSync(bin)) throw new Error(`UASERVER=${bin}: no such file`);
    return bin;
}

/**
 * Spawn `uaserver --port 0 --bind 127.0.0.1 --contract ...extraArgs`, wait for
 * its "uaserver listening on opc.tcp://..." line and return
 * { url, port, process, stderr(), alive(), onStop(fn), stop() }.
 * With register: false no after() hook is installed: call stop() yourself.
 */
export async function startServer(extraArgs = [], { register = true } = {}) {
    const bin = serverBinary();
    const args = ["--port", "0", "--bind", "127.0.0.1", "--contract", ...extraArgs];
    // ASan: keep going to the end of the run to report leaks; no colours.
    const env = {
        ...process.env,
        ASAN_OPTIONS: process.env.ASAN_OPTIONS || "detect_leaks=1:color=never",
        UBSAN_OPTIONS: process.env.UBSAN_OPTIONS || "print_stacktrace=1:color=never",
    };
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
        stderr += d;
        if (process.env.UASERVER_VERBOSE) process.stderr.write(d);
    });
    const exited = new Promise((resolve) => {
        child.on("exit", (code, signal) => resolve({ code, signal }));
    });
    let exitInfo = null;
    exited.then((e) => (exitInfo = e));
    // Never leave a server behind, even when the test process dies early.
    const killOnExit = () => {
        if (exitInfo === null) child.kill("SIGKILL");
    };
    process.on("exit", killOnExit);
    // A crash can end this process without an "exit" event (an exception
    // thrown while the file is loaded): a shell watchdog holds a pipe from
    // us and kills the server when that pipe closes.
    const watchdog = spawn("sh", ["-c", `cat >/dev/null; kill -KILL ${child.pid} 2>/dev/null`], {
        stdio: ["pipe", "ignore", "ignore"],
    });
    watchdog.on("error", () => {});
    watchdog.unref();
    watchdog.stdin.on("error", () => {});
    watchdog.stdin.unref?.();
    const stopWatchdog = () => {
        watchdog.kill("SIGKILL");
        watchdog.stdin.destroy();
    };
    exited.then(stopWatchdog);

    let url;
    try {
        url = await new Promise((resolve, reject) => {
            const timer = setTimeout(
                () =>
                    reject(
                        new Error(
                            `uaserver did not print "listening on" within ${START_TIMEOUT_MS} ms\n` +
                                `stdout: ${stdout}\nstderr: ${stderr}`
                        )
                    ),
                START_TIMEOUT_MS
            );
            child.on("error", (err) => {
                clearTimeout(timer);
                reject(new Error(`cannot start ${bin}: ${err.message}`));
            });
            child.stdout.setEncoding("utf8");
            child.stdout.on("data", (d) => {
                stdout += d;
                const m = /uaserver listening on (opc\.tcp:\/\/\S+)/.exec(stdout);
                if (m) {
                    clearTimeout(timer);
                    resolve(m[1]);
                }
            });
            exited.then(({ code, signal }) => {
                clearTimeout(timer);
                reject(
                    new Error(
                        `uaserver exited before listening (code ${code}, signal ${signal})\n` +
                            `stdout: ${stdout}\nstderr: ${stderr}`
                    )
                );
            });
        });
    } catch (err) {
        killOnExit();
        throw err;
    }
    // (The stdout listener above stays: the pipe never fills up.)

    const cleanups = [];
    let stopping = null;
    async function stop() {
        if (!stopping) {
            stopping = (async () => {
                // Clients first, so they close their sessions politely.
                for (const fn of cleanups.splice(0).reverse()) {
                    try {
                        await fn();
                    } catch {
                        /* the server result below is what matters */
                    }
                }
                if (exitInfo === null) child.kill("SIGTERM");
                let timer;
                const grace = new Promise((resolve) => {
                    timer = setTimeout(() => resolve(null), STOP_GRACE_MS);
                });
                let res = await Promise.race([exited, grace]);
                let killed = false;
                if (res === null) {
                    killed = true;
                    child.kill("SIGKILL");
                    res = await exited;
                }
                clearTimeout(timer);
                process.removeListener("exit", killOnExit);
                return { ...res, killed };
            })();
        }
        return stopping;
    }

    const server = {
        url,
        port: Number(new URL(url.replace(/^opc\.tcp:/, "http:")).port),
        process: child,
        stderr: () => stderr,
        /** true while the process runs */
        alive: () => exitInfo === null,
        /** run fn (e.g. a client disconnect) before the server is stopped */
        onStop: (fn) => cleanups.push(fn),
        stop,
    };
    if (register) {
        after(async () => {
            const res = await stop();
            const report = SANITIZER_REPORT.exec(stderr);
            const problems = [];
            if (res.killed) problems.push(`did not stop within ${STOP_GRACE_MS} ms of SIGTERM (killed)`);
            else if (res.code !== 0) problems.push(`exit code ${res.code}, signal ${res.signal}`);
            if (report) problems.push(`sanitizer report ("${report[0]}")`);
            if (problems.length) {
                throw new Error(
                    `uaserver did not stop cleanly: ${problems.join("; ")}\n--- server stderr ---\n${stderr}`
                );
            }
        });
    }
    return server;
}

/** An OPCUAClient that fails fast instead of retrying. */
export function newClient(options = {}) {
    return opcua.OPCUAClient.create({
        endpointMustExist: false,
        connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
        ...options,
    });
}

/** Connect, create a session, run fn(session, client), always clean up. */
export async function withSession(url, fn, clientOptions = {}) {
    const client = newClient(clientOptions);
    await client.connect(url);
    let session;
    try {
        session = await client.createSession();
        return await fn(session, client);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect();
    }
}

/**
 * Open one client and session for a whole test file (created lazily on the
 * first call; closed before the server stops).
 */
export function sharedSession(server) {
    let pending = null;
    let client;
    let session;
    server.onStop(async () => {
        if (session) await session.close().catch(() => {});
        if (client) await client.disconnect().catch(() => {});
    });
    return () => {
        if (!pending) {
            pending = (async () => {
                client = newClient();
                await client.connect(server.url);
                session = await client.createSession();
                return session;
            })();
        }
        return pending;
    };
}

/** The status code a rejected service call carried (ServiceFault), or null. */
export function faultStatus(err) {
    if (!err) return null;
    if (err.response && err.response.responseHeader) return err.response.responseHeader.serviceResult;
    const m = /Bad\w+/.exec(err.message || "");
    return m ? m[0] : null;
}

/**
 * Send one request on a session as it is, bypassing node-opcua's own
 * checks and its session repair (it silently re-creates a session the
 * server called invalid). Resolves with the response; a ServiceFault
 * rejects with an Error whose faultStatus() is the service result.
 */
export function rawRequest(session, request) {
    return new Promise((resolve, reject) => {
        session._performMessageTransaction(request, (err, response) => (err ? reject(err) : resolve(response)));
    });
}

/** A config file for the server (INI text), deleted when the process exits. */
export function configFile(text) {
    const dir = mkdtempSync(join(tmpdir(), "uas-interop-"));
    const file = join(dir, "uaserver.ini");
    writeFileSync(file, text);
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    return file;
}
