/* SPDX-License-Identifier: BSD-3-Clause */
/* ThreadSanitizer harness: catch-up feeds (feed.h). Accepts and offers wait on several threads
 * while a catch-up replays on another; a replay is stopped from one thread and the feed made
 * live from another; a catch-up is cancelled while a go-live waits for it; a feed is freed with
 * accepts and offers waiting; and a feed fed by a bus subscription (eddy_feed_handler: offer
 * completions on the catch-up's thread settle deliveries) catches up while two threads append
 * and publish. State is read from a poller thread throughout. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/feed.h"
#include "tsan_support.h"

#define HISTORY 400
#define MAXN 20000
#define ACCEPTERS 4
#define PER_ACCEPTER 25

/* ---- the projection and the codec ---------------------------------------------------------- */

typedef struct model {
    pthread_mutex_t mu;
    unsigned char seen[MAXN];
    int distinct;
    atomic_int applies, started, completed, abandoned;
    atomic_int replay_delay_ms; /* slows the replay down so that it can be stopped mid-way */
} model;

typedef tsan_item item;

static eddy_status apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)err;
    model *m = user;
    item *it = event;
    atomic_fetch_add(&m->applies, 1);
    int delay = atomic_load(&m->replay_delay_ms);
    if (meta && delay)
        tsan_sleep_ms(delay);
    pthread_mutex_lock(&m->mu);
    if (it->n >= 0 && it->n < MAXN && !m->seen[it->n]) {
        m->seen[it->n] = 1;
        m->distinct++;
    }
    pthread_mutex_unlock(&m->mu);
    return EDDY_OK;
}

static eddy_status started(eddy_error *err, void *user) {
    (void)err;
    atomic_fetch_add(&((model *)user)->started, 1);
    return EDDY_OK;
}

static eddy_status completed(eddy_error *err, void *user) {
    (void)err;
    atomic_fetch_add(&((model *)user)->completed, 1);
    return EDDY_OK;
}

static void abandoned(void *user) { atomic_fetch_add(&((model *)user)->abandoned, 1); }

static int distinct(model *m) {
    pthread_mutex_lock(&m->mu);
    int n = m->distinct;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static item *new_item(const char *prefix, int n) {
    item *it = calloc(1, sizeof(*it));
    if (it) {
        snprintf(it->id, sizeof(it->id), "%s-%d", prefix, n);
        it->n = n;
    }
    return it;
}

static eddy_feed *new_feed(eddy_store *store, model *m, const char *id, bool checkpoints,
                           unsigned page_size) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = id;
    cfg.projection.apply = apply;
    cfg.projection.replay_started = started;
    cfg.projection.replay_completed = completed;
    cfg.projection.replay_abandoned = abandoned;
    cfg.projection.user = m;
    cfg.decode = tsan_item_decode;
    cfg.free_event = tsan_item_free;
    cfg.event_id = tsan_item_id;
    eddy_checkpoints ck;
    if (checkpoints) {
        ck = eddy_store_checkpoints(store);
        cfg.checkpoints = &ck;
    }
    cfg.page_size = page_size;
    cfg.log = tsan_log;
    eddy_feed *feed = NULL;
    eddy_error err;
    CHECK_OK(eddy_feed_new(store, &cfg, &feed, &err), &err, "feed_new");
    return feed;
}

/* ---- threads --------------------------------------------------------------------------------- */

typedef struct accepter {
    eddy_feed *feed;
    const char *prefix;
    int from, count;
    eddy_cancel *cancel;
    int ok, refused, closed, cancelled, other;
} accepter;

static void *accept_all(void *arg) {
    accepter *a = arg;
    for (int i = 0; i < a->count; i++) {
        item *it = new_item(a->prefix, a->from + i);
        eddy_error err;
        eddy_event_meta meta = {"live", a->from + i, 0};
        eddy_status st = i % 2 ? eddy_feed_accept(a->feed, it, a->cancel, &err)
                               : eddy_feed_accept_meta(a->feed, &meta, it, a->cancel, &err);
        free(it);
        if (st == EDDY_OK)
            a->ok++;
        else if (st == EDDY_ERR_ILLEGAL_STATE)
            a->refused++;
        else if (st == EDDY_ERR_CLOSED)
            a->closed++;
        else if (st == EDDY_ERR_CANCELLED)
            a->cancelled++;
        else {
            a->other++;
            CHECK(0, "accept: %s: %s", eddy_status_name(st), err.detail);
        }
    }
    return NULL;
}

typedef struct offers {
    pthread_mutex_t mu;
    int done, ok, closed, other;
} offers;

typedef struct offered {
    offers *o;
    item *it;
} offered;

static void offer_done(eddy_status st, const eddy_error *err, void *user) {
    offered *x = user;
    (void)err;
    pthread_mutex_lock(&x->o->mu);
    x->o->done++;
    if (st == EDDY_OK)
        x->o->ok++;
    else if (st == EDDY_ERR_CLOSED)
        x->o->closed++;
    else
        x->o->other++;
    pthread_mutex_unlock(&x->o->mu);
    free(x->it);
    free(x);
}

static void offer_some(eddy_feed *feed, offers *o, const char *prefix, int from, int count) {
    for (int i = 0; i < count; i++) {
        offered *x = malloc(sizeof(*x));
        x->o = o;
        x->it = new_item(prefix, from + i);
        CHECK_OK(eddy_feed_offer(feed, NULL, x->it, offer_done, x), NULL, "offer");
    }
}

typedef struct offer_args {
    eddy_feed *feed;
    offers *o;
    const char *prefix;
    int from, count;
} offer_args;

static void *offer_thread(void *arg) {
    offer_args *a = arg;
    offer_some(a->feed, a->o, a->prefix, a->from, a->count);
    return NULL;
}

typedef struct poller {
    eddy_feed *feed;
    atomic_bool stop;
} poller;

static void *poll_info(void *arg) {
    poller *p = arg;
    while (!atomic_load(&p->stop)) {
        eddy_feed_info info;
        CHECK_OK(eddy_feed_stats(p->feed, &info), NULL, "get_info");
        (void)eddy_feed_ready_for_live_delivery(p->feed);
        (void)eddy_feed_refuses_permanently(p->feed);
        eddy_error cause;
        (void)eddy_feed_failure(p->feed, &cause);
        tsan_sleep_ms(2);
    }
    return NULL;
}

typedef struct catcher {
    eddy_feed *feed;
    eddy_cancel *cancel;
    bool go_live;
    eddy_status st;
    eddy_error err;
} catcher;

static void *catch_up(void *arg) {
    catcher *c = arg;
    c->st = c->go_live ? eddy_feed_go_live(c->feed, c->cancel, &c->err)
                       : eddy_feed_catch_up(c->feed, c->cancel, &c->err);
    return NULL;
}

static void start_accepters(pthread_t *t, accepter *a, eddy_feed *feed, const char *prefix,
                            int base, eddy_cancel *cancel) {
    for (int k = 0; k < ACCEPTERS; k++) {
        a[k] =
            (accepter){feed, prefix, base + k * PER_ACCEPTER, PER_ACCEPTER, cancel, 0, 0, 0, 0, 0};
        pthread_create(&t[k], NULL, accept_all, &a[k]);
    }
}

static void wait_held(eddy_feed *feed, size_t want) {
    eddy_feed_info info = {0};
    for (int i = 0; i < 2000; i++) {
        eddy_feed_stats(feed, &info);
        if (info.held >= want)
            return;
        tsan_sleep_ms(5);
    }
    CHECK(0, "%zu events held, waited for %zu", info.held, want);
}

/* ---- scenarios ------------------------------------------------------------------------------- */

/* Accepts and offers wait while a catch-up replays; everything is applied once. */
static void catch_up_while_accepting(const tsan_run *run) {
    char prefix[32], id[64];
    snprintf(prefix, sizeof(prefix), "feed-%s", run->backend);
    snprintf(id, sizeof(id), "tsan-catch-up-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    if (!store)
        return;
    tsan_append_history(store, prefix, 0, HISTORY, NULL, 17);
    model *m = calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    atomic_store(&m->replay_delay_ms, 1); /* the replay runs a while: everything else overlaps */
    eddy_feed *feed = new_feed(store, m, id, true, 16);
    if (!feed) {
        eddy_store_close(store);
        free(m);
        return;
    }
    poller p = {feed, false};
    pthread_t poll, acc[ACCEPTERS], off, cu;
    pthread_create(&poll, NULL, poll_info, &p);
    accepter a[ACCEPTERS];
    start_accepters(acc, a, feed, prefix, 1000, NULL);
    offers o = {.mu = PTHREAD_MUTEX_INITIALIZER};
    offer_args oa = {feed, &o, prefix, 2000, 40};
    pthread_create(&off, NULL, offer_thread, &oa);
    tsan_sleep_ms(20);
    catcher c = {feed, NULL, false, EDDY_OK, {0}};
    pthread_create(&cu, NULL, catch_up, &c);
    /* Live duplicates of replayed events, offered while the replay runs. */
    offer_some(feed, &o, prefix, 0, 40);
    pthread_join(cu, NULL);
    CHECK_OK(c.st, &c.err, "catch_up");
    for (int k = 0; k < ACCEPTERS; k++) {
        pthread_join(acc[k], NULL);
        CHECK(a[k].ok == PER_ACCEPTER, "accepter %d: %d ok, %d refused, %d closed", k, a[k].ok,
              a[k].refused, a[k].closed);
    }
    pthread_join(off, NULL);
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&o.mu);
        int done = o.done;
        pthread_mutex_unlock(&o.mu);
        if (done == 80)
            break;
        tsan_sleep_ms(5);
    }
    pthread_mutex_lock(&o.mu);
    CHECK(o.done == 80 && o.ok == 80, "offers: %d done, %d ok", o.done, o.ok);
    pthread_mutex_unlock(&o.mu);
    int want = HISTORY + ACCEPTERS * PER_ACCEPTER + 40;
    CHECK(distinct(m) == want, "%d of %d applied", distinct(m), want);
    /* A second catch-up finds the marker and skips the replay. */
    CHECK_OK(eddy_feed_catch_up(feed, NULL, &err), &err, "second catch_up");
    atomic_store(&p.stop, true);
    pthread_join(poll, NULL);
    eddy_feed_free(feed);
    eddy_store_close(store);
    free(m);
}

/* A replay stopped from one thread while accepts wait; then go-live from another. Then a
 * catch-up cancelled while a go-live waits for it. */
static void stop_cancel_go_live(const tsan_run *run) {
    char prefix[32], id[64];
    snprintf(prefix, sizeof(prefix), "stop-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    if (!store)
        return;
    tsan_append_history(store, prefix, 0, HISTORY, NULL, 17);
    model *m = calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    atomic_store(&m->replay_delay_ms, 1);

    /* Stop, then go live. */
    snprintf(id, sizeof(id), "tsan-stop-%s", run->backend);
    eddy_feed *feed = new_feed(store, m, id, false, 8);
    if (feed) {
        poller p = {feed, false};
        pthread_t poll, acc[ACCEPTERS], cu, gl;
        pthread_create(&poll, NULL, poll_info, &p);
        accepter a[ACCEPTERS];
        start_accepters(acc, a, feed, prefix, 1000, NULL);
        catcher c = {feed, NULL, false, EDDY_OK, {0}};
        pthread_create(&cu, NULL, catch_up, &c);
        tsan_sleep_ms(30);
        eddy_feed_stop_catch_up(feed);
        pthread_join(cu, NULL);
        CHECK_OK(c.st, &c.err, "stopped catch_up");
        catcher g = {feed, NULL, true, EDDY_OK, {0}};
        pthread_create(&gl, NULL, catch_up, &g);
        pthread_join(gl, NULL);
        CHECK_OK(g.st, &g.err, "go_live after stop");
        for (int k = 0; k < ACCEPTERS; k++) {
            pthread_join(acc[k], NULL);
            CHECK(a[k].ok + a[k].refused == PER_ACCEPTER, "accepter %d: %d ok, %d refused", k,
                  a[k].ok, a[k].refused);
        }
        atomic_store(&p.stop, true);
        pthread_join(poll, NULL);
        eddy_feed_free(feed);
    }

    /* Cancel while a go-live waits; accepts with a cancel handle of their own. */
    snprintf(id, sizeof(id), "tsan-cancel-%s", run->backend);
    feed = new_feed(store, m, id, false, 8);
    if (feed) {
        eddy_cancel *cancel = eddy_cancel_new();
        eddy_cancel *accept_cancel = eddy_cancel_new();
        poller p = {feed, false};
        pthread_t poll, acc[ACCEPTERS], cu, gl;
        pthread_create(&poll, NULL, poll_info, &p);
        accepter a[ACCEPTERS];
        start_accepters(acc, a, feed, prefix, 3000, accept_cancel);
        catcher c = {feed, cancel, false, EDDY_OK, {0}};
        pthread_create(&cu, NULL, catch_up, &c);
        tsan_sleep_ms(20);
        catcher g = {feed, NULL, true, EDDY_OK, {0}};
        pthread_create(&gl, NULL, catch_up, &g);
        tsan_sleep_ms(10);
        eddy_cancel_fire(cancel);
        pthread_join(cu, NULL);
        CHECK(c.st == EDDY_ERR_CANCELLED || c.st == EDDY_OK, "cancelled catch_up: %s",
              eddy_status_name(c.st));
        pthread_join(gl, NULL);
        CHECK_OK(g.st, &g.err, "go_live after cancel");
        eddy_cancel_fire(accept_cancel);
        for (int k = 0; k < ACCEPTERS; k++) {
            pthread_join(acc[k], NULL);
            CHECK(a[k].ok + a[k].cancelled == PER_ACCEPTER, "accepter %d: %d ok, %d cancelled", k,
                  a[k].ok, a[k].cancelled);
        }
        CHECK(eddy_cancel_fired(cancel), "cancel not fired");
        atomic_store(&p.stop, true);
        pthread_join(poll, NULL);
        eddy_feed_free(feed);
        eddy_cancel_free(cancel);
        eddy_cancel_free(accept_cancel);
    }

    /* Freed with accepts and offers waiting: they end with EDDY_ERR_CLOSED. */
    snprintf(id, sizeof(id), "tsan-free-%s", run->backend);
    feed = new_feed(store, m, id, false, 8);
    if (feed) {
        pthread_t acc[ACCEPTERS];
        accepter a[ACCEPTERS];
        for (int k = 0; k < ACCEPTERS; k++) {
            a[k] = (accepter){feed, prefix, 5000 + k, 1, NULL, 0, 0, 0, 0, 0};
            pthread_create(&acc[k], NULL, accept_all, &a[k]);
        }
        offers o = {.mu = PTHREAD_MUTEX_INITIALIZER};
        offer_some(feed, &o, prefix, 6000, 10);
        wait_held(feed, ACCEPTERS + 10);
        eddy_feed_free(feed);
        for (int k = 0; k < ACCEPTERS; k++) {
            pthread_join(acc[k], NULL);
            CHECK(a[k].closed == 1, "accepter %d: not closed (%d ok, %d refused)", k, a[k].ok,
                  a[k].refused);
        }
        CHECK(o.done == 10 && o.closed == 10, "offers at free: %d done, %d closed", o.done,
              o.closed);
    }
    eddy_store_close(store);
    free(m);
}

/* eddy_feed_handler on a bus: deliveries wait (EDDY_PENDING) while the catch-up runs, and the
 * catch-up's thread settles them; two threads append and publish meanwhile. */
typedef struct appender {
    eddy_store *store;
    const char *prefix;
    int from, to;
} appender;

static void *append_thread(void *arg) {
    appender *a = arg;
    tsan_append_history(a->store, a->prefix, a->from, a->to, "feed.orders", 17);
    return NULL;
}

static void feed_handler_on_bus(const tsan_run *run) {
    char prefix[32], id[64];
    snprintf(prefix, sizeof(prefix), "handler-%s", run->backend);
    snprintf(id, sizeof(id), "tsan-handler-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    if (!store)
        return;
    tsan_append_history(store, prefix, 0, HISTORY, "feed.orders", 17);
    model *m = calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    atomic_store(&m->replay_delay_ms, 1); /* the replay runs a while: everything else overlaps */
    eddy_feed *feed = new_feed(store, m, id, true, 16);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "feed";
    spec.pattern = "feed.orders";
    spec.group = "feed";
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = eddy_feed_handler;
    spec.user = feed;
    eddy_bus *bus = NULL;
    if (feed)
        CHECK_OK(eddy_bus_new(&set, &spec, 1, &bus, &err), &err, "bus_new");
    if (bus)
        CHECK_OK(eddy_bus_start(bus, &err), &err, "bus_start");
    if (bus && feed) {
        pthread_t app[2], cu;
        appender ap[2] = {{store, prefix, HISTORY, HISTORY + 100},
                          {store, prefix, HISTORY + 100, HISTORY + 200}};
        for (int k = 0; k < 2; k++)
            pthread_create(&app[k], NULL, append_thread, &ap[k]);
        tsan_sleep_ms(20);
        catcher c = {feed, NULL, false, EDDY_OK, {0}};
        pthread_create(&cu, NULL, catch_up, &c);
        pthread_join(cu, NULL);
        CHECK_OK(c.st, &c.err, "catch_up under the bus");
        for (int k = 0; k < 2; k++)
            pthread_join(app[k], NULL);
        int want = HISTORY + 200;
        for (int i = 0; i < 1000 && distinct(m) < want; i++)
            tsan_sleep_ms(10);
        CHECK(distinct(m) == want, "%d of %d applied", distinct(m), want);
    }
    eddy_bus_free(bus); /* stops first: no handler uses the feed afterwards */
    eddy_feed_free(feed);
    eddy_store_close(store);
    free(m);
}

int main(void) {
    const tsan_scenario scenarios[] = {catch_up_while_accepting, stop_cancel_go_live,
                                       feed_handler_on_bus};
    const char *const names[] = {"catch-up-while-accepting", "stop-cancel-go-live",
                                 "feed-handler-on-bus"};
    return tsan_main("tsan_feed", scenarios, names, 3);
}
