/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking front end's names before 0.3.0 (eddy/deprecated.h), each the call it was renamed
 * to, so that programs built against 0.2 keep linking for one release. */
#include "eddy/domain.h"
#include "eddy/feed.h"
#include "eddy/push.h"
#include "eddy/store.h"

eddy_status eddy_store_read_all(eddy_store *store, long long after_position, size_t max_entries,
                                const eddy_filter *filter, eddy_stored_fn fn, void *user,
                                long long *next_position, eddy_error *err) {
    return eddy_store_read_page(store, after_position, max_entries, filter, fn, user, next_position,
                                err);
}

eddy_cancel *eddy_feed_cancel_new(void) { return eddy_cancel_new(); }
void eddy_feed_cancel_fire(eddy_cancel *c) { eddy_cancel_fire(c); }
bool eddy_feed_cancel_fired(const eddy_cancel *c) { return eddy_cancel_fired(c); }
void eddy_feed_cancel_free(eddy_cancel *c) { eddy_cancel_free(c); }

eddy_status eddy_feed_get_info(eddy_feed *feed, eddy_feed_info *out) {
    return eddy_feed_stats(feed, out);
}

eddy_status eddy_domain_get_info(eddy_domain_feed *feed, eddy_feed_info *out) {
    return eddy_domain_stats(feed, out);
}

eddy_status eddy_push_sources_status(eddy_push_sources *ps, const char *id,
                                     eddy_push_progress *out) {
    return eddy_push_sources_stats(ps, id, out);
}
