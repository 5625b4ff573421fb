/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_killed: a catch-up feed listener process (fault_worker feed, worker_feed.c: a read model
 * that checks versions, so applying an event twice is seen) is killed with SIGKILL in the middle
 * of its replay, twice, while a writer thread appends to the store and publishes in the same
 * step (eddy_store_append with publish_subject). The events each dead listener held unacknowledged
 * (its subscription is Competing, AtLeastOnce) are redelivered to the next one while it replays:
 * a large held backlog, most of it at or below the position the replay reaches, against a small
 * dedup_cache_size. The last listener runs to the end; its model must equal a reference fold of
 * the store (read back with eddy_store_read_page), with no event applied twice (dup) and none
 * skipped (gap, lost).
 *
 * feed_resumed: the same with a read model that keeps itself in Redis with its position
 * (fault_worker feed ... resume: each applied event's state and replay position in one HSET) and
 * gives that position to the feed (projection.position): each successor replays only what came
 * after the last event its predecessor's model saved. Each listener is killed once it has
 * replayed another part of the history; the FIG line says where each was killed and where its
 * successor resumed, and the events re-applied (what the replay read again beyond what the
 * model had kept) must stay within one page per kill.
 *
 * feed_model: the same kills with eddy's own read model (eddy_feed_config.writes, eddy/model.h:
 * fault_worker feed ... model): per stream a count, a sum and the last version, each event's
 * write set committed with its stream's version and each replay page's with its position. After
 * every kill its successor resumes from the model's position; at the end the model in Redis
 * must equal the reference fold of the store exactly (no event lost, none applied twice), and
 * the FIG line says where each listener was killed and where its successor resumed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/store.h"
#include "faults.h"
#include "faults_feed.h"
#include "scenarios.h"

#define SUBJECT "faults.feed"
#define GROUP "feed-listeners"
#define DEDUP "500" /* dedup_cache_size, far below the held backlog */

typedef struct writer {
    eddy_store *store;
    atomic_bool stop;
    atomic_ulong appended;
    atomic_ulong failed;
    unsigned long limit; /* live events to append at most (0: until stopped) */
} writer;

static eddy_status append_batch(eddy_store *store, unsigned long first, int n, bool publish,
                                eddy_error *err) {
    eddy_event *evs[100];
    char stream[16], data[24];
    snprintf(stream, sizeof(stream), "o%lu", (first / 100) % FX_FEED_STREAMS);
    for (int j = 0; j < n; j++) {
        snprintf(data, sizeof(data), "%lu", (first + (unsigned long)j) * 7 % 1000);
        evs[j] = fx_event('e', first + (unsigned long)j, "faults.feed", data);
    }
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = publish ? SUBJECT : NULL;
    eddy_status st =
        eddy_store_append(store, stream, (const eddy_event *const *)evs, (size_t)n, &o, NULL, err);
    for (int j = 0; j < n; j++)
        eddy_event_free(evs[j]);
    return st;
}

/* Appends and publishes batches of 100 events to one stream after another until stopped. */
static void *write_live(void *arg) {
    writer *w = arg;
    unsigned long next = 10000000; /* ids apart from the history's */
    while (!atomic_load(&w->stop)) {
        eddy_error err = {0};
        if (w->limit && atomic_load(&w->appended) >= w->limit) {
            fx_sleep_ms(10); /* enough: the listeners must be able to catch up */
            continue;
        }
        if (append_batch(w->store, next, 100, true, &err) == EDDY_OK) {
            atomic_fetch_add(&w->appended, 100);
            next += 100; /* the next stream (append_batch picks the stream from first / 100) */
        } else {
            atomic_fetch_add(&w->failed, 1);
        }
        fx_sleep_ms(1);
    }
    return NULL;
}

typedef struct reference {
    long long last[FX_FEED_STREAMS];
    uint64_t fold[FX_FEED_STREAMS];
    long long count[FX_FEED_STREAMS], sum[FX_FEED_STREAMS];
    unsigned long events;
} reference;

static eddy_status ref_add(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    reference *ref = user;
    int k = atoi(meta->stream_id + 1);
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    char text[32];
    snprintf(text, sizeof(text), "%.*s", (int)(len < 31 ? len : 31), data ? data : "");
    ref->last[k] = meta->version;
    ref->fold[k] = fx_feed_fold(ref->fold[k], meta->version, atoll(text));
    ref->count[k]++;
    ref->sum[k] += atoll(text);
    ref->events++;
    return EDDY_OK;
}

typedef enum feed_mode {
    MODE_PLAIN,  /* feed_killed */
    MODE_RESUME, /* feed_resumed: the listener's own model in Redis, projection.position */
    MODE_MODEL   /* feed_model: eddy's read model in Redis (eddy_feed_config.writes) */
} feed_mode;

static bool start_listener(fx_worker *w, const driver *dr, const fx_redis *r, const char *ns,
                           const char *file, feed_mode mode) {
    static const char *const words[] = {NULL, "resume", "model"};
    const char *argv[] = {"feed", dr->name, r->url, ns,          SUBJECT,
                          GROUP,  DEDUP,    file,   words[mode], NULL};
    return fx_worker_start(w, argv, 20000);
}

/* model: one hash of eddy's read model, per stream o<k> (0 where missing). */
static void model_hash(const fx_redis *r, const char *ns, const char *key,
                       long long out[FX_FEED_STREAMS]) {
    memset(out, 0, sizeof(long long) * FX_FEED_STREAMS);
    redisReply *h = fx_cmd(r, "HGETALL {%s}:rm:faults-feed:k:%s", ns, key);
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
        int k = atoi(h->element[i]->str + 1);
        if (k >= 0 && k < FX_FEED_STREAMS)
            out[k] = atoll(h->element[i + 1]->str);
    }
    if (h)
        freeReplyObject(h);
}

/* model: the position the model's last committed page reached (-1: unreadable). */
static long long model_position(const fx_redis *r, const char *ns) {
    redisReply *p = fx_cmd(r, "GET {%s}:rm:faults-feed:pos", ns);
    long long at = p && p->type == REDIS_REPLY_STRING ? atoll(p->str)
                   : p && p->type == REDIS_REPLY_NIL  ? 0
                                                      : -1;
    if (p)
        freeReplyObject(p);
    return at;
}

static long long resumed_at; /* the last "resumed <position>" a listener said (-1: none) */

/* Waits for "replay <n>" with n >= at (true), or for "live" or the end (false). */
static bool replayed(fx_worker *w, unsigned long at, long long wait_ms) {
    char line[128];
    while (fx_worker_line(w, line, sizeof(line), wait_ms)) {
        unsigned long n;
        long long p;
        if (sscanf(line, "resumed %lld", &p) == 1)
            resumed_at = p;
        if (sscanf(line, "replay %lu", &n) == 1 && n >= at)
            return true;
        if (strcmp(line, "live") == 0)
            return false;
    }
    return false;
}

/* The group's pending count and lag (entries not read yet), -1 each when unknown. */
static void group_counts(const fx_redis *r, const char *ns, long long *pending, long long *lag) {
    redisReply *g = fx_cmd(r, "XINFO GROUPS {%s}:s:%s", ns, SUBJECT);
    *pending = *lag = -1;
    if (g && g->type == REDIS_REPLY_ARRAY && g->elements == 1) {
        redisReply *f = g->element[0];
        for (size_t i = 0; i + 1 < f->elements; i += 2) {
            if (!strcmp(f->element[i]->str, "pending"))
                *pending = f->element[i + 1]->integer;
            if (!strcmp(f->element[i]->str, "lag") &&
                f->element[i + 1]->type == REDIS_REPLY_INTEGER)
                *lag = f->element[i + 1]->integer;
        }
    }
    if (g)
        freeReplyObject(g);
}

/* The group has nothing pending and nothing unread. */
static bool group_idle(const fx_redis *r, const char *ns) {
    long long pending, lag;
    group_counts(r, ns, &pending, &lag);
    return pending == 0 && lag == 0;
}

static void feed_killed(const driver *dr, feed_mode mode) {
    static const char *const names[] = {"feed_killed", "feed_resumed", "feed_model"};
    static const char *const prefixes[] = {"faults-feed", "faults-resume", "faults-model"};
    const char *name = names[mode];
    bool resume = mode != MODE_PLAIN; /* killed along the history, resumed after each kill */
    /* feed_resumed and feed_model: at least 10 kills over 100,000 inputs in either profile
     * (issue 23's figure). */
    const unsigned long history = fx_long_profile() ? 200000 : resume ? 100000 : 60000;
    const int kills = resume ? 10 : fx_long_profile() ? 4 : 2;
    /* resume: each listener replays another part before it is killed; otherwise each replays
     * three quarters of the history again. */
    const unsigned long kill_after = resume ? history / (kills + 1) : history * 3 / 4;
    long long saved_at_kill[16], resumed[17];
    int consistent = 0; /* feed_model: kills after which every stream's count was its version */
    int nresumed = 0;
    fx_redis r;
    fx_redis_start(&r, NULL);
    char ns[64], dir[160], file[224];
    snprintf(ns, sizeof(ns), "%s-%s", prefixes[mode], dr->name);
    fx_scratch(dir, sizeof(dir), ns);
    snprintf(file, sizeof(file), "%s/model.txt", dir);
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "writer";
    writer wr = {0};
    eddy_error err = {0};
    if (eddy_store_open(&s, &wr.store, &err) != EDDY_OK) {
        fx_fail("%s: store: %s", name, err.detail);
        return;
    }
    for (unsigned long i = 0; i < history; i += 100)
        if (append_batch(wr.store, i, 100, false, &err) != EDDY_OK) {
            fx_fail("%s: history: %s", name, err.detail);
            return;
        }
    /* resume: the model saves every event with a round trip of its own, so it applies far more
     * slowly than the writer appends; a bounded live load lets the last listener catch up. */
    wr.limit = resume ? history / 2 : 0;
    pthread_t t;
    pthread_create(&t, NULL, write_live, &wr);

    fx_worker w;
    int killed = 0;
    long long inherited = 0; /* entries the dead listeners left pending */
    for (; killed < kills; killed++) {
        resumed_at = -1;
        if (!start_listener(&w, dr, &r, ns, file, mode)) {
            fx_fail("%s: listener %d did not start", name, killed + 1);
            break;
        }
        if (!replayed(&w, kill_after, 60000)) {
            fx_fail("%s: listener %d finished its replay before the kill", name, killed + 1);
            fx_worker_kill(&w);
            break;
        }
        fx_worker_kill(&w);
        if (mode == MODE_MODEL) {
            resumed[nresumed++] = resumed_at;
            saved_at_kill[killed] = model_position(&r, ns);
            /* Right after the kill: each stream's events applied once each, in order, with none
             * skipped (its count is its last version). */
            long long count[FX_FEED_STREAMS], last[FX_FEED_STREAMS];
            model_hash(&r, ns, "count", count);
            model_hash(&r, ns, "last", last);
            bool ok = true;
            for (int k = 0; k < FX_FEED_STREAMS; k++)
                ok = ok && count[k] == last[k];
            consistent += ok;
        } else if (resume) {
            resumed[nresumed++] = resumed_at;
            redisReply *pr = fx_cmd(&r, "HGET {%s}:faults:model position", ns);
            saved_at_kill[killed] = pr && pr->type == REDIS_REPLY_STRING ? atoll(pr->str) : -1;
            if (pr)
                freeReplyObject(pr);
        }
    }
    inherited = fx_pending(&r, ns, SUBJECT, GROUP);
    resumed_at = -1;
    bool live = start_listener(&w, dr, &r, ns, file, mode);
    char line[128];
    while (live && fx_worker_line(&w, line, sizeof(line), 120000) && strcmp(line, "live") != 0) {
        long long p;
        if (sscanf(line, "resumed %lld", &p) == 1)
            resumed_at = p;
    }
    if (resume)
        resumed[nresumed++] = resumed_at;
    fx_sleep_ms(500); /* the writer goes on a little while the listener is live */
    atomic_store(&wr.stop, true);
    pthread_join(t, NULL);
    long long deadline = fx_now_ms() + 60000;
    while (!group_idle(&r, ns) && fx_now_ms() < deadline)
        fx_sleep_ms(100);
    FX_CHECK(group_idle(&r, ns), "%s: the listener did not drain its subscription", name);
    FX_CHECK(fx_worker_stop(&w, 20000) == 0, "%s: the last listener did not end cleanly", name);

    /* The reference: the store's history, read back in position order and folded. */
    reference ref = {0};
    long long pos = 0, next = 0, head = -1;
    eddy_store_head(wr.store, &head, &err);
    while (pos < head &&
           eddy_store_read_page(wr.store, pos, 1000, NULL, ref_add, &ref, &next, &err) == EDDY_OK)
        pos = next;
    if (mode == MODE_MODEL) {
        long long count[FX_FEED_STREAMS], sum[FX_FEED_STREAMS], last[FX_FEED_STREAMS];
        model_hash(&r, ns, "count", count);
        model_hash(&r, ns, "sum", sum);
        model_hash(&r, ns, "last", last);
        long long twice = 0, lost = 0, worst = 0;
        int differ = 0;
        char at[256] = "", from[256] = "";
        for (int k = 0; k < FX_FEED_STREAMS; k++) {
            twice += count[k] > ref.count[k] ? count[k] - ref.count[k] : 0;
            lost += count[k] < ref.count[k] ? ref.count[k] - count[k] : 0;
            differ += count[k] != ref.count[k] || sum[k] != ref.sum[k] || last[k] != ref.last[k];
        }
        for (int i = 0; i < killed && i + 1 < nresumed; i++) {
            long long behind_saved = saved_at_kill[i] - resumed[i + 1];
            worst = behind_saved > worst ? behind_saved : worst;
            FX_CHECK(resumed[i + 1] >= 0, "feed_model: listener %d never said its position", i + 2);
            size_t la = strlen(at), lf = strlen(from);
            snprintf(at + la, sizeof(at) - la, "%s%lld", i ? "," : "", saved_at_kill[i]);
            snprintf(from + lf, sizeof(from) - lf, "%s%lld", i ? "," : "", resumed[i + 1]);
        }
        printf("FIG feed_model frontend=%s events=%lu applied_twice=%lld lost=%lld "
               "streams_differ=%d kills=%d consistent_after_kill=%d/%d saved_at_kill=%s "
               "resumed_at=%s resumed_behind_saved=%lld live_appended=%lu page_size=256\n",
               dr->name, ref.events, twice, lost, differ, killed, consistent, killed, at, from,
               worst, atomic_load(&wr.appended));
        FX_CHECK(consistent == killed,
                 "feed_model: after %d of %d kills a stream's count was not its last version",
                 killed - consistent, killed);
        FX_CHECK(killed == kills, "feed_model: %d kills of %d", killed, kills);
        FX_CHECK(twice == 0 && lost == 0 && differ == 0,
                 "feed_model: the model differs from the reference fold (%d streams: %lld "
                 "applied twice, %lld lost)",
                 differ, twice, lost);
        FX_CHECK(worst <= 0, "feed_model: a successor resumed %lld before the saved position",
                 worst);
        eddy_store_close(wr.store);
        fx_redis_stop(&r);
        return;
    }
    /* The listener's model. */
    long long mlast[FX_FEED_STREAMS] = {0};
    unsigned long long mfold[FX_FEED_STREAMS] = {0};
    unsigned long applied = 0, dup = 0, gap = 0, feed_dups = 0;
    FILE *f = fopen(file, "r");
    FX_CHECK(f != NULL, "%s: no model written", name);
    while (f && fgets(line, sizeof(line), f)) {
        int k;
        long long last;
        unsigned long long fold;
        if (sscanf(line, "stream o%d %lld %llu", &k, &last, &fold) == 3 && k >= 0 &&
            k < FX_FEED_STREAMS) {
            mlast[k] = last;
            mfold[k] = fold;
        }
        sscanf(line, "applied %lu", &applied);
        sscanf(line, "dup %lu", &dup);
        sscanf(line, "gap %lu", &gap);
        sscanf(line, "feed_duplicates %lu", &feed_dups);
    }
    if (f)
        fclose(f);
    long long behind = 0;
    int differ = 0;
    for (int k = 0; k < FX_FEED_STREAMS; k++) {
        behind += ref.last[k] > mlast[k] ? ref.last[k] - mlast[k] : 0;
        differ += ref.last[k] != mlast[k] || ref.fold[k] != mfold[k];
    }
    /* The held events at or below the replay's position: those the feed dropped as duplicates
     * and those it applied again. */
    unsigned long held_below = dup + feed_dups;
    if (resume) {
        /* What each successor's replay read again: from where it resumed up to where its
         * predecessor's model had got (the model saves every applied event, so at most the one
         * in flight at the kill). */
        long long reapplied = 0, worst = 0;
        char at[256] = "", from[256] = "";
        for (int i = 0; i < killed && i + 1 < nresumed; i++) {
            long long again = saved_at_kill[i] - resumed[i + 1];
            reapplied += again > 0 ? again : 0;
            worst = again > worst ? again : worst;
            FX_CHECK(resumed[i + 1] >= 0, "feed_resumed: listener %d never asked the position",
                     i + 2);
            size_t la = strlen(at), lf = strlen(from);
            snprintf(at + la, sizeof(at) - la, "%s%lld", i ? "," : "", saved_at_kill[i]);
            snprintf(from + lf, sizeof(from) - lf, "%s%lld", i ? "," : "", resumed[i + 1]);
        }
        printf("FIG feed_resumed frontend=%s lost=%lld/%lu dup=%lu gap=%lu streams_differ=%d "
               "kills=%d saved_at_kill=%s resumed_at=%s reapplied=%lld worst_per_kill=%lld "
               "page_size=256\n",
               dr->name, behind, ref.events, dup, gap, differ, killed, at, from, reapplied, worst);
        FX_CHECK(killed == kills, "feed_resumed: %d kills of %d", killed, kills);
        FX_CHECK(worst <= 256, "feed_resumed: a successor re-read %lld events (more than a page)",
                 worst);
        FX_CHECK(dup == 0, "feed_resumed: %lu events applied twice", dup);
        FX_CHECK(gap == 0 && behind == 0, "feed_resumed: events skipped (gap %lu, behind %lld)",
                 gap, behind);
        FX_CHECK(differ == 0, "feed_resumed: %d streams differ from the reference fold", differ);
        eddy_store_close(wr.store);
        fx_redis_stop(&r);
        return;
    }
    printf("FIG feed_killed frontend=%s lost=%lld/%lu dup=%lu gap=%lu streams_differ=%d kills=%d "
           "held_below_replay=%lu inherited_pending=%lld dedup_cache_size=%s live_appended=%lu "
           "feed_dropped_dups=%lu\n",
           dr->name, behind, ref.events, dup, gap, differ, killed, held_below, inherited, DEDUP,
           atomic_load(&wr.appended), feed_dups);
    FX_CHECK(killed == kills, "feed_killed: %d kills of %d", killed, kills);
    FX_CHECK(dup == 0, "feed_killed: %lu events applied twice", dup);
    FX_CHECK(gap == 0 && behind == 0, "feed_killed: events skipped (gap %lu, behind %lld)", gap,
             behind);
    FX_CHECK(differ == 0, "feed_killed: %d streams differ from the reference fold", differ);
    FX_CHECK(held_below > (unsigned long)atol(DEDUP),
             "feed_killed: %lu held events below the replay's position do not exceed the dedup "
             "cache",
             held_below);
    eddy_store_close(wr.store);
    fx_redis_stop(&r);
}

void fx_feed_killed(const driver *dr) { feed_killed(dr, MODE_PLAIN); }
void fx_feed_resumed(const driver *dr) { feed_killed(dr, MODE_RESUME); }
void fx_feed_model(const driver *dr) { feed_killed(dr, MODE_MODEL); }
