/* SPDX-License-Identifier: BSD-3-Clause */
/* The catch-up projection feed on the reactive front end, on memory:// and redis://: what only
 * the reactive feed has. Its failure rules (spec/catch-up-feeds.txt gives them to the reactor
 * stack alone, eddy/rfeed.h): the five failure steps, with the projection feeding its own event
 * during the replay; the marker deletion with its retries, an error naming the feed id when it
 * keeps failing (refused at once, or failing later through its callback); the projection's own
 * event failing, refused or refused by a stop, and an event fed from replay_abandoned, each
 * failing the feed; listeners refused while the failure steps run. And its loop: a feed freed
 * inside the catch-up's completion, and a replay that lets the loop run between pages. Each test
 * runs its own loop.
 *
 * Every scenario both front ends share is in the one table of tests/integration/test_feed.c
 * (feed_driver.h, both backends). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

static int backends[] = {0, 1}; /* memory, redis */

/* ---- loop and store ----------------------------------------------------------------------- */

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
    eddy_rstore *store;
} tctx;

static bool run_until(tctx *t, const int *counter, int n, long long timeout_ms) {
    return eddy_test_run_until(t->loop, counter, n, timeout_ms);
}

static void run_for(tctx *t, long long ms) { eddy_test_run_for(t->loop, ms); }

static void setup(tctx *t, int backend, const char *prefix) {
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_settings(&t->s, backend, prefix, t->url, sizeof(t->url), t->ns, sizeof(t->ns));
    eddy_error err = {0};
    eddy_status rc = eddy_rstore_open(t->loop, &t->s, &t->store, &err);
    cr_assert_eq(rc, EDDY_OK, "open: %s (%s)", eddy_status_name(rc), err.detail);
}

static void teardown(tctx *t) {
    eddy_rstore_close(t->store);
    ev_loop_destroy(t->loop);
}

static void on_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    cr_expect_eq(st, EDDY_OK, "append: %s", err ? err->detail : "");
    (*(int *)user)++;
}

static void append(tctx *t, const char *const *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        eddy_event *ev = make_event(ids[i], "t");
        int done = 0;
        eddy_error err = {0};
        eddy_status rc = eddy_rstore_append(t->store, "order-1", (const eddy_event *const *)&ev, 1,
                                            NULL, on_append, &done, &err);
        eddy_event_free(ev);
        cr_assert_eq(rc, EDDY_OK, "append: %s", err.detail);
        cr_assert(run_until(t, &done, 1, 20000));
    }
}

/* ---- the projection ------------------------------------------------------------------------ */

typedef struct done_rec {
    int calls;
    int inside; /* set while the call that asked runs: a completion then would be inside it */
    eddy_status st;
    char detail[EDDY_ERROR_DETAIL_MAX];
    int seq; /* when it completed, in the model's sequence */
} done_rec;

typedef struct model {
    char applied[64][64];
    int napplied;
    int started, completed, abandoned;
    const char *fail_on; /* apply fails on this id */
    const char *stop_on; /* apply calls stop_catch_up on this id */
    const char *feed_on; /* apply feeds own_ev on this id */
    uev own_ev;
    done_rec own_done;
    eddy_rfeed *feed;
    int seq;
    char log[512];
    int log_errors;
    const char *feed2_on; /* apply feeds own_ev2 on this id */
    uev own_ev2;
    done_rec own_done2;
    bool abandon_feeds;      /* replay_abandoned feeds own_ev */
    const char *free_on;     /* apply frees the feed on this id */
    bool started_frees;      /* replay_started frees the feed */
    const char *catch_up_on; /* apply asks for a catch-up on this id */
    done_rec inner_done;
    void (*on_apply)(const char *id, void *arg); /* called first in every apply */
    void *on_apply_arg;
} model;

static model M;
static void on_done_fn(eddy_status st, const eddy_error *err, void *user);

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    model *m = user;
    uev *e = event;
    if (m->on_apply)
        m->on_apply(e->id, m->on_apply_arg);
    if (m->fail_on && strcmp(e->id, m->fail_on) == 0) {
        snprintf(err->detail, sizeof(err->detail), "cannot apply %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(m->napplied < 64);
    snprintf(m->applied[m->napplied++], 64, "%s", e->id);
    m->seq++;
    if (m->stop_on && strcmp(e->id, m->stop_on) == 0)
        eddy_rfeed_stop_catch_up(m->feed);
    if (m->feed_on && strcmp(e->id, m->feed_on) == 0) {
        m->feed_on = NULL;
        cr_expect_eq(eddy_rfeed_accept(m->feed, &m->own_ev, on_done_fn, &m->own_done), EDDY_OK);
    }
    if (m->feed2_on && strcmp(e->id, m->feed2_on) == 0) {
        m->feed2_on = NULL;
        cr_expect_eq(eddy_rfeed_accept(m->feed, &m->own_ev2, on_done_fn, &m->own_done2), EDDY_OK);
    }
    if (m->catch_up_on && strcmp(e->id, m->catch_up_on) == 0) {
        m->catch_up_on = NULL;
        eddy_error cerr = {0};
        cr_expect_eq(eddy_rfeed_catch_up(m->feed, on_done_fn, &m->inner_done, &cerr), EDDY_OK, "%s",
                     cerr.detail);
    }
    if (m->free_on && strcmp(e->id, m->free_on) == 0) {
        m->free_on = NULL;
        eddy_rfeed_free(m->feed);
        m->feed = NULL;
    }
    return EDDY_OK;
}

static eddy_status m_started(eddy_error *err, void *user) {
    model *m = user;
    m->started++;
    if (m->started_frees) {
        m->started_frees = false;
        eddy_rfeed_free(m->feed);
        m->feed = NULL;
    }
    return EDDY_OK;
}
static eddy_status m_completed(eddy_error *err, void *user) {
    ((model *)user)->completed++;
    return EDDY_OK;
}
static void m_abandoned(void *user) {
    model *m = user;
    m->abandoned++;
    if (m->abandon_feeds) {
        m->abandon_feeds = false;
        cr_expect_eq(eddy_rfeed_accept(m->feed, &m->own_ev, on_done_fn, &m->own_done), EDDY_OK);
    }
}

static eddy_status m_decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                            eddy_error *err, void *user) {
    cr_assert_eq(uev_decode(stored, meta, event, err, user), EDDY_OK);
    return EDDY_OK;
}

static void m_log(eddy_log_level level, const char *msg, void *user) {
    model *m = user;
    if (level == EDDY_LOG_ERROR) {
        m->log_errors++;
        snprintf(m->log, sizeof(m->log), "%s", msg);
    }
}

static void on_done_fn(eddy_status st, const eddy_error *err, void *user) {
    done_rec *d = user;
    cr_expect_not(d->inside, "a completion ran inside the call that asked for it");
    cr_expect(st == EDDY_OK || err, "a failure without detail");
    cr_expect(st != EDDY_OK || !err, "detail on success");
    d->calls++;
    d->st = st;
    d->seq = ++M.seq;
    snprintf(d->detail, sizeof(d->detail), "%s", err ? err->detail : "");
}

static void cfg_init(eddy_feed_config *cfg, const char *id) {
    eddy_feed_config_init(cfg);
    cfg->id = id;
    cfg->projection.apply = m_apply;
    cfg->projection.replay_started = m_started;
    cfg->projection.replay_completed = m_completed;
    cfg->projection.replay_abandoned = m_abandoned;
    cfg->projection.user = &M;
    cfg->decode = m_decode;
    cfg->free_event = uev_free;
    cfg->event_id = uev_id;
    cfg->log = m_log;
    cfg->log_user = &M;
}

static eddy_rfeed *must_feed(tctx *t, eddy_feed_config *cfg, const eddy_rcheckpoints *ck) {
    eddy_rfeed *f = NULL;
    eddy_error err = {0};
    eddy_status rc = eddy_rfeed_new(t->loop, t->store, cfg, ck, &f, &err);
    cr_assert_eq(rc, EDDY_OK, "new: %s (%s)", eddy_status_name(rc), err.detail);
    M.feed = f;
    return f;
}

static void accept_ev(eddy_rfeed *f, uev *e, done_rec *d) {
    d->inside = 1;
    cr_assert_eq(eddy_rfeed_accept(f, e, on_done_fn, d), EDDY_OK);
    d->inside = 0;
}

static void catch_up(eddy_rfeed *f, done_rec *d) {
    eddy_error err = {0};
    d->inside = 1;
    eddy_status rc = eddy_rfeed_catch_up(f, on_done_fn, d, &err);
    d->inside = 0;
    cr_assert_eq(rc, EDDY_OK, "catch_up: %s (%s)", eddy_status_name(rc), err.detail);
}

static void expect_applied(const char *const *ids, int n) {
    cr_expect_eq(M.napplied, n, "applied %d events, expected %d", M.napplied, n);
    for (int i = 0; i < n && i < M.napplied; i++)
        cr_expect_str_eq(M.applied[i], ids[i], "applied[%d]", i);
}

static void reset_model(void) { memset(&M, 0, sizeof(M)); }

/* ---- a checkpoint storage that counts and can fail ---------------------------------------- */

typedef struct ckwrap {
    eddy_rstore *store;
    int removes;
    bool remove_fails;
    int remove_seq;  /* M.seq at the first deletion */
    int async_fails; /* this many removals fail later, through their callback */
    int remove_oks;  /* removals the store completed with EDDY_OK */
    struct ev_loop *loop;
    ev_timer tm;
    eddy_rstore_done_fn pdone;
    void *puser;
} ckwrap;

static void w_fire(struct ev_loop *loop, ev_timer *tm, int revents) {
    ckwrap *w = tm->data;
    ev_timer_stop(loop, tm);
    eddy_error e = {0};
    snprintf(e.detail, sizeof(e.detail), "checkpoint storage timed out");
    e.status = EDDY_ERR_IO;
    w->pdone(EDDY_ERR_IO, &e, w->puser);
}

static void w_removed(eddy_status st, const eddy_error *err, void *user) {
    ckwrap *w = user;
    if (st == EDDY_OK)
        w->remove_oks++;
    w->pdone(st, err, w->puser);
}

static eddy_status w_exists(void *self, const char *id, eddy_rstore_exists_fn done, void *user,
                            eddy_error *err) {
    return eddy_rstore_checkpoint_exists(((ckwrap *)self)->store, id, done, user, err);
}
static eddy_status w_save(void *self, const char *id, const char *v, eddy_rstore_done_fn done,
                          void *user, eddy_error *err) {
    return eddy_rstore_checkpoint_save(((ckwrap *)self)->store, id, v, done, user, err);
}
static eddy_status w_remove(void *self, const char *id, eddy_rstore_done_fn done, void *user,
                            eddy_error *err) {
    ckwrap *w = self;
    w->removes++;
    if (!w->remove_seq)
        w->remove_seq = ++M.seq;
    if (w->remove_fails) {
        snprintf(err->detail, sizeof(err->detail), "checkpoint storage unreachable");
        err->status = EDDY_ERR_IO;
        return EDDY_ERR_IO;
    }
    w->pdone = done;
    w->puser = user;
    if (w->async_fails > 0) {
        w->async_fails--;
        ev_timer_init(&w->tm, w_fire, 0.001, 0.);
        w->tm.data = w;
        ev_timer_start(w->loop, &w->tm);
        return EDDY_OK;
    }
    return eddy_rstore_checkpoint_remove(w->store, id, w_removed, w, err);
}
static const eddy_rcheckpoint_ops wrap_ops = {w_exists, w_save, w_remove};

/* ---- tests ------------------------------------------------------------------------------- */

/* Reactive front end only: the five failure steps of eddy/rfeed.h, with the projection feeding
 * its own event during the replay (a blocking projection's accept there is refused) and the
 * order of the steps seen through a counting checkpoint storage. The shared part is
 * test_feed.c's a_failed_catch_up_refuses_everything. */
ParameterizedTestParameters(rfeed, failing_catch_up_five_steps) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, failing_catch_up_five_steps, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-fail");
    const char *hist[] = {"h1", "h2", "h3"};
    append(&t, hist, 3);
    ckwrap w = {.store = t.store};
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-fail");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.fail_on = "h2";
    M.feed_on = "h1"; /* the projection feeds its own event during the replay */
    snprintf(M.own_ev.id, sizeof(M.own_ev.id), "p1");
    uev l1 = {"l1"}, l2 = {"l2"};
    done_rec d1 = {0}, d2 = {0}, dc = {0};
    accept_ev(f, &l1, &d1);
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000));
    cr_expect_eq(dc.st, EDDY_ERR_HANDLER_FAILED, "catch-up: %s", eddy_status_name(dc.st));
    cr_expect(run_until(&t, &M.own_done.calls, 1, 5000));
    cr_expect(run_until(&t, &d1.calls, 1, 5000));
    run_for(&t, 50);
    /* 1: the marker was deleted */
    cr_expect_eq(w.removes, 1, "marker deletions: %d", w.removes);
    /* 3: the listener's held event refused, not applied */
    cr_expect_eq(d1.calls, 1);
    cr_expect_eq(d1.st, EDDY_ERR_ILLEGAL_STATE, "%s", eddy_status_name(d1.st));
    for (int i = 0; i < M.napplied; i++)
        cr_expect_str_neq(M.applied[i], "l1");
    /* 4: the projection's own event was applied */
    cr_expect_eq(M.own_done.calls, 1);
    cr_expect_eq(M.own_done.st, EDDY_OK, "own event: %s (%s)", eddy_status_name(M.own_done.st),
                 M.own_done.detail);
    bool own = false;
    for (int i = 0; i < M.napplied; i++)
        own = own || strcmp(M.applied[i], "p1") == 0;
    cr_expect(own, "the projection's own event was not applied");
    cr_expect_eq(M.abandoned, 1);
    /* in that order: deletion, the listener's refusal, the projection's own answered */
    cr_expect_lt(w.remove_seq, d1.seq, "the marker was deleted after the refusal");
    cr_expect_lt(d1.seq, M.own_done.seq, "the own event was answered before the refusal");
    /* 5: then everything is refused */
    cr_expect(eddy_rfeed_refuses_permanently(f));
    cr_expect_not(eddy_rfeed_ready_for_live_delivery(f));
    accept_ev(f, &l2, &d2);
    cr_assert(run_until(&t, &d2.calls, 1, 5000));
    cr_expect_eq(d2.st, EDDY_ERR_ILLEGAL_STATE);
    eddy_error err = {0};
    done_rec dx = {0};
    cr_expect_eq(eddy_rfeed_catch_up(f, on_done_fn, &dx, &err), EDDY_ERR_ILLEGAL_STATE);
    eddy_error cause = {0};
    cr_expect(eddy_rfeed_failure(f, &cause));
    run_for(&t, 20);
    cr_expect_eq(dx.calls, 0);
    cr_expect_eq(dc.calls + d1.calls + d2.calls + M.own_done.calls, 4, "exactly once");
    eddy_rfeed_free(f);
    teardown(&t);
}

/* Reactive front end only: a failing reactive feed deletes its own marker, with retries
 * (eddy/feed.h: "A failing reactive feed deletes its own marker"). */
Test(rfeed, marker_deletion_failing_logs_feed_id, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, 0, "rfeed-del");
    const char *hist[] = {"h1"};
    append(&t, hist, 1);
    ckwrap w = {.store = t.store, .remove_fails = true};
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-del");
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.fail_on = "h1";
    done_rec dc = {0};
    long long t0 = eddy_test_now_ms();
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000));
    cr_assert(run_until(&t, &M.log_errors, 2, 5000) || M.log_errors >= 1);
    run_for(&t, 50);
    cr_expect_eq(w.removes, 4, "the first attempt plus 3 retries: %d", w.removes);
    cr_expect_geq(eddy_test_now_ms() - t0, 50 + 100 + 200, "the retries did not wait");
    cr_expect(strstr(M.log, "could not delete") && strstr(M.log, "orders-del"),
              "the error does not name the feed: %s", M.log);
    cr_expect(eddy_rfeed_refuses_permanently(f));
    eddy_rfeed_free(f);
    teardown(&t);
}

/* ---- reactor failure paths ------------------------------------------------------------------ */

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* A catch-up whose replay went through fails because of the projection's own event: fed from
 * apply during the replay, it fails (mode 0) or is refused (mode 1, no id). The projection
 * ignores the error, yet the feed starts failing: marker deleted, later events refused. */
static void own_event_fails_feed(int backend, int mode) {
    reset_model();
    tctx t;
    setup(&t, backend, "rfeed-own");
    const char *hist[] = {"h1", "h2"};
    append(&t, hist, 2);
    ckwrap w = {.store = t.store};
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-own");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.feed_on = "h1";
    snprintf(M.own_ev.id, sizeof(M.own_ev.id), "%s", mode == 0 ? "p1" : "");
    if (mode == 0)
        M.fail_on = "p1";
    done_rec dc = {0}, d2 = {0};
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000), "catch-up never completed");
    cr_assert(run_until(&t, &M.own_done.calls, 1, 5000), "own event never answered");
    run_for(&t, 100);
    cr_expect_neq(M.own_done.st, EDDY_OK, "the own event succeeded");
    cr_expect_eq(M.own_done.st, mode == 0 ? EDDY_ERR_HANDLER_FAILED : EDDY_ERR_INVALID_ARGUMENT,
                 "own event: %s (%s)", eddy_status_name(M.own_done.st), M.own_done.detail);
    cr_expect(eddy_rfeed_refuses_permanently(f), "the feed did not start failing (mode %d)", mode);
    cr_expect_not(eddy_rfeed_ready_for_live_delivery(f));
    cr_expect_eq(w.removes, 1, "marker deletions: %d", w.removes);
    eddy_error cause = {0};
    cr_expect(eddy_rfeed_failure(f, &cause));
    cr_expect(contains(cause.detail, "orders-own"), "cause: %s", cause.detail);
    uev l2 = {"l2"};
    accept_ev(f, &l2, &d2);
    cr_assert(run_until(&t, &d2.calls, 1, 5000));
    cr_expect_eq(d2.st, EDDY_ERR_ILLEGAL_STATE);
    for (int i = 0; i < M.napplied; i++)
        cr_expect_str_neq(M.applied[i], "l2");
    run_for(&t, 20);
    cr_expect_eq(dc.calls, 1);
    cr_expect_eq(M.own_done.calls, 1);
    cr_expect_eq(d2.calls, 1);
    eddy_rfeed_free(f);
    teardown(&t);
}

/* Reactive front end only: the projection feeds its own event during a replay (a blocking
 * projection's accept there is refused: test_feed.c's
 * the_projection_calling_its_own_feed_during_a_replay_does_not_wait). */
ParameterizedTestParameters(rfeed, own_event_failing_fails_feed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, own_event_failing_fails_feed, .timeout = 60) {
    own_event_fails_feed(*b, 0);
}

/* Reactive front end only: as own_event_failing_fails_feed. */
ParameterizedTestParameters(rfeed, own_event_refused_fails_feed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, own_event_refused_fails_feed, .timeout = 60) {
    own_event_fails_feed(*b, 1);
}

/* Reactive front end only: an event fed from replay_abandoned (failure rules of eddy/rfeed.h). */
/* A stopped replay is no failure, but the event replay_abandoned feeds (nothing waits for it)
 * fails: the feed starts failing. */
ParameterizedTestParameters(rfeed, abandoned_event_failing_fails_feed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, abandoned_event_failing_fails_feed, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-aband");
    const char *hist[] = {"h1", "h2", "h3"};
    append(&t, hist, 3);
    ckwrap w = {.store = t.store};
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-aband");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.stop_on = "h1";
    M.abandon_feeds = true;
    snprintf(M.own_ev.id, sizeof(M.own_ev.id), "pa");
    M.fail_on = "pa";
    done_rec dc = {0}, d2 = {0};
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000));
    cr_assert(run_until(&t, &M.own_done.calls, 1, 5000), "the abandoned event never answered");
    run_for(&t, 100);
    cr_expect_eq(M.abandoned, 1);
    cr_expect_neq(M.own_done.st, EDDY_OK);
    cr_expect(eddy_rfeed_refuses_permanently(f), "the failed abandoned event did not fail it");
    cr_expect_eq(w.removes, 1, "marker deletions: %d", w.removes);
    uev l2 = {"l2"};
    accept_ev(f, &l2, &d2);
    cr_assert(run_until(&t, &d2.calls, 1, 5000));
    cr_expect_eq(d2.st, EDDY_ERR_ILLEGAL_STATE);
    eddy_error err = {0};
    done_rec dx = {0};
    cr_expect_eq(eddy_rfeed_catch_up(f, on_done_fn, &dx, &err), EDDY_ERR_ILLEGAL_STATE);
    run_for(&t, 20);
    cr_expect_eq(dx.calls, 0);
    cr_expect_eq(dc.calls + M.own_done.calls + d2.calls, 3, "exactly once");
    eddy_rfeed_free(f);
    teardown(&t);
}

/* Reactive front end only: listeners refused while the failure steps of eddy/rfeed.h run. */
/* While the failure steps run (the marker deletion waiting to retry), a listener's event is
 * refused at once, and the projection's own events (one taken in during the replay, one fed
 * while it is applied in step 4) are applied. */
ParameterizedTestParameters(rfeed, listener_refused_during_failure_steps) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, listener_refused_during_failure_steps, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-steps");
    const char *hist[] = {"h1", "h2"};
    append(&t, hist, 2);
    ckwrap w = {.store = t.store};
    w.loop = t.loop;
    w.async_fails = 2; /* retries after 50 and 100 ms */
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-steps");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.feed_on = "h1";
    snprintf(M.own_ev.id, sizeof(M.own_ev.id), "p1");
    M.feed2_on = "p1";
    snprintf(M.own_ev2.id, sizeof(M.own_ev2.id), "p2");
    M.fail_on = "h2";
    done_rec dc = {0}, d2 = {0};
    catch_up(f, &dc);
    cr_assert(run_until(&t, &w.removes, 1, 20000), "the marker deletion never started");
    cr_expect_eq(M.own_done.calls, 0, "own event answered before the deletion");
    uev l2 = {"l2"};
    accept_ev(f, &l2, &d2);
    cr_assert(run_until(&t, &d2.calls, 1, 5000));
    cr_expect_eq(d2.st, EDDY_ERR_ILLEGAL_STATE, "%s", eddy_status_name(d2.st));
    cr_expect_lt(w.removes, 3, "the listener's event waited for the failure steps");
    cr_assert(run_until(&t, &M.own_done2.calls, 1, 5000));
    cr_assert(run_until(&t, &dc.calls, 1, 5000));
    run_for(&t, 50);
    cr_expect_eq(w.removes, 3);
    cr_expect_eq(w.remove_oks, 1);
    cr_expect_eq(M.log_errors, 0, "%s", M.log);
    cr_expect_eq(dc.st, EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(M.own_done.st, EDDY_OK, "p1: %s", M.own_done.detail);
    cr_expect_eq(M.own_done2.st, EDDY_OK, "p2: %s", M.own_done2.detail);
    const char *want[] = {"h1", "p1", "p2"};
    expect_applied(want, 3);
    cr_expect(eddy_rfeed_refuses_permanently(f));
    run_for(&t, 20);
    cr_expect_eq(dc.calls + d2.calls + M.own_done.calls + M.own_done2.calls, 4, "exactly once");
    eddy_rfeed_free(f);
    teardown(&t);
}

/* eddy_rfeed_free from inside the feed's own callbacks. */
static void on_done_free(eddy_status st, const eddy_error *err, void *user) {
    on_done_fn(st, err, user);
    eddy_rfeed_free(M.feed);
    M.feed = NULL;
}

/* Reactive front end only: freeing the feed from inside the catch-up's own completion (a blocking
 * catch-up has no completion: its caller gets the outcome as the call returns). */
ParameterizedTestParameters(rfeed, free_inside_completion) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, free_inside_completion, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-freecb");
    const char *hist[] = {"h1"};
    append(&t, hist, 1);
    eddy_rcheckpoints ck = eddy_rstore_checkpoints(t.store);
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-freecb");
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    uev l1 = {"l1"};
    done_rec d1 = {0}, dc = {0};
    accept_ev(f, &l1, &d1);
    eddy_error err = {0};
    cr_assert_eq(eddy_rfeed_catch_up(f, on_done_free, &dc, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until(&t, &dc.calls, 1, 20000));
    cr_expect_eq(dc.st, EDDY_OK, "%s", dc.detail);
    cr_expect_null(M.feed);
    run_for(&t, 50);
    cr_expect_eq(dc.calls, 1);
    cr_expect_eq(d1.calls, 1, "the held event was not answered exactly once");
    teardown(&t);
}

/* Reactive front end only: an asynchronous checkpoint storage whose removals fail through their
 * callback (eddy_rcheckpoint_ops). */
/* Marker removals that fail later, through their callback: 4 failures exhaust the first attempt
 * and the 3 retries (an error naming the feed id is logged); with 3 the last retry deletes it. */
ParameterizedTestParameters(rfeed, marker_removal_failing_asynchronously) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, marker_removal_failing_asynchronously, .timeout = 60) {
    for (int fails = 4; fails >= 3; fails--) {
        reset_model();
        tctx t;
        setup(&t, *b, "rfeed-adel");
        const char *hist[] = {"h1"};
        append(&t, hist, 1);
        ckwrap w = {.store = t.store};
        w.loop = t.loop;
        w.async_fails = fails;
        eddy_rcheckpoints ck = {&wrap_ops, &w};
        eddy_feed_config cfg;
        cfg_init(&cfg, "orders-adel");
        eddy_rfeed *f = must_feed(&t, &cfg, &ck);
        M.fail_on = "h1";
        done_rec dc = {0};
        long long t0 = eddy_test_now_ms();
        catch_up(f, &dc);
        cr_assert(run_until(&t, &dc.calls, 1, 20000));
        cr_expect_eq(dc.st, EDDY_ERR_HANDLER_FAILED);
        for (int i = 0; i < 200 && w.removes < 4; i++)
            run_for(&t, 10);
        run_for(&t, 100);
        cr_expect_eq(w.removes, 4, "%d failures: %d removals", fails, w.removes);
        cr_expect_geq(eddy_test_now_ms() - t0, 50 + 100 + 200, "the retries did not wait");
        if (fails == 4) {
            cr_expect_eq(w.remove_oks, 0);
            cr_expect_geq(M.log_errors, 1, "no error logged");
            cr_expect(contains(M.log, "orders-adel"), "the error does not name the feed: %s",
                      M.log);
        } else {
            cr_expect_eq(w.remove_oks, 1, "the last retry did not delete the marker");
            cr_expect_eq(M.log_errors, 0, "an error was logged: %s", M.log);
        }
        cr_expect(eddy_rfeed_refuses_permanently(f));
        cr_expect_eq(dc.calls, 1);
        eddy_rfeed_free(f);
        teardown(&t);
    }
}

/* Reactive front end only: as own_event_failing_fails_feed. */
/* A stop ends the replay while the projection's own event (fed during it) is held: refused as
 * the stopped feed's held events are, it fails the feed, though a stop alone would not. */
ParameterizedTestParameters(rfeed, own_event_refused_by_stop_fails_feed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, own_event_refused_by_stop_fails_feed, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-ownstop");
    const char *hist[] = {"h1", "h2", "h3"};
    append(&t, hist, 3);
    ckwrap w = {.store = t.store};
    eddy_rcheckpoints ck = {&wrap_ops, &w};
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-ownstop");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, &ck);
    M.stop_on = "h1";
    M.feed_on = "h1";
    snprintf(M.own_ev.id, sizeof(M.own_ev.id), "p1");
    done_rec dc = {0}, d2 = {0};
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000));
    cr_assert(run_until(&t, &M.own_done.calls, 1, 5000));
    run_for(&t, 100);
    cr_expect_neq(M.own_done.st, EDDY_OK, "own event: %s", M.own_done.detail);
    cr_expect(eddy_rfeed_refuses_permanently(f), "the refused own event did not fail the feed");
    cr_expect_eq(w.removes, 1, "marker deletions: %d", w.removes);
    uev l2 = {"l2"};
    accept_ev(f, &l2, &d2);
    cr_assert(run_until(&t, &d2.calls, 1, 5000));
    cr_expect_eq(d2.st, EDDY_ERR_ILLEGAL_STATE);
    run_for(&t, 20);
    cr_expect_eq(dc.calls + M.own_done.calls + d2.calls, 3, "exactly once");
    eddy_rfeed_free(f);
    teardown(&t);
}

/* ---- a replay holds one page and lets the loop run between pages ------------------------- */

static void append_numbered(tctx *t, int n) {
    char ids[64][16];
    const char *p[64];
    cr_assert(n <= 64);
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "h%d", i + 1);
        p[i] = ids[i];
    }
    append(t, p, (size_t)n);
}

#define TURN_EVENTS 20

typedef struct turns {
    struct ev_loop *loop;
    const int *done; /* the catch-up's completion count: counting stops once it ran */
    ev_prepare prep;
    int prepares;               /* loop iterations from the catch-up call to its completion */
    bool seen[TURN_EVENTS + 1]; /* how many events were applied, as each iteration found it */
    ev_timer tm;
    int mid_fires; /* timer callbacks that ran with the replay part-way */
} turns;

static void turn_prepare(struct ev_loop *loop, ev_prepare *w, int revents) {
    turns *tt = w->data;
    if (*tt->done)
        return;
    tt->prepares++;
    if (M.napplied <= TURN_EVENTS)
        tt->seen[M.napplied] = true;
}

static void turn_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    if (M.napplied > 0 && M.napplied < TURN_EVENTS)
        ((turns *)w->data)->mid_fires++;
}

/* Each apply arms a zero-delay timer unless one is still waiting: a loop that is not held runs
 * it before the replay ends. (Re-arming a pending timer would cancel it: in libev the reply that
 * brings the next page can run before the timer in the same iteration.) */
static void turn_apply(const char *id, void *arg) {
    turns *tt = arg;
    if (ev_is_active(&tt->tm) || ev_is_pending(&tt->tm))
        return;
    ev_timer_set(&tt->tm, 0., 0.);
    ev_timer_start(tt->loop, &tt->tm);
}

/* Reactive front end only: the loop turns between replay pages (a blocking replay runs on the
 * catch-up's caller's thread; that it holds one page at a time is test_feed.c's
 * a_replay_holds_at_most_one_page, on both front ends). */
/* With one event a page, every page is its own round trip on the loop: the loop turns after
 * each one (an ev_prepare sees every intermediate count of applied events) and runs other
 * watchers meanwhile (a timer armed by an apply fires before the replay ends). */
ParameterizedTestParameters(rfeed, loop_runs_between_pages) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rfeed, loop_runs_between_pages, .timeout = 60) {
    reset_model();
    tctx t;
    setup(&t, *b, "rfeed-turns");
    append_numbered(&t, TURN_EVENTS);
    eddy_feed_config cfg;
    cfg_init(&cfg, "orders-turns");
    cfg.page_size = 1;
    eddy_rfeed *f = must_feed(&t, &cfg, NULL);
    done_rec dc = {0};
    turns tt;
    memset(&tt, 0, sizeof(tt));
    tt.loop = t.loop;
    tt.done = &dc.calls;
    ev_prepare_init(&tt.prep, turn_prepare);
    tt.prep.data = &tt;
    ev_timer_init(&tt.tm, turn_timer, 0., 0.);
    tt.tm.data = &tt;
    M.on_apply = turn_apply;
    M.on_apply_arg = &tt;
    ev_prepare_start(t.loop, &tt.prep);
    catch_up(f, &dc);
    cr_assert(run_until(&t, &dc.calls, 1, 20000), "catch-up never completed");
    ev_prepare_stop(t.loop, &tt.prep);
    ev_timer_stop(t.loop, &tt.tm);
    cr_expect_eq(dc.st, EDDY_OK, "%s", dc.detail);
    cr_expect_eq(M.napplied, TURN_EVENTS);
    cr_expect_geq(tt.prepares, TURN_EVENTS, "%d loop iterations for %d pages", tt.prepares,
                  TURN_EVENTS);
    for (int n = 0; n < TURN_EVENTS; n++)
        cr_expect(tt.seen[n], "the loop did not turn with %d of %d events applied", n, TURN_EVENTS);
    cr_expect_geq(tt.mid_fires, 1, "%s: a timer never ran while the replay was part-way",
                  *b ? "redis" : "memory");
    eddy_rfeed_free(f);
    teardown(&t);
}
