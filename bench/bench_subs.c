/* SPDX-License-Identifier: BSD-3-Clause */
/* What many subscriptions on one bus cost (issue 22), on each front end (repetitions and
 * medians: bench_util.h). A bus with K competing AtLeastOnce subscriptions, each on a subject
 * of its own (subs.<i>, group "subs"), started, left alone for --settle-ms (default 500):
 *   subs_connections_<K>_{blocking,reactive}   client connections the server has besides the
 *       bench's own (INFO clients), for K = 1, 100 and 1,000;
 *   subs_threads_<K>_blocking   threads of the process besides the bench's own (/proc/self/status);
 *   subs_idle_wakeups_per_s_{blocking,reactive}   K = 1,000 idle subscriptions watched for
 *       --seconds S (default 2) while nothing is published: context switches of the process per
 *       second (as bench_idle: less the bench's own sleeping thread on the blocking side);
 *   subs_latency_p50_us_{blocking,reactive}, subs_latency_p99_us_...   events published one at
 *       a time at 1,000 per second (-n N of them, default 2,000: at 1,000 a p99 is the tenth
 *       slowest event, one scheduling hiccup) to subs.0 by another bus, from the publish call to
 *       the handler: `among` is the bus with 1,000 subscriptions, `alone` a bus with that
 *       subscription only, made back to back in each repetition (in turns: among first in even
 *       repetitions, alone first in odd ones), each timed from
 *       --settle-ms after its start (steady state, not the start's first rounds); the ratio is
 *       among / alone (printed in the eddy= / hiredis= slots of the usual line).
 *   subs_wide_xread_server_us_<K>   what the design's bus-wide wake-up (src/bus/wakeup.h) would
 *       cost the server per wake: a non-blocking XREAD COUNT 256 STREAMS over K existing streams
 *       from their newest ids (so it finds nothing), 200 times, server usec per call from INFO
 *       commandstats, for K = 1, 100 and 1,000.
 * The reactive bus's loop runs on the bench's thread for the idle window and on a thread of its
 * own for the latency runs. --only blocking, reactive or wide_xread runs that part alone (for a
 * profile). */
#include <ev.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"

#define MAX_SUBS 1000
#define MAX_REPS 64
#define RATE 1000

static const long counts[3] = {1, 100, MAX_SUBS};
static long SETTLE_MS, SECONDS, N;
static char names[MAX_SUBS][32], subjects[MAX_SUBS][32];
static eddy_subscription_spec specs[MAX_SUBS];

/* Latency: sent_at[i] when event i was published, latency[i] its handler's time less that. */
static double *sent_at, *latency;
static atomic_long handled;
static sem_t all_handled;
static struct ev_loop *handler_loop;

/* Per repetition, for the printed ratios: [front end][rep]. */
static double p50_among[2][MAX_REPS], p50_alone[2][MAX_REPS];
static double p99_among[2][MAX_REPS], p99_alone[2][MAX_REPS];

static long id_index(const char *id) {
    return id && strncmp(id, "ev-", 3) == 0 ? strtol(id + 3, NULL, 10) : -1;
}

static eddy_status on_event(eddy_delivery *d, void *user) {
    (void)user;
    long i = id_index(eddy_event_id(eddy_delivery_event(d)));
    if (i < 0 || i >= N)
        bench_die("latency", "an event id out of range");
    latency[i] = (bench_now() - sent_at[i]) * 1e6;
    if (atomic_fetch_add(&handled, 1) + 1 == N) {
        if (handler_loop)
            ev_break(handler_loop, EVBREAK_ALL);
        else
            sem_post(&all_handled);
    }
    return EDDY_OK;
}

static void specs_make(void) {
    for (long i = 0; i < MAX_SUBS; i++) {
        snprintf(names[i], sizeof(names[i]), "s%ld", i);
        snprintf(subjects[i], sizeof(subjects[i]), "subs.%ld", i);
        eddy_subscription_spec_init(&specs[i]);
        specs[i].name = names[i];
        specs[i].pattern = subjects[i];
        specs[i].group = "subs";
        specs[i].delivery = EDDY_AT_LEAST_ONCE;
        specs[i].handler = on_event;
    }
}

static long connected_clients(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO clients");
    const char *v = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_clients:") : 0;
    long n = v ? strtol(v + strlen("connected_clients:"), NULL, 10) : -1;
    freeReplyObject(r);
    return n;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0)
        ;
}

static void pace(double t0, long i) {
    double at = t0 + (double)i / (double)RATE, now = bench_now();
    if (at > now) {
        struct timespec ts = {(time_t)(at - now), (long)((at - now - (time_t)(at - now)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Publishes N events to subs.0 at RATE per second from a bus of its own, waits for them all. */
static void publish_run(const eddy_settings *s, bool reactive) {
    eddy_bus *pub;
    eddy_error err;
    if (eddy_bus_new(s, NULL, 0, &pub, &err) != EDDY_OK)
        bench_die("eddy_bus_new", err.detail);
    /* Steady state: the subscriptions' first rounds (groups, claims, the first reads) are done
     * before the first timed event, on both sides alike (--settle-ms). */
    struct timespec settle = {SETTLE_MS / 1000, (SETTLE_MS % 1000) * 1000000L};
    nanosleep(&settle, NULL);
    double t0 = bench_now();
    for (long i = 0; i < N; i++) {
        pace(t0, i);
        eddy_event *ev = bench_event(i);
        sent_at[i] = bench_now();
        if (eddy_bus_publish(pub, subjects[0], ev, NULL, 0, &err) != EDDY_OK)
            bench_die("eddy_bus_publish", err.detail);
        eddy_event_free(ev);
    }
    if (!reactive)
        while (sem_wait(&all_handled) != 0)
            ;
    eddy_bus_free(pub);
}

static void percentiles(double *p50, double *p99) {
    qsort(latency, (size_t)N, sizeof(*latency), cmp_double);
    *p50 = latency[N / 2];
    *p99 = latency[(N * 99) / 100 < N ? (N * 99) / 100 : N - 1];
}

/* out: connections x3, threads x3, idle wakeups, p50 among, p99 among, p50 alone, p99 alone */
#define NOUT 11

typedef void (*latency_fn)(const eddy_settings *s, long k, double *p50, double *p99);

/* Front end f's among and alone runs of repetition rep into out[7..10], in turns. */
static void latency_pair(const bench_env *env, int rep, int f, latency_fn run, double *out) {
    for (int k = 0; k < 2; k++) {
        bool among = (k == 0) == (rep % 2 == 0);
        char ns[96], side[32];
        snprintf(side, sizeof(side), "%s-%s", f ? "reactive" : "blocking", among ? "lat" : "alone");
        eddy_settings s;
        bench_ns(env, ns, sizeof(ns), side, rep);
        bench_settings(env, &s, ns);
        double *o = &out[among ? 7 : 9];
        run(&s, among ? MAX_SUBS : 1, &o[0], &o[1]);
    }
    p50_among[f][rep] = out[7], p99_among[f][rep] = out[8];
    p50_alone[f][rep] = out[9], p99_alone[f][rep] = out[10];
}

/* ---- blocking ------------------------------------------------------------------------- */

static eddy_bus *bus_started(const eddy_settings *s, long k) {
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(s, specs, (size_t)k, &bus, &err) != EDDY_OK ||
        eddy_bus_start(bus, &err) != EDDY_OK)
        bench_die("blocking bus", err.detail);
    return bus;
}

static void latency_blocking(const eddy_settings *s, long k, double *p50, double *p99) {
    handler_loop = NULL;
    atomic_store(&handled, 0);
    eddy_bus *bus = bus_started(s, k);
    publish_run(s, false);
    percentiles(p50, p99);
    eddy_bus_free(bus);
}

static void side_blocking(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    redisContext *c = bench_connect(env);
    for (int j = 0; j < 3; j++) {
        char ns[96], side[32];
        eddy_settings s;
        snprintf(side, sizeof(side), "blocking%ld", counts[j]);
        bench_ns(env, ns, sizeof(ns), side, rep);
        bench_settings(env, &s, ns);
        eddy_bus *bus = bus_started(&s, counts[j]);
        sleep_ms(SETTLE_MS);
        out[j] = (double)(connected_clients(c) - 1);
        out[3 + j] = (double)(bench_status_field("Threads:") - 1);
        if (counts[j] == MAX_SUBS) {
            bench_usage own0 = bench_usage_thread(), u0 = bench_usage_now();
            sleep_ms(SECONDS * 1000);
            bench_usage u1 = bench_usage_now(), own1 = bench_usage_thread();
            out[6] = (u1.ctxsw - u0.ctxsw - (own1.ctxsw - own0.ctxsw)) / (double)SECONDS;
        }
        eddy_bus_free(bus);
    }
    latency_pair(env, rep, 0, latency_blocking, out);
    redisFree(c);
}

/* ---- reactive ------------------------------------------------------------------------- */

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)t, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void run_for(struct ev_loop *loop, double seconds) {
    ev_timer t;
    ev_timer_init(&t, on_timer, seconds, 0);
    ev_timer_start(loop, &t);
    ev_run(loop, 0);
    ev_timer_stop(loop, &t);
}

static void *run_loop(void *arg) {
    ev_run(arg, 0);
    return NULL;
}

static void latency_reactive(const eddy_settings *s, long k, double *p50, double *p99) {
    atomic_store(&handled, 0);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rbus *bus = bench_rbus_started(loop, s, specs, (size_t)k);
    handler_loop = loop;
    pthread_t t;
    pthread_create(&t, NULL, run_loop, loop);
    publish_run(s, true);
    pthread_join(t, NULL);
    handler_loop = NULL;
    percentiles(p50, p99);
    eddy_rbus_free(bus);
    ev_loop_destroy(loop);
}

static void side_reactive(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    redisContext *c = bench_connect(env);
    for (int j = 0; j < 3; j++) {
        char ns[96], side[32];
        eddy_settings s;
        snprintf(side, sizeof(side), "reactive%ld", counts[j]);
        bench_ns(env, ns, sizeof(ns), side, rep);
        bench_settings(env, &s, ns);
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        eddy_rbus *bus = bench_rbus_started(loop, &s, specs, (size_t)counts[j]);
        run_for(loop, (double)SETTLE_MS / 1000);
        out[j] = (double)(connected_clients(c) - 1);
        out[3 + j] = 0;
        if (counts[j] == MAX_SUBS) {
            bench_usage u0 = bench_usage_now();
            ev_now_update(loop);
            run_for(loop, (double)SECONDS);
            bench_usage u1 = bench_usage_now();
            out[6] = (u1.ctxsw - u0.ctxsw) / (double)SECONDS;
        }
        eddy_rbus_free(bus);
        ev_loop_destroy(loop);
    }
    latency_pair(env, rep, 1, latency_reactive, out);
    redisFree(c);
}

/* ---- the wide XREAD ------------------------------------------------------------------- */

#define WIDE_CALLS 200

/* cmdstat_xread's usec (0 before the first call). */
static double xread_usec(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO commandstats");
    const char *v = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "cmdstat_xread:") : 0;
    const char *u = v ? strstr(v, "usec=") : 0;
    double usec = u ? strtod(u + 5, NULL) : 0;
    freeReplyObject(r);
    return usec;
}

static void side_wide(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    redisContext *c = bench_connect(env);
    static char keys[MAX_SUBS][128];
    static const char *argv[4 + 2 * MAX_SUBS];
    char ns[96];
    bench_ns(env, ns, sizeof(ns), "wide", rep);
    for (long i = 0; i < MAX_SUBS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "{%s}:s:subs.%ld", ns, i);
        redisReply *r = redisCommand(c, "XADD %s * f v", keys[i]);
        freeReplyObject(r);
    }
    for (int j = 0; j < 3; j++) {
        long k = counts[j];
        argv[0] = "XREAD", argv[1] = "COUNT", argv[2] = "256", argv[3] = "STREAMS";
        for (long i = 0; i < k; i++) {
            argv[4 + i] = keys[i];
            argv[4 + k + i] = "$";
        }
        double u0 = xread_usec(c);
        for (int n = 0; n < WIDE_CALLS; n++) {
            redisReply *r = redisCommandArgv(c, (int)(4 + 2 * k), argv, NULL);
            if (!r || r->type == REDIS_REPLY_ERROR)
                bench_die("XREAD", r ? r->str : c->errstr);
            freeReplyObject(r);
        }
        out[j] = (xread_usec(c) - u0) / WIDE_CALLS;
    }
    redisFree(c);
}

static void print_side(const char *fe, int f, const double *m, int reps) {
    char name[64];
    for (int j = 0; j < 3; j++) {
        snprintf(name, sizeof(name), "subs_connections_%ld_%s", counts[j], fe);
        bench_print1(name, m[j]);
        if (f == 0) {
            snprintf(name, sizeof(name), "subs_threads_%ld_%s", counts[j], fe);
            bench_print1(name, m[3 + j]);
        }
    }
    snprintf(name, sizeof(name), "subs_idle_wakeups_per_s_%s", fe);
    bench_print1(name, m[6]);
    printf("# subs_latency_*: eddy= one subject among 1000 subscriptions, hiredis= that "
           "subscription alone\n");
    snprintf(name, sizeof(name), "subs_latency_p50_us_%s", fe);
    bench_print_runs(name, p50_among[f], p50_alone[f], reps);
    snprintf(name, sizeof(name), "subs_latency_p99_us_%s", fe);
    bench_print_runs(name, p99_among[f], p99_alone[f], reps);
}

int main(int argc, char **argv) {
    static const char *const extra[] = {"--seconds", "--settle-ms", NULL};
    bench_env env;
    bench_setup(&env, argc, argv, 2000, extra, "[-n messages] [--seconds S] [--settle-ms MS]");
    SECONDS = bench_opt(&env, "--seconds", 2);
    SETTLE_MS = bench_opt(&env, "--settle-ms", 500);
    N = env.n;
    if (SECONDS < 1 || SETTLE_MS < 0 || N < 100 || env.reps > MAX_REPS)
        bench_die("options", "--seconds >= 1, --settle-ms >= 0, -n >= 100, --reps <= 64");
    sent_at = calloc((size_t)N, sizeof(*sent_at));
    latency = calloc((size_t)N, sizeof(*latency));
    if (!sent_at || !latency)
        bench_die("latency", "out of memory");
    sem_init(&all_handled, 0, 0);
    specs_make();

    if (bench_wanted(&env, "blocking")) {
        bench_side blocking = {"eddy-blocking", side_blocking, NULL};
        double b[NOUT];
        bench_sides(&env, &blocking, 1, NOUT, b);
        print_side("blocking", 0, b, env.reps);
    }
    if (bench_wanted(&env, "reactive")) {
        bench_side reactive = {"eddy-reactive", side_reactive, NULL};
        double r[NOUT];
        bench_sides(&env, &reactive, 1, NOUT, r);
        print_side("reactive", 1, r, env.reps);
    }
    if (bench_wanted(&env, "wide_xread")) {
        bench_side wide = {"wide-xread", side_wide, NULL};
        double w[3];
        bench_sides(&env, &wide, 1, 3, w);
        for (int j = 0; j < 3; j++) {
            char name[64];
            snprintf(name, sizeof(name), "subs_wide_xread_server_us_%ld", counts[j]);
            bench_print1(name, w[j]);
        }
    }

    free(sent_at);
    free(latency);
    bench_teardown(&env);
    return 0;
}
