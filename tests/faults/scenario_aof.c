/* SPDX-License-Identifier: BSD-3-Clause */
/* aof_restart: redis-server with appendonly yes and appendfsync always is killed with SIGKILL and
 * started again on its port, twice, while a publisher thread publishes one message at a time
 * through the front end's bus and a subscription of the same bus (Competing, AtLeastOnce)
 * consumes. A publish that returned EDDY_OK was acknowledged, so it is on disk: every one of them
 * must be consumed (lost 0) and nothing may be pending at the end. Publishes that failed while
 * the server was down are not retried; those the server had stored all the same are counted
 * (failed_but_stored) and consumed like the others. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.aof"
#define GROUP "aof"

typedef struct aof_run {
    const driver *dr;
    tbus *bus;
    fx_acks acks;
    atomic_size_t published, failed;
    atomic_bool done;
} aof_run;

static eddy_status consume(eddy_delivery *d, void *user) {
    fx_acks_consumed(&((aof_run *)user)->acks, eddy_event_id(eddy_delivery_event(d)));
    return EDDY_OK;
}

static void *publisher(void *arg) {
    aof_run *u = arg;
    for (size_t i = 0; i < u->acks.n; i++) {
        eddy_event *ev = fx_event('a', i, "faults.aof", "x");
        eddy_error err = {0};
        eddy_status st = u->dr->publish(u->bus, SUBJECT, ev, &err);
        eddy_event_free(ev);
        if (st == EDDY_OK) {
            u->acks.acked[i] = 1;
            atomic_fetch_add(&u->published, 1);
        } else {
            atomic_fetch_add(&u->failed, 1);
            fx_sleep_ms(10); /* the server is down: do not spin through the rest */
        }
    }
    atomic_store(&u->done, true);
    return NULL;
}

void fx_aof_restart(const driver *dr) {
    static const char *const aof[] = {"--appendonly", "yes", "--appendfsync", "always", NULL};
    static aof_run u;
    memset(&u, 0, sizeof(u));
    u.dr = dr;
    fx_acks_init(&u.acks, fx_long_profile() ? 20000 : 5000, 'a');
    const int restarts = fx_long_profile() ? 4 : 2;
    fx_redis r;
    fx_redis_start(&r, aof);
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-aof-%s", dr->name);
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "aof";
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", SUBJECT, GROUP, EDDY_AT_LEAST_ONCE);
    sp.handler = consume;
    sp.user = &u;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &u.bus, &err) != EDDY_OK || dr->start(u.bus, &err) != EDDY_OK) {
        fx_fail("aof_restart: bus: %s", err.detail);
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, publisher, &u);
    for (int k = 0; k < restarts; k++) {
        size_t at = u.acks.n * (size_t)(k + 1) / (size_t)(restarts + 2);
        while (atomic_load(&u.published) < at && !atomic_load(&u.done))
            fx_sleep_ms(5);
        fx_redis_kill(&r);
        fx_sleep_ms(300);
        fx_redis_restart(&r);
    }
    pthread_join(t, NULL);

    /* Every acknowledged publish must be consumed; nothing may stay pending. */
    fx_acks_outcome o;
    fx_acks_settle(&u.acks, &r, ns, SUBJECT, GROUP, 60000, &o);
    dr->stop(u.bus);
    dr->free(u.bus);
    printf("FIG aof_restart frontend=%s lost=%zu/%zu dup=%zu pending=%lld restarts=%d "
           "failed=%zu failed_but_stored=%zu appendfsync=always\n",
           dr->name, o.lost, o.acked, o.dup, o.pending, restarts, atomic_load(&u.failed),
           o.failed_but_stored);
    FX_CHECK(o.lost == 0, "aof_restart: %zu acknowledged publishes never consumed", o.lost);
    FX_CHECK(o.pending == 0, "aof_restart: %lld entries still pending", o.pending);
    FX_CHECK(o.acked > u.acks.n / 2, "aof_restart: only %zu of %zu publishes succeeded", o.acked,
             u.acks.n);
    fx_acks_free(&u.acks);
    fx_redis_stop(&r);
}
