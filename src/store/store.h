/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's core, shared by both front ends: validation, the key layout, the command
 * of every store operation and the reading of its reply. A front end sends what these build
 * and hands back what comes back; it decides nothing.
 *
 * Keys (all under the namespace's hash tag, so the append function's keys share one slot):
 *   {ns}:es:all          stream, one entry per event, entry id "<position>-0"
 *   {ns}:es:s:<stream>   stream per stream id, entry id "<version>-0"
 *   {ns}:es:pos          the position counter (the last position handed out)
 *   {ns}:ckpt:<feed>     a catch-up feed's marker (string)
 * Every stored entry holds the event's fields (entry.h) and the metadata fields "_stream",
 * "_version" and "_position".
 *
 * Connecting: the store's functions are in eddy's Redis function library (link/library.h),
 * which a front end loads after every (re)connect.
 *
 * Thread: the functions keep no state beyond the eddy__store, which is read-only after
 * eddy__store_new: any thread may use it. */
#ifndef EDDY_SRC_STORE_H
#define EDDY_SRC_STORE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "config/settings.h"
#include "eddy/store.h"
#include "events/fields.h"
#include "util/cmdlist.h"
#include "util/functions.h"

/* Entries per XRANGE when a whole stream is read. */
#define EDDY__STORE_PAGE 256

typedef struct eddy__store eddy__store;

/* Ownership: settings are borrowed and must outlive the store. NULL on OOM. */
eddy__store *eddy__store_new(const eddy__settings *s);
void eddy__store_free(eddy__store *st);
/* The settings it was made with (borrowed). */
const eddy__settings *eddy__store_settings(const eddy__store *st);

/* A stream id or feed id: 1-128 printable ASCII, no space, '{', '}' or ':' (it becomes part of
 * a key). EDDY_ERR_INVALID_ARGUMENT naming `what` otherwise. */
eddy_status eddy__store_check_id(const char *id, const char *what, eddy_error *err);

/* ---- append ----------------------------------------------------------------------------- */

/* Checks everything (store id, events, sizes, subject, reserved attribute, expected version;
 * opts NULL means any version, no publishing) before anything is sent, then appends the
 * FCALL eddy_append command. */
eddy_status eddy__store_append_prepare(const eddy__store *st, const char *stream_id,
                                       const eddy_event *const *evs, size_t n,
                                       const eddy_append_opts *opts, eddy__cmdlist *out,
                                       eddy_error *err);
/* After an append's send failed with st: true when a cluster refused it unwritten, so that the
 * front end sends the same append again, on the next connection (after its backoff), as long
 * as the call's deadline allows. `first`: the append was the oldest command its connection had
 * not had answered, the one the refusal answered (an append sent alone always is). A MOVED
 * refuses every later command of the slot too; after a TRYAGAIN (a migration) or a CLUSTERDOWN
 * a later append may have run, so only the first goes again. */
bool eddy__store_append_again(eddy_status st, const eddy_error *err, bool first);
/* Reads the FCALL's reply. *reload is set when the server does not know the function (it was
 * flushed or the server changed under the connection): nothing was written, and the front end
 * sends eddy__library_load_cmds and the same FCALL again, once. EDDY_ERR_VERSION_CONFLICT with
 * the expected and actual version in the detail; *new_version (may be NULL) on EDDY_OK. */
eddy_status eddy__store_append_result(const eddy__cmdlist *cmds, size_t first, redisReply **replies,
                                      long long *new_version, bool *reload, eddy_error *err);

/* ---- reads ------------------------------------------------------------------------------ */

/* XRANGE of one page (EDDY__STORE_PAGE entries) of a stream after a version. */
eddy_status eddy__store_read_stream_cmd(const eddy__store *st, const char *stream_id,
                                        long long after_version, eddy__cmdlist *out,
                                        eddy_error *err);
/* Delivers a page's events to fn. *after becomes the last version delivered; *more is true
 * when the page was full, so another page may follow (ask for it after *after). Returns
 * fn's status when fn stops, EDDY_ERR_MALFORMED (or EDDY_ERR_TOO_LARGE) naming the version and
 * position of an entry that does not decode. */
eddy_status eddy__store_read_stream_page(const eddy__store *st, const char *stream_id,
                                         const redisReply *r, eddy_stored_fn fn, void *user,
                                         long long *after, bool *more, eddy_error *err);

/* XRANGE of at most max_entries entries of the store after a position. */
eddy_status eddy__store_read_all_cmd(const eddy__store *st, long long after_position,
                                     size_t max_entries, eddy__cmdlist *out, eddy_error *err);
/* Delivers the events of the page that pass the filter. *next_position becomes the last
 * position whose examination completed (filtered out, or fn returned EDDY_OK); it starts at
 * after_position and is set on every return, so after a failure it is where to resume. */
eddy_status eddy__store_read_all_page(const eddy__store *st, const redisReply *r,
                                      const eddy_filter *filter, eddy_stored_fn fn, void *user,
                                      long long after_position, long long *next_position,
                                      eddy_error *err);

eddy_status eddy__store_head_cmd(const eddy__store *st, eddy__cmdlist *out);
eddy_status eddy__store_head_result(const redisReply *r, long long *position, eddy_error *err);

/* ---- checkpoints ------------------------------------------------------------------------ */

typedef enum eddy__ckpt_op {
    EDDY__CKPT_EXISTS,
    EDDY__CKPT_READ,
    EDDY__CKPT_SAVE,
    EDDY__CKPT_REMOVE
} eddy__ckpt_op;

/* The command of one checkpoint operation (value only for SAVE). Checks the feed id. */
eddy_status eddy__ckpt_cmd(const eddy__store *st, eddy__ckpt_op op, const char *feed_id,
                           const char *value, eddy__cmdlist *out, eddy_error *err);
eddy_status eddy__ckpt_exists_result(const redisReply *r, bool *exists, eddy_error *err);
/* Copies the marker into buf; EDDY_ERR_TOO_LARGE (buf untouched but for a NUL) when it does
 * not fit. */
eddy_status eddy__ckpt_read_result(const redisReply *r, char *buf, size_t size, bool *found,
                                   eddy_error *err);
/* SAVE and REMOVE. */
eddy_status eddy__ckpt_write_result(const redisReply *r, eddy__ckpt_op op, eddy_error *err);

#endif
