/* The process memory budget (ua/membudget.h): a limit and a usage counter
 * shared by every thread, and giving freed memory back to the system. */
#define _GNU_SOURCE
#include <ua/mem.h>
#include <ua/membudget.h>

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

enum { MIB = 1 << 20 };

static atomic_size_t b_limit;
static atomic_size_t b_used;
static atomic_size_t b_peak;
static atomic_uint_fast64_t b_refusals, b_drops, b_trims;
static atomic_bool b_pressure_armed = true;
/* The hook and its argument change together under this flag-free pair:
 * setting happens at server start/stop, never concurrently with itself. */
static void (*_Atomic b_hook)(void *);
static void *_Atomic b_hook_ud;
static atomic_size_t b_trim_high; /* allocator bytes at their highest since the last trim */

/* cgroup v2 limit of this process, when it has one ("max": none). */
static uint64_t cgroup_limit(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    int n = fscanf(f, "%llu", &v);
    fclose(f);
    return n == 1 ? (uint64_t)v : 0;
}

size_t uas_budget_default(void)
{
    /* In 64 bits: a 32-bit size_t cannot hold the RAM of most machines. */
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)256 * MIB;
    uint64_t cg = cgroup_limit();
    if (cg && cg < ram)
        ram = cg;
    /* A quarter leaves room for the address space, sessions, the code and
     * everything else the process holds, and for other programs. */
    uint64_t b = ram / 4;
    if (b < (uint64_t)64 * MIB)
        b = (uint64_t)64 * MIB;
    if (b > (uint64_t)1024 * MIB)
        b = (uint64_t)1024 * MIB;
    return (size_t)b;
}

void uas_budget_set_limit(size_t bytes)
{
    atomic_store(&b_limit, bytes ? bytes : uas_budget_default());
}

/* The limit, the default worked out (a file read) once if none was set. */
size_t uas_budget_limit(void)
{
    size_t l = atomic_load_explicit(&b_limit, memory_order_relaxed);
    if (!l) {
        size_t zero = 0;
        atomic_compare_exchange_strong(&b_limit, &zero, uas_budget_default());
        l = atomic_load(&b_limit);
    }
    return l;
}

static void note_peak(size_t used)
{
    size_t p = atomic_load_explicit(&b_peak, memory_order_relaxed);
    while (used > p && !atomic_compare_exchange_weak_explicit(
                           &b_peak, &p, used, memory_order_relaxed, memory_order_relaxed))
        ;
}

static void pressure(void)
{
    if (!atomic_exchange(&b_pressure_armed, false))
        return;
    void (*fn)(void *) = atomic_load(&b_hook);
    if (fn)
        fn(atomic_load(&b_hook_ud));
    else
        atomic_store(&b_pressure_armed, true);
}

bool uas_budget_try_reserve(size_t n)
{
    size_t limit = uas_budget_limit();
    size_t used = atomic_load_explicit(&b_used, memory_order_relaxed);
    do {
        if (n > limit || used > limit - n) {
            atomic_fetch_add_explicit(&b_refusals, 1, memory_order_relaxed);
            pressure();
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(&b_used, &used, used + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    note_peak(used + n);
    return true;
}

void uas_budget_charge(size_t n)
{
    size_t used = atomic_fetch_add_explicit(&b_used, n, memory_order_relaxed) + n;
    note_peak(used);
    /* Counted memory is never refused, but many small shares of it can
     * still pass the limit: then the largest consumers must go too. */
    if (used > uas_budget_limit())
        pressure();
}

void uas_budget_release(size_t n)
{
    atomic_fetch_sub_explicit(&b_used, n, memory_order_relaxed);
}

void uas_budget_get_stats(uas_budget_stats *out)
{
    out->limit = uas_budget_limit();
    out->used = atomic_load_explicit(&b_used, memory_order_relaxed);
    out->peak = atomic_load_explicit(&b_peak, memory_order_relaxed);
    out->refusals = atomic_load_explicit(&b_refusals, memory_order_relaxed);
    out->drops = atomic_load_explicit(&b_drops, memory_order_relaxed);
    out->trims = atomic_load_explicit(&b_trims, memory_order_relaxed);
}

void uas_budget_set_pressure_hook(void (*fn)(void *ud), void *ud)
{
    atomic_store(&b_hook, NULL);
    atomic_store(&b_hook_ud, ud);
    atomic_store(&b_hook, fn);
    atomic_store(&b_pressure_armed, true);
}

void uas_budget_clear_pressure_hook(void *ud)
{
    if (atomic_load(&b_hook_ud) == ud)
        atomic_store(&b_hook, NULL);
}

void uas_budget_pressure_done(void)
{
    atomic_store(&b_pressure_armed, true);
}

void uas_budget_count_drop(void)
{
    atomic_fetch_add_explicit(&b_drops, 1, memory_order_relaxed);
}

bool uas_budget_trim(size_t min_drop)
{
    uas_mem_stats ms;
    uas_mem_get_stats(&ms);
    size_t live = (size_t)ms.bytes_live;
    size_t high = atomic_load(&b_trim_high);
    if (live > high) {
        atomic_store(&b_trim_high, live);
        return false;
    }
    if (high - live < min_drop)
        return false;
    atomic_store(&b_trim_high, live);
#ifdef __GLIBC__
    malloc_trim(0);
    atomic_fetch_add_explicit(&b_trims, 1, memory_order_relaxed);
    return true;
#else
    return false;
#endif
}

size_t uas_process_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, resident = 0;
    int n = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (size_t)resident * (size_t)page : 0;
}
