/* SPDX-License-Identifier: BSD-3-Clause */
/* The run driver (feed_drive.h): the one loop both front ends drive a feed's run with; and the
 * steps of a live event's accept and direct apply, which both front ends take alike.
 *
 * Invariants:
 * - At most one operation is in flight (phase != PH_NONE); the loop asks for no step until its
 *   outcome is told and settled, so each step's outcome is reported exactly once, in order.
 * - An outcome told inside io->start is only recorded; the loop that started it settles it, so
 *   a front end whose operations finish at once (blocking) never nests loops.
 * - A page batch is committed, and a held event's write set, before the step is reported: the
 *   core's order (eddy__feed_step_report, eddy__feed_page_committed).
 * - A retry delay cut short (its outcome an error) is reported as the deletion's failure, the
 *   marker is not touched. */
#include <string.h>

#include "store/feed_drive.h"
#include "store/model.h"
#include "timing.h"

enum { PH_NONE, PH_STEP, PH_DELAY, PH_HELD_COMMIT, PH_PAGE_COMMIT };

void eddy__feed_driver_init(eddy__feed_driver *d, eddy__feed *f, eddy__feed_run *run,
                            const eddy__feed_io *io, void *ctx, const eddy__feed_calls *calls) {
    memset(d, 0, sizeof(*d));
    d->f = f;
    d->run = run;
    d->io = io;
    d->ctx = ctx;
    d->calls = calls;
}

static void flush(eddy__feed_driver *d, eddy__feed_out *out) { d->io->flush(d->ctx, out); }

static void start(eddy__feed_driver *d, eddy__feed_io_op *op, int phase) {
    op->id = eddy__feed_id(d->f);
    d->phase = phase;
    d->told = false;
    d->starting = true;
    d->io->start(d->ctx, op, d);
    d->starting = false;
}

/* Reports the front end's step; a page's batch is committed first (its commit reports it). */
static void report(eddy__feed_driver *d, eddy_status st, long long value, const eddy_error *err) {
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    const eddy_writes *batch = eddy__feed_step_report(d->f, d->run, st, value, err, d->calls, &out);
    flush(d, &out);
    if (batch)
        start(d, &(eddy__feed_io_op){.kind = EDDY__IO_COMMIT, .writes = batch, .page = true},
              PH_PAGE_COMMIT);
}

/* A held event (only with a model: without one it is a user step): its write set commits alone. */
static void apply_held(eddy__feed_driver *d, const eddy__feed_step *step) {
    eddy__writes_init(&d->held, eddy__feed_model(d->f));
    bool commit;
    eddy_error e = {0};
    eddy_status st =
        eddy__feed_apply(d->f, step->event, step->meta, &d->held, &commit, d->calls, &e);
    if (commit) {
        start(d, &(eddy__feed_io_op){.kind = EDDY__IO_COMMIT, .writes = &d->held}, PH_HELD_COMMIT);
        return;
    }
    eddy__writes_reset(&d->held);
    report(d, st, 0, &e);
}

/* The operation in flight ended: what its outcome leads to. */
static void settle(eddy__feed_driver *d) {
    int phase = d->phase;
    eddy_status st = d->st;
    eddy_error e = d->err;
    const eddy_error *err = d->has_err ? &e : NULL;
    d->phase = PH_NONE;
    d->told = false;
    switch (phase) {
    case PH_DELAY:
        if (st == EDDY_OK) {
            start(d, &(eddy__feed_io_op){.kind = EDDY__IO_REMOVE}, PH_STEP);
            return;
        }
        report(d, st, 0, err);
        return;
    case PH_HELD_COMMIT:
        eddy__writes_reset(&d->held);
        report(d, st, 0, err);
        return;
    case PH_PAGE_COMMIT:
        if (d->calls && d->calls->check)
            d->calls->check(d->calls->ctx); /* before the page's outcome, as for a read's */
        eddy__feed_page_committed(d->f, d->run, st, err);
        return;
    default:
        report(d, st, d->value, err);
        return;
    }
}

static eddy__drive_state loop(eddy__feed_driver *d) {
    for (;;) {
        if (d->phase != PH_NONE) {
            if (!d->told)
                return EDDY__DRIVE_BUSY;
            settle(d);
            continue;
        }
        if (d->io->begin)
            d->io->begin(d->ctx);
        eddy__feed_step step;
        eddy__feed_out out;
        eddy__feed_out_init(&out);
        eddy__feed_run_next(d->f, d->run, eddy__mono_ms(), &step, &out);
        flush(d, &out);
        if (eddy__feed_run_user_step(d->f, d->run, &step, d->calls, &out)) {
            flush(d, &out);
            continue;
        }
        eddy__feed_io_op op = {0};
        switch (step.kind) {
        case EDDY__STEP_DONE:
            d->st = step.st;
            d->err = step.err;
            return EDDY__DRIVE_DONE;
        case EDDY__STEP_WAIT:
            return EDDY__DRIVE_WAIT;
        case EDDY__STEP_MARKER_EXISTS:
            op.kind = EDDY__IO_EXISTS;
            break;
        case EDDY__STEP_POSITION: /* the model's: the projection's ran as a user step */
            op.kind = EDDY__IO_POSITION;
            break;
        case EDDY__STEP_READ_HEAD:
            op.kind = EDDY__IO_HEAD;
            break;
        case EDDY__STEP_READ_PAGE:
            /* No filter: the core matches each stored event (eddy__feed_page_event). */
            op = (eddy__feed_io_op){
                .kind = EDDY__IO_PAGE, .position = step.position, .max = step.max};
            break;
        case EDDY__STEP_SAVE_MARKER:
            op = (eddy__feed_io_op){.kind = EDDY__IO_SAVE, .marker = step.marker};
            break;
        case EDDY__STEP_DELETE_MARKER: {
            long long wait = step.not_before_ms - eddy__mono_ms();
            if (step.not_before_ms && wait > 0) {
                start(d, &(eddy__feed_io_op){.kind = EDDY__IO_DELAY, .delay_ms = wait}, PH_DELAY);
                continue;
            }
            op.kind = EDDY__IO_REMOVE;
            break;
        }
        case EDDY__STEP_APPLY:
            apply_held(d, &step);
            continue;
        default: /* the user's steps ran above */
            continue;
        }
        start(d, &op, PH_STEP);
    }
}

eddy__drive_state eddy__feed_drive(eddy__feed_driver *d) { return loop(d); }

eddy__drive_state eddy__feed_driver_done(eddy__feed_driver *d, eddy_status st, long long value,
                                         const eddy_error *err) {
    d->st = st;
    d->value = value;
    d->err = err ? *err : (eddy_error){0};
    d->has_err = err != NULL;
    d->told = true;
    return d->starting ? EDDY__DRIVE_BUSY : loop(d);
}

eddy_status eddy__feed_driver_page_event(const eddy_event *ev, const eddy_event_meta *meta,
                                         void *user) {
    eddy__feed_driver *d = user;
    return eddy__feed_page_apply(d->f, d->run, ev, meta, d->calls);
}

/* ---- a live event ---------------------------------------------------------------------- */

eddy__live_state eddy__feed_live_accept(eddy__feed_live *l, eddy__feed *f,
                                        const eddy_event_meta *meta, void *event, void *waiter,
                                        eddy__accept_flags flags, eddy__feed_flush_fn flush_out,
                                        void *ctx) {
    *l = (eddy__feed_live){.f = f, .flush = flush_out, .ctx = ctx};
    eddy__accept_kind kind;
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    l->st = eddy__feed_accept(f, meta, event, waiter, flags, &kind, &l->entry, &out, &l->err);
    flush_out(ctx, &out);
    switch (kind) {
    case EDDY__ACCEPT_HELD:
        return EDDY__LIVE_HELD;
    case EDDY__ACCEPT_APPLY:
        return EDDY__LIVE_APPLY;
    case EDDY__ACCEPT_DEFERRED:
        l->st = EDDY_PENDING;
        return EDDY__LIVE_ANSWER;
    default:
        return EDDY__LIVE_ANSWER;
    }
}

bool eddy__feed_live_apply(eddy__feed_live *l, void *event, const eddy_event_meta *meta,
                           const eddy__feed_calls *calls) {
    bool commit;
    eddy_error e = {0};
    eddy__writes_init(&l->w, eddy__feed_model(l->f));
    eddy_status st = eddy__feed_apply(l->f, event, meta, &l->w, &commit, calls, &e);
    if (commit)
        return true;
    eddy__feed_live_end(l, st, &e);
    return false;
}

void eddy__feed_live_end(eddy__feed_live *l, eddy_status st, const eddy_error *err) {
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    l->st = eddy__feed_live_done(l->f, l->entry, st, err, &out, &l->err);
    l->entry = NULL;
    eddy__writes_reset(&l->w);
    l->flush(l->ctx, &out);
}
