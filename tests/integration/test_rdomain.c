/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds on the reactive front end, on memory:// and redis://: registering (one
 * projection, ids unique in the process), the refusals up front without a projection, routing
 * CloudEvents (FILTERED never decoded, DELIVERED, DEFERRED before the catch-up, from the call
 * that asked for the catch-up on, inside the replay and after a stop), a failed catch-up, the
 * filter driving the catch-up's read, and the sticky unreadable filter. Completions run exactly
 * once, on the loop, never inside the call. Each test runs its own loop. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/domain.h"
#include "eddy/rdomain.h"
#include "eddy/rstore.h"
#include "eddy_test.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

static int backends[] = {0, 1}; /* memory, redis */

#define RTEST(name)                                                                                \
    ParameterizedTestParameters(rdomain, name) { return cr_make_param_array(int, backends, 2); }   \
    ParameterizedTest(int *backend, rdomain, name, .timeout = 60)

/* ---- loop and store ------------------------------------------------------------------------ */

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
    eddy_rstore *store;
    eddy_rcheckpoints ckpt;
    eddy_feed_config cfg;
    eddy_projection proj;
    eddy_rdomain_feed *feed;
} tctx;

static bool run_until(tctx *t, const int *counter, int n, long long timeout_ms) {
    return eddy_test_run_until(t->loop, counter, n, timeout_ms);
}

/* ---- the projection ------------------------------------------------------------------------ */

typedef struct model {
    char applied[64][64];
    int napplied;
    int decoded;
    const char *fail_on;
    bool route_in_started; /* replay_started routes route_id on its own feed */
    eddy_rdomain_feed *feed;
} model;

static model M;

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    uev *e = event;
    if (M.fail_on && strcmp(M.fail_on, e->id) == 0) {
        snprintf(err->detail, sizeof(err->detail), "the model rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(M.napplied < 64);
    snprintf(M.applied[M.napplied++], sizeof(M.applied[0]), "%s", e->id);
    return EDDY_OK;
}

typedef struct rdone {
    int calls;
    int inside;
    eddy_status st;
    eddy_route route;
    char detail[EDDY_ERROR_DETAIL_MAX];
} rdone;

static void on_route(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    rdone *d = user;
    cr_assert_not(d->inside, "a completion ran inside the call that asked for it");
    d->calls++;
    d->st = st;
    d->route = route;
    snprintf(d->detail, sizeof(d->detail), "%s", err ? err->detail : "");
}

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    on_route(st, EDDY_ROUTE_FILTERED, err, user);
}

static rdone started_route;

static eddy_status m_started(eddy_error *err, void *user) {
    if (M.route_in_started) {
        /* during the replay: deferred, not kept, not waited for */
        eddy_event *ev = make_event("l-in", "order.placed");
        eddy_error e = {0};
        started_route.inside = 1;
        cr_assert_eq(eddy_rdomain_route(M.feed, ev, NULL, on_route, &started_route, &e), EDDY_OK,
                     "%s", e.detail);
        started_route.inside = 0;
        eddy_event_free(ev);
        cr_assert_not(eddy_rdomain_ready_for_live_delivery(M.feed));
        cr_assert_not(eddy_rdomain_refuses_permanently(M.feed));
    }
    return EDDY_OK;
}

static eddy_status m_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    if (!uev_known_type(ev, err))
        return EDDY_ERR_MALFORMED;
    M.decoded++;
    return uev_decode(ev, meta, out, err, user);
}

static const char *applied(void) {
    static char buf[4096];
    buf[0] = '\0';
    for (int i = 0; i < M.napplied; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, M.applied[i]);
    }
    return buf;
}

/* ---- context ------------------------------------------------------------------------------- */

static void setup(tctx *t, int backend, const char *prefix) {
    memset(t, 0, sizeof(*t));
    memset(&M, 0, sizeof(M));
    memset(&started_route, 0, sizeof(started_route));
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_settings(&t->s, backend, prefix, t->url, sizeof(t->url), t->ns, sizeof(t->ns));
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_open(t->loop, &t->s, &t->store, &err), EDDY_OK, "%s", err.detail);
    t->ckpt = eddy_rstore_checkpoints(t->store);
    eddy_feed_config_init(&t->cfg);
    t->cfg.decode = m_decode;
    t->cfg.free_event = uev_free;
    t->cfg.event_id = uev_id;
    t->cfg.page_size = 2;
    t->cfg.log = eddy_test_log;
    t->cfg.log_user = "rdomain";
    t->proj.apply = m_apply;
    t->proj.replay_started = m_started;
}

static void new_feed(tctx *t) {
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_new(t->loop, t->store, &t->cfg, &t->ckpt, &t->feed, &err), EDDY_OK,
                 "%s", err.detail);
    M.feed = t->feed;
}

static void new_registered(tctx *t, eddy_filter *f) {
    new_feed(t);
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_register(t->feed, "order-status", &t->proj, f, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_filter_free(f);
}

static eddy_filter *placed(void) {
    eddy_filter *f = eddy_filter_type("order.placed");
    cr_assert(f);
    return f;
}

static void teardown(tctx *t) {
    eddy_rdomain_free(t->feed);
    eddy_rstore_close(t->store);
    ev_loop_destroy(t->loop);
}

static void on_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    cr_expect_eq(st, EDDY_OK, "append: %s", err ? err->detail : "");
    (*(int *)user)++;
}

static void append_ev(tctx *t, eddy_event *ev) {
    int done = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_append(t->store, "order-1", (const eddy_event *const *)&ev, 1, NULL,
                                    on_append, &done, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(run_until(t, &done, 1, 20000));
}

static void append(tctx *t, const char *id, const char *type) {
    append_ev(t, make_event(id, type));
}

/* Routes ev and runs the loop until its completion; the completion's status. */
static eddy_status route_ev(tctx *t, const eddy_event *ev, rdone *d) {
    memset(d, 0, sizeof(*d));
    eddy_error err = {0};
    d->inside = 1;
    eddy_status st = eddy_rdomain_route(t->feed, ev, NULL, on_route, d, &err);
    d->inside = 0;
    cr_assert_eq(st, EDDY_OK, "route refused up front: %s", err.detail);
    cr_assert_eq(d->calls, 0);
    cr_assert(run_until(t, &d->calls, 1, 20000));
    run_until(t, &d->calls, 2, 0);
    cr_assert_eq(d->calls, 1);
    return d->st;
}

static eddy_route route_ok(tctx *t, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    rdone d;
    eddy_status st = route_ev(t, ev, &d);
    eddy_event_free(ev);
    cr_assert_eq(st, EDDY_OK, "route %s: %s", id, d.detail);
    return d.route;
}

static eddy_status route_err(tctx *t, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    rdone d;
    eddy_status st = route_ev(t, ev, &d);
    eddy_event_free(ev);
    return st;
}

static eddy_route defer_ok(tctx *t, uev *e) {
    rdone d = {0};
    eddy_error err = {0};
    d.inside = 1;
    cr_assert_eq(eddy_rdomain_accept_or_defer(t->feed, NULL, e, on_route, &d, &err), EDDY_OK, "%s",
                 err.detail);
    d.inside = 0;
    cr_assert(run_until(t, &d.calls, 1, 20000));
    cr_assert_eq(d.st, EDDY_OK, "%s", d.detail);
    return d.route;
}

static eddy_status catch_up_all(tctx *t) {
    rdone d = {0};
    eddy_error err = {0};
    d.inside = 1;
    cr_assert_eq(eddy_rdomain_catch_up_all(t->feed, on_done, &d, &err), EDDY_OK, "%s", err.detail);
    d.inside = 0;
    cr_assert(run_until(t, &d.calls, 1, 20000));
    return d.st;
}

/* ---- registering ------------------------------------------------------------------------- */

RTEST(register_takes_one_projection_and_ids_are_unique_in_the_process) {
    tctx t;
    setup(&t, *backend, "rdom-reg");
    eddy_error err = {0};
    eddy_rdomain_feed *bad = NULL;
    t.cfg.id = "x";
    cr_assert_eq(eddy_rdomain_new(t.loop, t.store, &t.cfg, &t.ckpt, &bad, &err),
                 EDDY_ERR_INVALID_SPEC);
    t.cfg.id = NULL;
    eddy_checkpoints blocking_ckpt = {0};
    t.cfg.checkpoints = &blocking_ckpt;
    cr_assert_eq(eddy_rdomain_new(t.loop, t.store, &t.cfg, &t.ckpt, &bad, &err),
                 EDDY_ERR_INVALID_SPEC);
    t.cfg.checkpoints = NULL;
    new_feed(&t);
    cr_assert_not(eddy_rdomain_has_projection(t.feed));
    cr_assert_null(eddy_rdomain_projection_id(t.feed));
    eddy_filter *f = placed();
    cr_assert_eq(eddy_rdomain_register(t.feed, "order-status", &t.proj, f, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_filter_free(f);
    cr_assert_str_eq(eddy_rdomain_projection_id(t.feed), "order-status");
    cr_assert_eq(eddy_rdomain_register(t.feed, "order-other", &t.proj, NULL, &err),
                 EDDY_ERR_ILLEGAL_STATE);

    eddy_rdomain_feed *other = NULL;
    cr_assert_eq(eddy_rdomain_new(t.loop, t.store, &t.cfg, &t.ckpt, &other, &err), EDDY_OK);
    cr_assert_eq(eddy_rdomain_register(other, "order-status", &t.proj, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "registered"), "%s", err.detail);
    eddy_rdomain_free(t.feed);
    t.feed = NULL;
    cr_assert_eq(eddy_rdomain_register(other, "order-status", &t.proj, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    t.feed = other;
    teardown(&t);
}

/* The registry is the process's, not a front end's: a blocking domain feed holding an id keeps
 * a reactive one from registering it (both would write the same checkpoint key). */
RTEST(an_id_registered_by_a_blocking_feed_is_refused_here) {
    tctx t;
    setup(&t, *backend, "rdom-both");
    eddy_error err = {0};
    eddy_store *bstore = NULL;
    cr_assert_eq(eddy_store_open(&t.s, &bstore, &err), EDDY_OK, "%s", err.detail);
    eddy_domain_feed *blocking = NULL;
    cr_assert_eq(eddy_domain_new(bstore, &t.cfg, &blocking, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_domain_register(blocking, "shared-id", &t.proj, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    new_feed(&t);
    cr_assert_eq(eddy_rdomain_register(t.feed, "shared-id", &t.proj, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "registered"), "%s", err.detail);
    cr_assert_not(eddy_rdomain_has_projection(t.feed));
    eddy_domain_free(blocking);
    cr_assert_eq(eddy_rdomain_register(t.feed, "shared-id", &t.proj, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_store_close(bstore);
    teardown(&t);
}

RTEST(without_a_projection_everything_is_refused_up_front) {
    tctx t;
    setup(&t, *backend, "rdom-none");
    new_feed(&t);
    eddy_error err = {0};
    uev e = {"u1"};
    rdone d = {0};
    cr_assert_eq(eddy_rdomain_accept(t.feed, NULL, &e, on_done, &d, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_rdomain_accept_or_defer(t.feed, NULL, &e, on_route, &d, &err),
                 EDDY_ERR_ILLEGAL_STATE);
    eddy_event *ev = make_event("e1", "order.placed");
    cr_assert_eq(eddy_rdomain_route(t.feed, ev, NULL, on_route, &d, &err), EDDY_ERR_ILLEGAL_STATE);
    eddy_event_free(ev);
    cr_assert_eq(eddy_rdomain_catch_up_all(t.feed, on_done, &d, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_rdomain_catch_up(t.feed, "order-status", on_done, &d, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy_rdomain_go_live(t.feed, "order-status", on_done, &d, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_rdomain_stop_catch_up(t.feed);
    run_until(&t, &d.calls, 1, 50);
    cr_assert_eq(d.calls, 0);
    cr_assert_not(eddy_rdomain_ready_for_live_delivery(t.feed));
    cr_assert_not(eddy_rdomain_refuses_permanently(t.feed));
    cr_assert_eq(M.decoded, 0);
    teardown(&t);
}

/* ---- routing ------------------------------------------------------------------------------ */

RTEST(route_filters_defers_then_delivers_once) {
    tctx t;
    setup(&t, *backend, "rdom-route");
    append(&t, "s1", "order.placed");
    append(&t, "s2", "customer.created");
    append(&t, "s3", "order.placed");
    new_registered(&t, placed());
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    cr_assert_eq(defer_ok(&t, &e), EDDY_ROUTE_DEFERRED);
    cr_assert_not(eddy_rdomain_ready_for_live_delivery(t.feed));
    cr_assert_not(eddy_rdomain_refuses_permanently(t.feed));
    int before = M.decoded;
    cr_assert_eq(route_ok(&t, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_eq(M.decoded, before);
    eddy_error err = {0};
    rdone d = {0};
    cr_assert_eq(eddy_rdomain_catch_up(t.feed, "other", on_done, &d, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy_rdomain_go_live(t.feed, "other", on_done, &d, &err),
                 EDDY_ERR_INVALID_ARGUMENT);

    cr_assert_eq(catch_up_all(&t), EDDY_OK);
    cr_assert_str_eq(applied(), "s1,s3");
    cr_assert(eddy_rdomain_ready_for_live_delivery(t.feed));
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DELIVERED); /* duplicate */
    cr_assert_eq(defer_ok(&t, &e), EDDY_ROUTE_DELIVERED);
    uev e3 = {"l3"};
    memset(&d, 0, sizeof(d));
    eddy_event_meta meta = {"order-9", 1, 0};
    cr_assert_eq(eddy_rdomain_accept(t.feed, &meta, &e3, on_done, &d, &err), EDDY_OK);
    cr_assert(run_until(&t, &d.calls, 1, 20000));
    cr_assert_eq(d.st, EDDY_OK, "%s", d.detail);
    cr_assert_eq(route_ok(&t, "x2", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_str_eq(applied(), "s1,s3,l1,l2,l3");
    teardown(&t);
}

RTEST(route_defers_from_the_catch_up_call_and_during_the_replay) {
    tctx t;
    setup(&t, *backend, "rdom-replay");
    append(&t, "s1", "order.placed");
    new_registered(&t, placed());
    M.route_in_started = true;
    rdone cu = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_catch_up_all(t.feed, on_done, &cu, &err), EDDY_OK, "%s", err.detail);
    /* the catch-up counts as running from the call: deferred before the loop ran it */
    rdone d = {0};
    eddy_event *ev = make_event("l1", "order.placed");
    cr_assert_eq(eddy_rdomain_route(t.feed, ev, NULL, on_route, &d, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
    cr_assert(run_until(&t, &cu.calls, 1, 20000));
    cr_assert_eq(cu.st, EDDY_OK, "%s", cu.detail);
    cr_assert(run_until(&t, &started_route.calls, 1, 20000));
    cr_assert_eq(d.calls, 1);
    cr_assert_eq(d.st, EDDY_OK, "%s", d.detail);
    cr_assert_eq(d.route, EDDY_ROUTE_DEFERRED);
    cr_assert_eq(started_route.st, EDDY_OK, "%s", started_route.detail);
    cr_assert_eq(started_route.route, EDDY_ROUTE_DEFERRED);
    cr_assert_str_eq(applied(), "s1");
    /* handed back, then delivered, once */
    cr_assert_eq(route_ok(&t, "l-in", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "s1,l-in,l1");
    teardown(&t);
}

RTEST(route_defers_after_a_stop_until_go_live) {
    tctx t;
    setup(&t, *backend, "rdom-stop");
    new_registered(&t, placed());
    eddy_rdomain_stop_catch_up(t.feed);
    eddy_feed_info i;
    cr_assert_eq(eddy_rdomain_stats(t.feed, &i), EDDY_OK);
    cr_assert(i.stopped);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    cr_assert_eq(defer_ok(&t, &e), EDDY_ROUTE_DEFERRED);
    cr_assert_not(eddy_rdomain_ready_for_live_delivery(t.feed));
    cr_assert_not(eddy_rdomain_refuses_permanently(t.feed));
    rdone d = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_go_live(t.feed, "order-status", on_done, &d, &err), EDDY_OK);
    cr_assert(run_until(&t, &d.calls, 1, 20000));
    cr_assert_eq(d.st, EDDY_OK, "%s", d.detail);
    cr_assert_eq(route_ok(&t, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "l1");
    teardown(&t);
}

RTEST(after_a_failed_catch_up_matching_events_are_refused) {
    tctx t;
    setup(&t, *backend, "rdom-fail");
    append(&t, "s1", "order.placed");
    append(&t, "s2", "order.placed");
    new_registered(&t, placed());
    M.fail_on = "s2";
    cr_assert_eq(catch_up_all(&t), EDDY_ERR_HANDLER_FAILED);
    /* the reactor's failure steps (marker deletion) run on the loop; the feed refuses at once */
    cr_assert(eddy_rdomain_refuses_permanently(t.feed));
    cr_assert_not(eddy_rdomain_ready_for_live_delivery(t.feed));
    eddy_error cause = {0};
    cr_assert(eddy_rdomain_failure(t.feed, &cause));
    cr_assert_eq(cause.status, EDDY_ERR_HANDLER_FAILED);
    cr_assert_eq(route_err(&t, "l1", "order.placed"), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(route_ok(&t, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    rdone d = {0};
    eddy_error err = {0};
    uev e = {"l2"};
    cr_assert_eq(eddy_rdomain_accept_or_defer(t.feed, NULL, &e, on_route, &d, &err), EDDY_OK);
    cr_assert(run_until(&t, &d.calls, 1, 20000));
    cr_assert_eq(d.st, EDDY_ERR_ILLEGAL_STATE);
    teardown(&t);
}

/* ---- filters ------------------------------------------------------------------------------- */

RTEST(a_data_filter_drives_the_catch_up_and_the_routing) {
    tctx t;
    setup(&t, *backend, "rdom-data");
    append_ev(&t, amount_event("s1", 5));
    append_ev(&t, amount_event("s2", 50));
    append(&t, "s3", "customer.created");
    append_ev(&t, amount_event("s4", 11));
    t.cfg.reader = eddy_msgpack_reader();
    eddy_filter *f = eddy_filter_and(eddy_filter_type("order.big"), amount_over(10));
    cr_assert(f);
    new_registered(&t, f);
    cr_assert_eq(catch_up_all(&t), EDDY_OK);
    cr_assert_str_eq(applied(), "s2,s4");
    rdone d;
    eddy_event *ev = amount_event("l1", 3);
    cr_assert_eq(route_ev(&t, ev, &d), EDDY_OK, "%s", d.detail);
    cr_assert_eq(d.route, EDDY_ROUTE_FILTERED);
    eddy_event_free(ev);
    ev = amount_event("l2", 30);
    cr_assert_eq(route_ev(&t, ev, &d), EDDY_OK, "%s", d.detail);
    cr_assert_eq(d.route, EDDY_ROUTE_DELIVERED);
    eddy_event_free(ev);
    cr_assert_str_eq(applied(), "s2,s4,l2");
    teardown(&t);
}

RTEST(a_data_filter_without_a_reader_is_sticky_unreadable) {
    tctx t;
    setup(&t, *backend, "rdom-unread");
    new_registered(&t, amount_over(10));
    eddy_error err = {0}, first = {0};
    rdone d = {0};
    eddy_event *big = amount_event("l1", 50), *small = amount_event("l2", 1),
               *other = make_event("x1", "customer.created");
    cr_assert_eq(eddy_rdomain_route(t.feed, big, NULL, on_route, &d, &first),
                 EDDY_ERR_UNREADABLE_FILTER);
    eddy_event *evs[] = {small, big, other};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(eddy_rdomain_route(t.feed, evs[i], NULL, on_route, &d, &err),
                     EDDY_ERR_UNREADABLE_FILTER);
        cr_assert_str_eq(err.detail, first.detail);
    }
    run_until(&t, &d.calls, 1, 50);
    cr_assert_eq(d.calls, 0);
    cr_assert_eq(M.decoded, 0);
    eddy_event_free(big);
    eddy_event_free(small);
    eddy_event_free(other);
    teardown(&t);
}

RTEST(a_catch_up_with_an_unreadable_filter_fails) {
    tctx t;
    setup(&t, *backend, "rdom-unread-cu");
    append_ev(&t, amount_event("s1", 50));
    new_registered(&t, amount_over(10));
    cr_assert_eq(catch_up_all(&t), EDDY_ERR_UNREADABLE_FILTER);
    cr_assert(eddy_rdomain_refuses_permanently(t.feed));
    cr_assert_not(eddy_rdomain_ready_for_live_delivery(t.feed));
    cr_assert_str_eq(applied(), "");
    teardown(&t);
}
