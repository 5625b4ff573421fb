/* SPDX-License-Identifier: BSD-3-Clause */
/* The catch-up projection feed as one state machine both front ends drive. It decides everything
 * (holding, dropping duplicates, when to apply, refusing, failing, the marker and its retries,
 * which projection callback runs when) and does no I/O and never waits: it takes the events of a
 * replay page as data and answers with what to do. The state machine calls only the user's pure
 * functions (decode, event_id, free_event); the projection's callbacks run only in the calls of
 * "the user's side of a run" below, on the driver's thread, inside the front end's
 * eddy__feed_calls hooks. Neither ever runs under its lock.
 *
 * Three kinds of calls:
 *
 * 1. Live events. eddy__feed_accept answers at once with REFUSED (err says why), DUPLICATE
 *    (applied already: answer EDDY_OK without applying), APPLY (apply it now on this thread,
 *    then report with eddy__feed_live_done) or HELD: the feed keeps the entry, and the waiter
 *    given is completed later through an out list (below) with the final status. Duplicates,
 *    here and when held events are applied: an event whose metadata carries a store position at
 *    or below the position the standing replay reached is one, exactly, whatever the backlog;
 *    one without a position (or above it) is one when its id is among the last
 *    dedup_cache_size ids replayed or the last dedup_cache_size applied live.
 *
 * 2. Runs. A catch-up, a go-live and (reactive) a failure are runs: eddy__feed_catch_up /
 *    eddy__feed_go_live hand the caller a run to drive, and the front end loops
 *        eddy__feed_run_next(f, run, now, &step, &out)  -> do what step says, report, repeat
 *    until step.kind is EDDY__STEP_DONE (the run is then freed; step.st/err is the result for
 *    the caller). Steps: WAIT (park until the run's waiter is completed, then ask again),
 *    MARKER_EXISTS, SAVE_MARKER, DELETE_MARKER (not before step.not_before_ms), READ_HEAD,
 * READ_PAGE (read the page after step.position; hand each stored event to eddy__feed_page_event,
 * which answers APPLY, SKIP or STOP; then eddy__feed_page_done), APPLY (a held event, with
 *    step.event/meta), STARTED, COMPLETED, ABANDONED (the projection callbacks). Each step but
 *    WAIT and DONE is reported with the matching eddy__feed_*_done call (the front end's own
 *    steps all through eddy__feed_step_report) before asking again.
 *    Only one run holds the turn at a time; others wait (WAIT) for it.
 *
 * 3. Commands that only change state: eddy__feed_stop, eddy__feed_close, cancellations.
 *
 * Out lists: every call that can answer waiters takes an eddy__feed_out. The core fills it under
 * its lock and the front end runs it afterwards, outside any lock, with eddy__feed_out_run: the
 * complete callback the front end gives runs once per answered waiter (an accept's with its
 * status; a parked run's with EDDY_OK: ask for the next step). out.start, when set, is a run
 * nobody asked for (a catch-up or go-live a callback asked for, a reactive failure) that the
 * front end must drive now, after attaching a waiter with eddy__feed_run_attach.
 *
 * Callbacks asking for things: a front end knows when the projection (or a completion it runs)
 * calls it back on the feed and passes from_callback. Such calls never wait: catch-up and go-live
 * become requests the feed runs once the callback returned (the active run carries on with
 * them, or eddy__feed_poll_deferred hands one to the thread leaving its outermost callback).
 *
 * Modes: the blocking and the reactive front ends share every rule except these, which
 * include/eddy/feed.h and rfeed.h give each (EDDY__FEED_BLOCKING / EDDY__FEED_REACTIVE):
 * - failure: blocking refuses everything at once and applies what it held only when the feed
 *   was live before the failed catch-up; reactive runs the five steps (delete the marker, first
 *   attempt + 3 retries then an error naming the feed id to the log; refuse later events not
 *   from the projection; refuse listeners' held events; apply what it took in and what the
 *   projection feeds meanwhile; then refuse everything);
 * - reactive fails the feed when an event nothing waits for (waiter NULL) fails or is refused,
 *   or one the projection fed during a run does; blocking callers always wait;
 * - an accept whose caller blocks its thread (waits) is refused instead of held when it comes
 *   from a callback: nothing could apply it while that thread waits.
 *
 * Both front ends drive their runs with the run driver of feed_drive.h, which makes this loop
 * once and leaves them only each step's I/O (sent at once on the blocking front end, on the loop
 * with its reply told later on the reactive one) and their way of waiting. from_callback is the
 * blocking front end's thread-local frames and the reactive one's depth counter.
 *
 * Thread: every function is safe from any thread (one lock); eddy__feed_run_next and the _done
 * calls of one run are made by whoever drives it, one at a time. */
#ifndef EDDY_SRC_FEED_H
#define EDDY_SRC_FEED_H

#include <stdbool.h>

#include "eddy/bus.h"
#include "eddy/feed.h"
#include "eddy/writes.h"
#include "log.h"

typedef enum eddy__feed_mode { EDDY__FEED_BLOCKING, EDDY__FEED_REACTIVE } eddy__feed_mode;

typedef struct eddy__feed eddy__feed;
typedef struct eddy__feed_run eddy__feed_run;
typedef struct eddy__feed_entry eddy__feed_entry;

/* Marker deletion on a reactive failure: the first attempt plus this many retries. */
#define EDDY__FEED_DELETE_RETRIES 3
/* Retry n (1-based) comes EDDY__FEED_RETRY_MS << (n - 1) after attempt n failed, measured from
 * the now of the first eddy__feed_run_next after its report. */
#define EDDY__FEED_RETRY_MS 50

/* Checks cfg (EDDY_ERR_INVALID_SPEC naming the field, EDDY_ERR_INVALID_ARGUMENT for the id) and
 * copies what the core needs; has_marker: a checkpoint storage exists. NULL *out on failure. */
eddy_status eddy__feed_new(const eddy_feed_config *cfg, eddy__feed_mode mode, bool has_marker,
                           eddy__feed **out, eddy_error *err);
/* Frees the core. Only once nothing uses it: no run, no entry outstanding (eddy__feed_close
 * first and let every driver and applier finish). */
void eddy__feed_free(eddy__feed *f);
const char *eddy__feed_id(const eddy__feed *f);

/* ---- out lists ------------------------------------------------------------------------- */

typedef struct eddy__feed_out {
    eddy__feed_entry *done, *done_tail; /* answered accepts, in the order answered */
    eddy__feed_run *woken, *woken_tail; /* parked runs to resume */
    eddy__feed_run *start;              /* a run the caller must drive now */
} eddy__feed_out;

void eddy__feed_out_init(eddy__feed_out *o);
/* Called once per answered waiter: st and err (NULL on EDDY_OK) are the outcome, borrowed for
 * the call. Waiters that are NULL (nothing waits) are skipped. */
typedef void (*eddy__feed_complete_fn)(void *waiter, eddy_status st, const eddy_error *err,
                                       void *ctx);
/* Completes everything in o (entries first, in order, then runs) and frees the answered
 * entries. o.start is left for the caller. */
void eddy__feed_out_run(eddy__feed_out *o, eddy__feed_complete_fn complete, void *ctx);

/* ---- live events ----------------------------------------------------------------------- */

typedef enum eddy__accept_kind {
    EDDY__ACCEPT_REFUSED,   /* not taken: the returned status and err say why */
    EDDY__ACCEPT_DUPLICATE, /* applied already (see 1. above): EDDY_OK without applying */
    EDDY__ACCEPT_APPLY,     /* apply it now, then eddy__feed_live_done(entry) */
    EDDY__ACCEPT_HELD,      /* held: the waiter is completed later */
    EDDY__ACCEPT_DEFERRED   /* flags.defer and the feed is not live: not taken, EDDY_OK */
} eddy__accept_kind;

typedef struct eddy__accept_flags {
    bool from_callback; /* fed from a callback of this feed (the projection's) */
    bool waits;         /* the caller blocks its thread until the waiter completes */
    /* Never hold: where the feed would hold the event (not live, a catch-up asked for or
     * replaying) or refuse it because it is stopped, answer DEFERRED instead (a domain feed's
     * accept-or-defer and route). A failed feed still refuses it. Deciding this here, under the
     * lock, leaves no gap between a readiness check and the accept. */
    bool defer;
} eddy__accept_flags;

/* Takes a live event in. meta may be NULL (copied when not); event is the front end's and
 * must stay valid until the entry is answered or live_done is called. Returns EDDY_OK for
 * DUPLICATE, APPLY, HELD and DEFERRED, the refusal otherwise. *entry is set for APPLY. */
eddy_status eddy__feed_accept(eddy__feed *f, const eddy_event_meta *meta, void *event, void *waiter,
                              eddy__accept_flags flags, eddy__accept_kind *kind,
                              eddy__feed_entry **entry, eddy__feed_out *out, eddy_error *err);
/* The outcome of an APPLY: records the id on success, frees the entry, returns st with err
 * filled (apply_err's detail, or one naming the event). */
eddy_status eddy__feed_live_done(eddy__feed *f, eddy__feed_entry *entry, eddy_status st,
                                 const eddy_error *apply_err, eddy__feed_out *out, eddy_error *err);
/* A waiter gave up (its cancel handle fired): true when its entry was still held, which is then
 * dropped unanswered (the caller returns EDDY_ERR_CANCELLED); false when it is being applied or
 * already answered: the completion is on its way, wait for it. */
bool eddy__feed_accept_cancel(eddy__feed *f, void *waiter);

/* ---- runs ------------------------------------------------------------------------------ */

/* Asks for a catch-up. EDDY_ERR_ILLEGAL_STATE (failed feed), EDDY_ERR_CLOSED. from_callback:
 * recorded as a request, *run NULL, EDDY_OK. Otherwise *run is the caller's to drive; waiter is
 * what its WAIT steps wait on. */
eddy_status eddy__feed_catch_up(eddy__feed *f, void *waiter, bool from_callback,
                                eddy__feed_run **run, eddy_error *err);
/* The front ends' catch-up and go-live calls: eddy__feed_go_live when go_live, else
 * eddy__feed_catch_up. */
eddy_status eddy__feed_start(eddy__feed *f, bool go_live, void *waiter, bool from_callback,
                             eddy__feed_run **run, eddy_error *err);
/* Asks for go-live: EDDY_OK with *run NULL when the feed is live and nothing runs, or from a
 * callback (the running catch-up goes live when it ends, or a request is recorded); else a run
 * to drive as for catch-up. */
eddy_status eddy__feed_go_live(eddy__feed *f, void *waiter, bool from_callback,
                               eddy__feed_run **run, eddy_error *err);
/* A request a callback made, for the thread leaving its outermost callback: a run to drive
 * (waiter attached with eddy__feed_run_attach), or NULL. */
eddy__feed_run *eddy__feed_poll_deferred(eddy__feed *f);
/* Sets the waiter of a run from out.start or poll_deferred, before its first step. */
void eddy__feed_run_attach(eddy__feed_run *run, void *waiter);

/* Stops the running replay, or an idle feed that is not live (answering its held events). */
void eddy__feed_stop(eddy__feed *f, eddy__feed_out *out);
/* The driver's cancel handle fired. Returns true when the run had been resumed and the
 * completion of its waiter is on its way (the driver waits for it before asking again). */
bool eddy__feed_run_cancel(eddy__feed *f, eddy__feed_run *run);
/* Teardown: later calls are refused with EDDY_ERR_CLOSED, held events answered with it, the
 * running catch-up ends (EDDY_ERR_CLOSED) at its next step, parked runs are resumed. */
void eddy__feed_close(eddy__feed *f, eddy__feed_out *out);

typedef enum eddy__feed_step_kind {
    EDDY__STEP_DONE,
    EDDY__STEP_WAIT,
    EDDY__STEP_MARKER_EXISTS,
    EDDY__STEP_STARTED,
    EDDY__STEP_POSITION, /* ask the projection's position (projection.position) */
    EDDY__STEP_READ_HEAD,
    EDDY__STEP_READ_PAGE,
    EDDY__STEP_COMPLETED,
    EDDY__STEP_APPLY, /* a held event */
    EDDY__STEP_SAVE_MARKER,
    EDDY__STEP_ABANDONED,
    EDDY__STEP_DELETE_MARKER
} eddy__feed_step_kind;

typedef struct eddy__feed_step {
    eddy__feed_step_kind kind;
    long long position;          /* READ_PAGE: read after this position */
    size_t max;                  /* READ_PAGE: stored events to examine */
    char marker[32];             /* SAVE_MARKER: the value */
    long long not_before_ms;     /* DELETE_MARKER: not before this time (now's clock; 0: now) */
    void *event;                 /* APPLY */
    const eddy_event_meta *meta; /* APPLY: NULL for an event fed without metadata */
    eddy_status st;              /* DONE: the caller's result */
    eddy_error err;              /* DONE: its detail when st != EDDY_OK */
} eddy__feed_step;

/* now_ms: the caller's monotonic clock in milliseconds; the core reads no clock of its own, so
 * it decides times (the marker deletion's retries) only from what it is given. */
void eddy__feed_run_next(eddy__feed *f, eddy__feed_run *run, long long now_ms,
                         eddy__feed_step *step, eddy__feed_out *out);

/* Reports a step: STARTED, COMPLETED, APPLY, SAVE_MARKER, DELETE_MARKER, ABANDONED (st
 * EDDY_OK). err (may be NULL) is the detail of a failure. */
void eddy__feed_step_done(eddy__feed *f, eddy__feed_run *run, eddy_status st, const eddy_error *err,
                          eddy__feed_out *out);
void eddy__feed_marker_checked(eddy__feed *f, eddy__feed_run *run, eddy_status st, bool exists,
                               const eddy_error *err);
void eddy__feed_head_read(eddy__feed *f, eddy__feed_run *run, eddy_status st, long long head,
                          const eddy_error *err);
/* The projection's position (EDDY__STEP_POSITION): st its status, position where the model is. */
void eddy__feed_position_read(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                              long long position, const eddy_error *err);

typedef enum eddy__page_kind {
    EDDY__PAGE_APPLY, /* apply step.event/meta, then eddy__feed_replay_applied */
    EDDY__PAGE_SKIP,  /* go on with the next stored event */
    EDDY__PAGE_STOP   /* stop reading this page; call eddy__feed_page_done */
} eddy__page_kind;

/* One stored event of the page being read (borrowed for the call): matches it against the
 * feed's filter with its data field reader (SKIP when it does not match: never decoded; a
 * matching error fails the run), then decodes it (the step holds the user's event, which the
 * core frees in eddy__feed_replay_applied). Front ends read pages without a filter, so both
 * decide which stored events a replay applies the same way. */
eddy__page_kind eddy__feed_page_event(eddy__feed *f, eddy__feed_run *run, const eddy_event *ev,
                                      const eddy_event_meta *meta, eddy__feed_step *step);
/* The outcome of a replayed apply. Returns EDDY_OK to go on reading the page, an error to stop
 * (the run failed or was stopped). */
eddy_status eddy__feed_replay_applied(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                      const eddy_error *err);
/* The page was read: st is the read's status, next_position the last position examined. */
void eddy__feed_page_done(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                          long long next_position, const eddy_error *err);

/* ---- the user's side of a run ----------------------------------------------------------- */

/* How a front end marks the user's code the core runs for it: enter before and leave after
 * each callback (the reactive depth counter), check where the driver may tell the core what
 * happened meanwhile, before a step's outcome is reported (blocking: a fired cancel handle).
 * Each may be NULL; calls itself may be NULL. */
typedef struct eddy__feed_calls {
    void (*enter)(void *ctx);
    void (*leave)(void *ctx);
    void (*check)(void *ctx);
    void *ctx;
} eddy__feed_calls;

typedef struct eddy__model eddy__model;

/* With cfg.writes, makes the model kept in Redis in namespace ns (EDDY_ERR_NOMEM); EDDY_OK and
 * nothing without. The front end calls it once, after eddy__feed_new. */
eddy_status eddy__feed_model_new(eddy__feed *f, const char *ns, eddy_error *err);
/* A front end's feed, whole: the checkpoint storage it was given checked (ckpt: one was given;
 * complete: it has exists, save and remove), then eddy__feed_new and eddy__feed_model_new in
 * namespace ns. NULL *out on failure. */
eddy_status eddy__feed_open(const eddy_feed_config *cfg, eddy__feed_mode mode, bool ckpt,
                            bool complete, const char *ns, eddy__feed **out, eddy_error *err);
/* Whether a checkpoint storage c (a pointer to eddy_checkpoints or eddy_rcheckpoints; NULL: none
 * given) has its ops table and all three operations: the `complete` of eddy__feed_open and of
 * the reactive domain's check, written once for both front ends' tables, which differ only in
 * their signatures. */
#define EDDY__CHECKPOINTS_COMPLETE(c)                                                              \
    ((c) && (c)->ops && (c)->ops->exists && (c)->ops->save && (c)->ops->remove)
/* EDDY_ERR_INVALID_SPEC for a checkpoint storage that lacks an operation, naming the feed id, or
 * the domain feed when id is NULL. */
eddy_status eddy__feed_checkpoints_incomplete(const char *id, eddy_error *err);
/* The model, or NULL: what the front end's commits name. With it, the front end answers
 * EDDY__STEP_POSITION with the model's committed position (eddy__model_read_cmd). */
const eddy__model *eddy__feed_model(const eddy__feed *f);

/* Runs a step that only calls the user (STARTED, COMPLETED, ABANDONED; POSITION and APPLY
 * without a model) and reports it; true when it did. false: the step is the front end's. */
bool eddy__feed_run_user_step(eddy__feed *f, eddy__feed_run *run, const eddy__feed_step *step,
                              const eddy__feed_calls *calls, eddy__feed_out *out);
/* Applies a held (STEP_APPLY with a model) or live (ACCEPT_APPLY) event: the projection's apply,
 * or with a model its write set gathered into w (the caller's, initialised for the model):
 * then *commit is set and the caller commits w alone (page false) and reports the commit's
 * outcome instead (eddy__feed_step_done or eddy__feed_live_done). */
eddy_status eddy__feed_apply(eddy__feed *f, void *event, const eddy_event_meta *meta,
                             eddy_writes *w, bool *commit, const eddy__feed_calls *calls,
                             eddy_error *err);
/* A READ_PAGE step's reader callback: decides (eddy__feed_page_event), applies through the
 * projection or gathers into the page's batch, reports; returns what the callback returns. */
eddy_status eddy__feed_page_apply(eddy__feed *f, eddy__feed_run *run, const eddy_event *ev,
                                  const eddy_event_meta *meta, const eddy__feed_calls *calls);
/* The page's read ended (st, next_position the last position examined). With a model and a
 * batch, returns it: the caller commits it with its position (page true) and reports the
 * commit with eddy__feed_page_committed, which reports the page. Otherwise reports the page
 * (eddy__feed_page_done) and returns NULL. */
const eddy_writes *eddy__feed_page_read(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                        long long next_position, const eddy_error *err);
void eddy__feed_page_committed(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                               const eddy_error *err);
/* Reports the outcome of the front end's own step handed out last (MARKER_EXISTS, POSITION and
 * APPLY with a model, READ_HEAD, READ_PAGE, SAVE_MARKER, DELETE_MARKER), whichever it was: st its
 * status, err (may be NULL) its detail, value what it read (MARKER_EXISTS: non-zero when the
 * marker exists; POSITION: the model's position; READ_HEAD: the head; READ_PAGE: the last
 * position examined; otherwise unused). calls->check runs before a read's outcome is told. For
 * READ_PAGE, returns what eddy__feed_page_read returns (a batch to commit, then
 * eddy__feed_page_committed); NULL for every other step. */
const eddy_writes *eddy__feed_step_report(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                          long long value, const eddy_error *err,
                                          const eddy__feed_calls *calls, eddy__feed_out *out);

/* ---- listeners ------------------------------------------------------------------------- */

/* What a listener does with a bus delivery: decodes its event (with the delivery's stored
 * metadata, copied into *meta, when it carries some: *has_meta). EDDY_OK with *event NULL: not
 * for this projection, acknowledge it. EDDY_OK with *event: feed it (the caller owns the event
 * and releases it with eddy__feed_free_event). An error: not decoded, do not acknowledge it. */
eddy_status eddy__feed_listen(eddy__feed *f, const eddy_delivery *d, void **event,
                              eddy_event_meta *meta, bool *has_meta, eddy_error *err);
void eddy__feed_free_event(eddy__feed *f, void *event);

/* A feed as a subscription's handler (feed_listen.c): decodes the delivery's event, acknowledges
 * one not for this projection, and offers the rest through `offer`, the front end's
 * asynchronous accept on `feed`, whose `done` runs exactly once, before offer returns or later
 * on any thread, unless offer fails. Returns what the handler returns: the outcome when it came
 * before offer returned, EDDY_PENDING when the event is held (its completion finishes the
 * delivery), an error when it was not decoded or offered (not acknowledged). */
typedef eddy_status (*eddy__feed_offer_fn)(void *feed, const eddy_event_meta *meta, void *event,
                                           eddy_feed_done_fn done, void *user);
eddy_status eddy__feed_handle(eddy__feed *f, eddy_delivery *d, eddy__feed_offer_fn offer,
                              void *feed);

/* ---- state ----------------------------------------------------------------------------- */

void eddy__feed_info(eddy__feed *f, eddy_feed_info *out);
/* The public state calls, answered alike for both front ends; f may be NULL (the caller's feed
 * was). stats: EDDY_ERR_INVALID_ARGUMENT for a NULL f or out. ready: live, which a feed that
 * failed never is. failure: copies the failure into *cause (may be NULL); false when the feed
 * has not failed (refuses permanently is failure with no cause). */
eddy_status eddy__feed_stats(eddy__feed *f, eddy_feed_info *out);
bool eddy__feed_ready(eddy__feed *f);
bool eddy__feed_failure(eddy__feed *f, eddy_error *cause);
bool eddy__feed_keyed_by_metadata(const eddy__feed *f);

#endif
