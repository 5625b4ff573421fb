/* SPDX-License-Identifier: BSD-3-Clause */
/* Request/reply (spec/request-reply.txt), one table of scenarios run on both front ends (the
 * driver, driver.h) and both backends: answers, refusals before sending, no responders,
 * handler-only subjects, responder failures, late replies counted Unclaimed, counters by
 * conversation, the rules the bus enforces, stop, many threads, request_value, and across
 * processes on a real redis-server. Cancel tokens are the blocking front end's (the reactive
 * front end cancels through a handle: test_reactive.c). A slow responder runs on a bus of its
 * own, so that on the reactive front end it holds up its own loop and not the requester's. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/msgpack.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
static combo memory_combos[] = {{0, 0}, {1, 0}};
static combo redis_combos[] = {{0, 1}, {1, 1}};
static int backends[] = {0, 1}; /* memory, redis: blocking-only scenarios */

typedef struct ctx {
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), "rr");
    if (p->backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests/reqrep";
    c->s.block_ms = 200;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend ? "redis" : "memory";
}

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The test responder: behaviour chosen by the request's type. */
static atomic_int responder_calls;
static atomic_long slow_ms;

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    atomic_fetch_add(&responder_calls, 1);
    const eddy_event *req = eddy_delivery_event(d);
    const char *type = eddy_event_type(req);
    if (strcmp(type, "t.fail") == 0)
        return EDDY_ERR_HANDLER_FAILED; /* "the table is on fire": stays in this process */
    if (strcmp(type, "t.slow") == 0)
        pause_ms(atomic_load(&slow_ms));
    eddy_event *r = eddy_event_new();
    char id[80];
    snprintf(id, sizeof(id), "re-%s", eddy_event_id(req));
    eddy_event_set_id(r, id);
    eddy_event_set_source(r, "/tests/responder");
    if (strcmp(type, "t.invalid") != 0) /* no type: not a valid event */
        eddy_event_set_type(r, "t.reply");
    if (strcmp(type, "t.reserved") == 0)
        eddy_event_set_extension(r, "messagingfailed", "true", NULL);
    size_t len;
    const void *data = eddy_event_data(req, &len);
    char body[256];
    int n = snprintf(body, sizeof(body), "answer:%.*s", (int)len, (const char *)data);
    eddy_event_set_data(r, body, (size_t)n);
    *reply = r;
    return EDDY_OK;
}

static eddy_subscription_spec responder_spec(const char *name, const char *pattern,
                                             const char *group) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.shape = EDDY_COMPETING;
    sp.group = group;
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = respond;
    return sp;
}

static tbus *new_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

static tbus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = new_bus(c, specs, n);
    eddy_error err = {0};
    eddy_status st = c->d->start(b, &err);
    cr_assert_eq(st, EDDY_OK, "start: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

static eddy_status ask(ctx *c, tbus *b, const char *subject, const char *id, const char *type,
                       long long timeout_ms, const char *name, eddy_event **reply) {
    eddy_event *ev = make_event(id, type);
    eddy_request_opts o = {eddy_deadline_in(timeout_ms), name, NULL};
    eddy_error err = {0};
    eddy_status st = c->d->request(b, subject, ev, &o, reply, &err);
    eddy_event_free(ev);
    return st;
}

static eddy_request_stats rstats(ctx *c, tbus *b, const char *name) {
    eddy_request_stats s;
    cr_assert_eq(c->d->request_stats(b, name, &s), EDDY_OK);
    return s;
}

static eddy_consumer_stats cstats(ctx *c, tbus *b, const char *name) {
    eddy_consumer_stats s;
    cr_assert_eq(c->d->stats(b, name, &s), EDDY_OK, "no subscription '%s'", name);
    return s;
}

static void expect_identity(ctx *c, tbus *b, const char *name) {
    eddy_request_stats s = rstats(c, b, name);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed,
                 "%s: sent %lu != %lu + %lu + %lu + %lu", name ? name : "total",
                 (unsigned long)s.sent, (unsigned long)s.answered, (unsigned long)s.no_responders,
                 (unsigned long)s.no_reply, (unsigned long)s.failed);
}

typedef struct stats_wait {
    ctx *c;
    tbus *b;
    const char *sub;
    uint64_t n;
} stats_wait;

static bool replied_reached(void *arg) {
    stats_wait *w = arg;
    return cstats(w->c, w->b, w->sub).replied >= w->n;
}

/* A reply is counted Replied when the backend confirms storing it, which may be just after
 * the requester already has it. */
static void wait_replied(ctx *c, tbus *b, const char *sub, uint64_t n) {
    stats_wait w = {c, b, sub, n};
    cr_expect(eddy_test_wait_until(replied_reached, &w, 20000), "replies stored: fewer than %lu",
              (unsigned long)n);
}

static bool unclaimed_reached(void *arg) {
    stats_wait *w = arg;
    return rstats(w->c, w->b, NULL).unclaimed >= w->n;
}

ParameterizedTestParameters(reqrep, answered) { return cr_make_param_array(combo, combos, 4); }
ParameterizedTest(combo *p, reqrep, answered, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_assert_eq(ask(&c, b, "tables.setup", "q1", "t.echo", 10000, NULL, &reply), EDDY_OK);
    cr_assert(reply);
    size_t len;
    const char *data = eddy_event_data(reply, &len);
    cr_expect_eq(len, strlen("answer:payload-q1"));
    cr_expect(memcmp(data, "answer:payload-q1", len) == 0);
    cr_expect_str_eq(eddy_event_id(reply), "re-q1");
    eddy_event_free(reply);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.answered, 1);
    wait_replied(&c, b, "setup", 1);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, refused_before_sending_in_order_and_not_counted) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, refused_before_sending_in_order_and_not_counted,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = new_bus(&c, &sp, 1);
    eddy_error err = {0};
    eddy_event *ev = make_event("q", "t.echo");
    eddy_event *reply = NULL;
    /* Not started: but the deadline checks come first. */
    cr_expect_eq(c.d->request(b, "tables.setup", ev, NULL, &reply, &err), EDDY_ERR_NO_DEADLINE);
    eddy_request_opts o = {0, NULL, NULL};
    cr_expect_eq(c.d->request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NO_DEADLINE);
    o.deadline_ms = eddy_now_ms() - 1;
    cr_expect_eq(c.d->request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NO_REPLY);
    o.deadline_ms = eddy_deadline_in(10000);
    cr_expect_eq(c.d->request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NOT_READY);
    cr_expect_eq(c.d->request(b, "tables.setup", NULL, &o, &reply, &err), EDDY_ERR_NOT_READY,
                 "the state comes before the event");
    eddy_error start_err = {0};
    cr_assert_eq(c.d->start(b, &start_err), EDDY_OK, "%s", start_err.detail);
    cr_expect_eq(c.d->request(b, "tables.setup", NULL, &o, &reply, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    /* The publish checks: refused too, even when nothing is subscribed to the subject. */
    cr_expect_eq(c.d->request(b, "tables..setup", ev, &o, &reply, &err), EDDY_ERR_INVALID_SUBJECT);
    eddy_event *bad = eddy_event_new();
    cr_expect_eq(c.d->request(b, "nobody.here", bad, &o, &reply, &err), EDDY_ERR_INVALID_EVENT);
    eddy_event_free(bad);
    eddy_settings small = c.s;
    small.max_event_size = 64;
    eddy_event_set_extension(ev, "messagingfailed", "true", NULL);
    cr_expect_eq(c.d->request(b, "tables.setup", ev, &o, &reply, &err),
                 EDDY_ERR_RESERVED_ATTRIBUTE);
    cr_expect_eq(c.d->publish(b, "tables.setup", ev, &err), EDDY_ERR_RESERVED_ATTRIBUTE,
                 "publish refuses it too");
    {
        /* A fired cancel token, on either front end (the token is both front ends'). */
        eddy_event *fine = make_event("tok", "t.echo");
        o.cancel = eddy_cancel_new();
        eddy_cancel_fire(o.cancel);
        cr_expect_eq(c.d->request(b, "tables.setup", fine, &o, &reply, &err), EDDY_ERR_NO_REPLY);
        eddy_cancel_free(o.cancel);
        o.cancel = NULL;
        eddy_event_free(fine);
    }
    cr_expect_null(reply);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent + s.answered + s.no_responders + s.no_reply + s.failed, 0,
                 "refusals are not counted");
    cr_expect_eq(atomic_load(&responder_calls), 0);
    eddy_event_free(ev);
    c.d->free(b);
    /* Too large, on a bus with a small limit. */
    tbus *tiny = NULL;
    cr_assert_eq(c.d->bus_new(&small, NULL, 0, &tiny, &err), EDDY_OK);
    cr_assert_eq(c.d->start(tiny, &err), EDDY_OK);
    eddy_event *big = make_event("big-request-with-a-payload-longer-than-the-limit", "t.echo");
    cr_expect_eq(c.d->request(tiny, "tables.setup", big, &o, &reply, &err), EDDY_ERR_TOO_LARGE);
    eddy_event_free(big);
    s = rstats(&c, tiny, NULL);
    cr_expect_eq(s.sent, 0);
    c.d->free(tiny);
}

Test(reqrep, cancel_token_fired_before_sending_is_refused, .timeout = 30) {
    ctx c;
    setup(&c, &(combo){0, 0});
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("q", "t.echo");
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, eddy_cancel_new()};
    eddy_cancel_fire(o.cancel);
    eddy_event *reply = NULL;
    cr_expect_eq(c.d->request(b, "tables.setup", ev, &o, &reply, NULL), EDDY_ERR_NO_REPLY);
    eddy_cancel_free(o.cancel);
    eddy_event_free(ev);
    cr_expect_eq(rstats(&c, b, NULL).sent, 0);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, stopped_bus_is_not_ready) {
    return cr_make_param_array(combo, memory_combos, 2);
}
ParameterizedTest(combo *p, reqrep, stopped_bus_is_not_ready, .timeout = 30) {
    ctx c;
    setup(&c, p);
    tbus *b = must_bus(&c, NULL, 0);
    c.d->stop(b);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "x", "q", "t.echo", 1000, NULL, &reply), EDDY_ERR_NOT_READY);
    /* Started again: ready again. */
    cr_assert_eq(c.d->start(b, NULL), EDDY_OK);
    cr_expect_eq(ask(&c, b, "x", "q", "t.echo", 1000, NULL, &reply), EDDY_ERR_NO_RESPONDERS);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, no_responders_answers_at_once) {
    return cr_make_param_array(combo, combos, 4);
}
/* The deadline is far beyond the test's timeout: only an immediate answer passes. */
ParameterizedTest(combo *p, reqrep, no_responders_answers_at_once, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.other", "q", "t.echo", 600000, NULL, &reply),
                 EDDY_ERR_NO_RESPONDERS);
    /* Not from memory: a positive answer for one subject says nothing of another. */
    cr_expect_eq(ask(&c, b, "tables.setup", "q", "t.echo", 600000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(&c, b, "tables.other", "q", "t.echo", 600000, NULL, &reply),
                 EDDY_ERR_NO_RESPONDERS);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(s.no_responders, 2);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, handler_only_subject_gets_no_reply_at_the_deadline) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, handler_only_subject_gets_no_reply_at_the_deadline,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "audit";
    sp.pattern = "tables.*";
    sp.group = "auditors";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &r;
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    long long t0 = eddy_now_ms();
    cr_expect_eq(ask(&c, b, "tables.setup", "q", "t.echo", 400, NULL, &reply), EDDY_ERR_NO_REPLY);
    /* (the wait converts the wall-clock deadline to the monotonic clock: allow rounding) */
    cr_expect_geq(eddy_now_ms() - t0, 390, "answered before the deadline");
    cr_expect(rec_wait(&r, 1, 20000), "the request was delivered to the handler");
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.no_reply, 1);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(reqrep, responder_failure_answers_at_once) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, responder_failure_answers_at_once, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    const char *types[] = {"t.fail", "t.invalid", "t.reserved"};
    for (int i = 0; i < 3; i++) {
        eddy_event *reply = NULL;
        cr_expect_eq(ask(&c, b, "tables.setup", types[i], types[i], 600000, NULL, &reply),
                     EDDY_ERR_RESPONDER_FAILED, "%s", types[i]);
        cr_expect_null(reply, "no event reaches the caller");
    }
    cr_expect_eq(rstats(&c, b, NULL).failed, 3);
    wait_replied(&c, b, "setup", 3); /* the failure replies were stored */
    eddy_consumer_stats cs = cstats(&c, b, "setup");
    cr_expect_eq(cs.responder_failed, 3);
    cr_expect_eq(cs.replied, 3);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, late_reply_is_unclaimed_and_never_delivered_later) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, late_reply_is_unclaimed_and_never_delivered_later,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.workers = 1;
    atomic_store(&slow_ms, 700);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *server = must_bus(&c, &sp, 1);
    tbus *b = must_bus(&c, NULL, 0);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.setup", "late", "t.slow", 200, NULL, &reply),
                 EDDY_ERR_NO_REPLY);
    stats_wait w = {&c, b, NULL, 1};
    cr_assert(eddy_test_wait_until(unclaimed_reached, &w, 20000), "the late reply never came");
    /* The next request gets its own answer, not the late one. */
    cr_expect_eq(ask(&c, b, "tables.setup", "next", "t.echo", 10000, NULL, &reply), EDDY_OK);
    cr_assert(reply);
    cr_expect_str_eq(eddy_event_id(reply), "re-next");
    eddy_event_free(reply);
    expect_identity(&c, b, NULL);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.unclaimed, 1);
    cr_expect_eq(s.no_reply, 1);
    cr_expect_eq(s.answered, 1);
    c.d->free(b);
    c.d->free(server);
}

ParameterizedTestParameters(reqrep, counters_by_conversation_keep_the_identity) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, counters_by_conversation_keep_the_identity, .timeout = 60) {
    ctx c;
    setup(&c, p);
    const char *names[] = {"table-setup", "audit"};
    c.s.request_names = names;
    c.s.request_name_count = 2;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec specs[2] = {responder_spec("setup", "tables.setup", "ingress")};
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "audit-log";
    specs[1].pattern = "audit.>";
    specs[1].group = "auditors";
    specs[1].delivery = EDDY_AT_MOST_ONCE;
    specs[1].handler = rec_handler;
    specs[1].user = &r;
    tbus *b = must_bus(&c, specs, 2);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.setup", "a1", "t.echo", 10000, "table-setup", &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(&c, b, "tables.setup", "a2", "t.echo", 10000, "table-setup", &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(&c, b, "tables.setup", "f1", "t.fail", 10000, "table-setup", &reply),
                 EDDY_ERR_RESPONDER_FAILED);
    cr_expect_eq(ask(&c, b, "nobody.here", "n1", "t.echo", 10000, "audit", &reply),
                 EDDY_ERR_NO_RESPONDERS);
    cr_expect_eq(ask(&c, b, "audit.x", "r1", "t.echo", 300, "audit", &reply), EDDY_ERR_NO_REPLY);
    cr_expect_eq(ask(&c, b, "tables.setup", "u1", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(&c, b, "tables.setup", "b1", "t.echo", 10000, "bogus", &reply), EDDY_OK);
    eddy_event_free(reply);

    eddy_request_stats s = rstats(&c, b, "table-setup");
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(s.answered, 2);
    cr_expect_eq(s.failed, 1);
    s = rstats(&c, b, "audit");
    cr_expect_eq(s.sent, 2);
    cr_expect_eq(s.no_responders, 1);
    cr_expect_eq(s.no_reply, 1);
    s = rstats(&c, b, "");
    cr_expect_eq(s.sent, 2, "unnamed and undeclared requests share the unnamed row");
    cr_expect_eq(s.answered, 2);
    s = rstats(&c, b, "bogus");
    cr_expect_eq(s.sent, 0, "an undeclared name reads as zero");
    s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 7);
    expect_identity(&c, b, NULL);
    expect_identity(&c, b, "table-setup");
    expect_identity(&c, b, "audit");
    expect_identity(&c, b, "");
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(reqrep, brand_new_subject_matched_only_by_a_pattern_responder) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, brand_new_subject_matched_only_by_a_pattern_responder,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.>", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.never.seen.before", "q", "t.echo", 20000, NULL, &reply),
                 EDDY_OK);
    eddy_event_free(reply);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, responder_runs_for_plain_publish_reply_unaddressed) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, responder_runs_for_plain_publish_reply_unaddressed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("plain", "t.echo");
    cr_assert_eq(c.d->publish(b, "tables.setup", ev, NULL), EDDY_OK);
    eddy_event_free(ev);
    /* A request after it is answered after it (one reader, in order): then the publish ran. */
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.setup", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    wait_replied(&c, b, "setup", 1);
    eddy_consumer_stats cs = cstats(&c, b, "setup");
    cr_expect_eq(cs.unaddressed, 1);
    cr_expect_eq(cs.replied, 1);
    c.d->free(b);
}

static bool unaddressed_reached(void *arg) {
    stats_wait *w = arg;
    return cstats(w->c, w->b, w->sub).unaddressed >= w->n;
}

/* Each delivery to a responder is exactly one of Replied, Refused, Unaddressed, also when the
 * responder fails on a plain publish: its failure reply has nowhere to go. */
ParameterizedTestParameters(reqrep, responder_failing_on_a_plain_publish_counts_unaddressed) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, responder_failing_on_a_plain_publish_counts_unaddressed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("plain-fail", "t.fail");
    cr_assert_eq(c.d->publish(b, "tables.setup", ev, NULL), EDDY_OK);
    eddy_event_free(ev);
    stats_wait w = {&c, b, "setup", 1};
    cr_assert(eddy_test_wait_until(unaddressed_reached, &w, 20000), "not counted unaddressed");
    eddy_consumer_stats cs = cstats(&c, b, "setup");
    cr_expect_eq(cs.delivered, 1);
    cr_expect_eq(cs.failed, 1);
    cr_expect_eq(cs.responder_failed, 1);
    cr_expect_eq(cs.replied + cs.refused + cs.unaddressed, cs.delivered);
    c.d->free(b);
}

typedef struct overlap_wait {
    ctx *c;
    tbus *a, *b;
} overlap_wait;

static bool both_overlapping(void *arg) {
    overlap_wait *w = arg;
    return cstats(w->c, w->a, "a").overlapping >= 1 && cstats(w->c, w->b, "b").overlapping >= 1;
}

/* Responders of different groups in different buses (processes, by the registry) whose patterns
 * can select one subject are both accepted, and each pair is warned about and counted once;
 * the same group is a competing member, and patterns that cannot meet are no pair. */
ParameterizedTestParameters(reqrep, overlapping_responders_of_other_buses_are_counted_once) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, overlapping_responders_of_other_buses_are_counted_once,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.lease_ms = 600; /* heartbeats, and so the checks, every 200 ms */
    eddy_subscription_spec sa = responder_spec("a", "ov.*", "ga");
    eddy_subscription_spec sb = responder_spec("b", "ov.x", "gb");
    eddy_subscription_spec sc = responder_spec("c", "ov.y", "ga");
    tbus *a = must_bus(&c, &sa, 1), *b = must_bus(&c, &sb, 1), *cb = must_bus(&c, &sc, 1);
    overlap_wait w = {&c, a, b};
    cr_assert(eddy_test_wait_until(both_overlapping, &w, 20000), "a: %lu, b: %lu",
              (unsigned long)cstats(&c, a, "a").overlapping,
              (unsigned long)cstats(&c, b, "b").overlapping);
    pause_ms(3 * 200); /* a few more heartbeats look again */
    cr_expect_eq(cstats(&c, a, "a").overlapping, 1, "once per pair");
    cr_expect_eq(cstats(&c, b, "b").overlapping, 1);
    cr_expect_eq(cstats(&c, cb, "c").overlapping, 0, "same group as a; cannot meet b");
    c.d->free(cb);
    c.d->free(b);
    c.d->free(a);
}

typedef struct stop_ask {
    ctx *c;
    tbus *b;
    eddy_status st;
} stop_ask;

static void *ask_silent(void *arg) {
    stop_ask *sa = arg;
    eddy_event *reply = NULL;
    sa->st = ask(sa->c, sa->b, "silent", "q2", "t.echo", 600000, NULL, &reply);
    eddy_event_free(reply);
    return NULL;
}

ParameterizedTestParameters(reqrep, stop_ends_waiting_requests_with_no_reply) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, stop_ends_waiting_requests_with_no_reply, .timeout = 30) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "h";
    sp.pattern = "silent";
    sp.group = "g";
    sp.handler = rec_handler;
    sp.user = &r;
    tbus *b = must_bus(&c, &sp, 1);
    /* A stop ends the requests waiting in other threads. */
    pthread_t askers[3];
    stop_ask sa[3];
    for (int i = 0; i < 3; i++) {
        sa[i] = (stop_ask){&c, b, EDDY_OK};
        pthread_create(&askers[i], NULL, ask_silent, &sa[i]);
    }
    cr_assert(rec_wait(&r, 3, 20000), "the requests were not sent");
    c.d->stop(b);
    for (int i = 0; i < 3; i++) {
        pthread_join(askers[i], NULL);
        cr_expect_eq(sa[i].st, EDDY_ERR_NO_REPLY, "%s", eddy_status_name(sa[i].st));
    }
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(s.no_reply, 3);
    expect_identity(&c, b, NULL);
    c.d->free(b);
    rec_destroy(&r);
}

/* The counters at every moment: three requests waiting (a handler-only subject: sent, never
 * answered) are Sent, and nothing else, while they wait: an in-flight gap of 3. */
static bool three_sent(void *arg) {
    stats_wait *w = arg;
    return rstats(w->c, w->b, NULL).sent >= 3;
}

ParameterizedTestParameters(reqrep, waiting_requests_are_counted_sent_while_they_wait) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, waiting_requests_are_counted_sent_while_they_wait,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "h";
    sp.pattern = "silent";
    sp.group = "g";
    sp.handler = rec_handler;
    sp.user = &r;
    tbus *b = must_bus(&c, &sp, 1);
    pthread_t askers[3];
    stop_ask sa[3];
    for (int i = 0; i < 3; i++) {
        sa[i] = (stop_ask){&c, b, EDDY_OK};
        pthread_create(&askers[i], NULL, ask_silent, &sa[i]);
    }
    cr_assert(rec_wait(&r, 3, 20000), "the requests were not sent");
    /* Their entries are in the stream: their acknowledgements are in, or on their way. The
     * requests wait for 600 s: a Sent counted only at the outcome never comes in this wait. */
    stats_wait w = {&c, b, NULL, 3};
    cr_expect(eddy_test_wait_until(three_sent, &w, 20000),
              "sent %lu while 3 requests wait (front end %d, backend %d)",
              (unsigned long)rstats(&c, b, NULL).sent, p->frontend, p->backend);
    eddy_request_stats s = rstats(&c, b, NULL);
    uint64_t ended = s.answered + s.no_responders + s.no_reply + s.failed;
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(ended, 0);
    cr_expect_eq(s.sent - ended, 3, "in-flight gap %lu", (unsigned long)(s.sent - ended));
    c.d->stop(b);
    for (int i = 0; i < 3; i++) {
        pthread_join(askers[i], NULL);
        cr_expect_eq(sa[i].st, EDDY_ERR_NO_REPLY, "%s", eddy_status_name(sa[i].st));
    }
    s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(s.no_reply, 3);
    expect_identity(&c, b, NULL);
    c.d->free(b);
    rec_destroy(&r);
}

typedef struct fire_when {
    recorder *r;
    eddy_cancel *cancel;
} fire_when;

static bool request_delivered(void *arg) { return rec_count(((fire_when *)arg)->r) >= 1; }

/* Fires once the request is out and waits: its entry reached the silent handler. */
static void *fire_later(void *arg) {
    fire_when *f = arg;
    cr_assert(eddy_test_wait_until(request_delivered, f, 20000), "the request was not sent");
    eddy_cancel_fire(f->cancel);
    return NULL;
}

ParameterizedTestParameters(reqrep, cancel_token_ends_a_waiting_request_with_no_reply) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, cancel_token_ends_a_waiting_request_with_no_reply,
                  .timeout = 30) {
    ctx c;
    setup(&c, &(combo){0, *backend});
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "h";
    sp.pattern = "silent";
    sp.group = "g";
    sp.handler = rec_handler;
    sp.user = &r;
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("q", "t.echo");
    eddy_request_opts o = {eddy_deadline_in(600000), NULL, eddy_cancel_new()};
    fire_when f = {&r, o.cancel};
    pthread_t t;
    pthread_create(&t, NULL, fire_later, &f);
    eddy_event *reply = NULL;
    cr_expect_eq(c.d->request(b, "silent", ev, &o, &reply, NULL), EDDY_ERR_NO_REPLY);
    pthread_join(t, NULL);
    /* A fired token refuses every later request. */
    cr_expect_eq(c.d->request(b, "silent", ev, &o, &reply, NULL), EDDY_ERR_NO_REPLY);
    eddy_cancel_free(o.cancel);
    eddy_event_free(ev);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.no_reply, 1);
    c.d->free(b);
    rec_destroy(&r);
}

typedef struct asker {
    ctx *c;
    tbus *b;
    int index;
    int answered;
} asker;

static void *ask_many(void *arg) {
    asker *a = arg;
    for (int i = 0; i < 40; i++) {
        char id[32];
        snprintf(id, sizeof(id), "t%d-%d", a->index, i);
        eddy_event *reply = NULL;
        if (ask(a->c, a->b, "tables.setup", id, "t.echo", 20000, NULL, &reply) == EDDY_OK) {
            char want[48];
            snprintf(want, sizeof(want), "re-%s", id);
            a->answered += strcmp(eddy_event_id(reply), want) == 0;
        }
        eddy_event_free(reply);
    }
    return NULL;
}

ParameterizedTestParameters(reqrep, many_threads_request_at_once) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, many_threads_request_at_once, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    asker askers[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        askers[i] = (asker){&c, b, i, 0};
        pthread_create(&t[i], NULL, ask_many, &askers[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(askers[i].answered, 40, "thread %d got %d of its own answers", i,
                     askers[i].answered);
    }
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.answered, 240);
    expect_identity(&c, b, NULL);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, request_past_its_deadline_is_dropped_unrun) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, request_past_its_deadline_is_dropped_unrun, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.read_batch = 1; /* one request at a time: the second waits behind the slow first */
    atomic_store(&slow_ms, 800);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *server = must_bus(&c, &sp, 1);
    tbus *client = must_bus(&c, NULL, 0);
    eddy_event *ev = make_event("slow", "t.slow");
    /* Sent as a plain publish: it occupies the responder while the request expires. */
    cr_assert_eq(c.d->publish(client, "tables.setup", ev, NULL), EDDY_OK);
    eddy_event_free(ev);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, client, "tables.setup", "expires", "t.echo", 200, NULL, &reply),
                 EDDY_ERR_NO_REPLY);
    cr_expect_eq(ask(&c, client, "tables.setup", "after", "t.echo", 20000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    wait_replied(&c, server, "setup", 1);
    eddy_consumer_stats cs = cstats(&c, server, "setup");
    cr_expect_eq(cs.expired, 1, "the expired request was dropped, not answered");
    cr_expect_eq(cs.replied, 1);
    cr_expect_eq(rstats(&c, client, NULL).unclaimed, 0);
    c.d->free(client);
    c.d->free(server);
}

static eddy_status pack_name(msgpack_packer *pk, void *user) {
    const char *s = user;
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "name", 4);
    return msgpack_pack_str_with_body(pk, s, strlen(s)) == 0 ? EDDY_OK : EDDY_ERR_NOMEM;
}

ParameterizedTestParameters(reqrep, request_value_answered_and_refused) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, request_value_answered_and_refused, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = new_bus(&c, &sp, 1);
    eddy_request_opts o = {eddy_deadline_in(20000), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err = {0};
    /* The refusals come before building anything. */
    cr_expect_eq(
        c.d->request_value(b, "tables.setup", "t.echo", pack_name, "orcs", NULL, &reply, &err),
        EDDY_ERR_NO_DEADLINE);
    cr_expect_eq(c.d->request_value(b, "tables.setup", NULL, NULL, NULL, &o, &reply, &err),
                 EDDY_ERR_NOT_READY);
    cr_assert_eq(c.d->start(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->request_value(b, "tables.setup", NULL, pack_name, "orcs", &o, &reply, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(
        c.d->request_value(b, "tables.setup", "t.echo", pack_name, "orcs", &o, &reply, &err),
        EDDY_OK, "%s", err.detail);
    cr_assert(reply);
    cr_expect_str_eq(eddy_event_source(reply), "/tests/responder");
    eddy_event_free(reply);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.answered, 1);
    c.d->free(b);
    /* Without settings.source the bus cannot build the event. */
    c.s.source = NULL;
    b = must_bus(&c, NULL, 0);
    cr_expect_eq(
        c.d->request_value(b, "tables.setup", "t.echo", pack_name, "orcs", &o, &reply, &err),
        EDDY_ERR_INVALID_SPEC);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep, rules_refused_at_build_and_late_subscribe) {
    return cr_make_param_array(combo, memory_combos, 2);
}
ParameterizedTest(combo *p, reqrep, rules_refused_at_build_and_late_subscribe, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_error err = {0};
    tbus *b = NULL;
    eddy_subscription_spec sp = responder_spec("r", "a.b", "g");
    sp.handler = rec_handler;
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "both");
    sp = responder_spec("r", "a.b", NULL);
    sp.shape = EDDY_FANOUT;
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "fanout");
    sp = responder_spec("r", "a.b", "g");
    sp.delivery = EDDY_AT_LEAST_ONCE;
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "at least once");
    cr_expect(strstr(err.detail, "'r'"), "%s", err.detail);
    eddy_subscription_spec two[2] = {responder_spec("r1", "a.*", "g1"),
                                     responder_spec("r2", "*.b", "g2")};
    cr_expect_eq(c.d->bus_new(&c.s, two, 2, &b, &err), EDDY_ERR_INVALID_SPEC, "overlap");
    two[1] = responder_spec("r2", "a.b.c", "g2");
    cr_expect_eq(c.d->bus_new(&c.s, two, 2, &b, &err), EDDY_OK, "no overlap: %s", err.detail);
    c.d->free(b);
    two[1] = responder_spec("r2", "a.b", "g1");
    cr_expect_eq(c.d->bus_new(&c.s, two, 2, &b, &err), EDDY_OK, "same group: %s", err.detail);
    c.d->free(b);
    two[1] = responder_spec("h", "x.y", "g1");
    two[1].responder = NULL;
    two[1].handler = rec_handler;
    cr_expect_eq(c.d->bus_new(&c.s, two, 2, &b, &err), EDDY_ERR_INVALID_SPEC, "handler in group");
    eddy_settings nosource = c.s;
    nosource.source = NULL;
    sp = responder_spec("r", "a.b", "g");
    cr_expect_eq(c.d->bus_new(&nosource, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "no source");
    const char *empty[] = {""};
    eddy_settings names = c.s;
    names.request_names = empty;
    names.request_name_count = 1;
    cr_expect_eq(c.d->bus_new(&names, NULL, 0, &b, &err), EDDY_ERR_INVALID_SPEC, "empty name");
    const char *dup[] = {"x", "x"};
    names.request_names = dup;
    names.request_name_count = 2;
    cr_expect_eq(c.d->bus_new(&names, NULL, 0, &b, &err), EDDY_ERR_INVALID_SPEC, "duplicate");

    /* The same rules on a late subscribe, on a started bus. */
    sp = responder_spec("r1", "a.*", "g1");
    b = must_bus(&c, &sp, 1);
    eddy_subscription_spec late = responder_spec("r2", "a.>", "g2");
    cr_expect_eq(c.d->subscribe(b, &late, &err), EDDY_ERR_INVALID_SPEC);
    late = responder_spec("h", "q", "g1");
    late.responder = NULL;
    late.handler = rec_handler;
    cr_expect_eq(c.d->subscribe(b, &late, &err), EDDY_ERR_INVALID_SPEC);
    late = responder_spec("r3", "other", "g3");
    cr_expect_eq(c.d->subscribe(b, &late, &err), EDDY_OK, "%s", err.detail);
    /* A late responder counts for requesters as soon as subscribe returns. */
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "other", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    c.d->free(b);
}

/* ---- across processes, on the real server -------------------------------------------- */

static pid_t spawn_responder(ctx *c, const char *group, bool hang, int ready_fd) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid > 0)
        return pid;
    if (hang)
        atomic_store(&slow_ms, 3600 * 1000);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", group);
    eddy_bus *b = NULL;
    if (eddy_bus_new(&c->s, &sp, 1, &b, NULL) != EDDY_OK || eddy_bus_start(b, NULL) != EDDY_OK)
        _exit(3);
    if (write(ready_fd, "r", 1) != 1)
        _exit(4);
    for (;;)
        pause();
}

ParameterizedTestParameters(reqrep_processes, second_group_in_another_process_is_unclaimed) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, reqrep_processes, second_group_in_another_process_is_unclaimed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t other = spawn_responder(&c, "second-group", false, ready[1]);
    close(ready[1]); /* a child that dies early then reads as EOF, not a hang */
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    close(ready[0]);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "first-group");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.setup", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    stats_wait w = {&c, b, NULL, 1};
    cr_expect(eddy_test_wait_until(unclaimed_reached, &w, 20000), "the second answer");
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    eddy_request_stats s = rstats(&c, b, NULL);
    cr_expect_eq(s.answered, 1);
    cr_expect_eq(s.unclaimed, 1);
    c.d->free(b);
}

ParameterizedTestParameters(reqrep_processes, responder_killed_mid_request_gives_no_reply) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, reqrep_processes, responder_killed_mid_request_gives_no_reply,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.lease_ms = 900;
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t victim = spawn_responder(&c, "ingress", true, ready[1]);
    close(ready[1]); /* a child that dies early then reads as EOF, not a hang */
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    close(ready[0]);
    tbus *b = must_bus(&c, NULL, 0);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(&c, b, "tables.setup", "held", "t.slow", 300, NULL, &reply), EDDY_ERR_NO_REPLY,
                 "subscribed in another process, but the answer never comes");
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    /* Once its lease ends, the dead process no longer counts as subscribed. */
    eddy_status st = EDDY_ERR_NO_REPLY;
    for (int i = 0; i < 100 && st != EDDY_ERR_NO_RESPONDERS; i++) {
        st = ask(&c, b, "tables.setup", "again", "t.echo", 100, NULL, &reply);
        eddy_event_free(reply);
    }
    cr_expect_eq(st, EDDY_ERR_NO_RESPONDERS);
    expect_identity(&c, b, NULL);
    c.d->free(b);
}

typedef struct refused_wait {
    ctx *c;
    tbus *b;
} refused_wait;

static bool refused_one(void *arg) {
    refused_wait *w = arg;
    return cstats(w->c, w->b, "setup").refused >= 1;
}

ParameterizedTestParameters(reqrep, reply_to_outside_the_namespace_is_refused) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, reqrep, reply_to_outside_the_namespace_is_refused, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    /* A request written by hand that asks for its reply in someone else's key. */
    char key[160], deadline[32];
    snprintf(key, sizeof(key), "{%s}:s:tables.setup", c.ns);
    snprintf(deadline, sizeof(deadline), "%lld", eddy_deadline_in(60000));
    const char *argv[] = {"XADD",       key,        "*",   "specversion", "1.0",    "id",
                          "sneaky",     "source",   "/t",  "type",        "t.echo", "_reply_to",
                          "victim:key", "_request", "x.1", "_deadline",   deadline};
    freeReplyObject(raw_cmd(c.url, 17, argv));
    refused_wait w = {&c, b};
    cr_expect(eddy_test_wait_until(refused_one, &w, 20000), "the reply-to was not refused");
    eddy_consumer_stats cs = cstats(&c, b, "setup");
    cr_expect_eq(cs.refused, 1);
    cr_expect_eq(cs.replied, 0);
    cr_expect_eq(raw_int(c.url, "EXISTS victim:key"), 0, "nothing was written there");
    c.d->free(b);
}

ParameterizedTestParameters(reqrep_processes,
                            redis_failing_while_sending_is_a_transport_status_not_counted) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, reqrep_processes,
                  redis_failing_while_sending_is_a_transport_status_not_counted, .timeout = 60) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, p);
    c.s.url = srv.url;
    c.s.connect_timeout_ms = 500;
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    tbus *b = must_bus(&c, &sp, 1);
    eddy_test_redis_kill(&srv);
    eddy_event *reply = NULL;
    eddy_status st = ask(&c, b, "tables.setup", "q", "t.echo", 10000, NULL, &reply);
    cr_expect_eq(st, EDDY_ERR_IO, "%s", eddy_status_name(st));
    cr_expect_eq(rstats(&c, b, NULL).sent, 0);
    c.d->free(b);
}
