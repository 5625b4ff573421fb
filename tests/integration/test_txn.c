/* SPDX-License-Identifier: BSD-3-Clause */
/* Transactional handlers (eddy_delivery_emit) on both front ends and both backends: each
 * input's outputs appear exactly once, and a pattern subscription that predates their subjects
 * receives them; a handler that fails once appends nothing for the failed attempt; an input
 * handled twice (its first handler overran redelivery_idle_ms, another consumer of the group
 * took it and committed) has its outputs once, the late commit only acknowledging; fan-out
 * groups each commit their own outputs; bad outputs are refused with a clear status before
 * anything is sent; and the memory engine's commit answers as the Lua does, a second call with
 * the same input appending nothing. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"
#include "util/functions.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

typedef enum behaviour { EMIT_OK, FAIL_FIRST, HOLD_FIRST, BAD_OUTPUTS } behaviour;

/* What the transforming handlers share. */
typedef struct pipe {
    behaviour how;
    pthread_mutex_t lock;
    int calls;
    eddy_delivery *held; /* HOLD_FIRST: the first delivery, held with EDDY_PENDING */
    eddy_status bad[6];  /* BAD_OUTPUTS: what each refused emit returned */
    int nbad;
    atomic_int again; /* "committed already" log lines */
} pipe_t;

typedef struct ctx ctx;
typedef struct hctx {
    ctx *c;
    int bus;
} hctx;

struct ctx {
    hctx h[2];
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
    pipe_t pipe;
    int held_bus;
};

static void count_log(eddy_log_level level, const char *msg, void *user) {
    ctx *c = user;
    if (strstr(msg, "was committed already"))
        atomic_fetch_add(&c->pipe.again, 1);
    eddy_test_log(level, msg, c->url[0] == 'm' ? "memory" : "redis");
}

static void setup(ctx *c, const combo *p) {
    memset(c, 0, sizeof(*c));
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_settings(&c->s, p->backend == 1, "txn", c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    c->s.block_ms = 200;
    c->s.discovery_ms = 100;
    c->s.redelivery_backoff_ms = 100;
    c->s.log = count_log;
    c->s.log_user = c;
    pthread_mutex_init(&c->pipe.lock, NULL);
    for (int i = 0; i < 2; i++)
        c->h[i] = (hctx){c, i};
}

/* Emits "<id>.a" to out.a and "<id>.b" to out.b. */
static eddy_status emit_two(eddy_delivery *d) {
    const char *id = eddy_event_id(eddy_delivery_event(d));
    const char *subjects[] = {"out.a", "out.b"};
    for (int i = 0; i < 2; i++) {
        char oid[96];
        snprintf(oid, sizeof(oid), "%s.%c", id, 'a' + i);
        eddy_event *ev = make_event(oid, "t.out");
        eddy_error err = {0};
        eddy_status st = eddy_delivery_emit(d, subjects[i], ev, &err);
        eddy_event_free(ev);
        if (st != EDDY_OK) {
            fprintf(stderr, "emit: %s %s\n", eddy_status_name(st), err.detail);
            return st;
        }
    }
    return EDDY_OK;
}

static eddy_status transform(eddy_delivery *d, void *user) {
    hctx *h = user;
    ctx *c = h->c;
    pipe_t *pp = &c->pipe;
    pthread_mutex_lock(&pp->lock);
    int call = ++pp->calls;
    bool hold = pp->how == HOLD_FIRST && !pp->held;
    if (hold) {
        pp->held = d;
        c->held_bus = h->bus;
    }
    pthread_mutex_unlock(&pp->lock);
    if (pp->how == BAD_OUTPUTS) {
        eddy_error err = {0};
        eddy_event *ev = make_event("bad", "t.out");
        eddy_status *b = pp->bad;
        b[0] = eddy_delivery_emit(d, "out..a", ev, &err);
        b[1] = eddy_delivery_emit(d, "out.*", ev, &err);
        b[2] = eddy_delivery_emit(d, "", ev, &err);
        char big[2048];
        memset(big, 'x', sizeof(big));
        cr_assert_eq(eddy_event_set_data(ev, big, sizeof(big)), EDDY_OK);
        b[3] = eddy_delivery_emit(d, "out.a", ev, &err);
        eddy_event_free(ev);
        ev = eddy_event_new();
        b[4] = eddy_delivery_emit(d, "out.a", ev, &err);
        eddy_event_free(ev);
        pp->nbad = 5;
    }
    eddy_status st = emit_two(d);
    if (st != EDDY_OK)
        return st;
    if (hold)
        return EDDY_PENDING;
    if (pp->how == FAIL_FIRST && eddy_delivery_attempt(d) == 1)
        return EDDY_ERR_HANDLER_FAILED; /* its outputs are dropped */
    (void)call;
    return EDDY_OK;
}

static eddy_subscription_spec pipeline_spec(hctx *h, const char *name, eddy_shape shape) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = "in";
    sp.shape = shape;
    sp.group = shape == EDDY_COMPETING ? "pipe" : NULL;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = transform;
    sp.user = h;
    return sp;
}

static tbus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    cr_assert_eq(c->d->start(b, &err), EDDY_OK, "start: %s", err.detail);
    return b;
}

static void publish_inputs(ctx *c, tbus *b, int n) {
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "in%d", i);
        eddy_event *ev = make_event(id, "t.in");
        eddy_error err = {0};
        cr_assert_eq(c->d->publish(b, "in", ev, &err), EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
    }
}

/* How many entries of {ns}:s:<subject> carry event id `id` (NULL: all entries). */
static int entries(ctx *c, const char *subject, const char *id) {
    redisReply *r = raw_cmdf(c->url, "XRANGE {%s}:s:%s - +", c->ns, subject);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "XRANGE");
    int n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *f = r->element[i]->element[1];
        for (size_t j = 0; j + 1 < f->elements; j += 2)
            if (strcmp(f->element[j]->str, "id") == 0 &&
                (!id || strcmp(f->element[j + 1]->str, id) == 0))
                n++;
    }
    freeReplyObject(r);
    return n;
}

/* The group's pending count on {ns}:s:in (-1 when there is no group yet). */
static long long pending(ctx *c, const char *group) {
    redisReply *r = raw_cmdf(c->url, "XPENDING {%s}:s:in %s", c->ns, group);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    freeReplyObject(r);
    return n;
}

typedef struct done_wait {
    ctx *c;
    tbus *b;
    const char *sub;
    const char *group;
    int handled;
} done_wait;

/* The subscription handled `handled` deliveries and its group has nothing pending: every
 * success was committed. */
static bool all_committed(void *arg) {
    done_wait *w = arg;
    eddy_consumer_stats st;
    return w->c->d->stats(w->b, w->sub, &st) == EDDY_OK && st.handled >= (uint64_t)w->handled &&
           pending(w->c, w->group) == 0;
}

static void expect_once_each(ctx *c, int n, int per_input) {
    for (int i = 0; i < n; i++) {
        char id[48];
        snprintf(id, sizeof(id), "in%d.a", i);
        cr_expect_eq(entries(c, "out.a", id), per_input, "%s", id);
        snprintf(id, sizeof(id), "in%d.b", i);
        cr_expect_eq(entries(c, "out.b", id), per_input, "%s", id);
    }
    cr_expect_eq(entries(c, "out.a", NULL), n * per_input);
    cr_expect_eq(entries(c, "out.b", NULL), n * per_input);
}

#define N 20

ParameterizedTestParameters(txn, outputs_appear_exactly_once) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, outputs_appear_exactly_once, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.pipe.how = EMIT_OK;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp[2];
    sp[0] = pipeline_spec(&c.h[0], "pipe", EDDY_COMPETING);
    /* A pattern subscription older than the output subjects: the commit registers them. */
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "watch";
    sp[1].pattern = "out.*";
    sp[1].shape = EDDY_COMPETING;
    sp[1].group = "watch";
    sp[1].handler = rec_handler;
    sp[1].user = &r;
    tbus *b = must_bus(&c, sp, 2);
    publish_inputs(&c, b, N);
    done_wait w = {&c, b, "pipe", "pipe", N};
    cr_assert(eddy_test_wait_until(all_committed, &w, 30000), "not all inputs committed");
    expect_once_each(&c, N, 1);
    cr_expect(rec_wait(&r, 2 * N, 30000), "the watcher got %d of %d outputs", rec_count(&r), 2 * N);
    cr_expect_eq(rec_seen(&r, "in0.a"), 1);
    cr_expect_eq(rec_seen(&r, "in19.b"), 1);
    redisReply *m = raw_cmdf(c.url, "SISMEMBER {%s}:subjects out.b", c.ns);
    cr_expect(m && m->type == REDIS_REPLY_INTEGER && m->integer == 1, "out.b registered");
    freeReplyObject(m);
    c.d->stop(b);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(txn, a_failed_attempt_appends_nothing) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, a_failed_attempt_appends_nothing, .timeout = 90) {
    ctx c;
    setup(&c, p);
    c.pipe.how = FAIL_FIRST;
    c.s.redelivery_idle_ms = 1000;
    eddy_subscription_spec sp = pipeline_spec(&c.h[0], "pipe", EDDY_COMPETING);
    tbus *b = must_bus(&c, &sp, 1);
    publish_inputs(&c, b, 5);
    done_wait w = {&c, b, "pipe", "pipe", 5};
    cr_assert(eddy_test_wait_until(all_committed, &w, 60000), "not all inputs committed");
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "pipe", &st), EDDY_OK);
    cr_expect_eq(st.failed, 5);
    cr_expect_eq(st.redelivered, 5);
    expect_once_each(&c, 5, 1);
    c.d->stop(b);
    c.d->free(b);
}

static bool held_and_taken(void *arg) {
    ctx *c = arg;
    pthread_mutex_lock(&c->pipe.lock);
    bool taken = c->pipe.held && c->pipe.calls >= 2;
    pthread_mutex_unlock(&c->pipe.lock);
    return taken && pending(c, "pipe") == 0; /* the other consumer committed it */
}

static bool told_again(void *arg) {
    ctx *c = arg;
    return atomic_load(&c->pipe.again) >= 1;
}

static void finish_ok(void *arg) { eddy_delivery_finish(arg, EDDY_OK); }

/* The first handler overruns redelivery_idle_ms; the other bus's consumer claims the input,
 * handles it and commits. The first one's commit then comes: it only acknowledges. */
ParameterizedTestParameters(txn, an_input_handled_twice_has_its_outputs_once) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, an_input_handled_twice_has_its_outputs_once, .timeout = 90) {
    ctx c;
    setup(&c, p);
    c.pipe.how = HOLD_FIRST;
    c.s.redelivery_idle_ms = 1000;
    eddy_subscription_spec sp[2] = {pipeline_spec(&c.h[0], "pipe", EDDY_COMPETING),
                                    pipeline_spec(&c.h[1], "pipe", EDDY_COMPETING)};
    tbus *b[2] = {must_bus(&c, &sp[0], 1), must_bus(&c, &sp[1], 1)};
    publish_inputs(&c, b[0], 1);
    cr_assert(eddy_test_wait_until(held_and_taken, &c, 40000),
              "the held input was not claimed and committed by the other consumer");
    cr_expect_eq(entries(&c, "out.a", "in0.a"), 1);
    /* The holder finishes it, where its handlers run. */
    c.d->run(b[c.held_bus], finish_ok, c.pipe.held);
    cr_assert(eddy_test_wait_until(told_again, &c, 20000),
              "the late commit was not answered 'committed already'");
    expect_once_each(&c, 1, 1);
    for (int i = 0; i < 2; i++) {
        c.d->stop(b[i]);
        c.d->free(b[i]);
    }
}

/* Two fan-out subscribers (two buses, each its own group): each group commits its outputs. */
ParameterizedTestParameters(txn, fanout_groups_commit_each_their_own) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, fanout_groups_commit_each_their_own, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.pipe.how = EMIT_OK;
    eddy_subscription_spec sp[2] = {pipeline_spec(&c.h[0], "fan", EDDY_FANOUT),
                                    pipeline_spec(&c.h[1], "fan", EDDY_FANOUT)};
    tbus *b[2] = {must_bus(&c, &sp[0], 1), must_bus(&c, &sp[1], 1)};
    publish_inputs(&c, b[0], 5);
    for (int i = 0; i < 2; i++) {
        eddy_consumer_stats st;
        long long until = eddy_test_now_ms() + 30000;
        while ((c.d->stats(b[i], "fan", &st) != EDDY_OK || st.handled < 5) &&
               eddy_test_now_ms() < until) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        cr_assert_eq(st.handled, 5, "bus %d handled %llu", i, (unsigned long long)st.handled);
    }
    /* Both groups' commits are answered once each bus's group has nothing pending. */
    long long until = eddy_test_now_ms() + 30000;
    while (entries(&c, "out.a", NULL) < 10 && eddy_test_now_ms() < until) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    expect_once_each(&c, 5, 2);
    for (int i = 0; i < 2; i++) {
        c.d->stop(b[i]);
        c.d->free(b[i]);
    }
}

ParameterizedTestParameters(txn, bad_outputs_are_refused_before_anything_is_sent) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, bad_outputs_are_refused_before_anything_is_sent, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.pipe.how = BAD_OUTPUTS;
    c.s.max_event_size = 1024;
    eddy_subscription_spec sp = pipeline_spec(&c.h[0], "pipe", EDDY_COMPETING);
    tbus *b = must_bus(&c, &sp, 1);
    publish_inputs(&c, b, 1);
    done_wait w = {&c, b, "pipe", "pipe", 1};
    cr_assert(eddy_test_wait_until(all_committed, &w, 30000), "not committed");
    cr_expect_eq(c.pipe.nbad, 5);
    cr_expect_eq(c.pipe.bad[0], EDDY_ERR_INVALID_SUBJECT, "%s", eddy_status_name(c.pipe.bad[0]));
    cr_expect_eq(c.pipe.bad[1], EDDY_ERR_INVALID_SUBJECT, "%s", eddy_status_name(c.pipe.bad[1]));
    cr_expect_eq(c.pipe.bad[2], EDDY_ERR_INVALID_SUBJECT, "%s", eddy_status_name(c.pipe.bad[2]));
    cr_expect_eq(c.pipe.bad[3], EDDY_ERR_TOO_LARGE, "%s", eddy_status_name(c.pipe.bad[3]));
    cr_expect_eq(c.pipe.bad[4], EDDY_ERR_INVALID_EVENT, "%s", eddy_status_name(c.pipe.bad[4]));
    /* The refused outputs left nothing; the good ones after them were committed. */
    expect_once_each(&c, 1, 1);
    cr_expect_eq(entries(&c, "out.a", "bad"), 0);
    c.d->stop(b);
    c.d->free(b);
}

/* An AtMostOnce subscription (acknowledged when read) and a responder cannot emit. */
static atomic_int amo_status;
static eddy_status amo_handler(eddy_delivery *d, void *user) {
    (void)user;
    eddy_event *ev = make_event("x", "t.out");
    atomic_store(&amo_status, (int)eddy_delivery_emit(d, "out.a", ev, NULL));
    eddy_event_free(ev);
    return EDDY_OK;
}

static bool amo_ran(void *arg) {
    (void)arg;
    return atomic_load(&amo_status) != -1;
}

ParameterizedTestParameters(txn, at_most_once_cannot_emit) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, txn, at_most_once_cannot_emit, .timeout = 60) {
    ctx c;
    setup(&c, p);
    atomic_store(&amo_status, -1);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "amo";
    sp.pattern = "in";
    sp.group = "amo";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.handler = amo_handler;
    tbus *b = must_bus(&c, &sp, 1);
    publish_inputs(&c, b, 1);
    cr_assert(eddy_test_wait_until(amo_ran, NULL, 30000));
    cr_expect_eq(atomic_load(&amo_status), EDDY_ERR_ILLEGAL_STATE);
    c.d->stop(b);
    c.d->free(b);
    cr_expect_eq(entries(&c, "out.a", NULL), 0);
}

/* ---- the memory engine's commit answers as the Lua does ---------------------------------- */

Test(txn, memory_and_redis_agree, .timeout = 60) {
    ctx cm, crd;
    combo m = {0, 0}, rd = {0, 1};
    setup(&cm, &m);
    setup(&crd, &rd);
    snprintf(crd.ns, sizeof(crd.ns), "%s", cm.ns);
    /* Load the library on both (opening a store does). */
    eddy_store *sm = NULL, *sr = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&cm.s, &sm, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_open(&crd.s, &sr, &err), EDDY_OK, "%s", err.detail);
    /* Words split on '|'; "C" names the commit, kN is a key of this test's namespace, and ""
     * an empty argument. k1 is the input stream (group g), k2 the subject set, k3 and k4
     * outputs. */
    const char *calls[] = {
        "XADD|k1|1-1|f|v",
        "XADD|k1|1-2|f|v",
        "XADD|k1|1-3|f|v",
        "XGROUP|CREATE|k1|g|0",
        "XREADGROUP|GROUP|g|me|COUNT|2|STREAMS|k1|>",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|2|f|v",
        "XLEN|k3",
        "SMEMBERS|k2",
        "XPENDING|k1|g",
        "C|4|k1|k2|k3|k4|g|1-2|5|2|out.a|4|f|v|g|w|out.b|2|h|x",
        "XLEN|k3",
        "XLEN|k4",
        "C|3|k1|k2|k3|g|1-3|0|1|out.a|2|f|v",
        "XLEN|k3",
        "C|3|k1|k2|k3|g|9-9|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|nog|1-1|0|1|out.a|2|f|v",
        "C|3|k9|k2|k3|g|1-1|0|1|out.a|2|f|v",
        "C|2|k1|k2|g|1-1|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-1|0|0|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-1|0|2|out.a|2|f|v",
        "C|3|k1|k2|k3||1-1|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1x1|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-|0|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-1|x|1|out.a|2|f|v",
        "C|3|k1|k2|k3|g|1-1|0|1||2|f|v",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|3|f|v|w",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|4|f|v",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|0",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a|2|f|v|extra",
        "C|3|k1|k2|k3|g|1-1|0|1|out.a",
        "C|3|k1|k2|k3|g|1-1|0",
        "SET|k6|x",
        "C|3|k1|k6|k3|g|1-1|0|1|out.a|2|f|v",
        "C|3|k1|k2|k6|g|1-1|0|1|out.a|2|f|v",
        "C|3|k6|k2|k3|g|1-1|0|1|out.a|2|f|v",
        "XLEN|k3",
        "XPENDING|k1|g",
        /* two outputs to one stream with one subject, then two to k7 (250 entries: three
         * emulated nodes) with a bound that trims, then an output to the input's stream */
        "XADD|k1|1-4|f|v",
        "XADD|k1|1-5|f|v",
        "XREADGROUP|GROUP|g|me|STREAMS|k1|>",
        "C|4|k1|k2|k5|k5|g|1-3|1|2|out.c|2|f|v|out.c|2|f|w",
        "XLEN|k5",
        "SCARD|k2",
        "SISMEMBER|k2|out.c",
        "C|4|k1|k2|k7|k7|g|1-4|150|2|out.e|2|f|v|out.e|2|f|w",
        "XLEN|k7",
        "XRANGE|k7|-|+|COUNT|1",
        "C|3|k1|k2|k1|g|1-5|0|1|out.d|2|f|v",
        "XLEN|k1",
        "XPENDING|k1|g",
        "SCARD|k2",
    };
    for (int i = 1; i <= 250; i++) {
        redisReply *a = raw_cmdf(cm.url, "XADD {%s}:k7 1-%d f %d", cm.ns, i, i);
        redisReply *b = raw_cmdf(crd.url, "XADD {%s}:k7 1-%d f %d", cm.ns, i, i);
        cr_assert(a && b && a->type == REDIS_REPLY_STRING && b->type == REDIS_REPLY_STRING);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        char copy[256];
        snprintf(copy, sizeof(copy), "%s", calls[i]);
        const char *argv[40];
        char words[40][400];
        int argc = 0;
        for (char *w = copy; w && argc < 39; argc++) {
            char *bar = strchr(w, '|');
            if (bar)
                *bar = '\0';
            if (strcmp(w, "C") == 0) {
                argv[argc++] = "FCALL";
                snprintf(words[argc], sizeof(words[argc]), "%s", EDDY__COMMIT_FN);
            } else if (w[0] == 'k' && w[1] >= '0' && w[1] <= '9') {
                snprintf(words[argc], sizeof(words[argc]), "{%s}:%s", cm.ns, w);
            } else {
                snprintf(words[argc], sizeof(words[argc]), "%s", w);
            }
            argv[argc] = words[argc];
            w = bar ? bar + 1 : NULL;
        }
        redisReply *a = raw_cmd(cm.url, argc, argv), *b = raw_cmd(crd.url, argc, argv);
        char ta[2048] = "", tb[2048] = "";
        raw_render(ta, sizeof(ta), a, true);
        raw_render(tb, sizeof(tb), b, true);
        cr_expect_str_eq(ta, tb, "%s", calls[i]);
        if (i == 5 || i == 6)
            cr_expect_str_eq(ta, i == 5 ? ":1 " : ":0 ", "%s: the second call appends nothing",
                             calls[i]);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    redisReply *trimmed = raw_cmdf(cm.url, "XLEN {%s}:k7", cm.ns);
    cr_expect(trimmed && trimmed->integer == 152, "the bound dropped one node of k7: %lld",
              trimmed ? trimmed->integer : -1);
    freeReplyObject(trimmed);
    eddy_store_close(sm);
    eddy_store_close(sr);
}
