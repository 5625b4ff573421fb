/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive front end's names before 0.3.0 (eddy/deprecated.h), each the call it was renamed
 * to, so that programs built against 0.2 keep linking for one release. */
#include "eddy/rdomain.h"
#include "eddy/rfeed.h"
#include "eddy/rpush.h"
#include "eddy/rstore.h"

eddy_status eddy_rstore_ckpt_exists(eddy_rstore *store, const char *feed_id,
                                    eddy_rstore_exists_fn done, void *user, eddy_error *err) {
    return eddy_rstore_checkpoint_exists(store, feed_id, done, user, err);
}

eddy_status eddy_rstore_ckpt_read(eddy_rstore *store, const char *feed_id,
                                  eddy_rstore_checkpoint_read_fn done, void *user,
                                  eddy_error *err) {
    return eddy_rstore_checkpoint_read(store, feed_id, done, user, err);
}

eddy_status eddy_rstore_ckpt_save(eddy_rstore *store, const char *feed_id, const char *value,
                                  eddy_rstore_done_fn done, void *user, eddy_error *err) {
    return eddy_rstore_checkpoint_save(store, feed_id, value, done, user, err);
}

eddy_status eddy_rstore_ckpt_remove(eddy_rstore *store, const char *feed_id,
                                    eddy_rstore_done_fn done, void *user, eddy_error *err) {
    return eddy_rstore_checkpoint_remove(store, feed_id, done, user, err);
}

eddy_rcheckpoints eddy_rfeed_store_checkpoints(eddy_rstore *store) {
    return eddy_rstore_checkpoints(store);
}

eddy_status eddy_rfeed_get_info(eddy_rfeed *feed, eddy_feed_info *out) {
    return eddy_rfeed_stats(feed, out);
}

eddy_status eddy_rdomain_get_info(eddy_rdomain_feed *feed, eddy_feed_info *out) {
    return eddy_rdomain_stats(feed, out);
}

eddy_status eddy_rpush_sources_status(eddy_rpush_sources *ps, const char *id,
                                      eddy_push_progress *out) {
    return eddy_rpush_sources_stats(ps, id, out);
}
