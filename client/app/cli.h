/* uacli: shared pieces of the command-line client. Each command connects,
 * runs its services synchronously through uas_client_call_sync, prints,
 * and returns the exit code: 0 ok, 1 an OPC UA error, 2 a usage error. */
#ifndef UACLI_H
#define UACLI_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/client.h>
#include <ua/client_text.h>

enum { EXIT_OK = 0, EXIT_UA = 1, EXIT_USAGE = 2 };

typedef struct cli {
    const char *url;
    uint32_t timeout_ms;
    uint32_t max_refs; /* browse: requestedMaxReferencesPerNode (0: server's) */
    /* Security (--security POLICY:MODE, --pki, --accept-server-cert). */
    const char *policy_uri; /* NULL: None */
    int32_t mode;
    const char *pki_dir;
    bool accept_server_cert;
    /* User identity (--user, password from --password-stdin or UASTACK_PASSWORD). */
    const char *user;
    char *password; /* malloc'd, zeroed and freed by cli_close */
    size_t password_len;
    /* X.509 user identity (--user-cert/--user-key): the certificate (DER
     * or PEM) and its private key, read by cli_open; the key is zeroed and
     * freed by cli_close. */
    const char *user_cert_path, *user_key_path;
    uas_bytestring user_cert; /* DER */
    uint8_t *user_key;
    size_t user_key_len;
    /* subscribe: --interval MS, --count N, --duration S, --events. */
    uint32_t interval_ms, count, duration_s;
    bool events;
    bool json; /* --output json: one JSON document (subscribe: one per line) */
    /* browse: --recursive, --depth N (levels, default 3 when recursive). */
    bool recursive;
    uint32_t depth;
    uas_loop *loop;
    uas_client *client;
    uas_arena arena; /* responses and parsed arguments; freed by cli_close */
} cli;

/* Connects (with a session when session is true). 0 or EXIT_UA (printed). */
int cli_open(cli *c, bool session);
/* "Basic256Sha256:SignAndEncrypt" (or a policy URI before the last ':')
 * into c->policy_uri and c->mode. 0 or EXIT_USAGE (printed). */
int cli_parse_security(cli *c, const char *text);
/* Reads the password of --user: one line of stdin (password_stdin) or the
 * UASTACK_PASSWORD environment variable. 0 or EXIT_USAGE (printed). */
int cli_read_password(cli *c, bool password_stdin);
/* Disconnects and frees everything cli_open made. */
void cli_close(cli *c);
/* One service call into c->arena. On a Bad status prints "uacli: <what>
 * failed: <Name> (<description>)" and returns it. */
uas_status cli_call(cli *c, const char *what, void *req, const uas_type *req_type, void *resp,
                    const uas_type *resp_type);
/* Prints the error line for st; returns EXIT_UA. */
int cli_fail(const char *what, uas_status st);
/* A "key": prefix of a JSON object member (first: no comma before it). */
void cli_json_key(const char *key, bool first);
/* Prints "uacli: <msg>" and returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The name of an enumeration value of DataType type, from its EnumStrings
 * or EnumValues property on the server; false when there is none. */
bool cli_enum_name(cli *c, const uas_nodeid *type, int64_t value, char *out, size_t len);

/* A node id argument; EXIT_USAGE (printed) when malformed, else 0. */
int cli_parse_nodeid(cli *c, const char *text, uas_nodeid *out);
/* "int32" + "42" -> Variant (memory from arena). 0 or EXIT_USAGE (printed). */
int cli_parse_value(cli *c, const char *type, const char *text, uas_variant *out);

/* Names of node classes, attributes ("Value"), and a NodeId as text. */
const char *cli_node_class_name(int32_t nc);
const char *cli_attribute_name(uint32_t id);
/* Attribute by name (case-insensitive) or number; 0 when unknown. */
uint32_t cli_attribute_parse(const char *text);
void cli_nodeid_text(const uas_nodeid *id, char *buf, size_t size);

/* Commands (cmd_*.c): args are the positional arguments after the URL. */
int cmd_endpoints(cli *c, int argc, char **argv);
int cmd_discover(cli *c, int argc, char **argv);
int cmd_browse(cli *c, int argc, char **argv);
int cmd_translate(cli *c, int argc, char **argv);
int cmd_read(cli *c, int argc, char **argv);
int cmd_write(cli *c, int argc, char **argv);
int cmd_call(cli *c, int argc, char **argv);
int cmd_subscribe(cli *c, int argc, char **argv);

#endif
