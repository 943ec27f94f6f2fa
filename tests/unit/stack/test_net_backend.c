/* Selecting the I/O backend of a loop (ua/net.h, uas_loop_new_io): the
 * names, the backend a loop really runs, the refusal of io_uring where it
 * cannot run, and that a loop of either backend can be made and deleted
 * with nothing left behind. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ua/net.h>

Test(net_backend, names_parse_and_print_back)
{
    const char *names[] = {"auto", "epoll", "io_uring"};
    for (int i = 0; i < 3; i++) {
        uas_io_backend b = UAS_IO_EPOLL;
        cr_assert(uas_io_backend_parse(names[i], &b), "%s", names[i]);
        cr_expect_str_eq(uas_io_backend_name(b), names[i]);
    }
    uas_io_backend b = UAS_IO_EPOLL;
    cr_expect_not(uas_io_backend_parse("uring", &b));
    cr_expect_not(uas_io_backend_parse("", &b));
    cr_expect_not(uas_io_backend_parse(NULL, &b));
    cr_expect_not(uas_io_backend_parse("EPOLL", &b));
}

Test(net_backend, epoll_loop_is_epoll_and_has_no_ring)
{
    uas_status st = UAS_BAD_UNEXPECTED_ERROR;
    uas_loop *l = uas_loop_new_io(NULL, 0, UAS_IO_EPOLL, &st);
    cr_assert(l);
    cr_expect_eq(st, UAS_GOOD);
    cr_expect_eq(uas_loop_io_backend(l), UAS_IO_EPOLL);
    cr_expect_eq(uas_loop_poll_fd(l), -1);
    /* Multishot accept is the ring's: an epoll loop says so. */
    cr_expect_eq(uas_loop_accept_start(l, 0, NULL, NULL), UAS_BAD_NOT_SUPPORTED);
    uas_loop_delete(l);
    /* uas_loop_new keeps meaning epoll (clients, the load generator). */
    l = uas_loop_new(0);
    cr_assert(l);
    cr_expect_eq(uas_loop_io_backend(l), UAS_IO_EPOLL);
    uas_loop_delete(l);
}

/* io_uring asked for: the ring, or a refusal with BadNotSupported (a build
 * without liburing, or a kernel that refuses rings) and never a silent
 * epoll loop. */
Test(net_backend, io_uring_loop_runs_io_uring_or_is_refused)
{
    uas_status st = UAS_BAD_UNEXPECTED_ERROR;
    uas_loop *l = uas_loop_new_io(NULL, 0, UAS_IO_URING, &st);
    if (!l) {
        cr_expect_eq(st, UAS_BAD_NOT_SUPPORTED, "%s", uas_status_name(st));
        return;
    }
    cr_assert(uas_io_uring_built());
    cr_expect_eq(st, UAS_GOOD);
    cr_expect_eq(uas_loop_io_backend(l), UAS_IO_URING);
    cr_expect_geq(uas_loop_poll_fd(l), 0);
    /* A loop with nothing to do returns from one non-blocking turn. */
    uas_loop_run_once(l, false);
    uas_loop_delete(l);
}

Test(net_backend, auto_takes_io_uring_when_it_can)
{
    uas_status st = UAS_BAD_UNEXPECTED_ERROR;
    uas_loop *ring = uas_loop_new_io(NULL, 0, UAS_IO_URING, &st);
    uas_loop *l = uas_loop_new_io(NULL, 0, UAS_IO_AUTO, &st);
    cr_assert(l, "auto never fails for want of io_uring");
    cr_expect_eq(uas_loop_io_backend(l), ring ? UAS_IO_URING : UAS_IO_EPOLL);
    uas_loop_delete(l);
    uas_loop_delete(ring);
}
