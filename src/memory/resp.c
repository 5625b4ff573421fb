/* RESP2 writer and the bridge to hiredis replies (see resp.h). An append that cannot grow the
 * buffer sets `oom` and turns every later append into a no-op, so command code writes without
 * checking each call and the engine checks once at the end. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memory/resp.h"
#include "memory/util.h"

#define KEEP_BYTES 4096 /* buffer kept between commands; larger ones are given back */

void eddy__mresp_init(eddy__mresp *r) { memset(r, 0, sizeof(*r)); }

void eddy__mresp_release(eddy__mresp *r) {
    eddy__mem_free(r->buf);
    eddy__mresp_init(r);
}

void eddy__mresp_reset(eddy__mresp *r) {
    if (r->cap > KEEP_BYTES)
        eddy__mresp_release(r);
    r->len = 0;
    r->oom = false;
}

void eddy__mresp_truncate(eddy__mresp *r, size_t mark) {
    if (mark < r->len)
        r->len = mark;
}

static bool reserve(eddy__mresp *r, size_t extra) {
    if (r->oom)
        return false;
    if (r->len + extra <= r->cap)
        return true;
    size_t cap = r->cap ? r->cap : 256;
    while (cap < r->len + extra)
        cap *= 2;
    char *buf = eddy__mem_realloc(r->buf, cap);
    if (!buf) {
        r->oom = true;
        return false;
    }
    r->buf = buf;
    r->cap = cap;
    return true;
}

static void put(eddy__mresp *r, const void *data, size_t len) {
    if (!reserve(r, len))
        return;
    if (len)
        memcpy(r->buf + r->len, data, len);
    r->len += len;
}

void eddy__mresp_raw(eddy__mresp *r, const void *data, size_t len) { put(r, data, len); }

static void put_line(eddy__mresp *r, char type, const char *text, size_t len, bool sanitize) {
    if (!reserve(r, len + 3))
        return;
    r->buf[r->len++] = type;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        r->buf[r->len++] = (sanitize && (ch == '\r' || ch == '\n')) ? ' ' : ch;
    }
    r->buf[r->len++] = '\r';
    r->buf[r->len++] = '\n';
}

void eddy__mresp_status(eddy__mresp *r, const char *text) {
    put_line(r, '+', text, strlen(text), true);
}

void eddy__mresp_error(eddy__mresp *r, const char *text) {
    put_line(r, '-', text, strlen(text), true);
}

void eddy__mresp_verrorf(eddy__mresp *r, const char *fmt, va_list ap) {
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n < 0) {
        va_end(again);
        eddy__mresp_error(r, "ERR");
        return;
    }
    if ((size_t)n < sizeof(small)) {
        va_end(again);
        put_line(r, '-', small, (size_t)n, true);
        return;
    }
    char *big = eddy__mem_malloc((size_t)n + 1);
    if (!big) {
        va_end(again);
        r->oom = true;
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, again);
    va_end(again);
    put_line(r, '-', big, (size_t)n, true);
    eddy__mem_free(big);
}

void eddy__mresp_errorf(eddy__mresp *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    eddy__mresp_verrorf(r, fmt, ap);
    va_end(ap);
}

static void put_header(eddy__mresp *r, char type, long long v) {
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%c%lld\r\n", type, v);
    put(r, tmp, (size_t)n);
}

void eddy__mresp_int(eddy__mresp *r, long long v) { put_header(r, ':', v); }

void eddy__mresp_bulk(eddy__mresp *r, const void *data, size_t len) {
    put_header(r, '$', (long long)len);
    put(r, data, len);
    put(r, "\r\n", 2);
}

void eddy__mresp_cstr(eddy__mresp *r, const char *s) { eddy__mresp_bulk(r, s, strlen(s)); }

void eddy__mresp_bulk_ll(eddy__mresp *r, long long v) {
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%lld", v);
    eddy__mresp_bulk(r, tmp, (size_t)n);
}

void eddy__mresp_double(eddy__mresp *r, double v) {
    if (isinf(v)) {
        eddy__mresp_cstr(r, v > 0 ? "inf" : "-inf");
        return;
    }
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    eddy__mresp_bulk(r, tmp, (size_t)n);
}

void eddy__mresp_id(eddy__mresp *r, uint64_t ms, uint64_t seq) {
    char tmp[48];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64 "-%" PRIu64, ms, seq);
    eddy__mresp_bulk(r, tmp, (size_t)n);
}

void eddy__mresp_nil(eddy__mresp *r) { put(r, "$-1\r\n", 5); }

void eddy__mresp_nil_array(eddy__mresp *r) { put(r, "*-1\r\n", 5); }

void eddy__mresp_array(eddy__mresp *r, size_t n) { put_header(r, '*', (long long)n); }

void eddy__mresp_set_array(eddy__mresp *r, size_t mark, size_t n) {
    char tmp[32];
    int hl = snprintf(tmp, sizeof(tmp), "*%zu\r\n", n);
    if (mark > r->len || !reserve(r, (size_t)hl))
        return;
    memmove(r->buf + mark + hl, r->buf + mark, r->len - mark);
    memcpy(r->buf + mark, tmp, (size_t)hl);
    r->len += (size_t)hl;
}

redisReply *eddy__mresp_parse(const char *buf, size_t len) {
    redisReader *reader = redisReaderCreate();
    if (!reader)
        return NULL;
    void *reply = NULL;
    if (redisReaderFeed(reader, buf, len) != REDIS_OK ||
        redisReaderGetReply(reader, &reply) != REDIS_OK)
        reply = NULL; /* only OOM can fail here: the bytes are our own */
    redisReaderFree(reader);
    return reply;
}
