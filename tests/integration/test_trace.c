/* SPDX-License-Identifier: BSD-3-Clause */
/* Conveniences on both front ends and both backends: a request's trace context reaches its
 * reply without the responder doing anything, and through eddy_delivery_new_reply; a handler
 * continues the trace of what it handles into what it publishes (eddy_event_continue_trace);
 * the buses' event builders fill a UUIDv7 id and the settings' source; a malformed traceparent
 * is refused at publish. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TS "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"

typedef struct ctx {
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_settings(&c->s, p->backend == 1, "trace", c->url, sizeof(c->url), c->ns,
                       sizeof(c->ns));
    c->s.block_ms = 200;
}

/* Answers "plain" with a reply it builds itself, "built" through eddy_delivery_new_reply, and
 * "own" with a reply in a trace of its own. */
static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    const char *type = eddy_event_type(eddy_delivery_event(d));
    eddy_error err = {0};
    if (strcmp(type, "built") == 0) {
        eddy_status st = eddy_delivery_new_reply(d, "answer", reply, &err);
        cr_assert_eq(st, EDDY_OK, "new_reply: %s", err.detail);
        return eddy_event_set_data(*reply, "ok", 2);
    }
    eddy_event *r = make_event("r1", "answer");
    if (strcmp(type, "own") == 0)
        cr_assert_eq(eddy_event_set_extension(
                         r, EDDY_TRACEPARENT,
                         "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", &err),
                     EDDY_OK);
    *reply = r;
    return EDDY_OK;
}

static eddy_event *ask(ctx *c, tbus *b, const char *type) {
    eddy_event *req = make_event("q1", type);
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_extension(req, EDDY_TRACEPARENT, TP, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(eddy_event_set_extension(req, EDDY_TRACESTATE, TS, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_request_opts o = {eddy_deadline_in(20000), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_status st = c->d->request(b, "svc.ask", req, &o, &reply, &err);
    cr_assert_eq(st, EDDY_OK, "request %s: %s (%s)", type, eddy_status_name(st), err.detail);
    eddy_event_free(req);
    return reply;
}

ParameterizedTestParameters(trace, a_reply_carries_its_requests_context) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, trace, a_reply_carries_its_requests_context, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "svc";
    sp.pattern = "svc.ask";
    sp.shape = EDDY_COMPETING;
    sp.group = "svc";
    sp.responder = respond;
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c.d->start(b, &err), EDDY_OK, "%s", err.detail);

    eddy_event *r = ask(&c, b, "plain");
    cr_expect_str_eq(eddy_event_extension(r, EDDY_TRACEPARENT), TP);
    cr_expect_str_eq(eddy_event_extension(r, EDDY_TRACESTATE), TS);
    eddy_event_free(r);

    r = ask(&c, b, "built");
    cr_expect_str_eq(eddy_event_extension(r, EDDY_TRACEPARENT), TP);
    cr_expect_str_eq(eddy_event_extension(r, EDDY_TRACESTATE), TS);
    cr_expect_str_eq(eddy_event_source(r), "/tests");
    cr_expect_str_eq(eddy_event_type(r), "answer");
    cr_expect_eq(strlen(eddy_event_id(r)), 36, "a UUID: %s", eddy_event_id(r));
    cr_expect_eq(eddy_event_id(r)[14], '7', "version 7: %s", eddy_event_id(r));
    eddy_event_free(r);

    r = ask(&c, b, "own");
    cr_expect_str_eq(eddy_event_extension(r, EDDY_TRACEPARENT),
                     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
                     "the responder's own context stays");
    cr_expect_null(eddy_event_extension(r, EDDY_TRACESTATE));
    eddy_event_free(r);
    c.d->stop(b);
    c.d->free(b);
}

/* A handler that publishes a follow-up in the trace of what it handles. */
typedef struct relay {
    ctx *c;
    tbus *b;
    _Atomic eddy_status published; /* set after the publish returned, maybe after it arrived */
} relay;

static bool relayed(void *user) {
    return atomic_load(&((relay *)user)->published) != EDDY_ERR_ILLEGAL_STATE;
}

static eddy_status forward(eddy_delivery *d, void *user) {
    relay *rl = user;
    eddy_error err = {0};
    eddy_event *out = NULL;
    eddy_status st = rl->c->d == &blocking_driver
                         ? eddy_bus_new_event(rl->c->d->native(rl->b), "followup", &out, &err)
                         : eddy_rbus_new_event(rl->c->d->native(rl->b), "followup", &out, &err);
    cr_assert_eq(st, EDDY_OK, "new_event: %s", err.detail);
    cr_assert_eq(eddy_event_continue_trace(out, eddy_delivery_event(d), &err), EDDY_OK, "%s",
                 err.detail);
    if (rl->c->d == &blocking_driver)
        st = eddy_bus_publish(rl->c->d->native(rl->b), "next.step", out, NULL, 0, &err);
    else
        st = eddy_rbus_publish(rl->c->d->native(rl->b), "next.step", out, NULL, NULL, &err);
    atomic_store(&rl->published, st);
    eddy_event_free(out);
    return EDDY_OK;
}

ParameterizedTestParameters(trace, a_handler_continues_the_trace) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, trace, a_handler_continues_the_trace, .timeout = 60) {
    ctx c;
    setup(&c, p);
    relay rl = {.c = &c, .published = EDDY_ERR_ILLEGAL_STATE};
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp[2];
    eddy_subscription_spec_init(&sp[0]);
    sp[0].name = "relay";
    sp[0].pattern = "first.step";
    sp[0].shape = EDDY_COMPETING;
    sp[0].group = "relay";
    sp[0].handler = forward;
    sp[0].user = &rl;
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "end";
    sp[1].pattern = "next.step";
    sp[1].shape = EDDY_COMPETING;
    sp[1].group = "end";
    sp[1].handler = rec_handler;
    sp[1].user = &r;
    eddy_error err = {0};
    cr_assert_eq(c.d->bus_new(&c.s, sp, 2, &rl.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c.d->start(rl.b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("start", "t");
    cr_assert_eq(eddy_event_set_extension(ev, EDDY_TRACEPARENT, TP, &err), EDDY_OK);
    cr_assert_eq(c.d->publish(rl.b, "first.step", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(rec_wait(&r, 1, 20000), "the follow-up arrived");
    cr_assert(eddy_test_wait_until(relayed, &rl, 20000));
    cr_expect_eq(atomic_load(&rl.published), EDDY_OK);
    c.d->stop(rl.b);
    /* The follow-up as stored: the same trace, the builder's id and source. */
    redisReply *x = raw_cmdf(c.url, "XRANGE {%s}:s:next.step - +", c.ns);
    cr_assert(x->type == REDIS_REPLY_ARRAY && x->elements == 1);
    const redisReply *f = x->element[0]->element[1];
    const char *tp = NULL, *source = NULL;
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        if (strcmp(f->element[i]->str, "x-" EDDY_TRACEPARENT) == 0)
            tp = f->element[i + 1]->str;
        if (strcmp(f->element[i]->str, "source") == 0)
            source = f->element[i + 1]->str;
    }
    cr_expect(tp && strcmp(tp, TP) == 0, "traceparent %s", tp ? tp : "(none)");
    cr_expect(source && strcmp(source, "/tests") == 0);
    freeReplyObject(x);
    c.d->free(rl.b);
    rec_destroy(&r);
}

ParameterizedTestParameters(trace, builders_need_a_source) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, trace, builders_need_a_source, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.source = NULL;
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(c.d->bus_new(&c.s, NULL, 0, &b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *out = (eddy_event *)1;
    eddy_status st = c.d == &blocking_driver ? eddy_bus_new_event(c.d->native(b), "t", &out, &err)
                                             : eddy_rbus_new_event(c.d->native(b), "t", &out, &err);
    cr_expect_eq(st, EDDY_ERR_INVALID_SPEC, "%s", eddy_status_name(st));
    cr_expect(strstr(err.detail, "settings.source"), "%s", err.detail);
    cr_expect_null(out);
    c.d->free(b);
}

/* Publishes what it receives again, keeping the outcome. */
typedef struct again {
    ctx *c;
    tbus *b;
    atomic_int done;
    eddy_status st;
    eddy_error err;
} again;

static eddy_status republish(eddy_delivery *d, void *user) {
    again *a = user;
    const eddy_event *ev = eddy_delivery_event(d);
    a->st = a->c->d == &blocking_driver
                ? eddy_bus_publish(a->c->d->native(a->b), "out", ev, NULL, 0, &a->err)
                : eddy_rbus_publish(a->c->d->native(a->b), "out", ev, NULL, NULL, &a->err);
    atomic_fetch_add(&a->done, 1);
    return EDDY_OK;
}

static bool republished(void *user) { return atomic_load(&((again *)user)->done) > 0; }

ParameterizedTestParameters(trace, a_malformed_traceparent_is_not_published) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, trace, a_malformed_traceparent_is_not_published, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_error err = {0};
    /* Set by hand: refused, naming what is wrong. */
    eddy_event *ev = make_event("e1", "t");
    const char *bad[] = {
        "00-abc",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    const char *why[] = {"not version-traceid", "trace-id is all zeros", "parent-id is all zeros",
                         "trace-id is not 32 lowercase", "version"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(eddy_event_set_extension(ev, EDDY_TRACEPARENT, bad[i], &err),
                     EDDY_ERR_INVALID_EVENT, "%s", bad[i]);
        cr_expect(strstr(err.detail, why[i]), "%s: %s", bad[i], err.detail);
    }
    cr_expect_null(eddy_event_extension(ev, EDDY_TRACEPARENT), "refused, not set");
    eddy_event_free(ev);

    /* Written by another producer: delivered as it is, refused when published again. */
    again a = {.c = &c};
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "in";
    sp.pattern = "in";
    sp.shape = EDDY_COMPETING;
    sp.group = "in";
    sp.handler = republish;
    sp.user = &a;
    cr_assert_eq(c.d->bus_new(&c.s, &sp, 1, &a.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c.d->start(a.b, &err), EDDY_OK, "%s", err.detail);
    redisReply *x =
        raw_cmdf(c.url,
                 "XADD {%s}:s:in * specversion 1.0 id x source /s type t "
                 "x-traceparent 00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                 c.ns);
    cr_assert_eq(x->type, REDIS_REPLY_STRING);
    freeReplyObject(x);
    cr_assert(eddy_test_wait_until(republished, &a, 20000));
    cr_expect_eq(a.st, EDDY_ERR_INVALID_EVENT, "%s", eddy_status_name(a.st));
    cr_expect(strstr(a.err.detail, "trace-id is all zeros"), "%s", a.err.detail);
    c.d->stop(a.b);
    c.d->free(a.b);
}
