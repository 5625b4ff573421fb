/* SPDX-License-Identifier: BSD-3-Clause */
/* One scenario table, two front ends, for catch-up projection feeds: a feed driver builds a feed
 * of either front end over a store of the same front end (store_driver.h) and wraps it behind
 * the same calls. The reactive driver runs the feed on the store's loop thread and waits for
 * each completion (checked to run once, never inside the call), so every call returns its
 * outcome as the blocking feed's do. A call may also be left in flight (feed_call): blocking, on
 * a thread of its own; reactive, started on the loop, its completion kept. Every call of the
 * feeds' public API made by the feed scenarios is here, in feed_driver_blocking.c and
 * feed_driver_reactive.c. */
#ifndef EDDY_TEST_FEED_DRIVER_H
#define EDDY_TEST_FEED_DRIVER_H

#include "domain_driver.h"
#include "eddy/feed.h"
#include "store_driver.h"

typedef struct tfeed tfeed;
typedef struct tcall tcall;
typedef struct tlisten tlisten;

typedef enum feed_call_kind {
    FEED_ACCEPT,      /* accept without metadata */
    FEED_ACCEPT_META, /* accept with metadata */
    FEED_CATCH_UP,
    FEED_GO_LIVE,
    /* An accept that does not wait, its outcome a completion: blocking, eddy_feed_offer, made on
     * the calling thread (its completion may run before start returns); reactive, the accept
     * itself (eddy_rfeed_accept already is one). Only through start. */
    FEED_OFFER
} feed_call_kind;

typedef struct feed_driver {
    const char *name;
    bool reactive;
    /* A feed over st with the store's own checkpoint storage (blocking: set when cfg leaves
     * cfg->checkpoints NULL; reactive: cfg as it is, the store's checkpoints beside it). */
    eddy_status (*new_feed)(tstore *st, const eddy_feed_config *cfg, tfeed **out, eddy_error *err);
    /* A feed whose checkpoints go through g (domain_driver.h's gate; it must outlive the
     * feed): its catch-up can be held at its first or last step. */
    eddy_status (*new_gated_feed)(tstore *st, const eddy_feed_config *cfg, tgate *g, tfeed **out,
                                  eddy_error *err);
    void (*free)(tfeed *f);
    eddy_status (*catch_up)(tfeed *f, eddy_error *err);
    eddy_status (*go_live)(tfeed *f, eddy_error *err);
    void (*stop_catch_up)(tfeed *f);
    /* Waits for the outcome (call it on a live or refusing feed, or with a catch-up coming). */
    eddy_status (*accept)(tfeed *f, void *event, eddy_error *err);
    eddy_status (*accept_meta)(tfeed *f, const eddy_event_meta *meta, void *event, eddy_error *err);
    /* A call left in flight: event and meta must outlive it. */
    tcall *(*start)(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta, void *event);
    /* Whether its outcome came. */
    bool (*finished)(tcall *c);
    /* When its outcome came, in the order of all calls in flight of the process (0: not yet).
     * Reactive: the order the completions ran on the loop; blocking: the order the calls
     * returned on their threads (which race once released). */
    unsigned long (*finished_at)(tcall *c);
    /* Waits for its outcome, returns it (detail into err) and frees the call. */
    eddy_status (*join)(tcall *c, eddy_error *err);
    /* From inside one of the feed's projection callbacks, on its thread: frees the feed (the
     * front end finishes the free once the outermost call returns); f itself stays valid for
     * free(), which then only releases it. */
    void (*free_from_projection)(tfeed *f);
    /* From inside one of the feed's projection callbacks, on its thread: a call on the feed
     * that does not wait there (blocking: the call itself, returned when this does; reactive:
     * started, its completion kept for join). */
    tcall *(*start_from_projection)(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta,
                                    void *event);
    /* The same for stop_catch_up. */
    void (*stop_from_projection)(tfeed *f);
    /* A listener: a bus of the same front end (started) with one subscription, named after
     * group, Competing and AtLeastOnce on subject, whose handler is the front end's feed
     * handler (eddy_feed_handler or eddy_rfeed_handler) feeding f. */
    eddy_status (*listen)(tfeed *f, const eddy_settings *s, const char *subject, const char *group,
                          tlisten **out, eddy_error *err);
    eddy_status (*listener_stats)(tlisten *l, eddy_consumer_stats *out);
    /* Publishes ev (not stored) on the listener's bus. */
    eddy_status (*listener_publish)(tlisten *l, const char *subject, const eddy_event *ev);
    void (*listener_stop)(tlisten *l);
    /* Stops and frees the bus. */
    void (*listener_free)(tlisten *l);
    /* The feed's id, copied into buf. */
    void (*id)(tfeed *f, char *buf, size_t size);
    /* The refusals of the front end's own calling shape (NULL handles, out-pointers and
     * callbacks, a checkpoint storage of the other kind), asserted here; st and cfg make a
     * feed that works, f is one. */
    void (*shape_refusals)(tstore *st, const eddy_feed_config *cfg, tfeed *f);
    bool (*ready_for_live_delivery)(tfeed *f);
    bool (*refuses_permanently)(tfeed *f);
    bool (*failure)(tfeed *f, eddy_error *cause);
    eddy_status (*get_info)(tfeed *f, eddy_feed_info *out);
} feed_driver;

extern const feed_driver blocking_feed_driver;
extern const feed_driver reactive_feed_driver;

#endif
