/* SPDX-License-Identifier: BSD-3-Clause */
/* sentinel_failover, sentinel_kill: 1 master + 2 replicas + 3 redis-sentinel processes started
 * here on free loopback ports; a bus on redis-sentinel:// consumes one subject (Competing, at
 * least once) while a thread publishes to it every millisecond, recording every publish that
 * returned EDDY_OK. Then the master is failed over (SENTINEL FAILOVER to a sentinel the bus
 * does not ask first, or in the long profile to each in turn, the old master staying up) or killed
 * (kill -9), once without wait_replicas and once with wait_replicas 2 (every replica), each on a
 * fresh set of servers.
 *
 * FIG sentinel_<how> frontend=<f> wait=<n> leader=<sentinel, -1 for a kill>: acked (publishes that
 * returned EDDY_OK), missing (acknowledged, not in the final master's stream), missing_late (of
 * those, ones that began more than 100 ms after the promotion: "the switch", the moment the
 * scenario saw a replica say ROLE master), lost (acknowledged, never consumed), dup (consumptions
 * beyond the first), resume_ms (from the promotion to the first publish begun after it that
 * returned EDDY_OK), gap_ms (the longest time without an acknowledged publish), conn_changes
 * (on_connection calls), connects (the bus's connects, any connection: eddy's debug line per
 * connect attempt is the clock), fast_reconnects (connects that began within 10 ms of the same
 * connection's previous one; every reconnect waits at least 20 ms here).
 *
 * Checked (what was lost, never how fast): with wait_replicas 2, nothing acknowledged is missing
 * and nothing acknowledged went unconsumed; in every run, what the final master holds is
 * consumed, publishing resumes (within a generous bound), and no connection reconnects within
 * 10 ms of its previous connect. With kill -9 and wait_replicas 2 a
 * replica is gone, so WAIT 2 cannot be met: a new one is started (as an operator would) once the
 * promotion is seen, and resume_ms includes its sync. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.sentinel"
#define GROUP "sentinel"
#define MASTER "mymaster"
#define CONNS 64 /* connections told apart for fast_reconnects (a bus here has a handful) */
#define NSENT 3
#define NREPL 2
#define MAX_PUB 120000 /* 1 ms apart: two minutes, longer than any run */
#define WAIT_MS 60000  /* every wait's bound: a loaded machine's worst */

typedef struct sentinel_proc {
    pid_t pid;
    int port;
    char dir[160];
} sentinel_proc;

typedef struct servers {
    fx_redis nodes[NREPL + 2]; /* [0] the master, [1..NREPL] replicas, [NREPL+1] a replacement */
    int nnodes;
    sentinel_proc sent[NSENT];
    char url[256];
} servers;

/* ---- servers ------------------------------------------------------------------------------ */

static int role_is(const fx_redis *r, const char *role) {
    redisReply *rep = fx_cmd(r, "ROLE");
    int v = -1;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
        rep->element[0]->type == REDIS_REPLY_STRING)
        v = strcmp(rep->element[0]->str, role) == 0;
    if (rep)
        freeReplyObject(rep);
    return v;
}

static redisReply *sentinel_cmd(const sentinel_proc *sp, const char *fmt, const char *arg) {
    fx_redis as = {.port = sp->port};
    return fx_cmd(&as, fmt, arg);
}

static int named_port(const sentinel_proc *sp) {
    redisReply *r = sentinel_cmd(sp, "SENTINEL get-master-addr-by-name %s", MASTER);
    int port = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

/* The port every sentinel names as the master, 0 while they disagree. */
static int agreed_port(const servers *sv) {
    int port = named_port(&sv->sent[0]);
    for (int i = 1; i < NSENT && port > 0; i++)
        if (named_port(&sv->sent[i]) != port)
            port = 0;
    return port;
}

/* The node (not the old master) listening on port, or NULL. */
static fx_redis *node_at(servers *sv, int port) {
    for (int i = 1; i < sv->nnodes; i++)
        if (sv->nodes[i].port == port)
            return &sv->nodes[i];
    return NULL;
}

/* Points the fresh replica at the master the sentinels agree on when that changed: they only
 * reconfigure replicas of the master they failed over from, and one started under a replica
 * that a second failover left behind would never count in the new master's WAIT. */
static void follow_agreed(servers *sv, fx_redis *fresh, int *following) {
    int port = agreed_port(sv);
    if (port <= 0 || port == *following)
        return;
    redisReply *r = fx_cmd(fresh, "REPLICAOF 127.0.0.1 %d", port);
    if (r && r->type == REDIS_REPLY_STATUS)
        *following = port;
    if (r)
        freeReplyObject(r);
}

static size_t known(const sentinel_proc *sp, const char *what) {
    char fmt[64];
    snprintf(fmt, sizeof(fmt), "SENTINEL %s %%s", what);
    redisReply *r = sentinel_cmd(sp, fmt, MASTER);
    size_t n = r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    if (r)
        freeReplyObject(r);
    return n;
}

static bool replicating(const fx_redis *r) {
    if (role_is(r, "slave") != 1)
        return false;
    redisReply *rep = fx_cmd(r, "INFO replication");
    bool up = rep && rep->type == REDIS_REPLY_STRING && strstr(rep->str, "master_link_status:up");
    if (rep)
        freeReplyObject(rep);
    return up;
}

static void sentinel_start(sentinel_proc *sp, int master_port) {
    sp->port = fx_free_port();
    char name[32];
    snprintf(name, sizeof(name), "sentinel-%d", sp->port);
    fx_scratch(sp->dir, sizeof(sp->dir), name);
    char path[200];
    snprintf(path, sizeof(path), "%s/sentinel.conf", sp->dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sentinel: cannot write %s\n", path);
        exit(2);
    }
    fprintf(f,
            "port %d\nbind 127.0.0.1\ndir %s\nlogfile sentinel.log\n"
            "sentinel monitor %s 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds %s 1000\n"
            "sentinel failover-timeout %s 10000\n"
            "sentinel parallel-syncs %s 1\n",
            sp->port, sp->dir, MASTER, master_port, MASTER, MASTER, MASTER);
    fclose(f);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sentinel: fork failed\n");
        exit(2);
    }
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

static void sentinel_kill(sentinel_proc *sp) {
    if (sp->pid > 0) {
        kill(sp->pid, SIGKILL);
        waitpid(sp->pid, NULL, 0);
        sp->pid = 0;
    }
}

/* The replicas replicate, and every sentinel names the master and knows both replicas and the
 * other sentinels (a failover needs them). */
static bool servers_ready(const servers *sv) {
    for (int i = 1; i <= NREPL; i++)
        if (!replicating(&sv->nodes[i]))
            return false;
    for (int i = 0; i < NSENT; i++)
        if (named_port(&sv->sent[i]) != sv->nodes[0].port ||
            known(&sv->sent[i], "replicas") < NREPL || known(&sv->sent[i], "sentinels") < NSENT - 1)
            return false;
    return true;
}

static bool servers_start(servers *sv) {
    memset(sv, 0, sizeof(*sv));
    fx_redis_start(&sv->nodes[0], NULL);
    static char mport[16];
    snprintf(mport, sizeof(mport), "%d", sv->nodes[0].port);
    static const char *replica_of[] = {"--replicaof", "127.0.0.1", mport, NULL};
    for (int i = 1; i <= NREPL; i++)
        fx_redis_start(&sv->nodes[i], replica_of);
    sv->nnodes = NREPL + 1;
    int n = snprintf(sv->url, sizeof(sv->url), "redis-sentinel://");
    for (int i = 0; i < NSENT; i++) {
        sentinel_start(&sv->sent[i], sv->nodes[0].port);
        n += snprintf(sv->url + n, sizeof(sv->url) - (size_t)n, "%s127.0.0.1:%d", i ? "," : "",
                      sv->sent[i].port);
    }
    snprintf(sv->url + n, sizeof(sv->url) - (size_t)n, "/%s", MASTER);
    long long until = fx_now_ms() + WAIT_MS;
    while (!servers_ready(sv))
        if (fx_now_ms() > until)
            return false;
        else
            fx_sleep_ms(50);
    return true;
}

static void servers_stop(servers *sv) {
    for (int i = 0; i < NSENT; i++) {
        sentinel_kill(&sv->sent[i]);
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sv->sent[i].dir);
        if (system(cmd) != 0)
            fprintf(stderr, "sentinel: could not remove %s\n", sv->sent[i].dir);
    }
    for (int i = 0; i < sv->nnodes; i++)
        fx_redis_stop(&sv->nodes[i]);
}

/* ---- the bus and its publisher ------------------------------------------------------------ */

typedef struct run {
    fx_acks acks;
    long long *began, *ended; /* each publish's times (fx_now_ms) */
    eddy_status *status;      /* and what it returned */
    atomic_int tried;
    atomic_bool stop;
    const driver *dr;
    tbus *bus;
    atomic_int conn_changes;
    pthread_mutex_t lock; /* the connect clocks below, by connection */
    void *conn[CONNS];
    long long last[CONNS];
    int fast_reconnects, connects;
} run;

static eddy_status consume(eddy_delivery *d, void *user) {
    fx_acks_consumed(&((run *)user)->acks, eddy_event_id(eddy_delivery_event(d)));
    return EDDY_OK;
}

static void on_connection(eddy_connection_state state, const eddy_error *why, void *user) {
    (void)state;
    atomic_fetch_add(&((run *)user)->conn_changes, 1);
}

static run *the_run; /* the log hook's (settings.log_user names the scenario for fx_log) */

/* Counts the bus's connects, and those that came within 10 ms of the same connection's
 * previous one, by the debug line each connect attempt begins with. */
static void log_hook(eddy_log_level level, const char *msg, void *user) {
    void *conn = NULL;
    if (level == EDDY_LOG_DEBUG && sscanf(msg, "connecting (connection %p)", &conn) == 1) {
        run *u = the_run;
        long long now = fx_now_ms();
        pthread_mutex_lock(&u->lock);
        u->connects++;
        int i = 0;
        while (i < CONNS && u->conn[i] && u->conn[i] != conn)
            i++;
        if (i < CONNS) {
            u->fast_reconnects += u->conn[i] == conn && now - u->last[i] < 10;
            u->conn[i] = conn;
            u->last[i] = now;
        }
        pthread_mutex_unlock(&u->lock);
        return;
    }
    fx_log(level, msg, user);
}

static void *publisher(void *arg) {
    run *u = arg;
    for (int i = 0; i < MAX_PUB && !atomic_load(&u->stop); i++) {
        eddy_event *ev = fx_event('p', (unsigned long)i, "faults.sentinel", "x");
        eddy_error err;
        u->began[i] = fx_now_ms();
        eddy_status st = u->dr->publish(u->bus, SUBJECT, ev, &err);
        u->ended[i] = fx_now_ms();
        eddy_event_free(ev);
        u->status[i] = st;
        u->acks.acked[i] = st == EDDY_OK;
        atomic_store(&u->tried, i + 1);
        fx_sleep_ms(1);
    }
    return NULL;
}

/* Marks in kept[] the publishes the stream on r holds. */
static bool mark_kept(const fx_redis *r, const char *ns, unsigned char *kept) {
    redisReply *rep = fx_cmd(r, "XRANGE {%s}:s:" SUBJECT " - +", ns);
    if (!rep || rep->type != REDIS_REPLY_ARRAY) {
        if (rep)
            freeReplyObject(rep);
        return false;
    }
    for (size_t e = 0; e < rep->elements; e++) {
        redisReply *fields = rep->element[e]->element[1];
        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
            const char *k = fields->element[f]->str, *v = fields->element[f + 1]->str;
            if (strcmp(k, "id") == 0 && v[0] == 'p' && atoi(v + 1) >= 0 && atoi(v + 1) < MAX_PUB)
                kept[atoi(v + 1)] = 1;
        }
    }
    freeReplyObject(rep);
    return true;
}

/* When publishing did not resume: what the publishes begun after the switch returned, and how
 * every server and sentinel sees the replication, so a failure can be told apart from a slow
 * machine. */
static void tell_state(const servers *sv, const run *u, int tried, long long switched) {
    int counts[EDDY_STATUS_COUNT_] = {0};
    for (int i = 0; i < tried; i++)
        if (u->began[i] >= switched && u->status[i] >= 0 && u->status[i] < EDDY_STATUS_COUNT_)
            counts[u->status[i]]++;
    for (int st = 0; st < EDDY_STATUS_COUNT_; st++)
        if (counts[st])
            fprintf(stderr, "  after the switch: %d x %s\n", counts[st],
                    eddy_status_name((eddy_status)st));
    for (int i = 0; i < sv->nnodes; i++) {
        redisReply *rep = fx_cmd(&sv->nodes[i], "INFO replication");
        const char *role =
            rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "role:") : NULL;
        const char *slaves =
            rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "connected_slaves:") : NULL;
        const char *link =
            rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "master_link_status:") : NULL;
        fprintf(stderr, "  node %d (port %d): %.*s %.*s %.*s\n", i, sv->nodes[i].port,
                role ? (int)strcspn(role, "\r\n") : 4, role ? role : "down",
                slaves ? (int)strcspn(slaves, "\r\n") : 0, slaves ? slaves : "",
                link ? (int)strcspn(link, "\r\n") : 0, link ? link : "");
        if (rep)
            freeReplyObject(rep);
    }
    for (int i = 0; i < NSENT; i++)
        fprintf(stderr, "  sentinel %d names port %d\n", i, named_port(&sv->sent[i]));
}

enum how { BY_COMMAND, BY_KILL };

/* leader: the sentinel SENTINEL FAILOVER goes to. */
static void one_run(const driver *dr, enum how how, unsigned wait, int leader) {
    const char *name = how == BY_COMMAND ? "sentinel_failover" : "sentinel_kill";
    servers sv;
    if (!servers_start(&sv)) {
        fx_fail("%s: the sentinels did not see the replicas", name);
        servers_stop(&sv);
        return;
    }
    static run u;
    memset(&u, 0, sizeof(u));
    the_run = &u;
    pthread_mutex_init(&u.lock, NULL);
    fx_acks_init(&u.acks, MAX_PUB, 'p');
    u.began = calloc(MAX_PUB, sizeof(long long));
    u.ended = calloc(MAX_PUB, sizeof(long long));
    u.status = calloc(MAX_PUB, sizeof(eddy_status));
    unsigned char *kept = calloc(MAX_PUB, 1);
    if (!u.began || !u.ended || !u.status || !kept) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    u.dr = dr;
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-sent-%s-%u", dr->name, wait);
    eddy_settings s;
    fx_settings(&s, sv.url, ns);
    s.log = log_hook;
    s.log_user = (void *)name;
    s.command_timeout_ms = 2000;
    /* The backoff draws from [min/2, min] and more: at min 20 a reconnect may come 10 ms after
     * the last, which the log hook's own clock can read as 9. At 40 every reconnect waits at
     * least 20 ms, so a count below 10 ms is a real missed backoff. */
    s.reconnect_min_ms = 40;
    s.wait_replicas = wait;
    s.wait_timeout_ms = 500;
    /* A run that reaches its bounds outlasts the retention grace: a pass would then trim
     * consumed entries, and "missing" would count them. */
    s.retention_interval_ms = 0;
    s.on_connection = on_connection;
    s.on_connection_user = &u;
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", SUBJECT, GROUP, EDDY_AT_LEAST_ONCE);
    sp.handler = consume;
    sp.user = &u;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &u.bus, &err) != EDDY_OK || dr->start(u.bus, &err) != EDDY_OK) {
        fx_fail("%s: bus: %s", name, err.detail);
        servers_stop(&sv);
        return;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, publisher, &u) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        exit(2);
    }
    fx_sleep_ms(500); /* publishing flows first */

    fx_redis *old = &sv.nodes[0];
    if (how == BY_COMMAND) {
        redisReply *r = sentinel_cmd(&sv.sent[leader], "SENTINEL FAILOVER %s", MASTER);
        FX_CHECK(r && r->type == REDIS_REPLY_STATUS, "%s: SENTINEL FAILOVER: %s", name,
                 r && r->str ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
    } else {
        fx_redis_kill(old);
    }
    /* The switch: a replica says ROLE master. */
    fx_redis *promoted = NULL;
    long long until = fx_now_ms() + WAIT_MS;
    while (!promoted && fx_now_ms() < until) {
        for (int i = 1; i <= NREPL && !promoted; i++)
            if (role_is(&sv.nodes[i], "master") == 1)
                promoted = &sv.nodes[i];
        if (!promoted)
            fx_sleep_ms(2);
    }
    long long switched = fx_now_ms();
    if (!promoted) {
        fx_fail("%s: no replica was promoted", name);
        promoted = &sv.nodes[1];
    }
    /* Over: every sentinel names the same replica. That one is the final master: on a busy
     * machine the sentinels can promote one replica, time out and promote the other, so the
     * first replica seen saying ROLE master need not be it. (A live old master follows it only
     * some 15 s later; with wait_replicas 2 publishing waits for that, without it nothing
     * does.) */
    bool over = false;
    while (!over && fx_now_ms() < until) {
        fx_redis *named = node_at(&sv, agreed_port(&sv));
        if (named)
            promoted = named;
        over = named != NULL;
        if (!over)
            fx_sleep_ms(20);
    }
    FX_CHECK(over, "%s: the failover did not end", name);
    fx_redis *fresh = NULL;
    int following = 0;
    if (how == BY_KILL && wait) {
        /* WAIT 2 needs a second replica again: a fresh one of the final master (a replica of
         * the other replica would not count in the master's WAIT). The sentinels can still
         * fail over once more, so it follows what they agree on until publishing resumes. */
        fresh = &sv.nodes[sv.nnodes++];
        fx_redis_start(fresh, NULL);
        follow_agreed(&sv, fresh, &following);
    }
    /* Publishing resumed: one begun after the switch was acknowledged (or the bound passed). */
    long long resume_ms = -1;
    while (resume_ms < 0 && fx_now_ms() < until) {
        int n = atomic_load(&u.tried);
        for (int i = 0; i < n && resume_ms < 0; i++)
            if (u.acks.acked[i] && u.began[i] >= switched)
                resume_ms = u.ended[i] - switched;
        if (resume_ms < 0) {
            if (fresh)
                follow_agreed(&sv, fresh, &following);
            fx_sleep_ms(10);
        }
    }
    fx_sleep_ms(1000); /* and goes on */
    atomic_store(&u.stop, true);
    pthread_join(th, NULL);
    int tried = atomic_load(&u.tried);
    fx_redis *named = node_at(&sv, agreed_port(&sv));
    if (named)
        promoted = named; /* a later failover moved the master: its stream is the record */

    FX_CHECK(mark_kept(promoted, ns, kept), "%s: XRANGE on the new master", name);
    size_t acked = 0, missing = 0, missing_late = 0;
    long long gap = 0, last_ok = -1;
    for (int i = 0; i < tried; i++) {
        if (!u.acks.acked[i])
            continue;
        acked++;
        missing += !kept[i];
        missing_late += !kept[i] && u.began[i] > switched + 100;
        if (last_ok >= 0 && u.ended[i] - last_ok > gap)
            gap = u.ended[i] - last_ok;
        last_ok = u.ended[i];
    }
    /* What the final master holds is consumed (bounded wait), then the tally. */
    long long settle = fx_now_ms() + WAIT_MS;
    size_t unconsumed;
    do {
        unconsumed = 0;
        for (int i = 0; i < tried; i++)
            unconsumed += kept[i] && atomic_load(&u.acks.seen[i]) == 0;
        if (unconsumed)
            fx_sleep_ms(100);
    } while (unconsumed && fx_now_ms() < settle);
    size_t lost = 0, dup = 0;
    for (int i = 0; i < tried; i++) {
        unsigned n = atomic_load(&u.acks.seen[i]);
        lost += u.acks.acked[i] && n == 0;
        dup += n > 1 ? n - 1 : 0;
    }
    dr->stop(u.bus);
    dr->free(u.bus);
    pthread_mutex_lock(&u.lock);
    int fast = u.fast_reconnects, connects = u.connects;
    pthread_mutex_unlock(&u.lock);
    printf(
        "FIG %s frontend=%s wait=%u leader=%d acked=%zu missing=%zu missing_late=%zu lost=%zu/%zu "
        "dup=%zu resume_ms=%lld gap_ms=%lld conn_changes=%d connects=%d fast_reconnects=%d\n",
        name, dr->name, wait, how == BY_COMMAND ? leader : -1, acked, missing, missing_late, lost,
        acked, dup, resume_ms, gap, atomic_load(&u.conn_changes), connects, fast);
    FX_CHECK(unconsumed == 0, "%s: %zu publishes on the final master never consumed", name,
             unconsumed);
    FX_CHECK(resume_ms >= 0, "%s: publishing did not resume after the switch", name);
    if (resume_ms < 0)
        tell_state(&sv, &u, tried, switched);
    FX_CHECK(fast == 0, "%s: %d reconnects within 10 ms of the same connection's previous one",
             name, fast);
    if (wait) {
        FX_CHECK(missing == 0, "%s wait=%u: %zu acknowledged publishes missing from the new master",
                 name, wait, missing);
        FX_CHECK(lost == 0, "%s wait=%u: %zu acknowledged publishes never consumed", name, wait,
                 lost);
    }
    free(kept);
    free(u.began);
    free(u.ended);
    free(u.status);
    fx_acks_free(&u.acks);
    pthread_mutex_destroy(&u.lock);
    the_run = NULL;
    servers_stop(&sv);
}

/* The fast profile sends SENTINEL FAILOVER to a sentinel the bus does not ask first (every
 * sentinel is listened to); the long one to each sentinel in turn, and kills three times. */
void fx_sentinel_failover(const driver *dr) {
    for (int leader = fx_long_profile() ? 0 : 1; leader < (fx_long_profile() ? NSENT : 2);
         leader++) {
        one_run(dr, BY_COMMAND, 0, leader);
        one_run(dr, BY_COMMAND, NREPL, leader);
    }
}

void fx_sentinel_kill(const driver *dr) {
    for (int i = 0; i < (fx_long_profile() ? 3 : 1); i++) {
        one_run(dr, BY_KILL, 0, -1);
        one_run(dr, BY_KILL, NREPL, -1);
    }
}
