/* SPDX-License-Identifier: BSD-3-Clause */
/* redis-sentinel:// on real servers: 1 master, 2 replicas and 3 redis-sentinel processes on free
 * loopback ports, started and stopped here. Through the sentinel URL a bus of either front end
 * publishes, consumes and answers requests; then a failover (SENTINEL FAILOVER, or kill -9 of
 * the master) happens while a thread publishes, and everything resumes on the new master.
 *
 * What is asserted is deterministic: every message published and replicated (WAIT 2) before
 * the failover and every one published once the sentinels name the new master (and the old
 * one, when alive, is a replica) is consumed. Replication is asynchronous, so a publish
 * acknowledged during the failover may be missing from the new master: without
 * settings.wait_replicas that figure is printed, not asserted; with wait_replicas 2 (every
 * replica) it must be 0. And the switch is followed at once: after SENTINEL FAILOVER, while the
 * old master still takes writes, what is acknowledged once the sentinel announced the new one
 * is on the new one. Also: TLS (rediss-sentinel://), the sentinels' password, a dead first
 * sentinel, clear statuses when no sentinel names the master. Waits have generous deadlines;
 * nothing asserts a duration. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy_test.h"
#include "recorder.h"
#include "redis_server.h"
#include "tls_server.h"

#define MASTER "mymaster"
#define NSENT 3
#define NREPL 2 /* wait_replicas NREPL: every replica */
#define BEFORE 20
#define AFTER 20
#define DURING_MAX 20000 /* 2 ms apart: 40 s of publishing at most, longer than a failover */
#define WAIT_MS 90000    /* a loaded machine's worst, for each wait */

/* ---- servers ----------------------------------------------------------------------------- */

typedef struct sentinel_proc {
    pid_t pid;
    int port;
    char dir[128];
} sentinel_proc;

/* 1 when the server's ROLE is `role`, 0 when not, -1 when it does not answer. */
static int has_role(int port, const char *role) {
    redisReply *r = eddy_test_cmd_at(port, "ROLE");
    int v = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        v = strcmp(r->element[0]->str, role) == 0;
    if (r)
        freeReplyObject(r);
    return v;
}

/* The port a sentinel names for the master, 0 when none. */
static int named_port(int sentinel_port) {
    redisReply *r = eddy_test_cmd_at(sentinel_port, "SENTINEL get-master-addr-by-name %s", MASTER);
    int port = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

/* How many `what` (replicas, sentinels) a sentinel knows for the master. */
static size_t known(int sentinel_port, const char *what) {
    redisReply *r = eddy_test_cmd_at(sentinel_port, "SENTINEL %s %s", what, MASTER);
    size_t n = r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    if (r)
        freeReplyObject(r);
    return n;
}

/* extra: more configuration lines, or ""; tls: its port is a tls-port (extra names the files). */
static void sentinel_start_conf(sentinel_proc *sp, int master_port, bool tls, const char *extra) {
    sp->port = eddy_test_free_port();
    snprintf(sp->dir, sizeof(sp->dir), "/tmp/eddy-test-sentinel-%d-%d", (int)getpid(), sp->port);
    char path[192];
    snprintf(path, sizeof(path), "mkdir -p %s", sp->dir);
    cr_assert(system(path) == 0);
    snprintf(path, sizeof(path), "%s/sentinel.conf", sp->dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f,
            "%s %d\nbind 127.0.0.1\ndir %s\nlogfile sentinel.log\n%s"
            "sentinel monitor %s 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds %s 1000\n"
            "sentinel failover-timeout %s 10000\n"
            "sentinel parallel-syncs %s 1\n",
            tls ? "port 0\ntls-port" : "port", sp->port, sp->dir, extra, MASTER, master_port,
            MASTER, MASTER, MASTER);
    fclose(f);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execlp("redis-sentinel", "redis-sentinel", path, (char *)NULL);
        _exit(127);
    }
    sp->pid = pid;
}

static void sentinel_start(sentinel_proc *sp, int master_port) {
    sentinel_start_conf(sp, master_port, false, "");
}

static void sentinel_kill(sentinel_proc *sp) {
    if (sp->pid > 0) {
        kill(sp->pid, SIGKILL);
        waitpid(sp->pid, NULL, 0);
        sp->pid = 0;
    }
}

typedef struct cluster {
    eddy_test_redis master, replicas[NREPL];
    sentinel_proc sent[NSENT];
    char url[256];
} cluster;

/* The replica at port replicates, its link to the master up. */
static bool replicating(int port) {
    if (has_role(port, "slave") != 1)
        return false;
    redisReply *r = eddy_test_cmd_at(port, "INFO replication");
    bool up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
    if (r)
        freeReplyObject(r);
    return up;
}

static bool all_ready(void *arg) {
    cluster *c = arg;
    for (int i = 0; i < NREPL; i++)
        if (!replicating(c->replicas[i].port))
            return false;
    for (int i = 0; i < NSENT; i++)
        if (named_port(c->sent[i].port) != c->master.port ||
            known(c->sent[i].port, "replicas") < NREPL || known(c->sent[i].port, "sentinels") < 2)
            return false;
    return true;
}

static void cluster_start(cluster *c) {
    eddy_test_redis_start(&c->master, 0);
    char mport[16];
    snprintf(mport, sizeof(mport), "%d", c->master.port);
    const char *const extra[] = {"--replicaof", "127.0.0.1", mport, NULL};
    for (int i = 0; i < NREPL; i++)
        eddy_test_redis_start_with(&c->replicas[i], 0, extra);
    int n = snprintf(c->url, sizeof(c->url), "redis-sentinel://");
    for (int i = 0; i < NSENT; i++) {
        sentinel_start(&c->sent[i], c->master.port);
        n += snprintf(c->url + n, sizeof(c->url) - (size_t)n, "%s127.0.0.1:%d", i ? "," : "",
                      c->sent[i].port);
    }
    snprintf(c->url + n, sizeof(c->url) - (size_t)n, "/%s", MASTER);
    /* The sentinels find the replica and each other through the master (hello messages every
     * 2 s): a failover needs both. */
    cr_assert(eddy_test_wait_until(all_ready, c, WAIT_MS), "the sentinels see the replica");
}

static void cluster_stop(cluster *c) {
    for (int i = 0; i < NSENT; i++)
        sentinel_kill(&c->sent[i]);
    eddy_test_redis_kill(&c->master);
    for (int i = 0; i < NREPL; i++)
        eddy_test_redis_kill(&c->replicas[i]);
    char rm[512];
    for (int i = 0; i < NSENT; i++) {
        snprintf(rm, sizeof(rm), "rm -rf %s", c->sent[i].dir);
        (void)!system(rm);
    }
}

/* ---- the bus ----------------------------------------------------------------------------- */

/* What the consumer saw, by id: "b-N" (before), "d-N" (during), "a-N" (after). */
typedef struct seen {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool before[BEFORE], during[DURING_MAX], after[AFTER];
    int deliveries;
} seen;

static eddy_status consume(eddy_delivery *d, void *user) {
    seen *s = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    int i = atoi(id + 2);
    pthread_mutex_lock(&s->lock);
    if (id[0] == 'b' && i >= 0 && i < BEFORE)
        s->before[i] = true;
    else if (id[0] == 'd' && i >= 0 && i < DURING_MAX)
        s->during[i] = true;
    else if (id[0] == 'a' && i >= 0 && i < AFTER)
        s->after[i] = true;
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

/* A bus of either front end (tests/support/driver.h). */
typedef struct front {
    const driver *d;
    tbus *b;
} front;

static front bus_open(const driver *d, const char *url, char *ns, size_t nslen, seen *s,
                      unsigned wait) {
    eddy_settings st;
    eddy_settings_init(&st);
    st.url = url;
    st.ns = eddy_test_namespace(ns, nslen, "sent");
    st.source = "/tests/sentinel";
    st.block_ms = 200;
    st.connect_timeout_ms = 2000;
    st.command_timeout_ms = 3000;
    st.reconnect_max_ms = 500;
    st.redelivery_idle_ms = 3000;
    st.wait_replicas = wait;
    st.wait_timeout_ms = 1000;
    st.log = eddy_test_log;
    st.log_user = "sentinel";
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

static eddy_status fpublish(const front *f, const char *id, eddy_error *err) {
    eddy_event *ev = make_event(id, "t.order");
    eddy_status st = f->d->publish(f->b, "orders", ev, err);
    eddy_event_free(ev);
    return st;
}

/* The blocking front end's own publish, for the tests of connecting. */
static eddy_status publish(eddy_bus *bus, const char *id, eddy_error *err) {
    eddy_event *ev = make_event(id, "t.order");
    eddy_status st = eddy_bus_publish(bus, "orders", ev, NULL, 0, err);
    eddy_event_free(ev);
    return st;
}

/* Publishes until it is acknowledged (a failover makes some attempts fail). */
static bool publish_until_ok(const front *f, const char *id) {
    long long until = eddy_test_now_ms() + WAIT_MS;
    eddy_error err = {0};
    eddy_status st;
    while ((st = fpublish(f, id, &err)) != EDDY_OK)
        if (eddy_test_now_ms() > until) {
            cr_log_error("publish %s: %s %s", id, eddy_status_name(st), err.detail);
            return false;
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

typedef struct pub_thread {
    const front *f;
    atomic_bool stop;
    bool acked[DURING_MAX];
    int tried, failed;
    atomic_int ok; /* acknowledged so far: watched while the thread runs */
} pub_thread;

static void *publish_during(void *arg) {
    pub_thread *p = arg;
    for (int i = 0; i < DURING_MAX && !atomic_load(&p->stop); i++) {
        char id[16];
        snprintf(id, sizeof(id), "d-%d", i);
        eddy_error err;
        p->acked[i] = fpublish(p->f, id, &err) == EDDY_OK;
        p->failed += !p->acked[i];
        if (p->acked[i])
            atomic_fetch_add(&p->ok, 1);
        p->tried = i + 1;
        struct timespec pace = {0, 2000000}; /* keeps the ids within DURING_MAX */
        nanosleep(&pace, NULL);
    }
    return NULL;
}

static bool before_and_after_consumed(seen *s) {
    long long until = eddy_test_now_ms() + WAIT_MS;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        bool all = true;
        for (int i = 0; i < BEFORE; i++)
            all = all && s->before[i];
        for (int i = 0; i < AFTER; i++)
            all = all && s->after[i];
        if (all || eddy_test_now_ms() > until) {
            pthread_mutex_unlock(&s->lock);
            return all;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
}

/* How many replicas the master at port has online (INFO replication's slaveN lines). */
static int replicas_online(int port) {
    redisReply *r = eddy_test_cmd_at(port, "INFO replication");
    int n = 0;
    for (const char *at = r && r->type == REDIS_REPLY_STRING ? r->str : NULL;
         at && (at = strstr(at, "state=online")); at++)
        n++;
    if (r)
        freeReplyObject(r);
    return n;
}

/* The master the sentinels name has every replica online. The test's own restarted server
 * (c->master after a kill) is pointed at that master again when it is not: a lagging sentinel
 * may fail over a second time, promoting the other replica, and the restarted server would
 * then replicate from a replica, which WAIT on the master does not count. */
static bool replicas_back(void *arg) {
    cluster *c = arg;
    int port = named_port(c->sent[0].port);
    if (port == 0 || has_role(port, "master") != 1)
        return false;
    if (replicas_online(port) >= NREPL)
        return true;
    redisReply *r = eddy_test_cmd_at(c->master.port, "INFO replication");
    char want[32];
    snprintf(want, sizeof(want), "master_port:%d\r", port);
    bool pointed = r && r->type == REDIS_REPLY_STRING && strstr(r->str, want);
    if (r)
        freeReplyObject(r);
    if (!pointed) {
        r = eddy_test_cmd_at(c->master.port, "REPLICAOF 127.0.0.1 %d", port);
        if (r)
            freeReplyObject(r);
    }
    return false;
}

typedef struct after_failover {
    cluster *c;
    int new_port; /* the promoted replica's, once known */
    bool old_alive;
} after_failover;

/* The failover is over: every sentinel names the same new master, it says master, and the old
 * one, when alive, is a replica (so no later write can land on it). */
static bool failed_over(void *arg) {
    after_failover *a = arg;
    int port = named_port(a->c->sent[0].port);
    if (port == 0 || port == a->c->master.port)
        return false;
    for (int i = 1; i < NSENT; i++)
        if (named_port(a->c->sent[i].port) != port)
            return false;
    if (has_role(port, "master") != 1)
        return false;
    a->new_port = port;
    return !a->old_alive || has_role(a->c->master.port, "slave") == 1;
}

/* Marks in kept[] the "d-N" events the stream on the server at `port` holds. */
static void mark_kept(int port, const char *ns, bool *kept) {
    redisReply *r = eddy_test_cmd_at(port, "XRANGE {%s}:s:orders - +", ns);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "XRANGE on the new master");
    for (size_t e = 0; e < r->elements; e++) {
        redisReply *fields = r->element[e]->element[1];
        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
            const char *k = fields->element[f]->str, *v = fields->element[f + 1]->str;
            if (strcmp(k, "id") == 0 && v[0] == 'd' && v[1] == '-' && atoi(v + 2) < DURING_MAX)
                kept[atoi(v + 2)] = true;
        }
    }
    freeReplyObject(r);
}

enum how { BY_COMMAND, BY_KILL };

/* wait: settings.wait_replicas (0: none). With NREPL (every replica), a publish is acknowledged
 * only once every replica has it, the promoted one included: none acknowledged can be missing
 * from the stream once it is the master. */
static void failover_scenario(const driver *d, enum how how, unsigned wait) {
    cluster c;
    memset(&c, 0, sizeof(c));
    cluster_start(&c);
    seen *s = calloc(1, sizeof(*s));
    cr_assert(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    char ns[96];
    front f = bus_open(d, c.url, ns, sizeof(ns), s, wait);

    for (int i = 0; i < BEFORE; i++) {
        char id[16];
        snprintf(id, sizeof(id), "b-%d", i);
        cr_assert(publish_until_ok(&f, id));
    }
    cr_assert(eddy_test_wait_until(answered, &f, WAIT_MS), "a request is answered");
    /* Everything so far is on the replica too: it survives the failover. */
    redisReply *w = eddy_test_cmd_at(c.master.port, "WAIT %d %d", NREPL, WAIT_MS);
    cr_assert(w && w->type == REDIS_REPLY_INTEGER && w->integer >= NREPL, "WAIT every replica");
    freeReplyObject(w);

    pub_thread *p = calloc(1, sizeof(*p));
    cr_assert(p);
    p->f = &f;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_during, p), 0);
    cr_assert(eddy_test_wait_count(&p->ok, 1, WAIT_MS), "no publish before the failover");

    after_failover a = {&c, 0, how == BY_COMMAND};
    if (how == BY_COMMAND) {
        redisReply *r = eddy_test_cmd_at(c.sent[0].port, "SENTINEL FAILOVER %s", MASTER);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SENTINEL FAILOVER: %s",
                  r && r->str ? r->str : "no reply");
        freeReplyObject(r);
    } else {
        eddy_test_redis_kill(&c.master);
    }
    cr_assert(eddy_test_wait_until(failed_over, &a, WAIT_MS), "the replica became the master");

    atomic_store(&p->stop, true);
    pthread_join(th, NULL);
    if (wait && how == BY_KILL) { /* WAIT NREPL needs a replica again: a new one joins */
        char nport[16];
        snprintf(nport, sizeof(nport), "%d", a.new_port);
        const char *const extra[] = {"--replicaof", "127.0.0.1", nport, NULL};
        eddy_test_redis_start_with(&c.master, 0, extra);
    }
    /* The scenario's premise, not eddy's doing: with wait_replicas every replica, publishing
     * resumes once the sentinels and Redis have every replica back on the master. */
    if (wait)
        cr_assert(eddy_test_wait_until(replicas_back, &c, WAIT_MS),
                  "the master the sentinels name has %d replicas online", NREPL);
    for (int i = 0; i < AFTER; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a-%d", i);
        cr_assert(publish_until_ok(&f, id));
    }
    cr_expect(eddy_test_wait_until(answered, &f, WAIT_MS), "requests are answered again");
    cr_expect(before_and_after_consumed(s),
              "every message published before (replicated) and after the failover is consumed");

    /* During: what was acknowledged but is not in the new master's stream (the old master
     * took it, after the replica was promoted or before it had it), and of those what no
     * consumer saw either. */
    bool *kept = calloc(DURING_MAX, sizeof(bool));
    cr_assert(kept);
    int now_master = named_port(c.sent[0].port); /* a second failover may have followed */
    mark_kept(now_master ? now_master : a.new_port, ns, kept);
    int acked = 0, lost = 0, unseen = 0, extra = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < p->tried; i++) {
        acked += p->acked[i];
        lost += p->acked[i] && !kept[i];
        unseen += p->acked[i] && !kept[i] && !s->during[i];
        extra += !p->acked[i] && s->during[i]; /* failed, but it had been written */
    }
    free(kept);
    int deliveries = s->deliveries;
    pthread_mutex_unlock(&s->lock);
    printf("sentinel %s %s wait_replicas=%u: during the failover %d publishes, %d acknowledged, %d "
           "failed; %d acknowledged but not on the new master (%d of them never consumed); %d "
           "failed but delivered; %d deliveries in all\n",
           d->name, how == BY_COMMAND ? "FAILOVER" : "kill -9", wait, p->tried, acked, p->failed,
           lost, unseen, extra, deliveries);
    fflush(stdout);
    if (wait)
        cr_expect_eq(lost, 0, "with WAIT, every acknowledged publish is on the new master");

    d->free(f.b);
    free(p);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    cluster_stop(&c);
}

#define FOLLOW_AFTER 100 /* publishes acknowledged after the announcement, at least */
#define FOLLOW_MAX 20000

/* SENTINEL FAILOVER (to sentinel `leader`) with the old master alive: Sentinel reconfigures it
 * as a replica only seconds after it announced the switch (+switch-master), and until then it
 * takes writes that the new master never sees. Every publish that began once the leader named
 * the new master and that returned EDDY_OK must be in the new master's stream: the bus left
 * the old master as soon as the leader announced it, not when the old master was demoted.
 * Printed, not asserted: what was acknowledged before and is missing (replication is
 * asynchronous; eddy leaves the old master once the leader sent REPLICAOF NO ONE). */
static void follow_scenario(const driver *d, int leader) {
    cluster c;
    memset(&c, 0, sizeof(c));
    cluster_start(&c);
    seen *s = calloc(1, sizeof(*s));
    cr_assert(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    char ns[96];
    front f = bus_open(d, c.url, ns, sizeof(ns), s, 0);
    for (int i = 0; i < BEFORE; i++) {
        char id[16];
        snprintf(id, sizeof(id), "b-%d", i);
        cr_assert(publish_until_ok(&f, id));
    }
    redisReply *r = eddy_test_cmd_at(c.sent[leader].port, "SENTINEL FAILOVER %s", MASTER);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SENTINEL FAILOVER: %s",
              r && r->str ? r->str : "no reply");
    freeReplyObject(r);

    bool *acked = calloc(FOLLOW_MAX, sizeof(bool)), *after = calloc(FOLLOW_MAX, sizeof(bool));
    cr_assert(acked && after);
    int n = 0, acked_after = 0, new_port = 0;
    long long announced_at = -1, first_ok_after = -1, until = eddy_test_now_ms() + WAIT_MS;
    while (n < FOLLOW_MAX && acked_after < FOLLOW_AFTER && eddy_test_now_ms() < until) {
        if (announced_at < 0) { /* the failover's leader names another */
            int port = named_port(c.sent[leader].port);
            if (port && port != c.master.port) {
                new_port = port;
                announced_at = eddy_test_now_ms();
            }
        }
        char id[16];
        snprintf(id, sizeof(id), "d-%d", n);
        eddy_error err;
        after[n] = announced_at >= 0;
        acked[n] = fpublish(&f, id, &err) == EDDY_OK;
        if (acked[n] && after[n] && acked_after++ == 0)
            first_ok_after = eddy_test_now_ms();
        n++;
        if (!after[n - 1]) { /* before the announcement: a slower pace keeps n bounded */
            struct timespec pace = {0, 2000000};
            nanosleep(&pace, NULL);
        }
    }
    cr_assert_geq(announced_at, 0, "the sentinel announced the switch");
    cr_assert_eq(acked_after, FOLLOW_AFTER, "publishing resumed after the switch");
    int old_role_master = has_role(c.master.port, "master");

    bool *kept = calloc(DURING_MAX, sizeof(bool));
    cr_assert(kept && n <= DURING_MAX);
    mark_kept(new_port, ns, kept);
    int missing_after = 0, missing_before = 0, acked_before = 0;
    for (int i = 0; i < n; i++) {
        missing_after += acked[i] && after[i] && !kept[i];
        missing_before += acked[i] && !after[i] && !kept[i];
        acked_before += acked[i] && !after[i];
    }
    printf("sentinel %s follow (leader: sentinel %d): %d acknowledged before the announcement (%d "
           "of them not on the "
           "new master), %d after it (%d not on the new master); first acknowledged %lld ms after "
           "the announcement; the old master %s at the end\n",
           d->name, leader, acked_before, missing_before, acked_after, missing_after,
           first_ok_after - announced_at,
           old_role_master == 1 ? "still said master" : "was a replica by then");
    fflush(stdout);
    cr_expect_eq(missing_after, 0,
                 "every publish acknowledged after the announcement is on the new master");
    free(kept);
    free(acked);
    free(after);
    d->free(f.b);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    cluster_stop(&c);
}

Test(sentinel, blocking_follows_the_switch_while_the_old_master_answers, .timeout = 400) {
    follow_scenario(&blocking_driver, 0);
}
Test(sentinel, reactive_follows_the_switch_while_the_old_master_answers, .timeout = 400) {
    follow_scenario(&reactive_driver, 0);
}
/* The leader is a sentinel the bus did not ask (the URL lists it second). */
Test(sentinel, blocking_follows_a_switch_led_by_another_sentinel, .timeout = 400) {
    follow_scenario(&blocking_driver, 1);
}
Test(sentinel, reactive_follows_a_switch_led_by_another_sentinel, .timeout = 400) {
    follow_scenario(&reactive_driver, 1);
}

/* Every failover scenario on both front ends. */
#define SCENARIOS(front_end, drv)                                                                  \
    Test(sentinel, front_end##_failover_by_command_during_publish_consume_request,                 \
         .timeout = 400) {                                                                         \
        failover_scenario(&drv, BY_COMMAND, 0);                                                    \
    }                                                                                              \
    Test(sentinel, front_end##_failover_after_kill_9_of_the_master, .timeout = 400) {              \
        failover_scenario(&drv, BY_KILL, 0);                                                       \
    }                                                                                              \
    Test(sentinel, front_end##_failover_by_command_with_wait_keeps_acknowledged_publishes,         \
         .timeout = 400) {                                                                         \
        failover_scenario(&drv, BY_COMMAND, NREPL);                                                \
    }                                                                                              \
    Test(sentinel, front_end##_failover_after_kill_9_with_wait_keeps_acknowledged_publishes,       \
         .timeout = 400) {                                                                         \
        failover_scenario(&drv, BY_KILL, NREPL);                                                   \
    }

SCENARIOS(blocking, blocking_driver)
SCENARIOS(reactive, reactive_driver)

Test(sentinel, wait_settings_are_validated) {
    eddy_settings st;
    eddy_settings_init(&st);
    cr_expect_eq(st.wait_replicas, 0);
    cr_expect_eq(st.wait_timeout_ms, 1000);
    st.wait_replicas = 1;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "memory:// has no replicas"), "%s", err.detail);
    st.url = "redis://127.0.0.1:1";
    st.wait_timeout_ms = st.command_timeout_ms;
    cr_expect_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "wait_timeout_ms"), "%s", err.detail);
    st.wait_timeout_ms = 0;
    cr_expect_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
}

/* Without a replica, WAIT 1 cannot be met: the publish is stored but says EDDY_ERR_TIMEOUT. */
Test(sentinel, wait_without_a_replica_is_a_timeout, .timeout = 120) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    eddy_settings st;
    eddy_settings_init(&st);
    st.url = srv.url;
    char ns[96];
    st.ns = eddy_test_namespace(ns, sizeof(ns), "wait");
    st.wait_replicas = 1;
    st.wait_timeout_ms = 100;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    eddy_status rc = publish(bus, "w-1", &err);
    cr_expect_eq(rc, EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(rc), err.detail);
    cr_expect(strstr(err.detail, "0 of the 1 replicas"), "%s", err.detail);
    cr_expect_eq(eddy_test_redis_int(srv.url, "XLEN {%s}:s:orders", ns), 1, "stored all the same");
    eddy_bus_free(bus);
    eddy_test_redis_kill(&srv);
}

/* No sentinel can be asked, or none knows the name: a clear status naming each sentinel. */
Test(sentinel, connect_fails_clearly_when_no_sentinel_names_the_master, .timeout = 120) {
    cluster c;
    memset(&c, 0, sizeof(c));
    eddy_test_redis_start(&c.master, 0);
    sentinel_start(&c.sent[0], c.master.port);
    long long until = eddy_test_now_ms() + WAIT_MS;
    while (named_port(c.sent[0].port) != c.master.port && eddy_test_now_ms() < until) {
        struct timespec pause = {0, 50000000};
        nanosleep(&pause, NULL);
    }
    int dead = eddy_test_free_port();
    char url[256];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/nosuchmaster", dead,
             c.sent[0].port);
    eddy_settings st;
    eddy_settings_init(&st);
    st.url = url;
    char ns[96];
    st.ns = eddy_test_namespace(ns, sizeof(ns), "sentx");
    st.connect_timeout_ms = 5000;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status s1 = eddy_bus_new(&st, NULL, 0, &bus, &err); /* it connects at once */
    if (s1 == EDDY_OK) {
        s1 = publish(bus, "x-1", &err);
        eddy_bus_free(bus);
    }
    cr_expect_eq(s1, EDDY_ERR_BACKEND, "%s: %s", eddy_status_name(s1), err.detail);
    cr_expect(strstr(err.detail, "no sentinel named the master 'nosuchmaster'"), "%s", err.detail);
    cr_expect(strstr(err.detail, "does not know the master"), "%s", err.detail);
    char dead_at[32];
    snprintf(dead_at, sizeof(dead_at), "127.0.0.1:%d:", dead);
    cr_expect(strstr(err.detail, dead_at), "%s", err.detail);

    /* The right name through the live sentinel, after the dead one: it works. */
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/%s", dead,
             c.sent[0].port, MASTER);
    cr_assert_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(publish(bus, "x-2", &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(bus);
    cluster_stop(&c);
}

/* rediss-sentinel://: TLS to the sentinel and to the master it names (an address: the
 * certificate's IP name is checked). */
Test(sentinel, tls_to_the_sentinel_and_the_master, .timeout = 200) {
    eddy_test_tls_files files;
    eddy_test_tls_certs(&files);
    eddy_test_redis master;
    eddy_test_tls_redis_start(&master, &files, files.server_cert, 0);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "tls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-replication yes\n",
             files.server_cert, files.server_key, files.ca);
    sentinel_proc sp;
    sentinel_start_conf(&sp, master.port, true, conf);
    char url[128];
    snprintf(url, sizeof(url), "rediss-sentinel://127.0.0.1:%d/%s", sp.port, MASTER);
    eddy_settings st;
    eddy_settings_init(&st);
    st.url = url;
    char ns[96];
    st.ns = eddy_test_namespace(ns, sizeof(ns), "sentls");
    st.tls_cacert = files.ca;
    st.tls_cert = files.client_cert;
    st.tls_key = files.client_key;
    st.log = eddy_test_log;
    st.log_user = "sentinel-tls";
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status rc;
    long long until = eddy_test_now_ms() + WAIT_MS;
    while ((rc = eddy_bus_new(&st, NULL, 0, &bus, &err)) != EDDY_OK && eddy_test_now_ms() < until) {
        struct timespec pause = {0, 100000000}; /* the sentinel is starting */
        nanosleep(&pause, NULL);
    }
    cr_assert_eq(rc, EDDY_OK, "%s", err.detail);
    cr_expect_eq(publish(bus, "t-1", &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(bus);

    /* Without the CA, the sentinel's certificate is refused: the detail says so. */
    st.tls_cacert = NULL;
    cr_expect_neq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_OK);
    cr_expect(strstr(err.detail, "certificate"), "%s", err.detail);
    sentinel_kill(&sp);
    eddy_test_redis_kill(&master);
    eddy_test_tls_certs_remove(&files);
    char rm[256];
    snprintf(rm, sizeof(rm), "rm -rf %s", sp.dir);
    (void)!system(rm);
}

/* A sentinel with a password (requirepass): refused without settings.sentinel_password
 * (EDDY_ERR_AUTH), used with it; the URL's credentials are the master's, which has none. */
Test(sentinel, sentinel_password_is_the_sentinels, .timeout = 120) {
    eddy_test_redis master;
    eddy_test_redis_start(&master, 0);
    sentinel_proc sp;
    sentinel_start_conf(&sp, master.port, false, "requirepass s3cret-sentinel\n");
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/%s", sp.port, MASTER);
    eddy_settings st;
    eddy_settings_init(&st);
    st.url = url;
    char ns[96];
    st.ns = eddy_test_namespace(ns, sizeof(ns), "sentpw");
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status rc;
    long long until = eddy_test_now_ms() + WAIT_MS;
    while ((rc = eddy_bus_new(&st, NULL, 0, &bus, &err)) == EDDY_ERR_IO &&
           eddy_test_now_ms() < until) {
        struct timespec pause = {0, 100000000}; /* the sentinel is starting */
        nanosleep(&pause, NULL);
    }
    cr_expect_eq(rc, EDDY_ERR_AUTH, "%s: %s", eddy_status_name(rc), err.detail);
    cr_expect(strstr(err.detail, "NOAUTH"), "%s", err.detail);
    if (rc == EDDY_OK)
        eddy_bus_free(bus);
    st.sentinel_password = "s3cret-sentinel";
    cr_assert_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(publish(bus, "p-1", &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(bus);
    st.sentinel_password = "not-the-pw";
    cr_expect_eq(eddy_bus_new(&st, NULL, 0, &bus, &err), EDDY_ERR_AUTH, "%s", err.detail);
    cr_expect(!strstr(err.detail, "not-the-pw"), "no password in the detail: %s", err.detail);
    sentinel_kill(&sp);
    eddy_test_redis_kill(&master);
    char rm[256];
    snprintf(rm, sizeof(rm), "rm -rf %s", sp.dir);
    (void)!system(rm);
}

/* The first sentinel is down, the second names the master: both front ends go on to it (the
 * reactive one watches the next sentinel's socket, which may reuse the closed one's number). */
static void dead_sentinel_first(const driver *d) {
    eddy_test_redis master;
    eddy_test_redis_start(&master, 0);
    sentinel_proc sp;
    sentinel_start(&sp, master.port);
    char url[160];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/%s",
             eddy_test_free_port(), sp.port, MASTER);
    seen *s = calloc(1, sizeof(*s));
    cr_assert(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    char ns[96];
    long long until = eddy_test_now_ms() + WAIT_MS;
    while (named_port(sp.port) != master.port && eddy_test_now_ms() < until) {
        struct timespec pause = {0, 50000000}; /* the sentinel is starting */
        nanosleep(&pause, NULL);
    }
    front f = bus_open(d, url, ns, sizeof(ns), s, 0);
    for (int i = 0; i < AFTER; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a-%d", i);
        cr_assert(publish_until_ok(&f, id));
    }
    cr_expect(eddy_test_wait_until(answered, &f, WAIT_MS), "a request is answered");
    d->free(f.b);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    sentinel_kill(&sp);
    eddy_test_redis_kill(&master);
    char rm[256];
    snprintf(rm, sizeof(rm), "rm -rf %s", sp.dir);
    (void)!system(rm);
}

Test(sentinel, blocking_dead_sentinel_first, .timeout = 120) {
    dead_sentinel_first(&blocking_driver);
}
Test(sentinel, reactive_dead_sentinel_first, .timeout = 120) {
    dead_sentinel_first(&reactive_driver);
}
