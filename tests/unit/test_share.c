/* SPDX-License-Identifier: BSD-3-Clause */
/* A shared read connection's members with no server (src/bus/share.h): who a shared round
 * takes and when, who goes to a connection of its own and comes back, who a stop waits for,
 * whose command each reply answers (and that a member that left gets none), and who is told
 * when the connection is lost. blocking/share.c and reactive/share.c drive these rules; the
 * integration tests (test_subs.c) run them against real servers on both front ends. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "bus/share.h"

static eddy__share s;
static eddy__share_member m[4];
static int who[4];

static void setup(void) {
    eddy__share_init(&s);
    for (int i = 0; i < 4; i++)
        m[i] = (eddy__share_member){0};
}

static void teardown(void) { eddy__share_destroy(&s); }

TestSuite(share, .init = setup, .fini = teardown);

static size_t take(long long now, void ***batch, long long *next_at) {
    return eddy__share_take_due(&s, now, 60000, batch, next_at);
}

Test(share, attached_members_are_due_at_once_and_once) {
    void **b;
    long long next;
    cr_assert_eq(eddy__share_attach(&s, &m[0], &who[0]), EDDY_OK);
    cr_assert_eq(eddy__share_attach(&s, &m[1], &who[1]), EDDY_OK);
    cr_assert_eq(eddy__share_attach(&s, &m[1], &who[1]), EDDY_OK); /* twice: no change */
    cr_assert_eq(eddy__share_members(&s), 2);
    cr_assert_eq(take(1000, &b, &next), 2);
    cr_assert_eq(b[0], &who[0]);
    cr_assert_eq(b[1], &who[1]);
    cr_assert_eq(m[0].where, EDDY__SHARE_ROUND);
    /* In a round: no other round takes them. */
    cr_assert_eq(take(1000, &b, &next), 0);
    cr_assert_eq(next, 1000 + 60000);
}

Test(share, a_round_end_sets_when_it_is_due_next) {
    void **b;
    long long next;
    eddy__share_attach(&s, &m[0], &who[0]);
    eddy__share_attach(&s, &m[1], &who[1]);
    take(1000, &b, &next);
    eddy__share_round_end(&m[0], 1500);
    eddy__share_round_end(&m[1], 1200);
    cr_assert_eq(m[0].where, EDDY__SHARE_SHARED);
    cr_assert_eq(take(1100, &b, &next), 0);
    cr_assert_eq(next, 1200, "the earliest wake_at: %lld", next);
    cr_assert_eq(take(1200, &b, &next), 1);
    cr_assert_eq(b[0], &who[1]);
    cr_assert_eq(next, 1500);
}

Test(share, a_kick_makes_a_waiting_member_due_before_its_time) {
    void **b;
    long long next;
    eddy__share_attach(&s, &m[0], &who[0]);
    take(1000, &b, &next);
    cr_assert_not(eddy__share_kick(&m[0]), "in a round: nobody to wake");
    eddy__share_round_end(&m[0], 9000);
    cr_assert_eq(take(1000, &b, &next), 1, "the kick during the round is kept");
    eddy__share_round_end(&m[0], 9000);
    cr_assert_eq(take(1001, &b, &next), 0);
    cr_assert(eddy__share_kick(&m[0]), "waiting: its round driver is woken");
    cr_assert_eq(take(1002, &b, &next), 1);
}

Test(share, an_own_member_is_no_rounds_until_it_gives_itself_back) {
    void **b;
    long long next;
    eddy__share_attach(&s, &m[0], &who[0]);
    take(1000, &b, &next);
    eddy__share_own(&m[0], true);
    eddy__share_round_end(&m[0], 1000); /* the round ends after handing it over */
    cr_assert_eq(m[0].where, EDDY__SHARE_OWN);
    eddy__share_kick(&m[0]);
    cr_assert_eq(take(5000, &b, &next), 0);
    cr_assert(eddy__share_give_back(&m[0], 7000));
    cr_assert_eq(take(5000, &b, &next), 1, "the kick while it was its own is kept");
    eddy__share_round_end(&m[0], 7000);
    cr_assert_eq(take(6000, &b, &next), 0);
    cr_assert_eq(take(7000, &b, &next), 1);
}

Test(share, a_failed_handover_stays_in_the_round) {
    void **b;
    long long next;
    eddy__share_attach(&s, &m[0], &who[0]);
    take(1000, &b, &next);
    eddy__share_own(&m[0], false);
    cr_assert_eq(m[0].where, EDDY__SHARE_ROUND);
    cr_assert_not(eddy__share_give_back(&m[0], 2000), "only an own member gives itself back");
}

Test(share, a_leaving_member_is_taken_and_given_back_no_more) {
    void **b;
    long long next;
    eddy__share_attach(&s, &m[0], &who[0]);
    eddy__share_attach(&s, &m[1], &who[1]);
    m[0].leaving = true;
    cr_assert_eq(take(1000, &b, &next), 1);
    cr_assert_eq(b[0], &who[1]);
    eddy__share_own(&m[1], true);
    m[1].leaving = true;
    cr_assert_not(eddy__share_give_back(&m[1], 2000));
    cr_assert(eddy__share_detach(&s, &m[1]), "it was its own: that driver stops");
    cr_assert_not(eddy__share_detach(&s, &m[0]));
    cr_assert_not(eddy__share_detach(&s, &m[0]), "detached twice: nothing");
    cr_assert_eq(eddy__share_members(&s), 0);
    cr_assert_eq(eddy__share_attach(&s, &m[0], &who[0]), EDDY_OK);
    cr_assert_not(m[0].leaving, "attached again: it reads again");
    cr_assert_eq(take(3000, &b, &next), 1);
}

Test(share, replies_go_to_their_members_in_wire_order) {
    eddy__share_attach(&s, &m[0], &who[0]);
    eddy__share_attach(&s, &m[1], &who[1]);
    for (int i = 0; i < 100; i++) /* past the ring's first size */
        cr_assert(eddy__share_sent(&s, &m[i % 3 == 0 ? 0 : 1]));
    for (int i = 0; i < 100; i++)
        cr_assert_eq(eddy__share_answered(&s), &who[i % 3 == 0 ? 0 : 1], "reply %d", i);
    cr_assert_null(eddy__share_answered(&s), "none due");
}

Test(share, a_detached_members_replies_are_dropped_and_the_others_kept_in_order) {
    eddy__share_attach(&s, &m[0], &who[0]);
    eddy__share_attach(&s, &m[1], &who[1]);
    eddy__share_sent(&s, &m[0]);
    eddy__share_sent(&s, &m[1]);
    eddy__share_sent(&s, &m[0]);
    eddy__share_sent(&s, &m[1]);
    eddy__share_unsend(&s); /* the last did not go out */
    eddy__share_detach(&s, &m[0]);
    cr_assert_null(eddy__share_answered(&s));
    cr_assert_eq(eddy__share_answered(&s), &who[1]);
    cr_assert_null(eddy__share_answered(&s));
    cr_assert_null(eddy__share_answered(&s), "none due");
}

Test(share, a_lost_connection_answers_nothing_and_tells_every_member) {
    eddy__share_attach(&s, &m[0], &who[0]);
    eddy__share_attach(&s, &m[1], &who[1]);
    eddy__share_attach(&s, &m[2], &who[2]);
    eddy__share_sent(&s, &m[0]);
    eddy__share_lost(&s);
    cr_assert_null(eddy__share_answered(&s));
    size_t n;
    void **v = eddy__share_snapshot(&s, &n);
    cr_assert_eq(n, 3);
    free(v);
    int told = 0;
    for (void *w; (w = eddy__share_pop(&s)); told++)
        cr_assert(w == &who[0] || w == &who[1] || w == &who[2]);
    cr_assert_eq(told, 3);
    cr_assert_eq(eddy__share_members(&s), 0);
    cr_assert_eq(m[1].where, EDDY__SHARE_OFF);
    cr_assert_null(eddy__share_snapshot(&s, &n));
    cr_assert_eq(n, 0);
}

Test(share, a_member_detached_from_the_middle_keeps_the_others_attached) {
    void **b;
    long long next;
    for (int i = 0; i < 4; i++)
        eddy__share_attach(&s, &m[i], &who[i]);
    eddy__share_detach(&s, &m[1]);
    cr_assert_eq(eddy__share_members(&s), 3);
    cr_assert_eq(take(1000, &b, &next), 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert_neq(b[i], &who[1]);
    for (size_t i = 0; i < 3; i++)
        eddy__share_round_end(&m[i == 1 ? 3 : i], 1000);
    eddy__share_detach(&s, &m[3]); /* moved into the hole: its index followed it */
    cr_assert_eq(eddy__share_members(&s), 2);
    cr_assert_eq(take(1000, &b, &next), 2);
    for (size_t i = 0; i < 2; i++)
        cr_assert(b[i] == &who[0] || b[i] == &who[2], "member %zu", i);
    eddy__share_detach(&s, &m[0]);
    eddy__share_detach(&s, &m[2]);
    cr_assert_eq(eddy__share_members(&s), 0);
}
