/* SPDX-License-Identifier: BSD-3-Clause */
/* The reply writer and the tree builder (see resp.h). An append that cannot grow the buffer
 * sets `oom` and turns every later append into a no-op, so command code writes without
 * checking each call and the engine checks once at the end.
 *
 * Writing happens under the engine lock and only copies bytes into the reused buffer; the
 * allocations of the tree happen in eddy__mresp_build, after the lock is released. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memory/resp.h"
#include "memory/util.h"
#include "util/reply_arena.h"

/* Buffer kept between commands; larger ones are given back. Big enough for an XREADGROUP
 * COUNT 256 of ordinary events, so a consumer's steady state does not reallocate. */
#define KEEP_BYTES (256 * 1024)

enum { T_STATUS = 1, T_ERROR, T_INTEGER, T_STRING, T_NIL, T_ARRAY };

void eddy__mresp_init(eddy__mresp *r) { memset(r, 0, sizeof(*r)); }

void eddy__mresp_release(eddy__mresp *r) {
    eddy__mem_free(r->buf);
    eddy__mem_free(r->spare);
    eddy__mem_free(r->spare_str);
    eddy__mresp_init(r);
}

/* Buffer a prepared writer holds: room for any one-node reply the reserve covers. */
#define PREPARED_BYTES 1024

bool eddy__mresp_prepare(eddy__mresp *r) {
    if (r->arena &&
        !eddy__reply_arena_reserve(r->arena, sizeof(redisReply) + EDDY__MRESP_SPARE_STR + 1))
        return false;
    if (!r->arena && !r->spare && !(r->spare = eddy__mem_malloc(sizeof(*r->spare))))
        return false;
    if (!r->arena && !r->spare_str && !(r->spare_str = eddy__mem_malloc(EDDY__MRESP_SPARE_STR)))
        return false;
    if (r->cap < PREPARED_BYTES) {
        char *buf = eddy__mem_realloc(r->buf, PREPARED_BYTES);
        if (!buf)
            return false;
        r->buf = buf;
        r->cap = PREPARED_BYTES;
    }
    return true;
}

void eddy__mresp_reset(eddy__mresp *r) {
    if (r->cap > KEEP_BYTES) {
        eddy__mem_free(r->buf);
        r->buf = NULL;
        r->cap = 0;
    }
    r->len = 0;
    r->oom = false;
}

bool eddy__mresp_is_error_at(const eddy__mresp *r, size_t mark) {
    return mark < r->len && r->buf[mark] == T_ERROR;
}

void eddy__mresp_truncate(eddy__mresp *r, size_t mark) {
    if (mark < r->len)
        r->len = mark;
}

static bool grow(eddy__mresp *r, size_t extra) {
    if (r->oom)
        return false;
    size_t cap = r->cap ? r->cap : 1024;
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

/* Room for extra more bytes; false (and oom set) when it cannot be made. */
static inline bool reserve(eddy__mresp *r, size_t extra) {
    if (r->len + extra <= r->cap && !r->oom)
        return true;
    return grow(r, extra);
}

static inline void put_raw(eddy__mresp *r, const void *data, size_t len) {
    memcpy(r->buf + r->len, data, len);
    r->len += len;
}

static inline void put_sized(eddy__mresp *r, char type, size_t n) {
    r->buf[r->len++] = type;
    put_raw(r, &n, sizeof(n));
}

static void put_string(eddy__mresp *r, char type, const void *data, size_t len) {
    if (!reserve(r, 1 + sizeof(size_t) + len))
        return;
    put_sized(r, type, len);
    if (len)
        put_raw(r, data, len);
}

void eddy__mresp_append(eddy__mresp *r, const eddy__mresp *other) {
    if (other->oom) {
        r->oom = true;
        return;
    }
    if (other->len && reserve(r, other->len))
        put_raw(r, other->buf, other->len);
}

static void put_line(eddy__mresp *r, char type, const char *text, size_t len) {
    if (!reserve(r, 1 + sizeof(size_t) + len))
        return;
    put_sized(r, type, len);
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        r->buf[r->len++] = (ch == '\r' || ch == '\n') ? ' ' : ch;
    }
}

void eddy__mresp_status(eddy__mresp *r, const char *text) {
    put_line(r, T_STATUS, text, strlen(text));
}

void eddy__mresp_error(eddy__mresp *r, const char *text) {
    put_line(r, T_ERROR, text, strlen(text));
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
        put_line(r, T_ERROR, small, (size_t)n);
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
    put_line(r, T_ERROR, big, (size_t)n);
    eddy__mem_free(big);
}

void eddy__mresp_errorf(eddy__mresp *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    eddy__mresp_verrorf(r, fmt, ap);
    va_end(ap);
}

void eddy__mresp_int(eddy__mresp *r, long long v) {
    if (!reserve(r, 1 + sizeof(v)))
        return;
    r->buf[r->len++] = T_INTEGER;
    put_raw(r, &v, sizeof(v));
}

void eddy__mresp_bulk(eddy__mresp *r, const void *data, size_t len) {
    put_string(r, T_STRING, data, len);
}

void eddy__mresp_cstr(eddy__mresp *r, const char *s) { eddy__mresp_bulk(r, s, strlen(s)); }

/* Decimal digits of v, written backwards ending at end; returns the first digit. */
static char *u64_digits(char *end, uint64_t v) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void eddy__mresp_bulk_ll(eddy__mresp *r, long long v) {
    char tmp[24];
    char *end = tmp + sizeof(tmp);
    char *p = u64_digits(end, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    eddy__mresp_bulk(r, p, (size_t)(end - p));
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
    char *end = tmp + sizeof(tmp);
    char *p = u64_digits(end, seq);
    *--p = '-';
    p = u64_digits(p, ms);
    eddy__mresp_bulk(r, p, (size_t)(end - p));
}

void eddy__mresp_nil(eddy__mresp *r) {
    if (reserve(r, 1))
        r->buf[r->len++] = T_NIL;
}

void eddy__mresp_nil_array(eddy__mresp *r) { eddy__mresp_nil(r); }

void eddy__mresp_array(eddy__mresp *r, size_t n) {
    if (reserve(r, 1 + sizeof(n)))
        put_sized(r, T_ARRAY, n);
}

size_t eddy__mresp_defer(eddy__mresp *r) {
    size_t mark = r->len;
    eddy__mresp_array(r, 0);
    return mark;
}

void eddy__mresp_set_array(eddy__mresp *r, size_t mark, size_t n) {
    if (r->oom || mark + 1 + sizeof(n) > r->len || r->buf[mark] != T_ARRAY)
        return;
    memcpy(r->buf + mark + 1, &n, sizeof(n));
}

/* ---- building the tree -------------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
    struct eddy__reply_arena *arena; /* NULL: every node malloc'd (freeReplyObject frees it) */
} cursor;

static void *node_alloc(cursor *c, size_t size) {
    return c->arena ? eddy__reply_arena_alloc(c->arena, size) : eddy__mem_malloc(size);
}

/* Undoes a node that could not be completed (an arena's nodes go with the arena). */
static void node_drop(cursor *c, redisReply *r) {
    if (!c->arena)
        freeReplyObject(r);
}

static bool take(cursor *c, void *out, size_t n) {
    if ((size_t)(c->end - c->p) < n)
        return false;
    memcpy(out, c->p, n);
    c->p += n;
    return true;
}

static redisReply *node_new(cursor *c, int type) {
    redisReply *r = node_alloc(c, sizeof(*r));
    if (r)
        *r = (redisReply){.type = type};
    return r;
}

static int string_type(unsigned char type) {
    return type == T_STRING   ? REDIS_REPLY_STRING
           : type == T_STATUS ? REDIS_REPLY_STATUS
                              : REDIS_REPLY_ERROR;
}

/* One record and, for an array, its elements. NULL on OOM (or malformed records, which only a
 * bug could produce), with nothing left allocated. */
static redisReply *build_one(cursor *c) {
    unsigned char type;
    if (!take(c, &type, 1))
        return NULL;
    switch (type) {
    case T_NIL:
        return node_new(c, REDIS_REPLY_NIL);
    case T_INTEGER: {
        long long v;
        if (!take(c, &v, sizeof(v)))
            return NULL;
        redisReply *r = node_new(c, REDIS_REPLY_INTEGER);
        if (r)
            r->integer = v;
        return r;
    }
    case T_STATUS:
    case T_ERROR:
    case T_STRING: {
        size_t len;
        if (!take(c, &len, sizeof(len)) || (size_t)(c->end - c->p) < len)
            return NULL;
        redisReply *r;
        char *str;
        if (c->arena) { /* the node and its bytes in one piece: nothing frees them one by one */
            if (!(r = eddy__reply_arena_alloc(c->arena, sizeof(*r) + len + 1)))
                return NULL;
            *r = (redisReply){.type = string_type(type)};
            str = (char *)(r + 1);
        } else {
            r = node_new(c, string_type(type));
            if (!r)
                return NULL;
            if (!(str = eddy__mem_malloc(len + 1))) {
                node_drop(c, r);
                return NULL;
            }
        }
        memcpy(str, c->p, len);
        str[len] = '\0';
        c->p += len;
        r->str = str;
        r->len = len;
        return r;
    }
    case T_ARRAY: {
        size_t n;
        if (!take(c, &n, sizeof(n)) || n > (size_t)(c->end - c->p))
            return NULL; /* every element takes at least one byte */
        redisReply *r = node_new(c, REDIS_REPLY_ARRAY);
        if (!r)
            return NULL;
        if (n == 0)
            return r;
        if (!(r->element = node_alloc(c, n * sizeof(*r->element)))) {
            node_drop(c, r);
            return NULL;
        }
        /* elements counts what is built so far, so freeReplyObject undoes a partial array. */
        while (r->elements < n) {
            redisReply *e = build_one(c);
            if (!e) {
                node_drop(c, r);
                return NULL;
            }
            r->element[r->elements++] = e;
        }
        return r;
    }
    default:
        return NULL;
    }
}

/* A lone scalar from the reserve; NULL when the reply is not one the reserve covers. */
static redisReply *build_spare(eddy__mresp *r) {
    unsigned char type = (unsigned char)r->buf[0];
    size_t len = 0;
    if (!r->spare || type == T_ARRAY)
        return NULL;
    if (type == T_STATUS || type == T_ERROR || type == T_STRING) {
        memcpy(&len, r->buf + 1, sizeof(len));
        if (!r->spare_str || len >= EDDY__MRESP_SPARE_STR || r->len != 1 + sizeof(len) + len)
            return NULL;
    }
    redisReply *reply = r->spare;
    r->spare = NULL;
    if (type == T_NIL) {
        *reply = (redisReply){.type = REDIS_REPLY_NIL};
    } else if (type == T_INTEGER) {
        *reply = (redisReply){.type = REDIS_REPLY_INTEGER};
        memcpy(&reply->integer, r->buf + 1, sizeof(reply->integer));
    } else {
        *reply = (redisReply){.type = string_type(type), .len = len, .str = r->spare_str};
        r->spare_str = NULL;
        memcpy(reply->str, r->buf + 1 + sizeof(len), len);
        reply->str[len] = '\0';
    }
    return reply;
}

redisReply *eddy__mresp_build(eddy__mresp *r) {
    if (r->oom || r->len == 0)
        return NULL;
    redisReply *reply = r->arena ? NULL : build_spare(r);
    if (reply)
        return reply;
    cursor c = {r->buf, r->buf + r->len, r->arena};
    return build_one(&c);
}
