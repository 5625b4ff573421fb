/* SPDX-License-Identifier: BSD-3-Clause */
/* Running an admin scan (src/bus/admin.h) to its end on the blocking front end, over whichever
 * connection the caller has: an admin handle's own, or a bus's publishing connection (the bus's
 * stats document). */
#ifndef EDDY_BLOCKING_SCAN_H
#define EDDY_BLOCKING_SCAN_H

#include "bus/admin.h"

/* Sends cmds as one pipeline and reads one reply each into replies (cmds->n of them, the
 * caller's to free; on failure each is NULL). */
typedef eddy_status (*bscan_exec_fn)(void *ctx, const eddy__cmdlist *cmds, redisReply **replies,
                                     eddy_error *err);

eddy_status eddy__bscan_run(eddy__admin_scan *s, bscan_exec_fn exec, void *ctx, eddy_error *err);

#endif
