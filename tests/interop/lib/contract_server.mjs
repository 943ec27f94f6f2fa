// A node-opcua server with the benchmark contract (namespace urn:o6:benchmark:server
// at index 1, Int32 variables ns=1;i=1001..1100 with values 0..99), so
// `uaserver --self-load ... --target URL` can measure node-opcua with the
// same client it measures uastack with. Usage: node lib/contract_server.mjs PORT
import * as opcua from "node-opcua";

const port = Number(process.argv[2] || 48500);
const server = new opcua.OPCUAServer({
  port,
  serverInfo: { applicationUri: "urn:o6:benchmark:server" },
  securityPolicies: [opcua.SecurityPolicy.None],
  securityModes: [opcua.MessageSecurityMode.None],
  allowAnonymous: true,
  maxSessions: 100000,
  maxConnectionsPerEndpoint: 100000,
  hostname: "127.0.0.1",
  serverCapabilities: { maxSessions: 100000 },
});
await server.initialize();
const ns = server.engine.addressSpace.registerNamespace("urn:o6:benchmark:server");
const objects = server.engine.addressSpace.rootFolder.objects;
for (let i = 0; i < 100; i++) {
  let value = i;
  ns.addVariable({
    organizedBy: objects,
    nodeId: `ns=${ns.index};i=${1001 + i}`,
    browseName: `BenchmarkValue${i}`,
    dataType: "Int32",
    minimumSamplingInterval: 100,
    value: {
      get: () => new opcua.Variant({ dataType: opcua.DataType.Int32, value }),
      set: (v) => { value = v.value; return opcua.StatusCodes.Good; },
    },
  });
}
await server.start();
console.log(`node-opcua listening on opc.tcp://127.0.0.1:${port} (namespace index ${ns.index})`);
process.on("SIGTERM", async () => { await server.shutdown(0); process.exit(0); });
