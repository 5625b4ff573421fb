/* SPDX-License-Identifier: BSD-3-Clause */
/* Server state lost under a running subscription, on both front ends: a FLUSHALL (memory:// and
 * a private redis-server) takes the stream and its group: the group is created again, logged
 * once naming subject and group, counted in recreated, and the writes the subscription had read
 * are counted lost; a redis-server restarted from an older snapshot is found behind (logged,
 * lost_writes counted) while its group survived (nothing recreated), and the publishing side,
 * reconnecting, finds the server behind the ids it had acknowledged (logged once, counted in
 * the connection stats' lost_writes). memory:// cannot lose acknowledged writes: its counter
 * stays 0. Private servers only: the fixture's data must not be flushed or rolled back under
 * other tests. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

typedef struct seen {
    pthread_mutex_t lock;
    int gone_lines;   /* "group 'workers' of subject 'orders' was gone" */
    int behind_lines; /* "the server is behind on subject 'orders'" */
    int pub_lines;    /* "publishing: the server is behind on stream '...:orders'" */
} seen;

static seen rec = {.lock = PTHREAD_MUTEX_INITIALIZER};
static atomic_int handled;

static void on_log(eddy_log_level level, const char *msg, void *user) {
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (strstr(msg, "group 'workers' of subject 'orders' was gone"))
        s->gone_lines++;
    if (strstr(msg, "behind on subject 'orders' (group 'workers')"))
        s->behind_lines++;
    if (strstr(msg, "publishing: the server is behind on stream") && strstr(msg, "orders'"))
        s->pub_lines++;
    pthread_mutex_unlock(&s->lock);
    eddy_test_log(level, msg, NULL);
}

static eddy_status handler(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

typedef struct ctx {
    const driver *d;
    tbus *b;
    int want;
} ctx;

static bool handled_enough(void *user) { return atomic_load(&handled) >= ((ctx *)user)->want; }

static eddy_consumer_stats stats(ctx *c) {
    eddy_consumer_stats st;
    cr_assert_eq(c->d->stats(c->b, "work", &st), EDDY_OK);
    return st;
}

typedef struct conn_read {
    ctx *c;
    eddy_connection_stats st;
} conn_read;

static void read_conn(void *arg) {
    conn_read *r = arg;
    void *bus = r->c->d->native(r->c->b);
    eddy_status st = r->c->d == &blocking_driver ? eddy_bus_connection_stats(bus, &r->st)
                                                 : eddy_rbus_connection_stats(bus, &r->st);
    cr_assert_eq(st, EDDY_OK);
}

/* The bus's connection counters (reactive: read on the loop thread). */
static eddy_connection_stats conn_stats(ctx *c) {
    conn_read r = {.c = c};
    c->d->run(c->b, read_conn, &r);
    return r.st;
}

static bool recreated(void *user) { return stats(user).recreated >= 1; }
static bool lost_some(void *user) { return stats(user).lost_writes >= 1; }

static void start(ctx *c, const driver *d, const char *url) {
    char ns[64];
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = eddy_test_namespace(ns, sizeof(ns), "lost");
    s.source = "/tests";
    s.block_ms = 100;
    s.connect_timeout_ms = 1000;
    s.reconnect_min_ms = 20;
    s.reconnect_max_ms = 200;
    s.log = on_log;
    s.log_user = &rec;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "work";
    sp.pattern = "orders";
    sp.group = "workers";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = handler;
    eddy_error err;
    c->d = d;
    cr_assert_eq(d->bus_new(&s, &sp, 1, &c->b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(c->b, &err), EDDY_OK, "%s", err.detail);
}

static void publish_n(ctx *c, int n, const char *tag) {
    for (int i = 0; i < n; i++) {
        char id[64];
        snprintf(id, sizeof(id), "%s-%d", tag, i);
        eddy_event *ev = make_event(id, "t");
        eddy_error err;
        cr_assert_eq(c->d->publish(c->b, "orders", ev, &err), EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
    }
    c->want += n;
    cr_assert(eddy_test_wait_until(handled_enough, c, 20000), "handled %d of %d",
              atomic_load(&handled), c->want);
}

static void flushed(const driver *d, const char *url) {
    ctx c = {0};
    start(&c, d, url);
    publish_n(&c, 3, "before");
    redisReply *r = raw_cmdf(url, "FLUSHALL");
    cr_assert(r && r->type != REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* The reader finds the group gone by itself (NOGROUP on its next read). */
    cr_assert(eddy_test_wait_until(recreated, &c, 20000), "the lost group was not recreated");
    cr_assert(eddy_test_wait_until(lost_some, &c, 20000));
    eddy_consumer_stats st = stats(&c);
    cr_expect_eq(st.recreated, 1);
    cr_expect_eq(st.lost_writes, 3, "the three entries it had read are gone");
    publish_n(&c, 2, "after"); /* read from the new group's start */
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.gone_lines, 1);
    cr_expect_eq(rec.behind_lines, 1);
    pthread_mutex_unlock(&rec.lock);
    cr_expect_eq(stats(&c).recreated, 1);
    /* The publishing connection was not lost: nothing made it look (and memory:// never
     * loses what it acknowledged). */
    cr_expect_eq(conn_stats(&c).lost_writes, 0);
    cr_expect_eq(d->stop(c.b), EDDY_OK);
    d->free(c.b);
}

static void flushed_memory(const driver *d) {
    char url[64];
    snprintf(url, sizeof(url), "memory://lost-%d", (int)getpid());
    flushed(d, url);
}

static void flushed_redis(const driver *d) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    flushed(d, srv.url);
    eddy_test_redis_kill(&srv);
}

Test(lost_state, flushall_memory_blocking, .timeout = 60) { flushed_memory(&blocking_driver); }
Test(lost_state, flushall_memory_reactive, .timeout = 60) { flushed_memory(&reactive_driver); }
Test(lost_state, flushall_redis_blocking, .timeout = 60) { flushed_redis(&blocking_driver); }
Test(lost_state, flushall_redis_reactive, .timeout = 60) { flushed_redis(&reactive_driver); }

/* A bus on srv publishes 3 entries, a snapshot is taken, 2 more are published (and handled),
 * and srv restarts from that snapshot. */
static void restart_from_snapshot(ctx *c, const driver *d, eddy_test_redis *srv) {
    start(c, d, srv->url);
    publish_n(c, 3, "kept");
    redisReply *r = raw_cmdf(srv->url, "SAVE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    publish_n(c, 2, "lost");
    int port = srv->port;
    eddy_test_redis_kill(srv);
    eddy_test_redis_start(srv, port); /* same directory: it loads the snapshot */
}

/* A restart from a snapshot taken before the last two entries: the group survives (nothing is
 * recreated) but the stream is behind what was read, by exactly those two writes. */
static void older_snapshot(const driver *d) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c = {0};
    restart_from_snapshot(&c, d, &srv);
    cr_assert(eddy_test_wait_until(lost_some, &c, 30000), "the server was not found behind");
    eddy_consumer_stats st = stats(&c);
    cr_expect_eq(st.lost_writes, 2);
    cr_expect_eq(st.recreated, 0, "the group was in the snapshot");
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.behind_lines, 1);
    cr_expect_eq(rec.gone_lines, 0);
    pthread_mutex_unlock(&rec.lock);
    cr_expect_eq(d->stop(c.b), EDDY_OK);
    d->free(c.b);
    eddy_test_redis_kill(&srv);
}

Test(lost_state, older_snapshot_blocking, .timeout = 90) { older_snapshot(&blocking_driver); }
Test(lost_state, older_snapshot_reactive, .timeout = 90) { older_snapshot(&reactive_driver); }

/* The publishing side: 3 publishes kept by a snapshot, 2 acknowledged after it, then a restart
 * from that snapshot. The first publish after the loss may fail (it is the one that finds the
 * connection gone); the one that goes through looks at the stream first and finds the server
 * behind by exactly those 2 acknowledged writes: one warning, lost_writes 2. */
static void publisher_behind(const driver *d) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c = {0};
    pthread_mutex_lock(&rec.lock);
    rec.pub_lines = 0;
    pthread_mutex_unlock(&rec.lock);
    restart_from_snapshot(&c, d, &srv);
    eddy_status st = EDDY_ERR_IO;
    eddy_error err;
    for (int i = 0; i < 200 && st != EDDY_OK; i++) {
        eddy_event *ev = make_event("after", "t");
        st = d->publish(c.b, "orders", ev, &err);
        eddy_event_free(ev);
        struct timespec pause = {0, 50 * 1000 * 1000};
        if (st != EDDY_OK)
            nanosleep(&pause, NULL);
    }
    cr_assert_eq(st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(conn_stats(&c).lost_writes, 2, "the two publishes after the snapshot");
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.pub_lines, 1);
    pthread_mutex_unlock(&rec.lock);
    eddy_event *ev = make_event("later", "t");
    cr_expect_eq(d->publish(c.b, "orders", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_expect_eq(conn_stats(&c).lost_writes, 2, "a loss counts once");
    cr_expect_eq(d->stop(c.b), EDDY_OK);
    d->free(c.b);
    eddy_test_redis_kill(&srv);
}

Test(lost_state, publisher_behind_blocking, .timeout = 90) { publisher_behind(&blocking_driver); }
Test(lost_state, publisher_behind_reactive, .timeout = 90) { publisher_behind(&reactive_driver); }
