/* SPDX-License-Identifier: BSD-3-Clause */
/* A bus activation's control loop, as a state machine both front ends drive on a connection
 * of its own: it opens the activation's reply stream ({ns}:inbox:<random id>) before any
 * request can be sent, renews the subscription registry's leases and the reply stream's
 * expiry by heartbeat (every lease_ms / 3), and reads replies, matching each to the request
 * waiting for it (see requests.h); once registered it also runs the retention passes
 * (retention.h) in rounds of their own. Protocol as for the consumer: plan, send, feed; a
 * blocking read is never pipelined behind other commands. A plan may hold any number of
 * commands (a retention round has some per subject stream); a plan that could not be sent is
 * followed by eddy__inbox_reset.
 * Thread: plan, feed and reset from one thread at a time. */
#ifndef EDDY_SRC_INBOX_H
#define EDDY_SRC_INBOX_H

#include "bus/consumer.h"
#include "bus/requests.h"
#include "bus/retention.h"

typedef struct eddy__inbox eddy__inbox;

typedef struct eddy__reply_list {
    eddy__reply_done *v;
    size_t n, cap;
} eddy__reply_list;

/* Ownership: settings, requests and counters (the bus's retention counters, retention.h) are
 * borrowed. NULL on OOM. */
eddy__inbox *eddy__inbox_new(const eddy__settings *s, eddy__requests *reqs,
                             eddy__retention_counters *counters, long long now_ms);
void eddy__inbox_free(eddy__inbox *ib);
/* The reply stream's key (borrowed). */
const char *eddy__inbox_key(const eddy__inbox *ib);

/* Every now_ms here is wall-clock (eddy_now_ms), read by the caller: leases are wall-clock.
 * subs are the bus's current
 * subscriptions, registered and renewed by the heartbeat. */
eddy_status eddy__inbox_plan(eddy__inbox *ib, long long now_ms, eddy__sub *const *subs, size_t n,
                             eddy__plan *plan);
/* The next round as both front ends take it: plan (reset first) holds commands to send now, and
 * -1 is returned; or there is nothing to send yet, and the ms to wait (interruptibly) before
 * asking again: the plan's idle time, or EDDY__NOMEM_RETRY_MS when planning ran out of memory
 * (nothing was planned). */
long long eddy__inbox_next(eddy__inbox *ib, long long now_ms, eddy__sub *const *subs, size_t n,
                           eddy__plan *plan);
/* Appends completed requests to out (the receiver completes each waiter, owns each reply). */
eddy_status eddy__inbox_feed(eddy__inbox *ib, long long now_ms, const eddy__plan *plan,
                             redisReply **replies, size_t n, eddy__reply_list *out);
/* True once the reply stream exists and the subscriptions are registered. */
bool eddy__inbox_ready(const eddy__inbox *ib);
/* The connection was lost: register again on the next plan, and open a new reply stream only
 * if the old one is gone. */
void eddy__inbox_reset(eddy__inbox *ib, long long now_ms);
/* Commands for a bus that stops: its subscriptions leave the registry, its reply stream goes. */
eddy_status eddy__inbox_close_cmds(eddy__inbox *ib, eddy__sub *const *subs, size_t n,
                                   eddy__cmdlist *out);
/* Registers one subscription at once (a late subscribe must count before it returns). */
eddy_status eddy__inbox_register_cmds(eddy__inbox *ib, eddy__sub *sub, long long now_ms,
                                      eddy__cmdlist *out);
/* The outcome of close or register commands, as both front ends judge it: st when they got no
 * replies (got: why, may be NULL; EDDY_ERR_CLOSED: the bus is being freed), else the first
 * error reply's (EDDY_OK when there is none), with its detail in err. */
eddy_status eddy__inbox_cmds_status(eddy_status st, const eddy_error *got,
                                    redisReply *const *replies, size_t n, eddy_error *err);

/* A start whose control loop was not ready in time, as both front ends report it: a refusal
 * (eddy__conn_refused) as the last connection error `last` keeps its status, anything else is
 * EDDY_ERR_IO; last's detail, when there is one, follows the text. Returns err's status. */
eddy_status eddy__inbox_late(const eddy_error *last, eddy_error *err);

void eddy__reply_list_free(eddy__reply_list *l);

#endif
