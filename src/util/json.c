/* SPDX-License-Identifier: BSD-3-Clause */
/* The JSON writer; see json.h. Invariant: buf always has room for a NUL after len bytes once
 * anything was written, and `failed` makes every later call a no-op. */
#include "util/json.h"

#include "util/cetext.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eddy__json_init(eddy__json *j) { memset(j, 0, sizeof(*j)); }

static bool reserve(eddy__json *j, size_t more) {
    if (j->failed)
        return false;
    if (j->len + more + 1 <= j->cap)
        return true;
    size_t cap = j->cap ? j->cap : 256;
    while (cap < j->len + more + 1)
        cap *= 2;
    char *b = realloc(j->buf, cap);
    if (!b) {
        j->failed = true;
        return false;
    }
    j->buf = b;
    j->cap = cap;
    return true;
}

static void put(eddy__json *j, const char *s, size_t n) {
    if (reserve(j, n)) {
        memcpy(j->buf + j->len, s, n);
        j->len += n;
        j->buf[j->len] = '\0';
    }
}

static void put_c(eddy__json *j, const char *s) { put(j, s, strlen(s)); }

static void put_string(eddy__json *j, const char *s) {
    put(j, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0 && !j->failed) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(j, esc, 2);
        } else if (*p < 0x20) {
            /* 0x08..0x0d have short escapes, but for 0x0b ('?' marks it) */
            static const char short_esc[] = "btn?fr";
            if (*p >= 0x08 && *p <= 0x0d && *p != 0x0b) {
                esc[0] = '\\';
                esc[1] = short_esc[*p - 0x08];
                put(j, esc, 2);
            } else {
                snprintf(esc, sizeof(esc), "\\u%04x", *p);
                put(j, esc, 6);
            }
        } else {
            uint32_t cp;
            size_t len = eddy__utf8_decode(p, n, &cp);
            if (len == 0) {
                put_c(j, "\\ufffd");
                len = 1;
            } else {
                put(j, (const char *)p, len);
            }
            p += len;
            n -= len;
            continue;
        }
        p++;
        n--;
    }
    put(j, "\"", 1);
}

/* The comma and the key before a value. */
static void member(eddy__json *j, const char *key) {
    if (j->has_member[j->depth])
        put(j, ",", 1);
    j->has_member[j->depth] = true;
    if (key) {
        put_string(j, key);
        put(j, ":", 1);
    }
}

static void open(eddy__json *j, const char *key, const char *bracket) {
    member(j, key);
    if (j->depth == EDDY__JSON_MAX_DEPTH) {
        j->failed = true;
        return;
    }
    put_c(j, bracket);
    j->depth++;
    j->has_member[j->depth] = false;
    j->is_array[j->depth] = bracket[0] == '[';
}

void eddy__json_object(eddy__json *j, const char *key) { open(j, key, "{"); }
void eddy__json_array(eddy__json *j, const char *key) { open(j, key, "["); }

void eddy__json_end(eddy__json *j) {
    if (j->failed || j->depth == 0)
        return;
    put_c(j, j->is_array[j->depth] ? "]" : "}");
    j->depth--;
}

void eddy__json_str(eddy__json *j, const char *key, const char *s) {
    member(j, key);
    if (s)
        put_string(j, s);
    else
        put_c(j, "null");
}

void eddy__json_u64(eddy__json *j, const char *key, uint64_t v) {
    char b[24];
    member(j, key);
    put(j, b, (size_t)snprintf(b, sizeof(b), "%" PRIu64, v));
}

void eddy__json_i64(eddy__json *j, const char *key, long long v) {
    char b[24];
    member(j, key);
    put(j, b, (size_t)snprintf(b, sizeof(b), "%lld", v));
}

void eddy__json_bool(eddy__json *j, const char *key, bool v) {
    member(j, key);
    put_c(j, v ? "true" : "false");
}

void eddy__json_raw(eddy__json *j, const char *key, const char *text, size_t len) {
    member(j, key);
    put(j, text, len);
}

void eddy__json_null(eddy__json *j, const char *key) {
    member(j, key);
    put_c(j, "null");
}

char *eddy__json_finish(eddy__json *j) {
    char *out = j->failed || j->depth != 0 ? NULL : j->buf;
    if (!out)
        free(j->buf);
    eddy__json_init(j);
    return out;
}
