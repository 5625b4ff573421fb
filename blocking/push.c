/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources on the blocking front end. The core (src/store/push.c)
 * decides everything: what an outcome means for the broker, the model's aggregation, the
 * sources' states, start-all's order and the progress figures. This file only drives it: it
 * routes through the blocking domain feeds on the calling thread (a handler's worker, the
 * writer), runs catch-ups on the caller's thread (foreground) or on one thread per source
 * (background), and samples the feeds for progress on one ticker thread, since a blocking
 * catch-up occupies its own thread until it ends.
 *
 * Invariants:
 * - No lock is held while a domain feed or the observer runs. A state change and its report to
 *   the progress callback happen together under cb_lock, and so do the ticker's sample and its
 *   report: reports never overlap and come in the order of the changes (no CATCHING_UP report
 *   after the LIVE one). cb_lock is taken after `m`, never the other way.
 * - Every state change is followed by a broadcast on `c` under `m`, so eddy_push_sources_wait
 *   and the ticker never miss one; wait reads the states under cb_lock, so when it returns the
 *   callback has been told every end it saw.
 * - Catch-ups get the sources' cancel handle: freeing the sources cancels them (not a failure:
 *   the feed keeps holding) and joins every thread before anything is released. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy/push.h"
#include "error.h"
#include "pool.h"
#include "store/push.h"

/* ---- the model ------------------------------------------------------------------------ */

struct eddy_push_model {
    eddy__push_model core; /* first: eddy__push_model_new */
};

eddy_status eddy_push_model_new(const eddy_push_observer *observer, eddy_log_fn log, void *log_user,
                                eddy_push_model **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    eddy_push_model *m = eddy__push_model_new(sizeof(*m), observer, log, log_user, err);
    if (!m)
        return EDDY_ERR_NOMEM;
    *out = m;
    return EDDY_OK;
}

void eddy_push_model_free(eddy_push_model *model) { eddy__push_model_free(model); }

eddy_status eddy_push_model_add(eddy_push_model *model, eddy_domain_feed *feed, eddy_error *err) {
    return eddy__push_model_add(model ? &model->core : NULL, feed, err);
}

/* One feed's route, answered at once (eddy__push_model_ops). */
static eddy_status route_one(void *feed, const eddy_event *ev, const eddy_event_meta *meta,
                             eddy__push_routing *r, eddy_error *err) {
    eddy_route route = EDDY_ROUTE_FILTERED;
    eddy_status st = eddy_domain_route(feed, ev, meta, &route, err);
    eddy__push_routed(r, st, route, err);
    return EDDY_OK;
}
static bool has_projection(void *feed) { return eddy_domain_has_projection(feed); }
static const eddy__push_model_ops model_ops = {has_projection, route_one};

/* Routes ev to every feed with a projection: the model's answer, told to its observer (core). */
static eddy_status route_all(eddy_push_model *model, const eddy_event *ev,
                             const eddy_event_meta *meta, bool write_path, eddy_route *route,
                             eddy_error *err) {
    eddy__push_routing r;
    eddy_error e = {EDDY_OK, ""};
    eddy_status st = eddy__push_route_all(&model->core, &model_ops, ev, meta, &r, &e);
    if (st == EDDY_OK)
        return eddy__push_answer(&model->core, &r, ev, write_path, route, err);
    eddy__push_observe(&model->core, ev, st, EDDY_ROUTE_FILTERED, &e, write_path);
    if (route)
        *route = EDDY_ROUTE_FILTERED;
    return eddy__fail(err, st, "%s", e.detail);
}

eddy_status eddy_push_model_accept(eddy_push_model *model, const eddy_event *ev,
                                   const eddy_event_meta *meta) {
    if (!model || !ev)
        return EDDY_ERR_INVALID_ARGUMENT;
    route_all(model, ev, meta, true, NULL, NULL);
    return EDDY_OK;
}

eddy_status eddy_push_model_accept_or_defer(eddy_push_model *model, const eddy_event *ev,
                                            const eddy_event_meta *meta, eddy_route *route,
                                            eddy_error *err) {
    if (!model || !ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "model or event is NULL");
    return route_all(model, ev, meta, false, route, err);
}

/* ---- push sources --------------------------------------------------------------------- */

typedef struct bsrc {
    eddy_push_sources *ps;
    eddy__push_source *src;
    pthread_t thread;
    bool has_thread;
} bsrc;

struct eddy_push_sources {
    eddy_bus *bus;
    eddy__push_set set;
    eddy_cancel *cancel;
    pthread_mutex_t m; /* closing, the ticker, the wait */
    pthread_cond_t c;
    pthread_mutex_t cb_lock; /* one progress callback at a time */
    atomic_bool closing;     /* written under m; read anywhere */
    pthread_t ticker;
    bool has_ticker;
};

static void wake(eddy_push_sources *ps) {
    pthread_mutex_lock(&ps->m);
    pthread_cond_broadcast(&ps->c);
    pthread_mutex_unlock(&ps->m);
}

/* The core's drive calls (eddy__push_ops). */
static eddy_status reg(void *feed, const char *id, const eddy_projection *projection,
                       const eddy_filter *filter, eddy_error *err) {
    return eddy_domain_register(feed, id, projection, filter, err);
}
static eddy_status stats(void *feed, eddy_feed_info *info) { return eddy_domain_stats(feed, info); }
static bool refuses(void *feed) { return eddy_domain_refuses_permanently(feed); }
static eddy_status follow(void *fe, const char *name, bool consuming, eddy_error *err) {
    eddy_push_sources *ps = fe;
    return consuming ? eddy_bus_resume(ps->bus, name, err) : eddy_bus_pause(ps->bus, name, err);
}
/* A state change and its report happen under cb_lock: reports never overlap and come in the
 * order of the changes. */
static void enter(void *fe) { pthread_mutex_lock(&((eddy_push_sources *)fe)->cb_lock); }
static void leave(void *fe, const eddy_push_progress *p, bool changed) {
    eddy_push_sources *ps = fe;
    /* Freeing cancels the catch-ups; their ends are not news to anyone. */
    if (p && ps->set.opts.progress && !atomic_load(&ps->closing))
        ps->set.opts.progress(p, ps->set.opts.progress_user);
    pthread_mutex_unlock(&ps->cb_lock);
    if (changed)
        wake(ps);
}

static eddy_status start_one(void *fe, eddy__push_source *src, void *arg, eddy_error *err);
static const eddy__push_ops ops = {reg,   stats, has_projection, refuses,  follow,
                                   enter, leave, NULL,           start_one};

static void deadline_in(struct timespec *ts, long long ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Reports progress every progress_ms while any source catches up; sleeps otherwise. */
static void *ticker_main(void *arg) {
    eddy_push_sources *ps = arg;
    pthread_mutex_lock(&ps->m);
    while (!atomic_load(&ps->closing)) {
        if (!eddy__push_any_catching_up(&ps->set)) {
            pthread_cond_wait(&ps->c, &ps->m);
            continue;
        }
        struct timespec until;
        deadline_in(&until, ps->set.opts.progress_ms);
        int rc = 0;
        while (!atomic_load(&ps->closing) && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&ps->c, &ps->m, &until);
        if (atomic_load(&ps->closing))
            break;
        pthread_mutex_unlock(&ps->m);
        eddy__push_sample_all(&ps->set);
        pthread_mutex_lock(&ps->m);
    }
    pthread_mutex_unlock(&ps->m);
    return NULL;
}

eddy_status eddy_push_sources_new(eddy_bus *bus, const eddy_push_options *opts,
                                  eddy_push_sources **out, eddy_error *err) {
    if (!bus || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or out is NULL");
    eddy_status st = eddy__push_check_options(opts, err);
    if (st != EDDY_OK)
        return st;
    eddy_push_sources *ps = calloc(1, sizeof(*ps));
    if (!ps || !(ps->cancel = eddy_cancel_new())) {
        free(ps);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory building push sources");
    }
    ps->bus = bus;
    eddy__push_set_init(&ps->set, opts);
    eddy__push_set_bind(&ps->set, &ops, ps);
    pthread_mutex_init(&ps->m, NULL);
    pthread_cond_init(&ps->c, NULL);
    pthread_mutex_init(&ps->cb_lock, NULL);
    if (ps->set.opts.progress) {
        if (eddy__bthread_start(&ps->ticker, ticker_main, ps) != 0) {
            eddy_push_sources_free(ps);
            return eddy__fail(err, EDDY_ERR_NOMEM, "cannot start the progress thread");
        }
        ps->has_ticker = true;
    }
    *out = ps;
    return EDDY_OK;
}

void eddy_push_sources_free(eddy_push_sources *ps) {
    if (!ps)
        return;
    pthread_mutex_lock(&ps->m);
    atomic_store(&ps->closing, true);
    pthread_cond_broadcast(&ps->c);
    pthread_mutex_unlock(&ps->m);
    eddy_cancel_fire(ps->cancel);
    if (ps->has_ticker)
        pthread_join(ps->ticker, NULL);
    for (size_t i = 0; i < ps->set.n; i++) {
        bsrc *b = ps->set.v[i]->fe;
        if (b && b->has_thread)
            pthread_join(b->thread, NULL);
    }
    eddy__push_set_destroy(&ps->set);
    eddy_cancel_free(ps->cancel);
    pthread_mutex_destroy(&ps->cb_lock);
    pthread_cond_destroy(&ps->c);
    pthread_mutex_destroy(&ps->m);
    free(ps);
}

/* The subscription's handler: routes the message into the source's feed (once its projection is
 * registered) and settles it as the core says. */
static eddy_status push_handler(eddy_delivery *d, void *user) {
    bsrc *b = user;
    eddy__push_set *set = &b->ps->set;
    const eddy_event *ev;
    eddy_event_meta meta;
    const eddy_event_meta *mp;
    if (!eddy__push_admit(set, b->src, d, &ev, &meta, &mp))
        return EDDY_ERR_UNAVAILABLE;
    eddy_route route = EDDY_ROUTE_FILTERED;
    eddy_error e = {EDDY_OK, ""};
    eddy_status st = eddy_domain_route(b->src->feed, ev, mp, &route, &e);
    return eddy__push_settle_routed(set, b->src, ev, st, route, &e);
}

/* Catches up (or goes live) on this thread and records how it ended. */
static eddy_status run_catch_up(bsrc *b, eddy_error *err) {
    eddy_push_sources *ps = b->ps;
    eddy__push_source *src = b->src;
    eddy_error e = {EDDY_OK, ""};
    eddy_status st = src->go_live ? eddy_domain_go_live(src->feed, src->id, ps->cancel, &e)
                                  : eddy_domain_catch_up(src->feed, src->id, ps->cancel, &e);
    return eddy__push_start_ended(&ps->set, src, st, &e, err);
}

static void *catch_up_main(void *arg) {
    run_catch_up(arg, NULL);
    return NULL;
}

/* Catches up here (foreground) or on its own thread (background) (eddy__push_ops' start). */
static eddy_status start_one(void *fe, eddy__push_source *src, void *arg, eddy_error *err) {
    eddy_push_sources *ps = fe;
    bsrc *b = src->fe;
    (void)arg;
    if (ps->set.opts.startup == EDDY_PUSH_FOREGROUND)
        return run_catch_up(b, err);
    if (eddy__bthread_start(&b->thread, catch_up_main, b) != 0) {
        eddy_error e;
        eddy__fail(&e, EDDY_ERR_NOMEM, "cannot start the catch-up thread");
        return eddy__push_refused(&ps->set, src, EDDY_ERR_NOMEM, &e, err);
    }
    b->has_thread = true;
    return EDDY_OK;
}

eddy_status eddy_push_sources_add(eddy_push_sources *ps, const eddy_push_source_spec *spec,
                                  eddy_error *err) {
    if (!ps || !spec)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "sources or spec is NULL");
    eddy__push_source *src;
    eddy_subscription_spec sub;
    eddy_status st = eddy__push_add(&ps->set, spec->id, spec->feed, &spec->projection, spec->filter,
                                    spec->subject, spec->group, spec->go_live, sizeof(bsrc),
                                    push_handler, &sub, &src, err);
    if (st != EDDY_OK)
        return st;
    bsrc *b = src->fe;
    b->ps = ps;
    b->src = src;
    if ((st = eddy_bus_subscribe(ps->bus, &sub, err)) != EDDY_OK) {
        eddy__push_set_drop_last(&ps->set, src);
        return st;
    }
    return eddy__push_start_added(&ps->set, src, NULL, err);
}

eddy_status eddy_push_sources_start_all(eddy_push_sources *ps, const char ***ids, size_t *n,
                                        eddy_error *err) {
    if (ids)
        *ids = NULL;
    if (n)
        *n = 0;
    if (!ps)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "sources is NULL");
    eddy__push_source **v;
    size_t k;
    eddy_status st = eddy__push_claim_all(&ps->set, &v, &k, ids, err);
    if (st != EDDY_OK)
        return st;
    st = eddy__push_start_each(&ps->set, v, k, NULL, err);
    if (n)
        *n = k;
    free(v);
    return st;
}

eddy_status eddy_push_sources_stats(eddy_push_sources *ps, const char *id,
                                    eddy_push_progress *out) {
    return ps ? eddy__push_stats(&ps->set, id, out) : EDDY_ERR_INVALID_ARGUMENT;
}

eddy_status eddy_push_sources_wait(eddy_push_sources *ps, unsigned timeout_ms) {
    if (!ps)
        return EDDY_ERR_INVALID_ARGUMENT;
    struct timespec until;
    deadline_in(&until, timeout_ms);
    eddy_status st = EDDY_OK;
    bool timed_out = false;
    pthread_mutex_lock(&ps->m);
    for (;;) {
        /* Under cb_lock, so the progress callback has been told every end seen here. */
        pthread_mutex_lock(&ps->cb_lock);
        bool any = eddy__push_any_catching_up(&ps->set);
        pthread_mutex_unlock(&ps->cb_lock);
        if (!any || timed_out) {
            st = any ? EDDY_ERR_TIMEOUT : EDDY_OK;
            break;
        }
        timed_out = pthread_cond_timedwait(&ps->c, &ps->m, &until) == ETIMEDOUT;
    }
    pthread_mutex_unlock(&ps->m);
    return st;
}
