/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection state rules (conn_state.h) without a server: one change per outage however
 * many connections report it, a late loss from an earlier period changes nothing, a refusal
 * is told once however often it repeats, and the counters count connections. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "config/conn_state.h"
#include "config/settings.h"
#include "link/cluster.h"
#include "util/backoff.h"

static eddy_connection_state told[32];
static size_t ntold;

static void on_change(eddy_connection_state st, const eddy_error *why, void *user) {
    (void)user;
    cr_assert_eq(why == NULL, st == EDDY_CONN_CONNECTED || st == EDDY_CONN_RECONNECTED);
    if (ntold < 32)
        told[ntold++] = st;
}

static eddy__conn_state *tracker(void) {
    static const eddy__url url = {.kind = EDDY__URL_TCP, .host = "127.0.0.1", .port = 6379};
    static const eddy__logger log = {0};
    ntold = 0;
    eddy__conn_state *cs = eddy__conn_state_new(&url, &log, on_change, NULL, 2000);
    cr_assert(cs);
    return cs;
}

static eddy_error because(eddy_status st, const char *text) {
    eddy_error e = {.status = st};
    strcpy(e.detail, text);
    return e;
}

Test(conn_state, one_change_per_outage_and_late_losses_ignored) {
    eddy__conn_state *cs = tracker();
    unsigned a = 0, b = 0, c = 0;
    eddy__conn_up(cs, &a);
    eddy__conn_up(cs, &b);
    eddy__conn_up(cs, &c);
    eddy_error io = because(EDDY_ERR_IO, "connection: Server closed the connection");
    eddy__conn_lost(cs, &a, EDDY_ERR_IO, &io);
    eddy__conn_lost(cs, &b, EDDY_ERR_IO, &io);
    eddy__conn_failed(cs, EDDY_ERR_IO, &io); /* retries while down */
    eddy__conn_up(cs, &a);
    eddy__conn_up(cs, &b);
    eddy__conn_lost(cs, &c, EDDY_ERR_IO, &io);      /* c noticed the old outage late */
    eddy__conn_lost(cs, &c, EDDY_ERR_IO, &io);      /* and reports nothing twice */
    eddy__conn_lost(cs, &b, EDDY_ERR_CLOSED, NULL); /* a stop says nothing */
    cr_assert_eq(ntold, 3);
    cr_expect_eq(told[0], EDDY_CONN_CONNECTED);
    cr_expect_eq(told[1], EDDY_CONN_DISCONNECTED);
    cr_expect_eq(told[2], EDDY_CONN_RECONNECTED);
    eddy_connection_stats st;
    eddy__conn_stats(cs, &st);
    cr_expect_eq(st.state, EDDY_CONN_RECONNECTED);
    cr_expect_eq(st.connects, 5);
    cr_expect_eq(st.disconnects, 3);
    cr_expect_eq(st.connect_failures, 1);
    eddy__conn_state_free(cs);
}

Test(conn_state, refusals_told_once_and_retried_at_the_longest_backoff) {
    eddy__conn_state *cs = tracker();
    eddy_error auth = because(EDDY_ERR_AUTH, "handshake refused: WRONGPASS");
    for (int i = 0; i < 10; i++)
        eddy__conn_failed(cs, EDDY_ERR_AUTH, &auth);
    unsigned a = 0;
    eddy__conn_up(cs, &a);
    eddy_error proto = because(EDDY_ERR_PROTOCOL, "hiredis: Protocol error");
    eddy__conn_failed(cs, EDDY_ERR_PROTOCOL, &proto);
    eddy__conn_failed(cs, EDDY_ERR_PROTOCOL, &proto);
    eddy__conn_failed(cs, EDDY_ERR_NOMEM, NULL); /* this process's memory: nothing learnt */
    cr_assert_eq(ntold, 3);
    cr_expect_eq(told[0], EDDY_CONN_AUTH_FAILED);
    cr_expect_eq(told[1], EDDY_CONN_CONNECTED);
    cr_expect_eq(told[2], EDDY_CONN_NOT_REDIS);
    cr_expect(eddy__conn_refused(EDDY_ERR_AUTH) && eddy__conn_refused(EDDY_ERR_PROTOCOL));
    cr_expect(!eddy__conn_refused(EDDY_ERR_IO));
    cr_expect_eq(eddy__conn_next_attempt(0, EDDY_ERR_IO), 1);
    unsigned longest = eddy__conn_next_attempt(0, EDDY_ERR_AUTH);
    cr_expect_eq(eddy__backoff_delay_ms(longest, 50, 2000, NULL), 2000);
    eddy__conn_state_free(cs);
}

Test(conn_state, a_first_failure_is_a_disconnect_then_connected) {
    eddy__conn_state *cs = tracker();
    eddy_error io = because(EDDY_ERR_IO, "connection: Connection refused");
    eddy__conn_failed(cs, EDDY_ERR_IO, &io);
    eddy__conn_failed(cs, EDDY_ERR_IO, &io);
    unsigned a = 0;
    eddy__conn_up(cs, &a);
    cr_assert_eq(ntold, 2);
    cr_expect_eq(told[0], EDDY_CONN_DISCONNECTED);
    cr_expect_eq(told[1], EDDY_CONN_CONNECTED);
    eddy__conn_state_free(cs);
}

/* The failure a cluster's redirect reply causes on a link (cluster.h), for the tracker. */
static eddy_error redirected(const char *reply_text) {
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

Test(conn_state, a_reroute_is_no_change_and_one_that_finds_no_node_is_the_outage) {
    eddy__conn_state *cs = tracker();
    unsigned a = 0, b = 0;
    eddy__conn_up(cs, &a);
    eddy__conn_up(cs, &b);
    /* A migration: the slot's keys are split, each connection comes up, its first command is
     * answered TRYAGAIN (or MOVED, UNBLOCKED) and it is given up, many times over. */
    const char *replies[] = {"TRYAGAIN Multiple keys request during rehashing of slot",
                             "MOVED 3999 127.0.0.1:7002",
                             "UNBLOCKED force unblock from blocking operation"};
    for (int i = 0; i < 60; i++) {
        eddy_error e = redirected(replies[i % 3]);
        cr_assert(eddy__cluster_rerouted(EDDY_ERR_IO, &e), "%s", e.detail);
        eddy__conn_lost(cs, &a, EDDY_ERR_IO, &e);
        eddy__conn_up(cs, &a);
    }
    cr_assert_eq(ntold, 1, "%zu changes", ntold);
    cr_expect_eq(told[0], EDDY_CONN_CONNECTED);
    /* A MOVED to a node that is gone: the reroute fails, and that is the outage, once. */
    eddy_error moved = redirected("MOVED 3999 127.0.0.1:7002");
    eddy_error refused = because(EDDY_ERR_IO, "connect to 127.0.0.1:7002: Connection refused");
    eddy__conn_lost(cs, &a, EDDY_ERR_IO, &moved);
    eddy__conn_failed(cs, EDDY_ERR_IO, &refused);
    eddy__conn_failed(cs, EDDY_ERR_IO, &refused);
    eddy__conn_lost(cs, &b, EDDY_ERR_IO, &moved); /* b was of the period that ended */
    cr_assert_eq(ntold, 2);
    cr_expect_eq(told[1], EDDY_CONN_DISCONNECTED);
    eddy__conn_up(cs, &a);
    cr_assert_eq(ntold, 3);
    cr_expect_eq(told[2], EDDY_CONN_RECONNECTED);
    eddy__conn_state_free(cs);
}

Test(conn_state, a_cluster_down_is_one_change_however_many_reconnects) {
    eddy__conn_state *cs = tracker();
    unsigned a = 0;
    eddy__conn_up(cs, &a);
    eddy_error down = redirected("CLUSTERDOWN The cluster is down");
    cr_assert_eq(eddy__cluster_refused(EDDY_ERR_IO, &down), EDDY__CLUSTER_DOWN);
    cr_assert_not(eddy__cluster_rerouted(EDDY_ERR_IO, &down));
    eddy__conn_lost(cs, &a, EDDY_ERR_IO, &down);
    /* Each connection comes up, and its first command is refused again. */
    for (int i = 0; i < 50; i++) {
        eddy__conn_up(cs, &a);
        cr_assert_neq(a, 0, "up, if not yet proved");
        eddy__conn_lost(cs, &a, EDDY_ERR_IO, &down);
        eddy__conn_failed(cs, EDDY_ERR_IO, &down);
    }
    cr_assert_eq(ntold, 2, "%zu changes", ntold);
    /* Healed: a connection comes up and answers; that ends the outage, once. */
    eddy__conn_up(cs, &a);
    cr_expect_eq(ntold, 2, "up is not enough while the outage is in doubt");
    eddy__conn_proved(cs, &a);
    eddy__conn_proved(cs, &a); /* every answer calls it: nothing more */
    cr_assert_eq(ntold, 3);
    cr_expect_eq(told[0], EDDY_CONN_CONNECTED);
    cr_expect_eq(told[1], EDDY_CONN_DISCONNECTED);
    cr_expect_eq(told[2], EDDY_CONN_RECONNECTED);
    /* An ordinary outage afterwards ends when a connection comes up, as before. */
    eddy_error io = because(EDDY_ERR_IO, "connection: Server closed the connection");
    eddy__conn_lost(cs, &a, EDDY_ERR_IO, &io);
    eddy__conn_up(cs, &a);
    cr_assert_eq(ntold, 5);
    cr_expect_eq(told[4], EDDY_CONN_RECONNECTED);
    eddy_connection_stats st;
    eddy__conn_stats(cs, &st);
    cr_expect_eq(st.connects, 53);
    cr_expect_eq(st.disconnects, 52);
    eddy__conn_state_free(cs);
}

/* The master epoch (redis-sentinel://): an announced move always makes a new one; a doubt only
 * when the last is older than reconnect_max_ms, doubled for each doubt since the last move. The
 * checks that nothing moves come right after a move (well within the interval); those that it
 * moves come after sleeping past it. */
Test(conn_state_core, master_epoch_moves_on_announcements_and_spaced_doubts) {
    static const eddy__url url = {.kind = EDDY__URL_SENTINEL, .name = "m"};
    eddy__logger log = {0};
    eddy__conn_state *cs = eddy__conn_state_new(&url, &log, NULL, NULL, 50);
    cr_assert(cs);
    unsigned e = eddy__conn_master_epoch(cs);
    cr_expect_eq(eddy__conn_master_epoch(NULL), 0);
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 1, "the first doubt counts");
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 1, "not again at once");
    struct timespec t = {0, 110 * 1000000}; /* past 2 x 50 ms */
    nanosleep(&t, NULL);
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 2);
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 2);
    eddy__conn_master_moved(cs);
    eddy__conn_master_moved(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 4, "every move counts");
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 4, "a doubt right after a move does not");
    struct timespec base = {0, 60 * 1000000}; /* past 50 ms: the interval started again */
    nanosleep(&base, NULL);
    eddy__conn_master_doubt(cs);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 5);

    cr_expect(!eddy__conn_master_avoided(cs, "127.0.0.1", 6379));
    eddy__conn_master_avoid(cs, "127.0.0.1", 6379);
    cr_expect_eq(eddy__conn_master_epoch(cs), e + 6, "avoiding is a move");
    cr_expect(eddy__conn_master_avoided(cs, "127.0.0.1", 6379));
    cr_expect(!eddy__conn_master_avoided(cs, "127.0.0.1", 6380));
    cr_expect(!eddy__conn_master_avoided(cs, "127.0.0.2", 6379));
    cr_expect(!eddy__conn_master_avoided(NULL, "127.0.0.1", 6379));
    eddy__conn_master_avoid(NULL, "127.0.0.1", 6379); /* no tracker: nothing */
    eddy__conn_state_free(cs);
}
