/* Blocking helpers for tools and tests: run the client's loop one
 * iteration at a time until a condition holds, woken at the latest by a
 * one-shot ev_timer of our own. */
#include <string.h>

#include "client_internal.h"

typedef struct waiter {
    ev_timer timer;
    bool expired;
} waiter;

static void on_wake(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    ((waiter *)w->data)->expired = true;
}

static void waiter_start(uas_client *c, waiter *w, uint32_t timeout_ms)
{
    w->expired = false;
    /* libev times a timer from the loop's cached now, which is as old as
     * the loop's last iteration: after the caller spent seconds elsewhere
     * (key generation, another loop, a loaded machine) the wait would end
     * before it began, with the answer unread in the socket. */
    (void)uas__client_now_ms(c);
    ev_timer_init(&w->timer, on_wake, (double)timeout_ms / 1000.0, 0.0);
    w->timer.data = w;
    ev_timer_start(uas_loop_ev(c->loop), &w->timer);
}

static void waiter_stop(uas_client *c, waiter *w)
{
    ev_timer_stop(uas_loop_ev(c->loop), &w->timer);
}

static bool reached(const uas_client *c, uas_client_state s)
{
    return c->state == UAS_CLIENT_CLOSED || (c->state >= s && c->state != UAS_CLIENT_DISCONNECTED);
}

uas_status uas_client_wait_state(uas_client *c, uas_client_state state, uint32_t timeout_ms)
{
    if (c->state == UAS_CLIENT_DISCONNECTED)
        return state == UAS_CLIENT_DISCONNECTED ? UAS_GOOD : UAS_BAD_INVALID_STATE;
    waiter w;
    waiter_start(c, &w, timeout_ms);
    while (!reached(c, state) && !w.expired)
        uas_loop_run_once(c->loop, true);
    waiter_stop(c, &w);
    if (!reached(c, state))
        return UAS_BAD_TIMEOUT;
    if (c->state == UAS_CLIENT_CLOSED && state != UAS_CLIENT_CLOSED)
        return uas_is_bad(c->reason) ? c->reason : UAS_BAD_CONNECTION_CLOSED;
    return UAS_GOOD;
}

typedef struct sync_call {
    bool done;
    uas_status status;
    void *resp;
    const uas_type *resp_type;
    uas_arena *arena;
} sync_call;

static void on_sync_answer(uas_client *c, void *ud, uas_status st, const void *resp,
                           const uas_type *t)
{
    (void)c;
    sync_call *s = ud;
    s->done = true;
    s->status = st;
    if (resp && t == s->resp_type) {
        uas_status cs = uas_copy_arena(resp, s->resp, t, s->arena);
        if (cs != UAS_GOOD) {
            memset(s->resp, 0, t->size);
            s->status = cs;
        }
    }
}

uas_status uas_client_call_sync(uas_client *c, void *req, const uas_type *req_type, void *resp,
                                const uas_type *resp_type, uas_arena *arena, uint32_t timeout_ms)
{
    if (!resp || !resp_type || !arena)
        return UAS_BAD_INVALID_ARGUMENT;
    memset(resp, 0, resp_type->size);
    sync_call s = {false, UAS_GOOD, resp, resp_type, arena};
    /* The state checks of uas_client_request apply; the id lets a timed
     * out call forget its request, whose callback points at this frame. */
    uint32_t id = 0;
    uas_status st = uas__client_request_id(c, req, req_type, on_sync_answer, &s, &id);
    if (st != UAS_GOOD)
        return st;
    waiter w;
    waiter_start(c, &w, timeout_ms);
    while (!s.done && !w.expired)
        uas_loop_run_once(c->loop, true);
    waiter_stop(c, &w);
    if (!s.done) {
        uas__client_cancel(c, id);
        return UAS_BAD_TIMEOUT;
    }
    return s.status;
}
