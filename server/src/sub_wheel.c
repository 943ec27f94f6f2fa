/* Hashed timer wheel with 1 ms slots; see sub_wheel.h for why. */
#include "sub_wheel.h"

#include <string.h>

#include <ua/mem.h>

uas_status sub_wheel_init(sub_wheel *w, uint32_t nslots, int64_t now)
{
    memset(w, 0, sizeof(*w));
    uint32_t n = 64;
    while (n < nslots && n < (1u << 24))
        n <<= 1;
    w->slots = uas_calloc(n, sizeof(sub_list));
    w->bits = uas_calloc(n / 64, sizeof(uint64_t));
    if (!w->slots || !w->bits) {
        uas_free(w->slots, n * sizeof(sub_list));
        uas_free(w->bits, n / 64 * sizeof(uint64_t));
        memset(w, 0, sizeof(*w));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < n; i++)
        sub_list_init(&w->slots[i]);
    w->mask = n - 1;
    w->cur = now;
    return UAS_GOOD;
}

void sub_wheel_free(sub_wheel *w)
{
    if (!w->slots)
        return;
    uint32_t n = w->mask + 1;
    /* Timers are owned by their embedders: only detach them. */
    for (uint32_t i = 0; i < n; i++)
        while (!sub_list_empty(&w->slots[i]))
            sub_list_remove(w->slots[i].next);
    uas_free(w->slots, n * sizeof(sub_list));
    uas_free(w->bits, n / 64 * sizeof(uint64_t));
    memset(w, 0, sizeof(*w));
}

static void slot_update_bit(sub_wheel *w, uint32_t idx)
{
    uint64_t bit = (uint64_t)1 << (idx & 63);
    if (sub_list_empty(&w->slots[idx]))
        w->bits[idx >> 6] &= ~bit;
    else
        w->bits[idx >> 6] |= bit;
}

void sub_wheel_cancel(sub_wheel *w, sub_timer *t)
{
    if (!sub_timer_armed(t))
        return;
    sub_list_remove(&t->link);
    w->count--;
    /* The timer may sit in a pass being fired rather than in its slot; the
     * bit is then already right, recomputing it is harmless either way. */
    slot_update_bit(w, (uint32_t)(t->when & w->mask));
}

void sub_wheel_arm(sub_wheel *w, sub_timer *t, int64_t deadline)
{
    sub_wheel_cancel(w, t);
    t->deadline = deadline;
    /* Slots before the cursor were already walked: a late deadline goes to
     * the cursor's slot, which advance visits (again) before moving on. */
    t->when = deadline < w->cur ? w->cur : deadline;
    uint32_t idx = (uint32_t)(t->when & w->mask);
    sub_list_push_back(&w->slots[idx], &t->link);
    w->bits[idx >> 6] |= (uint64_t)1 << (idx & 63);
    w->count++;
}

/* Distance (0..nslots-1) from slot index `from` to the next non-empty slot,
 * wrapping; -1 when the wheel is empty. */
static int64_t next_set(const sub_wheel *w, uint32_t from)
{
    uint32_t n = w->mask + 1, words = n / 64;
    uint32_t wi = from >> 6;
    uint64_t word = w->bits[wi] & (~(uint64_t)0 << (from & 63));
    for (uint32_t k = 0; k <= words; k++) {
        if (word) {
            uint32_t idx = (wi << 6) + (uint32_t)__builtin_ctzll(word);
            return (int64_t)((idx - from) & w->mask);
        }
        wi = (wi + 1) % words;
        word = w->bits[wi];
    }
    return -1;
}

/* Move the timers of slot `idx` that are due at `now` to `pass`. */
static bool collect_due(sub_wheel *w, uint32_t idx, int64_t now, sub_list *pass)
{
    bool any = false;
    sub_list *head = &w->slots[idx];
    for (sub_list *n = head->next; n != head;) {
        sub_list *next = n->next;
        sub_timer *t = SUB_CONTAINER(n, sub_timer, link);
        if (t->when <= now) {
            sub_list_remove(n);
            sub_list_push_back(pass, n);
            any = true;
        }
        n = next;
    }
    slot_update_bit(w, idx);
    return any;
}

void sub_wheel_advance(sub_wheel *w, int64_t now)
{
    if (now < w->cur || w->count == 0) {
        if (now >= w->cur)
            w->cur = now + 1;
        return;
    }
    int64_t nslots = (int64_t)w->mask + 1;
    int64_t t = w->cur;
    /* After a long stall one revolution visits every slot once; timers
     * older than its start are still in their slot and due, so they fire. */
    if (now - t >= nslots)
        t = now - nslots + 1;
    while (t <= now) {
        uint32_t idx = (uint32_t)(t & w->mask);
        w->cur = t; /* arms from callbacks clamp here, not behind */
        sub_list pass;
        sub_list_init(&pass);
        /* A callback may arm a due timer into this very slot: loop until
         * the slot has nothing due. */
        while (collect_due(w, idx, now, &pass)) {
            sub_list *n;
            while ((n = sub_list_first(&pass)) != NULL) {
                sub_timer *tm = SUB_CONTAINER(n, sub_timer, link);
                sub_list_remove(n);
                w->count--;
                tm->fn(tm, now);
            }
        }
        int64_t d = next_set(w, (uint32_t)((t + 1) & w->mask));
        if (d < 0)
            break;
        t += 1 + d;
    }
    w->cur = now + 1;
}

int64_t sub_wheel_next(const sub_wheel *w)
{
    if (w->count == 0)
        return INT64_MAX;
    int64_t d = next_set(w, (uint32_t)(w->cur & w->mask));
    return d < 0 ? INT64_MAX : w->cur + d;
}

int64_t sub_next_period(int64_t due, int64_t period, int64_t now)
{
    if (period <= 0)
        period = 1;
    int64_t next = due + period;
    if (next <= now)
        next += ((now - next) / period + 1) * period;
    return next;
}
