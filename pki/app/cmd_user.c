/* uapki user add|remove|list. Passwords are read without echo from a
 * terminal (asked twice), or as one line of stdin, and zeroed after use. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "uapki.h"

#define PW_MAX 4096

static struct termios saved_tty;
static volatile sig_atomic_t tty_changed;

static void restore_tty(int sig)
{
    if (tty_changed)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* One line into buf without its newline; false on EOF/error or overflow. */
static bool read_line(FILE *f, char *buf, size_t cap, size_t *len)
{
    if (!fgets(buf, (int)cap, f))
        return false;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    else if (n == cap - 1) /* longer than the buffer */
        return false;
    if (n > 0 && buf[n - 1] == '\r')
        buf[--n] = 0;
    *len = n;
    return true;
}

static bool prompt(const char *text, char *buf, size_t cap, size_t *len)
{
    fputs(text, stderr);
    fflush(stderr);
    struct termios t;
    bool tty = tcgetattr(STDIN_FILENO, &saved_tty) == 0;
    if (tty) {
        t = saved_tty;
        t.c_lflag &= ~(tcflag_t)ECHO;
        t.c_lflag |= ECHONL;
        signal(SIGINT, restore_tty);
        signal(SIGTERM, restore_tty);
        tty_changed = 1;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
    }
    bool ok = read_line(stdin, buf, cap, len);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        tty_changed = 0;
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
    }
    return ok;
}

static int read_password(const uapki *a, const char *name, char *pw, size_t *len)
{
    if (a->password_stdin || !isatty(STDIN_FILENO)) {
        if (!read_line(stdin, pw, PW_MAX + 2, len) || *len == 0)
            return fail("no password on stdin (one line, at most %d bytes)", PW_MAX);
        return EXIT_OK;
    }
    char again[PW_MAX + 2];
    size_t len2 = 0;
    char text[128];
    snprintf(text, sizeof(text), "Password for %s: ", name);
    int rc = EXIT_OK;
    if (!prompt(text, pw, PW_MAX + 2, len) || *len == 0)
        rc = fail("no password given (at most %d bytes)", PW_MAX);
    else if (!prompt("Again: ", again, sizeof(again), &len2) || len2 != *len ||
             sodium_memcmp(pw, again, *len) != 0)
        rc = fail("the passwords differ");
    sodium_memzero(again, sizeof(again));
    return rc;
}

static int user_add(uapki *a, const char *name)
{
    char pw[PW_MAX + 2];
    size_t len = 0;
    int rc = read_password(a, name, pw, &len);
    if (rc == EXIT_OK) {
        bool added = false;
        uas_status st = uas_user_add(a->users_file, name, pw, len, a->roles, &added);
        if (st == UAS_BAD_INVALID_ARGUMENT)
            rc = fail("bad user name or roles: 1..64 bytes without ':', spaces or control "
                      "characters, not starting with '#'");
        else if (st != UAS_GOOD)
            rc = fail_status(a->users_file, st);
        else
            printf("%s %s in %s\n", added ? "added" : "updated", name, a->users_file);
    }
    sodium_memzero(pw, sizeof(pw));
    return rc;
}

static int user_list(uapki *a)
{
    uas_user_info *items;
    size_t count;
    uas_status st = uas_user_list(a->users_file, &items, &count);
    if (st != UAS_GOOD)
        return fail_status(a->users_file, st);
    printf("## users in %s (%zu)\n\n", a->users_file, count);
    if (count == 0) {
        printf("(none)\n");
        return EXIT_OK;
    }
    printf("| name | roles |\n|---|---|\n");
    for (size_t i = 0; i < count; i++)
        printf("| %s | %s |\n", items[i].name, items[i].roles);
    uas_user_list_free(items, count);
    return EXIT_OK;
}

int cmd_user(uapki *a, int argc, char **argv)
{
    if (argc < 1)
        return usage_error("usage: uapki user add|remove|list ...");
    if (strcmp(argv[0], "add") == 0) {
        int rc = only_options(a, OPT_PASSWORD_STDIN | OPT_ROLES, "user add");
        if (rc)
            return rc;
        if (argc != 2)
            return usage_error("usage: uapki user add NAME [--password-stdin] [--roles R]");
        if (!a->users_given) { /* DIR/users: make sure DIR exists */
            uas_pki_store *s = open_store(a, NULL);
            if (!s)
                return EXIT_FAIL;
            uas_pki_store_close(s);
        }
        if (sodium_init() < 0)
            return fail("libsodium cannot start");
        return user_add(a, argv[1]);
    }
    int rc = only_options(a, 0, argv[0]);
    if (rc)
        return rc;
    if (strcmp(argv[0], "remove") == 0) {
        if (argc != 2)
            return usage_error("usage: uapki user remove NAME");
        uas_status st = uas_user_remove(a->users_file, argv[1]);
        if (st == UAS_BAD_NOT_FOUND)
            return fail("no user %s in %s", argv[1], a->users_file);
        if (st != UAS_GOOD)
            return fail_status(a->users_file, st);
        printf("removed %s from %s\n", argv[1], a->users_file);
        return EXIT_OK;
    }
    if (strcmp(argv[0], "list") == 0) {
        if (argc != 1)
            return usage_error("usage: uapki user list");
        return user_list(a);
    }
    return usage_error("unknown user command '%s' (add, remove, list)", argv[0]);
}
