/* SPDX-License-Identifier: BSD-3-Clause */
/* rediss:// on the reactive front end, against Debian's redis-server speaking only TLS with
 * certificates this test makes (tls_server.h): publish, consume and request work on the loop;
 * a wrong CA and a wrong host name are refused with EDDY_ERR_TLS (a start that cannot connect
 * fails with EDDY_ERR_IO, saying why). */
#include <criterion/criterion.h>
#include <ev.h>
#include <stdio.h>
#include <string.h>

#include "eddy/reactive.h"
#include "eddy_test.h"
#include "recorder.h"
#include "tls_server.h"

static eddy_test_tls_files files;
static eddy_test_redis srv;

static void setup_tls(void) {
    eddy_test_tls_certs(&files);
    eddy_test_tls_redis_start(&srv, &files, files.server_cert, 0);
}

static void teardown_tls(void) {
    eddy_test_redis_kill(&srv);
    eddy_test_tls_certs_remove(&files);
}

TestSuite(rtls, .init = setup_tls, .fini = teardown_tls, .timeout = 120);

typedef struct tctx {
    struct ev_loop *loop;
    char ns[96];
    eddy_settings s;
} tctx;

static void setup(tctx *t) {
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_settings_init(&t->s);
    t->s.url = srv.url;
    t->s.ns = eddy_test_namespace(t->ns, sizeof(t->ns), "rtls");
    t->s.source = "/tests/rtls";
    t->s.block_ms = 200;
    t->s.connect_timeout_ms = 3000;
    t->s.reconnect_max_ms = 200;
    t->s.log = eddy_test_log;
    t->s.log_user = "rtls";
    t->s.tls_cacert = files.ca;
    t->s.tls_cert = files.client_cert;
    t->s.tls_key = files.client_key;
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {}

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

/* What a callback was told. */
typedef struct outcome {
    int calls;
    eddy_status st;
    char detail[EDDY_ERROR_DETAIL_MAX];
} outcome;

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    outcome *o = user;
    o->calls++;
    o->st = st;
    snprintf(o->detail, sizeof(o->detail), "%s", err ? err->detail : "");
}

static void on_published(eddy_status st, const char *id, void *user) {
    outcome *o = user;
    o->calls++;
    o->st = st;
}

static void on_reply(eddy_status st, eddy_event *reply, void *user) {
    outcome *o = user;
    o->calls++;
    o->st = st;
    snprintf(o->detail, sizeof(o->detail), "%s", reply ? eddy_event_type(reply) : "");
    eddy_event_free(reply);
}

static eddy_status handle(eddy_delivery *d, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    *reply = make_event("re", "t.reply");
    return EDDY_OK;
}

Test(rtls, publish_consume_and_request_over_tls) {
    tctx t;
    setup(&t);
    int consumed = 0;
    eddy_subscription_spec sp[2];
    eddy_subscription_spec_init(&sp[0]);
    sp[0].name = "sub";
    sp[0].pattern = "orders";
    sp[0].group = "g";
    sp[0].delivery = EDDY_AT_LEAST_ONCE;
    sp[0].handler = handle;
    sp[0].user = &consumed;
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "svc";
    sp[1].pattern = "svc";
    sp[1].group = "svc";
    sp[1].responder = respond;
    eddy_rbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_new(t.loop, &t.s, sp, 2, &b, &err), EDDY_OK, "%s", err.detail);
    outcome ready = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &ready, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(&t, &ready.calls, 1, 30000), "not ready");
    cr_assert_eq(ready.st, EDDY_OK, "start: %s", ready.detail);
    enum { N = 50 };
    outcome pub[N] = {0};
    int published = 0;
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof(id), "o%d", i);
        eddy_event *ev = make_event(id, "t.order");
        cr_assert_eq(eddy_rbus_publish(b, "orders", ev, on_published, &pub[i], &err), EDDY_OK, "%s",
                     err.detail);
        eddy_event_free(ev);
    }
    cr_expect(run_until_count(&t, &consumed, N, 20000), "consumed %d of %d", consumed, N);
    for (int i = 0; i < N; i++)
        published += pub[i].calls == 1 && pub[i].st == EDDY_OK;
    cr_expect_eq(published, N);
    eddy_event *q = make_event("q", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(5000), NULL, NULL};
    outcome answer = {0};
    cr_assert_eq(eddy_rbus_request(b, "svc", q, &o, on_reply, &answer, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(q);
    cr_assert(run_until_count(&t, &answer.calls, 1, 10000), "no answer");
    cr_expect_eq(answer.st, EDDY_OK, "%s", eddy_status_name(answer.st));
    cr_expect_str_eq(answer.detail, "t.reply");
    eddy_rbus_free(b);
    ev_loop_destroy(t.loop);
}

/* A publish is refused with EDDY_ERR_TLS, and a start fails saying why. */
static void expect_refused(tctx *t, const char *why) {
    eddy_rbus *b = NULL;
    eddy_error err = {0};
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "sub";
    sp.pattern = "refused";
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = handle;
    int n = 0;
    sp.user = &n;
    cr_assert_eq(eddy_rbus_new(t->loop, &t->s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    outcome pub = {0};
    eddy_event *ev = make_event("x", "t");
    cr_assert_eq(eddy_rbus_publish(b, "refused", ev, on_published, &pub, &err), EDDY_OK);
    eddy_event_free(ev);
    cr_assert(run_until_count(t, &pub.calls, 1, 20000));
    cr_expect_eq(pub.st, EDDY_ERR_TLS, "publish: %s", eddy_status_name(pub.st));
    outcome ready = {0};
    cr_assert_eq(eddy_rbus_start(b, on_ready, &ready, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(t, &ready.calls, 1, 30000));
    cr_expect_eq(ready.st, EDDY_ERR_IO, "start: %s", eddy_status_name(ready.st));
    cr_expect(strstr(ready.detail, why), "detail '%s' should say '%s'", ready.detail, why);
    cr_expect_eq(n, 0);
    eddy_rbus_free(b);
}

Test(rtls, a_wrong_ca_is_refused) {
    tctx t;
    setup(&t);
    t.s.tls_cacert = files.other_ca;
    expect_refused(&t, "certificate");
    ev_loop_destroy(t.loop);
}

Test(rtls, a_wrong_host_name_is_refused) {
    tctx t;
    setup(&t);
    t.s.tls_sni = "not-this-server.example";
    expect_refused(&t, "hostname mismatch");
    ev_loop_destroy(t.loop);
}

Test(rtls, rediss_to_a_plain_port_says_the_handshake_was_not_answered) {
    eddy_test_redis plain;
    eddy_test_redis_start(&plain, 0);
    char url[64];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", plain.port);
    tctx t;
    setup(&t);
    t.s.url = url;
    t.s.connect_timeout_ms = 1000;
    expect_refused(&t, "did not answer the TLS handshake");
    ev_loop_destroy(t.loop);
    eddy_test_redis_kill(&plain);
}

Test(rtls, a_missing_ca_file_is_named_with_the_reason) {
    char path[256];
    snprintf(path, sizeof(path), "%s/no-such-ca.pem", files.dir);
    tctx t;
    setup(&t);
    t.s.tls_cacert = path;
    expect_refused(&t, path);
    ev_loop_destroy(t.loop);
}
