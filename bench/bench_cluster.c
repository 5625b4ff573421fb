/* SPDX-License-Identifier: BSD-3-Clause */
/* Scaling out on Redis Cluster: aggregate publish + consume throughput, on one cluster this
 * bench starts (3 redis-server processes, cluster-enabled, no replicas, on free 127.0.0.1 ports,
 * unpinned), of
 *
 *   hiredis-3  3 namespaces, one on each master, each on its own thread: N events (default
 *              50,000) published 256 per round trip (redisAppendCommandArgv XADDs with exactly
 *              eddy's fields and bytes) to the master of its slot, then consumed at its best
 *              (XREADGROUP COUNT 256, each batch's XACK pipelined with the next read).
 *   eddy-1     1 namespace through redis-cluster://: N events published with
 *              eddy_bus_publish_batch (256), then consumed by a competing AtLeastOnce
 *              subscription (read_batch 256) of the blocking front end.
 *   eddy-3     the same on 3 namespaces, one on each master, each on its own thread.
 *
 * Each figure is messages published and consumed per second (N, or 3 N, over the wall time of
 * both phases). `cluster_scaling` is eddy-3 over eddy-1 (what the cluster's masters add, at most
 * 3 on a machine with enough cores); `cluster_vs_raw` is eddy-3 over hiredis-3, the same servers
 * and the same number of client threads. The `#` lines give each phase's own rate, and (first
 * repetition) the CPU the servers and this process used over the wall time: on 2 vCPUs the 3
 * masters, 3 client threads (and each bus's worker threads) share 2 cores, so the scaling says
 * how much the CPU lets through, not how the cluster scales. */
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "bench_util.h"
#include "eddy/blocking.h"

#define MASTERS 3

static eddy_event **events;
static long N;

/* ---- the cluster ------------------------------------------------------------------------- */

typedef struct node {
    pid_t pid;
    int port;
    char dir[96];
} node;

static node nodes[MASTERS];
static char cluster_url[256];

static redisReply *at(int port, const char *fmt, ...) {
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static bool node_ok(int port) {
    redisReply *r = at(port, "CLUSTER INFO");
    bool ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") &&
              strstr(r->str, "cluster_known_nodes:3\r\n");
    if (r)
        freeReplyObject(r);
    return ok;
}

static void cluster_start(void) {
    char create[512];
    /* A bound: redis-cli waits for ever for nodes that cannot meet. */
    int n = snprintf(create, sizeof(create), "timeout 60 redis-cli --cluster create");
    int u = snprintf(cluster_url, sizeof(cluster_url), "redis-cluster://");
    for (int i = 0; i < MASTERS; i++) {
        node *nd = &nodes[i];
        nd->port = bench_free_port();
        snprintf(nd->dir, sizeof(nd->dir), "/tmp/eddy-bench-cluster-%d-%d", (int)getpid(),
                 nd->port);
        char cmd[160], port[16], bus[16];
        snprintf(cmd, sizeof(cmd), "mkdir -p %s", nd->dir);
        if (system(cmd) != 0)
            bench_die("cluster", "mkdir");
        snprintf(port, sizeof(port), "%d", nd->port);
        /* The bus port is a free port of its own: port + 10000 may be taken or past 65535. */
        snprintf(bus, sizeof(bus), "%d", bench_free_port());
        if ((nd->pid = fork()) < 0)
            bench_die("fork", "cluster node");
        if (nd->pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", port, "--dir",
                   nd->dir, "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
                   "--cluster-config-file", "nodes.conf", "--cluster-port", bus, "--loglevel",
                   "warning", "--logfile", "redis.log", (char *)NULL);
            _exit(127);
        }
        n += snprintf(create + n, sizeof(create) - (size_t)n, " 127.0.0.1:%d", nd->port);
        u += snprintf(cluster_url + u, sizeof(cluster_url) - (size_t)u, "%s127.0.0.1:%d",
                      i ? "," : "", nd->port);
    }
    for (int i = 0; i < MASTERS; i++) /* each answers before the create */
        for (int k = 0; k < 200; k++) {
            redisReply *r = at(nodes[i].port, "PING");
            if (r) {
                freeReplyObject(r);
                break;
            }
            struct timespec pause = {0, 25000000};
            nanosleep(&pause, NULL);
        }
    snprintf(create + n, sizeof(create) - (size_t)n,
             " --cluster-replicas 0 --cluster-yes >/dev/null 2>&1 </dev/null");
    if (system(create) != 0)
        bench_die("redis-cli --cluster create", "failed");
    for (int k = 0; k < 1200; k++) { /* up to 60 s */
        bool all = true;
        for (int i = 0; i < MASTERS; i++)
            all = all && node_ok(nodes[i].port);
        if (all)
            return;
        struct timespec pause = {0, 50000000};
        nanosleep(&pause, NULL);
    }
    bench_die("cluster", "not ok after 60 s");
}

static void cluster_stop(void) {
    for (int i = 0; i < MASTERS; i++) {
        if (nodes[i].pid > 0) {
            kill(nodes[i].pid, SIGKILL);
            waitpid(nodes[i].pid, NULL, 0);
        }
        char cmd[160];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", nodes[i].dir);
        (void)!system(cmd);
    }
}

/* The port of the master serving the slot of namespace ns. */
static int master_of(const char *ns) {
    redisReply *r = at(nodes[0].port, "CLUSTER KEYSLOT {%s}:x", ns);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        bench_die("CLUSTER KEYSLOT", "no answer");
    long long slot = r->integer;
    freeReplyObject(r);
    r = at(nodes[0].port, "CLUSTER SLOTS");
    int port = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *range = r->element[i];
        if (slot >= range->element[0]->integer && slot <= range->element[1]->integer)
            port = (int)range->element[2]->element[1]->integer;
    }
    if (r)
        freeReplyObject(r);
    return port;
}

/* The CPU seconds (user + system) the server on port has used so far. */
static double server_cpu(int port) {
    redisReply *r = at(port, "INFO cpu");
    double user = 0, sys = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *u = strstr(r->str, "used_cpu_user:"), *s = strstr(r->str, "used_cpu_sys:");
        user = u ? atof(u + 14) : 0;
        sys = s ? atof(s + 13) : 0;
    }
    if (r)
        freeReplyObject(r);
    return user + sys;
}

/* `# <side>: ... cores busy`: the CPU the servers and this process used over the wall time. */
static void print_cores(const char *side, double wall, double servers, bench_usage u0,
                        bench_usage u1) {
    double client = (u1.cpu_us - u0.cpu_us) / 1e6;
    printf("# %s: %.2f s wall, servers %.2f s CPU, client %.2f s CPU: %.2f cores busy\n", side,
           wall, servers, client, (servers + client) / wall);
}

/* Three namespaces of this repetition, one on each master. */
static void pick_namespaces(const bench_env *env, int rep, char ns[MASTERS][96],
                            int port[MASTERS]) {
    int found = 0;
    for (int k = 0; found < MASTERS && k < 1000; k++) {
        char name[96], side[32];
        snprintf(side, sizeof(side), "cl%d", k);
        bench_ns(env, name, sizeof(name), side, rep);
        int p = master_of(name);
        bool dup = false;
        for (int j = 0; j < found; j++)
            dup = dup || port[j] == p;
        if (!p || dup)
            continue;
        port[found] = p;
        snprintf(ns[found++], 96, "%s", name);
    }
    if (found < MASTERS)
        bench_die("namespaces", "none found on every master");
}

/* ---- hiredis: 3 namespaces, 3 masters --------------------------------------------------- */

typedef struct raw_lane {
    bench_env env; /* the bench's, with the port of this lane's master */
    char ns[96];
    double published, consumed; /* seconds of each phase */
    pthread_barrier_t *go;
} raw_lane;

static void *raw_lane_run(void *arg) {
    raw_lane *l = arg;
    char key[128];
    snprintf(key, sizeof(key), "{%s}:s:orders", l->ns);
    char(*ids)[24] = malloc((size_t)N * sizeof(*ids));
    const char **argv = malloc((size_t)N * BENCH_XADD_ARGC * sizeof(*argv));
    size_t *lens = malloc((size_t)N * BENCH_XADD_ARGC * sizeof(*lens));
    if (!ids || !argv || !lens)
        bench_die("raw publish", "out of memory");
    for (long i = 0; i < N; i++)
        bench_xadd_argv(key, i, ids[i], argv + i * BENCH_XADD_ARGC, lens + i * BENCH_XADD_ARGC);
    redisContext *c = bench_connect(&l->env);
    redisReply *r = redisCommand(c, "XGROUP CREATE %s raw 0 MKSTREAM", key);
    if (!r || r->type == REDIS_REPLY_ERROR)
        bench_die("XGROUP CREATE", r ? r->str : c->errstr);
    freeReplyObject(r);
    pthread_barrier_wait(l->go);
    double t0 = bench_now();
    for (long i = 0; i < N; i += BENCH_BATCH) {
        long end = i + BENCH_BATCH < N ? i + BENCH_BATCH : N;
        for (long j = i; j < end; j++)
            redisAppendCommandArgv(c, BENCH_XADD_ARGC, argv + j * BENCH_XADD_ARGC,
                                   lens + j * BENCH_XADD_ARGC);
        for (long j = i; j < end; j++) {
            if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING)
                bench_die("raw XADD", c->errstr);
            freeReplyObject(r);
        }
    }
    l->published = bench_now() - t0;
    l->consumed = bench_raw_consume(&l->env, key, "raw", N);
    redisFree(c);
    free(ids);
    free(argv);
    free(lens);
    return NULL;
}

static void flush_cluster(void) {
    for (int i = 0; i < MASTERS; i++) {
        redisReply *r = at(nodes[i].port, "FLUSHALL");
        if (r)
            freeReplyObject(r);
    }
}

static double cluster_cpu(void) {
    double cpu = 0;
    for (int i = 0; i < MASTERS; i++)
        cpu += server_cpu(nodes[i].port);
    return cpu;
}

static void raw_side(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[MASTERS][96];
    int port[MASTERS];
    pick_namespaces(env, rep, ns, port);
    raw_lane lanes[MASTERS];
    pthread_t th[MASTERS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, MASTERS + 1);
    for (int i = 0; i < MASTERS; i++) {
        lanes[i].env = *env;
        lanes[i].env.port = port[i];
        memcpy(lanes[i].ns, ns[i], sizeof(lanes[i].ns));
        lanes[i].go = &go;
        if (pthread_create(&th[i], NULL, raw_lane_run, &lanes[i]) != 0)
            bench_die("pthread_create", "raw lane");
    }
    double cpu0 = cluster_cpu();
    pthread_barrier_wait(&go);
    bench_usage u0 = bench_usage_now();
    double t0 = bench_now(), pub = 0, con = 0;
    for (int i = 0; i < MASTERS; i++) {
        pthread_join(th[i], NULL);
        pub = lanes[i].published > pub ? lanes[i].published : pub;
        con = lanes[i].consumed > con ? lanes[i].consumed : con;
    }
    double wall = bench_now() - t0;
    pthread_barrier_destroy(&go);
    if (rep == 0)
        print_cores("hiredis, 3 masters", wall, cluster_cpu() - cpu0, u0, bench_usage_now());
    out[0] = (double)(MASTERS * N) / wall;
    out[1] = (double)(MASTERS * N) / pub; /* the slowest lane's phase */
    out[2] = (double)(MASTERS * N) / con;
    flush_cluster();
}

/* ---- eddy: 1 or 3 namespaces, on as many masters ---------------------------------------- */

typedef struct lane {
    const bench_env *env;
    char ns[96];
    atomic_long handled;
    sem_t done;
    double published, consumed; /* seconds of each phase */
    pthread_barrier_t *go;
} lane;

static eddy_status count(eddy_delivery *d, void *user) {
    (void)d;
    lane *l = user;
    if (atomic_fetch_add(&l->handled, 1) + 1 == N)
        sem_post(&l->done);
    return EDDY_OK;
}

static eddy_bus *bus_new(const eddy_settings *s, const eddy_subscription_spec *sp, size_t n) {
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(s, sp, n, &bus, &err) != EDDY_OK)
        bench_die("eddy_bus_new", err.detail);
    return bus;
}

static void *lane_run(void *arg) {
    lane *l = arg;
    eddy_settings s;
    bench_settings(l->env, &s, l->ns);
    s.url = cluster_url;
    eddy_subscription_spec sp;
    bench_consume_spec(&sp, count);
    sp.user = l;
    eddy_bus *sub = bus_new(&s, &sp, 1), *pub = bus_new(&s, NULL, 0);
    eddy_error err;
    /* The group first (made at the subscription's start), untimed. */
    if (eddy_bus_start(sub, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    eddy_bus_stop(sub);
    pthread_barrier_wait(l->go);
    double t0 = bench_now();
    for (long i = 0; i < N; i += BENCH_BATCH) {
        size_t b = N - i < BENCH_BATCH ? (size_t)(N - i) : BENCH_BATCH;
        if (eddy_bus_publish_batch(pub, "orders", (const eddy_event *const *)events + i, b, NULL,
                                   &err) != EDDY_OK)
            bench_die("eddy_bus_publish_batch", err.detail);
    }
    double t1 = bench_now();
    if (eddy_bus_start(sub, &err) != EDDY_OK)
        bench_die("eddy_bus_start", err.detail);
    while (sem_wait(&l->done) != 0)
        ;
    l->published = t1 - t0;
    l->consumed = bench_now() - t1;
    eddy_bus_free(sub);
    eddy_bus_free(pub);
    return NULL;
}

/* user: the number of namespaces (1 or MASTERS), each on its own master and thread. */
static void eddy_side(const bench_env *env, int rep, double *out, void *user) {
    int k = (int)(long)user;
    char ns[MASTERS][96];
    int port[MASTERS];
    pick_namespaces(env, rep, ns, port);
    lane lanes[MASTERS];
    pthread_t th[MASTERS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)k + 1);
    for (int i = 0; i < k; i++) {
        memset(&lanes[i], 0, sizeof(lanes[i]));
        lanes[i].env = env;
        memcpy(lanes[i].ns, ns[i], sizeof(lanes[i].ns));
        sem_init(&lanes[i].done, 0, 0);
        lanes[i].go = &go;
        if (pthread_create(&th[i], NULL, lane_run, &lanes[i]) != 0)
            bench_die("pthread_create", "lane");
    }
    double cpu0 = cluster_cpu();
    pthread_barrier_wait(&go);
    bench_usage u0 = bench_usage_now();
    double t0 = bench_now();
    double pub = 0, con = 0;
    for (int i = 0; i < k; i++) {
        pthread_join(th[i], NULL);
        pub = lanes[i].published > pub ? lanes[i].published : pub;
        con = lanes[i].consumed > con ? lanes[i].consumed : con;
        sem_destroy(&lanes[i].done);
    }
    double wall = bench_now() - t0;
    bench_usage u1 = bench_usage_now();
    pthread_barrier_destroy(&go);
    if (rep == 0)
        print_cores(k == 1 ? "eddy, 1 namespace" : "eddy, 3 masters", wall, cluster_cpu() - cpu0,
                    u0, u1);
    out[0] = (double)(k * N) / wall;
    out[1] = (double)(k * N) / pub; /* the slowest lane's phase */
    out[2] = (double)(k * N) / con;
    /* Its keys are on the cluster, where bench_teardown does not look: the next side starts on
     * empty masters. */
    flush_cluster();
}

int main(int argc, char **argv) {
    bench_env env;
    bench_setup(&env, argc, argv, 50000, NULL, NULL);
    N = env.n;
    events = bench_events(N);
    cluster_start();
    printf("# cluster: %d masters, no replicas, unpinned: %s\n", MASTERS, cluster_url);
    bench_side sides[3] = {{"hiredis-3", raw_side, NULL},
                           {"eddy-1", eddy_side, (void *)1L},
                           {"eddy-3", eddy_side, (void *)(long)MASTERS}};
    double m[9]; /* per side: publish + consume, publish, consume (per second) */
    bench_sides(&env, sides, 3, 3, m);
    bench_print_med("cluster_scaling", 6, 3); /* eddy-3 over eddy-1 */
    bench_print_med("cluster_vs_raw", 6, 0);  /* eddy-3 over hiredis-3 */
    printf("# publish phase: eddy-3 %.0f/s, eddy-1 %.0f/s, hiredis-3 %.0f/s; consume phase: "
           "eddy-3 %.0f/s, eddy-1 %.0f/s, hiredis-3 %.0f/s\n",
           m[7], m[4], m[1], m[8], m[5], m[2]);
    cluster_stop();
    bench_events_free(events, N);
    bench_teardown(&env);
    return 0;
}
