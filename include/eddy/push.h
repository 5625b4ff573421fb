/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — push subscription models and push sources (blocking front end).
 *
 * A push subscription model hands CloudEvents to the domain feeds added to it (domain.h) and
 * tells an observer what became of each. A push source is the ready-made listener that feeds a
 * domain feed from the bus: it consumes a subject through a competing group, AtLeastOnce, routes
 * each message into its domain feed (eddy_domain_route) and settles the message from the
 * outcome (the rules live in one place, src/store/push.c, shared with the reactive side, rpush.h):
 *
 *   DELIVERED, FILTERED            acknowledged
 *   DEFERRED, nothing registered   handed back (the handler returns EDDY_ERR_UNAVAILABLE: not
 *                                  acknowledged, delivered again after redelivery_idle_ms, and
 *                                  not counted toward max_deliveries, so never dead-lettered
 *                                  for it)
 *   EDDY_ERR_UNREADABLE_FILTER,    the source fails (its status says why, an error goes to the
 *   a failed feed (its catch-up    log), hands back the message in hand without routing it and
 *   failed)                        stops consuming: its subscription is paused (eddy_bus_pause),
 *                                  so the broker keeps this and every later message for the
 *                                  feed that replaces this one; none is read, none dead-lettered
 *   any other error                not acknowledged (a failed attempt: redelivered, dead-lettered
 *                                  after max_deliveries): decode or apply failed, or an event
 *                                  without the metadata its projection is keyed by
 *
 * A source consumes only while it routes: its subscription is made paused and resumed once its
 * projection is registered (manual mode: at start-all; automatic: in the add, right after the
 * registration), and paused again when the source fails. So before the registration the broker
 * holds its messages: none is read, and none is handed back. Should a message reach a source
 * that does not route (it is handed to it by a read made before a pause took effect), it is
 * handed back without touching the feed, so nothing is acknowledged that no projection
 * received, whatever else is registered.
 *
 * Start modes (eddy_push_options.mode and .startup):
 * - EDDY_PUSH_AUTOMATIC: eddy_push_sources_add registers the projection with its feed and
 *   starts it at once.
 * - EDDY_PUSH_MANUAL: eddy_push_sources_add subscribes, paused (so the group exists and the
 *   broker keeps every message from then on), but withholds the registration until
 *   eddy_push_sources_start_all, which resumes the subscription once the projection is
 *   registered. Messages arriving before stay with the broker: not read, never lost.
 * Starting a source means: register its projection with its domain feed, then catch up (or go
 * live, when spec.go_live says so: the events are stored elsewhere). EDDY_PUSH_FOREGROUND runs the
 * catch-up on the calling thread; EDDY_PUSH_BACKGROUND runs it on a thread of its own, off the
 * start-up path, and reports its progress through eddy_push_sources_stats and the progress
 * callback.
 *
 * Thread: every function is safe from any thread unless it says otherwise.
 */
#ifndef EDDY_PUSH_H
#define EDDY_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/blocking.h"
#include "eddy/domain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- observers ------------------------------------------------------------------------- */

/** Told the outcome of each event a model is asked to deliver, once per event with the model's
 * answer over all its feeds (or, given to push sources, of each message a source routed): st is
 * EDDY_OK with route set, or the error (EDDY_ERR_UNAVAILABLE when nothing is registered; err
 * borrowed, NULL on EDDY_OK). Its return value is logged when it is an error and changes nothing:
 * an observer's failure never changes routing. Thread: the thread routing the event. */
typedef struct eddy_push_observer {
    eddy_status (*observe)(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user);
    void *user;
} eddy_push_observer;

/* ---- push subscription model ----------------------------------------------------------- */

typedef struct eddy_push_model eddy_push_model;

/** observer and log may be NULL (both are copied). Ownership: *out is the caller's
 * (eddy_push_model_free). */
EDDY_EXPORT eddy_status eddy_push_model_new(const eddy_push_observer *observer, eddy_log_fn log,
                                            void *log_user, eddy_push_model **out, eddy_error *err);
/** NULL is a no-op. The feeds are not freed. */
EDDY_EXPORT void eddy_push_model_free(eddy_push_model *model);
/** Adds a domain feed (borrowed: it must outlive the model). A feed counts as registered once
 * it has a projection (eddy_domain_has_projection); feeds without one are skipped when routing.
 * EDDY_ERR_INVALID_ARGUMENT for a feed added already. */
EDDY_EXPORT eddy_status eddy_push_model_add(eddy_push_model *model, eddy_domain_feed *feed,
                                            eddy_error *err);

/** From the write path: routes ev (meta may be NULL) to every feed with a projection and
 * returns normally whatever happens: with nothing registered the event is dropped; a feed that
 * is not live yet defers it (its catch-up reads it from the store); failures go to the observer
 * and the log. EDDY_ERR_INVALID_ARGUMENT only for a NULL model or event. Ownership: ev and
 * meta are borrowed for the call. */
EDDY_EXPORT eddy_status eddy_push_model_accept(eddy_push_model *model, const eddy_event *ev,
                                               const eddy_event_meta *meta);
/** From a broker: routes ev to every feed with a projection. EDDY_ERR_UNAVAILABLE when nothing
 * is registered (HOLD: hand the message back, do not acknowledge it). Otherwise the first
 * feed's error, or EDDY_OK with *route: DEFERRED when any feed deferred it, else DELIVERED
 * when any delivered it, else FILTERED. */
EDDY_EXPORT eddy_status eddy_push_model_accept_or_defer(eddy_push_model *model,
                                                        const eddy_event *ev,
                                                        const eddy_event_meta *meta,
                                                        eddy_route *route, eddy_error *err);

/* ---- push sources ---------------------------------------------------------------------- */

typedef enum eddy_push_mode { EDDY_PUSH_AUTOMATIC, EDDY_PUSH_MANUAL } eddy_push_mode;
typedef enum eddy_push_startup { EDDY_PUSH_FOREGROUND, EDDY_PUSH_BACKGROUND } eddy_push_startup;

typedef enum eddy_push_state {
    EDDY_PUSH_NOT_STARTED, /**< added, not started (manual mode before start-all) */
    EDDY_PUSH_CATCHING_UP, /**< registered; its catch-up runs */
    EDDY_PUSH_LIVE,        /**< live */
    EDDY_PUSH_FAILED       /**< its registration or catch-up failed, its feed failed, or its
                                filter cannot be read: it stops consuming (its subscription is
                                paused; the broker keeps its messages). Also a catch-up stopped
                                or cancelled before the feed went live (reason EDDY_ERR_CLOSED;
                                the feed itself has not failed) */
} eddy_push_state;

/** Where a source is. */
typedef struct eddy_push_progress {
    const char *id; /**< the projection id (borrowed from the sources) */
    eddy_push_state state;
    uint64_t replayed;  /**< events the running (or last) replay applied */
    long long position; /**< the store position it reached */
    long long head;     /**< the position it replays to */
    double rate;        /**< positions per second since the catch-up began (0 until known) */
    double eta_seconds; /**< (head - position) / rate; 0 once at the head; negative unknown */
    eddy_error failure; /**< FAILED: why */
} eddy_push_progress;

/** Called with a source's progress: when its state changes (on the thread that changed it: the
 * one starting the source, its background thread, or a subscription handler's when the filter
 * turns out unreadable), and every progress_ms while it catches up (on the sources' progress
 * thread: a blocking catch-up occupies the thread running it). Calls never overlap. p is
 * borrowed for the call. It must not call eddy_push_sources_wait or eddy_push_sources_free. */
typedef void (*eddy_push_progress_fn)(const eddy_push_progress *p, void *user);

typedef struct eddy_push_options {
    /** Set by eddy_push_options_init: the size of this struct in the caller's program (see bus.h).
     */
    size_t struct_size;
    eddy_push_mode mode;
    eddy_push_startup startup;
    eddy_push_progress_fn progress; /**< optional */
    void *progress_user;
    unsigned progress_ms; /**< default 250 */
    /** Optional (observe NULL): told the outcome of each message a source routed (not of
     * those it handed back without routing). */
    eddy_push_observer observer;
    /** Where the sources log (a failure nobody waits for: a background catch-up, an unreadable
     * filter). Optional. */
    eddy_log_fn log;
    void *log_user;
} eddy_push_options;

/** Automatic, foreground, no callbacks. Thread: any. */
#define eddy_push_options_init(o) eddy_push_options_init_sized((o), sizeof *(o))
/** What eddy_push_options_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_push_options_init_sized(eddy_push_options *o, size_t size);

typedef struct eddy_push_source_spec {
    /** The projection id (its checkpoint key; unique in the process). Copied. */
    const char *id;
    /** The domain feed the source routes into (borrowed: must outlive the sources). */
    eddy_domain_feed *feed;
    /** Registered with feed at start (copied). */
    eddy_projection projection;
    /** Registered with it (copied); NULL: every event. */
    const eddy_filter *filter;
    /** The subject consumed, and the competing group. Copied. */
    const char *subject;
    const char *group;
    /** Go live instead of catching up (the events are stored elsewhere). */
    bool go_live;
} eddy_push_source_spec;

typedef struct eddy_push_sources eddy_push_sources;

/** Ownership: bus is borrowed (it must outlive the sources; start it yourself); *out is the
 * caller's (eddy_push_sources_free). */
EDDY_EXPORT eddy_status eddy_push_sources_new(eddy_bus *bus, const eddy_push_options *opts,
                                              eddy_push_sources **out, eddy_error *err);
/** Cancels the catch-ups still running (through their feeds' cancel handles: not a failure,
 * the feed keeps holding) and waits for their threads, then
 * frees. Must not be called from a callback of the sources or from a handler. The bus has no
 * unsubscribe, so the subscriptions stay on it and their handlers use the sources: stop the bus
 * (eddy_bus_stop, which waits for running handlers) before freeing the sources, and free the bus
 * or never start it again. Unacknowledged messages stay pending for the group. NULL is a
 * no-op. */
EDDY_EXPORT void eddy_push_sources_free(eddy_push_sources *ps);

/** Adds a source and subscribes it (subscription "push.<id>", Competing, AtLeastOnce, on
 * spec->subject with spec->group, made paused and resumed once the projection is registered; on
 * a started bus the call returns once the group exists, so a message published after it is kept
 * by the broker). EDDY_ERR_INVALID_SPEC for a missing field
 * (id, feed, projection.apply, subject, group), EDDY_ERR_INVALID_ARGUMENT for an id added
 * already; the bus's refusal of the subscription (nothing is added then). Automatic mode: starts
 * it (foreground: returns the registration's or the catch-up's status; background: the
 * registration's). */
EDDY_EXPORT eddy_status eddy_push_sources_add(eddy_push_sources *ps,
                                              const eddy_push_source_spec *spec, eddy_error *err);

/** Starts every source not started yet, in the order they were added, and skips those started
 * already (so a second call starts none). Starting registers the projection and then catches
 * up (or goes live): foreground on this thread, one source after the other; background on a
 * thread per source, this call returning once every projection is registered. *ids (may be
 * NULL) receives the ids it started, in that order (a NULL-terminated array the caller frees
 * with free(), also when none was started; the strings live as the sources), *n (may be NULL)
 * their count. A source whose start fails is still counted as started (its status says FAILED
 * and why). Returns the first failure after trying every source. */
EDDY_EXPORT eddy_status eddy_push_sources_start_all(eddy_push_sources *ps, const char ***ids,
                                                    size_t *n, eddy_error *err);

/** The progress of source id: EDDY_ERR_INVALID_ARGUMENT when there is none. */
EDDY_EXPORT eddy_status eddy_push_sources_stats(eddy_push_sources *ps, const char *id,
                                                eddy_push_progress *out);

/** Waits until no source is catching up (each is not started, live or failed), or timeout_ms
 * passed (EDDY_ERR_TIMEOUT). When it returns EDDY_OK, the progress callback has been told how
 * each catch-up ended. */
EDDY_EXPORT eddy_status eddy_push_sources_wait(eddy_push_sources *ps, unsigned timeout_ms);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/deprecated.h). */
#define EDDY_DEPRECATED_PUSH_H
#include "eddy/deprecated.h"
#endif
