/* uapki: shared pieces of the PKI tool. Each command returns the exit code:
 * 0 ok, 1 the operation failed, 2 a usage error. */
#ifndef UAPKI_H
#define UAPKI_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/pki.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

#define MAX_SAN 32

/* Options, each remembered in seen (OPT_* bits) so that a command can
 * refuse the ones that do not apply to it. */
enum {
    OPT_URI = 1u << 0,
    OPT_NAME = 1u << 1,
    OPT_ORG = 1u << 2,
    OPT_DNS = 1u << 3,
    OPT_IP = 1u << 4,
    OPT_BITS = 1u << 5,
    OPT_DAYS = 1u << 6,
    OPT_FORCE = 1u << 7,
    OPT_ISSUER = 1u << 8,
    OPT_PASSWORD_STDIN = 1u << 9,
    OPT_ROLES = 1u << 10,
    OPT_USAGE = 1u << 11,
    OPT_MIN_BITS = 1u << 12,
    OPT_MAX_BITS = 1u << 13,
    OPT_LENIENT = 1u << 14,
    OPT_KEY_TYPE = 1u << 15,
};

typedef struct uapki {
    const char *store_dir;
    const char *users_file; /* NULL: <store>/users */
    bool users_given;       /* --users was given */
    const char *uri, *name, *org, *roles, *usage;
    const char *dns[MAX_SAN];
    int ndns;
    const char *ip[MAX_SAN];
    int nip;
    uint32_t bits, days, min_bits, max_bits;
    const char *key_type; /* create --key-type */
    bool force, issuer, password_stdin, lenient;
    unsigned seen;
    char users_buf[4096];
} uapki;

/* "uapki: msg" on stderr; returns EXIT_USAGE / EXIT_FAIL. */
int usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* "uapki: <what>: <StatusName> (<description>)"; returns EXIT_FAIL. */
int fail_status(const char *what, uas_status st);
/* Refuses options outside allowed. 0 or EXIT_USAGE. */
int only_options(const uapki *a, unsigned allowed, const char *command);
/* Opens the store (creating its layout). NULL after printing the error. */
uas_pki_store *open_store(const uapki *a, const uas_pki_options *opts);
/* "2025-01-31 12:00" UTC. */
void format_time(uas_datetime t, char *buf, size_t cap);

int cmd_create(uapki *a, int argc, char **argv);
int cmd_list(uapki *a, int argc, char **argv);
int cmd_show(uapki *a, int argc, char **argv);
int cmd_validate(uapki *a, int argc, char **argv);
int cmd_trust(uapki *a, int argc, char **argv);
int cmd_reject(uapki *a, int argc, char **argv);
int cmd_remove(uapki *a, int argc, char **argv);
int cmd_crl(uapki *a, int argc, char **argv);
int cmd_user(uapki *a, int argc, char **argv);

#endif
