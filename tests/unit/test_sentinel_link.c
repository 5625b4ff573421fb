/* SPDX-License-Identifier: BSD-3-Clause */
/* The link with a redis-sentinel:// URL (src/link/sentinel.c), driven by the test with poll(), against
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

#include "config/settings.h"
#include "eddy_test.h"
#include "fake_server.h"
#include "link/link.h"
#include "link/sentinel.h"
#include "redis_server.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 5000;
    in.log = eddy_test_log;
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

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
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
    cr_expect_eq(count(a.got, "get-master-addr-by-name"), 1,
                 "the sentinel that named a replica is not asked first again");
    cr_expect_eq(count(b.got, "get-master-addr-by-name"), 1);
    cr_expect_eq(a.accepts, 2, "once the master is up, every sentinel is watched");
    cr_expect_gt(eddy__link_client_id(l), 0, "CLIENT ID still learnt");
    redisReply *r = NULL;
    cr_assert_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG", "the master answered the queued command");
    cr_expect_eq(count(a.got, "SUBSCRIBE"), 2, "the watch subscribed: %s", a.got);
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

/* A master (ROLE master, then PONG to each PING) and a sentinel that names it. */
static void master_and_sentinel(fake *master, fake *sn) {
    fake_listen(master);
    fake_listen(sn);
    master->triggers[0] = "ROLE";
    master->answers[0] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
    /* The n-th PING is answered once n of them arrived (a trigger is a substring). */
    static char pings[FAKE_STEPS][FAKE_STEPS * 14 + 1];
    for (int i = 1; i < FAKE_STEPS; i++) {
        pings[i][0] = '\0';
        for (int k = 0; k < i; k++)
            strcat(pings[i], "*1\r\n$4\r\nPING\r\n");
        master->triggers[i] = pings[i];
        master->answers[i] = "+PONG\r\n";
    }
    sn->triggers[0] = "get-master-addr-by-name";
    sn->answers[0] = addr_of(0, master->port);
    sn->triggers[1] = "SUBSCRIBE";
    sn->answers[1] = "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";
}

/* What a sentinel publishes on a channel: +switch-master's "<name> <old ip> <old port> <new ip>
 * <new port>", +failover-state-reconf-slaves's "master <name> <ip> <port>". */
static void announce_on(fake *sn, const char *chan, const char *text) {
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                     strlen(chan), chan, strlen(text), text);
    cr_assert(sn->peer >= 0);
    cr_assert_eq(write(sn->peer, msg, (size_t)n), n);
}

static void announce(fake *sn, const char *text) { announce_on(sn, "+switch-master", text); }

static bool ping_answered(eddy__link *l, fake **fakes, size_t n, eddy_error *err) {
    queue_ping(l);
    redisReply *r = NULL;
    eddy_status st = fake_one_reply(l, fakes, n, &r, err);
    bool ok = st == EDDY_OK && r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r)
        freeReplyObject(r);
    return ok;
}

/* The sentinel that named the master is asked with SUBSCRIBE +switch-master in the same write,
 * and its announcements are read as the link steps: one for another master or for the address
 * the link is on changes nothing; one that moves this master away fails the link before
 * anything more is written to it, and moves the handle's master epoch. */
enum last { SWITCH, RECONF, PROMOTING };

/* last: the announcement that moves the master away, +switch-master (it moved),
 * +failover-state-reconf-slaves (it is being replaced, and the sentinel names the new one) or
 * +failover-state-wait-promotion (it is being replaced, and the sentinel still names it: the
 * next connect refuses that answer). */
static void announcement_fails_the_link(enum last last) {
    fake master, sn;
    master_and_sentinel(&master, &sn);
    fake *fakes[] = {&master, &sn};
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/m", sn.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    cr_expect(strstr(sn.got, "get-master-addr-by-name") && strstr(sn.got, "SUBSCRIBE"),
              "asked and subscribed: %s", sn.got);
    cr_expect(strstr(sn.got, "+switch-master"));
    cr_assert(ping_answered(l, fakes, 2, &err), "%s", err.detail);

    char text[128];
    announce(&sn, "other 127.0.0.1 1 127.0.0.1 2");                          /* another master */
    snprintf(text, sizeof(text), "m 127.0.0.1 1 127.0.0.1 %d", master.port); /* to where it is */
    announce(&sn, text);
    announce(&sn, "m 127.0.0.1"); /* not an announcement */
    cr_assert(ping_answered(l, fakes, 2, &err), "%s", err.detail);
    size_t pings = count(master.got, "PING");
    cr_expect_eq(pings, 2);

    snprintf(text, sizeof(text), "master m 127.0.0.1 %d", master.port + 1); /* another one */
    announce_on(&sn, "+failover-state-reconf-slaves", text);
    cr_assert(ping_answered(l, fakes, 2, &err), "%s", err.detail);
    pings = count(master.got, "PING");

    unsigned epoch = eddy__conn_master_epoch(s.conn_state);
    if (last == RECONF) {
        snprintf(text, sizeof(text), "master m 127.0.0.1 %d", master.port);
        announce_on(&sn, "+failover-state-reconf-slaves", text);
    } else if (last == PROMOTING) {
        snprintf(text, sizeof(text), "slave 127.0.0.1:1 127.0.0.1 1 @ m 127.0.0.1 %d", master.port);
        announce_on(&sn, "+failover-state-wait-promotion", text);
    } else {
        snprintf(text, sizeof(text), "m 127.0.0.1 %d 127.0.0.1 1", master.port);
        announce(&sn, text);
    }
    queue_ping(l);
    redisReply *r = NULL;
    eddy_status st = fake_one_reply(l, fakes, 2, &r, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s", eddy_status_name(st));
    cr_expect_null(r);
    if (last == RECONF)
        cr_expect(strstr(err.detail, "+failover-state-reconf-slaves"), "%s", err.detail);
    else if (last == PROMOTING)
        cr_expect(strstr(err.detail, "+failover-state-wait-promotion"), "%s", err.detail);
    else
        cr_expect(strstr(err.detail, "+switch-master") && strstr(err.detail, "127.0.0.1:1"), "%s",
                  err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    cr_expect_eq(count(master.got, "PING"), pings, "nothing more reached the old master");
    cr_expect_neq(eddy__conn_master_epoch(s.conn_state), epoch, "the handle's epoch moved");
    if (last == PROMOTING) { /* the sentinel still names it: not taken */
        int accepts = master.accepts;
        cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
        st = fake_until_ready(l, fakes, 2, &err);
        cr_expect_eq(st, EDDY_ERR_IO, "%s", eddy_status_name(st));
        cr_expect(strstr(err.detail, "which a failover is replacing"), "%s", err.detail);
        cr_expect_eq(master.accepts, accepts, "no connection to the master being replaced");
    }
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&sn);
}

Test(sentinel_link, switch_master_announcement_fails_the_link_at_once) {
    announcement_fails_the_link(SWITCH);
}

Test(sentinel_link, reconf_slaves_away_from_the_master_fails_the_link_at_once) {
    announcement_fails_the_link(RECONF);
}

Test(sentinel_link, wait_promotion_fails_the_link_and_avoids_the_master_being_replaced) {
    announcement_fails_the_link(PROMOTING);
}

/* Another connection of the handle heard of a switch: this one fails at its next step, before
 * writing, and connects again at the new epoch. A doubt (a WAIT shortfall, a ROLE that is not
 * master) moves the epoch at most once per reconnect_max_ms, and costs a link that watches every
 * sentinel nothing (a failover would have been announced to it); an announced move always
 * counts. */
Test(sentinel_link, a_new_master_epoch_fails_every_link_of_the_handle) {
    fake master, sn;
    master_and_sentinel(&master, &sn);
    fake *fakes[] = {&master, &sn};
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/m", sn.port);
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 5000;
    in.reconnect_max_ms = 600000; /* the doubts below all fall within it */
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    eddy__link *l = eddy__link_new(&s, false);
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    cr_assert(ping_answered(l, fakes, 2, &err), "%s", err.detail);

    unsigned e0 = eddy__conn_master_epoch(s.conn_state);
    eddy__conn_master_doubt(s.conn_state);
    unsigned e1 = eddy__conn_master_epoch(s.conn_state);
    cr_expect_eq(e1, e0 + 1, "the first doubt moves the epoch");
    cr_expect(ping_answered(l, fakes, 2, &err), "its only sentinel is watched: %s", err.detail);
    eddy__conn_master_doubt(s.conn_state); /* within reconnect_max_ms of the last: nothing */
    cr_expect_eq(eddy__conn_master_epoch(s.conn_state), e1);

    eddy__conn_master_moved(s.conn_state);
    cr_expect_eq(eddy__conn_master_epoch(s.conn_state), e1 + 1, "a move always counts");
    int pings = count(master.got, "PING");
    queue_ping(l);
    redisReply *r = NULL;
    cr_expect_eq(fake_one_reply(l, fakes, 2, &r, &err), EDDY_ERR_IO);
    cr_expect_null(r);
    cr_expect(strstr(err.detail, "asking the sentinels again"), "%s", err.detail);
    cr_expect_eq(count(master.got, "PING"), pings, "the stale link wrote nothing more");

    int asked = sn.accepts;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(sn.accepts, asked + 1, "the sentinel was asked afresh");
    cr_expect(ping_answered(l, fakes, 2, &err), "%s", err.detail);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&sn);
}

/* A link that cannot watch every sentinel (one of the URL's is down) follows a doubt: it fails
 * at its next step and asks afresh, since the failover's leader may be the one it cannot hear. */
Test(sentinel_link, a_doubt_fails_a_link_that_does_not_watch_every_sentinel) {
    fake master, sn;
    master_and_sentinel(&master, &sn);
    fake *fakes[] = {&master, &sn};
    char url[160];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/m", sn.port,
             eddy_test_free_port()); /* nobody listens on the second */
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 5000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    eddy__link *l = eddy__link_new(&s, false);
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    cr_assert(ping_answered(l, fakes, 2, &err), "%s", err.detail);
    eddy__conn_master_doubt(s.conn_state);
    int pings = count(master.got, "PING");
    queue_ping(l);
    redisReply *r = NULL;
    cr_expect_eq(fake_one_reply(l, fakes, 2, &r, &err), EDDY_ERR_IO);
    cr_expect_null(r);
    cr_expect(strstr(err.detail, "asking the sentinels again"), "%s", err.detail);
    cr_expect_eq(count(master.got, "PING"), pings, "the link wrote nothing more");
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&sn);
}

/* The announcements' words, strictly: anything else is not one. */
Test(sentinel_link, sentinel_messages_are_read_strictly) {
    redisReply el[3], *els[3] = {&el[0], &el[1], &el[2]};
    redisReply arr = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = els};
    char host[16];
    int port = 0;
    const eddy__sentinel_msg NONE = EDDY__SENTINEL_MSG_NONE, SW = EDDY__SENTINEL_MSG_SWITCH,
                             LEAVE = EDDY__SENTINEL_MSG_LEAVING;
    struct {
        const char *kind, *chan, *text;
        eddy__sentinel_msg want;
    } cases[] = {
        {"message", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 6380", SW},
        {"message", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 6380 extra", NONE},
        {"message", "+switch-master", "mm 10.0.0.1 6379 10.0.0.2 6380", NONE},
        {"message", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 0", NONE},
        {"message", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 65536", NONE},
        {"message", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 63x", NONE},
        {"message", "+switch-master", "m 10.0.0.1 6379 a-host-name-too-long 6380", NONE},
        {"message", "+sdown", "m 10.0.0.1 6379 10.0.0.2 6380", NONE},
        {"subscribe", "+switch-master", "m 10.0.0.1 6379 10.0.0.2 6380", NONE},
        {"message", "+failover-state-reconf-slaves", "master m 10.0.0.2 6380", LEAVE},
        {"message", "+failover-state-reconf-slaves", "master other 10.0.0.2 6380", NONE},
        {"message", "+failover-state-reconf-slaves", "slave m 10.0.0.2 6380", NONE},
        {"message", "+failover-state-reconf-slaves", "master m 10.0.0.2", NONE},
        {"message", "+failover-state-reconf-slaves", "master m 10.0.0.2 6380 @ x", NONE},
        {"message", "+failover-state-wait-promotion",
         "slave 10.0.0.9:7000 10.0.0.9 7000 @ m 10.0.0.2 6380", EDDY__SENTINEL_MSG_PROMOTING},
        {"message", "+failover-state-wait-promotion",
         "slave 10.0.0.9:7000 10.0.0.9 7000 @ other 10.0.0.2 6380", NONE},
        {"message", "+failover-state-wait-promotion",
         "slave 10.0.0.9:7000 10.0.0.9 7000 # m 10.0.0.2 6380", NONE},
        {"message", "+failover-state-wait-promotion", "slave 10.0.0.9:7000 10.0.0.9 7000 @ m",
         NONE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *w[3] = {cases[i].kind, cases[i].chan, cases[i].text};
        for (int k = 0; k < 3; k++)
            el[k] =
                (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)w[k], .len = strlen(w[k])};
        cr_expect_eq(eddy__sentinel_message(&arr, "m", host, sizeof(host), &port), cases[i].want,
                     "%s %s", cases[i].chan, cases[i].text);
        if (cases[i].want != NONE)
            cr_expect(strcmp(host, "10.0.0.2") == 0 && port == 6380);
    }
    arr.elements = 2;
    cr_expect_eq(eddy__sentinel_message(&arr, "m", host, sizeof(host), &port), NONE);
    redisReply nil = {.type = REDIS_REPLY_NIL};
    cr_expect_eq(eddy__sentinel_message(&nil, "m", host, sizeof(host), &port), NONE);
    cr_expect_eq(eddy__sentinel_message(NULL, "m", host, sizeof(host), &port), NONE);
}

/* A failover's leader may be a sentinel the link did not ask: once the master is up, every
 * sentinel is watched, and an announcement from another one fails the link as well. */
Test(sentinel_link, every_sentinel_is_watched_once_the_master_is_up) {
    fake master, a, b;
    master_and_sentinel(&master, &a);
    fake_listen(&b);
    b.triggers[0] = "SUBSCRIBE";
    b.answers[0] = "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";
    fake *fakes[] = {&master, &a, &b};
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/m", a.port, b.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(fake_until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    long long until = eddy_test_now_ms() + 20000; /* the watch's connect and SUBSCRIBE */
    while (!strstr(b.got, "SUBSCRIBE") && eddy_test_now_ms() < until)
        cr_assert(ping_answered(l, fakes, 3, &err), "%s", err.detail);
    cr_assert(strstr(b.got, "+failover-state-wait-promotion"), "b subscribed: %s", b.got);
    cr_expect(!strstr(b.got, "get-master-addr-by-name"), "b was not asked");
    size_t pings = count(master.got, "PING");

    char text[128];
    snprintf(text, sizeof(text), "slave 127.0.0.1:1 127.0.0.1 1 @ m 127.0.0.1 %d", master.port);
    announce_on(&b, "+failover-state-wait-promotion", text);
    queue_ping(l);
    redisReply *r = NULL;
    cr_expect_eq(fake_one_reply(l, fakes, 3, &r, &err), EDDY_ERR_IO);
    cr_expect_null(r);
    cr_expect(strstr(err.detail, "+failover-state-wait-promotion"), "%s", err.detail);
    cr_expect_eq(count(master.got, "PING"), pings, "nothing more reached the old master");
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&a);
    fake_close(&b);
}
