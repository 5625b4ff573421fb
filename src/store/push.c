/* SPDX-License-Identifier: BSD-3-Clause */
/* The push core (see push.h): settling, the model's aggregation, the sources' states, start-all's
 * order and the progress figures. No I/O, no thread, no timer; the front ends drive it.
 *
 * Invariants:
 * - A source's state only moves NOT_STARTED -> CATCHING_UP -> LIVE or FAILED (or straight to
 *   FAILED when its registration is refused or its filter turns out unreadable); FAILED is
 *   final, and a source is claimed (started) at most once.
 * - Messages are routed only for CATCHING_UP and LIVE sources: a source that is not registered
 *   yet, or that failed, hands back any message it is given without touching its feed, so
 *   nothing is acknowledged that no projection received. Such a source is not given any, as a
 *   rule: its subscription is paused while it does not route (eddy__push_consuming), so the
 *   broker keeps its messages instead of handing them out to be handed back.
 * - No user callback runs under a lock. */
#include "store/push.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "timing.h"
#include "util/options.h"

long long eddy__push_now_ms(void) { return eddy__mono_ms(); }

/* ---- the model ------------------------------------------------------------------------ */

eddy_status eddy__push_model_init(eddy__push_model *m, const eddy_push_observer *observer,
                                  eddy_log_fn log, void *log_user) {
    memset(m, 0, sizeof(*m));
    if (observer)
        m->observer = *observer;
    m->log.fn = log;
    m->log.user = log_user;
    pthread_mutex_init(&m->lock, NULL);
    return EDDY_OK;
}

void eddy__push_model_destroy(eddy__push_model *m) {
    free(m->feeds);
    pthread_mutex_destroy(&m->lock);
}

void *eddy__push_model_new(size_t size, const eddy_push_observer *observer, eddy_log_fn log,
                           void *log_user, eddy_error *err) {
    eddy__push_model *m = calloc(1, size);
    if (!m)
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory building a push model");
    else
        eddy__push_model_init(m, observer, log, log_user);
    return m;
}

void eddy__push_model_free(void *obj) {
    if (!obj)
        return;
    eddy__push_model_destroy(obj);
    free(obj);
}

eddy_status eddy__push_model_add(eddy__push_model *m, void *feed, eddy_error *err) {
    if (!m)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "model is NULL");
    if (!feed)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    pthread_mutex_lock(&m->lock);
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i < m->n && st == EDDY_OK; i++)
        if (m->feeds[i] == feed)
            st = eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the feed was added already");
    if (st == EDDY_OK && m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4;
        void **v = realloc(m->feeds, cap * sizeof(*v));
        if (!v)
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding a feed");
        else
            m->feeds = v, m->cap = cap;
    }
    if (st == EDDY_OK)
        m->feeds[m->n++] = feed;
    pthread_mutex_unlock(&m->lock);
    return st;
}

eddy_status eddy__push_model_feeds(eddy__push_model *m, void ***feeds, size_t *n) {
    *feeds = NULL;
    *n = 0;
    pthread_mutex_lock(&m->lock);
    eddy_status st = EDDY_OK;
    if (m->n) {
        *feeds = malloc(m->n * sizeof(**feeds));
        if (*feeds) {
            memcpy(*feeds, m->feeds, m->n * sizeof(**feeds));
            *n = m->n;
        } else {
            st = EDDY_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

void eddy__push_agg_init(eddy__push_agg *a) {
    memset(a, 0, sizeof(*a));
    a->first_error = EDDY_OK;
}

void eddy__push_keep_first(eddy_status *first, eddy_error *kept, eddy_status st,
                           const eddy_error *err) {
    if (st == EDDY_OK || *first != EDDY_OK)
        return;
    *first = st;
    kept->status = st;
    snprintf(kept->detail, sizeof(kept->detail), "%s",
             err && err->detail[0] ? err->detail : eddy_status_str(st));
}

void eddy__push_agg_add(eddy__push_agg *a, eddy_status st, eddy_route route,
                        const eddy_error *err) {
    a->registered++;
    if (st != EDDY_OK) {
        eddy__push_keep_first(&a->first_error, &a->err, st, err);
        return;
    }
    if (route == EDDY_ROUTE_DEFERRED)
        a->any_deferred = true;
    else if (route == EDDY_ROUTE_DELIVERED)
        a->any_delivered = true;
}

eddy_status eddy__push_agg_result(const eddy__push_agg *a, eddy_route *route, eddy_error *err) {
    if (route)
        *route = EDDY_ROUTE_FILTERED;
    if (a->registered == 0)
        return eddy__fail(err, EDDY_ERR_UNAVAILABLE,
                          "no projection is registered: hold the event (do not acknowledge it)");
    if (a->first_error != EDDY_OK)
        return eddy__fail(err, a->first_error, "%s", a->err.detail);
    if (route)
        *route = a->any_deferred    ? EDDY_ROUTE_DEFERRED
                 : a->any_delivered ? EDDY_ROUTE_DELIVERED
                                    : EDDY_ROUTE_FILTERED;
    return EDDY_OK;
}

eddy_status eddy__push_route_all(eddy__push_model *m, const eddy__push_model_ops *ops,
                                 const eddy_event *ev, const eddy_event_meta *meta,
                                 eddy__push_routing *r, eddy_error *err) {
    void **feeds;
    size_t n;
    eddy__push_agg_init(&r->agg);
    r->waiting = 0;
    if (eddy__push_model_feeds(m, &feeds, &n) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory routing event %s", eddy_event_id(ev));
    /* Counted up front, so an answer cannot look like the last while routing goes on. */
    r->waiting = 1;
    for (size_t i = 0; i < n; i++) {
        if (!ops->has_projection(feeds[i]))
            continue;
        eddy_error e = {EDDY_OK, ""};
        r->waiting++;
        eddy_status st = ops->route(feeds[i], ev, meta, r, &e);
        if (st != EDDY_OK) { /* refused up front: its answer is the refusal */
            r->waiting--;
            eddy__push_agg_add(&r->agg, st, EDDY_ROUTE_FILTERED, &e);
        }
    }
    free(feeds);
    r->waiting--;
    return EDDY_OK;
}

bool eddy__push_routed(eddy__push_routing *r, eddy_status st, eddy_route route,
                       const eddy_error *err) {
    eddy__push_agg_add(&r->agg, st, route, err);
    return --r->waiting == 0;
}

eddy_status eddy__push_answer(eddy__push_model *m, const eddy__push_routing *r,
                              const eddy_event *ev, bool write_path, eddy_route *route,
                              eddy_error *err) {
    eddy_route rt = EDDY_ROUTE_FILTERED;
    eddy_error e = {EDDY_OK, ""};
    eddy_status st = eddy__push_agg_result(&r->agg, &rt, &e);
    if (m)
        eddy__push_observe(m, ev, st, rt, &e, write_path);
    if (route)
        *route = rt;
    if (err && st != EDDY_OK)
        *err = e;
    return st;
}

void eddy__push_notify(const eddy_push_observer *obs, const eddy__logger *log, const eddy_event *ev,
                       eddy_status st, eddy_route route, const eddy_error *err) {
    if (!obs || !obs->observe)
        return;
    eddy_status ost = obs->observe(ev, st, route, st == EDDY_OK ? NULL : err, obs->user);
    if (ost != EDDY_OK)
        eddy__log(log, EDDY_LOG_WARN,
                  "push observer failed (%s) for event %s; routing is unchanged",
                  eddy_status_name(ost), ev ? eddy_event_id(ev) : "?");
}

void eddy__push_observe(eddy__push_model *m, const eddy_event *ev, eddy_status st, eddy_route route,
                        const eddy_error *err, bool write_path) {
    const char *id = ev ? eddy_event_id(ev) : "?";
    eddy__push_notify(&m->observer, &m->log, ev, st, route, err);
    if (!write_path)
        return;
    if (st == EDDY_ERR_UNAVAILABLE)
        eddy__log(&m->log, EDDY_LOG_DEBUG, "push: no projection is registered; event %s dropped",
                  id);
    else if (st != EDDY_OK)
        eddy__log(&m->log, EDDY_LOG_WARN, "push: event %s was not delivered: %s: %s", id,
                  eddy_status_name(st), err && err->detail[0] ? err->detail : "");
}

/* ---- sources -------------------------------------------------------------------------- */

eddy_status eddy__push_check_options(const eddy_push_options *opts, eddy_error *err) {
    if (opts && opts->mode != EDDY_PUSH_AUTOMATIC && opts->mode != EDDY_PUSH_MANUAL)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push sources: unknown mode %d",
                          (int)opts->mode);
    if (opts && opts->startup != EDDY_PUSH_FOREGROUND && opts->startup != EDDY_PUSH_BACKGROUND)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push sources: unknown startup %d",
                          (int)opts->startup);
    return EDDY_OK;
}

void eddy__push_set_bind(eddy__push_set *s, const eddy__push_ops *ops, void *fe) {
    s->ops = ops;
    s->fe = fe;
}

eddy_status eddy__push_set_init(eddy__push_set *s, const eddy_push_options *opts) {
    memset(s, 0, sizeof(*s));
    /* The caller's fields (its struct may be smaller than ours), the defaults of the others. */
    eddy__opts_widen(&eddy__push_options_table, &s->opts, opts);
    if (s->opts.progress_ms == 0)
        s->opts.progress_ms = 250;
    s->log.fn = s->opts.log;
    s->log.user = s->opts.log_user;
    pthread_mutex_init(&s->lock, NULL);
    return EDDY_OK;
}

static void source_free(eddy__push_source *src) {
    if (!src)
        return;
    free(src->id);
    free(src->subject);
    free(src->group);
    free(src->sub_name);
    eddy_filter_free(src->filter);
    free(src->fe);
    free(src);
}

void eddy__push_set_destroy(eddy__push_set *s) {
    for (size_t i = 0; i < s->n; i++)
        source_free(s->v[i]);
    free(s->v);
    pthread_mutex_destroy(&s->lock);
}

static bool blank(const char *s) { return !s || !*s; }

eddy_status eddy__push_set_add(eddy__push_set *s, const char *id, void *feed,
                               const eddy_projection *projection, const eddy_filter *filter,
                               const char *subject, const char *group, bool go_live,
                               eddy__push_source **out, eddy_error *err) {
    if (blank(id))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push source: no id");
    if (!feed)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push source '%s': no feed", id);
    if (!projection || !projection->apply)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push source '%s': no apply", id);
    if (blank(subject))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push source '%s': no subject", id);
    if (blank(group))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "push source '%s': no group", id);
    eddy__push_source *src = calloc(1, sizeof(*src));
    if (!src)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding push source '%s'", id);
    src->id = strdup(id);
    src->subject = strdup(subject);
    src->group = strdup(group);
    size_t nlen = strlen(id) + 6;
    src->sub_name = malloc(nlen);
    if (src->sub_name)
        snprintf(src->sub_name, nlen, "push.%s", id);
    src->filter = filter ? eddy_filter_dup(filter) : NULL;
    if (!src->id || !src->subject || !src->group || !src->sub_name || (filter && !src->filter)) {
        source_free(src);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding push source '%s'", id);
    }
    src->feed = feed;
    src->projection = *projection;
    src->go_live = go_live;
    src->state = EDDY_PUSH_NOT_STARTED;
    src->eta = -1;
    pthread_mutex_lock(&s->lock);
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i < s->n && st == EDDY_OK; i++)
        if (strcmp(s->v[i]->id, id) == 0)
            st = eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "push source '%s' was added already",
                            id);
    if (st == EDDY_OK && s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        eddy__push_source **v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding push source '%s'", id);
        else
            s->v = v, s->cap = cap;
    }
    if (st == EDDY_OK)
        s->v[s->n++] = src;
    pthread_mutex_unlock(&s->lock);
    if (st != EDDY_OK) {
        source_free(src);
        return st;
    }
    *out = src;
    return EDDY_OK;
}

eddy_status eddy__push_add(eddy__push_set *s, const char *id, void *feed,
                           const eddy_projection *projection, const eddy_filter *filter,
                           const char *subject, const char *group, bool go_live, size_t fe_size,
                           eddy_handler_fn handler, eddy_subscription_spec *sub,
                           eddy__push_source **out, eddy_error *err) {
    void *fe = calloc(1, fe_size);
    if (!fe)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory adding a push source");
    eddy__push_source *src;
    eddy_status st =
        eddy__push_set_add(s, id, feed, projection, filter, subject, group, go_live, &src, err);
    if (st != EDDY_OK) {
        free(fe);
        return st;
    }
    src->fe = fe;
    eddy__push_sub_spec(src, handler, fe, sub); /* paused until registered */
    *out = src;
    return EDDY_OK;
}

void eddy__push_set_drop_last(eddy__push_set *s, eddy__push_source *src) {
    pthread_mutex_lock(&s->lock);
    if (s->n && s->v[s->n - 1] == src)
        s->n--;
    else
        src = NULL;
    pthread_mutex_unlock(&s->lock);
    source_free(src);
}

eddy__push_source *eddy__push_set_find(eddy__push_set *s, const char *id) {
    eddy__push_source *found = NULL;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; id && i < s->n && !found; i++)
        if (strcmp(s->v[i]->id, id) == 0)
            found = s->v[i];
    pthread_mutex_unlock(&s->lock);
    return found;
}

bool eddy__push_set_claim_one(eddy__push_set *s, eddy__push_source *src) {
    pthread_mutex_lock(&s->lock);
    bool mine = !src->claimed;
    src->claimed = true;
    pthread_mutex_unlock(&s->lock);
    return mine;
}

eddy_status eddy__push_set_claim(eddy__push_set *s, eddy__push_source ***out, size_t *n,
                                 eddy_error *err) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&s->lock);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += !s->v[i]->claimed;
    eddy__push_source **v = k ? malloc(k * sizeof(*v)) : NULL;
    if (k && !v) {
        pthread_mutex_unlock(&s->lock);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting the push sources");
    }
    k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->v[i]->claimed) {
            s->v[i]->claimed = true;
            v[k++] = s->v[i];
        }
    pthread_mutex_unlock(&s->lock);
    *out = v;
    *n = k;
    return EDDY_OK;
}

eddy_status eddy__push_claim_all(eddy__push_set *s, eddy__push_source ***out, size_t *n,
                                 const char ***ids, eddy_error *err) {
    eddy_status st = eddy__push_set_claim(s, out, n, err);
    if (st == EDDY_OK && ids && eddy__push_ids(*out, *n, ids) != EDDY_OK) {
        /* Nothing was started yet: give the sources back. */
        eddy__push_set_unclaim(s, *out, *n);
        free(*out);
        *out = NULL;
        *n = 0;
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting the push sources");
    }
    return st;
}

void eddy__push_set_unclaim(eddy__push_set *s, eddy__push_source *const *srcs, size_t n) {
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++)
        srcs[i]->claimed = false;
    pthread_mutex_unlock(&s->lock);
}

eddy_status eddy__push_ids(eddy__push_source *const *srcs, size_t n, const char ***ids) {
    const char **v = malloc((n + 1) * sizeof(*v));
    if (!v)
        return EDDY_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = srcs[i]->id;
    v[n] = NULL;
    *ids = v;
    return EDDY_OK;
}

bool eddy__push_admits(eddy__push_set *s, eddy__push_source *src) {
    pthread_mutex_lock(&s->lock);
    bool ok = eddy__push_consuming(src->state);
    pthread_mutex_unlock(&s->lock);
    return ok;
}

bool eddy__push_consuming(eddy_push_state state) {
    return state == EDDY_PUSH_CATCHING_UP || state == EDDY_PUSH_LIVE;
}

void eddy__push_sub_spec(const eddy__push_source *src, eddy_handler_fn handler, void *user,
                         eddy_subscription_spec *out) {
    eddy_subscription_spec_init(out);
    out->name = src->sub_name;
    out->pattern = src->subject;
    out->shape = EDDY_COMPETING;
    out->group = src->group;
    out->delivery = EDDY_AT_LEAST_ONCE;
    out->handler = handler;
    out->user = user;
    out->paused = true; /* until the projection is registered */
}

bool eddy__push_gate(eddy__push_set *s, eddy__push_source *src, bool *pause) {
    pthread_mutex_lock(&s->lock);
    eddy_push_state state = src->state;
    pthread_mutex_unlock(&s->lock);
    *pause = state == EDDY_PUSH_FAILED;
    return eddy__push_consuming(state);
}

static void fill(const eddy__push_source *src, eddy_push_progress *out) {
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    out->id = src->id;
    out->state = src->state;
    out->replayed = src->replayed;
    out->position = src->position;
    out->head = src->head;
    out->rate = src->rate;
    out->eta_seconds = src->eta;
    out->failure = src->failure;
}

/* Under the lock. True when the source moved to FAILED now. */
static bool fail_locked(eddy__push_source *src, eddy_status st, const char *detail) {
    if (src->state == EDDY_PUSH_FAILED)
        return false;
    src->state = EDDY_PUSH_FAILED;
    src->failure.status = st;
    snprintf(src->failure.detail, sizeof(src->failure.detail), "%s",
             detail && *detail ? detail : eddy_status_str(st));
    src->eta = -1;
    return true;
}

eddy__push_settled eddy__push_settle(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                                     eddy_route route, const eddy_error *err, bool has_projection,
                                     bool refuses_permanently) {
    eddy__push_settled r = {st, false, false};
    const char *detail = err && err->status == st ? err->detail : NULL;
    if (st == EDDY_OK) {
        r.handler = route == EDDY_ROUTE_DEFERRED ? EDDY_ERR_UNAVAILABLE : EDDY_OK;
        return r;
    }
    if (st == EDDY_ERR_UNREADABLE_FILTER || (st == EDDY_ERR_ILLEGAL_STATE && refuses_permanently)) {
        pthread_mutex_lock(&s->lock);
        r.failed = fail_locked(src, st, detail);
        pthread_mutex_unlock(&s->lock);
        if (r.failed)
            eddy__log(&s->log, EDDY_LOG_ERROR,
                      "push source '%s' stops consuming (%s: %s): its messages stay with the "
                      "broker for the feed that replaces this one",
                      src->id, eddy_status_name(st), detail ? detail : "");
        r.handler = EDDY_ERR_UNAVAILABLE;
        r.pause = true;
        return r;
    }
    if (st == EDDY_ERR_ILLEGAL_STATE && !has_projection) {
        r.handler = EDDY_ERR_UNAVAILABLE;
        return r;
    }
    /* A pending status is not final: treat it as the failure the bus would make of it. */
    r.handler = st == EDDY_PENDING ? EDDY_ERR_HANDLER_FAILED : st;
    return r;
}

void eddy__push_estimate(long long p0, long long t0_ms, long long position, long long head,
                         long long now_ms, double *rate, double *eta) {
    *rate = 0;
    *eta = -1;
    if (now_ms > t0_ms && position > p0)
        *rate = (double)(position - p0) * 1000.0 / (double)(now_ms - t0_ms);
    if (head > 0 && position >= head)
        *eta = 0;
    else if (*rate > 0)
        *eta = (double)(head - position) / *rate;
}

void eddy__push_catching_up(eddy__push_set *s, eddy__push_source *src, long long now_ms,
                            eddy_push_progress *out) {
    pthread_mutex_lock(&s->lock);
    if (src->state == EDDY_PUSH_NOT_STARTED) {
        src->state = EDDY_PUSH_CATCHING_UP;
        src->replayed = 0;
        src->position = src->head = 0;
        src->rate = 0;
        src->eta = -1;
        /* A catch-up replays from the start of the store: the rate counts from position 0 and
         * from now. */
        src->sampled = true;
        src->p0 = 0;
        src->t0_ms = now_ms;
    }
    fill(src, out);
    pthread_mutex_unlock(&s->lock);
}

/* Under the lock. */
static void take(eddy__push_source *src, const eddy_feed_info *info, long long now_ms) {
    src->replayed = info->replayed;
    src->position = info->position;
    src->head = info->head;
    if (!src->sampled) {
        /* The first snapshot is where this catch-up started from: the rate counts from it. */
        src->sampled = true;
        src->p0 = info->position;
        src->t0_ms = now_ms;
    }
    eddy__push_estimate(src->p0, src->t0_ms, src->position, src->head, now_ms, &src->rate,
                        &src->eta);
}

bool eddy__push_sample(eddy__push_set *s, eddy__push_source *src, const eddy_feed_info *info,
                       long long now_ms, eddy_push_progress *out) {
    pthread_mutex_lock(&s->lock);
    bool catching = src->state == EDDY_PUSH_CATCHING_UP;
    if (catching) {
        take(src, info, now_ms);
        fill(src, out);
    }
    pthread_mutex_unlock(&s->lock);
    return catching;
}

void eddy__push_ended(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                      const eddy_error *err, const eddy_feed_info *info, long long now_ms,
                      eddy_push_progress *out) {
    pthread_mutex_lock(&s->lock);
    bool failed_now = false;
    bool stopped = false;
    if (src->state == EDDY_PUSH_CATCHING_UP) {
        if (info)
            take(src, info, now_ms);
        if (st == EDDY_OK && (!info || (info->live && !info->failed))) {
            src->state = EDDY_PUSH_LIVE;
            src->eta = 0;
        } else if ((st == EDDY_OK || st == EDDY_ERR_CANCELLED) && !(info && info->failed)) {
            /* Stopped (eddy_domain_stop_catch_up) or cancelled (freeing the sources) before
             * the feed went live: not the feed's failure, but this source routes no more. */
            stopped = fail_locked(src, EDDY_ERR_CLOSED,
                                  "the catch-up was stopped before the feed went live");
        } else {
            eddy_status why = st != EDDY_OK ? st : EDDY_ERR_ILLEGAL_STATE;
            failed_now = fail_locked(src, why, err && err->status == why ? err->detail : NULL);
        }
    }
    fill(src, out);
    pthread_mutex_unlock(&s->lock);
    if (failed_now)
        eddy__log(&s->log, EDDY_LOG_ERROR, "push source '%s': the catch-up failed: %s: %s", src->id,
                  eddy_status_name(src->failure.status), src->failure.detail);
    else if (stopped)
        eddy__log(&s->log, EDDY_LOG_INFO, "push source '%s': %s", src->id, src->failure.detail);
}

void eddy__push_fail(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                     const eddy_error *err, eddy_push_progress *out) {
    pthread_mutex_lock(&s->lock);
    bool now = fail_locked(src, st, err && err->status == st ? err->detail : NULL);
    fill(src, out);
    pthread_mutex_unlock(&s->lock);
    if (now)
        eddy__log(&s->log, EDDY_LOG_ERROR, "push source '%s' failed to start: %s: %s", src->id,
                  eddy_status_name(st), src->failure.detail);
}

void eddy__push_snapshot(eddy__push_set *s, eddy__push_source *src, eddy_push_progress *out) {
    pthread_mutex_lock(&s->lock);
    fill(src, out);
    pthread_mutex_unlock(&s->lock);
}

eddy_status eddy__push_stats(eddy__push_set *s, const char *id, eddy_push_progress *out) {
    eddy__push_source *src = id && out ? eddy__push_set_find(s, id) : NULL;
    if (!src)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy_feed_info info;
    if (!(s->ops->stats(src->feed, &info) == EDDY_OK &&
          eddy__push_sample(s, src, &info, eddy__push_now_ms(), out)))
        eddy__push_snapshot(s, src, out);
    return EDDY_OK;
}

bool eddy__push_any_catching_up(eddy__push_set *s) {
    pthread_mutex_lock(&s->lock);
    bool any = false;
    for (size_t i = 0; i < s->n && !any; i++)
        any = s->v[i]->state == EDDY_PUSH_CATCHING_UP;
    pthread_mutex_unlock(&s->lock);
    return any;
}

eddy_status eddy__push_set_catching(eddy__push_set *s, eddy__push_source ***out, size_t *n) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&s->lock);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += s->v[i]->state == EDDY_PUSH_CATCHING_UP;
    eddy__push_source **v = k ? malloc(k * sizeof(*v)) : NULL;
    if (k && !v) {
        pthread_mutex_unlock(&s->lock);
        return EDDY_ERR_NOMEM;
    }
    k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i]->state == EDDY_PUSH_CATCHING_UP)
            v[k++] = s->v[i];
    pthread_mutex_unlock(&s->lock);
    *out = v;
    *n = k;
    return EDDY_OK;
}

/* ---- the drive -------------------------------------------------------------------------- */

static bool closing(eddy__push_set *s) { return s->ops->closing && s->ops->closing(s->fe); }

void eddy__push_follow(eddy__push_set *s, eddy__push_source *src) {
    eddy_error e = {EDDY_OK, ""};
    bool consuming = eddy__push_admits(s, src);
    if (s->ops->follow(s->fe, src->sub_name, consuming, &e) != EDDY_OK)
        eddy__log(&s->log, EDDY_LOG_WARN, "push source '%s': could not %s its subscription: %s",
                  src->id, consuming ? "resume" : "pause", e.detail);
}

bool eddy__push_let_in(eddy__push_set *s, eddy__push_source *src) {
    bool pause = false;
    if (eddy__push_gate(s, src, &pause))
        return true;
    if (pause)
        eddy__push_follow(s, src);
    return false;
}

bool eddy__push_admit(eddy__push_set *s, eddy__push_source *src, const eddy_delivery *d,
                      const eddy_event **ev, eddy_event_meta *meta, const eddy_event_meta **metap) {
    if (!eddy__push_let_in(s, src))
        return false;
    *ev = eddy_delivery_event(d);
    *metap = eddy_delivery_stored_meta(d, meta) ? meta : NULL;
    return true;
}

eddy_status eddy__push_settle_routed(eddy__push_set *s, eddy__push_source *src,
                                     const eddy_event *ev, eddy_status st, eddy_route route,
                                     const eddy_error *err) {
    bool has_projection = true, refuses = false;
    if (st == EDDY_ERR_ILLEGAL_STATE) {
        has_projection = s->ops->has_projection(src->feed);
        refuses = s->ops->refuses_permanently(src->feed);
    }
    eddy_push_progress p;
    s->ops->enter(s->fe);
    eddy__push_settled r = eddy__push_settle(s, src, st, route, err, has_projection, refuses);
    if (r.failed)
        eddy__push_snapshot(s, src, &p);
    s->ops->leave(s->fe, r.failed ? &p : NULL, r.failed);
    if (r.pause && !closing(s))
        eddy__push_follow(s, src);
    if (!closing(s))
        eddy__push_notify(&s->opts.observer, &s->log, ev, st, route, err);
    return r.handler;
}

eddy_status eddy__push_refused(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                               const eddy_error *e, eddy_error *err) {
    eddy_push_progress p;
    s->ops->enter(s->fe);
    eddy__push_fail(s, src, st, e, &p);
    s->ops->leave(s->fe, &p, true);
    return eddy__fail(err, st, "push source '%s': %s", src->id, e->detail);
}

eddy_status eddy__push_begin(eddy__push_set *s, eddy__push_source *src, eddy_error *err) {
    eddy_error e = {EDDY_OK, ""};
    eddy_push_progress p;
    eddy_status st =
        s->ops->register_projection(src->feed, src->id, &src->projection, src->filter, &e);
    if (st != EDDY_OK)
        return eddy__push_refused(s, src, st, &e, err);
    s->ops->enter(s->fe);
    eddy__push_catching_up(s, src, eddy__push_now_ms(), &p);
    s->ops->leave(s->fe, &p, true);
    if (closing(s)) /* the callback freed the sources */
        return eddy__fail(err, EDDY_ERR_CLOSED, "the push sources were freed");
    eddy__push_follow(s, src);
    return EDDY_OK;
}

void eddy__push_caught_up(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                          const eddy_error *err, eddy_push_progress *out) {
    eddy_feed_info info;
    bool has_info = s->ops->stats(src->feed, &info) == EDDY_OK;
    s->ops->enter(s->fe);
    eddy__push_ended(s, src, st, err, has_info ? &info : NULL, eddy__push_now_ms(), out);
    s->ops->leave(s->fe, out, true);
    if (!closing(s))
        eddy__push_follow(s, src);
}

eddy_status eddy__push_start_ended(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                                   const eddy_error *e, eddy_error *err) {
    eddy_push_progress p;
    eddy__push_caught_up(s, src, st, e, &p);
    if (st != EDDY_OK)
        return eddy__fail(err, st, "push source '%s': %s", src->id, e ? e->detail : "");
    if (p.state == EDDY_PUSH_FAILED)
        return eddy__fail(err, p.failure.status, "push source '%s': %s", src->id, p.failure.detail);
    return EDDY_OK;
}

/* A claimed source's start: its registration and report here, its catch-up the front end's. */
static eddy_status start(eddy__push_set *s, eddy__push_source *src, void *arg, eddy_error *err) {
    eddy_status st = eddy__push_begin(s, src, err);
    return st != EDDY_OK ? st : s->ops->start(s->fe, src, arg, err);
}

eddy_status eddy__push_start_each(eddy__push_set *s, eddy__push_source *const *srcs, size_t n,
                                  void *arg, eddy_error *first_err) {
    eddy_status first = EDDY_OK;
    for (size_t i = 0; i < n && !closing(s); i++) {
        eddy_error e = {EDDY_OK, ""};
        eddy_status st = start(s, srcs[i], arg, &e);
        if (st != EDDY_OK && first == EDDY_OK && !closing(s)) {
            first = st;
            if (first_err)
                *first_err = e;
        }
    }
    return first;
}

eddy_status eddy__push_start_added(eddy__push_set *s, eddy__push_source *src, void *arg,
                                   eddy_error *err) {
    if (s->opts.mode == EDDY_PUSH_AUTOMATIC && eddy__push_set_claim_one(s, src))
        return start(s, src, arg, err);
    return EDDY_OK;
}

bool eddy__push_sample_all(eddy__push_set *s) {
    eddy__push_source **v;
    size_t n;
    if (eddy__push_set_catching(s, &v, &n) != EDDY_OK)
        return true; /* try again at the next tick */
    for (size_t i = 0; i < n && !closing(s); i++) {
        eddy_feed_info info;
        eddy_push_progress p;
        /* Sampled and told between enter and leave, so a report never follows the end. */
        s->ops->enter(s->fe);
        bool told = s->ops->stats(v[i]->feed, &info) == EDDY_OK &&
                    eddy__push_sample(s, v[i], &info, eddy__push_now_ms(), &p);
        s->ops->leave(s->fe, told ? &p : NULL, false);
    }
    free(v);
    return n > 0;
}
