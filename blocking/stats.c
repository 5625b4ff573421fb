/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy_bus_stats_json and eddy_bus_stats_prometheus on the blocking front end: the broker's view
 * is scanned on the publishing connection (multiplexed: no lock held while it travels), then the
 * counters are read under subs_lock and the core writes the document (src/bus/bus_stats.c,
 * src/bus/prometheus.c). */
#include <stdlib.h>
#include <string.h>

#include "bus/bus_stats.h"
#include "bus/prometheus.h"
#include "error.h"
#include "internal.h"
#include "scan.h"

static eddy_status on_publisher(void *ctx, const eddy__cmdlist *cmds, redisReply **replies,
                                eddy_error *err) {
    return eddy__bpub_exec(ctx, cmds, replies, err);
}

typedef char *(*stats_writer)(const eddy__bus_stats_in *in, eddy_error *err);

static char *stats_doc(eddy_bus *bus, stats_writer write, eddy_error *err) {
    if (!bus) {
        eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
        return NULL;
    }
    eddy_error scan_err = {0};
    eddy__admin_scan *scan = eddy__admin_scan_new(bus->s.ns, NULL);
    if (!scan)
        eddy__fail(&scan_err, EDDY_ERR_NOMEM, "out of memory");
    else if (eddy__bscan_run(scan, on_publisher, bus, &scan_err) != EDDY_OK) {
        eddy__admin_scan_free(scan);
        scan = NULL;
    }
    pthread_mutex_lock(&bus->subs_lock);
    /* active, not bus->lock: a start holds that for a while */
    eddy__bus_stats_in in =
        eddy__bus_core_stats_in(&bus->core, &bus->s, atomic_load(&bus->active), scan, &scan_err);
    char *doc = write(&in, err);
    pthread_mutex_unlock(&bus->subs_lock);
    eddy__admin_scan_free(scan);
    return doc;
}

char *eddy_bus_stats_json(eddy_bus *bus, eddy_error *err) {
    return stats_doc(bus, eddy__bus_stats_json, err);
}

char *eddy_bus_stats_prometheus(eddy_bus *bus, eddy_error *err) {
    return stats_doc(bus, eddy__bus_stats_prometheus, err);
}
