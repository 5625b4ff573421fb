/* SPDX-License-Identifier: BSD-3-Clause */
/* The core of eddy_admin_subject_remove with no server: the commands it plans, and what it
 * makes of the replies a transaction can get (done, nothing there, refused while queued, a
 * failed command inside EXEC, an aborted transaction). */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/admin.h"
#include "raw.h"

static const char *cmd_text(const eddy__cmd *c) {
    static char buf[1024];
    buf[0] = '\0';
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

Test(admin_core, subject_remove_plans_one_transaction) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    eddy_error err = {0};
    cr_assert_eq(eddy__admin_remove_cmds("t", "orders.created", &l, &err), EDDY_OK);
    cr_assert_eq(l.n, 4);
    cr_expect_str_eq(cmd_text(&l.cmds[0]), "MULTI");
    cr_expect_str_eq(
        cmd_text(&l.cmds[1]),
        "DEL {t}:s:orders.created {t}:pubids:orders.created {t}:pubexp:orders.created");
    cr_expect_str_eq(cmd_text(&l.cmds[2]), "SREM {t}:subjects orders.created");
    cr_expect_str_eq(cmd_text(&l.cmds[3]), "EXEC");
    cr_expect_eq(eddy__admin_remove_cmds("t", "a..b", &l, &err), EDDY_ERR_INVALID_SUBJECT);
    cr_expect_eq(eddy__admin_remove_cmds("t", "orders.*", &l, &err), EDDY_ERR_INVALID_SUBJECT,
                 "a pattern is not a subject");
    cr_expect_eq(l.n, 4, "a refusal appends nothing");
    eddy__cmdlist_reset(&l);
}

static eddy_status feed(const char *exec, const char *queued, bool *removed, eddy_error *err) {
    redisReply *r[4] = {raw_parse("+OK\r\n"), raw_parse(queued), raw_parse("+QUEUED\r\n"),
                        raw_parse(exec)};
    eddy_status st = eddy__admin_remove_result(r, 4, removed, err);
    for (int i = 0; i < 4; i++)
        freeReplyObject(r[i]);
    return st;
}

Test(admin_core, subject_remove_reads_the_transaction) {
    eddy_error err = {0};
    bool removed = false;
    cr_expect_eq(feed("*2\r\n:1\r\n:1\r\n", "+QUEUED\r\n", &removed, &err), EDDY_OK);
    cr_expect(removed);
    cr_expect_eq(feed("*2\r\n:0\r\n:1\r\n", "+QUEUED\r\n", &removed, &err), EDDY_OK);
    cr_expect(removed, "only the set still named it");
    cr_expect_eq(feed("*2\r\n:0\r\n:0\r\n", "+QUEUED\r\n", &removed, &err), EDDY_OK);
    cr_expect(!removed, "nothing there: not an error");
    cr_expect_eq(feed("-EXECABORT x\r\n", "-NOPERM no srem\r\n", &removed, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "NOPERM"), "%s", err.detail);
    cr_expect_eq(feed("*2\r\n-WRONGTYPE x\r\n:1\r\n", "+QUEUED\r\n", &removed, &err),
                 EDDY_ERR_BACKEND);
    cr_expect(!removed);
    cr_expect_eq(feed("*-1\r\n", "+QUEUED\r\n", &removed, &err), EDDY_ERR_PROTOCOL,
                 "an aborted transaction is no answer");
    cr_expect_eq(feed("*1\r\n:1\r\n", "+QUEUED\r\n", &removed, &err), EDDY_ERR_PROTOCOL);
}
