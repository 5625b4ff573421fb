/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — read models kept in Redis that commit with their position (effectively once).
 *
 * A catch-up feed (eddy/feed.h, eddy/rfeed.h) normally calls the projection's apply, and a
 * model that lives outside the feed must then save where it is by itself: a process killed
 * between a write and that save applies the event twice on the next catch-up or redelivery.
 * A feed given eddy_feed_config.writes keeps its model in Redis (or in the memory engine)
 * instead: for each event it asks that callback for the event's *write set* (hash field sets,
 * deletes and increments, set members added and removed, keys deleted, on keys of the model)
 * and commits it in one Redis function call together with the model's progress:
 * - per event stream, the last version committed: an event whose version is at or below it
 *   was committed before and changes nothing, so a replay, a redelivery or a live copy of an
 *   applied event is harmless, whatever crashed when;
 * - the position the replay reached: the feed's replay commits each page's write sets in one
 *   call with the page's last position, and the next catch-up (without a checkpoint) resumes
 *   after it instead of from the beginning. A process killed mid-replay re-reads at most the
 *   page it was committing, and re-applies nothing.
 * Live events (accept, a listener) commit one call per event, concurrently from several threads
 * when they are accepted so; they do not move the replay's position.
 *
 * What it needs: every event must carry its store metadata (a replayed event does; a live one
 * fed with eddy_feed_accept_meta or through a listener of an append's publish does); one fed
 * without is refused with EDDY_ERR_INVALID_ARGUMENT. The events of one stream must reach the
 * model in version order (a subscription delivers one stream's events in order; two copies of
 * one stream's events handled at once on two threads are not), since a version at or below the
 * committed one is taken as applied. The writes callback must be a pure function of the event:
 * it runs again when a commit is retried.
 *
 * Where it stops: side effects outside Redis (an e-mail sent from the callback) are not covered
 * (docs/concepts.md, "effectively once"). On Redis, an hincr of a field that holds no integer,
 * or past 64 bits, fails its call after the writes before it in that call (Redis keeps what a
 * function wrote before an error); the memory engine undoes the whole call. Both fail the
 * catch-up or the accept.
 *
 * Layout (docs/wire-format.md), all under the namespace's hash tag, so one slot on a Cluster;
 * F is the feed id, K a key the writes name:
 * - "{ns}:rm:F:pos", a string: the position the last committed replay page reached;
 * - "{ns}:rm:F:ver", a hash: stream id -> the last version committed;
 * - "{ns}:rm:F:keys", a hash: each key of the model (its full name) -> "hash" or "set";
 * - "{ns}:rm:F:k:K", the model's key K: a hash or a set.
 * Read it with the functions below (both backends), or with any Redis client on redis://.
 * Rebuilding the model from scratch: delete those keys and the feed's checkpoint.
 */
#ifndef EDDY_MODEL_H
#define EDDY_MODEL_H

#include <stddef.h>

#include "eddy/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The write set of the events a feed is committing; filled by eddy_feed_config.writes with the
 * functions below. Keys: 1-256 printable ASCII characters other than space, '{' and '}' (':'
 * is allowed). A key is a hash or a set, by the first write that creates it; a write of the
 * other kind to it is refused by the commit (WRONGTYPE, EDDY_ERR_BACKEND) unless an earlier
 * write deleted it. Fields, members and values are binary-safe; fields and members up to 64 KiB,
 * values up to 1 MiB, at most 1000 writes per event (EDDY_ERR_TOO_LARGE). A refused write
 * changes nothing; the callback may return the error to fail the event.
 * Thread: the thread running the callback, during the call only. */
typedef struct eddy_writes eddy_writes;

/** Asks for the write set of one event (the user's event, as decode made it; meta is its store
 * metadata). Return EDDY_OK to commit it (an empty write set commits the event's version and
 * changes nothing else), any error to fail the event as a failed apply does. Must not call the
 * feed; may run again for the same event (a retried commit). user is the projection's user. */
typedef eddy_status (*eddy_feed_writes_fn)(void *event, const eddy_event_meta *meta, eddy_writes *w,
                                           eddy_error *err, void *user);

/** HSET key field value. */
EDDY_EXPORT eddy_status eddy_writes_hset(eddy_writes *w, const char *key, const void *field,
                                         size_t field_len, const void *value, size_t value_len,
                                         eddy_error *err);
/** HDEL key field (a hash left empty goes, as in Redis). */
EDDY_EXPORT eddy_status eddy_writes_hdel(eddy_writes *w, const char *key, const void *field,
                                         size_t field_len, eddy_error *err);
/** HINCRBY key field by: a counter (a missing field counts from 0). */
EDDY_EXPORT eddy_status eddy_writes_hincr(eddy_writes *w, const char *key, const void *field,
                                          size_t field_len, long long by, eddy_error *err);
/** SADD key member. */
EDDY_EXPORT eddy_status eddy_writes_sadd(eddy_writes *w, const char *key, const void *member,
                                         size_t member_len, eddy_error *err);
/** SREM key member (a set left empty goes). */
EDDY_EXPORT eddy_status eddy_writes_srem(eddy_writes *w, const char *key, const void *member,
                                         size_t member_len, eddy_error *err);
/** DEL key. */
EDDY_EXPORT eddy_status eddy_writes_del(eddy_writes *w, const char *key, eddy_error *err);

/* ---- reading a model (blocking front end; eddy/rmodel.h has the reactive twins) ---------- */

/** One item of a model key or of the model's key list: a hash's field and value, a set's
 * member (value NULL, value_len 0), or a key's name and its kind ("hash" or "set"). Borrowed
 * for the call; return EDDY_OK to go on, anything else stops the read and is returned. */
typedef eddy_status (*eddy_model_item_fn)(const char *name, size_t name_len, const char *value,
                                          size_t value_len, void *user);

/** The position the model's last committed replay page reached (0: none yet). */
EDDY_EXPORT eddy_status eddy_store_model_position(eddy_store *store, const char *feed_id,
                                                  long long *position, eddy_error *err);
/** Every field and value of the model's hash `key` (nothing for a missing key).
 * EDDY_ERR_BACKEND (WRONGTYPE) when the key is a set. */
EDDY_EXPORT eddy_status eddy_store_model_hash(eddy_store *store, const char *feed_id,
                                              const char *key, eddy_model_item_fn each, void *user,
                                              eddy_error *err);
/** Every member of the model's set `key` (nothing for a missing key). */
EDDY_EXPORT eddy_status eddy_store_model_set(eddy_store *store, const char *feed_id,
                                             const char *key, eddy_model_item_fn each, void *user,
                                             eddy_error *err);
/** Every key of the model, as its writes named it (without the layout's prefix), with its kind. */
EDDY_EXPORT eddy_status eddy_store_model_keys(eddy_store *store, const char *feed_id,
                                              eddy_model_item_fn each, void *user, eddy_error *err);

#ifdef __cplusplus
}
#endif

#endif
