/* SPDX-License-Identifier: BSD-3-Clause */
/* One run of a catch-up feed driven to its end, for both front ends: the loop both wrote around
 * eddy__feed_run_next (ask for a step, run the user's steps, hand the front end its I/O, report
 * the outcome, commit a model's page batch or a held event's write set before reporting it,
 * wait out a marker deletion's retry delay). The front end only starts each I/O operation the
 * driver names (eddy__feed_io) and tells the driver how it ended with eddy__feed_driver_done,
 * before the operation's start returns (blocking) or later from its reply (reactive): the driver
 * tells the two apart, so a synchronous answer never nests a second loop inside the first.
 *
 * eddy__feed_drive and eddy__feed_driver_done answer with what the front end does next:
 * - EDDY__DRIVE_WAIT: the run is parked; drive again once its waiter is completed;
 * - EDDY__DRIVE_BUSY: an operation is in flight; its eddy__feed_driver_done drives on;
 * - EDDY__DRIVE_DONE: the run ended and is freed; st and err are the caller's result.
 * The driver lives in the front end's run record; after DONE it is not used any more.
 *
 * Thread: one driver is used by one thread at a time (whoever drives the run). */
#ifndef EDDY_SRC_FEED_DRIVE_H
#define EDDY_SRC_FEED_DRIVE_H

#include "eddy/writes.h"
#include "store/feed.h"
#include "store/model.h"

typedef enum eddy__feed_io_kind {
    EDDY__IO_EXISTS,   /* does the marker of feed `id` exist: value non-zero when it does */
    EDDY__IO_POSITION, /* the model's committed position for `id`: value */
    EDDY__IO_HEAD,     /* the store's head position: value */
    EDDY__IO_PAGE,     /* read the page after `position`, at most `max` stored events, no filter,
                        * each handed to eddy__feed_driver_page_event: value the last position
                        * examined (`position` when none) */
    EDDY__IO_SAVE,     /* save `marker` as the marker of `id` */
    EDDY__IO_REMOVE,   /* delete the marker of `id` */
    EDDY__IO_DELAY,    /* wait `delay_ms` (an error: the wait was cut short, e.g. by a free) */
    EDDY__IO_COMMIT    /* commit `writes` (the model's) with the page's position when `page` */
} eddy__feed_io_kind;

typedef struct eddy__feed_io_op {
    eddy__feed_io_kind kind;
    const char *id;
    long long position;
    size_t max;
    const char *marker;
    long long delay_ms;
    const eddy_writes *writes;
    bool page;
} eddy__feed_io_op;

typedef struct eddy__feed_driver eddy__feed_driver;

typedef struct eddy__feed_io {
    /* Starts op (borrowed for the call); calls eddy__feed_driver_done(d, ...) exactly once, now
     * or later. */
    void (*start)(void *ctx, const eddy__feed_io_op *op, eddy__feed_driver *d);
    /* Runs what a core call answered (eddy__feed_out_run, then out->start). */
    void (*flush)(void *ctx, eddy__feed_out *out);
    /* Before each step is asked for (may be NULL). */
    void (*begin)(void *ctx);
} eddy__feed_io;

typedef enum eddy__drive_state {
    EDDY__DRIVE_WAIT,
    EDDY__DRIVE_BUSY,
    EDDY__DRIVE_DONE
} eddy__drive_state;

struct eddy__feed_driver {
    eddy__feed *f;
    eddy__feed_run *run;
    const eddy__feed_io *io;
    void *ctx;
    const eddy__feed_calls *calls;
    int phase;     /* what the operation in flight is for (feed_drive.c) */
    bool starting; /* inside io->start: an outcome told now is picked up by the loop */
    bool told;     /* the operation in flight has ended: st, value, err */
    bool has_err;  /* err was given (NULL is passed on as NULL) */
    long long value;
    eddy_writes held; /* a held event's write set while it commits */
    eddy_status st;   /* an operation's outcome, then at DONE the run's result */
    eddy_error err;
};

/* Ownership: the driver keeps f, run, io, ctx and calls (the caller's) until DONE. */
void eddy__feed_driver_init(eddy__feed_driver *d, eddy__feed *f, eddy__feed_run *run,
                            const eddy__feed_io *io, void *ctx, const eddy__feed_calls *calls);
/* Asks for steps until the run waits, has an operation in flight or ends. */
eddy__drive_state eddy__feed_drive(eddy__feed_driver *d);
/* How the operation in flight ended: st, value (what it read), err (may be NULL). Told from
 * inside io->start, records it (and answers BUSY: the loop goes on); told later, drives on. */
eddy__drive_state eddy__feed_driver_done(eddy__feed_driver *d, eddy_status st, long long value,
                                         const eddy_error *err);
/* The page reader's callback for EDDY__IO_PAGE; user is the driver. */
eddy_status eddy__feed_driver_page_event(const eddy_event *ev, const eddy_event_meta *meta,
                                         void *user);

/* ---- a live event ------------------------------------------------------------------------
 *
 * What both front ends do with a live event (accept, offer, accept-or-defer) once the core
 * answered eddy__feed_accept: answer it now (a deferred event's answer is EDDY_PENDING), leave
 * it held, or apply it now and answer with the core's word on the apply (eddy__feed_live_done),
 * a model's write set committed alone in between. The front end keeps the commit's I/O and how
 * its caller is answered. */

typedef enum eddy__live_state {
    EDDY__LIVE_ANSWER, /* answer l->st now, with l->err when it is an error */
    EDDY__LIVE_HELD,   /* the waiter is completed later, through an out list */
    EDDY__LIVE_APPLY   /* apply it now: eddy__feed_live_apply */
} eddy__live_state;

typedef void (*eddy__feed_flush_fn)(void *ctx, eddy__feed_out *out);

typedef struct eddy__feed_live {
    eddy__feed *f;
    eddy__feed_entry *entry; /* APPLY: the event being applied */
    eddy__feed_flush_fn flush;
    void *ctx;
    eddy_status st; /* the answer (EDDY_PENDING: deferred, not taken) */
    eddy_error err;
    /* APPLY with a model: the event's write set, gathered by eddy__feed_live_apply for the front
     * end to commit, released by eddy__feed_live_end. Movable (heap blocks only): a front end
     * whose commit ends later may copy the whole record into its own. */
    eddy_writes w;
} eddy__feed_live;

/* eddy__feed_accept, its out list run through flush_out(ctx, out) (also for what follows). */
eddy__live_state eddy__feed_live_accept(eddy__feed_live *l, eddy__feed *f,
                                        const eddy_event_meta *meta, void *event, void *waiter,
                                        eddy__accept_flags flags, eddy__feed_flush_fn flush_out,
                                        void *ctx);
/* Applies an APPLY through calls. True: commit l->w alone (page false), then eddy__feed_live_end
 * with its outcome; false: answered (l->st). */
bool eddy__feed_live_apply(eddy__feed_live *l, void *event, const eddy_event_meta *meta,
                           const eddy__feed_calls *calls);
/* Ends an APPLY with st (the commit's outcome, or a failure before it): answered (l->st), the
 * write set released. */
void eddy__feed_live_end(eddy__feed_live *l, eddy_status st, const eddy_error *err);

#endif
