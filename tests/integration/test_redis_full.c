/* SPDX-License-Identifier: BSD-3-Clause */
/* Redis full (maxmemory reached under noeviction), on a private redis-server, both front
 * ends: a publish and a request fail at once with EDDY_ERR_SERVER_FULL and a text that says
 * the server is out of memory (the one OOM mapping, src/link/redis.c), nothing is written,
 * consumers keep draining what is there (reads and acknowledgements are not refused), and
 * publishing resumes by itself on the same bus once memory frees. The blocking store's append
 * says the same. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "recorder.h"
#include "redis_server.h"

#define BACKLOG 50

static eddy_test_redis srv;

static void kill_server(void) { eddy_test_redis_kill(&srv); }

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)d;
    (void)user;
    *reply = make_event("re", "t.reply");
    return EDDY_OK;
}

static long long used_memory(int port) {
    redisReply *r = eddy_test_cmd_at(port, "INFO memory");
    cr_assert(r && (r->type == REDIS_REPLY_STRING));
    const char *at = strstr(r->str, "used_memory:");
    cr_assert(at, "no used_memory in INFO");
    long long n = atoll(at + strlen("used_memory:"));
    freeReplyObject(r);
    return n;
}

static void cmd_ok(int port, const char *fmt, const char *a, const char *b) {
    redisReply *r = eddy_test_cmd_at(port, fmt, a, b);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", fmt, r ? r->str : "no reply");
    freeReplyObject(r);
}

typedef struct pend {
    int port;
    const char *ns;
} pend;

/* The group's pending count (XPENDING's summary), -1 when it cannot be read. */
static long long pending(int port, const char *ns) {
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:full.x", ns);
    redisReply *r = eddy_test_cmd_at(port, "XPENDING %s %s", key, "g");
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

static bool nothing_pending(void *arg) {
    pend *p = arg;
    return pending(p->port, p->ns) == 0;
}

static eddy_status publish_one(const driver *d, tbus *b, const char *id, eddy_error *err) {
    eddy_event *ev = make_event(id, "t.x");
    eddy_status st = d->publish(b, "full.x", ev, err);
    eddy_event_free(ev);
    return st;
}

static int frontends[] = {0, 1};

ParameterizedTestParameters(redis_full, publish_fails_at_once_consumers_drain_and_it_resumes) {
    return cr_make_param_array(int, frontends, 2);
}
ParameterizedTest(int *frontend, redis_full, publish_fails_at_once_consumers_drain_and_it_resumes,
                  .timeout = 120, .fini = kill_server) {
    const driver *d = *frontend ? &reactive_driver : &blocking_driver;
    static const char *const extra[] = {"--maxmemory-policy", "noeviction", NULL};
    eddy_test_redis_start_with(&srv, 0, extra);
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "full");
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = srv.url;
    s.ns = ns;
    s.source = "/tests/full";
    s.block_ms = 200;
    s.log = eddy_test_log;
    s.log_user = "full";

    recorder rec;
    rec_init(&rec);
    eddy_subscription_spec sp[2];
    eddy_subscription_spec_init(&sp[0]);
    sp[0].name = "s";
    sp[0].pattern = "full.x";
    sp[0].group = "g";
    sp[0].delivery = EDDY_AT_LEAST_ONCE;
    sp[0].handler = rec_handler;
    sp[0].user = &rec;
    sp[0].paused = true; /* the backlog waits until the server is full */
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "svc";
    sp[1].pattern = "full.svc";
    sp[1].group = "svc";
    sp[1].responder = respond;
    tbus *consumer = NULL, *publisher = NULL;
    eddy_error err = {0};
    cr_assert_eq(d->bus_new(&s, sp, 2, &consumer, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(consumer, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->bus_new(&s, NULL, 0, &publisher, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(publisher, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < BACKLOG; i++) {
        char id[32];
        snprintf(id, sizeof(id), "m-%d", i);
        cr_assert_eq(publish_one(d, publisher, id, &err), EDDY_OK, "%s", err.detail);
    }
    eddy_event *q = make_event("q0", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    eddy_event *reply = NULL;
    cr_assert_eq(d->request(publisher, "full.svc", q, &o, &reply, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(reply);
    reply = NULL;

    /* The store (blocking) opened while there is room: opening loads its functions. */
    eddy_store *store = NULL;
    if (!*frontend) {
        cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
        eddy_event *ev = make_event("stored-0", "t.stored");
        const eddy_event *evs[] = {ev};
        cr_assert_eq(eddy_store_append(store, "acct-1", evs, 1, NULL, NULL, &err), EDDY_OK, "%s",
                     err.detail);
        eddy_event_free(ev);
    }

    /* Full: 4 MiB of ballast, and maxmemory 1 MiB below what is used. */
    char ballast[128];
    snprintf(ballast, sizeof(ballast), "{%s}:ballast", ns);
    cmd_ok(srv.port, "SETRANGE %s 4194303 %s", ballast, "x");
    char limit[32];
    snprintf(limit, sizeof(limit), "%lld", used_memory(srv.port) - 1024 * 1024);
    cmd_ok(srv.port, "CONFIG SET %s %s", "maxmemory", limit);

    eddy_status st = publish_one(d, publisher, "refused", &err);
    cr_expect_eq(st, EDDY_ERR_SERVER_FULL, "%s: %s", eddy_status_name(st), err.detail);
    /* Reactive: the outcome is a status alone, whose text says it. */
    cr_expect(strstr(*frontend ? eddy_status_str(st) : err.detail, "out of memory"), "%s",
              err.detail);
    cr_expect_eq(eddy_test_redis_int(srv.url, "XLEN {%s}:s:full.x", ns), BACKLOG,
                 "nothing written");
    o.deadline_ms = eddy_deadline_in(10000);
    st = d->request(publisher, "full.svc", q, &o, &reply, &err);
    cr_expect_eq(st, EDDY_ERR_SERVER_FULL, "request: %s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(*frontend ? eddy_status_str(st) : err.detail, "out of memory"), "%s",
              err.detail);
    eddy_event_free(reply);
    reply = NULL;
    if (store) {
        eddy_event *ev = make_event("stored", "t.stored");
        const eddy_event *evs[] = {ev};
        st = eddy_store_append(store, "acct-1", evs, 1, NULL, NULL, &err);
        cr_expect_eq(st, EDDY_ERR_SERVER_FULL, "append: %s: %s", eddy_status_name(st), err.detail);
        cr_expect(strstr(err.detail, "out of memory"), "%s", err.detail);
        eddy_event_free(ev);
    }

    /* Consumers keep draining while the server is full. */
    cr_assert_eq(d->resume(consumer, "s", &err), EDDY_OK, "%s", err.detail);
    cr_expect(rec_wait(&rec, BACKLOG, 30000), "handled %d of %d while full", rec_count(&rec),
              BACKLOG);
    pend p = {srv.port, ns};
    cr_expect(eddy_test_wait_until(nothing_pending, &p, 30000),
              "acknowledgements refused: %lld pending", pending(srv.port, ns));
    cr_expect_gt(used_memory(srv.port), atoll(limit), "the server stayed full meanwhile");

    /* Memory frees: the same buses publish and answer again, by themselves. */
    cmd_ok(srv.port, "DEL %s%s", ballast, "");
    cr_expect_eq(publish_one(d, publisher, "after", &err), EDDY_OK, "%s", err.detail);
    cr_expect(rec_wait(&rec, BACKLOG + 1, 30000), "the message after the freeing");
    cr_expect_eq(rec_seen(&rec, "after"), 1);
    cr_expect_eq(rec_seen(&rec, "refused"), 0);
    /* The responder's lease could not be renewed while full: it is again by its next renewal. */
    long long until = eddy_test_now_ms() + 30000;
    do {
        o.deadline_ms = eddy_deadline_in(5000);
        st = d->request(publisher, "full.svc", q, &o, &reply, &err);
        eddy_event_free(reply);
        reply = NULL;
    } while (st == EDDY_ERR_NO_RESPONDERS && eddy_test_now_ms() < until);
    cr_expect_eq(st, EDDY_OK, "request after the freeing: %s: %s", eddy_status_name(st),
                 err.detail);
    if (store) {
        eddy_event *ev = make_event("stored-1", "t.stored");
        const eddy_event *evs[] = {ev};
        cr_expect_eq(eddy_store_append(store, "acct-1", evs, 1, NULL, NULL, &err), EDDY_OK,
                     "append after the freeing: %s", err.detail);
        eddy_event_free(ev);
        eddy_store_close(store);
    }
    eddy_event_free(q);
    d->free(publisher);
    d->free(consumer);
    rec_destroy(&rec);
}
