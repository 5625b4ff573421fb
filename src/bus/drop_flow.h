/* SPDX-License-Identifier: BSD-3-Clause */
/* A stopping bus's fanout groups' drop, as a step machine both front ends drive on the
 * publishing connection: a bus with a random instance takes its fanout groups with it (nobody
 * can come back for them). LIST asks for the subjects, DESTROY holds XGROUP DESTROY of each
 * fanout group on each stream its pattern matches (retention.h), then DONE.
 *
 * Invariants:
 * - Best effort: the first failure ends the flow and is logged once, here
 *   (eddy__bus_core_dropped); so is running out of memory while planning. A single destroy's
 *   error reply (a stream gone) is no failure. What a failure leaves behind, the retention pass
 *   removes once the leases ended.
 * - The subscriptions are read when a step is planned (begin, and feeding LIST), never kept:
 *   the front end passes its current list each time.
 * Thread: one at a time. No I/O, no clock. */
#ifndef EDDY_SRC_DROP_FLOW_H
#define EDDY_SRC_DROP_FLOW_H

#include <hiredis/hiredis.h>

#include "bus/sub.h"
#include "config/settings.h"
#include "util/cmdlist.h"

typedef enum { EDDY__DROP_LIST, EDDY__DROP_DESTROY, EDDY__DROP_DONE } eddy__drop_step;

typedef struct eddy__drop_flow {
    const eddy__settings *s; /* borrowed: outlives the flow */
    eddy__drop_step step;
    eddy__cmdlist cmds; /* the step's (LIST, DESTROY); the front end may move them out */
} eddy__drop_flow;

/* Plans LIST; DONE when no subscription has a fanout group to drop (or out of memory, logged).
 * Release the flow with eddy__drop_flow_reset whatever the step. */
eddy__drop_step eddy__drop_flow_begin(eddy__drop_flow *f, const eddy__settings *s,
                                      eddy__sub *const *subs, size_t n);

/* The step's outcome: st EDDY_OK with one reply per command (borrowed), or why they got none
 * (err and replies may be NULL then). subs: the bus's subscriptions now (borrowed for the
 * call). Returns the next step (also in f->step): DESTROY with its commands in f->cmds, or
 * DONE. */
eddy__drop_step eddy__drop_flow_feed(eddy__drop_flow *f, eddy_status st, redisReply *const *replies,
                                     const eddy_error *err, eddy__sub *const *subs, size_t n);

void eddy__drop_flow_reset(eddy__drop_flow *f);

#endif
