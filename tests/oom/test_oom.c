/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault injection: every scenario runs again and again, failing the N-th allocation eddy makes
 * (N = 1, 2, 3, ...) until a run makes no more allocations than N - 1, i.e. completes with no
 * failure injected; then again failing every allocation from the N-th on (sticky), which
 * reaches the cleanup paths that themselves allocate. Each run must end with every call either
 * succeeding or returning a status, every completion run at most once (exactly once for a call that
 * returned EDDY_OK), no crash, no hang (each wait is bounded), and, in the sanitizer build, nothing
 * leaked.
 *
 * Mechanism: this binary is linked with -Wl,--wrap=malloc,calloc,realloc,strdup,strndup
 * (tests/CMakeLists.txt). libeddy and libeddy_reactive are static libraries, so every call
 * their objects make to those functions resolves to the __wrap_ functions below; the shared
 * libraries (libev, hiredis, msgpack-c, Criterion, libc itself) keep the real ones. Under
 * AddressSanitizer __real_malloc resolves to ASan's malloc, so the sanitizer still sees every
 * allocation. The counter is armed only while a scenario runs; setup (opening the store,
 * appending the history, building events) is done disarmed.
 *
 * Scenarios, all on memory:// (no Redis): (a) a reactive feed: new, a held accept, a catch-up
 * over stored events with page size 1, go-live, a live accept, stop, free; (b) a reactive
 * domain feed: new, register with a filter, route (filtered, deferred, delivered), catch-up,
 * accept-or-defer, free; (c) building filters (type, types, source, subject, time range, data,
 * and, or, dup) and a blocking domain feed's register, route and go-live; (d) a reactive push
 * model: accept and accept-or-defer with an observer; (e) reactive push sources on a reactive
 * bus: new, add (manual mode), start-all, status, free; (f) the blocking bus: new with a
 * competing AtLeastOnce subscription and a fanout one, start, publish (one handler fails once,
 * one hands back once), pause/resume, stop, free; (g) the blocking event store: append with an
 * expected version and a publish subject, read_stream, read_all with a filter, head, checkpoints;
 * (h) the blocking catch-up feed: new, an accept held on a thread while the catch-up runs,
 * go-live, offer, free; (i) request/reply on the blocking bus: a responder, one request (and
 * one scatter-gather request);
 * (j) decoding entries (no server): one block per event, views, their fallback copies, and
 * setters and dup on a decoded event; (k) publishes and requests in flight together on the
 * reactive bus's publishing connection; (l) dead letters: open, count, list (with a dup of
 * each), get, replay one, purge one, replay all, purge all; (m) a retention pass of the core
 * machine on canned replies (no server): with a failure anywhere, it trims exactly what the clean
 * run trims or nothing, and counts what it dropped only with the trim; (n) an admin handle's
 * subjects, registry and stats document, and a reactive bus's stats document.
 *
 * The blocking scenarios (f) and (i) run a reader thread per subscription and worker threads, so
 * their allocation order is not deterministic and a run is not repeatable: what each run must
 * show is only no crash, no hang, no leak, statuses in range and completions at most once; what
 * was asked for must all happen only in a last run with no failure injected and generous waits
 * (the patient run, below: a loaded machine must not fail it). They also take tens of
 * milliseconds a run (threads start and stop), so they sweep N with a stride once past the
 * construction paths (sweep_strided), to keep test_oom within about a minute under ASan. */
#include <criterion/criterion.h>
#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/retention.h"
#include "eddy/blocking.h"
#include "eddy/domain.h"
#include "eddy/feed.h"
#include "eddy/filter.h"
#include "eddy/rdomain.h"
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rpush.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "events/entry.h"
#include "raw.h"
#include "recorder.h"
#include "test_backend.h"
#include "test_codec.h"

/* ---- the allocator wrappers -------------------------------------------------------------- */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static atomic_long countdown; /* > 0: armed, allocations left up to the failing one */
static atomic_bool injected;  /* the armed failure happened */
static atomic_ulong wrapped;  /* calls that went through the wrappers */
static atomic_long current_n; /* the run's N, for messages */

static bool sticky; /* fail every allocation from the N-th on (until disarmed) */

static bool fail_now(void) {
    atomic_fetch_add_explicit(&wrapped, 1, memory_order_relaxed);
    if (sticky && atomic_load(&injected) && atomic_load(&countdown) == 0 &&
        atomic_load(&current_n) > 0)
        return true;
    long n = atomic_load(&countdown);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&countdown, &n, n - 1)) {
            if (n == 1) {
                atomic_store(&injected, true);
                return true;
            }
            return false;
        }
    }
    return false;
}

void *__wrap_malloc(size_t size) { return fail_now() ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t size) { return fail_now() ? NULL : __real_realloc(p, size); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

static void arm(long n) {
    atomic_store(&current_n, n);
    atomic_store(&injected, false);
    atomic_store(&countdown, n);
}
/* Disarms; whether the armed failure happened. */
static bool disarm(void) {
    atomic_store(&current_n, 0);
    atomic_store(&countdown, 0);
    return atomic_load(&injected);
}

#define MAX_N 20000
#define WAIT_MS 3000

/* The threaded and deadline-bound scenarios bound each wait short (a run with a failure
 * injected may wait for something that never comes, and there are hundreds of runs), so on a
 * loaded machine even a run with no failure injected can miss one: eddy_bus_start gives its
 * readers 2 * (connect_timeout_ms + reconnect_max_ms) to be ready, 140 ms with bus_settings, and
 * a reader preempted for that long makes start fail with EDDY_ERR_IO although nothing failed.
 * So whether what was asked for all happened is checked in one more run, the patient one: no
 * failure injected (N = 0) and every wait and deadline generous (PATIENT_MS). */
static bool patient;
#define PATIENT_MS 20000

/* A wait or deadline of ms, or PATIENT_MS in the patient run. */
static long long bound_ms(long long ms) { return patient ? PATIENT_MS : ms; }

/* Runs scenario(n) for n = 1, 2, ... until a run injects no failure, first failing only the
 * n-th allocation, then (sticky) every allocation from the n-th on. Past the first `dense`
 * values, n goes up by `stride` (1: every n). With `confirm`, then runs the patient run, in which
 * alone the scenario checks that everything asked for happened. */
static void sweep_strided(const char *name, void (*scenario)(long n, bool *clean), long dense,
                          long stride, bool confirm) {
    for (int mode = 0; mode < 2; mode++) {
        sticky = mode == 1;
        unsigned long before = atomic_load(&wrapped);
        long n = 1;
        for (; n <= MAX_N; n += n < dense ? 1 : stride) {
            bool clean = false;
            scenario(n, &clean);
            if (clean)
                break;
        }
        cr_assert_leq(n, MAX_N, "%s: still failing allocations after %d runs", name, MAX_N);
        cr_assert_gt(atomic_load(&wrapped) - before, (unsigned long)n,
                     "%s: eddy's allocations do not go through the wrappers", name);
        fprintf(stderr, "oom %s%s: N reached %ld (the last run with no failure injected)\n", name,
                sticky ? " (sticky)" : "", n);
    }
    sticky = false;
    if (confirm) {
        bool clean = false;
        patient = true;
        scenario(0, &clean);
        patient = false;
        cr_assert(clean, "%s: the patient run had a failure injected", name);
    }
}

static void sweep(const char *name, void (*scenario)(long n, bool *clean)) {
    sweep_strided(name, scenario, MAX_N, 1, false);
}

/* ---- completions ------------------------------------------------------------------------- */

typedef struct done_rec {
    int calls;
    bool asked; /* the call returned EDDY_OK, so the completion must run once */
    eddy_status st;
    eddy_route route;
} done_rec;

static void expect_status(eddy_status st, const char *what) {
    cr_expect(st >= EDDY_OK && st < EDDY_STATUS_COUNT_, "%s: status %d out of range", what,
              (int)st);
    cr_expect_neq(st, EDDY_PENDING, "%s: EDDY_PENDING is not a final status", what);
}

static void on_done(eddy_status st, const eddy_error *err, void *user) {
    done_rec *d = user;
    expect_status(st, "completion");
    cr_expect(st == EDDY_OK || err, "a failure without detail");
    d->calls++;
    d->st = st;
}

static void on_route(eddy_status st, eddy_route route, const eddy_error *err, void *user) {
    done_rec *d = user;
    expect_status(st, "route completion");
    cr_expect(st == EDDY_OK || err, "a failure without detail");
    d->calls++;
    d->st = st;
    d->route = route;
}

/* Records what a call returned: asked when EDDY_OK. */
static eddy_status asked(done_rec *d, eddy_status st, const char *what) {
    expect_status(st, what);
    cr_expect_eq(d->calls, 0, "%s: the completion ran inside the call (returned %s, N=%ld)", what,
                 eddy_status_name(st), atomic_load(&current_n));
    d->asked = st == EDDY_OK;
    return st;
}

static void expect_once(const done_rec *d, const char *what, long n) {
    cr_expect_eq(d->calls, d->asked ? 1 : 0, "%s (N=%ld): completion ran %d times, expected %d",
                 what, n, d->calls, d->asked ? 1 : 0);
}

/* ---- loop and store ---------------------------------------------------------------------- */

typedef struct tctx {
    struct ev_loop *loop;
    char url[160];
    char ns[96];
    eddy_settings s;
    eddy_rstore *store;
} tctx;

static void setup(tctx *t, const char *prefix) {
    memset(t, 0, sizeof(*t));
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    eddy_test_settings(&t->s, false, prefix, t->url, sizeof(t->url), t->ns, sizeof(t->ns));
    t->s.log = NULL; /* failures are expected: keep the output quiet */
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_open(t->loop, &t->s, &t->store, &err), EDDY_OK, "%s", err.detail);
}

static void teardown(tctx *t) {
    eddy_test_run_for(t->loop, 5);
    eddy_rstore_close(t->store);
    ev_loop_destroy(t->loop);
}

static void on_append(eddy_status st, long long v, const eddy_error *err, void *user) {
    cr_assert_eq(st, EDDY_OK, "append: %s", err ? err->detail : "");
    (*(int *)user)++;
}

static void append_ev(tctx *t, eddy_event *ev) {
    int done = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_rstore_append(t->store, "order-1", (const eddy_event *const *)&ev, 1, NULL,
                                    on_append, &done, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(eddy_test_run_until(t->loop, &done, 1, WAIT_MS));
}

/* Runs the loop until d's completion ran. Failing one allocation, it must run on the loop (not
 * only when free completes it with EDDY_ERR_CLOSED); sticky, the loop cannot progress much while
 * everything fails, so free may complete it. */
static void wait_for(tctx *t, done_rec *d, const char *what) {
    if (!d->asked)
        return;
    eddy_test_run_until(t->loop, &d->calls, 1, sticky ? 100 : WAIT_MS);
    if (!sticky)
        cr_expect_eq(d->calls, 1, "%s (N=%ld): the completion did not run on the loop", what,
                     atomic_load(&current_n));
}

/* ---- the projection ---------------------------------------------------------------------- */

static int applied;

static eddy_status p_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *user) {
    applied++;
    return EDDY_OK;
}

static void codec(eddy_feed_config *cfg) {
    cfg->decode = uev_decode;
    cfg->free_event = uev_free;
    cfg->event_id = uev_id;
}

/* ---- (a) the reactive feed --------------------------------------------------------------- */

static void rfeed_scenario(long n, bool *clean) {
    tctx t;
    setup(&t, "oom-rfeed");
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "h%d", i);
        append_ev(&t, make_event(id, "t"));
    }
    uev held = {"live-held"}, live = {"live-1"};
    done_rec d_held = {0}, d_cu = {0}, d_gl = {0}, d_live = {0};
    eddy_rcheckpoints ck = eddy_rstore_checkpoints(t.store);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "oom-feed";
    cfg.projection.apply = p_apply;
    codec(&cfg);
    cfg.page_size = 1;
    applied = 0;

    arm(n);
    eddy_rfeed *f = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_rfeed_new(t.loop, t.store, &cfg, &ck, &f, &err);
    expect_status(st, "rfeed_new");
    if (st != EDDY_OK) {
        cr_expect_null(f);
        goto out;
    }
    asked(&d_held, eddy_rfeed_accept(f, &held, on_done, &d_held), "accept held");
    asked(&d_cu, eddy_rfeed_catch_up(f, on_done, &d_cu, &err), "catch_up");
    wait_for(&t, &d_cu, "d_cu");
    asked(&d_gl, eddy_rfeed_go_live(f, on_done, &d_gl, &err), "go_live");
    wait_for(&t, &d_gl, "d_gl");
    wait_for(&t, &d_held, "d_held");
    asked(&d_live, eddy_rfeed_accept(f, &live, on_done, &d_live), "accept live");
    wait_for(&t, &d_live, "d_live");
    eddy_rfeed_stop_catch_up(f);
    eddy_feed_info info;
    expect_status(eddy_rfeed_stats(f, &info), "get_info");
    eddy_rfeed_free(f);
out:
    *clean = !disarm();
    teardown(&t);
    expect_once(&d_held, "accept held", n);
    expect_once(&d_cu, "catch_up", n);
    expect_once(&d_gl, "go_live", n);
    expect_once(&d_live, "accept live", n);
    if (*clean) {
        cr_expect_eq(d_cu.st, EDDY_OK);
        cr_expect_eq(d_live.st, EDDY_OK);
        cr_expect_eq(applied, 5, "applied %d events, expected 5", applied);
    }
}

Test(oom, rfeed, .timeout = 600) { sweep("rfeed", rfeed_scenario); }

/* ---- (b) the reactive domain feed -------------------------------------------------------- */

static eddy_filter *build_filter(void) {
    /* type order.placed, or order.big with amount > 5 */
    eddy_field five = eddy_field_int(5);
    eddy_filter *big = eddy_filter_and(eddy_filter_type("order.big"),
                                       eddy_filter_data("amount", EDDY_DATA_GT, &five));
    return eddy_filter_or(eddy_filter_type("order.placed"), big);
}

static void rdomain_scenario(long n, bool *clean) {
    tctx t;
    setup(&t, "oom-rdom");
    append_ev(&t, make_event("s1", "order.placed"));
    append_ev(&t, make_event("s2", "order.other"));
    append_ev(&t, amount_event("s3", 9));
    eddy_event *other = make_event("r1", "order.other");
    eddy_event *early = make_event("r2", "order.placed");
    eddy_event *late = amount_event("r3", 7);
    uev direct = {"d1"};
    done_rec d_filtered = {0}, d_early = {0}, d_cu = {0}, d_late = {0}, d_defer = {0};
    eddy_rcheckpoints ck = eddy_rstore_checkpoints(t.store);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    codec(&cfg);
    cfg.page_size = 1;
    cfg.reader = eddy_msgpack_reader();
    eddy_projection proj = {.apply = p_apply};
    applied = 0;

    arm(n);
    eddy_rdomain_feed *f = NULL;
    eddy_error err = {0};
    eddy_filter *filter = build_filter();
    eddy_status st = eddy_rdomain_new(t.loop, t.store, &cfg, &ck, &f, &err);
    expect_status(st, "rdomain_new");
    if (st != EDDY_OK) {
        cr_expect_null(f);
        goto out;
    }
    st = eddy_rdomain_register(f, "oom-rdom", &proj, filter, &err);
    expect_status(st, "rdomain_register");
    if (st != EDDY_OK) {
        cr_expect_not(eddy_rdomain_has_projection(f));
        goto free;
    }
    asked(&d_filtered, eddy_rdomain_route(f, other, NULL, on_route, &d_filtered, &err), "route");
    asked(&d_early, eddy_rdomain_route(f, early, NULL, on_route, &d_early, &err), "route early");
    wait_for(&t, &d_filtered, "d_filtered");
    wait_for(&t, &d_early, "d_early");
    asked(&d_cu, eddy_rdomain_catch_up_all(f, on_done, &d_cu, &err), "catch_up_all");
    wait_for(&t, &d_cu, "d_cu");
    asked(&d_late, eddy_rdomain_route(f, late, NULL, on_route, &d_late, &err), "route late");
    asked(&d_defer, eddy_rdomain_accept_or_defer(f, NULL, &direct, on_route, &d_defer, &err),
          "accept_or_defer");
    wait_for(&t, &d_late, "d_late");
    wait_for(&t, &d_defer, "d_defer");
free:
    eddy_rdomain_free(f);
out:
    *clean = !disarm();
    eddy_filter_free(filter);
    eddy_event_free(other);
    eddy_event_free(early);
    eddy_event_free(late);
    teardown(&t);
    expect_once(&d_filtered, "route filtered", n);
    expect_once(&d_early, "route early", n);
    expect_once(&d_cu, "catch_up_all", n);
    expect_once(&d_late, "route late", n);
    expect_once(&d_defer, "accept_or_defer", n);
    if (*clean) {
        cr_expect_eq(d_filtered.route, EDDY_ROUTE_FILTERED);
        cr_expect_eq(d_early.route, EDDY_ROUTE_DEFERRED);
        cr_expect_eq(d_cu.st, EDDY_OK);
        cr_expect_eq(d_late.route, EDDY_ROUTE_DELIVERED);
        cr_expect_eq(d_defer.route, EDDY_ROUTE_DELIVERED);
        cr_expect_eq(applied, 4, "applied %d events, expected 4", applied);
    }
}

Test(oom, rdomain, .timeout = 600) { sweep("rdomain", rdomain_scenario); }

/* ---- (c) filters and the blocking domain feed -------------------------------------------- */

static void filters_scenario(long n, bool *clean) {
    const char *types[] = {"order.placed", "order.big"};
    eddy_event *ev = amount_event("f1", 9);
    eddy_field city = eddy_field_string("Lisbon");
    arm(n);
    eddy_filter *fs[] = {
        eddy_filter_types(types, 2),
        eddy_filter_source("/tests"),
        eddy_filter_subject("order-1"),
        eddy_filter_time_range("2026-01-01T00:00:00Z", "2027-01-01T00:00:00.5+01:00"),
        eddy_filter_data("customer.address.city", EDDY_DATA_EQ, &city),
        eddy_filter_data("amount", EDDY_DATA_EXISTS, NULL),
    };
    eddy_filter *all = eddy_filter_and(eddy_filter_or(fs[0], fs[1]), eddy_filter_or(fs[2], fs[3]));
    eddy_filter *data = eddy_filter_or(fs[4], fs[5]);
    eddy_filter *copy = eddy_filter_dup(all);
    eddy_filter *copy2 = eddy_filter_dup(data);
    bool m = false;
    eddy_error err = {0};
    if (copy2)
        expect_status(eddy_filter_match(copy2, ev, eddy_msgpack_reader(), &m, &err), "match");
    (void)eddy_filter_matches(copy, ev);
    *clean = !disarm();
    if (*clean) {
        cr_expect(all && data && copy && copy2);
        cr_expect(m);
    }
    eddy_filter_free(all);
    eddy_filter_free(data);
    eddy_filter_free(copy);
    eddy_filter_free(copy2);
    eddy_event_free(ev);
}

Test(oom, filters, .timeout = 600) { sweep("filters", filters_scenario); }

/* ---- conveniences: the event builder and carrying a trace context ------------------------ */

#define OOM_TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void trace_scenario(long n, bool *clean) {
    eddy_event *src = make_event("src", "t"), *dst = make_event("dst", "t");
    cr_assert_eq(eddy_event_set_extension(src, "traceparent", OOM_TP, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(src, "tracestate", "rojo=1", NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(dst, "tracestate", "old=1", NULL), EDDY_OK);
    eddy_event *built = NULL;
    arm(n);
    eddy_status made = eddy_event_create("/tests", "t", &built, NULL);
    eddy_status carried = eddy_event_continue_trace(dst, src, NULL);
    *clean = !disarm();
    cr_expect(made == EDDY_OK ? built != NULL : made == EDDY_ERR_NOMEM && !built, "create: %s",
              eddy_status_name(made));
    /* All of the context or none of it. */
    const char *tp = eddy_event_extension(dst, "traceparent");
    const char *ts = eddy_event_extension(dst, "tracestate");
    if (carried == EDDY_OK)
        cr_expect(tp && strcmp(tp, OOM_TP) == 0 && ts && strcmp(ts, "rojo=1") == 0);
    else
        cr_expect(carried == EDDY_ERR_NOMEM && !tp && ts && strcmp(ts, "old=1") == 0, "n %ld: %s",
                  n, eddy_status_name(carried));
    eddy_event_free(built);
    eddy_event_free(src);
    eddy_event_free(dst);
}

Test(oom, conveniences, .timeout = 600) { sweep("conveniences", trace_scenario); }

/* ---- the CloudEvents JSON format and typed extensions ------------------------------------ */

static void json_scenario(long n, bool *clean) {
    static const char one[] =
        "{\"specversion\":\"1.0\",\"id\":\"j1\",\"source\":\"/s\",\"type\":\"t\",\"n\":5,"
        "\"b\":true,\"s\":\"x\",\"u\":null,\"datacontenttype\":\"application/json\","
        "\"data\":{\"a\": [1, \"\\u00e9\"]}}";
    static const char batch[] = "[{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\","
                                "\"type\":\"t\",\"data_base64\":\"AQI=\"},{\"specversion\":\"1.0\","
                                "\"id\":\"2\",\"source\":\"/s\",\"type\":\"t\",\"datacontenttype\":"
                                "\"text/plain\",\"data\":\"hi\"}]";
    eddy_event *typed = make_event("typed", "t");
    eddy_event *ev = NULL, **evs = NULL;
    size_t count = 0, blen = 0;
    char *text = NULL, *btext = NULL;
    void *bin = NULL;
    arm(n);
    eddy_status read = eddy_event_from_json(one, sizeof(one) - 1, &ev, NULL);
    eddy_status wrote = read == EDDY_OK ? eddy_event_to_json(ev, &text, NULL, NULL) : read;
    eddy_status bread = eddy_event_batch_from_json(batch, sizeof(batch) - 1, &evs, &count, NULL);
    eddy_status bwrote = bread == EDDY_OK ? eddy_event_batch_to_json((const eddy_event *const *)evs,
                                                                     count, &btext, NULL, NULL)
                                          : bread;
    eddy_status si = eddy_event_set_ext_int(typed, "i", -7, NULL);
    eddy_status sb = eddy_event_set_ext_binary(typed, "bin", "\x01\x02", 2, NULL);
    eddy_status gb = sb == EDDY_OK ? eddy_event_ext_binary(typed, "bin", &bin, &blen) : sb;
    *clean = !disarm();
    cr_expect(read == EDDY_OK ? ev != NULL : read == EDDY_ERR_NOMEM && !ev, "read: %s",
              eddy_status_name(read));
    cr_expect(wrote == EDDY_OK || wrote == EDDY_ERR_NOMEM, "write: %s", eddy_status_name(wrote));
    if (wrote == EDDY_OK)
        cr_expect(strstr(text, "\"n\":5,\"b\":true") && strstr(text, "\"data\":{\"a\":[1,"), "%s",
                  text);
    else
        cr_expect_null(text);
    cr_expect(bread == EDDY_OK ? count == 2 : bread == EDDY_ERR_NOMEM && !evs && count == 0,
              "batch read: %s", eddy_status_name(bread));
    cr_expect(bwrote == EDDY_OK ? btext != NULL : bwrote == EDDY_ERR_NOMEM && !btext);
    /* a failed setter changes nothing */
    int32_t iv = 0;
    cr_expect(si == EDDY_OK ? eddy_event_ext_int(typed, "i", &iv) == EDDY_OK && iv == -7
                            : si == EDDY_ERR_NOMEM && !eddy_event_extension(typed, "i"));
    cr_expect(sb == EDDY_OK || (sb == EDDY_ERR_NOMEM && !eddy_event_extension(typed, "bin")));
    cr_expect(gb == EDDY_OK ? blen == 2 && memcmp(bin, "\x01\x02", 2) == 0
                            : gb == EDDY_ERR_NOMEM && !bin);
    for (size_t i = 0; i < count; i++)
        eddy_event_free(evs[i]);
    free(evs);
    free(text);
    free(btext);
    free(bin);
    eddy_event_free(ev);
    eddy_event_free(typed);
}

Test(oom, event_json, .timeout = 600) { sweep("event_json", json_scenario); }

/* ---- (j) decoding entries: one block per event, views and their fallback copies ------------ */

static void decode_scenario(long n, bool *clean) {
    /* ids not followed by a NUL cannot be borrowed: the view copies */
    static const char blob[] = "specversion1.0idXYZsource/stypetx-kvalue";
    const char *loose[] = {blob,      blob + 11, blob + 14, blob + 16, blob + 19,
                           blob + 25, blob + 27, blob + 31, blob + 32, blob + 35};
    size_t loose_len[] = {11, 3, 2, 2, 6, 2, 4, 1, 3, 3};
    const char *fv[32] = {"specversion", "1.0",  "id", "d1",   "source",
                          "/s",          "type", "t",  "data", "xyz"};
    size_t nfv = 10;
    static const char *const ext[] = {"x-a", "x-b", "x-c", "x-d", "x-e",
                                      "x-f", "x-g", "x-h", "x-i", "x-j"};
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        fv[nfv++] = ext[i];
        fv[nfv++] = "v";
    }
    size_t len[32];
    for (size_t i = 0; i < nfv; i++)
        len[i] = strlen(fv[i]);
    eddy__event_view v1, v2, v3;
    const eddy_event *e1 = NULL, *e2 = NULL, *e3 = NULL;
    eddy_event *owned = NULL, *dup = NULL;
    eddy_status s_owned, s1, s2, s3, s_ext = EDDY_ERR_NOMEM, s_id = EDDY_ERR_NOMEM;
    arm(n);
    s_owned = eddy__entry_decode(fv, len, nfv, 1 << 20, &owned, NULL);
    s1 = eddy__entry_decode_view(loose, loose_len, 10, 1 << 20, &v1, &e1, NULL);
    s2 = eddy__entry_decode_view(fv, len, nfv, 1 << 20, &v2, &e2, NULL); /* 10 extensions */
    s3 = eddy__entry_decode_view(fv, len, 10, 1 << 20, &v3, &e3, NULL);  /* borrowed */
    if (owned) {
        s_ext = eddy_event_set_extension(owned, "grown", "beyond the block", NULL);
        s_id = eddy_event_set_id(owned, "d2");
        dup = eddy_event_dup(owned);
    }
    *clean = !disarm();
    expect_status(s_owned, "decode");
    expect_status(s1, "decode view");
    cr_expect_eq(s3, EDDY_OK, "a borrowed view allocates nothing");
    cr_expect_null(v3.owned);
    if (*clean) {
        cr_expect(s_owned == EDDY_OK && s1 == EDDY_OK && s2 == EDDY_OK && s_ext == EDDY_OK &&
                  s_id == EDDY_OK && dup);
        cr_expect_str_eq(eddy_event_extension(dup, "grown"), "beyond the block");
        cr_expect_str_eq(eddy_event_id(dup), "d2");
        cr_expect_str_eq(eddy_event_id(e1), "XY");
        cr_expect_eq(eddy_event_extension_count(e2), 10);
    }
    cr_expect((s_owned == EDDY_OK) == (owned != NULL));
    cr_expect((s1 == EDDY_OK) == (e1 != NULL));
    cr_expect((s2 == EDDY_OK) == (e2 != NULL));
    if (owned)
        cr_expect_str_eq(eddy_event_id(owned), s_id == EDDY_OK ? "d2" : "d1",
                         "a failed setter leaves the event as it was");
    if (e1)
        eddy__event_view_release(&v1);
    if (e2)
        eddy__event_view_release(&v2);
    if (e3)
        eddy__event_view_release(&v3);
    eddy_event_free(owned);
    eddy_event_free(dup);
}

Test(oom, decode, .timeout = 600) { sweep("decode", decode_scenario); }

static void domain_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, false, "oom-dom", url, sizeof(url), ns, sizeof(ns));
    s.log = NULL;
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    eddy_event *other = make_event("r1", "order.other");
    eddy_event *early = make_event("r2", "order.placed");
    eddy_event *late = amount_event("r3", 7);
    uev direct = {"d1"};
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    codec(&cfg);
    cfg.reader = eddy_msgpack_reader();
    eddy_projection proj = {.apply = p_apply};
    eddy_route r[4] = {0};
    eddy_status rs[4] = {-1, -1, -1, -1};
    eddy_status gl = -1;
    applied = 0;

    arm(n);
    eddy_domain_feed *f = NULL;
    eddy_filter *filter = build_filter();
    eddy_status st = eddy_domain_new(store, &cfg, &f, &err);
    expect_status(st, "domain_new");
    if (st != EDDY_OK)
        goto out;
    st = eddy_domain_register(f, "oom-dom", &proj, filter, &err);
    expect_status(st, "domain_register");
    if (st != EDDY_OK) {
        cr_expect_not(eddy_domain_has_projection(f));
        goto free;
    }
    expect_status(rs[0] = eddy_domain_route(f, other, NULL, &r[0], &err), "route");
    expect_status(rs[1] = eddy_domain_route(f, early, NULL, &r[1], &err), "route early");
    expect_status(gl = eddy_domain_go_live(f, "oom-dom", NULL, &err), "go_live");
    expect_status(rs[2] = eddy_domain_route(f, late, NULL, &r[2], &err), "route late");
    expect_status(rs[3] = eddy_domain_accept_or_defer(f, NULL, &direct, &r[3], &err),
                  "accept_or_defer");
free:
    eddy_domain_free(f);
out:
    *clean = !disarm();
    eddy_filter_free(filter);
    eddy_event_free(other);
    eddy_event_free(early);
    eddy_event_free(late);
    eddy_store_close(store);
    if (*clean) {
        cr_expect(rs[0] == EDDY_OK && r[0] == EDDY_ROUTE_FILTERED);
        cr_expect(rs[1] == EDDY_OK && r[1] == EDDY_ROUTE_DEFERRED);
        cr_expect_eq(gl, EDDY_OK);
        cr_expect(rs[2] == EDDY_OK && r[2] == EDDY_ROUTE_DELIVERED);
        cr_expect(rs[3] == EDDY_OK && r[3] == EDDY_ROUTE_DELIVERED);
    }
}

Test(oom, domain, .timeout = 600) { sweep("domain", domain_scenario); }

/* ---- (d) the reactive push model --------------------------------------------------------- */

static int observed;

static eddy_status observe(const eddy_event *ev, eddy_status st, eddy_route route,
                           const eddy_error *err, void *user) {
    expect_status(st, "observed");
    observed++;
    return EDDY_OK;
}

static void rpush_model_scenario(long n, bool *clean) {
    tctx t;
    setup(&t, "oom-rpm");
    eddy_event *ev1 = make_event("p1", "order.placed");
    eddy_event *ev2 = make_event("p2", "order.placed");
    eddy_event *ev3 = make_event("p3", "order.other");
    done_rec d_gl = {0}, d1 = {0}, d2 = {0};
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    codec(&cfg);
    eddy_projection proj = {.apply = p_apply};
    eddy_push_observer obs = {.observe = observe};
    eddy_error err = {0};
    eddy_rdomain_feed *f = NULL;
    eddy_filter *filter = eddy_filter_type("order.placed");
    cr_assert_eq(eddy_rdomain_new(t.loop, t.store, &cfg, NULL, &f, &err), EDDY_OK);
    cr_assert_eq(eddy_rdomain_register(f, "oom-rpm", &proj, filter, &err), EDDY_OK);
    eddy_filter_free(filter);
    observed = 0;
    applied = 0;

    arm(n);
    eddy_rpush_model *m = NULL;
    eddy_status st = eddy_rpush_model_new(t.loop, &obs, NULL, NULL, &m, &err);
    expect_status(st, "rpush_model_new");
    if (st != EDDY_OK)
        goto out;
    st = eddy_rpush_model_add(m, f, &err);
    expect_status(st, "rpush_model_add");
    asked(&d_gl, eddy_rdomain_go_live(f, "oom-rpm", on_done, &d_gl, &err), "go_live");
    wait_for(&t, &d_gl, "d_gl");
    st = eddy_rpush_model_accept(m, ev1, NULL);
    expect_status(st, "rpush_model_accept");
    asked(&d1, eddy_rpush_model_accept_or_defer(m, ev2, NULL, on_route, &d1, &err),
          "accept_or_defer");
    asked(&d2, eddy_rpush_model_accept_or_defer(m, ev3, NULL, on_route, &d2, &err),
          "accept_or_defer filtered");
    wait_for(&t, &d1, "d1");
    wait_for(&t, &d2, "d2");
    eddy_test_run_for(t.loop, 2);
    eddy_rpush_model_free(m);
out:
    *clean = !disarm();
    eddy_rdomain_free(f);
    eddy_event_free(ev1);
    eddy_event_free(ev2);
    eddy_event_free(ev3);
    teardown(&t);
    expect_once(&d_gl, "go_live", n);
    expect_once(&d1, "accept_or_defer", n);
    expect_once(&d2, "accept_or_defer filtered", n);
    if (*clean) {
        cr_expect(d1.st == EDDY_OK && d1.route == EDDY_ROUTE_DELIVERED);
        cr_expect(d2.st == EDDY_OK && d2.route == EDDY_ROUTE_FILTERED);
        cr_expect_eq(observed, 3, "observed %d outcomes, expected 3", observed);
        cr_expect_eq(applied, 2);
    }
}

Test(oom, rpush_model, .timeout = 600) { sweep("rpush_model", rpush_model_scenario); }

/* ---- (e) reactive push sources on a reactive bus ----------------------------------------- */

static int bus_ready;
static void on_bus_ready(eddy_status st, const eddy_error *err, void *user) { bus_ready++; }

static void on_added(eddy_status st, const eddy_error *err, void *user) { on_done(st, err, user); }

static const char *started_ids[4];
static size_t started_n;

static void on_started(eddy_status st, const char *const *ids, size_t n, const eddy_error *err,
                       void *user) {
    on_done(st, err, user);
    started_n = n;
    for (size_t i = 0; i < n && i < 4; i++)
        started_ids[i] = ids[i];
}

static void rpush_sources_scenario(long n, bool *clean) {
    tctx t;
    setup(&t, "oom-rps");
    append_ev(&t, make_event("s1", "order.placed"));
    append_ev(&t, make_event("s2", "order.other"));
    t.s.block_ms = 20;
    eddy_error err = {0};
    eddy_rbus *bus = NULL;
    cr_assert_eq(eddy_rbus_new(t.loop, &t.s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    bus_ready = 0;
    cr_assert_eq(eddy_rbus_start(bus, on_bus_ready, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert(eddy_test_run_until(t.loop, &bus_ready, 1, PATIENT_MS)); /* setup: ends when ready */
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    codec(&cfg);
    eddy_rcheckpoints ck = eddy_rstore_checkpoints(t.store);
    eddy_rdomain_feed *f = NULL;
    cr_assert_eq(eddy_rdomain_new(t.loop, t.store, &cfg, &ck, &f, &err), EDDY_OK, "%s", err.detail);
    eddy_filter *placed = eddy_filter_type("order.placed");
    cr_assert(placed);
    eddy_rpush_source_spec sp = {.id = "oom-rps",
                                 .feed = f,
                                 .projection = {.apply = p_apply},
                                 .filter = placed,
                                 .subject = "orders.placed",
                                 .group = "oom-view"};
    eddy_push_options o;
    eddy_push_options_init(&o);
    o.mode = EDDY_PUSH_MANUAL;
    o.observer.observe = observe;
    done_rec d_add = {0}, d_start = {0};
    started_n = 0;
    applied = 0;

    arm(n);
    eddy_rpush_sources *ps = NULL;
    eddy_status st = eddy_rpush_sources_new(t.loop, bus, &o, &ps, &err);
    expect_status(st, "rpush_sources_new");
    if (st != EDDY_OK)
        goto out;
    st = asked(&d_add, eddy_rpush_sources_add(ps, &sp, on_added, &d_add, &err), "sources_add");
    wait_for(&t, &d_add, "d_add");
    if (st == EDDY_OK) {
        asked(&d_start, eddy_rpush_sources_start_all(ps, on_started, &d_start, &err), "start_all");
        wait_for(&t, &d_start, "d_start");
        eddy_push_progress pg;
        expect_status(eddy_rpush_sources_stats(ps, "oom-rps", &pg), "sources_status");
    }
out:
    *clean = !disarm();
    eddy_rbus_stop(bus);
    eddy_rpush_sources_free(ps);
    eddy_test_run_for(t.loop, 5);
    eddy_rdomain_free(f);
    eddy_rbus_free(bus);
    eddy_filter_free(placed);
    teardown(&t);
    expect_once(&d_add, "sources_add", n);
    expect_once(&d_start, "start_all", n);
    if (*clean) {
        cr_expect_eq(d_add.st, EDDY_OK);
        cr_expect_eq(d_start.st, EDDY_OK);
        cr_expect_eq(started_n, 1);
        cr_expect_eq(applied, 1, "applied %d events, expected 1", applied);
    }
}

Test(oom, rpush_sources, .timeout = 600) { sweep("rpush_sources", rpush_sources_scenario); }

/* ---- helpers for the blocking scenarios -------------------------------------------------- */

/* Settings on a fresh memory:// namespace for a blocking bus: few workers, short reads and a
 * short redelivery delay, so that a run takes tens of milliseconds; and short connect and
 * reconnect times, since eddy_bus_start waits for each reader for 2 * (connect_timeout_ms +
 * reconnect_max_ms) (8 s by default), which a reader that cannot allocate never cuts short. */
static void bus_settings(eddy_settings *s, const char *prefix, char *url, size_t url_size, char *ns,
                         size_t ns_size) {
    eddy_test_settings(s, false, prefix, url, url_size, ns, ns_size);
    s->log = NULL;
    s->workers = 2;
    s->block_ms = 20;
    s->redelivery_idle_ms = 30;
    s->connect_timeout_ms = (int)bound_ms(50);
    s->reconnect_min_ms = 5;
    s->reconnect_max_ms = 20;
}

/* The index of a test event "e<i>", or -1. */
static int event_index(const eddy_delivery *d) {
    const char *id = eddy_event_id(eddy_delivery_event(d));
    return id && id[0] == 'e' && id[1] >= '0' && id[1] <= '9' && !id[2] ? id[1] - '0' : -1;
}

/* ---- (f) the blocking bus ---------------------------------------------------------------- */

#define BUS_EVENTS 3

static atomic_uint work_done, fan_done; /* bit i: event e<i> handled */
static atomic_uint work_failed, fan_handed_back;

/* Competing, AtLeastOnce: fails e1's first attempt. */
static eddy_status h_work(eddy_delivery *d, void *user) {
    int i = event_index(d);
    if (i < 0)
        return EDDY_ERR_HANDLER_FAILED;
    if (i == 1 && atomic_fetch_add(&work_failed, 1) == 0)
        return EDDY_ERR_HANDLER_FAILED;
    atomic_fetch_or(&work_done, 1u << i);
    return EDDY_OK;
}

/* Fanout, AtLeastOnce: hands e2 back the first time. */
static eddy_status h_fan(eddy_delivery *d, void *user) {
    int i = event_index(d);
    if (i < 0)
        return EDDY_ERR_HANDLER_FAILED;
    if (i == 2 && atomic_fetch_add(&fan_handed_back, 1) == 0)
        return EDDY_ERR_UNAVAILABLE;
    atomic_fetch_or(&fan_done, 1u << i);
    return EDDY_OK;
}

static unsigned published_mask;

static bool bus_all_handled(void *user) {
    unsigned want = *(unsigned *)user;
    return (atomic_load(&work_done) & want) == want && (atomic_load(&fan_done) & want) == want;
}

static void bus_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    bus_settings(&s, "oom-bus", url, sizeof(url), ns, sizeof(ns));
    eddy_subscription_spec specs[2];
    eddy_subscription_spec_init(&specs[0]);
    specs[0].name = "work";
    specs[0].pattern = "oom.bus";
    specs[0].shape = EDDY_COMPETING;
    specs[0].group = "oom-work";
    specs[0].delivery = EDDY_AT_LEAST_ONCE;
    specs[0].handler = h_work;
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "fan";
    specs[1].pattern = "oom.bus";
    specs[1].shape = EDDY_FANOUT;
    specs[1].delivery = EDDY_AT_LEAST_ONCE;
    specs[1].handler = h_fan;
    eddy_event *evs[BUS_EVENTS];
    for (int i = 0; i < BUS_EVENTS; i++) {
        char id[8];
        snprintf(id, sizeof(id), "e%d", i);
        evs[i] = make_event(id, "order.placed");
    }
    atomic_store(&work_done, 0);
    atomic_store(&fan_done, 0);
    atomic_store(&work_failed, 0);
    atomic_store(&fan_handed_back, 0);
    published_mask = 0;
    eddy_status started = -1, stopped = -1;
    bool handled = false;
    eddy_consumer_stats ws = {0}, fs = {0};

    arm(n);
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(&s, specs, 2, &bus, &err);
    expect_status(st, "bus_new");
    if (st != EDDY_OK) {
        cr_expect_null(bus);
        goto out;
    }
    started = eddy_bus_start(bus, &err);
    expect_status(started, "bus_start");
    for (int i = 0; i < BUS_EVENTS; i++) {
        char entry[64];
        st = eddy_bus_publish(bus, "oom.bus", evs[i], entry, sizeof(entry), &err);
        expect_status(st, "bus_publish");
        if (st == EDDY_OK)
            published_mask |= 1u << i;
    }
    if (started == EDDY_OK)
        handled =
            eddy_test_wait_until(bus_all_handled, &published_mask, bound_ms(sticky ? 100 : 600));
    expect_status(eddy_bus_pause(bus, "work", &err), "bus_pause");
    expect_status(eddy_bus_resume(bus, "work", &err), "bus_resume");
    expect_status(eddy_bus_consumer_stats(bus, "work", &ws), "consumer_stats");
    expect_status(eddy_bus_consumer_stats(bus, "fan", &fs), "consumer_stats");
    stopped = eddy_bus_stop(bus);
    expect_status(stopped, "bus_stop");
    eddy_bus_free(bus);
out:
    *clean = !disarm();
    for (int i = 0; i < BUS_EVENTS; i++)
        eddy_event_free(evs[i]);
    if (patient) {
        cr_expect_eq(started, EDDY_OK, "start: %s", err.detail);
        cr_expect_eq(stopped, EDDY_OK);
        cr_expect_eq(published_mask, (1u << BUS_EVENTS) - 1);
        cr_expect(handled, "handled: work %x, fan %x", atomic_load(&work_done),
                  atomic_load(&fan_done));
        cr_expect_geq(ws.failed, 1);
        cr_expect_geq(fs.held, 1);
    }
}

Test(oom, bus, .timeout = 600) { sweep_strided("bus", bus_scenario, 40, 29, true); }

/* ---- (g) the blocking event store -------------------------------------------------------- */

static int stored_seen;

static eddy_status on_stored(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    cr_expect(ev && meta && meta->stream_id);
    stored_seen++;
    return EDDY_OK;
}

static void store_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, false, "oom-store", url, sizeof(url), ns, sizeof(ns));
    s.log = NULL;
    eddy_event *a = make_event("s1", "order.placed");
    eddy_event *b = make_event("s2", "order.other");
    eddy_event *c = amount_event("s3", 9);
    const eddy_event *first[] = {a, b};
    const eddy_event *second[] = {c};
    eddy_status ap[3] = {-1, -1, -1}, rs = -1, ra = -1, hd = -1, ck[4] = {-1, -1, -1, -1};
    long long v1 = 0, v2 = 0, next = 0, head = 0;
    bool found = false, exists = true;
    char marker[32] = "";
    stored_seen = 0;

    arm(n);
    eddy_store *store = NULL;
    eddy_error err = {0};
    eddy_filter *placed = NULL;
    eddy_status st = eddy_store_open(&s, &store, &err);
    expect_status(st, "store_open");
    if (st != EDDY_OK) {
        cr_expect_null(store);
        goto out;
    }
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = EDDY_NO_STREAM;
    o.publish_subject = "oom.store";
    expect_status(ap[0] = eddy_store_append(store, "order-1", first, 2, &o, &v1, &err), "append");
    o.expected_version = 2;
    expect_status(ap[1] = eddy_store_append(store, "order-1", second, 1, &o, &v2, &err),
                  "append v2");
    o.expected_version = EDDY_NO_STREAM; /* a conflict once the stream exists */
    expect_status(ap[2] = eddy_store_append(store, "order-1", second, 1, &o, NULL, &err),
                  "append conflict");
    expect_status(rs = eddy_store_read_stream(store, "order-1", 0, on_stored, NULL, &err),
                  "read_stream");
    placed = eddy_filter_type("order.placed");
    if (placed)
        expect_status(ra = eddy_store_read_page(store, 0, 10, placed, on_stored, NULL, &next, &err),
                      "read_all");
    expect_status(hd = eddy_store_head(store, &head, &err), "head");
    eddy_checkpoints cp = eddy_store_checkpoints(store);
    expect_status(ck[0] = cp.ops->save(cp.self, "oom-feed", "3", &err), "checkpoint save");
    expect_status(ck[1] = cp.ops->read(cp.self, "oom-feed", marker, sizeof(marker), &found, &err),
                  "checkpoint read");
    expect_status(ck[2] = cp.ops->remove(cp.self, "oom-feed", &err), "checkpoint remove");
    expect_status(ck[3] = cp.ops->exists(cp.self, "oom-feed", &exists, &err), "checkpoint exists");
    eddy_store_close(store);
out:
    *clean = !disarm();
    eddy_filter_free(placed);
    eddy_event_free(a);
    eddy_event_free(b);
    eddy_event_free(c);
    if (*clean) {
        cr_expect(ap[0] == EDDY_OK && v1 == 2);
        cr_expect(ap[1] == EDDY_OK && v2 == 3);
        cr_expect_eq(ap[2], EDDY_ERR_VERSION_CONFLICT);
        cr_expect(rs == EDDY_OK && ra == EDDY_OK && hd == EDDY_OK);
        cr_expect_eq(stored_seen, 4, "read %d stored events, expected 3 + 1", stored_seen);
        cr_expect(next == 3 && head == 3);
        cr_expect(ck[0] == EDDY_OK && ck[1] == EDDY_OK && ck[2] == EDDY_OK && ck[3] == EDDY_OK);
        cr_expect(found && strcmp(marker, "3") == 0);
        cr_expect_not(exists);
    }
}

Test(oom, store, .timeout = 600) { sweep("store", store_scenario); }

/* ---- (h) the blocking catch-up feed ------------------------------------------------------ */

static atomic_int bapplied;

static eddy_status p_apply_mt(void *event, const eddy_event_meta *meta, eddy_error *err,
                              void *user) {
    atomic_fetch_add(&bapplied, 1);
    return EDDY_OK;
}

typedef struct accepter {
    eddy_feed *feed;
    eddy_cancel *cancel;
    uev event;
    eddy_status st;
    atomic_bool returned;
} accepter;

static void *accept_thread(void *arg) {
    accepter *a = arg;
    eddy_error err = {0};
    a->st = eddy_feed_accept(a->feed, &a->event, a->cancel, &err);
    atomic_store(&a->returned, true);
    return NULL;
}

/* The accept is held by the feed, or has already returned. */
static bool accept_settled(void *arg) {
    accepter *a = arg;
    eddy_feed_info info;
    return atomic_load(&a->returned) ||
           (eddy_feed_stats(a->feed, &info) == EDDY_OK && info.held == 1);
}

static bool accept_returned(void *arg) { return atomic_load(&((accepter *)arg)->returned); }

typedef struct offer_rec {
    atomic_int calls;
    eddy_status st;
} offer_rec;

static void on_offer(eddy_status st, const eddy_error *err, void *user) {
    offer_rec *o = user;
    expect_status(st, "offer completion");
    o->st = st;
    atomic_fetch_add(&o->calls, 1);
}

static void feed_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, false, "oom-bfeed", url, sizeof(url), ns, sizeof(ns));
    s.log = NULL;
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "h%d", i);
        eddy_event *ev = make_event(id, "t");
        cr_assert_eq(eddy_store_append(store, "order-1", (const eddy_event *const *)&ev, 1, NULL,
                                       NULL, &err),
                     EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
    }
    eddy_checkpoints ck = eddy_store_checkpoints(store);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "oom-bfeed";
    cfg.projection.apply = p_apply_mt;
    codec(&cfg);
    cfg.checkpoints = &ck;
    cfg.page_size = 1;
    accepter acc = {.event = {"live-held"}, .st = -1};
    acc.cancel = eddy_cancel_new();
    cr_assert(acc.cancel);
    uev offered = {"live-1"};
    offer_rec off = {.st = -1};
    eddy_status cu = -1, gl = -1, os = -1;
    bool offer_asked = false;
    atomic_store(&bapplied, 0);

    arm(n);
    eddy_feed *f = NULL;
    pthread_t tid;
    eddy_status st = eddy_feed_new(store, &cfg, &f, &err);
    expect_status(st, "feed_new");
    if (st != EDDY_OK) {
        cr_expect_null(f);
        goto out;
    }
    acc.feed = f;
    cr_assert_eq(pthread_create(&tid, NULL, accept_thread, &acc), 0);
    /* Let the accept be held before the catch-up starts (bounded: it may fail at once). */
    cr_expect(eddy_test_wait_until(accept_settled, &acc, WAIT_MS),
              "N=%ld: the accept is neither held nor done", n);
    expect_status(cu = eddy_feed_catch_up(f, NULL, &err), "feed_catch_up");
    expect_status(gl = eddy_feed_go_live(f, NULL, &err), "feed_go_live");
    os = eddy_feed_offer(f, NULL, &offered, on_offer, &off);
    expect_status(os, "feed_offer");
    offer_asked = os == EDDY_OK;
    /* When neither the catch-up nor the go-live took (both refused before changing anything),
     * the accept is still held: the cancel ends it. After a go-live it has returned already. */
    if (cu != EDDY_OK && gl != EDDY_OK)
        eddy_cancel_fire(acc.cancel);
    cr_expect(eddy_test_wait_until(accept_returned, &acc, WAIT_MS),
              "N=%ld: the accept did not return (catch-up %s, go-live %s)", n, eddy_status_name(cu),
              eddy_status_name(gl));
    eddy_cancel_fire(acc.cancel); /* no hang even then */
    pthread_join(tid, NULL);
    expect_status(acc.st, "feed_accept");
    eddy_feed_info info;
    expect_status(eddy_feed_stats(f, &info), "feed_get_info");
    eddy_feed_free(f);
out:
    *clean = !disarm();
    eddy_cancel_free(acc.cancel);
    eddy_store_close(store);
    cr_expect_eq(atomic_load(&off.calls), offer_asked ? 1 : 0,
                 "offer (N=%ld): completion ran %d times", n, atomic_load(&off.calls));
    if (*clean) {
        cr_expect_eq(cu, EDDY_OK);
        cr_expect_eq(gl, EDDY_OK);
        cr_expect_eq(acc.st, EDDY_OK);
        cr_expect(os == EDDY_OK && off.st == EDDY_OK);
        cr_expect_eq(atomic_load(&bapplied), 5, "applied %d events, expected 5",
                     atomic_load(&bapplied));
    }
}

Test(oom, feed, .timeout = 600) { sweep("feed", feed_scenario); }

/* ---- (i) request/reply on the blocking bus ----------------------------------------------- */

static atomic_int responded;

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    atomic_fetch_add(&responded, 1);
    eddy_event *r = eddy_event_new();
    if (!r || eddy_event_set_id(r, "reply-1") != EDDY_OK ||
        eddy_event_set_source(r, "/tests/responder") != EDDY_OK ||
        eddy_event_set_type(r, "t.reply") != EDDY_OK ||
        eddy_event_set_data(r, "ok", 2) != EDDY_OK) {
        eddy_event_free(r);
        return EDDY_ERR_NOMEM;
    }
    *reply = r;
    return EDDY_OK;
}

static void reqrep_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    bus_settings(&s, "oom-rr", url, sizeof(url), ns, sizeof(ns));
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "responder";
    sp.pattern = "oom.rr";
    sp.shape = EDDY_COMPETING;
    sp.group = "oom-rr";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = respond;
    eddy_event *req = make_event("q1", "t.ask");
    eddy_event *reply = NULL;
    eddy_status started = -1, rq = -1;
    eddy_request_stats rst = {0};
    atomic_store(&responded, 0);

    arm(n);
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(&s, &sp, 1, &bus, &err);
    expect_status(st, "bus_new");
    if (st != EDDY_OK) {
        cr_expect_null(bus);
        goto out;
    }
    started = eddy_bus_start(bus, &err);
    expect_status(started, "bus_start");
    eddy_request_opts o = {.deadline_ms = eddy_deadline_in(bound_ms(sticky ? 100 : 300))};
    rq = eddy_bus_request(bus, "oom.rr", req, &o, &reply, &err);
    expect_status(rq, "bus_request");
    cr_expect(rq == EDDY_OK ? reply != NULL : reply == NULL, "N=%ld: request %s, reply %p", n,
              eddy_status_name(rq), (void *)reply);
    expect_status(eddy_bus_request_stats(bus, NULL, &rst), "request_stats");
    expect_status(eddy_bus_stop(bus), "bus_stop");
    eddy_bus_free(bus);
out:
    *clean = !disarm();
    eddy_event_free(reply);
    eddy_event_free(req);
    if (patient) {
        cr_expect_eq(started, EDDY_OK);
        cr_expect_eq(rq, EDDY_OK, "request: %s", eddy_status_name(rq));
        cr_expect_eq(atomic_load(&responded), 1);
        cr_expect(rst.sent == 1 && rst.answered == 1);
    }
}

Test(oom, reqrep, .timeout = 600) { sweep_strided("reqrep", reqrep_scenario, 40, 17, true); }

/* A scatter-gather request on the blocking bus, to a responder that answers them: every
 * outcome a status, the list freed, the counters one request. */
static void gather_scenario(long n, bool *clean) {
    char url[160], ns[96];
    eddy_settings s;
    bus_settings(&s, "oom-sg", url, sizeof(url), ns, sizeof(ns));
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "responder";
    sp.pattern = "oom.sg";
    sp.shape = EDDY_COMPETING;
    sp.group = "oom-sg";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = respond;
    eddy_event *req = make_event("q1", "t.ask");
    eddy_replies *replies = NULL;
    eddy_status started = -1, rq = -1;
    eddy_request_stats rst = {0};
    atomic_store(&responded, 0);

    arm(n);
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(&s, &sp, 1, &bus, &err);
    expect_status(st, "bus_new");
    if (st != EDDY_OK) {
        cr_expect_null(bus);
        goto out;
    }
    expect_status(eddy_bus_answer_all(bus, "responder", &err), "bus_answer_all");
    started = eddy_bus_start(bus, &err);
    expect_status(started, "bus_start");
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(bound_ms(sticky ? 100 : 300));
    o.max_replies = 1;
    rq = eddy_bus_request_all(bus, "oom.sg", req, &o, &replies, &err);
    expect_status(rq, "bus_request_all");
    cr_expect(rq != EDDY_OK || eddy_replies_count(replies) == 1, "N=%ld: %s with %zu replies", n,
              eddy_status_name(rq), eddy_replies_count(replies));
    expect_status(eddy_bus_request_stats(bus, NULL, &rst), "request_stats");
    expect_status(eddy_bus_stop(bus), "bus_stop");
    eddy_bus_free(bus);
out:
    *clean = !disarm();
    eddy_replies_free(replies);
    eddy_event_free(req);
    if (patient) {
        cr_expect_eq(started, EDDY_OK);
        cr_expect_eq(rq, EDDY_OK, "request_all: %s", eddy_status_name(rq));
        cr_expect_eq(atomic_load(&responded), 1);
        cr_expect(rst.sent == 1 && rst.answered == 1);
    }
}

Test(oom, gather, .timeout = 600) { sweep_strided("gather", gather_scenario, 40, 17, true); }

/* ---- (k) the reactive publishing connection's pipeline ----------------------------------- */
/* Publishes and requests in flight together on one reactive bus (their commands queued behind
 * each other on the publishing connection, the requests driven through the core's request
 * sequence): with any allocation failing, each accepted call completes exactly once, from the
 * loop, with a status in range; with none failing, all succeed. */

typedef struct pipe_rec {
    int calls;
    bool asked;
    eddy_status st;
} pipe_rec;

static int pipe_completions;

static void pipe_published(eddy_status st, const char *entry_id, void *user) {
    pipe_rec *r = user;
    expect_status(st, "publish completion");
    cr_expect(st != EDDY_OK || entry_id, "a publish succeeded without an entry id");
    r->calls++;
    r->st = st;
    pipe_completions++;
}

static void pipe_replied(eddy_status st, eddy_event *reply, void *user) {
    pipe_rec *r = user;
    expect_status(st, "request completion");
    cr_expect(st == EDDY_OK ? reply != NULL : reply == NULL, "request %s with reply %p",
              eddy_status_name(st), (void *)reply);
    eddy_event_free(reply);
    r->calls++;
    r->st = st;
    pipe_completions++;
}

#define PIPE_CALLS 6 /* alternately a publish and a request */

static void rpipeline_scenario(long n, bool *clean) {
    tctx t;
    setup(&t, "oom-rpipe");
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "responder";
    sp.pattern = "oom.rpipe";
    sp.shape = EDDY_COMPETING;
    sp.group = "oom-rpipe";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = respond;
    eddy_error err = {0};
    eddy_rbus *bus = NULL;
    cr_assert_eq(eddy_rbus_new(t.loop, &t.s, &sp, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    bus_ready = 0;
    cr_assert_eq(eddy_rbus_start(bus, on_bus_ready, NULL, &err), EDDY_OK, "%s", err.detail);
    cr_assert(eddy_test_run_until(t.loop, &bus_ready, 1, PATIENT_MS)); /* setup: ends when ready */
    eddy_event *ev[PIPE_CALLS];
    for (int i = 0; i < PIPE_CALLS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "p%d", i);
        ev[i] = make_event(id, "t.ask");
    }
    pipe_rec rec[PIPE_CALLS] = {{0}};
    int accepted = 0;
    pipe_completions = 0;
    atomic_store(&responded, 0);

    arm(n);
    for (int i = 0; i < PIPE_CALLS; i++) {
        eddy_status st;
        if (i % 2 == 0) {
            st = eddy_rbus_publish(bus, "oom.rpipe.events", ev[i], pipe_published, &rec[i], &err);
        } else {
            eddy_request_opts o = {.deadline_ms = eddy_deadline_in(bound_ms(sticky ? 100 : 300))};
            st = eddy_rbus_request(bus, "oom.rpipe", ev[i], &o, pipe_replied, &rec[i], NULL, &err);
        }
        expect_status(st, i % 2 == 0 ? "rbus_publish" : "rbus_request");
        cr_expect_eq(rec[i].calls, 0, "call %d completed inside the call (N=%ld)", i, n);
        rec[i].asked = st == EDDY_OK;
        accepted += rec[i].asked;
    }
    eddy_test_run_until(t.loop, &pipe_completions, accepted, bound_ms(sticky ? 300 : WAIT_MS));
    *clean = !disarm();
    eddy_rbus_stop(bus);
    eddy_test_run_for(t.loop, 5);
    eddy_rbus_free(bus);
    teardown(&t);
    for (int i = 0; i < PIPE_CALLS; i++) {
        cr_expect_eq(rec[i].calls, rec[i].asked ? 1 : 0,
                     "call %d (N=%ld): completed %d times, accepted %d", i, n, rec[i].calls,
                     rec[i].asked);
        eddy_event_free(ev[i]);
        if (patient)
            cr_expect_eq(rec[i].st, EDDY_OK, "call %d: %s", i, eddy_status_name(rec[i].st));
    }
}

Test(oom, rpipeline, .timeout = 600) {
    sweep_strided("rpipeline", rpipeline_scenario, 80, 3, true);
}

/* ---- (l) dead letters on the blocking front end ----------------------------------------- */

static int dl_listed;

static eddy_status on_dead_letter(const eddy_dead_letter *dl, void *user) {
    (void)user;
    const eddy_event *ev = NULL;
    expect_status(eddy_dead_letter_event(dl, &ev, NULL), "dead_letter_event");
    eddy_dead_letter *copy = eddy_dead_letter_dup(dl);
    eddy_dead_letter_free(copy);
    dl_listed++;
    return EDDY_OK;
}

/* Writes a dead letter as a subscription does, through the engine (disarmed). */
static void put_dead_letter(const char *url, const char *ns, const char *event_id, char *id) {
    char key[160];
    snprintf(key, sizeof(key), "{%s}:dlq:g", ns);
    const char *argv[] = {"XADD",         key,           "*",
                          "_dlq_subject", "oom.dlq",     "_dlq_entry",
                          "1-0",          "_dlq_reason", "max_deliveries",
                          "_dlq_group",   "g",           "specversion",
                          "1.0",          "id",          event_id,
                          "source",       "/t",          "type",
                          "t.x",          "data",        "d"};
    redisReply *r = raw_cmd(url, (int)(sizeof(argv) / sizeof(argv[0])), argv);
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    snprintf(id, EDDY_DLQ_ID_SIZE, "%s", r->str);
    freeReplyObject(r);
}

static void dlq_scenario(long n, bool *clean) {
    char url[160], ns[96], ids[4][EDDY_DLQ_ID_SIZE];
    eddy_settings s;
    eddy_test_settings(&s, false, "oom-dlq", url, sizeof(url), ns, sizeof(ns));
    s.log = NULL;
    eddy_dlq *keeper = NULL; /* keeps the engine alive between raw writes and the scenario */
    cr_assert_eq(eddy_dlq_open(&s, &keeper, NULL), EDDY_OK);
    for (int i = 0; i < 4; i++)
        put_dead_letter(url, ns, i % 2 ? "odd" : "even", ids[i]);
    eddy_status ls = -1, gt = -1, rp = -1, ra = -1, pg = -1, pa = -1, ct = -1;
    size_t counted = 0, replayed = 0, purged = 0;
    eddy_dead_letter *dl = NULL;
    dl_listed = 0;

    arm(n);
    eddy_dlq *d = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_dlq_open(&s, &d, &err);
    expect_status(st, "dlq_open");
    if (st != EDDY_OK) {
        cr_expect_null(d);
        goto out;
    }
    expect_status(ct = eddy_dlq_count(d, "g", &counted, &err), "dlq_count");
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    expect_status(ls = eddy_dlq_list(d, "g", &cur, 10, on_dead_letter, NULL, &err), "dlq_list");
    expect_status(gt = eddy_dlq_get(d, "g", ids[0], &dl, &err), "dlq_get");
    cr_expect(gt == EDDY_OK ? dl != NULL : dl == NULL);
    expect_status(rp = eddy_dlq_replay(d, "g", ids[1], NULL, 0, &err), "dlq_replay");
    expect_status(pg = eddy_dlq_purge(d, "g", ids[0], &err), "dlq_purge");
    expect_status(ra = eddy_dlq_replay_all(d, "g", &replayed, &err), "dlq_replay_all");
    expect_status(pa = eddy_dlq_purge_all(d, "g", &purged, &err), "dlq_purge_all");
    eddy_dlq_close(d);
out:
    *clean = !disarm();
    eddy_dead_letter_free(dl);
    eddy_dlq_close(keeper);
    if (*clean) {
        cr_expect(ct == EDDY_OK && counted == 4);
        cr_expect(ls == EDDY_OK && dl_listed == 4 && cur.done);
        cr_expect(gt == EDDY_OK && rp == EDDY_OK && pg == EDDY_OK && ra == EDDY_OK);
        cr_expect_eq(replayed, 2);
        cr_expect(pa == EDDY_OK && purged == 0);
    }
}

Test(oom, dlq, .timeout = 600) { sweep("dlq", dlq_scenario); }
/* ---- (m) retention ------------------------------------------------------------------------ */

static const char *ret_reply(const eddy__cmd *c) {
    const char *v = c->argv[0];
    if (!strcmp(v, "SET"))
        return "+OK\r\n";
    if (!strcmp(v, "GET"))
        return "$2\r\nme\r\n";
    if (!strcmp(v, "SMEMBERS"))
        return "*1\r\n$1\r\na\r\n";
    if (!strcmp(v, "TIME"))
        return "*2\r\n$6\r\n100000\r\n$1\r\n0\r\n";
    if (!strcmp(v, "XINFO")) /* one group, 3 read, 2-0 pending */
        return "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\n"
               "pending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-"
               "read\r\n:3\r\n$3\r\nlag\r\n:0\r\n";
    if (!strcmp(v, "XLEN"))
        return ":10\r\n";
    if (!strcmp(v, "XPENDING") && c->argc == 3)
        return "*4\r\n:1\r\n$3\r\n2-0\r\n$3\r\n2-0\r\n*0\r\n";
    if (!strcmp(v, "XPENDING"))
        return "*1\r\n*4\r\n$3\r\n2-0\r\n$2\r\nme\r\n:5\r\n:1\r\n";
#define E(id) "*2\r\n$3\r\n" id "\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
    if (!strcmp(v, "XRANGE"))
        return "*6\r\n" E("1-0") E("2-0") E("3-0") E("4-0") E("5-0") E("6-0");
#undef E
    if (!strcmp(v, "XTRIM"))
        return ":6\r\n";
    return "*0\r\n"; /* ZRANGEBYSCORE: no live lease */
}

static void retention_scenario(long n, bool *clean) {
    eddy_settings es;
    eddy_settings_init(&es);
    es.ns = "t";
    es.instance = "me";
    es.retention_interval_ms = 1000;
    es.retention_grace_ms = 5000;
    es.retention_max_len = 4;
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &es, NULL), EDDY_OK);
    eddy__retention_counters counters;
    memset(&counters, 0, sizeof(counters));
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    int trims = 0;
    arm(n);
    eddy__retention *r = eddy__retention_new(&s, &counters, "me", 0);
    for (int round = 0; r && round < 8; round++) {
        eddy__cmdlist_reset(&cmds);
        eddy_status st = eddy__retention_plan(r, 1000, &cmds);
        expect_status(st, "retention plan");
        if (cmds.n == 0)
            break;
        redisReply *replies[16] = {0};
        cr_assert_leq(cmds.n, 16);
        for (size_t i = 0; i < cmds.n; i++) {
            if (!strcmp(cmds.cmds[i].argv[0], "XTRIM")) {
                trims++;
                cr_expect_str_eq(cmds.cmds[i].argv[3], "6-1", "trimmed at %s",
                                 cmds.cmds[i].argv[3]);
            }
            redisReader *rd = redisReaderCreate();
            const char *text = ret_reply(&cmds.cmds[i]);
            void *rep = NULL;
            cr_assert(rd && redisReaderFeed(rd, text, strlen(text)) == REDIS_OK &&
                      redisReaderGetReply(rd, &rep) == REDIS_OK && rep);
            redisReaderFree(rd);
            replies[i] = rep;
        }
        st = eddy__retention_feed(r, 1000, &cmds, replies, cmds.n);
        expect_status(st, "retention feed");
        for (size_t i = 0; i < cmds.n; i++)
            freeReplyObject(replies[i]);
    }
    eddy__retention_free(r);
    eddy__cmdlist_reset(&cmds);
    *clean = !disarm();
    eddy_retention_stats out;
    eddy__retention_counters_snapshot(&counters, &out);
    cr_expect_leq(trims, 1);
    cr_expect_eq(out.dropped, trims ? 4u : 0u, "dropped %llu", (unsigned long long)out.dropped);
    cr_expect_eq(out.trimmed, trims ? 6u : 0u);
    if (*clean)
        cr_expect(trims == 1 && out.passes == 1);
    eddy__settings_free(&s);
}

Test(oom, retention, .timeout = 600) { sweep("retention", retention_scenario); }

/* ---- (n) admin and stats documents -------------------------------------------------------- */

static int subjects_seen;

static eddy_status on_subject_info(const eddy_subject_info *si, void *user) {
    (void)si;
    (void)user;
    subjects_seen++;
    return EDDY_OK;
}

static eddy_status on_registration(const eddy_registration *r, void *user) {
    (void)r;
    (void)user;
    return EDDY_OK;
}

static eddy_status on_deliver_ok(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    return EDDY_OK;
}

static void raw(const char *url, int argc, const char **argv) {
    redisReply *r = raw_cmd(url, argc, argv);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", argv[0], r ? r->str : "no reply");
    freeReplyObject(r);
}

/* An admin handle over two subjects with groups, pending entries and dead letters, and a
 * reactive bus's stats documents (JSON and Prometheus): with a failure anywhere, each call returns a status (NULL with
 * one for a document) and leaks nothing. */
static void admin_scenario(long n, bool *clean) {
    char url[160], ns[96], key[2][160], subjects[160], dlq[160], subs[160];
    eddy_settings s;
    eddy_test_settings(&s, false, "oom-admin", url, sizeof(url), ns, sizeof(ns));
    s.log = NULL;
    eddy_admin *keeper = NULL; /* keeps the engine alive between raw writes and the scenario */
    cr_assert_eq(eddy_admin_open(&s, &keeper, NULL), EDDY_OK);
    snprintf(subjects, sizeof(subjects), "{%s}:subjects", ns);
    snprintf(dlq, sizeof(dlq), "{%s}:dlq:g", ns);
    snprintf(subs, sizeof(subs), "{%s}:subs", ns);
    for (int i = 0; i < 2; i++) {
        snprintf(key[i], sizeof(key[i]), "{%s}:s:oom.s%d", ns, i);
        raw(url, 3, (const char *[]){"SADD", subjects, key[i] + strlen(ns) + 5});
        raw(url, 5, (const char *[]){"XADD", key[i], "*", "id", "x"});
        raw(url, 5, (const char *[]){"XGROUP", "CREATE", key[i], "g", "0"});
        raw(url, 7, (const char *[]){"XREADGROUP", "GROUP", "g", "c1", "STREAMS", key[i], ">"});
    }
    raw(url, 5, (const char *[]){"XADD", dlq, "*", "_dlq_group", "g"});
    raw(url, 4, (const char *[]){"ZADD", subs, "99999999999999", "r\tg\ti-1\tname\toom.*"});
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "w";
    spec.pattern = "oom.*";
    spec.group = "g";
    spec.handler = on_deliver_ok;
    eddy_rbus *rbus = NULL;
    cr_assert_eq(eddy_rbus_new(loop, &s, &spec, 1, &rbus, NULL), EDDY_OK);
    eddy_status so = -1, ss = -1, sr = -1;
    char *doc = NULL, *rdoc = NULL, *prom = NULL, *rprom = NULL;
    subjects_seen = 0;

    arm(n);
    eddy_error err = {0};
    eddy_admin *a = NULL;
    expect_status(so = eddy_admin_open(&s, &a, &err), "admin_open");
    if (so == EDDY_OK) {
        expect_status(ss = eddy_admin_subjects(a, "oom.*", on_subject_info, NULL, &err),
                      "admin_subjects");
        expect_status(sr = eddy_admin_registry(a, on_registration, NULL, &err), "admin_registry");
        err.status = EDDY_OK;
        doc = eddy_admin_stats_json(a, NULL, &err);
        cr_expect(doc || err.status != EDDY_OK, "a document or a status");
        err.status = EDDY_OK;
        prom = eddy_admin_stats_prometheus(a, NULL, &err);
        cr_expect(prom || err.status != EDDY_OK, "a Prometheus document or a status");
        eddy_admin_close(a);
    } else {
        cr_expect_null(a);
    }
    err.status = EDDY_OK;
    rdoc = eddy_rbus_stats_json(rbus, &err);
    cr_expect(rdoc || err.status == EDDY_ERR_NOMEM, "a document or out of memory");
    err.status = EDDY_OK;
    rprom = eddy_rbus_stats_prometheus(rbus, &err);
    cr_expect(rprom || err.status == EDDY_ERR_NOMEM, "a Prometheus document or out of memory");
    *clean = !disarm();
    eddy_rbus_free(rbus);
    ev_loop_destroy(loop);
    eddy_admin_close(keeper);
    if (*clean) {
        cr_expect(so == EDDY_OK && ss == EDDY_OK && sr == EDDY_OK && subjects_seen == 2);
        cr_expect(doc && strstr(doc, "\"dead_letters\":1") && strstr(doc, "\"pending\":1"), "%s",
                  doc ? doc : "(none)");
        cr_expect(rdoc && strstr(rdoc, "\"subscriptions\""));
        cr_expect(prom && strstr(prom, "group=\"g\"} 1\n"), "%s", prom ? prom : "(none)");
        cr_expect(rprom && strstr(rprom, "eddy_subscription_delivered_total{"));
    }
    free(doc);
    free(rdoc);
    free(prom);
    free(rprom);
}

Test(oom, admin, .timeout = 600) { sweep("admin", admin_scenario); }
