/* uacli read / write: one attribute of one node. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { ATTR_NODE_CLASS = 2, ATTR_VALUE = 13, ATTR_DATA_TYPE = 14, COL = 18 };

static void field(const char *name)
{
    printf("%-*s", COL, name);
}

/* The value, with a name where the attribute gives the number a meaning. */
static void print_value(uint32_t attr, const uas_variant *v)
{
    if (!v->type) {
        printf("(empty)\n");
        return;
    }
    if (!v->is_array && attr == ATTR_NODE_CLASS && v->type == UAS_TYPE(INT32)) {
        int32_t nc = *(const int32_t *)v->data;
        printf("%d (%s)\n", (int)nc, cli_node_class_name(nc));
        return;
    }
    if (!v->is_array && v->type == UAS_TYPE(NODE_ID)) {
        const uas_nodeid *id = v->data;
        char buf[256];
        cli_nodeid_text(id, buf, sizeof(buf));
        const uas_type *t = attr == ATTR_DATA_TYPE && id->ns == 0 && id->kind == UAS_NODEID_NUMERIC
                                ? uas_type_by_id(id->id.numeric)
                                : NULL;
        if (t)
            printf("%s (%s)\n", buf, t->name);
        else
            printf("%s\n", buf);
        return;
    }
    if (!v->is_array) {
        uas_value_print(stdout, v->data, v->type, COL);
        putchar('\n');
        return;
    }
    /* The Type line gave element type and count: the elements only. */
    uint8_t k = v->type->kind;
    bool block = k == UAS_KIND_STRUCT ||
                 (k >= UAS_BUILTIN_EXTENSIONOBJECT && k <= UAS_BUILTIN_DIAGNOSTICINFO);
    putchar('[');
    for (size_t i = 0; v->data && i < v->array_length; i++) {
        if (block)
            printf("\n%*s[%zu] ", COL + 2, "", i);
        else if (i)
            printf(", ");
        uas_value_print(stdout, (const uint8_t *)v->data + i * v->type->size, v->type,
                        block ? COL + 2 : COL);
    }
    if (block && v->array_length)
        printf("\n%*s", COL, "");
    printf("]\n");
}

static void print_timestamp(const char *name, bool has, uas_datetime t)
{
    if (!has)
        return;
    char buf[64];
    uas_datetime_format(t, buf, sizeof(buf));
    field(name);
    printf("%s\n", buf);
}

int cmd_read(cli *c, int argc, char **argv)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    int rc = cli_parse_nodeid(c, argv[0], &rv.node_id);
    if (rc)
        return rc;
    rv.attribute_id = ATTR_VALUE;
    bool value_attr = argc <= 1;
    if (argc > 1 && (rv.attribute_id = cli_attribute_parse(argv[1])) == 0)
        return cli_usage_error("unknown attribute '%s' (a name such as Value, DisplayName, "
                               "or a number 1..27)",
                               argv[1]);
    if ((rc = cli_open(c, true)))
        return rc;
    value_attr = value_attr || rv.attribute_id == ATTR_VALUE;
    /* The DataType comes along with a Value: an enumeration travels as a
     * bare Int32, and its DataType names the values. */
    uas_read_value_id ids[2] = {rv, rv};
    ids[1].attribute_id = ATTR_DATA_TYPE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    req.nodes_to_read_count = value_attr ? 2 : 1;
    req.nodes_to_read = ids;
    uas_read_response resp;
    if (cli_call(c, "read", &req, UAS_TYPE(READ_REQUEST), &resp, UAS_TYPE(READ_RESPONSE)))
        return EXIT_UA;
    if (resp.results_count != req.nodes_to_read_count)
        return cli_fail("read", UAS_BAD_UNKNOWN_RESPONSE);
    const uas_datavalue *dv = &resp.results[0];
    char enum_name[256] = "";
    const uas_datavalue *dt = value_attr ? &resp.results[1] : NULL;
    if (dt && dt->has_value && !dt->value.is_array && dt->value.type == UAS_TYPE(NODE_ID) &&
        dv->has_value && !dv->value.is_array && dv->value.type == UAS_TYPE(INT32)) {
        const uas_nodeid *type = dt->value.data;
        bool plain_int32 = type->ns == 0 && type->kind == UAS_NODEID_NUMERIC &&
                           type->id.numeric == UAS_TYPE(INT32)->type_id;
        if (!plain_int32)
            cli_enum_name(c, type, *(const int32_t *)dv->value.data, enum_name, sizeof(enum_name));
    }
    uas_status st = dv->has_status ? dv->status : UAS_GOOD;
    if (uas_is_bad(st))
        return cli_fail("read", st);
    char buf[256];
    cli_nodeid_text(&rv.node_id, buf, sizeof(buf));
    if (c->json) {
        printf("{");
        cli_json_key("NodeId", true);
        uas_json_string(stdout, (const uint8_t *)buf, strlen(buf));
        cli_json_key("Attribute", false);
        const char *an = cli_attribute_name(rv.attribute_id);
        uas_json_string(stdout, (const uint8_t *)an, strlen(an));
        cli_json_key("DataValue", false);
        uas_value_print_json(stdout, dv, UAS_TYPE(DATA_VALUE));
        if (enum_name[0]) {
            cli_json_key("EnumName", false);
            uas_json_string(stdout, (const uint8_t *)enum_name, strlen(enum_name));
        }
        printf("}\n");
        return EXIT_OK;
    }
    field("NodeId:");
    printf("%s\n", buf);
    field("Attribute:");
    printf("%s\n", cli_attribute_name(rv.attribute_id));
    field("Type:");
    if (!dv->has_value || !dv->value.type)
        printf("(none)\n");
    else if (dv->value.is_array)
        printf("%s[%zu]\n", dv->value.type->name, dv->value.array_length);
    else
        printf("%s\n", dv->value.type->name);
    field("Value:");
    if (enum_name[0])
        printf("%s (%d)\n", enum_name, (int)*(const int32_t *)dv->value.data);
    else if (dv->has_value)
        print_value(rv.attribute_id, &dv->value);
    else
        printf("(none)\n");
    field("Status:");
    printf("%s\n", uas_status_name(st));
    print_timestamp("SourceTimestamp:", dv->has_source_timestamp, dv->source_timestamp);
    print_timestamp("ServerTimestamp:", dv->has_server_timestamp, dv->server_timestamp);
    return EXIT_OK;
}

int cmd_write(cli *c, int argc, char **argv)
{
    (void)argc;
    uas_write_value wv;
    memset(&wv, 0, sizeof(wv));
    int rc = cli_parse_nodeid(c, argv[0], &wv.node_id);
    if (rc || (rc = cli_parse_value(c, argv[1], argv[2], &wv.value.value)))
        return rc;
    wv.attribute_id = ATTR_VALUE;
    wv.value.has_value = true;
    if ((rc = cli_open(c, true)))
        return rc;
    uas_write_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_write_count = 1;
    req.nodes_to_write = &wv;
    uas_write_response resp;
    if (cli_call(c, "write", &req, UAS_TYPE(WRITE_REQUEST), &resp, UAS_TYPE(WRITE_RESPONSE)))
        return EXIT_UA;
    if (resp.results_count != 1)
        return cli_fail("write", UAS_BAD_UNKNOWN_RESPONSE);
    if (uas_is_bad(resp.results[0]))
        return cli_fail("write", resp.results[0]);
    char buf[256];
    cli_nodeid_text(&wv.node_id, buf, sizeof(buf));
    if (c->json) {
        printf("{");
        cli_json_key("NodeId", true);
        uas_json_string(stdout, (const uint8_t *)buf, strlen(buf));
        cli_json_key("Status", false);
        uas_json_string(stdout, (const uint8_t *)uas_status_name(resp.results[0]),
                        strlen(uas_status_name(resp.results[0])));
        printf("}\n");
        return EXIT_OK;
    }
    printf("%s: %s\n", buf, uas_status_name(resp.results[0]));
    return EXIT_OK;
}
