/* SPDX-License-Identifier: BSD-3-Clause */
/* Catch-up projection feeds on the blocking front end. The core (src/store/feed.c) decides everything;
 * this file runs the operations its run driver (src/store/feed_drive.c) names on the calling
 * thread (the store's pages, the checkpoint storage, the model's commits) and makes callers wait: each waiting call has a waiter on
 * its own stack, completed through the core's out lists, and sleeps on the feed's condition
 * variable until its waiter is done or its cancel handle fires.
 *
 * Invariants:
 * - No lock is held while the projection, decode or a completion runs.
 * - A thread knows whether it is inside a callback of a feed through a thread-local stack of
 *   frames: the whole of a run's driving, a live apply and the completions it runs. Calls made
 *   from inside never wait (the core turns them into requests or refusals), and the thread
 *   leaving its outermost frame runs the requests (eddy__feed_poll_deferred).
 * - `calls` counts the public calls in progress; eddy_feed_free waits for it to reach zero, or,
 *   called from a callback, leaves the free to the last call that leaves.
 * - A waiter that gives up on a cancel asks the core first: if its completion is already on its
 *   way it waits for it, so a waiter on the stack is never completed after its call returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy/feed.h"
#include "error.h"
#include "feed_hooks.h"
#include "store/feed.h"
#include "store/feed_drive.h"
#include "store/model.h"
#include "store_call.h"
#include "timing.h"
#include "util/cancel.h"

/* ---- the feed ---------------------------------------------------------------------------- */

enum { FREE_NONE, FREE_DEFERRED, FREE_WAITING };

struct eddy_feed {
    eddy__feed *core;
    eddy_store *store;
    eddy_checkpoints ckpt;
    pthread_mutex_t wlock; /* waiters' state, calls, free_state */
    pthread_cond_t wcond;
    unsigned calls;
    int free_state;
};

/* What a call waits on. Sync waiters live on the caller's stack; async ones (eddy_feed_offer)
 * are allocated and freed when completed. */
typedef struct fwaiter {
    bool async;
    bool done;
    eddy_status st;
    eddy_error err;
    eddy_feed_done_fn fn;
    void *user;
} fwaiter;

/* ---- frames: "this thread is inside a callback of that feed" ----------------------------- */

typedef struct frame {
    const eddy_feed *feed;
    struct frame *next;
} frame;

static _Thread_local frame *tl_frames;

static bool in_callback(const eddy_feed *feed) {
    for (frame *f = tl_frames; f; f = f->next)
        if (f->feed == feed)
            return true;
    return false;
}

static void frame_push(frame *f, const eddy_feed *feed) {
    f->feed = feed;
    f->next = tl_frames;
    tl_frames = f;
}

static void frame_pop(frame *f) { tl_frames = f->next; }

/* ---- completions ------------------------------------------------------------------------- */

static void complete(void *waiter, eddy_status st, const eddy_error *err, void *ctx) {
    eddy_feed *feed = ctx;
    fwaiter *w = waiter;
    if (w->async) {
        eddy_feed_done_fn fn = w->fn;
        void *user = w->user;
        free(w);
        frame fr;
        frame_push(&fr, feed);
        fn(st, err, user);
        frame_pop(&fr);
        return;
    }
    pthread_mutex_lock(&feed->wlock);
    w->st = st;
    if (err)
        w->err = *err;
    w->done = true;
    pthread_cond_broadcast(&feed->wcond);
    pthread_mutex_unlock(&feed->wlock);
}

static eddy_status drive(eddy_feed *feed, eddy__feed_run *run, fwaiter *w, eddy_cancel *cancel,
                         eddy_error *err);

/* Runs what a core call answered. A blocking core never hands a run over in out.start (only a
 * reactive failure does; the requests callbacks make are polled by run_deferred). */
static void flush(void *feed, eddy__feed_out *out) { eddy__feed_out_run(out, complete, feed); }

static void sync_reset(eddy_feed *feed, fwaiter *w) {
    pthread_mutex_lock(&feed->wlock);
    w->done = false;
    pthread_mutex_unlock(&feed->wlock);
}

/* Waits until w is completed; true when the cancel handle fired first. */
static bool wait_for(eddy_feed *feed, fwaiter *w, eddy_cancel *cancel) {
    eddy__cancel_reg reg = {&feed->wlock, &feed->wcond, NULL, NULL};
    eddy__cancel_attach(cancel, &reg);
    pthread_mutex_lock(&feed->wlock);
    while (!w->done && !eddy_cancel_fired(cancel))
        pthread_cond_wait(&feed->wcond, &feed->wlock);
    bool cancelled = !w->done;
    pthread_mutex_unlock(&feed->wlock);
    eddy__cancel_detach(cancel, &reg);
    return cancelled;
}

static void copy_err(eddy_error *dst, eddy_status st, const eddy_error *src) {
    if (dst && st != EDDY_OK && src)
        *dst = *src;
}

/* ---- calls in progress ------------------------------------------------------------------- */

static void destroy(eddy_feed *feed) {
    eddy__feed_free(feed->core);
    pthread_cond_destroy(&feed->wcond);
    pthread_mutex_destroy(&feed->wlock);
    free(feed);
}

static void enter(eddy_feed *feed) {
    pthread_mutex_lock(&feed->wlock);
    feed->calls++;
    pthread_mutex_unlock(&feed->wlock);
}

/* Runs the requests callbacks made, when this thread is not inside a callback any more. */
static void run_deferred(eddy_feed *feed) {
    if (in_callback(feed))
        return;
    eddy__feed_run *run;
    while ((run = eddy__feed_poll_deferred(feed->core))) {
        fwaiter w = {0};
        eddy__feed_run_attach(run, &w);
        drive(feed, run, &w, NULL, NULL); /* nobody waits for it; the core logs a failure */
    }
}

static void leave(eddy_feed *feed) {
    run_deferred(feed);
    pthread_mutex_lock(&feed->wlock);
    bool last = --feed->calls == 0 && feed->free_state == FREE_DEFERRED;
    pthread_cond_broadcast(&feed->wcond);
    pthread_mutex_unlock(&feed->wlock);
    if (last)
        destroy(feed);
}

/* ---- driving a run ----------------------------------------------------------------------- */

/* A fired cancel handle is told to the core before a step's outcome is reported, so a step that
 * failed because its thread was cancelled is not recorded as the feed's failure. */
typedef struct drive_ctx {
    eddy_feed *feed;
    eddy__feed_run *run;
    eddy_cancel *cancel;
    bool noted;
    fwaiter *w;
} drive_ctx;

static void note_cancel(void *ctx) {
    drive_ctx *dc = ctx;
    if (!dc->noted && eddy_cancel_fired(dc->cancel)) {
        dc->noted = true;
        eddy__feed_run_cancel(dc->feed->core, dc->run);
    }
}

static void sleep_ms(long long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Every operation ends before it returns: the driver goes on in the same loop. */
static void io_start(void *ctx, const eddy__feed_io_op *op, eddy__feed_driver *d) {
    eddy_feed *feed = ((drive_ctx *)ctx)->feed;
    eddy_error e = {0};
    eddy_status st = EDDY_OK;
    long long value = 0; /* what a read read */
    bool exists = false;
    switch (op->kind) {
    case EDDY__IO_EXISTS:
        st = feed->ckpt.ops->exists(feed->ckpt.self, op->id, &exists, &e);
        value = exists;
        break;
    case EDDY__IO_POSITION:
        st = eddy_store_model_position(feed->store, op->id, &value, &e);
        break;
    case EDDY__IO_HEAD:
        st = eddy_store_head(feed->store, &value, &e);
        break;
    case EDDY__IO_PAGE:
        value = op->position;
        st = eddy_store_read_page(feed->store, op->position, op->max, NULL,
                                  eddy__feed_driver_page_event, d, &value, &e);
        break;
    case EDDY__IO_SAVE:
        st = feed->ckpt.ops->save(feed->ckpt.self, op->id, op->marker, &e);
        break;
    case EDDY__IO_REMOVE:
        st = feed->ckpt.ops->remove(feed->ckpt.self, op->id, &e);
        break;
    case EDDY__IO_DELAY:
        sleep_ms(op->delay_ms);
        break;
    case EDDY__IO_COMMIT:
        st = eddy__bmodel_commit(feed->store, eddy__feed_model(feed->core), op->writes, op->page,
                                 &e);
        break;
    }
    eddy__feed_driver_done(d, st, value, &e);
}

static void io_flush(void *ctx, eddy__feed_out *out) { flush(((drive_ctx *)ctx)->feed, out); }

static void io_begin(void *ctx) {
    drive_ctx *dc = ctx;
    note_cancel(dc);
    sync_reset(dc->feed, dc->w);
}

static const eddy__feed_io bio = {io_start, io_flush, io_begin};

static eddy_status drive(eddy_feed *feed, eddy__feed_run *run, fwaiter *w, eddy_cancel *cancel,
                         eddy_error *err) {
    frame fr;
    frame_push(&fr, feed);
    drive_ctx dc = {feed, run, cancel, false, w};
    eddy__feed_calls calls = {NULL, NULL, note_cancel, &dc};
    eddy__feed_driver d;
    eddy__feed_driver_init(&d, feed->core, run, &bio, &dc, &calls);
    while (eddy__feed_drive(&d) == EDDY__DRIVE_WAIT) {
        if (wait_for(feed, w, dc.noted ? NULL : cancel)) {
            dc.noted = true;
            if (eddy__feed_run_cancel(feed->core, run))
                wait_for(feed, w, NULL); /* resumed already: its completion is coming */
        }
    }
    copy_err(err, d.st, &d.err);
    frame_pop(&fr);
    return d.st;
}

/* ---- public API -------------------------------------------------------------------------- */

eddy_status eddy_feed_new(eddy_store *store, const eddy_feed_config *cfg, eddy_feed **out,
                          eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!store || !cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or cfg is NULL");
    const eddy_checkpoints *cp = cfg->checkpoints;
    eddy__feed *core;
    eddy_status st =
        eddy__feed_open(cfg, EDDY__FEED_BLOCKING, cp != NULL, EDDY__CHECKPOINTS_COMPLETE(cp),
                        eddy__bstore_ns(store), &core, err);
    if (st != EDDY_OK)
        return st;
    eddy_feed *feed = calloc(1, sizeof(*feed));
    if (!feed) {
        eddy__feed_free(core);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    feed->core = core;
    feed->store = store;
    if (cp)
        feed->ckpt = *cp;
    pthread_mutex_init(&feed->wlock, NULL);
    pthread_cond_init(&feed->wcond, NULL);
    *out = feed;
    return EDDY_OK;
}

void eddy_feed_free(eddy_feed *feed) {
    if (!feed)
        return;
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    eddy__feed_close(feed->core, &out);
    frame fr;
    frame_push(&fr, feed);
    flush(feed, &out);
    frame_pop(&fr);
    pthread_mutex_lock(&feed->wlock);
    if (in_callback(feed)) {
        /* The call this callback runs in (and any other) frees it as the last one leaves. */
        if (feed->free_state == FREE_NONE)
            feed->free_state = FREE_DEFERRED;
        pthread_mutex_unlock(&feed->wlock);
        return;
    }
    feed->free_state = FREE_WAITING;
    while (feed->calls > 0)
        pthread_cond_wait(&feed->wcond, &feed->wlock);
    pthread_mutex_unlock(&feed->wlock);
    destroy(feed);
}

const char *eddy_feed_id(const eddy_feed *feed) { return feed ? eddy__feed_id(feed->core) : NULL; }

eddy__feed *eddy__bfeed_core(eddy_feed *feed) { return feed->core; }

/* A catch-up or go-live: asks the core, then drives the run it hands over. */
static eddy_status run_call(eddy_feed *feed, bool go_live, eddy_cancel *cancel, eddy_error *err) {
    if (!feed)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    enter(feed);
    fwaiter w = {0};
    eddy__feed_run *run = NULL;
    bool cb = in_callback(feed);
    eddy_status st = eddy__feed_start(feed->core, go_live, &w, cb, &run, err);
    if (st == EDDY_OK && run)
        st = drive(feed, run, &w, cancel, err);
    leave(feed);
    return st;
}

eddy_status eddy_feed_catch_up(eddy_feed *feed, eddy_cancel *cancel, eddy_error *err) {
    return run_call(feed, false, cancel, err);
}

eddy_status eddy_feed_go_live(eddy_feed *feed, eddy_cancel *cancel, eddy_error *err) {
    return run_call(feed, true, cancel, err);
}

void eddy_feed_stop_catch_up(eddy_feed *feed) {
    if (!feed)
        return;
    enter(feed);
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    eddy__feed_stop(feed->core, &out);
    flush(feed, &out);
    leave(feed);
}

/* Offers a live event to the core (w: its waiter, if it is held) and, when the core hands it
 * back for a direct apply, applies it now on this thread; *l holds the answer (ANSWER). */
static eddy__live_state accept_now(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                   fwaiter *w, bool waits, bool defer, eddy__feed_live *l) {
    eddy__accept_flags flags = {in_callback(feed), waits, defer};
    eddy__live_state s = eddy__feed_live_accept(l, feed->core, meta, event, w, flags, flush, feed);
    if (s != EDDY__LIVE_APPLY)
        return s;
    frame fr;
    frame_push(&fr, feed);
    if (eddy__feed_live_apply(l, event, meta, NULL)) {
        eddy_error e = {0};
        eddy_status st =
            eddy__bmodel_commit(feed->store, eddy__feed_model(feed->core), &l->w, false, &e);
        eddy__feed_live_end(l, st, &e);
    }
    frame_pop(&fr);
    return EDDY__LIVE_ANSWER;
}

static eddy_status accept_wait(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                               eddy_cancel *cancel, eddy_error *err) {
    enter(feed);
    fwaiter w = {0};
    eddy__feed_live l;
    eddy_status st;
    if (accept_now(feed, meta, event, &w, true, false, &l) != EDDY__LIVE_HELD) {
        st = l.st; /* answered, or applied by accept_now */
        copy_err(err, st, &l.err);
    } else if (wait_for(feed, &w, cancel) && eddy__feed_accept_cancel(feed->core, &w)) {
        st = eddy__fail(err, EDDY_ERR_CANCELLED,
                        "feed '%s': cancelled while the event was held; not applied",
                        eddy__feed_id(feed->core));
    } else {
        wait_for(feed, &w, NULL); /* being applied or answered: its outcome is coming */
        st = w.st;
        copy_err(err, st, &w.err);
    }
    leave(feed);
    return st;
}

eddy_status eddy__bfeed_accept_or_defer(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                        eddy_feed_done_fn done, void *user) {
    if (!feed || !done)
        return EDDY_ERR_INVALID_ARGUMENT;
    enter(feed);
    fwaiter w = {0};
    eddy__feed_live l;
    accept_now(feed, meta, event, &w, false, true, &l);
    leave(feed);
    done(l.st, l.st == EDDY_OK ? NULL : &l.err, user);
    return EDDY_OK;
}

eddy_status eddy_feed_accept(eddy_feed *feed, void *event, eddy_cancel *cancel, eddy_error *err) {
    if (!feed)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    return accept_wait(feed, NULL, event, cancel, err);
}

eddy_status eddy_feed_accept_meta(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                  eddy_cancel *cancel, eddy_error *err) {
    if (!feed || !meta)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed or meta is NULL");
    return accept_wait(feed, meta, event, cancel, err);
}

static void call_done(eddy_feed *feed, eddy_feed_done_fn done, void *user, eddy_status st,
                      const eddy_error *err) {
    frame fr;
    frame_push(&fr, feed);
    done(st, st == EDDY_OK ? NULL : err, user);
    frame_pop(&fr);
}

eddy_status eddy_feed_offer(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                            eddy_feed_done_fn done, void *user) {
    if (!feed || !event || !done)
        return EDDY_ERR_INVALID_ARGUMENT;
    enter(feed);
    eddy__feed_live l = {.st = EDDY_ERR_NOMEM};
    fwaiter *w = calloc(1, sizeof(*w));
    bool held = false;
    if (!w) {
        eddy__fail(&l.err, EDDY_ERR_NOMEM, "out of memory");
    } else {
        *w = (fwaiter){.async = true, .fn = done, .user = user};
        held = accept_now(feed, meta, event, w, false, false, &l) == EDDY__LIVE_HELD;
    }
    if (!held) {
        free(w); /* answered here: the core will not complete it */
        call_done(feed, done, user, l.st, &l.err);
    }
    leave(feed);
    return EDDY_OK;
}

/* ---- the listener ------------------------------------------------------------------------ */

static eddy_status offer(void *feed, const eddy_event_meta *meta, void *event,
                         eddy_feed_done_fn done, void *user) {
    return eddy_feed_offer(feed, meta, event, done, user);
}

eddy_status eddy_feed_handler(eddy_delivery *d, void *user) {
    eddy_feed *feed = user;
    if (!feed || !d)
        return EDDY_ERR_INVALID_ARGUMENT;
    return eddy__feed_handle(feed->core, d, offer, feed);
}

/* ---- state ------------------------------------------------------------------------------- */

eddy_status eddy_feed_stats(eddy_feed *feed, eddy_feed_info *out) {
    return eddy__feed_stats(feed ? feed->core : NULL, out);
}

bool eddy_feed_ready_for_live_delivery(eddy_feed *feed) {
    return eddy__feed_ready(feed ? feed->core : NULL);
}

bool eddy_feed_refuses_permanently(eddy_feed *feed) {
    return eddy__feed_failure(feed ? feed->core : NULL, NULL);
}

bool eddy_feed_failure(eddy_feed *feed, eddy_error *cause) {
    return eddy__feed_failure(feed ? feed->core : NULL, cause);
}
