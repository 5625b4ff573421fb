/* Catch-up replay rate and memory, eddy beside raw hiredis paging the same stream in the same
 * run:
 *   fill        N stored events (default 1,000,000), appended with eddy_store_append 100 at a
 *               time to a rotating set of 1,000 stream ids, ~120-byte data. Not timed; it
 *               took 11 s for 1,000,000 events (2 s for 200,000) on the 2-CPU machine it was
 *               written on (Redis runs the store's Lua append); its time goes to stderr.
 *   hiredis     XRANGE {ns}:es:all (<last id> + COUNT <the feed's page size>, from "(0-0"
 *               until a short page, counting the entries: the same reads the feed makes,
 *               without decoding
 *   eddy        eddy_feed_catch_up of a feed with no checkpoint storage whose projection
 *               counts the events it is applied
 * Printed: `bench replay_events_per_s eddy=<x> hiredis=<y> ratio=<x/y>` and
 * `bench replay_peak_rss_kib eddy=<x> hiredis=<y> ratio=<x/y>`. The memory figure is the
 * growth of the process's peak RSS (VmHWM in /proc/self/status) during the phase over its RSS
 * (VmRSS) right before it. The peak cannot be reset between phases, so the hiredis phase runs
 * first and each phase's figure is (VmHWM after it) - (VmRSS before it): when an earlier
 * peak (the fill's, the hiredis phase's) stays above what a phase reaches, its figure is that
 * earlier headroom, an upper bound. Either way a figure far below the history's size (about
 * 300 bytes per event) shows the replay does not hold the history in memory.
 * Usage: bench_replay [redis://127.0.0.1:PORT] [events]; without a URL it starts its own
 * redis-server on a free loopback port. The bench deletes its keys ({ns}:*) afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "eddy/feed.h"
#include "eddy/store.h"

static long N = 1000000;
#define BATCH 100
#define STREAMS 1000

static void die(const char *what, const eddy_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->detail : "failed");
    exit(1);
}

/* A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:"). */
static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0) {
            kib = strtol(line + n, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    if (kib < 0) {
        fprintf(stderr, "no %s in /proc/self/status\n", field);
        exit(1);
    }
    return kib;
}

static void fill(eddy_store *store) {
    eddy_event *evs[BATCH];
    char data[121];
    memset(data, 'd', 120);
    data[120] = '\0';
    for (int j = 0; j < BATCH; j++) {
        evs[j] = eddy_event_new();
        eddy_event_set_source(evs[j], "/bench");
        eddy_event_set_type(evs[j], "bench.order.placed.v1");
        eddy_event_set_data(evs[j], data, 120);
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

static double raw_replay(int port, const char *key, unsigned page, long *count) {
    redisContext *c = bench_connect(port);
    char start[64] = "(0-0";
    *count = 0;
    double t0 = bench_now();
    for (;;) {
        redisReply *r = redisCommand(c, "XRANGE %s %s + COUNT %u", key, start, page);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "XRANGE failed\n");
            exit(1);
        }
        size_t n = r->elements;
        *count += (long)n;
        if (n > 0)
            snprintf(start, sizeof(start), "(%s", r->element[n - 1]->element[0]->str);
        freeReplyObject(r);
        if (n < page)
            break;
    }
    double rate = (double)*count / (bench_now() - t0);
    redisFree(c);
    return rate;
}

/* The projection: counts. The feed applies a replayed event inside the store's read callback,
 * so decode may hand it the stored event itself (borrowed, nothing to free). */
static eddy_status decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                          eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    *event = (void *)stored;
    return EDDY_OK;
}

static const char *event_id(const void *event, void *user) {
    (void)user;
    return eddy_event_id(event);
}

static eddy_status apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)event, (void)meta, (void)err;
    (*(long *)user)++;
    return EDDY_OK;
}

static double eddy_replay(eddy_store *store, long *count) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "bench-replay";
    cfg.projection.apply = apply;
    cfg.projection.user = count;
    cfg.decode = decode;
    cfg.event_id = event_id;
    eddy_feed *feed;
    eddy_error err;
    if (eddy_feed_new(store, &cfg, &feed, &err) != EDDY_OK)
        die("feed", &err);
    *count = 0;
    double t0 = bench_now();
    if (eddy_feed_catch_up(feed, NULL, &err) != EDDY_OK)
        die("catch-up", &err);
    double rate = (double)*count / (bench_now() - t0);
    eddy_feed_info info;
    eddy_feed_get_info(feed, &info);
    if (info.last != EDDY_FEED_REPLAYED) {
        fprintf(stderr, "catch-up ended with outcome %d\n", (int)info.last);
        exit(1);
    }
    eddy_feed_free(feed);
    return rate;
}

static void delete_keys(int port, const char *ns) {
    redisContext *c = bench_connect(port);
    char cursor[32] = "0";
    char match[96];
    snprintf(match, sizeof(match), "{%s}:*", ns);
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, match);
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
    redisFree(c);
}

int main(int argc, char **argv) {
    char url[128];
    int port = 0;
    pid_t server = 0;
    if (argc > 1) {
        snprintf(url, sizeof(url), "%s", argv[1]);
        if (sscanf(url, "redis://127.0.0.1:%d", &port) != 1) {
            fprintf(stderr, "usage: %s [redis://127.0.0.1:PORT] [events]\n", argv[0]);
            return 2;
        }
    } else if (!(server = bench_start_redis(url, sizeof(url), &port))) {
        fprintf(stderr, "could not start redis-server\n");
        return 1;
    }
    if (argc > 2 && (N = atol(argv[2])) <= 0) {
        fprintf(stderr, "events must be at least 1\n");
        return 2;
    }
    char ns[64];
    snprintf(ns, sizeof(ns), "bench-replay-%ld", (long)time(NULL));
    char all_key[96];
    snprintf(all_key, sizeof(all_key), "{%s}:es:all", ns);

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    eddy_store *store;
    eddy_error err;
    if (eddy_store_open(&s, &store, &err) != EDDY_OK)
        die("store", &err);
    double t0 = bench_now();
    fill(store);
    fprintf(stderr, "filled %ld events in %.1f s (not timed)\n", N, bench_now() - t0);

    eddy_feed_config defaults;
    eddy_feed_config_init(&defaults);

    long raw_count, eddy_count;
    long rss0 = status_kib("VmRSS:");
    double raw_rate = raw_replay(port, all_key, defaults.page_size, &raw_count);
    long raw_kib = status_kib("VmHWM:") - rss0;

    long rss1 = status_kib("VmRSS:");
    double eddy_rate = eddy_replay(store, &eddy_count);
    long hwm = status_kib("VmHWM:");
    long eddy_kib = hwm - rss1;
    fprintf(stderr, "VmRSS before hiredis %ld KiB, before eddy %ld KiB, VmHWM after %ld KiB\n",
            rss0, rss1, hwm);

    if (raw_count != N || eddy_count != N) {
        fprintf(stderr, "replayed hiredis=%ld eddy=%ld of %ld events\n", raw_count, eddy_count, N);
        return 1;
    }
    bench_print("replay_events_per_s", eddy_rate, raw_rate);
    bench_print("replay_peak_rss_kib", (double)eddy_kib, (double)raw_kib);

    eddy_store_close(store);
    delete_keys(port, ns);
    bench_stop_redis(server);
    return 0;
}
