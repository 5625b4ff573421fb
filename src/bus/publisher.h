/* SPDX-License-Identifier: BSD-3-Clause */
/* Publishing, as both front ends do it: checks (subject, CloudEvent, size), the commands
 * (XADD to the subject's stream, or with publish_dedup_ms the function library's deduplicating
 * publish, loaded first on a new connection; and SADD of the subject to the namespace's subject set
 * the first time this bus publishes to it, so pattern subscribers discover it), and the reading of
 * their replies. Thread: any; the known-subject cache is locked. */
#ifndef EDDY_SRC_PUBLISHER_H
#define EDDY_SRC_PUBLISHER_H

#include <hiredis/hiredis.h>

#include "config/settings.h"
#include "eddy/bus.h"
#include "util/cmdlist.h"

typedef struct eddy__publisher eddy__publisher;

/* Ownership: settings are borrowed. NULL on OOM. */
eddy__publisher *eddy__publisher_new(const eddy__settings *s);
void eddy__publisher_free(eddy__publisher *p);

/* What refuses an event before anything is built: NULL (EDDY_ERR_INVALID_ARGUMENT), not valid
 * (EDDY_ERR_INVALID_EVENT), the reserved failure attribute, over max_event_size; and when `via`
 * names a Redis function that will write it (its text goes in the error), more extensions than
 * Lua's arguments hold (EDDY_ERR_TOO_LARGE). */
eddy_status eddy__publish_check_event(const eddy__settings *s, const eddy_event *ev,
                                      const char *via, eddy_error *err);
/* Checks the subject (EDDY_ERR_INVALID_SUBJECT) and every one of n events (as
 * eddy__publish_check_event) first, then appends their n publishes to out, the stream's key
 * formatted once; each is read by its own eddy__publish_result. On failure out is unchanged. */
eddy_status eddy__publish_prepare_batch(eddy__publisher *p, const char *subject,
                                        const eddy_event *const *evs, size_t n, eddy__cmdlist *out,
                                        eddy_error *err);

/* Commands one prepare appended start at `first`; reads their replies and returns the
 * publish's outcome, copying the entry id into id (when not NULL). *next is set to the index
 * after this publish's commands. */
eddy_status eddy__publish_result(eddy__publisher *p, const eddy__cmdlist *cmds, size_t first,
                                 redisReply **replies, size_t *next, char *id, size_t idsize,
                                 eddy_error *err);

/* With publish_dedup_ms, after eddy__publish_result read the replies of `sent` (a server that
 * lost eddy's function library answers "Function not found", having written nothing): true
 * when those publishes should be sent once more, as the commands this put in `again` (the
 * library's load, then a copy of sent's commands). Send `again` instead and read its replies
 * with eddy__publish_result exactly as sent's would have been read; publishes of `sent` that
 * went through are deduplicated by it (`again` is initialised here, the caller resets it). False,
 * `again` untouched, when nothing needs sending again, when `sent` loaded the library itself, or
 * on OOM. */
bool eddy__publish_again(eddy__publisher *p, const eddy__cmdlist *sent, redisReply *const *replies,
                         eddy__cmdlist *again);

/* After a send of `sent` (npublishes publishes) failed with st: true when a cluster refused
 * them unwritten (MOVED, TRYAGAIN, CLUSTERDOWN: eddy__cluster_refused) and they may go again, on
 * the next connection (to the slot's master, once the connection's backoff passed), as the
 * commands this put in `again` (a copy of sent's: send it instead and read its replies with
 * eddy__publish_result exactly as sent's; `again` is initialised here, the caller resets it).
 * A front end sends again as long as this says so and the call's deadline allows: a migration
 * or a failover heals within it, and the caller never sees the refusal. That holds for one
 * publish after a MOVED or a TRYAGAIN (its commands are [FUNCTION LOAD] [SADD] XADD/FCALL
 * [WAIT]: whichever keyed one was refused, its entry was not written) and, with
 * publish_dedup_ms, for a batch and after a CLUSTERDOWN (what went through is deduplicated);
 * not otherwise (an entry may have been written behind the refused command). False, `again`
 * untouched, otherwise or on OOM. */
bool eddy__publish_moved_again(eddy__publisher *p, size_t npublishes, const eddy__cmdlist *sent,
                               eddy_status st, const eddy_error *err, eddy__cmdlist *again);

/* A request: the publish's commands, with the reply stream, the request id and the deadline
 * (wall-clock ms) added to the entry as '_' fields. Same checks as a publish. */
eddy_status eddy__request_prepare(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                  const char *reply_to, const char *request_id,
                                  long long deadline_ms, eddy__cmdlist *out, eddy_error *err);
/* The same; gather: a scatter-gather request, to the subject's gather stream (gather.h). */
eddy_status eddy__request_prepare_to(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                     const char *reply_to, const char *request_id,
                                     long long deadline_ms, bool gather, eddy__cmdlist *out,
                                     eddy_error *err);

/* The publishing connection was lost: forget which subjects are known to be registered. A
 * server that restarted without persistence lost its subject set, and pattern subscribers
 * only find subjects that are in it. When: eddy__publish_mux_settle (publish_flow.h). */
void eddy__publisher_connection_lost(eddy__publisher *p);

/* Builds the event publish_value sends: source from settings (EDDY_ERR_INVALID_SPEC when
 * there is none), a random id, the type, the current time, and the packed value as data. */
eddy_status eddy__publish_value_event(const eddy__settings *s, const char *type, eddy_pack_fn pack,
                                      void *user, eddy_event **out, eddy_error *err);

#endif
