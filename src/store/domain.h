/* SPDX-License-Identifier: BSD-3-Clause */
/* The domain event feed's decisions, shared by both front ends (blocking/domain.c,
 * reactive/domain.c): the process-wide registry of projection ids, the checks of calls that
 * need the projection ("no projection", "not the registered id"), and routing a CloudEvent
 * (the sticky unreadable filter, the filter match with the feed's reader, decoding only a match).
 * What becomes of a decoded event (applied, deferred, refused because the catch-up failed) is
 * decided by the catch-up feed's core (src/store/feed.c, eddy__accept_flags.defer), which the front
 * ends' catch-up feed wraps. The front ends only decode through here, call, apply and report.
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
 * copies forgotten. build's status, or the checks'. */
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

/* Routes a CloudEvent up to the point of feeding it: EDDY_ERR_ILLEGAL_STATE with no projection;
 * the sticky EDDY_ERR_UNREADABLE_FILTER (the first time it is found, it is recorded, and every
 * later call returns it, status and detail); the filter match (a reader's error is returned);
 * no match: *route FILTERED, *event NULL (never decoded); a match is decoded (decode's error is
 * returned; no event: FILTERED). EDDY_OK with *event set: the caller feeds it with
 * eddy__accept_flags.defer, maps the outcome with eddy__domain_outcome and releases the event
 * with the free function it took from eddy__domain_codec before the call. */
eddy_status eddy__domain_route(eddy__domain *d, const eddy_event *ev, const eddy_event_meta *meta,
                               eddy_route *route, void **event, eddy_error *err);

/* The user's free_event and its user, so a front end can release a routed event without
 * touching the domain again (it may be freed by a callback meanwhile). */
void eddy__domain_codec(eddy__domain *d, eddy_feed_free_fn *free_event, void **user);

/* The route a routing or an accept-or-defer reports, from how it ended: EDDY_OK and deferred
 * (the feed did not take it): DEFERRED; EDDY_OK: route (DELIVERED when it was fed, what
 * eddy__domain_route said when nothing was); an error: DEFERRED (not applied: do not
 * acknowledge it). */
eddy_route eddy__domain_outcome(eddy_status st, bool deferred, eddy_route route);

/* The registered projection's feed, for the front ends' state calls: with none, not ready, not
 * refusing, no failure and zeroed stats (EDDY_OK). stats: EDDY_ERR_INVALID_ARGUMENT for a NULL d
 * or out. NULL d: as with no projection. */
bool eddy__domain_ready(eddy__domain *d);
bool eddy__domain_refuses(eddy__domain *d);
bool eddy__domain_failure(eddy__domain *d, eddy_error *cause);
eddy_status eddy__domain_stats(eddy__domain *d, eddy_feed_info *out);

#endif
