/* SPDX-License-Identifier: BSD-3-Clause */
/* A Redis Cluster for tests: 6 redis-server processes on free 127.0.0.1 ports (cluster-enabled,
 * each in its own temporary dir), made into 3 masters with a replica each by
 * `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`; started when every node
 * says cluster_state:ok and knows the same slot map, and every replica's link is up. Stopped and
 * removed by eddy_test_cluster_stop. Any failure fails the test: nothing skips. */
#ifndef EDDY_TEST_REDIS_CLUSTER_H
#define EDDY_TEST_REDIS_CLUSTER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "redis_server.h"

#define EDDY_TEST_CLUSTER_NODES 6

typedef struct eddy_test_cluster {
    eddy_test_redis node[EDDY_TEST_CLUSTER_NODES];
    char url[256]; /* redis-cluster:// with every node as a seed */
} eddy_test_cluster;

void eddy_test_cluster_start(eddy_test_cluster *c);
void eddy_test_cluster_stop(eddy_test_cluster *c);

/* The port of the master that serves `slot`, as the node on `ask_port` sees it (0: none). */
int eddy_test_cluster_master_of(int ask_port, unsigned slot);
/* The port of a replica of the master on master_port (0: none with its link up). */
int eddy_test_cluster_replica_of(eddy_test_cluster *c, int master_port);
/* True once every live node says cluster_state:ok and names master_port for slot. */
bool eddy_test_cluster_agrees(eddy_test_cluster *c, unsigned slot, int master_port);
/* CLUSTER FAILOVER sent to the replica (again, when a manual failover timed out) until every
 * node names it for slot. */
void eddy_test_cluster_failover(eddy_test_cluster *c, unsigned slot, int replica);
/* Logs what every node says of the slot (after a failed wait). */
void eddy_test_cluster_describe(eddy_test_cluster *c, unsigned slot);
/* Moves a slot and its keys from the master on `from` to the master on `to`, as
 * redis-cli --cluster reshard does: SETSLOT IMPORTING / MIGRATING, MIGRATE of the keys
 * GETKEYSINSLOT names until none is left, then SETSLOT NODE on every master. `between` (may be
 * NULL) runs after each batch of keys, to let traffic hit the half-migrated slot. */
void eddy_test_cluster_migrate(eddy_test_cluster *c, unsigned slot, int from, int to,
                               void (*between)(void *arg), void *arg);

#endif
