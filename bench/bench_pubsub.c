/* Publish/subscribe throughput, eddy beside raw hiredis doing the same Redis commands in the
 * same run:
 *   publish     200,000 events (~120-byte payload), pipelined 100 at a time: XADD with the
 *               same fields eddy writes
 *   consume     a competing group reading and acknowledging 200,000 stored events:
 *               XREADGROUP COUNT 64 then one XACK per batch
 *   memory      publish->handle through memory:// (no Redis work, so no hiredis
 *               counterpart: printed as `bench memory_publish_to_handle eddy=<x>`)
 * Usage: bench_pubsub [redis://127.0.0.1:PORT] [events]; without a URL it starts its own
 * redis-server on a free loopback port. Results are events per second. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/blocking.h"

static int N = 200000;
#define BATCH 100

static eddy_event *make(int i) {
    eddy_event *ev = eddy_event_new();
    char id[32];
    snprintf(id, sizeof(id), "ev-%d", i);
    eddy_event_set_id(ev, id);
    eddy_event_set_source(ev, "/bench");
    eddy_event_set_type(ev, "bench.order.placed.v1");
    char data[121];
    memset(data, 'p', 120);
    data[120] = '\0';
    eddy_event_set_data(ev, data, 120);
    return ev;
}

static double raw_publish(int port, const char *key) {
    redisContext *c = bench_connect(port);
    char data[121];
    memset(data, 'p', 120);
    data[120] = '\0';
    double t0 = bench_now();
    for (int i = 0; i < N; i += BATCH) {
        for (int j = i; j < i + BATCH && j < N; j++)
            redisAppendCommand(c,
                               "XADD %s * specversion 1.0 id ev-%d source /bench type "
                               "bench.order.placed.v1 data %b",
                               key, j, data, (size_t)120);
        for (int j = i; j < i + BATCH && j < N; j++) {
            void *r;
            if (redisGetReply(c, &r) != REDIS_OK)
                exit(1);
            freeReplyObject(r);
        }
    }
    double rate = N / (bench_now() - t0);
    redisFree(c);
    return rate;
}

static double eddy_publish(const char *url, const char *ns) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(&s, NULL, 0, &bus, &err) != EDDY_OK) {
        fprintf(stderr, "%s\n", err.detail);
        exit(1);
    }
    eddy_event *evs[BATCH];
    for (int j = 0; j < BATCH; j++)
        evs[j] = make(j);
    double t0 = bench_now();
    for (int i = 0; i < N; i += BATCH)
        if (eddy_bus_publish_batch(bus, "orders", (const eddy_event *const *)evs, BATCH, NULL,
                                   &err) != EDDY_OK) {
            fprintf(stderr, "%s\n", err.detail);
            exit(1);
        }
    double rate = N / (bench_now() - t0);
    for (int j = 0; j < BATCH; j++)
        eddy_event_free(evs[j]);
    eddy_bus_free(bus);
    return rate;
}

static atomic_int handled;

static eddy_status count(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

/* Subscribes first, then publishes N (through a second bus), and waits for all handled. When
 * prefilled, the events are already stored and only the consumption is timed. */
static double eddy_consume(const char *url, const char *ns, bool prefilled_by_publish) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.read_batch = 64;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "count";
    sp.pattern = "orders";
    sp.group = "bench";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = count;
    eddy_bus *sub, *pub;
    eddy_error err;
    if (eddy_bus_new(&s, &sp, 1, &sub, &err) != EDDY_OK || eddy_bus_new(&s, NULL, 0, &pub, &err)) {
        fprintf(stderr, "%s\n", err.detail);
        exit(1);
    }
    atomic_store(&handled, 0);
    double t0 = 0;
    if (prefilled_by_publish) {
        /* Group first (at the subscription's start), then fill, then consume. */
        eddy_bus_start(sub, &err);
        eddy_bus_stop(sub);
    } else {
        eddy_bus_start(sub, &err);
        t0 = bench_now();
    }
    eddy_event *evs[BATCH];
    for (int j = 0; j < BATCH; j++)
        evs[j] = make(j);
    for (int i = 0; i < N; i += BATCH)
        eddy_bus_publish_batch(pub, "orders", (const eddy_event *const *)evs, BATCH, NULL, &err);
    for (int j = 0; j < BATCH; j++)
        eddy_event_free(evs[j]);
    if (prefilled_by_publish) {
        t0 = bench_now();
        eddy_bus_start(sub, &err);
    }
    struct timespec pause = {0, 1000000};
    while (atomic_load(&handled) < N)
        nanosleep(&pause, NULL);
    double rate = N / (bench_now() - t0);
    eddy_bus_free(sub);
    eddy_bus_free(pub);
    return rate;
}

int main(int argc, char **argv) {
    char url[128];
    int port = 0;
    pid_t server = 0;
    if (argc > 1) {
        snprintf(url, sizeof(url), "%s", argv[1]);
        if (sscanf(url, "redis://127.0.0.1:%d", &port) != 1) {
            fprintf(stderr, "usage: %s [redis://127.0.0.1:PORT] [events]\n", argv[0]);
            return 2;
        }
    } else if (!(server = bench_start_redis(url, sizeof(url), &port))) {
        fprintf(stderr, "could not start redis-server\n");
        return 1;
    }
    if (argc > 2)
        N = atoi(argv[2]);
    char ns[64];
    snprintf(ns, sizeof(ns), "bench-%ld", (long)time(NULL));

    double raw_pub = raw_publish(port, "rawbench:orders");
    double eddy_pub = eddy_publish(url, ns);
    bench_print("publish_pipelined", eddy_pub, raw_pub);

    double raw_con = bench_raw_consume(port, "rawbench:orders", N);
    char ns2[80];
    snprintf(ns2, sizeof(ns2), "%s-consume", ns);
    double eddy_con = eddy_consume(url, ns2, true);
    bench_print("consume_ack", eddy_con, raw_con);

    char mem[96];
    snprintf(mem, sizeof(mem), "memory://%s", ns);
    double mem_rate = eddy_consume(mem, ns, false);
    /* No Redis work to compare with: the in-process backend's own rate. */
    printf("bench memory_publish_to_handle eddy=%.0f\n", mem_rate);

    redisContext *c = bench_connect(port);
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    redisFree(c);
    bench_stop_redis(server);
    return 0;
}
