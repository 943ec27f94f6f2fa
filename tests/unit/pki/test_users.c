/* The user store: argon2id hashes in a 0600 file, checks that do not tell
 * unknown users from wrong passwords, and failed-login throttling on an
 * injected clock. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ua/log.h>

#include "helper_pki.h"

static char *dir;
static char file[4096];

static void setup(void)
{
    uas_log_set_level(UAS_LOG_ERROR);
    dir = th_tmpdir();
    snprintf(file, sizeof(file), "%s/users", dir);
}

static void teardown(void)
{
    th_rmrf(dir);
}

TestSuite(users, .init = setup, .fini = teardown);

static void add(const char *name, const char *pw, const char *roles)
{
    cr_assert_eq(uas_user_add(file, name, pw, strlen(pw), roles, NULL), UAS_GOOD, "add %s", name);
}

static uas_status check(uas_user_store *s, const char *key, const char *name, const char *pw)
{
    return uas_user_check(s, key, name, pw, strlen(pw));
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

Test(users, add_check_remove)
{
    bool added = false;
    cr_assert_eq(uas_user_add(file, "alice", "correct horse", 13, "operator", &added), UAS_GOOD);
    cr_assert(added);
    add("bob", "hunter2", NULL);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    cr_assert_eq(check(s, "10.0.0.1", "alice", "correct horse"), UAS_GOOD);
    cr_assert_eq(check(s, "10.0.0.1", "bob", "hunter2"), UAS_GOOD);
    char roles[64];
    cr_assert_eq(uas_user_roles(s, "alice", roles, sizeof(roles)), UAS_GOOD);
    cr_assert_str_eq(roles, "operator");
    cr_assert_eq(uas_user_roles(s, "bob", roles, sizeof(roles)), UAS_GOOD);
    cr_assert_str_eq(roles, "");
    cr_assert_eq(uas_user_roles(s, "carol", roles, sizeof(roles)), UAS_BAD_NOT_FOUND);

    cr_assert_eq(uas_user_remove(file, "bob"), UAS_GOOD);
    cr_assert_eq(uas_user_remove(file, "bob"), UAS_BAD_NOT_FOUND);
    /* The store notices the change on disk. */
    cr_assert_eq(check(s, "10.0.0.1", "bob", "hunter2"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "10.0.0.1", "alice", "correct horse"), UAS_GOOD);
    add("carol", "pw-carol", "admin,operator");
    cr_assert_eq(check(s, "10.0.0.1", "carol", "pw-carol"), UAS_GOOD);
    uas_user_store_close(s);

    uas_user_info *items;
    size_t n;
    cr_assert_eq(uas_user_list(file, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(items[0].name, "alice");
    cr_assert_str_eq(items[1].name, "carol");
    cr_assert_str_eq(items[1].roles, "admin,operator");
    uas_user_list_free(items, n);
}

Test(users, file_holds_argon2id_hashes_not_passwords)
{
    add("alice", "s3cret-pass", NULL);
    char *text = slurp(file);
    cr_assert(strncmp(text, "alice:$argon2id$", 16) == 0, "%s", text);
    cr_assert(strstr(text, "s3cret-pass") == NULL);
    /* Same password, new salt: a different hash. */
    char first[512];
    snprintf(first, sizeof(first), "%s", text);
    bool added = true;
    cr_assert_eq(uas_user_add(file, "alice", "s3cret-pass", 11, NULL, &added), UAS_GOOD);
    cr_assert_not(added, "an update, not a new user");
    cr_assert_str_neq(slurp(file), first);
}

Test(users, wrong_password_and_unknown_user_are_both_denied)
{
    add("alice", "right", NULL);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    cr_assert_eq(check(s, "a", "alice", "wrong"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "b", "alice", "righ"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "c", "alice", "right\n"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "d", "alice", ""), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "e", "mallory", "right"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "f", "", "right"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "g", "al:ice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(uas_user_check(s, "h", "alice", NULL, 3), UAS_BAD_USER_ACCESS_DENIED);
    /* A password with a NUL inside is compared on all its bytes. */
    cr_assert_eq(uas_user_check(s, "i", "alice", "right\0x", 7), UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(check(s, "j", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(users, unknown_user_costs_a_hash_like_a_known_one)
{
    add("alice", "right", NULL);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    t.max_failures = 1000;
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, &t, &s), UAS_GOOD);
    double known = 1e9, unknown = 1e9;
    for (int i = 0; i < 3; i++) {
        double t0 = seconds();
        check(s, "k", "alice", "wrong");
        double t1 = seconds();
        check(s, "k", "nobody", "wrong");
        double t2 = seconds();
        known = t1 - t0 < known ? t1 - t0 : known;
        unknown = t2 - t1 < unknown ? t2 - t1 : unknown;
    }
    /* Both run one argon2id verification (tens of ms); without the dummy
     * hash the unknown user would answer in microseconds. */
    cr_assert_gt(unknown, known * 0.5, "known %.4f s, unknown %.4f s", known, unknown);
    cr_assert_gt(known, 0.005, "a real argon2id cost: %.4f s", known);
    uas_user_store_close(s);
}

static int64_t fake_now;
static int64_t fake_clock(void *ud)
{
    (void)ud;
    return fake_now;
}

Test(users, throttling_blocks_a_key_after_5_failures_in_60s)
{
    add("alice", "right", NULL);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    fake_now = 1000000;
    uas_user_store_set_clock(s, fake_clock, NULL);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(check(s, "10.0.0.66", "alice", "guess"), UAS_BAD_USER_ACCESS_DENIED);
        fake_now += 1000;
    }
    /* Blocked: even the right password is refused. */
    cr_assert_eq(check(s, "10.0.0.66", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    /* Other clients are not affected. */
    cr_assert_eq(check(s, "10.0.0.7", "alice", "right"), UAS_GOOD);
    /* The block started with the 5th failure, at 1004000. */
    fake_now = 1004000 + 59999;
    cr_assert_eq(check(s, "10.0.0.66", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    fake_now = 1004000 + 60000; /* the back-off of 60 s has passed */
    cr_assert_eq(check(s, "10.0.0.66", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, failures_spread_over_more_than_the_window_do_not_block)
{
    add("alice", "right", NULL);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    fake_now = 0;
    uas_user_store_set_clock(s, fake_clock, NULL);
    /* The window is fixed from the first failure: 4 failures per 64 s
     * never make 5 in one window. */
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(check(s, "k", "alice", "guess"), UAS_BAD_USER_ACCESS_DENIED);
        fake_now += 16000;
    }
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, success_resets_and_repeated_blocks_double_the_backoff)
{
    add("alice", "right", NULL);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    t.max_failures = 2;
    t.backoff_ms = 10000;
    t.max_backoff_ms = 30000;
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, &t, &s), UAS_GOOD);
    fake_now = 0;
    uas_user_store_set_clock(s, fake_clock, NULL);
    /* One failure, a success, one failure: no block (the success reset it). */
    check(s, "k", "alice", "x");
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_GOOD);
    check(s, "k", "alice", "x");
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_GOOD);
    /* Block 1: 10 s. */
    check(s, "k", "alice", "x");
    check(s, "k", "alice", "x");
    fake_now += 9999;
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    fake_now += 1;
    /* Block 2 right after: 20 s. */
    check(s, "k", "alice", "x");
    check(s, "k", "alice", "x");
    fake_now += 19999;
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    fake_now += 1;
    /* Block 3: 40 s capped to 30 s. */
    check(s, "k", "alice", "x");
    check(s, "k", "alice", "x");
    fake_now += 29999;
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    fake_now += 1;
    cr_assert_eq(check(s, "k", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, throttle_table_is_bounded)
{
    add("alice", "right", NULL);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    t.max_failures = 1;
    t.table_size = 2;
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, &t, &s), UAS_GOOD);
    fake_now = 0;
    uas_user_store_set_clock(s, fake_clock, NULL);
    check(s, "k1", "alice", "x"); /* k1 blocked */
    fake_now += 1;
    check(s, "k2", "alice", "x"); /* k2 blocked */
    fake_now += 1;
    cr_assert_eq(check(s, "k1", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    /* Table full of blocked keys: none is forgotten (cycling through
     * addresses must not flush the blocked ones); k3 counts server-wide
     * only. */
    check(s, "k3", "alice", "x");
    fake_now += 1;
    cr_assert_eq(check(s, "k2", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED, "k2 still blocked");
    cr_assert_eq(check(s, "k1", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED, "k1 still blocked");
    cr_assert_eq(check(s, "k3", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, eviction_takes_an_idle_key_before_a_counting_one)
{
    add("alice", "right", NULL);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    t.max_failures = 3;
    t.table_size = 2;
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, &t, &s), UAS_GOOD);
    uas_user_store_set_clock(s, fake_clock, NULL);
    fake_now = 0;
    check(s, "old", "alice", "x"); /* its window: 0 .. 60000 */
    fake_now = 20000;
    check(s, "attacker", "alice", "x"); /* its window: 20000 .. 80000 */
    fake_now = 59000;
    check(s, "old", "alice", "x"); /* seen after the attacker */
    fake_now = 70000;
    /* A new key: "old" (window over) goes, not the attacker, who was seen
     * less recently but still counts failures. */
    check(s, "k3", "alice", "x");
    check(s, "attacker", "alice", "x");
    check(s, "attacker", "alice", "x"); /* 3 in its window: blocked */
    cr_assert_eq(check(s, "attacker", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    uas_user_store_close(s);
}

Test(users, ipv6_addresses_of_one_64_share_a_key)
{
    add("alice", "right", NULL);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    fake_now = 0;
    uas_user_store_set_clock(s, fake_clock, NULL);
    char addr[64];
    for (int i = 0; i < 5; i++) {
        snprintf(addr, sizeof(addr), "2001:db8:1:2:%x::%x", i * 7 + 1, i + 1);
        cr_assert_eq(check(s, addr, "alice", "guess"), UAS_BAD_USER_ACCESS_DENIED);
    }
    /* A sixth address of the same /64 is blocked, with the right password. */
    cr_assert_eq(check(s, "2001:db8:1:2:ffff::9%eth0", "alice", "right"),
                 UAS_BAD_USER_ACCESS_DENIED);
    cr_assert_eq(uas_user_throttle_check(s, "2001:db8:1:2::1"), UAS_BAD_USER_ACCESS_DENIED);
    /* Another /64 and IPv4 (also IPv4-mapped) are not. */
    cr_assert_eq(check(s, "2001:db8:1:3::1", "alice", "right"), UAS_GOOD);
    cr_assert_eq(check(s, "::ffff:10.0.0.1", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, global_budget_refuses_everyone_then_recovers)
{
    add("alice", "right", NULL);
    uas_user_throttle t;
    uas_user_throttle_default(&t);
    t.global_max_failures = 10;
    t.backoff_ms = 30000;
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(file, &t, &s), UAS_GOOD);
    fake_now = 1000;
    uas_user_store_set_clock(s, fake_clock, NULL);
    char key[32];
    /* Ten keys, one failure each: no key reaches its own limit. */
    for (int i = 0; i < 9; i++) {
        snprintf(key, sizeof(key), "10.0.%d.1", i);
        uas_user_throttle_fail(s, key);
    }
    cr_assert_eq(uas_user_throttle_check(s, "10.9.9.9"), UAS_GOOD);
    cr_assert_eq(check(s, "10.0.99.1", "alice", "guess"), UAS_BAD_USER_ACCESS_DENIED);
    /* The tenth spent the budget: everybody waits, even with the right
     * password, and without any hashing. */
    cr_assert_eq(uas_user_throttle_check(s, "10.9.9.9"), UAS_BAD_TOO_MANY_OPERATIONS);
    cr_assert_eq(check(s, "192.168.1.1", "alice", "right"), UAS_BAD_USER_ACCESS_DENIED);
    fake_now += 29999;
    cr_assert_eq(uas_user_throttle_check(s, "10.9.9.9"), UAS_BAD_TOO_MANY_OPERATIONS);
    fake_now += 1;
    cr_assert_eq(check(s, "192.168.1.1", "alice", "right"), UAS_GOOD);
    uas_user_store_close(s);
}

Test(users, file_is_0600_whatever_the_umask)
{
    mode_t old = umask(0);
    add("alice", "pw1", NULL);
    add("bob", "pw2", NULL); /* rewrite */
    umask(old);
    struct stat sb;
    cr_assert_eq(stat(file, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
    cr_assert_eq(th_count_files(dir), 1, "no temporary file left");
}

Test(users, comments_and_unknown_lines_survive_a_rewrite)
{
    FILE *f = fopen(file, "w");
    fputs("# operators of line 3\n\nlegacy line without hash\n", f);
    fclose(f);
    add("alice", "pw", "op");
    char *text = slurp(file);
    cr_assert(strncmp(text, "# operators of line 3\n\nlegacy line without hash\nalice:$argon2id$",
                      64) == 0,
              "%s", text);
    uas_user_info *items;
    size_t n;
    cr_assert_eq(uas_user_list(file, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 1);
    uas_user_list_free(items, n);
}

Test(users, bad_names_and_roles_are_refused)
{
    static const char *const bad[] = {
        "",
        "a:b",
        "a b",
        "#x",
        "tab\there",
        "nl\n",
        "0123456789012345678901234567890123456789012345678901234567890"
        "123456789"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(uas_user_add(file, bad[i], "pw", 2, NULL, NULL), UAS_BAD_INVALID_ARGUMENT,
                     "name '%s'", bad[i]);
    cr_assert_eq(uas_user_add(file, "ok", "pw", 2, "a:b", NULL), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_user_add(file, "ok", "", 0, NULL, NULL), UAS_BAD_INVALID_ARGUMENT);
    cr_assert_eq(uas_user_add(file, "ok", "pw", 2, NULL, NULL), UAS_GOOD);
    cr_assert_eq(uas_user_add(file, "élodie", "pw", 2, NULL, NULL), UAS_GOOD, "UTF-8 is fine");
}

Test(users, missing_file)
{
    uas_user_store *s = (uas_user_store *)1;
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_BAD_NOT_FOUND);
    cr_assert_null(s);
    cr_assert_eq(uas_user_remove(file, "x"), UAS_BAD_NOT_FOUND);
    uas_user_info *items;
    size_t n = 7;
    cr_assert_eq(uas_user_list(file, &items, &n), UAS_GOOD);
    cr_assert_eq(n, 0);
    /* A file removed under a running store locks everybody out. */
    add("alice", "pw", NULL);
    cr_assert_eq(uas_user_store_open(file, NULL, &s), UAS_GOOD);
    cr_assert_eq(check(s, "k", "alice", "pw"), UAS_GOOD);
    cr_assert_eq(remove(file), 0);
    cr_assert_eq(check(s, "k", "alice", "pw"), UAS_BAD_USER_ACCESS_DENIED);
    uas_user_store_close(s);
}
