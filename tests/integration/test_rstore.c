/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store on the reactive front end, on both backends: appends read
 * back one page at a time with their metadata, conflicts that write nothing,
 * publishing in the same step, the head, checkpoints, callbacks that run
 * exactly once when the store is closed with operations pending or from inside
 * a callback, and bad input refused without a callback. Each test runs its own
 * loop on its own thread until the callbacks it waits for came. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "eddy/rstore.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"
#include "test_backend.h"

static int backends[] = {0, 1}; /* memory, redis */

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
} tctx;

static void setup(tctx *t, int backend, const char *prefix) {
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_settings(&t->s, backend, prefix, t->url, sizeof(t->url), t->ns, sizeof(t->ns));
    t->s.block_ms = 200;
}

/* Runs the loop until *counter >= n or timeout_ms passes. */
static bool run_until_count(tctx *t, const int *counter, int n, long long timeout_ms) {
    return eddy_test_run_until(t->loop, counter, n, timeout_ms);
}

static void run_for(tctx *t, long long ms) { eddy_test_run_for(t->loop, ms); }

static eddy_rstore *must_open(tctx *t) {
    eddy_rstore *st = NULL;
    eddy_error err = {0};
    eddy_status rc = eddy_rstore_open(t->loop, &t->s, &st, &err);
    cr_assert_eq(rc, EDDY_OK, "open: %s (%s)", eddy_status_name(rc), err.detail);
    return st;
}

/* What a completion reported. */
typedef struct rec {
    int calls;
    eddy_status st;
    long long value;
    bool flag;
    char text[64];
    char detail[EDDY_ERROR_DETAIL_MAX];
    eddy_rstore **close_store; /* close this store from inside the callback */
    int *counter;              /* incremented on every call, shared by several recs */
    struct got *g;             /* where a page's events go */
} rec;

static void note(rec *r, eddy_status st, const eddy_error *err) {
    r->calls++;
    r->st = st;
    if (r->counter)
        (*r->counter)++;
    cr_expect(st == EDDY_OK || err, "a failure without detail");
    snprintf(r->detail, sizeof(r->detail), "%s", err ? err->detail : "");
    if (r->close_store && *r->close_store) {
        eddy_rstore_close(*r->close_store);
        *r->close_store = NULL;
    }
}

static void on_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    rec *r = user;
    r->value = v;
    note(r, st, err);
}

static void on_page(eddy_status st, long long next, const eddy_error *err, void *user) {
    rec *r = user;
    r->value = next;
    note(r, st, err);
}

static void on_stream(eddy_status st, long long last, bool more, const eddy_error *err,
                      void *user) {
    rec *r = user;
    r->value = last;
    r->flag = more;
    note(r, st, err);
}

static void on_head(eddy_status st, long long pos, const eddy_error *err, void *user) {
    rec *r = user;
    r->value = pos;
    note(r, st, err);
}

static void on_exists(eddy_status st, bool exists, const eddy_error *err, void *user) {
    rec *r = user;
    r->flag = exists;
    note(r, st, err);
}

static void on_ckpt_read(eddy_status st, const char *value, bool found, const eddy_error *err,
                         void *user) {
    rec *r = user;
    r->flag = found;
    cr_expect(found == (value != NULL));
    snprintf(r->text, sizeof(r->text), "%s", value ? value : "");
    note(r, st, err);
}

static void on_done(eddy_status st, const eddy_error *err, void *user) { note(user, st, err); }

/* What the pages delivered. */
#define GOT_MAX 64
struct got {
    int n;
    char ids[GOT_MAX][32];
    char streams[GOT_MAX][32];
    long long versions[GOT_MAX], positions[GOT_MAX];
};
typedef struct got got;

static eddy_status collect(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    got *g = ((rec *)user)->g;
    cr_assert(g->n < GOT_MAX);
    snprintf(g->ids[g->n], sizeof(g->ids[0]), "%s", eddy_event_id(ev));
    snprintf(g->streams[g->n], sizeof(g->streams[0]), "%s", m->stream_id);
    g->versions[g->n] = m->version;
    g->positions[g->n] = m->position;
    g->n++;
    return EDDY_OK;
}

/* Appends events ids[0..n) (type "t") to stream and waits for the outcome. */
static rec append_wait(tctx *t, eddy_rstore *st, const char *stream, const char *const *ids,
                       size_t n, long long expected, const char *subject) {
    eddy_event *evs[8];
    cr_assert(n <= 8);
    for (size_t i = 0; i < n; i++)
        evs[i] = make_event(ids[i], "t");
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = expected;
    o.publish_subject = subject;
    rec r = {0};
    eddy_error err = {0};
    eddy_status rc =
        eddy_rstore_append(st, stream, (const eddy_event *const *)evs, n, &o, on_append, &r, &err);
    for (size_t i = 0; i < n; i++)
        eddy_event_free(evs[i]);
    cr_assert_eq(rc, EDDY_OK, "append: %s (%s)", eddy_status_name(rc), err.detail);
    cr_assert_eq(r.calls, 0, "done ran inside the call");
    cr_assert(run_until_count(t, &r.calls, 1, 20000), "append never completed");
    run_for(t, 10);
    cr_assert_eq(r.calls, 1, "done ran %d times", r.calls);
    return r;
}

static rec head_wait(tctx *t, eddy_rstore *st) {
    rec r = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_head(st, on_head, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(t, &r.calls, 1, 20000), "head never completed");
    cr_assert_eq(r.st, EDDY_OK, "head: %s", r.detail);
    return r;
}

static rec page_wait(tctx *t, eddy_rstore *st, long long after, size_t max, got *g) {
    rec r = {0};
    r.g = g;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_read_page(st, after, max, NULL, collect, on_page, &r, &err), EDDY_OK,
                 "%s", err.detail);
    cr_assert_eq(g->n, 0, "events delivered inside the call");
    cr_assert(run_until_count(t, &r.calls, 1, 20000), "page never completed");
    cr_assert_eq(r.st, EDDY_OK, "page: %s", r.detail);
    return r;
}

/* ---- append and read back, one page at a time
 * ------------------------------------------ */

ParameterizedTestParameters(rstore, append_and_read_pages) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, append_and_read_pages, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-read");
    eddy_rstore *st = must_open(&t);

    const char *a[] = {"a1", "a2", "a3"};
    const char *bb[] = {"b1", "b2"};
    rec r = append_wait(&t, st, "acct-1", a, 3, EDDY_NO_STREAM, NULL);
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    cr_expect_eq(r.value, 3);
    r = append_wait(&t, st, "acct-2", bb, 2, EDDY_ANY_VERSION, NULL);
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    cr_expect_eq(r.value, 2);
    cr_expect_eq(head_wait(&t, st).value, 5);

    /* A replay of pages of 2: each page is asked for from the loop, after the
     * previous one. */
    got g = {0};
    long long after = 0;
    int pages = 0;
    for (;;) {
        got pg = {0};
        rec p = page_wait(&t, st, after, 2, &pg);
        cr_assert(pg.n <= 2, "a page of %d", pg.n);
        for (int i = 0; i < pg.n; i++) {
            cr_assert(g.n < GOT_MAX);
            memcpy(g.ids[g.n], pg.ids[i], sizeof(g.ids[0]));
            memcpy(g.streams[g.n], pg.streams[i], sizeof(g.streams[0]));
            g.versions[g.n] = pg.versions[i];
            g.positions[g.n] = pg.positions[i];
            g.n++;
        }
        pages++;
        if (p.value == after)
            break;
        after = p.value;
    }
    cr_expect_eq(after, 5);
    cr_expect_eq(pages, 4, "pages: %d", pages); /* 2 + 2 + 1, then an empty one at the end */
    cr_assert_eq(g.n, 5);
    const char *ids[] = {"a1", "a2", "a3", "b1", "b2"};
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(g.ids[i], ids[i]);
        cr_expect_str_eq(g.streams[i], i < 3 ? "acct-1" : "acct-2");
        cr_expect_eq(g.versions[i], i < 3 ? i + 1 : i - 2);
        cr_expect_eq(g.positions[i], i + 1);
    }

    /* One stream, after a version. */
    got sg = {0};
    rec sr = {0};
    sr.g = &sg;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_read_stream_page(st, "acct-1", 1, collect, on_stream, &sr, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert(run_until_count(&t, &sr.calls, 1, 20000));
    cr_assert_eq(sr.st, EDDY_OK, "%s", sr.detail);
    cr_expect_eq(sr.value, 3);
    cr_expect_not(sr.flag, "more after a short page");
    cr_assert_eq(sg.n, 2);
    cr_expect_str_eq(sg.ids[0], "a2");
    cr_expect_eq(sg.versions[1], 3);
    cr_expect_eq(sg.positions[1], 3);

    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

/* ---- conflicts, publishing, head
 * --------------------------------------------------------- */

ParameterizedTestParameters(rstore, conflict_and_publish) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, conflict_and_publish, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-conf");
    eddy_rstore *st = must_open(&t);
    cr_expect_eq(head_wait(&t, st).value, 0, "an empty store's head");

    const char *one[] = {"c1"};
    rec r = append_wait(&t, st, "order-1", one, 1, 4, NULL);
    cr_expect_eq(r.st, EDDY_ERR_VERSION_CONFLICT, "%s", eddy_status_name(r.st));
    cr_expect_eq(r.value, 0);
    cr_expect_eq(head_wait(&t, st).value, 0, "a conflict wrote something");

    /* Published in the same step: the subject's stream has the events. */
    const char *two[] = {"p1", "p2"};
    r = append_wait(&t, st, "order-1", two, 2, EDDY_NO_STREAM, "orders.placed");
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    cr_expect_eq(r.value, 2);
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:orders.placed", t.ns), 2);
    cr_expect_eq(head_wait(&t, st).value, 2);

    /* A conflicting append publishes nothing. */
    r = append_wait(&t, st, "order-1", two, 2, EDDY_NO_STREAM, "orders.placed");
    cr_expect_eq(r.st, EDDY_ERR_VERSION_CONFLICT);
    cr_expect_eq(raw_int(t.url, "XLEN {%s}:s:orders.placed", t.ns), 2);
    cr_expect_eq(head_wait(&t, st).value, 2);

    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

/* ---- checkpoints
 * ------------------------------------------------------------------------- */

ParameterizedTestParameters(rstore, checkpoints) { return cr_make_param_array(int, backends, 2); }
ParameterizedTest(int *b, rstore, checkpoints, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-ckpt");
    eddy_rstore *st = must_open(&t);
    eddy_error err = {0};

    rec ex = {0}, rd = {0}, sv = {0}, rm = {0}, ex2 = {0}, rd2 = {0}, ex3 = {0};
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", on_exists, &ex, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_read(st, "feed-1", on_ckpt_read, &rd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_save(st, "feed-1", "42", on_done, &sv, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", on_exists, &ex2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_read(st, "feed-1", on_ckpt_read, &rd2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_remove(st, "feed-1", on_done, &rm, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_exists(st, "feed-1", on_exists, &ex3, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &ex3.calls, 1, 20000));
    run_for(&t, 10);
    rec *all[] = {&ex, &rd, &sv, &ex2, &rd2, &rm, &ex3};
    for (int i = 0; i < 7; i++) {
        cr_expect_eq(all[i]->calls, 1, "op %d ran %d times", i, all[i]->calls);
        cr_expect_eq(all[i]->st, EDDY_OK, "op %d: %s", i, all[i]->detail);
    }
    cr_expect_not(ex.flag);
    cr_expect_not(rd.flag);
    cr_expect(ex2.flag);
    cr_expect(rd2.flag);
    cr_expect_str_eq(rd2.text, "42");
    cr_expect_not(ex3.flag);
    cr_expect_eq(raw_int(t.url, "EXISTS {%s}:ckpt:feed-1", t.ns), 0);

    /* Removing a marker that does not exist is not an error. */
    rec rm2 = {0};
    cr_assert_eq(eddy_rstore_checkpoint_remove(st, "feed-1", on_done, &rm2, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &rm2.calls, 1, 20000));
    cr_expect_eq(rm2.st, EDDY_OK, "%s", rm2.detail);

    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

/* ---- teardown
 * ----------------------------------------------------------------------------
 */

ParameterizedTestParameters(rstore, close_with_pending) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, close_with_pending, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-close");
    eddy_rstore *st = must_open(&t);
    eddy_error err = {0};
    got g = {0};
    rec ap = {0}, pg = {0}, sp = {0}, hd = {0}, ck = {0};
    pg.g = sp.g = &g;
    eddy_event *ev = make_event("x1", "t");
    const eddy_event *evs[] = {ev};
    cr_assert_eq(eddy_rstore_append(st, "s-1", evs, 1, NULL, on_append, &ap, &err), EDDY_OK);
    eddy_event_free(ev);
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, collect, on_page, &pg, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_read_stream_page(st, "s-1", 0, collect, on_stream, &sp, &err),
                 EDDY_OK);
    cr_assert_eq(eddy_rstore_head(st, on_head, &hd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_checkpoint_save(st, "f", "1", on_done, &ck, &err), EDDY_OK);
    eddy_rstore_close(st); /* before any reply came: every callback runs now, once */
    rec *all[] = {&ap, &pg, &sp, &hd, &ck};
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(all[i]->calls, 1, "op %d ran %d times in close", i, all[i]->calls);
        cr_expect_eq(all[i]->st, EDDY_ERR_CLOSED, "op %d: %s", i, eddy_status_name(all[i]->st));
    }
    run_for(&t, 100);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(all[i]->calls, 1, "op %d ran again after close", i);
    cr_expect_eq(g.n, 0);
    ev_loop_destroy(t.loop);
}

ParameterizedTestParameters(rstore, close_from_callback) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, close_from_callback, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-cbclose");
    eddy_rstore *st = must_open(&t);
    const char *ids[] = {"e1", "e2"};
    rec r = append_wait(&t, st, "s-1", ids, 2, EDDY_NO_STREAM, NULL);
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);

    /* The head's callback closes the store; what is queued behind it ends closed,
     * once. */
    eddy_error err = {0};
    eddy_rstore *victim = st;
    rec hd = {0}, hd2 = {0}, pg = {0};
    got g = {0};
    pg.g = &g;
    hd.close_store = &victim;
    cr_assert_eq(eddy_rstore_head(st, on_head, &hd, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_head(st, on_head, &hd2, &err), EDDY_OK);
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, collect, on_page, &pg, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &hd.calls, 1, 20000));
    cr_expect_eq(hd.st, EDDY_OK, "%s", hd.detail);
    cr_expect_eq(hd.value, 2);
    cr_expect_null(victim);
    run_for(&t, 100);
    cr_expect_eq(hd.calls, 1);
    cr_expect_eq(hd2.calls, 1);
    cr_expect_eq(pg.calls, 1);
    cr_expect_eq(hd2.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(hd2.st));
    cr_expect_eq(pg.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(pg.st));
    cr_expect_eq(g.n, 0);
    ev_loop_destroy(t.loop);
}

/* A page whose `each` closes the store: the page stops and ends closed, once.
 */
static eddy_status close_in_each(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    rec *r = user;
    r->g->n++;
    if (r->close_store && *r->close_store) {
        eddy_rstore_close(*r->close_store);
        *r->close_store = NULL;
    }
    return EDDY_OK;
}

ParameterizedTestParameters(rstore, close_from_each) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, close_from_each, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-eachclose");
    eddy_rstore *st = must_open(&t);
    const char *ids[] = {"e1", "e2", "e3"};
    rec r = append_wait(&t, st, "s-1", ids, 3, EDDY_NO_STREAM, NULL);
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    eddy_error err = {0};
    eddy_rstore *victim = st;
    got g = {0};
    rec pg = {0};
    pg.g = &g;
    pg.close_store = &victim;
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, NULL, close_in_each, on_page, &pg, &err),
                 EDDY_OK);
    cr_assert(run_until_count(&t, &pg.calls, 1, 20000));
    run_for(&t, 50);
    cr_expect_eq(pg.calls, 1);
    cr_expect_eq(pg.st, EDDY_ERR_CLOSED, "%s", eddy_status_name(pg.st));
    cr_expect_eq(g.n, 1, "events delivered after the close: %d", g.n);
    cr_expect_eq(pg.value, 1, "next position %lld", pg.value);
    ev_loop_destroy(t.loop);
}

/* ---- bad input
 * ---------------------------------------------------------------------------
 */

ParameterizedTestParameters(rstore, bad_input_refused) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, bad_input_refused, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-bad");
    eddy_rstore *st = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_rstore_open(t.loop, &t.s, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_open(NULL, &t.s, &st, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(st);
    st = must_open(&t);

    int calls = 0;
    rec r = {0};
    got g = {0};
    r.counter = &calls;
    r.g = &g;
    eddy_event *ev = make_event("x1", "t");
    const eddy_event *evs[] = {ev};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = -7;
    cr_expect_eq(eddy_rstore_append(NULL, "s", evs, 1, NULL, on_append, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_rstore_append(st, "s", evs, 1, NULL, NULL, &r, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_neq(eddy_rstore_append(st, "a b", evs, 1, NULL, on_append, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_append(st, "a:b", evs, 1, NULL, on_append, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_append(st, "s", evs, 0, NULL, on_append, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_append(st, "s", NULL, 1, NULL, on_append, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_append(st, "s", evs, 1, &o, on_append, &r, &err), EDDY_OK);
    o.expected_version = EDDY_ANY_VERSION;
    o.publish_subject = "bad subject";
    cr_expect_neq(eddy_rstore_append(st, "s", evs, 1, &o, on_append, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_page(st, 0, 0, NULL, collect, on_page, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_page(st, 0, 10, NULL, NULL, on_page, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_page(st, 0, 10, NULL, collect, NULL, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_stream_page(st, "", 0, collect, on_stream, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_read_stream_page(st, NULL, 0, collect, on_stream, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_head(st, NULL, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_exists(st, "{x}", on_exists, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_read(st, NULL, on_ckpt_read, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_save(st, "f", NULL, on_done, &r, &err), EDDY_OK);
    cr_expect_neq(eddy_rstore_checkpoint_remove(st, "a b", on_done, &r, &err), EDDY_OK);
    run_for(&t, 100);
    cr_expect_eq(calls, 0, "a refused call ran its callback (%d)", calls);

    /* The store still works after the refusals. */
    cr_expect_eq(head_wait(&t, st).value, 0);
    eddy_rstore_close(st);
    eddy_rstore_close(NULL);
    eddy_event_free(ev);
    ev_loop_destroy(t.loop);
}

/* ---- filters, a lost function library, a lost connection -------------------------------- */

ParameterizedTestParameters(rstore, filtered_page_skips_but_advances) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, filtered_page_skips_but_advances, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-filter");
    eddy_rstore *st = must_open(&t);
    eddy_event *evs[4] = {make_event("a1", "type.a"), make_event("b1", "type.b"),
                          make_event("a2", "type.a"), make_event("b2", "type.b")};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    rec r = {0};
    eddy_error err = {0};
    cr_assert_eq(
        eddy_rstore_append(st, "mixed", (const eddy_event *const *)evs, 4, &o, on_append, &r, &err),
        EDDY_OK, "%s", err.detail);
    for (int i = 0; i < 4; i++)
        eddy_event_free(evs[i]);
    cr_assert(run_until_count(&t, &r.calls, 1, 20000));
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    const char *types[] = {"type.b"};
    eddy_filter *f = eddy_filter_types(types, 1);
    got g = {0};
    rec p = {0};
    p.g = &g;
    cr_assert_eq(eddy_rstore_read_page(st, 0, 10, f, collect, on_page, &p, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &p.calls, 1, 20000));
    cr_expect_eq(p.st, EDDY_OK, "%s", p.detail);
    cr_expect_eq(g.n, 2);
    cr_expect_str_eq(g.ids[0], "b1");
    cr_expect_str_eq(g.ids[1], "b2");
    cr_expect_eq(p.value, 4, "filtered-out events still advance the position");
    eddy_filter_free(f);
    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

ParameterizedTestParameters(rstore, append_after_the_function_library_was_flushed) {
    return cr_make_param_array(int, backends, 2);
}
ParameterizedTest(int *b, rstore, append_after_the_function_library_was_flushed, .timeout = 60) {
    tctx t;
    setup(&t, *b, "rs-flush");
    eddy_rstore *st = must_open(&t);
    const char *one[] = {"x1"};
    rec r = append_wait(&t, st, "s", one, 1, EDDY_ANY_VERSION, NULL);
    cr_assert_eq(r.st, EDDY_OK, "%s", r.detail);
    /* Someone flushes the server's functions (or it restarted with a persisted keyspace). */
    freeReplyObject(raw_cmdf(t.url, "FUNCTION FLUSH"));
    const char *two[] = {"x2"};
    r = append_wait(&t, st, "s", two, 1, 1, NULL);
    cr_expect_eq(r.st, EDDY_OK, "the library is loaded again and the append sent once more: %s",
                 r.detail);
    cr_expect_eq(r.value, 2);
    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
}

/* A test's own redis-server (one it kills, restarts or stops), with quick reconnects. */
static void setup_private(tctx *t, eddy_test_redis *srv, const char *prefix) {
    eddy_test_redis_start(srv, 0);
    setup(t, 1, prefix);
    t->s.url = srv->url;
    t->s.connect_timeout_ms = 500;
    t->s.reconnect_min_ms = 20;
    t->s.reconnect_max_ms = 200;
}

Test(rstore, reads_survive_a_redis_restart, .timeout = 60) {
    eddy_test_redis srv;
    tctx t;
    setup_private(&t, &srv, "rs-restart");
    eddy_rstore *st = must_open(&t);
    const char *one[] = {"y1"};
    cr_assert_eq(append_wait(&t, st, "s", one, 1, EDDY_ANY_VERSION, NULL).st, EDDY_OK);
    eddy_test_redis_kill(&srv);
    eddy_test_redis_start(&srv, srv.port);
    /* The old connection is dead; the read goes out again on a new one. */
    rec h = {0};
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_head(st, on_head, &h, &err), EDDY_OK);
    cr_assert(run_until_count(&t, &h.calls, 1, 20000), "head never completed");
    cr_expect_eq(h.st, EDDY_OK, "%s", h.detail);
    cr_expect_eq(h.value, 0, "the restarted server kept nothing");
    /* And appends work again: the library is loaded on the new connection. */
    cr_expect_eq(append_wait(&t, st, "s", one, 1, EDDY_NO_STREAM, NULL).st, EDDY_OK);
    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
    eddy_test_redis_kill(&srv);
}

/* An append while Redis is stopped ends by command_timeout_ms with EDDY_ERR_TIMEOUT (it was
 * sent: it may have been applied, so it is not sent again); after SIGCONT the store works on a
 * new connection. */
Test(rstore, an_append_during_a_stall_times_out, .timeout = 60) {
    eddy_test_redis srv;
    tctx t;
    setup_private(&t, &srv, "rs-stall");
    t.s.command_timeout_ms = 300;
    eddy_rstore *st = must_open(&t);
    const char *one[] = {"y1"}, *two[] = {"y2"}, *three[] = {"y3"};
    cr_assert_eq(append_wait(&t, st, "s", one, 1, EDDY_ANY_VERSION, NULL).st, EDDY_OK);
    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    rec r = append_wait(&t, st, "s", two, 1, EDDY_ANY_VERSION, NULL);
    cr_expect_eq(r.st, EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(r.st), r.detail);
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    cr_expect_eq(append_wait(&t, st, "s", three, 1, EDDY_ANY_VERSION, NULL).st, EDDY_OK);
    eddy_rstore_close(st);
    ev_loop_destroy(t.loop);
    eddy_test_redis_kill(&srv);
}
