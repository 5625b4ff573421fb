/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the RESP pre-scanner (src/util/resp_scan.h), which sees every byte a server
 * sends before hiredis's reader does.
 *
 * Input layout: one byte choosing the chunk size the bytes are fed in (1..256), one choosing
 * the limit (0..255 bytes, or "none"), then the bytes. Properties beyond "no crash": with no
 * limit the scanner is invisible (the replies parsed through it, once the header bytes it holds
 * back are fed too, are those parsed without it, element by element, and a protocol error
 * comes at the same reply); with a limit, every reply
 * it lets through parses, and no bulk in it is longer than the limit unless it is a marker. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/resp_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const redisReply *a, const redisReply *b) {
    if (a->type != b->type || a->len != b->len || a->integer != b->integer ||
        a->elements != b->elements)
        return false;
    if (a->str && (!b->str || memcmp(a->str, b->str, a->len) != 0))
        return false;
    for (size_t i = 0; i < a->elements; i++)
        if (!same(a->element[i], b->element[i]))
            return false;
    return true;
}

/* Every bulk longer than the limit was replaced by a marker. */
static void check_limit(const redisReply *r, size_t limit) {
    if (r->type == REDIS_REPLY_STRING && r->len > limit &&
        !eddy__resp_skipped(r->str, r->len, NULL))
        abort();
    for (size_t i = 0; i < r->elements; i++)
        check_limit(r->element[i], limit);
}

/* hiredis 0.14 allocates an aggregate's element array as its header says: inputs that claim
 * more than a few thousand elements would only measure malloc. */
static bool huge_aggregate(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!memchr("*%~>|", p[i], 5))
            continue;
        unsigned long long v = 0;
        for (size_t j = i + 1; j < n && p[j] >= '0' && p[j] <= '9' && v <= 4096; j++)
            v = v * 10 + (p[j] - '0');
        if (v > 4096)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || huge_aggregate(data + 2, size - 2))
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    bool unlimited = data[1] == 255;
    size_t limit = unlimited ? SIZE_MAX : data[1];
    const char *in = (const char *)data + 2;
    size_t n = size - 2;

    redisReader *plain = redisReaderCreate(), *scanned = redisReaderCreate();
    if (!plain || !scanned)
        abort();
    eddy__resp_scan sc;
    eddy__resp_scan_init(&sc);
    if (redisReaderFeed(plain, in, n) != REDIS_OK)
        abort();
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        if (eddy__resp_scan_feed(&sc, scanned, in + off, k, limit) != EDDY_OK)
            abort();
    }
    const char *held;
    size_t nheld = eddy__resp_scan_held(&sc, &held);
    if (nheld && redisReaderFeed(scanned, held, nheld) != REDIS_OK) /* all of it, as plain has */
        abort();
    for (;;) {
        void *a = NULL, *b = NULL;
        int ra = redisReaderGetReply(plain, &a);
        int rb = redisReaderGetReply(scanned, &b);
        if (unlimited && (ra != rb || (a == NULL) != (b == NULL) || (a && !same(a, b))))
            abort();
        if (b && !unlimited)
            check_limit(b, limit);
        if (a)
            freeReplyObject(a);
        if (b)
            freeReplyObject(b);
        if (ra != REDIS_OK || rb != REDIS_OK || (!a && !b))
            break;
        if (!unlimited && (!a || !b))
            break; /* a skip shortens what the scanned reader has: they part here */
    }
    redisReaderFree(plain);
    redisReaderFree(scanned);
    return 0;
}
