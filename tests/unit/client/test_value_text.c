/* The value printer (client/src/value_text.c): what uacli shows for each
 * builtin, for arrays, and for structures walked over their descriptors. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/client_text.h>

/* The printed text of a value (malloc'd). */
static char *show(const void *p, const uas_type *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    uas_value_print(f, p, t, 0);
    fclose(f);
    return buf;
}

static char *show_variant(const uas_variant *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    uas_variant_print(f, v, 0);
    fclose(f);
    return buf;
}

#define EXPECT_SHOWS(p, t, want)                                                                   \
    do {                                                                                           \
        char *got_ = show(p, t);                                                                   \
        cr_expect_str_eq(got_, want);                                                              \
        free(got_);                                                                                \
    } while (0)

Test(value_text, numbers)
{
    bool b = true;
    EXPECT_SHOWS(&b, UAS_TYPE(BOOLEAN), "true");
    int8_t sb = -5;
    EXPECT_SHOWS(&sb, UAS_TYPE(SBYTE), "-5");
    uint16_t u16 = 65535;
    EXPECT_SHOWS(&u16, UAS_TYPE(UINT16), "65535");
    int32_t i32 = INT32_MIN;
    EXPECT_SHOWS(&i32, UAS_TYPE(INT32), "-2147483648");
    uint64_t u64 = UINT64_MAX;
    EXPECT_SHOWS(&u64, UAS_TYPE(UINT64), "18446744073709551615");
    /* Reals: the shortest text that reads back as the same value. */
    double d = 0.1;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "0.1");
    d = 21.5;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "21.5");
    d = 0.1 + 0.2; /* not 0.3: all 17 digits are needed */
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "0.30000000000000004");
    d = 1e300;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "1e+300");
    d = -0.0;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "-0");
    d = INFINITY;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "Infinity");
    d = NAN;
    EXPECT_SHOWS(&d, UAS_TYPE(DOUBLE), "NaN");
    float f = 1.5f;
    EXPECT_SHOWS(&f, UAS_TYPE(FLOAT), "1.5");
    f = 0.1f; /* as a double it would be 0.100000001 */
    EXPECT_SHOWS(&f, UAS_TYPE(FLOAT), "0.1");
    /* An option set is a mask. */
    uint8_t al = 0x03;
    EXPECT_SHOWS(&al, UAS_TYPE(ACCESS_LEVEL_TYPE), "0x03");
}

Test(value_text, strings_are_quoted_and_escaped_null_is_null)
{
    uas_string s = uas_string_from("a \"q\"\n\\");
    EXPECT_SHOWS(&s, UAS_TYPE(STRING), "\"a \\\"q\\\"\\n\\\\\"");
    uas_string null = {0, NULL};
    EXPECT_SHOWS(&null, UAS_TYPE(STRING), "null");
    uas_bytestring bs = {3, (uint8_t *)"\x01\xab\xff"};
    EXPECT_SHOWS(&bs, UAS_TYPE(BYTE_STRING), "0x01abff");
}

Test(value_text, status_qualified_name_localized_text_node_id)
{
    uas_status st = UAS_BAD_NODE_ID_UNKNOWN;
    EXPECT_SHOWS(&st, UAS_TYPE(STATUS_CODE), "BadNodeIdUnknown");
    st = UAS_GOOD;
    EXPECT_SHOWS(&st, UAS_TYPE(STATUS_CODE), "Good");
    uas_qualifiedname q = {1, uas_string_from("Demo")};
    EXPECT_SHOWS(&q, UAS_TYPE(QUALIFIED_NAME), "1:Demo");
    uas_localizedtext l = {uas_string_from("en"), uas_string_from("Server")};
    EXPECT_SHOWS(&l, UAS_TYPE(LOCALIZED_TEXT), "\"Server\" [en]");
    uas_nodeid id = uas_nodeid_string(1, "Demo");
    EXPECT_SHOWS(&id, UAS_TYPE(NODE_ID), "ns=1;s=Demo");
}

Test(value_text, variant_scalar_array_and_empty)
{
    uas_variant v;
    int32_t x = 42;
    uas_variant_set_scalar(&v, &x, UAS_TYPE(INT32));
    char *s = show_variant(&v);
    cr_expect_str_eq(s, "Int32 42");
    free(s);
    int32_t arr[3] = {1, 2, 3};
    uas_variant_set_array(&v, arr, 3, UAS_TYPE(INT32));
    s = show_variant(&v);
    cr_expect_str_eq(s, "Int32[3] [1, 2, 3]");
    free(s);
    memset(&v, 0, sizeof(v));
    s = show_variant(&v);
    cr_expect_str_eq(s, "empty");
    free(s);
}

Test(value_text, structures_print_one_member_per_line_with_nested_indent)
{
    uas_build_info bi;
    memset(&bi, 0, sizeof(bi));
    bi.product_uri = uas_string_from("urn:uastack");
    bi.build_date = UAS_DATETIME_UNIX_EPOCH;
    uas_server_status_data_type ss;
    memset(&ss, 0, sizeof(ss));
    ss.start_time = UAS_DATETIME_UNIX_EPOCH;
    ss.current_time = UAS_DATETIME_UNIX_EPOCH;
    ss.state = UAS_SERVER_STATE_RUNNING;
    ss.build_info = bi;
    char *s = show(&ss, UAS_TYPE(SERVER_STATUS_DATA_TYPE));
    const char *want = "ServerStatusDataType {\n"
                       "  start_time: 1970-01-01T00:00:00.000Z\n"
                       "  current_time: 1970-01-01T00:00:00.000Z\n"
                       "  state: 0\n"
                       "  build_info: BuildInfo {\n"
                       "    product_uri: \"urn:uastack\"\n"
                       "    manufacturer_name: null\n"
                       "    product_name: null\n"
                       "    software_version: null\n"
                       "    build_number: null\n"
                       "    build_date: 1970-01-01T00:00:00.000Z\n"
                       "  }\n"
                       "  seconds_till_shutdown: 0\n"
                       "  shutdown_reason: null\n"
                       "}";
    cr_expect_str_eq(s, want);
    free(s);
}

Test(value_text, arrays_of_structures_and_extension_objects)
{
    uas_argument args[2];
    memset(args, 0, sizeof(args));
    args[0].name = uas_string_from("a");
    args[0].data_type = uas_nodeid_numeric(0, 6);
    args[0].value_rank = -1;
    args[1] = args[0];
    args[1].name = uas_string_from("b");
    uas_variant v;
    uas_variant_set_array(&v, args, 2, UAS_TYPE(ARGUMENT));
    char *s = show_variant(&v);
    cr_expect(strstr(s, "Argument[2] [\n  [0] Argument {\n    name: \"a\"\n") != NULL, "%s", s);
    cr_expect(strstr(s, "  [1] Argument {\n    name: \"b\"\n") != NULL, "%s", s);
    cr_expect(strstr(s, "    array_dimensions: null\n") != NULL, "%s", s);
    free(s);
    /* Decoded: by type name and members; undecoded: type id and size. */
    uas_extensionobject eo;
    memset(&eo, 0, sizeof(eo));
    eo.encoding = UAS_EXTOBJ_DECODED;
    eo.content.decoded.type = UAS_TYPE(ARGUMENT);
    eo.content.decoded.data = &args[0];
    s = show(&eo, UAS_TYPE(EXTENSION_OBJECT));
    cr_expect(strncmp(s, "Argument {\n  name: \"a\"", 22) == 0, "%s", s);
    free(s);
    eo.encoding = UAS_EXTOBJ_BYTESTRING;
    eo.content.encoded.type_id = uas_nodeid_numeric(2, 5001);
    eo.content.encoded.body.length = 12;
    eo.content.encoded.body.data = (uint8_t *)"0123456789ab";
    EXPECT_SHOWS(&eo, UAS_TYPE(EXTENSION_OBJECT), "ExtensionObject(ns=2;i=5001, 12 bytes)");
}

Test(value_text, datavalue_shows_value_status_and_timestamps)
{
    uas_datavalue dv;
    memset(&dv, 0, sizeof(dv));
    int32_t x = 7;
    uas_variant_set_scalar(&dv.value, &x, UAS_TYPE(INT32));
    dv.has_value = true;
    dv.has_status = true;
    dv.status = UAS_UNCERTAIN_INITIAL_VALUE;
    dv.has_source_timestamp = true;
    dv.source_timestamp = UAS_DATETIME_UNIX_EPOCH;
    EXPECT_SHOWS(&dv, UAS_TYPE(DATA_VALUE),
                 "DataValue {\n  value: Int32 7\n  status: UncertainInitialValue\n"
                 "  source_timestamp: 1970-01-01T00:00:00.000Z\n}");
}
