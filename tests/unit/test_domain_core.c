/* SPDX-License-Identifier: BSD-3-Clause */
/* The domain feed's shared decisions (src/store/domain.h) with no server and no loop: the route
 * both front ends report for each way routing or accept-or-defer can end, and the state calls
 * (ready, refuses, failure, stats) read from the registered projection's feed core, which build
 * hands over at register. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store/domain.h"

static eddy__domain *D;
static eddy__feed *F;
static eddy_status build_st;

static int decoded_token, released;

/* Handles "order.placed" only; "bad" does not decode. */
static eddy_status t_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta, (void)user;
    const char *type = eddy_event_type(ev);
    *out = type && strcmp(type, "order.placed") == 0 ? &decoded_token : NULL;
    return type && strcmp(type, "bad") == 0 ? eddy__fail(err, EDDY_ERR_MALFORMED, "not json")
                                            : EDDY_OK;
}

static void t_free(void *event, void *user) {
    (void)user;
    cr_assert_eq(event, &decoded_token);
    released++;
}

static const char *t_id(const void *event, void *user) {
    (void)event, (void)user;
    return "x";
}

static eddy_status p_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *u) {
    (void)event, (void)meta, (void)err, (void)u;
    return EDDY_OK;
}

/* What a front end's build does, with the bare core as its feed. */
static eddy_status build(const eddy_feed_config *fc, void *user, eddy__feed **core,
                         eddy_error *err) {
    (void)user;
    if (build_st != EDDY_OK)
        return eddy__fail(err, build_st, "no feed today");
    eddy_status st = eddy__feed_new(fc, EDDY__FEED_BLOCKING, false, &F, err);
    if (st == EDDY_OK)
        *core = F;
    return st;
}

static void init(void) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = t_decode;
    cfg.free_event = t_free;
    cfg.event_id = t_id;
    released = 0;
    eddy_error err;
    cr_assert_eq(eddy__domain_new(&cfg, &D, &err), EDDY_OK, "%s", err.detail);
    build_st = EDDY_OK;
}

static void fini(void) {
    eddy__feed_free(F);
    eddy__domain_free(D);
    F = NULL;
    D = NULL;
}

TestSuite(domain_core, .init = init, .fini = fini);

static void reg(const char *id) {
    eddy_projection p = {0};
    p.apply = p_apply;
    eddy_error err;
    cr_assert_eq(eddy__domain_register(D, id, &p, NULL, build, NULL, &err), EDDY_OK, "%s",
                 err.detail);
}

/* A catch-up of an empty history; head_st: how reading the head ends. */
static eddy_status catch_up(eddy_status head_st) {
    eddy__feed_run *run = NULL;
    int waiter;
    cr_assert_eq(eddy__feed_catch_up(F, &waiter, false, &run, NULL), EDDY_OK);
    for (int steps = 0;; steps++) {
        cr_assert_lt(steps, 50);
        eddy__feed_step s;
        eddy__feed_out o;
        eddy__feed_out_init(&o);
        eddy__feed_run_next(F, run, 0, &s, &o);
        if (s.kind == EDDY__STEP_DONE)
            return s.st;
        if (s.kind == EDDY__STEP_READ_HEAD) {
            eddy_error e;
            eddy__fail(&e, head_st, "the store is down");
            eddy__feed_head_read(F, run, head_st, 0, &e);
        } else {
            cr_assert(eddy__feed_run_user_step(F, run, &s, NULL, &o), "step %d", (int)s.kind);
        }
    }
}

Test(domain_core, the_route_reported_follows_how_feeding_ended) {
    cr_assert_eq(eddy__domain_outcome(EDDY_OK, false, EDDY_ROUTE_DELIVERED), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(eddy__domain_outcome(EDDY_OK, false, EDDY_ROUTE_FILTERED), EDDY_ROUTE_FILTERED,
                 "nothing was fed: the route routing found");
    cr_assert_eq(eddy__domain_outcome(EDDY_OK, true, EDDY_ROUTE_DELIVERED), EDDY_ROUTE_DEFERRED);
    cr_assert_eq(eddy__domain_outcome(EDDY_ERR_HANDLER_FAILED, false, EDDY_ROUTE_DELIVERED),
                 EDDY_ROUTE_DEFERRED, "not applied: not acknowledged");
    cr_assert_eq(eddy__domain_outcome(EDDY_ERR_MALFORMED, false, EDDY_ROUTE_FILTERED),
                 EDDY_ROUTE_DEFERRED, "not decoded: not acknowledged");
}

Test(domain_core, without_a_projection_the_state_is_empty) {
    eddy_feed_info info = {0};
    info.live = true; /* what a stats call must clear */
    info.replayed = 99;
    info.held = 7;
    cr_assert_not(eddy__domain_ready(D));
    cr_assert_not(eddy__domain_refuses(D));
    cr_assert_not(eddy__domain_failure(D, NULL));
    cr_assert_eq(eddy__domain_stats(D, &info), EDDY_OK);
    cr_assert_not(info.live);
    cr_assert_eq(info.replayed, 0);
    cr_assert_eq(info.held, 0);
    cr_assert_eq(eddy__domain_stats(NULL, &info), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy__domain_stats(D, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_not(eddy__domain_ready(NULL));
    cr_assert_not(eddy__domain_failure(NULL, NULL));
}

Test(domain_core, a_build_that_failed_leaves_no_feed_to_read) {
    build_st = EDDY_ERR_NOMEM;
    eddy_projection p = {0};
    p.apply = p_apply;
    cr_assert_eq(eddy__domain_register(D, "orders-view", &p, NULL, build, NULL, NULL),
                 EDDY_ERR_NOMEM);
    eddy_feed_info info;
    cr_assert_eq(eddy__domain_stats(D, &info), EDDY_OK);
    cr_assert_not(info.catching_up);
    cr_assert_not(eddy__domain_ready(D));
}

Test(domain_core, the_state_is_the_registered_feeds) {
    reg("orders-view");
    cr_assert_not(eddy__domain_ready(D), "not live before a catch-up");
    cr_assert_eq(catch_up(EDDY_OK), EDDY_OK);
    cr_assert(eddy__domain_ready(D));
    eddy_feed_info info;
    cr_assert_eq(eddy__domain_stats(D, &info), EDDY_OK);
    cr_assert(info.live);
    cr_assert_eq(info.last, EDDY_FEED_REPLAYED);
    cr_assert_not(eddy__domain_refuses(D));
}

Test(domain_core, a_failed_feed_refuses_and_tells_why) {
    reg("orders-view");
    cr_assert_eq(catch_up(EDDY_ERR_IO), EDDY_ERR_IO);
    cr_assert(eddy__domain_refuses(D));
    eddy_error cause = {0};
    cr_assert(eddy__domain_failure(D, &cause));
    cr_assert_eq(cause.status, EDDY_ERR_IO);
    cr_assert(strstr(cause.detail, "the store is down"), "%s", cause.detail);
    cr_assert_not(eddy__domain_ready(D));
}

Test(domain_core, a_call_by_id_needs_the_registered_id) {
    eddy_error err = {0};
    cr_assert_eq(eddy__domain_check_id(NULL, NULL, "catch up", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(err.detail, "id is NULL", "the id is checked first");
    cr_assert_eq(eddy__domain_check_id(D, "orders-view", "catch up", &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "no projection is registered as 'orders-view'"), "%s", err.detail);
    reg("orders-view");
    cr_assert_eq(eddy__domain_check_id(D, "orders-view", "go live", &err), EDDY_OK);
    cr_assert_eq(eddy__domain_check_id(D, "other", "go live", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "(it has 'orders-view')"), "%s", err.detail);
}

/* The front ends' run calls name themselves in the detail and check the id only when by id. */
Test(domain_core, a_run_call_is_checked_by_its_kind) {
    eddy_error err = {0};
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_CATCH_UP_ALL, "ignored", &err),
                 EDDY_ERR_ILLEGAL_STATE);
    cr_assert(strstr(err.detail, "catch up all: no projection"), "%s", err.detail);
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_GO_LIVE, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(err.detail, "id is NULL");
    reg("orders-view");
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_CATCH_UP_ALL, "other", &err), EDDY_OK,
                 "catch up all ignores the id");
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_CATCH_UP, "orders-view", &err), EDDY_OK);
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_CATCH_UP, "other", &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "catch up: no projection is registered as 'other'"), "%s",
              err.detail);
    cr_assert_eq(eddy__domain_run_check(D, EDDY__DOMAIN_GO_LIVE, "other", &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "go live: no projection"), "%s", err.detail);
}

Test(domain_core, register_refuses_a_null_domain) {
    eddy_projection p = {0};
    p.apply = p_apply;
    eddy_error err = {0};
    cr_assert_eq(eddy__domain_register(NULL, "orders-view", &p, NULL, build, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_str_eq(err.detail, "feed is NULL");
}

/* ---- feeding a routed event (eddy__domain_route_feed, eddy__domain_accept_or_defer) -------- */

/* A front end's catch-up feed that answers later: feed and post keep the completion. */
static struct {
    int fed, posted;
    eddy_status refuse; /* feed's up-front refusal */
    eddy_feed_done_fn done;
    void *user;
    eddy_status post_st;
} K;

static eddy_status k_feed(void *ctx, const eddy_event_meta *meta, void *event,
                          eddy_feed_done_fn done, void *user) {
    (void)ctx, (void)meta, (void)event;
    K.fed++;
    if (K.refuse != EDDY_OK)
        return K.refuse;
    K.done = done, K.user = user;
    return EDDY_OK;
}

static eddy_status k_post(void *ctx, eddy_feed_done_fn done, void *user, eddy_status st,
                          const eddy_error *err) {
    (void)ctx, (void)err;
    K.posted++;
    K.done = done, K.user = user, K.post_st = st;
    return EDDY_OK;
}

static struct {
    int calls;
    eddy_status st;
    eddy_route route;
} A;

static void k_answered(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    (void)err, (void)user;
    A.calls++, A.st = st, A.route = route;
}

static eddy_status route(const char *type, const eddy__domain_feeder *fd) {
    memset(&K, 0, sizeof(K));
    memset(&A, 0, sizeof(A));
    eddy_event *ev = eddy_event_new();
    eddy_event_set_id(ev, "e1");
    eddy_event_set_source(ev, "/t");
    eddy_event_set_type(ev, type);
    eddy_error err = {0};
    eddy_status st = eddy__domain_route_feed(D, ev, NULL, fd, k_answered, NULL, &err);
    eddy_event_free(ev);
    return st;
}

static const eddy__domain_feeder later = {k_feed, k_post, NULL, true};

Test(domain_core, a_routed_event_is_released_once_its_feeding_is_answered) {
    reg("orders");
    cr_assert_eq(route("order.placed", &later), EDDY_OK);
    cr_expect_eq(K.fed, 1);
    cr_expect_eq(released, 0, "the feed may still apply it");
    K.done(EDDY_PENDING, NULL, K.user); /* the feed is not live: not taken */
    cr_expect_eq(A.calls, 1);
    cr_expect_eq(A.st, EDDY_OK);
    cr_expect_eq(A.route, EDDY_ROUTE_DEFERRED);
    cr_expect_eq(released, 1);
    cr_assert_eq(route("order.placed", &later), EDDY_OK);
    K.done(EDDY_OK, NULL, K.user);
    cr_expect_eq(A.route, EDDY_ROUTE_DELIVERED);
    cr_expect_eq(released, 2);
}

Test(domain_core, a_routed_event_refused_up_front_is_released_and_never_answered) {
    reg("orders");
    memset(&K, 0, sizeof(K));
    K.refuse = EDDY_ERR_NOMEM;
    eddy_event *ev = eddy_event_new();
    eddy_event_set_id(ev, "e1");
    eddy_event_set_source(ev, "/t");
    eddy_event_set_type(ev, "order.placed");
    eddy_error err = {0};
    memset(&A, 0, sizeof(A));
    cr_expect_eq(eddy__domain_route_feed(D, ev, NULL, &later, k_answered, NULL, &err),
                 EDDY_ERR_NOMEM);
    eddy_event_free(ev);
    cr_expect(strstr(err.detail, "not accepted"), "%s", err.detail);
    cr_expect_eq(released, 1);
    cr_expect_eq(A.calls, 0);
}

Test(domain_core, filtered_or_undecodable_events_are_answered_through_post_unfed) {
    reg("orders");
    cr_assert_eq(route("order.shipped", &later), EDDY_OK);
    cr_expect_eq(K.fed, 0);
    cr_expect_eq(K.posted, 1);
    cr_expect_eq(A.calls, 0, "answered on the front end's turn, not inside the call");
    K.done(K.post_st, NULL, K.user);
    cr_expect_eq(A.route, EDDY_ROUTE_FILTERED);
    cr_assert_eq(route("bad", &later), EDDY_OK);
    cr_expect_eq(K.post_st, EDDY_ERR_MALFORMED);
    K.done(K.post_st, NULL, K.user);
    cr_expect_eq(A.st, EDDY_ERR_MALFORMED);
    cr_expect_eq(A.route, EDDY_ROUTE_DEFERRED, "not decoded: not acknowledged");
    /* Without post, the answer comes at once. */
    eddy__domain_feeder now = {k_feed, NULL, NULL, false};
    cr_assert_eq(route("order.shipped", &now), EDDY_OK);
    cr_expect_eq(A.calls, 1);
    cr_expect_eq(A.route, EDDY_ROUTE_FILTERED);
    cr_expect_eq(released, 0);
}

Test(domain_core, refusals_for_every_event_are_returned_up_front) {
    cr_expect_eq(route("order.placed", &later), EDDY_ERR_ILLEGAL_STATE, "no projection");
    cr_expect_eq(K.fed + K.posted + A.calls, 0);
}

Test(domain_core, accept_or_defer_never_releases_the_callers_event) {
    reg("orders");
    memset(&K, 0, sizeof(K));
    memset(&A, 0, sizeof(A));
    cr_assert_eq(
        eddy__domain_accept_or_defer(D, NULL, &decoded_token, &later, k_answered, NULL, NULL),
        EDDY_OK);
    K.done(EDDY_OK, NULL, K.user);
    cr_expect_eq(A.route, EDDY_ROUTE_DELIVERED);
    cr_expect_eq(released, 0);
}
