/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster: a 3 + 3 Redis Cluster (tests/support/redis_cluster.h) and one namespace on it, while
 * a thread publishes through the front end's bus with publish_dedup_ms, another appends to the
 * event store with a publish (blocking store, the deduplicated append), and a subscription of
 * the bus (Competing, AtLeastOnce) consumes both. Three faults in turn, each a phase with its
 * FIG line:
 *   failover  CLUSTER FAILOVER of the namespace's master to its replica;
 *   kill      kill -9 of that master: its replica takes over after the node timeout;
 *   migrate   a live migration of the slot to another master (keys moved in batches, traffic
 *             between them), on a master that never had eddy's functions loaded.
 * Each FIG line says, for the phase: acknowledged publishes and appends, errors returned, how
 * many acknowledged are missing from the final master's stream, lost end to end (acknowledged,
 * never consumed), duplicates, the time from the fault to the first successful publish, the
 * on_connection changes, and the reconnects that came within 10 ms of the same connection's
 * previous one (eddy's debug line "connecting (connection %p)"). Asserted: nothing acknowledged
 * is lost or missing; no reconnect within 10 ms (the backoff is at least 25 ms here); the
 * migration returns no error to a caller within its deadline; a failover or a migration is at
 * most one disconnected and one reconnected change. Never a speed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/store.h"
#include "eddy_test.h"
#include "faults.h"
#include "link/cluster.h"
#include "redis_cluster.h"
#include "scenarios.h"

#define SUBJECT "faults.cluster"
#define MAX_OPS 100000
#define CONNS 64

typedef struct phase_counts {
    unsigned long published, publish_errors, appended, append_errors;
    long long first_ok_ms; /* from the fault, -1 none yet */
} phase_counts;

typedef struct cl_run {
    const driver *dr;
    tbus *bus;
    eddy_store *store;
    atomic_bool stop;
    fx_acks pubs, apps; /* 'p' publishes, 'a' appends */
    atomic_ulong published, publish_errors, appended, append_errors;
    atomic_llong fault_at;               /* eddy_now_ms of the phase's fault, 0 before */
    atomic_llong first_ok;               /* the first successful publish after it, 0 none */
    atomic_ulong changes, store_changes; /* on_connection calls of the bus, of the store */
    pthread_mutex_t lock;                /* the connections' last connect times */
    const void *conn[CONNS];
    long long last[CONNS];
    unsigned long close_reconnects;
    char last_error[EDDY_ERROR_DETAIL_MAX];
    size_t pmissing, amissing; /* missing from the final master at the end of the last phase */
} cl_run;

static eddy_status consume(eddy_delivery *d, void *user) {
    cl_run *u = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    fx_acks_consumed(id[0] == 'a' ? &u->apps : &u->pubs, id);
    return EDDY_OK;
}

static void on_connection(eddy_connection_state st, const eddy_error *why, void *user) {
    (void)st, (void)why;
    atomic_fetch_add((atomic_ulong *)user, 1);
}

/* Counts a connect that came within 10 ms of the same connection's previous one. */
static void log_hook(eddy_log_level level, const char *msg, void *user) {
    cl_run *u = user;
    void *conn = NULL;
    if (level == EDDY_LOG_DEBUG && sscanf(msg, "connecting (connection %p)", &conn) == 1) {
        long long now = fx_now_ms();
        pthread_mutex_lock(&u->lock);
        int i = 0;
        while (i < CONNS && u->conn[i] && u->conn[i] != conn)
            i++;
        if (i < CONNS) {
            if (u->conn[i] == conn && now - u->last[i] < 10)
                u->close_reconnects++;
            u->conn[i] = conn;
            u->last[i] = now;
        }
        pthread_mutex_unlock(&u->lock);
        return;
    }
    fx_log(level, msg, "cluster");
}

static void note_error(cl_run *u, const eddy_error *err) {
    pthread_mutex_lock(&u->lock);
    snprintf(u->last_error, sizeof(u->last_error), "%s", err->detail);
    pthread_mutex_unlock(&u->lock);
}

static void *publisher(void *arg) {
    cl_run *u = arg;
    for (unsigned long i = 0; i < MAX_OPS && !atomic_load(&u->stop); i++) {
        eddy_event *ev = fx_event('p', i, "faults.cluster", "x");
        eddy_error err = {0};
        eddy_status st = u->dr->publish(u->bus, SUBJECT, ev, &err);
        eddy_event_free(ev);
        if (st == EDDY_OK) {
            u->pubs.acked[i] = 1;
            atomic_fetch_add(&u->published, 1);
            long long zero = 0;
            if (atomic_load(&u->fault_at))
                atomic_compare_exchange_strong(&u->first_ok, &zero, eddy_now_ms());
        } else {
            atomic_fetch_add(&u->publish_errors, 1);
            note_error(u, &err);
        }
        fx_sleep_ms(2);
    }
    return NULL;
}

static void *appender(void *arg) {
    cl_run *u = arg;
    for (unsigned long i = 0; i < MAX_OPS && !atomic_load(&u->stop); i++) {
        const eddy_event *ev = fx_event('a', i, "faults.cluster.stored", "y");
        char stream[32];
        snprintf(stream, sizeof(stream), "order-%lu", i % 8);
        eddy_append_opts o;
        eddy_append_opts_init(&o);
        o.publish_subject = SUBJECT;
        eddy_error err = {0};
        eddy_status st = eddy_store_append(u->store, stream, &ev, 1, &o, NULL, &err);
        eddy_event_free((eddy_event *)ev);
        if (st == EDDY_OK) {
            u->apps.acked[i] = 1;
            atomic_fetch_add(&u->appended, 1);
        } else {
            atomic_fetch_add(&u->append_errors, 1);
            note_error(u, &err);
        }
        fx_sleep_ms(5);
    }
    return NULL;
}

/* Event ids in the subject's stream on the master on `port`: each one's count into tally. */
static void count_stream(int port, const char *ns, fx_acks *pubs, fx_acks *apps, size_t *pmiss,
                         size_t *amiss) {
    unsigned char *p = calloc(MAX_OPS, 1), *a = calloc(MAX_OPS, 1);
    /* What was acknowledged before the read began: each of those is in the stream if kept. */
    unsigned char *pk = malloc(MAX_OPS), *ak = malloc(MAX_OPS);
    if (pk && ak) {
        memcpy(pk, pubs->acked, MAX_OPS);
        memcpy(ak, apps->acked, MAX_OPS);
    }
    char start[64] = "-";
    for (int round = 0; round < 1000 && p && a; round++) {
        redisReply *r =
            eddy_test_cmd_at(port, "XRANGE {%s}:s:" SUBJECT " %s + COUNT 1000", ns, start);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            if (r)
                freeReplyObject(r);
            break;
        }
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *e = r->element[i], *f = e->element[1];
            for (size_t k = 0; k + 1 < f->elements; k += 2)
                if (strcmp(f->element[k]->str, "id") == 0) {
                    const char *id = f->element[k + 1]->str;
                    unsigned long n = strtoul(id + 1, NULL, 10);
                    if (n < MAX_OPS)
                        (id[0] == 'a' ? a : p)[n] = 1;
                }
            snprintf(start, sizeof(start), "(%s", e->element[0]->str);
        }
        freeReplyObject(r);
    }
    *pmiss = *amiss = 0;
    for (size_t i = 0; p && a && pk && ak && i < MAX_OPS; i++) {
        *pmiss += pk[i] && !p[i];
        *amiss += ak[i] && !a[i];
    }
    free(p);
    free(a);
    free(pk);
    free(ak);
}

/* Waits up to wait_ms until at most `gone` acknowledged publishes and appends (those Redis lost)
 * were never consumed; lost and dup out. */
static void settle(cl_run *u, size_t gone, long long wait_ms, size_t *lost, size_t *dup) {
    long long until = fx_now_ms() + wait_ms;
    for (;;) {
        *lost = *dup = 0;
        fx_acks *all[2] = {&u->pubs, &u->apps};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < all[k]->n; i++) {
                unsigned seen = atomic_load(&all[k]->seen[i]);
                *lost += all[k]->acked[i] && seen == 0;
                *dup += seen > 1 ? seen - 1 : 0;
            }
        if (*lost <= gone || fx_now_ms() > until)
            return;
        fx_sleep_ms(100);
    }
}

typedef struct snap {
    unsigned long published, publish_errors, appended, append_errors, changes, store_changes, close;
} snap;

static snap take(cl_run *u) {
    pthread_mutex_lock(&u->lock);
    unsigned long close = u->close_reconnects;
    pthread_mutex_unlock(&u->lock);
    return (snap){atomic_load(&u->published),
                  atomic_load(&u->publish_errors),
                  atomic_load(&u->appended),
                  atomic_load(&u->append_errors),
                  atomic_load(&u->changes),
                  atomic_load(&u->store_changes),
                  close};
}

/* Lets the traffic run until `n` more publishes went through (or 60 s). */
static void flow(cl_run *u, unsigned long n) {
    unsigned long goal = atomic_load(&u->published) + n;
    long long until = fx_now_ms() + 60000;
    while (atomic_load(&u->published) < goal && fx_now_ms() < until)
        fx_sleep_ms(20);
}

static void between_batches(void *arg) {
    (void)arg;
    fx_sleep_ms(50);
}

typedef struct agreed {
    eddy_test_cluster *c;
    unsigned slot;
    int master;
} agreed;

static bool slot_agreed(void *arg) {
    agreed *a = arg;
    return eddy_test_cluster_agrees(a->c, a->slot, a->master);
}

/* The phase's FIG line and checks, from its first snapshot. */
static void report(cl_run *u, const char *phase, const snap *before, int final_master,
                   const char *ns, bool no_errors, bool kept) {
    flow(u, 50); /* traffic after the fault, healed */
    snap after = take(u);
    long long fault = atomic_load(&u->fault_at), ok = atomic_load(&u->first_ok);
    size_t pmiss, amiss;
    count_stream(final_master, ns, &u->pubs, &u->apps, &pmiss, &amiss);
    size_t lost, dup;
    settle(u, pmiss + amiss, 30000, &lost, &dup);
    /* What a phase lost stays lost: each phase counts what went missing during it. A kill -9
     * may lose what the master acknowledged and had not yet sent to its replica (Redis
     * replicates asynchronously): there, eddy must lose nothing more than that. */
    size_t pnew = pmiss - u->pmissing, anew = amiss - u->amissing;
    u->pmissing = pmiss;
    u->amissing = amiss;
    unsigned long perr = after.publish_errors - before->publish_errors;
    unsigned long aerr = after.append_errors - before->append_errors;
    unsigned long changes = after.changes - before->changes;
    unsigned long store_changes = after.store_changes - before->store_changes;
    printf("FIG cluster_%s frontend=%s acknowledged=%lu+%lu errors=%lu+%lu missing=%zu+%zu "
           "lost=%zu dup=%zu first_ok_ms=%lld changes=%lu+%lu reconnects_within_10ms=%lu\n",
           phase, u->dr->name, after.published - before->published,
           after.appended - before->appended, perr, aerr, pnew, anew, lost, dup,
           ok ? ok - fault : -1, changes, store_changes, after.close - before->close);
    FX_CHECK(!kept || (pnew == 0 && anew == 0),
             "cluster_%s: %zu publishes and %zu appends acknowledged, missing from the final "
             "master",
             phase, pnew, anew);
    FX_CHECK(lost <= pmiss + amiss,
             "cluster_%s: %zu acknowledged never consumed, %zu of them "
             "still on the final master",
             phase, lost, lost - (pmiss + amiss));
    FX_CHECK(after.close == before->close, "cluster_%s: %lu reconnects within 10 ms", phase,
             after.close - before->close);
    FX_CHECK(ok != 0, "cluster_%s: no publish succeeded after the fault", phase);
    if (no_errors) {
        pthread_mutex_lock(&u->lock);
        FX_CHECK(perr == 0 && aerr == 0, "cluster_%s: %lu publishes and %lu appends failed (%s)",
                 phase, perr, aerr, u->last_error);
        pthread_mutex_unlock(&u->lock);
    }
    FX_CHECK(changes <= 2 && store_changes <= 2,
             "cluster_%s: %lu (bus) and %lu (store) on_connection changes for one fault", phase,
             changes, store_changes);
}

void fx_cluster(const driver *dr) {
    static cl_run u;
    memset(&u, 0, sizeof(u));
    pthread_mutex_init(&u.lock, NULL);
    u.dr = dr;
    fx_acks_init(&u.pubs, MAX_OPS, 'p');
    fx_acks_init(&u.apps, MAX_OPS, 'a');
    eddy_test_cluster c;
    eddy_test_cluster_start(&c);
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-cluster-%s", dr->name);
    unsigned slot = eddy__cluster_ns_slot(ns);
    int master = eddy_test_cluster_master_of(c.node[0].port, slot);
    eddy_settings s;
    fx_settings(&s, c.url, ns);
    s.publish_dedup_ms = 60000;
    s.reconnect_min_ms = 50; /* every reconnect waits at least 25 ms */
    s.reconnect_max_ms = 500;
    s.log = log_hook;
    s.log_user = &u;
    s.on_connection = on_connection;
    s.on_connection_user = &u.changes;
    eddy_settings ss = s; /* the store's: its own connection state */
    ss.on_connection_user = &u.store_changes;
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", SUBJECT, "cluster-consume", EDDY_AT_LEAST_ONCE);
    sp.handler = consume;
    sp.user = &u;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &u.bus, &err) != EDDY_OK || dr->start(u.bus, &err) != EDDY_OK ||
        eddy_store_open(&ss, &u.store, &err) != EDDY_OK) {
        fx_fail("cluster: bus or store: %s", err.detail);
        eddy_test_cluster_stop(&c);
        return;
    }
    pthread_t pt, at;
    pthread_create(&pt, NULL, publisher, &u);
    pthread_create(&at, NULL, appender, &u);
    flow(&u, 100);

    /* failover: the replica takes the slot over, the old master follows it. */
    int replica = eddy_test_cluster_replica_of(&c, master);
    snap before = take(&u);
    atomic_store(&u.first_ok, 0);
    atomic_store(&u.fault_at, eddy_now_ms());
    eddy_test_cluster_failover(&c, slot, replica);
    report(&u, "failover", &before, replica, ns, false, true);

    /* kill: kill -9 of the new master; the old one, its replica now, takes over again. */
    before = take(&u);
    atomic_store(&u.first_ok, 0);
    atomic_store(&u.fault_at, eddy_now_ms());
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++)
        if (c.node[i].port == replica)
            eddy_test_redis_kill(&c.node[i]);
    agreed a = {&c, slot, master};
    FX_CHECK(eddy_test_wait_until(slot_agreed, &a, 60000),
             "cluster_kill: the replica did not take the slot over");
    report(&u, "kill", &before, master, ns, false, false);

    /* migrate: the slot moves to another master, keys in batches, traffic between them. */
    int to = 0;
    for (unsigned probe = 0; probe < EDDY__CLUSTER_SLOTS && !to; probe += 97) {
        int m = eddy_test_cluster_master_of(master, probe);
        if (m && m != master)
            to = m;
    }
    before = take(&u);
    atomic_store(&u.first_ok, 0);
    atomic_store(&u.fault_at, eddy_now_ms());
    if (!to) {
        fx_fail("cluster_migrate: no other master");
    } else {
        eddy_test_cluster_migrate(&c, slot, master, to, between_batches, NULL);
        a.master = to;
        FX_CHECK(eddy_test_wait_until(slot_agreed, &a, 60000), "cluster_migrate: not settled");
        report(&u, "migrate", &before, to, ns, true, true);
    }

    atomic_store(&u.stop, true);
    pthread_join(pt, NULL);
    pthread_join(at, NULL);
    eddy_store_close(u.store);
    dr->stop(u.bus);
    dr->free(u.bus);
    fx_acks_free(&u.pubs);
    fx_acks_free(&u.apps);
    eddy_test_cluster_stop(&c);
    pthread_mutex_destroy(&u.lock);
}
