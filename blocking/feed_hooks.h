/* SPDX-License-Identifier: BSD-3-Clause */
/* What the blocking domain feed (domain.c) needs of the blocking catch-up feed beyond its public
 * API. */
#ifndef EDDY_BLOCKING_FEED_HOOKS_H
#define EDDY_BLOCKING_FEED_HOOKS_H

#include <stdbool.h>

#include "eddy/feed.h"
#include "store/feed.h"

/* Feeds a live event that is never held (eddy__accept_flags.defer), the twin of
 * eddy__rfeed_accept_or_defer: done runs once before the call returns, with EDDY_OK (applied now
 * on this thread, or a duplicate), EDDY_PENDING (not taken: the feed is not live) or the refusal
 * or failure. Never waits. EDDY_ERR_INVALID_ARGUMENT (done not called) for a NULL feed or done. Ownership: meta and event are borrowed for the call. */
eddy_status eddy__bfeed_accept_or_defer(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                        eddy_feed_done_fn done, void *user);
/* The feed's core (the domain core reads its state). Ownership: the feed's. */
eddy__feed *eddy__bfeed_core(eddy_feed *feed);

#endif
