/* SPDX-License-Identifier: BSD-3-Clause */
/* ThreadSanitizer harness: domain feeds and push sources. Four threads route CloudEvents into a
 * domain feed while its catch-up replays on another thread (deferred until live, then
 * delivered; events of another type filtered). Push sources in manual mode start two
 * background catch-ups with a progress callback while two threads publish live events and a
 * third reads the sources' status; then everything is stopped and freed. Last, sources are
 * freed while their background catch-up still runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/domain.h"
#include "eddy/push.h"
#include "tsan_support.h"

#define HISTORY 400
#define MAXN 20000
#define ROUTERS 4
#define PER_ROUTER 25

typedef struct model {
    pthread_mutex_t mu;
    unsigned char seen[MAXN];
    int distinct;
    atomic_int replay_delay_ms;
} model;

typedef tsan_item item;

static model *model_new(void) {
    model *m = calloc(1, sizeof(*m));
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

static void model_free(model *m) {
    if (m) {
        pthread_mutex_destroy(&m->mu);
        free(m);
    }
}

static eddy_status apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta, (void)err;
    model *m = user;
    item *it = event;
    int delay = atomic_load(&m->replay_delay_ms);
    if (meta && delay) /* a replayed (stored) event: keeps the catch-up running a while */
        tsan_sleep_ms(delay);
    pthread_mutex_lock(&m->mu);
    if (it->n >= 0 && it->n < MAXN && !m->seen[it->n]) {
        m->seen[it->n] = 1;
        m->distinct++;
    }
    pthread_mutex_unlock(&m->mu);
    return EDDY_OK;
}

static int distinct(model *m) {
    pthread_mutex_lock(&m->mu);
    int n = m->distinct;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static eddy_domain_feed *new_domain(eddy_store *store) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = tsan_item_decode;
    cfg.free_event = tsan_item_free;
    cfg.event_id = tsan_item_id;
    cfg.page_size = 16;
    cfg.log = tsan_log;
    eddy_domain_feed *feed = NULL;
    eddy_error err;
    CHECK_OK(eddy_domain_new(store, &cfg, &feed, &err), &err, "domain_new");
    return feed;
}

static eddy_projection projection(model *m) {
    eddy_projection p = {0};
    p.apply = apply;
    p.user = m;
    return p;
}

/* ---- routing during a catch-up ------------------------------------------------------------ */

typedef struct router {
    eddy_domain_feed *feed;
    const char *prefix;
    int from;
    int delivered, filtered, deferrals;
} router;

static void *route_all(void *arg) {
    router *r = arg;
    for (int i = 0; i < PER_ROUTER; i++) {
        int n = r->from + i;
        eddy_event *ev = tsan_event(r->prefix, n, i % 5 == 4 ? "tsan.other" : "tsan.stored");
        for (int tries = 0; tries < 5000; tries++) {
            eddy_route route = EDDY_ROUTE_DEFERRED;
            eddy_error err;
            eddy_status st = eddy_domain_route(r->feed, ev, NULL, &route, &err);
            CHECK_OK(st, &err, "route");
            if (st != EDDY_OK || route == EDDY_ROUTE_DELIVERED) {
                r->delivered++;
                break;
            }
            if (route == EDDY_ROUTE_FILTERED) {
                r->filtered++;
                break;
            }
            r->deferrals++; /* a listener hands it back; the broker brings it again */
            tsan_sleep_ms(1);
        }
        eddy_event_free(ev);
    }
    return NULL;
}

typedef struct domain_poller {
    eddy_domain_feed *feed;
    atomic_bool stop;
} domain_poller;

static void *poll_domain(void *arg) {
    domain_poller *p = arg;
    while (!atomic_load(&p->stop)) {
        eddy_feed_info info;
        CHECK_OK(eddy_domain_stats(p->feed, &info), NULL, "domain_get_info");
        (void)eddy_domain_ready_for_live_delivery(p->feed);
        (void)eddy_domain_refuses_permanently(p->feed);
        (void)eddy_domain_has_projection(p->feed);
        tsan_sleep_ms(2);
    }
    return NULL;
}

typedef struct catcher {
    eddy_domain_feed *feed;
    eddy_status st;
    eddy_error err;
} catcher;

static void *catch_up_all(void *arg) {
    catcher *c = arg;
    c->st = eddy_domain_catch_up_all(c->feed, NULL, &c->err);
    return NULL;
}

static void route_during_catch_up(const tsan_run *run) {
    char prefix[32], id[64];
    snprintf(prefix, sizeof(prefix), "route-%s", run->backend);
    snprintf(id, sizeof(id), "tsan-route-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    if (!store)
        return;
    tsan_append_history(store, prefix, 0, HISTORY, NULL, 13);
    model *m = model_new();
    atomic_store(&m->replay_delay_ms, 1);
    eddy_domain_feed *feed = new_domain(store);
    eddy_filter *filter = eddy_filter_type("tsan.stored");
    eddy_projection proj = projection(m);
    if (feed)
        CHECK_OK(eddy_domain_register(feed, id, &proj, filter, &err), &err, "register");
    eddy_filter_free(filter);
    if (feed && eddy_domain_has_projection(feed)) {
        domain_poller p = {feed, false};
        pthread_t poll, routers[ROUTERS], cu;
        pthread_create(&poll, NULL, poll_domain, &p);
        router r[ROUTERS];
        for (int k = 0; k < ROUTERS; k++) {
            r[k] = (router){feed, prefix, 1000 + k * PER_ROUTER, 0, 0, 0};
            pthread_create(&routers[k], NULL, route_all, &r[k]);
        }
        tsan_sleep_ms(10);
        catcher c = {feed, EDDY_OK, {0}};
        pthread_create(&cu, NULL, catch_up_all, &c);
        pthread_join(cu, NULL);
        CHECK_OK(c.st, &c.err, "catch_up_all");
        int filtered = 0, deferrals = 0;
        for (int k = 0; k < ROUTERS; k++) {
            pthread_join(routers[k], NULL);
            filtered += r[k].filtered;
            deferrals += r[k].deferrals;
        }
        CHECK(deferrals > 0, "no event was deferred: the routes did not overlap the catch-up");
        atomic_store(&p.stop, true);
        pthread_join(poll, NULL);
        int want = HISTORY + ROUTERS * PER_ROUTER - filtered;
        CHECK(filtered == ROUTERS * PER_ROUTER / 5, "%d filtered", filtered);
        CHECK(distinct(m) == want, "%d of %d applied", distinct(m), want);
    }
    eddy_domain_free(feed);
    eddy_store_close(store);
    model_free(m);
}

/* ---- push sources -----------------------------------------------------------------------------
 */

typedef struct progress_log {
    pthread_mutex_t mu;
    int calls, live, failed;
} progress_log;

static void on_progress(const eddy_push_progress *p, void *user) {
    progress_log *l = user;
    CHECK(p->id != NULL, "progress without an id");
    pthread_mutex_lock(&l->mu);
    l->calls++;
    l->live += p->state == EDDY_PUSH_LIVE;
    l->failed += p->state == EDDY_PUSH_FAILED;
    pthread_mutex_unlock(&l->mu);
}

typedef struct live_publisher {
    eddy_bus *bus;
    const char *prefix;
    int from, count;
} live_publisher;

static void *publish_live(void *arg) {
    live_publisher *p = arg;
    for (int i = 0; i < p->count; i++) {
        eddy_event *ev = tsan_event(p->prefix, p->from + i, "tsan.stored");
        eddy_error err;
        CHECK_OK(eddy_bus_publish(p->bus, "push.orders", ev, NULL, 0, &err), &err, "publish");
        eddy_event_free(ev);
        if (i % 10 == 0)
            tsan_sleep_ms(1);
    }
    return NULL;
}

typedef struct status_poller {
    eddy_push_sources *ps;
    const char *ids[2];
    atomic_bool stop;
} status_poller;

static void *poll_status(void *arg) {
    status_poller *p = arg;
    while (!atomic_load(&p->stop)) {
        for (int k = 0; k < 2; k++) {
            eddy_push_progress pr;
            CHECK_OK(eddy_push_sources_stats(p->ps, p->ids[k], &pr), NULL, "sources_status");
        }
        tsan_sleep_ms(2);
    }
    return NULL;
}

static eddy_push_sources *new_sources(eddy_bus *bus, eddy_push_mode mode, progress_log *log) {
    eddy_push_options po;
    eddy_push_options_init(&po);
    po.mode = mode;
    po.startup = EDDY_PUSH_BACKGROUND;
    po.progress = on_progress;
    po.progress_user = log;
    po.progress_ms = 5;
    po.log = tsan_log;
    eddy_push_sources *ps = NULL;
    eddy_error err;
    CHECK_OK(eddy_push_sources_new(bus, &po, &ps, &err), &err, "sources_new");
    return ps;
}

static void push_sources_background(const tsan_run *run) {
    char prefix[32], ids[2][64];
    snprintf(prefix, sizeof(prefix), "push-%s", run->backend);
    snprintf(ids[0], sizeof(ids[0]), "tsan-push-all-%s", run->backend);
    snprintf(ids[1], sizeof(ids[1]), "tsan-push-stored-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_bus *bus = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    CHECK_OK(eddy_bus_new(&set, NULL, 0, &bus, &err), &err, "bus_new");
    if (!store || !bus) {
        eddy_bus_free(bus);
        eddy_store_close(store);
        return;
    }
    tsan_append_history(store, prefix, 0, HISTORY, "push.orders", 13);
    model *m[2] = {model_new(), model_new()};
    for (int k = 0; k < 2; k++)
        atomic_store(&m[k]->replay_delay_ms, 1);
    eddy_domain_feed *feeds[2] = {new_domain(store), new_domain(store)};
    progress_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    eddy_push_sources *ps = new_sources(bus, EDDY_PUSH_MANUAL, &log);
    eddy_filter *stored = eddy_filter_type("tsan.stored");
    for (int k = 0; ps && k < 2; k++) {
        eddy_push_source_spec spec = {0};
        spec.id = ids[k];
        spec.feed = feeds[k];
        spec.projection = projection(m[k]);
        spec.filter = k ? stored : NULL;
        spec.subject = "push.orders";
        spec.group = ids[k];
        CHECK_OK(eddy_push_sources_add(ps, &spec, &err), &err, "sources_add");
    }
    eddy_filter_free(stored);
    CHECK_OK(eddy_bus_start(bus, &err), &err, "bus_start");
    if (ps) {
        status_poller sp = {ps, {ids[0], ids[1]}, false};
        pthread_t poll, pubs[2];
        pthread_create(&poll, NULL, poll_status, &sp);
        live_publisher lp[2] = {{bus, prefix, 1000, 60}, {bus, prefix, 2000, 60}};
        for (int k = 0; k < 2; k++)
            pthread_create(&pubs[k], NULL, publish_live, &lp[k]);
        tsan_sleep_ms(10);
        const char **started = NULL;
        size_t n = 0;
        CHECK_OK(eddy_push_sources_start_all(ps, &started, &n, &err), &err, "start_all");
        CHECK(n == 2, "%zu sources started", n);
        free(started);
        CHECK_OK(eddy_push_sources_wait(ps, 20000), NULL, "sources_wait");
        for (int k = 0; k < 2; k++)
            pthread_join(pubs[k], NULL);
        int want = HISTORY + 120;
        for (int i = 0; i < 1000 && (distinct(m[0]) < want || distinct(m[1]) < want); i++)
            tsan_sleep_ms(10);
        for (int k = 0; k < 2; k++)
            CHECK(distinct(m[k]) == want, "source %d: %d of %d applied", k, distinct(m[k]), want);
        atomic_store(&sp.stop, true);
        pthread_join(poll, NULL);
        pthread_mutex_lock(&log.mu);
        CHECK(log.live >= 2 && log.failed == 0 && log.calls > 4,
              "progress: %d calls, %d live, %d failed", log.calls, log.live, log.failed);
        pthread_mutex_unlock(&log.mu);
    }
    eddy_bus_stop(bus);
    eddy_push_sources_free(ps);
    for (int k = 0; k < 2; k++) {
        eddy_domain_free(feeds[k]);
        model_free(m[k]);
    }
    eddy_bus_free(bus);
    eddy_store_close(store);
}

/* Automatic mode: adding starts a slow background catch-up; the sources are freed while it
 * runs (it is cancelled) and while live events arrive. */
static void push_sources_free_mid_catch_up(const tsan_run *run) {
    char prefix[32], id[64];
    snprintf(prefix, sizeof(prefix), "pfree-%s", run->backend);
    snprintf(id, sizeof(id), "tsan-push-free-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_store *store = NULL;
    eddy_bus *bus = NULL;
    eddy_error err;
    CHECK_OK(eddy_store_open(&set, &store, &err), &err, "store_open");
    CHECK_OK(eddy_bus_new(&set, NULL, 0, &bus, &err), &err, "bus_new");
    if (!store || !bus) {
        eddy_bus_free(bus);
        eddy_store_close(store);
        return;
    }
    tsan_append_history(store, prefix, 0, HISTORY, NULL, 13);
    model *m = model_new();
    atomic_store(&m->replay_delay_ms, 1);
    eddy_domain_feed *feed = new_domain(store);
    progress_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(eddy_bus_start(bus, &err), &err, "bus_start");
    eddy_push_sources *ps = new_sources(bus, EDDY_PUSH_AUTOMATIC, &log);
    if (ps && feed) {
        eddy_push_source_spec spec = {0};
        spec.id = id;
        spec.feed = feed;
        spec.projection = projection(m);
        spec.subject = "pfree.orders";
        spec.group = id;
        CHECK_OK(eddy_push_sources_add(ps, &spec, &err), &err, "sources_add");
        live_publisher lp = {bus, prefix, 1000, 30};
        pthread_t pub;
        pthread_create(&pub, NULL, publish_live, &lp);
        tsan_sleep_ms(30);
        pthread_join(pub, NULL);
    }
    eddy_bus_stop(bus);
    eddy_push_sources_free(ps);
    eddy_domain_free(feed);
    eddy_bus_free(bus);
    eddy_store_close(store);
    model_free(m);
}

int main(void) {
    const tsan_scenario scenarios[] = {route_during_catch_up, push_sources_background,
                                       push_sources_free_mid_catch_up};
    const char *const names[] = {"route-during-catch-up", "push-sources-background",
                                 "push-free-mid-catch-up"};
    return tsan_main("tsan_domain_push", scenarios, names, 3);
}
