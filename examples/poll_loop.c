/* A device program that owns a plain poll() main loop and drives the OPC UA
 * server from it (docs/Embedding.md, "Foreign event loop"): each turn asks
 * the server for its sockets and deadline, adds the program's own timer,
 * waits in poll(), then lets the server process what is ready.
 * Run: example_poll_loop [--port N] [--exit-after MS]. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    example_args args;
    if (!example_parse("example_poll_loop", argc, argv, &args))
        return 2;
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1; /* one loop: the program's */
    cfg.port = args.port;
    cfg.bind_address = "127.0.0.1";
    cfg.max_connections = 16;
    uas_status st;
    uas_server *server = uas_server_new(&cfg, &st);
    uas_nodeid counter;
    if (server)
        st = example_add_counter(server, &counter);
    if (st == UAS_GOOD)
        st = uas_server_listen(server);
    if (st != UAS_GOOD) {
        fprintf(stderr, "example_poll_loop: %s\n", uas_status_name(st));
        uas_server_delete(server);
        return 1;
    }
    printf("example_poll_loop listening on opc.tcp://127.0.0.1:%u\n", uas_server_port(server));
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    struct pollfd fds[16 + 1];
    long long start = now_ms(), next_tick = start + 100;
    while (!stop && (!args.exit_after_ms || now_ms() - start < args.exit_after_ms)) {
        size_t n;
        int timeout;
        st = uas_server_get_pollfds(server, fds, sizeof(fds) / sizeof(fds[0]), &n, &timeout);
        if (st != UAS_GOOD) {
            fprintf(stderr, "example_poll_loop: %s\n", uas_status_name(st));
            break;
        }
        /* The program's own deadline joins the server's. */
        long long until_tick = next_tick - now_ms();
        if (until_tick < 0)
            until_tick = 0;
        if (timeout < 0 || timeout > until_tick)
            timeout = (int)until_tick;
        if (poll(fds, n, timeout) < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
        uas_server_process(server);
        if (now_ms() >= next_tick) {
            example_tick(server, &counter);
            next_tick += 100;
        }
    }
    uas_server_delete(server);
    return 0;
}
