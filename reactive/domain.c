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
 * - What a routed event becomes is src/store/domain.c's (eddy__domain_route_feed): its record
 *   carries everything the completion needs, so a completion never touches the domain, which a
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
    if (ckpt && !EDDY__CHECKPOINTS_COMPLETE(ckpt))
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
    return eddy__domain_register(d ? d->core : NULL, id, projection, filter, build_feed, d, err);
}

bool eddy_rdomain_has_projection(eddy_rdomain_feed *d) {
    return eddy__domain_registered(d ? d->core : NULL);
}

const char *eddy_rdomain_projection_id(eddy_rdomain_feed *d) {
    return eddy__domain_id(d ? d->core : NULL);
}

/* A run call: the core checks it and says which of the catch-up feed's calls it is. */
static eddy_status run(eddy_rdomain_feed *d, eddy__domain_run what, const char *id,
                       eddy_rfeed_done_fn done, void *user, eddy_error *err) {
    eddy_status st = eddy__domain_run_check(d ? d->core : NULL, what, id, err);
    if (st != EDDY_OK)
        return st;
    return what == EDDY__DOMAIN_GO_LIVE ? eddy_rfeed_go_live(d->feed, done, user, err)
                                        : eddy_rfeed_catch_up(d->feed, done, user, err);
}

eddy_status eddy_rdomain_catch_up_all(eddy_rdomain_feed *d, eddy_rfeed_done_fn done, void *user,
                                      eddy_error *err) {
    return run(d, EDDY__DOMAIN_CATCH_UP_ALL, NULL, done, user, err);
}

eddy_status eddy_rdomain_catch_up(eddy_rdomain_feed *d, const char *id, eddy_rfeed_done_fn done,
                                  void *user, eddy_error *err) {
    return run(d, EDDY__DOMAIN_CATCH_UP, id, done, user, err);
}

eddy_status eddy_rdomain_go_live(eddy_rdomain_feed *d, const char *id, eddy_rfeed_done_fn done,
                                 void *user, eddy_error *err) {
    return run(d, EDDY__DOMAIN_GO_LIVE, id, done, user, err);
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

/* ---- routing: src/store/domain.c decides, the catch-up feed's queue answers on the loop ---- */

static eddy_status feed_or_defer(void *ctx, const eddy_event_meta *meta, void *event,
                                 eddy_feed_done_fn done, void *user) {
    return eddy__rfeed_accept_or_defer(((eddy_rdomain_feed *)ctx)->feed, meta, event, done, user);
}

static eddy_status post(void *ctx, eddy_feed_done_fn done, void *user, eddy_status st,
                        const eddy_error *err) {
    return eddy__rfeed_post(((eddy_rdomain_feed *)ctx)->feed, done, user, st, err);
}

eddy_status eddy_rdomain_accept_or_defer(eddy_rdomain_feed *d, const eddy_event_meta *meta,
                                         void *event, eddy_route_done_fn done, void *user,
                                         eddy_error *err) {
    if (!event || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event or done is NULL");
    eddy__domain_feeder fd = {feed_or_defer, post, d, true};
    return eddy__domain_accept_or_defer(d ? d->core : NULL, meta, event, &fd, done, user, err);
}

eddy_status eddy_rdomain_route(eddy_rdomain_feed *d, const eddy_event *ev,
                               const eddy_event_meta *meta, eddy_route_done_fn done, void *user,
                               eddy_error *err) {
    if (!d || !ev || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed, event or done is NULL");
    eddy__domain_feeder fd = {feed_or_defer, post, d, true};
    return eddy__domain_route_feed(d->core, ev, meta, &fd, done, user, err);
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
