/* The server driven by the application's loop (docs/Embedding.md, "Foreign
 * event loop"): the poll() interface hands out the sockets the server
 * waits for, so the application's poll() wakes for them; the server on the
 * application's libev loop serves and leaves the loop clean. Over real
 * sockets: a raw TCP client sends HEL and must get ACK. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <ev.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ua/net.h>
#include <ua/server.h>

#include "server_internal.h"

static uas_server *new_server(unsigned threads, struct ev_loop *app_loop, uas_status *st)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = threads;
    cfg.port = 0;
    cfg.bind_address = "127.0.0.1";
    cfg.log_level = UAS_LOG_WARN;
    return app_loop ? uas_server_new_libev(&cfg, app_loop, st) : uas_server_new(&cfg, st);
}

static int connect_to(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    return fd;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
    p[3] = (uint8_t)(v >> 24);
}

static void send_hel(int fd, uint16_t port)
{
    char url[64];
    int ul = snprintf(url, sizeof(url), "opc.tcp://127.0.0.1:%u", port);
    uint8_t m[128];
    memcpy(m, "HELF", 4);
    put32(m + 4, (uint32_t)(32 + ul));
    put32(m + 8, 0);      /* protocol version */
    put32(m + 12, 65536); /* receive buffer */
    put32(m + 16, 65536); /* send buffer */
    put32(m + 20, 0);     /* max message size */
    put32(m + 24, 0);     /* max chunk count */
    put32(m + 28, (uint32_t)ul);
    memcpy(m + 32, url, (size_t)ul);
    cr_assert(send(fd, m, (size_t)(32 + ul), 0) == 32 + ul);
}

static bool has_ack(int fd)
{
    uint8_t b[8];
    return recv(fd, b, sizeof(b), MSG_DONTWAIT) == (ssize_t)sizeof(b) && !memcmp(b, "ACKF", 4);
}

/* One turn of an application's poll() loop; the poll's return value. */
static int poll_turn(uas_server *s, struct pollfd *fds, size_t cap, size_t *n)
{
    int timeout;
    cr_assert_eq(uas_server_get_pollfds(s, fds, cap, n, &timeout), UAS_GOOD);
    /* The housekeeping timer (1 s) bounds the deadline. */
    cr_assert(timeout >= 0 && timeout <= 1000, "timeout %d", timeout);
    int rv = poll(fds, *n, 3000);
    uas_server_process(s);
    return rv;
}

Test(foreign_loop, poll_interface_wakes_for_the_listener_and_the_connection)
{
    uas_status st;
    uas_server *s = new_server(1, NULL, &st);
    cr_assert_not_null(s);
    cr_assert_eq(uas_server_listen(s), UAS_GOOD);
    struct pollfd fds[8];
    size_t n;
    int timeout;
    cr_assert_eq(uas_server_get_pollfds(s, fds, 8, &n, &timeout), UAS_GOOD);
    cr_assert_eq(n, 1, "the listener alone: %zu", n);
    cr_assert_eq(fds[0].events, POLLIN);
    /* Too small an array: the count needed. */
    cr_assert_eq(uas_server_get_pollfds(s, fds, 0, &n, &timeout), UAS_BAD_RESOURCE_UNAVAILABLE);
    cr_assert_eq(n, 1);

    int c = connect_to(uas_server_port(s));
    /* The poll wakes for the listener (not for the deadline). */
    cr_assert_gt(poll_turn(s, fds, 8, &n), 0);
    cr_assert_eq(uas_server_get_pollfds(s, fds, 8, &n, &timeout), UAS_GOOD);
    /* io_uring: the ring's descriptor stands for the listener and every
     * connection (docs/Architecture.md, "I/O backends"). */
    if (uas_loop_io_backend(s->loops[0].loop) == UAS_IO_URING)
        cr_assert_eq(n, 1, "the ring: %zu", n);
    else
        cr_assert_eq(n, 2, "listener and connection: %zu", n);
    send_hel(c, uas_server_port(s));
    /* ... and for the connection's socket: HEL is answered with ACK. */
    cr_assert_gt(poll_turn(s, fds, 8, &n), 0, "poll() did not wake for the connection");
    /* The ACK is written during uas_server_process. */
    struct pollfd cp = {.fd = c, .events = POLLIN};
    cr_assert_eq(poll(&cp, 1, 3000), 1);
    cr_assert(has_ack(c), "no ACK");
    close(c);
    uas_server_delete(s);
}

Test(foreign_loop, poll_interface_refuses_several_loops)
{
    uas_status st;
    uas_server *s = new_server(2, NULL, &st);
#ifdef UAS_SINGLE_LOOP
    /* The minimal profile has one loop only. */
    cr_assert_null(s);
    cr_assert_eq(st, UAS_BAD_INVALID_ARGUMENT);
    return;
#endif
    cr_assert_not_null(s);
    struct pollfd fds[8];
    size_t n;
    int timeout;
    cr_assert_eq(uas_server_get_pollfds(s, fds, 8, &n, &timeout), UAS_BAD_INVALID_STATE);
    cr_assert_eq(uas_server_process(s), UAS_BAD_INVALID_STATE);
    uas_server_delete(s);
}

static bool watchdog_fired;

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w, (void)revents;
    watchdog_fired = true;
    ev_break(loop, EVBREAK_ALL);
}

static int ack_fd;
static bool acked;

static void on_client(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)w, (void)revents;
    if (has_ack(ack_fd)) {
        acked = true;
        ev_break(loop, EVBREAK_ALL);
    }
}

Test(foreign_loop, libev_application_loop_serves_and_is_left_clean)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    uas_status st;
    cr_assert_null(new_server(2, loop, &st), "threads 2 on one application loop");
    cr_assert_eq(st, UAS_BAD_INVALID_ARGUMENT);
    uas_server *s = new_server(1, loop, &st);
    cr_assert_not_null(s);
    cr_assert_eq(uas_server_listen(s), UAS_GOOD);
    /* Not on the application's loop: the application runs it. */
    struct pollfd fds[8];
    size_t n;
    int timeout;
    cr_assert_eq(uas_server_get_pollfds(s, fds, 8, &n, &timeout), UAS_BAD_INVALID_STATE);

    ack_fd = connect_to(uas_server_port(s));
    send_hel(ack_fd, uas_server_port(s));
    ev_io cw;
    ev_io_init(&cw, on_client, ack_fd, EV_READ);
    ev_io_start(loop, &cw);
    ev_timer wd;
    ev_timer_init(&wd, on_watchdog, 5.0, 0.0);
    ev_timer_start(loop, &wd);
    ev_run(loop, 0);
    cr_assert(acked, "no ACK from the server on the application's loop");
    ev_io_stop(loop, &cw);
    ev_timer_stop(loop, &wd);
    close(ack_fd);

    uas_server_delete(s);
    /* Nothing of the server stays on the loop: with only an unreferenced
     * watchdog, ev_run returns at once instead of running to it. */
    watchdog_fired = false;
    ev_timer_init(&wd, on_watchdog, 5.0, 0.0);
    ev_timer_start(loop, &wd);
    ev_unref(loop);
    ev_run(loop, 0);
    ev_ref(loop);
    ev_timer_stop(loop, &wd);
    cr_assert(!watchdog_fired, "the server left watchers on the application's loop");
    ev_loop_destroy(loop);
}
