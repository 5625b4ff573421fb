/* SPDX-License-Identifier: BSD-3-Clause */
/* The decisions both front ends' link drivers share (link_drive.h), with no server and no loop:
 * a command's deadline (its timeout, plus a blocking read's time, never before the one ahead),
 * which deadline comes first, and the reconnect gate around a connect (memory:// never waits,
 * a new connect waits for the previous one's backoff, refused credentials back off the
 * longest, a connection that answered a command resets the backoff, the tracker counts a loss
 * or a failed connect). The link that answers is on a unix socket this test serves itself. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/conn_state.h"
#include "config/settings.h"
#include "link/link_drive.h"
#include "util/reply.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.command_timeout_ms = 500;
    in.reconnect_min_ms = 100;
    in.reconnect_max_ms = 10000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

Test(link_drive, command_deadline_adds_block_time_and_waits_behind) {
    eddy__settings s = settings_for("redis://127.0.0.1:6379");
    cr_expect_eq(eddy__link_cmd_deadline(&s, 1000, -1, -1), 1500);
    cr_expect_eq(eddy__link_cmd_deadline(&s, 1000, 0, -1), 1500);
    cr_expect_eq(eddy__link_cmd_deadline(&s, 1000, 2000, -1), 3500, "a blocking read's time");
    cr_expect_eq(eddy__link_cmd_deadline(&s, 1000, -1, 9000), 9000, "behind a later one");
    cr_expect_eq(eddy__link_cmd_deadline(&s, 1000, -1, 1200), 1500, "behind an earlier one");
    eddy__settings_free(&s);
}

Test(link_drive, first_deadline_ignores_none) {
    cr_expect_eq(eddy__deadline_first(-1, -1), -1);
    cr_expect_eq(eddy__deadline_first(-1, 7), 7);
    cr_expect_eq(eddy__deadline_first(7, -1), 7);
    cr_expect_eq(eddy__deadline_first(7, 5), 5);
    cr_expect_eq(eddy__deadline_first(5, 7), 5);
    cr_expect_eq(eddy__deadline_first(0, 7), 0, "0 is a time, not none");
}

Test(link_drive, memory_never_waits_for_the_gate) {
    eddy__settings s = settings_for("memory://");
    eddy__reconnect g;
    eddy__reconnect_init(&g, 1);
    eddy__link_gate_start(&g, &s, NULL, 1000);
    cr_expect_eq(g.not_before, 0, "memory:// starts no backoff");
    g.not_before = 5000;
    cr_expect_eq(eddy__link_gate_wait(&s, &g, 1000), 0);
    eddy__settings_free(&s);
}

Test(link_drive, a_connect_waits_for_the_previous_ones_backoff) {
    eddy__settings s = settings_for("redis://127.0.0.1:6379");
    eddy__reconnect g;
    eddy__reconnect_init(&g, 1);
    cr_expect_eq(eddy__link_gate_wait(&s, NULL, 1000), 0, "no gate");
    cr_expect_eq(eddy__link_gate_wait(&s, &g, 1000), 0, "the first connect goes at once");
    eddy__link_gate_start(&g, &s, NULL, 1000);
    long long w = eddy__link_gate_wait(&s, &g, 1000);
    cr_expect(w >= 50 && w <= 100, "the shortest backoff, jittered: %lld", w);
    eddy__link_gate_start(&g, &s, NULL, 1000 + w);
    long long w2 = eddy__link_gate_wait(&s, &g, 1000 + w);
    cr_expect(w2 >= 100 && w2 <= 200, "doubles after a connect that proved nothing: %lld", w2);
    eddy__settings_free(&s);
}

Test(link_drive, refused_credentials_back_off_the_longest_only_when_never_up) {
    eddy__settings s = settings_for("redis://127.0.0.1:6379");
    eddy__reconnect g;
    eddy__reconnect_init(&g, 1);
    unsigned epoch = 0;
    eddy_error why = {.status = EDDY_ERR_AUTH};
    eddy__link_gate_down(&g, &s, NULL, true, &epoch, EDDY_ERR_AUTH, &why);
    eddy__link_gate_start(&g, &s, NULL, 1000);
    long long w = eddy__link_gate_wait(&s, &g, 1000);
    cr_expect(w <= 100, "a connection that was up is a loss, not a refusal: %lld", w);
    eddy__link_gate_down(&g, &s, NULL, false, &epoch, EDDY_ERR_AUTH, &why);
    eddy__link_gate_start(&g, &s, NULL, 2000);
    w = eddy__link_gate_wait(&s, &g, 2000);
    cr_expect(w >= 5000, "refused credentials wait the longest: %lld", w);
    eddy__settings_free(&s);
}

Test(link_drive, the_tracker_counts_a_failed_connect_or_a_loss) {
    eddy__settings s = settings_for("redis://127.0.0.1:6379");
    eddy__conn_state *cs = eddy__conn_state_new(&s.url, &s.log, NULL, NULL, s.reconnect_max_ms);
    cr_assert(cs);
    eddy__conn_state *own = s.conn_state; /* the copy's, freed with the settings */
    s.conn_state = cs;
    unsigned epoch = 0;
    eddy__link_gate_down(NULL, &s, NULL, false, &epoch, EDDY_ERR_IO, NULL);
    eddy_connection_stats st;
    eddy__conn_stats(cs, &st);
    cr_expect_eq(st.connect_failures, 1);
    cr_expect_eq(st.disconnects, 0);
    eddy__conn_up(cs, &epoch);
    cr_expect_neq(epoch, 0);
    eddy__link_gate_down(NULL, &s, NULL, true, &epoch, EDDY_ERR_IO, NULL);
    eddy__conn_stats(cs, &st);
    cr_expect_eq(st.connect_failures, 1);
    cr_expect_eq(st.disconnects, 1);
    cr_expect_eq(epoch, 0);
    s.conn_state = own;
    eddy__conn_state_free(cs);
    eddy__settings_free(&s);
}

/* A unix:// link (no handshake) whose one command this test answers itself: proved. */
static eddy__link *answered_link(const eddy__settings *s, int *srv, int *peer) {
    *srv = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->url.path);
    unlink(sa.sun_path);
    cr_assert_eq(bind(*srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(*srv, 1), 0);
    eddy__link *l = eddy__link_new(s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, 0, &err), EDDY_OK, "%s", err.detail);
    cr_assert_geq(*peer = accept(*srv, NULL, NULL), 0);
    cr_assert_eq(eddy__link_phase_of(l), EDDY__LINK_READY);
    cr_assert_not(eddy__link_proved(l));
    cr_assert_eq(eddy__link_send_resp(l, "*1\r\n$4\r\nPING\r\n", 14, 1, NULL, &err), EDDY_OK);
    cr_assert_eq(eddy__link_flush(l, &err), EDDY_OK);
    char buf[64];
    cr_assert_eq(read(*peer, buf, sizeof(buf)), 14);
    cr_assert_eq(write(*peer, "+PONG\r\n", 7), 7);
    redisReply *r = NULL;
    while (!r) {
        cr_assert_eq(eddy__link_io(l, EDDY__LINK_READ, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy__link_reply(l, &r, &err), EDDY_OK, "%s", err.detail);
    }
    freeReplyObject(r);
    cr_assert(eddy__link_proved(l));
    return l;
}

/* A gate a long way from its shortest delay, and a link (socket `name`) that answered. */
typedef struct answered {
    eddy__settings s;
    eddy__reconnect g;
    eddy__link *l;
    int srv, peer;
} answered;

static void answered_begin(answered *a, const char *name) {
    char url[128];
    snprintf(url, sizeof(url), "unix:///tmp/eddy-link-drive-%s-%d.sock", name, (int)getpid());
    a->s = settings_for(url);
    eddy__reconnect_init(&a->g, 1);
    for (int i = 0; i < 5; i++)
        eddy__link_gate_start(&a->g, &a->s, NULL, 1000);
    a->l = answered_link(&a->s, &a->srv, &a->peer);
}

static void answered_end(answered *a) {
    eddy__link_free(a->l);
    close(a->peer);
    close(a->srv);
    unlink(a->s.url.path);
    eddy__settings_free(&a->s);
}

Test(link_drive, a_connection_that_answered_resets_the_backoff) {
    answered a;
    answered_begin(&a, "down");
    unsigned epoch = 0;
    eddy__link_gate_down(&a.g, &a.s, a.l, true, &epoch, EDDY_ERR_IO, NULL);
    eddy__link_gate_start(&a.g, &a.s, NULL, 2000);
    long long w = eddy__link_gate_wait(&a.s, &a.g, 2000);
    cr_expect(w <= 100, "down after an answer: the shortest delay again, %lld", w);
    for (int i = 0; i < 5; i++)
        eddy__link_gate_start(&a.g, &a.s, NULL, 3000);
    eddy__link_gate_leave(&a.g, a.l);
    eddy__link_gate_start(&a.g, &a.s, NULL, 4000);
    w = eddy__link_gate_wait(&a.s, &a.g, 4000);
    cr_expect(w <= 100, "let go after an answer: the shortest delay again, %lld", w);
    answered_end(&a);
}

/* A driver that keeps its link across reconnects tells the gate nothing when it ends: the connect
 * itself reads whether the last connection answered, before it forgets that. */
Test(link_drive, a_reconnect_of_a_link_that_answered_starts_from_the_shortest_delay) {
    answered a;
    answered_begin(&a, "again");
    eddy_error err;
    cr_assert_eq(eddy__link_gate_connect(&a.g, &a.s, a.l, 2000, &err), EDDY_OK, "%s", err.detail);
    cr_expect_not(eddy__link_proved(a.l), "a new connection has answered nothing yet");
    long long w = eddy__link_gate_wait(&a.s, &a.g, 2000);
    cr_expect(w <= 100, "the last connection answered: the shortest delay again, %lld", w);
    /* This one answered nothing: the next waits longer. */
    cr_assert_eq(eddy__link_gate_connect(&a.g, &a.s, a.l, 2000 + w, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect(eddy__link_gate_wait(&a.s, &a.g, 2000 + w) > 100, "nothing answered: backing off");
    answered_end(&a);
}

/* A driver that keeps its link tells the same step of its loss as one that frees it
 * (eddy__link_gate_down): the gate then hears twice that the link answered (at the loss and at
 * the reconnect), which starts from the shortest delay once, not for every connect after. */
Test(link_drive, a_kept_link_told_down_backs_off_as_one_let_go) {
    answered a;
    answered_begin(&a, "kept");
    unsigned epoch = 0;
    eddy__link_gate_down(&a.g, &a.s, a.l, true, &epoch, EDDY_ERR_IO, NULL);
    eddy_error err;
    cr_assert_eq(eddy__link_gate_connect(&a.g, &a.s, a.l, 2000, &err), EDDY_OK, "%s", err.detail);
    long long w = eddy__link_gate_wait(&a.s, &a.g, 2000);
    cr_expect(w <= 100, "the lost connection answered: the shortest delay, %lld", w);
    eddy__link_gate_down(&a.g, &a.s, a.l, false, &epoch, EDDY_ERR_IO, NULL);
    cr_assert_eq(eddy__link_gate_connect(&a.g, &a.s, a.l, 2000 + w, &err), EDDY_OK, "%s",
                 err.detail);
    w = eddy__link_gate_wait(&a.s, &a.g, 2000 + w);
    cr_expect(w > 100, "this one answered nothing: backing off, %lld", w);
    answered_end(&a);
}

Test(link_drive, replies_done_resets_their_arena_or_frees_each) {
    eddy__reply_arena *a = eddy__reply_arena_new();
    cr_assert(a);
    redisReply *nil = eddy__reply_nil();
    cr_assert(nil);
    redisReply *in[2] = {eddy__reply_arena_copy(a, nil), NULL};
    cr_assert(in[0]);
    void *first = in[0];
    eddy__link_replies_done(a, in, 2);
    cr_expect_null(in[0]);
    /* Reset: the next reply is built where the first one was. */
    cr_expect_eq((void *)eddy__reply_arena_copy(a, nil), first);
    eddy__reply_arena_free(a);

    redisReply *own[2] = {nil, NULL};
    eddy__link_replies_done(NULL, own, 2); /* freed: ASan and valgrind see a leak otherwise */
    cr_expect_null(own[0]);
}

Test(link_drive, a_calls_deadline_is_its_own_when_that_comes_first) {
    eddy__settings s = settings_for("redis://127.0.0.1:6379");
    cr_expect_eq(eddy__link_call_deadline(&s, 100, 0, 0), 600, "none of its own");
    cr_expect_eq(eddy__link_call_deadline(&s, 100, 1000000 + 200, 1000000), 300,
                 "its own, on the wall clock, is sooner");
    cr_expect_eq(eddy__link_call_deadline(&s, 100, 1000000 + 900, 1000000), 600,
                 "the command timeout is sooner");
    cr_expect_eq(eddy__link_call_deadline(&s, 100, 1000000 - 10, 1000000), 90, "already passed");
    eddy__settings_free(&s);
}

/* A start that gave up: a refusal keeps its status and says why; anything else is I/O, with
 * the last failure's detail when there is one. */
Test(link_drive, late_error_keeps_a_refusal_and_the_detail) {
    eddy_error err, last = {.status = EDDY_ERR_AUTH};
    snprintf(last.detail, sizeof(last.detail), "WRONGPASS");
    cr_expect_eq(eddy__link_late_error(&err, &last, "x could not reach the backend"),
                 EDDY_ERR_AUTH);
    cr_expect_eq(err.status, EDDY_ERR_AUTH);
    cr_expect_str_eq(err.detail, "x could not reach the backend: WRONGPASS");
    last.status = EDDY_ERR_IO;
    snprintf(last.detail, sizeof(last.detail), "Connection refused");
    cr_expect_eq(eddy__link_late_error(&err, &last, "x"), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "x: Connection refused");
    last.status = EDDY_OK; /* no failure seen: no stale detail */
    cr_expect_eq(eddy__link_late_error(&err, &last, "x"), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "x");
    cr_expect_eq(eddy__link_late_error(&err, NULL, "x"), EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "x");
}
