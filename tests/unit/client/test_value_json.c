/* The JSON printer (client/src/value_json.c) behind uacli --output json:
 * each builtin's shape, escaping, 64-bit integers as strings, structures by
 * their schema field names, Variants as {"Type","Body"}. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/client_text.h>

static char *json(const void *p, const uas_type *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    uas_value_print_json(f, p, t);
    fclose(f);
    return buf;
}

#define EXPECT_JSON(p, t, want)                                                                    \
    do {                                                                                           \
        char *got_ = json(p, t);                                                                   \
        cr_expect_str_eq(got_, want);                                                              \
        free(got_);                                                                                \
    } while (0)

Test(value_json, numbers_and_64_bit_integers)
{
    bool b = true;
    EXPECT_JSON(&b, UAS_TYPE(BOOLEAN), "true");
    int32_t i = -7;
    EXPECT_JSON(&i, UAS_TYPE(INT32), "-7");
    int64_t big = INT64_MIN;
    EXPECT_JSON(&big, UAS_TYPE(INT64), "\"-9223372036854775808\"");
    uint64_t ubig = UINT64_MAX;
    EXPECT_JSON(&ubig, UAS_TYPE(UINT64), "\"18446744073709551615\"");
    double d = 0.1;
    EXPECT_JSON(&d, UAS_TYPE(DOUBLE), "0.1");
    d = NAN;
    EXPECT_JSON(&d, UAS_TYPE(DOUBLE), "\"NaN\"");
    float fl = 1.5f;
    EXPECT_JSON(&fl, UAS_TYPE(FLOAT), "1.5");
}

Test(value_json, strings_are_escaped_and_null_is_null)
{
    uas_string s = uas_string_from("a \"q\"\n\\\x01");
    EXPECT_JSON(&s, UAS_TYPE(STRING), "\"a \\\"q\\\"\\n\\\\\\u0001\"");
    uas_string null = {0, NULL};
    EXPECT_JSON(&null, UAS_TYPE(STRING), "null");
    uas_bytestring bs = {4, (uint8_t *)"\x00\x01\x02\xff"};
    EXPECT_JSON(&bs, UAS_TYPE(BYTE_STRING), "\"AAEC/w==\"");
}

Test(value_json, node_ids_names_and_texts)
{
    uas_nodeid id = uas_nodeid_numeric(1, 1001);
    EXPECT_JSON(&id, UAS_TYPE(NODE_ID), "\"ns=1;i=1001\"");
    uas_qualifiedname q = {2, uas_string_from("Temp")};
    EXPECT_JSON(&q, UAS_TYPE(QUALIFIED_NAME), "{\"Name\":\"Temp\",\"Uri\":2}");
    uas_localizedtext l = {uas_string_from("en"), uas_string_from("Hi")};
    EXPECT_JSON(&l, UAS_TYPE(LOCALIZED_TEXT), "{\"Locale\":\"en\",\"Text\":\"Hi\"}");
    uas_status st = UAS_BAD_NODE_ID_UNKNOWN;
    EXPECT_JSON(&st, UAS_TYPE(STATUS_CODE), "\"BadNodeIdUnknown\"");
}

Test(value_json, structures_use_schema_field_names_and_variants_carry_their_type)
{
    uas_browse_path_target tg;
    memset(&tg, 0, sizeof(tg));
    tg.target_id.nodeid = uas_nodeid_numeric(0, 2253);
    tg.remaining_path_index = 3;
    EXPECT_JSON(&tg, UAS_TYPE(BROWSE_PATH_TARGET),
                "{\"TargetId\":\"i=2253\",\"RemainingPathIndex\":3}");
    int32_t vals[3] = {1, 2, 3};
    uas_variant v;
    memset(&v, 0, sizeof(v));
    uas_variant_set_array(&v, vals, 3, UAS_TYPE(INT32));
    EXPECT_JSON(&v, UAS_TYPE(VARIANT), "{\"Type\":\"Int32\",\"Body\":[1,2,3]}");
    uas_variant empty;
    memset(&empty, 0, sizeof(empty));
    EXPECT_JSON(&empty, UAS_TYPE(VARIANT), "null");
}
