/* SPDX-License-Identifier: BSD-3-Clause */
/* The dead-letter core with no server: the commands it builds (checked as text), the replies
 * it reads (written as RESP and parsed by hiredis), including every failure of a replay's
 * transaction, and dead letters built from entries the consumer writes or a person wrote. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/dlq.h"
#include "config/settings.h"
#include "events/entry.h"
#include "raw.h"

static eddy__settings settings;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.max_event_size = 4096;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
}

static void teardown(void) { eddy__settings_free(&settings); }

TestSuite(dlq_core, .init = setup, .fini = teardown);

static const char *cmd_text(const eddy__cmd *c) {
    static char buf[4096];
    buf[0] = '\0';
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

/* A dead letter as the consumer writes one, original fields after the _dlq_ ones. */
static eddy_dead_letter *consumer_shaped(void) {
    const char *fv[] = {
        "_dlq_subject", "orders",      "_dlq_entry", "5-0",        "_dlq_deliveries",
        "20",           "_dlq_reason", "malformed",  "_dlq_group", "g",
        "specversion",  "1.0",         "id",         "e1",         "source",
        "/s",           "type",        "t.x",        "_reply_to",  "{t}:inbox:i"};
    size_t n = sizeof(fv) / sizeof(fv[0]), len[32];
    for (size_t i = 0; i < n; i++)
        len[i] = strlen(fv[i]);
    eddy_dead_letter *dl = eddy__dead_letter_new("9-1", 3, fv, len, n, 4096);
    cr_assert(dl);
    return dl;
}

Test(dlq_core, public_reasons_are_the_ones_the_consumer_writes) {
    cr_expect_str_eq(EDDY_DLQ_REASON_MAX_DELIVERIES, EDDY_REASON_MAX_DELIVERIES);
    cr_expect_str_eq(EDDY_DLQ_REASON_MALFORMED, EDDY_REASON_MALFORMED);
    cr_expect_str_eq(EDDY_DLQ_REASON_TOO_LARGE, EDDY_REASON_TOO_LARGE);
    cr_expect_str_eq(eddy_status_name(EDDY_ERR_NOT_FOUND), "EDDY_ERR_NOT_FOUND");
    cr_expect_str_eq(eddy_status_str(EDDY_ERR_NOT_FOUND), "not found");
    cr_expect_eq(EDDY_ERR_UNAVAILABLE + 1, EDDY_ERR_NOT_FOUND, "new statuses go at the end");
    cr_expect_eq(EDDY_ERR_NOT_FOUND + 1, EDDY_ERR_AUTH, "new statuses go at the end");
    cr_expect_eq(EDDY_ERR_AUTH + 1, EDDY_ERR_TLS, "new statuses go at the end");
    cr_expect_str_eq(eddy_status_name(EDDY_ERR_TLS), "EDDY_ERR_TLS");
    cr_expect_eq(EDDY_ERR_TLS + 1, EDDY_ERR_SERVER_FULL, "new statuses go at the end");
    cr_expect_str_eq(eddy_status_name(EDDY_ERR_SERVER_FULL), "EDDY_ERR_SERVER_FULL");
    cr_expect_eq(EDDY_ERR_SERVER_FULL + 1, EDDY_STATUS_COUNT_, "new statuses go at the end");
}

Test(dlq_core, a_dead_letter_reads_its_fields_by_name) {
    eddy_dead_letter *dl = consumer_shaped();
    cr_expect_str_eq(eddy_dead_letter_id(dl), "9-1");
    cr_expect_str_eq(eddy_dead_letter_subject(dl), "orders");
    cr_expect_str_eq(eddy_dead_letter_entry_id(dl), "5-0");
    cr_expect_str_eq(eddy_dead_letter_reason(dl), "malformed");
    cr_expect_str_eq(eddy_dead_letter_group(dl), "g");
    cr_expect_eq(eddy_dead_letter_deliveries(dl), 20);
    const eddy_event *ev;
    cr_assert_eq(eddy_dead_letter_event(dl, &ev, NULL), EDDY_OK);
    cr_expect_str_eq(eddy_event_id(ev), "e1");
    cr_expect_str_eq(eddy_dead_letter_field(dl, "_reply_to", NULL), "{t}:inbox:i",
                     "eddy's other fields are the original's");
    eddy_dead_letter_free(dl);

    /* Written by hand: fields missing, in another order, repeated. */
    const char *fv[] = {"id", "x", "_dlq_reason", "r1", "_dlq_reason", "r2", "_dlq_other", "?"};
    size_t len[8];
    for (size_t i = 0; i < 8; i++)
        len[i] = strlen(fv[i]);
    dl = eddy__dead_letter_new("1-1", 3, fv, len, 8, 4096);
    cr_assert(dl);
    cr_expect_str_eq(eddy_dead_letter_reason(dl), "r1", "the first wins");
    cr_expect_str_eq(eddy_dead_letter_subject(dl), "");
    cr_expect_eq(eddy_dead_letter_deliveries(dl), 0);
    cr_expect_null(eddy_dead_letter_field(dl, "_dlq_other", NULL), "no _dlq_ field is original");
    cr_expect_eq(eddy_dead_letter_event(dl, &ev, NULL), EDDY_ERR_MALFORMED);
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    eddy_error err;
    cr_expect_eq(eddy__dlq_replay_cmds(&settings, "g", dl, &l, &err), EDDY_ERR_MALFORMED);
    cr_expect_eq(l.n, 0);
    eddy_dead_letter_free(dl);
    /* _dlq_ fields only: no original entry to replay. */
    const char *only[] = {"_dlq_subject", "orders"};
    size_t olen[] = {12, 6};
    dl = eddy__dead_letter_new("1-2", 3, only, olen, 2, 4096);
    cr_expect_eq(eddy__dlq_replay_cmds(&settings, "g", dl, &l, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "no original entry"), "%s", err.detail);
    eddy_dead_letter_free(dl);
}

Test(dlq_core, commands) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    eddy_error err;
    cr_assert_eq(eddy__dlq_range_cmd(&settings, "g", "", NULL, 10, &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[0]), "XRANGE {t}:dlq:g - + COUNT 10");
    cr_assert_eq(eddy__dlq_range_cmd(&settings, "g", "5-1", "9-0", 3, &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[1]), "XRANGE {t}:dlq:g (5-1 9-0 COUNT 3");
    cr_assert_eq(eddy__dlq_get_cmd(&settings, "g", "5-1", &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[2]), "XRANGE {t}:dlq:g 5-1 5-1");
    cr_assert_eq(eddy__dlq_last_cmd(&settings, "g", &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[3]), "XREVRANGE {t}:dlq:g + - COUNT 1");
    cr_assert_eq(eddy__dlq_purge_cmd(&settings, "g", "5-1", &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[4]), "XDEL {t}:dlq:g 5-1");
    cr_assert_eq(eddy__dlq_count_cmd(&settings, "g", &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[5]), "XLEN {t}:dlq:g");
    cr_assert_eq(eddy__dlq_purge_all_cmds(&settings, "g", &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[6]), "MULTI");
    cr_expect_str_eq(cmd_text(&l.cmds[7]), "XLEN {t}:dlq:g");
    cr_expect_str_eq(cmd_text(&l.cmds[8]), "DEL {t}:dlq:g");
    cr_expect_str_eq(cmd_text(&l.cmds[9]), "EXEC");
    cr_expect_eq(l.n, 10);
    /* Refusals append nothing. */
    cr_expect_eq(eddy__dlq_range_cmd(&settings, "g", "5", NULL, 1, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__dlq_range_cmd(&settings, "g", "", "x", 1, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__dlq_range_cmd(&settings, "g", NULL, NULL, 1, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__dlq_get_cmd(&settings, "g", "123456789012345678901-1", &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT, "more digits than a 64-bit number has");
    cr_expect_eq(eddy__dlq_purge_cmd(&settings, "", "1-1", &l, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(l.n, 10);
    eddy__cmdlist_reset(&l);

    /* A replay: the original fields only, trimmed like a publish when stream_maxlen is set. */
    settings.stream_maxlen = 1000;
    eddy_dead_letter *dl = consumer_shaped();
    cr_assert_eq(eddy__dlq_replay_cmds(&settings, "g", dl, &l, &err), EDDY_OK);
    cr_assert_eq(l.n, 5);
    cr_expect_str_eq(cmd_text(&l.cmds[0]), "MULTI");
    cr_expect_str_eq(cmd_text(&l.cmds[1]),
                     "XADD {t}:s:orders MAXLEN ~ 1000 * specversion 1.0 id e1 source /s type t.x "
                     "_reply_to {t}:inbox:i");
    cr_expect_str_eq(cmd_text(&l.cmds[2]), "SADD {t}:subjects orders");
    cr_expect_str_eq(cmd_text(&l.cmds[3]), "XDEL {t}:dlq:g 9-1");
    cr_expect_str_eq(cmd_text(&l.cmds[4]), "EXEC");
    eddy__cmdlist_reset(&l);
    cr_assert_eq(eddy__dlq_restore_cmd(&settings, "g", dl, &l, &err), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[0]),
                     "XADD {t}:dlq:g * _dlq_subject orders _dlq_entry 5-0 _dlq_deliveries 20 "
                     "_dlq_reason malformed _dlq_group g specversion 1.0 id e1 source /s type t.x "
                     "_reply_to {t}:inbox:i");
    eddy__cmdlist_reset(&l);
    eddy_dead_letter_free(dl);
}

/* Runs a replay's result over the five replies given as RESP. */
static eddy_status replay_with(const char *exec, bool *restore, char *id, eddy_error *err) {
    eddy_dead_letter *dl = consumer_shaped();
    redisReply *r[5] = {raw_parse("+OK\r\n"), raw_parse("+QUEUED\r\n"), raw_parse("+QUEUED\r\n"),
                        raw_parse("+QUEUED\r\n"), raw_parse(exec)};
    eddy_status st =
        eddy__dlq_replay_result(&settings, "g", dl, r, id, EDDY_DLQ_ID_SIZE, restore, err);
    for (int i = 0; i < 5; i++)
        freeReplyObject(r[i]);
    eddy_dead_letter_free(dl);
    return st;
}

Test(dlq_core, replay_results) {
    bool restore = true;
    char id[EDDY_DLQ_ID_SIZE] = "";
    eddy_error err;
    cr_expect_eq(replay_with("*3\r\n$4\r\n10-0\r\n:1\r\n:1\r\n", &restore, id, &err), EDDY_OK);
    cr_expect_str_eq(id, "10-0");
    cr_expect(!restore);
    /* Gone before the transaction ran: published all the same (logged), nothing to restore. */
    cr_expect_eq(replay_with("*3\r\n$4\r\n11-0\r\n:0\r\n:0\r\n", &restore, id, &err), EDDY_OK);
    cr_expect_str_eq(id, "11-0");
    cr_expect(!restore);
    /* The publish refused inside the transaction, the delete run: write it back. */
    cr_expect_eq(
        replay_with("*3\r\n-WRONGTYPE Operation against a key\r\n:1\r\n:1\r\n", &restore, id, &err),
        EDDY_ERR_BACKEND);
    cr_expect(restore);
    cr_expect(strstr(err.detail, "WRONGTYPE"), "%s", err.detail);
    cr_expect_eq(replay_with("*3\r\n-WRONGTYPE x\r\n:1\r\n:0\r\n", &restore, id, &err),
                 EDDY_ERR_BACKEND);
    cr_expect(!restore, "nothing was deleted");
    cr_expect_eq(replay_with("*3\r\n:5\r\n:1\r\n:1\r\n", &restore, id, &err), EDDY_ERR_PROTOCOL);
    cr_expect(restore);
    /* The transaction did not run. */
    cr_expect_eq(replay_with("-EXECABORT Transaction discarded\r\n", &restore, id, &err),
                 EDDY_ERR_BACKEND);
    cr_expect(!restore);
    cr_expect_eq(replay_with("*-1\r\n", &restore, id, &err), EDDY_ERR_BACKEND);
    cr_expect_eq(replay_with("*2\r\n:1\r\n:1\r\n", &restore, id, &err), EDDY_ERR_PROTOCOL);
    cr_expect_eq(replay_with(":1\r\n", &restore, id, &err), EDDY_ERR_PROTOCOL);
    cr_expect(!restore);
    /* A queued command refused. */
    eddy_dead_letter *dl = consumer_shaped();
    redisReply *r[5] = {raw_parse("+OK\r\n"), raw_parse("-ERR wrong number of arguments\r\n"),
                        raw_parse("+QUEUED\r\n"), raw_parse("+QUEUED\r\n"),
                        raw_parse("-EXECABORT x\r\n")};
    cr_expect_eq(eddy__dlq_replay_result(&settings, "g", dl, r, NULL, 0, &restore, &err),
                 EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "wrong number"), "%s", err.detail);
    for (int i = 0; i < 5; i++)
        freeReplyObject(r[i]);
    redisReply *none[5] = {NULL, NULL, NULL, NULL, NULL};
    cr_expect_eq(eddy__dlq_replay_result(&settings, "g", dl, none, NULL, 0, &restore, &err),
                 EDDY_ERR_IO);
    eddy_dead_letter_free(dl);
}

static eddy_status drop(eddy_dead_letter *dl, void *user) {
    (*(int *)user)++;
    eddy_dead_letter_free(dl);
    return EDDY_OK;
}

Test(dlq_core, other_results) {
    eddy_error err;
    int n = 0;
    size_t accepted = 9;
    char after[EDDY_DLQ_ID_SIZE] = "keep";
    redisReply *r = raw_parse("*0\r\n");
    cr_expect_eq(eddy__dlq_entries(&settings, r, drop, &n, &accepted, after, &err), EDDY_OK);
    cr_expect_eq(accepted, 0);
    cr_expect_str_eq(after, "keep");
    freeReplyObject(r);
    r = raw_parse("*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$2\r\nid\r\n$1\r\nx\r\n");
    cr_expect_eq(eddy__dlq_entries(&settings, r, drop, &n, &accepted, after, &err), EDDY_OK);
    cr_expect_eq(accepted, 1);
    cr_expect_eq(n, 1);
    cr_expect_str_eq(after, "1-1");
    freeReplyObject(r);
    r = raw_parse("*1\r\n*2\r\n$3\r\n1-1\r\n*1\r\n$2\r\nid\r\n");
    cr_expect_eq(eddy__dlq_entries(&settings, r, drop, &n, NULL, NULL, &err), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);
    r = raw_parse("*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$2\r\nid\r\n:1\r\n");
    cr_expect_eq(eddy__dlq_entries(&settings, r, drop, &n, NULL, NULL, &err), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);
    r = raw_parse("-WRONGTYPE x\r\n");
    cr_expect_eq(eddy__dlq_entries(&settings, r, drop, &n, NULL, NULL, &err), EDDY_ERR_BACKEND);
    freeReplyObject(r);
    cr_expect_eq(eddy__dlq_entries(&settings, NULL, drop, &n, NULL, NULL, &err), EDDY_ERR_IO);

    size_t c = 0;
    r = raw_parse(":7\r\n");
    cr_expect_eq(eddy__dlq_count_result(r, &c, &err), EDDY_OK);
    cr_expect_eq(c, 7);
    freeReplyObject(r);
    r = raw_parse("+OK\r\n");
    cr_expect_eq(eddy__dlq_count_result(r, &c, &err), EDDY_ERR_PROTOCOL);
    cr_expect_eq(eddy__dlq_purge_result(r, "g", "1-1", &err), EDDY_ERR_PROTOCOL);
    cr_expect_eq(eddy__dlq_restore_result(r, &err), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);
    r = raw_parse(":0\r\n");
    cr_expect_eq(eddy__dlq_purge_result(r, "g", "1-1", &err), EDDY_ERR_NOT_FOUND);
    freeReplyObject(r);

    redisReply *all[4] = {raw_parse("+OK\r\n"), raw_parse("+QUEUED\r\n"), raw_parse("+QUEUED\r\n"),
                          raw_parse("*2\r\n:3\r\n:1\r\n")};
    cr_expect_eq(eddy__dlq_purge_all_result(all, &c, &err), EDDY_OK);
    cr_expect_eq(c, 3);
    freeReplyObject(all[3]);
    all[3] = raw_parse("*2\r\n:0\r\n-WRONGTYPE x\r\n");
    cr_expect_eq(eddy__dlq_purge_all_result(all, &c, &err), EDDY_ERR_BACKEND);
    for (int i = 0; i < 4; i++)
        freeReplyObject(all[i]);
}

/* One dead letter read by id (eddy_dlq_get, a replay of one): it, none, or a reply that holds
 * more than the one entry XRANGE id id can hold. */
Test(dlq_core, one_dead_letter_by_id) {
    eddy_error err;
    eddy_dead_letter *dl = (eddy_dead_letter *)&err; /* set to NULL on every path */
    redisReply *r = raw_parse("*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$2\r\nid\r\n$1\r\nx\r\n");
    cr_assert_eq(eddy__dlq_one(&settings, r, "g", "1-1", &dl, &err), EDDY_OK);
    cr_assert(dl);
    cr_expect_str_eq(eddy_dead_letter_id(dl), "1-1");
    eddy_dead_letter_free(dl);
    freeReplyObject(r);
    r = raw_parse("*0\r\n");
    cr_expect_eq(eddy__dlq_one(&settings, r, "g", "1-1", &dl, &err), EDDY_ERR_NOT_FOUND);
    cr_expect_null(dl);
    cr_expect(strstr(err.detail, "no dead letter 1-1"), "%s", err.detail);
    freeReplyObject(r);
    r = raw_parse("*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$2\r\nid\r\n$1\r\nx\r\n"
                  "*2\r\n$3\r\n1-2\r\n*2\r\n$2\r\nid\r\n$1\r\ny\r\n");
    cr_expect_eq(eddy__dlq_one(&settings, r, "g", "1-1", &dl, &err), EDDY_ERR_PROTOCOL);
    cr_expect_null(dl, "nothing kept, nothing leaked");
    freeReplyObject(r);
}
