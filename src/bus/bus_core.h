/* SPDX-License-Identifier: BSD-3-Clause */
/* What a bus is made of besides its connections, threads and watchers, the same in both front
 * ends: the backend's capabilities and hold, the publisher, the request table, the registry
 * cache, the subscriptions as the core reads them, and the retention counters that outlive an
 * activation. Made and freed here, so both front ends make them alike and a request sees them
 * the same way (eddy__bus_core_request_ctx).
 * Thread: the parts' own rules (the publisher, the table and the counters are locked or atomic;
 * subs follow the front end's lock). */
#ifndef EDDY_SRC_BUS_CORE_H
#define EDDY_SRC_BUS_CORE_H

#include "bus/bus_stats.h"
#include "bus/consumer.h"
#include "bus/publisher.h"
#include "bus/registry.h"
#include "bus/request_flow.h"
#include "bus/requests.h"
#include "bus/retention.h"
#include "bus/sub.h"
#include "link/link.h"

typedef struct eddy__bus_core {
    unsigned caps;               /* the backend's (eddy__capabilities) */
    eddy__backend_hold *backend; /* memory://: the data lives as long as the bus */
    eddy__publisher *publisher;
    eddy__requests *requests;
    eddy__registry_cache *registry_cache;
    eddy__subs all;                     /* the front end's subscriptions, index for index */
    eddy__retention_counters retention; /* of every activation's passes (retention.h) */
} eddy__bus_core;

/* Makes the parts for the settings s (borrowed: they must outlive the core). On failure
 * (EDDY_ERR_NOMEM) what was made is freed again. */
eddy_status eddy__bus_core_init(eddy__bus_core *c, const eddy__settings *s, eddy_error *err);
/* Frees the parts (not the subscriptions: the front end's records own them). Safe on a zeroed
 * or failed core. */
void eddy__bus_core_destroy(eddy__bus_core *c);

/* What the stats documents read of the bus (bus_stats.h): started as the front end knows it, the
 * broker's scan or NULL with why there is none. The subscriptions are read as they are: hold
 * the front end's lock while the document is written. */
eddy__bus_stats_in eddy__bus_core_stats_in(eddy__bus_core *c, const eddy__settings *s, bool started,
                                           const eddy__admin_scan *scan,
                                           const eddy_error *scan_err);

/* eddy_bus_pause and eddy_bus_resume (and twins): each subscription named `name` (a gather
 * responder and its twin together) is paused or resumed (eddy__consumer_pause), and wake is told
 * its index and how its reader is to be woken; EDDY_ERR_INVALID_ARGUMENT when none has that name.
 * Called under the front end's lock on its subscriptions. */
eddy_status eddy__bus_core_pause(eddy__bus_core *c, const char *name, bool pause,
                                 void (*wake)(size_t i, eddy__wake how, void *user), void *user,
                                 eddy_error *err);

/* A stopping bus's way out is best effort, on both front ends: its leave (the registry and the
 * reply stream) and its fanout groups' drop (retention.h) are logged here when they fail (st,
 * err with detail or NULL), except for a bus being freed (EDDY_ERR_CLOSED): the leases end by
 * themselves, and the retention pass removes what the drop left once they did. A single
 * XGROUP DESTROY's error (a stream gone) is no failure of the drop. */
void eddy__bus_core_left(const eddy__settings *s, eddy_status st, const eddy_error *err);
void eddy__bus_core_dropped(const eddy__settings *s, eddy_status st, const eddy_error *err);

/* A request's view of the bus: active (started and ready), cancelled (its token fired before
 * the call) and the activation's reply stream (NULL when not active). */
eddy__request_ctx eddy__bus_core_request_ctx(const eddy__bus_core *c, const eddy__settings *s,
                                             bool active, bool cancelled, const char *inbox);

#endif
