/* SPDX-License-Identifier: BSD-3-Clause */
/* The retention state machine with no server: replies are written as RESP text, parsed by
 * hiredis and fed in; the commands it plans are checked as text. */
#define _GNU_SOURCE /* asprintf */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/retention.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "raw.h"

static const char *cmd_text(const eddy__cmdlist *l, size_t i) {
    static char buf[4096];
    buf[0] = '\0';
    const eddy__cmd *c = &l->cmds[i];
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

/* RESP builders. */
static char *bulk(const char *s) {
    char *out;
    cr_assert(asprintf(&out, "$%zu\r\n%s\r\n", strlen(s), s) > 0);
    return out;
}

/* An array of n parts (each RESP text, freed). */
static char *arr(size_t n, ...) {
    va_list ap;
    va_start(ap, n);
    char *out;
    cr_assert(asprintf(&out, "*%zu\r\n", n) > 0);
    for (size_t i = 0; i < n; i++) {
        char *part = va_arg(ap, char *), *next;
        cr_assert(asprintf(&next, "%s%s", out, part) > 0);
        free(out);
        free(part);
        out = next;
    }
    va_end(ap);
    return out;
}

static char *num(long long v) {
    char *out;
    cr_assert(asprintf(&out, ":%lld\r\n", v) > 0);
    return out;
}

static char *group(const char *name, long long consumers, long long pending, const char *last) {
    return arr(12, bulk("name"), bulk(name), bulk("consumers"), num(consumers), bulk("pending"),
               num(pending), bulk("last-delivered-id"), bulk(last), bulk("entries-read"), num(0),
               bulk("lag"), num(0));
}

static char *consumer(const char *name, long long pending, long long idle) {
    return arr(6, bulk("name"), bulk(name), bulk("pending"), num(pending), bulk("idle"), num(idle));
}

static char *entry(const char *id) { return arr(2, bulk(id), arr(2, bulk("k"), bulk("v"))); }

static char *time_of(long long ms) {
    char s[32], us[32];
    snprintf(s, sizeof(s), "%lld", ms / 1000);
    snprintf(us, sizeof(us), "%lld", (ms % 1000) * 1000);
    return arr(2, bulk(s), bulk(us));
}

static eddy__settings settings;
static eddy__retention_counters counters;
static eddy__retention *ret;
static eddy__cmdlist cmds;

static void setup_with(unsigned long long max_len, unsigned consumer_idle) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = "me";
    s.retention_interval_ms = 1000;
    s.retention_grace_ms = 5000;
    s.retention_max_len = max_len;
    s.consumer_idle_ms = consumer_idle;
    s.lease_ms = 3000;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    memset(&counters, 0, sizeof(counters));
    ret = eddy__retention_new(&settings, &counters, "me", 0);
    cr_assert(ret);
    eddy__cmdlist_init(&cmds);
}

static void setup(void) { setup_with(0, 0); }

static void teardown(void) {
    eddy__cmdlist_reset(&cmds);
    eddy__retention_free(ret);
    eddy__settings_free(&settings);
}

/* Plans the round due at now; the commands are in cmds. */
static void plan(long long now) {
    eddy__cmdlist_reset(&cmds);
    cr_assert_eq(eddy__retention_plan(ret, now, &cmds), EDDY_OK);
}

/* Feeds one reply per planned command (RESP texts, freed); NULL feeds a lost connection. */
static eddy_status feed(long long now, size_t n, ...) {
    cr_assert_eq(n, cmds.n, "%zu replies for %zu commands", n, cmds.n);
    redisReply *replies[64] = {0};
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        char *text = va_arg(ap, char *);
        replies[i] = text ? raw_parse(text) : NULL;
        free(text);
    }
    va_end(ap);
    eddy_status st = eddy__retention_feed(ret, now, &cmds, replies, n);
    for (size_t i = 0; i < n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    return st;
}

static char *ok(void) { return strdup("+OK\r\n"); }
static char *nil(void) { return strdup("$-1\r\n"); }
static char *empty(void) { return strdup("*0\r\n"); }

/* Takes the lease and lists the subjects: the next round is XINFO GROUPS. */
static void to_groups(long long now, char *subjects) {
    plan(now);
    cr_assert_eq(cmds.n, 2);
    cr_assert_str_eq(cmd_text(&cmds, 0), "SET {t}:retention me NX PX 3000");
    cr_assert_str_eq(cmd_text(&cmds, 1), "GET {t}:retention");
    cr_assert_eq(feed(now, 2, ok(), bulk("me")), EDDY_OK);
    plan(now);
    cr_assert_eq(cmds.n, 1);
    cr_assert_str_eq(cmd_text(&cmds, 0), "SMEMBERS {t}:subjects");
    cr_assert_eq(feed(now, 1, subjects), EDDY_OK);
    plan(now);
}

TestSuite(retention, .fini = teardown);

Test(retention, nothing_before_the_interval) {
    setup();
    plan(999);
    cr_assert_eq(cmds.n, 0);
    cr_assert_eq(eddy__retention_due(ret), 1000);
}

Test(retention, another_holder_ends_the_pass) {
    setup();
    plan(1000);
    cr_assert_eq(feed(1000, 2, nil(), bulk("other")), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 0);
    cr_assert_eq(eddy__retention_due(ret), 2000);
}

Test(retention, the_holder_renews_its_lease) {
    setup();
    plan(1000);
    cr_assert_eq(feed(1000, 2, nil(), bulk("me")), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 2);
    cr_assert_str_eq(cmd_text(&cmds, 0), "PEXPIRE {t}:retention 3000");
    cr_assert_str_eq(cmd_text(&cmds, 1), "SMEMBERS {t}:subjects");
}

/* The cut is the lowest need: group g2's oldest pending entry, below g1's last delivered. */
Test(retention, trims_to_the_oldest_entry_a_group_needs) {
    setup();
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(cmds.n, 2);
    cr_assert_str_eq(cmd_text(&cmds, 0), "TIME");
    cr_assert_str_eq(cmd_text(&cmds, 1), "XINFO GROUPS {t}:s:a");
    cr_assert_eq(feed(1000, 2, time_of(100000),
                      arr(2, group("g1", 1, 0, "10-0"), group("g2", 1, 2, "20-0"))),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 3);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XPENDING {t}:s:a g2");
    cr_assert_str_eq(cmd_text(&cmds, 1), "ZRANGEBYSCORE {t}:subs 1000 +inf");
    cr_assert_str_eq(cmd_text(&cmds, 2), "TIME");
    cr_assert_eq(
        feed(1000, 3, arr(4, num(2), bulk("5-0"), bulk("7-0"), empty()), empty(), time_of(100000)),
        EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 1);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XTRIM {t}:s:a MINID 5-0");
    cr_assert_eq(feed(1000, 1, num(4)), EDDY_OK);
    eddy_retention_stats st;
    eddy__retention_counters_snapshot(&counters, &st);
    cr_assert_eq(st.passes, 1);
    cr_assert_eq(st.trimmed, 4);
    cr_assert_eq(st.dropped, 0);
    plan(1000);
    cr_assert_eq(cmds.n, 0);
}

/* Entries younger than the grace stay, with or without groups. */
Test(retention, keeps_the_grace) {
    setup();
    to_groups(1000, arr(2, bulk("a"), bulk("b")));
    cr_assert_eq(feed(1000, 3, time_of(100000), arr(1, group("g1", 1, 0, "99999-3")), empty()),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(feed(1000, 2, empty(), time_of(100000)), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 2);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XTRIM {t}:s:a MINID 95000-0");
    cr_assert_str_eq(cmd_text(&cmds, 1), "XTRIM {t}:s:b MINID 95000-0");
}

/* A live pattern subscription without its group on the stream yet holds it (it will create the
 * group at "0"); one that has its group does not. */
Test(retention, a_pattern_without_its_group_holds_the_stream) {
    setup();
    to_groups(1000, arr(2, bulk("a.x"), bulk("b")));
    cr_assert_eq(feed(1000, 3, time_of(100000), arr(1, group("g1", 1, 0, "10-0")),
                      arr(1, group("g1", 1, 0, "10-0"))),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(feed(1000, 2, arr(2, bulk("h\tg3\tother\tsub\ta.*"), bulk("h\tg1\tx\ts\tb")),
                      time_of(100000)),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 1);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XTRIM {t}:s:b MINID 10-1");
}

/* A stream that went, or a group reply that cannot be read: that stream is untouched. */
Test(retention, unreadable_streams_are_untouched) {
    setup();
    to_groups(1000, arr(2, bulk("a"), bulk("b")));
    cr_assert_eq(feed(1000, 3, time_of(100000), strdup("-ERR no such key\r\n"),
                      arr(1, arr(2, bulk("name"), bulk("g")))),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 2); /* registry and TIME only */
    cr_assert_eq(feed(1000, 2, empty(), time_of(100000)), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 0);
    cr_assert_eq(eddy__retention_due(ret), 2000);
    eddy_retention_stats st;
    eddy__retention_counters_snapshot(&counters, &st);
    cr_assert_eq(st.passes, 1, "a pass with nothing to do still counts");
}

Test(retention, a_lost_connection_abandons_the_pass) {
    setup();
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(feed(1000, 2, NULL, NULL), EDDY_ERR_IO);
    plan(1000);
    cr_assert_eq(cmds.n, 0);
    cr_assert_eq(eddy__retention_due(ret), 2000);
}

Test(retention, no_subjects_no_pass) {
    setup();
    to_groups(1000, empty());
    cr_assert_eq(cmds.n, 0);
}

/* A length limit lists what it drops and counts, per group, what the group had not read
 * (after its last-delivered id) and what it had pending in the dropped range. */
Test(retention, a_length_limit_counts_what_it_drops) {
    setup_with(4, 0);
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(cmds.n, 3);
    cr_assert_str_eq(cmd_text(&cmds, 2), "XLEN {t}:s:a");
    cr_assert_eq(feed(1000, 3, time_of(100000), arr(1, group("g", 1, 1, "3-0")), num(10)), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 4);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XPENDING {t}:s:a g");
    cr_assert_str_eq(cmd_text(&cmds, 1), "XRANGE {t}:s:a - + COUNT 6");
    cr_assert_eq(feed(1000, 4, arr(4, num(1), bulk("2-0"), bulk("2-0"), empty()),
                      arr(6, entry("1-0"), entry("2-0"), entry("3-0"), entry("4-0"), entry("5-0"),
                          entry("6-0")),
                      empty(), time_of(100000)),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 2);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XPENDING {t}:s:a g 1-0 6-0 6");
    cr_assert_str_eq(cmd_text(&cmds, 1), "XTRIM {t}:s:a MINID 6-1");
    cr_assert_eq(feed(1000, 2, arr(1, arr(4, bulk("2-0"), bulk("me"), num(5), num(1))), num(6)),
                 EDDY_OK);
    eddy_retention_stats st;
    eddy__retention_counters_snapshot(&counters, &st);
    cr_assert_eq(st.trimmed, 6);
    cr_assert_eq(st.dropped, 4); /* 4-0, 5-0, 6-0 unread; 2-0 pending */
}

/* Clean-up: a random instance's fanout group with no live lease and idle consumers goes; a
 * consumer with pending entries, or of a live instance, stays. */
Test(retention, clean_up) {
    setup_with(0, 60000);
    const char *dead = "fanout.s.i-0123456789abcdef0123456789abcdef";
    const char *live = "fanout.s.i-fedcba9876543210fedcba9876543210";
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(
        feed(1000, 2, time_of(100000),
             arr(3, group(dead, 1, 1, "8-0"), group(live, 1, 0, "9-0"), group("g", 3, 1, "9-0"))),
        EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 7);
    cr_assert_str_eq(cmd_text(&cmds, 1),
                     "XINFO CONSUMERS {t}:s:a fanout.s.i-0123456789abcdef0123456789abcdef");
    cr_assert_eq(feed(1000, 7, arr(4, num(1), bulk("2-0"), bulk("2-0"), empty()),
                      arr(1, consumer("i-0123456789abcdef0123456789abcdef", 1, 5000)),
                      arr(1, consumer("i-fedcba9876543210fedcba9876543210", 0, 5000)),
                      arr(4, num(1), bulk("7-0"), bulk("7-0"), empty()),
                      arr(3, consumer("busy", 1, 90000), consumer("gone", 0, 90000),
                          consumer("i-fedcba9876543210fedcba9876543210", 0, 90000)),
                      arr(1, bulk("h\tfanout.s.i-fedcba9876543210fedcba9876543210\t"
                                  "i-fedcba9876543210fedcba9876543210\ts\ta")),
                      time_of(100000)),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 3);
    cr_assert_str_eq(cmd_text(&cmds, 0),
                     "XGROUP DESTROY {t}:s:a fanout.s.i-0123456789abcdef0123456789abcdef");
    cr_assert_str_eq(cmd_text(&cmds, 1), "XGROUP DELCONSUMER {t}:s:a g gone");
    cr_assert_str_eq(cmd_text(&cmds, 2), "XTRIM {t}:s:a MINID 7-0"); /* the dead group's 2-0 goes */
    cr_assert_eq(feed(1000, 3, num(1), num(0), num(5)), EDDY_OK);
    eddy_retention_stats st;
    eddy__retention_counters_snapshot(&counters, &st);
    cr_assert_eq(st.groups_removed, 1);
    cr_assert_eq(st.consumers_removed, 1);
}

/* A fanout group whose consumer read recently stays, lease or not (a live reader whose control
 * loop could not renew). */
Test(retention, a_recent_reader_keeps_its_fanout_group) {
    setup();
    const char *g = "fanout.s.i-0123456789abcdef0123456789abcdef";
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(feed(1000, 2, time_of(100000), arr(1, group(g, 1, 0, "8-0"))), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 3);
    cr_assert_eq(feed(1000, 3, arr(1, consumer("i-0123456789abcdef0123456789abcdef", 0, 100)),
                      empty(), time_of(100000)),
                 EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 1);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XTRIM {t}:s:a MINID 8-1");
}

/* Settings with ns "t" and the given instance (NULL: random), and a fanout subscription. */
static eddy__sub *fanout_sub(const char *instance, const char *pattern) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = instance;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    ret = NULL;
    eddy__cmdlist_init(&cmds);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "f";
    spec.pattern = pattern;
    spec.shape = EDDY_FANOUT;
    spec.handler = (eddy_handler_fn)1;
    eddy__sub *sub;
    cr_assert_eq(eddy__sub_new(&settings, &spec, &sub, NULL), EDDY_OK);
    return sub;
}

Test(retention, stop_destroys_a_random_instance_s_fanout_groups) {
    eddy__sub *sub = fanout_sub(NULL, "a.*");
    bool need;
    cr_assert_eq(eddy__retention_stop_list(&settings, &sub, 1, &cmds, &need), EDDY_OK);
    cr_assert(need);
    cr_assert_str_eq(cmd_text(&cmds, 0), "SMEMBERS {t}:subjects");
    eddy__cmdlist_reset(&cmds);
    char *text = arr(3, bulk("a.x"), bulk("b"), bulk("a.y"));
    redisReply *r = raw_parse(text);
    free(text);
    cr_assert_eq(eddy__retention_stop_destroy(&settings, &sub, 1, r, &cmds), EDDY_OK);
    freeReplyObject(r);
    cr_assert_eq(cmds.n, 2);
    char want[256];
    snprintf(want, sizeof(want), "XGROUP DESTROY {t}:s:a.x %s", sub->group);
    cr_assert_str_eq(cmd_text(&cmds, 0), want);
    eddy__sub_free(sub);
}

Test(retention, a_named_instance_keeps_its_fanout_groups) {
    eddy__sub *sub = fanout_sub("named", "a");
    bool need = true;
    cr_assert_eq(eddy__retention_stop_list(&settings, &sub, 1, &cmds, &need), EDDY_OK);
    cr_assert_not(need);
    cr_assert_eq(cmds.n, 0);
    eddy__sub_free(sub);
}

Test(retention, grace_below_discovery_is_refused) {
    setup();
    eddy_settings s;
    eddy_settings_init(&s);
    s.retention_grace_ms = s.discovery_ms - 1;
    eddy__settings tmp;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&tmp, &s, &err), EDDY_ERR_INVALID_SPEC);
    cr_assert(strstr(err.detail, "retention_grace_ms"));
}

/* An age limit lists the entries older than "TIME - max age" and cuts there (not at the last
 * listed entry: nothing lies between), counting what the group had not read. */
Test(retention, an_age_limit_cuts_at_the_age) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.instance = "me";
    s.retention_interval_ms = 1000;
    s.retention_grace_ms = 5000;
    s.retention_max_age_ms = 60000;
    s.consumer_idle_ms = 0;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    memset(&counters, 0, sizeof(counters));
    ret = eddy__retention_new(&settings, &counters, "me", 0);
    eddy__cmdlist_init(&cmds);
    to_groups(1000, arr(1, bulk("a")));
    cr_assert_eq(feed(1000, 2, time_of(100000), arr(1, group("g", 1, 0, "30000-0"))), EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 3);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XRANGE {t}:s:a - 39999-18446744073709551615 COUNT 10000");
    cr_assert_eq(
        feed(1000, 3, arr(2, entry("20000-0"), entry("35000-0")), empty(), time_of(100000)),
        EDDY_OK);
    plan(1000);
    cr_assert_eq(cmds.n, 1);
    cr_assert_str_eq(cmd_text(&cmds, 0), "XTRIM {t}:s:a MINID 40000-0");
    cr_assert_eq(feed(1000, 1, num(2)), EDDY_OK);
    eddy_retention_stats st;
    eddy__retention_counters_snapshot(&counters, &st);
    cr_assert_eq(st.dropped, 1); /* 35000-0: after the group's last delivered */
    cr_assert_eq(st.trimmed, 2);
}
