/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive domain feed behind the domain scenario driver: the feed lives on its store's
 * loop thread (rloop.h); every call runs there, and a call with a completion waits for it
 * (checked to run once, never inside the call). A refusal is the call's own status; any other
 * outcome is the completion's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain_driver.h"
#include "eddy/rdomain.h"
#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "rloop.h"

struct tdomain {
    rloop *l;
    eddy_rstore *store;
    eddy_rcheckpoints ckpt;
    eddy_rdomain_feed *feed;
};

struct tgate {
    eddy_rcheckpoints self;
    rloop *l;
    eddy_rstore *store;
    bool hold_exists, hold_save; /* loop thread only, as everything here */
    eddy_rstore_exists_fn exists_done;
    eddy_rstore_done_fn save_done;
    void *user;
    bool held;
};

typedef struct dop {
    rloop_op op;
    tdomain *d;
    const eddy_feed_config *cfg;
    const char *id;
    const eddy_projection *projection;
    const eddy_filter *filter;
    const eddy_event_meta *meta;
    void *event;
    const eddy_event *ev;
    eddy_route *route;
    eddy_status *route_st; /* catch_up_all_then_route: the route's outcome */
    int pending;           /* catch_up_all_then_route: completions still to come */
    eddy_status first_st;
    bool flag;
    char *buf;
    size_t size;
    eddy_error *cause;
    eddy_feed_info *info;
    eddy_rcheckpoints gated; /* new_gated_feed */
    bool use_gated;
    int kind;
    eddy_error *err;
} dop;

static void copy_err(dop *o, const eddy_error *err) {
    if (o->err && err)
        *o->err = *err;
}

/* ---- new and free -------------------------------------------------------------------------- */

static void start_new(rloop_op *op) {
    dop *o = (dop *)op;
    rloop_finish(op, eddy_rdomain_new(rloop_loop(op->l), o->d->store, o->cfg,
                                      o->use_gated ? &o->gated : &o->d->ckpt, &o->d->feed, o->err));
}

static const eddy_rcheckpoint_ops gate_ops;

static eddy_status new_with(tstore *st, const eddy_feed_config *cfg, tgate *g, tdomain **out,
                            eddy_error *err) {
    *out = NULL;
    tdomain *d = calloc(1, sizeof(*d));
    cr_assert(d);
    d->l = reactive_store_driver.loop(st);
    d->store = reactive_store_driver.native(st);
    d->ckpt = eddy_rstore_checkpoints(d->store);
    dop o = {.d = d, .cfg = cfg, .err = err};
    if (g) {
        o.use_gated = true;
        o.gated = (eddy_rcheckpoints){&gate_ops, g};
    }
    eddy_status rc = rloop_call(d->l, &o.op, start_new);
    if (rc != EDDY_OK) {
        cr_assert_null(d->feed);
        free(d);
        return rc;
    }
    *out = d;
    return EDDY_OK;
}

static eddy_status r_new(tstore *st, const eddy_feed_config *cfg, tdomain **out, eddy_error *err) {
    return new_with(st, cfg, NULL, out, err);
}

static void start_free(rloop_op *op) {
    dop *o = (dop *)op;
    eddy_rdomain_free(o->d->feed);
    o->d->feed = NULL;
    rloop_finish(op, EDDY_OK);
}

static void r_free(tdomain *d) {
    if (!d)
        return;
    dop o = {.d = d};
    rloop_call(d->l, &o.op, start_free);
    free(d);
}

/* ---- calls without a completion, run on the loop ----------------------------------------- */

enum { K_REG, K_HAS, K_ID, K_STOP, K_READY, K_REFUSES, K_FAILURE, K_INFO };

static void start_sync(rloop_op *op) {
    dop *o = (dop *)op;
    eddy_rdomain_feed *f = o->d->feed;
    eddy_status st = EDDY_OK;
    const char *id;
    switch (o->kind) {
    case K_REG:
        st = eddy_rdomain_register(f, o->id, o->projection, o->filter, o->err);
        break;
    case K_HAS:
        o->flag = eddy_rdomain_has_projection(f);
        break;
    case K_ID:
        id = eddy_rdomain_projection_id(f);
        snprintf(o->buf, o->size, "%s", id ? id : "");
        o->flag = id != NULL;
        break;
    case K_STOP:
        eddy_rdomain_stop_catch_up(f);
        break;
    case K_READY:
        o->flag = eddy_rdomain_ready_for_live_delivery(f);
        break;
    case K_REFUSES:
        o->flag = eddy_rdomain_refuses_permanently(f);
        break;
    case K_FAILURE:
        o->flag = eddy_rdomain_failure(f, o->cause);
        break;
    case K_INFO:
        st = eddy_rdomain_stats(f, o->info);
        break;
    }
    rloop_finish(op, st);
}

static eddy_status sync_call(tdomain *d, dop *o, int kind) {
    o->d = d;
    o->kind = kind;
    return rloop_call(d->l, &o->op, start_sync);
}

static eddy_status r_reg(tdomain *d, const char *id, const eddy_projection *p, const eddy_filter *f,
                         eddy_error *err) {
    dop o = {.id = id, .projection = p, .filter = f, .err = err};
    return sync_call(d, &o, K_REG);
}
static bool r_has(tdomain *d) {
    dop o = {0};
    sync_call(d, &o, K_HAS);
    return o.flag;
}
static bool r_id(tdomain *d, char *buf, size_t size) {
    dop o = {.buf = buf, .size = size};
    sync_call(d, &o, K_ID);
    return o.flag;
}
static void r_stop(tdomain *d) {
    dop o = {0};
    sync_call(d, &o, K_STOP);
}
static bool r_ready(tdomain *d) {
    dop o = {0};
    sync_call(d, &o, K_READY);
    return o.flag;
}
static bool r_refuses(tdomain *d) {
    dop o = {0};
    sync_call(d, &o, K_REFUSES);
    return o.flag;
}
static bool r_failure(tdomain *d, eddy_error *cause) {
    dop o = {.cause = cause};
    sync_call(d, &o, K_FAILURE);
    return o.flag;
}
static eddy_status r_info(tdomain *d, eddy_feed_info *out) {
    dop o = {.info = out};
    return sync_call(d, &o, K_INFO);
}

/* ---- calls with a completion ------------------------------------------------------------- */

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    dop *o = user;
    rloop_callback(&o->op, "domain feed");
    cr_assert(st == EDDY_OK || err, "%s without detail", eddy_status_name(st));
    copy_err(o, err);
    rloop_finish(&o->op, st);
}

static void on_route(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    dop *o = user;
    rloop_callback(&o->op, "route");
    cr_assert(st == EDDY_OK || err, "%s without detail", eddy_status_name(st));
    if (st == EDDY_OK && o->route)
        *o->route = route;
    copy_err(o, err);
    rloop_finish(&o->op, st);
}

enum { K_CATCH_UP_ALL, K_CATCH_UP, K_GO_LIVE, K_ACCEPT, K_ACCEPT_OR_DEFER, K_ROUTE };

static void start_async(rloop_op *op) {
    dop *o = (dop *)op;
    eddy_rdomain_feed *f = o->d->feed;
    eddy_status st = EDDY_OK;
    switch (o->kind) {
    case K_CATCH_UP_ALL:
        st = eddy_rdomain_catch_up_all(f, on_done, o, o->err);
        break;
    case K_CATCH_UP:
        st = eddy_rdomain_catch_up(f, o->id, on_done, o, o->err);
        break;
    case K_GO_LIVE:
        st = eddy_rdomain_go_live(f, o->id, on_done, o, o->err);
        break;
    case K_ACCEPT:
        st = eddy_rdomain_accept(f, o->meta, o->event, on_done, o, o->err);
        break;
    case K_ACCEPT_OR_DEFER:
        st = eddy_rdomain_accept_or_defer(f, o->meta, o->event, on_route, o, o->err);
        break;
    case K_ROUTE:
        st = eddy_rdomain_route(f, o->ev, o->meta, on_route, o, o->err);
        break;
    }
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status async_call(tdomain *d, dop *o, int kind) {
    o->d = d;
    o->kind = kind;
    return rloop_call(d->l, &o->op, start_async);
}

static eddy_status r_catch_up_all(tdomain *d, eddy_error *err) {
    dop o = {.err = err};
    return async_call(d, &o, K_CATCH_UP_ALL);
}
static eddy_status r_catch_up(tdomain *d, const char *id, eddy_error *err) {
    dop o = {.id = id, .err = err};
    return async_call(d, &o, K_CATCH_UP);
}
static eddy_status r_go_live(tdomain *d, const char *id, eddy_error *err) {
    dop o = {.id = id, .err = err};
    return async_call(d, &o, K_GO_LIVE);
}
static eddy_status r_accept(tdomain *d, const eddy_event_meta *meta, void *event, eddy_error *err) {
    dop o = {.meta = meta, .event = event, .err = err};
    return async_call(d, &o, K_ACCEPT);
}
static eddy_status r_accept_or_defer(tdomain *d, const eddy_event_meta *meta, void *event,
                                     eddy_route *out, eddy_error *err) {
    dop o = {.meta = meta, .event = event, .route = out, .err = err};
    return async_call(d, &o, K_ACCEPT_OR_DEFER);
}
static eddy_status r_route(tdomain *d, const eddy_event *ev, const eddy_event_meta *meta,
                           eddy_route *out, eddy_error *err) {
    dop o = {.ev = ev, .meta = meta, .route = out, .err = err};
    return async_call(d, &o, K_ROUTE);
}

/* ---- a route from inside a projection callback (on the loop) ------------------------------ */

typedef struct inner {
    droute *r;
    bool in_call;
} inner;

static void on_inner_route(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    inner *in = user;
    cr_assert_not(in->in_call, "a route's completion ran inside the call");
    in->r->st = st;
    in->r->route = route;
    snprintf(in->r->detail, sizeof(in->r->detail), "%s", err ? err->detail : "");
    in->r->calls++;
    free(in);
}

static void r_route_from_projection(tdomain *d, const eddy_event *ev, droute *r) {
    cr_assert(rloop_on_thread(d->l), "route_from_projection off the loop thread");
    inner *in = calloc(1, sizeof(*in));
    cr_assert(in);
    in->r = r;
    in->in_call = true;
    eddy_error err = {0};
    eddy_status st = eddy_rdomain_route(d->feed, ev, NULL, on_inner_route, in, &err);
    in->in_call = false;
    r->ready = eddy_rdomain_ready_for_live_delivery(d->feed);
    r->refuses = eddy_rdomain_refuses_permanently(d->feed);
    if (st != EDDY_OK) {
        r->st = st;
        snprintf(r->detail, sizeof(r->detail), "%s", err.detail);
        r->calls++;
        free(in);
    }
}

/* ---- the catch-up asked for, and a route right behind it ---------------------------------- */

typedef struct then {
    dop *o;
    bool in_call;
} then;

static void on_then_catch_up(eddy_status st, const eddy_error *err, void *user) {
    then *t = user;
    cr_assert_not(t->in_call, "the catch-up's completion ran inside the call");
    copy_err(t->o, err);
    dop *o = t->o;
    free(t);
    /* The catch-up's status is the call's; the route's goes to *route_st. */
    o->first_st = st;
    if (--o->pending == 0)
        rloop_finish(&o->op, o->first_st);
}

static void on_then_route(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    (void)err;
    then *t = user;
    cr_assert_not(t->in_call, "the route's completion ran inside the call");
    dop *o = t->o;
    free(t);
    *o->route_st = st;
    if (st == EDDY_OK)
        *o->route = route;
    if (--o->pending == 0)
        rloop_finish(&o->op, o->first_st);
}

static void start_then(rloop_op *op) {
    dop *o = (dop *)op;
    then *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    cr_assert(a && b);
    a->o = b->o = o;
    a->in_call = b->in_call = true;
    o->pending = 2;
    eddy_status st = eddy_rdomain_catch_up_all(o->d->feed, on_then_catch_up, a, o->err);
    a->in_call = false;
    if (st != EDDY_OK) {
        free(a);
        free(b);
        rloop_finish(op, st);
        return;
    }
    eddy_error err = {0};
    st = eddy_rdomain_route(o->d->feed, o->ev, NULL, on_then_route, b, &err);
    b->in_call = false;
    if (st != EDDY_OK) {
        free(b);
        *o->route_st = st;
        if (--o->pending == 0)
            rloop_finish(op, o->first_st);
    }
}

static eddy_status r_catch_up_all_then_route(tdomain *d, const eddy_event *ev, eddy_route *out,
                                             eddy_status *route_st, eddy_error *err) {
    dop o = {.d = d, .ev = ev, .route = out, .route_st = route_st, .err = err};
    return rloop_call(d->l, &o.op, start_then);
}

/* ---- the gate: held completions, released on the loop ------------------------------------ */

static eddy_status g_exists(void *self, const char *feed_id, eddy_rstore_exists_fn done, void *user,
                            eddy_error *err) {
    tgate *g = self;
    if (!g->hold_exists)
        return eddy_rstore_checkpoint_exists(g->store, feed_id, done, user, err);
    g->exists_done = done;
    g->user = user;
    g->held = true;
    return EDDY_OK;
}
static eddy_status g_save(void *self, const char *feed_id, const char *value,
                          eddy_rstore_done_fn done, void *user, eddy_error *err) {
    tgate *g = self;
    if (!g->hold_save)
        return eddy_rstore_checkpoint_save(g->store, feed_id, value, done, user, err);
    g->save_done = done;
    g->user = user;
    g->held = true;
    return EDDY_OK;
}
static eddy_status g_remove(void *self, const char *feed_id, eddy_rstore_done_fn done, void *user,
                            eddy_error *err) {
    tgate *g = self;
    return eddy_rstore_checkpoint_remove(g->store, feed_id, done, user, err);
}
static const eddy_rcheckpoint_ops gate_ops = {g_exists, g_save, g_remove};

static eddy_status r_new_gated(tstore *st, const eddy_feed_config *cfg, tgate *g, tdomain **out,
                               eddy_error *err) {
    return new_with(st, cfg, g, out, err);
}

static tgate *r_gate_new(tstore *st) {
    tgate *g = calloc(1, sizeof(*g));
    cr_assert(g);
    g->l = reactive_store_driver.loop(st);
    g->store = reactive_store_driver.native(st);
    g->self = (eddy_rcheckpoints){&gate_ops, g};
    return g;
}
static void r_gate_free(tgate *g) { free(g); }

typedef struct gate_arg {
    tgate *g;
    bool exists, save, held;
} gate_arg;

static void hold_on_loop(void *arg) {
    gate_arg *a = arg;
    a->g->hold_exists = a->exists;
    a->g->hold_save = a->save;
}
static void r_gate_hold(tgate *g, bool exists, bool save) {
    gate_arg a = {.g = g, .exists = exists, .save = save};
    rloop_run(g->l, hold_on_loop, &a);
}
static void held_on_loop(void *arg) {
    gate_arg *a = arg;
    a->held = a->g->held;
}
static bool r_gate_held(tgate *g) {
    gate_arg a = {.g = g};
    rloop_run(g->l, held_on_loop, &a);
    return a.held;
}
/* Answers the held operation, from the loop outside any call of the feed. */
static void open_on_loop(void *arg) {
    tgate *g = ((gate_arg *)arg)->g;
    g->hold_exists = g->hold_save = false;
    if (!g->held)
        return;
    g->held = false;
    eddy_rstore_exists_fn exists_done = g->exists_done;
    eddy_rstore_done_fn save_done = g->save_done;
    g->exists_done = NULL;
    g->save_done = NULL;
    if (exists_done)
        exists_done(EDDY_OK, false, NULL, g->user);
    else if (save_done)
        save_done(EDDY_OK, NULL, g->user);
}
static void r_gate_open(tgate *g) {
    gate_arg a = {.g = g};
    rloop_run(g->l, open_on_loop, &a);
}

static const void *r_gate_checkpoints(tgate *g) { return &g->self; }

static void *r_native(tdomain *d) { return d->feed; }

/* ---- the calling shape --------------------------------------------------------------------- */

typedef struct shape {
    tdomain *d;
    const eddy_feed_config *cfg;
    int calls;
} shape;

static void count_done(eddy_status st, const eddy_error *err, void *user) {
    (void)st, (void)err;
    ((shape *)user)->calls++;
}

static void shape_on_loop(void *arg) {
    shape *sh = arg;
    eddy_error err = {0};
    /* A blocking checkpoint storage in the config: the reactive feed takes its own beside. */
    eddy_checkpoints blocking_ckpt = {0};
    eddy_feed_config c = *sh->cfg;
    c.checkpoints = &blocking_ckpt;
    eddy_rdomain_feed *bad = NULL;
    cr_expect_eq(eddy_rdomain_new(rloop_loop(sh->d->l), sh->d->store, &c, &sh->d->ckpt, &bad, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_expect_null(bad);
    /* No completion for a refused call, a callback given or not. */
    int dummy = 0;
    cr_expect_eq(eddy_rdomain_accept(sh->d->feed, NULL, &dummy, count_done, sh, &err),
                 EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(eddy_rdomain_catch_up_all(sh->d->feed, count_done, sh, &err),
                 EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(eddy_rdomain_go_live(sh->d->feed, "nobody", count_done, sh, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_rdomain_free(NULL);
}

static void r_shape_refusals(tstore *st, const eddy_feed_config *cfg, tdomain *none) {
    (void)st;
    shape sh = {.d = none, .cfg = cfg};
    rloop_run(none->l, shape_on_loop, &sh);
    /* Anything the refused calls had queued would run on the loop before this. */
    dop o = {0};
    sync_call(none, &o, K_HAS);
    cr_expect_eq(sh.calls, 0, "a refused call ran its callback (%d)", sh.calls);
}

const domain_driver reactive_domain_driver = {
    .name = "reactive",
    .reactive = true,
    .new_feed = r_new,
    .free = r_free,
    .reg = r_reg,
    .has_projection = r_has,
    .projection_id = r_id,
    .catch_up_all = r_catch_up_all,
    .catch_up = r_catch_up,
    .go_live = r_go_live,
    .stop_catch_up = r_stop,
    .accept = r_accept,
    .accept_or_defer = r_accept_or_defer,
    .route = r_route,
    .route_from_projection = r_route_from_projection,
    .ready_for_live_delivery = r_ready,
    .refuses_permanently = r_refuses,
    .failure = r_failure,
    .get_info = r_info,
    .catch_up_all_then_route = r_catch_up_all_then_route,
    .new_gated_feed = r_new_gated,
    .gate_new = r_gate_new,
    .gate_free = r_gate_free,
    .gate_hold = r_gate_hold,
    .gate_held = r_gate_held,
    .gate_open = r_gate_open,
    .gate_checkpoints = r_gate_checkpoints,
    .native = r_native,
    .shape_refusals = r_shape_refusals,
};
