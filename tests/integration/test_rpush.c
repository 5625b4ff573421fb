/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources through the reactive (libev) front end, on memory://
 * and on the fixture's redis-server: the scenarios of test_push.c on the loop. A source's handler
 * returns EDDY_PENDING and settles the delivery from the route's completion (DEFERRED handed back
 * and not dead-lettered, DELIVERED acknowledged, nothing lost or applied twice while a catch-up
 * runs under arriving messages); manual mode withholds the registration and start-all completes
 * through its callback with the ids in order; background start reports its progress from the
 * loop's timer and failures with their reason; the model's accept / accept-or-defer complete on
 * the loop with the observer told; an unreadable filter fails the source, which stops consuming
 * (as does a failed catch-up, and as sources do before start-all: the broker keeps the
 * messages). The catch-ups are held at their first or last step by a checkpoint storage whose
 * answer the test releases, so "while the catch-up runs" needs no timing. Events are appended
 * (and published in the same step) through the blocking store, which shares the backend. Each
 * test runs its own loop. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/rdomain.h"
#include "eddy/reactive.h"
#include "eddy/rpush.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "test_codec.h"

typedef struct backend {
    int redis;
} backend;

static backend backends[] = {{0}, {1}};

/* ---- an idempotent view keyed by event id, counting applies per id ---------------------- */

#define VIEW_MAX 1024

typedef struct view {
    char ids[VIEW_MAX][64];
    int applies[VIEW_MAX];
    int n;
    char fail_id[48];
} view;

static eddy_status v_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta;
    view *v = user;
    uev *e = event;
    if (v->fail_id[0] && strcmp(e->id, v->fail_id) == 0) {
        snprintf(err->detail, sizeof(err->detail), "the view rejects %s", e->id);
        return EDDY_ERR_HANDLER_FAILED;
    }
    int i = 0;
    while (i < v->n && strcmp(v->ids[i], e->id) != 0)
        i++;
    if (i == v->n) {
        cr_assert(v->n < VIEW_MAX);
        snprintf(v->ids[v->n++], sizeof(v->ids[0]), "%s", e->id);
    }
    v->applies[i]++;
    return EDDY_OK;
}

static int applies_of(view *v, const char *id) {
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->ids[i], id) == 0)
            return v->applies[i];
    return 0;
}

static eddy_projection projection_of(view *v) {
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = v_apply;
    p.user = v;
    return p;
}

/* ---- a checkpoint storage that can hold its answers -------------------------------------- */

typedef struct gate {
    eddy_rstore *store;
    bool hold_exists, hold_save;
    /* A held operation: its completion, released by gate_open. */
    eddy_rstore_exists_fn exists_done;
    eddy_rstore_done_fn save_done;
    void *user;
    bool held;
} gate;

static eddy_status g_exists(void *self, const char *feed_id, eddy_rstore_exists_fn done, void *user,
                            eddy_error *err) {
    gate *g = self;
    if (!g->hold_exists)
        return eddy_rstore_checkpoint_exists(g->store, feed_id, done, user, err);
    g->exists_done = done;
    g->user = user;
    g->held = true;
    return EDDY_OK;
}

static eddy_status g_save(void *self, const char *feed_id, const char *value,
                          eddy_rstore_done_fn done, void *user, eddy_error *err) {
    gate *g = self;
    if (!g->hold_save)
        return eddy_rstore_checkpoint_save(g->store, feed_id, value, done, user, err);
    g->save_done = done;
    g->user = user;
    g->held = true;
    return EDDY_OK;
}

static eddy_status g_remove(void *self, const char *feed_id, eddy_rstore_done_fn done, void *user,
                            eddy_error *err) {
    gate *g = self;
    return eddy_rstore_checkpoint_remove(g->store, feed_id, done, user, err);
}

static const eddy_rcheckpoint_ops gate_ops = {g_exists, g_save, g_remove};

/* Answers the held operation (from the loop's thread, outside any call of the feed). */
static void gate_open(gate *g) {
    cr_assert(g->held);
    g->held = false;
    g->hold_exists = g->hold_save = false;
    if (g->exists_done)
        g->exists_done(EDDY_OK, false, NULL, g->user);
    else if (g->save_done)
        g->save_done(EDDY_OK, NULL, g->user);
}

/* ---- observer and progress ------------------------------------------------------------- */

typedef struct seen {
    int n, ok, unavailable, errors;
    int routes[3];
    eddy_status returns;
} seen;

static eddy_status observe(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user) {
    (void)ev, (void)err;
    seen *s = user;
    s->n++;
    if (st == EDDY_OK) {
        s->ok++;
        s->routes[route]++;
    } else if (st == EDDY_ERR_UNAVAILABLE) {
        s->unavailable++;
    } else {
        s->errors++;
    }
    return s->returns;
}

#define PROG_MAX 100000

typedef struct prog {
    int n;
    char (*id)[24];
    eddy_push_state *state;
    long long *head;
} prog;

static void on_progress(const eddy_push_progress *p, void *user) {
    prog *g = user;
    if (g->n < PROG_MAX) {
        snprintf(g->id[g->n], sizeof(g->id[0]), "%s", p->id);
        g->state[g->n] = p->state;
        g->head[g->n] = p->head;
        g->n++;
    }
}

static int prog_count(prog *g, const char *id, eddy_push_state st, long long min_head) {
    int k = 0;
    for (int i = 0; i < g->n; i++)
        k += strcmp(g->id[i], id) == 0 && g->state[i] == st && g->head[i] >= min_head;
    return k;
}

static int prog_index(prog *g, const char *id, bool last) {
    int at = -1;
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->id[i], id) == 0 && (last || at < 0))
            at = i;
    return at;
}

/* ---- context ---------------------------------------------------------------------------- */

typedef struct ctx {
    struct ev_loop *loop;
    char url[128];
    char ns[96];
    eddy_settings s;
    eddy_store *bstore; /* appends and publishes in one step */
    eddy_rstore *store;
    eddy_rbus *bus;
    eddy_rpush_sources *ps;
    eddy_rdomain_feed *feeds[4];
    int nfeeds;
    gate gates[4];
    view v[2];
    seen obs;
    prog pg;
} ctx;

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)w, (void)revents;
}

/* Runs the loop until cond(c, arg) holds or timeout_ms passed. */
static bool run_until(ctx *c, bool (*cond)(ctx *c, void *arg), void *arg, long long timeout_ms) {
    ev_timer tk;
    ev_timer_init(&tk, tick, 0.005, 0.005);
    ev_timer_start(c->loop, &tk);
    long long end = eddy_test_now_ms() + timeout_ms;
    bool ok;
    while (!(ok = cond(c, arg)) && eddy_test_now_ms() < end)
        ev_run(c->loop, EVRUN_ONCE);
    ev_timer_stop(c->loop, &tk);
    return ok;
}

static bool flag_set(ctx *c, void *arg) {
    (void)c;
    return *(int *)arg != 0;
}

static void on_bus_ready(eddy_status st, const eddy_error *err, void *user) {
    cr_expect_eq(st, EDDY_OK, "bus start: %s", err ? err->detail : "");
    *(int *)user = 1;
}

static void setup(ctx *c, const backend *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    c->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(c->loop);
    eddy_test_namespace(c->ns, sizeof(c->ns), prefix);
    if (p->redis)
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    else
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests";
    c->s.block_ms = 100;
    c->s.redelivery_idle_ms = 100;
    c->s.max_deliveries = 2;
    c->s.log = eddy_test_log;
    c->s.log_user = p->redis ? "redis" : "memory";
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&c->s, &c->bstore, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_rstore_open(c->loop, &c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    c->pg.id = calloc(PROG_MAX, sizeof(*c->pg.id));
    c->pg.state = calloc(PROG_MAX, sizeof(*c->pg.state));
    c->pg.head = calloc(PROG_MAX, sizeof(*c->pg.head));
    cr_assert(c->pg.id && c->pg.state && c->pg.head);
}

static void start_bus(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_new(c->loop, &c->s, NULL, 0, &c->bus, &err), EDDY_OK, "%s", err.detail);
    int ready = 0;
    cr_assert_eq(eddy_rbus_start(c->bus, on_bus_ready, &ready, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until(c, flag_set, &ready, 30000));
}

/* A feed whose marker goes through gates[i]. */
static eddy_rdomain_feed *new_feed(ctx *c, const eddy_data_reader *reader) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = uev_decode;
    cfg.free_event = uev_free;
    cfg.event_id = uev_id;
    cfg.page_size = 8;
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    cfg.reader = reader;
    gate *g = &c->gates[c->nfeeds];
    g->store = c->store;
    eddy_rcheckpoints ck = {&gate_ops, g};
    eddy_rdomain_feed *f = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_new(c->loop, c->store, &cfg, &ck, &f, &err), EDDY_OK, "%s",
                 err.detail);
    c->feeds[c->nfeeds++] = f;
    return f;
}

static void new_sources(ctx *c, eddy_push_mode mode, eddy_push_startup startup) {
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = mode;
    o.startup = startup;
    o.progress = on_progress;
    o.progress_user = &c->pg;
    o.progress_ms = 2;
    o.observer.observe = observe;
    o.observer.user = &c->obs;
    o.log = eddy_test_log;
    o.log_user = "rpush";
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_new(c->loop, c->bus, &o, &c->ps, &err), EDDY_OK, "%s",
                 err.detail);
}

static eddy_rpush_source_spec spec_of(const char *id, eddy_rdomain_feed *f, view *v,
                                      const char *subject, const char *group) {
    eddy_rpush_source_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.id = id;
    sp.feed = f;
    sp.projection = projection_of(v);
    sp.subject = subject;
    sp.group = group;
    return sp;
}

static void teardown(ctx *c) {
    if (c->bus)
        eddy_rbus_stop(c->bus);
    eddy_rpush_sources_free(c->ps);
    eddy_rbus_free(c->bus);
    for (int i = 0; i < c->nfeeds; i++)
        eddy_rdomain_free(c->feeds[i]);
    eddy_rstore_close(c->store);
    eddy_store_close(c->bstore);
    ev_loop_destroy(c->loop);
    free(c->pg.id);
    free(c->pg.state);
    free(c->pg.head);
}

static void append(ctx *c, const char *id, const char *subject) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_append(c->bstore, "order-1", evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

static void on_published(eddy_status st, const char *entry_id, void *user) {
    (void)entry_id;
    cr_expect_eq(st, EDDY_OK);
    (*(int *)user)++;
}

/* Publishes without storing: only the broker has it. */
static void publish(ctx *c, const char *subject, const char *id) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_error err = {0};
    int done = 0;
    cr_assert_eq(eddy_rbus_publish(c->bus, subject, ev, on_published, &done, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
    cr_assert(run_until(c, flag_set, &done, 30000));
}

static long long pending(ctx *c, const char *subject, const char *group) {
    redisReply *r = raw_cmdf(c->url, "XPENDING {%s}:s:%s %s", c->ns, subject, group);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

static long long dlq_len(ctx *c, const char *group) {
    return raw_int(c->url, "XLEN {%s}:dlq:%s", c->ns, group);
}

static eddy_consumer_stats stats(ctx *c, const char *id) {
    char name[64];
    snprintf(name, sizeof(name), "push.%s", id);
    eddy_consumer_stats cs;
    cr_assert_eq(eddy_rbus_consumer_stats(c->bus, name, &cs), EDDY_OK, "%s", name);
    return cs;
}

static long long stream_len(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

/* A positive control: a plain subscription of its own group on the subject, counting what it
 * receives (on the loop), which the source's paused subscription does not read. */
static eddy_status count_handler(eddy_delivery *d, void *user) {
    (void)d;
    (*(int *)user)++;
    return EDDY_OK;
}

static void control(ctx *c, const char *name, const char *subject, int *count) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = subject;
    sp.group = name;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = count_handler;
    sp.user = count;
    int ready = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_rbus_subscribe_ready(c->bus, &sp, on_bus_ready, &ready, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert(run_until(c, flag_set, &ready, 30000));
}

static bool at_least(ctx *c, void *arg) {
    (void)c;
    return ((int *)arg)[0] >= ((int *)arg)[1];
}

static bool never(ctx *c, void *arg) {
    (void)c, (void)arg;
    return false;
}

/* Runs the loop long enough for a paused subscription to show whether it still reads: several
 * blocking reads and redelivery rounds. Only used after a positive control got the messages. */
static void settle_a_while(ctx *c) {
    run_until(c, never, NULL, 3 * (long long)(c->s.block_ms + c->s.redelivery_idle_ms));
}

static eddy_push_progress status_of(ctx *c, const char *id) {
    eddy_push_progress p;
    cr_assert_eq(eddy_rpush_sources_stats(c->ps, id, &p), EDDY_OK, "%s", id);
    return p;
}

/* Conditions. */
typedef struct held_arg {
    const char *id;
    uint64_t n;
} held_arg;

static bool held_at_least(ctx *c, void *arg) {
    held_arg *h = arg;
    return stats(c, h->id).held >= h->n;
}

typedef struct view_arg {
    view *v;
    int n;
} view_arg;

static bool view_has(ctx *c, void *arg) {
    (void)c;
    view_arg *w = arg;
    return w->v->n >= w->n;
}

typedef struct pending_arg {
    const char *subject, *group;
} pending_arg;

static bool nothing_pending(ctx *c, void *arg) {
    pending_arg *p = arg;
    return pending(c, p->subject, p->group) == 0;
}

typedef struct state_arg {
    const char *id;
    eddy_push_state st;
} state_arg;

static bool in_state(ctx *c, void *arg) {
    state_arg *s = arg;
    return status_of(c, s->id).state == s->st;
}

typedef struct prog_arg {
    const char *id;
    eddy_push_state st;
    long long head;
} prog_arg;

static bool reported(ctx *c, void *arg) {
    prog_arg *p = arg;
    return prog_count(&c->pg, p->id, p->st, p->head) > 0;
}

static bool gate_held(ctx *c, void *arg) {
    (void)c;
    return ((gate *)arg)->held;
}

/* Completions of add and start-all. */
typedef struct done_rec {
    int calls;
    eddy_status st;
    eddy_error err;
    size_t n;
    char ids[4][24];
    eddy_push_state states[4]; /* of the started sources, when the completion ran */
    ctx *c;
} done_rec;

static void on_added(eddy_status st, const eddy_error *err, void *user) {
    done_rec *d = user;
    d->calls++;
    d->st = st;
    if (err)
        d->err = *err;
}

static void on_started(eddy_status st, const char *const *ids, size_t n, const eddy_error *err,
                       void *user) {
    done_rec *d = user;
    d->calls++;
    d->st = st;
    d->n = n;
    if (err)
        d->err = *err;
    for (size_t i = 0; i < n && i < 4; i++) {
        snprintf(d->ids[i], sizeof(d->ids[0]), "%s", ids[i]);
        if (d->c->ps)
            d->states[i] = status_of(d->c, ids[i]).state;
    }
    cr_expect_null(ids[n], "NULL-terminated");
}

static bool called(ctx *c, void *arg) {
    (void)c;
    return ((done_rec *)arg)->calls > 0;
}

static void add(ctx *c, const eddy_rpush_source_spec *sp) {
    done_rec d = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_add(c->ps, sp, on_added, &d, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(d.calls, 0, "never inside the call");
    cr_assert(run_until(c, called, &d, 30000));
    cr_expect_eq(d.st, EDDY_OK, "%s", d.err.detail);
}

/* ---- (a) DEFERRED is handed back, DELIVERED acknowledged, nothing lost ------------------ */

ParameterizedTestParameters(rpush, deferred_is_handed_back_then_delivered_without_loss) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, deferred_is_handed_back_then_delivered_without_loss,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "rpush-defer");
    for (int i = 0; i < 30; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        append(&c, id, "orders.events");
    }
    start_bus(&c);
    eddy_rdomain_feed *f = new_feed(&c, NULL);
    c.gates[0].hold_exists = true; /* the catch-up waits at its first step */
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_BACKGROUND);
    eddy_rpush_source_spec sp = spec_of("orders", f, &c.v[0], "orders.events", "orders-view");
    add(&c, &sp);
    cr_assert(run_until(&c, gate_held, &c.gates[0], 30000));
    cr_expect_eq(status_of(&c, "orders").state, EDDY_PUSH_CATCHING_UP);
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "orders.events");
    }
    held_arg h = {"orders", 60};
    cr_assert(run_until(&c, held_at_least, &h, 60000));
    cr_expect_gt(c.obs.routes[EDDY_ROUTE_DEFERRED], 0);
    cr_expect_eq(c.v[0].n, 0, "nothing applied while the catch-up runs");
    cr_expect_eq(pending(&c, "orders.events", "orders-view"), 20);
    cr_expect_eq(dlq_len(&c, "orders-view"), 0);
    gate_open(&c.gates[0]);
    for (int i = 20; i < 40; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "orders.events");
    }
    state_arg live = {"orders", EDDY_PUSH_LIVE};
    cr_expect(run_until(&c, in_state, &live, 60000));
    view_arg va = {&c.v[0], 70};
    cr_expect(run_until(&c, view_has, &va, 60000), "applied %d of 70", c.v[0].n);
    pending_arg pa = {"orders.events", "orders-view"};
    cr_expect(run_until(&c, nothing_pending, &pa, 60000), "acknowledged once DELIVERED");
    eddy_rbus_stop(c.bus);
    cr_expect_eq(c.v[0].n, 70);
    for (int i = 0; i < 30; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        cr_expect_eq(applies_of(&c.v[0], id), 1, "%s applied once", id);
    }
    for (int i = 0; i < 40; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        cr_expect_eq(applies_of(&c.v[0], id), 1, "%s applied once", id);
    }
    eddy_consumer_stats cs = stats(&c, "orders");
    cr_expect_eq(cs.failed, 0);
    cr_expect_eq(cs.dead_lettered, 0);
    cr_expect_gt(cs.held, 0);
    cr_expect_eq(dlq_len(&c, "orders-view"), 0);
    cr_expect_gt(c.obs.routes[EDDY_ROUTE_DELIVERED], 0);
    teardown(&c);
}

/* ---- (b) manual mode ---------------------------------------------------------------------- */

ParameterizedTestParameters(rpush, manual_mode_withholds_until_start_all) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, manual_mode_withholds_until_start_all, .timeout = 120) {
    ctx c;
    setup(&c, p, "rpush-manual");
    start_bus(&c);
    eddy_rdomain_feed *fz = new_feed(&c, NULL);
    eddy_rdomain_feed *fa = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    eddy_rpush_source_spec z = spec_of("zeta", fz, &c.v[0], "zeta.events", "zeta-view");
    z.go_live = true;
    eddy_rpush_source_spec a = spec_of("alpha", fa, &c.v[1], "alpha.events", "alpha-view");
    a.go_live = true;
    add(&c, &z);
    add(&c, &a);
    cr_expect_not(eddy_rdomain_has_projection(fz), "the registration is withheld");
    int cz[2] = {0, 5}, ca[2] = {0, 5}; /* received, expected */
    control(&c, "zeta-control", "zeta.events", &cz[0]);
    control(&c, "alpha-control", "alpha.events", &ca[0]);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        publish(&c, "zeta.events", id);
        snprintf(id, sizeof(id), "a%d", i);
        publish(&c, "alpha.events", id);
    }
    /* Nothing is read before start-all: the sources' subscriptions are paused, and the broker
     * keeps the messages (the control groups received them). */
    cr_assert(run_until(&c, at_least, cz, 60000));
    cr_assert(run_until(&c, at_least, ca, 60000));
    settle_a_while(&c);
    cr_expect_eq(stats(&c, "zeta").delivered, 0, "nothing read before start-all");
    cr_expect_eq(stats(&c, "alpha").delivered, 0);
    cr_expect_eq(stats(&c, "zeta").held, 0, "so nothing handed back either");
    cr_expect_eq(c.v[0].n + c.v[1].n, 0);
    cr_expect_eq(pending(&c, "zeta.events", "zeta-view"), 0, "not read, so not pending");
    cr_expect_eq(pending(&c, "alpha.events", "alpha-view"), 0);
    cr_expect_eq(stream_len(&c, "zeta.events"), 5, "kept by the broker");
    cr_expect_eq(stream_len(&c, "alpha.events"), 5);
    cr_expect_eq(dlq_len(&c, "zeta-view"), 0, "not dead-lettered");
    cr_expect_eq(dlq_len(&c, "alpha-view"), 0);
    cr_expect_eq(status_of(&c, "zeta").state, EDDY_PUSH_NOT_STARTED);
    cr_expect_eq(stats(&c, "zeta").failed, 0);

    done_rec d = {0};
    d.c = &c;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_start_all(c.ps, on_started, &d, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(d.calls, 0, "never inside the call");
    cr_assert(run_until(&c, called, &d, 30000));
    cr_expect_eq(d.st, EDDY_OK, "%s", d.err.detail);
    cr_assert_eq(d.n, 2);
    cr_expect_str_eq(d.ids[0], "zeta", "registration order");
    cr_expect_str_eq(d.ids[1], "alpha");
    cr_expect_eq(d.states[0], EDDY_PUSH_LIVE, "foreground: completes once they went live");
    cr_expect_eq(d.states[1], EDDY_PUSH_LIVE);
    view_arg vz = {&c.v[0], 5}, va = {&c.v[1], 5};
    cr_expect(run_until(&c, view_has, &vz, 60000), "nothing lost");
    cr_expect(run_until(&c, view_has, &va, 60000), "nothing lost");
    pending_arg pz = {"zeta.events", "zeta-view"}, pa = {"alpha.events", "alpha-view"};
    cr_expect(run_until(&c, nothing_pending, &pz, 60000));
    cr_expect(run_until(&c, nothing_pending, &pa, 60000));
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        cr_expect_eq(applies_of(&c.v[0], id), 1, "%s", id);
        snprintf(id, sizeof(id), "a%d", i);
        cr_expect_eq(applies_of(&c.v[1], id), 1, "%s", id);
    }
    done_rec d2 = {0};
    d2.c = &c;
    d2.n = 7;
    cr_assert_eq(eddy_rpush_sources_start_all(c.ps, on_started, &d2, &err), EDDY_OK);
    cr_assert(run_until(&c, called, &d2, 30000));
    cr_expect_eq(d2.st, EDDY_OK);
    cr_expect_eq(d2.n, 0, "a second start-all starts none");
    eddy_rbus_stop(c.bus);
    cr_expect_eq(dlq_len(&c, "zeta-view"), 0);
    cr_expect_eq(dlq_len(&c, "alpha-view"), 0);
    /* Read after start-all only (a message that arrived while the feed went live was deferred:
     * handed back and read again). */
    cr_expect_geq(stats(&c, "zeta").delivered, 5);
    teardown(&c);
}

/* ---- (c) background start: progress, then live; a failure with its reason ---------------- */

ParameterizedTestParameters(rpush, background_start_reports_progress_and_failure) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, background_start_reports_progress_and_failure,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "rpush-bg");
    for (int i = 0; i < 50; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, NULL);
    }
    start_bus(&c);
    eddy_rdomain_feed *fg = new_feed(&c, NULL);
    eddy_rdomain_feed *fb = new_feed(&c, NULL);
    c.gates[0].hold_save = true; /* the good catch-up waits after its replay */
    strcpy(c.v[1].fail_id, "e5");
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_BACKGROUND);
    eddy_rpush_source_spec good = spec_of("good", fg, &c.v[0], "good.events", "good-view");
    eddy_rpush_source_spec bad = spec_of("bad", fb, &c.v[1], "bad.events", "bad-view");
    add(&c, &good);
    add(&c, &bad);
    cr_expect_eq(status_of(&c, "good").state, EDDY_PUSH_NOT_STARTED);

    done_rec d = {0};
    d.c = &c;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_start_all(c.ps, on_started, &d, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert(run_until(&c, called, &d, 30000));
    cr_expect_eq(d.st, EDDY_OK, "background: the registrations succeeded");
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.states[0], EDDY_PUSH_CATCHING_UP, "completes before the catch-up ends");

    cr_assert(run_until(&c, gate_held, &c.gates[0], 60000));
    eddy_push_progress st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(st.replayed, 50);
    cr_expect_eq(st.head, 50);
    cr_expect_eq(st.position, 50);
    prog_arg pc = {"good", EDDY_PUSH_CATCHING_UP, 50};
    cr_expect(run_until(&c, reported, &pc, 60000), "the progress timer reports the catch-up");
    state_arg sb = {"bad", EDDY_PUSH_FAILED};
    cr_assert(run_until(&c, in_state, &sb, 60000));
    st = status_of(&c, "bad");
    cr_expect_eq(st.failure.status, EDDY_ERR_HANDLER_FAILED, "%s",
                 eddy_status_name(st.failure.status));
    cr_expect(strstr(st.failure.detail, "the view rejects e5") != NULL, "%s", st.failure.detail);
    cr_expect_gt(prog_count(&c.pg, "bad", EDDY_PUSH_FAILED, 0), 0);

    gate_open(&c.gates[0]);
    state_arg sg = {"good", EDDY_PUSH_LIVE};
    cr_assert(run_until(&c, in_state, &sg, 60000));
    st = status_of(&c, "good");
    cr_expect_eq(st.replayed, 50);
    cr_expect_eq(st.eta_seconds, 0);
    cr_expect_eq(c.v[0].n, 50);
    int first = prog_index(&c.pg, "good", false), last = prog_index(&c.pg, "good", true);
    cr_assert_geq(first, 0);
    cr_expect_eq(c.pg.state[first], EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(c.pg.state[last], EDDY_PUSH_LIVE);
    /* A failed source stops consuming: the broker keeps its messages (not read, not
     * dead-lettered) for the feed that replaces it; a control group receives them. */
    int cb[2] = {0, 1};
    control(&c, "bad-control", "bad.events", &cb[0]);
    uint64_t before = stats(&c, "bad").delivered;
    publish(&c, "bad.events", "late-1");
    cr_assert(run_until(&c, at_least, cb, 60000));
    settle_a_while(&c);
    cr_expect_eq(stats(&c, "bad").delivered, before, "the failed source reads nothing");
    cr_expect_eq(pending(&c, "bad.events", "bad-view"), 0);
    cr_expect_eq(stream_len(&c, "bad.events"), 1);
    cr_expect_eq(dlq_len(&c, "bad-view"), 0);
    teardown(&c);
}

/* ---- (d) the model --------------------------------------------------------------------- */

typedef struct answer {
    int calls;
    eddy_status st;
    eddy_route route;
    char detail[EDDY_ERROR_DETAIL_MAX];
} answer;

static void on_answer(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    answer *a = user;
    a->calls++;
    a->st = st;
    a->route = route;
    snprintf(a->detail, sizeof(a->detail), "%s", err ? err->detail : "");
}

static bool answered(ctx *c, void *arg) {
    (void)c;
    return ((answer *)arg)->calls > 0;
}

static answer ask(ctx *c, eddy_rpush_model *m, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    answer a = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_model_accept_or_defer(m, ev, NULL, on_answer, &a, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
    cr_expect_eq(a.calls, 0, "never inside the call");
    cr_assert(run_until(c, answered, &a, 30000));
    cr_expect_eq(a.calls, 1);
    return a;
}

typedef struct seen_arg {
    int n;
} seen_arg;

static bool observed(ctx *c, void *arg) { return c->obs.n >= ((seen_arg *)arg)->n; }

static void tell_model(ctx *c, eddy_rpush_model *m, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    seen_arg s = {c->obs.n + 1};
    cr_expect_eq(eddy_rpush_model_accept(m, ev, NULL), EDDY_OK);
    eddy_event_free(ev);
    cr_assert(run_until(c, observed, &s, 30000));
}

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    cr_expect_eq(st, EDDY_OK, "%s", err ? err->detail : "");
    (*(int *)user)++;
}

static void go_live(ctx *c, eddy_rdomain_feed *f, const char *id) {
    int done = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_rdomain_go_live(f, id, on_done, &done, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until(c, flag_set, &done, 30000));
}

ParameterizedTestParameters(rpush, model_accept_accept_or_defer_observer_aggregation) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, model_accept_accept_or_defer_observer_aggregation,
                  .timeout = 60) {
    ctx c;
    setup(&c, p, "rpush-model");
    eddy_rdomain_feed *fa = new_feed(&c, NULL);
    eddy_rdomain_feed *fb = new_feed(&c, NULL);
    eddy_push_observer obs = {observe, &c.obs};
    eddy_rpush_model *m = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_model_new(c.loop, &obs, eddy_test_log, "model", &m, &err), EDDY_OK);
    cr_assert_eq(eddy_rpush_model_add(m, fa, &err), EDDY_OK);
    cr_assert_eq(eddy_rpush_model_add(m, fb, &err), EDDY_OK);
    cr_expect_eq(eddy_rpush_model_add(m, fa, &err), EDDY_ERR_INVALID_ARGUMENT, "added twice");

    tell_model(&c, m, "p1", "order.placed");
    cr_expect_eq(c.obs.unavailable, 1, "nothing registered: dropped, the observer is told");
    answer a = ask(&c, m, "p1", "order.placed");
    cr_expect_eq(a.st, EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(c.obs.unavailable, 2);

    eddy_filter *fplaced = eddy_filter_type("order.placed");
    eddy_filter *fshipped = eddy_filter_type("order.shipped");
    eddy_projection pa = projection_of(&c.v[0]), pb = projection_of(&c.v[1]);
    cr_assert_eq(eddy_rdomain_register(fa, "placed-view", &pa, fplaced, &err), EDDY_OK, "%s",
                 err.detail);
    a = ask(&c, m, "p1", "order.placed");
    cr_expect_eq(a.st, EDDY_OK, "%s", a.detail);
    cr_expect_eq(a.route, EDDY_ROUTE_DEFERRED);
    go_live(&c, fa, "placed-view");
    a = ask(&c, m, "p1", "order.placed");
    cr_expect_eq(a.route, EDDY_ROUTE_DELIVERED);
    a = ask(&c, m, "s1", "order.shipped");
    cr_expect_eq(a.route, EDDY_ROUTE_FILTERED, "A filters it, B has no projection");

    cr_assert_eq(eddy_rdomain_register(fb, "shipped-view", &pb, fshipped, &err), EDDY_OK);
    a = ask(&c, m, "s1", "order.shipped");
    cr_expect_eq(a.route, EDDY_ROUTE_DEFERRED, "A filtered, B deferred");
    a = ask(&c, m, "p2", "order.placed");
    cr_expect_eq(a.route, EDDY_ROUTE_DELIVERED, "A delivered, B filtered");
    go_live(&c, fb, "shipped-view");
    a = ask(&c, m, "s1", "order.shipped");
    cr_expect_eq(a.route, EDDY_ROUTE_DELIVERED, "A filtered, B delivered");
    cr_expect_eq(applies_of(&c.v[0], "p1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p2"), 1);
    cr_expect_eq(applies_of(&c.v[1], "s1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "s1"), 0);

    strcpy(c.v[0].fail_id, "p3");
    a = ask(&c, m, "p3", "order.placed");
    cr_expect_eq(a.st, EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(a.detail, "rejects p3") != NULL, "%s", a.detail);
    tell_model(&c, m, "p3", "order.placed");
    cr_expect_eq(c.obs.errors, 2);

    int before = c.obs.n;
    c.obs.returns = EDDY_ERR_HANDLER_FAILED;
    a = ask(&c, m, "p4", "order.placed");
    cr_expect_eq(a.st, EDDY_OK);
    cr_expect_eq(a.route, EDDY_ROUTE_DELIVERED, "an observer's failure changes nothing");
    tell_model(&c, m, "p5", "order.placed");
    cr_expect_eq(applies_of(&c.v[0], "p4"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p5"), 1);
    cr_expect_eq(c.obs.n, before + 2, "told each outcome");

    /* Freeing the model completes what is still routing with EDDY_ERR_CLOSED. */
    eddy_event *ev = make_event("p6", "order.placed");
    answer late = {0};
    cr_assert_eq(eddy_rpush_model_accept_or_defer(m, ev, NULL, on_answer, &late, &err), EDDY_OK);
    eddy_event_free(ev);
    eddy_rpush_model_free(m);
    cr_expect_eq(late.calls, 1);
    cr_expect_eq(late.st, EDDY_ERR_CLOSED);
    ev_run(c.loop, EVRUN_NOWAIT);
    cr_expect_eq(late.calls, 1, "exactly once");
    eddy_filter_free(fplaced);
    eddy_filter_free(fshipped);
    teardown(&c);
}

/* ---- (e) an unreadable filter fails the source; it stops consuming ---------------------- */

ParameterizedTestParameters(rpush, unreadable_filter_fails_the_source_and_hands_back) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, unreadable_filter_fails_the_source_and_hands_back,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "rpush-unreadable");
    start_bus(&c);
    eddy_rdomain_feed *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_FOREGROUND);
    eddy_field gold = eddy_field_string("gold");
    eddy_filter *filter = eddy_filter_data("tier", EDDY_DATA_EQ, &gold);
    eddy_rpush_source_spec sp = spec_of("tiers", f, &c.v[0], "tier.events", "tier-view");
    sp.filter = filter;
    sp.go_live = true;
    add(&c, &sp);
    eddy_filter_free(filter);
    cr_expect_eq(status_of(&c, "tiers").state, EDDY_PUSH_LIVE);
    int ct[2] = {0, 3};
    control(&c, "tier-control", "tier.events", &ct[0]);
    publish(&c, "tier.events", "t1");
    publish(&c, "tier.events", "t2");
    state_arg sa = {"tiers", EDDY_PUSH_FAILED};
    cr_assert(run_until(&c, in_state, &sa, 60000));
    cr_expect_eq(status_of(&c, "tiers").failure.status, EDDY_ERR_UNREADABLE_FILTER);
    cr_expect_gt(prog_count(&c.pg, "tiers", EDDY_PUSH_FAILED, 0), 0, "reported");
    /* The message in hand was handed back and the source stopped consuming: t2 was handed
     * back too if it came in the same batch, else it was never read. */
    held_arg h = {"tiers", 1};
    cr_expect(run_until(&c, held_at_least, &h, 60000), "handed back");
    publish(&c, "tier.events", "t3");
    cr_assert(run_until(&c, at_least, ct, 60000), "the control group got them");
    settle_a_while(&c);
    eddy_consumer_stats cs = stats(&c, "tiers");
    settle_a_while(&c); /* several redelivery rounds: nothing comes back */
    cr_expect_eq(stats(&c, "tiers").delivered, cs.delivered, "stopped consuming");
    cr_expect_leq(cs.delivered, 2, "t3 was never read: %llu", (unsigned long long)cs.delivered);
    cr_expect_eq(cs.held, cs.delivered, "every message in hand was handed back");
    long long held_back = pending(&c, "tier.events", "tier-view");
    cr_expect(held_back >= 1 && held_back <= 2, "never acknowledged: %lld pending", held_back);
    cr_expect_eq(stream_len(&c, "tier.events"), 3, "the broker keeps them");
    cr_expect_eq(dlq_len(&c, "tier-view"), 0, "never dead-lettered");
    cr_expect_eq(stats(&c, "tiers").failed, 0);
    cr_expect_eq(c.v[0].n, 0);
    teardown(&c);
}

/* ---- refusals and teardown ---------------------------------------------------------------- */

Test(rpush, bad_specs_are_refused_and_free_completes_pending_calls) {
    backend b = {0};
    ctx c;
    setup(&c, &b, "rpush-bad");
    start_bus(&c);
    eddy_rdomain_feed *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    eddy_error err = {0};
    eddy_rpush_source_spec sp = spec_of("x", f, &c.v[0], NULL, "x-view");
    cr_expect_eq(eddy_rpush_sources_add(c.ps, &sp, NULL, NULL, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", NULL);
    cr_expect_eq(eddy_rpush_sources_add(c.ps, &sp, NULL, NULL, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    sp.projection.apply = NULL;
    cr_expect_eq(eddy_rpush_sources_add(c.ps, &sp, NULL, NULL, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "bad..subject", "x-view");
    cr_expect_neq(eddy_rpush_sources_add(c.ps, &sp, NULL, NULL, &err), EDDY_OK);
    eddy_push_progress pr;
    cr_expect_eq(eddy_rpush_sources_stats(c.ps, "x", &pr), EDDY_ERR_INVALID_ARGUMENT);
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    done_rec d = {0};
    cr_assert_eq(eddy_rpush_sources_add(c.ps, &sp, on_added, &d, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_rpush_sources_add(c.ps, &sp, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_rbus_stop(c.bus);
    eddy_rpush_sources_free(c.ps);
    c.ps = NULL;
    cr_expect_eq(d.calls, 1, "free completes the pending add");
    cr_expect_eq(d.st, EDDY_ERR_CLOSED);
    teardown(&c);
}

/* The progress callback may free the sources: the start-all in progress completes with
 * EDDY_ERR_CLOSED, starts nothing more and no callback runs afterwards (the sanitizer build
 * checks that nothing is used after the free and nothing leaks). */
static void free_on_progress(const eddy_push_progress *p, void *user) {
    ctx *c = user;
    if (p->state == EDDY_PUSH_CATCHING_UP && c->ps) {
        eddy_rpush_sources *ps = c->ps;
        c->ps = NULL;
        eddy_rpush_sources_free(ps);
    }
    c->pg.n++;
}

ParameterizedTestParameters(rpush, the_progress_callback_may_free_the_sources) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, rpush, the_progress_callback_may_free_the_sources, .timeout = 60) {
    ctx c;
    setup(&c, p, "rpush-free");
    append(&c, "e1", NULL);
    start_bus(&c);
    eddy_rdomain_feed *f = new_feed(&c, NULL);
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = EDDY_PUSH_MANUAL;
    o.startup = EDDY_PUSH_BACKGROUND;
    o.progress = free_on_progress;
    o.progress_user = &c;
    eddy_error err = {0};
    cr_assert_eq(eddy_rpush_sources_new(c.loop, c.bus, &o, &c.ps, &err), EDDY_OK);
    eddy_rpush_source_spec sp = spec_of("gone", f, &c.v[0], "gone.events", "gone-view");
    add(&c, &sp);
    done_rec d = {0};
    d.c = &c;
    cr_assert_eq(eddy_rpush_sources_start_all(c.ps, on_started, &d, &err), EDDY_OK);
    cr_expect_null(c.ps, "freed from the callback");
    cr_expect_eq(d.calls, 1, "completed by the free");
    cr_expect_eq(d.st, EDDY_ERR_CLOSED);
    int reports = c.pg.n;
    cr_expect(eddy_rdomain_has_projection(f), "registered before it was told");
    cr_expect_eq(c.v[0].n, 0, "and nothing started after the free");
    ev_run(c.loop, EVRUN_NOWAIT);
    cr_expect_eq(c.pg.n, reports, "no callback after the free");
    cr_expect_eq(d.calls, 1);
    teardown(&c);
}
