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
    size_t total;
    unsigned char *acked;   /* publish i returned EDDY_OK */
    _Atomic unsigned *seen; /* consumed i, times */
    atomic_size_t published, failed;
    atomic_bool done;
} aof_run;

static eddy_status consume(eddy_delivery *d, void *user) {
    aof_run *u = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    unsigned long i = strtoul(id + 1, NULL, 10);
    if (id[0] == 'a' && i < u->total)
        atomic_fetch_add(&u->seen[i], 1);
    return EDDY_OK;
}

static void *publisher(void *arg) {
    aof_run *u = arg;
    for (size_t i = 0; i < u->total; i++) {
        eddy_event *ev = fx_event('a', i, "faults.aof", "x");
        eddy_error err = {0};
        eddy_status st = u->dr->publish(u->bus, SUBJECT, ev, &err);
        eddy_event_free(ev);
        if (st == EDDY_OK) {
            u->acked[i] = 1;
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
    aof_run u = {.dr = dr, .total = fx_long_profile() ? 20000 : 5000};
    const int restarts = fx_long_profile() ? 4 : 2;
    u.acked = calloc(u.total, 1);
    u.seen = calloc(u.total, sizeof(*u.seen));
    fx_redis r;
    fx_redis_start(&r, aof);
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-aof-%s", dr->name);
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "aof";
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "consume";
    sp.pattern = SUBJECT;
    sp.shape = EDDY_COMPETING;
    sp.group = GROUP;
    sp.delivery = EDDY_AT_LEAST_ONCE;
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
        size_t at = u.total * (size_t)(k + 1) / (size_t)(restarts + 2);
        while (atomic_load(&u.published) < at && !atomic_load(&u.done))
            fx_sleep_ms(5);
        fx_redis_kill(&r);
        fx_sleep_ms(300);
        fx_redis_restart(&r);
    }
    pthread_join(t, NULL);

    /* Every acknowledged publish must be consumed; nothing may stay pending. */
    long long deadline = fx_now_ms() + 60000;
    size_t lost = 0, dup = 0, failed_but_stored = 0;
    long long pending = -1;
    for (;;) {
        lost = dup = failed_but_stored = 0;
        for (size_t i = 0; i < u.total; i++) {
            unsigned n = atomic_load(&u.seen[i]);
            lost += u.acked[i] && n == 0;
            dup += n > 1 ? n - 1 : 0;
            failed_but_stored += !u.acked[i] && n > 0;
        }
        pending = fx_pending(&r, ns, SUBJECT, GROUP);
        if ((lost == 0 && pending == 0) || fx_now_ms() > deadline)
            break;
        fx_sleep_ms(100);
    }
    dr->stop(u.bus);
    dr->free(u.bus);
    size_t acked = atomic_load(&u.published);
    printf("FIG aof_restart frontend=%s lost=%zu/%zu dup=%zu pending=%lld restarts=%d "
           "failed=%zu failed_but_stored=%zu appendfsync=always\n",
           dr->name, lost, acked, dup, pending, restarts, atomic_load(&u.failed),
           failed_but_stored);
    FX_CHECK(lost == 0, "aof_restart: %zu acknowledged publishes never consumed", lost);
    FX_CHECK(pending == 0, "aof_restart: %lld entries still pending", pending);
    FX_CHECK(acked > u.total / 2, "aof_restart: only %zu of %zu publishes succeeded", acked,
             u.total);
    free(u.acked);
    free(u.seen);
    fx_redis_stop(&r);
}
