/* uapki: the PKI tool of uastack.
 *
 *   uapki [--store DIR] [--users FILE] COMMAND ...
 *
 * Exit codes: 0 ok, 1 the operation failed, 2 a usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ua/log.h>

#include "uapki.h"

static void usage(FILE *f)
{
    fputs("usage: uapki [--store DIR] [--users FILE] [--log-level LEVEL] COMMAND [ARGS]\n"
          "\n"
          "certificates (store DIR, default ./uastack-pki):\n"
          "  create --uri URI [--name NAME] [--org ORG] [--dns HOST]... [--ip ADDR]...\n"
          "         [--bits N] [--key-type TYPE] [--days N] [--force]\n"
          "                            TYPE: rsa2048 (default), rsa3072, rsa4096, nistP256,\n"
          "                            nistP384, brainpoolP256r1, brainpoolP384r1, curve25519,\n"
          "                            curve448\n"
          "                            make the application instance certificate and key\n"
          "                            (own/certs/NAME.der, own/private/NAME.pem, mode 0600)\n"
          "  list [own|trusted|issuers|rejected]\n"
          "                            certificates of one folder (default: all)\n"
          "  show FILE|THUMBPRINT      details of a certificate file or a stored certificate\n"
          "  validate FILE [--uri URI] [--usage client|server] [--min-bits N] [--max-bits N]\n"
          "           [--lenient]      validate a certificate against the store now\n"
          "  trust FILE|THUMBPRINT [--issuer]\n"
          "                            trust a certificate file, or promote a rejected one by\n"
          "                            its full 40-digit thumbprint (a prefix lists candidates)\n"
          "                            (--issuer: add to issuers/certs, a CA that is not trusted)\n"
          "  reject FILE               copy a certificate into rejected/certs\n"
          "  remove THUMBPRINT         delete a certificate from trusted, issuers and rejected\n"
          "  crl add FILE [--issuer]   add a CRL to trusted/crl (--issuer: issuers/crl)\n"
          "\n"
          "users (file FILE, default DIR/users):\n"
          "  user add NAME [--password-stdin] [--roles R1,R2]\n"
          "                            add a user or change its password (asked twice on a\n"
          "                            terminal, else one line of stdin)\n"
          "  user remove NAME\n"
          "  user list\n"
          "\n"
          "THUMBPRINT: the SHA-1 of the certificate in hex, or a unique prefix of 8+ digits.\n",
          f);
}

int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("uapki: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("uapki: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return EXIT_FAIL;
}

int fail_status(const char *what, uas_status st)
{
    return fail("%s: %s (%s)", what, uas_status_name(st), uas_status_description(st));
}

int only_options(const uapki *a, unsigned allowed, const char *command)
{
    if ((a->seen & ~allowed) != 0)
        return usage_error("an option given does not apply to '%s' (see uapki --help)", command);
    return 0;
}

uas_pki_store *open_store(const uapki *a, const uas_pki_options *opts)
{
    uas_pki_store *s = NULL;
    uas_status st = uas_pki_store_open(a->store_dir, opts, &s);
    if (st != UAS_GOOD) {
        fail("cannot open the store %s: %s", a->store_dir, uas_status_name(st));
        return NULL;
    }
    return s;
}

void format_time(uas_datetime t, char *buf, size_t cap)
{
    time_t secs = (time_t)((t - UAS_DATETIME_UNIX_EPOCH) / 10000000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm) || strftime(buf, cap, "%Y-%m-%d %H:%M", &tm) == 0)
        snprintf(buf, cap, "?");
}

/* Library messages as "uapki: ..." lines, without timestamps. */
static void log_sink(void *ud, uas_log_level level, const char *module, const char *msg)
{
    (void)ud;
    (void)module;
    if (level == UAS_LOG_WARN)
        fprintf(stderr, "uapki: warning: %s\n", msg);
    else
        fprintf(stderr, "uapki: %s\n", msg);
}

static bool parse_u32(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || *s == '-' || errno || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* "--name VALUE" or "--name=VALUE" when argv[*i] is that option: sets *v
 * (NULL when the value is missing) and returns true. */
static bool opt(int argc, char **argv, int *i, const char *name, const char **v)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0 || (argv[*i][n] != 0 && argv[*i][n] != '='))
        return false;
    if (argv[*i][n] == '=')
        *v = argv[*i] + n + 1;
    else
        *v = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

typedef struct command {
    const char *name;
    int (*fn)(uapki *a, int argc, char **argv);
} command;

static const command commands[] = {
    {"create", cmd_create},     {"list", cmd_list},   {"show", cmd_show},
    {"validate", cmd_validate}, {"trust", cmd_trust}, {"reject", cmd_reject},
    {"remove", cmd_remove},     {"crl", cmd_crl},     {"user", cmd_user},
};

static int parse(uapki *a, int argc, char **argv, char **pos, int *npos)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(s, "--") == 0) {
            while (++i < argc)
                pos[(*npos)++] = argv[i];
        } else if (opt(argc, argv, &i, "--store", &v)) {
            if (!v || !*v)
                return usage_error("--store needs a folder");
            a->store_dir = v;
        } else if (opt(argc, argv, &i, "--users", &v)) {
            if (!v || !*v)
                return usage_error("--users needs a file");
            a->users_file = v;
            a->users_given = true;
        } else if (opt(argc, argv, &i, "--log-level", &v)) {
            int level = v ? uas_log_level_parse(v) : -1;
            if (level < 0)
                return usage_error("--log-level is one of error, warn, info, debug");
            uas_log_set_level((uas_log_level)level);
        } else if (opt(argc, argv, &i, "--uri", &v)) {
            if (!v || !*v)
                return usage_error("--uri needs a URI");
            a->uri = v;
            a->seen |= OPT_URI;
        } else if (opt(argc, argv, &i, "--name", &v)) {
            if (!v || !*v)
                return usage_error("--name needs a name");
            a->name = v;
            a->seen |= OPT_NAME;
        } else if (opt(argc, argv, &i, "--org", &v)) {
            if (!v || !*v)
                return usage_error("--org needs a name");
            a->org = v;
            a->seen |= OPT_ORG;
        } else if (opt(argc, argv, &i, "--roles", &v)) {
            if (!v)
                return usage_error("--roles needs a comma-separated list");
            a->roles = v;
            a->seen |= OPT_ROLES;
        } else if (opt(argc, argv, &i, "--usage", &v)) {
            if (!v || (strcmp(v, "client") != 0 && strcmp(v, "server") != 0))
                return usage_error("--usage is client or server");
            a->usage = v;
            a->seen |= OPT_USAGE;
        } else if (opt(argc, argv, &i, "--dns", &v)) {
            if (!v || !*v || a->ndns == MAX_SAN)
                return usage_error("--dns needs a host name (at most %d)", MAX_SAN);
            a->dns[a->ndns++] = v;
            a->seen |= OPT_DNS;
        } else if (opt(argc, argv, &i, "--ip", &v)) {
            if (!v || !*v || a->nip == MAX_SAN)
                return usage_error("--ip needs an address (at most %d)", MAX_SAN);
            a->ip[a->nip++] = v;
            a->seen |= OPT_IP;
        } else if (opt(argc, argv, &i, "--bits", &v)) {
            if (!v || !parse_u32(v, &a->bits))
                return usage_error("--bits needs a number (2048..8192)");
            a->seen |= OPT_BITS;
        } else if (opt(argc, argv, &i, "--key-type", &v)) {
            if (!v || !uas_pki_key_type_valid(v))
                return usage_error("--key-type needs rsa2048, rsa3072, rsa4096, nistP256, "
                                   "nistP384, brainpoolP256r1, brainpoolP384r1, curve25519 or "
                                   "curve448");
            a->key_type = v;
            a->seen |= OPT_KEY_TYPE;
        } else if (opt(argc, argv, &i, "--days", &v)) {
            if (!v || !parse_u32(v, &a->days) || a->days == 0)
                return usage_error("--days needs a positive number");
            a->seen |= OPT_DAYS;
        } else if (opt(argc, argv, &i, "--min-bits", &v)) {
            if (!v || !parse_u32(v, &a->min_bits))
                return usage_error("--min-bits needs a number");
            a->seen |= OPT_MIN_BITS;
        } else if (opt(argc, argv, &i, "--max-bits", &v)) {
            if (!v || !parse_u32(v, &a->max_bits))
                return usage_error("--max-bits needs a number");
            a->seen |= OPT_MAX_BITS;
        } else if (strcmp(s, "--force") == 0) {
            a->force = true;
            a->seen |= OPT_FORCE;
        } else if (strcmp(s, "--issuer") == 0) {
            a->issuer = true;
            a->seen |= OPT_ISSUER;
        } else if (strcmp(s, "--password-stdin") == 0) {
            a->password_stdin = true;
            a->seen |= OPT_PASSWORD_STDIN;
        } else if (strcmp(s, "--lenient") == 0) {
            a->lenient = true;
            a->seen |= OPT_LENIENT;
        } else if (s[0] == '-' && s[1] != 0) {
            return usage_error("unknown option %s (see uapki --help)", s);
        } else {
            pos[(*npos)++] = s;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    uapki a;
    memset(&a, 0, sizeof(a));
    a.store_dir = "uastack-pki";
    uas_log_set_level(UAS_LOG_WARN);
    uas_log_set_sink(log_sink, NULL);
    char **pos = calloc((size_t)argc + 1, sizeof(char *));
    if (!pos)
        return EXIT_FAIL;
    int npos = 0;
    int rc = parse(&a, argc, argv, pos, &npos);
    if (rc != 0) {
        free(pos);
        return rc < 0 ? EXIT_OK : rc;
    }
    if (!a.users_file) {
        snprintf(a.users_buf, sizeof(a.users_buf), "%s/users", a.store_dir);
        a.users_file = a.users_buf;
    }
    if (npos == 0) {
        usage(stderr);
        free(pos);
        return EXIT_USAGE;
    }
    rc = -1;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(pos[0], commands[i].name) == 0)
            rc = commands[i].fn(&a, npos - 1, pos + 1);
    if (rc < 0)
        rc = usage_error("unknown command '%s' (see uapki --help)", pos[0]);
    free(pos);
    return rc;
}
