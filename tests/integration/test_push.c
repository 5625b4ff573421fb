/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources, one table of scenarios run on both front ends
 * (blocking and reactive, through push_driver.h over domain_driver.h and store_driver.h) and
 * both backends (memory:// and the fixture's redis-server): a push source's outcome decides the
 * acknowledgement (DEFERRED handed back and not dead-lettered, DELIVERED acknowledged, nothing
 * lost or applied twice while a catch-up runs under arriving messages); manual mode withholds
 * the registration and the broker keeps the messages; background start reports its progress
 * and failures; the model's accept / accept-or-defer, its observer and its aggregation over two
 * feeds; an unreadable filter fails the source, which hands back the message in hand and stops
 * consuming; bad specs; freeing the sources while a catch-up runs. The catch-ups are held at
 * their first or last step by a checkpoint storage whose answer the test releases (the domain
 * driver's gate), so "while the catch-up runs" needs no timing. Redelivery is quick
 * (redelivery_idle_ms 100) and max_deliveries is 2, so a handed-back message that were counted
 * as a failure would be dead-lettered within the test. Nothing here sleeps to let something
 * happen: tests wait on conditions (the view, the bus's counters, the broker's pending entries),
 * except settle_a_while, used only after a positive control received what a paused
 * subscription must not read. A few scenarios belong to one front end's calling shape and say so
 * where they stand. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "domain_driver.h"
#include "eddy/push.h"
#include "eddy_test.h"
#include "push_driver.h"
#include "raw.h"
#include "recorder.h"
#include "store_driver.h"
#include "test_codec.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

#define PTEST(name)                                                                                \
    ParameterizedTestParameters(push, name) { return cr_make_param_array(combo, combos, 4); }      \
    ParameterizedTest(combo *p, push, name, .timeout = 120)

/* The reactive front end's own scenarios: the last two combinations. */
#define PTEST_REACTIVE(name)                                                                       \
    ParameterizedTestParameters(push, name) { return cr_make_param_array(combo, combos + 2, 2); }  \
    ParameterizedTest(combo *p, push, name, .timeout = 120)

/* The front end under test; each test runs in a process of its own. */
static const store_driver *sd;
static const domain_driver *dd;
static const push_driver *pd;

/* ---- an idempotent view keyed by event id, counting applies per id ---------------------- */

#define VIEW_MAX 1024

typedef struct view {
    pthread_mutex_t m;
    char ids[VIEW_MAX][64];
    int applies[VIEW_MAX];
    int n;
    char fail_id[48]; /* the apply of fail_id fails */
} view;

static eddy_status v_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta;
    view *v = user;
    uev *e = event;
    pthread_mutex_lock(&v->m);
    if (v->fail_id[0] && strcmp(e->id, v->fail_id) == 0) {
        pthread_mutex_unlock(&v->m);
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
    pthread_mutex_unlock(&v->m);
    return EDDY_OK;
}

static int view_count(view *v) {
    pthread_mutex_lock(&v->m);
    int n = v->n;
    pthread_mutex_unlock(&v->m);
    return n;
}

/* How often id was applied (0: never). */
static int applies_of(view *v, const char *id) {
    pthread_mutex_lock(&v->m);
    int k = 0;
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->ids[i], id) == 0)
            k = v->applies[i];
    pthread_mutex_unlock(&v->m);
    return k;
}

static eddy_projection projection_of(view *v) {
    eddy_projection p;
    memset(&p, 0, sizeof(p));
    p.apply = v_apply;
    p.user = v;
    return p;
}

/* ---- observer --------------------------------------------------------------------------- */

typedef struct seen {
    pthread_mutex_t m;
    int n, ok, unavailable, errors;
    int routes[3];
    eddy_status returns; /* what observe returns */
} seen;

static eddy_status observe(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user) {
    (void)ev, (void)err;
    seen *s = user;
    pthread_mutex_lock(&s->m);
    s->n++;
    if (st == EDDY_OK) {
        s->ok++;
        s->routes[route]++;
    } else if (st == EDDY_ERR_UNAVAILABLE) {
        s->unavailable++;
    } else {
        s->errors++;
    }
    pthread_mutex_unlock(&s->m);
    return s->returns;
}

static int seen_get(seen *s, const int *field) {
    pthread_mutex_lock(&s->m);
    int k = *field;
    pthread_mutex_unlock(&s->m);
    return k;
}

/* ---- progress --------------------------------------------------------------------------- */

#define PROG_MAX 100000

typedef struct prog {
    pthread_mutex_t m;
    int n;
    char (*id)[24];
    eddy_push_state *state;
    long long *head;
} prog;

static void on_progress(const eddy_push_progress *p, void *user) {
    prog *g = user;
    pthread_mutex_lock(&g->m);
    if (g->n < PROG_MAX) {
        snprintf(g->id[g->n], sizeof(g->id[0]), "%s", p->id);
        g->state[g->n] = p->state;
        g->head[g->n] = p->head;
        g->n++;
    }
    pthread_mutex_unlock(&g->m);
}

/* Reports for id in state st (with head >= min_head): how many. */
static int prog_count(prog *g, const char *id, eddy_push_state st, long long min_head) {
    pthread_mutex_lock(&g->m);
    int k = 0;
    for (int i = 0; i < g->n; i++)
        k += strcmp(g->id[i], id) == 0 && g->state[i] == st && g->head[i] >= min_head;
    pthread_mutex_unlock(&g->m);
    return k;
}

/* The state of the first / last report for id; -1 if none. */
static int prog_state(prog *g, const char *id, bool last) {
    pthread_mutex_lock(&g->m);
    int at = -1;
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->id[i], id) == 0 && (last || at < 0))
            at = i;
    int st = at < 0 ? -1 : (int)g->state[at];
    pthread_mutex_unlock(&g->m);
    return st;
}

/* ---- context ---------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    tstore *store;
    tpush *env;
    tdomain *feeds[4];
    tgate *gates[4];
    int nfeeds;
    view v[2];
    seen obs;
    prog pg;
} ctx;

static void setup(ctx *c, const combo *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
    sd = p->frontend ? &reactive_store_driver : &blocking_store_driver;
    dd = p->frontend ? &reactive_domain_driver : &blocking_domain_driver;
    pd = p->frontend ? &reactive_push_driver : &blocking_push_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), prefix);
    if (p->backend)
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
    c->s.log_user = p->backend ? "redis" : "memory";
    eddy_error err = {0};
    cr_assert_eq(sd->open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < 2; i++)
        pthread_mutex_init(&c->v[i].m, NULL);
    pthread_mutex_init(&c->obs.m, NULL);
    pthread_mutex_init(&c->pg.m, NULL);
    c->pg.id = calloc(PROG_MAX, sizeof(*c->pg.id));
    c->pg.state = calloc(PROG_MAX, sizeof(*c->pg.state));
    c->pg.head = calloc(PROG_MAX, sizeof(*c->pg.head));
    cr_assert(c->pg.id && c->pg.state && c->pg.head);
}

/* A feed whose marker goes through gates[i] (i its index). */
static tdomain *new_feed(ctx *c, const eddy_data_reader *reader) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = uev_decode;
    cfg.free_event = uev_free;
    cfg.event_id = uev_id;
    cfg.page_size = 8;
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    cfg.reader = reader;
    tgate *g = dd->gate_new(c->store);
    tdomain *f = NULL;
    eddy_error err = {0};
    cr_assert_eq(dd->new_gated_feed(c->store, &cfg, g, &f, &err), EDDY_OK, "%s", err.detail);
    c->gates[c->nfeeds] = g;
    c->feeds[c->nfeeds++] = f;
    return f;
}

static void start_bus(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(pd->env_new(c->store, &c->s, &c->env, &err), EDDY_OK, "%s", err.detail);
}

static void new_sources(ctx *c, eddy_push_mode mode, eddy_push_startup startup) {
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = mode;
    o.startup = startup;
    o.progress = on_progress;
    o.progress_user = &c->pg;
    o.progress_ms = 5;
    o.observer.observe = observe;
    o.observer.user = &c->obs;
    o.log = eddy_test_log;
    o.log_user = "push";
    eddy_error err = {0};
    cr_assert_eq(pd->sources_new(c->env, &o, &err), EDDY_OK, "%s", err.detail);
}

static tpush_spec spec_of(const char *id, tdomain *f, view *v, const char *subject,
                          const char *group) {
    tpush_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.id = id;
    sp.feed = f;
    sp.projection = projection_of(v);
    sp.subject = subject;
    sp.group = group;
    return sp;
}

static void add(ctx *c, const tpush_spec *sp) {
    eddy_error err = {0};
    cr_assert_eq(pd->add(c->env, sp, &err), EDDY_OK, "%s", err.detail);
}

static void teardown(ctx *c) {
    pd->env_free(c->env); /* stops the bus, frees the sources and the bus */
    for (int i = 0; i < c->nfeeds; i++) {
        dd->free(c->feeds[i]);
        dd->gate_free(c->gates[i]);
    }
    sd->close(c->store);
    for (int i = 0; i < 2; i++)
        pthread_mutex_destroy(&c->v[i].m);
    pthread_mutex_destroy(&c->obs.m);
    pthread_mutex_destroy(&c->pg.m);
    free(c->pg.id);
    free(c->pg.state);
    free(c->pg.head);
}

/* Stores an event and publishes it to subject in the same step (subject NULL: store only). */
static void append(ctx *c, const char *id, const char *type, const char *subject) {
    eddy_event *ev = make_event(id, type);
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(sd->append(c->store, "order-1", evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

/* Publishes without storing: only the broker has it. */
static void publish(ctx *c, const char *subject, const char *id) {
    cr_assert_eq(pd->publish(c->env, subject, id), EDDY_OK, "publish %s", id);
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
    cr_assert_eq(pd->consumer_stats(c->env, name, &cs), EDDY_OK, "%s", name);
    return cs;
}

static long long stream_len(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

/* Lets a paused subscription show whether it still reads: several blocking reads and
 * redelivery rounds long. Only used after a positive control received the messages. */
static void settle_a_while(ctx *c) {
    long long ms = 3 * (long long)(c->s.block_ms + c->s.redelivery_idle_ms);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static eddy_push_progress status_of(ctx *c, const char *id) {
    eddy_push_progress p;
    cr_assert_eq(pd->status(c->env, id, &p), EDDY_OK, "%s", id);
    return p;
}

/* Conditions for eddy_test_wait_until. */
typedef struct held_cond {
    ctx *c;
    const char *id;
    uint64_t n;
} held_cond;

static bool held_at_least(void *user) {
    held_cond *h = user;
    return stats(h->c, h->id).held >= h->n;
}

typedef struct view_cond {
    view *v;
    int n;
} view_cond;

static bool view_has(void *user) {
    view_cond *w = user;
    return view_count(w->v) >= w->n;
}

typedef struct count_cond {
    int *count;
    int n;
} count_cond;

static bool counted(void *user) {
    count_cond *k = user;
    return atomic_load((_Atomic int *)k->count) >= k->n;
}

typedef struct pending_cond {
    ctx *c;
    const char *subject, *group;
} pending_cond;

static bool nothing_pending(void *user) {
    pending_cond *p = user;
    return pending(p->c, p->subject, p->group) == 0;
}

typedef struct prog_cond {
    prog *g;
    const char *id;
    eddy_push_state st;
    long long head;
} prog_cond;

static bool reported(void *user) {
    prog_cond *p = user;
    return prog_count(p->g, p->id, p->st, p->head) > 0;
}

typedef struct state_cond {
    ctx *c;
    const char *id;
    eddy_push_state st;
} state_cond;

static bool in_state(void *user) {
    state_cond *s = user;
    return status_of(s->c, s->id).state == s->st;
}

static bool gate_held(void *user) { return dd->gate_held(user); }

/* Until no source catches up: the blocking sources' wait, or the state polled (the reactive
 * sources have no wait: their progress and completions say it). */
static void until_live(ctx *c, const char *id) {
    if (pd->wait)
        cr_expect_eq(pd->wait(c->env, 60000), EDDY_OK);
    state_cond sc = {c, id, EDDY_PUSH_LIVE};
    cr_expect(eddy_test_wait_until(in_state, &sc, 60000), "%s never went live", id);
}

/* ---- (a) DEFERRED is handed back, DELIVERED acknowledged, nothing lost ------------------ */

PTEST(deferred_is_handed_back_then_delivered_without_loss) {
    ctx c;
    setup(&c, p, "push-defer");
    /* History from before the source existed: only the replay has it. */
    for (int i = 0; i < 30; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL);
    dd->gate_hold(c.gates[0], true, false); /* the catch-up waits at its first step */
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_BACKGROUND);
    tpush_spec sp = spec_of("orders", f, &c.v[0], "orders.events", "orders-view");
    add(&c, &sp);
    cr_assert(eddy_test_wait_until(gate_held, c.gates[0], 30000));
    cr_expect_eq(status_of(&c, "orders").state, EDDY_PUSH_CATCHING_UP);
    /* Messages arrive while the catch-up runs: each is DEFERRED and handed back, again and
     * again (more often than max_deliveries), and none is dead-lettered. */
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    held_cond hc = {&c, "orders", 60};
    cr_assert(eddy_test_wait_until(held_at_least, &hc, 60000));
    cr_expect_eq(status_of(&c, "orders").state, EDDY_PUSH_CATCHING_UP);
    cr_expect_gt(seen_get(&c.obs, &c.obs.routes[EDDY_ROUTE_DEFERRED]), 0);
    cr_expect_eq(view_count(&c.v[0]), 0, "nothing applied while the catch-up runs");
    cr_expect_eq(pending(&c, "orders.events", "orders-view"), 20, "handed back, not acknowledged");
    cr_expect_eq(dlq_len(&c, "orders-view"), 0);
    dd->gate_open(c.gates[0]);
    /* And more arrive while the catch-up finishes and goes live. */
    for (int i = 20; i < 40; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    until_live(&c, "orders");
    view_cond vc = {&c.v[0], 70};
    cr_expect(eddy_test_wait_until(view_has, &vc, 60000), "applied %d of 70", view_count(&c.v[0]));
    pending_cond pc = {&c, "orders.events", "orders-view"};
    cr_expect(eddy_test_wait_until(nothing_pending, &pc, 60000), "acknowledged once DELIVERED");
    pd->bus_stop(c.env);
    cr_expect_eq(view_count(&c.v[0]), 70);
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
    cr_expect_eq(dlq_len(&c, "orders-view"), 0, "nothing dead-lettered");
    cr_expect_gt(seen_get(&c.obs, &c.obs.routes[EDDY_ROUTE_DELIVERED]), 0);
    teardown(&c);
}

/* ---- (b) manual mode ---------------------------------------------------------------------- */

PTEST(manual_mode_withholds_until_start_all) {
    ctx c;
    setup(&c, p, "push-manual");
    start_bus(&c);
    tdomain *fz = new_feed(&c, NULL);
    tdomain *fa = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    /* Published elsewhere, not stored here: go live, so only the broker has the events. */
    tpush_spec z = spec_of("zeta", fz, &c.v[0], "zeta.events", "zeta-view");
    z.go_live = true;
    tpush_spec a = spec_of("alpha", fa, &c.v[1], "alpha.events", "alpha-view");
    a.go_live = true;
    add(&c, &z);
    add(&c, &a);
    cr_expect_not(dd->has_projection(fz), "the registration is withheld");
    int rz = 0, ra = 0;
    pd->control(c.env, "zeta-control", "zeta.events", &rz);
    pd->control(c.env, "alpha-control", "alpha.events", &ra);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        publish(&c, "zeta.events", id);
        snprintf(id, sizeof(id), "a%d", i);
        publish(&c, "alpha.events", id);
    }
    /* Nothing is read before start-all: the sources' subscriptions are paused, and the broker
     * keeps the messages (the control groups received them). */
    count_cond kz = {&rz, 5}, ka = {&ra, 5};
    cr_assert(eddy_test_wait_until(counted, &kz, 60000));
    cr_assert(eddy_test_wait_until(counted, &ka, 60000));
    settle_a_while(&c);
    cr_expect_eq(stats(&c, "zeta").delivered, 0, "nothing read before start-all");
    cr_expect_eq(stats(&c, "alpha").delivered, 0);
    cr_expect_eq(stats(&c, "zeta").held, 0, "so nothing handed back either");
    cr_expect_eq(view_count(&c.v[0]) + view_count(&c.v[1]), 0);
    cr_expect_eq(pending(&c, "zeta.events", "zeta-view"), 0, "not read, so not pending");
    cr_expect_eq(pending(&c, "alpha.events", "alpha-view"), 0);
    cr_expect_eq(stream_len(&c, "zeta.events"), 5, "kept by the broker");
    cr_expect_eq(stream_len(&c, "alpha.events"), 5);
    cr_expect_eq(dlq_len(&c, "zeta-view"), 0, "not dead-lettered");
    cr_expect_eq(dlq_len(&c, "alpha-view"), 0);
    cr_expect_eq(status_of(&c, "zeta").state, EDDY_PUSH_NOT_STARTED);
    cr_expect_eq(stats(&c, "zeta").failed, 0);

    char ids[TPUSH_IDS][24];
    eddy_push_state states[TPUSH_IDS];
    size_t n = 0;
    eddy_error err = {0};
    cr_assert_eq(pd->start_all(c.env, ids, states, &n, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(ids[0], "zeta", "registration order");
    cr_expect_str_eq(ids[1], "alpha");
    cr_expect_eq(states[0], EDDY_PUSH_LIVE, "foreground: start-all ends once they went live");
    cr_expect_eq(states[1], EDDY_PUSH_LIVE);
    view_cond vz = {&c.v[0], 5}, va = {&c.v[1], 5};
    cr_expect(eddy_test_wait_until(view_has, &vz, 60000), "nothing lost");
    cr_expect(eddy_test_wait_until(view_has, &va, 60000), "nothing lost");
    pending_cond pz = {&c, "zeta.events", "zeta-view"}, pa = {&c, "alpha.events", "alpha-view"};
    cr_expect(eddy_test_wait_until(nothing_pending, &pz, 60000));
    cr_expect(eddy_test_wait_until(nothing_pending, &pa, 60000));
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        cr_expect_eq(applies_of(&c.v[0], id), 1, "%s", id);
        snprintf(id, sizeof(id), "a%d", i);
        cr_expect_eq(applies_of(&c.v[1], id), 1, "%s", id);
    }

    /* A second start-all starts none. */
    n = 7;
    cr_expect_eq(pd->start_all(c.env, ids, states, &n, &err), EDDY_OK);
    cr_expect_eq(n, 0);
    /* A source added after start-all waits for the next one, which starts only it. */
    tdomain *fm = new_feed(&c, NULL);
    tpush_spec m = spec_of("mid", fm, &c.v[1], "mid.events", "mid-view");
    m.go_live = true;
    add(&c, &m);
    cr_expect_eq(status_of(&c, "mid").state, EDDY_PUSH_NOT_STARTED);
    cr_expect_eq(pd->start_all(c.env, ids, states, &n, &err), EDDY_OK);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(ids[0], "mid");
    pd->bus_stop(c.env);
    cr_expect_eq(dlq_len(&c, "zeta-view"), 0);
    cr_expect_eq(dlq_len(&c, "alpha-view"), 0);
    /* Read after start-all only (a message that arrived while the feed went live was deferred:
     * handed back and read again). */
    cr_expect_geq(stats(&c, "zeta").delivered, 5);
    teardown(&c);
}

/* ---- (c) background start: progress, then live; a failure with its reason ---------------- */

PTEST(background_start_reports_progress_and_failure) {
    ctx c;
    setup(&c, p, "push-bg");
    for (int i = 0; i < 50; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, "order.placed", NULL);
    }
    start_bus(&c);
    tdomain *fg = new_feed(&c, NULL);
    tdomain *fb = new_feed(&c, NULL);
    dd->gate_hold(c.gates[0], false, true); /* the good catch-up waits after its replay */
    strcpy(c.v[1].fail_id, "e5");
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_BACKGROUND);
    tpush_spec good = spec_of("good", fg, &c.v[0], "good.events", "good-view");
    tpush_spec bad = spec_of("bad", fb, &c.v[1], "bad.events", "bad-view");
    add(&c, &good);
    add(&c, &bad);
    eddy_push_progress st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_NOT_STARTED);
    cr_expect_str_eq(st.id, "good");

    char ids[TPUSH_IDS][24];
    eddy_push_state states[TPUSH_IDS];
    size_t n = 0;
    eddy_error err = {0};
    cr_assert_eq(pd->start_all(c.env, ids, states, &n, &err), EDDY_OK,
                 "the start-up path does not wait for the catch-ups: %s", err.detail);
    cr_expect_eq(n, 2);
    cr_expect_eq(states[0], EDDY_PUSH_CATCHING_UP, "start-all ends before the catch-up does");

    cr_assert(eddy_test_wait_until(gate_held, c.gates[0], 60000));
    st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(st.replayed, 50);
    cr_expect_eq(st.head, 50, "replays up to the head");
    cr_expect_eq(st.position, 50);
    prog_cond pc = {&c.pg, "good", EDDY_PUSH_CATCHING_UP, 50};
    cr_expect(eddy_test_wait_until(reported, &pc, 60000),
              "the progress callback reports the catch-up with its head");
    /* The other source failed meanwhile, with its reason. */
    state_cond sc = {&c, "bad", EDDY_PUSH_FAILED};
    cr_assert(eddy_test_wait_until(in_state, &sc, 60000));
    st = status_of(&c, "bad");
    cr_expect_eq(st.failure.status, EDDY_ERR_HANDLER_FAILED, "%s",
                 eddy_status_name(st.failure.status));
    cr_expect(strstr(st.failure.detail, "the view rejects e5") != NULL, "%s", st.failure.detail);
    prog_cond pb = {&c.pg, "bad", EDDY_PUSH_FAILED, 0};
    cr_expect(eddy_test_wait_until(reported, &pb, 60000));
    if (pd->wait) /* blocking only: the reactive sources have no wait */
        cr_expect_eq(pd->wait(c.env, 0), EDDY_ERR_TIMEOUT, "good still catches up");

    dd->gate_open(c.gates[0]);
    until_live(&c, "good");
    st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_LIVE);
    cr_expect_eq(st.replayed, 50);
    cr_expect_eq(st.position, 50);
    cr_expect_eq(st.eta_seconds, 0);
    cr_expect_eq(view_count(&c.v[0]), 50);
    prog_cond pl = {&c.pg, "good", EDDY_PUSH_LIVE, 0};
    cr_expect(eddy_test_wait_until(reported, &pl, 60000), "live reported");
    cr_expect_eq(prog_state(&c.pg, "good", false), EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(prog_state(&c.pg, "good", true), EDDY_PUSH_LIVE);
    /* A failed source stops consuming: the broker keeps its messages (not read, not
     * dead-lettered) for the feed that replaces it; a control group receives them. */
    int rb = 0;
    pd->control(c.env, "bad-control", "bad.events", &rb);
    uint64_t before = stats(&c, "bad").delivered;
    publish(&c, "bad.events", "late-1");
    count_cond kb = {&rb, 1};
    cr_assert(eddy_test_wait_until(counted, &kb, 60000));
    settle_a_while(&c);
    cr_expect_eq(stats(&c, "bad").delivered, before, "the failed source reads nothing");
    cr_expect_eq(pending(&c, "bad.events", "bad-view"), 0);
    cr_expect_eq(stream_len(&c, "bad.events"), 1);
    cr_expect_eq(dlq_len(&c, "bad-view"), 0);
    teardown(&c);
}

/* A foreground start answers with its catch-up's outcome, the same on both front ends: the
 * catch-up's own status, named by the source ("push source '<id>': " and the reason), and
 * EDDY_OK for one that went live. */
PTEST(foreground_start_returns_the_catch_up_outcome) {
    ctx c;
    setup(&c, p, "push-fg");
    for (int i = 0; i < 10; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, "order.placed", NULL);
    }
    start_bus(&c);
    tdomain *fg = new_feed(&c, NULL);
    tdomain *fb = new_feed(&c, NULL);
    strcpy(c.v[1].fail_id, "e5");
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_FOREGROUND);
    tpush_spec good = spec_of("good", fg, &c.v[0], "good.events", "good-view");
    tpush_spec bad = spec_of("bad", fb, &c.v[1], "bad.events", "bad-view");
    add(&c, &good);
    cr_expect_eq(status_of(&c, "good").state, EDDY_PUSH_LIVE, "live once the add returned");
    cr_expect_eq(view_count(&c.v[0]), 10);
    eddy_error err = {0};
    eddy_status st = pd->add(c.env, &bad, &err);
    cr_expect_eq(st, EDDY_ERR_HANDLER_FAILED, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect_eq(err.status, st);
    cr_expect(strncmp(err.detail, "push source 'bad': ", 19) == 0, "%s", err.detail);
    cr_expect(strstr(err.detail, "the view rejects e5") != NULL, "%s", err.detail);
    eddy_push_progress pr = status_of(&c, "bad");
    cr_expect_eq(pr.state, EDDY_PUSH_FAILED);
    cr_expect_eq(pr.failure.status, st, "the source's failure is the one returned");
    teardown(&c);
}

/* ---- (d) the model --------------------------------------------------------------------- */

static eddy_route answer_of(tmodel *m, const char *id, const char *type, eddy_status want,
                            char *detail, size_t size) {
    eddy_event *ev = make_event(id, type);
    eddy_route route = (eddy_route)-1;
    eddy_error err = {0};
    eddy_status st = pd->model_accept_or_defer(m, ev, NULL, &route, &err);
    eddy_event_free(ev);
    cr_expect_eq(st, want, "%s: %s (%s)", id, eddy_status_name(st), err.detail);
    if (detail)
        snprintf(detail, size, "%s", err.detail);
    return route;
}

static void tell(tmodel *m, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    cr_expect_eq(pd->model_accept(m, ev, NULL), EDDY_OK, "the write path returns");
    eddy_event_free(ev);
}

PTEST(model_accept_accept_or_defer_observer_aggregation) {
    ctx c;
    setup(&c, p, "push-model");
    start_bus(&c);
    tdomain *fa = new_feed(&c, NULL);
    tdomain *fb = new_feed(&c, NULL);
    eddy_push_observer obs = {observe, &c.obs};
    tmodel *m = NULL;
    eddy_error err = {0};
    cr_assert_eq(pd->model_new(c.env, &obs, &m, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(pd->model_add(m, fa, &err), EDDY_OK);
    cr_assert_eq(pd->model_add(m, fb, &err), EDDY_OK);
    cr_expect_eq(pd->model_add(m, fa, &err), EDDY_ERR_INVALID_ARGUMENT, "added twice");

    /* Nothing registered: accept drops, accept-or-defer says unavailable. */
    tell(m, "p1", "order.placed");
    cr_expect_eq(seen_get(&c.obs, &c.obs.unavailable), 1, "the observer is told");
    answer_of(m, "p1", "order.placed", EDDY_ERR_UNAVAILABLE, NULL, 0);
    cr_expect_eq(seen_get(&c.obs, &c.obs.unavailable), 2);

    /* A registered but not live: DEFERRED. */
    eddy_filter *fplaced = eddy_filter_type("order.placed");
    eddy_filter *fshipped = eddy_filter_type("order.shipped");
    eddy_projection pa = projection_of(&c.v[0]), pb = projection_of(&c.v[1]);
    cr_assert_eq(dd->reg(fa, "placed-view", &pa, fplaced, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(answer_of(m, "p1", "order.placed", EDDY_OK, NULL, 0), EDDY_ROUTE_DEFERRED);
    cr_assert_eq(dd->go_live(fa, "placed-view", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(answer_of(m, "p1", "order.placed", EDDY_OK, NULL, 0), EDDY_ROUTE_DELIVERED);
    cr_expect_eq(answer_of(m, "s1", "order.shipped", EDDY_OK, NULL, 0), EDDY_ROUTE_FILTERED,
                 "A filters it, B has no projection");

    /* Two feeds: B registered, not live. DEFERRED wins over DELIVERED and FILTERED. */
    cr_assert_eq(dd->reg(fb, "shipped-view", &pb, fshipped, &err), EDDY_OK);
    cr_expect_eq(answer_of(m, "s1", "order.shipped", EDDY_OK, NULL, 0), EDDY_ROUTE_DEFERRED,
                 "A filtered, B deferred");
    cr_expect_eq(answer_of(m, "p2", "order.placed", EDDY_OK, NULL, 0), EDDY_ROUTE_DELIVERED,
                 "A delivered, B filtered");
    cr_assert_eq(dd->go_live(fb, "shipped-view", &err), EDDY_OK);
    cr_expect_eq(answer_of(m, "s1", "order.shipped", EDDY_OK, NULL, 0), EDDY_ROUTE_DELIVERED,
                 "A filtered, B delivered");
    cr_expect_eq(applies_of(&c.v[0], "p1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p2"), 1);
    cr_expect_eq(applies_of(&c.v[1], "s1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "s1"), 0);

    /* An error of one feed is the model's error. */
    pthread_mutex_lock(&c.v[0].m);
    strcpy(c.v[0].fail_id, "p3");
    pthread_mutex_unlock(&c.v[0].m);
    char detail[EDDY_ERROR_DETAIL_MAX];
    answer_of(m, "p3", "order.placed", EDDY_ERR_HANDLER_FAILED, detail, sizeof(detail));
    cr_expect(strstr(detail, "rejects p3") != NULL, "%s", detail);
    tell(m, "p3", "order.placed");
    cr_expect_eq(seen_get(&c.obs, &c.obs.errors), 2);

    /* An observer that fails changes nothing. */
    int before = seen_get(&c.obs, &c.obs.n);
    pthread_mutex_lock(&c.obs.m);
    c.obs.returns = EDDY_ERR_HANDLER_FAILED;
    pthread_mutex_unlock(&c.obs.m);
    cr_expect_eq(answer_of(m, "p4", "order.placed", EDDY_OK, NULL, 0), EDDY_ROUTE_DELIVERED);
    tell(m, "p5", "order.placed");
    cr_expect_eq(applies_of(&c.v[0], "p4"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p5"), 1);
    cr_expect_eq(seen_get(&c.obs, &c.obs.n), before + 2, "told each outcome");
    pd->model_shape_refusals(m);

    eddy_filter_free(fplaced);
    eddy_filter_free(fshipped);
    pd->model_free(m);
    teardown(&c);
}

/* Reactive front end only: the model's answers are completions, and freeing the model completes
 * one not yet given with EDDY_ERR_CLOSED, once (a blocking answer is the call's return). */
PTEST_REACTIVE(model_free_completes_a_pending_answer) {
    ctx c;
    setup(&c, p, "push-model-free");
    start_bus(&c);
    tdomain *fa = new_feed(&c, NULL);
    eddy_push_observer obs = {observe, &c.obs};
    tmodel *m = NULL;
    eddy_error err = {0};
    cr_assert_eq(pd->model_new(c.env, &obs, &m, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(pd->model_add(m, fa, &err), EDDY_OK);
    eddy_projection pa = projection_of(&c.v[0]);
    cr_assert_eq(dd->reg(fa, "placed-view", &pa, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(dd->go_live(fa, "placed-view", &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("p6", "order.placed");
    pd->model_free_completes_a_pending_answer(m, ev);
    eddy_event_free(ev);
    pd->model_free(m);
    teardown(&c);
}

/* ---- (e) an unreadable filter fails the source; it stops consuming ---------------------- */

PTEST(unreadable_filter_fails_the_source_and_hands_back) {
    ctx c;
    setup(&c, p, "push-unreadable");
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL); /* no data reader */
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_FOREGROUND);
    eddy_field gold = eddy_field_string("gold");
    eddy_filter *filter = eddy_filter_data("tier", EDDY_DATA_EQ, &gold);
    tpush_spec sp = spec_of("tiers", f, &c.v[0], "tier.events", "tier-view");
    sp.filter = filter;
    sp.go_live = true;
    add(&c, &sp);
    eddy_filter_free(filter);
    cr_expect_eq(status_of(&c, "tiers").state, EDDY_PUSH_LIVE);
    int rt = 0;
    pd->control(c.env, "tier-control", "tier.events", &rt);
    publish(&c, "tier.events", "t1");
    publish(&c, "tier.events", "t2");
    state_cond sc = {&c, "tiers", EDDY_PUSH_FAILED};
    cr_assert(eddy_test_wait_until(in_state, &sc, 60000));
    eddy_push_progress st = status_of(&c, "tiers");
    cr_expect_eq(st.failure.status, EDDY_ERR_UNREADABLE_FILTER);
    prog_cond pc = {&c.pg, "tiers", EDDY_PUSH_FAILED, 0};
    cr_expect(eddy_test_wait_until(reported, &pc, 60000), "reported");
    /* The message in hand was handed back and the source stopped consuming: t2 was handed
     * back too if it came in the same batch, else it was never read. */
    held_cond hc = {&c, "tiers", 1};
    cr_expect(eddy_test_wait_until(held_at_least, &hc, 60000), "handed back");
    publish(&c, "tier.events", "t3");
    count_cond kt = {&rt, 3};
    cr_assert(eddy_test_wait_until(counted, &kt, 60000), "the control group got them");
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
    cr_expect_eq(view_count(&c.v[0]), 0);
    teardown(&c);
}

/* ---- refusals --------------------------------------------------------------------------- */

PTEST(bad_specs_are_refused) {
    ctx c;
    setup(&c, p, "push-bad");
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    eddy_error err = {0};
    tpush_spec sp = spec_of("x", f, &c.v[0], NULL, "x-view");
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", NULL);
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of(NULL, f, &c.v[0], "x.events", "x-view");
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    sp.projection.apply = NULL;
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "bad..subject", "x-view");
    cr_expect_neq(pd->add(c.env, &sp, &err), EDDY_OK, "the bus refuses it");
    eddy_push_progress pr;
    cr_expect_eq(pd->status(c.env, "x", &pr), EDDY_ERR_INVALID_ARGUMENT, "nothing was added");
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(pd->add(c.env, &sp, &err), EDDY_ERR_INVALID_ARGUMENT, "same id");
    sp = spec_of("y", f, &c.v[0], "bad..subject", "y-view");
    cr_expect_neq(pd->add(c.env, &sp, &err), EDDY_OK, "the bus refuses it");
    cr_expect_eq(pd->status(c.env, "y", &pr), EDDY_ERR_INVALID_ARGUMENT, "nothing was added");
    cr_expect_eq(pd->status(c.env, "nope", &pr), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(pd->status(c.env, NULL, &pr), EDDY_ERR_INVALID_ARGUMENT, "no id");
    cr_expect_eq(pd->status(c.env, "x", NULL), EDDY_ERR_INVALID_ARGUMENT, "nowhere to write");
    if (pd->wait) /* blocking only: the reactive sources have no wait */
        cr_expect_eq(pd->wait(c.env, 0), EDDY_OK, "nothing catches up");
    teardown(&c);
}

/* Reactive front end only: an add is a completion, and freeing the sources completes one not
 * yet completed with EDDY_ERR_CLOSED (a blocking add returns its outcome). */
PTEST_REACTIVE(free_completes_a_pending_add) {
    ctx c;
    setup(&c, p, "push-free-add");
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    tpush_spec sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    pd->free_completes_a_pending_add(c.env, &sp);
    teardown(&c);
}

/* Reactive front end only: the progress callback runs on the loop, inside the sources' own
 * calls, and may free them there (a blocking progress callback runs on the sources' thread,
 * which the free joins). */
PTEST_REACTIVE(the_progress_callback_may_free_the_sources) {
    ctx c;
    setup(&c, p, "push-free-progress");
    append(&c, "e1", "order.placed", NULL);
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL);
    tpush_spec sp = spec_of("gone", f, &c.v[0], "gone.events", "gone-view");
    pd->progress_callback_may_free_the_sources(c.env, &sp, &c.v[0].n);
    teardown(&c);
}

/* ---- freeing the sources while a background catch-up runs ------------------------------- */

/* The sources' log, recorded to tell an error logged while freeing. */
typedef struct errlog {
    pthread_mutex_t m;
    int errors;
    char last[512];
} errlog;

static void errlog_fn(eddy_log_level level, const char *msg, void *user) {
    errlog *l = user;
    pthread_mutex_lock(&l->m);
    if (level == EDDY_LOG_ERROR) {
        l->errors++;
        snprintf(l->last, sizeof(l->last), "%s", msg);
    }
    pthread_mutex_unlock(&l->m);
    eddy_test_log(level, msg, "push");
}

typedef struct freer {
    tpush *env;
    pthread_mutex_t m;
    pthread_cond_t c;
    bool entered;
} freer;

static void *free_main(void *arg) {
    freer *fr = arg;
    pthread_mutex_lock(&fr->m);
    fr->entered = true;
    pthread_cond_broadcast(&fr->c);
    pthread_mutex_unlock(&fr->m);
    pd->sources_free(fr->env);
    return NULL;
}

typedef struct feed_cond {
    tdomain *f;
} feed_cond;

static bool caught_up(void *user) {
    eddy_feed_info info;
    cr_assert_eq(dd->get_info(((feed_cond *)user)->f, &info), EDDY_OK);
    return !info.catching_up;
}

PTEST(free_during_background_catch_up_does_not_fail_the_feed) {
    ctx c;
    setup(&c, p, "push-free-mid");
    enum { N = 400 };
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, "order.placed", NULL);
    }
    start_bus(&c);
    tdomain *f = new_feed(&c, NULL);
    errlog el;
    memset(&el, 0, sizeof(el));
    pthread_mutex_init(&el.m, NULL);
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = EDDY_PUSH_AUTOMATIC;
    o.startup = EDDY_PUSH_BACKGROUND;
    o.progress = on_progress;
    o.progress_user = &c.pg;
    o.progress_ms = 5;
    o.log = errlog_fn;
    o.log_user = &el;
    eddy_error err = {0};
    cr_assert_eq(pd->sources_new(c.env, &o, &err), EDDY_OK, "%s", err.detail);
    dd->gate_hold(c.gates[0], true, false); /* the catch-up is known to run while held here */
    tpush_spec sp = spec_of("freed", f, &c.v[0], "freed.events", "freed-view");
    add(&c, &sp);
    cr_assert(eddy_test_wait_until(gate_held, c.gates[0], 30000));
    cr_expect_eq(status_of(&c, "freed").state, EDDY_PUSH_CATCHING_UP);
    cr_expect_not(dd->ready_for_live_delivery(f), "the catch-up runs");
    /* The handlers use the sources: stop the bus before freeing them. */
    pd->bus_stop(c.env);

    /* Free on another thread: it cancels the catch-up (blocking: and joins its thread, which
     * waits at the gate, so the free can only return once the gate opens). */
    freer fr = {.env = c.env, .entered = false};
    pthread_mutex_init(&fr.m, NULL);
    pthread_cond_init(&fr.c, NULL);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_main, &fr), 0);
    pthread_mutex_lock(&fr.m);
    while (!fr.entered)
        pthread_cond_wait(&fr.c, &fr.m);
    pthread_mutex_unlock(&fr.m);
    dd->gate_open(c.gates[0]);
    cr_assert_eq(pthread_join(t, NULL), 0, "the free returned");
    pthread_cond_destroy(&fr.c);
    pthread_mutex_destroy(&fr.m);

    /* No catch-up runs any more, and the user's feed did not fail. The front ends differ here,
     * each as its header says: the blocking free cancels the catch-up and joins its thread, so
     * it ended before the free returned; the reactive free leaves it running (the feed owns it)
     * and it goes on to the end. */
    eddy_feed_info info;
    if (pd->reactive) {
        feed_cond fc = {f};
        cr_assert(eddy_test_wait_until(caught_up, &fc, 60000), "the catch-up never ended");
    }
    cr_assert_eq(dd->get_info(f, &info), EDDY_OK);
    cr_expect_not(info.catching_up, "the catch-up ended before the free returned");
    if (pd->reactive)
        cr_expect(info.live && info.replayed == N,
                  "the reactive catch-up went on: live %d, "
                  "replayed %llu",
                  (int)info.live, (unsigned long long)info.replayed);
    cr_expect_not(info.failed);
    cr_expect_neq(info.last, EDDY_FEED_FAILED);
    cr_expect_not(dd->refuses_permanently(f), "a cancel is not the feed's failure");
    eddy_error cause = {0};
    cr_expect_not(dd->failure(f, &cause), "%s", cause.detail);
    /* The cancel normally lands while the catch-up runs (the feed then keeps holding); if the
     * replay outran it, the feed went live. Either way it did not fail. */
    bool cancelled = info.last == EDDY_FEED_CANCELLED;
    cr_expect(cancelled || (info.live && info.replayed == N), "last %d, live %d, replayed %llu",
              (int)info.last, (int)info.live, (unsigned long long)info.replayed);
    if (cancelled) {
        cr_expect_not(info.live, "a cancelled catch-up keeps the feed holding");
        cr_expect_lt(view_count(&c.v[0]), N, "stopped mid-replay");
    }
    cr_log_info("push.free_during_background_catch_up (%s, %s): %s after %d of %d events; "
                "errors logged by the sources: %d (%s)",
                pd->name, p->backend ? "redis" : "memory", cancelled ? "cancelled" : "completed",
                view_count(&c.v[0]), N, el.errors, el.last);

    /* The feed can be caught up again, by the user, and every event reaches the view. */
    cr_expect_eq(dd->catch_up(f, "freed", &err), EDDY_OK, "%s", err.detail);
    cr_expect(dd->ready_for_live_delivery(f));
    cr_expect_eq(view_count(&c.v[0]), N);
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        cr_expect_geq(applies_of(&c.v[0], id), 1, "%s applied", id);
    }
    cr_expect_eq(prog_count(&c.pg, "freed", EDDY_PUSH_FAILED, 0), 0,
                 "the progress callback is not told of the cancel");
    teardown(&c);
    pthread_mutex_destroy(&el.m);
}
