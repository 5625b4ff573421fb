/* SPDX-License-Identifier: BSD-3-Clause */
/* Catch-up projection feeds on the reactive front end. The core (src/store/feed.c) decides everything;
 * this file runs what it asks for on the loop: the core's run driver (src/store/feed_drive.c)
 * names each operation, sent here through the rstore or the checkpoint storage, its reply told
 * to the driver, which drives on; a retry delay is an ev_timer, WAIT simply returns to the loop.
 *
 * Invariants:
 * - Completions the core answers (accepts, parked runs) and the user's completions go through a
 *   FIFO queue drained from an ev_idle on the loop, so none runs inside the call that asked;
 *   eddy_rfeed_stop_catch_up and eddy_rfeed_free run them directly instead. Queueing never
 *   allocates: a completion's item is allocated with the call that asks for it (refused with
 *   EDDY_ERR_NOMEM up front otherwise), a run's next step uses the item embedded in the run.
 * - depth counts projection callbacks in progress: calls made then are from_callback, and the
 *   requests they make are polled when depth returns to zero.
 * - A run record (rrun) lives from the call (or the core's handing over) to its DONE step; after
 *   eddy_rfeed_free the feed's memory lives until no run and no callback is left.
 * - Runs the core starts by itself never wait for an allocation here: the failure run uses the
 *   record embedded in the feed, a deferred request is only polled once its record exists (out
 *   of memory, the request stays for the next poll), so no run is lost.
 */
#include <stdlib.h>
#include <string.h>

#include "eddy/rfeed.h"
#include "eddy/rmodel.h"
#include "error.h"
#include "rfeed_hooks.h"
#include "store/feed.h"
#include "store/feed_drive.h"
#include "store/model.h"
#include "store_call.h"
#include "timing.h"

typedef enum wkind { W_ACCEPT, W_RUN } wkind;

typedef struct rrun rrun;

typedef struct qitem {
    struct qitem *next;
    rrun *resume; /* a run to drive (the run's own item), or NULL: a completion */
    eddy_rfeed_done_fn done;
    void *user;
    eddy_status st;
    eddy_error err;
    bool queued;
} qitem;

struct rrun {
    wkind kind; /* W_RUN: first, so a waiter's kind can be read through either record */
    eddy_rfeed *feed;
    eddy__feed_driver drv;   /* drives the core's run */
    eddy_rfeed_done_fn done; /* NULL: nobody waits (or completed already by free) */
    void *user;
    ev_timer delay;
    bool timing;
    bool embedded;     /* the feed's frec: not freed */
    struct rrun *next; /* the feed's live runs */
    qitem rq;          /* queues the run's next step: never allocated */
    qitem *fin;        /* queues done; allocated with the call (NULL when done is) */
};

typedef struct racc {
    wkind kind; /* W_ACCEPT */
    eddy_rfeed_done_fn done;
    void *user;
    qitem *q; /* queues done; allocated with the accept */
} racc;

struct eddy_rfeed {
    struct ev_loop *loop;
    eddy__feed *core;
    eddy_rstore *store;
    eddy__feed_calls calls; /* the user's code the core runs counts in depth */
    eddy_rcheckpoints ckpt;
    ev_idle idle;
    qitem *qhead, *qtail;
    unsigned depth; /* projection callbacks and queue drains in progress */
    unsigned runs;  /* rrun records alive */
    rrun *rlist;
    /* Records for runs nobody asked for, so driving them never needs an allocation that could
     * fail: frec drives the core's failure run (it hands that over at most once, in out.start),
     * spare a deferred request's run (allocated before the core is polled, kept when none). */
    rrun frec;
    rrun *spare;
    struct rcommit *commits; /* live events' commits in flight (the feed lives until they end) */
    bool direct;             /* complete accepts at once (stop, free) */
    bool closing;
};

static void drive(rrun *r);
static void rrun_start(rrun *r, eddy__feed_run *run);

/* ---- queue ------------------------------------------------------------------------------ */

static void run_item(eddy_rfeed *feed, qitem *q);

/* Queues q. Items are allocated with the request they complete (or embedded in a run), so
 * queueing never allocates: out of memory, the request is refused up front instead, and no
 * completion ever has to run inside the call that asked for it. */
static void enqueue(eddy_rfeed *feed, qitem *q) {
    if (feed->closing) {
        run_item(feed, q); /* nothing drains the queue any more */
        return;
    }
    q->next = NULL;
    q->queued = true;
    if (feed->qtail)
        feed->qtail->next = q;
    else
        feed->qhead = q;
    feed->qtail = q;
    ev_idle_start(feed->loop, &feed->idle);
}

/* Queues done(st, err, user) in q (the caller's item, which the queue frees). */
static void post_done(eddy_rfeed *feed, qitem *q, eddy_rfeed_done_fn done, void *user,
                      eddy_status st, const eddy_error *err) {
    q->resume = NULL;
    q->done = done;
    q->user = user;
    q->st = st;
    if (err && st != EDDY_OK)
        q->err = *err;
    enqueue(feed, q);
}

/* Queues the next step of r (once: an item queued already drives it). */
static void post_resume(eddy_rfeed *feed, rrun *r) {
    if (r->rq.queued)
        return;
    r->rq.resume = r;
    enqueue(feed, &r->rq);
}

static void destroy_if_done(eddy_rfeed *feed) {
    if (feed->closing && feed->depth == 0 && feed->runs == 0 && !feed->commits && !feed->qhead) {
        eddy__feed_free(feed->core);
        free(feed->spare);
        free(feed);
    }
}

static void run_item(eddy_rfeed *feed, qitem *q) {
    q->queued = false;
    if (q->resume) {
        drive(q->resume); /* the run's own item: may be gone once the run ended */
        return;
    }
    if (q->done)
        q->done(q->st, q->st == EDDY_OK ? NULL : &q->err, q->user);
    free(q);
}

static void poll_deferred(eddy_rfeed *feed);

/* Runs the queue until it is empty. */
static void drain(eddy_rfeed *feed) {
    feed->depth++;
    qitem *q;
    while ((q = feed->qhead)) {
        feed->qhead = q->next;
        if (!feed->qhead)
            feed->qtail = NULL;
        run_item(feed, q);
    }
    feed->depth--;
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents) {
    eddy_rfeed *feed = w->data;
    ev_idle_stop(loop, w);
    feed->depth++;
    /* Only what is queued now: what these items queue runs on the next turn. */
    qitem *q = feed->qhead;
    feed->qhead = feed->qtail = NULL;
    while (q) {
        qitem *next = q->next;
        run_item(feed, q);
        q = next;
    }
    feed->depth--;
    if (feed->depth == 0)
        poll_deferred(feed);
    destroy_if_done(feed);
}

/* ---- completions from the core ---------------------------------------------------------- */

static void complete(void *waiter, eddy_status st, const eddy_error *err, void *ctx) {
    eddy_rfeed *feed = ctx;
    if (*(wkind *)waiter == W_RUN) {
        post_resume(feed, waiter); /* parked run: ask for its next step */
        return;
    }
    racc *a = waiter;
    eddy_rfeed_done_fn done = a->done;
    void *user = a->user;
    qitem *q = a->q;
    free(a);
    if (feed->direct) {
        free(q);
        done(st, st == EDDY_OK ? NULL : err, user);
    } else {
        post_done(feed, q, done, user, st, err);
    }
}

static void rrun_link(eddy_rfeed *feed, rrun *r, eddy_rfeed_done_fn done, void *user) {
    bool embedded = r->embedded;
    memset(r, 0, sizeof(*r));
    r->embedded = embedded;
    r->kind = W_RUN;
    r->feed = feed;
    r->done = done;
    r->user = user;
    r->delay.data = r;
    feed->runs++;
    r->next = feed->rlist;
    feed->rlist = r;
}

static rrun *rrun_new(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user) {
    rrun *r = calloc(1, sizeof(*r));
    qitem *fin = done ? calloc(1, sizeof(*fin)) : NULL;
    if (!r || (done && !fin)) {
        free(r);
        free(fin);
        return NULL;
    }
    rrun_link(feed, r, done, user);
    r->fin = fin;
    return r;
}

static void rrun_free(rrun *r) {
    eddy_rfeed *feed = r->feed;
    for (rrun **pp = &feed->rlist; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    feed->runs--;
    free(r->fin);
    r->fin = NULL;
    if (!r->embedded)
        free(r);
}

static void flush(void *ctx, eddy__feed_out *out) {
    eddy_rfeed *feed = ctx;
    eddy__feed_out_run(out, complete, feed);
    eddy__feed_run *start = out->start;
    out->start = NULL;
    if (start) {
        /* The core's failure run: handed over once per feed (the feed fails once), so the
         * embedded record is free. */
        rrun *r = &feed->frec;
        r->embedded = true;
        rrun_link(feed, r, NULL, NULL);
        eddy__feed_run_attach(start, r);
        rrun_start(r, start);
    }
}

static void poll_deferred(eddy_rfeed *feed) {
    if (feed->closing)
        return;
    for (;;) {
        /* The record first: out of memory, the core keeps the request for the next poll. */
        rrun *r = feed->spare ? feed->spare : calloc(1, sizeof(*r));
        feed->spare = NULL;
        if (!r)
            return;
        eddy__feed_run *run = eddy__feed_poll_deferred(feed->core);
        if (!run) {
            feed->spare = r;
            return;
        }
        rrun_link(feed, r, NULL, NULL);
        eddy__feed_run_attach(run, r);
        rrun_start(r, run);
    }
}

/* ---- driving a run ---------------------------------------------------------------------- */

static void depth_in(void *ctx) { ((eddy_rfeed *)ctx)->depth++; }
static void depth_out(void *ctx) { ((eddy_rfeed *)ctx)->depth--; }

/* A live event's commit in flight (a model kept in Redis). */
typedef struct rcommit {
    struct rcommit *next; /* the feed's live commits in flight */
    eddy_rfeed *feed;
    eddy__feed_live l; /* the live accept's, with the write set committing */
    qitem *q;          /* ... and its completion (NULL once answered by a free) */
    eddy_rfeed_done_fn done;
    void *user;
} rcommit;

/* A run that ended: its result goes to whoever asked, through the queue. */
static void run_finished(rrun *r) {
    eddy_rfeed *feed = r->feed;
    eddy_status st = r->drv.st;
    if (r->done) {
        if (feed->closing) {
            r->done(st, st == EDDY_OK ? NULL : &r->drv.err, r->user);
        } else {
            post_done(feed, r->fin, r->done, r->user, st, &r->drv.err);
            r->fin = NULL;
        }
    }
    rrun_free(r);
}

static void driven(rrun *r, eddy__drive_state state) {
    if (state == EDDY__DRIVE_DONE)
        run_finished(r);
}

/* Asks for steps until one has to wait for the loop. Only ever entered from the loop (or from
 * eddy_rfeed_free), never from inside another step. */
static void drive(rrun *r) { driven(r, eddy__feed_drive(&r->drv)); }

/* An operation's reply: the driver goes on from it. */
static void resume(rrun *r, eddy_status st, long long value, const eddy_error *err) {
    eddy_rfeed *feed = r->feed;
    driven(r, eddy__feed_driver_done(&r->drv, st, value, err));
    if (feed->depth == 0) {
        poll_deferred(feed);
        destroy_if_done(feed);
    }
}

static void on_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    resume(user, st, exists, err);
}

static void on_done(eddy_status st, const eddy_error *err, void *user) { resume(user, st, 0, err); }

static void on_read(eddy_status st, long long value, const eddy_error *err, void *user) {
    resume(user, st, value, err);
}

static void on_delay(struct ev_loop *loop, ev_timer *w, int revents) {
    rrun *r = w->data;
    eddy_rfeed *feed = r->feed;
    ev_timer_stop(loop, w);
    r->timing = false;
    feed->depth++;
    driven(r, eddy__feed_driver_done(&r->drv, EDDY_OK, 0, NULL));
    feed->depth--;
    if (feed->depth == 0)
        poll_deferred(feed);
    destroy_if_done(feed);
}

static eddy_status page_event(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    return eddy__feed_driver_page_event(ev, meta, &((rrun *)user)->drv);
}

/* Sends op; its reply tells the driver (or this does, when it cannot be sent). */
static void io_start(void *ctx, const eddy__feed_io_op *op, eddy__feed_driver *d) {
    rrun *r = ctx;
    eddy_rfeed *feed = r->feed;
    eddy_error e = {0};
    eddy_status st = EDDY_OK;
    switch (op->kind) {
    case EDDY__IO_EXISTS:
        st = feed->ckpt.ops->exists(feed->ckpt.self, op->id, on_exists, r, &e);
        break;
    case EDDY__IO_POSITION:
        st = eddy_rstore_model_position(feed->store, op->id, on_read, r, &e);
        break;
    case EDDY__IO_HEAD:
        st = eddy_rstore_head(feed->store, on_read, r, &e);
        break;
    case EDDY__IO_PAGE:
        st = eddy_rstore_read_page(feed->store, op->position, op->max, NULL, page_event, on_read, r,
                                   &e);
        break;
    case EDDY__IO_SAVE:
        st = feed->ckpt.ops->save(feed->ckpt.self, op->id, op->marker, on_done, r, &e);
        break;
    case EDDY__IO_REMOVE:
        st = feed->ckpt.ops->remove(feed->ckpt.self, op->id, on_done, r, &e);
        break;
    case EDDY__IO_DELAY:
        if (feed->closing) /* nothing would fire the timer: delete at once */
            break;
        ev_timer_init(&r->delay, on_delay, (double)op->delay_ms / 1000.0, 0.);
        r->delay.data = r;
        r->timing = true;
        ev_timer_start(feed->loop, &r->delay);
        return;
    case EDDY__IO_COMMIT:
        st = eddy__rmodel_commit(feed->store, eddy__feed_model(feed->core), op->writes, op->page,
                                 on_done, r, &e);
        break;
    }
    if (st != EDDY_OK || op->kind == EDDY__IO_DELAY)
        eddy__feed_driver_done(d, st, 0, &e);
}

static void io_flush(void *ctx, eddy__feed_out *out) { flush(((rrun *)ctx)->feed, out); }

static const eddy__feed_io rio = {io_start, io_flush, NULL};

/* r drives run from the loop's next turn. */
static void rrun_start(rrun *r, eddy__feed_run *run) {
    eddy__feed_driver_init(&r->drv, r->feed->core, run, &rio, r, &r->feed->calls);
    post_resume(r->feed, r);
}

/* ---- the rstore's checkpoint storage ----------------------------------------------------- */

static eddy_status st_exists(void *self, const char *id, eddy_rstore_exists_fn done, void *user,
                             eddy_error *err) {
    return eddy_rstore_checkpoint_exists(self, id, done, user, err);
}
static eddy_status st_save(void *self, const char *id, const char *value, eddy_rstore_done_fn done,
                           void *user, eddy_error *err) {
    return eddy_rstore_checkpoint_save(self, id, value, done, user, err);
}
static eddy_status st_remove(void *self, const char *id, eddy_rstore_done_fn done, void *user,
                             eddy_error *err) {
    return eddy_rstore_checkpoint_remove(self, id, done, user, err);
}
static const eddy_rcheckpoint_ops store_ckpt_ops = {st_exists, st_save, st_remove};

eddy_rcheckpoints eddy_rstore_checkpoints(eddy_rstore *store) {
    eddy_rcheckpoints c = {&store_ckpt_ops, store};
    return c;
}

/* ---- public API ------------------------------------------------------------------------- */

eddy_status eddy_rfeed_new(struct ev_loop *loop, eddy_rstore *store, const eddy_feed_config *cfg,
                           const eddy_rcheckpoints *ckpt, eddy_rfeed **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!loop || !store || !cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop, store or cfg is NULL");
    if (cfg->checkpoints)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "feed '%s': checkpoints must be NULL on the reactive feed (pass "
                          "asynchronous eddy_rcheckpoints to eddy_rfeed_new)",
                          cfg->id ? cfg->id : "?");
    eddy__feed *core;
    eddy_status st =
        eddy__feed_open(cfg, EDDY__FEED_REACTIVE, ckpt != NULL, EDDY__CHECKPOINTS_COMPLETE(ckpt),
                        eddy__rstore_ns(store), &core, err);
    if (st != EDDY_OK)
        return st;
    eddy_rfeed *feed = calloc(1, sizeof(*feed));
    if (!feed) {
        eddy__feed_free(core);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    feed->core = core;
    feed->loop = loop;
    feed->store = store;
    feed->calls = (eddy__feed_calls){depth_in, depth_out, NULL, feed};
    if (ckpt)
        feed->ckpt = *ckpt;
    ev_idle_init(&feed->idle, on_idle);
    feed->idle.data = feed;
    *out = feed;
    return EDDY_OK;
}

/* Runs waiting on a timer or a store operation at free: their callers learn now, and the core
 * ends each at its next step (a pending retry is reported as closed at once). */
static void close_runs(eddy_rfeed *feed) {
    eddy_error e = {0};
    eddy__fail(&e, EDDY_ERR_CLOSED, "feed '%s' is freed", eddy__feed_id(feed->core));
    /* A live commit in flight may still land: answered as not applied, the listener's delivery
     * comes again, and its version then says it is in. */
    for (rcommit *c = feed->commits; c; c = c->next)
        if (c->q) {
            qitem *q = c->q;
            c->q = NULL;
            post_done(feed, q, c->done, c->user, EDDY_ERR_CLOSED, &e);
        }
    for (rrun *r = feed->rlist; r; r = r->next)
        if (r->done) {
            eddy_rfeed_done_fn done = r->done;
            r->done = NULL;
            done(EDDY_ERR_CLOSED, &e, r->user);
        }
    for (;;) {
        rrun *r = feed->rlist;
        while (r && !r->timing)
            r = r->next;
        if (!r)
            break;
        ev_timer_stop(feed->loop, &r->delay);
        r->timing = false;
        driven(r, eddy__feed_driver_done(&r->drv, EDDY_ERR_CLOSED, 0, &e));
    }
}

void eddy_rfeed_free(eddy_rfeed *feed) {
    if (!feed || feed->closing)
        return;
    feed->closing = true;
    ev_idle_stop(feed->loop, &feed->idle);
    feed->depth++;
    feed->direct = true;
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    eddy__feed_close(feed->core, &out);
    flush(feed, &out);
    drain(feed);
    close_runs(feed);
    feed->depth--;
    feed->direct = false;
    destroy_if_done(feed);
}

const char *eddy_rfeed_id(const eddy_rfeed *feed) {
    return feed ? eddy__feed_id(feed->core) : NULL;
}

eddy__feed *eddy__rfeed_core(eddy_rfeed *feed) { return feed->core; }

static eddy_status run_call(eddy_rfeed *feed, bool go_live, eddy_rfeed_done_fn done, void *user,
                            eddy_error *err) {
    if (!feed || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed or done is NULL");
    if (feed->closing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "feed '%s' is freed", eddy__feed_id(feed->core));
    rrun *r = rrun_new(feed, done, user);
    if (!r)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__feed_run *run = NULL;
    bool cb = feed->depth > 0;
    eddy_status st = eddy__feed_start(feed->core, go_live, r, cb, &run, err);
    if (st != EDDY_OK || !run) {
        if (st == EDDY_OK) {
            post_done(feed, r->fin, done, user, EDDY_OK, NULL);
            r->fin = NULL;
        }
        rrun_free(r);
        return st;
    }
    rrun_start(r, run);
    return EDDY_OK;
}

eddy_status eddy_rfeed_catch_up(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user,
                                eddy_error *err) {
    return run_call(feed, false, done, user, err);
}

eddy_status eddy_rfeed_go_live(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user,
                               eddy_error *err) {
    return run_call(feed, true, done, user, err);
}

void eddy_rfeed_stop_catch_up(eddy_rfeed *feed) {
    if (!feed || feed->closing)
        return;
    bool was = feed->direct;
    feed->direct = true;
    feed->depth++;
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    eddy__feed_stop(feed->core, &out);
    flush(feed, &out);
    feed->depth--;
    feed->direct = was;
    destroy_if_done(feed);
}

static void on_live_committed(eddy_status st, const eddy_error *err, void *user) {
    rcommit *c = user;
    eddy_rfeed *feed = c->feed;
    eddy__feed_live_end(&c->l, st, err);
    if (c->q)
        post_done(feed, c->q, c->done, c->user, c->l.st, &c->l.err);
    for (rcommit **pp = &feed->commits; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    free(c);
    if (feed->depth == 0)
        poll_deferred(feed);
    destroy_if_done(feed);
}

/* Applies a live event and answers its accept; with a model kept in Redis its write set commits
 * alone and on_live_committed answers, or this does when the commit cannot be sent. */
static void apply_live(eddy_rfeed *feed, eddy__feed_live *l, void *event,
                       const eddy_event_meta *meta, qitem *q, eddy_rfeed_done_fn done, void *user) {
    eddy_error e = {0};
    const eddy__model *m = eddy__feed_model(feed->core);
    rcommit *c = m ? calloc(1, sizeof(*c)) : NULL; /* first: out of memory, nothing is applied */
    if (m && !c) {
        eddy__feed_live_end(l, eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory"), &e);
    } else if (eddy__feed_live_apply(l, event, meta, &feed->calls)) {
        *c = (rcommit){feed->commits, feed, *l, q, done, user}; /* the write set moves along */
        eddy_status st =
            eddy__rmodel_commit(feed->store, m, &c->l.w, false, on_live_committed, c, &e);
        if (st == EDDY_OK) {
            feed->commits = c;
            return;
        }
        eddy__feed_live_end(&c->l, st, &e);
        l = &c->l;
    }
    post_done(feed, q, done, user, l->st, &l->err);
    free(c);
}

static eddy_status rf_accept(eddy_rfeed *feed, const eddy_event_meta *meta, void *event, bool defer,
                             eddy_rfeed_done_fn done, void *user) {
    if (!feed || !event || !done)
        return EDDY_ERR_INVALID_ARGUMENT;
    qitem *q = calloc(1, sizeof(*q)); /* the completion's: queueing it later cannot fail */
    if (!q)
        return EDDY_ERR_NOMEM;
    if (feed->closing) {
        eddy_error err;
        eddy__fail(&err, EDDY_ERR_CLOSED, "feed '%s' is freed", eddy__feed_id(feed->core));
        post_done(feed, q, done, user, EDDY_ERR_CLOSED, &err);
        return EDDY_OK;
    }
    racc *a = calloc(1, sizeof(*a));
    if (!a) {
        free(q);
        return EDDY_ERR_NOMEM;
    }
    *a = (racc){W_ACCEPT, done, user, q};
    eddy__feed_live l;
    eddy__accept_flags flags = {feed->depth > 0, false, defer};
    switch (eddy__feed_live_accept(&l, feed->core, meta, event, a, flags, flush, feed)) {
    case EDDY__LIVE_HELD:
        break;
    case EDDY__LIVE_APPLY:
        free(a); /* answered by apply_live or on_live_committed: the core will not complete it */
        apply_live(feed, &l, event, meta, q, done, user);
        break;
    default:
        free(a); /* answered here (EDDY_PENDING: eddy__rfeed_accept_or_defer's "deferred") */
        post_done(feed, q, done, user, l.st, &l.err);
        break;
    }
    if (feed->depth == 0)
        poll_deferred(feed);
    return EDDY_OK;
}

eddy_status eddy_rfeed_accept(eddy_rfeed *feed, void *event, eddy_rfeed_done_fn done, void *user) {
    return rf_accept(feed, NULL, event, false, done, user);
}

eddy_status eddy_rfeed_accept_meta(eddy_rfeed *feed, const eddy_event_meta *meta, void *event,
                                   eddy_rfeed_done_fn done, void *user) {
    if (!meta)
        return EDDY_ERR_INVALID_ARGUMENT;
    return rf_accept(feed, meta, event, false, done, user);
}

eddy_status eddy_rfeed_offer(eddy_rfeed *feed, const eddy_event_meta *meta, void *event,
                             eddy_rfeed_done_fn done, void *user) {
    return rf_accept(feed, meta, event, false, done, user);
}

eddy_status eddy__rfeed_accept_or_defer(eddy_rfeed *feed, const eddy_event_meta *meta, void *event,
                                        eddy_rfeed_done_fn done, void *user) {
    return rf_accept(feed, meta, event, true, done, user);
}

eddy_status eddy__rfeed_post(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user, eddy_status st,
                             const eddy_error *err) {
    qitem *q = calloc(1, sizeof(*q));
    if (!q)
        return EDDY_ERR_NOMEM;
    post_done(feed, q, done, user, st, err);
    return EDDY_OK;
}

eddy_status eddy_rfeed_stats(eddy_rfeed *feed, eddy_feed_info *out) {
    return eddy__feed_stats(feed ? feed->core : NULL, out);
}

bool eddy_rfeed_ready_for_live_delivery(eddy_rfeed *feed) {
    return eddy__feed_ready(feed ? feed->core : NULL);
}

bool eddy_rfeed_refuses_permanently(eddy_rfeed *feed) {
    return eddy__feed_failure(feed ? feed->core : NULL, NULL);
}

bool eddy_rfeed_failure(eddy_rfeed *feed, eddy_error *cause) {
    return eddy__feed_failure(feed ? feed->core : NULL, cause);
}

/* ---- listener ------------------------------------------------------------------------------ */

static eddy_status offer(void *feed, const eddy_event_meta *meta, void *event,
                         eddy_feed_done_fn done, void *user) {
    return eddy_rfeed_offer(feed, meta, event, done, user);
}

eddy_status eddy_rfeed_handler(eddy_delivery *d, void *user) {
    eddy_rfeed *feed = user;
    if (!feed || !d)
        return EDDY_ERR_INVALID_ARGUMENT;
    return eddy__feed_handle(feed->core, d, offer, feed);
}
