/* uacli call. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

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
    if (c->json) {
        printf("{");
        cli_json_key("Status", true);
        uas_json_string(stdout, (const uint8_t *)uas_status_name(r->status_code),
                        strlen(uas_status_name(r->status_code)));
        cli_json_key("OutputArguments", false);
        putchar('[');
        for (size_t i = 0; i < r->output_arguments_count; i++) {
            if (i)
                putchar(',');
            uas_variant_print_json(stdout, &r->output_arguments[i]);
        }
        printf("]}\n");
        return EXIT_OK;
    }
    printf("Status: %s\n", uas_status_name(r->status_code));
    for (size_t i = 0; i < r->output_arguments_count; i++) {
        printf("Output[%zu]: ", i);
        uas_variant_print(stdout, &r->output_arguments[i], 0);
        putchar('\n');
    }
    return EXIT_OK;
}
