/* SPDX-License-Identifier: BSD-3-Clause */
/* The parts both front ends' buses are made of (bus_core.h). */
#include "bus/bus_core.h"

#include <string.h>

#include "error.h"
#include "log.h"

eddy_status eddy__bus_core_init(eddy__bus_core *c, const eddy__settings *s, eddy_error *err) {
    memset(c, 0, sizeof(*c));
    c->caps = eddy__capabilities(&s->url);
    if (!eddy__link_hold_backend(s, &c->backend) || !(c->publisher = eddy__publisher_new(s)) ||
        !(c->requests = eddy__requests_new(s)) ||
        !(c->registry_cache = eddy__registry_cache_new(EDDY__REGISTRY_CACHE_MS))) {
        eddy__bus_core_destroy(c);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

void eddy__bus_core_destroy(eddy__bus_core *c) {
    eddy__publisher_free(c->publisher);
    eddy__requests_free(c->requests);
    eddy__registry_cache_free(c->registry_cache);
    eddy__link_release_backend(c->backend);
    eddy__subs_free(&c->all);
    c->publisher = NULL;
    c->requests = NULL;
    c->registry_cache = NULL;
    c->backend = NULL;
}

eddy__request_ctx eddy__bus_core_request_ctx(const eddy__bus_core *c, const eddy__settings *s,
                                             bool active, bool cancelled, const char *inbox) {
    return (eddy__request_ctx){.requests = c->requests,
                               .cache = c->registry_cache,
                               .publisher = c->publisher,
                               .ns = s->ns,
                               .caps = c->caps,
                               .active = active,
                               .cancelled = cancelled,
                               .reply_to = active ? inbox : NULL};
}

static const char *why(eddy_status st, const eddy_error *err) {
    return err && err->detail[0] ? err->detail : eddy_status_str(st);
}

void eddy__bus_core_left(const eddy__settings *s, eddy_status st, const eddy_error *err) {
    if (st != EDDY_OK && st != EDDY_ERR_CLOSED)
        eddy__log(&s->log, EDDY_LOG_WARN,
                  "stop: could not leave the subscription registry (%s); the leases end in %u ms",
                  why(st, err), s->lease_ms);
}

void eddy__bus_core_dropped(const eddy__settings *s, eddy_status st, const eddy_error *err) {
    if (st != EDDY_OK && st != EDDY_ERR_CLOSED)
        eddy__log(&s->log, EDDY_LOG_WARN,
                  "stop: could not remove the fanout groups (%s); the retention pass removes "
                  "them once the leases ended",
                  why(st, err));
}

eddy__bus_stats_in eddy__bus_core_stats_in(eddy__bus_core *c, const eddy__settings *s, bool started,
                                           const eddy__admin_scan *scan,
                                           const eddy_error *scan_err) {
    eddy__bus_stats_in in = {.s = s,
                             .started = started,
                             .subs = c->all.v,
                             .nsubs = c->all.n,
                             .requests = c->requests,
                             .scan = scan,
                             .scan_err = scan_err};
    eddy__retention_counters_snapshot(&c->retention, &in.retention);
    return in;
}

eddy_status eddy__bus_core_pause(eddy__bus_core *c, const char *name, bool pause,
                                 void (*wake)(size_t i, eddy__wake how, void *user), void *user,
                                 eddy_error *err) {
    bool found = false;
    for (size_t i = 0; i < c->all.n; i++)
        if (strcmp(c->all.v[i]->name, name) == 0) {
            found = true;
            wake(i, eddy__consumer_pause(c->all.v[i], pause), user);
        }
    return found ? EDDY_OK
                 : eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "no subscription '%s' on this bus",
                              name);
}
