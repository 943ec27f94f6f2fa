/* A hashed timer wheel (Varghese & Lauck, scheme 6) with 1 ms slots for the
 * subscription engine, plus the intrusive list every sub_* module uses.
 *
 * Why a wheel: one event loop drives thousands of publishing intervals,
 * sampling intervals and Publish timeouts; arming, re-arming and cancelling
 * must be O(1) and allocation-free (timers are embedded in their owners).
 * A deadline of T ms lives in slot T mod nslots with its absolute time, so
 * timers further away than one revolution (nslots ms) simply stay in their
 * slot until the revolution they belong to. The cost of that simplicity:
 * a far timer can cause one early wake-up per revolution (the bitmap says
 * "something is in slot i", not "something is due in slot i"); with 2048
 * slots that is at most one idle pass every ~2 s per far deadline.
 *
 * The clock is injected: sub_wheel_advance(now) fires what is due, in
 * slot (= millisecond) order, FIFO within a slot, and callbacks may arm
 * and cancel any timer, including ones already collected for this pass. */
#ifndef UAS_SUB_WHEEL_H
#define UAS_SUB_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/status.h>

/* Circular doubly linked list with a sentinel head; a node not on any list
 * has next == NULL, so "is it linked" needs no extra flag. */
typedef struct sub_list {
    struct sub_list *next;
    struct sub_list *prev;
} sub_list;

#define SUB_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void sub_list_init(sub_list *head)
{
    head->next = head->prev = head;
}
static inline bool sub_list_empty(const sub_list *head)
{
    return head->next == head;
}
static inline bool sub_list_linked(const sub_list *n)
{
    return n->next != NULL;
}
static inline void sub_list_push_back(sub_list *head, sub_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}
static inline void sub_list_remove(sub_list *n)
{
    if (!n->next)
        return;
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = NULL;
}
static inline sub_list *sub_list_first(const sub_list *head)
{
    return head->next == head ? NULL : head->next;
}

typedef struct sub_timer sub_timer;
typedef void (*sub_timer_fn)(sub_timer *t, int64_t now);

struct sub_timer {
    sub_list link;    /* in a wheel slot or in the pass being fired */
    int64_t deadline; /* requested (ms) */
    int64_t when;     /* slot time: deadline, but never before the wheel's cursor */
    sub_timer_fn fn;
};

typedef struct sub_wheel {
    sub_list *slots;
    uint64_t *bits; /* slot i non-empty */
    uint32_t mask;  /* nslots - 1 */
    int64_t cur;    /* every slot time < cur has been processed */
    size_t count;   /* armed timers */
} sub_wheel;

/* nslots is rounded up to a power of two (minimum 64). BadOutOfMemory. */
uas_status sub_wheel_init(sub_wheel *w, uint32_t nslots, int64_t now);
void sub_wheel_free(sub_wheel *w);

static inline void sub_timer_init(sub_timer *t, sub_timer_fn fn)
{
    t->link.next = t->link.prev = NULL;
    t->deadline = t->when = 0;
    t->fn = fn;
}
static inline bool sub_timer_armed(const sub_timer *t)
{
    return t->link.next != NULL;
}

/* (Re)arm t for deadline; a deadline in the past fires on the next advance. */
void sub_wheel_arm(sub_wheel *w, sub_timer *t, int64_t deadline);
void sub_wheel_cancel(sub_wheel *w, sub_timer *t);
/* Fire every timer with deadline <= now. */
void sub_wheel_advance(sub_wheel *w, int64_t now);
/* The earliest time at which advance may have work (INT64_MAX: no timer).
 * Exact for timers less than one revolution away, early otherwise. */
int64_t sub_wheel_next(const sub_wheel *w);

/* Next deadline of a periodic timer that was due at `due`: keeps the phase
 * and skips cycles missed by a stalled loop instead of firing a burst. */
int64_t sub_next_period(int64_t due, int64_t period, int64_t now);

#endif
