/* Log-linear histogram and round statistics. */
#include <stdlib.h>
#include <string.h>

#include <ua/loadgen.h>

void uas_hist_init(uas_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

/* Range 0 holds 0..31 exactly; range r >= 1 holds [2^(r+4), 2^(r+5)) in 32
 * equal steps. */
static void locate(uint64_t v, unsigned *range, unsigned *sub)
{
    if (v < UAS_HIST_SUB) {
        *range = 0;
        *sub = (unsigned)v;
        return;
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    if (msb > UAS_HIST_RANGES + 3) { /* beyond ~9 h in ns: clamp */
        *range = UAS_HIST_RANGES - 1;
        *sub = UAS_HIST_SUB - 1;
        return;
    }
    *range = msb - 4;
    *sub = (unsigned)(v >> (msb - 5)) & (UAS_HIST_SUB - 1);
}

static uint64_t upper_edge(unsigned range, unsigned sub)
{
    if (range == 0)
        return sub;
    unsigned msb = range + 4;
    return (((uint64_t)UAS_HIST_SUB + sub + 1) << (msb - 5)) - 1;
}

void uas_hist_add(uas_hist *h, uint64_t v)
{
    unsigned r, s;
    locate(v, &r, &s);
    h->counts[r][s]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void uas_hist_merge(uas_hist *dst, const uas_hist *src)
{
    for (unsigned r = 0; r < UAS_HIST_RANGES; r++)
        for (unsigned s = 0; s < UAS_HIST_SUB; s++)
            dst->counts[r][s] += src->counts[r][s];
    dst->total += src->total;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t uas_hist_quantile(const uas_hist *h, double q)
{
    if (h->total == 0)
        return 0;
    if (q <= 0)
        return h->min;
    /* The sample of rank ceil(q * total), 1-based. */
    uint64_t rank = (uint64_t)(q * (double)h->total);
    if ((double)rank < q * (double)h->total)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned r = 0; r < UAS_HIST_RANGES; r++) {
        for (unsigned s = 0; s < UAS_HIST_SUB; s++) {
            seen += h->counts[r][s];
            if (seen >= rank) {
                /* The clamp bucket has no upper edge but the maximum. */
                if (r == UAS_HIST_RANGES - 1 && s == UAS_HIST_SUB - 1)
                    return h->max;
                uint64_t edge = upper_edge(r, s);
                return edge > h->max ? h->max : edge;
            }
        }
    }
    return h->max;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void uas_stat_compute(const double *values, size_t n, uas_stat *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return;
    double sorted[64];
    size_t m = n > 64 ? 64 : n;
    memcpy(sorted, values, m * sizeof(double));
    qsort(sorted, m, sizeof(double), cmp_double);
    out->min = sorted[0];
    out->max = sorted[m - 1];
    out->median = m % 2 ? sorted[m / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
}

unsigned uas_round_variant(unsigned round, unsigned k, unsigned nvariants)
{
    return round % 2 ? nvariants - 1 - k : k;
}
