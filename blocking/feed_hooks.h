/* SPDX-License-Identifier: BSD-3-Clause */
/* What the blocking domain feed (domain.c) needs of the blocking catch-up feed beyond its public
 * API. */
#ifndef EDDY_BLOCKING_FEED_HOOKS_H
#define EDDY_BLOCKING_FEED_HOOKS_H

#include <stdbool.h>

#include "eddy/feed.h"
#include "store/feed.h"

/* Feeds a live event that is never held (eddy__accept_flags.defer): applied now on this thread
 * (EDDY_OK), or not taken because the feed is not live (EDDY_OK, *deferred true), or refused /
 * failed (the error). Never waits. Ownership: meta and event are borrowed for the call. */
eddy_status eddy__bfeed_accept_or_defer(eddy_feed *feed, const eddy_event_meta *meta, void *event,
                                        bool *deferred, eddy_error *err);
/* The feed's core (the domain core reads its state). Ownership: the feed's. */
eddy__feed *eddy__bfeed_core(eddy_feed *feed);

#endif
