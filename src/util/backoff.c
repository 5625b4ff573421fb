/* SPDX-License-Identifier: BSD-3-Clause */
/* Reconnect backoff: capped exponential delay with jitter, from caller-held state.
 *
 * The generator is local rather than rand_r: rand_r is obsolescent in POSIX and RAND_MAX may
 * be as small as 32767, too coarse for delays of minutes in milliseconds. Two 32-bit draws
 * make 64 bits, so the modulo below is uniform to within span/2^64, i.e. exactly for any
 * delay that matters. */
#include "util/backoff.h"

#include <stdint.h>

/* One LCG step (Numerical Recipes constants) on the caller's 32-bit state, then the murmur3
 * finaliser: a bare LCG's low bits cycle with short periods, and the modulo reads those bits. */
static uint32_t next(unsigned *seed) {
    uint32_t x = (uint32_t)*seed * 1664525u + 1013904223u;
    *seed = x;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

long long eddy__backoff_delay_ms(unsigned attempt, long long min_ms, long long max_ms,
                                 unsigned *seed) {
    if (min_ms < 0)
        min_ms = 0;
    if (max_ms < min_ms)
        max_ms = min_ms;

    /* Double step by step and stop at the cap, instead of shifting by attempt: the shift
     * overflows (undefined for signed values) long before attempt runs out. */
    long long base = min_ms;
    for (unsigned i = 0; i < attempt && base > 0 && base < max_ms; i++)
        base = base > max_ms / 2 ? max_ms : base * 2;
    if (base > max_ms)
        base = max_ms;

    if (!seed || base == 0)
        return base;
    long long low = base / 2;
    uint64_t span = (uint64_t)(base - low) + 1;
    uint64_t r = (uint64_t)next(seed) << 32 | next(seed);
    return low + (long long)(r % span);
}

/* Past the cap of any reconnect range (eddy__backoff_delay_ms stops doubling there). */
#define ATTEMPT_LONGEST 64

void eddy__reconnect_init(eddy__reconnect *g, unsigned seed) {
    g->attempt = 0;
    g->not_before = 0;
    g->seed = seed;
    g->proved = false;
}

long long eddy__reconnect_wait_ms(const eddy__reconnect *g, long long now) {
    return g->not_before > now ? g->not_before - now : 0;
}

void eddy__reconnect_started(eddy__reconnect *g, long long now, bool proved, long long min_ms,
                             long long max_ms) {
    if (proved || g->proved)
        g->attempt = 0;
    g->proved = false;
    g->not_before = now + eddy__backoff_delay_ms(g->attempt, min_ms, max_ms, &g->seed);
    if (g->attempt < ATTEMPT_LONGEST)
        g->attempt++;
}

void eddy__reconnect_proved(eddy__reconnect *g) { g->proved = true; }

void eddy__reconnect_failed(eddy__reconnect *g, eddy_status st) {
    if (st == EDDY_ERR_AUTH)
        g->attempt = ATTEMPT_LONGEST;
}
