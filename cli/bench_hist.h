/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy bench's latency histogram, HDR-style: values (nanoseconds) below 256 each have a bucket
 * of their own; above, every power of two is cut into 128 equal buckets, so a percentile is
 * within 1/128 (0.8%) of the value it stands for, whatever the number of samples, in a fixed
 * 56 KiB. Exact minimum, maximum and sum are kept beside it. Not thread-safe: one per thread,
 * merged at the end. */
#ifndef EDDY_CLI_BENCH_HIST_H
#define EDDY_CLI_BENCH_HIST_H

#include <stdint.h>

#define BENCH_HIST_SUB_BITS 8
#define BENCH_HIST_HALF (1u << (BENCH_HIST_SUB_BITS - 1))
#define BENCH_HIST_BUCKETS ((64 - BENCH_HIST_SUB_BITS + 1) * BENCH_HIST_HALF + BENCH_HIST_HALF)

typedef struct bench_hist {
    uint64_t count, sum, min, max;
    uint64_t buckets[BENCH_HIST_BUCKETS];
} bench_hist;

void bench_hist_init(bench_hist *h);
void bench_hist_record(bench_hist *h, uint64_t value);
/* Adds from's samples to into. */
void bench_hist_merge(bench_hist *into, const bench_hist *from);
/* The nearest-rank percentile (0 < p <= 100): the smallest recorded value v such that at least
 * p% of the samples are <= v, as the highest value of v's bucket, never above the maximum nor
 * below the minimum. 0 when empty. */
uint64_t bench_hist_percentile(const bench_hist *h, double p);

#endif
