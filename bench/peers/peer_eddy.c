/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy's side of the peer comparison (bench/peers/run.sh runs it beside redis-py and ioredis
 * against the same server): one repetition of
 *   publish   N bench events (eddy's fields: id ev-<i>, source /bench, type
 *             bench.order.placed.v1, 120 bytes of data), eddy_bus_publish_batch 256 at a time;
 *   consume   those N entries through a competing AtLeastOnce subscription (blocking front end,
 *             default workers, read_batch 256), timed from eddy_bus_start to the N-th handler
 *             call.
 * Usage: bench_peer_eddy redis://127.0.0.1:PORT N NAMESPACE; prints `eddy publish=<x>
 * consume=<y>` (per second). */
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "eddy/blocking.h"

static long N;
static atomic_long handled;
static sem_t all_handled;

static eddy_status count(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    if (atomic_fetch_add(&handled, 1) + 1 == N)
        sem_post(&all_handled);
    return EDDY_OK;
}

int main(int argc, char **argv) {
    if (argc != 4 || (N = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: %s redis://127.0.0.1:PORT N NAMESPACE\n", argv[0]);
        return 2;
    }
    sem_init(&all_handled, 0, 0);
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = argv[1];
    s.ns = argv[3];
    s.read_batch = BENCH_BATCH;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "count";
    sp.pattern = "orders";
    sp.group = "bench";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = count;
    eddy_bus *sub, *pub;
    eddy_error err;
    if (eddy_bus_new(&s, &sp, 1, &sub, &err) != EDDY_OK ||
        eddy_bus_new(&s, NULL, 0, &pub, &err) != EDDY_OK)
        bench_die("eddy_bus_new", err.detail);
    /* The group first (made at the subscription's start), then the entries. */
    if (eddy_bus_start(sub, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    eddy_bus_stop(sub);

    eddy_event **evs = bench_events(N);
    double t0 = bench_now();
    for (long i = 0; i < N; i += BENCH_BATCH) {
        size_t k = N - i < BENCH_BATCH ? (size_t)(N - i) : BENCH_BATCH;
        if (eddy_bus_publish_batch(pub, "orders", (const eddy_event *const *)evs + i, k, NULL,
                                   &err) != EDDY_OK)
            bench_die("eddy_bus_publish_batch", err.detail);
    }
    double publish = (double)N / (bench_now() - t0);
    bench_events_free(evs, N);
    eddy_bus_free(pub);

    t0 = bench_now();
    if (eddy_bus_start(sub, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    while (sem_wait(&all_handled) != 0)
        ;
    double consume = (double)N / (bench_now() - t0);
    eddy_bus_free(sub);
    printf("eddy publish=%.0f consume=%.0f\n", publish, consume);
    sem_destroy(&all_handled);
    return 0;
}
