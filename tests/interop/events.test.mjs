// Events seen from node-opcua (OPC 10000-4 5.13.1.5, 7.7, 7.22.3; OPC
// 10000-5 6.4.2): event monitored items on the Server object with an
// EventFilter (select clauses and a where clause), events reported by the
// server (the method ns=1;s=Demo.ReportEvent(message, severity) reports a
// BaseEventType event with SourceName "Demo"; sessions being created and
// closed report SystemEventType events with severity 100 and SourceName
// "Server"), and per-element results for invalid filters. Runs against a
// --threads 1 and a --threads 2 server (every loop's subscriptions see
// every event).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as opcua from "node-opcua";
import { startServer, newClient, rawRequest } from "./lib/server.mjs";

const {
    AttributeIds,
    DataType,
    StatusCodes,
    TimestampsToReturn,
    MonitoringMode,
    FilterOperator,
    EventFilter,
    SimpleAttributeOperand,
    ContentFilter,
    ContentFilterElement,
    LiteralOperand,
    ElementOperand,
} = opcua;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const servers = [
    { threads: 1, server: await startServer(["--threads", "1"]) },
    { threads: 2, server: await startServer(["--threads", "2"]) },
];

const SERVER_OBJECT = "i=2253";
const BASE_EVENT_TYPE = "i=2041";
const SYSTEM_EVENT_TYPE = "i=2130";
const EVENT_QUEUE_OVERFLOW_EVENT_TYPE = "i=3035";
const DEMO = "ns=1;s=Demo";
const REPORT_EVENT = "ns=1;s=Demo.ReportEvent";

const FIELDS = ["EventId", "EventType", "SourceName", "Time", "Message", "Severity"];

async function waitFor(cond, ms, what) {
    const t0 = Date.now();
    while (!cond()) {
        if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(10);
    }
}

async function open(server) {
    const client = newClient();
    await client.connect(server.url);
    const session = await client.createSession();
    const c = { client, session, done: false };
    c.close = async () => {
        if (c.done) return;
        c.done = true;
        await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    };
    server.onStop(() => c.close());
    return c;
}

/** A BaseEventType field (or another type's, with typeDefinitionId). */
function field(name, typeDefinitionId = BASE_EVENT_TYPE) {
    return new SimpleAttributeOperand({
        typeDefinitionId,
        browsePath: name === null ? [] : [{ namespaceIndex: 0, name }],
        attributeId: AttributeIds.Value,
    });
}

const literal = (dataType, value) => new LiteralOperand({ value: { dataType, value } });

function eventFilter(select = FIELDS, whereElements = []) {
    return new EventFilter({
        selectClauses: select.map((f) => (typeof f === "string" ? field(f) : f)),
        whereClause: new ContentFilter({ elements: whereElements }),
    });
}

/** OfType(BaseEventType) AND Severity >= 500 */
const SEVERE = [
    new ContentFilterElement({
        filterOperator: FilterOperator.And,
        filterOperands: [new ElementOperand({ index: 1 }), new ElementOperand({ index: 2 })],
    }),
    new ContentFilterElement({
        filterOperator: FilterOperator.OfType,
        filterOperands: [literal(DataType.NodeId, opcua.resolveNodeId(BASE_EVENT_TYPE))],
    }),
    new ContentFilterElement({
        filterOperator: FilterOperator.GreaterThanOrEqual,
        filterOperands: [field("Severity"), literal(DataType.UInt16, 500)],
    }),
];

async function reportEvent(session, message, severity) {
    const r = await session.call({
        objectId: DEMO,
        methodId: REPORT_EVENT,
        inputArguments: [
            { dataType: DataType.String, value: message },
            { dataType: DataType.UInt16, value: severity },
        ],
    });
    return r.statusCode;
}

function clientSub(session, opts = {}) {
    return session.createSubscription2({
        requestedPublishingInterval: 50,
        requestedMaxKeepAliveCount: 10,
        requestedLifetimeCount: 600,
        maxNotificationsPerPublish: 0,
        publishingEnabled: true,
        priority: 0,
        ...opts,
    });
}

/** An event item on the Server object; events: arrays of Variants. */
async function monitorEvents(sub, filter, params = {}) {
    const item = await sub.monitor(
        { nodeId: SERVER_OBJECT, attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, queueSize: 100, discardOldest: true, filter, ...params },
        TimestampsToReturn.Neither,
        MonitoringMode.Reporting
    );
    const events = [];
    item.on("changed", (fields) => events.push(fields));
    return { item, events };
}

/** The selected fields of one event as { name: value } (FIELDS order). */
function named(fields, names = FIELDS) {
    const o = {};
    names.forEach((n, i) => (o[n] = fields[i]));
    return o;
}

const messages = (events) => events.map((f) => named(f).Message.value.text);

/** CreateMonitoredItems for one event item, sent as is. */
async function createRaw(
    session,
    subscriptionId,
    { nodeId = SERVER_OBJECT, attributeId = AttributeIds.EventNotifier, filter }
) {
    const resp = await rawRequest(
        session,
        new opcua.CreateMonitoredItemsRequest({
            subscriptionId,
            timestampsToReturn: TimestampsToReturn.Neither,
            itemsToCreate: [
                {
                    itemToMonitor: { nodeId, attributeId },
                    monitoringMode: MonitoringMode.Reporting,
                    requestedParameters: {
                        clientHandle: 1,
                        samplingInterval: 0,
                        queueSize: 10,
                        discardOldest: true,
                        filter,
                    },
                },
            ],
        })
    );
    return resp.results[0];
}

for (const { threads, server } of servers) {
    describe(`--threads ${threads}`, { timeout: 180000 }, () => {
        test("EventFilter with a where clause (OfType BaseEventType AND Severity >= 500): the selected fields of the matching events", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const { item, events } = await monitorEvents(sub, eventFilter(FIELDS, SEVERE));
            assert.equal(item.statusCode, StatusCodes.Good);
            const fr = item.filterResult;
            if (fr) {
                // Optional when all is well; if present, all Good.
                for (const s of fr.selectClauseResults || []) assert.equal(s.value, StatusCodes.Good.value);
                for (const e of fr.whereClauseResult?.elementResults || [])
                    assert.equal(e.statusCode.value, StatusCodes.Good.value);
            }
            // Reported from another session (on --threads 2 possibly another loop).
            const b = await open(server);
            const before = Date.now();
            assert.equal(await reportEvent(b.session, "low", 100), StatusCodes.Good);
            assert.equal(await reportEvent(b.session, "edge", 500), StatusCodes.Good);
            assert.equal(await reportEvent(b.session, "high", 700), StatusCodes.Good);
            assert.equal(await reportEvent(b.session, "max", 1000), StatusCodes.Good);
            await waitFor(() => events.length >= 3, 5000, "three events");
            await b.close(); // a "Session closed" SystemEvent (severity 100) must not pass
            await sleep(300);
            assert.deepEqual(messages(events), ["edge", "high", "max"], "severity >= 500 only, in order");
            const ids = new Set();
            for (const [i, f] of events.entries()) {
                assert.equal(f.length, FIELDS.length, "one value per select clause");
                const e = named(f);
                assert.equal(e.EventId.dataType, DataType.ByteString);
                assert.ok(e.EventId.value.length > 0, "a non-empty EventId");
                ids.add(e.EventId.value.toString("hex"));
                assert.equal(e.EventType.dataType, DataType.NodeId);
                assert.equal(e.EventType.value.toString(), "ns=0;i=2041", "BaseEventType");
                assert.equal(e.SourceName.dataType, DataType.String);
                assert.equal(e.SourceName.value, "Demo");
                assert.equal(e.Time.dataType, DataType.DateTime);
                assert.ok(Math.abs(e.Time.value.getTime() - before) < 10000, `Time ${e.Time.value.toISOString()}`);
                assert.equal(e.Message.dataType, DataType.LocalizedText);
                assert.equal(e.Severity.dataType, DataType.UInt16);
                assert.equal(e.Severity.value, [500, 700, 1000][i]);
            }
            assert.equal(ids.size, events.length, "EventIds are unique");
            await sub.terminate();
            await a.close();
        });

        test("OfType(SystemEventType): the server's session events, not the Demo events", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const ofSystem = [
                new ContentFilterElement({
                    filterOperator: FilterOperator.OfType,
                    filterOperands: [literal(DataType.NodeId, opcua.resolveNodeId(SYSTEM_EVENT_TYPE))],
                }),
            ];
            const { events } = await monitorEvents(sub, eventFilter(FIELDS, ofSystem));
            assert.equal(await reportEvent(a.session, "not a system event", 900), StatusCodes.Good);
            const b = await open(server);
            await b.close();
            await waitFor(() => events.length >= 2, 5000, "the session events");
            await sleep(200);
            assert.deepEqual(messages(events), ["Session created", "Session closed"]);
            for (const f of events) {
                const e = named(f);
                assert.equal(e.EventType.value.toString(), "ns=0;i=2130", "SystemEventType");
                assert.equal(e.SourceName.value, "Server");
                assert.equal(e.Severity.value, 100);
            }
            await sub.terminate();
            await a.close();
        });

        test("no where clause: every event; fields the event does not have are null", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const select = [
                field("Message"),
                field("NoSuchField"), // not a BaseEventType field
                field("EnabledState", "i=2782"), // ConditionType's, not in a BaseEventType event
                field("Severity"),
            ];
            const { item, events } = await monitorEvents(sub, eventFilter(select));
            assert.equal(item.statusCode, StatusCodes.Good);
            assert.equal(await reportEvent(a.session, "one", 1), StatusCodes.Good);
            assert.equal(await reportEvent(a.session, "two", 999), StatusCodes.Good);
            await waitFor(() => events.filter((f) => f[0].value?.text === "two").length === 1, 5000, "both events");
            const demo = events.filter((f) => ["one", "two"].includes(f[0].value?.text));
            assert.deepEqual(
                demo.map((f) => [f[0].value.text, f[3].value]),
                [
                    ["one", 1],
                    ["two", 999],
                ]
            );
            for (const f of demo) {
                assert.equal(f.length, 4);
                assert.equal(f[1].dataType, DataType.Null, "an unknown field is null (7.22.3)");
                assert.equal(f[2].dataType, DataType.Null, "another type's field is null");
            }
            // Demo.ReportEvent checks the severity (1..1000).
            const bad = await reportEvent(a.session, "zero", 0);
            assert.ok(bad.isNotGood(), `severity 0: ${bad}`);
            await sub.terminate();
            await a.close();
        });

        test("an invalid where clause: the item is refused with a result per element and operand", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const where = [
                // 0: And with an ElementOperand that points nowhere
                new ContentFilterElement({
                    filterOperator: FilterOperator.And,
                    filterOperands: [new ElementOperand({ index: 1 }), new ElementOperand({ index: 42 })],
                }),
                // 1: fine
                new ContentFilterElement({
                    filterOperator: FilterOperator.GreaterThan,
                    filterOperands: [field("Severity"), literal(DataType.UInt16, 10)],
                }),
                // 2: GreaterThan with one operand
                new ContentFilterElement({
                    filterOperator: FilterOperator.GreaterThan,
                    filterOperands: [field("Severity")],
                }),
                // 3: an operator that does not exist (99, set below: node-opcua
                // refuses it in constructors, not on the wire)
                new ContentFilterElement({
                    filterOperator: FilterOperator.IsNull,
                    filterOperands: [literal(DataType.UInt16, 1)],
                }),
                // 4: InView: a defined operator, not usable in an EventFilter
                new ContentFilterElement({
                    filterOperator: FilterOperator.InView,
                    filterOperands: [literal(DataType.NodeId, opcua.resolveNodeId("i=84"))],
                }),
            ];
            const filter = eventFilter(FIELDS, where);
            filter.whereClause.elements[3].filterOperator = 99;
            const r = await createRaw(a.session, sub.subscriptionId, { filter });
            assert.ok(
                [StatusCodes.BadEventFilterInvalid.value, StatusCodes.BadMonitoredItemFilterInvalid.value].includes(
                    r.statusCode.value
                ),
                `item status ${r.statusCode}`
            );
            const fr = r.filterResult;
            assert.ok(fr instanceof opcua.EventFilterResult, `an EventFilterResult (got ${fr?.constructor?.name})`);
            const el = fr.whereClauseResult.elementResults;
            assert.equal(el.length, 5, "one result per element");
            assert.equal(
                el[0].statusCode.value,
                StatusCodes.BadFilterOperandInvalid.value,
                `element 0: ${el[0].statusCode}`
            );
            assert.deepEqual(
                el[0].operandStatusCodes.map((s) => s.value),
                [StatusCodes.Good.value, StatusCodes.BadFilterOperandInvalid.value],
                "element 0: per operand"
            );
            assert.equal(el[1].statusCode.value, StatusCodes.Good.value, `element 1: ${el[1].statusCode}`);
            assert.equal(
                el[2].statusCode.value,
                StatusCodes.BadFilterOperandCountMismatch.value,
                `element 2: ${el[2].statusCode}`
            );
            assert.equal(
                el[3].statusCode.value,
                StatusCodes.BadFilterOperatorInvalid.value,
                `element 3: ${el[3].statusCode}`
            );
            // 7.7.3 / 7.22.3: InView is not for EventFilters (Bad_FilterOperatorUnsupported).
            assert.equal(
                el[4].statusCode.value,
                StatusCodes.BadFilterOperatorUnsupported.value,
                `element 4: ${el[4].statusCode}`
            );
            await sub.terminate();
            await a.close();
        });

        test("invalid select clauses: a result per clause, the rejected fields come as null", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const badAttr = new SimpleAttributeOperand({
                typeDefinitionId: BASE_EVENT_TYPE,
                browsePath: [{ namespaceIndex: 0, name: "Message" }],
                attributeId: 999,
            });
            const emptyName = new SimpleAttributeOperand({
                typeDefinitionId: BASE_EVENT_TYPE,
                browsePath: [{ namespaceIndex: 0, name: "" }],
                attributeId: AttributeIds.Value,
            });
            const filter = eventFilter([field("Message"), badAttr, emptyName, field("Severity")]);
            const r = await createRaw(a.session, sub.subscriptionId, { filter });
            // 7.22.3: "The Server returns null for unavailable or rejected
            // Event fields": the item itself may stand.
            const fr = r.filterResult;
            assert.ok(
                fr instanceof opcua.EventFilterResult,
                `an EventFilterResult (got ${fr?.constructor?.name}), item ${r.statusCode}`
            );
            assert.deepEqual(
                fr.selectClauseResults.map((s) => s.name),
                ["Good", "BadAttributeIdInvalid", "BadBrowseNameInvalid", "Good"],
                "one result per select clause"
            );
            if (r.statusCode.value === StatusCodes.Good.value) {
                // Read the fields as sent: a raw subscription and Publish by
                // hand (node-opcua's subscription is gone from the session).
                const pub = async () =>
                    rawRequest(a.session, new opcua.PublishRequest({ subscriptionAcknowledgements: [] }));
                await sub.terminate();
                const raw = await rawRequest(
                    a.session,
                    new opcua.CreateSubscriptionRequest({
                        requestedPublishingInterval: 50,
                        requestedLifetimeCount: 300,
                        requestedMaxKeepAliveCount: 4,
                        maxNotificationsPerPublish: 0,
                        publishingEnabled: true,
                        priority: 0,
                    })
                );
                const r2 = await createRaw(a.session, raw.subscriptionId, { filter });
                assert.equal(r2.statusCode.value, StatusCodes.Good.value);
                assert.equal(await reportEvent(a.session, "rejected fields", 321), StatusCodes.Good);
                let got = null;
                for (let i = 0; i < 20 && !got; i++) {
                    const resp = await pub();
                    for (const n of resp.notificationMessage.notificationData || [])
                        if (n instanceof opcua.EventNotificationList)
                            for (const e of n.events)
                                if (e.eventFields[0].value?.text === "rejected fields") got = e.eventFields;
                }
                assert.ok(got, "the event arrived");
                assert.deepEqual(
                    got.map((v) => v.dataType),
                    [DataType.LocalizedText, DataType.Null, DataType.Null, DataType.UInt16]
                );
                assert.equal(got[3].value, 321);
            } else {
                assert.ok(r.statusCode.isNotGood());
                await sub.terminate();
            }
            await a.close();
        });

        test("filters that do not fit the attribute: BadFilterNotAllowed / an event item needs an EventFilter", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const dcf = new opcua.DataChangeFilter({
                trigger: opcua.DataChangeTrigger.StatusValue,
                deadbandType: opcua.DeadbandType.None,
                deadbandValue: 0,
            });
            const r1 = await createRaw(a.session, sub.subscriptionId, { filter: dcf });
            assert.equal(
                r1.statusCode.value,
                StatusCodes.BadFilterNotAllowed.value,
                `DataChangeFilter on EventNotifier: ${r1.statusCode}`
            );
            const r2 = await createRaw(a.session, sub.subscriptionId, {
                nodeId: "ns=1;i=1001",
                attributeId: AttributeIds.Value,
                filter: eventFilter(),
            });
            assert.equal(
                r2.statusCode.value,
                StatusCodes.BadFilterNotAllowed.value,
                `EventFilter on a Value: ${r2.statusCode}`
            );
            const r3 = await createRaw(a.session, sub.subscriptionId, { filter: null });
            assert.ok(r3.statusCode.isNotGood(), `EventNotifier without a filter: ${r3.statusCode}`);
            const r4 = await createRaw(a.session, sub.subscriptionId, { filter: eventFilter([]) });
            assert.ok(r4.statusCode.isNotGood(), `an EventFilter without select clauses: ${r4.statusCode}`);
            const r5 = await createRaw(a.session, sub.subscriptionId, { nodeId: "ns=1;i=1001", filter: eventFilter() });
            assert.equal(
                r5.statusCode.value,
                StatusCodes.BadAttributeIdInvalid.value,
                `EventNotifier of a Variable: ${r5.statusCode}`
            );
            await sub.terminate();
            await a.close();
        });

        test("an event item in Disabled mode gets nothing; Reporting again gets new events only", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const onlyDemo = [
                new ContentFilterElement({
                    filterOperator: FilterOperator.Equals,
                    filterOperands: [field("SourceName"), literal(DataType.String, "Demo")],
                }),
            ];
            const { item, events } = await monitorEvents(sub, eventFilter(FIELDS, onlyDemo));
            assert.equal(await item.setMonitoringMode(MonitoringMode.Disabled), StatusCodes.Good);
            await reportEvent(a.session, "while disabled", 600);
            await sleep(300);
            assert.equal(events.length, 0);
            assert.equal(await item.setMonitoringMode(MonitoringMode.Reporting), StatusCodes.Good);
            await reportEvent(a.session, "after", 600);
            await waitFor(() => events.length >= 1, 5000, "the event");
            await sleep(200);
            assert.deepEqual(messages(events), ["after"]);
            await sub.terminate();
            await a.close();
        });

        // Was a SERVER DEVIATION, fixed (sub_item.c event_overflow). OPC 10000-4
        // 5.13.1.5: "If Events are lost, an Event of the type
        // EventQueueOverflowEventType is placed in the queue ... in addition
        // to the size of the Queue ... If discardOldest is set to TRUE it is
        // put at the beginning of the queue and is never discarded"; 7.22.3:
        // such events bypass the whereClause. With queueSize 2 and five
        // events while publishing is disabled the client should get
        // [EventQueueOverflow, e4, e5]; uastack sent [e4, e5] and the client
        // could not tell that events were lost.
        test("event queue overflow (queueSize 2, 5 events): an EventQueueOverflowEventType event first", async () => {
            const a = await open(server);
            const sub = await clientSub(a.session);
            const onlyDemo = [
                new ContentFilterElement({
                    filterOperator: FilterOperator.Equals,
                    filterOperands: [field("SourceName"), literal(DataType.String, "Demo")],
                }),
            ];
            const { events } = await monitorEvents(sub, eventFilter(["EventType", "Message"], onlyDemo), {
                queueSize: 2,
                discardOldest: true,
            });
            await sub.setPublishingMode(false);
            for (const m of ["e1", "e2", "e3", "e4", "e5"])
                assert.equal(await reportEvent(a.session, m, 500), StatusCodes.Good);
            await sleep(150);
            await sub.setPublishingMode(true);
            await waitFor(() => events.length >= 2, 5000, "the queued events");
            await sleep(300);
            const got = events.map((f) => [f[0].value?.toString(), f[1].value?.text ?? null]);
            assert.deepEqual(
                got.slice(-2),
                [
                    ["ns=0;i=2041", "e4"],
                    ["ns=0;i=2041", "e5"],
                ],
                "the newest two events"
            );
            assert.equal(got.length, 3, `an overflow event in addition to the queue: got ${JSON.stringify(got)}`);
            assert.equal(got[0][0], "ns=0;i=3035", "EventQueueOverflowEventType first");
            await sub.terminate();
            await a.close();
        });
    });
}
