/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — catch-up projection feeds (blocking front end).
 *
 * A feed keeps a read model (the projection) up to date from two sources: the history in the
 * event store, replayed once in position order (the catch-up), and the live events a listener
 * receives from the bus. A new feed applies nothing until eddy_feed_catch_up or
 * eddy_feed_go_live is called: until then it holds every live event, and a caller of
 * eddy_feed_accept waits. The catch-up checks the feed's checkpoint in the checkpoint storage;
 * without one it replays the history, applies the events it held once each in arrival order
 * (dropping those the replay already applied, see "Duplicates"), writes the checkpoint and goes
 * live. With a checkpoint it skips the replay. eddy_feed_go_live skips the replay and writes no
 * checkpoint.
 *
 * The checkpoint means "this feed caught up once", and nothing more. It is a small value the feed
 * writes to its checkpoint storage, under its id, when a catch-up has replayed the whole history
 * and applied what it held. From then on every catch-up of a feed with that id, in this process
 * or a later one, skips the replay and relies on the listener's subscription (its consumer
 * group keeps what was not acknowledged) to bring every later event. The value written is the
 * position the replay reached, for whoever inspects the storage; the feed never reads it back.
 * It is not a consumer offset: it does not advance as live events are applied, and no catch-up
 * resumes from it. To rebuild a read model (lost, or kept in memory only) the feed must replay
 * the whole history: delete its checkpoint first, or give the feed no checkpoint storage
 * (cfg.checkpoints NULL) so that every catch-up replays. A failing reactive feed deletes its
 * own checkpoint (eddy/rfeed.h).
 *
 * The rules (the reactive feed, eddy/rfeed.h, differs only where it says):
 * - A stopped replay (eddy_feed_stop_catch_up) writes no checkpoint and is not a failure; the
 *   projection's replay_abandoned runs. A feed that was live before the catch-up (or that
 *   eddy_feed_go_live was called for meanwhile) delivers what it held and goes on live; one
 *   that was not stays stopped: each waiting event, and each one fed later, is refused with
 *   EDDY_ERR_ILLEGAL_STATE and is not applied, until the next catch-up or go-live.
 * - eddy_feed_stop_catch_up on a feed that is not live and has no catch-up running stops the
 *   feed itself, the same way; on a live feed it does nothing.
 * - A failed catch-up fails the feed for good (eddy_feed_refuses_permanently): every later
 *   accept is refused with EDDY_ERR_ILLEGAL_STATE, the projection's own included, and so are
 *   catch-up and go-live. The events held while the replay ran are refused too, unless the feed
 *   was live before that catch-up started: then they are applied first. Replace a failed feed
 *   with a new one with the same id (see examples/order_status.c).
 * - A catch-up ended through its cancel handle (eddy_cancel_fire, from another thread)
 *   returns EDDY_ERR_CANCELLED but is not recorded as a failure: a feed that was not live keeps
 *   holding, one that was live delivers what it held and goes on live.
 * - A live event whose apply fails fails only its caller (do not acknowledge it: the broker
 *   delivers it again). So does a held event that fails when applied after a catch-up.
 * - A projection keyed by metadata fed an event without metadata refuses it with
 *   EDDY_ERR_ILLEGAL_STATE instead of dropping it.
 * - eddy_feed_go_live while a catch-up is running waits for it to end and returns
 *   EDDY_ERR_ILLEGAL_STATE, with the catch-up's failure in the detail, if it failed.
 * - A call made on a thread while the feed is calling back on that thread (the projection's
 *   callbacks, an eddy_feed_offer completion) never waits: catch-up and go-live only ask for
 *   the catch-up, which runs once the callback has returned (it may then not run at all, for
 *   example after a stop or a failure); an accept that would have to wait is refused with
 *   EDDY_ERR_ILLEGAL_STATE, since nothing could apply it while the caller waits.
 *
 * Duplicates: a live event is dropped without being applied (its caller gets EDDY_OK, so the
 * message is acknowledged) when it was applied already:
 * - When its metadata carries a store position (position >= 1, as eddy_delivery_stored_meta
 *   gives it for an event a store append published) at or below the position the replay
 *   reached: exactly, however many events were held or redelivered. The replay meant is the
 *   last one that completed, as long as no other has started since; one that is stopped,
 *   cancelled or fails counts for nothing (the projection discarded its work), and a catch-up
 *   the checkpoint skips or a go-live replays nothing. That replay examined every stored event up
 *   to its position and applied each one, unless the filter or decode skipped it, in which case
 *   the live copy is not applied either.
 * - Otherwise (fed without metadata, position 0, or a position above the replay's), by its id
 *   (event_id): when the id is among the last dedup_cache_size ids the replay applied or the
 *   last dedup_cache_size ids applied live. An older one is applied again, so a projection fed
 *   events without positions must tolerate a repeat beyond that window.
 * The position must be the event's position in the store this feed replays; a caller feeding
 * metadata from elsewhere sets position to 0.
 *
 * Error detail: a refusal that an earlier failure causes (EDDY_ERR_ILLEGAL_STATE from a failed
 * feed, or from a go-live whose catch-up failed) names that failure's status and detail in its
 * own ("...; cause: EDDY_ERR_IO: ..."), and eddy_feed_failure gives the recorded failure itself.
 *
 * The reactive (libev) feed (eddy/rfeed.h) runs on the same core state machine as this one, so
 * it decides nothing differently: it takes the same eddy_feed_config and eddy_projection,
 * answers through a completion callback on the loop where these functions wait (accept,
 * catch-up, go-live), reads replay pages on the loop, and has failure rules of its own: the
 * checkpoint is deleted (first attempt plus 3 retries, then an error naming the feed id to the log
 * hook), listeners' events are refused while the projection's own are still applied, then
 * everything is refused.
 *
 * Thread: every function is safe from any thread unless it says otherwise. The projection's
 * apply may run on several threads at once while the feed is live (one per caller of accept),
 * never at the same time as a replay; make it thread-safe.
 */
#ifndef EDDY_FEED_H
#define EDDY_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include "eddy/store.h"
#include "eddy/writes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_feed eddy_feed;

/** The read model a feed keeps up to date. Every callback but apply is optional (NULL). */
typedef struct eddy_projection {
    /** Applies one event (the user's event, as decode made it); required unless the config
     * gives writes (a model kept in Redis, eddy/model.h), then NULL. meta is the stored event's
     * metadata during a replay, the caller's for a live event fed with metadata, NULL for one
     * fed without. Return EDDY_OK once applied; any error (with detail in err if useful) means
     * it was not: a replayed event's failure fails the catch-up, a live event's fails only its
     * caller. Both feeds need a final status: EDDY_PENDING counts as a failure.
     * Ownership: event and meta are borrowed for the call.
     * Thread: the thread running the catch-up, or the caller of accept. */
    eddy_status (*apply)(void *event, const eddy_event_meta *meta, eddy_error *err, void *user);
    /** A replay is about to apply the history (not called when the checkpoint skips it). An error
     * fails the catch-up. */
    eddy_status (*replay_started)(eddy_error *err, void *user);
    /** The replay applied the whole history; the held events and the checkpoint come next. An
     * error fails the catch-up (replay_abandoned then runs). */
    eddy_status (*replay_completed)(eddy_error *err, void *user);
    /** The replay ended before it completed (stopped, cancelled or failed): discard what was
     * buffered since replay_started. */
    void (*replay_abandoned)(void *user);
    /** Optional, beyond the catch-up rules above: the position the read model has reached (the
     * store position of the last event it applied, as its own storage keeps it), asked when a
     * replay starts, right after replay_started. The replay then starts after it instead of
     * from the beginning, and live copies at or below it count as duplicates (the model has
     * them). 0 replays everything; a negative position or an error fails the catch-up
     * (replay_abandoned then runs). Use it for a model that saves its position with its writes:
     * a process killed during a replay then re-applies only what it read after the last
     * position it saved. The position must be one up to which the model has every stored event:
     * a replay applies in position order, live events come in delivery order (a model that
     * saves live events' positions may save only one below which it has them all). The
     * checkpoint keeps its meaning ("caught up once"): a feed whose
     * checkpoint exists still skips the replay. Thread: as replay_started. */
    eddy_status (*position)(long long *position, eddy_error *err, void *user);
    /** The projection finds its instance through the metadata (the stream id, say): a live
     * event fed without metadata is refused with EDDY_ERR_ILLEGAL_STATE. */
    bool keyed_by_metadata;
    void *user;
} eddy_projection;

/** Makes the user's event from a stored CloudEvent. meta is the stored metadata during a replay;
 * for a live event decoded by eddy_feed_handler it is the delivery's (eddy_delivery_stored_meta),
 * or NULL when the delivery carries none. Set *event to NULL to skip an event the projection
 * does not handle (not applied; a listener acknowledges it). An error fails the catch-up, or
 * refuses the live event. Must not call the feed. Ownership: *event is the feed's, released
 * with free_event. */
typedef eddy_status (*eddy_feed_decode_fn)(const eddy_event *stored, const eddy_event_meta *meta,
                                           void **event, eddy_error *err, void *user);
/** Releases an event decode made. */
typedef void (*eddy_feed_free_fn)(void *event, void *user);
/** The event's id, used to drop the live copy of an event already applied when that copy
 * carries no store position (see "Duplicates" above). NULL or "" is refused. Ownership: borrowed
 * from the event. Must not call the feed. */
typedef const char *(*eddy_feed_event_id_fn)(const void *event, void *user);

typedef struct eddy_feed_config {
    /** Set by eddy_feed_config_init: the size of this struct in the caller's program (see bus.h).
     */
    size_t struct_size;
    /** Required. Names the catch-up checkpoint: 1-128 printable ASCII characters, no space, '{',
     * '}' or ':'. Copied. */
    const char *id;
    eddy_projection projection;
    eddy_feed_decode_fn decode;     /**< required */
    eddy_feed_free_fn free_event;   /**< optional */
    eddy_feed_event_id_fn event_id; /**< required */
    void *codec_user;               /**< the user of decode, free_event and event_id */
    /** Where the checkpoint is kept; NULL: no checkpoint, every catch-up replays the whole history
     * (the right choice for a read model that lives in memory only). The struct is copied; its
     * implementation must outlive the feed. */
    const eddy_checkpoints *checkpoints;
    /** Which stored events the replay applies; NULL: all. Matched by the feed with reader
     * (eddy_filter_match): a filter with a data condition and no reader fails the catch-up
     * with EDDY_ERR_UNREADABLE_FILTER. Copied (eddy_filter_dup). */
    const eddy_filter *filter;
    /** Options. How many ids of replayed events, and how many of live events applied, the
     * feed keeps to drop live copies that carry no store position or one above the replay's
     * (see "Duplicates" above); the others need none. Default 10000; zero or less is refused
     * (EDDY_ERR_INVALID_SPEC). */
    long dedup_cache_size;
    /** Most live events held before the feed is live; later ones are refused with
     * EDDY_ERR_ILLEGAL_STATE. Default 100000; zero or less is refused. */
    long max_buffered_events;
    /** Stored events examined per replay read. Default 256; 0 is refused. */
    unsigned page_size;
    /** Where the feed logs (a catch-up failure nobody waited for, ...). */
    eddy_log_fn log;
    void *log_user;
    /** Reads the data fields a data condition of the filter names (eddy_msgpack_reader for
     * msgpack data); NULL: none (a filter without data conditions needs none). Borrowed: its
     * implementation must outlive the feed. */
    const eddy_data_reader *reader;
    /** Optional (new in 0.4): keeps the read model in Redis, committed with its progress, instead
     * of calling projection.apply (eddy/model.h): for each event the feed asks this for its
     * write set and commits it in one function call with the event's stream version, a replay
     * one call per page with the page's last position, from which the next catch-up resumes.
     * Needs projection.apply and projection.position NULL (EDDY_ERR_INVALID_SPEC otherwise)
     * and events with their store metadata; its user is projection.user. The model is named
     * after the feed id. */
    eddy_feed_writes_fn writes;
} eddy_feed_config;

/** Fills every field with its default (no id, no callbacks). Thread: any. */
#define eddy_feed_config_init(cfg) eddy_feed_config_init_sized((cfg), sizeof *(cfg))
/** What eddy_feed_config_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_feed_config_init_sized(eddy_feed_config *cfg, size_t size);

/** Builds a feed over a store. EDDY_ERR_INVALID_SPEC for a missing apply, decode or event_id,
 * or an option out of range; EDDY_ERR_INVALID_ARGUMENT for a bad id. The feed holds live events
 * until eddy_feed_catch_up or eddy_feed_go_live. Ownership: the store is borrowed and must
 * outlive the feed; on EDDY_OK *out is the caller's (eddy_feed_free). */
EDDY_EXPORT eddy_status eddy_feed_new(eddy_store *store, const eddy_feed_config *cfg,
                                      eddy_feed **out, eddy_error *err);

/** Answers each waiting accept with EDDY_ERR_CLOSED, ends a running catch-up (it returns
 * EDDY_ERR_CLOSED) and waits for the calls in progress to return, then frees the feed. Called
 * from a callback of this feed, the free happens when the outermost call of the feed returns.
 * NULL is a no-op. */
EDDY_EXPORT void eddy_feed_free(eddy_feed *feed);

/** The id (borrowed; lives as the feed). */
EDDY_EXPORT const char *eddy_feed_id(const eddy_feed *feed);

/* Cancellation: the calls that wait take the blocking front end's token, eddy_cancel (bus.h):
 * fired from another thread, a catch-up or go-live returns EDDY_ERR_CANCELLED (see the rules
 * above), an accept still held returns EDDY_ERR_CANCELLED and is not applied. */

/* ---- catching up ----------------------------------------------------------------------- */

/** Runs the catch-up on the calling thread: waits for a catch-up already running, then checks
 * the checkpoint; replays the history in position order (pages of page_size, never the whole
 * history at once) while live events wait; applies the held events; writes the checkpoint; goes
 * live. EDDY_OK also when the replay was stopped (eddy_feed_info tells). The failure's own
 * status when it failed (the feed then refuses everything), EDDY_ERR_CANCELLED when cancel was
 * fired, EDDY_ERR_ILLEGAL_STATE on a failed feed or when the catch-up it waited for failed.
 * From a callback of this feed: returns EDDY_OK at once, see above. cancel may be NULL. */
EDDY_EXPORT eddy_status eddy_feed_catch_up(eddy_feed *feed, eddy_cancel *cancel, eddy_error *err);

/** Skips the replay: applies the held events in arrival order and goes live, writing no checkpoint
 * (a later real catch-up replays the whole history, while live events wait). While a catch-up
 * runs, waits for it to end; the feed then goes live even when the replay was stopped.
 * EDDY_ERR_ILLEGAL_STATE on a failed feed, or when the catch-up it waited for failed (the
 * detail names that failure). EDDY_ERR_CANCELLED when cancel fired while it waited. */
EDDY_EXPORT eddy_status eddy_feed_go_live(eddy_feed *feed, eddy_cancel *cancel, eddy_error *err);

/** Stops a running replay (it notices before its next event), or, on a feed that is not live
 * and has no catch-up running, the feed itself; see the rules above. Does not wait. */
EDDY_EXPORT void eddy_feed_stop_catch_up(eddy_feed *feed);

/* ---- live events ----------------------------------------------------------------------- */

/** Feeds a live event without metadata and waits until it is applied or refused: EDDY_OK once
 * applied (or dropped as the duplicate of an applied event): acknowledge the message. Any
 * error: it was not applied; do not acknowledge it. Held (the feed is not live yet) the call
 * waits for the catch-up or go-live; it ends with EDDY_ERR_CANCELLED when cancel fires first.
 * Ownership: event is borrowed for the call. */
EDDY_EXPORT eddy_status eddy_feed_accept(eddy_feed *feed, void *event, eddy_cancel *cancel,
                                         eddy_error *err);
/** The same with the metadata the source knows (a projection keyed by metadata needs it).
 * Ownership: meta is borrowed for the call. */
EDDY_EXPORT eddy_status eddy_feed_accept_meta(eddy_feed *feed, const eddy_event_meta *meta,
                                              void *event, eddy_cancel *cancel, eddy_error *err);

/** The outcome of an eddy_feed_offer: the status eddy_feed_accept would have returned. err is
 * borrowed for the call (NULL on EDDY_OK). */
typedef void (*eddy_feed_done_fn)(eddy_status st, const eddy_error *err, void *user);

/** Feeds a live event without waiting (meta may be NULL). done runs exactly once: before this
 * returns when the outcome is known at once (applied live on this thread, refused, a
 * duplicate), otherwise later on the thread that applies or refuses it (a catch-up's, a
 * go-live's, a stop's, eddy_feed_free's). EDDY_ERR_INVALID_ARGUMENT (done not called) for a NULL
 * feed, event or done. Ownership: event and what done needs stay the caller's until done runs;
 * meta is copied. */
EDDY_EXPORT eddy_status eddy_feed_offer(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                        eddy_feed_done_fn done, void *user);

/** A subscription handler (eddy_handler_fn) that feeds each delivery to the feed given as
 * spec.user: decodes the delivery's event with the feed's decode, offers it with the stored
 * metadata when the delivery carries some (an event an event-store append published) and
 * without otherwise, and lets the outcome settle the delivery: applied (or skipped by decode),
 * acknowledged; refused or failed, not acknowledged, so an AtLeastOnce subscription gets it
 * again. Returns EDDY_PENDING while the feed holds the event (no worker waits for it). A
 * projection keyed by metadata refuses deliveries without metadata (a plain publish). */
EDDY_EXPORT eddy_status eddy_feed_handler(eddy_delivery *d, void *user);

/* ---- state ----------------------------------------------------------------------------- */

/** True once the feed is live and has not failed. */
EDDY_EXPORT bool eddy_feed_ready_for_live_delivery(eddy_feed *feed);
/** True once a catch-up failed: the feed refuses everything from then on. */
EDDY_EXPORT bool eddy_feed_refuses_permanently(eddy_feed *feed);
/** When the feed failed, copies the failure (its status and detail) into *cause (may be NULL)
 * and returns true. */
EDDY_EXPORT bool eddy_feed_failure(eddy_feed *feed, eddy_error *cause);

/** How the last catch-up or go-live that ran ended. */
typedef enum eddy_feed_outcome {
    EDDY_FEED_NONE,      /**< none has ended yet */
    EDDY_FEED_REPLAYED,  /**< replayed the history, wrote the checkpoint, went live */
    EDDY_FEED_SKIPPED,   /**< the checkpoint existed: went live without a replay */
    EDDY_FEED_WENT_LIVE, /**< go-live: went live without a replay */
    EDDY_FEED_STOPPED,   /**< stopped before the replay completed */
    EDDY_FEED_CANCELLED, /**< cancelled through its handle */
    EDDY_FEED_FAILED     /**< failed: the feed refuses everything */
} eddy_feed_outcome;

typedef struct eddy_feed_info {
    bool live;              /**< applies live events directly */
    bool stopped;           /**< refuses live events until the next catch-up or go-live */
    bool failed;            /**< refuses everything for good */
    bool catching_up;       /**< a catch-up or go-live is running */
    size_t waiting;         /**< catch-up and go-live calls waiting for the running one */
    size_t held;            /**< live events waiting for the feed to go live */
    uint64_t replayed;      /**< events applied by replays */
    uint64_t applied;       /**< live events applied */
    uint64_t duplicates;    /**< live events dropped as already applied (see "Duplicates") */
    uint64_t refused;       /**< live events refused */
    uint64_t apply_failed;  /**< live events whose apply failed */
    long long position;     /**< the last position the running (or last) replay reached */
    long long head;         /**< where that replay ends */
    eddy_feed_outcome last; /**< how the last catch-up or go-live ended */
} eddy_feed_info;

EDDY_EXPORT eddy_status eddy_feed_stats(eddy_feed *feed, eddy_feed_info *out);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/deprecated.h). */
#define EDDY_DEPRECATED_FEED_H
#include "eddy/deprecated.h"
#endif
