/* SPDX-License-Identifier: BSD-3-Clause */
/* A stopping bus's way out (src/bus/stop_flow.h) with no server: the rounds it plans (checked
 * as text), what a reply leads to, and what is logged: the leave, then for a random instance
 * the list and the destroys (nothing for a named one), a failed leave that still drops, a bus
 * being freed that stops there, a destroy's error reply that is no failure, and a failed drop
 * round that ends the flow with one warning. Without an inbox the flow starts at the drop. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/stop_flow.h"
#include "config/settings.h"
#include "raw.h"

static eddy__settings settings;
static eddy__sub *sub;
static eddy__stop_flow flow;
static int nwarned;
static char warned[512];

static void log_hook(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == EDDY_LOG_WARN) {
        nwarned++;
        snprintf(warned, sizeof(warned), "%s", msg);
    }
}

/* Settings with ns "t", the given instance (NULL: random), and a fanout subscription. */
static void setup_with(const char *instance) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = instance;
    s.log = log_hook;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "f";
    spec.pattern = "a.*";
    spec.shape = EDDY_FANOUT;
    spec.handler = (eddy_handler_fn)1;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub, NULL), EDDY_OK);
    nwarned = 0;
}

static eddy__requests *reqs;
static eddy__retention_counters counters;
static eddy__inbox *inbox;

static void teardown(void) {
    eddy__stop_flow_reset(&flow);
    eddy__inbox_free(inbox);
    inbox = NULL;
    eddy__requests_free(reqs);
    reqs = NULL;
    eddy__sub_free(sub);
    sub = NULL;
    eddy__settings_free(&settings);
}

TestSuite(stop_flow, .fini = teardown);

static const char *cmd_text(size_t i) {
    static char buf[1024];
    buf[0] = '\0';
    const eddy__cmd *c = &flow.cmds.cmds[i];
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

/* Feeds one parsed RESP reply per command. */
static eddy__stop_step feed_resp(const char *const *resp, size_t n) {
    redisReply *r[4] = {0};
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(r[i] = raw_parse(resp[i]));
    eddy__stop_step step = eddy__stop_flow_feed(&flow, EDDY_OK, r, NULL, &sub, 1);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
    return step;
}

Test(stop_flow, a_named_instance_sends_nothing) {
    setup_with("named");
    cr_expect_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(stop_flow, lists_the_subjects_then_destroys_the_matching_groups) {
    setup_with(NULL);
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_LIST);
    cr_assert_eq(flow.cmds.n, 1);
    cr_expect_str_eq(cmd_text(0), "SMEMBERS {t}:subjects");
    const char *list[] = {"*3\r\n$3\r\na.x\r\n$1\r\nb\r\n$3\r\na.y\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__STOP_DESTROY);
    cr_assert_eq(flow.cmds.n, 2, "one destroy per matching stream");
    char want[256];
    snprintf(want, sizeof(want), "XGROUP DESTROY {t}:s:a.y %s", sub->group);
    cr_expect_str_eq(cmd_text(1), want);
    /* A stream gone answers an error: no failure of the drop. */
    const char *destroyed[] = {":1\r\n", "-ERR no such key\r\n"};
    cr_expect_eq(feed_resp(destroyed, 2), EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(stop_flow, no_matching_stream_ends_without_a_destroy) {
    setup_with(NULL);
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_LIST);
    const char *list[] = {"*1\r\n$1\r\nb\r\n"};
    cr_expect_eq(feed_resp(list, 1), EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(stop_flow, a_failed_round_ends_the_flow_with_one_warning) {
    setup_with(NULL);
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_LIST);
    eddy_error e = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__stop_flow_feed(&flow, EDDY_ERR_IO, none, &e, &sub, 1), EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0, "nothing more is sent");
    cr_expect_eq(nwarned, 1);
    cr_expect(strstr(warned, "connection reset"), "the round's failure: %s", warned);
}

Test(stop_flow, a_failed_destroy_round_is_logged) {
    setup_with(NULL);
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_LIST);
    const char *list[] = {"*1\r\n$3\r\na.x\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__STOP_DESTROY);
    eddy_error e = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__stop_flow_feed(&flow, EDDY_ERR_IO, none, &e, &sub, 1), EDDY__STOP_DONE);
    cr_expect_eq(nwarned, 1);
    cr_expect(strstr(warned, "connection reset"), "%s", warned);
}

Test(stop_flow, a_bus_being_freed_is_no_failure) {
    setup_with(NULL);
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, NULL, &sub, 1), EDDY__STOP_LIST);
    const char *list[] = {"*1\r\n$3\r\na.x\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__STOP_DESTROY);
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__stop_flow_feed(&flow, EDDY_ERR_CLOSED, none, NULL, &sub, 1),
                 EDDY__STOP_DONE);
    cr_expect_eq(nwarned, 0);
}

/* An activation's inbox, for the leave. */
static void with_inbox(void) {
    reqs = eddy__requests_new(&settings);
    inbox = eddy__inbox_new(&settings, reqs, &counters, 1000);
    cr_assert(reqs && inbox);
}

Test(stop_flow, leaves_then_drops) {
    setup_with(NULL);
    with_inbox();
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, inbox, &sub, 1), EDDY__STOP_LEAVE);
    cr_assert_eq(flow.cmds.n, 2);
    cr_expect(strncmp(cmd_text(0), "ZREM {t}:", 9) == 0, "%s", cmd_text(0));
    char want[300];
    snprintf(want, sizeof(want), "DEL %s", eddy__inbox_key(inbox));
    cr_expect_str_eq(cmd_text(1), want);
    const char *left[] = {":1\r\n", ":1\r\n"};
    cr_assert_eq(feed_resp(left, 2), EDDY__STOP_LIST);
    cr_expect_str_eq(cmd_text(0), "SMEMBERS {t}:subjects");
    cr_expect_eq(nwarned, 0);
}

Test(stop_flow, a_failed_leave_is_logged_and_the_drop_still_tried) {
    setup_with(NULL);
    with_inbox();
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, inbox, &sub, 1), EDDY__STOP_LEAVE);
    const char *left[] = {":1\r\n", "-ERR nope\r\n"};
    cr_assert_eq(feed_resp(left, 2), EDDY__STOP_LIST);
    cr_expect_eq(nwarned, 1);
    cr_expect(strstr(warned, "registry") && strstr(warned, "ERR nope"), "%s", warned);
}

Test(stop_flow, a_named_instance_only_leaves) {
    setup_with("named");
    with_inbox();
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, inbox, &sub, 1), EDDY__STOP_LEAVE);
    const char *left[] = {":1\r\n", ":1\r\n"};
    cr_expect_eq(feed_resp(left, 2), EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
}

Test(stop_flow, a_bus_being_freed_stops_after_the_leave) {
    setup_with(NULL);
    with_inbox();
    cr_assert_eq(eddy__stop_flow_begin(&flow, &settings, inbox, &sub, 1), EDDY__STOP_LEAVE);
    cr_expect_eq(eddy__stop_flow_feed(&flow, EDDY_ERR_CLOSED, NULL, NULL, &sub, 1),
                 EDDY__STOP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}
