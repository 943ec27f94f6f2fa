/* Allocator indirection with counters, the hooks that route OpenSSL's and
 * libev's allocations through it, the wipe of secrets, and the
 * per-request bump arena. */
#define _DEFAULT_SOURCE /* explicit_bzero, for the build without libsodium */
#include <ua/mem.h>

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/crypto.h>
#include <sodium.h>
#endif

static void *default_alloc(void *ud, size_t size)
{
    (void)ud;
    return malloc(size);
}

static void *default_realloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud;
    (void)old_size;
    return realloc(ptr, new_size);
}

static void default_free(void *ud, void *ptr, size_t size)
{
    (void)ud;
    (void)size;
    free(ptr);
}

static const uas_allocator default_allocator = {default_alloc, default_realloc, default_free, NULL};
static uas_allocator cur_allocator = {default_alloc, default_realloc, default_free, NULL};

static atomic_uint_fast64_t stat_allocs, stat_frees, stat_bytes_alloc, stat_bytes_live;

void uas_mem_set_allocator(const uas_allocator *a)
{
    cur_allocator = a ? *a : default_allocator;
}

void *uas_malloc(size_t size)
{
    if (size == 0)
        size = 1;
    void *p = cur_allocator.alloc(cur_allocator.ud, size);
    if (p) {
        atomic_fetch_add_explicit(&stat_allocs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&stat_bytes_alloc, size, memory_order_relaxed);
        atomic_fetch_add_explicit(&stat_bytes_live, size, memory_order_relaxed);
    }
    return p;
}

void *uas_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = uas_malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *uas_realloc(void *ptr, size_t old_size, size_t new_size)
{
    if (!ptr)
        return uas_malloc(new_size);
    if (new_size == 0)
        new_size = 1;
    void *p = cur_allocator.realloc(cur_allocator.ud, ptr, old_size, new_size);
    if (p) {
        if (new_size > old_size) {
            atomic_fetch_add_explicit(&stat_allocs, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&stat_bytes_alloc, new_size - old_size, memory_order_relaxed);
            atomic_fetch_add_explicit(&stat_bytes_live, new_size - old_size, memory_order_relaxed);
        } else {
            atomic_fetch_sub_explicit(&stat_bytes_live, old_size - new_size, memory_order_relaxed);
        }
    }
    return p;
}

void uas_free(void *ptr, size_t size)
{
    if (!ptr)
        return;
    if (size == 0)
        size = 1;
    atomic_fetch_add_explicit(&stat_frees, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&stat_bytes_live, size, memory_order_relaxed);
    cur_allocator.free(cur_allocator.ud, ptr, size);
}

void uas_mem_get_stats(uas_mem_stats *out)
{
    out->allocs = atomic_load_explicit(&stat_allocs, memory_order_relaxed);
    out->frees = atomic_load_explicit(&stat_frees, memory_order_relaxed);
    out->bytes_alloc = atomic_load_explicit(&stat_bytes_alloc, memory_order_relaxed);
    out->bytes_live = atomic_load_explicit(&stat_bytes_live, memory_order_relaxed);
}

/* ---- the libraries' allocations ----
 * OpenSSL frees and libev reallocates without telling the size, which the
 * allocator interface and the counters need: each block carries its size
 * in a header of one max_align_t, so the pointer handed out keeps
 * malloc's alignment. */

#define LIB_HDR alignof(max_align_t)

static void *lib_alloc(size_t n)
{
    if (n > SIZE_MAX - LIB_HDR)
        return NULL;
    uint8_t *p = uas_malloc(n + LIB_HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof(n));
    return p + LIB_HDR;
}

static size_t lib_size(void *user)
{
    size_t n;
    memcpy(&n, (uint8_t *)user - LIB_HDR, sizeof(n));
    return n;
}

static void lib_free(void *user)
{
    if (user)
        uas_free((uint8_t *)user - LIB_HDR, lib_size(user) + LIB_HDR);
}

static void *lib_realloc(void *user, size_t n)
{
    if (!user)
        return lib_alloc(n);
    if (n > SIZE_MAX - LIB_HDR)
        return NULL;
    size_t old = lib_size(user);
    uint8_t *p = uas_realloc((uint8_t *)user - LIB_HDR, old + LIB_HDR, n + LIB_HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof(n));
    return p + LIB_HDR;
}

/* libev's one function: realloc, with size 0 meaning free. */
static void *ev_hook(void *ptr, long size)
{
    if (size <= 0) {
        lib_free(ptr);
        return NULL;
    }
    return lib_realloc(ptr, (size_t)size);
}

#ifdef UAS_ENABLE_ENCRYPTION
static void *ossl_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return lib_alloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    if (n == 0) { /* CRYPTO_realloc's contract: free, and NULL */
        lib_free(p);
        return NULL;
    }
    return lib_realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
    (void)file, (void)line;
    lib_free(p);
}
#endif

uas_status uas_mem_count_libraries(void)
{
    ev_set_allocator(ev_hook);
#ifdef UAS_ENABLE_ENCRYPTION
    if (CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free) != 1)
        return UAS_BAD_INVALID_STATE;
#endif
    return UAS_GOOD;
}

/* libsodium's wipe; a build without it (policy None only) has libc's,
 * which the compiler may not drop either. */
void uas_wipe(void *p, size_t n)
{
    if (!p || !n)
        return;
#ifdef UAS_ENABLE_ENCRYPTION
    sodium_memzero(p, n);
#else
    explicit_bzero(p, n);
#endif
}

/* ---- arena ---- */

#define ARENA_ALIGN     alignof(max_align_t)
#define ARENA_MIN_BLOCK 4096u

struct uas_arena_block {
    uas_arena_block *next;
    size_t size; /* usable bytes after the header */
    alignas(max_align_t) uint8_t data[];
};

static size_t align_up(size_t n)
{
    return (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
}

void uas_arena_init(uas_arena *a, void *first, size_t first_size, size_t max_total)
{
    memset(a, 0, sizeof(*a));
    /* The caller's buffer may be unaligned: start at the first aligned byte. */
    if (first && first_size > 0) {
        uintptr_t p = (uintptr_t)first;
        uintptr_t q = (p + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1);
        if (q - p < first_size) {
            a->first = (uint8_t *)q;
            a->first_size = first_size - (q - p);
        }
    }
    a->max_total = max_total;
    a->pos = a->first;
    a->end = a->first ? a->first + a->first_size : NULL;
}

/* Move to a recycled block that fits, or allocate a new one. */
static bool arena_grow(uas_arena *a, size_t need)
{
    /* Blocks after cur in the list were filled before a reset and are free. */
    for (uas_arena_block *b = a->cur ? a->cur->next : a->blocks; b; b = b->next) {
        if (b->size >= need) {
            /* Move b right after cur so the free ones stay behind it. */
            uas_arena_block **pp = a->cur ? &a->cur->next : &a->blocks;
            uas_arena_block **bp = pp;
            while (*bp != b)
                bp = &(*bp)->next;
            *bp = b->next;
            b->next = *pp;
            *pp = b;
            a->cur = b;
            a->pos = b->data;
            a->end = b->data + b->size;
            return true;
        }
    }
    /* The block header is added below: a need close to SIZE_MAX must not
     * wrap around into a tiny allocation. */
    if (need > SIZE_MAX - sizeof(uas_arena_block))
        return false;
    size_t size = need > ARENA_MIN_BLOCK ? need : ARENA_MIN_BLOCK;
    size_t last = a->cur ? a->cur->size : a->first_size;
    if (size < last * 2 && last * 2 <= (size_t)1 << 24)
        size = last * 2; /* geometric growth keeps the block count logarithmic */
    if (a->max_total) {
        /* Compared as room left, so heap_total + need cannot overflow. */
        size_t room = a->heap_total < a->max_total ? a->max_total - a->heap_total : 0;
        if (need > room)
            return false;
        if (size > room)
            size = need;
    }
    uas_arena_block *b = uas_malloc(sizeof(uas_arena_block) + size);
    if (!b)
        return false;
    b->size = size;
    uas_arena_block **pp = a->cur ? &a->cur->next : &a->blocks;
    b->next = *pp;
    *pp = b;
    a->cur = b;
    a->heap_total += size;
    a->pos = b->data;
    a->end = b->data + size;
    return true;
}

void *uas_arena_alloc(uas_arena *a, size_t size)
{
    size_t n = align_up(size ? size : 1);
    if (n < size)
        return NULL;
    if (!a->pos || (size_t)(a->end - a->pos) < n) {
        if (!arena_grow(a, n))
            return NULL;
    }
    void *p = a->pos;
    a->pos += n;
    a->used += n;
    return p;
}

void *uas_arena_calloc(uas_arena *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = uas_arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void uas_arena_reset(uas_arena *a)
{
    /* Keep only the largest heap block: a warm arena then serves the usual
     * request size without the heap, and one outsized request cannot pin all
     * of its blocks. */
    uas_arena_block *keep = NULL;
    for (uas_arena_block *b = a->blocks; b; b = b->next)
        if (!keep || b->size > keep->size)
            keep = b;
    uas_arena_block *b = a->blocks;
    while (b) {
        uas_arena_block *next = b->next;
        if (b != keep) {
            a->heap_total -= b->size;
            uas_free(b, sizeof(uas_arena_block) + b->size);
        }
        b = next;
    }
    a->blocks = keep;
    if (keep)
        keep->next = NULL;
    a->cur = NULL;
    a->used = 0;
    a->pos = a->first;
    a->end = a->first ? a->first + a->first_size : NULL;
}

void uas_arena_free(uas_arena *a)
{
    uas_arena_block *b = a->blocks;
    while (b) {
        uas_arena_block *next = b->next;
        uas_free(b, sizeof(uas_arena_block) + b->size);
        b = next;
    }
    a->blocks = NULL;
    a->cur = NULL;
    a->heap_total = 0;
    a->used = 0;
    a->pos = a->first;
    a->end = a->first ? a->first + a->first_size : NULL;
}
