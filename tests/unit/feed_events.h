/* SPDX-License-Identifier: BSD-3-Clause */
/* The user's events and codec the feed core's unit tests share (test_feed_user.c,
 * test_feed_drive.c): an event is its id, decoded from a stored event "e1".."en" of source "/t"
 * and type order.placed. Header-only: each test program has its own copy. */
#ifndef EDDY_TESTS_UNIT_FEED_EVENTS_H
#define EDDY_TESTS_UNIT_FEED_EVENTS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "eddy/feed.h"

typedef struct tevent {
    char id[16];
} tevent;

static eddy_status t_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    tevent *t = calloc(1, sizeof(*t));
    cr_assert(t);
    snprintf(t->id, sizeof(t->id), "%s", eddy_event_id(ev));
    *out = t;
    return EDDY_OK;
}

static void t_free(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *t_id(const void *event, void *user) {
    (void)user;
    return ((const tevent *)event)->id;
}

/* A feed "orders" with this codec and pages of 2 (replays span several reads). */
static void t_config(eddy_feed_config *cfg) {
    eddy_feed_config_init(cfg);
    cfg->id = "orders";
    cfg->decode = t_decode;
    cfg->free_event = t_free;
    cfg->event_id = t_id;
    cfg->page_size = 2;
}

/* Makes n stored events "e1".."en" into ev; returns n. */
static int t_events(eddy_event **ev, int n) {
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i + 1);
        cr_assert(ev[i] = eddy_event_new());
        eddy_event_set_id(ev[i], id);
        eddy_event_set_source(ev[i], "/t");
        eddy_event_set_type(ev[i], "order.placed");
    }
    return n;
}

#endif
