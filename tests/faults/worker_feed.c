/* SPDX-License-Identifier: BSD-3-Clause */
/* fault_worker feed: a catch-up feed listener whose read model is NOT idempotent. The model
 * keeps, per store stream "o<k>", the last version applied and a fold of every applied event
 * (each changes it, so applying one twice would change the result). apply checks the version:
 * one at or below the last applied is a double apply (counted in dup and not applied again),
 * one past the next is a gap (counted; it is applied). The feed has no marker, so every listener
 * process replays the whole history while its subscription (Competing, AtLeastOnce, the suite's
 * group) holds the live events, the redeliveries of what a killed listener left pending among
 * them (one worker thread on the blocking front end, so live events are applied in their order).
 * It prints "replay <n>" every 1000 replayed events, "live" once caught up, and on SIGTERM
 * writes the model to its file: "stream o<k> <last> <fold>" lines, then applied, dup and gap.
 * With a last argument "resume" the model is kept in Redis too, written with each applied event
 * in one HSET (its streams and, during a replay, the position it reached: a replay applies in
 * position order) to {ns}:faults:model, loaded when the listener starts, and its position given
 * to the feed (projection.position, printed as "resumed <position>"): a killed listener's
 * successor replays only what came after the last event its model saved.
 * With "model" instead the read model is eddy's own (eddy_feed_config.writes, eddy/model.h): per
 * stream "o<k>" the count of events, the sum of their values and the last version, in the
 * hashes count, sum and last of the model, each event's write set committed with its progress;
 * the listener keeps nothing itself and says "resumed <position>" with the model's position
 * when it starts. The suite reads the model back from Redis. */
#include <ev.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/model.h"
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "fault_worker.h"
#include "faults.h"
#include "faults_feed.h"

typedef struct model {
    pthread_mutex_t lock;
    long long last[FX_FEED_STREAMS];
    uint64_t fold[FX_FEED_STREAMS];
    unsigned long applied, dup, gap, replayed;
    bool replaying;
    long long position; /* resume: the replay position the model saved; model: eddy's model's */
    bool kept;          /* model: said as "resumed <position>" after "ready" */
    redisContext *keep; /* resume: where the model is kept (NULL: memory only) */
    char key[96];
} model;

static model m = {.lock = PTHREAD_MUTEX_INITIALIZER};

typedef struct fevent {
    char id[48];
    long long value;
} fevent;

static eddy_status f_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    fevent *e = calloc(1, sizeof(*e));
    if (!e)
        return EDDY_ERR_NOMEM;
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    char text[32];
    snprintf(text, sizeof(text), "%.*s", (int)(len < 31 ? len : 31), data ? data : "");
    e->value = atoll(text);
    snprintf(e->id, sizeof(e->id), "%s", eddy_event_id(ev));
    *out = e;
    return EDDY_OK;
}

static void f_free(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *f_id(const void *event, void *user) {
    (void)user;
    return ((const fevent *)event)->id;
}

/* resume: one stream's state and the position, in one HSET (under m.lock). */
static bool keep_stream(int k) {
    char state[64];
    snprintf(state, sizeof(state), "%lld %llu", m.last[k], (unsigned long long)m.fold[k]);
    redisReply *r =
        redisCommand(m.keep, "HSET %s o%d %s position %lld", m.key, k, state, m.position);
    bool ok = r && r->type == REDIS_REPLY_INTEGER;
    if (r)
        freeReplyObject(r);
    return ok;
}

static eddy_status model_save_failed(eddy_error *err) {
    snprintf(err->detail, sizeof(err->detail), "the model could not be saved");
    err->status = EDDY_ERR_IO;
    return EDDY_ERR_IO;
}

/* resume: loads the model kept by the listeners before this one. */
static bool load_model(const char *url, const char *ns) {
    int port = 0;
    if (sscanf(url, "redis://127.0.0.1:%d", &port) != 1)
        return false;
    m.keep = redisConnect("127.0.0.1", port);
    if (!m.keep || m.keep->err)
        return false;
    snprintf(m.key, sizeof(m.key), "{%s}:faults:model", ns);
    redisReply *r = redisCommand(m.keep, "HGETALL %s", m.key);
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return false;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *f = r->element[i]->str, *v = r->element[i + 1]->str;
        int k;
        long long last;
        unsigned long long fold;
        if (strcmp(f, "position") == 0)
            m.position = atoll(v);
        else if (sscanf(f, "o%d", &k) == 1 && k >= 0 && k < FX_FEED_STREAMS &&
                 sscanf(v, "%lld %llu", &last, &fold) == 2) {
            m.last[k] = last;
            m.fold[k] = fold;
        }
    }
    freeReplyObject(r);
    return true;
}

static eddy_status f_position(long long *position, eddy_error *err, void *user) {
    (void)err, (void)user;
    pthread_mutex_lock(&m.lock);
    *position = m.position;
    pthread_mutex_unlock(&m.lock);
    fw_say("resumed %lld", *position);
    return EDDY_OK;
}

static eddy_status f_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)err, (void)user;
    const fevent *e = event;
    int k = meta && meta->stream_id[0] == 'o' ? atoi(meta->stream_id + 1) : -1;
    if (k < 0 || k >= FX_FEED_STREAMS)
        return EDDY_ERR_ILLEGAL_STATE;
    pthread_mutex_lock(&m.lock);
    if (meta->version <= m.last[k]) {
        m.dup++; /* applied already: a second apply would corrupt the fold */
    } else {
        if (meta->version != m.last[k] + 1)
            m.gap++;
        m.last[k] = meta->version;
        m.fold[k] = fx_feed_fold(m.fold[k], meta->version, e->value);
        m.applied++;
        if (m.replaying)
            m.position = meta->position;
        if (m.keep && !keep_stream(k)) {
            pthread_mutex_unlock(&m.lock);
            return model_save_failed(err);
        }
        if (m.replaying && ++m.replayed % 1000 == 0)
            fw_say("replay %lu", m.replayed);
    }
    pthread_mutex_unlock(&m.lock);
    return EDDY_OK;
}

static eddy_status set_replaying(bool replaying) {
    pthread_mutex_lock(&m.lock);
    m.replaying = replaying;
    pthread_mutex_unlock(&m.lock);
    return EDDY_OK;
}

static eddy_status f_started(eddy_error *err, void *user) {
    (void)err, (void)user;
    return set_replaying(true);
}

static eddy_status f_completed(eddy_error *err, void *user) {
    (void)err, (void)user;
    return set_replaying(false);
}

/* model: one event's write set (the model is eddy's, kept in Redis). */
static eddy_status f_writes(void *event, const eddy_event_meta *meta, eddy_writes *w,
                            eddy_error *err, void *user) {
    (void)user;
    const fevent *e = event;
    const char *s = meta->stream_id;
    size_t n = strlen(s);
    char version[24];
    int vlen = snprintf(version, sizeof(version), "%lld", meta->version);
    eddy_status st = eddy_writes_hincr(w, "count", s, n, 1, err);
    if (st == EDDY_OK)
        st = eddy_writes_hincr(w, "sum", s, n, e->value, err);
    if (st == EDDY_OK)
        st = eddy_writes_hset(w, "last", s, n, version, (size_t)vlen, err);
    pthread_mutex_lock(&m.lock);
    if (st == EDDY_OK && m.replaying && ++m.replayed % 1000 == 0)
        fw_say("replay %lu", m.replayed);
    pthread_mutex_unlock(&m.lock);
    return st;
}

static int dump(const char *path, const eddy_feed_info *info) {
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    pthread_mutex_lock(&m.lock);
    for (int k = 0; k < FX_FEED_STREAMS; k++)
        fprintf(f, "stream o%d %lld %llu\n", k, m.last[k], (unsigned long long)m.fold[k]);
    fprintf(f, "applied %lu\ndup %lu\ngap %lu\nfeed_duplicates %llu\n", m.applied, m.dup, m.gap,
            (unsigned long long)info->duplicates);
    pthread_mutex_unlock(&m.lock);
    return fclose(f) == 0 ? 0 : 1;
}

static void config(eddy_feed_config *cfg, long dedup, bool resume, bool kept) {
    eddy_feed_config_init(cfg);
    if (resume)
        cfg->projection.position = f_position;
    cfg->id = "faults-feed";
    if (kept)
        cfg->writes = f_writes;
    else
        cfg->projection.apply = f_apply;
    cfg->projection.replay_started = f_started;
    cfg->projection.replay_completed = f_completed;
    cfg->projection.keyed_by_metadata = true;
    cfg->decode = f_decode;
    cfg->free_event = f_free;
    cfg->event_id = f_id;
    cfg->dedup_cache_size = dedup;
    cfg->log = fx_log;
    cfg->log_user = "feed";
}

static void spec(eddy_subscription_spec *sp, char **a, eddy_handler_fn handler, void *feed) {
    fx_competing(sp, "feed", a[3], a[4], EDDY_AT_LEAST_ONCE);
    sp->handler = handler;
    sp->user = feed;
}

static int fail(const char *what, const eddy_error *err) {
    fprintf(stderr, "feed worker: %s: %s\n", what, err->detail);
    return 1;
}

/* ---- blocking ------------------------------------------------------------------------------ */

static int run_blocking(char **a, const eddy_settings *s, const eddy_feed_config *cfg) {
    eddy_error err = {0};
    eddy_store *store = NULL;
    eddy_feed *feed = NULL;
    eddy_bus *bus = NULL;
    if (eddy_store_open(s, &store, &err) != EDDY_OK)
        return fail("store", &err);
    if (eddy_feed_new(store, cfg, &feed, &err) != EDDY_OK)
        return fail("feed", &err);
    if (cfg->writes) {
        long long at = -1;
        if (eddy_store_model_position(store, cfg->id, &at, &err) != EDDY_OK)
            return fail("model position", &err);
        m.position = at;
    }
    eddy_subscription_spec sp;
    spec(&sp, a, eddy_feed_handler, feed);
    if (eddy_bus_new(s, &sp, 1, &bus, &err) != EDDY_OK || eddy_bus_start(bus, &err) != EDDY_OK)
        return fail("bus", &err);
    fw_say("ready");
    if (m.kept)
        fw_say("resumed %lld", m.position);
    if (eddy_feed_catch_up(feed, NULL, &err) != EDDY_OK)
        return fail("catch-up", &err);
    fw_say("live");
    while (!fw_stop_asked())
        fx_sleep_ms(20);
    eddy_bus_stop(bus);
    eddy_feed_info info;
    eddy_feed_stats(feed, &info);
    int rc = dump(a[6], &info);
    eddy_bus_free(bus);
    eddy_feed_free(feed);
    eddy_store_close(store);
    return rc;
}

/* ---- reactive ------------------------------------------------------------------------------ */

typedef struct rworker {
    struct ev_loop *loop;
    eddy_rbus *bus;
    eddy_rfeed *feed;
    const char *path;
    ev_timer poll;
    int rc;
} rworker;

static void on_live(eddy_status st, const eddy_error *err, void *user) {
    rworker *w = user;
    if (st != EDDY_OK) {
        w->rc = fail("catch-up", err);
        ev_break(w->loop, EVBREAK_ALL);
        return;
    }
    fw_say("live");
}

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    rworker *w = user;
    eddy_error e2 = {0};
    if (st != EDDY_OK || eddy_rfeed_catch_up(w->feed, on_live, w, &e2) != EDDY_OK) {
        w->rc = fail("start", st != EDDY_OK ? err : &e2);
        ev_break(w->loop, EVBREAK_ALL);
        return;
    }
    fw_say("ready");
    if (m.kept)
        fw_say("resumed %lld", m.position);
}

static void on_poll(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)revents;
    rworker *w = t->data;
    if (!fw_stop_asked())
        return;
    eddy_rbus_stop(w->bus);
    eddy_feed_info info;
    eddy_rfeed_stats(w->feed, &info);
    w->rc = dump(w->path, &info);
    ev_break(loop, EVBREAK_ALL);
}

/* model: the position the model kept (read with a blocking store before the loop runs). */
static bool say_position(const eddy_settings *s, const char *id) {
    eddy_error err = {0};
    eddy_store *store = NULL;
    long long at = -1;
    if (eddy_store_open(s, &store, &err) != EDDY_OK ||
        eddy_store_model_position(store, id, &at, &err) != EDDY_OK) {
        fail("model position", &err);
        eddy_store_close(store);
        return false;
    }
    eddy_store_close(store);
    m.position = at;
    return true;
}

static int run_reactive(char **a, const eddy_settings *s, const eddy_feed_config *cfg) {
    rworker w = {.loop = ev_loop_new(EVFLAG_AUTO), .path = a[6]};
    eddy_error err = {0};
    eddy_rstore *store = NULL;
    if (eddy_rstore_open(w.loop, s, &store, &err) != EDDY_OK)
        return fail("store", &err);
    if (eddy_rfeed_new(w.loop, store, cfg, NULL, &w.feed, &err) != EDDY_OK)
        return fail("feed", &err);
    if (cfg->writes && !say_position(s, cfg->id))
        return 1;
    eddy_subscription_spec sp;
    spec(&sp, a, eddy_rfeed_handler, w.feed);
    if (eddy_rbus_new(w.loop, s, &sp, 1, &w.bus, &err) != EDDY_OK ||
        eddy_rbus_start(w.bus, on_ready, &w, &err) != EDDY_OK)
        return fail("bus", &err);
    ev_timer_init(&w.poll, on_poll, 0.02, 0.02);
    w.poll.data = &w;
    ev_timer_start(w.loop, &w.poll);
    ev_run(w.loop, 0);
    ev_timer_stop(w.loop, &w.poll);
    eddy_rbus_free(w.bus);
    eddy_rfeed_free(w.feed);
    eddy_rstore_close(store);
    ev_loop_destroy(w.loop);
    return w.rc;
}

int fw_feed(bool reactive, char **a) {
    eddy_settings s;
    fx_settings(&s, a[1], a[2]);
    s.log_user = "feed";
    /* One handler thread: live events are applied in the order they are read (with several,
     * the blocking feed applies live events concurrently, so versions could arrive out of
     * order, which this model would count as gaps and double applies). */
    s.workers = 1;
    bool resume = a[7] && strcmp(a[7], "resume") == 0;
    bool kept = a[7] && strcmp(a[7], "model") == 0;
    m.kept = kept;
    if (resume && !load_model(a[1], a[2])) {
        fprintf(stderr, "feed worker: the kept model could not be loaded\n");
        return 1;
    }
    eddy_feed_config cfg;
    config(&cfg, atol(a[5]), resume, kept);
    return reactive ? run_reactive(a, &s, &cfg) : run_blocking(a, &s, &cfg);
}
