/* SPDX-License-Identifier: BSD-3-Clause */
/* The publisher's core with no server: with publish_dedup_ms, the commands a publish builds (the
 * function library's load ahead of the first, then FCALL of the deduplicating publish instead
 * of XADD), the reading of their replies, a library the server lost sent again behind a load,
 * requests left alone, and the field limit of the function. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/publisher.h"
#include "config/settings.h"
#include "link/cluster.h"
#include "link/library.h"
#include "store/store.h"

static eddy__settings settings;
static eddy__publisher *pub;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.publish_dedup_ms = 5000;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    cr_assert(pub = eddy__publisher_new(&settings));
}

static void teardown(void) {
    eddy__publisher_free(pub);
    eddy__settings_free(&settings);
}

TestSuite(publisher, .init = setup, .fini = teardown);

/* One publish's commands, as a batch of one. */
static eddy_status prepare_one(eddy__publisher *p, const char *subject, const eddy_event *ev,
                               eddy__cmdlist *out, eddy_error *err) {
    return eddy__publish_prepare_batch(p, subject, &ev, 1, out, err);
}

static eddy_event *ev_new(const char *id) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/t"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "t"), EDDY_OK);
    return ev;
}

/* The first `n` arguments of a command as "ARG ARG ...". */
static const char *head(const eddy__cmd *c, int n) {
    static char buf[512];
    buf[0] = '\0';
    for (int a = 0; a < c->argc && a < n; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], 100);
    }
    return buf;
}

static redisReply *reply(int type, const char *str) {
    redisReply *r = calloc(1, sizeof(*r));
    r->type = type;
    if (str) {
        r->str = strdup(str);
        r->len = strlen(str);
    }
    if (type == REDIS_REPLY_INTEGER)
        r->integer = 1;
    return r;
}

static void free_replies(redisReply **r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (r[i])
            freeReplyObject(r[i]);
}

Test(publisher, loads_the_library_then_calls_the_function) {
    eddy_event *ev = ev_new("e:1");
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    cr_assert_eq(l.n, 3);
    cr_expect(eddy__library_is_load(&l, 0));
    cr_expect_str_eq(head(&l.cmds[1], 3), "SADD {t}:subjects a.b");
    cr_expect_str_eq(head(&l.cmds[2], 9), "FCALL " EDDY__PUBLISH_FN
                                          " 3 {t}:s:a.b {t}:pubids:a.b {t}:pubexp:a.b 5000 0 e:1");
    /* The load is queued: the next publish on the connection runs after it. */
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    cr_assert_eq(l.n, 5);
    cr_expect_not(eddy__library_is_load(&l, 3));

    redisReply *r[5] = {reply(REDIS_REPLY_STRING, EDDY__STORE_LIBRARY),
                        reply(REDIS_REPLY_INTEGER, NULL), reply(REDIS_REPLY_STRING, "7-0"),
                        reply(REDIS_REPLY_INTEGER, NULL), reply(REDIS_REPLY_STRING, "7-0")};
    char id[32] = "";
    size_t next;
    cr_expect_eq(eddy__publish_result(pub, &l, 0, r, &next, id, sizeof(id), NULL), EDDY_OK);
    cr_expect_str_eq(id, "7-0");
    cr_expect_eq(next, 3);
    cr_expect_eq(eddy__publish_result(pub, &l, next, r, &next, id, sizeof(id), NULL), EDDY_OK);
    cr_expect_eq(next, 5);
    eddy__cmdlist again;
    eddy__cmdlist_init(&again);
    cr_expect_not(eddy__publish_again(pub, &l, r, &again), "nothing was refused");
    free_replies(r, 5);
    eddy__cmdlist_reset(&l);
    eddy_event_free(ev);
}

/* A batch is one run: the load and the subject's registration once, then an entry per event,
 * each read by its own eddy__publish_result; a bad event refuses the whole batch before anything
 * is built, and an empty batch builds nothing. */
Test(publisher, a_batch_is_one_run_of_publishes) {
    eddy_event *a = ev_new("e:1"), *b = ev_new("e:2"), *bad = eddy_event_new();
    const eddy_event *evs[] = {a, b}, *with_bad[] = {a, bad};
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    eddy_error err;
    cr_assert_eq(eddy__publish_prepare_batch(pub, "a.b", with_bad, 2, &l, &err),
                 EDDY_ERR_INVALID_EVENT);
    cr_expect_eq(l.n, 0, "nothing built");
    cr_assert_eq(eddy__publish_prepare_batch(pub, "a.b", evs, 0, &l, &err), EDDY_OK);
    cr_expect_eq(l.n, 0, "an empty batch builds nothing");
    cr_assert_eq(eddy__publish_prepare_batch(pub, "a.b", evs, 2, &l, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(l.n, 4);
    cr_expect(eddy__library_is_load(&l, 0), "the load is still owed: the refusal sent nothing");
    cr_expect_str_eq(head(&l.cmds[1], 3), "SADD {t}:subjects a.b");
    cr_expect_str_eq(head(&l.cmds[2], 9), "FCALL " EDDY__PUBLISH_FN
                                          " 3 {t}:s:a.b {t}:pubids:a.b {t}:pubexp:a.b 5000 0 e:1");
    cr_expect_str_eq(head(&l.cmds[3], 9), "FCALL " EDDY__PUBLISH_FN
                                          " 3 {t}:s:a.b {t}:pubids:a.b {t}:pubexp:a.b 5000 0 e:2");
    redisReply *r[4] = {reply(REDIS_REPLY_STRING, EDDY__STORE_LIBRARY),
                        reply(REDIS_REPLY_INTEGER, NULL), reply(REDIS_REPLY_STRING, "7-0"),
                        reply(REDIS_REPLY_STRING, "8-0")};
    char id[32] = "";
    size_t next;
    cr_expect_eq(eddy__publish_result(pub, &l, 0, r, &next, id, sizeof(id), NULL), EDDY_OK);
    cr_expect_str_eq(id, "7-0");
    cr_expect_eq(next, 3);
    cr_expect_eq(eddy__publish_result(pub, &l, next, r, &next, id, sizeof(id), NULL), EDDY_OK);
    cr_expect_str_eq(id, "8-0");
    cr_expect_eq(next, 4);
    free_replies(r, 4);
    eddy__cmdlist_reset(&l);
    eddy_event_free(a);
    eddy_event_free(b);
    eddy_event_free(bad);
}

Test(publisher, a_lost_library_is_sent_again_behind_a_load) {
    eddy_event *ev = ev_new("e1");
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    redisReply *ok[3] = {reply(REDIS_REPLY_STRING, EDDY__STORE_LIBRARY),
                         reply(REDIS_REPLY_INTEGER, NULL), reply(REDIS_REPLY_STRING, "1-0")};
    size_t next;
    cr_assert_eq(eddy__publish_result(pub, &l, 0, ok, &next, NULL, 0, NULL), EDDY_OK);
    free_replies(ok, 3);
    eddy__cmdlist_reset(&l);

    /* Loaded and the subject known: the publish is the FCALL alone. */
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    cr_assert_eq(l.n, 1);
    redisReply *lost[1] = {reply(REDIS_REPLY_ERROR, "ERR Function not found")};
    eddy_error err = {0};
    cr_expect_eq(eddy__publish_result(pub, &l, 0, lost, &next, NULL, 0, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "nothing was published"), "%s", err.detail);
    eddy__cmdlist again;
    eddy__cmdlist_init(&again);
    cr_assert(eddy__publish_again(pub, &l, lost, &again));
    cr_assert_eq(again.n, 2);
    cr_expect(eddy__library_is_load(&again, 0));
    cr_expect_str_eq(head(&again.cmds[1], 3), head(&l.cmds[0], 3));
    cr_expect_eq(again.cmds[1].argc, l.cmds[0].argc);
    /* Refused again behind its own load: no third try. */
    redisReply *still[2] = {reply(REDIS_REPLY_STRING, EDDY__STORE_LIBRARY),
                            reply(REDIS_REPLY_ERROR, "ERR Function not found")};
    eddy__cmdlist third;
    eddy__cmdlist_init(&third);
    cr_expect_not(eddy__publish_again(pub, &again, still, &third));
    cr_expect_eq(eddy__publish_result(pub, &again, 0, still, &next, NULL, 0, &err),
                 EDDY_ERR_BACKEND);
    free_replies(lost, 1);
    free_replies(still, 2);
    eddy__cmdlist_reset(&again);
    eddy__cmdlist_reset(&l);
    eddy_event_free(ev);
}

Test(publisher, a_server_without_functions_is_not_supported) {
    eddy_event *ev = ev_new("e1");
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    redisReply *r[3] = {reply(REDIS_REPLY_ERROR, "ERR unknown command 'FUNCTION'"),
                        reply(REDIS_REPLY_INTEGER, NULL),
                        reply(REDIS_REPLY_ERROR, "ERR unknown command 'FCALL'")};
    size_t next;
    eddy_error err = {0};
    cr_expect_eq(eddy__publish_result(pub, &l, 0, r, &next, NULL, 0, &err), EDDY_ERR_NOT_SUPPORTED);
    cr_expect(strstr(err.detail, "publish_dedup_ms"), "%s", err.detail);
    free_replies(r, 3);
    eddy__cmdlist_reset(&l);
    /* The failed load is not taken as done: the next publish loads again. */
    cr_assert_eq(prepare_one(pub, "a.b", ev, &l, NULL), EDDY_OK);
    cr_expect(eddy__library_is_load(&l, 0));
    eddy__cmdlist_reset(&l);
    eddy__publisher_connection_lost(pub);
    eddy_event_free(ev);
}

Test(publisher, requests_are_not_deduplicated) {
    eddy_event *ev = ev_new("e1");
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__request_prepare(pub, "a.b", ev, "{t}:inbox:x", "r1", 99, &l, NULL), EDDY_OK);
    cr_assert_eq(l.n, 2);
    cr_expect_str_eq(head(&l.cmds[1], 3), "XADD {t}:s:a.b *");
    eddy__cmdlist_reset(&l);
    eddy_event_free(ev);
}

Test(publisher, the_function_takes_a_bounded_number_of_fields) {
    eddy_event *ev = ev_new("e1");
    char name[16];
    for (int i = 0; i < (EDDY__STORE_MAX_FIELDS - 18) / 2 + 1; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        cr_assert_eq(eddy_event_set_extension(ev, name, "v", NULL), EDDY_OK);
    }
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    eddy_error err = {0};
    cr_expect_eq(prepare_one(pub, "a.b", ev, &l, &err), EDDY_ERR_TOO_LARGE);
    cr_expect(strstr(err.detail, "publish_dedup_ms"), "%s", err.detail);
    cr_expect_eq(l.n, 0, "nothing left behind");
    eddy__cmdlist_reset(&l);
    eddy_event_free(ev);
}

/* ---- what a cluster refused unwritten goes again (eddy__publish_moved_again) --------------- */

/* The failure a cluster's redirect reply causes on a link (cluster.h). */
static eddy_error refusal(const char *reply_text) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = "redis-cluster://127.0.0.1:7000";
    in.ns = "t";
    eddy__settings s;
    eddy_error err = {0};
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    eddy__cluster *cl = eddy__cluster_new(&s);
    cr_assert(cl);
    redisReply r = {
        .type = REDIS_REPLY_ERROR, .str = (char *)reply_text, .len = strlen(reply_text)};
    eddy_error e = {0};
    cr_assert(eddy__cluster_redirect(cl, &r, "127.0.0.1:7000", &e));
    e.status = EDDY_ERR_IO;
    eddy__cluster_free(cl);
    eddy__settings_free(&s);
    return e;
}

/* Whether a send of npub publishes by p, failed with e, goes again. */
static bool again_after(eddy__publisher *p, size_t npub, const eddy_error *e) {
    eddy_event *ev = ev_new("e:9");
    eddy__cmdlist sent, again;
    eddy__cmdlist_init(&sent);
    for (size_t i = 0; i < npub; i++)
        cr_assert_eq(prepare_one(p, "a.b", ev, &sent, NULL), EDDY_OK);
    bool v = eddy__publish_moved_again(p, npub, &sent, e->status, e, &again);
    if (v) {
        cr_expect_eq(again.n, sent.n, "a copy of what was sent");
        eddy__cmdlist_reset(&again);
    }
    eddy__cmdlist_reset(&sent);
    eddy_event_free(ev);
    return v;
}

Test(publisher, what_a_cluster_refused_goes_again_when_nothing_can_be_stored_twice) {
    eddy_error moved = refusal("MOVED 3999 127.0.0.1:7002");
    eddy_error tryagain = refusal("TRYAGAIN Multiple keys request during rehashing of slot");
    eddy_error down = refusal("CLUSTERDOWN The cluster is down");
    eddy_error io = {.status = EDDY_ERR_IO};
    strcpy(io.detail, "connection to 127.0.0.1:7000: closed by the server");
    cr_expect_eq(eddy__cluster_refused(EDDY_ERR_IO, &moved), EDDY__CLUSTER_MOVED);
    cr_expect_eq(eddy__cluster_refused(EDDY_ERR_IO, &tryagain), EDDY__CLUSTER_TRYAGAIN);
    cr_expect_eq(eddy__cluster_refused(EDDY_ERR_IO, &down), EDDY__CLUSTER_DOWN);
    cr_expect_eq(eddy__cluster_refused(EDDY_ERR_IO, &io), EDDY__CLUSTER_NOT_REFUSED);
    cr_expect_eq(eddy__cluster_refused(EDDY_ERR_TIMEOUT, &moved), EDDY__CLUSTER_NOT_REFUSED);

    /* With publish_dedup_ms (this suite's publisher): anything refused goes again. */
    cr_expect(again_after(pub, 1, &moved));
    cr_expect(again_after(pub, 3, &tryagain));
    cr_expect(again_after(pub, 2, &down));
    cr_expect_not(again_after(pub, 1, &io), "a lost connection is no refusal");

    /* Without it: one publish after a MOVED or a TRYAGAIN (the refused command is its own),
     * never a batch, never after a CLUSTERDOWN (a publish behind the refused command may have
     * run once the cluster came back). */
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    eddy__settings plain_s;
    cr_assert_eq(eddy__settings_copy(&plain_s, &s, NULL), EDDY_OK);
    eddy__publisher *plain = eddy__publisher_new(&plain_s);
    cr_assert(plain);
    cr_expect(again_after(plain, 1, &moved));
    cr_expect(again_after(plain, 1, &tryagain));
    cr_expect_not(again_after(plain, 1, &down));
    cr_expect_not(again_after(plain, 2, &moved));
    cr_expect_not(again_after(plain, 2, &tryagain));
    eddy__publisher_free(plain);
    eddy__settings_free(&plain_s);

    /* The store's append: after a MOVED always; after a TRYAGAIN or a CLUSTERDOWN only the one
     * the refusal answered. */
    cr_expect(eddy__store_append_again(EDDY_ERR_IO, &moved, false));
    cr_expect(eddy__store_append_again(EDDY_ERR_IO, &tryagain, true));
    cr_expect_not(eddy__store_append_again(EDDY_ERR_IO, &tryagain, false));
    cr_expect(eddy__store_append_again(EDDY_ERR_IO, &down, true));
    cr_expect_not(eddy__store_append_again(EDDY_ERR_IO, &down, false));
    cr_expect_not(eddy__store_append_again(EDDY_ERR_IO, &io, true));
}
