/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds, one table of scenarios run on both front ends (blocking and reactive,
 * through domain_driver.h over store_driver.h) and both backends (memory:// and the fixture's
 * redis-server), with the real event store and its checkpoint storage: registering (one
 * projection, ids unique in the process, across front ends too), the refusals without a
 * projection, routing CloudEvents (FILTERED never decoded, DELIVERED, DEFERRED before the
 * catch-up, during the replay and after a stop), a failed catch-up, the filter driving the
 * catch-up's read, and the sticky unreadable filter. A few scenarios belong to one front end's
 * calling shape and say so where they stand. Nothing sleeps: a replay that must be caught
 * running waits on a gate the test opens. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain_driver.h"
#include "eddy/domain.h"
#include "eddy_test.h"
#include "recorder.h"
#include "store_driver.h"
#include "test_backend.h"
#include "test_codec.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

#define DTEST(name)                                                                                \
    ParameterizedTestParameters(domain, name) { return cr_make_param_array(combo, combos, 4); }    \
    ParameterizedTest(combo *p, domain, name, .timeout = 60)

/* One front end's scenarios: the first two combinations are blocking, the last two reactive. */
#define DTEST_ONE(name, first)                                                                     \
    ParameterizedTestParameters(domain, name) {                                                    \
        return cr_make_param_array(combo, combos + (first), 2);                                    \
    }                                                                                              \
    ParameterizedTest(combo *p, domain, name, .timeout = 60)

/* The front end under test; each test runs in a process of its own. */
static const store_driver *sd;
static const domain_driver *dd;

/* ---- the read model ---------------------------------------------------------------------- */

typedef struct model {
    pthread_mutex_t m;
    pthread_cond_t c;
    char ids[64][64];
    int n;
    bool gate, at_gate, gate_open; /* replay_started waits for the test */
    char fail_id[64];
    int decoded;
    tdomain *route_in_started; /* replay_started routes "l-in" on this feed */
    droute started_route;
} model;

static model M;

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta;
    (void)user;
    uev *e = event;
    pthread_mutex_lock(&M.m);
    if (M.fail_id[0] && strcmp(M.fail_id, e->id) == 0) {
        pthread_mutex_unlock(&M.m);
        snprintf(err->detail, sizeof(err->detail), "the model rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(M.n < 64);
    snprintf(M.ids[M.n++], sizeof(M.ids[0]), "%s", e->id);
    pthread_mutex_unlock(&M.m);
    return EDDY_OK;
}

static eddy_status m_started(eddy_error *err, void *user) {
    (void)err;
    (void)user;
    if (M.route_in_started) {
        /* During the replay, from the projection itself: deferred, not kept, not waited for. */
        eddy_event *ev = make_event("l-in", "order.placed");
        dd->route_from_projection(M.route_in_started, ev, &M.started_route);
        eddy_event_free(ev);
    }
    pthread_mutex_lock(&M.m);
    if (M.gate) {
        M.at_gate = true;
        pthread_cond_broadcast(&M.c);
        while (!M.gate_open)
            pthread_cond_wait(&M.c, &M.m);
    }
    pthread_mutex_unlock(&M.m);
    return EDDY_OK;
}

static void wait_at_gate(void) {
    pthread_mutex_lock(&M.m);
    while (!M.at_gate)
        pthread_cond_wait(&M.c, &M.m);
    pthread_mutex_unlock(&M.m);
}

static void open_gate(void) {
    pthread_mutex_lock(&M.m);
    M.gate_open = true;
    pthread_cond_broadcast(&M.c);
    pthread_mutex_unlock(&M.m);
}

static const char *applied(void) {
    static char buf[4096];
    buf[0] = '\0';
    pthread_mutex_lock(&M.m);
    for (int i = 0; i < M.n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, M.ids[i]);
    }
    pthread_mutex_unlock(&M.m);
    return buf;
}

/* Knows only this projection's types: any other fails, so a FILTERED event must never get
 * here. */
static eddy_status u_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    if (!uev_known_type(ev, err))
        return EDDY_ERR_MALFORMED;
    pthread_mutex_lock(&M.m);
    M.decoded++;
    pthread_mutex_unlock(&M.m);
    return uev_decode(ev, meta, out, err, user);
}

static int decoded(void) {
    pthread_mutex_lock(&M.m);
    int n = M.decoded;
    pthread_mutex_unlock(&M.m);
    return n;
}

/* ---- context ----------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    tstore *store;
    eddy_feed_config cfg;
    eddy_projection proj;
    tdomain *feed;
} ctx;

static void setup(ctx *c, const combo *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    memset(&M, 0, sizeof(M));
    sd = p->frontend ? &reactive_store_driver : &blocking_store_driver;
    dd = p->frontend ? &reactive_domain_driver : &blocking_domain_driver;
    eddy_test_settings(&c->s, p->backend, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    eddy_error err = {0};
    cr_assert_eq(sd->open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    pthread_mutex_init(&M.m, NULL);
    pthread_cond_init(&M.c, NULL);
    eddy_feed_config_init(&c->cfg);
    c->cfg.decode = u_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.page_size = 2;
    c->cfg.log = eddy_test_log;
    c->cfg.log_user = p->frontend ? "rdomain" : "domain";
    c->proj.apply = m_apply;
    c->proj.replay_started = m_started;
}

static void new_feed(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(dd->new_feed(c->store, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
}

/* A feed with the projection "order-status" on order.placed events (or the filter given). */
static void new_registered(ctx *c, eddy_filter *f) {
    new_feed(c);
    eddy_error err = {0};
    cr_assert_eq(dd->reg(c->feed, "order-status", &c->proj, f, &err), EDDY_OK, "%s", err.detail);
    eddy_filter_free(f);
}

static eddy_filter *placed(void) {
    eddy_filter *f = eddy_filter_type("order.placed");
    cr_assert(f);
    return f;
}

static void teardown(ctx *c) {
    dd->free(c->feed);
    sd->close(c->store);
    pthread_cond_destroy(&M.c);
    pthread_mutex_destroy(&M.m);
}

static void append_ev(ctx *c, eddy_event *ev) {
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(sd->append(c->store, "order-1", evs, 1, NULL, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

static void append(ctx *c, const char *id, const char *type) { append_ev(c, make_event(id, type)); }

/* Routes a fresh event of type; returns the status, *r the route. */
static eddy_status route(ctx *c, const char *id, const char *type, eddy_route *r, eddy_error *err) {
    eddy_event *ev = make_event(id, type);
    eddy_status st = dd->route(c->feed, ev, NULL, r, err);
    eddy_event_free(ev);
    return st;
}

static eddy_route route_ok(ctx *c, const char *id, const char *type) {
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(route(c, id, type, &r, &err), EDDY_OK, "route %s: %s", id, err.detail);
    return r;
}

/* ---- registering -------------------------------------------------------------------------- */

DTEST(register_takes_one_projection_and_ids_are_unique_in_the_process) {
    ctx c;
    setup(&c, p, "dom-reg");
    eddy_error err = {0};
    tdomain *bad = NULL;
    c.cfg.id = "x";
    cr_assert_eq(dd->new_feed(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.id = NULL;
    c.cfg.projection.apply = m_apply;
    cr_assert_eq(dd->new_feed(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.projection.apply = NULL;
    eddy_filter *f = placed();
    c.cfg.filter = f;
    cr_assert_eq(dd->new_feed(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.filter = NULL;
    eddy_filter_free(f);
    cr_assert_null(bad);

    new_feed(&c);
    char id[64];
    cr_assert_not(dd->has_projection(c.feed));
    cr_assert_not(dd->projection_id(c.feed, id, sizeof(id)));
    f = placed();
    cr_assert_eq(dd->reg(c.feed, "order-status", &c.proj, f, &err), EDDY_OK, "%s", err.detail);
    eddy_filter_free(f); /* copied */
    cr_assert(dd->has_projection(c.feed));
    cr_assert(dd->projection_id(c.feed, id, sizeof(id)));
    cr_assert_str_eq(id, "order-status");
    /* one projection only */
    cr_assert_eq(dd->reg(c.feed, "order-other", &c.proj, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    dd->projection_id(c.feed, id, sizeof(id));
    cr_assert_str_eq(id, "order-status");

    /* the id is taken in the whole process */
    tdomain *other = NULL;
    cr_assert_eq(dd->new_feed(c.store, &c.cfg, &other, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(dd->reg(other, "order-status", &c.proj, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "registered"), "%s", err.detail);
    cr_assert_not(dd->has_projection(other));
    cr_assert_eq(dd->reg(other, "bad id", &c.proj, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);

    /* released when the feed holding it is freed */
    dd->free(c.feed);
    c.feed = NULL;
    cr_assert_eq(dd->reg(other, "order-status", &c.proj, NULL, &err), EDDY_OK, "%s", err.detail);
    dd->projection_id(other, id, sizeof(id));
    cr_assert_str_eq(id, "order-status");
    dd->free(other);
    teardown(&c);
}

/* The registry is the process's, not a front end's: a feed of the other front end holding an id
 * keeps this one's from registering it (both would write the same checkpoint key). */
DTEST(an_id_registered_by_the_other_front_end_is_refused) {
    ctx c;
    setup(&c, p, "dom-both");
    const store_driver *osd = p->frontend ? &blocking_store_driver : &reactive_store_driver;
    const domain_driver *odd = p->frontend ? &blocking_domain_driver : &reactive_domain_driver;
    eddy_error err = {0};
    tstore *ostore = NULL;
    cr_assert_eq(osd->open(&c.s, &ostore, &err), EDDY_OK, "%s", err.detail);
    tdomain *theirs = NULL;
    cr_assert_eq(odd->new_feed(ostore, &c.cfg, &theirs, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(odd->reg(theirs, "shared-id", &c.proj, NULL, &err), EDDY_OK, "%s", err.detail);
    new_feed(&c);
    cr_assert_eq(dd->reg(c.feed, "shared-id", &c.proj, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "registered"), "%s", err.detail);
    cr_assert_not(dd->has_projection(c.feed));
    odd->free(theirs);
    cr_assert_eq(dd->reg(c.feed, "shared-id", &c.proj, NULL, &err), EDDY_OK, "%s", err.detail);
    osd->close(ostore);
    teardown(&c);
}

DTEST(without_a_projection_everything_is_refused) {
    ctx c;
    setup(&c, p, "dom-none");
    new_feed(&c);
    eddy_error err = {0};
    uev e = {"u1"};
    eddy_route r;
    cr_assert_eq(dd->accept(c.feed, NULL, &e, &err), EDDY_ERR_ILLEGAL_STATE);
    eddy_event_meta meta = {"order-1", 1, 1};
    cr_assert_eq(dd->accept(c.feed, &meta, &e, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(route(&c, "e1", "order.placed", &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(dd->catch_up(c.feed, "order-status", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(dd->go_live(c.feed, "order-status", &err), EDDY_ERR_INVALID_ARGUMENT);
    dd->stop_catch_up(c.feed); /* no effect */
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert_not(dd->refuses_permanently(c.feed));
    cr_assert_not(dd->failure(c.feed, NULL));
    eddy_feed_info i;
    cr_assert_eq(dd->get_info(c.feed, &i), EDDY_OK);
    cr_assert_eq(i.last, EDDY_FEED_NONE);
    cr_assert_eq(decoded(), 0);
    cr_assert_str_eq(eddy_route_name(EDDY_ROUTE_DEFERRED), "EDDY_ROUTE_DEFERRED");
    /* The front end's own shape: refused calls run no completion, and so on. */
    dd->shape_refusals(c.store, &c.cfg, c.feed);
    teardown(&c);
}

/* ---- routing ------------------------------------------------------------------------------ */

DTEST(route_filters_defers_then_delivers_once) {
    ctx c;
    setup(&c, p, "dom-route");
    append(&c, "s1", "order.placed");
    append(&c, "s2", "customer.created");
    append(&c, "s3", "order.placed");
    new_registered(&c, placed());

    /* before the catch-up: deferred, not kept; ready false, not refusing */
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert_not(dd->refuses_permanently(c.feed));
    int before = decoded();
    /* another type: filtered, never decoded (the decoder would fail) */
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_eq(decoded(), before);

    cr_assert_eq(dd->catch_up(c.feed, "other", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(dd->go_live(c.feed, "other", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_OK, "%s", err.detail);
    /* the filter drove the read: the stored customer.created was never decoded */
    cr_assert_str_eq(applied(), "s1,s3");
    cr_assert(dd->ready_for_live_delivery(c.feed));

    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED); /* duplicate */
    cr_assert_eq(route_ok(&c, "s1", "order.placed"), EDDY_ROUTE_DELIVERED); /* replayed */
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    eddy_event_meta meta = {"order-9", 1, 0};
    eddy_event *ev = make_event("l3", "order.placed");
    cr_assert_eq(dd->route(c.feed, ev, &meta, &r, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    uev e4 = {"l4"};
    cr_assert_eq(dd->accept(c.feed, NULL, &e4, &err), EDDY_OK, "%s", err.detail);
    uev e5 = {"l5"};
    cr_assert_eq(dd->accept(c.feed, &meta, &e5, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(route_ok(&c, "x2", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_str_eq(applied(), "s1,s3,l1,l2,l3,l4,l5");
    teardown(&c);
}

/* The projection's replay_started routes an event on its own feed while the replay runs:
 * deferred (blocking: returned at once; reactive: its completion comes later on the loop), then,
 * handed back after the catch-up, delivered once. */
DTEST(route_defers_during_the_replay) {
    ctx c;
    setup(&c, p, "dom-replay");
    append(&c, "s1", "order.placed");
    new_registered(&c, placed());
    M.route_in_started = c.feed;
    eddy_error err = {0};
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(M.started_route.calls, 1, "the route in the replay had no outcome");
    cr_assert_eq(M.started_route.st, EDDY_OK, "%s", M.started_route.detail);
    cr_assert_eq(M.started_route.route, EDDY_ROUTE_DEFERRED);
    cr_assert_not(M.started_route.ready, "ready for live delivery inside the replay");
    cr_assert_not(M.started_route.refuses, "refusing inside the replay");
    cr_assert_str_eq(applied(), "s1");
    M.route_in_started = NULL;
    cr_assert_eq(route_ok(&c, "l-in", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&c, "l-in", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "s1,l-in");
    teardown(&c);
}

typedef struct runner {
    pthread_t t;
    tdomain *feed;
    eddy_status st;
    eddy_error err;
} runner;

static void *run_catch_up(void *arg) {
    runner *r = arg;
    r->st = dd->catch_up(r->feed, "order-status", &r->err);
    return NULL;
}

/* Blocking front end only: the replay runs on the catch-up's own thread, held at a gate, while
 * another thread routes; a reactive replay runs on the loop, where a gate would stop every call
 * (route_defers_during_the_replay and the next scenario are its cases). */
DTEST_ONE(route_from_another_thread_defers_during_the_replay, 0) {
    ctx c;
    setup(&c, p, "dom-gate");
    append(&c, "s1", "order.placed");
    new_registered(&c, placed());
    M.gate = true;
    runner rn = {.feed = c.feed};
    cr_assert_eq(pthread_create(&rn.t, NULL, run_catch_up, &rn), 0);
    wait_at_gate();
    /* the replay runs: deferred, returned at once, any number of times */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert_not(dd->refuses_permanently(c.feed));
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    open_gate();
    pthread_join(rn.t, NULL);
    cr_assert_eq(rn.st, EDDY_OK, "%s", rn.err.detail);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "s1,l1");
    teardown(&c);
}

/* Reactive front end only: the catch-up counts as running from the call that asked for it, so a
 * route in the same turn of the loop, before the loop ran the replay, is deferred (a blocking
 * catch-up returns only when it ended). */
DTEST_ONE(route_defers_from_the_catch_up_call_on, 2) {
    ctx c;
    setup(&c, p, "dom-call");
    append(&c, "s1", "order.placed");
    new_registered(&c, placed());
    eddy_event *ev = make_event("l1", "order.placed");
    eddy_route r = EDDY_ROUTE_FILTERED;
    eddy_status route_st = EDDY_ERR_TIMEOUT /* not an outcome here */;
    eddy_error err = {0};
    cr_assert_eq(dd->catch_up_all_then_route(c.feed, ev, &r, &route_st, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
    cr_assert_eq(route_st, EDDY_OK, "%s", eddy_status_name(route_st));
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    cr_assert_str_eq(applied(), "s1");
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "s1,l1");
    teardown(&c);
}

DTEST(route_defers_after_a_stop_until_go_live) {
    ctx c;
    setup(&c, p, "dom-stop");
    new_registered(&c, placed());
    dd->stop_catch_up(c.feed); /* idle and not live: the feed itself stops */
    eddy_feed_info i;
    cr_assert_eq(dd->get_info(c.feed, &i), EDDY_OK);
    cr_assert(i.stopped);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    /* the plain accept of a stopped feed still refuses */
    cr_assert_eq(dd->accept(c.feed, NULL, &e, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert_not(dd->refuses_permanently(c.feed));
    cr_assert_eq(dd->go_live(c.feed, "order-status", &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(), "l1");
    teardown(&c);
}

DTEST(after_a_failed_catch_up_matching_events_are_refused) {
    ctx c;
    setup(&c, p, "dom-fail");
    append(&c, "s1", "order.placed");
    append(&c, "s2", "order.placed");
    new_registered(&c, placed());
    snprintf(M.fail_id, sizeof(M.fail_id), "s2");
    eddy_error err = {0};
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_ERR_HANDLER_FAILED);
    /* reactive: the failure steps (marker deletion) run on the loop; the feed refuses at once */
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert(dd->refuses_permanently(c.feed));
    eddy_error cause = {0};
    cr_assert(dd->failure(c.feed, &cause));
    cr_assert_eq(cause.status, EDDY_ERR_HANDLER_FAILED);
    eddy_route r;
    cr_assert_eq(route(&c, "l1", "order.placed", &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    uev e = {"l2"};
    cr_assert_eq(dd->accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(dd->accept(c.feed, NULL, &e, &err), EDDY_ERR_ILLEGAL_STATE);
    teardown(&c);
}

/* ---- filters -------------------------------------------------------------------------------- */

DTEST(a_data_filter_drives_the_catch_up_and_the_routing) {
    ctx c;
    setup(&c, p, "dom-data");
    append_ev(&c, amount_event("s1", 5));
    append_ev(&c, amount_event("s2", 50));
    append(&c, "s3", "customer.created");
    append_ev(&c, amount_event("s4", 11));
    c.cfg.reader = eddy_msgpack_reader();
    eddy_filter *f = eddy_filter_and(eddy_filter_type("order.big"), amount_over(10));
    cr_assert(f);
    new_registered(&c, f);
    eddy_error err = {0};
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_assert_str_eq(applied(), "s2,s4");
    eddy_route r;
    eddy_event *ev = amount_event("l1", 3);
    cr_assert_eq(dd->route(c.feed, ev, NULL, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_FILTERED);
    eddy_event_free(ev);
    ev = amount_event("l2", 30);
    cr_assert_eq(dd->route(c.feed, ev, NULL, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    eddy_event_free(ev);
    cr_assert_str_eq(applied(), "s2,s4,l2");
    teardown(&c);
}

DTEST(a_data_filter_without_a_reader_is_sticky_unreadable) {
    ctx c;
    setup(&c, p, "dom-unread");
    new_registered(&c, amount_over(10)); /* accepted at register */
    eddy_error err = {0}, first = {0};
    eddy_route r;
    eddy_event *big = amount_event("l1", 50), *small = amount_event("l2", 1),
               *other = make_event("x1", "customer.created");
    cr_assert_eq(dd->route(c.feed, big, NULL, &r, &first), EDDY_ERR_UNREADABLE_FILTER);
    eddy_event *evs[] = {small, big, other};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(dd->route(c.feed, evs[i], NULL, &r, &err), EDDY_ERR_UNREADABLE_FILTER);
        cr_assert_str_eq(err.detail, first.detail);
    }
    eddy_event_free(big);
    eddy_event_free(small);
    eddy_event_free(other);
    cr_assert_eq(decoded(), 0);
    teardown(&c);
}

DTEST(a_catch_up_with_an_unreadable_filter_fails) {
    ctx c;
    setup(&c, p, "dom-unread-cu");
    append_ev(&c, amount_event("s1", 50));
    new_registered(&c, amount_over(10));
    eddy_error err = {0};
    cr_assert_eq(dd->catch_up_all(c.feed, &err), EDDY_ERR_UNREADABLE_FILTER);
    cr_assert(dd->refuses_permanently(c.feed));
    cr_assert_not(dd->ready_for_live_delivery(c.feed));
    cr_assert_str_eq(applied(), "");
    teardown(&c);
}
