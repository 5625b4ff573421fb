/* SPDX-License-Identifier: BSD-3-Clause */
/* Catch-up projection feeds through the blocking front end, on memory:// and on the fixture's
 * redis-server, with the real event store and its checkpoint storage: the cancel handles
 * (eddy_cancel), which only the blocking feed takes (a reactive call ends through stop or free):
 * a cancelled catch-up, waiting for its turn or replaying, is no failure, and a held accept can
 * be cancelled. Nothing here sleeps to let something happen: threads meet on the projection's
 * gate and on the feed's own counters.
 *
 * Every other scenario, the projection's own calls and the offer (the accept that does not wait)
 * among them, is in the one table of tests/integration/test_feed.c (feed_driver.h), run on both
 * front ends and both backends. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "recorder.h" /* make_event */
#include "test_backend.h"
#include "test_codec.h"

typedef struct backend {
    int redis;
} backend;

static backend backends[] = {{0}, {1}};

/* ---- the read model --------------------------------------------------------------------- */

#define MODEL_MAX 8192

typedef struct model {
    pthread_mutex_t m;
    pthread_cond_t c;
    char (*ids)[64];
    int n;
    int started, completed, abandoned;
    /* A gate: the apply of gate_id waits until the gate opens. */
    char gate_id[64];
    bool at_gate, gate_open;
} model;

static void model_init(model *md) {
    memset(md, 0, sizeof(*md));
    pthread_mutex_init(&md->m, NULL);
    pthread_cond_init(&md->c, NULL);
    md->ids = calloc(MODEL_MAX, sizeof(*md->ids));
    cr_assert(md->ids);
}

static void model_destroy(model *md) {
    free(md->ids);
    pthread_cond_destroy(&md->c);
    pthread_mutex_destroy(&md->m);
}

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta, (void)err;
    model *md = user;
    uev *e = event;
    pthread_mutex_lock(&md->m);
    if (md->gate_id[0] && strcmp(e->id, md->gate_id) == 0) {
        md->at_gate = true;
        pthread_cond_broadcast(&md->c);
        while (!md->gate_open)
            pthread_cond_wait(&md->c, &md->m);
    }
    cr_assert(md->n < MODEL_MAX);
    snprintf(md->ids[md->n], sizeof(md->ids[0]), "%s", e->id);
    md->n++;
    pthread_cond_broadcast(&md->c);
    pthread_mutex_unlock(&md->m);
    return EDDY_OK;
}

static eddy_status m_started(eddy_error *err, void *user) {
    (void)err;
    model *md = user;
    pthread_mutex_lock(&md->m);
    md->started++;
    pthread_mutex_unlock(&md->m);
    return EDDY_OK;
}

static eddy_status m_completed(eddy_error *err, void *user) {
    (void)err;
    model *md = user;
    pthread_mutex_lock(&md->m);
    md->completed++;
    pthread_mutex_unlock(&md->m);
    return EDDY_OK;
}

static void m_abandoned(void *user) {
    model *md = user;
    pthread_mutex_lock(&md->m);
    md->abandoned++;
    md->n = 0; /* a view that buffers discards what the replay gave it */
    pthread_mutex_unlock(&md->m);
}

static void wait_at_gate(model *md) {
    pthread_mutex_lock(&md->m);
    while (!md->at_gate)
        pthread_cond_wait(&md->c, &md->m);
    pthread_mutex_unlock(&md->m);
}

static void open_gate(model *md) {
    pthread_mutex_lock(&md->m);
    md->gate_open = true;
    pthread_cond_broadcast(&md->c);
    pthread_mutex_unlock(&md->m);
}

/* The applied ids joined with ','. */
static const char *applied(model *md) {
    static char buf[8192];
    buf[0] = '\0';
    pthread_mutex_lock(&md->m);
    for (int i = 0; i < md->n && strlen(buf) < sizeof(buf) - 80; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, md->ids[i]);
    }
    pthread_mutex_unlock(&md->m);
    return buf;
}

/* ---- context ---------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    eddy_store *store;
    eddy_checkpoints ckpt;
    model md;
    eddy_feed_config cfg;
    eddy_feed *feed;
} ctx;

static void setup(ctx *c, const backend *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    eddy_test_settings(&c->s, p->redis, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    c->s.block_ms = 100;
    c->s.redelivery_idle_ms = 200;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    c->ckpt = eddy_store_checkpoints(c->store);
    model_init(&c->md);
    eddy_feed_config_init(&c->cfg);
    c->cfg.id = "order-status";
    c->cfg.projection.apply = m_apply;
    c->cfg.projection.replay_started = m_started;
    c->cfg.projection.replay_completed = m_completed;
    c->cfg.projection.replay_abandoned = m_abandoned;
    c->cfg.projection.user = &c->md;
    c->cfg.decode = uev_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.checkpoints = &c->ckpt;
    c->cfg.page_size = 3;
    c->cfg.log = eddy_test_log;
    c->cfg.log_user = "feed";
}

static void new_feed(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_new(c->store, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
}

static void teardown(ctx *c) {
    eddy_feed_free(c->feed);
    eddy_store_close(c->store);
    model_destroy(&c->md);
}

static void append(ctx *c, const char *stream, const char *id, const char *subject) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_append(c->store, stream, evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

static void append_n(ctx *c, int n) {
    char id[16];
    for (int i = 1; i <= n; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        append(c, i % 2 ? "order-1" : "order-2", id, NULL);
    }
}

static eddy_feed_info info(ctx *c) {
    eddy_feed_info i;
    cr_assert_eq(eddy_feed_stats(c->feed, &i), EDDY_OK);
    return i;
}

/* ---- a caller on a thread of its own ---------------------------------------------------- */

typedef struct caller {
    pthread_t t;
    eddy_feed *feed;
    int what; /* 0 accept, 1 accept with meta, 2 catch-up, 3 go-live */
    uev ev;
    eddy_event_meta meta;
    eddy_cancel *cancel;
    eddy_status st;
    eddy_error err;
    atomic_bool done;
} caller;

static void *caller_main(void *arg) {
    caller *k = arg;
    switch (k->what) {
    case 0:
        k->st = eddy_feed_accept(k->feed, &k->ev, k->cancel, &k->err);
        break;
    case 1:
        k->st = eddy_feed_accept_meta(k->feed, &k->meta, &k->ev, k->cancel, &k->err);
        break;
    case 2:
        k->st = eddy_feed_catch_up(k->feed, k->cancel, &k->err);
        break;
    default:
        k->st = eddy_feed_go_live(k->feed, k->cancel, &k->err);
        break;
    }
    atomic_store(&k->done, true);
    return NULL;
}

static void call_async(caller *k, eddy_feed *feed, int what, const char *id) {
    memset(k, 0, sizeof(*k));
    k->feed = feed;
    k->what = what;
    snprintf(k->ev.id, sizeof(k->ev.id), "%s", id ? id : "");
    k->meta.stream_id = "order-9";
    k->meta.version = 1;
    cr_assert_eq(pthread_create(&k->t, NULL, caller_main, k), 0);
}

static eddy_status join(caller *k) {
    pthread_join(k->t, NULL);
    return k->st;
}

typedef struct held_cond {
    ctx *c;
    size_t n;
} held_cond;

static bool held_at_least(void *user) {
    held_cond *h = user;
    return info(h->c).held >= h->n;
}

static void wait_held(ctx *c, size_t n) {
    held_cond h = {c, n};
    cr_assert(eddy_test_wait_until(held_at_least, &h, 10000), "%zu events held", n);
}

static bool one_waiting(void *user) { return info(user).waiting >= 1; }

/* ---- blocking failure rules -------------------------------------------------------------- */

/* Blocking front end only: cancel handles (eddy_cancel) exist on the blocking feed alone;
 * a reactive call ends through stop or free. */
ParameterizedTestParameters(feed_blocking, a_cancelled_catch_up_is_not_a_failure) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, feed_blocking, a_cancelled_catch_up_is_not_a_failure, .timeout = 60) {
    ctx c;
    setup(&c, p, "feed-cancel");
    append_n(&c, 5);
    new_feed(&c);
    caller a;
    call_async(&a, c.feed, 0, "x1");
    wait_held(&c, 1);
    eddy_cancel *cancel = eddy_cancel_new();
    cr_assert(cancel);
    strcpy(c.md.gate_id, "e2");
    caller cu;
    call_async(&cu, c.feed, 2, NULL);
    cu.cancel = NULL;
    wait_at_gate(&c.md);
    /* cancel a second catch-up waiting for the first's turn, then the first itself */
    caller cu2;
    memset(&cu2, 0, sizeof(cu2));
    cu2.feed = c.feed;
    cu2.what = 2;
    cu2.cancel = cancel;
    cr_assert_eq(pthread_create(&cu2.t, NULL, caller_main, &cu2), 0);
    cr_assert(eddy_test_wait_until(one_waiting, &c, 10000));
    eddy_cancel_fire(cancel);
    cr_expect_eq(join(&cu2), EDDY_ERR_CANCELLED);
    cr_expect(eddy_cancel_fired(cancel));
    open_gate(&c.md);
    cr_expect_eq(join(&cu), EDDY_OK);
    cr_expect_eq(join(&a), EDDY_OK);
    /* A catch-up cancelled while it replays: its error, no failure, a new feed keeps holding. */
    ctx d;
    setup(&d, p, "feed-cancel2");
    append_n(&d, 5);
    new_feed(&d);
    caller h;
    call_async(&h, d.feed, 0, "x1");
    wait_held(&d, 1);
    strcpy(d.md.gate_id, "e2");
    caller run;
    memset(&run, 0, sizeof(run));
    run.feed = d.feed;
    run.what = 2;
    eddy_cancel *cancel2 = eddy_cancel_new();
    run.cancel = cancel2;
    cr_assert_eq(pthread_create(&run.t, NULL, caller_main, &run), 0);
    wait_at_gate(&d.md);
    eddy_cancel_fire(cancel2);
    open_gate(&d.md);
    cr_expect_eq(join(&run), EDDY_ERR_CANCELLED);
    cr_expect_eq(d.md.abandoned, 1);
    cr_expect_not(eddy_feed_refuses_permanently(d.feed));
    cr_expect_not(atomic_load(&h.done), "still held");
    cr_expect_eq(info(&d).last, EDDY_FEED_CANCELLED);
    cr_expect_eq(eddy_feed_catch_up(d.feed, cancel2, NULL), EDDY_ERR_CANCELLED,
                 "a fired handle ends later calls at once");
    d.md.gate_id[0] = '\0';
    cr_expect_eq(eddy_feed_go_live(d.feed, NULL, NULL), EDDY_OK);
    cr_expect_eq(join(&h), EDDY_OK);
    teardown(&d);
    eddy_cancel_free(cancel);
    eddy_cancel_free(cancel2);
    teardown(&c);
}

/* Blocking front end only: cancel handles (eddy_cancel), as above. */
ParameterizedTestParameters(feed_blocking, a_held_accept_can_be_cancelled) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, feed_blocking, a_held_accept_can_be_cancelled, .timeout = 60) {
    ctx c;
    setup(&c, p, "feed-acc-cancel");
    new_feed(&c);
    eddy_cancel *cancel = eddy_cancel_new();
    caller a;
    call_async(&a, c.feed, 0, "x1");
    caller b;
    memset(&b, 0, sizeof(b));
    b.feed = c.feed;
    b.what = 0;
    b.cancel = cancel;
    strcpy(b.ev.id, "x2");
    cr_assert_eq(pthread_create(&b.t, NULL, caller_main, &b), 0);
    wait_held(&c, 2);
    eddy_cancel_fire(cancel);
    cr_expect_eq(join(&b), EDDY_ERR_CANCELLED);
    cr_expect_eq(info(&c).held, 1);
    cr_expect_eq(eddy_feed_go_live(c.feed, NULL, NULL), EDDY_OK);
    cr_expect_eq(join(&a), EDDY_OK);
    cr_expect_str_eq(applied(&c.md), "x1");
    eddy_cancel_free(cancel);
    teardown(&c);
}
