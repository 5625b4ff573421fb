/* SPDX-License-Identifier: BSD-3-Clause */
/* The FIFO of reply slots a shared connection matches replies with (src/util/pipeline.h), with no
 * server: replies are parsed from RESP text and fed in wire order. */
#include <criterion/criterion.h>
#include <string.h>

#include "raw.h"
#include "util/pipeline.h"
#include "util/reply_arena.h"

static redisReply *num(long long n) {
    char text[32];
    snprintf(text, sizeof(text), ":%lld\r\n", n);
    return raw_parse(text);
}

Test(pipeline, each_reply_fills_the_oldest_slot_in_wire_order) {
    eddy__pipeline pl;
    eddy__pipeline_init(&pl);
    eddy__pipe_slot a, b, c;
    redisReply *ra[1], *rb[3], *rc[1];
    int wa, wb, wc;
    eddy__pipeline_push(&pl, &a, ra, 1, &wa);
    eddy__pipeline_push(&pl, &b, rb, 3, &wb); /* a contiguous run: MULTI, XADD, EXEC */
    eddy__pipeline_push(&pl, &c, rc, 1, &wc);
    cr_assert_eq(pl.nslots, 3);
    bool unexpected;
    eddy__pipe_slot *done = eddy__pipeline_feed(&pl, num(1), &unexpected);
    cr_assert_eq(done, &a);
    cr_assert_eq(done->waiter, &wa);
    cr_assert_not(unexpected);
    cr_assert_null(eddy__pipeline_feed(&pl, num(2), &unexpected));
    cr_assert_null(eddy__pipeline_feed(&pl, num(3), &unexpected));
    cr_assert_eq(eddy__pipeline_head(&pl), &b, "b waits for its third reply");
    cr_assert_eq(eddy__pipeline_feed(&pl, num(4), &unexpected), &b);
    cr_assert_eq(eddy__pipeline_feed(&pl, num(5), &unexpected), &c);
    cr_assert_eq(ra[0]->integer, 1);
    cr_assert(rb[0]->integer == 2 && rb[1]->integer == 3 && rb[2]->integer == 4);
    cr_assert_eq(rc[0]->integer, 5);
    cr_assert_eq(a.st, EDDY_OK);
    cr_assert_null(eddy__pipeline_head(&pl));
    cr_assert_eq(pl.nslots, 0);
    freeReplyObject(ra[0]);
    for (int i = 0; i < 3; i++)
        freeReplyObject(rb[i]);
    freeReplyObject(rc[0]);
}

Test(pipeline, a_reply_nobody_asked_for_is_reported_and_freed) {
    eddy__pipeline pl;
    eddy__pipeline_init(&pl);
    bool unexpected = false;
    cr_assert_null(eddy__pipeline_feed(&pl, num(7), &unexpected));
    cr_assert(unexpected);
}

Test(pipeline, a_lost_connection_fails_every_slot_once_in_order_with_partial_replies_freed) {
    eddy__pipeline pl;
    eddy__pipeline_init(&pl);
    eddy__pipe_slot a, b;
    redisReply *ra[2], *rb[1];
    eddy__pipeline_push(&pl, &a, ra, 2, NULL);
    eddy__pipeline_push(&pl, &b, rb, 1, NULL);
    bool unexpected;
    cr_assert_null(eddy__pipeline_feed(&pl, num(1), &unexpected)); /* half of a's */
    cr_assert_eq(eddy__pipeline_fail_next(&pl, EDDY_ERR_IO), &a);
    cr_assert_eq(a.st, EDDY_ERR_IO);
    cr_assert(ra[0] == NULL && ra[1] == NULL, "a failed slot holds no reply");
    cr_assert_eq(eddy__pipeline_fail_next(&pl, EDDY_ERR_IO), &b);
    cr_assert_eq(b.st, EDDY_ERR_IO);
    cr_assert_null(eddy__pipeline_fail_next(&pl, EDDY_ERR_IO), "each slot fails once");
    cr_assert_eq(pl.nslots, 0);
    /* usable again after the loss */
    eddy__pipeline_push(&pl, &a, ra, 1, NULL);
    cr_assert_eq(eddy__pipeline_feed(&pl, num(9), &unexpected), &a);
    cr_assert_eq(ra[0]->integer, 9);
    freeReplyObject(ra[0]);
}

Test(pipeline, a_slot_failed_when_it_failed_or_a_reply_is_an_error) {
    eddy__pipeline pl;
    eddy__pipeline_init(&pl);
    eddy__pipe_slot ok, refused, lost;
    redisReply *rok[2], *rref[2], *rlost[1];
    int w;
    eddy__pipeline_push(&pl, &ok, rok, 2, &w);
    eddy__pipeline_push(&pl, &refused, rref, 2, &w);
    eddy__pipeline_push(&pl, &lost, rlost, 1, &w);
    bool unexpected;
    eddy__pipeline_feed(&pl, num(1), &unexpected);
    cr_assert_eq(eddy__pipeline_feed(&pl, raw_parse("+OK\r\n"), &unexpected), &ok);
    cr_expect_not(eddy__pipeline_slot_failed(&ok));
    eddy__pipeline_feed(&pl, num(2), &unexpected);
    cr_assert_eq(eddy__pipeline_feed(&pl, raw_parse("-OOM no room\r\n"), &unexpected), &refused);
    cr_expect(eddy__pipeline_slot_failed(&refused));
    cr_assert_eq(eddy__pipeline_fail_next(&pl, EDDY_ERR_IO), &lost);
    cr_expect(eddy__pipeline_slot_failed(&lost));
    for (int i = 0; i < 2; i++) {
        freeReplyObject(rok[i]);
        freeReplyObject(rref[i]);
    }
}

Test(pipeline, a_failed_slot_whose_replies_are_in_an_arena_drops_them_without_freeing) {
    eddy__pipeline pl;
    eddy__pipeline_init(&pl);
    eddy__reply_arena *arena = eddy__reply_arena_new();
    cr_assert(arena);
    eddy__pipe_slot a;
    redisReply *ra[3];
    eddy__pipeline_push(&pl, &a, ra, 3, NULL);
    a.arena = true; /* a reactive publish keeps the replies before its last in its arena */
    redisReply *parsed = raw_parse("*2\r\n$3\r\nabc\r\n:5\r\n");
    bool unexpected;
    cr_assert_null(eddy__pipeline_feed(&pl, eddy__reply_arena_copy(arena, parsed), &unexpected));
    cr_assert_null(eddy__pipeline_feed(&pl, eddy__reply_arena_copy(arena, parsed), &unexpected));
    freeReplyObject(parsed);
    /* freeReplyObject on an arena's object would abort: the flag makes the failure drop them */
    cr_assert_eq(eddy__pipeline_fail_next(&pl, EDDY_ERR_IO), &a);
    cr_assert(ra[0] == NULL && ra[1] == NULL && ra[2] == NULL);
    eddy__pipeline_push(&pl, &a, ra, 1, NULL);
    cr_assert_not(a.arena, "a slot pushed again frees its replies as usual");
    eddy__pipeline_fail_next(&pl, EDDY_ERR_IO);
    eddy__reply_arena_free(arena);
}

Test(pipeline, an_arena_copy_is_the_same_reply_tree) {
    eddy__reply_arena *arena = eddy__reply_arena_new();
    cr_assert(arena);
    const char text[] = "*4\r\n$5\r\na\0b\r\n\r\n+OK\r\n*2\r\n:-7\r\n$-1\r\n-ERR no\r\n";
    redisReply *r = raw_parse_len(text, sizeof(text) - 1);
    redisReply *c = eddy__reply_arena_copy(arena, r);
    cr_assert(c);
    cr_assert_eq(c->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(c->elements, 4);
    cr_assert_eq(c->element[0]->len, 5);
    cr_assert(memcmp(c->element[0]->str, "a\0b\r\n", 5) == 0, "binary-safe");
    cr_assert_eq(c->element[0]->str[5], '\0');
    cr_assert_eq(c->element[1]->type, REDIS_REPLY_STATUS);
    cr_assert_str_eq(c->element[1]->str, "OK");
    cr_assert_eq(c->element[2]->element[0]->integer, -7);
    cr_assert_eq(c->element[2]->element[1]->type, REDIS_REPLY_NIL);
    cr_assert_eq(c->element[3]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(c->element[3]->str, "ERR no");
    cr_assert_neq(c->element[0]->str, r->element[0]->str, "a copy, not a view");
    freeReplyObject(r);
    eddy__reply_arena_free(arena);
}
