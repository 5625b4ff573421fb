/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the event store and checkpoint storage (blocking front end).
 *
 * Events are appended to a stream id (an aggregate: "order-42") atomically, with an optional
 * expected version, and read back per stream in version order or across the store in global
 * position order, in pages. Every stored event carries its metadata: stream id, version in
 * its stream (1, 2, ...) and global position (1, 2, ... across the store). An append may also
 * publish the same events to a bus subject in the same atomic step, so no event is stored
 * but not published, or published but not stored.
 *
 * Checkpoint storage keeps a catch-up feed's checkpoint by feed id. eddy_store_checkpoints gives
 * the one on the store's backend; users may implement eddy_checkpoint_ops over their own.
 *
 * Thread: every function of a store is safe from any thread.
 */
#ifndef EDDY_STORE_H
#define EDDY_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/bus.h"
#include "eddy/event.h"
#include "eddy/filter.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_store eddy_store;

/** Append whatever the stream's current version. */
#define EDDY_ANY_VERSION (-1LL)
/** Append only when the stream has no event yet. */
#define EDDY_NO_STREAM 0LL

typedef struct eddy_append_opts {
    /** Set by eddy_append_opts_init: the size of this struct in the caller's program (see bus.h).
     */
    size_t struct_size;
    /** EDDY_ANY_VERSION, EDDY_NO_STREAM, or the version the stream must be at. */
    long long expected_version;
    /** When not NULL, the events are also published to this subject in the same atomic
     * step (a bus subscribed to it receives them as published events). With
     * settings.publish_dedup_ms the append is deduplicated as a whole by its events' ids: when
     * all of them were published to the subject within the window it is a repeat, writes
     * nothing and succeeds with the version the first append gave (whatever expected_version
     * says), so an append sent again after EDDY_ERR_TIMEOUT is stored once; when only some
     * were, it is refused (EDDY_ERR_BACKEND, nothing written); two events of one id are
     * refused before sending (EDDY_ERR_INVALID_ARGUMENT). */
    const char *publish_subject;
} eddy_append_opts;

/** Any version, no publishing. */
#define eddy_append_opts_init(o) eddy_append_opts_init_sized((o), sizeof *(o))
/** What eddy_append_opts_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_append_opts_init_sized(eddy_append_opts *o, size_t size);

/** Opens a store on the settings' backend and namespace (url, ns, max_event_size, timeouts,
 * log are used). Ownership: *out is the caller's, released with eddy_store_close. */
EDDY_EXPORT eddy_status eddy_store_open(const eddy_settings *settings, eddy_store **out,
                                        eddy_error *err);
/** NULL is a no-op. */
EDDY_EXPORT void eddy_store_close(eddy_store *store);

/** Appends n (>= 1) valid events to stream_id, all or nothing. EDDY_ERR_VERSION_CONFLICT
 * (detail: the expected and the actual version) when the expected version does not match:
 * nothing is written. On EDDY_OK, *new_version (may be NULL) is the stream's version after
 * the append. Ownership: the events stay the caller's. */
EDDY_EXPORT eddy_status eddy_store_append(eddy_store *store, const char *stream_id,
                                          const eddy_event *const *evs, size_t n,
                                          const eddy_append_opts *opts, long long *new_version,
                                          eddy_error *err);

/** Receives one stored event; the event and meta are borrowed for the call (eddy_event_dup
 * to keep it). Return EDDY_OK to go on; any other status stops the read, which returns it. */
typedef eddy_status (*eddy_stored_fn)(const eddy_event *ev, const eddy_event_meta *meta,
                                      void *user);

/** Reads one stream's events with version > after_version, in version order, fetching pages
 * of a bounded size (never the whole stream at once). */
EDDY_EXPORT eddy_status eddy_store_read_stream(eddy_store *store, const char *stream_id,
                                               long long after_version, eddy_stored_fn fn,
                                               void *user, eddy_error *err);

/** Reads one page of stream_id's events with version > after_version, in version order (a
 * bounded number of entries): the twin of eddy_rstore_read_stream_page. *last_version is the
 * last version delivered (after_version when none was; also set after a failure, where to
 * resume); *more is true when the page was full, so another may follow (ask after
 * *last_version). fn may stop the page by returning another status, which the call returns.
 * EDDY_ERR_INVALID_ARGUMENT for a NULL store, fn, last_version or more. */
EDDY_EXPORT eddy_status eddy_store_read_stream_page(eddy_store *store, const char *stream_id,
                                                    long long after_version, eddy_stored_fn fn,
                                                    void *user, long long *last_version, bool *more,
                                                    eddy_error *err);

/** Reads one page across the store: events with position > after_position, in position
 * order, examining at most max_entries stored events (filtered-out ones count: a page is
 * bounded work). fn receives those that pass the filter. *next_position is the last
 * position examined (after_position when none was): pass it as the next after_position. The
 * end is reached when *next_position == the head position. Data conditions of the filter are
 * read with eddy_msgpack_reader (eddy_filter_matches). */
EDDY_EXPORT eddy_status eddy_store_read_page(eddy_store *store, long long after_position,
                                             size_t max_entries, const eddy_filter *filter,
                                             eddy_stored_fn fn, void *user,
                                             long long *next_position, eddy_error *err);

/** The position of the last stored event (0 for an empty store). */
EDDY_EXPORT eddy_status eddy_store_head(eddy_store *store, long long *position, eddy_error *err);

/* ---- checkpoint storage (a catch-up feed's checkpoint) -------------------------------- */

/** The operations of a checkpoint storage. Every operation returns EDDY_OK or an error with
 * detail; `self` is the implementation's state. Thread: implementations must be safe from any
 * thread. */
typedef struct eddy_checkpoint_ops {
    eddy_status (*exists)(void *self, const char *feed_id, bool *exists, eddy_error *err);
    /** Copies the checkpoint into buf (NUL-terminated, at most size bytes); *found false when
     * there is none. */
    eddy_status (*read)(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                        eddy_error *err);
    eddy_status (*save)(void *self, const char *feed_id, const char *value, eddy_error *err);
    /** Deleting a checkpoint that does not exist is not an error. */
    eddy_status (*remove)(void *self, const char *feed_id, eddy_error *err);
} eddy_checkpoint_ops;

typedef struct eddy_checkpoints {
    const eddy_checkpoint_ops *ops;
    void *self;
} eddy_checkpoints;

/** Checkpoint storage on the store's backend: the checkpoint of feed F is the key
 * "{ns}:ckpt:F". Valid as long as the store. */
EDDY_EXPORT eddy_checkpoints eddy_store_checkpoints(eddy_store *store);

/** The operations of eddy_store_checkpoints(store), called directly: the twins of
 * eddy_rstore_checkpoint_*. Whether feed_id has a checkpoint. EDDY_ERR_INVALID_ARGUMENT for a
 * NULL argument or a bad feed id. */
EDDY_EXPORT eddy_status eddy_store_checkpoint_exists(eddy_store *store, const char *feed_id,
                                                     bool *exists, eddy_error *err);
/** Copies feed_id's checkpoint into buf (NUL-terminated, at most size bytes); *found false when
 * there is none. */
EDDY_EXPORT eddy_status eddy_store_checkpoint_read(eddy_store *store, const char *feed_id,
                                                   char *buf, size_t size, bool *found,
                                                   eddy_error *err);
/** Saves value as feed_id's checkpoint. Ownership: feed_id and value stay the caller's. */
EDDY_EXPORT eddy_status eddy_store_checkpoint_save(eddy_store *store, const char *feed_id,
                                                   const char *value, eddy_error *err);
/** Deletes feed_id's checkpoint (one that does not exist is not an error). */
EDDY_EXPORT eddy_status eddy_store_checkpoint_remove(eddy_store *store, const char *feed_id,
                                                     eddy_error *err);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/deprecated.h). */
#define EDDY_DEPRECATED_STORE_H
#include "eddy/deprecated.h"
#endif
