/* SPDX-License-Identifier: BSD-3-Clause */
/* What an idle service costs, on each front end (repetitions and medians: bench_util.h): a bus
 * with --subs K plain subscriptions (default 10; subjects idle.plain.<i>, their streams made by
 * the groups) and K pattern subscriptions that match no subject (idle.none<i>.*), Competing,
 * AtLeastOnce, started, left alone for --settle-ms (default 1000), then watched for --seconds S
 * (default 3) while nothing is published:
 *   idle_wakeups_per_s_{blocking,reactive}   context switches (voluntary + involuntary) of the
 *       process over the window, per second: every thread, from getrusage; on the blocking side
 *       less the switches of the bench's own sleeping thread, on the reactive side the loop
 *       runs on that thread and its switches are the bus's (one is the timer that ends the
 *       window).
 *   idle_redis_cmds_per_s_{blocking,reactive}   commands the server counted over the window
 *       (INFO commandstats total calls, less the bench's own INFO), per second.
 *   idle_threads_blocking, idle_connections_{blocking,reactive}   threads of the process besides
 *       the bench's own, and client connections the server has besides the bench's.
 * These are for the whole bus (2K subscriptions); a `#` line gives the command mix. */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"

#define MAX_SUBS 1000

static long K, SETTLE_MS, SECONDS;
static char names[2 * MAX_SUBS][32], patterns[2 * MAX_SUBS][40];

static eddy_status never(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

static void specs_make(eddy_subscription_spec *specs) {
    for (long i = 0; i < 2 * K; i++) {
        bool plain = i < K;
        snprintf(names[i], sizeof(names[i]), "%s%ld", plain ? "plain" : "pattern", i);
        if (plain)
            snprintf(patterns[i], sizeof(patterns[i]), "idle.plain.%ld", i);
        else
            snprintf(patterns[i], sizeof(patterns[i]), "idle.none%ld.*", i);
        eddy_subscription_spec_init(&specs[i]);
        specs[i].name = names[i];
        specs[i].pattern = patterns[i];
        specs[i].group = "idle";
        specs[i].delivery = EDDY_AT_LEAST_ONCE;
        specs[i].handler = never;
    }
}

static long connected_clients(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO clients");
    const char *v = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_clients:") : 0;
    long n = v ? strtol(v + strlen("connected_clients:"), NULL, 10) : -1;
    freeReplyObject(r);
    return n;
}

/* The window's figures: wakeups/s, commands/s, threads, connections. */
typedef struct window {
    redisContext *c;
    bench_cmdstats before, after;
    bench_usage u0, own0;
    long connections;
} window;

static void window_open(const bench_env *env, window *w) {
    w->c = bench_connect(env);
    w->connections = connected_clients(w->c) - 1;
    bench_cmdstats_read(w->c, &w->before);
    w->own0 = bench_usage_thread();
    w->u0 = bench_usage_now();
}

static void window_close(window *w, double seconds, bool own_thread_is_bench, int rep,
                         const char *label, double *out) {
    bench_usage u1 = bench_usage_now(), own1 = bench_usage_thread();
    bench_cmdstats_read(w->c, &w->after);
    double own = own_thread_is_bench ? own1.ctxsw - w->own0.ctxsw : 0;
    out[0] = (u1.ctxsw - w->u0.ctxsw - own) / seconds;
    out[1] = (double)bench_cmdstats_total(&w->before, &w->after, 1) / seconds;
    out[2] = (double)(bench_status_field("Threads:") - 1);
    out[3] = (double)w->connections;
    if (rep == 0)
        bench_cmdstats_print(label, "second", &w->before, &w->after, seconds);
    redisFree(w->c);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0)
        ;
}

static void idle_blocking(const bench_env *env, int rep, double *out, void *user) {
    eddy_subscription_spec *specs = user;
    char ns[96];
    eddy_settings s;
    bench_ns(env, ns, sizeof(ns), "blocking", rep);
    bench_settings(env, &s, ns);
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(&s, specs, (size_t)(2 * K), &bus, &err) != EDDY_OK ||
        eddy_bus_start(bus, &err) != EDDY_OK)
        bench_die("blocking bus", err.detail);
    sleep_ms(SETTLE_MS);
    window w;
    window_open(env, &w);
    sleep_ms(SECONDS * 1000);
    window_close(&w, (double)SECONDS, true, rep, "eddy blocking idle", out);
    eddy_bus_free(bus);
}

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

static void idle_reactive(const bench_env *env, int rep, double *out, void *user) {
    eddy_subscription_spec *specs = user;
    char ns[96];
    eddy_settings s;
    bench_ns(env, ns, sizeof(ns), "reactive", rep);
    bench_settings(env, &s, ns);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rbus *bus = bench_rbus_started(loop, &s, specs, (size_t)(2 * K));
    run_for(loop, (double)SETTLE_MS / 1000);
    window w;
    window_open(env, &w);
    ev_now_update(loop);
    run_for(loop, (double)SECONDS);
    window_close(&w, (double)SECONDS, false, rep, "eddy reactive idle", out);
    eddy_rbus_free(bus);
    ev_loop_destroy(loop);
}

int main(int argc, char **argv) {
    static const char *const extra[] = {"--subs", "--seconds", "--settle-ms", NULL};
    bench_env env;
    bench_setup(&env, argc, argv, 1, extra, "[--subs K] [--seconds S] [--settle-ms MS]");
    K = bench_opt(&env, "--subs", 10);
    SECONDS = bench_opt(&env, "--seconds", 3);
    SETTLE_MS = bench_opt(&env, "--settle-ms", 1000);
    if (K < 1 || K > MAX_SUBS || SECONDS < 1 || SETTLE_MS < 0)
        bench_die("options", "--subs 1..1000, --seconds >= 1, --settle-ms >= 0");
    printf("# a bus with %ld plain and %ld unmatched pattern subscriptions, idle for %ld s\n", K, K,
           SECONDS);
    eddy_subscription_spec *specs = calloc((size_t)(2 * K), sizeof(*specs));
    if (!specs)
        bench_die("specs", "out of memory");
    specs_make(specs);

    bench_side blocking = {"eddy-blocking", idle_blocking, specs};
    double b[4];
    bench_sides(&env, &blocking, 1, 4, b);
    bench_print1("idle_wakeups_per_s_blocking", b[0]);
    bench_print1("idle_redis_cmds_per_s_blocking", b[1]);
    bench_print1("idle_threads_blocking", b[2]);
    bench_print1("idle_connections_blocking", b[3]);

    bench_side reactive = {"eddy-reactive", idle_reactive, specs};
    double r[4];
    bench_sides(&env, &reactive, 1, 4, r);
    bench_print1("idle_wakeups_per_s_reactive", r[0]);
    bench_print1("idle_redis_cmds_per_s_reactive", r[1]);
    bench_print1("idle_connections_reactive", r[3]);

    free(specs);
    bench_teardown(&env);
    return 0;
}
