/* SPDX-License-Identifier: BSD-3-Clause */
/* responder_killed: a responder process (fault_worker respond: Competing, AtMostOnce, each
 * execution counted in the Redis hash {ns}:faults:exec, then a short sleep) is killed with
 * SIGKILL while the suite has at least 100 requests in flight to it, one per thread through the
 * front end's bus, each with a 4 s deadline; a second responder is started in its place. Each
 * call must end exactly once, by its deadline (plus a margin: the worst lateness is printed),
 * answered or EDDY_ERR_NO_REPLY, and no request may have been executed twice (the ones the dead
 * responder had read are gone, as AtMostOnce says, and must not run again). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.ask"
#define GROUP "responders"
#define DEADLINE_MS 4000
#define LATE_MS 1000 /* the bound asserted on a call's lateness past its deadline */

typedef struct call {
    struct rr_run *u;
    unsigned long i;
    eddy_status st;
    long long late_ms; /* end - deadline, eddy_now_ms clock */
    int ended;
} call;

typedef struct rr_run {
    const driver *dr;
    tbus *bus;
    atomic_int in_flight;
    atomic_bool go;
} rr_run;

static void *requester(void *arg) {
    call *c = arg;
    rr_run *u = c->u;
    while (!atomic_load(&u->go))
        fx_sleep_ms(1);
    eddy_event *ev = fx_event('q', c->i, "faults.ask", "?");
    eddy_request_opts o = {.deadline_ms = eddy_deadline_in(DEADLINE_MS)};
    eddy_event *reply = NULL;
    eddy_error err = {0};
    atomic_fetch_add(&u->in_flight, 1);
    c->st = u->dr->request(u->bus, SUBJECT, ev, &o, &reply, &err);
    c->late_ms = eddy_now_ms() - o.deadline_ms;
    c->ended++;
    atomic_fetch_sub(&u->in_flight, 1);
    eddy_event_free(reply);
    eddy_event_free(ev);
    return NULL;
}

static bool start_responder(fx_worker *w, const driver *dr, const fx_redis *r, const char *ns) {
    const char *argv[] = {"respond", dr->name, r->url, ns, SUBJECT, GROUP, "20", NULL};
    return fx_worker_start(w, argv, 20000);
}

void fx_responder_killed(const driver *dr) {
    const unsigned long n = fx_long_profile() ? 400 : 150;
    fx_redis r;
    fx_redis_start(&r, NULL);
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-rr-%s", dr->name);
    fx_worker w;
    if (!start_responder(&w, dr, &r, ns)) {
        fx_fail("responder_killed: the responder did not start");
        fx_redis_stop(&r);
        return;
    }
    rr_run u = {.dr = dr};
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "requester";
    eddy_error err = {0};
    if (dr->bus_new(&s, NULL, 0, &u.bus, &err) != EDDY_OK || dr->start(u.bus, &err) != EDDY_OK) {
        fx_fail("responder_killed: bus: %s", err.detail);
        return;
    }
    call *calls = calloc(n, sizeof(*calls));
    pthread_t *threads = calloc(n, sizeof(*threads));
    for (unsigned long i = 0; i < n; i++) {
        calls[i] = (call){.u = &u, .i = i};
        pthread_create(&threads[i], NULL, requester, &calls[i]);
    }
    atomic_store(&u.go, true);
    /* Kill it once it is executing and at least 100 requests are in flight. */
    long long end = fx_now_ms() + DEADLINE_MS;
    int at_kill = 0;
    long long executed_at_kill = 0;
    while (fx_now_ms() < end) {
        executed_at_kill = fx_int(&r, "HLEN {%s}:faults:exec", ns);
        at_kill = atomic_load(&u.in_flight);
        if (executed_at_kill >= 10 && at_kill >= 100)
            break;
        fx_sleep_ms(2);
    }
    fx_worker_kill(&w);
    fx_sleep_ms(300);
    bool restarted = start_responder(&w, dr, &r, ns);
    FX_CHECK(restarted, "responder_killed: the second responder did not start");
    for (unsigned long i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    fx_worker_stop(&w, 10000);

    unsigned long answered = 0, no_reply = 0, other = 0, bad_end = 0;
    long long worst = -1000000;
    for (unsigned long i = 0; i < n; i++) {
        answered += calls[i].st == EDDY_OK;
        no_reply += calls[i].st == EDDY_ERR_NO_REPLY;
        other += calls[i].st != EDDY_OK && calls[i].st != EDDY_ERR_NO_REPLY;
        bad_end += calls[i].ended != 1;
        if (calls[i].late_ms > worst)
            worst = calls[i].late_ms;
    }
    /* Executions per request: each at most once. */
    unsigned long twice = 0, executed = 0;
    redisReply *h = fx_cmd(&r, "HGETALL {%s}:faults:exec", ns);
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
        executed++;
        twice += atol(h->element[i + 1]->str) > 1;
    }
    if (h)
        freeReplyObject(h);
    printf("FIG responder_killed frontend=%s lost=%lu/%lu dup=%lu in_flight_at_kill=%d "
           "executed_at_kill=%lld executed=%lu answered=%lu no_reply=%lu other=%lu "
           "worst_late_ms=%lld\n",
           dr->name, n - answered - no_reply - other, n, twice, at_kill, executed_at_kill, executed,
           answered, no_reply, other, worst);
    FX_CHECK(at_kill >= 100, "responder_killed: only %d requests in flight at the kill", at_kill);
    FX_CHECK(bad_end == 0, "responder_killed: %lu calls did not end exactly once", bad_end);
    FX_CHECK(twice == 0, "responder_killed: %lu requests executed twice", twice);
    FX_CHECK(other == 0, "responder_killed: %lu calls ended with another status", other);
    FX_CHECK(worst <= LATE_MS, "responder_killed: a call ended %lld ms after its deadline", worst);
    FX_CHECK(answered > 0 && no_reply > 0,
             "responder_killed: answered %lu, no reply %lu: the kill fell outside the calls",
             answered, no_reply);
    dr->stop(u.bus);
    dr->free(u.bus);
    free(calls);
    free(threads);
    fx_redis_stop(&r);
}
