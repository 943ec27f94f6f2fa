/* Delivery accounting of the subscription scenarios: write logs, received
 * sets, the expected-delivery rule (see uas_deliv_rule in ua/loadgen.h),
 * sequence numbers and data-source counters. No I/O, no clocks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ua/loadgen.h>

int64_t uas_write_log_add(uas_write_log *l, uint64_t sent_ns)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        uint64_t *s = realloc(l->sent_ns, cap * sizeof(uint64_t));
        if (!s)
            return -1;
        l->sent_ns = s;
        uint64_t *r = realloc(l->resp_ns, cap * sizeof(uint64_t));
        if (!r)
            return -1;
        l->resp_ns = r;
        l->cap = cap;
    }
    l->sent_ns[l->n] = sent_ns;
    l->resp_ns[l->n] = 0;
    return l->n++;
}

void uas_write_log_done(uas_write_log *l, uint32_t k, uint64_t resp_ns)
{
    if (k < l->n)
        l->resp_ns[k] = resp_ns ? resp_ns : 1;
}

void uas_write_log_free(uas_write_log *l)
{
    free(l->sent_ns);
    free(l->resp_ns);
    memset(l, 0, sizeof(*l));
}

int uas_rx_set_add(uas_rx_set *s, uint32_t k)
{
    uint32_t w = k / 64;
    if (w >= s->words) {
        uint32_t words = s->words ? s->words : 4;
        while (words <= w)
            words *= 2;
        uint64_t *b = realloc(s->bits, words * sizeof(uint64_t));
        if (!b)
            return -1;
        memset(b + s->words, 0, (words - s->words) * sizeof(uint64_t));
        s->bits = b;
        s->words = words;
    }
    uint64_t m = 1ull << (k % 64);
    if (s->bits[w] & m)
        return 0;
    s->bits[w] |= m;
    return 1;
}

bool uas_rx_set_has(const uas_rx_set *s, uint32_t k)
{
    return k / 64 < s->words && (s->bits[k / 64] >> (k % 64)) & 1;
}

void uas_rx_set_free(uas_rx_set *s)
{
    free(s->bits);
    memset(s, 0, sizeof(*s));
}

int uas_deliv_plan_build(uas_deliv_plan *p, const uas_write_log *l, const uas_deliv_rule *r)
{
    memset(p, 0, sizeof(*p));
    uint32_t first = 0;
    while (first < l->n && l->sent_ns[first] < r->t0_ns)
        first++;
    uint32_t end = first;
    while (end < l->n && l->sent_ns[end] < r->t1_ns)
        end++;
    p->first = first;
    p->end = end;
    if (end == first)
        return 0;
    p->group_end = calloc(end - first, sizeof(uint32_t));
    p->judged = calloc(end - first, 1);
    if (!p->group_end || !p->judged) {
        uas_deliv_plan_free(p);
        return -1;
    }
    uint32_t q = r->queue_size ? r->queue_size : 1;
    /* Sent times grow with k: b (first write sent at or after D_k) and s
     * (first sent at or after resp_k + S) only move forward... except that
     * resp_k need not grow with k, so each search restarts at k + 1 (the
     * groups are short: about (S + P + G) / write interval). */
    for (uint32_t k = first; k < end; k++) {
        uint64_t resp = l->resp_ns[k];
        if (resp == 0)
            continue; /* no Good response: not a value that surely existed */
        uint64_t deadline = resp + r->sampling_ns + r->pub_ns + r->guard_ns;
        if (deadline > r->end_ns)
            continue; /* its cycle may end after collection stopped */
        uint32_t b = k + 1;
        while (b < l->n && l->sent_ns[b] < deadline)
            b++;
        uint32_t later = b - (k + 1);
        bool sampled =
            r->sampling_ns == 0 || k + 1 >= l->n || l->sent_ns[k + 1] >= resp + r->sampling_ns;
        bool each = later < q && sampled;
        p->judged[k - first] = 1;
        p->group_end[k - first] = each ? k + 1 : b;
        p->judged_count++;
        p->must_each += each;
    }
    return 0;
}

void uas_deliv_plan_free(uas_deliv_plan *p)
{
    free(p->group_end);
    free(p->judged);
    memset(p, 0, sizeof(*p));
}

void uas_deliv_check(const uas_deliv_plan *p, const uas_rx_set *rx, uas_deliv_count *c)
{
    for (uint32_t k = p->first; k < p->end; k++) {
        if (!p->judged[k - p->first])
            continue;
        c->expected++;
        if (uas_rx_set_has(rx, k))
            c->values++;
        bool ok = false;
        for (uint32_t j = k; j < p->group_end[k - p->first] && !ok; j++)
            ok = uas_rx_set_has(rx, j);
        if (ok)
            c->delivered++;
        else
            c->missed++;
    }
}

void uas_seq_track_add(uas_seq_track *t, uint32_t seq)
{
    t->messages++;
    if (t->have) {
        if (seq == t->last || seq < t->last) {
            t->repeats++;
            return;
        }
        t->gaps += seq - t->last - 1;
    }
    t->last = seq;
    t->have = true;
}

void uas_counter_track_add(uas_counter_track *t, uint64_t value, int64_t source_ts)
{
    if (!t->have) {
        t->v_first = value;
        t->ts_first = source_ts;
        t->have = true;
    }
    t->v_last = value;
    t->ts_last = source_ts;
    t->notifications++;
}

void uas_counter_track_eval(const uas_counter_track *t, double sampling_ms, double pub_ms,
                            double min_ratio, uas_counter_eval *out)
{
    memset(out, 0, sizeof(*out));
    if (!t->have)
        return; /* nothing arrived: ok stays false */
    out->span_s = (double)(t->ts_last - t->ts_first) / 1e7;
    if (out->span_s < 0)
        out->span_s = 0;
    out->samples = t->v_last >= t->v_first ? (double)(t->v_last - t->v_first) : 0.0;
    /* Samples lie on the item's sampling grid and notifications on the
     * subscription's publishing grid: the grid points between the first and
     * the last are the span in intervals, rounded (the timer's lateness at
     * either end is well below half an interval). */
    out->expected_samples = sampling_ms > 0 ? floor(out->span_s * 1000.0 / sampling_ms + 0.5) : 0;
    out->sample_ratio = out->expected_samples > 0 ? out->samples / out->expected_samples : 1.0;
    out->expected_notif = pub_ms > 0 ? floor(out->span_s * 1000.0 / pub_ms + 0.5) + 1 : 1;
    out->notif_ratio = (double)t->notifications / out->expected_notif;
    out->ok = out->sample_ratio >= min_ratio && out->notif_ratio >= min_ratio;
}
