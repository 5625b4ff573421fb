/* SPDX-License-Identifier: BSD-3-Clause */
/* The feed scenario's read model, shared by the listener (worker_feed.c) and the reference fold
 * the suite computes from the store (scenario_feed.c). */
#ifndef EDDY_FAULTS_FEED_H
#define EDDY_FAULTS_FEED_H

#include <stdint.h>

/* Store streams "o0" .. "o<FX_FEED_STREAMS - 1>". */
#define FX_FEED_STREAMS 16

/* One event folded in: order-sensitive, and applying an event twice changes the result. */
static inline uint64_t fx_feed_fold(uint64_t fold, long long version, long long value) {
    return fold * 1000003u + (uint64_t)version * 31u + (uint64_t)value;
}

#endif
