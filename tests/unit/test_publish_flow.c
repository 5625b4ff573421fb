/* SPDX-License-Identifier: BSD-3-Clause */
/* A publish call's sequence (src/bus/publish_flow.h) with no server and no front end: when it
 * says to send again (a cluster's refusal before the deadline, a lost function library once),
 * and how it reads the outcome (a failed send, a batch counted up to its first failure, the
 * entry id). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/publish_flow.h"
#include "config/settings.h"
#include "events/event_internal.h"
#include "link/library.h"
#include "raw.h"
#include "store/store.h"
#include "util/refusal.h"

static eddy__settings settings;
static eddy__publisher *pub;

static void setup_with(long long dedup_ms) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.publish_dedup_ms = dedup_ms;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    cr_assert(pub = eddy__publisher_new(&settings));
}

static void setup(void) { setup_with(0); }
static void setup_dedup(void) { setup_with(5000); }

static void teardown(void) {
    eddy__publisher_free(pub);
    eddy__settings_free(&settings);
}

TestSuite(publish_flow, .init = setup, .fini = teardown);
TestSuite(publish_flow_dedup, .init = setup_dedup, .fini = teardown);

/* An event whose id is `id`, from the settings' source. */
static eddy_event *ev_new(const char *id) {
    eddy_event *ev = NULL;
    cr_assert_eq(eddy__event_create_for("/t", "t", "test", &ev, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    return ev;
}

static void free_replies(redisReply **r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (r[i])
            freeReplyObject(r[i]);
}

/* The failure a cluster's MOVED causes on a link (util/refusal.h: its mark in the detail). */
static eddy_error moved(void) {
    eddy_error e = {.status = EDDY_ERR_IO};
    snprintf(e.detail, sizeof(e.detail), "the slot " EDDY__MOVED_MARK " 127.0.0.1:7002");
    cr_assert_eq(eddy__cluster_refused(e.status, &e), EDDY__CLUSTER_MOVED);
    return e;
}

Test(publish_flow, a_refused_publish_goes_again_until_the_deadline) {
    eddy_event *ev = ev_new("e1");
    const eddy_event *evs[] = {ev};
    eddy__publish_flow f;
    eddy__cmdlist cmds, again;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 1, 1000, &cmds, NULL),
                 EDDY_OK);
    cr_expect_eq(f.until, 1000 + eddy__command_timeout_ms(&settings, -1));
    eddy_error e = moved();
    cr_assert_eq(eddy__publish_flow_feed(&f, &cmds, e.status, &e, NULL, f.until - 1, &again),
                 EDDY__PUB_SEND);
    cr_expect_eq(again.n, cmds.n, "a copy of what was sent");
    eddy__cmdlist_reset(&again);
    cr_expect_eq(eddy__publish_flow_feed(&f, &cmds, e.status, &e, NULL, f.until, &again),
                 EDDY__PUB_END, "the deadline passed");
    eddy_error out = {0};
    cr_expect_eq(eddy__publish_flow_end(&f, &cmds, e.status, &e, NULL, NULL, 0, &out), e.status);
    cr_expect_str_eq(out.detail, e.detail, "the send's own failure");
    cr_expect_eq(f.published, 0);
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(ev);
}

Test(publish_flow, a_lost_connection_is_not_sent_again) {
    eddy_event *ev = ev_new("e1");
    const eddy_event *evs[] = {ev};
    eddy__publish_flow f;
    eddy__cmdlist cmds, again;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 1, 0, &cmds, NULL),
                 EDDY_OK);
    eddy_error io = {.status = EDDY_ERR_IO};
    strcpy(io.detail, "connection to 127.0.0.1:7000: closed by the server");
    cr_expect_eq(eddy__publish_flow_feed(&f, &cmds, EDDY_ERR_IO, &io, NULL, 0, &again),
                 EDDY__PUB_END);
    eddy_error out = {.status = EDDY_ERR_BACKEND, .detail = "stale"};
    cr_expect_eq(eddy__publish_flow_end(&f, &cmds, EDDY_ERR_CLOSED, NULL, NULL, NULL, 0, &out),
                 EDDY_ERR_CLOSED);
    cr_expect_eq(out.status, EDDY_OK, "no detail: a blank one");
    cr_expect_str_eq(out.detail, "");
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(ev);
}

/* A batch's outcome: its publishes in order, counted while they succeed. */
Test(publish_flow, a_batch_counts_up_to_its_first_failure) {
    eddy_event *a = ev_new("e1"), *b = ev_new("e2"), *c = ev_new("e3");
    const eddy_event *evs[] = {a, b, c};
    eddy__publish_flow f;
    eddy__cmdlist cmds, again;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 3, 0, &cmds, NULL),
                 EDDY_OK);
    cr_assert_eq(cmds.n, 4, "SADD, then an XADD each");
    redisReply *r[4] = {raw_parse(":1\r\n"), raw_parse("$3\r\n1-0\r\n"),
                        raw_parse("-OOM command not allowed\r\n"), raw_parse("$3\r\n3-0\r\n")};
    cr_assert_eq(eddy__publish_flow_feed(&f, &cmds, EDDY_OK, NULL, r, 0, &again), EDDY__PUB_END);
    eddy_error out = {0};
    eddy_status st = eddy__publish_flow_end(&f, &cmds, EDDY_OK, NULL, r, NULL, 0, &out);
    cr_expect_neq(st, EDDY_OK);
    cr_expect_eq(out.status, st);
    cr_expect_eq(f.published, 1, "the first failure ends the count");
    free_replies(r, 4);
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(a);
    eddy_event_free(b);
    eddy_event_free(c);
}

Test(publish_flow, a_single_publish_gives_its_entry_id) {
    eddy_event *ev = ev_new("e1");
    const eddy_event *evs[] = {ev};
    eddy__publish_flow f;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 1, 0, &cmds, NULL),
                 EDDY_OK);
    redisReply *r[2] = {raw_parse(":1\r\n"), raw_parse("$3\r\n7-0\r\n")};
    char id[32] = "";
    cr_expect_eq(eddy__publish_flow_end(&f, &cmds, EDDY_OK, NULL, r, id, sizeof(id), NULL),
                 EDDY_OK);
    cr_expect_str_eq(id, "7-0");
    cr_expect_eq(f.published, 1);
    free_replies(r, 2);
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(ev);
}

/* With publish_dedup_ms, a server that lost the function library wrote nothing: the publishes
 * go once more behind a load, and not a third time. */
Test(publish_flow_dedup, a_lost_library_is_loaded_once) {
    eddy_event *ev = ev_new("e1");
    const eddy_event *evs[] = {ev};
    eddy__publish_flow f;
    eddy__cmdlist cmds, again, third;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 1, 0, &cmds, NULL),
                 EDDY_OK);
    redisReply *ok[3] = {raw_parse("+" EDDY__STORE_LIBRARY "\r\n"), raw_parse(":1\r\n"),
                         raw_parse("$3\r\n1-0\r\n")};
    cr_assert_eq(eddy__publish_flow_end(&f, &cmds, EDDY_OK, NULL, ok, NULL, 0, NULL), EDDY_OK);
    free_replies(ok, 3);
    eddy__cmdlist_reset(&cmds);

    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, "a.b", evs, 1, 0, &cmds, NULL),
                 EDDY_OK);
    cr_assert_eq(cmds.n, 1, "the FCALL alone");
    redisReply *lost[1] = {raw_parse("-ERR Function not found\r\n")};
    cr_assert_eq(eddy__publish_flow_feed(&f, &cmds, EDDY_OK, NULL, lost, 0, &again),
                 EDDY__PUB_SEND);
    cr_expect(eddy__library_is_load(&again, 0));
    cr_expect_eq(again.n, 2);
    redisReply *still[2] = {raw_parse("+" EDDY__STORE_LIBRARY "\r\n"),
                            raw_parse("-ERR Function not found\r\n")};
    cr_expect_eq(eddy__publish_flow_feed(&f, &again, EDDY_OK, NULL, still, 0, &third),
                 EDDY__PUB_END, "refused behind its own load: no third try");
    eddy_error out = {0};
    cr_expect_eq(eddy__publish_flow_end(&f, &again, EDDY_OK, NULL, still, NULL, 0, &out),
                 EDDY_ERR_BACKEND);
    cr_expect_eq(f.published, 0);
    free_replies(lost, 1);
    free_replies(still, 2);
    eddy__cmdlist_reset(&again);
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(ev);
}

/* Whether a publish to subject now registers it (an SADD among its commands); when answer, the
 * publish (of no look) is answered, so that the publisher knows the subject from then on. */
static bool registers(const char *subject, bool answer) {
    eddy_event *ev = ev_new("e1");
    const eddy_event *evs[] = {ev};
    eddy__publish_flow f;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    cr_assert_eq(eddy__publish_flow_begin(&f, pub, &settings, subject, evs, 1, 0, &cmds, NULL),
                 EDDY_OK);
    bool sadd = false;
    for (size_t i = 0; i < cmds.n; i++)
        sadd |= strncmp(cmds.cmds[i].argv[0], "SADD", 4) == 0;
    if (answer) {
        cr_assert_eq(cmds.n, 2, "SADD, XADD");
        redisReply *r[2] = {raw_parse(":1\r\n"), raw_parse("$3\r\n7-0\r\n")};
        cr_assert_eq(eddy__publish_flow_end(&f, &cmds, EDDY_OK, NULL, r, NULL, 0, NULL), EDDY_OK);
        free_replies(r, 2);
    }
    eddy__cmdlist_reset(&cmds);
    eddy_event_free(ev);
    return sadd;
}

/* The one rule of both front ends: the known subjects are forgotten when the publishing
 * connection was lost, whether or not a call failed with it, and only then. */
Test(publish_flow, a_lost_connection_forgets_the_known_subjects) {
    eddy__mux m;
    eddy__mux_init(&m);
    cr_assert(registers("a.b", true), "registered first");
    eddy__publish_mux_settle(pub, &m);
    cr_expect_not(registers("a.b", false), "no loss: known");
    eddy__mux_lost(&m, EDDY_ERR_IO, NULL, 0); /* no request was out */
    eddy__publish_mux_settle(pub, &m);
    cr_expect(registers("a.b", false), "the lost server's set may be gone: registered again");
    eddy__publish_mux_settle(NULL, &m); /* a front end with no publisher yet */
}
