/* SPDX-License-Identifier: BSD-3-Clause */
/* A late subscription's registration handshake, as both front ends drive it: a subscription
 * added to a bus whose control loop already runs is put in the registry on its own (the
 * control loop's heartbeat registered the others), and counts as listed (sub->listed: renewed
 * by the heartbeats, eddy__subs_listed) only once that registration was answered well, so a
 * requester that finds it finds its group in place.
 *
 * Invariants:
 * - At most one registration counts: each begin names a new one (its ticket), and only the
 *   answer carrying the ticket of the one still out is taken; any other is stale and dropped.
 * - A stop (or a registration that could not be sent) drops the one out: its answer, if it
 *   ever comes, is stale, and a start after it begins a new one.
 * - A lost connection or an error reply fails the registration (eddy__inbox_cmds_status's
 *   judgement): the front end removes the subscription again.
 * Thread: one at a time (the blocking front end holds its bus lock; reactive: the loop). */
#ifndef EDDY_SRC_ENLIST_H
#define EDDY_SRC_ENLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "bus/inbox.h"

typedef struct eddy__enlist {
    unsigned seq; /* the ticket of the last registration begun */
    bool out;     /* it is out: the subscription does not count as ready yet */
} eddy__enlist;

/* Appends the registration of sub to out and returns its ticket in *ticket; the registration
 * is out from here on (before it is sent: an answer may come inside the send). ib is the
 * running control loop's inbox; NULL (none runs) appends nothing. On failure nothing is out. */
eddy_status eddy__enlist_begin(eddy__enlist *e, eddy__inbox *ib, eddy__sub *sub, long long now_ms,
                               eddy__cmdlist *out, unsigned *ticket);
/* The answer to the registration `ticket`: st and got as the send reported them, the replies
 * when st is EDDY_OK. False: stale, nothing changed, drop it. Else *res is its outcome (why in
 * err) and, when EDDY_OK, sub is listed. Call with the front end's lock on its subs held. */
bool eddy__enlist_feed(eddy__enlist *e, unsigned ticket, eddy__sub *sub, eddy_status st,
                       const eddy_error *got, redisReply *const *replies, size_t n,
                       eddy_status *res, eddy_error *err);
/* A stop, or a registration that was not sent: the one out (if any) no longer counts. */
void eddy__enlist_drop(eddy__enlist *e);
/* A registration is out: the subscription is not ready. */
bool eddy__enlist_out(const eddy__enlist *e);

/* A start: every subscription is ready, and all count from now on, before the control loop
 * starts (its first heartbeat registers them). A stop unlists them (eddy__subs_unlist). */
void eddy__enlist_start(eddy__subs *subs);
/* The subscriptions a heartbeat renews (eddy__subs_listed), copied into *buf, which grows to
 * *cap as needed and is the caller's to free. SIZE_MAX on OOM (nothing to renew is 0). */
size_t eddy__enlist_heartbeat(const eddy__subs *subs, eddy__sub ***buf, size_t *cap);

#endif
