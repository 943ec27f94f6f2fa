#define _GNU_SOURCE
/* A client used after its loop sat idle longer than its timeouts: the
 * connect deadline, the request deadlines and uas_client_wait_state's
 * timer must count from the real now, not from the loop's cached time of
 * its last iteration (with it, they had passed before they began, and a
 * test thread that had spent seconds elsewhere got BadTimeout with the
 * server's answer unread in the socket). */
#include <criterion/criterion.h>

#include <string.h>
#include <time.h>

#include <ua/nodeids.h>

#include "helper_env.h"

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

Test(client_clock, a_loop_idle_longer_than_the_timeouts_still_connects_and_reads)
{
    env e;
    env_options o = {0};
    env_start(&e, &o);
    uas_loop_run_once(e.loop, false); /* the loop's time is now */
    pause_ms(1500);                   /* and now stale by 1.5 s */
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e.url;
    cfg.create_session = true;
    cfg.request_timeout_ms = 1000;
    uas_client *c = uas_client_new(e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    uas_status st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, 1000);
    cr_expect_eq(st, UAS_GOOD, "connect: %s", uas_status_name(st));
    if (st == UAS_GOOD) {
        pause_ms(1500); /* again stale, now for a request */
        uas_arena arena;
        uas_arena_init(&arena, NULL, 0, 0);
        uas_nodeid id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER_SERVERSTATUS_STATE);
        uas_datavalue dv;
        cr_expect_eq(env_read(c, &id, 13, &dv, &arena), UAS_GOOD);
        uas_arena_free(&arena);
        env_client_close(c);
    } else {
        uas_client_delete(c);
    }
    env_stop(&e);
}
