/* SPDX-License-Identifier: BSD-3-Clause */
/* One event-store operation's life on a connection, for both front ends (blocking/store.c,
 * reactive/store.c): what goes on the wire, and what a lost connection or an append's reply
 * means. The front ends only send the op's commands and hand back what came.
 *
 * The store's rules, decided here once:
 * - The function library is loaded on every new connection before anything else is sent
 *   (eddy__library_load_cmds; Redis keeps functions in memory only). A server that answers
 *   "Function not found" anyway gets it again, in front of the same append, once.
 * - A failed append is never sent again, since the server may have run it; the exception is a
 *   cluster's refusal of it unwritten (eddy__store_append_again), sent again while the call's
 *   deadline allows.
 * - Reads, heads and checkpoint operations are idempotent: one lost with a connection that
 *   was up before it was sent (it may have been dead for a while) goes once more on a new one.
 *   One lost with the connection made for it is not: that server just failed. */
#ifndef EDDY_SRC_STORE_STORE_OP_H
#define EDDY_SRC_STORE_STORE_OP_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "log.h"
#include "util/cmdlist.h"

/* The most commands an op has on the wire (a load in front of an append included). */
#define EDDY__STORE_OP_MAX_CMDS 4

typedef struct eddy__store_op {
    eddy__cmdlist cmds; /* the op's commands; behind a load once reloaded */
    bool append;        /* not idempotent */
    bool retried;       /* an idempotent op already sent again after a loss */
    bool reloaded;      /* an append sent again behind a load */
    long long until;    /* an append's call deadline (eddy__mono_ms) for cluster refusals */
} eddy__store_op;

/* until: an append's deadline (ignored for the others). The caller fills op->cmds. */
void eddy__store_op_init(eddy__store_op *op, bool append, long long until);
void eddy__store_op_reset(eddy__store_op *op);

/* The connection op was sent on failed with st before its replies came. first: op was the
 * oldest command of that connection not answered (the one a cluster's refusal answered; an op
 * sent alone always is). fresh: that connection was opened for op. True: send op's commands
 * again on a new connection (behind its backoff); false: op fails with st. */
bool eddy__store_op_lost(eddy__store_op *op, eddy_status st, const eddy_error *err, bool first,
                         bool fresh);

/* An append's replies (one per command of op->cmds): EDDY_OK with *new_version (may be NULL),
 * or the failure. *again: the server had lost the library, nothing was written, and op->cmds
 * now load it in front of the same append: send them (the status is then meaningless). */
eddy_status eddy__store_op_append_result(eddy__store_op *op, redisReply **replies,
                                         long long *new_version, bool *again,
                                         const eddy__logger *log, eddy_error *err);

/* An idempotent function call's replies (a read model's commit): EDDY_OK with *at the index of
 * the call's reply (behind a load once reloaded), or the load's failure. *again: the server had
 * lost the library, and op->cmds now load it in front of the same call: send them again
 * (once; a second loss is the call's reply, for its reader to fail). */
eddy_status eddy__store_op_call_result(eddy__store_op *op, redisReply **replies, size_t *at,
                                       bool *again, const eddy__logger *log, eddy_error *err);

#endif
