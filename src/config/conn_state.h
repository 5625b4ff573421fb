/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection state of one bus (or store, or dead-letter reader): every connection it opens
 * reports here when it came up, when connecting failed and when it was lost, and this decides
 * what the owner of the settings is told (eddy_connection_state), logs each change once, keeps
 * the counters (eddy_connection_stats) and says how a failed attempt is retried.
 *
 * Connections report through three calls; `epoch` is the connection's own word (zero while it
 * is not up), written by these calls only:
 *   eddy__conn_up      the handshake succeeded;
 *   eddy__conn_failed  connecting or the handshake failed (never up);
 *   eddy__conn_lost    an up connection failed (a no-op when *epoch is 0);
 *   eddy__conn_proved  an up connection answered a command (see conn_state.c: an outage a
 *                      cluster redirect began ends only then).
 * A connection the owner closes on purpose reports nothing (it only sets its epoch to 0).
 *
 * Thread: any; the tracker has its own lock, and the user's callback runs outside it but
 * serialised, in the order of the changes. */
#ifndef EDDY_SRC_CONN_STATE_H
#define EDDY_SRC_CONN_STATE_H

#include <stdbool.h>

#include "eddy/bus.h"
#include "log.h"
#include "util/url.h"

typedef struct eddy__conn_state eddy__conn_state;

/* NULL on OOM. Ownership: url and log are copied (the server's name without its password). */
eddy__conn_state *eddy__conn_state_new(const eddy__url *url, const eddy__logger *log,
                                       eddy_connection_fn fn, void *user,
                                       unsigned reconnect_max_ms);
void eddy__conn_state_free(eddy__conn_state *cs);

/* The hooks; every one accepts a NULL tracker. `why` may be NULL (the status's text serves). */
void eddy__conn_up(eddy__conn_state *cs, unsigned *epoch);
void eddy__conn_failed(eddy__conn_state *cs, eddy_status st, const eddy_error *why);
void eddy__conn_lost(eddy__conn_state *cs, unsigned *epoch, eddy_status st, const eddy_error *why);
/* A connection that is up answered a command: ends an outage in doubt (a cluster redirect's,
 * see conn_state.c), a test of one bit otherwise, so callable on every answer. */
void eddy__conn_proved(eddy__conn_state *cs, unsigned *epoch);
/* eddy__conn_lost when the connection was up, eddy__conn_failed otherwise. */
void eddy__conn_down(eddy__conn_state *cs, unsigned *epoch, eddy_status st, const eddy_error *why);

/* The backoff step (eddy__backoff_delay_ms's attempt, plus one) after an attempt that failed
 * with st: the next one, or, for refused credentials, the longest (retrying sooner cannot
 * help and only fills the server's log). */
/* The publishing side found the server behind what it had acknowledged (stream_look.h): n
 * writes lost, counted in eddy_connection_stats.lost_writes. cs may be NULL. */
void eddy__conn_writes_lost(eddy__conn_state *cs, uint64_t n);
unsigned eddy__conn_next_attempt(unsigned attempt, eddy_status st);

/* True for a connect failure that starting does not wait out (it would only time out later
 * with a vaguer status): the server refused the credentials, or it does not speak RESP. */
bool eddy__conn_refused(eddy_status st);

void eddy__conn_stats(eddy__conn_state *cs, eddy_connection_stats *out);

/* redis-sentinel://: the master this handle writes to is no longer to be trusted, and every
 * connection of the handle asks the sentinels afresh (src/link/link.c compares the epoch it
 * connected at with eddy__conn_master_epoch at each step, and fails when they differ).
 * eddy__conn_master_moved: a sentinel announced +switch-master, or a master answered READONLY;
 * always a new epoch. eddy__conn_master_doubt: a WAIT shortfall or a ROLE that is not master;
 * a new epoch unless the last one is younger than reconnect_max_ms, doubled for each doubt
 * since the last move or a quiet period (at most 64 times): a replica merely down or behind then
 * costs the handle a few rounds of reconnects, not one per publish. cs may be NULL (epoch 0,
 * nothing happens). */
void eddy__conn_master_moved(eddy__conn_state *cs);
/* A failover started replacing the master at host:port (+failover-state-wait-promotion): a new
 * epoch, and eddy__conn_master_avoided says true for that address until the sentinels name
 * another one, or for EDDY__AVOID_MS at most (a failover that was aborted leaves it the master,
 * and it is used again then). */
void eddy__conn_master_avoid(eddy__conn_state *cs, const char *host, int port);
bool eddy__conn_master_avoided(eddy__conn_state *cs, const char *host, int port);
#define EDDY__AVOID_MS 10000
void eddy__conn_master_doubt(eddy__conn_state *cs);
unsigned eddy__conn_master_epoch(const eddy__conn_state *cs);
/* How many epochs a move (eddy__conn_master_moved or _avoid) began, doubts not counted: a
 * connection that watches every sentinel (sentinel.h) follows a doubt only when it comes with
 * a move, since a failover's leader, whichever sentinel it is, announces its steps to it. */
unsigned eddy__conn_master_moves(const eddy__conn_state *cs);

#endif
