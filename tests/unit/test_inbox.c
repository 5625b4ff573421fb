/* SPDX-License-Identifier: BSD-3-Clause */
/* The control loop's next round (eddy__inbox_next, src/bus/inbox.h) with no server and no front
 * end: commands to send now, or how long to wait when the core says nothing is due; and how a
 * late start is reported. */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/inbox.h"
#include "error.h"
#include "raw.h"

Test(inbox, next_sends_now_or_says_how_long_to_wait) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.ns = "t";
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy__requests *reqs = eddy__requests_new(&s);
    eddy__retention_counters counters = {0};
    eddy__inbox *ib = eddy__inbox_new(&s, reqs, &counters, 1000);
    cr_assert(reqs && ib);
    eddy__plan plan;
    eddy__plan_init(&plan);

    /* The reply stream is opened first: commands to send now. */
    cr_expect_eq(eddy__inbox_next(ib, 1000, NULL, 0, &plan), -1);
    size_t opening = plan.cmds.n;
    cr_assert_gt(opening, 0);
    /* Not sent, asked again: the plan starts afresh rather than piling up. */
    cr_expect_eq(eddy__inbox_next(ib, 1000, NULL, 0, &plan), -1);
    cr_expect_eq(plan.cmds.n, opening);

    /* The server refuses the opening: nothing to send until the retry, which is the wait. */
    redisReply *r[8] = {NULL};
    r[0] = raw_parse("-ERR no\r\n");
    for (size_t i = 1; i < plan.cmds.n; i++)
        r[i] = raw_parse(":1\r\n");
    eddy__reply_list done = {0};
    eddy__inbox_feed(ib, 1000, &plan, r, plan.cmds.n, &done);
    for (size_t i = 0; i < opening; i++)
        freeReplyObject(r[i]);
    cr_expect_eq(eddy__inbox_next(ib, 1000, NULL, 0, &plan), (long long)s.reconnect_max_ms);
    cr_expect_eq(plan.cmds.n, 0);

    eddy__reply_list_free(&done);
    eddy__plan_reset(&plan);
    eddy__inbox_free(ib);
    eddy__requests_free(reqs);
    eddy__settings_free(&s);
}

/* A leave's or a registration's outcome: the failure that kept its replies away, else the first
 * error reply, named after the registry. */
Test(inbox, close_and_register_replies_judged_alike) {
    redisReply *r[3] = {raw_parse(":1\r\n"), raw_parse("-ERR nope\r\n"),
                        raw_parse("-ERR late\r\n")};
    eddy_error err = {0};
    cr_expect_eq(eddy__inbox_cmds_status(EDDY_OK, NULL, r, 1, &err), EDDY_OK);
    cr_expect_eq(eddy__inbox_cmds_status(EDDY_OK, NULL, r, 3, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "subscription registry: ERR nope"), "%s", err.detail);
    eddy_error got = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    cr_expect_eq(eddy__inbox_cmds_status(EDDY_ERR_IO, &got, r, 3, &err), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "connection reset");
    cr_expect_eq(eddy__inbox_cmds_status(EDDY_ERR_CLOSED, NULL, r, 3, &err), EDDY_ERR_CLOSED);
    cr_expect(strstr(err.detail, "freed"), "%s", err.detail);
    for (size_t i = 0; i < 3; i++)
        freeReplyObject(r[i]);
}

/* A start whose control loop was not ready in time says so alike on both front ends: a refusal
 * keeps its status, anything else is I/O, and the last failure's detail follows. */
Test(inbox, late_start_says_why) {
    eddy_error err, last;
    cr_expect_eq(eddy__inbox_late(NULL, &err), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "the backend could not be reached to open the reply stream");
    eddy__fail(&last, EDDY_ERR_AUTH, "WRONGPASS");
    cr_expect_eq(eddy__inbox_late(&last, &err), EDDY_ERR_AUTH);
    cr_expect_eq(err.status, EDDY_ERR_AUTH);
    cr_expect_str_eq(err.detail,
                     "the backend could not be reached to open the reply stream: WRONGPASS");
    eddy__fail(&last, EDDY_ERR_TIMEOUT, "connect timed out");
    cr_expect_eq(eddy__inbox_late(&last, &err), EDDY_ERR_IO);
    cr_expect(strstr(err.detail, ": connect timed out"), "%s", err.detail);
}
