/* uacli endpoints / discover: what a server offers before connecting to
 * it securely, with the certificates a user must decide to trust. */
#include <stdio.h>
#include <string.h>

#ifdef UAS_ENABLE_ENCRYPTION
#include <ua/pki.h>
#endif

#include "cli.h"

enum { MAX_CERTS = 16 };

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

/* The server certificate of an endpoint, shown once per certificate. */
static void print_certificate(const uas_bytestring *der, char seen[][41], size_t *nseen)
{
    if (!der->data || !der->length) {
        printf("  Certificate:     (none)\n");
        return;
    }
#ifdef UAS_ENABLE_ENCRYPTION
    uas_pki_cert_info info;
    if (uas_pki_cert_info_get(der->data, der->length, &info) != UAS_GOOD) {
        printf("  Certificate:     %zu bytes, not a certificate\n", der->length);
        return;
    }
    for (size_t i = 0; i < *nseen; i++)
        if (!strcmp(seen[i], info.thumbprint)) {
            printf("  Certificate:     %s (as above)\n", info.thumbprint);
            return;
        }
    if (*nseen < MAX_CERTS)
        snprintf(seen[(*nseen)++], 41, "%s", info.thumbprint);
    char from[64], to[64];
    uas_datetime_format(info.not_before, from, sizeof(from));
    uas_datetime_format(info.not_after, to, sizeof(to));
    printf("  Certificate:     %s\n"
           "    Subject:       %s\n"
           "    Issuer:        %s%s\n"
           "    ApplicationUri: %s\n"
           "    Valid:         %s to %s\n"
           "    Key:           %u bits\n",
           info.thumbprint, info.subject, info.issuer, info.self_signed ? " (self-signed)" : "",
           info.application_uri[0] ? info.application_uri : "(none)", from, to,
           (unsigned)info.key_bits);
#else
    (void)seen;
    (void)nseen;
    printf("  Certificate:     %zu bytes (built without encryption: not decoded)\n", der->length);
#endif
}

static int get_endpoints(cli *c, const char *url, bool certificates)
{
    uas_get_endpoints_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(url);
    uas_get_endpoints_response resp;
    if (cli_call(c, "GetEndpoints", &req, UAS_TYPE(GET_ENDPOINTS_REQUEST), &resp,
                 UAS_TYPE(GET_ENDPOINTS_RESPONSE)))
        return EXIT_UA;
    if (c->json) {
        /* The descriptions whole, certificates in base64. */
        putchar('[');
        for (size_t i = 0; i < resp.endpoints_count; i++) {
            if (i)
                putchar(',');
            uas_value_print_json(stdout, &resp.endpoints[i], UAS_TYPE(ENDPOINT_DESCRIPTION));
        }
        printf("]%s\n", certificates ? "}" : "");
        return EXIT_OK;
    }
    char seen[MAX_CERTS][41];
    size_t nseen = 0;
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
        if (certificates)
            print_certificate(&e->server_certificate, seen, &nseen);
    }
    if (resp.endpoints_count == 0)
        printf("(no endpoints)\n");
    return EXIT_OK;
}

int cmd_endpoints(cli *c, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    c->policy_uri = NULL; /* GetEndpoints needs no security */
    c->user = NULL;
    int rc = cli_open(c, false);
    return rc ? rc : get_endpoints(c, c->url, false);
}

static const char *app_type_name(int32_t t)
{
    switch (t) {
    case UAS_APPLICATION_TYPE_SERVER:
        return "Server";
    case UAS_APPLICATION_TYPE_CLIENT:
        return "Client";
    case UAS_APPLICATION_TYPE_CLIENT_AND_SERVER:
        return "ClientAndServer";
    case UAS_APPLICATION_TYPE_DISCOVERY_SERVER:
        return "DiscoveryServer";
    default:
        return "Unknown";
    }
}

/* FindServers, then the endpoints with their certificates. */
int cmd_discover(cli *c, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    c->policy_uri = NULL; /* discovery needs no security */
    c->user = NULL;
    int rc = cli_open(c, false);
    if (rc)
        return rc;
    uas_find_servers_request req;
    memset(&req, 0, sizeof(req));
    req.endpoint_url = uas_string_from(c->url);
    uas_find_servers_response resp;
    if (cli_call(c, "FindServers", &req, UAS_TYPE(FIND_SERVERS_REQUEST), &resp,
                 UAS_TYPE(FIND_SERVERS_RESPONSE)))
        return EXIT_UA;
    if (c->json) {
        printf("{");
        cli_json_key("Servers", true);
        putchar('[');
        for (size_t i = 0; i < resp.servers_count; i++) {
            if (i)
                putchar(',');
            uas_value_print_json(stdout, &resp.servers[i], UAS_TYPE(APPLICATION_DESCRIPTION));
        }
        putchar(']');
        cli_json_key("Endpoints", false);
        return get_endpoints(c, c->url, true); /* closes the object */
    }
    for (size_t i = 0; i < resp.servers_count; i++) {
        const uas_application_description *a = &resp.servers[i];
        printf("Server %zu: ", i + 1);
        print_string(&a->application_name.text);
        printf("\n  ApplicationUri:  ");
        print_string(&a->application_uri);
        printf("\n  ProductUri:      ");
        print_string(&a->product_uri);
        printf("\n  Type:            %s\n  Discovery URLs:  ", app_type_name(a->application_type));
        for (size_t k = 0; k < a->discovery_urls_count; k++) {
            printf("%s", k ? ", " : "");
            print_string(&a->discovery_urls[k]);
        }
        printf("\n");
    }
    if (resp.servers_count == 0)
        printf("(no servers)\n");
    printf("\n");
    return get_endpoints(c, c->url, true);
}
