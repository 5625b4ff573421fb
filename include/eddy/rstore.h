/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the event store and checkpoint storage on a libev loop (reactive front end).
 *
 * The same store as eddy/store.h (same keys, same function library, same checks), driven
 * without blocking: calls return at once and outcomes arrive through callbacks on the loop's
 * thread. A read across the store or of a stream delivers one page per call, so a replay never
 * blocks the loop and never holds more than a page: ask for the next page from the page's
 * completion.
 *
 * Every completion callback runs exactly once: with the outcome, or with EDDY_ERR_CLOSED when
 * the store is closed first. A call refused up front (bad input, a closing store) returns the
 * refusal and does not call its callback. Callbacks never run inside the call that asked for
 * them, except at teardown: eddy_rstore_close completes what is pending with EDDY_ERR_CLOSED
 * before it returns.
 *
 * Connection: the "eddy" function library is loaded on every new connection before anything
 * else runs on it; an append that finds it missing anyway ("Function not found": the server was
 * flushed) loads it again and is sent once more. An append whose connection failed is never
 * sent again (the server may have run it): it completes with the error. Reads, head and
 * checkpoint operations sent on a connection that was lost are sent once more on a new one.
 *
 * Thread: every function must be called on the loop's thread (the one running ev_run). From
 * inside a callback every function may be called, eddy_rstore_close included: the store is then
 * freed once the callback returns.
 */
#ifndef EDDY_RSTORE_H
#define EDDY_RSTORE_H

#include <ev.h>
#include <stdbool.h>

#include "eddy/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_rstore eddy_rstore;

/** Completion of an append: the stream's version after it on EDDY_OK (0 otherwise).
 * EDDY_ERR_VERSION_CONFLICT carries the expected and actual version in err's detail. err is
 * borrowed for the call (NULL on EDDY_OK). */
typedef void (*eddy_rstore_append_fn)(eddy_status st, long long new_version, const eddy_error *err,
                                      void *user);
/** Completion of a page across the store: next_position is the last position examined (pass it
 * as the next after_position); also set after a failure, where to resume. The end is reached
 * when next_position equals the head position. err is borrowed (NULL on EDDY_OK). */
typedef void (*eddy_rstore_page_fn)(eddy_status st, long long next_position, const eddy_error *err,
                                    void *user);
/** Completion of a page of one stream: last_version is the last version delivered
 * (after_version when none was); more is true when the page was full, so another may follow
 * (ask after last_version). err is borrowed (NULL on EDDY_OK). */
typedef void (*eddy_rstore_stream_page_fn)(eddy_status st, long long last_version, bool more,
                                           const eddy_error *err, void *user);
/** Completion of eddy_rstore_head: the last stored position (0 for an empty store). */
typedef void (*eddy_rstore_head_fn)(eddy_status st, long long position, const eddy_error *err,
                                    void *user);
/** Completion of eddy_rstore_checkpoint_exists. */
typedef void (*eddy_rstore_exists_fn)(eddy_status st, bool exists, const eddy_error *err,
                                      void *user);
/** Completion of eddy_rstore_checkpoint_read: value (borrowed for the call) when found, else
 * NULL. */
typedef void (*eddy_rstore_checkpoint_read_fn)(eddy_status st, const char *value, bool found,
                                               const eddy_error *err, void *user);
/** Completion of an operation with no result (checkpoint save and remove, a whole stream's read).
 */
typedef void (*eddy_rstore_done_fn)(eddy_status st, const eddy_error *err, void *user);

/** Opens a store on `loop`, on the settings' backend and namespace (url, ns, max_event_size,
 * timeouts, log are used); connecting happens on the loop, and connection errors arrive with
 * the first operations. Ownership: settings are copied; the loop stays the caller's and must
 * outlive the store; on EDDY_OK *out is the caller's, released with eddy_rstore_close.
 * Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_open(struct ev_loop *loop, const eddy_settings *settings,
                                         eddy_rstore **out, eddy_error *err);

/** Completes every pending operation with EDDY_ERR_CLOSED (each callback once, before this
 * returns), drops the connection and frees the store (after the current callback returns when
 * called from inside one). NULL is a no-op. Ownership: store is invalid after the call (the
 * callbacks it runs may not use it). Thread: the loop's thread. */
EDDY_EXPORT void eddy_rstore_close(eddy_rstore *store);

/** Appends n (>= 1) valid events to stream_id, all or nothing, as eddy_store_append (opts NULL:
 * any version, no publishing; opts->publish_subject publishes them in the same atomic step).
 * Every check is made before the call returns: a refusal is returned and done does not run.
 * Ownership: stream_id, the events and opts stay the caller's (copied before the call returns).
 * Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_append(eddy_rstore *store, const char *stream_id,
                                           const eddy_event *const *evs, size_t n,
                                           const eddy_append_opts *opts, eddy_rstore_append_fn done,
                                           void *user, eddy_error *err);

/** Reads one page across the store, as eddy_store_read_page: events with position >
 * after_position, at most max_entries examined; `each` receives those that pass the filter
 * (from the loop, before done), and may stop the page by returning another status, which done
 * then receives. Ownership: the filter is borrowed until done runs; the event and meta given
 * to each are borrowed for its call. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_read_page(eddy_rstore *store, long long after_position,
                                              size_t max_entries, const eddy_filter *filter,
                                              eddy_stored_fn each, eddy_rstore_page_fn done,
                                              void *user, eddy_error *err);

/** Reads one page of stream_id's events with version > after_version, in version order (a bounded
 * number of entries), as eddy_store_read_stream_page. `each` as in eddy_rstore_read_page.
 * Ownership: stream_id is copied. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_read_stream_page(eddy_rstore *store, const char *stream_id,
                                                     long long after_version, eddy_stored_fn each,
                                                     eddy_rstore_stream_page_fn done, void *user,
                                                     eddy_error *err);

/** Reads all of stream_id's events with version > after_version, in version order, as
 * eddy_store_read_stream: page after page (each page asked for from the previous one's
 * completion, so no more than a page is held), `each` receiving every event, done running once
 * at the end (EDDY_OK), at the first failure, or with each's status when each stopped the read.
 * Refused up front (done not called) as eddy_rstore_read_stream_page. Ownership: stream_id is
 * copied. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_read_stream(eddy_rstore *store, const char *stream_id,
                                                long long after_version, eddy_stored_fn each,
                                                eddy_rstore_done_fn done, void *user,
                                                eddy_error *err);

/** The position of the last stored event, through done. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_head(eddy_rstore *store, eddy_rstore_head_fn done, void *user,
                                         eddy_error *err);

/* ---- checkpoint storage on the store's backend (key "{ns}:ckpt:F") -------------------------- */

/** Whether feed_id has a checkpoint, as eddy_store_checkpoint_exists. Ownership: feed_id is
 * copied. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_checkpoint_exists(eddy_rstore *store, const char *feed_id,
                                                      eddy_rstore_exists_fn done, void *user,
                                                      eddy_error *err);
/** Reads feed_id's checkpoint, as eddy_store_checkpoint_read. Ownership: feed_id is copied; the
 * value given to done is borrowed for its call. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_checkpoint_read(eddy_rstore *store, const char *feed_id,
                                                    eddy_rstore_checkpoint_read_fn done, void *user,
                                                    eddy_error *err);
/** Saves value as feed_id's checkpoint, as eddy_store_checkpoint_save. Ownership: feed_id and
 * value are copied. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_checkpoint_save(eddy_rstore *store, const char *feed_id,
                                                    const char *value, eddy_rstore_done_fn done,
                                                    void *user, eddy_error *err);
/** Deletes feed_id's checkpoint (one that does not exist is not an error), as
 * eddy_store_checkpoint_remove. Ownership: feed_id is copied. Thread: the loop's thread. */
EDDY_EXPORT eddy_status eddy_rstore_checkpoint_remove(eddy_rstore *store, const char *feed_id,
                                                      eddy_rstore_done_fn done, void *user,
                                                      eddy_error *err);

/** An asynchronous checkpoint storage, the reactive feed's (eddy/rfeed.h): the twin of
 * eddy_checkpoints. Each operation either returns an error (done is then not called) or returns
 * EDDY_OK and calls done exactly once later, from the loop (never inside the call). The
 * signatures are those of eddy_rstore_checkpoint_exists/_save/_remove. */
typedef struct eddy_rcheckpoint_ops {
    eddy_status (*exists)(void *self, const char *feed_id, eddy_rstore_exists_fn done, void *user,
                          eddy_error *err);
    eddy_status (*save)(void *self, const char *feed_id, const char *value,
                        eddy_rstore_done_fn done, void *user, eddy_error *err);
    /** Deleting a checkpoint that does not exist is not an error. */
    eddy_status (*remove)(void *self, const char *feed_id, eddy_rstore_done_fn done, void *user,
                          eddy_error *err);
} eddy_rcheckpoint_ops;

typedef struct eddy_rcheckpoints {
    const eddy_rcheckpoint_ops *ops;
    void *self;
} eddy_rcheckpoints;

/** Checkpoint storage on the store's backend (eddy_rstore_checkpoint_*), as
 * eddy_store_checkpoints gives it for the blocking store. Valid as long as the store. */
EDDY_EXPORT eddy_rcheckpoints eddy_rstore_checkpoints(eddy_rstore *store);

#ifdef __cplusplus
}
#endif

/* The names this header had before 0.3.0, deprecated (eddy/rdeprecated.h). */
#define EDDY_DEPRECATED_RSTORE_H
#include "eddy/rdeprecated.h"
#endif
