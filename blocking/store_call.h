/* SPDX-License-Identifier: BSD-3-Clause */
/* What the blocking store offers its own front end's other files (model.c, feed.c): one
 * idempotent command on the store's connection, with the store's rules (store_op.h). */
#ifndef EDDY_BLOCKING_STORE_CALL_H
#define EDDY_BLOCKING_STORE_CALL_H

#include <hiredis/hiredis.h>

#include "eddy/model.h"
#include "store/model.h"
#include "store/store_req.h"
#include "util/cmdlist.h"

/* Sends the one command of *cmds (moved in; *cmds is left empty) and hands its reply to read:
 * sent again once after a lost connection, and behind a load when the server had lost the
 * function library. Returns read's status, or the failure. */
eddy_status eddy__bstore_call(eddy_store *store, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                              void *user, eddy_error *err);
/* The store's namespace (borrowed; lives as the store). */
const char *eddy__bstore_ns(const eddy_store *store);

/* Commits a read model's write set (model.c): EDDY_OK once the server ran it. */
eddy_status eddy__bmodel_commit(eddy_store *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_error *err);

#endif
