/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory engine alone, below any front end: what one publish, read and ack costs inside
 * eddy__mem_exec. Each round XADDs 256 entries shaped like eddy's CloudEvents (specversion,
 * id, source, type, data of 120 bytes; one command each, as a pipelined publish sends them),
 * reads them with XREADGROUP COUNT 256 and acknowledges them with one XACK, freeing every
 * reply with freeReplyObject as the front ends do. It runs on 1 thread, then on 2 threads at
 * once (each its own connection, stream and group on the same engine, as two subscriptions
 * would be), and prints nanoseconds per entry for each step and in all:
 *   bench memory_engine_<step>_ns_per_entry threads=<n> eddy=<ns>
 * Usage: bench_memory_engine [rounds] (default 400 per thread). Wall clock: noisy on a
 * shared machine; compare instruction counts (callgrind) for before/after. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memory/engine.h"

#define BATCH 256
#define MAX_ARGS (3 + BATCH)

static int rounds = 400;
static char engine_name[64];

typedef struct worker {
    int index;
    double ns_add, ns_read, ns_ack; /* totals over the run */
    long entries;
} worker;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static redisReply *run(eddy__mem_conn *conn, int argc, const char **argv, const size_t *len) {
    long long block = -1;
    redisReply *r = eddy__mem_exec(conn, argc, argv, len, &block);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "bench_memory_engine: %s failed: %s\n", argv[0], r ? r->str : "no reply");
        exit(1);
    }
    return r;
}

static void *work(void *arg) {
    worker *w = arg;
    eddy__mem_engine *eng = eddy__mem_engine_acquire(engine_name);
    eddy__mem_conn *conn = eng ? eddy__mem_conn_new(eng) : NULL;
    if (!conn) {
        fprintf(stderr, "bench_memory_engine: out of memory\n");
        exit(1);
    }
    char key[64], data[120], evid[32];
    snprintf(key, sizeof(key), "bench:{stream-%d}", w->index);
    memset(data, 'p', sizeof(data));

    const char *create[] = {"XGROUP", "CREATE", key, "bench", "$", "MKSTREAM"};
    freeReplyObject(run(conn, 6, create, NULL));

    const char *add[] = {"XADD",   key,      "*",    "specversion",           "1.0",  "id", evid,
                         "source", "/bench", "type", "bench.order.placed.v1", "data", data};
    size_t addlen[13];
    for (int i = 0; i < 13; i++)
        addlen[i] = i == 12 ? sizeof(data) : strlen(add[i]);
    const char *read[] = {"XREADGROUP", "GROUP", "bench",   "c1", "COUNT", "256",
                          "BLOCK",      "1000",  "STREAMS", key,  ">"};
    const char *ack[MAX_ARGS] = {"XACK", key, "bench"};
    size_t acklen[MAX_ARGS] = {4, strlen(key), 5};
    char ids[BATCH][48];

    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            addlen[6] = (size_t)snprintf(evid, sizeof(evid), "ev-%d", r * BATCH + i);
            freeReplyObject(run(conn, 13, add, addlen));
        }
        double t1 = now_ns();
        redisReply *rep = run(conn, 11, read, NULL);
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 1 ||
            rep->element[0]->element[1]->elements != BATCH) {
            fprintf(stderr, "bench_memory_engine: unexpected XREADGROUP reply\n");
            exit(1);
        }
        redisReply *entries = rep->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            redisReply *id = entries->element[i]->element[0];
            memcpy(ids[i], id->str, id->len + 1);
            ack[3 + i] = ids[i];
            acklen[3 + i] = id->len;
        }
        freeReplyObject(rep);
        double t2 = now_ns();
        redisReply *acked = run(conn, 3 + BATCH, ack, acklen);
        if (acked->type != REDIS_REPLY_INTEGER || acked->integer != BATCH) {
            fprintf(stderr, "bench_memory_engine: XACK acknowledged %lld\n", acked->integer);
            exit(1);
        }
        freeReplyObject(acked);
        double t3 = now_ns();
        w->ns_add += t1 - t0;
        w->ns_read += t2 - t1;
        w->ns_ack += t3 - t2;
        w->entries += BATCH;
    }
    eddy__mem_conn_free(conn);
    eddy__mem_engine_release(eng);
    return NULL;
}

static void measure(int nthreads) {
    worker w[2] = {{0}, {0}};
    pthread_t t[2];
    double t0 = now_ns();
    for (int i = 0; i < nthreads; i++) {
        w[i].index = nthreads * 10 + i;
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "bench_memory_engine: pthread_create failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    double wall = now_ns() - t0;
    double add = 0, read = 0, ack = 0;
    long entries = 0;
    for (int i = 0; i < nthreads; i++) {
        add += w[i].ns_add;
        read += w[i].ns_read;
        ack += w[i].ns_ack;
        entries += w[i].entries;
    }
    /* Per-step figures are each thread's own time per entry it handled; "round" is the wall
     * clock over every entry of every thread (the engine's throughput). */
    printf("bench memory_engine_xadd_ns_per_entry threads=%d eddy=%.0f\n", nthreads,
           add / (double)entries);
    printf("bench memory_engine_xreadgroup_ns_per_entry threads=%d eddy=%.0f\n", nthreads,
           read / (double)entries);
    printf("bench memory_engine_xack_ns_per_entry threads=%d eddy=%.0f\n", nthreads,
           ack / (double)entries);
    printf("bench memory_engine_round_ns_per_entry threads=%d eddy=%.0f\n", nthreads,
           wall / (double)entries);
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (rounds < 1) {
        fprintf(stderr, "usage: %s [rounds]\n", argv[0]);
        return 2;
    }
    snprintf(engine_name, sizeof(engine_name), "bench-engine-%ld", (long)getpid());
    /* One reference held for the whole run, so both measurements share one engine. */
    eddy__mem_engine *keep = eddy__mem_engine_acquire(engine_name);
    if (!keep)
        return 1;
    measure(1);
    measure(2);
    eddy__mem_engine_release(keep);
    return 0;
}
