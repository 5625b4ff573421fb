/* SPDX-License-Identifier: BSD-3-Clause */
/* One scenario table, two front ends, for domain event feeds: a domain driver builds a feed of
 * either front end over a store of the same front end (store_driver.h) and wraps it behind the
 * same calls. The reactive driver runs the feed on the store's loop thread and waits for each
 * completion (checked to run once, never inside the call), so every call returns its outcome
 * as the blocking feed's do. Every call of the domain feeds' public API made by the domain
 * scenarios is here, in domain_driver_blocking.c and domain_driver_reactive.c. */
#ifndef EDDY_TEST_DOMAIN_DRIVER_H
#define EDDY_TEST_DOMAIN_DRIVER_H

#include "eddy/domain.h"
#include "store_driver.h"

typedef struct tdomain tdomain;
/* A checkpoint storage over the store's own that can hold its answers: the feed's exists (its
 * catch-up's first step) or save (its last) waits until the test opens the gate, so "while the
 * catch-up runs" needs no timing. Blocking: the operation waits on the thread that runs it;
 * reactive: its completion is kept and run by gate_open on the loop. */
typedef struct tgate tgate;

/* Where a route started from inside a projection's callback ends (route_from_projection):
 * calls is 1 once it completed. Written on the thread the feed runs its callbacks on. */
typedef struct droute {
    int calls;
    eddy_status st;
    eddy_route route;
    char detail[EDDY_ERROR_DETAIL_MAX];
    bool ready, refuses; /* the feed's ready_for_live_delivery and refuses_permanently, asked
                          * right after the route was made */
} droute;

typedef struct domain_driver {
    const char *name;
    bool reactive;
    /* A feed over st with the store's own checkpoint storage (the blocking driver sets
     * cfg->checkpoints to it when cfg leaves it NULL; the reactive one passes cfg as it is and
     * the store's checkpoints beside it, as eddy_rdomain_new takes them). */
    eddy_status (*new_feed)(tstore *st, const eddy_feed_config *cfg, tdomain **out,
                            eddy_error *err);
    void (*free)(tdomain *f);
    eddy_status (*reg)(tdomain *f, const char *id, const eddy_projection *projection,
                       const eddy_filter *filter, eddy_error *err);
    bool (*has_projection)(tdomain *f);
    /* Copied into buf ("" when none); whether there was one. */
    bool (*projection_id)(tdomain *f, char *buf, size_t size);
    eddy_status (*catch_up_all)(tdomain *f, eddy_error *err);
    eddy_status (*catch_up)(tdomain *f, const char *id, eddy_error *err);
    eddy_status (*go_live)(tdomain *f, const char *id, eddy_error *err);
    void (*stop_catch_up)(tdomain *f);
    /* Waits until the event is applied or refused (call it on a live or refusing feed). */
    eddy_status (*accept)(tdomain *f, const eddy_event_meta *meta, void *event, eddy_error *err);
    eddy_status (*accept_or_defer)(tdomain *f, const eddy_event_meta *meta, void *event,
                                   eddy_route *out, eddy_error *err);
    eddy_status (*route)(tdomain *f, const eddy_event *ev, const eddy_event_meta *meta,
                         eddy_route *out, eddy_error *err);
    /* From inside one of the feed's projection callbacks, on its thread: routes ev on the feed
     * without waiting on the feed's thread (blocking: the call itself; reactive: started, its
     * completion fills *d later on the loop). */
    void (*route_from_projection)(tdomain *f, const eddy_event *ev, droute *d);
    bool (*ready_for_live_delivery)(tdomain *f);
    bool (*refuses_permanently)(tdomain *f);
    bool (*failure)(tdomain *f, eddy_error *cause);
    eddy_status (*get_info)(tdomain *f, eddy_feed_info *out);
    /* Reactive only (NULL on the blocking driver, whose catch-up returns when it ended): asks
     * for the catch-up and routes ev right after, in the same turn of the loop, before the
     * loop ran the catch-up; both outcomes waited for. */
    eddy_status (*catch_up_all_then_route)(tdomain *f, const eddy_event *ev, eddy_route *out,
                                           eddy_status *route_st, eddy_error *err);
    /* A feed whose checkpoints go through g (which must outlive it). */
    eddy_status (*new_gated_feed)(tstore *st, const eddy_feed_config *cfg, tgate *g, tdomain **out,
                                  eddy_error *err);
    tgate *(*gate_new)(tstore *st);
    void (*gate_free)(tgate *g);
    /* Holds the next exists and/or save, until gate_open. */
    void (*gate_hold)(tgate *g, bool exists, bool save);
    /* Whether an operation waits at the gate. */
    bool (*gate_held)(tgate *g);
    /* Lets the held operation (and any later one) through. */
    void (*gate_open)(tgate *g);
    /* The gate's checkpoint storage, for feeds built elsewhere (feed_driver.h): a
     * const eddy_checkpoints * (blocking) or const eddy_rcheckpoints * (reactive). */
    const void *(*gate_checkpoints)(tgate *g);
    /* The front end's own feed (eddy_domain_feed * or eddy_rdomain_feed *). */
    void *(*native)(tdomain *f);
    /* The refusals of the front end's own calling shape (NULL callbacks, a blocking
     * checkpoint storage given to a reactive feed), asserted here on a feed with no
     * projection. */
    void (*shape_refusals)(tstore *st, const eddy_feed_config *cfg, tdomain *none);
} domain_driver;

extern const domain_driver blocking_domain_driver;
extern const domain_driver reactive_domain_driver;

#endif
