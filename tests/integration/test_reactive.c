/* SPDX-License-Identifier: BSD-3-Clause */
/* Behaviour only the reactive front end has: callbacks that run exactly once, teardown from
 * inside callbacks, handlers that finish later, many publishes in flight on one loop, stops
 * that do not wait for a blocking read, deliveries that outlive their bus, readiness and its
 * failures, and the connection's life (handshake, a silent or stalled peer, a killed or restarted
 * server). The loop runs on the test's own thread; most tests run on both backends. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy/msgpack.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "memory/util.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

static int backends[] = {0, 1}; /* memory, redis */

/* The private redis-server of a test that kills or restarts it. Killed by the test's .fini as
 * well, so that a failed assertion does not leave it running. */
static eddy_test_redis srv;

static void kill_private_server(void) { eddy_test_redis_kill(&srv); }

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
} tctx;

static void setup_url(tctx *t, const char *url) {
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_namespace(t->ns, sizeof(t->ns), "rx");
    snprintf(t->url, sizeof(t->url), "%s", url);
    eddy_settings_init(&t->s);
    t->s.url = t->url;
    t->s.ns = t->ns;
    t->s.source = "/tests";
    t->s.block_ms = 200;
    t->s.redelivery_idle_ms = 100;
    eddy_test_share_reads(&t->s);
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

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {}

/* Runs the loop until cond(arg) holds or timeout_ms passes; returns cond(arg). */
static bool run_until(tctx *t, bool (*cond)(void *), void *arg, long long timeout_ms) {
    ev_timer tk;
    ev_timer_init(&tk, tick, 0.005, 0.005);
    ev_timer_start(t->loop, &tk);
    long long end = eddy_test_now_ms() + timeout_ms;
    while (!cond(arg) && eddy_test_now_ms() < end)
        ev_run(t->loop, EVRUN_ONCE);
    ev_timer_stop(t->loop, &tk);
    return cond(arg);
}

static bool never(void *arg) { return false; }

static void run_for(tctx *t, long long ms) { run_until(t, never, NULL, ms); }

/* Runs until *counter >= n. */
static bool run_until_count(tctx *t, int *counter, int n, long long timeout_ms) {
    long long end = eddy_test_now_ms() + timeout_ms;
    while (*counter < n && eddy_test_now_ms() < end)
        run_for(t, 5);
    return *counter >= n;
}

static eddy_rbus *must_rbus(tctx *t, const eddy_subscription_spec *specs, size_t n) {
    eddy_rbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_rbus_new(t->loop, &t->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "eddy_rbus_new: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

typedef struct readyrec {
    int calls;
    eddy_status st;
    char detail[EDDY_ERROR_DETAIL_MAX];
} readyrec;

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    readyrec *r = user;
    r->calls++;
    r->st = st;
    snprintf(r->detail, sizeof(r->detail), "%s", err ? err->detail : "");
}

static void must_start(tctx *t, eddy_rbus *b) {
    readyrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(r.calls, 0, "ready ran inside start");
    cr_assert(run_until_count(t, &r.calls, 1, 20000), "not ready");
    cr_assert_eq(r.st, EDDY_OK, "start: %s (%s)", eddy_status_name(r.st), r.detail);
}

typedef struct pubrec {
    int calls;
    eddy_status st;
    char id[64];
    eddy_rbus **free_bus; /* free this bus from inside the callback */
    eddy_status publish_after_free;
} pubrec;

static void on_pub(eddy_status st, const char *id, void *user) {
    pubrec *p = user;
    p->calls++;
    p->st = st;
    cr_expect(st != EDDY_OK || (id && id[0]), "no entry id on success");
    cr_expect(st == EDDY_OK || !id, "an entry id on failure");
    snprintf(p->id, sizeof(p->id), "%s", id ? id : "");
    if (p->free_bus && *p->free_bus) {
        eddy_rbus *b = *p->free_bus;
        *p->free_bus = NULL;
        eddy_rbus_free(b);
        eddy_event *ev = make_event("late", "t.x");
        p->publish_after_free = eddy_rbus_publish(b, "late.x", ev, on_pub, p, NULL);
        eddy_event_free(ev);
    }
}

static void publish(eddy_rbus *b, const char *subject, const char *id, pubrec *rec) {
    eddy_event *ev = make_event(id, "t.x");
    eddy_error err = {0};
    eddy_status st = eddy_rbus_publish(b, subject, ev, rec ? on_pub : NULL, rec, &err);
    cr_assert_eq(st, EDDY_OK, "publish %s: %s (%s)", id, eddy_status_name(st), err.detail);
    eddy_event_free(ev);
}

/* Publishes and waits for the outcome. */
static eddy_status publish_wait(tctx *t, eddy_rbus *b, const char *subject, const char *id) {
    pubrec rec = {0};
    publish(b, subject, id, &rec);
    cr_assert(run_until_count(t, &rec.calls, 1, 20000), "publish %s never completed", id);
    return rec.st;
}

static eddy_subscription_spec spec(const char *name, const char *pattern, eddy_handler_fn fn,
                                   void *user) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = fn;
    sp.user = user;
    return sp;
}

static long long pending_count(tctx *t, const char *subject) {
    redisReply *r = raw_cmdf(t->url, "XPENDING {%s}:s:%s g", t->ns, subject);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    freeReplyObject(r);
    return n;
}

typedef struct pending_wait {
    tctx *t;
    const char *subject;
    long long n;
} pending_wait;

static bool pending_is(void *arg) {
    pending_wait *w = arg;
    return pending_count(w->t, w->subject) == w->n;
}

/* ---- publishing ------------------------------------------------------------------------ */

ParameterizedTestParameters(reactive, publish_callback_runs_exactly_once) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, publish_callback_runs_exactly_once, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    enum { N = 200 };
    static pubrec recs[N];
    memset(recs, 0, sizeof(recs));
    char id[32];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "p%d", i);
        publish(b, "once.x", id, &recs[i]);
        cr_assert_eq(recs[i].calls, 0, "the callback ran inside the publish call");
    }
    /* Refused up front: a status, and no callback. */
    pubrec bad = {0};
    eddy_event *ev = make_event("bad", "t.x");
    eddy_error err = {0};
    cr_expect_eq(eddy_rbus_publish(b, "a..b", ev, on_pub, &bad, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(eddy_rbus_publish(b, "a.b", NULL, on_pub, &bad, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_publish(NULL, "a.b", ev, on_pub, &bad, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_publish_value(b, "a.b", "t", NULL, NULL, on_pub, &bad, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(ev);
    int done = 0;
    long long end = eddy_test_now_ms() + 20000;
    while (done < N && eddy_test_now_ms() < end) {
        run_for(&t, 5);
        done = 0;
        for (int i = 0; i < N; i++)
            done += recs[i].calls > 0;
    }
    run_for(&t, 50); /* a second call would come now */
    for (int i = 0; i < N; i++) {
        cr_expect_eq(recs[i].calls, 1, "publish %d: %d calls", i, recs[i].calls);
        cr_expect_eq(recs[i].st, EDDY_OK, "publish %d: %s", i, eddy_status_name(recs[i].st));
        if (i > 0)
            cr_expect(strcmp(recs[i - 1].id, recs[i].id) != 0, "ids repeat");
    }
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:once.x", t.ns), N);
    eddy_rbus_free(b);
    cr_expect_eq(bad.calls, 0);
    teardown(&t);
}

ParameterizedTestParameters(reactive, free_completes_publishes_in_flight_with_closed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, free_completes_publishes_in_flight_with_closed,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    enum { N = 1000 };
    static pubrec recs[N];
    /* Freed before the loop ran: every publish completes, with EDDY_ERR_CLOSED, inside free. */
    memset(recs, 0, sizeof(recs));
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    char id[32];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "c%d", i);
        publish(b, "closed.x", id, &recs[i]);
    }
    eddy_rbus_free(b);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(recs[i].calls, 1, "publish %d: %d calls", i, recs[i].calls);
        cr_expect_eq(recs[i].st, EDDY_ERR_CLOSED);
    }
    run_for(&t, 50);
    for (int i = 0; i < N; i++)
        cr_assert_eq(recs[i].calls, 1, "publish %d: a late call", i);
    /* Freed once some completed: the others complete with EDDY_ERR_CLOSED, all exactly once. */
    memset(recs, 0, sizeof(recs));
    b = must_rbus(&t, NULL, 0);
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "d%d", i);
        publish(b, "closed.y", id, &recs[i]);
    }
    cr_assert(run_until_count(&t, &recs[0].calls, 1, 20000));
    eddy_rbus_free(b);
    int ok = 0, closed = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(recs[i].calls, 1, "publish %d: %d calls", i, recs[i].calls);
        ok += recs[i].st == EDDY_OK;
        closed += recs[i].st == EDDY_ERR_CLOSED;
    }
    cr_expect_eq(ok + closed, N);
    cr_expect(ok >= 1);
    run_for(&t, 50);
    for (int i = 0; i < N; i++)
        cr_assert_eq(recs[i].calls, 1, "publish %d: a late call", i);
    teardown(&t);
}

ParameterizedTestParameters(reactive, free_inside_a_publish_callback) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, free_inside_a_publish_callback, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    enum { N = 100 };
    static pubrec recs[N];
    memset(recs, 0, sizeof(recs));
    eddy_rbus *handle = b;
    char id[32];
    for (int i = 0; i < N; i++) {
        recs[i].free_bus = &handle; /* whichever completes first frees the bus */
        snprintf(id, sizeof(id), "f%d", i);
        publish(b, "fipc.x", id, &recs[i]);
    }
    long long end = eddy_test_now_ms() + 20000;
    while (handle && eddy_test_now_ms() < end)
        run_for(&t, 5);
    cr_assert_null(handle, "no publish completed");
    run_for(&t, 50);
    int freer = 0;
    for (int i = 0; i < N; i++) {
        cr_expect_eq(recs[i].calls, 1, "publish %d: %d calls", i, recs[i].calls);
        if (recs[i].publish_after_free) {
            freer++;
            cr_expect_eq(recs[i].publish_after_free, EDDY_ERR_CLOSED,
                         "a publish on a bus being freed");
        }
    }
    cr_expect_eq(freer, 1);
    teardown(&t);
}

typedef struct many {
    eddy_rbus *bus;
    const char *subject;
    bool counted;
    int ok, failed;
} many;

static void count_pub(eddy_status st, const char *id, void *user) {
    many *m = user;
    if (st == EDDY_OK)
        m->ok++;
    else
        m->failed++;
}

/* From inside a loop callback: 10,000 publishes before any can complete. */
static void publish_many(struct ev_loop *loop, ev_timer *w, int revents) {
    many *m = w->data;
    eddy_event *ev = make_event("many", "t.many");
    for (int i = 0; i < 10000; i++) {
        eddy_error err = {0};
        eddy_status st =
            eddy_rbus_publish(m->bus, m->subject, ev, m->counted ? count_pub : NULL, m, &err);
        cr_assert_eq(st, EDDY_OK, "%s", err.detail);
    }
    eddy_event_free(ev);
}

ParameterizedTestParameters(reactive, ten_thousand_publishes_in_flight) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, ten_thousand_publishes_in_flight, .timeout = 120) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    many m = {b, "many.y", true, 0, 0};
    ev_timer kick;
    ev_timer_init(&kick, publish_many, 0., 0.);
    kick.data = &m;
    ev_timer_start(t.loop, &kick);
    long long end = eddy_test_now_ms() + 60000;
    while (m.ok + m.failed < 10000 && eddy_test_now_ms() < end)
        run_for(&t, 5);
    cr_assert_eq(m.ok, 10000, "%d ok, %d failed", m.ok, m.failed);
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:many.y", t.ns), 10000);
    /* Without callbacks too (done may be NULL). */
    many m2 = {b, "many.x", false, 0, 0};
    ev_timer_init(&kick, publish_many, 0., 0.);
    kick.data = &m2;
    ev_timer_start(t.loop, &kick);
    end = eddy_test_now_ms() + 60000;
    while (raw_int(t.url, "XLEN {%s}:s:many.x", t.ns) < 10000 && eddy_test_now_ms() < end)
        run_for(&t, 20);
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:many.x", t.ns), 10000);
    eddy_rbus_free(b);
    teardown(&t);
}

/* ---- handlers ------------------------------------------------------------------------------ */

typedef struct hctx {
    int calls;
    eddy_rbus *bus;
    bool free_bus, stop_bus;
    eddy_status subscribe_after_free;
    eddy_delivery *held[16];
    int nheld;
    unsigned attempts[16];
    int finished_ok, finished_failed;
} hctx;

static eddy_status h_free(eddy_delivery *d, void *user) {
    hctx *h = user;
    h->calls++;
    if (h->free_bus && h->bus) {
        eddy_rbus *b = h->bus;
        h->bus = NULL;
        eddy_rbus_free(b);
        eddy_rbus_free(b); /* a second free while the first is deferred is a no-op */
        eddy_subscription_spec sp = spec("more", "more.x", h_free, h);
        h->subscribe_after_free = eddy_rbus_subscribe(b, &sp, NULL);
        eddy_rbus_stop(b); /* ignored */
    }
    if (h->stop_bus && h->bus)
        eddy_rbus_stop(h->bus);
    return EDDY_OK;
}

ParameterizedTestParameters(reactive, free_inside_a_handler) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, free_inside_a_handler, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    hctx h = {0};
    h.free_bus = true;
    eddy_subscription_spec sp = spec("s", "fih.x", h_free, &h);
    h.bus = must_rbus(&t, &sp, 1);
    must_start(&t, h.bus);
    static pubrec recs[5];
    memset(recs, 0, sizeof(recs));
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        publish(h.bus, "fih.x", id, &recs[i]);
    }
    cr_assert(run_until_count(&t, &h.calls, 1, 20000), "no delivery");
    cr_assert_null(h.bus);
    run_for(&t, 300);
    cr_expect_eq(h.calls, 1, "a handler ran after free: %d calls", h.calls);
    cr_expect_eq(h.subscribe_after_free, EDDY_ERR_CLOSED);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(recs[i].calls, 1, "publish %d: %d calls", i, recs[i].calls);
    teardown(&t);
}

ParameterizedTestParameters(reactive, stop_inside_a_handler_ends_the_batch) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, stop_inside_a_handler_ends_the_batch, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    hctx h = {0};
    h.stop_bus = true;
    eddy_subscription_spec sp = spec("s", "sih.x", h_free, &h);
    h.bus = must_rbus(&t, &sp, 1);
    eddy_rbus *pub = must_rbus(&t, NULL, 0);
    must_start(&t, h.bus);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(publish_wait(&t, pub, "sih.x", i == 0 ? "a" : i == 1 ? "b" : "c"), EDDY_OK);
    cr_assert(run_until_count(&t, &h.calls, 1, 20000));
    run_for(&t, 300);
    cr_expect_eq(h.calls, 1, "a handler ran after stop: %d calls", h.calls);
    /* The handler's own acknowledgement was not lost; the rest stay pending or unread. */
    eddy_consumer_stats st;
    cr_assert_eq(eddy_rbus_consumer_stats(h.bus, "s", &st), EDDY_OK);
    cr_expect_eq(st.handled, 1);
    redisReply *r = raw_cmdf(t.url, "XPENDING {%s}:s:sih.x g - + 10", t.ns);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++)
        cr_expect(r->element[i]->element[3]->integer == 1, "redelivered while stopped");
    freeReplyObject(r);
    eddy_rbus_free(h.bus);
    eddy_rbus_free(pub);
    teardown(&t);
}

static eddy_status h_hold(eddy_delivery *d, void *user) {
    hctx *h = user;
    h->calls++;
    cr_assert(h->nheld < 16);
    h->attempts[h->nheld] = eddy_delivery_attempt(d);
    h->held[h->nheld++] = d;
    return EDDY_PENDING;
}

/* Finishes every held delivery: "bad" fails on its first attempt, everything else succeeds. */
static void finish_held(struct ev_loop *loop, ev_timer *w, int revents) {
    hctx *h = w->data;
    for (int i = 0; i < h->nheld; i++) {
        eddy_delivery *d = h->held[i];
        bool fail = strcmp(eddy_event_id(eddy_delivery_event(d)), "bad") == 0 &&
                    eddy_delivery_attempt(d) == 1;
        if (fail)
            h->finished_failed++;
        else
            h->finished_ok++;
        eddy_delivery_finish(d, fail ? EDDY_ERR_HANDLER_FAILED : EDDY_OK);
    }
    h->nheld = 0;
}

ParameterizedTestParameters(reactive, pending_handler_finished_from_a_timer) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, pending_handler_finished_from_a_timer, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    hctx h = {0};
    eddy_subscription_spec sp = spec("s", "later.x", h_hold, &h);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    ev_timer fin;
    ev_timer_init(&fin, finish_held, 0.03, 0.03);
    fin.data = &h;
    ev_timer_start(t.loop, &fin);
    cr_assert_eq(publish_wait(&t, b, "later.x", "good"), EDDY_OK);
    cr_assert_eq(publish_wait(&t, b, "later.x", "bad"), EDDY_OK);
    /* good once, bad failed once and then handled: three finishes. */
    long long end = eddy_test_now_ms() + 20000;
    while (h.finished_ok + h.finished_failed < 3 && eddy_test_now_ms() < end)
        run_for(&t, 5);
    cr_assert_eq(h.finished_ok, 2);
    cr_assert_eq(h.finished_failed, 1);
    pending_wait w = {&t, "later.x", 0};
    cr_assert(run_until(&t, pending_is, &w, 20000), "acknowledgements missing: %lld pending",
              pending_count(&t, "later.x"));
    ev_timer_stop(t.loop, &fin);
    eddy_consumer_stats st;
    cr_assert_eq(eddy_rbus_consumer_stats(b, "s", &st), EDDY_OK);
    cr_expect_eq(st.delivered, 3);
    cr_expect_eq(st.handled, 2);
    cr_expect_eq(st.failed, 1);
    cr_expect_eq(st.redelivered, 1);
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(reactive, pending_delivery_finished_after_stop_is_acknowledged) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, pending_delivery_finished_after_stop_is_acknowledged,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    hctx h = {0};
    eddy_subscription_spec sp = spec("s", "after.x", h_hold, &h);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    eddy_rbus *pub = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, pub, "after.x", "one"), EDDY_OK);
    eddy_rbus_free(pub);
    cr_assert(run_until_count(&t, &h.calls, 1, 20000));
    eddy_rbus_stop(b);
    cr_expect_eq(pending_count(&t, "after.x"), 1);
    ev_timer fin;
    ev_timer_init(&fin, finish_held, 0.05, 0.);
    fin.data = &h;
    ev_timer_start(t.loop, &fin);
    /* The loop ends once the stopped reader has sent the acknowledgement and closed. */
    long long t0 = eddy_test_now_ms();
    ev_run(t.loop, 0);
    cr_expect_lt(eddy_test_now_ms() - t0, 5000);
    cr_expect_eq(h.finished_ok, 1);
    cr_expect_eq(pending_count(&t, "after.x"), 0, "the acknowledgement was lost");
    cr_expect_eq(h.calls, 1);
    /* Start again: nothing comes back. */
    must_start(&t, b);
    run_for(&t, 300);
    cr_expect_eq(h.calls, 1);
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(reactive, delivery_outlives_a_freed_bus) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, delivery_outlives_a_freed_bus, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    t.s.instance = "outlive";
    hctx h = {0};
    eddy_subscription_spec sp = spec("s", "orph.x", h_hold, &h);
    eddy_rbus *keep = must_rbus(&t, NULL, 0); /* keeps memory:// alive */
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, keep, "orph.x", "held"), EDDY_OK);
    cr_assert(run_until_count(&t, &h.calls, 1, 20000));
    eddy_delivery *d = h.held[0];
    eddy_rbus_free(b); /* does not wait for the pending delivery */
    cr_expect_str_eq(eddy_delivery_subject(d), "orph.x");
    cr_expect_str_eq(eddy_delivery_subscription(d), "s");
    cr_expect_str_eq(eddy_event_id(eddy_delivery_event(d)), "held");
    eddy_delivery_finish(d, EDDY_OK); /* allowed: only releases it */
    run_for(&t, 100);
    cr_expect_eq(pending_count(&t, "orph.x"), 1, "abandoned, not acknowledged");
    /* It comes back to the same instance at once. */
    h.nheld = 0;
    b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    cr_assert(run_until_count(&t, &h.calls, 2, 20000), "not redelivered");
    cr_expect_eq(h.attempts[0], 2);
    finish_held(t.loop, &(ev_timer){.data = &h}, 0);
    pending_wait w = {&t, "orph.x", 0};
    cr_expect(run_until(&t, pending_is, &w, 20000));
    eddy_rbus_free(b);
    eddy_rbus_free(keep);
    teardown(&t);
}

/* ---- stopping ----------------------------------------------------------------------------- */

ParameterizedTestParameters(reactive, stop_during_a_blocking_read_returns_at_once) {
    return cr_make_param_array(int, backends, 2);
}
/* The timeout is far below block_ms: a stop that waited for the read would fail the test. */
ParameterizedTest(int *backend, reactive, stop_during_a_blocking_read_returns_at_once,
                  .timeout = 30) {
    tctx t;
    setup(&t, *backend);
    t.s.block_ms = 120000;
    t.s.redelivery_idle_ms = 600000;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "quiet.x", rec_handler, &r);
    eddy_rbus *keep = NULL;
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    for (int i = 0; i < 3; i++) {
        must_start(&t, b);
        keep = must_rbus(&t, NULL, 0);
        cr_assert_eq(publish_wait(&t, keep, "quiet.x", i == 0 ? "a" : i == 1 ? "b" : "c"), EDDY_OK);
        eddy_rbus_free(keep);
        cr_assert(run_until_count(&t, &r.n, i + 1, 20000));
        run_for(&t, 50); /* the reader is back in its blocking read */
        long long t0 = eddy_test_now_ms();
        eddy_rbus_stop(b);
        ev_run(t.loop, 0); /* returns once nothing is left to watch: the read is gone */
        cr_expect_lt(eddy_test_now_ms() - t0, 2000, "stop waited for the blocking read");
        cr_expect_eq(pending_count(&t, "quiet.x"), 0, "an acknowledgement was lost");
    }
    cr_expect_eq(rec_count(&r), 3);
    eddy_rbus_stop(b); /* not started: no-op */
    eddy_rbus_free(b);
    rec_destroy(&r);
    teardown(&t);
}

/* ---- readiness and connections ------------------------------------------------------------ */

static eddy_status h_ok(eddy_delivery *d, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

Test(reactive, unreachable_backend_fails_start_and_publish, .timeout = 30) {
    tctx t;
    setup_url(&t, "redis://127.0.0.1:1");
    t.s.connect_timeout_ms = 200;
    t.s.reconnect_min_ms = 10;
    t.s.reconnect_max_ms = 50;
    int n = 0;
    eddy_subscription_spec sp = spec("s", "down.x", h_ok, &n);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    readyrec r = {0};
    eddy_error err = {0};
    long long t0 = eddy_test_now_ms();
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 10000));
    cr_expect_eq(r.st, EDDY_ERR_IO);
    cr_expect(strstr(r.detail, "'s'"), "detail names the subscription: %s", r.detail);
    cr_expect_geq(eddy_test_now_ms() - t0, 450);
    run_for(&t, 100);
    cr_expect_eq(r.calls, 1);
    /* The failed start left the bus stopped: start again, and stop before it is ready. */
    memset(&r, 0, sizeof(r));
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_rbus_start(b, on_ready, &r, &err), EDDY_ERR_ILLEGAL_STATE);
    run_for(&t, 20);
    eddy_rbus_stop(b);
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r.st, EDDY_ERR_CLOSED);
    /* And freed before it is ready. */
    memset(&r, 0, sizeof(r));
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, &err), EDDY_OK);
    pubrec p = {0};
    publish(b, "down.x", "never", &p);
    cr_assert(run_until_count(&t, &p.calls, 1, 5000));
    cr_expect_eq(p.st, EDDY_ERR_IO);
    eddy_rbus_free(b);
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r.st, EDDY_ERR_CLOSED);
    cr_expect_eq(n, 0);
    teardown(&t);
}

typedef struct counter {
    int ok, failed;
} counter;

static void count_pub_c(eddy_status st, const char *id, void *user) {
    counter *c = user;
    if (st == EDDY_OK)
        c->ok++;
    else
        c->failed++;
}

/* A server that accepts connections and never answers. */
static int silent_server(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(fd, 16), 0);
    socklen_t len = sizeof(a);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

Test(reactive, a_silent_server_times_out, .timeout = 30) {
    int port;
    int fd = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    tctx t;
    setup_url(&t, url);
    t.s.connect_timeout_ms = 100;
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    /* The handshake is part of the connect and its deadline: the publish, queued behind it,
     * was never sent. */
    pubrec p = {0};
    publish(b, "silent.x", "x", &p);
    cr_assert(run_until_count(&t, &p.calls, 1, 10000));
    cr_expect_eq(p.st, EDDY_ERR_IO);
    eddy_rbus_free(b);
    close(fd);
    teardown(&t);
}

/* A unix socket server on a thread of its own that closes every connection as soon as it
 * is accepted: writes to such a connection fail with EPIPE, the error that raises SIGPIPE. */
typedef struct closer {
    int fd;
    char path[108];
    pthread_t thread;
} closer;

static void *close_all(void *arg) {
    closer *c = arg;
    for (;;) {
        int fd = accept(c->fd, NULL, NULL);
        if (fd < 0)
            return NULL; /* the listening socket was shut down */
        close(fd);
    }
}

static void closer_start(closer *c) {
    c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert(c->fd >= 0);
    struct sockaddr_un a = {0};
    a.sun_family = AF_UNIX;
    snprintf(c->path, sizeof(c->path), "/tmp/eddy-closer-%ld.sock", (long)getpid());
    unlink(c->path);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", c->path);
    cr_assert_eq(bind(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(c->fd, 64), 0);
    cr_assert_eq(pthread_create(&c->thread, NULL, close_all, c), 0);
}

static void closer_stop(closer *c) {
    shutdown(c->fd, SHUT_RDWR);
    pthread_join(c->thread, NULL);
    close(c->fd);
    unlink(c->path);
}

Test(reactive, writing_to_a_dead_peer_does_not_raise_sigpipe, .timeout = 60) {
    signal(SIGPIPE, SIG_DFL); /* the default action would kill this test process */
    closer peer;
    closer_start(&peer);
    char url[160];
    snprintf(url, sizeof(url), "unix://%s", peer.path);
    tctx t;
    setup_url(&t, url);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    static char data[8192];
    memset(data, 'x', sizeof(data));
    eddy_event *ev = make_event("big", "t.x");
    cr_assert_eq(eddy_event_set_data(ev, data, sizeof(data)), EDDY_OK);
    /* Each round, a new connection and a 1.6 MB pipeline: more than one write() call. */
    for (int round = 0; round < 10; round++) {
        counter c = {0, 0};
        for (int i = 0; i < 200; i++)
            cr_assert_eq(eddy_rbus_publish(b, "big.x", ev, count_pub_c, &c, NULL), EDDY_OK);
        long long end = eddy_test_now_ms() + 10000;
        while (c.ok + c.failed < 200 && eddy_test_now_ms() < end)
            run_for(&t, 1);
        cr_assert_eq(c.failed, 200, "round %d: %d failed, %d ok", round, c.failed, c.ok);
    }
    eddy_event_free(ev);
    eddy_rbus_free(b);
    closer_stop(&peer);
    teardown(&t);
}

Test(reactive, handshake_with_password_and_db, .timeout = 60, .fini = kill_private_server) {
    const char *extra[] = {"--requirepass", "s3cret", NULL};
    eddy_test_redis_start_with(&srv, 0, extra);
    char url[128];
    snprintf(url, sizeof(url), "redis://:s3cret@127.0.0.1:%d/5", srv.port);
    tctx t;
    setup_url(&t, url);
    int n = 0;
    eddy_subscription_spec sp = spec("s", "auth.x", h_ok, &n);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, b, "auth.x", "in-db-5"), EDDY_OK);
    cr_assert(run_until_count(&t, &n, 1, 20000));
    redisContext *rc = redisConnect("127.0.0.1", srv.port);
    cr_assert(rc && !rc->err);
    freeReplyObject(redisCommand(rc, "AUTH s3cret"));
    freeReplyObject(redisCommand(rc, "SELECT 5"));
    redisReply *len = redisCommand(rc, "XLEN {%s}:s:auth.x", t.ns);
    cr_expect_eq(len->integer, 1, "the entry is in db 5");
    freeReplyObject(len);
    redisFree(rc);
    eddy_rbus_free(b);
    /* A wrong password: publishing and starting fail (EDDY_ERR_AUTH), with the server's word in
     * the detail. */
    snprintf(t.url, sizeof(t.url), "redis://:wrong@127.0.0.1:%d", srv.port);
    t.s.connect_timeout_ms = 200;
    t.s.reconnect_max_ms = 50;
    b = must_rbus(&t, &sp, 1);
    pubrec p = {0};
    publish(b, "auth.x", "refused", &p);
    cr_assert(run_until_count(&t, &p.calls, 1, 10000));
    cr_expect_eq(p.st, EDDY_ERR_AUTH);
    readyrec r = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, NULL), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 10000));
    cr_expect_eq(r.st, EDDY_ERR_AUTH, "refused credentials fail the start at once");
    cr_expect(strstr(r.detail, "handshake"), "%s", r.detail);
    cr_expect_null(strstr(r.detail, "wrong"), "the password leaked: %s", r.detail);
    eddy_rbus_free(b);
    eddy_test_redis_kill(&srv);
    teardown(&t);
}

static long long kill_clients(int port) {
    redisContext *rc = redisConnect("127.0.0.1", port);
    cr_assert(rc && !rc->err);
    redisReply *r = redisCommand(rc, "CLIENT KILL TYPE normal SKIPME yes");
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    redisFree(rc);
    return n;
}

static eddy_status publish_retrying(tctx *t, eddy_rbus *b, const char *subject, const char *id) {
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 50 && st == EDDY_ERR_IO; i++) {
        st = publish_wait(t, b, subject, id);
        if (st == EDDY_ERR_IO)
            run_for(t, 100);
    }
    return st;
}

Test(reactive, reconnects_after_a_kill_and_a_restart, .timeout = 90, .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    t.s.reconnect_min_ms = 20;
    t.s.reconnect_max_ms = 200;
    t.s.connect_timeout_ms = 500;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "re.x", rec_handler, &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    eddy_rbus *pub = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, pub, "re.x", "before"), EDDY_OK);
    cr_assert(run_until_count(&t, &r.n, 1, 20000));
    run_for(&t, 50); /* in the blocking read again */
    cr_assert_geq(kill_clients(srv.port), 2);
    cr_assert_eq(publish_retrying(&t, pub, "re.x", "after-kill"), EDDY_OK);
    cr_assert(run_until_count(&t, &r.n, 2, 20000), "nothing after the connection was killed");
    /* A restart loses everything (no persistence): groups are made again. */
    eddy_test_redis_kill(&srv);
    run_for(&t, 100);
    eddy_test_redis_start(&srv, srv.port);
    cr_assert_eq(publish_retrying(&t, pub, "re.x", "after-restart"), EDDY_OK);
    cr_assert(run_until_count(&t, &r.n, 3, 20000), "nothing after the restart");
    run_for(&t, 300);
    cr_expect_eq(rec_count(&r), 3);
    cr_expect_eq(rec_seen(&r, "before"), 1);
    cr_expect_eq(rec_seen(&r, "after-kill"), 1);
    cr_expect_eq(rec_seen(&r, "after-restart"), 1);
    eddy_rbus_free(b);
    eddy_rbus_free(pub);
    eddy_test_redis_kill(&srv);
    rec_destroy(&r);
    teardown(&t);
}

Test(reactive, connection_lost_while_a_handler_is_pending, .timeout = 60,
     .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    t.s.reconnect_min_ms = 20;
    t.s.reconnect_max_ms = 200;
    hctx h = {0};
    eddy_subscription_spec sp = spec("s", "lost.x", h_hold, &h);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    eddy_rbus *pub = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, pub, "lost.x", "held"), EDDY_OK);
    cr_assert(run_until_count(&t, &h.calls, 1, 20000));
    cr_assert_geq(kill_clients(srv.port), 1);
    run_for(&t, 200); /* the loss is seen; nothing is read again while "held" is out */
    cr_expect_eq(h.calls, 1);
    ev_timer fin;
    ev_timer_init(&fin, finish_held, 0., 0.);
    fin.data = &h;
    ev_timer_start(t.loop, &fin);
    pending_wait w = {&t, "lost.x", 0};
    cr_assert(run_until(&t, pending_is, &w, 20000), "the acknowledgement was lost");
    cr_expect_eq(h.calls, 1, "redelivered although it was acknowledged");
    cr_assert_eq(publish_retrying(&t, pub, "lost.x", "next"), EDDY_OK);
    cr_assert(run_until_count(&t, &h.calls, 2, 20000), "the reader did not come back");
    finish_held(t.loop, &fin, 0);
    eddy_rbus_free(b);
    eddy_rbus_free(pub);
    eddy_test_redis_kill(&srv);
    teardown(&t);
}

/* The memory engine fails its n-th allocation from now on, once, for n = 1, 2, ...: whatever
 * connection it hits fails cleanly (a publish completes once with EDDY_ERR_NOMEM, or is
 * refused up front; a reader reconnects), and everything published is delivered. */
Test(reactive, memory_engine_out_of_memory, .timeout = 120) {
    tctx t;
    setup(&t, 0);
    t.s.reconnect_min_ms = 1;
    t.s.reconnect_max_ms = 5;
    t.s.block_ms = 50;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "oom.x", rec_handler, &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    char ids[80][16];
    int stored = 0, nomem = 0, refused = 0;
    for (long n = 1; n <= 80; n++) {
        snprintf(ids[n - 1], sizeof(ids[n - 1]), "m%ld", n);
        eddy_event *ev = make_event(ids[n - 1], "t.x");
        pubrec p = {0};
        eddy__falloc_fail_after(n, false);
        eddy_status st = eddy_rbus_publish(b, "oom.x", ev, on_pub, &p, NULL);
        eddy_event_free(ev);
        if (st != EDDY_OK) {
            cr_expect_eq(st, EDDY_ERR_NOMEM);
            refused++;
            ids[n - 1][0] = '\0';
        } else {
            cr_assert(run_until_count(&t, &p.calls, 1, 5000), "publish %ld never completed", n);
            cr_assert(p.st == EDDY_OK || p.st == EDDY_ERR_NOMEM, "%s", eddy_status_name(p.st));
            if (p.st == EDDY_OK) {
                stored++;
            } else {
                nomem++;
                ids[n - 1][0] = '\0';
            }
        }
        run_for(&t, 5); /* let the reader meet the failure too */
        eddy__falloc_fail_after(0, false);
    }
    cr_expect_gt(nomem + refused, 0, "no allocation failure reached a publish");
    for (int i = 0; i < 80; i++) {
        if (!ids[i][0])
            continue;
        long long end = eddy_test_now_ms() + 20000;
        while (rec_seen(&r, ids[i]) == 0 && eddy_test_now_ms() < end)
            run_for(&t, 5);
        cr_expect_geq(rec_seen(&r, ids[i]), 1, "%s was stored and never delivered", ids[i]);
    }
    cr_expect_geq(rec_count(&r), stored);
    eddy_rbus_free(b);
    rec_destroy(&r);
    teardown(&t);
}

typedef struct xthread {
    const char *url;
    const char *ns;
} xthread;

static bool reader_parked(void *arg) {
    xthread *x = arg;
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:xt.x", x->ns);
    return eddy_test_mem_parked_on(x->url, key);
}

static void *publish_from_thread(void *arg) {
    xthread *x = arg;
    /* Only a write to a reader that waits tests the wake-up: one before it found the entry. */
    cr_assert(eddy_test_wait_until(reader_parked, x, 10000), "the reader never waited");
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = x->url;
    s.ns = x->ns;
    eddy_bus *b = NULL;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &b, NULL), EDDY_OK);
    eddy_event *ev = make_event("from-thread", "t.x");
    cr_assert_eq(eddy_bus_publish(b, "xt.x", ev, NULL, 0, NULL), EDDY_OK);
    eddy_event_free(ev);
    eddy_bus_free(b);
    return NULL;
}

Test(reactive, memory_read_wakes_on_a_write_from_another_thread, .timeout = 30) {
    tctx t;
    setup(&t, 0);
    t.s.block_ms = 20000; /* only the engine's write listener can wake it in time */
    t.s.redelivery_idle_ms = 600000;
    int n = 0;
    eddy_subscription_spec sp = spec("s", "xt.x", h_ok, &n);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    xthread x = {t.url, t.ns};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_from_thread, &x), 0);
    long long t0 = eddy_test_now_ms();
    cr_assert(run_until_count(&t, &n, 1, 10000));
    cr_expect_lt(eddy_test_now_ms() - t0, 3000);
    pthread_join(th, NULL);
    eddy_rbus_free(b);
    teardown(&t);
}

/* ---- a started bus keeps ev_run running ---------------------------------------------------- */

typedef struct alive_run {
    eddy_rbus *bus;
    int want, handled;
    ev_timer begin;
} alive_run;

static eddy_status h_count_then_stop(eddy_delivery *d, void *user) {
    (void)d;
    alive_run *a = user;
    if (++a->handled == a->want)
        eddy_rbus_stop(a->bus);
    return EDDY_OK;
}

/* Inside the run: the bus's first start, with no ready callback, and the messages. */
static void begin_inside_the_run(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    alive_run *a = (alive_run *)((char *)w - offsetof(alive_run, begin));
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_start(a->bus, NULL, NULL, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < a->want; i++) {
        char id[32];
        snprintf(id, sizeof(id), "alive-%d", i);
        publish(a->bus, "alive.x", id, NULL);
    }
}

/* ev_run with nothing else on the loop returns only once the handler stopped the bus: every
 * message handled. Several rounds, each a fresh bus started inside the run. */
ParameterizedTestParameters(reactive, a_started_bus_keeps_ev_run_running_until_stopped) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, a_started_bus_keeps_ev_run_running_until_stopped,
                  .timeout = 120) {
    for (int round = 0; round < 5; round++) {
        tctx t;
        setup(&t, *backend);
        alive_run a = {.want = 20};
        eddy_subscription_spec sp = spec("s", "alive.x", h_count_then_stop, &a);
        /* The group made beforehand (by a blocking bus, started and stopped, kept so that
         * memory://'s engine stays): the messages published right after the start are the
         * group's whether or not the reactive bus has made it yet. */
        eddy_bus *maker = NULL;
        eddy_error err = {0};
        cr_assert_eq(eddy_bus_new(&t.s, &sp, 1, &maker, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_bus_start(maker, &err), EDDY_OK, "%s", err.detail);
        eddy_bus_stop(maker);
        a.bus = must_rbus(&t, &sp, 1);
        ev_timer_init(&a.begin, begin_inside_the_run, 0., 0.);
        ev_timer_start(t.loop, &a.begin);
        ev_run(t.loop, 0); /* returns when no watcher is active any more */
        cr_expect_eq(a.handled, a.want, "round %d: ev_run returned with %d of %d handled", round,
                     a.handled, a.want);
        eddy_rbus_free(a.bus);
        ev_run(t.loop, 0); /* what the free left out completes */
        eddy_bus_free(maker);
        teardown(&t);
    }
}

/* The same with the messages published from another thread a while after the bus is ready:
 * the bus sits idle in between, and ev_run must not return meanwhile. */
static eddy_status h_count_then_stop_idle(eddy_delivery *d, void *user) {
    return h_count_then_stop(d, user);
}

typedef struct late_pub {
    const char *url, *ns;
    int n;
    atomic_bool ready; /* the reactive bus is ready: its group exists */
} late_pub;

static void late_ready(eddy_status st, const eddy_error *err, void *user) {
    cr_expect_eq(st, EDDY_OK, "start: %s", err ? err->detail : "");
    atomic_store(&((late_pub *)user)->ready, true);
}

static late_pub *the_late_pub;

static void start_inside_the_run(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    alive_run *a = (alive_run *)((char *)w - offsetof(alive_run, begin));
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_start(a->bus, late_ready, the_late_pub, &err), EDDY_OK, "%s",
                 err.detail);
}

static bool late_is_ready(void *arg) { return atomic_load(&((late_pub *)arg)->ready); }

static void *publish_later(void *arg) {
    late_pub *lp = arg;
    cr_assert(eddy_test_wait_until(late_is_ready, lp, 20000), "never ready");
    struct timespec ts = {0, 300 * 1000000L}; /* the bus sits idle meanwhile */
    nanosleep(&ts, NULL);
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = lp->url;
    s.ns = lp->ns;
    s.source = "/tests";
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < lp->n; i++) {
        eddy_event *ev = make_event("late", "t.x");
        char id[32];
        snprintf(id, sizeof(id), "late-%d", i);
        eddy_event_set_id(ev, id);
        cr_assert_eq(eddy_bus_publish(bus, "alive.x", ev, NULL, 0, &err), EDDY_OK, "%s",
                     err.detail);
        eddy_event_free(ev);
    }
    eddy_bus_free(bus);
    return NULL;
}

ParameterizedTestParameters(reactive, an_idle_started_bus_keeps_ev_run_running) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, an_idle_started_bus_keeps_ev_run_running,
                  .timeout = 120) {
    tctx t;
    setup(&t, *backend);
    alive_run a = {.want = 5};
    eddy_subscription_spec sp = spec("s", "alive.x", h_count_then_stop_idle, &a);
    a.bus = must_rbus(&t, &sp, 1);
    ev_timer_init(&a.begin, start_inside_the_run, 0., 0.);
    ev_timer_start(t.loop, &a.begin);
    late_pub lp = {t.url, t.ns, a.want, false};
    the_late_pub = &lp;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_later, &lp), 0);
    ev_run(t.loop, 0);
    pthread_join(th, NULL);
    cr_expect_eq(a.handled, a.want, "ev_run returned with %d of %d handled", a.handled, a.want);
    eddy_rbus_free(a.bus);
    ev_run(t.loop, 0);
    teardown(&t);
}

/* The benchmark's pattern: a bus started (ready), stopped, its stream filled by another bus,
 * then started again with no ready callback right before ev_run, which must run until the
 * handler has every message (it breaks the loop then). */
typedef struct restart_run {
    struct ev_loop *loop;
    int want, handled;
} restart_run;

static eddy_status h_count_then_break(eddy_delivery *d, void *user) {
    (void)d;
    restart_run *a = user;
    if (++a->handled == a->want)
        ev_break(a->loop, EVBREAK_ALL);
    return EDDY_OK;
}

ParameterizedTestParameters(reactive, a_restarted_bus_keeps_ev_run_running_for_its_backlog) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, a_restarted_bus_keeps_ev_run_running_for_its_backlog,
                  .timeout = 120) {
    for (int round = 0; round < 5; round++) {
        tctx t;
        setup(&t, *backend);
        restart_run a = {.loop = t.loop, .want = 200};
        eddy_subscription_spec sp = spec("s", "backlog.x", h_count_then_break, &a);
        eddy_rbus *b = must_rbus(&t, &sp, 1);
        must_start(&t, b);
        eddy_rbus_stop(b);
        eddy_bus *filler = NULL;
        eddy_error err = {0};
        cr_assert_eq(eddy_bus_new(&t.s, NULL, 0, &filler, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_bus_start(filler, &err), EDDY_OK, "%s", err.detail);
        for (int i = 0; i < a.want; i++) {
            char id[32];
            snprintf(id, sizeof(id), "b-%d", i);
            eddy_event *ev = make_event(id, "t.x");
            cr_assert_eq(eddy_bus_publish(filler, "backlog.x", ev, NULL, 0, &err), EDDY_OK, "%s",
                         err.detail);
            eddy_event_free(ev);
        }
        cr_assert_eq(eddy_rbus_start(b, NULL, NULL, &err), EDDY_OK, "%s", err.detail);
        ev_run(t.loop, 0);
        cr_expect_eq(a.handled, a.want, "round %d: ev_run returned with %d of %d handled", round,
                     a.handled, a.want);
        eddy_rbus_free(b);
        eddy_bus_free(filler);
        ev_run(t.loop, 0);
        teardown(&t);
    }
}

ParameterizedTestParameters(reactive, late_subscription_reports_ready) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, late_subscription_reports_ready, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, b); /* nothing to wait for: still reported from the loop */
    int n = 0;
    eddy_subscription_spec sp = spec("late", "late.x", h_ok, &n);
    readyrec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp, on_ready, &r, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_rbus_subscribe_ready(b, &sp, on_ready, &r, &err), EDDY_ERR_INVALID_SPEC);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    cr_assert_eq(publish_wait(&t, b, "late.x", "hello"), EDDY_OK);
    cr_assert(run_until_count(&t, &n, 1, 20000));
    /* Before start: the callback waits for the start's outcome; stop reports CLOSED. */
    eddy_rbus_stop(b);
    readyrec r2 = {0}, r3 = {0};
    eddy_subscription_spec sp2 = spec("second", "second.x", h_ok, &n);
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp2, on_ready, &r2, NULL), EDDY_OK);
    run_for(&t, 50);
    cr_expect_eq(r2.calls, 0);
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r3, NULL), EDDY_OK);
    cr_assert(run_until_count(&t, &r3.calls, 1, 20000));
    cr_expect_eq(r2.calls, 1);
    cr_expect_eq(r2.st, EDDY_OK);
    eddy_subscription_spec sp3 = spec("third", "third.x", h_ok, &n);
    readyrec r4 = {0};
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp3, on_ready, &r4, NULL), EDDY_OK);
    eddy_rbus_free(b);
    cr_expect_eq(r4.calls, 1);
    cr_expect_eq(r4.st, EDDY_ERR_CLOSED);
    teardown(&t);
}

/* A start needs the backend (its reply stream): the server goes away after it. */
Test(reactive, late_subscription_that_cannot_be_ready_is_removed, .timeout = 30,
     .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    t.s.connect_timeout_ms = 100;
    t.s.reconnect_min_ms = 10;
    t.s.reconnect_max_ms = 20;
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    eddy_test_redis_kill(&srv);
    int n = 0;
    eddy_subscription_spec sp = spec("late", "late.x", h_ok, &n);
    readyrec r = {0};
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp, on_ready, &r, NULL), EDDY_OK);
    eddy_consumer_stats st;
    cr_expect_eq(eddy_rbus_consumer_stats(b, "late", &st), EDDY_OK);
    cr_assert(run_until_count(&t, &r.calls, 1, 10000));
    cr_expect_eq(r.st, EDDY_ERR_IO);
    cr_expect_eq(eddy_rbus_consumer_stats(b, "late", &st), EDDY_ERR_INVALID_ARGUMENT);
    /* The name is free again. */
    cr_expect_eq(eddy_rbus_subscribe(b, &sp, NULL), EDDY_OK);
    eddy_rbus_free(b);
    teardown(&t);
}

Test(reactive, bad_arguments, .timeout = 30) {
    tctx t;
    setup(&t, 0);
    eddy_rbus *b = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_rbus_new(NULL, &t.s, NULL, 0, &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_new(t.loop, &t.s, NULL, 0, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_new(t.loop, &t.s, NULL, 1, &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_settings bad = t.s;
    bad.url = "http://x";
    cr_expect_eq(eddy_rbus_new(t.loop, &bad, NULL, 0, &b, &err), EDDY_ERR_INVALID_URL);
    int n = 0;
    eddy_subscription_spec sp = spec("s", "a..b", h_ok, &n);
    cr_expect_eq(eddy_rbus_new(t.loop, &t.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_PATTERN);
    cr_expect_null(b);
    b = must_rbus(&t, NULL, 0);
    cr_expect_eq(eddy_rbus_subscribe(NULL, &sp, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_subscribe(b, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_subscribe(b, &sp, &err), EDDY_ERR_INVALID_PATTERN);
    cr_expect_eq(eddy_rbus_start(NULL, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_consumer_stats st;
    cr_expect_eq(eddy_rbus_consumer_stats(b, "nope", &st), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_consumer_stats(NULL, "nope", &st), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_rbus_instance(NULL));
    cr_expect(eddy_rbus_instance(b) && strlen(eddy_rbus_instance(b)) > 0);
    pubrec p = {0};
    cr_expect_eq(eddy_rbus_publish_value(b, "a.b", "t", NULL, NULL, on_pub, &p, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    t.s.source = NULL;
    eddy_rbus *nosrc = must_rbus(&t, NULL, 0);
    cr_expect_eq(eddy_rbus_publish_value(nosrc, "a.b", "t", NULL, NULL, on_pub, &p, &err),
                 EDDY_ERR_INVALID_SPEC);
    eddy_rbus_free(nosrc);
    cr_expect_eq(eddy_rbus_start(b, NULL, NULL, &err), EDDY_OK); /* ready may be NULL */
    cr_expect_eq(eddy_rbus_start(b, NULL, NULL, &err), EDDY_ERR_ILLEGAL_STATE);
    run_for(&t, 20);
    eddy_rbus_stop(NULL);
    eddy_rbus_free(NULL);
    eddy_rbus_free(b);
    cr_expect_eq(p.calls, 0);
    teardown(&t);
}

static eddy_status pack_hello(msgpack_packer *pk, void *user) {
    return msgpack_pack_str_with_body(pk, "hello", 5) == 0 ? EDDY_OK : EDDY_ERR_NOMEM;
}

ParameterizedTestParameters(reactive, publish_value_roundtrip) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, publish_value_roundtrip, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    int n = 0;
    eddy_subscription_spec sp = spec("s", "val.x", h_ok, &n);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    pubrec p = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_publish_value(b, "val.x", "t.val", pack_hello, NULL, on_pub, &p, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(&t, &p.calls, 1, 20000));
    cr_expect_eq(p.st, EDDY_OK);
    cr_assert(run_until_count(&t, &n, 1, 20000));
    eddy_rbus_free(b);
    teardown(&t);
}

/* ---- request/reply ------------------------------------------------------------------------- */

/* reactive/request.c, for tests: requests in the core's table, request objects alive, ops
 * queued on the publishing connection. */
void eddy__rbus_request_counts(eddy_rbus *bus, size_t *in_table, size_t *alive, size_t *ops);

typedef struct reqrec {
    int calls;
    eddy_status st;
    char reply_id[96];
    bool in_call;        /* the call that asked for it has not returned yet */
    bool ran_inside;     /* the callback ran inside that call */
    eddy_rbus *free_bus; /* free this bus from inside the callback */
    eddy_rrequest *cancel_other;
    eddy_status request_after_free;
} reqrec;

static void on_reply(eddy_status st, eddy_event *reply, void *user) {
    reqrec *r = user;
    r->calls++;
    r->ran_inside |= r->in_call;
    r->st = st;
    cr_expect(st == EDDY_OK ? reply != NULL : reply == NULL, "%s with%s a reply",
              eddy_status_name(st), reply ? "" : "out");
    snprintf(r->reply_id, sizeof(r->reply_id), "%s", reply ? eddy_event_id(reply) : "");
    eddy_event_free(reply);
    if (r->cancel_other) {
        eddy_rrequest *other = r->cancel_other;
        r->cancel_other = NULL;
        eddy_rrequest_cancel(other);
    }
    if (r->free_bus) {
        eddy_rbus *b = r->free_bus;
        r->free_bus = NULL;
        eddy_rbus_free(b);
        eddy_event *ev = make_event("after-free", "t.echo");
        eddy_request_opts o = {eddy_deadline_in(1000), NULL, NULL};
        r->request_after_free = eddy_rbus_request(b, "rq.x", ev, &o, on_reply, r, NULL, NULL);
        eddy_event_free(ev);
    }
}

/* Sends a request; the callback must not run inside the call. */
static eddy_status request(eddy_rbus *b, const char *subject, const char *id, const char *type,
                           long long timeout_ms, reqrec *r, eddy_rrequest **handle) {
    eddy_event *ev = make_event(id, type);
    eddy_request_opts o = {eddy_deadline_in(timeout_ms), NULL, NULL};
    eddy_error err = {0};
    r->in_call = true;
    eddy_status st = eddy_rbus_request(b, subject, ev, &o, on_reply, r, handle, &err);
    r->in_call = false;
    eddy_event_free(ev);
    cr_expect_eq(r->calls, 0, "request %s: the callback ran inside the call", id);
    return st;
}

static void must_request(eddy_rbus *b, const char *subject, const char *id, const char *type,
                         long long timeout_ms, reqrec *r, eddy_rrequest **handle) {
    eddy_status st = request(b, subject, id, type, timeout_ms, r, handle);
    cr_assert_eq(st, EDDY_OK, "request %s: %s", id, eddy_status_name(st));
}

static eddy_request_stats req_stats(eddy_rbus *b, const char *name) {
    eddy_request_stats s;
    cr_assert_eq(eddy_rbus_request_stats(b, name, &s), EDDY_OK);
    return s;
}

static void expect_req_identity(eddy_rbus *b) {
    eddy_request_stats s = req_stats(b, NULL);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed,
                 "sent %lu != %lu + %lu + %lu + %lu", (unsigned long)s.sent,
                 (unsigned long)s.answered, (unsigned long)s.no_responders,
                 (unsigned long)s.no_reply, (unsigned long)s.failed);
}

static bool nothing_in_flight(void *arg) {
    size_t in_table, alive, ops;
    eddy__rbus_request_counts(arg, &in_table, &alive, &ops);
    return in_table == 0 && alive == 0 && ops == 0;
}

/* Once every request completed, nothing of them is left: no table entry, no request object,
 * no op on the publishing connection (a send's own answer may come after the reply). */
static void expect_nothing_in_flight(tctx *t, eddy_rbus *b) {
    bool none = run_until(t, nothing_in_flight, b, 20000);
    size_t in_table, alive, ops;
    eddy__rbus_request_counts(b, &in_table, &alive, &ops);
    cr_expect(none, "left in flight: %zu in the table, %zu alive, %zu ops", in_table, alive, ops);
}

/* A responder on the loop: "t.fail" fails, "t.hold" is answered later (answer_held), anything
 * else is answered at once with "re-<id>". */
typedef struct rsp {
    int calls;
    eddy_delivery *held[64];
    int nheld;
    bool finish_without_reply; /* answer_held finishes instead of replying */
    bool reply_null;           /* answer_held replies with NULL */
    int plain;                 /* deliveries that were plain publishes */
} rsp;

static eddy_event *reply_for(const eddy_event *req) {
    eddy_event *r = eddy_event_new();
    char id[96];
    snprintf(id, sizeof(id), "re-%s", eddy_event_id(req));
    cr_assert_eq(eddy_event_set_id(r, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(r, "/tests/responder"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(r, "t.reply"), EDDY_OK);
    return r;
}

static eddy_status r_answer(eddy_delivery *d, eddy_event **reply, void *user) {
    rsp *r = user;
    r->calls++;
    r->plain += !eddy_delivery_is_request(d);
    const char *type = eddy_event_type(eddy_delivery_event(d));
    if (strcmp(type, "t.fail") == 0)
        return EDDY_ERR_HANDLER_FAILED;
    if (strcmp(type, "t.hold") == 0) {
        cr_assert(r->nheld < 64);
        r->held[r->nheld++] = d;
        return EDDY_PENDING;
    }
    *reply = reply_for(eddy_delivery_event(d));
    return EDDY_OK;
}

static void answer_held(struct ev_loop *loop, ev_timer *w, int revents) {
    rsp *r = w->data;
    for (int i = 0; i < r->nheld; i++) {
        eddy_delivery *d = r->held[i];
        if (r->finish_without_reply)
            eddy_delivery_finish(d, EDDY_OK); /* a responder's "success" with no reply */
        else
            eddy_delivery_reply(d, r->reply_null ? NULL : reply_for(eddy_delivery_event(d)));
    }
    r->nheld = 0;
}

static eddy_subscription_spec responder(const char *name, const char *pattern, rsp *r) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.group = "answerers";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = r_answer;
    sp.user = r;
    return sp;
}

ParameterizedTestParameters(reactive, request_callback_runs_exactly_once_for_each_outcome) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, request_callback_runs_exactly_once_for_each_outcome,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    int silent = 0;
    eddy_subscription_spec specs[2] = {responder("answers", "rq.ask", &r),
                                       spec("silent", "rq.silent", h_ok, &silent)};
    eddy_rbus *b = must_rbus(&t, specs, 2);
    must_start(&t, b);
    enum { OK, NOBODY, FAILED, DEADLINE, CANCEL, STOPPED, N };
    reqrec recs[N];
    memset(recs, 0, sizeof(recs));
    eddy_rrequest *h = NULL;
    must_request(b, "rq.ask", "ok", "t.echo", 600000, &recs[OK], &h);
    cr_expect(h != NULL);
    must_request(b, "rq.nobody", "nobody", "t.echo", 600000, &recs[NOBODY], NULL);
    must_request(b, "rq.ask", "failed", "t.fail", 600000, &recs[FAILED], NULL);
    must_request(b, "rq.silent", "deadline", "t.echo", 300, &recs[DEADLINE], NULL);
    eddy_rrequest *cancel = NULL;
    must_request(b, "rq.silent", "cancel", "t.echo", 600000, &recs[CANCEL], &cancel);
    must_request(b, "rq.silent", "stopped", "t.echo", 600000, &recs[STOPPED], NULL);
    /* Refused up front: a status, no handle, and no callback. */
    reqrec refused = {0};
    eddy_event *ev = make_event("refused", "t.echo");
    eddy_rrequest *none = (eddy_rrequest *)&refused;
    cr_expect_eq(eddy_rbus_request(b, "rq.ask", ev, NULL, on_reply, &refused, &none, NULL),
                 EDDY_ERR_NO_DEADLINE);
    cr_expect_null(none, "a refused request has no handle");
    eddy_event_free(ev);

    cr_assert(run_until_count(&t, &recs[OK].calls, 1, 20000));
    cr_assert(run_until_count(&t, &recs[NOBODY].calls, 1, 20000));
    cr_assert(run_until_count(&t, &recs[FAILED].calls, 1, 20000));
    cr_assert(run_until_count(&t, &recs[DEADLINE].calls, 1, 20000));
    cr_assert(run_until_count(&t, &silent, 3, 20000), "the silent requests were delivered");
    eddy_rrequest_cancel(cancel);
    cr_expect_eq(recs[CANCEL].calls, 1, "cancel completes the request before it returns");
    eddy_rbus_stop(b);
    cr_expect_eq(recs[STOPPED].calls, 1, "stop completes the request before it returns");
    run_for(&t, 100); /* a second call would come now */
    eddy_status want[N] = {EDDY_OK,           EDDY_ERR_NO_RESPONDERS, EDDY_ERR_RESPONDER_FAILED,
                           EDDY_ERR_NO_REPLY, EDDY_ERR_NO_REPLY,      EDDY_ERR_NO_REPLY};
    for (int i = 0; i < N; i++) {
        cr_expect_eq(recs[i].calls, 1, "outcome %d: %d calls", i, recs[i].calls);
        cr_expect_eq(recs[i].st, want[i], "outcome %d: %s", i, eddy_status_name(recs[i].st));
        cr_expect(!recs[i].ran_inside);
    }
    cr_expect_str_eq(recs[OK].reply_id, "re-ok");
    cr_expect_eq(refused.calls, 0);
    eddy_request_stats s = req_stats(b, NULL);
    cr_expect_eq(s.sent, 6);
    cr_expect_eq(s.answered, 1);
    cr_expect_eq(s.no_responders, 1);
    cr_expect_eq(s.failed, 1);
    cr_expect_eq(s.no_reply, 3);
    expect_req_identity(b);
    expect_nothing_in_flight(&t, b);
    /* A stopped bus leaves nothing on the loop: ev_run returns. */
    long long t0 = eddy_test_now_ms();
    ev_run(t.loop, 0);
    cr_expect_lt(eddy_test_now_ms() - t0, 5000);
    eddy_rbus_free(b);
    teardown(&t);
}

typedef struct flood {
    eddy_rbus *bus;
    int n;
    int completed, ok, own;
    reqrec *recs;
    char (*ids)[16];
} flood;

static void flood_reply(eddy_status st, eddy_event *reply, void *user) {
    reqrec *r = user;
    r->calls++;
    r->st = st;
    snprintf(r->reply_id, sizeof(r->reply_id), "%s", reply ? eddy_event_id(reply) : "");
    eddy_event_free(reply);
}

/* From inside a loop callback: every request is sent before any can complete. */
static void send_flood(struct ev_loop *loop, ev_timer *w, int revents) {
    flood *f = w->data;
    for (int i = 0; i < f->n; i++) {
        snprintf(f->ids[i], sizeof(f->ids[i]), "k%d", i);
        eddy_event *ev = make_event(f->ids[i], "t.echo");
        eddy_request_opts o = {eddy_deadline_in(60000), NULL, NULL};
        eddy_error err = {0};
        eddy_status st =
            eddy_rbus_request(f->bus, "flood.x", ev, &o, flood_reply, &f->recs[i], NULL, &err);
        cr_assert_eq(st, EDDY_OK, "request %d: %s", i, err.detail);
        eddy_event_free(ev);
    }
    for (int i = 0; i < f->n; i++)
        cr_assert_eq(f->recs[i].calls, 0, "request %d completed inside the loop callback", i);
    size_t in_table, alive, ops;
    eddy__rbus_request_counts(f->bus, &in_table, &alive, &ops);
    cr_assert_eq(in_table, (size_t)f->n, "all of them in flight at once");
    cr_assert_eq(alive, (size_t)f->n);
}

static bool flood_done(void *arg) {
    flood *f = arg;
    int n = 0;
    for (int i = 0; i < f->n; i++)
        n += f->recs[i].calls > 0;
    return n == f->n;
}

ParameterizedTestParameters(reactive, ten_thousand_requests_in_flight) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, ten_thousand_requests_in_flight, .timeout = 180) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "flood.x", &r);
    eddy_rbus *server = must_rbus(&t, &sp, 1);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, server);
    must_start(&t, b);
    enum { N = 10000 };
    static reqrec recs[N];
    static char ids[N][16];
    for (int round = 0; round < 2; round++) {
        memset(recs, 0, sizeof(recs));
        flood f = {b, N, 0, 0, 0, recs, ids};
        ev_timer kick;
        ev_timer_init(&kick, send_flood, 0., 0.);
        kick.data = &f;
        ev_timer_start(t.loop, &kick);
        cr_assert(run_until(&t, flood_done, &f, 120000), "round %d: not every request completed",
                  round);
        run_for(&t, 50); /* a second call would come now */
        int ok = 0;
        char want[32];
        for (int i = 0; i < N; i++) {
            cr_assert_eq(recs[i].calls, 1, "request %d: %d calls", i, recs[i].calls);
            snprintf(want, sizeof(want), "re-k%d", i);
            ok += recs[i].st == EDDY_OK && strcmp(recs[i].reply_id, want) == 0;
        }
        cr_expect_eq(ok, N, "round %d: %d requests got their own answer", round, ok);
        /* Bounded: everything a request held is released once it completed. */
        expect_nothing_in_flight(&t, b);
    }
    eddy_request_stats s = req_stats(b, NULL);
    cr_expect_eq(s.sent, 2 * N);
    cr_expect_eq(s.answered, 2 * N);
    cr_expect_eq(s.unclaimed, 0);
    eddy_rbus_free(b);
    eddy_rbus_free(server);
    teardown(&t);
}

ParameterizedTestParameters(reactive, cancel_ends_a_request_at_once) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, cancel_ends_a_request_at_once, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    int silent = 0;
    eddy_subscription_spec specs[2] = {responder("answers", "cx.x", &r),
                                       spec("silent", "cx.silent", h_ok, &silent)};
    eddy_rbus *server = must_rbus(&t, specs, 2);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, server);
    must_start(&t, b);
    /* Cancelled before anything was answered (the registry question is still out). */
    reqrec early = {0};
    eddy_rrequest *h = NULL;
    must_request(b, "cx.x", "early", "t.echo", 600000, &early, &h);
    eddy_rrequest_cancel(h);
    cr_expect_eq(early.calls, 1);
    cr_expect_eq(early.st, EDDY_ERR_NO_REPLY);
    /* Cancelled while the responder holds it: its reply comes later and is Unclaimed. */
    reqrec held = {0};
    must_request(b, "cx.x", "held", "t.hold", 600000, &held, &h);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    eddy_rrequest_cancel(h);
    cr_expect_eq(held.calls, 1);
    cr_expect_eq(held.st, EDDY_ERR_NO_REPLY);
    answer_held(t.loop, &(ev_timer){.data = &r}, 0);
    /* Cancelled from inside another request's callback (a responder that holds a delivery
     * holds back the replies of its batch: the second one goes to a silent subject). */
    reqrec first = {0}, second = {0};
    eddy_rrequest *h2 = NULL;
    must_request(b, "cx.silent", "second", "t.echo", 600000, &second, &h2);
    cr_assert(run_until_count(&t, &silent, 1, 20000));
    first.cancel_other = h2;
    must_request(b, "cx.x", "first", "t.echo", 600000, &first, NULL);
    cr_assert(run_until_count(&t, &first.calls, 1, 20000));
    cr_expect_eq(first.st, EDDY_OK);
    cr_expect_eq(second.calls, 1);
    cr_expect_eq(second.st, EDDY_ERR_NO_REPLY);
    eddy_rrequest_cancel(NULL); /* no-op */
    eddy_request_stats s;
    long long end = eddy_test_now_ms() + 20000;
    while ((s = req_stats(b, NULL)).unclaimed < 1 && eddy_test_now_ms() < end)
        run_for(&t, 5);
    cr_expect_eq(s.unclaimed, 1, "the cancelled request's reply");
    cr_expect_eq(r.calls, 2, "a request cancelled before it went out reached the responder");
    cr_expect_eq(s.sent, 4);
    cr_expect_eq(s.no_reply, 3);
    cr_expect_eq(s.answered, 1);
    cr_expect_eq(early.calls + held.calls + first.calls + second.calls, 4);
    expect_req_identity(b);
    expect_nothing_in_flight(&t, b);
    eddy_rbus_free(b);
    eddy_rbus_free(server);
    teardown(&t);
}

static bool refused_reply(void *arg) {
    eddy_consumer_stats cs;
    return eddy_rbus_consumer_stats(arg, "answers", &cs) == EDDY_OK && cs.refused >= 1;
}

ParameterizedTestParameters(reactive, free_with_requests_in_flight_ends_each_with_no_reply) {
    return cr_make_param_array(int, backends, 2);
}
/* Free (and stop) end every request still waiting with EDDY_ERR_NO_REPLY, counted NoReply, as
 * the blocking front end's stop does: EDDY_ERR_CLOSED is never a request's outcome. */
ParameterizedTest(int *backend, reactive, free_with_requests_in_flight_ends_each_with_no_reply,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    int silent = 0;
    eddy_subscription_spec specs[2] = {responder("answers", "fr.x", &r),
                                       spec("silent", "fr.silent", h_ok, &silent)};
    eddy_rbus *server = must_rbus(&t, specs, 2);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, server);
    must_start(&t, b);
    reqrec held = {0}, just_sent = {0};
    must_request(b, "fr.x", "held", "t.hold", 600000, &held, NULL);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    must_request(b, "fr.x", "just-sent", "t.hold", 600000, &just_sent, NULL);
    eddy_rbus_free(b);
    cr_expect_eq(held.calls, 1, "free completes it before it returns");
    cr_expect_eq(held.st, EDDY_ERR_NO_REPLY);
    cr_expect_eq(just_sent.calls, 1);
    cr_expect_eq(just_sent.st, EDDY_ERR_NO_REPLY);
    /* The reply stream was deleted: the late answer is refused, not stored. */
    answer_held(t.loop, &(ev_timer){.data = &r}, 0);
    cr_expect(run_until(&t, refused_reply, server, 20000), "the reply stream outlived its bus");
    cr_assert(run_until_count(&t, &r.calls, 2, 20000));
    answer_held(t.loop, &(ev_timer){.data = &r}, 0);
    run_for(&t, 50);
    cr_expect_eq(held.calls, 1);
    cr_expect_eq(just_sent.calls, 1);

    /* Freed from inside a reply callback: the others end inside that free, once. */
    b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    reqrec waiting = {0}, freer = {0};
    must_request(b, "fr.silent", "waiting", "t.echo", 600000, &waiting, NULL);
    freer.free_bus = b;
    must_request(b, "fr.x", "freer", "t.echo", 600000, &freer, NULL);
    cr_assert(run_until_count(&t, &freer.calls, 1, 20000));
    cr_expect_eq(freer.st, EDDY_OK);
    cr_expect_eq(freer.request_after_free, EDDY_ERR_CLOSED, "a request on a bus being freed");
    cr_expect_eq(waiting.calls, 1);
    cr_expect_eq(waiting.st, EDDY_ERR_NO_REPLY);
    run_for(&t, 100);
    cr_expect_eq(freer.calls, 1);
    cr_expect_eq(waiting.calls, 1);
    eddy_rbus_free(server);
    teardown(&t);
}

ParameterizedTestParameters(reactive, stop_leaves_the_registry_and_a_restart_joins_it_again) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, stop_leaves_the_registry_and_a_restart_joins_it_again,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "lv.x", &r);
    eddy_rbus *server = must_rbus(&t, &sp, 1);
    must_start(&t, server);
    eddy_rbus_stop(server);
    /* A requester that never asked before (nothing remembered): nobody answers at once. */
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    reqrec nobody = {0};
    must_request(b, "lv.x", "nobody", "t.echo", 600000, &nobody, NULL);
    cr_assert(run_until_count(&t, &nobody.calls, 1, 20000));
    cr_expect_eq(nobody.st, EDDY_ERR_NO_RESPONDERS);
    eddy_rbus_free(b);
    /* Stopped and started again at once: the old leave cannot undo the new registration. */
    for (int i = 0; i < 5; i++) {
        must_start(&t, server);
        eddy_rbus_stop(server);
    }
    must_start(&t, server);
    b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    reqrec answered = {0};
    must_request(b, "lv.x", "answered", "t.echo", 600000, &answered, NULL);
    cr_assert(run_until_count(&t, &answered.calls, 1, 20000));
    cr_expect_eq(answered.st, EDDY_OK, "%s", eddy_status_name(answered.st));
    /* A bus with no subscription starts its control loop at once: while its previous leave
     * is out, the loop waits for it, then becomes ready. */
    eddy_rbus_stop(b);
    must_start(&t, b);
    memset(&answered, 0, sizeof(answered));
    must_request(b, "lv.x", "again", "t.echo", 600000, &answered, NULL);
    cr_assert(run_until_count(&t, &answered.calls, 1, 20000));
    cr_expect_eq(answered.st, EDDY_OK, "%s", eddy_status_name(answered.st));
    eddy_rbus_free(b);
    eddy_rbus_free(server);
    teardown(&t);
}

ParameterizedTestParameters(reactive, responder_answers_later_from_a_timer) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, responder_answers_later_from_a_timer, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "lt.x", &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    ev_timer later;
    ev_timer_init(&later, answer_held, 0.05, 0.05);
    later.data = &r;
    ev_timer_start(t.loop, &later);
    reqrec recs[3];
    memset(recs, 0, sizeof(recs));
    must_request(b, "lt.x", "a", "t.hold", 600000, &recs[0], NULL);
    must_request(b, "lt.x", "b", "t.hold", 600000, &recs[1], NULL);
    must_request(b, "lt.x", "c", "t.hold", 600000, &recs[2], NULL);
    /* A plain publish to a responder that answers later: its reply is Unaddressed. */
    cr_assert_eq(publish_wait(&t, b, "lt.x", "plain"), EDDY_OK);
    for (int i = 0; i < 3; i++) {
        cr_assert(run_until_count(&t, &recs[i].calls, 1, 20000), "request %d", i);
        cr_expect_eq(recs[i].st, EDDY_OK);
    }
    cr_expect_str_eq(recs[0].reply_id, "re-a");
    cr_expect_str_eq(recs[1].reply_id, "re-b");
    cr_expect_str_eq(recs[2].reply_id, "re-c");
    cr_assert(run_until_count(&t, &r.plain, 1, 20000));
    eddy_consumer_stats cs;
    long long end = eddy_test_now_ms() + 20000;
    do {
        run_for(&t, 5);
        cr_assert_eq(eddy_rbus_consumer_stats(b, "answers", &cs), EDDY_OK);
    } while ((cs.replied < 3 || cs.unaddressed < 1) && eddy_test_now_ms() < end);
    cr_expect_eq(cs.replied, 3);
    cr_expect_eq(cs.unaddressed, 1);
    cr_expect_eq(cs.responder_failed, 0);
    ev_timer_stop(t.loop, &later);
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(reactive, responder_finished_without_a_reply_fails_at_once) {
    return cr_make_param_array(int, backends, 2);
}
/* The deadline is far beyond the test's timeout: only an immediate failure reply passes. */
ParameterizedTest(int *backend, reactive, responder_finished_without_a_reply_fails_at_once,
                  .timeout = 30) {
    tctx t;
    setup(&t, *backend);
    rsp r = {0};
    r.finish_without_reply = true;
    eddy_subscription_spec sp = responder("answers", "nr.x", &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    ev_timer later;
    ev_timer_init(&later, answer_held, 0.02, 0.02);
    later.data = &r;
    ev_timer_start(t.loop, &later);
    reqrec finished = {0}, null_reply = {0};
    must_request(b, "nr.x", "finished", "t.hold", 600000, &finished, NULL);
    cr_assert(run_until_count(&t, &finished.calls, 1, 20000));
    cr_expect_eq(finished.st, EDDY_ERR_RESPONDER_FAILED, "%s", eddy_status_name(finished.st));
    r.finish_without_reply = false;
    r.reply_null = true; /* eddy_delivery_reply(d, NULL) */
    must_request(b, "nr.x", "null", "t.hold", 600000, &null_reply, NULL);
    cr_assert(run_until_count(&t, &null_reply.calls, 1, 20000));
    cr_expect_eq(null_reply.st, EDDY_ERR_RESPONDER_FAILED);
    eddy_consumer_stats cs;
    cr_assert_eq(eddy_rbus_consumer_stats(b, "answers", &cs), EDDY_OK);
    cr_expect_eq(cs.responder_failed, 2);
    eddy_request_stats s = req_stats(b, NULL);
    cr_expect_eq(s.failed, 2);
    ev_timer_stop(t.loop, &later);
    eddy_rbus_free(b);
    teardown(&t);
}

typedef struct late_ask {
    tctx *t;
    eddy_rbus *asker;
    reqrec rec;
    int ready_calls;
} late_ask;

/* The late responder's ready callback asks at once, from a bus that never asked before. */
static void ask_when_ready(eddy_status st, const eddy_error *err, void *user) {
    late_ask *l = user;
    l->ready_calls++;
    cr_assert_eq(st, EDDY_OK, "%s", err ? err->detail : "");
    must_request(l->asker, "late.rq", "late", "t.echo", 600000, &l->rec, NULL);
}

ParameterizedTestParameters(reactive, late_responder_is_registered_before_its_ready_callback) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reactive, late_responder_is_registered_before_its_ready_callback,
                  .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    t.s.lease_ms = 600000; /* no heartbeat would come in time to register it */
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    late_ask l = {&t, must_rbus(&t, NULL, 0), {0}, 0};
    must_start(&t, l.asker);
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "late.rq", &r);
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp, ask_when_ready, &l, NULL), EDDY_OK);
    cr_assert(run_until_count(&t, &l.rec.calls, 1, 20000));
    cr_expect_eq(l.rec.st, EDDY_OK, "%s", eddy_status_name(l.rec.st));
    cr_expect_eq(l.ready_calls, 1);
    eddy_rbus_free(l.asker);
    eddy_rbus_free(b);
    teardown(&t);
}

Test(reactive, request_refusals_and_bad_arguments, .timeout = 30) {
    tctx t;
    setup(&t, 0);
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "bad.x", &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    eddy_event *ev = make_event("q", "t.echo");
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    reqrec rec = {0};
    eddy_rrequest *h = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_rbus_request(NULL, "bad.x", ev, &o, on_reply, &rec, &h, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(
        eddy_rbus_request_value(NULL, "bad.x", "t", pack_hello, NULL, &o, on_reply, &rec, &h, &err),
        EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_request(b, "bad.x", ev, &o, on_reply, &rec, &h, &err),
                 EDDY_ERR_NOT_READY);
    cr_expect_eq(
        eddy_rbus_request_value(b, "bad.x", "t", pack_hello, NULL, &o, on_reply, &rec, &h, &err),
        EDDY_ERR_NOT_READY);
    /* Started, but not ready yet: still not ready. */
    readyrec ready = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &ready, NULL), EDDY_OK);
    cr_expect_eq(eddy_rbus_request(b, "bad.x", ev, &o, on_reply, &rec, &h, &err),
                 EDDY_ERR_NOT_READY);
    cr_assert(run_until_count(&t, &ready.calls, 1, 20000));
    eddy_request_opts with_token = o;
    with_token.cancel = eddy_cancel_new();
    eddy_cancel_fire(with_token.cancel); /* a fired token refuses, as eddy_bus_request's */
    cr_expect_eq(eddy_rbus_request(b, "bad.x", ev, &with_token, on_reply, &rec, &h, &err),
                 EDDY_ERR_NO_REPLY);
    eddy_cancel_free(with_token.cancel);
    cr_expect_eq(eddy_rbus_request(b, "bad..x", ev, &o, on_reply, &rec, &h, &err),
                 EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(eddy_rbus_request(b, "bad.x", NULL, &o, on_reply, &rec, &h, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(
        eddy_rbus_request_value(b, "bad.x", NULL, pack_hello, NULL, &o, on_reply, &rec, &h, &err),
        EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(h);
    cr_expect_eq(rec.calls, 0);
    eddy_request_stats s;
    cr_expect_eq(eddy_rbus_request_stats(NULL, NULL, &s), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rbus_request_stats(b, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    s = req_stats(b, NULL);
    cr_expect_eq(s.sent, 0, "refusals are not counted");
    /* No callback and no handle wanted: the request still goes out and is answered. */
    cr_assert_eq(eddy_rbus_request(b, "bad.x", ev, &o, NULL, NULL, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(eddy_rbus_request_value(b, "bad.x", "t.val", pack_hello, NULL, &o, on_reply, &rec,
                                         &h, &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect(h != NULL);
    cr_assert(run_until_count(&t, &rec.calls, 1, 20000));
    cr_expect_eq(rec.st, EDDY_OK);
    long long end = eddy_test_now_ms() + 20000;
    while (req_stats(b, NULL).answered < 2 && eddy_test_now_ms() < end)
        run_for(&t, 5);
    cr_expect_eq(req_stats(b, NULL).answered, 2);
    expect_nothing_in_flight(&t, b);
    eddy_rbus_free(b);
    eddy_event_free(ev);
    teardown(&t);
}

Test(reactive, start_without_subscriptions_needs_its_reply_stream, .timeout = 30) {
    tctx t;
    setup_url(&t, "redis://127.0.0.1:1");
    t.s.connect_timeout_ms = 100;
    t.s.reconnect_min_ms = 10;
    t.s.reconnect_max_ms = 20;
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    readyrec r = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, NULL), EDDY_OK);
    cr_expect_eq(r.calls, 0);
    cr_assert(run_until_count(&t, &r.calls, 1, 10000));
    cr_expect_eq(r.st, EDDY_ERR_IO);
    cr_expect(strstr(r.detail, "reply stream"), "%s", r.detail);
    /* Left stopped: requests are not ready, start may be called again. */
    reqrec rec = {0};
    cr_expect_eq(request(b, "x.y", "q", "t.echo", 1000, &rec, NULL), EDDY_ERR_NOT_READY);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(eddy_rbus_start(b, on_ready, &r, NULL), EDDY_OK);
    eddy_rbus_free(b);
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r.st, EDDY_ERR_CLOSED);
    teardown(&t);
}

Test(reactive, requests_survive_a_killed_control_connection, .timeout = 90,
     .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    t.s.reconnect_min_ms = 20;
    t.s.reconnect_max_ms = 200;
    t.s.connect_timeout_ms = 500;
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "kc.x", &r);
    eddy_rbus *server = must_rbus(&t, &sp, 1);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, server);
    must_start(&t, b);
    reqrec before = {0};
    must_request(b, "kc.x", "before", "t.echo", 10000, &before, NULL);
    cr_assert(run_until_count(&t, &before.calls, 1, 20000));
    cr_expect_eq(before.st, EDDY_OK);
    run_for(&t, 50); /* every connection back in its blocking read */
    cr_assert_geq(kill_clients(srv.port), 4);
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 50 && st != EDDY_OK; i++) {
        reqrec after = {0};
        st = request(b, "kc.x", "after", "t.echo", 2000, &after, NULL);
        if (st == EDDY_OK) {
            cr_assert(run_until_count(&t, &after.calls, 1, 20000));
            st = after.st;
        }
        if (st != EDDY_OK)
            run_for(&t, 100);
    }
    cr_expect_eq(st, EDDY_OK, "no answer after the connections were killed: %s",
                 eddy_status_name(st));
    expect_req_identity(b);
    eddy_rbus_free(b);
    eddy_rbus_free(server);
    eddy_test_redis_kill(&srv);
    teardown(&t);
}

/* The memory engine fails its n-th allocation from now on, once, for n = 1, 2, ...: each
 * request is refused, or completes exactly once (answered, or failed with a status); the
 * counters keep their identity, and requests are answered again afterwards. */
Test(reactive, memory_engine_out_of_memory_during_requests, .timeout = 120) {
    tctx t;
    setup(&t, 0);
    t.s.reconnect_min_ms = 1;
    t.s.reconnect_max_ms = 5;
    t.s.block_ms = 50;
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "oomrq.x", &r);
    eddy_rbus *b = must_rbus(&t, &sp, 1);
    must_start(&t, b);
    int refused = 0, answered = 0, failed = 0;
    for (long n = 1; n <= 60; n++) {
        char id[16];
        snprintf(id, sizeof(id), "o%ld", n);
        reqrec rec = {0};
        eddy__falloc_fail_after(n, false);
        eddy_status st = request(b, "oomrq.x", id, "t.echo", 1500, &rec, NULL);
        if (st != EDDY_OK) {
            refused++;
        } else {
            cr_assert(run_until_count(&t, &rec.calls, 1, 10000), "request %ld never completed", n);
            if (rec.st == EDDY_OK)
                answered++;
            else
                failed++;
        }
        eddy__falloc_fail_after(0, false);
        run_for(&t, 5);
        cr_expect_eq(rec.calls, st == EDDY_OK ? 1 : 0, "request %ld: %d calls", n, rec.calls);
    }
    cr_expect_gt(failed + refused, 0, "no allocation failure reached a request");
    cr_expect_gt(answered, 0);
    expect_req_identity(b);
    expect_nothing_in_flight(&t, b);
    reqrec last = {0};
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 50 && st != EDDY_OK; i++) {
        memset(&last, 0, sizeof(last));
        st = request(b, "oomrq.x", "last", "t.echo", 2000, &last, NULL);
        if (st == EDDY_OK) {
            cr_assert(run_until_count(&t, &last.calls, 1, 10000));
            st = last.st;
        }
    }
    cr_expect_eq(st, EDDY_OK, "not answered again after the failures: %s", eddy_status_name(st));
    eddy_rbus_free(b);
    teardown(&t);
}

ParameterizedTestParameters(reactive, registry_failures_reach_the_caller) {
    return cr_make_param_array(int, backends, 2);
}
/* The registry key holds the wrong type (someone else's key): a late responder cannot be
 * registered (its ready callback says so and it is removed), and a request cannot learn whether
 * anything is subscribed (its callback says so; nothing was sent, nothing is counted). */
ParameterizedTest(int *backend, reactive, registry_failures_reach_the_caller, .timeout = 60) {
    tctx t;
    setup(&t, *backend);
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    must_start(&t, b);
    freeReplyObject(raw_cmdf(t.url, "DEL {%s}:subs", t.ns));
    freeReplyObject(raw_cmdf(t.url, "SET {%s}:subs not-a-registry", t.ns));
    rsp r = {0};
    eddy_subscription_spec sp = responder("answers", "rf.x", &r);
    readyrec ready = {0};
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp, on_ready, &ready, NULL), EDDY_OK);
    cr_assert(run_until_count(&t, &ready.calls, 1, 20000));
    cr_expect_eq(ready.st, EDDY_ERR_BACKEND, "%s (%s)", eddy_status_name(ready.st), ready.detail);
    eddy_consumer_stats cs;
    cr_expect_eq(eddy_rbus_consumer_stats(b, "answers", &cs), EDDY_ERR_INVALID_ARGUMENT,
                 "the subscription was not removed");
    reqrec rec = {0};
    must_request(b, "rf.x", "q", "t.echo", 600000, &rec, NULL);
    cr_assert(run_until_count(&t, &rec.calls, 1, 20000));
    cr_expect_eq(rec.st, EDDY_ERR_BACKEND, "%s", eddy_status_name(rec.st));
    eddy_request_stats s = req_stats(b, NULL);
    cr_expect_eq(s.sent, 0, "nothing was sent: not counted");
    expect_nothing_in_flight(&t, b);
    /* Repaired: the same subscription can be added again, and is answered. */
    freeReplyObject(raw_cmdf(t.url, "DEL {%s}:subs", t.ns));
    memset(&ready, 0, sizeof(ready));
    cr_assert_eq(eddy_rbus_subscribe_ready(b, &sp, on_ready, &ready, NULL), EDDY_OK);
    cr_assert(run_until_count(&t, &ready.calls, 1, 20000));
    cr_expect_eq(ready.st, EDDY_OK, "%s", ready.detail);
    memset(&rec, 0, sizeof(rec));
    must_request(b, "rf.x", "q2", "t.echo", 600000, &rec, NULL);
    cr_assert(run_until_count(&t, &rec.calls, 1, 20000));
    cr_expect_eq(rec.st, EDDY_OK, "%s", eddy_status_name(rec.st));
    eddy_rbus_free(b);
    teardown(&t);
}

/* ---- a stalled server (SIGSTOP) ------------------------------------------------------------ */

/* The connections to srv other than the asking one: a connection eddy dropped is gone once the
 * server has read all it had sent. */
static long long other_clients(void) {
    redisContext *rc = redisConnect("127.0.0.1", srv.port);
    cr_assert(rc && !rc->err);
    redisReply *r = redisCommand(rc, "CLIENT LIST");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    long long n = -1;
    for (const char *p = r->str; (p = strchr(p, '\n')); p++)
        n++;
    freeReplyObject(r);
    redisFree(rc);
    return n;
}

static bool no_other_clients(void *user) { return other_clients() == 0; }

/* Whether the subject's stream holds an entry of event `id`. */
static bool stored(const char *ns, const char *subject, const char *id) {
    redisContext *rc = redisConnect("127.0.0.1", srv.port);
    cr_assert(rc && !rc->err);
    redisReply *r = redisCommand(rc, "XRANGE {%s}:s:%s - +", ns, subject);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    bool found = false;
    for (size_t i = 0; i < r->elements && !found; i++) {
        redisReply *fields = r->element[i]->element[1];
        for (size_t f = 0; f + 1 < fields->elements; f += 2)
            found |= strcmp(fields->element[f]->str, "id") == 0 &&
                     strcmp(fields->element[f + 1]->str, id) == 0;
    }
    freeReplyObject(r);
    redisFree(rc);
    return found;
}

static void stall_settings(tctx *t) {
    t->s.command_timeout_ms = 300;
    t->s.reconnect_min_ms = 20;
    t->s.reconnect_max_ms = 200;
}

#define NSTALLED 100

/* Publishes while Redis is stopped end by command_timeout_ms, while it is still stopped:
 * EDDY_ERR_TIMEOUT for those written (sent, outcome unknown), EDDY_ERR_IO for those not, and
 * one that said "not sent" is never stored once the server runs again. */
Test(reactive, publishes_during_a_stall_say_whether_they_were_sent, .timeout = 120,
     .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    stall_settings(&t);
    /* Queuing 50 MB takes a while under a sanitizer: the first publish's deadline must not pass
     * before the loop runs and writes it (CI once saw none written within 300 ms). */
    t.s.command_timeout_ms = 3000;
    eddy_rbus *b = must_rbus(&t, NULL, 0);
    cr_assert_eq(publish_wait(&t, b, "stall.x", "before"), EDDY_OK); /* connected */
    /* 50 MB in all: far more than the sockets' buffers hold, so the later ones stay unsent. */
    size_t size = 512 * 1024;
    char *data = malloc(size);
    cr_assert(data);
    memset(data, 'x', size);
    static pubrec p[NSTALLED];
    memset(p, 0, sizeof(p));
    static eddy_event *evs[NSTALLED]; /* made before the stop: only the publishes run during it */
    for (int i = 0; i < NSTALLED; i++) {
        char id[16];
        snprintf(id, sizeof(id), "p-%d", i);
        evs[i] = make_event(id, "t.x");
        cr_assert_eq(eddy_event_set_data(evs[i], data, size), EDDY_OK);
    }
    free(data);
    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    for (int i = 0; i < NSTALLED; i++) {
        cr_assert_eq(eddy_rbus_publish(b, "stall.x", evs[i], on_pub, &p[i], NULL), EDDY_OK);
        eddy_event_free(evs[i]);
    }
    for (int i = 0; i < NSTALLED; i++)
        cr_assert(run_until_count(&t, &p[i].calls, 1, 60000),
                  "publish %d did not end while Redis was stopped", i);
    int timeouts = 0, unsent = 0;
    for (int i = 0; i < NSTALLED; i++) {
        cr_expect_eq(p[i].calls, 1, "publish %d: %d calls", i, p[i].calls);
        cr_expect(p[i].st == EDDY_ERR_TIMEOUT || p[i].st == EDDY_ERR_IO, "publish %d: %s", i,
                  eddy_status_name(p[i].st));
        if (p[i].st == EDDY_ERR_TIMEOUT) {
            cr_expect_eq(unsent, 0, "publish %d was sent after one that was not", i);
            timeouts++;
        } else {
            unsent++;
        }
    }
    cr_expect_gt(timeouts, 0, "the first publish fits the sockets' buffers: it was sent");
    cr_expect_gt(unsent, 0, "50 MB do not fit the sockets' buffers: some were not sent");
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    /* The server reads what the dropped connection had sent, then sees it closed. */
    cr_assert(eddy_test_wait_until(no_other_clients, NULL, 30000),
              "the dropped connection is still open on the server");
    for (int i = 0; i < NSTALLED; i++) {
        char id[16];
        snprintf(id, sizeof(id), "p-%d", i);
        if (p[i].st == EDDY_ERR_IO)
            cr_expect(!stored(t.ns, "stall.x", id), "publish %d said not sent, but it is stored",
                      i);
    }
    cr_expect_eq(publish_wait(&t, b, "stall.x", "after"), EDDY_OK, "no new connection");
    eddy_rbus_free(b);
    eddy_test_redis_kill(&srv);
    teardown(&t);
}

/* A request ends by its own deadline while Redis is stopped; once every connection's deadline
 * passed and Redis runs again, publishing and delivery resume. */
Test(reactive, a_stall_ends_requests_by_their_deadline_and_everything_resumes, .timeout = 120,
     .fini = kill_private_server) {
    eddy_test_redis_start(&srv, 0);
    tctx t;
    setup_url(&t, srv.url);
    stall_settings(&t);
    int got = 0;
    rsp answers = {0};
    eddy_subscription_spec sp[2] = {spec("s", "resume.x", h_ok, &got),
                                    responder("r", "resume.ask", &answers)};
    eddy_rbus *b = must_rbus(&t, sp, 2);
    must_start(&t, b);
    cr_assert_eq(publish_wait(&t, b, "resume.x", "before"), EDDY_OK);
    cr_assert(run_until_count(&t, &got, 1, 20000));
    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    /* A responder is registered: the request is sent, and no reply can come. Its deadline is
     * past the command timeout (300 ms): Redis not answering a step in time is no outcome of
     * a request (its entry may have gone out), its deadline is. */
    reqrec r = {0};
    long long asked = eddy_now_ms();
    must_request(b, "resume.ask", "ask", "t.echo", 700, &r, NULL);
    cr_assert(run_until_count(&t, &r.calls, 1, 30000), "the request outlived its deadline");
    cr_expect_eq(r.st, EDDY_ERR_NO_REPLY, "%s", eddy_status_name(r.st));
    cr_expect_geq(eddy_now_ms() - asked, 690,
                  "ended %lld ms after it was asked, before its deadline", eddy_now_ms() - asked);
    run_for(&t, 1000); /* every connection's deadline passes: they all reconnect */
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 100 && st != EDDY_OK; i++)
        st = publish_wait(&t, b, "resume.x", "after");
    cr_assert_eq(st, EDDY_OK);
    cr_expect(run_until_count(&t, &got, 2, 30000), "nothing delivered after SIGCONT");
    eddy_rbus_free(b);
    eddy_test_redis_kill(&srv);
    teardown(&t);
}
