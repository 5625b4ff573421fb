/* SPDX-License-Identifier: BSD-3-Clause */
/* What an admin handle reads (include/eddy/admin.h), as a sans-IO scan the blocking front end
 * drives: plan a round, send it as one pipeline, feed its replies, until a plan appends nothing.
 *   1. SMEMBERS {ns}:subjects, TIME
 *   2. per subject the pattern matches: XLEN, XINFO GROUPS and XINFO STREAM of its stream
 *      (XINFO STREAM for its entries-added only)
 *   3. per group with pending entries: XPENDING summary (the oldest pending id); per group name:
 *      XLEN of its dead-letter stream
 * and the registry's JSON, which the stats document embeds. */
#ifndef EDDY_SRC_ADMIN_H
#define EDDY_SRC_ADMIN_H

#include <hiredis/hiredis.h>

#include "eddy/admin.h"
#include "util/cmdlist.h"

typedef struct eddy__admin_scan eddy__admin_scan;

/* pattern NULL: every subject (a bad pattern is the caller's to refuse). Copies both. NULL on
 * OOM. */
eddy__admin_scan *eddy__admin_scan_new(const char *ns, const char *pattern);
void eddy__admin_scan_free(eddy__admin_scan *s);

/* Appends the next round's commands; none once the scan is complete. */
eddy_status eddy__admin_scan_plan(eddy__admin_scan *s, eddy__cmdlist *out);
/* The replies to the round last planned, one per command (borrowed). A failed reply ends the
 * scan with its status: the server's error (EDDY_ERR_BACKEND), EDDY_ERR_PROTOCOL, ... */
eddy_status eddy__admin_scan_feed(eddy__admin_scan *s, const eddy__cmdlist *cmds,
                                  redisReply **replies, size_t n, eddy_error *err);

/* Once complete: the subjects in name order (owned by the scan), and the server's clock. */
const eddy_subject_info *eddy__admin_scan_result(const eddy__admin_scan *s, size_t *n);
long long eddy__admin_scan_time_ms(const eddy__admin_scan *s);

/* One group name of a complete scan summed over its subjects, as the stats documents give it:
 * lag -1 when one subject's is unknown, the oldest pending age the largest (-1: none pending),
 * dead letters once (one dead-letter stream per group name). */
typedef struct eddy__group_total {
    const char *group; /* the scan's */
    uint64_t subjects, consumers, pending, dead_letters;
    long long lag, oldest_pending_ms;
} eddy__group_total;

/* Each distinct group name once, in name order: *n rows, the caller's (free). NULL on OOM. */
eddy__group_total *eddy__admin_scan_totals(const eddy__admin_scan *s, size_t *n);

/* Calls fn for each live member of a registry listing (eddy__registry_list's reply, borrowed),
 * skipping members eddy did not write; stops at fn's first error and returns it. */
eddy_status eddy__admin_registry_each(const redisReply *r, eddy_registration_fn fn, void *user,
                                      eddy_error *err);

/* The stats document of eddy_admin_stats_json from a complete scan and a registry listing
 * (borrowed). NULL with err set on OOM or a registry reply it cannot read. */
char *eddy__admin_stats_json(const char *ns, const eddy__admin_scan *s, const redisReply *registry,
                             eddy_error *err);

/* ---- one subject's history (eddy_admin_history) ---------------------------------------- */

/* Entries per round of a history read (all of them; the last N are one round of N). */
#define EDDY__HISTORY_PAGE 256

/* Appends one round of a subject's history: XRANGE {ns}:s:<subject> <start> + COUNT count, where
 * start is "-" (from NULL), the id itself, or "(" id when exclusive; reverse: XREVRANGE key +
 * <start> COUNT count (the newest first, for "the last N"). EDDY_ERR_INVALID_SUBJECT,
 * EDDY_ERR_INVALID_ARGUMENT for an id that is not <ms>[-<seq>]. */
eddy_status eddy__admin_history_cmd(const char *ns, const char *subject, const char *start,
                                    bool exclusive, bool reverse, size_t count, eddy__cmdlist *out,
                                    eddy_error *err);
/* Feeds its reply (borrowed): calls fn for each entry oldest first (a reverse reply is walked
 * from its end), the event decoded as a view over the reply (NULL, with the reason, when the
 * entry is not an eddy event or is larger than max_size). *n is the entries read, last_id the
 * newest one's (NUL-terminated, cut to last_size). Stops at fn's first error and returns it. */
eddy_status eddy__admin_history_feed(const redisReply *r, const char *subject, size_t max_size,
                                     bool reverse, eddy_history_fn fn, void *user, char *last_id,
                                     size_t last_size, size_t *n, eddy_error *err);

/* ---- removing a subject (eddy_admin_subject_remove) ------------------------------------- */

/* Appends MULTI, DEL {ns}:s:<subject> {ns}:pubids:<subject> {ns}:pubexp:<subject>,
 * SREM {ns}:subjects <subject>, EXEC (4 commands). EDDY_ERR_INVALID_SUBJECT. */
eddy_status eddy__admin_remove_cmds(const char *ns, const char *subject, eddy__cmdlist *out,
                                    eddy_error *err);
/* Their n replies (borrowed): *removed when the DEL or the SREM found something. */
eddy_status eddy__admin_remove_result(redisReply **replies, size_t n, bool *removed,
                                      eddy_error *err);

#endif
