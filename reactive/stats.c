/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy_rbus_stats_json and eddy_rbus_stats_prometheus on the reactive front end: the counters,
 * written by the core (src/bus/bus_stats.c, src/bus/prometheus.c) at once on the loop's thread. The
 * broker's part is left out: reading it takes round trips, and a call on the loop does not wait
 * for them (an admin handle, eddy/admin.h, reads it from any other thread, as `eddy stats`
 * does). */
#include <stdlib.h>

#include "bus/bus_stats.h"
#include "bus/prometheus.h"
#include "error.h"
#include "internal.h"

typedef char *(*stats_writer)(const eddy__bus_stats_in *in, eddy_error *err);

static char *stats_doc(eddy_rbus *bus, stats_writer write, eddy_error *err) {
    if (!bus) {
        eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
        return NULL;
    }
    eddy_error why = {.status = EDDY_ERR_NOT_SUPPORTED,
                      .detail = "not read on the loop: see eddy_admin_stats_json"};
    eddy__bus_stats_in in = eddy__bus_core_stats_in(&bus->core, &bus->s, bus->active, NULL, &why);
    return write(&in, err);
}

char *eddy_rbus_stats_json(eddy_rbus *bus, eddy_error *err) {
    return stats_doc(bus, eddy__bus_stats_json, err);
}

char *eddy_rbus_stats_prometheus(eddy_rbus *bus, eddy_error *err) {
    return stats_doc(bus, eddy__bus_stats_prometheus, err);
}
