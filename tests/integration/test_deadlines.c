/* SPDX-License-Identifier: BSD-3-Clause */
/* Deadlines on the blocking front end when Redis stops answering (SIGSTOP of a private
 * redis-server): a publish returns with EDDY_ERR_TIMEOUT (its commands were sent, the outcome
 * is unknown) or EDDY_ERR_IO (not sent), a request returns by its own deadline, and after
 * SIGCONT everything works again on the same bus. The time limits asserted are the deadline
 * plus several seconds: they catch a call that waits for SIGCONT, not a slow machine. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "eddy/blocking.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "recorder.h"
#include "redis_server.h"

#define COMMAND_TIMEOUT_MS 1000
#define REQUEST_TIMEOUT_MS 1000
#define SLACK_MS 8000 /* a loaded machine's worst: the assertion is "it returned", not speed */

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    eddy_event *r = make_event("re", "t.reply");
    (void)d;
    *reply = r;
    return EDDY_OK;
}

typedef struct setup {
    eddy_test_redis srv;
    char ns[96];
    eddy_bus *bus;
} setup;

static void start_with(setup *t, unsigned command_timeout_ms) {
    eddy_test_redis_start(&t->srv, 0);
    eddy_test_namespace(t->ns, sizeof(t->ns), "dl");
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = t->srv.url;
    s.ns = t->ns;
    s.source = "/tests/deadlines";
    s.block_ms = 200;
    s.command_timeout_ms = command_timeout_ms;
    s.connect_timeout_ms = 1000;
    s.log = eddy_test_log;
    s.log_user = "deadlines";
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "svc";
    sp.pattern = "svc";
    sp.group = "svc";
    sp.responder = respond;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &t->bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(t->bus, &err), EDDY_OK, "%s", err.detail);
}

static void start(setup *t) { start_with(t, COMMAND_TIMEOUT_MS); }

static eddy_status ask(eddy_bus *bus, eddy_error *err) {
    eddy_event *ev = make_event("q", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(REQUEST_TIMEOUT_MS), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_status st = eddy_bus_request(bus, "svc", ev, &o, &reply, err);
    eddy_event_free(reply);
    eddy_event_free(ev);
    return st;
}

static bool answered(void *bus) {
    eddy_error err;
    return ask(bus, &err) == EDDY_OK;
}

static eddy_status publish(eddy_bus *bus, const char *id, eddy_error *err) {
    eddy_event *ev = make_event(id, "t.pub");
    eddy_status st = eddy_bus_publish(bus, "pub", ev, NULL, 0, err);
    eddy_event_free(ev);
    return st;
}

/* The text of a request that returns at its own deadline (1000 ms, shorter than the command
 * timeout of 2000 ms) while Redis is stopped says one thing: sent and unknown, or not sent,
 * and never the command timeout's figure, which played no part. */
Test(deadlines, a_request_timeout_text_says_one_thing, .timeout = 120) {
    setup t;
    start_with(&t, 2000);
    cr_assert(eddy_test_wait_until(answered, t.bus, 20000), "a request answered before the stop");
    cr_assert_eq(kill(t.srv.pid, SIGSTOP), 0);
    eddy_error err = {0};
    long long t0 = eddy_test_now_ms();
    eddy_status st = ask(t.bus, &err);
    long long took = eddy_test_now_ms() - t0;
    cr_assert_eq(kill(t.srv.pid, SIGCONT), 0);
    cr_expect_neq(st, EDDY_OK);
    cr_expect_lt(took, REQUEST_TIMEOUT_MS + SLACK_MS, "request took %lld ms", took);
    bool unknown = strstr(err.detail, "outcome unknown") != NULL;
    bool not_sent = strstr(err.detail, "not sent") != NULL;
    cr_expect(!(unknown && not_sent), "both sent and not sent: %s", err.detail);
    cr_expect_null(strstr(err.detail, "2000"), "the command timeout's figure: %s", err.detail);
    /* Redis not answering is no outcome of a request: its deadline is (or the connection's loss
     * before anything was written). */
    cr_expect(st == EDDY_ERR_NO_REPLY || st == EDDY_ERR_IO, "%s: %s", eddy_status_name(st),
              err.detail);
    eddy_bus_free(t.bus);
    eddy_test_redis_kill(&t.srv);
}

/* A deadline past the command timeout: the request's step is not answered in time, and the
 * request still waits for its deadline (its entry may have gone out and a reply may come). */
Test(deadlines, a_request_redis_does_not_answer_ends_at_its_own_deadline, .timeout = 120) {
    setup t;
    start_with(&t, 500);
    cr_assert(eddy_test_wait_until(answered, t.bus, 20000), "a request answered before the stop");
    cr_assert_eq(kill(t.srv.pid, SIGSTOP), 0);
    eddy_error err = {0};
    long long t0 = eddy_test_now_ms();
    eddy_status st = ask(t.bus, &err); /* REQUEST_TIMEOUT_MS, twice the command timeout */
    long long took = eddy_test_now_ms() - t0;
    cr_assert_eq(kill(t.srv.pid, SIGCONT), 0);
    cr_expect_eq(st, EDDY_ERR_NO_REPLY, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect_geq(took, REQUEST_TIMEOUT_MS - 10, "ended after %lld ms, before its deadline", took);
    eddy_request_stats rs;
    cr_assert_eq(eddy_bus_request_stats(t.bus, NULL, &rs), EDDY_OK);
    cr_expect_eq(rs.sent, rs.answered + rs.no_responders + rs.no_reply + rs.failed,
                 "sent %lu answered %lu no_reply %lu", (unsigned long)rs.sent,
                 (unsigned long)rs.answered, (unsigned long)rs.no_reply);
    eddy_bus_free(t.bus);
    eddy_test_redis_kill(&t.srv);
}

Test(deadlines, calls_return_by_their_deadline_while_redis_is_stopped, .timeout = 120) {
    setup t;
    start(&t);
    eddy_error err = {0};
    cr_assert_eq(publish(t.bus, "before", &err), EDDY_OK, "%s", err.detail);
    cr_assert(eddy_test_wait_until(answered, t.bus, 20000), "a request answered before the stop");

    cr_assert_eq(kill(t.srv.pid, SIGSTOP), 0);
    long long t0 = eddy_test_now_ms();
    eddy_status st = publish(t.bus, "during", &err);
    long long took = eddy_test_now_ms() - t0;
    /* A small publish fits the socket's buffers: it was sent, its outcome is unknown. */
    cr_expect_eq(st, EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect_lt(took, COMMAND_TIMEOUT_MS + SLACK_MS, "publish took %lld ms", took);
    /* The next one goes on a new connection, which cannot be made: not sent. */
    t0 = eddy_test_now_ms();
    st = publish(t.bus, "during-2", &err);
    took = eddy_test_now_ms() - t0;
    cr_expect(st == EDDY_ERR_IO || st == EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(st),
              err.detail);
    cr_expect_lt(took, COMMAND_TIMEOUT_MS + 1000 + SLACK_MS, "publish took %lld ms", took);

    t0 = eddy_test_now_ms();
    st = ask(t.bus, &err);
    took = eddy_test_now_ms() - t0;
    cr_expect(st == EDDY_ERR_NO_REPLY || st == EDDY_ERR_IO, "%s: %s", eddy_status_name(st),
              err.detail);
    cr_expect_lt(took, REQUEST_TIMEOUT_MS + SLACK_MS, "request took %lld ms (%s)", took,
                 eddy_status_name(st));

    cr_assert_eq(kill(t.srv.pid, SIGCONT), 0);
    cr_expect_eq(publish(t.bus, "after", &err), EDDY_OK, "%s", err.detail);
    cr_expect(eddy_test_wait_until(answered, t.bus, 20000), "requests answered again");
    /* "during" was sent before the stop: the server ran it once it went on. */
    cr_expect_geq(eddy_test_redis_int(t.srv.url, "XLEN {%s}:s:pub", t.ns), 3);
    eddy_bus_free(t.bus);
    eddy_test_redis_kill(&t.srv);
}

Test(deadlines, command_timeout_ms_is_validated) {
    eddy_settings s;
    eddy_settings_init(&s);
    cr_expect_eq(s.command_timeout_ms, 5000);
    s.command_timeout_ms = 0;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "command_timeout_ms"), "%s", err.detail);
}

static eddy_status noop(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    (void)meta;
    (void)user;
    return EDDY_OK;
}

Test(deadlines, store_calls_return_by_the_command_timeout_while_redis_is_stopped, .timeout = 120) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    char ns[96];
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = srv.url;
    s.ns = eddy_test_namespace(ns, sizeof(ns), "dls");
    s.command_timeout_ms = COMMAND_TIMEOUT_MS;
    s.connect_timeout_ms = 1000;
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("s1", "t.stored");
    const eddy_event *evs[] = {ev};
    cr_assert_eq(eddy_store_append(store, "acct-1", evs, 1, NULL, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    long long t0 = eddy_test_now_ms();
    eddy_status st = eddy_store_append(store, "acct-1", evs, 1, NULL, NULL, &err);
    long long took = eddy_test_now_ms() - t0;
    cr_expect(st == EDDY_ERR_TIMEOUT || st == EDDY_ERR_IO, "%s: %s", eddy_status_name(st),
              err.detail);
    cr_expect_lt(took, COMMAND_TIMEOUT_MS + SLACK_MS, "append took %lld ms", took);
    t0 = eddy_test_now_ms();
    st = eddy_store_read_stream(store, "acct-1", 0, noop, NULL, &err);
    took = eddy_test_now_ms() - t0;
    cr_expect(st == EDDY_ERR_TIMEOUT || st == EDDY_ERR_IO, "%s: %s", eddy_status_name(st),
              err.detail);
    cr_expect_lt(took, 1000 + COMMAND_TIMEOUT_MS + SLACK_MS, "read took %lld ms", took);
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    long long head = 0;
    cr_expect_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    cr_expect_geq(head, 1);
    eddy_event_free(ev);
    eddy_store_close(store);
    eddy_test_redis_kill(&srv);
}
