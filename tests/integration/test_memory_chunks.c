#define _GNU_SOURCE
/* Chunk floods at the message size limit on many mem_connections, each
 * holding a partial message open, against a small memory budget: memory
 * stays within it, the flooders are refused or dropped, a good client is
 * served. In a file of its own: Criterion 2.4.1's runner leaked 48 bytes
 * (LeakSanitizer) when this test ran beside another one of test_memory.c. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <sys/socket.h>

#include "helper_memory.h"

enum { FLOODERS = 48, FLOOD_MESSAGE = 256u << 10, FLOOD_BUDGET = 4u << 20 };

static void chunk_flood_config(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_message_size = FLOOD_MESSAGE;
    cfg->memory_budget = FLOOD_BUDGET;
    cfg->max_connections_per_address = 0;
    cfg->log_level = UAS_LOG_WARN;
}

Test(memory, chunk_floods_at_the_message_limit_stay_within_the_budget, .timeout = 90)
{
    env e;
    env_options o = {.threads = 2, .configure = chunk_flood_config};
    env_start(&e, &o);
    env_log_capture();
    uas_client *good = env_client(&e, true, 0);
    size_t base = mem_budget_used();
    /* Each flooder sends all chunks of a message just under the limit but
     * the last, and holds it open. */
    uas_browse_request req;
    uas_browse_description *bd = mem_browse_request(&req, 11000);
    static rawch r[FLOODERS];
    for (int i = 0; i < FLOODERS; i++) {
        rawch_open(&e, &r[i]);
        r[i].hold = true;
        uas_status st = uas_channel_send(r[i].ch, 100, &req, UAS_TYPE(BROWSE_REQUEST));
        cr_assert_eq(st, UAS_GOOD, "flooder %d: %s", i, uas_status_name(st));
        cr_assert_geq(r[i].nheld, 3);
        /* Past the budget the server may drop a flooder (the largest
         * consumer) while its chunks are still being sent: the rest of
         * them is then refused by the socket, which is the point. */
        for (size_t k = 0; k + 1 < r[i].nheld; k++)
            if (send(r[i].fd, r[i].held[k], r[i].held_len[k], MSG_NOSIGNAL) !=
                (ssize_t)r[i].held_len[k])
                break;
        if (i % 8 == 7)
            mem_expect_reads(good);
    }
    free(bd);
    mem_run_for(&e, 500);
    mem_expect_reads(good);

    /* Memory stayed within the budget, plus what is never refused: one
     * receive buffer per connection for a chunk split across reads. */
    uas_budget_stats bs;
    uas_budget_get_stats(&bs);
    cr_expect_gt(bs.refusals, 0, "the budget never refused: the flood did not reach it");
    cr_expect_leq(bs.peak, FLOOD_BUDGET + (size_t)FLOODERS * 65536 + (512u << 10),
                  "the budget peaked at %zu bytes", bs.peak);
    int refused = 0;
    for (int i = 0; i < FLOODERS; i++) {
        uas_status f = rawch_fate(&r[i]);
        if (f == UAS_BAD_TCP_NOT_ENOUGH_RESOURCES || f == UAS_BAD_CONNECTION_CLOSED)
            refused++;
    }
    /* 48 x 256 KiB of assembly do not fit in 4 MiB: most were refused. */
    cr_expect_geq(refused, FLOODERS / 2, "only %d flooders were refused", refused);
    cr_expect(env_log_has("memory budget exhausted") || env_log_has("no memory to assemble"),
              "no log line tells why");

    for (int i = 0; i < FLOODERS; i++)
        rawch_close(&r[i]);
    size_t limit = base + (256u << 10);
    cr_expect(mem_wait_for(&e, mem_budget_below, &limit, 5000), "the budget still holds %zu bytes",
              mem_budget_used());
    mem_expect_reads(good);
    env_client_close(good);
    env_log_release();
    env_stop(&e);
}
