/* SPDX-License-Identifier: BSD-3-Clause */
/* Reconnect backoff for the front ends: how long to wait before the next attempt. */
#ifndef EDDY_SRC_BACKOFF_H
#define EDDY_SRC_BACKOFF_H

/* Delay in milliseconds before reconnect attempt `attempt` (0 for the first retry).
 *
 * The base delay is min_ms doubled once per attempt (min_ms, 2*min_ms, 4*min_ms, ...) and
 * capped at max_ms; the result is drawn uniformly from [base/2, base] so that clients which
 * lost the same server do not all come back at the same instant. A negative min_ms counts as
 * 0 (every delay is then 0) and a max_ms below min_ms counts as min_ms. Large attempts do not
 * overflow: the base simply stays at max_ms.
 *
 * The jitter comes from *seed, a rand_r-style state the function advances; seed it once per
 * connection (from the time, the pid, the address of the connection), not per call. A NULL
 * seed gives the base delay without jitter.
 *
 * Ownership: seed is borrowed for the call. Thread: any; no global state, so each thread or
 * connection keeps its own seed. */
long long eddy__backoff_delay_ms(unsigned attempt, long long min_ms, long long max_ms,
                                 unsigned *seed);

#endif
