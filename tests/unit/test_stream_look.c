/* The server-behind rules (stream_look.h) on XINFO STREAM replies given as data. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "stream_look.h"

static redisReply *resp(const char *text) {
    redisReader *r = redisReaderCreate();
    redisReaderFeed(r, text, strlen(text));
    void *out = NULL;
    cr_assert_eq(redisReaderGetReply(r, &out), REDIS_OK);
    cr_assert(out);
    redisReaderFree(r);
    return out;
}

static redisReply *info(const char *last_id, long long added) {
    char buf[256];
    snprintf(buf, sizeof(buf),
             "*6\r\n$6\r\nlength\r\n:0\r\n$17\r\nlast-generated-id\r\n$%zu\r\n%s\r\n"
             "$13\r\nentries-added\r\n:%lld\r\n",
             strlen(last_id), last_id, added);
    return resp(buf);
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
    return resp(buf);
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
    redisReply *err = resp("-ERR no such key\r\n");
    cr_expect(!eddy__stream_look_feed(&l, err, &b));
    freeReplyObject(err);
    b = feed(&l, info("0-0", 0)); /* the reads still count at the next look */
    cr_expect_eq(b.lost, 3);
}
