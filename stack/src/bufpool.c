/* Size-class buffer pool: per-class free lists with a byte budget, trimmed
 * to the recent peak of use, and the charge of buffers to the process
 * memory budget. */
#include <ua/bufpool.h>
#include <ua/mem.h>
#include <ua/membudget.h>

#include <string.h>

enum { MIN_CLASS = 8, MAX_CLASS = 24, NCLASSES = MAX_CLASS + 1 };

struct uas_bufpool {
    uas_buf *free[NCLASSES];
    size_t max_cached;
    uint64_t period_peak; /* most live bytes at once since the last trim */
    uas_bufpool_stats stats;
};

uas_bufpool *uas_bufpool_new(size_t max_cached_bytes)
{
    uas_bufpool *p = uas_calloc(1, sizeof(*p));
    if (p)
        p->max_cached = max_cached_bytes;
    return p;
}

static size_t buf_alloc_size(uint8_t cls)
{
    return sizeof(uas_buf) + ((size_t)1 << cls);
}

void uas_bufpool_delete(uas_bufpool *p)
{
    if (!p)
        return;
    for (int c = 0; c < NCLASSES; c++) {
        uas_buf *b = p->free[c];
        while (b) {
            uas_buf *next = b->next;
            uas_free(b, buf_alloc_size(b->cls));
            b = next;
        }
    }
    uas_free(p, sizeof(*p));
}

static uint8_t class_of(size_t n)
{
    uint8_t c = MIN_CLASS;
    while (((size_t)1 << c) < n)
        c++;
    return c;
}

uas_buf *uas_buf_get(uas_bufpool *p, size_t min_cap)
{
    if (min_cap > ((size_t)1 << MAX_CLASS))
        return NULL;
    uint8_t c = class_of(min_cap);
    uas_buf *b = p->free[c];
    if (b) {
        p->free[c] = b->next;
        p->stats.cached_bytes -= (size_t)1 << c;
    } else {
        b = uas_malloc(buf_alloc_size(c));
        if (!b)
            return NULL;
        b->cls = c;
        b->cap = (uint32_t)1 << c;
        p->stats.heap_gets++;
    }
    b->next = NULL;
    b->len = b->off = 0;
    b->charged = 0;
    p->stats.gets++;
    p->stats.live++;
    p->stats.live_bytes += (size_t)1 << c;
    if (p->stats.live_bytes > p->period_peak)
        p->period_peak = p->stats.live_bytes;
    return b;
}

void uas_buf_put(uas_bufpool *p, uas_buf *b)
{
    if (!b)
        return;
    p->stats.live--;
    size_t size = (size_t)1 << b->cls;
    p->stats.live_bytes -= size;
    if (b->charged) {
        uas_budget_release(size);
        b->charged = 0;
    }
    if (p->stats.cached_bytes + size > p->max_cached) {
        uas_free(b, buf_alloc_size(b->cls));
        return;
    }
    b->next = p->free[b->cls];
    p->free[b->cls] = b;
    p->stats.cached_bytes += size;
}

void uas_bufpool_get_stats(const uas_bufpool *p, uas_bufpool_stats *out)
{
    *out = p->stats;
}

bool uas_buf_charge(uas_buf *b, bool force)
{
    if (b->charged)
        return true;
    size_t size = (size_t)1 << b->cls;
    if (force)
        uas_budget_charge(size);
    else if (!uas_budget_try_reserve(size))
        return false;
    b->charged = 1;
    return true;
}

void uas_bufpool_trim(uas_bufpool *p)
{
    /* What was live at the peak may be needed again at the next one; more
     * than that is memory kept for a burst that is over. */
    uint64_t keep = p->period_peak;
    for (int c = MAX_CLASS; c >= MIN_CLASS && p->stats.cached_bytes > keep; c--) {
        while (p->free[c] && p->stats.cached_bytes > keep) {
            uas_buf *b = p->free[c];
            p->free[c] = b->next;
            p->stats.cached_bytes -= (size_t)1 << c;
            p->stats.trimmed++;
            uas_free(b, buf_alloc_size(b->cls));
        }
    }
    p->period_peak = p->stats.live_bytes;
}
