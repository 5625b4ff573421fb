/* SPDX-License-Identifier: BSD-3-Clause */
/* The publishing connection's multiplexing machine (src/link/mux.h), with no server and no
 * clock: requests are submitted, replies parsed from RESP text are fed in wire order, and the
 * machine's outputs (who is done, with what; who reads next) are checked. Every error path:
 * a lost connection with requests queued, a deadline passing, a reply nobody asked for, a
 * request of no command, a request withdrawn for want of memory. */
#include <criterion/criterion.h>
#include <string.h>

#include "link/mux.h"
#include "raw.h"

static redisReply *num(long long n) {
    char text[32];
    snprintf(text, sizeof(text), ":%lld\r\n", n);
    return raw_parse(text);
}

static void free_replies(eddy__mux_req *r) {
    for (size_t i = 0; i < r->slot.n; i++) {
        freeReplyObject(r->slot.replies[i]);
        r->slot.replies[i] = NULL;
    }
}

Test(mux, replies_complete_requests_in_wire_order) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0}, c = {0};
    redisReply *ra[1], *rb[3], *rc[1];
    int ta, tb, tc;
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, 100, 0, 1, &ta, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 3, 100, 0, 4, &tb, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &c, rc, 1, 100, 0, 5, &tc, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_head(&m), &a);
    cr_assert(eddy__mux_next_is_last(&m));
    cr_assert(eddy__mux_feed(&m, num(1)));
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &a);
    cr_assert_eq(d->token, &ta);
    cr_assert_eq(d->slot.st, EDDY_OK);
    cr_assert_eq(ra[0]->integer, 1);
    cr_assert_null(eddy__mux_take_done(&m));
    cr_assert_not(eddy__mux_next_is_last(&m));
    cr_assert(eddy__mux_feed(&m, num(2)));
    cr_assert(eddy__mux_feed(&m, num(3)));
    cr_assert_null(eddy__mux_take_done(&m), "b waits for its third reply");
    cr_assert(eddy__mux_next_is_last(&m));
    cr_assert(eddy__mux_feed(&m, num(4)));
    cr_assert(eddy__mux_feed(&m, num(5)));
    cr_assert_eq(eddy__mux_take_done(&m), &b);
    cr_assert_eq(eddy__mux_take_done(&m), &c);
    cr_assert_eq(rb[2]->integer, 4);
    cr_assert_eq(rc[0]->integer, 5);
    cr_assert_not(eddy__mux_req_failed(&b));
    cr_assert(eddy__mux_idle(&m));
    free_replies(&a), free_replies(&b), free_replies(&c);
}

Test(mux, unsent_requests_are_handed_in_order_behind_the_handed_ones) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0};
    redisReply *ra[2], *rb[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 2, -1, 0, 0, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 0, NULL, NULL), EDDY_OK);
    cr_assert_eq(a.state, EDDY__MUX_UNSENT);
    cr_assert_eq(eddy__mux_queued(&m), 2);
    cr_assert_null(eddy__mux_head(&m), "nothing is awaited before it is handed");
    cr_assert_eq(eddy__mux_next_unsent(&m), &a);
    eddy__mux_handed(&m, &a, 2);
    cr_assert_eq(eddy__mux_next_unsent(&m), &b);
    eddy__mux_handed(&m, &b, 3);
    cr_assert_null(eddy__mux_next_unsent(&m));
    cr_assert_eq(eddy__mux_head(&m), &a);
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_assert(eddy__mux_feed(&m, raw_parse("-ERR no\r\n")));
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &a);
    cr_assert_eq(d->slot.st, EDDY_OK);
    cr_assert(eddy__mux_req_failed(d), "an error reply needs its caller");
    cr_assert(eddy__mux_feed(&m, NULL)); /* a reply the front end could not keep */
    d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &b);
    cr_assert(eddy__mux_req_failed(d), "a missing reply needs its caller");
    free_replies(&a);
}

Test(mux, a_request_of_no_command_is_refused) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0};
    redisReply *ra[1];
    eddy_error err;
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 0, -1, 0, 0, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(err.status, EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(eddy__mux_idle(&m));
    cr_assert_null(eddy__mux_head(&m));
}

Test(mux, a_lost_connection_fails_every_request_once_in_order_and_resends_none) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0}, c = {0};
    redisReply *ra[2], *rb[1], *rc[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 2, -1, 0, 2, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 3, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &c, rc, 1, -1, 0, 0, NULL, NULL), EDDY_OK); /* unsent */
    cr_assert(eddy__mux_feed(&m, num(1))); /* half of a's replies: freed on the loss */
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "connection reset");
    eddy__mux_lost(&m, EDDY_ERR_IO, &why, 3);
    cr_assert(m.broken);
    eddy__mux_req *order[] = {&a, &b, &c};
    for (int i = 0; i < 3; i++) {
        eddy__mux_req *d = eddy__mux_take_done(&m);
        cr_assert_eq(d, order[i]);
        cr_assert_eq(d->slot.st, EDDY_ERR_IO);
        cr_assert_str_eq(d->err.detail, "connection reset");
        for (size_t k = 0; k < d->slot.n; k++)
            cr_assert_null(d->slot.replies[k]);
    }
    cr_assert_null(eddy__mux_take_done(&m), "each fails exactly once");
    cr_assert_null(eddy__mux_next_unsent(&m), "nothing is sent again");
    /* Broken: refused until the front end has a new connection. */
    eddy__mux_req e = {0};
    redisReply *re[1];
    eddy_error err;
    cr_assert_eq(eddy__mux_submit(&m, &e, re, 1, -1, 0, 4, NULL, &err), EDDY_ERR_IO);
    cr_assert_str_eq(err.detail, "connection reset");
    cr_assert(eddy__mux_may_reconnect(&m));
    eddy__mux_reconnected(&m);
    cr_assert_eq(eddy__mux_submit(&m, &e, re, 1, -1, 0, 4, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_feed(&m, num(7)));
    cr_assert_eq(eddy__mux_take_done(&m), &e);
    free_replies(&e);
}

Test(mux, a_lost_connections_timeout_holds_only_for_what_was_written) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0}, c = {0};
    redisReply *ra[1], *rb[1], *rc[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 2, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &c, rc, 1, -1, 0, 0, NULL, NULL), EDDY_OK);
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_TIMEOUT, "no reply in time");
    eddy__mux_lost(&m, EDDY_ERR_TIMEOUT, &why, 1); /* a written, b not, c never handed */
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d->slot.st, EDDY_ERR_TIMEOUT);
    d = eddy__mux_take_done(&m);
    cr_assert_eq(d->slot.st, EDDY_ERR_IO);
    cr_assert(strstr(d->err.detail, "not sent"), "%s", d->err.detail);
    d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &c);
    cr_assert_eq(d->slot.st, EDDY_ERR_IO);
}

Test(mux, closing_without_detail_fails_each_with_the_status) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0};
    redisReply *ra[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 0, NULL, NULL), EDDY_OK);
    eddy__mux_lost(&m, EDDY_ERR_CLOSED, NULL, 0);
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &a);
    cr_assert_eq(d->slot.st, EDDY_ERR_CLOSED);
}

Test(mux, a_passed_deadline_gives_the_connection_up_for_every_request) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0}, c = {0};
    redisReply *ra[1], *rb[1], *rc[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, 500, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, 100, 10, 2, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &c, rc, 1, 900, 20, 3, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_next_deadline(&m), 100);
    cr_assert_not(eddy__mux_expire_due(&m, 99, 2), "nobody's deadline has passed");
    cr_assert_not(m.broken);
    cr_assert(eddy__mux_expire_due(&m, 130, 2), "b's has"); /* a and b written, c not */
    cr_assert(m.broken);
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &a);
    cr_assert_eq(d->slot.st, EDDY_ERR_TIMEOUT);
    cr_assert(strstr(d->err.detail, "another call's deadline"), "%s", d->err.detail);
    d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &b);
    cr_assert_eq(d->slot.st, EDDY_ERR_TIMEOUT);
    cr_assert(strstr(d->err.detail, "120 ms after it was queued"), "%s", d->err.detail);
    d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &c);
    cr_assert_eq(d->slot.st, EDDY_ERR_IO);
    cr_assert(strstr(d->err.detail, "not sent"), "%s", d->err.detail);
    cr_assert_null(eddy__mux_take_done(&m));
    cr_assert_not(eddy__mux_expire(&m, &c, 200, 3), "broken already: nothing more happens");
    cr_assert_eq(eddy__mux_next_deadline(&m), -1);
}

Test(mux, a_deadline_of_a_request_not_written_says_not_sent) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0};
    redisReply *ra[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, 50, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_expire(&m, &a, 60, 0));
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d->slot.st, EDDY_ERR_IO);
    cr_assert(strstr(d->err.detail, "not sent by the call's deadline"), "%s", d->err.detail);
}

Test(mux, a_deadline_after_the_reply_changes_nothing) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0};
    redisReply *ra[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, 50, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    cr_assert_not(eddy__mux_expire(&m, &a, 60, 1));
    cr_assert_not(m.broken);
    free_replies(&a);
}

Test(mux, a_reply_nobody_asked_for_fails_the_connection) {
    eddy__mux m;
    eddy__mux_init(&m);
    cr_assert_not(eddy__mux_feed(&m, num(1)), "no request waits");
    cr_assert(m.broken);
    eddy__mux_reconnected(&m);
    eddy__mux_req a = {0}, b = {0};
    redisReply *ra[1], *rb[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 0, NULL, NULL), EDDY_OK); /* unsent */
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_assert_not(eddy__mux_feed(&m, num(2)), "b was never handed: its reply is nobody's");
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    eddy__mux_req *d = eddy__mux_take_done(&m);
    cr_assert_eq(d, &b);
    cr_assert_eq(d->slot.st, EDDY_ERR_IO);
    cr_assert(strstr(d->err.detail, "no command asked for"), "%s", d->err.detail);
    free_replies(&a);
}

Test(mux, a_request_withdrawn_for_want_of_memory_leaves_the_others_alone) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0}, c = {0};
    redisReply *ra[1], *rb[1], *rc[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 0, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &c, rc, 1, -1, 0, 0, NULL, NULL), EDDY_OK);
    eddy__mux_withdraw(&m, &c); /* unsent */
    cr_assert_eq(c.state, EDDY__MUX_IDLE);
    cr_assert_eq(c.slot.st, EDDY_ERR_NOMEM);
    cr_assert_eq(eddy__mux_next_unsent(&m), &b);
    eddy__mux_handed(&m, &b, 2);
    cr_assert_null(eddy__mux_next_unsent(&m));
    eddy__mux_withdraw(&m, &b); /* handed, the newest */
    cr_assert_eq(b.slot.st, EDDY_ERR_NOMEM);
    cr_assert_not(m.broken);
    cr_assert_eq(eddy__mux_head(&m), &a);
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    cr_assert_null(eddy__mux_take_done(&m));
    cr_assert(eddy__mux_idle(&m));
    free_replies(&a);
}

Test(mux, one_reader_at_a_time_and_the_role_goes_to_the_oldest_caller) {
    eddy__mux m;
    eddy__mux_init(&m);
    eddy__mux_req a = {0}, b = {0};
    redisReply *ra[1], *rb[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert_eq(eddy__mux_submit(&m, &b, rb, 1, -1, 0, 2, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_take_reader(&m));
    cr_assert_not(eddy__mux_take_reader(&m), "one reader");
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    cr_assert_eq(eddy__mux_leave_reader(&m), EDDY__MUX_OFFER);
    cr_assert_eq(eddy__mux_head(&m), &b);
    b.detached = true;
    cr_assert(eddy__mux_take_reader(&m));
    cr_assert_eq(eddy__mux_leave_reader(&m), EDDY__MUX_READER, "a detached caller does not read");
    cr_assert(eddy__mux_take_reader(&m));
    cr_assert(eddy__mux_feed(&m, num(2)));
    cr_assert_eq(eddy__mux_take_done(&m), &b);
    cr_assert_eq(eddy__mux_leave_reader(&m), EDDY__MUX_NOBODY);
    free_replies(&a), free_replies(&b);
}

Test(mux, a_broken_connection_is_replaced_only_once_both_roles_are_left) {
    eddy__mux m;
    eddy__mux_init(&m);
    cr_assert(eddy__mux_take_writer(&m));
    cr_assert_not(eddy__mux_take_writer(&m), "one writer");
    cr_assert(eddy__mux_take_reader(&m));
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "write failed");
    eddy__mux_lost(&m, EDDY_ERR_IO, &why, 0);
    cr_assert_not(eddy__mux_may_reconnect(&m));
    cr_assert_eq(eddy__mux_leave_reader(&m), EDDY__MUX_NOBODY, "the writer still uses it");
    cr_assert_not(eddy__mux_take_reader(&m), "no role on a broken connection");
    cr_assert(eddy__mux_leave_writer(&m), "the last to leave says it may be replaced");
    cr_assert(eddy__mux_may_reconnect(&m));
    cr_assert_not(eddy__mux_take_writer(&m));
    eddy__mux_reconnected(&m);
    cr_assert(eddy__mux_take_writer(&m));
    cr_assert_not(eddy__mux_leave_writer(&m));
    /* The reader leaving last says so too. */
    cr_assert(eddy__mux_take_reader(&m));
    eddy__mux_lost(&m, EDDY_ERR_IO, &why, 0);
    cr_assert_eq(eddy__mux_leave_reader(&m), EDDY__MUX_RECONNECT);
}

/* Each way the connection breaks (a loss, a deadline, a reply nobody asked for) is told once to
 * whoever must forget with it; a loss of a broken connection is not a second one, nor is a
 * reconnect or a request that completes. */
Test(mux, each_loss_is_told_once) {
    eddy__mux m;
    eddy__mux_init(&m);
    cr_expect_not(eddy__mux_take_loss(&m), "a new machine lost nothing");
    eddy__mux_req a = {0};
    redisReply *ra[1];
    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, -1, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_feed(&m, num(1)));
    cr_expect_not(eddy__mux_take_loss(&m), "a completed request is no loss");
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    free_replies(&a);

    eddy__mux_lost(&m, EDDY_ERR_IO, NULL, 0);
    eddy__mux_lost(&m, EDDY_ERR_IO, NULL, 0); /* broken already */
    cr_expect(eddy__mux_take_loss(&m));
    cr_expect_not(eddy__mux_take_loss(&m), "told once");
    eddy__mux_reconnected(&m);
    cr_expect_not(eddy__mux_take_loss(&m), "a reconnect is no loss");

    cr_assert_eq(eddy__mux_submit(&m, &a, ra, 1, 10, 0, 1, NULL, NULL), EDDY_OK);
    cr_assert(eddy__mux_expire_due(&m, 10, 1));
    cr_expect(eddy__mux_take_loss(&m), "a deadline gave the connection up");
    cr_assert_eq(eddy__mux_take_done(&m), &a);
    eddy__mux_reconnected(&m);

    cr_assert_not(eddy__mux_feed(&m, num(1)));
    cr_expect(eddy__mux_take_loss(&m), "a reply nobody asked for");
    cr_expect_not(eddy__mux_take_loss(&m));
}
