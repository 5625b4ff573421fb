/* SPDX-License-Identifier: BSD-3-Clause */
/* The dead-letter replay's step machine with no server (src/bus/replay_flow.h): the rounds it
 * plans (checked as text), what each may be sent again after a lost connection, and what the
 * replies it is fed (RESP parsed by hiredis) lead to: one dead letter and all of them, a missing
 * one, dead letters left in place, a refused publish written back, a write-back that failed, a
 * lost round, and a server that sends more than was asked for. The integration test
 * (test_dlq.c) runs the same rules against real servers on both backends. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/replay_flow.h"
#include "config/settings.h"
#include "eddy/dlq.h"
#include "error.h"
#include "raw.h"

static eddy__settings settings;
static eddy__replay_flow *flow;
static eddy__cmdlist cmds;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.max_event_size = 4096;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    eddy__cmdlist_init(&cmds);
}

static void teardown(void) {
    eddy__cmdlist_reset(&cmds);
    eddy__replay_flow_free(flow);
    flow = NULL;
    eddy__settings_free(&settings);
}

TestSuite(replay_flow, .init = setup, .fini = teardown);

static const char *cmd_text(size_t i) {
    static char buf[1024];
    buf[0] = '\0';
    const eddy__cmd *c = &cmds.cmds[i];
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

static void start(bool one, const char *id) {
    cr_assert_eq(eddy__replay_flow_new(&settings, "g", one, id, &flow, NULL), EDDY_OK);
}

/* Plans the next round: n commands, the first of them `first` (when not NULL). */
static void expect_round(size_t n, const char *first, bool idempotent) {
    bool idem = !idempotent;
    eddy__replay_flow_plan(flow, &cmds, &idem);
    cr_assert_eq(cmds.n, n, "planned %zu commands (first: %s), expected %zu", cmds.n,
                 cmds.n ? cmd_text(0) : "-", n);
    if (first)
        cr_assert_str_eq(cmd_text(0), first);
    if (n)
        cr_expect_eq(idem, idempotent, "%s: idempotent %d", cmd_text(0), idem);
}

/* Feeds one reply per planned command, given as RESP. */
static void feed(const char *const *resp) {
    redisReply *r[400];
    cr_assert(cmds.n <= 400);
    for (size_t i = 0; i < cmds.n; i++)
        cr_assert(r[i] = raw_parse(resp[i]), "reply %zu: %s", i, resp[i]);
    eddy__replay_flow_feed(flow, EDDY_OK, r, NULL);
    for (size_t i = 0; i < cmds.n; i++)
        freeReplyObject(r[i]);
}

static void feed_one(const char *resp) { feed(&resp); }

static char *bulk(char *p, const char *s) { return p + sprintf(p, "$%zu\r\n%s\r\n", strlen(s), s); }

/* An XRANGE reply of n dead letters with ids ids[i], each naming subject subjects[i] ("" for
 * none: not replayable). */
static const char *entries(size_t n, const char *const *ids, const char *const *subjects) {
    static char buf[64 * 1024];
    char *p = buf + sprintf(buf, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++) {
        p += sprintf(p, "*2\r\n");
        p = bulk(p, ids[i]);
        const char *fv[] = {"_dlq_subject",
                            subjects[i],
                            "_dlq_entry",
                            "5-0",
                            "_dlq_deliveries",
                            "3",
                            "_dlq_reason",
                            "max-deliveries",
                            "_dlq_group",
                            "g",
                            "specversion",
                            "1.0",
                            "id",
                            "e1",
                            "source",
                            "/s",
                            "type",
                            "t.x"};
        size_t nfv = sizeof(fv) / sizeof(fv[0]);
        p += sprintf(p, "*%zu\r\n", nfv);
        for (size_t k = 0; k < nfv; k++)
            p = bulk(p, fv[k]);
    }
    return buf;
}

/* An XRANGE reply of n replayable dead letters, ids 1-0 to n-0. */
static const char *numbered(size_t n) {
    static char idbuf[80][16];
    const char *ids[80], *subjects[80];
    cr_assert(n <= 80);
    for (size_t i = 0; i < n; i++) {
        snprintf(idbuf[i], sizeof(idbuf[i]), "%zu-0", i + 1);
        ids[i] = idbuf[i];
        subjects[i] = "orders";
    }
    return entries(n, ids, subjects);
}

/* The five replies of a replay transaction whose EXEC answered exec, k times into v. */
static void transactions(const char **v, size_t k, const char *exec) {
    for (size_t i = 0; i < k; i++) {
        v[5 * i] = "+OK\r\n";
        v[5 * i + 1] = v[5 * i + 2] = v[5 * i + 3] = "+QUEUED\r\n";
        v[5 * i + 4] = exec;
    }
}

#define PUBLISHED "*3\r\n$4\r\n10-0\r\n:1\r\n:1\r\n"
#define REFUSED_DELETED "*3\r\n-WRONGTYPE Operation against a key\r\n:1\r\n:1\r\n"

Test(replay_flow, one_dead_letter_is_read_then_replayed) {
    start(true, "9-1");
    expect_round(1, "XRANGE {t}:dlq:g 9-1 9-1", true);
    feed_one(entries(1, (const char *[]){"9-1"}, (const char *[]){"orders"}));
    expect_round(5, "MULTI", false);
    cr_expect_str_eq(cmd_text(1), "XADD {t}:s:orders * specversion 1.0 id e1 source /s type t.x");
    cr_expect_str_eq(cmd_text(3), "XDEL {t}:dlq:g 9-1");
    const char *r[5];
    transactions(r, 1, PUBLISHED);
    feed(r);
    expect_round(0, NULL, false);
    size_t n = 9;
    char id[EDDY_DLQ_ID_SIZE] = "";
    cr_expect_eq(eddy__replay_flow_result(flow, &n, id, sizeof(id), NULL), EDDY_OK);
    cr_expect_eq(n, 1);
    cr_expect_str_eq(id, "10-0");
}

Test(replay_flow, a_missing_dead_letter_publishes_nothing) {
    start(true, "9-1");
    expect_round(1, "XRANGE {t}:dlq:g 9-1 9-1", true);
    feed_one("*0\r\n");
    expect_round(0, NULL, false);
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, NULL, NULL, 0, &err), EDDY_ERR_NOT_FOUND);
    cr_expect(strstr(err.detail, "no dead letter 9-1"), "%s", err.detail);
}

Test(replay_flow, a_bad_id_is_refused_before_anything_is_sent) {
    start(true, NULL);
    expect_round(0, NULL, false);
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, NULL, NULL, 0, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "(null)"), "%s", err.detail);
}

Test(replay_flow, all_stop_at_the_newest_and_leave_the_unreplayable_in_place) {
    start(false, NULL);
    expect_round(1, "XREVRANGE {t}:dlq:g + - COUNT 1", true);
    feed_one(entries(1, (const char *[]){"9-3"}, (const char *[]){"orders"}));
    expect_round(1, "XRANGE {t}:dlq:g - 9-3 COUNT 64", true);
    feed_one(entries(3, (const char *[]){"9-1", "9-2", "9-3"},
                     (const char *[]){"orders", "", "orders"}));
    expect_round(10, "MULTI", false); /* 9-1 and 9-3; 9-2 names no subject */
    cr_expect_str_eq(cmd_text(8), "XDEL {t}:dlq:g 9-3");
    const char *r[10];
    transactions(r, 2, PUBLISHED);
    feed(r);
    expect_round(0, NULL, false); /* fewer than a page: the last one */
    size_t n = 0;
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, &err), EDDY_ERR_MALFORMED);
    cr_expect_eq(n, 2);
    cr_expect(strstr(err.detail, "1 dead letter(s)") && strstr(err.detail, "9-2"), "%s",
              err.detail);
}

Test(replay_flow, none_to_replay) {
    start(false, NULL);
    expect_round(1, "XREVRANGE {t}:dlq:g + - COUNT 1", true);
    feed_one("*0\r\n");
    expect_round(0, NULL, false);
    size_t n = 9;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, NULL), EDDY_OK);
    cr_expect_eq(n, 0);
}

Test(replay_flow, full_pages_go_on_from_the_last_id) {
    start(false, NULL);
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"99-0"}, (const char *[]){"orders"}));
    expect_round(1, "XRANGE {t}:dlq:g - 99-0 COUNT 64", true);
    feed_one(numbered(64));
    expect_round(320, "MULTI", false);
    const char *r[320];
    transactions(r, 64, PUBLISHED);
    feed(r);
    expect_round(1, "XRANGE {t}:dlq:g (64-0 99-0 COUNT 64", true);
    feed_one("*0\r\n");
    expect_round(0, NULL, false);
    size_t n = 0;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, NULL), EDDY_OK);
    cr_expect_eq(n, 64);
}

/* A full page whose last transaction was refused (and deleted nothing): no page after it. */
Test(replay_flow, a_page_with_a_failure_is_the_last) {
    start(false, NULL);
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"99-0"}, (const char *[]){"orders"}));
    expect_round(1, NULL, true);
    feed_one(numbered(64));
    expect_round(320, "MULTI", false);
    const char *r[320];
    transactions(r, 64, PUBLISHED);
    r[319] = "*3\r\n-WRONGTYPE x\r\n:1\r\n:0\r\n";
    feed(r);
    expect_round(0, NULL, false);
    size_t n = 0;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, NULL), EDDY_ERR_BACKEND);
    cr_expect_eq(n, 63);
}

Test(replay_flow, a_refused_publish_whose_delete_ran_is_written_back) {
    start(false, NULL);
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"9-2"}, (const char *[]){"orders"}));
    expect_round(1, NULL, true);
    feed_one(entries(2, (const char *[]){"9-1", "9-2"}, (const char *[]){"orders", "orders"}));
    expect_round(10, "MULTI", false);
    const char *r[10];
    transactions(r, 2, PUBLISHED);
    r[9] = REFUSED_DELETED; /* the second */
    feed(r);
    expect_round(1, NULL, false);
    cr_expect(strncmp(cmd_text(0), "XADD {t}:dlq:g * _dlq_subject orders", 36) == 0, "%s",
              cmd_text(0));
    feed_one("$4\r\n12-0\r\n");
    expect_round(0, NULL, false); /* a page with a failure is the last */
    size_t n = 0;
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, &err), EDDY_ERR_BACKEND);
    cr_expect_eq(n, 1, "the first still counts");
    cr_expect(strstr(err.detail, "WRONGTYPE") && strstr(err.detail, "written back under a new id"),
              "%s", err.detail);
}

Test(replay_flow, a_lost_write_back_is_said_and_never_sent_again) {
    start(true, "9-1");
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"9-1"}, (const char *[]){"orders"}));
    expect_round(5, NULL, false);
    const char *r[5];
    transactions(r, 1, REFUSED_DELETED);
    feed(r);
    expect_round(1, NULL, false);
    eddy_error lost;
    eddy__fail(&lost, EDDY_ERR_IO, "connection lost");
    eddy__replay_flow_feed(flow, EDDY_ERR_IO, NULL, &lost);
    expect_round(0, NULL, false);
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, NULL, NULL, 0, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "writing the dead letter back failed too"), "%s", err.detail);
}

Test(replay_flow, a_lost_round_ends_the_replay_with_its_error) {
    start(false, NULL);
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"9-1"}, (const char *[]){"orders"}));
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"9-1"}, (const char *[]){"orders"}));
    expect_round(5, NULL, false);
    eddy_error lost;
    eddy__fail(&lost, EDDY_ERR_TIMEOUT, "no answer");
    eddy__replay_flow_feed(flow, EDDY_ERR_TIMEOUT, NULL, &lost);
    expect_round(0, NULL, false);
    size_t n = 9;
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, &n, NULL, 0, &err), EDDY_ERR_TIMEOUT);
    cr_expect_eq(n, 0);
    cr_expect_str_eq(err.detail, "no answer");
}

Test(replay_flow, more_entries_than_asked_for_are_a_protocol_error) {
    start(false, NULL);
    expect_round(1, NULL, true);
    feed_one(entries(1, (const char *[]){"99-0"}, (const char *[]){"orders"}));
    expect_round(1, NULL, true);
    feed_one(numbered(65));
    expect_round(0, NULL, false);
    eddy_error err;
    cr_expect_eq(eddy__replay_flow_result(flow, NULL, NULL, 0, &err), EDDY_ERR_PROTOCOL);
    cr_expect(strstr(err.detail, "more entries than asked for"), "%s", err.detail);
}
