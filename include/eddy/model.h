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
 * Read it with the functions below (both backends; eddy/rmodel.h has the reactive twins), or
 * with any Redis client on redis://.
 * Rebuilding the model from scratch: delete those keys and the feed's checkpoint.
 */
#ifndef EDDY_MODEL_H
#define EDDY_MODEL_H

#include "eddy/store.h"
#include "eddy/writes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reading a model (blocking front end; eddy/rmodel.h has the reactive twins) ---------- */

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
