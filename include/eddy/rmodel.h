/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — reading a read model kept in Redis on a libev loop (reactive front end): the twins of
 * eddy/model.h's eddy_store_model_* for an eddy_rstore. The model, its layout and its write
 * sets are eddy/model.h's; a reactive feed keeps one with eddy_feed_config.writes as the
 * blocking feed does.
 *
 * Callbacks: done runs exactly once, on the loop, never inside the call (a call refused up
 * front returns the refusal and does not call it); each runs on the loop before done.
 * Thread: every function must be called on the loop's thread.
 */
#ifndef EDDY_RMODEL_H
#define EDDY_RMODEL_H

#include "eddy/model.h"
#include "eddy/rstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The outcome of eddy_rstore_model_position: the position (0: none yet) when st is EDDY_OK.
 * err is borrowed for the call (NULL on EDDY_OK). */
typedef void (*eddy_rmodel_position_fn)(eddy_status st, long long position, const eddy_error *err,
                                        void *user);

/** The position the model's last committed replay page reached. */
EDDY_EXPORT eddy_status eddy_rstore_model_position(eddy_rstore *store, const char *feed_id,
                                                   eddy_rmodel_position_fn done, void *user,
                                                   eddy_error *err);
/** Every field and value of the model's hash `key` through each, then done. An item callback
 * that stops the read makes done's status its own. */
EDDY_EXPORT eddy_status eddy_rstore_model_hash(eddy_rstore *store, const char *feed_id,
                                               const char *key, eddy_model_item_fn each,
                                               eddy_rstore_done_fn done, void *user,
                                               eddy_error *err);
/** Every member of the model's set `key`. */
EDDY_EXPORT eddy_status eddy_rstore_model_set(eddy_rstore *store, const char *feed_id,
                                              const char *key, eddy_model_item_fn each,
                                              eddy_rstore_done_fn done, void *user,
                                              eddy_error *err);
/** Every key of the model, with its kind. */
EDDY_EXPORT eddy_status eddy_rstore_model_keys(eddy_rstore *store, const char *feed_id,
                                               eddy_model_item_fn each, eddy_rstore_done_fn done,
                                               void *user, eddy_error *err);

#ifdef __cplusplus
}
#endif

#endif
