/* SPDX-License-Identifier: BSD-3-Clause */
/* A Redis Cluster of 6 private redis-server processes for tests; see redis_cluster.h. */
#include "redis_cluster.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy_test.h"

#define WAIT_MS 90000

/* cmd: "INFO replication" or "CLUSTER INFO". */
static bool info_has(int port, const char *cmd, const char *what) {
    redisReply *r = eddy_test_cmd_at(port, cmd);
    bool v = r && r->type == REDIS_REPLY_STRING && strstr(r->str, what);
    if (r)
        freeReplyObject(r);
    return v;
}

int eddy_test_cluster_master_of(int ask_port, unsigned slot) {
    redisReply *r = eddy_test_cmd_at(ask_port, "CLUSTER SLOTS");
    int port = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *range = r->element[i];
        if (range->elements >= 3 && (long long)slot >= range->element[0]->integer &&
            (long long)slot <= range->element[1]->integer)
            port = (int)range->element[2]->element[1]->integer;
    }
    if (r)
        freeReplyObject(r);
    return port;
}

int eddy_test_cluster_replica_of(eddy_test_cluster *c, int master_port) {
    char want[64];
    snprintf(want, sizeof(want), "master_port:%d\r\n", master_port);
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++) {
        int p = c->node[i].port;
        if (c->node[i].pid > 0 && info_has(p, "INFO replication", want) &&
            info_has(p, "INFO replication", "master_link_status:up"))
            return p;
    }
    return 0;
}

bool eddy_test_cluster_agrees(eddy_test_cluster *c, unsigned slot, int master_port) {
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++) {
        if (c->node[i].pid <= 0)
            continue;
        if (!info_has(c->node[i].port, "CLUSTER INFO", "cluster_state:ok") ||
            eddy_test_cluster_master_of(c->node[i].port, slot) != master_port)
            return false;
    }
    return true;
}

void eddy_test_cluster_describe(eddy_test_cluster *c, unsigned slot) {
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++)
        cr_log_error("node %d: ok=%d, names %d for slot %u", c->node[i].port,
                     info_has(c->node[i].port, "CLUSTER INFO", "cluster_state:ok"),
                     eddy_test_cluster_master_of(c->node[i].port, slot), slot);
}

/* Every node ok and knowing the 5 others, the same master for a slot of each third, and 3
 * replicas with their link up. */
static bool formed(void *arg) {
    eddy_test_cluster *c = arg;
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++)
        if (!info_has(c->node[i].port, "CLUSTER INFO", "cluster_known_nodes:6\r\n"))
            return false;
    static const unsigned probe[] = {0, 8000, 16383};
    for (size_t k = 0; k < 3; k++) {
        int m = eddy_test_cluster_master_of(c->node[0].port, probe[k]);
        if (!m || !eddy_test_cluster_agrees(c, probe[k], m) || !eddy_test_cluster_replica_of(c, m))
            return false;
    }
    return true;
}

void eddy_test_cluster_start(eddy_test_cluster *c) {
    memset(c, 0, sizeof(*c));
    char cmd[1024];
    /* A bound: redis-cli waits for ever for nodes that cannot meet. */
    int n = snprintf(cmd, sizeof(cmd), "timeout 60 redis-cli --cluster create");
    int u = snprintf(c->url, sizeof(c->url), "redis-cluster://");
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++) {
        /* The bus port is a free port of its own: the default, port + 10000, may be taken or
         * past 65535. */
        char bus[16];
        snprintf(bus, sizeof(bus), "%d", eddy_test_free_port());
        const char *const extra[] = {"--cluster-enabled",
                                     "yes",
                                     "--cluster-config-file",
                                     "nodes.conf",
                                     "--cluster-port",
                                     bus,
                                     "--cluster-node-timeout",
                                     "2000",
                                     "--cluster-require-full-coverage",
                                     "yes",
                                     "--repl-diskless-sync-delay",
                                     "0",
                                     NULL};
        eddy_test_redis_start_with(&c->node[i], 0, extra);
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " 127.0.0.1:%d", c->node[i].port);
        u += snprintf(c->url + u, sizeof(c->url) - (size_t)u, "%s127.0.0.1:%d", i ? "," : "",
                      c->node[i].port);
    }
    snprintf(cmd + n, sizeof(cmd) - (size_t)n,
             " --cluster-replicas 1 --cluster-yes >/dev/null 2>&1 </dev/null");
    cr_assert_eq(system(cmd), 0, "redis-cli --cluster create");
    cr_assert(eddy_test_wait_until(formed, c, WAIT_MS),
              "the cluster is formed: cluster_state:ok and one slot map on every node");
}

void eddy_test_cluster_stop(eddy_test_cluster *c) {
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++) {
        eddy_test_redis_kill(&c->node[i]);
        if (c->node[i].dir[0]) {
            char rm[256];
            snprintf(rm, sizeof(rm), "rm -rf %s", c->node[i].dir);
            (void)!system(rm);
        }
    }
}

void eddy_test_cluster_failover(eddy_test_cluster *c, unsigned slot, int replica) {
    /* A manual failover gives up after 5 s when the master's offset was not reached in time (a
     * loaded machine): asked again until the replica serves the slot. */
    long long until = eddy_test_now_ms() + WAIT_MS;
    while (eddy_test_now_ms() < until) {
        redisReply *r = eddy_test_cmd_at(replica, "CLUSTER FAILOVER");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLUSTER FAILOVER: %s",
                  r && r->str ? r->str : "no reply");
        freeReplyObject(r);
        long long round = eddy_test_now_ms() + 8000;
        while (eddy_test_now_ms() < round) {
            if (eddy_test_cluster_agrees(c, slot, replica))
                return;
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);
        }
    }
    eddy_test_cluster_describe(c, slot);
    cr_assert_fail("the replica on %d never took slot %u over", replica, slot);
}

static void node_id(int port, char *out, size_t size) {
    redisReply *r = eddy_test_cmd_at(port, "CLUSTER MYID");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "CLUSTER MYID of %d", port);
    snprintf(out, size, "%s", r->str);
    freeReplyObject(r);
}

static void expect_ok(redisReply *r, const char *what) {
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s: %s", what,
              r && r->str ? r->str : "no reply");
    freeReplyObject(r);
}

void eddy_test_cluster_migrate(eddy_test_cluster *c, unsigned slot, int from, int to,
                               void (*between)(void *arg), void *arg) {
    char from_id[64], to_id[64];
    node_id(from, from_id, sizeof(from_id));
    node_id(to, to_id, sizeof(to_id));
    expect_ok(eddy_test_cmd_at(to, "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id),
              "SETSLOT IMPORTING");
    expect_ok(eddy_test_cmd_at(from, "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id),
              "SETSLOT MIGRATING");
    for (;;) {
        redisReply *keys = eddy_test_cmd_at(from, "CLUSTER GETKEYSINSLOT %u 2", slot);
        cr_assert(keys && keys->type == REDIS_REPLY_ARRAY, "GETKEYSINSLOT");
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        for (size_t i = 0; i < keys->elements; i++) {
            redisReply *m = eddy_test_cmd_at(from, "MIGRATE 127.0.0.1 %d %b 0 10000", to,
                                             keys->element[i]->str, (size_t)keys->element[i]->len);
            cr_assert(m && m->type == REDIS_REPLY_STATUS, "MIGRATE %s: %s", keys->element[i]->str,
                      m && m->str ? m->str : "no reply");
            freeReplyObject(m);
        }
        freeReplyObject(keys);
        if (between)
            between(arg);
    }
    /* The importing node first, as redis-cli does, then the old owner, then the others. */
    expect_ok(eddy_test_cmd_at(to, "CLUSTER SETSLOT %u NODE %s", slot, to_id), "SETSLOT NODE (to)");
    expect_ok(eddy_test_cmd_at(from, "CLUSTER SETSLOT %u NODE %s", slot, to_id),
              "SETSLOT NODE (from)");
    for (int i = 0; i < EDDY_TEST_CLUSTER_NODES; i++) {
        int p = c->node[i].port;
        if (p == from || p == to || c->node[i].pid <= 0 ||
            !info_has(p, "INFO replication", "role:master"))
            continue;
        expect_ok(eddy_test_cmd_at(p, "CLUSTER SETSLOT %u NODE %s", slot, to_id),
                  "SETSLOT NODE (other master)");
    }
}
