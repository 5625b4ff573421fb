/* SPDX-License-Identifier: BSD-3-Clause */
/* An order-status read model kept up to date by a catch-up projection feed, on the blocking front
 * end: the history comes from the event store, live events from a competing bus subscription
 * whose handler feeds the feed, and the code that starts the feed rebuilds it after a failed
 * catch-up.
 *
 *   order_status [--url URL] [--ns NAMESPACE]
 *
 * With the default memory:// backend everything runs in this one process. With --url
 * redis://127.0.0.1:6379 (or EDDY_URL) it uses that server, in a namespace of its own per run
 * ("order-status-<pid>", or --ns): its keys are left there to look at.
 *
 * What happens:
 * 1. Three orders are stored, one stream each (appended with publish_subject, so every stored
 *    event is also published to "orders", in the same atomic step, with its stream id, version
 *    and position). One of them was refunded, which the first
 *    version of the projection does not know how to apply: a bug.
 * 2. A subscription starts listening to "orders"; its handler hands each event to the current
 *    feed (eddy_feed_handler). Applied events are acknowledged; refused ones are not, so they
 *    come back.
 * 3. start_feed() builds the feed and catches up: the replay fails on the refund. The feed now
 *    refuses everything, so the listener acknowledges nothing. A live event published meanwhile
 *    waits in the broker.
 * 4. The bug is fixed, and start_feed() runs again: a new feed with the same id, over a fresh
 *    read model, replays the whole history and goes live. The waiting live event comes back,
 *    is recognised as already replayed (same event id) and acknowledged; new events are applied
 *    as they arrive. The program prints the read model and ends.
 *
 * The read model lives in memory, so the feed has no checkpoint storage: a marker would tell
 * the next start to skip a replay that an empty model needs. A read model stored durably would
 * pass eddy_store_checkpoints(store) and replay only once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/store.h"

/* ---- the read model: the status of each order, and how many orders are in each status ---- */

#define MAX_ORDERS 64

typedef struct order_event {
    char id[64]; /* the CloudEvent id: what drops duplicates */
    char status[16];
} order_event;

typedef struct read_model {
    pthread_mutex_t lock; /* apply runs on the replay's thread and on listener threads */
    int n;
    char order[MAX_ORDERS][32];
    char status[MAX_ORDERS][16];
    long long version[MAX_ORDERS]; /* of the event that set the status */
    int applied;
} read_model;

static read_model model = {.lock = PTHREAD_MUTEX_INITIALIZER};
static atomic_bool refunds_supported; /* false: the bug step 3 shows */

static void model_reset(void) {
    pthread_mutex_lock(&model.lock);
    model.n = 0;
    model.applied = 0;
    pthread_mutex_unlock(&model.lock);
}

/* The projection is keyed by metadata: each order is an event-store stream, and the stream id
 * and version come with every event, replayed or live (eddy_feed_handler passes the metadata a
 * store append published with the event). Live events of one order may be applied out of order
 * (competing workers, redeliveries), so an order takes the status of the highest version seen:
 * the order of arrival does not matter, and an event applied twice changes nothing. */
static eddy_status apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)user;
    order_event *e = event;
    if (strcmp(e->status, "refunded") == 0 && !atomic_load(&refunds_supported)) {
        snprintf(err->detail, sizeof(err->detail), "no status transition for a refund (yet)");
        return EDDY_ERR_HANDLER_FAILED;
    }
    pthread_mutex_lock(&model.lock);
    int i = 0;
    while (i < model.n && strcmp(model.order[i], meta->stream_id) != 0)
        i++;
    eddy_status st = EDDY_OK;
    if (i == MAX_ORDERS) {
        snprintf(err->detail, sizeof(err->detail), "the example keeps %d orders", MAX_ORDERS);
        st = EDDY_ERR_TOO_LARGE;
    } else {
        if (i == model.n) {
            snprintf(model.order[model.n++], sizeof(model.order[0]), "%s", meta->stream_id);
            model.version[i] = 0;
        }
        if (meta->version > model.version[i]) {
            snprintf(model.status[i], sizeof(model.status[0]), "%s", e->status);
            model.version[i] = meta->version;
        }
        model.applied++;
    }
    pthread_mutex_unlock(&model.lock);
    return st;
}

static void replay_abandoned(void *user) {
    (void)user;
    model_reset(); /* whatever the replay applied is incomplete */
}

static void print_model(void) {
    pthread_mutex_lock(&model.lock);
    const char *statuses[] = {"placed", "paid", "shipped", "refunded"};
    printf("read model (%d events applied):\n", model.applied);
    for (int i = 0; i < model.n; i++)
        printf("  %-10s %s\n", model.order[i], model.status[i]);
    for (size_t s = 0; s < sizeof(statuses) / sizeof(statuses[0]); s++) {
        int k = 0;
        for (int i = 0; i < model.n; i++)
            k += strcmp(model.status[i], statuses[s]) == 0;
        printf("  %d %s", k, statuses[s]);
    }
    printf("\n");
    pthread_mutex_unlock(&model.lock);
}

/* ---- decoding stored and delivered CloudEvents ------------------------------------------ */

static eddy_status decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                          eddy_error *err, void *user) {
    (void)meta, (void)user;
    (void)err;
    const char *type = eddy_event_type(ev);
    if (strncmp(type, "order.", 6) != 0) {
        *out = NULL; /* not an order event: skipped (a listener acknowledges it) */
        return EDDY_OK;
    }
    order_event *e = calloc(1, sizeof(*e));
    if (!e)
        return EDDY_ERR_NOMEM;
    snprintf(e->id, sizeof(e->id), "%s", eddy_event_id(ev));
    snprintf(e->status, sizeof(e->status), "%s", type + 6);
    *out = e;
    return EDDY_OK;
}

static void free_event(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *event_id(const void *event, void *user) {
    (void)user;
    return ((const order_event *)event)->id;
}

/* ---- the feed, rebuilt by the code that starts it ------------------------------------------ */

static eddy_store *store;
static eddy_feed *feed;                                         /* the current one */
static pthread_rwlock_t feed_lock = PTHREAD_RWLOCK_INITIALIZER; /* handlers read, rebuilds write */

static void log_hook(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= EDDY_LOG_WARN)
        fprintf(stderr, "eddy: %s\n", msg);
}

/* Call at startup, and again once what made the catch-up fail is fixed. */
static bool start_feed(void) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "order-status";
    cfg.projection.apply = apply;
    cfg.projection.replay_abandoned = replay_abandoned;
    cfg.projection.keyed_by_metadata = true;
    cfg.decode = decode;
    cfg.free_event = free_event;
    cfg.event_id = event_id;
    cfg.log = log_hook;
    eddy_feed *next = NULL;
    eddy_error err;
    eddy_status st = eddy_feed_new(store, &cfg, &next, &err);
    if (st != EDDY_OK) {
        fprintf(stderr, "cannot build the feed: %s: %s\n", eddy_status_str(st), err.detail);
        return false;
    }
    model_reset(); /* the new feed replays the whole history into a fresh model */
    pthread_rwlock_wrlock(&feed_lock);
    eddy_feed *old = feed;
    feed = next;
    pthread_rwlock_unlock(&feed_lock);
    /* The old feed answers what it still holds with EDDY_ERR_CLOSED: not acknowledged, so
     * those events come back, to the new feed. */
    eddy_feed_free(old);
    st = eddy_feed_catch_up(next, NULL, &err);
    if (st != EDDY_OK) {
        /* The feed now refuses every event, so the listener acknowledges none of them. */
        fprintf(stderr, "the order-status catch-up failed: %s: %s\n", eddy_status_name(st),
                err.detail);
        return false;
    }
    printf("order-status caught up and is live\n");
    return true;
}

/* The subscription's handler: hands the delivery to whichever feed is current. */
static eddy_status to_current_feed(eddy_delivery *d, void *user) {
    (void)user;
    pthread_rwlock_rdlock(&feed_lock);
    eddy_status st = feed ? eddy_feed_handler(d, feed) : EDDY_ERR_NOT_READY;
    pthread_rwlock_unlock(&feed_lock);
    return st;
}

/* ---- writing orders ---------------------------------------------------------------------- */

static bool store_event(const char *order, const char *status) {
    static atomic_int seq;
    char id[64], type[32];
    snprintf(id, sizeof(id), "%s-%s-%d", order, status, atomic_fetch_add(&seq, 1));
    snprintf(type, sizeof(type), "order.%s", status);
    eddy_event *ev = eddy_event_new();
    if (!ev || eddy_event_set_id(ev, id) != EDDY_OK ||
        eddy_event_set_source(ev, "/examples/order_status") != EDDY_OK ||
        eddy_event_set_type(ev, type) != EDDY_OK) {
        eddy_event_free(ev);
        return false;
    }
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = "orders"; /* stored and published in one step */
    const eddy_event *evs[] = {ev};
    eddy_error err;
    eddy_status st = eddy_store_append(store, order, evs, 1, &o, NULL, &err);
    eddy_event_free(ev);
    if (st != EDDY_OK)
        fprintf(stderr, "append to %s: %s: %s\n", order, eddy_status_str(st), err.detail);
    return st == EDDY_OK;
}

static bool wait_for_handled(eddy_bus *bus, uint64_t n, int seconds) {
    struct timespec pause = {0, 20 * 1000000L};
    for (int i = 0; i < seconds * 50; i++) {
        eddy_consumer_stats cs;
        if (eddy_bus_consumer_stats(bus, "order-status", &cs) == EDDY_OK && cs.handled >= n)
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--url URL] [--ns NAMESPACE]\n", argv[0]);
            return 0;
        }
    const char *url = getenv("EDDY_URL") ? getenv("EDDY_URL") : "memory://";
    char ns[64];
    snprintf(ns, sizeof(ns), "order-status-%ld", (long)getpid());
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0) {
            url = argv[i + 1];
        } else if (strcmp(argv[i], "--ns") == 0) {
            snprintf(ns, sizeof(ns), "%s", argv[i + 1]);
        } else {
            fprintf(stderr, "usage: %s [--url URL] [--ns NAMESPACE]\n", argv[0]);
            return 2;
        }
    }
    if (argc % 2 == 0) {
        fprintf(stderr, "usage: %s [--url URL] [--ns NAMESPACE]\n", argv[0]);
        return 2;
    }
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.source = "/examples/order_status";
    s.log = log_hook;
    s.redelivery_idle_ms = 300; /* refused events come back quickly in this demo */
    s.block_ms = 200;
    eddy_error err;
    eddy_status st = eddy_store_open(&s, &store, &err);
    if (st != EDDY_OK) {
        fprintf(stderr, "cannot open the store at %s: %s: %s\n", url, eddy_status_str(st),
                err.detail);
        return 1;
    }

    /* 1. the history */
    bool ok = store_event("order-1", "placed") && store_event("order-1", "paid") &&
              store_event("order-1", "shipped") && store_event("order-2", "placed") &&
              store_event("order-2", "refunded") && store_event("order-3", "placed");

    /* 2. the listener */
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "order-status";
    spec.pattern = "orders";
    spec.shape = EDDY_COMPETING;
    spec.group = "order-status";
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = to_current_feed;
    eddy_bus *bus = NULL;
    if (ok && ((st = eddy_bus_new(&s, &spec, 1, &bus, &err)) != EDDY_OK ||
               (st = eddy_bus_start(bus, &err)) != EDDY_OK)) {
        fprintf(stderr, "cannot start the listener: %s: %s\n", eddy_status_str(st), err.detail);
        ok = false;
    }

    /* 3. the first start fails on the refund; a live event waits in the broker meanwhile */
    if (ok && start_feed()) {
        fprintf(stderr, "expected the first catch-up to fail\n");
        ok = false;
    }
    ok = ok && store_event("order-3", "paid");
    if (ok) {
        eddy_error cause;
        if (eddy_feed_failure(feed, &cause))
            printf("the feed refuses events until it is rebuilt (%s)\n",
                   eddy_status_name(cause.status));
    }

    /* 4. fix the bug, rebuild, go on */
    atomic_store(&refunds_supported, true);
    ok = ok && start_feed();
    ok = ok && store_event("order-4", "placed") && store_event("order-4", "paid");
    /* order-3 paid (redelivered, recognised as replayed) and order-4's two events */
    if (ok && !wait_for_handled(bus, 3, 20)) {
        fprintf(stderr, "the live events were not all applied in time\n");
        ok = false;
    }
    if (ok) {
        print_model();
        eddy_consumer_stats cs;
        eddy_feed_info info;
        eddy_bus_consumer_stats(bus, "order-status", &cs);
        eddy_feed_stats(feed, &info);
        printf("listener: %llu deliveries, %llu acknowledged, %llu refused or failed\n",
               (unsigned long long)cs.delivered, (unsigned long long)cs.handled,
               (unsigned long long)cs.failed);
        printf("feed: %llu replayed, %llu applied live, %llu duplicates dropped\n",
               (unsigned long long)info.replayed, (unsigned long long)info.applied,
               (unsigned long long)info.duplicates);
    }
    eddy_bus_free(bus);
    eddy_feed_free(feed);
    eddy_store_close(store);
    return ok ? 0 : 1;
}
