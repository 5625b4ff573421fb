/* SPDX-License-Identifier: BSD-3-Clause */
/* A bus's whole state as one JSON document (eddy_bus_stats_json): written here from what a front
 * end hands over, so both front ends write the same document. */
#ifndef EDDY_SRC_BUS_STATS_H
#define EDDY_SRC_BUS_STATS_H

#include "bus/admin.h"
#include "bus/requests.h"
#include "bus/retention.h"
#include "bus/sub.h"
#include "config/conn_state.h"
#include "config/settings.h"

typedef struct eddy__bus_stats_in {
    const eddy__settings *s;
    bool started;
    eddy__sub *const *subs; /* their counters are read here (atomics) */
    size_t nsubs;
    eddy__requests *requests;
    eddy_retention_stats retention;
    /* The broker's view (a complete scan of every subject), or NULL and why there is none. */
    const eddy__admin_scan *scan;
    const eddy_error *scan_err;
} eddy__bus_stats_in;

/* The document; the caller's (free). NULL with err set on OOM. */
char *eddy__bus_stats_json(const eddy__bus_stats_in *in, eddy_error *err);

/* A subscription's group summed over the subjects of the scan its pattern matches: the
 * documents' "broker" figures. lag -1 when one subject's is unknown; oldest_pending_ms the
 * largest, -1 when nothing is pending. */
typedef struct eddy__sub_broker {
    uint64_t subjects, pending, dead_letters;
    long long lag, oldest_pending_ms;
} eddy__sub_broker;
void eddy__bus_stats_broker(const eddy__sub *sub, const eddy__admin_scan *scan,
                            eddy__sub_broker *out);

/* eddy_bus_retention_stats, eddy_bus_connection_stats and eddy_bus_request_stats (and their
 * reactive twins) for a bus that is not NULL: EDDY_ERR_INVALID_ARGUMENT when out is NULL. */
eddy_status eddy__bus_retention_stats(eddy__retention_counters *c, eddy_retention_stats *out);
eddy_status eddy__bus_connection_stats(eddy__conn_state *cs, eddy_connection_stats *out);
eddy_status eddy__bus_request_stats(eddy__requests *r, const char *name, eddy_request_stats *out);

/* The name of a connection state in the documents ("connected", "auth_failed", ...; static). */
const char *eddy__conn_state_name(eddy_connection_state st);

#endif
