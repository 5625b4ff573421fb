/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints a bus's stats in the Prometheus text format, for tests/cli/prometheus.sh to hand to
 * promtool: a memory:// bus with a handler that handled 3 events, a responder that answered a
 * request, and request names that need escaping (a quote, a backslash, a newline, bytes that
 * are not UTF-8).
 *   bus_prometheus blocking   eddy_bus_stats_prometheus of the started bus
 *   bus_prometheus reactive   eddy_rbus_stats_prometheus of a reactive bus (not started)
 * Exit 1, saying why on stderr, when something fails. */
#include <ev.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy/blocking.h"
#include "eddy/reactive.h"

static atomic_int handled;

static eddy_status count_it(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

static eddy_status pong(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    *reply = eddy_event_dup(eddy_delivery_event(d));
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static int fail(const char *what, const eddy_error *err) {
    fprintf(stderr, "bus_prometheus: %s: %s\n", what, err ? err->detail : "");
    return 1;
}

int main(int argc, char **argv) {
    bool reactive = argc > 1 && strcmp(argv[1], "reactive") == 0;
    static const char *names[] = {"ping", "odd \"name\" \\ with\na newline", "bad \xff byte"};
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = "memory://bus-prometheus";
    s.ns = "metrics";
    s.source = "/tests/bus-prometheus";
    s.request_names = names;
    s.request_name_count = 3;
    eddy_subscription_spec specs[2];
    eddy_subscription_spec_init(&specs[0]);
    specs[0].name = "work";
    specs[0].pattern = "orders.*";
    specs[0].group = "workers";
    specs[0].delivery = EDDY_AT_LEAST_ONCE;
    specs[0].handler = count_it;
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "pinger";
    specs[1].pattern = "ping";
    specs[1].group = "pingers";
    specs[1].responder = pong;
    eddy_error err = {0};
    char *doc;
    if (reactive) {
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        eddy_rbus *rbus;
        if (eddy_rbus_new(loop, &s, specs, 2, &rbus, &err) != EDDY_OK)
            return fail("eddy_rbus_new", &err);
        doc = eddy_rbus_stats_prometheus(rbus, &err);
        eddy_rbus_free(rbus);
        ev_loop_destroy(loop);
    } else {
        eddy_bus *bus;
        if (eddy_bus_new(&s, specs, 2, &bus, &err) != EDDY_OK)
            return fail("eddy_bus_new", &err);
        if (eddy_bus_start(bus, &err) != EDDY_OK)
            return fail("eddy_bus_start", &err);
        for (int i = 0; i < 3; i++) {
            eddy_event *ev = NULL;
            if (eddy_bus_new_event(bus, "orders.created", &ev, &err) != EDDY_OK ||
                eddy_bus_publish(bus, "orders.created", ev, NULL, 0, &err) != EDDY_OK)
                return fail("publish", &err);
            eddy_event_free(ev);
        }
        eddy_event *req = NULL, *reply = NULL;
        eddy_request_opts opts = {.deadline_ms = eddy_now_ms() + 30000, .name = "ping"};
        if (eddy_bus_new_event(bus, "ping", &req, &err) != EDDY_OK ||
            eddy_bus_request(bus, "ping", req, &opts, &reply, &err) != EDDY_OK)
            return fail("request", &err);
        eddy_event_free(req);
        eddy_event_free(reply);
        /* The bus counts a handled delivery after its handler returns, so the wait is on the
         * bus's counter, not on the handler's. */
        eddy_consumer_stats st = {0};
        for (long long until = eddy_now_ms() + 30000;
             atomic_load(&handled) < 3 || eddy_bus_consumer_stats(bus, "work", &st) != EDDY_OK ||
             st.handled < 3;) {
            if (eddy_now_ms() > until)
                return fail("the 3 events were not handled in 30 s", NULL);
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
        doc = eddy_bus_stats_prometheus(bus, &err);
        eddy_bus_free(bus);
    }
    if (!doc)
        return fail("stats", &err);
    fputs(doc, stdout);
    free(doc);
    return fflush(stdout) == 0 ? 0 : 1;
}
