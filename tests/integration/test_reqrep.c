/* Request/reply (spec/request-reply.txt) on both backends: answers, refusals before sending,
 * no responders, handler-only subjects, responder failures, late replies counted Unclaimed,
 * counters by conversation, the rules the bus enforces, cancel and stop, many threads, and
 * across processes on a real redis-server. */
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

#include "eddy/blocking.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

static int backends[] = {0, 1}; /* memory, redis */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, int backend) {
    eddy_test_namespace(c->ns, sizeof(c->ns), "rr");
    if (backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests/reqrep";
    c->s.block_ms = 200;
    c->s.log = eddy_test_log;
    c->s.log_user = backend ? "redis" : "memory";
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

static eddy_bus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    eddy_bus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c->s, specs, n, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(b, &err), EDDY_OK, "%s", err.detail);
    return b;
}

static eddy_status ask(eddy_bus *b, const char *subject, const char *id, const char *type,
                       long long timeout_ms, const char *name, eddy_event **reply) {
    eddy_event *ev = make_event(id, type);
    eddy_request_opts o = {eddy_deadline_in(timeout_ms), name, NULL};
    eddy_error err = {0};
    eddy_status st = eddy_bus_request(b, subject, ev, &o, reply, &err);
    eddy_event_free(ev);
    return st;
}

static void expect_identity(eddy_bus *b, const char *name) {
    eddy_request_stats s;
    eddy_bus_request_stats(b, name, &s);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed,
                 "%s: sent %lu != %lu + %lu + %lu + %lu", name ? name : "total",
                 (unsigned long)s.sent, (unsigned long)s.answered, (unsigned long)s.no_responders,
                 (unsigned long)s.no_reply, (unsigned long)s.failed);
}

typedef struct stats_wait {
    eddy_bus *b;
    uint64_t unclaimed;
} stats_wait;

typedef struct replied_wait {
    eddy_bus *b;
    const char *sub;
    uint64_t replied;
} replied_wait;

static bool replied_reached(void *arg) {
    replied_wait *w = arg;
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(w->b, w->sub, &cs);
    return cs.replied >= w->replied;
}

/* A reply is counted Replied when the backend confirms storing it, which may be just after
 * the requester already has it. */
static void wait_replied(eddy_bus *b, const char *sub, uint64_t n) {
    replied_wait w = {b, sub, n};
    cr_expect(eddy_test_wait_until(replied_reached, &w, 20000), "replies stored: fewer than %lu",
              (unsigned long)n);
}

static bool unclaimed_reached(void *arg) {
    stats_wait *w = arg;
    eddy_request_stats s;
    eddy_bus_request_stats(w->b, NULL, &s);
    return s.unclaimed >= w->unclaimed;
}

ParameterizedTestParameters(reqrep, answered) { return cr_make_param_array(int, backends, 2); }
ParameterizedTest(int *backend, reqrep, answered, .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_assert_eq(ask(b, "tables.setup", "q1", "t.echo", 10000, NULL, &reply), EDDY_OK);
    cr_assert(reply);
    size_t len;
    const char *data = eddy_event_data(reply, &len);
    cr_expect_eq(len, strlen("answer:payload-q1"));
    cr_expect(memcmp(data, "answer:payload-q1", len) == 0);
    cr_expect_str_eq(eddy_event_id(reply), "re-q1");
    eddy_event_free(reply);
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.answered, 1);
    wait_replied(b, "setup", 1);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, refused_before_sending_in_order_and_not_counted) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, refused_before_sending_in_order_and_not_counted,
                  .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c.s, &sp, 1, &b, &err), EDDY_OK);
    eddy_event *ev = make_event("q", "t.echo");
    eddy_event *reply = NULL;
    /* Not started: but the deadline checks come first. */
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, NULL, &reply, &err), EDDY_ERR_NO_DEADLINE);
    eddy_request_opts o = {0, NULL, NULL};
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NO_DEADLINE);
    o.deadline_ms = eddy_now_ms() - 1;
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NO_REPLY);
    o.deadline_ms = eddy_deadline_in(10000);
    o.cancel = eddy_cancel_new();
    eddy_cancel_fire(o.cancel);
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NO_REPLY);
    eddy_cancel_free(o.cancel);
    o.cancel = NULL;
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, &o, &reply, &err), EDDY_ERR_NOT_READY);
    cr_assert_eq(eddy_bus_start(b, &err), EDDY_OK);
    eddy_event_set_extension(ev, "messagingfailed", "true", NULL);
    cr_expect_eq(eddy_bus_request(b, "tables.setup", ev, &o, &reply, &err),
                 EDDY_ERR_RESERVED_ATTRIBUTE);
    cr_expect_eq(eddy_bus_publish(b, "tables.setup", ev, NULL, 0, &err),
                 EDDY_ERR_RESERVED_ATTRIBUTE, "publish refuses it too");
    cr_expect_null(reply);
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent + s.answered + s.no_responders + s.no_reply + s.failed, 0,
                 "refusals are not counted");
    cr_expect_eq(atomic_load(&responder_calls), 0);
    eddy_event_free(ev);
    eddy_bus_free(b);
}

Test(reqrep, stopped_bus_is_not_ready, .timeout = 30) {
    ctx c;
    setup(&c, 0);
    eddy_bus *b = must_bus(&c, NULL, 0);
    eddy_bus_stop(b);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "x", "q", "t.echo", 1000, NULL, &reply), EDDY_ERR_NOT_READY);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, no_responders_answers_at_once) {
    return cr_make_param_array(int, backends, 2);
}
/* The deadline is far beyond the test's timeout: only an immediate answer passes. */
ParameterizedTest(int *backend, reqrep, no_responders_answers_at_once, .timeout = 30) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.other", "q", "t.echo", 600000, NULL, &reply),
                 EDDY_ERR_NO_RESPONDERS);
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.no_responders, 1);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, handler_only_subject_gets_no_reply_at_the_deadline) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, handler_only_subject_gets_no_reply_at_the_deadline,
                  .timeout = 60) {
    ctx c;
    setup(&c, *backend);
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
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    long long t0 = eddy_now_ms();
    cr_expect_eq(ask(b, "tables.setup", "q", "t.echo", 400, NULL, &reply), EDDY_ERR_NO_REPLY);
    /* (the wait converts the wall-clock deadline to the monotonic clock: allow rounding) */
    cr_expect_geq(eddy_now_ms() - t0, 390, "answered before the deadline");
    cr_expect(rec_wait(&r, 1, 20000), "the request was delivered to the handler");
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent, 1);
    cr_expect_eq(s.no_reply, 1);
    eddy_bus_free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(reqrep, responder_failure_answers_at_once) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, responder_failure_answers_at_once, .timeout = 30) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    const char *types[] = {"t.fail", "t.invalid", "t.reserved"};
    for (int i = 0; i < 3; i++) {
        eddy_event *reply = NULL;
        cr_expect_eq(ask(b, "tables.setup", types[i], types[i], 600000, NULL, &reply),
                     EDDY_ERR_RESPONDER_FAILED, "%s", types[i]);
        cr_expect_null(reply, "no event reaches the caller");
    }
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.failed, 3);
    wait_replied(b, "setup", 3); /* the failure replies were stored */
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(b, "setup", &cs);
    cr_expect_eq(cs.responder_failed, 3);
    cr_expect_eq(cs.replied, 3);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, late_reply_is_unclaimed_and_never_delivered_later) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, late_reply_is_unclaimed_and_never_delivered_later,
                  .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    c.s.workers = 1;
    atomic_store(&slow_ms, 700);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.setup", "late", "t.slow", 200, NULL, &reply), EDDY_ERR_NO_REPLY);
    stats_wait w = {b, 1};
    cr_assert(eddy_test_wait_until(unclaimed_reached, &w, 20000), "the late reply never came");
    /* The next request gets its own answer, not the late one. */
    cr_expect_eq(ask(b, "tables.setup", "next", "t.echo", 10000, NULL, &reply), EDDY_OK);
    cr_assert(reply);
    cr_expect_str_eq(eddy_event_id(reply), "re-next");
    eddy_event_free(reply);
    expect_identity(b, NULL);
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.unclaimed, 1);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, counters_by_conversation_keep_the_identity) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, counters_by_conversation_keep_the_identity, .timeout = 60) {
    ctx c;
    setup(&c, *backend);
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
    eddy_bus *b = must_bus(&c, specs, 2);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.setup", "a1", "t.echo", 10000, "table-setup", &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(b, "tables.setup", "a2", "t.echo", 10000, "table-setup", &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(b, "tables.setup", "f1", "t.fail", 10000, "table-setup", &reply),
                 EDDY_ERR_RESPONDER_FAILED);
    cr_expect_eq(ask(b, "nobody.here", "n1", "t.echo", 10000, "audit", &reply),
                 EDDY_ERR_NO_RESPONDERS);
    cr_expect_eq(ask(b, "audit.x", "r1", "t.echo", 300, "audit", &reply), EDDY_ERR_NO_REPLY);
    cr_expect_eq(ask(b, "tables.setup", "u1", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    cr_expect_eq(ask(b, "tables.setup", "b1", "t.echo", 10000, "bogus", &reply), EDDY_OK);
    eddy_event_free(reply);

    eddy_request_stats s;
    eddy_bus_request_stats(b, "table-setup", &s);
    cr_expect_eq(s.sent, 3);
    cr_expect_eq(s.answered, 2);
    cr_expect_eq(s.failed, 1);
    eddy_bus_request_stats(b, "audit", &s);
    cr_expect_eq(s.sent, 2);
    cr_expect_eq(s.no_responders, 1);
    cr_expect_eq(s.no_reply, 1);
    eddy_bus_request_stats(b, "", &s);
    cr_expect_eq(s.sent, 2, "unnamed and undeclared requests share the unnamed row");
    cr_expect_eq(s.answered, 2);
    eddy_bus_request_stats(b, "bogus", &s);
    cr_expect_eq(s.sent, 0, "an undeclared name reads as zero");
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent, 7);
    expect_identity(b, NULL);
    expect_identity(b, "table-setup");
    expect_identity(b, "audit");
    expect_identity(b, "");
    eddy_bus_free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(reqrep, brand_new_subject_matched_only_by_a_pattern_responder) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, brand_new_subject_matched_only_by_a_pattern_responder,
                  .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.>", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.never.seen.before", "q", "t.echo", 20000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, responder_runs_for_plain_publish_reply_unaddressed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, responder_runs_for_plain_publish_reply_unaddressed,
                  .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("plain", "t.echo");
    cr_assert_eq(eddy_bus_publish(b, "tables.setup", ev, NULL, 0, NULL), EDDY_OK);
    eddy_event_free(ev);
    /* A request after it is answered after it (one reader, in order): then the publish ran. */
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.setup", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    wait_replied(b, "setup", 1);
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(b, "setup", &cs);
    cr_expect_eq(cs.unaddressed, 1);
    cr_expect_eq(cs.replied, 1);
    eddy_bus_free(b);
}

typedef struct stop_ask {
    eddy_bus *b;
    eddy_status st;
} stop_ask;

static void *ask_silent(void *arg) {
    stop_ask *sa = arg;
    eddy_event *reply = NULL;
    sa->st = ask(sa->b, "silent", "q2", "t.echo", 600000, NULL, &reply);
    eddy_event_free(reply);
    return NULL;
}

static void *fire_later(void *arg) {
    pause_ms(300);
    eddy_cancel_fire(arg);
    return NULL;
}

ParameterizedTestParameters(reqrep, cancel_and_stop_end_a_waiting_request_with_no_reply) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, cancel_and_stop_end_a_waiting_request_with_no_reply,
                  .timeout = 30) {
    ctx c;
    setup(&c, *backend);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "h";
    sp.pattern = "silent";
    sp.group = "g";
    sp.handler = rec_handler;
    sp.user = &r;
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *ev = make_event("q", "t.echo");
    eddy_request_opts o = {eddy_deadline_in(600000), NULL, eddy_cancel_new()};
    pthread_t t;
    pthread_create(&t, NULL, fire_later, o.cancel);
    eddy_event *reply = NULL;
    cr_expect_eq(eddy_bus_request(b, "silent", ev, &o, &reply, NULL), EDDY_ERR_NO_REPLY);
    pthread_join(t, NULL);
    eddy_cancel_free(o.cancel);
    eddy_event_free(ev);
    expect_identity(b, NULL);

    /* A stop ends the requests waiting in other threads. */
    pthread_t asker_thread;
    stop_ask sa = {b, EDDY_OK};
    pthread_create(&asker_thread, NULL, ask_silent, &sa);
    cr_assert(rec_wait(&r, 2, 20000), "the second request was not sent");
    eddy_bus_stop(b);
    pthread_join(asker_thread, NULL);
    cr_expect_eq(sa.st, EDDY_ERR_NO_REPLY);
    expect_identity(b, NULL);
    eddy_bus_free(b);
    rec_destroy(&r);
}

typedef struct asker {
    eddy_bus *b;
    int index;
    int answered;
} asker;

static void *ask_many(void *arg) {
    asker *a = arg;
    for (int i = 0; i < 40; i++) {
        char id[32];
        snprintf(id, sizeof(id), "t%d-%d", a->index, i);
        eddy_event *reply = NULL;
        if (ask(a->b, "tables.setup", id, "t.echo", 20000, NULL, &reply) == EDDY_OK) {
            char want[48];
            snprintf(want, sizeof(want), "re-%s", id);
            a->answered += strcmp(eddy_event_id(reply), want) == 0;
        }
        eddy_event_free(reply);
    }
    return NULL;
}

ParameterizedTestParameters(reqrep, many_threads_request_at_once) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, many_threads_request_at_once, .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    asker askers[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        askers[i] = (asker){b, i, 0};
        pthread_create(&t[i], NULL, ask_many, &askers[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(askers[i].answered, 40, "thread %d got %d of its own answers", i,
                     askers[i].answered);
    }
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.answered, 240);
    expect_identity(b, NULL);
    eddy_bus_free(b);
}

ParameterizedTestParameters(reqrep, request_past_its_deadline_is_dropped_unrun) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, request_past_its_deadline_is_dropped_unrun, .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    c.s.read_batch = 1; /* one request at a time: the second waits behind the slow first */
    atomic_store(&slow_ms, 800);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *server = must_bus(&c, &sp, 1);
    eddy_bus *client = must_bus(&c, NULL, 0);
    eddy_event *ev = make_event("slow", "t.slow");
    /* Sent as a plain publish: it occupies the responder while the request expires. */
    cr_assert_eq(eddy_bus_publish(client, "tables.setup", ev, NULL, 0, NULL), EDDY_OK);
    eddy_event_free(ev);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(client, "tables.setup", "expires", "t.echo", 200, NULL, &reply),
                 EDDY_ERR_NO_REPLY);
    cr_expect_eq(ask(client, "tables.setup", "after", "t.echo", 20000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    wait_replied(server, "setup", 1);
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(server, "setup", &cs);
    cr_expect_eq(cs.expired, 1, "the expired request was dropped, not answered");
    cr_expect_eq(cs.replied, 1);
    eddy_request_stats s;
    eddy_bus_request_stats(client, NULL, &s);
    cr_expect_eq(s.unclaimed, 0);
    eddy_bus_free(client);
    eddy_bus_free(server);
}

Test(reqrep, rules_refused_at_build_and_late_subscribe) {
    ctx c;
    setup(&c, 0);
    eddy_error err = {0};
    eddy_bus *b = NULL;
    eddy_subscription_spec sp = responder_spec("r", "a.b", "g");
    sp.handler = rec_handler;
    cr_expect_eq(eddy_bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "both");
    sp = responder_spec("r", "a.b", NULL);
    sp.shape = EDDY_FANOUT;
    cr_expect_eq(eddy_bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "fanout");
    sp = responder_spec("r", "a.b", "g");
    sp.delivery = EDDY_AT_LEAST_ONCE;
    cr_expect_eq(eddy_bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "at least once");
    cr_expect(strstr(err.detail, "'r'"), "%s", err.detail);
    eddy_subscription_spec two[2] = {responder_spec("r1", "a.*", "g1"),
                                     responder_spec("r2", "*.b", "g2")};
    cr_expect_eq(eddy_bus_new(&c.s, two, 2, &b, &err), EDDY_ERR_INVALID_SPEC, "overlap");
    two[1] = responder_spec("r2", "a.b.c", "g2");
    cr_expect_eq(eddy_bus_new(&c.s, two, 2, &b, &err), EDDY_OK, "no overlap: %s", err.detail);
    eddy_bus_free(b);
    two[1] = responder_spec("r2", "a.b", "g1");
    cr_expect_eq(eddy_bus_new(&c.s, two, 2, &b, &err), EDDY_OK, "same group: %s", err.detail);
    eddy_bus_free(b);
    two[1] = responder_spec("h", "x.y", "g1");
    two[1].responder = NULL;
    two[1].handler = rec_handler;
    cr_expect_eq(eddy_bus_new(&c.s, two, 2, &b, &err), EDDY_ERR_INVALID_SPEC, "handler in group");
    eddy_settings nosource = c.s;
    nosource.source = NULL;
    sp = responder_spec("r", "a.b", "g");
    cr_expect_eq(eddy_bus_new(&nosource, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC, "no source");
    const char *empty[] = {""};
    eddy_settings names = c.s;
    names.request_names = empty;
    names.request_name_count = 1;
    cr_expect_eq(eddy_bus_new(&names, NULL, 0, &b, &err), EDDY_ERR_INVALID_SPEC, "empty name");
    const char *dup[] = {"x", "x"};
    names.request_names = dup;
    names.request_name_count = 2;
    cr_expect_eq(eddy_bus_new(&names, NULL, 0, &b, &err), EDDY_ERR_INVALID_SPEC, "duplicate");

    /* The same rules on a late subscribe, on a started bus. */
    sp = responder_spec("r1", "a.*", "g1");
    b = must_bus(&c, &sp, 1);
    eddy_subscription_spec late = responder_spec("r2", "a.>", "g2");
    cr_expect_eq(eddy_bus_subscribe(b, &late, &err), EDDY_ERR_INVALID_SPEC);
    late = responder_spec("h", "q", "g1");
    late.responder = NULL;
    late.handler = rec_handler;
    cr_expect_eq(eddy_bus_subscribe(b, &late, &err), EDDY_ERR_INVALID_SPEC);
    late = responder_spec("r3", "other", "g3");
    cr_expect_eq(eddy_bus_subscribe(b, &late, &err), EDDY_OK, "%s", err.detail);
    /* A late responder counts for requesters as soon as subscribe returns. */
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "other", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    eddy_bus_free(b);
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

Test(reqrep_processes, second_group_in_another_process_is_unclaimed, .timeout = 60) {
    ctx c;
    setup(&c, 1);
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t other = spawn_responder(&c, "second-group", false, ready[1]);
    close(ready[1]); /* a child that dies early then reads as EOF, not a hang */
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "first-group");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.setup", "q", "t.echo", 10000, NULL, &reply), EDDY_OK);
    eddy_event_free(reply);
    stats_wait w = {b, 1};
    cr_expect(eddy_test_wait_until(unclaimed_reached, &w, 20000), "the second answer");
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.answered, 1);
    cr_expect_eq(s.unclaimed, 1);
    eddy_bus_free(b);
}

Test(reqrep_processes, responder_killed_mid_request_gives_no_reply, .timeout = 60) {
    ctx c;
    setup(&c, 1);
    c.s.lease_ms = 900;
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t victim = spawn_responder(&c, "ingress", true, ready[1]);
    close(ready[1]); /* a child that dies early then reads as EOF, not a hang */
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    eddy_bus *b = must_bus(&c, NULL, 0);
    eddy_event *reply = NULL;
    cr_expect_eq(ask(b, "tables.setup", "held", "t.slow", 300, NULL, &reply), EDDY_ERR_NO_REPLY,
                 "subscribed in another process, but the answer never comes");
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    /* Once its lease ends, the dead process no longer counts as subscribed. */
    eddy_status st = EDDY_ERR_NO_REPLY;
    for (int i = 0; i < 100 && st != EDDY_ERR_NO_RESPONDERS; i++) {
        st = ask(b, "tables.setup", "again", "t.echo", 100, NULL, &reply);
        eddy_event_free(reply);
    }
    cr_expect_eq(st, EDDY_ERR_NO_RESPONDERS);
    expect_identity(b, NULL);
    eddy_bus_free(b);
}

static bool refused_one(void *arg) {
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(arg, "setup", &cs);
    return cs.refused >= 1;
}

ParameterizedTestParameters(reqrep, reply_to_outside_the_namespace_is_refused) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *backend, reqrep, reply_to_outside_the_namespace_is_refused, .timeout = 60) {
    ctx c;
    setup(&c, *backend);
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    /* A request written by hand that asks for its reply in someone else's key. */
    char key[160], deadline[32];
    snprintf(key, sizeof(key), "{%s}:s:tables.setup", c.ns);
    snprintf(deadline, sizeof(deadline), "%lld", eddy_deadline_in(60000));
    const char *argv[] = {"XADD",       key,        "*",   "specversion", "1.0",    "id",
                          "sneaky",     "source",   "/t",  "type",        "t.echo", "_reply_to",
                          "victim:key", "_request", "x.1", "_deadline",   deadline};
    freeReplyObject(raw_cmd(c.url, 17, argv));
    cr_expect(eddy_test_wait_until(refused_one, b, 20000), "the reply-to was not refused");
    eddy_consumer_stats cs;
    eddy_bus_consumer_stats(b, "setup", &cs);
    cr_expect_eq(cs.refused, 1);
    cr_expect_eq(cs.replied, 0);
    cr_expect_eq(raw_int(c.url, "EXISTS victim:key"), 0, "nothing was written there");
    eddy_bus_free(b);
}

Test(reqrep_processes, redis_failing_while_sending_is_a_transport_status_not_counted,
     .timeout = 60) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, 1);
    c.s.url = srv.url;
    c.s.connect_timeout_ms = 500;
    eddy_subscription_spec sp = responder_spec("setup", "tables.setup", "ingress");
    eddy_bus *b = must_bus(&c, &sp, 1);
    eddy_test_redis_kill(&srv);
    eddy_event *reply = NULL;
    eddy_status st = ask(b, "tables.setup", "q", "t.echo", 10000, NULL, &reply);
    cr_expect_eq(st, EDDY_ERR_IO, "%s", eddy_status_name(st));
    eddy_request_stats s;
    eddy_bus_request_stats(b, NULL, &s);
    cr_expect_eq(s.sent, 0);
    eddy_bus_free(b);
}
