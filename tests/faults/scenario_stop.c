/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_stopped: redis-server is stopped with SIGSTOP for 3 s, and continued, while one thread
 * publishes through the front end's bus, a subscription of the same bus (Competing, AtLeastOnce)
 * consumes, and two threads send requests with 1 s deadlines to a responder of the same bus.
 * Every call must return by its deadline plus a margin (requests: their own deadline; publishes:
 * command_timeout_ms, when the settings have it), no acknowledged publish may be lost, and
 * publishes and requests must succeed again after SIGCONT. The worst lateness is printed. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.stop"
#define ASK "faults.stop.ask"
#define STOP_MS 3000
#define REQUEST_MS 1000
#define COMMAND_MS 1000
/* The lateness asserted: the 100 ms, on a machine other jobs load. */
#define LATE_MS 100
#define MAX_PUBLISHES 200000

typedef struct stop_run {
    const driver *dr;
    tbus *bus;
    atomic_bool stop;
    atomic_llong resumed_at; /* eddy_now_ms of SIGCONT, 0 before */
    fx_acks acks;
    atomic_ulong published, publish_failed;
    atomic_llong publish_worst_ms, publish_late_ms;
    atomic_ulong requests, answered, no_reply, other;
    atomic_llong request_late_ms;
    atomic_bool published_after, answered_after;
} stop_run;

static void raise_max(atomic_llong *v, long long x) {
    long long cur = atomic_load(v);
    while (x > cur && !atomic_compare_exchange_weak(v, &cur, x))
        ;
}

static eddy_status consume(eddy_delivery *d, void *user) {
    fx_acks_consumed(&((stop_run *)user)->acks, eddy_event_id(eddy_delivery_event(d)));
    return EDDY_OK;
}

static eddy_status answer(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    *reply = eddy_event_dup(eddy_delivery_event(d));
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static void *publisher(void *arg) {
    stop_run *u = arg;
    for (unsigned long i = 0; i < MAX_PUBLISHES && !atomic_load(&u->stop); i++) {
        eddy_event *ev = fx_event('p', i, "faults.stop", "x");
        eddy_error err = {0};
        long long t0 = eddy_now_ms();
        eddy_status st = u->dr->publish(u->bus, SUBJECT, ev, &err);
        long long t1 = eddy_now_ms();
        eddy_event_free(ev);
        raise_max(&u->publish_worst_ms, t1 - t0);
        raise_max(&u->publish_late_ms, t1 - (t0 + COMMAND_MS));
        if (st == EDDY_OK) {
            u->acks.acked[i] = 1;
            atomic_fetch_add(&u->published, 1);
            long long resumed = atomic_load(&u->resumed_at);
            if (resumed && t0 > resumed)
                atomic_store(&u->published_after, true);
        } else {
            atomic_fetch_add(&u->publish_failed, 1);
        }
        fx_sleep_ms(2);
    }
    return NULL;
}

static void *requester(void *arg) {
    stop_run *u = arg;
    for (unsigned long i = 0; !atomic_load(&u->stop); i++) {
        eddy_event *ev = fx_event('q', i, "faults.stop.ask", "?");
        eddy_request_opts o = {.deadline_ms = eddy_deadline_in(REQUEST_MS)};
        eddy_event *reply = NULL;
        eddy_error err = {0};
        long long t0 = eddy_now_ms();
        eddy_status st = u->dr->request(u->bus, ASK, ev, &o, &reply, &err);
        raise_max(&u->request_late_ms, eddy_now_ms() - o.deadline_ms);
        eddy_event_free(reply);
        eddy_event_free(ev);
        atomic_fetch_add(&u->requests, 1);
        if (st == EDDY_OK) {
            atomic_fetch_add(&u->answered, 1);
            long long resumed = atomic_load(&u->resumed_at);
            if (resumed && t0 > resumed)
                atomic_store(&u->answered_after, true);
        } else if (st == EDDY_ERR_NO_REPLY) {
            atomic_fetch_add(&u->no_reply, 1);
        } else {
            atomic_fetch_add(&u->other, 1); /* a transport status: reported, allowed */
        }
        fx_sleep_ms(5);
    }
    return NULL;
}

void fx_redis_stopped(const driver *dr) {
    static stop_run u;
    memset(&u, 0, sizeof(u));
    u.dr = dr;
    fx_acks_init(&u.acks, MAX_PUBLISHES, 'p');
    atomic_store(&u.publish_late_ms, -1000000);
    atomic_store(&u.request_late_ms, -1000000);
    fx_redis r;
    fx_redis_start(&r, NULL);
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-stop-%s", dr->name);
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "stopped";
    s.command_timeout_ms = COMMAND_MS;
    eddy_subscription_spec sp[2];
    fx_competing(&sp[0], "consume", SUBJECT, "stop-consume", EDDY_AT_LEAST_ONCE);
    sp[0].handler = consume;
    sp[0].user = &u;
    fx_competing(&sp[1], "respond", ASK, "stop-respond", EDDY_AT_MOST_ONCE);
    sp[1].responder = answer;
    eddy_error err = {0};
    if (dr->bus_new(&s, sp, 2, &u.bus, &err) != EDDY_OK || dr->start(u.bus, &err) != EDDY_OK) {
        fx_fail("redis_stopped: bus: %s", err.detail);
        return;
    }
    pthread_t pt, rt[2];
    pthread_create(&pt, NULL, publisher, &u);
    for (int i = 0; i < 2; i++)
        pthread_create(&rt[i], NULL, requester, &u);
    fx_sleep_ms(1000);
    kill(r.pid, SIGSTOP);
    fx_sleep_ms(STOP_MS);
    kill(r.pid, SIGCONT);
    atomic_store(&u.resumed_at, eddy_now_ms());
    fx_sleep_ms(3000);
    atomic_store(&u.stop, true);
    pthread_join(pt, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(rt[i], NULL);

    fx_acks_outcome o;
    fx_acks_settle(&u.acks, &r, ns, SUBJECT, "stop-consume", 30000, &o);
    dr->stop(u.bus);
    dr->free(u.bus);
    printf("FIG redis_stopped frontend=%s lost=%zu/%lu dup=%zu pending=%lld stop_ms=%d "
           "publish_failed=%lu failed_but_stored=%zu publish_worst_ms=%lld "
           "publish_late_ms=%lld requests=%lu answered=%lu no_reply=%lu other=%lu "
           "request_late_ms=%lld resumed=%s\n",
           dr->name, o.lost, o.acked, o.dup, o.pending, STOP_MS, atomic_load(&u.publish_failed),
           o.failed_but_stored, atomic_load(&u.publish_worst_ms), atomic_load(&u.publish_late_ms),
           atomic_load(&u.requests), atomic_load(&u.answered), atomic_load(&u.no_reply),
           atomic_load(&u.other), atomic_load(&u.request_late_ms),
           atomic_load(&u.published_after) && atomic_load(&u.answered_after) ? "yes" : "no");
    FX_CHECK(o.lost == 0, "redis_stopped: %zu acknowledged publishes never consumed", o.lost);
    FX_CHECK(o.pending == 0, "redis_stopped: %lld entries still pending", o.pending);
    FX_CHECK(atomic_load(&u.request_late_ms) <= LATE_MS,
             "redis_stopped: a request returned %lld ms after its deadline",
             atomic_load(&u.request_late_ms));
    FX_CHECK(atomic_load(&u.publish_late_ms) <= LATE_MS,
             "redis_stopped: a publish returned %lld ms after its command deadline",
             atomic_load(&u.publish_late_ms));
    FX_CHECK(atomic_load(&u.published_after) && atomic_load(&u.answered_after),
             "redis_stopped: publishes or requests did not resume after SIGCONT");
    fx_acks_free(&u.acks);
    fx_redis_stop(&r);
}
