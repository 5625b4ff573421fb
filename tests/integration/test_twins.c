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
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"

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
