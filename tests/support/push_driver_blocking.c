/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking push sources, models and bus behind the push scenario driver: a direct mapping. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "eddy/push.h"
#include "eddy_test.h"
#include "push_driver.h"
#include "recorder.h"

struct tpush {
    eddy_bus *bus;
    eddy_push_sources *ps;
};

struct tmodel {
    eddy_push_model *m;
};

static eddy_status b_env_new(tstore *st, const eddy_settings *s, tpush **out, eddy_error *err) {
    (void)st;
    *out = NULL;
    tpush *p = calloc(1, sizeof(*p));
    cr_assert(p);
    eddy_status rc = eddy_bus_new(s, NULL, 0, &p->bus, err);
    if (rc == EDDY_OK && (rc = eddy_bus_start(p->bus, err)) != EDDY_OK)
        eddy_bus_free(p->bus);
    if (rc != EDDY_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return EDDY_OK;
}

static void b_env_free(tpush *p) {
    if (!p)
        return;
    eddy_bus_stop(p->bus);
    eddy_push_sources_free(p->ps);
    eddy_bus_free(p->bus);
    free(p);
}

static eddy_status b_sources_new(tpush *p, const eddy_push_options *o, eddy_error *err) {
    return eddy_push_sources_new(p->bus, o, &p->ps, err);
}

static void b_sources_free(tpush *p) {
    eddy_push_sources *ps = p->ps;
    p->ps = NULL;
    eddy_push_sources_free(ps);
}

static eddy_status b_add(tpush *p, const tpush_spec *t, eddy_error *err) {
    eddy_push_source_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.id = t->id;
    sp.feed = t->feed ? blocking_domain_driver.native(t->feed) : NULL;
    sp.projection = t->projection;
    sp.filter = t->filter;
    sp.subject = t->subject;
    sp.group = t->group;
    sp.go_live = t->go_live;
    return eddy_push_sources_add(p->ps, &sp, err);
}

static eddy_status b_start_all(tpush *p, char ids[][24], eddy_push_state *states, size_t *n,
                               eddy_error *err) {
    const char **got = NULL;
    size_t k = 77;
    eddy_status rc = eddy_push_sources_start_all(p->ps, &got, &k, err);
    *n = 0;
    if (rc != EDDY_OK)
        return rc;
    cr_assert_not_null(got, "start-all gave no id list");
    cr_assert_leq(k, TPUSH_IDS);
    for (size_t i = 0; i < k; i++) {
        snprintf(ids[i], 24, "%s", got[i]);
        eddy_push_progress pr;
        cr_assert_eq(eddy_push_sources_stats(p->ps, got[i], &pr), EDDY_OK);
        states[i] = pr.state;
    }
    cr_expect_null(got[k], "NULL-terminated");
    free(got);
    *n = k;
    return EDDY_OK;
}

static eddy_status b_status(tpush *p, const char *id, eddy_push_progress *out) {
    return eddy_push_sources_stats(p->ps, id, out);
}

static eddy_status b_wait(tpush *p, unsigned timeout_ms) {
    return eddy_push_sources_wait(p->ps, timeout_ms);
}

static void b_bus_stop(tpush *p) { eddy_bus_stop(p->bus); }

static eddy_status b_publish(tpush *p, const char *subject, const char *id) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_error err = {0};
    eddy_status rc = eddy_bus_publish(p->bus, subject, ev, NULL, 0, &err);
    eddy_event_free(ev);
    return rc;
}

static eddy_status count_handler(eddy_delivery *d, void *user) {
    (void)d;
    atomic_fetch_add((_Atomic int *)user, 1);
    return EDDY_OK;
}

static void b_control(tpush *p, const char *name, const char *subject, int *count) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = subject;
    sp.group = name;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = count_handler;
    sp.user = count;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_subscribe(p->bus, &sp, &err), EDDY_OK, "%s", err.detail);
}

static eddy_status b_consumer_stats(tpush *p, const char *name, eddy_consumer_stats *out) {
    return eddy_bus_consumer_stats(p->bus, name, out);
}

static eddy_status b_model_new(tpush *p, const eddy_push_observer *obs, tmodel **out,
                               eddy_error *err) {
    (void)p;
    *out = NULL;
    tmodel *m = calloc(1, sizeof(*m));
    cr_assert(m);
    eddy_status rc = eddy_push_model_new(obs, eddy_test_log, "model", &m->m, err);
    if (rc != EDDY_OK) {
        free(m);
        return rc;
    }
    *out = m;
    return EDDY_OK;
}

static void b_model_free(tmodel *m) {
    if (!m)
        return;
    eddy_push_model_free(m->m);
    free(m);
}

static eddy_status b_model_add(tmodel *m, tdomain *feed, eddy_error *err) {
    return eddy_push_model_add(m->m, blocking_domain_driver.native(feed), err);
}

static eddy_status b_model_accept(tmodel *m, const eddy_event *ev, const eddy_event_meta *meta) {
    return eddy_push_model_accept(m->m, ev, meta);
}

static eddy_status b_model_accept_or_defer(tmodel *m, const eddy_event *ev,
                                           const eddy_event_meta *meta, eddy_route *route,
                                           eddy_error *err) {
    return eddy_push_model_accept_or_defer(m->m, ev, meta, route, err);
}

static void b_model_shape_refusals(tmodel *m) {
    eddy_event *ev = make_event("x", "order.placed");
    eddy_route route;
    cr_expect_eq(eddy_push_model_accept(NULL, ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_push_model_accept_or_defer(m->m, NULL, NULL, &route, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(ev);
}

const push_driver blocking_push_driver = {
    .name = "blocking",
    .reactive = false,
    .env_new = b_env_new,
    .env_free = b_env_free,
    .sources_new = b_sources_new,
    .sources_free = b_sources_free,
    .add = b_add,
    .start_all = b_start_all,
    .status = b_status,
    .wait = b_wait,
    .bus_stop = b_bus_stop,
    .publish = b_publish,
    .control = b_control,
    .consumer_stats = b_consumer_stats,
    .model_new = b_model_new,
    .model_free = b_model_free,
    .model_add = b_model_add,
    .model_accept = b_model_accept,
    .model_accept_or_defer = b_model_accept_or_defer,
    .model_shape_refusals = b_model_shape_refusals,
};
