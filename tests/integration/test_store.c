/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store and checkpoint storage, one table of scenarios run on both front ends
 * (blocking and reactive, through store_driver.h) and both backends (memory:// and the
 * fixture's redis-server): appends and reads with their metadata, expected versions and
 * conflicts that write nothing, atomic batches, concurrent appenders, paging across the store
 * with filters, publishing in the same step, malformed stored entries, checkpoints (the
 * store's and a user's own), bad input, a lost function library, a server restart or stall,
 * and a differential run of the same appends on both backends. A few scenarios belong to one
 * front end's calling shape and say so where they stand. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"
#include "store/store.h"
#include "store_driver.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
/* Scenarios that need a server of their own (killed, stopped, flushed) or Redis itself. */
static combo redis_combos[] = {{0, 1}, {1, 1}};
/* Front ends alone (the backend is fixed by the scenario). */
static combo frontends[] = {{0, 0}, {1, 0}};

typedef struct ctx {
    char url[128];
    char ns[96];
    eddy_settings s;
    const driver *bus; /* the messaging driver of the same front end */
} ctx;

/* The front end under test; each test runs in a process of its own. */
static const store_driver *sd;

static void setup(ctx *c, const combo *p, const char *prefix) {
    sd = p->frontend ? &reactive_store_driver : &blocking_store_driver;
    c->bus = p->frontend ? &reactive_driver : &blocking_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), prefix);
    if (p->backend)
        snprintf(c->url, sizeof(c->url), "%s", eddy_test_redis_url());
    else
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests";
    c->s.block_ms = 200;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend ? "redis" : "memory";
}

static tstore *must_open(ctx *c) {
    tstore *st = NULL;
    eddy_error err = {0};
    eddy_status rc = sd->open(&c->s, &st, &err);
    cr_assert_eq(rc, EDDY_OK, "%s open: %s (%s)", sd->name, eddy_status_name(rc), err.detail);
    return st;
}

/* Appends one event (id, type) and returns the new version. */
static long long must_append(tstore *st, const char *stream, const char *id, const char *type,
                             long long expected) {
    eddy_event *ev = make_event(id, type);
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = expected;
    long long v = -1;
    eddy_error err = {0};
    const eddy_event *evs[] = {ev};
    eddy_status rc = sd->append(st, stream, evs, 1, &o, &v, &err);
    cr_assert_eq(rc, EDDY_OK, "append %s to %s: %s (%s)", id, stream, eddy_status_name(rc),
                 err.detail);
    eddy_event_free(ev);
    return v;
}

static long long head(tstore *st) {
    long long h = -1;
    eddy_error err = {0};
    eddy_status rc = sd->head(st, &h, &err);
    cr_assert_eq(rc, EDDY_OK, "head: %s (%s)", eddy_status_name(rc), err.detail);
    return h;
}

static long long xlen(ctx *c, const char *kind, const char *rest) {
    if (rest)
        return raw_int(c->url, "XLEN {%s}:%s:%s", c->ns, kind, rest);
    return raw_int(c->url, "XLEN {%s}:%s", c->ns, kind);
}

/* What a read delivered. */
#define GOT_MAX 1024
typedef struct got {
    pthread_mutex_t m;
    int n;
    char ids[GOT_MAX][48];
    char types[GOT_MAX][16];
    char streams[GOT_MAX][32];
    long long versions[GOT_MAX], positions[GOT_MAX];
    char data[GOT_MAX][64];
    char tenant[GOT_MAX][16];
    int stop_at; /* return stop_status at this (1-based) call; 0: never */
    eddy_status stop_status;
} got;

static void got_init(got *g) {
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->m, NULL);
}

static eddy_status collect(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    got *g = user;
    if (g->stop_at && g->n + 1 == g->stop_at)
        return g->stop_status;
    cr_assert(g->n < GOT_MAX);
    int i = g->n++;
    snprintf(g->ids[i], sizeof(g->ids[i]), "%s", eddy_event_id(ev));
    snprintf(g->types[i], sizeof(g->types[i]), "%s", eddy_event_type(ev));
    snprintf(g->streams[i], sizeof(g->streams[i]), "%s", m->stream_id);
    g->versions[i] = m->version;
    g->positions[i] = m->position;
    size_t len;
    const char *d = eddy_event_data(ev, &len);
    snprintf(g->data[i], sizeof(g->data[i]), "%.*s", (int)len, d ? d : "");
    const char *t = eddy_event_extension(ev, "tenant");
    snprintf(g->tenant[i], sizeof(g->tenant[i]), "%s", t ? t : "");
    return EDDY_OK;
}

static void read_stream(tstore *st, const char *stream, long long after, got *g) {
    eddy_error err = {0};
    eddy_status rc = sd->read_stream(st, stream, after, collect, g, &err);
    cr_assert_eq(rc, EDDY_OK, "read %s: %s (%s)", stream, eddy_status_name(rc), err.detail);
}

/* ---- append and read back --------------------------------------------------------------- */

ParameterizedTestParameters(store, append_and_read_back) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, append_and_read_back, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-read");
    tstore *st = must_open(&c);
    cr_expect_eq(head(st), 0);
    got g;
    got_init(&g);
    read_stream(st, "order-1", 0, &g);
    cr_expect_eq(g.n, 0, "an unknown stream reads as empty");
    long long next = -1;
    cr_assert_eq(sd->read_all(st, 0, 10, NULL, collect, &g, &next, NULL), EDDY_OK);
    cr_expect_eq(next, 0);

    eddy_event *e1 = make_event("e1", "order.placed"), *e2 = make_event("e2", "order.paid"),
               *e3 = make_event("e3", "order.shipped");
    cr_assert_eq(eddy_event_set_extension(e2, "tenant", "acme", NULL), EDDY_OK);
    const eddy_event *batch[] = {e1, e2, e3};
    long long v = 0;
    eddy_error err = {0};
    cr_assert_eq(sd->append(st, "order-1", batch, 3, NULL, &v, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(v, 3);
    must_append(st, "order-2", "e4", "order.placed", EDDY_NO_STREAM);
    must_append(st, "order-2", "e5", "order.paid", 1);
    cr_expect_eq(must_append(st, "order-1", "e6", "order.closed", 3), 4);
    cr_expect_eq(sd->append(st, "order-1", batch, 1, NULL, NULL, NULL), EDDY_OK,
                 "new_version may be NULL");
    cr_expect_eq(head(st), 7);

    read_stream(st, "order-1", 0, &g);
    cr_assert_eq(g.n, 5);
    const char *ids[] = {"e1", "e2", "e3", "e6", "e1"};
    long long positions[] = {1, 2, 3, 6, 7};
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(g.ids[i], ids[i]);
        cr_expect_str_eq(g.streams[i], "order-1");
        cr_expect_eq(g.versions[i], i + 1);
        cr_expect_eq(g.positions[i], positions[i]);
    }
    cr_expect_str_eq(g.types[1], "order.paid");
    cr_expect_str_eq(g.data[1], "payload-e2");
    cr_expect_str_eq(g.tenant[1], "acme", "extensions survive the store");

    got all;
    got_init(&all);
    cr_assert_eq(sd->read_all(st, 0, 100, NULL, collect, &all, &next, &err), EDDY_OK);
    cr_assert_eq(all.n, 7);
    cr_expect_eq(next, 7);
    const char *streams[] = {"order-1", "order-1", "order-1", "order-2",
                             "order-2", "order-1", "order-1"};
    long long versions[] = {1, 2, 3, 1, 2, 4, 5};
    for (int i = 0; i < 7; i++) {
        cr_expect_eq(all.positions[i], i + 1);
        cr_expect_str_eq(all.streams[i], streams[i]);
        cr_expect_eq(all.versions[i], versions[i]);
    }
    /* A replay in pages of 2, each asked for after the previous one: 2 + 2 + 2 + 1, then an
     * empty page at the head. */
    got paged;
    got_init(&paged);
    long long after = 0;
    int pages = 0;
    for (;;) {
        int before = paged.n;
        cr_assert_eq(sd->read_all(st, after, 2, NULL, collect, &paged, &next, &err), EDDY_OK, "%s",
                     err.detail);
        cr_assert_leq(paged.n - before, 2, "a page of %d", paged.n - before);
        pages++;
        if (next == after)
            break;
        after = next;
    }
    cr_expect_eq(after, 7);
    cr_expect_eq(pages, 5, "pages: %d", pages);
    cr_assert_eq(paged.n, 7);
    for (int i = 0; i < 7; i++) {
        cr_expect_str_eq(paged.ids[i], all.ids[i]);
        cr_expect_eq(paged.positions[i], i + 1);
    }
    /* One stream after a version. */
    got_init(&g);
    read_stream(st, "order-1", 3, &g);
    cr_assert_eq(g.n, 2);
    cr_expect_str_eq(g.ids[0], "e6");
    cr_expect_eq(g.versions[1], 5);
    cr_expect_eq(g.positions[1], 7);
    /* The layout: entry ids are positions and versions. */
    redisReply *r = raw_cmdf(c.url, "XRANGE {%s}:es:all - +", c.ns);
    cr_assert_eq(r->elements, 7);
    cr_expect_str_eq(r->element[6]->element[0]->str, "7-0");
    freeReplyObject(r);
    r = raw_cmdf(c.url, "XRANGE {%s}:es:s:order-2 - +", c.ns);
    cr_assert_eq(r->elements, 2);
    cr_expect_str_eq(r->element[1]->element[0]->str, "2-0");
    freeReplyObject(r);
    cr_expect_eq(raw_int(c.url, "EXISTS {%s}:subjects", c.ns), 0, "nothing published");
    eddy_event_free(e1);
    eddy_event_free(e2);
    eddy_event_free(e3);
    sd->close(st);
}

/* A projection that writes while it reads: the store is not locked during callbacks. */
typedef struct copier {
    tstore *st;
    int copied;
} copier;

static eddy_status copy_to_archive(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    copier *c = user;
    const eddy_event *evs[] = {ev};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = m->version - 1; /* the archive mirrors the source's versions */
    eddy_status rc = sd->append(c->st, "archive", evs, 1, &o, NULL, NULL);
    if (rc == EDDY_OK)
        c->copied++;
    return rc;
}

/* Blocking front end only: the projection here calls the store and waits for the outcome from
 * inside the read's callback, a call a reactive callback cannot make (it runs on the loop,
 * which the wait would stop); the reactive rule for calls from callbacks is close_from_a_
 * callback's below. */
static combo blocking_combos[] = {{0, 0}, {0, 1}};
ParameterizedTestParameters(store, callbacks_may_use_the_store) {
    return cr_make_param_array(combo, blocking_combos, 2);
}
ParameterizedTest(combo *p, store, callbacks_may_use_the_store, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-reenter");
    tstore *st = must_open(&c);
    for (int i = 1; i <= 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "s%d", i);
        must_append(st, "source", id, "t", i - 1);
    }
    copier cp = {st, 0};
    eddy_error err = {0};
    cr_assert_eq(sd->read_stream(st, "source", 0, copy_to_archive, &cp, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(cp.copied, 5);
    long long next;
    copier again = {st, 0};
    /* read_all over the source and the growing archive: one page of what existed. */
    cr_expect_eq(sd->read_all(st, 0, 5, NULL, copy_to_archive, &again, &next, &err),
                 EDDY_ERR_VERSION_CONFLICT, "the archive already has version 1");
    cr_expect_eq(next, 0);
    got g;
    got_init(&g);
    read_stream(st, "archive", 0, &g);
    cr_assert_eq(g.n, 5);
    cr_expect_str_eq(g.ids[4], "s5");
    cr_expect_eq(g.positions[4], 10);
    sd->close(st);
}

/* ---- expected versions ------------------------------------------------------------------ */

ParameterizedTestParameters(store, expected_versions_and_conflicts) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, expected_versions_and_conflicts, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-version");
    tstore *st = must_open(&c);
    cr_expect_eq(must_append(st, "acct", "a1", "t", EDDY_NO_STREAM), 1);
    cr_expect_eq(must_append(st, "other", "o1", "t", EDDY_ANY_VERSION), 1);
    cr_expect_eq(must_append(st, "acct", "a2", "t", 1), 2);

    eddy_event *x = make_event("x", "t"), *y = make_event("y", "t"), *z = make_event("z", "t");
    const eddy_event *batch[] = {x, y, z};
    struct {
        long long expected;
        size_t n;
        const char *detail;
    } conflicts[] = {
        {EDDY_NO_STREAM, 1, "stream 'acct': expected version 0, actual version 2"},
        {1, 1, "expected version 1, actual version 2"},
        {5, 1, "expected version 5, actual version 2"},
        {1, 3, "expected version 1, actual version 2"}, /* a batch: none of it */
        {EDDY_NO_STREAM, 3, "actual version 2"},
    };
    for (size_t i = 0; i < sizeof(conflicts) / sizeof(conflicts[0]); i++) {
        eddy_append_opts o;
        eddy_append_opts_init(&o);
        o.expected_version = conflicts[i].expected;
        long long v = -7;
        eddy_error err = {0};
        cr_expect_eq(sd->append(st, "acct", batch, conflicts[i].n, &o, &v, &err),
                     EDDY_ERR_VERSION_CONFLICT, "case %zu", i);
        cr_expect_eq(err.status, EDDY_ERR_VERSION_CONFLICT);
        cr_expect(strstr(err.detail, conflicts[i].detail), "case %zu: %s", i, err.detail);
        cr_expect_eq(v, -7, "new_version untouched on a conflict");
    }
    /* Nothing was written anywhere. */
    cr_expect_eq(xlen(&c, "es:s", "acct"), 2);
    cr_expect_eq(xlen(&c, "es:all", NULL), 3);
    cr_expect_eq(head(st), 3);
    /* The right expected version appends the whole batch. */
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = 2;
    long long v = 0;
    cr_assert_eq(sd->append(st, "acct", batch, 3, &o, &v, NULL), EDDY_OK);
    cr_expect_eq(v, 5);
    cr_expect_eq(head(st), 6);
    got g;
    got_init(&g);
    read_stream(st, "acct", 2, &g);
    cr_assert_eq(g.n, 3);
    cr_expect_str_eq(g.ids[0], "x");
    cr_expect_eq(g.positions[2], 6);
    eddy_event_free(x);
    eddy_event_free(y);
    eddy_event_free(z);
    sd->close(st);
}

/* ---- concurrency ------------------------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 40
#define ROUNDS 25

/* Several threads append at once: on the blocking front end each call waits on its own
 * thread; on the reactive one the calls meet on the loop, several in flight at once. */
typedef struct worker {
    tstore *st;
    int index;
    pthread_barrier_t *barrier;
    int wins, conflicts, failures;
} worker;

static void *append_any(void *arg) {
    worker *w = arg;
    char id[32], own[16];
    snprintf(own, sizeof(own), "own-%d", w->index);
    for (int j = 0; j < PER_THREAD; j++) {
        snprintf(id, sizeof(id), "t%d-%03d", w->index, j);
        eddy_event *ev = make_event(id, "t");
        const eddy_event *evs[] = {ev};
        if (sd->append(w->st, "hot", evs, 1, NULL, NULL, NULL) != EDDY_OK ||
            sd->append(w->st, own, evs, 1, NULL, NULL, NULL) != EDDY_OK)
            w->failures++;
        eddy_event_free(ev);
    }
    return NULL;
}

ParameterizedTestParameters(store, concurrent_appenders_any_version) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, concurrent_appenders_any_version, .timeout = 120) {
    ctx c;
    setup(&c, p, "es-any");
    tstore *st = must_open(&c);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.st = st, .index = i};
        cr_assert_eq(pthread_create(&th[i], NULL, append_any, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(w[i].failures, 0);
    }
    got *g = malloc(sizeof(*g));
    got_init(g);
    read_stream(st, "hot", 0, g);
    cr_assert_eq(g->n, THREADS * PER_THREAD);
    int last_of[THREADS];
    for (int i = 0; i < THREADS; i++)
        last_of[i] = -1;
    for (int i = 0; i < g->n; i++) {
        cr_expect_eq(g->versions[i], i + 1, "versions without gaps");
        if (i)
            cr_expect_gt(g->positions[i], g->positions[i - 1], "positions increase");
        int t, j;
        cr_assert_eq(sscanf(g->ids[i], "t%d-%d", &t, &j), 2);
        cr_expect_gt(j, last_of[t], "each thread's events in its order");
        last_of[t] = j;
    }
    got *all = malloc(sizeof(*all));
    got_init(all);
    long long next = 0;
    cr_assert_eq(sd->read_all(st, 0, 1000, NULL, collect, all, &next, NULL), EDDY_OK);
    cr_expect_eq(all->n, 2 * THREADS * PER_THREAD);
    for (int i = 0; i < all->n; i++)
        cr_expect_eq(all->positions[i], i + 1, "positions unique, from 1, without gaps");
    cr_expect_eq(head(st), 2 * THREADS * PER_THREAD);
    free(g);
    free(all);
    sd->close(st);
}

static void *append_expected(void *arg) {
    worker *w = arg;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(w->barrier);
        char id[32];
        snprintf(id, sizeof(id), "r%d-t%d", round, w->index);
        eddy_event *ev = make_event(id, "t");
        const eddy_event *evs[] = {ev};
        eddy_append_opts o;
        eddy_append_opts_init(&o);
        o.expected_version = round; /* every thread saw the stream at this version */
        eddy_status rc = sd->append(w->st, "contended", evs, 1, &o, NULL, NULL);
        if (rc == EDDY_OK)
            w->wins++;
        else if (rc == EDDY_ERR_VERSION_CONFLICT)
            w->conflicts++;
        else
            w->failures++;
        eddy_event_free(ev);
        pthread_barrier_wait(w->barrier);
    }
    return NULL;
}

ParameterizedTestParameters(store, concurrent_appenders_expected_version) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, concurrent_appenders_expected_version, .timeout = 120) {
    ctx c;
    setup(&c, p, "es-race");
    tstore *st = must_open(&c);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, THREADS);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.st = st, .index = i, .barrier = &barrier};
        cr_assert_eq(pthread_create(&th[i], NULL, append_expected, &w[i]), 0);
    }
    int wins = 0, conflicts = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        wins += w[i].wins;
        conflicts += w[i].conflicts;
        cr_expect_eq(w[i].failures, 0);
    }
    pthread_barrier_destroy(&barrier);
    cr_expect_eq(wins, ROUNDS, "exactly one winner per round");
    cr_expect_eq(conflicts, ROUNDS * (THREADS - 1));
    got g;
    got_init(&g);
    read_stream(st, "contended", 0, &g);
    cr_assert_eq(g.n, ROUNDS);
    for (int i = 0; i < ROUNDS; i++) {
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "r%d-", i);
        cr_expect(strncmp(g.ids[i], prefix, strlen(prefix)) == 0, "version %d is %s", i + 1,
                  g.ids[i]);
    }
    sd->close(st);
}

/* ---- reading across the store ----------------------------------------------------------- */

ParameterizedTestParameters(store, read_all_pages_with_a_filter) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, read_all_pages_with_a_filter, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-page");
    tstore *st = must_open(&c);
    const char *types[] = {"a", "b", "c"};
    int versions[12] = {0};
    for (int i = 0; i < 60; i++) {
        char stream[16], id[16];
        snprintf(stream, sizeof(stream), "s%d", i % 12);
        snprintf(id, sizeof(id), "e%d", i + 1);
        long long v = must_append(st, stream, id, types[i % 3], versions[i % 12]);
        cr_assert_eq(v, ++versions[i % 12]);
    }
    long long end = head(st);
    cr_assert_eq(end, 60);
    const char *want[] = {"a"};
    eddy_filter *f = eddy_filter_types(want, 1);
    cr_assert(f);
    got g;
    got_init(&g);
    long long after = 0;
    int pages = 0;
    while (after != end) {
        long long next = -1;
        eddy_error err = {0};
        cr_assert_eq(sd->read_all(st, after, 7, f, collect, &g, &next, &err), EDDY_OK, "%s",
                     err.detail);
        cr_assert_gt(next, after, "every page advances, filtered entries included");
        cr_assert_leq(next - after, 7, "a page examines at most max_entries");
        after = next;
        pages++;
    }
    cr_expect_eq(pages, 9);
    cr_assert_eq(g.n, 20);
    for (int i = 0; i < g.n; i++) {
        cr_expect_str_eq(g.types[i], "a");
        cr_expect_eq(g.positions[i], 3 * i + 1);
        char stream[16];
        snprintf(stream, sizeof(stream), "s%d", (3 * i) % 12);
        cr_expect_str_eq(g.streams[i], stream);
        cr_expect_eq(g.versions[i], (3 * i) / 12 + 1);
    }
    /* At the head: nothing, and the position stays. */
    long long next = -1;
    cr_assert_eq(sd->read_all(st, end, 7, f, collect, &g, &next, NULL), EDDY_OK);
    cr_expect_eq(next, end);
    cr_expect_eq(g.n, 20);
    /* A page whose every entry is filtered out still moves on. */
    const char *only_c[] = {"c"};
    eddy_filter *fc = eddy_filter_types(only_c, 1);
    cr_assert_eq(sd->read_all(st, 0, 2, fc, collect, &g, &next, NULL), EDDY_OK);
    cr_expect_eq(next, 2);
    cr_expect_eq(g.n, 20);
    /* A callback that stops: the status comes back, the position is before the event. */
    got stop;
    got_init(&stop);
    stop.stop_at = 3;
    stop.stop_status = EDDY_ERR_HANDLER_FAILED;
    eddy_error err = {0};
    cr_expect_eq(sd->read_all(st, 0, 50, f, collect, &stop, &next, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(stop.n, 2);
    cr_expect_eq(next, 6, "positions 1-6 were examined; 7 was refused by the callback");
    cr_expect(strstr(err.detail, "position 7"), "%s", err.detail);
    eddy_filter_free(f);
    eddy_filter_free(fc);
    sd->close(st);
}

ParameterizedTestParameters(store, read_stream_after_version_in_pages) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, read_stream_after_version_in_pages, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-long");
    tstore *st = must_open(&c);
    for (int b = 0; b < 10; b++) {
        eddy_event *evs[30];
        for (int i = 0; i < 30; i++) {
            char id[16];
            snprintf(id, sizeof(id), "v%d", b * 30 + i + 1);
            evs[i] = make_event(id, "t");
        }
        long long v = 0;
        cr_assert_eq(sd->append(st, "long", (const eddy_event *const *)evs, 30, NULL, &v, NULL),
                     EDDY_OK);
        cr_assert_eq(v, (b + 1) * 30);
        for (int i = 0; i < 30; i++)
            eddy_event_free(evs[i]);
    }
    got *g = malloc(sizeof(*g));
    got_init(g);
    read_stream(st, "long", 0, g);
    cr_assert_eq(g->n, 300, "more than one page (256) is read");
    for (int i = 0; i < 300; i++) {
        char id[16];
        snprintf(id, sizeof(id), "v%d", i + 1);
        cr_expect_str_eq(g->ids[i], id);
        cr_expect_eq(g->versions[i], i + 1);
        cr_expect_eq(g->positions[i], i + 1);
    }
    got_init(g);
    read_stream(st, "long", 250, g);
    cr_expect_eq(g->n, 50);
    cr_expect_eq(g->versions[0], 251);
    got_init(g);
    read_stream(st, "long", 300, g);
    cr_expect_eq(g->n, 0);
    read_stream(st, "long", 100000, g);
    cr_expect_eq(g->n, 0);
    got_init(g);
    g->stop_at = 260;
    g->stop_status = EDDY_ERR_CANCELLED;
    cr_expect_eq(sd->read_stream(st, "long", 0, collect, g, NULL), EDDY_ERR_CANCELLED);
    cr_expect_eq(g->n, 259, "a stop in the second page ends the read there");
    free(g);
    sd->close(st);
}

/* ---- publishing in the same step -------------------------------------------------------- */

typedef struct inbox {
    pthread_mutex_t m;
    pthread_cond_t cond;
    int n;
    char ids[16][32];
    char entries[16][48];
    eddy_event_meta meta[16]; /* stream_id copied into streams */
    char streams[16][32];
    int has_meta[16];
} inbox;

static eddy_status on_published(eddy_delivery *d, void *user) {
    inbox *in = user;
    pthread_mutex_lock(&in->m);
    if (in->n < 16) {
        snprintf(in->ids[in->n], 32, "%s", eddy_event_id(eddy_delivery_event(d)));
        snprintf(in->entries[in->n], 48, "%s", eddy_delivery_entry_id(d));
        in->has_meta[in->n] = eddy_delivery_stored_meta(d, &in->meta[in->n]);
        if (in->has_meta[in->n])
            snprintf(in->streams[in->n], 32, "%s", in->meta[in->n].stream_id);
    }
    in->n++;
    pthread_cond_broadcast(&in->cond);
    pthread_mutex_unlock(&in->m);
    return EDDY_OK;
}

static int inbox_wait(inbox *in, int n, long long ms) {
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000;
    if (at.tv_nsec >= 1000000000) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&in->m);
    while (in->n < n && pthread_cond_timedwait(&in->cond, &in->m, &at) == 0)
        ;
    int got_n = in->n;
    pthread_mutex_unlock(&in->m);
    return got_n;
}

/* The value of `field` in the entry `id` of `key`. */
static void entry_field(ctx *c, const char *key, const char *id, const char *field, char *out,
                        size_t size) {
    redisReply *r = raw_cmdf(c->url, "XRANGE %s %s %s", key, id, id);
    out[0] = '\0';
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 1, "no entry %s in %s", id, key);
    redisReply *f = r->element[0]->element[1];
    for (size_t i = 0; i + 1 < f->elements; i += 2)
        if (strcmp(f->element[i]->str, field) == 0)
            snprintf(out, size, "%s", f->element[i + 1]->str);
    freeReplyObject(r);
}

ParameterizedTestParameters(store, publish_in_the_same_step) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, publish_in_the_same_step, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-pub");
    inbox in = {0};
    pthread_mutex_init(&in.m, NULL);
    pthread_cond_init(&in.cond, NULL);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "placed";
    sp.pattern = "orders.placed";
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = on_published;
    sp.user = &in;
    /* The subscriber is a bus of the same front end. */
    tbus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(c.bus->bus_new(&c.s, &sp, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(c.bus->start(bus, &err), EDDY_OK, "%s", err.detail);
    tstore *st = must_open(&c);

    eddy_event *e1 = make_event("p1", "order.placed"), *e2 = make_event("p2", "order.placed");
    const eddy_event *evs[] = {e1, e2};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = EDDY_NO_STREAM;
    o.publish_subject = "orders.placed";
    long long v = 0;
    cr_assert_eq(sd->append(st, "order-7", evs, 2, &o, &v, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(v, 2);
    cr_assert_eq(inbox_wait(&in, 2, 10000), 2);
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:orders.placed", c.ns);
    for (int i = 0; i < 2; i++) {
        cr_expect_str_eq(in.ids[i], i == 0 ? "p1" : "p2");
        char value[64];
        entry_field(&c, key, in.entries[i], "_stream", value, sizeof(value));
        cr_expect_str_eq(value, "order-7");
        entry_field(&c, key, in.entries[i], "_version", value, sizeof(value));
        cr_expect_str_eq(value, i == 0 ? "1" : "2");
        entry_field(&c, key, in.entries[i], "_position", value, sizeof(value));
        cr_expect_str_eq(value, i == 0 ? "1" : "2");
        /* ... and the subscriber sees them through the delivery. */
        cr_expect(in.has_meta[i], "no stored metadata on the delivery");
        cr_expect_str_eq(in.streams[i], "order-7");
        cr_expect_eq(in.meta[i].version, i + 1);
        cr_expect_eq(in.meta[i].position, i + 1);
    }
    cr_expect_eq(raw_int(c.url, "SISMEMBER {%s}:subjects orders.placed", c.ns), 1,
                 "pattern subscribers can discover the subject");

    /* A conflicting append publishes nothing. */
    cr_expect_eq(sd->append(st, "order-7", evs, 2, &o, &v, &err), EDDY_ERR_VERSION_CONFLICT);
    /* The reserved attribute is refused only when publishing, and refused before sending. */
    eddy_event *failed = make_event("f1", "order.placed");
    cr_assert_eq(eddy_event_set_extension(failed, "messagingfailed", "true", NULL), EDDY_OK);
    const eddy_event *bad[] = {failed};
    o.expected_version = EDDY_ANY_VERSION;
    cr_expect_eq(sd->append(st, "order-7", bad, 1, &o, &v, &err), EDDY_ERR_RESERVED_ATTRIBUTE);
    cr_expect(strstr(err.detail, "messagingfailed"), "%s", err.detail);
    o.publish_subject = "orders..placed";
    cr_expect_eq(sd->append(st, "order-7", evs, 1, &o, &v, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(inbox_wait(&in, 3, 500), 2, "nothing more was published");
    cr_expect_eq(xlen(&c, "s", "orders.placed"), 2);
    cr_expect_eq(xlen(&c, "es:all", NULL), 2);
    o.publish_subject = NULL;
    cr_expect_eq(sd->append(st, "order-7", bad, 1, &o, &v, &err), EDDY_OK,
                 "stored without publishing: %s", err.detail);
    cr_expect_eq(v, 3);
    cr_expect_eq(inbox_wait(&in, 3, 300), 2);

    c.bus->free(bus);
    sd->close(st);
    eddy_event_free(e1);
    eddy_event_free(e2);
    eddy_event_free(failed);
    pthread_cond_destroy(&in.cond);
    pthread_mutex_destroy(&in.m);
}

/* ---- malformed stored entries ----------------------------------------------------------- */

ParameterizedTestParameters(store, malformed_entries_are_reported) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, malformed_entries_are_reported, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-bad");
    tstore *st = must_open(&c);
    must_append(st, "good", "g1", "t", EDDY_ANY_VERSION);
    must_append(st, "good", "g2", "t", EDDY_ANY_VERSION);
    /* Written behind the store's back: no id or source. */
    redisReply *r = raw_cmdf(c.url,
                             "XADD {%s}:es:all 3-0 specversion 1.0 type t _stream good _version 3 "
                             "_position 3",
                             c.ns);
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    got g;
    got_init(&g);
    long long next = -1;
    eddy_error err = {0};
    cr_expect_eq(sd->read_all(st, 0, 10, NULL, collect, &g, &next, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "position 3"), "%s", err.detail);
    cr_expect(strstr(err.detail, "field 'id': missing"), "%s", err.detail);
    cr_expect_eq(g.n, 2, "the entries before it were delivered");
    cr_expect_eq(next, 2);
    /* The store goes on past the foreign entry: the next position is above it. */
    cr_expect_eq(must_append(st, "good", "g3", "t", 2), 3);
    got_init(&g);
    read_stream(st, "good", 2, &g);
    cr_assert_eq(g.n, 1);
    cr_expect_eq(g.positions[0], 4);
    cr_expect_eq(head(st), 4);
    got_init(&g);
    cr_expect_eq(sd->read_all(st, 3, 10, NULL, collect, &g, &next, NULL), EDDY_OK);
    cr_expect_eq(g.n, 1);
    cr_expect_eq(next, 4);

    /* In a stream: bad metadata. */
    r = raw_cmdf(c.url,
                 "XADD {%s}:es:s:odd 1-0 specversion 1.0 id i source /s type t _stream other "
                 "_version 1 _position 9",
                 c.ns);
    freeReplyObject(r);
    got_init(&g);
    cr_expect_eq(sd->read_stream(st, "odd", 0, collect, &g, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "version 1"), "%s", err.detail);
    cr_expect_eq(g.n, 0);

    /* A counter that does not count: head says so, and an append is refused, writing nothing. */
    r = raw_cmdf(c.url, "SET {%s}:es:pos abc", c.ns);
    freeReplyObject(r);
    long long h;
    cr_expect_eq(sd->head(st, &h, &err), EDDY_ERR_MALFORMED);
    eddy_event *ev = make_event("g4", "t");
    const eddy_event *evs[] = {ev};
    cr_expect_eq(sd->append(st, "good", evs, 1, NULL, NULL, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "position counter is not a count"), "%s", err.detail);
    cr_expect_eq(xlen(&c, "es:s", "good"), 3);
    cr_expect_eq(xlen(&c, "es:all", NULL), 4);
    /* A key of the wrong type. */
    r = raw_cmdf(c.url, "DEL {%s}:es:pos", c.ns);
    freeReplyObject(r);
    r = raw_cmdf(c.url, "SET {%s}:es:s:str x", c.ns);
    freeReplyObject(r);
    cr_expect_eq(sd->append(st, "str", evs, 1, NULL, NULL, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "WRONGTYPE"), "%s", err.detail);
    cr_expect_eq(sd->read_stream(st, "str", 0, collect, &g, &err), EDDY_ERR_BACKEND);
    eddy_event_free(ev);
    sd->close(st);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* A user's own checkpoint storage: a few markers in memory behind a mutex. */
typedef struct my_ckpt {
    pthread_mutex_t m;
    int n;
    char feed[8][32];
    char value[8][64];
    int calls;
} my_ckpt;

static int my_find(my_ckpt *c, const char *feed) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->feed[i], feed) == 0)
            return i;
    return -1;
}

static eddy_status my_exists(void *self, const char *feed, bool *exists, eddy_error *err) {
    (void)err;
    my_ckpt *c = self;
    pthread_mutex_lock(&c->m);
    c->calls++;
    *exists = my_find(c, feed) >= 0;
    pthread_mutex_unlock(&c->m);
    return EDDY_OK;
}

static eddy_status my_read(void *self, const char *feed, char *buf, size_t size, bool *found,
                           eddy_error *err) {
    my_ckpt *c = self;
    pthread_mutex_lock(&c->m);
    c->calls++;
    int i = my_find(c, feed);
    eddy_status st = EDDY_OK;
    *found = i >= 0;
    buf[0] = '\0';
    if (i >= 0 && strlen(c->value[i]) >= size) {
        st = EDDY_ERR_TOO_LARGE;
        if (err) {
            err->status = st;
            snprintf(err->detail, sizeof(err->detail), "marker of %s does not fit", feed);
        }
    } else if (i >= 0) {
        snprintf(buf, size, "%s", c->value[i]);
    }
    pthread_mutex_unlock(&c->m);
    return st;
}

static eddy_status my_save(void *self, const char *feed, const char *value, eddy_error *err) {
    (void)err;
    my_ckpt *c = self;
    pthread_mutex_lock(&c->m);
    c->calls++;
    int i = my_find(c, feed);
    if (i < 0) {
        i = c->n++;
        snprintf(c->feed[i], sizeof(c->feed[i]), "%s", feed);
    }
    snprintf(c->value[i], sizeof(c->value[i]), "%s", value);
    pthread_mutex_unlock(&c->m);
    return EDDY_OK;
}

static eddy_status my_remove(void *self, const char *feed, eddy_error *err) {
    (void)err;
    my_ckpt *c = self;
    pthread_mutex_lock(&c->m);
    c->calls++;
    int i = my_find(c, feed);
    if (i >= 0) {
        c->n--;
        memcpy(c->feed[i], c->feed[c->n], sizeof(c->feed[i]));
        memcpy(c->value[i], c->value[c->n], sizeof(c->value[i]));
    }
    pthread_mutex_unlock(&c->m);
    return EDDY_OK;
}

static const eddy_checkpoint_ops my_ops = {my_exists, my_read, my_save, my_remove};

/* The scenario a catch-up feed puts its storage through, on any implementation. */
static void checkpoint_scenario(eddy_checkpoints cp) {
    bool b = true;
    char buf[64];
    eddy_error err = {0};
    cr_assert_eq(cp.ops->exists(cp.self, "order-status", &b, &err), EDDY_OK, "%s", err.detail);
    cr_expect_not(b);
    b = true;
    cr_assert_eq(cp.ops->read(cp.self, "order-status", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect_not(b);
    cr_expect_str_eq(buf, "");
    cr_assert_eq(cp.ops->remove(cp.self, "order-status", &err), EDDY_OK,
                 "removing a missing marker is fine");
    cr_assert_eq(cp.ops->save(cp.self, "order-status", "42", &err), EDDY_OK);
    cr_assert_eq(cp.ops->save(cp.self, "other-feed", "7", &err), EDDY_OK);
    cr_assert_eq(cp.ops->exists(cp.self, "order-status", &b, &err), EDDY_OK);
    cr_expect(b);
    cr_assert_eq(cp.ops->read(cp.self, "order-status", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect(b);
    cr_expect_str_eq(buf, "42");
    cr_assert_eq(cp.ops->save(cp.self, "order-status", "caught-up:1234", &err), EDDY_OK);
    cr_assert_eq(cp.ops->read(cp.self, "order-status", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect_str_eq(buf, "caught-up:1234");
    char small[4];
    cr_expect_eq(cp.ops->read(cp.self, "order-status", small, sizeof(small), &b, &err),
                 EDDY_ERR_TOO_LARGE);
    cr_assert_eq(cp.ops->remove(cp.self, "order-status", &err), EDDY_OK);
    cr_assert_eq(cp.ops->exists(cp.self, "order-status", &b, &err), EDDY_OK);
    cr_expect_not(b);
    cr_assert_eq(cp.ops->read(cp.self, "other-feed", buf, sizeof(buf), &b, &err), EDDY_OK);
    cr_expect(b, "other markers stay");
    cr_expect_str_eq(buf, "7");
}

ParameterizedTestParameters(store, checkpoints) { return cr_make_param_array(combo, combos, 4); }
ParameterizedTest(combo *p, store, checkpoints, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-ckpt");
    tstore *st = must_open(&c);
    eddy_checkpoints cp = sd->checkpoints(st);
    checkpoint_scenario(cp);
    cr_expect_eq(raw_int(c.url, "EXISTS {%s}:ckpt:other-feed", c.ns), 1, "the key layout");
    cr_expect_eq(raw_int(c.url, "EXISTS {%s}:ckpt:order-status", c.ns), 0, "a removed marker");
    /* The store's checks. */
    eddy_error err = {0};
    bool b;
    char buf[8];
    cr_expect_eq(cp.ops->exists(cp.self, "bad:feed", &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "feed id 'bad:feed'"), "%s", err.detail);
    cr_expect_eq(cp.ops->save(cp.self, "", "1", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->save(cp.self, "f", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->remove(cp.self, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->exists(cp.self, "{x}", &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->remove(cp.self, "a b", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->read(cp.self, NULL, buf, sizeof(buf), &b, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    /* (NULL out-pointers and buffers: the front end's own shape, in shape_refusals.) */
    /* A marker written by someone else with the wrong type. */
    redisReply *r = raw_cmdf(c.url, "SADD {%s}:ckpt:odd x", c.ns);
    freeReplyObject(r);
    cr_expect_eq(cp.ops->read(cp.self, "odd", buf, sizeof(buf), &b, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "WRONGTYPE"), "%s", err.detail);
    sd->close(st);

    /* The same calls on a user's own implementation. */
    my_ckpt mine = {0};
    pthread_mutex_init(&mine.m, NULL);
    eddy_checkpoints user = {&my_ops, &mine};
    checkpoint_scenario(user);
    cr_expect_gt(mine.calls, 10);
    pthread_mutex_destroy(&mine.m);
}

/* ---- bad input -------------------------------------------------------------------------- */

ParameterizedTestParameters(store, bad_input_is_refused_before_sending) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, bad_input_is_refused_before_sending, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-input");
    c.s.max_event_size = 1024;
    eddy_error err = {0};
    tstore *st = NULL;
    eddy_settings bad = c.s;
    bad.url = "nope://x";
    cr_expect_eq(sd->open(&bad, &st, &err), EDDY_ERR_INVALID_URL);
    cr_expect_null(st);
    bad = c.s;
    bad.ns = "a:b";
    cr_expect_eq(sd->open(&bad, &st, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(st);
    if (p->backend) {
        char dead[64];
        snprintf(dead, sizeof(dead), "redis://127.0.0.1:%d", eddy_test_free_port());
        bad = c.s;
        bad.url = dead;
        bad.connect_timeout_ms = 500;
        eddy_status rc = sd->open(&bad, &st, &err);
        if (sd->reactive) {
            /* The reactive open connects on the loop: the first operation reports it. */
            cr_assert_eq(rc, EDDY_OK, "%s", err.detail);
            long long h;
            rc = sd->head(st, &h, &err);
            sd->close(st);
            st = NULL;
        }
        cr_expect_eq(rc, EDDY_ERR_IO, "%s (%s)", eddy_status_name(rc), err.detail);
        cr_expect_null(st);
    }
    st = must_open(&c);

    eddy_event *good = make_event("g", "t"), *invalid = eddy_event_new(),
               *big = make_event("big", "t");
    char data[2000];
    memset(data, 'x', sizeof(data));
    cr_assert_eq(eddy_event_set_data(big, data, sizeof(data)), EDDY_OK);
    const eddy_event *one[] = {good};
    const eddy_event *with_null[] = {good, NULL};
    const eddy_event *with_invalid[] = {good, invalid};
    const eddy_event *with_big[] = {good, big};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = -3;

    cr_expect_eq(sd->append(st, NULL, one, 1, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    const char *bad_ids[] = {"", "a b", "a:b", "{a}", "x\ny"};
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        cr_expect_eq(sd->append(st, bad_ids[i], one, 1, NULL, NULL, &err),
                     EDDY_ERR_INVALID_ARGUMENT, "'%s'", bad_ids[i]);
        cr_expect(strstr(err.detail, "stream id"), "%s", err.detail);
        cr_expect_eq(sd->read_stream(st, bad_ids[i], 0, collect, NULL, &err),
                     EDDY_ERR_INVALID_ARGUMENT);
    }
    cr_expect_eq(sd->append(st, "s", one, 0, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "n is 0"), "%s", err.detail);
    cr_expect_eq(sd->append(st, "s", NULL, 1, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(sd->append(st, "s", with_null, 2, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(sd->append(st, "s", with_invalid, 2, NULL, NULL, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strstr(err.detail, "event 1"), "%s", err.detail);
    cr_expect_eq(sd->append(st, "s", with_big, 2, NULL, NULL, &err), EDDY_ERR_TOO_LARGE);
    cr_expect(strstr(err.detail, "the limit is 1024"), "%s", err.detail);
    cr_expect_eq(sd->append(st, "s", one, 1, &o, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);

    o.expected_version = EDDY_ANY_VERSION;
    o.publish_subject = "bad subject";
    cr_expect_eq(sd->append(st, "s", one, 1, &o, NULL, &err), EDDY_ERR_INVALID_SUBJECT);
    long long next = 17;
    cr_expect_eq(sd->read_stream(st, "s", -1, collect, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(sd->read_all(st, 0, 0, NULL, collect, NULL, &next, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    /* NULL handles, out-pointers and callbacks: each front end's own calling shape. */
    sd->shape_refusals(&c.s, st);
    cr_expect_eq(sd->append(st, "s", one, 1, NULL, NULL, NULL), EDDY_OK, "err may be NULL");

    /* Nothing of the refused calls reached the backend. */
    cr_expect_eq(head(st), 1);
    cr_expect_eq(xlen(&c, "es:all", NULL), 1);
    sd->close(st);
    eddy_event_free(good);
    eddy_event_free(invalid);
    eddy_event_free(big);
}

/* ---- the function library --------------------------------------------------------------- */

/* The database index in a URL is not capped by eddy: the server's `databases` setting decides,
 * and an index it does not have is its own clear error, at open. */
ParameterizedTestParameters(store, a_database_index_the_server_lacks_is_its_error) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, store, a_database_index_the_server_lacks_is_its_error, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-db");
    int port = 0;
    cr_assert_eq(sscanf(eddy_test_redis_url(), "redis://127.0.0.1:%d", &port), 1);
    char url[96];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/16", port); /* 16 databases: 0..15 */
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.log = eddy_test_log;
    tstore *st = NULL;
    eddy_error err = {0};
    eddy_status rc = sd->open(&s, &st, &err);
    if (sd->reactive) {
        /* The reactive open connects on the loop: the first operation reports it. */
        cr_assert_eq(rc, EDDY_OK, "%s", err.detail);
        long long h;
        rc = sd->head(st, &h, &err);
        sd->close(st);
        st = NULL;
    }
    cr_expect_neq(rc, EDDY_OK);
    cr_expect(strstr(err.detail, "DB index is out of range") != NULL, "%s: %s",
              eddy_status_name(rc), err.detail);
    cr_expect_null(st);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/15", port);
    cr_expect_eq(sd->open(&s, &st, &err), EDDY_OK, "%s", err.detail);
    long long h = -1;
    cr_expect_eq(sd->head(st, &h, &err), EDDY_OK, "%s", err.detail);
    sd->close(st);
}

/* During a rolling upgrade two versions of eddy serve one Redis: each loads its own function
 * library (the name carries the version) and calls its own, so neither overwrites the other. */
ParameterizedTestParameters(store, two_versions_each_keep_their_own_function_library) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, store, two_versions_each_keep_their_own_function_library,
                  .timeout = 60) {
    const char *url = eddy_test_redis_url();
    const char *older = "#!lua name=eddy_0_0_1\n"
                        "redis.register_function('eddy_0_0_1_append', function(keys, args) "
                        "return 'the older eddy' end)";
    int port = 0;
    cr_assert_eq(sscanf(url, "redis://127.0.0.1:%d", &port), 1, "%s", url);
    redisContext *rc = redisConnect("127.0.0.1", port); /* the library's text has spaces */
    cr_assert(rc && !rc->err);
    redisReply *r = redisCommand(rc, "FUNCTION LOAD REPLACE %s", older);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    redisFree(rc);
    ctx c;
    setup(&c, p, "es-versions");
    tstore *st = must_open(&c);
    cr_expect_eq(must_append(st, "v", "v1", "t", EDDY_NO_STREAM), 1);
    r = raw_cmdf(url, "FCALL eddy_0_0_1_append 0");
    cr_expect(r->type == REDIS_REPLY_STRING && strcmp(r->str, "the older eddy") == 0,
              "the older library was replaced");
    freeReplyObject(r);
    r = raw_cmdf(url, "FUNCTION LIST LIBRARYNAME %s", EDDY__STORE_LIBRARY);
    cr_expect(r->type == REDIS_REPLY_ARRAY && r->elements == 1, "this version's library");
    freeReplyObject(r);
    sd->close(st);
    freeReplyObject(raw_cmdf(url, "FUNCTION DELETE eddy_0_0_1"));
}

ParameterizedTestParameters(store, lost_function_library_is_loaded_again) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, store, lost_function_library_is_loaded_again, .timeout = 60) {
    ctx c;
    setup(&c, p, "es-flush");
    if (p->backend) {
        /* FUNCTION FLUSH reaches every test that shares the fixture: use a private server. */
        eddy_test_redis srv;
        eddy_test_redis_start(&srv, 0);
        snprintf(c.url, sizeof(c.url), "%s", srv.url);
        tstore *st = must_open(&c);
        cr_expect_eq(must_append(st, "f", "f1", "t", EDDY_NO_STREAM), 1);
        redisReply *r = raw_cmdf(c.url, "FUNCTION FLUSH");
        freeReplyObject(r);
        cr_expect_eq(must_append(st, "f", "f2", "t", 1), 2);
        r = raw_cmdf(c.url, "FUNCTION DELETE %s", EDDY__STORE_LIBRARY);
        cr_expect_eq(r->type, REDIS_REPLY_STATUS, "the store had loaded it again");
        freeReplyObject(r);
        cr_expect_eq(must_append(st, "f", "f3", "t", 2), 3);
        sd->close(st);
        eddy_test_redis_kill(&srv);
        return;
    }
    tstore *st = must_open(&c);
    cr_expect_eq(must_append(st, "f", "f1", "t", EDDY_NO_STREAM), 1);
    redisReply *r = raw_cmdf(c.url, "FUNCTION FLUSH");
    freeReplyObject(r);
    cr_expect_eq(must_append(st, "f", "f2", "t", 1), 2);
    sd->close(st);
}

/* A server of the test's own, killed and restarted. */
ParameterizedTestParameters(store, appends_again_after_a_server_restart) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, store, appends_again_after_a_server_restart, .timeout = 60) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, p, "es-restart");
    snprintf(c.url, sizeof(c.url), "%s", srv.url);
    c.s.connect_timeout_ms = 500;
    c.s.reconnect_min_ms = 20;
    c.s.reconnect_max_ms = 200;
    tstore *st = must_open(&c);
    cr_expect_eq(must_append(st, "r", "r1", "t", EDDY_NO_STREAM), 1);

    /* A read finds the connection dead, reconnects and loads the library on its own. */
    eddy_test_redis_kill(&srv);
    eddy_test_redis_start(&srv, srv.port);
    cr_expect_eq(head(st), 0, "the new server is empty");
    cr_expect_eq(must_append(st, "r", "r1", "t", EDDY_NO_STREAM), 1);

    /* An append on the dead connection is not sent twice: it may fail once, then works. */
    eddy_test_redis_kill(&srv);
    eddy_test_redis_start(&srv, srv.port);
    eddy_event *ev = make_event("r2", "t");
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    long long v = 0;
    eddy_status rc = sd->append(st, "r", evs, 1, NULL, &v, &err);
    if (rc != EDDY_OK) {
        cr_expect_eq(rc, EDDY_ERR_IO, "%s (%s)", eddy_status_name(rc), err.detail);
        rc = sd->append(st, "r", evs, 1, NULL, &v, &err);
    }
    cr_expect_eq(rc, EDDY_OK, "%s", err.detail);
    cr_expect_eq(v, 1);
    eddy_event_free(ev);

    /* Down: every call reports it. */
    eddy_test_redis_kill(&srv);
    long long h;
    cr_expect_eq(sd->head(st, &h, &err), EDDY_ERR_IO);
    got g;
    got_init(&g);
    cr_expect_eq(sd->read_stream(st, "r", 0, collect, &g, &err), EDDY_ERR_IO);
    sd->close(st);
}

/* An append while Redis is stopped ends by command_timeout_ms with EDDY_ERR_TIMEOUT (it was
 * sent: it may have been applied, so it is not sent again); after SIGCONT the store works. */
ParameterizedTestParameters(store, an_append_during_a_stall_times_out) {
    return cr_make_param_array(combo, redis_combos, 2);
}
ParameterizedTest(combo *p, store, an_append_during_a_stall_times_out, .timeout = 60) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, p, "es-stall");
    snprintf(c.url, sizeof(c.url), "%s", srv.url);
    c.s.connect_timeout_ms = 500;
    c.s.reconnect_min_ms = 20;
    c.s.reconnect_max_ms = 200;
    c.s.command_timeout_ms = 300;
    tstore *st = must_open(&c);
    cr_expect_eq(must_append(st, "s", "y1", "t", EDDY_ANY_VERSION), 1);
    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    eddy_event *ev = make_event("y2", "t");
    const eddy_event *evs[] = {ev};
    eddy_error err = {0};
    eddy_status rc = sd->append(st, "s", evs, 1, NULL, NULL, &err);
    eddy_event_free(ev);
    cr_expect_eq(rc, EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(rc), err.detail);
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    long long v = must_append(st, "s", "y3", "t", EDDY_ANY_VERSION);
    cr_expect(v == 2 || v == 3, "y3 at version %lld (y2 may have been applied)", v);
    sd->close(st);
    eddy_test_redis_kill(&srv);
}

/* ---- memory:// and Redis run the same function ------------------------------------------ */

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        cr_assert(t->p);
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

/* Renders a reply; with mask_ids, stream entry ids (clock-made on the subject stream) are
 * left out. */
static void render(text *t, const redisReply *r, bool mask_ids, bool top) {
    char num[64];
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        put(t, r->type == REDIS_REPLY_STRING ? "\"" : "+", 1);
        put(t, r->str, r->len);
        if (r->type == REDIS_REPLY_STRING)
            put(t, "\"", 1);
        break;
    case REDIS_REPLY_ERROR:
        put(t, "-", 1);
        put(t, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(num, sizeof(num), "%lld", r->integer);
        put(t, num, strlen(num));
        break;
    case REDIS_REPLY_NIL:
        put(t, "nil", 3);
        break;
    case REDIS_REPLY_ARRAY:
        put(t, "[", 1);
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                put(t, ",", 1);
            const redisReply *e = r->element[i];
            /* An entry is [id, fields]. */
            if (mask_ids && e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
                e->element[0]->type == REDIS_REPLY_STRING &&
                e->element[1]->type == REDIS_REPLY_ARRAY) {
                put(t, "[<id>,", 6);
                render(t, e->element[1], false, false);
                put(t, "]", 1);
            } else {
                render(t, e, false, false);
            }
        }
        put(t, "]", 1);
        break;
    default:
        put(t, "?", 1);
    }
    if (top)
        put(t, "\n", 1);
}

static void run_both(const char *mem, const char *red, text *tm, text *tr, bool mask,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void run_both(const char *mem, const char *red, text *tm, text *tr, bool mask,
                     const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    put(tm, line, strlen(line));
    put(tm, " => ", 4);
    put(tr, line, strlen(line));
    put(tr, " => ", 4);
    /* Split on spaces; '' is an empty argument. */
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", line);
    const char *argv[64];
    int argc = 0;
    for (char *tok = strtok(copy, " "); tok && argc < 64; tok = strtok(NULL, " "))
        argv[argc++] = strcmp(tok, "''") == 0 ? "" : tok;
    redisReply *a = raw_cmd(mem, argc, argv), *b = raw_cmd(red, argc, argv);
    render(tm, a, mask, true);
    render(tr, b, mask, true);
    freeReplyObject(a);
    freeReplyObject(b);
}

/* One store call on both backends; the outcome (status, version, detail) joins the texts. */
static void append_both(tstore *m, tstore *r, text *tm, text *tr, const char *stream, int n,
                        long long expected, const char *subject) {
    eddy_event *evs[8];
    static int counter;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "d%d", ++counter);
        evs[i] = make_event(id, i % 2 ? "even" : "odd");
        if (i == 1)
            cr_assert_eq(eddy_event_set_extension(evs[i], "tenant", "acme", NULL), EDDY_OK);
    }
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = expected;
    o.publish_subject = subject;
    tstore *both[2] = {m, r};
    text *out[2] = {tm, tr};
    for (int k = 0; k < 2; k++) {
        long long v = -1;
        eddy_error err = {0};
        eddy_status rc =
            sd->append(both[k], stream, (const eddy_event *const *)evs, (size_t)n, &o, &v, &err);
        char line[512];
        snprintf(line, sizeof(line), "append %s x%d expected %lld -> %s %lld %s\n", stream, n,
                 expected, eddy_status_name(rc), v, rc == EDDY_OK ? "" : err.detail);
        put(out[k], line, strlen(line));
    }
    for (int i = 0; i < n; i++)
        eddy_event_free(evs[i]);
}

/* Both backends at once, on each front end. */
ParameterizedTestParameters(store, memory_and_redis_agree) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, store, memory_and_redis_agree, .timeout = 120) {
    ctx cm, crd;
    combo bm = {p->frontend, 0}, br = {p->frontend, 1};
    setup(&cm, &bm, "es-diff");
    setup(&crd, &br, "es-diff");
    /* The same namespace on both sides, so the keys and replies read the same. */
    snprintf(crd.ns, sizeof(crd.ns), "%s", cm.ns);
    cm.s.stream_maxlen = crd.s.stream_maxlen = 120; /* the publish path trims */
    tstore *m = must_open(&cm), *r = must_open(&crd);
    text tm = {0}, tr = {0};
    const char *ns = cm.ns;

    append_both(m, r, &tm, &tr, "a", 3, EDDY_NO_STREAM, NULL);
    append_both(m, r, &tm, &tr, "b", 2, EDDY_ANY_VERSION, "orders.placed");
    append_both(m, r, &tm, &tr, "a", 2, 1, NULL);                         /* conflict */
    append_both(m, r, &tm, &tr, "a", 2, 3, "orders.placed");              /* publishes */
    append_both(m, r, &tm, &tr, "b", 1, EDDY_NO_STREAM, "orders.placed"); /* conflict */
    for (int i = 0; i < 120; i++)                                         /* past the trim */
        append_both(m, r, &tm, &tr, i % 2 ? "c" : "d", 2, EDDY_ANY_VERSION, "orders.placed");
    /* Foreign writes the function must step over: a deleted last entry, an entry above the
     * counter. */
    run_both(cm.url, crd.url, &tm, &tr, false, "XDEL {%s}:es:s:a 5-0", ns);
    append_both(m, r, &tm, &tr, "a", 1, 4, NULL); /* conflict: the version is 5 */
    append_both(m, r, &tm, &tr, "a", 1, 5, NULL);
    run_both(cm.url, crd.url, &tm, &tr, false, "XADD {%s}:es:all 500-0 f v", ns);
    append_both(m, r, &tm, &tr, "e", 2, EDDY_ANY_VERSION, "orders.shipped");

    /* Raw calls with bad arguments answer the same. */
    const char *calls[] = {
        "FCALL " EDDY__STORE_APPEND_FN " 2 k1 k2 -1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k1 k3 -1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -7 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 '' 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 0 '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 1 3 f v w '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 2 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 1 2 f v x 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 1 2 f v ''",
        "FCALL " EDDY__STORE_APPEND_FN " 5 k1 k2 k3 k4 k5 -1 s 1 2 f v x 1x",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 1 2 f v '' 0 more",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 -1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 007 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 00 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k3 1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 5 k1 k2 k3 k4 k5 2 s 2 2 f v 4 g w h x x.y 1",
        "FCALL " EDDY__STORE_APPEND_FN " 5 k1 k2 k3 k4 k5 2 s 1 2 f v x.y 1",
        "FCALL EDDY_APPEND x",
        "FCALL " EDDY__STORE_APPEND_FN " 9 a",
        "FCALL nope 0",
        "SET k6 x",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k1 k2 k6 -1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 3 k6 k2 k3 -1 s 1 2 f v '' 0",
        "FCALL " EDDY__STORE_APPEND_FN " 5 k1 k2 k3 k4 k6 -1 s 1 2 f v x.y 0",
        "XRANGE k1 - +",
        "XRANGE k2 - +",
        "XRANGE k4 - +",
        "GET k3",
        "SMEMBERS k5",
    };
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "%s", calls[i]);
        /* Keys of this test only: prefix every kN with the namespace's tag. */
        char prefixed[512] = "";
        for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
            char word[160];
            if (tok[0] == 'k' && tok[1] >= '0' && tok[1] <= '9' && !tok[2])
                snprintf(word, sizeof(word), "{%s}:%s", ns, tok);
            else
                snprintf(word, sizeof(word), "%s", tok);
            if (prefixed[0])
                strcat(prefixed, " ");
            strcat(prefixed, word);
        }
        run_both(cm.url, crd.url, &tm, &tr, strstr(prefixed, ":k4 ") != NULL, "%s", prefixed);
    }

    /* The resulting keys. */
    const char *streams[] = {"es:all", "es:s:a", "es:s:b", "es:s:c", "es:s:d", "es:s:e"};
    for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
        run_both(cm.url, crd.url, &tm, &tr, false, "XRANGE {%s}:%s - +", ns, streams[i]);
    run_both(cm.url, crd.url, &tm, &tr, true, "XRANGE {%s}:s:orders.placed - +", ns);
    run_both(cm.url, crd.url, &tm, &tr, true, "XRANGE {%s}:s:orders.shipped - +", ns);
    run_both(cm.url, crd.url, &tm, &tr, false, "XLEN {%s}:s:orders.placed", ns);
    run_both(cm.url, crd.url, &tm, &tr, false, "GET {%s}:es:pos", ns);
    run_both(cm.url, crd.url, &tm, &tr, false, "SISMEMBER {%s}:subjects orders.placed", ns);
    run_both(cm.url, crd.url, &tm, &tr, false, "SISMEMBER {%s}:subjects orders.shipped", ns);
    run_both(cm.url, crd.url, &tm, &tr, false, "SCARD {%s}:subjects", ns);

    if (strcmp(tm.p, tr.p) != 0) {
        /* Point at the first line that differs. */
        const char *a = tm.p, *b = tr.p;
        while (*a && *a == *b)
            a++, b++;
        while (a > tm.p && a[-1] != '\n')
            a--, b--;
        cr_assert_fail("memory:// and Redis differ:\nmemory: %.300s\nredis:  %.300s", a, b);
    }
    cr_expect(strstr(tm.p, "EDDY_ERR_VERSION_CONFLICT"), "the script has conflicts");
    long long published = raw_int(crd.url, "XLEN {%s}:s:orders.placed", ns);
    cr_expect(published >= 120 && published < 244, "the subject stream was trimmed: %lld",
              published);
    free(tm.p);
    free(tr.p);
    sd->close(m);
    sd->close(r);
}

/* ---- reactive front end only: completions at teardown and from inside a callback ---------
 *
 * These are rules of the reactive calling shape: a completion callback runs exactly once, with
 * EDDY_ERR_CLOSED when the store is closed first, and a callback may close the store. The
 * blocking store has no completions (each call returns its outcome). Each runs in the reactive
 * store driver (store_driver.h), on a loop of its own on the test's thread, to close the store
 * between a call and its completion. */

ParameterizedTestParameters(store, reactive_close_with_operations_pending) {
    return cr_make_param_array(combo, combos + 2, 2);
}
ParameterizedTest(combo *p, store, reactive_close_with_operations_pending, .timeout = 60) {
    ctx c;
    setup(&c, p, "rs-close");
    sd->close_with_operations_pending(&c.s);
}

ParameterizedTestParameters(store, reactive_close_from_a_callback) {
    return cr_make_param_array(combo, combos + 2, 2);
}
ParameterizedTest(combo *p, store, reactive_close_from_a_callback, .timeout = 60) {
    ctx c;
    setup(&c, p, "rs-cbclose");
    sd->close_from_a_callback(&c.s);
}

/* A page whose `each` closes the store: the page stops and ends closed, once. */
ParameterizedTestParameters(store, reactive_close_from_a_pages_each) {
    return cr_make_param_array(combo, combos + 2, 2);
}
ParameterizedTest(combo *p, store, reactive_close_from_a_pages_each, .timeout = 60) {
    ctx c;
    setup(&c, p, "rs-eachclose");
    sd->close_from_a_pages_each(&c.s);
}

/* Checkpoint operations asked for all at once, without waiting: each completes once, in order
 * (the driver's checkpoint adapter waits for each, so this is the in-flight case). */
ParameterizedTestParameters(store, reactive_checkpoint_operations_in_flight_at_once) {
    return cr_make_param_array(combo, combos + 2, 2);
}
ParameterizedTest(combo *p, store, reactive_checkpoint_operations_in_flight_at_once,
                  .timeout = 60) {
    ctx c;
    setup(&c, p, "rs-ckpt");
    sd->checkpoint_operations_in_flight_at_once(&c.s);
}
