/* SPDX-License-Identifier: BSD-3-Clause */
/* ThreadSanitizer harness: scatter-gather requests. Six threads send scatter-gather requests
 * through one bus to three responder buses that answer them (4 workers each; one of them slow
 * for some requests, one failing for others), asking for every reply, for two, or stopping at
 * a failure, while counters are read and some requests are cancelled from another thread;
 * then gathers wait while their bus is stopped. Every outcome comes with its list. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tsan_support.h"

#define THREADS 6
#define PER_THREAD 20
#define INSTANCES 3

typedef struct state {
    eddy_bus *requester;
    eddy_cancel *tokens[THREADS];
    atomic_bool stop_canceller;
    atomic_int outcomes, refused; /* refused: a token already fired (not sent, no list) */
} state;

static const int instance_no[INSTANCES] = {0, 1, 2};

static eddy_status answer(eddy_delivery *d, eddy_event **reply, void *user) {
    int inst = *(const int *)user;
    int n = tsan_event_number(eddy_event_id(eddy_delivery_event(d)));
    if (inst == 1 && n % 5 == 0)
        return EDDY_ERR_HANDLER_FAILED;
    if (inst == 2 && n % 7 == 0)
        tsan_sleep_ms(150);
    return eddy_delivery_new_reply(d, "tsan.reply", reply, NULL);
}

typedef struct caller {
    state *s;
    int k;
    const char *prefix;
} caller;

static void *gathers(void *arg) {
    caller *c = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        int n = c->k * 1000 + i;
        eddy_event *ev = tsan_event(c->prefix, n, "tsan.ask");
        eddy_gather_opts o;
        eddy_gather_opts_init(&o);
        o.deadline_ms = eddy_deadline_in(i % 4 == 0 ? 100 : 2000);
        o.max_replies = i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : INSTANCES;
        o.stop_on_failure = i % 2 == 0;
        o.cancel = i % 5 == 4 ? c->s->tokens[c->k] : NULL;
        eddy_replies *r = NULL;
        eddy_error err;
        eddy_status st = eddy_bus_request_all(c->s->requester, "tables.all", ev, &o, &r, &err);
        CHECK(st == EDDY_OK || st == EDDY_ERR_NO_REPLY || st == EDDY_ERR_RESPONDER_FAILED,
              "gather %d: %s", n, eddy_status_name(st));
        if (!r) {
            CHECK(st == EDDY_ERR_NO_REPLY && o.cancel, "gather %d: no list with %s", n,
                  eddy_status_name(st));
            atomic_fetch_add(&c->s->refused, 1);
        }
        CHECK(eddy_replies_count(r) <= INSTANCES, "gather %d: %zu replies", n,
              eddy_replies_count(r));
        for (size_t j = 0; j < eddy_replies_count(r); j++)
            CHECK(eddy_replies_result(r, j) == EDDY_OK ? eddy_replies_event(r, j) != NULL
                                                       : eddy_replies_event(r, j) == NULL,
                  "gather %d: reply %zu", n, j);
        atomic_fetch_add(&c->s->outcomes, 1);
        eddy_replies_free(r);
        eddy_event_free(ev);
    }
    return NULL;
}

static void *canceller(void *arg) {
    state *s = arg;
    while (!atomic_load(&s->stop_canceller)) {
        for (int k = 0; k < THREADS; k++) {
            if (!eddy_cancel_fired(s->tokens[k]))
                eddy_cancel_fire(s->tokens[k]);
        }
        tsan_sleep_ms(30);
    }
    return NULL;
}

typedef struct waiter {
    state *s;
    int n;
    const char *prefix;
} waiter;

static void *wait_stop(void *arg) {
    waiter *w = arg;
    eddy_event *ev = tsan_event(w->prefix, 90000 + w->n, "tsan.ask");
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(10000);
    eddy_replies *r = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_request_all(w->s->requester, "tables.all", ev, &o, &r, &err);
    CHECK(st == EDDY_ERR_NO_REPLY || st == EDDY_ERR_NOT_READY, "waiting through a stop: %s",
          eddy_status_name(st));
    eddy_replies_free(r);
    eddy_event_free(ev);
    return NULL;
}

static void scenario(const tsan_run *run) {
    state s = {0};
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "sg-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_bus *responders[INSTANCES] = {NULL};
    eddy_error err;
    for (int i = 0; i < INSTANCES; i++) {
        eddy_subscription_spec sp;
        eddy_subscription_spec_init(&sp);
        sp.name = "all";
        sp.pattern = "tables.*";
        sp.group = "ingress";
        sp.responder = answer;
        sp.user = (void *)&instance_no[i];
        CHECK_OK(eddy_bus_new(&set, &sp, 1, &responders[i], &err), &err, "responder bus");
        if (responders[i]) {
            CHECK_OK(eddy_bus_answer_all(responders[i], "all", &err), &err, "answer_all");
            CHECK_OK(eddy_bus_start(responders[i], &err), &err, "start responder");
        }
    }
    CHECK_OK(eddy_bus_new(&set, NULL, 0, &s.requester, &err), &err, "requester bus");
    if (!s.requester) {
        for (int i = 0; i < INSTANCES; i++)
            eddy_bus_free(responders[i]);
        return;
    }
    CHECK_OK(eddy_bus_start(s.requester, &err), &err, "start requester");
    for (int k = 0; k < THREADS; k++)
        s.tokens[k] = eddy_cancel_new();
    pthread_t can, threads[THREADS];
    pthread_create(&can, NULL, canceller, &s);
    caller callers[THREADS];
    for (int k = 0; k < THREADS; k++) {
        callers[k] = (caller){&s, k, prefix};
        pthread_create(&threads[k], NULL, gathers, &callers[k]);
    }
    for (int polls = 0; polls < 30; polls++) {
        eddy_request_stats rs;
        CHECK_OK(eddy_bus_request_stats(s.requester, NULL, &rs), NULL, "stats");
        eddy_consumer_stats cs;
        CHECK_OK(eddy_bus_consumer_stats(responders[0], "all", &cs), NULL, "responder stats");
        tsan_sleep_ms(10);
    }
    for (int k = 0; k < THREADS; k++)
        pthread_join(threads[k], NULL);
    atomic_store(&s.stop_canceller, true);
    pthread_join(can, NULL);
    CHECK(atomic_load(&s.outcomes) == THREADS * PER_THREAD, "%d outcomes",
          atomic_load(&s.outcomes));
    eddy_request_stats rs;
    CHECK_OK(eddy_bus_request_stats(s.requester, NULL, &rs), NULL, "stats");
    CHECK(rs.sent == (uint64_t)(THREADS * PER_THREAD - atomic_load(&s.refused)), "sent %llu",
          (unsigned long long)rs.sent);
    CHECK(rs.sent == rs.answered + rs.no_responders + rs.no_reply + rs.failed,
          "sent %llu != answered %llu + no_responders %llu + no_reply %llu + failed %llu",
          (unsigned long long)rs.sent, (unsigned long long)rs.answered,
          (unsigned long long)rs.no_responders, (unsigned long long)rs.no_reply,
          (unsigned long long)rs.failed);

    /* Gathers waiting when their bus stops. */
    pthread_t waiters[3];
    waiter ws[3];
    for (int k = 0; k < 3; k++) {
        ws[k] = (waiter){&s, k, prefix};
        pthread_create(&waiters[k], NULL, wait_stop, &ws[k]);
    }
    tsan_sleep_ms(100);
    CHECK_OK(eddy_bus_stop(s.requester), NULL, "stop requester");
    for (int k = 0; k < 3; k++)
        pthread_join(waiters[k], NULL);
    eddy_bus_free(s.requester);
    for (int i = 0; i < INSTANCES; i++)
        eddy_bus_free(responders[i]);
    for (int k = 0; k < THREADS; k++)
        eddy_cancel_free(s.tokens[k]);
}

int main(void) {
    const tsan_scenario scenarios[] = {scenario};
    const char *const names[] = {"scatter-gather"};
    return tsan_main("tsan_gather", scenarios, names, 1);
}
