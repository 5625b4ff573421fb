/* SPDX-License-Identifier: BSD-3-Clause */
/* Idempotent publish (settings.publish_dedup_ms) on both front ends and both backends: an event
 * id published twice to a subject within the window is one entry, consumed once, and the second
 * call succeeds with the first entry's id; after the window it is appended again; other subjects
 * are apart; threads racing to publish one id make one entry; publish_batch deduplicates each
 * event (inside one batch and across batches); the store's append with publish is deduplicated
 * as a whole on both store front ends; a server that lost the function library is loaded again;
 * publishing again after EDDY_ERR_TIMEOUT (Redis stopped) stores once; the settings are checked;
 * and the memory engine's functions answer as the Lua does. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"
#include "store/store.h"
#include "test_backend.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
static combo backends[] = {{0, 0}, {0, 1}};

typedef struct ctx {
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p, unsigned window_ms) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_settings(&c->s, p->backend == 1, "pubdedup", c->url, sizeof(c->url), c->ns,
                       sizeof(c->ns));
    c->s.block_ms = 200;
    c->s.publish_dedup_ms = window_ms;
}

static tbus *must_bus(ctx *c, const eddy_subscription_spec *specs, size_t n) {
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, specs, n, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

/* Publishes event `id` to subject and returns its entry id in out. */
static void must_publish(ctx *c, tbus *b, const char *subject, const char *id, char *out,
                         size_t size) {
    eddy_event *ev = make_event(id, "t");
    eddy_error err = {0};
    out[0] = '\0';
    eddy_status st = c->d->publish_id(b, subject, ev, out, size, &err);
    cr_assert_eq(st, EDDY_OK, "publish %s: %s (%s)", id, eddy_status_name(st), err.detail);
    cr_assert(out[0], "publish %s gave no entry id", id);
    eddy_event_free(ev);
}

static long long xlen(ctx *c, const char *subject) {
    return raw_int(c->url, "XLEN {%s}:s:%s", c->ns, subject);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

ParameterizedTestParameters(pubdedup, twice_inside_the_window_is_one_entry_consumed_once) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, pubdedup, twice_inside_the_window_is_one_entry_consumed_once,
                  .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "orders";
    sp.pattern = "orders.created";
    sp.shape = EDDY_COMPETING;
    sp.group = "g";
    sp.handler = rec_handler;
    sp.user = &r;
    tbus *b = must_bus(&c, &sp, 1);
    eddy_error err = {0};
    cr_assert_eq(c.d->start(b, &err), EDDY_OK, "start: %s", err.detail);

    char first[64], second[64], marker[64];
    must_publish(&c, b, "orders.created", "e1", first, sizeof(first));
    must_publish(&c, b, "orders.created", "e1", second, sizeof(second));
    cr_expect_str_eq(second, first, "the repeat answers with the first entry's id");
    must_publish(&c, b, "orders.created", "end", marker, sizeof(marker));
    cr_expect_str_neq(marker, first);
    cr_expect_eq(xlen(&c, "orders.created"), 2, "e1 once, then the marker");

    cr_assert(rec_wait(&r, 2, 20000), "both entries consumed");
    cr_expect_eq(rec_seen(&r, "e1"), 1, "e1 delivered once");
    cr_expect_eq(rec_seen(&r, "end"), 1);
    c.d->stop(b);
    c.d->free(b);
    rec_destroy(&r);
}

ParameterizedTestParameters(pubdedup, after_the_window_it_is_appended_again) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, pubdedup, after_the_window_it_is_appended_again, .timeout = 60) {
    ctx c;
    setup(&c, p, 1000);
    tbus *b = must_bus(&c, NULL, 0);
    char first[64], second[64];
    must_publish(&c, b, "a.b", "e1", first, sizeof(first));
    sleep_ms(1200); /* past the window: the server's key has expired, whatever the load */
    must_publish(&c, b, "a.b", "e1", second, sizeof(second));
    cr_expect_str_neq(second, first);
    cr_expect_eq(xlen(&c, "a.b"), 2);
    c.d->free(b);
}

ParameterizedTestParameters(pubdedup, other_subjects_are_apart) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, pubdedup, other_subjects_are_apart, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    tbus *b = must_bus(&c, NULL, 0);
    char one[64], two[64], again[64];
    must_publish(&c, b, "a:b", "x:1", one, sizeof(one)); /* ':' on both sides of the key */
    must_publish(&c, b, "a", "b:x:1", two, sizeof(two));
    must_publish(&c, b, "a:b", "x:1", again, sizeof(again));
    cr_expect_str_eq(again, one);
    cr_expect_eq(xlen(&c, "a:b"), 1);
    cr_expect_eq(xlen(&c, "a"), 1, "the same key text split otherwise is another publish");
    c.d->free(b);
}

ParameterizedTestParameters(pubdedup, off_by_default) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, pubdedup, off_by_default, .timeout = 60) {
    ctx c;
    setup(&c, p, 0);
    tbus *b = must_bus(&c, NULL, 0);
    char first[64], second[64];
    must_publish(&c, b, "a.b", "e1", first, sizeof(first));
    must_publish(&c, b, "a.b", "e1", second, sizeof(second));
    cr_expect_str_neq(second, first);
    cr_expect_eq(xlen(&c, "a.b"), 2);
    c.d->free(b);
}

ParameterizedTestParameters(pubdedup, a_lost_function_library_is_loaded_again) {
    return cr_make_param_array(combo, combos, sizeof(combos) / sizeof(combos[0]));
}
ParameterizedTest(combo *p, pubdedup, a_lost_function_library_is_loaded_again, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    tbus *b = must_bus(&c, NULL, 0);
    char first[64], again[64], other[64];
    must_publish(&c, b, "a.b", "e1", first, sizeof(first));
    /* Under the live connection: nothing tells the bus, the server answers "Function not
     * found". */
    raw_int(c.url, "FUNCTION DELETE %s", EDDY__STORE_LIBRARY);
    must_publish(&c, b, "a.b", "e1", again, sizeof(again));
    cr_expect_str_eq(again, first, "the dedup key outlived the library");
    raw_int(c.url, "FUNCTION DELETE %s", EDDY__STORE_LIBRARY);
    must_publish(&c, b, "a.b", "e2", other, sizeof(other));
    cr_expect_str_neq(other, first);
    cr_expect_eq(xlen(&c, "a.b"), 2);
    c.d->free(b);
}

/* The case the setting is for: Redis stops with the publish on the wire, the call ends with
 * EDDY_ERR_TIMEOUT (sent, outcome unknown), the server runs it when it goes on, and the caller
 * publishes the same event again: stored once. (Blocking front end: its deadlines.) */
Test(pubdedup, publishing_again_after_a_timeout_stores_once, .timeout = 120) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    combo p = {0, 1};
    setup(&c, &p, 60000);
    c.s.url = srv.url;
    c.s.command_timeout_ms = 500;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c.s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    eddy_event *warm = make_event("warm", "t"), *ev = make_event("e1", "t");
    cr_assert_eq(eddy_bus_publish(bus, "pub", warm, NULL, 0, &err), EDDY_OK, "%s", err.detail);

    cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
    eddy_status st = eddy_bus_publish(bus, "pub", ev, NULL, 0, &err);
    cr_expect_eq(st, EDDY_ERR_TIMEOUT, "%s: %s", eddy_status_name(st), err.detail);
    cr_assert_eq(kill(srv.pid, SIGCONT), 0);
    /* Again until it goes through, as a caller would. */
    for (int attempt = 0; attempt < 50; attempt++)
        if ((st = eddy_bus_publish(bus, "pub", ev, NULL, 0, &err)) == EDDY_OK)
            break;
    cr_assert_eq(st, EDDY_OK, "%s: %s", eddy_status_name(st), err.detail);
    long long n = eddy_test_redis_int(srv.url, "XLEN {%s}:s:pub", c.ns);
    cr_expect_eq(n, 2, "warm, then e1 once: %lld entries", n);
    eddy_event_free(warm);
    eddy_event_free(ev);
    eddy_bus_free(bus);
    eddy_test_redis_kill(&srv);
}

/* ---- publish_batch (the blocking front end's) --------------------------------------------- */

static void must_batch(eddy_bus *bus, const char *subject, const char *const *ids, size_t n) {
    eddy_event *evs[8];
    for (size_t i = 0; i < n; i++)
        evs[i] = make_event(ids[i], "t");
    size_t published = 0;
    eddy_error err = {0};
    eddy_status st =
        eddy_bus_publish_batch(bus, subject, (const eddy_event *const *)evs, n, &published, &err);
    cr_assert_eq(st, EDDY_OK, "batch: %s (%s)", eddy_status_name(st), err.detail);
    cr_expect_eq(published, n, "every event counts as published, duplicates included");
    for (size_t i = 0; i < n; i++)
        eddy_event_free(evs[i]);
}

ParameterizedTestParameters(pubdedup, batch_deduplicates_each_event) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, pubdedup, batch_deduplicates_each_event, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c.s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    const char *one[] = {"a", "b", "a", "c"};
    must_batch(bus, "x.y", one, 4);
    cr_expect_eq(xlen(&c, "x.y"), 3, "a, b, c");
    const char *two[] = {"c", "d", "b"};
    must_batch(bus, "x.y", two, 3);
    cr_expect_eq(xlen(&c, "x.y"), 4, "and d");
    redisReply *r = raw_cmdf(c.url, "XRANGE {%s}:s:x.y - +", c.ns);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    const char *want[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; i++) {
        redisReply *f = r->element[i]->element[1];
        const char *id = NULL;
        for (size_t k = 0; k + 1 < f->elements; k += 2)
            if (strcmp(f->element[k]->str, "id") == 0)
                id = f->element[k + 1]->str;
        cr_expect(id && strcmp(id, want[i]) == 0, "entry %zu is %s", i, want[i]);
    }
    freeReplyObject(r);
    eddy_bus_free(bus);
}

/* Threads racing to publish one id: the server decides, one entry, one id for all. */
typedef struct racer {
    eddy_bus *bus;
    char id[64];
    eddy_status st;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    eddy_event *ev = make_event("same", "t");
    eddy_error err = {0};
    r->st = eddy_bus_publish(r->bus, "race", ev, r->id, sizeof(r->id), &err);
    eddy_event_free(ev);
    return NULL;
}

ParameterizedTestParameters(pubdedup, racing_publishes_of_one_id_are_one_entry) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, pubdedup, racing_publishes_of_one_id_are_one_entry, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&c.s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    racer r[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        r[i] = (racer){.bus = bus};
        cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(r[i].st, EDDY_OK, "%s", eddy_status_name(r[i].st));
        cr_expect_str_eq(r[i].id, r[0].id);
    }
    cr_expect_eq(xlen(&c, "race"), 1);
    eddy_bus_free(bus);
}

/* ---- the store's append with publish ------------------------------------------------------ */

static eddy_status append(eddy_store *st, const char *stream, const char *const *ids, size_t n,
                          const char *subject, long long expected, long long *version,
                          eddy_error *err) {
    eddy_event *evs[8];
    for (size_t i = 0; i < n; i++)
        evs[i] = make_event(ids[i], "t");
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = subject;
    o.expected_version = expected;
    eddy_status rc =
        eddy_store_append(st, stream, (const eddy_event *const *)evs, n, &o, version, err);
    for (size_t i = 0; i < n; i++)
        eddy_event_free(evs[i]);
    return rc;
}

ParameterizedTestParameters(pubdedup, store_append_with_publish_is_one_step) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, pubdedup, store_append_with_publish_is_one_step, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    eddy_store *st = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&c.s, &st, &err), EDDY_OK, "%s", err.detail);
    const char *ids[] = {"x1", "x2"};
    long long v = 0;
    eddy_status rc = append(st, "s1", ids, 2, "orders", EDDY_NO_STREAM, &v, &err);
    cr_assert_eq(rc, EDDY_OK, "%s (%s)", eddy_status_name(rc), err.detail);
    cr_expect_eq(v, 2);
    /* The same append again (a retry after a timeout): its first outcome, nothing written,
     * although the expected version no longer holds. */
    v = 0;
    rc = append(st, "s1", ids, 2, "orders", EDDY_NO_STREAM, &v, &err);
    cr_assert_eq(rc, EDDY_OK, "%s (%s)", eddy_status_name(rc), err.detail);
    cr_expect_eq(v, 2);
    cr_expect_eq(raw_int(c.url, "XLEN {%s}:es:s:s1", c.ns), 2);
    cr_expect_eq(raw_int(c.url, "XLEN {%s}:es:all", c.ns), 2);
    cr_expect_eq(xlen(&c, "orders"), 2);
    /* Partly published: refused, nothing written. */
    const char *mixed[] = {"x2", "x3"};
    rc = append(st, "s1", mixed, 2, "orders", EDDY_ANY_VERSION, &v, &err);
    cr_expect_eq(rc, EDDY_ERR_BACKEND, "%s", eddy_status_name(rc));
    cr_expect(strstr(err.detail, "1 of the 2 events were already published"), "%s", err.detail);
    cr_expect_eq(raw_int(c.url, "XLEN {%s}:es:s:s1", c.ns), 2);
    cr_expect_eq(xlen(&c, "orders"), 2);
    /* One id twice in one append: refused before sending. */
    const char *twice[] = {"x4", "x4"};
    rc = append(st, "s1", twice, 2, "orders", EDDY_ANY_VERSION, &v, &err);
    cr_expect_eq(rc, EDDY_ERR_INVALID_ARGUMENT, "%s", eddy_status_name(rc));
    /* Without publishing there is no dedup: the store keeps its own rules. */
    rc = append(st, "s2", twice, 2, NULL, EDDY_ANY_VERSION, &v, &err);
    cr_expect_eq(rc, EDDY_OK, "%s (%s)", eddy_status_name(rc), err.detail);

    /* A plain publish of an id the append published answers with that entry. */
    redisReply *r = raw_cmdf(c.url, "XRANGE {%s}:s:orders - + COUNT 1", c.ns);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    char entry[64];
    snprintf(entry, sizeof(entry), "%s", r->element[0]->element[0]->str);
    freeReplyObject(r);
    tbus *b = must_bus(&c, NULL, 0);
    char got[64];
    must_publish(&c, b, "orders", "x1", got, sizeof(got));
    cr_expect_str_eq(got, entry);
    cr_expect_eq(xlen(&c, "orders"), 2);
    c.d->free(b);
    eddy_store_close(st); /* last: a memory:// engine lives while something uses it */
}

typedef struct rappend {
    int done;
    eddy_status st;
    long long version;
} rappend;

static void on_appended(eddy_status st, long long v, const eddy_error *err, void *user) {
    rappend *a = user;
    (void)err;
    a->st = st;
    a->version = v;
    a->done++;
}

ParameterizedTestParameters(pubdedup, reactive_store_append_with_publish) {
    return cr_make_param_array(combo, backends, sizeof(backends) / sizeof(backends[0]));
}
ParameterizedTest(combo *p, pubdedup, reactive_store_append_with_publish, .timeout = 60) {
    ctx c;
    setup(&c, p, 60000);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rstore *st = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_open(loop, &c.s, &st, &err), EDDY_OK, "%s", err.detail);
    eddy_event *evs[] = {make_event("y1", "t"), make_event("y2", "t")};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.publish_subject = "orders";
    o.expected_version = EDDY_NO_STREAM;
    rappend a = {0};
    for (int round = 1; round <= 2; round++) {
        cr_assert_eq(eddy_rstore_append(st, "s1", (const eddy_event *const *)evs, 2, &o,
                                        on_appended, &a, &err),
                     EDDY_OK, "%s", err.detail);
        cr_assert(eddy_test_run_until(loop, &a.done, round, 20000));
        cr_expect_eq(a.st, EDDY_OK, "round %d: %s", round, eddy_status_name(a.st));
        cr_expect_eq(a.version, 2, "round %d", round);
    }
    cr_expect_eq(raw_int(c.url, "XLEN {%s}:es:all", c.ns), 2);
    cr_expect_eq(xlen(&c, "orders"), 2);
    eddy_rstore_close(st);
    eddy_event_free(evs[0]);
    eddy_event_free(evs[1]);
    ev_loop_destroy(loop);
}

/* ---- settings ------------------------------------------------------------------------------ */

Test(pubdedup, the_window_is_checked) {
    ctx c;
    combo p = {0, 0};
    unsigned bad[] = {1, 999, 86400001};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setup(&c, &p, bad[i]);
        eddy_bus *bus = NULL;
        eddy_error err = {0};
        eddy_status st = eddy_bus_new(&c.s, NULL, 0, &bus, &err);
        cr_expect_eq(st, EDDY_ERR_INVALID_SPEC, "%u: %s", bad[i], eddy_status_name(st));
        cr_expect(strstr(err.detail, "publish_dedup_ms"), "%s", err.detail);
    }
}

/* ---- the memory engine's functions answer as the Lua does --------------------------------- */

Test(pubdedup, memory_and_redis_agree, .timeout = 60) {
    ctx cm, crd;
    combo m = {0, 0}, rd = {0, 1};
    setup(&cm, &m, 60000);
    setup(&crd, &rd, 60000);
    snprintf(crd.ns, sizeof(crd.ns), "%s", cm.ns);
    /* Load the library on both (opening a store does). */
    eddy_store *sm = NULL, *sr = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&cm.s, &sm, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_open(&crd.s, &sr, &err), EDDY_OK, "%s", err.detail);
    /* Words split on '|'; "P" and "A" name the publish and the deduplicated append, kN is a
     * key of this test's namespace, and "" an empty argument. */
    const char *calls[] = {
        "P|2|k1|k2|60000|0|e1|f|v",
        "P|3|k1|k2|k3|0|0|e1|f|v",
        "P|3|k1|k2|k3|x|0|e1|f|v",
        "P|3|k1|k2|k3|60000|-1|e1|f|v",
        "P|3|k1|k2|k3|60000|0|e1|f",
        "P|3|k1|k2|k3|60000|0|e1",
        "P|3|k1|k2|k3|60000|0||f|v",
        "P|3|k1|k2|k3|60000|0|e1|f|v",
        "P|3|k1|k2|k3|60000|0|e1|f|v",
        "P|3|k1|k2|k3|60000|2|e2|f|v|g|w",
        "P|3|k2|k4|k5|60000|0|e1|f|v",
        "SET|k6|x",
        "P|3|k1|k6|k3|60000|0|e3|f|v",
        "P|3|k1|k2|k6|60000|0|e3|f|v",
        "HSET|k7|e9|0-1 7",
        "ZADD|k8|99999999999999|e9",
        "P|3|k1|k7|k8|60000|0|e9|f|v",
        "HSET|k7|e8|",
        "ZADD|k8|99999999999999|e8",
        "P|3|k1|k7|k8|60000|0|e8|f|v",
        "ZADD|k8|1|e7",
        "HSET|k7|e7|0-2",
        "P|3|k1|k7|k8|60000|0|e7|f|v",
        "ZSCORE|k8|e7",
        "XLEN|k1",
        "HLEN|k2",
        "ZCARD|k3",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|60000|e1",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|60000|e1",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|2|2|f|v|2|g|w|x.y|0|60000|e1|e2",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|2|2|f|v|2|g|w|x.y|0|60000|e2|e3",
        "A|7|k10|k11|k12|k13|k14|k20|k21|7|s|2|2|f|v|2|g|w|x.y|0|60000|e4|e5",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|0|e6",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|e6",
        "A|6|k10|k11|k12|k13|k14|k20|-1|s|1|2|f|v|x.y|0|60000|e6",
        "A|7|k10|k11|k12|k13|k14|k1|k21|-1|s|1|2|f|v|x.y|0|60000|e6",
        "A|7|k10|k11|k12|k13|k14|k20|k6|-1|s|1|2|f|v|x.y|0|60000|e6",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|60000|",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|60000|e6|e7",
        "A|7|k10|k11|k12|k13|k14|k20|k21|-1|s|1|2|f|v|x.y|0|60000|e6",
        "XLEN|k10",
        "XLEN|k13",
        "GET|k12",
        "HLEN|k20",
        "ZCARD|k21",
    };
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        char copy[256];
        snprintf(copy, sizeof(copy), "%s", calls[i]);
        const char *argv[40];
        char words[40][400];
        int argc = 0;
        for (char *w = copy; w && argc < 39; argc++) {
            char *bar = strchr(w, '|');
            if (bar)
                *bar = '\0';
            if (strcmp(w, "P") == 0 || strcmp(w, "A") == 0) {
                argv[argc++] = "FCALL";
                snprintf(words[argc], sizeof(words[argc]), "%s",
                         w[0] == 'P' ? EDDY__PUBLISH_FN : EDDY__STORE_APPEND_DEDUP_FN);
            } else if (w[0] == 'k' && w[1] >= '0' && w[1] <= '9') {
                snprintf(words[argc], sizeof(words[argc]), "{%s}:%s", cm.ns, w);
            } else {
                snprintf(words[argc], sizeof(words[argc]), "%s", w);
            }
            argv[argc] = words[argc];
            w = bar ? bar + 1 : NULL;
        }
        redisReply *a = raw_cmd(cm.url, argc, argv), *b = raw_cmd(crd.url, argc, argv);
        char ta[1024] = "", tb[1024] = "";
        raw_render(ta, sizeof(ta), a, true);
        raw_render(tb, sizeof(tb), b, true);
        cr_expect_str_eq(ta, tb, "%s", calls[i]);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    cr_expect_gt(raw_int(crd.url, "PTTL {%s}:k2", crd.ns), 0, "the dedup key expires");
    cr_expect_gt(raw_int(cm.url, "PTTL {%s}:k2", cm.ns), 0, "the dedup key expires");
    eddy_store_close(sm);
    eddy_store_close(sr);
}
