/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds through the blocking front end, on memory:// and on the fixture's
 * redis-server, with the real event store and its checkpoint storage: registering (one
 * projection, ids unique in the process), the refusals without a projection, routing CloudEvents
 * (FILTERED never decoded, DELIVERED, DEFERRED before the catch-up, during the replay and after
 * a stop), a failed catch-up, the filter driving the catch-up's read, and the sticky unreadable
 * filter. Nothing sleeps: the replay waits on a gate the test opens. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/domain.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

typedef struct backend {
    int redis;
} backend;

static backend backends[] = {{0}, {1}};

#define DTEST(name)                                                                                \
    ParameterizedTestParameters(domain_blocking, name) {                                           \
        return cr_make_param_array(backend, backends, 2);                                          \
    }                                                                                              \
    ParameterizedTest(backend *p, domain_blocking, name, .timeout = 60)

/* ---- the read model ---------------------------------------------------------------------- */

typedef struct model {
    pthread_mutex_t m;
    pthread_cond_t c;
    char ids[64][64];
    int n;
    bool gate, at_gate, gate_open; /* replay_started waits for the test */
    char fail_id[64];
    int decoded;
} model;

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta;
    model *md = user;
    uev *e = event;
    pthread_mutex_lock(&md->m);
    if (md->fail_id[0] && strcmp(md->fail_id, e->id) == 0) {
        pthread_mutex_unlock(&md->m);
        snprintf(err->detail, sizeof(err->detail), "the model rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(md->n < 64);
    snprintf(md->ids[md->n++], sizeof(md->ids[0]), "%s", e->id);
    pthread_mutex_unlock(&md->m);
    return EDDY_OK;
}

static eddy_status m_started(eddy_error *err, void *user) {
    (void)err;
    model *md = user;
    pthread_mutex_lock(&md->m);
    if (md->gate) {
        md->at_gate = true;
        pthread_cond_broadcast(&md->c);
        while (!md->gate_open)
            pthread_cond_wait(&md->c, &md->m);
    }
    pthread_mutex_unlock(&md->m);
    return EDDY_OK;
}

static void wait_at_gate(model *md) {
    pthread_mutex_lock(&md->m);
    while (!md->at_gate)
        pthread_cond_wait(&md->c, &md->m);
    pthread_mutex_unlock(&md->m);
}

static void open_gate(model *md) {
    pthread_mutex_lock(&md->m);
    md->gate_open = true;
    pthread_cond_broadcast(&md->c);
    pthread_mutex_unlock(&md->m);
}

static const char *applied(model *md) {
    static char buf[4096];
    buf[0] = '\0';
    pthread_mutex_lock(&md->m);
    for (int i = 0; i < md->n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, md->ids[i]);
    }
    pthread_mutex_unlock(&md->m);
    return buf;
}

/* Knows only this projection's types: any other fails, so a FILTERED event must never get
 * here. */
static eddy_status u_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    model *md = user;
    if (!uev_known_type(ev, err))
        return EDDY_ERR_MALFORMED;
    pthread_mutex_lock(&md->m);
    md->decoded++;
    pthread_mutex_unlock(&md->m);
    return uev_decode(ev, meta, out, err, user);
}

/* ---- context ----------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    eddy_store *store;
    eddy_checkpoints ckpt;
    model md;
    eddy_feed_config cfg;
    eddy_projection proj;
    eddy_domain_feed *feed;
} ctx;

static void setup(ctx *c, const backend *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    eddy_test_settings(&c->s, p->redis, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    c->ckpt = eddy_store_checkpoints(c->store);
    pthread_mutex_init(&c->md.m, NULL);
    pthread_cond_init(&c->md.c, NULL);
    eddy_feed_config_init(&c->cfg);
    c->cfg.decode = u_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.codec_user = &c->md;
    c->cfg.checkpoints = &c->ckpt;
    c->cfg.page_size = 2;
    c->cfg.log = eddy_test_log;
    c->cfg.log_user = "domain";
    c->proj.apply = m_apply;
    c->proj.replay_started = m_started;
    c->proj.user = &c->md;
}

static void new_feed(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_new(c->store, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
}

/* A feed with the projection "order-status" on order.placed events (or the filter given). */
static void new_registered(ctx *c, eddy_filter *f) {
    new_feed(c);
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_register(c->feed, "order-status", &c->proj, f, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_filter_free(f);
}

static eddy_filter *placed(void) {
    eddy_filter *f = eddy_filter_type("order.placed");
    cr_assert(f);
    return f;
}

static void teardown(ctx *c) {
    eddy_domain_free(c->feed);
    eddy_store_close(c->store);
    pthread_cond_destroy(&c->md.c);
    pthread_mutex_destroy(&c->md.m);
}

static void append_ev(ctx *c, eddy_event *ev) {
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_append(c->store, "order-1", evs, 1, NULL, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

static void append(ctx *c, const char *id, const char *type) { append_ev(c, make_event(id, type)); }

/* Routes a fresh event of type; returns the status, *r the route. */
static eddy_status route(ctx *c, const char *id, const char *type, eddy_route *r, eddy_error *err) {
    eddy_event *ev = make_event(id, type);
    eddy_status st = eddy_domain_route(c->feed, ev, NULL, r, err);
    eddy_event_free(ev);
    return st;
}

static eddy_route route_ok(ctx *c, const char *id, const char *type) {
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(route(c, id, type, &r, &err), EDDY_OK, "route %s: %s", id, err.detail);
    return r;
}

static int decoded(ctx *c) {
    pthread_mutex_lock(&c->md.m);
    int n = c->md.decoded;
    pthread_mutex_unlock(&c->md.m);
    return n;
}

/* ---- registering -------------------------------------------------------------------------- */

DTEST(register_takes_one_projection_and_ids_are_unique_in_the_process) {
    ctx c;
    setup(&c, p, "dom-reg");
    eddy_error err = {0};
    eddy_domain_feed *bad = NULL;
    c.cfg.id = "x";
    cr_assert_eq(eddy_domain_new(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.id = NULL;
    c.cfg.projection.apply = m_apply;
    cr_assert_eq(eddy_domain_new(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.projection.apply = NULL;
    eddy_filter *f = placed();
    c.cfg.filter = f;
    cr_assert_eq(eddy_domain_new(c.store, &c.cfg, &bad, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.filter = NULL;
    eddy_filter_free(f);
    cr_assert_null(bad);

    new_feed(&c);
    cr_assert_not(eddy_domain_has_projection(c.feed));
    cr_assert_null(eddy_domain_projection_id(c.feed));
    f = placed();
    cr_assert_eq(eddy_domain_register(c.feed, "order-status", &c.proj, f, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_filter_free(f); /* copied */
    cr_assert(eddy_domain_has_projection(c.feed));
    cr_assert_str_eq(eddy_domain_projection_id(c.feed), "order-status");
    /* one projection only */
    cr_assert_eq(eddy_domain_register(c.feed, "order-other", &c.proj, NULL, &err),
                 EDDY_ERR_ILLEGAL_STATE);
    cr_assert_str_eq(eddy_domain_projection_id(c.feed), "order-status");

    /* the id is taken in the whole process */
    eddy_domain_feed *other = NULL;
    cr_assert_eq(eddy_domain_new(c.store, &c.cfg, &other, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_domain_register(other, "order-status", &c.proj, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "registered"), "%s", err.detail);
    cr_assert_not(eddy_domain_has_projection(other));
    cr_assert_eq(eddy_domain_register(other, "bad id", &c.proj, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);

    /* released when the feed holding it is freed */
    eddy_domain_free(c.feed);
    c.feed = NULL;
    cr_assert_eq(eddy_domain_register(other, "order-status", &c.proj, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_str_eq(eddy_domain_projection_id(other), "order-status");
    eddy_domain_free(other);
    teardown(&c);
}

DTEST(without_a_projection_everything_is_refused) {
    ctx c;
    setup(&c, p, "dom-none");
    new_feed(&c);
    eddy_error err = {0};
    uev e = {"u1"};
    eddy_route r;
    cr_assert_eq(eddy_domain_accept(c.feed, NULL, &e, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    eddy_event_meta meta = {"order-1", 1, 1};
    cr_assert_eq(eddy_domain_accept(c.feed, &meta, &e, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(route(&c, "e1", "order.placed", &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_domain_catch_up_all(c.feed, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_domain_catch_up(c.feed, "order-status", NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy_domain_go_live(c.feed, "order-status", NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_domain_stop_catch_up(c.feed); /* no effect */
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert_not(eddy_domain_refuses_permanently(c.feed));
    cr_assert_not(eddy_domain_failure(c.feed, NULL));
    eddy_feed_info i;
    cr_assert_eq(eddy_domain_stats(c.feed, &i), EDDY_OK);
    cr_assert_eq(i.last, EDDY_FEED_NONE);
    cr_assert_eq(decoded(&c), 0);
    cr_assert_str_eq(eddy_route_name(EDDY_ROUTE_DEFERRED), "EDDY_ROUTE_DEFERRED");
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
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert_not(eddy_domain_refuses_permanently(c.feed));
    int before = decoded(&c);
    /* another type: filtered, never decoded (the decoder would fail) */
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_eq(decoded(&c), before);

    cr_assert_eq(eddy_domain_catch_up(c.feed, "other", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy_domain_go_live(c.feed, "other", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy_domain_catch_up_all(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    /* the filter drove the read: the stored customer.created was never decoded */
    cr_assert_str_eq(applied(&c.md), "s1,s3");
    cr_assert(eddy_domain_ready_for_live_delivery(c.feed));

    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED); /* duplicate */
    cr_assert_eq(route_ok(&c, "s1", "order.placed"), EDDY_ROUTE_DELIVERED); /* replayed */
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    eddy_event_meta meta = {"order-9", 1, 0};
    eddy_event *ev = make_event("l3", "order.placed");
    cr_assert_eq(eddy_domain_route(c.feed, ev, &meta, &r, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    uev e4 = {"l4"};
    cr_assert_eq(eddy_domain_accept(c.feed, NULL, &e4, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(route_ok(&c, "x2", "customer.created"), EDDY_ROUTE_FILTERED);
    cr_assert_str_eq(applied(&c.md), "s1,s3,l1,l2,l3,l4");
    teardown(&c);
}

typedef struct runner {
    pthread_t t;
    eddy_domain_feed *feed;
    eddy_status st;
    eddy_error err;
} runner;

static void *run_catch_up(void *arg) {
    runner *r = arg;
    r->st = eddy_domain_catch_up(r->feed, "order-status", NULL, &r->err);
    return NULL;
}

DTEST(route_defers_during_the_replay) {
    ctx c;
    setup(&c, p, "dom-replay");
    append(&c, "s1", "order.placed");
    new_registered(&c, placed());
    c.md.gate = true;
    runner rn = {.feed = c.feed};
    cr_assert_eq(pthread_create(&rn.t, NULL, run_catch_up, &rn), 0);
    wait_at_gate(&c.md);
    /* the replay runs: deferred, returned at once, any number of times */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert_not(eddy_domain_refuses_permanently(c.feed));
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    open_gate(&c.md);
    pthread_join(rn.t, NULL);
    cr_assert_eq(rn.st, EDDY_OK, "%s", rn.err.detail);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(&c.md), "s1,l1");
    teardown(&c);
}

DTEST(route_defers_after_a_stop_until_go_live) {
    ctx c;
    setup(&c, p, "dom-stop");
    new_registered(&c, placed());
    eddy_domain_stop_catch_up(c.feed); /* idle and not live: the feed itself stops */
    eddy_feed_info i;
    cr_assert_eq(eddy_domain_stats(c.feed, &i), EDDY_OK);
    cr_assert(i.stopped);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DEFERRED);
    uev e = {"l2"};
    eddy_route r;
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DEFERRED);
    /* the plain accept of a stopped feed still refuses */
    cr_assert_eq(eddy_domain_accept(c.feed, NULL, &e, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert_not(eddy_domain_refuses_permanently(c.feed));
    cr_assert_eq(eddy_domain_go_live(c.feed, "order-status", NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(route_ok(&c, "l1", "order.placed"), EDDY_ROUTE_DELIVERED);
    cr_assert_str_eq(applied(&c.md), "l1");
    teardown(&c);
}

DTEST(after_a_failed_catch_up_matching_events_are_refused) {
    ctx c;
    setup(&c, p, "dom-fail");
    append(&c, "s1", "order.placed");
    append(&c, "s2", "order.placed");
    new_registered(&c, placed());
    snprintf(c.md.fail_id, sizeof(c.md.fail_id), "s2");
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_catch_up_all(c.feed, NULL, &err), EDDY_ERR_HANDLER_FAILED);
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert(eddy_domain_refuses_permanently(c.feed));
    eddy_error cause = {0};
    cr_assert(eddy_domain_failure(c.feed, &cause));
    cr_assert_eq(cause.status, EDDY_ERR_HANDLER_FAILED);
    eddy_route r;
    cr_assert_eq(route(&c, "l1", "order.placed", &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(route_ok(&c, "x1", "customer.created"), EDDY_ROUTE_FILTERED);
    uev e = {"l2"};
    cr_assert_eq(eddy_domain_accept_or_defer(c.feed, NULL, &e, &r, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_assert_eq(eddy_domain_accept(c.feed, NULL, &e, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
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
    cr_assert_eq(eddy_domain_catch_up_all(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert_str_eq(applied(&c.md), "s2,s4");
    eddy_route r;
    eddy_event *ev = amount_event("l1", 3);
    cr_assert_eq(eddy_domain_route(c.feed, ev, NULL, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_FILTERED);
    eddy_event_free(ev);
    ev = amount_event("l2", 30);
    cr_assert_eq(eddy_domain_route(c.feed, ev, NULL, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r, EDDY_ROUTE_DELIVERED);
    eddy_event_free(ev);
    cr_assert_str_eq(applied(&c.md), "s2,s4,l2");
    teardown(&c);
}

DTEST(a_data_filter_without_a_reader_is_sticky_unreadable) {
    ctx c;
    setup(&c, p, "dom-unread");
    new_registered(&c, amount_over(10)); /* accepted at register */
    eddy_error err = {0}, first = {0};
    eddy_route r;
    eddy_event *big = amount_event("l1", 50), *small = amount_event("l2", 1);
    cr_assert_eq(eddy_domain_route(c.feed, big, NULL, &r, &first), EDDY_ERR_UNREADABLE_FILTER);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(eddy_domain_route(c.feed, i % 2 ? big : small, NULL, &r, &err),
                     EDDY_ERR_UNREADABLE_FILTER);
        cr_assert_str_eq(err.detail, first.detail);
    }
    cr_assert_eq(route(&c, "x1", "customer.created", &r, &err), EDDY_ERR_UNREADABLE_FILTER);
    eddy_event_free(big);
    eddy_event_free(small);
    cr_assert_eq(decoded(&c), 0);
    teardown(&c);
}

DTEST(a_catch_up_with_an_unreadable_filter_fails) {
    ctx c;
    setup(&c, p, "dom-unread-cu");
    append_ev(&c, amount_event("s1", 50));
    new_registered(&c, amount_over(10));
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_catch_up_all(c.feed, NULL, &err), EDDY_ERR_UNREADABLE_FILTER);
    cr_assert(eddy_domain_refuses_permanently(c.feed));
    cr_assert_not(eddy_domain_ready_for_live_delivery(c.feed));
    cr_assert_str_eq(applied(&c.md), "");
    teardown(&c);
}
