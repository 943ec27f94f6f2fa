/* A device program whose main loop is libev: the OPC UA server's watchers
 * join the program's loop (uas_server_new_libev), next to the program's
 * own timer, and the program runs ev_run itself (docs/Embedding.md,
 * "Foreign event loop"). Run: example_libev_loop [--port N] [--exit-after MS]. */
#include <ev.h>
#include <stdio.h>

#include "common.h"

static uas_server *server;
static uas_nodeid counter;

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)w, (void)revents;
    example_tick(server, &counter);
}

static void on_exit_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)w, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
    example_args args;
    if (!example_parse("example_libev_loop", argc, argv, &args))
        return 2;
    struct ev_loop *loop = ev_default_loop(0);
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1;
    cfg.port = args.port;
    cfg.bind_address = "127.0.0.1";
    uas_status st;
    server = uas_server_new_libev(&cfg, loop, &st);
    if (server)
        st = example_add_counter(server, &counter);
    if (st == UAS_GOOD)
        st = uas_server_listen(server);
    if (st != UAS_GOOD) {
        fprintf(stderr, "example_libev_loop: %s\n", uas_status_name(st));
        uas_server_delete(server);
        return 1;
    }
    printf("example_libev_loop listening on opc.tcp://127.0.0.1:%u\n", uas_server_port(server));
    fflush(stdout);

    ev_timer tick, exit_timer;
    ev_timer_init(&tick, on_tick, 0.1, 0.1);
    ev_timer_start(loop, &tick);
    if (args.exit_after_ms) {
        ev_timer_init(&exit_timer, on_exit_timer, (double)args.exit_after_ms / 1000.0, 0.0);
        ev_timer_start(loop, &exit_timer);
    }
    ev_signal sigint, sigterm;
    ev_signal_init(&sigint, on_signal, SIGINT);
    ev_signal_start(loop, &sigint);
    ev_signal_init(&sigterm, on_signal, SIGTERM);
    ev_signal_start(loop, &sigterm);

    ev_run(loop, 0);

    /* The server leaves the loop clean: only the program's watchers remain. */
    uas_server_delete(server);
    ev_timer_stop(loop, &tick);
    ev_signal_stop(loop, &sigint);
    ev_signal_stop(loop, &sigterm);
    ev_loop_destroy(loop);
    return 0;
}
