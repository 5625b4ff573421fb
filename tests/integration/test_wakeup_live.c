/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus-wide wake-up (src/bus/wakeup.h) against both backends: what it plans runs as planned
 * on the fixture's redis-server and on the memory engine, and the replies wake the watchers of
 * the streams with news, only them, with ids that move past what was seen. The commands are
 * sent one at a time here, as any front end may. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/wakeup.h"
#include "eddy_test.h"
#include "memory/engine.h"
#include "util/reply.h"

typedef struct backend {
    redisContext *rc;   /* redis:// */
    eddy__mem_conn *mc; /* memory:// */
    eddy__mem_engine *engine;
} backend;

static backend open_backend(bool redis) {
    backend b = {0};
    if (redis) {
        const char *url = eddy_test_redis_url();
        char host[128];
        int port = 0;
        cr_assert(sscanf(url, "redis://%127[^:]:%d", host, &port) == 2, "bad fixture URL %s", url);
        b.rc = redisConnect(host, port);
        cr_assert(b.rc && !b.rc->err);
    } else {
        char ns[96];
        b.engine = eddy__mem_engine_acquire(eddy_test_namespace(ns, sizeof(ns), "wake"));
        cr_assert(b.engine);
        b.mc = eddy__mem_conn_new(b.engine);
        cr_assert(b.mc);
    }
    return b;
}

static void close_backend(backend *b) {
    if (b->rc)
        redisFree(b->rc);
    if (b->mc) {
        eddy__mem_conn_free(b->mc);
        eddy__mem_engine_release(b->engine);
    }
}

/* One command; a blocking read that times out answers nil on both backends (the memory
 * engine's "found nothing" is taken as its timeout: nothing is written meanwhile here). */
static redisReply *exec(backend *b, int argc, const char **argv, const size_t *lens) {
    if (b->rc) {
        redisReply *r = redisCommandArgv(b->rc, argc, argv, lens);
        cr_assert(r, "%s", b->rc->errstr);
        return r;
    }
    long long block_ms = -1;
    redisReply *r = eddy__mem_exec(b->mc, argc, argv, lens, &block_ms);
    if (!r) {
        cr_assert_geq(block_ms, 0, "out of memory");
        r = eddy__reply_nil();
        cr_assert(r);
    }
    return r;
}

static void xadd(backend *b, const char *key) {
    const char *argv[] = {"XADD", key, "*", "f", "v"};
    size_t lens[] = {4, strlen(key), 1, 1, 1};
    redisReply *r = exec(b, 5, argv, lens);
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
}

typedef struct woken {
    const void *who[8];
    int n;
} woken;

static void on_wake(const void *who, void *user) {
    woken *k = user;
    cr_assert_lt(k->n, 8);
    k->who[k->n++] = who;
}

static bool was_woken(const woken *k, const void *who) {
    for (int i = 0; i < k->n; i++)
        if (k->who[i] == who)
            return true;
    return false;
}

/* Plans (a blocking read or not, as want_block says), runs each command, feeds the replies. */
static woken step(backend *b, eddy__wakeup *w, long long block_ms, bool want_block) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block;
    cr_assert_eq(eddy__wakeup_plan(w, block_ms, &cmds, &block), EDDY_OK);
    cr_assert(cmds.n > 0);
    cr_assert_eq(block >= 0, want_block);
    redisReply *r[8];
    cr_assert_leq(cmds.n, 8);
    for (size_t i = 0; i < cmds.n; i++) {
        r[i] = exec(b, cmds.cmds[i].argc, eddy__cmd_argv(&cmds.cmds[i]), cmds.cmds[i].argvlen);
        cr_assert_neq(r[i]->type, REDIS_REPLY_ERROR, "%s", r[i]->str);
    }
    woken k = {0};
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, r, cmds.n, on_wake, &k), EDDY_OK);
    for (size_t i = 0; i < cmds.n; i++)
        freeReplyObject(r[i]);
    eddy__cmdlist_reset(&cmds);
    return k;
}

static int a, b_, c; /* three subscriptions' identities */

static void scenario(bool redis) {
    backend be = open_backend(redis);
    char ns[96], x[128], y[128];
    eddy_test_namespace(ns, sizeof(ns), "wake");
    snprintf(x, sizeof(x), "{%s}:s:x", ns);
    snprintf(y, sizeof(y), "{%s}:s:y", ns);
    xadd(&be, x); /* x has history, y does not exist yet */
    eddy__wakeup *w = eddy__wakeup_new(2);
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, x, &a, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, y, &b_, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, y, &c, &replan), EDDY_OK);

    /* The ids are fixed first (nothing blocks), and every watcher is woken to read up to them. */
    woken k = step(&be, w, 100, false);
    cr_assert_eq(k.n, 3);
    /* Nothing new since: the XREAD times out, x's history wakes nobody. */
    k = step(&be, w, 50, true);
    cr_assert_eq(k.n, 0);
    /* A brand-new stream's first entry wakes its watchers only. */
    xadd(&be, y);
    k = step(&be, w, 1000, true);
    cr_assert_eq(k.n, 2);
    cr_assert(was_woken(&k, &b_) && was_woken(&k, &c) && !was_woken(&k, &a));
    /* Three entries on x with COUNT 2: two wakes, then the id is past all three. */
    xadd(&be, x);
    xadd(&be, x);
    xadd(&be, x);
    k = step(&be, w, 1000, true);
    cr_assert_eq(k.n, 1);
    cr_assert_eq(k.who[0], &a);
    k = step(&be, w, 1000, true);
    cr_assert_eq(k.n, 1);
    k = step(&be, w, 50, true);
    cr_assert_eq(k.n, 0, "the id moved past every entry returned");
    /* After a lost connection the ids are fixed again, and every watcher woken. */
    eddy__wakeup_reset(w);
    k = step(&be, w, 100, false);
    cr_assert_eq(k.n, 3);
    k = step(&be, w, 50, true);
    cr_assert_eq(k.n, 0);
    eddy__wakeup_free(w);
    close_backend(&be);
}

Test(wakeup_live, redis) { scenario(true); }

Test(wakeup_live, memory) { scenario(false); }
