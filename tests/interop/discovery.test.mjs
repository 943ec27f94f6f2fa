// Discovery services seen from node-opcua: GetEndpoints and FindServers.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, newClient } from "./lib/server.mjs";

const { MessageSecurityMode, UserTokenType, ApplicationType } = opcua;

const server = await startServer();

const SECURITY_NONE = "http://opcfoundation.org/UA/SecurityPolicy#None";
const UATCP = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary";
const APP_URI = "urn:o6:benchmark:server";

async function withClient(fn) {
    const client = newClient();
    await client.connect(server.url);
    try {
        return await fn(client);
    } finally {
        await client.disconnect();
    }
}

test("GetEndpoints: one endpoint, SecurityPolicy None, mode None, anonymous", async () => {
    const endpoints = await withClient((c) => c.getEndpoints());
    assert.equal(endpoints.length, 1);
    const ep = endpoints[0];
    assert.equal(ep.securityPolicyUri, SECURITY_NONE);
    assert.equal(ep.securityMode, MessageSecurityMode.None);
    assert.equal(ep.transportProfileUri, UATCP);
    // The URL the client asked for comes back, so the client can use it.
    assert.equal(ep.endpointUrl, server.url);
    const tokens = ep.userIdentityTokens;
    assert.equal(tokens.length, 1);
    assert.equal(tokens[0].tokenType, UserTokenType.Anonymous);
    assert.ok(tokens[0].policyId, "the anonymous token policy has a policyId");
});

test("GetEndpoints: the server description is the contract application", async () => {
    const [ep] = await withClient((c) => c.getEndpoints());
    assert.equal(ep.server.applicationUri, APP_URI);
    assert.equal(ep.server.applicationType, ApplicationType.Server);
    assert.ok(ep.server.applicationName.text, "applicationName has a text");
    assert.ok(ep.server.productUri, "productUri is set");
    assert.ok(ep.server.discoveryUrls.length >= 1);
    for (const u of ep.server.discoveryUrls) assert.match(u, /^opc\.tcp:\/\//);
    // No security: no certificate needed.
    assert.ok(!ep.serverCertificate || ep.serverCertificate.length === 0);
});

test("GetEndpoints: a profile filter for another transport selects nothing", async () => {
    const https = "http://opcfoundation.org/UA-Profile/Transport/https-uabinary";
    const none = await withClient((c) => c.getEndpoints({ profileUris: [https] }));
    assert.equal(none.length, 0);
    const tcp = await withClient((c) => c.getEndpoints({ profileUris: [UATCP] }));
    assert.equal(tcp.length, 1);
});

test("FindServers: the server describes itself", async () => {
    const servers = await withClient((c) => c.findServers());
    assert.equal(servers.length, 1);
    const s = servers[0];
    assert.equal(s.applicationUri, APP_URI);
    assert.equal(s.applicationType, ApplicationType.Server);
    assert.ok(s.discoveryUrls.length >= 1);
    for (const u of s.discoveryUrls) assert.match(u, /^opc\.tcp:\/\//);
});

test("FindServers: filtering by serverUris", async () => {
    const mine = await withClient((c) => c.findServers({ serverUris: [APP_URI] }));
    assert.equal(mine.length, 1);
    const other = await withClient((c) => c.findServers({ serverUris: ["urn:someone:else"] }));
    assert.equal(other.length, 0);
});

test("the endpoint that GetEndpoints returns accepts an anonymous session", async () => {
    const [ep] = await withClient((c) => c.getEndpoints());
    // endpointMustExist: true makes node-opcua check the URL against the list.
    const client = newClient({ endpointMustExist: true });
    await client.connect(ep.endpointUrl);
    try {
        const session = await client.createSession({ type: UserTokenType.Anonymous });
        const dv = await session.read({ nodeId: "i=2259", attributeId: opcua.AttributeIds.Value });
        assert.equal(dv.statusCode.value, 0);
        await session.close();
    } finally {
        await client.disconnect();
    }
});

test("CreateSession returns the endpoints GetEndpoints returned", async () => {
    const client = newClient();
    await client.connect(server.url);
    try {
        const discovered = await client.getEndpoints();
        const session = await client.createSession();
        const fromSession = session.serverEndpoints;
        assert.equal(fromSession.length, discovered.length);
        fromSession.forEach((ep, i) => {
            const d = discovered[i];
            assert.equal(ep.endpointUrl, d.endpointUrl);
            assert.equal(ep.securityPolicyUri, d.securityPolicyUri);
            assert.equal(ep.securityMode, d.securityMode);
            assert.equal(ep.transportProfileUri, d.transportProfileUri);
            assert.equal(ep.server.applicationUri, d.server.applicationUri);
            assert.deepEqual(
                ep.userIdentityTokens.map((t) => [t.policyId, t.tokenType]),
                d.userIdentityTokens.map((t) => [t.policyId, t.tokenType])
            );
        });
        await session.close();
    } finally {
        await client.disconnect();
    }
});
