/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — catch-up projection feeds on a libev loop (reactive front end).
 *
 * The same feed as eddy/feed.h, built on the same core state machine, with the same
 * eddy_feed_config and eddy_projection: it holds live events until eddy_rfeed_catch_up or
 * eddy_rfeed_go_live, replays the history one page at a time on the loop
 * (eddy_rstore_read_page, so the loop never blocks), applies the held events once each in
 * arrival order, writes the checkpoint and goes live. Where the blocking feed waits, this one
 * answers through a completion callback on the loop.
 *
 * The rules are those of eddy/feed.h (duplicates and the checkpoint's meaning included), except:
 * - The feed starts failing when a catch-up fails, when an event the projection fed during a
 *   replay or from a callback (replay_started, ...) fails or is refused, or when an event
 *   nothing waits for fails. It then (1) deletes its checkpoint (the first attempt plus 3 retries,
 *   then an error naming the feed id goes to cfg.log: delete the checkpoint yourself before
 *   building a new feed), (2) refuses every later accept not made by the projection with
 *   EDDY_ERR_ILLEGAL_STATE, (3) refuses each listener's event still waiting for the replay
 *   without applying it, (4) applies the events it had already taken in and those the
 *   projection feeds it meanwhile, (5) then refuses everything for good
 *   (eddy_rfeed_refuses_permanently).
 * - A listener's event that fails while the feed is live fails only its completion.
 * - Before the feed is live, events are held up to cfg.max_buffered_events; later ones are
 *   refused with EDDY_ERR_ILLEGAL_STATE.
 * - A catch-up counts as running from the call itself (eddy_rfeed_catch_up /
 *   eddy_rfeed_go_live), not from when the loop first drives it: live events accepted in
 *   between wait for its replay.
 *
 * Checkpoint ("caught up once", not a position to resume from; see eddy/feed.h): cfg.checkpoints
 * must be NULL (its operations block); the checkpoint is kept through the asynchronous
 * eddy_rcheckpoints given to eddy_rfeed_new (eddy_rstore_checkpoints: the rstore's own
 * storage, key "{ns}:ckpt:F"), or not at all when that is NULL.
 *
 * Projection: its callbacks run on the loop; apply must return a final status (EDDY_PENDING
 * counts as a failure, as on the blocking feed). With cfg.writes (a model kept in Redis,
 * eddy/model.h) each write set is committed on the rstore's connection: a replayed page's
 * before the next page is read, a held or live event's before its completion runs. Freed
 * while a live event's commit is in flight, the feed completes it with EDDY_ERR_CLOSED at
 * once (the commit may still land: the event's version then makes its redelivery a no-op).
 *
 * Callbacks: every completion runs exactly once, on the loop's thread, never inside the call
 * that asked for it, except: eddy_rfeed_stop_catch_up completes the events it refuses before it
 * returns (on the calling thread), and eddy_rfeed_free completes everything still pending with
 * EDDY_ERR_CLOSED before it returns. A call refused up front returns the refusal and does not
 * call its callback.
 *
 * Thread: every function must be called on the loop's thread. From inside a callback of the
 * feed (the projection's or a completion) every function may be called, eddy_rfeed_free
 * included: the feed is then released once the callback returns.
 */
#ifndef EDDY_RFEED_H
#define EDDY_RFEED_H

#include <ev.h>
#include <stdbool.h>

#include "eddy/feed.h"
#include "eddy/reactive.h"
#include "eddy/rstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_rfeed eddy_rfeed;

/** Completion of a catch-up, go-live or accept: the status the blocking call would have
 * returned. err is borrowed for the call (NULL on EDDY_OK). */
typedef void (*eddy_rfeed_done_fn)(eddy_status st, const eddy_error *err, void *user);

/** Builds a feed over a reactive store on loop. cfg as for eddy_feed_new (copied; cfg.checkpoints
 * must be NULL: EDDY_ERR_INVALID_SPEC); checkpoints (may be NULL: no checkpoint) is copied and its
 * implementation must outlive the feed. Ownership: loop and store are borrowed and must outlive
 * the feed; on EDDY_OK *out is the caller's (eddy_rfeed_free). */
EDDY_EXPORT eddy_status eddy_rfeed_new(struct ev_loop *loop, eddy_rstore *store,
                                       const eddy_feed_config *cfg,
                                       const eddy_rcheckpoints *checkpoints, eddy_rfeed **out,
                                       eddy_error *err);

/** Completes every pending accept, catch-up and go-live with EDDY_ERR_CLOSED before it returns
 * and frees the feed (its memory once the store operations in flight have returned, which
 * needs the loop or eddy_rstore_close). NULL is a no-op. */
EDDY_EXPORT void eddy_rfeed_free(eddy_rfeed *feed);

/** The id (borrowed; lives as the feed). */
EDDY_EXPORT const char *eddy_rfeed_id(const eddy_rfeed *feed);

/** Starts a catch-up (running from this call on): done runs once it ended, with EDDY_OK also
 * when the replay was stopped, the failure's status when it failed, EDDY_ERR_ILLEGAL_STATE when
 * a catch-up it waited for failed, EDDY_ERR_CLOSED when the feed is freed first. Returns
 * EDDY_ERR_ILLEGAL_STATE on a failed feed (done not called). From a callback of this feed it
 * only asks for the catch-up (done then runs with EDDY_OK soon after). */
EDDY_EXPORT eddy_status eddy_rfeed_catch_up(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user,
                                            eddy_error *err);

/** Skips the replay, as eddy_feed_go_live; while a catch-up runs, done runs when it ended
 * (EDDY_ERR_ILLEGAL_STATE naming its failure when it failed). */
EDDY_EXPORT eddy_status eddy_rfeed_go_live(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user,
                                           eddy_error *err);

/** Stops a running replay, or an idle feed that is not live; no effect on a live feed. The
 * completions of the events it refuses run before this returns. */
EDDY_EXPORT void eddy_rfeed_stop_catch_up(eddy_rfeed *feed);

/** Feeds a live event without metadata; done runs once with the outcome (EDDY_OK: applied, or
 * a duplicate of an applied event: acknowledge it; any error: not applied). Held until the feed
 * is live (up to max_buffered_events, later ones refused). EDDY_ERR_INVALID_ARGUMENT (done not
 * called) for a NULL feed, event or done; EDDY_ERR_NOMEM (done not called) out of memory.
 * Ownership: event stays the caller's until done runs. */
EDDY_EXPORT eddy_status eddy_rfeed_accept(eddy_rfeed *feed, void *event, eddy_rfeed_done_fn done,
                                          void *user);
/** The same with metadata (copied). */
EDDY_EXPORT eddy_status eddy_rfeed_accept_meta(eddy_rfeed *feed, const eddy_event_meta *meta,
                                               void *event, eddy_rfeed_done_fn done, void *user);

/** Feeds a live event (meta may be NULL: fed without metadata; copied) without waiting, as
 * eddy_feed_offer: the twin that the reactive accept already is, taking eddy_feed_offer's
 * arguments. done runs exactly once with the outcome, from the loop (never inside this call,
 * unlike eddy_feed_offer's, which may run before it returns). EDDY_ERR_INVALID_ARGUMENT (done not
 * called) for a NULL feed, event or done; EDDY_ERR_NOMEM (done not called) out of memory.
 * Ownership: event stays the caller's until done runs. */
EDDY_EXPORT eddy_status eddy_rfeed_offer(eddy_rfeed *feed, const eddy_event_meta *meta, void *event,
                                         eddy_rfeed_done_fn done, void *user);

/** A subscription handler (reactive bus; spec.user = the feed) that feeds each delivery to the
 * feed, decoded with cfg.decode and with the delivery's stored metadata when it carries some:
 * applied, acknowledged; refused or failed, not acknowledged, so an AtLeastOnce subscription gets
 * it again. It returns EDDY_PENDING and finishes the delivery from the feed's completion (on the
 * loop), so the loop never waits for the feed. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rfeed_handler(eddy_delivery *d, void *user);

/** True once the feed is live and has not failed. */
EDDY_EXPORT bool eddy_rfeed_ready_for_live_delivery(eddy_rfeed *feed);
/** True once the feed failed (it refuses everything, now or after the five steps). */
EDDY_EXPORT bool eddy_rfeed_refuses_permanently(eddy_rfeed *feed);
/** When the feed failed, copies the failure into *cause (may be NULL) and returns true. */
EDDY_EXPORT bool eddy_rfeed_failure(eddy_rfeed *feed, eddy_error *cause);
EDDY_EXPORT eddy_status eddy_rfeed_stats(eddy_rfeed *feed, eddy_feed_info *out);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/rdeprecated.h). */
#define EDDY_DEPRECATED_RFEED_H
#include "eddy/rdeprecated.h"
#endif
