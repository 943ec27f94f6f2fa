/* uacli plumbing: connecting, synchronous calls, error lines, names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

int cli_fail(const char *what, uas_status st)
{
    const char *desc = uas_status_description(st);
    if (desc[0])
        fprintf(stderr, "uacli: %s failed: %s (%s)\n", what, uas_status_name(st), desc);
    else
        fprintf(stderr, "uacli: %s failed: %s (0x%08X)\n", what, uas_status_name(st), (unsigned)st);
    return EXIT_UA;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("uacli: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_open(cli *c, bool session)
{
    c->loop = uas_loop_new(8u << 20);
    if (!c->loop)
        return cli_fail("start", UAS_BAD_OUT_OF_MEMORY);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = c->url;
    cfg.create_session = session;
    cfg.session_name = "uacli";
    cfg.request_timeout_ms = c->timeout_ms;
    cfg.max_inflight = 4;
    c->client = uas_client_new(c->loop, &cfg, NULL, NULL);
    if (!c->client)
        return cli_fail("start", UAS_BAD_OUT_OF_MEMORY);
    uas_status st = uas_client_connect(c->client);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c->client,
                                   session ? UAS_CLIENT_SESSION_ACTIVE : UAS_CLIENT_CHANNEL_OPEN,
                                   c->timeout_ms);
    if (st != UAS_GOOD) {
        char what[600];
        snprintf(what, sizeof(what), "connect to %s", c->url);
        if (st == UAS_BAD_NOT_CONNECTED) {
            /* The code's table text is about variables; say what happened. */
            fprintf(stderr,
                    "uacli: %s failed: BadNotConnected (no server accepted the TCP "
                    "connection)\n",
                    what);
            return EXIT_UA;
        }
        return cli_fail(what, st);
    }
    return EXIT_OK;
}

void cli_close(cli *c)
{
    if (c->client) {
        uas_client_disconnect(c->client);
        (void)uas_client_wait_state(c->client, UAS_CLIENT_CLOSED, c->timeout_ms);
        uas_client_delete(c->client);
        c->client = NULL;
    }
    if (c->loop) {
        /* Let a connection still flushing its CLO finish. */
        for (int i = 0; i < 4; i++)
            uas_loop_run_once(c->loop, false);
        uas_loop_delete(c->loop);
        c->loop = NULL;
    }
    uas_arena_free(&c->arena);
}

uas_status cli_call(cli *c, const char *what, void *req, const uas_type *req_type, void *resp,
                    const uas_type *resp_type)
{
    uas_status st = uas_client_call_sync(c->client, req, req_type, resp, resp_type, &c->arena,
                                         c->timeout_ms + 1000);
    /* A lost connection says more through its reason. */
    if (st == UAS_BAD_CONNECTION_CLOSED && uas_is_bad(uas_client_get_reason(c->client)))
        st = uas_client_get_reason(c->client);
    if (st != UAS_GOOD)
        cli_fail(what, st);
    return st;
}

int cli_parse_nodeid(cli *c, const char *text, uas_nodeid *out)
{
    uas_status st = uas_nodeid_parse(text, out, &c->arena);
    if (st == UAS_GOOD)
        return EXIT_OK;
    if (st == UAS_BAD_OUT_OF_MEMORY)
        return cli_fail("parse", st);
    return cli_usage_error("invalid node id '%s' (expected e.g. i=85, ns=1;i=1001, ns=1;s=Demo, "
                           "g=GUID, b=BASE64)",
                           text);
}

void cli_nodeid_text(const uas_nodeid *id, char *buf, size_t size)
{
    uas_nodeid_format(id, buf, size);
}

const char *cli_node_class_name(int32_t nc)
{
    switch (nc) {
    case UAS_NODE_CLASS_OBJECT:
        return "Object";
    case UAS_NODE_CLASS_VARIABLE:
        return "Variable";
    case UAS_NODE_CLASS_METHOD:
        return "Method";
    case UAS_NODE_CLASS_OBJECT_TYPE:
        return "ObjectType";
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        return "VariableType";
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        return "ReferenceType";
    case UAS_NODE_CLASS_DATA_TYPE:
        return "DataType";
    case UAS_NODE_CLASS_VIEW:
        return "View";
    default:
        return "Unspecified";
    }
}

/* Part 3, 5.9 / Part 6, A.1: attribute ids 1..27. */
static const char *const attributes[] = {
    NULL,
    "NodeId",
    "NodeClass",
    "BrowseName",
    "DisplayName",
    "Description",
    "WriteMask",
    "UserWriteMask",
    "IsAbstract",
    "Symmetric",
    "InverseName",
    "ContainsNoLoops",
    "EventNotifier",
    "Value",
    "DataType",
    "ValueRank",
    "ArrayDimensions",
    "AccessLevel",
    "UserAccessLevel",
    "MinimumSamplingInterval",
    "Historizing",
    "Executable",
    "UserExecutable",
    "DataTypeDefinition",
    "RolePermissions",
    "UserRolePermissions",
    "AccessRestrictions",
    "AccessLevelEx",
};

enum { ATTRIBUTE_COUNT = sizeof(attributes) / sizeof(attributes[0]) };

const char *cli_attribute_name(uint32_t id)
{
    return id > 0 && id < ATTRIBUTE_COUNT ? attributes[id] : "Unknown";
}

uint32_t cli_attribute_parse(const char *text)
{
    for (uint32_t i = 1; i < ATTRIBUTE_COUNT; i++)
        if (strcasecmp(text, attributes[i]) == 0)
            return i;
    char *end;
    unsigned long v = strtoul(text, &end, 10);
    if (*text && !*end && v > 0 && v < ATTRIBUTE_COUNT)
        return (uint32_t)v;
    return 0;
}
