/* SPDX-License-Identifier: BSD-3-Clause */
/* Domain event feeds on the blocking front end: a blocking catch-up feed (feed.c), built at
 * register, under the decisions of src/store/domain.c (registry, "no projection", routing) and of the
 * feed core (deferring instead of holding). This file only asks, calls and reports.
 *
 * Invariants:
 * - `feed` is set once, before the core marks the projection registered, and freed only by
 *   eddy_domain_free; a call that saw the registration may use it without a lock.
 * - What a routed event becomes is src/store/domain.c's (eddy__domain_route_feed); here its
 *   feeding and its answer both run before the call returns.
 */
#include <stdlib.h>

#include "eddy/domain.h"
#include "error.h"
#include "feed_hooks.h"
#include "store/domain.h"

struct eddy_domain_feed {
    eddy__domain *core;
    eddy_store *store;
    eddy_feed *feed; /* NULL until registered */
};

eddy_status eddy_domain_new(eddy_store *store, const eddy_feed_config *cfg, eddy_domain_feed **out,
                            eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!store)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store is NULL");
    eddy_domain_feed *d = calloc(1, sizeof(*d));
    if (!d)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__domain_new(cfg, &d->core, err);
    if (st != EDDY_OK) {
        free(d);
        return st;
    }
    d->store = store;
    *out = d;
    return EDDY_OK;
}

void eddy_domain_free(eddy_domain_feed *d) {
    if (!d)
        return;
    eddy_feed_free(d->feed);
    eddy__domain_free(d->core); /* releases the id */
    free(d);
}

/* The registered projection's catch-up feed (eddy__domain_register). */
static eddy_status build_feed(const eddy_feed_config *fc, void *user, eddy__feed **core,
                              eddy_error *err) {
    eddy_domain_feed *d = user;
    eddy_status st = eddy_feed_new(d->store, fc, &d->feed, err);
    if (st == EDDY_OK)
        *core = eddy__bfeed_core(d->feed);
    return st;
}

eddy_status eddy_domain_register(eddy_domain_feed *d, const char *id,
                                 const eddy_projection *projection, const eddy_filter *filter,
                                 eddy_error *err) {
    return eddy__domain_register(d ? d->core : NULL, id, projection, filter, build_feed, d, err);
}

bool eddy_domain_has_projection(eddy_domain_feed *d) {
    return eddy__domain_registered(d ? d->core : NULL);
}

const char *eddy_domain_projection_id(eddy_domain_feed *d) {
    return eddy__domain_id(d ? d->core : NULL);
}

/* A run call: the core checks it and says which of the catch-up feed's calls it is. */
static eddy_status run(eddy_domain_feed *d, eddy__domain_run what, const char *id,
                       eddy_cancel *cancel, eddy_error *err) {
    eddy_status st = eddy__domain_run_check(d ? d->core : NULL, what, id, err);
    if (st != EDDY_OK)
        return st;
    return what == EDDY__DOMAIN_GO_LIVE ? eddy_feed_go_live(d->feed, cancel, err)
                                        : eddy_feed_catch_up(d->feed, cancel, err);
}

eddy_status eddy_domain_catch_up_all(eddy_domain_feed *d, eddy_cancel *cancel, eddy_error *err) {
    return run(d, EDDY__DOMAIN_CATCH_UP_ALL, NULL, cancel, err);
}

eddy_status eddy_domain_catch_up(eddy_domain_feed *d, const char *id, eddy_cancel *cancel,
                                 eddy_error *err) {
    return run(d, EDDY__DOMAIN_CATCH_UP, id, cancel, err);
}

eddy_status eddy_domain_go_live(eddy_domain_feed *d, const char *id, eddy_cancel *cancel,
                                eddy_error *err) {
    return run(d, EDDY__DOMAIN_GO_LIVE, id, cancel, err);
}

void eddy_domain_stop_catch_up(eddy_domain_feed *d) {
    if (eddy_domain_has_projection(d))
        eddy_feed_stop_catch_up(d->feed);
}

eddy_status eddy_domain_accept(eddy_domain_feed *d, const eddy_event_meta *meta, void *event,
                               eddy_cancel *cancel, eddy_error *err) {
    eddy_status st = eddy__domain_check(d ? d->core : NULL, NULL, "accept", err);
    if (st != EDDY_OK)
        return st;
    return meta ? eddy_feed_accept_meta(d->feed, meta, event, cancel, err)
                : eddy_feed_accept(d->feed, event, cancel, err);
}

/* ---- routing: src/store/domain.c decides; here everything is answered before the call returns */

static eddy_status feed_or_defer(void *ctx, const eddy_event_meta *meta, void *event,
                                 eddy_feed_done_fn done, void *user) {
    return eddy__bfeed_accept_or_defer(((eddy_domain_feed *)ctx)->feed, meta, event, done, user);
}

/* The answer, kept for the caller. */
typedef struct answer {
    eddy_status st;
    eddy_route route;
    eddy_error *err;
} answer;

static void answered(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    answer *a = user;
    a->st = st;
    a->route = route;
    if (a->err && err)
        *a->err = *err;
}

/* What the caller gets: the answer, or an error returned without one (route DEFERRED). */
static eddy_status give(eddy_status st, const answer *a, eddy_route *out) {
    *out = st == EDDY_OK ? a->route : EDDY_ROUTE_DEFERRED;
    return st == EDDY_OK ? a->st : st;
}

eddy_status eddy_domain_accept_or_defer(eddy_domain_feed *d, const eddy_event_meta *meta,
                                        void *event, eddy_route *out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    eddy__domain_feeder fd = {feed_or_defer, NULL, d, false};
    answer a = {EDDY_OK, EDDY_ROUTE_DEFERRED, err};
    return give(
        eddy__domain_accept_or_defer(d ? d->core : NULL, meta, event, &fd, answered, &a, err), &a,
        out);
}

eddy_status eddy_domain_route(eddy_domain_feed *d, const eddy_event *ev,
                              const eddy_event_meta *meta, eddy_route *out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = EDDY_ROUTE_FILTERED;
    if (!d)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    eddy__domain_feeder fd = {feed_or_defer, NULL, d, false};
    answer a = {EDDY_OK, EDDY_ROUTE_DEFERRED, err};
    return give(eddy__domain_route_feed(d->core, ev, meta, &fd, answered, &a, err), &a, out);
}

bool eddy_domain_ready_for_live_delivery(eddy_domain_feed *d) {
    return eddy__domain_ready(d ? d->core : NULL);
}

bool eddy_domain_refuses_permanently(eddy_domain_feed *d) {
    return eddy__domain_refuses(d ? d->core : NULL);
}

bool eddy_domain_failure(eddy_domain_feed *d, eddy_error *cause) {
    return eddy__domain_failure(d ? d->core : NULL, cause);
}

eddy_status eddy_domain_stats(eddy_domain_feed *d, eddy_feed_info *out) {
    return eddy__domain_stats(d ? d->core : NULL, out);
}
