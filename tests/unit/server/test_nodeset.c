/* NodeSet2 loading: small crafted files for every error (each names the
 * file and line), all-or-nothing, the limits, models and namespaces, the
 * run-time types of <Definition> (exact binary encodings of structures
 * with optional fields, unions, nested structures, enumerations), dynamic
 * ReferenceTypes, methods bound later, and the companion specifications of
 * UAS_NODESETS_DIR. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aspace_internal.h"
#include "helper_aspace.h"
#include "nodeset.h"

static fx f;
static char dir[64];
static char err[512];

static void setup(void)
{
    need_full_ns0();
    fx_init(&f, NULL);
    snprintf(dir, sizeof(dir), "/tmp/uas-nodeset-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    fx_fini(&f);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(nodeset, .init = setup, .fini = teardown);

static const ns_limits big = {(size_t)64 << 20, 1000000, 64, false};

/* A file of name with a header for model uri (requiring req when not
 * NULL) and body; returns its path (static buffer per slot). */
static const char *file_with(int slot, const char *name, const char *uri, const char *req,
                             const char *body)
{
    static char paths[4][128];
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", dir, name);
    FILE *fp = fopen(paths[slot], "w");
    cr_assert_not_null(fp);
    fprintf(fp,
            "<?xml version=\"1.0\"?>\n"
            "<UANodeSet xmlns=\"http://opcfoundation.org/UA/2011/03/UANodeSet.xsd\">\n"
            "<NamespaceUris><Uri>%s</Uri></NamespaceUris>\n"
            "<Models><Model ModelUri=\"%s\" Version=\"1.0.0\">%s%s%s</Model></Models>\n"
            "<Aliases><Alias Alias=\"HasComponent\">i=47</Alias>"
            "<Alias Alias=\"Organizes\">i=35</Alias><Alias Alias=\"HasSubtype\">i=45</Alias>"
            "<Alias Alias=\"Int32\">i=6</Alias></Aliases>\n"
            "%s"
            "</UANodeSet>\n",
            uri, uri, req ? "<RequiredModel ModelUri=\"" : "", req ? req : "",
            req ? "\" Version=\"1.0.0\"/>" : "", body);
    fclose(fp);
    return paths[slot];
}

/* Line 6 is the first line of body. */
#define OBJ(id, name, extra)                                                                       \
    "<UAObject NodeId=\"" id "\" BrowseName=\"1:" name "\"><References>"                           \
    "<Reference ReferenceType=\"Organizes\" IsForward=\"false\">i=85</Reference>"                  \
    "<Reference ReferenceType=\"i=40\">i=58</Reference>" extra "</References></UAObject>\n"

static uas_status load1(const char *path)
{
    return uas__nodeset_load(f.s, &path, 1, &big, err, sizeof(err));
}

static bool exists(uas_nodeid id)
{
    uas_datavalue dv = read_attr(&f, id, 1, NULL);
    return dv.status == UAS_GOOD;
}

static void expect_error(uas_status st, uas_status want, const char *where, const char *reason)
{
    cr_assert_eq(st, want, "status %s, want %s (%s)", uas_status_name(st), uas_status_name(want),
                 err);
    cr_assert(strstr(err, where) == err, "'%s' does not start with '%s'", err, where);
    cr_assert(strstr(err, reason), "'%s' does not say '%s'", err, reason);
}

Test(nodeset, good_file_builds_nodes_and_both_directions_of_references)
{
    const char *p = file_with(0, "a.xml", "urn:a", NULL,
                              OBJ("ns=1;i=1", "A", "") "<UAVariable NodeId=\"ns=1;s=v\" "
                                                       "BrowseName=\"1:V\" DataType=\"Int32\">"
                                                       "<DisplayName>Vee</DisplayName>"
                                                       "<References><Reference ReferenceType="
                                                       "\"HasComponent\" IsForward=\"false\">"
                                                       "ns=1;i=1</Reference></References>"
                                                       "<Value><Int32 xmlns=\"x\">42</Int32>"
                                                       "</Value></UAVariable>\n");
    cr_assert_eq(load1(p), UAS_GOOD, "%s", err);
    uint16_t ns = uas_server_add_namespace(f.s, "urn:a");
    uas_datavalue dv = read_attr(&f, uas_nodeid_string(ns, "v"), 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(*(int32_t *)dv.value.data, 42);
    dv = read_attr(&f, uas_nodeid_string(ns, "v"), 4, NULL);
    cr_assert(uas_string_eq_cstr(&((uas_localizedtext *)dv.value.data)->text, "Vee"));
    /* Objects -Organizes-> A (written only on A), A -HasComponent-> V. */
    cr_assert_eq(browse_count(&f, N0(85), 0, N0(35)) >= 1, true);
    uas_browse_response *rs = browse(&f, N0(85), 0, N0(35), false, 0, 63, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "A"));
    fx_reset(&f);
    rs = browse(&f, uas_nodeid_numeric(ns, 1), 0, N0(47), false, 0, 63, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "V"));
    fx_reset(&f);
    rs = browse(&f, uas_nodeid_numeric(ns, 1), 0, N0(40), false, 0, 63, 0);
    cr_assert_eq(rs->results[0].references_count, 1);
}

Test(nodeset, bad_nodeid_is_refused_with_file_and_line)
{
    const char *p = file_with(0, "bad.xml", "urn:a", NULL, OBJ("ns=1;x=1", "A", ""));
    expect_error(load1(p), UAS_BAD_NODE_ID_INVALID, "bad.xml:6: ", "bad NodeId 'ns=1;x=1'");
}

Test(nodeset, namespace_index_outside_the_file_is_a_bad_nodeid)
{
    const char *p = file_with(0, "bad.xml", "urn:a", NULL, OBJ("ns=7;i=1", "A", ""));
    expect_error(load1(p), UAS_BAD_NODE_ID_INVALID, "bad.xml:6: ", "namespace index 7");
}

Test(nodeset, unknown_alias_is_refused)
{
    const char *p = file_with(
        0, "alias.xml", "urn:a", NULL,
        OBJ("ns=1;i=1", "A", "<Reference ReferenceType=\"HasNoSuchThing\">i=85</Reference>"));
    expect_error(load1(p), UAS_BAD_NODE_ID_INVALID,
                 "alias.xml:6: ", "unknown alias 'HasNoSuchThing'");
}

Test(nodeset, unresolved_reference_target_is_refused)
{
    const char *p = file_with(0, "target.xml", "urn:a", NULL,
                              "\n" OBJ("ns=1;i=1", "A",
                                       "<Reference ReferenceType=\"Organizes\">ns=1;i=99"
                                       "</Reference>"));
    expect_error(load1(p), UAS_BAD_TARGET_NODE_ID_INVALID,
                 "target.xml:7: ", "unresolved reference target 'ns=");
}

Test(nodeset, duplicate_nodeid_in_a_file_is_refused)
{
    const char *p =
        file_with(0, "dup.xml", "urn:a", NULL, OBJ("ns=1;i=1", "A", "") OBJ("ns=1;i=1", "B", ""));
    expect_error(load1(p), UAS_BAD_NODE_ID_EXISTS, "dup.xml:7: ", "duplicate NodeId");
    cr_assert(strstr(err, "first at dup.xml:6"), "%s", err);
}

Test(nodeset, nodeid_already_in_the_address_space_is_a_duplicate)
{
    const char *p = file_with(0, "dup0.xml", "urn:a", NULL,
                              "<UAObject NodeId=\"i=85\" BrowseName=\"Objects\"/>\n");
    expect_error(load1(p), UAS_BAD_NODE_ID_EXISTS, "dup0.xml:6: ", "already in the address space");
}

Test(nodeset, value_of_the_wrong_type_is_refused)
{
    const char *p = file_with(0, "val.xml", "urn:a", NULL,
                              OBJ("ns=1;i=1", "A", "") "<UAVariable NodeId=\"ns=1;i=2\" "
                                                       "BrowseName=\"1:V\" DataType=\"Int32\">"
                                                       "<References><Reference ReferenceType="
                                                       "\"HasComponent\" IsForward=\"false\">"
                                                       "ns=1;i=1</Reference></References>\n"
                                                       "<Value><String>abc</String></Value>"
                                                       "</UAVariable>\n");
    expect_error(load1(p), UAS_BAD_TYPE_MISMATCH, "val.xml:8: ", "type mismatch");
}

Test(nodeset, value_text_that_does_not_parse_is_a_type_mismatch)
{
    const char *p = file_with(0, "val.xml", "urn:a", NULL,
                              OBJ("ns=1;i=1", "A", "") "<UAVariable NodeId=\"ns=1;i=2\" "
                                                       "BrowseName=\"1:V\" DataType=\"Int32\">"
                                                       "<References><Reference ReferenceType="
                                                       "\"HasComponent\" IsForward=\"false\">"
                                                       "ns=1;i=1</Reference></References>\n"
                                                       "<Value><Int32>12x</Int32></Value>"
                                                       "</UAVariable>\n");
    expect_error(load1(p), UAS_BAD_TYPE_MISMATCH, "val.xml:8: ", "not an integer in <Int32>");
}

Test(nodeset, cycle_in_the_type_hierarchy_is_refused)
{
    const char *p =
        file_with(0, "cycle.xml", "urn:a", NULL,
                  "<UAObjectType NodeId=\"ns=1;i=1\" BrowseName=\"1:T1\"><References>"
                  "<Reference ReferenceType=\"HasSubtype\" IsForward=\"false\">ns=1;i=2</Reference>"
                  "</References></UAObjectType>\n"
                  "<UAObjectType NodeId=\"ns=1;i=2\" BrowseName=\"1:T2\"><References>"
                  "<Reference ReferenceType=\"HasSubtype\" IsForward=\"false\">ns=1;i=1</Reference>"
                  "</References></UAObjectType>\n");
    expect_error(load1(p), UAS_BAD_TYPE_DEFINITION_INVALID,
                 "cycle.xml:6: ", "cycle in the type hierarchy");
}

Test(nodeset, missing_required_model_is_named)
{
    const char *p =
        file_with(0, "needs.xml", "urn:a", "urn:missing:model", OBJ("ns=1;i=1", "A", ""));
    expect_error(load1(p), UAS_BAD_CONFIGURATION_ERROR,
                 "needs.xml:1: ", "requires model urn:missing:model version 1.0.0");
}

Test(nodeset, required_model_is_loaded_first_whatever_the_order)
{
    const char *paths[2] = {
        file_with(0, "child.xml", "urn:child", "urn:base",
                  "<UAObject NodeId=\"ns=1;i=1\" BrowseName=\"1:C\"><References>"
                  "<Reference ReferenceType=\"i=40\">ns=2;i=1</Reference>"
                  "<Reference ReferenceType=\"Organizes\" IsForward=\"false\">i=85</Reference>"
                  "</References></UAObject>\n"),
        file_with(1, "base.xml", "urn:base", NULL,
                  "<UAObjectType NodeId=\"ns=1;i=1\" BrowseName=\"1:BaseT\"><References>"
                  "<Reference ReferenceType=\"HasSubtype\" IsForward=\"false\">i=58</Reference>"
                  "</References></UAObjectType>\n"),
    };
    /* child.xml's NamespaceUris list only its own URI: add urn:base. */
    FILE *fp = fopen(paths[0], "r+");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    buf[n] = 0;
    fclose(fp);
    char *at = strstr(buf, "</NamespaceUris>");
    char out[4200];
    snprintf(out, sizeof(out), "%.*s<Uri>urn:base</Uri>%s", (int)(at - buf), buf, at);
    fp = fopen(paths[0], "w");
    fputs(out, fp);
    fclose(fp);
    cr_assert_eq(uas__nodeset_load(f.s, paths, 2, &big, err, sizeof(err)), UAS_GOOD, "%s", err);
    uint16_t b = uas_server_add_namespace(f.s, "urn:base");
    uint16_t c = uas_server_add_namespace(f.s, "urn:child");
    cr_assert(exists(uas_nodeid_numeric(b, 1)));
    cr_assert(exists(uas_nodeid_numeric(c, 1)));
    /* Loaded once: a second load of the same model is refused. */
    expect_error(uas__nodeset_load(f.s, &paths[1], 1, &big, err, sizeof(err)),
                 UAS_BAD_CONFIGURATION_ERROR, "base.xml:1: ", "model urn:base is already loaded");
}

Test(nodeset, a_failed_load_adds_no_node_of_any_file)
{
    const char *paths[2] = {
        file_with(0, "ok.xml", "urn:ok", NULL, OBJ("ns=1;i=1", "Fine", "")),
        file_with(1, "broken.xml", "urn:broken", NULL,
                  OBJ("ns=1;i=1", "A",
                      "<Reference ReferenceType=\"Organizes\">ns=1;i=5"
                      "</Reference>")),
    };
    uas_status st = uas__nodeset_load(f.s, paths, 2, &big, err, sizeof(err));
    expect_error(st, UAS_BAD_TARGET_NODE_ID_INVALID, "broken.xml:6: ", "unresolved");
    /* The URIs were never added, and Objects has no new reference. */
    uas_datavalue dv = read_attr(&f, N0(2255), 13, NULL);
    cr_assert_eq(dv.value.array_length, 2);
    uas_browse_response *rs = browse(&f, N0(85), 0, N0(35), false, 0, 63, 0);
    cr_assert_null(find_ref(&rs->results[0], "Fine"));
}

Test(nodeset, limits_bound_file_size_node_count_and_depth)
{
    const char *p =
        file_with(0, "lim.xml", "urn:a", NULL, OBJ("ns=1;i=1", "A", "") OBJ("ns=1;i=2", "B", ""));
    ns_limits small = big;
    small.max_file_size = 100;
    expect_error(uas__nodeset_load(f.s, &p, 1, &small, err, sizeof(err)),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED, "lim.xml: ", "nodeset_max_file_size");
    small = big;
    small.max_nodes = 1;
    expect_error(uas__nodeset_load(f.s, &p, 1, &small, err, sizeof(err)),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED, "lim.xml:7: ", "nodeset_max_nodes");
    small = big;
    small.max_depth = 3;
    expect_error(uas__nodeset_load(f.s, &p, 1, &small, err, sizeof(err)),
                 UAS_BAD_ENCODING_LIMITS_EXCEEDED, "lim.xml:6: ", "nodeset_max_depth");
    cr_assert_eq(load1(p), UAS_GOOD, "%s", err);
}

Test(nodeset, malformed_xml_is_refused_with_its_line)
{
    const char *p = file_with(0, "x.xml", "urn:a", NULL, "\n\n<UAObject NodeId=\"ns=1;i=1\"\n");
    expect_error(load1(p), UAS_BAD_DECODING_ERROR, "x.xml:", "XML: ");
}

Test(nodeset, structure_missing_a_field_is_a_type_mismatch)
{
    const char *p = file_with(
        0, "st.xml", "urn:a", NULL,
        "<UADataType NodeId=\"ns=1;i=1\" BrowseName=\"1:P\"><References>"
        "<Reference ReferenceType=\"HasSubtype\" IsForward=\"false\">i=22</Reference>"
        "</References><Definition Name=\"1:P\"><Field Name=\"X\" DataType=\"Int32\"/>"
        "<Field Name=\"Y\" DataType=\"Int32\"/></Definition></UADataType>\n" OBJ(
            "ns=1;i=9", "O",
            "") "<UAVariable NodeId=\"ns=1;i=2\" BrowseName=\"1:V\" "
                "DataType=\"ns=1;i=1\"><References>"
                "<Reference ReferenceType=\"HasComponent\" IsForward=\"false\">ns=1;i=9</Reference>"
                "</References><Value>\n<ExtensionObject><TypeId><Identifier>ns=1;i=1</Identifier>"
                "</TypeId><Body><P><X>1</X></P></Body></ExtensionObject></Value></UAVariable>\n");
    expect_error(load1(p), UAS_BAD_TYPE_MISMATCH, "st.xml:9: ", "lacks field Y");
}

/* ---- the test model: run-time types ---- */

static uint16_t load_test_model(void)
{
    const char *p = UAS_TEST_NODESETS_DIR "/Uastack.Test.NodeSet2.xml";
    cr_assert_eq(load1(p), UAS_GOOD, "%s", err);
    return uas_server_add_namespace(f.s, "urn:uastack:test:types");
}

static const uas_extensionobject *value_eo(uas_nodeid id)
{
    uas_datavalue dv = read_attr(&f, id, 13, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(dv.value.type, UAS_TYPE(EXTENSION_OBJECT));
    const uas_extensionobject *x = dv.value.data;
    cr_assert_eq(x->encoding, UAS_EXTOBJ_BYTESTRING);
    return x;
}

static void put_f64(uint8_t **p, double d)
{
    memcpy(*p, &d, 8); /* little-endian host, as the codec assumes */
    *p += 8;
}

static void put_i32(uint8_t **p, int32_t v)
{
    memcpy(*p, &v, 4);
    *p += 4;
}

Test(nodeset, structure_with_optional_fields_nested_and_arrays_encodes_in_binary)
{
    uint16_t ns = load_test_model();
    const uas_extensionobject *x = value_eo(uas_nodeid_numeric(ns, 6002));
    cr_assert(as_nodeid_eq(&x->content.encoded.type_id, &(uas_nodeid){0}) == false);
    cr_assert_eq(x->content.encoded.type_id.ns, ns);
    cr_assert_eq(x->content.encoded.type_id.id.numeric, 5003); /* its Default Binary */
    uint8_t want[96], *p = want;
    put_i32(&p, 2); /* encoding mask: Comment absent (bit 0), Weight present (bit 1) */
    put_i32(&p, 8);
    memcpy(p, "triangle", 8);
    p += 8;
    put_i32(&p, 2); /* Color Blue_2 */
    put_f64(&p, 1.5);
    put_f64(&p, -2);
    put_i32(&p, 3);
    double pts[6] = {0, 0, 3, 0, 0, 4};
    for (int i = 0; i < 6; i++)
        put_f64(&p, pts[i]);
    put_f64(&p, 12.25);
    cr_assert_eq((size_t)(p - want), sizeof(want));
    cr_assert_eq(x->content.encoded.body.length, sizeof(want));
    cr_assert_arr_eq(x->content.encoded.body.data, want, sizeof(want));
}

Test(nodeset, union_encodes_its_switch_and_one_field)
{
    uint16_t ns = load_test_model();
    const uas_extensionobject *x = value_eo(uas_nodeid_numeric(ns, 6003));
    uint8_t want[13], *p = want;
    put_i32(&p, 2);
    put_i32(&p, 5);
    memcpy(p, "hello", 5);
    cr_assert_eq(x->content.encoded.body.length, sizeof(want));
    cr_assert_arr_eq(x->content.encoded.body.data, want, sizeof(want));
    /* A value given with its Default XML TypeId goes out with Default Binary. */
    x = value_eo(uas_nodeid_numeric(ns, 6005));
    cr_assert_eq(x->content.encoded.type_id.id.numeric, 5002);
    cr_assert_eq(x->content.encoded.body.length, 16);
}

Test(nodeset, definitions_are_the_datatypedefinition_attribute)
{
    uint16_t ns = load_test_model();
    uas_datavalue dv = read_attr(&f, uas_nodeid_numeric(ns, 3003), 23, NULL);
    cr_assert_eq(dv.status, UAS_GOOD);
    cr_assert_eq(dv.value.type, UAS_TYPE(STRUCTURE_DEFINITION));
    const uas_structure_definition *sd = dv.value.data;
    cr_assert_eq(sd->structure_type, UAS_STRUCTURE_TYPE_STRUCTURE_WITH_OPTIONAL_FIELDS);
    cr_assert_eq(sd->fields_count, 6);
    cr_assert(sd->fields[4].is_optional && !sd->fields[0].is_optional);
    cr_assert_eq(sd->fields[3].value_rank, 1);
    cr_assert_eq(sd->fields[1].data_type.id.numeric, 3001);
    cr_assert_eq(sd->default_encoding_id.id.numeric, 5003);
    cr_assert_eq(sd->base_data_type.id.numeric, 22);
    fx_reset(&f);
    dv = read_attr(&f, uas_nodeid_numeric(ns, 3004), 23, NULL);
    cr_assert_eq(((uas_structure_definition *)dv.value.data)->structure_type,
                 UAS_STRUCTURE_TYPE_UNION);
    fx_reset(&f);
    dv = read_attr(&f, uas_nodeid_numeric(ns, 3001), 23, NULL);
    cr_assert_eq(dv.value.type, UAS_TYPE(ENUM_DEFINITION));
    const uas_enum_definition *ed = dv.value.data;
    cr_assert_eq(ed->fields_count, 3);
    cr_assert_eq(ed->fields[2].value, 2);
    cr_assert(uas_string_eq_cstr(&ed->fields[2].name, "Blue"));
    /* IsAbstract of a loaded type, InverseName of a loaded ReferenceType. */
    fx_reset(&f);
    dv = read_attr(&f, uas_nodeid_numeric(ns, 4001), 10, NULL);
    cr_assert(uas_string_eq_cstr(&((uas_localizedtext *)dv.value.data)->text, "FedBy"));
}

Test(nodeset, own_reference_type_browses_by_itself_and_as_its_supertype)
{
    uint16_t ns = load_test_model();
    uas_browse_response *rs =
        browse(&f, uas_nodeid_numeric(ns, 6001), 0, uas_nodeid_numeric(ns, 4001), false, 0, 63, 0);
    cr_assert_eq(rs->results[0].references_count, 1);
    cr_assert(as_nodeid_eq(&rs->results[0].references[0].reference_type_id,
                           &(uas_nodeid){.ns = ns, .id.numeric = 4001}));
    fx_reset(&f);
    rs = browse(&f, uas_nodeid_numeric(ns, 6001), 0, N0(32), true, 0, 63, 0);
    cr_assert_not_null(find_ref(&rs->results[0], "Color"));
    fx_reset(&f);
    rs = browse(&f, uas_nodeid_numeric(ns, 6004), 1, uas_nodeid_numeric(ns, 4001), false, 0, 63, 0);
    cr_assert_eq(rs->results[0].references_count, 1); /* the inverse on the target */
}

static int scale_calls;

static uas_status scale(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                        size_t in_count, const uas_variant *in, size_t *out_count,
                        uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in, (void)out, (void)arena;
    cr_assert_eq(in_count, 1);
    scale_calls++;
    *out_count = 0;
    return UAS_GOOD;
}

static uas_status call_scale(uint16_t ns, double factor)
{
    uas_variant in;
    uas_variant_set_scalar(&in, &factor, UAS_TYPE(DOUBLE));
    uas_call_method_request cm;
    memset(&cm, 0, sizeof(cm));
    cm.object_id = uas_nodeid_numeric(ns, 6001);
    cm.method_id = uas_nodeid_numeric(ns, 7001);
    cm.input_arguments = &in;
    cm.input_arguments_count = 1;
    uas_call_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.methods_to_call = &cm;
    rq.methods_to_call_count = 1;
    uas_call_response *rs = uas_arena_calloc(&f.arena, 1, sizeof(*rs));
    uas_svc_call(&f.ctx, &rq, rs);
    cr_assert_eq(rs->results_count, 1);
    return rs->results[0].status_code;
}

Test(nodeset, declared_method_answers_not_implemented_until_bound)
{
    uint16_t ns = load_test_model();
    cr_assert_eq(call_scale(ns, 2), UAS_BAD_NOT_IMPLEMENTED);
    uas_nodeid m = uas_nodeid_numeric(ns, 7001);
    cr_assert_eq(uas_server_bind_method(f.s, &m, scale, NULL), UAS_GOOD);
    cr_assert_eq(call_scale(ns, 2), UAS_GOOD);
    cr_assert_eq(scale_calls, 1);
}

/* ---- the companion specifications ---- */

Test(nodeset, every_companion_specification_loads_in_any_order)
{
    DIR *d = opendir(UAS_NODESETS_DIR);
    if (!d)
        cr_skip_test("no NodeSet folder at " UAS_NODESETS_DIR " (configure -DUA_NODESETS_DIR)");
    char *paths[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".xml")) {
            paths[n] = malloc(strlen(UAS_NODESETS_DIR) + len + 2);
            sprintf(paths[n++], "%s/%s", UAS_NODESETS_DIR, e->d_name);
        }
    }
    closedir(d);
    cr_assert_geq(n, 9);
    /* Reverse directory order: dependencies come after their users. */
    for (size_t i = 0; i < n / 2; i++) {
        char *t = paths[i];
        paths[i] = paths[n - 1 - i];
        paths[n - 1 - i] = t;
    }
    uas_status st = uas__nodeset_load(f.s, (const char *const *)paths, n, &big, err, sizeof(err));
    cr_assert_eq(st, UAS_GOOD, "%s", err);
    uint16_t di = uas_server_add_namespace(f.s, "http://opcfoundation.org/UA/DI/");
    cr_assert(exists(uas_nodeid_numeric(di, 5001))); /* DeviceSet */
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
}

/* Memory per loaded node (docs/Benchmarks.md, "Memory per loaded node"):
 * the heap bytes the nine companion specifications keep, by the
 * allocator's counters, per node of the address space. The record per node
 * class brought them from 734 to under 500 B/node on 64-bit builds; the
 * bound catches a node record or per-node allocation that grows back. */
static size_t node_count(fx *x)
{
    return x->s->as->node_count;
}

Test(nodeset, companion_specifications_keep_less_than_560_bytes_per_node)
{
    DIR *d = opendir(UAS_NODESETS_DIR);
    if (!d)
        cr_skip_test("no NodeSet folder at " UAS_NODESETS_DIR " (configure -DUA_NODESETS_DIR)");
    char *paths[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".xml")) {
            paths[n] = malloc(strlen(UAS_NODESETS_DIR) + len + 2);
            sprintf(paths[n++], "%s/%s", UAS_NODESETS_DIR, e->d_name);
        }
    }
    closedir(d);
    size_t nodes0 = node_count(&f);
    uas_mem_stats a, b;
    uas_mem_get_stats(&a);
    uas_status st = uas__nodeset_load(f.s, (const char *const *)paths, n, &big, err, sizeof(err));
    uas_mem_get_stats(&b);
    cr_assert_eq(st, UAS_GOOD, "%s", err);
    size_t nodes = node_count(&f) - nodes0;
    cr_assert_gt(nodes, 2000);
    double per_node = (double)(b.bytes_live - a.bytes_live) / (double)nodes;
    cr_assert_lt(per_node, 560.0, "%.0f bytes per loaded node", per_node);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
}

Test(nodeset, written_structures_are_decoded_against_their_runtime_type)
{
    uint16_t ns = load_test_model();
    const uas_extensionobject *cur = value_eo(uas_nodeid_numeric(ns, 6002));
    uas_extensionobject x = *cur;
    uas_variant v;
    uas_variant_set_scalar(&v, &x, UAS_TYPE(EXTENSION_OBJECT));
    cr_assert_eq(write_value(&f, uas_nodeid_numeric(ns, 6002), &v, NULL), UAS_GOOD);
    /* One byte short: the body does not decode as a ShapeType. */
    x.content.encoded.body.length--;
    cr_assert_eq(write_value(&f, uas_nodeid_numeric(ns, 6002), &v, NULL), UAS_BAD_TYPE_MISMATCH);
    /* A ChoiceType's body and encoding id. */
    const uas_extensionobject *choice = value_eo(uas_nodeid_numeric(ns, 6003));
    x = *choice;
    cr_assert_eq(write_value(&f, uas_nodeid_numeric(ns, 6002), &v, NULL), UAS_BAD_TYPE_MISMATCH);
    /* An enumeration of the model takes Int32. */
    int32_t blue = 2;
    uas_variant e;
    uas_variant_set_scalar(&e, &blue, UAS_TYPE(INT32));
    cr_assert_eq(write_value(&f, uas_nodeid_numeric(ns, 6004), &e, NULL), UAS_GOOD);
}
