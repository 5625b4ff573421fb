/* A feed listener killed during its catch-up, again and again, while a writer appends, on both
 * backends and both front ends, with a read model that is not idempotent: it keeps each order's
 * last version and counts a double apply whenever it is handed a version it has already seen
 * (and a gap whenever one is skipped), so a live copy the feed should have dropped fails the
 * test. The listener subscribes with one consumer name, so each new incarnation first gets back
 * what the dead ones held and never acknowledged: a held backlog far larger than the feed's
 * dedup_cache_size (kept small here), which the replay applies as well. Every copy at or below
 * the replay's position must be dropped, however old.
 *
 * A kill is simulated inside the process (so that memory:// keeps its engine): the incarnation's
 * projection fails on a replayed event halfway through the history, so the catch-up fails and
 * the feed acknowledges nothing it held; its bus, feed and store are then freed. Each
 * incarnation starts a fresh read model, as a restarted process would; the last one catches up,
 * goes live and must end equal to a fold of the store's history, each event applied once. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

#define ORDERS 8
#define SUBJECT "orders.events"
#define GROUP "order-status"
#define DEDUP 16    /* the feed's id caches: far below the held backlog */
#define BACKLOG 300 /* each catch-up starts with at least this many events held */
#define KILLS 2
#define MAX_APPENDS 50000 /* below max_buffered_events: nothing is refused for room */

/* ---- the read model: order -> last version, not idempotent --------------------------------- */

typedef struct read_model {
    pthread_mutex_t m;
    long long version[ORDERS];
    long long applies, doubles, gaps;
    bool replaying;
    long long replayed, kill_at; /* kill_at > 0: fail the kill_at-th replayed event */
    char first_double[96];
} read_model;

static int order_of(const char *stream) {
    int k = -1;
    cr_assert_eq(sscanf(stream, "order-%d", &k), 1, "unexpected stream %s", stream);
    cr_assert(k >= 0 && k < ORDERS, "unexpected stream %s", stream);
    return k;
}

static eddy_status rm_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    read_model *rm = user;
    uev *e = event;
    if (!meta) {
        snprintf(err->detail, sizeof(err->detail), "no metadata for %s", e->id);
        return EDDY_ERR_ILLEGAL_STATE;
    }
    int k = order_of(meta->stream_id);
    pthread_mutex_lock(&rm->m);
    if (rm->replaying && rm->kill_at > 0 && ++rm->replayed == rm->kill_at) {
        pthread_mutex_unlock(&rm->m);
        snprintf(err->detail, sizeof(err->detail), "the listener died at %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    rm->applies++;
    if (meta->version <= rm->version[k]) {
        if (!rm->doubles++)
            snprintf(rm->first_double, sizeof(rm->first_double),
                     "%s (version %lld after %lld, position %lld)", e->id, meta->version,
                     rm->version[k], meta->position);
    } else {
        if (meta->version != rm->version[k] + 1)
            rm->gaps++;
        rm->version[k] = meta->version;
    }
    pthread_mutex_unlock(&rm->m);
    return EDDY_OK;
}

static eddy_status rm_started(eddy_error *err, void *user) {
    (void)err;
    read_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = true;
    pthread_mutex_unlock(&rm->m);
    return EDDY_OK;
}

static eddy_status rm_completed(eddy_error *err, void *user) {
    (void)err;
    read_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = false;
    pthread_mutex_unlock(&rm->m);
    return EDDY_OK;
}

static void rm_abandoned(void *user) {
    read_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = false;
    pthread_mutex_unlock(&rm->m);
}

static void rm_reset(read_model *rm, long long kill_at) {
    pthread_mutex_lock(&rm->m);
    memset(rm->version, 0, sizeof(rm->version));
    rm->applies = rm->doubles = rm->gaps = rm->replayed = 0;
    rm->replaying = false;
    rm->kill_at = kill_at;
    rm->first_double[0] = '\0';
    pthread_mutex_unlock(&rm->m);
}

static long long rm_get(read_model *rm, const long long *field) {
    pthread_mutex_lock(&rm->m);
    long long v = *field;
    pthread_mutex_unlock(&rm->m);
    return v;
}

/* ---- the writer: appends to the orders round robin, each append published ------------------ */

typedef struct writer {
    const eddy_settings *s;
    pthread_t thread;
    atomic_bool stop;
    atomic_llong appended;
} writer;

static void *writer_main(void *arg) {
    writer *w = arg;
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(w->s, &store, &err), EDDY_OK, "%s", err.detail);
    for (long long n = 0; n < MAX_APPENDS && !atomic_load(&w->stop); n++) {
        char id[48], stream[16];
        snprintf(stream, sizeof(stream), "order-%lld", n % ORDERS);
        snprintf(id, sizeof(id), "%s-v%lld", stream, n / ORDERS + 1);
        eddy_event *ev = make_event(id, "order.status");
        eddy_append_opts o;
        eddy_append_opts_init(&o);
        o.publish_subject = SUBJECT;
        const eddy_event *evs[] = {ev};
        eddy_status st = eddy_store_append(store, stream, evs, 1, &o, NULL, &err);
        eddy_event_free(ev);
        cr_assert_eq(st, EDDY_OK, "append %s: %s", id, err.detail);
        atomic_store(&w->appended, n + 1);
        /* Paces the writer so that the listener's phases overlap its appends; no outcome
         * depends on it. */
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    eddy_store_close(store);
    return NULL;
}

/* ---- one listener incarnation, on either front end ----------------------------------------- */

typedef struct listener {
    bool reactive;
    eddy_settings s;
    read_model *rm;
    /* blocking */
    eddy_store *store;
    eddy_bus *bus;
    eddy_feed *feed;
    /* reactive */
    struct ev_loop *loop;
    eddy_rstore *rstore;
    eddy_rbus *rbus;
    eddy_rfeed *rfeed;
} listener;

static eddy_feed_config feed_config(read_model *rm) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "order-status";
    cfg.projection.apply = rm_apply;
    cfg.projection.replay_started = rm_started;
    cfg.projection.replay_completed = rm_completed;
    cfg.projection.replay_abandoned = rm_abandoned;
    cfg.projection.keyed_by_metadata = true;
    cfg.projection.user = rm;
    cfg.decode = uev_decode;
    cfg.free_event = uev_free;
    cfg.event_id = uev_id;
    cfg.dedup_cache_size = DEDUP;
    cfg.page_size = 128;
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    return cfg; /* no marker: every catch-up replays the whole history */
}

static eddy_subscription_spec listener_spec(void *feed, bool reactive) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "order-status";
    sp.pattern = SUBJECT;
    sp.shape = EDDY_COMPETING;
    sp.group = GROUP;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = reactive ? eddy_rfeed_handler : eddy_feed_handler;
    sp.user = feed;
    return sp;
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)w, (void)revents;
}

/* Lets the listener work a moment: the reactive one runs its loop, the blocking one has
 * threads of its own. */
static void pump(listener *l) {
    if (l->reactive) {
        ev_timer tk;
        ev_timer_init(&tk, tick, 0.005, 0.);
        ev_timer_start(l->loop, &tk);
        ev_run(l->loop, EVRUN_ONCE);
        ev_timer_stop(l->loop, &tk);
    } else {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

static bool pump_until(listener *l, bool (*cond)(void *), void *arg, long long timeout_ms) {
    long long end = eddy_test_now_ms() + timeout_ms;
    while (!cond(arg) && eddy_test_now_ms() < end)
        pump(l);
    return cond(arg);
}

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    cr_assert_eq(st, EDDY_OK, "rbus start: %s", err ? err->detail : "");
    *(int *)user = 1;
}

static bool flag_set(void *arg) { return *(int *)arg != 0; }

static void listener_start(listener *l) {
    eddy_error err = {0};
    eddy_feed_config cfg = feed_config(l->rm);
    if (l->reactive) {
        l->loop = ev_loop_new(EVFLAG_AUTO);
        cr_assert(l->loop);
        cr_assert_eq(eddy_rstore_open(l->loop, &l->s, &l->rstore, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_rfeed_new(l->loop, l->rstore, &cfg, NULL, &l->rfeed, &err), EDDY_OK, "%s",
                     err.detail);
        eddy_subscription_spec sp = listener_spec(l->rfeed, true);
        cr_assert_eq(eddy_rbus_new(l->loop, &l->s, &sp, 1, &l->rbus, &err), EDDY_OK, "%s",
                     err.detail);
        int ready = 0;
        cr_assert_eq(eddy_rbus_start(l->rbus, on_ready, &ready, &err), EDDY_OK, "%s", err.detail);
        cr_assert(pump_until(l, flag_set, &ready, 30000), "the reactive bus never started");
    } else {
        cr_assert_eq(eddy_store_open(&l->s, &l->store, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_feed_new(l->store, &cfg, &l->feed, &err), EDDY_OK, "%s", err.detail);
        eddy_subscription_spec sp = listener_spec(l->feed, false);
        cr_assert_eq(eddy_bus_new(&l->s, &sp, 1, &l->bus, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_bus_start(l->bus, &err), EDDY_OK, "%s", err.detail);
    }
}

static eddy_feed_info listener_info(listener *l) {
    eddy_feed_info i;
    cr_assert_eq(l->reactive ? eddy_rfeed_get_info(l->rfeed, &i) : eddy_feed_get_info(l->feed, &i),
                 EDDY_OK);
    return i;
}

typedef struct done_rec {
    int calls;
    eddy_status st;
    char detail[EDDY_ERROR_DETAIL_MAX];
} done_rec;

static void on_caught_up(eddy_status st, const eddy_error *err, void *user) {
    done_rec *d = user;
    d->st = st;
    snprintf(d->detail, sizeof(d->detail), "%s", err ? err->detail : "");
    d->calls++;
}

static bool called(void *arg) { return ((done_rec *)arg)->calls > 0; }

static eddy_status listener_catch_up(listener *l, char *detail, size_t size) {
    eddy_error err = {0};
    if (!l->reactive) {
        eddy_status st = eddy_feed_catch_up(l->feed, NULL, &err);
        snprintf(detail, size, "%s", err.detail);
        return st;
    }
    done_rec d = {0};
    eddy_status st = eddy_rfeed_catch_up(l->rfeed, on_caught_up, &d, &err);
    cr_assert_eq(st, EDDY_OK, "%s", err.detail);
    cr_assert(pump_until(l, called, &d, 120000), "the reactive catch-up never ended");
    snprintf(detail, size, "%s", d.detail);
    return d.st;
}

/* The process dies: nothing more is applied or acknowledged. */
static void listener_kill(listener *l) {
    if (l->reactive) {
        eddy_rbus_free(l->rbus);
        eddy_rfeed_free(l->rfeed);
        eddy_rstore_close(l->rstore);
        ev_loop_destroy(l->loop);
        l->rbus = NULL, l->rfeed = NULL, l->rstore = NULL, l->loop = NULL;
    } else {
        eddy_bus_free(l->bus);
        eddy_feed_free(l->feed);
        eddy_store_close(l->store);
        l->bus = NULL, l->feed = NULL, l->store = NULL;
    }
}

/* ---- conditions ------------------------------------------------------------------------------ */

typedef struct backlog_cond {
    listener *l;
    writer *w;
    long long appended_at_least;
} backlog_cond;

/* The listener holds a backlog far larger than the id caches, and the writer got ahead. */
static bool backlog_held(void *arg) {
    backlog_cond *c = arg;
    long long want = c->appended_at_least < MAX_APPENDS ? c->appended_at_least : MAX_APPENDS;
    return listener_info(c->l).held >= BACKLOG && atomic_load(&c->w->appended) >= want;
}

static long long pending(const char *url, const char *ns) {
    redisReply *r = raw_cmdf(url, "XPENDING {%s}:s:" SUBJECT " " GROUP, ns);
    long long n =
        r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

typedef struct reference {
    long long version[ORDERS];
    long long events;
} reference;

static eddy_status ref_add(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    reference *ref = user;
    int k = order_of(meta->stream_id);
    if (meta->version > ref->version[k])
        ref->version[k] = meta->version;
    ref->events++;
    return EDDY_OK;
}

typedef struct drained_cond {
    listener *l;
    const reference *ref;
} drained_cond;

/* Every order at its last stored version, and nothing left unacknowledged. */
static bool drained(void *arg) {
    drained_cond *d = arg;
    pthread_mutex_lock(&d->l->rm->m);
    bool complete = true;
    for (int k = 0; k < ORDERS && complete; k++)
        complete = d->l->rm->version[k] == d->ref->version[k];
    pthread_mutex_unlock(&d->l->rm->m);
    return complete && pending(d->l->s.url, d->l->s.ns) == 0;
}

/* ---- the test ----------------------------------------------------------------------------------
 */

typedef struct combo {
    bool redis;
    bool reactive;
} combo;

static combo combos[] = {{false, false}, {false, true}, {true, false}, {true, true}};

ParameterizedTestParameters(feed_replay_dedup, killed_during_catch_up_no_event_applied_twice) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}

ParameterizedTest(combo *c, feed_replay_dedup, killed_during_catch_up_no_event_applied_twice,
                  .timeout = 240) {
    const char *name = c->reactive ? "reactive" : "blocking";
    const char *backend = c->redis ? "redis" : "memory";
    char url[160], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, c->redis, "feed-dedup", url, sizeof(url), ns, sizeof(ns));
    s.block_ms = 100;
    s.workers = 1;                 /* live applies in delivery order */
    s.read_batch = 4000;           /* room for the held backlog */
    s.instance = "listener";       /* each incarnation gets back what the dead ones held */
    s.redelivery_idle_ms = 600000; /* nothing is claimed: the backlog comes back by name */
    s.redelivery_backoff_ms = 0;
    s.max_deliveries = 1000;

    static read_model rm;
    memset(&rm, 0, sizeof(rm));
    pthread_mutex_init(&rm.m, NULL);
    listener l = {.reactive = c->reactive, .s = s, .rm = &rm};
    static writer w;
    memset(&w, 0, sizeof(w));
    eddy_settings ws = s;
    ws.instance = "writer";
    w.s = &ws;

    long long held_at_catch_up[KILLS + 1] = {0};
    for (int incarnation = 0; incarnation <= KILLS; incarnation++) {
        bool dies = incarnation < KILLS;
        listener_start(&l);
        if (incarnation == 0) /* the group exists now: everything appended reaches it */
            cr_assert_eq(pthread_create(&w.thread, NULL, writer_main, &w), 0);
        backlog_cond bc = {&l, &w, atomic_load(&w.appended) + 2 * BACKLOG};
        cr_assert(pump_until(&l, backlog_held, &bc, 120000),
                  "incarnation %d never held %d events (held %zu)", incarnation, BACKLOG,
                  listener_info(&l).held);
        held_at_catch_up[incarnation] = (long long)listener_info(&l).held;
        /* Killed halfway through the history it is about to replay. */
        rm_reset(&rm, dies ? atomic_load(&w.appended) / 2 : 0);
        char detail[EDDY_ERROR_DETAIL_MAX];
        eddy_status st = listener_catch_up(&l, detail, sizeof(detail));
        if (dies) {
            cr_assert_eq(st, EDDY_ERR_HANDLER_FAILED, "incarnation %d: %s: %s", incarnation,
                         eddy_status_name(st), detail);
            listener_kill(&l);
            continue;
        }
        cr_assert_eq(st, EDDY_OK, "the last catch-up: %s: %s", eddy_status_name(st), detail);
    }
    /* Live for a while longer, then the writer stops. */
    backlog_cond more = {&l, &w, atomic_load(&w.appended) + BACKLOG};
    long long end = eddy_test_now_ms() + 120000;
    while (atomic_load(&w.appended) < more.appended_at_least &&
           atomic_load(&w.appended) < MAX_APPENDS && eddy_test_now_ms() < end)
        pump(&l);
    atomic_store(&w.stop, true);
    pthread_join(w.thread, NULL);

    /* The reference: the store's history, folded. */
    static reference ref;
    memset(&ref, 0, sizeof(ref));
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&ws, &store, &err), EDDY_OK, "%s", err.detail);
    long long after = 0, head = 0;
    cr_assert_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    while (after < head) {
        long long next = after;
        cr_assert_eq(eddy_store_read_all(store, after, 512, NULL, ref_add, &ref, &next, &err),
                     EDDY_OK, "%s", err.detail);
        cr_assert_gt(next, after);
        after = next;
    }
    eddy_store_close(store);
    cr_assert_eq(ref.events, atomic_load(&w.appended));

    drained_cond dc = {&l, &ref};
    bool done = pump_until(&l, drained, &dc, 120000);
    eddy_feed_info fi = listener_info(&l);
    long long doubles = rm_get(&rm, &rm.doubles), gaps = rm_get(&rm, &rm.gaps);
    long long applies = rm_get(&rm, &rm.applies);
    printf("FIG feed_replay_dedup %s/%s stored=%lld held_at_catch_up=%lld,%lld,%lld applied=%lld "
           "double=%lld gaps=%lld duplicates_dropped=%llu dedup_cache_size=%d\n",
           name, backend, ref.events, held_at_catch_up[0], held_at_catch_up[1], held_at_catch_up[2],
           applies, doubles, gaps, (unsigned long long)fi.duplicates, DEDUP);
    fflush(stdout);
    cr_expect_eq(doubles, 0, "%s/%s: %lld events applied again, the first %s", name, backend,
                 doubles, rm.first_double);
    cr_expect_eq(gaps, 0, "%s/%s: %lld versions skipped", name, backend, gaps);
    cr_assert(done, "%s/%s: the read model never reached the reference fold (pending %lld)", name,
              backend, pending(url, ns));
    cr_expect_eq(applies, ref.events, "%s/%s: each stored event applied once", name, backend);
    cr_expect_geq(fi.duplicates, BACKLOG, "the held backlog was dropped as replayed");
    for (int k = 0; k < ORDERS; k++)
        cr_expect_eq(rm.version[k], ref.version[k], "order-%d", k);
    listener_kill(&l);
    pthread_mutex_destroy(&rm.m);
}
