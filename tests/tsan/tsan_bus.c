/* SPDX-License-Identifier: BSD-3-Clause */
/* ThreadSanitizer harness: the bus's threads. Two buses compete in one AtLeastOnce group (4
 * workers each) while three threads publish (one of them in batches); some handlers fail or
 * hand the message back on the first attempt and succeed when it comes again, some finish later
 * from a finisher thread (EDDY_PENDING); a fanout subscriber sees everything; counters are read
 * while all this runs; a late subscription is added on a started bus. Then the bus is stopped
 * and started again while publishers are busy, and everything is stopped and freed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsan_support.h"

#define PUBLISHERS 3
#define PER_PUBLISHER 200
#define TOTAL (PUBLISHERS * PER_PUBLISHER)

typedef struct pending_node {
    eddy_delivery *d;
    struct pending_node *next;
} pending_node;

typedef struct state {
    pthread_mutex_t mu;
    unsigned char handled[TOTAL * 2];
    unsigned char handed_back[TOTAL * 2];
    int distinct; /* ids < TOTAL handled at least once */
    atomic_int calls, fanout, late;
    /* deliveries a handler left pending, finished by the finisher thread */
    pthread_cond_t cv;
    pending_node *queue;
    bool finisher_done;
    const char *prefix;
} state;

static void handled(state *s, int n) {
    pthread_mutex_lock(&s->mu);
    if (n >= 0 && n < TOTAL * 2 && !s->handled[n]) {
        s->handled[n] = 1;
        if (n < TOTAL)
            s->distinct++;
    }
    pthread_mutex_unlock(&s->mu);
}

static eddy_status competing(eddy_delivery *d, void *user) {
    state *s = user;
    atomic_fetch_add(&s->calls, 1);
    int n = tsan_event_number(eddy_event_id(eddy_delivery_event(d)));
    CHECK(n >= 0, "delivery without a numbered id");
    CHECK(eddy_delivery_subject(d) && strncmp(eddy_delivery_subject(d), "orders.", 7) == 0,
          "subject %s", eddy_delivery_subject(d));
    unsigned attempt = eddy_delivery_attempt(d);
    if (attempt == 1 && n % 5 == 0)
        return EDDY_ERR_HANDLER_FAILED; /* comes again after redelivery_idle_ms */
    if (n % 11 == 0 && n < TOTAL * 2) {
        /* Handed back once: it comes again with the same attempt number (not a failure). */
        pthread_mutex_lock(&s->mu);
        bool first = !s->handed_back[n];
        s->handed_back[n] = 1;
        pthread_mutex_unlock(&s->mu);
        if (first)
            return EDDY_ERR_UNAVAILABLE;
    }
    if (n % 7 == 0) {
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
    handled(s, n);
    return EDDY_OK;
}

static void *finisher(void *arg) {
    state *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->queue && !s->finisher_done)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->queue)
            break;
        pending_node *p = s->queue;
        s->queue = p->next;
        pthread_mutex_unlock(&s->mu);
        int n = tsan_event_number(eddy_event_id(eddy_delivery_event(p->d)));
        eddy_delivery_finish(p->d, EDDY_OK);
        handled(s, n);
        free(p);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static eddy_status fanout(eddy_delivery *d, void *user) {
    state *s = user;
    (void)d;
    atomic_fetch_add(&s->fanout, 1);
    return EDDY_OK;
}

static eddy_status late(eddy_delivery *d, void *user) {
    state *s = user;
    (void)d;
    atomic_fetch_add(&s->late, 1);
    return EDDY_OK;
}

typedef struct publisher {
    eddy_bus *bus;
    state *s;
    int index, from, to;
    bool batch;
    atomic_bool *stop; /* phase 2: publish until told to stop */
} publisher;

static void *publish(void *arg) {
    publisher *p = arg;
    char subject[32];
    snprintf(subject, sizeof(subject), "orders.p%d", p->index);
    for (int n = p->from; n < p->to; n += p->batch ? 4 : 1) {
        if (p->stop && atomic_load(p->stop))
            break;
        eddy_error err;
        if (p->batch) {
            eddy_event *evs[4];
            int k = 0;
            for (; k < 4 && n + k < p->to; k++)
                evs[k] = tsan_event(p->s->prefix, n + k, "tsan.order");
            size_t published = 0;
            eddy_status st = eddy_bus_publish_batch(p->bus, subject, (const eddy_event *const *)evs,
                                                    (size_t)k, &published, &err);
            CHECK_OK(st, &err, "publish_batch");
            for (int i = 0; i < k; i++)
                eddy_event_free(evs[i]);
        } else {
            eddy_event *ev = tsan_event(p->s->prefix, n, "tsan.order");
            char entry[64];
            CHECK_OK(eddy_bus_publish(p->bus, subject, ev, entry, sizeof(entry), &err), &err,
                     "publish");
            eddy_event_free(ev);
        }
    }
    return NULL;
}

static eddy_bus *new_bus(const tsan_run *run, state *s, const char *instance, bool with_fanout) {
    eddy_settings set;
    tsan_settings(&set, run);
    set.instance = instance;
    eddy_subscription_spec specs[2];
    eddy_subscription_spec_init(&specs[0]);
    specs[0].name = "work";
    specs[0].pattern = "orders.*";
    specs[0].group = "workers";
    specs[0].delivery = EDDY_AT_LEAST_ONCE;
    specs[0].handler = competing;
    specs[0].user = s;
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "audit";
    specs[1].pattern = "orders.>";
    specs[1].shape = EDDY_FANOUT;
    specs[1].handler = fanout;
    specs[1].user = s;
    eddy_bus *bus = NULL;
    eddy_error err;
    CHECK_OK(eddy_bus_new(&set, specs, with_fanout ? 2 : 1, &bus, &err), &err, "bus_new");
    return bus;
}

static void *subscribe_late(void *arg) {
    void **a = arg;
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "late";
    spec.pattern = "orders.p0";
    spec.group = "late";
    spec.handler = late;
    spec.user = a[1];
    eddy_error err;
    CHECK_OK(eddy_bus_subscribe(a[0], &spec, &err), &err, "late subscribe");
    return NULL;
}

/* Pauses and resumes bus a's competing subscription from its own thread while messages flow,
 * ending resumed (b keeps consuming meanwhile, and a takes its pending entries back on resume). */
typedef struct pauser {
    eddy_bus *bus;
    atomic_bool stop;
} pauser;

static void *pause_resume(void *arg) {
    pauser *p = arg;
    eddy_error err;
    for (int i = 0; !atomic_load(&p->stop) && i < 50; i++) {
        CHECK_OK(eddy_bus_pause(p->bus, "work", &err), &err, "pause");
        tsan_sleep_ms(5);
        CHECK_OK(eddy_bus_resume(p->bus, "work", &err), &err, "resume");
        tsan_sleep_ms(15);
    }
    return NULL;
}

static void scenario(const tsan_run *run) {
    state s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "bus-%s", run->backend);
    s.prefix = prefix;
    pthread_t fin;
    pthread_create(&fin, NULL, finisher, &s);

    eddy_bus *a = new_bus(run, &s, "worker-a", true);
    eddy_bus *b = new_bus(run, &s, "worker-b", false);
    if (!a || !b) {
        eddy_bus_free(a);
        eddy_bus_free(b);
        return;
    }
    eddy_error err;
    CHECK_OK(eddy_bus_start(a, &err), &err, "start a");
    CHECK_OK(eddy_bus_start(b, &err), &err, "start b");

    /* Phase 1: everything published is handled, whatever failed or was handed back first. */
    publisher pubs[PUBLISHERS];
    pthread_t threads[PUBLISHERS + 1];
    for (int i = 0; i < PUBLISHERS; i++) {
        pubs[i] = (publisher){i == 1 ? b : a,          &s,     i,   i * PER_PUBLISHER,
                              (i + 1) * PER_PUBLISHER, i == 2, NULL};
        pthread_create(&threads[i], NULL, publish, &pubs[i]);
    }
    void *late_args[2] = {a, &s};
    pthread_create(&threads[PUBLISHERS], NULL, subscribe_late, late_args);
    pauser pz = {.bus = a};
    pthread_t pz_thread;
    pthread_create(&pz_thread, NULL, pause_resume, &pz);
    long long deadline = tsan_mono_ms() + 20000;
    int distinct = 0;
    while (tsan_mono_ms() < deadline) {
        eddy_consumer_stats cs;
        CHECK_OK(eddy_bus_consumer_stats(a, "work", &cs), NULL, "stats a");
        CHECK_OK(eddy_bus_consumer_stats(b, "work", &cs), NULL, "stats b");
        eddy_bus_consumer_stats(a, "late", &cs); /* may not exist yet */
        pthread_mutex_lock(&s.mu);
        distinct = s.distinct;
        pthread_mutex_unlock(&s.mu);
        if (distinct == TOTAL && atomic_load(&s.fanout) >= TOTAL)
            break;
        tsan_sleep_ms(20);
    }
    atomic_store(&pz.stop, true);
    pthread_join(pz_thread, NULL);
    for (int i = 0; i <= PUBLISHERS; i++)
        pthread_join(threads[i], NULL);
    CHECK(distinct == TOTAL, "%d of %d messages handled", distinct, TOTAL);
    for (int n = 0; n < TOTAL && distinct != TOTAL; n++)
        if (!s.handled[n])
            fprintf(stderr, "  not handled: %s-%d\n", prefix, n);
    CHECK(atomic_load(&s.fanout) >= TOTAL, "fanout saw %d of %d", atomic_load(&s.fanout), TOTAL);

    /* Phase 2: stop and start again while publishers are busy, then stop both for good. */
    atomic_bool stop = false;
    for (int i = 0; i < PUBLISHERS; i++) {
        pubs[i] = (publisher){
            i == 1 ? b : a, &s,   i, TOTAL + i * PER_PUBLISHER, TOTAL + (i + 1) * PER_PUBLISHER,
            i == 2,         &stop};
        pthread_create(&threads[i], NULL, publish, &pubs[i]);
    }
    tsan_sleep_ms(100);
    CHECK_OK(eddy_bus_stop(a), NULL, "stop a");
    CHECK_OK(eddy_bus_start(a, &err), &err, "restart a");
    tsan_sleep_ms(100);
    CHECK_OK(eddy_bus_stop(b), NULL, "stop b while busy");
    atomic_store(&stop, true);
    for (int i = 0; i < PUBLISHERS; i++)
        pthread_join(threads[i], NULL);
    CHECK_OK(eddy_bus_stop(a), NULL, "stop a while busy");
    eddy_bus_free(a);
    eddy_bus_free(b);

    pthread_mutex_lock(&s.mu);
    s.finisher_done = true;
    pthread_cond_signal(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(fin, NULL);
    CHECK(s.queue == NULL, "a pending delivery was never finished");
}

int main(void) {
    const tsan_scenario scenarios[] = {scenario};
    const char *const names[] = {"bus"};
    return tsan_main("tsan_bus", scenarios, names, 1);
}
