/* SPDX-License-Identifier: BSD-3-Clause */
/* Flat memory under a long consume, on each front end (opt-in: it takes minutes). A competing
 * AtLeastOnce subscription (read_batch 256, default workers) consumes -n N messages (default
 * 5,000,000) while a raw hiredis publisher thread keeps its stream fed: the bench's events with
 * exactly eddy's fields, XADD MAXLEN ~ 200000, pipelined 256 at a time, never more than 50,000
 * ahead of the consumer (so the trim only removes entries read and acknowledged long ago, and
 * Redis holds a bounded stream). The process's RSS (/proc/self/statm) is sampled every 200 ms:
 *   consume_rss_growth_kib_{blocking,reactive}   the highest RSS after the first million
 *       messages (the first fifth when N is smaller) less the RSS at that point, in KiB.
 * `#` lines give the RSS at each million and the consume rate. --front blocking|reactive runs
 * one front end only; --reps defaults to 1 here. */
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"

#define AHEAD 50000
#define SAMPLE_S 0.2

static long N, WARM;
static atomic_long handled;

static eddy_status count(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

/* ---- the publisher ---------------------------------------------------------------------- */

typedef struct publisher {
    const bench_env *env;
    char key[128];
    pthread_t thread;
} publisher;

static void *publish_all(void *arg) {
    publisher *p = arg;
    redisContext *c = bench_connect(p->env);
    char id[24];
    const char *x[BENCH_XADD_ARGC];
    size_t xl[BENCH_XADD_ARGC];
    const char *argv[BENCH_XADD_ARGC + 3];
    size_t lens[BENCH_XADD_ARGC + 3];
    struct timespec pause = {0, 1000000};
    for (long i = 0; i < N;) {
        if (i - atomic_load(&handled) > AHEAD) {
            nanosleep(&pause, NULL);
            continue;
        }
        long end = i + BENCH_BATCH < N ? i + BENCH_BATCH : N;
        for (long j = i; j < end; j++) {
            bench_xadd_argv(p->key, j, id, x, xl);
            /* XADD key MAXLEN ~ 200000 * <eddy's fields> */
            argv[0] = x[0], lens[0] = xl[0], argv[1] = x[1], lens[1] = xl[1];
            argv[2] = "MAXLEN", lens[2] = 6, argv[3] = "~", lens[3] = 1;
            argv[4] = "200000", lens[4] = 6;
            memcpy(argv + 5, x + 2, (BENCH_XADD_ARGC - 2) * sizeof(*argv));
            memcpy(lens + 5, xl + 2, (BENCH_XADD_ARGC - 2) * sizeof(*lens));
            redisAppendCommandArgv(c, BENCH_XADD_ARGC + 3, argv, lens);
        }
        for (long j = i; j < end; j++) {
            redisReply *r;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING)
                bench_die("publisher XADD", c->errstr);
            freeReplyObject(r);
        }
        i = end;
    }
    redisFree(c);
    return NULL;
}

static void publisher_start(publisher *p, const bench_env *env, const char *ns) {
    p->env = env;
    snprintf(p->key, sizeof(p->key), "{%s}:s:orders", ns);
    if (pthread_create(&p->thread, NULL, publish_all, p) != 0)
        bench_die("publisher", "no thread");
}

/* ---- the samples ------------------------------------------------------------------------ */

typedef struct samples {
    long at_warm, peak_after, next_million;
    double t0;
} samples;

static void samples_init(samples *s) {
    s->at_warm = -1;
    s->peak_after = 0;
    s->next_million = 1000000;
    s->t0 = bench_now();
}

static void sample(samples *s, const char *front) {
    long n = atomic_load(&handled), rss = bench_rss_kib();
    if (s->at_warm < 0 && n >= WARM)
        s->at_warm = rss;
    else if (s->at_warm >= 0 && rss > s->peak_after)
        s->peak_after = rss;
    if (n >= s->next_million) {
        printf("# %s: %ld messages, rss %ld KiB, %.0f/s\n", front, n, rss,
               (double)n / (bench_now() - s->t0));
        fflush(stdout);
        s->next_million += 1000000;
    }
}

static double growth(const samples *s) {
    if (s->at_warm < 0)
        bench_die("rss", "no sample after the warm-up");
    return s->peak_after > s->at_warm ? (double)(s->peak_after - s->at_warm) : 0;
}

/* ---- the two front ends ----------------------------------------------------------------- */

static void rss_blocking(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    eddy_settings s;
    bench_ns(env, ns, sizeof(ns), "blocking", rep);
    bench_settings(env, &s, ns);
    eddy_subscription_spec sp;
    bench_consume_spec(&sp, count);
    eddy_bus *bus;
    eddy_error err;
    atomic_store(&handled, 0);
    if (eddy_bus_new(&s, &sp, 1, &bus, &err) != EDDY_OK || eddy_bus_start(bus, &err) != EDDY_OK)
        bench_die("blocking bus", err.detail);
    publisher p;
    publisher_start(&p, env, ns);
    samples sm;
    samples_init(&sm);
    struct timespec pause = {0, (long)(SAMPLE_S * 1e9)};
    while (atomic_load(&handled) < N) {
        nanosleep(&pause, NULL);
        sample(&sm, "blocking");
    }
    pthread_join(p.thread, NULL);
    eddy_bus_free(bus);
    out[0] = growth(&sm);
}

static void on_sample(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)revents;
    sample(t->data, "reactive");
    if (atomic_load(&handled) >= N)
        ev_break(loop, EVBREAK_ALL);
}

static void rss_reactive(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    eddy_settings s;
    bench_ns(env, ns, sizeof(ns), "reactive", rep);
    bench_settings(env, &s, ns);
    eddy_subscription_spec sp;
    bench_consume_spec(&sp, count);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    atomic_store(&handled, 0);
    eddy_rbus *bus = bench_rbus_started(loop, &s, &sp, 1);
    publisher p;
    publisher_start(&p, env, ns);
    samples sm;
    samples_init(&sm);
    ev_timer t;
    ev_timer_init(&t, on_sample, SAMPLE_S, SAMPLE_S);
    t.data = &sm;
    ev_timer_start(loop, &t);
    ev_run(loop, 0);
    ev_timer_stop(loop, &t);
    pthread_join(p.thread, NULL);
    eddy_rbus_free(bus);
    ev_loop_destroy(loop);
    out[0] = growth(&sm);
}

int main(int argc, char **argv) {
    static const char *const extra[] = {"--front", NULL};
    bench_env env;
    bench_default_reps = 1;
    bench_setup(&env, argc, argv, 5000000, extra, "[--front blocking|reactive]");
    N = env.n;
    WARM = N / 5 < 1000000 ? N / 5 : 1000000;
    const char *front = "both";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--front") == 0)
            front = argv[i + 1];
    if (strcmp(front, "both") && strcmp(front, "blocking") && strcmp(front, "reactive"))
        bench_die("--front", "blocking or reactive");
    if (strcmp(front, "reactive") != 0) {
        bench_side b = {"eddy-blocking", rss_blocking, NULL};
        double kib;
        bench_sides(&env, &b, 1, 1, &kib);
        bench_print1("consume_rss_growth_kib_blocking", kib);
    }
    if (strcmp(front, "blocking") != 0) {
        bench_side r = {"eddy-reactive", rss_reactive, NULL};
        double kib;
        bench_sides(&env, &r, 1, 1, &kib);
        bench_print1("consume_rss_growth_kib_reactive", kib);
    }
    bench_teardown(&env);
    return 0;
}
