/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy bench's latency histogram (bench_hist.h). A value v >= 2^SUB_BITS with highest set bit
 * msb goes to bucket shift * HALF + (v >> shift), shift = msb - SUB_BITS + 1, whose top
 * (v >> shift) lies in [HALF, 2 * HALF): consecutive powers of two follow each other with no
 * gap and no overlap, and values below 2^SUB_BITS are their own bucket. */
#include "bench_hist.h"

#include <string.h>

void bench_hist_init(bench_hist *h) {
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v) {
    if (v < (1u << BENCH_HIST_SUB_BITS))
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - BENCH_HIST_SUB_BITS + 1;
    return shift * BENCH_HIST_HALF + (unsigned)(v >> shift);
}

/* The highest value that falls in bucket b. */
static uint64_t bucket_top(unsigned b) {
    if (b < (1u << BENCH_HIST_SUB_BITS))
        return b;
    unsigned shift = b / BENCH_HIST_HALF - 1;
    uint64_t top = b - shift * BENCH_HIST_HALF; /* in [HALF, 2 * HALF) */
    return ((top + 1) << shift) - 1;
}

void bench_hist_record(bench_hist *h, uint64_t v) {
    h->buckets[bucket_of(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void bench_hist_merge(bench_hist *into, const bench_hist *from) {
    for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t bench_hist_percentile(const bench_hist *h, double p) {
    if (h->count == 0)
        return 0;
    double exact = p / 100.0 * (double)h->count;
    uint64_t rank = (uint64_t)exact;
    if ((double)rank < exact)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank >= h->count)
        return h->max;
    uint64_t seen = 0;
    for (unsigned b = 0; b < BENCH_HIST_BUCKETS; b++) {
        seen += h->buckets[b];
        if (seen >= rank) {
            uint64_t v = bucket_top(b);
            return v > h->max ? h->max : v < h->min ? h->min : v;
        }
    }
    return h->max;
}
