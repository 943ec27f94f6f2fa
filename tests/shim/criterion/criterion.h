/* A small stand-in for Criterion's test API, for targets without a
 * Criterion package (Debian has none for armhf): Test, TestSuite with
 * .init/.fini/.timeout, the cr_assert_* / cr_expect_* macros the tests
 * use, cr_skip_test and cr_log_info. The tests run one after the other,
 * each in a child process (criterion_shim.c). Only the cross build uses it (tests/CMakeLists.txt,
 * UAS_CRITERION_SHIM); the native builds use Criterion itself. */
#ifndef UAS_CRITERION_SHIM_H
#define UAS_CRITERION_SHIM_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct uas_shim_test {
    const char *suite, *name;
    void (*fn)(void);
    void (*init)(void);
    void (*fini)(void);
    double timeout;
    const char *description;
    bool disabled;
} uas_shim_test;

typedef struct uas_shim_suite {
    const char *name;
    void (*init)(void);
    void (*fini)(void);
    double timeout;
    const char *description;
    bool disabled;
} uas_shim_suite;

void uas_shim_register(uas_shim_test *t);
void uas_shim_register_suite(uas_shim_suite *s);
/* fmt is "" or the test's message ("" prefixed to its literal): no
 * format attribute, which would flag the empty one. */
void uas_shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...);
void uas_shim_skip(const char *fmt, ...) __attribute__((noreturn));

#define Test(s_, n_, ...)                                                                          \
    static void s_##_##n_##_impl(void);                                                            \
    static uas_shim_test s_##_##n_##_desc = {                                                      \
        .suite = #s_, .name = #n_, .fn = s_##_##n_##_impl, __VA_ARGS__};                           \
    __attribute__((constructor)) static void s_##_##n_##_reg(void)                                 \
    {                                                                                              \
        uas_shim_register(&s_##_##n_##_desc);                                                      \
    }                                                                                              \
    static void s_##_##n_##_impl(void)

#define TestSuite(s_, ...)                                                                         \
    static uas_shim_suite s_##_suite_desc = {.name = #s_, __VA_ARGS__};                            \
    __attribute__((constructor)) static void s_##_suite_reg(void)                                  \
    {                                                                                              \
        uas_shim_register_suite(&s_##_suite_desc);                                                 \
    }

#define UAS_SHIM_CHECK(fatal, cond, expr, ...)                                                     \
    do {                                                                                           \
        if (!(cond))                                                                               \
            uas_shim_fail(fatal, __FILE__, __LINE__, expr, "" __VA_ARGS__);                        \
    } while (0)

#define cr_assert(c, ...)            UAS_SHIM_CHECK(1, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...)            UAS_SHIM_CHECK(0, (c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...)        UAS_SHIM_CHECK(1, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_not(c, ...)        UAS_SHIM_CHECK(0, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...)      UAS_SHIM_CHECK(1, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)      UAS_SHIM_CHECK(0, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)     UAS_SHIM_CHECK(1, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...)     UAS_SHIM_CHECK(0, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)      UAS_SHIM_CHECK(1, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)      UAS_SHIM_CHECK(0, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)     UAS_SHIM_CHECK(1, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...)     UAS_SHIM_CHECK(0, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)      UAS_SHIM_CHECK(1, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)      UAS_SHIM_CHECK(0, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)     UAS_SHIM_CHECK(1, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...)     UAS_SHIM_CHECK(0, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)       UAS_SHIM_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...)       UAS_SHIM_CHECK(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)   UAS_SHIM_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...)   UAS_SHIM_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)  UAS_SHIM_CHECK(1, !strcmp((a), (b)), #a " eq " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)  UAS_SHIM_CHECK(0, !strcmp((a), (b)), #a " eq " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) UAS_SHIM_CHECK(1, strcmp((a), (b)), #a " neq " #b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) UAS_SHIM_CHECK(0, strcmp((a), (b)), #a " neq " #b, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, n, ...)                                                             \
    UAS_SHIM_CHECK(1, !memcmp((a), (b), (n)), #a " arr_eq " #b, __VA_ARGS__)
#define cr_expect_arr_eq(a, b, n, ...)                                                             \
    UAS_SHIM_CHECK(0, !memcmp((a), (b), (n)), #a " arr_eq " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...)                                                         \
    UAS_SHIM_CHECK(1, fabs((double)(a) - (double)(b)) <= (eps), #a " ~ " #b, __VA_ARGS__)
#define cr_expect_float_eq(a, b, eps, ...)                                                         \
    UAS_SHIM_CHECK(0, fabs((double)(a) - (double)(b)) <= (eps), #a " ~ " #b, __VA_ARGS__)
#define cr_assert_fail(...) UAS_SHIM_CHECK(1, 0, "fail", __VA_ARGS__)
#define cr_skip_test(...)   uas_shim_skip("" __VA_ARGS__)
#define cr_skip(...)        uas_shim_skip("" __VA_ARGS__)
#define cr_log_info(...)    (fprintf(stderr, "[LOG] " __VA_ARGS__), fputc('\n', stderr))

#endif
