/* SPDX-License-Identifier: BSD-3-Clause */
/* What the reactive store offers its own front end's other files (model.c, feed.c): one
 * idempotent command on the store's connection, with the store's rules (store_op.h). */
#ifndef EDDY_REACTIVE_STORE_CALL_H
#define EDDY_REACTIVE_STORE_CALL_H

#include <hiredis/hiredis.h>

#include "eddy/rstore.h"
#include "store/model.h"
#include "store/store_req.h"
#include "util/cmdlist.h"

/* Queues the one command of *cmds (moved in; *cmds is left empty): sent again once after a
 * lost connection, and behind a load when the server had lost the function library. read
 * reads its reply (borrowed), then done(st, err, user) runs once, on the loop, never inside
 * eddy__rstore_call, with read's status or the failure. A refusal (closed store, out of
 * memory) is returned and neither is called. */
eddy_status eddy__rstore_call(eddy_rstore *store, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                              void *read_user, eddy_rstore_done_fn done, void *user,
                              eddy_error *err);
/* The store's namespace (borrowed; lives as the store). */
const char *eddy__rstore_ns(const eddy_rstore *store);

/* Commits a read model's write set (model.c): done(st, err, user) once the server ran it. */
eddy_status eddy__rmodel_commit(eddy_rstore *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_rstore_done_fn done, void *user, eddy_error *err);

#endif
