/* SPDX-License-Identifier: BSD-3-Clause */
/* One scenario table, two front ends, for push sources and push subscription models: a push
 * driver runs a bus, push sources and models of either front end on the thread of a store of
 * the same front end (store_driver.h; domain feeds from domain_driver.h), behind the same
 * calls. The reactive driver runs them on the store's loop thread and waits for each
 * completion (start-all's callback, an add's, a model's answer), so every call returns its
 * outcome as the blocking one's do. Every call of the push, bus and model public API made by
 * the push scenarios is here, in push_driver_blocking.c and push_driver_reactive.c. */
#ifndef EDDY_TEST_PUSH_DRIVER_H
#define EDDY_TEST_PUSH_DRIVER_H

#include "domain_driver.h"
#include "eddy/push.h"
#include "store_driver.h"

typedef struct tpush tpush;
typedef struct tmodel tmodel;

/* A source, as either front end's spec takes it. */
typedef struct tpush_spec {
    const char *id;
    tdomain *feed;
    eddy_projection projection;
    const eddy_filter *filter;
    const char *subject;
    const char *group;
    bool go_live;
} tpush_spec;

#define TPUSH_IDS 8

typedef struct push_driver {
    const char *name;
    bool reactive;
    /* A bus on st's backend and thread (started), no sources yet. */
    eddy_status (*env_new)(tstore *st, const eddy_settings *s, tpush **out, eddy_error *err);
    /* Stops the bus, frees the sources (if any) and the bus. */
    void (*env_free)(tpush *p);
    eddy_status (*sources_new)(tpush *p, const eddy_push_options *o, eddy_error *err);
    /* Frees the sources (the bus should be stopped first); callable from any thread. */
    void (*sources_free)(tpush *p);
    /* Reactive: waits for the add's completion; its status is the call's. */
    eddy_status (*add)(tpush *p, const tpush_spec *spec, eddy_error *err);
    /* The ids started, in order, into ids (at most TPUSH_IDS), their number in *n; states gets
     * each started source's state as start-all returned (blocking) or as its completion ran
     * (reactive). */
    eddy_status (*start_all)(tpush *p, char ids[][24], eddy_push_state *states, size_t *n,
                             eddy_error *err);
    eddy_status (*status)(tpush *p, const char *id, eddy_push_progress *out);
    /* Blocking only (the reactive sources have no wait: their completions say it); NULL on the
     * reactive driver. */
    eddy_status (*wait)(tpush *p, unsigned timeout_ms);
    void (*bus_stop)(tpush *p);
    /* Publishes without storing. */
    eddy_status (*publish)(tpush *p, const char *subject, const char *id);
    /* A plain subscription of its own group on subject, counting (atomically) what it gets. */
    void (*control)(tpush *p, const char *name, const char *subject, int *count);
    eddy_status (*consumer_stats)(tpush *p, const char *name, eddy_consumer_stats *out);

    /* A push model; the observer is told each outcome as the front end tells it. */
    eddy_status (*model_new)(tpush *p, const eddy_push_observer *obs, tmodel **out,
                             eddy_error *err);
    void (*model_free)(tmodel *m);
    eddy_status (*model_add)(tmodel *m, tdomain *feed, eddy_error *err);
    /* Waits until the observer was told (reactive: the answer comes on the loop). */
    eddy_status (*model_accept)(tmodel *m, const eddy_event *ev, const eddy_event_meta *meta);
    eddy_status (*model_accept_or_defer)(tmodel *m, const eddy_event *ev,
                                         const eddy_event_meta *meta, eddy_route *route,
                                         eddy_error *err);
    /* The refusals of the front end's own calling shape (NULL model or event). */
    void (*model_shape_refusals)(tmodel *m);

    /* Reactive only (NULL on the blocking driver, whose calls have no completion to run at
     * teardown); each asserts its rule itself:
     * - an add asked for and not yet completed completes once with EDDY_ERR_CLOSED when the
     *   sources are freed (the bus stopped first);
     * - an answer of the model not yet given completes once with EDDY_ERR_CLOSED when the
     *   model is freed, and never again;
     * - the progress callback may free the sources: the start-all in progress completes with
     *   EDDY_ERR_CLOSED inside it, nothing more starts and no callback runs afterwards (the
     *   feed was registered before the callback was told; *applied stays 0). */
    void (*free_completes_a_pending_add)(tpush *p, const tpush_spec *spec);
    void (*model_free_completes_a_pending_answer)(tmodel *m, const eddy_event *ev);
    void (*progress_callback_may_free_the_sources)(tpush *p, const tpush_spec *spec,
                                                   const int *applied);
} push_driver;

extern const push_driver blocking_push_driver;
extern const push_driver reactive_push_driver;

#endif
