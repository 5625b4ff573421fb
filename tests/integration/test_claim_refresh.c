/* SPDX-License-Identifier: BSD-3-Clause */
/* Long handlers keep their claim: two competing consumers (two buses, one group) and one
 * message whose handler holds it (EDDY_PENDING) three times redelivery_idle_ms. Told that it is
 * still being worked on (eddy_delivery_in_progress, or settings.claim_refresh), the other
 * consumer's claim rounds leave it: it is delivered once. Told nothing, it is claimed and
 * delivered again; and once the telling stops (as when a process dies), it is too. Every
 * front end and backend, and a Redis Cluster namespace (a cluster of the test's own) for the
 * told modes and the untold one. No timing is asserted: a redelivery is waited for, and "delivered
 * once" is what the stats say after the holder finished. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy_test.h"
#include "recorder.h"
#include "redis_cluster.h"

/* Redelivery after 1.5 s idle; a refresh every 0.5 s leaves 1 s of slack for a loaded machine. */
#define IDLE_MS 1500
#define HOLD_MS (3 * IDLE_MS)

typedef enum mode { TELL_NOTHING, TELL_BY_HAND, TELL_AUTOMATICALLY, TELL_THEN_STOP } mode;

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis, 2 a Redis Cluster */
    mode how;
} combo;

static combo combos[] = {
    {0, 0, TELL_NOTHING},       {0, 1, TELL_NOTHING},       {1, 0, TELL_NOTHING},
    {1, 1, TELL_NOTHING},       {0, 0, TELL_BY_HAND},       {0, 1, TELL_BY_HAND},
    {1, 0, TELL_BY_HAND},       {1, 1, TELL_BY_HAND},       {0, 0, TELL_AUTOMATICALLY},
    {0, 1, TELL_AUTOMATICALLY}, {1, 0, TELL_AUTOMATICALLY}, {1, 1, TELL_AUTOMATICALLY},
    {0, 0, TELL_THEN_STOP},     {0, 1, TELL_THEN_STOP},     {1, 0, TELL_THEN_STOP},
    {1, 1, TELL_THEN_STOP},     {0, 2, TELL_NOTHING},       {1, 2, TELL_NOTHING},
    {0, 2, TELL_BY_HAND},       {1, 2, TELL_BY_HAND},       {0, 2, TELL_AUTOMATICALLY},
    {1, 2, TELL_AUTOMATICALLY}};

/* What the handlers of both buses saw: the first delivery is held; later ones succeed. */
typedef struct seen {
    pthread_mutex_t lock;
    int deliveries;
    unsigned last_attempt;
    eddy_delivery *first; /* held with EDDY_PENDING */
    int first_bus;
} seen;

typedef struct handler_ctx {
    seen *s;
    int bus;
} handler_ctx;

static eddy_status hold_first(eddy_delivery *d, void *user) {
    handler_ctx *h = user;
    pthread_mutex_lock(&h->s->lock);
    h->s->deliveries++;
    h->s->last_attempt = eddy_delivery_attempt(d);
    bool first = h->s->first == NULL;
    if (first) {
        h->s->first = d;
        h->s->first_bus = h->bus;
    }
    pthread_mutex_unlock(&h->s->lock);
    return first ? EDDY_PENDING : EDDY_OK;
}

static int deliveries(seen *s) {
    pthread_mutex_lock(&s->lock);
    int n = s->deliveries;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static bool delivered_once(void *arg) { return deliveries(arg) >= 1; }
static bool delivered_again(void *arg) { return deliveries(arg) >= 2; }

static void finish_ok(void *arg) { eddy_delivery_finish(arg, EDDY_OK); }

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Tells every 100 ms for `ms` (the handler's progress reports); from this thread: any thread may
 * while the delivery is held. */
static void tell_for(eddy_delivery *d, long ms) {
    for (long t = 0; t < ms; t += 100) {
        eddy_delivery_in_progress(d);
        sleep_ms(100);
    }
}

typedef struct handled_wait {
    const driver *d;
    tbus *b;
} handled_wait;

static bool first_finished(void *arg) {
    handled_wait *w = arg;
    eddy_consumer_stats st;
    return w->d->stats(w->b, "work", &st) == EDDY_OK && st.handled >= 1;
}

ParameterizedTestParameters(claim_refresh, a_held_delivery) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, claim_refresh, a_held_delivery, .timeout = 90) {
    const driver *d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    char ns[96], url[256];
    eddy_test_namespace(ns, sizeof(ns), "claim");
    eddy_test_cluster cluster;
    if (p->backend == 0)
        snprintf(url, sizeof(url), "memory://%s", ns);
    else if (p->backend == 1)
        snprintf(url, sizeof(url), "%s", eddy_test_redis_url());
    if (p->backend == 2) {
        eddy_test_cluster_start(&cluster);
        snprintf(url, sizeof(url), "%s", cluster.url);
    }
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.source = "/tests";
    s.block_ms = 200;
    s.redelivery_idle_ms = IDLE_MS;
    s.claim_refresh = p->how == TELL_AUTOMATICALLY;
    s.log = eddy_test_log;
    s.log_user = p->backend == 0 ? "memory" : p->backend == 1 ? "redis" : "cluster";
    seen sn = {.lock = PTHREAD_MUTEX_INITIALIZER};
    handler_ctx h[2] = {{&sn, 0}, {&sn, 1}};
    tbus *b[2];
    eddy_error err = {0};
    for (int i = 0; i < 2; i++) {
        eddy_subscription_spec sp;
        eddy_subscription_spec_init(&sp);
        sp.name = "work";
        sp.pattern = "jobs";
        sp.group = "workers";
        sp.delivery = EDDY_AT_LEAST_ONCE;
        sp.handler = hold_first;
        sp.user = &h[i];
        cr_assert_eq(d->bus_new(&s, &sp, 1, &b[i], &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(d->start(b[i], &err), EDDY_OK, "%s", err.detail);
    }
    eddy_event *ev = make_event("long-job", "t.long");
    cr_assert_eq(d->publish(b[0], "jobs", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(eddy_test_wait_until(delivered_once, &sn, 20000), "never delivered");
    pthread_mutex_lock(&sn.lock);
    eddy_delivery *held = sn.first;
    tbus *holder = b[sn.first_bus];
    pthread_mutex_unlock(&sn.lock);

    switch (p->how) {
    case TELL_NOTHING:
        cr_expect(eddy_test_wait_until(delivered_again, &sn, 30000),
                  "a delivery held past redelivery_idle_ms untold was not redelivered");
        break;
    case TELL_BY_HAND:
        tell_for(held, HOLD_MS);
        break;
    case TELL_AUTOMATICALLY:
        sleep_ms(HOLD_MS); /* the handler's work; the bus tells */
        break;
    case TELL_THEN_STOP:
        tell_for(held, IDLE_MS);
        cr_expect(eddy_test_wait_until(delivered_again, &sn, 30000),
                  "a delivery whose progress reports stopped was not redelivered");
        break;
    }
    d->run(holder, finish_ok, held);
    handled_wait w = {d, holder};
    cr_assert(eddy_test_wait_until(first_finished, &w, 20000), "the held delivery never settled");
    if (p->how == TELL_BY_HAND || p->how == TELL_AUTOMATICALLY) {
        int n = deliveries(&sn);
        cr_expect_eq(n, 1, "told, it was still delivered %d times (last attempt %u)", n,
                     sn.last_attempt);
    }
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(d->stop(b[i]), EDDY_OK);
        d->free(b[i]);
    }
    if (p->backend == 2)
        eddy_test_cluster_stop(&cluster);
}
