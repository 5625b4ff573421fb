/* SPDX-License-Identifier: BSD-3-Clause */
/* What the reactive domain feed (domain.c) needs of the reactive catch-up feed beyond its public
 * API. Thread: the loop's. */
#ifndef EDDY_REACTIVE_RFEED_HOOKS_H
#define EDDY_REACTIVE_RFEED_HOOKS_H

#include "eddy/rfeed.h"
#include "store/feed.h"

/* eddy_rfeed_accept_meta (meta may be NULL) with eddy__accept_flags.defer: the event is applied
 * now or not taken, never held. done runs once on the loop (as for eddy_rfeed_accept) with
 * EDDY_OK: applied (or a duplicate of an applied event), EDDY_PENDING: deferred (not taken),
 * or the refusal or the apply's error. EDDY_ERR_INVALID_ARGUMENT (done not called) for a NULL
 * feed, event or done. */
eddy_status eddy__rfeed_accept_or_defer(eddy_rfeed *feed, const eddy_event_meta *meta, void *event,
                                        eddy_rfeed_done_fn done, void *user);
/* Runs done(st, err, user) on the loop through the feed's completion queue (never inside the
 * calling function; at once while the feed is being freed). EDDY_ERR_NOMEM (done not called)
 * when the queue's item cannot be allocated. */
eddy_status eddy__rfeed_post(eddy_rfeed *feed, eddy_rfeed_done_fn done, void *user, eddy_status st,
                             const eddy_error *err);
/* The feed's core (the domain core reads its state). Ownership: the feed's. */
eddy__feed *eddy__rfeed_core(eddy_rfeed *feed);

#endif
