/* SPDX-License-Identifier: BSD-3-Clause */
/* Reconnect backoff: the un-jittered schedule (doubling, cap, clamping, no overflow at any
 * attempt), then the jitter: always inside [base/2, base], reproducible from the seed, kept in
 * the caller's seed only, and spread evenly enough to de-synchronise clients. */
#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>

#include "util/backoff.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct row {
    unsigned attempt;
    long long min_ms, max_ms, want;
};

static const struct row schedule[] = {
    {0, 100, 10000, 100},
    {1, 100, 10000, 200},
    {2, 100, 10000, 400},
    {6, 100, 10000, 6400},
    {7, 100, 10000, 10000}, /* 12800 capped */
    {8, 100, 10000, 10000},
    {4, 100, 1000, 1000}, /* 1600 capped to a max that is not min * 2^k */
    {3, 100, 1000, 800},
    {0, 5, 5, 5},
    {9, 5, 5, 5},
    {0, 1, LLONG_MAX, 1},
    {10, 1, LLONG_MAX, 1024},
    {62, 1, LLONG_MAX, 1LL << 62},
    {63, 1, LLONG_MAX, LLONG_MAX}, /* 2^63 does not fit: capped, without overflowing */
    {64, 1, LLONG_MAX, LLONG_MAX},
    {UINT_MAX, 1, LLONG_MAX, LLONG_MAX},
    {UINT_MAX, 250, 30000, 30000},
    {1, LLONG_MAX / 2 + 1, LLONG_MAX, LLONG_MAX},
    {0, 0, 1000, 0}, /* a zero minimum never grows */
    {UINT_MAX, 0, 1000, 0},
    {3, -50, 1000, 0}, /* a negative minimum counts as 0 */
    {0, 100, 10, 100}, /* a max below min counts as min */
    {5, 100, -1, 100}, /* ... even a negative one */
    {2, -5, -10, 0},   /* both clamped */
};

Test(backoff, schedule_without_jitter) {
    for (size_t i = 0; i < N(schedule); i++) {
        const struct row *r = &schedule[i];
        long long got = eddy__backoff_delay_ms(r->attempt, r->min_ms, r->max_ms, NULL);
        cr_expect_eq(got, r->want, "attempt %u, min %lld, max %lld: %lld, want %lld", r->attempt,
                     r->min_ms, r->max_ms, got, r->want);
    }
}

Test(backoff, jitter_stays_in_half_to_full) {
    unsigned seed = 12345;
    for (size_t i = 0; i < N(schedule); i++) {
        const struct row *r = &schedule[i];
        for (int k = 0; k < 200; k++) {
            long long got = eddy__backoff_delay_ms(r->attempt, r->min_ms, r->max_ms, &seed);
            cr_expect(got >= r->want / 2 && got <= r->want,
                      "attempt %u, min %lld, max %lld: %lld outside [%lld, %lld]", r->attempt,
                      r->min_ms, r->max_ms, got, r->want / 2, r->want);
        }
    }
}

/* A zero delay needs no randomness, so it leaves the seed alone; any other draw advances it. */
Test(backoff, seed_advances_only_when_drawn) {
    unsigned seed = 7;
    eddy__backoff_delay_ms(0, 0, 100, &seed);
    cr_expect_eq(seed, 7u);
    eddy__backoff_delay_ms(0, 10, 100, &seed);
    cr_expect_neq(seed, 7u);
}

Test(backoff, reproducible_and_private_to_the_seed) {
    long long a[64], b[64];
    unsigned s1 = 42, s2 = 42, other = 99;
    for (int i = 0; i < 64; i++) {
        a[i] = eddy__backoff_delay_ms((unsigned)i % 12, 100, 60000, &s1);
        /* Draws from an unrelated seed in between must not change the sequence: no global
         * state. */
        eddy__backoff_delay_ms(3, 100, 60000, &other);
    }
    for (int i = 0; i < 64; i++)
        b[i] = eddy__backoff_delay_ms((unsigned)i % 12, 100, 60000, &s2);
    cr_expect(memcmp(a, b, sizeof(a)) == 0, "same seed, different delays");
    cr_expect_eq(s1, s2);

    /* Different seeds give different first draws, or clients would reconnect in lockstep. */
    int distinct = 0;
    unsigned first = 1;
    long long prev = eddy__backoff_delay_ms(4, 100, 60000, &first);
    for (unsigned s = 2; s < 100; s++) {
        unsigned seed = s;
        long long d = eddy__backoff_delay_ms(4, 100, 60000, &seed);
        distinct += d != prev;
        prev = d;
    }
    cr_expect_gt(distinct, 90, "only %d of 98 consecutive seeds changed the delay", distinct);
}

/* Every value of [base/2, base] comes up about equally often, including both ends. */
Test(backoff, jitter_is_uniform) {
    enum { DRAWS = 60000 };
    unsigned seed = 0;  /* zero is a valid seed */
    long long base = 9; /* values 4..9: six buckets of ~10000 */
    long counts[10] = {0};
    for (int i = 0; i < DRAWS; i++) {
        long long d = eddy__backoff_delay_ms(0, base, base, &seed);
        cr_assert(d >= 4 && d <= 9, "%lld", d);
        counts[d]++;
    }
    for (int v = 4; v <= 9; v++)
        cr_expect(counts[v] > 9400 && counts[v] < 10600, "value %d drawn %ld times of %d", v,
                  counts[v], DRAWS);

    /* A one-millisecond base still jitters, between 0 and 1. */
    long ones = 0;
    for (int i = 0; i < 1000; i++)
        ones += eddy__backoff_delay_ms(0, 1, 1, &seed);
    cr_expect(ones > 400 && ones < 600, "%ld of 1000 draws were 1", ones);
}

/* Large delays use the whole range, not just the first 2^15 or 2^32 values of it. */
Test(backoff, jitter_covers_large_ranges) {
    unsigned seed = 2024;
    long long base = 1LL << 40;
    long long lo = base, hi = 0;
    double sum = 0;
    for (int i = 0; i < 4000; i++) {
        long long d = eddy__backoff_delay_ms(40, 1, LLONG_MAX, &seed);
        cr_assert(d >= base / 2 && d <= base, "%lld", d);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
        sum += (double)d;
    }
    double span = (double)(base / 2);
    cr_expect((double)(lo - base / 2) < span * 0.01, "lowest draw %lld", lo);
    cr_expect((double)(base - hi) < span * 0.01, "highest draw %lld", hi);
    double mean = sum / 4000;
    cr_expect(mean > (double)base * 0.74 && mean < (double)base * 0.76, "mean %.0f of base %lld",
              mean, base);
}

/* ---- the reconnect gate (eddy__reconnect) ------------------------------------------------- */

Test(reconnect, the_first_connect_does_not_wait) {
    eddy__reconnect g;
    eddy__reconnect_init(&g, 7);
    cr_expect_eq(eddy__reconnect_wait_ms(&g, 1000), 0);
}

Test(reconnect, a_connect_that_did_not_prove_itself_makes_the_next_wait_longer) {
    eddy__reconnect g;
    eddy__reconnect_init(&g, 7);
    long long now = 1000;
    /* A storm: each connection comes up and is given up at once (a cluster redirect right
     * after the handshake), so none proves itself. No reconnect may start within the backoff
     * of the previous one, and the backoff grows to the cap. */
    long long prev = -1, last_gap = 0;
    for (int i = 0; i < 20; i++) {
        now += eddy__reconnect_wait_ms(&g, now);
        if (prev >= 0) {
            long long gap = now - prev;
            cr_expect_geq(gap, 25, "connect %d came %lld ms after the previous one", i, gap);
            last_gap = gap;
        }
        prev = now;
        eddy__reconnect_started(&g, now, false, 50, 2000);
        now += 1; /* up, then lost 1 ms later */
    }
    cr_expect_geq(last_gap, 1000, "the backoff reached the cap's range: %lld", last_gap);
    cr_expect_leq(last_gap, 2001);
}

Test(reconnect, a_connection_that_proved_itself_starts_again_from_the_shortest) {
    eddy__reconnect g;
    eddy__reconnect_init(&g, 3);
    long long now = 0;
    for (int i = 0; i < 10; i++) {
        now += eddy__reconnect_wait_ms(&g, now);
        eddy__reconnect_started(&g, now, false, 50, 2000);
    }
    now += eddy__reconnect_wait_ms(&g, now);
    eddy__reconnect_started(&g, now, true, 50, 2000);
    long long wait = eddy__reconnect_wait_ms(&g, now);
    cr_expect(wait >= 25 && wait <= 50, "%lld", wait);
    /* Long after: no wait at all. */
    cr_expect_eq(eddy__reconnect_wait_ms(&g, now + 60000), 0);
}

Test(reconnect, refused_credentials_wait_the_longest) {
    eddy__reconnect g;
    eddy__reconnect_init(&g, 5);
    eddy__reconnect_started(&g, 0, false, 50, 2000);
    eddy__reconnect_failed(&g, EDDY_ERR_AUTH);
    long long now = eddy__reconnect_wait_ms(&g, 0);
    eddy__reconnect_started(&g, now, false, 50, 2000);
    long long wait = eddy__reconnect_wait_ms(&g, now);
    cr_expect(wait >= 1000 && wait <= 2000, "%lld", wait);
    eddy__reconnect_failed(&g, EDDY_ERR_IO); /* other failures keep the step */
    cr_expect_eq(eddy__reconnect_wait_ms(&g, now), wait);
}
