/* SPDX-License-Identifier: BSD-3-Clause */
/* The feed's core state machine with no server and no threads: a harness drives its runs the way
 * a front end does, reading "pages" from an in-memory history, keeping the marker in a fake
 * eddy_checkpoint_ops whose operations fail on demand, and applying events to a recording
 * projection whose callbacks can act on the feed at any point (as the projection itself, or as
 * another thread would, since the core never waits). One test per rule of
 * spec/catch-up-feeds.txt and issue 4, tables where the rule is the same with different
 * faults, both failure modes (blocking, and the reactive one the core already decides), every
 * failing allocation, and the bounded id set. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store/feed.h"
#include "util/dedup.h"

/* ---- the harness ------------------------------------------------------------------------ */

typedef struct tevent {
    char id[48];
} tevent;

typedef struct twait {
    int done;
    eddy_status st;
    char detail[EDDY_ERROR_DETAIL_MAX];
} twait;

typedef struct trun {
    eddy__feed_run *run;
    twait w;
    bool done;
    eddy_status st;
    eddy_error err;
} trun;

typedef struct tacc {
    tevent ev;
    eddy_event_meta meta;
    char sid[32];
    twait w;
    eddy__accept_kind kind;
    eddy__feed_entry *entry;
    eddy_status st;
    eddy_error err;
} tacc;

#define MAX_EV 1024
#define MAX_APPLIED 2048
#define MAX_LOG 16

typedef void (*hook_fn)(const char *id);

static struct {
    eddy__feed *f;
    eddy__feed_mode mode;
    /* the history */
    eddy_event *ev[MAX_EV];
    char stream[MAX_EV][16];
    int n;
    long long page_fail_after; /* a page after this position fails (-1: never) */
    bool head_fail;
    long long decode_fail_pos;
    const char *skip_type;
    /* the checkpoint storage */
    bool marker;
    char marker_value[32];
    int exists_fail, save_fail, remove_fail;
    int exists_calls, save_calls, remove_calls;
    unsigned delays[8];
    long long now; /* the clock the harness gives the core */
    /* the projection */
    char applied[MAX_APPLIED][48];
    bool applied_meta[MAX_APPLIED];
    char applied_stream[MAX_APPLIED][32];
    int napplied;
    const char *fail_id;
    int fail_times; /* fail_id fails this many times (-1: always) */
    eddy_status fail_st;
    int started, completed, abandoned;
    eddy_status started_st, completed_st;
    /* projection.position (hopts.resumes): where the model says it is, and how it answers */
    long long model_position;
    eddy_status position_st;
    int position_calls;
    hook_fn on_apply, on_started, on_completed, on_abandoned;
    int depth; /* inside a projection callback */
    /* the log */
    char log[MAX_LOG][512];
    eddy_log_level log_level[MAX_LOG];
    int nlog;
    /* a run the core handed over in an out list (a reactive failure) */
    trun started_run;
    int pages;
    /* the driver's check (eddy__feed_calls.check): how often it ran, and whether it cancels */
    int checks;
    bool cancel_on_check;
} H;

static eddy_status t_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)user;
    if (meta && meta->position == H.decode_fail_pos)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "the data is not an order event");
    if (H.skip_type && strcmp(eddy_event_type(ev), H.skip_type) == 0) {
        *out = NULL;
        return EDDY_OK;
    }
    tevent *t = calloc(1, sizeof(*t));
    cr_assert(t);
    snprintf(t->id, sizeof(t->id), "%s", eddy_event_id(ev));
    *out = t;
    return EDDY_OK;
}

static void t_free(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *t_id(const void *event, void *user) {
    (void)user;
    const char *id = ((const tevent *)event)->id;
    return strcmp(id, "noid") == 0 ? NULL : id;
}

static void t_log(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (H.nlog < MAX_LOG) {
        H.log_level[H.nlog] = level;
        snprintf(H.log[H.nlog++], sizeof(H.log[0]), "%s", msg);
    }
}

/* The fake checkpoint storage, an eddy_checkpoint_ops like a user's own. */
static eddy_status ck_exists(void *self, const char *feed_id, bool *exists, eddy_error *err) {
    (void)self;
    cr_assert_str_eq(feed_id, "orders");
    H.exists_calls++;
    if (H.exists_fail > 0 && H.exists_fail--)
        return eddy__fail(err, EDDY_ERR_IO, "checkpoint storage unreachable");
    *exists = H.marker;
    return EDDY_OK;
}
static eddy_status ck_read(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                           eddy_error *err) {
    (void)self, (void)feed_id, (void)err;
    *found = H.marker;
    snprintf(buf, size, "%s", H.marker_value);
    return EDDY_OK;
}
static eddy_status ck_save(void *self, const char *feed_id, const char *value, eddy_error *err) {
    (void)self;
    cr_assert_str_eq(feed_id, "orders");
    H.save_calls++;
    if (H.save_fail > 0 && H.save_fail--)
        return eddy__fail(err, EDDY_ERR_IO, "checkpoint storage unreachable");
    H.marker = true;
    snprintf(H.marker_value, sizeof(H.marker_value), "%s", value);
    return EDDY_OK;
}
static eddy_status ck_remove(void *self, const char *feed_id, eddy_error *err) {
    (void)self;
    cr_assert_str_eq(feed_id, "orders");
    H.remove_calls++;
    if (H.remove_fail > 0 && H.remove_fail--)
        return eddy__fail(err, EDDY_ERR_IO, "checkpoint storage unreachable");
    H.marker = false;
    return EDDY_OK;
}
static const eddy_checkpoint_ops ck_ops = {ck_exists, ck_read, ck_save, ck_remove};
static eddy_checkpoints ckpt = {&ck_ops, NULL};

/* The projection. */
static eddy_status h_apply(void *event, const eddy_event_meta *meta) {
    tevent *t = event;
    H.depth++;
    if (H.on_apply)
        H.on_apply(t->id);
    H.depth--;
    if (H.fail_id && strcmp(t->id, H.fail_id) == 0 && H.fail_times != 0) {
        if (H.fail_times > 0)
            H.fail_times--;
        return H.fail_st ? H.fail_st : EDDY_ERR_HANDLER_FAILED;
    }
    cr_assert(H.napplied < MAX_APPLIED);
    snprintf(H.applied[H.napplied], sizeof(H.applied[0]), "%s", t->id);
    H.applied_meta[H.napplied] = meta != NULL;
    snprintf(H.applied_stream[H.napplied], sizeof(H.applied_stream[0]), "%s",
             meta && meta->stream_id ? meta->stream_id : "");
    H.napplied++;
    return EDDY_OK;
}

static void hook(hook_fn fn) {
    if (fn) {
        H.depth++;
        fn(NULL);
        H.depth--;
    }
}

static void complete(void *waiter, eddy_status st, const eddy_error *err, void *ctx) {
    (void)ctx;
    twait *w = waiter;
    w->done++;
    w->st = st;
    snprintf(w->detail, sizeof(w->detail), "%s", err ? err->detail : "");
}

static bool drive(trun *r);

static void flush(eddy__feed_out *o) {
    eddy__feed_out_run(o, complete, NULL);
    if (o->start) {
        cr_assert_null(H.started_run.run, "one handed-over run at a time");
        H.started_run.run = o->start;
        o->start = NULL;
        eddy__feed_run_attach(H.started_run.run, &H.started_run.w);
        drive(&H.started_run);
    }
}

static void t_check(void *ctx) {
    trun *r = ctx;
    H.checks++;
    if (H.cancel_on_check)
        eddy__feed_run_cancel(H.f, r->run);
}

static void read_page(trun *r, const eddy__feed_step *s) {
    H.pages++;
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    eddy__feed_calls calls = {NULL, NULL, t_check, r};
    if (H.page_fail_after >= 0 && s->position >= H.page_fail_after) {
        eddy_error e;
        eddy__fail(&e, EDDY_ERR_IO, "connection reset by peer");
        eddy__feed_step_report(H.f, r->run, EDDY_ERR_IO, s->position, &e, &calls, &o);
        flush(&o);
        return;
    }
    long long next = s->position;
    eddy_status st = EDDY_OK;
    size_t examined = 0;
    for (int i = (int)s->position; i < H.n && examined < s->max; i++, examined++) {
        eddy_event_meta meta = {H.stream[i], 1, i + 1};
        eddy__feed_step ps;
        eddy__page_kind k = eddy__feed_page_event(H.f, r->run, H.ev[i], &meta, &ps);
        if (k == EDDY__PAGE_STOP) {
            st = EDDY_ERR_CANCELLED;
            break;
        }
        if (k == EDDY__PAGE_APPLY) {
            cr_assert_eq(ps.meta, &meta);
            eddy_status ast = h_apply(ps.event, ps.meta);
            eddy_error ae = {0};
            if (ast != EDDY_OK)
                snprintf(ae.detail, sizeof(ae.detail), "projection says no");
            st = eddy__feed_replay_applied(H.f, r->run, ast, &ae);
            flush(&o);
            if (st != EDDY_OK)
                break;
        }
        next = i + 1;
    }
    cr_assert_null(eddy__feed_step_report(H.f, r->run, st, next, NULL, &calls, &o));
    flush(&o);
}

/* Drives a run until it is done (true) or parked in WAIT (false). Reports the front end's own
 * steps (marker, head, page, held apply) through eddy__feed_step_report, as both front ends do. */
static bool drive(trun *r) {
    eddy__feed_calls calls = {NULL, NULL, t_check, r};
    for (;;) {
        cr_assert(r->run, "the run is over");
        r->w.done = 0;
        eddy__feed_step s;
        eddy__feed_out o;
        eddy__feed_out_init(&o);
        eddy__feed_run_next(H.f, r->run, H.now, &s, &o);
        flush(&o);
        eddy_error e = {0};
        eddy_status st = EDDY_OK;
        switch (s.kind) {
        case EDDY__STEP_DONE:
            r->done = true;
            r->st = s.st;
            r->err = s.err;
            r->run = NULL;
            return true;
        case EDDY__STEP_WAIT:
            return false;
        case EDDY__STEP_MARKER_EXISTS: {
            bool exists = false;
            st = ckpt.ops->exists(ckpt.self, "orders", &exists, &e);
            eddy__feed_step_report(H.f, r->run, st, exists, &e, &calls, &o);
            break;
        }
        case EDDY__STEP_STARTED:
            H.started++;
            hook(H.on_started);
            st = H.started_st;
            if (st != EDDY_OK)
                snprintf(e.detail, sizeof(e.detail), "the view cannot buffer");
            eddy__feed_step_done(H.f, r->run, st, &e, &o);
            break;
        case EDDY__STEP_POSITION:
            H.position_calls++;
            if (H.position_st != EDDY_OK)
                eddy__fail(&e, H.position_st, "the model's store is down");
            eddy__feed_step_report(H.f, r->run, H.position_st, H.model_position, &e, &calls, &o);
            break;
        case EDDY__STEP_COMPLETED:
            H.completed++;
            hook(H.on_completed);
            st = H.completed_st;
            eddy__feed_step_done(H.f, r->run, st, NULL, &o);
            break;
        case EDDY__STEP_ABANDONED:
            H.abandoned++;
            hook(H.on_abandoned);
            eddy__feed_step_done(H.f, r->run, EDDY_OK, NULL, &o);
            break;
        case EDDY__STEP_READ_HEAD:
            if (H.head_fail) {
                eddy__fail(&e, EDDY_ERR_TIMEOUT, "no answer");
                eddy__feed_step_report(H.f, r->run, EDDY_ERR_TIMEOUT, 0, &e, &calls, &o);
            } else {
                eddy__feed_step_report(H.f, r->run, EDDY_OK, H.n, NULL, &calls, &o);
            }
            break;
        case EDDY__STEP_READ_PAGE:
            read_page(r, &s);
            break;
        case EDDY__STEP_APPLY:
            st = h_apply(s.event, s.meta);
            eddy__feed_step_report(H.f, r->run, st, 0, NULL, &calls, &o);
            break;
        case EDDY__STEP_SAVE_MARKER:
            st = ckpt.ops->save(ckpt.self, "orders", s.marker, &e);
            eddy__feed_step_report(H.f, r->run, st, 0, &e, &calls, &o);
            break;
        case EDDY__STEP_DELETE_MARKER:
            cr_assert(H.remove_calls < 8);
            /* Waits until the time the core names, on the clock it was given. */
            H.delays[H.remove_calls] = s.not_before_ms ? (unsigned)(s.not_before_ms - H.now) : 0;
            if (s.not_before_ms > H.now)
                H.now = s.not_before_ms;
            st = ckpt.ops->remove(ckpt.self, "orders", &e);
            eddy__feed_step_report(H.f, r->run, st, 0, &e, &calls, &o);
            break;
        }
        flush(&o);
    }
}

typedef struct hopts {
    bool no_marker;
    bool keyed;
    bool resumes; /* the projection has a position: replays start after it */
    long dedup, max_held;
    unsigned page;
    eddy__feed_mode mode;
} hopts;

static void h_new(hopts o) {
    memset(&H, 0, sizeof(H));
    H.page_fail_after = -1;
    H.decode_fail_pos = -1;
    H.fail_times = -1;
    H.now = 1000000; /* any clock: the core only compares times it is given */
    H.mode = o.mode;
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "orders";
    cfg.projection.apply = (eddy_status(*)(void *, const eddy_event_meta *, eddy_error *,
                                           void *))1; /* the harness applies; never called */
    cfg.projection.keyed_by_metadata = o.keyed;
    if (o.resumes) /* the harness answers; never called */
        cfg.projection.position = (eddy_status(*)(long long *, eddy_error *, void *))1;
    cfg.decode = t_decode;
    cfg.free_event = t_free;
    cfg.event_id = t_id;
    cfg.log = t_log;
    if (o.dedup)
        cfg.dedup_cache_size = o.dedup;
    if (o.max_held)
        cfg.max_buffered_events = o.max_held;
    cfg.page_size = o.page ? o.page : 2; /* small pages: replays span several reads */
    eddy_error err;
    cr_assert_eq(eddy__feed_new(&cfg, o.mode, !o.no_marker, &H.f, &err), EDDY_OK, "%s", err.detail);
}

static void h_free(void) {
    if (H.f) {
        eddy__feed_out o;
        eddy__feed_out_init(&o);
        eddy__feed_close(H.f, &o);
        flush(&o);
        if (H.started_run.run)
            drive(&H.started_run);
        eddy__feed_free(H.f);
        H.f = NULL;
    }
    for (int i = 0; i < H.n; i++)
        eddy_event_free(H.ev[i]);
    H.n = 0;
}

/* Stores n events "e1".."en" in streams "s1".."s3", positions 1..n. */
static void h_store(int n) {
    for (int i = 0; i < n; i++) {
        cr_assert(H.n < MAX_EV);
        eddy_event *ev = eddy_event_new();
        char id[16];
        snprintf(id, sizeof(id), "e%d", H.n + 1);
        eddy_event_set_id(ev, id);
        eddy_event_set_source(ev, "/t");
        eddy_event_set_type(ev, "order.placed");
        snprintf(H.stream[H.n], sizeof(H.stream[0]), "s%d", H.n % 3 + 1);
        H.ev[H.n++] = ev;
    }
}

/* catch-up or go-live as the front end calls it; drives the run when there is one. */
static eddy_status h_call(trun *r, bool go_live, bool from_callback) {
    memset(r, 0, sizeof(*r));
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    eddy_status st = go_live ? eddy__feed_go_live(H.f, &r->w, from_callback, &r->run, &r->err)
                             : eddy__feed_catch_up(H.f, &r->w, from_callback, &r->run, &r->err);
    flush(&o);
    if (st != EDDY_OK || !r->run) {
        r->done = true;
        r->st = st;
        return st;
    }
    drive(r);
    return r->done ? r->st : EDDY_PENDING;
}

static eddy_status catch_up(trun *r) { return h_call(r, false, H.depth > 0); }
static eddy_status go_live(trun *r) { return h_call(r, true, H.depth > 0); }

typedef struct aopts {
    bool meta;
    bool from_callback; /* default: H.depth > 0 */
    bool not_from_callback;
    bool waits;
    bool nowaiter;
    bool hold_apply;    /* APPLY: leave it in flight (h_live_done later) */
    long long position; /* with meta: the event's store position (0: none) */
} aopts;

static eddy_status h_accept(tacc *a, const char *id, aopts o) {
    memset(a, 0, sizeof(*a));
    snprintf(a->ev.id, sizeof(a->ev.id), "%s", id);
    snprintf(a->sid, sizeof(a->sid), "stream-of-%s", id);
    a->meta.stream_id = a->sid;
    a->meta.version = 7;
    a->meta.position = o.position;
    eddy__accept_flags fl = {(o.from_callback || H.depth > 0) && !o.not_from_callback, o.waits,
                             false};
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    a->st = eddy__feed_accept(H.f, o.meta ? &a->meta : NULL, &a->ev, o.nowaiter ? NULL : &a->w, fl,
                              &a->kind, &a->entry, &out, &a->err);
    /* The caller's metadata is copied: scribbling on it must not reach the projection. */
    snprintf(a->sid, sizeof(a->sid), "scribbled");
    flush(&out);
    if (a->kind == EDDY__ACCEPT_APPLY && !o.hold_apply) {
        eddy_event_meta m = {"live-stream", 7, o.position};
        eddy_status st = h_apply(&a->ev, o.meta ? &m : NULL);
        eddy__feed_out_init(&out);
        a->st = eddy__feed_live_done(H.f, a->entry, st, NULL, &out, &a->err);
        a->entry = NULL;
        flush(&out);
    }
    return a->st;
}

static eddy_status h_live_done(tacc *a, eddy_status st) {
    cr_assert(a->entry);
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    if (st == EDDY_OK)
        st = h_apply(&a->ev, NULL);
    a->st = eddy__feed_live_done(H.f, a->entry, st, NULL, &out, &a->err);
    a->entry = NULL;
    flush(&out);
    return a->st;
}

static void h_stop(void) {
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    eddy__feed_stop(H.f, &o);
    flush(&o);
}

static eddy_feed_info info(void) {
    eddy_feed_info i;
    eddy__feed_info(H.f, &i);
    return i;
}

/* The applied ids joined with ',' */
static const char *applied(void) {
    static char buf[4096];
    buf[0] = '\0';
    for (int i = 0; i < H.napplied; i++) {
        if (i)
            strcat(buf, ",");
        strncat(buf, H.applied[i], sizeof(buf) - strlen(buf) - 2);
    }
    return buf;
}

static void fini(void) { h_free(); }

TestSuite(feed_core, .fini = fini);

/* ---- construction ----------------------------------------------------------------------- */

/* Parameters hold no pointers: each test runs in a process of its own, where they would dangle. */
typedef struct bad_cfg {
    char name[32];
    char id[16];
    bool no_id;
    long dedup, max_held;
    unsigned page;
    bool no_apply, no_decode, no_event_id;
    eddy_status want;
} bad_cfg;

static bad_cfg bad_cfgs[] = {
    {"dedup 0", "f", false, 0, 10, 1, false, false, false, EDDY_ERR_INVALID_SPEC},
    {"dedup -1", "f", false, -1, 10, 1, false, false, false, EDDY_ERR_INVALID_SPEC},
    {"max 0", "f", false, 10, 0, 1, false, false, false, EDDY_ERR_INVALID_SPEC},
    {"max -5", "f", false, 10, -5, 1, false, false, false, EDDY_ERR_INVALID_SPEC},
    {"page 0", "f", false, 10, 10, 0, false, false, false, EDDY_ERR_INVALID_SPEC},
    {"no apply", "f", false, 10, 10, 1, true, false, false, EDDY_ERR_INVALID_SPEC},
    {"no decode", "f", false, 10, 10, 1, false, true, false, EDDY_ERR_INVALID_SPEC},
    {"no event_id", "f", false, 10, 10, 1, false, false, true, EDDY_ERR_INVALID_SPEC},
    {"no id", "", true, 10, 10, 1, false, false, false, EDDY_ERR_INVALID_ARGUMENT},
    {"id with ':'", "a:b", false, 10, 10, 1, false, false, false, EDDY_ERR_INVALID_ARGUMENT},
    {"id with a space", "a b", false, 10, 10, 1, false, false, false, EDDY_ERR_INVALID_ARGUMENT},
};

static eddy_status never_apply(void *e, const eddy_event_meta *m, eddy_error *err, void *u) {
    (void)e, (void)m, (void)err, (void)u;
    return EDDY_OK;
}

ParameterizedTestParameters(feed_core, options_out_of_range_are_refused) {
    return cr_make_param_array(bad_cfg, bad_cfgs, sizeof(bad_cfgs) / sizeof(bad_cfgs[0]));
}
ParameterizedTest(bad_cfg *b, feed_core, options_out_of_range_are_refused) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cr_expect_eq(cfg.dedup_cache_size, 10000);
    cr_expect_eq(cfg.max_buffered_events, 100000);
    cfg.id = b->no_id ? NULL : b->id;
    cfg.projection.apply = b->no_apply ? NULL : never_apply;
    cfg.decode = b->no_decode ? NULL : t_decode;
    cfg.event_id = b->no_event_id ? NULL : t_id;
    cfg.dedup_cache_size = b->dedup;
    cfg.max_buffered_events = b->max_held;
    cfg.page_size = b->page;
    eddy__feed *f = (eddy__feed *)&cfg;
    eddy_error err = {0};
    cr_expect_eq(eddy__feed_new(&cfg, EDDY__FEED_BLOCKING, true, &f, &err), b->want, "%s", b->name);
    cr_expect_null(f);
    cr_expect_neq(err.detail[0], '\0', "%s: the detail says why", b->name);
    cr_expect_eq(eddy__feed_new(NULL, EDDY__FEED_BLOCKING, true, &f, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__feed_new(&cfg, EDDY__FEED_BLOCKING, true, NULL, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
}

/* ---- holding until catch-up or go-live -------------------------------------------------- */

Test(feed_core, a_new_feed_holds_live_events_until_catch_up) {
    h_new((hopts){0});
    h_store(3);
    tacc a, b;
    cr_expect_eq(h_accept(&a, "x1", (aopts){.waits = true}), EDDY_OK);
    cr_expect_eq(a.kind, EDDY__ACCEPT_HELD);
    cr_expect_eq(h_accept(&b, "x2", (aopts){.waits = true}), EDDY_OK);
    cr_expect_eq(H.napplied, 0, "nothing is applied before catch-up or go-live");
    cr_expect_eq(info().held, 2);
    cr_expect_not(info().live);
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3,x1,x2");
    cr_expect_eq(a.w.done, 1);
    cr_expect_eq(a.w.st, EDDY_OK);
    cr_expect_eq(b.w.done, 1);
    cr_expect(info().live);
    cr_expect_eq(info().held, 0);
    cr_expect_eq(info().last, EDDY_FEED_REPLAYED);
}

Test(feed_core, a_new_feed_holds_live_events_until_go_live) {
    h_new((hopts){0});
    h_store(3);
    tacc a, b, c;
    h_accept(&a, "x1", (aopts){0});
    h_accept(&b, "x2", (aopts){0});
    h_accept(&c, "x3", (aopts){0});
    cr_expect_eq(H.napplied, 0);
    trun r;
    cr_expect_eq(go_live(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "x1,x2,x3", "held events in arrival order, no replay");
    cr_expect_eq(H.save_calls + H.exists_calls, 0, "go-live neither reads nor writes the marker");
    cr_expect_eq(H.started, 0);
    cr_expect(info().live);
    cr_expect_eq(info().last, EDDY_FEED_WENT_LIVE);
    tacc d;
    cr_expect_eq(h_accept(&d, "x4", (aopts){0}), EDDY_OK);
    cr_expect_eq(d.kind, EDDY__ACCEPT_APPLY, "live: applied directly by its caller");
    cr_expect_eq(go_live(&r), EDDY_OK, "go-live on a live feed: nothing to do");
    cr_expect_null(r.run);
}

/* ---- catch-up with and without a marker --------------------------------------------------- */

Test(feed_core, catch_up_without_a_marker_replays_in_position_order_and_writes_it) {
    h_new((hopts){0});
    h_store(5);
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5");
    for (int i = 0; i < 5; i++) {
        cr_expect(H.applied_meta[i], "a replayed event always has its metadata");
        cr_expect_str_eq(H.applied_stream[i], H.stream[i]);
    }
    cr_expect_eq(H.pages, 3, "pages of 2: never the whole history at once");
    cr_expect_eq(H.started, 1);
    cr_expect_eq(H.completed, 1);
    cr_expect_eq(H.abandoned, 0);
    cr_expect(H.marker);
    cr_expect_str_eq(H.marker_value, "5");
    cr_expect_eq(info().replayed, 5);
    cr_expect_eq(info().position, 5);
    cr_expect_eq(info().head, 5);
}

Test(feed_core, catch_up_with_a_marker_skips_the_replay) {
    h_new((hopts){0});
    h_store(5);
    H.marker = true;
    tacc a;
    h_accept(&a, "x1", (aopts){0});
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "x1");
    cr_expect_eq(H.started, 0, "no replay, so no replay callbacks");
    cr_expect_eq(H.save_calls, 0);
    cr_expect(info().live);
    cr_expect_eq(info().last, EDDY_FEED_SKIPPED);
}

Test(feed_core, without_checkpoint_storage_every_catch_up_replays) {
    h_new((hopts){.no_marker = true});
    h_store(2);
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e1,e2");
    cr_expect_eq(H.exists_calls + H.save_calls, 0);
}

Test(feed_core, decode_may_skip_events_the_projection_does_not_handle) {
    h_new((hopts){0});
    h_store(3);
    eddy_event_set_type(H.ev[1], "order.audited");
    H.skip_type = "order.audited";
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e3");
    cr_expect_str_eq(H.marker_value, "3", "a skipped event still counts as read");
}

/* ---- resuming from the model's own position ----------------------------------------------- */

Test(feed_core, a_replay_resumes_after_the_models_position) {
    h_new((hopts){.resumes = true});
    h_store(7);
    H.model_position = 4; /* the model applied e1..e4 and saved that with its writes */
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e5,e6,e7");
    cr_expect_eq(H.position_calls, 1, "asked once, when the replay starts");
    cr_expect_eq(H.started, 1);
    cr_expect_eq(H.completed, 1);
    cr_expect(H.marker, "the checkpoint keeps its meaning: caught up once");
    cr_expect_str_eq(H.marker_value, "7");
    cr_expect_eq(info().replayed, 3);
    cr_expect_eq(info().position, 7);
}

Test(feed_core, a_resumed_feed_still_skips_the_replay_when_its_checkpoint_exists) {
    h_new((hopts){.resumes = true});
    h_store(3);
    H.marker = true;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "");
    cr_expect_eq(H.position_calls, 0, "no replay, no position asked");
}

Test(feed_core, position_zero_replays_everything_and_a_model_ahead_of_the_store_replays_nothing) {
    h_new((hopts){.resumes = true, .no_marker = true});
    h_store(3);
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3");
    H.model_position = 9;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3", "nothing after position 9");
    cr_expect_eq(H.completed, 2);
}

Test(feed_core, held_copies_at_or_below_the_models_position_are_duplicates) {
    h_new((hopts){.resumes = true});
    h_store(5);
    H.model_position = 3;
    tacc a[3];
    h_accept(&a[0], "e2", (aopts){.meta = true, .position = 2}); /* the model has it */
    h_accept(&a[1], "e5", (aopts){.meta = true, .position = 5}); /* the replay applies it */
    h_accept(&a[2], "x1", (aopts){.meta = true, .position = 6}); /* newer than the replay */
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e4,e5,x1");
    for (int i = 0; i < 3; i++)
        cr_expect_eq(a[i].w.st, EDDY_OK, "a dropped duplicate is acknowledged");
    cr_expect_eq(info().duplicates, 2);
}

Test(feed_core, a_failing_or_negative_position_fails_the_catch_up_and_abandons_it) {
    h_new((hopts){.resumes = true});
    h_store(2);
    H.position_st = EDDY_ERR_IO;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_ERR_IO);
    cr_expect(strstr(r.err.detail, "the projection's position failed"), "%s", r.err.detail);
    cr_expect_eq(H.abandoned, 1, "replay_started ran: its work is discarded");
    cr_expect_str_eq(applied(), "");
    h_free();
    h_new((hopts){.resumes = true});
    h_store(2);
    H.model_position = -1;
    cr_expect_eq(catch_up(&r), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(r.err.detail, "negative"), "%s", r.err.detail);
    cr_expect_eq(H.abandoned, 1);
}

/* The driver's check (a fired cancel handle) runs before a read's outcome is reported, so a read
 * that failed because its thread was cancelled ends the run as cancelled, not the feed; the
 * writes (a held apply, the marker) are not checked: their failure stays the feed's. */
Test(feed_core, a_cancel_seen_before_a_failed_read_does_not_fail_the_feed) {
    h_new((hopts){0});
    h_store(2);
    H.exists_fail = 1;
    H.cancel_on_check = true;
    trun r;
    cr_expect_neq(catch_up(&r), EDDY_OK); /* the read's error, for the caller */
    cr_expect_eq(info().last, EDDY_FEED_CANCELLED);
    cr_expect_not(eddy__feed_failure(H.f, NULL));
    cr_expect_eq(H.checks, 1);
}

Test(feed_core, only_reads_are_checked_before_their_report) {
    h_new((hopts){0});
    h_store(4);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK, "%s", r.err.detail);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,x1");
    /* the marker's check, the head and the pages read: not the held apply, not the marker save */
    cr_expect_eq(H.checks, 2 + H.pages, "%d checks, %d pages", H.checks, H.pages);
    cr_expect_eq(H.save_calls, 1);
}

/* ---- held events: once each, arrival order, duplicates dropped --------------------------- */

static tacc during[8];
static int nduring;

static void accept_during_replay(const char *id) {
    if (strcmp(id, "e2") == 0) {
        /* Another thread's listener: it does not come from the projection. */
        h_accept(&during[nduring++], "e4", (aopts){.not_from_callback = true, .waits = true});
        h_accept(&during[nduring++], "y1", (aopts){.not_from_callback = true, .waits = true});
        cr_expect_eq(during[0].kind, EDDY__ACCEPT_HELD, "live events wait while the replay runs");
    }
}

Test(feed_core, held_events_are_applied_once_in_arrival_order_without_replayed_duplicates) {
    h_new((hopts){0});
    h_store(5);
    tacc a[5];
    h_accept(&a[0], "e3", (aopts){0}); /* a live copy of a stored event */
    h_accept(&a[1], "x1", (aopts){0});
    h_accept(&a[2], "e5", (aopts){0});
    h_accept(&a[3], "x2", (aopts){0});
    h_accept(&a[4], "x1", (aopts){0}); /* the broker delivered x1 twice */
    H.on_apply = accept_during_replay;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5,x1,x2,y1");
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(a[i].w.done, 1, "every held event is answered once");
        cr_expect_eq(a[i].w.st, EDDY_OK, "a dropped duplicate was applied: acknowledge it");
    }
    cr_expect_eq(during[0].w.st, EDDY_OK);
    cr_expect_eq(during[1].w.st, EDDY_OK);
    cr_expect_eq(info().duplicates, 4);
    /* Live now: the live copy of a replayed event is dropped, a new one applied directly. */
    tacc b, c;
    cr_expect_eq(h_accept(&b, "e2", (aopts){0}), EDDY_OK);
    cr_expect_eq(b.kind, EDDY__ACCEPT_DUPLICATE);
    cr_expect_eq(h_accept(&c, "z1", (aopts){0}), EDDY_OK);
    cr_expect_eq(c.kind, EDDY__ACCEPT_APPLY);
    cr_expect_eq(h_accept(&c, "z1", (aopts){0}), EDDY_OK, "redelivered after it was applied");
    cr_expect_eq(c.kind, EDDY__ACCEPT_DUPLICATE);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5,x1,x2,y1,z1");
}

Test(feed_core, a_full_dedup_cache_forgets_the_oldest_ids) {
    h_new((hopts){.dedup = 2});
    h_store(3);
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    tacc a, b;
    h_accept(&a, "e1", (aopts){0});
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY, "e1 was evicted by e2 and e3");
    h_accept(&b, "e3", (aopts){0});
    cr_expect_eq(b.kind, EDDY__ACCEPT_DUPLICATE);
}

/* A dead listener's pending entries, redelivered while the next one replays: a live copy of
 * every stored event, each with its store position, held far beyond what the id cache keeps. */
#define BACKLOG 1000
#define FRESH 10

Test(feed_core, a_held_backlog_far_larger_than_the_dedup_cache_is_dropped_by_position) {
    h_new((hopts){.dedup = 8, .page = 64});
    h_store(BACKLOG);
    static tacc backlog[BACKLOG], fresh[FRESH];
    for (int i = 0; i < BACKLOG; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i + 1);
        h_accept(&backlog[i], id, (aopts){.meta = true, .position = i + 1});
        cr_assert_eq(backlog[i].kind, EDDY__ACCEPT_HELD);
    }
    /* Stored after the replay read where the history ends: only the live copy brings them. */
    for (int i = 0; i < FRESH; i++) {
        char id[16];
        snprintf(id, sizeof(id), "n%d", i + 1);
        h_accept(&fresh[i], id, (aopts){.meta = true, .position = BACKLOG + 1 + i});
    }
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_eq(H.napplied, BACKLOG + FRESH, "%d events applied twice",
                 H.napplied - (BACKLOG + FRESH));
    for (int i = 0; i < H.napplied && i < BACKLOG + FRESH; i++) {
        char want[16];
        if (i < BACKLOG)
            snprintf(want, sizeof(want), "e%d", i + 1);
        else
            snprintf(want, sizeof(want), "n%d", i - BACKLOG + 1);
        cr_assert_str_eq(H.applied[i], want, "apply %d", i);
    }
    for (int i = 0; i < BACKLOG; i++) {
        cr_assert_eq(backlog[i].w.done, 1, "e%d answered once", i + 1);
        cr_assert_eq(backlog[i].w.st, EDDY_OK, "e%d: applied by the replay, acknowledge it", i + 1);
    }
    for (int i = 0; i < FRESH; i++)
        cr_expect_eq(fresh[i].w.st, EDDY_OK);
    cr_expect_eq(info().duplicates, BACKLOG);
    /* Live: a redelivery at or below the replay's position is still dropped, however old. */
    tacc late;
    h_accept(&late, "e1", (aopts){.meta = true, .position = 1});
    cr_expect_eq(late.kind, EDDY__ACCEPT_DUPLICATE);
    /* Without a position only the id cache can tell: it keeps the last 8 replayed ids. */
    h_accept(&late, "e1000", (aopts){0});
    cr_expect_eq(late.kind, EDDY__ACCEPT_DUPLICATE, "still in the id cache");
    h_accept(&late, "e1", (aopts){0});
    cr_expect_eq(late.kind, EDDY__ACCEPT_APPLY, "forgotten by the id cache: applied again");
}

static void stop_at_e3(const char *id) {
    if (strcmp(id, "e3") == 0)
        h_stop();
}

Test(feed_core, a_stopped_replay_drops_no_live_copy_by_position) {
    h_new((hopts){0});
    h_store(4);
    trun r;
    go_live(&r);
    H.on_apply = stop_at_e3; /* the first page (e1, e2) was read whole */
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3");
    cr_expect_eq(H.abandoned, 1);
    H.on_apply = NULL;
    tacc a;
    h_accept(&a, "e2", (aopts){.meta = true, .position = 2});
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY, "the view discarded the stopped replay's work");
}

Test(feed_core, the_same_event_applied_by_two_callers_at_once_is_refused_to_the_second) {
    h_new((hopts){0});
    trun r;
    go_live(&r);
    tacc a, b;
    h_accept(&a, "x1", (aopts){.hold_apply = true});
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY);
    cr_expect_eq(h_accept(&b, "x1", (aopts){0}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(b.err.detail, "being applied"), "%s", b.err.detail);
    cr_expect_eq(h_live_done(&a, EDDY_OK), EDDY_OK);
    h_accept(&b, "x1", (aopts){0});
    cr_expect_eq(b.kind, EDDY__ACCEPT_DUPLICATE);
}

Test(feed_core, events_beyond_max_buffered_are_refused) {
    h_new((hopts){.max_held = 2});
    tacc a[3];
    h_accept(&a[0], "x1", (aopts){0});
    h_accept(&a[1], "x2", (aopts){0});
    cr_expect_eq(h_accept(&a[2], "x3", (aopts){0}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(a[2].err.detail, "max_buffered_events"), "%s", a[2].err.detail);
    cr_expect_eq(info().refused, 1);
    trun r;
    go_live(&r);
    cr_expect_str_eq(applied(), "x1,x2");
}

Test(feed_core, an_event_without_an_id_is_refused) {
    h_new((hopts){0});
    tacc a;
    cr_expect_eq(h_accept(&a, "noid", (aopts){0}), EDDY_ERR_INVALID_ARGUMENT);
    eddy__accept_kind k;
    eddy__feed_entry *e;
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_expect_eq(
        eddy__feed_accept(H.f, NULL, NULL, NULL, (eddy__accept_flags){0}, &k, &e, &o, NULL),
        EDDY_ERR_INVALID_ARGUMENT);
}

/* ---- go-live, then a real catch-up ------------------------------------------------------- */

static void accept_b_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0)
        h_accept(&during[nduring++], "b", (aopts){.not_from_callback = true, .waits = true});
}

Test(feed_core, go_live_writes_no_marker_and_a_later_catch_up_replays_everything) {
    h_new((hopts){0});
    h_store(3);
    trun r;
    cr_expect_eq(go_live(&r), EDDY_OK);
    tacc a;
    h_accept(&a, "a", (aopts){0});
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY);
    cr_expect_not(H.marker);
    H.on_apply = accept_b_at_e2;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "a,e1,e2,e3,b", "the live event waited for the replay");
    cr_expect_eq(during[0].kind, EDDY__ACCEPT_HELD);
    cr_expect_eq(during[0].w.st, EDDY_OK);
    cr_expect(H.marker, "the real catch-up writes it");
    cr_expect(info().live);
}

static tacc inflight;

Test(feed_core, a_catch_up_on_a_live_feed_waits_for_live_applies_in_flight) {
    h_new((hopts){0});
    h_store(2);
    trun r, c;
    go_live(&r);
    h_accept(&inflight, "a", (aopts){.hold_apply = true});
    cr_expect_eq(catch_up(&c), EDDY_PENDING, "parked: a live apply is running");
    cr_expect_eq(H.started, 0);
    tacc b;
    h_accept(&b, "b", (aopts){});
    cr_expect_eq(b.kind, EDDY__ACCEPT_HELD, "new events wait from the moment the replay is due");
    h_live_done(&inflight, EDDY_OK);
    cr_expect_eq(c.w.done, 1, "the last live apply resumes the catch-up");
    cr_expect(drive(&c));
    cr_expect_eq(c.st, EDDY_OK);
    cr_expect_str_eq(applied(), "a,e1,e2,b");
}

Test(feed_core, a_second_catch_up_waits_for_the_first_then_finds_the_marker) {
    h_new((hopts){0});
    h_store(2);
    trun a = {0}, b = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &a.w, false, &a.run, NULL), EDDY_OK);
    cr_assert_eq(eddy__feed_catch_up(H.f, &b.w, false, &b.run, NULL), EDDY_OK);
    eddy__feed_step s;
    eddy__feed_run_next(H.f, a.run, H.now, &s, &o); /* a takes the turn */
    cr_assert_eq(s.kind, EDDY__STEP_MARKER_EXISTS);
    cr_expect_not(drive(&b), "b waits for a's turn to end");
    cr_expect(info().catching_up);
    eddy__feed_marker_checked(H.f, a.run, EDDY_OK, false, NULL);
    cr_expect(drive(&a));
    cr_expect_eq(a.st, EDDY_OK);
    cr_expect_eq(b.w.done, 1, "resumed when a ended");
    cr_expect(drive(&b));
    cr_expect_eq(b.st, EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2", "b found the marker: no second replay");
    cr_expect_eq(info().last, EDDY_FEED_SKIPPED);
    cr_expect_not(info().catching_up);
}

/* ---- stop ------------------------------------------------------------------------------- */

static void stop_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0)
        h_stop();
}

Test(feed_core, stop_on_a_running_replay_of_a_feed_that_was_not_live_leaves_it_stopped) {
    h_new((hopts){0});
    h_store(5);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    H.on_apply = stop_at_e2;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK, "a stopped replay is not a failure");
    cr_expect_str_eq(applied(), "e1,e2", "the replay noticed the stop before its next event");
    cr_expect_eq(H.abandoned, 1);
    cr_expect_eq(H.completed, 0);
    cr_expect_not(H.marker, "no marker: the next catch-up replays everything");
    cr_expect_eq(info().last, EDDY_FEED_STOPPED);
    cr_expect_not(info().failed);
    cr_expect(info().stopped);
    cr_expect_eq(a.w.done, 1);
    cr_expect_eq(a.w.st, EDDY_ERR_ILLEGAL_STATE, "the waiting event is refused, not applied");
    tacc b;
    cr_expect_eq(h_accept(&b, "x2", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(b.err.detail, "stopped"), "%s", b.err.detail);
    /* The next catch-up replays the whole history, and refuses nothing any more. */
    H.on_apply = NULL;
    H.napplied = 0;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5");
    cr_expect(H.marker);
    cr_expect_eq(h_accept(&b, "x1", (aopts){}), EDDY_OK,
                 "the refused event comes back from the broker and is applied now");
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,e5,x1");
}

Test(feed_core, a_stop_before_a_catch_up_starts_ends_it_without_a_replay_and_keeps_it_live) {
    h_new((hopts){0});
    h_store(3);
    trun g;
    go_live(&g);
    trun s = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &s.w, false, &s.run, NULL), EDDY_OK);
    h_stop(); /* the catch-up counts as running from the call: the stop is for it */
    cr_expect(drive(&s));
    cr_expect_eq(s.st, EDDY_OK);
    cr_expect_eq(H.started, 0, "it noticed the stop before replaying anything");
    cr_expect_eq(H.abandoned, 0, "nothing started, nothing to abandon");
    cr_expect(info().live, "a previously live feed goes on live after a stop");
    cr_expect_not(info().stopped);
    cr_expect_eq(info().last, EDDY_FEED_STOPPED);
}

static void accept_then_stop_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0) {
        h_accept(&during[nduring++], "b", (aopts){.not_from_callback = true, .waits = true});
        h_stop();
    }
}

Test(feed_core, stop_during_the_replay_of_a_live_feed_applies_the_held_events) {
    h_new((hopts){0});
    h_store(5);
    trun r;
    go_live(&r);
    nduring = 0;
    H.on_apply = accept_then_stop_at_e2;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,b", "stopped after e2; b waited and is applied");
    cr_expect_eq(H.abandoned, 1);
    cr_expect_eq(during[0].w.st, EDDY_OK);
    cr_expect(info().live);
    cr_expect_not(H.marker);
    /* The abandoned replay's ids are forgotten: the live copy of e2 is applied again. */
    tacc a;
    H.on_apply = NULL;
    h_accept(&a, "e2", (aopts){});
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY);
}

Test(feed_core, go_live_after_a_stop_delivers_the_live_copy_of_a_replayed_event) {
    h_new((hopts){0});
    h_store(4);
    H.on_apply = stop_at_e2;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2");
    H.on_apply = NULL;
    cr_expect_eq(go_live(&r), EDDY_OK);
    tacc a;
    cr_expect_eq(h_accept(&a, "e2", (aopts){}), EDDY_OK);
    cr_expect_eq(a.kind, EDDY__ACCEPT_APPLY,
                 "the view discarded the stopped replay's work: it needs the live copy");
    cr_expect_str_eq(applied(), "e1,e2,e2");
}

Test(feed_core, stop_on_an_idle_feed_that_is_not_live_refuses_until_catch_up_or_go_live) {
    h_new((hopts){0});
    tacc a, b, c;
    h_accept(&a, "x1", (aopts){.waits = true});
    h_accept(&b, "x2", (aopts){.waits = true});
    h_stop();
    cr_expect_eq(a.w.st, EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(b.w.st, EDDY_ERR_ILLEGAL_STATE);
    cr_expect_eq(h_accept(&c, "x3", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(info().stopped);
    trun r;
    cr_expect_eq(go_live(&r), EDDY_OK, "go-live works again after a stop");
    cr_expect_eq(H.napplied, 0, "the refused events are not applied by it");
    cr_expect_eq(h_accept(&c, "x3", (aopts){}), EDDY_OK);
    cr_expect_str_eq(applied(), "x3");
}

Test(feed_core, stop_on_a_live_feed_does_nothing) {
    h_new((hopts){0});
    trun r;
    go_live(&r);
    h_stop();
    cr_expect(info().live);
    cr_expect_not(info().stopped);
    tacc a;
    cr_expect_eq(h_accept(&a, "x1", (aopts){}), EDDY_OK);
    cr_expect_str_eq(applied(), "x1");
}

static void stop_hook(const char *id) {
    (void)id;
    h_stop();
}

Test(feed_core, stop_after_the_replay_completed_does_not_undo_the_catch_up) {
    h_new((hopts){0});
    h_store(2);
    H.on_completed = stop_hook;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect(H.marker);
    cr_expect(info().live);
    cr_expect_eq(info().last, EDDY_FEED_REPLAYED);
}

/* ---- go-live while a catch-up runs -------------------------------------------------------- */

static trun waiting_go_live;

static void go_live_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0) {
        H.depth--; /* another thread: not from the projection */
        cr_expect_eq(go_live(&waiting_go_live), EDDY_PENDING, "it waits for the replay");
        H.depth++;
    }
}

Test(feed_core, go_live_while_a_catch_up_replays_waits_for_it) {
    h_new((hopts){0});
    h_store(4);
    H.on_apply = go_live_at_e2;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_eq(waiting_go_live.w.done, 1, "resumed when the catch-up ended");
    cr_expect(drive(&waiting_go_live));
    cr_expect_eq(waiting_go_live.st, EDDY_OK);
    cr_expect(H.marker, "the catch-up is not turned into a go-live");
}

Test(feed_core, go_live_while_a_catch_up_replays_fails_with_the_catch_up_failure) {
    h_new((hopts){0});
    h_store(4);
    H.on_apply = go_live_at_e2;
    H.fail_id = "e3";
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_ERR_HANDLER_FAILED);
    cr_expect(drive(&waiting_go_live));
    cr_expect_eq(waiting_go_live.st, EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(waiting_go_live.err.detail, "cause: EDDY_ERR_HANDLER_FAILED"), "%s",
              waiting_go_live.err.detail);
    cr_expect(strstr(waiting_go_live.err.detail, "'e3'"), "the cause's own detail: %s",
              waiting_go_live.err.detail);
}

static void go_live_then_stop_at_e2(const char *id) {
    go_live_at_e2(id);
    if (strcmp(id, "e2") == 0)
        h_stop();
}

Test(feed_core, go_live_while_a_replay_is_stopped_takes_the_feed_live) {
    h_new((hopts){0});
    h_store(4);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    H.on_apply = go_live_then_stop_at_e2;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,x1", "held events are delivered when the replay stops");
    cr_expect_eq(a.w.st, EDDY_OK);
    cr_expect(drive(&waiting_go_live));
    cr_expect_eq(waiting_go_live.st, EDDY_OK);
    cr_expect(info().live);
    cr_expect_not(H.marker);
}

static eddy__feed_run *cancel_target;

static void go_live_then_cancel_at_e2(const char *id) {
    go_live_at_e2(id);
    if (strcmp(id, "e2") == 0)
        eddy__feed_run_cancel(H.f, cancel_target);
}

Test(feed_core, go_live_while_a_catch_up_is_cancelled_does_not_fail) {
    h_new((hopts){0});
    h_store(4);
    trun r;
    memset(&r, 0, sizeof(r));
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &r.w, false, &r.run, NULL), EDDY_OK);
    cancel_target = r.run;
    H.on_apply = go_live_then_cancel_at_e2;
    cr_expect(drive(&r));
    cr_expect_eq(r.st, EDDY_ERR_CANCELLED);
    cr_expect(drive(&waiting_go_live));
    cr_expect_eq(waiting_go_live.st, EDDY_OK, "a cancelled catch-up is not a failure");
    cr_expect(info().live);
}

/* ---- calls from the projection's callbacks ------------------------------------------------ */

static trun from_cb;

static void catch_up_from_started(const char *id) {
    (void)id;
    cr_expect_eq(catch_up(&from_cb), EDDY_OK, "asked for, not waited for");
    cr_expect_null(from_cb.run);
}

Test(feed_core, a_catch_up_asked_for_from_a_callback_does_not_wait_and_runs_afterwards) {
    h_new((hopts){0});
    h_store(2);
    H.on_started = catch_up_from_started;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_eq(H.started, 1);
    cr_expect_eq(H.exists_calls, 2, "the requested catch-up ran after: it found the marker");
    cr_expect_str_eq(applied(), "e1,e2");
    cr_expect(info().live);
}

static void go_live_from_apply(const char *id) {
    if (strcmp(id, "e1") == 0) {
        cr_expect_eq(go_live(&from_cb), EDDY_OK);
        cr_expect_null(from_cb.run, "no wait from inside the feed's own call");
        h_stop();
    }
}

Test(feed_core, a_go_live_asked_for_from_a_callback_does_not_wait_and_survives_a_stop) {
    h_new((hopts){0});
    h_store(3);
    tacc a;
    h_accept(&a, "x1", (aopts){});
    H.on_apply = go_live_from_apply;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,x1");
    cr_expect(info().live, "the go-live asked for makes the stopped replay go live");
}

static void catch_up_from_live_apply(const char *id) {
    if (strcmp(id, "a") == 0)
        cr_expect_eq(catch_up(&from_cb), EDDY_OK);
}

Test(feed_core, a_catch_up_asked_for_from_a_live_apply_is_handed_to_the_caller_after_it) {
    h_new((hopts){0});
    h_store(2);
    trun r;
    go_live(&r);
    H.on_apply = catch_up_from_live_apply;
    tacc a;
    cr_expect_eq(h_accept(&a, "a", (aopts){}), EDDY_OK);
    cr_expect_eq(H.started, 0, "nothing runs inside the callback");
    eddy__feed_run *run = eddy__feed_poll_deferred(H.f);
    cr_assert(run, "the request, for the thread leaving the callback");
    cr_expect_null(eddy__feed_poll_deferred(H.f), "handed out once");
    trun d = {0};
    d.run = run;
    eddy__feed_run_attach(run, &d.w);
    cr_expect(drive(&d));
    cr_expect_eq(d.st, EDDY_OK);
    cr_expect_str_eq(applied(), "a,e1,e2");
}

Test(feed_core, a_stop_drops_a_catch_up_asked_for_from_a_callback) {
    h_new((hopts){0});
    h_store(2);
    trun r;
    go_live(&r);
    H.on_apply = catch_up_from_live_apply;
    tacc a;
    h_accept(&a, "a", (aopts){});
    h_stop();
    cr_expect_null(eddy__feed_poll_deferred(H.f), "it may not run at all after a stop");
}

Test(feed_core, a_go_live_asked_for_from_a_callback_of_a_stopped_feed_runs_afterwards) {
    h_new((hopts){0});
    h_stop();
    H.depth++;
    trun r;
    cr_expect_eq(go_live(&r), EDDY_OK);
    H.depth--;
    eddy__feed_run *run = eddy__feed_poll_deferred(H.f);
    cr_assert(run);
    trun d = {0};
    d.run = run;
    eddy__feed_run_attach(run, &d.w);
    cr_expect(drive(&d));
    cr_expect(info().live);
}

Test(feed_core, an_event_fed_from_a_callback_that_would_wait_is_refused_when_blocking) {
    h_new((hopts){0});
    tacc a, b;
    H.depth++;
    cr_expect_eq(h_accept(&a, "x1", (aopts){.waits = true}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(a.err.detail, "own callback"), "%s", a.err.detail);
    cr_expect_eq(h_accept(&b, "x2", (aopts){.waits = false}), EDDY_OK, "one that does not wait");
    cr_expect_eq(b.kind, EDDY__ACCEPT_HELD);
    H.depth--;
    h_free(); /* answers b while it is still in scope */
    cr_expect_eq(b.w.st, EDDY_ERR_CLOSED);
}

/* ---- metadata --------------------------------------------------------------------------- */

Test(feed_core, a_projection_keyed_by_metadata_fed_without_metadata_is_refused) {
    h_new((hopts){.keyed = true});
    trun r;
    go_live(&r);
    tacc a, b;
    cr_expect_eq(h_accept(&a, "x1", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(a.err.detail, "keyed by metadata"), "%s", a.err.detail);
    cr_expect_eq(H.napplied, 0, "refused, not dropped silently");
    cr_expect_eq(h_accept(&b, "x1", (aopts){.meta = true}), EDDY_OK);
    cr_expect(H.applied_meta[0]);
}

Test(feed_core, a_held_event_keeps_a_copy_of_its_metadata) {
    h_new((hopts){.keyed = true});
    tacc a;
    h_accept(&a, "x1", (aopts){.meta = true});
    cr_expect_eq(a.kind, EDDY__ACCEPT_HELD);
    trun r;
    go_live(&r);
    cr_expect_str_eq(H.applied_stream[0], "stream-of-x1");
}

/* ---- live failures ---------------------------------------------------------------------- */

Test(feed_core, a_live_event_that_fails_fails_only_its_caller) {
    h_new((hopts){0});
    trun r;
    go_live(&r);
    H.fail_id = "bad";
    tacc a, b;
    cr_expect_eq(h_accept(&a, "bad", (aopts){}), EDDY_ERR_HANDLER_FAILED);
    cr_expect(strstr(a.err.detail, "'bad'"), "%s", a.err.detail);
    cr_expect(info().live);
    cr_expect_not(info().failed);
    cr_expect_eq(h_accept(&b, "good", (aopts){}), EDDY_OK);
    H.fail_id = NULL;
    cr_expect_eq(h_accept(&a, "bad", (aopts){}), EDDY_OK, "redelivered, it is not a duplicate");
    cr_expect_eq(info().apply_failed, 1);
}

Test(feed_core, a_held_event_that_fails_after_the_catch_up_fails_only_its_caller) {
    h_new((hopts){0});
    h_store(2);
    H.fail_id = "bad";
    tacc a, b;
    h_accept(&a, "bad", (aopts){});
    h_accept(&b, "good", (aopts){});
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_eq(a.w.st, EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(b.w.st, EDDY_OK);
    cr_expect(info().live);
    cr_expect(H.marker);
}

/* ---- blocking failure rules -------------------------------------------------------------- */

typedef struct fault {
    char name[32];
    int kind; /* 0 exists, 1 started, 2 head, 3 page, 4 decode, 5 apply, 6 completed, 7 save */
    eddy_status want;
    int abandoned;
    char applied[32];
} fault;

static fault faults[] = {
    {"marker check", 0, EDDY_ERR_IO, 0, ""},
    {"replay_started", 1, EDDY_ERR_HANDLER_FAILED, 0, ""},
    {"head", 2, EDDY_ERR_TIMEOUT, 1, ""},
    {"page", 3, EDDY_ERR_IO, 1, "e1,e2"},
    {"decode", 4, EDDY_ERR_MALFORMED, 1, "e1,e2"},
    {"apply", 5, EDDY_ERR_HANDLER_FAILED, 1, "e1,e2"},
    {"replay_completed", 6, EDDY_ERR_HANDLER_FAILED, 1, "e1,e2,e3,e4"},
    /* the held events were applied before the marker: their callers were told so */
    {"marker save", 7, EDDY_ERR_IO, 0, "e1,e2,e3,e4,x1"},
};

static void inject(const fault *f) {
    switch (f->kind) {
    case 0:
        H.exists_fail = 1;
        break;
    case 1:
        H.started_st = EDDY_ERR_HANDLER_FAILED;
        break;
    case 2:
        H.head_fail = true;
        break;
    case 3:
        H.page_fail_after = 2;
        break;
    case 4:
        H.decode_fail_pos = 3;
        break;
    case 5:
        H.fail_id = "e3";
        break;
    case 6:
        H.completed_st = EDDY_ERR_HANDLER_FAILED;
        break;
    case 7:
        H.save_fail = 1;
        break;
    }
}

ParameterizedTestParameters(feed_core, a_failed_catch_up_fails_the_feed_for_good) {
    return cr_make_param_array(fault, faults, sizeof(faults) / sizeof(faults[0]));
}
ParameterizedTest(fault *ft, feed_core, a_failed_catch_up_fails_the_feed_for_good) {
    h_new((hopts){0});
    h_store(4);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    inject(ft);
    trun r;
    cr_expect_eq(catch_up(&r), ft->want, "%s: %s", ft->name, r.err.detail);
    cr_expect(strstr(r.err.detail, "orders"), "%s: the detail names the feed: %s", ft->name,
              r.err.detail);
    cr_expect_str_eq(applied(), ft->applied, "%s", ft->name);
    cr_expect_eq(H.abandoned, ft->abandoned, "%s", ft->name);
    cr_expect_eq(info().last, EDDY_FEED_FAILED);
    cr_expect(info().failed);
    eddy_error cause;
    cr_expect(eddy__feed_failure(H.f, &cause));
    cr_expect_eq(cause.status, ft->want);
    if (ft->kind != 7)
        cr_expect_not(H.marker, "%s: no marker", ft->name);
    /* What it held is refused, and so is everything after, the projection's own included. */
    cr_expect_eq(a.w.done, 1);
    if (ft->kind == 7) {
        cr_expect_eq(a.w.st, EDDY_OK);
    } else {
        cr_expect_eq(a.w.st, EDDY_ERR_ILLEGAL_STATE, "%s", ft->name);
        cr_expect(strstr(a.w.detail, eddy_status_name(ft->want)), "%s: cause in %s", ft->name,
                  a.w.detail);
    }
    tacc b, c;
    cr_expect_eq(h_accept(&b, "x2", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    H.depth++;
    cr_expect_eq(h_accept(&c, "x3", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    H.depth--;
    cr_expect_eq(catch_up(&r), EDDY_ERR_ILLEGAL_STATE, "catch-up on a failed feed");
    cr_expect(strstr(r.err.detail, "cause"), "%s", r.err.detail);
    cr_expect_eq(go_live(&r), EDDY_ERR_ILLEGAL_STATE, "go-live on a failed feed");
    h_stop();
    cr_expect(info().failed, "nothing brings it back");
    cr_expect_not(info().live);
}

static void accept_held_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0)
        h_accept(&during[nduring++], "b", (aopts){.not_from_callback = true, .waits = true});
}

Test(feed_core, a_feed_that_was_live_applies_what_it_held_before_failing) {
    h_new((hopts){0});
    h_store(4);
    trun r;
    go_live(&r);
    nduring = 0;
    H.on_apply = accept_held_at_e2;
    H.fail_id = "e3";
    cr_expect_eq(catch_up(&r), EDDY_ERR_HANDLER_FAILED);
    cr_expect_str_eq(applied(), "e1,e2,b");
    cr_expect_eq(during[0].w.st, EDDY_OK);
    cr_expect(info().failed);
    tacc c;
    cr_expect_eq(h_accept(&c, "c", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
}

static void cancel_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0)
        eddy__feed_run_cancel(H.f, cancel_target);
}

Test(feed_core, a_cancelled_catch_up_returns_its_error_and_a_feed_not_live_keeps_holding) {
    h_new((hopts){0});
    h_store(4);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    trun r = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &r.w, false, &r.run, NULL), EDDY_OK);
    cancel_target = r.run;
    H.on_apply = cancel_at_e2;
    cr_expect(drive(&r));
    cr_expect_eq(r.st, EDDY_ERR_CANCELLED);
    cr_expect_eq(H.abandoned, 1);
    cr_expect_not(info().failed, "not recorded as a failure");
    cr_expect_not(info().stopped);
    cr_expect_eq(info().last, EDDY_FEED_CANCELLED);
    cr_expect_eq(a.w.done, 0, "still held");
    cr_expect_eq(info().held, 1);
    H.on_apply = NULL;
    H.napplied = 0;
    cr_expect_eq(catch_up(&r), EDDY_OK);
    cr_expect_str_eq(applied(), "e1,e2,e3,e4,x1");
    cr_expect_eq(a.w.st, EDDY_OK);
}

static void accept_and_cancel_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0) {
        h_accept(&during[nduring++], "b", (aopts){.not_from_callback = true, .waits = true});
        eddy__feed_run_cancel(H.f, cancel_target);
    }
}

Test(feed_core, a_cancelled_catch_up_of_a_live_feed_delivers_what_it_held_and_goes_on_live) {
    h_new((hopts){0});
    h_store(4);
    trun g;
    go_live(&g);
    trun r = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &r.w, false, &r.run, NULL), EDDY_OK);
    cancel_target = r.run;
    nduring = 0;
    H.on_apply = accept_and_cancel_at_e2;
    cr_expect(drive(&r));
    cr_expect_eq(r.st, EDDY_ERR_CANCELLED);
    cr_expect_str_eq(applied(), "e1,e2,b");
    cr_expect_eq(during[0].w.st, EDDY_OK);
    cr_expect_eq(H.abandoned, 1);
    cr_expect(info().live);
    cr_expect_not(info().failed);
}

static void fail_while_cancelled(const char *id) {
    if (strcmp(id, "e2") == 0)
        eddy__feed_run_cancel(H.f, cancel_target);
}

Test(feed_core, a_catch_up_failing_on_a_cancelled_run_is_not_recorded) {
    h_new((hopts){0});
    h_store(4);
    trun r = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &r.w, false, &r.run, NULL), EDDY_OK);
    cancel_target = r.run;
    H.on_apply = fail_while_cancelled;
    H.fail_id = "e2"; /* the apply the cancel lands in fails */
    cr_expect(drive(&r));
    cr_expect_eq(r.st, EDDY_ERR_HANDLER_FAILED, "the failure's own error reaches the caller");
    cr_expect_not(info().failed);
    cr_expect_eq(info().last, EDDY_FEED_CANCELLED);
}

Test(feed_core, a_run_cancelled_while_it_waits_for_its_turn_ends_at_once) {
    h_new((hopts){0});
    h_store(2);
    trun a = {0}, b = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &a.w, false, &a.run, NULL), EDDY_OK);
    cr_assert_eq(eddy__feed_go_live(H.f, &b.w, false, &b.run, NULL), EDDY_OK);
    cr_expect(b.run);
    /* a takes the turn and parks nowhere; b waits behind it */
    H.on_started = NULL;
    eddy__feed_step s;
    eddy__feed_run_next(H.f, a.run, H.now, &s, &o);
    cr_expect_eq(s.kind, EDDY__STEP_MARKER_EXISTS);
    cr_expect_not(drive(&b));
    cr_expect_not(eddy__feed_run_cancel(H.f, b.run), "parked: no completion is coming");
    cr_expect(drive(&b));
    cr_expect_eq(b.st, EDDY_ERR_CANCELLED);
    eddy__feed_marker_checked(H.f, a.run, EDDY_OK, false, NULL);
    cr_expect(drive(&a));
    cr_expect_eq(a.st, EDDY_OK);
}

Test(feed_core, a_held_event_whose_caller_gives_up_is_dropped_unapplied) {
    h_new((hopts){0});
    tacc a, b;
    h_accept(&a, "x1", (aopts){.waits = true});
    h_accept(&b, "x2", (aopts){.waits = true});
    cr_expect(eddy__feed_accept_cancel(H.f, &a.w));
    cr_expect_not(eddy__feed_accept_cancel(H.f, &a.w), "once");
    cr_expect_not(eddy__feed_accept_cancel(H.f, NULL));
    trun r;
    go_live(&r);
    cr_expect_str_eq(applied(), "x2");
    cr_expect_eq(a.w.done, 0, "never completed: its caller returned on its own");
    cr_expect_not(eddy__feed_accept_cancel(H.f, &b.w), "answered already");
}

/* ---- closing ---------------------------------------------------------------------------- */

static void close_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0) {
        eddy__feed_out o;
        eddy__feed_out_init(&o);
        eddy__feed_close(H.f, &o);
        flush(&o);
    }
}

Test(feed_core, closing_answers_everything_with_closed) {
    h_new((hopts){0});
    h_store(4);
    tacc a;
    h_accept(&a, "x1", (aopts){.waits = true});
    trun r = {0}, g = {0};
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    cr_assert_eq(eddy__feed_catch_up(H.f, &r.w, false, &r.run, NULL), EDDY_OK);
    cr_assert_eq(eddy__feed_go_live(H.f, &g.w, false, &g.run, NULL), EDDY_OK);
    H.on_apply = close_at_e2;
    cr_expect(drive(&r));
    cr_expect_eq(r.st, EDDY_ERR_CLOSED);
    cr_expect_eq(a.w.st, EDDY_ERR_CLOSED);
    cr_expect(drive(&g));
    cr_expect_eq(g.st, EDDY_ERR_CLOSED);
    tacc b;
    cr_expect_eq(h_accept(&b, "x2", (aopts){}), EDDY_ERR_CLOSED);
    cr_expect_eq(catch_up(&r), EDDY_ERR_CLOSED);
    cr_expect_eq(go_live(&r), EDDY_ERR_CLOSED);
    cr_expect_null(eddy__feed_poll_deferred(H.f));
}

/* ---- the reactive failure rules (decided here, for the reactive front end) --------------- */

typedef struct deletion {
    int failures;
    int attempts;
    bool logged;
} deletion;

static deletion deletions[] = {{0, 1, false}, {1, 2, false}, {3, 4, false}, {4, 4, true}};

ParameterizedTestParameters(feed_core, reactive_failure_deletes_the_marker_with_three_retries) {
    return cr_make_param_array(deletion, deletions, sizeof(deletions) / sizeof(deletions[0]));
}
ParameterizedTest(deletion *d, feed_core, reactive_failure_deletes_the_marker_with_three_retries) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE});
    h_store(3);
    H.marker = false;
    H.fail_id = "e2";
    H.remove_fail = d->failures;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(H.remove_calls, d->attempts, "%d failures", d->failures);
    unsigned want_delays[] = {0, 50, 100, 200};
    for (int i = 0; i < H.remove_calls; i++)
        cr_expect_eq(H.delays[i], want_delays[i], "retry %d waits %u ms", i, want_delays[i]);
    bool logged = false;
    for (int i = 0; i < H.nlog; i++)
        if (H.log_level[i] == EDDY_LOG_ERROR && strstr(H.log[i], "marker") &&
            strstr(H.log[i], "'orders'"))
            logged = true;
    cr_expect_eq(logged, d->logged, "%d failures: an error naming the feed id: %s", d->failures,
                 H.nlog ? H.log[0] : "(nothing logged)");
    cr_expect(info().failed);
}

static tacc listener_held, projection_held, fed_in_failing, listener_in_failing;

static void projection_feeds_at_e2(const char *id) {
    if (strcmp(id, "e2") == 0)
        h_accept(&projection_held, "p1", (aopts){}); /* depth > 0: from the projection */
}

static eddy_status remove_and_feed(void *self, const char *feed_id, eddy_error *err) {
    /* While the marker is being deleted: a listener's event is refused (step 2), the
     * projection's is taken in (step 4), and the listener's held event still waits (step 3
     * comes after the deletion). */
    cr_expect_eq(listener_held.w.done, 0, "refused only once the marker is gone");
    h_accept(&listener_in_failing, "l2", (aopts){.not_from_callback = true});
    cr_expect_eq(listener_in_failing.st, EDDY_ERR_ILLEGAL_STATE);
    H.depth++;
    h_accept(&fed_in_failing, "p2", (aopts){});
    H.depth--;
    cr_expect_eq(fed_in_failing.kind, EDDY__ACCEPT_HELD);
    return ck_remove(self, feed_id, err);
}

Test(feed_core, reactive_failure_runs_the_five_steps_in_order) {
    static eddy_checkpoint_ops ops;
    ops = ck_ops;
    ops.remove = remove_and_feed;
    ckpt.ops = &ops;
    h_new((hopts){.mode = EDDY__FEED_REACTIVE});
    h_store(3);
    h_accept(&listener_held, "l1", (aopts){});
    H.on_apply = projection_feeds_at_e2;
    H.fail_id = "e3";
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(H.remove_calls, 1, "1. the marker is deleted");
    cr_expect_eq(listener_held.w.st, EDDY_ERR_ILLEGAL_STATE, "3. the listener's held event");
    cr_expect_str_eq(applied(), "e1,e2,p1,p2", "4. what the projection fed is applied");
    cr_expect_eq(projection_held.w.st, EDDY_OK);
    cr_expect_eq(fed_in_failing.w.st, EDDY_OK);
    tacc z;
    H.depth++;
    cr_expect_eq(h_accept(&z, "p3", (aopts){}), EDDY_ERR_ILLEGAL_STATE,
                 "5. then everything is refused, the projection's own included");
    H.depth--;
    cr_expect(info().failed);
    ckpt.ops = &ck_ops;
}

Test(feed_core, reactive_an_event_nothing_waits_for_that_fails_fails_the_feed) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE});
    H.marker = true;
    trun r;
    go_live(&r);
    tacc a, b;
    H.fail_id = "l1";
    cr_expect_eq(h_accept(&b, "l1", (aopts){}), EDDY_ERR_HANDLER_FAILED);
    cr_expect_not(info().failed, "a listener's live failure fails only that event");
    H.fail_id = "orphan";
    h_accept(&a, "orphan", (aopts){.nowaiter = true});
    cr_expect(info().failed, "nothing waited for it: the feed fails");
    cr_expect(H.started_run.done, "a failure run was handed over and driven");
    cr_expect_eq(H.remove_calls, 1);
    cr_expect_not(H.marker);
    bool logged = false;
    for (int i = 0; i < H.nlog; i++)
        logged |= H.log_level[i] == EDDY_LOG_ERROR && strstr(H.log[i], "'orders' failed") != NULL;
    cr_expect(logged, "a failure nobody waited for is logged");
    H.depth++;
    cr_expect_eq(h_accept(&b, "p", (aopts){}), EDDY_ERR_ILLEGAL_STATE, "failed for good");
    H.depth--;
}

static void fed_from_abandoned(const char *id) {
    (void)id;
    h_accept(&projection_held, "p1", (aopts){.nowaiter = true});
}

Test(feed_core, reactive_an_event_fed_from_replay_abandoned_that_is_refused_fails_the_feed) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE});
    h_store(3);
    H.on_apply = stop_at_e2;
    H.on_abandoned = fed_from_abandoned;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_OK, "the stop itself is not a failure");
    cr_expect(info().failed, "but the event fed from replay_abandoned was refused");
    cr_expect_eq(H.remove_calls, 1);
}

static void projection_overflows_at_e1(const char *id) {
    if (strcmp(id, "e1") == 0) {
        h_accept(&during[0], "p1", (aopts){});
        h_accept(&during[1], "p2", (aopts){});
    }
}

Test(feed_core, reactive_an_event_the_projection_feeds_during_a_replay_that_is_refused_fails_it) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE, .max_held = 1, .no_marker = true});
    h_store(3);
    H.on_apply = projection_overflows_at_e1;
    trun r;
    cr_expect_eq(catch_up(&r), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(r.err.detail, "max_buffered_events"), "%s", r.err.detail);
    cr_expect_str_eq(applied(), "e1,p1", "what it took in is still applied");
    cr_expect(info().failed);
}

Test(feed_core, reactive_a_waiting_listener_event_is_held_up_to_the_buffer) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE, .max_held = 2});
    tacc a[3];
    h_accept(&a[0], "x1", (aopts){});
    h_accept(&a[1], "x2", (aopts){});
    cr_expect_eq(h_accept(&a[2], "x3", (aopts){}), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_not(info().failed, "a listener's refusal fails only that event");
    trun r;
    go_live(&r);
    cr_expect_str_eq(applied(), "x1,x2");
}

Test(feed_core, reactive_a_stop_answers_waiting_events_in_the_stop_call) {
    h_new((hopts){.mode = EDDY__FEED_REACTIVE});
    tacc a;
    h_accept(&a, "x1", (aopts){});
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    eddy__feed_stop(H.f, &o);
    cr_expect_eq(a.w.done, 0, "answered through the stop's own out list...");
    eddy__feed_out_run(&o, complete, NULL);
    cr_expect_eq(a.w.done, 1, "...which the front end runs on the thread that stopped");
    cr_expect_eq(a.w.st, EDDY_ERR_ILLEGAL_STATE);
}

/* ---- out of memory ---------------------------------------------------------------------- */

static void oom_scenario(void) {
    h_new((hopts){0});
    h_store(4);
    tacc a, b, c;
    h_accept(&a, "x1", (aopts){});
    h_accept(&b, "e2", (aopts){});
    trun r;
    catch_up(&r);
    h_accept(&c, "x3", (aopts){});
    h_accept(&c, "e4", (aopts){});
    catch_up(&r);
    h_stop();
    h_free();
}

Test(feed_core, every_failed_allocation_is_reported_and_leaks_nothing) {
    /* Count the allocations of a full scenario, then fail each in turn. */
    eddy__falloc_fail_after(0, false);
    oom_scenario();
    bool any_nomem = false;
    for (long n = 1; n < 200; n++) {
        eddy__falloc_fail_after(n, false);
        memset(&H, 0, sizeof(H));
        H.page_fail_after = -1;
        eddy_feed_config cfg;
        eddy_feed_config_init(&cfg);
        cfg.id = "orders";
        cfg.projection.apply = never_apply;
        cfg.decode = t_decode;
        cfg.free_event = t_free;
        cfg.event_id = t_id;
        cfg.page_size = 2;
        eddy_error err;
        eddy_status st = eddy__feed_new(&cfg, EDDY__FEED_BLOCKING, true, &H.f, &err);
        if (st != EDDY_OK) {
            cr_expect_eq(st, EDDY_ERR_NOMEM);
            any_nomem = true;
            continue;
        }
        H.fail_times = -1;
        H.decode_fail_pos = -1;
        h_store(4);
        tacc a, b, c;
        eddy_status s1 = h_accept(&a, "x1", (aopts){});
        eddy_status s2 = h_accept(&b, "e2", (aopts){});
        any_nomem |= s1 == EDDY_ERR_NOMEM || s2 == EDDY_ERR_NOMEM;
        trun r;
        eddy_status s3 = catch_up(&r);
        cr_expect(s3 == EDDY_OK || s3 == EDDY_ERR_NOMEM, "n=%ld: %s", n, eddy_status_name(s3));
        any_nomem |= s3 == EDDY_ERR_NOMEM;
        h_accept(&c, "x3", (aopts){});
        h_stop();
        h_free();
    }
    eddy__falloc_fail_after(0, false);
    cr_expect(any_nomem);
}

/* ---- the bounded id set ---------------------------------------------------------------- */

Test(feed_core, the_id_set_keeps_the_newest_ids_up_to_its_capacity) {
    eddy__dedup *d = eddy__dedup_new(100);
    cr_assert(d);
    char id[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof(id), "id-%d", i);
        cr_assert_eq(eddy__dedup_add(d, id), EDDY_OK);
        cr_assert_eq(eddy__dedup_add(d, id), EDDY_OK, "adding twice is a no-op");
        cr_assert(eddy__dedup_count(d) <= 100);
        /* every one of the last 100 is there, nothing older */
        if (i % 97 == 0)
            for (int j = 0; j <= i; j++) {
                snprintf(id, sizeof(id), "id-%d", j);
                cr_assert_eq(eddy__dedup_contains(d, id), j > i - 100, "i=%d j=%d", i, j);
            }
    }
    cr_expect_eq(eddy__dedup_count(d), 100);
    eddy__dedup_clear(d);
    cr_expect_eq(eddy__dedup_count(d), 0);
    cr_expect_not(eddy__dedup_contains(d, "id-999"));
    cr_expect_eq(eddy__dedup_add(d, "again"), EDDY_OK);
    cr_expect(eddy__dedup_contains(d, "again"));
    cr_expect_eq(eddy__dedup_add(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_not(eddy__dedup_contains(NULL, "x"));
    eddy__dedup_free(d);
    eddy__dedup_free(NULL);
}

/* Ids of every length around the inline size, evicted through a full ring, and an add that runs
 * out of memory (a long id needs its own copy) leaving the set as it was. */
Test(feed_core, the_id_set_keeps_long_and_short_ids_alike) {
    eddy__dedup *d = eddy__dedup_new(50);
    cr_assert(d);
    char id[128];
    for (int i = 0; i < 400; i++) {
        int pad = i % 90; /* 0..89 bytes of padding: both sides of the inline size */
        snprintf(id, sizeof(id), "%0*d", pad + 4, i);
        cr_assert_eq(eddy__dedup_add(d, id), EDDY_OK);
        for (int j = i > 60 ? i - 60 : 0; j <= i; j++) {
            snprintf(id, sizeof(id), "%0*d", j % 90 + 4, j);
            cr_assert_eq(eddy__dedup_contains(d, id), j > i - 50, "i=%d j=%d", i, j);
        }
    }
    memset(id, 'L', 100);
    id[100] = '\0';
    eddy__falloc_fail_after(1, false);
    cr_expect_eq(eddy__dedup_add(d, id), EDDY_ERR_NOMEM);
    eddy__falloc_fail_after(0, false);
    cr_expect_not(eddy__dedup_contains(d, id));
    cr_expect_eq(eddy__dedup_count(d), 50);
    snprintf(id, sizeof(id), "%0*d", 399 % 90 + 4, 399);
    cr_expect(eddy__dedup_contains(d, id), "the newest id is still there");
    snprintf(id, sizeof(id), "%0*d", 350 % 90 + 4, 350);
    cr_expect(eddy__dedup_contains(d, id), "the oldest id is still there");
    eddy__dedup_free(d);
}

Test(feed_core, the_id_set_reports_a_failed_allocation_and_stays_whole) {
    for (long n = 1; n < 12; n++) {
        eddy__falloc_fail_after(0, false);
        eddy__dedup *d = eddy__dedup_new(1000);
        cr_assert(d);
        char id[32];
        int added = 0;
        eddy__falloc_fail_after(n, false);
        for (int i = 0; i < 300; i++) {
            snprintf(id, sizeof(id), "id-%d", i);
            if (eddy__dedup_add(d, id) == EDDY_OK)
                added++;
            else
                cr_expect_not(eddy__dedup_contains(d, id));
        }
        eddy__falloc_fail_after(0, false);
        cr_expect_eq(eddy__dedup_count(d), (size_t)added);
        eddy__dedup_free(d);
    }
    eddy__falloc_fail_after(1, false);
    cr_expect_null(eddy__dedup_new(10));
    eddy__falloc_fail_after(0, false);
}
