/* SPDX-License-Identifier: BSD-3-Clause */
/* A blocking connection to the backend: the core's link (src/link/link.h) driven with poll(), for
 * every URL (memory:// included: the engine stands behind the same link). It only waits; what to
 * send, what replies mean and how the socket is spoken are decided in the core. Every call that
 * waits on the server has a deadline: settings.command_timeout_ms, plus block_ms for a
 * blocking read; past it the call fails with EDDY_ERR_IO (not all sent) or EDDY_ERR_TIMEOUT
 * (sent, outcome unknown) and the connection is dropped (its replies are no longer accounted
 * for, so it is not used again).
 *
 * Thread: one thread uses a connection at a time (callers lock), except eddy__bconn_interrupt and
 * eddy__bconn_resume, which any thread may call to stop a blocking read or a backoff sleep. */
#ifndef EDDY_BLOCKING_CONN_H
#define EDDY_BLOCKING_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>

#include "config/settings.h"
#include "link/link.h"
#include "util/backoff.h"
#include "util/cmdlist.h"
#include "util/reply_arena.h"

typedef struct bconn {
    const eddy__settings *s;
    eddy__link *link;     /* made at the first connect, kept across reconnects */
    bool up;              /* the link is READY (guarded by lock, as the link's socket) */
    pthread_mutex_t lock; /* guards in_read, interrupted and the link's socket against interrupt */
    pthread_cond_t wake;
    bool in_read;
    bool interrupted;
    bool woken;          /* eddy__bconn_wake: the next (or current) sleep returns at once, once */
    bool cut;            /* eddy__bconn_wake(cut): the next (or current) blocking read ends, once */
    bool blocking;       /* a round with a blocking read is out */
    long long client_id; /* the server's id for this connection, -1 unknown (guarded by lock) */
    eddy__reconnect gate;     /* backoff.h: every connect waits for the backoff of the previous */
    unsigned state_epoch;     /* conn_state.h: nonzero while up (reported to the bus's tracker) */
    eddy__reply_arena *arena; /* eddy__bconn_use_arena: redis:// replies are built in it */
    eddy__reply_arena *live_arena; /* the arena the replies handed out live in, or NULL */
} bconn;

/* EDDY_OK (the link is made at the first connect); eddy__bconn_destroy either way. */
eddy_status eddy__bconn_init(bconn *c, const eddy__settings *s);
/* Closes the connection and frees what eddy__bconn_init and connecting allocated. */
void eddy__bconn_destroy(bconn *c);

/* Connects (with the AUTH and SELECT handshake) unless already connected, within
 * settings.connect_timeout_ms. */
eddy_status eddy__bconn_connect(bconn *c, eddy_error *err);
/* The same, returning EDDY_ERR_IO by `until` (monotonic ms; -1 none) when the connect (with its
 * handshake) is not done by then, although its own connect_timeout_ms has not passed. */
eddy_status eddy__bconn_connect_until(bconn *c, long long until, eddy_error *err);
bool eddy__bconn_connected(const bconn *c);
/* memory://: commands are answered in this process, at once (no socket worth sharing). */
bool eddy__bconn_in_process(const bconn *c);
/* Drops the connection (the next eddy__bconn_connect makes a new one). */
void eddy__bconn_close(bconn *c);

/* Sends every command of `cmds` as one pipeline and reads one reply each into replies (the
 * caller frees them with eddy__bconn_release). When block_ms >= 0 the last command is a blocking
 * read of about that long. On failure every reply is NULL, the connection is dropped (the next
 * eddy__bconn_connect makes a new one) and the status is EDDY_ERR_IO, EDDY_ERR_TIMEOUT (the
 * deadline passed after everything was sent), or EDDY_ERR_CLOSED when eddy__bconn_interrupt ended a
 * blocking read. Connects first when needed. */
eddy_status eddy__bconn_exec(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                             redisReply **replies, eddy_error *err);
/* The same, where `cuttable` says the last command is a read that eddy__bconn_wake(cut) must be
 * able to cut short even when it does not block (a subscription's live read behind
 * acknowledgements): the same CLIENT KILL and cut checks as for a blocking read. */
eddy_status eddy__bconn_exec_read(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                                  bool cuttable, redisReply **replies, eddy_error *err);

/* Frees the replies of the last eddy__bconn_exec (and sets them NULL). Call it before the next
 * eddy__bconn_exec on a connection that uses an arena. */
void eddy__bconn_release(bconn *c, redisReply **replies, size_t n);

/* From now on, redis:// replies are built in an arena (reply_arena.h) and all freed by the next
 * eddy__bconn_release: for a connection whose replies are dropped after each round trip (a
 * subscription's reader). EDDY_ERR_NOMEM when the arena cannot be made. */
eddy_status eddy__bconn_use_arena(bconn *c);

/* As eddy__bconn_exec, with the redis:// replies of this call built in `arena` (the caller's: it
 * resets or frees it once done with them, and no eddy__bconn_release is needed); *in_arena says
 * whether they are (they are whenever the call succeeded). For a
 * connection shared under a lock whose replies are read after the lock is released. */
eddy_status eddy__bconn_exec_in(bconn *c, eddy__reply_arena *arena, const eddy__cmdlist *cmds,
                                long long block_ms, redisReply **replies, bool *in_arena,
                                eddy_error *err);

/* Sleeps ms milliseconds unless interrupted (returns false when interrupted). */
bool eddy__bconn_sleep(bconn *c, long long ms);
/* Sleeps the next backoff delay before a reconnect attempt (false when interrupted). */
bool eddy__bconn_backoff(bconn *c);

/* Makes a blocking read or sleep on this connection return at once, and every later one until
 * eddy__bconn_resume. Thread: any. */
void eddy__bconn_interrupt(bconn *c);
void eddy__bconn_resume(bconn *c);

/* A one-shot interrupt (a pause or resume): ends the current or next sleep, and with cut the
 * current or next blocking read too (EDDY_ERR_CLOSED; on redis:// the connection is dropped,
 * as for an interrupt). The reader clears both with eddy__bconn_wake_clear just before it plans, so
 * a wake that came before the plan does not cut the read that plan makes. Returns, when cut found a
 * blocking read out on a redis:// connection whose client id is known (CLIENT ID), that id, else
 * -1: the caller then has the server drop the client (CLIENT KILL ID on another connection), which,
 * unlike our own shutdown, takes effect before anything written after it, so the cut read takes
 * nothing published afterwards. Thread: any. */
long long eddy__bconn_wake(bconn *c, bool cut);
void eddy__bconn_wake_clear(bconn *c);

/* A condition variable whose timed waits use CLOCK_MONOTONIC, the clock of eddy__mono_ms
 * (timing.h), which every deadline here is on. */
void eddy__bcond_init_monotonic(pthread_cond_t *cond);

#endif
