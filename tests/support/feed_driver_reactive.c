/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive feed behind the feed scenario driver: the feed lives on its store's loop thread
 * (rloop.h); every call runs there, and a call with a completion waits for it (checked to run
 * once, never inside the call). A refusal is the call's own status; any other outcome is the
 * completion's. A call in flight is started on the loop and its completion kept. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "eddy_test.h"
#include "feed_driver.h"
#include "rloop.h"

struct tfeed {
    rloop *l;
    eddy_rstore *store;
    eddy_rcheckpoints ckpt;
    eddy_rfeed *feed;
};

typedef struct fop {
    rloop_op op;
    tfeed *f;
    const eddy_feed_config *cfg;
    feed_call_kind kind;
    const eddy_event_meta *meta;
    void *event;
    bool flag;
    eddy_error *cause;
    eddy_feed_info *info;
    int sync;
    eddy_error *err;
} fop;

/* A call in flight: its completion, kept (loop thread writes, any thread reads under lock). */
struct tcall {
    tfeed *f;
    feed_call_kind kind;
    const eddy_event_meta *meta;
    void *event;
    pthread_mutex_t m;
    pthread_cond_t c;
    bool in_call, done;
    int calls;
    unsigned long at;
    eddy_status st;
    eddy_error err;
};

static unsigned long finish_seq; /* loop threads, under each call's lock: one loop per test */

/* ---- new and free -------------------------------------------------------------------------- */

static void start_new(rloop_op *op) {
    fop *o = (fop *)op;
    rloop_finish(op, eddy_rfeed_new(rloop_loop(op->l), o->f->store, o->cfg, &o->f->ckpt,
                                    &o->f->feed, o->err));
}

static eddy_status r_new(tstore *st, const eddy_feed_config *cfg, tfeed **out, eddy_error *err) {
    *out = NULL;
    tfeed *f = calloc(1, sizeof(*f));
    cr_assert(f);
    f->l = reactive_store_driver.loop(st);
    f->store = reactive_store_driver.native(st);
    f->ckpt = eddy_rstore_checkpoints(f->store);
    fop o = {.f = f, .cfg = cfg, .err = err};
    eddy_status rc = rloop_call(f->l, &o.op, start_new);
    if (rc != EDDY_OK) {
        cr_assert_null(f->feed);
        free(f);
        return rc;
    }
    *out = f;
    return EDDY_OK;
}

static eddy_status r_new_gated(tstore *st, const eddy_feed_config *cfg, tgate *g, tfeed **out,
                               eddy_error *err) {
    *out = NULL;
    tfeed *f = calloc(1, sizeof(*f));
    cr_assert(f);
    f->l = reactive_store_driver.loop(st);
    f->store = reactive_store_driver.native(st);
    f->ckpt = *(const eddy_rcheckpoints *)reactive_domain_driver.gate_checkpoints(g);
    fop o = {.f = f, .cfg = cfg, .err = err};
    eddy_status rc = rloop_call(f->l, &o.op, start_new);
    if (rc != EDDY_OK) {
        free(f);
        return rc;
    }
    *out = f;
    return EDDY_OK;
}

static void start_free(rloop_op *op) {
    fop *o = (fop *)op;
    eddy_rfeed_free(o->f->feed);
    o->f->feed = NULL;
    rloop_finish(op, EDDY_OK);
}

static void r_free(tfeed *f) {
    if (!f)
        return;
    fop o = {.f = f};
    rloop_call(f->l, &o.op, start_free);
    free(f);
}

/* ---- calls with a completion, waited for --------------------------------------------------- */

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    fop *o = user;
    rloop_callback(&o->op, "feed");
    cr_assert(st == EDDY_OK || err, "%s without detail", eddy_status_name(st));
    cr_assert(st != EDDY_OK || !err, "detail on success");
    if (o->err && err)
        *o->err = *err;
    rloop_finish(&o->op, st);
}

static void start_call(rloop_op *op) {
    fop *o = (fop *)op;
    eddy_rfeed *f = o->f->feed;
    eddy_status st = EDDY_OK;
    switch (o->kind) {
    case FEED_ACCEPT:
    case FEED_OFFER:
        st = eddy_rfeed_accept(f, o->event, on_done, o);
        break;
    case FEED_ACCEPT_META:
        st = eddy_rfeed_accept_meta(f, o->meta, o->event, on_done, o);
        break;
    case FEED_CATCH_UP:
        st = eddy_rfeed_catch_up(f, on_done, o, o->err);
        break;
    case FEED_GO_LIVE:
        st = eddy_rfeed_go_live(f, on_done, o, o->err);
        break;
    }
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status waited(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta, void *event,
                          eddy_error *err) {
    fop o = {.f = f, .kind = kind, .meta = meta, .event = event, .err = err};
    return rloop_call(f->l, &o.op, start_call);
}

static eddy_status r_catch_up(tfeed *f, eddy_error *err) {
    return waited(f, FEED_CATCH_UP, NULL, NULL, err);
}
static eddy_status r_go_live(tfeed *f, eddy_error *err) {
    return waited(f, FEED_GO_LIVE, NULL, NULL, err);
}
static eddy_status r_accept(tfeed *f, void *event, eddy_error *err) {
    return waited(f, FEED_ACCEPT, NULL, event, err);
}
static eddy_status r_accept_meta(tfeed *f, const eddy_event_meta *meta, void *event,
                                 eddy_error *err) {
    return waited(f, FEED_ACCEPT_META, meta, event, err);
}

/* ---- calls without a completion, run on the loop ----------------------------------------- */

enum { K_STOP, K_READY, K_REFUSES, K_FAILURE, K_INFO };

static void start_sync(rloop_op *op) {
    fop *o = (fop *)op;
    eddy_rfeed *f = o->f->feed;
    eddy_status st = EDDY_OK;
    switch (o->sync) {
    case K_STOP:
        eddy_rfeed_stop_catch_up(f);
        break;
    case K_READY:
        o->flag = eddy_rfeed_ready_for_live_delivery(f);
        break;
    case K_REFUSES:
        o->flag = eddy_rfeed_refuses_permanently(f);
        break;
    case K_FAILURE:
        o->flag = eddy_rfeed_failure(f, o->cause);
        break;
    case K_INFO:
        st = eddy_rfeed_stats(f, o->info);
        break;
    }
    rloop_finish(op, st);
}

static eddy_status sync_call(tfeed *f, fop *o, int sync) {
    o->f = f;
    o->sync = sync;
    return rloop_call(f->l, &o->op, start_sync);
}

static void r_stop(tfeed *f) {
    fop o = {0};
    sync_call(f, &o, K_STOP);
}
static bool r_ready(tfeed *f) {
    fop o = {0};
    sync_call(f, &o, K_READY);
    return o.flag;
}
static bool r_refuses(tfeed *f) {
    fop o = {0};
    sync_call(f, &o, K_REFUSES);
    return o.flag;
}
static bool r_failure(tfeed *f, eddy_error *cause) {
    fop o = {.cause = cause};
    sync_call(f, &o, K_FAILURE);
    return o.flag;
}
static eddy_status r_info(tfeed *f, eddy_feed_info *out) {
    fop o = {.info = out};
    return sync_call(f, &o, K_INFO);
}

/* ---- calls in flight ------------------------------------------------------------------------ */

static void on_flight_done(eddy_status st, const eddy_error *err, void *user) {
    tcall *c = user;
    cr_assert_not(c->in_call, "the completion ran inside the call that asked for it");
    cr_assert((st == EDDY_OK) == (err == NULL), "%s: detail %s", eddy_status_name(st),
              err ? "given" : "missing");
    pthread_mutex_lock(&c->m);
    cr_assert_eq(++c->calls, 1, "the completion ran twice");
    c->st = st;
    if (err)
        c->err = *err;
    c->at = ++finish_seq;
    c->done = true;
    pthread_cond_broadcast(&c->c);
    pthread_mutex_unlock(&c->m);
}

static void start_flight(void *arg) {
    tcall *c = arg;
    eddy_rfeed *f = c->f->feed;
    eddy_status st = EDDY_OK;
    c->in_call = true;
    switch (c->kind) {
    case FEED_ACCEPT:
    case FEED_OFFER:
        st = eddy_rfeed_accept(f, c->event, on_flight_done, c);
        break;
    case FEED_ACCEPT_META:
        st = eddy_rfeed_accept_meta(f, c->meta, c->event, on_flight_done, c);
        break;
    case FEED_CATCH_UP:
        st = eddy_rfeed_catch_up(f, on_flight_done, c, &c->err);
        break;
    case FEED_GO_LIVE:
        st = eddy_rfeed_go_live(f, on_flight_done, c, &c->err);
        break;
    }
    c->in_call = false;
    if (st != EDDY_OK) {
        pthread_mutex_lock(&c->m);
        c->st = st;
        c->done = true;
        pthread_cond_broadcast(&c->c);
        pthread_mutex_unlock(&c->m);
    }
}

static tcall *r_start(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta, void *event) {
    tcall *c = calloc(1, sizeof(*c));
    cr_assert(c);
    c->f = f;
    c->kind = kind;
    c->meta = meta;
    c->event = event;
    pthread_mutex_init(&c->m, NULL);
    pthread_cond_init(&c->c, NULL);
    rloop_run(f->l, start_flight, c);
    return c;
}

static bool r_finished(tcall *c) {
    pthread_mutex_lock(&c->m);
    bool done = c->done;
    pthread_mutex_unlock(&c->m);
    return done;
}

static unsigned long r_finished_at(tcall *c) {
    pthread_mutex_lock(&c->m);
    unsigned long at = c->at;
    pthread_mutex_unlock(&c->m);
    return at;
}

static eddy_status r_join(tcall *c, eddy_error *err) {
    pthread_mutex_lock(&c->m);
    while (!c->done)
        pthread_cond_wait(&c->c, &c->m);
    pthread_mutex_unlock(&c->m);
    eddy_status st = c->st;
    if (err)
        *err = c->err;
    pthread_cond_destroy(&c->c);
    pthread_mutex_destroy(&c->m);
    free(c);
    return st;
}

static void r_free_from_projection(tfeed *f) {
    cr_assert(rloop_on_thread(f->l), "free_from_projection off the loop thread");
    eddy_rfeed *feed = f->feed;
    f->feed = NULL;
    eddy_rfeed_free(feed);
}

static tcall *r_start_from_projection(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta,
                                      void *event) {
    cr_assert(rloop_on_thread(f->l), "start_from_projection off the loop thread");
    tcall *c = calloc(1, sizeof(*c));
    cr_assert(c);
    c->f = f;
    c->kind = kind;
    c->meta = meta;
    c->event = event;
    pthread_mutex_init(&c->m, NULL);
    pthread_cond_init(&c->c, NULL);
    start_flight(c); /* here, on the loop */
    return c;
}

static void r_stop_from_projection(tfeed *f) {
    cr_assert(rloop_on_thread(f->l), "stop_from_projection off the loop thread");
    eddy_rfeed_stop_catch_up(f->feed);
}

/* ---- a listener: a reactive bus on the feed's loop ------------------------------------------ */

struct tlisten {
    rloop *l;
    eddy_rbus *bus;
    char name[64];
};

typedef struct lop {
    rloop_op op;
    tlisten *t;
    tfeed *f;
    const eddy_settings *s;
    const char *subject, *group;
    const eddy_event *ev;
    eddy_consumer_stats *stats;
    eddy_error *err;
} lop;

static void lend(lop *o, eddy_status st, const eddy_error *err, const char *what) {
    rloop_callback(&o->op, what);
    if (o->err && err)
        *o->err = *err;
    rloop_finish(&o->op, st);
}

static void on_listener_ready(eddy_status st, const eddy_error *err, void *user) {
    lend(user, st, err, "listener ready");
}

static void start_listen(rloop_op *op) {
    lop *o = (lop *)op;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = o->t->name;
    sp.pattern = o->subject;
    sp.shape = EDDY_COMPETING;
    sp.group = o->group;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = eddy_rfeed_handler;
    sp.user = o->f->feed;
    eddy_settings s = *o->s;
    eddy_test_share_reads(&s);
    eddy_status st = eddy_rbus_new(rloop_loop(op->l), &s, &sp, 1, &o->t->bus, o->err);
    if (st == EDDY_OK && (st = eddy_rbus_start(o->t->bus, on_listener_ready, o, o->err)) == EDDY_OK)
        return;
    eddy_rbus_free(o->t->bus);
    o->t->bus = NULL;
    rloop_finish(op, st);
}

static eddy_status r_listen(tfeed *f, const eddy_settings *s, const char *subject,
                            const char *group, tlisten **out, eddy_error *err) {
    *out = NULL;
    tlisten *t = calloc(1, sizeof(*t));
    cr_assert(t);
    t->l = f->l;
    snprintf(t->name, sizeof(t->name), "%s", group);
    lop o = {.t = t, .f = f, .s = s, .subject = subject, .group = group, .err = err};
    eddy_status rc = rloop_call(f->l, &o.op, start_listen);
    if (rc != EDDY_OK) {
        free(t);
        return rc;
    }
    *out = t;
    return EDDY_OK;
}

static void start_listener_stats(rloop_op *op) {
    lop *o = (lop *)op;
    rloop_finish(op, eddy_rbus_consumer_stats(o->t->bus, o->t->name, o->stats));
}
static eddy_status r_listener_stats(tlisten *t, eddy_consumer_stats *out) {
    lop o = {.t = t, .stats = out};
    return rloop_call(t->l, &o.op, start_listener_stats);
}

static void on_listener_published(eddy_status st, const char *id, void *user) {
    (void)id;
    lend(user, st, NULL, "listener publish");
}
static void start_listener_publish(rloop_op *op) {
    lop *o = (lop *)op;
    eddy_status st =
        eddy_rbus_publish(o->t->bus, o->subject, o->ev, on_listener_published, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}
static eddy_status r_listener_publish(tlisten *t, const char *subject, const eddy_event *ev) {
    lop o = {.t = t, .subject = subject, .ev = ev};
    return rloop_call(t->l, &o.op, start_listener_publish);
}

static void start_listener_stop(rloop_op *op) {
    eddy_rbus_stop(((lop *)op)->t->bus);
    rloop_finish(op, EDDY_OK);
}
static void r_listener_stop(tlisten *t) {
    lop o = {.t = t};
    rloop_call(t->l, &o.op, start_listener_stop);
}
static void start_listener_free(rloop_op *op) {
    lop *o = (lop *)op;
    eddy_rbus_stop(o->t->bus);
    eddy_rbus_free(o->t->bus);
    o->t->bus = NULL;
    rloop_finish(op, EDDY_OK);
}
static void r_listener_free(tlisten *t) {
    if (!t)
        return;
    lop o = {.t = t};
    rloop_call(t->l, &o.op, start_listener_free);
    free(t);
}

typedef struct idarg {
    tfeed *f;
    char *buf;
    size_t size;
} idarg;

static void id_on_loop(void *arg) {
    idarg *a = arg;
    const char *id = eddy_rfeed_id(a->f->feed);
    snprintf(a->buf, a->size, "%s", id ? id : "");
}

static void r_id(tfeed *f, char *buf, size_t size) {
    idarg a = {f, buf, size};
    rloop_run(f->l, id_on_loop, &a);
}

typedef struct shape {
    tfeed *f;
    const eddy_feed_config *cfg;
    int calls;
} shape;

static void count_done(eddy_status st, const eddy_error *err, void *user) {
    (void)st, (void)err;
    ((shape *)user)->calls++;
}

static void shape_on_loop(void *arg) {
    shape *sh = arg;
    tfeed *f = sh->f;
    struct ev_loop *loop = rloop_loop(f->l);
    eddy_rfeed *out = NULL;
    eddy_error err = {0};
    eddy_feed_config c = *sh->cfg;
    eddy_checkpoints blocking_ckpt = {0};
    c.checkpoints = &blocking_ckpt; /* its operations block: refused */
    cr_expect_eq(eddy_rfeed_new(loop, f->store, &c, &f->ckpt, &out, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(out);
    c.checkpoints = NULL;
    cr_expect_neq(eddy_rfeed_new(NULL, f->store, &c, &f->ckpt, &out, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_new(loop, NULL, &c, &f->ckpt, &out, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_new(loop, f->store, NULL, &f->ckpt, &out, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_new(loop, f->store, &c, &f->ckpt, NULL, &err), EDDY_OK);
    int any = 0;
    cr_expect_eq(eddy_rfeed_accept(NULL, &any, count_done, sh), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rfeed_accept(f->feed, NULL, count_done, sh), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rfeed_accept(f->feed, &any, NULL, sh), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_neq(eddy_rfeed_catch_up(NULL, count_done, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_catch_up(f->feed, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_go_live(NULL, count_done, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_go_live(f->feed, NULL, sh, &err), EDDY_OK);
    cr_expect_neq(eddy_rfeed_stats(NULL, NULL), EDDY_OK);
    eddy_rfeed_free(NULL);
}

static void r_shape_refusals(tstore *st, const eddy_feed_config *cfg, tfeed *f) {
    (void)st;
    shape sh = {.f = f, .cfg = cfg};
    rloop_run(f->l, shape_on_loop, &sh);
    eddy_feed_info i;
    cr_expect_eq(r_info(f, &i), EDDY_OK); /* a turn of the loop later */
    cr_expect_eq(sh.calls, 0, "a refused call ran its callback (%d)", sh.calls);
}

const feed_driver reactive_feed_driver = {
    .name = "reactive",
    .reactive = true,
    .new_feed = r_new,
    .new_gated_feed = r_new_gated,
    .free = r_free,
    .catch_up = r_catch_up,
    .go_live = r_go_live,
    .stop_catch_up = r_stop,
    .accept = r_accept,
    .accept_meta = r_accept_meta,
    .start = r_start,
    .finished = r_finished,
    .finished_at = r_finished_at,
    .join = r_join,
    .free_from_projection = r_free_from_projection,
    .start_from_projection = r_start_from_projection,
    .stop_from_projection = r_stop_from_projection,
    .listen = r_listen,
    .listener_stats = r_listener_stats,
    .listener_publish = r_listener_publish,
    .listener_stop = r_listener_stop,
    .listener_free = r_listener_free,
    .id = r_id,
    .shape_refusals = r_shape_refusals,
    .ready_for_live_delivery = r_ready,
    .refuses_permanently = r_refuses,
    .failure = r_failure,
    .get_info = r_info,
};
