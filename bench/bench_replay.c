/* SPDX-License-Identifier: BSD-3-Clause */
/* Catch-up replay, eddy beside raw hiredis paging the same stream in the same run (repetitions,
 * medians, alternating order, pinning: bench_util.h):
 *   fill      -n N stored events (default 1,000,000), eddy_store_append 256 at a time to a
 *             rotating set of 1,000 stream ids, the bench events (120 bytes of data). Not timed
 *             (its time goes to a `#` line); both sides then read this same history, every
 *             repetition.
 *   replay    events per second. hiredis: XRANGE {ns}:es:all (<last id> + COUNT <page> from
 *             "(0-0" until a short page, counting the entries: the reads the feed makes, with
 *             the feed's page size (eddy_feed_config.page_size, default 256), without decoding.
 *             eddy: eddy_feed_catch_up of a feed with no checkpoint storage whose projection
 *             counts the events it is applied (decode borrows the stored event).
 *   replay_peak_rss_kib  the growth of the process's peak RSS during the side's run (VmHWM after
 *             it less VmRSS before it, the peak reset through /proc/self/clear_refs first): a
 *             figure far below the history's size shows the replay does not hold it in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "eddy/feed.h"
#include "eddy/store.h"

#define STREAMS 1000

static long N;
static eddy_store *store;
static char all_key[128];

static void fill(void) {
    eddy_event *evs[BENCH_BATCH];
    eddy_error err;
    for (long i = 0, batch = 0; i < N; i += BENCH_BATCH, batch++) {
        size_t n = N - i < BENCH_BATCH ? (size_t)(N - i) : BENCH_BATCH;
        for (size_t j = 0; j < n; j++)
            evs[j] = bench_event(i + (long)j);
        char stream[32];
        snprintf(stream, sizeof(stream), "order-%ld", batch % STREAMS);
        if (eddy_store_append(store, stream, (const eddy_event *const *)evs, n, NULL, NULL, &err) !=
            EDDY_OK)
            bench_die("append", err.detail);
        for (size_t j = 0; j < n; j++)
            eddy_event_free(evs[j]);
    }
}

/* How far the peak RSS rose over rss0, in KiB. */
static long peak_growth(long rss0) {
    long d = bench_status_field("VmHWM:") - rss0;
    return d > 0 ? d : 0; /* RSS is sampled in steps: a peak a little under the start is 0 */
}

/* Resets the peak RSS (VmHWM) to the current RSS; returns the current RSS in KiB. */
static long reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
    return bench_status_field("VmRSS:");
}

static void raw_replay(const bench_env *env, int rep, double *out, void *user) {
    (void)rep, (void)user;
    eddy_feed_config defaults;
    eddy_feed_config_init(&defaults);
    char page[16], start[64] = "(0-0";
    snprintf(page, sizeof(page), "%u", defaults.page_size);
    long rss0 = reset_peak();
    redisContext *c = bench_connect(env);
    long count = 0;
    double t0 = bench_now();
    for (;;) {
        const char *argv[] = {"XRANGE", all_key, start, "+", "COUNT", page};
        size_t lens[6];
        for (int k = 0; k < 6; k++)
            lens[k] = strlen(argv[k]);
        redisReply *r = redisCommandArgv(c, 6, argv, lens);
        if (!r || r->type != REDIS_REPLY_ARRAY)
            bench_die("XRANGE", c->errstr);
        size_t n = r->elements;
        count += (long)n;
        if (n > 0)
            snprintf(start, sizeof(start), "(%s", r->element[n - 1]->element[0]->str);
        freeReplyObject(r);
        if (n < defaults.page_size)
            break;
    }
    out[0] = (double)count / (bench_now() - t0);
    redisFree(c);
    out[1] = (double)peak_growth(rss0);
    if (count != N)
        bench_die("raw replay", "not every event was read");
}

/* The projection counts; the feed applies a replayed event inside the store's read callback, so
 * decode may hand it the stored event itself (borrowed, nothing to free). */
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

static void eddy_replay(const bench_env *env, int rep, double *out, void *user) {
    (void)env, (void)rep, (void)user;
    long count = 0;
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "bench-replay";
    cfg.projection.apply = apply;
    cfg.projection.user = &count;
    cfg.decode = decode;
    cfg.event_id = event_id;
    long rss0 = reset_peak();
    eddy_feed *feed;
    eddy_error err;
    if (eddy_feed_new(store, &cfg, &feed, &err) != EDDY_OK)
        bench_die("feed", err.detail);
    double t0 = bench_now();
    if (eddy_feed_catch_up(feed, NULL, &err) != EDDY_OK)
        bench_die("catch-up", err.detail);
    out[0] = (double)count / (bench_now() - t0);
    eddy_feed_info info;
    eddy_feed_stats(feed, &info);
    if (info.last != EDDY_FEED_REPLAYED || count != N)
        bench_die("catch-up", "it did not replay every event");
    eddy_feed_free(feed);
    out[1] = (double)peak_growth(rss0);
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 1000000, NULL, NULL);
    N = env.n;
    env.keep_keys = true; /* one history, read by every repetition */
    char ns[96];
    bench_ns(&env, ns, sizeof(ns), "store", 0);
    snprintf(all_key, sizeof(all_key), "{%s}:es:all", ns);
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = env.url;
    s.ns = ns;
    eddy_error err;
    if (eddy_store_open(&s, &store, &err) != EDDY_OK)
        bench_die("store", err.detail);
    double t0 = bench_now();
    fill();
    printf("# filled %ld events in %.1f s (not timed)\n", N, bench_now() - t0);

    bench_side sides[2] = {{"hiredis", raw_replay, NULL}, {"eddy", eddy_replay, NULL}};
    double m[4];
    bench_sides(&env, sides, 2, 2, m);
    bench_print_med("replay", 2, 0);
    bench_print_med("replay_peak_rss_kib", 3, 1);

    eddy_store_close(store);
    bench_teardown(&env);
    return 0;
}
