/* One scenario table, two front ends: a driver wraps a bus of either front end behind the
 * same calls, so each behaviour test is written once and run on both (and on both backends).
 * The reactive driver runs the libev loop on a thread of its own and runs each call on it. */
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
    eddy_status (*stats)(tbus *b, const char *name, eddy_consumer_stats *out);
} driver;

extern const driver blocking_driver;
extern const driver reactive_driver;

#endif
