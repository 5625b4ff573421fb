/* SPDX-License-Identifier: BSD-3-Clause */
/* Scatter-gather requests (eddy_bus_request_all, eddy_rbus_request_all; src/bus/gather.h), one
 * table of scenarios run on both front ends (the driver, driver.h) and both backends: every
 * instance of a responder that opted in (answer_all) answers, the gather stops at max replies,
 * at the first failure when asked, or at the deadline with what came; "no responders" as a
 * single request gives it; the counters as for a single request; the refusals; and single
 * requests still reaching one member of the group. Each responder instance is a bus of its own
 * (as a process would be), so that a slow one holds up only its own loop or workers. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy_test.h"
#include "recorder.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

typedef struct ctx {
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), "sg");
    if (p->backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests/gather";
    c->s.block_ms = 200;
    c->s.discovery_ms = 50;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend ? "redis" : "memory";
}

/* What one responder instance does with every request (its user pointer). */
typedef enum mode { ANSWER, FAIL, SLOW } mode;
static atomic_int calls;

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    mode m = *(const mode *)user;
    atomic_fetch_add(&calls, 1);
    if (m == FAIL)
        return EDDY_ERR_HANDLER_FAILED;
    if (m == SLOW) /* past the requester's deadline: its reply comes late */
        pause_ms(1500);
    return eddy_delivery_new_reply(d, "t.reply", reply, NULL);
}

static const mode modes[] = {ANSWER, FAIL, SLOW};

static eddy_subscription_spec responder_spec(const char *pattern, mode m) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "r";
    sp.pattern = pattern;
    sp.shape = EDDY_COMPETING;
    sp.group = "g";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = respond;
    sp.user = (void *)&modes[m];
    return sp;
}

/* A responder instance that answers scatter-gather requests, started. */
static tbus *instance(ctx *c, const char *pattern, mode m, bool all) {
    eddy_subscription_spec sp = responder_spec(pattern, m);
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, &sp, 1, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    if (all)
        cr_assert_eq(st = c->d->answer_all(b, "r", &err), EDDY_OK, "answer_all: %s (%s)",
                     eddy_status_name(st), err.detail);
    cr_assert_eq(st = c->d->start(b, &err), EDDY_OK, "start: %s (%s)", eddy_status_name(st),
                 err.detail);
    return b;
}

static tbus *requester(ctx *c) {
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(c->d->bus_new(&c->s, NULL, 0, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c->d->start(b, &err), EDDY_OK, "%s", err.detail);
    return b;
}

static eddy_status ask_all(ctx *c, tbus *b, const char *subject, long long timeout_ms, size_t max,
                           bool stop_on_failure, eddy_replies **out, size_t *each) {
    eddy_event *ev = make_event("q-1", "t.ask");
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(timeout_ms);
    o.max_replies = max;
    o.stop_on_failure = stop_on_failure;
    eddy_error err = {0};
    size_t none;
    eddy_status st = c->d->request_all(b, subject, ev, &o, out, each ? each : &none, &err);
    eddy_event_free(ev);
    return st;
}

static eddy_request_stats rstats(ctx *c, tbus *b) {
    eddy_request_stats s;
    cr_assert_eq(c->d->request_stats(b, NULL, &s), EDDY_OK);
    return s;
}

static void expect_counts(ctx *c, tbus *b, uint64_t sent, uint64_t answered, uint64_t nr,
                          uint64_t no_reply, uint64_t failed) {
    eddy_request_stats s = rstats(c, b);
    cr_expect_eq(s.sent, sent, "sent %llu", (unsigned long long)s.sent);
    cr_expect_eq(s.answered, answered, "answered %llu", (unsigned long long)s.answered);
    cr_expect_eq(s.no_responders, nr, "no_responders %llu", (unsigned long long)s.no_responders);
    cr_expect_eq(s.no_reply, no_reply, "no_reply %llu", (unsigned long long)s.no_reply);
    cr_expect_eq(s.failed, failed, "failed %llu", (unsigned long long)s.failed);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed);
}

typedef struct unclaimed_at_least {
    ctx *c;
    tbus *b;
    uint64_t n;
} unclaimed_at_least;

static bool unclaimed_reached(void *user) {
    unclaimed_at_least *u = user;
    return rstats(u->c, u->b).unclaimed >= u->n;
}

static void free_all(ctx *c, tbus **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        c->d->free(v[i]);
}

/* ---- scenarios ------------------------------------------------------------------------------ */

ParameterizedTestParameters(gather, every_instance_answers_by_the_deadline) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, every_instance_answers_by_the_deadline, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[4] = {instance(&c, "g.ask", ANSWER, true), instance(&c, "g.ask", ANSWER, true),
                  instance(&c, "g.ask", ANSWER, true), requester(&c)};
    eddy_replies *r = NULL;
    size_t each = 0;
    eddy_status st = ask_all(&c, v[3], "g.ask", 3000, 0, false, &r, &each);
    cr_expect_eq(st, EDDY_OK, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 3);
    cr_expect_eq(each, 3, "each reply told once");
    cr_expect_eq(eddy_replies_failed(r), 0);
    for (size_t i = 0; i < eddy_replies_count(r); i++) {
        cr_expect_eq(eddy_replies_result(r, i), EDDY_OK);
        cr_expect_str_eq(eddy_event_type(eddy_replies_event(r, i)), "t.reply");
    }
    cr_expect_eq(eddy_replies_result(r, 3), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_replies_event(r, 3));
    eddy_replies_free(r);
    expect_counts(&c, v[3], 1, 1, 0, 0, 0);
    /* Each instance counted its reply under the responder's own name. */
    for (int i = 0; i < 3; i++) {
        eddy_consumer_stats cs;
        cr_assert_eq(c.d->stats(v[i], "r", &cs), EDDY_OK);
        cr_expect_eq(cs.replied, 1, "instance %d replied %llu", i, (unsigned long long)cs.replied);
    }
    free_all(&c, v, 4);
}

ParameterizedTestParameters(gather, max_replies_ends_it_and_later_replies_are_unclaimed) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, max_replies_ends_it_and_later_replies_are_unclaimed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[4] = {instance(&c, "g.ask", ANSWER, true), instance(&c, "g.ask", ANSWER, true),
                  instance(&c, "g.ask", ANSWER, true), requester(&c)};
    eddy_replies *r = NULL;
    eddy_status st = ask_all(&c, v[3], "g.ask", 10000, 2, false, &r, NULL);
    cr_expect_eq(st, EDDY_OK, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 2);
    eddy_replies_free(r);
    expect_counts(&c, v[3], 1, 1, 0, 0, 0);
    /* The third reply comes after the gather ended: Unclaimed, never handed to anyone. */
    unclaimed_at_least u = {&c, v[3], 1};
    cr_expect(eddy_test_wait_until(unclaimed_reached, &u, 10000), "the third reply");
    free_all(&c, v, 4);
}

ParameterizedTestParameters(gather, a_failure_ends_it_when_asked) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, a_failure_ends_it_when_asked, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[4] = {instance(&c, "g.ask", ANSWER, true), instance(&c, "g.ask", FAIL, true),
                  instance(&c, "g.ask", ANSWER, true), requester(&c)};
    /* Asked to stop at the first failure: that reply is the list's last. */
    eddy_replies *r = NULL;
    eddy_status st = ask_all(&c, v[3], "g.ask", 10000, 0, true, &r, NULL);
    cr_expect_eq(st, EDDY_ERR_RESPONDER_FAILED, "%s", eddy_status_name(st));
    size_t n = eddy_replies_count(r);
    cr_assert_geq(n, 1);
    cr_expect_leq(n, 3);
    cr_expect_eq(eddy_replies_failed(r), 1);
    cr_expect_eq(eddy_replies_result(r, n - 1), EDDY_ERR_RESPONDER_FAILED);
    cr_expect_null(eddy_replies_event(r, n - 1));
    eddy_replies_free(r);
    expect_counts(&c, v[3], 1, 0, 0, 0, 1);
    /* Not asked: the failure is one reply among the others. */
    st = ask_all(&c, v[3], "g.ask", 10000, 3, false, &r, NULL);
    cr_expect_eq(st, EDDY_OK, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 3);
    cr_expect_eq(eddy_replies_failed(r), 1);
    eddy_replies_free(r);
    expect_counts(&c, v[3], 2, 1, 0, 0, 1);
    eddy_consumer_stats cs;
    cr_assert_eq(c.d->stats(v[1], "r", &cs), EDDY_OK);
    cr_expect_eq(cs.responder_failed, 2);
    free_all(&c, v, 4);
}

ParameterizedTestParameters(gather, no_responders_as_a_single_request) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, no_responders_as_a_single_request, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[2] = {requester(&c), NULL};
    eddy_replies *r = NULL;
    size_t each = 7;
    eddy_status st = ask_all(&c, v[0], "g.ask", 5000, 0, false, &r, &each);
    cr_expect_eq(st, EDDY_ERR_NO_RESPONDERS, "%s", eddy_status_name(st));
    cr_assert_not_null(r, "the outcome comes with its (empty) list");
    cr_expect_eq(eddy_replies_count(r), 0);
    cr_expect_eq(each, 0);
    eddy_replies_free(r);
    expect_counts(&c, v[0], 1, 0, 1, 0, 0);
    /* A responder that did not opt in answers single requests only: for a gather, nothing is
     * subscribed. */
    v[1] = instance(&c, "g.ask", ANSWER, false);
    st = ask_all(&c, v[0], "g.ask", 5000, 0, false, &r, NULL);
    cr_expect_eq(st, EDDY_ERR_NO_RESPONDERS, "%s", eddy_status_name(st));
    eddy_replies_free(r);
    expect_counts(&c, v[0], 2, 0, 2, 0, 0);
    free_all(&c, v, 2);
}

ParameterizedTestParameters(gather, the_deadline_ends_it_with_what_came) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, the_deadline_ends_it_with_what_came, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[4] = {instance(&c, "g.ask", ANSWER, true), instance(&c, "g.ask", SLOW, true),
                  instance(&c, "g.ask", ANSWER, true), requester(&c)};
    /* Three asked for, the slow one's reply comes after the deadline: NO_REPLY, with the two
     * that came. */
    eddy_replies *r = NULL;
    eddy_status st = ask_all(&c, v[3], "g.ask", 1000, 3, false, &r, NULL);
    cr_expect_eq(st, EDDY_ERR_NO_REPLY, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 2);
    eddy_replies_free(r);
    expect_counts(&c, v[3], 1, 0, 0, 1, 0);
    unclaimed_at_least u = {&c, v[3], 1};
    cr_expect(eddy_test_wait_until(unclaimed_reached, &u, 10000), "the slow reply");
    /* Until the deadline (max 0): the deadline is the end asked for, so what came is EDDY_OK. */
    st = ask_all(&c, v[3], "g.ask", 1000, 0, false, &r, NULL);
    cr_expect_eq(st, EDDY_OK, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 2);
    eddy_replies_free(r);
    expect_counts(&c, v[3], 2, 1, 0, 1, 0);
    free_all(&c, v, 4);
}

ParameterizedTestParameters(gather, single_requests_still_reach_one_member) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, single_requests_still_reach_one_member, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[4] = {instance(&c, "g.ask", ANSWER, true), instance(&c, "g.ask", ANSWER, true),
                  instance(&c, "g.ask", ANSWER, true), requester(&c)};
    atomic_store(&calls, 0);
    for (int i = 0; i < 3; i++) {
        eddy_event *ev = make_event("one", "t.ask");
        eddy_request_opts o = {eddy_deadline_in(5000), NULL, NULL};
        eddy_event *reply = NULL;
        eddy_error err = {0};
        cr_expect_eq(c.d->request(v[3], "g.ask", ev, &o, &reply, &err), EDDY_OK, "%s", err.detail);
        eddy_event_free(reply);
        eddy_event_free(ev);
    }
    cr_expect_eq(atomic_load(&calls), 3, "one member of the group answered each");
    expect_counts(&c, v[3], 3, 3, 0, 0, 0);
    cr_expect_eq(rstats(&c, v[3]).unclaimed, 0);
    free_all(&c, v, 4);
}

ParameterizedTestParameters(gather, a_pattern_responder_finds_a_new_subject) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, a_pattern_responder_finds_a_new_subject, .timeout = 60) {
    ctx c;
    setup(&c, p);
    tbus *v[3] = {instance(&c, "g.*", ANSWER, true), instance(&c, "g.>", ANSWER, true),
                  requester(&c)};
    eddy_replies *r = NULL;
    eddy_status st = ask_all(&c, v[2], "g.brand-new", 10000, 2, false, &r, NULL);
    cr_expect_eq(st, EDDY_OK, "%s", eddy_status_name(st));
    cr_expect_eq(eddy_replies_count(r), 2);
    eddy_replies_free(r);
    free_all(&c, v, 3);
}

ParameterizedTestParameters(gather, refusals_are_not_counted) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, gather, refusals_are_not_counted, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_error err = {0};
    /* answer_all: only a responder of the bus, only before start; again is nothing more. */
    eddy_subscription_spec sp[2] = {responder_spec("g.ask", ANSWER), responder_spec("h.x", ANSWER)};
    sp[1].name = "h";
    sp[1].group = "hg";
    sp[1].responder = NULL;
    sp[1].handler = rec_handler;
    tbus *b = NULL;
    cr_assert_eq(c.d->bus_new(&c.s, sp, 2, &b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->answer_all(b, "nope", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(c.d->answer_all(b, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(c.d->answer_all(b, "h", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "not a responder"), "%s", err.detail);
    cr_expect_eq(c.d->answer_all(b, "r", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->answer_all(b, "r", &err), EDDY_OK, "again: %s", err.detail);
    /* The twin does not count against the rules for responders: another responder of the
     * same group on an overlapping pattern is still accepted. */
    eddy_subscription_spec more = responder_spec("g.*", ANSWER);
    more.name = "r2";
    cr_expect_eq(c.d->subscribe(b, &more, &err), EDDY_OK, "%s", err.detail);
    more.name = "r3";
    more.group = "other";
    cr_expect_eq(c.d->subscribe(b, &more, &err), EDDY_ERR_INVALID_SPEC, "still refused");

    /* Before start: not ready, and nothing counted. */
    eddy_replies *r = (eddy_replies *)1;
    eddy_status st = ask_all(&c, b, "g.ask", 5000, 0, false, &r, NULL);
    cr_expect_eq(st, EDDY_ERR_NOT_READY, "%s", eddy_status_name(st));
    cr_expect_null(r);
    cr_assert_eq(c.d->start(b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->answer_all(b, "r", &err), EDDY_OK, "already: %s", err.detail);
    tbus *other = NULL;
    cr_assert_eq(c.d->bus_new(&c.s, sp, 1, &other, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c.d->start(other, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->answer_all(other, "r", &err), EDDY_ERR_ILLEGAL_STATE);

    eddy_event *ev = make_event("q", "t.ask");
    size_t each;
    /* No options, no deadline, a deadline past. */
    cr_expect_eq(c.d->request_all(b, "g.ask", ev, NULL, &r, &each, &err), EDDY_ERR_NO_DEADLINE);
    cr_expect_null(r);
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    cr_expect_eq(c.d->request_all(b, "g.ask", ev, &o, &r, &each, &err), EDDY_ERR_NO_DEADLINE);
    o.deadline_ms = eddy_now_ms() - 1;
    cr_expect_eq(c.d->request_all(b, "g.ask", ev, &o, &r, &each, &err), EDDY_ERR_NO_REPLY);
    o.deadline_ms = eddy_deadline_in(5000);
    /* A bad subject, no event, the reserved attribute. */
    cr_expect_eq(c.d->request_all(b, "g..ask", ev, &o, &r, &each, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(c.d->request_all(b, "g.ask", NULL, &o, &r, &each, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_event *bad = make_event("q2", "t.ask");
    eddy_event_set_extension(bad, "messagingfailed", "true", NULL);
    cr_expect_eq(c.d->request_all(b, "g.ask", bad, &o, &r, &each, &err),
                 EDDY_ERR_RESERVED_ATTRIBUTE);
    cr_expect_null(r);
    eddy_event_free(bad);
    /* A fired token. */
    eddy_cancel *cancel = eddy_cancel_new();
    eddy_cancel_fire(cancel);
    o.cancel = cancel;
    cr_expect_eq(c.d->request_all(b, "g.ask", ev, &o, &r, &each, &err), EDDY_ERR_NO_REPLY);
    cr_expect_null(r);
    eddy_cancel_free(cancel);
    expect_counts(&c, b, 0, 0, 0, 0, 0);
    eddy_event_free(ev);
    c.d->free(other);
    c.d->free(b);
}

/* The blocking call's own argument checks, and a cancel from another thread. */
Test(gather, blocking_arguments) {
    eddy_error err = {0};
    eddy_replies *r = NULL;
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    cr_expect_eq(eddy_bus_request_all(NULL, "a", NULL, &o, &r, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_bus_answer_all(NULL, "r", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_replies_count(NULL), 0);
    cr_expect_eq(eddy_replies_failed(NULL), 0);
    cr_expect_eq(eddy_replies_result(NULL, 0), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_replies_event(NULL, 0));
    eddy_replies_free(NULL);
    cr_expect_eq(o.max_replies, 0);
    cr_expect_not(o.stop_on_failure);
    cr_expect_eq(o.struct_size, sizeof(o));
}
