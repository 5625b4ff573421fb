/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — domain event feeds (blocking front end).
 *
 * A domain event feed is a catch-up feed (feed.h) that a projection is registered on later,
 * under an id and with a filter, and that a listener can feed CloudEvents to: the feed decides
 * whether an event is for the projection (the filter), decodes it only then, and answers what
 * to do with the broker message (eddy_route).
 *
 * Life: eddy_domain_new (the store, the codec, the checkpoint storage, the options and an
 * optional data field reader, all in an eddy_feed_config whose id, projection and filter stay
 * unset), then eddy_domain_register once (a second is refused), then eddy_domain_catch_up(_all)
 * or eddy_domain_go_live, then live events. The registered id is the id of the catch-up feed
 * underneath, so it names the catch-up checkpoint; it must be unique in the process (a registered
 * id is refused until the feed holding it is freed). Every rule of feed.h holds for the
 * registered projection (holding, stopping, failing, cancel handles, callbacks calling back).
 *
 * Refusals that hold for every event (return, nothing applied, do not acknowledge):
 * - no projection registered: accept, accept-or-defer, route and catch-up-all are refused with
 *   EDDY_ERR_ILLEGAL_STATE, so a listener hands the message back to the broker instead of
 *   acknowledging an event nobody received (eddy_domain_has_projection asks first);
 * - a filter with a data condition on a feed without a reader (cfg.reader NULL): register
 *   accepts it, but the first eddy_domain_route fails with EDDY_ERR_UNREADABLE_FILTER and so
 *   does every later one on this feed (the same status and detail, also for events the filter
 *   would not match): stop consuming; build a new feed with a reader or register a filter
 *   without the data condition. A catch-up that has to replay with such a filter fails with
 *   EDDY_ERR_UNREADABLE_FILTER too (the feed then refuses everything, as any failed catch-up).
 *
 * Thread: every function is safe from any thread. What feed.h says about the projection's
 * callbacks and about calls made from them holds here.
 */
#ifndef EDDY_DOMAIN_H
#define EDDY_DOMAIN_H

#include <stdbool.h>

#include "eddy/feed.h"
#include "eddy/filter.h"
#include "eddy/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_domain_feed eddy_domain_feed;

/** What a listener does with a CloudEvent (or a decoded event) it handed to the feed. */
typedef enum eddy_route {
    /** The event does not match the registered filter (never decoded, so a decoder that knows
     * only this projection's types never sees another), or decode set no event (the projection
     * does not handle it). Acknowledge it: redelivering it gets the same answer. */
    EDDY_ROUTE_FILTERED,
    /** It matched and the projection applied it, or it is the duplicate of an applied event.
     * Acknowledge it. */
    EDDY_ROUTE_DELIVERED,
    /** It matched but the projection is not live: before eddy_domain_catch_up(_all) or
     * eddy_domain_go_live, while the replay runs, after eddy_domain_stop_catch_up stopped the
     * feed. The feed did not keep it (the call returns at once). Do not acknowledge it: hand
     * it back to the broker, as often as it comes, until it comes back DELIVERED. */
    EDDY_ROUTE_DEFERRED
} eddy_route;

/** Static name of a route ("EDDY_ROUTE_DEFERRED"); "?" for a value out of range. Thread: any. */
EDDY_EXPORT const char *eddy_route_name(eddy_route route);

/** Builds a feed with no projection. cfg as for eddy_feed_new, except: cfg->id, the projection
 * (every callback, keyed_by_metadata and user) and cfg->filter must be unset (zero), else
 * EDDY_ERR_INVALID_SPEC: they come with eddy_domain_register. cfg->reader (may be NULL) reads
 * the data fields of the registered filter, for routing and for the catch-up's read. The
 * options are checked here (EDDY_ERR_INVALID_SPEC). Ownership: the store is borrowed and must
 * outlive the feed; cfg is copied (cfg->checkpoints' and cfg->reader's implementations must
 * outlive the feed); on EDDY_OK *out is the caller's (eddy_domain_free). */
EDDY_EXPORT eddy_status eddy_domain_new(eddy_store *store, const eddy_feed_config *cfg,
                                        eddy_domain_feed **out, eddy_error *err);

/** Frees the feed as eddy_feed_free does (waiting accepts answered with EDDY_ERR_CLOSED, a
 * running catch-up ended) and releases the registered id, which may then be registered again.
 * NULL is a no-op. */
EDDY_EXPORT void eddy_domain_free(eddy_domain_feed *feed);

/** Registers the projection under id with filter (NULL: every event), and builds the catch-up
 * feed underneath, with id as its feed id (its checkpoint's key). EDDY_ERR_ILLEGAL_STATE when the
 * feed has a projection already (it takes one only: replace the whole feed);
 * EDDY_ERR_INVALID_ARGUMENT for a bad id (feed.h's rules) or for an id already registered on
 * any feed of this process, the detail saying so; EDDY_ERR_INVALID_SPEC for a projection
 * without apply. Ownership: id, *projection and filter are copied (eddy_filter_dup). */
EDDY_EXPORT eddy_status eddy_domain_register(eddy_domain_feed *feed, const char *id,
                                             const eddy_projection *projection,
                                             const eddy_filter *filter, eddy_error *err);

/** True once a projection is registered. */
EDDY_EXPORT bool eddy_domain_has_projection(eddy_domain_feed *feed);
/** The registered id (borrowed; lives as the feed), NULL when none is registered. */
EDDY_EXPORT const char *eddy_domain_projection_id(eddy_domain_feed *feed);

/** eddy_feed_catch_up for the registered projection (the only one). EDDY_ERR_ILLEGAL_STATE
 * when none is registered. cancel may be NULL. */
EDDY_EXPORT eddy_status eddy_domain_catch_up_all(eddy_domain_feed *feed, eddy_cancel *cancel,
                                                 eddy_error *err);
/** eddy_feed_catch_up for the projection registered as id: EDDY_ERR_INVALID_ARGUMENT when id
 * is not the registered one (or none is registered). */
EDDY_EXPORT eddy_status eddy_domain_catch_up(eddy_domain_feed *feed, const char *id,
                                             eddy_cancel *cancel, eddy_error *err);
/** eddy_feed_go_live for the projection registered as id: EDDY_ERR_INVALID_ARGUMENT when id
 * is not the registered one (or none is registered). */
EDDY_EXPORT eddy_status eddy_domain_go_live(eddy_domain_feed *feed, const char *id,
                                            eddy_cancel *cancel, eddy_error *err);
/** eddy_feed_stop_catch_up; no effect without a projection. */
EDDY_EXPORT void eddy_domain_stop_catch_up(eddy_domain_feed *feed);

/** eddy_feed_accept / eddy_feed_accept_meta (meta may be NULL: fed without metadata): waits
 * while the feed holds the event. EDDY_ERR_ILLEGAL_STATE when no projection is registered.
 * Ownership: event and meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_domain_accept(eddy_domain_feed *feed, const eddy_event_meta *meta,
                                           void *event, eddy_cancel *cancel, eddy_error *err);

/** Feeds a decoded live event (meta may be NULL) without ever waiting: *out is
 * EDDY_ROUTE_DELIVERED once it is applied on this thread (or a duplicate of an applied event),
 * EDDY_ROUTE_DEFERRED when the feed is not live (not kept). An error means it was not applied:
 * EDDY_ERR_ILLEGAL_STATE with no projection, on a failed feed, or for an event without
 * metadata on a projection keyed by metadata; the apply's own error when it failed.
 * Ownership: event and meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_domain_accept_or_defer(eddy_domain_feed *feed,
                                                    const eddy_event_meta *meta, void *event,
                                                    eddy_route *out, eddy_error *err);

/** Routes a CloudEvent (meta: what the source knows, may be NULL): matches it against the
 * registered filter (data fields read with cfg.reader); a match is decoded with cfg.decode
 * (given meta) and fed as eddy_domain_accept_or_defer does. *out says what to do with the
 * message (eddy_route). Errors: EDDY_ERR_ILLEGAL_STATE with no projection, or for a matching
 * event once the catch-up failed (a non-matching one is still FILTERED);
 * EDDY_ERR_UNREADABLE_FILTER, sticky, see above; decode's error (not decoded); the apply's
 * error. Ownership: ev and meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_domain_route(eddy_domain_feed *feed, const eddy_event *ev,
                                          const eddy_event_meta *meta, eddy_route *out,
                                          eddy_error *err);

/** True once the projection is live and has not failed: false with no projection, while the
 * replay runs and after a failure (eddy_domain_refuses_permanently tells these apart). */
EDDY_EXPORT bool eddy_domain_ready_for_live_delivery(eddy_domain_feed *feed);
/** True only once the projection's catch-up failed: the feed refuses every matching event. */
EDDY_EXPORT bool eddy_domain_refuses_permanently(eddy_domain_feed *feed);
/** When the catch-up failed, copies the failure into *cause (may be NULL) and returns true. */
EDDY_EXPORT bool eddy_domain_failure(eddy_domain_feed *feed, eddy_error *cause);
/** The catch-up feed's state (eddy_feed_info); all zero (EDDY_FEED_NONE) with no projection.
 * EDDY_ERR_INVALID_ARGUMENT for a NULL argument. */
EDDY_EXPORT eddy_status eddy_domain_stats(eddy_domain_feed *feed, eddy_feed_info *out);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/deprecated.h). */
#define EDDY_DEPRECATED_DOMAIN_H
#include "eddy/deprecated.h"
#endif
