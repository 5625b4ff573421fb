/* SPDX-License-Identifier: BSD-3-Clause */
/* The Prometheus text format writer (src/bus/prometheus.c): label values and help text escaped as
 * the format wants, the name rules, a family's header written once and only with a sample, ages
 * in exact seconds; and the namespace's document written from an admin scan fed replies as data
 * (RESP text read by hiredis's reader), no server. promtool reads real documents in
 * tests/cli/prometheus.sh. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/admin.h"
#include "bus/prometheus.h"

static char *one_sample(const char *name, eddy__prom_type type, const char *help,
                        const eddy__prom_label *l, size_t n, uint64_t v) {
    eddy__prom p;
    eddy__prom_init(&p);
    eddy__prom_family(&p, name, type, help);
    eddy__prom_u64(&p, l, n, v);
    return eddy__prom_finish(&p);
}

Test(prometheus, writes_help_type_and_samples) {
    eddy__prom p;
    eddy__prom_init(&p);
    eddy__prom_family(&p, "eddy_things", EDDY__PROM_GAUGE, "Things.");
    eddy__prom_label l[2] = {{"namespace", "ns"}, {"group", "g"}};
    eddy__prom_u64(&p, l, 2, 3);
    l[1].value = "h";
    eddy__prom_u64(&p, l, 2, 18446744073709551615ull);
    eddy__prom_family(&p, "eddy_done_total", EDDY__PROM_COUNTER, "Done.");
    eddy__prom_u64(&p, NULL, 0, 0);
    char *doc = eddy__prom_finish(&p);
    cr_assert_str_eq(doc, "# HELP eddy_things Things.\n"
                          "# TYPE eddy_things gauge\n"
                          "eddy_things{namespace=\"ns\",group=\"g\"} 3\n"
                          "eddy_things{namespace=\"ns\",group=\"h\"} 18446744073709551615\n"
                          "# HELP eddy_done_total Done.\n"
                          "# TYPE eddy_done_total counter\n"
                          "eddy_done_total 0\n");
    free(doc);
}

Test(prometheus, a_family_without_samples_leaves_nothing) {
    eddy__prom p;
    eddy__prom_init(&p);
    eddy__prom_family(&p, "eddy_empty", EDDY__PROM_GAUGE, "None.");
    eddy__prom_family(&p, "eddy_one", EDDY__PROM_GAUGE, "One.");
    eddy__prom_u64(&p, NULL, 0, 1);
    eddy__prom_family(&p, "eddy_empty_too_total", EDDY__PROM_COUNTER, "None.");
    char *doc = eddy__prom_finish(&p);
    cr_assert_str_eq(doc, "# HELP eddy_one One.\n# TYPE eddy_one gauge\neddy_one 1\n");
    free(doc);
    eddy__prom_init(&p);
    doc = eddy__prom_finish(&p);
    cr_assert_str_eq(doc, "", "nothing written: an empty document, not NULL");
    free(doc);
}

Test(prometheus, escapes_label_values) {
    eddy__prom_label l[1] = {{"group", "a\"b\\c\nd"}};
    char *doc = one_sample("eddy_x", EDDY__PROM_GAUGE, "X.", l, 1, 1);
    cr_assert(strstr(doc, "\neddy_x{group=\"a\\\"b\\\\c\\nd\"} 1\n"), "%s", doc);
    free(doc);
    /* UTF-8 kept; bytes that are not UTF-8 (a stray continuation byte, a truncated sequence,
     * an encoded surrogate) become U+FFFD; a NULL value is "". */
    eddy__prom_label u[3] = {
        {"subject", "caf\xc3\xa9"}, {"group", "x\x80y\xe2\x82"}, {"consumer", NULL}};
    doc = one_sample("eddy_x", EDDY__PROM_GAUGE, "X.", u, 3, 1);
    cr_assert(strstr(doc, "eddy_x{subject=\"caf\xc3\xa9\",group=\"x\xef\xbf\xbdy\xef\xbf\xbd\xef"
                          "\xbf\xbd\",consumer=\"\"} 1\n"),
              "%s", doc);
    free(doc);
    eddy__prom_label s[1] = {{"group", "\xed\xa0\x80"}}; /* U+D800 */
    doc = one_sample("eddy_x", EDDY__PROM_GAUGE, "X.", s, 1, 1);
    cr_assert(strstr(doc, "eddy_x{group=\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} 1\n"), "%s", doc);
    free(doc);
}

Test(prometheus, escapes_help_text_but_for_quotes) {
    char *doc = one_sample("eddy_x", EDDY__PROM_GAUGE, "a \"b\" \\ c\nd", NULL, 0, 1);
    cr_assert_str_eq(doc, "# HELP eddy_x a \"b\" \\\\ c\\nd\n# TYPE eddy_x gauge\neddy_x 1\n");
    free(doc);
}

Test(prometheus, name_rules) {
    const char *good[] = {"eddy_x", "a", "_x", "a:b", ":x", "X9_z"};
    const char *bad[] = {"", "9x", "a-b", "a b", "caf\xc3\xa9", "a.b", "a{", NULL};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        cr_assert(eddy__prom_metric_name_ok(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        cr_assert_not(eddy__prom_metric_name_ok(bad[i]), "%s", bad[i] ? bad[i] : "NULL");
    const char *lgood[] = {"group", "_x", "a9", "A_b"};
    const char *lbad[] = {"", "__name__", "__x", "a:b", "9a", "a-b", NULL};
    for (size_t i = 0; i < sizeof(lgood) / sizeof(*lgood); i++)
        cr_assert(eddy__prom_label_name_ok(lgood[i]), "%s", lgood[i]);
    for (size_t i = 0; i < sizeof(lbad) / sizeof(*lbad); i++)
        cr_assert_not(eddy__prom_label_name_ok(lbad[i]), "%s", lbad[i] ? lbad[i] : "NULL");
}

Test(prometheus, a_broken_rule_fails_the_document) {
    eddy__prom_label ok[1] = {{"group", "g"}};
    cr_assert_null(one_sample("eddy_x", EDDY__PROM_COUNTER, "X.", ok, 1, 1),
                   "a counter without _total");
    cr_assert_null(one_sample("eddy_x_total", EDDY__PROM_GAUGE, "X.", ok, 1, 1),
                   "a gauge with _total");
    cr_assert_null(one_sample("eddy-x", EDDY__PROM_GAUGE, "X.", ok, 1, 1), "a bad metric name");
    cr_assert_null(one_sample("eddy_x", EDDY__PROM_GAUGE, NULL, ok, 1, 1), "no help");
    eddy__prom_label bad[1] = {{"__name__", "g"}};
    cr_assert_null(one_sample("eddy_x", EDDY__PROM_GAUGE, "X.", bad, 1, 1), "a reserved label");
    eddy__prom_label twice[2] = {{"group", "g"}, {"group", "h"}};
    cr_assert_null(one_sample("eddy_x", EDDY__PROM_GAUGE, "X.", twice, 2, 1), "a label twice");
    eddy__prom p;
    eddy__prom_init(&p);
    eddy__prom_u64(&p, NULL, 0, 1);
    cr_assert_null(eddy__prom_finish(&p), "a sample before any family");
    /* The failure sticks: a good family after a bad one does not bring the document back. */
    eddy__prom_init(&p);
    eddy__prom_family(&p, "eddy_x", EDDY__PROM_COUNTER, "X.");
    eddy__prom_family(&p, "eddy_y", EDDY__PROM_GAUGE, "Y.");
    eddy__prom_u64(&p, NULL, 0, 1);
    cr_assert_null(eddy__prom_finish(&p));
}

Test(prometheus, ages_in_exact_seconds) {
    const struct {
        long long ms;
        const char *text;
    } cases[] = {
        {0, "0"},        {1, "0.001"},        {10, "0.01"},
        {1500, "1.5"},   {2010, "2.01"},      {60000, "60"},
        {-250, "-0.25"}, {999999, "999.999"}, {9223372036854775807LL, "9223372036854775.807"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        eddy__prom p;
        eddy__prom_init(&p);
        eddy__prom_family(&p, "eddy_age_seconds", EDDY__PROM_GAUGE, "Age.");
        eddy__prom_ms(&p, NULL, 0, cases[i].ms);
        char *doc = eddy__prom_finish(&p), want[128];
        snprintf(want, sizeof(want), "\neddy_age_seconds %s\n", cases[i].text);
        cr_assert(strstr(doc, want), "%lld ms: %s", cases[i].ms, doc);
        free(doc);
    }
}

/* ---- the namespace's document from a scan fed replies --------------------------------- */

static char resp_buf[8192];
static size_t resp_len;

__attribute__((format(printf, 1, 2))) static void resp(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    resp_len += (size_t)vsnprintf(resp_buf + resp_len, sizeof(resp_buf) - resp_len, fmt, ap);
    va_end(ap);
    cr_assert_lt(resp_len, sizeof(resp_buf));
}

static void bulk(const char *s) { resp("$%zu\r\n%s\r\n", strlen(s), s); }

/* The replies written with resp() since the last call, n of them. */
static redisReply **replies(size_t n) {
    redisReader *r = redisReaderCreate();
    cr_assert_eq(redisReaderFeed(r, resp_buf, resp_len), REDIS_OK);
    redisReply **out = calloc(n ? n : 1, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        void *reply = NULL;
        cr_assert_eq(redisReaderGetReply(r, &reply), REDIS_OK);
        cr_assert(reply, "reply %zu of %zu is not complete", i, n);
        out[i] = reply;
    }
    redisReaderFree(r);
    resp_len = 0;
    return out;
}

static void feed(eddy__admin_scan *s, size_t n) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__admin_scan_plan(s, &cmds), EDDY_OK);
    cr_assert_eq(cmds.n, n, "the round has %zu commands, the test %zu", cmds.n, n);
    redisReply **r = replies(n);
    eddy_error err = {0};
    cr_assert_eq(eddy__admin_scan_feed(s, &cmds, r, n, &err), EDDY_OK, "%s", err.detail);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
    free(r);
    eddy__cmdlist_reset(&cmds);
}

/* One XINFO GROUPS record; lag < -1: nil (the server cannot tell). */
static void group_record(const char *name, long long consumers, long long pending, long long lag) {
    resp("*8\r\n");
    bulk("name");
    bulk(name);
    resp("$9\r\nconsumers\r\n:%lld\r\n$7\r\npending\r\n:%lld\r\n", consumers, pending);
    bulk("lag");
    if (lag < -1)
        resp("$-1\r\n");
    else
        resp(":%lld\r\n", lag);
}

Test(prometheus, the_namespace_document_from_a_scan) {
    eddy__admin_scan *s = eddy__admin_scan_new("ns", NULL);
    cr_assert(s);
    /* round 1: the subjects (one not eddy's: skipped) and the server's clock */
    resp("*3\r\n");
    bulk("b.two");
    bulk("a.one");
    bulk("not a subject");
    resp("*2\r\n");
    bulk("1700000010");
    bulk("000000");
    feed(s, 2);
    /* round 2: per subject its length, groups and XINFO STREAM (for entries-added) */
    resp(":5\r\n*2\r\n");
    group_record("q\"1\\", 1, 2, 3);
    group_record("w2", 0, 0, -2);
    resp("*2\r\n$13\r\nentries-added\r\n:7\r\n");
    resp(":4\r\n*1\r\n");
    group_record("w2", 2, 0, 4);
    resp("-ERR no such key\r\n"); /* gone meanwhile: entries-added unknown */
    feed(s, 6);
    /* round 3: the oldest pending entry of the one group with pending entries, then each
     * group name's dead letters */
    resp("*4\r\n:2\r\n");
    bulk("1700000008500-0");
    bulk("1700000009000-0");
    resp("*0\r\n");
    resp(":0\r\n:7\r\n");
    feed(s, 3);
    eddy__cmdlist done;
    eddy__cmdlist_init(&done);
    cr_assert_eq(eddy__admin_scan_plan(s, &done), EDDY_OK);
    cr_assert_eq(done.n, 0, "the scan is complete");
    /* the registry: two handlers of w2, a responder of w2, and a member eddy did not write */
    resp("*8\r\n");
    bulk("h\tw2\ti-1\twork\tb.*");
    bulk("1700000020000");
    bulk("h\tw2\ti-2\twork\tb.*");
    bulk("1700000020000");
    bulk("r\tw2\ti-3\tanswer\ta.one");
    bulk("1700000020000");
    bulk("written by hand");
    bulk("1700000020000");
    redisReply **reg = replies(1);
    eddy_error err = {0};
    char *doc = eddy__admin_stats_prometheus("ns", s, reg[0], &err);
    cr_assert(doc, "%s", err.detail);
    const char *want =
        "# HELP eddy_subjects Subjects of the namespace (those the pattern matches).\n"
        "# TYPE eddy_subjects gauge\n"
        "eddy_subjects{namespace=\"ns\"} 2\n"
        "# HELP eddy_subject_length Entries in the subject's stream.\n"
        "# TYPE eddy_subject_length gauge\n"
        "eddy_subject_length{namespace=\"ns\",subject=\"a.one\"} 5\n"
        "eddy_subject_length{namespace=\"ns\",subject=\"b.two\"} 4\n";
    cr_assert(strncmp(doc, want, strlen(want)) == 0, "%s", doc);
    const char *lines[] = {
        "eddy_subject_group_consumers{namespace=\"ns\",subject=\"a.one\",group=\"q\\\"1\\\\\"} 1",
        "eddy_subject_group_pending{namespace=\"ns\",subject=\"a.one\",group=\"q\\\"1\\\\\"} 2",
        "eddy_subject_group_lag{namespace=\"ns\",subject=\"a.one\",group=\"q\\\"1\\\\\"} 3",
        "eddy_subject_group_lag{namespace=\"ns\",subject=\"b.two\",group=\"w2\"} 4",
        "eddy_subject_group_oldest_pending_age_seconds{namespace=\"ns\",subject=\"a.one\","
        "group=\"q\\\"1\\\\\"} 1.5",
        "eddy_subject_group_oldest_pending_age_seconds{namespace=\"ns\",subject=\"a.one\","
        "group=\"w2\"} 0",
        "eddy_group_subjects{namespace=\"ns\",group=\"w2\"} 2",
        "eddy_group_consumers{namespace=\"ns\",group=\"w2\"} 2",
        "eddy_group_pending{namespace=\"ns\",group=\"q\\\"1\\\\\"} 2",
        "eddy_group_lag{namespace=\"ns\",group=\"q\\\"1\\\\\"} 3",
        "eddy_group_oldest_pending_age_seconds{namespace=\"ns\",group=\"q\\\"1\\\\\"} 1.5",
        "eddy_group_dead_letters{namespace=\"ns\",group=\"q\\\"1\\\\\"} 0",
        "eddy_group_dead_letters{namespace=\"ns\",group=\"w2\"} 7",
        "# TYPE eddy_registry_subscriptions gauge",
        "eddy_registry_subscriptions{namespace=\"ns\",group=\"w2\",kind=\"handler\"} 2",
        "eddy_registry_subscriptions{namespace=\"ns\",group=\"w2\",kind=\"responder\"} 1",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
        char framed[512];
        snprintf(framed, sizeof(framed), "\n%s\n", lines[i]);
        cr_assert(strstr(doc, framed), "no line '%s' in:\n%s", lines[i], doc);
    }
    /* A lag the server cannot tell is left out, on the subject and in the group's sum. */
    cr_assert_null(strstr(doc, "eddy_subject_group_lag{namespace=\"ns\",subject=\"a.one\","
                               "group=\"w2\"}"),
                   "%s", doc);
    cr_assert_null(strstr(doc, "eddy_group_lag{namespace=\"ns\",group=\"w2\"}"), "%s", doc);
    /* Each family once, its samples together: no "# TYPE" line twice. */
    for (const char *t = strstr(doc, "# TYPE "); t; t = strstr(t + 1, "# TYPE ")) {
        char name[128];
        cr_assert_eq(sscanf(t, "# TYPE %127s", name), 1);
        char type_line[160];
        snprintf(type_line, sizeof(type_line), "# TYPE %s ", name);
        cr_assert_null(strstr(t + 1, type_line), "%s twice", name);
    }
    cr_assert_eq(doc[strlen(doc) - 1], '\n');
    free(doc);
    /* A registry reply it cannot read fails the document with its status. */
    resp("-ERR no\r\n");
    redisReply **bad = replies(1);
    cr_assert_null(eddy__admin_stats_prometheus("ns", s, bad[0], &err));
    cr_assert_eq(err.status, EDDY_ERR_BACKEND, "%s", eddy_status_name(err.status));
    freeReplyObject(bad[0]);
    free(bad);
    freeReplyObject(reg[0]);
    free(reg);
    eddy__admin_scan_free(s);
}
