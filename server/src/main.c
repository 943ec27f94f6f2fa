/* uaserver entry point. The network server arrives with the transport and
 * services; until then this reports honestly what the build contains and the
 * embedded default configuration it will serve. */
#include <stdio.h>
#include <string.h>

#include <ua/codec.h>
#include <ua/types.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: uaserver [--version] [--help]\n"
               "The opc.tcp server is not implemented yet: this build prints the\n"
               "configuration it would serve and exits.\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--version")) {
            printf("uaserver %s\n", UAS_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        fprintf(stderr, "uaserver: unknown option '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    const uas_limits *l = &uas_limits_default;
    printf("uaserver %s (uastack)\n", UAS_VERSION);
    printf("status: the network server is not implemented yet; nothing is listening.\n");
    printf("type system: %u types of OPC UA namespace 0 (%u with a binary encoding)\n",
           (unsigned)UAS_TYPES_COUNT, (unsigned)UAS_TYPES_ENCODABLE_COUNT);
    printf("default configuration it will serve:\n");
    printf("  endpoint            opc.tcp://0.0.0.0:4840\n");
    printf("  security policies   None\n");
    printf("  max message size    %zu bytes\n", l->max_message_size);
    printf("  max array length    %u\n", l->max_array_length);
    printf("  max string length   %u bytes\n", l->max_string_length);
    printf("  max nesting depth   %u\n", l->max_depth);
    return 0;
}
