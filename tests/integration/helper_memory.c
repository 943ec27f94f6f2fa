#define _GNU_SOURCE
#include "helper_memory.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ua/nodeids.h>

#include "server_internal.h"

#define POLICY_NONE "http://opcfoundation.org/UA/SecurityPolicy#None"

void mem_run_for(env *e, uint32_t ms)
{
    bool never = false;
    env_run_until(e, &never, ms);
}

unsigned mem_connections(env *e)
{
    return atomic_load(&e->server->counters.current_connections);
}

size_t mem_budget_used(void)
{
    uas_budget_stats s;
    uas_budget_get_stats(&s);
    return s.used;
}

/* Runs the test loop (serving good clients) until cond(e) or ms pass. */
bool mem_wait_for(env *e, bool (*cond)(env *e, void *ud), void *ud, uint32_t ms)
{
    for (uint32_t waited = 0; waited <= ms; waited += 50) {
        if (cond(e, ud))
            return true;
        mem_run_for(e, 50);
    }
    return cond(e, ud);
}

bool mem_connections_at_most(env *e, void *ud)
{
    return mem_connections(e) <= *(unsigned *)ud;
}

bool mem_budget_below(env *e, void *ud)
{
    (void)e;
    return mem_budget_used() <= *(size_t *)ud;
}

void mem_expect_reads(uas_client *c)
{
    cr_expect_eq(env_read_i32(c, 1001), 0, "a normal client is still served");
}

/* A Browse of the Server object, n times over: a few bytes of request per
 * kilobyte of answer. */
uas_browse_description *mem_browse_request(uas_browse_request *req, size_t n)
{
    uas_browse_description *bd = calloc(n, sizeof(*bd));
    cr_assert(bd);
    for (size_t i = 0; i < n; i++) {
        bd[i].node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
        bd[i].browse_direction = UAS_BROWSE_DIRECTION_BOTH;
        bd[i].reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_REFERENCES);
        bd[i].include_subtypes = true;
        bd[i].result_mask = 0x3F;
    }
    memset(req, 0, sizeof(*req));
    req->nodes_to_browse_count = n;
    req->nodes_to_browse = bd;
    return bd;
}

bool mem_nonblocking_send, mem_flood_blocked;

static uas_status rawch_send(void *ud, uas_buf *chunk)
{
    rawch *r = ud;
    if (r->hold) {
        cr_assert_lt(r->nheld, HELD_MAX);
        r->held[r->nheld] = malloc(chunk->len);
        cr_assert(r->held[r->nheld]);
        memcpy(r->held[r->nheld], chunk->data, chunk->len);
        r->held_len[r->nheld++] = chunk->len;
    } else if (mem_nonblocking_send) {
        if (!mem_flood_blocked && send(r->fd, chunk->data, chunk->len,
                                       MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)chunk->len)
            mem_flood_blocked = true;
    } else {
        raw_send(r->fd, chunk->data, chunk->len);
    }
    uas_buf_put(r->pool, chunk);
    return UAS_GOOD;
}

static void rawch_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)ud, (void)id, (void)body, (void)len;
}

static void rawch_state(void *ud, uas_channel_state st, uas_status reason)
{
    (void)reason;
    if (st == UAS_CHANNEL_CLOSED)
        ((rawch *)ud)->closed = true;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rawch_open(env *e, rawch *r)
{
    memset(r, 0, sizeof(*r));
    r->pool = uas_bufpool_new(1u << 20);
    cr_assert(r->pool);
    uas_channel_config cc;
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    cc.policy = uas_security_policy(POLICY_NONE, false);
    cc.mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = rawch_send;
    cb.on_message = rawch_message;
    cb.on_state = rawch_state;
    r->fd = raw_connect(e);
    r->ch = uas_channel_new(&cc, &cb, r, r->pool, mono_ms());
    cr_assert(r->ch);
    cr_assert_eq(uas_channel_connect(r->ch, e->url, mono_ms()), UAS_GOOD);
    uint8_t buf[65536];
    int64_t end = mono_ms() + ENV_WAIT_MS;
    while (uas_channel_get_state(r->ch) != UAS_CHANNEL_OPEN && !r->closed && mono_ms() < end) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), 0);
        if (n <= 0)
            break;
        uas_channel_recv(r->ch, buf, (size_t)n, mono_ms());
    }
    cr_assert_eq(uas_channel_get_state(r->ch), UAS_CHANNEL_OPEN, "the None channel did not open");
}

void rawch_close(rawch *r)
{
    for (size_t i = 0; i < r->nheld; i++)
        free(r->held[i]);
    uas_channel_delete(r->ch);
    close(r->fd);
    uas_bufpool_delete(r->pool);
}

/* What the server said on the socket so far: ERR's code, BadConnectionClosed
 * for a close without ERR, Good while it is open and silent. */
uas_status rawch_fate(rawch *r)
{
    uint8_t buf[256];
    ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n >= 16 && memcmp(buf, "ERRF", 4) == 0)
        return raw_u32(buf + 8);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        return UAS_BAD_CONNECTION_CLOSED;
    return UAS_GOOD;
}

/* Reads whatever the server sent; true once it closed the connection. */
bool rawch_drain_closed(rawch *r)
{
    static uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0)
            continue;
        return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
}
