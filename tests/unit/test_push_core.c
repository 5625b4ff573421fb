/* SPDX-License-Identifier: BSD-3-Clause */
/* The push core (src/store/push.c) with no server, no thread and no front end: each routing outcome's
 * settle action (acknowledge, hand back, failed attempt, source failed), the model's aggregation
 * over feeds, the sources' state machine and which transitions it refuses, start-all's claim
 * order (a second start-all claims none), and the progress figures computed from eddy_feed_info
 * snapshots and a clock the test passes in. Feeds are opaque to the core: plain addresses stand
 * in for them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder.h"
#include "store/push.h"

/* ---- helpers ---------------------------------------------------------------------------- */

typedef struct logs {
    int n, errors, warns, debugs;
    char last[512];
} logs;

static void log_to(eddy_log_level level, const char *msg, void *user) {
    logs *l = user;
    l->n++;
    l->errors += level == EDDY_LOG_ERROR;
    l->warns += level == EDDY_LOG_WARN;
    l->debugs += level == EDDY_LOG_DEBUG;
    snprintf(l->last, sizeof(l->last), "%s", msg);
}

static eddy_status noop_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                              void *user) {
    (void)event, (void)meta, (void)err, (void)user;
    return EDDY_OK;
}

static int feed_a, feed_b, feed_c, feed_d; /* stand-ins: the core never dereferences a feed */

typedef struct fixture {
    eddy__push_set set;
    logs log;
} fixture;

static void set_up(fixture *f) {
    memset(f, 0, sizeof(*f));
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.log = log_to;
    o.log_user = &f->log;
    cr_assert_eq(eddy__push_set_init(&f->set, &o), EDDY_OK);
}

static eddy__push_source *add(fixture *f, const char *id, void *feed) {
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = noop_apply;
    eddy__push_source *src = NULL;
    eddy_error err = {0};
    cr_assert_eq(
        eddy__push_set_add(&f->set, id, feed, &p, NULL, "orders.events", "view", false, &src, &err),
        EDDY_OK, "%s", err.detail);
    cr_assert_not_null(src);
    return src;
}

static eddy_push_state state_of(fixture *f, eddy__push_source *src) {
    eddy_push_progress p;
    eddy__push_snapshot(&f->set, src, &p);
    return p.state;
}

static eddy_feed_info info_of(long long position, long long head, uint64_t replayed) {
    eddy_feed_info i;
    memset(&i, 0, sizeof(i));
    i.catching_up = true;
    i.position = position;
    i.head = head;
    i.replayed = replayed;
    return i;
}

static eddy_error error_of(eddy_status st, const char *detail) {
    eddy_error e;
    memset(&e, 0, sizeof(e));
    e.status = st;
    snprintf(e.detail, sizeof(e.detail), "%s", detail);
    return e;
}

/* ---- settling: each outcome's action ------------------------------------------------------ */

typedef struct settle_case {
    const char *what;
    eddy_status st;
    eddy_route route;
    bool has_projection, refuses;
    eddy_status handler; /* what the handler returns */
    bool source_fails;
} settle_case;

Test(push_core, every_outcome_settles_as_the_table_says) {
    const settle_case cases[] = {
        {"delivered: ack", EDDY_OK, EDDY_ROUTE_DELIVERED, true, false, EDDY_OK, false},
        {"filtered: ack", EDDY_OK, EDDY_ROUTE_FILTERED, true, false, EDDY_OK, false},
        {"deferred: hand back", EDDY_OK, EDDY_ROUTE_DEFERRED, true, false, EDDY_ERR_UNAVAILABLE,
         false},
        {"nothing registered: hand back", EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED, false, false,
         EDDY_ERR_UNAVAILABLE, false},
        {"missing metadata (illegal state, registered, not failed): failed attempt",
         EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED, true, false, EDDY_ERR_ILLEGAL_STATE, false},
        {"apply failed: failed attempt", EDDY_ERR_HANDLER_FAILED, EDDY_ROUTE_FILTERED, true, false,
         EDDY_ERR_HANDLER_FAILED, false},
        {"decode failed: failed attempt", EDDY_ERR_MALFORMED, EDDY_ROUTE_FILTERED, true, false,
         EDDY_ERR_MALFORMED, false},
        {"invalid event: failed attempt", EDDY_ERR_INVALID_EVENT, EDDY_ROUTE_FILTERED, true, false,
         EDDY_ERR_INVALID_EVENT, false},
        {"pending is not final: failed attempt", EDDY_PENDING, EDDY_ROUTE_FILTERED, true, false,
         EDDY_ERR_HANDLER_FAILED, false},
        {"unreadable filter: source fails, hand back", EDDY_ERR_UNREADABLE_FILTER,
         EDDY_ROUTE_FILTERED, true, false, EDDY_ERR_UNAVAILABLE, true},
        {"failed feed: source fails, hand back", EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED, true,
         true, EDDY_ERR_UNAVAILABLE, true},
        {"failed feed without projection flag: source fails, hand back", EDDY_ERR_ILLEGAL_STATE,
         EDDY_ROUTE_FILTERED, false, true, EDDY_ERR_UNAVAILABLE, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const settle_case *k = &cases[i];
        fixture f;
        set_up(&f);
        eddy__push_source *src = add(&f, "s", &feed_a);
        eddy__push_catching_up(&f.set, src, 0, NULL);
        eddy_error e = error_of(k->st, "the feed says why");
        eddy__push_settled r =
            eddy__push_settle(&f.set, src, k->st, k->route, k->st == EDDY_OK ? NULL : &e,
                              k->has_projection, k->refuses);
        cr_expect_eq(r.handler, k->handler, "%s: handler %s", k->what, eddy_status_name(r.handler));
        cr_expect_eq(r.failed, k->source_fails, "%s", k->what);
        cr_expect_eq(r.pause, k->source_fails, "%s: a failed source stops consuming", k->what);
        eddy_push_progress p;
        eddy__push_snapshot(&f.set, src, &p);
        if (k->source_fails) {
            cr_expect_eq(p.state, EDDY_PUSH_FAILED, "%s", k->what);
            cr_expect_eq(p.failure.status, k->st, "%s", k->what);
            cr_expect_str_eq(p.failure.detail, "the feed says why", "%s", k->what);
            cr_expect_lt(p.eta_seconds, 0, "%s", k->what);
            cr_expect_not(eddy__push_admits(&f.set, src), "%s: routes no more", k->what);
            cr_expect_eq(f.log.errors, 1, "%s: logged once", k->what);
            /* Later messages: handed back, no new failure, no new log. */
            r = eddy__push_settle(&f.set, src, k->st, k->route, &e, k->has_projection, k->refuses);
            cr_expect_eq(r.handler, EDDY_ERR_UNAVAILABLE, "%s", k->what);
            cr_expect_not(r.failed, "%s: failed once only", k->what);
            cr_expect(r.pause, "%s: and stays paused", k->what);
            cr_expect_eq(f.log.errors, 1, "%s", k->what);
        } else {
            cr_expect_eq(p.state, EDDY_PUSH_CATCHING_UP, "%s: the source is unchanged", k->what);
            cr_expect_eq(p.failure.status, EDDY_OK, "%s", k->what);
            cr_expect(eddy__push_admits(&f.set, src), "%s", k->what);
            cr_expect_eq(f.log.errors, 0, "%s", k->what);
        }
        eddy__push_set_destroy(&f.set);
    }
}

Test(push_core, a_live_source_fails_on_an_unreadable_filter_with_the_status_text_when_no_detail) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy__push_catching_up(&f.set, src, 0, NULL);
    eddy__push_ended(&f.set, src, EDDY_OK, NULL, NULL, 0, NULL);
    cr_assert_eq(state_of(&f, src), EDDY_PUSH_LIVE);
    /* err's status differs from st: its detail is not this failure's. */
    eddy_error other = error_of(EDDY_ERR_IO, "unrelated");
    eddy__push_settled r = eddy__push_settle(&f.set, src, EDDY_ERR_UNREADABLE_FILTER,
                                             EDDY_ROUTE_FILTERED, &other, true, false);
    cr_expect_eq(r.handler, EDDY_ERR_UNAVAILABLE);
    cr_expect(r.failed);
    eddy_push_progress p;
    eddy__push_snapshot(&f.set, src, &p);
    cr_expect_eq(p.state, EDDY_PUSH_FAILED);
    cr_expect_eq(p.failure.status, EDDY_ERR_UNREADABLE_FILTER);
    cr_expect_str_eq(p.failure.detail, eddy_status_str(EDDY_ERR_UNREADABLE_FILTER));
    cr_expect(strstr(f.log.last, "'s'") != NULL, "%s", f.log.last);
    eddy__push_set_destroy(&f.set);
}

Test(push_core, only_catching_up_and_live_sources_route) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    cr_expect_not(eddy__push_admits(&f.set, src), "not started: hand back");
    eddy__push_catching_up(&f.set, src, 0, NULL);
    cr_expect(eddy__push_admits(&f.set, src));
    eddy__push_ended(&f.set, src, EDDY_OK, NULL, NULL, 0, NULL);
    cr_expect(eddy__push_admits(&f.set, src));
    eddy__push_fail(&f.set, src, EDDY_ERR_IO, NULL, NULL);
    cr_expect_not(eddy__push_admits(&f.set, src), "failed: hand back");
    eddy__push_set_destroy(&f.set);
}

static eddy_status no_handler(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

Test(push_core, a_source_consumes_only_while_it_routes) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy_subscription_spec sp;
    int user;
    eddy__push_sub_spec(src, no_handler, &user, &sp);
    cr_expect_str_eq(sp.name, "push.s");
    cr_expect_eq(sp.shape, EDDY_COMPETING);
    cr_expect_eq(sp.delivery, EDDY_AT_LEAST_ONCE);
    cr_expect_eq(sp.handler, no_handler);
    cr_expect_eq(sp.user, &user);
    cr_expect(sp.paused, "subscribed paused: nothing is read before the registration");
    cr_expect_not(eddy__push_consuming(EDDY_PUSH_NOT_STARTED));
    cr_expect(eddy__push_consuming(EDDY_PUSH_CATCHING_UP));
    cr_expect(eddy__push_consuming(EDDY_PUSH_LIVE));
    cr_expect_not(eddy__push_consuming(EDDY_PUSH_FAILED));
    bool pause = true;
    cr_expect_not(eddy__push_gate(&f.set, src, &pause), "not started: hand back");
    cr_expect_not(pause, "not started: its subscription is paused already");
    eddy__push_catching_up(&f.set, src, 0, NULL);
    cr_expect(eddy__push_gate(&f.set, src, &pause));
    cr_expect_not(pause);
    eddy__push_fail(&f.set, src, EDDY_ERR_IO, NULL, NULL);
    cr_expect_not(eddy__push_gate(&f.set, src, &pause), "failed: hand back");
    cr_expect(pause, "failed: and stop consuming");
    eddy__push_set_destroy(&f.set);
}

/* ---- the model's aggregation ---------------------------------------------------------------- */

Test(push_core, no_feed_registered_is_unavailable) {
    eddy__push_agg a;
    eddy__push_agg_init(&a);
    eddy_route route = EDDY_ROUTE_DELIVERED;
    eddy_error err = {0};
    cr_expect_eq(eddy__push_agg_result(&a, &route, &err), EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(err.status, EDDY_ERR_UNAVAILABLE);
    cr_expect_neq(err.detail[0], '\0');
    cr_expect_eq(route, EDDY_ROUTE_FILTERED);
    cr_expect_eq(eddy__push_agg_result(&a, NULL, NULL), EDDY_ERR_UNAVAILABLE, "NULL outputs");
}

typedef struct agg_case {
    const char *what;
    int n;
    eddy_route routes[3];
    eddy_route want;
} agg_case;

Test(push_core, deferred_wins_over_delivered_over_filtered_in_any_order) {
    const agg_case cases[] = {
        {"filtered", 1, {EDDY_ROUTE_FILTERED}, EDDY_ROUTE_FILTERED},
        {"filtered x2", 2, {EDDY_ROUTE_FILTERED, EDDY_ROUTE_FILTERED}, EDDY_ROUTE_FILTERED},
        {"delivered", 1, {EDDY_ROUTE_DELIVERED}, EDDY_ROUTE_DELIVERED},
        {"deferred", 1, {EDDY_ROUTE_DEFERRED}, EDDY_ROUTE_DEFERRED},
        {"F D", 2, {EDDY_ROUTE_FILTERED, EDDY_ROUTE_DELIVERED}, EDDY_ROUTE_DELIVERED},
        {"D F", 2, {EDDY_ROUTE_DELIVERED, EDDY_ROUTE_FILTERED}, EDDY_ROUTE_DELIVERED},
        {"F Def", 2, {EDDY_ROUTE_FILTERED, EDDY_ROUTE_DEFERRED}, EDDY_ROUTE_DEFERRED},
        {"Def D", 2, {EDDY_ROUTE_DEFERRED, EDDY_ROUTE_DELIVERED}, EDDY_ROUTE_DEFERRED},
        {"D Def", 2, {EDDY_ROUTE_DELIVERED, EDDY_ROUTE_DEFERRED}, EDDY_ROUTE_DEFERRED},
        {"D F Def",
         3,
         {EDDY_ROUTE_DELIVERED, EDDY_ROUTE_FILTERED, EDDY_ROUTE_DEFERRED},
         EDDY_ROUTE_DEFERRED},
        {"Def F D",
         3,
         {EDDY_ROUTE_DEFERRED, EDDY_ROUTE_FILTERED, EDDY_ROUTE_DELIVERED},
         EDDY_ROUTE_DEFERRED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        eddy__push_agg a;
        eddy__push_agg_init(&a);
        for (int j = 0; j < cases[i].n; j++)
            eddy__push_agg_add(&a, EDDY_OK, cases[i].routes[j], NULL);
        cr_expect_eq(a.registered, (size_t)cases[i].n, "%s", cases[i].what);
        eddy_route route = (eddy_route)-1;
        eddy_error err = {0};
        cr_expect_eq(eddy__push_agg_result(&a, &route, &err), EDDY_OK, "%s", cases[i].what);
        cr_expect_eq(route, cases[i].want, "%s: got %d", cases[i].what, (int)route);
    }
}

Test(push_core, the_first_error_wins_over_every_route_and_later_errors) {
    eddy__push_agg a;
    eddy__push_agg_init(&a);
    eddy__push_agg_add(&a, EDDY_OK, EDDY_ROUTE_DEFERRED, NULL);
    eddy_error e1 = error_of(EDDY_ERR_HANDLER_FAILED, "the first feed's apply failed");
    eddy_error e2 = error_of(EDDY_ERR_ILLEGAL_STATE, "the second feed failed");
    eddy__push_agg_add(&a, EDDY_ERR_HANDLER_FAILED, EDDY_ROUTE_FILTERED, &e1);
    eddy__push_agg_add(&a, EDDY_OK, EDDY_ROUTE_DELIVERED, NULL);
    eddy__push_agg_add(&a, EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED, &e2);
    cr_expect_eq(a.registered, 4);
    eddy_route route = EDDY_ROUTE_DEFERRED;
    eddy_error err = {0};
    cr_expect_eq(eddy__push_agg_result(&a, &route, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(err.status, EDDY_ERR_HANDLER_FAILED);
    cr_expect_str_eq(err.detail, "the first feed's apply failed");
    cr_expect_eq(route, EDDY_ROUTE_FILTERED, "no route with an error");

    /* An error without detail (NULL err, or an empty one) carries the status text. */
    eddy__push_agg_init(&a);
    eddy__push_agg_add(&a, EDDY_ERR_MALFORMED, EDDY_ROUTE_FILTERED, NULL);
    cr_expect_eq(eddy__push_agg_result(&a, NULL, &err), EDDY_ERR_MALFORMED);
    cr_expect_str_eq(err.detail, eddy_status_str(EDDY_ERR_MALFORMED));
    eddy__push_agg_init(&a);
    eddy_error empty = error_of(EDDY_ERR_IO, "");
    eddy__push_agg_add(&a, EDDY_ERR_IO, EDDY_ROUTE_FILTERED, &empty);
    cr_expect_eq(eddy__push_agg_result(&a, NULL, &err), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, eddy_status_str(EDDY_ERR_IO));
}

Test(push_core, the_model_refuses_a_feed_twice_and_copies_its_list) {
    eddy__push_model m;
    cr_assert_eq(eddy__push_model_init(&m, NULL, NULL, NULL), EDDY_OK);
    void **feeds = (void **)&m;
    size_t n = 9;
    cr_expect_eq(eddy__push_model_feeds(&m, &feeds, &n), EDDY_OK);
    cr_expect_null(feeds, "no feed: NULL");
    cr_expect_eq(n, 0);
    eddy_error err = {0};
    cr_expect_eq(eddy__push_model_add(&m, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    void *all[] = {&feed_a, &feed_b, &feed_c, &feed_d, &err}; /* five: past the first capacity */
    for (int i = 0; i < 5; i++)
        cr_expect_eq(eddy__push_model_add(&m, all[i], &err), EDDY_OK);
    cr_expect_eq(eddy__push_model_add(&m, &feed_b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(err.status, EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy__push_model_feeds(&m, &feeds, &n), EDDY_OK);
    cr_assert_eq(n, 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(feeds[i], all[i], "in the order added");
    free(feeds);
    eddy__push_model_destroy(&m);
}

typedef struct told {
    int n;
    eddy_status st;
    eddy_route route;
    bool had_err;
    eddy_status returns;
} told;

static eddy_status observe(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user) {
    (void)ev;
    told *t = user;
    t->n++;
    t->st = st;
    t->route = route;
    t->had_err = err != NULL;
    return t->returns;
}

Test(push_core, the_observer_is_told_and_its_failure_only_logged) {
    told t = {0};
    logs l = {0};
    eddy_push_observer obs = {observe, &t};
    eddy__push_model m;
    eddy__push_model_init(&m, &obs, log_to, &l);
    eddy_event *ev = make_event("e1", "order.placed");
    eddy__push_observe(&m, ev, EDDY_OK, EDDY_ROUTE_DELIVERED, NULL, true);
    cr_expect_eq(t.n, 1);
    cr_expect_eq(t.route, EDDY_ROUTE_DELIVERED);
    cr_expect_not(t.had_err);
    cr_expect_eq(l.n, 0, "a delivered event logs nothing");
    eddy_error e = error_of(EDDY_ERR_UNAVAILABLE, "nothing registered");
    eddy__push_observe(&m, ev, EDDY_ERR_UNAVAILABLE, EDDY_ROUTE_FILTERED, &e, true);
    cr_expect_eq(t.st, EDDY_ERR_UNAVAILABLE);
    cr_expect(t.had_err);
    cr_expect_eq(l.debugs, 1, "write path, nothing registered: debug");
    e = error_of(EDDY_ERR_HANDLER_FAILED, "apply failed");
    eddy__push_observe(&m, ev, EDDY_ERR_HANDLER_FAILED, EDDY_ROUTE_FILTERED, &e, true);
    cr_expect_eq(l.warns, 1, "write path, an error: warn");
    eddy__push_observe(&m, ev, EDDY_ERR_HANDLER_FAILED, EDDY_ROUTE_FILTERED, &e, false);
    cr_expect_eq(l.warns, 1, "accept-or-defer: the caller sees it, no log");
    t.returns = EDDY_ERR_HANDLER_FAILED;
    eddy__push_observe(&m, ev, EDDY_OK, EDDY_ROUTE_FILTERED, NULL, false);
    cr_expect_eq(t.n, 5);
    cr_expect_eq(l.warns, 2, "the observer's failure is logged");
    eddy__push_notify(NULL, &m.log, ev, EDDY_OK, EDDY_ROUTE_FILTERED, NULL); /* no observer */
    eddy_push_observer none = {NULL, NULL};
    eddy__push_notify(&none, &m.log, NULL, EDDY_OK, EDDY_ROUTE_FILTERED, NULL);
    cr_expect_eq(t.n, 5);
    eddy_event_free(ev);
    eddy__push_model_destroy(&m);
}

/* ---- states --------------------------------------------------------------------------------- */

Test(push_core, a_source_starts_not_started_then_catches_up_then_goes_live) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy_push_progress p;
    eddy__push_snapshot(&f.set, src, &p);
    cr_expect_str_eq(p.id, "s");
    cr_expect_eq(p.state, EDDY_PUSH_NOT_STARTED);
    cr_expect_lt(p.eta_seconds, 0, "unknown");
    cr_expect_eq(p.rate, 0);
    cr_expect_not(eddy__push_any_catching_up(&f.set));
    eddy__push_catching_up(&f.set, src, 1000, &p);
    cr_expect_eq(p.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(p.replayed, 0);
    cr_expect_eq(p.position, 0);
    cr_expect_lt(p.eta_seconds, 0);
    cr_expect(eddy__push_any_catching_up(&f.set));
    eddy_feed_info info = info_of(100, 100, 100);
    info.live = true;
    info.catching_up = false;
    eddy__push_ended(&f.set, src, EDDY_OK, NULL, &info, 3000, &p);
    cr_expect_eq(p.state, EDDY_PUSH_LIVE);
    cr_expect_eq(p.replayed, 100);
    cr_expect_eq(p.position, 100);
    cr_expect_eq(p.head, 100);
    cr_expect_eq(p.eta_seconds, 0);
    cr_expect_eq(p.rate, 50, "100 positions in 2 s");
    cr_expect_eq(p.failure.status, EDDY_OK);
    cr_expect_not(eddy__push_any_catching_up(&f.set));
    cr_expect_eq(f.log.errors, 0);
    eddy__push_set_destroy(&f.set);
}

Test(push_core, a_catch_up_that_ends_without_info_goes_live) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy__push_catching_up(&f.set, src, 0, NULL);
    eddy_push_progress p;
    eddy__push_ended(&f.set, src, EDDY_OK, NULL, NULL, 10, &p);
    cr_expect_eq(p.state, EDDY_PUSH_LIVE);
    cr_expect_eq(p.eta_seconds, 0);
    eddy__push_set_destroy(&f.set);
}

typedef struct end_case {
    const char *what;
    eddy_status st;
    const char *detail; /* err's detail (err's status st) or NULL for no err */
    bool live, failed;  /* the feed after the call */
    eddy_status why;
    const char *why_detail; /* NULL: the status text */
} end_case;

Test(push_core, a_catch_up_that_does_not_end_live_fails_the_source_with_its_reason) {
    const end_case cases[] = {
        {"the catch-up failed", EDDY_ERR_HANDLER_FAILED, "the view rejects e5", false, true,
         EDDY_ERR_HANDLER_FAILED, "the view rejects e5"},
        {"the registration's feed refuses", EDDY_ERR_ILLEGAL_STATE, NULL, false, true,
         EDDY_ERR_ILLEGAL_STATE, NULL},
        {"stopped by freeing the sources (ok, not live)", EDDY_OK, NULL, false, false,
         EDDY_ERR_CLOSED, "the catch-up was stopped before the feed went live"},
        {"ok but the feed failed", EDDY_OK, NULL, false, true, EDDY_ERR_ILLEGAL_STATE, NULL},
        {"ok, live but failed", EDDY_OK, NULL, true, true, EDDY_ERR_ILLEGAL_STATE, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const end_case *k = &cases[i];
        fixture f;
        set_up(&f);
        eddy__push_source *src = add(&f, "s", &feed_a);
        eddy__push_catching_up(&f.set, src, 0, NULL);
        eddy_feed_info info = info_of(7, 20, 7);
        info.catching_up = false;
        info.live = k->live;
        info.failed = k->failed;
        eddy_error e = error_of(k->st, k->detail ? k->detail : "");
        eddy_push_progress p;
        eddy__push_ended(&f.set, src, k->st, k->detail ? &e : NULL, &info, 1000, &p);
        cr_expect_eq(p.state, EDDY_PUSH_FAILED, "%s", k->what);
        cr_expect_eq(p.failure.status, k->why, "%s: %s", k->what,
                     eddy_status_name(p.failure.status));
        cr_expect_str_eq(p.failure.detail, k->why_detail ? k->why_detail : eddy_status_str(k->why),
                         "%s", k->what);
        cr_expect_lt(p.eta_seconds, 0, "%s", k->what);
        cr_expect_eq(p.position, 7, "%s: the last snapshot is kept", k->what);
        if (k->why != EDDY_ERR_CLOSED) /* a stop by freeing is no failure to log (see report) */
            cr_expect_eq(f.log.errors, 1, "%s: logged", k->what);
        cr_expect_not(eddy__push_any_catching_up(&f.set), "%s", k->what);
        eddy__push_set_destroy(&f.set);
    }
}

Test(push_core, failed_is_final_and_live_does_not_catch_up_again) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy_error e = error_of(EDDY_ERR_IO, "registration refused");
    eddy_push_progress p;
    eddy__push_fail(&f.set, src, EDDY_ERR_IO, &e, &p);
    cr_expect_eq(p.state, EDDY_PUSH_FAILED, "NOT_STARTED -> FAILED (registration refused)");
    cr_expect_eq(p.failure.status, EDDY_ERR_IO);
    cr_expect_str_eq(p.failure.detail, "registration refused");
    cr_expect_eq(f.log.errors, 1);

    /* Everything else is refused; the first failure stays. */
    eddy__push_catching_up(&f.set, src, 5, &p);
    cr_expect_eq(p.state, EDDY_PUSH_FAILED, "FAILED -> CATCHING_UP refused");
    eddy_feed_info info = info_of(10, 10, 10);
    memset(&p, 0x5a, sizeof(p));
    eddy_push_progress untouched = p;
    cr_expect_not(eddy__push_sample(&f.set, src, &info, 10, &p), "no sample once failed");
    cr_expect_eq(memcmp(&p, &untouched, sizeof(p)), 0, "*out left alone");
    info.live = true;
    eddy__push_ended(&f.set, src, EDDY_OK, NULL, &info, 20, &p);
    cr_expect_eq(p.state, EDDY_PUSH_FAILED, "FAILED -> LIVE refused");
    cr_expect_eq(p.position, 0, "and not sampled");
    eddy_error e2 = error_of(EDDY_ERR_UNREADABLE_FILTER, "later");
    eddy__push_fail(&f.set, src, EDDY_ERR_UNREADABLE_FILTER, &e2, &p);
    eddy__push_settled r = eddy__push_settle(&f.set, src, EDDY_ERR_UNREADABLE_FILTER,
                                             EDDY_ROUTE_FILTERED, &e2, true, false);
    cr_expect_not(r.failed);
    eddy__push_snapshot(&f.set, src, &p);
    cr_expect_eq(p.failure.status, EDDY_ERR_IO, "the first failure stays");
    cr_expect_str_eq(p.failure.detail, "registration refused");
    cr_expect_eq(f.log.errors, 1, "no further failure logged");

    /* LIVE: catching_up and sample change nothing. */
    eddy__push_source *live = add(&f, "l", &feed_b);
    eddy__push_catching_up(&f.set, live, 0, NULL);
    eddy__push_ended(&f.set, live, EDDY_OK, NULL, NULL, 0, NULL);
    eddy__push_catching_up(&f.set, live, 5, &p);
    cr_expect_eq(p.state, EDDY_PUSH_LIVE, "LIVE -> CATCHING_UP refused");
    cr_expect_eq(p.eta_seconds, 0);
    cr_expect_not(eddy__push_sample(&f.set, live, &info, 10, &p), "no sample once live");
    cr_expect_not(eddy__push_any_catching_up(&f.set));

    /* NOT_STARTED: a sample is refused too. */
    eddy__push_source *idle = add(&f, "i", &feed_c);
    cr_expect_not(eddy__push_sample(&f.set, idle, &info, 10, &p));
    cr_expect_eq(state_of(&f, idle), EDDY_PUSH_NOT_STARTED);
    eddy__push_set_destroy(&f.set);
}

Test(push_core, catching_up_twice_keeps_the_running_progress) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy__push_catching_up(&f.set, src, 0, NULL);
    eddy_feed_info info = info_of(40, 100, 40);
    eddy_push_progress p;
    cr_assert(eddy__push_sample(&f.set, src, &info, 2000, &p));
    eddy__push_catching_up(&f.set, src, 5000, &p);
    cr_expect_eq(p.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(p.position, 40, "not reset");
    cr_expect_eq(p.rate, 20);
    eddy__push_set_destroy(&f.set);
}

Test(push_core, the_catching_sources_are_listed_in_the_order_added) {
    fixture f;
    set_up(&f);
    eddy__push_source *a = add(&f, "a", &feed_a);
    eddy__push_source *b = add(&f, "b", &feed_b);
    eddy__push_source *c = add(&f, "c", &feed_c);
    eddy__push_source **v = (eddy__push_source **)&f;
    size_t n = 9;
    cr_expect_eq(eddy__push_set_catching(&f.set, &v, &n), EDDY_OK);
    cr_expect_null(v);
    cr_expect_eq(n, 0);
    eddy__push_catching_up(&f.set, c, 0, NULL);
    eddy__push_catching_up(&f.set, a, 0, NULL);
    eddy__push_catching_up(&f.set, b, 0, NULL);
    eddy__push_ended(&f.set, b, EDDY_OK, NULL, NULL, 0, NULL);
    cr_assert_eq(eddy__push_set_catching(&f.set, &v, &n), EDDY_OK);
    cr_assert_eq(n, 2);
    cr_expect_eq(v[0], a);
    cr_expect_eq(v[1], c);
    free(v);
    eddy__push_set_destroy(&f.set);
}

/* ---- adding, claiming (start-all) ----------------------------------------------------------- */

Test(push_core, bad_sources_are_refused_and_good_ones_copied) {
    fixture f;
    set_up(&f);
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = noop_apply;
    eddy_projection none;
    memset(&none, 0, sizeof(none));
    eddy__push_source *src = NULL;
    eddy_error err = {0};
    eddy__push_set *s = &f.set;
    cr_expect_eq(eddy__push_set_add(s, NULL, &feed_a, &p, NULL, "x", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "", &feed_a, &p, NULL, "x", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "id", NULL, &p, NULL, "x", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "id", &feed_a, NULL, NULL, "x", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "id", &feed_a, &none, NULL, "x", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "id", &feed_a, &p, NULL, "", "g", false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__push_set_add(s, "id", &feed_a, &p, NULL, "x", NULL, false, &src, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_null(src, "*out untouched on a refusal");
    cr_expect_eq(s->n, 0);

    char id[] = "orders";
    char subject[] = "orders.events";
    eddy_filter *filter = eddy_filter_type("order.placed");
    cr_assert_eq(eddy__push_set_add(s, id, &feed_a, &p, filter, subject, "view", true, &src, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_filter_free(filter);
    id[0] = 'X';
    subject[0] = 'X';
    cr_expect_str_eq(src->id, "orders", "copied");
    cr_expect_str_eq(src->subject, "orders.events");
    cr_expect_str_eq(src->group, "view");
    cr_expect_str_eq(src->sub_name, "push.orders");
    cr_expect_not_null(src->filter);
    cr_expect(src->go_live);
    cr_expect_eq(src->feed, &feed_a);
    cr_expect_not(src->claimed);
    cr_expect_eq(eddy__push_set_find(s, "orders"), src);
    cr_expect_null(eddy__push_set_find(s, "nope"));
    cr_expect_null(eddy__push_set_find(s, NULL));
    eddy__push_source *dup = NULL;
    cr_expect_eq(eddy__push_set_add(s, "orders", &feed_b, &p, NULL, "y", "g", false, &dup, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(dup);
    cr_expect_eq(s->n, 1);

    /* drop_last removes only the last one added. */
    eddy__push_source *other = add(&f, "other", &feed_b);
    eddy__push_set_drop_last(s, src);
    cr_expect_eq(s->n, 2, "not the last: kept");
    eddy__push_set_drop_last(s, other);
    cr_expect_eq(s->n, 1);
    cr_expect_null(eddy__push_set_find(s, "other"));
    eddy__push_set_destroy(s);
}

Test(push_core, progress_ms_zero_becomes_the_default) {
    eddy__push_set s;
    eddy_push_options o;
    eddy_push_options_init(&o);
    cr_expect_eq(o.mode, EDDY_PUSH_AUTOMATIC);
    cr_expect_eq(o.startup, EDDY_PUSH_FOREGROUND);
    o.progress_ms = 0;
    eddy__push_set_init(&s, &o);
    cr_expect_eq(s.opts.progress_ms, 250);
    eddy__push_set_destroy(&s);
    eddy__push_set_init(&s, NULL);
    cr_expect_eq(s.opts.progress_ms, 250);
    cr_expect_eq(s.opts.mode, EDDY_PUSH_AUTOMATIC);
    eddy__push_set_destroy(&s);
}

Test(push_core, start_all_claims_in_the_order_added_and_skips_sources_started_already) {
    fixture f;
    set_up(&f);
    eddy__push_source *z = add(&f, "zeta", &feed_a);
    eddy__push_source *m = add(&f, "mid", &feed_b);
    eddy__push_source *a = add(&f, "alpha", &feed_c);
    /* An automatic add claimed mid already. */
    cr_expect(eddy__push_set_claim_one(&f.set, m));
    cr_expect_not(eddy__push_set_claim_one(&f.set, m), "claimed once only");

    eddy__push_source **v = NULL;
    size_t n = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy__push_set_claim(&f.set, &v, &n, &err), EDDY_OK);
    cr_assert_eq(n, 2);
    cr_expect_eq(v[0], z, "the order they were added, not by id");
    cr_expect_eq(v[1], a);
    const char **ids = NULL;
    cr_assert_eq(eddy__push_ids(v, n, &ids), EDDY_OK);
    cr_expect_str_eq(ids[0], "zeta");
    cr_expect_str_eq(ids[1], "alpha");
    cr_expect_null(ids[2]);
    free(ids);
    free(v);

    /* Start-all twice: the second claims none. */
    v = (eddy__push_source **)&f;
    n = 7;
    cr_expect_eq(eddy__push_set_claim(&f.set, &v, &n, &err), EDDY_OK);
    cr_expect_eq(n, 0);
    cr_expect_null(v);
    cr_assert_eq(eddy__push_ids(v, n, &ids), EDDY_OK);
    cr_expect_null(ids[0], "an empty, NULL-terminated list");
    free(ids);
    cr_expect_not(eddy__push_set_claim_one(&f.set, z), "start-all claimed it");

    /* A source added later is the only one the next start-all claims. */
    eddy__push_source *late = add(&f, "late", &feed_d);
    cr_assert_eq(eddy__push_set_claim(&f.set, &v, &n, &err), EDDY_OK);
    cr_assert_eq(n, 1);
    cr_expect_eq(v[0], late);
    /* The claiming call failed: given back, claimed again by the next start-all. */
    eddy__push_set_unclaim(&f.set, v, n);
    free(v);
    cr_assert_eq(eddy__push_set_claim(&f.set, &v, &n, &err), EDDY_OK);
    cr_assert_eq(n, 1);
    cr_expect_eq(v[0], late);
    free(v);
    /* Claiming changes no state. */
    cr_expect_eq(state_of(&f, z), EDDY_PUSH_NOT_STARTED);
    eddy__push_set_destroy(&f.set);
}

/* ---- progress: rate and ETA ----------------------------------------------------------------- */

typedef struct est_case {
    const char *what;
    long long p0, t0, pos, head, now;
    double rate, eta; /* eta < 0: any negative value (unknown) */
} est_case;

Test(push_core, rate_and_eta_from_positions_and_the_clock) {
    const est_case cases[] = {
        {"no time passed", 0, 1000, 50, 100, 1000, 0, -1},
        {"the clock went back", 0, 1000, 50, 100, 900, 0, -1},
        {"no progress yet", 10, 1000, 10, 100, 5000, 0, -1},
        {"halfway", 0, 1000, 50, 100, 2000, 50, 1},
        {"from a later start", 100, 0, 400, 1000, 3000, 100, 6},
        {"at the head", 0, 0, 100, 100, 2000, 50, 0},
        {"at the head, no time passed", 0, 1000, 100, 100, 1000, 0, 0},
        {"past the head", 0, 0, 120, 100, 1000, 120, 0},
        {"empty store: head 0, position 0", 0, 0, 0, 0, 1000, 0, -1},
        {"empty store, no time passed", 0, 0, 0, 0, 0, 0, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const est_case *k = &cases[i];
        double rate = 42, eta = 42;
        eddy__push_estimate(k->p0, k->t0, k->pos, k->head, k->now, &rate, &eta);
        cr_expect(isfinite(rate) && isfinite(eta), "%s: %f %f", k->what, rate, eta);
        cr_expect_float_eq(rate, k->rate, 1e-9, "%s: rate %f", k->what, rate);
        if (k->eta < 0)
            cr_expect_lt(eta, 0, "%s: unknown, got %f", k->what, eta);
        else
            cr_expect_float_eq(eta, k->eta, 1e-9, "%s: eta %f", k->what, eta);
    }
}

Test(push_core, head_zero_never_divides_by_zero) {
    /* A replay whose head is not known yet (0) but whose position moved. */
    double rate = 0, eta = 0;
    eddy__push_estimate(0, 0, 5, 0, 1000, &rate, &eta);
    cr_expect(isfinite(rate) && isfinite(eta), "%f %f", rate, eta);
    cr_expect_lt(eta, 0, "not at a head that is not known");
}

Test(push_core, samples_give_rate_and_eta_from_the_start_of_the_catch_up) {
    fixture f;
    set_up(&f);
    eddy__push_source *src = add(&f, "s", &feed_a);
    eddy_push_progress p;
    eddy__push_catching_up(&f.set, src, 10000, &p);
    cr_expect_eq(p.rate, 0);
    cr_expect_lt(p.eta_seconds, 0);

    /* The first snapshot, taken when no time passed: rate 0, ETA unknown. */
    eddy_feed_info info = info_of(0, 0, 0);
    cr_assert(eddy__push_sample(&f.set, src, &info, 10000, &p));
    cr_expect_eq(p.rate, 0, "before any time passed");
    cr_expect_lt(p.eta_seconds, 0);
    cr_expect(isfinite(p.eta_seconds));

    /* Time passes, head still 0 (not read yet): no division by zero. */
    cr_assert(eddy__push_sample(&f.set, src, &info, 11000, &p));
    cr_expect_eq(p.rate, 0);
    cr_expect_lt(p.eta_seconds, 0);
    cr_expect(isfinite(p.eta_seconds));

    info = info_of(30, 120, 30);
    cr_assert(eddy__push_sample(&f.set, src, &info, 11000, &p));
    cr_expect_eq(p.replayed, 30);
    cr_expect_eq(p.position, 30);
    cr_expect_eq(p.head, 120);
    cr_expect_float_eq(p.rate, 30, 1e-9, "30 positions in 1 s since the catch-up began");
    cr_expect_float_eq(p.eta_seconds, 3, 1e-9);
    cr_expect_eq(p.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_str_eq(p.id, "s");

    info = info_of(120, 120, 120);
    cr_assert(eddy__push_sample(&f.set, src, &info, 14000, &p));
    cr_expect_float_eq(p.rate, 30, 1e-9);
    cr_expect_eq(p.eta_seconds, 0, "at the head");
    cr_expect_eq(p.state, EDDY_PUSH_CATCHING_UP, "a sample does not end the catch-up");
    eddy__push_set_destroy(&f.set);
}

Test(push_core, the_clock_is_monotonic_milliseconds) {
    long long a = eddy__push_now_ms(), b = eddy__push_now_ms();
    cr_expect_geq(b, a);
    cr_expect_gt(a, 0);
}
