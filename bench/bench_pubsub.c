/* SPDX-License-Identifier: BSD-3-Clause */
/* Publish and consume, eddy beside raw hiredis doing the same Redis work at its best, in the same
 * run (see bench_util.h for repetitions, medians, alternating order and pinning):
 *
 *   publish_pipelined   N events (default 200,000; id ev-<i>, source /bench, type
 *                       bench.order.placed.v1, 120 bytes of data), 256 per round trip.
 *                       eddy: eddy_bus_publish_batch of 256 prebuilt events. hiredis: 256
 *                       redisAppendCommandArgv XADDs with exactly the fields and bytes eddy writes,
 *                       then their 256 replies.
 *   publish_single      N/10 events one round trip at a time: eddy_bus_publish against
 *                       redisCommandArgv XADD.
 *   consume_ack         N events published by eddy (untimed) to a fresh subject, then consumed
 *                       and acknowledged. eddy (blocking front end, default workers): a competing
 *                       AtLeastOnce subscription with read_batch 256, timed from eddy_bus_start to
 *                       the N-th handler call. hiredis: XREADGROUP COUNT 256 on the same kind of
 *                       entries, each batch's XACK pipelined with the next read.
 *   consume_ack_reactive  the same on the reactive front end (a libev loop on this thread).
 *   consume_cpu_us_per_msg, consume_ctxsw_per_msg (and _reactive): getrusage deltas (user +
 *                       system CPU; voluntary + involuntary context switches; every thread of
 *                       the process) around each side's timed phase, per message.
 *   memory_publish_handle  memory:// publish (batches of 256) -> handled by a competing
 *                       AtLeastOnce subscription, per second; no Redis work, no counterpart:
 *                       the median over the repetitions with its min and max. Blocking: a
 *                       publishing bus and a subscribing one, eddy_bus_publish_batch one batch
 *                       after another. _reactive: both buses on one loop on this thread,
 *                       each batch published from the completion of the one before.
 *
 * `# ... commands per message` lines give what the server counted for each side (INFO
 * commandstats around the first repetition), so what each side sent is measured, not assumed.
 * Each side of each repetition has its own namespace or key. */
#include <ev.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"

static eddy_event **events; /* N prebuilt events, shared by every eddy publish */
static long N;

static eddy_bus *bus_new(const eddy_settings *s, const eddy_subscription_spec *sp, size_t n) {
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(s, sp, n, &bus, &err) != EDDY_OK)
        bench_die("eddy_bus_new", err.detail);
    return bus;
}

/* ---- publish --------------------------------------------------------------------------- */

typedef struct publish_mode {
    bool pipelined;
    long n;
    unsigned dedup_ms; /* eddy side: settings.publish_dedup_ms */
} publish_mode;

static void raw_publish(const bench_env *env, int rep, double *out, void *user) {
    const publish_mode *m = user;
    char key[96];
    bench_ns(env, key, sizeof(key), "raw", rep);
    strcat(key, ":orders");
    char(*ids)[24] = malloc((size_t)m->n * sizeof(*ids));
    const char **argv = malloc((size_t)m->n * BENCH_XADD_ARGC * sizeof(*argv));
    size_t *lens = malloc((size_t)m->n * BENCH_XADD_ARGC * sizeof(*lens));
    if (!ids || !argv || !lens)
        bench_die("raw publish", "out of memory");
    for (long i = 0; i < m->n; i++)
        bench_xadd_argv(key, i, ids[i], argv + i * BENCH_XADD_ARGC, lens + i * BENCH_XADD_ARGC);
    redisContext *c = bench_connect(env);
    bench_counting k;
    bench_counting_start(env, rep, &k);
    long batch = m->pipelined ? BENCH_BATCH : 1;
    double t0 = bench_now();
    for (long i = 0; i < m->n; i += batch) {
        long end = i + batch < m->n ? i + batch : m->n;
        for (long j = i; j < end; j++)
            redisAppendCommandArgv(c, BENCH_XADD_ARGC, argv + j * BENCH_XADD_ARGC,
                                   lens + j * BENCH_XADD_ARGC);
        for (long j = i; j < end; j++) {
            redisReply *r;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING)
                bench_die("raw XADD", c->errstr);
            freeReplyObject(r);
        }
    }
    out[0] = (double)m->n / (bench_now() - t0);
    bench_counting_end(&k, "hiredis publish", "message", (double)m->n);
    redisFree(c);
    free(ids);
    free(argv);
    free(lens);
}

static void eddy_publish(const bench_env *env, int rep, double *out, void *user) {
    const publish_mode *m = user;
    char ns[96];
    bench_ns(env, ns, sizeof(ns), m->dedup_ms ? "eddyd" : "eddy", rep);
    eddy_settings s;
    bench_settings(env, &s, ns);
    s.publish_dedup_ms = m->dedup_ms;
    eddy_bus *bus = bus_new(&s, NULL, 0);
    bench_counting k;
    bench_counting_start(env, rep, &k);
    eddy_error err;
    double t0 = bench_now();
    if (m->pipelined) {
        for (long i = 0; i < m->n; i += BENCH_BATCH) {
            size_t b = m->n - i < BENCH_BATCH ? (size_t)(m->n - i) : BENCH_BATCH;
            if (eddy_bus_publish_batch(bus, "orders", (const eddy_event *const *)events + i, b,
                                       NULL, &err) != EDDY_OK)
                bench_die("eddy_bus_publish_batch", err.detail);
        }
    } else {
        for (long i = 0; i < m->n; i++)
            if (eddy_bus_publish(bus, "orders", events[i], NULL, 0, &err) != EDDY_OK)
                bench_die("eddy_bus_publish", err.detail);
    }
    out[0] = (double)m->n / (bench_now() - t0);
    bench_counting_end(&k, "eddy publish", "message", (double)m->n);
    eddy_bus_free(bus);
}

static void publish(const bench_env *env, const char *name, bool pipelined, long n) {
    publish_mode m = {pipelined, n, 0};
    bench_side sides[2] = {{"hiredis", raw_publish, &m}, {"eddy", eddy_publish, &m}};
    double med[2];
    bench_sides(env, sides, 2, 1, med);
    bench_print_med(name, 1, 0);
}

/* The cost of publish_dedup_ms (the function library's publish and the subject's dedup record)
 * against a plain XADD publish, both through eddy, in alternating repetitions: "eddy=" is the
 * deduplicating side, "hiredis=" the plain one here, so the ratio is what the option keeps. */
static void publish_dedup_cost(const bench_env *env, const char *name, bool pipelined, long n) {
    publish_mode plain = {pipelined, n, 0}, dedup = {pipelined, n, 60000};
    bench_side sides[2] = {{"eddy_plain", eddy_publish, &plain},
                           {"eddy_dedup", eddy_publish, &dedup}};
    double med[2];
    bench_sides(env, sides, 2, 1, med);
    bench_print(name, med[1], med[0]);
}

/* ---- consume --------------------------------------------------------------------------- */

static atomic_long handled;
static long target;
static sem_t all_handled;
static struct ev_loop *consume_loop; /* the reactive side's loop */

static eddy_status count(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    if (atomic_fetch_add(&handled, 1) + 1 == target) {
        if (consume_loop)
            ev_break(consume_loop, EVBREAK_ALL);
        else
            sem_post(&all_handled);
    }
    return EDDY_OK;
}

/* A transactional handler: one output per input (the input's event again, to orders.out),
 * committed with the acknowledgement (eddy_delivery_emit). */
static eddy_status count_emit(eddy_delivery *d, void *user) {
    eddy_status st = eddy_delivery_emit(d, "orders.out", eddy_delivery_event(d), NULL);
    return st != EDDY_OK ? st : count(d, user);
}

static void figures(double *out, double seconds, bench_usage u0, bench_usage u1, long n) {
    out[0] = (double)n / seconds;
    out[1] = (u1.cpu_us - u0.cpu_us) / (double)n;
    out[2] = (u1.ctxsw - u0.ctxsw) / (double)n;
}

static void raw_consume(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96], key[128];
    bench_ns(env, ns, sizeof(ns), "raw", rep);
    bench_fill_for_raw(env, ns, N, key, sizeof(key));
    bench_counting k;
    bench_counting_start(env, rep, &k);
    bench_usage u0 = bench_usage_now();
    double seconds = bench_raw_consume(env, key, "raw", N);
    figures(out, seconds, u0, bench_usage_now(), N);
    bench_counting_end(&k, "hiredis consume", "message", (double)N);
}

/* user non-NULL: the transactional handler (count_emit). */
static void eddy_consume(const bench_env *env, int rep, double *out, void *user) {
    char ns[96];
    bench_ns(env, ns, sizeof(ns), user ? "eddyt" : "eddy", rep);
    eddy_settings s;
    bench_settings(env, &s, ns);
    eddy_subscription_spec sp;
    bench_consume_spec(&sp, user ? count_emit : count);
    eddy_bus *bus = bus_new(&s, &sp, 1);
    eddy_error err;
    /* The group first (made at the subscription's start), then the entries, then the consume. */
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    eddy_bus_stop(bus);
    bench_fill(&s, "orders", N);
    atomic_store(&handled, 0);
    target = N;
    consume_loop = NULL;
    bench_counting k;
    bench_counting_start(env, rep, &k);
    bench_usage u0 = bench_usage_now();
    double t0 = bench_now();
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    while (sem_wait(&all_handled) != 0)
        ;
    double seconds = bench_now() - t0;
    figures(out, seconds, u0, bench_usage_now(), N);
    eddy_bus_free(bus); /* sends the last acknowledgements before the count below */
    bench_counting_end(&k, "eddy blocking consume", "message", (double)N);
}

static void eddy_rconsume(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    bench_ns(env, ns, sizeof(ns), "eddyr", rep);
    eddy_settings s;
    bench_settings(env, &s, ns);
    eddy_subscription_spec sp;
    bench_consume_spec(&sp, count);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rbus *bus = bench_rbus_started(loop, &s, &sp, 1);
    eddy_error err;
    eddy_rbus_stop(bus);
    bench_fill(&s, "orders", N);
    atomic_store(&handled, 0);
    target = N;
    consume_loop = loop;
    bench_counting k;
    bench_counting_start(env, rep, &k);
    bench_usage u0 = bench_usage_now();
    double t0 = bench_now();
    if (eddy_rbus_start(bus, NULL, NULL, &err) != EDDY_OK)
        bench_die("eddy_rbus_start", err.detail);
    ev_run(loop, 0);
    double seconds = bench_now() - t0;
    figures(out, seconds, u0, bench_usage_now(), N);
    if (atomic_load(&handled) != N)
        bench_die("reactive consume", "the loop ended before every message was handled");
    eddy_rbus_free(bus);
    ev_loop_destroy(loop);
    consume_loop = NULL;
    bench_counting_end(&k, "eddy reactive consume", "message", (double)N);
}

static void consume(const bench_env *env) {
    bench_side sides[3] = {{"hiredis", raw_consume, NULL},
                           {"eddy-blocking", eddy_consume, NULL},
                           {"eddy-reactive", eddy_rconsume, NULL}};
    double m[9]; /* per side: rate, cpu us per message, context switches per message */
    bench_sides(env, sides, 3, 3, m);
    bench_print_med("consume_ack", 3, 0);
    bench_print_med("consume_cpu_us_per_msg", 4, 1);
    bench_print_med("consume_ctxsw_per_msg", 5, 2);
    bench_print_med("consume_ack_reactive", 6, 0);
    bench_print_med("consume_cpu_us_per_msg_reactive", 7, 1);
    bench_print_med("consume_ctxsw_per_msg_reactive", 8, 2);
}

/* The cost of a transactional handler (one output per input, committed with the
 * acknowledgement through the function library) against a plain one (XACK), both through the
 * blocking front end, in alternating repetitions: the ratio is what emitting keeps. */
static void consume_txn_cost(const bench_env *env) {
    static int txn = 1;
    bench_side sides[2] = {{"eddy_plain", eddy_consume, NULL}, {"eddy_txn", eddy_consume, &txn}};
    double m[6];
    bench_sides(env, sides, 2, 3, m);
    bench_print("consume_txn_vs_plain", m[3], m[0]);
    bench_print("consume_txn_vs_plain_cpu_us_per_msg", m[4], m[1]);
}

/* ---- memory:// --------------------------------------------------------------------------- */

/* A side's memory:// namespace (ns, 96 bytes), URL (url, 128 bytes), settings and spec. */
static void memory_setup(const bench_env *env, int rep, const char *side, char *ns, char *url,
                         eddy_settings *s, eddy_subscription_spec *sp) {
    bench_ns(env, ns, 96, side, rep);
    snprintf(url, 128, "memory://%s", ns);
    bench_settings(env, s, ns);
    s->url = url;
    bench_consume_spec(sp, count);
}

static void memory_publish_handle(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96], url[128];
    eddy_settings s;
    eddy_subscription_spec sp;
    memory_setup(env, rep, "mem", ns, url, &s, &sp);
    eddy_bus *sub = bus_new(&s, &sp, 1), *pub = bus_new(&s, NULL, 0);
    eddy_error err;
    if (eddy_bus_start(sub, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    atomic_store(&handled, 0);
    target = N;
    consume_loop = NULL;
    double t0 = bench_now();
    for (long i = 0; i < N; i += BENCH_BATCH) {
        size_t k = N - i < BENCH_BATCH ? (size_t)(N - i) : BENCH_BATCH;
        if (eddy_bus_publish_batch(pub, "orders", (const eddy_event *const *)events + i, k, NULL,
                                   &err) != EDDY_OK)
            bench_die("memory publish", err.detail);
    }
    while (sem_wait(&all_handled) != 0)
        ;
    out[0] = (double)N / (bench_now() - t0);
    eddy_bus_free(sub);
    eddy_bus_free(pub);
}

/* The reactive side: one batch in flight, the next published from its completion. */
typedef struct mem_pub {
    eddy_rbus *bus;
    long next;
} mem_pub;

static void mem_published(eddy_status st, size_t published, const eddy_error *err, void *user);

static void mem_publish_next(mem_pub *p) {
    if (p->next >= N)
        return;
    size_t k = N - p->next < BENCH_BATCH ? (size_t)(N - p->next) : BENCH_BATCH;
    eddy_error err;
    if (eddy_rbus_publish_batch(p->bus, "orders", (const eddy_event *const *)events + p->next, k,
                                mem_published, p, &err) != EDDY_OK)
        bench_die("memory publish (reactive)", err.detail);
    p->next += (long)k;
}

static void mem_published(eddy_status st, size_t published, const eddy_error *err, void *user) {
    (void)published;
    if (st != EDDY_OK)
        bench_die("memory publish (reactive)", err ? err->detail : eddy_status_str(st));
    mem_publish_next(user);
}

static void memory_publish_handle_reactive(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96], url[128];
    eddy_settings s;
    eddy_subscription_spec sp;
    memory_setup(env, rep, "memr", ns, url, &s, &sp);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rbus *sub = bench_rbus_started(loop, &s, &sp, 1);
    eddy_rbus *pub = bench_rbus_started(loop, &s, NULL, 0);
    atomic_store(&handled, 0);
    target = N;
    consume_loop = loop;
    mem_pub p = {pub, 0};
    double t0 = bench_now();
    mem_publish_next(&p);
    ev_run(loop, 0);
    out[0] = (double)N / (bench_now() - t0);
    if (atomic_load(&handled) != N)
        bench_die("memory publish (reactive)", "the loop ended before every message was handled");
    eddy_rbus_free(sub);
    eddy_rbus_free(pub);
    ev_loop_destroy(loop);
    consume_loop = NULL;
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 200000, NULL, NULL);
    N = env.n;
    sem_init(&all_handled, 0, 0);
    events = bench_events(N);

    if (bench_wanted(&env, "publish_pipelined"))
        publish(&env, "publish_pipelined", true, N);
    if (bench_wanted(&env, "publish_single"))
        publish(&env, "publish_single", false, N / 10 > 0 ? N / 10 : 1);
    if (bench_wanted(&env, "publish_dedup"))
        publish_dedup_cost(&env, "publish_dedup_vs_plain_pipelined", true, N);
    if (bench_wanted(&env, "publish_dedup"))
        publish_dedup_cost(&env, "publish_dedup_vs_plain_single", false, N / 10 > 0 ? N / 10 : 1);
    if (bench_wanted(&env, "consume"))
        consume(&env);
    if (bench_wanted(&env, "consume_txn"))
        consume_txn_cost(&env);
    if (bench_wanted(&env, "memory_publish_handle")) {
        bench_side mem[2] = {{"eddy", memory_publish_handle, NULL},
                             {"eddy-reactive", memory_publish_handle_reactive, NULL}};
        double rate[2];
        bench_sides(&env, mem, 2, 1, rate);
        bench_print1_med("memory_publish_handle", 0);
        bench_print1_med("memory_publish_handle_reactive", 1);
    }

    bench_events_free(events, N);
    sem_destroy(&all_handled);
    bench_teardown(&env);
    return 0;
}
