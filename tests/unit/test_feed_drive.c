/* SPDX-License-Identifier: BSD-3-Clause */
/* The run driver both front ends drive a feed's run with (src/store/feed_drive.h), with no
 * server and no loop: a fake front end answers each operation at once (as the blocking one
 * does) or later (as the reactive one does). Checks that an answer given inside the operation's
 * start never nests a second loop, that a later answer drives on, that a model's page batch and
 * a held event's write set are committed before their step is reported, and that a retry delay
 * cut short reports the marker deletion's failure without touching the marker; and that a live
 * event is answered now (EDDY_PENDING when deferred), held, or applied and answered with the
 * apply's or its commit's outcome. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/store.h"
#include "error.h"
#include "feed_events.h"
#include "store/feed_drive.h"

static struct {
    eddy__feed *f;
    eddy_event *ev[8];
    int n;
    char applied[256];
    const char *fail_id;
    bool async;    /* answer each operation later, from the test's loop */
    int in_start;  /* io.start in progress */
    char ops[256]; /* the operations started, one letter each */
    /* the operation left in flight (async) */
    bool pending;
    eddy__feed_io_op op;
    eddy__feed_driver *d;
    eddy_status remove_st, delay_st, commit_st;
    unsigned commit_events[8];
    int commits;
    eddy__feed_run *start; /* a run the core handed over (out.start) */
    int completed;         /* waiters completed */
    eddy_status waiter_st;
} H;

static eddy_status p_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *u) {
    (void)meta, (void)u;
    const char *id = ((tevent *)event)->id;
    if (H.fail_id && strcmp(id, H.fail_id) == 0)
        return eddy__fail(err, EDDY_ERR_HANDLER_FAILED, "%s does not apply", id);
    strcat(H.applied, id);
    strcat(H.applied, " ");
    return EDDY_OK;
}

static eddy_status m_writes(void *event, const eddy_event_meta *meta, eddy_writes *w,
                            eddy_error *err, void *u) {
    (void)meta, (void)u;
    strcat(H.applied, ((tevent *)event)->id);
    strcat(H.applied, " ");
    return eddy_writes_hincr(w, "count", "n", 1, 1, err);
}

static void h_new(eddy__feed_mode mode, bool model, bool marker, int n) {
    memset(&H, 0, sizeof(H));
    eddy_feed_config cfg;
    t_config(&cfg);
    if (model)
        cfg.writes = m_writes;
    else
        cfg.projection.apply = p_apply;
    eddy_error err;
    cr_assert_eq(eddy__feed_new(&cfg, mode, marker, &H.f, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy__feed_model_new(H.f, "ns", &err), EDDY_OK);
    H.n = t_events(H.ev, n);
}

static void fini(void) {
    if (H.f)
        eddy__feed_free(H.f);
    for (int i = 0; i < H.n; i++)
        eddy_event_free(H.ev[i]);
    memset(&H, 0, sizeof(H));
}

TestSuite(feed_drive, .fini = fini);

/* ---- the fake front end ---------------------------------------------------------------- */

static void complete(void *waiter, eddy_status st, const eddy_error *err, void *ctx) {
    (void)waiter, (void)err, (void)ctx;
    H.completed++;
    H.waiter_st = st;
}

static void io_flush(void *ctx, eddy__feed_out *out) {
    (void)ctx;
    eddy__feed_out_run(out, complete, NULL);
    if (out->start) {
        cr_assert_null(H.start, "one run handed over");
        H.start = out->start;
        out->start = NULL;
    }
}

/* Runs op and tells the driver how it ended; returns what the driver answered. */
static eddy__drive_state answer(const eddy__feed_io_op *op, eddy__feed_driver *d) {
    eddy_status st = EDDY_OK;
    long long value = 0;
    eddy_error e = {0};
    switch (op->kind) {
    case EDDY__IO_EXISTS:
        break; /* no marker */
    case EDDY__IO_HEAD:
        value = H.n;
        break;
    case EDDY__IO_PAGE:
        value = op->position;
        for (long long i = op->position; i < H.n && i < op->position + (long long)op->max; i++) {
            eddy_event_meta meta = {"s1", i + 1, i + 1};
            if ((st = eddy__feed_driver_page_event(H.ev[i], &meta, d)) != EDDY_OK)
                break;
            value = i + 1;
        }
        break;
    case EDDY__IO_REMOVE:
        st = H.remove_st;
        break;
    case EDDY__IO_DELAY:
        cr_assert_gt(op->delay_ms, 0);
        st = H.delay_st;
        break;
    case EDDY__IO_COMMIT:
        cr_assert_lt(H.commits, 8);
        H.commit_events[H.commits++] = op->writes->events;
        st = H.commit_st;
        break;
    default:
        break;
    }
    if (st != EDDY_OK)
        eddy__fail(&e, st, "operation failed");
    return eddy__feed_driver_done(d, st, value, &e);
}

static void io_start(void *ctx, const eddy__feed_io_op *op, eddy__feed_driver *d) {
    (void)ctx;
    cr_assert_eq(H.in_start, 0, "an operation started inside another one's start");
    cr_assert(!H.pending, "an operation started while one is in flight");
    static const char letter[] = {'x', 'p', 'h', 'r', 's', 'd', 'w', 'c'};
    size_t n = strlen(H.ops);
    cr_assert_lt(n, sizeof(H.ops) - 2);
    H.ops[n] = op->kind == EDDY__IO_COMMIT && !op->page ? 'C' : letter[op->kind];
    H.in_start++;
    if (H.async) {
        H.pending = true;
        H.op = *op;
        H.d = d;
    } else {
        cr_assert_eq(answer(op, d), EDDY__DRIVE_BUSY, "an answer inside start drives on later");
    }
    H.in_start--;
}

static const eddy__feed_io io = {io_start, io_flush, NULL};

/* Drives run to its end the way a front end does; returns its result. */
static eddy_status drive(eddy__feed_run *run, eddy_error *err) {
    eddy__feed_driver d;
    eddy__feed_driver_init(&d, H.f, run, &io, NULL, NULL);
    eddy__drive_state s = eddy__feed_drive(&d);
    for (int i = 0; s == EDDY__DRIVE_BUSY; i++) {
        cr_assert_lt(i, 100, "the run does not move on");
        cr_assert(H.async && H.pending, "busy with nothing in flight");
        H.pending = false;
        s = answer(&H.op, H.d);
    }
    cr_assert_eq(s, EDDY__DRIVE_DONE);
    if (err)
        *err = d.err;
    return d.st;
}

static eddy_status catch_up(eddy_error *err) {
    eddy__feed_run *run = NULL;
    static int waiter;
    cr_assert_eq(eddy__feed_catch_up(H.f, &waiter, false, &run, err), EDDY_OK);
    cr_assert(run);
    return drive(run, err);
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(feed_drive, an_answer_inside_start_is_settled_by_the_loop_that_started_it) {
    h_new(EDDY__FEED_BLOCKING, false, false, 5);
    cr_assert_eq(catch_up(NULL), EDDY_OK);
    cr_assert_str_eq(H.applied, "e1 e2 e3 e4 e5 ");
    cr_assert_str_eq(H.ops, "hrrr");
}

Test(feed_drive, an_answer_given_later_drives_on_from_it) {
    h_new(EDDY__FEED_REACTIVE, false, false, 5);
    H.async = true;
    cr_assert_eq(catch_up(NULL), EDDY_OK);
    cr_assert_str_eq(H.applied, "e1 e2 e3 e4 e5 ");
    cr_assert_str_eq(H.ops, "hrrr");
}

Test(feed_drive, a_models_page_batch_commits_before_the_page_is_reported) {
    h_new(EDDY__FEED_BLOCKING, true, false, 3);
    cr_assert_eq(catch_up(NULL), EDDY_OK);
    cr_assert_str_eq(H.ops, "phrcrc");
    cr_assert_eq(H.commits, 2);
    cr_assert_eq(H.commit_events[0], 2);
    cr_assert_eq(H.commit_events[1], 1);
}

Test(feed_drive, a_lost_page_commit_fails_the_run) {
    h_new(EDDY__FEED_REACTIVE, true, false, 3);
    H.async = true;
    H.commit_st = EDDY_ERR_TIMEOUT;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_ERR_TIMEOUT);
    cr_assert_str_eq(H.ops, "phrc", "no page is read after the lost commit");
}

Test(feed_drive, a_held_event_commits_its_write_set_alone_before_it_is_reported) {
    h_new(EDDY__FEED_REACTIVE, true, false, 2);
    H.async = true;
    eddy__feed_run *run = NULL;
    static int waiter, accept_waiter;
    cr_assert_eq(eddy__feed_catch_up(H.f, &waiter, false, &run, NULL), EDDY_OK);
    eddy__feed_driver d;
    eddy__feed_driver_init(&d, H.f, run, &io, NULL, NULL);
    cr_assert_eq(eddy__feed_drive(&d), EDDY__DRIVE_BUSY);
    /* Live while the replay runs: held until the replay is done. */
    tevent live = {"live1"};
    eddy_event_meta meta = {"s2", 1, 3};
    eddy__accept_kind kind;
    eddy__feed_entry *entry = NULL;
    eddy__feed_out out;
    eddy__feed_out_init(&out);
    eddy__accept_flags fl = {false, false, false};
    cr_assert_eq(
        eddy__feed_accept(H.f, &meta, &live, &accept_waiter, fl, &kind, &entry, &out, NULL),
        EDDY_OK);
    cr_assert_eq(kind, EDDY__ACCEPT_HELD);
    eddy__drive_state s = EDDY__DRIVE_BUSY;
    while (s == EDDY__DRIVE_BUSY) {
        cr_assert(H.pending);
        H.pending = false;
        s = answer(&H.op, H.d);
    }
    cr_assert_eq(s, EDDY__DRIVE_DONE);
    cr_assert_eq(d.st, EDDY_OK);
    cr_assert_str_eq(H.applied, "e1 e2 live1 ");
    cr_assert_eq(H.ops[strlen(H.ops) - 1], 'C', "the held event's own commit: %s", H.ops);
    cr_assert_eq(H.commit_events[H.commits - 1], 1);
    cr_assert_eq(H.completed, 1);
    cr_assert_eq(H.waiter_st, EDDY_OK);
}

/* A reactive catch-up that fails deletes the marker (its run takes the failure over); returns
 * the operations from the first deletion on. */
static const char *fail_and_delete(eddy_status delay_st) {
    h_new(EDDY__FEED_REACTIVE, false, true, 3);
    H.delay_st = delay_st;
    H.fail_id = "e2";
    H.remove_st = EDDY_ERR_TIMEOUT;
    cr_assert_eq(catch_up(NULL), EDDY_ERR_HANDLER_FAILED);
    const char *from = strchr(H.ops, 'd');
    cr_assert(from, "the marker is deleted: %s", H.ops);
    return from;
}

Test(feed_drive, each_retry_of_the_marker_deletion_waits_its_delay_first) {
    cr_assert_str_eq(fail_and_delete(EDDY_OK), "dwdwdwd");
}

Test(feed_drive, a_delay_cut_short_fails_the_deletion_without_touching_the_marker) {
    cr_assert_str_eq(fail_and_delete(EDDY_ERR_CLOSED), "dwww");
}

/* ---- a live event ---------------------------------------------------------------------- */

static eddy__live_state live(eddy__feed_live *l, tevent *ev, eddy_event_meta *meta, bool defer) {
    static int waiter;
    eddy__accept_flags fl = {false, false, defer};
    return eddy__feed_live_accept(l, H.f, meta, ev, &waiter, fl, io_flush, NULL);
}

static void go_live(void) {
    eddy__feed_run *run = NULL;
    static int waiter;
    cr_assert_eq(eddy__feed_go_live(H.f, &waiter, false, &run, NULL), EDDY_OK);
    if (run)
        cr_assert_eq(drive(run, NULL), EDDY_OK);
}

/* Both front ends' catch-up and go-live calls go through eddy__feed_start: go-live on a live,
 * idle feed has nothing to run, a catch-up always replays again. */
Test(feed_drive, start_runs_a_go_live_or_a_catch_up) {
    h_new(EDDY__FEED_BLOCKING, false, false, 2);
    static int waiter;
    eddy__feed_run *run = NULL;
    cr_assert_eq(eddy__feed_start(H.f, true, &waiter, false, &run, NULL), EDDY_OK);
    cr_assert(run, "not live yet: go-live replays first");
    cr_assert_eq(drive(run, NULL), EDDY_OK);
    cr_assert(eddy__feed_ready(H.f));
    run = NULL;
    cr_assert_eq(eddy__feed_start(H.f, true, &waiter, false, &run, NULL), EDDY_OK);
    cr_assert_null(run, "live and idle: nothing to go live for");
    cr_assert_eq(eddy__feed_start(H.f, false, &waiter, false, &run, NULL), EDDY_OK);
    cr_assert(run, "a catch-up replays again");
    cr_assert_eq(drive(run, NULL), EDDY_OK);
}

/* One completeness rule for both front ends' checkpoint tables. */
static eddy_status c_exists(void *self, const char *id, bool *out, eddy_error *err) {
    (void)self, (void)id, (void)err;
    *out = false;
    return EDDY_OK;
}
static eddy_status c_save(void *self, const char *id, const char *value, eddy_error *err) {
    (void)self, (void)id, (void)value, (void)err;
    return EDDY_OK;
}
static eddy_status c_remove(void *self, const char *id, eddy_error *err) {
    (void)self, (void)id, (void)err;
    return EDDY_OK;
}

Test(feed_drive, a_checkpoint_storage_is_complete_with_its_three_operations) {
    eddy_checkpoint_ops ops = {.exists = c_exists, .save = c_save, .remove = c_remove};
    eddy_checkpoints c = {&ops, NULL};
    const eddy_checkpoints *none = NULL, *cp = &c; /* the front ends pass pointers */
    cr_assert_not(EDDY__CHECKPOINTS_COMPLETE(none));
    cr_assert(EDDY__CHECKPOINTS_COMPLETE(cp));
    ops.save = NULL;
    cr_assert_not(EDDY__CHECKPOINTS_COMPLETE(cp), "save missing");
    ops = (eddy_checkpoint_ops){.exists = c_exists, .save = c_save};
    cr_assert_not(EDDY__CHECKPOINTS_COMPLETE(cp), "remove missing");
    ops = (eddy_checkpoint_ops){.save = c_save, .remove = c_remove};
    cr_assert_not(EDDY__CHECKPOINTS_COMPLETE(cp), "exists missing");
    c.ops = NULL;
    cr_assert_not(EDDY__CHECKPOINTS_COMPLETE(cp), "no table");
}

Test(feed_drive, a_deferred_live_event_is_answered_pending_and_a_held_one_waits) {
    h_new(EDDY__FEED_BLOCKING, false, false, 0);
    tevent ev = {"l1"};
    eddy__feed_live l;
    cr_assert_eq(live(&l, &ev, NULL, true), EDDY__LIVE_ANSWER);
    cr_assert_eq(l.st, EDDY_PENDING, "not taken: the feed is not live");
    cr_assert_eq(live(&l, &ev, NULL, false), EDDY__LIVE_HELD, "held until the feed is live");
}

Test(feed_drive, a_live_event_is_applied_through_the_projection_and_answered) {
    h_new(EDDY__FEED_BLOCKING, false, false, 0);
    go_live();
    tevent ev = {"l1"};
    eddy__feed_live l;
    cr_assert_eq(live(&l, &ev, NULL, false), EDDY__LIVE_APPLY);
    cr_assert_not(eddy__feed_live_apply(&l, &ev, NULL, NULL), "nothing to commit");
    cr_assert_eq(l.st, EDDY_OK);
    cr_assert_str_eq(H.applied, "l1 ");
    cr_assert_eq(live(&l, &ev, NULL, false), EDDY__LIVE_ANSWER, "a duplicate is answered");
    cr_assert_eq(l.st, EDDY_OK);
    H.fail_id = "l2";
    tevent ev2 = {"l2"};
    cr_assert_eq(live(&l, &ev2, NULL, false), EDDY__LIVE_APPLY);
    cr_assert_not(eddy__feed_live_apply(&l, &ev2, NULL, NULL));
    cr_assert_eq(l.st, EDDY_ERR_HANDLER_FAILED);
}

Test(feed_drive, with_a_model_a_live_event_is_answered_with_its_commits_outcome) {
    h_new(EDDY__FEED_REACTIVE, true, false, 0);
    go_live();
    tevent ev = {"l1"};
    eddy_event_meta meta = {"s1", 1, 1};
    eddy__feed_live l;
    cr_assert_eq(live(&l, &ev, &meta, false), EDDY__LIVE_APPLY);
    cr_assert(eddy__feed_live_apply(&l, &ev, &meta, NULL), "its write set commits alone");
    cr_assert_eq(l.w.events, 1);
    eddy_error e;
    eddy__feed_live_end(&l, eddy__fail(&e, EDDY_ERR_TIMEOUT, "lost"), &e);
    cr_assert_eq(l.st, EDDY_ERR_TIMEOUT, "the commit's outcome is the answer");
    cr_assert_eq(l.w.events, 0, "the write set is released with the end");
}
