/* SPDX-License-Identifier: BSD-3-Clause */
/* One scenario table, two front ends: a driver wraps a bus of either front end behind the
 * same calls, so each behaviour test is written once and run on both (and on both backends).
 * The reactive driver runs the libev loop on a thread of its own and runs each call on it;
 * calls that complete through a callback (start, publish, request, a late subscribe) wait for
 * it, so every driver call returns its outcome, as the blocking front end's do. */
#ifndef EDDY_TEST_DRIVER_H
#define EDDY_TEST_DRIVER_H

#include "eddy/bus.h"

typedef struct tbus tbus;

typedef struct driver {
    const char *name;
    eddy_status (*bus_new)(const eddy_settings *s, const eddy_subscription_spec *specs, size_t n,
                           tbus **out, eddy_error *err);
    eddy_status (*subscribe)(tbus *b, const eddy_subscription_spec *spec, eddy_error *err);
    eddy_status (*start)(tbus *b, eddy_error *err);
    eddy_status (*stop)(tbus *b);
    void (*free)(tbus *b);
    eddy_status (*publish)(tbus *b, const char *subject, const eddy_event *ev, eddy_error *err);
    /* A subscription's counters, by its name (EDDY_ERR_INVALID_ARGUMENT for an unknown one). */
    eddy_status (*stats)(tbus *b, const char *name, eddy_consumer_stats *out);
    /* A request, waited for: the reply (the caller frees it) or why there is none. Any
     * thread, also several at once. Reactive: a refusal is the call's own status, any other
     * outcome the callback's; opts->cancel must be NULL there. */
    eddy_status (*request)(tbus *b, const char *subject, const eddy_event *ev,
                           const eddy_request_opts *opts, eddy_event **reply, eddy_error *err);
    eddy_status (*request_value)(tbus *b, const char *subject, const char *type, eddy_pack_fn pack,
                                 void *pack_user, const eddy_request_opts *opts, eddy_event **reply,
                                 eddy_error *err);
    /* Request counters: name NULL the total, "" the unnamed row. */
    eddy_status (*request_stats)(tbus *b, const char *name, eddy_request_stats *out);
    /* Pauses / resumes a subscription by its name (reactive: on the loop thread). */
    eddy_status (*pause)(tbus *b, const char *name, eddy_error *err);
    eddy_status (*resume)(tbus *b, const char *name, eddy_error *err);
    /* The front end's own bus (eddy_bus * or eddy_rbus *), for a handler that calls it from
     * inside (reactive: handlers run on the loop thread, where the driver's calls would wait
     * on themselves). */
    void *(*native)(tbus *b);
    /* Runs fn(arg) where handlers run their deliveries' finish (reactive: on the loop thread,
     * waited for; blocking: right here), e.g. to finish a delivery held with EDDY_PENDING. */
    void (*run)(tbus *b, void (*fn)(void *arg), void *arg);
    /* publish, copying the entry id the front end gives back into id. */
    eddy_status (*publish_id)(tbus *b, const char *subject, const eddy_event *ev, char *id,
                              size_t id_size, eddy_error *err);
    /* A subscription of the bus answers scatter-gather requests too (before start). */
    eddy_status (*answer_all)(tbus *b, const char *name, eddy_error *err);
    /* A scatter-gather request, waited for: the outcome and every reply (*out, the caller
     * frees it; NULL when refused). *each: how many replies the front end told of one at a
     * time (reactive: its per-reply callback; blocking: the list's count). */
    eddy_status (*request_all)(tbus *b, const char *subject, const eddy_event *ev,
                               const eddy_gather_opts *opts, eddy_replies **out, size_t *each,
                               eddy_error *err);
} driver;

extern const driver blocking_driver;
extern const driver reactive_driver;

#endif
