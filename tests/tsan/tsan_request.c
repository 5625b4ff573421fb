/* SPDX-License-Identifier: BSD-3-Clause */
/* ThreadSanitizer harness: request/reply. Eight threads send requests through one bus to a
 * responder bus (4 workers) while counters are read: most are answered at once, some later
 * from a replier thread (EDDY_PENDING and eddy_delivery_reply), some fail in the responder,
 * some go to a subject nobody serves, some wait on a slow responder and are cancelled from
 * another thread. Then requests wait on the slow responder while their bus is stopped. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsan_support.h"

#define THREADS 8
#define PER_THREAD 40

typedef struct pending_node {
    eddy_delivery *d;
    struct pending_node *next;
} pending_node;

typedef struct state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pending_node *queue;
    bool replier_done;
    atomic_int answered, failed, no_responders, cancelled;
    eddy_bus *requester;
    eddy_cancel *tokens[THREADS];
    atomic_bool arm[THREADS]; /* thread k is about to wait on tokens[k] */
    atomic_bool stop_canceller;
} state;

static eddy_event *reply_to(eddy_delivery *d) {
    const char *id = eddy_event_id(eddy_delivery_event(d));
    char rid[128];
    snprintf(rid, sizeof(rid), "reply-%s", id);
    eddy_event *r = eddy_event_new();
    if (r && (eddy_event_set_id(r, rid) || eddy_event_set_source(r, "/eddy/tsan") ||
              eddy_event_set_type(r, "tsan.reply"))) {
        eddy_event_free(r);
        r = NULL;
    }
    return r;
}

static eddy_status echo(eddy_delivery *d, eddy_event **reply, void *user) {
    state *s = user;
    CHECK(eddy_delivery_is_request(d), "a plain publish reached the responder");
    int n = tsan_event_number(eddy_event_id(eddy_delivery_event(d)));
    if (n % 13 == 0)
        return EDDY_ERR_HANDLER_FAILED;
    if (n % 9 == 0) {
        pending_node *p = malloc(sizeof(*p));
        if (!p)
            return EDDY_ERR_NOMEM;
        p->d = d;
        pthread_mutex_lock(&s->mu);
        p->next = s->queue;
        s->queue = p;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        return EDDY_PENDING;
    }
    *reply = reply_to(d);
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static eddy_status slow(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    tsan_sleep_ms(300);
    *reply = reply_to(d);
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static void *replier(void *arg) {
    state *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->queue && !s->replier_done)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->queue)
            break;
        pending_node *p = s->queue;
        s->queue = p->next;
        pthread_mutex_unlock(&s->mu);
        eddy_delivery_reply(p->d, reply_to(p->d));
        free(p);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *canceller(void *arg) {
    state *s = arg;
    while (!atomic_load(&s->stop_canceller)) {
        for (int k = 0; k < THREADS; k++)
            if (atomic_exchange(&s->arm[k], false)) {
                tsan_sleep_ms(20);
                eddy_cancel_fire(s->tokens[k]);
            }
        tsan_sleep_ms(5);
    }
    return NULL;
}

typedef struct caller {
    state *s;
    int index;
    const char *prefix;
} caller;

static void *requests(void *arg) {
    caller *c = arg;
    state *s = c->s;
    for (int i = 0; i < PER_THREAD; i++) {
        int n = c->index * 1000 + i;
        eddy_event *ev = tsan_event(c->prefix, n, "tsan.request");
        eddy_request_opts opts = {0};
        opts.deadline_ms = eddy_deadline_in(10000);
        opts.name = i % 2 ? "echo" : NULL;
        const char *subject = "tables.echo";
        if (i % 10 == 3)
            subject = "nobody.here";
        if (i == 17) {
            subject = "tables.slow";
            opts.cancel = s->tokens[c->index];
            atomic_store(&s->arm[c->index], true);
        }
        eddy_event *reply = NULL;
        eddy_error err;
        eddy_status st = eddy_bus_request(s->requester, subject, ev, &opts, &reply, &err);
        if (i == 17) {
            CHECK(st == EDDY_ERR_NO_REPLY || st == EDDY_OK, "cancelled request: %s",
                  eddy_status_name(st));
            atomic_fetch_add(&s->cancelled, 1);
        } else if (i % 10 == 3) {
            CHECK(st == EDDY_ERR_NO_RESPONDERS, "request to nobody: %s", eddy_status_name(st));
            atomic_fetch_add(&s->no_responders, 1);
        } else if (n % 13 == 0) {
            CHECK(st == EDDY_ERR_RESPONDER_FAILED, "request %d: %s", n, eddy_status_name(st));
            atomic_fetch_add(&s->failed, 1);
        } else {
            CHECK_OK(st, &err, "request");
            if (st == EDDY_OK) {
                char want[128];
                snprintf(want, sizeof(want), "reply-%s", eddy_event_id(ev));
                CHECK(strcmp(eddy_event_id(reply), want) == 0, "reply %s to %s",
                      eddy_event_id(reply), eddy_event_id(ev));
                atomic_fetch_add(&s->answered, 1);
            }
        }
        eddy_event_free(reply);
        eddy_event_free(ev);
    }
    return NULL;
}

typedef struct waiter {
    state *s;
    int n;
    const char *prefix;
} waiter;

static void *wait_slow(void *arg) {
    waiter *w = arg;
    eddy_event *ev = tsan_event(w->prefix, 90000 + w->n, "tsan.request");
    eddy_request_opts opts = {0};
    opts.deadline_ms = eddy_deadline_in(10000);
    eddy_event *reply = NULL;
    eddy_status st = eddy_bus_request(w->s->requester, "tables.slow", ev, &opts, &reply, NULL);
    /* The bus stops while it waits (EDDY_ERR_NO_REPLY); or the stop came first. */
    CHECK(st == EDDY_ERR_NO_REPLY || st == EDDY_ERR_NOT_READY || st == EDDY_OK,
          "request while stopping: %s", eddy_status_name(st));
    eddy_event_free(reply);
    eddy_event_free(ev);
    return NULL;
}

static void scenario(const tsan_run *run) {
    state s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "req-%s", run->backend);
    eddy_settings set;
    tsan_settings(&set, run);
    eddy_subscription_spec specs[2];
    eddy_subscription_spec_init(&specs[0]);
    specs[0].name = "echo";
    specs[0].pattern = "tables.echo";
    specs[0].group = "ingress";
    specs[0].responder = echo;
    specs[0].user = &s;
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "slow";
    specs[1].pattern = "tables.slow";
    specs[1].group = "ingress";
    specs[1].responder = slow;
    eddy_bus *responder = NULL;
    eddy_error err;
    CHECK_OK(eddy_bus_new(&set, specs, 2, &responder, &err), &err, "responder bus");
    const char *names[] = {"echo"};
    set.request_names = names;
    set.request_name_count = 1;
    CHECK_OK(eddy_bus_new(&set, NULL, 0, &s.requester, &err), &err, "requester bus");
    if (!responder || !s.requester) {
        eddy_bus_free(responder);
        eddy_bus_free(s.requester);
        return;
    }
    CHECK_OK(eddy_bus_start(responder, &err), &err, "start responder");
    CHECK_OK(eddy_bus_start(s.requester, &err), &err, "start requester");

    pthread_t rep, can, threads[THREADS];
    pthread_create(&rep, NULL, replier, &s);
    for (int k = 0; k < THREADS; k++)
        s.tokens[k] = eddy_cancel_new();
    pthread_create(&can, NULL, canceller, &s);
    caller callers[THREADS];
    for (int k = 0; k < THREADS; k++) {
        callers[k] = (caller){&s, k, prefix};
        pthread_create(&threads[k], NULL, requests, &callers[k]);
    }
    for (int polls = 0; polls < 50; polls++) {
        eddy_request_stats rs;
        CHECK_OK(eddy_bus_request_stats(s.requester, NULL, &rs), NULL, "stats");
        CHECK_OK(eddy_bus_request_stats(s.requester, "echo", &rs), NULL, "stats echo");
        CHECK_OK(eddy_bus_request_stats(s.requester, "", &rs), NULL, "stats unnamed");
        eddy_consumer_stats cs;
        CHECK_OK(eddy_bus_consumer_stats(responder, "echo", &cs), NULL, "responder stats");
        tsan_sleep_ms(10);
    }
    for (int k = 0; k < THREADS; k++)
        pthread_join(threads[k], NULL);
    atomic_store(&s.stop_canceller, true);
    pthread_join(can, NULL);
    eddy_request_stats rs;
    CHECK_OK(eddy_bus_request_stats(s.requester, NULL, &rs), NULL, "stats");
    CHECK(rs.sent == rs.answered + rs.no_responders + rs.no_reply + rs.failed,
          "sent %llu != answered %llu + no_responders %llu + no_reply %llu + failed %llu",
          (unsigned long long)rs.sent, (unsigned long long)rs.answered,
          (unsigned long long)rs.no_responders, (unsigned long long)rs.no_reply,
          (unsigned long long)rs.failed);
    CHECK(rs.no_responders == (uint64_t)atomic_load(&s.no_responders),
          "no_responders %llu, counted %d", (unsigned long long)rs.no_responders,
          atomic_load(&s.no_responders));

    /* Requests waiting on the slow responder when their bus stops. */
    pthread_t waiters[4];
    waiter ws[4];
    for (int k = 0; k < 4; k++) {
        ws[k] = (waiter){&s, k, prefix};
        pthread_create(&waiters[k], NULL, wait_slow, &ws[k]);
    }
    tsan_sleep_ms(100);
    CHECK_OK(eddy_bus_stop(s.requester), NULL, "stop requester");
    for (int k = 0; k < 4; k++)
        pthread_join(waiters[k], NULL);
    eddy_bus_free(s.requester);
    eddy_bus_free(responder);

    pthread_mutex_lock(&s.mu);
    s.replier_done = true;
    pthread_cond_signal(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(rep, NULL);
    for (int k = 0; k < THREADS; k++)
        eddy_cancel_free(s.tokens[k]);
}

int main(void) {
    const tsan_scenario scenarios[] = {scenario};
    const char *const names[] = {"request-reply"};
    return tsan_main("tsan_request", scenarios, names, 1);
}
