/* SPDX-License-Identifier: BSD-3-Clause */
/* The link with a redis-cluster:// URL (src/link/cluster.c), driven by the test with poll(), against
 * fake nodes (tests/support/fake_server.h) that answer on cue: a seed names the slot's master,
 * which answers -ASK, -MOVED, or -ASK inside a MULTI; the fixture's redis-server stands for a
 * master a MOVED leads to. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/settings.h"
#include "eddy_test.h"
#include "fake_server.h"
#include "link/cluster.h"
#include "link/link.h"
#include "store/store.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.ns = "orders";
    in.connect_timeout_ms = 5000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

/* Queues the one-word-or-more commands (a NULL-terminated list of space-separated lines). */
static void queue(eddy__link *l, const char *const *lines) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    for (size_t i = 0; lines[i]; i++) {
        eddy__cmd *c = eddy__cmdlist_add(&cmds, 0, 0);
        cr_assert(c);
        char buf[128];
        snprintf(buf, sizeof(buf), "%s", lines[i]);
        for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "))
            eddy__cmd_str(c, w);
    }
    eddy_error err;
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
}

static char map_answer[2][160];

/* CLUSTER SLOTS naming 127.0.0.1:<port> for every slot. */
static const char *map_of(int k, int port) {
    snprintf(map_answer[k], sizeof(map_answer[k]),
             "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nid\r\n", port);
    return map_answer[k];
}

static char redirect_answer[2][96];

static const char *redirect(int k, const char *code, int port) {
    snprintf(redirect_answer[k], sizeof(redirect_answer[k]), "-%s %u 127.0.0.1:%d\r\n", code,
             eddy__cluster_ns_slot("orders"), port);
    return redirect_answer[k];
}

/* An ASK: that one command goes, behind ASKING, to the node it names, and its reply comes in
 * the ASK's place; the command after it is still the master's. */
Test(cluster_link, an_ask_sends_the_one_command_to_the_importing_node) {
    fake seed, master, target;
    fake_listen(&seed);
    fake_listen(&master);
    fake_listen(&target);
    seed.triggers[0] = "SLOTS";
    seed.answers[0] = map_of(0, master.port);
    master.triggers[0] = "CLIENT";
    master.answers[0] = ":7\r\n";
    master.triggers[1] = "GET";
    master.answers[1] = redirect(0, "ASK", target.port);
    master.triggers[2] = "PING";
    master.answers[2] = "+PONG\r\n";
    target.triggers[0] = "ASKING";
    target.answers[0] = "+OK\r\n";
    target.triggers[1] = "GET";
    target.answers[1] = "$2\r\nhi\r\n";
    fake *fakes[] = {&seed, &master, &target};

    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", seed.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    queue(l, (const char *const[]){"GET {orders}:k", "PING", NULL});
    redisReply *r = NULL;
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_eq(r->type, REDIS_REPLY_STRING);
    cr_expect_str_eq(r->str, "hi", "the importing node's reply, in the ASK's place");
    freeReplyObject(r);
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG", "the next command's reply, from the master");
    freeReplyObject(r);
    cr_expect_eq(eddy__link_answered(l), 2);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_READY);
    const char *asking = strstr(target.got, "ASKING"), *get = strstr(target.got, "GET");
    cr_expect(asking && get && asking < get, "ASKING, then the command: %s", target.got);
    cr_expect(!strstr(target.got, "PING"), "only the ASKed command went there");
    cr_expect_eq(target.accepts, 1);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&seed);
    fake_close(&master);
    fake_close(&target);
}

/* An FCALL that an ASK sends to the importing node: eddy's functions are loaded per master, so
 * FUNCTION LOAD goes there first, once per node (issue 17: appends failed with "the server does
 * not know eddy_..._append" during a migration). */
Test(cluster_link, an_asked_fcall_loads_the_library_on_the_importing_node_once) {
    fake seed, master, target;
    fake_listen(&seed);
    fake_listen(&master);
    fake_listen(&target);
    seed.triggers[0] = "SLOTS";
    seed.answers[0] = map_of(0, master.port);
    master.triggers[0] = "CLIENT";
    master.answers[0] = ":7\r\n";
    master.triggers[1] = "FCALL";
    master.answers[1] = redirect(0, "ASK", target.port);
    master.triggers[2] = "PING";
    master.answers[2] = "+PONG\r\n";
    master.triggers[3] = "k2"; /* the second FCALL */
    master.answers[3] = redirect(1, "ASK", target.port);
    target.triggers[0] = "FCALL";
    char loaded[96]; /* FUNCTION LOAD's reply, ASKING's, the FCALL's */
    snprintf(loaded, sizeof(loaded), "$%zu\r\n%s\r\n+OK\r\n:1\r\n", sizeof(EDDY__STORE_LIBRARY) - 1,
             EDDY__STORE_LIBRARY);
    target.answers[0] = loaded;
    fake *fakes[] = {&seed, &master, &target};

    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", seed.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    queue(l, (const char *const[]){"FCALL f 1 {orders}:k", "PING", NULL});
    redisReply *r = NULL;
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_eq(r->type, REDIS_REPLY_INTEGER, "the FCALL's reply from the importing node");
    freeReplyObject(r);
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG");
    freeReplyObject(r);
    const char *load = strstr(target.got, "FUNCTION"), *asking = strstr(target.got, "ASKING");
    const char *fcall = asking ? strstr(asking, "FCALL") : NULL;
    cr_expect(load && asking && fcall && load < asking, "FUNCTION LOAD, ASKING, FCALL: %.200s",
              target.got);
    cr_expect(strstr(target.got, "#!lua name=" EDDY__STORE_LIBRARY), "the library's text");

    /* The same node again: it has the library now, so ASKING and the FCALL only. */
    size_t before = target.ngot;
    target.next = 0;
    target.triggers[0] = "FCALL";
    target.answers[0] = "+OK\r\n:2\r\n";
    queue(l, (const char *const[]){"FCALL f 1 {orders}:k2", NULL});
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_eq(r->integer, 2);
    freeReplyObject(r);
    cr_expect_null(strstr(target.got + before, "FUNCTION"), "loaded once per node: %.200s",
                   target.got + before);
    cr_expect(strstr(target.got + before, "ASKING"));
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&seed);
    fake_close(&master);
    fake_close(&target);
}

/* Commands queued as RESP bytes (as the blocking bus's multiplexed connection queues a run of
 * them): the ASKed one, second of its run, is found in them and followed all the same. */
Test(cluster_link, an_ask_in_a_run_of_raw_commands_is_followed) {
    fake seed, master, target;
    fake_listen(&seed);
    fake_listen(&master);
    fake_listen(&target);
    seed.triggers[0] = "SLOTS";
    seed.answers[0] = map_of(0, master.port);
    master.triggers[0] = "CLIENT";
    master.answers[0] = ":7\r\n";
    master.triggers[1] = "GET";
    static char answers[128];
    snprintf(answers, sizeof(answers), "+PONG\r\n%s:3\r\n", redirect(0, "ASK", target.port));
    master.answers[1] = answers;
    target.triggers[0] = "ASKING";
    target.answers[0] = "+OK\r\n";
    target.triggers[1] = "GET";
    target.answers[1] = "$2\r\nhi\r\n";
    fake *fakes[] = {&seed, &master, &target};
    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", seed.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    static const char run[] = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$10\r\n{orders}:k\r\n"
                              "*2\r\n$4\r\nINCR\r\n$10\r\n{orders}:n\r\n";
    cr_assert_eq(eddy__link_send_resp(l, run, sizeof(run) - 1, 3, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    const char *want[] = {"PONG", "hi", NULL};
    for (int i = 0; i < 3; i++) {
        redisReply *r = NULL;
        cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
        cr_assert(r);
        if (want[i])
            cr_expect_str_eq(r->str, want[i], "reply %d", i);
        else
            cr_expect_eq(r->integer, 3, "the INCR's, from the master");
        freeReplyObject(r);
    }
    const char *asking = strstr(target.got, "ASKING"), *get = strstr(target.got, "GET");
    cr_expect(asking && get && asking < get, "ASKING, then the command: %s", target.got);
    cr_expect(!strstr(target.got, "PING") && !strstr(target.got, "INCR"),
              "only the ASKed command went there: %s", target.got);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&seed);
    fake_close(&master);
    fake_close(&target);
}

/* Inside a MULTI an ASK is not followed (the server aborts the transaction at EXEC): the link
 * fails, and nothing goes to the importing node. */
Test(cluster_link, an_ask_inside_a_multi_fails_the_link) {
    fake seed, master, target;
    fake_listen(&seed);
    fake_listen(&master);
    fake_listen(&target);
    seed.triggers[0] = "SLOTS";
    seed.answers[0] = map_of(0, master.port);
    master.triggers[0] = "CLIENT";
    master.answers[0] = ":7\r\n";
    master.triggers[1] = "EXEC";
    static char multi[160];
    snprintf(multi, sizeof(multi), "+OK\r\n%s-EXECABORT Transaction discarded\r\n",
             redirect(0, "ASK", target.port));
    master.answers[1] = multi;
    fake *fakes[] = {&seed, &master, &target};
    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", seed.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    queue(l, (const char *const[]){"MULTI", "XADD {orders}:s:x * a b", "EXEC", NULL});
    redisReply *r = NULL;
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "OK", "MULTI's reply");
    freeReplyObject(r);
    r = NULL;
    eddy_status st = fake_one_reply(l, fakes, 3, &r, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, "ASK"), "%s", err.detail);
    cr_expect_null(r);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    cr_expect_eq(target.accepts, 0, "nothing went to the importing node");
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&seed);
    fake_close(&master);
    fake_close(&target);
}

/* A MOVED fails the link as "refused unwritten"; the next connect asks the node it named
 * first (here it names the fixture's server, which then answers). */
Test(cluster_link, a_moved_fails_the_link_and_the_next_connect_asks_the_named_node) {
    fake seed, master, moved;
    fake_listen(&seed);
    fake_listen(&master);
    fake_listen(&moved);
    int real = 0;
    cr_assert_eq(sscanf(eddy_test_redis_url(), "redis://127.0.0.1:%d", &real), 1);
    seed.triggers[0] = "SLOTS";
    seed.answers[0] = map_of(0, master.port);
    master.triggers[0] = "CLIENT";
    master.answers[0] = ":7\r\n";
    master.triggers[1] = "PING";
    master.answers[1] = redirect(0, "MOVED", moved.port);
    moved.triggers[0] = "SLOTS";
    moved.answers[0] = map_of(1, real);
    fake *fakes[] = {&seed, &master, &moved};
    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", seed.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    queue(l, (const char *const[]){"PING", NULL});
    redisReply *r = NULL;
    eddy_status st = fake_one_reply(l, fakes, 3, &r, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(eddy__cluster_moved(st, &err), "a MOVED says unwritten: %s", err.detail);

    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(moved.accepts, 1, "the MOVED's node was asked for the map");
    cr_expect_eq(seed.accepts, 1, "the seed was not asked again");
    queue(l, (const char *const[]){"PING", NULL});
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG", "the master the map named answered");
    freeReplyObject(r);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&seed);
    fake_close(&master);
    fake_close(&moved);
}
