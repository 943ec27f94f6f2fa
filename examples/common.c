#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--port N] [--exit-after MS]\n"
            "  --port N          TCP port on 127.0.0.1 (default 4842, 0 = ephemeral)\n"
            "  --exit-after MS   stop after MS milliseconds (default: until Ctrl-C)\n"
            "Serves ns=2;s=Counter, which the program's own loop increments every 100 ms.\n",
            prog);
}

bool example_parse(const char *prog, int argc, char **argv, example_args *out)
{
    out->port = 4842;
    out->exit_after_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout, prog);
            exit(0);
        }
        char *end;
        errno = 0;
        unsigned long v = i + 1 < argc ? strtoul(argv[i + 1], &end, 10) : 0;
        bool ok = i + 1 < argc && *argv[i + 1] && *argv[i + 1] != '-' && !*end && errno == 0;
        if (ok && !strcmp(argv[i], "--port") && v <= 65535)
            out->port = (uint16_t)v;
        else if (ok && !strcmp(argv[i], "--exit-after") && v <= 86400000UL)
            out->exit_after_ms = (long)v;
        else {
            fprintf(stderr, "%s: unknown option, missing or bad value: '%s'\n", prog, argv[i]);
            usage(stderr, prog);
            return false;
        }
        i++;
    }
    return true;
}

uas_status example_add_counter(uas_server *s, uas_nodeid *id)
{
    uint16_t ns = uas_server_add_namespace(s, "urn:example:loop");
    *id = uas_nodeid_string(ns, "Counter");
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid var_type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {ns, uas_string_from("Counter")};
    int32_t zero = 0;
    uas_variable_attributes va = {0};
    va.data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    va.value_rank = -1;
    va.access_level = va.user_access_level = 0x01;
    uas_variant_set_scalar(&va.value, &zero, UAS_TYPE(INT32));
    return uas_server_add_variable(s, id, &objects, &organizes, &bn, &var_type, &va);
}

uas_status example_tick(uas_server *s, const uas_nodeid *id)
{
    uas_variant v;
    uas_status st = uas_server_read_value(s, id, &v);
    if (st != UAS_GOOD)
        return st;
    int32_t n = *(const int32_t *)v.data + 1;
    uas_clear(&v, UAS_TYPE(VARIANT));
    uas_variant_set_scalar(&v, &n, UAS_TYPE(INT32));
    return uas_server_write_value(s, id, &v);
}
