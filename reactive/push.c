/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources on the reactive (libev) front end. The core
 * (src/store/push.c) decides everything; this file drives it on the loop: routes through the reactive
 * domain feeds and settles each delivery from the route's completion (the handler returns
 * EDDY_PENDING), starts catch-ups whose completions move the sources on, reports progress from
 * one ev_timer while any source catches up, and completes add / start-all / accept-or-defer
 * through callbacks.
 *
 * Invariants:
 * - Every user completion runs from the loop, never inside the call that asked for it: requests
 *   whose work is done complete from a zero ev_timer of their own.
 * - Memory: the sources count the completions they wait for (`inflight`: routes, catch-ups,
 *   subscription readiness); eddy_rpush_sources_free completes the user's pending requests with
 *   EDDY_ERR_CLOSED at once and releases the memory when the count reaches zero. The model does
 *   the same per accept-or-defer (each request counts the feeds still answering).
 * - Everything runs on the loop's thread; the core's locks are uncontended. */
#include <stdlib.h>
#include <string.h>

#include "eddy/rpush.h"
#include "error.h"
#include "store/push.h"

/* ---- the model ------------------------------------------------------------------------ */

typedef struct mreq mreq;

struct eddy_rpush_model {
    eddy__push_model core; /* first: eddy__push_model_new */
    struct ev_loop *loop;
    mreq *pending; /* accepts whose user completion has not run */
};

struct mreq {
    eddy__push_routing routing; /* first: eddy__push_model_ops' route gets its address */
    eddy_rpush_model *model;    /* NULL once the model was freed */
    eddy_event *ev;             /* a copy for the observer (NULL when out of memory) */
    bool write_path;
    eddy_route_done_fn done;
    void *user;
    bool finished;
    ev_timer t;
    mreq *next;
};

static void mreq_unlink(mreq *r) {
    if (!r->model)
        return;
    for (mreq **pp = &r->model->pending; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
}

static void mreq_release(mreq *r) {
    eddy_event_free(r->ev);
    free(r);
}

/* Every feed answered: the observer, then the caller. */
static void mreq_finish(mreq *r) {
    eddy_rpush_model *m = r->model;
    r->finished = true;
    mreq_unlink(r);
    eddy_route route;
    eddy_error e;
    eddy_status st =
        eddy__push_answer(m ? &m->core : NULL, &r->routing, r->ev, r->write_path, &route, &e);
    if (r->done)
        r->done(st, route, st == EDDY_OK ? NULL : &e, r->user);
    if (r->routing.waiting == 0)
        mreq_release(r);
}

static void mreq_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    mreq *r = w->data;
    ev_timer_stop(loop, w);
    mreq_finish(r);
}

static void mreq_routed(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    mreq *r = user;
    if (r->finished) { /* the model was freed meanwhile */
        if (--r->routing.waiting == 0)
            mreq_release(r);
    } else if (eddy__push_routed(&r->routing, st, route, err)) {
        mreq_finish(r);
    }
}

/* One feed's route, answered later through mreq_routed (eddy__push_model_ops). */
static eddy_status route_one(void *feed, const eddy_event *ev, const eddy_event_meta *meta,
                             eddy__push_routing *r, eddy_error *err) {
    return eddy_rdomain_route(feed, ev, meta, mreq_routed, (mreq *)r, err);
}
static bool has_projection(void *feed) { return eddy_rdomain_has_projection(feed); }
static const eddy__push_model_ops model_ops = {has_projection, route_one};

eddy_status eddy_rpush_model_new(struct ev_loop *loop, const eddy_push_observer *observer,
                                 eddy_log_fn log, void *log_user, eddy_rpush_model **out,
                                 eddy_error *err) {
    if (!loop || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop or out is NULL");
    eddy_rpush_model *m = eddy__push_model_new(sizeof(*m), observer, log, log_user, err);
    if (!m)
        return EDDY_ERR_NOMEM;
    m->loop = loop;
    *out = m;
    return EDDY_OK;
}

void eddy_rpush_model_free(eddy_rpush_model *model) {
    if (!model)
        return;
    while (model->pending) {
        mreq *r = model->pending;
        model->pending = r->next;
        r->model = NULL;
        r->finished = true;
        ev_timer_stop(model->loop, &r->t);
        eddy_error e;
        eddy__fail(&e, EDDY_ERR_CLOSED, "the push model was freed");
        if (r->done)
            r->done(EDDY_ERR_CLOSED, EDDY_ROUTE_FILTERED, &e, r->user);
        if (r->routing.waiting == 0)
            mreq_release(r);
    }
    eddy__push_model_free(model);
}

eddy_status eddy_rpush_model_add(eddy_rpush_model *model, eddy_rdomain_feed *feed,
                                 eddy_error *err) {
    return eddy__push_model_add(model ? &model->core : NULL, feed, err);
}

static eddy_status route_all(eddy_rpush_model *m, const eddy_event *ev, const eddy_event_meta *meta,
                             bool write_path, eddy_route_done_fn done, void *user,
                             eddy_error *err) {
    mreq *r = calloc(1, sizeof(*r));
    if (!r)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory routing event %s", eddy_event_id(ev));
    r->model = m;
    r->ev = eddy_event_dup(ev);
    r->write_path = write_path;
    r->done = done;
    r->user = user;
    ev_timer_init(&r->t, mreq_timer, 0., 0.);
    r->t.data = r;
    r->next = m->pending;
    m->pending = r;
    eddy_status st = eddy__push_route_all(&m->core, &model_ops, ev, meta, &r->routing, err);
    if (st != EDDY_OK) {
        mreq_unlink(r);
        mreq_release(r);
    } else if (r->routing.waiting == 0) {
        ev_timer_start(m->loop, &r->t); /* never inside the call */
    }
    return st;
}

eddy_status eddy_rpush_model_accept(eddy_rpush_model *model, const eddy_event *ev,
                                    const eddy_event_meta *meta) {
    if (!model || !ev)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy_error e = {EDDY_OK, ""};
    if (route_all(model, ev, meta, true, NULL, NULL, &e) != EDDY_OK)
        eddy__log(&model->core.log, EDDY_LOG_WARN, "push: event %s was not routed: %s",
                  eddy_event_id(ev), e.detail);
    return EDDY_OK;
}

eddy_status eddy_rpush_model_accept_or_defer(eddy_rpush_model *model, const eddy_event *ev,
                                             const eddy_event_meta *meta, eddy_route_done_fn done,
                                             void *user, eddy_error *err) {
    if (!model || !ev || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "model, event or done is NULL");
    return route_all(model, ev, meta, false, done, user, err);
}

/* ---- push sources --------------------------------------------------------------------- */

typedef struct rreq rreq;
typedef struct rsrc rsrc;

struct eddy_rpush_sources {
    struct ev_loop *loop;
    eddy_rbus *bus;
    eddy__push_set set;
    ev_timer progress; /* runs while any source catches up */
    rreq *pending;     /* add / start-all requests whose user completion has not run */
    size_t inflight;   /* completions of routes, catch-ups and readiness still to come */
    bool closing;
};

/* A user's add or start-all, completed once `remaining` reaches zero. */
struct rreq {
    eddy_rpush_sources *ps;
    eddy_rpush_done_fn done;
    eddy_rpush_started_fn started;
    void *user;
    const char **ids;
    size_t n;
    int remaining;
    eddy_status st;
    eddy_error err;
    ev_timer t;
    rreq *next;
};

struct rsrc {
    eddy_rpush_sources *ps;
    eddy__push_source *src;
    rreq *req;   /* the request waiting for its catch-up (foreground), or NULL */
    rreq *added; /* the add waiting for the subscription's readiness */
};

typedef struct rroute {
    rsrc *b;
    eddy_delivery *d;
    const eddy_event *ev;
} rroute;

static void release(eddy_rpush_sources *ps) {
    eddy__push_set_destroy(&ps->set);
    free(ps);
}

/* One awaited completion arrived; releases freed sources after the last. */
static void landed(eddy_rpush_sources *ps) {
    ps->inflight--;
    if (ps->closing && ps->inflight == 0)
        release(ps);
}

/* The core's drive calls (eddy__push_ops). */
static eddy_status reg(void *feed, const char *id, const eddy_projection *projection,
                       const eddy_filter *filter, eddy_error *err) {
    return eddy_rdomain_register(feed, id, projection, filter, err);
}
static eddy_status stats(void *feed, eddy_feed_info *info) {
    return eddy_rdomain_stats(feed, info);
}
static bool refuses(void *feed) { return eddy_rdomain_refuses_permanently(feed); }
static eddy_status follow(void *fe, const char *name, bool consuming, eddy_error *err) {
    eddy_rpush_sources *ps = fe;
    return consuming ? eddy_rbus_resume(ps->bus, name, err) : eddy_rbus_pause(ps->bus, name, err);
}
static void enter(void *fe) { (void)fe; }
static void leave(void *fe, const eddy_push_progress *p, bool changed) {
    eddy_rpush_sources *ps = fe;
    (void)changed;
    if (p && ps->set.opts.progress && !ps->closing)
        ps->set.opts.progress(p, ps->set.opts.progress_user);
}
static bool closing(void *fe) { return ((eddy_rpush_sources *)fe)->closing; }
static eddy_status start_one(void *fe, eddy__push_source *src, void *arg, eddy_error *err);
static const eddy__push_ops ops = {reg,   stats, has_projection, refuses,  follow,
                                   enter, leave, closing,        start_one};

static void rreq_unlink(rreq *r) {
    for (rreq **pp = &r->ps->pending; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
}

static void rreq_complete(rreq *r, eddy_status st, const eddy_error *err) {
    if (r->started)
        r->started(st, r->ids, r->n, st == EDDY_OK ? NULL : err, r->user);
    else if (r->done)
        r->done(st, st == EDDY_OK ? NULL : err, r->user);
    free(r->ids);
    free(r);
}

static void rreq_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    rreq *r = w->data;
    ev_timer_stop(loop, w);
    rreq_unlink(r);
    rreq_complete(r, r->st, &r->err);
}

/* One part of r ended with st. */
static void rreq_part(rreq *r, eddy_status st, const eddy_error *err) {
    if (!r)
        return;
    eddy__push_keep_first(&r->st, &r->err, st, err);
    if (--r->remaining == 0)
        ev_timer_start(r->ps->loop, &r->t); /* from the loop, never inside a call */
}

static rreq *rreq_new(eddy_rpush_sources *ps, eddy_rpush_done_fn done,
                      eddy_rpush_started_fn started, void *user) {
    rreq *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->ps = ps;
    r->done = done;
    r->started = started;
    r->user = user;
    r->st = EDDY_OK;
    r->remaining = 1; /* the call itself; rreq_part once it set everything up */
    ev_timer_init(&r->t, rreq_timer, 0., 0.);
    r->t.data = r;
    r->next = ps->pending;
    ps->pending = r;
    return r;
}

static void progress_tick(struct ev_loop *loop, ev_timer *w, int revents) {
    eddy_rpush_sources *ps = w->data;
    (void)revents;
    ps->inflight++; /* the callback may free the sources */
    if (!eddy__push_sample_all(&ps->set))
        ev_timer_stop(loop, w);
    landed(ps);
}

eddy_status eddy_rpush_sources_new(struct ev_loop *loop, eddy_rbus *bus,
                                   const eddy_push_options *opts, eddy_rpush_sources **out,
                                   eddy_error *err) {
    if (!loop || !bus || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop, bus or out is NULL");
    eddy_status st = eddy__push_check_options(opts, err);
    if (st != EDDY_OK)
        return st;
    eddy_rpush_sources *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory building push sources");
    ps->loop = loop;
    ps->bus = bus;
    eddy__push_set_init(&ps->set, opts);
    eddy__push_set_bind(&ps->set, &ops, ps);
    double every = ps->set.opts.progress_ms / 1000.0;
    ev_timer_init(&ps->progress, progress_tick, every, every);
    ps->progress.data = ps;
    *out = ps;
    return EDDY_OK;
}

void eddy_rpush_sources_free(eddy_rpush_sources *ps) {
    if (!ps || ps->closing)
        return;
    ps->closing = true;
    ev_timer_stop(ps->loop, &ps->progress);
    for (size_t i = 0; i < ps->set.n; i++)
        ((rsrc *)ps->set.v[i]->fe)->req = NULL;
    while (ps->pending) {
        rreq *r = ps->pending;
        ps->pending = r->next;
        ev_timer_stop(ps->loop, &r->t);
        eddy_error e;
        eddy__fail(&e, EDDY_ERR_CLOSED, "the push sources were freed");
        rreq_complete(r, EDDY_ERR_CLOSED, &e);
    }
    if (ps->inflight == 0)
        release(ps);
}

static void routed(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    rroute *rr = user;
    eddy_rpush_sources *ps = rr->b->ps;
    eddy_status h = ps->closing
                        ? EDDY_ERR_UNAVAILABLE
                        : eddy__push_settle_routed(&ps->set, rr->b->src, rr->ev, st, route, err);
    eddy_delivery *d = rr->d;
    free(rr);
    eddy_delivery_finish(d, h);
    landed(ps);
}

static eddy_status rpush_handler(eddy_delivery *d, void *user) {
    rsrc *b = user;
    eddy_rpush_sources *ps = b->ps;
    const eddy_event *ev;
    eddy_event_meta meta;
    const eddy_event_meta *mp;
    if (ps->closing || !eddy__push_admit(&ps->set, b->src, d, &ev, &meta, &mp))
        return EDDY_ERR_UNAVAILABLE;
    rroute *rr = malloc(sizeof(*rr));
    if (!rr)
        return EDDY_ERR_NOMEM;
    rr->b = b;
    rr->d = d;
    rr->ev = ev; /* borrowed like the delivery, until it is finished */
    eddy_error e = {EDDY_OK, ""};
    eddy_status st = eddy_rdomain_route(b->src->feed, ev, mp, routed, rr, &e);
    ps->inflight++;      /* the callbacks may free the sources */
    if (st != EDDY_OK) { /* refused up front: settled now */
        free(rr);
        eddy_status h = eddy__push_settle_routed(&ps->set, b->src, ev, st, EDDY_ROUTE_FILTERED, &e);
        landed(ps);
        return h;
    }
    return EDDY_PENDING;
}

/* The catch-up's end: the core moves the source on; the request waiting for it (foreground)
 * gets its part. */
static void caught_up(eddy_status st, const eddy_error *err, void *user) {
    rsrc *b = user;
    eddy_rpush_sources *ps = b->ps;
    if (!ps->closing) {
        eddy_error e = {EDDY_OK, ""};
        st = eddy__push_start_ended(&ps->set, b->src, st, err, &e);
        if (!eddy__push_any_catching_up(&ps->set))
            ev_timer_stop(ps->loop, &ps->progress);
        rreq *r = b->req;
        b->req = NULL;
        rreq_part(r, st, &e);
    }
    landed(ps);
}

/* Begins the source's catch-up (or go-live) (eddy__push_ops' start). r (the rreq) waits for the
 * catch-up when the start is in the foreground. Returns the up-front refusal's status. */
static eddy_status start_one(void *fe, eddy__push_source *src, void *r, eddy_error *err) {
    eddy_rpush_sources *ps = fe;
    rsrc *b = src->fe;
    eddy_error e = {EDDY_OK, ""};
    if (ps->set.opts.progress)
        ev_timer_again(ps->loop, &ps->progress);
    eddy_status st = src->go_live ? eddy_rdomain_go_live(src->feed, src->id, caught_up, b, &e)
                                  : eddy_rdomain_catch_up(src->feed, src->id, caught_up, b, &e);
    if (st != EDDY_OK) /* refused up front: ended now */
        return eddy__push_start_ended(&ps->set, src, st, &e, err);
    ps->inflight++;
    if (r && ps->set.opts.startup == EDDY_PUSH_FOREGROUND) {
        b->req = r;
        b->req->remaining++;
    }
    return EDDY_OK;
}

/* The subscription is ready (or not): the add waiting for it gets its part. */
static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    rsrc *b = user;
    eddy_rpush_sources *ps = b->ps;
    if (!ps->closing)
        rreq_part(b->added, st, err);
    landed(ps);
}

static eddy_status add_source(eddy_rpush_sources *ps, const eddy_rpush_source_spec *spec,
                              eddy_rpush_done_fn done, void *user, eddy_error *err);

eddy_status eddy_rpush_sources_add(eddy_rpush_sources *ps, const eddy_rpush_source_spec *spec,
                                   eddy_rpush_done_fn done, void *user, eddy_error *err) {
    eddy_status st;
    if (!ps || !spec)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "sources or spec is NULL");
    if (ps->closing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the push sources were freed");
    ps->inflight++; /* the progress callback may free the sources */
    st = add_source(ps, spec, done, user, err);
    landed(ps);
    return st;
}

static eddy_status add_source(eddy_rpush_sources *ps, const eddy_rpush_source_spec *spec,
                              eddy_rpush_done_fn done, void *user, eddy_error *err) {
    eddy__push_source *src;
    eddy_subscription_spec sub;
    eddy_status st = eddy__push_add(&ps->set, spec->id, spec->feed, &spec->projection, spec->filter,
                                    spec->subject, spec->group, spec->go_live, sizeof(rsrc),
                                    rpush_handler, &sub, &src, err);
    if (st != EDDY_OK)
        return st;
    rreq *r = rreq_new(ps, done, NULL, user);
    if (!r) {
        eddy__push_set_drop_last(&ps->set, src);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding a push source");
    }
    rsrc *b = src->fe;
    b->ps = ps;
    b->src = src;
    b->added = r;
    if ((st = eddy_rbus_subscribe_ready(ps->bus, &sub, on_ready, b, err)) != EDDY_OK) {
        rreq_unlink(r);
        free(r);
        eddy__push_set_drop_last(&ps->set, src);
        return st;
    }
    ps->inflight++;
    r->remaining++; /* the readiness */
    eddy_error e = {EDDY_OK, ""};
    if ((st = eddy__push_start_added(&ps->set, src, r, &e)) != EDDY_OK && !ps->closing) {
        r->st = st;
        r->err = e;
    }
    if (!ps->closing)                /* else free completed r already */
        rreq_part(r, EDDY_OK, NULL); /* the call's own part */
    return EDDY_OK;
}

eddy_status eddy_rpush_sources_start_all(eddy_rpush_sources *ps, eddy_rpush_started_fn started,
                                         void *user, eddy_error *err) {
    if (!ps)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "sources is NULL");
    if (ps->closing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the push sources were freed");
    rreq *r = rreq_new(ps, NULL, started, user);
    if (!r)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting the push sources");
    eddy__push_source **v;
    size_t k;
    eddy_status st = eddy__push_claim_all(&ps->set, &v, &k, &r->ids, err);
    if (st != EDDY_OK) {
        rreq_unlink(r);
        free(r);
        return st;
    }
    r->n = k;
    ps->inflight++; /* the progress callback may free the sources */
    eddy_error e = {EDDY_OK, ""};
    if ((st = eddy__push_start_each(&ps->set, v, k, r, &e)) != EDDY_OK && !ps->closing) {
        r->st = st;
        r->err = e;
    }
    free(v);
    if (!ps->closing)                /* else free completed r already */
        rreq_part(r, EDDY_OK, NULL); /* the call's own part */
    landed(ps);
    return EDDY_OK;
}

eddy_status eddy_rpush_sources_stats(eddy_rpush_sources *ps, const char *id,
                                     eddy_push_progress *out) {
    return ps ? eddy__push_stats(&ps->set, id, out) : EDDY_ERR_INVALID_ARGUMENT;
}
