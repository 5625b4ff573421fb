/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's Redis memory per stored event, and the speed of reading one stream, beside
 * raw hiredis keeping the same entries once:
 *   raw fill    N entries (default 100,000) XADDed with automatic ids to one stream by raw
 *               hiredis, pipelined 100 at a time through redisAppendCommandArgv; each entry is
 *               exactly the fields eddy's entry encoding writes for the bench's event
 *               (specversion, id, source, type, data; ~120-byte data), nothing else.
 *   eddy fill   the same N events appended with eddy_store_append, 100 at a time, to a rotating
 *               set of 1,000 stream ids (so each stream holds N/1,000 events whose positions are
 *               interleaved with the other streams'), without publishing.
 *   memory      `used_memory` (INFO memory) after a fill minus before it, divided by N: every
 *               key the store writes ({ns}:es:all, the per-stream keys, {ns}:es:pos) counts.
 *               The private server has nothing else in it while this runs.
 *   read        eddy: eddy_store_read_stream of each of the 1,000 streams in turn (one call
 *               each, N/1,000 events); hiredis: XRANGE of the raw stream in pages of N/1,000
 *               entries (the same number of calls and entries, no decoding). Three rounds,
 *               sides alternating which goes first, medians printed.
 *   positions   the layout issue 9 proposes, built beside eddy's keys for comparison: per
 *               stream a key of position-only entries ("<version>-0" -> _position <p>, what
 *               the per-stream key would hold) and a Redis function (Lua, loaded by this bench)
 *               that reads one stream's positions and fetches each entry from {ns}:es:all by
 *               XRANGE <p>-0 <p>-0, returning them in one reply. Its memory is
 *               MEMORY USAGE of {ns}:es:all plus the used_memory growth of building the position
 *               keys; its read is FCALL_RO of each stream in turn, without decoding (an upper
 *               bound for a client that would read through it), against eddy's read of today.
 * Printed:
 *   bench store_bytes_per_event eddy=<bytes> raw=<bytes> ratio=<eddy/raw>
 *   bench store_read_stream eddy=<events/s> hiredis=<entries/s> ratio=<eddy/hiredis>
 *   bench store_bytes_per_event_positions eddy=<bytes> raw=<bytes> ratio=<eddy/raw>
 *   bench store_read_stream_positions function=<entries/s> eddy=<events/s> ratio=<function/eddy>
 * Usage: bench_store [redis://127.0.0.1:PORT] [events]; without a URL it starts its own
 * redis-server on a free loopback port (a given server must be otherwise idle for the memory
 * figure to mean anything). The bench deletes its keys afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/store.h"

static long N = 100000;
#define BATCH 100
#define STREAMS 1000
#define ROUNDS_MAX 32 /* read rounds per side: --reps (default 5), at most this */
#define DATA_LEN 120

static void die(const char *what, const eddy_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->detail : "failed");
    exit(1);
}

static long long used_memory(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO memory");
    if (!r || r->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "INFO memory failed\n");
        exit(1);
    }
    const char *p = strstr(r->str, "used_memory:");
    long long v = p ? atoll(p + strlen("used_memory:")) : -1;
    freeReplyObject(r);
    if (v < 0) {
        fprintf(stderr, "no used_memory in INFO\n");
        exit(1);
    }
    return v;
}

static char data[DATA_LEN + 1];

static void raw_fill(redisContext *c, const char *key) {
    for (long i = 0; i < N; i += BATCH) {
        long n = N - i < BATCH ? N - i : BATCH;
        for (long j = 0; j < n; j++) {
            char id[32];
            snprintf(id, sizeof(id), "ev-%ld", i + j);
            const char *argv[] = {
                "XADD",   key,      "*",    "specversion",           "1.0",  "id", id,
                "source", "/bench", "type", "bench.order.placed.v1", "data", data};
            size_t len[13];
            for (int k = 0; k < 13; k++)
                len[k] = strlen(argv[k]);
            redisAppendCommandArgv(c, 13, argv, len);
        }
        for (long j = 0; j < n; j++) {
            void *r;
            if (redisGetReply(c, &r) != REDIS_OK) {
                fprintf(stderr, "raw XADD failed\n");
                exit(1);
            }
            freeReplyObject(r);
        }
    }
}

static void eddy_fill(eddy_store *store) {
    eddy_event *evs[BATCH];
    for (int j = 0; j < BATCH; j++) {
        evs[j] = eddy_event_new();
        eddy_event_set_source(evs[j], "/bench");
        eddy_event_set_type(evs[j], "bench.order.placed.v1");
        eddy_event_set_data(evs[j], data, DATA_LEN);
    }
    eddy_error err;
    for (long i = 0, batch = 0; i < N; i += BATCH, batch++) {
        size_t n = N - i < BATCH ? (size_t)(N - i) : BATCH;
        for (size_t j = 0; j < n; j++) {
            char id[32];
            snprintf(id, sizeof(id), "ev-%ld", i + (long)j);
            eddy_event_set_id(evs[j], id);
        }
        char stream[32];
        snprintf(stream, sizeof(stream), "order-%ld", batch % STREAMS);
        if (eddy_store_append(store, stream, (const eddy_event *const *)evs, n, NULL, NULL, &err) !=
            EDDY_OK)
            die("append", &err);
    }
    for (int j = 0; j < BATCH; j++)
        eddy_event_free(evs[j]);
}

static eddy_status count_event(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)meta;
    size_t len;
    if (!eddy_event_id(ev) || !eddy_event_data(ev, &len) || len != DATA_LEN)
        return EDDY_ERR_MALFORMED;
    (*(long *)user)++;
    return EDDY_OK;
}

static double eddy_read(eddy_store *store) {
    long count = 0;
    eddy_error err;
    double t0 = bench_now();
    for (int s = 0; s < STREAMS; s++) {
        char stream[32];
        snprintf(stream, sizeof(stream), "order-%d", s);
        if (eddy_store_read_stream(store, stream, 0, count_event, &count, &err) != EDDY_OK)
            die("read stream", &err);
    }
    double rate = (double)count / (bench_now() - t0);
    if (count != N) {
        fprintf(stderr, "eddy read %ld of %ld events\n", count, N);
        exit(1);
    }
    return rate;
}

static double raw_read(redisContext *c, const char *key) {
    long page = N / STREAMS > 0 ? N / STREAMS : 1, count = 0;
    char start[64] = "-";
    double t0 = bench_now();
    for (;;) {
        redisReply *r = redisCommand(c, "XRANGE %s %s + COUNT %ld", key, start, page);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "XRANGE failed\n");
            exit(1);
        }
        size_t n = r->elements;
        count += (long)n;
        if (n > 0)
            snprintf(start, sizeof(start), "(%s", r->element[n - 1]->element[0]->str);
        freeReplyObject(r);
        if ((long)n < page)
            break;
    }
    return (double)count / (bench_now() - t0);
}

static void delete_keys(redisContext *c, const char *pattern) {
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
            break;
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++)
            redisAppendCommand(c, "UNLINK %s", keys->element[i]->str);
        for (size_t i = 0; i < keys->elements; i++) {
            void *u;
            if (redisGetReply(c, &u) == REDIS_OK)
                freeReplyObject(u);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
}

/* The positions layout's read: one stream's positions, then each entry from the global
 * stream, in one reply shaped like an XRANGE of the stream. */
static const char positions_lua[] =
    "#!lua name=bench_positions\n"
    "redis.register_function{function_name='bench_read_stream', flags={'no-writes'},\n"
    "  callback=function(keys, args)\n"
    "    local refs = redis.call('XRANGE', keys[1], args[1], '+', 'COUNT', args[2])\n"
    "    for i = 1, #refs do\n"
    "      local p = refs[i][2][2]\n"
    "      local got = redis.call('XRANGE', keys[2], p .. '-0', p .. '-0')\n"
    "      if #got ~= 1 then\n"
    "        return redis.error_reply('ERR position ' .. p .. ' is missing')\n"
    "      end\n"
    "      refs[i][2] = got[1][2]\n"
    "    end\n"
    "    return refs\n"
    "  end}\n";

/* Builds the position-only keys {<ns>-pos}:s:<stream> from eddy's per-stream keys; returns
 * the used_memory they added. */
static long long build_positions(redisContext *c, const char *ns) {
    long long m0 = used_memory(c);
    for (int s = 0; s < STREAMS; s++) {
        redisReply *r = redisCommand(c, "XRANGE {%s}:es:s:order-%d - +", ns, s);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "XRANGE of a stream failed\n");
            exit(1);
        }
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i], *f = e->element[1];
            const char *pos = NULL;
            for (size_t j = 0; j + 1 < f->elements; j += 2)
                if (strcmp(f->element[j]->str, "_position") == 0)
                    pos = f->element[j + 1]->str;
            if (!pos) {
                fprintf(stderr, "an entry without _position\n");
                exit(1);
            }
            redisAppendCommand(c, "XADD {%s-pos}:s:order-%d %s _position %s", ns, s,
                               e->element[0]->str, pos);
        }
        for (size_t i = 0; i < r->elements; i++) {
            void *u;
            if (redisGetReply(c, &u) != REDIS_OK) {
                fprintf(stderr, "XADD of a position failed\n");
                exit(1);
            }
            freeReplyObject(u);
        }
        freeReplyObject(r);
    }
    return used_memory(c) - m0;
}

/* FCALL_RO of the positions function over every stream; entries per second. */
static double positions_read(redisContext *c, const char *ns) {
    long count = 0;
    double t0 = bench_now();
    for (int s = 0; s < STREAMS; s++) {
        redisReply *r = redisCommand(c,
                                     "FCALL_RO bench_read_stream 2 {%s-pos}:s:order-%d "
                                     "{%s}:es:all - 256",
                                     ns, s, ns);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "FCALL_RO failed: %s\n", r && r->str ? r->str : "no reply");
            exit(1);
        }
        count += (long)r->elements;
        freeReplyObject(r);
    }
    double rate = (double)count / (bench_now() - t0);
    if (count != N) {
        fprintf(stderr, "the positions function read %ld of %ld entries\n", count, N);
        exit(1);
    }
    return rate;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 100000, NULL, "[-n events]");
    const char *url = env.url;
    N = env.n;
    if (N < STREAMS) {
        fprintf(stderr, "events must be at least %d\n", STREAMS);
        return 2;
    }
    memset(data, 'd', DATA_LEN);
    char ns[64], raw_key[96], pattern[96];
    snprintf(ns, sizeof(ns), "bench-store-%ld", (long)time(NULL));
    snprintf(raw_key, sizeof(raw_key), "{%s-raw}:s", ns);
    redisContext *c = bench_connect(&env);

    long long m0 = used_memory(c);
    raw_fill(c, raw_key);
    long long m1 = used_memory(c);

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    eddy_store *store;
    eddy_error err;
    if (eddy_store_open(&s, &store, &err) != EDDY_OK)
        die("store", &err);
    long long m2 = used_memory(c);
    double t0 = bench_now();
    eddy_fill(store);
    long long m3 = used_memory(c);
    fprintf(stderr, "filled %ld events in %.1f s (not timed)\n", N, bench_now() - t0);

    double raw_bytes = (double)(m1 - m0) / (double)N, eddy_bytes = (double)(m3 - m2) / (double)N;
    printf("bench store_bytes_per_event eddy=%.0f raw=%.0f ratio=%.3f\n", eddy_bytes, raw_bytes,
           eddy_bytes / raw_bytes);
    fflush(stdout);

    int rounds = env.reps < ROUNDS_MAX ? env.reps : ROUNDS_MAX;
    double er[ROUNDS_MAX], rr[ROUNDS_MAX];
    for (int i = 0; i < rounds; i++) {
        if (i % 2 == 0) {
            er[i] = eddy_read(store);
            rr[i] = raw_read(c, raw_key);
        } else {
            rr[i] = raw_read(c, raw_key);
            er[i] = eddy_read(store);
        }
    }
    bench_print_runs("store_read_stream", er, rr, rounds);

    /* the positions layout, for comparison */
    redisReply *r = redisCommand(c, "MEMORY USAGE {%s}:es:all SAMPLES 0", ns);
    long long all_bytes = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    long long pos_bytes = build_positions(c, ns);
    r = redisCommand(c, "FUNCTION LOAD REPLACE %s", positions_lua);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "FUNCTION LOAD failed: %s\n", r ? r->str : "no reply");
        return 1;
    }
    freeReplyObject(r);
    double pos_per_event = (double)(all_bytes + pos_bytes) / (double)N;
    printf("bench store_bytes_per_event_positions eddy=%.0f raw=%.0f ratio=%.3f\n", pos_per_event,
           raw_bytes, pos_per_event / raw_bytes);
    double fr[ROUNDS_MAX];
    for (int i = 0; i < rounds; i++) {
        if (i % 2 == 0) {
            er[i] = eddy_read(store);
            fr[i] = positions_read(c, ns);
        } else {
            fr[i] = positions_read(c, ns);
            er[i] = eddy_read(store);
        }
    }
    double f = median(fr, rounds), e = median(er, rounds);
    printf("bench store_read_stream_positions function=%.0f eddy=%.0f ratio=%.3f\n", f, e, f / e);
    freeReplyObject(redisCommand(c, "FUNCTION DELETE bench_positions"));

    eddy_store_close(store);
    snprintf(pattern, sizeof(pattern), "{%s}:*", ns);
    delete_keys(c, pattern);
    delete_keys(c, raw_key);
    snprintf(pattern, sizeof(pattern), "{%s-pos}:*", ns);
    delete_keys(c, pattern);
    redisFree(c);
    bench_teardown(&env);
    return 0;
}
