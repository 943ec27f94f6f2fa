/* uacli: a command-line OPC UA client.
 *
 *   uacli [options] endpoints URL
 *   uacli [options] discover URL
 *   uacli [options] browse URL [NODEID]
 *   uacli [options] read URL NODEID [ATTRIBUTE]
 *   uacli [options] write URL NODEID TYPE VALUE
 *   uacli [options] call URL OBJECTID METHODID [TYPE:VALUE ...]
 *   uacli [options] translate URL /Objects/Server/ServerStatus
 *   uacli [options] subscribe URL NODEID...
 *
 * Exit codes: 0 ok, 1 an OPC UA error, 2 a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>

#include "cli.h"

static void usage(FILE *f)
{
    fputs("usage: uacli [OPTIONS] COMMAND URL [ARGS]\n"
          "\n"
          "commands:\n"
          "  endpoints URL                              list the server's endpoints\n"
          "  discover URL                               FindServers, then the endpoints\n"
          "                                             with their certificates\n"
          "  browse URL [NODEID]                        hierarchical references (default i=85)\n"
          "  read URL NODEID [ATTRIBUTE]                one attribute (default Value)\n"
          "  write URL NODEID TYPE VALUE                write the Value attribute\n"
          "  call URL OBJECTID METHODID [TYPE:VALUE...] call a method\n"
          "  translate URL PATH                         browse path to node id, e.g.\n"
          "                                             /Objects/Server/ServerStatus\n"
          "  subscribe URL NODEID...                    a line per value change (with\n"
          "                                             --events: per event of notifiers,\n"
          "                                             e.g. i=2253) until Ctrl-C\n"
          "\n"
          "NODEID: i=85, ns=1;i=1001, ns=1;s=Demo, g=GUID, b=BASE64\n"
          "TYPE:   boolean sbyte byte int16 uint16 int32 uint32 int64 uint64 float double "
          "string\n"
          "options:\n"
          "  --timeout MS       per request and for connecting (default 5000)\n"
          "  --output json|text results as one JSON document (subscribe: one per line)\n"
          "                     for scripts; errors stay text on stderr (default text)\n"
          "  --log-level LEVEL  error, warn (default), info, debug\n"
          "  --max-refs N       browse: references per answer asked of the server\n"
          "  --security POLICY:MODE\n"
          "                     secure the connection, e.g. Basic256Sha256:SignAndEncrypt,\n"
          "                     Aes128_Sha256_RsaOaep:Sign, Aes256_Sha256_RsaPss:SignAndEncrypt\n"
          "                     ECC_nistP256_AesGcm:SignAndEncrypt, ECC_curve25519:Sign\n"
          "                     (the server's certificate comes from its endpoint)\n"
          "  --pki DIR          client PKI store: own certificate (made on first use) and\n"
          "                     trusted server certificates (default\n"
          "                     ~/.config/uastack/uacli-pki)\n"
          "  --accept-server-cert\n"
          "                     LAB ONLY: accept any server certificate\n"
          "  --user NAME        UserName identity; the password is read from\n"
          "  --password-stdin   one line of standard input, or else from the\n"
          "                     UASTACK_PASSWORD environment variable\n"
          "  --user-cert FILE   X.509 user identity: the user's certificate (DER or PEM;\n"
          "  --user-key FILE    RSA, or the ECC curve of an ECC endpoint) and its key\n"
          "browse options:\n"
          "  --recursive, -r    follow the hierarchy below the node (each node once)\n"
          "  --depth N          levels to follow (default 3; implies --recursive)\n"
          "subscribe options:\n"
          "  --interval MS      publishing and sampling interval (default 1000)\n"
          "  --events           monitor events of the nodes (EventNotifier)\n"
          "  --count N          stop after N changes or events\n"
          "  --duration S       stop after S seconds\n",
          f);
}

typedef struct command {
    const char *name;
    int (*fn)(cli *c, int argc, char **argv);
    int min_args, max_args; /* after the URL; -1: unlimited */
} command;

static const command commands[] = {
    {"endpoints", cmd_endpoints, 0, 0}, {"discover", cmd_discover, 0, 0},
    {"browse", cmd_browse, 0, 1},       {"read", cmd_read, 1, 2},
    {"write", cmd_write, 3, 3},         {"call", cmd_call, 2, -1},
    {"translate", cmd_translate, 1, 1}, {"subscribe", cmd_subscribe, 1, -1},
};

static bool parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || *s == '-' || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* "--name VALUE" or "--name=VALUE": the value, or NULL (usage error). */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof(c));
    c.timeout_ms = 5000;
    uas_arena_init(&c.arena, NULL, 0, 0);
    uas_log_set_level(UAS_LOG_WARN);
    char **pos = calloc((size_t)argc + 1, sizeof(char *));
    if (!pos)
        return EXIT_UA;
    int npos = 0;
    int rc = EXIT_OK;
    bool password_stdin = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            goto out;
        } else if (strcmp(a, "--") == 0) {
            while (++i < argc)
                pos[npos++] = argv[i];
        } else if (strncmp(a, "--timeout", 9) == 0) {
            v = option_value(argc, argv, &i, "--timeout");
            if (!v || !parse_u32(v, &c.timeout_ms) || c.timeout_ms == 0) {
                rc = cli_usage_error("--timeout needs a positive number of milliseconds");
                goto out;
            }
        } else if (strncmp(a, "--max-refs", 10) == 0) {
            v = option_value(argc, argv, &i, "--max-refs");
            if (!v || !parse_u32(v, &c.max_refs)) {
                rc = cli_usage_error("--max-refs needs a number");
                goto out;
            }
        } else if (strncmp(a, "--security", 10) == 0) {
            v = option_value(argc, argv, &i, "--security");
            if (!v) {
                rc = cli_usage_error("--security needs POLICY:MODE");
                goto out;
            }
            if ((rc = cli_parse_security(&c, v)) != 0)
                goto out;
        } else if (strncmp(a, "--pki", 5) == 0) {
            v = option_value(argc, argv, &i, "--pki");
            if (!v || !v[0]) {
                rc = cli_usage_error("--pki needs a directory");
                goto out;
            }
            c.pki_dir = v;
        } else if (strncmp(a, "--interval", 10) == 0 || strncmp(a, "--count", 7) == 0 ||
                   strncmp(a, "--duration", 10) == 0) {
            const char *name = a[2] == 'i' ? "--interval" : a[2] == 'c' ? "--count" : "--duration";
            uint32_t *field = a[2] == 'i' ? &c.interval_ms : a[2] == 'c' ? &c.count : &c.duration_s;
            v = option_value(argc, argv, &i, name);
            if (!v || !parse_u32(v, field) || *field == 0) {
                rc = cli_usage_error("%s needs a positive number", name);
                goto out;
            }
        } else if (strncmp(a, "--output", 8) == 0) {
            v = option_value(argc, argv, &i, "--output");
            if (!v || (strcmp(v, "json") && strcmp(v, "text"))) {
                rc = cli_usage_error("--output is json or text");
                goto out;
            }
            c.json = !strcmp(v, "json");
        } else if (strcmp(a, "--recursive") == 0 || strcmp(a, "-r") == 0) {
            c.recursive = true;
        } else if (strncmp(a, "--depth", 7) == 0) {
            v = option_value(argc, argv, &i, "--depth");
            if (!v || !parse_u32(v, &c.depth) || c.depth == 0 || c.depth > 64) {
                rc = cli_usage_error("--depth needs a number of levels from 1 to 64");
                goto out;
            }
            c.recursive = true;
        } else if (strcmp(a, "--events") == 0) {
            c.events = true;
        } else if (strcmp(a, "--accept-server-cert") == 0) {
            c.accept_server_cert = true;
        } else if (strcmp(a, "--password-stdin") == 0) {
            password_stdin = true;
        } else if (strncmp(a, "--user-cert", 11) == 0) {
            v = option_value(argc, argv, &i, "--user-cert");
            if (!v || !v[0]) {
                rc = cli_usage_error("--user-cert needs a file");
                goto out;
            }
            c.user_cert_path = v;
        } else if (strncmp(a, "--user-key", 10) == 0) {
            v = option_value(argc, argv, &i, "--user-key");
            if (!v || !v[0]) {
                rc = cli_usage_error("--user-key needs a file");
                goto out;
            }
            c.user_key_path = v;
        } else if (strncmp(a, "--user", 6) == 0) {
            v = option_value(argc, argv, &i, "--user");
            if (!v || !v[0]) {
                rc = cli_usage_error("--user needs a name");
                goto out;
            }
            c.user = v;
        } else if (strncmp(a, "--log-level", 11) == 0) {
            v = option_value(argc, argv, &i, "--log-level");
            int level = v ? uas_log_level_parse(v) : -1;
            if (level < 0) {
                rc = cli_usage_error("--log-level is one of error, warn, info, debug");
                goto out;
            }
            uas_log_set_level((uas_log_level)level);
        } else if (a[0] == '-' && a[1] == '-') {
            rc = cli_usage_error("unknown option %s (see uacli --help)", a);
            goto out;
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos < 2) {
        usage(stderr);
        rc = EXIT_USAGE;
        goto out;
    }
    const command *cmd = NULL;
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (strcmp(pos[0], commands[k].name) == 0)
            cmd = &commands[k];
    if (!cmd) {
        rc = cli_usage_error("unknown command '%s' (see uacli --help)", pos[0]);
        goto out;
    }
    int nargs = npos - 2;
    if (nargs < cmd->min_args || (cmd->max_args >= 0 && nargs > cmd->max_args)) {
        rc = cli_usage_error("wrong number of arguments for %s (see uacli --help)", cmd->name);
        goto out;
    }
    if (!c.user_cert_path != !c.user_key_path) {
        rc = cli_usage_error("--user-cert and --user-key go together");
        goto out;
    }
    if (c.user_cert_path && c.user) {
        rc = cli_usage_error("--user and --user-cert are two identities: give one");
        goto out;
    }
    if (password_stdin && !c.user) {
        rc = cli_usage_error("--password-stdin goes with --user");
        goto out;
    }
    if (c.user && (rc = cli_read_password(&c, password_stdin)) != 0)
        goto out;
    c.url = pos[1];
    rc = cmd->fn(&c, nargs, pos + 2);
    cli_close(&c);
out:
    free(pos);
    return rc;
}
