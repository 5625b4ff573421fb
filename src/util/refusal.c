/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a routing refusal back from a failure's text; see refusal.h. */
#include "util/refusal.h"

#include <string.h>

bool eddy__cluster_moved(eddy_status st, const eddy_error *err) {
    return st == EDDY_ERR_IO && err && strstr(err->detail, EDDY__MOVED_MARK) != NULL;
}

bool eddy__cluster_rerouted(eddy_status st, const eddy_error *err) {
    eddy__cluster_refusal why = eddy__cluster_refused(st, err);
    return why == EDDY__CLUSTER_MOVED || why == EDDY__CLUSTER_TRYAGAIN ||
           (st == EDDY_ERR_IO && err && strstr(err->detail, EDDY__REROUTE_MARK " (") != NULL);
}

eddy__cluster_refusal eddy__cluster_refused(eddy_status st, const eddy_error *err) {
    if (st != EDDY_ERR_IO || !err)
        return EDDY__CLUSTER_NOT_REFUSED;
    if (strstr(err->detail, EDDY__MOVED_MARK))
        return EDDY__CLUSTER_MOVED;
    if (strstr(err->detail, EDDY__TRYAGAIN_MARK))
        return EDDY__CLUSTER_TRYAGAIN;
    if (strstr(err->detail, EDDY__DOWN_MARK))
        return EDDY__CLUSTER_DOWN;
    return EDDY__CLUSTER_NOT_REFUSED;
}
