/* SPDX-License-Identifier: BSD-3-Clause */
/* Dead letters as data (include/eddy/dlq.h): the commands that list, read, replay and purge a
 * group's dead-letter stream "{ns}:dlq:<group>", and what their replies mean. Sans-IO: it
 * builds command lists and reads redisReply trees; a front end sends them and waits.
 *
 * A dead-letter entry is what the consumer writes (consumer.c, queue_dead_letter): the fields
 * _dlq_subject, _dlq_entry, _dlq_deliveries, _dlq_reason, _dlq_group, then the original
 * entry's pairs unchanged. Here the "_dlq_*" pairs are read by name wherever they are, and
 * every other pair is the original entry's.
 *
 * Thread: none of its own; every function works on its arguments only. */
#ifndef EDDY_SRC_DLQ_H
#define EDDY_SRC_DLQ_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/settings.h"
#include "eddy/dlq.h"
#include "events/event_internal.h"
#include "util/cmdlist.h"

struct eddy_dead_letter {
    const char *id, *subject, *entry, *reason, *group; /* never NULL; "" when absent */
    unsigned deliveries;
    /* The original entry's field/value pairs (each NUL-terminated). */
    const char **fv;
    size_t *fvlen;
    size_t nfv;
    /* The original event as a view over fv, when it decodes (decoded == EDDY_OK). */
    eddy_status decoded;
    eddy_error decode_err;
    const eddy_event *event;
    eddy__event_view view;
    size_t size; /* of the one allocation this lives in, for a dup */
};

/* A dead letter from one entry of a dead-letter stream: its id and all its pairs (fv[0..nfv),
 * nfv even). Everything is copied into one allocation; the event is decoded with max_size.
 * NULL on OOM. Ownership: the caller's (eddy_dead_letter_free). */
eddy_dead_letter *eddy__dead_letter_new(const char *id, size_t idlen, const char *const *fv,
                                        const size_t *fvlen, size_t nfv, size_t max_size);

/* True for a full stream entry id: "<ms>-<seq>", both decimal. */
bool eddy__dlq_id_ok(const char *id);

/* Each builder checks its arguments (EDDY_ERR_INVALID_ARGUMENT with detail), appends its
 * commands to `out` and returns EDDY_OK, or appends nothing and fails (EDDY_ERR_NOMEM). */

/* XRANGE of the page after `after` ("" for the start) up to `last` (NULL for the end), at most
 * max entries. */
eddy_status eddy__dlq_range_cmd(const eddy__settings *s, const char *group, const char *after,
                                const char *last, size_t max, eddy__cmdlist *out, eddy_error *err);
/* XRANGE of the one entry `id`. */
eddy_status eddy__dlq_get_cmd(const eddy__settings *s, const char *group, const char *id,
                              eddy__cmdlist *out, eddy_error *err);
/* XLEN. */
eddy_status eddy__dlq_count_cmd(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                                eddy_error *err);
/* XREVRANGE + - COUNT 1: the newest entry, where a replay of all stops. */
eddy_status eddy__dlq_last_cmd(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                               eddy_error *err);
/* XDEL id. */
eddy_status eddy__dlq_purge_cmd(const eddy__settings *s, const char *group, const char *id,
                                eddy__cmdlist *out, eddy_error *err);
/* MULTI, XLEN, DEL, EXEC. */
eddy_status eddy__dlq_purge_all_cmds(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                                     eddy_error *err);
/* EDDY_OK when the dead letter can be replayed; EDDY_ERR_MALFORMED (detail: why, and that it is
 * left in place) when it names no valid subject or holds no original entry. */
eddy_status eddy__dlq_replayable(const char *group, const eddy_dead_letter *dl, eddy_error *err);
/* MULTI, XADD {ns}:s:<subject> [MAXLEN ~ n] * <original pairs>, SADD {ns}:subjects <subject>,
 * XDEL {ns}:dlq:<group> <id>, EXEC. Refuses what eddy__dlq_replayable refuses
 * (nothing appended). */
eddy_status eddy__dlq_replay_cmds(const eddy__settings *s, const char *group,
                                  const eddy_dead_letter *dl, eddy__cmdlist *out, eddy_error *err);
/* XADD {ns}:dlq:<group> * with the dead letter's fields: the write-back after a replay whose
 * publish the server refused but whose delete it ran. */
eddy_status eddy__dlq_restore_cmd(const eddy__settings *s, const char *group,
                                  const eddy_dead_letter *dl, eddy__cmdlist *out, eddy_error *err);

/* Receives a dead letter it now owns. Any status but EDDY_OK stops the walk, which returns it. */
typedef eddy_status (*eddy__dl_take_fn)(eddy_dead_letter *dl, void *user);

/* Walks an XRANGE/XREVRANGE reply: each entry becomes a dead letter handed to fn. *n (may be
 * NULL) counts those fn accepted; `after` (EDDY_DLQ_ID_SIZE bytes, may be NULL) receives the
 * id of the last one it accepted. EDDY_ERR_PROTOCOL for a reply of another shape, the
 * server's error as EDDY_ERR_BACKEND, EDDY_ERR_IO for none. */
eddy_status eddy__dlq_entries(const eddy__settings *s, const redisReply *r, eddy__dl_take_fn fn,
                              void *user, size_t *n, char *after, eddy_error *err);

/* The reply of eddy__dlq_get_cmd: the dead letter `id` into *out (the caller's), or
 * EDDY_ERR_NOT_FOUND when it is not there (*out NULL on any failure; more than one entry is
 * EDDY_ERR_PROTOCOL). */
eddy_status eddy__dlq_one(const eddy__settings *s, const redisReply *r, const char *group,
                          const char *id, eddy_dead_letter **out, eddy_error *err);
/* XLEN's reply. */
eddy_status eddy__dlq_count_result(const redisReply *r, size_t *count, eddy_error *err);
/* XDEL's reply: EDDY_ERR_NOT_FOUND when nothing was deleted. */
eddy_status eddy__dlq_purge_result(const redisReply *r, const char *group, const char *id,
                                   eddy_error *err);
/* The four replies of eddy__dlq_purge_all_cmds from replies[0]. */
eddy_status eddy__dlq_purge_all_result(redisReply **replies, size_t *purged, eddy_error *err);
/* The five replies of eddy__dlq_replay_cmds from replies[0]. On EDDY_OK the new entry id is
 * copied to entry_id (when not NULL). *restore is set when the server refused the publish but
 * deleted the dead letter: the caller sends eddy__dlq_restore_cmd (the status stays the
 * refusal). A dead letter that was already gone when the transaction ran (a concurrent replay
 * or purge) is logged: it was published anyway. */
eddy_status eddy__dlq_replay_result(const eddy__settings *s, const char *group,
                                    const eddy_dead_letter *dl, redisReply **replies,
                                    char *entry_id, size_t entry_id_size, bool *restore,
                                    eddy_error *err);
/* The write-back's reply. */
eddy_status eddy__dlq_restore_result(const redisReply *r, eddy_error *err);

#endif
