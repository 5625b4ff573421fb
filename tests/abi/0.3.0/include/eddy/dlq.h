/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — dead letters as an API (blocking front end).
 *
 * An AtLeastOnce subscription dead-letters an entry it cannot deliver: one that failed
 * max_deliveries times, or one that does not decode (malformed, or larger than the bus's
 * max_event_size). The entry is acknowledged and copied, with why and where from, into its
 * group's dead-letter stream "{ns}:dlq:<group>". A dead-letter handle lists those, reads one,
 * replays them (publishes the original event again, to its original subject) and purges them.
 *
 * Replay publishes the original entry's fields unchanged, as a new entry of the subject's
 * stream, and removes the dead letter, in one atomic step: there is never a moment at which the
 * message is in both places or in neither. Being a new entry it has a fresh delivery count,
 * and, like any publish, it reaches every group subscribed to the subject, not only the one
 * that dead-lettered it. An entry that could not be decoded is dead-lettered again when read.
 *
 * An entry larger than max_event_size ("too_large") is not copied whole: reading it, the
 * transport skips any value over the limit as its bytes arrive (the reader's memory stays
 * within a few MiB of the limit whatever the entry's size), and its dead letter keeps the
 * reason, the original entry id, the entry's size in bytes (field "_dlq_size" of the
 * dead-letter stream) and its field names, with the values up to 1 KiB (the attributes:
 * id, source, type, ...); a larger value is replaced by a marker (a NUL byte, "eddy:skipped:" and
 * its length in bytes, what eddy_dead_letter_field returns for it). Such a dead letter cannot be
 * replayed (EDDY_ERR_TOO_LARGE); list it, read its fields, purge it.
 *
 * The handle has a connection of its own: it works whether or not a bus runs (an operator's
 * tool) and on any backend a bus runs on (memory:// by name, in the same process).
 *
 * Thread: every function of a handle is safe from any thread, including from a handler of a
 * bus (the handle waits for nothing the bus holds). A dead letter is read-only: any thread
 * may read it while it lives.
 */
#ifndef EDDY_DLQ_H
#define EDDY_DLQ_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/bus.h"
#include "eddy/event.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_dlq eddy_dlq;

/** One dead letter: an entry of a group's dead-letter stream. Opaque. */
typedef struct eddy_dead_letter eddy_dead_letter;

/** The reasons a subscription dead-letters an entry (eddy_dead_letter_reason). */
#define EDDY_DLQ_REASON_MAX_DELIVERIES "max_deliveries" /**< failed max_deliveries times */
#define EDDY_DLQ_REASON_MALFORMED "malformed"           /**< does not decode as an event */
#define EDDY_DLQ_REASON_TOO_LARGE "too_large"           /**< larger than max_event_size */

/** Room for any stream entry id ("<ms>-<seq>") and its NUL. */
#define EDDY_DLQ_ID_SIZE 48

/** Where a listing stands: start with eddy_dlq_cursor_init, pass it to eddy_dlq_list until
 * `done`. `after` is the id of the last dead letter listed ("" before the first). */
typedef struct eddy_dlq_cursor {
    /** Set by eddy_dlq_cursor_init: the size of this struct in the caller's program (see bus.h). */
    size_t struct_size;
    char after[EDDY_DLQ_ID_SIZE];
    bool done; /**< the last page was listed: nothing follows `after` */
} eddy_dlq_cursor;

/** A cursor at the start of the stream. Thread: any. */
#define eddy_dlq_cursor_init(cursor) eddy_dlq_cursor_init_sized((cursor), sizeof *(cursor))
/** What eddy_dlq_cursor_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_dlq_cursor_init_sized(eddy_dlq_cursor *cursor, size_t size);

/** Opens a dead-letter handle on the settings' backend and namespace (url, ns,
 * max_event_size, stream_maxlen, timeouts and log are used) and connects (EDDY_ERR_IO when
 * the backend cannot be reached). max_event_size bounds what is decoded (a "too_large" dead
 * letter decodes with a larger one) and stream_maxlen trims subject streams on replay, as on
 * publish. Ownership: the settings are copied; on EDDY_OK *out is the caller's, released with
 * eddy_dlq_close. */
EDDY_EXPORT eddy_status eddy_dlq_open(const eddy_settings *settings, eddy_dlq **out,
                                      eddy_error *err);
/** Closes the handle. Dead letters it returned stay valid. NULL is a no-op. Thread: any, once
 * no other call on the handle runs. */
EDDY_EXPORT void eddy_dlq_close(eddy_dlq *dlq);

/** Receives one dead letter, borrowed for the call (eddy_dead_letter_dup to keep it). Return
 * EDDY_OK to go on; any other status stops the listing, which returns it. */
typedef eddy_status (*eddy_dead_letter_fn)(const eddy_dead_letter *dl, void *user);

/** Lists one page of a group's dead letters, oldest first: at most max (>= 1) of those after
 * cursor->after, each passed to fn. The cursor moves past each one fn accepted (so a listing
 * stopped by fn resumes at the one that stopped it) and is `done` when the page reached the
 * end. A group with no dead letters, or that never existed, lists nothing (EDDY_OK, done).
 * EDDY_ERR_INVALID_ARGUMENT for a NULL or empty group, a NULL cursor or fn, max 0, or a cursor
 * whose `after` is not a stream id. Ownership: everything passed stays the caller's. */
EDDY_EXPORT eddy_status eddy_dlq_list(eddy_dlq *dlq, const char *group, eddy_dlq_cursor *cursor,
                                      size_t max, eddy_dead_letter_fn fn, void *user,
                                      eddy_error *err);

/** How many dead letters a group has (0 for a group that never existed). */
EDDY_EXPORT eddy_status eddy_dlq_count(eddy_dlq *dlq, const char *group, size_t *count,
                                       eddy_error *err);

/** Reads the dead letter `id` (its id in the dead-letter stream, eddy_dead_letter_id) of a
 * group. EDDY_ERR_NOT_FOUND when the group has no such dead letter (never had, or it was
 * replayed or purged); EDDY_ERR_INVALID_ARGUMENT when id is not a stream id.
 * Ownership: on EDDY_OK *out is the caller's (eddy_dead_letter_free). */
EDDY_EXPORT eddy_status eddy_dlq_get(eddy_dlq *dlq, const char *group, const char *id,
                                     eddy_dead_letter **out, eddy_error *err);

/** Replays the dead letter `id`: in one atomic step (MULTI/EXEC) publishes its original entry
 * to its original subject (and registers the subject for pattern discovery) and deletes the
 * dead letter. On EDDY_OK and when entry_id is not NULL, copies the new entry's id (at most
 * entry_id_size bytes including the NUL). EDDY_ERR_NOT_FOUND as for eddy_dlq_get: nothing was
 * published. EDDY_ERR_MALFORMED when the dead letter names no valid subject, EDDY_ERR_TOO_LARGE
 * when it is a too_large one (it lacks its payload): it is left in place. When the server refuses
 * the publish (the subject's key is not a stream), the dead letter is written back, under a new id,
 * and the status is EDDY_ERR_BACKEND. Two replays of the same dead letter at the same moment (two
 * threads, or two handles) may both publish it: the dead letter is read, then the transaction runs,
 * and nothing conditions the transaction on the read (no WATCH on the memory backend); the later
 * one is logged. */
EDDY_EXPORT eddy_status eddy_dlq_replay(eddy_dlq *dlq, const char *group, const char *id,
                                        char *entry_id, size_t entry_id_size, eddy_error *err);

/** Replays every dead letter the group had when the call began, oldest first, each as
 * eddy_dlq_replay does (pages of them per round trip). Those dead-lettered while it runs
 * (a handler still failing) are left for a later call, so it always ends. *replayed (may be
 * NULL) counts those replayed, also on failure. EDDY_ERR_MALFORMED, after the others are
 * replayed, when some named no valid subject (they are left in place; the detail names the
 * first). A transport failure stops it: what was replayed stays replayed. */
EDDY_EXPORT eddy_status eddy_dlq_replay_all(eddy_dlq *dlq, const char *group, size_t *replayed,
                                            eddy_error *err);

/** Deletes the dead letter `id` without replaying it. EDDY_ERR_NOT_FOUND when it is not
 * there; EDDY_ERR_INVALID_ARGUMENT when id is not a stream id. */
EDDY_EXPORT eddy_status eddy_dlq_purge(eddy_dlq *dlq, const char *group, const char *id,
                                       eddy_error *err);

/** Deletes every dead letter of a group, in one atomic step; *purged (may be NULL) is how
 * many there were. A group without any is not an error (0). */
EDDY_EXPORT eddy_status eddy_dlq_purge_all(eddy_dlq *dlq, const char *group, size_t *purged,
                                           eddy_error *err);

/* ---- one dead letter ------------------------------------------------------------------ *
 * Strings are borrowed from the dead letter and live as long as it; never NULL ("" when the
 * dead-letter entry lacks the field: one written by hand). */

/** Its id in the group's dead-letter stream: what get, replay and purge take. */
EDDY_EXPORT const char *eddy_dead_letter_id(const eddy_dead_letter *dl);
/** The group that dead-lettered it. */
EDDY_EXPORT const char *eddy_dead_letter_group(const eddy_dead_letter *dl);
/** The subject it was published to, where a replay publishes it again. */
EDDY_EXPORT const char *eddy_dead_letter_subject(const eddy_dead_letter *dl);
/** The id the original entry had in the subject's stream. */
EDDY_EXPORT const char *eddy_dead_letter_entry_id(const eddy_dead_letter *dl);
/** Why: one of the EDDY_DLQ_REASON_* texts. */
EDDY_EXPORT const char *eddy_dead_letter_reason(const eddy_dead_letter *dl);
/** How many times it had been delivered when it was dead-lettered. */
EDDY_EXPORT unsigned eddy_dead_letter_deliveries(const eddy_dead_letter *dl);

/** The original event, decoded as a subscription decodes it (with the handle's
 * max_event_size). EDDY_OK with *ev set, borrowed for the dead letter's life; otherwise why it
 * does not decode (EDDY_ERR_MALFORMED, EDDY_ERR_TOO_LARGE; detail in err) with *ev NULL. */
EDDY_EXPORT eddy_status eddy_dead_letter_event(const eddy_dead_letter *dl, const eddy_event **ev,
                                               eddy_error *err);

/** A field of the original entry by name ("id", "type", "data", "x-<extension>", ...), also
 * for one that does not decode: its value (borrowed; *len its length, may be NULL), or NULL
 * when absent. The dead letter's own `_dlq_*` fields are not among them. */
EDDY_EXPORT const char *eddy_dead_letter_field(const eddy_dead_letter *dl, const char *name,
                                               size_t *len);

/** A copy (one allocation, or two for an event with many extensions), or NULL on OOM.
 * Ownership: the caller's (eddy_dead_letter_free). */
EDDY_EXPORT eddy_dead_letter *eddy_dead_letter_dup(const eddy_dead_letter *dl);
/** NULL is a no-op. */
EDDY_EXPORT void eddy_dead_letter_free(eddy_dead_letter *dl);

#ifdef __cplusplus
}
#endif
#endif
