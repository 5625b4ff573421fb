/* SPDX-License-Identifier: BSD-3-Clause */
/* The stop's fanout-group drop (src/bus/drop_flow.h) with no server: the rounds it plans
 * (checked as text), what a reply leads to, and what is logged: nothing for a named instance,
 * the list then the destroys for a random one, a destroy's error reply that is no failure, and
 * a failed round that ends the flow with one warning. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/drop_flow.h"
#include "config/settings.h"
#include "raw.h"

static eddy__settings settings;
static eddy__sub *sub;
static eddy__drop_flow flow;
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

static void teardown(void) {
    eddy__drop_flow_reset(&flow);
    eddy__sub_free(sub);
    sub = NULL;
    eddy__settings_free(&settings);
}

TestSuite(drop_flow, .fini = teardown);

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
static eddy__drop_step feed_resp(const char *const *resp, size_t n) {
    redisReply *r[4] = {0};
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(r[i] = raw_parse(resp[i]));
    eddy__drop_step step = eddy__drop_flow_feed(&flow, EDDY_OK, r, NULL, &sub, 1);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
    return step;
}

Test(drop_flow, a_named_instance_sends_nothing) {
    setup_with("named");
    cr_expect_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(drop_flow, lists_the_subjects_then_destroys_the_matching_groups) {
    setup_with(NULL);
    cr_assert_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_LIST);
    cr_assert_eq(flow.cmds.n, 1);
    cr_expect_str_eq(cmd_text(0), "SMEMBERS {t}:subjects");
    const char *list[] = {"*3\r\n$3\r\na.x\r\n$1\r\nb\r\n$3\r\na.y\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__DROP_DESTROY);
    cr_assert_eq(flow.cmds.n, 2, "one destroy per matching stream");
    char want[256];
    snprintf(want, sizeof(want), "XGROUP DESTROY {t}:s:a.y %s", sub->group);
    cr_expect_str_eq(cmd_text(1), want);
    /* A stream gone answers an error: no failure of the drop. */
    const char *destroyed[] = {":1\r\n", "-ERR no such key\r\n"};
    cr_expect_eq(feed_resp(destroyed, 2), EDDY__DROP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(drop_flow, no_matching_stream_ends_without_a_destroy) {
    setup_with(NULL);
    cr_assert_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_LIST);
    const char *list[] = {"*1\r\n$1\r\nb\r\n"};
    cr_expect_eq(feed_resp(list, 1), EDDY__DROP_DONE);
    cr_expect_eq(flow.cmds.n, 0);
    cr_expect_eq(nwarned, 0);
}

Test(drop_flow, a_failed_round_ends_the_flow_with_one_warning) {
    setup_with(NULL);
    cr_assert_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_LIST);
    eddy_error e = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__drop_flow_feed(&flow, EDDY_ERR_IO, none, &e, &sub, 1), EDDY__DROP_DONE);
    cr_expect_eq(flow.cmds.n, 0, "nothing more is sent");
    cr_expect_eq(nwarned, 1);
    cr_expect(strstr(warned, "connection reset"), "the round's failure: %s", warned);
}

Test(drop_flow, a_failed_destroy_round_is_logged) {
    setup_with(NULL);
    cr_assert_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_LIST);
    const char *list[] = {"*1\r\n$3\r\na.x\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__DROP_DESTROY);
    eddy_error e = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__drop_flow_feed(&flow, EDDY_ERR_IO, none, &e, &sub, 1), EDDY__DROP_DONE);
    cr_expect_eq(nwarned, 1);
    cr_expect(strstr(warned, "connection reset"), "%s", warned);
}

Test(drop_flow, a_bus_being_freed_is_no_failure) {
    setup_with(NULL);
    cr_assert_eq(eddy__drop_flow_begin(&flow, &settings, &sub, 1), EDDY__DROP_LIST);
    const char *list[] = {"*1\r\n$3\r\na.x\r\n"};
    cr_assert_eq(feed_resp(list, 1), EDDY__DROP_DESTROY);
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__drop_flow_feed(&flow, EDDY_ERR_CLOSED, none, NULL, &sub, 1),
                 EDDY__DROP_DONE);
    cr_expect_eq(nwarned, 0);
}
