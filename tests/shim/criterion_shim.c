/* The runner of the Criterion stand-in (criterion/criterion.h): every
 * registered test with the suite's and the test's init/fini, a timeout, and
 * Criterion's summary line. Like Criterion, each test runs in a child
 * process of its own (a failed cr_assert returns to the child's runner
 * through longjmp), so what one test leaves behind in static state (the
 * memory budget's counters, the log's rate limits) or a crash does not
 * reach the next. (Under qemu-user, where the stand-in is used, fork and
 * threads work once the loader and libc come from the same glibc:
 * cmake/toolchain-armhf.cmake.) */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_TESTS = 1024, MAX_SUITES = 64, EXIT_SKIP = 77 };

static uas_shim_test *tests[MAX_TESTS];
static size_t ntests;
static uas_shim_suite *suites[MAX_SUITES];
static size_t nsuites;
static bool failed;
static jmp_buf back;
static bool in_test;

void uas_shim_register(uas_shim_test *t)
{
    if (ntests < MAX_TESTS)
        tests[ntests++] = t;
}

void uas_shim_register_suite(uas_shim_suite *s)
{
    if (nsuites < MAX_SUITES)
        suites[nsuites++] = s;
}

void uas_shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n", file, line, expr);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "[----]   ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    failed = true;
    if (fatal) {
        if (in_test)
            longjmp(back, 1);
        exit(1);
    }
}

void uas_shim_skip(const char *fmt, ...)
{
    (void)fmt;
    if (in_test)
        longjmp(back, 2);
    exit(EXIT_SKIP);
}

static const uas_shim_suite *suite_of(const uas_shim_test *t)
{
    for (size_t i = 0; i < nsuites; i++)
        if (!strcmp(suites[i]->name, t->suite))
            return suites[i];
    return NULL;
}

static int run_one(const uas_shim_test *t)
{
    const uas_shim_suite *su = suite_of(t);
    void (*volatile init)(void) = t->init ? t->init : su ? su->init : NULL;
    void (*volatile fini)(void) = t->fini ? t->fini : su ? su->fini : NULL;
    double timeout = t->timeout ? t->timeout : su && su->timeout ? su->timeout : 0;
    /* A hang ends the test's process (SIGALRM): emulated targets are
     * slow, so the bound is generous. */
    alarm(timeout > 0 ? (unsigned)(timeout * 4) + 1 : 600);
    failed = false;
    in_test = true;
    volatile int how = setjmp(back);
    if (how == 0) {
        if (init)
            init();
        t->fn();
    }
    in_test = false;
    if (how != 2 && fini)
        fini();
    alarm(0);
    fflush(NULL);
    return how == 2 ? EXIT_SKIP : failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv; /* --jobs N: the tests run one after the other */
    size_t pass = 0, fail = 0, crash = 0, skip = 0;
    for (size_t i = 0; i < ntests; i++) {
        const uas_shim_suite *su = suite_of(tests[i]);
        if (tests[i]->disabled || (su && su->disabled))
            continue;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_one(tests[i]));
        int st = 0;
        while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        int rc = pid < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        const char *tag = rc == 0 ? "PASS" : rc == EXIT_SKIP ? "SKIP" : rc < 0 ? "CRASH" : "FAIL";
        if (pid < 0)
            fprintf(stderr, "[----] fork: %s\n", strerror(errno));
        else if (rc < 0)
            fprintf(stderr, "[----] %s::%s: signal %d\n", tests[i]->suite, tests[i]->name,
                    WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        fprintf(stderr, "[%s] %s::%s\n", tag, tests[i]->suite, tests[i]->name);
        if (rc == 0)
            pass++;
        else if (rc == EXIT_SKIP)
            skip++;
        else if (rc < 0)
            crash++;
        else
            fail++;
    }
    fprintf(stderr, "[====] Synthesis: Tested: %zu | Passing: %zu | Failing: %zu | Crashing: %zu\n",
            pass + fail + crash, pass, fail, crash);
    return fail || crash ? 1 : 0;
}
