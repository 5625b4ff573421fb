/* SPDX-License-Identifier: BSD-3-Clause */
/* The cost of settings.wait_replicas (WAIT after every publish), against a replica of the
 * bench's server that this bench starts (a second redis-server with --replicaof, on a free
 * 127.0.0.1 port, not pinned):
 *
 *   publish_single_wait1  N events (default 20,000) one round trip at a time. eddy:
 *                         eddy_bus_publish with wait_replicas 1 (XADD then WAIT 1 1000 in one
 *                         round trip). hiredis: the same XADD and WAIT 1 1000 appended together,
 *                         then their two replies.
 *   publish_single_nowait eddy's eddy_bus_publish without WAIT, in the same run: the cost is
 *                         the ratio of the two eddy figures (printed as a `#` line).
 *
 * On loopback WAIT costs the master's round trip to its replica and the replica's
 * acknowledgement (REPLCONF ACK, which the master asks for at once when a client waits). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "eddy/blocking.h"

static eddy_event **events;

/* Starts a replica of env's server; exits once it is in sync, or when it cannot be. */
static pid_t replica_start(const bench_env *env) {
    redisContext *c = bench_connect(env);
    redisReply *r;
    char master[16], port[16];
    snprintf(master, sizeof(master), "%d", env->port);
    snprintf(port, sizeof(port), "%d", bench_free_port());
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork", "replica");
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", port, "--dir",
               "/tmp", "--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", master,
               "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) { /* up to 20 s */
        r = redisCommand(c, "WAIT 1 50");
        long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        if (r)
            freeReplyObject(r);
        if (n >= 1) {
            redisFree(c);
            return pid;
        }
        struct timespec pause = {0, 50000000};
        nanosleep(&pause, NULL);
    }
    kill(pid, SIGKILL);
    bench_die("replica", "did not come in sync (port taken?)");
    return 0;
}

static void raw_wait(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char key[96];
    bench_ns(env, key, sizeof(key), "raw", rep);
    strcat(key, ":orders");
    const char *argv[BENCH_XADD_ARGC];
    size_t lens[BENCH_XADD_ARGC];
    const char *wait_argv[] = {"WAIT", "1", "1000"};
    size_t wait_lens[] = {4, 1, 4};
    redisContext *c = bench_connect(env);
    double t0 = bench_now();
    for (long i = 0; i < env->n; i++) {
        char id[24];
        bench_xadd_argv(key, i, id, argv, lens);
        redisAppendCommandArgv(c, BENCH_XADD_ARGC, argv, lens);
        redisAppendCommandArgv(c, 3, wait_argv, wait_lens);
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING)
            bench_die("raw XADD", c->errstr);
        freeReplyObject(r);
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER ||
            r->integer < 1)
            bench_die("raw WAIT", "the replica did not acknowledge");
        freeReplyObject(r);
    }
    out[0] = (double)env->n / (bench_now() - t0);
    redisFree(c);
}

static void eddy_side(const bench_env *env, int rep, double *out, unsigned wait, const char *side) {
    char ns[96];
    bench_ns(env, ns, sizeof(ns), side, rep);
    eddy_settings s;
    bench_settings(env, &s, ns);
    s.wait_replicas = wait;
    s.wait_timeout_ms = 1000;
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(&s, NULL, 0, &bus, &err) != EDDY_OK)
        bench_die("eddy_bus_new", err.detail);
    double t0 = bench_now();
    for (long i = 0; i < env->n; i++)
        if (eddy_bus_publish(bus, "orders", events[i], NULL, 0, &err) != EDDY_OK)
            bench_die("eddy_bus_publish", err.detail);
    out[0] = (double)env->n / (bench_now() - t0);
    eddy_bus_free(bus);
}

static void eddy_wait(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    eddy_side(env, rep, out, 1, "eddyw");
}

static void eddy_nowait(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    eddy_side(env, rep, out, 0, "eddy");
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 20000, NULL, NULL);
    events = bench_events(env.n);
    pid_t replica = replica_start(&env);
    bench_side sides[3] = {
        {"hiredis", raw_wait, NULL}, {"eddy", eddy_wait, NULL}, {"eddy_nowait", eddy_nowait, NULL}};
    double med[3];
    bench_sides(&env, sides, 3, 1, med);
    bench_print_med("publish_single_wait1", 1, 0);
    bench_print1("publish_single_nowait", med[2]);
    printf("# wait_replicas=1 costs %.0f%% of single-publish throughput (eddy %.0f/s -> %.0f/s)\n",
           100.0 * (1.0 - med[1] / med[2]), med[2], med[1]);
    kill(replica, SIGKILL);
    waitpid(replica, NULL, 0);
    bench_events_free(events, env.n);
    bench_teardown(&env);
    return 0;
}
