/* SPDX-License-Identifier: BSD-3-Clause */
/* A projection's feed as a subscription's handler, for both front ends (eddy_feed_handler,
 * eddy_rfeed_handler): what a live delivery becomes.
 *
 * The delivery's event is decoded with its stored metadata. One that is not for this projection
 * is acknowledged; one that cannot be decoded is not (it comes again, then goes to the dead
 * letters). The rest is offered to the feed through the front end's asynchronous accept, whose
 * completion may run before the offer returns (applied at once, a duplicate, refused) or later,
 * on any thread (held while the feed catches up). Which of the two happened is settled by one
 * compare-and-swap: the first of "the handler returns" and "the offer completes" to move the
 * record's state decides whether the handler returns the outcome itself or returns
 * EDDY_PENDING and leaves the delivery to the completion (eddy_delivery_finish). */
#include <stdatomic.h>
#include <stdlib.h>

#include "store/feed.h"

enum { OFFERED, PENDING, DONE };

typedef struct listened {
    eddy__feed *f;
    eddy_delivery *d;
    void *event;
    atomic_int state;
    eddy_status st;
} listened;

static void offered(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    listened *l = user;
    eddy__feed_free_event(l->f, l->event);
    l->st = st;
    int expected = OFFERED;
    if (atomic_compare_exchange_strong(&l->state, &expected, DONE))
        return; /* the handler has not returned: it returns st itself */
    /* Applied (or a duplicate of an applied event): acknowledged. Anything else: not, so the
     * subscription gets it again. */
    eddy_delivery_finish(l->d, st);
    free(l);
}

eddy_status eddy__feed_handle(eddy__feed *f, eddy_delivery *d, eddy__feed_offer_fn offer,
                              void *feed) {
    void *event;
    eddy_error err = {0};
    eddy_event_meta meta;
    bool has_meta;
    eddy_status st = eddy__feed_listen(f, d, &event, &meta, &has_meta, &err);
    if (st != EDDY_OK)
        return st; /* not decoded: not acknowledged */
    if (!event)
        return EDDY_OK; /* not for this projection: acknowledged */
    listened *l = calloc(1, sizeof(*l));
    if (!l) {
        eddy__feed_free_event(f, event);
        return EDDY_ERR_NOMEM;
    }
    l->f = f;
    l->d = d;
    l->event = event;
    atomic_init(&l->state, OFFERED);
    /* The metadata, borrowed from the delivery (which outlives the offer), is copied if held. */
    st = offer(feed, has_meta ? &meta : NULL, event, offered, l);
    if (st != EDDY_OK) { /* refused up front: the completion does not run */
        eddy__feed_free_event(f, event);
        free(l);
        return st;
    }
    int expected = OFFERED;
    if (atomic_compare_exchange_strong(&l->state, &expected, PENDING))
        return EDDY_PENDING; /* held: the completion finishes the delivery */
    st = l->st;
    free(l);
    return st;
}
