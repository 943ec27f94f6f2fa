/* Names of enumeration values, asked of the server: a Variant carries an
 * enumeration as a bare Int32, so uacli reads the variable's DataType and
 * that DataType's EnumStrings or EnumValues property (Part 3, 5.8.3),
 * which covers the server's own enumerations as well as namespace 0's. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { ATTR_VALUE = 13, HAS_PROPERTY = 46, ENUMERATION = 29, HAS_SUBTYPE = 45 };

static uas_status call(cli *c, void *req, const uas_type *rt, void *resp, const uas_type *pt)
{
    return uas_client_call_sync(c->client, req, rt, resp, pt, &c->arena, c->timeout_ms);
}

/* The node of the DataType's property named name (ns 0), if any. */
static bool property(cli *c, const uas_nodeid *type, const char *name, uas_nodeid *out)
{
    uas_relative_path_element el;
    memset(&el, 0, sizeof(el));
    el.reference_type_id = uas_nodeid_numeric(0, HAS_PROPERTY);
    el.target_name.name = uas_string_from(name);
    uas_browse_path path;
    memset(&path, 0, sizeof(path));
    path.starting_node = *type;
    path.relative_path.elements_count = 1;
    path.relative_path.elements = &el;
    uas_translate_browse_paths_to_node_ids_request req;
    memset(&req, 0, sizeof(req));
    req.browse_paths_count = 1;
    req.browse_paths = &path;
    uas_translate_browse_paths_to_node_ids_response resp;
    if (call(c, &req, UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST), &resp,
             UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE)) != UAS_GOOD ||
        resp.results_count != 1 || uas_is_bad(resp.results[0].status_code) ||
        resp.results[0].targets_count == 0 ||
        resp.results[0].targets[0].target_id.server_index != 0)
        return false;
    *out = resp.results[0].targets[0].target_id.nodeid;
    return true;
}

static bool read_value(cli *c, const uas_nodeid *id, uas_variant *out)
{
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = *id;
    rv.attribute_id = ATTR_VALUE;
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read_count = 1;
    req.nodes_to_read = &rv;
    uas_read_response resp;
    if (call(c, &req, UAS_TYPE(READ_REQUEST), &resp, UAS_TYPE(READ_RESPONSE)) != UAS_GOOD ||
        resp.results_count != 1 || !resp.results[0].has_value ||
        (resp.results[0].has_status && uas_is_bad(resp.results[0].status)))
        return false;
    *out = resp.results[0].value;
    return true;
}

static void copy_text(const uas_localizedtext *t, char *out, size_t len)
{
    snprintf(out, len, "%.*s", (int)(t->text.length < 200 ? t->text.length : 200),
             t->text.data ? (const char *)t->text.data : "");
}

bool cli_enum_name(cli *c, const uas_nodeid *type, int64_t value, char *out, size_t len)
{
    uas_nodeid prop;
    uas_variant v;
    /* EnumStrings: LocalizedText[], indexed by the value from 0. */
    if (property(c, type, "EnumStrings", &prop) && read_value(c, &prop, &v) && v.is_array &&
        v.type == UAS_TYPE(LOCALIZED_TEXT)) {
        if (value < 0 || (uint64_t)value >= v.array_length)
            return false;
        copy_text((const uas_localizedtext *)v.data + value, out, len);
        return out[0] != 0;
    }
    /* EnumValues: EnumValueType[], any values. */
    if (property(c, type, "EnumValues", &prop) && read_value(c, &prop, &v) && v.is_array &&
        v.type == UAS_TYPE(EXTENSION_OBJECT)) {
        const uas_extensionobject *eo = v.data;
        for (size_t i = 0; i < v.array_length; i++) {
            if (eo[i].encoding != UAS_EXTOBJ_DECODED ||
                eo[i].content.decoded.type != UAS_TYPE(ENUM_VALUE_TYPE))
                continue;
            const uas_enum_value_type *ev = eo[i].content.decoded.data;
            if (ev->value == value) {
                copy_text(&ev->display_name, out, len);
                return out[0] != 0;
            }
        }
    }
    return false;
}
