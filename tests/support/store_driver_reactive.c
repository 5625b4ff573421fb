/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive store behind the store scenario driver: each store lives on a loop thread of its
 * own (rloop.h); a call starts the operation there and waits for its completion, which is
 * checked to run once and never inside the call. A refusal is the call's own status (no
 * completion runs); any other outcome is the completion's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/rstore.h"
#include "recorder.h"
#include "rloop.h"
#include "store_driver.h"

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
    eddy_status st = eddy_rstore_ckpt_exists(o->t->st, o->feed_id, on_exists, o, o->err);
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
    eddy_status st = eddy_rstore_ckpt_read(o->t->st, o->feed_id, on_read, o, o->err);
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
    eddy_status st = eddy_rstore_ckpt_save(o->t->st, o->feed_id, o->marker, on_done, o, o->err);
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
    eddy_status st = eddy_rstore_ckpt_remove(o->t->st, o->feed_id, on_done, o, o->err);
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
    cr_expect_neq(eddy_rstore_ckpt_exists(st, "f", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_ckpt_exists(NULL, "f", count_exists, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_ckpt_read(st, "f", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_ckpt_save(st, "f", "1", NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_ckpt_remove(st, "f", NULL, sh, &err), EDDY_OK);
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
};
