/* SPDX-License-Identifier: BSD-3-Clause */
/* Push subscription models and push sources through the blocking front end, on memory:// and
 * on the fixture's redis-server: a push source's outcome decides the acknowledgement (DEFERRED
 * handed back and not dead-lettered, DELIVERED acknowledged, nothing lost or applied twice while
 * a catch-up runs under arriving messages); manual mode withholds the registration and the
 * broker keeps the messages; background start reports its progress and failures; the model's
 * accept / accept-or-defer, its observer and its aggregation over two feeds; an unreadable
 * filter fails the source, which hands back the message in hand and stops consuming. Redelivery is
 * quick (redelivery_idle_ms 100) and max_deliveries is 2, so a handed-back message that were
 * counted as a failure would be dead-lettered within the test. Nothing here sleeps to let something
 * happen: tests wait on conditions (the view, the bus's counters, the broker's pending entries). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eddy/blocking.h"
#include "eddy/domain.h"
#include "eddy/push.h"
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
    pthread_mutex_t m;
    pthread_cond_t c;
    char ids[VIEW_MAX][64];
    int applies[VIEW_MAX];
    int n;
    char gate_id[48]; /* the apply of gate_id waits until the gate opens */
    bool at_gate, gate_open;
    char fail_id[48]; /* the apply of fail_id fails */
} view;

static void view_init(view *v) {
    memset(v, 0, sizeof(*v));
    pthread_mutex_init(&v->m, NULL);
    pthread_cond_init(&v->c, NULL);
}

static void view_destroy(view *v) {
    pthread_cond_destroy(&v->c);
    pthread_mutex_destroy(&v->m);
}

static eddy_status v_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    (void)meta;
    view *v = user;
    uev *e = event;
    pthread_mutex_lock(&v->m);
    if (v->gate_id[0] && strcmp(e->id, v->gate_id) == 0) {
        v->at_gate = true;
        pthread_cond_broadcast(&v->c);
        while (!v->gate_open)
            pthread_cond_wait(&v->c, &v->m);
    }
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
    pthread_cond_broadcast(&v->c);
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

static void wait_at_gate(view *v) {
    pthread_mutex_lock(&v->m);
    while (!v->at_gate)
        pthread_cond_wait(&v->c, &v->m);
    pthread_mutex_unlock(&v->m);
}

static void open_gate(view *v) {
    pthread_mutex_lock(&v->m);
    v->gate_open = true;
    pthread_cond_broadcast(&v->c);
    pthread_mutex_unlock(&v->m);
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

static int seen_route(seen *s, eddy_route r) {
    pthread_mutex_lock(&s->m);
    int k = s->routes[r];
    pthread_mutex_unlock(&s->m);
    return k;
}

/* ---- progress --------------------------------------------------------------------------- */

#define PROG_MAX 4096

typedef struct prog {
    pthread_mutex_t m;
    int n;
    char id[PROG_MAX][24];
    eddy_push_state state[PROG_MAX];
    long long head[PROG_MAX];
    eddy_status why[PROG_MAX];
} prog;

static void on_progress(const eddy_push_progress *p, void *user) {
    prog *g = user;
    pthread_mutex_lock(&g->m);
    if (g->n < PROG_MAX) {
        snprintf(g->id[g->n], sizeof(g->id[0]), "%s", p->id);
        g->state[g->n] = p->state;
        g->head[g->n] = p->head;
        g->why[g->n] = p->failure.status;
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

/* The index of the first / last report for id, -1 if none. */
static int prog_first(prog *g, const char *id, bool last) {
    pthread_mutex_lock(&g->m);
    int at = -1;
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->id[i], id) == 0 && (last || at < 0))
            at = i;
    pthread_mutex_unlock(&g->m);
    return at;
}

/* ---- context ---------------------------------------------------------------------------- */

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    eddy_store *store;
    eddy_checkpoints ckpt;
    eddy_bus *bus;
    eddy_push_sources *ps;
    eddy_domain_feed *feeds[4];
    int nfeeds;
    view v[2];
    seen obs;
    prog pg;
} ctx;

static void setup(ctx *c, const backend *p, const char *prefix) {
    memset(c, 0, sizeof(*c));
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
    cr_assert_eq(eddy_store_open(&c->s, &c->store, &err), EDDY_OK, "%s", err.detail);
    c->ckpt = eddy_store_checkpoints(c->store);
    view_init(&c->v[0]);
    view_init(&c->v[1]);
    pthread_mutex_init(&c->obs.m, NULL);
    pthread_mutex_init(&c->pg.m, NULL);
}

static eddy_domain_feed *new_feed(ctx *c, const eddy_data_reader *reader) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.decode = uev_decode;
    cfg.free_event = uev_free;
    cfg.event_id = uev_id;
    cfg.checkpoints = &c->ckpt;
    cfg.page_size = 8;
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    cfg.reader = reader;
    eddy_domain_feed *f = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_domain_new(c->store, &cfg, &f, &err), EDDY_OK, "%s", err.detail);
    c->feeds[c->nfeeds++] = f;
    return f;
}

static void start_bus(ctx *c) {
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c->s, NULL, 0, &c->bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(c->bus, &err), EDDY_OK, "%s", err.detail);
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
    cr_assert_eq(eddy_push_sources_new(c->bus, &o, &c->ps, &err), EDDY_OK, "%s", err.detail);
}

static eddy_push_source_spec spec_of(const char *id, eddy_domain_feed *f, view *v,
                                     const char *subject, const char *group) {
    eddy_push_source_spec sp;
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
        eddy_bus_stop(c->bus);
    eddy_push_sources_free(c->ps);
    eddy_bus_free(c->bus);
    for (int i = 0; i < c->nfeeds; i++)
        eddy_domain_free(c->feeds[i]);
    eddy_store_close(c->store);
    view_destroy(&c->v[0]);
    view_destroy(&c->v[1]);
    pthread_mutex_destroy(&c->obs.m);
    pthread_mutex_destroy(&c->pg.m);
}

/* Stores an event and publishes it to subject in the same step (subject NULL: store only). */
static void append(ctx *c, const char *id, const char *type, const char *subject) {
    eddy_event *ev = make_event(id, type);
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    cr_assert_eq(eddy_store_append(c->store, "order-1", evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
}

/* Publishes without storing: only the broker has it. */
static void publish(ctx *c, const char *subject, const char *id) {
    eddy_event *ev = make_event(id, "order.placed");
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_publish(c->bus, subject, ev, NULL, 0, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
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
    cr_assert_eq(eddy_bus_consumer_stats(c->bus, name, &cs), EDDY_OK, "%s", name);
    return cs;
}

static long long stream_len(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

/* A positive control: a plain subscription of its own group on the subject, which receives what
 * the source's paused subscription does not read. */
static void control(ctx *c, const char *name, const char *subject, recorder *r) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = subject;
    sp.group = name;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = r;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_subscribe(c->bus, &sp, &err), EDDY_OK, "%s", err.detail);
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
    cr_assert_eq(eddy_push_sources_stats(c->ps, id, &p), EDDY_OK, "%s", id);
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

/* ---- (a) DEFERRED is handed back, DELIVERED acknowledged, nothing lost ------------------ */

ParameterizedTestParameters(push, deferred_is_handed_back_then_delivered_without_loss) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, deferred_is_handed_back_then_delivered_without_loss,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "push-defer");
    /* History from before the source existed: only the replay has it. */
    for (int i = 0; i < 30; i++) {
        char id[16];
        snprintf(id, sizeof(id), "old-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    start_bus(&c);
    eddy_domain_feed *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_BACKGROUND);
    strcpy(c.v[0].gate_id, "old-20"); /* the replay pauses here */
    eddy_push_source_spec sp = spec_of("orders", f, &c.v[0], "orders.events", "orders-view");
    eddy_error err = {0};
    cr_assert_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_OK, "%s", err.detail);
    wait_at_gate(&c.v[0]);
    /* Messages arrive while the replay runs: each is DEFERRED and handed back, again and again
     * (more often than max_deliveries), and none is dead-lettered. */
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    held_cond hc = {&c, "orders", 60};
    cr_assert(eddy_test_wait_until(held_at_least, &hc, 60000));
    cr_expect_eq(status_of(&c, "orders").state, EDDY_PUSH_CATCHING_UP);
    cr_expect_gt(seen_route(&c.obs, EDDY_ROUTE_DEFERRED), 0);
    cr_expect_eq(applies_of(&c.v[0], "live-0"), 0, "not applied while the replay runs");
    cr_expect_eq(pending(&c, "orders.events", "orders-view"), 20, "handed back, not acknowledged");
    cr_expect_eq(dlq_len(&c, "orders-view"), 0);
    open_gate(&c.v[0]);
    /* And more arrive while the catch-up finishes and goes live. */
    for (int i = 20; i < 40; i++) {
        char id[16];
        snprintf(id, sizeof(id), "live-%d", i);
        append(&c, id, "order.placed", "orders.events");
    }
    cr_expect_eq(eddy_push_sources_wait(c.ps, 60000), EDDY_OK);
    cr_expect_eq(status_of(&c, "orders").state, EDDY_PUSH_LIVE);
    view_cond vc = {&c.v[0], 70};
    cr_expect(eddy_test_wait_until(view_has, &vc, 60000), "applied %d of 70", view_count(&c.v[0]));
    pending_cond pc = {&c, "orders.events", "orders-view"};
    cr_expect(eddy_test_wait_until(nothing_pending, &pc, 60000), "acknowledged once DELIVERED");
    eddy_bus_stop(c.bus);
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
    cr_expect_gt(seen_route(&c.obs, EDDY_ROUTE_DELIVERED), 0);
    teardown(&c);
}

/* ---- (b) manual mode ---------------------------------------------------------------------- */

ParameterizedTestParameters(push, manual_mode_withholds_until_start_all) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, manual_mode_withholds_until_start_all, .timeout = 120) {
    ctx c;
    setup(&c, p, "push-manual");
    start_bus(&c);
    eddy_domain_feed *fz = new_feed(&c, NULL);
    eddy_domain_feed *fa = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    /* Published elsewhere, not stored here: go live, so only the broker has the events. */
    eddy_push_source_spec z = spec_of("zeta", fz, &c.v[0], "zeta.events", "zeta-view");
    z.go_live = true;
    eddy_push_source_spec a = spec_of("alpha", fa, &c.v[1], "alpha.events", "alpha-view");
    a.go_live = true;
    eddy_error err = {0};
    cr_assert_eq(eddy_push_sources_add(c.ps, &z, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_push_sources_add(c.ps, &a, &err), EDDY_OK, "%s", err.detail);
    cr_expect_not(eddy_domain_has_projection(fz), "the registration is withheld");
    recorder rz, ra;
    rec_init(&rz);
    rec_init(&ra);
    control(&c, "zeta-control", "zeta.events", &rz);
    control(&c, "alpha-control", "alpha.events", &ra);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        publish(&c, "zeta.events", id);
        snprintf(id, sizeof(id), "a%d", i);
        publish(&c, "alpha.events", id);
    }
    /* Nothing is read before start-all: the sources' subscriptions are paused, and the broker
     * keeps the messages (the control groups received them). */
    cr_assert(rec_wait(&rz, 5, 60000));
    cr_assert(rec_wait(&ra, 5, 60000));
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

    const char **ids = NULL;
    size_t n = 0;
    cr_assert_eq(eddy_push_sources_start_all(c.ps, &ids, &n, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(ids[0], "zeta", "registration order");
    cr_expect_str_eq(ids[1], "alpha");
    cr_expect_null(ids[2]);
    free(ids);
    cr_expect_eq(status_of(&c, "zeta").state, EDDY_PUSH_LIVE);
    cr_expect_eq(status_of(&c, "alpha").state, EDDY_PUSH_LIVE);
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
    ids = NULL;
    n = 7;
    cr_expect_eq(eddy_push_sources_start_all(c.ps, &ids, &n, &err), EDDY_OK);
    cr_expect_eq(n, 0);
    cr_assert_not_null(ids);
    cr_expect_null(ids[0]);
    free(ids);
    /* A source added after start-all waits for the next one, which starts only it. */
    eddy_domain_feed *fm = new_feed(&c, NULL);
    eddy_push_source_spec m = spec_of("mid", fm, &c.v[1], "mid.events", "mid-view");
    m.go_live = true;
    cr_assert_eq(eddy_push_sources_add(c.ps, &m, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(status_of(&c, "mid").state, EDDY_PUSH_NOT_STARTED);
    cr_expect_eq(eddy_push_sources_start_all(c.ps, &ids, &n, &err), EDDY_OK);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(ids[0], "mid");
    free(ids);
    eddy_bus_stop(c.bus);
    cr_expect_eq(dlq_len(&c, "zeta-view"), 0);
    cr_expect_eq(dlq_len(&c, "alpha-view"), 0);
    /* Read after start-all only (a message that arrived while the feed went live was deferred:
     * handed back and read again). */
    cr_expect_geq(stats(&c, "zeta").delivered, 5);
    teardown(&c);
    rec_destroy(&rz);
    rec_destroy(&ra);
}

/* ---- (c) background start: progress, then live; a failure with its reason ---------------- */

ParameterizedTestParameters(push, background_start_reports_progress_and_failure) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, background_start_reports_progress_and_failure, .timeout = 120) {
    ctx c;
    setup(&c, p, "push-bg");
    for (int i = 0; i < 50; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, "order.placed", NULL);
    }
    start_bus(&c);
    eddy_domain_feed *fg = new_feed(&c, NULL);
    eddy_domain_feed *fb = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_BACKGROUND);
    strcpy(c.v[0].gate_id, "e20");
    strcpy(c.v[1].fail_id, "e5");
    eddy_push_source_spec good = spec_of("good", fg, &c.v[0], "good.events", "good-view");
    eddy_push_source_spec bad = spec_of("bad", fb, &c.v[1], "bad.events", "bad-view");
    eddy_error err = {0};
    cr_assert_eq(eddy_push_sources_add(c.ps, &good, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_push_sources_add(c.ps, &bad, &err), EDDY_OK, "%s", err.detail);
    eddy_push_progress st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_NOT_STARTED);
    cr_expect_str_eq(st.id, "good");

    const char **ids = NULL;
    size_t n = 0;
    cr_assert_eq(eddy_push_sources_start_all(c.ps, &ids, &n, &err), EDDY_OK,
                 "the start-up path does not wait for the catch-ups: %s", err.detail);
    cr_expect_eq(n, 2);
    free(ids);
    wait_at_gate(&c.v[0]);
    st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(st.head, 50, "replays up to the head");
    cr_expect_gt(st.position, 0);
    cr_expect_leq(st.position, st.head);
    cr_expect_leq(st.replayed, 20);
    cr_expect(st.eta_seconds != 0, "not done yet");
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
    cr_expect_eq(eddy_push_sources_wait(c.ps, 0), EDDY_ERR_TIMEOUT, "good still catches up");

    open_gate(&c.v[0]);
    cr_expect_eq(eddy_push_sources_wait(c.ps, 60000), EDDY_OK);
    st = status_of(&c, "good");
    cr_expect_eq(st.state, EDDY_PUSH_LIVE);
    cr_expect_eq(st.replayed, 50);
    cr_expect_eq(st.position, 50);
    cr_expect_eq(st.eta_seconds, 0);
    cr_expect_eq(view_count(&c.v[0]), 50);
    int first = prog_first(&c.pg, "good", false), last = prog_first(&c.pg, "good", true);
    cr_assert_geq(first, 0);
    cr_expect_eq(c.pg.state[first], EDDY_PUSH_CATCHING_UP);
    cr_expect_eq(c.pg.state[last], EDDY_PUSH_LIVE);
    /* A failed source stops consuming: the broker keeps its messages (not read, not
     * dead-lettered) for the feed that replaces it; a control group receives them. */
    recorder rb;
    rec_init(&rb);
    control(&c, "bad-control", "bad.events", &rb);
    uint64_t before = stats(&c, "bad").delivered;
    publish(&c, "bad.events", "late-1");
    cr_assert(rec_wait(&rb, 1, 60000));
    settle_a_while(&c);
    cr_expect_eq(stats(&c, "bad").delivered, before, "the failed source reads nothing");
    cr_expect_eq(pending(&c, "bad.events", "bad-view"), 0);
    cr_expect_eq(stream_len(&c, "bad.events"), 1);
    cr_expect_eq(dlq_len(&c, "bad-view"), 0);
    teardown(&c);
    rec_destroy(&rb);
}

/* ---- (d) the model --------------------------------------------------------------------- */

static eddy_event *ev_of(const char *id, const char *type) { return make_event(id, type); }

ParameterizedTestParameters(push, model_accept_accept_or_defer_observer_aggregation) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, model_accept_accept_or_defer_observer_aggregation,
                  .timeout = 60) {
    ctx c;
    setup(&c, p, "push-model");
    eddy_domain_feed *fa = new_feed(&c, NULL);
    eddy_domain_feed *fb = new_feed(&c, NULL);
    eddy_push_observer obs = {observe, &c.obs};
    eddy_push_model *m = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_push_model_new(&obs, eddy_test_log, "model", &m, &err), EDDY_OK);
    cr_assert_eq(eddy_push_model_add(m, fa, &err), EDDY_OK);
    cr_assert_eq(eddy_push_model_add(m, fb, &err), EDDY_OK);
    cr_expect_eq(eddy_push_model_add(m, fa, &err), EDDY_ERR_INVALID_ARGUMENT, "added twice");
    eddy_event *placed = ev_of("p1", "order.placed");
    eddy_event *shipped = ev_of("s1", "order.shipped");
    eddy_route route = EDDY_ROUTE_DELIVERED;

    /* Nothing registered: accept drops, accept-or-defer holds. */
    cr_expect_eq(eddy_push_model_accept(m, placed, NULL), EDDY_OK);
    cr_expect_eq(c.obs.unavailable, 1, "the observer is told");
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed, NULL, &route, &err),
                 EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(err.status, EDDY_ERR_UNAVAILABLE);
    cr_expect_eq(c.obs.unavailable, 2);

    /* A registered but not live: DEFERRED. */
    eddy_filter *fplaced = eddy_filter_type("order.placed");
    eddy_filter *fshipped = eddy_filter_type("order.shipped");
    eddy_projection pa = projection_of(&c.v[0]), pb = projection_of(&c.v[1]);
    cr_assert_eq(eddy_domain_register(fa, "placed-view", &pa, fplaced, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed, NULL, &route, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(route, EDDY_ROUTE_DEFERRED);
    cr_assert_eq(eddy_domain_go_live(fa, "placed-view", NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DELIVERED);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, shipped, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_FILTERED, "A filters it, B has no projection");

    /* Two feeds: B registered, not live. DEFERRED wins over DELIVERED and FILTERED. */
    cr_assert_eq(eddy_domain_register(fb, "shipped-view", &pb, fshipped, &err), EDDY_OK);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, shipped, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DEFERRED, "A filtered, B deferred");
    eddy_event *placed2 = ev_of("p2", "order.placed");
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed2, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DELIVERED, "A delivered, B filtered");
    cr_assert_eq(eddy_domain_go_live(fb, "shipped-view", NULL, &err), EDDY_OK);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, shipped, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DELIVERED, "A filtered, B delivered");
    cr_expect_eq(applies_of(&c.v[0], "p1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p2"), 1);
    cr_expect_eq(applies_of(&c.v[1], "s1"), 1);
    cr_expect_eq(applies_of(&c.v[0], "s1"), 0);

    /* An error of one feed is the model's error. */
    strcpy(c.v[0].fail_id, "p3");
    eddy_event *placed3 = ev_of("p3", "order.placed");
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed3, NULL, &route, &err),
                 EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(err.detail, "rejects p3") != NULL, "%s", err.detail);
    cr_expect_eq(eddy_push_model_accept(m, placed3, NULL), EDDY_OK, "the write path returns");
    cr_expect_eq(c.obs.errors, 2);

    /* An observer that fails changes nothing. */
    int before = c.obs.n;
    c.obs.returns = EDDY_ERR_HANDLER_FAILED;
    eddy_event *placed4 = ev_of("p4", "order.placed");
    cr_expect_eq(eddy_push_model_accept_or_defer(m, placed4, NULL, &route, &err), EDDY_OK);
    cr_expect_eq(route, EDDY_ROUTE_DELIVERED);
    eddy_event *placed5 = ev_of("p5", "order.placed");
    cr_expect_eq(eddy_push_model_accept(m, placed5, NULL), EDDY_OK);
    cr_expect_eq(applies_of(&c.v[0], "p4"), 1);
    cr_expect_eq(applies_of(&c.v[0], "p5"), 1);
    cr_expect_eq(c.obs.n, before + 2, "told each outcome");
    cr_expect_eq(eddy_push_model_accept(NULL, placed5, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_push_model_accept_or_defer(m, NULL, NULL, &route, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);

    eddy_event_free(placed);
    eddy_event_free(placed2);
    eddy_event_free(placed3);
    eddy_event_free(placed4);
    eddy_event_free(placed5);
    eddy_event_free(shipped);
    eddy_filter_free(fplaced);
    eddy_filter_free(fshipped);
    eddy_push_model_free(m);
    teardown(&c);
}

/* ---- (e) an unreadable filter fails the source; it stops consuming ---------------------- */

ParameterizedTestParameters(push, unreadable_filter_fails_the_source_and_hands_back) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, unreadable_filter_fails_the_source_and_hands_back,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "push-unreadable");
    start_bus(&c);
    eddy_domain_feed *f = new_feed(&c, NULL); /* no data reader */
    new_sources(&c, EDDY_PUSH_AUTOMATIC, EDDY_PUSH_FOREGROUND);
    eddy_field gold = eddy_field_string("gold");
    eddy_filter *filter = eddy_filter_data("tier", EDDY_DATA_EQ, &gold);
    eddy_push_source_spec sp = spec_of("tiers", f, &c.v[0], "tier.events", "tier-view");
    sp.filter = filter;
    sp.go_live = true;
    eddy_error err = {0};
    cr_assert_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_OK, "%s", err.detail);
    eddy_filter_free(filter);
    cr_expect_eq(status_of(&c, "tiers").state, EDDY_PUSH_LIVE);
    recorder rt;
    rec_init(&rt);
    control(&c, "tier-control", "tier.events", &rt);
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
    cr_assert(rec_wait(&rt, 3, 60000), "the control group got them");
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
    rec_destroy(&rt);
}

/* ---- refusals --------------------------------------------------------------------------- */

Test(push, bad_specs_are_refused) {
    backend b = {0};
    ctx c;
    setup(&c, &b, "push-bad");
    start_bus(&c);
    eddy_domain_feed *f = new_feed(&c, NULL);
    new_sources(&c, EDDY_PUSH_MANUAL, EDDY_PUSH_FOREGROUND);
    eddy_error err = {0};
    eddy_push_source_spec sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    sp.subject = NULL;
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", NULL);
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of(NULL, f, &c.v[0], "x.events", "x-view");
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    sp.projection.apply = NULL;
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec_of("x", f, &c.v[0], "x.events", "x-view");
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_ERR_INVALID_ARGUMENT, "same id");
    sp = spec_of("y", f, &c.v[0], "bad..subject", "y-view");
    cr_expect_neq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_OK, "the bus refuses it");
    eddy_push_progress pr;
    cr_expect_eq(eddy_push_sources_stats(c.ps, "y", &pr), EDDY_ERR_INVALID_ARGUMENT,
                 "nothing was added");
    cr_expect_eq(eddy_push_sources_stats(c.ps, "nope", &pr), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_push_sources_wait(c.ps, 0), EDDY_OK, "nothing catches up");
    teardown(&c);
}

/* ---- freeing the sources while a background catch-up replays --------------------------- */

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
    eddy_push_sources *ps;
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
    eddy_push_sources_free(fr->ps);
    return NULL;
}

ParameterizedTestParameters(push, free_during_background_catch_up_does_not_fail_the_feed) {
    return cr_make_param_array(backend, backends, 2);
}
ParameterizedTest(backend *p, push, free_during_background_catch_up_does_not_fail_the_feed,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, "push-free-mid");
    enum { N = 400 };
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        append(&c, id, "order.placed", NULL);
    }
    start_bus(&c);
    eddy_domain_feed *f = new_feed(&c, NULL);
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
    cr_assert_eq(eddy_push_sources_new(c.bus, &o, &c.ps, &err), EDDY_OK, "%s", err.detail);
    strcpy(c.v[0].gate_id, "e20"); /* the replay is known to run while the apply waits here */
    eddy_push_source_spec sp = spec_of("freed", f, &c.v[0], "freed.events", "freed-view");
    cr_assert_eq(eddy_push_sources_add(c.ps, &sp, &err), EDDY_OK, "%s", err.detail);
    wait_at_gate(&c.v[0]);
    cr_expect_eq(status_of(&c, "freed").state, EDDY_PUSH_CATCHING_UP);
    cr_expect_not(eddy_domain_ready_for_live_delivery(f), "the replay runs");
    /* The handlers use the sources: stop the bus before freeing them (eddy_push_sources_free). */
    eddy_bus_stop(c.bus);

    /* Free on another thread: it cancels the catch-up and joins its thread, which is inside the
     * projection's apply, so the free can only return once the gate opens. */
    freer fr = {.ps = c.ps, .entered = false};
    pthread_mutex_init(&fr.m, NULL);
    pthread_cond_init(&fr.c, NULL);
    c.ps = NULL;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_main, &fr), 0);
    pthread_mutex_lock(&fr.m);
    while (!fr.entered)
        pthread_cond_wait(&fr.c, &fr.m);
    pthread_mutex_unlock(&fr.m);
    open_gate(&c.v[0]);
    cr_assert_eq(pthread_join(t, NULL), 0, "the free returned and its catch-up thread was joined");
    pthread_cond_destroy(&fr.c);
    pthread_mutex_destroy(&fr.m);

    /* No catch-up runs any more, and the user's feed did not fail. */
    eddy_feed_info info;
    cr_assert_eq(eddy_domain_stats(f, &info), EDDY_OK);
    cr_expect_not(info.catching_up, "the catch-up thread ended before the free returned");
    cr_expect_not(info.failed);
    cr_expect_neq(info.last, EDDY_FEED_FAILED);
    cr_expect_not(eddy_domain_refuses_permanently(f), "a cancel is not the feed's failure");
    eddy_error cause = {0};
    cr_expect_not(eddy_domain_failure(f, &cause), "%s", cause.detail);
    /* The cancel normally lands while the replay runs (the feed then keeps holding); if the
     * replay outran it, the feed went live. Either way it did not fail. */
    bool cancelled = info.last == EDDY_FEED_CANCELLED;
    cr_expect(cancelled || (info.live && info.replayed == N), "last %d, live %d, replayed %llu",
              (int)info.last, (int)info.live, (unsigned long long)info.replayed);
    if (cancelled) {
        cr_expect_not(info.live, "a cancelled catch-up keeps the feed holding");
        cr_expect_lt(view_count(&c.v[0]), N, "stopped mid-replay");
    }
    cr_log_info("push.free_during_background_catch_up (%s): %s after %d of %d events; "
                "errors logged by the sources: %d (%s)",
                p->redis ? "redis" : "memory", cancelled ? "cancelled" : "completed",
                view_count(&c.v[0]), N, el.errors, el.last);

    /* The feed can be caught up again, by the user, and every event reaches the view. */
    cr_expect_eq(eddy_domain_catch_up(f, "freed", NULL, &err), EDDY_OK, "%s", err.detail);
    cr_expect(eddy_domain_ready_for_live_delivery(f));
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
