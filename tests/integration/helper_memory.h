/* Helpers of the memory tests (test_memory.c, test_memory_chunks.c): the
 * server's counters, waiting while the test loop serves good clients, and
 * a None channel driven by hand that can hold chunks back or flood without
 * reading. */
#ifndef UAS_TEST_HELPER_MEMORY_H
#define UAS_TEST_HELPER_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/membudget.h>

#include "helper_env.h"

void mem_run_for(env *e, uint32_t ms);
/* The server's open mem_connections and the budget's bytes in use. */
unsigned mem_connections(env *e);
size_t mem_budget_used(void);
/* Runs the test loop (serving good clients) until cond(e, ud) or ms pass. */
bool mem_wait_for(env *e, bool (*cond)(env *e, void *ud), void *ud, uint32_t ms);
bool mem_connections_at_most(env *e, void *ud); /* ud: unsigned */
bool mem_budget_below(env *e, void *ud);        /* ud: size_t */
/* A Read through c succeeds. */
void mem_expect_reads(uas_client *c);
/* A Browse of the Server object, n times over (free the result). */
uas_browse_description *mem_browse_request(uas_browse_request *req, size_t n);

/* A client channel of policy None on a blocking socket, driven by the
 * test: its chunks go to the socket, or are held to be sent later. */
enum { HELD_MAX = 16 };
typedef struct rawch {
    int fd;
    uas_bufpool *pool;
    uas_channel *ch;
    bool hold;
    uint8_t *held[HELD_MAX];
    size_t held_len[HELD_MAX];
    size_t nheld;
    bool closed;
} rawch;

/* While set, chunks of every rawch go out without blocking; the first
 * send the socket does not take whole sets mem_flood_blocked. */
extern bool mem_nonblocking_send, mem_flood_blocked;

void rawch_open(env *e, rawch *r);
void rawch_close(rawch *r);
/* What the server said so far: ERR's code, BadConnectionClosed for a close
 * without ERR, Good while it is open and silent. */
uas_status rawch_fate(rawch *r);
/* Reads whatever the server sent; true once it closed the connection. */
bool rawch_drain_closed(rawch *r);

#endif
