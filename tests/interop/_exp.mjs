import * as opcua from "node-opcua";
import { startServer, newClient, faultStatus } from "./lib/server.mjs";
const server = await startServer(["--config", "/tmp/sess.ini"], { register: false });
const c1 = newClient({ requestedSessionTimeout: 1000 });
await c1.connect(server.url);
const s1 = await c1.createSession();
console.log("timeout", s1.timeout);
s1.on("session_closed", (sc) => console.log("event session_closed", sc?.toString()));
c1.on("session_closed", () => console.log("client event session_closed"));
await new Promise(r => setTimeout(r, 2500));
try { const d = await s1.read({ nodeId: "i=2258", attributeId: 13 }); console.log("read after expiry", d.statusCode.toString()); } catch (e) { console.log("expired err:", e.message, faultStatus(e)?.toString()); }
// closed token reuse
const c2 = newClient();
await c2.connect(server.url);
const a = await c2.createSession();
const b = await c2.createSession();
const tokA = a.authenticationToken;
await a.close();
const tokB = b.authenticationToken;
b.authenticationToken = tokA;
try { const d = await b.read({ nodeId: "i=2258", attributeId: 13 }); console.log("read closed token", d.statusCode.toString()); } catch (e) { console.log("closed token err:", e.message, faultStatus(e)?.toString()); }
b.authenticationToken = tokB;
try { const d = await b.read({ nodeId: "i=2258", attributeId: 13 }); console.log("read B again", d.statusCode.toString()); } catch (e) { console.log("B err:", e.message); }
try { const s = await c2.createSession({ type: opcua.UserTokenType.UserName, userName: "u", password: "p" }); console.log("username session??", !!s); } catch (e) { console.log("username err:", e.message); }
await c2.disconnect().catch(e=>console.log("disc err", e.message));
await c1.disconnect().catch(e=>console.log("disc err", e.message));
console.log(JSON.stringify(await server.stop()));
console.log(server.stderr());
