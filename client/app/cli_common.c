/* uacli plumbing: connecting, synchronous calls, error lines, names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ua/mem.h>
#ifdef UAS_ENABLE_ENCRYPTION
#include <ua/pki.h>
#endif

#include "cli.h"

int cli_fail(const char *what, uas_status st)
{
    const char *desc = uas_status_description(st);
    if (desc[0])
        fprintf(stderr, "uacli: %s failed: %s (%s)\n", what, uas_status_name(st), desc);
    else
        fprintf(stderr, "uacli: %s failed: %s (0x%08X)\n", what, uas_status_name(st), (unsigned)st);
    return EXIT_UA;
}

void cli_json_key(const char *key, bool first)
{
    if (!first)
        putchar(',');
    uas_json_string(stdout, (const uint8_t *)key, strlen(key));
    putchar(':');
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("uacli: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
}

#define POLICY_PREFIX "http://opcfoundation.org/UA/SecurityPolicy#"

int cli_parse_security(cli *c, const char *text)
{
    static char uri[512];
    const char *colon = strrchr(text, ':');
    const char *mode = colon ? colon + 1 : "";
    /* "http://...#Policy" alone: its last ':' is the scheme's. */
    if (colon && strchr(mode, '/')) {
        colon = NULL;
        mode = "";
    }
    size_t plen = colon ? (size_t)(colon - text) : strlen(text);
    if (plen == 0 || plen >= 256)
        return cli_usage_error("--security needs POLICY:MODE, e.g. Basic256Sha256:SignAndEncrypt");
    if (strncmp(text, "http", 4) == 0)
        snprintf(uri, sizeof(uri), "%.*s", (int)plen, text);
    else
        snprintf(uri, sizeof(uri), POLICY_PREFIX "%.*s", (int)plen, text);
    bool none = strcmp(uri, POLICY_PREFIX "None") == 0;
    if (!mode[0])
        c->mode =
            none ? UAS_MESSAGE_SECURITY_MODE_NONE : UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    else if (strcasecmp(mode, "SignAndEncrypt") == 0)
        c->mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    else if (strcasecmp(mode, "Sign") == 0)
        c->mode = UAS_MESSAGE_SECURITY_MODE_SIGN;
    else if (strcasecmp(mode, "None") == 0)
        c->mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    else
        return cli_usage_error("security mode '%s' is not Sign, SignAndEncrypt or None", mode);
    if (!uas_security_policy(uri, false))
        return cli_usage_error("unknown security policy '%s' (Basic256Sha256, "
                               "Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss or None)",
                               uri);
    if (none != (c->mode == UAS_MESSAGE_SECURITY_MODE_NONE))
        return cli_usage_error("policy None goes with mode None only");
    c->policy_uri = none ? NULL : uri;
    return EXIT_OK;
}

int cli_read_password(cli *c, bool password_stdin)
{
    char buf[1024];
    size_t n = 0;
    if (password_stdin) {
        if (!fgets(buf, sizeof(buf), stdin))
            return cli_usage_error("--password-stdin: no password on standard input");
        n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            n--;
    } else {
        const char *env = getenv("UASTACK_PASSWORD");
        if (!env)
            return cli_usage_error("--user needs a password: --password-stdin or UASTACK_PASSWORD");
        n = strlen(env);
        if (n >= sizeof(buf))
            return cli_usage_error("UASTACK_PASSWORD is too long");
        memcpy(buf, env, n);
    }
    c->password = malloc(n + 1);
    if (!c->password)
        return cli_fail("start", UAS_BAD_OUT_OF_MEMORY);
    memcpy(c->password, buf, n);
    c->password[n] = 0;
    c->password_len = n;
    uas_wipe(buf, sizeof(buf));
    return EXIT_OK;
}

static const char *default_pki_dir(void)
{
    static char dir[1024];
    const char *home = getenv("HOME");
    if (!home || !home[0])
        return NULL;
    snprintf(dir, sizeof(dir), "%s/.config/uastack/uacli-pki", home);
    return dir;
}

static int connect_failed(cli *c, uas_status st)
{
    char what[600];
    snprintf(what, sizeof(what), "connect to %s", c->url);
    /* The table texts of these codes speak of other things (variables,
     * query strings, searches): say what happened to the connection. */
    const char *why = NULL;
    switch (st) {
    case UAS_BAD_NOT_CONNECTED:
        why = "the server cannot be reached";
        break;
    case UAS_BAD_TCP_ENDPOINT_URL_INVALID:
        why = "not an endpoint URL: opc.tcp://HOST[:PORT][/PATH], PORT 1 to 65535";
        break;
    case UAS_BAD_NOT_FOUND:
        why = "unknown host name";
        break;
    case UAS_BAD_CONNECTION_REJECTED:
        why = "connection refused: nothing listens on that port";
        break;
    case UAS_BAD_TIMEOUT:
        why = "no answer in time";
        break;
    default:
        break;
    }
    if (why) {
        fprintf(stderr, "uacli: %s failed: %s (%s)\n", what, uas_status_name(st), why);
        return EXIT_UA;
    }
    cli_fail(what, st);
    bool cert_refused = st == UAS_BAD_CERTIFICATE_UNTRUSTED || st == UAS_BAD_SECURITY_CHECKS_FAILED;
    if (cert_refused && c->pki_dir && c->client && uas_client_reason_from_server(c->client))
        /* The server refused us: the fix is in the server's store. */
        fprintf(stderr,
                "uacli: the server refused this client's certificate (%s/own/certs; "
                "`uapki --store %s list own` shows its thumbprint). On the server, trust it "
                "from its rejected folder: `uapki --store SERVER_STORE trust THUMBPRINT` "
                "(uaserver's default store is ./uastack-pki)\n",
                c->pki_dir, c->pki_dir);
    else if (st == UAS_BAD_CERTIFICATE_UNTRUSTED && c->pki_dir)
        fprintf(stderr,
                "uacli: the server's certificate is in %s/rejected/certs; trust it with "
                "`uapki --store %s trust THUMBPRINT` (or --accept-server-cert in a lab)\n",
                c->pki_dir, c->pki_dir);
    return EXIT_UA;
}

/* A whole small file (a user certificate or key) into malloc'd memory. */
static int read_small_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cli_usage_error("cannot open %s", path);
    uint8_t *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65536, f) : 0;
    bool too_big = buf && n == 65536 && fgetc(f) != EOF;
    fclose(f);
    if (!buf || n == 0 || too_big) {
        if (buf) {
            uas_wipe(buf, 65536);
            free(buf);
        }
        return cli_usage_error("%s: empty, unreadable or over 64 KiB", path);
    }
    *out = buf;
    *len = n;
    return 0;
}

int cli_open(cli *c, bool session)
{
    c->loop = uas_loop_new(8u << 20);
    if (!c->loop)
        return cli_fail("start", UAS_BAD_OUT_OF_MEMORY);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = c->url;
    cfg.create_session = session;
    cfg.session_name = "uacli";
    cfg.request_timeout_ms = c->timeout_ms;
    cfg.max_inflight = 4;
    if (c->user) {
        cfg.user.kind = UAS_CLIENT_USER_NAME;
        cfg.user.name = c->user;
        cfg.user.password = c->password;
        cfg.user.password_len = c->password_len;
    }
    if (c->user_cert_path) {
#ifdef UAS_ENABLE_ENCRYPTION
        uas_status cst = uas_pki_read_cert_file(c->user_cert_path, &c->user_cert);
        if (cst != UAS_GOOD)
            return cli_usage_error("--user-cert %s: not a certificate (%s)", c->user_cert_path,
                                   uas_status_name(cst));
#else
        return cli_usage_error("--user-cert: this build has no encryption");
#endif
        int rc = read_small_file(c->user_key_path, &c->user_key, &c->user_key_len);
        if (rc != 0)
            return rc;
        cfg.user.kind = UAS_CLIENT_USER_X509;
        cfg.user.cert = c->user_cert.data;
        cfg.user.cert_len = c->user_cert.length;
        cfg.user.key = c->user_key;
        cfg.user.key_len = c->user_key_len;
    }
    uas_bytestring server_cert = {0, NULL};
    if (c->policy_uri) {
        if (!c->pki_dir)
            c->pki_dir = default_pki_dir();
        if (!c->pki_dir)
            return cli_usage_error("--security needs --pki DIR (HOME is not set)");
        if (c->accept_server_cert)
            fprintf(stderr, "uacli: warning: --accept-server-cert: the server's certificate is "
                            "not validated (lab use only)\n");
        uint8_t level = 0;
        uas_status st = uas_client_select_endpoint(c->loop, c->url, c->policy_uri, c->mode,
                                                   c->timeout_ms, &server_cert, &level);
        if (st == UAS_BAD_SECURITY_POLICY_REJECTED) {
            fprintf(stderr,
                    "uacli: %s offers no endpoint with %s and that mode (see uacli "
                    "endpoints)\n",
                    c->url, c->policy_uri);
            return EXIT_UA;
        }
        if (st != UAS_GOOD)
            return connect_failed(c, st);
        cfg.security.policy_uri = c->policy_uri;
        cfg.security.mode = c->mode;
        cfg.security.pki_dir = c->pki_dir;
        cfg.security.server_cert = server_cert.data;
        cfg.security.server_cert_len = server_cert.length;
        cfg.security.accept_any_server_cert = c->accept_server_cert;
    }
    c->client = uas_client_new(c->loop, &cfg, NULL, NULL);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    if (!c->client)
        return cli_fail("start",
                        c->policy_uri ? UAS_BAD_CONFIGURATION_ERROR : UAS_BAD_OUT_OF_MEMORY);
    uas_status st = uas_client_connect(c->client);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c->client,
                                   session ? UAS_CLIENT_SESSION_ACTIVE : UAS_CLIENT_CHANNEL_OPEN,
                                   c->timeout_ms);
    if (st != UAS_GOOD)
        return connect_failed(c, st);
    return EXIT_OK;
}

void cli_close(cli *c)
{
    if (c->client) {
        uas_client_disconnect(c->client);
        (void)uas_client_wait_state(c->client, UAS_CLIENT_CLOSED, c->timeout_ms);
        uas_client_delete(c->client);
        c->client = NULL;
    }
    if (c->loop) {
        /* Let a connection still flushing its CLO finish. */
        for (int i = 0; i < 4; i++)
            uas_loop_run_once(c->loop, false);
        uas_loop_delete(c->loop);
        c->loop = NULL;
    }
    uas_arena_free(&c->arena);
    if (c->user_key) {
        uas_wipe(c->user_key, 65536);
        free(c->user_key);
        c->user_key = NULL;
    }
#ifdef UAS_ENABLE_ENCRYPTION
    uas_pki_bytes_free(&c->user_cert);
#endif
    if (c->password) {
        uas_wipe(c->password, c->password_len);
        free(c->password);
        c->password = NULL;
    }
}

uas_status cli_call(cli *c, const char *what, void *req, const uas_type *req_type, void *resp,
                    const uas_type *resp_type)
{
    uas_status st = uas_client_call_sync(c->client, req, req_type, resp, resp_type, &c->arena,
                                         c->timeout_ms + 1000);
    /* A lost connection says more through its reason. */
    if (st == UAS_BAD_CONNECTION_CLOSED && uas_is_bad(uas_client_get_reason(c->client)))
        st = uas_client_get_reason(c->client);
    if (st != UAS_GOOD)
        cli_fail(what, st);
    return st;
}

int cli_parse_nodeid(cli *c, const char *text, uas_nodeid *out)
{
    uas_status st = uas_nodeid_parse(text, out, &c->arena);
    if (st == UAS_GOOD)
        return EXIT_OK;
    if (st == UAS_BAD_OUT_OF_MEMORY)
        return cli_fail("parse", st);
    return cli_usage_error("invalid node id '%s' (expected e.g. i=85, ns=1;i=1001, ns=1;s=Demo, "
                           "g=GUID, b=BASE64)",
                           text);
}

void cli_nodeid_text(const uas_nodeid *id, char *buf, size_t size)
{
    uas_nodeid_format(id, buf, size);
}

const char *cli_node_class_name(int32_t nc)
{
    switch (nc) {
    case UAS_NODE_CLASS_OBJECT:
        return "Object";
    case UAS_NODE_CLASS_VARIABLE:
        return "Variable";
    case UAS_NODE_CLASS_METHOD:
        return "Method";
    case UAS_NODE_CLASS_OBJECT_TYPE:
        return "ObjectType";
    case UAS_NODE_CLASS_VARIABLE_TYPE:
        return "VariableType";
    case UAS_NODE_CLASS_REFERENCE_TYPE:
        return "ReferenceType";
    case UAS_NODE_CLASS_DATA_TYPE:
        return "DataType";
    case UAS_NODE_CLASS_VIEW:
        return "View";
    default:
        return "Unspecified";
    }
}

/* Part 3, 5.9 / Part 6, A.1: attribute ids 1..27. */
static const char *const attributes[] = {
    NULL,
    "NodeId",
    "NodeClass",
    "BrowseName",
    "DisplayName",
    "Description",
    "WriteMask",
    "UserWriteMask",
    "IsAbstract",
    "Symmetric",
    "InverseName",
    "ContainsNoLoops",
    "EventNotifier",
    "Value",
    "DataType",
    "ValueRank",
    "ArrayDimensions",
    "AccessLevel",
    "UserAccessLevel",
    "MinimumSamplingInterval",
    "Historizing",
    "Executable",
    "UserExecutable",
    "DataTypeDefinition",
    "RolePermissions",
    "UserRolePermissions",
    "AccessRestrictions",
    "AccessLevelEx",
};

enum { ATTRIBUTE_COUNT = sizeof(attributes) / sizeof(attributes[0]) };

const char *cli_attribute_name(uint32_t id)
{
    return id > 0 && id < ATTRIBUTE_COUNT ? attributes[id] : "Unknown";
}

uint32_t cli_attribute_parse(const char *text)
{
    for (uint32_t i = 1; i < ATTRIBUTE_COUNT; i++)
        if (strcasecmp(text, attributes[i]) == 0)
            return i;
    char *end;
    unsigned long v = strtoul(text, &end, 10);
    if (*text && !*end && v > 0 && v < ATTRIBUTE_COUNT)
        return (uint32_t)v;
    return 0;
}
