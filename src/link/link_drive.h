/* SPDX-License-Identifier: BSD-3-Clause */
/* What every driver of a link (link.h) decides alike, whatever way it waits (poll() in the
 * blocking front end, ev_io/ev_timer in the reactive one): the deadline a command gets, which
 * deadline a driver waits for next, and the reconnect gate (backoff.h) around a connect and its
 * end. Sans-IO: the driver reads the clock and passes it; nothing here waits, allocates or
 * locks, so each call costs what the arithmetic costs on a command's path.
 *
 * Rules:
 * - A command's deadline is command_timeout_ms after it was queued, plus block_ms for a
 *   blocking read, and never before the deadline of the command ahead of it: it waits behind
 *   that one, so deadlines never decrease along the queue and the oldest unanswered command's
 *   passes first.
 * - A driver wakes for the first of the link's own deadline (the connect's, a parked memory://
 *   read's BLOCK end) and its oldest command's; -1 means none.
 * - Every connect behind a gate waits for the backoff after the previous one, whatever ended
 *   that one; memory:// has no server to spare and never waits. A connect that never came up
 *   tells the gate why (refused credentials back off the longest); one that came up is a loss.
 *
 * Thread: the driver's (a gate and an epoch are its own). */
#ifndef EDDY_SRC_LINK_DRIVE_H
#define EDDY_SRC_LINK_DRIVE_H

#include <stdbool.h>

#include "config/settings.h"
#include "link/link.h"
#include "util/backoff.h"
#include "util/reply_arena.h"

/* The deadline of a command queued at now_ms (block_ms >= 0: a blocking read that long) behind
 * a command whose deadline is ahead_ms (-1: none ahead). */
long long eddy__link_cmd_deadline(const eddy__settings *s, long long now_ms, long long block_ms,
                                  long long ahead_ms);
/* The deadline of a call's commands sent at now_ms: command_timeout_ms from then, for the call as
 * a whole, or its caller's own deadline when that comes first (wall_deadline_ms > 0, on the
 * wall clock, read as wall_now_ms at now_ms; 0: none). */
long long eddy__link_call_deadline(const eddy__settings *s, long long now_ms,
                                   long long wall_deadline_ms, long long wall_now_ms);
/* The earlier of two deadlines, -1 being none (so -1 only when both are). */
long long eddy__deadline_first(long long a_ms, long long b_ms);
/* When the driver of l must look at it next if its socket says nothing: the first of the
 * link's own deadline and cmd_ms (the oldest unanswered command's, -1 none). */
long long eddy__link_next_deadline(const eddy__link *l, long long cmd_ms);

/* A driver is done with n replies it took from a link (NULL entries are fine), all built in
 * arena when it is not NULL (then reset: one call frees them all, and every other reply built
 * there since its last reset), each its own hiredis object otherwise (freeReplyObject). Every
 * entry is NULL after. */
void eddy__link_replies_done(eddy__reply_arena *arena, redisReply **replies, size_t n);

/* How long from now_ms a connect behind gate must still wait (0: at once; always 0 for memory://
 * and a NULL gate). */
long long eddy__link_gate_wait(const eddy__settings *s, const eddy__reconnect *gate,
                               long long now_ms);
/* A connect starts at now_ms: the gate starts its next backoff from here, from the shortest
 * delay again when l (NULL: a new link) answered a command on its last connection
 * (eddy__link_proved), and one line is logged per connect with the gate it is for
 * (tests/faults counts their spacing). Nothing for memory:// or a NULL gate. */
void eddy__link_gate_start(eddy__reconnect *gate, const eddy__settings *s, const eddy__link *l,
                           long long now_ms);
/* A connect of l behind gate (NULL: none) starts at now_ms, its backoff waited out
 * (eddy__link_gate_wait): the gate starts its next backoff (eddy__link_gate_start), reading
 * whether l's last connection answered a command before the connect forgets it, then l connects.
 * Returns eddy__link_connect's status (l FAILED when not EDDY_OK, but for EDDY_ERR_NOMEM). */
eddy_status eddy__link_gate_connect(eddy__reconnect *gate, const eddy__settings *s, eddy__link *l,
                                    long long now_ms, eddy_error *err);
/* The owner lets l go (NULL: none made) for good: the gate keeps whether it answered a command
 * (eddy__link_proved), so that the next connect starts from the shortest delay again. An owner
 * that keeps its link across reconnects needs no call: eddy__link_gate_start reads it. */
void eddy__link_gate_leave(eddy__reconnect *gate, const eddy__link *l);
/* A connection of l ended with st (why: the detail, NULL none): the tracker (conn_state.h)
 * counts a loss when it was up (*epoch nonzero), a failed connect otherwise; the gate (NULL:
 * none) learns what eddy__link_gate_leave tells, and why a connect that never came up (was_up
 * false) failed. *epoch is 0 after. The one step for "the connection was lost" of every
 * driver, whether it frees its link then (reactive) or keeps it for the next connect
 * (blocking: the gate then reads l's answered mark twice, to the same effect). */
void eddy__link_gate_down(eddy__reconnect *gate, const eddy__settings *s, const eddy__link *l,
                          bool was_up, unsigned *epoch, eddy_status st, const eddy_error *why);
/* A start gave up waiting for its connection: err says what (a phrase) and, when last (NULL:
 * none) holds why its last connect failed, that detail. A refusal (credentials, not a Redis
 * server: eddy__conn_refused) keeps its status, so that a caller can tell it from a server
 * that is only away; anything else is EDDY_ERR_IO. */
eddy_status eddy__link_late_error(eddy_error *err, const eddy_error *last, const char *what);

#endif
