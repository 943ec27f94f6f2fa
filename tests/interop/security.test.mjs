// Secured channels and user authentication seen from node-opcua: every
// offered policy x mode opens, reads and writes; anonymous, user name (the
// password encrypted with the server certificate) and X.509 user tokens;
// a wrong password; a response of several MiB over many encrypted chunks;
// an untrusted client certificate refused, landing in rejected/ and
// accepted once `uapki trust` promotes it; the contract's one-endpoint
// secured mode with given certificate files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createPrivateKey } from "node:crypto";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as opcua from "node-opcua";
import { startServer, newClient, faultStatus } from "./lib/server.mjs";

const { AttributeIds, DataType, MessageSecurityMode, SecurityPolicy, StatusCodes, UserTokenType } =
    opcua;

const UAPKI = process.env.UAPKI || join(dirname(dirname(process.env.UASERVER || ".")), "pki", "uapki");
const work = mkdtempSync(join(tmpdir(), "uas-sec-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));

function uapki(args, input) {
    return execFileSync(UAPKI, args, { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
}

// node-opcua keeps its client certificate in a PKI folder of its own; it
// trusts whatever server certificate it meets (we test the server here).
const clientPki = join(work, "client-pki");
const certificateManager = new opcua.OPCUACertificateManager({
    rootFolder: clientPki,
    automaticallyAcceptUnknownCertificate: true,
});
await certificateManager.initialize();

// Server store: auto-accept for the policy matrix; one user; one trusted
// user certificate (made with uapki in a store of its own).
const pki = join(work, "pki");
uapki(["--store", pki, "user", "add", "alice", "--password-stdin"], "wonderland\n");
const userStore = join(work, "user-cert");
uapki(["--store", userStore, "create", "--uri", "urn:uastack:user:bob", "--name", "bob"]);
const bobCert = readFileSync(join(userStore, "own", "certs", "bob.der"));
const bobKey = createPrivateKey(readFileSync(join(userStore, "own", "private", "bob.pem")));
uapki(["--store", join(pki, "user"), "trust", join(userStore, "own", "certs", "bob.der")]);
// A user certificate nobody trusted.
uapki(["--store", userStore, "create", "--uri", "urn:uastack:user:eve", "--name", "eve"]);
const eveCert = readFileSync(join(userStore, "own", "certs", "eve.der"));
const eveKey = createPrivateKey(readFileSync(join(userStore, "own", "private", "eve.pem")));

const ALL =
    "None,Basic256Sha256:SignAndEncrypt,Basic256Sha256:Sign," +
    "Aes128_Sha256_RsaOaep:SignAndEncrypt,Aes128_Sha256_RsaOaep:Sign," +
    "Aes256_Sha256_RsaPss:SignAndEncrypt,Aes256_Sha256_RsaPss:Sign";
const server = await startServer([
    "--security", ALL, "--pki", pki, "--auto-accept", "--array-sizes", "300000",
]);

function secureClient(policy, mode, extra = {}) {
    return newClient({
        securityMode: mode,
        securityPolicy: policy,
        certificateManager: certificateManager,
        clientCertificateManager: certificateManager,
        requestedSessionTimeout: 60000,
        defaultSecureTokenLifetime: 600000,
        ...extra,
    });
}

async function withSecureSession(url, policy, mode, identity, fn) {
    const client = secureClient(policy, mode);
    await client.connect(url);
    let session;
    try {
        session = await client.createSession(identity);
        return await fn(session, client);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect();
    }
}

async function readWrite(session, k) {
    const nodeId = `ns=1;i=${1001 + k}`;
    const st = await session.write({
        nodeId,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, value: 7000 + k } },
    });
    assert.equal(st, StatusCodes.Good);
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    assert.equal(dv.statusCode, StatusCodes.Good);
    assert.equal(dv.value.value, 7000 + k);
}

test("GetEndpoints: one endpoint per offer, certificate, levels, token policies", async () => {
    const client = newClient();
    await client.connect(server.url);
    const eps = await client.getEndpoints();
    await client.disconnect();
    assert.equal(eps.length, 7);
    const none = eps.find((e) => e.securityMode === MessageSecurityMode.None);
    assert.equal(none.securityLevel, 0);
    for (const e of eps) {
        assert.ok(e.serverCertificate && e.serverCertificate.length > 500);
        const ids = e.userIdentityTokens.map((t) => t.policyId);
        assert.ok(ids.includes("anonymous"), ids.join());
        const user = e.userIdentityTokens.find((t) => t.tokenType === UserTokenType.UserName);
        assert.ok(user, "username token policy");
        // Passwords are encrypted even on the None endpoint.
        assert.notEqual(user.securityPolicyUri, SecurityPolicy.None);
        assert.ok(e.userIdentityTokens.find((t) => t.tokenType === UserTokenType.Certificate));
    }
    const level = (p, m) =>
        eps.find((e) => e.securityPolicyUri === p && e.securityMode === m).securityLevel;
    assert.ok(
        level(SecurityPolicy.Basic256Sha256, MessageSecurityMode.Sign) <
            level(SecurityPolicy.Basic256Sha256, MessageSecurityMode.SignAndEncrypt)
    );
    assert.ok(
        level(SecurityPolicy.Basic256Sha256, MessageSecurityMode.SignAndEncrypt) <
            level(SecurityPolicy.Aes256_Sha256_RsaPss, MessageSecurityMode.SignAndEncrypt)
    );
});

test("Basic256Sha256 SignAndEncrypt: anonymous reads and writes", async () => {
    await withSecureSession(
        server.url,
        SecurityPolicy.Basic256Sha256,
        MessageSecurityMode.SignAndEncrypt,
        undefined,
        (s) => readWrite(s, 0)
    );
});

test("Basic256Sha256 SignAndEncrypt: user name with the right password", async () => {
    await withSecureSession(
        server.url,
        SecurityPolicy.Basic256Sha256,
        MessageSecurityMode.SignAndEncrypt,
        { type: UserTokenType.UserName, userName: "alice", password: "wonderland" },
        (s) => readWrite(s, 1)
    );
});

test("wrong password and unknown user: BadUserAccessDenied", async () => {
    for (const identity of [
        { type: UserTokenType.UserName, userName: "alice", password: "looking-glass" },
        { type: UserTokenType.UserName, userName: "mallory", password: "wonderland" },
    ]) {
        await assert.rejects(
            withSecureSession(
                server.url,
                SecurityPolicy.Basic256Sha256,
                MessageSecurityMode.SignAndEncrypt,
                identity,
                () => {}
            ),
            (err) => {
                assert.match(String(err.message), /BadUserAccessDenied/);
                return true;
            }
        );
    }
});

test("every policy and mode: anonymous and user name sessions read and write", async () => {
    const policies = [
        SecurityPolicy.Basic256Sha256,
        SecurityPolicy.Aes128_Sha256_RsaOaep,
        SecurityPolicy.Aes256_Sha256_RsaPss,
    ];
    let k = 10;
    for (const p of policies) {
        for (const m of [MessageSecurityMode.Sign, MessageSecurityMode.SignAndEncrypt]) {
            await withSecureSession(server.url, p, m, undefined, (s) => readWrite(s, k++));
            await withSecureSession(
                server.url,
                p,
                m,
                { type: UserTokenType.UserName, userName: "alice", password: "wonderland" },
                (s) => readWrite(s, k++)
            );
        }
    }
});

test("None endpoint: the password still travels encrypted and is checked", async () => {
    await withSecureSession(
        server.url,
        SecurityPolicy.None,
        MessageSecurityMode.None,
        { type: UserTokenType.UserName, userName: "alice", password: "wonderland" },
        (s) => readWrite(s, 30)
    );
});

test("a user name session of a None channel moves to a new connection with its password", async () => {
    // Part 4, 5.6.3.1: the same user, proven again (issue #18, 7).
    const first = secureClient(SecurityPolicy.None, MessageSecurityMode.None);
    await first.connect(server.url);
    const session = await first.createSession({
        type: UserTokenType.UserName,
        userName: "alice",
        password: "wonderland",
    });
    const id = session.sessionId.toString();
    const second = secureClient(SecurityPolicy.None, MessageSecurityMode.None);
    await second.connect(server.url);
    try {
        await second.reactivateSession(session);
        assert.equal(session.sessionId.toString(), id, "the same session");
        await readWrite(session, 32);
        await session.close();
    } finally {
        await first.disconnect();
        await second.disconnect();
    }
});

test("X509 user token: trusted certificate accepted, untrusted rejected", async () => {
    await withSecureSession(
        server.url,
        SecurityPolicy.Basic256Sha256,
        MessageSecurityMode.SignAndEncrypt,
        { type: UserTokenType.Certificate, certificateData: bobCert, privateKey: bobKey },
        (s) => readWrite(s, 31)
    );
    await assert.rejects(
        withSecureSession(
            server.url,
            SecurityPolicy.Aes256_Sha256_RsaPss,
            MessageSecurityMode.SignAndEncrypt,
            { type: UserTokenType.Certificate, certificateData: eveCert, privateKey: eveKey },
            () => {}
        ),
        /BadIdentityTokenRejected/
    );
});

test("a response of more than 1 MiB crosses many encrypted chunks", async () => {
    await withSecureSession(
        server.url,
        SecurityPolicy.Aes256_Sha256_RsaPss,
        MessageSecurityMode.SignAndEncrypt,
        undefined,
        async (s) => {
            const dv = await s.read({ nodeId: "ns=1;i=2001", attributeId: AttributeIds.Value });
            assert.equal(dv.statusCode, StatusCodes.Good);
            assert.equal(dv.value.value.length, 300000);
            assert.equal(dv.value.value[299999], 299999 % 1000);
        }
    );
});

test("untrusted client: refused, kept in rejected/, accepted after uapki trust", async () => {
    const strictPki = join(work, "strict-pki");
    const strict = await startServer([
        "--security", "Basic256Sha256:SignAndEncrypt", "--pki", strictPki,
    ], { register: false });
    try {
        await assert.rejects(
            withSecureSession(
                strict.url,
                SecurityPolicy.Basic256Sha256,
                MessageSecurityMode.SignAndEncrypt,
                undefined,
                () => {}
            )
        );
        assert.match(strict.stderr(), /BadCertificateUntrusted/);
        // The server's PKI writes rejected/certs from a writer thread of
        // its own, a moment after the refusal.
        let rejected = [];
        for (let i = 0; i < 50 && rejected.length === 0; i++) {
            rejected = readdirSync(join(strictPki, "rejected", "certs")).filter((f) => f.endsWith(".der"));
            if (rejected.length === 0) await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(rejected.length, 1, rejected.join());
        const thumb = /\[([0-9A-F]{40})\]/.exec(rejected[0])[1];
        uapki(["--store", strictPki, "trust", thumb]);
        await withSecureSession(
            strict.url,
            SecurityPolicy.Basic256Sha256,
            MessageSecurityMode.SignAndEncrypt,
            undefined,
            (s) => readWrite(s, 40)
        );
    } finally {
        const res = await strict.stop();
        assert.equal(res.code, 0, strict.stderr());
    }
});

test("contract: --security Basic256Sha256 with certificate files, one endpoint", async () => {
    const own = join(work, "contract-own");
    uapki(["--store", own, "create", "--uri", "urn:o6:benchmark:server", "--name", "contract",
        "--ip", "127.0.0.1"]);
    const certs = readdirSync(join(certificateManager.rootDir, "own", "certs"));
    const clientCert = join(certificateManager.rootDir, "own", "certs", certs[0]);
    assert.ok(existsSync(clientCert));
    const contract = await startServer([
        "--security", "Basic256Sha256",
        "--certificate", join(own, "own", "certs", "contract.der"),
        "--private-key", join(own, "own", "private", "contract.pem"),
        "--trust-certificate", clientCert,
    ], { register: false });
    try {
        const c = newClient();
        await c.connect(contract.url);
        const eps = await c.getEndpoints();
        await c.disconnect();
        assert.equal(eps.length, 1);
        assert.equal(eps[0].securityMode, MessageSecurityMode.SignAndEncrypt);
        assert.equal(eps[0].securityPolicyUri, SecurityPolicy.Basic256Sha256);
        assert.deepEqual(eps[0].serverCertificate, readFileSync(join(own, "own", "certs", "contract.der")));
        await withSecureSession(
            contract.url,
            SecurityPolicy.Basic256Sha256,
            MessageSecurityMode.SignAndEncrypt,
            undefined,
            (s) => readWrite(s, 50)
        );
    } finally {
        const res = await contract.stop();
        assert.equal(res.code, 0, contract.stderr());
    }
});
