/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking domain feed behind the domain scenario driver: a direct mapping. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "domain_driver.h"
#include "eddy/domain.h"

struct tdomain {
    eddy_domain_feed *feed;
    eddy_checkpoints ckpt; /* the store's, outliving the feed */
};

static eddy_status b_new(tstore *st, const eddy_feed_config *cfg, tdomain **out, eddy_error *err) {
    *out = NULL;
    tdomain *d = calloc(1, sizeof(*d));
    cr_assert(d);
    eddy_store *store = blocking_store_driver.native(st);
    d->ckpt = eddy_store_checkpoints(store);
    eddy_feed_config c = *cfg;
    if (!c.checkpoints)
        c.checkpoints = &d->ckpt;
    eddy_status rc = eddy_domain_new(store, &c, &d->feed, err);
    if (rc != EDDY_OK) {
        cr_assert_null(d->feed);
        free(d);
        return rc;
    }
    *out = d;
    return EDDY_OK;
}
static void b_free(tdomain *d) {
    if (!d)
        return;
    eddy_domain_free(d->feed);
    free(d);
}
static eddy_status b_reg(tdomain *d, const char *id, const eddy_projection *p, const eddy_filter *f,
                         eddy_error *err) {
    return eddy_domain_register(d->feed, id, p, f, err);
}
static bool b_has(tdomain *d) { return eddy_domain_has_projection(d->feed); }
static bool b_id(tdomain *d, char *buf, size_t size) {
    const char *id = eddy_domain_projection_id(d->feed);
    snprintf(buf, size, "%s", id ? id : "");
    return id != NULL;
}
static eddy_status b_catch_up_all(tdomain *d, eddy_error *err) {
    return eddy_domain_catch_up_all(d->feed, NULL, err);
}
static eddy_status b_catch_up(tdomain *d, const char *id, eddy_error *err) {
    return eddy_domain_catch_up(d->feed, id, NULL, err);
}
static eddy_status b_go_live(tdomain *d, const char *id, eddy_error *err) {
    return eddy_domain_go_live(d->feed, id, NULL, err);
}
static void b_stop(tdomain *d) { eddy_domain_stop_catch_up(d->feed); }
static eddy_status b_accept(tdomain *d, const eddy_event_meta *meta, void *event, eddy_error *err) {
    return eddy_domain_accept(d->feed, meta, event, NULL, err);
}
static eddy_status b_accept_or_defer(tdomain *d, const eddy_event_meta *meta, void *event,
                                     eddy_route *out, eddy_error *err) {
    return eddy_domain_accept_or_defer(d->feed, meta, event, out, err);
}
static eddy_status b_route(tdomain *d, const eddy_event *ev, const eddy_event_meta *meta,
                           eddy_route *out, eddy_error *err) {
    return eddy_domain_route(d->feed, ev, meta, out, err);
}
static void b_route_from_projection(tdomain *d, const eddy_event *ev, droute *r) {
    eddy_error err = {0};
    r->st = eddy_domain_route(d->feed, ev, NULL, &r->route, &err);
    snprintf(r->detail, sizeof(r->detail), "%s", err.detail);
    r->ready = eddy_domain_ready_for_live_delivery(d->feed);
    r->refuses = eddy_domain_refuses_permanently(d->feed);
    r->calls++;
}
static bool b_ready(tdomain *d) { return eddy_domain_ready_for_live_delivery(d->feed); }
static bool b_refuses(tdomain *d) { return eddy_domain_refuses_permanently(d->feed); }
static bool b_failure(tdomain *d, eddy_error *cause) { return eddy_domain_failure(d->feed, cause); }
static eddy_status b_info(tdomain *d, eddy_feed_info *out) {
    return eddy_domain_get_info(d->feed, out);
}

static void b_shape_refusals(tstore *st, const eddy_feed_config *cfg, tdomain *none) {
    (void)st;
    (void)cfg;
    (void)none;
    eddy_domain_free(NULL);
}

const domain_driver blocking_domain_driver = {
    .name = "blocking",
    .reactive = false,
    .new_feed = b_new,
    .free = b_free,
    .reg = b_reg,
    .has_projection = b_has,
    .projection_id = b_id,
    .catch_up_all = b_catch_up_all,
    .catch_up = b_catch_up,
    .go_live = b_go_live,
    .stop_catch_up = b_stop,
    .accept = b_accept,
    .accept_or_defer = b_accept_or_defer,
    .route = b_route,
    .route_from_projection = b_route_from_projection,
    .ready_for_live_delivery = b_ready,
    .refuses_permanently = b_refuses,
    .failure = b_failure,
    .get_info = b_info,
    .catch_up_all_then_route = NULL,
    .shape_refusals = b_shape_refusals,
};
