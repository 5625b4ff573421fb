/* SPDX-License-Identifier: BSD-3-Clause */
/* The consumer state machine with no server and no loop: replies are written as RESP text,
 * parsed by hiredis, and fed in; the commands it plans are checked as text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/consumer.h"
#include "bus/delivery.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "raw.h"
#include "timing.h"
#include "util/functions.h"

/* The i-th planned command as "ARG ARG ...". */
static const char *cmd_text(const eddy__plan *p, size_t i) {
    static char buf[4096];
    buf[0] = '\0';
    const eddy__cmd *c = &p->cmds.cmds[i];
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

/* cmd_text of a hand-back's XCLAIM with its minimum idle time (the time since the delivery was
 * taken, which depends on the clock) replaced by "<idle>", after checking it is a number in
 * [0, max_idle]. */
static const char *hold_text(const eddy__plan *p, size_t i, long long max_idle) {
    const eddy__cmd *c = &p->cmds.cmds[i];
    cr_assert_geq(c->argc, 5);
    char *end = NULL;
    long long idle = strtoll(c->argv[4], &end, 10);
    cr_assert(end && *end == '\0' && idle >= 0 && idle <= max_idle, "min idle %s", c->argv[4]);
    static char buf[4096];
    buf[0] = '\0';
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, a == 4 ? "<idle>" : c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

static eddy__settings settings;
static eddy__sub *sub;
static eddy__consumer *consumer;

static eddy_status noop(eddy_delivery *d, void *u) {
    (void)d, (void)u;
    return EDDY_OK;
}

static void make(const char *pattern, eddy_delivery_mode mode, unsigned max_deliveries) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = "me";
    s.max_deliveries = max_deliveries;
    s.redelivery_idle_ms = 1000;
    s.read_batch = 10;
    s.block_ms = 500;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "sub";
    spec.pattern = pattern;
    spec.group = "g";
    spec.delivery = mode;
    spec.handler = noop;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub, NULL), EDDY_OK);
    consumer = eddy__consumer_new(&settings, sub);
    cr_assert(consumer);
}

static void teardown(void) {
    eddy__consumer_free(consumer);
    eddy__sub_free(sub);
    eddy__settings_free(&settings);
}

/* Plans at `now`, feeds the given replies (one RESP text per command), collects deliveries. */
static void step(long long now, eddy__plan *p, const char *const *replies, size_t n,
                 eddy__delivery_list *out) {
    cr_assert_eq(p->cmds.n, n, "planned %zu commands, test has %zu replies (first: %s)", p->cmds.n,
                 n, p->cmds.n ? cmd_text(p, 0) : "-");
    redisReply *r[32];
    for (size_t i = 0; i < n; i++)
        r[i] = raw_parse(replies[i]);
    cr_assert_eq(eddy__consumer_feed(consumer, now, eddy_now_ms(), p, r, n, out), EDDY_OK);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
}

static void plan(long long now, eddy__plan *p) {
    eddy__plan_reset(p);
    cr_assert_eq(eddy__consumer_plan(consumer, now, p), EDDY_OK);
}

#define OK "+OK\r\n"
/* XINFO STREAM's fields that the server-behind check reads (id of 3 characters). */
#define STREAM_INFO(last_id, added)                                                                \
    "*4\r\n$17\r\nlast-generated-id\r\n$3\r\n" last_id "\r\n$13\r\nentries-added\r\n:" added "\r"  \
    "\n"
#define EMPTY_READ "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*0\r\n"
/* Brings a literal AtLeastOnce consumer to its first live read. */
static void to_live(eddy__plan *p, eddy__delivery_list *out) {
    plan(0, p);
    cr_assert_str_eq(cmd_text(p, 0), "XGROUP CREATE {t}:s:jobs g $ MKSTREAM");
    /* The subject joins the subject set, as a publish's does, for the clean-up to find. */
    cr_assert_str_eq(cmd_text(p, 1), "SADD {t}:subjects jobs");
    cr_assert(!eddy__consumer_ready(consumer));
    step(0, p, (const char *[]){"-BUSYGROUP Consumer Group name already exists\r\n", ":0\r\n"}, 2,
         out);
    cr_assert(eddy__consumer_ready(consumer));
    plan(0, p);
    cr_assert_str_eq(cmd_text(p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    step(0, p, (const char *[]){EMPTY_READ}, 1, out);
    plan(0, p);
    cr_assert_str_eq(cmd_text(p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 STREAMS {t}:s:jobs >");
    cr_assert_eq(p->block_ms, 500);
}

Test(consumer, live_read_delivers_and_acknowledges_after_success, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    const char *reply = "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*2\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"
                        "*2\r\n$3\r\n1-2\r\n*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n";
    step(0, &p, (const char *[]){reply}, 1, &out);
    cr_assert_eq(out.n, 1, "the malformed entry is not delivered");
    eddy_delivery *d = out.v[0];
    cr_expect_str_eq(eddy_delivery_entry_id(d), "1-1");
    cr_expect_eq(eddy_delivery_attempt(d), 1);
    cr_expect_str_eq(eddy_delivery_subject(d), "jobs");
    eddy_event_meta meta;
    cr_expect_eq(eddy_delivery_stored_meta(d, &meta), 0, "a plain publish has no stored metadata");
    cr_expect_eq(eddy_delivery_is_request(d), 0);
    cr_expect_eq(eddy__consumer_outstanding(consumer), 1);
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    out.n = 0;
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    plan(10, &p);
    /* Acknowledgement first, then the dead letter with its ack in one transaction, then a read
     * that does not block (no blocking read behind a dead letter: a cut read would lose the
     * transaction's answer, and the entry would be dead-lettered twice). */
    cr_assert_eq(p.cmds.n, 6);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    cr_expect_str_eq(cmd_text(&p, 1), "MULTI");
    cr_expect(strstr(cmd_text(&p, 2),
                     "XADD {t}:dlq:g * _dlq_subject jobs _dlq_entry 1-2 "
                     "_dlq_deliveries 1 _dlq_reason malformed _dlq_group g foo bar"),
              "%s", cmd_text(&p, 2));
    cr_expect_str_eq(cmd_text(&p, 3), "XACK {t}:s:jobs g 1-2");
    cr_expect_str_eq(cmd_text(&p, 4), "EXEC");
    cr_expect_str_eq(cmd_text(&p, 5), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, -1);
    step(10, &p,
         (const char *[]){":1\r\n", OK, "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n$3\r\n9-9\r\n:1\r\n",
                          "*-1\r\n"},
         6, &out);
    plan(10, &p);
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0);
    cr_expect_eq(atomic_load(&sub->stats.dead_lettered), 1);
    cr_expect_eq(atomic_load(&sub->stats.malformed), 1);
    cr_expect_eq(atomic_load(&sub->stats.handled), 1);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, failed_delivery_is_not_acknowledged, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    settings.redelivery_backoff_ms = 0; /* off: it comes back after redelivery_idle_ms */
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    const char *reply = "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*1\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n";
    step(0, &p, (const char *[]){reply}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_HANDLER_FAILED, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 1, "no XACK for a failure: %s", cmd_text(&p, 0));
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0);
    cr_expect_eq(atomic_load(&sub->stats.failed), 1);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, claimed_entry_over_max_deliveries_is_dead_lettered, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 3);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){"*-1\r\n"}, 1, &out); /* the read timed out */
    plan(2000, &p);                                    /* past the claim interval */
    cr_assert_str_eq(cmd_text(&p, 0), "XAUTOCLAIM {t}:s:jobs g me 1000 0-0 COUNT 10");
    const char *claim = "*3\r\n$3\r\n0-0\r\n*2\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"
                        "*2\r\n$3\r\n1-2\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\nb\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"
                        "*0\r\n";
    step(2000, &p, (const char *[]){claim}, 1, &out);
    plan(2000, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XPENDING {t}:s:jobs g 1-1 1-1 1 me");
    cr_expect_str_eq(cmd_text(&p, 1), "XPENDING {t}:s:jobs g 1-2 1-2 1 me");
    step(2000, &p,
         (const char *[]){"*1\r\n*4\r\n$3\r\n1-1\r\n$2\r\nme\r\n:0\r\n:4\r\n",
                          "*1\r\n*4\r\n$3\r\n1-2\r\n$2\r\nme\r\n:0\r\n:2\r\n"},
         2, &out);
    cr_assert_eq(out.n, 1, "only the entry under the limit is delivered");
    cr_expect_str_eq(eddy_delivery_entry_id(out.v[0]), "1-2");
    cr_expect_eq(eddy_delivery_attempt(out.v[0]), 2);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(2000, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-2");
    cr_expect_str_eq(cmd_text(&p, 1), "MULTI");
    cr_expect(
        strstr(cmd_text(&p, 2), "_dlq_entry 1-1 _dlq_deliveries 3 _dlq_reason max_deliveries"),
        "%s", cmd_text(&p, 2));
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, lost_connection_resends_unconfirmed_acks_and_rechecks_groups, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    const char *reply = "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*1\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n";
    step(0, &p, (const char *[]){reply}, 1, &out);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    /* The connection dies before the replies arrive. */
    redisReply *none[2] = {NULL, NULL};
    cr_expect_eq(eddy__consumer_feed(consumer, 0, eddy_now_ms(), &p, none, p.cmds.n, &out),
                 EDDY_ERR_IO);
    eddy__consumer_reset(consumer);
    plan(20, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    cr_expect_str_eq(cmd_text(&p, 1), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, pattern_discovers_matching_subjects_only, .fini = teardown) {
    make("shop.*", EDDY_AT_MOST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "SMEMBERS {t}:subjects");
    cr_assert(!eddy__consumer_ready(consumer));
    step(
        0, &p,
        (const char *[]){"*4\r\n$6\r\nshop.a\r\n$8\r\nshop.a.b\r\n$5\r\nother\r\n$6\r\nshop.b\r\n"},
        1, &out);
    plan(0, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:shop.a g $ MKSTREAM");
    cr_expect_str_eq(cmd_text(&p, 1), "XGROUP CREATE {t}:s:shop.b g $ MKSTREAM");
    step(0, &p, (const char *[]){OK, OK}, 2, &out);
    cr_assert(eddy__consumer_ready(consumer));
    plan(0, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 BLOCK 250 NOACK STREAMS "
                                      "{t}:s:shop.a {t}:s:shop.b > >");
    step(0, &p, (const char *[]){"*-1\r\n"}, 1, &out);
    /* A subject that appears later is newer than the subscription: its group starts at 0. */
    plan(300, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "SMEMBERS {t}:subjects");
    step(300, &p, (const char *[]){"*2\r\n$6\r\nshop.a\r\n$6\r\nshop.c\r\n"}, 1, &out);
    plan(300, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:shop.c g 0 MKSTREAM");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

#define ONE_ENTRY(id)                                                                              \
    "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*1\r\n"                                                      \
    "*2\r\n$3\r\n" id "\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"                 \
    "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"

Test(consumer, unavailable_status_has_a_name_and_text) {
    cr_expect_str_eq(eddy_status_name(EDDY_ERR_UNAVAILABLE), "EDDY_ERR_UNAVAILABLE");
    cr_expect(strstr(eddy_status_str(EDDY_ERR_UNAVAILABLE), "nothing can take the message"));
    cr_expect_eq(EDDY_ERR_UNAVAILABLE + 1, EDDY_ERR_NOT_FOUND, "new statuses go at the end");
}

/* A hand-back takes the entry back only while it is still this consumer's: its minimum idle time
 * is how long ago the delivery was taken (so a claim by another consumer since, which resets the
 * idle time, makes the XCLAIM a no-op). */
Test(consumer, hand_back_min_idle_is_the_time_since_the_delivery, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 2);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(1000, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    cr_expect_eq(out.v[0]->received_ms, 1000, "the feed's clock, given by the front end");
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
    out.n = 0;
    plan(6000, &p);            /* as if the handler had run for 5 s */
    cr_assert_eq(p.cmds.n, 2); /* the hand-back, and a read that does not block */
    const eddy__cmd *c = &p.cmds.cmds[0];
    cr_expect_eq(strtoll(c->argv[4], NULL, 10), 4999, "min idle %s", c->argv[4]);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* A hand-back leaves the entry pending and sets its delivery count back, in a round trip of
 * its own (no blocking read behind it); it is counted in held, not in failed. */
Test(consumer, hand_back_sets_the_delivery_count_back, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 2);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    cr_expect_eq(eddy_delivery_attempt(out.v[0]), 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 2, "the hand-back and a read: %s", cmd_text(&p, p.cmds.n - 1));
    cr_expect_str_eq(hold_text(&p, 0, 60000),
                     "XCLAIM {t}:s:jobs g me <idle> 1-1 RETRYCOUNT 0 JUSTID");
    cr_expect_str_eq(cmd_text(&p, 1),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 490 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, 490, "a blocking read behind it (the hand-back is idempotent)");
    step(10, &p, (const char *[]){"*1\r\n$3\r\n1-1\r\n", "*-1\r\n"}, 2, &out);
    cr_expect_eq(atomic_load(&sub->stats.held), 1);
    cr_expect_eq(atomic_load(&sub->stats.failed), 0);
    cr_expect_eq(atomic_load(&sub->stats.handled), 0);
    cr_expect_eq(atomic_load(&sub->stats.delivered), 1);
    plan(10, &p);
    cr_assert(strncmp(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 BLOCK", 36) == 0, "%s",
              cmd_text(&p, 0));
    step(10, &p, (const char *[]){"*-1\r\n"}, 1, &out);

    /* Claimed again: the claim counted one delivery (count 1), so it is attempt 1 again, far
     * from max_deliveries however often it was handed back. */
    const char *claim = "*3\r\n$3\r\n0-0\r\n*1\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"
                        "*0\r\n";
    for (int round = 0; round < 3; round++) {
        long long now = 2000 + round * 2000;
        plan(now, &p);
        cr_assert_str_eq(cmd_text(&p, 0), "XAUTOCLAIM {t}:s:jobs g me 1000 0-0 COUNT 10");
        step(now, &p, (const char *[]){claim}, 1, &out);
        plan(now, &p);
        cr_assert_str_eq(cmd_text(&p, 0), "XPENDING {t}:s:jobs g 1-1 1-1 1 me");
        step(now, &p, (const char *[]){"*1\r\n*4\r\n$3\r\n1-1\r\n$2\r\nme\r\n:0\r\n:1\r\n"}, 1,
             &out);
        cr_assert_eq(out.n, 1, "round %d: not dead-lettered", round);
        cr_expect_eq(eddy_delivery_attempt(out.v[0]), 1);
        eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
        out.n = 0;
        plan(now, &p);
        cr_assert_eq(p.cmds.n, 2); /* the hand-back, and a read that does not block */
        cr_expect_str_eq(hold_text(&p, 0, 60000),
                         "XCLAIM {t}:s:jobs g me <idle> 1-1 RETRYCOUNT 0 JUSTID");
        step(now, &p, (const char *[]){"*1\r\n$3\r\n1-1\r\n", "*-1\r\n"}, 2, &out);
        plan(now, &p);
        step(now, &p, (const char *[]){"*-1\r\n"}, 1, &out); /* XAUTOCLAIM round over: read */
    }
    cr_expect_eq(atomic_load(&sub->stats.held), 4);
    cr_expect_eq(atomic_load(&sub->stats.redelivered), 0, "attempt stays 1");

    /* After a real failure (count 2), a hand-back of attempt 2 sets the count back to 1. */
    plan(10000, &p);
    step(10000, &p, (const char *[]){claim}, 1, &out);
    plan(10000, &p);
    step(10000, &p, (const char *[]){"*1\r\n*4\r\n$3\r\n1-1\r\n$2\r\nme\r\n:0\r\n:2\r\n"}, 1, &out);
    cr_assert_eq(out.n, 1);
    cr_expect_eq(eddy_delivery_attempt(out.v[0]), 2);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
    out.n = 0;
    plan(10000, &p);
    cr_expect_str_eq(hold_text(&p, 0, 60000),
                     "XCLAIM {t}:s:jobs g me <idle> 1-1 RETRYCOUNT 1 JUSTID");
    cr_expect_eq(atomic_load(&sub->stats.failed), 0);
    cr_expect_eq(atomic_load(&sub->stats.held), 5);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, lost_connection_resends_unconfirmed_hand_backs, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_str_eq(hold_text(&p, 0, 60000),
                     "XCLAIM {t}:s:jobs g me <idle> 1-1 RETRYCOUNT 0 JUSTID");
    redisReply *none[1] = {NULL};
    cr_expect_eq(eddy__consumer_feed(consumer, 0, eddy_now_ms(), &p, none, p.cmds.n, &out),
                 EDDY_ERR_IO);
    eddy__consumer_reset(consumer);
    plan(20, &p);
    /* Sent again before anything reads the entry (the recovery read counts a delivery). */
    cr_expect_str_eq(hold_text(&p, 0, 60000),
                     "XCLAIM {t}:s:jobs g me <idle> 1-1 RETRYCOUNT 0 JUSTID");
    cr_expect_str_eq(cmd_text(&p, 1), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM");
    cr_expect_str_eq(cmd_text(&p, 2), "XINFO STREAM {t}:s:jobs");
    step(20, &p, (const char *[]){"*1\r\n$3\r\n1-1\r\n", OK, STREAM_INFO("1-1", "1")}, 3, &out);
    plan(20, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* AtMostOnce: the entry was acknowledged when read; a hand-back is a failure like any other. */
Test(consumer, at_most_once_hand_back_is_a_failure, .fini = teardown) {
    make("jobs", EDDY_AT_MOST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g $ MKSTREAM");
    step(0, &p, (const char *[]){OK, ":1\r\n"}, 2, &out);
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 NOACK STREAMS {t}:s:jobs >");
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_UNAVAILABLE, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0, "%s", cmd_text(&p, 0));
    cr_expect_eq(atomic_load(&sub->stats.failed), 1);
    cr_expect_eq(atomic_load(&sub->stats.held), 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* ---- pausing ----------------------------------------------------------------------------- */

Test(consumer, paused_creates_groups_reads_nothing_and_resumes_with_its_history, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    cr_expect_eq(eddy__consumer_pause(sub, true), EDDY__WAKE_READ);
    cr_expect_eq(eddy__consumer_pause(sub, true), EDDY__WAKE_NONE, "paused already");
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g $ MKSTREAM",
                     "the group is created while paused");
    step(0, &p, (const char *[]){OK, "-ERR refused\r\n"}, 2, &out); /* only logged */
    cr_expect(eddy__consumer_ready(consumer));
    plan(0, &p);
    cr_expect_eq(p.cmds.n, 0, "no read, no claim: %s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_eq(p.idle_ms, 500);
    plan(5000, &p); /* long past the claim interval: still nothing */
    cr_expect_eq(p.cmds.n, 0);

    cr_expect_eq(eddy__consumer_pause(sub, false), EDDY__WAKE_IDLE);
    cr_expect_eq(eddy__consumer_pause(sub, false), EDDY__WAKE_NONE, "running already");
    plan(5000, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0",
                     "its own pending entries first");
    step(5000, &p, (const char *[]){EMPTY_READ}, 1, &out);
    plan(5000, &p);
    cr_assert_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 STREAMS {t}:s:jobs >");

    /* Paused while that read is out: what it returns is not handed out, and stays pending for
     * the history read after the resume. */
    cr_expect_eq(eddy__consumer_pause(sub, true), EDDY__WAKE_READ);
    step(5000, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_expect_eq(out.n, 0, "withheld");
    plan(5000, &p);
    cr_expect_eq(p.cmds.n, 0);
    cr_expect_eq(eddy__consumer_pause(sub, false), EDDY__WAKE_IDLE);
    plan(5000, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    step(5000, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_expect_eq(out.n, 0, "a history entry waits for its delivery count");
    plan(5000, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XPENDING {t}:s:jobs g 1-1 1-1 1 me");
    step(5000, &p, (const char *[]){"*1\r\n*4\r\n$3\r\n1-1\r\n$2\r\nme\r\n:5\r\n:2\r\n"}, 1, &out);
    cr_assert_eq(out.n, 1, "delivered after the resume");
    cr_expect_eq(eddy_delivery_attempt(out.v[0]), 2, "the withheld read counted");
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, a_paused_consumer_still_sends_what_was_settled, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    /* Paused while its handler runs: it finishes, and its acknowledgement goes out. */
    eddy__consumer_pause(sub, true);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 1, "the acknowledgement only");
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    step(10, &p, (const char *[]){":1\r\n"}, 1, &out);
    plan(10, &p);
    cr_expect_eq(p.cmds.n, 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, at_most_once_pause_lets_a_read_in_progress_deliver, .fini = teardown) {
    make("jobs", EDDY_AT_MOST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    step(0, &p, (const char *[]){OK, ":1\r\n"}, 2, &out);
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 NOACK STREAMS {t}:s:jobs >");
    /* NOACK took the entries off the pending list: cutting the read could lose them. */
    cr_expect_eq(eddy__consumer_pause(sub, true), EDDY__WAKE_NONE);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1, "what the read took is still delivered");
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(0, &p);
    cr_expect_eq(p.cmds.n, 0, "then nothing more");
    cr_expect_eq(eddy__consumer_pause(sub, false), EDDY__WAKE_IDLE);
    plan(0, &p);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 NOACK STREAMS {t}:s:jobs >");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* ---- planning while deliveries are outstanding ----------------------------------------- */

/* A live read's reply with entries 1-first .. 1-(first + n - 1) of {t}:s:jobs. */
static const char *live_reply(int first, int n) {
    static char buf[16384];
    int len = snprintf(buf, sizeof(buf), "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*%d\r\n", n);
    for (int i = first; i < first + n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "1-%d", i);
        len += snprintf(buf + len, sizeof(buf) - (size_t)len,
                        "*2\r\n$%zu\r\n%s\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n"
                        "$%zu\r\n%s\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n",
                        strlen(id), id, strlen(id), id);
    }
    cr_assert_lt((size_t)len, sizeof(buf));
    return buf;
}

Test(consumer, a_round_is_waited_for_as_one_batch, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 3)}, 1, &out);
    cr_assert_eq(out.n, 3);
    plan(10, &p);
    cr_expect_eq(p.cmds.n, 0, "planned %s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_eq(p.idle_ms, EDDY__ROUND_WAIT_MS - 10);
    cr_expect_not(eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL), "no wake yet");
    plan(20, &p);
    cr_expect_eq(p.cmds.n, 0, "the acknowledgements wait for the whole round");
    cr_expect_not(eddy__consumer_settle(consumer, out.v[1], EDDY_OK, NULL));
    cr_expect(eddy__consumer_settle(consumer, out.v[2], EDDY_OK, NULL), "the round is settled");
    out.n = 0;
    plan(30, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1 1-2 1-3");
    cr_expect_str_eq(cmd_text(&p, 1),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 470 STREAMS {t}:s:jobs >");
    step(30, &p, (const char *[]){":3\r\n", "*-1\r\n"}, 2, &out);
    plan(40, &p);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 460 STREAMS {t}:s:jobs >");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, outstanding_deliveries_leave_room_for_live_reads_only, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 2)}, 1, &out);
    cr_assert_eq(out.n, 2);
    cr_expect_eq(eddy__consumer_outstanding(consumer), 2);
    /* Both still held after the round's wait: a live read for the rest of the batch, with a
     * short block. */
    plan(EDDY__ROUND_WAIT_MS, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 8 BLOCK 100 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, EDDY__OUTSTANDING_BLOCK_MS);
    step(100, &p, (const char *[]){"*-1\r\n"}, 1, &out);
    /* One settles: its acknowledgement goes with a short blocking read, for one more. */
    cr_expect(eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL), "wakes an idle reader");
    plan(110, &p);
    cr_assert_eq(p.cmds.n, 2, "%s", cmd_text(&p, 0));
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    cr_expect_str_eq(cmd_text(&p, 1),
                     "XREADGROUP GROUP g me COUNT 9 BLOCK 100 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, EDDY__OUTSTANDING_BLOCK_MS);
    step(110, &p, (const char *[]){":1\r\n", "*-1\r\n"}, 2, &out);
    plan(120, &p);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 9 BLOCK 100 STREAMS {t}:s:jobs >");
    step(120, &p, (const char *[]){"*-1\r\n"}, 1, &out);
    /* The claim round is due (the interval is 500): it waits while one is outstanding. */
    plan(40, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 9 BLOCK 100 STREAMS {t}:s:jobs >");
    step(600, &p, (const char *[]){"*-1\r\n"}, 1, &out);
    /* Overdue by redelivery_idle_ms: no more live reads until it can run. */
    plan(1500, &p);
    cr_expect_eq(p.cmds.n, 0, "planned %s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_gt(p.idle_ms, 0);
    cr_expect_leq(p.idle_ms, EDDY__OUTSTANDING_BLOCK_MS);
    eddy__consumer_settle(consumer, out.v[1], EDDY_OK, NULL);
    out.n = 0;
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    plan(1500, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-2");
    cr_expect_str_eq(cmd_text(&p, 1), "XAUTOCLAIM {t}:s:jobs g me 1000 0-0 COUNT 10");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, a_full_batch_outstanding_plans_no_read, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 10)}, 1, &out);
    cr_assert_eq(out.n, 10);
    plan(EDDY__ROUND_WAIT_MS, &p);
    cr_expect_eq(p.cmds.n, 0, "planned %s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_eq(p.block_ms, -1);
    cr_expect_gt(p.idle_ms, 0);
    cr_expect_leq(p.idle_ms, EDDY__OUTSTANDING_BLOCK_MS);
    eddy__consumer_settle(consumer, out.v[9], EDDY_OK, NULL);
    plan(110, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-10");
    cr_expect_str_eq(cmd_text(&p, 1),
                     "XREADGROUP GROUP g me COUNT 1 BLOCK 100 STREAMS {t}:s:jobs >");
    step(110, &p, (const char *[]){":1\r\n", "*-1\r\n"}, 2, &out);
    plan(120, &p);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 1 BLOCK 100 STREAMS {t}:s:jobs >");
    /* A delivery no handler will see is dropped: it is no longer outstanding, and not
     * acknowledged. */
    eddy__consumer_drop(consumer, out.v[8]);
    cr_expect_eq(eddy__consumer_outstanding(consumer), 8);
    for (size_t i = 0; i < 8; i++)
        eddy__consumer_settle(consumer, out.v[i], EDDY_ERR_HANDLER_FAILED, NULL);
    out.n = 0;
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, history_after_a_reconnect_waits_for_outstanding_deliveries, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 1)}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy__consumer_reset(consumer);
    plan(EDDY__ROUND_WAIT_MS, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM");
    cr_expect_str_eq(cmd_text(&p, 1), "XINFO STREAM {t}:s:jobs");
    step(100, &p,
         (const char *[]){"-BUSYGROUP Consumer Group name already exists\r\n",
                          STREAM_INFO("1-1", "1")},
         2, &out);
    /* Its own pending entries could include the one a handler holds: nothing is read. */
    plan(110, &p);
    cr_expect_eq(p.cmds.n, 0, "planned %s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_gt(p.idle_ms, 0);
    cr_expect(eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL));
    out.n = 0;
    plan(120, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    cr_expect_str_eq(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, at_most_once_reads_live_while_deliveries_are_outstanding, .fini = teardown) {
    make("jobs", EDDY_AT_MOST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    step(0, &p, (const char *[]){OK, ":1\r\n"}, 2, &out);
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 10 BLOCK 500 NOACK STREAMS {t}:s:jobs >");
    step(0, &p, (const char *[]){live_reply(1, 3)}, 1, &out);
    cr_assert_eq(out.n, 3);
    plan(EDDY__ROUND_WAIT_MS, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_str_eq(cmd_text(&p, 0),
                     "XREADGROUP GROUP g me COUNT 7 BLOCK 100 NOACK STREAMS {t}:s:jobs >");
    for (size_t i = 0; i < out.n; i++)
        eddy__consumer_settle(consumer, out.v[i], EDDY_OK, NULL);
    out.n = 0;
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* An AtLeastOnce pattern subscription with no subject yet idles until its next discovery: no
 * claim round is due without a stream (it used to plan a 1 ms wait, a thousand wakeups/s). */
Test(consumer, a_pattern_with_no_subject_idles_until_the_next_discovery, .fini = teardown) {
    make("shop.*", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "SMEMBERS {t}:subjects");
    step(0, &p, (const char *[]){"*0\r\n"}, 1, &out);
    cr_assert(eddy__consumer_ready(consumer));
    plan(10, &p);
    cr_expect_eq(p.cmds.n, 0);
    cr_expect_eq(p.idle_ms, 240, "idle %lld ms", p.idle_ms);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

#include "bus/discovery.h"

/* Two pattern subscriptions of one bus share its discovery: after each one's own first look,
 * one SMEMBERS per interval serves both; a subject found by it is newer than both (group at 0),
 * and only the one that sends it bounds its waits by the next one. */
Test(consumer, pattern_subscriptions_share_one_discovery, .fini = teardown) {
    make("shop.*", EDDY_AT_MOST_ONCE, 5);
    eddy__discovery *shared = eddy__discovery_new(settings.discovery_ms);
    cr_assert(shared);
    eddy__consumer_share_discovery(consumer, shared);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "other";
    spec.pattern = "shop.>";
    spec.group = "g2";
    spec.delivery = EDDY_AT_MOST_ONCE;
    spec.handler = noop;
    eddy__sub *sub2;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub2, NULL), EDDY_OK);
    eddy__consumer *c2 = eddy__consumer_new(&settings, sub2);
    cr_assert(c2);
    eddy__consumer_share_discovery(c2, shared);
    eddy__plan p, p2;
    eddy__plan_init(&p);
    eddy__plan_init(&p2);
    eddy__delivery_list out = {0};
    redisReply *r;

    /* Each makes its own first discovery: shop.a exists, so both start it at "$". */
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "SMEMBERS {t}:subjects");
    step(0, &p, (const char *[]){"*1\r\n$6\r\nshop.a\r\n"}, 1, &out);
    cr_assert_eq(eddy__consumer_plan(c2, 0, &p2), EDDY_OK);
    cr_assert_str_eq(cmd_text(&p2, 0), "SMEMBERS {t}:subjects");
    r = raw_parse("*1\r\n$6\r\nshop.a\r\n");
    cr_assert_eq(eddy__consumer_feed(c2, 0, eddy_now_ms(), &p2, &r, 1, &out), EDDY_OK);
    freeReplyObject(r);
    plan(0, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:shop.a g $ MKSTREAM");
    step(0, &p, (const char *[]){OK}, 1, &out);
    eddy__plan_reset(&p2);
    cr_assert_eq(eddy__consumer_plan(c2, 0, &p2), EDDY_OK);
    cr_expect_str_eq(cmd_text(&p2, 0), "XGROUP CREATE {t}:s:shop.a g2 $ MKSTREAM");
    r = raw_parse(OK);
    cr_assert_eq(eddy__consumer_feed(c2, 0, eddy_now_ms(), &p2, &r, 1, &out), EDDY_OK);
    freeReplyObject(r);

    /* The first consumer to plan once it is due sends the shared discovery, and bounds its read
     * by the next one; the second is not asked to, and blocks for block_ms. */
    plan(250, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "SMEMBERS {t}:subjects");
    step(250, &p, (const char *[]){"*2\r\n$6\r\nshop.a\r\n$8\r\nshop.b.c\r\n"}, 1, &out);
    cr_expect(eddy__consumer_found_subjects(consumer));
    eddy__plan_reset(&p2);
    cr_assert_eq(eddy__consumer_plan(c2, 251, &p2), EDDY_OK);
    cr_assert_eq(p2.cmds.n, 1);
    cr_expect_str_eq(cmd_text(&p2, 0), "XGROUP CREATE {t}:s:shop.b.c g2 0 MKSTREAM");
    r = raw_parse(OK);
    cr_assert_eq(eddy__consumer_feed(c2, 0, eddy_now_ms(), &p2, &r, 1, &out), EDDY_OK);
    freeReplyObject(r);
    eddy__plan_reset(&p2);
    cr_assert_eq(eddy__consumer_plan(c2, 251, &p2), EDDY_OK);
    cr_expect_eq(p2.block_ms, 500, "not the owner: blocks %lld ms", p2.block_ms);
    plan(251, &p);
    cr_expect_eq(p.block_ms, 249, "the owner: blocks %lld ms", p.block_ms); /* shop.b.c: no match */

    /* The owner leaves: the other takes the discovery over once it is due. */
    eddy__consumer_free(consumer);
    consumer = NULL;
    eddy__plan_reset(&p2);
    cr_assert_eq(eddy__consumer_plan(c2, 499, &p2), EDDY_OK);
    cr_expect_eq(p2.cmds.n, 1, "not due yet: a read");
    eddy__plan_reset(&p2);
    cr_assert_eq(eddy__consumer_plan(c2, 500, &p2), EDDY_OK);
    cr_expect_str_eq(cmd_text(&p2, 0), "SMEMBERS {t}:subjects");
    eddy__plan_reset(&p);
    eddy__plan_reset(&p2);
    eddy__delivery_list_free(&out);
    eddy__consumer_free(c2);
    eddy__sub_free(sub2);
    eddy__discovery_free(shared);
}

/* With backoff, a failure's entry gets an idle time that makes a claim round find it once its
 * wait is over (XCLAIM ... IDLE, JUSTID so its delivery count stays), and that round is planned
 * for then; the next failure waits longer, capped at redelivery_idle_ms. */
Test(consumer, a_failure_comes_back_after_its_backoff, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5); /* backoff 500, x2 */
    settings.redelivery_idle_ms = 10000; /* periodic claim rounds every 5 s */
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_HANDLER_FAILED, NULL);
    out.n = 0;
    cr_expect_eq(atomic_load(&sub->stats.failed), 1);
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(hold_text(&p, 0, 60000), "XCLAIM {t}:s:jobs g me <idle> 1-1 IDLE 9550 JUSTID");
    step(10, &p, (const char *[]){"*1\r\n$3\r\n1-1\r\n", "*-1\r\n"}, 2, &out);
    /* The claim round that brings it back is due at 10 + 500 (long before the periodic one;
     * the first round set up the streams): the read blocks until then. */
    plan(20, &p);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_eq(p.block_ms, 490, "blocks %lld ms", p.block_ms);
    step(20, &p, (const char *[]){"*-1\r\n"}, 1, &out);
    plan(510, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XAUTOCLAIM {t}:s:jobs g me 10000 0-0 COUNT 10");
    const char *claim = "*3\r\n$3\r\n0-0\r\n*1\r\n"
                        "*2\r\n$3\r\n1-1\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid\r\n$"
                        "1\r\na\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n"
                        "*0\r\n";
    step(510, &p, (const char *[]){claim}, 1, &out);
    plan(510, &p);
    step(510, &p, (const char *[]){"*1\r\n*4\r\n$3\r\n1-1\r\n$2\r\nme\r\n:0\r\n:2\r\n"}, 1, &out);
    cr_assert_eq(out.n, 1);
    cr_expect_eq(eddy_delivery_attempt(out.v[0]), 2);
    eddy__consumer_settle(consumer, out.v[0], EDDY_ERR_HANDLER_FAILED, NULL);
    out.n = 0;
    plan(520, &p);
    /* Twice as long: idle 10000 - 1000 + the margin. */
    cr_expect_str_eq(hold_text(&p, 0, 60000), "XCLAIM {t}:s:jobs g me <idle> 1-1 IDLE 9050 JUSTID");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, redelivery_backoff_grows_and_is_capped) {
    eddy_settings s;
    eddy_settings_init(&s);
    eddy__settings st;
    cr_assert_eq(eddy__settings_copy(&st, &s, NULL), EDDY_OK);
    cr_expect_eq(eddy__redelivery_backoff_ms(&st, 1), 500);
    cr_expect_eq(eddy__redelivery_backoff_ms(&st, 2), 1000);
    cr_expect_eq(eddy__redelivery_backoff_ms(&st, 5), 8000);
    cr_expect_eq(eddy__redelivery_backoff_ms(&st, 1000000), 8000);
    unsigned total = 0;
    for (unsigned a = 1; a <= st.max_deliveries; a++)
        total += eddy__redelivery_backoff_ms(&st, a);
    cr_expect(total >= 120000 && total <= 140000, "a poison message waits %u ms in all", total);
    st.redelivery_backoff_ms = 0;
    cr_expect_eq(eddy__redelivery_backoff_ms(&st, 3), 0);
    eddy__settings_free(&st);
    s.redelivery_backoff_max_ms = 100; /* below the initial wait */
    cr_expect_eq(eddy__settings_copy(&st, &s, NULL), EDDY_ERR_INVALID_SPEC);
}

/* The stream and its group vanished (FLUSHALL): the group is made again, once counted and
 * logged, and the look that follows finds the server behind what was read live. */
Test(consumer, lost_group_is_recreated_counted_and_the_server_found_behind, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 3)}, 1, &out);
    cr_assert_eq(out.n, 3);
    for (size_t i = 0; i < out.n; i++)
        eddy__consumer_settle(consumer, out.v[i], EDDY_OK, NULL);
    out.n = 0;
    plan(200, &p); /* the acknowledgements, and a live read behind them */
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1 1-2 1-3");
    step(200, &p,
         (const char *[]){":3\r\n", "-NOGROUP No such key '{t}:s:jobs' or consumer group 'g' in "
                                    "XREADGROUP with GROUP option\r\n"},
         2, &out);
    plan(200, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM");
    cr_expect_str_eq(cmd_text(&p, 1), "XINFO STREAM {t}:s:jobs");
    step(200, &p, (const char *[]){OK, STREAM_INFO("0-0", "0")}, 2, &out);
    eddy_consumer_stats st;
    eddy__stats_snapshot(&sub->stats, &st);
    cr_expect_eq(st.recreated, 1);
    cr_expect_eq(st.lost_writes, 3, "the three entries read live are gone");
    /* Made again after a reconnect with nothing lost: nothing more is counted. */
    eddy__consumer_reset(consumer);
    plan(300, &p);
    cr_assert_eq(p.cmds.n, 2);
    step(300, &p,
         (const char *[]){"-BUSYGROUP Consumer Group name already exists\r\n",
                          STREAM_INFO("0-0", "0")},
         2, &out);
    eddy__stats_snapshot(&sub->stats, &st);
    cr_expect_eq(st.recreated, 1);
    cr_expect_eq(st.lost_writes, 3);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

#include "bus/wakeup.h"

static void wake_consumer(const void *who, void *user) {
    (void)user;
    eddy__consumer_wake((eddy__consumer *)who);
}

/* Feeds the wake-up one reply to the one command it plans (its text checked). */
static void wakeup_step(eddy__wakeup *w, const char *want, const char *reply) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block;
    cr_assert_eq(eddy__wakeup_plan(w, 1000, &cmds, &block), EDDY_OK);
    cr_assert_eq(cmds.n, 1);
    char text[256] = "";
    for (int i = 0; i < cmds.cmds[0].argc; i++) {
        if (i > 0)
            strcat(text, " ");
        strcat(text, eddy__cmd_argv(&cmds.cmds[0])[i]);
    }
    cr_assert_str_eq(text, want);
    redisReply *r = raw_parse(reply);
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, &r, 1, wake_consumer, NULL), EDDY_OK);
    freeReplyObject(r);
    eddy__cmdlist_reset(&cmds);
}

Test(consumer, with_the_wakeup_live_reads_do_not_block_and_wait_for_news, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__wakeup *w = eddy__wakeup_new(10);
    eddy__consumer_share_wakeup(consumer, w, NULL);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g $ MKSTREAM");
    step(0, &p, (const char *[]){OK, ":1\r\n"}, 2, &out);
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    step(0, &p, (const char *[]){EMPTY_READ}, 1, &out);
    /* The first live read: once, without BLOCK; the stream is watched from now on. */
    plan(0, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, -1);
    cr_expect_eq(eddy__wakeup_streams(w), 1);
    step(0, &p, (const char *[]){EMPTY_READ}, 1, &out);
    /* No news: it idles, not bounded by block_ms but by its next claim round. */
    plan(0, &p);
    cr_expect_eq(p.cmds.n, 0, "%s", p.cmds.n ? cmd_text(&p, 0) : "");
    cr_expect_eq(p.idle_ms, 500, "the claim interval (redelivery_idle_ms / 2)");

    /* The wake-up fixes the stream's id, which wakes its watcher once; then its XREAD says the
     * stream has an entry, which wakes it again. */
    wakeup_step(w, "XREVRANGE {t}:s:jobs + - COUNT 1", "*0\r\n");
    plan(1, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    step(1, &p, (const char *[]){EMPTY_READ}, 1, &out);
    plan(1, &p);
    cr_expect_eq(p.cmds.n, 0);
    wakeup_step(w, "XREAD COUNT 10 BLOCK 1000 STREAMS {t}:s:jobs 0-0", ONE_ENTRY("1-1"));
    plan(2, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    step(2, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(3, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    /* Behind an acknowledgement a live read never blocks anyway: it goes along, as without the
     * wake-up. */
    cr_assert_str_eq(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    step(3, &p, (const char *[]){":1\r\n", EMPTY_READ}, 2, &out);
    plan(3, &p);
    cr_expect_eq(p.cmds.n, 0, "no news: idle");

    /* Paused, it no longer watches; resumed, it watches again and reads once. */
    eddy__consumer_pause(sub, true);
    plan(4, &p);
    cr_expect_eq(p.cmds.n, 0);
    cr_expect_eq(eddy__wakeup_streams(w), 0);
    eddy__consumer_pause(sub, false);
    plan(5, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs 0");
    step(5, &p, (const char *[]){EMPTY_READ}, 1, &out);
    plan(5, &p);
    cr_assert_str_eq(cmd_text(&p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    cr_expect_eq(eddy__wakeup_streams(w), 1);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
    eddy__consumer_free(consumer);
    consumer = NULL;
    cr_expect_eq(eddy__wakeup_streams(w), 0, "a freed consumer watches nothing");
    eddy__wakeup_free(w);
}

/* Brings a literal AtLeastOnce consumer with the wake-up w to its first idle wait, the stream's
 * id fixed at 0-0 by the wake-up. */
static void to_woken_idle(eddy__wakeup *w, eddy__plan *p, eddy__delivery_list *out) {
    eddy__consumer_share_wakeup(consumer, w, NULL);
    plan(0, p);
    step(0, p, (const char *[]){OK, ":1\r\n"}, 2, out);
    plan(0, p);
    step(0, p, (const char *[]){EMPTY_READ}, 1, out);
    plan(0, p);
    cr_assert_str_eq(cmd_text(p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    step(0, p, (const char *[]){EMPTY_READ}, 1, out);
    wakeup_step(w, "XREVRANGE {t}:s:jobs + - COUNT 1", "*0\r\n");
    plan(0, p);
    step(0, p, (const char *[]){EMPTY_READ}, 1, out);
    plan(0, p);
    cr_assert_eq(p->cmds.n, 0);
}

/* The wake-up's hot places taken now, found with its own calls: take until refused, give those
 * back. */
static unsigned places_taken(eddy__wakeup *w) {
    unsigned free_places = 0;
    while (eddy__wakeup_hot_take(w))
        free_places++;
    for (unsigned i = 0; i < free_places; i++)
        eddy__wakeup_hot_give(w);
    return EDDY__WAKEUP_HOT_MAX - free_places;
}

Test(consumer, a_hot_stream_leaves_the_wakeup_until_a_read_finds_nothing, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__wakeup *w = eddy__wakeup_new(10);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_woken_idle(w, &p, &out);
    /* Two woken reads find entries within block_ms (500): the stream is hot. */
    const char *ids[] = {"1-1", "1-2"};
    const char *replies[] = {ONE_ENTRY("1-1"), ONE_ENTRY("1-2")};
    for (int k = 0; k < 2; k++) {
        char xread[128];
        snprintf(xread, sizeof(xread), "XREAD COUNT 10 BLOCK 1000 STREAMS {t}:s:jobs %s",
                 k == 0 ? "0-0" : ids[0]);
        wakeup_step(w, xread, replies[k]);
        plan(10 + k, &p);
        cr_assert_str_eq(cmd_text(&p, p.cmds.n - 1),
                         "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
        const char *with_ack[] = {":1\r\n", replies[k]};
        step(10 + k, &p, p.cmds.n == 2 ? with_ack : &replies[k], p.cmds.n, &out);
        cr_assert_eq(out.n, 1);
        eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
        out.n = 0;
    }
    /* Hot: out of the wake-up, it blocks by itself, behind the acknowledgement. */
    plan(20, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_assert_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-2");
    cr_assert(strncmp(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 BLOCK ", 37) == 0, "%s",
              cmd_text(&p, 1));
    cr_expect_gt(p.block_ms, 0);
    cr_expect_eq(eddy__wakeup_streams(w), 0, "the hot stream left the wake-up");
    cr_expect(eddy__plan_goes_own(&p), "hot: its blocking plan goes on a connection of its own");
    cr_expect(!eddy__consumer_gives_back(consumer, 0), "hot: an idle plan keeps its connection");
    step(20, &p, (const char *[]){":1\r\n", ONE_ENTRY("1-3")}, 2, &out);
    cr_assert_eq(out.n, 1, "still hot: it keeps reading by itself");
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(30, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_assert(strncmp(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 BLOCK ", 37) == 0);
    step(30, &p, (const char *[]){":1\r\n", "*-1\r\n"}, 2, &out);
    cr_expect_eq(places_taken(w), 1, "held while its own connection may still be open");
    /* A blocking read found nothing: cold again, it watches, with news (one read at once). */
    plan(40, &p);
    cr_assert_str_eq(cmd_text(&p, p.cmds.n - 1),
                     "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    cr_expect_eq(p.block_ms, -1);
    cr_expect(!eddy__plan_goes_own(&p), "cold: its read goes with the shared round");
    cr_expect_eq(eddy__wakeup_streams(w), 1);
    step(40, &p, (const char *[]){EMPTY_READ}, 1, &out);
    plan(41, &p);
    cr_assert_eq(p.cmds.n, 0, "idle: the front end closes the connection of its own");
    cr_expect(eddy__consumer_gives_back(consumer, 0), "cold and idle: back to the shared reads");
    cr_expect(!eddy__consumer_gives_back(consumer, -1), "a plan that sends stays");
    cr_expect_eq(places_taken(w), 0, "its hot place is back");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
    eddy__consumer_free(consumer);
    consumer = NULL;
    eddy__wakeup_free(w);
}

/* A woken read finds entry 1-<k+1> at time `at`, and its handler settles it. */
static void woken_find(eddy__wakeup *w, int k, long long at, eddy__plan *p,
                       eddy__delivery_list *out) {
    char xread[128];
    snprintf(xread, sizeof(xread), "XREAD COUNT 10 BLOCK 1000 STREAMS {t}:s:jobs %s",
             k == 0 ? "0-0" : "1-1");
    const char *entry = k == 0 ? ONE_ENTRY("1-1") : ONE_ENTRY("1-2");
    wakeup_step(w, xread, entry);
    plan(at, p);
    cr_assert_eq(p->cmds.n, 1, "nothing to acknowledge before the woken read");
    cr_assert_str_eq(cmd_text(p, 0), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    step(at, p, &entry, 1, out);
    cr_assert_eq(out->n, 1);
    cr_assert_str_eq(eddy_delivery_entry_id(out->v[0]), k == 0 ? "1-1" : "1-2");
    eddy__consumer_settle(consumer, out->v[0], EDDY_OK, NULL);
    out->n = 0;
}

/* The read behind the acknowledgement of 1-<k+1>, at time `at`: planned `blocking` or not; it
 * finds nothing. */
static void ack_read_finds_nothing(int k, long long at, bool blocking, eddy__plan *p,
                                   eddy__delivery_list *out) {
    plan(at, p);
    cr_assert_eq(p->cmds.n, 2);
    cr_assert_str_eq(cmd_text(p, 0), k == 0 ? "XACK {t}:s:jobs g 1-1" : "XACK {t}:s:jobs g 1-2");
    if (blocking)
        cr_assert(strncmp(cmd_text(p, 1), "XREADGROUP GROUP g me COUNT 10 BLOCK ", 37) == 0,
                  "hot: %s", cmd_text(p, 1));
    else
        cr_assert_str_eq(cmd_text(p, 1), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >",
                         "behind an acknowledgement the read goes without BLOCK");
    step(at, p, (const char *[]){":1\r\n", blocking ? "*-1\r\n" : EMPTY_READ}, 2, out);
}

/* A watching consumer whose first woken read found 1-1 at 10 ms, and whose read behind its
 * acknowledgement found nothing at 11 ms. */
static eddy__wakeup *found_once(eddy__plan *p, eddy__delivery_list *out) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__wakeup *w = eddy__wakeup_new(10);
    eddy__plan_init(p);
    to_woken_idle(w, p, out);
    woken_find(w, 0, 10, p, out);
    ack_read_finds_nothing(0, 11, false, p, out);
    return w;
}

static void woken_end(eddy__wakeup *w, eddy__plan *p, eddy__delivery_list *out) {
    eddy__plan_reset(p);
    eddy__delivery_list_free(out);
    eddy__consumer_free(consumer);
    consumer = NULL;
    eddy__wakeup_free(w);
}

/* The pattern of a stream with an entry every millisecond: each woken read finds one, and the
 * read behind its acknowledgement comes before the next. That miss does not keep it cold. */
Test(consumer, a_miss_between_two_close_finds_still_makes_the_stream_hot, .fini = teardown) {
    eddy__plan p;
    eddy__delivery_list out = {0};
    eddy__wakeup *w = found_once(&p, &out);
    plan(12, &p);
    cr_assert_eq(p.cmds.n, 0, "no news: it waits for the wake-up");
    woken_find(w, 1, 14, &p, &out); /* 4 ms after the first find */
    cr_expect_eq(eddy__wakeup_streams(w), 1, "it leaves the wake-up at its next plan");
    ack_read_finds_nothing(1, 15, true, &p, &out);
    cr_expect_eq(eddy__wakeup_streams(w), 0, "the hot stream left the wake-up");
    woken_end(w, &p, &out);
}

/* Two finds 50 ms apart (some 20 entries a second) are not hot: the stream stays watched. */
Test(consumer, finds_far_apart_leave_the_stream_in_the_wakeup, .fini = teardown) {
    eddy__plan p;
    eddy__delivery_list out = {0};
    eddy__wakeup *w = found_once(&p, &out);
    woken_find(w, 1, 60, &p, &out);
    ack_read_finds_nothing(1, 61, false, &p, &out);
    cr_expect_eq(eddy__wakeup_streams(w), 1, "still watched");
    woken_end(w, &p, &out);
}

/* The bus's hot places all taken (by other subscriptions): two close finds leave the stream
 * watched, paying the wide read, so the bus's connections and threads stay bounded. */
Test(consumer, a_stream_stays_watched_when_no_hot_place_is_free, .fini = teardown) {
    eddy__plan p;
    eddy__delivery_list out = {0};
    eddy__wakeup *w = found_once(&p, &out);
    for (int i = 0; i < EDDY__WAKEUP_HOT_MAX; i++)
        cr_assert(eddy__wakeup_hot_take(w));
    cr_expect(!eddy__wakeup_hot_take(w), "no more than EDDY__WAKEUP_HOT_MAX");
    woken_find(w, 1, 14, &p, &out);
    ack_read_finds_nothing(1, 15, false, &p, &out);
    cr_expect_eq(eddy__wakeup_streams(w), 1, "still watched");
    cr_expect_eq(places_taken(w), EDDY__WAKEUP_HOT_MAX);
    woken_end(w, &p, &out);
}

/* A hot stream whose blocking read waited HOT_LEAVE_MS (100) or more for its entry has slowed
 * down: it gives its hot place back and watches again, reading at once (news). */
Test(consumer, a_hot_stream_that_slows_down_goes_back_to_the_wakeup, .fini = teardown) {
    eddy__plan p;
    eddy__delivery_list out = {0};
    eddy__wakeup *w = found_once(&p, &out);
    woken_find(w, 1, 14, &p, &out);
    cr_expect_eq(places_taken(w), 1, "it took a hot place");
    plan(15, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_assert(strncmp(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 BLOCK ", 37) == 0, "%s",
              cmd_text(&p, 1));
    step(165, &p, (const char *[]){":1\r\n", ONE_ENTRY("1-3")}, 2, &out);
    cr_assert_eq(out.n, 1, "what it found is delivered");
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    plan(166, &p);
    cr_assert_eq(p.cmds.n, 2);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-3");
    cr_expect_str_eq(cmd_text(&p, 1), "XREADGROUP GROUP g me COUNT 10 STREAMS {t}:s:jobs >");
    cr_expect_eq(eddy__wakeup_streams(w), 1, "watched again");
    cr_expect_eq(places_taken(w), 1, "held while it reads on its own connection");
    step(166, &p, (const char *[]){":1\r\n", EMPTY_READ}, 2, &out);
    plan(167, &p); /* its news (a watch again) still wants a read of its own */
    cr_assert_eq(p.cmds.n, 1);
    step(167, &p, (const char *[]){EMPTY_READ}, 1, &out);
    cr_expect_eq(places_taken(w), 1);
    plan(168, &p);
    cr_assert_eq(p.cmds.n, 0);
    cr_expect_eq(places_taken(w), 0, "its hot place is back once it idles");
    woken_end(w, &p, &out);
}

/* A consumer freed while hot gives its place back (a stopped subscription holds none). */
Test(consumer, a_hot_consumer_freed_gives_its_place_back, .fini = teardown) {
    eddy__plan p;
    eddy__delivery_list out = {0};
    eddy__wakeup *w = found_once(&p, &out);
    woken_find(w, 1, 14, &p, &out);
    cr_expect_eq(places_taken(w), 1);
    eddy__consumer_free(consumer);
    consumer = NULL;
    cr_expect_eq(places_taken(w), 0);
    woken_end(w, &p, &out);
}

/* ---- transactional handlers (eddy_delivery_emit) ------------------------------------------ */

static eddy_event *output(const char *id) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/t"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "out"), EDDY_OK);
    return ev;
}

/* FUNCTION LOAD's reply: the library's name. */
static const char *loaded(void) {
    static char buf[64];
    snprintf(buf, sizeof(buf), "$%zu\r\n%s\r\n", strlen(EDDY__STORE_LIBRARY), EDDY__STORE_LIBRARY);
    return buf;
}

static eddy_delivery *one_delivery(eddy__plan *p, eddy__delivery_list *out) {
    to_live(p, out);
    step(0, p, (const char *[]){ONE_ENTRY("1-1")}, 1, out);
    cr_assert_eq(out->n, 1);
    eddy_delivery *d = out->v[0];
    out->n = 0;
    return d;
}

static void emit(eddy_delivery *d, const char *subject, const char *id) {
    eddy_event *ev = output(id);
    eddy_error err = {0};
    eddy_status st = eddy_delivery_emit(d, subject, ev, &err);
    cr_assert_eq(st, EDDY_OK, "%s: %s", eddy_status_name(st), err.detail);
    eddy_event_free(ev);
}

/* The commit's FCALL, its fields (the outputs' encodings) left out. */
static const char *commit_head(const eddy__plan *p, size_t i) {
    const char *t = cmd_text(p, i);
    static char buf[512];
    snprintf(buf, sizeof(buf), "%.*s",
             (int)(strstr(t, " specversion") ? strstr(t, " specversion") - t : (long)strlen(t)), t);
    return buf;
}

Test(consumer, emitted_outputs_commit_with_the_acknowledgement, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    eddy_delivery *d = one_delivery(&p, &out);
    emit(d, "done.a", "o1");
    emit(d, "done.b", "o2");
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    plan(10, &p);
    /* The library is loaded ahead of the first commit on the connection; no XACK beside it. */
    cr_assert_eq(p.cmds.n, 3, "%s", cmd_text(&p, p.cmds.n - 1));
    cr_expect(strncmp(cmd_text(&p, 0), "FUNCTION LOAD REPLACE #!lua", 27) == 0);
    cr_expect_str_eq(commit_head(&p, 1), "FCALL " EDDY__COMMIT_FN " 4 {t}:s:jobs {t}:subjects "
                                         "{t}:s:done.a {t}:s:done.b g 1-1 0 2 done.a 8");
    cr_expect(strstr(cmd_text(&p, 1), "id o1 source /t type out done.b 8 specversion 1.0 id o2"),
              "%s", cmd_text(&p, 1));
    cr_expect(strncmp(cmd_text(&p, 2), "XREADGROUP", 10) == 0);
    step(10, &p, (const char *[]){loaded(), ":1\r\n", "*-1\r\n"}, 3, &out);
    plan(20, &p);
    cr_assert_eq(p.cmds.n, 1, "the commit is done: %s", cmd_text(&p, 0));
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0);
    cr_expect_eq(atomic_load(&sub->stats.handled), 1);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, a_commit_whose_reply_was_lost_is_sent_again, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    eddy_delivery *d = one_delivery(&p, &out);
    emit(d, "done", "o1");
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    plan(10, &p);
    cr_assert_str_eq(commit_head(&p, 1),
                     "FCALL " EDDY__COMMIT_FN " 3 {t}:s:jobs {t}:subjects {t}:s:done g 1-1 0 1 "
                     "done 8");
    redisReply *none[4] = {NULL, NULL, NULL, NULL};
    cr_expect_eq(eddy__consumer_feed(consumer, 0, eddy_now_ms(), &p, none, p.cmds.n, &out),
                 EDDY_ERR_IO);
    eddy__consumer_reset(consumer);
    plan(20, &p);
    /* A new connection: the library again, the same commit (the server adds nothing when the
     * first one ran: the input is no longer pending). */
    cr_expect(strncmp(cmd_text(&p, 0), "FUNCTION LOAD REPLACE #!lua", 27) == 0);
    cr_expect_str_eq(commit_head(&p, 1),
                     "FCALL " EDDY__COMMIT_FN " 3 {t}:s:jobs {t}:subjects {t}:s:done g 1-1 0 1 "
                     "done 8");
    cr_expect_str_eq(cmd_text(&p, 2), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, a_lost_library_is_loaded_again_for_the_commit, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    eddy_delivery *d = one_delivery(&p, &out);
    emit(d, "done", "o1");
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 3);
    const char *second = "*1\r\n*2\r\n$10\r\n{t}:s:jobs\r\n*1\r\n"
                         "*2\r\n$3\r\n1-2\r\n*8\r\n$11\r\nspecversion\r\n$3\r\n1.0\r\n$2\r\nid"
                         "\r\n$1\r\nb\r\n$6\r\nsource\r\n$2\r\n/s\r\n$4\r\ntype\r\n$1\r\nt\r\n";
    step(10, &p, (const char *[]){loaded(), ":1\r\n", second}, 3, &out);
    cr_assert_eq(out.n, 1);
    d = out.v[0];
    out.n = 0;
    emit(d, "done", "o2");
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    plan(20, &p);
    cr_assert_eq(p.cmds.n, 2, "loaded on this connection already: %s", cmd_text(&p, 0));
    cr_expect_str_eq(commit_head(&p, 0),
                     "FCALL " EDDY__COMMIT_FN " 3 {t}:s:jobs {t}:subjects {t}:s:done g 1-2 0 1 "
                     "done 8");
    /* The server lost its functions (a restart, FUNCTION FLUSH): nothing was written. */
    step(20, &p, (const char *[]){"-ERR Function not found\r\n", "*-1\r\n"}, 2, &out);
    plan(30, &p);
    cr_expect(strncmp(cmd_text(&p, 0), "FUNCTION LOAD REPLACE #!lua", 27) == 0);
    cr_expect_str_eq(commit_head(&p, 1),
                     "FCALL " EDDY__COMMIT_FN " 3 {t}:s:jobs {t}:subjects {t}:s:done g 1-2 0 1 "
                     "done 8");
    /* Still not found right after a load: given up (it stays pending and comes back). */
    step(30, &p, (const char *[]){loaded(), "-ERR Function not found\r\n", "*-1\r\n"}, 3, &out);
    plan(40, &p);
    cr_expect_eq(p.cmds.n, 1, "%s", cmd_text(&p, 0));
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, a_failed_handler_commits_nothing, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    settings.redelivery_backoff_ms = 0;
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    eddy_delivery *d = one_delivery(&p, &out);
    emit(d, "done", "o1");
    eddy__consumer_settle(consumer, d, EDDY_ERR_HANDLER_FAILED, NULL);
    plan(10, &p);
    cr_assert_eq(p.cmds.n, 1, "neither commit nor XACK: %s", cmd_text(&p, 0));
    cr_expect(strncmp(cmd_text(&p, 0), "XREADGROUP", 10) == 0);
    cr_expect_eq(atomic_load(&sub->stats.failed), 1);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, emit_checks_before_anything_is_sent, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    settings.max_event_size = 200;
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    eddy_delivery *d = one_delivery(&p, &out);
    eddy_event *ev = output("o1");
    eddy_error err = {0};
    cr_expect_eq(eddy_delivery_emit(d, "bad..subject", ev, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(eddy_delivery_emit(d, "a.>", ev, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(eddy_delivery_emit(d, NULL, ev, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_delivery_emit(NULL, "ok", ev, &err), EDDY_ERR_INVALID_ARGUMENT);
    char big[300];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_assert_eq(eddy_event_set_data(ev, big, strlen(big)), EDDY_OK);
    cr_expect_eq(eddy_delivery_emit(d, "ok", ev, &err), EDDY_ERR_TOO_LARGE);
    cr_expect(strstr(err.detail, "limit is 200"), "%s", err.detail);
    eddy_event_free(ev);
    ev = eddy_event_new(); /* no id, source, type */
    cr_expect_eq(eddy_delivery_emit(d, "ok", ev, &err), EDDY_ERR_INVALID_EVENT);
    eddy_event_free(ev);
    /* Nothing was kept: success is a plain XACK. */
    eddy__consumer_settle(consumer, d, EDDY_OK, NULL);
    plan(10, &p);
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

Test(consumer, at_most_once_deliveries_cannot_emit, .fini = teardown) {
    make("jobs", EDDY_AT_MOST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    step(0, &p, (const char *[]){"-BUSYGROUP Consumer Group name already exists\r\n", ":0\r\n"}, 2,
         &out);
    plan(0, &p);
    step(0, &p, (const char *[]){ONE_ENTRY("1-1")}, 1, &out);
    cr_assert_eq(out.n, 1);
    eddy_event *ev = output("o1");
    eddy_error err = {0};
    cr_expect_eq(eddy_delivery_emit(out.v[0], "ok", ev, &err), EDDY_ERR_ILLEGAL_STATE);
    cr_expect(strstr(err.detail, "AtLeastOnce"), "%s", err.detail);
    eddy_event_free(ev);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* The reader's loop as both front ends take it (eddy__consumer_next): send, idle, or, stopping,
 * flush only what was settled. */
Test(consumer, next_sends_idles_and_flushes_only_settled_when_stopping, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    cr_expect(eddy__consumer_became_ready(consumer), "ready since to_live's first round");
    cr_expect(!eddy__consumer_became_ready(consumer), "said once");
    cr_assert_eq(eddy__consumer_next(consumer, 0, false, &p), -1);
    cr_assert_eq(p.cmds.n, 1);
    cr_expect_eq(p.block_ms, 500);
    step(0, &p, (const char *[]){live_reply(1, 1)}, 1, &out);
    cr_assert_eq(out.n, 1);
    /* Stopping with nothing settled: nothing to send, not even a read. */
    cr_expect_geq(eddy__consumer_next(consumer, 0, true, &p), 0);
    cr_expect_eq(p.cmds.n, 0);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    cr_assert_eq(eddy__consumer_next(consumer, 0, true, &p), -1);
    cr_assert_eq(p.cmds.n, 1, "the acknowledgement alone");
    cr_expect_str_eq(cmd_text(&p, 0), "XACK {t}:s:jobs g 1-1");
    step(0, &p, (const char *[]){":1\r\n"}, 1, &out);
    cr_expect_geq(eddy__consumer_next(consumer, 0, true, &p), 0);
    cr_expect_eq(p.cmds.n, 0, "stopping: no read (%s)", p.cmds.n ? cmd_text(&p, 0) : "");
    /* Paused: nothing to read, the idle time to wait. */
    eddy__consumer_pause(sub, true);
    long long wait = eddy__consumer_next(consumer, 0, false, &p);
    cr_expect_eq(p.cmds.n, 0);
    cr_expect_gt(wait, 0);
    cr_expect_eq(wait, p.idle_ms);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* A lost round drops what it handed out (nothing acknowledged) and starts over. */
Test(consumer, lost_drops_the_round_and_starts_over, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, 2)}, 1, &out);
    cr_assert_eq(out.n, 2);
    cr_assert_eq(eddy__consumer_outstanding(consumer), 2);
    eddy__consumer_lost(consumer, &out);
    cr_expect_eq(out.n, 0);
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    cr_assert_eq(eddy__consumer_next(consumer, 0, false, &p), -1);
    cr_expect_str_eq(cmd_text(&p, 0), "XGROUP CREATE {t}:s:jobs g 0 MKSTREAM",
                     "the groups are checked again");
    cr_expect_eq(atomic_load(&sub->stats.handled), 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* eddy__consumer_run: what a handler's return leaves to settle, as both front ends dispatch. */
static eddy_status run_result;
static bool run_finish_inside;

static void front_finish(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    eddy__consumer_settle(consumer, d, st, reply);
}

static eddy_status scripted(eddy_delivery *d, void *u) {
    (void)u;
    if (run_finish_inside)
        eddy_delivery_finish(d, EDDY_OK);
    return run_result;
}

Test(consumer, run_keeps_results_to_settle_in_runs, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    sub->handler = scripted;
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    to_live(&p, &out);
    step(0, &p, (const char *[]){live_reply(1, EDDY__RUN_MAX + 2)}, 1, &out);
    cr_assert_eq(out.n, EDDY__RUN_MAX + 2);
    for (size_t i = 0; i < out.n; i++)
        out.v[i]->finish = front_finish;
    eddy__run run;
    run.n = 0;
    run_result = EDDY_PENDING;
    cr_expect_eq(eddy__consumer_run(consumer, &run, out.v[0]), EDDY__RAN_PENDING);
    cr_expect_eq(run.n, 0, "a pending delivery is settled by its finish");
    run_result = EDDY_OK;
    run_finish_inside = true;
    cr_expect_eq(eddy__consumer_run(consumer, &run, out.v[1]), EDDY__RAN_FINISHED);
    cr_expect_eq(run.n, 0, "finished from inside: its result is ignored");
    run_finish_inside = false;
    for (size_t i = 2; i < out.n - 1; i++)
        cr_assert_eq(eddy__consumer_run(consumer, &run, out.v[i]), EDDY__RAN_KEPT);
    cr_expect_eq(run.n, EDDY__RUN_MAX - 1);
    cr_expect_eq(run.v[0].d, out.v[2]);
    cr_expect_eq(run.v[0].st, EDDY_OK);
    cr_expect_eq(eddy__consumer_run(consumer, &run, out.v[out.n - 1]), EDDY__RAN_FULL);
    eddy__consumer_settle_run(consumer, run.v, run.n);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    cr_expect_eq(atomic_load(&sub->stats.handled), EDDY__RUN_MAX + 2);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}

/* eddy__consumer_fed: step's feed, with what the round asks of its reader. */
static unsigned fed(const eddy__plan *p, const char *const *replies, size_t n, bool stopping,
                    eddy__delivery_list *out) {
    cr_assert_eq(p->cmds.n, n);
    redisReply *r[8];
    for (size_t i = 0; i < n; i++)
        r[i] = raw_parse(replies[i]);
    unsigned news = 99;
    cr_assert_eq(eddy__consumer_fed(consumer, 0, eddy_now_ms(), p, r, n, stopping, out, &news),
                 EDDY_OK);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
    return news;
}

Test(consumer, fed_tells_ready_once_and_hands_nothing_out_when_stopping, .fini = teardown) {
    make("jobs", EDDY_AT_LEAST_ONCE, 5);
    eddy__plan p;
    eddy__plan_init(&p);
    eddy__delivery_list out = {0};
    plan(0, &p);
    cr_expect_eq(
        fed(&p, (const char *[]){"-BUSYGROUP Consumer Group name already exists\r\n", ":0\r\n"}, 2,
            false, &out),
        EDDY__FED_READY);
    plan(0, &p);
    cr_expect_eq(fed(&p, (const char *[]){EMPTY_READ}, 1, false, &out), 0, "ready said once");
    plan(0, &p);
    cr_assert_eq(p.block_ms, 500, "a live read");
    cr_expect_eq(fed(&p, (const char *[]){live_reply(1, 2)}, 1, true, &out), 0);
    cr_expect_eq(out.n, 0, "stopping: nothing handed out");
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    cr_expect_eq(atomic_load(&sub->stats.handled), 0);
    plan(0, &p);
    cr_expect_eq(fed(&p, (const char *[]){live_reply(3, 1)}, 1, false, &out), 0);
    cr_expect_eq(out.n, 1);
    eddy__consumer_settle(consumer, out.v[0], EDDY_OK, NULL);
    out.n = 0;
    /* Once stop began, the consumer itself holds back what a round in flight read. */
    eddy__consumer_stop(consumer);
    plan(0, &p);
    cr_assert_eq(p.cmds.n, 2, "the acknowledgement, then a live read");
    cr_expect_eq(fed(&p, (const char *[]){":1\r\n", live_reply(4, 1)}, 2, false, &out), 0);
    cr_expect_eq(out.n, 0, "stopped: nothing handed out");
    cr_expect_eq(eddy__consumer_outstanding(consumer), 0);
    eddy__plan_reset(&p);
    eddy__delivery_list_free(&out);
}
