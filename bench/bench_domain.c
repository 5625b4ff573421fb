/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds: routing rate, and a push source's consume beside raw hiredis (repetitions,
 * medians, alternating order, pinning: bench_util.h).
 *   domain_route_type  eddy_domain_route of -n N CloudEvents (default 200,000; ~120-byte msgpack
 *                data) through a live domain feed registered with a type filter that half of them
 *                match (the others come back FILTERED, never decoded). No Redis work, so no
 *                hiredis counterpart: `bench domain_route_type eddy=<events/s>`.
 *   domain_route_data  the same with a data-field filter (amount > 100, read by
 *                eddy_msgpack_reader) that about half of them match.
 *   push_consume a push source (automatic, go-live; blocking front end, default workers,
 *                read_batch 256) consuming N events that eddy published (untimed) to a fresh
 *                subject, through its competing AtLeastOnce group, routing each into its domain
 *                feed and acknowledging it, timed from eddy_bus_start to the N-th apply; beside
 *                the raw consume at its best of the same kind of entries (published by eddy to a
 *                subject of its own): XREADGROUP COUNT 256, each batch's XACK pipelined with the
 *                next read. */
#include <msgpack.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/domain.h"
#include "eddy/msgpack.h"
#include "eddy/push.h"

static long N;

static void die(const char *what, const eddy_error *err) {
    bench_die(what, err ? err->detail : "failed");
}

static eddy_status pack_order(msgpack_packer *pk, void *user) {
    int i = *(const int *)user;
    msgpack_pack_map(pk, 3);
    msgpack_pack_str_with_body(pk, "order", 5);
    msgpack_pack_int(pk, i);
    msgpack_pack_str_with_body(pk, "amount", 6);
    msgpack_pack_int(pk, i % 200);
    msgpack_pack_str_with_body(pk, "note", 4);
    char note[96];
    memset(note, 'n', sizeof(note));
    msgpack_pack_str_with_body(pk, note, sizeof(note));
    return EDDY_OK;
}

static eddy_event *make(int i) {
    eddy_event *ev = eddy_event_new();
    char id[32];
    snprintf(id, sizeof(id), "ev-%d", i);
    eddy_event_set_id(ev, id);
    eddy_event_set_source(ev, "/bench");
    eddy_event_set_type(ev, i % 2 ? "bench.order.placed.v1" : "bench.order.shipped.v1");
    eddy_error err;
    if (eddy_event_set_value(ev, pack_order, &i, &err) != EDDY_OK)
        die("pack", &err);
    return ev;
}

/* The projection counts, and the push bench's waiter is woken at the N-th apply; the "decoded"
 * event is the stored one itself (nothing to free). */
static atomic_long applied;
static sem_t all_applied;

static eddy_status count_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                               void *user) {
    (void)event, (void)meta, (void)err;
    if (atomic_fetch_add(&applied, 1) + 1 == N && user)
        sem_post(&all_applied);
    return EDDY_OK;
}

static eddy_status decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                          eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    *event = (void *)stored;
    return EDDY_OK;
}

static const char *event_id(const void *event, void *user) {
    (void)user;
    return eddy_event_id(event);
}

static void feed_config(eddy_feed_config *cfg) {
    eddy_feed_config_init(cfg);
    cfg->decode = decode;
    cfg->event_id = event_id;
    cfg->reader = eddy_msgpack_reader();
}

static eddy_projection counting(void) {
    eddy_projection p = {0};
    p.apply = count_apply;
    return p;
}

/* One routing bench: the events, the store and the filter the feed is registered with. */
typedef struct route_bench {
    eddy_store *store;
    eddy_event **evs;
    const char *id;
    const eddy_filter *filter;
} route_bench;

/* Routes every event through a live domain feed registered with the filter; events per second. */
static void route_rate(const bench_env *env, int rep, double *out, void *user) {
    (void)env, (void)rep;
    const route_bench *b = user;
    eddy_feed_config cfg;
    feed_config(&cfg);
    eddy_domain_feed *feed;
    eddy_error err;
    eddy_projection p = counting();
    if (!b->filter || eddy_domain_new(b->store, &cfg, &feed, &err) != EDDY_OK ||
        eddy_domain_register(feed, b->id, &p, b->filter, &err) != EDDY_OK ||
        eddy_domain_go_live(feed, b->id, NULL, &err) != EDDY_OK)
        die("domain feed", &err);
    atomic_store(&applied, 0);
    long delivered = 0;
    double t0 = bench_now();
    for (long i = 0; i < N; i++) {
        eddy_route route;
        if (eddy_domain_route(feed, b->evs[i], NULL, &route, &err) != EDDY_OK)
            die("route", &err);
        delivered += route == EDDY_ROUTE_DELIVERED;
    }
    out[0] = (double)N / (bench_now() - t0);
    if (delivered != atomic_load(&applied) || delivered == 0 || delivered == N) {
        fprintf(stderr, "%s: %ld delivered, %ld applied of %ld\n", b->id, delivered,
                atomic_load(&applied), N);
        exit(1);
    }
    eddy_domain_free(feed);
}

static void route(const bench_env *env, const char *name, route_bench *b, eddy_filter *filter) {
    b->filter = filter;
    bench_side side = {"eddy", route_rate, b};
    double rate;
    bench_sides(env, &side, 1, 1, &rate);
    bench_print1(name, rate);
    eddy_filter_free(filter);
}

static void push_eddy(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    bench_ns(env, ns, sizeof(ns), "eddy", rep);
    eddy_settings s;
    bench_settings(env, &s, ns);
    eddy_bus *bus;
    eddy_store *store;
    eddy_error err;
    if (eddy_bus_new(&s, NULL, 0, &bus, &err) != EDDY_OK ||
        eddy_store_open(&s, &store, &err) != EDDY_OK)
        die("bus", &err);
    eddy_feed_config cfg;
    feed_config(&cfg);
    eddy_domain_feed *feed;
    if (eddy_domain_new(store, &cfg, &feed, &err) != EDDY_OK)
        die("domain feed", &err);
    eddy_push_options opts;
    eddy_push_options_init(&opts);
    eddy_push_sources *ps;
    if (eddy_push_sources_new(bus, &opts, &ps, &err) != EDDY_OK)
        die("push sources", &err);
    eddy_push_source_spec spec = {0};
    spec.id = "bench-push";
    spec.feed = feed;
    spec.projection = counting();
    spec.projection.user = &all_applied; /* wakes the waiter at the N-th apply */
    spec.subject = "orders";
    spec.group = "bench";
    spec.go_live = true;
    if (eddy_push_sources_add(ps, &spec, &err) != EDDY_OK)
        die("push source", &err);
    /* The group first (created at the subscription's start), then the events, then consume. */
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        die("start", &err);
    eddy_bus_stop(bus);
    bench_fill(&s, "orders", N);
    atomic_store(&applied, 0);
    double t0 = bench_now();
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        die("start", &err);
    while (sem_wait(&all_applied) != 0)
        ;
    out[0] = (double)N / (bench_now() - t0);
    eddy_bus_stop(bus);
    eddy_push_sources_free(ps);
    eddy_domain_free(feed);
    eddy_store_close(store);
    eddy_bus_free(bus);
}

static void push_raw(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96], key[128];
    bench_ns(env, ns, sizeof(ns), "raw", rep);
    bench_fill_for_raw(env, ns, N, key, sizeof(key));
    out[0] = (double)N / bench_raw_consume(env, key, "raw", N);
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 200000, NULL, NULL);
    N = env.n;
    if (N < 2)
        bench_die("-n", "at least 2 events");
    sem_init(&all_applied, 0, 0);
    eddy_event **evs = calloc((size_t)N, sizeof(*evs));
    for (long i = 0; i < N; i++)
        if (!evs || !(evs[i] = make((int)i)))
            die("events", NULL);

    /* Routing needs no backend work: a store on memory:// only satisfies the feed. */
    char ns[96], mem[128];
    bench_ns(&env, ns, sizeof(ns), "route", 0);
    snprintf(mem, sizeof(mem), "memory://%s", ns);
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = mem;
    s.ns = ns;
    eddy_store *store;
    eddy_error err;
    if (eddy_store_open(&s, &store, &err) != EDDY_OK)
        die("store", &err);
    const char *placed = "bench.order.placed.v1";
    route_bench by_type = {store, evs, "bench-type", NULL};
    route(&env, "domain_route_type", &by_type, eddy_filter_types(&placed, 1));
    eddy_field hundred = eddy_field_int(100);
    route_bench by_data = {store, evs, "bench-data", NULL};
    route(&env, "domain_route_data", &by_data, eddy_filter_data("amount", EDDY_DATA_GT, &hundred));
    eddy_store_close(store);
    for (long i = 0; i < N; i++)
        eddy_event_free(evs[i]);
    free(evs);

    bench_side sides[2] = {{"hiredis", push_raw, NULL}, {"eddy", push_eddy, NULL}};
    double m[2];
    bench_sides(&env, sides, 2, 1, m);
    bench_print_med("push_consume", 1, 0);

    sem_destroy(&all_applied);
    bench_teardown(&env);
    return 0;
}
