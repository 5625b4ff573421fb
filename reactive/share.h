/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection the rounds of many subscriptions share (src/bus/wakeup.h has the design): a
 * round that does not block (a group read without BLOCK, acknowledgements, claims, history)
 * is written on it beside the other rounds', and its replies come back to it in wire order.
 * A round that blocks never goes on it: round.c gives such a round a connection of its own.
 *
 * It connects on first use, behind its own reconnect gate (backoff.h); a round attached while
 * it connects is told once it is up. When it is lost, every attached round is detached and
 * told, as if its own connection were lost: each reconnects after its own backoff by attaching
 * again. A round whose own replies made no sense is detached alone (round.c): replies stay in
 * wire order for the others, and a detached round's replies still due are dropped as they
 * come.
 *
 * Thread: the loop's thread only; every callback into round.c runs inside an
 * eddy__rbus_enter/eddy__rbus_leave bracket. */
#ifndef EDDY_REACTIVE_SHARE_H
#define EDDY_REACTIVE_SHARE_H

#include <stdbool.h>
#include <stddef.h>

#include "conn.h"
#include "eddy/reactive.h"

typedef struct rshare rshare;
struct rround;

/* NULL on OOM. The bus is borrowed and must outlive it. */
rshare *eddy__rshare_new(eddy_rbus *bus);
/* Closes the connection; every round must be detached already. NULL is a no-op. */
void eddy__rshare_free(rshare *s);

/* Attaches r: EDDY_OK when the connection is up (r may send now), EDDY_PENDING when r is told
 * later (eddy__rround_share_up), EDDY_ERR_NOMEM when no connection could be started (r stays
 * detached). */
eddy_status eddy__rshare_attach(rshare *s, struct rround *r);
/* Detaches r (attached or not); its replies still due are dropped. */
void eddy__rshare_detach(rshare *s, struct rround *r);
/* The connection, NULL while there is none. */
rconn *eddy__rshare_conn(const rshare *s);
/* Queues one command of r's round (never a blocking one); false when it cannot be queued
 * (the loss follows from the loop). */
bool eddy__rshare_send(rshare *s, struct rround *r, const eddy__cmd *cmd);
/* Rounds attached (for tests and the bench). */
size_t eddy__rshare_rounds(const rshare *s);

#endif
