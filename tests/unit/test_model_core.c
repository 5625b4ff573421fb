/* SPDX-License-Identifier: BSD-3-Clause */
/* The read model's core (src/store/model.c), without a server: what a write set refuses, what an
 * event that fails leaves behind (nothing), the commit's arguments as the function takes them
 * (keys named once across events, the fixed keys first), and the reading of the replies. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"
#include "store/model.h"
#include "util/functions.h"

typedef struct script {
    int writes;      /* hincr "n" this many times */
    bool bad_key;    /* then a write to "a key" */
    bool fail_after; /* then fail */
    const char *key; /* the key written (default "k") */
} script;

static eddy_status writes(void *event, const eddy_event_meta *meta, eddy_writes *w, eddy_error *err,
                          void *user) {
    (void)meta, (void)user;
    const script *s = event;
    eddy_status st = EDDY_OK;
    for (int i = 0; i < s->writes && st == EDDY_OK; i++)
        st = eddy_writes_hincr(w, s->key ? s->key : "k", "n", 1, 1, err);
    if (st == EDDY_OK && s->bad_key)
        st = eddy_writes_del(w, "a key", err);
    if (st == EDDY_OK && s->fail_after) {
        snprintf(err->detail, sizeof(err->detail), "the model says no");
        st = EDDY_ERR_HANDLER_FAILED;
    }
    return st;
}

static eddy__model *m;
static eddy_writes w;

static void setup(void) {
    m = eddy__model_new("ns", "f", writes, NULL);
    cr_assert(m);
    eddy__writes_init(&w, m);
}

static void teardown(void) {
    eddy__writes_reset(&w);
    eddy__model_free(m);
}

TestSuite(model_core, .init = setup, .fini = teardown);

static const char *arg(const eddy__cmdlist *l, int i) { return l->cmds[0].argv[i]; }

Test(model_core, the_commit_names_each_key_once_after_the_fixed_ones) {
    script a = {.writes = 2}, b = {.writes = 1, .key = "other:key"}, c = {.writes = 1};
    eddy_event_meta ma = {"s1", 1, 10}, mb = {"s2", 4, 11}, mc = {"s1", 2, 12};
    cr_assert_eq(eddy__model_gather(m, &w, &a, &ma, NULL), EDDY_OK);
    cr_assert_eq(eddy__model_gather(m, &w, &b, &mb, NULL), EDDY_OK);
    cr_assert_eq(eddy__model_gather(m, &w, &c, &mc, NULL), EDDY_OK);
    cr_expect_eq(w.events, 3);
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__model_commit_cmd(m, &w, true, &l, NULL), EDDY_OK);
    const char *want[] = {"FCALL",
                          EDDY__MODEL_FN,
                          "5",
                          "{ns}:rm:f:pos",
                          "{ns}:rm:f:ver",
                          "{ns}:rm:f:keys",
                          "{ns}:rm:f:k:k",
                          "{ns}:rm:f:k:other:key",
                          "page",
                          "3",
                          "s1",
                          "1",
                          "10",
                          "2",
                          "hincr",
                          "1",
                          "n",
                          "1",
                          "hincr",
                          "1",
                          "n",
                          "1",
                          "s2",
                          "4",
                          "11",
                          "1",
                          "hincr",
                          "2",
                          "n",
                          "1",
                          "s1",
                          "2",
                          "12",
                          "1",
                          "hincr",
                          "1",
                          "n",
                          "1"};
    size_t n = sizeof(want) / sizeof(want[0]);
    cr_assert_eq(l.cmds[0].argc, (int)n);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(arg(&l, (int)i), want[i], "argument %zu", i);
    eddy__cmdlist_reset(&l);
    /* Cleared for the next page: nothing left, the same commit refused. */
    eddy__writes_clear(&w);
    cr_expect_eq(w.events, 0);
    eddy__cmdlist_init(&l);
    cr_expect_eq(eddy__model_commit_cmd(m, &w, false, &l, NULL), EDDY_ERR_INVALID_ARGUMENT);
    eddy__cmdlist_reset(&l);
}

Test(model_core, an_event_that_fails_leaves_the_batch_as_it_was) {
    script a = {.writes = 1}, bad = {.writes = 3, .key = "only-mine", .fail_after = true};
    eddy_event_meta ma = {"s1", 1, 1}, mb = {"s1", 2, 2};
    cr_assert_eq(eddy__model_gather(m, &w, &a, &ma, NULL), EDDY_OK);
    int keys = w.keys.argc, args = w.args.argc;
    eddy_error err = {0};
    cr_expect_eq(eddy__model_gather(m, &w, &bad, &mb, &err), EDDY_ERR_HANDLER_FAILED);
    cr_expect_str_eq(err.detail, "the model says no", "the callback's own detail");
    cr_expect_eq(err.status, EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(w.keys.argc, keys, "the key only it named is gone");
    cr_expect_eq(w.args.argc, args);
    cr_expect_eq(w.events, 1);
    /* ... and the next event goes on from there. */
    script c = {.writes = 1, .key = "only-mine"};
    cr_expect_eq(eddy__model_gather(m, &w, &c, &mb, NULL), EDDY_OK);
    cr_expect_eq(w.keys.argc, keys + 1);
    cr_expect_eq(w.events, 2);
}

Test(model_core, refusals) {
    script a = {.writes = 1}, bad = {.writes = 1, .bad_key = true}, many = {.writes = 1001};
    eddy_error err = {0};
    cr_expect_eq(eddy__model_gather(m, &w, &a, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "store metadata"), "%s", err.detail);
    eddy_event_meta no_pos = {"s1", 1, 0}, no_stream = {"", 1, 1}, ok = {"s1", 1, 5};
    cr_expect_eq(eddy__model_gather(m, &w, &a, &no_pos, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__model_gather(m, &w, &a, &no_stream, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__model_gather(m, &w, &bad, &ok, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "model key"), "%s", err.detail);
    cr_expect_eq(eddy__model_gather(m, &w, &many, &ok, &err), EDDY_ERR_TOO_LARGE);
    cr_expect(strstr(err.detail, "more than 1000 writes"), "%s", err.detail);
    cr_expect_eq(w.events, 0);
    cr_assert_eq(eddy__model_gather(m, &w, &a, &ok, &err), EDDY_OK);
    cr_expect_eq(eddy__model_gather(m, &w, &a, &ok, &err), EDDY_ERR_INVALID_ARGUMENT,
                 "positions rise within one commit");
    /* The write functions themselves. */
    eddy_writes none;
    eddy__writes_init(&none, m);
    char big[64 * 1024 + 1];
    memset(big, 'x', sizeof(big));
    cr_expect_eq(eddy_writes_hset(&none, "k", big, sizeof(big), "v", 1, &err), EDDY_ERR_TOO_LARGE);
    cr_expect_eq(eddy_writes_hset(&none, "k", NULL, 3, "v", 1, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_writes_sadd(&none, "", "m", 1, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_writes_srem(&none, "{k}", "m", 1, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_writes_hdel(NULL, "k", "f", 1, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_writes_hset(&none, "k", "", 0, "", 0, &err), EDDY_OK, "empty is binary");
    eddy__writes_reset(&none);
}

static eddy_status collect(const char *name, size_t nlen, const char *value, size_t vlen,
                           void *user) {
    char *out = user;
    size_t used = strlen(out);
    snprintf(out + used, 256 - used, "%.*s=%.*s;", (int)nlen, name, (int)vlen, value ? value : "");
    return strncmp(name, "stop", 4) == 0 ? EDDY_ERR_CANCELLED : EDDY_OK;
}

Test(model_core, replies_are_read) {
    long long pos = -1, applied = -1;
    eddy_error err = {0};
    redisReply *r = raw_parse("$-1\r\n");
    cr_expect_eq(eddy__model_position_result(r, &pos, &err), EDDY_OK);
    cr_expect_eq(pos, 0);
    freeReplyObject(r);
    r = raw_parse("$2\r\n42\r\n");
    cr_expect_eq(eddy__model_position_result(r, &pos, &err), EDDY_OK);
    cr_expect_eq(pos, 42);
    freeReplyObject(r);
    r = raw_parse("$3\r\nabc\r\n");
    cr_expect_eq(eddy__model_position_result(r, &pos, &err), EDDY_ERR_MALFORMED);
    freeReplyObject(r);
    r = raw_parse(":2\r\n");
    cr_expect_eq(eddy__model_commit_result(r, &applied, &err), EDDY_OK);
    cr_expect_eq(applied, 2);
    freeReplyObject(r);
    r = raw_parse("-ERR eddy_model: bad write\r\n");
    cr_expect_eq(eddy__model_commit_result(r, &applied, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "bad write"), "%s", err.detail);
    freeReplyObject(r);
    r = raw_parse("+OK\r\n");
    cr_expect_eq(eddy__model_commit_result(r, &applied, &err), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);

    /* The registry: the layout's prefix stripped, keys of another layout skipped. */
    char out[256] = "";
    r = raw_parse("*6\r\n$13\r\n{ns}:rm:f:k:a\r\n$4\r\nhash\r\n$10\r\n{ns}:other\r\n$3\r\nset\r\n"
                  "$15\r\n{ns}:rm:f:k:b:c\r\n$3\r\nset\r\n");
    cr_expect_eq(eddy__model_items_result("ns", "f", EDDY__MODEL_KEYS, r, collect, out, &err),
                 EDDY_OK);
    cr_expect_str_eq(out, "a=hash;b:c=set;");
    freeReplyObject(r);
    out[0] = '\0';
    r = raw_parse("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    cr_expect_eq(eddy__model_items_result("ns", "f", EDDY__MODEL_HASH, r, collect, out, &err),
                 EDDY_ERR_PROTOCOL, "a hash's reply has pairs");
    cr_expect_eq(eddy__model_items_result("ns", "f", EDDY__MODEL_SET, r, collect, out, &err),
                 EDDY_OK);
    cr_expect_str_eq(out, "a=;b=;c=;");
    freeReplyObject(r);
    out[0] = '\0';
    r = raw_parse("*2\r\n$4\r\nstop\r\n$1\r\nx\r\n");
    cr_expect_eq(eddy__model_items_result("ns", "f", EDDY__MODEL_SET, r, collect, out, &err),
                 EDDY_ERR_CANCELLED, "the callback's status");
    cr_expect_str_eq(out, "stop=;", "and nothing after it");
    freeReplyObject(r);
    /* Reads refuse bad names up front. */
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_expect_eq(eddy__model_read_cmd("ns", "a:b", EDDY__MODEL_POSITION, NULL, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__model_read_cmd("ns", "f", EDDY__MODEL_HASH, "a b", &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__model_read_cmd("ns", "f", EDDY__MODEL_SET, "a:b", &l, &err), EDDY_OK);
    cr_expect_str_eq(l.cmds[0].argv[0], "SMEMBERS");
    cr_expect_str_eq(l.cmds[0].argv[1], "{ns}:rm:f:k:a:b");
    eddy__cmdlist_reset(&l);
}
