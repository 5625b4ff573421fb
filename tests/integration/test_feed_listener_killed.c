/* SPDX-License-Identifier: BSD-3-Clause */
/* A catch-up feed's listener killed, in two scenarios.
 *
 * 1. Its process killed with SIGKILL between apply and acknowledgement, on the fixture's
 *    redis-server. The read model is an order-status map (order -> last status, keyed by the
 *    event's version in its stream, so applying an event again changes nothing). It lives in
 *    the test process, as an external database would: the listener process's projection writes
 *    each applied event to it through a pipe, and kills itself inside apply, after the write and
 *    before eddy_feed_handler can acknowledge, on its KILL_AT-th apply. A second listener (a
 *    fresh feed, another instance, in the test process) claims what the dead one left pending.
 *    The model must then equal a fold of the store's own history, every stored event must have
 *    been applied at least once, and the event applied when the process died again.
 *
 * 2. Killed during its catch-up, again and again, while a writer appends, on both backends and
 *    both front ends, with a read model that is not idempotent: it keeps each order's last
 *    version and counts a double apply whenever it is handed a version it has already seen (and
 *    a gap whenever one is skipped), so a live copy the feed should have dropped fails the test.
 *    The listener subscribes with one consumer name, so each new incarnation first gets back
 *    what the dead ones held and never acknowledged: a held backlog far larger than the feed's
 *    dedup_cache_size (kept small here), which the replay applies as well. Every copy at or
 *    below the replay's position must be dropped, however old. The kill is simulated inside the
 *    process (so that memory:// keeps its engine): the incarnation's projection fails on a
 *    replayed event halfway through the history, so the catch-up fails and the feed
 *    acknowledges nothing it held; its bus, feed and store are then freed. Each incarnation
 *    starts a fresh read model, as a restarted process would; the last one catches up, goes live
 *    and must end equal to a fold of the store's history, each event applied once. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

#define ORDERS 5
#define PER_ORDER 12
#define TOTAL (ORDERS * PER_ORDER)
#define KILL_AT 40
#define SUBJECT "orders.events"
#define GROUP "order-status"

static const char *const statuses[] = {"placed",  "paid",      "packed",
                                       "shipped", "delivered", "returned"};

static void settings_for(eddy_settings *s, const char *url, const char *ns) {
    eddy_settings_init(s);
    s->url = url;
    s->ns = ns;
    s->source = "/tests";
    s->block_ms = 200;
    s->redelivery_idle_ms = 300;
    s->connect_timeout_ms = 1000;
    s->reconnect_min_ms = 20;
    s->reconnect_max_ms = 200;
    s->workers = 2;
    s->log = eddy_test_log;
    s->log_user = "listener-killed";
}

/* ---- the user's event and the feed's codec ---------------------------------------------- */

typedef struct order_ev {
    char id[64];
    char status[32];
} order_ev;

static eddy_status o_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    order_ev *e = calloc(1, sizeof(*e));
    if (!e)
        return EDDY_ERR_NOMEM;
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    snprintf(e->id, sizeof(e->id), "%s", eddy_event_id(ev));
    snprintf(e->status, sizeof(e->status), "%.*s", (int)len, data ? data : "");
    *out = e;
    return EDDY_OK;
}

static void o_free(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *o_id(const void *event, void *user) {
    (void)user;
    return ((const order_ev *)event)->id;
}

/* ---- the read model: order -> (version, status); duplicates and stale versions change nothing */

typedef struct order_row {
    char stream[32];
    long long version;
    char status[32];
} order_row;

typedef struct read_model {
    order_row rows[ORDERS];
    int n;
} read_model;

static void fold(read_model *rm, const char *stream, long long version, const char *status) {
    for (int i = 0; i < rm->n; i++) {
        if (strcmp(rm->rows[i].stream, stream) == 0) {
            if (version > rm->rows[i].version) {
                rm->rows[i].version = version;
                snprintf(rm->rows[i].status, sizeof(rm->rows[i].status), "%s", status);
            }
            return;
        }
    }
    cr_assert_lt(rm->n, ORDERS, "unexpected stream %s", stream);
    order_row *r = &rm->rows[rm->n++];
    snprintf(r->stream, sizeof(r->stream), "%s", stream);
    r->version = version;
    snprintf(r->status, sizeof(r->status), "%s", status);
}

static const order_row *row_of(const read_model *rm, const char *stream) {
    for (int i = 0; i < rm->n; i++)
        if (strcmp(rm->rows[i].stream, stream) == 0)
            return &rm->rows[i];
    return NULL;
}

/* ---- the reference: the store's history, read back and folded ---------------------------- */

typedef struct reference {
    read_model rm;
    char ids[TOTAL][64];
    int n;
} reference;

static eddy_status ref_add(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    reference *ref = user;
    cr_assert_lt(ref->n, TOTAL, "more stored events than appended");
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    char status[32];
    snprintf(status, sizeof(status), "%.*s", (int)len, data ? data : "");
    fold(&ref->rm, meta->stream_id, meta->version, status);
    snprintf(ref->ids[ref->n++], sizeof(ref->ids[0]), "%s", eddy_event_id(ev));
    return EDDY_OK;
}

static int ref_index(const reference *ref, const char *id) {
    for (int i = 0; i < ref->n; i++)
        if (strcmp(ref->ids[i], id) == 0)
            return i;
    return -1;
}

/* ---- the listener process --------------------------------------------------------------- */

typedef struct child_model {
    pthread_mutex_t m;
    int fd; /* the read model's "database": a pipe to the test process */
    int applied;
} child_model;

/* Writes the event to the read model, then, on the KILL_AT-th apply, dies before returning:
 * applied, never acknowledged. The lock keeps the other worker from writing after it. */
static eddy_status child_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                               void *user) {
    child_model *cm = user;
    order_ev *e = event;
    if (!meta) {
        if (err)
            snprintf(err->detail, sizeof(err->detail), "no metadata for %s", e->id);
        return EDDY_ERR_ILLEGAL_STATE;
    }
    char line[192];
    int n = snprintf(line, sizeof(line), "%s %s %lld %s\n", e->id, meta->stream_id, meta->version,
                     e->status);
    pthread_mutex_lock(&cm->m);
    if (write(cm->fd, line, (size_t)n) != n) {
        pthread_mutex_unlock(&cm->m);
        return EDDY_ERR_IO;
    }
    if (++cm->applied == KILL_AT)
        raise(SIGKILL);
    pthread_mutex_unlock(&cm->m);
    return EDDY_OK;
}

static eddy_feed_config feed_config(eddy_projection proj) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "order-status";
    cfg.projection = proj;
    cfg.projection.keyed_by_metadata = true;
    cfg.decode = o_decode;
    cfg.free_event = o_free;
    cfg.event_id = o_id;
    cfg.checkpoints = NULL; /* the listener goes live: no replay, no marker */
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    return cfg;
}

static eddy_subscription_spec listener_spec(void *feed, eddy_handler_fn handler) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "order-status";
    sp.pattern = SUBJECT;
    sp.shape = EDDY_COMPETING;
    sp.group = GROUP;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = handler;
    sp.user = feed;
    return sp;
}

/* Runs in the forked process: never returns. */
static void listener_main(const char *url, const char *ns, int report_fd, int ready_fd) {
    static child_model cm;
    pthread_mutex_init(&cm.m, NULL);
    cm.fd = report_fd;
    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = "listener-1";
    eddy_store *store = NULL;
    if (eddy_store_open(&s, &store, NULL) != EDDY_OK)
        _exit(3);
    eddy_projection proj = {0};
    proj.apply = child_apply;
    proj.user = &cm;
    eddy_feed_config cfg = feed_config(proj);
    eddy_feed *feed = NULL;
    if (eddy_feed_new(store, &cfg, &feed, NULL) != EDDY_OK ||
        eddy_feed_go_live(feed, NULL, NULL) != EDDY_OK)
        _exit(4);
    eddy_subscription_spec sp = listener_spec(feed, eddy_feed_handler);
    eddy_bus *bus = NULL;
    if (eddy_bus_new(&s, &sp, 1, &bus, NULL) != EDDY_OK || eddy_bus_start(bus, NULL) != EDDY_OK)
        _exit(5);
    if (write(ready_fd, "r", 1) != 1)
        _exit(6);
    for (;;)
        pause(); /* until it kills itself */
}

/* ---- the survivor (in the test process) ------------------------------------------------- */

typedef struct survivor_model {
    pthread_mutex_t m;
    read_model *rm; /* the same read model the dead process wrote to */
    int counts[TOTAL];
    const reference *ref;
    int unknown;
} survivor_model;

static eddy_status survivor_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                                  void *user) {
    survivor_model *sm = user;
    order_ev *e = event;
    if (!meta) {
        if (err)
            snprintf(err->detail, sizeof(err->detail), "no metadata for %s", e->id);
        return EDDY_ERR_ILLEGAL_STATE;
    }
    pthread_mutex_lock(&sm->m);
    fold(sm->rm, meta->stream_id, meta->version, e->status);
    int i = ref_index(sm->ref, e->id);
    if (i < 0)
        sm->unknown++;
    else
        sm->counts[i]++;
    pthread_mutex_unlock(&sm->m);
    return EDDY_OK;
}

/* ---- conditions waited for ---------------------------------------------------------------- */

typedef struct group_cond {
    const char *url;
    const char *ns;
} group_cond;

static bool group_exists(void *user) {
    group_cond *g = user;
    redisReply *r = raw_cmdf(g->url, "XINFO GROUPS {%s}:s:" SUBJECT, g->ns);
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1;
    if (r)
        freeReplyObject(r);
    return ok;
}

static long long pending(const char *url, const char *ns) {
    redisReply *r = raw_cmdf(url, "XPENDING {%s}:s:" SUBJECT " " GROUP, ns);
    long long n =
        r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

typedef struct drained_cond {
    survivor_model *sm;
    const reference *ref;
    const char *url;
    const char *ns;
} drained_cond;

/* Every order at its last status, and nothing left pending in the group. */
static bool drained(void *user) {
    drained_cond *d = user;
    bool complete = true;
    pthread_mutex_lock(&d->sm->m);
    for (int i = 0; i < d->ref->rm.n && complete; i++) {
        const order_row *have = row_of(d->sm->rm, d->ref->rm.rows[i].stream);
        complete = have && have->version == d->ref->rm.rows[i].version;
    }
    pthread_mutex_unlock(&d->sm->m);
    return complete && pending(d->url, d->ns) == 0;
}

/* ---- the test ----------------------------------------------------------------------------- */

Test(feed_listener_killed, killed_between_apply_and_ack_projection_equals_reference_fold,
     .timeout = 120) {
    const char *url = eddy_test_redis_url();
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "feed-kill");

    int report[2], ready[2];
    cr_assert_eq(pipe(report), 0);
    cr_assert_eq(pipe(ready), 0);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        close(report[0]);
        close(ready[0]);
        listener_main(url, ns, report[1], ready[1]);
    }
    /* A dead child then reads as EOF on both pipes, not a hang. */
    close(report[1]);
    close(ready[1]);
    char c;
    cr_assert_eq(read(ready[0], &c, 1), 1, "the listener process did not start");
    close(ready[0]);
    /* The group starts at "$": append only once the listener created it. */
    group_cond gc = {url, ns};
    cr_assert(eddy_test_wait_until(group_exists, &gc, 30000), "the group was never created");

    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = "listener-2";
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    /* Orders interleaved, so each order's last status comes near the end. */
    for (int v = 1; v <= PER_ORDER; v++) {
        for (int k = 0; k < ORDERS; k++) {
            char id[64], stream[32];
            snprintf(id, sizeof(id), "order-%d-v%d", k, v);
            snprintf(stream, sizeof(stream), "order-%d", k);
            eddy_event *ev = make_event(id, "order.status");
            const char *st = statuses[(size_t)(v + k) % (sizeof(statuses) / sizeof(*statuses))];
            cr_assert_eq(eddy_event_set_data(ev, st, strlen(st)), EDDY_OK);
            eddy_append_opts o;
            eddy_append_opts_init(&o);
            o.publish_subject = SUBJECT;
            const eddy_event *evs[] = {ev};
            cr_assert_eq(eddy_store_append(store, stream, evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                         err.detail);
            eddy_event_free(ev);
        }
    }

    /* The reference: the history as stored, folded directly. */
    static reference ref;
    memset(&ref, 0, sizeof(ref));
    long long after = 0, head = 0;
    cr_assert_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    while (after < head) {
        long long next = after;
        cr_assert_eq(eddy_store_read_page(store, after, 16, NULL, ref_add, &ref, &next, &err),
                     EDDY_OK, "%s", err.detail);
        cr_assert_gt(next, after);
        after = next;
    }
    cr_assert_eq(ref.n, TOTAL);
    cr_assert_eq(ref.rm.n, ORDERS);

    /* The dead process's applies, read until it dies (EOF), folded into the read model. */
    static read_model model;
    memset(&model, 0, sizeof(model));
    static int child_counts[TOTAL];
    memset(child_counts, 0, sizeof(child_counts));
    FILE *in = fdopen(report[0], "r");
    cr_assert(in);
    char line[192], last_id[64] = "";
    int lines = 0;
    while (fgets(line, sizeof(line), in)) {
        char id[64], stream[32], status[32];
        long long version = 0;
        cr_assert_eq(sscanf(line, "%63s %31s %lld %31s", id, stream, &version, status), 4, "%s",
                     line);
        fold(&model, stream, version, status);
        int i = ref_index(&ref, id);
        cr_assert_geq(i, 0, "the listener applied an unknown event %s", id);
        child_counts[i]++;
        snprintf(last_id, sizeof(last_id), "%s", id);
        lines++;
    }
    fclose(in);
    int wst = 0;
    cr_assert_eq(waitpid(child, &wst, 0), child);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL,
              "the listener must die by SIGKILL inside apply (status %d)", wst);
    cr_assert_eq(lines, KILL_AT, "applies reported before the death: %d", lines);
    cr_assert_geq(pending(url, ns), 1, "the event applied at the death was never acknowledged");

    /* The survivor: a fresh feed and listener, another instance, a short redelivery idle. */
    static survivor_model sm;
    memset(&sm, 0, sizeof(sm));
    pthread_mutex_init(&sm.m, NULL);
    sm.rm = &model;
    sm.ref = &ref;
    eddy_projection proj = {0};
    proj.apply = survivor_apply;
    proj.user = &sm;
    eddy_feed_config cfg = feed_config(proj);
    eddy_feed *feed = NULL;
    cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_go_live(feed, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_subscription_spec sp = listener_spec(feed, eddy_feed_handler);
    eddy_bus *bus = NULL;
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    drained_cond dc = {&sm, &ref, url, ns};
    bool done = eddy_test_wait_until(drained, &dc, 60000);
    eddy_bus_stop(bus);
    cr_assert(done, "the survivor did not bring every order to its last status (pending %lld)",
              pending(url, ns));

    /* The read model equals the reference fold. */
    cr_expect_eq(model.n, ref.rm.n);
    for (int i = 0; i < ref.rm.n; i++) {
        const order_row *want = &ref.rm.rows[i];
        const order_row *have = row_of(&model, want->stream);
        cr_assert(have, "%s missing from the read model", want->stream);
        cr_expect_eq(have->version, want->version, "%s", want->stream);
        cr_expect_str_eq(have->status, want->status, "%s", want->stream);
    }
    /* Every stored event applied at least once across both processes. */
    cr_expect_eq(sm.unknown, 0);
    for (int i = 0; i < TOTAL; i++)
        cr_expect_geq(child_counts[i] + sm.counts[i], 1, "%s never applied", ref.ids[i]);
    /* The event applied when the listener died was applied again by the survivor. */
    int died = ref_index(&ref, last_id);
    cr_assert_geq(died, 0);
    cr_expect_geq(sm.counts[died], 1, "%s (applied at the death) not applied again", last_id);
    eddy_consumer_stats cs;
    cr_assert_eq(eddy_bus_consumer_stats(bus, "order-status", &cs), EDDY_OK);
    cr_expect_geq(cs.redelivered, 1, "the dead listener's pending entries were claimed");
    cr_expect_eq(cs.failed, 0);

    eddy_bus_free(bus);
    eddy_feed_free(feed);
    eddy_store_close(store);
    pthread_mutex_destroy(&sm.m);
}

/* ==== 2. killed during its catch-up, a read model that is not idempotent ================== */

#define RESTART_DEDUP 16    /* the feed's id caches: far below the held backlog */
#define RESTART_BACKLOG 300 /* each catch-up starts with at least this many events held */
#define RESTART_KILLS 2
#define RESTART_MAX_APPENDS 50000 /* below max_buffered_events: nothing is refused for room */

/* ---- the read model: order -> last version, not idempotent --------------------------------- */

typedef struct version_model {
    pthread_mutex_t m;
    long long version[ORDERS];
    long long applies, doubles, gaps;
    bool replaying;
    long long replayed, kill_at; /* kill_at > 0: fail the kill_at-th replayed event */
    char first_double[96];
} version_model;

static int order_of(const char *stream) {
    int k = -1;
    cr_assert_eq(sscanf(stream, "order-%d", &k), 1, "unexpected stream %s", stream);
    cr_assert(k >= 0 && k < ORDERS, "unexpected stream %s", stream);
    return k;
}

static eddy_status rm_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    version_model *rm = user;
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
    version_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = true;
    pthread_mutex_unlock(&rm->m);
    return EDDY_OK;
}

static eddy_status rm_completed(eddy_error *err, void *user) {
    (void)err;
    version_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = false;
    pthread_mutex_unlock(&rm->m);
    return EDDY_OK;
}

static void rm_abandoned(void *user) {
    version_model *rm = user;
    pthread_mutex_lock(&rm->m);
    rm->replaying = false;
    pthread_mutex_unlock(&rm->m);
}

static void rm_reset(version_model *rm, long long kill_at) {
    pthread_mutex_lock(&rm->m);
    memset(rm->version, 0, sizeof(rm->version));
    rm->applies = rm->doubles = rm->gaps = rm->replayed = 0;
    rm->replaying = false;
    rm->kill_at = kill_at;
    rm->first_double[0] = '\0';
    pthread_mutex_unlock(&rm->m);
}

static long long rm_get(version_model *rm, const long long *field) {
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
    for (long long n = 0; n < RESTART_MAX_APPENDS && !atomic_load(&w->stop); n++) {
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
    version_model *rm;
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

static eddy_feed_config restart_feed_config(version_model *rm) {
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
    cfg.dedup_cache_size = RESTART_DEDUP;
    cfg.page_size = 128;
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    return cfg; /* no marker: every catch-up replays the whole history */
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

static void on_rbus_ready(eddy_status st, const eddy_error *err, void *user) {
    cr_assert_eq(st, EDDY_OK, "rbus start: %s", err ? err->detail : "");
    *(int *)user = 1;
}

static bool flag_set(void *arg) { return *(int *)arg != 0; }

static void listener_start(listener *l) {
    eddy_error err = {0};
    eddy_feed_config cfg = restart_feed_config(l->rm);
    if (l->reactive) {
        l->loop = ev_loop_new(EVFLAG_AUTO);
        cr_assert(l->loop);
        cr_assert_eq(eddy_rstore_open(l->loop, &l->s, &l->rstore, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_rfeed_new(l->loop, l->rstore, &cfg, NULL, &l->rfeed, &err), EDDY_OK, "%s",
                     err.detail);
        eddy_subscription_spec sp = listener_spec(l->rfeed, eddy_rfeed_handler);
        eddy_test_share_reads(&l->s);
        cr_assert_eq(eddy_rbus_new(l->loop, &l->s, &sp, 1, &l->rbus, &err), EDDY_OK, "%s",
                     err.detail);
        int ready = 0;
        cr_assert_eq(eddy_rbus_start(l->rbus, on_rbus_ready, &ready, &err), EDDY_OK, "%s",
                     err.detail);
        cr_assert(pump_until(l, flag_set, &ready, 30000), "the reactive bus never started");
    } else {
        cr_assert_eq(eddy_store_open(&l->s, &l->store, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_feed_new(l->store, &cfg, &l->feed, &err), EDDY_OK, "%s", err.detail);
        eddy_subscription_spec sp = listener_spec(l->feed, eddy_feed_handler);
        eddy_test_share_reads(&l->s);
        cr_assert_eq(eddy_bus_new(&l->s, &sp, 1, &l->bus, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_bus_start(l->bus, &err), EDDY_OK, "%s", err.detail);
    }
}

static eddy_feed_info listener_info(listener *l) {
    eddy_feed_info i;
    cr_assert_eq(l->reactive ? eddy_rfeed_stats(l->rfeed, &i) : eddy_feed_stats(l->feed, &i),
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
    long long want =
        c->appended_at_least < RESTART_MAX_APPENDS ? c->appended_at_least : RESTART_MAX_APPENDS;
    return listener_info(c->l).held >= RESTART_BACKLOG && atomic_load(&c->w->appended) >= want;
}

typedef struct version_ref {
    long long version[ORDERS];
    long long events;
} version_ref;

static eddy_status version_ref_add(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    version_ref *ref = user;
    int k = order_of(meta->stream_id);
    if (meta->version > ref->version[k])
        ref->version[k] = meta->version;
    ref->events++;
    return EDDY_OK;
}

typedef struct folded_cond {
    listener *l;
    const version_ref *ref;
} folded_cond;

/* Every order at its last stored version, and nothing left unacknowledged. */
static bool folded_and_acked(void *arg) {
    folded_cond *d = arg;
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

    static version_model rm;
    memset(&rm, 0, sizeof(rm));
    pthread_mutex_init(&rm.m, NULL);
    listener l = {.reactive = c->reactive, .s = s, .rm = &rm};
    static writer w;
    memset(&w, 0, sizeof(w));
    eddy_settings ws = s;
    ws.instance = "writer";
    w.s = &ws;

    long long held_at_catch_up[RESTART_KILLS + 1] = {0};
    for (int incarnation = 0; incarnation <= RESTART_KILLS; incarnation++) {
        bool dies = incarnation < RESTART_KILLS;
        listener_start(&l);
        if (incarnation == 0) /* the group exists now: everything appended reaches it */
            cr_assert_eq(pthread_create(&w.thread, NULL, writer_main, &w), 0);
        backlog_cond bc = {&l, &w, atomic_load(&w.appended) + 2 * RESTART_BACKLOG};
        cr_assert(pump_until(&l, backlog_held, &bc, 120000),
                  "incarnation %d never held %d events (held %zu)", incarnation, RESTART_BACKLOG,
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
    backlog_cond more = {&l, &w, atomic_load(&w.appended) + RESTART_BACKLOG};
    long long end = eddy_test_now_ms() + 120000;
    while (atomic_load(&w.appended) < more.appended_at_least &&
           atomic_load(&w.appended) < RESTART_MAX_APPENDS && eddy_test_now_ms() < end)
        pump(&l);
    atomic_store(&w.stop, true);
    pthread_join(w.thread, NULL);

    /* The version_ref: the store's history, folded. */
    static version_ref ref;
    memset(&ref, 0, sizeof(ref));
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&ws, &store, &err), EDDY_OK, "%s", err.detail);
    long long after = 0, head = 0;
    cr_assert_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    while (after < head) {
        long long next = after;
        cr_assert_eq(
            eddy_store_read_page(store, after, 512, NULL, version_ref_add, &ref, &next, &err),
            EDDY_OK, "%s", err.detail);
        cr_assert_gt(next, after);
        after = next;
    }
    eddy_store_close(store);
    cr_assert_eq(ref.events, atomic_load(&w.appended));

    folded_cond dc = {&l, &ref};
    bool done = pump_until(&l, folded_and_acked, &dc, 120000);
    eddy_feed_info fi = listener_info(&l);
    long long doubles = rm_get(&rm, &rm.doubles), gaps = rm_get(&rm, &rm.gaps);
    long long applies = rm_get(&rm, &rm.applies);
    printf("FIG feed_replay_dedup %s/%s stored=%lld held_at_catch_up=%lld,%lld,%lld applied=%lld "
           "double=%lld gaps=%lld duplicates_dropped=%llu dedup_cache_size=%d\n",
           name, backend, ref.events, held_at_catch_up[0], held_at_catch_up[1], held_at_catch_up[2],
           applies, doubles, gaps, (unsigned long long)fi.duplicates, RESTART_DEDUP);
    fflush(stdout);
    cr_expect_eq(doubles, 0, "%s/%s: %lld events applied again, the first %s", name, backend,
                 doubles, rm.first_double);
    cr_expect_eq(gaps, 0, "%s/%s: %lld versions skipped", name, backend, gaps);
    cr_assert(done, "%s/%s: the read model never reached the version_ref fold (pending %lld)", name,
              backend, pending(url, ns));
    cr_expect_eq(applies, ref.events, "%s/%s: each stored event applied once", name, backend);
    cr_expect_geq(fi.duplicates, RESTART_BACKLOG, "the held backlog was dropped as replayed");
    for (int k = 0; k < ORDERS; k++)
        cr_expect_eq(rm.version[k], ref.version[k], "order-%d", k);
    listener_kill(&l);
    pthread_mutex_destroy(&rm.m);
}