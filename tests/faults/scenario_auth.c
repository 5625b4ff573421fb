/* SPDX-License-Identifier: BSD-3-Clause */
/* auth_changed: the password of redis-server (requirepass) is changed under a running bus (a
 * consuming subscription) and its connections are dropped (CLIENT KILL), so every reconnect is
 * refused with WRONGPASS for 4 s; then the password is set back. The bus must report one
 * authentication-failure state (settings.on_connection: EDDY_CONN_AUTH_FAILED once), log no line
 * per retry (at most a few lines in all, for a few dozen attempts), reconnect once the password
 * is back, and then consume what is published (lost 0). Needs the connection state of issue 10
 * item 5 (settings.on_connection); without it only the log lines are counted. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.auth"
#define MESSAGES 200
#define OUTAGE_MS 4000

typedef struct auth_run {
    fx_acks acks;
    atomic_int auth_failed, reconnected;
} auth_run;

static eddy_status consume(eddy_delivery *d, void *user) {
    fx_acks_consumed(&((auth_run *)user)->acks, eddy_event_id(eddy_delivery_event(d)));
    return EDDY_OK;
}

static void on_connection(eddy_connection_state state, const eddy_error *why, void *user) {
    (void)why;
    auth_run *u = user;
    if (state == EDDY_CONN_AUTH_FAILED)
        atomic_fetch_add(&u->auth_failed, 1);
    if (state == EDDY_CONN_RECONNECTED || state == EDDY_CONN_CONNECTED)
        atomic_fetch_add(&u->reconnected, 1);
}

void fx_auth_changed(const driver *dr) {
    static const char *const pass[] = {"--requirepass", "first-pw", NULL};
    static auth_run u;
    memset(&u, 0, sizeof(u));
    fx_acks_init(&u.acks, MESSAGES, 'a');
    fx_redis r;
    fx_redis_start(&r, pass);
    r.password = "first-pw";
    char url[96], ns[64];
    snprintf(url, sizeof(url), "redis://:first-pw@127.0.0.1:%d", r.port);
    snprintf(ns, sizeof(ns), "faults-auth-%s", dr->name);
    eddy_settings s;
    fx_settings(&s, url, ns);
    s.log_user = "auth";
    s.on_connection = on_connection;
    s.on_connection_user = &u;
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", SUBJECT, "auth", EDDY_AT_LEAST_ONCE);
    sp.handler = consume;
    sp.user = &u;
    tbus *bus = NULL;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &bus, &err) != EDDY_OK || dr->start(bus, &err) != EDDY_OK) {
        fx_fail("auth_changed: bus: %s", err.detail);
        fx_redis_stop(&r);
        return;
    }
    int connected_before = atomic_load(&u.reconnected);
    long before = atomic_load(&fx_log_lines);
    redisReply *rep = fx_cmd(&r, "CONFIG SET requirepass second-pw");
    if (rep)
        freeReplyObject(rep);
    r.password = "second-pw";
    rep = fx_cmd(&r, "CLIENT KILL TYPE normal SKIPME yes");
    if (rep)
        freeReplyObject(rep);
    fx_sleep_ms(OUTAGE_MS);
    long lines = atomic_load(&fx_log_lines) - before;
    rep = fx_cmd(&r, "CONFIG SET requirepass first-pw");
    if (rep)
        freeReplyObject(rep);
    r.password = "first-pw";

    /* Back: what is published now is consumed. */
    long long deadline = fx_now_ms() + 30000;
    for (unsigned long i = 0; i < MESSAGES && fx_now_ms() < deadline;) {
        eddy_event *ev = fx_event('a', i, "faults.auth", "x");
        eddy_status st = dr->publish(bus, SUBJECT, ev, &err);
        eddy_event_free(ev);
        if (st == EDDY_OK) {
            u.acks.acked[i++] = 1;
        } else {
            fx_sleep_ms(50); /* not reconnected yet */
        }
    }
    fx_acks_outcome o;
    fx_acks_settle(&u.acks, &r, ns, SUBJECT, "auth", deadline - fx_now_ms(), &o);
    dr->stop(bus);
    dr->free(bus);
    printf("FIG auth_changed frontend=%s lost=%zu/%zu dup=0 auth_failed_states=%d log_lines=%ld "
           "outage_ms=%d reconnected=%s\n",
           dr->name, o.lost, o.acked, atomic_load(&u.auth_failed), lines, OUTAGE_MS,
           atomic_load(&u.reconnected) > connected_before ? "yes" : "no");
    FX_CHECK(o.lost == 0 && o.acked == MESSAGES, "auth_changed: %zu lost, %zu published", o.lost,
             o.acked);
    FX_CHECK(atomic_load(&u.auth_failed) == 1, "auth_changed: %d authentication-failure states",
             atomic_load(&u.auth_failed));
    FX_CHECK(lines <= 4, "auth_changed: %ld log lines during the outage (one per retry?)", lines);
    FX_CHECK(atomic_load(&u.reconnected) > connected_before,
             "auth_changed: no reconnected state after the password was set back");
    fx_acks_free(&u.acks);
    fx_redis_stop(&r);
}
