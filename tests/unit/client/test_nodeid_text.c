/* Node ids as text (client/src/nodeid_text.c): the forms of Part 6,
 * 5.3.1.10 a user types into uacli, parsed and formatted back. */
#include <criterion/criterion.h>

#include <string.h>

#include <ua/client_text.h>

static uas_nodeid parse_ok(const char *text, uas_arena *a)
{
    uas_nodeid id;
    uas_status st = uas_nodeid_parse(text, &id, a);
    cr_assert_eq(st, UAS_GOOD, "'%s': %s", text, uas_status_name(st));
    return id;
}

static void expect_bad(const char *text)
{
    uas_nodeid id;
    uas_status st = uas_nodeid_parse(text, &id, NULL);
    cr_expect_eq(st, UAS_BAD_NODE_ID_INVALID, "'%s' gave %s", text, uas_status_name(st));
    cr_expect_eq(id.kind, UAS_NODEID_NUMERIC, "'%s': out is null on error", text);
    cr_expect_eq(id.id.numeric, 0);
}

static void expect_format(const uas_nodeid *id, const char *want)
{
    char buf[256];
    size_t n = uas_nodeid_format(id, buf, sizeof(buf));
    cr_expect_str_eq(buf, want);
    cr_expect_eq(n, strlen(want));
}

Test(nodeid_text, parse_numeric_with_and_without_namespace)
{
    uas_nodeid id = parse_ok("i=85", NULL);
    cr_expect_eq(id.ns, 0);
    cr_expect_eq(id.kind, UAS_NODEID_NUMERIC);
    cr_expect_eq(id.id.numeric, 85);
    id = parse_ok("ns=1;i=1001", NULL);
    cr_expect_eq(id.ns, 1);
    cr_expect_eq(id.id.numeric, 1001);
    id = parse_ok("ns=65535;i=4294967295", NULL);
    cr_expect_eq(id.ns, 65535);
    cr_expect_eq(id.id.numeric, UINT32_MAX);
}

Test(nodeid_text, parse_string_keeps_everything_after_s_equals)
{
    uas_nodeid id = parse_ok("ns=1;s=Demo", NULL);
    cr_expect_eq(id.kind, UAS_NODEID_STRING);
    cr_expect(uas_string_eq_cstr(&id.id.string, "Demo"));
    uas_clear(&id, UAS_TYPE(NODE_ID));
    /* ';', '=' and spaces are part of the identifier. */
    id = parse_ok("ns=2;s=a;b=c d", NULL);
    cr_expect(uas_string_eq_cstr(&id.id.string, "a;b=c d"));
    uas_clear(&id, UAS_TYPE(NODE_ID));
}

Test(nodeid_text, parse_string_into_an_arena_needs_no_clear)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_nodeid id = parse_ok("ns=3;s=Machine.Temperature", &a);
    cr_expect_eq(id.ns, 3);
    cr_expect(uas_string_eq_cstr(&id.id.string, "Machine.Temperature"));
    uas_nodeid b = parse_ok("b=AAEC/w==", &a);
    cr_expect_eq(b.id.bytestring.length, 4);
    uas_arena_free(&a);
}

Test(nodeid_text, parse_guid_either_case)
{
    uas_nodeid id = parse_ok("ns=2;g=09087E75-8E5E-499b-954f-f2a9603db28a", NULL);
    cr_expect_eq(id.kind, UAS_NODEID_GUID);
    cr_expect_eq(id.id.guid.data1, 0x09087e75u);
    cr_expect_eq(id.id.guid.data2, 0x8e5e);
    cr_expect_eq(id.id.guid.data3, 0x499b);
    const uint8_t d4[8] = {0x95, 0x4f, 0xf2, 0xa9, 0x60, 0x3d, 0xb2, 0x8a};
    cr_expect_arr_eq(id.id.guid.data4, d4, 8);
    expect_format(&id, "ns=2;g=09087e75-8e5e-499b-954f-f2a9603db28a");
}

Test(nodeid_text, parse_bytestring_base64_with_and_without_padding)
{
    uas_nodeid id = parse_ok("b=AQID", NULL);
    cr_expect_eq(id.kind, UAS_NODEID_BYTESTRING);
    cr_assert_eq(id.id.bytestring.length, 3);
    cr_expect_eq(id.id.bytestring.data[0], 1);
    cr_expect_eq(id.id.bytestring.data[2], 3);
    uas_clear(&id, UAS_TYPE(NODE_ID));
    id = parse_ok("ns=4;b=/w==", NULL);
    cr_assert_eq(id.id.bytestring.length, 1);
    cr_expect_eq(id.id.bytestring.data[0], 0xff);
    expect_format(&id, "ns=4;b=/w==");
    uas_clear(&id, UAS_TYPE(NODE_ID));
    id = parse_ok("b=AAE=", NULL);
    cr_expect_eq(id.id.bytestring.length, 2);
    uas_clear(&id, UAS_TYPE(NODE_ID));
}

Test(nodeid_text, malformed_text_is_bad_node_id_invalid)
{
    const char *bad[] = {
        "",
        "85",
        "i=",
        "i=abc",
        "i=-1",
        "i=+5",
        "i=4294967296",
        "i=1 ",
        "ns=1",
        "ns=;i=1",
        "ns=x;i=1",
        "ns=65536;i=1",
        "ns=1;",
        "ns=1;x=5",
        "s=",
        "g=1234",
        "g=09087e75-8e5e-499b-954f-f2a9603db28",
        "g=09087e75x8e5e-499b-954f-f2a9603db28a",
        "g=g9087e75-8e5e-499b-954f-f2a9603db28a",
        "b=",
        "b=AQI",
        "b=A===",
        "b=AQ=D",
        "b=AQ!D",
        "I=85",
        "ns=1;ns=2;i=1",
        "ns=99999999999999999999;i=1",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_bad(bad[i]);
    uas_nodeid id;
    cr_expect_eq(uas_nodeid_parse(NULL, &id, NULL), UAS_BAD_NODE_ID_INVALID);
}

Test(nodeid_text, format_round_trips_every_kind)
{
    const char *texts[] = {
        "i=0",
        "i=85",
        "ns=1;i=1001",
        "ns=1;s=Demo",
        "ns=1;s=Demo.Add",
        "g=00000000-0000-0000-0000-000000000000",
        "b=AQIDBAU=",
        "ns=7;b=AAAA",
        "ns=65535;i=4294967295",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        uas_nodeid id = parse_ok(texts[i], NULL);
        expect_format(&id, texts[i]);
        uas_nodeid again = parse_ok(texts[i], NULL);
        cr_expect(uas_equal(&id, &again, UAS_TYPE(NODE_ID)), "%s", texts[i]);
        uas_clear(&id, UAS_TYPE(NODE_ID));
        uas_clear(&again, UAS_TYPE(NODE_ID));
    }
}

Test(nodeid_text, format_truncates_like_snprintf)
{
    uas_nodeid id = uas_nodeid_string(1, "LongIdentifier");
    char buf[8];
    size_t n = uas_nodeid_format(&id, buf, sizeof(buf));
    cr_expect_eq(n, strlen("ns=1;s=LongIdentifier"));
    cr_expect_str_eq(buf, "ns=1;s=");
    cr_expect_eq(uas_nodeid_format(&id, NULL, 0), n, "size 0 only measures");
}

Test(nodeid_text, expanded_node_ids_show_server_index_and_namespace_uri)
{
    uas_expandednodeid e;
    memset(&e, 0, sizeof(e));
    e.nodeid = uas_nodeid_numeric(2, 5);
    char buf[128];
    uas_expandednodeid_format(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, "ns=2;i=5");
    e.namespace_uri = uas_string_from("http://example.org/UA/");
    uas_expandednodeid_format(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, "nsu=http://example.org/UA/;i=5");
    e.server_index = 3;
    uas_expandednodeid_format(&e, buf, sizeof(buf));
    cr_expect_str_eq(buf, "svr=3;nsu=http://example.org/UA/;i=5");
}

Test(nodeid_text, datetime_is_iso8601_utc_with_milliseconds)
{
    char buf[64];
    uas_datetime_format(UAS_DATETIME_UNIX_EPOCH, buf, sizeof(buf));
    cr_expect_str_eq(buf, "1970-01-01T00:00:00.000Z");
    /* 2024-02-29T12:34:56.789Z */
    uas_datetime t = UAS_DATETIME_UNIX_EPOCH + (1709210096LL * 1000 + 789) * UAS_DATETIME_MSEC;
    uas_datetime_format(t, buf, sizeof(buf));
    cr_expect_str_eq(buf, "2024-02-29T12:34:56.789Z");
    uas_datetime_format(0, buf, sizeof(buf));
    cr_expect_str_eq(buf, "1601-01-01T00:00:00.000Z");
}

/* Dates a 32-bit time_t cannot hold (armhf): the DateTime epoch above, and
 * every date after 2038-01-19. */
Test(nodeid_text, datetime_beyond_a_32_bit_time_t)
{
    char buf[64];
    /* 2100-03-01T00:00:00.000Z (2100 is not a leap year) */
    uas_datetime t = UAS_DATETIME_UNIX_EPOCH + 4107542400LL * 10000000;
    uas_datetime_format(t, buf, sizeof(buf));
    cr_expect_str_eq(buf, "2100-03-01T00:00:00.000Z");
    uas_datetime_format(t - UAS_DATETIME_MSEC, buf, sizeof(buf));
    cr_expect_str_eq(buf, "2100-02-28T23:59:59.999Z");
    /* 2038-01-19T03:14:08.000Z, one second past a signed 32-bit time_t */
    uas_datetime_format(UAS_DATETIME_UNIX_EPOCH + 2147483648LL * 10000000, buf, sizeof(buf));
    cr_expect_str_eq(buf, "2038-01-19T03:14:08.000Z");
    /* 9999-12-31T23:59:59.999Z, the last date of Part 6 */
    t = UAS_DATETIME_UNIX_EPOCH + (253402300799LL * 1000 + 999) * UAS_DATETIME_MSEC;
    uas_datetime_format(t, buf, sizeof(buf));
    cr_expect_str_eq(buf, "9999-12-31T23:59:59.999Z");
    /* 1969-12-31T23:59:59.900Z: before 1970 counts down from the right day */
    uas_datetime_format(UAS_DATETIME_UNIX_EPOCH - 100 * UAS_DATETIME_MSEC, buf, sizeof(buf));
    cr_expect_str_eq(buf, "1969-12-31T23:59:59.900Z");
}
