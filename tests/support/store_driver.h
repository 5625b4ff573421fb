/* SPDX-License-Identifier: BSD-3-Clause */
/* One scenario table, two front ends, for the event store: a store driver wraps a store of
 * either front end behind the same calls, as driver.h does for the bus. The reactive driver
 * runs the store on a loop thread of its own (rloop.h) and waits for each completion, so every
 * call returns its outcome as the blocking store's do; it also checks that each completion runs
 * exactly once and never inside the call that asked for it. Every call of the stores' public
 * API made by the store scenarios is here, in store_driver_blocking.c and
 * store_driver_reactive.c. */
#ifndef EDDY_TEST_STORE_DRIVER_H
#define EDDY_TEST_STORE_DRIVER_H

#include <stdbool.h>

#include "eddy/store.h"

typedef struct tstore tstore;
struct rloop;

typedef struct store_driver {
    const char *name;
    bool reactive;
    /* Reactive: the open only checks its input; connecting happens on the loop, and its
     * failures arrive with the first operation (eddy/rstore.h). */
    eddy_status (*open)(const eddy_settings *s, tstore **out, eddy_error *err);
    void (*close)(tstore *st);
    eddy_status (*append)(tstore *st, const char *stream_id, const eddy_event *const *evs, size_t n,
                          const eddy_append_opts *opts, long long *new_version, eddy_error *err);
    /* The whole of a stream after after_version (reactive: page after page, each asked for from
     * the previous one's completion). */
    eddy_status (*read_stream)(tstore *st, const char *stream_id, long long after_version,
                               eddy_stored_fn fn, void *user, eddy_error *err);
    /* One page across the store. */
    eddy_status (*read_all)(tstore *st, long long after_position, size_t max_entries,
                            const eddy_filter *filter, eddy_stored_fn fn, void *user,
                            long long *next_position, eddy_error *err);
    eddy_status (*head)(tstore *st, long long *position, eddy_error *err);
    /* The store's checkpoint storage as eddy_checkpoint_ops (reactive: each operation waited
     * for; read copies the marker into the caller's buffer, EDDY_ERR_TOO_LARGE when it does
     * not fit, as the ops' contract says). Valid as long as the store. */
    eddy_checkpoints (*checkpoints)(tstore *st);
    /* The refusals that belong to the front end's own calling shape (NULL handles, NULL
     * out-pointers or callbacks, buffers), asserted here; open is a store that works. */
    void (*shape_refusals)(const eddy_settings *s, tstore *open);
    /* The front end's own store (eddy_store * or eddy_rstore *). */
    void *(*native)(tstore *st);
    /* The loop thread the reactive store lives on (NULL for the blocking one); the drivers of
     * the features built on a store (domain_driver.h) run there too. */
    struct rloop *(*loop)(tstore *st);
    /* Reactive only (NULL on the blocking driver, whose calls have no completion): each opens a
     * store on s on a loop of its own on the calling thread and asserts a rule of the reactive
     * calling shape:
     * - closing with operations pending completes each once with EDDY_ERR_CLOSED, inside the
     *   close, and never again;
     * - a completion may close the store: what is queued behind it ends closed, once;
     * - a page's each may close the store: the page stops and ends closed, once;
     * - checkpoint operations asked for all at once complete once each, in order. */
    void (*close_with_operations_pending)(const eddy_settings *s);
    void (*close_from_a_callback)(const eddy_settings *s);
    void (*close_from_a_pages_each)(const eddy_settings *s);
    void (*checkpoint_operations_in_flight_at_once)(const eddy_settings *s);
} store_driver;

extern const store_driver blocking_store_driver;
extern const store_driver reactive_store_driver;

#endif
