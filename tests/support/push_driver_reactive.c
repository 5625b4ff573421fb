/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive push sources, models and bus behind the push scenario driver: they live on the
 * store's loop thread (rloop.h); every call runs there, and one with a completion waits for it
 * (checked to run once, never inside the call). A refusal is the call's own status; any other
 * outcome is the completion's. */
#include <criterion/criterion.h>
#include <ev.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/reactive.h"
#include "eddy/rpush.h"
#include "eddy_test.h"
#include "push_driver.h"
#include "recorder.h"
#include "rloop.h"

struct tpush {
    rloop *l;
    eddy_rbus *bus;
    eddy_rpush_sources *ps;
};

typedef struct pop pop;

struct tmodel {
    tpush *p;
    eddy_rpush_model *m;
    eddy_push_observer user_obs;
    int told;     /* loop thread */
    pop *waiting; /* a model_accept waiting for the observer */
    int wait_for; /* ... to have been told this often */
};

struct pop {
    rloop_op op;
    tpush *p;
    tmodel *m;
    const eddy_settings *s;
    const eddy_push_options *o;
    const tpush_spec *spec;
    tdomain *feed;
    const char *subject, *name;
    const eddy_event *ev;
    const eddy_event_meta *meta;
    eddy_route *route;
    eddy_push_progress *progress;
    eddy_consumer_stats *stats;
    char (*ids)[24];
    eddy_push_state *states;
    size_t *n;
    int *count;
    eddy_error *err;
};

static void copy_err(pop *o, const eddy_error *err) {
    if (o->err && err)
        *o->err = *err;
}

static void end(pop *o, eddy_status st, const eddy_error *err, const char *what) {
    rloop_callback(&o->op, what);
    cr_assert(st == EDDY_OK || err, "%s: %s without detail", what, eddy_status_name(st));
    copy_err(o, err);
    rloop_finish(&o->op, st);
}

static eddy_status call(tpush *p, pop *o, void (*start)(rloop_op *op)) {
    o->p = p;
    return rloop_call(p->l, &o->op, start);
}

/* ---- the bus ------------------------------------------------------------------------------ */

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    end(user, st, err, "bus ready");
}

static void start_env(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_status st = eddy_rbus_new(rloop_loop(op->l), o->s, NULL, 0, &o->p->bus, o->err);
    if (st == EDDY_OK && (st = eddy_rbus_start(o->p->bus, on_ready, o, o->err)) == EDDY_OK)
        return;
    eddy_rbus_free(o->p->bus);
    o->p->bus = NULL;
    rloop_finish(op, st);
}

static eddy_status r_env_new(tstore *st, const eddy_settings *s, tpush **out, eddy_error *err) {
    *out = NULL;
    tpush *p = calloc(1, sizeof(*p));
    cr_assert(p);
    p->l = reactive_store_driver.loop(st);
    pop o = {.s = s, .err = err};
    eddy_status rc = call(p, &o, start_env);
    if (rc != EDDY_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return EDDY_OK;
}

static void start_env_free(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_rbus_stop(o->p->bus);
    eddy_rpush_sources_free(o->p->ps);
    o->p->ps = NULL;
    eddy_rbus_free(o->p->bus);
    o->p->bus = NULL;
    rloop_finish(op, EDDY_OK);
}

static void r_env_free(tpush *p) {
    if (!p)
        return;
    pop o = {0};
    call(p, &o, start_env_free);
    free(p);
}

static void start_bus_stop(rloop_op *op) {
    eddy_rbus_stop(((pop *)op)->p->bus);
    rloop_finish(op, EDDY_OK);
}
static void r_bus_stop(tpush *p) {
    pop o = {0};
    call(p, &o, start_bus_stop);
}

static void on_published(eddy_status st, const char *id, void *user) {
    pop *o = user;
    rloop_callback(&o->op, "publish");
    cr_assert(st != EDDY_OK || id, "a successful publish has an entry id");
    rloop_finish(&o->op, st);
}

static void start_publish(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_status st = eddy_rbus_publish(o->p->bus, o->subject, o->ev, on_published, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static eddy_status r_publish(tpush *p, const char *subject, const char *id) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_error err = {0};
    pop o = {.subject = subject, .ev = ev, .err = &err};
    eddy_status rc = call(p, &o, start_publish);
    eddy_event_free(ev);
    return rc;
}

static eddy_status count_handler(eddy_delivery *d, void *user) {
    (void)d;
    atomic_fetch_add((_Atomic int *)user, 1);
    return EDDY_OK;
}

static void start_control(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = o->name;
    sp.pattern = o->subject;
    sp.group = o->name;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = count_handler;
    sp.user = o->count;
    eddy_status st = eddy_rbus_subscribe_ready(o->p->bus, &sp, on_ready, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}

static void r_control(tpush *p, const char *name, const char *subject, int *count) {
    eddy_error err = {0};
    pop o = {.name = name, .subject = subject, .count = count, .err = &err};
    cr_assert_eq(call(p, &o, start_control), EDDY_OK, "%s", err.detail);
}

static void start_stats(rloop_op *op) {
    pop *o = (pop *)op;
    rloop_finish(op, eddy_rbus_consumer_stats(o->p->bus, o->name, o->stats));
}
static eddy_status r_consumer_stats(tpush *p, const char *name, eddy_consumer_stats *out) {
    pop o = {.name = name, .stats = out};
    return call(p, &o, start_stats);
}

/* ---- sources ------------------------------------------------------------------------------ */

static void start_sources_new(rloop_op *op) {
    pop *o = (pop *)op;
    rloop_finish(op, eddy_rpush_sources_new(rloop_loop(op->l), o->p->bus, o->o, &o->p->ps, o->err));
}
static eddy_status r_sources_new(tpush *p, const eddy_push_options *opts, eddy_error *err) {
    pop o = {.o = opts, .err = err};
    return call(p, &o, start_sources_new);
}

static void start_sources_free(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_rpush_sources *ps = o->p->ps;
    o->p->ps = NULL;
    eddy_rpush_sources_free(ps);
    rloop_finish(op, EDDY_OK);
}
static void r_sources_free(tpush *p) {
    pop o = {0};
    call(p, &o, start_sources_free);
}

static eddy_rpush_source_spec spec_of(const tpush_spec *t) {
    eddy_rpush_source_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.id = t->id;
    sp.feed = t->feed ? reactive_domain_driver.native(t->feed) : NULL;
    sp.projection = t->projection;
    sp.filter = t->filter;
    sp.subject = t->subject;
    sp.group = t->group;
    sp.go_live = t->go_live;
    return sp;
}

static void on_added(eddy_status st, const eddy_error *err, void *user) {
    end(user, st, err, "add");
}

static void start_add(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_rpush_source_spec sp = spec_of(o->spec);
    eddy_status st = eddy_rpush_sources_add(o->p->ps, &sp, on_added, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}
static eddy_status r_add(tpush *p, const tpush_spec *spec, eddy_error *err) {
    pop o = {.spec = spec, .err = err};
    return call(p, &o, start_add);
}

static void on_started(eddy_status st, const char *const *ids, size_t n, const eddy_error *err,
                       void *user) {
    pop *o = user;
    cr_assert_leq(n, TPUSH_IDS);
    *o->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(o->ids[i], 24, "%s", ids[i]);
        eddy_push_progress pr;
        cr_assert_eq(eddy_rpush_sources_stats(o->p->ps, ids[i], &pr), EDDY_OK);
        o->states[i] = pr.state;
    }
    cr_expect_null(ids[n], "NULL-terminated");
    end(o, st, err, "start-all");
}

static void start_start_all(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_status st = eddy_rpush_sources_start_all(o->p->ps, on_started, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}
static eddy_status r_start_all(tpush *p, char ids[][24], eddy_push_state *states, size_t *n,
                               eddy_error *err) {
    *n = 0;
    pop o = {.ids = ids, .states = states, .n = n, .err = err};
    return call(p, &o, start_start_all);
}

static void start_status(rloop_op *op) {
    pop *o = (pop *)op;
    rloop_finish(op, eddy_rpush_sources_stats(o->p->ps, o->name, o->progress));
}
static eddy_status r_status(tpush *p, const char *id, eddy_push_progress *out) {
    pop o = {.name = id, .progress = out};
    return call(p, &o, start_status);
}

/* ---- models ------------------------------------------------------------------------------- */

static eddy_status wrap_observe(const eddy_event *ev, eddy_status st, eddy_route route,
                                const eddy_error *err, void *user) {
    tmodel *m = user;
    eddy_status rc = m->user_obs.observe(ev, st, route, err, m->user_obs.user);
    m->told++;
    if (m->waiting && m->told >= m->wait_for) {
        pop *o = m->waiting;
        m->waiting = NULL;
        rloop_finish(&o->op, EDDY_OK);
    }
    return rc;
}

static void start_model_new(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_push_observer wrap = {wrap_observe, o->m};
    rloop_finish(op, eddy_rpush_model_new(rloop_loop(op->l), &wrap, eddy_test_log, "model",
                                          &o->m->m, o->err));
}
static eddy_status r_model_new(tpush *p, const eddy_push_observer *obs, tmodel **out,
                               eddy_error *err) {
    *out = NULL;
    tmodel *m = calloc(1, sizeof(*m));
    cr_assert(m);
    m->p = p;
    m->user_obs = *obs;
    pop o = {.m = m, .err = err};
    eddy_status rc = call(p, &o, start_model_new);
    if (rc != EDDY_OK) {
        free(m);
        return rc;
    }
    *out = m;
    return EDDY_OK;
}

static void start_model_free(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_rpush_model_free(o->m->m);
    o->m->m = NULL;
    rloop_finish(op, EDDY_OK);
}
static void r_model_free(tmodel *m) {
    if (!m)
        return;
    pop o = {.m = m};
    call(m->p, &o, start_model_free);
    free(m);
}

static void start_model_add(rloop_op *op) {
    pop *o = (pop *)op;
    rloop_finish(op, eddy_rpush_model_add(o->m->m, reactive_domain_driver.native(o->feed), o->err));
}
static eddy_status r_model_add(tmodel *m, tdomain *feed, eddy_error *err) {
    pop o = {.m = m, .feed = feed, .err = err};
    return call(m->p, &o, start_model_add);
}

static void start_model_accept(rloop_op *op) {
    pop *o = (pop *)op;
    tmodel *m = o->m;
    int target = m->told + 1;
    eddy_status st = eddy_rpush_model_accept(m->m, o->ev, o->meta);
    if (st != EDDY_OK || m->told >= target) {
        rloop_finish(op, st);
        return;
    }
    m->waiting = o;
    m->wait_for = target;
}
static eddy_status r_model_accept(tmodel *m, const eddy_event *ev, const eddy_event_meta *meta) {
    pop o = {.m = m, .ev = ev, .meta = meta};
    return call(m->p, &o, start_model_accept);
}

static void on_answer(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    pop *o = user;
    if (st == EDDY_OK && o->route)
        *o->route = route;
    end(o, st, err, "model answer");
}

static void start_model_aod(rloop_op *op) {
    pop *o = (pop *)op;
    eddy_status st =
        eddy_rpush_model_accept_or_defer(o->m->m, o->ev, o->meta, on_answer, o, o->err);
    if (st != EDDY_OK)
        rloop_finish(op, st);
}
static eddy_status r_model_accept_or_defer(tmodel *m, const eddy_event *ev,
                                           const eddy_event_meta *meta, eddy_route *route,
                                           eddy_error *err) {
    pop o = {.m = m, .ev = ev, .meta = meta, .route = route, .err = err};
    return call(m->p, &o, start_model_aod);
}

typedef struct answer {
    int calls;
    eddy_status st;
} answer;

static void count_answer(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    (void)route, (void)err;
    answer *a = user;
    a->calls++;
    a->st = st;
}

static void shape_on_loop(void *arg) {
    tmodel *m = arg;
    eddy_event *ev = make_event("x", "order.placed");
    answer a = {0};
    eddy_error err = {0};
    cr_expect_neq(eddy_rpush_model_accept(NULL, ev, NULL), EDDY_OK);
    cr_expect_neq(eddy_rpush_model_accept_or_defer(m->m, NULL, NULL, count_answer, &a, &err),
                  EDDY_OK);
    cr_expect_neq(eddy_rpush_model_accept_or_defer(m->m, ev, NULL, NULL, &a, &err), EDDY_OK);
    cr_expect_eq(a.calls, 0, "a refused call ran its callback");
    eddy_event_free(ev);
}
static void r_model_shape_refusals(tmodel *m) { rloop_run(m->p->l, shape_on_loop, m); }

/* ---- the reactive teardown rules ------------------------------------------------------------ */

typedef struct rule {
    tpush *p;
    tmodel *m;
    const tpush_spec *spec;
    const eddy_event *ev;
    const int *applied;
    answer a, added;
    int progress_calls;
} rule;

static void count_added(eddy_status st, const eddy_error *err, void *user) {
    (void)err;
    answer *a = user;
    a->calls++;
    a->st = st;
}

static void pending_add_on_loop(void *arg) {
    rule *r = arg;
    eddy_rpush_source_spec sp = spec_of(r->spec);
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_add(r->p->ps, &sp, count_added, &r->a, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(eddy_rpush_sources_add(r->p->ps, &sp, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT,
                 "the same id again");
    eddy_rbus_stop(r->p->bus);
    eddy_rpush_sources *ps = r->p->ps;
    r->p->ps = NULL;
    eddy_rpush_sources_free(ps);
    cr_expect_eq(r->a.calls, 1, "free completes the pending add");
    cr_expect_eq(r->a.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(r->a.st));
}

static void r_free_completes_a_pending_add(tpush *p, const tpush_spec *spec) {
    rule r = {.p = p, .spec = spec};
    rloop_run(p->l, pending_add_on_loop, &r);
}

static void pending_answer_on_loop(void *arg) {
    rule *r = arg;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_model_accept_or_defer(r->m->m, r->ev, NULL, count_answer, &r->a, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_rpush_model_free(r->m->m);
    r->m->m = NULL;
    cr_expect_eq(r->a.calls, 1);
    cr_expect_eq(r->a.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(r->a.st));
}

static void nothing(void *arg) { (void)arg; }

static void r_model_free_completes_a_pending_answer(tmodel *m, const eddy_event *ev) {
    rule r = {.m = m, .ev = ev};
    rloop_run(m->p->l, pending_answer_on_loop, &r);
    rloop_run(m->p->l, nothing, NULL); /* a turn of the loop */
    cr_expect_eq(r.a.calls, 1, "exactly once");
}

static void free_on_progress(const eddy_push_progress *pr, void *user) {
    rule *r = user;
    if (pr->state == EDDY_PUSH_CATCHING_UP && r->p->ps) {
        eddy_rpush_sources *ps = r->p->ps;
        r->p->ps = NULL;
        eddy_rpush_sources_free(ps);
    }
    r->progress_calls++;
}

static void on_started_count(eddy_status st, const char *const *ids, size_t n,
                             const eddy_error *err, void *user) {
    (void)ids, (void)n, (void)err;
    rule *r = user;
    r->a.calls++;
    r->a.st = st;
}

static void progress_frees_on_loop(void *arg) {
    rule *r = arg;
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = EDDY_PUSH_MANUAL;
    o.startup = EDDY_PUSH_BACKGROUND;
    o.progress = free_on_progress;
    o.progress_user = r;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_new(rloop_loop(r->p->l), r->p->bus, &o, &r->p->ps, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_rpush_source_spec sp = spec_of(r->spec);
    cr_assert_eq(eddy_rpush_sources_add(r->p->ps, &sp, count_added, &r->added, &err), EDDY_OK, "%s",
                 err.detail);
    /* The add completes on the loop; start-all is asked for once it did (below). */
}

typedef struct peek {
    tpush *p;
    const int *counter;
    int value;
} peek;

static void peek_on_loop(void *arg) {
    peek *k = arg;
    k->value = *k->counter;
}

static bool counted(void *arg) {
    peek *k = arg;
    rloop_run(k->p->l, peek_on_loop, k);
    return k->value > 0;
}

static void start_all_on_loop(void *arg) {
    rule *r = arg;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_start_all(r->p->ps, on_started_count, r, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_null(r->p->ps, "freed from the progress callback");
    cr_expect_eq(r->a.calls, 1, "completed by the free");
    cr_expect_eq(r->a.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(r->a.st));
    cr_expect(eddy_rdomain_has_projection(reactive_domain_driver.native(r->spec->feed)),
              "registered before it was told");
    cr_expect_eq(*r->applied, 0, "and nothing started after the free");
}

static void r_progress_callback_may_free_the_sources(tpush *p, const tpush_spec *spec,
                                                     const int *applied) {
    rule r = {.p = p, .spec = spec, .applied = applied};
    rloop_run(p->l, progress_frees_on_loop, &r);
    peek k = {.p = p, .counter = &r.added.calls};
    cr_assert(eddy_test_wait_until(counted, &k, 30000), "the add never completed");
    cr_expect_eq(r.added.st, EDDY_OK, "%s", eddy_status_name(r.added.st));
    rloop_run(p->l, start_all_on_loop, &r);
    int reports = r.progress_calls;
    for (int i = 0; i < 20; i++)
        rloop_run(p->l, nothing, NULL);
    cr_expect_eq(r.progress_calls, reports, "no callback after the free");
    cr_expect_eq(r.a.calls, 1);
}

const push_driver reactive_push_driver = {
    .name = "reactive",
    .reactive = true,
    .env_new = r_env_new,
    .env_free = r_env_free,
    .sources_new = r_sources_new,
    .sources_free = r_sources_free,
    .add = r_add,
    .start_all = r_start_all,
    .status = r_status,
    .wait = NULL,
    .bus_stop = r_bus_stop,
    .publish = r_publish,
    .control = r_control,
    .consumer_stats = r_consumer_stats,
    .model_new = r_model_new,
    .model_free = r_model_free,
    .model_add = r_model_add,
    .model_accept = r_model_accept,
    .model_accept_or_defer = r_model_accept_or_defer,
    .model_shape_refusals = r_model_shape_refusals,
    .free_completes_a_pending_add = r_free_completes_a_pending_add,
    .model_free_completes_a_pending_answer = r_model_free_completes_a_pending_answer,
    .progress_callback_may_free_the_sources = r_progress_callback_may_free_the_sources,
};
