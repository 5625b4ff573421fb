/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus-wide wake-up (src/bus/wakeup.h) with no server: what it plans, and whom a reply wakes,
 * the replies fed back as parsed RESP. */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/wakeup.h"
#include "raw.h"

/* Who was woken, in order. */
typedef struct woken {
    const void *who[16];
    int n;
} woken;

static void on_wake(const void *who, void *user) {
    woken *k = user;
    cr_assert_lt(k->n, 16);
    k->who[k->n++] = who;
}

static bool was_woken(const woken *k, const void *who) {
    for (int i = 0; i < k->n; i++)
        if (k->who[i] == who)
            return true;
    return false;
}

/* The command's arguments joined by spaces. */
static void joined(const eddy__cmd *c, char *out, size_t size) {
    out[0] = '\0';
    for (int i = 0; i < c->argc; i++) {
        if (i > 0)
            strncat(out, " ", size - strlen(out) - 1);
        strncat(out, eddy__cmd_argv(c)[i], size - strlen(out) - 1);
    }
}

/* Plans, checks the commands' text, feeds the RESP replies; returns whom they woke. */
static woken round_trip(eddy__wakeup *w, long long block_ms, const char *const *want,
                        const char *const *replies, size_t n, long long want_block) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block = 0;
    cr_assert_eq(eddy__wakeup_plan(w, block_ms, &cmds, &block), EDDY_OK);
    cr_assert_eq(cmds.n, n, "planned %zu commands, want %zu", cmds.n, n);
    cr_assert_eq(block, want_block);
    redisReply *r[8];
    for (size_t i = 0; i < n; i++) {
        char text[512];
        joined(&cmds.cmds[i], text, sizeof(text));
        cr_assert_str_eq(text, want[i]);
        r[i] = raw_parse(replies[i]);
    }
    woken k = {0};
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, r, n, on_wake, &k), EDDY_OK);
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
    eddy__cmdlist_reset(&cmds);
    return k;
}

static int a, b, c; /* identities of three subscriptions */

Test(wakeup, nothing_watched_plans_nothing) {
    eddy__wakeup *w = eddy__wakeup_new(256);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block = 7;
    cr_assert_eq(eddy__wakeup_plan(w, 1000, &cmds, &block), EDDY_OK);
    cr_assert_eq(cmds.n, 0);
    cr_assert_eq(block, -1);
    eddy__wakeup_free(w);
}

Test(wakeup, ids_are_fixed_first_then_one_xread_covers_every_stream) {
    eddy__wakeup *w = eddy__wakeup_new(256);
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:x", &a, &replan), EDDY_OK);
    cr_assert_not(replan);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:y", &b, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:y", &c, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:y", &c, &replan), EDDY_OK); /* twice: once */
    cr_assert_eq(eddy__wakeup_streams(w), 2);

    /* Unknown ids: the newest entry of each, nothing blocks; every watcher is woken, so its
     * next read covers what came before the id. */
    const char *want1[] = {"XREVRANGE {n}:s:x + - COUNT 1", "XREVRANGE {n}:s:y + - COUNT 1"};
    const char *rep1[] = {"*1\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n", "*0\r\n"};
    woken k = round_trip(w, 1000, want1, rep1, 2, -1);
    cr_assert_eq(k.n, 3);
    cr_assert(was_woken(&k, &a) && was_woken(&k, &b) && was_woken(&k, &c));

    /* Then one blocking XREAD from those ids; a timeout wakes nobody. */
    const char *want2[] = {"XREAD COUNT 256 BLOCK 1000 STREAMS {n}:s:x {n}:s:y 5-1 0-0"};
    const char *nil[] = {"*-1\r\n"};
    k = round_trip(w, 1000, want2, nil, 1, 1000);
    cr_assert_eq(k.n, 0);

    /* News on y wakes y's watchers only, and y's id moves to the last entry returned. */
    const char *rep3[] = {"*1\r\n*2\r\n$7\r\n{n}:s:y\r\n*2\r\n"
                          "*2\r\n$3\r\n9-0\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
                          "*2\r\n$4\r\n10-0\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n"};
    k = round_trip(w, 1000, want2, rep3, 1, 1000);
    cr_assert_eq(k.n, 2);
    cr_assert(was_woken(&k, &b) && was_woken(&k, &c));
    const char *want4[] = {"XREAD COUNT 256 BLOCK 1000 STREAMS {n}:s:x {n}:s:y 5-1 10-0"};
    k = round_trip(w, 1000, want4, nil, 1, 1000);
    cr_assert_eq(k.n, 0);
    eddy__wakeup_free(w);
}

Test(wakeup, a_stream_watched_during_a_read_asks_for_a_new_plan) {
    eddy__wakeup *w = eddy__wakeup_new(10);
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:x", &a, &replan), EDDY_OK);
    const char *want1[] = {"XREVRANGE {n}:s:x + - COUNT 1"};
    const char *empty[] = {"*0\r\n"};
    round_trip(w, 50, want1, empty, 1, -1);

    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block;
    cr_assert_eq(eddy__wakeup_plan(w, 50, &cmds, &block), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:x", &b, &replan), EDDY_OK);
    cr_assert_not(replan, "a stream the read covers needs no new plan");
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:z", &b, &replan), EDDY_OK);
    cr_assert(replan, "a new stream is not in the read in flight");
    /* The cut read's connection failed: every id is unknown again. */
    redisReply *none[1] = {NULL};
    woken k = {0};
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, none, 1, on_wake, &k), EDDY_ERR_IO);
    eddy__cmdlist_reset(&cmds);
    const char *want2[] = {"XREVRANGE {n}:s:x + - COUNT 1", "XREVRANGE {n}:s:z + - COUNT 1"};
    const char *empties[] = {"*0\r\n", "*0\r\n"};
    k = round_trip(w, 50, want2, empties, 2, -1);
    cr_assert_eq(k.n, 3); /* a and b on x, b on z */
    eddy__wakeup_free(w);
}

Test(wakeup, unwatching_leaves_the_plan_and_a_late_reply_is_ignored) {
    eddy__wakeup *w = eddy__wakeup_new(10);
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:x", &a, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:y", &a, &replan), EDDY_OK);
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:y", &b, &replan), EDDY_OK);
    const char *want1[] = {"XREVRANGE {n}:s:x + - COUNT 1", "XREVRANGE {n}:s:y + - COUNT 1"};
    const char *empties[] = {"*0\r\n", "*0\r\n"};
    round_trip(w, 100, want1, empties, 2, -1);

    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block;
    cr_assert_eq(eddy__wakeup_plan(w, 100, &cmds, &block), EDDY_OK);
    eddy__wakeup_unwatch(w, NULL, &a); /* a stops: x has no watcher left, y keeps b */
    cr_assert_eq(eddy__wakeup_streams(w), 1);
    redisReply *r = raw_parse("*2\r\n*2\r\n$7\r\n{n}:s:x\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*0\r\n"
                              "*2\r\n$7\r\n{n}:s:y\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*0\r\n");
    woken k = {0};
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, &r, 1, on_wake, &k), EDDY_OK);
    cr_assert_eq(k.n, 1);
    cr_assert_eq(k.who[0], &b);
    freeReplyObject(r);
    eddy__cmdlist_reset(&cmds);
    const char *want2[] = {"XREAD COUNT 10 BLOCK 100 STREAMS {n}:s:y 2-0"};
    const char *nil[] = {"*-1\r\n"};
    round_trip(w, 100, want2, nil, 1, 100);
    eddy__wakeup_free(w);
}

Test(wakeup, a_reply_of_the_wrong_shape_is_a_protocol_error_and_unfixes_the_id) {
    eddy__wakeup *w = eddy__wakeup_new(10);
    bool replan;
    cr_assert_eq(eddy__wakeup_watch(w, "{n}:s:x", &a, &replan), EDDY_OK);
    const char *want1[] = {"XREVRANGE {n}:s:x + - COUNT 1"};
    const char *empty[] = {"*0\r\n"};
    round_trip(w, 100, want1, empty, 1, -1);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    long long block;
    cr_assert_eq(eddy__wakeup_plan(w, 100, &cmds, &block), EDDY_OK);
    redisReply *r = raw_parse("*1\r\n*2\r\n$7\r\n{n}:s:x\r\n:3\r\n");
    woken k = {0};
    cr_assert_eq(eddy__wakeup_feed(w, &cmds, &r, 1, on_wake, &k), EDDY_ERR_PROTOCOL);
    cr_assert_eq(k.n, 0);
    freeReplyObject(r);
    eddy__cmdlist_reset(&cmds);
    round_trip(w, 100, want1, empty, 1, -1); /* the id is fixed again */
    eddy__wakeup_free(w);
}
