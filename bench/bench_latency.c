/* SPDX-License-Identifier: BSD-3-Clause */
/* Delivery latency and the server's own cost per message, eddy beside raw hiredis doing the same
 * Redis work in the same run (see bench_util.h for repetitions, medians, alternating order and
 * pinning):
 *
 *   deliver_latency_p50_us_<R>, deliver_latency_p99_us_<R> (and _reactive): events published one
 *       at a time at a fixed R per second (1k and 10k), from the publish call to the handler
 *       that receives it, in microseconds. eddy: eddy_bus_publish on one bus, a competing
 *       AtLeastOnce subscription (read_batch 256, default workers) on another, the blocking or
 *       the reactive front end (its libev loop on a thread of its own). hiredis: XADD with
 *       redisCommandArgv on one connection, and on another a loop of XREADGROUP COUNT 256
 *       BLOCK 1000 whose XACK of each batch is pipelined with the next read.
 *   redis_cpu_us_per_msg (and _reactive): the server's used_cpu_user + used_cpu_sys (INFO cpu)
 *       over the R = 10k run, per message published and consumed, the same payload on both sides.
 *
 * A latency is taken from the same clock on both sides: the publisher notes when it called
 * publish (or XADD) for event i; the handler (or raw reader) reads event i's id, ev-<i>. */
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

#define RATES 2
static const long rates[RATES] = {1000, 10000};
static double seconds_per_rate = 2.0; /* -n scales it: messages = rate * seconds */

/* Figures per side: p50 and p99 per rate, then the server's CPU per message at the last rate. */
#define NOUT (RATES * 2 + 1)

static double *sent_at; /* sent_at[i]: when event i was published (bench_now) */
static double *latency; /* latency[i]: handler time - sent_at[i], in us */
static long target;
static atomic_long handled;
static sem_t all_handled;
static struct ev_loop *handler_loop; /* the reactive side's loop, broken when all are in */

static long id_index(const char *id) {
    return id && strncmp(id, "ev-", 3) == 0 ? strtol(id + 3, NULL, 10) : -1;
}

static void note(long i) {
    if (i < 0 || i >= target)
        bench_die("latency", "an event id out of range");
    latency[i] = (bench_now() - sent_at[i]) * 1e6;
    if (atomic_fetch_add(&handled, 1) + 1 == target) {
        if (handler_loop)
            ev_break(handler_loop, EVBREAK_ALL);
        else
            sem_post(&all_handled);
    }
}

static eddy_status on_event(eddy_delivery *d, void *user) {
    (void)user;
    note(id_index(eddy_event_id(eddy_delivery_event(d))));
    return EDDY_OK;
}

static void pace(double t0, long i, long rate) {
    double at = t0 + (double)i / (double)rate, now = bench_now();
    if (at > now) {
        struct timespec ts = {(time_t)(at - now), (long)((at - now - (time_t)(at - now)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void percentiles(long n, double *p50, double *p99) {
    qsort(latency, (size_t)n, sizeof(*latency), cmp_double);
    *p50 = latency[n / 2];
    *p99 = latency[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

static double server_cpu_s(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO cpu");
    if (!r || r->type != REDIS_REPLY_STRING)
        bench_die("INFO cpu", c->errstr);
    double user = 0, sys = 0;
    const char *u = strstr(r->str, "used_cpu_user:"), *s = strstr(r->str, "used_cpu_sys:");
    if (u)
        user = strtod(u + strlen("used_cpu_user:"), NULL);
    if (s)
        sys = strtod(s + strlen("used_cpu_sys:"), NULL);
    freeReplyObject(r);
    return user + sys;
}

static long messages(long rate) { return (long)((double)rate * seconds_per_rate); }

/* ---- raw hiredis ------------------------------------------------------------------------ */

typedef struct raw_reader {
    const bench_env *env;
    const char *key;
    long n;
} raw_reader;

static void *raw_read_loop(void *arg) {
    raw_reader *rr = arg;
    redisContext *c = bench_connect(rr->env);
    long got = 0;
    char ack_ids[BENCH_BATCH][32];
    size_t pending_acks = 0;
    while (got < rr->n) {
        if (pending_acks > 0) { /* the last batch's XACK, pipelined with this read */
            const char *argv[3 + BENCH_BATCH] = {"XACK", rr->key, "raw"};
            size_t lens[3 + BENCH_BATCH] = {4, strlen(rr->key), 3};
            for (size_t k = 0; k < pending_acks; k++) {
                argv[3 + k] = ack_ids[k];
                lens[3 + k] = strlen(ack_ids[k]);
            }
            redisAppendCommandArgv(c, (int)(3 + pending_acks), argv, lens);
        }
        redisAppendCommand(c, "XREADGROUP GROUP raw c COUNT %d BLOCK 1000 STREAMS %s >",
                           BENCH_BATCH, rr->key);
        redisReply *r;
        if (pending_acks > 0) {
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                bench_die("XACK", c->errstr);
            freeReplyObject(r);
            pending_acks = 0;
        }
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            bench_die("XREADGROUP", c->errstr);
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
            redisReply *entries = r->element[0]->element[1];
            for (size_t k = 0; k < entries->elements; k++) {
                redisReply *e = entries->element[k], *fields = e->element[1];
                for (size_t f = 0; f + 1 < fields->elements; f += 2)
                    if (strcmp(fields->element[f]->str, "id") == 0)
                        note(id_index(fields->element[f + 1]->str));
                snprintf(ack_ids[pending_acks++], sizeof(ack_ids[0]), "%s", e->element[0]->str);
                got++;
            }
        }
        freeReplyObject(r);
    }
    if (pending_acks > 0) {
        redisReply *r = NULL;
        const char *argv[3 + BENCH_BATCH] = {"XACK", rr->key, "raw"};
        size_t lens[3 + BENCH_BATCH] = {4, strlen(rr->key), 3};
        for (size_t k = 0; k < pending_acks; k++) {
            argv[3 + k] = ack_ids[k];
            lens[3 + k] = strlen(ack_ids[k]);
        }
        r = redisCommandArgv(c, (int)(3 + pending_acks), argv, lens);
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

static void raw_side(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    redisContext *c = bench_connect(env);
    for (int k = 0; k < RATES; k++) {
        char ns[96], key[128], id[24];
        bench_ns(env, ns, sizeof(ns), k ? "raw10k" : "raw1k", rep);
        snprintf(key, sizeof(key), "{%s}:s:orders", ns);
        redisReply *r = redisCommand(c, "XGROUP CREATE %s raw $ MKSTREAM", key);
        if (!r || r->type == REDIS_REPLY_ERROR)
            bench_die("XGROUP CREATE", r ? r->str : c->errstr);
        freeReplyObject(r);
        long n = messages(rates[k]);
        target = n;
        atomic_store(&handled, 0);
        handler_loop = NULL;
        raw_reader rr = {env, key, n};
        pthread_t t;
        pthread_create(&t, NULL, raw_read_loop, &rr);
        double cpu0 = server_cpu_s(c), t0 = bench_now();
        const char *argv[BENCH_XADD_ARGC];
        size_t lens[BENCH_XADD_ARGC];
        for (long i = 0; i < n; i++) {
            pace(t0, i, rates[k]);
            int argc = bench_xadd_argv(key, i, id, argv, lens);
            sent_at[i] = bench_now();
            r = redisCommandArgv(c, argc, argv, lens);
            if (!r || r->type == REDIS_REPLY_ERROR)
                bench_die("XADD", r ? r->str : c->errstr);
            freeReplyObject(r);
        }
        pthread_join(t, NULL);
        while (sem_wait(&all_handled) != 0) /* note() posted it for the last one */
            ;
        double cpu1 = server_cpu_s(c);
        percentiles(n, &out[2 * k], &out[2 * k + 1]);
        out[NOUT - 1] = (cpu1 - cpu0) * 1e6 / (double)n;
    }
    redisFree(c);
}

/* ---- eddy ------------------------------------------------------------------------------- */

typedef struct rloop_run {
    struct ev_loop *loop;
} rloop_run;

static void *run_loop(void *arg) {
    ev_run(((rloop_run *)arg)->loop, 0);
    return NULL;
}

static void eddy_side(const bench_env *env, int rep, double *out, void *user) {
    bool reactive = user != NULL;
    redisContext *c = bench_connect(env);
    eddy_error err;
    for (int k = 0; k < RATES; k++) {
        char ns[96];
        bench_ns(env, ns, sizeof(ns), reactive ? (k ? "er10k" : "er1k") : (k ? "eb10k" : "eb1k"),
                 rep);
        eddy_settings s;
        bench_settings(env, &s, ns);
        eddy_subscription_spec sp;
        bench_consume_spec(&sp, on_event);
        long n = messages(rates[k]);
        target = n;
        atomic_store(&handled, 0);
        eddy_bus *pub, *sub = NULL;
        eddy_rbus *rsub = NULL;
        struct ev_loop *loop = NULL;
        pthread_t t;
        rloop_run run;
        if (eddy_bus_new(&s, NULL, 0, &pub, &err) != EDDY_OK)
            bench_die("eddy_bus_new", err.detail);
        if (reactive) {
            loop = ev_loop_new(EVFLAG_AUTO);
            rsub = bench_rbus_started(loop, &s, &sp, 1); /* ready: its group exists */
            handler_loop = loop;
            run.loop = loop;
            pthread_create(&t, NULL, run_loop, &run);
        } else {
            handler_loop = NULL;
            if (eddy_bus_new(&s, &sp, 1, &sub, &err) != EDDY_OK ||
                eddy_bus_start(sub, &err) != EDDY_OK)
                bench_die("eddy_bus_start", err.detail);
        }
        double cpu0 = server_cpu_s(c), t0 = bench_now();
        for (long i = 0; i < n; i++) {
            pace(t0, i, rates[k]);
            eddy_event *ev = bench_event(i);
            sent_at[i] = bench_now();
            if (eddy_bus_publish(pub, "orders", ev, NULL, 0, &err) != EDDY_OK)
                bench_die("eddy_bus_publish", err.detail);
            eddy_event_free(ev);
        }
        if (reactive)
            pthread_join(t, NULL);
        else
            while (sem_wait(&all_handled) != 0)
                ;
        double cpu1 = server_cpu_s(c);
        percentiles(n, &out[2 * k], &out[2 * k + 1]);
        out[NOUT - 1] = (cpu1 - cpu0) * 1e6 / (double)n;
        if (reactive) {
            eddy_rbus_free(rsub);
            ev_loop_destroy(loop);
            handler_loop = NULL;
        } else {
            eddy_bus_free(sub);
        }
        eddy_bus_free(pub);
    }
    redisFree(c);
}

int main(int argc, char **argv) {
    bench_env env;
    /* -n: the messages of the 1k/s run (default 2,000: two seconds at each rate). */
    bench_setup(&env, argc, argv, 2000, NULL, "[-n messages at 1k/s]");
    seconds_per_rate = (double)env.n / (double)rates[0];
    long most = messages(rates[RATES - 1]);
    sent_at = calloc((size_t)most, sizeof(*sent_at));
    latency = calloc((size_t)most, sizeof(*latency));
    if (!sent_at || !latency)
        bench_die("latency", "out of memory");
    sem_init(&all_handled, 0, 0);

    bench_side sides[3] = {{"hiredis", raw_side, NULL},
                           {"eddy-blocking", eddy_side, NULL},
                           {"eddy-reactive", eddy_side, (void *)1}};
    double m[3 * NOUT];
    bench_sides(&env, sides, 3, NOUT, m);
    const char *suffix[RATES] = {"1k", "10k"};
    for (int side = 1; side <= 2; side++) {
        const char *fe = side == 2 ? "_reactive" : "";
        for (int k = 0; k < RATES; k++) {
            char name[64];
            snprintf(name, sizeof(name), "deliver_latency_p50_us_%s%s", suffix[k], fe);
            bench_print_med(name, side * NOUT + 2 * k, 2 * k);
            snprintf(name, sizeof(name), "deliver_latency_p99_us_%s%s", suffix[k], fe);
            bench_print_med(name, side * NOUT + 2 * k + 1, 2 * k + 1);
        }
        char name[64];
        snprintf(name, sizeof(name), "redis_cpu_us_per_msg%s", fe);
        bench_print_med(name, side * NOUT + NOUT - 1, NOUT - 1);
    }
    sem_destroy(&all_handled);
    free(sent_at);
    free(latency);
    bench_teardown(&env);
    return 0;
}
