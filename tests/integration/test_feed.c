/* SPDX-License-Identifier: BSD-3-Clause */
/* Catch-up projection feeds, one table of scenarios run on both front ends (blocking and reactive,
 * through feed_driver.h over store_driver.h) and both backends (memory:// and the fixture's
 * redis-server), with the real event store and its checkpoint storage: live events held until a
 * catch-up, which replays the history and then applies them once each in order; a marker that
 * skips the replay; go-live, which writes no marker, and a later catch-up under waiting live
 * events; freeing a feed with callers waiting; stopping a running replay, a live feed and an idle
 * one; a catch-up asked for from a live apply; the projection's own catch-up, go-live and accept
 * from an apply during the replay; a replay that holds one page at a time; a failed
 * catch-up, after which everything is refused (a live feed applying first what it held); a
 * listener (a bus subscription feeding the feed through the front end's feed handler), whose
 * outcome decides the acknowledgement; the buffer limit; bad arguments; a held event whose apply
 * fails at the end of a catch-up, which fails only its caller; go-live waiting for a running
 * catch-up, with its outcome; a projection keyed by metadata; a live failure that fails only its
 * caller; writers appending while the feed switches from replay to live, which lose and double
 * nothing; an accept that does not wait (an offer), which completes once. A catch-up that must
 * be caught running is held at its first step (the checkpoint's exists, before it reads where the
 * history ends) or at its last (the checkpoint's save, after the replay and before the feed goes
 * live) by a checkpoint storage whose answer the test releases (domain_driver.h's gate: the
 * blocking step waits on its thread, the reactive one's completion is kept while the loop runs
 * on). Calls left in flight (a listener waiting in its accept) run on a
 * thread of their own (blocking) or wait for their completion on the loop (reactive); nothing
 * sleeps to let something happen: the test waits on the feed's own counters.
 *
 * What test_feed_blocking.c and test_rfeed.c still hold belongs to one front end alone, each with
 * the reason. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain_driver.h"
#include "eddy/feed.h"
#include "eddy_test.h"
#include "feed_driver.h"
#include "raw.h"
#include "recorder.h"
#include "store_driver.h"
#include "test_backend.h"
#include "test_codec.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

/* One front end's scenarios: the first two combinations are blocking, the last two reactive. */
#define FTEST_ONE(name, first)                                                                     \
    ParameterizedTestParameters(feed, name) {                                                      \
        return cr_make_param_array(combo, combos + (first), 2);                                    \
    }                                                                                              \
    ParameterizedTest(combo *p, feed, name, .timeout = 60)

#define FTEST(name)                                                                                \
    ParameterizedTestParameters(feed, name) { return cr_make_param_array(combo, combos, 4); }      \
    ParameterizedTest(combo *p, feed, name, .timeout = 60)

/* The front end under test; each test runs in a process of its own. */
static const store_driver *sd;
static const feed_driver *fd;
static const domain_driver *dd; /* for its checkpoint gate */

/* ---- the read model ---------------------------------------------------------------------- */

#define MODEL_MAX 1024

typedef struct model {
    pthread_mutex_t m;
    char ids[MODEL_MAX][64];
    bool meta[MODEL_MAX];
    char streams[MODEL_MAX][32];
    long long versions[MODEL_MAX];
    int n;
    int started, completed, abandoned;
    char fail_id[64];
    int fail_times; /* -1: always */
    int log_errors;
    char log[512];
    /* The projection frees its own feed: in the apply of free_on, or in replay_started. */
    tfeed *feed;
    char free_on[64];
    bool started_frees;
    char stop_on[64];         /* the apply of stop_on stops the feed's catch-up */
    char call_on[64];         /* the apply of call_on makes a call of call_kind on the feed */
    feed_call_kind call_kind; /* (an accept feeds own) */
    uev own;
    tcall *inner; /* ... which is this call */
    /* Called first in every apply, with the event's id. */
    void (*on_apply)(const char *id, void *arg);
    void *on_apply_arg;
    /* Blocking only: the apply of gate_id waits until the gate opens (a reactive apply runs on
     * the loop, which the wait would stop). */
    pthread_cond_t c;
    char gate_id[64];
    bool at_gate, gate_open;
} model;

static model M;

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)user;
    uev *e = event;
    if (M.on_apply)
        M.on_apply(e->id, M.on_apply_arg);
    pthread_mutex_lock(&M.m);
    if (M.fail_id[0] && strcmp(e->id, M.fail_id) == 0 && M.fail_times != 0) {
        if (M.fail_times > 0)
            M.fail_times--;
        pthread_mutex_unlock(&M.m);
        snprintf(err->detail, sizeof(err->detail), "the model rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(M.n < MODEL_MAX);
    snprintf(M.ids[M.n], sizeof(M.ids[0]), "%s", e->id);
    M.meta[M.n] = meta != NULL;
    snprintf(M.streams[M.n], sizeof(M.streams[0]), "%s",
             meta && meta->stream_id ? meta->stream_id : "");
    M.versions[M.n] = meta ? meta->version : 0;
    M.n++;
    bool free_now = M.free_on[0] && strcmp(e->id, M.free_on) == 0;
    if (free_now)
        M.free_on[0] = '\0';
    bool stop_now = M.stop_on[0] && strcmp(e->id, M.stop_on) == 0;
    if (stop_now)
        M.stop_on[0] = '\0';
    bool call_now = M.call_on[0] && strcmp(e->id, M.call_on) == 0;
    if (call_now)
        M.call_on[0] = '\0';
    if (M.gate_id[0] && strcmp(e->id, M.gate_id) == 0) {
        M.at_gate = true;
        pthread_cond_broadcast(&M.c);
        while (!M.gate_open)
            pthread_cond_wait(&M.c, &M.m);
    }
    pthread_mutex_unlock(&M.m);
    if (free_now)
        fd->free_from_projection(M.feed);
    if (stop_now)
        fd->stop_from_projection(M.feed);
    if (call_now) {
        tcall *inner = fd->start_from_projection(M.feed, M.call_kind, NULL, &M.own);
        pthread_mutex_lock(&M.m);
        M.inner = inner;
        pthread_mutex_unlock(&M.m);
    }
    return EDDY_OK;
}

static eddy_status m_started(eddy_error *err, void *user) {
    (void)err, (void)user;
    pthread_mutex_lock(&M.m);
    M.started++;
    bool free_now = M.started_frees;
    M.started_frees = false;
    pthread_mutex_unlock(&M.m);
    if (free_now)
        fd->free_from_projection(M.feed);
    return EDDY_OK;
}

static eddy_status m_completed(eddy_error *err, void *user) {
    (void)err, (void)user;
    pthread_mutex_lock(&M.m);
    M.completed++;
    pthread_mutex_unlock(&M.m);
    return EDDY_OK;
}

static void m_abandoned(void *user) {
    (void)user;
    pthread_mutex_lock(&M.m);
    M.abandoned++;
    M.n = 0; /* a view that buffers discards what the replay gave it */
    pthread_mutex_unlock(&M.m);
}

static void m_log(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    eddy_test_log(level, msg, "feed");
    if (level != EDDY_LOG_ERROR)
        return;
    pthread_mutex_lock(&M.m);
    M.log_errors++;
    snprintf(M.log, sizeof(M.log), "%s", msg);
    pthread_mutex_unlock(&M.m);
}

/* The applied ids joined with ','. */
static const char *applied(void) {
    static char buf[8192];
    buf[0] = '\0';
    pthread_mutex_lock(&M.m);
    for (int i = 0; i < M.n && strlen(buf) < sizeof(buf) - 80; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, M.ids[i]);
    }
    pthread_mutex_unlock(&M.m);
    return buf;
}

static int count_of(const char *id) {
    int k = 0;
    pthread_mutex_lock(&M.m);
    for (int i = 0; i < M.n; i++)
        k += strcmp(M.ids[i], id) == 0;
    pthread_mutex_unlock(&M.m);
    return k;
}

static int model_get(const int *field) {
    pthread_mutex_lock(&M.m);
    int v = *field;
    pthread_mutex_unlock(&M.m);
    return v;
}

/* order.ignored decodes to nothing (the feed skips it), any other type to a uev. */
static eddy_status u_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    if (strcmp(eddy_event_type(ev), "order.ignored") == 0) {
        *out = NULL;
        return EDDY_OK;
    }
    return uev_decode(ev, meta, out, err, user);
}

/* ---- context ----------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    tstore *store;
    eddy_feed_config cfg;
    tfeed *feed;
    tgate *gate; /* new_gated_feed's */
} ctx;

static void setup(ctx *c, const combo *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    memset(&M, 0, sizeof(M));
    pthread_mutex_init(&M.m, NULL);
    pthread_cond_init(&M.c, NULL);
    M.fail_times = -1;
    sd = p->frontend ? &reactive_store_driver : &blocking_store_driver;
    fd = p->frontend ? &reactive_feed_driver : &blocking_feed_driver;
    dd = p->frontend ? &reactive_domain_driver : &blocking_domain_driver;
    eddy_test_settings(&c->s, p->backend, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    c->s.block_ms = 100;
    c->s.redelivery_idle_ms = 200;
    eddy_error err = {0};
    cr_assert_eq(sd->open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_config_init(&c->cfg);
    c->cfg.id = "order-status";
    c->cfg.projection.apply = m_apply;
    c->cfg.projection.replay_started = m_started;
    c->cfg.projection.replay_completed = m_completed;
    c->cfg.projection.replay_abandoned = m_abandoned;
    c->cfg.decode = u_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.page_size = 3;
    c->cfg.log = m_log;
}

static void new_feed(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(fd->new_feed(c->store, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
    M.feed = c->feed;
}

static void wait_at_apply_gate(void) {
    pthread_mutex_lock(&M.m);
    while (!M.at_gate)
        pthread_cond_wait(&M.c, &M.m);
    pthread_mutex_unlock(&M.m);
}

static void open_apply_gate(void) {
    pthread_mutex_lock(&M.m);
    M.gate_open = true;
    pthread_cond_broadcast(&M.c);
    pthread_mutex_unlock(&M.m);
}

/* A feed whose catch-up can be held at its first step (exists) or last (save). */
static void new_gated_feed(ctx *c, bool hold_exists, bool hold_save) {
    c->gate = dd->gate_new(c->store);
    dd->gate_hold(c->gate, hold_exists, hold_save);
    eddy_error err = {0};
    cr_assert_eq(fd->new_gated_feed(c->store, &c->cfg, c->gate, &c->feed, &err), EDDY_OK, "%s",
                 err.detail);
    M.feed = c->feed;
}

static bool gate_held(void *user) { return dd->gate_held(user); }

static void wait_gate(ctx *c) {
    cr_assert(eddy_test_wait_until(gate_held, c->gate, 20000),
              "the catch-up never reached the gate");
}

static void teardown(ctx *c) {
    fd->free(c->feed);
    dd->gate_free(c->gate);
    sd->close(c->store);
    pthread_mutex_destroy(&M.m);
}

/* Stores an event (and publishes it to subject in the same step; NULL: store only). */
static void append_to(ctx *c, const char *stream, const char *id, const char *subject) {
    eddy_event *ev = make_event(id, "order.placed");
    const eddy_event *evs[] = {ev};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    eddy_error err = {0};
    cr_assert_eq(sd->append(c->store, stream, evs, 1, &o, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
}

static void append(ctx *c, const char *stream, const char *id) { append_to(c, stream, id, NULL); }

static void append_n(ctx *c, int n) {
    char id[16];
    for (int i = 1; i <= n; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        append(c, i % 2 ? "order-1" : "order-2", id);
    }
}

static bool marker(ctx *c, char *value, size_t size) {
    eddy_checkpoints cp = sd->checkpoints(c->store);
    bool found = false;
    char buf[64];
    cr_assert_eq(cp.ops->read(cp.self, "order-status", buf, sizeof(buf), &found, NULL), EDDY_OK);
    if (value)
        snprintf(value, size, "%s", found ? buf : "");
    return found;
}

static eddy_feed_info info(ctx *c) {
    eddy_feed_info i;
    cr_assert_eq(fd->get_info(c->feed, &i), EDDY_OK);
    return i;
}

typedef struct held_cond {
    ctx *c;
    size_t n;
} held_cond;

static bool held_at_least(void *user) {
    held_cond *h = user;
    return info(h->c).held >= h->n;
}

static void wait_held(ctx *c, size_t n) {
    held_cond h = {c, n};
    cr_assert(eddy_test_wait_until(held_at_least, &h, 10000), "%zu events held", n);
}

static bool one_waiting(void *user) { return info(user).waiting >= 1; }

static eddy_status accept_id(ctx *c, const char *id, eddy_error *err) {
    uev e;
    snprintf(e.id, sizeof(e.id), "%s", id);
    return fd->accept(c->feed, &e, err);
}

/* ---- holding until catch-up, the marker ---------------------------------------------------- */

FTEST(held_until_catch_up_then_replayed_then_held) {
    ctx c;
    setup(&c, p, "feed-hold");
    append_n(&c, 7);
    new_feed(&c);
    uev x1 = {"x1"}, dupe = {"e4"}, x2 = {"x2"};
    eddy_event_meta meta = {"order-9", 1, 0};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    tcall *dup = fd->start(c.feed, FEED_ACCEPT, NULL, &dupe); /* the live copy of a stored event */
    wait_held(&c, 2);
    tcall *b = fd->start(c.feed, FEED_ACCEPT_META, &meta, &x2);
    wait_held(&c, 3);
    cr_expect_not(fd->finished(a), "the listener waits in its first accept");
    cr_expect_eq(model_get(&M.n), 0);
    cr_expect_not(fd->ready_for_live_delivery(c.feed));
    cr_expect_not(marker(&c, NULL, 0));
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    if (fd->reactive) { /* the blocking callers' threads race once released */
        cr_expect(fd->finished_at(a) && fd->finished_at(a) < fd->finished_at(dup) &&
                      fd->finished_at(dup) < fd->finished_at(b),
                  "held events completed out of order");
    }
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(dup, &err), EDDY_OK, "a duplicate of a replayed event: acknowledge it");
    cr_expect_eq(fd->join(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5,e6,e7,x1,x2", "held ones after, in order");
    cr_expect(M.meta[0], "replayed with metadata");
    cr_expect_not(M.meta[7], "x1 was fed without");
    cr_expect(M.meta[8], "x2 was fed with");
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    char value[64];
    cr_expect(marker(&c, value, sizeof(value)));
    cr_expect_str_eq(value, "7");
    cr_expect(fd->ready_for_live_delivery(c.feed));
    eddy_feed_info i = info(&c);
    cr_expect_eq(i.last, EDDY_FEED_REPLAYED);
    cr_expect_eq(i.replayed, 7);
    cr_expect_eq(i.duplicates, 1);
    cr_expect_eq(accept_id(&c, "x3", &err), EDDY_OK, "live: applied now (%s)", err.detail);
    cr_expect_eq(count_of("x3"), 1);

    /* The marker was written: a new feed with the same id skips the replay. */
    fd->free(c.feed);
    c.feed = NULL;
    new_feed(&c);
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(model_get(&M.started), 1, "the marker did not skip the replay");
    cr_expect_eq(info(&c).last, EDDY_FEED_SKIPPED);
    teardown(&c);
}

FTEST(a_marker_skips_the_replay) {
    ctx c;
    setup(&c, p, "feed-marker");
    append_n(&c, 4);
    eddy_checkpoints cp = sd->checkpoints(c.store);
    cr_assert_eq(cp.ops->save(cp.self, "order-status", "4", NULL), EDDY_OK);
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(model_get(&M.n), 0);
    cr_expect_eq(model_get(&M.started), 0);
    cr_expect_eq(info(&c).last, EDDY_FEED_SKIPPED);
    cr_expect(fd->ready_for_live_delivery(c.feed));
    teardown(&c);
}

/* ---- resuming from the projection's position (projection.position) ------------------------ */

static long long M_position;          /* what m_position answers */
static eddy_status M_position_status; /* ... and with which status */

static eddy_status m_position(long long *position, eddy_error *err, void *user) {
    (void)user;
    *position = M_position;
    if (M_position_status != EDDY_OK)
        snprintf(err->detail, sizeof(err->detail), "the model's store is down");
    return M_position_status;
}

FTEST(a_replay_resumes_after_the_projections_position) {
    ctx c;
    setup(&c, p, "feed-resume");
    append_n(&c, 7);
    c.cfg.projection.position = m_position;
    M_position = 4;
    M_position_status = EDDY_OK;
    new_feed(&c);
    /* Live copies held before the catch-up: at or below the model's position (e3) and at or
     * below what the replay reaches (e6) are duplicates either way. */
    uev e3 = {"e3"}, e6 = {"e6"};
    eddy_event_meta m3 = {"order-1", 2, 3}, m6 = {"order-2", 3, 6};
    tcall *a = fd->start(c.feed, FEED_ACCEPT_META, &m3, &e3);
    wait_held(&c, 1);
    tcall *b = fd->start(c.feed, FEED_ACCEPT_META, &m6, &e6);
    wait_held(&c, 2);
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "e5,e6,e7", "only what came after position 4");
    eddy_feed_info i = info(&c);
    cr_expect_eq(i.replayed, 3);
    cr_expect_eq(i.duplicates, 2);
    cr_expect_eq(model_get(&M.started), 1);
    teardown(&c);

    /* A position that fails, or is negative, fails the catch-up (replay_abandoned runs). */
    for (int bad = 0; bad < 2; bad++) {
        setup(&c, p, "feed-resume-bad");
        append_n(&c, 2);
        c.cfg.projection.position = m_position;
        M_position = bad ? -1 : 0;
        M_position_status = bad ? EDDY_OK : EDDY_ERR_IO;
        new_feed(&c);
        cr_expect_eq(fd->catch_up(c.feed, &err), bad ? EDDY_ERR_INVALID_ARGUMENT : EDDY_ERR_IO,
                     "%s", err.detail);
        cr_expect(strstr(err.detail, bad ? "negative" : "the model's store is down"), "%s",
                  err.detail);
        cr_expect_eq(model_get(&M.n), 0);
        cr_expect_eq(model_get(&M.abandoned), 1);
        teardown(&c);
    }
}

/* ---- metadata, live failures ------------------------------------------------------------- */

FTEST(keyed_by_metadata_without_metadata_is_refused) {
    ctx c;
    setup(&c, p, "feed-keyed");
    c.cfg.projection.keyed_by_metadata = true;
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    uev e = {"x1"};
    cr_expect_eq(fd->accept(c.feed, &e, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(err.detail, "keyed by metadata"), "%s", err.detail);
    cr_expect_eq(model_get(&M.n), 0, "applied without metadata");
    cr_expect(fd->ready_for_live_delivery(c.feed), "a refused event does not fail the feed");
    eddy_event_meta m = {"order-1", 3, 0};
    cr_expect_eq(fd->accept_meta(c.feed, &m, &e, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "x1");
    cr_expect(M.meta[0]);
    cr_expect_eq(fd->accept_meta(c.feed, NULL, &e, &err), EDDY_ERR_INVALID_ARGUMENT);
    teardown(&c);
}

FTEST(a_live_failure_fails_only_its_caller) {
    ctx c;
    setup(&c, p, "feed-livefail");
    /* A marker of an earlier catch-up: a live failure does not touch it (only the feed's own
     * failure deletes it). */
    eddy_checkpoints cp = sd->checkpoints(c.store);
    cr_assert_eq(cp.ops->save(cp.self, "order-status", "0", NULL), EDDY_OK);
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    strcpy(M.fail_id, "bad");
    M.fail_times = 1;
    cr_expect_eq(accept_id(&c, "bad", &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "the model rejects bad"), "%s", err.detail);
    cr_expect(fd->ready_for_live_delivery(c.feed));
    cr_expect_not(fd->refuses_permanently(c.feed));
    cr_expect_eq(accept_id(&c, "good", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(accept_id(&c, "bad", &err), EDDY_OK, "redelivered: applied now (%s)", err.detail);
    cr_expect_str_eq(applied(), "good,bad");
    cr_expect_eq(info(&c).apply_failed, 1);
    cr_expect_eq(model_get(&M.log_errors), 0, "%s", M.log);
    char value[64];
    cr_expect(marker(&c, value, sizeof(value)), "the marker was deleted");
    cr_expect_str_eq(value, "0");
    teardown(&c);
}

FTEST(a_held_failure_at_the_end_of_a_catch_up_fails_only_its_caller) {
    ctx c;
    setup(&c, p, "feed-heldfail");
    append_n(&c, 4);
    new_feed(&c);
    strcpy(M.fail_id, "bad");
    M.fail_times = 1;
    uev x1 = {"x1"}, bad = {"bad"}, x2 = {"x2"};
    eddy_event_meta meta = {"order-9", 1, 0};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    tcall *b = fd->start(c.feed, FEED_ACCEPT, NULL, &bad);
    wait_held(&c, 2);
    tcall *d = fd->start(c.feed, FEED_ACCEPT_META, &meta, &x2);
    wait_held(&c, 3);
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    if (fd->reactive) { /* the blocking callers' threads race once released */
        cr_expect(fd->finished_at(a) && fd->finished_at(a) < fd->finished_at(b) &&
                      fd->finished_at(b) < fd->finished_at(d),
                  "held events completed out of order");
    }
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(b, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "the model rejects bad"), "%s", err.detail);
    cr_expect_eq(fd->join(d, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,x1,x2");
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    cr_expect_eq(model_get(&M.abandoned), 0, "the replay's work was abandoned");
    cr_expect(marker(&c, NULL, 0), "the catch-up succeeded: its marker is written");
    eddy_feed_info i = info(&c);
    cr_expect(i.live);
    cr_expect_not(i.failed);
    cr_expect_eq(i.held, 0);
    cr_expect_eq(i.last, EDDY_FEED_REPLAYED);
    cr_expect_not(fd->refuses_permanently(c.feed));
    cr_expect_not(fd->failure(c.feed, NULL));
    cr_expect(fd->ready_for_live_delivery(c.feed));
    /* live afterwards: a later event is applied, and the failed one when it comes again */
    cr_expect_eq(accept_id(&c, "x3", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(accept_id(&c, "bad", &err), EDDY_OK, "redelivered: applied now (%s)", err.detail);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,x1,x2,x3,bad");
    cr_expect_eq(model_get(&M.log_errors), 0, "%s", M.log);
    /* The marker was kept: a new feed with the same id skips the replay. */
    fd->free(c.feed);
    c.feed = NULL;
    new_feed(&c);
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(model_get(&M.started), 1, "the marker did not skip the replay");
    teardown(&c);
}

/* ---- go-live while a catch-up runs ---------------------------------------------------- */

FTEST(go_live_waits_for_a_catch_up_and_carries_its_failure) {
    ctx c;
    setup(&c, p, "feed-golive-fail");
    append_n(&c, 5);
    new_gated_feed(&c, true, false);
    strcpy(M.fail_id, "e4");
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    tcall *gl = fd->start(c.feed, FEED_GO_LIVE, NULL, NULL);
    cr_assert(eddy_test_wait_until(one_waiting, &c, 10000));
    cr_expect_not(fd->finished(gl), "go-live waits for the catch-up");
    dd->gate_open(c.gate);
    eddy_error err = {0};
    cr_expect_eq(fd->join(cu, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "the model rejects e4"), "%s", err.detail);
    cr_expect_eq(fd->join(gl, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(err.detail, "cause: EDDY_ERR_HANDLER_FAILED"), "%s", err.detail);
    cr_expect(strstr(err.detail, "the model rejects e4"), "go-live names the failure: %s",
              err.detail);
    eddy_error cause = {0};
    cr_expect(fd->failure(c.feed, &cause));
    cr_expect_eq(cause.status, EDDY_ERR_HANDLER_FAILED);
    cr_expect_not(fd->ready_for_live_delivery(c.feed));
    teardown(&c);
}

FTEST(go_live_waits_for_a_catch_up_that_succeeds) {
    ctx c;
    setup(&c, p, "feed-golive-ok");
    append_n(&c, 5);
    new_gated_feed(&c, true, false);
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    tcall *gl = fd->start(c.feed, FEED_GO_LIVE, NULL, NULL);
    cr_assert(eddy_test_wait_until(one_waiting, &c, 10000));
    cr_expect_not(fd->finished(gl), "go-live waits for the catch-up");
    dd->gate_open(c.gate);
    eddy_error err = {0};
    cr_expect_eq(fd->join(cu, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(gl, &err), EDDY_OK, "%s", err.detail);
    cr_expect(marker(&c, NULL, 0), "still a real catch-up");
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5");
    teardown(&c);
}

FTEST(held_until_go_live_which_writes_no_marker) {
    ctx c;
    setup(&c, p, "feed-golive");
    append_n(&c, 4);
    new_gated_feed(&c, false, false);
    uev x1 = {"x1"}, x2 = {"x2"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "x1", "no replay");
    cr_expect_eq(model_get(&M.started), 0, "go-live replayed");
    cr_expect_not(marker(&c, NULL, 0));
    cr_expect(fd->ready_for_live_delivery(c.feed));
    /* A later real catch-up replays the whole history while live events wait. */
    dd->gate_hold(c.gate, true, false);
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    tcall *live = fd->start(c.feed, FEED_ACCEPT, NULL, &x2);
    wait_held(&c, 1);
    dd->gate_open(c.gate);
    cr_expect_eq(fd->join(cu, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(live, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "x1,e1,e2,e3,e4,x2");
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    cr_expect(marker(&c, NULL, 0));
    cr_expect(fd->ready_for_live_delivery(c.feed));
    teardown(&c);
}

/* ---- freeing ------------------------------------------------------------------------------- */

static void *free_main(void *arg) {
    fd->free(arg);
    return NULL;
}

/* Freeing answers every waiting caller with EDDY_ERR_CLOSED: the held event, the catch-up (held
 * at its first step) and the go-live waiting for it. Blocking: at once, then the free waits for
 * the replay's thread, which goes on once the gate opens; reactive: inside the free, the feed's
 * memory kept until the checkpoint operation in flight returned. Then the same from the
 * projection's own callbacks: in an apply during the replay, and in replay_started. */
FTEST(freeing_answers_waiting_callers_with_closed) {
    ctx c;
    setup(&c, p, "feed-free");
    append_n(&c, 4);
    new_gated_feed(&c, true, false);
    uev x1 = {"x1"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    tcall *gl = fd->start(c.feed, FEED_GO_LIVE, NULL, NULL);
    cr_assert(eddy_test_wait_until(one_waiting, &c, 10000));
    pthread_t freer;
    cr_assert_eq(pthread_create(&freer, NULL, free_main, c.feed), 0);
    c.feed = NULL;
    eddy_error err = {0};
    cr_expect_eq(fd->join(a, &err), EDDY_ERR_CLOSED, "%s", eddy_status_name(err.status));
    dd->gate_open(c.gate);
    pthread_join(freer, NULL);
    cr_expect_eq(fd->join(cu, &err), EDDY_ERR_CLOSED);
    cr_expect_eq(fd->join(gl, &err), EDDY_ERR_CLOSED);
    cr_expect_not(marker(&c, NULL, 0));
    cr_expect_eq(count_of("x1"), 0);
    fd->free(NULL);

    for (int where = 0; where < 2; where++) {
        pthread_mutex_lock(&M.m);
        M.n = 0;
        if (where == 0)
            strcpy(M.free_on, "e2");
        else
            M.started_frees = true;
        pthread_mutex_unlock(&M.m);
        dd->gate_free(c.gate);
        new_gated_feed(&c, true, false);
        M.feed = c.feed;
        a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
        wait_held(&c, 1);
        cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
        wait_gate(&c);
        gl = fd->start(c.feed, FEED_GO_LIVE, NULL, NULL);
        cr_assert(eddy_test_wait_until(one_waiting, &c, 10000));
        dd->gate_open(c.gate);
        cr_expect_eq(fd->join(cu, &err), EDDY_ERR_CLOSED, "catch-up (%d): %s", where,
                     eddy_status_name(err.status));
        cr_expect_eq(fd->join(gl, &err), EDDY_ERR_CLOSED, "go-live (%d)", where);
        cr_expect_eq(fd->join(a, &err), EDDY_ERR_CLOSED, "held event (%d)", where);
        cr_expect_leq(model_get(&M.n), where == 0 ? 2 : 0, "applied after the free: %d", M.n);
        cr_expect_eq(count_of("x1"), 0);
        fd->free(c.feed); /* freed by the projection: releases the handle */
        c.feed = NULL;
    }
    teardown(&c);
}

/* ---- stop ------------------------------------------------------------------------------- */

FTEST(stop_on_a_running_replay_leaves_a_new_feed_stopped) {
    ctx c;
    setup(&c, p, "feed-stop");
    append_n(&c, 6);
    new_feed(&c);
    uev x1 = {"x1"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    strcpy(M.stop_on, "e3"); /* the projection stops its own replay */
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "a stopped replay is not a failure: %s",
                 err.detail);
    cr_expect_eq(model_get(&M.abandoned), 1);
    cr_expect_eq(model_get(&M.completed), 0);
    cr_expect_not(marker(&c, NULL, 0));
    cr_expect_eq(fd->join(a, &err), EDDY_ERR_ILLEGAL_STATE, "the waiting event is refused");
    cr_expect(strstr(err.detail, "stopped"), "%s", err.detail);
    cr_expect_eq(accept_id(&c, "x2", &err), EDDY_ERR_ILLEGAL_STATE, "and so is a later one");
    eddy_feed_info i = info(&c);
    cr_expect(i.stopped);
    cr_expect_not(i.failed);
    cr_expect_eq(i.last, EDDY_FEED_STOPPED);
    cr_expect_not(fd->refuses_permanently(c.feed));
    cr_expect_not(fd->ready_for_live_delivery(c.feed));
    /* The next catch-up replays everything again. */
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5,e6");
    cr_expect_eq(accept_id(&c, "x1", &err), EDDY_OK, "redelivered by the broker, applied now");
    teardown(&c);
}

/* Blocking front end only: the stop comes from another thread while the replay's thread is
 * inside an apply (held at a gate there); a reactive apply runs on the loop, where the gate
 * would stop the stop too. */
FTEST_ONE(stop_from_another_thread_on_a_running_replay, 0) {
    ctx c;
    setup(&c, p, "feed-stop-thread");
    append_n(&c, 6);
    new_feed(&c);
    uev x1 = {"x1"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    strcpy(M.gate_id, "e3");
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_at_apply_gate();
    fd->stop_catch_up(c.feed); /* while e3 is being applied */
    open_apply_gate();
    eddy_error err = {0};
    cr_expect_eq(fd->join(cu, &err), EDDY_OK, "a stopped replay is not a failure");
    cr_expect_eq(model_get(&M.abandoned), 1);
    cr_expect_eq(model_get(&M.completed), 0);
    cr_expect_not(marker(&c, NULL, 0));
    cr_expect_eq(fd->join(a, &err), EDDY_ERR_ILLEGAL_STATE, "the waiting event is refused");
    cr_expect(strstr(err.detail, "stopped"), "%s", err.detail);
    cr_expect_eq(info(&c).last, EDDY_FEED_STOPPED);
    teardown(&c);
}

FTEST(a_stop_on_a_live_feed_does_nothing_and_a_projections_stop_delivers) {
    ctx c;
    setup(&c, p, "feed-stoplive");
    append_n(&c, 6);
    new_gated_feed(&c, false, false);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    fd->stop_catch_up(c.feed);
    cr_expect(fd->ready_for_live_delivery(c.feed), "a stop on a live feed does nothing");
    cr_expect_not(fd->refuses_permanently(c.feed));
    cr_expect_eq(accept_id(&c, "a", &err), EDDY_OK, "%s", err.detail);
    fd->stop_catch_up(c.feed);
    cr_expect_eq(accept_id(&c, "a2", &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "a,a2");
    cr_expect_eq(model_get(&M.abandoned), 0);
    /* A catch-up of the live feed, stopped by the projection itself: the event that waited for
     * it is delivered, since the feed was live before. */
    dd->gate_hold(c.gate, true, false);
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    uev b = {"b"};
    tcall *held = fd->start(c.feed, FEED_ACCEPT, NULL, &b);
    wait_held(&c, 1);
    strcpy(M.stop_on, "e3");
    dd->gate_open(c.gate);
    cr_expect_eq(fd->join(cu, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(held, &err), EDDY_OK, "a previously live feed delivers what waited");
    cr_expect_str_eq(applied(), "b", "the model discarded the abandoned replay");
    cr_expect(fd->ready_for_live_delivery(c.feed));
    cr_expect_not(marker(&c, NULL, 0));
    teardown(&c);
}

/* A stop on an idle feed that is not live refuses the waiting events (reactive: inside the
 * stop, before it returns, as eddy/rfeed.h says). */
FTEST(a_stop_on_an_idle_feed_refuses_the_waiting_events) {
    ctx c;
    setup(&c, p, "feed-stopidle");
    new_feed(&c);
    uev x1 = {"x1"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    fd->stop_catch_up(c.feed);
    if (fd->reactive)
        cr_expect(fd->finished(a), "the waiting event was not answered inside stop");
    eddy_error err = {0};
    cr_expect_eq(fd->join(a, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(model_get(&M.n), 0);
    cr_expect(info(&c).stopped);
    teardown(&c);
}

/* ---- calls from the projection's own callbacks --------------------------------------------- */

static bool replay_completed(void *user) {
    (void)user;
    return model_get(&M.completed) >= 1;
}

/* Asked for from a live apply, the catch-up does not run inside it (blocking: the call returns
 * at once and the caller runs it once the apply returned; reactive: its completion comes later
 * on the loop). */
FTEST(a_catch_up_asked_for_from_a_live_apply_runs_after_it) {
    ctx c;
    setup(&c, p, "feed-own-live");
    append_n(&c, 3);
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    strcpy(M.call_on, "x1");
    M.call_kind = FEED_CATCH_UP;
    cr_expect_eq(accept_id(&c, "x1", &err), EDDY_OK, "%s", err.detail);
    pthread_mutex_lock(&M.m);
    tcall *inner = M.inner;
    pthread_mutex_unlock(&M.m);
    cr_assert_not_null(inner, "the apply did not ask");
    /* Its outcome is what the blocking call returns from inside the apply: accepted, to run
     * once the apply returned (reactive: that completion may come before the replay ran). */
    cr_expect_eq(fd->join(inner, &err), EDDY_OK, "%s", err.detail);
    cr_assert(eddy_test_wait_until(replay_completed, NULL, 20000), "the catch-up never ran");
    cr_expect_str_eq(applied(), "x1,e1,e2,e3", "run once the apply returned");
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    cr_expect(marker(&c, NULL, 0));
    cr_expect(fd->ready_for_live_delivery(c.feed));
    teardown(&c);
}

/* From an apply during the replay, the projection's own catch-up and go-live do not wait (on
 * both front ends, eddy/feed.h and eddy/rfeed.h: they only ask; blocking: the call returns at
 * once; reactive: its completion comes later) and the replay goes on to its end. Its own accept
 * differs, each front end as its header says, asserted per front end so that a change to either
 * shows here: the blocking feed refuses it (eddy/feed.h: "an accept that would have to wait is
 * refused with EDDY_ERR_ILLEGAL_STATE", since only the replay's thread, waiting in it, could
 * apply it); the reactive feed holds it and applies it after the replay (eddy/rfeed.h: the
 * projection's own events are applied). */
FTEST(the_projection_calling_its_own_feed_during_a_replay_does_not_wait) {
    static const feed_call_kind kinds[] = {FEED_CATCH_UP, FEED_GO_LIVE, FEED_ACCEPT};
    for (int k = 0; k < 3; k++) {
        ctx c;
        setup(&c, p, "feed-own");
        append_n(&c, 3);
        new_feed(&c);
        strcpy(M.call_on, "e2");
        M.call_kind = kinds[k];
        strcpy(M.own.id, "own-1");
        eddy_error err = {0};
        cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "no deadlock (%d): %s", k, err.detail);
        pthread_mutex_lock(&M.m);
        tcall *inner = M.inner;
        pthread_mutex_unlock(&M.m);
        cr_assert_not_null(inner, "the apply did not call (%d)", k);
        bool own_accept = kinds[k] == FEED_ACCEPT;
        eddy_status want = own_accept && !fd->reactive ? EDDY_ERR_ILLEGAL_STATE : EDDY_OK;
        eddy_status st = fd->join(inner, &err);
        cr_expect_eq(st, want, "own call %d: %s (%s)", k, eddy_status_name(st), err.detail);
        cr_expect(fd->ready_for_live_delivery(c.feed), "own call %d", k);
        cr_expect_not(fd->refuses_permanently(c.feed), "own call %d", k);
        cr_expect_eq(count_of("own-1"), own_accept && fd->reactive ? 1 : 0, "own call %d", k);
        teardown(&c);
    }
}

/* ---- a replay holds one page ------------------------------------------------------------ */

typedef struct cut {
    ctx *c;
    const char *on; /* the event whose apply deletes the rest of the history */
    long long keep, total, deleted;
    int calls;
} cut;

static void cut_history(const char *id, void *arg) {
    cut *k = arg;
    if (strcmp(id, k->on) != 0)
        return;
    k->calls++;
    k->deleted = eddy_test_delete_history_after(k->c->url, k->c->ns, k->keep, k->total);
}

/* The replay reads the history page by page and holds one page at a time: the apply of the
 * first replayed event deletes every stored entry after the first page, and the replay never
 * sees them. One that had read the whole history up front would still apply all 50. */
FTEST(a_replay_holds_at_most_one_page) {
    ctx c;
    setup(&c, p, "feed-one-page");
    c.cfg.page_size = 5;
    append_n(&c, 50);
    new_feed(&c);
    cut k = {&c, "e1", 5, 50, 0, 0};
    M.on_apply = cut_history;
    M.on_apply_arg = &k;
    eddy_error err = {0};
    /* What the core does (eddy__feed_page_done): the next page, read after position 5, examines
     * nothing before the head it read at the start (50), which it takes for the end of a history
     * whose entries were removed. So the replay completes normally after the first page: the
     * catch-up succeeds, the marker is written with that head, and the feed goes live. */
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(k.calls, 1);
    cr_expect_eq(k.deleted, 45, "positions 6..50 deleted");
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5", "only the page read before the deletion");
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    cr_expect_eq(model_get(&M.abandoned), 0);
    eddy_feed_info i = info(&c);
    cr_expect_eq(i.last, EDDY_FEED_REPLAYED);
    cr_expect_eq(i.replayed, 5);
    cr_expect_eq(i.head, 50);
    cr_expect_eq(i.position, 5);
    char value[64];
    cr_expect(marker(&c, value, sizeof(value)));
    cr_expect_str_eq(value, "50", "the marker names the head the replay read up front");
    cr_expect(fd->ready_for_live_delivery(c.feed));
    teardown(&c);
}

/* ---- a failed catch-up ------------------------------------------------------------------ */

FTEST(a_failed_catch_up_refuses_everything) {
    ctx c;
    setup(&c, p, "feed-fail");
    append_n(&c, 5);
    new_feed(&c);
    uev x1 = {"x1"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &x1);
    wait_held(&c, 1);
    strcpy(M.fail_id, "e3");
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "'e3'"), "%s", err.detail);
    cr_expect_eq(fd->join(a, &err), EDDY_ERR_ILLEGAL_STATE, "held while the replay ran: refused");
    cr_expect(strstr(err.detail, "cause: EDDY_ERR_HANDLER_FAILED"), "%s", err.detail);
    cr_expect_eq(count_of("x1"), 0);
    cr_expect(fd->refuses_permanently(c.feed));
    cr_expect_not(fd->ready_for_live_delivery(c.feed));
    eddy_error cause = {0};
    cr_expect(fd->failure(c.feed, &cause));
    cr_expect_eq(cause.status, EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(accept_id(&c, "x2", &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(model_get(&M.abandoned), 1);
    cr_expect_not(marker(&c, NULL, 0), "a new feed with the same id replays the history");
    eddy_feed_info i = info(&c);
    cr_expect(i.failed);
    cr_expect_eq(i.last, EDDY_FEED_FAILED);
    teardown(&c);
}

/* ---- a listener: the outcome decides the acknowledgement -------------------------------- */

static long long pending(ctx *c) {
    redisReply *r = raw_cmdf(c->url, "XPENDING {%s}:s:orders.events order-status", c->ns);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

static bool nothing_pending(void *user) { return pending(user) == 0; }

typedef struct stats_cond {
    tlisten *l;
    uint64_t handled, failed, redelivered;
} stats_cond;

static bool stats_reached(void *user) {
    stats_cond *s = user;
    eddy_consumer_stats cs;
    return fd->listener_stats(s->l, &cs) == EDDY_OK && cs.handled >= s->handled &&
           cs.failed >= s->failed && cs.redelivered >= s->redelivered;
}

static eddy_consumer_stats listener_stats(tlisten *l) {
    eddy_consumer_stats cs;
    cr_assert_eq(fd->listener_stats(l, &cs), EDDY_OK);
    return cs;
}

static tlisten *listen_on(ctx *c) {
    tlisten *l = NULL;
    eddy_error err = {0};
    cr_assert_eq(fd->listen(c->feed, &c->s, "orders.events", "order-status", &l, &err), EDDY_OK,
                 "%s", err.detail);
    return l;
}

static void publish_plain(tlisten *l, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    cr_assert_eq(fd->listener_publish(l, "orders.events", ev), EDDY_OK);
    eddy_event_free(ev);
}

FTEST(a_listener_acknowledges_only_what_was_applied) {
    ctx c;
    setup(&c, p, "feed-listener");
    new_feed(&c);
    fd->stop_catch_up(c.feed); /* stopped: it refuses what the listener feeds */
    tlisten *l = listen_on(&c);
    strcpy(M.fail_id, "flaky");
    M.fail_times = 1;
    append_to(&c, "order-1", "refused", "orders.events");
    append_to(&c, "order-1", "flaky", "orders.events");
    publish_plain(l, "ignored", "order.ignored");
    /* Refused while stopped: not acknowledged, delivered again and again. */
    stats_cond sc = {l, 0, 2, 1};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 30000),
              "refused deliveries count as failed, and come back");
    cr_expect_eq(model_get(&M.n), 0);
    /* Live: the redeliveries are applied and acknowledged. */
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    sc = (stats_cond){l, 3, 0, 0};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 30000),
              "applied (after one failure of flaky) and acknowledged");
    cr_expect_eq(count_of("refused"), 1);
    cr_expect_eq(count_of("flaky"), 1);
    cr_expect_eq(count_of("ignored"), 0, "skipped by decode, acknowledged");
    cr_expect(eddy_test_wait_until(nothing_pending, &c, 30000), "applied ones are acknowledged");
    /* An event whose apply fails on a live feed is not acknowledged: it comes back. */
    pthread_mutex_lock(&M.m);
    strcpy(M.fail_id, "bad");
    M.fail_times = -1;
    pthread_mutex_unlock(&M.m);
    eddy_consumer_stats before = listener_stats(l);
    append_to(&c, "order-1", "bad", "orders.events");
    sc = (stats_cond){l, 0, before.failed + 2, before.redelivered + 1};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 30000), "the failed event came back");
    pthread_mutex_lock(&M.m);
    M.fail_id[0] = '\0'; /* now it applies, and is acknowledged */
    pthread_mutex_unlock(&M.m);
    cr_expect(eddy_test_wait_until(nothing_pending, &c, 30000), "everything acknowledged");
    cr_expect_eq(count_of("bad"), 1);
    fd->listener_free(l);
    teardown(&c);
}

/* The handler hands a held event to the feed without waiting for it (blocking: no worker stays
 * in the handler; reactive: the loop goes on): nothing is settled or acknowledged until the
 * catch-up applies it. */
FTEST(a_listener_waits_for_the_catch_up_without_a_worker) {
    ctx c;
    setup(&c, p, "feed-listener-hold");
    c.s.workers = 1;
    append(&c, "order-1", "stored");
    new_feed(&c);
    tlisten *l = listen_on(&c);
    append_to(&c, "order-1", "live-1", "orders.events");
    wait_held(&c, 1);
    eddy_consumer_stats cs = listener_stats(l);
    cr_expect_eq(cs.delivered + cs.handled + cs.failed, 0,
                 "the handler returned EDDY_PENDING: nothing settled");
    cr_expect_eq(pending(&c), 1, "not acknowledged while held");
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    stats_cond sc = {l, 1, 0, 0};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 30000));
    cr_expect_str_eq(applied(), "stored,live-1");
    fd->listener_stop(l);
    cr_expect_eq(pending(&c), 0);
    fd->listener_free(l);
    teardown(&c);
}

FTEST(a_listener_passes_the_stored_metadata) {
    ctx c;
    setup(&c, p, "feed-listener-meta");
    c.cfg.projection.keyed_by_metadata = true;
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    tlisten *l = listen_on(&c);
    append_to(&c, "order-7", "m1", "orders.events");
    append_to(&c, "order-7", "m2", "orders.events");
    publish_plain(l, "plain", "order.placed");
    stats_cond sc = {l, 2, 1, 0};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 30000),
              "a plain publish carries no metadata: refused, not acknowledged");
    fd->listener_stop(l);
    cr_expect_eq(count_of("plain"), 0);
    cr_expect_eq(count_of("m1") + count_of("m2"), 2);
    pthread_mutex_lock(&M.m);
    for (int i = 0; i < M.n; i++) {
        cr_expect(M.meta[i]);
        cr_expect_str_eq(M.streams[i], "order-7");
        cr_expect_eq(M.versions[i], strcmp(M.ids[i], "m1") == 0 ? 1 : 2);
    }
    pthread_mutex_unlock(&M.m);
    cr_expect_geq(pending(&c), 1, "the plain one stays pending");
    fd->listener_free(l);
    teardown(&c);
}

/* ---- writers appending while the feed switches from replay to live ------------------------ */

#define HISTORY 40
#define WRITERS 4
#define PER_WRITER 150
/* Every DIRECT-th event of a writer is stored without being published, and its live copy is fed
 * to the feed directly, without metadata: at once, before it is stored (even writers), or once
 * it is (odd writers). The others reach the feed through the listener. */
#define DIRECT 10

/* How far the writers may go: in phase p each writes its events below phase_end[p]. 1: before
 * the catch-up (replayed and live); 2: from the replay's apply of old-20, after it read where
 * the history ends (live only); 3: once the catch-up is held at its last step, the replay done
 * and the feed not live yet (held, live only); 4: as the catch-up goes on, racing its switch to
 * live. */
static const int phase_end[] = {0, PER_WRITER / 3, PER_WRITER / 2, 2 * PER_WRITER / 3, PER_WRITER};

typedef struct phases {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int phase;
} phases;

static void set_phase(phases *ph, int p) {
    pthread_mutex_lock(&ph->m);
    if (ph->phase < p)
        ph->phase = p;
    pthread_cond_broadcast(&ph->cv);
    pthread_mutex_unlock(&ph->m);
}

static int get_phase(phases *ph) {
    pthread_mutex_lock(&ph->m);
    int p = ph->phase;
    pthread_mutex_unlock(&ph->m);
    return p;
}

static void wait_phase(phases *ph, int p) {
    pthread_mutex_lock(&ph->m);
    while (ph->phase < p)
        pthread_cond_wait(&ph->cv, &ph->m);
    pthread_mutex_unlock(&ph->m);
}

/* The replay's apply of old-20 lets the writers on without waiting (reactive: on the loop). */
static void release_from_the_replay(const char *id, void *arg) {
    if (strcmp(id, "old-20") == 0)
        set_phase(arg, 2);
}

typedef struct writer {
    pthread_t t;
    ctx *c;
    phases *ph;
    int n;
    uev live[PER_WRITER / DIRECT]; /* the direct live copies */
    tcall *calls[PER_WRITER / DIRECT];
} writer;

static void *writer_main(void *arg) {
    writer *w = arg;
    char id[32], stream[32];
    snprintf(stream, sizeof(stream), "order-w%d", w->n);
    int p = 1;
    for (int i = 0; i < PER_WRITER; i++) {
        while (i >= phase_end[p])
            wait_phase(w->ph, ++p);
        snprintf(id, sizeof(id), "w%d-%d", w->n, i);
        if (i % DIRECT != DIRECT - 1) {
            append_to(w->c, stream, id, "orders.events");
            continue;
        }
        int k = i / DIRECT;
        snprintf(w->live[k].id, sizeof(w->live[k].id), "%s", id);
        if (w->n % 2 == 0)
            w->calls[k] = fd->start(w->c->feed, FEED_ACCEPT, NULL, &w->live[k]);
        append(w->c, stream, id);
        if (w->n % 2 == 1)
            w->calls[k] = fd->start(w->c->feed, FEED_ACCEPT, NULL, &w->live[k]);
    }
    return NULL;
}

typedef struct head_cond {
    ctx *c;
    long long n;
} head_cond;

static bool head_at_least(void *user) {
    head_cond *h = user;
    long long head = 0;
    return sd->head(h->c->store, &head, NULL) == EDDY_OK && head >= h->n;
}

static bool all_applied(void *user) { return model_get(&M.n) >= *(const int *)user; }

/* Writers append (and publish, or feed a live copy directly) while the feed switches from
 * replay to live: released from inside the replay (its apply of old-20, which does not wait),
 * and then while the catch-up is held at its last step (the checkpoint's save, after the replay
 * and before the feed goes live: a gate that holds the blocking catch-up's thread and keeps the
 * reactive save's completion, the loop running on; an apply cannot be held there, since a
 * reactive apply runs on the loop and must return its outcome). Nothing is lost, nothing
 * applied twice: the old events come from the replay only, the first third of the writers' both
 * ways (dropped as duplicates the second time), the rest live only; the replay applies the
 * history in store order, each stream's events in their order; every direct live copy is
 * answered once, with EDDY_OK. The live copies that arrive through the listener are not in any
 * order the feed promises (blocking: several workers), so only the replay's order is
 * asserted. */
ParameterizedTestParameters(feed, writers_during_the_switch_lose_and_double_nothing) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, feed, writers_during_the_switch_lose_and_double_nothing,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "feed-writers");
    c.cfg.page_size = 16;
    c.s.workers = 4;
    /* History from before the listener existed: only the replay has it. */
    for (int i = 0; i < HISTORY; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        append(&c, "order-old", id);
    }
    new_gated_feed(&c, false, true);
    tlisten *l = listen_on(&c);
    phases ph = {.phase = 1};
    pthread_mutex_init(&ph.m, NULL);
    pthread_cond_init(&ph.cv, NULL);
    M.on_apply = release_from_the_replay;
    M.on_apply_arg = &ph;
    writer *w = calloc(WRITERS, sizeof(*w));
    cr_assert(w);
    for (int k = 0; k < WRITERS; k++) {
        w[k].c = &c;
        w[k].ph = &ph;
        w[k].n = k;
        cr_assert_eq(pthread_create(&w[k].t, NULL, writer_main, &w[k]), 0);
    }
    int total = HISTORY + WRITERS * PER_WRITER;
    int published = total - HISTORY - WRITERS * (PER_WRITER / DIRECT);
    /* The catch-up starts once the writers wrote their first third. */
    head_cond hc = {&c, HISTORY + WRITERS * phase_end[1]};
    cr_assert(eddy_test_wait_until(head_at_least, &hc, 30000));
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    /* Held at its save: the replay is done (its apply of old-20 let the second phase on) and
     * the feed is not live; the third phase is written now and its live copies are held. */
    wait_gate(&c);
    cr_expect_eq(get_phase(&ph), 2, "the replay let the writers on");
    set_phase(&ph, 3);
    hc.n = HISTORY + WRITERS * phase_end[3];
    cr_assert(eddy_test_wait_until(head_at_least, &hc, 30000));
    wait_held(&c, 1);
    /* The last phase races the catch-up's switch to live. */
    set_phase(&ph, 4);
    dd->gate_open(c.gate);
    eddy_error err = {0};
    cr_expect_eq(fd->join(cu, &err), EDDY_OK, "%s", err.detail);
    for (int k = 0; k < WRITERS; k++)
        pthread_join(w[k].t, NULL);
    cr_expect(eddy_test_wait_until(all_applied, &total, 60000), "applied %d of %d", model_get(&M.n),
              total);
    /* Every listener copy settled (a redelivery also counts): the duplicates are all in. */
    stats_cond sc = {l, (uint64_t)published, 0, 0};
    cr_expect(eddy_test_wait_until(stats_reached, &sc, 60000), "handled %llu of %d",
              (unsigned long long)listener_stats(l).handled, published);
    for (int k = 0; k < WRITERS; k++) {
        for (int j = 0; j < PER_WRITER / DIRECT; j++) {
            cr_expect_eq(fd->join(w[k].calls[j], &err), EDDY_OK, "%s: %s", w[k].live[j].id,
                         err.detail);
        }
    }
    cr_expect_eq(listener_stats(l).failed, 0);
    fd->listener_stop(l);
    cr_expect_eq(model_get(&M.n), total, "nothing applied twice");
    for (int i = 0; i < HISTORY; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        cr_expect_eq(count_of(id), 1, "%s", id);
    }
    for (int k = 0; k < WRITERS; k++) {
        for (int i = 0; i < PER_WRITER; i++) {
            char id[32];
            snprintf(id, sizeof(id), "w%d-%d", k, i);
            cr_expect_eq(count_of(id), 1, "%s applied once", id);
        }
    }
    eddy_feed_info i = info(&c);
    /* The replay came first and applied the history up to where it ended, in store order: the
     * old events, then each writer's first third in its stream's order. */
    cr_expect_eq(i.replayed, (uint64_t)(HISTORY + WRITERS * phase_end[1]),
                 "events written after the replay began came live only");
    pthread_mutex_lock(&M.m);
    int next[WRITERS] = {0};
    for (int j = 0; j < (int)i.replayed && j < M.n; j++) {
        int k = -1, n = -1;
        if (j < HISTORY) {
            char id[16];
            snprintf(id, sizeof(id), "old-%d", j);
            cr_expect_str_eq(M.ids[j], id, "the history in order");
        } else if (sscanf(M.ids[j], "w%d-%d", &k, &n) == 2 && k >= 0 && k < WRITERS) {
            cr_expect_eq(n, next[k], "%s replayed out of its stream's order", M.ids[j]);
            next[k] = n + 1;
        } else {
            cr_expect_fail("%s replayed at %d", M.ids[j], j);
        }
    }
    pthread_mutex_unlock(&M.m);
    cr_expect_geq(i.duplicates, (uint64_t)(WRITERS * phase_end[1]),
                  "the replay and the live feed overlapped");
    cr_expect_eq(i.replayed + i.applied, (uint64_t)total);
    cr_expect_eq(model_get(&M.started), 1);
    cr_expect_eq(model_get(&M.completed), 1);
    cr_expect(fd->ready_for_live_delivery(c.feed));
    fd->listener_free(l);
    free(w);
    teardown(&c);
    pthread_cond_destroy(&ph.cv);
    pthread_mutex_destroy(&ph.m);
}

/* ---- an accept that does not wait ------------------------------------------------------- */

/* An offer (blocking: eddy_feed_offer; reactive: the accept, which never waits) completes
 * exactly once (the drivers check it, with detail only on a failure), with the outcome the
 * waiting accept would have had: a held event once the go-live applied it, before the go-live
 * returned; a live one and a duplicate with EDDY_OK, the duplicate not applied again. When the
 * outcome is known at once, the blocking offer completes before it returns (eddy/feed.h); the
 * reactive completion never runs inside the call (eddy/rfeed.h, checked by the driver). */
FTEST(an_offer_completes_once_now_or_later) {
    ctx c;
    setup(&c, p, "feed-offer");
    new_feed(&c);
    uev ea = {"a"}, eb = {"b"};
    eddy_error err = {0};
    tcall *a = fd->start(c.feed, FEED_OFFER, NULL, &ea);
    wait_held(&c, 1);
    cr_expect_not(fd->finished(a), "held: completed later");
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect(fd->finished(a), "completed by the go-live");
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    tcall *b = fd->start(c.feed, FEED_OFFER, NULL, &eb);
    if (!fd->reactive)
        cr_expect(fd->finished(b), "live: applied before offer returns");
    cr_expect_eq(fd->join(b, &err), EDDY_OK, "%s", err.detail);
    tcall *d = fd->start(c.feed, FEED_OFFER, NULL, &eb);
    if (!fd->reactive)
        cr_expect(fd->finished(d), "a duplicate: answered at once");
    cr_expect_eq(fd->join(d, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "a,b");
    teardown(&c);
}

/* ---- limits and bad input ---------------------------------------------------------------- */

FTEST(the_buffer_limit_refuses_what_does_not_fit) {
    ctx c;
    setup(&c, p, "feed-buf");
    c.cfg.max_buffered_events = 2;
    new_feed(&c);
    uev e[3] = {{"l1"}, {"l2"}, {"l3"}};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &e[0]);
    wait_held(&c, 1);
    tcall *b = fd->start(c.feed, FEED_ACCEPT, NULL, &e[1]);
    wait_held(&c, 2);
    tcall *d = fd->start(c.feed, FEED_ACCEPT, NULL, &e[2]);
    eddy_error err = {0};
    cr_expect_eq(fd->join(d, &err), EDDY_ERR_ILLEGAL_STATE, "the third held event was refused");
    cr_expect_not(fd->finished(a));
    cr_expect_not(fd->finished(b));
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->join(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(applied(), "l1,l2");
    teardown(&c);
}

FTEST(bad_arguments_are_refused) {
    ctx c;
    setup(&c, p, "feed-args");
    tfeed *f = NULL;
    eddy_error err = {0};
    c.cfg.dedup_cache_size = 0;
    cr_expect_eq(fd->new_feed(c.store, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(f);
    cr_expect(strstr(err.detail, "dedup_cache_size"), "%s", err.detail);
    c.cfg.dedup_cache_size = 10;
    c.cfg.max_buffered_events = -1;
    cr_expect_eq(fd->new_feed(c.store, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(f);
    c.cfg.max_buffered_events = 10;
    new_feed(&c);
    char id[64];
    fd->id(c.feed, id, sizeof(id));
    cr_expect_str_eq(id, "order-status");
    uev e = {"x"};
    cr_expect_eq(fd->accept_meta(c.feed, NULL, &e, &err), EDDY_ERR_INVALID_ARGUMENT);
    /* NULL handles, out-pointers and callbacks: each front end's own calling shape. */
    fd->shape_refusals(c.store, &c.cfg, c.feed);
    cr_expect_eq(model_get(&M.n), 0);
    teardown(&c);
}

/* A live feed whose later catch-up fails, with a live event waiting for that catch-up, then
 * refuses everything. The front ends differ on the waiting event, each as its header says:
 * the blocking feed applies it first, since the feed was live before the catch-up (eddy/feed.h:
 * "unless the feed was live before that catch-up started: then they are applied first"); the
 * reactive feed refuses it without applying it (eddy/rfeed.h, failure step 3: "refuses each
 * listener's event still waiting for the replay"). Asserted per front end so that a change to
 * either shows here. */
FTEST(a_live_feed_applies_what_it_held_before_failing) {
    ctx c;
    setup(&c, p, "feed-fail-live");
    append_n(&c, 5);
    new_gated_feed(&c, false, false);
    eddy_error err = {0};
    cr_expect_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    dd->gate_hold(c.gate, true, false);
    strcpy(M.fail_id, "e3");
    tcall *cu = fd->start(c.feed, FEED_CATCH_UP, NULL, NULL);
    wait_gate(&c);
    uev b = {"b"};
    tcall *a = fd->start(c.feed, FEED_ACCEPT, NULL, &b);
    wait_held(&c, 1);
    dd->gate_open(c.gate);
    cr_expect_eq(fd->join(cu, &err), EDDY_ERR_HANDLER_FAILED);
    if (fd->reactive) {
        cr_expect_eq(fd->join(a, &err), EDDY_ERR_ILLEGAL_STATE, "refused (step 3)");
        cr_expect(strstr(err.detail, "cause: EDDY_ERR_HANDLER_FAILED"), "%s", err.detail);
        cr_expect_eq(count_of("b"), 0);
    } else {
        cr_expect_eq(fd->join(a, &err), EDDY_OK, "applied first: %s", err.detail);
        cr_expect_eq(count_of("b"), 1);
    }
    cr_expect_eq(accept_id(&c, "c", &err), EDDY_ERR_ILLEGAL_STATE, "then everything is refused");
    cr_expect(fd->refuses_permanently(c.feed));
    teardown(&c);
}
