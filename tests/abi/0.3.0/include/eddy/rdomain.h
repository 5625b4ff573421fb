/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — domain event feeds on the reactive (libev) front end.
 *
 * The mirror of domain.h over a reactive catch-up feed (rfeed.h): the same registration, the
 * same filter driving the catch-up's read and the routing of live CloudEvents, the same
 * outcomes (eddy_route), decided by the same core, so nothing is decided differently. Where the
 * blocking feed waits, these functions take a completion instead; the reactive feed's own
 * failure rules (rfeed.h) hold for the registered projection.
 *
 * A catch-up or go-live counts as running from the call that starts it
 * (eddy_rdomain_catch_up, eddy_rdomain_catch_up_all, eddy_rdomain_go_live) until its
 * completion runs.
 *
 * Refusals up front: a call refused for a reason that holds for every event or every call
 * returns it and does not call its completion: EDDY_ERR_INVALID_ARGUMENT (a NULL feed, event or
 * completion), EDDY_ERR_ILLEGAL_STATE with no projection registered (accept, accept-or-defer,
 * route, catch-up-all), EDDY_ERR_UNREADABLE_FILTER from route once the filter turned out
 * unreadable (sticky, as in domain.h), EDDY_ERR_CLOSED after eddy_rdomain_free, and the up-front
 * refusals of rfeed.h (a catch-up or go-live on a failed feed), EDDY_ERR_NOMEM. Every other
 * outcome comes through the completion.
 *
 * Callbacks: every completion runs exactly once, on the loop's thread, never inside the call
 * that asked for it, except where rfeed.h says otherwise: eddy_rdomain_stop_catch_up completes
 * the events it refuses before it returns, and eddy_rdomain_free completes everything still
 * pending with EDDY_ERR_CLOSED before it returns.
 *
 * Thread: every function must be called on the loop's thread. From inside a callback of the
 * feed (the projection's or a completion) every function may be called, eddy_rdomain_free
 * included: the feed is then released once the callback returns.
 */
#ifndef EDDY_RDOMAIN_H
#define EDDY_RDOMAIN_H

#include <ev.h>
#include <stdbool.h>

#include "eddy/domain.h"
#include "eddy/rfeed.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_rdomain_feed eddy_rdomain_feed;

/** Completion of an accept-or-defer or a route: on EDDY_OK, route says what to do with the
 * message (eddy_route); on an error the event was not applied (route is then meaningless):
 * do not acknowledge it. err is borrowed for the call (NULL on EDDY_OK). */
typedef void (*eddy_route_done_fn)(eddy_status st, eddy_route route, const eddy_error *err,
                                   void *user);

/** Builds a feed with no projection over a reactive store on loop. cfg as for eddy_domain_new
 * (id, projection and filter unset, else EDDY_ERR_INVALID_SPEC; cfg->checkpoints must be NULL,
 * as for eddy_rfeed_new); checkpoints (may be NULL: no checkpoint) is copied and its implementation
 * must outlive the feed. Ownership: loop and store are borrowed and must outlive the feed; cfg is
 * copied; on EDDY_OK *out is the caller's (eddy_rdomain_free). */
EDDY_EXPORT eddy_status eddy_rdomain_new(struct ev_loop *loop, eddy_rstore *store,
                                         const eddy_feed_config *cfg,
                                         const eddy_rcheckpoints *checkpoints,
                                         eddy_rdomain_feed **out, eddy_error *err);

/** As eddy_rfeed_free (everything pending completed with EDDY_ERR_CLOSED before it returns),
 * and releases the registered id. NULL is a no-op. */
EDDY_EXPORT void eddy_rdomain_free(eddy_rdomain_feed *feed);

/** As eddy_domain_register; builds the reactive catch-up feed underneath (id as its feed id).
 * Ownership: id, *projection and filter are copied. */
EDDY_EXPORT eddy_status eddy_rdomain_register(eddy_rdomain_feed *feed, const char *id,
                                              const eddy_projection *projection,
                                              const eddy_filter *filter, eddy_error *err);

EDDY_EXPORT bool eddy_rdomain_has_projection(eddy_rdomain_feed *feed);
/** The registered id (borrowed; lives as the feed), NULL when none is registered. */
EDDY_EXPORT const char *eddy_rdomain_projection_id(eddy_rdomain_feed *feed);

/** eddy_rfeed_catch_up for the registered projection: done runs once it ended.
 * EDDY_ERR_ILLEGAL_STATE (done not called) when none is registered. */
EDDY_EXPORT eddy_status eddy_rdomain_catch_up_all(eddy_rdomain_feed *feed, eddy_rfeed_done_fn done,
                                                  void *user, eddy_error *err);
/** The same for the projection registered as id: EDDY_ERR_INVALID_ARGUMENT (done not called)
 * when id is not the registered one. */
EDDY_EXPORT eddy_status eddy_rdomain_catch_up(eddy_rdomain_feed *feed, const char *id,
                                              eddy_rfeed_done_fn done, void *user, eddy_error *err);
/** eddy_rfeed_go_live for the projection registered as id: EDDY_ERR_INVALID_ARGUMENT (done not
 * called) when id is not the registered one. */
EDDY_EXPORT eddy_status eddy_rdomain_go_live(eddy_rdomain_feed *feed, const char *id,
                                             eddy_rfeed_done_fn done, void *user, eddy_error *err);
/** eddy_rfeed_stop_catch_up; no effect without a projection. */
EDDY_EXPORT void eddy_rdomain_stop_catch_up(eddy_rdomain_feed *feed);

/** eddy_rfeed_accept / eddy_rfeed_accept_meta (meta may be NULL; copied): held until the
 * feed is live, done runs once with the outcome. EDDY_ERR_ILLEGAL_STATE (done not called) with
 * no projection. Ownership: event stays the caller's until done runs. */
EDDY_EXPORT eddy_status eddy_rdomain_accept(eddy_rdomain_feed *feed, const eddy_event_meta *meta,
                                            void *event, eddy_rfeed_done_fn done, void *user,
                                            eddy_error *err);

/** As eddy_domain_accept_or_defer: the event is applied now (EDDY_ROUTE_DELIVERED) or not
 * kept (EDDY_ROUTE_DEFERRED), never held; done runs once on the loop with the outcome.
 * EDDY_ERR_ILLEGAL_STATE (done not called) with no projection. Ownership: event stays the
 * caller's until done runs; meta is borrowed for the call. */
EDDY_EXPORT eddy_status eddy_rdomain_accept_or_defer(eddy_rdomain_feed *feed,
                                                     const eddy_event_meta *meta, void *event,
                                                     eddy_route_done_fn done, void *user,
                                                     eddy_error *err);

/** As eddy_domain_route: matches ev against the registered filter, decodes a match (inside this
 * call) and feeds it without holding it; done runs once on the loop with the route or the
 * error (a decode error, EDDY_ERR_ILLEGAL_STATE for a matching event on a failed feed, the
 * apply's error). Returned (done not called): EDDY_ERR_ILLEGAL_STATE with no projection,
 * EDDY_ERR_UNREADABLE_FILTER (sticky). Ownership: ev and meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_rdomain_route(eddy_rdomain_feed *feed, const eddy_event *ev,
                                           const eddy_event_meta *meta, eddy_route_done_fn done,
                                           void *user, eddy_error *err);

/** As the eddy_domain_ functions of the same names. */
EDDY_EXPORT bool eddy_rdomain_ready_for_live_delivery(eddy_rdomain_feed *feed);
EDDY_EXPORT bool eddy_rdomain_refuses_permanently(eddy_rdomain_feed *feed);
EDDY_EXPORT bool eddy_rdomain_failure(eddy_rdomain_feed *feed, eddy_error *cause);
EDDY_EXPORT eddy_status eddy_rdomain_stats(eddy_rdomain_feed *feed, eddy_feed_info *out);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/rdeprecated.h). */
#define EDDY_DEPRECATED_RDOMAIN_H
#include "eddy/rdeprecated.h"
#endif
