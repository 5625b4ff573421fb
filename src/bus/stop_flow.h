/* SPDX-License-Identifier: BSD-3-Clause */
/* A stopping bus's way out, as a step machine both front ends drive on the publishing
 * connection: LEAVE takes the subscriptions out of the registry (so requesters see "no
 * responders" rather than wait) and deletes the reply stream (eddy__inbox_close_cmds); then a
 * bus with a random instance takes its fanout groups with it (nobody can come back for them):
 * LIST asks for the subjects, DESTROY holds XGROUP DESTROY of each fanout group on each stream
 * its pattern matches (retention.h); then DONE.
 *
 * Invariants:
 * - Best effort: each part's failure is logged once, here (eddy__bus_core_left, then
 *   eddy__bus_core_dropped), and never fails the stop: the leases end by themselves, and the
 *   retention pass removes what the drop left once they did. A failed leave does not keep the
 *   drop from being tried; a failed drop step ends the flow. A destroy's error reply (a stream
 *   gone) is no failure. A bus being freed (EDDY_ERR_CLOSED) ends the flow, unlogged.
 * - The front end may do what the stop needs between two steps (the blocking bus stops its
 *   readers before LIST, so none creates a group again); the subscriptions are read when a step
 *   is planned, never kept: the front end passes its current list each time.
 * Thread: one at a time. No I/O, no clock. */
#ifndef EDDY_SRC_STOP_FLOW_H
#define EDDY_SRC_STOP_FLOW_H

#include <hiredis/hiredis.h>

#include "bus/inbox.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "util/cmdlist.h"

typedef enum {
    EDDY__STOP_LEAVE,
    EDDY__STOP_LIST,
    EDDY__STOP_DESTROY,
    EDDY__STOP_DONE
} eddy__stop_step;

typedef struct eddy__stop_flow {
    const eddy__settings *s; /* borrowed: outlives the flow */
    eddy__stop_step step;
    eddy__cmdlist cmds; /* the step's (LEAVE, LIST, DESTROY) */
} eddy__stop_flow;

/* Plans LEAVE for the activation's inbox (borrowed for the call), or, with none, the drop
 * straight away: LIST, or DONE when no subscription has a fanout group to drop. Out of memory
 * is a failed step (logged). Release the flow with eddy__stop_flow_reset whatever the step. */
eddy__stop_step eddy__stop_flow_begin(eddy__stop_flow *f, const eddy__settings *s,
                                      eddy__inbox *inbox, eddy__sub *const *subs, size_t n);

/* The step's outcome: st EDDY_OK with one reply per command (borrowed), or why they got none
 * (err and replies may be NULL then). subs: the bus's subscriptions now (borrowed for the
 * call). Returns the next step (also in f->step), its commands in f->cmds. */
eddy__stop_step eddy__stop_flow_feed(eddy__stop_flow *f, eddy_status st, redisReply *const *replies,
                                     const eddy_error *err, eddy__sub *const *subs, size_t n);

void eddy__stop_flow_reset(eddy__stop_flow *f);

#endif
