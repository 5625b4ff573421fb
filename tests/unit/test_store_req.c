/* SPDX-License-Identifier: BSD-3-Clause */
/* One event-store request with no server (src/store/store_req.h): the result each kind reads
 * from its replies (written as RESP and parsed by hiredis), what a failure leaves in it (a
 * read's resume point, no version), a checkpoint read sized to its marker or into the caller's
 * buffer, a call's reply handed to its reader behind a reloaded library, and a request built
 * with bad arguments that is still safe to reset. The integration tests (test_store.c,
 * test_model.c) run the same requests against real servers through both front ends. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"
#include "error.h"
#include "events/entry.h"
#include "link/library.h"
#include "raw.h"
#include "store/model.h"
#include "store/store.h"
#include "store/store_req.h"

static eddy__settings settings;
static eddy__store *core;
static eddy__store_req q;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.max_event_size = 4096;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    core = eddy__store_new(&settings);
    cr_assert(core);
}

static void teardown(void) {
    eddy__store_req_reset(&q);
    eddy__store_free(core);
    eddy__settings_free(&settings);
}

TestSuite(store_req, .init = setup, .fini = teardown);

/* Feeds q one reply per command (RESP texts) and returns eddy__store_req_done's word. */
static bool feed(const char *const *resp, size_t n, eddy_error *err) {
    redisReply *rs[EDDY__STORE_OP_MAX_CMDS] = {NULL};
    cr_assert_eq(n, q.op.cmds.n, "one reply per command");
    for (size_t i = 0; i < n; i++)
        rs[i] = raw_parse(resp[i]);
    bool again = eddy__store_req_done(&q, core, rs, &settings.log, err);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(rs[i]);
    return again;
}

static bool feed1(const char *resp, eddy_error *err) { return feed(&resp, 1, err); }

static eddy_event *ev_new(void) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, "e-1"), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/t"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "t.ev"), EDDY_OK);
    return ev;
}

Test(store_req, append_reads_its_version_and_none_on_a_failure) {
    eddy_event *e = ev_new();
    const eddy_event *evs[] = {e};
    cr_assert_eq(eddy__store_req_append(&q, core, "acct-1", evs, 1, NULL, NULL), EDDY_OK);
    eddy_event_free(e);
    cr_expect(q.op.append, "an append is not idempotent");
    cr_expect_gt(q.op.until, 0, "a deadline for a cluster's refusals");
    eddy_error err = {0};
    cr_expect_not(feed1(":7\r\n", &err));
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(q.at, 7);
    cr_expect_not(feed1("-VERSIONCONFLICT 3\r\n", &err));
    cr_expect_eq(q.st, EDDY_ERR_VERSION_CONFLICT);
    cr_expect_eq(q.at, 0, "no version after a failure");
    cr_expect(strstr(err.detail, "actual version 3"), "%s", err.detail);
}

Test(store_req, a_lost_library_sends_the_same_call_again_behind_a_load_once) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__model_reading rd;
    cr_assert_eq(eddy__model_reading_cmd(&rd, "t", "f1", EDDY__MODEL_POSITION, NULL, NULL, NULL,
                                         &cmds, NULL),
                 EDDY_OK);
    eddy__store_req_call(&q, &cmds, eddy__model_reading_result, &rd);
    cr_expect_eq(cmds.n, 0, "the command moved in");
    cr_expect_not(q.op.append, "a call is idempotent");

    eddy_error err = {0};
    cr_assert(feed1("-ERR Function not found\r\n", &err), "a lost library: send again");
    cr_assert_eq(q.op.cmds.n, 2);
    cr_expect(eddy__library_is_load(&q.op.cmds, 0), "the load first");
    const char *both[] = {"$10\r\n" EDDY__STORE_LIBRARY "\r\n", "$2\r\n42\r\n"};
    cr_expect_not(feed(both, 2, &err), "then read");
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(rd.position, 42, "the call's own reply, behind the load's, went to its reader");
}

Test(store_req, head_reads_the_position_and_none_on_a_failure) {
    cr_assert_eq(eddy__store_req_head(&q, core, NULL), EDDY_OK);
    eddy_error err = {0};
    feed1("$2\r\n12\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(q.at, 12);
    feed1("$3\r\n1x2\r\n", &err);
    cr_expect_eq(q.st, EDDY_ERR_MALFORMED);
    cr_expect_eq(q.at, 0, "no position after a failure");
}

static eddy_status never(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    (void)meta;
    (void)user;
    cr_assert_fail("an empty page delivers nothing");
    return EDDY_OK;
}

Test(store_req, reads_resume_where_they_were_asked_until_a_page_moves_them) {
    cr_assert_eq(eddy__store_req_read_all(&q, core, 40, 10, NULL, never, NULL, NULL), EDDY_OK);
    cr_expect_eq(q.at, 40, "a read failed before its replies resumes where it was asked");
    eddy_error err = {0};
    feed1("*0\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(q.at, 40);
    feed1("-ERR boom\r\n", &err);
    cr_expect_neq(q.st, EDDY_OK);
    cr_expect_eq(q.at, 40);
    eddy__store_req_reset(&q);

    cr_assert_eq(eddy__store_req_read_stream(&q, core, "o-1", 5, false, never, NULL, NULL),
                 EDDY_OK);
    cr_expect_eq(q.at, 5);
    q.more = true;
    feed1("*0\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(q.at, 5);
    cr_expect_not(q.more, "an empty page is the last");
}

Test(store_req, checkpoint_read_sized_to_the_marker_or_into_the_callers_buffer) {
    cr_assert_eq(eddy__store_req_ckpt(&q, core, EDDY__CKPT_READ, "f1", NULL, NULL, 0, NULL),
                 EDDY_OK);
    eddy_error err = {0};
    feed1("$11\r\ncaught-up-1\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect(q.found);
    cr_expect_str_eq(q.buf, "caught-up-1");
    eddy__store_req_reset(&q);

    char small[4];
    cr_assert_eq(
        eddy__store_req_ckpt(&q, core, EDDY__CKPT_READ, "f1", NULL, small, sizeof(small), NULL),
        EDDY_OK);
    feed1("$11\r\ncaught-up-1\r\n", &err);
    cr_expect_eq(q.st, EDDY_ERR_TOO_LARGE, "the caller's buffer is the limit");
    feed1("$-1\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_not(q.found);
}

Test(store_req, checkpoint_exists_save_and_remove) {
    eddy_error err = {0};
    cr_assert_eq(eddy__store_req_ckpt(&q, core, EDDY__CKPT_EXISTS, "f1", NULL, NULL, 0, NULL),
                 EDDY_OK);
    feed1(":1\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect(q.exists);
    feed1(":0\r\n", &err);
    cr_expect_not(q.exists);
    eddy__store_req_reset(&q);
    cr_assert_eq(eddy__store_req_ckpt(&q, core, EDDY__CKPT_SAVE, "f1", "v", NULL, 0, NULL),
                 EDDY_OK);
    feed1("+OK\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    feed1(":1\r\n", &err);
    cr_expect_eq(q.st, EDDY_ERR_PROTOCOL, "a save answers OK");
    eddy__store_req_reset(&q);
    cr_assert_eq(eddy__store_req_ckpt(&q, core, EDDY__CKPT_REMOVE, "f1", NULL, NULL, 0, NULL),
                 EDDY_OK);
    feed1(":1\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
}

Test(store_req, load_fails_on_a_server_without_functions) {
    cr_assert_eq(eddy__store_req_load(&q, NULL), EDDY_OK);
    cr_assert(eddy__library_is_load(&q.op.cmds, 0));
    eddy_error err = {0};
    feed1("$10\r\n" EDDY__STORE_LIBRARY "\r\n", &err);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    feed1("-ERR unknown command 'FUNCTION'\r\n", &err);
    cr_expect_eq(q.st, EDDY_ERR_NOT_SUPPORTED);
}

Test(store_req, a_refused_build_is_safe_to_reset) {
    eddy_error err = {0};
    cr_expect_eq(eddy__store_req_read_stream(&q, core, "o 1", 0, true, never, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy__store_req_reset(&q);
    cr_expect_eq(eddy__store_req_ckpt(&q, core, EDDY__CKPT_SAVE, "f:1", "v", NULL, 0, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy__store_req_reset(&q);
    cr_expect_eq(eddy__store_req_append(&q, core, "acct-1", NULL, 0, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
}

/* A page of n entries of stream o-1 as the store writes them, versions (and positions) from
 * first on; the caller frees it. */
static redisReply *stream_page(long long first, int n) {
    eddy_event *ev = ev_new();
    eddy__cmd fields;
    eddy__cmd_init(&fields);
    cr_assert_eq(eddy__entry_encode(ev, &fields), EDDY_OK);
    eddy_event_free(ev);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    fprintf(f, "*%d\r\n", n);
    for (long long v = first; v < first + n; v++) {
        char id[32], num[32];
        snprintf(id, sizeof(id), "%lld-0", v);
        snprintf(num, sizeof(num), "%lld", v);
        fprintf(f, "*2\r\n$%zu\r\n%s\r\n*%d\r\n", strlen(id), id, fields.argc + 6);
        for (int i = 0; i < fields.argc; i++) {
            fprintf(f, "$%zu\r\n", fields.argvlen[i]);
            fwrite(fields.argv[i], 1, fields.argvlen[i], f);
            fputs("\r\n", f);
        }
        const char *meta[] = {"_stream", "o-1", "_version", num, "_position", num};
        for (int i = 0; i < 6; i++)
            fprintf(f, "$%zu\r\n%s\r\n", strlen(meta[i]), meta[i]);
    }
    fclose(f);
    eddy__cmd_reset(&fields);
    redisReply *r = raw_parse_len(text, len);
    free(text);
    return r;
}

static eddy_status count(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (void)ev;
    *(long long *)user = meta->version;
    return EDDY_OK;
}

Test(store_req, a_whole_stream_goes_on_page_after_page_until_a_short_one) {
    long long last = 0;
    cr_assert_eq(eddy__store_req_read_stream(&q, core, "o-1", 0, true, count, &last, NULL),
                 EDDY_OK);
    q.op.retried = true; /* the first page used its one retry */
    eddy_error err = {0};
    redisReply *r = stream_page(1, EDDY__STORE_PAGE);
    cr_expect(eddy__store_req_done(&q, core, &r, &settings.log, &err), "a full page: the next");
    freeReplyObject(r);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(last, EDDY__STORE_PAGE);
    cr_assert_eq(q.op.cmds.n, 1);
    char want[64];
    snprintf(want, sizeof(want), "(%d-0", EDDY__STORE_PAGE);
    cr_expect_str_eq(q.op.cmds.cmds[0].argv[2], want, "after the page's last version");
    cr_expect_not(q.op.retried, "each page may go once more after a loss, as the first");
    r = stream_page(EDDY__STORE_PAGE + 1, 2);
    cr_expect_not(eddy__store_req_done(&q, core, &r, &settings.log, &err), "a short page: done");
    freeReplyObject(r);
    cr_expect_eq(q.st, EDDY_OK, "%s", err.detail);
    cr_expect_eq(q.at, EDDY__STORE_PAGE + 2);
    eddy__store_req_reset(&q);

    cr_assert_eq(eddy__store_req_read_stream(&q, core, "o-1", 0, false, count, &last, NULL),
                 EDDY_OK);
    r = stream_page(1, EDDY__STORE_PAGE);
    cr_expect_not(eddy__store_req_done(&q, core, &r, &settings.log, &err), "one page: done");
    freeReplyObject(r);
    cr_expect(q.more, "and says there is more");
}
