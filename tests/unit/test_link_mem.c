/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory:// link (src/link/link_mem.h), driven here by the test as a front end drives any link:
 * replies ready without waiting, a blocking read that parks until the engine signals the
 * link's eventfd, its BLOCK end through eddy__link_deadline/eddy__link_tick, and a shutdown
 * that cuts a parked read without the engine ever running it. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/settings.h"
#include "eddy_test.h"
#include "link/link.h"
#include "memory/engine.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

static void add(eddy__cmdlist *cmds, int argc, const char **argv) {
    eddy__cmd *c = eddy__cmdlist_add(cmds, 0, 0);
    cr_assert(c);
    for (int i = 0; i < argc; i++)
        eddy__cmd_str(c, argv[i]);
}

/* Whether the link's fd becomes readable within ms. */
static bool readable(eddy__link *l, int ms) {
    struct pollfd p = {.fd = eddy__link_fd(l), .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* A second engine connection writes, as another client would. */
static void xadd(eddy__mem_engine *e, const char *key) {
    eddy__mem_conn *w = eddy__mem_conn_new(e);
    cr_assert(w);
    const char *argv[] = {"XADD", key, "*", "f", "v"};
    redisReply *r = eddy__mem_exec(w, 5, argv, NULL, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
    eddy__mem_conn_free(w);
}

Test(link_mem, replies_are_ready_without_waiting) {
    eddy__settings s = settings_for("memory://lm-ready");
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy__link_phase_of(l), EDDY__LINK_READY);
    cr_assert_eq(eddy__link_client_id(l), -1);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add(&cmds, 3, (const char *[]){"SET", "k", "1"});
    add(&cmds, 2, (const char *[]){"INCR", "k"});
    uint64_t last = 0;
    cr_assert_eq(eddy__link_send(l, &cmds, &last, &err), EDDY_OK);
    cr_expect_eq(last, 2);
    cr_expect_eq(eddy__link_sent(l), 0); /* run when flushed, or when their replies are taken */
    cr_expect(eddy__link_ready(l));
    cr_expect(!readable(l, 0)); /* nothing signalled: no syscall was needed */
    redisReply *r = NULL;
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 2);
    freeReplyObject(r);
    cr_expect_eq(eddy__link_answered(l), 2);
    cr_expect(!eddy__link_ready(l));
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_expect_null(r);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
}

Test(link_mem, a_parked_read_goes_on_when_the_engine_signals) {
    eddy__settings s = settings_for("memory://lm-park");
    eddy__mem_engine *e = eddy__mem_engine_acquire("lm-park");
    eddy__link *l = eddy__link_new(&s, false);
    cr_assert(l && e);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add(&cmds, 6, (const char *[]){"XREAD", "BLOCK", "60000", "STREAMS", "st", "$"});
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
    cr_assert_eq(eddy__link_flush(l, &err), EDDY_OK);
    redisReply *r = NULL;
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert_null(r); /* parked */
    cr_expect(!eddy__link_ready(l));
    cr_expect_gt(eddy__link_deadline(l), eddy_test_now_ms());
    xadd(e, "other"); /* another stream: no signal */
    cr_expect(!readable(l, 0));
    xadd(e, "st");
    cr_assert(readable(l, 5000));
    cr_assert_eq(eddy__link_io(l, EDDY__LINK_READ, &err), EDDY_OK);
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    freeReplyObject(r);
    cr_expect_eq(eddy__link_deadline(l), -1);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
    eddy__mem_engine_release(e);
}

Test(link_mem, a_parked_read_past_its_block_time_answers_nil) {
    eddy__settings s = settings_for("memory://lm-nil");
    eddy__link *l = eddy__link_new(&s, false);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add(&cmds, 6, (const char *[]){"XREAD", "BLOCK", "20", "STREAMS", "st", "$"});
    add(&cmds, 1, (const char *[]){"PING"});
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
    redisReply *r = NULL;
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert_null(r);
    long long at = eddy__link_deadline(l);
    cr_assert_geq(at, 0);
    cr_assert_eq(eddy__link_tick(l, at - 1, &err), EDDY_OK);
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert_null(r, "not before its BLOCK time");
    cr_assert_eq(eddy__link_tick(l, at, &err), EDDY_OK);
    cr_expect(eddy__link_ready(l));
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert(r && r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK); /* what waited behind it runs now */
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
}

/* A cut (pause, stop) of a parked group read: the link fails, and the engine never ran the
 * read, so what is appended afterwards is still there for the group, not pending. */
Test(link_mem, a_shutdown_cuts_a_parked_read_and_takes_nothing) {
    eddy__settings s = settings_for("memory://lm-cut");
    eddy__mem_engine *e = eddy__mem_engine_acquire("lm-cut");
    eddy__link *l = eddy__link_new(&s, false);
    cr_assert(l && e);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add(&cmds, 6, (const char *[]){"XGROUP", "CREATE", "st", "g", "$", "MKSTREAM"});
    add(&cmds, 9,
        (const char *[]){"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "st", ">"});
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
    redisReply *r = NULL;
    cr_assert_eq(eddy__link_flush(l, &err), EDDY_OK); /* the group is made; the read parks */
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK);
    cr_assert_null(r);
    cr_expect_eq(eddy__link_deadline(l), -1); /* BLOCK 0: no end of its own */
    eddy__link_shutdown(l);
    cr_assert(readable(l, 5000));
    cr_expect_eq(eddy__link_io(l, EDDY__LINK_READ, &err), EDDY_ERR_IO);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    eddy__link_close(l);
    xadd(e, "st");
    eddy__mem_conn *k = eddy__mem_conn_new(e);
    const char *argv[] = {"XPENDING", "st", "g"};
    r = eddy__mem_exec(k, 3, argv, NULL, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(r->element[0]->integer, 0, "the cut read took an entry");
    freeReplyObject(r);
    eddy__mem_conn_free(k);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
    eddy__mem_engine_release(e);
}
