/* SPDX-License-Identifier: BSD-3-Clause */
/* Dead letters as an API (eddy/dlq.h) on both backends: a poison message dead-lettered by a
 * live subscription (either front end), its handler fixed, the dead letter replayed and handled
 * exactly once, with nothing left pending and the dead-letter stream empty; listing in pages
 * with a cursor; reading one with its reason, subject, entry id, delivery count and decoded
 * event (and one that does not decode); replaying all (more than a page, some that cannot be
 * replayed); a replay the server refuses, written back; purging one and all; a listing callback
 * that replays and purges on the same handle; threads sharing a handle; bad input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/dlq.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"

typedef struct combo {
    int frontend; /* of the live subscription: 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
static combo backends[] = {{0, 0}, {0, 1}};

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p) {
    eddy_test_namespace(c->ns, sizeof(c->ns), "dlq");
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
    c->s.redelivery_backoff_ms = 10;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend == 0 ? "memory" : "redis";
}

static eddy_dlq *must_open(ctx *c) {
    eddy_dlq *d = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_dlq_open(&c->s, &d, &err);
    cr_assert_eq(st, EDDY_OK, "open: %s (%s)", eddy_status_name(st), err.detail);
    return d;
}

static size_t count(eddy_dlq *d, const char *group) {
    size_t n = 99999;
    eddy_error err = {0};
    eddy_status st = eddy_dlq_count(d, group, &n, &err);
    cr_assert_eq(st, EDDY_OK, "count: %s (%s)", eddy_status_name(st), err.detail);
    return n;
}

/* Writes a dead letter as a subscription does (the _dlq_ fields, then the original entry's),
 * and returns its id (static buffer per call). type NULL: an original entry that does not
 * decode (no type). */
static const char *put_dead_letter(ctx *c, const char *group, const char *subject,
                                   const char *event_id, const char *type, char *id_out) {
    char key[160];
    snprintf(key, sizeof(key), "{%s}:dlq:%s", c->ns, group);
    const char *argv[32];
    int n = 0;
    argv[n++] = "XADD";
    argv[n++] = key;
    argv[n++] = "*";
    argv[n++] = "_dlq_subject";
    argv[n++] = subject;
    argv[n++] = "_dlq_entry";
    argv[n++] = "1700000000000-7";
    argv[n++] = "_dlq_deliveries";
    argv[n++] = "3";
    argv[n++] = "_dlq_reason";
    argv[n++] = type ? "max_deliveries" : "malformed";
    argv[n++] = "_dlq_group";
    argv[n++] = group;
    argv[n++] = "specversion";
    argv[n++] = "1.0";
    argv[n++] = "id";
    argv[n++] = event_id;
    argv[n++] = "source";
    argv[n++] = "/t";
    if (type) {
        argv[n++] = "type";
        argv[n++] = type;
    }
    argv[n++] = "data";
    argv[n++] = "payload";
    redisReply *r = raw_cmd(c->url, n, argv);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "raw XADD: %s", r->str);
    snprintf(id_out, EDDY_DLQ_ID_SIZE, "%s", r->str);
    freeReplyObject(r);
    return id_out;
}

static long long stream_len(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

/* ---- a handler that is broken, then fixed ---------------------------------------------- */

typedef struct fixable {
    atomic_bool broken;
    atomic_int failed, handled;
    atomic_uint last_attempt;
} fixable;

static eddy_status fixable_handler(eddy_delivery *d, void *user) {
    fixable *f = user;
    bool broken = atomic_load(&f->broken);
    atomic_store(&f->last_attempt, eddy_delivery_attempt(d));
    atomic_fetch_add(broken ? &f->failed : &f->handled, 1);
    return broken ? EDDY_ERR_HANDLER_FAILED : EDDY_OK;
}

static bool handled_once(void *arg) { return atomic_load(&((fixable *)arg)->handled) >= 1; }
static bool handled_twice(void *arg) { return atomic_load(&((fixable *)arg)->handled) >= 2; }

typedef struct dlq_wait {
    eddy_dlq *d;
    const char *group;
} dlq_wait;

static bool has_dead_letter(void *arg) {
    dlq_wait *w = arg;
    size_t n = 0;
    return eddy_dlq_count(w->d, w->group, &n, NULL) == EDDY_OK && n >= 1;
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

typedef struct first {
    eddy_dead_letter *dl;
    int n;
} first;

static eddy_status keep_first(const eddy_dead_letter *dl, void *user) {
    first *f = user;
    if (f->n++ == 0)
        f->dl = eddy_dead_letter_dup(dl);
    return EDDY_OK;
}

ParameterizedTestParameters(dlq, replayed_dead_letter_is_handled_exactly_once) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, dlq, replayed_dead_letter_is_handled_exactly_once, .timeout = 60) {
    ctx c;
    setup(&c, p);
    c.s.max_deliveries = 2;
    const driver *drv = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    fixable f;
    atomic_init(&f.broken, true);
    atomic_init(&f.failed, 0);
    atomic_init(&f.handled, 0);
    atomic_init(&f.last_attempt, 0);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "s";
    sp.pattern = "orders";
    sp.shape = EDDY_COMPETING;
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = fixable_handler;
    sp.user = &f;
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(drv->bus_new(&c.s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(drv->start(b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("poison", "t.order");
    cr_assert_eq(drv->publish(b, "orders", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);

    eddy_dlq *d = must_open(&c);
    dlq_wait w = {d, "g"};
    cr_assert(eddy_test_wait_until(has_dead_letter, &w, 20000), "nothing dead-lettered");
    cr_expect_eq(count(d, "g"), 1);
    cr_expect_eq(pending_count(&c, "orders", "g"), 0, "a dead letter is acknowledged");

    /* What the dead letter says. */
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    first fl = {NULL, 0};
    cr_assert_eq(eddy_dlq_list(d, "g", &cur, 10, keep_first, &fl, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fl.n, 1);
    cr_assert(cur.done);
    eddy_dead_letter *dl = fl.dl;
    cr_assert(dl);
    cr_expect_str_eq(eddy_dead_letter_reason(dl), EDDY_DLQ_REASON_MAX_DELIVERIES);
    cr_expect_str_eq(eddy_dead_letter_subject(dl), "orders");
    cr_expect_str_eq(eddy_dead_letter_group(dl), "g");
    cr_expect_eq(eddy_dead_letter_deliveries(dl), 2);
    cr_expect_str_eq(eddy_dead_letter_id(dl), cur.after);
    redisReply *orig = raw_cmdf(c.url, "XRANGE {%s}:s:orders - +", c.ns);
    cr_assert_eq(orig->elements, 1);
    cr_expect_str_eq(eddy_dead_letter_entry_id(dl), orig->element[0]->element[0]->str,
                     "the original entry id");
    freeReplyObject(orig);
    const eddy_event *dev = NULL;
    cr_assert_eq(eddy_dead_letter_event(dl, &dev, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_event_id(dev), "poison");
    cr_expect_str_eq(eddy_event_type(dev), "t.order");
    size_t dlen = 0;
    const char *data = eddy_event_data(dev, &dlen);
    cr_expect_eq(dlen, strlen("payload-poison"));
    cr_expect(data && memcmp(data, "payload-poison", dlen) == 0);

    /* The same through get. */
    eddy_dead_letter *got = NULL;
    cr_assert_eq(eddy_dlq_get(d, "g", eddy_dead_letter_id(dl), &got, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_str_eq(eddy_dead_letter_entry_id(got), eddy_dead_letter_entry_id(dl));
    cr_expect_eq(eddy_dead_letter_deliveries(got), 2);
    eddy_dead_letter_free(got);

    /* Fixed, replayed: handled once, with a fresh delivery count. */
    atomic_store(&f.broken, false);
    cr_expect_eq(atomic_load(&f.failed), 2, "delivered max_deliveries times");
    char entry[EDDY_DLQ_ID_SIZE] = "";
    cr_assert_eq(eddy_dlq_replay(d, "g", eddy_dead_letter_id(dl), entry, sizeof(entry), &err),
                 EDDY_OK, "replay: %s", err.detail);
    cr_expect(entry[0] && strcmp(entry, eddy_dead_letter_entry_id(dl)) != 0, "a new entry: %s",
              entry);
    cr_assert(eddy_test_wait_until(handled_once, &f, 20000),
              "the replayed message was not handled");
    /* Long enough for a redelivery or a second copy to show (many redelivery_idle_ms). */
    cr_expect_not(eddy_test_wait_until(handled_twice, &f, 1000), "handled %d times",
                  atomic_load(&f.handled));
    cr_expect_eq(atomic_load(&f.failed), 2, "no failure after the fix");
    cr_expect_eq(atomic_load(&f.last_attempt), 1, "a fresh delivery count");
    cr_expect_eq(pending_count(&c, "orders", "g"), 0, "nothing pending");
    cr_expect_eq(count(d, "g"), 0, "the dead-letter stream is empty");
    cr_expect_eq(stream_len(&c, "orders"), 2, "the original and the replay");
    /* Replaying it again: it is gone, nothing is published. */
    eddy_status st = eddy_dlq_replay(d, "g", eddy_dead_letter_id(dl), NULL, 0, &err);
    cr_expect_eq(st, EDDY_ERR_NOT_FOUND, "%s", eddy_status_name(st));
    cr_expect_eq(err.status, EDDY_ERR_NOT_FOUND);
    cr_expect(strstr(err.detail, eddy_dead_letter_id(dl)), "detail: %s", err.detail);
    cr_expect_eq(stream_len(&c, "orders"), 2);
    eddy_consumer_stats cs;
    drv->stats(b, "s", &cs);
    cr_expect_eq(cs.dead_lettered, 1);
    eddy_dead_letter_free(dl);
    eddy_dlq_close(d);
    drv->free(b);
}

/* ---- listing --------------------------------------------------------------------------- */

typedef struct seen {
    char ids[16][48];
    char events[16][16];
    int n;
    int stop_at; /* return EDDY_ERR_CANCELLED at this 1-based call; 0 never */
    int calls;
} seen;

static eddy_status note(const eddy_dead_letter *dl, void *user) {
    seen *s = user;
    if (s->stop_at && ++s->calls == s->stop_at)
        return EDDY_ERR_CANCELLED;
    cr_assert(s->n < 16);
    snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", eddy_dead_letter_id(dl));
    const eddy_event *ev = NULL;
    cr_assert_eq(eddy_dead_letter_event(dl, &ev, NULL), EDDY_OK);
    snprintf(s->events[s->n], sizeof(s->events[0]), "%s", eddy_event_id(ev));
    s->n++;
    return EDDY_OK;
}

ParameterizedTestParameters(dlq, lists_in_pages_with_a_cursor) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, lists_in_pages_with_a_cursor, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char ids[7][EDDY_DLQ_ID_SIZE];
    for (int i = 0; i < 7; i++) {
        char eid[8];
        snprintf(eid, sizeof(eid), "e%d", i);
        put_dead_letter(&c, "g", "orders", eid, "t.x", ids[i]);
    }
    cr_expect_eq(count(d, "g"), 7);
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    seen s = {.n = 0};
    eddy_error err = {0};
    int pages = 0;
    while (!cur.done) {
        cr_assert_eq(eddy_dlq_list(d, "g", &cur, 3, note, &s, &err), EDDY_OK, "%s", err.detail);
        pages++;
        cr_assert(pages <= 3);
    }
    cr_expect_eq(pages, 3, "3 + 3 + 1");
    cr_assert_eq(s.n, 7);
    for (int i = 0; i < 7; i++) {
        cr_expect_str_eq(s.ids[i], ids[i], "oldest first");
        char eid[8];
        snprintf(eid, sizeof(eid), "e%d", i);
        cr_expect_str_eq(s.events[i], eid);
    }
    cr_expect_str_eq(cur.after, ids[6]);

    /* A page that ends exactly at the end: the next, empty, says done. */
    eddy_dlq_cursor_init(&cur);
    seen s7 = {.n = 0};
    cr_assert_eq(eddy_dlq_list(d, "g", &cur, 7, note, &s7, &err), EDDY_OK);
    cr_expect_eq(s7.n, 7);
    cr_expect(!cur.done);
    cr_assert_eq(eddy_dlq_list(d, "g", &cur, 7, note, &s7, &err), EDDY_OK);
    cr_expect_eq(s7.n, 7);
    cr_expect(cur.done);

    /* A callback that stops: its status comes back; the listing resumes at that one. */
    eddy_dlq_cursor_init(&cur);
    seen st = {.n = 0, .stop_at = 3};
    cr_expect_eq(eddy_dlq_list(d, "g", &cur, 5, note, &st, &err), EDDY_ERR_CANCELLED);
    cr_expect_eq(st.n, 2);
    cr_expect_str_eq(cur.after, ids[1]);
    cr_expect(!cur.done);
    st.stop_at = 0;
    cr_assert_eq(eddy_dlq_list(d, "g", &cur, 6, note, &st, &err), EDDY_OK);
    cr_expect_eq(st.n, 7);
    cr_expect_str_eq(st.ids[2], ids[2]);
    cr_expect(cur.done);

    /* An unknown group: nothing, done; counted 0. */
    eddy_dlq_cursor_init(&cur);
    seen none = {.n = 0};
    cr_expect_eq(eddy_dlq_list(d, "no-such-group", &cur, 5, note, &none, &err), EDDY_OK);
    cr_expect_eq(none.n, 0);
    cr_expect(cur.done);
    cr_expect_eq(count(d, "no-such-group"), 0);

    /* Bad input. */
    eddy_dlq_cursor_init(&cur);
    cr_expect_eq(eddy_dlq_list(NULL, "g", &cur, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_list(d, NULL, &cur, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_list(d, "", &cur, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_list(d, "g", NULL, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_list(d, "g", &cur, 0, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_list(d, "g", &cur, 5, NULL, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    snprintf(cur.after, sizeof(cur.after), "not-an-id");
    cr_expect_eq(eddy_dlq_list(d, "g", &cur, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "not-an-id"), "%s", err.detail);
    memset(cur.after, 'x', sizeof(cur.after));
    cr_expect_eq(eddy_dlq_list(d, "g", &cur, 5, note, &none, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(none.n, 0);
    size_t n;
    cr_expect_eq(eddy_dlq_count(d, "", &n, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_count(d, "g", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_count(NULL, "g", &n, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_dlq_close(d);
}

/* The handle's lock is not held while a listing's callback runs: the callback may replay or
 * purge what it is shown, on the same handle. */
typedef struct act {
    eddy_dlq *d;
    int n;
} act;

static eddy_status replay_or_purge(const eddy_dead_letter *dl, void *user) {
    act *a = user;
    eddy_error err = {0};
    eddy_status st = a->n++ % 2
                         ? eddy_dlq_purge(a->d, "g", eddy_dead_letter_id(dl), &err)
                         : eddy_dlq_replay(a->d, "g", eddy_dead_letter_id(dl), NULL, 0, &err);
    cr_expect_eq(st, EDDY_OK, "%s", err.detail);
    return st;
}

ParameterizedTestParameters(dlq, a_listing_callback_may_use_the_handle) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, a_listing_callback_may_use_the_handle, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char id[EDDY_DLQ_ID_SIZE];
    for (int i = 0; i < 6; i++)
        put_dead_letter(&c, "g", "orders", "e", "t.x", id);
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    act a = {d, 0};
    eddy_error err = {0};
    while (!cur.done)
        cr_assert_eq(eddy_dlq_list(d, "g", &cur, 4, replay_or_purge, &a, &err), EDDY_OK, "%s",
                     err.detail);
    cr_expect_eq(a.n, 6);
    cr_expect_eq(count(d, "g"), 0);
    cr_expect_eq(stream_len(&c, "orders"), 3, "three replayed, three purged");
    eddy_dlq_close(d);
}

/* One handle, several threads replaying at once: each replay is its own round trip on the
 * shared connection, none lost or doubled. */
#define THREADS 4
#define EACH 10

typedef struct worker {
    eddy_dlq *d;
    char ids[EACH][EDDY_DLQ_ID_SIZE];
    int ok;
} worker;

static void *replay_mine(void *arg) {
    worker *w = arg;
    for (int i = 0; i < EACH; i++)
        w->ok += eddy_dlq_replay(w->d, "g", w->ids[i], NULL, 0, NULL) == EDDY_OK;
    return NULL;
}

ParameterizedTestParameters(dlq, threads_share_a_handle) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, threads_share_a_handle, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t].d = d;
        w[t].ok = 0;
        for (int i = 0; i < EACH; i++)
            put_dead_letter(&c, "g", "orders", "e", "t.x", w[t].ids[i]);
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, replay_mine, &w[t]), 0);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        cr_expect_eq(w[t].ok, EACH);
    }
    cr_expect_eq(count(d, "g"), 0);
    cr_expect_eq(stream_len(&c, "orders"), THREADS * EACH);
    eddy_dlq_close(d);
}

/* ---- reading one ----------------------------------------------------------------------- */

ParameterizedTestParameters(dlq, reads_one_also_when_it_does_not_decode) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, reads_one_also_when_it_does_not_decode, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char good[EDDY_DLQ_ID_SIZE], bad[EDDY_DLQ_ID_SIZE];
    put_dead_letter(&c, "g", "orders", "fine", "t.x", good);
    put_dead_letter(&c, "g", "orders", "broken", NULL, bad);
    eddy_error err = {0};
    eddy_dead_letter *dl = NULL;
    cr_assert_eq(eddy_dlq_get(d, "g", bad, &dl, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_dead_letter_id(dl), bad);
    cr_expect_str_eq(eddy_dead_letter_reason(dl), EDDY_DLQ_REASON_MALFORMED);
    cr_expect_str_eq(eddy_dead_letter_entry_id(dl), "1700000000000-7");
    cr_expect_eq(eddy_dead_letter_deliveries(dl), 3);
    const eddy_event *ev = (const eddy_event *)1;
    cr_expect_eq(eddy_dead_letter_event(dl, &ev, &err), EDDY_ERR_MALFORMED);
    cr_expect_null(ev);
    cr_expect(strstr(err.detail, "type"), "names what is missing: %s", err.detail);
    size_t len = 0;
    const char *v = eddy_dead_letter_field(dl, "id", &len);
    cr_assert(v);
    cr_expect_str_eq(v, "broken");
    cr_expect_eq(len, 6);
    cr_expect_null(eddy_dead_letter_field(dl, "type", NULL));
    cr_expect_null(eddy_dead_letter_field(dl, "_dlq_reason", NULL), "not an original field");
    cr_expect_null(eddy_dead_letter_field(dl, NULL, NULL));
    cr_expect_eq(eddy_dead_letter_event(dl, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    /* A copy is independent of the original. */
    eddy_dead_letter *copy = eddy_dead_letter_dup(dl);
    cr_assert(copy);
    eddy_dead_letter_free(dl);
    cr_expect_str_eq(eddy_dead_letter_id(copy), bad);
    cr_expect_str_eq(eddy_dead_letter_group(copy), "g");
    cr_expect_eq(eddy_dead_letter_deliveries(copy), 3);
    cr_expect_str_eq(eddy_dead_letter_field(copy, "data", NULL), "payload");
    cr_expect_eq(eddy_dead_letter_event(copy, &ev, NULL), EDDY_ERR_MALFORMED);
    eddy_dead_letter_free(copy);
    cr_expect_null(eddy_dead_letter_dup(NULL));
    eddy_dead_letter_free(NULL);
    cr_expect_str_eq(eddy_dead_letter_id(NULL), "");

    /* A dup of one that decodes decodes too. */
    cr_assert_eq(eddy_dlq_get(d, "g", good, &dl, &err), EDDY_OK, "%s", err.detail);
    copy = eddy_dead_letter_dup(dl);
    eddy_dead_letter_free(dl);
    cr_assert_eq(eddy_dead_letter_event(copy, &ev, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_event_id(ev), "fine");
    eddy_dead_letter_free(copy);

    /* Too large for the handle's limit: read, not decoded; a larger limit decodes it. */
    c.s.max_event_size = 8;
    eddy_dlq *small = must_open(&c);
    cr_assert_eq(eddy_dlq_get(small, "g", good, &dl, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_dead_letter_event(dl, &ev, &err), EDDY_ERR_TOO_LARGE);
    eddy_dead_letter_free(dl);
    eddy_dlq_close(small);

    /* Bad input: not there, not an id, no group, nowhere to put it. */
    dl = (eddy_dead_letter *)1;
    cr_expect_eq(eddy_dlq_get(d, "g", "1-1", &dl, &err), EDDY_ERR_NOT_FOUND);
    cr_expect_null(dl);
    cr_expect(strstr(err.detail, "1-1"), "%s", err.detail);
    cr_expect_eq(eddy_dlq_get(d, "other", good, &dl, &err), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_dlq_get(d, "g", "oops", &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(d, "g", "12-", &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(d, "g", "-1", &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(d, "g", NULL, &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(d, NULL, good, &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(d, "g", good, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_get(NULL, "g", good, &dl, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(dl);
    eddy_dlq_close(d);
}

/* ---- replaying ------------------------------------------------------------------------- */

ParameterizedTestParameters(dlq, replay_errors_leave_everything_in_place) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, replay_errors_leave_everything_in_place, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char nosubject[EDDY_DLQ_ID_SIZE], good[EDDY_DLQ_ID_SIZE];
    put_dead_letter(&c, "g", "not a subject", "e1", "t.x", nosubject);
    put_dead_letter(&c, "g", "orders", "e2", "t.x", good);
    eddy_error err = {0};
    cr_expect_eq(eddy_dlq_replay(d, "g", nosubject, NULL, 0, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "left in place"), "%s", err.detail);
    cr_expect_eq(eddy_dlq_replay(d, "g", "1-1", NULL, 0, &err), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_dlq_replay(d, "g", "x", NULL, 0, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_replay(d, "", good, NULL, 0, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_replay(NULL, "g", good, NULL, 0, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(count(d, "g"), 2);
    cr_expect_eq(stream_len(&c, "orders"), 0, "nothing published");

    /* The server refuses the publish (the subject's key is not a stream): the delete in the
     * same transaction ran, so the dead letter is written back. */
    redisReply *r = raw_cmdf(c.url, "SET {%s}:s:orders oops", c.ns);
    freeReplyObject(r);
    cr_expect_eq(eddy_dlq_replay(d, "g", good, NULL, 0, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "written back"), "%s", err.detail);
    cr_expect_eq(count(d, "g"), 2, "nothing lost");
    eddy_dead_letter *dl = NULL;
    cr_expect_eq(eddy_dlq_get(d, "g", good, &dl, NULL), EDDY_ERR_NOT_FOUND, "under a new id");
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    first fl = {NULL, 0};
    snprintf(cur.after, sizeof(cur.after), "%s", nosubject);
    cr_assert_eq(eddy_dlq_list(d, "g", &cur, 5, keep_first, &fl, &err), EDDY_OK);
    cr_assert_eq(fl.n, 1);
    cr_expect_str_eq(eddy_dead_letter_subject(fl.dl), "orders");
    cr_expect_str_eq(eddy_dead_letter_reason(fl.dl), "max_deliveries");
    cr_expect_str_eq(eddy_dead_letter_entry_id(fl.dl), "1700000000000-7");
    cr_expect_str_eq(eddy_dead_letter_group(fl.dl), "g");
    cr_expect_eq(eddy_dead_letter_deliveries(fl.dl), 3);
    cr_expect_str_eq(eddy_dead_letter_field(fl.dl, "id", NULL), "e2");

    /* Once the key is a stream again, it replays and registers the subject. */
    r = raw_cmdf(c.url, "DEL {%s}:s:orders", c.ns);
    freeReplyObject(r);
    char entry[EDDY_DLQ_ID_SIZE];
    cr_assert_eq(eddy_dlq_replay(d, "g", eddy_dead_letter_id(fl.dl), entry, sizeof(entry), &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_eq(stream_len(&c, "orders"), 1);
    cr_expect_eq(raw_int(c.url, "SISMEMBER {%s}:subjects orders", c.ns), 1);
    redisReply *e = raw_cmdf(c.url, "XRANGE {%s}:s:orders - +", c.ns);
    cr_assert_eq(e->elements, 1);
    cr_expect_str_eq(e->element[0]->element[0]->str, entry);
    redisReply *fields = e->element[0]->element[1];
    for (size_t i = 0; i < fields->elements; i += 2)
        cr_expect(strncmp(fields->element[i]->str, "_dlq_", 5) != 0, "%s travelled",
                  fields->element[i]->str);
    cr_expect_eq(fields->elements, 10, "the original's five fields, unchanged");
    freeReplyObject(e);
    eddy_dead_letter_free(fl.dl);
    cr_expect_eq(count(d, "g"), 1, "the one with no subject is left");
    eddy_dlq_close(d);
}

ParameterizedTestParameters(dlq, replay_all_replays_what_was_there_in_order) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, replay_all_replays_what_was_there_in_order, .timeout = 60) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    /* More than a page (64), on two subjects, with two that cannot be replayed among them. */
    char id[EDDY_DLQ_ID_SIZE], bad1[EDDY_DLQ_ID_SIZE], bad2[EDDY_DLQ_ID_SIZE];
    for (int i = 0; i < 150; i++) {
        char eid[16];
        snprintf(eid, sizeof(eid), "e%03d", i);
        put_dead_letter(&c, "g", i % 2 ? "b.odd" : "a.even", eid, "t.x", id);
        if (i == 10)
            put_dead_letter(&c, "g", "bad..subject", "x1", "t.x", bad1);
        if (i == 100)
            put_dead_letter(&c, "g", "", "x2", "t.x", bad2);
    }
    put_dead_letter(&c, "other", "a.even", "o1", "t.x", id);
    cr_expect_eq(count(d, "g"), 152);
    size_t replayed = 0;
    eddy_error err = {0};
    eddy_status st = eddy_dlq_replay_all(d, "g", &replayed, &err);
    cr_expect_eq(st, EDDY_ERR_MALFORMED, "%s", eddy_status_name(st));
    cr_expect(strstr(err.detail, "2 dead letter"), "%s", err.detail);
    cr_expect(strstr(err.detail, bad1), "names the first: %s", err.detail);
    cr_expect_eq(replayed, 150);
    cr_expect_eq(count(d, "g"), 2, "the two left in place");
    cr_expect_eq(count(d, "other"), 1, "another group's are untouched");
    cr_expect_eq(stream_len(&c, "a.even"), 75);
    cr_expect_eq(stream_len(&c, "b.odd"), 75);
    /* In their original order. */
    redisReply *r = raw_cmdf(c.url, "XRANGE {%s}:s:a.even - +", c.ns);
    cr_assert_eq(r->elements, 75);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        const char *eid = NULL;
        for (size_t j = 0; j + 1 < f->elements; j += 2)
            if (strcmp(f->element[j]->str, "id") == 0)
                eid = f->element[j + 1]->str;
        char want[16];
        snprintf(want, sizeof(want), "e%03zu", 2 * i);
        cr_expect_str_eq(eid, want);
    }
    freeReplyObject(r);
    /* Nothing left to replay but the two: the same answer, nothing more published. */
    st = eddy_dlq_replay_all(d, "g", &replayed, &err);
    cr_expect_eq(st, EDDY_ERR_MALFORMED);
    cr_expect_eq(replayed, 0);
    /* A group with none, or that never existed: nothing to do. */
    cr_expect_eq(eddy_dlq_replay_all(d, "never", &replayed, &err), EDDY_OK);
    cr_expect_eq(replayed, 0);
    cr_expect_eq(eddy_dlq_replay_all(d, "never", NULL, &err), EDDY_OK);
    cr_expect_eq(eddy_dlq_replay_all(d, NULL, &replayed, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_replay_all(NULL, "g", &replayed, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_dlq_close(d);
}

/* In one page, a publish the server refuses does not stop the others: they are replayed and
 * counted, the refused ones written back, and the status is the refusal. */
ParameterizedTestParameters(dlq, replay_all_goes_past_a_refused_publish) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, replay_all_goes_past_a_refused_publish, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char id[EDDY_DLQ_ID_SIZE];
    for (int i = 0; i < 6; i++)
        put_dead_letter(&c, "g", i % 3 == 1 ? "blocked" : "open", "e", "t.x", id);
    redisReply *r = raw_cmdf(c.url, "SET {%s}:s:blocked oops", c.ns);
    freeReplyObject(r);
    size_t replayed = 0;
    eddy_error err = {0};
    cr_expect_eq(eddy_dlq_replay_all(d, "g", &replayed, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "written back"), "%s", err.detail);
    cr_expect_eq(replayed, 4);
    cr_expect_eq(stream_len(&c, "open"), 4);
    cr_expect_eq(count(d, "g"), 2, "the two refused are back");
    r = raw_cmdf(c.url, "DEL {%s}:s:blocked", c.ns);
    freeReplyObject(r);
    cr_expect_eq(eddy_dlq_replay_all(d, "g", &replayed, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(replayed, 2);
    cr_expect_eq(stream_len(&c, "blocked"), 2);
    cr_expect_eq(count(d, "g"), 0);
    eddy_dlq_close(d);
}

/* ---- purging --------------------------------------------------------------------------- */

ParameterizedTestParameters(dlq, purges_one_and_all) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, dlq, purges_one_and_all, .timeout = 30) {
    ctx c;
    setup(&c, p);
    eddy_dlq *d = must_open(&c);
    char ids[4][EDDY_DLQ_ID_SIZE];
    for (int i = 0; i < 4; i++)
        put_dead_letter(&c, "g", "orders", "e", "t.x", ids[i]);
    eddy_error err = {0};
    cr_assert_eq(eddy_dlq_purge(d, "g", ids[1], &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(count(d, "g"), 3);
    cr_expect_eq(eddy_dlq_purge(d, "g", ids[1], &err), EDDY_ERR_NOT_FOUND);
    cr_expect(strstr(err.detail, ids[1]), "%s", err.detail);
    cr_expect_eq(eddy_dlq_purge(d, "never", ids[0], &err), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_dlq_purge(d, "g", "zz", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_purge(d, "", ids[0], &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_purge(NULL, "g", ids[0], &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(count(d, "g"), 3);
    cr_expect_eq(stream_len(&c, "orders"), 0, "a purge publishes nothing");
    size_t purged = 0;
    cr_assert_eq(eddy_dlq_purge_all(d, "g", &purged, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(purged, 3);
    cr_expect_eq(count(d, "g"), 0);
    cr_expect_eq(eddy_dlq_purge_all(d, "g", &purged, &err), EDDY_OK);
    cr_expect_eq(purged, 0);
    cr_expect_eq(eddy_dlq_purge_all(d, "g", NULL, &err), EDDY_OK);
    cr_expect_eq(eddy_dlq_purge_all(d, NULL, &purged, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_dlq_purge_all(NULL, "g", &purged, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_dlq_close(d);
}

/* ---- opening --------------------------------------------------------------------------- */

Test(dlq, open_reports_bad_settings_and_dead_servers) {
    eddy_settings s;
    eddy_settings_init(&s);
    eddy_dlq *d = (eddy_dlq *)1;
    eddy_error err = {0};
    cr_expect_eq(eddy_dlq_open(&s, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    s.url = "nope://x";
    cr_expect_eq(eddy_dlq_open(&s, &d, &err), EDDY_ERR_INVALID_URL);
    cr_expect_null(d);
    s.url = "redis://127.0.0.1:1";
    s.connect_timeout_ms = 500;
    cr_expect_eq(eddy_dlq_open(&s, &d, &err), EDDY_ERR_IO);
    cr_expect_null(d);
    eddy_dlq_close(NULL);
    /* Defaults: memory:// works with no settings at all. */
    cr_assert_eq(eddy_dlq_open(NULL, &d, &err), EDDY_OK, "%s", err.detail);
    size_t n = 1;
    cr_expect_eq(eddy_dlq_count(d, "g", &n, &err), EDDY_OK);
    cr_expect_eq(n, 0);
    eddy_dlq_close(d);
}
