/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy's Redis function library (names and limits in util/functions.h): one atomic step for a
 * store append (eddy_append, with its optional publish), for a deduplicated publish and for a
 * transactional handler's commit (its outputs and its acknowledgement).
 *
 * Connecting: after every (re)connect that will call a function, a front end sends
 * eddy__library_load_cmds first, which loads (FUNCTION LOAD REPLACE) the library; Redis keeps
 * functions in memory only, so a restarted server has none, and on Redis Cluster each node
 * has its own (cluster.c loads it on the node an ASK sends to as well). */
#ifndef EDDY_SRC_LINK_LIBRARY_H
#define EDDY_SRC_LINK_LIBRARY_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "eddy/status.h"
#include "util/cmdlist.h"
#include "util/functions.h"

/* The Lua source of the library (exposed for the tests). */
extern const char eddy__library_lua[];

/* Appends FUNCTION LOAD REPLACE of the library. */
eddy_status eddy__library_load_cmds(eddy__cmdlist *out);
/* Whether command i of cmds is one eddy__library_load_cmds appended. */
bool eddy__library_is_load(const eddy__cmdlist *cmds, size_t i);
/* Reads the replies of the commands eddy__library_load_cmds appended, starting at `first`;
 * *next (may be NULL) is the index after them. A server without functions (before Redis 7)
 * is EDDY_ERR_NOT_SUPPORTED. */
eddy_status eddy__library_load_result(const eddy__cmdlist *cmds, size_t first, redisReply **replies,
                                      size_t *next, eddy_error *err);

#endif
