/* SPDX-License-Identifier: BSD-3-Clause */
/* Retention and clean-up, one table of scenarios on every front end and backend: a paused
 * (lagging) group never loses an unread entry and the stream is trimmed once it caught up; a
 * length limit counts exactly what it dropped; clean-up never removes a consumer with pending
 * entries; a bus without an instance removes its fanout groups when it stops; a dead process's
 * fanout group goes once its lease ended. Conditions are waited for, never timed. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

typedef struct ctx {
    const combo *p;
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
    tbus *b;
} ctx;

static void setup(ctx *c, const combo *p) {
    c->p = p;
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), "ret");
    if (p->backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests";
    c->s.block_ms = 100;
    c->s.discovery_ms = 50;
    c->s.retention_interval_ms = 50;
    c->s.retention_grace_ms = 50;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend == 0 ? "memory" : "redis";
    c->b = NULL;
}

static eddy_subscription_spec spec(const char *name, const char *pattern, eddy_shape shape,
                                   const char *group, recorder *r) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.shape = shape;
    sp.group = group;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = r;
    return sp;
}

static tbus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    st = c->d->start(b, &err);
    cr_assert_eq(st, EDDY_OK, "start: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

static void publish_n(ctx *c, tbus *b, const char *subject, int n) {
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%s-%d", subject, i);
        eddy_event *ev = make_event(id, "t.ret");
        eddy_error err = {0};
        eddy_status st = c->d->publish(b, subject, ev, &err);
        cr_assert_eq(st, EDDY_OK, "publish: %s (%s)", eddy_status_name(st), err.detail);
        eddy_event_free(ev);
    }
}

static eddy_retention_stats stats(ctx *c) {
    eddy_retention_stats st;
    eddy_status rc = c->p->frontend == 0 ? eddy_bus_retention_stats(c->d->native(c->b), &st)
                                         : eddy_rbus_retention_stats(c->d->native(c->b), &st);
    cr_assert_eq(rc, EDDY_OK);
    return st;
}

static long long xlen(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

/* Groups on a subject's stream (0 when the stream is gone). */
static long long ngroups(ctx *c, const char *subject) {
    redisReply *r = raw_cmdf(c->url, "XINFO GROUPS {%s}:s:%s", c->ns, subject);
    long long n = r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : 0;
    freeReplyObject(r);
    return n;
}

/* Does the group have a consumer of that name, and how many entries has it pending? -1: none. */
static long long consumer_pending(ctx *c, const char *subject, const char *group,
                                  const char *name) {
    redisReply *r = raw_cmdf(c->url, "XINFO CONSUMERS {%s}:s:%s %s", c->ns, subject, group);
    long long pending = -1;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *rec = r->element[i];
        bool match = false;
        long long p = 0;
        for (size_t k = 0; k + 1 < rec->elements; k += 2) {
            if (strcmp(rec->element[k]->str, "name") == 0)
                match = strcmp(rec->element[k + 1]->str, name) == 0;
            if (strcmp(rec->element[k]->str, "pending") == 0)
                p = rec->element[k + 1]->integer;
        }
        if (match)
            pending = p;
    }
    freeReplyObject(r);
    return pending;
}

/* Waits for `more` passes after the current count: every decision of those passes is in. */
typedef struct passes_wait {
    ctx *c;
    uint64_t until;
} passes_wait;

static bool passes_done(void *arg) {
    passes_wait *w = arg;
    return stats(w->c).passes >= w->until;
}

static void wait_passes(ctx *c, unsigned more) {
    passes_wait w = {c, stats(c).passes + more};
    cr_assert(eddy_test_wait_until(passes_done, &w, 30000), "no retention pass ran");
}

typedef struct len_wait {
    ctx *c;
    const char *subject;
    long long len;
} len_wait;

static bool len_is(void *arg) {
    len_wait *w = arg;
    return xlen(w->c, w->subject) == w->len;
}

/* The pass that trimmed counts it once its reply is read, a moment after Redis shows the trim. */
static bool trimmed_reaches(void *arg) {
    len_wait *w = arg;
    return stats(w->c).trimmed >= (uint64_t)w->len;
}

static bool groups_gone(void *arg) {
    len_wait *w = arg;
    return ngroups(w->c, w->subject) == w->len;
}

/* ---- safe retention ---------------------------------------------------------------------- */

ParameterizedTestParameters(retention,
                            a_lagging_group_loses_nothing_and_the_stream_is_trimmed_after) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention,
                  a_lagging_group_loses_nothing_and_the_stream_is_trimmed_after, .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder fast, slow;
    rec_init(&fast);
    rec_init(&slow);
    eddy_subscription_spec sp[2] = {spec("fast", "orders.*", EDDY_COMPETING, "fast", &fast),
                                    spec("slow", "orders.*", EDDY_COMPETING, "slow", &slow)};
    sp[1].paused = true;
    c.b = must_bus(&c, sp, 2);
    publish_n(&c, c.b, "orders.created", 40);
    cr_assert(rec_wait(&fast, 40, 30000), "only %d of 40 delivered", rec_count(&fast));
    wait_passes(&c, 3);
    /* The paused group has read nothing: every entry stays, whatever the fast group read. */
    cr_assert_eq(xlen(&c, "orders.created"), 40);
    cr_assert_eq(stats(&c).trimmed, 0);
    eddy_error err = {0};
    cr_assert_eq(c.d->resume(c.b, "slow", &err), EDDY_OK, "%s", err.detail);
    cr_assert(rec_wait(&slow, 40, 30000), "only %d of 40 delivered late", rec_count(&slow));
    for (int i = 0; i < 40; i++) {
        char id[32];
        snprintf(id, sizeof(id), "orders.created-%d", i);
        cr_expect_eq(rec_handled(&slow, id), 1, "%s handled %d times", id, rec_handled(&slow, id));
    }
    /* Caught up and acknowledged: the stream is trimmed to nothing. */
    len_wait w = {&c, "orders.created", 0};
    cr_assert(eddy_test_wait_until(len_is, &w, 30000), "still %lld entries",
              xlen(&c, "orders.created"));
    len_wait counted = {&c, "orders.created", 40};
    eddy_test_wait_until(trimmed_reaches, &counted, 30000);
    cr_expect_eq(stats(&c).trimmed, 40);
    cr_expect_eq(stats(&c).dropped, 0);
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&fast);
    rec_destroy(&slow);
}

/* A length limit drops unread entries of a paused group, and counts exactly those. */
ParameterizedTestParameters(retention, a_length_limit_counts_exactly_what_it_dropped) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, a_length_limit_counts_exactly_what_it_dropped,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    c.s.retention_max_len = 10;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("slow", "metrics", EDDY_COMPETING, "slow", &r);
    sp.paused = true;
    c.b = must_bus(&c, &sp, 1);
    publish_n(&c, c.b, "metrics", 30);
    len_wait w = {&c, "metrics", 10};
    cr_assert(eddy_test_wait_until(len_is, &w, 30000), "still %lld entries", xlen(&c, "metrics"));
    wait_passes(&c, 2);
    eddy_retention_stats st = stats(&c);
    cr_expect_eq(xlen(&c, "metrics"), 10);
    cr_expect_eq(st.trimmed, 20);
    cr_expect_eq(st.dropped, 20, "dropped %llu", (unsigned long long)st.dropped);
    eddy_error err = {0};
    cr_assert_eq(c.d->resume(c.b, "slow", &err), EDDY_OK, "%s", err.detail);
    cr_assert(rec_wait(&r, 10, 30000), "only %d of the 10 kept delivered", rec_count(&r));
    cr_expect_eq(rec_handled(&r, "metrics-29"), 1);
    cr_expect_eq(rec_handled(&r, "metrics-0"), 0);
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&r);
}

/* ---- clean-up ------------------------------------------------------------------------------ */

typedef struct cons_wait {
    ctx *c;
    const char *subject, *group, *name;
} cons_wait;

static bool consumer_gone(void *arg) {
    cons_wait *w = arg;
    return consumer_pending(w->c, w->subject, w->group, w->name) < 0;
}

ParameterizedTestParameters(retention, clean_up_never_removes_a_consumer_with_pending_entries) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, clean_up_never_removes_a_consumer_with_pending_entries,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    c.s.consumer_idle_ms = 1;
    c.s.instance = "live-member";
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("work", "jobs", EDDY_COMPETING, "workers", &r);
    c.b = must_bus(&c, &sp, 1);
    /* A second group with two consumers of no live bus: one holds two entries, one nothing. */
    freeReplyObject(raw_cmdf(c.url, "SADD {%s}:subjects jobs", c.ns));
    freeReplyObject(raw_cmdf(c.url, "XGROUP CREATE {%s}:s:jobs others 0 MKSTREAM", c.ns));
    cr_assert_eq(raw_int(c.url, "XGROUP CREATECONSUMER {%s}:s:jobs others ghost", c.ns), 1);
    cr_assert_eq(raw_int(c.url, "XGROUP CREATECONSUMER {%s}:s:jobs others idle", c.ns), 1);
    freeReplyObject(raw_cmdf(c.url, "XADD {%s}:s:jobs * k v", c.ns));
    freeReplyObject(raw_cmdf(c.url, "XADD {%s}:s:jobs * k v", c.ns));
    freeReplyObject(
        raw_cmdf(c.url, "XREADGROUP GROUP others ghost COUNT 2 STREAMS {%s}:s:jobs >", c.ns));
    cr_assert_eq(consumer_pending(&c, "jobs", "others", "ghost"), 2);
    cons_wait w = {&c, "jobs", "others", "idle"};
    cr_assert(eddy_test_wait_until(consumer_gone, &w, 30000), "the idle consumer is still there");
    wait_passes(&c, 3);
    cr_expect_eq(consumer_pending(&c, "jobs", "others", "ghost"), 2);
    /* The live bus's own consumer (idle between its reads) is kept too: one removal in all. */
    cr_expect_eq(stats(&c).consumers_removed, 1);
    /* And the ghost's entries are not trimmed: the group still needs them. */
    cr_expect_eq(xlen(&c, "jobs"), 2);
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&r);
}

ParameterizedTestParameters(retention, a_bus_without_instance_removes_its_fanout_groups_on_stop) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, a_bus_without_instance_removes_its_fanout_groups_on_stop,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    c.s.retention_interval_ms = 0; /* the stop alone */
    recorder r, named_r;
    rec_init(&r);
    rec_init(&named_r);
    eddy_subscription_spec sp[2] = {spec("f", "ticks.*", EDDY_FANOUT, NULL, &r),
                                    spec("g", "beats", EDDY_FANOUT, NULL, &r)};
    c.b = must_bus(&c, sp, 2);
    c.s.instance = "named";
    eddy_subscription_spec named_sp = spec("f", "beats", EDDY_FANOUT, NULL, &named_r);
    tbus *named = must_bus(&c, &named_sp, 1);
    publish_n(&c, c.b, "ticks.a", 1);
    publish_n(&c, c.b, "ticks.b", 1);
    publish_n(&c, c.b, "beats", 1);
    cr_assert(rec_wait(&r, 3, 30000), "only %d of 3 delivered", rec_count(&r));
    cr_assert(rec_wait(&named_r, 1, 30000));
    cr_assert_eq(ngroups(&c, "ticks.a"), 1);
    cr_assert_eq(ngroups(&c, "beats"), 2);
    c.d->stop(c.b);
    len_wait w[3] = {{&c, "ticks.a", 0}, {&c, "ticks.b", 0}, {&c, "beats", 1}};
    for (int i = 0; i < 3; i++)
        cr_assert(eddy_test_wait_until(groups_gone, &w[i], 30000), "%s has %lld groups",
                  w[i].subject, ngroups(&c, w[i].subject));
    c.d->stop(named); /* a named instance keeps its group: it may come back for it */
    cr_expect_eq(ngroups(&c, "beats"), 1);
    c.d->free(c.b);
    c.d->free(named);
    rec_destroy(&r);
    rec_destroy(&named_r);
}

ParameterizedTestParameters(retention, a_dead_process_s_fanout_group_goes_after_its_lease) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, a_dead_process_s_fanout_group_goes_after_its_lease,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    c.s.lease_ms = 300;
    c.b = must_bus(&c, NULL, 0);
    const char *dead = "i-0123456789abcdef0123456789abcdef";
    const char *live = "i-fedcba9876543210fedcba9876543210";
    /* Two processes' fanout groups, each with a consumer that read an entry: one lease ended,
     * one runs far into the future. */
    freeReplyObject(raw_cmdf(c.url, "SADD {%s}:subjects feed", c.ns));
    freeReplyObject(raw_cmdf(c.url, "XADD {%s}:s:feed * k v", c.ns));
    const char *who[2] = {dead, live};
    for (int i = 0; i < 2; i++) {
        freeReplyObject(raw_cmdf(c.url, "XGROUP CREATE {%s}:s:feed fanout.f.%s 0", c.ns, who[i]));
        freeReplyObject(raw_cmdf(c.url,
                                 "XREADGROUP GROUP fanout.f.%s %s COUNT 1 STREAMS {%s}:s:feed >",
                                 who[i], who[i], c.ns));
    }
    char member[256];
    snprintf(member, sizeof(member), "h\tfanout.f.%s\t%s\tf\tfeed", dead, dead);
    const char *zadd_dead[] = {"ZADD", NULL, "1", member};
    char key[160];
    snprintf(key, sizeof(key), "{%s}:subs", c.ns);
    zadd_dead[1] = key;
    freeReplyObject(raw_cmd(c.url, 4, zadd_dead));
    char live_member[256];
    snprintf(live_member, sizeof(live_member), "h\tfanout.f.%s\t%s\tf\tfeed", live, live);
    const char *zadd_live[] = {"ZADD", key, "99999999999999", live_member};
    freeReplyObject(raw_cmd(c.url, 4, zadd_live));
    len_wait w = {&c, "feed", 1};
    cr_assert(eddy_test_wait_until(groups_gone, &w, 30000), "%lld groups", ngroups(&c, "feed"));
    wait_passes(&c, 3);
    redisReply *g = raw_cmdf(c.url, "XINFO GROUPS {%s}:s:feed", c.ns);
    cr_assert(g->type == REDIS_REPLY_ARRAY && g->elements == 1);
    char want[128];
    snprintf(want, sizeof(want), "fanout.f.%s", live);
    cr_expect_str_eq(g->element[0]->element[1]->str, want);
    freeReplyObject(g);
    cr_expect_eq(stats(&c).groups_removed, 1);
    /* The live group's pending entry keeps the entry. */
    cr_expect_eq(xlen(&c, "feed"), 1);
    c.d->stop(c.b);
    c.d->free(c.b);
}

/* The stop's clean-up never takes the group of the next activation: a bus without an instance
 * stopped and started again at once still gets what is published after the restart. */
ParameterizedTestParameters(retention, a_restart_after_the_stop_clean_up_keeps_delivering) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, a_restart_after_the_stop_clean_up_keeps_delivering,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("f", "pings", EDDY_FANOUT, NULL, &r);
    c.b = must_bus(&c, &sp, 1);
    publish_n(&c, c.b, "pings", 1);
    cr_assert(rec_wait(&r, 1, 30000));
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(c.d->stop(c.b), EDDY_OK);
        eddy_error err = {0};
        eddy_status st = c.d->start(c.b, &err);
        cr_assert_eq(st, EDDY_OK, "start: %s (%s)", eddy_status_name(st), err.detail);
        char id[32];
        snprintf(id, sizeof(id), "after-%d", round);
        eddy_event *ev = make_event(id, "t.ret");
        cr_assert_eq(c.d->publish(c.b, "pings", ev, &err), EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
        cr_assert(rec_wait(&r, 2 + round, 30000), "%s not delivered after restart %d", id, round);
    }
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&r);
}

/* ---- nothing left behind ------------------------------------------------------------------- */

/* Consumers of a group (0 when the group or its stream is gone). */
static long long nconsumers(ctx *c, const char *subject, const char *group) {
    redisReply *r = raw_cmdf(c->url, "XINFO CONSUMERS {%s}:s:%s %s", c->ns, subject, group);
    long long n = r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : 0;
    freeReplyObject(r);
    return n;
}

typedef struct left_wait {
    ctx *c;
} left_wait;

static bool nothing_left(void *arg) {
    left_wait *w = arg;
    return ngroups(w->c, "only.f") == 0 && nconsumers(w->c, "only.c", "w") == 0;
}

#define SHORT_LIVED 300
#define CRASHED 20

/* Many short-lived buses (random instances) that only subscribed, to a fanout and a competing
 * subscription of their own subjects (nothing is ever published there), and fanout groups left
 * by processes that died before their first read (no consumer, no lease): after the clean-up
 * period (a few passes past lease_ms) no fanout group and no consumer of theirs is left. The
 * competing group itself is the service's and stays. */
ParameterizedTestParameters(retention, short_lived_subscribe_only_buses_leave_nothing) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, short_lived_subscribe_only_buses_leave_nothing,
                  .timeout = 600) {
    ctx c;
    setup(&c, p);
    c.s.lease_ms = 300;
    c.s.consumer_idle_ms = 600000; /* a named consumer would stay: these are random ones */
    /* One long-lived bus of the namespace runs the passes (and keeps memory://'s engine). */
    c.b = must_bus(&c, NULL, 0);
    c.s.retention_interval_ms = 0; /* the short-lived buses hold no pass */
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp[2] = {spec("f", "only.f", EDDY_FANOUT, NULL, &r),
                                    spec("c", "only.c", EDDY_COMPETING, "w", &r)};
    for (int i = 0; i < SHORT_LIVED; i++) {
        tbus *b = must_bus(&c, sp, 2);
        c.d->stop(b);
        c.d->free(b);
    }
    /* The stop-time clean-up found their fanout groups: the subject is in the subject set. */
    cr_expect_eq(raw_int(c.url, "SISMEMBER {%s}:subjects only.f", c.ns), 1);
    cr_expect_eq(raw_int(c.url, "SISMEMBER {%s}:subjects only.c", c.ns), 1);
    len_wait none = {&c, "only.f", 0};
    cr_expect(eddy_test_wait_until(groups_gone, &none, 30000), "the stops left %lld fanout groups",
              ngroups(&c, "only.f"));
    for (int i = 0; i < CRASHED; i++)
        freeReplyObject(raw_cmdf(c.url, "XGROUP CREATE {%s}:s:only.f fanout.f.i-%032x $", c.ns,
                                 (unsigned)i + 1));
    cr_assert_eq(ngroups(&c, "only.f"), CRASHED);
    left_wait w = {&c};
    cr_expect(eddy_test_wait_until(nothing_left, &w, 60000),
              "left: %lld fanout groups, %lld consumers", ngroups(&c, "only.f"),
              nconsumers(&c, "only.c", "w"));
    eddy_retention_stats st = stats(&c);
    /* The crashed ones at least (a stop's own clean-up may have been beaten to its group). */
    cr_expect_geq(st.groups_removed, CRASHED);
    cr_expect_eq(ngroups(&c, "only.c"), 1);
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&r);
}

typedef struct group_wait {
    ctx *c;
    const char *subject, *group;
} group_wait;

static bool has_group(ctx *c, const char *subject, const char *group) {
    redisReply *r = raw_cmdf(c->url, "XINFO GROUPS {%s}:s:%s", c->ns, subject);
    bool found = false;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        found |= strcmp(r->element[i]->element[1]->str, group) == 0;
    freeReplyObject(r);
    return found;
}

static bool group_gone(void *arg) {
    group_wait *w = arg;
    return !has_group(w->c, w->subject, w->group);
}

/* A named instance's fanout group is kept at its stop (it may come back for it) and removed
 * by the pass once no live bus holds it and it has been idle longer than consumer_idle_ms; a
 * live bus's group (even paused, even idle that long) stays. */
ParameterizedTestParameters(retention, a_named_instance_s_fanout_group_goes_after_consumer_idle) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, retention, a_named_instance_s_fanout_group_goes_after_consumer_idle,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    c.s.consumer_idle_ms = 1500;
    recorder r;
    rec_init(&r);
    c.s.instance = "gone";
    eddy_subscription_spec sp = spec("f", "nm", EDDY_FANOUT, NULL, &r);
    tbus *gone = must_bus(&c, &sp, 1);
    c.d->stop(gone);
    cr_expect(has_group(&c, "nm", "fanout.f.gone"), "kept at the stop");
    c.s.instance = "stays";
    eddy_subscription_spec paused = sp;
    paused.paused = true;
    c.b = must_bus(&c, &paused, 1);
    /* A group made by a process that died before reading (no consumer, no lease) goes too. */
    freeReplyObject(raw_cmdf(c.url, "XGROUP CREATE {%s}:s:nm fanout.f.never $", c.ns));
    group_wait w[2] = {{&c, "nm", "fanout.f.gone"}, {&c, "nm", "fanout.f.never"}};
    for (int i = 0; i < 2; i++)
        cr_expect(eddy_test_wait_until(group_gone, &w[i], 60000), "%s is still there", w[i].group);
    wait_passes(&c, 3);
    cr_expect(has_group(&c, "nm", "fanout.f.stays"), "a live (paused) bus's group was removed");
    cr_expect_eq(stats(&c).groups_removed, 2);
    c.d->free(gone);
    c.d->stop(c.b);
    c.d->free(c.b);
    rec_destroy(&r);
}
