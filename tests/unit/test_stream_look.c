/* SPDX-License-Identifier: BSD-3-Clause */
/* The server-behind rules (stream_look.h) on XINFO STREAM replies given as data. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "events/stream_look.h"
#include "raw.h"

static redisReply *info(const char *last_id, long long added) {
    char buf[256];
    snprintf(buf, sizeof(buf),
             "*6\r\n$6\r\nlength\r\n:0\r\n$17\r\nlast-generated-id\r\n$%zu\r\n%s\r\n"
             "$13\r\nentries-added\r\n:%lld\r\n",
             strlen(last_id), last_id, added);
    return raw_parse(buf);
}

/* A live read's entries array with ids ms-1 .. ms-n. */
static redisReply *entries(long long ms, int n) {
    char buf[4096];
    int len = snprintf(buf, sizeof(buf), "*%d\r\n", n);
    for (int i = 1; i <= n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%lld-%d", ms, i);
        len += snprintf(buf + len, sizeof(buf) - (size_t)len,
                        "*2\r\n$%zu\r\n%s\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n", strlen(id), id);
    }
    return raw_parse(buf);
}

static eddy__stream_behind feed(eddy__stream_look *l, redisReply *r) {
    eddy__stream_behind b;
    cr_assert(eddy__stream_look_feed(l, r, &b));
    freeReplyObject(r);
    return b;
}

static void read_live(eddy__stream_look *l, long long ms, int n) {
    redisReply *e = entries(ms, n);
    eddy__stream_look_read(l, e);
    freeReplyObject(e);
}

Test(stream_look, a_snapshot_restore_counts_the_writes_read_and_lost) {
    eddy__stream_look l = {.looked = true};
    read_live(&l, 100, 5);
    eddy__stream_behind b = feed(&l, info("100-3", 3));
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 2);
    cr_expect_str_eq(b.last_id, "100-3");
    cr_expect_str_eq(b.max_read_id, "100-5");
    /* The next look compares with this one: nothing more is lost. */
    b = feed(&l, info("100-3", 3));
    cr_expect(!b.behind);
}

Test(stream_look, entries_others_added_are_not_losses) {
    eddy__stream_look l = {.looked = true};
    read_live(&l, 100, 2);
    eddy__stream_behind b = feed(&l, info("200-1", 10));
    cr_expect(!b.behind);
    read_live(&l, 300, 4); /* all above the look's last id */
    b = feed(&l, info("300-4", 14));
    cr_expect(!b.behind);
    b = feed(&l, info("300-4", 9)); /* fewer added than the look before saw */
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 5);
}

Test(stream_look, an_id_below_what_was_read_is_behind_with_nothing_counted) {
    eddy__stream_look l = {.looked = true};
    read_live(&l, 500, 1);
    eddy__stream_behind b = feed(&l, info("400-0", 7)); /* other writers' adds hide the count */
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 0);
}

Test(stream_look, a_reply_that_is_not_stream_info_is_skipped) {
    eddy__stream_look l = {.looked = true};
    read_live(&l, 100, 3);
    eddy__stream_behind b;
    redisReply *err = raw_parse("-ERR no such key\r\n");
    cr_expect(!eddy__stream_look_feed(&l, err, &b));
    freeReplyObject(err);
    b = feed(&l, info("0-0", 0)); /* the reads still count at the next look */
    cr_expect_eq(b.lost, 3);
}

/* ---- published ids ---- */

static void note(eddy__pub_look *t, const char *key, const char *first, const char *last,
                 uint64_t n) {
    eddy__pub_look_note(t, key, strlen(key), first, strlen(first), last, strlen(last), n);
}

/* A lost connection, then key's look and its reply. */
static eddy__stream_behind look(eddy__pub_look *t, const char *key, redisReply *r) {
    eddy__pub_look_lost(t);
    eddy__pub_look_take(t, key);
    eddy__stream_behind b;
    eddy__pub_look_feed(t, key, r, &b);
    freeReplyObject(r);
    return b;
}

Test(pub_look, counts_the_rounds_above_the_servers_last_id_once) {
    static eddy__pub_look t;
    note(&t, "s", "10-0", "10-2", 3);
    note(&t, "s", "11-0", "11-1", 2);
    note(&t, "s", "12-0", "12-0", 1);
    cr_expect(!eddy__pub_look_take(&t, "s"), "no look before a lost connection");
    eddy__pub_look_lost(&t);
    cr_expect_eq(t.ndue, 1);
    cr_expect(eddy__pub_look_take(&t, "s"));
    cr_expect(!eddy__pub_look_take(&t, "s"), "one look per loss");
    eddy__stream_behind b = look(&t, "s", info("10-2", 3));
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 3);
    cr_expect_str_eq(b.last_id, "10-2");
    cr_expect_str_eq(b.max_read_id, "12-0");
    b = look(&t, "s", info("10-2", 3));
    cr_expect(!b.behind, "the lost rounds were dropped");
    eddy__pub_look_free(&t);
}

Test(pub_look, a_snapshot_inside_a_round_counts_its_last_and_a_gone_stream_counts_all) {
    static eddy__pub_look t;
    note(&t, "s", "10-0", "10-9", 10);
    eddy__stream_behind b = look(&t, "s", info("10-4", 5));
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 1, "a lower bound: the ids inside a round are not kept");
    note(&t, "s", "20-0", "20-3", 4);
    b = look(&t, "s", raw_parse("-ERR no such key\r\n"));
    cr_expect(b.behind);
    cr_expect_eq(b.lost, 4);
    note(&t, "s", "30-0", "30-1", 2);
    b = look(&t, "s", raw_parse("-NOPERM this user has no permissions\r\n"));
    cr_expect(!b.behind, "another error says nothing about the stream");
    b = look(&t, "s", info("30-1", 2));
    cr_expect(!b.behind);
    eddy__pub_look_free(&t);
}

Test(pub_look, rounds_noted_after_the_look_was_taken_are_not_compared) {
    static eddy__pub_look t;
    note(&t, "s", "10-0", "10-0", 1);
    eddy__pub_look_lost(&t);
    cr_assert(eddy__pub_look_take(&t, "s"));
    note(&t, "s", "12-0", "12-0", 1); /* another thread's round, run after the look */
    redisReply *r = info("11-0", 2);
    eddy__stream_behind b;
    eddy__pub_look_feed(&t, "s", r, &b);
    freeReplyObject(r);
    cr_expect(!b.behind);
    eddy__pub_look_free(&t);
}

Test(pub_look, the_table_keeps_the_streams_published_to_most_recently) {
    static eddy__pub_look t;
    char key[32];
    for (int i = 0; i <= EDDY__PUB_LOOK_STREAMS; i++) {
        snprintf(key, sizeof(key), "s%d", i);
        note(&t, key, "1-0", "1-0", 1);
    }
    eddy__stream_behind b = look(&t, "s0", raw_parse("-ERR no such key\r\n"));
    cr_expect(!b.behind, "the least recent stream was replaced");
    snprintf(key, sizeof(key), "s%d", EDDY__PUB_LOOK_STREAMS);
    b = look(&t, key, raw_parse("-ERR no such key\r\n"));
    cr_expect_eq(b.lost, 1);
    eddy__pub_look_free(&t);
}
