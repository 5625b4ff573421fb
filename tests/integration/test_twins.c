/* SPDX-License-Identifier: BSD-3-Clause */
/* The twins that 0.3.0 added so that every operation exists on both front ends
 * (docs/reference.md, "Twins"): eddy_rbus_publish_batch, the blocking store's
 * eddy_store_checkpoint_* and eddy_store_read_stream_page, the reactive store's
 * eddy_rstore_checkpoints, eddy_rfeed_offer. Each is checked against what its twin does, on
 * both backends. The loop runs on the test's own thread. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "eddy/rdomain.h"
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rpush.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"
#include "test_codec.h"

static int backends[] = {0, 1}; /* memory, redis */

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
} tctx;

static void setup_url(tctx *t, const char *url) {
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_namespace(t->ns, sizeof(t->ns), "tw");
    snprintf(t->url, sizeof(t->url), "%s", url);
    eddy_settings_init(&t->s);
    t->s.url = t->url;
    t->s.ns = t->ns;
    t->s.source = "/tests";
    t->s.block_ms = 200;
}

static void setup(tctx *t, int backend) {
    char url[160];
    char ns[96];
    if (backend == 0)
        snprintf(url, sizeof(url), "memory://%s", eddy_test_namespace(ns, sizeof(ns), "mem"));
    else
        snprintf(url, sizeof(url), "%s", eddy_test_redis_url());
    setup_url(t, url);
}

static void teardown(tctx *t) { ev_loop_destroy(t->loop); }

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)w, (void)revents;
}

/* Runs the loop until *counter >= n or timeout_ms passes. */
static bool run_until_count(tctx *t, int *counter, int n, long long timeout_ms) {
    ev_timer tk;
    ev_timer_init(&tk, tick, 0.005, 0.005);
    ev_timer_start(t->loop, &tk);
    long long end = eddy_test_now_ms() + timeout_ms;
    while (*counter < n && eddy_test_now_ms() < end)
        ev_run(t->loop, EVRUN_ONCE);
    ev_timer_stop(t->loop, &tk);
    return *counter >= n;
}

static void run_for(tctx *t, long long ms) {
    int never = 0;
    run_until_count(t, &never, 1, ms);
}

static eddy_rbus *must_rbus(tctx *t) {
    eddy_rbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_rbus_new(t->loop, &t->s, NULL, 0, &b, &err);
    cr_assert_eq(st, EDDY_OK, "eddy_rbus_new: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

/* The ids of a subject's stream entries, in order, joined by ',' into buf. */
static void stream_ids(tctx *t, const char *subject, char *buf, size_t size) {
    buf[0] = '\0';
    redisReply *r = raw_cmdf(t->url, "XRANGE {%s}:s:%s - +", t->ns, subject);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    size_t len = 0;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        for (size_t k = 0; k + 1 < f->elements; k += 2)
            if (strcmp(f->element[k]->str, "id") == 0)
                len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
                                        f->element[k + 1]->str);
    }
    freeReplyObject(r);
}

/* ---- eddy_rbus_publish_batch ------------------------------------------------------------ */

typedef struct batchrec {
    int calls;
    eddy_status st;
    size_t published;
    char detail[EDDY_ERROR_DETAIL_MAX];
} batchrec;

static void on_batch(eddy_status st, size_t published, const eddy_error *err, void *user) {
    batchrec *b = user;
    b->calls++;
    b->st = st;
    b->published = published;
    cr_expect(st == EDDY_OK || err, "no detail with a failure");
    cr_expect(st != EDDY_OK || !err, "detail with a success");
    snprintf(b->detail, sizeof(b->detail), "%s", err ? err->detail : "");
}

typedef struct events {
    eddy_event *ev[64];
    size_t n;
} events;

static void make_events(events *e, const char *const *ids, size_t n) {
    cr_assert(n <= 64);
    e->n = n;
    for (size_t i = 0; i < n; i++)
        e->ev[i] = make_event(ids[i], "t.batch");
}

static void free_events(events *e) {
    for (size_t i = 0; i < e->n; i++)
        eddy_event_free(e->ev[i]);
    e->n = 0;
}

#define EVS(e) ((const eddy_event *const *)(e)->ev)

ParameterizedTestParameters(twins, rbus_publish_batch_publishes_in_order) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rbus_publish_batch_publishes_in_order, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t);
    /* 40 events: far more commands than one publish's (the op's replies grow). */
    char names[40][8];
    const char *ids[40];
    char want[400] = "";
    size_t len = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof(names[i]), "e%d", i);
        ids[i] = names[i];
        len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s", i ? "," : "", names[i]);
    }
    events e;
    make_events(&e, ids, 40);
    batchrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_publish_batch(b, "batch.x", EVS(&e), e.n, on_batch, &r, &err), EDDY_OK,
                 "%s", err.detail);
    free_events(&e); /* copied before the call returned */
    cr_expect_eq(r.calls, 0, "done ran inside the call");
    cr_assert(run_until_count(&t, &r.calls, 1, 20000), "the batch never completed");
    cr_expect_eq(r.st, EDDY_OK, "%s (%s)", eddy_status_name(r.st), r.detail);
    cr_expect_eq(r.published, 40);
    char got[400];
    stream_ids(&t, "batch.x", got, sizeof(got));
    cr_expect_str_eq(got, want);
    /* A second batch after it, and done NULL: stored all the same. */
    const char *more[] = {"m1", "m2"};
    make_events(&e, more, 2);
    cr_assert_eq(eddy_rbus_publish_batch(b, "batch.x", EVS(&e), e.n, NULL, NULL, &err), EDDY_OK);
    free_events(&e);
    long long end = eddy_test_now_ms() + 20000;
    while (raw_int(t.url, "XLEN {%s}:s:batch.x", t.ns) < 42 && eddy_test_now_ms() < end)
        run_for(&t, 10);
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:batch.x", t.ns), 42);
    run_for(&t, 50);
    cr_expect_eq(r.calls, 1, "done ran %d times", r.calls);
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(twins, rbus_publish_batch_refusals_send_nothing) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rbus_publish_batch_refusals_send_nothing, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t);
    batchrec r = {0};
    eddy_error err = {0};
    const char *ids[] = {"a", "b", "c"};
    events e;
    make_events(&e, ids, 3);
    cr_expect_eq(eddy_rbus_publish_batch(NULL, "x", EVS(&e), 3, on_batch, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_publish_batch(b, "x", NULL, 3, on_batch, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_publish_batch(b, "x", EVS(&e), 0, on_batch, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_publish_batch(b, "a..b", EVS(&e), 3, on_batch, &r, &err),
                 EDDY_ERR_INVALID_SUBJECT);
    /* One bad event among good ones: the blocking twin refuses the whole batch the same way. */
    eddy_event *bad = eddy_event_new(); /* no id, source or type */
    eddy_event *mixed[3] = {e.ev[0], bad, e.ev[2]};
    cr_expect_eq(eddy_rbus_publish_batch(b, "refused.x", (const eddy_event *const *)mixed, 3,
                                         on_batch, &r, &err),
                 EDDY_ERR_INVALID_EVENT);
    eddy_bus *bb = NULL;
    cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &bb, &err), EDDY_OK, "%s", err.detail);
    size_t published = 99;
    cr_expect_eq(eddy_bus_publish_batch(bb, "refused.x", (const eddy_event *const *)mixed, 3,
                                        &published, &err),
                 EDDY_ERR_INVALID_EVENT);
    cr_expect_eq(published, 0);
    eddy_bus_free(bb);
    eddy_event_free(bad);
    run_for(&t, 100);
    cr_expect_eq(r.calls, 0, "a refused batch ran its callback");
    cr_expect_eq(raw_int(t.url, "EXISTS {%s}:s:refused.x", t.ns), 0, "something was sent");
    eddy_rbus_free(b);
    free_events(&e);
    teardown(&t);
}

ParameterizedTestParameters(twins, rbus_publish_batch_deduplicates_each_event) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rbus_publish_batch_deduplicates_each_event, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    t.s.publish_dedup_ms = 60000;
    eddy_rbus *b = must_rbus(&t);
    const char *one[] = {"a", "b", "a", "c"};
    const char *two[] = {"c", "d", "b"};
    events e;
    batchrec r = {0};
    eddy_error err = {0};
    make_events(&e, one, 4);
    cr_assert_eq(eddy_rbus_publish_batch(b, "dd.x", EVS(&e), e.n, on_batch, &r, &err), EDDY_OK,
                 "%s", err.detail);
    free_events(&e);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_expect_eq(r.st, EDDY_OK, "%s (%s)", eddy_status_name(r.st), r.detail);
    cr_expect_eq(r.published, 4, "every event counts as published, duplicates included");
    make_events(&e, two, 3);
    cr_assert_eq(eddy_rbus_publish_batch(b, "dd.x", EVS(&e), e.n, on_batch, &r, &err), EDDY_OK);
    free_events(&e);
    cr_assert(run_until_count(&t, &r.calls, 2, 20000));
    cr_expect_eq(r.st, EDDY_OK, "%s (%s)", eddy_status_name(r.st), r.detail);
    cr_expect_eq(r.published, 3);
    char got[64];
    stream_ids(&t, "dd.x", got, sizeof(got));
    cr_expect_str_eq(got, "a,b,c,d");
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(twins, rbus_publish_batch_in_flight_at_free_completes_closed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rbus_publish_batch_in_flight_at_free_completes_closed,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t);
    const char *ids[] = {"a", "b"};
    events e;
    make_events(&e, ids, 2);
    batchrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_publish_batch(b, "fr.x", EVS(&e), e.n, on_batch, &r, &err), EDDY_OK);
    eddy_rbus_free(b); /* before the loop ran: nothing was written */
    cr_expect_eq(r.calls, 1, "free completes what is pending before it returns");
    cr_expect_eq(r.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(r.st));
    cr_expect_eq(r.published, 0);
    free_events(&e);
    teardown(&t);
}

Test(twins, rbus_publish_batch_unreachable_backend_fails_with_io, .timeout = 30) {
    tctx t;
    setup_url(&t, "redis://127.0.0.1:1");
    t.s.connect_timeout_ms = 200;
    t.s.reconnect_min_ms = 10;
    t.s.reconnect_max_ms = 50;
    eddy_rbus *b = must_rbus(&t);
    const char *ids[] = {"a", "b", "c"};
    events e;
    make_events(&e, ids, 3);
    batchrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_publish_batch(b, "down.x", EVS(&e), e.n, on_batch, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 10000));
    cr_expect_eq(r.st, EDDY_ERR_IO, "%s (%s)", eddy_status_name(r.st), r.detail);
    cr_expect_eq(r.published, 0);
    cr_expect(r.detail[0], "no detail");
    eddy_rbus_free(b);
    cr_expect_eq(r.calls, 1);
    free_events(&e);
    teardown(&t);
}

/* ---- the store: checkpoints and stream pages --------------------------------------------- */

static eddy_store *must_store(tctx *t) {
    eddy_store *s = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_store_open(&t->s, &s, &err);
    cr_assert_eq(st, EDDY_OK, "eddy_store_open: %s (%s)", eddy_status_name(st), err.detail);
    return s;
}

static eddy_rstore *must_rstore(tctx *t) {
    eddy_rstore *s = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_rstore_open(t->loop, &t->s, &s, &err);
    cr_assert_eq(st, EDDY_OK, "eddy_rstore_open: %s (%s)", eddy_status_name(st), err.detail);
    return s;
}

typedef struct rck {
    int calls;
    eddy_status st;
    bool flag;
    char value[64];
} rck;

static void on_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    (void)err;
    rck *r = user;
    r->calls++;
    r->st = st;
    r->flag = exists;
}

static void on_read(eddy_status st, const char *value, bool found, const eddy_error *err,
                    void *user) {
    (void)err;
    rck *r = user;
    r->calls++;
    r->st = st;
    r->flag = found;
    snprintf(r->value, sizeof(r->value), "%s", value ? value : "");
}

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    rck *r = user;
    r->calls++;
    r->st = st;
}

ParameterizedTestParameters(twins, store_checkpoint_twins_share_one_storage) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, store_checkpoint_twins_share_one_storage, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_store *bs = must_store(&t);
    eddy_rstore *rs = must_rstore(&t);
    eddy_error err = {0};
    bool b = true;
    char buf[64] = "x";
    /* None yet, on either side. */
    cr_assert_eq(eddy_store_checkpoint_exists(bs, "f1", &b, &err), EDDY_OK, "%s", err.detail);
    cr_expect(!b);
    cr_assert_eq(eddy_store_checkpoint_read(bs, "f1", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect(!b);
    /* Saved by the blocking store, seen by the reactive one, and by the ops struct. */
    cr_assert_eq(eddy_store_checkpoint_save(bs, "f1", "42", &err), EDDY_OK, "%s", err.detail);
    rck r = {0};
    cr_assert_eq(eddy_rstore_checkpoint_read(rs, "f1", on_read, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_expect_eq(r.st, EDDY_OK);
    cr_expect(r.flag);
    cr_expect_str_eq(r.value, "42");
    eddy_checkpoints ops = eddy_store_checkpoints(bs);
    cr_assert_eq(ops.ops->read(ops.self, "f1", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect(b);
    cr_expect_str_eq(buf, "42");
    /* Saved by the reactive store, read by the blocking one. */
    memset(&r, 0, sizeof(r));
    cr_assert_eq(eddy_rstore_checkpoint_save(rs, "f2", "7", on_done, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_expect_eq(r.st, EDDY_OK);
    cr_assert_eq(eddy_store_checkpoint_read(bs, "f2", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect(b);
    cr_expect_str_eq(buf, "7");
    cr_assert_eq(eddy_store_checkpoint_exists(bs, "f2", &b, &err), EDDY_OK);
    cr_expect(b);
    /* Removed by the blocking store (twice: not an error), gone for the reactive one. */
    cr_assert_eq(eddy_store_checkpoint_remove(bs, "f2", &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_checkpoint_remove(bs, "f2", &err), EDDY_OK, "%s", err.detail);
    memset(&r, 0, sizeof(r));
    r.flag = true;
    cr_assert_eq(eddy_rstore_checkpoint_exists(rs, "f2", on_exists, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_expect_eq(r.st, EDDY_OK);
    cr_expect(!r.flag);
    /* The reactive storage struct, now named eddy_rstore_checkpoints, removes it too. */
    eddy_rcheckpoints rops = eddy_rstore_checkpoints(rs);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(rops.ops->remove(rops.self, "f1", on_done, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_assert_eq(eddy_store_checkpoint_exists(bs, "f1", &b, &err), EDDY_OK);
    cr_expect(!b);
    /* Refusals, as the ops' own. */
    cr_expect_eq(eddy_store_checkpoint_exists(NULL, "f1", &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_checkpoint_exists(bs, "f1", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_checkpoint_read(bs, "f1", buf, 0, &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_checkpoint_save(bs, "bad id", "1", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_checkpoint_remove(NULL, "f1", &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_rstore_close(rs);
    eddy_store_close(bs);
    teardown(&t);
}

typedef struct seen {
    int n;
    long long last;
    int stop_at; /* fn returns EDDY_ERR_CANCELLED at this version (0: never) */
} seen;

static eddy_status on_stored(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    seen *s = user;
    if (s->stop_at && meta->version == s->stop_at)
        return EDDY_ERR_CANCELLED;
    s->n++;
    cr_expect_eq(meta->version, s->last + 1, "version %lld after %lld", meta->version, s->last);
    s->last = meta->version;
    return EDDY_OK;
}

typedef struct rpage {
    int calls;
    eddy_status st;
    long long last;
    bool more;
} rpage;

static void on_page(eddy_status st, long long last_version, bool more, const eddy_error *err,
                    void *user) {
    (void)err;
    rpage *p = user;
    p->calls++;
    p->st = st;
    p->last = last_version;
    p->more = more;
}

/* The reactive page's user: what each saw, and what done said. */
typedef struct rboth {
    seen s;
    rpage p;
} rboth;

static eddy_status rb_each(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    return on_stored(ev, meta, &((rboth *)user)->s);
}

static void rb_done(eddy_status st, long long last_version, bool more, const eddy_error *err,
                    void *user) {
    on_page(st, last_version, more, err, &((rboth *)user)->p);
}

ParameterizedTestParameters(twins, store_read_stream_page_pages_as_its_twin) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, store_read_stream_page_pages_as_its_twin, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_store *bs = must_store(&t);
    eddy_rstore *rs = must_rstore(&t);
    eddy_error err = {0};
    /* 300 events: a full page (256) and a part of one. */
    enum { N = 300 };
    for (int i = 0; i < N; i += 50) {
        eddy_event *evs[50];
        char id[32];
        for (int k = 0; k < 50; k++) {
            snprintf(id, sizeof(id), "s%d", i + k);
            evs[k] = make_event(id, "t.stored");
        }
        cr_assert_eq(
            eddy_store_append(bs, "order-1", (const eddy_event *const *)evs, 50, NULL, NULL, &err),
            EDDY_OK, "%s", err.detail);
        for (int k = 0; k < 50; k++)
            eddy_event_free(evs[k]);
    }
    long long after = 0;
    bool more = true;
    int pages = 0;
    seen s = {0};
    while (more && pages < 10) {
        long long last = -1;
        cr_assert_eq(
            eddy_store_read_stream_page(bs, "order-1", after, on_stored, &s, &last, &more, &err),
            EDDY_OK, "%s", err.detail);
        /* The reactive twin says the same of the same page. */
        rboth rb = {.s = {.last = after}};
        cr_assert_eq(
            eddy_rstore_read_stream_page(rs, "order-1", after, rb_each, rb_done, &rb, &err),
            EDDY_OK, "%s", err.detail);
        cr_assert(run_until_count(&t, &rb.p.calls, 1, 20000));
        cr_expect_eq(rb.p.st, EDDY_OK);
        cr_expect_eq(rb.p.last, last);
        cr_expect_eq(rb.p.more, more);
        cr_expect_eq(rb.s.last, last);
        after = last;
        pages++;
    }
    cr_expect_eq(pages, 2);
    cr_expect_eq(s.n, N);
    cr_expect_eq(after, N);
    /* Past the end: an empty page, nothing more. */
    long long last = -1;
    cr_assert_eq(eddy_store_read_stream_page(bs, "order-1", N, on_stored, &s, &last, &more, &err),
                 EDDY_OK);
    cr_expect_eq(last, N);
    cr_expect(!more);
    /* fn stops the page: its status is returned, last_version says where to resume. */
    seen stop = {.last = 10, .stop_at = 20};
    cr_expect_eq(
        eddy_store_read_stream_page(bs, "order-1", 10, on_stored, &stop, &last, &more, &err),
        EDDY_ERR_CANCELLED);
    cr_expect_eq(stop.n, 9);
    cr_expect_eq(last, 19);
    /* Refusals. */
    cr_expect_eq(eddy_store_read_stream_page(NULL, "order-1", 0, on_stored, &s, &last, &more, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_stream_page(bs, "order-1", 0, NULL, &s, &last, &more, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_stream_page(bs, "order-1", 0, on_stored, &s, NULL, &more, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_stream_page(bs, "order-1", 0, on_stored, &s, &last, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_stream_page(bs, "bad id", 0, on_stored, &s, &last, &more, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_rstore_close(rs);
    eddy_store_close(bs);
    teardown(&t);
}

/* ---- eddy_rfeed_offer -------------------------------------------------------------------- */

typedef struct proj {
    int applied;
    int with_meta;
    char last_stream[32];
} proj;

static eddy_status p_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)event, (void)err;
    proj *p = user;
    p->applied++;
    if (meta) {
        p->with_meta++;
        snprintf(p->last_stream, sizeof(p->last_stream), "%s", meta->stream_id);
    }
    return EDDY_OK;
}

static void feed_cfg(eddy_feed_config *cfg, const char *id, proj *p) {
    eddy_feed_config_init(cfg);
    cfg->id = id;
    cfg->projection.apply = p_apply;
    cfg->projection.user = p;
    cfg->decode = uev_decode;
    cfg->free_event = uev_free;
    cfg->event_id = uev_id;
}

typedef struct offered {
    int calls;
    eddy_status st;
} offered;

static void on_offered(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    offered *o = user;
    o->calls++;
    o->st = st;
}

ParameterizedTestParameters(twins, rfeed_offer_as_eddy_feed_offer) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rfeed_offer_as_eddy_feed_offer, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rstore *rs = must_rstore(&t);
    eddy_store *bs = must_store(&t);
    proj rp = {0}, bp = {0};
    eddy_feed_config cfg;
    eddy_error err = {0};
    eddy_rfeed *rf = NULL;
    feed_cfg(&cfg, "offer-r", &rp);
    cr_assert_eq(eddy_rfeed_new(t.loop, rs, &cfg, NULL, &rf, &err), EDDY_OK, "%s", err.detail);
    eddy_feed *bf = NULL;
    feed_cfg(&cfg, "offer-b", &bp);
    cr_assert_eq(eddy_feed_new(bs, &cfg, &bf, &err), EDDY_OK, "%s", err.detail);
    uev e1 = {"e1"}, e2 = {"e2"}, e3 = {"e3"};
    eddy_event_meta meta = {.stream_id = "order-9"}; /* no position: deduplicated by id */
    /* Held before the feed is live, on both: the outcome comes with the go-live. */
    offered ro1 = {0}, bo1 = {0};
    cr_assert_eq(eddy_rfeed_offer(rf, NULL, &e1, on_offered, &ro1), EDDY_OK);
    cr_assert_eq(eddy_feed_offer(bf, NULL, &e1, on_offered, &bo1), EDDY_OK);
    cr_expect_eq(ro1.calls, 0, "done ran inside eddy_rfeed_offer");
    cr_expect_eq(bo1.calls, 0, "a held event was completed before the go-live");
    offered live = {0};
    cr_assert_eq(eddy_rfeed_go_live(rf, on_offered, &live, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_go_live(bf, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(&t, &ro1.calls, 1, 20000));
    cr_expect_eq(ro1.st, EDDY_OK);
    cr_expect_eq(bo1.calls, 1);
    cr_expect_eq(bo1.st, EDDY_OK);
    /* Live, with metadata (copied: changed after the call, the feed still has the first). */
    offered ro2 = {0}, bo2 = {0};
    cr_assert_eq(eddy_rfeed_offer(rf, &meta, &e2, on_offered, &ro2), EDDY_OK);
    cr_assert_eq(eddy_feed_offer(bf, &meta, &e2, on_offered, &bo2), EDDY_OK);
    meta.stream_id = "changed";
    cr_expect_eq(ro2.calls, 0, "done ran inside eddy_rfeed_offer");
    cr_expect_eq(bo2.calls, 1, "a live offer completes on the calling thread");
    cr_assert(run_until_count(&t, &ro2.calls, 1, 20000));
    cr_expect_eq(ro2.st, EDDY_OK);
    cr_expect_eq(rp.with_meta, 1);
    cr_expect_str_eq(rp.last_stream, "order-9");
    cr_expect_str_eq(bp.last_stream, "order-9");
    /* A duplicate of an applied event: EDDY_OK, not applied again, on both. */
    offered ro3 = {0}, bo3 = {0};
    cr_assert_eq(eddy_rfeed_offer(rf, NULL, &e2, on_offered, &ro3), EDDY_OK);
    cr_assert_eq(eddy_feed_offer(bf, NULL, &e2, on_offered, &bo3), EDDY_OK);
    cr_assert(run_until_count(&t, &ro3.calls, 1, 20000));
    cr_expect_eq(ro3.st, EDDY_OK);
    cr_expect_eq(bo3.st, EDDY_OK);
    cr_expect_eq(rp.applied, 2);
    cr_expect_eq(bp.applied, 2);
    eddy_feed_info ri, bi;
    cr_assert_eq(eddy_rfeed_stats(rf, &ri), EDDY_OK);
    cr_assert_eq(eddy_feed_stats(bf, &bi), EDDY_OK);
    cr_expect_eq(ri.applied, bi.applied);
    cr_expect_eq(ri.duplicates, 1);
    cr_expect_eq(bi.duplicates, 1);
    /* Refusals: returned, done not called, on both. */
    offered bad = {0};
    cr_expect_eq(eddy_rfeed_offer(NULL, NULL, &e3, on_offered, &bad), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rfeed_offer(rf, NULL, NULL, on_offered, &bad), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rfeed_offer(rf, NULL, &e3, NULL, &bad), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_offer(bf, NULL, &e3, NULL, &bad), EDDY_ERR_INVALID_ARGUMENT);
    run_for(&t, 50);
    cr_expect_eq(bad.calls, 0);
    cr_expect_eq(rp.applied, 2);
    eddy_rfeed_free(rf);
    eddy_feed_free(bf);
    eddy_rstore_close(rs);
    eddy_store_close(bs);
    teardown(&t);
}

/* ---- one cancellation token on both front ends ------------------------------------------ */

static eddy_status h_silent(eddy_delivery *d, void *user) {
    (void)d;
    (*(int *)user)++;
    return EDDY_OK; /* a plain subscriber: it never answers */
}

typedef struct rreply {
    int calls;
    eddy_status st;
} rreply;

static void on_rreply(eddy_status st, eddy_event *reply, void *user) {
    rreply *r = user;
    r->calls++;
    r->st = st;
    eddy_event_free(reply);
}

typedef struct readyrec {
    int calls;
    eddy_status st;
} readyrec;

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    readyrec *r = user;
    r->calls++;
    r->st = st;
}

ParameterizedTestParameters(twins, cancel_token_ends_reactive_requests) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, cancel_token_ends_reactive_requests, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    int silent = 0;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "silent";
    sp.pattern = "tk.x";
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = h_silent;
    sp.user = &silent;
    eddy_rbus *server = NULL, *b = must_rbus(&t);
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_new(t.loop, &t.s, &sp, 1, &server, &err), EDDY_OK, "%s", err.detail);
    readyrec r1 = {0}, r2 = {0};
    cr_assert_eq(eddy_rbus_start(server, on_ready, &r1, &err), EDDY_OK);
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r2, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r1.calls, 1, 20000) && run_until_count(&t, &r2.calls, 1, 20000));
    cr_assert_eq(r1.st, EDDY_OK);
    cr_assert_eq(r2.st, EDDY_OK);
    /* Two requests on one token, both held by a subscriber that never answers. */
    eddy_cancel *tok = eddy_cancel_new();
    cr_assert(tok);
    eddy_request_opts o = {.deadline_ms = eddy_deadline_in(600000), .cancel = tok};
    rreply a = {0}, c = {0};
    eddy_event *ev1 = make_event("q1", "t.q"), *ev2 = make_event("q2", "t.q");
    cr_assert_eq(eddy_rbus_request(b, "tk.x", ev1, &o, on_rreply, &a, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(eddy_rbus_request(b, "tk.x", ev2, &o, on_rreply, &c, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert(run_until_count(&t, &silent, 2, 20000), "the requests never arrived");
    cr_expect_eq(a.calls + c.calls, 0);
    cr_expect(!eddy_cancel_fired(tok));
    eddy_cancel_fire(tok);
    cr_expect(eddy_cancel_fired(tok));
    cr_expect_eq(a.calls, 1, "the callback runs before eddy_cancel_fire returns");
    cr_expect_eq(c.calls, 1, "the callback runs before eddy_cancel_fire returns");
    cr_expect_eq(a.st, EDDY_ERR_NO_REPLY);
    cr_expect_eq(c.st, EDDY_ERR_NO_REPLY);
    eddy_request_stats s;
    cr_assert_eq(eddy_rbus_request_stats(b, NULL, &s), EDDY_OK);
    cr_expect_eq(s.no_reply, 2);
    /* A fired token refuses a new request up front on both front ends, counting nothing. */
    rreply late = {0};
    cr_expect_eq(eddy_rbus_request(b, "tk.x", ev1, &o, on_rreply, &late, NULL, &err),
                 EDDY_ERR_NO_REPLY);
    eddy_bus *bb = NULL;
    cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &bb, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bb, &err), EDDY_OK, "%s", err.detail);
    eddy_event *reply = NULL;
    cr_expect_eq(eddy_bus_request(bb, "tk.x", ev1, &o, &reply, &err), EDDY_ERR_NO_REPLY);
    cr_expect_null(reply);
    eddy_bus_free(bb);
    run_for(&t, 50);
    cr_expect_eq(late.calls, 0);
    cr_expect_eq(a.calls, 1);
    cr_assert_eq(eddy_rbus_request_stats(b, NULL, &s), EDDY_OK);
    cr_expect_eq(s.sent, 2, "the refused request was not counted");
    eddy_cancel_free(tok);
    /* A request that ended otherwise leaves the token: freeing the bus, then firing, is safe. */
    eddy_cancel *tok2 = eddy_cancel_new();
    o.cancel = tok2;
    rreply d = {0};
    cr_assert_eq(eddy_rbus_request(b, "tk.x", ev2, &o, on_rreply, &d, NULL, &err), EDDY_OK);
    eddy_rbus_free(b);
    cr_expect_eq(d.calls, 1);
    cr_expect_eq(d.st, EDDY_ERR_NO_REPLY);
    eddy_cancel_fire(tok2);
    cr_expect_eq(d.calls, 1);
    eddy_cancel_free(tok2);
    eddy_event_free(ev1);
    eddy_event_free(ev2);
    eddy_rbus_free(server);
    teardown(&t);
}

/* ---- eddy_rstore_read_stream ------------------------------------------------------------- */

typedef struct whole {
    seen s;
    int calls;
    eddy_status st;
    bool in_call;
    bool ran_inside;
    eddy_rstore **close_at; /* close this store from each, at version close_version */
    long long close_version;
} whole;

static eddy_status whole_each(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    whole *w = user;
    if (w->close_at && *w->close_at && meta->version == w->close_version) {
        eddy_rstore *s = *w->close_at;
        *w->close_at = NULL;
        eddy_rstore_close(s); /* from inside a callback: freed once it returns */
    }
    return on_stored(ev, meta, &w->s);
}

static void whole_done(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    whole *w = user;
    w->calls++;
    w->st = st;
    w->ran_inside |= w->in_call;
}

static void append_n(eddy_store *bs, const char *stream, int n) {
    eddy_error err = {0};
    for (int i = 0; i < n; i += 50) {
        eddy_event *evs[50];
        char id[48];
        int k = 0;
        for (; k < 50 && i + k < n; k++) {
            snprintf(id, sizeof(id), "%s-%d", stream, i + k);
            evs[k] = make_event(id, "t.stored");
        }
        cr_assert_eq(eddy_store_append(bs, stream, (const eddy_event *const *)evs, (size_t)k, NULL,
                                       NULL, &err),
                     EDDY_OK, "%s", err.detail);
        for (int j = 0; j < k; j++)
            eddy_event_free(evs[j]);
    }
}

ParameterizedTestParameters(twins, rstore_read_stream_reads_as_its_twin) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, rstore_read_stream_reads_as_its_twin, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_store *bs = must_store(&t);
    eddy_rstore *rs = must_rstore(&t);
    eddy_error err = {0};
    enum { N = 600 }; /* three pages */
    append_n(bs, "order-2", N);
    /* The blocking twin's answer. */
    seen bseen = {.last = 100};
    cr_assert_eq(eddy_store_read_stream(bs, "order-2", 100, on_stored, &bseen, &err), EDDY_OK);
    cr_expect_eq(bseen.n, N - 100);
    whole w = {.s = {.last = 100}};
    w.in_call = true;
    cr_assert_eq(eddy_rstore_read_stream(rs, "order-2", 100, whole_each, whole_done, &w, &err),
                 EDDY_OK, "%s", err.detail);
    w.in_call = false;
    cr_assert(run_until_count(&t, &w.calls, 1, 20000));
    run_for(&t, 50);
    cr_expect_eq(w.calls, 1);
    cr_expect(!w.ran_inside, "done ran inside the call");
    cr_expect_eq(w.st, EDDY_OK, "%s", eddy_status_name(w.st));
    cr_expect_eq(w.s.n, bseen.n);
    cr_expect_eq(w.s.last, N);
    /* each stops it (in the second page): that status, nothing after, as the blocking one. */
    seen bstop = {.stop_at = 400};
    cr_expect_eq(eddy_store_read_stream(bs, "order-2", 0, on_stored, &bstop, &err),
                 EDDY_ERR_CANCELLED);
    whole ws = {.s = {.stop_at = 400}};
    cr_assert_eq(eddy_rstore_read_stream(rs, "order-2", 0, whole_each, whole_done, &ws, &err),
                 EDDY_OK);
    cr_assert(run_until_count(&t, &ws.calls, 1, 20000));
    run_for(&t, 50);
    cr_expect_eq(ws.calls, 1);
    cr_expect_eq(ws.st, EDDY_ERR_CANCELLED);
    cr_expect_eq(ws.s.n, bstop.n);
    cr_expect_eq(ws.s.n, 399);
    /* An empty or missing stream: EDDY_OK, nothing delivered. */
    whole we = {0};
    cr_assert_eq(eddy_rstore_read_stream(rs, "nobody", 0, whole_each, whole_done, &we, &err),
                 EDDY_OK);
    cr_assert(run_until_count(&t, &we.calls, 1, 20000));
    cr_expect_eq(we.st, EDDY_OK);
    cr_expect_eq(we.s.n, 0);
    /* Refusals: returned, done not called. */
    whole bad = {0};
    cr_expect_eq(eddy_rstore_read_stream(NULL, "order-2", 0, whole_each, whole_done, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_read_stream(rs, "order-2", 0, NULL, whole_done, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_read_stream(rs, "order-2", 0, whole_each, NULL, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_read_stream(rs, NULL, 0, whole_each, whole_done, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_read_stream(rs, "bad id", 0, whole_each, whole_done, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    /* Closed from inside each, in the middle: done runs once, EDDY_ERR_CLOSED. */
    whole wc = {.close_at = &rs, .close_version = 300};
    cr_assert_eq(eddy_rstore_read_stream(rs, "order-2", 0, whole_each, whole_done, &wc, &err),
                 EDDY_OK);
    cr_assert(run_until_count(&t, &wc.calls, 1, 20000));
    run_for(&t, 50);
    cr_expect_eq(wc.calls, 1);
    cr_expect_eq(wc.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(wc.st));
    cr_expect_null(rs);
    cr_expect_eq(bad.calls, 0);
    eddy_store_close(bs);
    teardown(&t);
}

/* ---- the 0.2 names still link and do what the new ones do -------------------------------- */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
ParameterizedTestParameters(twins, old_names_are_the_new_calls) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, old_names_are_the_new_calls, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_store *bs = must_store(&t);
    eddy_rstore *rs = must_rstore(&t);
    eddy_error err = {0};
    eddy_feed_cancel *c = eddy_feed_cancel_new();
    cr_assert(c);
    cr_expect(!eddy_feed_cancel_fired(c));
    eddy_feed_cancel_fire(c);
    cr_expect(eddy_feed_cancel_fired(c));
    cr_expect(eddy_cancel_fired(c), "the same token");
    eddy_feed_cancel_free(c);
    append_n(bs, "order-3", 5);
    seen s = {0};
    long long next = 0;
    cr_assert_eq(eddy_store_read_all(bs, 0, 100, NULL, on_stored, &s, &next, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(s.n, 5);
    cr_expect_eq(next, 5);
    rck r = {0};
    cr_assert_eq(eddy_rstore_ckpt_save(rs, "old", "9", on_done, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    eddy_rstore_ckpt_read_fn read_fn = on_read;
    cr_assert_eq(eddy_rstore_ckpt_read(rs, "old", read_fn, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 2, 20000));
    cr_expect_str_eq(r.value, "9");
    cr_assert_eq(eddy_rstore_ckpt_exists(rs, "old", on_exists, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 3, 20000));
    cr_expect(r.flag);
    cr_assert_eq(eddy_rstore_ckpt_remove(rs, "old", on_done, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 4, 20000));
    bool b = true;
    cr_assert_eq(eddy_store_checkpoint_exists(bs, "old", &b, &err), EDDY_OK);
    cr_expect(!b);
    eddy_rcheckpoints o1 = eddy_rfeed_store_checkpoints(rs), o2 = eddy_rstore_checkpoints(rs);
    cr_expect(o1.ops == o2.ops && o1.self == o2.self);
    proj p = {0};
    eddy_feed_config cfg;
    feed_cfg(&cfg, "old-feed", &p);
    eddy_feed *bf = NULL;
    cr_assert_eq(eddy_feed_new(bs, &cfg, &bf, &err), EDDY_OK);
    eddy_rfeed *rf = NULL;
    cr_assert_eq(eddy_rfeed_new(t.loop, rs, &cfg, NULL, &rf, &err), EDDY_OK);
    eddy_feed_info i1, i2;
    cr_expect_eq(eddy_feed_get_info(bf, &i1), EDDY_OK);
    cr_expect_eq(eddy_rfeed_get_info(rf, &i2), EDDY_OK);
    cr_expect_eq(eddy_feed_get_info(NULL, &i1), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_domain_get_info(NULL, &i1), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rdomain_get_info(NULL, &i1), EDDY_ERR_INVALID_ARGUMENT);
    eddy_push_progress pp;
    cr_expect_eq(eddy_push_sources_status(NULL, "x", &pp), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rpush_sources_status(NULL, "x", &pp), EDDY_ERR_INVALID_ARGUMENT);
    eddy_rfeed_free(rf);
    eddy_feed_free(bf);
    eddy_rstore_close(rs);
    eddy_store_close(bs);
    teardown(&t);
}
#pragma GCC diagnostic pop

/* ---- eddy_bus_subscribe_ready ------------------------------------------------------------ */

typedef struct bready {
    int calls;
    eddy_status st;
} bready;

static void on_bready(eddy_status st, const eddy_error *err, void *user) {
    bready *r = user;
    r->calls++;
    r->st = st;
    cr_expect(st == EDDY_OK ? err == NULL : err != NULL, "%s with%s detail", eddy_status_name(st),
              err ? "" : "out");
}

static eddy_status h_count(eddy_delivery *d, void *user) {
    (void)d;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_SEQ_CST);
    return EDDY_OK;
}

static bool count_is(void *user) {
    int *p = user;
    return __atomic_load_n(&p[0], __ATOMIC_SEQ_CST) >= p[1];
}

static eddy_subscription_spec competing(const char *name, const char *pattern, int *n) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = h_count;
    sp.user = n;
    return sp;
}

ParameterizedTestParameters(twins, bus_subscribe_ready_as_its_twin) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, twins, bus_subscribe_ready_as_its_twin, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_error err = {0};
    eddy_bus *b = NULL;
    cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &b, &err), EDDY_OK, "%s", err.detail);
    /* Before start: told by the start, once it is done. */
    int early[2] = {0, 1};
    eddy_subscription_spec sp = competing("early", "sr.early", &early[0]);
    bready r1 = {0};
    cr_assert_eq(eddy_bus_subscribe_ready(b, &sp, on_bready, &r1, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(r1.calls, 0, "ready ran before the start");
    cr_assert_eq(eddy_bus_start(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(r1.calls, 1, "the start told it before it returned");
    cr_expect_eq(r1.st, EDDY_OK);
    /* Started: told before the call returns, with what it returns; then it receives. */
    int late[2] = {0, 1};
    eddy_subscription_spec sp2 = competing("late", "sr.late", &late[0]);
    bready r2 = {0};
    cr_assert_eq(eddy_bus_subscribe_ready(b, &sp2, on_bready, &r2, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(r2.calls, 1);
    cr_expect_eq(r2.st, EDDY_OK);
    eddy_event *ev = make_event("m1", "t.sr"), *ev2 = make_event("m2", "t.sr");
    cr_assert_eq(eddy_bus_publish(b, "sr.late", ev, NULL, 0, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_publish(b, "sr.early", ev2, NULL, 0, &err), EDDY_OK, "%s", err.detail);
    cr_expect(eddy_test_wait_until(count_is, late, 20000), "the late subscription got nothing");
    cr_expect(eddy_test_wait_until(count_is, early, 20000), "the early subscription got nothing");
    /* Refused (a spec without a group, a name taken): returned, ready not called. */
    bready r3 = {0};
    eddy_subscription_spec bad = competing("nogroup", "sr.bad", &late[0]);
    bad.group = NULL;
    cr_expect_eq(eddy_bus_subscribe_ready(b, &bad, on_bready, &r3, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy_bus_subscribe_ready(b, &sp2, on_bready, &r3, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy_bus_subscribe_ready(NULL, &sp2, on_bready, &r3, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(r3.calls, 0);
    /* ready may be NULL. */
    int quiet[2] = {0, 1};
    eddy_subscription_spec sp3 = competing("quiet", "sr.quiet", &quiet[0]);
    cr_expect_eq(eddy_bus_subscribe_ready(b, &sp3, NULL, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(b);
    /* Freed before its start: EDDY_ERR_CLOSED. */
    cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &b, &err), EDDY_OK);
    bready r4 = {0};
    eddy_subscription_spec sp4 = competing("never", "sr.never", &quiet[0]);
    cr_assert_eq(eddy_bus_subscribe_ready(b, &sp4, on_bready, &r4, &err), EDDY_OK);
    eddy_bus_free(b);
    cr_expect_eq(r4.calls, 1);
    cr_expect_eq(r4.st, EDDY_ERR_CLOSED);
    eddy_event_free(ev);
    eddy_event_free(ev2);
    teardown(&t);
}

/* A start that fails tells the waiting readiness callbacks its failure. */
static eddy_test_redis srv;
static void kill_srv(void) { eddy_test_redis_kill(&srv); }

Test(twins, bus_subscribe_ready_told_a_failed_start, .timeout = 60, .fini = kill_srv) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    t.s.connect_timeout_ms = 200;
    t.s.reconnect_min_ms = 10;
    t.s.reconnect_max_ms = 50;
    eddy_error err = {0};
    eddy_bus *b = NULL;
    cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &b, &err), EDDY_OK, "%s", err.detail);
    int n = 0;
    eddy_subscription_spec sp = competing("s", "sf.x", &n);
    bready r = {0};
    cr_assert_eq(eddy_bus_subscribe_ready(b, &sp, on_bready, &r, &err), EDDY_OK, "%s", err.detail);
    eddy_test_redis_kill(&srv);
    eddy_status st = eddy_bus_start(b, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s (%s)", eddy_status_name(st), err.detail);
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r.st, st);
    eddy_bus_free(b);
    cr_expect_eq(r.calls, 1, "told once");
    teardown(&t);
}
