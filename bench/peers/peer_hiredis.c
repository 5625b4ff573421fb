/* SPDX-License-Identifier: BSD-3-Clause */
/* Raw hiredis beside the peers (bench/peers/run.sh): the same publish and consume work as
 * peer_eddy.c, at the raw client's best, so that each run shows how far above the other clients
 * the Redis server itself lets any client go:
 *   publish   N XADDs of eddy's exact fields (bench_xadd_argv), redisAppendCommandArgv, 256 per
 *             pipelined batch;
 *   consume   those N entries: XREADGROUP COUNT 256, each batch's XACK pipelined with the next
 *             read (bench_raw_consume).
 * Usage: bench_peer_hiredis redis://127.0.0.1:PORT N NAMESPACE; prints `hiredis publish=<x>
 * consume=<y>` (per second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv) {
    long n;
    bench_env env = {0};
    if (argc != 4 || (n = atol(argv[2])) < 1 ||
        sscanf(argv[1], "redis://127.0.0.1:%d", &env.port) != 1) {
        fprintf(stderr, "usage: %s redis://127.0.0.1:PORT N NAMESPACE\n", argv[0]);
        return 2;
    }
    char key[160];
    snprintf(key, sizeof(key), "%s:orders", argv[3]);
    redisContext *c = bench_connect(&env);
    redisReply *r = redisCommand(c, "XGROUP CREATE %s g $ MKSTREAM", key);
    if (!r || r->type == REDIS_REPLY_ERROR)
        bench_die("XGROUP CREATE", r ? r->str : c->errstr);
    freeReplyObject(r);

    double t0 = bench_now();
    for (long i = 0; i < n; i += BENCH_BATCH) {
        long k = n - i < BENCH_BATCH ? n - i : BENCH_BATCH;
        for (long j = 0; j < k; j++) {
            const char *xargv[BENCH_XADD_ARGC];
            size_t lens[BENCH_XADD_ARGC];
            char id[24];
            int xargc = bench_xadd_argv(key, i + j, id, xargv, lens);
            redisAppendCommandArgv(c, xargc, xargv, lens);
        }
        for (long j = 0; j < k; j++) {
            if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING)
                bench_die("XADD", c->err ? c->errstr : "not an id");
            freeReplyObject(r);
        }
    }
    double publish = (double)n / (bench_now() - t0);
    redisFree(c);
    double consume = (double)n / bench_raw_consume(&env, key, "g", n);
    printf("hiredis publish=%.0f consume=%.0f\n", publish, consume);
    return 0;
}
