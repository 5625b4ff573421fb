/* SPDX-License-Identifier: BSD-3-Clause */
/* The consumer: one subscription's reading, as a state machine both front ends drive.
 *
 * A front end loops:
 *   1. eddy__consumer_plan(c, now, &plan)   -> commands to send as one pipeline on the
 *      subscription's own connection; the last may be a blocking read (plan.block_ms >= 0),
 *      or there may be nothing to send and a pause (plan.idle_ms) to wait, interruptibly.
 *   2. send them, collect one reply per command, then eddy__consumer_feed(c, now, wall, plan,
 *      replies, n, &out)
 *      -> deliveries to hand to the handler.
 *   3. each delivery is settled exactly once with eddy__consumer_settle (any thread), which
 *      frees it (or, never handed to a handler, dropped with eddy__consumer_drop).
 *   The front end plans again as soon as a round is fed and dispatched, without waiting for
 *   the handlers; when a plan has nothing to send it waits idle_ms, and a settle for which
 *   eddy__consumer_settle returns true ends that wait. The core first waits (up to
 *   EDDY__ROUND_WAIT_MS) for the deliveries of the last round, as one batch: their
 *   acknowledgements then go out together and the next read is a full one. After that, while
 *   deliveries are outstanding (a slow handler, or one that returned EDDY_PENDING), it plans
 *   only live reads (">": they never return an entry a handler holds) for the room left in
 *   the batch (read_batch - outstanding; none when there is none), blocking at most
 *   EDDY__OUTSTANDING_BLOCK_MS, so the acknowledgements of deliveries settling meanwhile do
 *   not wait long behind it; idle waits are as short. Recovery reads of its own pending
 *   entries, XAUTOCLAIM and XPENDING counts are planned only when nothing is outstanding, as
 *   they could return an entry a handler still holds; a claim round overdue by
 *   redelivery_idle_ms (or a history read owed after a reconnect or a resume) stops the live
 *   reads until the outstanding deliveries are settled, so a steady flow of slow handlers
 *   cannot put recovery off for ever.
 *   On a lost connection: eddy__consumer_reset(c), reconnect, go on from 1. Unconfirmed
 *   acknowledgements are sent again (XACK is idempotent); groups are checked again (a
 *   restarted Redis may have lost them); the consumer's own pending entries are read again.
 *
 * What it decides, in order: subject discovery for patterns; group creation (at "$" for the
 * streams that exist when the subscription starts, so their history is skipped; at "0" for
 * streams found later, which are newer than the subscription, so nothing published to a
 * brand-new subject is missed); for AtLeastOnce, its own pending entries first, then periodic
 * XAUTOCLAIM of entries idle longer than redelivery_idle_ms, each checked against
 * max_deliveries (XPENDING gives the counts); then live reads. Entries that do not decode,
 * and entries delivered too often, go to the dead-letter stream together with their
 * acknowledgement in one MULTI/EXEC. A handler's hand-back (EDDY_ERR_UNAVAILABLE,
 * AtLeastOnce) leaves the entry pending and sets its delivery count back with XCLAIM
 * RETRYCOUNT, so it does not count toward max_deliveries. A blocking read is pipelined behind
 * acknowledgements, hand-backs, refreshes, commits and replies (the server runs them before
 * it blocks; sent again after a cut read, they change nothing), never behind a dead letter's
 * MULTI/EXEC, which goes with a read that does not block.
 *
 * Pausing (eddy__consumer_pause; the state lives in the sub, so it outlives activations): a
 * paused consumer still sends what was settled, discovers subjects and creates groups (so it
 * becomes ready and the broker keeps its messages), but plans no read, no claim and no count:
 * it idles. What a read returns while paused is not handed out (AtLeastOnce: it stays pending
 * for this consumer; AtMostOnce: it left the pending list when read, so it is handed out). A
 * paused consumer forgets where its history read was, so a resume starts with its own pending
 * entries, as after a restart, then goes on with new ones.
 *
 * Thread: plan, feed and reset from one thread at a time (the subscription's reader);
 * settle from any thread. */
#ifndef EDDY_SRC_CONSUMER_H
#define EDDY_SRC_CONSUMER_H

#include <hiredis/hiredis.h>

#include "bus/delivery.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "util/cmdlist.h"

typedef struct eddy__consumer eddy__consumer;

/* The longest blocking read (or idle wait) planned while deliveries are outstanding. */
#define EDDY__OUTSTANDING_BLOCK_MS 100
/* How long the deliveries of a round are waited for, as one batch, before reading beside them. */
#define EDDY__ROUND_WAIT_MS 100

typedef struct eddy__plan {
    eddy__cmdlist cmds;
    long long block_ms; /* >= 0: the last command is a blocking read of this length */
    bool live_read;     /* the last command is a live read, blocking (block_ms >= 0) or not: a
                           pause may cut it short (so it takes nothing published after) */
    long long idle_ms;  /* no commands: wait this long (or until woken), then plan again */
} eddy__plan;

typedef struct eddy__delivery_list {
    eddy_delivery **v;
    size_t n, cap;
} eddy__delivery_list;

/* Ownership: settings and sub are borrowed and must outlive the consumer. NULL on OOM. */
eddy__consumer *eddy__consumer_new(const eddy__settings *s, eddy__sub *sub);

struct eddy__discovery;
/* A pattern subscription takes part in the bus's shared discovery (discovery.h) after its own
 * first one, instead of looking every discovery_ms by itself. Borrowed: it must outlive the
 * consumer. Call before the first plan. */
void eddy__consumer_share_discovery(eddy__consumer *c, struct eddy__discovery *d);

struct eddy__wakeup;
/* The longest idle wait planned with the wake-up while nothing else is due. */
#define EDDY__WOKEN_IDLE_MAX_MS 60000
/* The consumer leaves blocking to the bus-wide wake-up (wakeup.h): it watches its streams there
 * (who: the consumer, whose owner, the front end's record of it, eddy__consumer_owner gives back;
 * not while paused) and plans its live reads without BLOCK, only when it has news
 * (eddy__consumer_wake, or a start, a resume, a new stream, a lost connection, or a live read that
 * filled its batch); with no news it idles, for as long as its claim rounds and discovery allow,
 * until woken. A hot stream (two live reads without BLOCK that found entries within 10 ms,
 * consumer.c; at most EDDY__WAKEUP_HOT_MAX per bus) leaves the wake-up: the consumer then plans
 * blocking live reads of its own, as without it (the front end sends them on a connection where
 * blocking is allowed), until one finds nothing or waited 100 ms for what it found, and watches
 * again, with news. Everything else (acknowledgements, history, claims, pause, stop) plans as
 * without it. Borrowed: it must outlive the consumer. Call before the first plan. */
void eddy__consumer_share_wakeup(eddy__consumer *c, struct eddy__wakeup *w, void *owner);
/* The owner given to eddy__consumer_share_wakeup, for a wake-up callback's `who` (a consumer
 * that watches is alive: eddy__consumer_free leaves the wake-up first). Thread: any. */
void *eddy__consumer_owner(const void *who);
/* The wake-up says a stream the consumer watches has news: its next plan reads. The front end
 * then ends the reader's idle wait. Thread: any. */
void eddy__consumer_wake(eddy__consumer *c);
/* True while a stream of its is hot: it reads with blocking reads of its own, out of the
 * wake-up (a front end keeps a connection on which it may block for it until then). Thread:
 * its reader's. */
bool eddy__consumer_hot(const eddy__consumer *c);
/* The one rule for a subscription that shares reads (share.h) and reads on a connection of its
 * own while its plans block: a plan that idles (wait >= 0, from eddy__consumer_next) sends it back
 * to the shared reads, unless a stream of its is hot (its next plans would block again at once,
 * and the connection would be made anew for each). Thread: its reader's. */
bool eddy__consumer_gives_back(const eddy__consumer *c, long long wait);
/* The other half of that rule: a plan to send (wait -1 from eddy__consumer_next) that blocks goes
 * on a connection of the subscription's own, as it would hold up every other reader on the
 * shared one; any other plan goes with the shared round. */
bool eddy__plan_goes_own(const eddy__plan *plan);
/* True (once) when the last plan watched a stream the wake-up's blocking read in flight does
 * not cover: the front end cuts that read short so that it plans again. */
bool eddy__consumer_wakeup_replan(eddy__consumer *c);
/* True (once) when a shared discovery this consumer sent found subjects: the front end then
 * wakes the bus's other readers that are idle, so they take them at once. */
bool eddy__consumer_found_subjects(eddy__consumer *c);
void eddy__consumer_free(eddy__consumer *c);
/* The bus's settings.source (NULL when not set), for what a handler builds. */
const char *eddy__consumer_source(const eddy__consumer *c);

void eddy__plan_init(eddy__plan *p);
void eddy__plan_reset(eddy__plan *p);

/* now_ms: CLOCK_MONOTONIC milliseconds, read by the caller (the core reads no clock). Fills
 * plan (reset it first). */
eddy_status eddy__consumer_plan(eddy__consumer *c, long long now_ms, eddy__plan *plan);

/* Only the settled acknowledgements and dead letters, for a reader that is stopping. */
eddy_status eddy__consumer_plan_flush(eddy__consumer *c, long long now_ms, eddy__plan *plan);

/* The next round as both front ends take it, planned into plan (reset first): -1 to send its
 * commands now; otherwise nothing to send, and the ms to wait (interruptibly) before asking
 * again: the plan's idle time, or EDDY__NOMEM_RETRY_MS when planning ran out of memory
 * (nothing was planned: the next plan holds it again). A stopping reader (stopping) plans only
 * what was settled (eddy__consumer_plan_flush): when there is none to send, it ends once no
 * delivery is outstanding. */
long long eddy__consumer_next(eddy__consumer *c, long long now_ms, bool stopping, eddy__plan *plan);

/* replies[i] answers plan->cmds.cmds[i]; a NULL reply means the connection failed (the
 * front end then calls reset). Appends deliveries to out (the caller owns the list, not the
 * deliveries: each is settled). now_ms (CLOCK_MONOTONIC) and wall_ms (eddy_now_ms: request
 * deadlines are wall-clock) are read by the caller after the replies arrived: the core reads
 * no clock. */
eddy_status eddy__consumer_feed(eddy__consumer *c, long long now_ms, long long wall_ms,
                                const eddy__plan *plan, redisReply **replies, size_t n,
                                eddy__delivery_list *out);

/* What a round's replies ask of its reader besides handing out deliveries (eddy__consumer_fed). */
enum {
    EDDY__FED_READY = 1, /* the subscription became ready: a start waiting for it returns */
    EDDY__FED_FOUND = 2  /* a shared discovery found subjects: wake the bus's other idle readers */
};

/* eddy__consumer_feed as both front ends take a round's replies: on a failure what the feed
 * handed out is dropped (the front end then loses the round: eddy__consumer_lost), and so it is
 * once the reader is stopping (eddy__consumer_stop: no handler sees a delivery once stop was
 * called; AtLeastOnce entries stay pending and come back), or when hold_back is set (a read cut
 * short, a bus being freed); *news is a set of EDDY__FED_* (ready only when it hands out). */
eddy_status eddy__consumer_fed(eddy__consumer *c, long long now_ms, long long wall_ms,
                               const eddy__plan *plan, redisReply **replies, size_t n,
                               bool hold_back, eddy__delivery_list *out, unsigned *news);
/* The reader is stopping: from now on eddy__consumer_fed hands nothing out. Both front ends
 * call it as their stop begins, before they cut a read short. Thread: any. */
void eddy__consumer_stop(eddy__consumer *c);

/* The handler's outcome: EDDY_OK acknowledges (AtLeastOnce); anything else leaves the entry
 * pending; EDDY_ERR_UNAVAILABLE (AtLeastOnce) also sets its delivery count back to
 * attempt - 1 (a hand-back, counted in held, not failed). For a responder, `reply` (owned by the
 * callee; may be NULL) is the reply: it is sent with the next round trip, or a failure reply when
 * st is an error or the reply cannot be sent, or discarded (Unaddressed) when the delivery was a
 * plain publish. Frees the delivery. True when a front end waiting idle should plan again now
 * (the last round's deliveries are all settled). Thread: any. */
bool eddy__consumer_settle(eddy__consumer *c, eddy_delivery *d, eddy_status st, eddy_event *reply);

/* One delivery's outcome, for eddy__consumer_settle_run: d, st and reply as for settle; the
 * rest is the core's scratch space. */
typedef struct eddy__settlement {
    eddy_delivery *d;
    eddy_status st;
    eddy_event *reply;
    bool reuse; /* settled from its handler's return, never handed to eddy_delivery_finish: the
                   core may reuse the delivery's memory */
    bool has_reply;
    eddy__cmd reply_cmd;
} eddy__settlement;

/* Settles a run of deliveries as one (a worker's share of a round): the same as
 * eddy__consumer_settle on each in turn, with one lock round and one update of the counters
 * for all of them. True as for settle (after the last). Thread: any. */
bool eddy__consumer_settle_run(eddy__consumer *c, eddy__settlement *v, size_t n);

/* Outcomes collected as handlers return, settled as one run (eddy__consumer_settle_run): one
 * lock round per run, not one per message. */
#define EDDY__RUN_MAX 64
typedef struct eddy__run {
    size_t n;
    eddy__settlement v[EDDY__RUN_MAX];
} eddy__run;

/* What became of a delivery eddy__consumer_run handed to its handler. */
typedef enum eddy__ran {
    EDDY__RAN_KEPT,     /* its outcome is in the run, to settle with it */
    EDDY__RAN_FULL,     /* the same, and the run is full: settle it now (then set n to 0) */
    EDDY__RAN_PENDING,  /* EDDY_PENDING: it is settled later, through its finish */
    EDDY__RAN_FINISHED, /* finished from inside its handler: settled, its result ignored */
} eddy__ran;

/* Runs the subscription's handler (eddy__sub_run) on d, handed out with its finish and frontend
 * set (a finish from inside the handler reaches the front end), and keeps the outcome to settle
 * in run; a responder's reply that is not kept is freed. The caller owns run and settles it.
 * Thread: whichever runs handlers. */
eddy__ran eddy__consumer_run(eddy__consumer *c, eddy__run *run, eddy_delivery *d);

/* True when the delivery was settled through its finish already (eddy_delivery_finish from
 * inside its handler): the handler's result is then ignored. A later finish is logged and
 * ignored (see consumer.c). Thread: any. */
bool eddy__consumer_finished(const eddy_delivery *d);

/* Frees a delivery no handler will see (the front end is stopping, or out of memory), without
 * settling it: nothing is acknowledged (AtLeastOnce: it stays pending and comes back), and it
 * no longer counts as outstanding. Thread: any. */
void eddy__consumer_drop(eddy__consumer *c, eddy_delivery *d);
/* eddy__consumer_drop on every delivery of out (none will reach a handler); out is empty after. */
void eddy__consumer_drop_all(eddy__consumer *c, eddy__delivery_list *out);
/* A round failed (its connection was lost, or its replies made no sense): what its feed handed
 * out is dropped (out), and the consumer starts over on the next connection
 * (eddy__consumer_reset). Thread: its reader's. */
void eddy__consumer_lost(eddy__consumer *c, eddy__delivery_list *out);

/* True once the subscription's start point is fixed and its groups exist: every message
 * published from now on will be delivered. Front ends wait for it before start returns. */
bool eddy__consumer_ready(const eddy__consumer *c);
/* True once, after the feed that made it ready: the front end then lets a start waiting for it
 * return. Thread: its reader's. */
bool eddy__consumer_became_ready(eddy__consumer *c);
/* The error of a start that gave up waiting for the consumer to be ready, the same in both
 * front ends: "subscription 'name' could not reach the backend", then why the last connect
 * failed (last: NULL or no status when unknown); status as eddy__link_late_error. */
eddy_status eddy__consumer_late_error(const eddy__consumer *c, const eddy_error *last,
                                      eddy_error *err);

/* eddy_delivery_emit: checks the output (the subscription a handler's and AtLeastOnce, the
 * subject, the event and its size) and adds it to d's outputs, committed with its
 * acknowledgement when the handler succeeds (see consumer.c, "transactional handlers").
 * Thread: whichever holds the delivery. */
eddy_status eddy__consumer_emit(eddy__consumer *c, eddy_delivery *d, const char *subject,
                                const eddy_event *ev, eddy_error *err);

/* The most outputs one delivery may emit. */
#define EDDY__EMIT_MAX 1000

/* Runs the subscription's handler or responder on a delivery (front ends call this, then
 * settle unless it returned EDDY_PENDING). *reply is the responder's reply, or NULL. */
eddy_status eddy__sub_run(const eddy__sub *sub, eddy_delivery *d, eddy_event **reply);

/* Deliveries handed out and not yet settled. Thread: any. */
size_t eddy__consumer_outstanding(eddy__consumer *c);
/* eddy_delivery_in_progress: a claim refresh for d with the next plan. False when d is not held
 * (AtMostOnce, or settled). Any thread. */
bool eddy__consumer_in_progress(eddy__consumer *c, eddy_delivery *d);

/* What a front end does after a pause or resume, so that it takes effect promptly. */
typedef enum eddy__wake {
    EDDY__WAKE_NONE, /* nothing changed, or nothing to hurry */
    EDDY__WAKE_IDLE, /* end an idle wait: plan again now */
    EDDY__WAKE_READ  /* also cut a blocking read short (what it read stays pending) */
} eddy__wake;

/* Pauses (paused true) or resumes the subscription; see the comment at the top. A pause of an
 * AtLeastOnce subscription asks to cut a blocking read short (its entries stay pending, so
 * nothing is lost); an AtMostOnce read is left to end by itself (within block_ms), since the
 * entries NOACK read are gone from the pending list: a read cut short could lose them. A
 * resume ends the idle wait. Pausing a paused subscription (or resuming a running one) changes
 * nothing: EDDY__WAKE_NONE. Thread: any (the reader sees the change at its next plan or feed). */
eddy__wake eddy__consumer_pause(eddy__sub *sub, bool paused);

/* The connection was lost: see the comment at the top. */
void eddy__consumer_reset(eddy__consumer *c);

/* Deliveries lists. */
void eddy__delivery_list_free(eddy__delivery_list *l);

#endif
