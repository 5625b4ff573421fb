/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection state a bus reports (settings.on_connection, eddy_*bus_connection_stats), on
 * both front ends: a password changed under a running bus is one authentication failure (one
 * callback, one log line, however many retries) and restoring it reconnects; a TCP server that
 * is not Redis fails the start at once with EDDY_ERR_PROTOCOL; memory:// connects once. Each
 * redis case runs its own redis-server (the fixture's must keep its password). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "recorder.h"
#include "redis_server.h"

#define MAX_SEEN 64

/* What the callback and the log hook saw. */
typedef struct seen {
    pthread_mutex_t lock;
    eddy_connection_state states[MAX_SEEN];
    eddy_status why[MAX_SEEN];
    size_t n;
    int wrongpass_lines; /* log lines at INFO or above naming WRONGPASS */
    int not_redis_lines;
    int noperm_lines; /* log lines at INFO or above naming NOPERM */
    int lost_lines;   /* warnings that a connection was lost or failed */
    /* eddy's debug line at each connect: its connection and when, and the closest spacing. */
    const void *conn[32];
    long long at[32];
    long long closest; /* ms between two connects of one connection, the least seen */
    int connects;
} seen;

static seen rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_connection(eddy_connection_state state, const eddy_error *why, void *user) {
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->n < MAX_SEEN) {
        s->states[s->n] = state;
        s->why[s->n] = why ? why->status : EDDY_OK;
        s->n++;
    }
    pthread_mutex_unlock(&s->lock);
}

static void on_log(eddy_log_level level, const char *msg, void *user) {
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (level >= EDDY_LOG_INFO && strstr(msg, "WRONGPASS"))
        s->wrongpass_lines++;
    if (level >= EDDY_LOG_INFO && strstr(msg, "not a Redis server"))
        s->not_redis_lines++;
    if (level >= EDDY_LOG_INFO && strstr(msg, "NOPERM"))
        s->noperm_lines++;
    if (level == EDDY_LOG_WARN && strstr(msg, "reconnecting"))
        s->lost_lines++;
    void *conn = NULL;
    if (level == EDDY_LOG_DEBUG && sscanf(msg, "connecting (connection %p)", &conn) == 1) {
        long long now = eddy_test_now_ms();
        int i = 0;
        while (i < 32 && s->conn[i] && s->conn[i] != conn)
            i++;
        if (i < 32) {
            if (s->conn[i] == conn && (s->closest < 0 || now - s->at[i] < s->closest))
                s->closest = now - s->at[i];
            s->conn[i] = conn;
            s->at[i] = now;
        }
        s->connects++;
    }
    pthread_mutex_unlock(&s->lock);
    eddy_test_log(level, msg, NULL);
}

static size_t count_state(eddy_connection_state st) {
    pthread_mutex_lock(&rec.lock);
    size_t k = 0;
    for (size_t i = 0; i < rec.n; i++)
        k += rec.states[i] == st;
    pthread_mutex_unlock(&rec.lock);
    return k;
}

static eddy_connection_state last_state(void) {
    pthread_mutex_lock(&rec.lock);
    eddy_connection_state st = rec.n ? rec.states[rec.n - 1] : EDDY_CONN_CONNECTING;
    pthread_mutex_unlock(&rec.lock);
    return st;
}

typedef struct waiting {
    eddy_connection_state state;
    const driver *d;
    tbus *b;
    uint64_t failures;
} waiting;

static bool saw_state(void *user) { return count_state(((waiting *)user)->state) > 0; }

static eddy_connection_stats stats_of(const driver *d, tbus *b) {
    eddy_connection_stats cs;
    eddy_status st = strcmp(d->name, "blocking") == 0
                         ? eddy_bus_connection_stats(d->native(b), &cs)
                         : eddy_rbus_connection_stats(d->native(b), &cs);
    cr_assert_eq(st, EDDY_OK);
    return cs;
}

static bool failed_often(void *user) {
    waiting *w = user;
    return stats_of(w->d, w->b).connect_failures >= w->failures;
}

static eddy_status handler(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    return EDDY_OK;
}

static void settings_for(eddy_settings *s, const char *url, const char *ns) {
    eddy_settings_init(s);
    s->url = url;
    s->ns = ns;
    s->source = "/tests";
    s->block_ms = 200;
    s->connect_timeout_ms = 1000;
    s->reconnect_min_ms = 20;
    s->reconnect_max_ms = 200;
    s->log = on_log;
    s->log_user = &rec;
    s->on_connection = on_connection;
    s->on_connection_user = &rec;
}

static void spec_for(eddy_subscription_spec *sp) {
    eddy_subscription_spec_init(sp);
    sp->name = "work";
    sp->pattern = "jobs";
    sp->group = "workers";
    sp->delivery = EDDY_AT_LEAST_ONCE;
    sp->handler = handler;
}

/* Runs a command on the server as the default user, with password pw (NULL: none); true when
 * it succeeded. */
static bool admin(int port, const char *pw, const char *cmd) {
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err);
    bool ok = true;
    redisReply *r;
    if (pw) {
        r = redisCommand(c, "AUTH %s", pw);
        ok = r && r->type != REDIS_REPLY_ERROR;
        if (r)
            freeReplyObject(r);
    }
    if (ok) {
        r = redisCommand(c, cmd);
        ok = r && r->type != REDIS_REPLY_ERROR;
        if (r)
            freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

/* A bus with one subscription on url, started. */
static tbus *started_bus(const driver *d, const char *url) {
    char ns[64];
    eddy_settings s;
    settings_for(&s, url, eddy_test_namespace(ns, sizeof(ns), "connstate"));
    eddy_subscription_spec sp;
    spec_for(&sp);
    tbus *b = NULL;
    eddy_error err;
    cr_assert_eq(d->bus_new(&s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(b, &err), EDDY_OK, "%s", err.detail);
    return b;
}

static void password_changed(const driver *d) {
    const char *const extra[] = {"--requirepass", "pw1", NULL};
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, extra);
    char url[128];
    snprintf(url, sizeof(url), "redis://:pw1@127.0.0.1:%d", srv.port);
    tbus *b = started_bus(d, url);
    waiting w = {.state = EDDY_CONN_CONNECTED, .d = d, .b = b};
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000));
    eddy_connection_stats before = stats_of(d, b);
    cr_expect_geq(before.connects, 2); /* a reader and the control connection at least */

    /* The password changes and every connection is dropped: they all retry, and fail. */
    cr_assert(admin(srv.port, "pw1", "CONFIG SET requirepass pw2"));
    cr_assert(admin(srv.port, "pw2", "CLIENT KILL TYPE normal"));
    w.state = EDDY_CONN_AUTH_FAILED;
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000), "no authentication failure reported");
    w.failures = before.connect_failures + 6; /* several retries of several connections */
    cr_assert(eddy_test_wait_until(failed_often, &w, 30000));
    cr_expect_eq(count_state(EDDY_CONN_AUTH_FAILED), 1,
                 "one authentication failure, not one per retry");
    pthread_mutex_lock(&rec.lock);
    int lines = rec.wrongpass_lines;
    pthread_mutex_unlock(&rec.lock);
    cr_expect_eq(lines, 1, "the refusal is logged once, not per retry (%d lines)", lines);
    eddy_connection_stats during = stats_of(d, b);
    cr_expect_eq(during.state, EDDY_CONN_AUTH_FAILED);
    cr_expect_geq(during.disconnects, 2);

    /* The password comes back: reconnected. */
    cr_assert(admin(srv.port, "pw2", "CONFIG SET requirepass pw1"));
    w.state = EDDY_CONN_RECONNECTED;
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000), "no reconnect reported");
    eddy_connection_stats after = stats_of(d, b);
    cr_expect(after.state == EDDY_CONN_RECONNECTED);
    cr_expect_gt(after.connects, during.connects);
    cr_expect_gt(after.disconnected_ms, 0);
    cr_expect_eq(count_state(EDDY_CONN_AUTH_FAILED), 1);
    cr_expect_eq(count_state(EDDY_CONN_CONNECTED), 1);
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.states[0], EDDY_CONN_CONNECTED);
    for (size_t i = 0; i < rec.n; i++)
        if (rec.states[i] == EDDY_CONN_AUTH_FAILED)
            cr_expect_eq(rec.why[i], EDDY_ERR_AUTH);
    pthread_mutex_unlock(&rec.lock);

    cr_expect_eq(d->stop(b), EDDY_OK);
    d->free(b);
    eddy_test_redis_kill(&srv);
}

Test(conn_state, password_changed_blocking, .timeout = 120) { password_changed(&blocking_driver); }
Test(conn_state, password_changed_reactive, .timeout = 120) { password_changed(&reactive_driver); }

/* ---- an ACL that stops allowing the subscription's reads --------------------------------- */

/* rejected_calls of XREADGROUP in INFO commandstats (Redis 7). */
static long long rejected_reads(int port) {
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err);
    redisReply *r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "cmdstat_xreadgroup:");
    const char *rej = at ? strstr(at, "rejected_calls=") : NULL;
    long long n = rej ? atoll(rej + strlen("rejected_calls=")) : 0;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

typedef struct rejecting {
    int port;
    long long want;
} rejecting;

static bool rejected_enough(void *user) {
    rejecting *r = user;
    return rejected_reads(r->port) >= r->want;
}

static int handled_count;
static eddy_status counting(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    __atomic_add_fetch(&handled_count, 1, __ATOMIC_SEQ_CST);
    return EDDY_OK;
}

static bool handled_one(void *user) {
    (void)user;
    return __atomic_load_n(&handled_count, __ATOMIC_SEQ_CST) >= 1;
}

static void permission_taken(const driver *d) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    char ns[64];
    eddy_settings s;
    settings_for(&s, srv.url, eddy_test_namespace(ns, sizeof(ns), "connstate"));
    eddy_subscription_spec sp;
    spec_for(&sp);
    sp.handler = counting;
    tbus *b = NULL;
    eddy_error err;
    cr_assert_eq(d->bus_new(&s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(b, &err), EDDY_OK, "%s", err.detail);
    cr_assert(admin(srv.port, NULL, "ACL SETUSER default -xreadgroup"));
    rejecting rj = {.port = srv.port, .want = 4}; /* several refused reads */
    cr_assert(eddy_test_wait_until(rejected_enough, &rj, 30000));
    pthread_mutex_lock(&rec.lock);
    int lines = rec.noperm_lines;
    pthread_mutex_unlock(&rec.lock);
    cr_expect_eq(lines, 1, "the refusal is logged once, not per retry (%d lines)", lines);
    cr_assert(admin(srv.port, NULL, "ACL SETUSER default +xreadgroup"));
    eddy_event *ev = make_event("after", "t");
    cr_assert_eq(d->publish(b, "jobs", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(eddy_test_wait_until(handled_one, NULL, 20000), "reading did not resume");
    cr_expect_eq(d->stop(b), EDDY_OK);
    d->free(b);
    eddy_test_redis_kill(&srv);
}

Test(conn_state, permission_taken_blocking, .timeout = 90) { permission_taken(&blocking_driver); }
Test(conn_state, permission_taken_reactive, .timeout = 90) { permission_taken(&reactive_driver); }

/* ---- a TCP server that is not Redis: it answers every connection with HTTP ---------------- */

typedef struct garbage_server {
    int fd;
    int port;
    pthread_t thread;
    int conns[256];
    int nconns;
} garbage_server;

static void *serve_garbage(void *arg) {
    garbage_server *g = arg;
    for (;;) {
        int c = accept(g->fd, NULL, NULL);
        if (c < 0)
            return NULL; /* the listening socket was shut down */
        static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        if (write(c, reply, sizeof(reply) - 1) < 0) {
            close(c);
            continue;
        }
        if (g->nconns < 256)
            g->conns[g->nconns++] = c; /* kept open: the client sees the bytes, not a reset */
        else
            close(c);
    }
}

static void garbage_start(garbage_server *g) {
    memset(g, 0, sizeof(*g));
    g->fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(g->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(g->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(g->fd, 64), 0);
    socklen_t len = sizeof(a);
    cr_assert_eq(getsockname(g->fd, (struct sockaddr *)&a, &len), 0);
    g->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&g->thread, NULL, serve_garbage, g), 0);
}

static void garbage_stop(garbage_server *g) {
    shutdown(g->fd, SHUT_RDWR);
    pthread_join(g->thread, NULL);
    close(g->fd);
    for (int i = 0; i < g->nconns; i++)
        close(g->conns[i]);
}

static void not_redis(const driver *d) {
    garbage_server g;
    garbage_start(&g);
    char url[128], ns[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", g.port);
    eddy_settings s;
    settings_for(&s, url, eddy_test_namespace(ns, sizeof(ns), "connstate"));
    /* Long enough that waiting it out would be seen: the ready timeout then says EDDY_ERR_IO. */
    s.connect_timeout_ms = 5000;
    s.reconnect_max_ms = 5000;
    eddy_subscription_spec sp;
    spec_for(&sp);
    tbus *b = NULL;
    eddy_error err;
    /* The blocking bus connects its publishing connection when it is made: it fails there. */
    eddy_status st = d->bus_new(&s, &sp, 1, &b, &err);
    if (st == EDDY_OK)
        st = d->start(b, &err);
    cr_expect_eq(st, EDDY_ERR_PROTOCOL, "%s (%s)", eddy_status_name(st), err.detail);
    cr_expect_eq(count_state(EDDY_CONN_NOT_REDIS), 1);
    cr_expect_eq(last_state(), EDDY_CONN_NOT_REDIS);
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.not_redis_lines, 1);
    pthread_mutex_unlock(&rec.lock);
    if (b) {
        eddy_connection_stats cs = stats_of(d, b);
        cr_expect_eq(cs.state, EDDY_CONN_NOT_REDIS);
        cr_expect_geq(cs.connect_failures, 1);
        cr_expect_eq(cs.connects, 0);
    }
    if (b)
        d->free(b);
    garbage_stop(&g);
}

Test(conn_state, not_redis_blocking, .timeout = 60) { not_redis(&blocking_driver); }
Test(conn_state, not_redis_reactive, .timeout = 60) { not_redis(&reactive_driver); }

/* ---- memory:// -------------------------------------------------------------------------- */

static void memory_connects_once(const driver *d) {
    char url[64];
    snprintf(url, sizeof(url), "memory://connstate-%d", (int)getpid());
    tbus *b = started_bus(d, url);
    cr_expect_eq(count_state(EDDY_CONN_CONNECTED), 1);
    pthread_mutex_lock(&rec.lock);
    cr_expect_eq(rec.n, 1);
    pthread_mutex_unlock(&rec.lock);
    eddy_connection_stats cs = stats_of(d, b);
    cr_expect_eq(cs.state, EDDY_CONN_CONNECTED);
    cr_expect_geq(cs.connects, 1);
    cr_expect_eq(cs.disconnects, 0);
    cr_expect_eq(d->stop(b), EDDY_OK);
    d->free(b);
}

Test(conn_state, memory_blocking) { memory_connects_once(&blocking_driver); }
Test(conn_state, memory_reactive) { memory_connects_once(&reactive_driver); }

/* ---- an outage: one change each way, one warning, reconnects spaced by the backoff --------- */

typedef struct flowing {
    const driver *d;
    tbus *b;
    volatile bool stop;
    atomic_int ok;
    int failed;
} flowing;

static void *publish_on(void *arg) {
    flowing *f = arg;
    for (int i = 0; !f->stop && i < 100000; i++) {
        eddy_event *ev = NULL;
        char id[32];
        snprintf(id, sizeof(id), "o-%d", i);
        ev = eddy_event_new();
        cr_assert(ev);
        eddy_event_set_id(ev, id);
        eddy_event_set_source(ev, "/tests");
        eddy_event_set_type(ev, "outage");
        eddy_error err;
        if (f->d->publish(f->b, "jobs", ev, &err) == EDDY_OK)
            f->ok++;
        else
            f->failed++;
        eddy_event_free(ev);
        struct timespec t = {0, 2000000};
        nanosleep(&t, NULL);
    }
    return NULL;
}

static void outage(const driver *d) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    tbus *b = started_bus(d, srv.url);
    waiting w = {.state = EDDY_CONN_CONNECTED, .d = d, .b = b};
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000));
    pthread_mutex_lock(&rec.lock);
    rec.closest = -1;
    pthread_mutex_unlock(&rec.lock);
    flowing f = {.d = d, .b = b};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_on, &f), 0);
    cr_assert(eddy_test_wait_count(&f.ok, 1, 20000), "no publish went through before the outage");

    /* The server goes away for about a second while every connection keeps trying. */
    int port = srv.port;
    eddy_test_redis_kill(&srv);
    w.state = EDDY_CONN_DISCONNECTED;
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000), "no disconnect reported");
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    eddy_test_redis_start(&srv, port);
    w.state = EDDY_CONN_RECONNECTED;
    cr_assert(eddy_test_wait_until(saw_state, &w, 20000), "no reconnect reported");
    /* A while after the reconnect, for any second change or warning to show. */
    struct timespec some = {0, 300000000};
    nanosleep(&some, NULL);
    f.stop = true;
    pthread_join(th, NULL);

    cr_expect_eq(count_state(EDDY_CONN_DISCONNECTED), 1, "one outage, one disconnected change");
    cr_expect_eq(count_state(EDDY_CONN_RECONNECTED), 1, "one outage, one reconnected change");
    eddy_connection_stats cs = stats_of(d, b);
    pthread_mutex_lock(&rec.lock);
    int lost_lines = rec.lost_lines, connects = rec.connects;
    long long closest = rec.closest;
    pthread_mutex_unlock(&rec.lock);
    cr_expect_eq(lost_lines, 1, "one warning for the outage, not one per retry (%d)", lost_lines);
    cr_expect_gt(cs.connect_failures, 0, "the connections retried while the server was away");
    /* reconnect_min_ms is 20: no connection reconnects sooner than half of it after its last
     * connect (the backoff's jitter draws from [min/2, min]). */
    cr_expect(closest >= 10,
              "a connection reconnected %lld ms after its previous connect (%d "
              "connects)",
              closest, connects);
    cr_expect_gt(atomic_load(&f.ok), 0);
    printf("outage %s: %d connects, closest %lld ms apart on one connection, %llu failed "
           "connects, %d publishes ok, %d failed\n",
           d->name, connects, closest, (unsigned long long)cs.connect_failures, atomic_load(&f.ok),
           f.failed);
    cr_expect_eq(d->stop(b), EDDY_OK);
    d->free(b);
    eddy_test_redis_kill(&srv);
}

Test(conn_state, outage_blocking, .timeout = 120) { outage(&blocking_driver); }
Test(conn_state, outage_reactive, .timeout = 120) { outage(&reactive_driver); }
