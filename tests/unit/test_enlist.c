/* SPDX-License-Identifier: BSD-3-Clause */
/* A late subscription's registration handshake (src/bus/enlist.h) with no server and no front
 * end: only the answer to the registration still out counts, a stop drops it, and a
 * subscription is listed only once its registration was answered well. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bus/enlist.h"
#include "error.h"
#include "raw.h"

static eddy__settings settings;
static eddy__requests *reqs;
static eddy__retention_counters counters;
static eddy__inbox *ib;
static eddy__sub *sub;

static eddy_status handle(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

static void setup(void) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.ns = "t";
    cr_assert_eq(eddy__settings_copy(&settings, &us, NULL), EDDY_OK);
    reqs = eddy__requests_new(&settings);
    ib = eddy__inbox_new(&settings, reqs, &counters, 1000);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "a";
    spec.pattern = "x.a";
    spec.group = "a";
    spec.handler = handle;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub, NULL), EDDY_OK);
    cr_assert(reqs && ib);
}

static void teardown(void) {
    eddy__sub_free(sub);
    eddy__inbox_free(ib);
    eddy__requests_free(reqs);
    eddy__settings_free(&settings);
}

TestSuite(enlist, .init = setup, .fini = teardown);

/* Answers a registration's commands with n replies of `text`. */
static bool answer(eddy__enlist *e, unsigned ticket, const eddy__cmdlist *cmds, const char *text,
                   eddy_status *res, eddy_error *err) {
    redisReply *r[8] = {NULL};
    cr_assert_leq(cmds->n, 8);
    for (size_t i = 0; i < cmds->n; i++)
        r[i] = raw_parse(text);
    bool taken = eddy__enlist_feed(e, ticket, sub, EDDY_OK, NULL, r, cmds->n, res, err);
    for (size_t i = 0; i < cmds->n; i++)
        freeReplyObject(r[i]);
    return taken;
}

Test(enlist, listed_once_answered_well) {
    eddy__enlist e = {0};
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    unsigned t = 0;
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 1000, &cmds, &t), EDDY_OK);
    cr_expect_gt(cmds.n, 0, "the registration is sent");
    cr_expect(eddy__enlist_out(&e), "out before it is sent: an answer may come inside the send");
    cr_expect_not(sub->listed, "not in the heartbeats before its answer");
    eddy_status res = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_expect(answer(&e, t, &cmds, ":1\r\n", &res, &err));
    cr_expect_eq(res, EDDY_OK);
    cr_expect(sub->listed);
    cr_expect_not(eddy__enlist_out(&e));
    eddy__cmdlist_reset(&cmds);
}

Test(enlist, an_error_reply_or_a_lost_connection_fails_it) {
    eddy__enlist e = {0};
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    unsigned t = 0;
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 1000, &cmds, &t), EDDY_OK);
    eddy_status res = EDDY_OK;
    eddy_error err = {0};
    cr_expect(answer(&e, t, &cmds, "-ERR nope\r\n", &res, &err));
    cr_expect_eq(res, EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "subscription registry"), "%s", err.detail);
    cr_expect_not(sub->listed);
    cr_expect_not(eddy__enlist_out(&e));

    eddy__cmdlist_reset(&cmds);
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 1000, &cmds, &t), EDDY_OK);
    eddy_error lost;
    eddy__fail(&lost, EDDY_ERR_IO, "connection lost");
    res = EDDY_OK;
    cr_expect(eddy__enlist_feed(&e, t, sub, EDDY_ERR_IO, &lost, NULL, cmds.n, &res, &err));
    cr_expect_eq(res, EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "connection lost");
    cr_expect_not(sub->listed);
    eddy__cmdlist_reset(&cmds);
}

Test(enlist, a_stop_makes_the_answer_stale) {
    eddy__enlist e = {0};
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    unsigned t = 0;
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 1000, &cmds, &t), EDDY_OK);
    eddy__enlist_drop(&e); /* the bus stopped */
    cr_expect_not(eddy__enlist_out(&e), "a stopped subscription waits for nothing");
    eddy_status res = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_expect_not(answer(&e, t, &cmds, ":1\r\n", &res, &err), "its answer is dropped");
    cr_expect_eq(res, EDDY_ERR_IO, "untouched");
    cr_expect_not(sub->listed);
    eddy__cmdlist_reset(&cmds);
}

Test(enlist, only_the_last_registration_counts) {
    eddy__enlist e = {0};
    eddy__cmdlist a, b;
    eddy__cmdlist_init(&a);
    eddy__cmdlist_init(&b);
    unsigned old = 0, now = 0;
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 1000, &a, &old), EDDY_OK);
    eddy__enlist_drop(&e);                                                  /* stopped, */
    cr_assert_eq(eddy__enlist_begin(&e, ib, sub, 2000, &b, &now), EDDY_OK); /* started again */
    cr_expect_neq(old, now);
    eddy_status res = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_expect_not(answer(&e, old, &a, "-ERR old\r\n", &res, &err), "the old answer is stale");
    cr_expect(eddy__enlist_out(&e), "the new one is still out");
    cr_expect(answer(&e, now, &b, ":1\r\n", &res, &err));
    cr_expect_eq(res, EDDY_OK);
    cr_expect(sub->listed);
    cr_expect_not(answer(&e, now, &b, ":1\r\n", &res, &err), "an answer counts once");
    eddy__cmdlist_reset(&a);
    eddy__cmdlist_reset(&b);
}

Test(enlist, no_control_loop_sends_nothing) {
    eddy__enlist e = {0};
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    unsigned t = 0;
    cr_assert_eq(eddy__enlist_begin(&e, NULL, sub, 1000, &cmds, &t), EDDY_OK);
    cr_expect_eq(cmds.n, 0);
    eddy_status res = EDDY_ERR_IO;
    eddy_error err = {0};
    cr_expect(eddy__enlist_feed(&e, t, sub, EDDY_OK, NULL, NULL, 0, &res, &err));
    cr_expect_eq(res, EDDY_OK);
    cr_expect(sub->listed);
}

/* A start lists every subscription at once; the heartbeat renews the listed ones only, and a
 * stop takes them all out again. */
Test(enlist, a_start_lists_all_and_the_heartbeat_renews_the_listed) {
    eddy__subs all = {0};
    cr_assert_eq(eddy__subs_reserve(&all, 2), EDDY_OK);
    eddy__subs_append(&all, sub);
    eddy__sub **buf = NULL;
    size_t cap = 0;
    cr_expect_eq(eddy__enlist_heartbeat(&all, &buf, &cap), 0, "nothing listed before a start");
    eddy__enlist_start(&all);
    cr_expect(sub->listed);
    cr_expect_eq(eddy__enlist_heartbeat(&all, &buf, &cap), 1);
    cr_expect_eq(buf[0], sub);
    cr_expect_geq(cap, 1);
    eddy__subs_unlist(&all);
    cr_expect_eq(eddy__enlist_heartbeat(&all, &buf, &cap), 0, "a stop unlists");
    free(buf);
    all.n = 0; /* sub is the fixture's */
    free(all.v);
}
