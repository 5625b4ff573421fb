/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis (eddy_feed_config.writes, include/eddy/model.h), one table of
 * scenarios on both front ends (through feed_driver.h over store_driver.h) and both backends
 * (memory:// and the fixture's redis-server), with the real store: a replay
 * commits each page's write sets with its position and a new feed resumes after it; a replay of
 * what was committed changes nothing (the per-stream versions); a catch-up that fails midway
 * leaves exactly the pages before it committed, and the next one applies the rest once; live
 * events commit one by one and their copies change nothing; an event without metadata, a bad
 * write and a write of the wrong kind are refused; the refusals of the config; the model's keys
 * and kinds are listed. The model is read back with a blocking store on the same backend
 * (eddy_store_model_*); the reactive reads (eddy_rstore_model_*) have a test of their own. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/feed.h"
#include "eddy/model.h"
#include "eddy/rmodel.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "feed_driver.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"
#include "store_driver.h"
#include "test_backend.h"
#include "test_codec.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

#define MTEST(name)                                                                                \
    ParameterizedTestParameters(model, name) { return cr_make_param_array(combo, combos, 4); }     \
    ParameterizedTest(combo *p, model, name, .timeout = 60)

/* The front end under test; each test runs in a process of its own. */
static const store_driver *sd;
static const feed_driver *fd;

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
    tstore *st;        /* the front end's store the feed runs over */
    eddy_store *store; /* a blocking one on the same backend, to read the model back */
    eddy_feed_config cfg;
    tfeed *feed;
} ctx;

/* private: a redis-server of the test's own instead of the fixture's (NULL: the fixture's), for a
 * test that flushes the functions, which every test sharing the fixture would lose. */
static void setup_on(ctx *c, const combo *p, const char *prefix, eddy_test_redis *private) {
    memset(c, 0, sizeof(*c));
    memset(&W, 0, sizeof(W));
    W.fail_times = -1;
    sd = p->frontend ? &reactive_store_driver : &blocking_store_driver;
    fd = p->frontend ? &reactive_feed_driver : &blocking_feed_driver;
    eddy_test_settings(&c->s, p->backend, prefix, c->url, sizeof(c->url), c->ns, sizeof(c->ns));
    if (private && p->backend) {
        eddy_test_redis_start(private, 0);
        snprintf(c->url, sizeof(c->url), "%s", private->url);
    }
    eddy_error err = {0};
    cr_assert_eq(sd->open(&c->s, &c->st, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_config_init(&c->cfg);
    c->cfg.id = "orders";
    c->cfg.writes = m_writes;
    c->cfg.decode = uev_decode;
    c->cfg.free_event = uev_free;
    c->cfg.event_id = uev_id;
    c->cfg.page_size = 2;
}

static void setup(ctx *c, const combo *p, const char *prefix) { setup_on(c, p, prefix, NULL); }

/* A new feed; the driver's keeps its checkpoint in the store, which a new feed finds and then
 * skips the replay: forgotten here, so that the new feed replays from the model's position. */
static void new_feed(ctx *c) {
    if (c->feed)
        fd->free(c->feed);
    c->feed = NULL;
    char key[160];
    snprintf(key, sizeof(key), "{%s}:ckpt:orders", c->ns);
    const char *argv[] = {"DEL", key};
    freeReplyObject(raw_cmd(c->url, 2, argv));
    eddy_error err = {0};
    cr_assert_eq(fd->new_feed(c->st, &c->cfg, &c->feed, &err), EDDY_OK, "%s", err.detail);
}

static void teardown(ctx *c) {
    if (c->feed)
        fd->free(c->feed);
    eddy_store_close(c->store);
    sd->close(c->st);
}

/* e1..en, odd ones on order-1, even ones on order-2. */
static void append_n(ctx *c, int from, int to) {
    for (int i = from; i <= to; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        eddy_event *ev = make_event(id, "order.placed");
        const eddy_event *evs[] = {ev};
        eddy_error err = {0};
        cr_assert_eq(sd->append(c->st, i % 2 ? "order-1" : "order-2", evs, 1, NULL, NULL, &err),
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
    cr_assert_eq(fd->get_info(c->feed, &i), EDDY_OK);
    return i;
}

/* ---- scenarios -------------------------------------------------------------------------- */

MTEST(a_replay_commits_the_model_and_the_next_one_resumes_after_it) {
    ctx c;
    setup(&c, p, "model-replay");
    append_n(&c, 1, 7);
    new_feed(&c);
    cr_expect_eq(position_of(&c), 0, "no model yet");
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
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
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(info(&c).replayed, 2, "e8 and e9 only");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=5,order-2=4");
    cr_expect_eq(position_of(&c), 9);
    teardown(&c);
}

MTEST(a_replay_of_what_was_committed_changes_nothing) {
    ctx c;
    setup(&c, p, "model-again");
    append_n(&c, 1, 5);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    /* The position lost (as if a page's commit had never come back): the whole history is
     * replayed, and every event's version is at or below its stream's committed one. */
    char key[160];
    snprintf(key, sizeof(key), "{%s}:rm:orders:pos", c.ns);
    const char *argv[] = {"DEL", key};
    freeReplyObject(raw_cmd(c.url, 2, argv));
    cr_expect_eq(position_of(&c), 0);
    new_feed(&c);
    int before = W.calls;
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(W.calls - before, 5, "all five asked again");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=3,order-2=2", "and none applied twice");
    cr_expect_eq(position_of(&c), 5);
    teardown(&c);
}

MTEST(a_failed_catch_up_keeps_the_pages_before_it_and_the_next_applies_the_rest_once) {
    ctx c;
    setup(&c, p, "model-fail");
    append_n(&c, 1, 7);
    snprintf(W.fail_id, sizeof(W.fail_id), "e6");
    W.fail_times = 1;
    new_feed(&c);
    eddy_error err = {0};
    cr_expect_eq(fd->catch_up(c.feed, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "the model rejects e6"), "%s", err.detail);
    /* Pages of 2: e1-e2 and e3-e4 committed, and e5 (before e6 in its page). */
    cr_expect_eq(position_of(&c), 5);
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3,e4,e5");
    new_feed(&c);
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(info(&c).replayed, 2, "e6 and e7");
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=4,order-2=3");
    cr_expect_eq(position_of(&c), 7);
    teardown(&c);
}

MTEST(live_events_commit_one_by_one_and_their_copies_change_nothing) {
    ctx c;
    setup(&c, p, "model-live");
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    append_n(&c, 3, 3); /* order-1 version 2, position 3 */
    uev e3 = {"e3"};
    eddy_event_meta meta = {"order-1", 2, 3};
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1");
    cr_expect_eq(position_of(&c), 2, "live events do not move the replay's position");
    /* A copy with its id forgotten by the feed (a new feed): its version says it is in. */
    new_feed(&c);
    cr_assert_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1", "not applied twice");
    /* Without metadata: refused, nothing written. */
    uev x = {"x"};
    cr_expect_eq(fd->accept(c.feed, &x, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "store metadata"), "%s", err.detail);
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3");
    teardown(&c);
}

MTEST(bad_writes_are_refused_and_change_nothing) {
    ctx c;
    setup(&c, p, "model-bad");
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    eddy_event_meta meta = {"order-1", 2, 3};
    uev e3 = {"e3"};
    W.bad_key = true;
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "model key"), "%s", err.detail);
    W.bad_key = false;
    W.kind_clash = true; /* a set's write to the "counts" hash: the server refuses it */
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "WRONGTYPE"), "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=1,order-2=1", "checked before any write");
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2");
    W.kind_clash = false;
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_OK, "%s", err.detail);
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
    setup(&c, p, "model-config");
    eddy_error err = {0};
    tfeed *f = NULL;
    c.cfg.projection.apply = m_apply;
    cr_expect_eq(fd->new_feed(c.st, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "must be NULL"), "%s", err.detail);
    c.cfg.projection.apply = NULL;
    c.cfg.projection.position = m_position;
    cr_expect_eq(fd->new_feed(c.st, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    c.cfg.projection.position = NULL;
    c.cfg.writes = NULL;
    cr_expect_eq(fd->new_feed(c.st, &c.cfg, &f, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "apply (or writes)"), "%s", err.detail);
    cr_expect_null(f);
    teardown(&c);
}

/* ---- the reactive reads ------------------------------------------------------------------ */

typedef struct rread {
    int done;
    eddy_status st;
    long long position;
    char detail[256];
} rread;

static void r_done(eddy_status st, const eddy_error *err, void *user) {
    rread *r = user;
    r->st = st;
    if (err)
        snprintf(r->detail, sizeof(r->detail), "%s", err->detail);
    r->done++;
}

static void r_position(eddy_status st, long long position, const eddy_error *err, void *user) {
    rread *r = user;
    r->position = position;
    r_done(st, err, user);
}

static items r_items; /* what the reactive reads' item callback collected */

static eddy_status r_collect(const char *name, size_t nlen, const char *value, size_t vlen,
                             void *user) {
    (void)user;
    return collect(name, nlen, value, vlen, &r_items);
}

static const char *r_wait(struct ev_loop *loop, rread *r, eddy_status want) {
    cr_assert(eddy_test_run_until(loop, &r->done, 1, 10000), "no completion");
    cr_assert_eq(r->done, 1, "one completion");
    cr_expect_eq(r->st, want, "%s", r->detail);
    r->done = 0;
    return joined(&r_items);
}

static int backends[] = {0, 1};

ParameterizedTestParameters(model, the_reactive_reads_match_the_blocking_ones) {
    return cr_make_param_array(int, backends, 2);
}

ParameterizedTest(int *redis, model, the_reactive_reads_match_the_blocking_ones, .timeout = 60) {
    ctx c;
    combo blocking = {0, *redis};
    setup(&c, &blocking, "model-rreads");
    append_n(&c, 1, 3);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rstore *rs = NULL;
    cr_assert_eq(eddy_rstore_open(loop, &c.s, &rs, &err), EDDY_OK, "%s", err.detail);
    rread r = {0};
    cr_assert_eq(eddy_rstore_model_position(rs, "orders", r_position, &r, &err), EDDY_OK);
    cr_expect_eq(r.done, 0, "never inside the call");
    r_wait(loop, &r, EDDY_OK);
    cr_expect_eq(r.position, 3);
    memset(&r_items, 0, sizeof(r_items));
    cr_assert_eq(eddy_rstore_model_hash(rs, "orders", "counts", r_collect, r_done, &r, &err),
                 EDDY_OK);
    cr_expect_str_eq(r_wait(loop, &r, EDDY_OK), "order-1=2,order-2=1");
    memset(&r_items, 0, sizeof(r_items));
    cr_assert_eq(eddy_rstore_model_set(rs, "orders", "ids", r_collect, r_done, &r, &err), EDDY_OK);
    cr_expect_str_eq(r_wait(loop, &r, EDDY_OK), "e1,e2,e3");
    memset(&r_items, 0, sizeof(r_items));
    cr_assert_eq(eddy_rstore_model_keys(rs, "orders", r_collect, r_done, &r, &err), EDDY_OK);
    cr_expect_str_eq(r_wait(loop, &r, EDDY_OK), "counts=hash,ids=set,order:last=hash");
    memset(&r_items, 0, sizeof(r_items));
    cr_assert_eq(eddy_rstore_model_set(rs, "orders", "counts", r_collect, r_done, &r, &err),
                 EDDY_OK);
    r_wait(loop, &r, EDDY_ERR_BACKEND);
    cr_expect(strstr(r.detail, "WRONGTYPE"), "%s", r.detail);
    /* Refused up front, no completion. */
    cr_expect_eq(eddy_rstore_model_hash(rs, "orders", "a key", r_collect, r_done, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_model_position(rs, "bad:id", r_position, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_model_keys(rs, "orders", NULL, r_done, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_model_position(NULL, "orders", r_position, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_test_run_for(loop, 20);
    cr_expect_eq(r.done, 0);
    eddy_rstore_close(rs);
    ev_loop_destroy(loop);
    teardown(&c);
}

/* Reactive only: a reactive accept's commit is in flight on the loop when the feed is freed,
 * which answers it at once; the blocking feed's free waits for the calls in progress instead
 * (and its driver's in-flight call may not have started by then). */
ParameterizedTestParameters(model, a_freed_feed_answers_a_live_commit_in_flight_once) {
    return cr_make_param_array(combo, combos + 2, 2);
}

ParameterizedTest(combo *p, model, a_freed_feed_answers_a_live_commit_in_flight_once,
                  .timeout = 60) {
    ctx c;
    setup(&c, p, "model-free");
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    append_n(&c, 3, 3);
    uev e3 = {"e3"};
    eddy_event_meta meta = {"order-1", 2, 3};
    tcall *call = fd->start(c.feed, FEED_ACCEPT_META, &meta, &e3);
    fd->free(c.feed);
    c.feed = NULL;
    eddy_status st = fd->join(call, &err);
    cr_expect(st == EDDY_OK || st == EDDY_ERR_CLOSED, "%s: %s", eddy_status_name(st), err.detail);
    /* The listener's redelivery, to a new feed: applied once in all, whatever landed. */
    new_feed(&c);
    cr_assert_eq(fd->go_live(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=1");
    cr_expect_str_eq(set_of(&c, "ids"), "e1,e2,e3");
    teardown(&c);
}

MTEST(a_server_that_lost_the_library_gets_it_again_in_front_of_the_commit) {
    ctx c;
    eddy_test_redis srv;
    setup_on(&c, p, "model-flush", &srv);
    append_n(&c, 1, 2);
    new_feed(&c);
    eddy_error err = {0};
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    /* Functions are kept in memory only: a restarted or flushed server has none. */
    freeReplyObject(raw_cmd(c.url, 2, (const char *[]){"FUNCTION", "FLUSH"}));
    append_n(&c, 3, 4);
    new_feed(&c);
    cr_assert_eq(fd->catch_up(c.feed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(info(&c).replayed, 2);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=2,order-2=2");
    freeReplyObject(raw_cmd(c.url, 2, (const char *[]){"FUNCTION", "FLUSH"}));
    append_n(&c, 5, 5);
    uev e5 = {"e5"};
    eddy_event_meta meta = {"order-1", 3, 5};
    cr_expect_eq(fd->accept_meta(c.feed, &meta, &e5, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(hash_of(&c, "counts"), "order-1=3,order-2=2");
    teardown(&c);
    if (p->backend)
        eddy_test_redis_kill(&srv);
}
