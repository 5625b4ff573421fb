/* Domain event feeds: routing rate and a push source's consume rate.
 *   route_type   eddy_domain_route of N CloudEvents (default 200,000; ~120-byte msgpack data)
 *                through a live domain feed registered with a type filter that half of them
 *                match (the others come back FILTERED, never decoded). No Redis work, so no
 *                hiredis counterpart: printed as `bench domain_route_type eddy=<events/s>`.
 *   route_data   the same with a data-field filter (amount > 100, read by eddy_msgpack_reader)
 *                that about half of them match: `bench domain_route_data eddy=<events/s>`.
 *   push         a push source (automatic, go-live) consuming N events published to a subject
 *                on Redis, through its competing AtLeastOnce group, routing each into its domain
 *                feed and acknowledging it; beside the foundation's raw hiredis consume
 *                (XREADGROUP COUNT 64 + one XACK per batch, bench_raw_consume) of the very same
 *                stream entries with a group of its own, in the same run:
 *                `bench push_source_consume eddy=<x> hiredis=<y> ratio=<x/y>`.
 * Usage: bench_domain [redis://127.0.0.1:PORT] [events]; without a URL it starts its own
 * redis-server on a free loopback port. */
#include <msgpack.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/domain.h"
#include "eddy/push.h"
#include "eddy/value.h"

static int N = 200000;
#define BATCH 100

static void die(const char *what, const eddy_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->detail : "failed");
    exit(1);
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

/* The projection counts; the "decoded" event is the stored one itself (nothing to free). */
static atomic_long applied;

static eddy_status count_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                               void *user) {
    (void)event, (void)meta, (void)err, (void)user;
    atomic_fetch_add(&applied, 1);
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

/* Routes every event through a live domain feed registered with filter; events per second. */
static double route_rate(eddy_store *store, const char *id, eddy_filter *filter, eddy_event **evs) {
    eddy_feed_config cfg;
    feed_config(&cfg);
    eddy_domain_feed *feed;
    eddy_error err;
    eddy_projection p = counting();
    if (!filter || eddy_domain_new(store, &cfg, &feed, &err) != EDDY_OK ||
        eddy_domain_register(feed, id, &p, filter, &err) != EDDY_OK ||
        eddy_domain_go_live(feed, id, NULL, &err) != EDDY_OK)
        die("domain feed", &err);
    eddy_filter_free(filter);
    atomic_store(&applied, 0);
    long delivered = 0;
    double t0 = bench_now();
    for (int i = 0; i < N; i++) {
        eddy_route route;
        if (eddy_domain_route(feed, evs[i], NULL, &route, &err) != EDDY_OK)
            die("route", &err);
        delivered += route == EDDY_ROUTE_DELIVERED;
    }
    double rate = N / (bench_now() - t0);
    if (delivered != atomic_load(&applied) || delivered == 0 || delivered == N) {
        fprintf(stderr, "%s: %ld delivered, %ld applied of %d\n", id, delivered,
                atomic_load(&applied), N);
        exit(1);
    }
    eddy_domain_free(feed);
    return rate;
}

/* Publishes evs to "orders" on ns, then lets a push source consume them; events per second. */
static double push_rate(const char *url, const char *ns, eddy_event **evs) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.read_batch = 64;
    eddy_bus *bus, *pub;
    eddy_store *store;
    eddy_error err;
    if (eddy_bus_new(&s, NULL, 0, &bus, &err) != EDDY_OK ||
        eddy_bus_new(&s, NULL, 0, &pub, &err) != EDDY_OK ||
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
    spec.subject = "orders";
    spec.group = "bench";
    spec.go_live = true;
    if (eddy_push_sources_add(ps, &spec, &err) != EDDY_OK)
        die("push source", &err);
    /* The group first (created at the subscription's start), then the events, then consume. */
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        die("start", &err);
    eddy_bus_stop(bus);
    for (int i = 0; i < N; i += BATCH) {
        int n = N - i < BATCH ? N - i : BATCH;
        if (eddy_bus_publish_batch(pub, "orders", (const eddy_event *const *)evs + i, (size_t)n,
                                   NULL, &err) != EDDY_OK)
            die("publish", &err);
    }
    atomic_store(&applied, 0);
    double t0 = bench_now();
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        die("start", &err);
    struct timespec pause = {0, 1000000};
    while (atomic_load(&applied) < N)
        nanosleep(&pause, NULL);
    double rate = N / (bench_now() - t0);
    eddy_bus_stop(bus);
    eddy_push_sources_free(ps);
    eddy_domain_free(feed);
    eddy_store_close(store);
    eddy_bus_free(bus);
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
    if (N < 2) {
        fprintf(stderr, "events must be at least 2\n");
        return 2;
    }
    char ns[64];
    snprintf(ns, sizeof(ns), "bench-%ld", (long)time(NULL));
    eddy_event **evs = calloc((size_t)N, sizeof(*evs));
    for (int i = 0; i < N; i++)
        if (!evs || !(evs[i] = make(i)))
            die("events", NULL);

    /* Routing needs no backend work: a store on memory:// only satisfies the feed. */
    eddy_settings s;
    eddy_settings_init(&s);
    char mem[96];
    snprintf(mem, sizeof(mem), "memory://%s", ns);
    s.url = mem;
    s.ns = ns;
    eddy_store *store;
    eddy_error err;
    if (eddy_store_open(&s, &store, &err) != EDDY_OK)
        die("store", &err);
    const char *placed = "bench.order.placed.v1";
    double by_type = route_rate(store, "bench-type", eddy_filter_types(&placed, 1), evs);
    printf("bench domain_route_type eddy=%.0f\n", by_type);
    eddy_field hundred = eddy_field_int(100);
    double by_data =
        route_rate(store, "bench-data", eddy_filter_data("amount", EDDY_DATA_GT, &hundred), evs);
    printf("bench domain_route_data eddy=%.0f\n", by_data);
    fflush(stdout);
    eddy_store_close(store);

    double eddy_push = push_rate(url, ns, evs);
    /* The same stream entries, read by a group of its own. */
    char key[128];
    snprintf(key, sizeof(key), "{%s}:s:orders", ns);
    double raw = bench_raw_consume(port, key, N);
    bench_print("push_source_consume", eddy_push, raw);

    for (int i = 0; i < N; i++)
        eddy_event_free(evs[i]);
    free(evs);
    redisContext *c = bench_connect(port);
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    redisFree(c);
    bench_stop_redis(server);
    return 0;
}
