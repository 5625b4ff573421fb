/* SPDX-License-Identifier: BSD-3-Clause */
/* Publish/subscribe behaviour, one table of scenarios run on every front end and backend:
 * competing and fanout delivery, acknowledgement after success, redelivery, dead letters,
 * malformed entries, hand-backs (EDDY_ERR_UNAVAILABLE), pattern subscriptions on brand-new
 * subjects, recovery of a consumer's own pending entries, stop while blocked, bad input, and
 * pausing and resuming a subscription. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bus/wakeup.h"
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
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), "bus");
    if (p->backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests";
    c->s.block_ms = 200;
    c->s.redelivery_idle_ms = 100;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend == 0 ? "memory" : "redis";
}

static eddy_subscription_spec spec(const char *name, const char *pattern, eddy_shape shape,
                                   const char *group, eddy_delivery_mode mode, recorder *r) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = name;
    sp.pattern = pattern;
    sp.shape = shape;
    sp.group = group;
    sp.delivery = mode;
    sp.handler = rec_handler;
    sp.user = r;
    return sp;
}

static tbus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

static void must_start(ctx *c, tbus *b) {
    eddy_error err = {0};
    eddy_status st = c->d->start(b, &err);
    cr_assert_eq(st, EDDY_OK, "start: %s (%s)", eddy_status_name(st), err.detail);
}

static void must_publish(ctx *c, tbus *b, const char *subject, const char *id, const char *type) {
    eddy_event *ev = make_event(id, type);
    eddy_error err = {0};
    eddy_status st = c->d->publish(b, subject, ev, &err);
    cr_assert_eq(st, EDDY_OK, "publish %s: %s (%s)", id, eddy_status_name(st), err.detail);
    eddy_event_free(ev);
}

static long long pending_count(ctx *c, const char *subject, const char *group) {
    redisReply *r = raw_cmdf(c->url, "XPENDING {%s}:s:%s %s", c->ns, subject, group);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;
    freeReplyObject(r);
    return n;
}

static long long dlq_len(ctx *c, const char *group) {
    return raw_int(c->url, "XLEN {%s}:dlq:%s", c->ns, group);
}

typedef struct dlq_wait {
    ctx *c;
    const char *group;
    long long n;
} dlq_wait;

static bool dlq_has(void *arg) {
    dlq_wait *w = arg;
    return dlq_len(w->c, w->group) >= w->n;
}

/* A bus's dead letters of group "g" counted by subscription "s" and nothing pending in "g". */
typedef struct settled_wait {
    ctx *c;
    tbus *b;
    dlq_wait *dlq;
} settled_wait;

static bool dead_letters_settled(void *arg) {
    settled_wait *w = arg;
    eddy_consumer_stats st;
    return w->c->d->stats(w->b, "s", &st) == EDDY_OK && (long long)st.dead_lettered >= w->dlq->n &&
           pending_count(w->c, "raw", w->dlq->group) == 0;
}

/* The value of field `name` in the first dead letter of `group`, copied into out. */
static void dlq_field(ctx *c, const char *group, const char *name, char *out, size_t size) {
    redisReply *r = raw_cmdf(c->url, "XRANGE {%s}:dlq:%s - + COUNT 1", c->ns, group);
    out[0] = '\0';
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    redisReply *fields = r->element[0]->element[1];
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (strcmp(fields->element[i]->str, name) == 0)
            snprintf(out, size, "%s", fields->element[i + 1]->str);
    freeReplyObject(r);
}

ParameterizedTestParameters(bus, competing_acknowledges_after_success) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, competing_acknowledges_after_success, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp =
        spec("orders", "orders.created", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    char id[32];
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        must_publish(&c, b, "orders.created", id, "t.created");
    }
    cr_assert(rec_wait(&r, 20, 20000), "only %d of 20 delivered", rec_count(&r));
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        cr_expect_eq(rec_handled(&r, id), 1, "%s handled %d times", id, rec_handled(&r, id));
    }
    cr_assert_eq(c.d->stop(b), EDDY_OK); /* stop sends the last acknowledgements */
    cr_expect_eq(pending_count(&c, "orders.created", "g"), 0);
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "orders", &st), EDDY_OK);
    cr_expect_eq(st.delivered, 20);
    cr_expect_eq(st.handled, 20);
    cr_expect_eq(st.failed, 0);
    cr_expect_eq(c.d->stats(b, "nope", &st), EDDY_ERR_INVALID_ARGUMENT);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, two_competing_members_share_without_duplicates) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, two_competing_members_share_without_duplicates, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp =
        spec("work", "jobs.>", EDDY_COMPETING, "workers", EDDY_AT_LEAST_ONCE, &r);
    c.s.instance = "member-a";
    tbus *a = must_bus(&c, &sp, 1);
    c.s.instance = "member-b";
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, a);
    must_start(&c, b);
    char id[32];
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof(id), "j%d", i);
        must_publish(&c, i % 2 ? a : b, i % 3 ? "jobs.small" : "jobs.big", id, "t.job");
    }
    cr_assert(rec_wait(&r, 300, 30000), "only %d of 300 delivered", rec_count(&r));
    c.d->stop(a);
    c.d->stop(b);
    cr_expect_eq(rec_count(&r), 300);
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof(id), "j%d", i);
        cr_expect_eq(rec_seen(&r, id), 1, "%s seen %d times", id, rec_seen(&r, id));
    }
    c.d->free(a);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, fanout_delivers_to_every_subscriber_after_it_subscribed) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, fanout_delivers_to_every_subscriber_after_it_subscribed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder ra, rb;
    rec_init(&ra);
    rec_init(&rb);
    tbus *pub = must_bus(&c, NULL, 0);
    must_publish(&c, pub, "news", "before", "t.news");
    eddy_subscription_spec sa = spec("fa", "news", EDDY_FANOUT, NULL, EDDY_AT_LEAST_ONCE, &ra);
    eddy_subscription_spec sb = spec("fb", "news", EDDY_FANOUT, NULL, EDDY_AT_MOST_ONCE, &rb);
    tbus *a = must_bus(&c, &sa, 1);
    tbus *b = must_bus(&c, &sb, 1);
    must_start(&c, a);
    must_start(&c, b);
    must_publish(&c, pub, "news", "after1", "t.news");
    must_publish(&c, pub, "news", "after2", "t.news");
    cr_assert(rec_wait(&ra, 2, 20000));
    cr_assert(rec_wait(&rb, 2, 20000));
    c.d->stop(a);
    c.d->stop(b);
    cr_expect_eq(rec_seen(&ra, "after1") + rec_seen(&ra, "after2"), 2);
    cr_expect_eq(rec_seen(&rb, "after1") + rec_seen(&rb, "after2"), 2);
    cr_expect_eq(rec_seen(&ra, "before") + rec_seen(&rb, "before"), 0,
                 "history before the subscription was replayed");
    c.d->free(a);
    c.d->free(b);
    c.d->free(pub);
    rec_destroy(&ra);
    rec_destroy(&rb);
}

ParameterizedTestParameters(bus, failed_handler_gets_redelivered_until_success) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, failed_handler_gets_redelivered_until_success, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    r.fail_times = 2;
    eddy_subscription_spec sp = spec("s", "retry.me", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "retry.me", "x", "t.x");
    cr_assert(rec_wait(&r, 3, 20000), "only %d deliveries", rec_count(&r));
    c.d->stop(b);
    cr_expect_eq(rec_count(&r), 3);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(r.entries[i].attempt, (unsigned)i + 1);
    cr_expect_eq(rec_handled(&r, "x"), 1);
    eddy_consumer_stats st;
    c.d->stats(b, "s", &st);
    cr_expect_eq(st.failed, 2);
    cr_expect_eq(st.handled, 1);
    cr_expect_eq(st.redelivered, 2);
    cr_expect_eq(pending_count(&c, "retry.me", "g"), 0);
    c.d->free(b);
    rec_destroy(&r);
}

/* A scripted handler for hand-backs: the first `hand_backs` calls hand the message back
 * (EDDY_ERR_UNAVAILABLE), the next `failures` fail (-1: every later call), the rest succeed.
 * With `pending` it returns EDDY_PENDING and gives its outcome to eddy_delivery_finish. */
typedef struct handback {
    pthread_mutex_t lock;
    int hand_backs;
    int failures;
    bool pending;
    int calls, ok;
    unsigned attempts[256];
} handback;

static eddy_status handback_handler(eddy_delivery *d, void *user) {
    handback *h = user;
    pthread_mutex_lock(&h->lock);
    int call = h->calls++;
    if (call < 256)
        h->attempts[call] = eddy_delivery_attempt(d);
    eddy_status st = EDDY_OK;
    if (call < h->hand_backs)
        st = EDDY_ERR_UNAVAILABLE;
    else if (h->failures < 0 || call < h->hand_backs + h->failures)
        st = EDDY_ERR_HANDLER_FAILED;
    else
        h->ok++;
    pthread_mutex_unlock(&h->lock);
    if (!h->pending)
        return st;
    eddy_delivery_finish(d, st);
    return EDDY_PENDING;
}

static bool handback_ok(void *arg) {
    handback *h = arg;
    pthread_mutex_lock(&h->lock);
    bool done = h->ok > 0;
    pthread_mutex_unlock(&h->lock);
    return done;
}

static void handback_then_ok(const combo *p, bool pending) {
    ctx c;
    setup(&c, p);
    c.s.max_deliveries = 2;
    c.s.redelivery_idle_ms = 100;
    handback h = {.hand_backs = 5, .pending = pending};
    pthread_mutex_init(&h.lock, NULL);
    eddy_subscription_spec sp = spec("s", "not.yet", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, NULL);
    sp.handler = handback_handler;
    sp.user = &h;
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "not.yet", "early", "t.x");
    cr_assert(eddy_test_wait_until(handback_ok, &h, 30000), "never handled");
    cr_assert_eq(c.d->stop(b), EDDY_OK); /* sends the acknowledgement */
    pthread_mutex_lock(&h.lock);
    cr_expect_eq(h.calls, 6, "handed back 5 times, then handled once: %d calls", h.calls);
    for (int i = 0; i < h.calls && i < 256; i++)
        cr_expect_eq(h.attempts[i], 1, "call %d: a hand-back is not an attempt, got %u", i,
                     h.attempts[i]);
    pthread_mutex_unlock(&h.lock);
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "s", &st), EDDY_OK);
    cr_expect_eq(st.held, 5);
    cr_expect_eq(st.failed, 0);
    cr_expect_eq(st.handled, 1);
    cr_expect_eq(st.delivered, 6);
    cr_expect_eq(st.dead_lettered, 0);
    cr_expect_eq(dlq_len(&c, "g"), 0, "a hand-back must never dead-letter");
    cr_expect_eq(pending_count(&c, "not.yet", "g"), 0);
    c.d->free(b);
    pthread_mutex_destroy(&h.lock);
}

ParameterizedTestParameters(bus, hand_back_comes_again_without_counting_an_attempt) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
/* More hand-backs than max_deliveries, then success: handled once, never dead-lettered. */
ParameterizedTest(combo *p, bus, hand_back_comes_again_without_counting_an_attempt, .timeout = 60) {
    handback_then_ok(p, false);
}

ParameterizedTestParameters(bus, hand_back_through_delivery_finish) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, hand_back_through_delivery_finish, .timeout = 60) {
    handback_then_ok(p, true);
}

/* A handler that outlives redelivery_idle_ms may find its entry claimed by another consumer;
 * handing it back then must not take it back from that consumer. The handler has the entry
 * claimed by "other" itself (after a pause, so that claim comes well after the delivery), then
 * hands it back: the entry stays other's. */
typedef struct stolen {
    ctx *c;
    atomic_int calls;
    atomic_int claimed;
} stolen;

static eddy_status steal_then_hand_back(eddy_delivery *d, void *user) {
    stolen *s = user;
    if (atomic_fetch_add(&s->calls, 1) == 0) {
        struct timespec pause = {0, 50 * 1000000L};
        nanosleep(&pause, NULL);
        redisReply *r = raw_cmdf(s->c->url, "XCLAIM {%s}:s:steal.me g other 0 %s", s->c->ns,
                                 eddy_delivery_entry_id(d));
        atomic_store(&s->claimed, r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        freeReplyObject(r);
    }
    return EDDY_ERR_UNAVAILABLE;
}

static bool one_held(void *arg) {
    void **a = arg;
    eddy_consumer_stats st;
    return ((ctx *)a[0])->d->stats(a[1], "s", &st) == EDDY_OK && st.held >= 1;
}

ParameterizedTestParameters(bus, hand_back_leaves_an_entry_another_consumer_claimed) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, hand_back_leaves_an_entry_another_consumer_claimed,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.redelivery_idle_ms = 60000; /* nothing is claimed again during the test */
    stolen s = {.c = &c};
    eddy_subscription_spec sp =
        spec("s", "steal.me", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, NULL);
    sp.handler = steal_then_hand_back;
    sp.user = &s;
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "steal.me", "e1", "t.x");
    void *arg[2] = {&c, b};
    cr_assert(eddy_test_wait_until(one_held, arg, 30000), "never handed back");
    cr_assert_eq(c.d->stop(b), EDDY_OK); /* the hand-back's XCLAIM has been answered */
    cr_assert(atomic_load(&s.claimed), "the test's own claim failed");
    redisReply *r = raw_cmdf(c.url, "XPENDING {%s}:s:steal.me g - + 10", c.ns);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 1, "one pending entry expected");
    cr_expect_str_eq(r->element[0]->element[1]->str, "other", "the hand-back took the entry back");
    cr_expect_eq(r->element[0]->element[3]->integer, 2, "delivered to us, then claimed by other");
    freeReplyObject(r);
    cr_expect_eq(atomic_load(&s.calls), 1);
    c.d->free(b);
}

ParameterizedTestParameters(bus, failures_after_hand_backs_still_dead_letter) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
/* Hand-backs do not count, failures still do: 3 hand-backs, then failures only; with
 * max_deliveries 2 the entry is dead-lettered after its second failed attempt. */
ParameterizedTest(combo *p, bus, failures_after_hand_backs_still_dead_letter, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.max_deliveries = 2;
    c.s.redelivery_idle_ms = 100;
    handback h = {.hand_backs = 3, .failures = -1};
    pthread_mutex_init(&h.lock, NULL);
    eddy_subscription_spec sp = spec("s", "bad.one", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, NULL);
    sp.handler = handback_handler;
    sp.user = &h;
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "bad.one", "bad", "t.x");
    dlq_wait w = {&c, "g", 1};
    cr_assert(eddy_test_wait_until(dlq_has, &w, 30000), "nothing dead-lettered");
    cr_assert_eq(c.d->stop(b), EDDY_OK);
    pthread_mutex_lock(&h.lock);
    cr_expect_eq(h.calls, 5, "3 hand-backs and 2 failed attempts: %d calls", h.calls);
    static const unsigned want[] = {1, 1, 1, 1, 2};
    for (int i = 0; i < h.calls && i < 5; i++)
        cr_expect_eq(h.attempts[i], want[i], "call %d: attempt %u", i, h.attempts[i]);
    pthread_mutex_unlock(&h.lock);
    char v[64];
    dlq_field(&c, "g", "_dlq_reason", v, sizeof(v));
    cr_expect_str_eq(v, "max_deliveries");
    dlq_field(&c, "g", "_dlq_deliveries", v, sizeof(v));
    cr_expect_str_eq(v, "2");
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "s", &st), EDDY_OK);
    cr_expect_eq(st.held, 3);
    cr_expect_eq(st.failed, 2);
    cr_expect_eq(st.dead_lettered, 1);
    cr_expect_eq(pending_count(&c, "bad.one", "g"), 0);
    c.d->free(b);
    pthread_mutex_destroy(&h.lock);
}

static bool poison_done(recorder *r, void *arg) {
    (void)arg;
    int ok = 0;
    for (int i = 0; i < r->n; i++)
        ok += r->entries[i].result == EDDY_OK;
    return ok >= 5;
}

ParameterizedTestParameters(bus, poison_message_dead_lettered_after_max_deliveries) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, poison_message_dead_lettered_after_max_deliveries, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.max_deliveries = 3;
    recorder r;
    rec_init(&r);
    r.poison_type = "t.poison";
    eddy_subscription_spec sp = spec("s", "mixed", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "mixed", "poison", "t.poison");
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "ok%d", i);
        must_publish(&c, b, "mixed", id, "t.ok");
    }
    cr_assert(rec_wait_for(&r, poison_done, NULL, 20000), "other messages stopped flowing");
    dlq_wait w = {&c, "g", 1};
    cr_assert(eddy_test_wait_until(dlq_has, &w, 20000), "nothing dead-lettered");
    c.d->stop(b);
    cr_expect_eq(rec_seen(&r, "poison"), 3, "poison delivered %d times", rec_seen(&r, "poison"));
    cr_expect_eq(dlq_len(&c, "g"), 1);
    char v[64];
    dlq_field(&c, "g", "_dlq_reason", v, sizeof(v));
    cr_expect_str_eq(v, "max_deliveries");
    dlq_field(&c, "g", "_dlq_deliveries", v, sizeof(v));
    cr_expect_str_eq(v, "3");
    dlq_field(&c, "g", "_dlq_subject", v, sizeof(v));
    cr_expect_str_eq(v, "mixed");
    dlq_field(&c, "g", "id", v, sizeof(v));
    cr_expect_str_eq(v, "poison", "the original fields travel with the dead letter");
    eddy_consumer_stats st;
    c.d->stats(b, "s", &st);
    cr_expect_eq(st.dead_lettered, 1);
    cr_expect_eq(st.malformed, 0);
    cr_expect_eq(pending_count(&c, "mixed", "g"), 0);
    c.d->free(b);
    rec_destroy(&r);
}

typedef struct stats_dead {
    ctx *c;
    tbus *b;
    const char *sub;
} stats_dead;

static bool dead_lettered_counted(void *arg) {
    stats_dead *w = arg;
    eddy_consumer_stats st;
    return w->c->d->stats(w->b, w->sub, &st) == EDDY_OK && st.dead_lettered >= 1;
}

static bool seen_4(recorder *r, void *arg) { /* called with r->lock held */
    (void)arg;
    return r->n >= 4;
}

/* Redelivery backoff: each failed delivery waits longer than the one before (40, 320, 2560 ms),
 * all far below redelivery_idle_ms, which without backoff would separate them. Each wait is
 * checked against its backoff from below, and against the wait before it: a factor of 8 puts
 * them so far apart that a loaded machine, which only lengthens a wait, cannot make one look
 * shorter than the one before, while a backoff that does not grow (a constant wait) fails. */
ParameterizedTestParameters(bus, failed_deliveries_back_off_growing_per_attempt) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, failed_deliveries_back_off_growing_per_attempt, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.redelivery_idle_ms = 20000;
    c.s.redelivery_backoff_ms = 40;
    c.s.redelivery_backoff_factor = 8;
    c.s.redelivery_backoff_max_ms = 3000; /* the dead letter comes 3 s after the 4th failure */
    c.s.max_deliveries = 4;
    recorder r;
    rec_init(&r);
    r.poison_type = "t.poison";
    eddy_subscription_spec sp = spec("s", "jobs", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "jobs", "poison", "t.poison");
    cr_assert(rec_wait_for(&r, seen_4, NULL, 15000), "%d deliveries only: no backoff?",
              rec_count(&r));
    long long at[4];
    int k = 0;
    pthread_mutex_lock(&r.lock);
    for (int i = 0; i < r.n && k < 4; i++)
        if (strcmp(r.entries[i].event_id, "poison") == 0) {
            cr_expect_eq(r.entries[i].attempt, (unsigned)k + 1);
            at[k++] = r.entries[i].at_ms;
        }
    pthread_mutex_unlock(&r.lock);
    /* Each wait is at least its backoff (less 10 ms of rounding) and longer than the one
     * before. */
    long long gap[3] = {at[1] - at[0], at[2] - at[1], at[3] - at[2]};
    long long want = 40;
    for (int i = 0; i < 3; i++, want *= 8) {
        cr_expect_geq(gap[i], want - 10, "wait %d: %lld ms, backoff %lld ms", i + 1, gap[i], want);
        if (i > 0)
            cr_expect_gt(gap[i], gap[i - 1], "wait %d (%lld ms) not longer than wait %d (%lld ms)",
                         i + 1, gap[i], i, gap[i - 1]);
    }
    dlq_wait w = {&c, "g", 1};
    cr_assert(eddy_test_wait_until(dlq_has, &w, 20000), "not dead-lettered after its backoff");
    /* The dead letter is in the stream a moment before its transaction's reply is counted. */
    stats_dead w2 = {&c, b, "s"};
    cr_expect(eddy_test_wait_until(dead_lettered_counted, &w2, 20000), "not counted");
    eddy_consumer_stats st;
    c.d->stats(b, "s", &st);
    cr_expect_eq(st.failed, 4);
    cr_expect_eq(st.dead_lettered, 1);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, malformed_and_oversized_entries_go_to_dead_letters) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, malformed_and_oversized_entries_go_to_dead_letters,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.max_event_size = 300;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "raw", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:raw", c.ns);
    redisReply *x = raw_cmdf(c.url, "XADD %s * foo bar", key);
    cr_assert_eq(x->type, REDIS_REPLY_STRING);
    freeReplyObject(x);
    char big[400];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    const char *argv[] = {"XADD",   key,  "*",    "specversion", "1.0",  "id", "big",
                          "source", "/t", "type", "t.big",       "data", big};
    redisReply *bx = raw_cmd(c.url, 13, argv);
    cr_assert_eq(bx->type, REDIS_REPLY_STRING, "raw XADD failed");
    freeReplyObject(bx);
    must_publish(&c, b, "raw", "fine", "t.fine");
    cr_assert(rec_wait(&r, 1, 20000));
    dlq_wait w = {&c, "g", 2};
    cr_assert(eddy_test_wait_until(dlq_has, &w, 20000), "dead letters: %lld", dlq_len(&c, "g"));
    /* The dead letters are in Redis before the bus has read the replies that count them, and
     * the acknowledgement of "fine" may still be on its way: wait for both before stopping. A
     * stop sends what is settled, it does not wait for its replies (with shared reads the
     * connection is then closed, and a reply not read by then is not counted). */
    settled_wait sw = {&c, b, &w};
    cr_expect(eddy_test_wait_until(dead_letters_settled, &sw, 20000),
              "counted and acknowledged (front end %d, backend %d)", p->frontend, p->backend);
    c.d->stop(b);
    cr_expect_eq(rec_count(&r), 1);
    cr_expect_eq(rec_handled(&r, "fine"), 1);
    redisReply *all = raw_cmdf(c.url, "XRANGE {%s}:dlq:g - +", c.ns);
    cr_assert_eq(all->elements, 2);
    int malformed = 0, too_large = 0;
    for (size_t i = 0; i < all->elements; i++) {
        redisReply *f = all->element[i]->element[1];
        for (size_t j = 0; j + 1 < f->elements; j += 2)
            if (strcmp(f->element[j]->str, "_dlq_reason") == 0) {
                malformed += strcmp(f->element[j + 1]->str, "malformed") == 0;
                too_large += strcmp(f->element[j + 1]->str, "too_large") == 0;
            }
    }
    freeReplyObject(all);
    cr_expect_eq(malformed, 1);
    cr_expect_eq(too_large, 1);
    eddy_consumer_stats st;
    c.d->stats(b, "s", &st);
    cr_expect_eq(st.malformed, 2);
    cr_expect_eq(st.dead_lettered, 2);
    cr_expect_eq(pending_count(&c, "raw", "g"), 0);
    /* Publishing an oversized event is refused before anything is sent. */
    eddy_event *ev = make_event("huge", "t.big");
    cr_assert_eq(eddy_event_set_data(ev, big, strlen(big)), EDDY_OK);
    eddy_error err = {0};
    cr_expect_eq(c.d->publish(b, "raw", ev, &err), EDDY_ERR_TOO_LARGE);
    eddy_event_free(ev);
    c.d->free(b);
    rec_destroy(&r);
}

/* Entries other producers write: an attribute that is not a CloudEvents String (a newline in
 * the id) is malformed and dead-lettered; an extension name over the 20 characters the spec
 * recommends, and a typed extension field, are delivered. Publishing such a string is refused
 * before anything is sent, naming the attribute and the byte. */
ParameterizedTestParameters(bus, foreign_entries_and_the_string_type) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, foreign_entries_and_the_string_type, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "foreign", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:foreign", c.ns);
    const char *bad[] = {"XADD",        key,      "*",  "specversion", "1.0",      "id",
                         "line\nbreak", "source", "/t", "type",        "t.foreign"};
    const char *long_name[] = {"XADD", key,    "*",         "specversion",
                               "1.0",  "id",   "long-name", "source",
                               "/t",   "type", "t.foreign", "x-averyveryverylongextensionname",
                               "v"};
    const char *typed[] = {"XADD",   key,  "*",    "specversion", "1.0",         "id", "typed",
                           "source", "/t", "type", "t.foreign",   "x-n:integer", "5"};
    redisReply *x = raw_cmd(c.url, 11, bad);
    cr_assert_eq(x->type, REDIS_REPLY_STRING, "raw XADD failed");
    freeReplyObject(x);
    x = raw_cmd(c.url, 13, long_name);
    cr_assert_eq(x->type, REDIS_REPLY_STRING, "raw XADD failed");
    freeReplyObject(x);
    x = raw_cmd(c.url, 13, typed);
    cr_assert_eq(x->type, REDIS_REPLY_STRING, "raw XADD failed");
    freeReplyObject(x);
    cr_assert(rec_wait(&r, 2, 20000));
    dlq_wait w = {&c, "g", 1};
    cr_assert(eddy_test_wait_until(dlq_has, &w, 20000), "dead letters: %lld", dlq_len(&c, "g"));
    c.d->stop(b);
    cr_expect_eq(rec_handled(&r, "long-name"), 1);
    cr_expect_eq(rec_handled(&r, "typed"), 1);
    cr_expect_eq(rec_count(&r), 2);
    redisReply *all = raw_cmdf(c.url, "XRANGE {%s}:dlq:g - +", c.ns);
    cr_assert_eq(all->elements, 1);
    redisReply *f = all->element[0]->element[1];
    bool malformed = false;
    for (size_t j = 0; j + 1 < f->elements; j += 2)
        if (strcmp(f->element[j]->str, "_dlq_reason") == 0)
            malformed = strcmp(f->element[j + 1]->str, "malformed") == 0;
    freeReplyObject(all);
    cr_expect(malformed);
    eddy_event *ev = make_event("tab\there", "t.foreign");
    eddy_error err = {0};
    cr_expect_eq(c.d->publish(b, "foreign", ev, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(
        strstr(err.detail, "id: not a CloudEvents String: control character U+0009 at byte 3"),
        "%s", err.detail);
    eddy_event_free(ev);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, pattern_subscriber_gets_brand_new_subjects_without_history) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, pattern_subscriber_gets_brand_new_subjects_without_history,
                  .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    tbus *pub = must_bus(&c, NULL, 0);
    must_publish(&c, pub, "shop.old", "old-history", "t.x");
    eddy_subscription_spec sp = spec("s", "shop.*", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, pub, "shop.brandnew", "new-subject", "t.x");
    must_publish(&c, pub, "shop.old", "old-subject-later", "t.x");
    must_publish(&c, pub, "elsewhere.x", "not-matching", "t.x");
    cr_assert(rec_wait(&r, 2, 20000), "only %d delivered", rec_count(&r));
    c.d->stop(b);
    cr_expect_eq(rec_seen(&r, "new-subject"), 1);
    cr_expect_eq(rec_seen(&r, "old-subject-later"), 1);
    cr_expect_eq(rec_seen(&r, "old-history"), 0, "history older than the subscription");
    cr_expect_eq(rec_seen(&r, "not-matching"), 0);
    c.d->free(b);
    c.d->free(pub);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, restart_with_same_instance_recovers_own_pending) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, restart_with_same_instance_recovers_own_pending, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.redelivery_idle_ms = 3600 * 1000; /* only recovery, never an idle claim, can redeliver */
    c.s.instance = "worker-1";
    recorder r;
    rec_init(&r);
    r.fail_times = 1;
    eddy_subscription_spec sp = spec("s", "rec", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *keep = must_bus(&c, NULL, 0); /* keeps a memory:// store alive across the restart */
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "rec", "pending-one", "t.x");
    cr_assert(rec_wait(&r, 1, 20000));
    c.d->free(b);
    cr_expect_eq(pending_count(&c, "rec", "g"), 1);
    b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    cr_assert(rec_wait(&r, 2, 20000), "own pending entry not recovered");
    c.d->stop(b);
    cr_expect_eq(r.entries[1].attempt, 2);
    cr_expect_eq(rec_handled(&r, "pending-one"), 1);
    cr_expect_eq(pending_count(&c, "rec", "g"), 0);
    c.d->free(b);
    c.d->free(keep);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, at_most_once_never_redelivers) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, at_most_once_never_redelivers, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    r.fail_times = 1; /* every first attempt fails */
    eddy_subscription_spec sp = spec("s", "amo", EDDY_COMPETING, "g", EDDY_AT_MOST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    must_start(&c, b);
    must_publish(&c, b, "amo", "first", "t.x");
    cr_assert(rec_wait(&r, 1, 20000));
    /* Long enough for several claim rounds at redelivery_idle_ms = 100, announced by the
     * deliveries of later messages rather than by a sleep. */
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "later%d", i);
        must_publish(&c, b, "amo", id, "t.x");
        cr_assert(rec_wait(&r, 2 + i, 20000));
    }
    c.d->stop(b);
    cr_expect_eq(rec_seen(&r, "first"), 1);
    cr_expect_eq(pending_count(&c, "amo", "g"), 0);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, late_subscribe_receives) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, late_subscribe_receives, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    tbus *b = must_bus(&c, NULL, 0);
    must_start(&c, b);
    eddy_subscription_spec sp = spec("late", "late.x", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    eddy_error err = {0};
    cr_assert_eq(c.d->subscribe(b, &sp, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->subscribe(b, &sp, &err), EDDY_ERR_INVALID_SPEC, "duplicate name");
    must_publish(&c, b, "late.x", "hello", "t.x");
    cr_assert(rec_wait(&r, 1, 20000));
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, stop_returns_while_a_read_is_blocked) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
/* The timeout is far below block_ms: a stop that waited for the read would fail the test. */
ParameterizedTest(combo *p, bus, stop_returns_while_a_read_is_blocked, .timeout = 30) {
    ctx c;
    setup(&c, p);
    c.s.block_ms = 120000;
    c.s.redelivery_idle_ms = 600000;
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp = spec("s", "quiet", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    tbus *b = must_bus(&c, &sp, 1);
    for (int i = 0; i < 3; i++) {
        must_start(&c, b);
        must_publish(&c, b, "quiet", i == 0 ? "a" : i == 1 ? "b" : "c", "t.x");
        cr_assert(rec_wait(&r, i + 1, 20000)); /* the reader is now back in a blocking read */
        cr_assert_eq(c.d->stop(b), EDDY_OK);
    }
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(bus, bad_input_gets_a_clear_status) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, bad_input_gets_a_clear_status, .timeout = 60) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    eddy_error err = {0};
    tbus *b = NULL;
    eddy_subscription_spec sp = spec("s", "a..b", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_PATTERN);
    sp = spec("s", "a.>.b", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_PATTERN);
    sp = spec("s", "a.b", EDDY_COMPETING, NULL, EDDY_AT_LEAST_ONCE, &r);
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect(strstr(err.detail, "'s'"), "detail names the subscription: %s", err.detail);
    sp = spec("s", "a.b", EDDY_FANOUT, "g", EDDY_AT_LEAST_ONCE, &r);
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC);
    sp = spec("s", "a.b", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r);
    sp.handler = NULL;
    cr_expect_eq(c.d->bus_new(&c.s, &sp, 1, &b, &err), EDDY_ERR_INVALID_SPEC);
    eddy_subscription_spec two[2] = {
        spec("same", "a", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r),
        spec("same", "b", EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, &r)};
    cr_expect_eq(c.d->bus_new(&c.s, two, 2, &b, &err), EDDY_ERR_INVALID_SPEC);
    eddy_settings bad = c.s;
    bad.url = "http://localhost";
    cr_expect_eq(c.d->bus_new(&bad, NULL, 0, &b, &err), EDDY_ERR_INVALID_URL);
    bad.url = "redis://127.0.0.1:notaport";
    cr_expect_eq(c.d->bus_new(&bad, NULL, 0, &b, &err), EDDY_ERR_INVALID_URL);
    bad = c.s;
    bad.max_deliveries = 0;
    cr_expect_eq(c.d->bus_new(&bad, NULL, 0, &b, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(b);

    b = must_bus(&c, NULL, 0);
    eddy_event *ev = make_event("e", "t");
    cr_expect_eq(c.d->publish(b, "a..b", ev, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(c.d->publish(b, "a.*", ev, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(c.d->publish(b, "", ev, &err), EDDY_ERR_INVALID_SUBJECT);
    eddy_event *no_type = eddy_event_new();
    eddy_event_set_id(no_type, "x");
    eddy_event_set_source(no_type, "/s");
    cr_expect_eq(c.d->publish(b, "a.b", no_type, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strstr(err.detail, "type"), "detail names the attribute: %s", err.detail);
    cr_expect_eq(c.d->publish(b, "a.b", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(no_type);
    eddy_event_free(ev);
    cr_expect_eq(c.d->start(b, &err), EDDY_OK);
    cr_expect_eq(c.d->start(b, &err), EDDY_ERR_ILLEGAL_STATE);
    c.d->free(b);
    rec_destroy(&r);
}

Test(bus, redis_down_is_an_io_error, .timeout = 30) {
    eddy_settings s;
    eddy_settings_init(&s);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", 1); /* nothing listens on port 1 */
    s.url = url;
    s.connect_timeout_ms = 500;
    eddy_bus *b = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &b, &err), EDDY_ERR_IO);
    cr_expect_null(b);
    cr_expect(strlen(err.detail) > 0);
}

/* ---- pause and resume ------------------------------------------------------------------ */

static long long stream_len(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

static uint64_t delivered_of(ctx *c, tbus *b, const char *name) {
    eddy_consumer_stats st;
    cr_assert_eq(c->d->stats(b, name, &st), EDDY_OK);
    return st.delivered;
}

/* Lets a paused subscription show whether it still reads: several blocking reads and claim
 * rounds long. Only ever used together with a positive control that did receive the messages. */
static void settle_a_while(ctx *c) {
    long long ms = 3 * (long long)c->s.block_ms;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct pending_wait {
    ctx *c;
    const char *subject, *group;
    long long n;
} pending_wait;

static bool pending_is(void *arg) {
    pending_wait *w = arg;
    return pending_count(w->c, w->subject, w->group) == w->n;
}

static void publish_n(ctx *c, tbus *b, const char *subject, const char *prefix, int n) {
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        must_publish(c, b, subject, id, "t.paused");
    }
}

static void expect_each_once(recorder *r, const char *prefix, int n) {
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        cr_expect_eq(rec_seen(r, id), 1, "%s delivered %d times", id, rec_seen(r, id));
        cr_expect_eq(rec_handled(r, id), 1, "%s", id);
    }
}

ParameterizedTestParameters(bus, pause_keeps_messages_with_the_broker_until_resume) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, pause_keeps_messages_with_the_broker_until_resume,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder rp, rc;
    rec_init(&rp);
    rec_init(&rc);
    /* "p" is paused and resumed; "c", another group on the same subject, is the control. */
    eddy_subscription_spec specs[2] = {
        spec("p", "pz.created", EDDY_COMPETING, "gp", EDDY_AT_LEAST_ONCE, &rp),
        spec("c", "pz.created", EDDY_COMPETING, "gc", EDDY_AT_LEAST_ONCE, &rc)};
    tbus *b = must_bus(&c, specs, 2);
    must_start(&c, b);
    publish_n(&c, b, "pz.created", "a", 5);
    cr_assert(rec_wait(&rp, 5, 20000), "only %d of 5 before the pause", rec_count(&rp));
    cr_assert(rec_wait(&rc, 5, 20000));
    /* Once its acknowledgements are in, the reader waits in a blocking read: the pause must cut
     * it short, or it would take what is published next. */
    pending_wait pw = {&c, "pz.created", "gp", 0};
    cr_assert(eddy_test_wait_until(pending_is, &pw, 20000));

    eddy_error err = {0};
    cr_assert_eq(c.d->pause(b, "p", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->pause(b, "p", &err), EDDY_OK, "pausing a paused one is a no-op");
    publish_n(&c, b, "pz.created", "b", 10);
    cr_assert(rec_wait(&rc, 15, 20000), "the control got only %d", rec_count(&rc));
    settle_a_while(&c);
    cr_expect_eq(rec_count(&rp), 5, "delivered while paused: %d", rec_count(&rp) - 5);
    cr_expect_eq(delivered_of(&c, b, "p"), 5);
    cr_expect_eq(pending_count(&c, "pz.created", "gp"), 0, "nothing read while paused (%s, %s)",
                 c.d->name, c.url);
    cr_expect_eq(stream_len(&c, "pz.created"), 15, "the stream keeps them");

    cr_assert_eq(c.d->resume(b, "p", &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(c.d->resume(b, "p", &err), EDDY_OK, "resuming a running one is a no-op");
    cr_assert(rec_wait(&rp, 15, 20000), "only %d of 15 after the resume", rec_count(&rp));
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "all acknowledged");
    expect_each_once(&rp, "a", 5);
    expect_each_once(&rp, "b", 10);
    expect_each_once(&rc, "b", 10);
    cr_expect_eq(dlq_len(&c, "gp"), 0);

    /* Unknown names are refused; the control is untouched. */
    cr_expect_eq(c.d->pause(b, "nope", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "nope"), "%s", err.detail);
    cr_expect_eq(c.d->resume(b, "nope", &err), EDDY_ERR_INVALID_ARGUMENT);
    c.d->free(b);
    rec_destroy(&rp);
    rec_destroy(&rc);
}

ParameterizedTestParameters(bus, a_subscription_may_start_paused) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, a_subscription_may_start_paused, .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder rp, rc;
    rec_init(&rp);
    rec_init(&rc);
    eddy_subscription_spec specs[2] = {
        spec("p", "sp.created", EDDY_COMPETING, "gp", EDDY_AT_LEAST_ONCE, &rp),
        spec("c", "sp.created", EDDY_COMPETING, "gc", EDDY_AT_LEAST_ONCE, &rc)};
    specs[0].paused = true;
    tbus *b = must_bus(&c, specs, 2);
    must_start(&c, b);
    /* The group exists from the start: nothing published from now on is lost. */
    cr_expect_eq(pending_count(&c, "sp.created", "gp"), 0, "the group was created");
    publish_n(&c, b, "sp.created", "a", 5);
    cr_assert(rec_wait(&rc, 5, 20000));
    settle_a_while(&c);
    cr_expect_eq(rec_count(&rp), 0);
    cr_expect_eq(delivered_of(&c, b, "p"), 0);
    cr_expect_eq(pending_count(&c, "sp.created", "gp"), 0, "nothing read");

    /* A stop and a start (a new activation) keep it paused. */
    cr_assert_eq(c.d->stop(b), EDDY_OK);
    must_start(&c, b);
    publish_n(&c, b, "sp.created", "b", 5);
    cr_assert(rec_wait(&rc, 10, 20000));
    settle_a_while(&c);
    cr_expect_eq(rec_count(&rp), 0, "still paused after a restart");
    cr_expect_eq(pending_count(&c, "sp.created", "gp"), 0);
    cr_expect_eq(stream_len(&c, "sp.created"), 10);

    eddy_error err = {0};
    cr_assert_eq(c.d->resume(b, "p", &err), EDDY_OK, "%s", err.detail);
    cr_assert(rec_wait(&rp, 10, 20000), "only %d of 10 after the resume", rec_count(&rp));
    pending_wait pw = {&c, "sp.created", "gp", 0};
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "all acknowledged");
    expect_each_once(&rp, "a", 5);
    expect_each_once(&rp, "b", 5);
    c.d->free(b);
    rec_destroy(&rp);
    rec_destroy(&rc);
}

/* A handler that is running when its subscription is paused: blocking, the test thread pauses
 * while the handler waits at a gate; reactive (handlers run on the loop), the handler pauses
 * its own subscription. Either way it finishes and is acknowledged. */
typedef struct gate_handler {
    const combo *p;
    void *native;
    recorder *r;
    pthread_mutex_t m;
    pthread_cond_t cv;
    bool at_gate, open;
} gate_handler;

static eddy_status gated(eddy_delivery *d, void *user) {
    gate_handler *g = user;
    if (strcmp(eddy_event_id(eddy_delivery_event(d)), "x0") == 0) {
        if (g->p->frontend == 1) {
            cr_expect_eq(eddy_rbus_pause(g->native, eddy_delivery_subscription(d), NULL), EDDY_OK);
        } else {
            pthread_mutex_lock(&g->m);
            g->at_gate = true;
            pthread_cond_broadcast(&g->cv);
            while (!g->open)
                pthread_cond_wait(&g->cv, &g->m);
            pthread_mutex_unlock(&g->m);
        }
    }
    return rec_handler(d, g->r);
}

ParameterizedTestParameters(bus, pause_lets_a_running_handler_finish) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, pause_lets_a_running_handler_finish, .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder rp, rc;
    rec_init(&rp);
    rec_init(&rc);
    gate_handler g = {.p = p, .r = &rp};
    pthread_mutex_init(&g.m, NULL);
    pthread_cond_init(&g.cv, NULL);
    eddy_subscription_spec specs[2] = {
        spec("p", "ph.created", EDDY_COMPETING, "gp", EDDY_AT_LEAST_ONCE, &rp),
        spec("c", "ph.created", EDDY_COMPETING, "gc", EDDY_AT_LEAST_ONCE, &rc)};
    specs[0].handler = gated;
    specs[0].user = &g;
    tbus *b = must_bus(&c, specs, 2);
    g.native = c.d->native(b);
    must_start(&c, b);
    must_publish(&c, b, "ph.created", "x0", "t.paused");
    eddy_error err = {0};
    if (p->frontend == 0) {
        pthread_mutex_lock(&g.m);
        while (!g.at_gate)
            pthread_cond_wait(&g.cv, &g.m);
        pthread_mutex_unlock(&g.m);
        cr_assert_eq(c.d->pause(b, "p", &err), EDDY_OK, "%s", err.detail);
        pthread_mutex_lock(&g.m);
        g.open = true;
        pthread_cond_broadcast(&g.cv);
        pthread_mutex_unlock(&g.m);
    }
    cr_assert(rec_wait(&rp, 1, 20000), "the running handler finished");
    pending_wait pw = {&c, "ph.created", "gp", 0};
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "and was acknowledged while paused");
    publish_n(&c, b, "ph.created", "y", 5);
    cr_assert(rec_wait(&rc, 6, 20000));
    settle_a_while(&c);
    cr_expect_eq(rec_count(&rp), 1, "paused: nothing more");
    cr_expect_eq(pending_count(&c, "ph.created", "gp"), 0);
    cr_assert_eq(c.d->resume(b, "p", &err), EDDY_OK, "%s", err.detail);
    cr_assert(rec_wait(&rp, 6, 20000), "only %d of 6 after the resume", rec_count(&rp));
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000));
    cr_expect_eq(rec_handled(&rp, "x0"), 1);
    expect_each_once(&rp, "y", 5);
    c.d->free(b);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.m);
    rec_destroy(&rp);
    rec_destroy(&rc);
}

/* ---- a held delivery does not hold up the others ----------------------------------------- */

/* The handler of event "held" does not finish until the test says so: blocking, it waits at a
 * gate on its worker thread; reactive, it returns EDDY_PENDING and the test finishes it on the
 * loop thread. Every other event is handled at once. */
typedef struct held {
    const combo *p;
    recorder *r;
    pthread_mutex_t m;
    pthread_cond_t cv;
    bool at_gate, open;
    eddy_delivery *d; /* reactive: the held delivery */
} held;

static eddy_status hold_one(eddy_delivery *d, void *user) {
    held *h = user;
    if (strcmp(eddy_event_id(eddy_delivery_event(d)), "held") != 0)
        return rec_handler(d, h->r);
    pthread_mutex_lock(&h->m);
    h->at_gate = true;
    pthread_cond_broadcast(&h->cv);
    if (h->p->frontend == 1) {
        h->d = d;
        pthread_mutex_unlock(&h->m);
        return EDDY_PENDING;
    }
    while (!h->open)
        pthread_cond_wait(&h->cv, &h->m);
    pthread_mutex_unlock(&h->m);
    return rec_handler(d, h->r);
}

/* Reactive: runs on the loop thread, where the held delivery may be finished. */
static void finish_held(void *arg) {
    held *h = arg;
    pthread_mutex_lock(&h->m);
    eddy_delivery *d = h->d;
    h->d = NULL;
    pthread_mutex_unlock(&h->m);
    cr_assert(d, "the held delivery");
    eddy_delivery_finish(d, rec_handler(d, h->r));
}

static void held_init(held *h, const combo *p, recorder *r) {
    memset(h, 0, sizeof(*h));
    h->p = p;
    h->r = r;
    pthread_mutex_init(&h->m, NULL);
    pthread_cond_init(&h->cv, NULL);
}

static void held_destroy(held *h) {
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->m);
}

static void wait_at_gate(held *h) {
    pthread_mutex_lock(&h->m);
    while (!h->at_gate)
        pthread_cond_wait(&h->cv, &h->m);
    pthread_mutex_unlock(&h->m);
}

static void open_gate(ctx *c, tbus *b, held *h) {
    if (h->p->frontend == 1) {
        c->d->run(b, finish_held, h);
        return;
    }
    pthread_mutex_lock(&h->m);
    h->open = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->m);
}

/* A bus whose subscription "s" (AtLeastOnce, competing, group "g" on `subject`) has one
 * delivery of event "held" held, and `more` events published after it handled. */
static tbus *bus_with_one_held(ctx *c, const combo *p, held *h, recorder *r, const char *subject,
                               int more) {
    setup(c, p);
    c->s.workers = 4;
    /* No claim round comes due while the test runs: nothing is delivered twice. */
    c->s.redelivery_idle_ms = 30000;
    rec_init(r);
    held_init(h, p, r);
    eddy_subscription_spec sp = spec("s", subject, EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, r);
    sp.handler = hold_one;
    sp.user = h;
    tbus *b = must_bus(c, &sp, 1);
    must_start(c, b);
    must_publish(c, b, subject, "held", "t.held");
    /* Handed out (and held) before the others are published: they come in later reads. */
    wait_at_gate(h);
    publish_n(c, b, subject, "n", more);
    cr_assert(rec_wait(r, more, 20000), "%s: only %d of %d handled while one is held", c->d->name,
              rec_count(r), more);
    cr_expect_eq(rec_seen(r, "held"), 0, "still held");
    return b;
}

ParameterizedTestParameters(bus, a_held_delivery_does_not_hold_up_the_others) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
/* One handler does not finish while 20 messages published after its own are all handled (and
 * acknowledged); then it finishes and is acknowledged too. */
ParameterizedTest(combo *p, bus, a_held_delivery_does_not_hold_up_the_others, .timeout = 120) {
    ctx c;
    recorder r;
    held h;
    tbus *b = bus_with_one_held(&c, p, &h, &r, "hd.created", 20);
    pending_wait pw = {&c, "hd.created", "g", 1};
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "only the held one stays pending");
    open_gate(&c, b, &h);
    cr_assert(rec_wait(&r, 21, 20000), "the held one finished");
    pw.n = 0;
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "and was acknowledged");
    expect_each_once(&r, "n", 20);
    cr_expect_eq(rec_seen(&r, "held"), 1);
    cr_expect_eq(rec_handled(&r, "held"), 1);
    cr_assert_eq(c.d->stop(b), EDDY_OK);
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "s", &st), EDDY_OK);
    cr_expect_eq(st.delivered, 21);
    cr_expect_eq(st.handled, 21);
    cr_expect_eq(st.failed, 0);
    cr_expect_eq(st.redelivered, 0);
    cr_expect_eq(pending_count(&c, "hd.created", "g"), 0);
    c.d->free(b);
    held_destroy(&h);
    rec_destroy(&r);
}

typedef struct stopper {
    ctx *c;
    tbus *b;
    atomic_bool calling;
    eddy_status st;
} stopper;

static void *stop_thread(void *arg) {
    stopper *s = arg;
    atomic_store(&s->calling, true);
    s->st = s->c->d->stop(s->b);
    return NULL;
}

static bool is_calling(void *arg) { return atomic_load(&((stopper *)arg)->calling); }

ParameterizedTestParameters(bus, stop_with_a_held_delivery_still_acknowledges_it) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
/* A stop while a delivery is held and the reader reads on: blocking, the stop waits for the
 * handler and sends its acknowledgement before it returns; reactive, the stop returns at once
 * and the acknowledgement goes out when the delivery is finished. */
ParameterizedTest(combo *p, bus, stop_with_a_held_delivery_still_acknowledges_it, .timeout = 120) {
    ctx c;
    recorder r;
    held h;
    tbus *b = bus_with_one_held(&c, p, &h, &r, "hs.created", 3);
    pending_wait pw = {&c, "hs.created", "g", 1};
    cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "only the held one stays pending");
    if (p->frontend == 0) {
        stopper s = {.c = &c, .b = b};
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, stop_thread, &s), 0);
        cr_assert(eddy_test_wait_until(is_calling, &s, 20000));
        /* Most often the stop has cut the reader's read by now; either way the handler
         * finishes and is acknowledged before the stop returns. */
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        open_gate(&c, b, &h);
        cr_assert_eq(pthread_join(t, NULL), 0);
        cr_assert_eq(s.st, EDDY_OK);
        cr_expect_eq(pending_count(&c, "hs.created", "g"), 0, "acknowledged before stop returned");
    } else {
        cr_assert_eq(c.d->stop(b), EDDY_OK);
        open_gate(&c, b, &h);
        pw.n = 0;
        cr_expect(eddy_test_wait_until(pending_is, &pw, 20000), "acknowledged after the stop");
    }
    cr_expect_eq(rec_handled(&r, "held"), 1);
    expect_each_once(&r, "n", 3);
    eddy_consumer_stats st;
    cr_assert_eq(c.d->stats(b, "s", &st), EDDY_OK);
    cr_expect_eq(st.handled, 4);
    cr_expect_eq(st.failed, 0);
    c.d->free(b);
    held_destroy(&h);
    rec_destroy(&r);
}

/* Issue 22: many subscriptions share a few connections and (blocking) threads. */
static int open_sockets(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], target[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && (target[len] = 0, strncmp(target, "socket:", 7) == 0))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

static int threads_now(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

#define MANY_SUBS 300

/* MANY_SUBS competing AtLeastOnce subscriptions s<i> of group g, on subjects <prefix>.<i>. */
static void many_specs(eddy_subscription_spec *specs, char (*names)[16], char (*subjects)[24],
                       const char *prefix, recorder *r) {
    for (int i = 0; i < MANY_SUBS; i++) {
        snprintf(names[i], 16, "s%d", i);
        snprintf(subjects[i], 24, "%s.%d", prefix, i);
        specs[i] = spec(names[i], subjects[i], EDDY_COMPETING, "g", EDDY_AT_LEAST_ONCE, r);
    }
}

ParameterizedTestParameters(bus, many_subscriptions_share_a_few_connections_and_threads) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, many_subscriptions_share_a_few_connections_and_threads,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    static char names[MANY_SUBS][16], subjects[MANY_SUBS][24];
    eddy_subscription_spec specs[MANY_SUBS];
    many_specs(specs, names, subjects, "many", &r);
    c.s.share_reads_from = 5; /* the default (EDDY_TEST_SHARE_READS=1 shares too) */
    int sockets0 = open_sockets(), threads0 = threads_now();
    tbus *b = must_bus(&c, specs, MANY_SUBS);
    must_start(&c, b);
    char id[32];
    must_publish(&c, b, "many.0", "first", "t.many"); /* the publishing connection is open */
    cr_assert(rec_wait(&r, 1, 30000), "the first event was not delivered");
    int sockets = open_sockets() - sockets0, threads = threads_now() - threads0;
    cr_expect_leq(sockets, 8, "%d sockets for %d subscriptions", sockets, MANY_SUBS);
    /* blocking: the workers and at most 4 more; reactive: the driver's loop thread */
    cr_expect_leq(threads, (int)c.s.workers + 4, "%d threads for %d subscriptions", threads,
                  MANY_SUBS);
    eddy_error err;
    cr_assert_eq(c.d->pause(b, "s7", &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < MANY_SUBS; i++) {
        snprintf(id, sizeof(id), "m%d", i);
        must_publish(&c, b, subjects[i], id, "t.many");
    }
    cr_assert(rec_wait(&r, MANY_SUBS, 30000), "only %d of %d delivered", rec_count(&r), MANY_SUBS);
    cr_expect_eq(rec_seen(&r, "m7"), 0, "a paused subscription was delivered to");
    cr_assert_eq(c.d->resume(b, "s7", &err), EDDY_OK, "%s", err.detail);
    cr_assert(rec_wait(&r, MANY_SUBS + 1, 30000), "the resumed subscription got nothing");
    c.d->stop(b);
    for (int i = 0; i < MANY_SUBS; i++) {
        snprintf(id, sizeof(id), "m%d", i);
        cr_expect_eq(rec_seen(&r, id), 1, "%s seen %d times", id, rec_seen(&r, id));
        if (p->backend == 1)
            cr_expect_eq(pending_count(&c, subjects[i], "g"), 0, "%s left pending", subjects[i]);
    }
    c.d->free(b);
    rec_destroy(&r);
}

#define BUSY_STREAMS 6
#define BUSY_EVENTS 300

/* Six streams of a shared bus busy at once (each event to one of them, in turn, as fast as one
 * thread publishes): each would read alone on a connection (and, blocking, a thread) of its own,
 * but at most EDDY__WAKEUP_HOT_MAX of them do; the others stay on the wake-up. So the bus's
 * sockets and threads stay within the bounds of the test above however many streams are busy,
 * and every event is delivered once. */
ParameterizedTestParameters(bus, busy_streams_keep_the_connections_and_threads_bounded) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, bus, busy_streams_keep_the_connections_and_threads_bounded,
                  .timeout = 120) {
    ctx c;
    setup(&c, p);
    recorder r;
    rec_init(&r);
    static char names[MANY_SUBS][16], subjects[MANY_SUBS][24];
    eddy_subscription_spec specs[MANY_SUBS];
    many_specs(specs, names, subjects, "busy", &r);
    c.s.share_reads_from = 5;
    int sockets0 = open_sockets(), threads0 = threads_now();
    tbus *b = must_bus(&c, specs, MANY_SUBS);
    must_start(&c, b);
    must_publish(&c, b, "busy.0", "first", "t.busy"); /* the publishing connection is open */
    cr_assert(rec_wait(&r, 1, 30000), "the first event was not delivered");
    int max_sockets = 0, max_threads = 0;
    char id[32];
    for (int k = 0; k < BUSY_EVENTS; k++) {
        for (int j = 0; j < BUSY_STREAMS; j++) {
            snprintf(id, sizeof(id), "b%d-%d", j, k);
            must_publish(&c, b, subjects[j], id, "t.busy");
        }
        int sockets = open_sockets() - sockets0, threads = threads_now() - threads0;
        max_sockets = sockets > max_sockets ? sockets : max_sockets;
        max_threads = threads > max_threads ? threads : max_threads;
    }
    cr_assert(rec_wait(&r, 1 + BUSY_STREAMS * BUSY_EVENTS, 60000), "only %d of %d delivered",
              rec_count(&r), 1 + BUSY_STREAMS * BUSY_EVENTS);
    cr_expect_leq(max_sockets, 8, "%d sockets with %d busy streams", max_sockets, BUSY_STREAMS);
    /* blocking: the workers, 4 more, and a reader thread per hot stream; reactive: the loop's */
    cr_expect_leq(max_threads, (int)c.s.workers + 4 + EDDY__WAKEUP_HOT_MAX,
                  "%d threads with %d busy streams", max_threads, BUSY_STREAMS);
    c.d->stop(b);
    for (int j = 0; j < BUSY_STREAMS; j++)
        for (int k = 0; k < BUSY_EVENTS; k++) {
            snprintf(id, sizeof(id), "b%d-%d", j, k);
            cr_expect_eq(rec_seen(&r, id), 1, "%s seen %d times", id, rec_seen(&r, id));
        }
    c.d->free(b);
    rec_destroy(&r);
}
