/* SPDX-License-Identifier: BSD-3-Clause */
/* What a failure's text says about routing on Redis Cluster. link/cluster.c writes these marks
 * into the detail of the failure a redirect or an outage caused; the connection state
 * (config/conn_state.c), the publisher and the store read them back to tell an outage from a
 * reroute and a command refused unwritten from one that may have run. */
#ifndef EDDY_SRC_UTIL_REFUSAL_H
#define EDDY_SRC_UTIL_REFUSAL_H

#include <stdbool.h>

#include "eddy/status.h"

#define EDDY__MOVED_MARK "refused unwritten (MOVED)"
#define EDDY__TRYAGAIN_MARK "refused unwritten (TRYAGAIN)"
#define EDDY__DOWN_MARK "refused unwritten (CLUSTERDOWN)"
#define EDDY__REROUTE_MARK "rerouted"

/* True for the failure a MOVED caused (as eddy__cluster_redirect reported it, also passed on
 * by a front end): the server refused that command unwritten, and every later command of the
 * slot on that connection too (the slot does not come back to a node within one pipeline). An
 * ASK or TRYAGAIN is not: a later command on a key not yet migrated may have run. */
bool eddy__cluster_moved(eddy_status st, const eddy_error *err);

/* Which redirect failed a connection (as eddy__cluster_redirect reported it, also passed on by
 * a front end): the command it answered was refused unwritten in every case. MOVED: so was
 * every later command of the slot on that connection. TRYAGAIN (a multi-key command whose keys
 * a migration split; single-key commands get an ASK instead) and CLUSTERDOWN: a later command
 * may have run (the keys it names were not split, or the cluster came back meanwhile). */
typedef enum {
    EDDY__CLUSTER_NOT_REFUSED,
    EDDY__CLUSTER_MOVED,
    EDDY__CLUSTER_TRYAGAIN,
    EDDY__CLUSTER_DOWN,
} eddy__cluster_refusal;
eddy__cluster_refusal eddy__cluster_refused(eddy_status st, const eddy_error *err);
/* True for a failure that only says the slot is served elsewhere now, by a node that answers:
 * MOVED, TRYAGAIN, an ASK not followed, UNBLOCKED. Not an outage of the cluster (conn_state.c);
 * CLUSTERDOWN is one. */
bool eddy__cluster_rerouted(eddy_status st, const eddy_error *err);

#endif
