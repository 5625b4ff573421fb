/* SPDX-License-Identifier: BSD-3-Clause */
/* A dead-letter replay as a sans-IO step machine (eddy_dlq_replay, eddy_dlq_replay_all): the
 * front end asks for the next round (a pipeline of commands), sends it, feeds the replies back,
 * and asks again until a round comes back empty; then it reads the outcome. Every decision of a
 * replay is here, built on dlq.h's commands and readers:
 *
 * - One dead letter: read it first (an id that is not there publishes nothing: EDDY_ERR_NOT_FOUND),
 *   then its transaction (MULTI, XADD to its subject, SADD, XDEL, EXEC).
 * - All of them: the newest id first, which is where the replay stops (dead letters written
 *   meanwhile stay), then pages of REPLAY_PAGE in id order, each replayed as one pipeline. A dead
 *   letter that names no valid subject or holds no entry (eddy__dlq_replayable) is left in place
 *   and counted; after the last page the replay fails with EDDY_ERR_MALFORMED naming the first
 *   such and how many, unless something failed before.
 * - In a pipeline each transaction stands alone: the replayed ones count, the first failure is
 *   the replay's status (and its detail), the others still ran. A page with a failure is the
 *   last one.
 * - A transaction whose publish the server refused but whose delete it ran (dlq.h,
 *   eddy__dlq_replay_result) is written back with eddy__dlq_restore_cmd in the next round, once;
 *   each outcome is logged, and the status's detail says what became of the first one.
 * - Reads (the dead letter, the newest, a page) are idempotent: a round of them that was lost
 *   with its connection may go once more on a new one (`idempotent`). Transactions and
 *   write-backs never go twice: the server may have run them.
 *
 * Thread: none of its own; one thread drives a flow at a time. */
#ifndef EDDY_SRC_BUS_REPLAY_FLOW_H
#define EDDY_SRC_BUS_REPLAY_FLOW_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/settings.h"
#include "util/cmdlist.h"

typedef struct eddy__replay_flow eddy__replay_flow;

/* A replay of group's dead letter `id` (one), or of all of them. The settings are borrowed and
 * must outlive it; group and id are copied (NULL or bad ones fail at the first plan, as the
 * commands' builders say). EDDY_ERR_NOMEM. */
eddy_status eddy__replay_flow_new(const eddy__settings *s, const char *group, bool one,
                                  const char *id, eddy__replay_flow **out, eddy_error *err);
void eddy__replay_flow_free(eddy__replay_flow *f);

/* The next round into `cmds` (empty: the replay is over, read eddy__replay_flow_result), and
 * whether it may be sent once more after a lost connection. */
void eddy__replay_flow_plan(eddy__replay_flow *f, eddy__cmdlist *cmds, bool *idempotent);
/* The round just planned came back: st EDDY_OK with one reply per command (borrowed), or the
 * failure (err, replies unused). */
void eddy__replay_flow_feed(eddy__replay_flow *f, eddy_status st, redisReply **replies,
                            const eddy_error *err);

/* The outcome once a plan came back empty: EDDY_OK, or the first failure with its detail in
 * err. *replayed (may be NULL) counts the dead letters published; entry_id (may be NULL)
 * receives the new entry's id of a replay of one. */
eddy_status eddy__replay_flow_result(const eddy__replay_flow *f, size_t *replayed, char *entry_id,
                                     size_t entry_id_size, eddy_error *err);

#endif
