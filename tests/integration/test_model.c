/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis (eddy_feed_config.writes, include/eddy/model.h) on the blocking feed,
 * on both backends (memory:// and the fixture's redis-server), with the real store: a replay
 * commits each page's write sets with its position and a new feed resumes after it; a replay of
 * what was committed changes nothing (the per-stream versions); a catch-up that fails midway
 * leaves exactly the pages before it committed, and the next one applies the rest once; live
 * events commit one by one and their copies change nothing; an event without metadata, a bad
 * write and a write of the wrong kind are refused; the refusals of the config; the model's keys
 * and kinds are listed. The reactive feed refuses writes (not there yet). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/feed.h"
#include "eddy/model.h"
#include "eddy/rfeed.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

static int backends[] = {0, 1};

#define MTEST(name)                                                                                \
    ParameterizedTestParameters(model, name) { return cr_make_param_array(int, backends, 2); }     \
    ParameterizedTest(int *redis, model, name, .timeout = 60)

/* ---- the writes ------------------------------------------------------------------------- */

/* What every event writes: its stream's count, its id in a set, the stream's last id. The event
 * whose id is fail_id fails (fail_times times; -1 always); kind_clash writes a set op on the
 * "counts" hash; bad_key writes a key with a space. */
static struct {
    char fail_id[64];
    int fail_times;
    bool kind_clash, bad_key;
    int calls;
} W;

static eddy_status m_writes(void *event, const eddy_event_meta *meta, eddy_writes *w,
                            eddy_error *err, void *user) {
    (void)user;
    uev *e = event;
    W.calls++;
    if (W.fail_id[0] && strcmp(e->id, W.fail_id) == 0 && W.fail_times != 0) {
        if (W.fail_times > 0)
            W.fail_times--;
        snprintf(err->detail, sizeof(err->detail), "the model rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    size_t sl = strlen(meta->stream_id);
    eddy_status st = eddy_writes_hincr(w, "counts", meta->stream_id, sl, 1, err);
    if (st == EDDY_OK)
        st = eddy_writes_sadd(w, "ids", e->id, strlen(e->id), err);
    if (st == EDDY_OK)
        st = eddy_writes_hset(w, "order:last", meta->stream_id, sl, e->id, strlen(e->id), err);
    if (st == EDDY_OK && W.kind_clash)
        st = eddy_writes_sadd(w, "counts", "x", 1, err);
    if (st == EDDY_OK && W.bad_key)
        st = eddy_writes_del(w, "a key", err);
    return st;
}

/* ---- context ---------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128], ns[96];
    eddy_settings s;
    eddy_store *store;
    eddy_feed_config cfg;
    eddy_feed *feed;
} ctx;

static void setup(ctx *c, bool redis, const char *prefix) {
    memset(c, 0, sizeof(*c));
    memset(&W, 0, sizeof(W));
    W.fail_times = -1;
    eddy_test_settings(&c->s, redis, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_config_init(&c->cfg);
    c->cfg.id = "orders";
    c->cfg.writes = m_writes;
    c->cfg.decode = uev_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.page_size = 2;
}

static void new_feed(ctx *c) {
    eddy_feed_free(c->feed);
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_new(c->store, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
}

static void teardown(ctx *c) {
    eddy_feed_free(c->feed);
    eddy_store_close(c->store);
}

/* e1..en, odd ones on order-1, even ones on order-2. */
static void append_n(ctx *c, int from, int to) {
    for (int i = from; i <= to; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        eddy_event *ev = make_event(id, "order.placed");
        const eddy_event *evs[] = {ev};
        eddy_error err = {0};
        cr_assert_eq(
            eddy_store_append(c->store, i % 2 ? "order-1" : "order-2", evs, 1, NULL, NULL, &err),
            EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
    }
}

/* A model key's items as "name=value" (or "name" for a set's member) joined with ',' in the
 * order the backend gives them, sorted here for a stable comparison. */
typedef struct items {
    char v[32][96];
    int n;
} items;

static eddy_status collect(const char *name, size_t nlen, const char *value, size_t vlen,
                           void *user) {
    items *it = user;
    cr_assert(it->n < 32);
    if (value)
        snprintf(it->v[it->n++], sizeof(it->v[0]), "%.*s=%.*s", (int)nlen, name, (int)vlen, value);
    else
        snprintf(it->v[it->n++], sizeof(it->v[0]), "%.*s", (int)nlen, name);
    return EDDY_OK;
}

static int cmp(const void *a, const void *b) { return strcmp(a, b); }

static const char *joined(items *it) {
    static char buf[2048];
    qsort(it->v, (size_t)it->n, sizeof(it->v[0]), cmp);
    buf[0] = '\0';
    for (int i = 0; i < it->n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, it->v[i]);
    }
    return buf;
}

static const char *hash_of(ctx *c, const char *key) {
    items it = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_model_hash(c->store, "orders", key, collect, &it, &err), EDDY_OK, "%s",
                 err.detail);
    return joined(&it);
}

static const char *set_of(ctx *c, const char *key) {
    items it = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_model_set(c->store, "orders", key, collect, &it, &err), EDDY_OK, "%s",
                 err.detail);
    return joined(&it);
}

static long long position_of(ctx *c) {
    long long pos = -1;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_model_position(c->store, "orders", &pos, &err), EDDY_OK, "%s",
                 err.detail);
    return pos;
}

static eddy_feed_info info(ctx *c) {
    eddy_feed_info i;
    cr_assert_eq(eddy_feed_stats(c->feed, &i), EDDY_OK);
    return i;
}

/* ---- scenarios -------------------------------------------------------------------------- */

MTEST(a_replay_commits_the_model_and_the_next_one_resumes_after_it) {
    ctx c;
    setup(&c, *redis, "model-replay");
    append_n(&c, 1, 7);
    new_feed(&c);
    cr_expect_eq(position_of(&c), 0, "no model yet");
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=4,order-2=3");
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3,e4,e5,e6,e7");
    cr_expect_str_eq(hash_of(&c, "order:last"), "order-1=e7,order-2=e6");
    cr_expect_eq(position_of(&c), 7, "the last page's position");
    items keys = {0};
    cr_assert_eq(eddy_store_model_keys(c.store, "orders", collect, &keys, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_str_eq(joined(&keys), "counts=hash,ids=set,order:last=hash");
    cr_expect_eq(info(&c).replayed, 7);

    /* A new feed (no checkpoint): it resumes after position 7 and replays only what came since. */
    append_n(&c, 8, 9);
    new_feed(&c);
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(info(&c).replayed, 2, "e8 and e9 only");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=5,order-2=4");
    cr_expect_eq(position_of(&c), 9);
    teardown(&c);
}

MTEST(a_replay_of_what_was_committed_changes_nothing) {
    ctx c;
    setup(&c, *redis, "model-again");
    append_n(&c, 1, 5);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    /* The position lost (as if a page's commit had never come back): the whole history is
     * replayed, and every event's version is at or below its stream's committed one. */
    char key[160];
    snprintf(key, sizeof(key), "{%s}:rm:orders:pos", c.ns);
    const char *argv[] = {"DEL", key};
    freeReplyObject(raw_cmd(c.url, 2, argv));
    cr_expect_eq(position_of(&c), 0);
    new_feed(&c);
    int before = W.calls;
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(W.calls - before, 5, "all five asked again");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=3,order-2=2", "and none applied twice");
    cr_expect_eq(position_of(&c), 5);
    teardown(&c);
}

MTEST(a_failed_catch_up_keeps_the_pages_before_it_and_the_next_applies_the_rest_once) {
    ctx c;
    setup(&c, *redis, "model-fail");
    append_n(&c, 1, 7);
    snprintf(W.fail_id, sizeof(W.fail_id), "e6");
    W.fail_times = 1;
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "the model rejects e6"), "%s", err.detail);
    /* Pages of 2: e1-e2 and e3-e4 committed, and e5 (before e6 in its page). */
    cr_expect_eq(position_of(&c), 5);
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3,e4,e5");
    new_feed(&c);
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(info(&c).replayed, 2, "e6 and e7");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=4,order-2=3");
    cr_expect_eq(position_of(&c), 7);
    teardown(&c);
}

MTEST(live_events_commit_one_by_one_and_their_copies_change_nothing) {
    ctx c;
    setup(&c, *redis, "model-live");
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    append_n(&c, 3, 3); /* order-1 version 2, position 3 */
    uev e3 = {"e3"};
    eddy_event_meta meta = {"order-1", 2, 3};
    cr_expect_eq(eddy_feed_accept_meta(c.feed, &meta, &e3, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1");
    cr_expect_eq(position_of(&c), 2, "live events do not move the replay's position");
    /* A copy with its id forgotten by the feed (a new feed): its version says it is in. */
    new_feed(&c);
    cr_assert_eq(eddy_feed_go_live(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_feed_accept_meta(c.feed, &meta, &e3, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1", "not applied twice");
    /* Without metadata: refused, nothing written. */
    uev x = {"x"};
    cr_expect_eq(eddy_feed_accept(c.feed, &x, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "store metadata"), "%s", err.detail);
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3");
    teardown(&c);
}

MTEST(bad_writes_are_refused_and_change_nothing) {
    ctx c;
    setup(&c, *redis, "model-bad");
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(eddy_feed_catch_up(c.feed, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_event_meta meta = {"order-1", 2, 3};
    uev e3 = {"e3"};
    W.bad_key = true;
    cr_expect_eq(eddy_feed_accept_meta(c.feed, &meta, &e3, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "model key"), "%s", err.detail);
    W.bad_key = false;
    W.kind_clash = true; /* a set's write to the "counts" hash: the server refuses it */
    cr_expect_eq(eddy_feed_accept_meta(c.feed, &meta, &e3, NULL, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "WRONGTYPE"), "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=1,order-2=1", "checked before any write");
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2");
    W.kind_clash = false;
    cr_expect_eq(eddy_feed_accept_meta(c.feed, &meta, &e3, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1");
    /* Reading a hash as a set, and the other way round. */
    items it = {0};
    cr_expect_eq(eddy_store_model_set(c.store, "orders", "counts", collect, &it, &err),
                 EDDY_ERR_BACKEND);
    cr_expect_eq(eddy_store_model_hash(c.store, "orders", "bad key", collect, &it, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_model_position(c.store, "bad:id", &(long long){0}, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    teardown(&c);
}

static eddy_status m_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)event, (void)meta, (void)err, (void)user;
    return EDDY_OK;
}

static eddy_status m_position(long long *position, eddy_error *err, void *user) {
    (void)err, (void)user;
    *position = 0;
    return EDDY_OK;
}

MTEST(the_config_is_checked) {
    ctx c;
    setup(&c, *redis, "model-config");
    eddy_error err = {0};
    eddy_feed *f = NULL;
    c.cfg.projection.apply = m_apply;
    cr_expect_eq(eddy_feed_new(c.store, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "must be NULL"), "%s", err.detail);
    c.cfg.projection.apply = NULL;
    c.cfg.projection.position = m_position;
    cr_expect_eq(eddy_feed_new(c.store, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.projection.position = NULL;
    c.cfg.writes = NULL;
    cr_expect_eq(eddy_feed_new(c.store, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "apply (or writes)"), "%s", err.detail);
    cr_expect_null(f);
    teardown(&c);
}

Test(model, the_reactive_feed_refuses_writes_for_now) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    char url[128], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, false, "model-reactive", url, sizeof(url), ns, sizeof(ns));
    eddy_rstore *st = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_open(loop, &s, &st, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "orders";
    cfg.writes = m_writes;
    cfg.decode = uev_decode;
    cfg.event_id = uev_id;
    eddy_rfeed *f = NULL;
    cr_expect_eq(eddy_rfeed_new(loop, st, &cfg, NULL, &f, &err), EDDY_ERR_NOT_SUPPORTED);
    cr_expect(strstr(err.detail, "not on the reactive feed yet"), "%s", err.detail);
    cr_expect_null(f);
    eddy_rstore_close(st);
    ev_loop_destroy(loop);
}
