/* SPDX-License-Identifier: BSD-3-Clause */
/* The store's pipelined queue with no server (src/store/store_queue.h): the load in front of
 * everything on a new connection, replies matched to the oldest op, the ops behind a failed
 * load failed with its error, what a lost connection sends again or fails (and with which
 * status), a whole stream's next page that is not fresh, and a close that drops the load. The
 * integration tests (test_store.c, tests/faults) run the same queue through reactive/store.c
 * against real servers. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/settings.h"
#include "error.h"
#include "link/library.h"
#include "raw.h"
#include "store/store.h"
#include "store/store_queue.h"
#include "util/refusal.h"

static eddy__settings settings;
static eddy__store *core;
static eddy__store_queue queue;
static eddy__store_slot a, b, c;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    core = eddy__store_new(&settings);
    cr_assert(core);
    eddy__store_queue_init(&queue);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
}

static void teardown(void) {
    eddy__store_queue_take(&queue);
    eddy__store_slot *all[] = {&a, &b, &c};
    for (size_t i = 0; i < 3; i++) {
        eddy__store_slot_clear(all[i]);
        eddy__store_req_reset(&all[i]->req);
    }
    eddy__store_free(core);
    eddy__settings_free(&settings);
}

TestSuite(store_queue, .init = setup, .fini = teardown);

static void head_op(eddy__store_slot *p) {
    cr_assert_eq(eddy__store_req_head(&p->req, core, NULL), EDDY_OK);
}

static void append_op(eddy__store_slot *p) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    eddy_event_set_id(ev, "e-1");
    eddy_event_set_source(ev, "/t");
    eddy_event_set_type(ev, "t.ev");
    const eddy_event *evs[] = {ev};
    cr_assert_eq(eddy__store_req_append(&p->req, core, "acct-1", evs, 1, NULL, NULL), EDDY_OK);
    eddy_event_free(ev);
}

/* The next slot put on the wire, numbered last on the connection. */
static eddy__store_slot *next(uint64_t last) {
    eddy_status st;
    eddy_error err;
    eddy__store_slot *p = eddy__store_queue_next(&queue, &st, &err);
    cr_assert_eq(st, EDDY_OK);
    if (p)
        p->last = last;
    return p;
}

/* Hands the head its one reply (RESP text) and returns the queue's answer and the slot. */
static eddy__store_answer answer(const char *resp, eddy__store_slot **out) {
    eddy__store_slot *h = eddy__store_queue_head(&queue);
    cr_assert(h);
    cr_assert_eq(h->req.op.cmds.n, 1);
    h->replies[0] = raw_parse(resp);
    eddy__store_answer w = eddy__store_queue_answered(&queue, core, &settings.log, out);
    cr_expect_eq(*out, h, "the head's replies are the head's");
    return w;
}

Test(store_queue, a_new_connection_loads_first_and_replies_go_in_order) {
    head_op(&a);
    head_op(&b);
    eddy__store_queue_push(&queue, &a, false);
    eddy__store_queue_push(&queue, &b, true);
    eddy__store_slot *l = next(1);
    cr_assert_eq(l, &queue.load, "the load first");
    cr_expect(eddy__library_is_load(&l->req.op.cmds, 0));
    cr_expect_eq(next(2), &a);
    cr_expect_eq(next(3), &b);
    cr_expect_null(next(4), "all sent");
    cr_expect(a.fresh, "queued with no connection");
    cr_expect_not(b.fresh);

    eddy__store_slot *p;
    cr_expect_eq(answer("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);
    cr_expect_eq(answer("$2\r\n12\r\n", &p), EDDY__STORE_READ);
    cr_expect_eq(p, &a);
    cr_expect_eq(answer("$2\r\n13\r\n", &p), EDDY__STORE_READ);
    cr_expect_eq(p, &b);
    cr_expect_null(eddy__store_queue_head(&queue));

    head_op(&c);
    eddy__store_queue_push(&queue, &c, true);
    cr_expect_eq(next(5), &c, "no second load on the same connection");
}

Test(store_queue, ops_behind_a_failed_load_fail_with_its_error_then_it_goes_again) {
    head_op(&a);
    head_op(&b);
    eddy__store_queue_push(&queue, &a, true);
    eddy__store_queue_push(&queue, &b, true);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    cr_assert_eq(next(3), &b);
    eddy__store_slot *p;
    cr_expect_eq(answer("-ERR unknown command 'FUNCTION'\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);
    cr_expect_eq(answer("$2\r\n12\r\n", &p), EDDY__STORE_FAILED, "behind a failed load");
    cr_expect_eq(p->req.st, EDDY_ERR_NOT_SUPPORTED);
    cr_expect_eq(p->err.status, EDDY_ERR_NOT_SUPPORTED);
    cr_expect(strlen(p->err.detail) > 0, "with the load's detail");

    head_op(&c);
    eddy__store_queue_push(&queue, &c, true);
    cr_expect_eq(next(4), &c, "no load while ops behind the failed one are out");
    cr_expect_eq(answer("$2\r\n12\r\n", &p), EDDY__STORE_FAILED);
    cr_expect_eq(answer("$2\r\n12\r\n", &p), EDDY__STORE_FAILED);
    cr_expect_eq(p, &c);

    eddy__store_slot_clear(&a);
    eddy__store_req_reset(&a.req);
    head_op(&a);
    eddy__store_queue_push(&queue, &a, true);
    cr_expect_eq(next(5), &queue.load, "all behind it answered: the next op loads again");
    cr_expect_eq(next(6), &a);
    cr_expect_eq(answer("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);
    cr_expect_eq(answer("$2\r\n12\r\n", &p), EDDY__STORE_READ, "that load came through");
}

Test(store_queue, a_loss_sends_idempotent_ops_again_and_fails_the_rest) {
    head_op(&a);
    append_op(&b);
    head_op(&c);
    eddy__store_queue_push(&queue, &a, true);
    eddy__store_queue_push(&queue, &b, true);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    cr_assert_eq(next(3), &b);
    eddy__store_queue_push(&queue, &c, true); /* queued, not sent yet */
    eddy__store_slot *p;
    cr_assert_eq(answer("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);

    eddy_error io;
    eddy__fail(&io, EDDY_ERR_IO, "closed by the server");
    eddy__store_slot *failed = eddy__store_queue_down(&queue, EDDY_ERR_IO, &io, 3, false);
    cr_assert_eq(failed, &b, "the append, which the server may have run");
    cr_expect_eq(b.req.st, EDDY_ERR_IO);
    cr_assert_eq(b.next, &c, "then the unsent one");
    cr_expect_eq(c.req.st, EDDY_ERR_IO);
    cr_expect_null(c.next);
    cr_expect_eq(eddy__store_queue_head(&queue), &a, "the read goes again");
    cr_expect_eq(next(1), &queue.load, "behind a new load");
    cr_expect_eq(next(2), &a);

    failed = eddy__store_queue_down(&queue, EDDY_ERR_IO, &io, 2, false);
    cr_expect_eq(failed, &a, "only once");
}

/* Appends a and b go out behind a load on a live connection (commands 1 to 3). */
static void two_appends_out(void) {
    append_op(&a);
    append_op(&b);
    eddy__store_queue_push(&queue, &a, true);
    eddy__store_queue_push(&queue, &b, true);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    cr_assert_eq(next(3), &b);
}

Test(store_queue, a_timeout_says_whether_the_op_was_sent) {
    two_appends_out();
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_TIMEOUT, "no reply");
    eddy__store_slot *failed = eddy__store_queue_down(&queue, EDDY_ERR_TIMEOUT, &why, 2, false);
    cr_assert_eq(failed, &a);
    cr_expect_eq(a.req.st, EDDY_ERR_TIMEOUT, "written: outcome unknown");
    cr_assert_eq(a.next, &b);
    cr_expect_eq(b.req.st, EDDY_ERR_IO, "never written: not sent");
}

Test(store_queue, an_op_made_for_a_connection_that_failed_fails) {
    head_op(&a);
    eddy__store_queue_push(&queue, &a, false);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    eddy_error io;
    eddy__fail(&io, EDDY_ERR_IO, "closed by the server");
    cr_expect_eq(eddy__store_queue_down(&queue, EDDY_ERR_IO, &io, 2, false), &a,
                 "that server just failed");
}

Test(store_queue, nothing_goes_again_when_closing) {
    head_op(&a);
    eddy__store_queue_push(&queue, &a, true);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    eddy_error io;
    eddy__fail(&io, EDDY_ERR_IO, "closed by the server");
    cr_expect_eq(eddy__store_queue_down(&queue, EDDY_ERR_IO, &io, 2, true), &a);
}

static eddy_status each(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    (void)meta;
    (void)user;
    return EDDY_OK;
}

Test(store_queue, a_whole_streams_next_page_is_not_fresh) {
    cr_assert_eq(eddy__store_req_read_stream(&a.req, core, "acct-1", 0, true, each, NULL, NULL),
                 EDDY_OK);
    eddy__store_queue_push(&queue, &a, false);
    cr_expect(a.fresh);
    cr_assert_eq(next(1), &queue.load);
    cr_assert_eq(next(2), &a);
    eddy__store_slot *p;
    cr_assert_eq(answer("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);
    eddy__store_slot *h = eddy__store_queue_head(&queue);
    cr_assert_eq(h, &a);
    cr_assert_eq(eddy__store_queue_answered(&queue, core, &settings.log, &p), EDDY__STORE_READ);
    eddy__store_queue_again(&queue, &a);
    cr_expect_not(a.fresh, "sent again on the connection it was read on");
    cr_expect_not(a.sent);
    cr_expect_eq(next(3), &a, "no load on the same connection");

    head_op(&b);
    eddy__store_queue_push(&queue, &b, true);
    eddy__store_queue_again(&queue, &b); /* not a whole stream: stays as it was */
    cr_expect_not(b.fresh);
}

Test(store_queue, a_close_takes_every_op_but_the_load) {
    head_op(&a);
    eddy__store_queue_push(&queue, &a, true);
    cr_assert_eq(next(1), &queue.load);
    eddy__store_slot *all = eddy__store_queue_take(&queue);
    cr_expect_eq(all, &a, "the load is the queue's own");
    cr_expect_null(a.next);
    cr_expect_null(eddy__store_queue_head(&queue));
    head_op(&b);
    eddy__store_queue_push(&queue, &b, false);
    cr_expect_eq(next(1), &queue.load, "a close or loss means a new connection: load again");
}

Test(store_queue, a_stalled_send_sends_nothing_more) {
    head_op(&a);
    head_op(&b);
    eddy__store_queue_push(&queue, &a, true);
    eddy__store_queue_push(&queue, &b, true);
    cr_assert_eq(next(1), &queue.load);
    eddy__store_queue_stall(&queue);
    cr_expect_null(next(2), "nothing until the loss is told");
}

Test(store_queue, a_cluster_refusal_sends_again_only_the_append_it_answered) {
    two_appends_out();
    eddy__store_slot *p;
    cr_assert_eq(answer("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &p), EDDY__STORE_LOADED);
    eddy__store_slot_clear(p);
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "append: %s", EDDY__TRYAGAIN_MARK);
    eddy__store_slot *failed = eddy__store_queue_down(&queue, EDDY_ERR_IO, &why, 3, false);
    cr_expect_eq(failed, &b, "the one behind it may have been written");
    cr_expect_null(b.next);
    cr_expect_eq(eddy__store_queue_head(&queue), &a, "the oldest unanswered: refused unwritten");
}
