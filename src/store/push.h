/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources as one core both front ends drive. It decides
 * everything and does no I/O, starts no thread and arms no timer:
 *
 * - settling: what a routed message's outcome means for the broker (eddy__push_settle: ack,
 *   hand back or fail), and when a source stops routing (not started, failed);
 * - the model's aggregation of the outcomes of several feeds into one (eddy__push_agg) and what
 *   accept and accept-or-defer answer from it;
 * - each source's state (NOT_STARTED -> CATCHING_UP -> LIVE or FAILED), its progress (replayed,
 *   position, head, rate and time left, computed from eddy_feed_info snapshots and a clock the
 *   front end passes in), and start-all's choice and order (eddy__push_set_claim);
 * - the drive: the steps both front ends take alike around those decisions (a start's
 *   registration, its reports and its subscription following the state, settling a routed
 *   delivery, a catch-up's end, the ticker's samples), through a table of the front end's calls
 *   (eddy__push_ops: its domain feed, its bus, its way of reporting).
 *
 * The front ends (blocking/push.c: threads; reactive/push.c: libev) route through the domain
 * feeds, run the catch-ups and wait, and feed what happened back here. Feeds are opaque here
 * (void *: an eddy_domain_feed or an eddy_rdomain_feed).
 *
 * Thread: every function is safe from any thread (each object has one lock); no lock of the
 * core is held while a user callback or an op runs (the ops' enter/leave are the front end's). */
#ifndef EDDY_SRC_PUSH_H
#define EDDY_SRC_PUSH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/bus.h"
#include "eddy/domain.h"
#include "eddy/push.h"
#include "log.h"

/* ---- settling a routed message -------------------------------------------------------- */

/* What the route's outcome asks of the feed's source: nothing, or a failure to record. */
typedef struct eddy__push_settled {
    eddy_status handler; /* what the subscription handler returns / finishes the delivery with */
    bool failed;         /* the source failed just now: report its progress */
    bool pause;          /* the source has failed: pause its subscription (it stops consuming) */
} eddy__push_settled;

/* ---- the model ------------------------------------------------------------------------ */

typedef struct eddy__push_model {
    pthread_mutex_t lock;
    void **feeds;
    size_t n, cap;
    eddy_push_observer observer;
    eddy__logger log;
} eddy__push_model;

eddy_status eddy__push_model_init(eddy__push_model *m, const eddy_push_observer *observer,
                                  eddy_log_fn log, void *log_user);
void eddy__push_model_destroy(eddy__push_model *m);
/* The front ends' *_model_new: a zeroed object of size bytes whose first member is the model,
 * initialised (the caller frees it with eddy__push_model_free). NULL on OOM (err). */
void *eddy__push_model_new(size_t size, const eddy_push_observer *observer, eddy_log_fn log,
                           void *log_user, eddy_error *err);
/* Destroys the model that is obj's first member and frees obj. NULL is a no-op. */
void eddy__push_model_free(void *obj);
/* Adds a feed; a feed added twice, or to no model (m NULL), is refused
 * (EDDY_ERR_INVALID_ARGUMENT). */
eddy_status eddy__push_model_add(eddy__push_model *m, void *feed, eddy_error *err);
/* A copy of the feed list (the caller frees *feeds) taken under the lock, so routing runs
 * without it. *feeds is NULL when n is 0. */
eddy_status eddy__push_model_feeds(eddy__push_model *m, void ***feeds, size_t *n);

/* Aggregates the outcomes of one event over the model's feeds. */
typedef struct eddy__push_agg {
    size_t registered; /* feeds with a projection the event was routed to */
    bool any_deferred, any_delivered;
    eddy_status first_error;
    eddy_error err; /* the first error's detail */
} eddy__push_agg;

/* The first error of several parts is the answer: when *first is EDDY_OK and st is an error,
 * *first becomes st and kept gets its detail (err's, or the status's text). */
void eddy__push_keep_first(eddy_status *first, eddy_error *kept, eddy_status st,
                           const eddy_error *err);

void eddy__push_agg_init(eddy__push_agg *a);
/* One feed's outcome: st EDDY_OK with route, or an error with err (may be NULL). Feeds without
 * a projection are not routed to and not added. */
void eddy__push_agg_add(eddy__push_agg *a, eddy_status st, eddy_route route, const eddy_error *err);
/* The model's answer for the event: EDDY_ERR_UNAVAILABLE when no feed had a projection, else
 * the first feed's error, else EDDY_OK with *route DEFERRED when any feed deferred it,
 * DELIVERED when any delivered it, FILTERED otherwise. err (may be NULL) gets the detail. */
eddy_status eddy__push_agg_result(const eddy__push_agg *a, eddy_route *route, eddy_error *err);

/* One event routed over a model's feeds: the outcomes so far and the answers still to come. */
typedef struct eddy__push_routing {
    eddy__push_agg agg;
    int waiting;
} eddy__push_routing;

/* The front end's side of a model: its domain feeds' calls. route sends ev through feed and
 * answers through eddy__push_routed, at once (blocking) or later (reactive), returning EDDY_OK;
 * or it refuses up front with an error in err, which is then the feed's answer. */
typedef struct eddy__push_model_ops {
    bool (*has_projection)(void *feed);
    eddy_status (*route)(void *feed, const eddy_event *ev, const eddy_event_meta *meta,
                         eddy__push_routing *r, eddy_error *err);
} eddy__push_model_ops;

/* Routes ev to every feed of m with a projection (feeds without one are skipped), r gathering
 * the answers: when r->waiting is 0 on return every feed has answered, else the last
 * eddy__push_routed says so. EDDY_ERR_NOMEM (err) when nothing could be routed. */
eddy_status eddy__push_route_all(eddy__push_model *m, const eddy__push_model_ops *ops,
                                 const eddy_event *ev, const eddy_event_meta *meta,
                                 eddy__push_routing *r, eddy_error *err);
/* One feed's answer to eddy__push_route_all (err may be NULL): true when it was the last. */
bool eddy__push_routed(eddy__push_routing *r, eddy_status st, eddy_route route,
                       const eddy_error *err);

/* Every feed answered the event r routed: the model's answer (eddy__push_agg_result; route and
 * err may be NULL, err is left alone on EDDY_OK), told to m's observer as eddy__push_observe
 * says (m NULL: to nobody). */
eddy_status eddy__push_answer(eddy__push_model *m, const eddy__push_routing *r,
                              const eddy_event *ev, bool write_path, eddy_route *route,
                              eddy_error *err);

/* Tells obs (may be NULL, or without observe) the outcome; an error it returns is logged to log
 * and changes nothing. Call it outside every lock. */
void eddy__push_notify(const eddy_push_observer *obs, const eddy__logger *log, const eddy_event *ev,
                       eddy_status st, eddy_route route, const eddy_error *err);
/* Tells the model's observer (if any) the outcome, outside every lock; an error it returns is
 * logged and changes nothing. Then, for accept (write path, `write_path` true), logs a failure
 * the caller will not see (nothing registered: debug; an error: warn). */
void eddy__push_observe(eddy__push_model *m, const eddy_event *ev, eddy_status st, eddy_route route,
                        const eddy_error *err, bool write_path);

/* ---- sources -------------------------------------------------------------------------- */

typedef struct eddy__push_source {
    char *id, *subject, *group, *sub_name;
    void *feed;
    eddy_projection projection;
    eddy_filter *filter; /* owned copy; NULL: every event */
    bool go_live;
    void *fe; /* the front end's record for this source (freed with it) */
    /* Under the set's lock. */
    bool claimed; /* taken by an automatic add or a start-all: never started again */
    eddy_push_state state;
    uint64_t replayed;
    long long position, head;
    bool sampled; /* p0/t0 hold the first sample of this catch-up */
    long long p0, t0_ms;
    double rate, eta;
    eddy_error failure;
} eddy__push_source;

/* The front end's side of a source set, which the core's drive (below) calls. `fe` is the front
 * end's sources object (eddy__push_set_bind); `feed` a source's domain feed. */
typedef struct eddy__push_ops {
    /* The domain feed's calls (eddy_domain_* or eddy_rdomain_*). */
    eddy_status (*register_projection)(void *feed, const char *id,
                                       const eddy_projection *projection, const eddy_filter *filter,
                                       eddy_error *err);
    eddy_status (*stats)(void *feed, eddy_feed_info *info);
    bool (*has_projection)(void *feed);
    bool (*refuses_permanently)(void *feed);
    /* Resumes (consuming) or pauses the subscription called name. */
    eddy_status (*follow)(void *fe, const char *name, bool consuming, eddy_error *err);
    /* Around every state change or sample and its report: enter, then leave, which tells p (NULL:
     * nothing to tell) to the progress callback and, when changed, wakes whoever waits for a
     * state change. A front end whose progress reports must not overlap locks between them. */
    void (*enter)(void *fe);
    void (*leave)(void *fe, const eddy_push_progress *p, bool changed);
    /* True once the sources are being freed (a callback may free them): the drive then touches
     * no bus and no observer. NULL: never. */
    bool (*closing)(void *fe);
    /* Runs the catch-up (or go-live) of a claimed source the drive began (eddy__push_begin: it
     * is CATCHING_UP); a refused registration never gets here. arg is what the caller of
     * eddy__push_start_each or eddy__push_start_added passed. */
    eddy_status (*start)(void *fe, eddy__push_source *src, void *arg, eddy_error *err);
} eddy__push_ops;

typedef struct eddy__push_set {
    pthread_mutex_t lock;
    eddy_push_options opts;
    eddy__logger log;
    const eddy__push_ops *ops; /* eddy__push_set_bind */
    void *fe;
    eddy__push_source **v;
    size_t n, cap;
} eddy__push_set;

/* The front ends' *_sources_new check: EDDY_ERR_INVALID_SPEC for an unknown mode or startup.
 * opts may be NULL (the defaults). */
eddy_status eddy__push_check_options(const eddy_push_options *opts, eddy_error *err);
/* Copies the options (progress_ms 0 becomes the default). */
eddy_status eddy__push_set_init(eddy__push_set *s, const eddy_push_options *opts);
/* Gives the drive (below) the front end's calls; ops lives as the set, fe is the front end's. */
void eddy__push_set_bind(eddy__push_set *s, const eddy__push_ops *ops, void *fe);
/* Frees every source and its front-end record. */
void eddy__push_set_destroy(eddy__push_set *s);

/* Checks and copies a source: EDDY_ERR_INVALID_SPEC for a missing id, feed, apply, subject or
 * group; EDDY_ERR_INVALID_ARGUMENT for an id added already. The source is NOT_STARTED and not
 * claimed. *out lives as the set. */
eddy_status eddy__push_set_add(eddy__push_set *s, const char *id, void *feed,
                               const eddy_projection *projection, const eddy_filter *filter,
                               const char *subject, const char *group, bool go_live,
                               eddy__push_source **out, eddy_error *err);
/* The front ends' add: eddy__push_set_add, with a zeroed record of fe_size bytes for the front
 * end in src->fe (freed with the source) and the source's subscription in *sub
 * (eddy__push_sub_spec, with handler and src->fe as its user). When subscribing fails, the
 * front end undoes the add with eddy__push_set_drop_last. */
eddy_status eddy__push_add(eddy__push_set *s, const char *id, void *feed,
                           const eddy_projection *projection, const eddy_filter *filter,
                           const char *subject, const char *group, bool go_live, size_t fe_size,
                           eddy_handler_fn handler, eddy_subscription_spec *sub,
                           eddy__push_source **out, eddy_error *err);
/* Removes the last source added (its subscription failed). */
void eddy__push_set_drop_last(eddy__push_set *s, eddy__push_source *src);
/* The source with this id, or NULL. */
eddy__push_source *eddy__push_set_find(eddy__push_set *s, const char *id);

/* Claims the source for an automatic start: true when it was not claimed yet. */
bool eddy__push_set_claim_one(eddy__push_set *s, eddy__push_source *src);
/* Start-all: claims every source not claimed yet, in the order they were added, and returns
 * them in *out (the caller frees the array; NULL when *n is 0). Sources already started are
 * skipped, so a second start-all claims none. */
eddy_status eddy__push_set_claim(eddy__push_set *s, eddy__push_source ***out, size_t *n,
                                 eddy_error *err);
/* Start-all's claim (eddy__push_set_claim) with, when ids is not NULL, the list of their ids
 * (eddy__push_ids); when the list cannot be made, gives the sources back (EDDY_ERR_NOMEM). */
eddy_status eddy__push_claim_all(eddy__push_set *s, eddy__push_source ***out, size_t *n,
                                 const char ***ids, eddy_error *err);
/* Gives claimed sources back (nothing was started: the claiming call failed). */
void eddy__push_set_unclaim(eddy__push_set *s, eddy__push_source *const *srcs, size_t n);
/* The ids of srcs[0..n) as a NULL-terminated array the caller frees with free() (the strings
 * live as the set). */
eddy_status eddy__push_ids(eddy__push_source *const *srcs, size_t n, const char ***ids);

/* Whether a message for src is routed at all: only once its projection is registered and while
 * it has not failed (CATCHING_UP or LIVE). Otherwise the handler hands it back. */
bool eddy__push_admits(eddy__push_set *s, eddy__push_source *src);

/* The subscription's pause state follows the source's: it consumes only while the source routes
 * (CATCHING_UP or LIVE, as eddy__push_admits). A source subscribes paused (eddy__push_sub_spec),
 * so nothing is read, and nothing handed back, before its projection is registered: the drive
 * resumes the subscription after the registration (manual mode: start-all; automatic: the
 * add). A source that fails pauses it: it stops consuming, and the broker keeps its messages
 * for the feed that replaces it. The drive applies this after every state change
 * (eddy__push_follow, through the front end's pause/resume). */
bool eddy__push_consuming(eddy_push_state state);

/* The source's subscription: "push.<id>", Competing on the source's subject and group,
 * AtLeastOnce (hand-backs need it), paused (see eddy__push_consuming), with handler/user. The
 * strings are borrowed from src (the bus copies them). */
void eddy__push_sub_spec(const eddy__push_source *src, eddy_handler_fn handler, void *user,
                         eddy_subscription_spec *out);

/* Before routing a message: true to route it; false to hand it back (EDDY_ERR_UNAVAILABLE),
 * with *pause true when the source has failed (its subscription should be paused: a delivery
 * still in hand when it failed). */
bool eddy__push_gate(eddy__push_set *s, eddy__push_source *src, bool *pause);

/* Settles a message src routed: st/route/err from the domain feed's route; refuses_permanently
 * from the feed after the route. DELIVERED and FILTERED: acknowledge (EDDY_OK). DEFERRED: hand
 * back (EDDY_ERR_UNAVAILABLE). EDDY_ERR_ILLEGAL_STATE with no projection registered or from a
 * failed feed: hand back (the message is not at fault; a failed feed also fails the source).
 * EDDY_ERR_UNREADABLE_FILTER: the source fails (logged), hands this message back and stops
 * consuming (pause set: its subscription is paused). Any other error (decode, apply, an event
 * without the metadata its projection is keyed by): a failed attempt (redelivered, dead-lettered
 * after max_deliveries). */
eddy__push_settled eddy__push_settle(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                                     eddy_route route, const eddy_error *err, bool has_projection,
                                     bool refuses_permanently);

/* State transitions; each fills *out (may be NULL) with the progress to report. */
/* The projection is registered, the catch-up (or go-live) begins: CATCHING_UP. */
void eddy__push_catching_up(eddy__push_set *s, eddy__push_source *src, long long now_ms,
                            eddy_push_progress *out);
/* A snapshot of the feed while it catches up: updates replayed/position/head, rate and ETA.
 * Returns false (and leaves *out alone) when the source is no longer catching up. */
bool eddy__push_sample(eddy__push_set *s, eddy__push_source *src, const eddy_feed_info *info,
                       long long now_ms, eddy_push_progress *out);
/* The catch-up (or go-live) of a CATCHING_UP source returned st: LIVE on EDDY_OK with the feed
 * live, FAILED with the reason otherwise (logged as an error), except a replay stopped or
 * cancelled before the feed went live (eddy_domain_stop_catch_up, freeing the sources), which is
 * not the feed's failure: FAILED with EDDY_ERR_CLOSED, logged as info. info (the feed after the
 * call) may be NULL. */
void eddy__push_ended(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                      const eddy_error *err, const eddy_feed_info *info, long long now_ms,
                      eddy_push_progress *out);
/* The source failed before its catch-up (its registration was refused). */
void eddy__push_fail(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                     const eddy_error *err, eddy_push_progress *out);
/* The source's progress now. */
void eddy__push_snapshot(eddy__push_set *s, eddy__push_source *src, eddy_push_progress *out);
/* The front ends' *_sources_stats: the progress of the source with this id, a fresh sample
 * while it catches up (the ops' stats gives the feed's figures), so the figures do not depend
 * on the ticker. EDDY_ERR_INVALID_ARGUMENT
 * for a NULL id or out, or an id the set does not hold. */
eddy_status eddy__push_stats(eddy__push_set *s, const char *id, eddy_push_progress *out);
/* The sources CATCHING_UP now, in the order they were added (the caller frees the array; NULL
 * when *n is 0). Sources are never removed while they can be catching up, so the pointers stay
 * valid as long as the set. */
eddy_status eddy__push_set_catching(eddy__push_set *s, eddy__push_source ***out, size_t *n);
/* True while any source is CATCHING_UP. */
bool eddy__push_any_catching_up(eddy__push_set *s);

/* ---- the drive: what both front ends do alike, through the set's ops ------------------- */

/* The subscription follows the source's state (eddy__push_consuming); a failure to pause or
 * resume is logged. */
void eddy__push_follow(eddy__push_set *s, eddy__push_source *src);
/* A delivery for src arrived: true to route it into src's feed; false to hand it back
 * (EDDY_ERR_UNAVAILABLE), pausing the subscription when the source has failed. */
bool eddy__push_let_in(eddy__push_set *s, eddy__push_source *src);
/* A delivery d for src arrived: true to route it into src's feed, with its event in *ev and
 * its stored metadata in *meta (*metap: meta, or NULL when it has none); false to hand it back
 * (EDDY_ERR_UNAVAILABLE), as eddy__push_let_in. *ev is borrowed like d. */
bool eddy__push_admit(eddy__push_set *s, eddy__push_source *src, const eddy_delivery *d,
                      const eddy_event **ev, eddy_event_meta *meta, const eddy_event_meta **metap);
/* Settles a delivery src routed (st/route/err: the route's answer, or its refusal up front) as
 * eddy__push_settle says, reports a failure, pauses the subscription when told to and tells the
 * sources' observer. Returns what the handler finishes the delivery with. */
eddy_status eddy__push_settle_routed(eddy__push_set *s, eddy__push_source *src,
                                     const eddy_event *ev, eddy_status st, eddy_route route,
                                     const eddy_error *err);
/* A start's first half: registers src's projection and makes the source CATCHING_UP (reported),
 * then resumes its subscription (before the catch-up, which defers what arrives meanwhile); the
 * front end then runs the catch-up (or go-live) and hands its end to eddy__push_caught_up. A
 * refused registration fails the source (eddy__push_refused). EDDY_ERR_CLOSED when the progress
 * callback freed the sources. */
eddy_status eddy__push_begin(eddy__push_set *s, eddy__push_source *src, eddy_error *err);
/* src could not start (st, e: why): FAILED, reported; returns st with "push source '<id>': "
 * and e's detail in err. */
eddy_status eddy__push_refused(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                               const eddy_error *e, eddy_error *err);
/* src's catch-up (or go-live) ended with st/err, or was refused up front: reads the feed's
 * figures, moves the source on (eddy__push_ended), reports it and has the subscription follow.
 * *out gets the progress reported. */
void eddy__push_caught_up(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                          const eddy_error *err, eddy_push_progress *out);
/* A start's end as its caller sees it: eddy__push_caught_up with st/e (the catch-up's or
 * go-live's answer, or its refusal up front), then st with "push source '<id>': " and e's
 * detail in err when st is an error, the source's failure when it failed all the same, else
 * EDDY_OK. */
eddy_status eddy__push_start_ended(eddy__push_set *s, eddy__push_source *src, eddy_status st,
                                   const eddy_error *e, eddy_error *err);
/* Start-all's starts, after eddy__push_claim_all: eddy__push_begin, then ops->start, for each
 * of srcs[0..n) in order,
 * with arg, until the sources are being freed. Returns the first failure after trying every
 * source (its detail in *first_err, which may be NULL and is left alone when all started). */
eddy_status eddy__push_start_each(eddy__push_set *s, eddy__push_source *const *srcs, size_t n,
                                  void *arg, eddy_error *first_err);
/* A source just added: in automatic mode it starts at once (eddy__push_begin, then ops->start
 * with arg), once. */
eddy_status eddy__push_start_added(eddy__push_set *s, eddy__push_source *src, void *arg,
                                   eddy_error *err);
/* Samples every source catching up and reports its progress (the ticker's work). Returns false
 * when none is catching up (the ticker may stop). */
bool eddy__push_sample_all(eddy__push_set *s);

/* Rate and estimated time left of a replay that went from position p0 at t0_ms to position at
 * now_ms and ends at head: rate in positions per second (0 while unknown), *eta in seconds (0
 * once position reached head, negative while unknown). */
void eddy__push_estimate(long long p0, long long t0_ms, long long position, long long head,
                         long long now_ms, double *rate, double *eta);

/* Monotonic milliseconds, the clock progress is computed with. */
long long eddy__push_now_ms(void);

#endif
