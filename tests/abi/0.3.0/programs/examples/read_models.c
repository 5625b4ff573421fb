/* SPDX-License-Identifier: BSD-3-Clause */
/* Two read models fed by push sources in manual mode, caught up in the background with a
 * progress bar, on the blocking front end.
 *
 *   read_models [--url URL] [--ns NAMESPACE] [--history N]
 *
 * With the default memory:// backend everything runs in this one process. With --url
 * redis://127.0.0.1:6379 (or EDDY_URL) it uses that server, in a namespace of its own per run
 * ("read-models-<pid>", or --ns).
 *
 * What happens:
 * 1. A history of N orders (default 20,000) is stored; each append also publishes the event to
 *    "orders" in the same atomic step. Nobody listens yet, so the history is only in the store.
 * 2. Two domain feeds, one per read model, each under a push source consuming "orders" through
 *    a group of its own: "revenue" (order.placed events: revenue per region) and "big-orders"
 *    (a data filter: amount > 900, read from the msgpack data). Manual mode: the sources
 *    subscribe at once, so the broker keeps every message from now on, but register nothing.
 * 3. Orders published now are handed back by both sources (nothing is registered): the broker
 *    keeps them, nothing is lost.
 * 4. eddy_push_sources_start_all registers both projections and starts their catch-ups in the
 *    background; it returns at once with the ids it started. The main thread draws a progress
 *    bar from the progress callback while the replays run, then both sources are live.
 * 5. The orders handed back in step 3 come again and are applied; more live orders follow. The
 *    program waits until both read models have every order, prints them and ends.
 *
 * Delivery is at least once and a live copy of a replayed event may come (the feeds drop
 * duplicates they remember by event id), so the read models count each order id once. */
#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eddy/domain.h"
#include "eddy/msgpack.h"
#include "eddy/push.h"

#define REGIONS 4
static const char *const region_names[REGIONS] = {"north", "east", "south", "west"};
#define LIVE 200 /* orders published after the history: half before start-all, half after */

/* ---- the orders ------------------------------------------------------------------------- */

typedef struct order {
    int number;
    int region;
    long amount;
} order;

static order order_at(int i) {
    order o = {i, i % REGIONS, (long)((i * 7919) % 1000) + 1};
    return o;
}

static eddy_status pack_order(msgpack_packer *pk, void *user) {
    const order *o = user;
    msgpack_pack_map(pk, 3);
    msgpack_pack_str_with_body(pk, "order", 5);
    msgpack_pack_int(pk, o->number);
    msgpack_pack_str_with_body(pk, "region", 6);
    msgpack_pack_str_with_body(pk, region_names[o->region], strlen(region_names[o->region]));
    msgpack_pack_str_with_body(pk, "amount", 6);
    msgpack_pack_long(pk, o->amount);
    return EDDY_OK;
}

static eddy_event *order_event(int i) {
    order o = order_at(i);
    char id[32];
    snprintf(id, sizeof(id), "order-%d", i);
    eddy_event *ev = eddy_event_new();
    eddy_error err;
    if (!ev || eddy_event_set_id(ev, id) || eddy_event_set_source(ev, "/shop") ||
        eddy_event_set_type(ev, "order.placed") || eddy_event_set_subject(ev, id) ||
        eddy_event_set_value(ev, pack_order, &o, &err)) {
        fprintf(stderr, "cannot build order %d\n", i);
        exit(1);
    }
    return ev;
}

/* ---- the read models -------------------------------------------------------------------- */

/* Both projections receive the decoded order; seen[] makes applying one twice a no-op. */
typedef struct read_model {
    pthread_mutex_t lock; /* apply runs on the replay's thread and on the bus's workers */
    unsigned char *seen;  /* by order number */
    int orders;
    long revenue[REGIONS];
} read_model;

static read_model revenue = {.lock = PTHREAD_MUTEX_INITIALIZER};
static read_model big_orders = {.lock = PTHREAD_MUTEX_INITIALIZER};

static eddy_status apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta, (void)err;
    read_model *m = user;
    const order *o = event;
    pthread_mutex_lock(&m->lock);
    if (!m->seen[o->number]) {
        m->seen[o->number] = 1;
        m->orders++;
        m->revenue[o->region] += o->amount;
    }
    pthread_mutex_unlock(&m->lock);
    return EDDY_OK;
}

static int orders_in(read_model *m) {
    pthread_mutex_lock(&m->lock);
    int n = m->orders;
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* The decoder: reads the order back from the msgpack data. */
typedef struct decoded {
    order o;
    char id[32];
} decoded;

static eddy_status decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                          eddy_error *err, void *user) {
    (void)meta, (void)user;
    eddy_value *v;
    eddy_status st = eddy_event_decode_value(stored, &v, err);
    if (st != EDDY_OK)
        return st;
    const msgpack_object *obj = eddy_value_object(v);
    decoded *d = calloc(1, sizeof(*d));
    if (!d || obj->type != MSGPACK_OBJECT_MAP) {
        free(d);
        eddy_value_free(v);
        snprintf(err->detail, sizeof(err->detail), "not an order");
        return d ? EDDY_ERR_MALFORMED : EDDY_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < obj->via.map.size; i++) {
        const msgpack_object_kv *kv = &obj->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            continue;
        const char *k = kv->key.via.str.ptr;
        uint32_t klen = kv->key.via.str.size;
        if (klen == 5 && memcmp(k, "order", 5) == 0)
            d->o.number = (int)kv->val.via.i64;
        else if (klen == 6 && memcmp(k, "amount", 6) == 0)
            d->o.amount = (long)kv->val.via.i64;
        else if (klen == 6 && memcmp(k, "region", 6) == 0)
            for (int r = 0; r < REGIONS; r++)
                if (kv->val.via.str.size == strlen(region_names[r]) &&
                    memcmp(kv->val.via.str.ptr, region_names[r], kv->val.via.str.size) == 0)
                    d->o.region = r;
    }
    snprintf(d->id, sizeof(d->id), "%s", eddy_event_id(stored));
    eddy_value_free(v);
    *event = d;
    return EDDY_OK;
}

static void free_event(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *event_id(const void *event, void *user) {
    (void)user;
    return ((const decoded *)event)->id;
}

/* ---- the progress bar ----------------------------------------------------------------------- */

static pthread_mutex_t bar_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_progress(const eddy_push_progress *p, void *user) {
    (void)user;
    pthread_mutex_lock(&bar_lock);
    switch (p->state) {
    case EDDY_PUSH_CATCHING_UP: {
        double done = p->head > 0 ? (double)p->position / (double)p->head : 0;
        int filled = (int)(done * 30);
        char bar[31];
        for (int i = 0; i < 30; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "  %-10s [%s] %5.1f%%  %llu replayed, %.0f/s", p->id, bar, done * 100,
                (unsigned long long)p->replayed, p->rate);
        if (p->eta_seconds >= 0)
            fprintf(stderr, ", %.1f s left", p->eta_seconds);
        fputc('\n', stderr);
        break;
    }
    case EDDY_PUSH_LIVE:
        fprintf(stderr, "  %-10s live (%llu replayed)\n", p->id, (unsigned long long)p->replayed);
        break;
    case EDDY_PUSH_FAILED:
        fprintf(stderr, "  %-10s FAILED: %s\n", p->id, p->failure.detail);
        break;
    case EDDY_PUSH_NOT_STARTED:
        break;
    }
    pthread_mutex_unlock(&bar_lock);
}

/* ---- the program ------------------------------------------------------------------------- */

static void check(eddy_status st, const eddy_error *err, const char *what) {
    if (st != EDDY_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, eddy_status_str(st), err ? err->detail : "");
        exit(1);
    }
}

static void publish_orders(eddy_bus *bus, int from, int to) {
    for (int i = from; i < to; i++) {
        eddy_event *ev = order_event(i);
        eddy_error err;
        check(eddy_bus_publish(bus, "orders", ev, NULL, 0, &err), &err, "publish");
        eddy_event_free(ev);
    }
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--url URL] [--ns NAMESPACE] [--history N]\n", argv[0]);
            return 0;
        }
    const char *url = getenv("EDDY_URL") ? getenv("EDDY_URL") : "memory://read-models";
    char ns[64];
    snprintf(ns, sizeof(ns), "read-models-%ld", (long)getpid());
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the progress bar (stderr) */
    int history = 20000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            url = argv[i + 1];
        else if (strcmp(argv[i], "--ns") == 0)
            snprintf(ns, sizeof(ns), "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--history") == 0)
            history = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--url URL] [--ns NAMESPACE] [--history N]\n", argv[0]);
            return 2;
        }
    }
    if (history < 1 || history > 10000000) {
        fprintf(stderr, "--history must be 1..10000000\n");
        return 2;
    }
    int total = history + LIVE;
    revenue.seen = calloc((size_t)total, 1);
    big_orders.seen = calloc((size_t)total, 1);
    if (!revenue.seen || !big_orders.seen)
        return 1;

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.instance = "read-models"; /* a restart recovers this consumer's pending messages */
    s.redelivery_idle_ms = 500; /* hand-backs come again quickly in this demo */
    eddy_error err;
    eddy_store *store;
    eddy_bus *bus;
    check(eddy_store_open(&s, &store, &err), &err, "store");
    check(eddy_bus_new(&s, NULL, 0, &bus, &err), &err, "bus");

    /* 1. The history, stored and published in one step each. */
    printf("storing %d orders...\n", history);
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    ao.publish_subject = "orders";
    for (int i = 0; i < history; i++) {
        char stream[32];
        snprintf(stream, sizeof(stream), "order-%d", i);
        eddy_event *ev = order_event(i);
        check(eddy_store_append(store, stream, (const eddy_event *const *)&ev, 1, &ao, NULL, &err),
              &err, "append");
        eddy_event_free(ev);
    }

    /* 2. Two domain feeds under push sources in manual mode, caught up in the background. */
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = decode;
    cfg.free_event = free_event;
    cfg.event_id = event_id;
    cfg.reader = eddy_msgpack_reader(); /* for the data filter */
    cfg.page_size = 512;
    eddy_domain_feed *revenue_feed, *big_feed;
    check(eddy_domain_new(store, &cfg, &revenue_feed, &err), &err, "revenue feed");
    check(eddy_domain_new(store, &cfg, &big_feed, &err), &err, "big-orders feed");

    eddy_push_options po;
    eddy_push_options_init(&po);
    po.mode = EDDY_PUSH_MANUAL;
    po.startup = EDDY_PUSH_BACKGROUND;
    po.progress = on_progress;
    po.progress_ms = 100;
    eddy_push_sources *sources;
    check(eddy_push_sources_new(bus, &po, &sources, &err), &err, "push sources");

    const char *placed = "order.placed";
    eddy_filter *by_type = eddy_filter_types(&placed, 1);
    eddy_field big = eddy_field_int(900);
    eddy_filter *big_amount = eddy_filter_and(eddy_filter_types(&placed, 1),
                                              eddy_filter_data("amount", EDDY_DATA_GT, &big));
    if (!by_type || !big_amount)
        return 1;

    eddy_push_source_spec spec = {0};
    spec.id = "revenue";
    spec.feed = revenue_feed;
    spec.projection.apply = apply;
    spec.projection.user = &revenue;
    spec.filter = by_type;
    spec.subject = "orders";
    spec.group = "revenue";
    check(eddy_push_sources_add(sources, &spec, &err), &err, "add revenue");
    spec.id = "big-orders";
    spec.feed = big_feed;
    spec.projection.user = &big_orders;
    spec.filter = big_amount;
    spec.group = "big-orders";
    check(eddy_push_sources_add(sources, &spec, &err), &err, "add big-orders");
    eddy_filter_free(by_type);
    eddy_filter_free(big_amount);
    check(eddy_bus_start(bus, &err), &err, "bus start");

    /* 3. Orders arriving before start-all: handed back, kept by the broker. */
    publish_orders(bus, history, history + LIVE / 2);
    sleep_ms(200);
    printf("before start-all: revenue has %d orders, big-orders %d (nothing registered yet)\n",
           orders_in(&revenue), orders_in(&big_orders));

    /* 4. Start both; the catch-ups run in the background. */
    const char **ids;
    size_t n;
    check(eddy_push_sources_start_all(sources, &ids, &n, &err), &err, "start-all");
    printf("started:");
    for (size_t i = 0; i < n; i++)
        printf(" %s", ids[i]);
    printf("\n");
    free(ids);
    check(eddy_push_sources_wait(sources, 600000), NULL, "catch-up");

    /* 5. More live orders, then wait until both models have everything. */
    publish_orders(bus, history + LIVE / 2, total);
    int want_big = 0;
    for (int i = 0; i < total; i++)
        want_big += order_at(i).amount > 900;
    for (int waited = 0; orders_in(&revenue) < total || orders_in(&big_orders) < want_big;
         waited += 50) {
        if (waited > 60000) {
            fprintf(stderr, "timed out: revenue %d/%d, big-orders %d/%d\n", orders_in(&revenue),
                    total, orders_in(&big_orders), want_big);
            return 1;
        }
        sleep_ms(50);
    }

    printf("revenue: %d orders\n", orders_in(&revenue));
    for (int r = 0; r < REGIONS; r++)
        printf("  %-6s %ld\n", region_names[r], revenue.revenue[r]);
    printf("big-orders: %d orders over 900\n", orders_in(&big_orders));

    eddy_bus_stop(bus);
    eddy_push_sources_free(sources);
    eddy_domain_free(revenue_feed);
    eddy_domain_free(big_feed);
    eddy_bus_free(bus);
    eddy_store_close(store);
    free(revenue.seen);
    free(big_orders.seen);
    return 0;
}
