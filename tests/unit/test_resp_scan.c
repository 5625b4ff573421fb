/* SPDX-License-Identifier: BSD-3-Clause */
/* The RESP pre-scanner (src/util/resp_scan.h) in front of hiredis's reader, with no socket: replies
 * fed whole and byte by byte; a bulk over the limit becomes a marker with its length, an
 * entry's field list past the limit (many fields) too, shallow lists are never summed, and
 * everything around a skip parses as it was. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/resp_scan.h"

/* Feeds resp through a scanner in chunks of `step` bytes and returns the one reply. */
static redisReply *scan_parse(const char *resp, size_t n, size_t step, size_t limit,
                              unsigned long long *skipped) {
    redisReader *rd = redisReaderCreate();
    eddy__resp_scan sc;
    eddy__resp_scan_init(&sc);
    for (size_t off = 0; off < n; off += step) {
        size_t k = n - off < step ? n - off : step;
        cr_assert_eq(eddy__resp_scan_feed(&sc, rd, resp + off, k, limit), EDDY_OK);
    }
    void *r = NULL;
    cr_assert_eq(redisReaderGetReply(rd, &r), REDIS_OK, "%s", rd->errstr);
    cr_assert(r, "no complete reply");
    void *more = NULL;
    cr_assert_eq(redisReaderGetReply(rd, &more), REDIS_OK);
    cr_assert_null(more, "a reply too many");
    redisReaderFree(rd);
    if (skipped)
        *skipped = sc.skipped;
    return r;
}

static bool is_marker(const redisReply *r, unsigned long long want) {
    unsigned long long n = 0;
    return r->type == REDIS_REPLY_STRING && eddy__resp_skipped(r->str, r->len, &n) && n == want;
}

/* An XREADGROUP reply: one stream, two entries; the first's data is `big` bytes. */
static char *xread_reply(size_t big, size_t *n) {
    size_t cap = big + 512;
    char *s = malloc(cap);
    int h = snprintf(s, cap,
                     "*1\r\n*2\r\n$6\r\n{t}:s:\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$2\r\nid\r\n$"
                     "1\r\na\r\n$4\r\ndata\r\n$%zu\r\n",
                     big);
    memset(s + h, 'x', big);
    size_t at = (size_t)h + big;
    at +=
        (size_t)snprintf(s + at, cap - at, "\r\n*2\r\n$3\r\n1-2\r\n*2\r\n$2\r\nid\r\n$1\r\nb\r\n");
    *n = at;
    return s;
}

static void check_xread(redisReply *r, bool skipped, size_t big) {
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    redisReply *entries = r->element[0]->element[1];
    cr_assert_eq(entries->elements, 2);
    redisReply *fv = entries->element[0]->element[1];
    cr_assert_eq(fv->elements, 4);
    cr_expect_str_eq(fv->element[1]->str, "a");
    if (skipped)
        cr_expect(is_marker(fv->element[3], big), "the big value is a marker");
    else
        cr_expect_eq(fv->element[3]->len, big);
    redisReply *second = entries->element[1];
    cr_expect_str_eq(second->element[0]->str, "1-2");
    cr_expect_str_eq(second->element[1]->element[1]->str, "b");
}

Test(resp_scan, an_oversize_bulk_becomes_a_marker_fed_whole_or_byte_by_byte) {
    size_t n;
    char *resp = xread_reply(5000, &n);
    size_t steps[] = {1, 7, 4096, n};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        unsigned long long skipped = 0;
        redisReply *r = scan_parse(resp, n, steps[i], 1000, &skipped);
        check_xread(r, true, 5000);
        cr_expect_eq(skipped, 1);
        freeReplyObject(r);
    }
    /* Under the limit: passed on unchanged. */
    redisReply *r = scan_parse(resp, n, 3, 10000, NULL);
    check_xread(r, false, 5000);
    freeReplyObject(r);
    free(resp);
}

Test(resp_scan, many_fields_past_the_limit_are_skipped_in_an_entry_list_only) {
    /* An XRANGE reply (entry lists at depth 3): 40 values of 3000 bytes, limit 1000 + slack. */
    size_t nval = 40, vlen = 3000;
    size_t cap = nval * (vlen + 64) + 256;
    char *s = malloc(cap);
    size_t at = (size_t)snprintf(s, cap, "*1\r\n*2\r\n$3\r\n1-1\r\n*%zu\r\n", 2 * nval);
    for (size_t i = 0; i < nval; i++) {
        at += (size_t)snprintf(s + at, cap - at, "$1\r\nk\r\n$%zu\r\n", vlen);
        memset(s + at, 'v', vlen);
        at += vlen;
        memcpy(s + at, "\r\n", 2);
        at += 2;
    }
    unsigned long long skipped = 0;
    redisReply *r = scan_parse(s, at, 997, 2 * vlen, &skipped);
    redisReply *fv = r->element[0]->element[1];
    cr_assert_eq(fv->elements, 2 * nval);
    size_t kept = 0, markers = 0;
    for (size_t i = 1; i < fv->elements; i += 2) {
        if (is_marker(fv->element[i], vlen))
            markers++;
        else if (fv->element[i]->len == vlen)
            kept++;
    }
    cr_expect_eq(kept + markers, nval);
    /* Up to limit + slack of values kept (a few bytes of names count too), the rest markers. */
    cr_expect_eq(kept, (2 * vlen + EDDY__RESP_SCAN_SLACK) / vlen);
    cr_expect_eq(markers, skipped);
    freeReplyObject(r);

    /* The same values as one flat list (SMEMBERS-like, depth 1): never summed. */
    at = (size_t)snprintf(s, cap, "*%zu\r\n", nval);
    for (size_t i = 0; i < nval; i++) {
        at += (size_t)snprintf(s + at, cap - at, "$%zu\r\n", vlen);
        memset(s + at, 'v', vlen);
        at += vlen;
        memcpy(s + at, "\r\n", 2);
        at += 2;
    }
    r = scan_parse(s, at, 1000, 2 * vlen, &skipped);
    cr_expect_eq(skipped, 0);
    cr_expect_eq(r->elements, nval);
    freeReplyObject(r);
    free(s);
}

Test(resp_scan, other_elements_pass_unchanged) {
    const char *resp = "*7\r\n:42\r\n+OK\r\n-ERR no\r\n$-1\r\n*-1\r\n*0\r\n*2\r\n$0\r\n\r\n:1\r\n";
    redisReply *r = scan_parse(resp, strlen(resp), 1, 4, NULL);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 7);
    cr_expect_eq(r->element[0]->integer, 42);
    cr_expect_str_eq(r->element[1]->str, "OK");
    cr_expect_eq(r->element[2]->type, REDIS_REPLY_ERROR);
    cr_expect_eq(r->element[3]->type, REDIS_REPLY_NIL);
    cr_expect_eq(r->element[4]->type, REDIS_REPLY_NIL);
    cr_expect_eq(r->element[5]->elements, 0);
    cr_expect_eq(r->element[6]->element[0]->len, 0);
    freeReplyObject(r);
}

Test(resp_scan, bytes_that_are_not_resp_reach_the_reader) {
    redisReader *rd = redisReaderCreate();
    eddy__resp_scan sc;
    eddy__resp_scan_init(&sc);
    const char *junk = "$abc\r\nHTTP/1.1 400\r\n";
    cr_assert_eq(eddy__resp_scan_feed(&sc, rd, junk, strlen(junk), 100), EDDY_OK);
    void *r = NULL;
    cr_expect_eq(redisReaderGetReply(rd, &r), REDIS_ERR, "the reader sees the bad header");
    redisReaderFree(rd);
}

Test(resp_scan, markers_are_recognised_only_whole) {
    unsigned long long n = 0;
    cr_expect(eddy__resp_skipped("\0eddy:skipped:123", 17, &n));
    cr_expect_eq(n, 123);
    cr_expect_not(eddy__resp_skipped("\0eddy:skipped:", 14, NULL));
    cr_expect_not(eddy__resp_skipped("\0eddy:skipped:12x", 17, NULL));
    cr_expect_not(eddy__resp_skipped("eddy:skipped:12", 15, NULL));
}

/* Feeds resp in chunks of random sizes (seeded) and renders every reply the reader makes. */
static void render(const redisReply *r, char **out, size_t *len, size_t *cap) {
    char head[64];
    int n = snprintf(head, sizeof(head), "(%d:%zu:%lld:", r->type, r->len, r->integer);
    size_t need = (size_t)n + r->len + 2;
    while (*len + need >= *cap)
        cr_assert(*out = realloc(*out, *cap *= 2));
    memcpy(*out + *len, head, (size_t)n);
    *len += (size_t)n;
    if (r->str) {
        memcpy(*out + *len, r->str, r->len);
        *len += r->len;
    }
    for (size_t i = 0; i < r->elements; i++)
        render(r->element[i], out, len, cap);
    (*out)[(*len)++] = ')';
}

static char *scan_render(const char *resp, size_t n, unsigned seed, size_t limit, size_t *len) {
    redisReader *rd = redisReaderCreate();
    eddy__resp_scan sc;
    eddy__resp_scan_init(&sc);
    size_t cap = 4096;
    char *out = malloc(cap);
    cr_assert(out);
    *len = 0;
    for (size_t off = 0; off < n;) {
        size_t k = seed ? 1 + (size_t)rand_r(&seed) % 40 : n;
        if (k > n - off)
            k = n - off;
        cr_assert_eq(eddy__resp_scan_feed(&sc, rd, resp + off, k, limit), EDDY_OK);
        off += k;
        void *r = NULL;
        while (redisReaderGetReply(rd, &r) == REDIS_OK && r) {
            render(r, &out, len, &cap);
            freeReplyObject(r);
        }
    }
    redisReaderFree(rd);
    return out;
}

/* Several replies back to back, with skips, nils, empty and nested aggregates and headers cut
 * anywhere: every chunking gives the replies the whole feed gives. */
Test(resp_scan, any_chunking_gives_the_same_replies) {
    size_t big_n;
    char *big = xread_reply(3000, &big_n);
    const char *small = "*3\r\n:7\r\n$-1\r\n*2\r\n$5\r\nhello\r\n*2\r\n$1\r\nk\r\n$2\r\nvv\r\n"
                        "+PONG\r\n$0\r\n\r\n*0\r\n";
    size_t sn = strlen(small);
    size_t n = 2 * big_n + 2 * sn;
    char *all = malloc(n);
    cr_assert(all);
    memcpy(all, big, big_n);
    memcpy(all + big_n, small, sn);
    memcpy(all + big_n + sn, big, big_n);
    memcpy(all + 2 * big_n + sn, small, sn);
    size_t limits[] = {1000, 100000};
    for (size_t l = 0; l < 2; l++) {
        size_t want_n;
        char *want = scan_render(all, n, 0, limits[l], &want_n);
        cr_assert_gt(want_n, 0);
        for (unsigned seed = 1; seed <= 200; seed++) {
            size_t got_n;
            char *got = scan_render(all, n, seed, limits[l], &got_n);
            cr_assert(got_n == want_n && memcmp(got, want, want_n) == 0,
                      "chunking seed %u, limit %zu: other replies", seed, limits[l]);
            free(got);
        }
        free(want);
    }
    free(all);
    free(big);
}
