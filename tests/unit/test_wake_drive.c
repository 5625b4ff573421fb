/* SPDX-License-Identifier: BSD-3-Clause */
/* The wake connection's steps with no server (src/bus/wake_drive.h): when it idles and how
 * long, what it sends and how long that blocks, whom its replies wake (the consumer, then its
 * owner through the front end's callback) and that a reply of the wrong shape is logged. The
 * wake-up's own plans and ids are test_wakeup.c's. */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/consumer.h"
#include "bus/sub.h"
#include "bus/wake_drive.h"
#include "config/settings.h"
#include "raw.h"

static eddy__settings settings;
static eddy__sub *sub;
static eddy__consumer *consumer;
static eddy__wakeup *w;
static eddy__cmdlist cmds;
static int owner; /* the front end's record of the consumer */
static int woken_n, warned;
static void *woken_owner;

static eddy_status noop(eddy_delivery *d, void *u) {
    (void)d, (void)u;
    return EDDY_OK;
}

static void on_woken(void *o, void *user) {
    cr_assert_eq(user, &cmds, "the caller's user is passed through");
    woken_owner = o;
    woken_n++;
}

static void on_log(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == EDDY_LOG_WARN && strstr(msg, "unexpected shape"))
        warned++;
}

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = "me";
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "sub";
    spec.pattern = "jobs";
    spec.group = "g";
    spec.handler = noop;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub, NULL), EDDY_OK);
    cr_assert(w = eddy__wakeup_new(10));
    cr_assert(consumer = eddy__consumer_new(&settings, sub));
    eddy__consumer_share_wakeup(consumer, w, &owner);
    eddy__cmdlist_init(&cmds);
    woken_n = warned = 0;
    woken_owner = NULL;
}

static void teardown(void) {
    eddy__cmdlist_reset(&cmds);
    eddy__consumer_free(consumer);
    eddy__wakeup_free(w);
    eddy__sub_free(sub);
    eddy__settings_free(&settings);
}

TestSuite(wake_drive, .init = setup, .fini = teardown);

/* Feeds one RESP reply to the one command planned. */
static void took(const char *resp) {
    eddy__logger log = {on_log, NULL};
    redisReply *r = raw_parse(resp);
    eddy__wake_took(w, &cmds, &r, 1, on_woken, &cmds, &log);
    freeReplyObject(r);
}

Test(wake_drive, nothing_watched_idles_until_a_watch) {
    long long block = 7, idle = 0;
    cr_assert_not(eddy__wake_next(w, 1000, &cmds, &block, &idle));
    cr_expect_eq(cmds.n, 0);
    cr_expect_eq(idle, EDDY__WAKE_IDLE_MS);
}

Test(wake_drive, a_watched_stream_is_fixed_then_read_blocking_and_wakes_its_owner) {
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{t}:s:jobs", consumer, &replan), EDDY_OK);
    long long block = 7, idle = 0;
    cr_assert(eddy__wake_next(w, 1000, &cmds, &block, &idle));
    cr_expect_eq(cmds.n, 1);
    cr_expect_eq(block, -1, "fixing an id blocks nothing");
    took("*0\r\n");
    cr_expect_eq(woken_n, 1, "its id fixed: the watcher reads once");
    cr_expect_eq(woken_owner, &owner);
    cr_assert(eddy__wake_next(w, 1000, &cmds, &block, &idle));
    cr_expect_eq(cmds.n, 1, "planned again from scratch");
    cr_expect_eq(block, 1000);
    took("*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n");
    cr_expect_eq(woken_n, 2, "news: woken again");
    cr_expect_eq(warned, 0);
}

Test(wake_drive, a_reply_of_the_wrong_shape_is_logged_and_wakes_nobody) {
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{t}:s:jobs", consumer, &replan), EDDY_OK);
    long long block, idle;
    cr_assert(eddy__wake_next(w, 1000, &cmds, &block, &idle));
    took(":5\r\n");
    cr_expect_eq(warned, 1);
    cr_expect_eq(woken_n, 0);
}
