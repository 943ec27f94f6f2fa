// Roles and permissions seen from node-opcua (docs/Security.md, "Roles and
// permissions"): the server runs with the production default for
// namespace 1 (anonymous sessions browse and read, nothing more) instead of
// the contract's anonymous writes; users of the users file carry roles;
// an X.509 user is mapped to Operator by its thumbprint.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, createPrivateKey } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as opcua from "node-opcua";
import { configFile, newClient, startServer } from "./lib/server.mjs";

const { AttributeIds, DataType, MessageSecurityMode, SecurityPolicy, StatusCodes, UserTokenType } =
    opcua;

const UAPKI = process.env.UAPKI || join(dirname(dirname(process.env.UASERVER || ".")), "pki", "uapki");
const work = mkdtempSync(join(tmpdir(), "uas-roles-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));

function uapki(args, input) {
    return execFileSync(UAPKI, args, { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
}

const certificateManager = new opcua.OPCUACertificateManager({
    rootFolder: join(work, "client-pki"),
    automaticallyAcceptUnknownCertificate: true,
});
await certificateManager.initialize();

const pki = join(work, "pki");
uapki(["--store", pki, "user", "add", "olive", "--password-stdin", "--roles", "Operator"], "op-pass\n");
uapki(["--store", pki, "user", "add", "eddie", "--password-stdin", "--roles", "Engineer"], "eng-pass\n");
uapki(["--store", pki, "user", "add", "alice", "--password-stdin"], "no-roles\n");
uapki(["--store", pki, "user", "add", "sam", "--password-stdin", "--roles", "SecurityAdmin"], "sec-pass\n");
const userStore = join(work, "user-cert");
uapki(["--store", userStore, "create", "--uri", "urn:uastack:user:bob", "--name", "bob"]);
const bobCert = readFileSync(join(userStore, "own", "certs", "bob.der"));
const bobKey = createPrivateKey(readFileSync(join(userStore, "own", "private", "bob.pem")));
uapki(["--store", join(pki, "user"), "trust", join(userStore, "own", "certs", "bob.der")]);
const bobThumb = createHash("sha1").update(bobCert).digest("hex").toUpperCase();

const config = configFile(
    [
        "[roles]",
        "permissions = 1 Anonymous Browse,Read,ReadHistory,ReceiveEvents",
        `x509 = Operator thumbprint=${bobThumb}`,
        "",
    ].join("\n")
);
const server = await startServer([
    "--security", "None,Basic256Sha256:SignAndEncrypt", "--pki", pki, "--auto-accept",
    "--config", config,
]);

const VAR = "ns=1;i=1001";
const OBJECT = "ns=1;s=Demo";
const METHOD = "ns=1;s=Demo.Add";
const OPERATOR = "ns=0;i=15680";
const PERM_WRITE = 0x40;
const i32 = (value) => ({ dataType: DataType.Int32, value });

const users = {
    olive: { type: UserTokenType.UserName, userName: "olive", password: "op-pass" },
    eddie: { type: UserTokenType.UserName, userName: "eddie", password: "eng-pass" },
    alice: { type: UserTokenType.UserName, userName: "alice", password: "no-roles" },
    sam: { type: UserTokenType.UserName, userName: "sam", password: "sec-pass" },
    bob: { type: UserTokenType.Certificate, certificateData: bobCert, privateKey: bobKey },
};

async function withSession(identity, fn) {
    const client = newClient({
        securityMode: MessageSecurityMode.SignAndEncrypt,
        securityPolicy: SecurityPolicy.Basic256Sha256,
        certificateManager,
        clientCertificateManager: certificateManager,
        requestedSessionTimeout: 60000,
    });
    await client.connect(server.url);
    let session;
    try {
        session = await client.createSession(identity);
        return await fn(session);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect();
    }
}

const write = (s, value) =>
    s.write({ nodeId: VAR, attributeId: AttributeIds.Value, value: { value: i32(value) } });
const add = (s, a, b) => s.call({ objectId: OBJECT, methodId: METHOD, inputArguments: [i32(a), i32(b)] });
const attr = async (s, nodeId, attributeId) => (await s.read({ nodeId, attributeId })).value.value;

test("anonymous: reads and browses, a write and a call are refused with BadUserAccessDenied", async () => {
    await withSession(undefined, async (s) => {
        const before = await s.read({ nodeId: VAR, attributeId: AttributeIds.Value });
        assert.equal(before.statusCode, StatusCodes.Good);
        assert.equal(await write(s, 111), StatusCodes.BadUserAccessDenied);
        const after = await s.read({ nodeId: VAR, attributeId: AttributeIds.Value });
        assert.equal(after.value.value, before.value.value, "the refused write changed nothing");
        assert.equal((await add(s, 2, 40)).statusCode, StatusCodes.BadUserAccessDenied);
        // The node says so before anyone tries.
        assert.equal(await attr(s, VAR, AttributeIds.AccessLevel), 3);
        assert.equal(await attr(s, VAR, AttributeIds.UserAccessLevel), 1, "CurrentRead only");
        assert.equal(await attr(s, METHOD, AttributeIds.Executable), true);
        assert.equal(await attr(s, METHOD, AttributeIds.UserExecutable), false);
        const objects = await s.browse({ nodeId: "i=85", resultMask: 63 });
        assert.ok(objects.references.some((r) => r.browseName.name === "BenchmarkValue0"));
    });
});

test("Operator (users file): a write is allowed, a call is not", async () => {
    await withSession(users.olive, async (s) => {
        assert.equal(await write(s, 222), StatusCodes.Good);
        assert.equal(await attr(s, VAR, AttributeIds.Value), 222);
        assert.equal(await attr(s, VAR, AttributeIds.UserAccessLevel), 3);
        assert.equal((await add(s, 2, 40)).statusCode, StatusCodes.BadUserAccessDenied);
        const mine = await attr(s, VAR, AttributeIds.UserRolePermissions);
        const op = mine.find((e) => e.roleId.toString() === OPERATOR);
        assert.ok(op && op.permissions & PERM_WRITE, JSON.stringify(mine));
        // Namespace 0 is read-only by AccessLevel, whatever the role.
        const st = await s.write({
            nodeId: "i=2267", // Server.ServiceLevel
            attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Byte, value: 1 } },
        });
        assert.equal(st, StatusCodes.BadNotWritable);
    });
});

test("Engineer (users file): a call is allowed", async () => {
    await withSession(users.eddie, async (s) => {
        const r = await add(s, 2, 40);
        assert.equal(r.statusCode, StatusCodes.Good);
        assert.equal(r.outputArguments[0].value, 42);
        assert.equal(await attr(s, METHOD, AttributeIds.UserExecutable), true);
        assert.equal(await write(s, 333), StatusCodes.Good);
    });
});

test("an authenticated user without roles reads but does not write", async () => {
    await withSession(users.alice, async (s) => {
        assert.equal((await s.read({ nodeId: VAR, attributeId: AttributeIds.Value })).statusCode, StatusCodes.Good);
        assert.equal(await write(s, 444), StatusCodes.BadUserAccessDenied);
    });
});

test("an X.509 user mapped to Operator by thumbprint writes", async () => {
    await withSession(users.bob, async (s) => {
        assert.equal(await write(s, 555), StatusCodes.Good);
        assert.equal((await add(s, 1, 1)).statusCode, StatusCodes.BadUserAccessDenied);
    });
});

test("RoleSet: SecurityAdmin reads the identities mapped to Operator; anonymous may not", async () => {
    const identities = "ns=0;i=16225"; // WellKnownRole_Operator.Identities
    await withSession(users.sam, async (s) => {
        const dv = await s.read({ nodeId: identities, attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode, StatusCodes.Good);
        const rules = dv.value.value;
        assert.ok(
            rules.some((r) => r.criteriaType === opcua.EnumIdentityCriteria.Thumbprint && r.criteria === bobThumb),
            JSON.stringify(rules)
        );
        const rp = await s.read({ nodeId: VAR, attributeId: AttributeIds.RolePermissions });
        assert.equal(rp.statusCode, StatusCodes.Good, "SecurityAdmin has ReadRolePermissions");
    });
    await withSession(undefined, async (s) => {
        const dv = await s.read({ nodeId: identities, attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode, StatusCodes.BadUserAccessDenied);
        const rp = await s.read({ nodeId: VAR, attributeId: AttributeIds.RolePermissions });
        assert.equal(rp.statusCode, StatusCodes.BadUserAccessDenied);
    });
});
