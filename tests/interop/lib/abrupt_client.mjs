// A client process for robustness.test.mjs: connects to argv[2], creates a
// session, prints "ready" and then reads without pause until it is killed
// (the test kills it with SIGKILL, so it never closes anything).
import * as opcua from "node-opcua";

const client = opcua.OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
});
await client.connect(process.argv[2]);
const session = await client.createSession();
const nodes = [
    { nodeId: "ns=1;i=1001", attributeId: opcua.AttributeIds.Value },
    { nodeId: "ns=1;i=2001", attributeId: opcua.AttributeIds.Value }, // a big array, if any
];
let ready = false;
async function loop() {
    for (;;) {
        await session.read(nodes);
        if (!ready) {
            ready = true;
            process.stdout.write("ready\n");
        }
    }
}
for (let i = 0; i < 8; i++) loop().catch(() => {});
