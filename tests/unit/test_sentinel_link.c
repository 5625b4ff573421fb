/* SPDX-License-Identifier: BSD-3-Clause */
/* The link with a redis-sentinel:// URL (src/sentinel.c), driven by the test with poll(), against
 * fake sentinels and servers: listening sockets the test itself accepts and answers with
 * scripted replies, so that a sentinel can name a replica, and a master can turn READONLY, on
 * cue. The fixture's redis-server stands for a real master. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eddy_test.h"
#include "fake_server.h"
#include "link.h"
#include "settings.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 5000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

static void queue_ping(eddy__link *l) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__cmd *c = eddy__cmdlist_add(&cmds, 0, 0);
    cr_assert(c);
    eddy__cmd_str(c, "PING");
    eddy_error err;
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
}

static char addr_answer[2][96];

/* "*2 127.0.0.1 <port>": what get-master-addr-by-name answers. */
static const char *addr_of(int slot, int port) {
    char p[16];
    int n = snprintf(p, sizeof(p), "%d", port);
    snprintf(addr_answer[slot], sizeof(addr_answer[slot]), "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n",
             n, p);
    return addr_answer[slot];
}

/* A sentinel names a replica: the connect fails saying so, and no command queued meanwhile
 * reached the replica; the next connect starts with the next sentinel, which names the master. */
Test(sentinel_link, a_replica_is_refused_and_the_next_connect_asks_the_next_sentinel) {
    fake replica, a, b;
    fake_listen(&replica);
    fake_listen(&a);
    fake_listen(&b);
    replica.triggers[0] = "CLIENT"; /* CLIENT ID, then ROLE */
    replica.answers[0] = ":7\r\n";
    replica.triggers[1] = "ROLE";
    replica.answers[1] = "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n";
    a.triggers[0] = b.triggers[0] = "get-master-addr-by-name";
    a.answers[0] = addr_of(0, replica.port);
    int master_port = 0;
    cr_assert_eq(sscanf(eddy_test_redis_url(), "redis://127.0.0.1:%d", &master_port), 1);
    b.answers[0] = addr_of(1, master_port);
    fake *fakes[] = {&replica, &a, &b};

    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/m", a.port, b.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    queue_ping(l); /* queued while connecting: it must wait for ROLE master */
    eddy_status st = fake_until_ready(l, fakes, 3, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, "has the role slave"), "%s", err.detail);
    cr_expect(strstr(replica.got, "ROLE"), "the handshake asked ROLE: %s", replica.got);
    cr_expect(!strstr(replica.got, "PING"), "no command reached the replica: %s", replica.got);
    cr_expect(strstr(replica.got, "CLIENT"), "the handshake's CLIENT ID went before ROLE");
    cr_expect_eq(a.accepts, 1);
    cr_expect_eq(b.accepts, 0, "the first sentinel answered: the second was not asked");

    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    queue_ping(l);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(a.accepts, 1, "the sentinel that named a replica is not asked first again");
    cr_expect_eq(b.accepts, 1);
    cr_expect_gt(eddy__link_client_id(l), 0, "CLIENT ID still learnt");
    redisReply *r = NULL;
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG", "the master answered the queued command");
    freeReplyObject(r);
    cr_expect_eq(replica.accepts, 1);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&replica);
    fake_close(&a);
    fake_close(&b);
}

/* A master that turned replica answers READONLY: the link fails (EDDY_ERR_IO) so that the
 * driver connects again, which asks the sentinels again. */
Test(sentinel_link, readonly_fails_the_link) {
    fake master, sn;
    fake_listen(&master);
    fake_listen(&sn);
    master.triggers[0] = "ROLE";
    master.answers[0] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
    master.triggers[1] = "PING";
    master.answers[1] = "-READONLY You can't write against a read only replica.\r\n";
    sn.triggers[0] = "get-master-addr-by-name";
    sn.answers[0] = addr_of(0, master.port);
    fake *fakes[] = {&master, &sn};
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/m", sn.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    queue_ping(l);
    redisReply *r = NULL;
    cr_expect_eq(fake_one_reply(l, fakes, 2, &r, &err), EDDY_ERR_IO);
    cr_expect_null(r);
    cr_expect(strstr(err.detail, "READONLY"), "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&sn);
}
