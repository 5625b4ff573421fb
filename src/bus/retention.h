/* SPDX-License-Identifier: BSD-3-Clause */
/* Retention of subject streams, as a state machine the bus activation's control loop (inbox.h)
 * drives in round trips of its own, never pipelined behind its blocking read. No clock is read
 * and no I/O done here: the caller passes wall-clock now_ms, sends what plan appended and feeds
 * one reply per command.
 *
 * A pass, every retention_interval_ms, in five rounds:
 *   1. lease:   SET {ns}:retention <instance> NX PX <3 intervals>, GET: holder or not.
 *   2. list:    (PEXPIRE when renewing) SMEMBERS {ns}:subjects.
 *   3. groups:  per subject stream, XINFO GROUPS (and XLEN under a length limit).
 *   4. detail:  per group, XPENDING summary (oldest pending) when it has pending entries, XINFO
 *               CONSUMERS when clean-up may concern it; XRANGE of the entries a limit drops;
 *               then the registry of live leases and the server's TIME, last of all.
 *   5. act:     XGROUP DESTROY of dead fanout groups, XGROUP DELCONSUMER of idle consumers,
 *               XPENDING ranges (to count what a limit drops), XTRIM MINID per stream.
 * See retention.c for the rules and the race analysis. */
#ifndef EDDY_SRC_RETENTION_H
#define EDDY_SRC_RETENTION_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>

#include "bus/sub.h"
#include "config/settings.h"
#include "util/cmdlist.h"

/* Counters that outlive one activation (the bus owns them). Thread: any (atomics). */
typedef struct eddy__retention_counters {
    atomic_uint_fast64_t passes, trimmed, dropped, groups_removed, consumers_removed;
} eddy__retention_counters;

void eddy__retention_counters_snapshot(eddy__retention_counters *c, eddy_retention_stats *out);

typedef struct eddy__retention eddy__retention;

/* holder: the lease's value, unique to this activation (two buses of one instance are two
 * holders). Ownership: settings and counters are borrowed and must outlive the machine; holder
 * is copied. NULL on OOM. The first pass is due retention_interval_ms after now_ms; none with
 * an interval of 0. */
eddy__retention *eddy__retention_new(const eddy__settings *s, eddy__retention_counters *counters,
                                     const char *holder, long long now_ms);
void eddy__retention_free(eddy__retention *r);

/* When the next round is due (wall-clock ms); LLONG_MAX when retention is off. */
long long eddy__retention_due(const eddy__retention *r);

/* Appends the next round's commands to out (empty: nothing due). EDDY_ERR_NOMEM leaves out
 * without the round's commands and ends the pass: nothing is trimmed on partial knowledge. */
eddy_status eddy__retention_plan(eddy__retention *r, long long now_ms, eddy__cmdlist *out);

/* The replies to the round last planned, one per command (cmds is that list). A NULL reply:
 * EDDY_ERR_IO (the connection failed; the pass is abandoned). Replies the pass cannot use end
 * it with a log line (EDDY_OK: retried at the next interval). */
eddy_status eddy__retention_feed(eddy__retention *r, long long now_ms, const eddy__cmdlist *cmds,
                                 redisReply **replies, size_t n);

/* The connection was lost: the pass in progress is abandoned (nothing more is sent for it). */
void eddy__retention_reset(eddy__retention *r, long long now_ms);

/* The stop clean-up of a bus with a random instance: its fanout groups go. Round 1: appends
 * SMEMBERS {ns}:subjects (nothing when no subscription is a fanout one: *need false). Round
 * 2: from that reply (borrowed), appends XGROUP DESTROY of each fanout group on each subject
 * stream its pattern matches. Replies to the destroys may be errors (a stream that is gone):
 * the caller ignores them. */
eddy_status eddy__retention_stop_list(const eddy__settings *s, eddy__sub *const *subs, size_t n,
                                      eddy__cmdlist *out, bool *need);
eddy_status eddy__retention_stop_destroy(const eddy__settings *s, eddy__sub *const *subs, size_t n,
                                         const redisReply *subjects, eddy__cmdlist *out);

#endif
