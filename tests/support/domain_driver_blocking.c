/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking domain feed behind the domain scenario driver: a direct mapping. */
#include <criterion/criterion.h>
#include <pthread.h>
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
struct tgate {
    eddy_checkpoints inner, self;
    pthread_mutex_t m;
    pthread_cond_t c;
    bool hold_exists, hold_save, held, open;
};

/* Waits at the gate when op is held (on the thread running the feed's step). */
static void pass(tgate *g, bool held_op) {
    pthread_mutex_lock(&g->m);
    if (held_op && !g->open) {
        g->held = true;
        pthread_cond_broadcast(&g->c);
        while (!g->open)
            pthread_cond_wait(&g->c, &g->m);
        g->held = false;
    }
    pthread_mutex_unlock(&g->m);
}

static eddy_status g_exists(void *self, const char *feed_id, bool *exists, eddy_error *err) {
    tgate *g = self;
    pthread_mutex_lock(&g->m);
    bool hold = g->hold_exists;
    pthread_mutex_unlock(&g->m);
    pass(g, hold);
    return g->inner.ops->exists(g->inner.self, feed_id, exists, err);
}
static eddy_status g_read(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                          eddy_error *err) {
    tgate *g = self;
    return g->inner.ops->read(g->inner.self, feed_id, buf, size, found, err);
}
static eddy_status g_save(void *self, const char *feed_id, const char *value, eddy_error *err) {
    tgate *g = self;
    pthread_mutex_lock(&g->m);
    bool hold = g->hold_save;
    pthread_mutex_unlock(&g->m);
    pass(g, hold);
    return g->inner.ops->save(g->inner.self, feed_id, value, err);
}
static eddy_status g_remove(void *self, const char *feed_id, eddy_error *err) {
    tgate *g = self;
    return g->inner.ops->remove(g->inner.self, feed_id, err);
}
static const eddy_checkpoint_ops gate_ops = {g_exists, g_read, g_save, g_remove};

static tgate *b_gate_new(tstore *st) {
    tgate *g = calloc(1, sizeof(*g));
    cr_assert(g);
    g->inner = eddy_store_checkpoints(blocking_store_driver.native(st));
    g->self = (eddy_checkpoints){&gate_ops, g};
    g->open = true;
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
    return g;
}
static void b_gate_free(tgate *g) {
    if (!g)
        return;
    pthread_cond_destroy(&g->c);
    pthread_mutex_destroy(&g->m);
    free(g);
}
static void b_gate_hold(tgate *g, bool exists, bool save) {
    pthread_mutex_lock(&g->m);
    g->hold_exists = exists;
    g->hold_save = save;
    g->open = false;
    pthread_mutex_unlock(&g->m);
}
static bool b_gate_held(tgate *g) {
    pthread_mutex_lock(&g->m);
    bool held = g->held;
    pthread_mutex_unlock(&g->m);
    return held;
}
static void b_gate_open(tgate *g) {
    pthread_mutex_lock(&g->m);
    g->open = true;
    g->hold_exists = g->hold_save = false;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static eddy_status b_new_gated(tstore *st, const eddy_feed_config *cfg, tgate *g, tdomain **out,
                               eddy_error *err) {
    eddy_feed_config c = *cfg;
    c.checkpoints = &g->self;
    return b_new(st, &c, out, err);
}

static const void *b_gate_checkpoints(tgate *g) { return &g->self; }

static void *b_native(tdomain *d) { return d->feed; }

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
    return eddy_domain_stats(d->feed, out);
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
    .new_gated_feed = b_new_gated,
    .gate_new = b_gate_new,
    .gate_free = b_gate_free,
    .gate_hold = b_gate_hold,
    .gate_held = b_gate_held,
    .gate_open = b_gate_open,
    .gate_checkpoints = b_gate_checkpoints,
    .native = b_native,
    .shape_refusals = b_shape_refusals,
};
