/* SPDX-License-Identifier: BSD-3-Clause */
/* Replies matched to their commands on a connection that several callers share: each caller's
 * commands go on the wire as one contiguous run, and a slot for their replies joins a FIFO in
 * the same order, under the same lock as the write; replies are fed in the order they arrive
 * and each fills the oldest slot still waiting. Sans-IO: it neither reads nor waits, so the
 * blocking front end (several threads, one reader at a time), the reactive one (the loop) and
 * a transport can all drive it.
 *
 * Invariants: a slot is in the FIFO from its push until its last reply is fed or the
 * connection is failed; it leaves the FIFO before it is returned, completed (st EDDY_OK, every
 * reply in place) or failed (st set, every reply freed and NULL), exactly once.
 *
 * Thread: not locked; whoever drives it serialises its calls. */
#ifndef EDDY_SRC_PIPELINE_H
#define EDDY_SRC_PIPELINE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"

typedef struct eddy__pipe_slot {
    redisReply **replies; /* the caller's array of n; filled in order */
    size_t n, got;
    eddy_status st;
    void *waiter; /* the front end's, handed back with the slot */
    bool arena;   /* its replies are in the caller's arena: failing drops them, never frees */
    struct eddy__pipe_slot *next;
} eddy__pipe_slot;

typedef struct eddy__pipeline {
    eddy__pipe_slot *head, *tail;
    size_t nslots;
} eddy__pipeline;

void eddy__pipeline_init(eddy__pipeline *pl);

/* Appends a slot for n (> 0) replies, to be pushed in the order the commands are written.
 * Ownership: slot and replies are the caller's and must live until the slot is returned. */
void eddy__pipeline_push(eddy__pipeline *pl, eddy__pipe_slot *slot, redisReply **replies, size_t n,
                         void *waiter);

/* The next reply in wire order (taken). Returns the slot it completed, or NULL when its slot
 * still waits for more. A reply with no slot waiting is a protocol error: *unexpected is set,
 * the reply is freed, and the caller fails the connection. */
eddy__pipe_slot *eddy__pipeline_feed(eddy__pipeline *pl, redisReply *reply, bool *unexpected);

/* The connection was lost: takes the oldest slot out with st (its replies freed), or returns
 * NULL when none waits. Call until NULL. */
eddy__pipe_slot *eddy__pipeline_fail_next(eddy__pipeline *pl, eddy_status st);

/* Whether a returned slot needs its caller now: it failed, or one of its replies is missing or
 * an error reply. */
bool eddy__pipeline_slot_failed(const eddy__pipe_slot *slot);

/* The oldest slot still waiting (its waiter is next in line for the reader's role), or NULL. */
eddy__pipe_slot *eddy__pipeline_head(const eddy__pipeline *pl);

#endif
