/* Shared by the two foreign-loop examples: command line and the one
 * variable they serve, ns=2;s=Counter, which the application's own loop
 * increments every 100 ms next to the server's work. */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/server.h>

typedef struct example_args {
    uint16_t port;
    long exit_after_ms; /* 0: until SIGINT/SIGTERM */
} example_args;

/* false (after printing why) on a usage error; exits 0 for --help. */
bool example_parse(const char *prog, int argc, char **argv, example_args *out);
/* Adds ns=2;s=Counter (Int32, read-only) under Objects. */
uas_status example_add_counter(uas_server *s, uas_nodeid *id);
/* The application's periodic work: Counter += 1. */
uas_status example_tick(uas_server *s, const uas_nodeid *id);

#endif
