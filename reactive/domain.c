/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds on the reactive front end: a reactive catch-up feed (feed.c), built at
 * register, under the decisions of src/store/domain.c (registry, "no projection", routing) and of the
 * feed core (deferring instead of holding). This file only asks, calls and reports; every
 * completion goes through the catch-up feed's queue, so it runs on the loop, never inside the
 * call, exactly once (eddy_rfeed_free completes what is pending with EDDY_ERR_CLOSED).
 *
 * Invariants:
 * - `feed` is set once, before the core marks the projection registered, and freed only by
 *   eddy_rdomain_free.
 * - A route record carries everything its completion needs (the user's callback, the decoded
 *   event and the codec to release it), so a completion never touches the domain, which a
 *   callback may have freed meanwhile.
 */
#include <stdlib.h>

#include "eddy/rdomain.h"
#include "error.h"
#include "rfeed_hooks.h"
#include "store/domain.h"

struct eddy_rdomain_feed {
    eddy__domain *core;
    struct ev_loop *loop;
    eddy_rstore *store;
    eddy_rcheckpoints ckpt;
    bool has_ckpt;
    eddy_rfeed *feed; /* NULL until registered */
};

eddy_status eddy_rdomain_new(struct ev_loop *loop, eddy_rstore *store, const eddy_feed_config *cfg,
                             const eddy_rcheckpoints *ckpt, eddy_rdomain_feed **out,
                             eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!loop || !store || !cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop, store or cfg is NULL");
    if (cfg->checkpoints)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: checkpoints must be NULL on the reactive feed (pass "
                          "asynchronous eddy_rcheckpoints to eddy_rdomain_new)");
    if (ckpt && (!ckpt->ops || !ckpt->ops->exists || !ckpt->ops->save || !ckpt->ops->remove))
        return eddy__feed_checkpoints_incomplete(NULL, err);
    eddy_rdomain_feed *d = calloc(1, sizeof(*d));
    if (!d)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__domain_new(cfg, &d->core, err);
    if (st != EDDY_OK) {
        free(d);
        return st;
    }
    d->loop = loop;
    d->store = store;
    if (ckpt) {
        d->ckpt = *ckpt;
        d->has_ckpt = true;
    }
    *out = d;
    return EDDY_OK;
}

void eddy_rdomain_free(eddy_rdomain_feed *d) {
    if (!d)
        return;
    eddy_rfeed_free(d->feed);
    eddy__domain_free(d->core); /* releases the id */
    free(d);
}

/* The registered projection's catch-up feed (eddy__domain_register). */
static eddy_status build_feed(const eddy_feed_config *fc, void *user, eddy__feed **core,
                              eddy_error *err) {
    eddy_rdomain_feed *d = user;
    eddy_status st =
        eddy_rfeed_new(d->loop, d->store, fc, d->has_ckpt ? &d->ckpt : NULL, &d->feed, err);
    if (st == EDDY_OK)
        *core = eddy__rfeed_core(d->feed);
    return st;
}

eddy_status eddy_rdomain_register(eddy_rdomain_feed *d, const char *id,
                                  const eddy_projection *projection, const eddy_filter *filter,
                                  eddy_error *err) {
    if (!d)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    return eddy__domain_register(d->core, id, projection, filter, build_feed, d, err);
}

bool eddy_rdomain_has_projection(eddy_rdomain_feed *d) {
    return d && eddy__domain_registered(d->core);
}

const char *eddy_rdomain_projection_id(eddy_rdomain_feed *d) {
    return d ? eddy__domain_id(d->core) : NULL;
}

eddy_status eddy_rdomain_catch_up_all(eddy_rdomain_feed *d, eddy_rfeed_done_fn done, void *user,
                                      eddy_error *err) {
    eddy_status st = eddy__domain_check(d ? d->core : NULL, NULL, "catch up all", err);
    return st != EDDY_OK ? st : eddy_rfeed_catch_up(d->feed, done, user, err);
}

eddy_status eddy_rdomain_catch_up(eddy_rdomain_feed *d, const char *id, eddy_rfeed_done_fn done,
                                  void *user, eddy_error *err) {
    eddy_status st = eddy__domain_check_id(d ? d->core : NULL, id, "catch up", err);
    return st != EDDY_OK ? st : eddy_rfeed_catch_up(d->feed, done, user, err);
}

eddy_status eddy_rdomain_go_live(eddy_rdomain_feed *d, const char *id, eddy_rfeed_done_fn done,
                                 void *user, eddy_error *err) {
    eddy_status st = eddy__domain_check_id(d ? d->core : NULL, id, "go live", err);
    return st != EDDY_OK ? st : eddy_rfeed_go_live(d->feed, done, user, err);
}

void eddy_rdomain_stop_catch_up(eddy_rdomain_feed *d) {
    if (eddy_rdomain_has_projection(d))
        eddy_rfeed_stop_catch_up(d->feed);
}

eddy_status eddy_rdomain_accept(eddy_rdomain_feed *d, const eddy_event_meta *meta, void *event,
                                eddy_rfeed_done_fn done, void *user, eddy_error *err) {
    if (!event || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event or done is NULL");
    eddy_status st = eddy__domain_check(d ? d->core : NULL, NULL, "accept", err);
    if (st != EDDY_OK)
        return st;
    st = meta ? eddy_rfeed_accept_meta(d->feed, meta, event, done, user)
              : eddy_rfeed_accept(d->feed, event, done, user);
    return st != EDDY_OK ? eddy__fail(err, st, "the event was not accepted") : st;
}

/* ---- routing ----------------------------------------------------------------------------- */

typedef struct route_rec {
    eddy_route_done_fn done;
    void *user;
    eddy_route route; /* the answer when st is EDDY_OK and nothing was fed */
    void *event;      /* a routed event to release, or NULL */
    eddy_feed_free_fn free_event;
    void *codec_user;
} route_rec;

static void route_done(eddy_status st, const eddy_error *err, void *user) {
    route_rec *r = user;
    bool deferred = st == EDDY_PENDING; /* eddy__rfeed_accept_or_defer: not live, not kept */
    if (deferred)
        st = EDDY_OK;
    eddy_route route = eddy__domain_outcome(st, deferred, r->route);
    if (r->event && r->free_event)
        r->free_event(r->event, r->codec_user);
    eddy_route_done_fn done = r->done;
    void *u = r->user;
    free(r);
    done(st, route, st == EDDY_OK ? NULL : err, u);
}

static route_rec *route_rec_new(eddy_rdomain_feed *d, eddy_route_done_fn done, void *user) {
    route_rec *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->done = done;
    r->user = user;
    eddy__domain_codec(d->core, &r->free_event, &r->codec_user);
    return r;
}

/* Feeds a decoded event without holding it; r->event (when set) is released at completion. */
static eddy_status feed_or_defer(eddy_rdomain_feed *d, const eddy_event_meta *meta, void *event,
                                 route_rec *r, eddy_error *err) {
    r->route = EDDY_ROUTE_DELIVERED;
    eddy_status st = eddy__rfeed_accept_or_defer(d->feed, meta, event, route_done, r);
    if (st != EDDY_OK) { /* refused up front: the completion does not run */
        if (r->event && r->free_event)
            r->free_event(r->event, r->codec_user);
        free(r);
        return eddy__fail(err, st, "the event was not accepted");
    }
    return EDDY_OK;
}

eddy_status eddy_rdomain_accept_or_defer(eddy_rdomain_feed *d, const eddy_event_meta *meta,
                                         void *event, eddy_route_done_fn done, void *user,
                                         eddy_error *err) {
    if (!event || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event or done is NULL");
    eddy_status st = eddy__domain_check(d ? d->core : NULL, NULL, "accept or defer", err);
    if (st != EDDY_OK)
        return st;
    route_rec *r = route_rec_new(d, done, user);
    if (!r)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return feed_or_defer(d, meta, event, r, err); /* the caller's event: not released */
}

eddy_status eddy_rdomain_route(eddy_rdomain_feed *d, const eddy_event *ev,
                               const eddy_event_meta *meta, eddy_route_done_fn done, void *user,
                               eddy_error *err) {
    if (!d || !ev || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed, event or done is NULL");
    void *event = NULL;
    eddy_route route;
    eddy_error rerr = {0};
    eddy_status st = eddy__domain_route(d->core, ev, meta, &route, &event, &rerr);
    if (st == EDDY_ERR_ILLEGAL_STATE || st == EDDY_ERR_UNREADABLE_FILTER ||
        st == EDDY_ERR_INVALID_ARGUMENT) {
        /* Refusals that hold for every event: up front. */
        if (err)
            *err = rerr;
        return st;
    }
    route_rec *r = route_rec_new(d, done, user);
    if (!r) {
        eddy_feed_free_fn free_event;
        void *codec_user;
        eddy__domain_codec(d->core, &free_event, &codec_user);
        if (event && free_event)
            free_event(event, codec_user);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    if (st != EDDY_OK || !event) {
        /* Filtered, or not decoded: answered on the loop. */
        r->route = route;
        if (eddy__rfeed_post(d->feed, route_done, r, st, &rerr) != EDDY_OK) {
            if (event && r->free_event)
                r->free_event(event, r->codec_user);
            free(r);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        }
        return EDDY_OK;
    }
    r->event = event;
    return feed_or_defer(d, meta, event, r, err);
}

/* ---- state ------------------------------------------------------------------------------- */

bool eddy_rdomain_ready_for_live_delivery(eddy_rdomain_feed *d) {
    return eddy__domain_ready(d ? d->core : NULL);
}

bool eddy_rdomain_refuses_permanently(eddy_rdomain_feed *d) {
    return eddy__domain_refuses(d ? d->core : NULL);
}

bool eddy_rdomain_failure(eddy_rdomain_feed *d, eddy_error *cause) {
    return eddy__domain_failure(d ? d->core : NULL, cause);
}

eddy_status eddy_rdomain_stats(eddy_rdomain_feed *d, eddy_feed_info *out) {
    return eddy__domain_stats(d ? d->core : NULL, out);
}
