#define _POSIX_C_SOURCE 200809L
/* Log lines: peer text is escaped in one place (uas_log_escape, applied to
 * every message before stderr or a sink), and rate-limited call sites
 * print a burst, then count. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ua/log.h>

static char last[8192];
static unsigned lines;

static void sink(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud, (void)level, (void)module;
    snprintf(last, sizeof(last), "%s", msg);
    lines++;
}

static void setup(void)
{
    last[0] = 0;
    lines = 0;
    uas_log_set_level(UAS_LOG_DEBUG);
    uas_log_set_sink(sink, NULL);
}

static void teardown(void)
{
    uas_log_set_sink(NULL, NULL);
    uas_log_set_rate_limit(10, 10000);
}

TestSuite(log, .init = setup, .fini = teardown);

static const char *escape(const char *in, size_t len)
{
    static char out[512];
    uas_log_escape(out, sizeof(out), in, len);
    return out;
}

#define ESC(lit) escape(lit, sizeof(lit) - 1)

Test(log, escape_keeps_printable_text_and_utf8)
{
    cr_assert_str_eq(ESC("session 'plain' [x] 100%"), "session 'plain' [x] 100%");
    cr_assert_str_eq(ESC("K\xc3\xbchler \xe2\x82\xac \xf0\x9f\x94\xa7"),
                     "K\xc3\xbchler \xe2\x82\xac \xf0\x9f\x94\xa7");
}

Test(log, escape_turns_controls_into_visible_escapes)
{
    cr_assert_str_eq(ESC("a\nb\rc\td"), "a\\nb\\rc\\td");
    cr_assert_str_eq(ESC("\x1b[31mred\x7f\x01"), "\\x1b[31mred\\x7f\\x01");
    cr_assert_str_eq(ESC("nul\0byte"), "nul\\x00byte");
}

Test(log, escape_turns_c1_controls_and_invalid_utf8_into_bytes)
{
    cr_assert_str_eq(ESC("\xc2\x9b"
                         "31m"),
                     "\\xc2\\x9b31m");                        /* CSI, the C1 form */
    cr_assert_str_eq(ESC("\xc2\x85"), "\\xc2\\x85");          /* NEL */
    cr_assert_str_eq(ESC("\x9b"), "\\x9b");                   /* a lone continuation byte */
    cr_assert_str_eq(ESC("\xc0\x8a"), "\\xc0\\x8a");          /* overlong newline */
    cr_assert_str_eq(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
    cr_assert_str_eq(ESC("\xe2\x82"), "\\xe2\\x82");          /* cut short */
    cr_assert_str_eq(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
}

Test(log, escape_never_writes_half_an_escape)
{
    char out[6];
    size_t n = uas_log_escape(out, sizeof(out), "ab\ncd", 5);
    cr_assert_str_eq(out, "ab\\nc");
    cr_assert_eq(n, strlen(out));
    cr_assert_leq(n, 5);
    n = uas_log_escape(out, 5, "ab\x1b", 3); /* \x1b needs 4, only 2 left */
    cr_assert_str_eq(out, "ab");
    cr_assert_eq(n, 2);
}

Test(log, every_message_is_escaped_not_only_arguments)
{
    uas_log(UAS_LOG_INFO, "test", "name %s", "x\n ERROR [security] forged\x1b[31m");
    cr_assert_str_eq(last, "name x\\n ERROR [security] forged\\x1b[31m");
    uas_log(UAS_LOG_INFO, "test", "literal\nbreak %d", 1);
    cr_assert_str_eq(last, "literal\\nbreak 1");
    cr_assert_null(strchr(last, '\n'));
}

static void flood(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        UAS_LOG_LIMITED(UAS_LOG_WARN, "test", "refused %u", i);
}

Test(log, limited_call_site_prints_a_burst_then_counts)
{
    uas_log_set_rate_limit(3, 100000);
    flood(1000);
    cr_assert_eq(lines, 3);
    cr_assert_str_eq(last, "refused 2");
}

Test(log, limited_call_site_reports_what_it_suppressed)
{
    uas_log_set_rate_limit(2, 50);
    flood(10); /* 2 printed, 8 counted */
    cr_assert_eq(lines, 2);
    struct timespec ts = {0, 80 * 1000000L};
    nanosleep(&ts, NULL);
    flood(1);
    cr_assert_eq(lines, 3);
    cr_assert_str_eq(last, "refused 0 (8 similar lines suppressed)");
}

Test(log, limiting_off_and_disabled_levels)
{
    uas_log_set_rate_limit(0, 1000);
    flood(50);
    cr_assert_eq(lines, 50);
    uas_log_set_rate_limit(1, 100000);
    uas_log_set_level(UAS_LOG_ERROR);
    static uas_log_limit lim;
    for (int i = 0; i < 5; i++)
        uas_log_limited(&lim, UAS_LOG_WARN, "test", "hidden"); /* below the level: not counted */
    uas_log_set_level(UAS_LOG_DEBUG);
    uas_log_limited(&lim, UAS_LOG_WARN, "test", "shown");
    cr_assert_str_eq(last, "shown");
}
