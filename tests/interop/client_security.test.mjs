// The uastack client (uacli, named by $UACLI) against a node-opcua server
// with security: every RSA policy of uastack in Sign and SignAndEncrypt,
// anonymous and UserName identities, the server certificate trusted
// through the client's PKI store (or not), and read/write of an Int32.
// Skipped when UACLI is not set.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as opcua from "node-opcua";

const UACLI = process.env.UACLI;
const skip = UACLI ? false : "UACLI is not set (path of the uacli binary)";

const NODE = "ns=1;s=SecureInt32";
const USER = "alice";
const PASSWORD = "s3cret-pa55";

let server;
let url;
let work;
let value = 42;

function uacli(args, { env = {}, input } = {}) {
    return new Promise((resolve) => {
        const child = execFile(
            UACLI,
            ["--timeout", "10000", ...args],
            {
                env: {
                    ...process.env,
                    ASAN_OPTIONS: process.env.ASAN_OPTIONS || "detect_leaks=1:color=never",
                    ...env,
                },
                timeout: 60000,
            },
            (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr })
        );
        if (input !== undefined) child.stdin.end(input);
        else child.stdin.end();
    });
}

function clean(r) {
    assert.doesNotMatch(r.stderr, /Sanitizer|runtime error:/, r.stderr);
}

before(async () => {
    if (skip) return;
    work = mkdtempSync(join(tmpdir(), "uas-csec-"));
    const pkiRoot = join(work, "server-pki");
    const serverCertificateManager = new opcua.OPCUACertificateManager({
        rootFolder: pkiRoot,
        automaticallyAcceptUnknownCertificate: true,
    });
    await serverCertificateManager.initialize();
    const userCertificateManager = new opcua.OPCUACertificateManager({
        rootFolder: join(work, "user-pki"),
        automaticallyAcceptUnknownCertificate: true,
    });
    await userCertificateManager.initialize();
    server = new opcua.OPCUAServer({
        port: 0,
        hostname: "127.0.0.1",
        serverCertificateManager,
        userCertificateManager,
        securityPolicies: [
            opcua.SecurityPolicy.None,
            opcua.SecurityPolicy.Basic256Sha256,
            opcua.SecurityPolicy.Aes128_Sha256_RsaOaep,
            opcua.SecurityPolicy.Aes256_Sha256_RsaPss,
        ],
        securityModes: [
            opcua.MessageSecurityMode.None,
            opcua.MessageSecurityMode.Sign,
            opcua.MessageSecurityMode.SignAndEncrypt,
        ],
        allowAnonymous: true,
        userManager: {
            isValidUser: (name, password) => name === USER && password === PASSWORD,
        },
    });
    await server.initialize();
    const ns = server.engine.addressSpace.getOwnNamespace();
    ns.addVariable({
        organizedBy: server.engine.addressSpace.rootFolder.objects,
        nodeId: `ns=${ns.index};s=SecureInt32`,
        browseName: "SecureInt32",
        dataType: "Int32",
        value: {
            get: () => new opcua.Variant({ dataType: opcua.DataType.Int32, value }),
            set: (v) => {
                value = v.value;
                return opcua.StatusCodes.Good;
            },
        },
    });
    await server.start();
    url = `opc.tcp://127.0.0.1:${server.endpoints[0].port}`;
});

after(async () => {
    if (server) await server.shutdown(0);
    if (work) rmSync(work, { recursive: true, force: true });
});

/* A client PKI store that trusts the node-opcua server's certificate. */
function trustingStore(name) {
    const dir = join(work, name);
    mkdirSync(join(dir, "trusted", "certs"), { recursive: true });
    writeFileSync(join(dir, "trusted", "certs", "server.der"), server.getCertificate());
    return dir;
}

test("endpoints lists policy, mode, level and user tokens", { skip }, async () => {
    const r = await uacli(["endpoints", url]);
    clean(r);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Security mode:\s+SignAndEncrypt/);
    assert.match(r.stdout, /Security policy:\s+http:\/\/opcfoundation.org\/UA\/SecurityPolicy#Aes256_Sha256_RsaPss/);
    assert.match(r.stdout, /Security level:\s+\d+/);
    assert.match(r.stdout, /\(Anonymous\)/);
    assert.match(r.stdout, /\(UserName/);
});

const POLICIES = ["Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"];
const MODES = ["Sign", "SignAndEncrypt"];

for (const policy of POLICIES) {
    for (const mode of MODES) {
        test(`anonymous read/write with ${policy}:${mode}`, { skip }, async () => {
            const pki = trustingStore(`pki-${policy}-${mode}`);
            const sec = ["--security", `${policy}:${mode}`, "--pki", pki];
            const k = 1000 + POLICIES.indexOf(policy) * 10 + MODES.indexOf(mode);
            let r = await uacli([...sec, "write", url, NODE, "int32", String(k)]);
            clean(r);
            assert.equal(r.code, 0, r.stderr);
            assert.equal(value, k);
            r = await uacli([...sec, "read", url, NODE]);
            clean(r);
            assert.equal(r.code, 0, r.stderr);
            assert.match(r.stdout, new RegExp(`\\b${k}\\b`));
            // The client made its own certificate in the store on first use.
            assert.equal(readdirSync(join(pki, "own", "certs")).length, 1);
        });
    }
}

test("an untrusted server certificate is refused and lands in rejected/", { skip }, async () => {
    const pki = join(work, "pki-untrusted");
    const r = await uacli(["--security", "Basic256Sha256:SignAndEncrypt", "--pki", pki, "read", url, NODE]);
    clean(r);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /BadCertificateUntrusted/);
    assert.equal(readdirSync(join(pki, "rejected", "certs")).length, 1);
});

test("--accept-server-cert connects without trust, with a warning", { skip }, async () => {
    const pki = join(work, "pki-accept");
    const r = await uacli([
        "--security", "Aes128_Sha256_RsaOaep:SignAndEncrypt", "--pki", pki, "--accept-server-cert",
        "read", url, NODE,
    ]);
    clean(r);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /warning: --accept-server-cert/);
});

test("unknown policy and bad mode are usage errors", { skip }, async () => {
    let r = await uacli(["--security", "Basic512:Sign", "read", url, NODE]);
    assert.equal(r.code, 2);
    r = await uacli(["--security", "Basic256Sha256:Encrypt", "read", url, NODE]);
    assert.equal(r.code, 2);
});

for (const [policy, mode] of [
    ["Basic256Sha256", "SignAndEncrypt"],
    ["Aes256_Sha256_RsaPss", "Sign"],
    ["Aes128_Sha256_RsaOaep", "SignAndEncrypt"],
]) {
    test(`UserName identity with ${policy}:${mode} (password from UASTACK_PASSWORD)`, { skip }, async () => {
        const pki = trustingStore(`pki-user-${policy}-${mode}`);
        const sec = ["--security", `${policy}:${mode}`, "--pki", pki, "--user", USER];
        let r = await uacli([...sec, "read", url, NODE], { env: { UASTACK_PASSWORD: PASSWORD } });
        clean(r);
        assert.equal(r.code, 0, r.stderr);
        r = await uacli([...sec, "read", url, NODE], { env: { UASTACK_PASSWORD: "wrong" } });
        clean(r);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /BadUserAccessDenied|BadIdentityTokenRejected|BadIdentityTokenInvalid/);
    });
}

test("UserName identity with the password on stdin", { skip }, async () => {
    const pki = trustingStore("pki-user-stdin");
    const r = await uacli(
        ["--security", "Basic256Sha256:SignAndEncrypt", "--pki", pki, "--user", USER, "--password-stdin",
         "read", url, NODE],
        { input: PASSWORD + "\n", env: { UASTACK_PASSWORD: "" } }
    );
    clean(r);
    assert.equal(r.code, 0, r.stderr);
});
