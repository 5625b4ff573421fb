/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — push subscription models and push sources on a libev loop (reactive front end).
 *
 * The mirror of eddy/push.h over the reactive bus (eddy_rbus) and reactive domain feeds
 * (eddy_rdomain_feed), built on the same core (src/store/push.c), so nothing is decided differently:
 * the same outcomes settle the same way (DELIVERED and FILTERED acknowledged; DEFERRED and
 * nothing registered handed back with EDDY_ERR_UNAVAILABLE; EDDY_ERR_UNREADABLE_FILTER or a
 * failed feed fails the source, which hands back the message in hand and stops consuming: its
 * subscription is paused with eddy_rbus_pause and the broker keeps its messages; any other
 * error is a failed attempt), the same start modes (a source's subscription is made paused and
 * resumed once its projection is registered: in manual mode nothing is read before start-all),
 * states and progress figures. It shares push.h's observer, options, states and
 * progress types.
 *
 * Where the blocking side waits, these functions complete through callbacks on the loop:
 * - a source's subscription handler returns EDDY_PENDING and finishes the delivery
 *   (eddy_delivery_finish) from the route's completion, so the loop never waits for a feed;
 * - add and start-all complete through a callback: foreground once the catch-ups they started
 *   ended, background at once (on the next loop iteration) while the catch-ups run on the loop
 *   and report their progress from an ev_timer every progress_ms.
 *
 * A source's catch-up counts as running from the eddy_rpush_sources_add or
 * eddy_rpush_sources_start_all call that started it until it ends.
 *
 * Callbacks: every completion runs exactly once, on the loop's thread, never inside the call that
 * asked for it; freeing the model or the sources completes what is pending with EDDY_ERR_CLOSED
 * before it returns. A call refused up front returns the refusal and does not call its callback.
 * The progress callback runs on the loop (state changes, and the progress timer).
 *
 * Thread: every function must be called on the loop's thread.
 */
#ifndef EDDY_RPUSH_H
#define EDDY_RPUSH_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/push.h"
#include "eddy/rdomain.h"
#include "eddy/reactive.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- push subscription model ----------------------------------------------------------- */

typedef struct eddy_rpush_model eddy_rpush_model;

/** observer and log may be NULL (both are copied). Ownership: the loop is borrowed and must
 * outlive the model; *out is the caller's (eddy_rpush_model_free). */
EDDY_EXPORT eddy_status eddy_rpush_model_new(struct ev_loop *loop,
                                             const eddy_push_observer *observer, eddy_log_fn log,
                                             void *log_user, eddy_rpush_model **out,
                                             eddy_error *err);
/** Completes every accept-or-defer still routing with EDDY_ERR_CLOSED (its observer is not
 * told) before it returns. The feeds are not freed. NULL is a no-op. */
EDDY_EXPORT void eddy_rpush_model_free(eddy_rpush_model *model);
/** Adds a reactive domain feed (borrowed: it must outlive the model). A feed counts as
 * registered once it has a projection. EDDY_ERR_INVALID_ARGUMENT for a feed added already. */
EDDY_EXPORT eddy_status eddy_rpush_model_add(eddy_rpush_model *model, eddy_rdomain_feed *feed,
                                             eddy_error *err);

/** From the write path: routes ev (meta may be NULL) to every feed with a projection and
 * returns EDDY_OK whatever happens; the outcome goes to the observer (and failures to the log)
 * once every feed answered, on the loop. With nothing registered the event is dropped.
 * EDDY_ERR_INVALID_ARGUMENT only for a NULL model or event. Ownership: ev and meta are borrowed
 * for the call (each feed decodes it inside the call). */
EDDY_EXPORT eddy_status eddy_rpush_model_accept(eddy_rpush_model *model, const eddy_event *ev,
                                                const eddy_event_meta *meta);
/** From a broker: routes ev to every feed with a projection; done (required) runs once, on
 * the loop, with the model's answer: EDDY_ERR_UNAVAILABLE when nothing is registered (HOLD:
 * hand the message back), else the first feed's error, or EDDY_OK with route DEFERRED when any
 * feed deferred it, else DELIVERED when any delivered it, else FILTERED. The observer is told
 * the same answer first. Ownership: ev and meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_rpush_model_accept_or_defer(eddy_rpush_model *model,
                                                         const eddy_event *ev,
                                                         const eddy_event_meta *meta,
                                                         eddy_route_done_fn done, void *user,
                                                         eddy_error *err);

/* ---- push sources ---------------------------------------------------------------------- */

typedef struct eddy_rpush_source_spec {
    /** The projection id (its checkpoint key; unique in the process). Copied. */
    const char *id;
    /** The reactive domain feed the source routes into (borrowed: must outlive the sources). */
    eddy_rdomain_feed *feed;
    /** Registered with feed at start (copied). Its apply must return a final status. */
    eddy_projection projection;
    /** Registered with it (copied); NULL: every event. */
    const eddy_filter *filter;
    /** The subject consumed, and the competing group. Copied. */
    const char *subject;
    const char *group;
    /** Go live instead of catching up (the events are stored elsewhere). */
    bool go_live;
} eddy_rpush_source_spec;

typedef struct eddy_rpush_sources eddy_rpush_sources;

/** Completion of eddy_rpush_sources_add: st is the subscription's readiness (EDDY_OK, or
 * EDDY_ERR_IO / EDDY_ERR_CLOSED as eddy_rbus_subscribe_ready gives it: the source then stays
 * added but receives nothing) or, in automatic mode, the start's outcome (foreground: the
 * registration's or the catch-up's; background: the registration's). err is borrowed for the
 * call (NULL on EDDY_OK). */
typedef void (*eddy_rpush_done_fn)(eddy_status st, const eddy_error *err, void *user);

/** Completion of eddy_rpush_sources_start_all: ids[0..n) are the ids it started, in the order
 * the sources were added (ids is NULL-terminated and borrowed for the call; the strings live as
 * the sources); st the first failure (foreground: after every catch-up ended; background: of
 * the registrations). */
typedef void (*eddy_rpush_started_fn)(eddy_status st, const char *const *ids, size_t n,
                                      const eddy_error *err, void *user);

/** Ownership: loop and bus are borrowed (both must outlive the sources; start the bus
 * yourself); *out is the caller's (eddy_rpush_sources_free). */
EDDY_EXPORT eddy_status eddy_rpush_sources_new(struct ev_loop *loop, eddy_rbus *bus,
                                               const eddy_push_options *opts,
                                               eddy_rpush_sources **out, eddy_error *err);

/** Completes pending add and start-all callbacks with EDDY_ERR_CLOSED and stops the progress
 * timer before it returns, and frees the sources once the completions they wait for (routes,
 * catch-ups, subscription readiness) ran on the loop. Catch-ups still running go on (the feed
 * owns them; stopping one would stop the feed): free the feeds (which completes them with
 * EDDY_ERR_CLOSED) or run the loop until they end. The bus has no unsubscribe: stop the bus
 * (eddy_rbus_stop) first, and free it or never start it again, since the subscriptions' handlers
 * use the sources. May be called from the sources' callbacks. NULL is a no-op. */
EDDY_EXPORT void eddy_rpush_sources_free(eddy_rpush_sources *ps);

/** Adds a source and subscribes it (eddy_rbus_subscribe_ready; subscription "push.<id>",
 * Competing, AtLeastOnce). Refused up front (done not called): EDDY_ERR_INVALID_SPEC for a
 * missing field, EDDY_ERR_INVALID_ARGUMENT for an id added already, the bus's refusal of the
 * subscription. Automatic mode starts it at once (from this call). done (may be NULL) runs once,
 * see eddy_rpush_done_fn. */
EDDY_EXPORT eddy_status eddy_rpush_sources_add(eddy_rpush_sources *ps,
                                               const eddy_rpush_source_spec *spec,
                                               eddy_rpush_done_fn done, void *user,
                                               eddy_error *err);

/** Starts every source not started yet, in the order they were added, skipping those started
 * already (a second call starts none). Each start registers the projection (in this call) and
 * begins the catch-up or go-live (from this call). started (may be NULL) runs once, see
 * eddy_rpush_started_fn. */
EDDY_EXPORT eddy_status eddy_rpush_sources_start_all(eddy_rpush_sources *ps,
                                                     eddy_rpush_started_fn started, void *user,
                                                     eddy_error *err);

/** The progress of source id (sampled now while it catches up): EDDY_ERR_INVALID_ARGUMENT when
 * there is none. out->id lives as the sources. */
EDDY_EXPORT eddy_status eddy_rpush_sources_stats(eddy_rpush_sources *ps, const char *id,
                                                 eddy_push_progress *out);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/rdeprecated.h). */
#define EDDY_DEPRECATED_RPUSH_H
#include "eddy/rdeprecated.h"
#endif
