/* SPDX-License-Identifier: BSD-3-Clause */
/* The user's side of a feed's run, as the core runs it for both front ends (src/store/feed.h,
 * "the user's side of a run"), with no server and no loop: which callback each user step calls
 * and how it is reported, the front end's enter/leave/check hooks around them, a replay page's
 * events applied or gathered into the page's batch, the page's batch committed before the page
 * is reported (and which failure wins), and the reactive feed's refusal of EDDY_PENDING. A small
 * driver answers the I/O steps (head, page, the model's position) the way a front end does. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "feed_events.h"
#include "store/feed.h"
#include "store/model.h"

static struct {
    eddy__feed *f;
    eddy_event *ev[8];
    int n;
    /* the projection */
    char applied[256];
    int started, completed, abandoned, position_calls;
    const char *fail_id;
    eddy_status fail_st;
    long long position;
    /* the hooks */
    int depth, enters, leaves, checks, outside; /* outside: a callback ran with depth 0 */
    /* the model's commits */
    unsigned batch_events[8];
    int commits;
    eddy_status commit_st;
    bool read_fails; /* the page's read fails once its events were handed over */
} H;

static void inside(void) {
    if (H.depth == 0)
        H.outside++;
}

static eddy_status p_apply(void *event, const eddy_event_meta *meta, eddy_error *err, void *u) {
    (void)meta, (void)u;
    inside();
    const char *id = ((tevent *)event)->id;
    if (H.fail_id && strcmp(id, H.fail_id) == 0)
        return eddy__fail(err, H.fail_st, "%s does not apply", id);
    strcat(H.applied, id);
    strcat(H.applied, " ");
    return EDDY_OK;
}

static eddy_status p_started(eddy_error *err, void *u) {
    (void)err, (void)u;
    inside();
    H.started++;
    return EDDY_OK;
}

static eddy_status p_completed(eddy_error *err, void *u) {
    (void)err, (void)u;
    inside();
    H.completed++;
    return EDDY_OK;
}

static void p_abandoned(void *u) {
    (void)u;
    inside();
    H.abandoned++;
}

static eddy_status p_position(long long *at, eddy_error *err, void *u) {
    (void)err, (void)u;
    inside();
    H.position_calls++;
    *at = H.position;
    return EDDY_OK;
}

static eddy_status m_writes(void *event, const eddy_event_meta *meta, eddy_writes *w,
                            eddy_error *err, void *u) {
    (void)meta, (void)u;
    inside();
    const char *id = ((tevent *)event)->id;
    if (H.fail_id && strcmp(id, H.fail_id) == 0)
        return eddy__fail(err, EDDY_ERR_HANDLER_FAILED, "%s has no writes", id);
    return eddy_writes_hincr(w, "count", "n", 1, 1, err);
}

static void enter(void *ctx) {
    (void)ctx;
    H.depth++;
    H.enters++;
}

static void leave(void *ctx) {
    (void)ctx;
    H.depth--;
    H.leaves++;
}

static void check(void *ctx) {
    (void)ctx;
    cr_assert_eq(H.depth, 0, "checked inside a callback");
    H.checks++;
}

static const eddy__feed_calls calls = {enter, leave, check, NULL};

static void h_new(eddy__feed_mode mode, bool model, bool position, int n) {
    memset(&H, 0, sizeof(H));
    eddy_feed_config cfg;
    t_config(&cfg);
    if (model) {
        cfg.writes = m_writes;
    } else {
        cfg.projection.apply = p_apply;
        cfg.projection.position = position ? p_position : NULL;
    }
    cfg.projection.replay_started = p_started;
    cfg.projection.replay_completed = p_completed;
    cfg.projection.replay_abandoned = p_abandoned;
    eddy_error err;
    cr_assert_eq(eddy__feed_new(&cfg, mode, false, &H.f, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy__feed_model_new(H.f, "ns", &err), EDDY_OK);
    cr_assert_eq(eddy__feed_model(H.f) != NULL, model);
    H.n = t_events(H.ev, n);
}

static void fini(void) {
    if (H.f)
        eddy__feed_free(H.f);
    for (int i = 0; i < H.n; i++)
        eddy_event_free(H.ev[i]);
    memset(&H, 0, sizeof(H));
}

TestSuite(feed_user, .fini = fini);

static void complete(void *waiter, eddy_status st, const eddy_error *err, void *ctx) {
    (void)waiter, (void)st, (void)err, (void)ctx;
}

/* Reads the page the way both front ends do, through the core. */
static void read_page(eddy__feed_run *run, const eddy__feed_step *s) {
    eddy_status st = EDDY_OK;
    long long next = s->position;
    for (long long i = s->position; i < H.n && i < s->position + (long long)s->max; i++) {
        eddy_event_meta meta = {"s1", i + 1, i + 1};
        if ((st = eddy__feed_page_apply(H.f, run, H.ev[i], &meta, &calls)) != EDDY_OK)
            break;
        next = i + 1;
    }
    eddy_error re = {0};
    if (H.read_fails && st == EDDY_OK)
        st = eddy__fail(&re, EDDY_ERR_TIMEOUT, "the read timed out");
    const eddy_writes *batch = eddy__feed_page_read(H.f, run, st, next, &re);
    if (batch) {
        cr_assert(eddy__feed_model(H.f), "a batch only with a model");
        cr_assert_lt(H.commits, 8);
        H.batch_events[H.commits++] = batch->events;
        eddy_error ce = {0};
        if (H.commit_st != EDDY_OK)
            eddy__fail(&ce, H.commit_st, "the commit was lost");
        eddy__feed_page_committed(H.f, run, H.commit_st, &ce);
    }
}

/* Catches up, answering only the I/O steps; returns the run's result. */
static eddy_status catch_up(eddy_error *err) {
    eddy__feed_run *run = NULL;
    int waiter = 0;
    cr_assert_eq(eddy__feed_catch_up(H.f, &waiter, false, &run, err), EDDY_OK);
    cr_assert(run);
    for (int steps = 0;; steps++) {
        cr_assert_lt(steps, 100, "the run does not move on");
        eddy__feed_step s;
        eddy__feed_out o;
        eddy__feed_out_init(&o);
        eddy__feed_run_next(H.f, run, 0, &s, &o);
        eddy__feed_out_run(&o, complete, NULL);
        if (eddy__feed_run_user_step(H.f, run, &s, &calls, &o)) {
            eddy__feed_out_run(&o, complete, NULL);
            continue;
        }
        switch (s.kind) {
        case EDDY__STEP_DONE:
            if (err)
                *err = s.err;
            return s.st;
        case EDDY__STEP_READ_HEAD:
            eddy__feed_head_read(H.f, run, EDDY_OK, H.n, NULL);
            break;
        case EDDY__STEP_READ_PAGE:
            read_page(run, &s);
            break;
        case EDDY__STEP_POSITION:
            cr_assert(eddy__feed_model(H.f), "the projection's position is a user step");
            eddy__feed_position_read(H.f, run, EDDY_OK, 0, NULL);
            break;
        default:
            cr_assert_fail("step %d is not the front end's here", (int)s.kind);
        }
        eddy__feed_out_run(&o, complete, NULL);
    }
}

Test(feed_user, the_core_runs_every_callback_inside_the_hooks_and_checks_before_reports) {
    h_new(EDDY__FEED_BLOCKING, false, true, 5);
    H.position = 2;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(H.started, 1);
    cr_assert_eq(H.position_calls, 1);
    cr_assert_eq(H.completed, 1);
    cr_assert_eq(H.abandoned, 0);
    cr_assert_str_eq(H.applied, "e3 e4 e5 ", "resumes after the position the projection gave");
    cr_assert_eq(H.outside, 0, "every callback ran between enter and leave");
    cr_assert_eq(H.enters, H.leaves);
    cr_assert_eq(H.enters, 6, "started, position, 3 applies, completed");
    /* After started, position, completed, and before and after each page event's apply. */
    cr_assert_eq(H.checks, 3 + 2 * 3);
    eddy_feed_info info;
    eddy__feed_info(H.f, &info);
    cr_assert_eq(info.replayed, 3);
}

Test(feed_user, a_replayed_apply_that_fails_fails_the_run_and_abandons_it) {
    h_new(EDDY__FEED_BLOCKING, false, false, 4);
    H.fail_id = "e3";
    H.fail_st = EDDY_ERR_HANDLER_FAILED;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_ERR_HANDLER_FAILED);
    cr_assert(strstr(err.detail, "e3 does not apply"), "%s", err.detail);
    cr_assert_str_eq(H.applied, "e1 e2 ");
    cr_assert_eq(H.abandoned, 1);
    cr_assert_eq(H.completed, 0);
    cr_assert_eq(H.outside, 0);
}

Test(feed_user, only_the_reactive_feed_turns_a_pending_apply_into_illegal_state) {
    eddy_feed_info info;
    for (int mode = 0; mode < 2; mode++) {
        h_new(mode ? EDDY__FEED_REACTIVE : EDDY__FEED_BLOCKING, false, false, 1);
        H.fail_id = "e1";
        H.fail_st = EDDY_PENDING;
        eddy_error err = {0};
        eddy_status st = catch_up(&err);
        if (mode) {
            cr_assert_eq(st, EDDY_ERR_ILLEGAL_STATE);
            cr_assert(strstr(err.detail, "EDDY_PENDING"), "%s", err.detail);
        } else {
            cr_assert_eq(st, EDDY_PENDING);
        }
        eddy__feed_info(H.f, &info);
        cr_assert(info.failed || mode == 0);
        fini();
    }
}

Test(feed_user, a_live_apply_goes_through_the_projection_or_gathers_the_models_writes) {
    tevent ev = {"x1"};
    eddy_event_meta meta = {"s1", 1, 7};
    eddy_error err = {0};
    bool commit = true;
    h_new(EDDY__FEED_BLOCKING, false, false, 0);
    cr_assert_eq(eddy__feed_apply(H.f, &ev, &meta, NULL, &commit, &calls, &err), EDDY_OK);
    cr_assert_not(commit);
    cr_assert_str_eq(H.applied, "x1 ");
    fini();

    h_new(EDDY__FEED_REACTIVE, true, false, 0);
    eddy_writes w;
    eddy__writes_init(&w, eddy__feed_model(H.f));
    cr_assert_eq(eddy__feed_apply(H.f, &ev, &meta, &w, &commit, &calls, &err), EDDY_OK);
    cr_assert(commit, "the caller commits the write set");
    cr_assert_eq(w.events, 1);
    cr_assert_eq(w.last, 7);
    H.fail_id = "x1";
    meta.position = 8;
    cr_assert_eq(eddy__feed_apply(H.f, &ev, &meta, &w, &commit, &calls, &err),
                 EDDY_ERR_HANDLER_FAILED);
    cr_assert_eq(w.events, 1, "the batch keeps what it had");
    cr_assert_not(commit, "nothing to commit when the writes failed");
    cr_assert_eq(H.outside, 0);
    eddy__writes_reset(&w);
}

Test(feed_user, with_a_model_each_page_commits_its_batch_before_it_is_reported) {
    h_new(EDDY__FEED_BLOCKING, true, false, 5);
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(H.commits, 3, "pages of 2, 2 and 1");
    cr_assert_eq(H.batch_events[0], 2);
    cr_assert_eq(H.batch_events[1], 2, "each batch starts empty");
    cr_assert_eq(H.batch_events[2], 1);
    cr_assert_eq(H.applied[0], '\0', "the projection's apply is not called");
    cr_assert_eq(H.outside, 0);
    eddy_feed_info info;
    eddy__feed_info(H.f, &info);
    cr_assert_eq(info.position, 5);
}

Test(feed_user, a_lost_page_commit_fails_the_run) {
    h_new(EDDY__FEED_REACTIVE, true, false, 3);
    H.commit_st = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_ERR_IO);
    cr_assert(strstr(err.detail, "the commit was lost"), "%s", err.detail);
    cr_assert_eq(H.commits, 1);
    cr_assert_eq(H.abandoned, 1);
}

Test(feed_user, a_page_that_stopped_midway_commits_what_it_gathered_and_its_own_error_wins) {
    h_new(EDDY__FEED_BLOCKING, true, false, 2);
    H.fail_id = "e2"; /* the first event gathers, the second fails the run */
    H.commit_st = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_ERR_HANDLER_FAILED);
    cr_assert(strstr(err.detail, "e2 has no writes"), "%s", err.detail);
    cr_assert_eq(H.commits, 1);
    cr_assert_eq(H.batch_events[0], 1);
}

Test(feed_user, a_page_whose_read_failed_commits_what_it_gathered_and_the_reads_error_wins) {
    h_new(EDDY__FEED_REACTIVE, true, false, 2);
    H.read_fails = true;
    H.commit_st = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_assert_eq(catch_up(&err), EDDY_ERR_TIMEOUT);
    cr_assert(strstr(err.detail, "the read timed out"), "%s", err.detail);
    cr_assert_eq(H.commits, 1);
    cr_assert_eq(H.batch_events[0], 2);
}

Test(feed_user, steps_with_io_are_left_to_the_front_end) {
    h_new(EDDY__FEED_BLOCKING, true, false, 0);
    eddy__feed_out o;
    eddy__feed_out_init(&o);
    eddy__feed_step s = {0};
    eddy__feed_step_kind io[] = {
        EDDY__STEP_DONE,          EDDY__STEP_WAIT,      EDDY__STEP_MARKER_EXISTS,
        EDDY__STEP_READ_HEAD,     EDDY__STEP_READ_PAGE, EDDY__STEP_SAVE_MARKER,
        EDDY__STEP_DELETE_MARKER, EDDY__STEP_POSITION,  EDDY__STEP_APPLY};
    for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
        s.kind = io[i];
        cr_assert_not(eddy__feed_run_user_step(H.f, NULL, &s, &calls, &o), "step %d", (int)io[i]);
    }
    cr_assert_eq(H.enters, 0);
}

Test(feed_user, the_state_calls_answer_for_a_null_feed_and_a_live_one) {
    eddy_feed_info info;
    cr_assert_eq(eddy__feed_stats(NULL, &info), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_not(eddy__feed_ready(NULL));
    cr_assert_not(eddy__feed_failure(NULL, NULL));
    h_new(EDDY__FEED_REACTIVE, false, false, 1);
    cr_assert_eq(eddy__feed_stats(H.f, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_not(eddy__feed_ready(H.f));
    cr_assert_eq(catch_up(NULL), EDDY_OK);
    cr_assert(eddy__feed_ready(H.f));
    cr_assert_eq(eddy__feed_stats(H.f, &info), EDDY_OK);
    cr_assert_eq(info.replayed, 1);
    cr_assert_not(eddy__feed_failure(H.f, NULL));
}

Test(feed_user, open_checks_the_checkpoint_storage_then_makes_the_core_and_its_model) {
    eddy_feed_config cfg;
    t_config(&cfg);
    cfg.writes = m_writes;
    cfg.decode = t_decode;
    cfg.free_event = t_free;
    cfg.event_id = t_id;
    eddy_error err = {0};
    eddy__feed *f = (eddy__feed *)&err; /* set to NULL on failure */
    cr_assert_eq(eddy__feed_open(&cfg, EDDY__FEED_BLOCKING, true, false, "ns", &f, &err),
                 EDDY_ERR_INVALID_SPEC);
    cr_assert_null(f);
    cr_assert(strstr(err.detail, "feed 'orders': the checkpoint storage lacks an operation"), "%s",
              err.detail);
    cr_assert_eq(eddy__feed_checkpoints_incomplete(NULL, &err), EDDY_ERR_INVALID_SPEC);
    cr_assert(strstr(err.detail, "domain feed: the checkpoint storage"), "%s", err.detail);
    cfg.page_size = 0;
    cr_assert_eq(eddy__feed_open(&cfg, EDDY__FEED_BLOCKING, false, false, "ns", &f, &err),
                 EDDY_ERR_INVALID_SPEC, "the core's own checks");
    cr_assert_null(f);
    cfg.page_size = 2;
    cr_assert_eq(eddy__feed_open(&cfg, EDDY__FEED_REACTIVE, true, true, "ns", &f, &err), EDDY_OK,
                 "%s", err.detail);
    cr_assert(eddy__feed_model(f), "the model kept in Redis comes with the core");
    eddy__feed_free(f);
}
