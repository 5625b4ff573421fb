/* SPDX-License-Identifier: BSD-3-Clause */
/* redis-cluster:// on real servers: a 3-master, 3-replica Redis Cluster on free loopback ports
 * (tests/support/redis_cluster.h), started and stopped here, on both front ends.
 *
 * - Three namespaces whose slots fall on the three masters: on each, publish + consume +
 *   request/reply, and (blocking API) an event store append with its atomic publish, a read
 *   and a catch-up feed with its marker; each namespace's keys are on its own master.
 * - While a thread publishes: a CLUSTER FAILOVER (sent to the replica) of the namespace's master,
 *   then a live migration of the namespace's slot to another master (SETSLOT IMPORTING /
 *   MIGRATING, MIGRATE of each key, SETSLOT NODE). Asserted: every acknowledged publish is
 *   consumed (nothing lost), duplicates are counted and printed (at-least-once redelivery,
 *   and publishes retried after a failure that had written), and the group ends with nothing
 *   pending on the slot's final master (XPENDING). Nothing asserts a duration.
 * - A transactional handler (eddy_delivery_emit): its commit (outputs and acknowledgement in one
 *   function call) runs on the namespace's master; every output is there once. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/model.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "link/cluster.h"
#include "recorder.h"
#include "redis_cluster.h"

#define NNS 3
#define COUNT 20
#define FLOW_MAX 20000 /* also the store's events: m-10000.. */
#define WAIT_MS 90000

/* ---- namespaces on distinct masters ------------------------------------------------------ */

/* Fills ns[i] with namespaces whose slots are served by three different masters. */
static void pick_namespaces(eddy_test_cluster *c, char ns[NNS][96], int master[NNS]) {
    int found = 0;
    for (int k = 0; found < NNS && k < 1000; k++) {
        char name[96];
        eddy_test_namespace(name, sizeof(name), "cl");
        unsigned slot = eddy__cluster_ns_slot(name);
        redisReply *r = eddy_test_cmd_at(c->node[0].port, "CLUSTER KEYSLOT {%s}:s:x", name);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && (unsigned)r->integer == slot,
                  "eddy's slot of %s is the server's", name);
        freeReplyObject(r);
        int m = eddy_test_cluster_master_of(c->node[0].port, slot);
        bool dup = false;
        for (int j = 0; j < found; j++)
            dup = dup || master[j] == m;
        if (dup || !m)
            continue;
        snprintf(ns[found], 96, "%s", name);
        master[found++] = m;
    }
    cr_assert_eq(found, NNS, "three namespaces on three masters");
}

/* ---- a bus of either front end ----------------------------------------------------------- */

typedef struct seen {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int count[FLOW_MAX]; /* deliveries by the number in the event id "m-N" */
    int deliveries;
} seen;

static seen *seen_new(void) {
    seen *s = calloc(1, sizeof(*s));
    cr_assert(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    return s;
}

static void seen_free(seen *s) {
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

static eddy_status consume(eddy_delivery *d, void *user) {
    seen *s = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    int i = atoi(id + 2);
    pthread_mutex_lock(&s->lock);
    if (i >= 0 && i < FLOW_MAX)
        s->count[i]++;
    s->deliveries++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return EDDY_OK;
}

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)d;
    (void)user;
    *reply = make_event("re", "t.reply");
    return EDDY_OK;
}

typedef struct front {
    const driver *d;
    tbus *b;
} front;

static void settings_for(eddy_settings *st, const char *url, const char *ns) {
    eddy_settings_init(st);
    st->url = url;
    st->ns = ns;
    st->source = "/tests/cluster";
    st->block_ms = 200;
    st->connect_timeout_ms = 2000;
    st->command_timeout_ms = 3000;
    st->reconnect_min_ms = 20;
    st->reconnect_max_ms = 300;
    st->redelivery_idle_ms = 1000;
    st->log = eddy_test_log;
    st->log_user = "cluster";
}

static front bus_open(const driver *d, const char *url, const char *ns, seen *s) {
    eddy_settings st;
    settings_for(&st, url, ns);
    eddy_subscription_spec sp[2];
    eddy_subscription_spec_init(&sp[0]);
    sp[0].name = "orders";
    sp[0].pattern = "orders";
    sp[0].group = "orders";
    sp[0].handler = consume;
    sp[0].user = s;
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "svc";
    sp[1].pattern = "svc";
    sp[1].group = "svc";
    sp[1].responder = respond;
    front f = {d, NULL};
    eddy_error err = {0};
    cr_assert_eq(d->bus_new(&st, sp, 2, &f.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(f.b, &err), EDDY_OK, "%s", err.detail);
    return f;
}

static eddy_status fpublish(const front *f, int i, eddy_error *err) {
    char id[16];
    snprintf(id, sizeof(id), "m-%d", i);
    eddy_event *ev = make_event(id, "t.order");
    eddy_status st = f->d->publish(f->b, "orders", ev, err);
    eddy_event_free(ev);
    return st;
}

/* Failed publish attempts by cause (the reactive publish's callback carries a status, no
 * detail: its failures are `undetailed`). */
typedef struct failures {
    int moved, migrating, other, undetailed;
} failures;

/* Publishes until acknowledged (a failover or migration makes some attempts fail). */
static bool publish_until_ok(const front *f, int i, failures *fails) {
    long long until = eddy_test_now_ms() + WAIT_MS;
    eddy_error err = {0};
    eddy_status rc;
    while ((rc = fpublish(f, i, &err)) != EDDY_OK) {
        if (fails && err.detail[0] == '\0' && fails->undetailed++ < 3)
            printf("publish m-%d failed: %s (no detail)\n", i, eddy_status_name(rc));
        if (fails && err.detail[0] == '\0')
            ;
        else if (fails && strstr(err.detail, "MOVED"))
            fails->moved++;
        else if (fails && (strstr(err.detail, "ASK") || strstr(err.detail, "TRYAGAIN")))
            fails->migrating++;
        else if (fails && fails->other++ < 3)
            printf("publish m-%d failed: %s: %s\n", i, eddy_status_name(rc), err.detail);
        err.detail[0] = '\0';
        if (eddy_test_now_ms() > until) {
            cr_log_error("publish m-%d: %s", i, err.detail);
            return false;
        }
    }
    return true;
}

static bool answered(void *arg) {
    const front *f = arg;
    eddy_event *ev = make_event("q", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(2000), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err;
    eddy_status st = f->d->request(f->b, "svc", ev, &o, &reply, &err);
    eddy_event_free(reply);
    eddy_event_free(ev);
    return st == EDDY_OK;
}

/* Waits until every number in [0, n) with want[i] (NULL: all) was delivered at least once. */
static bool all_consumed(seen *s, int n, const bool *want) {
    long long until = eddy_test_now_ms() + WAIT_MS;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        int missing = 0;
        for (int i = 0; i < n; i++)
            missing += (!want || want[i]) && s->count[i] == 0;
        if (missing == 0 || eddy_test_now_ms() > until) {
            pthread_mutex_unlock(&s->lock);
            if (missing)
                cr_log_error("%d acknowledged publishes never consumed", missing);
            return missing == 0;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
}

/* ---- the store and a catch-up feed (blocking API) ---------------------------------------- */

static eddy_status f_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta;
    (void)err;
    (void)user;
    *out = eddy_event_dup(ev);
    return *out ? EDDY_OK : EDDY_ERR_NOMEM;
}
static void f_free(void *ev, void *user) {
    (void)user;
    eddy_event_free(ev);
}
static const char *f_id(const void *ev, void *user) {
    (void)user;
    return eddy_event_id(ev);
}
static eddy_status f_apply(void *ev, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)ev;
    (void)meta;
    (void)err;
    (*(int *)user)++;
    return EDDY_OK;
}
static eddy_status count_stored(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    (void)meta;
    (*(int *)user)++;
    return EDDY_OK;
}

static eddy_store *store_open(const char *url, const char *ns) {
    eddy_settings st;
    settings_for(&st, url, ns);
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&st, &store, &err), EDDY_OK, "%s", err.detail);
    return store;
}

/* Appends events m-<first>..m-<first+2> to `stream` (published to "orders" in the same step),
 * again after a failure (a moved slot: nothing was written), and reads them back. */
static void append_three(eddy_store *store, const char *stream, int first) {
    eddy_event *evs[3];
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "m-%d", first + i);
        evs[i] = make_event(id, "t.order");
    }
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = "orders";
    o.expected_version = EDDY_NO_STREAM; /* a retry of an attempt that was written is refused */
    long long v = 0;
    eddy_error err = {0};
    eddy_status rc;
    long long until = eddy_test_now_ms() + WAIT_MS;
    while ((rc = eddy_store_append(store, stream, (const eddy_event *const *)evs, 3, &o, &v,
                                   &err)) != EDDY_OK &&
           rc != EDDY_ERR_VERSION_CONFLICT && eddy_test_now_ms() < until)
        ;
    if (rc == EDDY_ERR_VERSION_CONFLICT) { /* an attempt that failed had been written */
        printf("append to %s: an attempt that failed had been written\n", stream);
        rc = EDDY_OK;
        v = 3;
    }
    cr_assert_eq(rc, EDDY_OK, "%s", err.detail);
    cr_expect_eq(v, 3);
    int n = 0;
    cr_expect_eq(eddy_store_read_stream(store, stream, 0, count_stored, &n, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(n, 3);
    for (int i = 0; i < 3; i++)
        eddy_event_free(evs[i]);
}

/* Catches a feed up with a marker, twice: the first applies `events`, the second nothing. */
static void catch_up_twice(eddy_store *store, int events) {
    eddy_checkpoints ck = eddy_store_checkpoints(store);
    for (int round = 0; round < 2; round++) {
        int applied = 0;
        eddy_feed_config cfg;
        eddy_feed_config_init(&cfg);
        cfg.id = "cl-feed";
        cfg.projection.apply = f_apply;
        cfg.projection.user = &applied;
        cfg.decode = f_decode;
        cfg.free_event = f_free;
        cfg.event_id = f_id;
        cfg.checkpoints = &ck;
        eddy_feed *feed = NULL;
        eddy_error err = {0};
        cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
        cr_expect_eq(eddy_feed_catch_up(feed, NULL, &err), EDDY_OK, "%s", err.detail);
        cr_expect_eq(applied, round == 0 ? events : 0, "round %d applied %d", round, applied);
        eddy_feed_free(feed);
    }
}

/* A read model kept in Redis (eddy_feed_config.writes): each event counted per stream. */
static eddy_status m_writes(void *ev, const eddy_event_meta *meta, eddy_writes *w, eddy_error *err,
                            void *user) {
    (void)ev, (void)user;
    return eddy_writes_hincr(w, "count", meta->stream_id, strlen(meta->stream_id), 1, err);
}

static eddy_status sum_counts(const char *name, size_t nlen, const char *value, size_t vlen,
                              void *user) {
    (void)name, (void)nlen, (void)vlen;
    *(long long *)user += atoll(value);
    return EDDY_OK;
}

/* Catches a feed with a model in Redis up, twice (no checkpoint): the first commits every event
 * (`events` in all, counted in the namespace's slot), the second resumes after them and changes
 * nothing. */
static void model_twice(eddy_store *store, long long events) {
    for (int round = 0; round < 2; round++) {
        eddy_feed_config cfg;
        eddy_feed_config_init(&cfg);
        cfg.id = "cl-model";
        cfg.writes = m_writes;
        cfg.decode = f_decode;
        cfg.free_event = f_free;
        cfg.event_id = f_id;
        eddy_feed *feed = NULL;
        eddy_error err = {0};
        cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
        cr_expect_eq(eddy_feed_catch_up(feed, NULL, &err), EDDY_OK, "%s", err.detail);
        eddy_feed_info i;
        eddy_feed_stats(feed, &i);
        cr_expect_eq((long long)i.replayed, round == 0 ? events : 0, "round %d", round);
        eddy_feed_free(feed);
        long long counted = 0, pos = 0;
        cr_expect_eq(eddy_store_model_hash(store, "cl-model", "count", sum_counts, &counted, &err),
                     EDDY_OK, "%s", err.detail);
        cr_expect_eq(counted, events, "round %d: the model counts each event once", round);
        cr_expect_eq(eddy_store_model_position(store, "cl-model", &pos, &err), EDDY_OK);
        cr_expect_eq(pos, events);
    }
}

/* A projection that keeps its own position (projection.position): where its last apply was. */
static long long resumed_at;
static eddy_status r_apply(void *ev, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)ev, (void)err;
    (*(int *)user)++;
    resumed_at = meta->position;
    return EDDY_OK;
}
static eddy_status r_position(long long *position, eddy_error *err, void *user) {
    (void)err, (void)user;
    *position = resumed_at;
    return EDDY_OK;
}

/* Catches a feed that resumes from its projection's position up twice (no checkpoint): the
 * first replays `events`, the second starts after them and replays nothing. */
static void resume_twice(eddy_store *store, int events) {
    resumed_at = 0;
    for (int round = 0; round < 2; round++) {
        int applied = 0;
        eddy_feed_config cfg;
        eddy_feed_config_init(&cfg);
        cfg.id = "cl-resume";
        cfg.projection.apply = r_apply;
        cfg.projection.position = r_position;
        cfg.projection.user = &applied;
        cfg.decode = f_decode;
        cfg.free_event = f_free;
        cfg.event_id = f_id;
        eddy_feed *feed = NULL;
        eddy_error err = {0};
        cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
        cr_expect_eq(eddy_feed_catch_up(feed, NULL, &err), EDDY_OK, "%s", err.detail);
        cr_expect_eq(applied, round == 0 ? events : 0, "round %d applied %d", round, applied);
        eddy_feed_free(feed);
    }
}

/* The store's publishes (m-<first>..) are consumed. */
static bool three_consumed(seen *s, int first) {
    bool want[FLOW_MAX] = {0};
    want[first] = want[first + 1] = want[first + 2] = true;
    return all_consumed(s, first + 3, want);
}

/* ---- three namespaces on three masters --------------------------------------------------- */

static void three_namespaces(const driver *d) {
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[NNS][96];
    int master[NNS];
    pick_namespaces(&c, ns, master);
    seen *s[NNS];
    front f[NNS];
    for (int k = 0; k < NNS; k++) {
        s[k] = seen_new();
        f[k] = bus_open(d, c.url, ns[k], s[k]);
    }
    for (int i = 0; i < COUNT; i++)
        for (int k = 0; k < NNS; k++)
            cr_assert(publish_until_ok(&f[k], i, NULL));
    for (int k = 0; k < NNS; k++) {
        cr_expect(all_consumed(s[k], COUNT, NULL), "namespace %d: every message consumed", k);
        cr_expect(eddy_test_wait_until(answered, &f[k], WAIT_MS), "namespace %d: a reply", k);
        if (d == &blocking_driver) {
            eddy_store *store = store_open(c.url, ns[k]);
            append_three(store, "order-1", 10000);
            catch_up_twice(store, 3);
            model_twice(store, 3);
            resume_twice(store, 3);
            eddy_store_close(store);
            cr_expect(three_consumed(s[k], 10000), "the store's publishes are consumed");
        }
        /* The namespace's keys are on its own master, and on no other. */
        char url[64];
        snprintf(url, sizeof(url), "redis://127.0.0.1:%d", master[k]);
        cr_expect_geq(eddy_test_redis_int(url, "XLEN {%s}:s:orders", ns[k]), COUNT);
    }
    for (int k = 0; k < NNS; k++) {
        d->free(f[k].b);
        seen_free(s[k]);
    }
    eddy_test_cluster_stop(&c);
}

Test(cluster, blocking_three_namespaces_on_three_masters, .timeout = 300) {
    three_namespaces(&blocking_driver);
}
Test(cluster, reactive_three_namespaces_on_three_masters, .timeout = 300) {
    three_namespaces(&reactive_driver);
}

/* ---- failover and migration while messages flow ------------------------------------------ */

typedef struct flow {
    const front *f;
    atomic_bool stop;
    atomic_int next;
    failures fails;
} flow;

static void *publish_flow(void *arg) {
    flow *p = arg;
    while (!atomic_load(&p->stop) && atomic_load(&p->next) < 10000) {
        int i = atomic_load(&p->next);
        if (!publish_until_ok(p->f, i, &p->fails))
            break;
        atomic_store(&p->next, i + 1);
        struct timespec pace = {0, 2000000};
        nanosleep(&pace, NULL);
    }
    return NULL;
}

typedef struct settled {
    eddy_test_cluster *c;
    unsigned slot;
    int master;
} settled;

static bool cluster_settled(void *arg) {
    settled *a = arg;
    return eddy_test_cluster_agrees(a->c, a->slot, a->master);
}

static bool wait_settled(settled *a) {
    if (eddy_test_wait_until(cluster_settled, a, WAIT_MS))
        return true;
    eddy_test_cluster_describe(a->c, a->slot);
    return false;
}

/* Until n more publishes of the thread were acknowledged. */
static bool let_publishes_through(flow *p, int n) {
    return eddy_test_wait_count(&p->next, atomic_load(&p->next) + n, WAIT_MS);
}

/* Between batches of migrated keys: some publishes hit the half-migrated slot. */
static void let_traffic_through(void *arg) {
    cr_assert(let_publishes_through(arg, 10), "no publish went through the half-migrated slot");
}

typedef struct nothing_pending {
    int port;
    const char *ns;
} nothing_pending;

static bool none_pending(void *arg) {
    nothing_pending *a = arg;
    redisReply *r = eddy_test_cmd_at(a->port, "XPENDING {%s}:s:orders orders", a->ns);
    bool v = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
             r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 0;
    if (r)
        freeReplyObject(r);
    return v;
}

static void failover_and_migration(const driver *d) {
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[NNS][96];
    int master[NNS];
    pick_namespaces(&c, ns, master);
    unsigned slot = eddy__cluster_ns_slot(ns[0]);
    seen *s = seen_new();
    front f = bus_open(d, c.url, ns[0], s);
    for (int i = 0; i < COUNT; i++)
        cr_assert(publish_until_ok(&f, i, NULL));
    cr_assert(eddy_test_wait_until(answered, &f, WAIT_MS), "a request is answered");
    /* A store, on the first master (which loads eddy's function library there). */
    eddy_store *store = store_open(c.url, ns[0]);
    append_three(store, "order-1", 10000);

    flow *p = calloc(1, sizeof(*p));
    cr_assert(p);
    p->f = &f;
    atomic_store(&p->next, COUNT);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_flow, p), 0);
    let_publishes_through(p, 20); /* some publishes flow first */

    /* A failover: the replica takes over its master's slots. */
    int replica = eddy_test_cluster_replica_of(&c, master[0]);
    cr_assert(replica, "the master has a replica");
    eddy_test_cluster_failover(&c, slot, replica);
    settled a = {&c, slot, replica};
    int mark = atomic_load(&p->next);
    cr_expect(eddy_test_wait_until(answered, &f, WAIT_MS), "a reply after the failover");
    eddy_test_wait_count(&p->next, mark + 20, WAIT_MS);

    /* A live migration of the slot to another master, while the thread publishes. */
    int to = master[1];
    eddy_test_cluster_migrate(&c, slot, replica, to, let_traffic_through, p);
    a.master = to;
    cr_assert(wait_settled(&a), "the slot moved");
    let_publishes_through(p, 20);
    atomic_store(&p->stop, true);
    pthread_join(th, NULL);
    int n = atomic_load(&p->next);
    cr_expect(eddy_test_wait_until(answered, &f, WAIT_MS), "a reply after the migration");
    cr_expect(all_consumed(s, n, NULL), "every acknowledged publish is consumed");
    /* The store follows the slot to a master that never had the function library loaded. */
    append_three(store, "order-2", 10003);
    catch_up_twice(store, 6);
    /* The model's commit is a function call too, on a master that had to load the library. */
    model_twice(store, 6);
    eddy_store_close(store);
    cr_expect(three_consumed(s, 10000) && three_consumed(s, 10003),
              "the store's publishes are consumed");

    nothing_pending np = {to, ns[0]};
    cr_expect(eddy_test_wait_until(none_pending, &np, WAIT_MS),
              "nothing pending on the new master");
    int twice = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n; i++)
        twice += s->count[i] > 1 ? s->count[i] - 1 : 0;
    int deliveries = s->deliveries;
    pthread_mutex_unlock(&s->lock);
    printf("cluster %s: %d publishes acknowledged through a failover and a migration; attempts "
           "that failed and were retried by the test: %d MOVED, %d ASK or TRYAGAIN (the slot "
           "being migrated), %d other, %d without a detail; %d deliveries, %d of them "
           "duplicates\n",
           d->name, n, p->fails.moved, p->fails.migrating, p->fails.other, p->fails.undetailed,
           deliveries, twice);
    fflush(stdout);
    /* A MOVED refused the publish unwritten: the bus sent it again itself; an ASK is followed
     * to the importing node (a publish's commands are single-key: no TRYAGAIN). */
    cr_expect_eq(p->fails.moved, 0, "no publish failed for a MOVED");
    cr_expect_eq(p->fails.migrating, 0, "no publish failed for an ASK");
    d->free(f.b);
    free(p);
    seen_free(s);
    eddy_test_cluster_stop(&c);
}

Test(cluster, blocking_failover_and_migration_while_messages_flow, .timeout = 300) {
    failover_and_migration(&blocking_driver);
}
Test(cluster, reactive_failover_and_migration_while_messages_flow, .timeout = 300) {
    failover_and_migration(&reactive_driver);
}

/* ---- refusals ---------------------------------------------------------------------------- */

Test(cluster, a_db_other_than_0_is_refused_at_open) {
    eddy_settings st;
    settings_for(&st, "redis-cluster://127.0.0.1:1/2", "x");
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_ERR_INVALID_URL);
    cr_expect(strstr(err.detail, "db 0 only"), "%s", err.detail);
}

/* No seed answers: a clear status naming each. */
Test(cluster, connect_fails_clearly_when_no_node_answers, .timeout = 60) {
    char url[128];
    int a = eddy_test_free_port(), b = eddy_test_free_port();
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d,127.0.0.1:%d", a, b);
    eddy_settings st;
    settings_for(&st, url, "x");
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status rc = eddy_bus_new(&st, NULL, 0, &bus, &err);
    if (rc == EDDY_OK) {
        eddy_event *ev = make_event("x-1", "t.order");
        rc = eddy_bus_publish(bus, "orders", ev, NULL, 0, &err);
        eddy_event_free(ev);
        eddy_bus_free(bus);
    }
    cr_expect_eq(rc, EDDY_ERR_IO, "%s: %s", eddy_status_name(rc), err.detail);
    cr_expect(strstr(err.detail, "no cluster node named the master of slot"), "%s", err.detail);
    char at[32];
    snprintf(at, sizeof(at), "127.0.0.1:%d:", b);
    cr_expect(strstr(err.detail, at), "%s", err.detail);
}

/* ---- a transactional handler (eddy_delivery_emit) on a cluster --------------------------- */

static eddy_status transform(eddy_delivery *d, void *user) {
    (void)user;
    char id[64];
    snprintf(id, sizeof(id), "out-%s", eddy_event_id(eddy_delivery_event(d)));
    eddy_event *ev = make_event(id, "t.out");
    eddy_status st = eddy_delivery_emit(d, "orders.out", ev, NULL);
    eddy_event_free(ev);
    return st;
}

typedef struct committed {
    const char *url, *ns;
} committed;

static bool all_committed(void *arg) {
    const committed *w = arg;
    return eddy_test_redis_int(w->url, "XLEN {%s}:s:orders.out", w->ns) >= COUNT &&
           eddy_test_redis_int(w->url, "XLEN {%s}:s:orders", w->ns) >= COUNT;
}

static void transactional(const driver *d) {
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[NNS][96];
    int master[NNS];
    pick_namespaces(&c, ns, master);
    eddy_settings st;
    settings_for(&st, c.url, ns[0]);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "pipe";
    sp.pattern = "orders";
    sp.group = "pipe";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = transform;
    front f = {d, NULL};
    eddy_error err = {0};
    cr_assert_eq(d->bus_new(&st, &sp, 1, &f.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(f.b, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < COUNT; i++)
        cr_assert(publish_until_ok(&f, i, NULL));
    /* The outputs are on the namespace's own master, once each; nothing is left pending. */
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", master[0]);
    committed w = {url, ns[0]};
    cr_expect(eddy_test_wait_until(all_committed, &w, WAIT_MS), "every output committed");
    long long pending = -1;
    for (long long until = eddy_test_now_ms() + WAIT_MS; eddy_test_now_ms() < until;) {
        redisReply *r = eddy_test_cmd_at(master[0], "XPENDING {%s}:s:orders pipe", ns[0]);
        pending = r && r->type == REDIS_REPLY_ARRAY && r->elements ? r->element[0]->integer : -1;
        freeReplyObject(r);
        if (pending == 0)
            break;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_expect_eq(pending, 0);
    cr_expect_eq(eddy_test_redis_int(url, "XLEN {%s}:s:orders.out", ns[0]), COUNT);
    d->free(f.b);
    eddy_test_cluster_stop(&c);
}

Test(cluster, blocking_transactional_handler, .timeout = 300) { transactional(&blocking_driver); }
Test(cluster, reactive_transactional_handler, .timeout = 300) { transactional(&reactive_driver); }

/* ---- scatter-gather (eddy_bus_request_all) on a cluster ------------------------------------ */

static eddy_status answer(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    return eddy_delivery_new_reply(d, "t.answer", reply, NULL);
}

/* Two responder instances answer every request (answer_all): a gather on the namespace's slot
 * gets both replies, and counts one request in the requester's counters. */
static void gathered(const driver *d) {
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[NNS][96];
    int master[NNS];
    pick_namespaces(&c, ns, master);
    eddy_settings st;
    settings_for(&st, c.url, ns[1]);
    tbus *resp[2], *req = NULL;
    eddy_error err = {0};
    for (int i = 0; i < 2; i++) {
        eddy_settings si = st;
        si.instance = i ? "answerer-2" : "answerer-1";
        eddy_subscription_spec sp;
        eddy_subscription_spec_init(&sp);
        sp.name = "ask";
        sp.pattern = "svc.ask";
        sp.group = "ask";
        sp.delivery = EDDY_AT_MOST_ONCE;
        sp.responder = answer;
        cr_assert_eq(d->bus_new(&si, &sp, 1, &resp[i], &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(d->answer_all(resp[i], "ask", &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(d->start(resp[i], &err), EDDY_OK, "%s", err.detail);
    }
    cr_assert_eq(d->bus_new(&st, NULL, 0, &req, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(req, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("ask-1", "t.ask");
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(WAIT_MS);
    o.max_replies = 2;
    eddy_replies *out = NULL;
    size_t each = 0;
    cr_expect_eq(d->request_all(req, "svc.ask", ev, &o, &out, &each, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(out ? eddy_replies_count(out) : 0, 2, "both instances answered");
    eddy_replies_free(out);
    eddy_event_free(ev);
    eddy_request_stats rs;
    cr_assert_eq(d->request_stats(req, NULL, &rs), EDDY_OK);
    cr_expect_eq(rs.sent, 1);
    cr_expect_eq(rs.answered, 1);
    d->free(req);
    for (int i = 0; i < 2; i++)
        d->free(resp[i]);
    eddy_test_cluster_stop(&c);
}

Test(cluster, blocking_scatter_gather, .timeout = 300) { gathered(&blocking_driver); }
Test(cluster, reactive_scatter_gather, .timeout = 300) { gathered(&reactive_driver); }

/* ---- shared reads (issue 22) on a cluster: the wake-up's XREAD stays in the namespace's slot */

#define SHARED_SUBS 8
#define SHARED_EACH 10

static void shared_reads(const driver *d) {
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[NNS][96];
    int master[NNS];
    pick_namespaces(&c, ns, master);
    eddy_settings st;
    settings_for(&st, c.url, ns[0]);
    st.share_reads_from = 5; /* the default: 8 subscriptions share */
    recorder r;
    rec_init(&r);
    char names[SHARED_SUBS][16], subjects[SHARED_SUBS][24];
    eddy_subscription_spec sp[SHARED_SUBS];
    for (int i = 0; i < SHARED_SUBS; i++) {
        snprintf(names[i], sizeof(names[i]), "s%d", i);
        snprintf(subjects[i], sizeof(subjects[i]), "orders.%d", i);
        eddy_subscription_spec_init(&sp[i]);
        sp[i].name = names[i];
        sp[i].pattern = subjects[i];
        sp[i].group = "g";
        sp[i].delivery = EDDY_AT_LEAST_ONCE;
        sp[i].handler = rec_handler;
        sp[i].user = &r;
    }
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(d->bus_new(&st, sp, SHARED_SUBS, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(b, &err), EDDY_OK, "%s", err.detail);
    char id[32];
    for (int k = 0; k < SHARED_EACH; k++)
        for (int i = 0; i < SHARED_SUBS; i++) {
            snprintf(id, sizeof(id), "e%d-%d", i, k);
            eddy_event *ev = make_event(id, "t.shared");
            cr_assert_eq(d->publish(b, subjects[i], ev, &err), EDDY_OK, "%s", err.detail);
            eddy_event_free(ev);
        }
    cr_assert(rec_wait(&r, SHARED_SUBS * SHARED_EACH, WAIT_MS), "only %d of %d delivered",
              rec_count(&r), SHARED_SUBS * SHARED_EACH);
    d->stop(b);
    for (int i = 0; i < SHARED_SUBS; i++) {
        for (int k = 0; k < SHARED_EACH; k++) {
            snprintf(id, sizeof(id), "e%d-%d", i, k);
            cr_expect_eq(rec_seen(&r, id), 1, "%s seen %d times", id, rec_seen(&r, id));
        }
        redisReply *p = eddy_test_cmd_at(master[0], "XPENDING {%s}:s:%s g", ns[0], subjects[i]);
        cr_expect(p && p->type == REDIS_REPLY_ARRAY && p->elements && p->element[0]->integer == 0,
                  "%s left pending", subjects[i]);
        freeReplyObject(p);
    }
    d->free(b);
    rec_destroy(&r);
    eddy_test_cluster_stop(&c);
}

Test(cluster, blocking_shared_reads, .timeout = 300) { shared_reads(&blocking_driver); }
Test(cluster, reactive_shared_reads, .timeout = 300) { shared_reads(&reactive_driver); }
