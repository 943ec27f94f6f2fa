/* uacli endpoints / call. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_string(const uas_string *s)
{
    if (s->data)
        fwrite(s->data, 1, s->length, stdout);
}

static const char *mode_name(int32_t m)
{
    switch (m) {
    case UAS_MESSAGE_SECURITY_MODE_NONE:
        return "None";
    case UAS_MESSAGE_SECURITY_MODE_SIGN:
        return "Sign";
    case UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT:
        return "SignAndEncrypt";
    default:
        return "Invalid";
    }
}

static const char *token_type_name(int32_t t)
{
    switch (t) {
    case UAS_USER_TOKEN_TYPE_ANONYMOUS:
        return "Anonymous";
    case UAS_USER_TOKEN_TYPE_USER_NAME:
        return "UserName";
    case UAS_USER_TOKEN_TYPE_CERTIFICATE:
        return "Certificate";
    case UAS_USER_TOKEN_TYPE_ISSUED_TOKEN:
        return "IssuedToken";
    default:
        return "Unknown";
    }
}

int cmd_endpoints(cli *c, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    c->policy_uri = NULL; /* GetEndpoints needs no security */
    c->user = NULL;
    int rc = cli_open(c, false);
    if (rc)
        return rc;
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(c->url);
    uas_get_endpoints_response resp;
    if (cli_call(c, "GetEndpoints", &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), &resp,
                 UAS_TYPE(GET_ENDPOINTS_RESPONSE)))
        return EXIT_UA;
    for (size_t i = 0; i < resp.endpoints_count; i++) {
        const uas_endpoint_description *e = &resp.endpoints[i];
        printf("Endpoint %zu: ", i + 1);
        print_string(&e->endpoint_url);
        printf("\n  Security mode:   %s\n  Security policy: ", mode_name(e->security_mode));
        print_string(&e->security_policy_uri);
        printf("\n  Security level:  %u\n  Transport:       ", (unsigned)e->security_level);
        print_string(&e->transport_profile_uri);
        printf("\n  Server:          ");
        print_string(&e->server.application_uri);
        printf(" (");
        print_string(&e->server.application_name.text);
        printf(")\n  User tokens:     ");
        for (size_t k = 0; k < e->user_identity_tokens_count; k++) {
            const uas_user_token_policy *p = &e->user_identity_tokens[k];
            if (k)
                printf(", ");
            print_string(&p->policy_id);
            printf(" (%s", token_type_name(p->token_type));
            if (p->security_policy_uri.length) {
                const uint8_t *h =
                    memchr(p->security_policy_uri.data, '#', p->security_policy_uri.length);
                size_t off = h ? (size_t)(h - p->security_policy_uri.data) + 1 : 0;
                printf(", %.*s", (int)(p->security_policy_uri.length - off),
                       (const char *)p->security_policy_uri.data + off);
            }
            printf(")");
        }
        printf("\n");
    }
    if (resp.endpoints_count == 0)
        printf("(no endpoints)\n");
    return EXIT_OK;
}

int cmd_call(cli *c, int argc, char **argv)
{
    uas_call_method_request m;
    memset(&m, 0, sizeof(m));
    int rc = cli_parse_nodeid(c, argv[0], &m.object_id);
    if (rc || (rc = cli_parse_nodeid(c, argv[1], &m.method_id)))
        return rc;
    size_t nin = (size_t)argc - 2;
    if (nin) {
        m.input_arguments = uas_arena_calloc(&c->arena, nin, sizeof(uas_variant));
        if (!m.input_arguments)
            return cli_fail("call", UAS_BAD_OUT_OF_MEMORY);
        m.input_arguments_count = nin;
    }
    for (size_t i = 0; i < nin; i++) {
        const char *arg = argv[2 + i];
        const char *colon = strchr(arg, ':');
        if (!colon)
            return cli_usage_error("argument '%s' is not TYPE:VALUE (e.g. int32:5)", arg);
        char type[32];
        size_t n = (size_t)(colon - arg);
        if (n >= sizeof(type))
            return cli_usage_error("unknown type in '%s'", arg);
        memcpy(type, arg, n);
        type[n] = 0;
        if ((rc = cli_parse_value(c, type, colon + 1, &m.input_arguments[i])))
            return rc;
    }
    if ((rc = cli_open(c, true)))
        return rc;
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call_count = 1;
    req.methods_to_call = &m;
    uas_call_response resp;
    if (cli_call(c, "call", &req, UAS_TYPE(CALL_REQUEST), &resp, UAS_TYPE(CALL_RESPONSE)))
        return EXIT_UA;
    if (resp.results_count != 1)
        return cli_fail("call", UAS_BAD_UNKNOWN_RESPONSE);
    const uas_call_method_result *r = &resp.results[0];
    for (size_t i = 0; i < r->input_argument_results_count; i++)
        if (uas_is_bad(r->input_argument_results[i]))
            fprintf(stderr, "uacli: input argument %zu: %s\n", i,
                    uas_status_name(r->input_argument_results[i]));
    if (uas_is_bad(r->status_code))
        return cli_fail("call", r->status_code);
    printf("Status: %s\n", uas_status_name(r->status_code));
    for (size_t i = 0; i < r->output_arguments_count; i++) {
        printf("Output[%zu]: ", i);
        uas_variant_print(stdout, &r->output_arguments[i], 0);
        putchar('\n');
    }
    return EXIT_OK;
}
