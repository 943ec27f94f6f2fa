import * as opcua from "node-opcua";
import { startServer, newClient, faultStatus } from "./lib/server.mjs";
const { AttributeIds, DataType, StatusCodes } = opcua;
const server = await startServer(["--array-sizes", "1000"], { register: false });
const client = newClient({ requestedSessionTimeout: 1e9 });
await client.connect(server.url);
const s = await client.createSession();
console.log("timeout", s.timeout);
for (let a = 1; a <= 27; a++) {
  const d = await s.read({ nodeId: "ns=1;i=1001", attributeId: a });
  console.log(a, opcua.AttributeIds[a], d.statusCode.name, d.value.dataType, DataType[d.value.dataType], d.value.arrayType, JSON.stringify(d.value.value));
}
try { await s.read([]); } catch (e) { console.log("empty read err", e.message, faultStatus(e)?.toString()); }
s.requestedMaxReferencesPerNode = 10;
const br = await s.browse({ nodeId: "i=85", browseDirection: opcua.BrowseDirection.Forward, referenceTypeId: "i=33", includeSubtypes: true, resultMask: 63 });
console.log("first", br.statusCode.name, br.references.length, br.continuationPoint);
let cp = br.continuationPoint, n = br.references.length, rounds=0;
while (cp && cp.length) { const r = await s.browseNext(cp, false); n += r.references.length; cp = r.continuationPoint; rounds++; if (rounds>50) break; console.log(r.statusCode.name, r.references.length);}
console.log("total", n, rounds);
const br2 = await s.browse({ nodeId: "i=85", browseDirection: 0, resultMask: 63 });
const rel = await s.browseNext(br2.continuationPoint, true);
console.log("release", rel.toString());
const again = await s.browseNext(br2.continuationPoint, false);
console.log("after release", again.statusCode.toString());
await s.close();
try { await s.read({nodeId:"i=2258"}); } catch (e) { console.log("closed read", e.message); }
await client.disconnect();
console.log(JSON.stringify(await server.stop()));
