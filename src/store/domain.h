/* SPDX-License-Identifier: BSD-3-Clause */
/* The domain event feed's decisions, shared by both front ends (blocking/domain.c,
 * reactive/domain.c): the process-wide registry of projection ids, the checks of calls that
 * need the projection ("no projection", "not the registered id"), and routing a CloudEvent
 * (the sticky unreadable filter, the filter match with the feed's reader, decoding only a match).
 * What becomes of a decoded event (applied, deferred, refused because the catch-up failed) is
 * decided by the catch-up feed's core (src/store/feed.c, eddy__accept_flags.defer), which the front
 * ends' catch-up feed wraps; feeding a routed event and answering (the release of the event,
 * the route reported) is decided here once (eddy__domain_route_feed). The front ends only give
 * their feed's accept (eddy__domain_feeder) and their way of answering.
 *
 * Thread: every function is safe from any thread (one lock per domain, one for the registry).
 * Once registered, the projection's id, filter and codec never change until the domain is
 * freed, so they are read without the lock after a call saw the registration. */
#ifndef EDDY_SRC_DOMAIN_H
#define EDDY_SRC_DOMAIN_H

#include <stdbool.h>

#include "eddy/domain.h"
#include "eddy/feed.h"
#include "store/feed.h"

typedef struct eddy__domain eddy__domain;

/* Checks cfg (id, projection and filter unset; the codec and the options as eddy_feed_new
 * checks them: EDDY_ERR_INVALID_SPEC) and copies it. NULL *out on failure. */
eddy_status eddy__domain_new(const eddy_feed_config *cfg, eddy__domain **out, eddy_error *err);
/* Frees the domain and releases its id in the registry. The front end frees its catch-up feed
 * first. NULL is a no-op. */
void eddy__domain_free(eddy__domain *d);

/* The front ends' register: checks (one projection only: EDDY_ERR_ILLEGAL_STATE; the id:
 * EDDY_ERR_INVALID_ARGUMENT, also when registered anywhere in the process; apply required:
 * EDDY_ERR_INVALID_SPEC), reserves the id, copies id, projection and filter, and has
 * build(feed_cfg, user, &core, err) build the catch-up feed of feed_cfg (its pointers live as
 * the domain) and give its core, which the state calls below read until the domain is freed.
 * When build returns EDDY_OK the projection is registered; otherwise the id is released and the
 * copies forgotten. build's status, or the checks' (a NULL d: EDDY_ERR_INVALID_ARGUMENT, "feed is
 * NULL", the front ends' own domain being NULL). */
eddy_status eddy__domain_register(eddy__domain *d, const char *id,
                                  const eddy_projection *projection, const eddy_filter *filter,
                                  eddy_status (*build)(const eddy_feed_config *feed_cfg, void *user,
                                                       eddy__feed **core, eddy_error *err),
                                  void *user, eddy_error *err);

bool eddy__domain_registered(eddy__domain *d);
/* The registered id, NULL when none. */
const char *eddy__domain_id(eddy__domain *d);

/* A call that needs the projection (what names it, for the detail): EDDY_ERR_ILLEGAL_STATE when
 * none is registered. With id (catch-up by id, go-live by id): EDDY_ERR_INVALID_ARGUMENT unless
 * it is the registered one. */
eddy_status eddy__domain_check(eddy__domain *d, const char *id, const char *what, eddy_error *err);
/* A call by id (catch-up, go-live): EDDY_ERR_INVALID_ARGUMENT for a NULL id, then
 * eddy__domain_check with it. */
eddy_status eddy__domain_check_id(eddy__domain *d, const char *id, const char *what,
                                  eddy_error *err);

/* The front ends' run calls on the registered projection's catch-up feed, checked alike. */
typedef enum eddy__domain_run {
    EDDY__DOMAIN_CATCH_UP_ALL, /* the registered projection, whatever its id */
    EDDY__DOMAIN_CATCH_UP,     /* by id */
    EDDY__DOMAIN_GO_LIVE       /* by id */
} eddy__domain_run;

/* Checks a run call: catch up all with eddy__domain_check, by id with eddy__domain_check_id
 * (each naming the call). EDDY_OK: run the catch-up feed's go-live for GO_LIVE, its catch-up
 * otherwise. */
eddy_status eddy__domain_run_check(eddy__domain *d, eddy__domain_run run, const char *id,
                                   eddy_error *err);

/* The route a routing or an accept-or-defer reports, from how it ended: EDDY_OK and deferred
 * (the feed did not take it): DEFERRED; EDDY_OK: route (DELIVERED when it was fed, what
 * routing found when nothing was); an error: DEFERRED (not applied: do not
 * acknowledge it). */
eddy_route eddy__domain_outcome(eddy_status st, bool deferred, eddy_route route);

/* ---- feeding a routed event: one path for both front ends ----------------------------------
 *
 * What becomes of an event given to the domain's accept-or-defer or route once the catch-up feed
 * answers: EDDY_PENDING from the feed means deferred (not taken, not kept), the outcome is mapped
 * with eddy__domain_outcome, a routed (decoded) event is released with the codec copied before it
 * was fed (nothing of the domain is touched after the feed called the projection, which may free
 * the domain), and done runs exactly once unless the call returns an error. */

/* The front end's catch-up feed, as the domain feeds it. feed: its accept with
 * eddy__accept_flags.defer; done runs exactly once, EDDY_PENDING for "deferred", before feed
 * returns or later; an error return is a refusal up front (done does not run). post: runs
 * done(st, err, user) later, on the front end's own turn (an error return: done does not run);
 * NULL: done runs at once. later: done may run after feed or post returned (the record is then allocated). ctx
 * is the front end's domain, so the catch-up feed is only read once the call was checked. */
typedef struct eddy__domain_feeder {
    eddy_status (*feed)(void *ctx, const eddy_event_meta *meta, void *event, eddy_feed_done_fn done,
                        void *user);
    eddy_status (*post)(void *ctx, eddy_feed_done_fn done, void *user, eddy_status st,
                        const eddy_error *err);
    void *ctx;
    bool later;
} eddy__domain_feeder;

/* How a routing or an accept-or-defer ended: st, the route (DEFERRED on an error), err (NULL
 * on EDDY_OK). The same as the public eddy_route_done_fn. */
typedef void (*eddy__route_done_fn)(eddy_status st, eddy_route route, const eddy_error *err,
                                    void *user);

/* Accept-or-defer: eddy__domain_check ("accept or defer") and EDDY_ERR_NOMEM returned; else the
 * event (the caller's: never released) is fed and done answers. */
eddy_status eddy__domain_accept_or_defer(eddy__domain *d, const eddy_event_meta *meta, void *event,
                                         const eddy__domain_feeder *fd, eddy__route_done_fn done,
                                         void *user, eddy_error *err);
/* Routes a CloudEvent: EDDY_ERR_ILLEGAL_STATE with no projection; the sticky
 * EDDY_ERR_UNREADABLE_FILTER (the first time it is found, it is recorded, and every later call
 * returns it, status and detail); EDDY_ERR_INVALID_ARGUMENT for no event; EDDY_ERR_NOMEM: all
 * returned. Then the filter match (no match: FILTERED, never decoded; a reader's error) and the
 * decoding of a match (decode's error; no event: FILTERED) are answered through fd->post, and a
 * decoded event is fed (and released once answered). */
eddy_status eddy__domain_route_feed(eddy__domain *d, const eddy_event *ev,
                                    const eddy_event_meta *meta, const eddy__domain_feeder *fd,
                                    eddy__route_done_fn done, void *user, eddy_error *err);

/* The registered projection's feed, for the front ends' state calls: with none, not ready, not
 * refusing, no failure and zeroed stats (EDDY_OK). stats: EDDY_ERR_INVALID_ARGUMENT for a NULL d
 * or out. NULL d: as with no projection. */
bool eddy__domain_ready(eddy__domain *d);
bool eddy__domain_refuses(eddy__domain *d);
bool eddy__domain_failure(eddy__domain *d, eddy_error *cause);
eddy_status eddy__domain_stats(eddy__domain *d, eddy_feed_info *out);

#endif
