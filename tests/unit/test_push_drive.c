/* SPDX-License-Identifier: BSD-3-Clause */
/* The push core's drive (src/store/push.c): what both front ends do alike through their
 * eddy__push_ops. A fake front end records every call (registrations, pauses and resumes,
 * reports, enter/leave) and answers as each test says, so the drive is checked with no bus, no
 * feed, no thread and no loop: the subscription follows the state, a start registers before it
 * reports and resumes, a settle reports a failure and pauses, the sources being freed stop the
 * drive from touching the bus or the observer, and sampling reports without waking anyone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store/push.h"

/* ---- a fake front end ------------------------------------------------------------------- */

typedef struct fake {
    eddy__push_set set;
    /* What the fake answers. */
    eddy_status register_st;
    bool has_stats, live, has_projection, refuses;
    bool close_on_report; /* the progress callback frees the sources */
    /* What it saw. */
    int registered, resumes, pauses, reports, changes, observed, depth, max_depth;
    int starts;
    const char *refuse_from; /* the starts of this source and those after it fail */
    bool close_on_start;     /* a start frees the sources */
    bool closing;
    eddy_push_state last_reported;
} fake;

static fake *the;  /* the ops' feed callbacks have no front-end argument */
static int a_feed; /* a stand-in: the core never dereferences a feed */

static eddy_status reg(void *feed, const char *id, const eddy_projection *projection,
                       const eddy_filter *filter, eddy_error *err) {
    (void)feed, (void)id, (void)projection, (void)filter;
    the->registered++;
    if (the->register_st != EDDY_OK) {
        err->status = the->register_st;
        snprintf(err->detail, sizeof(err->detail), "refused");
    }
    return the->register_st;
}
static eddy_status stats(void *feed, eddy_feed_info *info) {
    (void)feed;
    memset(info, 0, sizeof(*info));
    info->position = 5;
    info->head = 10;
    info->replayed = 5;
    info->live = the->live;
    return the->has_stats ? EDDY_OK : EDDY_ERR_UNAVAILABLE;
}
static bool has_projection(void *feed) { return (void)feed, the->has_projection; }
static bool refuses(void *feed) { return (void)feed, the->refuses; }
static eddy_status follow(void *fe, const char *name, bool consuming, eddy_error *err) {
    fake *f = fe;
    (void)name, (void)err;
    cr_assert_eq(f->depth, 0, "the bus is called outside enter/leave");
    if (consuming)
        f->resumes++;
    else
        f->pauses++;
    return EDDY_OK;
}
static void enter(void *fe) {
    fake *f = fe;
    if (++f->depth > f->max_depth)
        f->max_depth = f->depth;
}
static void leave(void *fe, const eddy_push_progress *p, bool changed) {
    fake *f = fe;
    cr_assert_eq(f->depth, 1, "leave without enter");
    f->depth--;
    if (p) {
        f->reports++;
        f->last_reported = p->state;
        if (f->close_on_report)
            f->closing = true;
    }
    f->changes += changed;
}
static bool closing(void *fe) { return ((fake *)fe)->closing; }
static eddy_status start(void *fe, eddy__push_source *src, void *arg, eddy_error *err) {
    fake *f = fe;
    cr_expect_eq(arg, &a_feed, "the caller's arg is passed through");
    f->starts++;
    cr_expect_eq(src->state, EDDY_PUSH_CATCHING_UP, "registered and reported before its catch-up");
    f->closing |= f->close_on_start;
    if (f->refuse_from && strcmp(src->id, f->refuse_from) >= 0)
        return eddy__fail(err, EDDY_ERR_BACKEND, "start of %s refused", src->id);
    return EDDY_OK;
}
static const eddy__push_ops ops = {reg,   stats, has_projection, refuses, follow,
                                   enter, leave, closing,        start};

static eddy_status observe(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user) {
    (void)ev, (void)st, (void)route, (void)err;
    ((fake *)user)->observed++;
    return EDDY_OK;
}

static eddy_status noop_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                              void *user) {
    (void)event, (void)meta, (void)err, (void)user;
    return EDDY_OK;
}

static fake *fake_new(void) {
    fake *f = calloc(1, sizeof(*f));
    cr_assert_not_null(f);
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.observer.observe = observe;
    o.observer.user = f;
    cr_assert_eq(eddy__push_set_init(&f->set, &o), EDDY_OK);
    eddy__push_set_bind(&f->set, &ops, f);
    f->has_stats = true;
    f->has_projection = true;
    the = f;
    return f;
}

static void fake_free(fake *f) {
    eddy__push_set_destroy(&f->set);
    free(f);
}

static eddy__push_source *add(fake *f, const char *id) {
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = noop_apply;
    eddy__push_source *src = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__push_set_add(&f->set, id, &a_feed, &p, NULL, "orders.events", "view", false,
                                    &src, &err),
                 EDDY_OK, "%s", err.detail);
    return src;
}

/* A source added and started (CATCHING_UP, its subscription resumed). */
static eddy__push_source *started(fake *f, const char *id) {
    eddy__push_source *src = add(f, id);
    cr_assert_eq(eddy__push_begin(&f->set, src, NULL), EDDY_OK);
    return src;
}

static eddy_status settle(fake *f, eddy__push_source *src, eddy_status st, eddy_route route) {
    return eddy__push_settle_routed(&f->set, src, NULL, st, route, NULL);
}

static eddy_push_state state_of(fake *f, eddy__push_source *src) {
    eddy_push_progress p;
    eddy__push_snapshot(&f->set, src, &p);
    return p.state;
}

/* ---- starting ----------------------------------------------------------------------------- */

Test(push_drive, begin_registers_reports_then_resumes) {
    fake *f = fake_new();
    eddy__push_source *src = add(f, "a");
    eddy_error err = {0};
    cr_assert_eq(eddy__push_begin(&f->set, src, &err), EDDY_OK);
    cr_expect_eq(f->registered, 1);
    cr_expect_eq(state_of(f, src), EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(f->reports, 1);
    cr_expect_eq(f->last_reported, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(f->changes, 1, "a state change wakes the waiters");
    cr_expect_eq(f->resumes, 1, "registered: the subscription may read now");
    cr_expect_eq(f->pauses, 0);
    fake_free(f);
}

Test(push_drive, a_refused_registration_fails_the_source) {
    fake *f = fake_new();
    eddy__push_source *src = add(f, "a");
    f->register_st = EDDY_ERR_INVALID_SPEC;
    eddy_error err = {0};
    cr_assert_eq(eddy__push_begin(&f->set, src, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "push source 'a': refused");
    cr_expect_eq(state_of(f, src), EDDY_PUSH_FAILED);
    cr_expect_eq(f->reports, 1);
    cr_expect_eq(f->last_reported, EDDY_PUSH_FAILED);
    cr_expect_eq(f->resumes, 0, "a source that never registered stays paused");
    fake_free(f);
}

Test(push_drive, sources_freed_by_the_report_stop_the_start) {
    fake *f = fake_new();
    eddy__push_source *src = add(f, "a");
    f->close_on_report = true;
    eddy_error err = {0};
    cr_assert_eq(eddy__push_begin(&f->set, src, &err), EDDY_ERR_CLOSED);
    cr_expect_eq(f->resumes + f->pauses, 0, "no bus call once the sources are freed");
    fake_free(f);
}

Test(push_drive, claim_all_lists_the_ids_in_order_once) {
    fake *f = fake_new();
    add(f, "a");
    add(f, "b");
    eddy__push_source **v;
    size_t n;
    const char **ids = NULL;
    cr_assert_eq(eddy__push_claim_all(&f->set, &v, &n, &ids, NULL), EDDY_OK);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(ids[0], "a");
    cr_expect_str_eq(ids[1], "b");
    cr_expect_null(ids[2]);
    free(ids);
    free(v);
    cr_assert_eq(eddy__push_claim_all(&f->set, &v, &n, &ids, NULL), EDDY_OK);
    cr_expect_eq(n, 0, "a second start-all claims none");
    cr_expect_null(ids[0]);
    free(ids);
    free(v);
    fake_free(f);
}

static eddy_status a_handler(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

Test(push_drive, add_gives_the_front_end_a_record_and_the_subscription) {
    fake *f = fake_new();
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = noop_apply;
    eddy_subscription_spec sub;
    eddy__push_source *src = NULL;
    cr_assert_eq(eddy__push_add(&f->set, "a", &a_feed, &p, NULL, "orders.events", "view", false, 64,
                                a_handler, &sub, &src, NULL),
                 EDDY_OK);
    cr_assert_not_null(src->fe);
    static const char zero[64];
    cr_expect_eq(memcmp(src->fe, zero, sizeof(zero)), 0, "the record starts zeroed");
    cr_expect_eq(sub.user, src->fe, "the handler gets the front end's record");
    cr_expect_eq(sub.handler, a_handler);
    cr_expect(sub.paused, "paused until its projection is registered");
    cr_expect_str_eq(sub.name, "push.a");
    eddy__push_source *again = NULL;
    cr_expect_eq(eddy__push_add(&f->set, "a", &a_feed, &p, NULL, "orders.events", "view", false, 64,
                                a_handler, &sub, &again, NULL),
                 EDDY_ERR_INVALID_ARGUMENT, "an id added already");
    cr_expect_null(again);
    fake_free(f);
}

Test(push_drive, unknown_mode_or_startup_is_refused) {
    eddy_push_options o;
    eddy_push_options_init(&o);
    cr_expect_eq(eddy__push_check_options(NULL, NULL), EDDY_OK);
    cr_expect_eq(eddy__push_check_options(&o, NULL), EDDY_OK);
    o.mode = (eddy_push_mode)42;
    cr_expect_eq(eddy__push_check_options(&o, NULL), EDDY_ERR_INVALID_SPEC);
    eddy_push_options_init(&o);
    o.startup = (eddy_push_startup)42;
    cr_expect_eq(eddy__push_check_options(&o, NULL), EDDY_ERR_INVALID_SPEC);
}

Test(push_drive, start_each_tries_every_source_and_keeps_the_first_failure) {
    fake *f = fake_new();
    eddy__push_source *v[3] = {add(f, "a"), add(f, "b"), add(f, "c")};
    f->refuse_from = "b";
    eddy_error e = {0};
    cr_expect_eq(eddy__push_start_each(&f->set, v, 3, &a_feed, &e), EDDY_ERR_BACKEND);
    cr_expect_eq(f->starts, 3, "a failure does not stop the others");
    cr_expect_str_eq(e.detail, "start of b refused", "the first failure is kept");
    fake_free(f);
}

Test(push_drive, a_refused_registration_never_reaches_the_catch_up) {
    fake *f = fake_new();
    eddy__push_source *v[2] = {add(f, "a"), add(f, "b")};
    f->register_st = EDDY_ERR_INVALID_SPEC;
    eddy_error e = {0};
    cr_expect_eq(eddy__push_start_each(&f->set, v, 2, &a_feed, &e), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(f->registered, 2);
    cr_expect_eq(f->starts, 0);
    cr_expect_str_eq(e.detail, "push source 'a': refused");
    eddy__push_source *c = add(f, "c");
    cr_expect_eq(eddy__push_start_added(&f->set, c, &a_feed, &e), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(f->starts, 0);
    cr_expect_eq(state_of(f, c), EDDY_PUSH_FAILED);
    fake_free(f);
}

Test(push_drive, start_each_stops_once_the_sources_are_freed) {
    fake *f = fake_new();
    eddy__push_source *v[2] = {add(f, "a"), add(f, "b")};
    f->close_on_start = true;
    f->refuse_from = "a";
    eddy_error e = {0};
    cr_expect_eq(eddy__push_start_each(&f->set, v, 2, &a_feed, &e), EDDY_OK,
                 "a failure after the sources were freed is nobody's news");
    cr_expect_eq(f->starts, 1);
    fake_free(f);
}

Test(push_drive, an_added_source_starts_at_once_only_in_automatic_mode) {
    fake *f = fake_new();
    eddy__push_source *a = add(f, "a");
    cr_expect_eq(eddy__push_start_added(&f->set, a, &a_feed, NULL), EDDY_OK);
    cr_expect_eq(f->starts, 1, "automatic is the default");
    cr_expect_eq(eddy__push_start_added(&f->set, a, &a_feed, NULL), EDDY_OK);
    cr_expect_eq(f->starts, 1, "claimed already: never started twice");
    f->set.opts.mode = EDDY_PUSH_MANUAL;
    eddy__push_source *b = add(f, "b");
    cr_expect_eq(eddy__push_start_added(&f->set, b, &a_feed, NULL), EDDY_OK);
    cr_expect_eq(f->starts, 1, "manual: start-all starts it");
    fake_free(f);
}

/* ---- deliveries ---------------------------------------------------------------------------- */

Test(push_drive, let_in_routes_only_while_the_source_routes) {
    fake *f = fake_new();
    eddy__push_source *src = add(f, "a");
    cr_expect_not(eddy__push_let_in(&f->set, src), "not registered: hand back");
    cr_expect_eq(f->pauses, 0, "not started: it was never resumed");
    eddy__push_begin(&f->set, src, NULL);
    cr_expect(eddy__push_let_in(&f->set, src));
    eddy__push_fail(&f->set, src, EDDY_ERR_BACKEND, NULL, NULL);
    cr_expect_not(eddy__push_let_in(&f->set, src), "failed: hand back");
    cr_expect_eq(f->pauses, 1, "failed: its subscription is paused");
    fake_free(f);
}

Test(push_drive, an_unreadable_filter_fails_reports_and_pauses) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    int reports = f->reports;
    eddy_error e = {EDDY_ERR_UNREADABLE_FILTER, "bad"};
    cr_expect_eq(eddy__push_settle_routed(&f->set, src, NULL, EDDY_ERR_UNREADABLE_FILTER,
                                          EDDY_ROUTE_FILTERED, &e),
                 EDDY_ERR_UNAVAILABLE, "the message is handed back");
    cr_expect_eq(state_of(f, src), EDDY_PUSH_FAILED);
    cr_expect_eq(f->reports, reports + 1);
    cr_expect_eq(f->last_reported, EDDY_PUSH_FAILED);
    cr_expect_eq(f->pauses, 1);
    cr_expect_eq(f->observed, 1);
    cr_expect_eq(f->max_depth, 1);
    fake_free(f);
}

Test(push_drive, illegal_state_asks_the_feed_why) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    f->has_projection = false;
    cr_expect_eq(settle(f, src, EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED), EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(state_of(f, src), EDDY_PUSH_CATCHING_UP, "no projection: not the source's fault");
    cr_expect_eq(f->pauses, 0);
    f->has_projection = true;
    f->refuses = true;
    cr_expect_eq(settle(f, src, EDDY_ERR_ILLEGAL_STATE, EDDY_ROUTE_FILTERED), EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(state_of(f, src), EDDY_PUSH_FAILED, "a feed that refuses for good fails it");
    cr_expect_eq(f->pauses, 1);
    fake_free(f);
}

Test(push_drive, a_delivered_message_is_acknowledged_and_observed) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    int reports = f->reports;
    cr_expect_eq(settle(f, src, EDDY_OK, EDDY_ROUTE_DELIVERED), EDDY_OK);
    cr_expect_eq(f->reports, reports, "nothing changed: nothing to report");
    cr_expect_eq(f->observed, 1);
    cr_expect_eq(f->pauses, 0);
    fake_free(f);
}

Test(push_drive, freed_sources_settle_without_bus_or_observer) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    f->close_on_report = true;
    cr_expect_eq(settle(f, src, EDDY_ERR_UNREADABLE_FILTER, EDDY_ROUTE_FILTERED),
                 EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(f->pauses, 0, "the report freed the sources: no bus call");
    cr_expect_eq(f->observed, 0, "nor the observer");
    fake_free(f);
}

/* ---- catch-up and progress ------------------------------------------------------------------ */

Test(push_drive, caught_up_goes_live_reports_and_follows) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    f->live = true;
    eddy_push_progress p;
    eddy__push_caught_up(&f->set, src, EDDY_OK, NULL, &p);
    cr_expect_eq(p.state, EDDY_PUSH_LIVE);
    cr_expect_eq(p.position, 5, "the feed's figures are read at the end");
    cr_expect_eq(f->last_reported, EDDY_PUSH_LIVE);
    cr_expect_eq(f->resumes, 2, "the subscription follows the state after the end");
    fake_free(f);
}

Test(push_drive, a_failed_catch_up_pauses) {
    fake *f = fake_new();
    eddy__push_source *src = started(f, "a");
    eddy_error e = {EDDY_ERR_BACKEND, "boom"};
    eddy_push_progress p;
    eddy__push_caught_up(&f->set, src, EDDY_ERR_BACKEND, &e, &p);
    cr_expect_eq(p.state, EDDY_PUSH_FAILED);
    cr_expect_eq(p.failure.status, EDDY_ERR_BACKEND);
    cr_expect_eq(f->pauses, 1);
    fake_free(f);
}

Test(push_drive, a_start_ended_answers_as_its_caller_sees_it) {
    fake *f = fake_new();
    eddy__push_source *a = started(f, "a");
    eddy__push_source *b = started(f, "b");
    eddy__push_source *c = started(f, "c");
    eddy_error err = {0};
    f->live = true;
    cr_expect_eq(eddy__push_start_ended(&f->set, a, EDDY_OK, NULL, &err), EDDY_OK);
    cr_expect_eq(state_of(f, a), EDDY_PUSH_LIVE);
    eddy_error e = {EDDY_ERR_BACKEND, "boom"};
    cr_expect_eq(eddy__push_start_ended(&f->set, b, EDDY_ERR_BACKEND, &e, &err), EDDY_ERR_BACKEND);
    cr_expect_str_eq(err.detail, "push source 'b': boom");
    cr_expect_eq(state_of(f, b), EDDY_PUSH_FAILED);
    /* Answered EDDY_OK, yet the feed is not live: the source did not start all the same. */
    f->live = false;
    cr_expect_eq(eddy__push_start_ended(&f->set, c, EDDY_OK, NULL, &err), EDDY_ERR_CLOSED);
    cr_expect_str_eq(err.detail,
                     "push source 'c': the catch-up was stopped before the feed went live");
    cr_expect_eq(f->reports, 6, "each start and each end reported");
    fake_free(f);
}

Test(push_drive, sampling_reports_each_catching_source_without_waking) {
    fake *f = fake_new();
    eddy__push_source *a = add(f, "a");
    eddy__push_source *b = add(f, "b");
    cr_expect_not(eddy__push_sample_all(&f->set), "none catching up: the ticker may stop");
    eddy__push_begin(&f->set, a, NULL);
    eddy__push_begin(&f->set, b, NULL);
    int reports = f->reports, changes = f->changes;
    cr_expect(eddy__push_sample_all(&f->set));
    cr_expect_eq(f->reports, reports + 2);
    cr_expect_eq(f->changes, changes, "a sample is not a state change");
    eddy_push_progress p;
    cr_assert_eq(eddy__push_stats(&f->set, "b", &p), EDDY_OK);
    cr_expect_eq(p.position, 5);
    f->has_stats = false;
    reports = f->reports;
    cr_expect(eddy__push_sample_all(&f->set));
    cr_expect_eq(f->reports, reports, "no figures: nothing to report");
    fake_free(f);
}

/* ---- the model's routing over its feeds ------------------------------------------------------ */

/* Each stand-in feed says how it answers: 'd' delivers at once, 'l' answers later, 'r' refuses
 * up front, 'n' has no projection. */
static eddy__push_routing *later; /* the routing a later answer goes to */

static bool model_has_projection(void *kind) { return *(char *)kind != 'n'; }
static eddy_status model_route(void *kind, const eddy_event *ev, const eddy_event_meta *meta,
                               eddy__push_routing *r, eddy_error *err) {
    (void)ev, (void)meta;
    switch (*(char *)kind) {
    case 'd':
        cr_expect_not(eddy__push_routed(r, EDDY_OK, EDDY_ROUTE_DELIVERED, NULL),
                      "an answer during routing is never the last");
        return EDDY_OK;
    case 'l':
        later = r;
        return EDDY_OK;
    default:
        err->status = EDDY_ERR_ILLEGAL_STATE;
        snprintf(err->detail, sizeof(err->detail), "refused");
        return EDDY_ERR_ILLEGAL_STATE;
    }
}
static const eddy__push_model_ops model_ops = {model_has_projection, model_route};

static eddy__push_model *model_of(const char *kinds) {
    static eddy__push_model m;
    eddy__push_model_init(&m, NULL, NULL, NULL);
    for (const char *k = kinds; *k; k++)
        cr_assert_eq(eddy__push_model_add(&m, (void *)k, NULL), EDDY_OK);
    return &m;
}

Test(push_drive, routing_waits_for_every_feed_with_a_projection) {
    eddy__push_model *m = model_of("nld");
    eddy__push_routing r;
    later = NULL;
    cr_assert_eq(eddy__push_route_all(m, &model_ops, NULL, NULL, &r, NULL), EDDY_OK);
    cr_expect_eq(r.waiting, 1, "the later answer is still to come");
    cr_assert_not_null(later);
    cr_expect(eddy__push_routed(later, EDDY_OK, EDDY_ROUTE_DEFERRED, NULL), "the last answer");
    cr_expect_eq(r.agg.registered, 2, "the feed without a projection is skipped");
    eddy_route route;
    cr_expect_eq(eddy__push_agg_result(&r.agg, &route, NULL), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DEFERRED);
    eddy__push_model_destroy(m);
}

Test(push_drive, a_refusal_up_front_is_the_feeds_answer) {
    eddy__push_model *m = model_of("dr");
    eddy__push_routing r;
    cr_assert_eq(eddy__push_route_all(m, &model_ops, NULL, NULL, &r, NULL), EDDY_OK);
    cr_expect_eq(r.waiting, 0, "every feed answered during the call");
    eddy_error e = {0};
    cr_expect_eq(eddy__push_agg_result(&r.agg, NULL, &e), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_str_eq(e.detail, "refused");
    eddy__push_model_destroy(m);
}

static int answers_observed;
static eddy_status count_observed(const eddy_event *ev, eddy_status st, eddy_route route,
                                  const eddy_error *err, void *user) {
    (void)ev, (void)route, (void)user;
    cr_expect_eq(err == NULL, st == EDDY_OK, "the detail goes with an error only");
    answers_observed++;
    return EDDY_OK;
}

Test(push_drive, the_answer_is_observed_and_leaves_err_alone_on_success) {
    eddy__push_model m;
    eddy_push_observer o = {count_observed, NULL};
    eddy__push_model_init(&m, &o, NULL, NULL);
    static const char d = 'd', r = 'r';
    cr_assert_eq(eddy__push_model_add(&m, (void *)&d, NULL), EDDY_OK);
    eddy__push_routing routing;
    answers_observed = 0;
    cr_assert_eq(eddy__push_route_all(&m, &model_ops, NULL, NULL, &routing, NULL), EDDY_OK);
    eddy_route route = EDDY_ROUTE_FILTERED;
    eddy_error err = {EDDY_ERR_BACKEND, "untouched"};
    cr_expect_eq(eddy__push_answer(&m, &routing, NULL, false, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DELIVERED);
    cr_expect_str_eq(err.detail, "untouched");
    cr_expect_eq(answers_observed, 1);
    cr_expect_eq(eddy__push_answer(NULL, &routing, NULL, false, NULL, NULL), EDDY_OK,
                 "a freed model's answer is told to nobody");
    cr_expect_eq(answers_observed, 1);
    cr_assert_eq(eddy__push_model_add(&m, (void *)&r, NULL), EDDY_OK);
    cr_assert_eq(eddy__push_route_all(&m, &model_ops, NULL, NULL, &routing, NULL), EDDY_OK);
    cr_expect_eq(eddy__push_answer(&m, &routing, NULL, false, &route, &err),
                 EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(err.status, EDDY_ERR_ILLEGAL_STATE);
    cr_expect_str_eq(err.detail, "refused");
    cr_expect_eq(route, EDDY_ROUTE_FILTERED);
    cr_expect_eq(answers_observed, 2);
    eddy__push_model_destroy(&m);
}

Test(push_drive, the_first_error_of_several_parts_is_kept) {
    eddy_status first = EDDY_OK;
    eddy_error kept = {EDDY_OK, ""};
    eddy__push_keep_first(&first, &kept, EDDY_OK, NULL);
    cr_expect_eq(first, EDDY_OK);
    eddy__push_keep_first(&first, &kept, EDDY_ERR_NOMEM, NULL);
    cr_expect_eq(first, EDDY_ERR_NOMEM);
    cr_expect_str_eq(kept.detail, eddy_status_str(EDDY_ERR_NOMEM), "no detail: the status's text");
    eddy_error e = {EDDY_ERR_BACKEND, "later"};
    eddy__push_keep_first(&first, &kept, EDDY_ERR_BACKEND, &e);
    cr_expect_eq(first, EDDY_ERR_NOMEM, "the first one stays");
    cr_expect_eq(kept.status, EDDY_ERR_NOMEM);
}

Test(push_drive, a_front_ends_model_starts_with_the_core_one) {
    struct {
        eddy__push_model core;
        int front_end_field;
    } * fm;
    eddy_push_observer o = {count_observed, NULL};
    fm = eddy__push_model_new(sizeof(*fm), &o, NULL, NULL, NULL);
    cr_assert_not_null(fm);
    cr_expect_eq(fm->front_end_field, 0, "zeroed");
    cr_expect_eq(fm->core.observer.observe, count_observed, "initialised");
    static const char d = 'd';
    cr_expect_eq(eddy__push_model_add(&fm->core, (void *)&d, NULL), EDDY_OK);
    eddy_error err = {0};
    cr_expect_eq(eddy__push_model_add(NULL, (void *)&d, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_str_eq(err.detail, "model is NULL");
    eddy__push_model_free(fm);
    eddy__push_model_free(NULL);
}
