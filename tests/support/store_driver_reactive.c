/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive store behind the store scenario driver: each store lives on a loop thread of its
 * own (rloop.h); a call starts the operation there and waits for its completion, which is
 * checked to run once and never inside the call. A refusal is the call's own status (no
 * completion runs); any other outcome is the completion's. */
#include <criterion/criterion.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/rstore.h"
#include "recorder.h"
#include "rloop.h"
#include "store_driver.h"
#include "test_backend.h"

typedef struct rtstore {
    rloop *l;
    eddy_rstore *st;
} rtstore;

typedef struct sop {
    rloop_op op;
    rtstore *t;
    const eddy_settings *settings;
    const char *stream_id;
    const eddy_event *const *evs;
    size_t n;
    const eddy_append_opts *opts;
    long long after;
    size_t max;
    const eddy_filter *filter;
    eddy_stored_fn fn;
    void *user;
    long long *value; /* new version, next position, head */
    const char *feed_id, *marker;
    bool *flag;
    char *buf;
    size_t size;
    eddy_error *err;
} sop;

static void copy_err(sop *o, const eddy_error *err) {
    if (o->err && err)
        *o->err = *err;
}

static void end(sop *o, eddy_status st, const eddy_error *err, const char *what) {
    rloop_callback(&o->op, what);
    cr_assert(st == EDDY_OK || err, "%s: %s without detail", what, eddy_status_name(st));
    copy_err(o, err);
    rloop_finish(&o->op, st);
}

/* ---- open and close ------------------------------------------------------------------------ */

static void start_open(rloop_op *op) {
    sop *o = (sop *)op;
    rloop_finish(op, eddy_rstore_open(rloop_loop(op->l), o->settings, &o->t->st, o->err));
}

static eddy_status r_open(const eddy_settings *s, tstore **out, eddy_error *err) {
    *out = NULL;
    rtstore *t = calloc(1, sizeof(*t));
    cr_assert(t);
    t->l = rloop_new();
    sop o = {.t = t, .settings = s, .err = err};
    eddy_status st = rloop_call(t->l, &o.op, start_open);
    if (st != EDDY_OK) {
        cr_assert_null(t->st, "a refused open gave a store");
        rloop_free(t->l);
        free(t);
        return st;
    }
    *out = (tstore *)t;
    return EDDY_OK;
}

static void start_close(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_rstore_close(o->t->st);
    o->t->st = NULL;
    rloop_finish(op, EDDY_OK);
}

static void r_close(tstore *st) {
    if (!st)
        return;
    rtstore *t = (rtstore *)st;
    sop o = {.t = t};
    rloop_call(t->l, &o.op, start_close);
    rloop_free(t->l);
    free(t);
}

/* ---- append, reads, head ------------------------------------------------------------------- */

static void on_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    sop *o = user;
    if (st == EDDY_OK && o->value)
        *o->value = v;
    end(o, st, err, "append");
}

static void start_append(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st =
        eddy_rstore_append(o->t->st, o->stream_id, o->evs, o->n, o->opts, on_append, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status r_append(tstore *st, const char *stream_id, const eddy_event *const *evs,
                            size_t n, const eddy_append_opts *opts, long long *new_version,
                            eddy_error *err) {
    rtstore *t = (rtstore *)st;
    sop o = {.t = t,
             .stream_id = stream_id,
             .evs = evs,
             .n = n,
             .opts = opts,
             .value = new_version,
             .err = err};
    return rloop_call(t->l, &o.op, start_append);
}

static eddy_status each(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    sop *o = user;
    return o->fn(ev, m, o->user);
}

static void start_stream_page(rloop_op *op);

static void on_stream_page(eddy_status st, long long last, bool more, const eddy_error *err,
                           void *user) {
    sop *o = user;
    if (st == EDDY_OK && more) {
        /* The next page, asked for from this one's completion. */
        rloop_callback(&o->op, "stream page");
        o->op.callbacks = 0;
        o->after = last;
        start_stream_page(&o->op);
        return;
    }
    end(o, st, err, "stream page");
}

static void start_stream_page(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st = eddy_rstore_read_stream_page(o->t->st, o->stream_id, o->after, each,
                                                  on_stream_page, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status r_read_stream(tstore *st, const char *stream_id, long long after,
                                 eddy_stored_fn fn, void *user, eddy_error *err) {
    rtstore *t = (rtstore *)st;
    sop o = {.t = t, .stream_id = stream_id, .after = after, .fn = fn, .user = user, .err = err};
    return rloop_call(t->l, &o.op, start_stream_page);
}

static void on_page(eddy_status st, long long next, const eddy_error *err, void *user) {
    sop *o = user;
    if (o->value)
        *o->value = next;
    end(o, st, err, "page");
}

static void start_page(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st =
        eddy_rstore_read_page(o->t->st, o->after, o->max, o->filter, each, on_page, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status r_read_all(tstore *st, long long after, size_t max, const eddy_filter *f,
                              eddy_stored_fn fn, void *user, long long *next, eddy_error *err) {
    rtstore *t = (rtstore *)st;
    sop o = {.t = t,
             .after = after,
             .max = max,
             .filter = f,
             .fn = fn,
             .user = user,
             .value = next,
             .err = err};
    return rloop_call(t->l, &o.op, start_page);
}

static void on_head(eddy_status st, long long position, const eddy_error *err, void *user) {
    sop *o = user;
    if (st == EDDY_OK && o->value)
        *o->value = position;
    end(o, st, err, "head");
}

static void start_head(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st = eddy_rstore_head(o->t->st, on_head, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status r_head(tstore *st, long long *position, eddy_error *err) {
    rtstore *t = (rtstore *)st;
    sop o = {.t = t, .value = position, .err = err};
    return rloop_call(t->l, &o.op, start_head);
}

/* ---- checkpoints, as eddy_checkpoint_ops ------------------------------------------------- */

static void on_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    sop *o = user;
    if (st == EDDY_OK)
        *o->flag = exists;
    end(o, st, err, "checkpoint exists");
}

static void start_exists(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st = eddy_rstore_checkpoint_exists(o->t->st, o->feed_id, on_exists, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status ck_exists(void *self, const char *feed_id, bool *exists, eddy_error *err) {
    rtstore *t = self;
    sop o = {.t = t, .feed_id = feed_id, .flag = exists, .err = err};
    return rloop_call(t->l, &o.op, start_exists);
}

static void on_read(eddy_status st, const char *value, bool found, const eddy_error *err,
                    void *user) {
    sop *o = user;
    cr_expect(found == (value != NULL), "found %d with value %p", found, (const void *)value);
    if (st == EDDY_OK) {
        *o->flag = found;
        o->buf[0] = '\0';
        if (found && strlen(value) >= o->size) {
            rloop_callback(&o->op, "checkpoint read");
            if (o->err) {
                o->err->status = EDDY_ERR_TOO_LARGE;
                snprintf(o->err->detail, sizeof(o->err->detail), "marker of %s does not fit",
                         o->feed_id);
            }
            rloop_finish(&o->op, EDDY_ERR_TOO_LARGE);
            return;
        }
        if (found)
            snprintf(o->buf, o->size, "%s", value);
    }
    end(o, st, err, "checkpoint read");
}

static void start_read(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st = eddy_rstore_checkpoint_read(o->t->st, o->feed_id, on_read, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status ck_read(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                           eddy_error *err) {
    rtstore *t = self;
    cr_assert(buf && size && found, "the reactive adapter needs a buffer and found");
    sop o = {.t = t, .feed_id = feed_id, .buf = buf, .size = size, .flag = found, .err = err};
    return rloop_call(t->l, &o.op, start_read);
}

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    end(user, st, err, "checkpoint save/remove");
}

static void start_save(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st =
        eddy_rstore_checkpoint_save(o->t->st, o->feed_id, o->marker, on_done, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status ck_save(void *self, const char *feed_id, const char *value, eddy_error *err) {
    rtstore *t = self;
    sop o = {.t = t, .feed_id = feed_id, .marker = value, .err = err};
    return rloop_call(t->l, &o.op, start_save);
}

static void start_remove(rloop_op *op) {
    sop *o = (sop *)op;
    eddy_status st = eddy_rstore_checkpoint_remove(o->t->st, o->feed_id, on_done, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status ck_remove(void *self, const char *feed_id, eddy_error *err) {
    rtstore *t = self;
    sop o = {.t = t, .feed_id = feed_id, .err = err};
    return rloop_call(t->l, &o.op, start_remove);
}

static const eddy_checkpoint_ops reactive_ckpt_ops = {ck_exists, ck_read, ck_save, ck_remove};

static eddy_checkpoints r_checkpoints(tstore *st) {
    return (eddy_checkpoints){&reactive_ckpt_ops, st};
}

/* ---- the calling shape: NULL handles and callbacks --------------------------------------- */

typedef struct shape {
    rtstore *t;
    const eddy_settings *s;
    int calls;
} shape;

static void count_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    (void)st, (void)v, (void)err;
    ((shape *)user)->calls++;
}
static void count_page(eddy_status st, long long next, const eddy_error *err, void *user) {
    (void)st, (void)next, (void)err;
    ((shape *)user)->calls++;
}
static void count_stream(eddy_status st, long long last, bool more, const eddy_error *err,
                         void *user) {
    (void)st, (void)last, (void)more, (void)err;
    ((shape *)user)->calls++;
}
static void count_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    (void)st, (void)exists, (void)err;
    ((shape *)user)->calls++;
}
static eddy_status nop_fn(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    (void)ev, (void)m, (void)user;
    return EDDY_OK;
}

static void shape_on_loop(void *arg) {
    shape *sh = arg;
    eddy_rstore *st = sh->t->st, *none = NULL;
    eddy_error err = {0};
    struct ev_loop *loop = rloop_loop(sh->t->l);
    cr_expect_eq(eddy_rstore_open(loop, sh->s, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_open(NULL, sh->s, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(none);
    eddy_event *ev = make_event("x1", "t");
    const eddy_event *evs[] = {ev};
    cr_expect_eq(eddy_rstore_append(NULL, "s", evs, 1, NULL, count_append, sh, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_append(st, "s", evs, 1, NULL, NULL, sh, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_neq(eddy_rstore_read_page(st, 0, 10, NULL, NULL, count_page, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_page(st, 0, 10, NULL, nop_fn, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_stream_page(st, "s", 0, NULL, count_stream, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_stream_page(st, "s", 0, nop_fn, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_head(st, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_head(NULL, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_exists(st, "f", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_exists(NULL, "f", count_exists, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_read(st, "f", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_save(st, "f", "1", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_remove(st, "f", NULL, sh, &err), EDDY_OK);
    eddy_rstore_close(NULL);
    eddy_event_free(ev);
}

static void r_shape_refusals(const eddy_settings *s, tstore *open) {
    shape sh = {.t = (rtstore *)open, .s = s};
    rloop_run(sh.t->l, shape_on_loop, &sh);
    /* A head through the loop: any completion a refused call had queued would have run. */
    long long h;
    cr_expect_eq(r_head(open, &h, NULL), EDDY_OK);
    cr_expect_eq(sh.calls, 0, "a refused call ran its callback (%d)", sh.calls);
}

static void *r_native(tstore *st) { return ((rtstore *)st)->st; }
static rloop *r_loop(tstore *st) { return ((rtstore *)st)->l; }

/* ---- the reactive calling shape: completions at teardown and from a callback -------------
 *
 * Rules of the reactive store alone (store_driver.h's reactive-only members): each runs the
 * store on a loop of its own on the calling thread, to close it between a call and its
 * completion, and asserts the rule. */

typedef struct rtctx {
    struct ev_loop *loop;
    const eddy_settings *s;
} rtctx;

static void rsetup(rtctx *t, const eddy_settings *s) {
    t->s = s;
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
}

static eddy_rstore *ropen(rtctx *t) {
    eddy_rstore *st = NULL;
    eddy_error err = {0};
    eddy_status rc = eddy_rstore_open(t->loop, t->s, &st, &err);
    cr_assert_eq(rc, EDDY_OK, "open: %s (%s)", eddy_status_name(rc), err.detail);
    return st;
}

/* What a completion reported. */
typedef struct rrec {
    int calls;
    eddy_status st;
    long long value;
    bool flag;
    char text[64];
    eddy_rstore **close_store; /* close this store from inside the callback */
    int *delivered;            /* events a page delivered */
} rrec;

static void rnote(rrec *r, eddy_status st, const eddy_error *err) {
    r->calls++;
    r->st = st;
    cr_expect(st == EDDY_OK || err, "a failure without detail");
    if (r->close_store && *r->close_store) {
        eddy_rstore_close(*r->close_store);
        *r->close_store = NULL;
    }
}
static void ron_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    ((rrec *)user)->value = v;
    rnote(user, st, err);
}
static void ron_page(eddy_status st, long long next, const eddy_error *err, void *user) {
    ((rrec *)user)->value = next;
    rnote(user, st, err);
}
static void ron_stream(eddy_status st, long long last, bool more, const eddy_error *err,
                       void *user) {
    ((rrec *)user)->value = last;
    ((rrec *)user)->flag = more;
    rnote(user, st, err);
}
static void ron_head(eddy_status st, long long pos, const eddy_error *err, void *user) {
    ((rrec *)user)->value = pos;
    rnote(user, st, err);
}
static void ron_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    ((rrec *)user)->flag = exists;
    rnote(user, st, err);
}
static void ron_read(eddy_status st, const char *value, bool found, const eddy_error *err,
                     void *user) {
    rrec *r = user;
    r->flag = found;
    snprintf(r->text, sizeof(r->text), "%s", value ? value : "");
    rnote(r, st, err);
}
static void ron_done(eddy_status st, const eddy_error *err, void *user) { rnote(user, st, err); }

static eddy_status rcount(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    (void)ev, (void)m;
    rrec *r = user;
    (*r->delivered)++;
    if (r->close_store && *r->close_store) {
        eddy_rstore_close(*r->close_store);
        *r->close_store = NULL;
    }
    return EDDY_OK;
}

static void rappend_wait(rtctx *t, eddy_rstore *st, const char *stream, size_t n) {
    eddy_event *evs[4];
    cr_assert(n <= 4);
    for (size_t i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%zu", i + 1);
        evs[i] = make_event(id, "t");
    }
    rrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_append(st, stream, (const eddy_event *const *)evs, n, NULL, ron_append,
                                    &r, &err),
                 EDDY_OK, "%s", err.detail);
    for (size_t i = 0; i < n; i++)
        eddy_event_free(evs[i]);
    cr_assert(eddy_test_run_until(t->loop, &r.calls, 1, 20000), "append never completed");
    cr_assert_eq(r.st, EDDY_OK);
}

static void r_close_with_operations_pending(const eddy_settings *s) {
    rtctx t;
    rsetup(&t, s);
    eddy_rstore *st = ropen(&t);
    eddy_error err = {0};
    int delivered = 0;
    rrec ap = {0}, pg = {.delivered = &delivered}, sp = {.delivered = &delivered}, hd = {0},
         ck = {0};
    eddy_event *ev = make_event("x1", "t");
    const eddy_event *evs[] = {ev};
    cr_assert_eq(eddy_rstore_append(st, "s-1", evs, 1, NULL, ron_append, &ap, &err), EDDY_OK);
    eddy_event_free(ev);
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, rcount, ron_page, &pg, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_read_stream_page(st, "s-1", 0, rcount, ron_stream, &sp, &err),
                 EDDY_OK);
    cr_assert_eq(eddy_rstore_head(st, ron_head, &hd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_save(st, "f", "1", ron_done, &ck, &err), EDDY_OK);
    eddy_rstore_close(st); /* before any reply came: every callback runs now, once */
    rrec *all[] = {&ap, &pg, &sp, &hd, &ck};
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(all[i]->calls, 1, "op %d ran %d times in close", i, all[i]->calls);
        cr_expect_eq(all[i]->st, EDDY_ERR_CLOSED, "op %d: %s", i, eddy_status_name(all[i]->st));
    }
    eddy_test_run_for(t.loop, 100);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(all[i]->calls, 1, "op %d ran again after close", i);
    cr_expect_eq(delivered, 0);
    ev_loop_destroy(t.loop);
}

static void r_close_from_a_callback(const eddy_settings *s) {
    rtctx t;
    rsetup(&t, s);
    eddy_rstore *st = ropen(&t);
    rappend_wait(&t, st, "s-1", 2);
    /* The head's callback closes the store; what is queued behind it ends closed, once. */
    eddy_error err = {0};
    eddy_rstore *victim = st;
    int delivered = 0;
    rrec hd = {.close_store = &victim}, hd2 = {0}, pg = {.delivered = &delivered};
    cr_assert_eq(eddy_rstore_head(st, ron_head, &hd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_head(st, ron_head, &hd2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, rcount, ron_page, &pg, &err), EDDY_OK);
    cr_assert(eddy_test_run_until(t.loop, &hd.calls, 1, 20000));
    cr_expect_eq(hd.st, EDDY_OK);
    cr_expect_eq(hd.value, 2);
    cr_expect_null(victim);
    eddy_test_run_for(t.loop, 100);
    cr_expect_eq(hd.calls, 1);
    cr_expect_eq(hd2.calls, 1);
    cr_expect_eq(pg.calls, 1);
    cr_expect_eq(hd2.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(hd2.st));
    cr_expect_eq(pg.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(pg.st));
    cr_expect_eq(delivered, 0);
    ev_loop_destroy(t.loop);
}

/* A page whose `each` closes the store: the page stops and ends closed, once. */
static void r_close_from_a_pages_each(const eddy_settings *s) {
    rtctx t;
    rsetup(&t, s);
    eddy_rstore *st = ropen(&t);
    rappend_wait(&t, st, "s-1", 3);
    eddy_error err = {0};
    eddy_rstore *victim = st;
    int delivered = 0;
    rrec pg = {.close_store = &victim, .delivered = &delivered};
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, rcount, ron_page, &pg, &err), EDDY_OK);
    cr_assert(eddy_test_run_until(t.loop, &pg.calls, 1, 20000));
    eddy_test_run_for(t.loop, 50);
    cr_expect_eq(pg.calls, 1);
    cr_expect_eq(pg.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(pg.st));
    cr_expect_eq(delivered, 1, "events delivered after the close: %d", delivered);
    cr_expect_eq(pg.value, 1, "next position %lld", pg.value);
    ev_loop_destroy(t.loop);
}

/* Checkpoint operations asked for all at once, without waiting: each completes once, in order
 * (the driver's checkpoint adapter waits for each, so this is the in-flight case). */
static void r_checkpoint_operations_in_flight_at_once(const eddy_settings *s) {
    rtctx t;
    rsetup(&t, s);
    eddy_rstore *st = ropen(&t);
    eddy_error err = {0};
    rrec ex = {0}, rd = {0}, sv = {0}, rm = {0}, ex2 = {0}, rd2 = {0}, ex3 = {0};
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", ron_exists, &ex, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_read(st, "feed-1", ron_read, &rd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_save(st, "feed-1", "42", ron_done, &sv, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", ron_exists, &ex2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_read(st, "feed-1", ron_read, &rd2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_remove(st, "feed-1", ron_done, &rm, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", ron_exists, &ex3, &err), EDDY_OK);
    cr_assert(eddy_test_run_until(t.loop, &ex3.calls, 1, 20000));
    eddy_test_run_for(t.loop, 10);
    rrec *all[] = {&ex, &rd, &sv, &ex2, &rd2, &rm, &ex3};
    for (int i = 0; i < 7; i++) {
        cr_expect_eq(all[i]->calls, 1, "op %d ran %d times", i, all[i]->calls);
        cr_expect_eq(all[i]->st, EDDY_OK, "op %d: %s", i, eddy_status_name(all[i]->st));
    }
    cr_expect_not(ex.flag);
    cr_expect_not(rd.flag);
    cr_expect(ex2.flag);
    cr_expect(rd2.flag);
    cr_expect_str_eq(rd2.text, "42");
    cr_expect_not(ex3.flag);
    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

const store_driver reactive_store_driver = {
    .name = "reactive",
    .reactive = true,
    .open = r_open,
    .close = r_close,
    .append = r_append,
    .read_stream = r_read_stream,
    .read_all = r_read_all,
    .head = r_head,
    .checkpoints = r_checkpoints,
    .shape_refusals = r_shape_refusals,
    .native = r_native,
    .loop = r_loop,
    .close_with_operations_pending = r_close_with_operations_pending,
    .close_from_a_callback = r_close_from_a_callback,
    .close_from_a_pages_each = r_close_from_a_pages_each,
    .checkpoint_operations_in_flight_at_once = r_checkpoint_operations_in_flight_at_once,
};
