/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection of the reactive front end, on the user's libev loop: the core's link (redis://,
 * rediss://, unix://, and memory://, whose engine stands behind the same link; src/link/link.h)
 * waited on with ev_io and ev_timer. It only moves commands and replies; what to send and what
 * replies mean is decided by the core.
 *
 * The owner sees three events, always from the loop and never from inside one of its own
 * calls into this file, except for eddy__rconn_drain, which exists to deliver replies at once:
 *   up     the connection can take commands (after AUTH/SELECT);
 *   reply  one reply, in command order, borrowed for the call (eddy__rconn_keep takes it);
 *   down   the connection failed or was lost: commands still pending get no reply. Called
 *          once; the owner then closes the connection, inside the call or later. Its status
 *          is EDDY_ERR_TIMEOUT when the oldest command's deadline passed after it was
 *          written (sent, outcome unknown), and then eddy__rconn_sent says which of the others
 *          were written too; EDDY_ERR_IO when it passed before (not sent), or when the
 *          connection was lost; EDDY_ERR_TLS, EDDY_ERR_PROTOCOL, EDDY_ERR_BACKEND (the
 *          handshake refused) or EDDY_ERR_NOMEM otherwise.
 * Every command has a deadline: command_timeout_ms after it was queued (plus the block_ms of a
 * blocking read), and never before the command ahead of it; the connect and its handshake
 * have connect_timeout_ms. After eddy__rconn_close nothing is called any more: a close is not an
 * error. Memory is released at once, or after the outermost callback of this connection
 * returns when the close came from inside one.
 *
 * Thread: the loop's thread only. */
#ifndef EDDY_REACTIVE_CONN_H
#define EDDY_REACTIVE_CONN_H

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/settings.h"
#include "util/backoff.h"
#include "util/cmd.h"

typedef struct rconn rconn;

typedef struct rconn_ops {
    void (*up)(void *owner);
    void (*reply)(void *owner, void *priv, redisReply *reply);
    void (*down)(void *owner, eddy_status st, const eddy_error *err);
} rconn_ops;

/* Starts connecting, behind the owner's reconnect gate (backoff.h; borrowed, it outlives the
 * connection; NULL: none): the link opens once the backoff after the previous connect passed
 * (at once when it did), and the gate learns of this connect, of its answers and of a refused
 * one. An owner sends nothing before `up`, so nothing waits on the gate but the connect itself.
 * A memory connection is up at once (eddy__rconn_is_up) and never calls `up`.
 * Ownership: settings and ops are borrowed and must outlive the connection's owner side (they
 * are not touched after eddy__rconn_close); *out is the owner's until eddy__rconn_close.
 * EDDY_ERR_NOMEM is the only failure; every connection error arrives through `down`. */
eddy_status eddy__rconn_open_gated(struct ev_loop *loop, const eddy__settings *s,
                                   const rconn_ops *ops, void *owner, eddy__reconnect *gate,
                                   rconn **out);

bool eddy__rconn_is_up(const rconn *c);

/* The server's id for this connection (the handshake asks CLIENT ID), or -1: unknown, or
 * memory://. A pause has the server drop a reader's connection by it (CLIENT KILL ID). */
long long eddy__rconn_client_id(const rconn *c);

/* Queues one command. `cmd` is copied for a socket; memory:// borrows it: it must stay valid until
 * its reply arrives or the connection goes down or is closed. block_ms >= 0 marks a blocking read
 * of that length (it extends the command's deadline). Returns the command's number (1, 2, ...
 * in the order they were queued), or 0 when it cannot be queued; `down` follows from the
 * loop. */
uint64_t eddy__rconn_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv);

/* The number of the last command whose bytes were all written (memory://: that ran, or waits
 * parked as a blocking read);
 * during and after `down`, as it stood when the connection failed. A command numbered above it
 * never reached the server whole. */
uint64_t eddy__rconn_sent(const rconn *c);

/* During `reply`: an owned reply equal to `reply` (freeReplyObject it), or NULL on OOM. */
redisReply *eddy__rconn_keep(rconn *c, redisReply *reply);

/* Writes what is queued and delivers replies that already arrived, without waiting: a stop
 * uses it so that settled acknowledgements are on the wire, and answered commands are
 * accounted for, before it returns. No-op when called from inside this connection's own
 * callbacks. */
void eddy__rconn_drain(rconn *c);

/* Drops the connection: what is queued is written if the socket takes it without waiting
 * (memory://: runs now, up to a blocking read that would wait); pending commands get no
 * reply. NULL is a no-op. */
void eddy__rconn_close(rconn *c);

#endif
