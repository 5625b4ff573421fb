/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's rules for one operation on a connection: see store_op.h. */
#include "store/store_op.h"

#include <string.h>

#include "error.h"
#include "link/library.h"
#include "store/store.h"
#include "timing.h"

void eddy__store_op_init(eddy__store_op *op, bool append, long long until) {
    eddy__cmdlist_init(&op->cmds);
    op->append = append;
    op->retried = op->reloaded = false;
    op->until = until;
}

void eddy__store_op_reset(eddy__store_op *op) { eddy__cmdlist_reset(&op->cmds); }

bool eddy__store_op_lost(eddy__store_op *op, eddy_status st, const eddy_error *err, bool first,
                         bool fresh) {
    if (op->append)
        return eddy__mono_ms() < op->until && eddy__store_append_again(st, err, first);
    if (op->retried || fresh || st != EDDY_ERR_IO)
        return false;
    op->retried = true;
    return true;
}

/* The load's commands, then op's own, moved (the events they were built from are not at hand
 * any more). */
static bool behind_load(eddy__store_op *op) {
    eddy__cmdlist again;
    eddy__cmdlist_init(&again);
    if (eddy__library_load_cmds(&again) != EDDY_OK ||
        again.n + op->cmds.n > EDDY__STORE_OP_MAX_CMDS) {
        eddy__cmdlist_reset(&again);
        return false;
    }
    for (size_t i = 0; i < op->cmds.n; i++) {
        eddy__cmd *c = eddy__cmdlist_add(&again, op->cmds.tags[i], op->cmds.args[i]);
        if (!c) {
            eddy__cmdlist_reset(&again);
            return false;
        }
        *c = op->cmds.cmds[i];
        eddy__cmd_init(&op->cmds.cmds[i]);
    }
    eddy__cmdlist_reset(&op->cmds);
    op->cmds = again;
    return true;
}

/* Puts the load in front of op once the server lost the library: false on OOM. */
static bool load_again(eddy__store_op *op, const eddy__logger *log) {
    if (!behind_load(op))
        return false;
    eddy__log(log, EDDY_LOG_WARN,
              "store: the server had lost the '" EDDY__STORE_LIBRARY
              "' function library (flushed or replaced); loading it again");
    op->reloaded = true;
    return true;
}

eddy_status eddy__store_op_call_result(eddy__store_op *op, redisReply **replies, size_t *at,
                                       bool *again, const eddy__logger *log, eddy_error *err) {
    *again = false;
    *at = 0;
    if (op->reloaded) {
        eddy_status st = eddy__library_load_result(&op->cmds, 0, replies, at, err);
        if (st != EDDY_OK)
            return st;
    }
    const redisReply *r = *at < op->cmds.n ? replies[*at] : NULL;
    bool lost = r && r->type == REDIS_REPLY_ERROR && r->len >= 22 &&
                memcmp(r->str, "ERR Function not found", 22) == 0;
    if (!lost || op->reloaded)
        return EDDY_OK;
    if (!load_again(op, log))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    *again = true;
    return EDDY_OK;
}

eddy_status eddy__store_op_append_result(eddy__store_op *op, redisReply **replies,
                                         long long *new_version, bool *again,
                                         const eddy__logger *log, eddy_error *err) {
    *again = false;
    size_t first = 0;
    bool reload = false;
    eddy_status st = EDDY_OK;
    if (op->reloaded)
        st = eddy__library_load_result(&op->cmds, 0, replies, &first, err);
    if (st == EDDY_OK)
        st = eddy__store_append_result(&op->cmds, first, replies, new_version, &reload, err);
    if (!reload || op->reloaded)
        return st;
    if (!load_again(op, log))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    *again = true;
    return st;
}
